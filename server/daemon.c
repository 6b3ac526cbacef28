/*
 * daemon.c - the server's lifecycle: create the store and the workers from
 * the options, bind, drop privileges, write the pid file, run the thread
 * model, and stop gracefully on SIGTERM/SIGINT (stop accepting, finish the
 * requests already received, flush, exit 0).  SIGHUP reopens the log file;
 * SIGUSR1 is reserved for dumps.  With -x, the XDP mirror (mirror.h) is
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

#include <event2/event.h>
#include <event2/thread.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sysexits.h>

#include "alloc.h"
#include "conn.h"
#include "log.h"
#include "mirror.h"
#include "udp.h"
#include "wire.h"

uint64_t server_mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec + 1; /* never 0: 0 means "unset" */
}

uint64_t server_uptime(const struct server *srv)
{
    return server_mono_s() - srv->started_mono;
}

static int server_evthread_rc = -1;

static void server_evthread_init(void)
{
    server_evthread_rc = evthread_use_pthreads();
}

/* libevent's locking, once per process: other threads wake loops. */
static int server_libevent_threads(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, server_evthread_init);
    return server_evthread_rc;
}

struct server *server_create(const struct options *opt)
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
    if (server_libevent_threads() < 0) {
        log_error("libevent has no pthreads support");
        goto fail;
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.mem_limit = (size_t)opt->memory_mb << 20;
    cfg.no_evict = opt->no_evict;
    cfg.nbuckets = (uint32_t)opt->buckets;
    cfg.tag_buckets = (uint32_t)opt->tag_buckets;
    cfg.max_tags = (uint32_t)opt->max_tags;
    cfg.max_item_size = (uint32_t)opt->max_item_size;
    cfg.tag_reply_limit = (size_t)opt->tag_reply_limit;
    cfg.sweep_interval_ms = (uint32_t)opt->sweep_interval;
    srv->store = store_create(&cfg);
    if (srv->store == NULL) {
        log_error("cannot create the store (-m %llu MiB)",
                  (unsigned long long)opt->memory_mb);
        goto fail;
    }
    if (threads_setup(srv) < 0) {
        log_error("cannot set up threads");
        goto fail;
    }
    return srv;
fail:
    if (srv != NULL)
        server_destroy(srv);
    return NULL;
}

void server_destroy(struct server *srv)
{
    size_t i;

    net_close_all(srv);
    for (i = 0; i < sizeof(srv->ev_sig) / sizeof(srv->ev_sig[0]); i++)
        if (srv->ev_sig[i] != NULL)
            event_free(srv->ev_sig[i]);
    threads_teardown(srv);
    if (srv->store != NULL)
        store_destroy(srv->store); /* may still announce into the mirror */
    mirror_close(srv->mirror);     /* detaches the program */
    mdc_free(srv);
}

int server_listen(struct server *srv)
{
    return net_listen_all(srv);
}

/* ---- -x: the XDP fast path (XDP.md, docs/xdp.md) ----------------------- */

/* Per network thread: approximate hit counts for --xdp-admit N > 1, by
 * mirror hash (a collision only admits a record a little early). */
#define XDP_ADMIT_SLOTS 4096
static __thread uint8_t xdp_admit_count[XDP_ADMIT_SLOTS];

/* Under the key's bucket read lock (store_visit): copy the live record. */
static void server_xdp_fill(void *ctx, struct store *st, const struct record *r)
{
    if (record_ntags(r) != 0)
        return; /* a store that added tags since the hit */
    (void)mirror_fill(ctx, record_key(r), record_klen(r), record_value(r),
                      record_vlen(r), record_flags(r),
                      record_deadline_ns(st, r));
}

/* The UDP hit hook (daemon.h): r is the record the reply was sent from,
 * untagged then, possibly replaced since - so it only decides admission. */
static void server_xdp_hit(void *ctx, struct store *st, const struct record *r)
{
    struct server *srv = ctx;
    uint32_t klen = record_klen(r);

    if (!mirror_fits(srv->mirror, klen, record_vlen(r), record_flags(r)))
        return;
    if (srv->opt.xdp_admit > 1) {
        uint64_t h = mirror_key_hash(srv->mirror, record_key(r), klen);
        uint8_t *c = &xdp_admit_count[h & (XDP_ADMIT_SLOTS - 1)];

        if (++*c < srv->opt.xdp_admit)
            return;
        *c = 0;
    }
    (void)store_visit(st, record_key(r), klen, server_xdp_fill, srv->mirror);
}

/* Add a unique IPv4 address; -1 when the table is full. */
static int xdp_addr_add(struct in_addr *v, size_t *n, struct in_addr a)
{
    size_t i;

    for (i = 0; i < *n; i++)
        if (v[i].s_addr == a.s_addr)
            return 0;
    if (*n == MIRROR_MAX_DADDRS)
        return -1;
    v[(*n)++] = a;
    return 0;
}

