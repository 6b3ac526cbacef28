/*
 * store.c - the store's life: setup and teardown, the clock, the hook,
 * status and event names, the counters read out (store_get_stats).  The
 * store is in levels, each file calling only its own level and those
 * below (store_record.h lists them; tools/check-layers.sh checks it):
 *
 *   1 the record      store_record.c   layout, allocation, accessors,
 *                                      references and their release (the
 *                                      one place tokens are dropped), the
 *                                      key hash, the CAS clock
 *   2 the index       store_forest.c   the record forest: buckets of
 *                                      trees, finding a live record,
 *                                      linking, unlinking, table growth
 *                     store_hooks.c    what a link enters for the policies:
 *                                      expiry wheel entries, eviction bits
 *                     tags.c           the tag forest
 *   3 the policies    store_expiry.c   deadlines, flush (delayed too), the
 *                                      sweeper that turns the expiry wheel
 *                     store_evict.c    the memory limit: reserving before
 *                                      an allocation, sampled eviction
 *                     store_write.c    the write steps the operations
 *                                      share: store, replace by a derived
 *                                      value, invalidate, begin a write
 *   4 the operations  store_get.c      get, gat, visit, meta get, batched
 *                                      gets, walks by hash class
 *                     store_put.c      storage commands, touch, delete,
 *                                      invalidate, restore from a dump
 *                     store_counter.c  incr/decr and the atomic counters
 *                     store_tag.c      get, delete and stale by tag, tag
 *                                      stacks
 *   5 the life        store.c, store_check.c (the consistency check of
 *                     both forests), dump.c
 *
 *   rbtree.c         the bucket trees' red-black tree (a 24-byte node)
 *
 * Lock discipline (docs/threads.md): at most one record-bucket lock is held
 * at a time; tag-bucket locks (tags.c) nest inside it and are innermost.
 * Allocation that may evict happens with no lock held.
 */
#include "config.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "store_hash.h"
#include "store_policy.h"
#include "tags.h"
#include "testhook.h"

#define DEFAULT_MEM_LIMIT ((size_t)1024 << 20)
#define DEFAULT_MAX_ITEM (1u << 20)
#define DEFAULT_MAX_TAGS 64u
#define DEFAULT_TAG_BUCKETS 64u
#define DEFAULT_TAG_REPLY ((size_t)16 << 20)
#define DEFAULT_NLOCKS 1024u
#define MIN_BUCKETS 1024u
#define INITIAL_BUCKETS 65536u
#define MAX_BUCKETS (1u << 30)
#define GHOST_MIN 1024u
#define GHOST_MAX (1u << 28)

const char *store_strstatus(int status)
{
    switch (status) {
    case ST_OK: return "ok";
    case ST_NOT_FOUND: return "not found";
    case ST_EXISTS: return "exists";
    case ST_NOT_STORED: return "not stored";
    case ST_TOO_LARGE: return "value too large";
    case ST_KEY_INVALID: return "key too long";
    case ST_NO_MEMORY: return "out of memory";
    case ST_TOO_MANY_TAGS: return "too many tags";
    case ST_NOT_NUMBER: return "value is not a number";
    case ST_TRUNCATED: return "reply truncated";
    case ST_INVALID: return "invalid argument";
    default: return "unknown status";
    }
}

const char *store_event_name(enum store_event ev)
{
    static const char *const names[] = {
#define X(e, s) s,
        STORE_EVENTS(X)
#undef X
    };
    return (unsigned)ev < EV__COUNT ? names[ev] : "?";
}

static uint64_t sys_mono_ns(void *ctx)
{
    (void)ctx;
    return store_sys_mono_ns(); /* store_record.h; now_ns() reads it inline */
}
static int64_t sys_wall_s(void *ctx)
{
    (void)ctx;
    return (int64_t)time(NULL);
}

