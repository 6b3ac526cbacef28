/*
 * metrics.h - Prometheus metrics (--metrics=ADDR:PORT, docs/packaging.md):
 * GET /metrics in the text exposition format, served by libevent's evhttp
 * on a thread of its own.  Every "stats" counter (per-thread ones with a
 * thread label, under memcached_exporter's names where the meaning
 * matches), the store and tag-index gauges, and log-linear histograms of
 * request service time per command.
 *
 * The request paths call metrics_start()/metrics_observe(): with metrics
 * off that is one test of a pointer; with them on, two clock reads and one
 * single-writer counter bump per request (each thread owns its histogram
 * row, like its struct thread_stats).
 */
#ifndef MDC_METRICS_H
#define MDC_METRICS_H

#include <stdint.h>
#include <time.h>

#include "server.h"

/* Commands timed separately (the "command" label). */
#define METRICS_COMMANDS(X)                                                    \
    X(MC_GET, "get")                                                           \
    X(MC_SET, "set")                                                           \
    X(MC_DELETE, "delete")                                                     \
    X(MC_INCR, "incr")                                                         \
    X(MC_TOUCH, "touch")                                                       \
    X(MC_GET_BY_TAG, "get_by_tag")                                             \
    X(MC_DEL_BY_TAG, "del_by_tag")                                             \
    X(MC_TSTACK, "tstack")                                                     \
    X(MC_FLUSH, "flush")                                                       \
    X(MC_STATS, "stats")                                                       \
    X(MC_OTHER, "other")

enum metrics_cmd {
#define X(e, s) e,
    METRICS_COMMANDS(X)
#undef X
        MC__COUNT
};

/* Bucket bounds 1, 2, 5 x 10^k microseconds, 1 us .. 1 s, then +Inf. */
#define METRICS_NBOUNDS 19

/* Parse --metrics: "ADDR:PORT", "[V6]:PORT" or "PORT" (loopback), the port
 * "auto" (alone: loopback) giving *port 0, a free port the kernel picks.
 * 0 ok. */
int metrics_parse_addr(const char *spec, char *host, size_t hlen,
                       uint16_t *port);

/* With --metrics: bind the HTTP listener (call with the other listeners,
 * before privileges are dropped); 0 ok or without --metrics, -1 logged. */
int metrics_setup(struct server *srv);
/* "ADDR:PORT" the metrics listener is bound to (the port "auto" picked),
 * NULL without --metrics (--port-file). */
const char *metrics_name(const struct server *srv);
/* Start / stop the HTTP thread (after threads_start / at teardown). */
int metrics_start_thread(struct server *srv);
void metrics_teardown(struct server *srv);

/* Render the whole exposition into a malloc'd string (tests, the handler). */
char *metrics_render(struct server *srv, size_t *len);

/* Request timing: t0 = metrics_start(srv) before running a request (0 when
 * metrics are off), metrics_observe() after it. */
static inline uint64_t metrics_start(const struct server *srv)
{
    struct timespec ts;

    if (srv->metrics == NULL)
        return 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) | 1;
}
void metrics_observe(struct server *srv, unsigned worker, enum metrics_cmd cmd,
                     uint64_t t0);

#endif
