/*
 * daemon.c - the server's lifecycle: create the store and the workers from
 * the options, bind, drop privileges, write the pid file, run the thread
 * model, and stop gracefully on SIGTERM/SIGINT (stop accepting, finish the
 * requests already received, flush, exit 0).  SIGHUP reopens the log file
 * and re-reads the config file (-C): the log level and max-conns change
 * live, other changed settings are logged as ignored until the next start.
 * SIGUSR1 asks for a dump (-f; dumper.c), as does a graceful stop
 * (--dump-on-exit).  With -x, the XDP mirror (mirror.h) is
 * attached here too, before privileges are dropped.
 */
#include "config.h"

#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sysexits.h>

#include "server/core/alloc.h"
#include "server/core/newfile.h"
#include "dumper.h"
#include "server/net/watch.h"
#include "server/net/conn.h"
#include "server/net/evloop.h"
#include "server/net/net.h"
#include "server/net/threads.h"
#include "server/proto/proto.h"
#include "auth.h"
#include "server/net/tls.h"
#include "log.h"
#include "notify.h"
#include "report.h"
#include "metrics.h"
#include "bpf/mirror.h"
#include "bpf/xdp_glue.h"
#include "server/net/udp.h"
#include "protocol/wire.h"

/* A random non-zero 64-bit number (getrandom; the clock and pid mixed in
 * should it fail: an identity, not a secret). */
static uint64_t random_u64(void)
{
    uint64_t v = 0;
    struct timespec ts;

    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)getpid() << 40);
        v ^= v >> 31;
        v *= 0x9E3779B97F4A7C15ull;
    }
    return v != 0 ? v : 1;
}

struct server *server_setup(const struct options *opt)
{
    struct server *srv = mdc_calloc(1, sizeof(*srv));
    struct store_config cfg;

    if (srv == NULL) {
        log_error("out of memory");
        goto fail;
    }
    srv->opt = *opt;
    srv->nnet = (unsigned)opt->net_threads;
    srv->npay = (unsigned)opt->payload_threads;
    srv->model = thread_model_of(srv->nnet, srv->npay);
    srv->max_body = (size_t)opt->max_item_size + WIRE_MAX_KEY +
                    (size_t)WIRE_TAG_LEN * 65535;
    srv->started_wall = time(NULL);
    srv->started_mono = server_mono_s();
    atomic_init(&srv->nconns, 0);
    atomic_init(&srv->stop, false);
    stats_setup(srv);
    if (evloop_threads() < 0) {
        log_error("libevent has no pthreads support");
        goto fail;
    }
    srv->loop_version = evloop_version();
    memset(&cfg, 0, sizeof(cfg));
    /* --memory-limit-kib, when given, overrides -m with a finer limit */
    cfg.mem_limit = opt->memory_kib != 0 ? (size_t)opt->memory_kib << 10
                                         : (size_t)opt->memory_mb << 20;
    cfg.no_evict = opt->no_evict;
    cfg.nbuckets = (uint32_t)opt->buckets;
    cfg.tag_buckets = (uint32_t)opt->tag_buckets;
    cfg.max_tags = (uint32_t)opt->max_tags;
    cfg.max_item_size = (uint32_t)opt->max_item_size;
    cfg.tag_reply_limit = (size_t)opt->tag_reply_limit;
    cfg.sweep_interval_ms = (uint32_t)opt->sweep_interval;
    srv->store = store_setup(&cfg);
    if (srv->store == NULL) {
        log_error("cannot create the store (%llu KiB)",
                  (unsigned long long)(cfg.mem_limit >> 10));
        goto fail;
    }
    /* who we are (boot_id) and whose records we hold (the data generation:
     * new while empty, replaced by a dump's at the load) */
    srv->boot_id = random_u64();
    store_set_generation(srv->store, random_u64());
    srv->proto_detect = proto_detect;
    if (threads_setup(srv) < 0) {
        log_error("cannot set up threads");
        goto fail;
    }
    return srv;
fail:
    if (srv != NULL)
        server_teardown(srv);
    return NULL;
}

void server_teardown(struct server *srv)
{
    size_t i;

    metrics_teardown(srv); /* its thread reads the workers' counters */
    net_close_all(srv);
    dumper_teardown(srv);
    for (i = 0; i < sizeof(srv->ev_sig) / sizeof(srv->ev_sig[0]); i++)
        evloop_ev_free(srv->ev_sig[i]);
    threads_teardown(srv);
    watch_teardown(srv); /* no worker logs any more */
    if (srv->store != NULL)
        store_teardown(srv->store); /* may still announce into the mirror */
    auth_teardown(srv->auth);
    tls_teardown(srv);
    mirror_teardown(srv->mirror);     /* detaches the program */
    stats_teardown(srv);
    mdc_free(srv);
}

