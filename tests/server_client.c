/*
 * server_client.c - daemon control and a blocking native client for the
 * black-box tests (see server_client.h).
 */
#include "config.h"

#include "server_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

const char *tsrv_binary(void)
{
    static char path[4096];
    const char *b = getenv("MDC_BUILDDIR");

    if (b != NULL && b[0] != '\0')
        snprintf(path, sizeof(path), "%s/server/mdcached", b);
    else
        snprintf(path, sizeof(path), "./server/mdcached");
    return path;
}

bool tsrv_external(void)
{
    const char *e = getenv("MDC_TEST_SERVER");
    return e != NULL && e[0] != '\0';
}

int tsrv_port_file_port(const char *path, const char *kind,
                        const char *host)
{
    char line[256], want[160];
    FILE *f = fopen(path, "r");
    int port = -1;

    if (f == NULL)
        return -1;
    snprintf(want, sizeof(want), "%s %s:", kind, host);
    while (port < 0 && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, want, strlen(want)) == 0)
            port = atoi(line + strlen(want));
    fclose(f);
    return port > 0 ? port : -1;
}

/* The port of kind on host; a daemon listening on the wildcard address
 * (-l 0.0.0.0) serves 127.0.0.1 there too. */
int tsrv_port_of(const struct tsrv *s, const char *kind, const char *host)
{
    int port = tsrv_port_file_port(s->port_file, kind, host);

    if (port < 0 && strcmp(host, "127.0.0.1") == 0)
        port = tsrv_port_file_port(s->port_file, kind, "0.0.0.0");
    return port;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int try_connect(const struct tsrv *s)
{
    int fd = tc_connect(s);
    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : -1;
}

static int atexit_done;

/* ---- the daemons this process started --------------------------------- */

/* Each daemon started and not yet stopped.  At exit (a cmocka assertion
 * that failed left its test before tsrv_stop(), say) each one still there
 * has its log printed, is killed and its directory removed: no daemon
 * outlives its test, and the reason of the failure is in the test's log. */
struct live {
    pid_t pid, owner;
    char dir[64], out[80], log_file[256];
};
static struct live live[64];

static void live_add(const struct tsrv *s)
{
    size_t i;

    for (i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        if (live[i].pid == 0) {
            live[i].pid = s->pid;
            live[i].owner = getpid();
            snprintf(live[i].dir, sizeof(live[i].dir), "%s", s->dir);
            snprintf(live[i].out, sizeof(live[i].out), "%s", s->out);
            snprintf(live[i].log_file, sizeof(live[i].log_file), "%s",
                     s->log_file);
            return;
        }
}

static void live_del(pid_t pid)
{
    size_t i;

    for (i = 0; i < sizeof(live) / sizeof(live[0]); i++)
        if (live[i].pid == pid)
            live[i].pid = 0;
}

static void print_file(const char *path, const char *what)
{
    char buf[4096];
    FILE *f;
    long size;
    size_t n;

    if (path[0] == '\0' || (f = fopen(path, "r")) == NULL)
        return;
    /* the last 64 KiB: a -vv log of a long test is large */
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fprintf(stderr, "---- %s %s (%ld bytes)%s ----\n", what, path, size,
            size > 65536 ? ", the last 64 KiB" : "");
    fseek(f, size > 65536 ? size - 65536 : 0, SEEK_SET);
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, stderr);
    fprintf(stderr, "---- end of %s ----\n", what);
    fclose(f);
}

static void remove_dir(const char *dir)
{
    static const char *const names[] = {"sock", "ports", "ports.tmp",
                                        "notify", "log"};
    char path[128];
    size_t i;
    const char *keep = getenv("MDC_TEST_KEEP");

    if (dir[0] == '\0' || (keep != NULL && keep[0] == '1'))
        return;
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void live_atexit(void)
{
    size_t i;

    for (i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
        struct live *l = &live[i];

        /* a forked child of the test exiting is no reason to stop them */
        if (l->pid == 0 || l->owner != getpid())
            continue;
        /* the test reaped it itself (a test of a daemon that dies) */
        if (waitpid(l->pid, NULL, WNOHANG) < 0 && errno == ECHILD) {
            remove_dir(l->dir);
            l->pid = 0;
            continue;
        }
        fprintf(stderr, "mdcached %ld still running at exit (a test failed "
                "before it stopped it): killed\n", (long)l->pid);
        print_file(l->log_file, "its --log-file");
        print_file(l->out, "its output");
        kill(l->pid, SIGKILL);
        waitpid(l->pid, NULL, 0);
        remove_dir(l->dir);
        l->pid = 0;
    }
}

void tsrv_print_log(const struct tsrv *s, const char *why)
{
    fprintf(stderr, "mdcached (pid %ld, %s): %s\n", (long)s->pid, s->dir,
            why);
    print_file(s->log_file, "its --log-file");
    print_file(s->out, "its output");
}

static char *slurp(const char *path, char *acc, size_t *len)
{
    FILE *f;
    char buf[4096];
    size_t n;

    if (path[0] == '\0' || (f = fopen(path, "r")) == NULL)
        return acc;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        char *p = realloc(acc, *len + n + 1);
        if (p == NULL)
            break;
        acc = p;
        memcpy(acc + *len, buf, n);
        *len += n;
        acc[*len] = '\0';
    }
    fclose(f);
    return acc;
}

char *tsrv_log(const struct tsrv *s)
{
    size_t len = 0;
    char *acc = calloc(1, 1);

    acc = slurp(s->log_file, acc, &len);
    return slurp(s->out, acc, &len);
}

/* ---- start ---------------------------------------------------------------- */

static int start_timeout_ms(const struct tsrv *s)
{
    const char *e = getenv("MDC_TEST_START_TIMEOUT");

    if (s->opts.timeout_ms > 0)
        return s->opts.timeout_ms;
    /* generous: a dump loads before the daemon listens, and the sanitizer
     * builds on a busy machine are slow; waiting costs nothing, the
     * daemon's own signal ends it */
    return e != NULL && atoi(e) > 0 ? atoi(e) * 1000 : 60000;
}

static long now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The value of option name in args ("--name V" or "--name=V"), or NULL. */
static const char *arg_value(const char *const *args, const char *name)
{
    size_t n = strlen(name);
    int i;

    for (i = 0; args != NULL && args[i] != NULL; i++) {
        if (strcmp(args[i], name) == 0 && args[i + 1] != NULL)
            return args[i + 1];
        if (strncmp(args[i], name, n) == 0 && args[i][n] == '=')
            return args[i] + n + 1;
    }
    return NULL;
}

/* A datagram socket for the daemon's sd_notify (NOTIFY_SOCKET): READY=1
 * comes once every listener accepts.  -1 in a build --without-systemd
 * (the daemon does not notify) or with MDC_TEST_NOTIFY=0: the port file
 * says it then, written once every listener is bound. */
static int notify_socket(const struct tsrv *s, char *path, size_t len)
{
#ifdef MDC_SD_NOTIFY
    struct sockaddr_un sa;
    const char *e = getenv("MDC_TEST_NOTIFY");
    int fd;

    /* MDC_TEST_NOTIFY=0: the port file only, as --without-systemd */
    if (e != NULL && strcmp(e, "0") == 0)
        return -1;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", s->dir);
    unlink(sa.sun_path);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    /* a daemon that drops to nobody (-u) still notifies */
    chmod(sa.sun_path, 0777);
    snprintf(path, len, "%s", sa.sun_path);
    return fd;
#else
    (void)s;
    (void)path;
    (void)len;
    return -1;
#endif
}

/* Wait for the daemon's signal: READY=1 on nfd, or else its port file
 * renamed into place (inotify); its exit (a pidfd) ends the wait too.
 * 0 ready, 1 exited (s->status), -1 timeout. */
static int wait_ready(struct tsrv *s, int nfd)
{
    struct pollfd p[2];
    long deadline = now_ms() + start_timeout_ms(s);
    int pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
    int ifd = -1, st, rc = -1;
    char pfdir[256], *slash;

    snprintf(pfdir, sizeof(pfdir), "%s", s->port_file);
    slash = strrchr(pfdir, '/');
    if (slash != NULL)
        *slash = '\0';
    if (nfd < 0) {
        ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (ifd >= 0)
            inotify_add_watch(ifd, slash != NULL ? pfdir : ".",
                              IN_MOVED_TO | IN_CLOSE_WRITE);
    }
    p[0].fd = nfd >= 0 ? nfd : ifd;
    p[0].events = POLLIN;
    p[1].fd = pidfd;
    p[1].events = POLLIN;
    for (;;) {
        long left = deadline - now_ms();
        char buf[4096];
        ssize_t k;

        if (nfd >= 0) {
            while ((k = recv(nfd, buf, sizeof(buf) - 1, 0)) > 0) {
                buf[k] = '\0';
                if (strstr(buf, "READY=1") != NULL)
                    rc = 0;
            }
        } else {
            while (ifd >= 0 && read(ifd, buf, sizeof(buf)) > 0)
                ;
            if (access(s->port_file, F_OK) == 0)
                rc = 0;
        }
        if (rc == 0)
            break;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->status = exit_code(st);
            rc = 1;
            break;
        }
        if (left <= 0)
            break;
        /* no pidfd (an old kernel) or no inotify: look again every 10 ms */
        if (pidfd < 0 || p[0].fd < 0)
            left = left < 10 ? left : 10;
        poll(p, 2, (int)left);
    }
    if (ifd >= 0)
        close(ifd);
    if (pidfd >= 0)
        close(pidfd);
    return rc;
}

