/*
 * uring.h - the io_uring network backend (--io=uring): one ring per thread
 * that serves connections, a multishot receive per connection into a ring
 * of provided buffers, sends that reference the output queue (records
 * included) until their completion, and one io_uring_enter per loop turn
 * for all of them.  docs/threads-models.md, "The io_uring loop".
 *
 * Its files: uring.c (the rings, the transport table), uring_loop.c (the
 * loop, wake-ups, UDP polls, accepts), uring_conn.c (a connection's
 * receives, sends, polls, close); uring_int.h what they share.
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
/* The server reaches the backend through its transport table only
 * (transport.h: transport_uring, chosen by transport_resolve); what is
 * declared here is for tests. */
/* One turn of w's ring for code that drives a worker without its loop
 * (tests): submit, wait up to wait_ms for a completion, run what came.
 * 1 something came, 0 nothing, -errno. */
int uring_turn(struct worker *w, int wait_ms);
/* c is served by the ring (adopted under the io_uring backend; tests). */
bool uring_conn_ringed(const struct conn *c);
/* c receives on the bulk buffer group (tests). */
bool uring_conn_bulk(const struct conn *c);
/* c's zero-copy send completed, its notification not yet (tests). */
bool uring_conn_zc_wait(const struct conn *c);
/* Zero-copy sends submitted and notifications seen by w's ring. */
void uring_zc_counts(const struct worker *w, uint64_t *sends,
                     uint64_t *notifs);
/* Listener i's multishot accept is armed (tests). */
bool uring_accept_armed(const struct server *srv, size_t i);
#else
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
static inline bool uring_accept_armed(const struct server *srv, size_t i)
{
    (void)srv;
    (void)i;
    return false;
}
#endif

#endif