int server_load(struct server *srv)
{
    return dumper_load(srv);
}

int server_tls_setup(struct server *srv)
{
    return tls_setup(srv);
}

int server_listen(struct server *srv)
{
    if (net_listen_all(srv) < 0)
        return -1;
    return metrics_setup(srv); /* --metrics: its HTTP listener */
}

/* -x: bpf/xdp_glue.c loads, attaches and wires the XDP front. */
int server_xdp_open(struct server *srv)
{
    return xdp_glue_setup(srv);
}

/*
 * systemd's readiness protocol (Type=notify): READY=1 once every listener
 * accepts, STOPPING=1 when a graceful stop begins.  Does nothing outside
 * systemd (no $NOTIFY_SOCKET) or in a build --without-systemd (notify.c).
 */
static void server_notify(const char *state)
{
    int r = notify_send(state);

    if (r < 0)
        log_warn("sd_notify to $NOTIFY_SOCKET: %s", strerror(-r));
    else if (r > 0)
        log_debug("sd_notify: %s", state);
}

/* SIGHUP with -C: apply what can change live, log what cannot. */
static void server_reload_one(void *ctx, const char *name, const char *value)
{
    struct server *srv = ctx;

    if (strcmp(name, "verbose") == 0) {
        log_set_level(atoi(value));
        log_info("config reload: verbose = %s applied", value);
    } else if (strcmp(name, "max-conns") == 0) {
        /* read by the accept path with an atomic load (net.c) */
        __atomic_store_n(&srv->opt.max_conns, strtoull(value, NULL, 10),
                         __ATOMIC_RELAXED);
        log_info("config reload: max-conns = %s applied", value);
    } else {
        log_warn("config reload: %s = %s ignored: takes effect at the next "
                 "start", name, value);
    }
}

static void server_reload_config(struct server *srv)
{
    struct options next;
    char *msg = NULL;
    size_t len = 0;
    FILE *err;
    int rc;

    if (srv->opt.config == NULL)
        return;
    err = open_memstream(&msg, &len);
    if (err == NULL) {
        log_error("config reload: out of memory");
        return;
    }
    rc = options_reparse(&srv->opt, &next, err);
    fclose(err);
    if (rc != OPTIONS_RUN) {
        char *nl = msg != NULL ? strchr(msg, '\n') : NULL;
        if (nl != NULL)
            *nl = '\0';
        log_error("config reload failed, running settings kept: %s",
                  msg != NULL ? msg : "");
    } else {
        log_info("config reload: re-read %s", srv->opt.config);
        options_diff(&srv->opt, &next, server_reload_one, srv);
    }
    free(msg);
    options_teardown(&next);
}

/* Runs on the main thread. */
static void server_begin_stop(struct server *srv)
{
    struct worker *m = &srv->workers[0];

    if (m->stopping)
        return;
    atomic_store(&srv->stop, true);
    server_notify("STOPPING=1");
    log_info("stopping: no new connections, finishing requests");
    net_close_all(srv);
    if (srv->nnet == 0)
        worker_begin_stop(m); /* the loop ends with the last connection */
    else
        evloop_exit(m);
    m->stopping = true;
}

static void server_signal_cb(int sig, short what, void *arg)
{
    struct server *srv = arg;

    (void)what;
    switch (sig) {
    case SIGTERM:
    case SIGINT:
        log_info("signal %d", (int)sig);
        server_begin_stop(srv);
        break;
    case SIGHUP:
        if (log_reopen() < 0)
            log_error("cannot reopen log file: %s",
                      log_open_strerror(errno));
        else
            log_info("log file reopened");
        server_reload_config(srv);
        if (srv->auth != NULL)
            (void)auth_reload(srv->auth); /* keeps the old set on error */
        (void)tls_reload(srv); /* keeps the old certificates on error */
        break;
    case SIGUSR1:
        if (srv->dump_request == NULL)
            log_warn("SIGUSR1: no dump file (-f)");
        else {
            log_info("SIGUSR1: dump requested");
            (void)srv->dump_request(srv, false, NULL, 0);
        }
        break;
    default:
        break;
    }
}

static void server_stop_cb(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server_begin_stop(arg);
}

void server_stop(struct server *srv)
{
    struct evloop_ev *ev = srv->ev_sig[4];

    if (ev != NULL)
        evloop_trigger(ev);
}