struct store *store_setup(const struct store_config *cfg)
{
    struct store *st = mdc_calloc_aligned(64, sizeof(*st));
    if (st == NULL)
        return NULL;
    if (cfg != NULL)
        st->cfg = *cfg;
    struct store_config *c = &st->cfg;
    if (c->mem_limit == 0)
        c->mem_limit = DEFAULT_MEM_LIMIT;
    if (c->max_item_size == 0)
        c->max_item_size = DEFAULT_MAX_ITEM;
    if (c->max_tags == 0)
        c->max_tags = DEFAULT_MAX_TAGS;
    if (c->max_tags > 65535)
        c->max_tags = 65535;
    if (c->tag_buckets == 0)
        c->tag_buckets = DEFAULT_TAG_BUCKETS;
    c->tag_buckets = pow2_at_least(c->tag_buckets);
    if (c->tag_reply_limit == 0)
        c->tag_reply_limit = DEFAULT_TAG_REPLY;
    int explicit_buckets = c->nbuckets != 0;
    if (c->nbuckets == 0) {
        /* about eight smallest records per bucket when memory is full: a few
         * levels of tree, and under 8 bytes of bucket array per record */
        uint64_t want = c->mem_limit / (96 * 8);
        c->nbuckets = pow2_at_least(want < MIN_BUCKETS ? MIN_BUCKETS : want);
    }
    c->nbuckets = pow2_at_least(c->nbuckets);
    if (c->nbuckets > MAX_BUCKETS)
        c->nbuckets = MAX_BUCKETS;
    if (c->nlocks == 0)
        c->nlocks = DEFAULT_NLOCKS;
    c->nlocks = pow2_at_least(c->nlocks);
    if (c->nlocks > c->nbuckets)
        c->nlocks = c->nbuckets;
    /* the table starts small and grows by linear hashing up to nbuckets
     * (reserved, but its pages are only touched as buckets come into use);
     * an explicit bucket count (-b) is used as it is */
    uint32_t init = c->initial_buckets;
    if (init == 0)
        init = explicit_buckets ? c->nbuckets : INITIAL_BUCKETS;
    init = pow2_at_least(init);
    if (init < c->nlocks)
        init = c->nlocks;
    if (init > c->nbuckets)
        init = c->nbuckets;
    c->initial_buckets = init;
    atomic_store(&st->hstate, (uint64_t)init << 32);

