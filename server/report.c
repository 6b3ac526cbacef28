/*
 * stats.c - summing the per-thread counters on demand and listing them
 * with the store's figures under memcached's names (plus tag, connection
 * and thread-model fields).
 */
#include "config.h"

#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "server/core/alloc.h"
#include "server.h"
#include "bpf/mirror.h"
#include "server/core/store.h"

void stats_sum(struct server *srv, struct thread_stats *out)
{
    unsigned i;

    memset(out, 0, sizeof(*out));
    for (i = 0; i < srv->nworkers; i++) {
        const struct thread_stats *t = &srv->workers[i].stats;
#define X(n) out->n += __atomic_load_n(&t->n, __ATOMIC_RELAXED);
        STATS_THREAD_FIELDS(X)
#undef X
    }
}

static void emit_u64(stats_visit_fn fn, void *ctx, const char *name,
                     uint64_t v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    fn(ctx, name, buf);
}

/*
 * -x: the XDP program's per-CPU counters summed (hits, misses, expired,
 * conflicts, passes by reason), the mirror writer's, and its memory: the
 * fixed mapping, the records it holds, and bytes per cached byte of key and
 * value - of the whole mapping and of the occupied slots alone.
 */
static void stats_xdp(struct server *srv, stats_visit_fn fn, void *ctx)
{
    struct mirror_stats ms;
    uint64_t tier[MIRROR_NTIERS], items = 0, bytes = 0, used = 0;
    char name[64], buf[32];
    unsigned i;

    if (srv->mirror == NULL)
        return;
    mirror_stats(srv->mirror, &ms);
    mirror_usage_tiers(srv->mirror, tier, &bytes);
    fn(ctx, "xdp_mode", ms.mode);
    emit_u64(fn, ctx, "xdp_verified_insns", ms.verified_insns);
    for (i = 0; i < MIRROR_NCOUNTERS; i++) {
        snprintf(name, sizeof(name), "xdp_%s", mirror_counter_name(i));
        emit_u64(fn, ctx, name, ms.xdp[i]);
    }
    emit_u64(fn, ctx, "xdp_fills", ms.fills);
    emit_u64(fn, ctx, "xdp_fill_busy", ms.fill_busy);
    emit_u64(fn, ctx, "xdp_fill_rejected", ms.fill_rejected);
    emit_u64(fn, ctx, "xdp_invalidations", ms.invalidations);
    for (i = 0; i < MIRROR_NTIERS; i++) {
        items += tier[i];
        used += tier[i] * ms.slot_size[i];
    }
    emit_u64(fn, ctx, "xdp_items", items);
    emit_u64(fn, ctx, "xdp_item_bytes", bytes); /* keys + values */
    emit_u64(fn, ctx, "xdp_slot_bytes", used);  /* slots they occupy */
    emit_u64(fn, ctx, "xdp_mem_bytes", ms.mem_bytes);
    snprintf(buf, sizeof(buf), "%.2f",
             bytes ? (double)used / (double)bytes : 0.0);
    fn(ctx, "xdp_slot_bytes_per_cached_byte", buf);
    snprintf(buf, sizeof(buf), "%.2f",
             bytes ? (double)ms.mem_bytes / (double)bytes : 0.0);
    fn(ctx, "xdp_mem_per_cached_byte", buf);
}