static int server_signals(struct server *srv)
{
    static const int sigs[4] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
    struct worker *m = &srv->workers[0];
    int i;

    signal(SIGPIPE, SIG_IGN);
    for (i = 0; i < 4; i++) {
        srv->ev_sig[i] = evloop_signal_new(m, sigs[i], server_signal_cb, srv);
        if (srv->ev_sig[i] == NULL)
            return -1;
    }
    srv->ev_sig[4] = evloop_user_new(m, server_stop_cb, srv);
    return srv->ev_sig[4] != NULL ? 0 : -1;
}

static int server_write_pidfile(struct server *srv)
{
    const char *path = srv->opt.pid_file;
    struct newfile nf;
    char buf[32];
    int n;

    if (path == NULL)
        return 0;
    /* a fresh file beside it, renamed, so a reader never sees it empty
     * and nothing planted there is written through (newfile.h) */
    if (newfile_open(&nf, path, 0644) < 0) {
        log_error("cannot write pid file %s: %s", path, strerror(errno));
        return -1;
    }
    n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    if (write(nf.fd, buf, (size_t)n) != n) {
        log_error("cannot write pid file %s: %s", path, strerror(errno));
        newfile_discard(&nf);
        return -1;
    }
    if (newfile_commit(&nf, false, NULL) < 0) {
        log_error("cannot write pid file %s: %s", path, strerror(errno));
        return -1;
    }
    srv->pidfile_written = true;
    return 0;
}

/* As root: become -u USER (default nobody) once the sockets are bound. */
static int server_drop_privileges(struct server *srv)
{
    const char *user = srv->opt.user;
    struct passwd *pw;

    if (geteuid() != 0) {
        if (user != NULL)
            log_warn("not root: -u %s ignored", user);
        return 0;
    }
    if (user == NULL)
        user = "nobody";
    pw = getpwnam(user);
    if (pw == NULL) {
        log_error("unknown user '%s'", user);
        return -1;
    }
    if (pw->pw_uid == 0) {
        /* asked for explicitly (-u root): stay root, as memcached does */
        log_warn("running as root (-u %s): a flaw in the server would give "
                 "the whole machine away; prefer an unprivileged user",
                 user);
        return 0;
    }
    /* The socket's mode (-a) then speaks of the user we become. */
    if (srv->opt.unix_socket != NULL &&
        chown(srv->opt.unix_socket, pw->pw_uid, pw->pw_gid) < 0)
        log_warn("chown %s: %s", srv->opt.unix_socket, strerror(errno));
    if (setgroups(1, &pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
        setuid(pw->pw_uid) < 0) {
        log_error("cannot become %s: %s", user, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0) {
        log_error("could regain root after dropping to %s", user);
        return -1;
    }
    log_info("started as root: now running as user %s (uid %ld)%s", user,
             (long)pw->pw_uid, srv->opt.user == NULL ? "; use -u to choose" : "");
    return 0;
}

int server_run(struct server *srv)
{
    int rc = -1;

    if (server_signals(srv) < 0) {
        log_error("cannot install signal handlers");
        goto out;
    }
    if (server_write_pidfile(srv) < 0 ||
        net_write_port_file(srv, metrics_name(srv)) < 0)
        goto out;
    if (server_drop_privileges(srv) < 0)
        goto out;
    if (dumper_setup(srv) < 0) {
        log_error("cannot start the dump thread");
        goto out;
    }
    if (threads_start(srv) < 0 || metrics_start_thread(srv) < 0)
        goto stop;
    if (net_enable_accept(srv) < 0) {
        log_error("cannot start accepting");
        goto stop;
    }
    log_info("mdcached %s ready: model %s, %u network and %u payload "
             "threads, %llu %s, %s",
             PACKAGE_VERSION, thread_model_name(srv->model), srv->nnet,
             srv->npay,
             (unsigned long long)(srv->opt.memory_kib != 0
                                      ? srv->opt.memory_kib
                                      : srv->opt.memory_mb),
             srv->opt.memory_kib != 0 ? "KiB" : "MiB",
             mdc_allocator_name());
    server_notify("READY=1\nSTATUS=accepting connections");
    evloop_run(&srv->workers[0]);
    rc = 0;
stop:
    net_close_all(srv);
    threads_stop_and_join(srv);
    if (srv->dump_request != NULL && srv->opt.dump_on_exit) {
        char msg[256];
        if (srv->dump_request(srv, true, msg, sizeof(msg)) < 0) {
            log_error("dump at exit failed: %s", msg);
            rc = -1;
        }
    }
    log_info("stopped");
out:
    if (srv->pidfile_written && unlink(srv->opt.pid_file) < 0)
        log_debug("cannot remove pid file: %s", strerror(errno));
    if (srv->portfile_written && unlink(srv->opt.port_file) < 0)
        log_debug("cannot remove port file: %s", strerror(errno));
    return rc;
}