    st->bmask = c->nbuckets - 1;
    st->lmask = c->nlocks - 1;
    st->clk.mono_ns = sys_mono_ns;
    st->clk.wall_s = sys_wall_s;
    st->clk_sys = true;
    /* store seconds begin with the wall clock's (while it is not set): a
     * deadline, the first store second beginning at or after its moment
     * (store_expiry.c), then falls on an absolute time's own second, and a
     * dump's whole seconds say it */
    {
        struct timespec w;
        clock_gettime(CLOCK_REALTIME, &w);
        uint64_t m = sys_mono_ns(NULL);
        st->epoch_ns = m > (uint64_t)w.tv_nsec ? m - (uint64_t)w.tv_nsec : m;
    }
    st->buckets = mdc_huge_calloc((size_t)c->nbuckets * sizeof(*st->buckets));
    /* the stripes are 64-byte aligned (readers.h): calloc promises 16
     * (jemalloc's size classes happened to align them, libc's malloc of
     * the sanitizer builds does not) */
    st->locks = mdc_calloc_aligned(_Alignof(mdc_rwlock_t),
                                   (size_t)c->nlocks * sizeof(*st->locks));
    st->tags = tags_setup(c->tag_buckets);
    /* ghosts: three slots per 448 bytes of the limit (2 B for every
     * 149 B), untouched until evictions begin; 1.5 slots rather than 1
     * missed less on every trace of bench/missratio (docs/threads.md) */
    uint64_t gw = c->mem_limit / 448 * 3 / 2;
    st->gmask = pow2_at_least(gw < GHOST_MIN ? GHOST_MIN
                              : gw > GHOST_MAX ? GHOST_MAX : gw) - 1;
    st->ghost = mdc_huge_calloc(((size_t)st->gmask + 1) * sizeof(*st->ghost));
    if (st->buckets == NULL || st->locks == NULL ||
        st->tags == NULL || st->ghost == NULL)
        goto fail;
    for (uint32_t i = 0; i < c->nlocks; i++)
        mdc_rwlock_init(&st->locks[i]);
    if (c->sweep_interval_ms != 0) { /* the expiry wheel (store_expiry.c) */
        st->wheels = mdc_calloc(c->nlocks, sizeof(*st->wheels));
        st->wlost = mdc_calloc(c->nlocks, 1);
        if (st->wheels == NULL || st->wlost == NULL)
            goto fail;
    }
    st->fixed_bytes = sizeof(*st) +
                      (uint64_t)c->nlocks *
                          sizeof(*st->locks) +
                      tags_fixed_bytes(st->tags) + /* + buckets in use */
                      (st->wheels != NULL
                           ? (uint64_t)c->nlocks * (sizeof(*st->wheels) + 1)
                           : 0) +
                      ((uint64_t)st->gmask + 1) * sizeof(*st->ghost);
    atomic_store(&st->evict_seed, 0x9E3779B97F4A7C15ull);
    atomic_store(&st->mem_limit, (int64_t)c->mem_limit);
    pthread_mutex_init(&st->sweep_mu, NULL);
    pthread_mutex_init(&st->grow_mu, NULL);
    pthread_mutex_init(&st->retire_mu, NULL);
    pthread_cond_init(&st->sweep_cv, NULL);
    if (c->sweep_interval_ms != 0) {
        sigset_t all, old;
        int e;

        /* the sweeper takes no signal: a process's signals are the
         * caller's (the daemon's main thread) */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        e = pthread_create(&st->sweeper, NULL, sweeper_main, st);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0)
            goto fail;
        st->sweeper_running = 1;
    }
    return st;
fail:
    if (st->locks)
        mdc_free(st->locks);
    mdc_free(st->wheels);
    mdc_free(st->wlost);
    mdc_huge_free(st->buckets, (size_t)c->nbuckets * sizeof(*st->buckets));
    mdc_huge_free(st->ghost, ((size_t)st->gmask + 1) * sizeof(*st->ghost));
    if (st->tags != NULL) {
        int64_t tmem = 0;
        tags_teardown(st->tags, &tmem);
    }
    mdc_free(st);
    return NULL;
}

/* Post-order walk through child links only (depth <= 2 log2 n). */
static void free_tree(struct store *st, struct record *r)
{
    while (r != NULL) {
        free_tree(st, rt_left(r));
        struct record *right = rt_right(r);
        rec_clear_rflag(r, R_LINKED);
        if (rec_rflags(r) & R_TAGGED) {
            struct tag_area *ta = rec_tags(r);
            for (uint32_t i = 0; i < ta->ntags; i++)
                ta->e[i].tv = NULL;
        }
        rec_unindex(st, r);
        r = right;
    }
}

void store_teardown(struct store *st)
{
    if (st == NULL)
        return;
    if (st->sweeper_running) {
        pthread_mutex_lock(&st->sweep_mu);
        st->sweep_stop = 1;
        pthread_cond_signal(&st->sweep_cv);
        pthread_mutex_unlock(&st->sweep_mu);
        testhook_stop_asked("sweeper");
        pthread_join(st->sweeper, NULL);
    }
    wheel_teardown(st);
    st->hook = NULL;
    /* no other thread may use the store now: drop every record without
     * rebalancing trees or unlinking tags one by one (tags_teardown frees
     * the whole tag index) */
    for (uint32_t b = 0; b < nbuckets_now(st); b++) {
        free_tree(st, rt_root(&st->buckets[b]));
        st->buckets[b].w = 0;
    }
    int64_t tmem = 0;
    tags_teardown(st->tags, &tmem);
    store_account(st, tmem, 1);
    reclaim_retired(st); /* what is still held stays (as a count did) */
    pthread_mutex_destroy(&st->retire_mu);
    for (uint32_t i = 0; i <= st->lmask; i++)
        mdc_rwlock_destroy(&st->locks[i]);
    pthread_mutex_destroy(&st->sweep_mu);
    pthread_mutex_destroy(&st->grow_mu);
    pthread_cond_destroy(&st->sweep_cv);
    mdc_free(st->locks);
    mdc_huge_free(st->buckets, (size_t)st->cfg.nbuckets * sizeof(*st->buckets));
    mdc_huge_free(st->ghost, ((size_t)st->gmask + 1) * sizeof(*st->ghost));
    mdc_free(st);
}

