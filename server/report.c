/*
 * report.c - summing the per-thread counters on demand and listing them
 * with the store's figures under memcached's names (plus tag, connection
 * and thread-model fields).
 */
#include "config.h"

#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>


#include "server/core/alloc.h"
#include "server.h"
#include "bpf/mirror.h"
#include "protocol/mctext.h"
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

/* Input and output buffers the threads have lent to connections now, less
 * own (a gauge: stats reset leaves it). */
static uint64_t stats_buffers_lent(struct server *srv, unsigned own)
{
    uint64_t n = 0;
    unsigned i;

    for (i = 0; i < srv->nworkers; i++)
        n += __atomic_load_n(&srv->workers[i].pool.lent, __ATOMIC_RELAXED);
    return n > own ? n - own : 0;
}

/* Per-connection backend state held now beyond the connections' structs
 * (struct conn_pool, xheld): 0 once every connection idles. */
static uint64_t stats_backend_held(struct server *srv)
{
    uint64_t n = 0;
    unsigned i;

    for (i = 0; i < srv->nworkers; i++)
        n += __atomic_load_n(&srv->workers[i].pool.xheld, __ATOMIC_RELAXED);
    return n;
}

static uint64_t stats_rbuf_bytes(struct server *srv)
{
    uint64_t n = 0;
    unsigned i;

    for (i = 0; i < srv->nworkers; i++)
        n += __atomic_load_n(&srv->workers[i].pool.rbuf_bytes,
                             __ATOMIC_RELAXED);
    return n;
}

/* Time accepting was paused (net.c's backoff), the pause going on
 * included, in microseconds. */
static uint64_t listen_disabled_us(struct server *srv)
{
    uint64_t at = atomic_load(&srv->listen_disabled_at_us);
    uint64_t us = atomic_load(&srv->listen_disabled_us);
    struct timespec ts;

    if (at != 0) {
        uint64_t now;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
        us += now > at ? now - at : 0;
    }
    return us;
}

void stats_collect(struct server *srv, stats_visit_fn fn, void *ctx)
{
    stats_collect_conn(srv, fn, ctx, 0);
}

