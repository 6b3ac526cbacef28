/*
 * evloop.c - a thread's libevent loop (evloop.h): the readiness backend's
 * loop, and the main thread's under both backends.  The thread's own
 * events (inbox, tick, stop) call threads.c's housekeeping; the other
 * events are made for their users (signals, listeners' timers, UDP
 * sockets, the io_uring ring of the main thread).
 */
#include "config.h"

#include "evloop.h"

#include <sched.h>
#include <sys/time.h>

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

struct evloop {
    struct event_base *base;
    struct event *ev_inbox; /* activated when the inbox goes non-empty */
    struct event *ev_tick;  /* the tick (timeouts, slow readers), one-shot,
                               armed for w->next_tick_ms */
    struct event *ev_stop;  /* activated by the main thread on shutdown */
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

int evloop_setup(struct worker *w)
{
    struct evloop *l = mdc_calloc(1, sizeof(*l));

    if (l == NULL)
        return -1;
    w->loop = l;
    l->base = event_base_new();
    if (l->base == NULL)
        return -1;
    l->ev_inbox = event_new(l->base, -1, 0, evloop_inbox_cb, w);
    l->ev_tick = event_new(l->base, -1, 0, evloop_tick_cb, w);
    l->ev_stop = event_new(l->base, -1, 0, evloop_stop_cb, w);
    if (l->ev_inbox == NULL || l->ev_tick == NULL || l->ev_stop == NULL)
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
    mdc_free(l);
    w->loop = NULL;
}

void evloop_wake(struct worker *w)
{
    event_active(w->loop->ev_inbox, EV_READ, 0);
}

void evloop_stop(struct worker *w)
{
    event_active(w->loop->ev_stop, EV_READ, 0);
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
