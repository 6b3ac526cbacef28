/*
 * evloop.c - a thread's event loop (evloop.h): a network thread's own
 * epoll loop (the readiness backend's; libevent's in the portable build),
 * and the main thread's libevent loop under both backends.  The thread's
 * own events (inbox, tick, stop) call threads.c's housekeeping; the other
 * events are made for their users (signals, listeners' timers, UDP
 * sockets, the io_uring ring of the main thread).
 */
#include "config.h"

#include "evloop.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#if EVLOOP_EPOLL
#include <sys/epoll.h>
#endif
#ifdef __linux__
#include <sys/eventfd.h>
#endif

#include <pthread.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "server/core/alloc.h"
#include "server/log.h"
#include "server/stats.h"
#include "threads.h"

/* evloop_cb is libevent's callback type (no wrapper between them). */
_Static_assert(__builtin_types_compatible_p(evutil_socket_t, int),
               "libevent's descriptors are ints");
/* what a registration's callback gets is what libevent's would */
_Static_assert(EVL_TIMEOUT == EV_TIMEOUT && EVL_READ == EV_READ &&
                   EVL_WRITE == EV_WRITE && EVL_ET == EV_ET &&
                   EVL_CLOSED == EV_CLOSED,
               "evloop_io's bits are libevent's");

/*
 * A network thread's loop is evloop.c's own (evloop_run): one epoll set,
 * whose epoll_event pointers are the registrations (struct evloop_io:
 * callback, argument, descriptor), called directly.  libevent's loop cost
 * some 290 instructions a request there (epoll_dispatch, evmap_io_active_,
 * event_active_nolock_, event_process_active: the event is queued as
 * active, then taken off the queue and run); this one a few dozen.  A turn
 * is one epoll_wait of at most EVL_BATCH events, each run once, then the
 * connections requeued (evloop_io_requeue), then the tick when it is due:
 * the epoll_wait timeout is the tick (tick_at).  The loop is touched by its
 * own thread alone once the thread runs; the other threads only wake it
 * (a connection handed over, the stop): they write its wake descriptor, an
 * eventfd (a pipe where there is none), registered like any other, whose
 * callback runs the inbox and a stop asked through stop_req.
 *
 * The main thread's loop is libevent's (base), locked, its events made
 * active from any thread (signals, evloop_trigger).  The connections it
 * serves itself (-n 0) are in an epoll set of its own (made with the first
 * one), polled as one libevent event (ev_set) by the same turn.
 *
 * Without EVLOOP_EPOLL (the portable build: no epoll on FreeBSD) every
 * loop is libevent's, a network thread's made without libevent's lock
 * (EVENT_BASE_FLAG_NOLOCK, which a locked base takes and drops around
 * every callback), its wake descriptor a libevent event; a registration
 * is libevent's events (evloop.h, struct evloop_io).  libevent runs a
 * connection requeued during its callback (event_active) again in the
 * same pass over its active queue, which therefore never ends while the
 * connection's input does not: the tick and the wake starved (20 new
 * connections served in 21 s, a silent one closed 20 s late past
 * --idle-timeout; tests/test_timeouts.c, test_epoll_loop_busy).  Every
 * libevent base (the main thread's too, in either build) is made to look
 * for new events and timers after EVL_BATCH callbacks
 * (event_config_set_max_dispatch_interval), as the own loop does after a
 * turn of at most EVL_BATCH events.
 */
#define EVL_BATCH 64

struct evloop {
    /* the main thread's */
    struct event_base *base;
    struct event *ev_inbox; /* activated when the inbox goes non-empty */
    struct event *ev_tick;  /* the tick (timeouts, slow readers), one-shot,
                               armed for w->next_tick_ms */
    struct event *ev_stop;  /* activated by the main thread on shutdown */
    struct evloop_io wake;  /* a network thread's wake descriptor */
    int wake_rd, wake_wr;   /* the wake descriptor (-1: the main thread);
                               the same eventfd twice, or a pipe's ends */
    atomic_bool stop_req;   /* evloop_stop() asked (wake descriptor) */
#if EVLOOP_EPOLL
    struct event *ev_set;   /* epfd is readable: a turn of it */
    struct event *ev_rq;    /* a zero timer: a turn for requeued ones */
    /* the epoll set: a network thread's loop, the main thread's
     * connections (-1: none yet) */
    int epfd;
    bool in_turn;           /* requeued ones run at the turn's end */
    bool exit;              /* evloop_exit (a network thread's) */
    int batch_n, batch_i;   /* the turn's events; the next one to run */
    struct evloop_io *rq;   /* requeued, newest first */
    struct evloop_io *rq_run; /* requeued ones this turn runs, in order */
    uint64_t tick_at;       /* a network thread's tick is due at this
                               server_coarse_ms() (UINT64_MAX: off) */
    struct epoll_event batch[EVL_BATCH];
#endif
};