void stats_collect_conn(struct server *srv, stats_visit_fn fn, void *ctx,
                        unsigned own)
{
    struct thread_stats t;
    struct store_stats s;
    unsigned threads = (srv->nnet > 0 ? srv->nnet : 1) + srv->npay;

    struct thread_stats tb;
    struct store_stats sb;
    uint64_t tb_listen_us;
    struct rusage ru;
    char buf[64];

    stats_sum(srv, &t);
    store_get_stats(srv->store, &s);
    pthread_mutex_lock(&srv->stats_mu);
    tb = srv->stats_base;
    sb = srv->store_base;
    tb_listen_us = srv->listen_disabled_base_us;
    pthread_mutex_unlock(&srv->stats_mu);
    /* every thread counter counts up: what stats reset zeroes */
#define X(n) t.n -= tb.n;
    STATS_THREAD_FIELDS(X)
#undef X
    s.total_items -= sb.total_items;
    s.evictions -= sb.evictions;
    s.expired -= sb.expired;
    s.expired_unfetched -= sb.expired_unfetched;
    s.evicted_unfetched -= sb.evicted_unfetched;
    s.get_expired -= sb.get_expired;
    s.nomem_held -= sb.nomem_held;
    s.direct_reclaims -= sb.direct_reclaims;
    s.lrutail_reflocked -= sb.lrutail_reflocked;
    s.get_flushed -= sb.get_flushed;
    s.flush_reclaimed -= sb.flush_reclaimed;

    emit_u64(fn, ctx, "pid", (uint64_t)getpid());
    emit_u64(fn, ctx, "uptime", server_uptime(srv));
    emit_u64(fn, ctx, "time", (uint64_t)time(NULL));
    emit_u64(fn, ctx, "boot_id", srv->boot_id);
    emit_u64(fn, ctx, "data_generation", store_generation(srv->store));
    fn(ctx, "version", MDC_TEXT_VERSION);
    fn(ctx, "libevent", srv->loop_version != NULL ? srv->loop_version : "");
    emit_u64(fn, ctx, "pointer_size", 8 * sizeof(void *));
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        snprintf(buf, sizeof(buf), "%ld.%06ld", (long)ru.ru_utime.tv_sec,
                 (long)ru.ru_utime.tv_usec);
        fn(ctx, "rusage_user", buf);
        snprintf(buf, sizeof(buf), "%ld.%06ld", (long)ru.ru_stime.tv_sec,
                 (long)ru.ru_stime.tv_usec);
        fn(ctx, "rusage_system", buf);
    }
    emit_u64(fn, ctx, "max_connections",
             __atomic_load_n(&srv->opt.max_conns, __ATOMIC_RELAXED));
    emit_u64(fn, ctx, "curr_connections",
             atomic_load_explicit(&srv->nconns, memory_order_relaxed));
    emit_u64(fn, ctx, "connection_structures",
             atomic_load_explicit(&srv->nconns, memory_order_relaxed));
    emit_u64(fn, ctx, "accepting_conns",
             __atomic_load_n(&srv->accepting, __ATOMIC_RELAXED) ? 1 : 0);
    /* a flush hides the records at once (a cut-off) and they are
     * reclaimed later: a read that finds one counts here, as in memcached
     * (store.h, struct store_stats) */
    emit_u64(fn, ctx, "get_flushed", s.get_flushed);
    /* watch (server/net/watch.h): watchers now, and the lines dropped
     * because a watcher did not read them in time */
    emit_u64(fn, ctx, "log_watchers",
             __atomic_load_n(&srv->watchers, __ATOMIC_RELAXED));
    emit_u64(fn, ctx, "log_watcher_skipped",
             __atomic_load_n(&srv->watch_skipped, __ATOMIC_RELAXED));
    emit_u64(fn, ctx, "flush_pending", s.flush_pending);
    emit_u64(fn, ctx, "flush_reclaimed", s.flush_reclaimed);
#define X(n) emit_u64(fn, ctx, #n, t.n);
    STATS_THREAD_FIELDS(X)
