/*
 * store_evict.c - the memory limit: reserving a record's bytes before it
 * is allocated, evicting to make room, and a live change of the limit.
 * Runs with no lock held; each sample takes one stripe.  A policy (level
 * 3, store_policy.h); the bits it ranks by and the ghosts are written at
 * a link by store_hooks.c.
 *
 * Which record goes (docs/threads.md, "Eviction"): of a sample of about
 * 12 records (whole buckets), the one of highest rank:
 *   1. an expired record;
 *   2. a record never read since it was stored, older than a tenth of
 *      the records (its age on the version clock, cas_clock() - version
 *      in 48 bits: how many stores came after it): the oldest such, so
 *      that most records read once or never (one-hit wonders, scans)
 *      leave first;
 *   3. a record read: the one longest unread, that time divided by how
 *      many times it was read (1..3, counted at most once per atime
 *      refresh: two ~1.07 s ticks, ATIME_GRAIN);
 *   4. a record on probation, not yet read and younger than that tenth.
 * Within a class the age is weighed by the record's size (rank_age).
 * A key evicted leaves a ghost, a 16-bit fingerprint; a store of a key
 * that has one starts as read once (it came back: it is wanted).
 */
#include "config.h"

#include "store_policy.h"
#include "alloc.h"

/* a sample: buckets until this many records are ranked (a bucket holds
 * one or two records when they are large, eight when small; a record
 * ranked is a cache miss, the most of what an eviction costs) */
#define EVICT_SAMPLE 12
#define EVICT_PROBE 64
/* a record is on probation for its first 1/PROBATION_SHARE of records */
#define PROBATION_SHARE 10

/* ranks: the class in the top two bits, the age within it below */
#define RANK_AGE ((UINT64_C(1) << 62) - 1)
#define RANK_READ (UINT64_C(1) << 62)
#define RANK_UNREAD_OLD (UINT64_C(2) << 62)
#define RANK_EXPIRED UINT64_MAX

struct evict_pick {
    struct store *st;
    uint32_t now;    /* store seconds */
    uint64_t clock;  /* cas_clock() */
    uint64_t window; /* the probation: records younger than this */
    struct record *best;
    uint64_t best_rank;
    unsigned ranked; /* records looked at */
};

