/*
 * net.c - listeners (TCP on every -l address, IPv6 included, and the Unix
 * socket of -s) and the accept loop: the connection limit (-c), then the
 * hand-over of each new connection to a network thread, round-robin.  The
 * UDP sockets of -U are bound here too (udp.c), before privileges drop.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>


#include "server/core/alloc.h"
#include "server/core/newfile.h"
#include "conn.h"
#include "evloop.h"
#include "watch.h"
#include "net.h"
#include "threads.h"
#include "tls.h"
#include "transport.h"
#include "udp.h"
#include "server/server.h"
#include "server/addr.h"
#include "server/log.h"

static const char net_busy_msg[] = "ERROR Too many open connections\r\n"; /* memcached */
/* One line both protocols' clients show: the text protocol's error form. */
static const char net_protected_msg[] =
    "SERVER_ERROR protected mode: mdcached listens on a non-loopback "
    "address without authentication, so only loopback clients are served; "
    "configure --auth-file=PATH (or --tls-ca on a --tls-listen address), "
    "or start it with --protected-mode=no (docs/security.md)\r\n";

/* Protected mode: a peer that is not on loopback gets one error line. */
static bool net_protected_refuse(struct server *srv, struct listener *l,
                                 int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (!srv->protected_mode || l->loopback || (l->tls && srv->opt.tls_ca))
        return false; /* client certificates authenticate (mutual TLS) */
    if (getpeername(fd, (struct sockaddr *)&ss, &len) == 0 &&
        addr_is_loopback((struct sockaddr *)&ss))
        return false;
    STAT_INC(&srv->workers[0].stats, protected_mode_refusals);
    log_debug("connection on %s refused: protected mode", l->name);
    if (!l->tls) /* a TLS client could not read a clear-text line */
        (void)send(fd, net_protected_msg, sizeof(net_protected_msg) - 1,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
    /* FIN behind the line; a request already received makes close() reset
     * the connection, but the line has gone out first */
    (void)shutdown(fd, SHUT_WR);
    close(fd);
    return true;
}

static void net_set_nodelay(int fd)
{
    int one = 1;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * TCP_NODELAY is set on each TCP listener; Linux copies it to every
 * accepted socket, which saves a setsockopt() per connection.  The first
 * accepted TCP connection checks that the kernel really does (one
 * getsockopt() per process); if not, every connection gets its own.
 * 0 unknown, 1 inherited, -1 set per connection.
 */
static atomic_int net_nodelay_inherited;

static void net_accepted_nodelay(int fd)
{
    int st = atomic_load_explicit(&net_nodelay_inherited, memory_order_relaxed);

    if (st == 0) {
        int v = 0;
        socklen_t len = sizeof(v);

        st = getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v != 0
                 ? 1
                 : -1;
        atomic_store_explicit(&net_nodelay_inherited, st,
                              memory_order_relaxed);
    }
    if (st < 0)
        net_set_nodelay(fd);
}

static uint64_t net_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void net_accept_resume_cb(int fd, short what, void *arg)
{
    struct server *srv = arg;
    uint64_t at = atomic_exchange(&srv->listen_disabled_at_us, 0);

    (void)fd;
    (void)what;
    if (at != 0)
        atomic_fetch_add(&srv->listen_disabled_us, net_mono_us() - at);
    if (!atomic_load(&srv->stop))
        net_enable_accept(srv);
}

/* Out of descriptors: stop accepting for a second rather than spin. */
static void net_accept_backoff(struct server *srv)
{
    net_disable_accept(srv);
    STAT_INC(&srv->workers[0].stats, listen_disabled_num);
    if (atomic_load(&srv->listen_disabled_at_us) == 0)
        atomic_store(&srv->listen_disabled_at_us, net_mono_us());
    if (srv->ev_accept_resume == NULL)
        srv->ev_accept_resume =
            evloop_user_new(&srv->workers[0], net_accept_resume_cb, srv);
    if (srv->ev_accept_resume != NULL)
        evloop_timer_add(srv->ev_accept_resume, 1000);
}

static void net_accept_one(struct server *srv, struct listener *l, int fd)
{
    struct worker *main_w = &srv->workers[0];
    struct worker *w;
    struct conn *c;
    unsigned n = atomic_load(&srv->nconns);
    /* SIGHUP may change it (daemon.c, config reload) */
    uint64_t max = __atomic_load_n(&srv->opt.max_conns, __ATOMIC_RELAXED);

    if (n >= max) {
        STAT_INC(&main_w->stats, rejected_connections);
        log_debug("connection refused: %u open (-c %llu)", n,
                  (unsigned long long)max);
        (void)send(fd, net_busy_msg, sizeof(net_busy_msg) - 1,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
        return;
    }
    if (net_protected_refuse(srv, l, fd))
        return;
    if (l->family != AF_UNIX)
        net_accepted_nodelay(fd);
    if (srv->nnet == 0)
        w = main_w;
    else
        w = &srv->workers[1 + srv->next_net++ % srv->nnet];
    atomic_fetch_add(&srv->nconns, 1);
    c = conn_setup(srv, w, fd, l->family);
    if (c == NULL) {
        log_warn("out of memory for a new connection");
        atomic_fetch_sub(&srv->nconns, 1);
        close(fd);
        return;
    }
    if (l->tls && tls_conn_attach(c) < 0) {
        log_warn("out of memory for a new TLS connection");
        conn_teardown(c);
        return;
    }
    STAT_INC(&main_w->stats, total_connections);
    if (watch_wants(srv, WATCH_CONNEVENTS))
        conn_watch_event(c, true);
    log_debug("conn %llu accepted on %s", (unsigned long long)c->id, l->name);
    if (w == main_w) {
        if (conn_adopt(c) < 0)
            conn_teardown(c);
        else
            conn_drive(c);
    } else {
        worker_give_conn(w, c);
    }
}

void net_accepted(struct server *srv, size_t i, int fd)
{
    struct listener *l;

    if (i >= srv->nlisteners || srv->listeners == NULL ||
        !__atomic_load_n(&srv->accepting, __ATOMIC_RELAXED)) {
        if (fd >= 0)
            close(fd);
        return;
    }
    l = &srv->listeners[i];
    if (fd < 0) {
        if (fd == -EMFILE || fd == -ENFILE || fd == -ENOBUFS ||
            fd == -ENOMEM) {
            log_warn("accept on %s: %s; pausing 1 s", l->name,
                     strerror(-fd));
            net_accept_backoff(srv);
        }
        return;
    }
    net_accept_one(srv, l, fd);
}

static struct listener *net_add(struct server *srv, int fd, int family,
                                const char *name)
{
    struct listener *ls;
    struct listener *l;

    ls = mdc_realloc(srv->listeners,
                     (srv->nlisteners + 1) * sizeof(*srv->listeners));
    if (ls == NULL)
        return NULL;
    srv->listeners = ls;
    l = &ls[srv->nlisteners++];
    memset(l, 0, sizeof(*l));
    l->fd = fd;
    l->family = family;
    snprintf(l->name, sizeof(l->name), "%s", name);
    return l;
}

/* The name of a socket bound to port "auto": the port the kernel chose. */
int net_bound_name(int fd, const struct addrinfo *ai, char *name, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct addrinfo bound = *ai;
    char port[16];

    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return -1;
    bound.ai_addr = (struct sockaddr *)&ss;
    bound.ai_addrlen = sl;
    snprintf(port, sizeof(port), "%u",
             ntohs(ss.ss_family == AF_INET6
                       ? ((struct sockaddr_in6 *)&ss)->sin6_port
                       : ((struct sockaddr_in *)&ss)->sin_port));
    addr_name(&bound, port, name, len);
    return 0;
}

/* An address that an earlier -l or --tls-listen value already bound (the
 * same value twice, or two names of one address): say so, rather than
 * "Address already in use" as if another process held it. */
static bool net_listed_twice(struct server *srv, const char *name, bool tls)
{
    size_t i;

    for (i = 0; i < srv->nlisteners; i++) {
        const struct listener *l = &srv->listeners[i];
        if (l->family != AF_UNIX && strcmp(l->name, name) == 0) {
            log_error("cannot listen on %s%s: the address was given twice "
                      "(-l / --tls-listen)", name, tls ? " (TLS)" : "");
            return true;
        }
    }
    return false;
}

/* The port of a --tls-listen address that names none. */
#define NET_TLS_PORT 11312

static int net_listen_tcp(struct server *srv, const char *spec, bool tls)
{
    struct addrinfo *res = NULL, *ai;
    struct listener *l;
    char port[16], name[128];
    int rc = -1, n = 0;

    if (addr_resolve_listen(spec, tls ? NET_TLS_PORT : srv->opt.port, NULL,
                            AF_UNSPEC, SOCK_STREAM,
                            tls ? "TLS listen address" : "listen address",
                            port, sizeof(port), &res) < 0)
        goto out;
    if (strcmp(port, "0") == 0) {
        rc = 0; /* -p 0 and no explicit port: no TCP on this address */
        goto out;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int one = 1;
        int fd = socket(ai->ai_family,
                        ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);

        if (fd < 0)
            continue;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ai->ai_family == AF_INET6)
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        net_set_nodelay(fd); /* inherited by accepted sockets */
        addr_name(ai, port, name, sizeof(name));
        if (net_listed_twice(srv, name, tls)) {
            close(fd);
            goto out;
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
            listen(fd, (int)srv->opt.backlog) < 0) {
            log_error("cannot listen on %s: %s", name, strerror(errno));
            close(fd);
            goto out;
        }
        if (strcmp(port, "auto") == 0 && net_bound_name(fd, ai, name,
                                                        sizeof(name)) < 0) {
            log_error("cannot read the port of %s: %s", name, strerror(errno));
            close(fd);
            goto out;
        }
        l = net_add(srv, fd, ai->ai_family, name);
        if (l == NULL) {
            close(fd);
            goto out;
        }
        l->loopback = addr_is_loopback(ai->ai_addr);
        l->tls = tls;
        if (!tls && strcmp(port, "auto") == 0 && srv->auto_tcp_port == 0)
            srv->auto_tcp_port = (unsigned)atoi(strrchr(name, ':') + 1);
        log_info("listening on %s%s", name, tls ? " (TLS)" : "");
        n++;
    }
    if (n == 0) {
        log_error("cannot listen on '%s'", spec);
        goto out;
    }
    rc = 0;
out:
    if (res != NULL)
        freeaddrinfo(res);
    return rc;
}

static int net_listen_unix(struct server *srv, const char *path)
{
    struct sockaddr_un sa;
    struct listener *l;
    struct stat stt;
    int fd = -1, rc = -1;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        log_error("unix socket path too long: %s", path);
        goto out;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* A stale socket from an earlier run is replaced; anything else is not. */
    if (lstat(path, &stt) == 0) {
        if (!S_ISSOCK(stt.st_mode)) {
            log_error("%s exists and is not a socket", path);
            goto out;
        }
        unlink(path);
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        log_error("cannot bind unix socket %s: %s", path, strerror(errno));
        goto out;
    }
    if (chmod(path, (mode_t)srv->opt.unix_mode) < 0)
        log_warn("chmod %s: %s", path, strerror(errno));
    if (listen(fd, (int)srv->opt.backlog) < 0) {
        log_error("cannot listen on %s: %s", path, strerror(errno));
        goto out;
    }
    l = net_add(srv, fd, AF_UNIX, path);
    if (l == NULL)
        goto out;
    l->loopback = true;
    log_info("listening on unix:%s", path);
    fd = -1;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/*
 * Protected mode (docs/security.md): on unless --protected-mode=no, when
 * some TCP listener or UDP socket is on a non-loopback address and no
 * authentication is configured (--auth-file, which excludes -U; or
 * --tls-ca for a --tls-listen listener).  It then serves loopback peers
 * only.
 */
static void net_protected_setup(struct server *srv)
{
    size_t i;

    srv->protected_mode = false;
    if (strcmp(srv->opt.protected_mode, "no") == 0 || srv->opt.auth_file != NULL)
        return;
    for (i = 0; i < srv->nlisteners; i++)
        if (!srv->listeners[i].loopback &&
            !(srv->listeners[i].tls && srv->opt.tls_ca != NULL)) {
            srv->protected_mode = true;
            log_warn("protected mode: %s is not a loopback address and no "
                     "--auth-file is set; only loopback clients will be "
                     "served (--protected-mode=no to serve everyone)",
                     srv->listeners[i].name);
            return;
        }
    /* UDP has no authentication at all: a socket on a non-loopback
     * address puts it under protected mode too (udp.c drops datagrams
     * from other hosts) */
    if (srv->udp_public) {
        srv->protected_mode = true;
        log_warn("protected mode: UDP (-U) is on a non-loopback address; "
                 "only datagrams from loopback will be answered "
                 "(--protected-mode=no to serve everyone)");
    }
}

int net_listen_all(struct server *srv)
{
    size_t i;
    int rc = -1;

    /* UDP first: once a stream listener exists, connects succeed (the
     * backlog), and whoever waits for that must find UDP bound too. */
    if (udp_listen_all(srv) < 0)
        goto out;
    if (srv->opt.unix_socket != NULL && net_listen_unix(srv, srv->opt.unix_socket) < 0)
        goto out;
    for (i = 0; i < srv->opt.listen.n; i++)
        if (net_listen_tcp(srv, srv->opt.listen.v[i], false) < 0)
            goto out;
    for (i = 0; i < srv->opt.tls_listen.n; i++)
        if (net_listen_tcp(srv, srv->opt.tls_listen.v[i], true) < 0)
            goto out;
    if (srv->nlisteners == 0 && srv->nudp == 0) {
        log_error("no listener: give -l ADDR:PORT, -p PORT, -s PATH, -U PORT "
                  "or --tls-listen ADDR[:PORT]");
        goto out;
    }
    net_protected_setup(srv);
    /* the backend's accept (transport.h) needs the final array */
    for (i = 0; i < srv->nlisteners; i++)
        srv->listeners[i].srv = srv;
    rc = 0;
out:
    return rc;
}

/*
 * --port-file: one line per listener, "tcp ADDR:PORT", "tls ADDR:PORT",
 * "udp ADDR:PORT", "unix PATH" or "metrics ADDR:PORT", with the ports
 * "auto" picked; the metrics address is the caller's (the endpoint is
 * above this layer), NULL for none.  Written beside PATH and renamed, so a
 * reader that finds the file finds it whole.
 */
int net_write_port_file(struct server *srv, const char *metrics_addr)
{
    const char *path = srv->opt.port_file;
    struct newfile nf;
    char *text = NULL;
    size_t len = 0, i;
    FILE *f;
    int bad;

    if (path == NULL)
        return 0;
    f = open_memstream(&text, &len);
    if (f == NULL) {
        log_error("cannot write port file %s: %s", path, strerror(errno));
        return -1;
    }
    for (i = 0; i < srv->nlisteners; i++) {
        const struct listener *l = &srv->listeners[i];
        fprintf(f, "%s %s\n",
                l->family == AF_UNIX ? "unix" : l->tls ? "tls" : "tcp",
                l->name);
    }
    udp_write_names(srv, f);
    if (metrics_addr != NULL)
        fprintf(f, "metrics %s\n", metrics_addr);
    bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        log_error("cannot write port file %s: out of memory", path);
        free(text);
        return -1;
    }
    /* a fresh file, mode 0644 whatever the umask (a user who could
     * rewrite it could send clients elsewhere), renamed over PATH */
    if (newfile_open(&nf, path, 0644) < 0) {
        log_error("cannot write port file %s: %s", path, strerror(errno));
        free(text);
        return -1;
    }
    if (write(nf.fd, text, len) != (ssize_t)len) {
        log_error("cannot write port file %s: %s", path,
                  strerror(errno != 0 ? errno : EIO));
        newfile_discard(&nf);
        free(text);
        return -1;
    }
    free(text);
    if (newfile_commit(&nf, false, NULL) < 0) {
        log_error("cannot write port file %s: %s", path, strerror(errno));
        return -1;
    }
    srv->portfile_written = true;
    return 0;
}

int net_enable_accept(struct server *srv)
{
    size_t i;

    __atomic_store_n(&srv->accepting, true, __ATOMIC_RELAXED);
    for (i = 0; i < srv->nlisteners; i++)
        if (srv->xp->accept_on(srv, i) < 0)
            return -1;
    return 0;
}

void net_disable_accept(struct server *srv)
{
    size_t i;

    for (i = 0; i < srv->nlisteners; i++)
        if (srv->workers != NULL && srv->xp != NULL)
            srv->xp->accept_off(srv, i);
    __atomic_store_n(&srv->accepting, false, __ATOMIC_RELAXED);
}

void net_listener_label(const struct listener *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%s",
             l->family == AF_UNIX    ? "unix"
             : l->family == AF_INET6 ? "tcp6"
                                     : "tcp",
             l->name);
}

/* Does a listener bound to la take connections to me?  Same port, and the
 * same address or the wildcard. */
static int net_addr_match(const struct sockaddr_storage *la,
                          const struct sockaddr_storage *me)
{
    if (la->ss_family != me->ss_family)
        return 0;
    if (la->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)la, *b = (const void *)me;
        if (a->sin_port != b->sin_port)
            return 0;
        if (a->sin_addr.s_addr == b->sin_addr.s_addr)
            return 2;
        return a->sin_addr.s_addr == htonl(INADDR_ANY);
    }
    if (la->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)la, *b = (const void *)me;
        if (a->sin6_port != b->sin6_port)
            return 0;
        if (memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) == 0)
            return 2;
        return memcmp(&a->sin6_addr, &in6addr_any, sizeof(in6addr_any)) == 0;
    }
    return 0;
}