#undef X
    emit_u64(fn, ctx, "conn_buffers_lent", stats_buffers_lent(srv, own));
    emit_u64(fn, ctx, "conn_backend_held", stats_backend_held(srv));
    emit_u64(fn, ctx, "uring_recv_buffer_bytes", stats_rbuf_bytes(srv));
    emit_u64(fn, ctx, "time_in_listen_disabled_us",
             listen_disabled_us(srv) - tb_listen_us);
    /* evictions of a record a reader still held (memcached counts the
     * referenced items its LRU tail search skips) */
    emit_u64(fn, ctx, "lrutail_reflocked", s.lrutail_reflocked);
    /* stores that evicted to make room themselves: all of ours */
    emit_u64(fn, ctx, "direct_reclaims", s.direct_reclaims);
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
    /* memcached: stores that reused an expired item's memory; here the
     * expired records reclaimed (on access or by the sweep) */
    emit_u64(fn, ctx, "reclaimed", s.expired);
    /* stores refused although eviction is on: memory held by readers */
    emit_u64(fn, ctx, "store_no_memory_held", s.nomem_held);
    emit_u64(fn, ctx, "tagged_items", s.tagged_items);
    emit_u64(fn, ctx, "tag_links", s.tag_links);
    emit_u64(fn, ctx, "tag_values", s.tag_values);
    emit_u64(fn, ctx, "tag_keys", s.tag_keys);
    emit_u64(fn, ctx, "tag_bytes", s.tag_bytes);
    emit_u64(fn, ctx, "hash_buckets", s.nbuckets);
    emit_u64(fn, ctx, "fixed_bytes", s.fixed_bytes);
    emit_u64(fn, ctx, "dumps", atomic_load(&srv->dumps));
    emit_u64(fn, ctx, "dump_failures", atomic_load(&srv->dump_failures));
    emit_u64(fn, ctx, "dump_in_progress", atomic_load(&srv->dump_running));
    emit_u64(fn, ctx, "dump_last_records",
             atomic_load(&srv->dump_last_records));
    emit_u64(fn, ctx, "dump_last_bytes", atomic_load(&srv->dump_last_bytes));
    emit_u64(fn, ctx, "dump_last_ms", atomic_load(&srv->dump_last_ms));
    emit_u64(fn, ctx, "dump_last_time", atomic_load(&srv->dump_last_time));
    emit_u64(fn, ctx, "load_records", srv->load_records);
    emit_u64(fn, ctx, "load_ms", srv->load_ms);
    fn(ctx, "allocator", mdc_allocator_name());
    {
        struct mdc_alloc_stats as;
        mdc_alloc_stats(&as);
        emit_u64(fn, ctx, "allocator_allocated", as.allocated);
        emit_u64(fn, ctx, "allocator_active", as.active);
        emit_u64(fn, ctx, "allocator_resident", as.resident);
        emit_u64(fn, ctx, "allocator_mapped", as.mapped);
        emit_u64(fn, ctx, "allocator_retained", as.retained);
        emit_u64(fn, ctx, "allocator_metadata", as.metadata);
        emit_u64(fn, ctx, "allocator_slab_bytes", as.slab_bytes);
        emit_u64(fn, ctx, "allocator_slab_used", as.slab_used);
        emit_u64(fn, ctx, "allocator_slab_waste", as.slab_waste);
    }
    emit_u64(fn, ctx, "threads", threads);
    emit_u64(fn, ctx, "network_threads", srv->nnet);
    emit_u64(fn, ctx, "payload_threads", srv->npay);
    fn(ctx, "thread_model", thread_model_name(srv->model));
    stats_xdp(srv, fn, ctx);
}

/* The settings that memcached 1.6 also reports, under its names, where the
 * meaning matches (memcached-tool and exporters read these). */
static void stats_memcached_settings(struct server *srv, stats_visit_fn fn,
                                     void *ctx)
{
    const struct options *o = &srv->opt;

    struct store_stats s;

    store_get_stats(srv->store, &s);
    emit_u64(fn, ctx, "maxbytes", s.limit_maxbytes); /* cache_memlimit */
    emit_u64(fn, ctx, "maxconns", o->max_conns);
    /* -p auto / -U auto: the port the kernel picked, as memcached shows
     * its ephemeral one */
    emit_u64(fn, ctx, "tcpport",
             o->port == OPT_PORT_AUTO ? srv->auto_tcp_port : o->port);
    emit_u64(fn, ctx, "udpport",
             o->udp_port == OPT_PORT_AUTO ? srv->auto_udp_port : o->udp_port);
    fn(ctx, "inter", o->listen.n > 0 ? o->listen.v[0] : "NULL");
    emit_u64(fn, ctx, "verbosity", o->verbose);
    fn(ctx, "evictions", o->no_evict ? "off" : "on");
    fn(ctx, "domain_socket", o->unix_socket ? o->unix_socket : "NULL");
    emit_u64(fn, ctx, "num_threads", srv->nnet > 0 ? srv->nnet : 1);
    emit_u64(fn, ctx, "reqs_per_event", o->reqs_per_event);
    fn(ctx, "cas_enabled", "yes");
    emit_u64(fn, ctx, "tcp_backlog", o->backlog);
    fn(ctx, "binding_protocol", "auto-negotiate");
    emit_u64(fn, ctx, "item_size_max", o->max_item_size);
    emit_u64(fn, ctx, "idle_timeout", o->idle_timeout);
    fn(ctx, "flush_enabled", o->disable_flush_all ? "no" : "yes");
    fn(ctx, "shutdown_command", o->enable_shutdown ? "yes" : "no");
    {
        char d[2] = {srv->prefix_delim, '\0'};
        fn(ctx, "stat_key_prefix", d);
    }
    fn(ctx, "detail_enabled", stats_detail_on(srv) ? "yes" : "no");
    /* no SASL (it is binary-protocol only); --auth-file is memcached's
     * ASCII authentication (a "set" carrying "user password") */
    fn(ctx, "auth_enabled_sasl", "no");
    fn(ctx, "auth_enabled_ascii", srv->auth != NULL ? "yes" : "no");
}

