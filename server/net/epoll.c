/*
 * epoll.c - the readiness backend (--io=epoll): one edge-triggered
 * registration per connection with its thread's epoll set for its life,
 * asking for write readiness only while a write would block; the socket is
 * read and written when ready by sockio.c (plain, or through the TLS
 * filter).  The transport table (transport.h) is its only interface to the
 * connection; a thread's loop (made, run, woken and ended) is evloop.c's:
 * a network thread's own epoll loop (libevent's in the portable build,
 * kqueue on FreeBSD: the registration is then libevent's events), the
 * main thread's libevent one (the listeners here are libevent events of
 * it).
 */
#include "config.h"

#include "transport.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "evloop.h"
#include "net.h"
#include "sockio.h"
#include "server/log.h"
#include "server/stats.h"

/* A connection's registration with its thread's epoll set (conn_xpriv;
 * evloop.h, struct evloop_io: 40 bytes in the connection, no allocation;
 * in the portable build libevent's events, the read one allocated with
 * the registration, the write one while asked for).  Read readiness
 * (edge-triggered, with the peer's half-close) stays registered for the
 * connection's life; write readiness only while a write would block
 * (ep_want_wr), so the socket's EPOLLOUT edges (one each time the peer
 * reads a reply) neither wake the loop nor cost a callback. */
struct econn {
    struct evloop_io io; /* EVL_READ|EVL_CLOSED|EVL_ET, and EVL_WRITE while
                            wr_armed; registered from ep_adopt to
                            ep_close (io_on) */
    bool wr_armed;       /* EVL_WRITE is asked for */
    bool io_on;          /* io is registered */
};

#define EP_WANT_RD (EVL_READ | EVL_CLOSED | EVL_ET)

/* one jemalloc size class, as an io_uring connection (main's, with
 * libevent's read event in it: 448 bytes) */
_Static_assert(sizeof(struct conn) + sizeof(struct econn) <= 384,
               "an epoll connection fits in 384 bytes");

static struct econn *EC(struct conn *c)
{
    return conn_xpriv(c);
}

/* The blocked episode is over: stop listening for EPOLLOUT, so an idle
 * connection asks for read readiness alone (counted as held while armed:
 * stats conn_backend_held). */
static void ep_wr_off(struct conn *c)
{
    struct econn *e = EC(c);

    if (evloop_io_mod(c->owner, &e->io, EP_WANT_RD) < 0)
        log_debug("epoll_ctl: %s", strerror(errno));
    e->wr_armed = false;
    conn_backend_held(c->owner, -1);
}

static void ep_conn_cb(int fd, short what, void *arg)
{
    struct conn *c = arg;
    struct econn *e = EC(c);

    (void)fd;
    /* Room again and nothing left to send: stop listening for EPOLLOUT
     * until a write blocks again (an epoll_ctl per blocked episode, none
     * per request). */
    if ((what & EVL_WRITE) && e->wr_armed && !c->inflight &&
        c->opending == 0)
        ep_wr_off(c);
    /* the request loop, reading and sending through this table between
     * its calls (conn_drive): may free c */
    conn_on_io(c, what);
}

static int ep_adopt(struct conn *c)
{
    struct econn *e = EC(c);

    if (evloop_io_add(c->owner, &e->io, c->fd, EP_WANT_RD, ep_conn_cb, c) < 0)
        return -1;
    e->io_on = true;
    return 0;
}

/* A write would block: ask for the EPOLLOUT edge too.  EPOLL_CTL_MOD
 * polls the socket: room freed since the failed write is reported at
 * once, so no edge is lost in between. */
static int ep_want_wr(struct conn *c)
{
    struct econn *e = EC(c);

    if (!e->wr_armed) {
        if (evloop_io_mod(c->owner, &e->io, EP_WANT_RD | EVL_WRITE) < 0)
            return -1;
        e->wr_armed = true;
        conn_backend_held(c->owner, 1);
    }
    return 0;
}

static int ep_start(struct conn *c)
{
    int h = sockio_start(c);

    if (h == SOCKIO_WAIT_WR)
        return ep_want_wr(c) < 0 ? -1 : 0;
    return h;
}