/* What an event of another layer is: a libevent one (the main thread's),
 * or a registration with a network thread's set. */
struct evloop_ev {
    struct event *ev;
    struct worker *w;
    struct evloop_io io;
};

static int evloop_threads_rc = -1;

static void evloop_threads_init(void)
{
    evloop_threads_rc = evthread_use_pthreads();
}

int evloop_threads(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    pthread_once(&once, evloop_threads_init);
    return evloop_threads_rc;
}

static void evloop_inbox_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_inbox_run(arg);
}

/* ---- the epoll set (struct evloop_io) ------------------------------------ */
#if EVLOOP_EPOLL

static uint32_t evl_events(short want)
{
    return ((want & EVL_READ) ? EPOLLIN : 0u) |
           ((want & EVL_WRITE) ? EPOLLOUT : 0u) |
           ((want & EVL_CLOSED) ? EPOLLRDHUP : 0u) |
           ((want & EVL_ET) ? (uint32_t)EPOLLET : 0u);
}

/* What epoll reported, as libevent's epoll backend and its map give it:
 * an error or hang-up is readiness both ways; only what io asked for. */
static inline short evl_what(uint32_t ev, short want)
{
    short what;

    if (ev & (EPOLLERR | EPOLLHUP))
        what = EVL_READ | EVL_WRITE;
    else
        what = ((ev & EPOLLIN) ? EVL_READ : 0) |
               ((ev & EPOLLOUT) ? EVL_WRITE : 0) |
               ((ev & EPOLLRDHUP) ? EVL_CLOSED : 0);
    return what & want & (EVL_READ | EVL_WRITE | EVL_CLOSED);
}

static void evl_unqueue(struct evloop_io *io)
{
    *io->rq_pprev = io->rq_next;
    if (io->rq_next != NULL)
        io->rq_next->rq_pprev = io->rq_pprev;
    io->rq_next = NULL;
    io->rq_pprev = NULL;
    io->queued = false;
}

/* The requeued ones, in the order they were requeued, once each: those
 * requeued meanwhile wait for the next turn. */
static void evl_run_requeued(struct evloop *l)
{
    struct evloop_io *io = l->rq, *prev = NULL, *next, **pp;

    l->rq = NULL;
    for (; io != NULL; io = next) { /* newest first: reversed */
        next = io->rq_next;
        io->rq_next = prev;
        prev = io;
    }
    l->rq_run = prev;
    pp = &l->rq_run;
    for (io = l->rq_run; io != NULL; io = io->rq_next) {
        io->rq_pprev = pp;
        pp = &io->rq_next;
    }
    while ((io = l->rq_run) != NULL) { /* a callback may delete others */
        evl_unqueue(io);
        io->cb(io->fd, EVL_TIMEOUT, io->arg);
    }
}

/* One turn of l's set: wait up to timeout_ms (-1: no limit; 0 when some
 * are requeued), run each event collected once, then the requeued. */
static void evl_turn(struct evloop *l, int timeout_ms)
{
    int n;

    if (l->rq != NULL)
        timeout_ms = 0;
    n = epoll_wait(l->epfd, l->batch, EVL_BATCH, timeout_ms);
    if (n < 0 && errno != EINTR)
        log_error("epoll_wait: %s", strerror(errno));
    l->in_turn = true;
    l->batch_n = n > 0 ? n : 0;
    for (l->batch_i = 0; l->batch_i < l->batch_n;) {
        const struct epoll_event *ev = &l->batch[l->batch_i++];
        struct evloop_io *io = ev->data.ptr;
        short what;

        if (io == NULL) /* deleted by an earlier callback of this turn */
            continue;
        what = evl_what(ev->events, io->want);
        if (what != 0)
            io->cb(io->fd, what, io->arg);
    }
    l->batch_n = l->batch_i = 0;
    if (l->rq != NULL)
        evl_run_requeued(l);
    l->in_turn = false;
}

