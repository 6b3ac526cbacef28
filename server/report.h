/*
 * report.h - the stats report: every thread's counters summed on demand,
 * the store's and the XDP mirror's figures, and the settings, visited as
 * (name, value text) pairs in memcached's order.  Both protocol handlers
 * render it (the "stats" command and the native STATS request).
 */
#ifndef MDC_REPORT_H
#define MDC_REPORT_H

#include "stats.h"

struct server;

/* Sum every thread's counters into out. */
void stats_sum(struct server *srv, struct thread_stats *out);

/* Visit every stat as (name, value text) in memcached's order. */
typedef void (*stats_visit_fn)(void *ctx, const char *name, const char *value);
void stats_collect(struct server *srv, stats_visit_fn fn, void *ctx);
/* The "settings" group: every option with its value. */
void stats_collect_settings(struct server *srv, stats_visit_fn fn, void *ctx);

/*
 * A named group (the "stats GROUP" command and the native STATS key):
 * "settings"; "threads": every thread's counters as "ID:NAME VALUE" (ID:role
 * is main, network or payload); "tags": the STATS_TOP_TAGS tags carrying
 * the most records as "tag:TKEY:TVAL RECORDS", largest first.  Returns -1
 * (nothing visited) for an unknown group; with fn NULL only that check.
 */
#define STATS_TOP_TAGS 100
int stats_collect_group(struct server *srv, const char *group, size_t glen,
                        stats_visit_fn fn, void *ctx);

#endif