void store_set_hook(struct store *st, store_hook_fn fn, void *ctx)
{
    st->hook = fn;
    st->hook_ctx = ctx;
}

void store_set_evict_log(struct store *st, store_evict_fn fn, void *ctx)
{
    if (fn != NULL)
        __atomic_store_n(&st->evict_ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&st->evict_log, fn, __ATOMIC_RELEASE);
}

void store_set_clock(struct store *st, const struct store_clock *clk)
{
    /* under the sweeper's mutex: it reads the clock after its wait */
    pthread_mutex_lock(&st->sweep_mu);
    st->clk = *clk;
    st->clk_sys = clk->mono_ns == sys_mono_ns;
    st->epoch_ns = clk->mono_ns(clk->ctx);
    st->wheel_done = 0; /* store seconds begin again at 1 */
    pthread_mutex_unlock(&st->sweep_mu);
}

const struct store_config *store_config(const struct store *st)
{
    return &st->cfg;
}

void store_set_generation(struct store *st, uint64_t gen)
{
    atomic_store(&st->generation, gen);
}

uint64_t store_generation(const struct store *st)
{
    return atomic_load(&((struct store *)st)->generation);
}

size_t store_top_tags(struct store *st, struct store_tag_count *out, size_t n)
{
    return tags_top(st->tags, out, n);
}

void store_get_stats(struct store *st, struct store_stats *o)
{
    memset(o, 0, sizeof(*o));
#define LD(f) atomic_load_explicit(&st->f, memory_order_relaxed)
    o->curr_items = LD(curr_items);
    o->total_items = LD(total_items);
    int64_t m = LD(mem), tm = LD(tag_mem);
    o->bytes = m > 0 ? (uint64_t)m : 0;
    o->tag_bytes = tm > 0 ? (uint64_t)tm : 0;
    o->limit_maxbytes = (uint64_t)atomic_load_explicit(&st->mem_limit,
                                                       memory_order_relaxed);
    o->evictions = LD(evictions);
    o->expired = LD(expired);
    o->expired_unfetched = LD(expired_unfetched);
    o->evicted_unfetched = LD(evicted_unfetched);
    o->get_expired = LD(get_expired);
    o->nomem_held = LD(nomem_held);
    o->direct_reclaims = LD(direct_reclaims);
    o->lrutail_reflocked = LD(lrutail_reflocked);
    o->get_flushed = LD(get_flushed);
    o->flush_reclaimed = LD(flush_reclaimed);
    o->flush_pending = (LD(flush_at) != 0) +
                       (LD(flush_gen) != LD(flush_walked));
    o->tagged_items = LD(tagged_items);
    o->tag_links = LD(tag_links);
#undef LD
    uint64_t nk, nv, nl;
    tags_counts(st->tags, &nk, &nv, &nl);
    o->tag_keys = nk;
    o->tag_values = nv;
    o->nbuckets = nbuckets_now(st);
    o->fixed_bytes = st->fixed_bytes + o->nbuckets * sizeof(*st->buckets) +
                     (uint64_t)atomic_load_explicit(&st->wheel_bytes,
                                                    memory_order_relaxed);
}