void stats_collect_settings(struct server *srv, stats_visit_fn fn, void *ctx)
{
    stats_memcached_settings(srv, fn, ctx);
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
        return IS("settings") || IS("threads") || IS("tags") ||
                       IS("identity")
                   ? 0
                   : -1;
    if (IS("identity")) {
        /* what a client spooling invalidations asks (libmdcached's
         * spool): this process, and whose records it holds */
        emit_u64(fn, ctx, "boot_id", srv->boot_id);
        emit_u64(fn, ctx, "data_generation", store_generation(srv->store));
        emit_u64(fn, ctx, "uptime", server_uptime(srv));
    } else if (IS("settings"))
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

/* ---- stats reset, items, slabs ------------------------------------------ */

#define PREFIX_BUCKETS 1024
#define PREFIX_MAX 65536 /* distinct prefixes counted; more are ignored */

struct prefix_entry {
    struct prefix_entry *next;
    uint64_t get, hit, set, del;
    uint32_t len;
    char p[];
};

struct prefix_stats {
    struct prefix_entry *b[PREFIX_BUCKETS];
    size_t n;
};

void stats_setup(struct server *srv)
{
    pthread_mutex_init(&srv->stats_mu, NULL);
    srv->prefix_delim =
        srv->opt.prefix_delimiter != NULL ? srv->opt.prefix_delimiter[0] : ':';
    atomic_init(&srv->detail_on, srv->opt.prefix_delimiter != NULL);
}

static void prefix_clear(struct server *srv)
{
    struct prefix_stats *ps = srv->prefixes;
    size_t i;

    if (ps == NULL)
        return;
    for (i = 0; i < PREFIX_BUCKETS; i++) {
        struct prefix_entry *e = ps->b[i], *nx;
        for (; e != NULL; e = nx) {
            nx = e->next;
            mdc_free(e);
        }
    }
    mdc_free(ps);
    srv->prefixes = NULL;
}

void stats_teardown(struct server *srv)
{
    prefix_clear(srv);
    pthread_mutex_destroy(&srv->stats_mu);
}

void stats_reset(struct server *srv)
{
    struct thread_stats t;
    struct store_stats s;

    stats_sum(srv, &t);
    store_get_stats(srv->store, &s);
    pthread_mutex_lock(&srv->stats_mu);
    srv->stats_base = t;
    srv->store_base = s;
    srv->listen_disabled_base_us = listen_disabled_us(srv);
    prefix_clear(srv);
    pthread_mutex_unlock(&srv->stats_mu);
}

void stats_collect_items(struct server *srv, stats_visit_fn fn, void *ctx)
{
    struct store_stats s, sb;
    struct thread_stats t;

    store_get_stats(srv->store, &s);
    if (s.curr_items == 0)
        return; /* memcached lists only classes holding items */
    stats_sum(srv, &t);
    pthread_mutex_lock(&srv->stats_mu);
    sb = srv->store_base;
    t.store_no_memory -= srv->stats_base.store_no_memory;
    pthread_mutex_unlock(&srv->stats_mu);
    emit_u64(fn, ctx, "items:1:number", s.curr_items);
    emit_u64(fn, ctx, "items:1:number_hot", 0);
    emit_u64(fn, ctx, "items:1:number_warm", 0);
    emit_u64(fn, ctx, "items:1:number_cold", s.curr_items);
    emit_u64(fn, ctx, "items:1:mem_requested", s.bytes);
    emit_u64(fn, ctx, "items:1:evicted", s.evictions - sb.evictions);
    emit_u64(fn, ctx, "items:1:evicted_unfetched",
             s.evicted_unfetched - sb.evicted_unfetched);
    emit_u64(fn, ctx, "items:1:outofmemory", t.store_no_memory);
    emit_u64(fn, ctx, "items:1:reclaimed", s.expired - sb.expired);
    emit_u64(fn, ctx, "items:1:expired_unfetched",
             s.expired_unfetched - sb.expired_unfetched);
}

void stats_collect_slabs(struct server *srv, stats_visit_fn fn, void *ctx)
{
    struct store_stats s;
    struct thread_stats t, tb;

    store_get_stats(srv->store, &s);
    stats_sum(srv, &t);
    pthread_mutex_lock(&srv->stats_mu);
    tb = srv->stats_base;
    pthread_mutex_unlock(&srv->stats_mu);
    if (s.curr_items > 0) {
        emit_u64(fn, ctx, "1:chunk_size", srv->opt.max_item_size);
        emit_u64(fn, ctx, "1:chunks_per_page", 1);
        emit_u64(fn, ctx, "1:total_pages", s.curr_items);
        emit_u64(fn, ctx, "1:total_chunks", s.curr_items);
        emit_u64(fn, ctx, "1:used_chunks", s.curr_items);
        emit_u64(fn, ctx, "1:free_chunks", 0);
        emit_u64(fn, ctx, "1:free_chunks_end", 0);
        emit_u64(fn, ctx, "1:get_hits", t.get_hits - tb.get_hits);
        emit_u64(fn, ctx, "1:cmd_set", t.cmd_set - tb.cmd_set);
        emit_u64(fn, ctx, "1:delete_hits", t.delete_hits - tb.delete_hits);
        emit_u64(fn, ctx, "1:incr_hits", t.incr_hits - tb.incr_hits);
        emit_u64(fn, ctx, "1:decr_hits", t.decr_hits - tb.decr_hits);
        emit_u64(fn, ctx, "1:cas_hits", t.cas_hits - tb.cas_hits);
        emit_u64(fn, ctx, "1:cas_badval", t.cas_badval - tb.cas_badval);
        emit_u64(fn, ctx, "1:touch_hits", t.touch_hits - tb.touch_hits);
    }
    emit_u64(fn, ctx, "active_slabs", s.curr_items > 0 ? 1 : 0);
    emit_u64(fn, ctx, "total_malloced", s.bytes);
}

/* ---- stats detail ----------------------------------------------------------- */

bool stats_detail_on(struct server *srv)
{
    return atomic_load_explicit(&srv->detail_on, memory_order_relaxed);
}

void stats_detail_set(struct server *srv, bool on)
{
    atomic_store_explicit(&srv->detail_on, on, memory_order_relaxed);
}

void stats_detail_count(struct server *srv, const char *key, uint32_t klen,
                        enum stats_detail_op op, bool hit)
{
    const char *d = memchr(key, srv->prefix_delim, klen);
    struct prefix_entry *e;
    uint32_t len, h = 2166136261u, i;

    if (d == NULL)
        return; /* no prefix: not counted, as memcached */
    len = (uint32_t)(d - key);
    for (i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    pthread_mutex_lock(&srv->stats_mu);
    if (srv->prefixes == NULL)
        srv->prefixes = mdc_calloc(1, sizeof(*srv->prefixes));
    if (srv->prefixes == NULL)
        goto out;
    for (e = srv->prefixes->b[h % PREFIX_BUCKETS]; e != NULL; e = e->next)
        if (e->len == len && memcmp(e->p, key, len) == 0)
            break;
    if (e == NULL) {
        if (srv->prefixes->n >= PREFIX_MAX)
            goto out;
        e = mdc_calloc(1, sizeof(*e) + len + 1);
        if (e == NULL)
            goto out;
        memcpy(e->p, key, len);
        e->len = len;
        e->next = srv->prefixes->b[h % PREFIX_BUCKETS];
        srv->prefixes->b[h % PREFIX_BUCKETS] = e;
        srv->prefixes->n++;
    }
    switch (op) {
    case DETAIL_GET:
        e->get++;
        if (hit)
            e->hit++;
        break;
    case DETAIL_SET: e->set++; break;
    case DETAIL_DEL: e->del++; break;
    }
out:
    pthread_mutex_unlock(&srv->stats_mu);
}

void stats_detail_dump(struct server *srv, stats_line_fn fn, void *ctx)
{
    char line[400];
    size_t i;

    pthread_mutex_lock(&srv->stats_mu);
    for (i = 0; srv->prefixes != NULL && i < PREFIX_BUCKETS; i++) {
        struct prefix_entry *e;
        for (e = srv->prefixes->b[i]; e != NULL; e = e->next) {
            snprintf(line, sizeof(line),
                     "PREFIX %.*s get %" PRIu64 " hit %" PRIu64 " set %" PRIu64
                     " del %" PRIu64,
                     (int)(e->len > 250 ? 250 : e->len), e->p, e->get, e->hit,
                     e->set, e->del);
            fn(ctx, line);
        }
    }
    pthread_mutex_unlock(&srv->stats_mu);
}

/* ---- stats cachedump ------------------------------------------------------ */

struct cachedump {
    char *buf;       /* NUL-separated lines */
    size_t len, cap;
    size_t out;      /* bytes of the reply: each line and "\r\n" */
    uint32_t limit, n;
    bool full;
};

/* Under a class's read lock: format into the buffer, call nothing else. */
static void cachedump_record(void *ctx, struct store *st,
                             const struct record *r)
{
    struct cachedump *d = ctx;
    const unsigned char *k = record_key(r);
    uint32_t klen = record_klen(r);
    char line[320];
    int n;

    if (d->full || !mctext_key_ok(k, klen))
        return;
    n = snprintf(line, sizeof(line), "ITEM %.*s [%" PRIu32 " b; %" PRId64
                                     " s]",
                 (int)klen, (const char *)k, record_vlen(r),
                 record_expiry_wall(st, r));
    /* each line goes out with "\r\n"; "END\r\n" follows */
    if (n < 0 || d->out + (size_t)n + 2 + 5 > STATS_CACHEDUMP_MAX) {
        d->full = true;
        return;
    }
    if (d->len + (size_t)n + 1 > d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 4096;
        char *nb;

        while (nc < d->len + (size_t)n + 1)
            nc *= 2;
        nb = mdc_realloc(d->buf, nc);
        if (nb == NULL) {
            d->full = true;
            return;
        }
        d->buf = nb;
        d->cap = nc;
    }
    memcpy(d->buf + d->len, line, (size_t)n + 1);
    d->len += (size_t)n + 1;
    d->out += (size_t)n + 2;
    if (++d->n == d->limit)
        d->full = true;
}

void stats_cachedump(struct server *srv, uint32_t cls, uint32_t limit,
                     stats_line_fn fn, void *ctx)
{
    struct cachedump d = {NULL, 0, 0, 0, limit, 0, false};
    uint32_t nclasses, c;
    size_t off;

    if (cls != 1)
        return;
    nclasses = store_walk_classes(srv->store);
    for (c = 0; c < nclasses && !d.full; c++)
        store_walk_class(srv->store, nclasses, c, cachedump_record, &d);
    for (off = 0; off < d.len; off += strlen(d.buf + off) + 1)
        fn(ctx, d.buf + off);
    mdc_free(d.buf);
}