void stats_collect(struct server *srv, stats_visit_fn fn, void *ctx)
{
    struct thread_stats t;
    struct store_stats s;
    unsigned threads = (srv->nnet > 0 ? srv->nnet : 1) + srv->npay;

    stats_sum(srv, &t);
    store_get_stats(srv->store, &s);

    emit_u64(fn, ctx, "pid", (uint64_t)getpid());
    emit_u64(fn, ctx, "uptime", server_uptime(srv));
    emit_u64(fn, ctx, "time", (uint64_t)time(NULL));
    fn(ctx, "version", PACKAGE_VERSION);
    fn(ctx, "libevent", event_get_version());
    emit_u64(fn, ctx, "pointer_size", 8 * sizeof(void *));
    emit_u64(fn, ctx, "curr_connections",
             atomic_load_explicit(&srv->nconns, memory_order_relaxed));
    emit_u64(fn, ctx, "max_connections",
             __atomic_load_n(&srv->opt.max_conns, __ATOMIC_RELAXED));
#define X(n) emit_u64(fn, ctx, #n, t.n);
    STATS_THREAD_FIELDS(X)
#undef X
    /* memcached's "get that found an expired item" (also in get_misses) */
    emit_u64(fn, ctx, "get_expired", s.get_expired);
    emit_u64(fn, ctx, "curr_items", s.curr_items);
    emit_u64(fn, ctx, "total_items", s.total_items);
    emit_u64(fn, ctx, "bytes", s.bytes);
    emit_u64(fn, ctx, "limit_maxbytes", s.limit_maxbytes);
    emit_u64(fn, ctx, "evictions", s.evictions);
    emit_u64(fn, ctx, "expired", s.expired);
    emit_u64(fn, ctx, "expired_unfetched", s.expired_unfetched);
    emit_u64(fn, ctx, "evicted_unfetched", s.evicted_unfetched);
    emit_u64(fn, ctx, "tagged_items", s.tagged_items);
    emit_u64(fn, ctx, "tag_links", s.tag_links);
    emit_u64(fn, ctx, "tag_values", s.tag_values);
    emit_u64(fn, ctx, "tag_keys", s.tag_keys);
    emit_u64(fn, ctx, "tag_bytes", s.tag_bytes);
    emit_u64(fn, ctx, "hash_buckets", s.nbuckets);
    emit_u64(fn, ctx, "fixed_bytes", s.fixed_bytes);
    fn(ctx, "allocator", mdc_allocator_name());
    emit_u64(fn, ctx, "threads", threads);
    emit_u64(fn, ctx, "network_threads", srv->nnet);
    emit_u64(fn, ctx, "payload_threads", srv->npay);
    fn(ctx, "thread_model", thread_model_name(srv->model));
    stats_xdp(srv, fn, ctx);
}

void stats_collect_settings(struct server *srv, stats_visit_fn fn, void *ctx)
{
    options_visit(&srv->opt, fn, ctx);
    fn(ctx, "thread_model", thread_model_name(srv->model));
    emit_u64(fn, ctx, "max_message_body", srv->max_body);
    emit_u64(fn, ctx, "udp_sockets", srv->nudp);
}

static const char *stats_role_name(enum worker_role r)
{
    switch (r) {
    case ROLE_MAIN:
        return "main";
    case ROLE_NET:
        return "network";
    case ROLE_PAYLOAD:
        return "payload";
    }
    return "unknown";
}

static void stats_collect_threads(struct server *srv, stats_visit_fn fn,
                                  void *ctx)
{
    char name[96];
    unsigned i;

    for (i = 0; i < srv->nworkers; i++) {
        const struct worker *w = &srv->workers[i];
        const struct thread_stats *t = &w->stats;

        snprintf(name, sizeof(name), "%u:role", w->id);
        fn(ctx, name, stats_role_name(w->role));
#define X(n)                                                                   \
        snprintf(name, sizeof(name), "%u:" #n, w->id);                         \
        emit_u64(fn, ctx, name, __atomic_load_n(&t->n, __ATOMIC_RELAXED));
        STATS_THREAD_FIELDS(X)
#undef X
    }
}

static void stats_collect_tags(struct server *srv, stats_visit_fn fn,
                               void *ctx)
{
    struct store_tag_count *top;
    char name[48];
    size_t n, i;

    top = mdc_calloc(STATS_TOP_TAGS, sizeof(*top));
    if (top == NULL)
        return;
    n = store_top_tags(srv->store, top, STATS_TOP_TAGS);
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "tag:%" PRId32 ":%" PRId32,
                 top[i].tag.tkey, top[i].tag.tval);
        emit_u64(fn, ctx, name, top[i].records);
    }
    mdc_free(top);
}

int stats_collect_group(struct server *srv, const char *group, size_t glen,
                        stats_visit_fn fn, void *ctx)
{
#define IS(s) (glen == sizeof(s) - 1 && memcmp(group, s, glen) == 0)
    if (fn == NULL) /* only asks whether the group exists */
        return IS("settings") || IS("threads") || IS("tags") ? 0 : -1;
    if (IS("settings"))
        stats_collect_settings(srv, fn, ctx);
    else if (IS("threads"))
        stats_collect_threads(srv, fn, ctx);
    else if (IS("tags"))
        stats_collect_tags(srv, fn, ctx);
    else
        return -1;
    return 0;
#undef IS
}