/*
 * The destinations the program may answer: the IPv4 addresses of -l (the
 * UDP sockets are bound to exactly those), an unspecified address standing
 * for every IPv4 address of the interface.  Sets *on_if when at least one of
 * them is configured on the interface.
 */
static int xdp_addrs(struct server *srv, struct in_addr *v, size_t *n,
                     bool *on_if)
{
    struct in_addr ifa_v[64];
    size_t ifa_n = 0, i, j;
    struct ifaddrs *ifs = NULL, *ifa;
    const char *ifname = srv->opt.xdp;

    *n = 0;
    *on_if = false;
    if (getifaddrs(&ifs) == 0) {
        for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next)
            if (ifa->ifa_addr != NULL && ifa->ifa_addr->sa_family == AF_INET &&
                strcmp(ifa->ifa_name, ifname) == 0 &&
                ifa_n < sizeof(ifa_v) / sizeof(ifa_v[0]))
                ifa_v[ifa_n++] =
                    ((struct sockaddr_in *)(void *)ifa->ifa_addr)->sin_addr;
        freeifaddrs(ifs);
    }
    for (i = 0; i < srv->opt.listen.n; i++) {
        struct addrinfo hints, *res = NULL, *ai;
        char host[256], port[16];

        if (options_split_listen(srv->opt.listen.v[i], srv->opt.port, host,
                                 sizeof(host), port, sizeof(port)) < 0)
            continue;
        memset(&hints, 0, sizeof(hints));
        hints.ai_family = AF_INET; /* IPv6 requests pass to userspace */
        hints.ai_socktype = SOCK_DGRAM;
        hints.ai_flags = AI_PASSIVE;
        if (getaddrinfo(host, NULL, &hints, &res) != 0)
            continue;
        for (ai = res; ai != NULL; ai = ai->ai_next) {
            struct in_addr a =
                ((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr;

            if (a.s_addr == htonl(INADDR_ANY)) {
                for (j = 0; j < ifa_n; j++)
                    if (xdp_addr_add(v, n, ifa_v[j]) < 0)
                        goto full;
                continue;
            }
            if (xdp_addr_add(v, n, a) < 0)
                goto full;
        }
        freeaddrinfo(res);
        continue;
full:
        freeaddrinfo(res);
        log_error("-x %s: more than %u IPv4 addresses to answer on (-l)",
                  ifname, MIRROR_MAX_DADDRS);
        return -1;
    }
    for (i = 0; i < *n; i++)
        for (j = 0; j < ifa_n; j++)
            if (v[i].s_addr == ifa_v[j].s_addr)
                *on_if = true;
    return 0;
}

static int xdp_if_mtu(const char *ifname)
{
    struct ifreq ifr;
    int fd, mtu = -1;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
        mtu = ifr.ifr_mtu;
    close(fd);
    return mtu;
}

int server_xdp_open(struct server *srv)
{
    const struct options *o = &srv->opt;
    struct mirror_config cfg;
    struct mirror_stats ms;
    struct in_addr addrs[MIRROR_MAX_DADDRS];
    char err[256], list[MIRROR_MAX_DADDRS * 17];
    size_t naddrs = 0, i, k = 0;
    bool on_if;
    int mtu, rc;

    if (o->xdp == NULL)
        return 0;
    if (o->udp_port == 0) { /* options_parse() refuses it already */
        log_error("-x %s needs -U PORT", o->xdp);
        return EX_USAGE;
    }
    if (if_nametoindex(o->xdp) == 0) {
        log_error("-x %s: no such network interface", o->xdp);
        return EX_UNAVAILABLE;
    }
    if (geteuid() != 0) {
        log_error("-x %s needs root (CAP_BPF and CAP_NET_ADMIN to load and "
                  "attach XDP); start as root, mdcached then drops to -u "
                  "USER (default nobody)", o->xdp);
        return EX_UNAVAILABLE;
    }
    if (xdp_addrs(srv, addrs, &naddrs, &on_if) < 0)
        return EX_USAGE;
    if (naddrs == 0) {
        log_error("-x %s: no IPv4 address to answer on: give -l an IPv4 "
                  "address of %s (or 0.0.0.0)", o->xdp, o->xdp);
        return EX_USAGE;
    }
    for (i = 0; i < naddrs; i++) {
        char a[INET_ADDRSTRLEN];

        inet_ntop(AF_INET, &addrs[i], a, sizeof(a));
        k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? "," : "",
                              a);
    }
    if (!on_if)
        log_warn("-x %s: none of the addresses answered (%s) is configured on "
                 "%s: XDP will pass every request", o->xdp, list, o->xdp);
    memset(&cfg, 0, sizeof(cfg));
    cfg.ifname = o->xdp;
    cfg.mode = strcmp(o->xdp_mode, "native") == 0    ? MIRROR_MODE_NATIVE
               : strcmp(o->xdp_mode, "generic") == 0 ? MIRROR_MODE_GENERIC
                                                     : MIRROR_MODE_AUTO;
    cfg.port = (uint16_t)o->udp_port;
    cfg.addrs = addrs;
    cfg.naddrs = naddrs;
    cfg.slots[0] = (uint32_t)o->xdp_slots_small;
    cfg.slots[1] = (uint32_t)o->xdp_slots_medium;
    cfg.slots[2] = (uint32_t)o->xdp_slots_large;
    /* The userspace path sends a reply over UDP_DGRAM_MAX bytes as several
     * datagrams; the program answers only what fits in one, the same bytes. */
    mtu = xdp_if_mtu(o->xdp);
    if (mtu <= 0 || mtu > UDP_DGRAM_MAX + 28)
        mtu = UDP_DGRAM_MAX + 28;
    cfg.mtu = (uint32_t)mtu;
    rc = mirror_open(&cfg, &srv->mirror, err, sizeof(err));
    if (rc < 0) {
        log_error("-x %s: %s", o->xdp, err);
        return rc == -ENOTSUP || rc == -ENODEV || rc == -EPERM
                   ? EX_UNAVAILABLE
                   : EX_OSERR;
    }
    store_set_hook(srv->store, mirror_store_hook, srv->mirror);
    srv->udp_hit_hook = server_xdp_hit;
    srv->udp_hit_ctx = srv;
    mirror_stats(srv->mirror, &ms);
    log_info("XDP on %s (%s mode) for UDP port %llu on %s: program verified "
             "in %u instructions, mirror %u+%u+%u slots (%llu KiB), admit on "
             "hit %llu",
             o->xdp, ms.mode, (unsigned long long)o->udp_port, list,
             ms.verified_insns, ms.slots[0], ms.slots[1], ms.slots[2],
             (unsigned long long)(ms.mem_bytes >> 10),
             (unsigned long long)o->xdp_admit);
    return 0;
}