/* The main thread's set became readable, or some were requeued. */
static void evl_set_cb(evutil_socket_t fd, short what, void *arg)
{
    struct evloop *l = arg;
    static const struct timeval zero = {0, 0};

    (void)fd;
    (void)what;
    evl_turn(l, 0);
    /* requeued during the requeued ones: a turn after libevent's others */
    if (l->rq != NULL && event_add(l->ev_rq, &zero) < 0)
        log_error("cannot schedule the requeued connections");
}

/* The main thread's epoll set, with its first connection: 0, or -1. */
static int evl_set_open(struct evloop *l)
{
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0)
        return -1;
    if (l->base == NULL)
        return 0;
    l->ev_set = event_new(l->base, l->epfd, EV_READ | EV_PERSIST,
                          evl_set_cb, l);
    l->ev_rq = event_new(l->base, -1, 0, evl_set_cb, l);
    if (l->ev_set == NULL || l->ev_rq == NULL ||
        event_add(l->ev_set, NULL) < 0)
        return -1;
    return 0;
}

int evloop_io_add(struct worker *w, struct evloop_io *io, int fd, short want,
                  evloop_cb cb, void *arg)
{
    struct evloop *l = w->loop;
    struct epoll_event ev;

    if (l->epfd < 0 && evl_set_open(l) < 0)
        return -1;
    io->cb = cb;
    io->arg = arg;
    io->fd = fd;
    io->want = want;
    io->queued = false;
    io->rq_next = NULL;
    io->rq_pprev = NULL;
    memset(&ev, 0, sizeof(ev));
    ev.events = evl_events(want);
    ev.data.ptr = io;
    return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int evloop_io_mod(struct worker *w, struct evloop_io *io, short want)
{
    struct epoll_event ev;

    memset(&ev, 0, sizeof(ev));
    io->want = want;
    ev.events = evl_events(want);
    ev.data.ptr = io;
    return epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, io->fd, &ev);
}

void evloop_io_del(struct worker *w, struct evloop_io *io)
{
    struct evloop *l = w->loop;
    int i;

    (void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    if (io->queued)
        evl_unqueue(io);
    /* readiness this turn collected and has not run yet: never run */
    for (i = l->batch_i; i < l->batch_n; i++)
        if (l->batch[i].data.ptr == io)
            l->batch[i].data.ptr = NULL;
}

void evloop_io_requeue(struct worker *w, struct evloop_io *io)
{
    struct evloop *l = w->loop;
    static const struct timeval zero = {0, 0};

    if (io->queued)
        return;
    io->rq_next = l->rq;
    if (l->rq != NULL)
        l->rq->rq_pprev = &io->rq_next;
    io->rq_pprev = &l->rq;
    l->rq = io;
    io->queued = true;
    /* the main thread's set: a turn soon, unless one is under way (its
     * end runs the requeued); a network thread's next epoll_wait does not
     * wait while any is */
    if (l->base != NULL && !l->in_turn && event_add(l->ev_rq, &zero) < 0)
        log_error("cannot schedule the requeued connections");
}

#else /* !EVLOOP_EPOLL: libevent's events */

int evloop_io_add(struct worker *w, struct evloop_io *io, int fd, short want,
                  evloop_cb cb, void *arg)
{
    io->cb = cb;
    io->arg = arg;
    io->fd = fd;
    io->want = want & ~EVL_WRITE;
    io->ev_wr = NULL;
    io->ev = event_new(w->loop->base, fd, io->want | EV_PERSIST, cb, arg);
    if (io->ev == NULL || event_add(io->ev, NULL) < 0 ||
        ((want & EVL_WRITE) && evloop_io_mod(w, io, want) < 0)) {
        evloop_io_del(w, io);
        return -1;
    }
    return 0;
}

/* The write event is made while EVL_WRITE is asked for, and freed with
 * the request (libevent lets a callback free its own event). */
int evloop_io_mod(struct worker *w, struct evloop_io *io, short want)
{
    if ((want & ~EVL_WRITE) != (io->want & ~EVL_WRITE)) {
        errno = EINVAL;
        return -1;
    }
    if (!(want & EVL_WRITE)) {
        if (io->ev_wr != NULL)
            event_free(io->ev_wr);
        io->ev_wr = NULL;
    } else if (io->ev_wr == NULL) {
        io->ev_wr = event_new(w->loop->base, io->fd,
                              EV_WRITE | (want & EVL_ET) | EV_PERSIST,
                              io->cb, io->arg);
        if (io->ev_wr == NULL)
            return -1;
        if (event_add(io->ev_wr, NULL) < 0) {
            event_free(io->ev_wr);
            io->ev_wr = NULL;
            return -1;
        }
    }
    io->want = want;
    return 0;
}

void evloop_io_del(struct worker *w, struct evloop_io *io)
{
    (void)w;
    if (io->ev_wr != NULL)
        event_free(io->ev_wr);
    if (io->ev != NULL)
        event_free(io->ev); /* off the active queue too */
    io->ev_wr = io->ev = NULL;
}

/* Back on libevent's active queue, behind the others: with the bases'
 * callback limit (see struct evloop) the loop looks for new events within
 * EVL_BATCH callbacks, whatever was requeued meanwhile. */
void evloop_io_requeue(struct worker *w, struct evloop_io *io)
{
    (void)w;
    event_active(io->ev, EV_TIMEOUT, 0);
}

#endif /* EVLOOP_EPOLL */

/* ---- the thread's own events --------------------------------------------- */

void evloop_tick_arm(struct worker *w)
{
    struct evloop *l = w->loop;
    uint64_t now_ms, ms;
    struct timeval tv;

#if EVLOOP_EPOLL
    if (l->base == NULL) { /* the loop's epoll_wait waits for it */
        l->tick_at = w->next_tick_ms;
        return;
    }
#endif
    now_ms = server_coarse_ms();
    ms = worker_wait_ms(now_ms, w->next_tick_ms, server_coarse_res_ms());
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    if (event_add(l->ev_tick, &tv) < 0)
        log_error("cannot arm the tick of thread %u", w->id);
}

void evloop_tick_off(struct worker *w)
{
    struct evloop *l = w->loop;

#if EVLOOP_EPOLL
    if (l->base == NULL) {
        l->tick_at = UINT64_MAX;
        return;
    }
#endif
    event_del(l->ev_tick);
}

static void evloop_tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct worker *w = arg;

    (void)fd;
    (void)what;
    worker_tick_run(w);
    evloop_tick_arm(w);
}

