/*
 * watch.h - memcached's "watch": live log lines streamed to connections
 * that asked for them (docs/protocol-text.md, "watch").
 *
 * A connection that sends "watch <types>" gets OK, then is handed over:
 * once its output is out, its socket (a dup) goes to the watch thread,
 * which writes the lines and reads nothing but the hang-up; the
 * connection itself closes.  Lines are made by the thread that sees the
 * event, only while some watcher wants that type: the hot path pays one
 * relaxed load (watch_wants()).  Each watcher has a buffer of
 * WATCH_BUF bytes; a line that does not fit is dropped and counted
 * (memcached's "skipped=N" line comes before the next line that fits),
 * so a watcher that does not read never makes a worker wait.
 */
#ifndef MDC_WATCH_H
#define MDC_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"

#define WATCH_FETCHERS 1u
#define WATCH_MUTATIONS 2u
#define WATCH_EVICTIONS 4u
#define WATCH_CONNEVENTS 8u

#define WATCH_MAX 20            /* watchers at once, as memcached */
#define WATCH_BUF (256u << 10)  /* bytes of lines a watcher may have queued */

/* Whether a watcher wants lines of type t: one relaxed load. */
static inline bool watch_wants(const struct server *srv, unsigned t)
{
    return (__atomic_load_n(&srv->watch_mask, __ATOMIC_RELAXED) & t) != 0;
}

/* The types of "watch <args>" (NULL: fetchers, memcached's default);
 * 0 when an argument is not a type served here. */
unsigned watch_parse(const char *args, size_t len);

/* Take fd (a dup the caller gives up) as a watcher of types.  0, or -1
 * when WATCH_MAX watchers are there already (fd closed) or the thread
 * cannot start. */
int watch_adopt(struct server *srv, int fd, unsigned types);

/* A line "ts=<s>.<us> gid=<n> " + the formatted rest + "\n" to every
 * watcher of type t (call it only when watch_wants() said so). */
void watch_log(struct server *srv, unsigned t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stop the thread, close the watchers (server_teardown). */
void watch_teardown(struct server *srv);

#endif
