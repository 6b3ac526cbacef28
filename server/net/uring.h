/*
 * uring.h - the io_uring network backend (--io=uring): one ring per thread
 * that serves connections, a multishot receive per connection into a ring
 * of provided buffers, sends that reference the output queue (records
 * included) until their completion, and one io_uring_enter per loop turn
 * for all of them.  docs/threads-models.md, "The io_uring loop".
 *
 * Without liburing (no HAVE_LIBURING) only the stubs below exist: no
 * connection ever has a ring, and --io=uring is refused by options.c.
 */
#ifndef MDC_URING_H
#define MDC_URING_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>

#include "server/server.h"

struct conn;

#ifdef HAVE_LIBURING
/* Decide srv->io_uring from --io (and MDC_TEST_IO for auto): 0, or -1
 * with the reason logged (an explicit --io=uring that cannot run). */
int uring_resolve(struct server *srv);
/* Give worker w a ring.  outer: the ring's loop runs the thread
 * (uring_run); otherwise (the main thread) the ring is one libevent event. */
int uring_worker_setup(struct worker *w, bool outer);
void uring_worker_teardown(struct worker *w);
/* True when w's thread runs the ring's loop rather than libevent's. */
bool uring_outer(const struct worker *w);
/* The network thread's loop (replaces event_base_dispatch). */
void uring_run(struct worker *w);
/* One turn of w's ring for code that drives a worker without its loop
 * (tests): submit, wait up to wait_ms for a completion, run what came.
 * 1 something came, 0 nothing, -errno. */
int uring_turn(struct worker *w, int wait_ms);
/* Wake w's loop from another thread (inbox, stop). */
void uring_wake(struct worker *w);
/* c is served by the ring (adopted under the io_uring backend; tests). */
bool uring_conn_ringed(const struct conn *c);
/* c receives on the bulk buffer group (tests). */
bool uring_conn_bulk(const struct conn *c);
/* c's zero-copy send completed, its notification not yet (tests). */
bool uring_conn_zc_wait(const struct conn *c);
/* Zero-copy sends submitted and notifications seen by w's ring. */
void uring_zc_counts(const struct worker *w, uint64_t *sends,
                     uint64_t *notifs);
#else
static inline int uring_resolve(struct server *srv)
{
    srv->io_uring = false;
    return 0;
}
static inline int uring_worker_setup(struct worker *w, bool outer)
{
    (void)w;
    (void)outer;
    return -1;
}
static inline void uring_worker_teardown(struct worker *w) { (void)w; }
static inline bool uring_outer(const struct worker *w)
{
    (void)w;
    return false;
}
static inline void uring_run(struct worker *w) { (void)w; }
static inline void uring_wake(struct worker *w) { (void)w; }
static inline int uring_turn(struct worker *w, int wait_ms)
{
    (void)w;
    (void)wait_ms;
    return -1;
}
static inline bool uring_conn_ringed(const struct conn *c)
{
    (void)c;
    return false;
}
static inline bool uring_conn_bulk(const struct conn *c)
{
    (void)c;
    return false;
}
static inline bool uring_conn_zc_wait(const struct conn *c)
{
    (void)c;
    return false;
}
static inline void uring_zc_counts(const struct worker *w, uint64_t *sends,
                                   uint64_t *notifs)
{
    (void)w;
    *sends = *notifs = 0;
}
#endif

#endif