void net_listen_addr_of(struct server *srv, int fd, int family, char *buf,
                        size_t len)
{
    struct sockaddr_storage me, la;
    socklen_t ml = sizeof(me), ll;
    const struct listener *best = NULL;
    int best_m = 0;
    size_t i;

    snprintf(buf, len, "?");
    memset(&me, 0, sizeof(me));
    if (family != AF_UNIX &&
        getsockname(fd, (struct sockaddr *)&me, &ml) < 0)
        return;
    pthread_mutex_lock(&srv->stats_mu); /* net_close_all frees them */
    for (i = 0; i < srv->nlisteners; i++) {
        const struct listener *l = &srv->listeners[i];
        int m;

        if (l->fd < 0)
            continue;
        if (family == AF_UNIX) {
            if (l->family == AF_UNIX) {
                best = l;
                break;
            }
            continue;
        }
        ll = sizeof(la);
        memset(&la, 0, sizeof(la));
        if (getsockname(l->fd, (struct sockaddr *)&la, &ll) < 0)
            continue;
        m = net_addr_match(&la, &me);
        if (m > best_m) {
            best = l;
            best_m = m;
        }
    }
    if (best != NULL)
        net_listener_label(best, buf, len);
    pthread_mutex_unlock(&srv->stats_mu);
}

void net_close_all(struct server *srv)
{
    size_t i;

    net_disable_accept(srv);
    /* stats conns (another thread) reads the listeners under stats_mu */
    pthread_mutex_lock(&srv->stats_mu);
    for (i = 0; i < srv->nlisteners; i++) {
        struct listener *l = &srv->listeners[i];
        if (srv->xp != NULL) /* the backend's accept state */
            srv->xp->accept_close(srv, i);
        if (l->fd >= 0)
            close(l->fd);
        l->fd = -1;
        if (l->family == AF_UNIX)
            unlink(l->name);
    }
    evloop_ev_free(srv->ev_accept_resume);
    srv->ev_accept_resume = NULL;
    mdc_free(srv->listeners);
    srv->listeners = NULL;
    srv->nlisteners = 0;
    pthread_mutex_unlock(&srv->stats_mu);
}