static void evloop_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    worker_begin_stop(arg);
}

/* The wake descriptor became readable: read it empty, then run what the
 * other threads asked for: the inbox, the stop (in this order: a
 * connection handed over before the stop is adopted, then shut down). */
static void evloop_wake_cb(int fd, short what, void *arg)
{
    struct worker *w = arg;
    uint64_t buf[8];

    (void)what;
    while (read(fd, buf, sizeof(buf)) > 0)
        ; /* an eventfd is read empty at once; a pipe in pieces */
    worker_inbox_run(w);
    if (atomic_exchange(&w->loop->stop_req, false))
        worker_begin_stop(w);
}

/* The wake descriptor of a network thread's loop: 0, or -1. */
static int evloop_wake_open(struct evloop *l)
{
#ifdef __linux__
    l->wake_rd = l->wake_wr = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return l->wake_rd < 0 ? -1 : 0;
#else
    int p[2], i;

    if (pipe(p) < 0)
        return -1;
    for (i = 0; i < 2; i++)
        if (fcntl(p[i], F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(p[i], F_SETFD, FD_CLOEXEC) < 0) {
            close(p[0]);
            close(p[1]);
            return -1;
        }
    l->wake_rd = p[0];
    l->wake_wr = p[1];
    return 0;
#endif
}

/* A libevent base for w: a network thread's without the lock (see struct
 * evloop); either looks for new events after EVL_BATCH callbacks. */
static struct event_base *evloop_base_new(const struct worker *w)
{
    struct event_config *cfg = event_config_new();
    struct event_base *base = NULL;

    if (cfg == NULL)
        return NULL;
    if (event_config_set_max_dispatch_interval(cfg, NULL, EVL_BATCH, 0) ==
            0 &&
        (w->role != ROLE_NET ||
         event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK) == 0))
        base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

/* A network thread's loop: its epoll set (or libevent base, with the
 * tick) and wake descriptor. */
static int evloop_net_setup(struct worker *w, struct evloop *l)
{
#if EVLOOP_EPOLL
    if (evl_set_open(l) < 0)
        goto fail;
#else
    l->base = evloop_base_new(w);
    if (l->base == NULL)
        goto fail;
    l->ev_tick = event_new(l->base, -1, 0, evloop_tick_cb, w);
    if (l->ev_tick == NULL)
        goto fail;
#endif
    if (evloop_wake_open(l) < 0 ||
        evloop_io_add(w, &l->wake, l->wake_rd, EVL_READ, evloop_wake_cb,
                      w) < 0)
        goto fail;
    return 0;
fail:
    log_error("thread %u: its loop or wake descriptor: %s", w->id,
              strerror(errno));
    return -1;
}

int evloop_setup(struct worker *w)
{
    struct evloop *l = mdc_calloc(1, sizeof(*l));

    if (l == NULL)
        return -1;
    l->wake_rd = l->wake_wr = -1;
#if EVLOOP_EPOLL
    l->epfd = -1;
    l->tick_at = UINT64_MAX;
#endif
    atomic_init(&l->stop_req, false);
    w->loop = l;
    if (w->role == ROLE_NET) {
        if (evloop_net_setup(w, l) < 0)
            return -1;
    } else {
        l->base = evloop_base_new(w);
        if (l->base == NULL)
            return -1;
        l->ev_inbox = event_new(l->base, -1, 0, evloop_inbox_cb, w);
        l->ev_stop = event_new(l->base, -1, 0, evloop_stop_cb, w);
        l->ev_tick = event_new(l->base, -1, 0, evloop_tick_cb, w);
        if (l->ev_inbox == NULL || l->ev_stop == NULL || l->ev_tick == NULL)
            return -1;
    }
    evloop_tick_arm(w);
    return 0;
}

void evloop_teardown(struct worker *w)
{
    struct evloop *l = w->loop;
    struct event *evs[5] = {NULL};
    unsigned i;

    if (l == NULL)
        return;
    if (l->wake_rd >= 0)
        evloop_io_del(w, &l->wake);
    evs[0] = l->ev_inbox;
    evs[1] = l->ev_tick;
    evs[2] = l->ev_stop;
#if EVLOOP_EPOLL
    evs[3] = l->ev_set;
    evs[4] = l->ev_rq;
#endif
    for (i = 0; i < 5; i++)
        if (evs[i] != NULL)
            event_free(evs[i]);
    if (l->base != NULL)
        event_base_free(l->base);
#if EVLOOP_EPOLL
    if (l->epfd >= 0)
        close(l->epfd);
#endif
    if (l->wake_rd >= 0)
        close(l->wake_rd);
    if (l->wake_wr >= 0 && l->wake_wr != l->wake_rd)
        close(l->wake_wr);
    mdc_free(l);
    w->loop = NULL;
}

/* Write the wake descriptor of w's loop (full: a wake-up is pending). */
static void evloop_wake_write(struct evloop *l)
{
    uint64_t one = 1;
    ssize_t n;

    do
        n = write(l->wake_wr, &one, sizeof(one));
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        log_error("wake-up write: %s", strerror(errno));
}

void evloop_wake(struct worker *w)
{
    struct evloop *l = w->loop;

    if (l->wake_wr >= 0)
        evloop_wake_write(l);
    else
        event_active(l->ev_inbox, EV_READ, 0);
}

void evloop_stop(struct worker *w)
{
    struct evloop *l = w->loop;

    if (l->wake_wr >= 0) {
        atomic_store(&l->stop_req, true);
        evloop_wake_write(l);
    } else {
        event_active(l->ev_stop, EV_READ, 0);
    }
}

void evloop_exit(struct worker *w)
{
    struct evloop *l = w->loop;

#if EVLOOP_EPOLL
    if (l->base == NULL) {
        l->exit = true; /* at the end of this turn */
        return;
    }
#endif
    event_base_loopexit(l->base, NULL);
}

#if EVLOOP_EPOLL
/* A network thread's tick, when due (by the coarse clock its deadlines
 * are read on). */
static void evl_tick_due(struct worker *w)
{
    struct evloop *l = w->loop;

    if (l->tick_at == UINT64_MAX || server_coarse_ms() < l->tick_at)
        return;
    worker_tick_run(w);
    evloop_tick_arm(w);
}

/* How long a network thread's epoll_wait may wait: until the tick. */
static int evl_wait_ms(const struct evloop *l)
{
    uint64_t ms;

    if (l->tick_at == UINT64_MAX)
        return -1;
    ms = worker_wait_ms(server_coarse_ms(), l->tick_at,
                        server_coarse_res_ms());
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* A network thread's own loop (evloop_run): turns until evloop_exit. */
static void evl_run(struct worker *w)
{
    struct evloop *l = w->loop;

    while (!l->exit) {
        evl_turn(l, evl_wait_ms(l));
        evl_tick_due(w);
        if (l->exit)
            break;
        if (w->yield_turns) {
            STAT_INC(&w->stats, loop_yields);
            sched_yield();
        }
    }
}
#endif /* EVLOOP_EPOLL */

/*
 * A network thread's loop: turns until evloop_exit, yielding the CPU after
 * each when there are more network threads than CPUs.  Busy loops on a
 * shared CPU are otherwise cut by the scheduler's time slices
 * (milliseconds), and a request waits for its thread's next slice: that
 * was the 8 ms W1 p99 of -n 4 -t 0 on two CPUs.  Yielding after each turn
 * (one epoll_wait and the callbacks of what it returned) makes the loops
 * take turns per batch of ready connections instead
 * (docs/threads-models.md, "More network threads than CPUs").  The main
 * thread does not yield.  libevent's loop (the portable build's) yields
 * after a turn that left nothing active.
 */
void evloop_run(struct worker *w)
{
    struct evloop *l = w->loop;

#if EVLOOP_EPOLL
    if (l->base == NULL) {
        evl_run(w);
        return;
    }
#endif
    if (!w->yield_turns) {
        event_base_dispatch(l->base);
        return;
    }
    for (;;) {
        if (event_base_loop(l->base, EVLOOP_ONCE) != 0 ||
            event_base_got_exit(l->base) || event_base_got_break(l->base))
            break;
        STAT_INC(&w->stats, loop_yields);
        sched_yield();
    }
}

void evloop_turn_nowait(struct worker *w)
{
    struct evloop *l = w->loop;

#if EVLOOP_EPOLL
    if (l->base == NULL) {
        evl_turn(l, 0);
        evl_tick_due(w);
        return;
    }
#endif
    event_base_loop(l->base, EVLOOP_NONBLOCK);
}

struct event_base *evloop_base(const struct worker *w)
{
    return w->loop->base;
}

/* ---- events for other layers ------------------------------------------- */

static struct evloop_ev *evloop_ev_wrap(struct worker *w, struct event *ev)
{
    struct evloop_ev *e;

    if (ev == NULL)
        return NULL;
    e = mdc_calloc(1, sizeof(*e));
    if (e == NULL) {
        event_free(ev);
        return NULL;
    }
    e->ev = ev;
    e->w = w;
    return e;
}

struct evloop_ev *evloop_fd_new(struct worker *w, int fd, evloop_cb cb,
                                void *arg)
{
    struct evloop_ev *e;
    struct event *ev;

    if (w->loop->base == NULL) { /* a network thread's set */
        e = mdc_calloc(1, sizeof(*e));
        if (e == NULL)
            return NULL;
        e->w = w;
        if (evloop_io_add(w, &e->io, fd, EVL_READ, cb, arg) < 0) {
            mdc_free(e);
            return NULL;
        }
        return e;
    }
    ev = event_new(w->loop->base, fd, EV_READ | EV_PERSIST, cb, arg);
    if (ev != NULL && event_add(ev, NULL) < 0) {
        event_free(ev);
        ev = NULL;
    }
    return evloop_ev_wrap(w, ev);
}

struct evloop_ev *evloop_signal_new(struct worker *w, int sig, evloop_cb cb,
                                    void *arg)
{
    struct event *ev;

    if (w->loop->base == NULL)
        return NULL; /* only the main thread takes signals */
    ev = evsignal_new(w->loop->base, sig, cb, arg);
    if (ev != NULL && event_add(ev, NULL) < 0) {
        event_free(ev);
        ev = NULL;
    }
    return evloop_ev_wrap(w, ev);
}

struct evloop_ev *evloop_user_new(struct worker *w, evloop_cb cb, void *arg)
{
    if (w->loop->base == NULL)
        return NULL; /* the main thread's */
    return evloop_ev_wrap(w, event_new(w->loop->base, -1, 0, cb, arg));
}

int evloop_timer_add(struct evloop_ev *e, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    return e->ev != NULL ? event_add(e->ev, &tv) : -1;
}

void evloop_trigger(struct evloop_ev *e)
{
    if (e->ev != NULL)
        event_active(e->ev, EV_READ, 0);
}

void evloop_ev_free(struct evloop_ev *e)
{
    if (e == NULL)
        return;
    if (e->ev != NULL)
        event_free(e->ev);
    else
        evloop_io_del(e->w, &e->io);
    mdc_free(e);
}

const char *evloop_version(void)
{
    return event_get_version();
}
