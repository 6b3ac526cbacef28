/*
 * report.h - the stats report: every thread's counters summed on demand,
 * the store's and the XDP mirror's figures, and the settings, visited as
 * (name, value text) pairs in memcached's order.  Both protocol handlers
 * render it (the "stats" command and the native STATS request).
 */
#ifndef MDC_REPORT_H
#define MDC_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

struct server;

/* What "version" and the version stat say: the memcached protocol level
 * clients check ("major.minor.micro", major > 0), then mdcached's own. */
#define MDC_TEXT_VERSION "1.6.0-mdcached-" PACKAGE_VERSION

/* Sum every thread's counters into out. */
void stats_sum(struct server *srv, struct thread_stats *out);

/* Visit every stat as (name, value text) in memcached's order. */
typedef void (*stats_visit_fn)(void *ctx, const char *name, const char *value);
void stats_collect(struct server *srv, stats_visit_fn fn, void *ctx);
/* The same, asked by a connection holding own lent buffers (its request and
 * reply), which conn_buffers_lent leaves out: it counts what the others
 * hold. */
void stats_collect_conn(struct server *srv, stats_visit_fn fn, void *ctx,
                        unsigned own);
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
/* Reset state and per-prefix counts: set up with the server. */
void stats_setup(struct server *srv);
void stats_teardown(struct server *srv);
/* "stats reset": the counters memcached zeroes start again from 0 (a
 * baseline is kept; no thread's counter is written by another). */
void stats_reset(struct server *srv);
/* "stats items" and "stats slabs": mdcached has no slab classes; the whole
 * store is reported as class 1 (docs/protocol-text.md). */
void stats_collect_items(struct server *srv, stats_visit_fn fn, void *ctx);
void stats_collect_slabs(struct server *srv, stats_visit_fn fn, void *ctx);

/* "stats detail": per-prefix counts of the text protocol's get, set and
 * delete while on (-D or "stats detail on"). */
enum stats_detail_op { DETAIL_GET, DETAIL_SET, DETAIL_DEL };
void stats_detail_set(struct server *srv, bool on);
bool stats_detail_on(struct server *srv);
void stats_detail_count(struct server *srv, const char *key, uint32_t klen,
                        enum stats_detail_op op, bool hit);
/* Visit each "PREFIX <p> get <n> hit <n> set <n> del <n>" line. */
typedef void (*stats_line_fn)(void *ctx, const char *line);
void stats_detail_dump(struct server *srv, stats_line_fn fn, void *ctx);

/*
 * memcached's "stats cachedump <class> <limit>": one "ITEM <key> [<bytes> b;
 * <expiry> s]" line per live record (expiry as Unix time, 0 = never), at
 * most limit of them (0: no count limit) and at most STATS_CACHEDUMP_MAX
 * bytes of lines, as memcached bounds its reply.  Every record is in class
 * 1 (stats slabs); another class has none.  Records whose key the text
 * protocol cannot carry (over 250 bytes, a space or control byte) are left
 * out.  The store is walked class by class under read locks and the lines
 * sent once the walk is over.
 */
#define STATS_CACHEDUMP_MAX (2u << 20)
#define STATS_CACHEDUMP_CLASSES 64 /* memcached: "Illegal slab id" from it */
void stats_cachedump(struct server *srv, uint32_t cls, uint32_t limit,
                     stats_line_fn fn, void *ctx);

#endif
