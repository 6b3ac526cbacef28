/*
 * epoll.c - the readiness backend (--io=epoll): libevent's loop, one
 * edge-triggered read event per connection for its life and a write event
 * registered only while a write would block; the socket is read and
 * written when ready by sockio.c (plain, or through the TLS filter).  The
 * transport table (transport.h) is its only interface to the connection;
 * a thread's libevent loop (made, run, woken and ended) is evloop.c's.
 */
#include "config.h"

#include "transport.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h> /* struct event, kept in the connection */

#include "conn.h"
#include "evloop.h"
#include "net.h"
#include "sockio.h"
#include "server/log.h"
#include "server/stats.h"

/* A connection's events (conn_xpriv).  Read readiness stays registered
 * for the connection's life; write readiness only while a write would
 * block (ep_want_wr), so the socket's EPOLLOUT edges (one each time the
 * peer reads a reply) neither wake the loop nor cost a callback.  The
 * read event lives in the connection (event_assign: 304 + 144 bytes, one
 * allocation of 448, where conn and a separate event took 384 + 128); the
 * write event exists only while a write would block (libevent's own
 * allocation), so an idle connection is that one allocation (and
 * libevent's per-descriptor map entry).  Both events in the connection
 * would make every connection, idle or not, one allocation of 640 for an
 * event only a blocked write uses (docs/performance.md, "Memory per
 * connection"). */
struct econn {
    struct event ev;     /* EV_READ|EV_CLOSED|EV_ET|EV_PERSIST, always on
                            from ep_adopt to ep_close (ev_on) */
    struct event *ev_wr; /* EV_WRITE|EV_ET|EV_PERSIST, made and armed
                            only while a write would block (wr_armed);
                            NULL otherwise */
    bool wr_armed;       /* ev_wr is registered with the loop */
    bool ev_on;          /* ev is assigned and not yet deleted */
};

static struct econn *EC(struct conn *c)
{
    return conn_xpriv(c);
}

/* The blocked episode is over: stop listening for EPOLLOUT and free the
 * write event, so an idle connection holds none (libevent lets a callback
 * free its own event). */
static void ep_wr_off(struct conn *c)
{
    struct econn *e = EC(c);

    event_free(e->ev_wr);
    e->ev_wr = NULL;
    e->wr_armed = false;
    conn_backend_held(c->owner, -1);
}

static void ep_conn_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    struct econn *e = EC(c);

    (void)fd;
    /* Room again and nothing left to send: stop listening for EPOLLOUT
     * until a write blocks again (an epoll_ctl per blocked episode, none
     * per request). */
    if ((what & EV_WRITE) && e->wr_armed && !c->inflight &&
        c->opending == 0)
        ep_wr_off(c);
    /* the request loop, reading and sending through this table between
     * its calls (conn_drive): may free c */
    conn_on_io(c, what);
}

static int ep_adopt(struct conn *c)
{
    struct econn *e = EC(c);
    struct event_base *base = evloop_base(c->owner);

    if (event_assign(&e->ev, base, c->fd,
                     EV_READ | EV_CLOSED | EV_ET | EV_PERSIST, ep_conn_cb,
                     c) < 0)
        return -1;
    e->ev_on = true;
    return event_add(&e->ev, NULL);
}

/* A write would block: register for the EPOLLOUT edge.  EPOLL_CTL_MOD
 * polls the socket: room freed since the failed write is reported at
 * once, so no edge is lost in between. */
static int ep_want_wr(struct conn *c)
{
    struct econn *e = EC(c);

    if (!e->wr_armed) {
        if (e->ev_wr == NULL) { /* freed when the last episode ended */
            e->ev_wr = event_new(evloop_base(c->owner), c->fd,
                                 EV_WRITE | EV_ET | EV_PERSIST, ep_conn_cb,
                                 c);
            if (e->ev_wr == NULL)
                return -1;
            conn_backend_held(c->owner, 1);
        }
        if (event_add(e->ev_wr, NULL) < 0)
            return -1;
        e->wr_armed = true;
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
     * block), so the event goes now, unless the filter's read needs it */
    if (r == 0 && EC(c)->wr_armed && c->opending == 0 && !c->rd_wants_wr)
        ep_wr_off(c);
    return r;
}

static void ep_requeue(struct conn *c)
{
    event_active(&EC(c)->ev, EV_TIMEOUT, 0);
}

static bool ep_close(struct conn *c)
{
    struct econn *e = EC(c);

    if (e->ev_wr != NULL) {
        event_free(e->ev_wr);
        conn_backend_held(c->owner, -1);
    }
    if (e->ev_on)
        event_del(&e->ev);
    e->ev_on = false;
    e->ev_wr = NULL;
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

/* ---- network threads: libevent's loop (evloop.c), nothing more -------- */

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