static int tsrv_spawn(struct tsrv *s)
{
    const char *argv[96];
    const char *const *args = s->args;
    const char *v = getenv("MDC_TEST_VERBOSE");
    char notify[128] = "";
    size_t n = 0;
    int i, nfd;

    argv[n++] = tsrv_binary();
    if (!(s->opts.flags & TSRV_RAW)) {
        /* "-p auto": a port the kernel picks at bind time, read back from
         * the port file; no free port is probed (another test could take
         * it) */
        argv[n++] = "-p";
        argv[n++] = "auto";
        argv[n++] = "-s";
        argv[n++] = s->unix_path;
        argv[n++] = "-v";
        argv[n++] = v != NULL ? v : "1";
    }
    if (arg_value(args, "--port-file") == NULL &&
        s->opts.port_file == NULL) {
        argv[n++] = "--port-file";
        argv[n++] = s->port_file;
    }
    for (i = 0; args != NULL && args[i] != NULL && n < 94; i++)
        argv[n++] = args[i];
    argv[n] = NULL;

    unlink(s->port_file); /* from the previous start */
    nfd = notify_socket(s, notify, sizeof(notify));
    s->status = -1;
    s->pid = fork();
    if (s->pid < 0) {
        if (nfd >= 0)
            close(nfd);
        s->pid = 0;
        return -1;
    }
    if (s->pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        int out = open(s->out, O_WRONLY | O_CREAT | O_APPEND, 0644);

        /* never hold the test's output pipes: the daemon's output (and
         * any sanitizer report) goes to dir/log, printed on a failure */
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        if (out >= 0) {
            dup2(out, STDOUT_FILENO);
            dup2(out, STDERR_FILENO);
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a test that crashed */
        if (notify[0] != '\0')
            setenv("NOTIFY_SOCKET", notify, 1);
        else
            unsetenv("NOTIFY_SOCKET");
        if (s->opts.pre_exec != NULL)
            s->opts.pre_exec(s->opts.arg);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    live_add(s);
    s->notify_fd = nfd;
    if (s->opts.flags & TSRV_NOWAIT)
        return 0;
    return tsrv_wait_ready(s);
}

int tsrv_wait_ready(struct tsrv *s)
{
    int rc = wait_ready(s, s->notify_fd);

    if (s->notify_fd >= 0)
        close(s->notify_fd);
    s->notify_fd = -1;
    if (rc > 0) { /* exited before it was ready: a refused start */
        live_del(s->pid);
        s->pid = 0;
        return s->status > 0 ? s->status : -1;
    }
    if (rc < 0) {
        tsrv_print_log(s, "not ready in time: killed");
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        live_del(s->pid);
        s->pid = 0;
        return -1;
    }
    s->port = tsrv_port_of(s, "tcp", s->host);
    s->udp_port = tsrv_port_of(s, "udp", s->host);
    if (s->port < 0)
        s->port = 0; /* no TCP on 127.0.0.1 (-p 0, other -l) */
    return 0;
}

int tsrv_start_opts(struct tsrv *s, const struct tsrv_opts *o,
                    const char *const *args)
{
    const char *pf, *lf;

    memset(s, 0, sizeof(*s));
    s->status = -1;
    s->notify_fd = -1;
    snprintf(s->host, sizeof(s->host), "127.0.0.1");
    snprintf(s->dir, sizeof(s->dir), "/tmp/mdc-test-XXXXXX");
    if (mkdtemp(s->dir) == NULL) {
        s->dir[0] = '\0';
        return -1;
    }
    if (atexit_done == 0) {
        atexit(live_atexit);
        atexit_done = 1;
    }
    /* The daemon may drop to nobody after binding: let it reach the dir. */
    chmod(s->dir, 0755);
    snprintf(s->unix_path, sizeof(s->unix_path), "%s/sock", s->dir);
    snprintf(s->out, sizeof(s->out), "%s/log", s->dir);
    pf = arg_value(args, "--port-file");
    if (pf == NULL && o != NULL)
        pf = o->port_file;
    if (pf != NULL)
        snprintf(s->port_file, sizeof(s->port_file), "%s", pf);
    else
        snprintf(s->port_file, sizeof(s->port_file), "%s/ports", s->dir);
    lf = arg_value(args, "--log-file");
    if (lf != NULL)
        snprintf(s->log_file, sizeof(s->log_file), "%s", lf);
    if (o != NULL)
        s->opts = *o;
    s->args = args;
    return tsrv_spawn(s);
}

int tsrv_restart(struct tsrv *s)
{
    if (s->pid > 0 || s->dir[0] == '\0')
        return -1;
    return tsrv_spawn(s);
}

int tsrv_start(struct tsrv *s, const char *const *args)
{
    int rc = tsrv_start_opts(s, NULL, args);

    if (rc != 0 && s->status >= 0) {
        char why[64];

        snprintf(why, sizeof(why), "exited with status %d before it was "
                 "ready", s->status);
        tsrv_print_log(s, why);
    }
    if (rc != 0)
        tsrv_stop(s);
    return rc == 0 ? 0 : -1;
}

int tsrv_start_or_external(struct tsrv *s, const char *const *args)
{
    const char *e = getenv("MDC_TEST_SERVER");
    const char *colon;

    if (e == NULL || e[0] == '\0')
        return tsrv_start(s, args);
    memset(s, 0, sizeof(*s));
    s->external = true;
    colon = strrchr(e, ':');
    if (colon == NULL || (size_t)(colon - e) >= sizeof(s->host))
        return -1;
    memcpy(s->host, e, (size_t)(colon - e));
    s->host[colon - e] = '\0';
    s->port = atoi(colon + 1);
    return try_connect(s);
}

/* ---- stop ----------------------------------------------------------------- */

int tsrv_kill(struct tsrv *s, int sig)
{
    int status = 0, pidfd;
    long deadline = now_ms() + start_timeout_ms(s);
    pid_t w;

    if (s->external || s->pid <= 0)
        return s->status;
    w = waitpid(s->pid, &status, WNOHANG);
    /* a test that waited for it itself: no signal to a pid not ours */
    if (w < 0 && errno == ECHILD) {
        live_del(s->pid);
        s->pid = 0;
        return s->status;
    }
    if (w != s->pid) { /* still running (not already exited) */
        pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
        kill(s->pid, sig);
        while (waitpid(s->pid, &status, WNOHANG) != s->pid) {
            struct pollfd p = {pidfd, POLLIN, 0};
            long left = deadline - now_ms();

            if (left <= 0) {
                tsrv_print_log(s, "did not stop in time: killed");
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &status, 0);
                status = -1;
                break;
            }
            if (pidfd < 0)
                sleep_ms(10); /* no pidfd (an old kernel): look again */
            else
                poll(&p, 1, (int)left);
        }
        if (pidfd >= 0)
            close(pidfd);
    }
    live_del(s->pid);
    s->pid = 0;
    s->status = status < 0 ? -1 : exit_code(status);
    return s->status;
}

int tsrv_stop(struct tsrv *s)
{
    int rc;

    if (s->external)
        return 0;
    if (s->pid > 0) {
        rc = tsrv_kill(s, SIGTERM);
        if (rc > 128) {
            fprintf(stderr, "mdcached killed by signal %d\n", rc - 128);
            tsrv_print_log(s, "killed by a signal after SIGTERM");
            rc = -1;
        } else if (rc != 0) {
            char why[64];

            snprintf(why, sizeof(why), "exit status %d after SIGTERM", rc);
            tsrv_print_log(s, why);
        }
    } else {
        rc = s->status < 0 ? 0 : s->status;
    }
    remove_dir(s->dir);
    s->dir[0] = '\0';
    return rc;
}

long tsrv_rss_kb(const struct tsrv *s)
{
    char path[64], line[256];
    long kb = 0;
    FILE *f;

    if (s->pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)s->pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

void tc_set_timeout_ms(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int tc_connect(const struct tsrv *s)
{
    return tc_connect_rcvbuf(s, 0);
}

int tc_connect_rcvbuf(const struct tsrv *s, int rcvbuf)
{
    struct sockaddr_in sa;
    int fd, one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)s->port);
    if (inet_pton(AF_INET, s->host, &sa.sin_addr) != 1)
        return -1;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tc_set_timeout_ms(fd, TC_HANG_MS);
    return fd;
}

int tc_connect_unix(const struct tsrv *s)
{
    struct sockaddr_un sa;
    int fd;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->unix_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    tc_set_timeout_ms(fd, TC_HANG_MS);
    return fd;
}

uint8_t *tc_compose(const struct treq *r, size_t *len)
{
    struct wire_hdr h;
    size_t n = WIRE_HDR_LEN + r->ntags * WIRE_TAG_LEN + r->klen + r->vlen;
    uint8_t *buf = malloc(n);

    if (buf == NULL)
        return NULL;
    wire_hdr_request(&h, r->op);
    h.flags = r->flags;
    h.klen = (uint16_t)r->klen;
    h.ntags = (uint16_t)r->ntags;
    h.vlen = (uint32_t)r->vlen;
    h.opaque = r->opaque;
    h.iflags = r->iflags;
    h.cas = r->cas;
    h.expiry = r->exp;
    if (wire_compose(buf, n, &h, r->tags, r->key, r->val) != (ssize_t)n) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int tc_send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_send(int fd, const struct treq *r)
{
    size_t len;
    uint8_t *buf = tc_compose(r, &len);
    int rc;

    if (buf == NULL)
        return -1;
    rc = tc_send_all(fd, buf, len);
    free(buf);
    return rc;
}

int tc_read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_recv(int fd, struct tresp *r)
{
    uint8_t hdr[WIRE_HDR_LEN];
    uint64_t body;
    size_t i, nt;

    memset(r, 0, sizeof(*r));
    if (tc_read_full(fd, hdr, sizeof(hdr)) < 0)
        return -1;
    {
        /* An unknown opcode is echoed in its error reply: still a reply. */
        int rc = wire_parse_header(hdr, sizeof(hdr), &r->h, SIZE_MAX);
        if (rc != WIRE_OK && !wire_err_in_sync(rc))
            return -1;
    }
    body = wire_body_len(&r->h);
    r->body = malloc(body + 1);
    if (r->body == NULL)
        return -1;
    if (body > 0 && tc_read_full(fd, r->body, body) < 0) {
        free(r->body);
        r->body = NULL;
        return -1;
    }
    r->body[body] = '\0';
    nt = r->h.ntags < 64 ? r->h.ntags : 64;
    for (i = 0; i < nt; i++) {
        r->tags[i].tkey = (int32_t)wire_get_u32(r->body + i * WIRE_TAG_LEN);
        r->tags[i].tval = (int32_t)wire_get_u32(r->body + i * WIRE_TAG_LEN + 4);
    }
    r->key = r->body + (size_t)r->h.ntags * WIRE_TAG_LEN;
    r->val = r->key + r->h.klen;
    return 0;
}

void tc_resp_free(struct tresp *r)
{
    free(r->body);
    r->body = NULL;
}

bool tc_wait_eof(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint8_t buf[4096];

    for (;;) {
        int n = poll(&p, 1, ms);
        ssize_t k;

        if (n <= 0)
            return false;
        k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
            return true;
    }
}

int tc_call(int fd, const struct treq *r, struct tresp *out)
{
    struct tresp tmp;
    struct tresp *p = out != NULL ? out : &tmp;
    int st;

    if (tc_send(fd, r) < 0 || tc_recv(fd, p) < 0)
        return -1;
    st = p->h.status;
    if (out == NULL)
        tc_resp_free(&tmp);
    return st;
}

int tc_set(int fd, const char *key, const void *val, size_t vlen,
           const struct wire_tag *tags, size_t ntags)
{
    struct treq r = {.op = WIRE_OP_SET, .key = key, .klen = strlen(key),
                     .val = val, .vlen = vlen, .tags = tags, .ntags = ntags};
    return tc_call(fd, &r, NULL);
}

int tc_get(int fd, const char *key, char **val, size_t *vlen)
{
    struct treq r = {.op = WIRE_OP_GET, .key = key, .klen = strlen(key)};
    struct tresp p;
    int st = tc_call(fd, &r, &p);

    if (st == 0 && val != NULL) {
        *val = malloc(p.h.vlen + 1);
        memcpy(*val, p.val, p.h.vlen);
        (*val)[p.h.vlen] = '\0';
        if (vlen != NULL)
            *vlen = p.h.vlen;
    }
    if (st >= 0)
        tc_resp_free(&p);
    return st;
}

int tc_stat_str(int fd, const char *name, char *buf, size_t len)
{
    struct treq r = {.op = WIRE_OP_STATS};
    struct tresp p = {0};
    size_t nl = strlen(name);
    const char *line;
    int rc = -1;

    if (tc_call(fd, &r, &p) != 0)
        goto out;
    for (line = (const char *)p.val; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        if (strncmp(line, name, nl) == 0 && line[nl] == ' ') {
            size_t vl = (size_t)((eol ? eol : line + strlen(line)) - line) - nl - 1;
            if (vl >= len)
                vl = len - 1;
            memcpy(buf, line + nl + 1, vl);
            buf[vl] = '\0';
            rc = 0;
            break;
        }
        line = eol ? eol + 1 : NULL;
    }
out:
    tc_resp_free(&p);
    return rc;
}

long long tc_stat(int fd, const char *name)
{
    char buf[64];

    if (tc_stat_str(fd, name, buf, sizeof(buf)) < 0)
        return -1;
    return atoll(buf);
}

/* SIGSTOP takes effect thread by thread: wait until every thread of pid is
 * stopped (/proc/PID/task/N/stat in state T or t), so that no request sent
 * afterwards can still be served; a ceiling only a hang crosses.  Without
 * /proc it only sends the signal. */
void tsrv_stop_fully(pid_t pid)
{
    char path[64];
    kill(pid, SIGSTOP);
    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    for (int tries = 0; tries < TC_HANG_MS / 5; tries++) {
        bool all = true;
        DIR *d = opendir(path);
        if (d == NULL)
            return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char stat[sizeof(path) + sizeof(e->d_name) + 8], buf[512];
            if (e->d_name[0] == '.')
                continue;
            snprintf(stat, sizeof(stat), "%s/%s/stat", path, e->d_name);
            FILE *f = fopen(stat, "r");
            if (f == NULL)
                continue;
            size_t n = fread(buf, 1, sizeof(buf) - 1, f);
            fclose(f);
            buf[n] = '\0';
            char *p = strrchr(buf, ')');
            if (p != NULL && p[1] == ' ' && p[2] != 'T' && p[2] != 't')
                all = false;
        }
        closedir(d);
        if (all)
            return;
        usleep(5000);
    }
}

int tsrv_gate_fifo(const char *path)
{
    unlink(path);
    if (mkfifo(path, 0666) < 0)
        return -1;
    return chmod(path, 0666); /* past the umask: the daemon runs as nobody */
}