static uint64_t rnd(struct store *st)
{
    /* splitmix64 over a shared counter: cheap, good enough for sampling */
    uint64_t z = atomic_fetch_add_explicit(&st->evict_seed,
                                           0x9E3779B97F4A7C15ull,
                                           memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * An age within a class weighed by the record's size, in 16-byte units of
 * its header, key and value (the flags and tags are left out: the tags are
 * on another cache line, and a sample must not miss on it).  Of two
 * records as old, the larger goes first; a record twice another's size
 * goes when half as old.  Size-blind, the 0.3 % of 10-100 KiB objects of
 * the miss-ratio bench's `wide` trace pushed out many small ones, where
 * memcached's per-class LRU evicts in the class of the store: 1.04x its
 * misses at equal RSS (docs/performance.md, "Miss ratio").
 */
static inline uint64_t rank_age(uint64_t a, const struct record *r)
{
    uint64_t w = ((uint64_t)sizeof(struct record) + rec_klen(r) + r->vlen) /
                 16;

    if (a > RANK_AGE / w)
        return RANK_AGE;
    return a * w;
}

/* How much a record deserves to go (the file's comment): higher first. */
static uint64_t evict_rank(const struct evict_pick *p, const struct record *r)
{
    if (rec_dead(p->st, r, p->now))
        return RANK_EXPIRED;
    uint8_t e = __atomic_load_n(&r->evb, __ATOMIC_RELAXED);
    /* stores since its version, both CAS_BITS wide (cas_klen's klen bits
     * are not part of it) */
    uint64_t age = (p->clock - rec_cas(r)) & CAS_MASK;
    if (age >> (CAS_BITS - 1)) /* a version above the clock, set by a
                                * restore: as if just out of probation */
        age = p->window + 1;
    unsigned reads = e & EVB_READS;
    if (reads == 0)
        return age > p->window ? RANK_UNREAD_OLD | rank_age(age, r)
                               : rank_age(age, r);
    /* unread since: its age now less its age at the last read */
    uint64_t then = evb_age_of(e >> EVB_AGE_SHIFT);
    uint64_t idle = age > then ? age - then : 0;
    return RANK_READ | rank_age(idle / reads, r);
}

/* Ask for a record's header: its first byte and its last (evb), which
 * are on two cache lines when a 96-byte record starts 32 bytes into one. */
static inline void prefetch_rec(const struct record *r)
{
    __builtin_prefetch(r);
    __builtin_prefetch(&r->evb);
}

/* deep enough for any red-black tree of 2^32 records (height <= 64) */
#define PICK_STACK 72

/*
 * Rank the records of bucket b, keeping the highest in p->best
 * (referenced).  Returns whether b had records.
 *
 * The records are walked depth first with both children asked for before
 * either is ranked, not in key order (rb_first, rb_next): each record is a
 * likely cache miss, and this overlaps a level's misses instead of taking
 * them one after another (the order does not change the pick but for
 * equal ranks).
 */
static int evict_pick(struct store *st, uint32_t b, struct evict_pick *p)
{
    mdc_rwlock_t *l = lock_of(st, b);
    struct record *stack[PICK_STACK];
    unsigned top = 0;

    mdc_rdlock(l);
    struct record *r = rt_root(&st->buckets[b]);
    if (r == NULL) {
        mdc_unlock(l);
        return 0;
    }
    stack[top++] = r;
    while (top > 0) {
        r = stack[--top];
        struct record *lt = rt_left(r), *rt = rt_right(r);
        if (rt != NULL && top < PICK_STACK) {
            prefetch_rec(rt);
            stack[top++] = rt;
        }
        if (lt != NULL && top < PICK_STACK) {
            prefetch_rec(lt);
            stack[top++] = lt;
        }
        p->ranked++;
        uint64_t rank = evict_rank(p, r);
        if (p->best == NULL || rank > p->best_rank) {
            if (p->best != NULL)
                store_release(st, p->best);
            rec_incref(r);
            p->best = r;
            p->best_rank = rank;
        }
    }
    mdc_unlock(l);
    return 1;
}

/*
 * Evict one record: sample non-empty buckets until EVICT_SAMPLE records
 * are ranked, pick the record of highest rank, then remove it under its bucket's write lock if it is
 * still there.  When the samples find only empty buckets (a sparse table:
 * few large records) every bucket is walked from a random one until a
 * record turns up.  Returns 0 if something was removed (or a racing thread
 * removed it first), -1 if no bucket holds a record.
 */
static int evict_one(struct store *st)
{
    struct evict_pick p = {
        .st = st,
        .now = now_s(st),
        .clock = cas_clock(),
        .window = atomic_load_explicit(&st->curr_items,
                                       memory_order_relaxed) /
                  PROBATION_SHARE,
    };
    int found_any = 0;

    /* the next sample's bucket is drawn, and its slot asked for, before
     * this one is ranked: that miss overlaps this bucket's */
    uint32_t next = (uint32_t)(rnd(st) % nbuckets_now(st));
    __builtin_prefetch(&st->buckets[next]);
    for (int s = 0; s < EVICT_SAMPLE && p.ranked < EVICT_SAMPLE; s++) {
        uint32_t nb = nbuckets_now(st);
        uint32_t start = next % nb;
        next = (uint32_t)(rnd(st) % nb);
        __builtin_prefetch(&st->buckets[next]);
        for (int i = 0; i < EVICT_PROBE; i++) {
            if (evict_pick(st, (start + (uint32_t)i) % nb, &p)) {
                found_any = 1;
                break;
            }
        }
    }
    if (!found_any) {
        uint32_t nb = nbuckets_now(st);
        uint32_t start = (uint32_t)(rnd(st) % nb);
        for (uint32_t i = 0; i < nb && p.best == NULL; i++)
            (void)evict_pick(st, (start + i) % nb, &p);
    }
    struct record *best = p.best;
    if (best == NULL)
        return -1;

    uint64_t h = store_hash(rec_key(best), rec_klen(best));
    mdc_rwlock_t *l = stripe_of(st, h); /* best may have moved bucket */
    bool evicted = false;
    mdc_wrlock(l);
    if (rec_rflags(best) & R_LINKED) {
        if (rec_dead(st, best, p.now)) {
            do_expire(st, best, h);
        } else {
            announce(st, EV_EVICT, best, h);
            atomic_fetch_add_explicit(&st->evictions, 1, memory_order_relaxed);
            /* memcached skips a referenced record at the LRU tail
             * (lrutail_reflocked); here it goes, its memory comes back
             * when the reader lets go (our pick holds one count) */
            if ((__atomic_load_n(&best->refcnt, __ATOMIC_RELAXED) &
                 ~REF_INDEX) > 1 ||
                mdc_held_anywhere(best))
                atomic_fetch_add_explicit(&st->lrutail_reflocked, 1,
                                          memory_order_relaxed);
            if (!(rec_rflags(best) & R_FETCHED))
                atomic_fetch_add_explicit(&st->evicted_unfetched, 1,
                                          memory_order_relaxed);
            ghost_put(st, h);
            do_unlink(st, h, best);
            evicted = true;
        }
        /* the unlink left best's bits in its bucket's filter; the sample
         * has just read the records that stay (store_index.h) */
        do_refilter_b(st, bucket_idx(st, h));
    }
    mdc_unlock(l);
    if (evicted) {
        store_evict_fn fn = __atomic_load_n(&st->evict_log, __ATOMIC_ACQUIRE);

        if (fn != NULL) /* a watcher: our pick's count keeps best whole */
            fn(__atomic_load_n(&st->evict_ctx, __ATOMIC_RELAXED), st, best);
    }
    store_release(st, best);
    return 0;
}

/*
 * Reserve 'size' bytes under the limit, evicting if allowed.  Called with
 * no lock held.  Returns 0 or ST_NO_MEMORY (nothing reserved then).
 *
 * Without -M it evicts until the reservation fits: a store that fits under
 * the limit fails only when nothing linked is left to evict, that is when
 * the memory is held by records that readers still reference (replies
 * being sent, deleted or replaced records not yet released).  Those
 * refusals are counted (store_stats.nomem_held).
 */
/* The allocator's resident bytes beyond the records' sizes (free parts of
 * shared pages, alloc.h), counted against the limit so eviction makes
 * room for them too; at most an eighth of the limit, so that a store
 * never evicts much to cover bytes eviction cannot give back. */
static inline int64_t mem_overhead(int64_t lim)
{
    int64_t w = (int64_t)mdc_rec_overhead();
    return w < lim / 8 ? w : lim / 8;
}

int mem_reserve(struct store *st, size_t size)
{
    int64_t lim = atomic_load_explicit(&st->mem_limit, memory_order_relaxed);
    int64_t m = atomic_fetch_add_explicit(&st->mem, (int64_t)size,
                                          memory_order_relaxed) +
                (int64_t)size;
    if (m + mem_overhead(lim) <= lim)
        return 0;
    if (st->cfg.no_evict && m <= lim)
        return 0; /* -M refuses for the records' own bytes only */
    if (!st->cfg.no_evict && (int64_t)size <= lim) {
        int evicted = 0, fits = 0;
        /* bounded only against a livelock with concurrent stores */
        for (int i = 0; i < RETRY_LIMIT; i++) {
            /* our reservation is in mem: once mem is under the limit it
             * fits, whatever other stores reserve after this load (a
             * second look at mem, after the loop, refused stores that
             * concurrent reservations pushed over again: 3-93 refusals
             * per overfill load with 4 threads and nothing held) */
            if (atomic_load_explicit(&st->mem, memory_order_relaxed) +
                    mem_overhead(lim) <= lim) {
                fits = 1;
                break;
            }
            if (evict_one(st) < 0)
                break;
            evicted = 1;
        }
        /* memcached's direct_reclaims: this store, not a background
         * thread, made the room (here every eviction is such a one) */
        if (evicted)
            atomic_fetch_add_explicit(&st->direct_reclaims, 1,
                                      memory_order_relaxed);
        if (fits ||
            atomic_load_explicit(&st->mem, memory_order_relaxed) <= lim)
            return 0;
        atomic_fetch_add_explicit(&st->nomem_held, 1, memory_order_relaxed);
    }
    atomic_fetch_sub_explicit(&st->mem, (int64_t)size, memory_order_relaxed);
    return ST_NO_MEMORY;
}

int store_set_mem_limit(struct store *st, size_t bytes)
{
    if (bytes == 0 || bytes > INT64_MAX)
        return ST_INVALID;
    atomic_store_explicit(&st->mem_limit, (int64_t)bytes,
                          memory_order_relaxed);
    for (int i = 0; i < RETRY_LIMIT; i++) {
        if (atomic_load_explicit(&st->mem, memory_order_relaxed) <=
            (int64_t)bytes)
            return ST_OK;
        if (evict_one(st) < 0)
            break;
    }
    return atomic_load_explicit(&st->mem, memory_order_relaxed) <=
                   (int64_t)bytes
               ? ST_OK
               : ST_NO_MEMORY;
}
