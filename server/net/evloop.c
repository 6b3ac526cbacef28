/*
 * evloop.c - a thread's libevent loop (evloop.h): the readiness backend's
 * loop, and the main thread's under both backends.  The thread's own
 * events (inbox, tick, stop) call threads.c's housekeeping; the other
 * events are made for their users (signals, listeners' timers, UDP
 * sockets, the io_uring ring of the main thread).
 */
#include "config.h"

#include "evloop.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
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

/*
 * A network thread's loop is touched by its own thread alone once the
 * thread runs (its connections' events, UDP sockets, the tick): its base
 * is made without libevent's lock (EVENT_BASE_FLAG_NOLOCK), which a
 * locked base takes and drops around every callback, each request's
 * included.  The other threads only wake it (a connection handed over,
 * the stop): they write its wake descriptor, an eventfd (a pipe where
 * there is none), whose read event runs the inbox and a stop asked
 * through stop_req.  The main thread's loop keeps the lock and its
 * events activated from any thread (signals, evloop_trigger).
 */
struct evloop {
    struct event_base *base;
    struct event *ev_inbox; /* activated when the inbox goes non-empty
                               (locked loop), or the wake descriptor's
                               read event (a network thread's) */
    struct event *ev_tick;  /* the tick (timeouts, slow readers), one-shot,
                               armed for w->next_tick_ms */
    struct event *ev_stop;  /* activated by the main thread on shutdown
                               (locked loop only) */
    int wake_rd, wake_wr;   /* the wake descriptor (-1: a locked loop);
                               the same eventfd twice, or a pipe's ends */
    atomic_bool stop_req;   /* evloop_stop() asked (wake descriptor) */
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

void evloop_tick_arm(struct worker *w)
{
    uint64_t now_ms = server_coarse_ms();
    uint64_t ms =
        worker_wait_ms(now_ms, w->next_tick_ms, server_coarse_res_ms());
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    if (event_add(w->loop->ev_tick, &tv) < 0)
        log_error("cannot arm the tick of thread %u", w->id);
}

void evloop_tick_off(struct worker *w)
{
    event_del(w->loop->ev_tick);
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
 * other threads asked for: the inbox, the stop (the order a locked loop
 * runs them in when both were activated before its turn). */
static void evloop_wake_cb(evutil_socket_t fd, short what, void *arg)
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

/* w's base: a network thread's without the lock (see struct evloop). */
static struct event_base *evloop_base_new(const struct worker *w)
{
    struct event_config *cfg;
    struct event_base *base;

    if (w->role != ROLE_NET)
        return event_base_new();
    cfg = event_config_new();
    if (cfg == NULL)
        return NULL;
    base = event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK) == 0
               ? event_base_new_with_config(cfg)
               : NULL;
    event_config_free(cfg);
    return base;
}

int evloop_setup(struct worker *w)
{
    struct evloop *l = mdc_calloc(1, sizeof(*l));

    if (l == NULL)
        return -1;
    l->wake_rd = l->wake_wr = -1;
    atomic_init(&l->stop_req, false);
    w->loop = l;
    l->base = evloop_base_new(w);
    if (l->base == NULL)
        return -1;
    if (w->role == ROLE_NET) {
        if (evloop_wake_open(l) < 0) {
            log_error("thread %u: wake descriptor: %s", w->id,
                      strerror(errno));
            return -1;
        }
        l->ev_inbox = event_new(l->base, l->wake_rd, EV_READ | EV_PERSIST,
                                evloop_wake_cb, w);
        if (l->ev_inbox == NULL || event_add(l->ev_inbox, NULL) < 0)
            return -1;
    } else {
        l->ev_inbox = event_new(l->base, -1, 0, evloop_inbox_cb, w);
        l->ev_stop = event_new(l->base, -1, 0, evloop_stop_cb, w);
        if (l->ev_inbox == NULL || l->ev_stop == NULL)
            return -1;
    }
    l->ev_tick = event_new(l->base, -1, 0, evloop_tick_cb, w);
    if (l->ev_tick == NULL)
        return -1;
    evloop_tick_arm(w);
    return 0;
}

void evloop_teardown(struct worker *w)
{
    struct evloop *l = w->loop;

    if (l == NULL)
        return;
    if (l->ev_inbox != NULL)
        event_free(l->ev_inbox);
    if (l->ev_tick != NULL)
        event_free(l->ev_tick);
    if (l->ev_stop != NULL)
        event_free(l->ev_stop);
    if (l->base != NULL)
        event_base_free(l->base);
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
    event_base_loopexit(w->loop->base, NULL);
}

/*
 * One loop turn at a time, yielding the CPU after each when there are more
 * network threads than CPUs.  Busy loops on a shared CPU are otherwise cut
 * by the scheduler's time slices (milliseconds), and a request waits for
 * its thread's next slice: that was the 8 ms W1 p99 of -n 4 -t 0 on two
 * CPUs.  Yielding after each turn (one epoll_wait and the callbacks of what
 * it returned) makes the loops take turns per batch of ready connections
 * instead (docs/threads-models.md, "More network threads than CPUs").
 */
void evloop_run(struct worker *w)
{
    struct event_base *base = w->loop->base;

    if (!w->yield_turns) {
        event_base_dispatch(base);
        return;
    }
    for (;;) {
        if (event_base_loop(base, EVLOOP_ONCE) != 0 ||
            event_base_got_exit(base) || event_base_got_break(base))
            break;
        STAT_INC(&w->stats, loop_yields);
        sched_yield();
    }
}

void evloop_turn_nowait(struct worker *w)
{
    event_base_loop(w->loop->base, EVLOOP_NONBLOCK);
}

struct event_base *evloop_base(const struct worker *w)
{
    return w->loop->base;
}

/* ---- events for other layers ------------------------------------------- */

struct evloop_ev *evloop_fd_new(struct worker *w, int fd, evloop_cb cb,
                                void *arg)
{
    struct event *e =
        event_new(w->loop->base, fd, EV_READ | EV_PERSIST, cb, arg);

    if (e != NULL && event_add(e, NULL) < 0) {
        event_free(e);
        e = NULL;
    }
    return (struct evloop_ev *)e;
}

struct evloop_ev *evloop_signal_new(struct worker *w, int sig, evloop_cb cb,
                                    void *arg)
{
    struct event *e = evsignal_new(w->loop->base, sig, cb, arg);

    if (e != NULL && event_add(e, NULL) < 0) {
        event_free(e);
        e = NULL;
    }
    return (struct evloop_ev *)e;
}

struct evloop_ev *evloop_user_new(struct worker *w, evloop_cb cb, void *arg)
{
    return (struct evloop_ev *)event_new(w->loop->base, -1, 0, cb, arg);
}

int evloop_timer_add(struct evloop_ev *e, uint64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    return event_add((struct event *)e, &tv);
}

void evloop_trigger(struct evloop_ev *e)
{
    event_active((struct event *)e, EV_READ, 0);
}

void evloop_ev_free(struct evloop_ev *e)
{
    if (e != NULL)
        event_free((struct event *)e);
}

const char *evloop_version(void)
{
    return event_get_version();
}