/* Runs on the main thread. */
static void server_begin_stop(struct server *srv)
{
    struct worker *m = &srv->workers[0];

    if (m->stopping)
        return;
    atomic_store(&srv->stop, true);
    log_info("stopping: no new connections, finishing requests");
    net_close_all(srv);
    if (srv->nnet == 0)
        worker_begin_stop(m); /* the loop ends with the last connection */
    else
        event_base_loopexit(m->base, NULL);
    m->stopping = true;
}

static void server_signal_cb(evutil_socket_t sig, short what, void *arg)
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
            log_error("cannot reopen log file: %s", strerror(errno));
        else
            log_info("log file reopened");
        break;
    case SIGUSR1:
        log_warn("SIGUSR1: dumps not implemented yet");
        break;
    default:
        break;
    }
}

static void server_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server_begin_stop(arg);
}

void server_stop(struct server *srv)
{
    struct event *ev = srv->ev_sig[4];

    if (ev != NULL)
        event_active(ev, EV_READ, 0);
}

static int server_signals(struct server *srv)
{
    static const int sigs[4] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
    struct event_base *base = srv->workers[0].base;
    int i;

    signal(SIGPIPE, SIG_IGN);
    for (i = 0; i < 4; i++) {
        srv->ev_sig[i] = evsignal_new(base, sigs[i], server_signal_cb, srv);
        if (srv->ev_sig[i] == NULL || event_add(srv->ev_sig[i], NULL) < 0)
            return -1;
    }
    srv->ev_sig[4] = event_new(base, -1, 0, server_stop_cb, srv);
    return srv->ev_sig[4] != NULL ? 0 : -1;
}

static int server_write_pidfile(struct server *srv)
{
    const char *path = srv->opt.pid_file;
    char buf[32];
    int fd, n, rc = -1;

    if (path == NULL)
        return 0;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_error("cannot write pid file %s: %s", path, strerror(errno));
        goto out;
    }
    n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    if (write(fd, buf, (size_t)n) != n) {
        log_error("cannot write pid file %s: %s", path, strerror(errno));
        goto out;
    }
    srv->pidfile_written = true;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
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
    if (server_write_pidfile(srv) < 0)
        goto out;
    if (server_drop_privileges(srv) < 0)
        goto out;
    if (threads_start(srv) < 0)
        goto stop;
    if (net_enable_accept(srv) < 0) {
        log_error("cannot start accepting");
        goto stop;
    }
    log_info("mdcached %s ready: model %s, %u network and %u payload "
             "threads, %llu MiB, %s",
             PACKAGE_VERSION, thread_model_name(srv->model), srv->nnet,
             srv->npay, (unsigned long long)srv->opt.memory_mb,
             mdc_allocator_name());
    event_base_dispatch(srv->workers[0].base);
    rc = 0;
stop:
    net_close_all(srv);
    threads_stop_and_join(srv);
    log_info("stopped");
out:
    if (srv->pidfile_written && unlink(srv->opt.pid_file) < 0)
        log_debug("cannot remove pid file: %s", strerror(errno));
    return rc;
}
