/*
 * evloop.h - a thread's event loop, part of the readiness backend
 * (epoll.c; evloop.c has the loops).  Where epoll exists and the build is
 * not portable (EVLOOP_EPOLL), a network thread's is evloop.c's own loop
 * over an epoll descriptor (no libevent: an epoll_event's pointer is the
 * registration, its callback called directly); elsewhere (the portable
 * build, standing in for FreeBSD and the like) it is libevent's.  It runs
 * the thread under --io=epoll, and under io_uring it is made but not run
 * (the ring's loop runs the thread), so that what registers with it (UDP
 * sockets) is the same for both.  The main thread's is libevent's under
 * both backends (listeners, signals, timers; under io_uring its ring is
 * one event of it); the connections it serves itself (-n 0) are
 * registered with an epoll set of its own, polled as one libevent event
 * (EVLOOP_EPOLL), or are libevent events of it.
 *
 * Outside the backends no file names a libevent type or function
 * (tools/check-backends.sh): a thread's loop is struct worker's opaque
 * loop, made and freed here, and the events other layers want (signals,
 * a timer, a descriptor's readiness, a wake-up from another thread) are
 * opaque struct evloop_ev made here.
 */
#ifndef MDC_EVLOOP_H
#define MDC_EVLOOP_H

#include <stdbool.h>
#include <stdint.h>

/* The own epoll loop: on Linux, unless built portable (MDC_PORTABLE,
 * config.h, included first). */
#if defined(__linux__) && !defined(MDC_PORTABLE)
#define EVLOOP_EPOLL 1
#else
#define EVLOOP_EPOLL 0
#endif

struct worker;
struct evloop;
struct evloop_ev;

/* An event's callback: the descriptor (or the signal), what happened (a
 * mask of CONN_EV_* bits), the argument given when it was made.  The
 * same as libevent's callbacks, so no call goes through a wrapper. */
typedef void (*evloop_cb)(int fd, short what, void *arg);

/* The loops' locking, once per process, before the first loop is made:
 * the main thread's loop is locked (other threads make its events
 * active), a network thread's is not (they wake it through its wake
 * descriptor; evloop.c, struct evloop).  0, or -1. */
int evloop_threads(void);
/* Give network (or main) thread w its loop, with the thread's own events:
 * the inbox (worker_inbox_run), the tick (worker_tick_run, armed for
 * w->next_tick_ms) and the stop (worker_begin_stop).  0, or -1. */
int evloop_setup(struct worker *w);
/* Free w's loop (after every event made on it is freed). */
void evloop_teardown(struct worker *w);
/* Arm the tick for w->next_tick_ms (a network thread's own loop: its
 * epoll_wait timeout); stop it (the io_uring loop's wait is the tick of a
 * network thread). */
void evloop_tick_arm(struct worker *w);
void evloop_tick_off(struct worker *w);
/* From another thread: w's inbox has connections; w is to stop (a
 * network thread's: a write of its wake descriptor, no lock taken). */
void evloop_wake(struct worker *w);
void evloop_stop(struct worker *w);
/* Run w's loop until evloop_exit (yielding the CPU after each turn when
 * w->yield_turns); end it. */
void evloop_run(struct worker *w);
void evloop_exit(struct worker *w);
/* One turn that does not wait (tests). */
void evloop_turn_nowait(struct worker *w);

/* Events of w's loop, made active (registered) unless said: */
/* readiness to read fd, for as long as the event lives */
struct evloop_ev *evloop_fd_new(struct worker *w, int fd, evloop_cb cb,
                                void *arg);
/* signal sig, delivered on w's loop */
struct evloop_ev *evloop_signal_new(struct worker *w, int sig, evloop_cb cb,
                                    void *arg);
/* run only when made active (evloop_trigger, from any thread), or when
 * its timer (evloop_timer_add) fires: not registered */
struct evloop_ev *evloop_user_new(struct worker *w, evloop_cb cb, void *arg);
/* Fire e's callback once in ms milliseconds (again: moved). 0, or -1. */
int evloop_timer_add(struct evloop_ev *e, uint64_t ms);
/* Run e's callback on its loop's next turn (any thread). */
void evloop_trigger(struct evloop_ev *e);
/* Unregister and free e (NULL: nothing). */
void evloop_ev_free(struct evloop_ev *e);

/* The library's version (stats). */
const char *evloop_version(void);

/* For the readiness backend's own file (epoll.c): the main thread's
 * libevent base (its listeners); NULL for a network thread. */
struct event_base *evloop_base(const struct worker *w);

/*
 * A descriptor registered with w's loop (any loop: a network thread's, or
 * the main thread's for its own connections): what the callback gets, and
 * what a registration asks for (EVL_ET: edge-triggered).  The bits are
 * libevent's EV_* and conn.h's CONN_EV_*.  The struct is the caller's (in
 * a connection); a loop never calls it after evloop_io_del, even for
 * readiness it already collected in the turn that deletes it.  With
 * EVLOOP_EPOLL it is the registration itself (no allocation); without,
 * it holds libevent's events: the read event, made with it, and a write
 * event made only while EVL_WRITE is asked for (an idle connection holds
 * none).
 */
#define EVL_TIMEOUT 0x01 /* requeued (evloop_io_requeue) */
#define EVL_READ 0x02
#define EVL_WRITE 0x04
#define EVL_ET 0x20
#define EVL_CLOSED 0x80 /* the peer half-closed (EPOLLRDHUP) */
struct evloop_io {
    evloop_cb cb;
    void *arg;
    int fd;
    short want;                 /* EVL_* registered */
#if EVLOOP_EPOLL
    bool queued;                /* on the requeue list */
    struct evloop_io *rq_next;  /* the requeue list */
    struct evloop_io **rq_pprev;
#else
    struct event *ev;           /* want but EVL_WRITE, EV_PERSIST */
    struct event *ev_wr;        /* EVL_WRITE asked for: NULL otherwise */
#endif
};
/* Register io (fd, want, cb, arg) with w's set: 0, or -1 (errno). */
int evloop_io_add(struct worker *w, struct evloop_io *io, int fd, short want,
                  evloop_cb cb, void *arg);
/* Change what io asks for (the fd is polled again: ready now is
 * reported; without EVLOOP_EPOLL only EVL_WRITE may change): 0, or -1. */
int evloop_io_mod(struct worker *w, struct evloop_io *io, short want);
/* Unregister io, before its descriptor is closed. */
void evloop_io_del(struct worker *w, struct evloop_io *io);
/* Call io's callback (EVL_TIMEOUT) once more behind the events ready in
 * this turn, without a new event (w's own thread). */
void evloop_io_requeue(struct worker *w, struct evloop_io *io);

#endif