static int ep_read(struct conn *c)
{
    int r = sockio_read(c);

    if (r == SOCKIO_WAIT_WR) /* SSL_read must write first */
        return ep_want_wr(c) < 0 ? -1 : 0;
    return r;
}

static int ep_flush(struct conn *c)
{
    int r = sockio_flush(c);

    if (r == 1)
        return ep_want_wr(c);
    /* the write that ended a blocked episode: no EPOLLOUT edge need come
     * after it (the kernel raises one only after a write that would
     * block), so the interest goes now, unless the filter's read needs it */
    if (r == 0 && EC(c)->wr_armed && c->opending == 0 && !c->rd_wants_wr)
        ep_wr_off(c);
    return r;
}

static void ep_requeue(struct conn *c)
{
    evloop_io_requeue(c->owner, &EC(c)->io);
}

static bool ep_close(struct conn *c)
{
    struct econn *e = EC(c);

    if (e->wr_armed)
        conn_backend_held(c->owner, -1);
    if (e->io_on)
        evloop_io_del(c->owner, &e->io);
    e->io_on = false;
    e->wr_armed = false;
    return false;
}

static void ep_returned(struct conn *c)
{
    (void)c;
}

static bool ep_peer_gone(struct conn *c)
{
    return sockio_peer_gone(c);
}

/* ---- network threads: evloop.c's loop, nothing more -------------------- */

static int ep_worker_setup(struct worker *w)
{
    (void)w;
    return 0;
}

static void ep_worker_teardown(struct worker *w)
{
    (void)w;
}

/* ---- listeners (main thread) ----------------------------------------------- */

/*
 * One accept4() per readiness report.  The listener's event is
 * level-triggered, so while connections wait in the backlog the next
 * epoll_wait() reports it again (without sleeping); looping here until
 * EAGAIN would cost one failing accept4() for every connection that
 * arrives alone, which is the common case with persistent clients.
 * A burst costs an epoll_wait() turn per connection instead, and lets
 * established connections of the same loop (-n 0) interleave.
 */
static void ep_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    struct listener *l = arg;
    struct server *srv = l->srv;
    int fd;

    (void)what;
    if (!__atomic_load_n(&srv->accepting, __ATOMIC_RELAXED))
        return; /* paused: the connection waits in the backlog */
    fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                   errno == EINTR || errno == ECONNABORTED))
        return; /* the loop reports again */
    net_accepted(srv, (size_t)(l - srv->listeners), fd < 0 ? -errno : fd);
}

static int ep_accept_on(struct server *srv, size_t i)
{
    struct listener *l = &srv->listeners[i];

    if (l->xl == NULL) {
        l->xl = event_new(evloop_base(&srv->workers[0]), l->fd,
                          EV_READ | EV_PERSIST, ep_accept_cb, l);
        if (l->xl == NULL)
            return -1;
    }
    return event_add(l->xl, NULL);
}

/* (the event itself goes with the listener: ep_accept_close) */
static void ep_accept_off(struct server *srv, size_t i)
{
    struct listener *l = &srv->listeners[i];

    if (l->xl != NULL)
        event_del(l->xl);
}

static void ep_accept_close(struct server *srv, size_t i)
{
    struct listener *l = &srv->listeners[i];

    if (l->xl != NULL)
        event_free(l->xl);
    l->xl = NULL;
}

const struct transport transport_epoll = {
    .name = "epoll",
    .conn_priv = sizeof(struct econn),
    .adopt = ep_adopt,
    .start = ep_start,
    .read = ep_read,
    .flush = ep_flush,
    .requeue = ep_requeue,
    .close = ep_close,
    .release = sockio_release,
    .returned = ep_returned,
    .peer_gone = ep_peer_gone,
    .worker_setup = ep_worker_setup,
    .worker_teardown = ep_worker_teardown,
    .wake = evloop_wake,
    .stop = evloop_stop,
    .run = evloop_run,
    .done = evloop_exit,
    .accept_on = ep_accept_on,
    .accept_off = ep_accept_off,
    .accept_close = ep_accept_close,
};
