/*
 * store_index.h - the store's level 2, the index (store_record.h lists the
 * levels): the buckets of red-black trees under striped locks, finding a
 * live record, linking and unlinking (store_forest.c), the tag forest
 * (tags.h), and the hooks a link or a deadline's change calls: the expiry
 * wheel's entries and the eviction sampler's link bits and ghosts
 * (store_hooks.c).  The index calls nothing of the policies above it: the
 * expiry wheel's sweeper and the sampler (store_expiry.c, store_evict.c)
 * read what the hooks write.
 */
#ifndef MDC_STORE_INDEX_H
#define MDC_STORE_INDEX_H

#include <assert.h>

#include "store_hash.h"
#include "store_record.h"
#include "tags.h"

/*
 * A bucket: one word, the root of the red-black tree of its records,
 * ordered by (klen, key), and, where pointers leave their top 16 bits
 * unused (RT_FILTER), a filter of the records' hashes in those bits: a
 * record sets two of the 16 (rt_fbits()), a lookup whose two bits are not
 * both set has no record in the bucket and walks no tree.  With memory
 * full a bucket holds about five to eight records (store.c sizes the
 * table), so a key that is not there was a walk of two to four records,
 * each a cache miss; the filter turns about three in four of those walks
 * into none, in the word the lookup reads anyway, at no memory.
 *
 * The filter holds at least the bits of the records in the tree: a link
 * sets its record's bits; an unlink leaves them (an empty tree clears
 * all), so a bit can be stale, costing only a walk; eviction, which has
 * just read the bucket's records, and a split recompute them
 * (rt_refilter()).  The word is read and written under the bucket's lock
 * like the tree.
 */
#if UINTPTR_MAX == UINT64_MAX && defined(__linux__) &&                        \
    (defined(__x86_64__) || defined(__aarch64__))
/* user addresses below 2^48: Linux maps above only when asked (a hint) */
#define RT_FILTER 1
#define RT_PTR_MASK ((UINT64_C(1) << 48) - 1)
#else
#define RT_FILTER 0
#define RT_PTR_MASK (~(uintptr_t)0)
#endif
struct rtree {
    uintptr_t w; /* root | filter << 48 */
};

/* h's bits in a bucket's filter: two of 16, from hash bits no index or
 * wheel uses (the bucket and stripe take the low 32, the wheel and the
 * ghosts' fingerprint the top 16) */
static inline uintptr_t rt_fbits(uint64_t h)
{
#if RT_FILTER
    return (uintptr_t)(UINT64_C(1) << (48 + ((h >> 32) & 15)) |
                       UINT64_C(1) << (48 + ((h >> 36) & 15)));
#else
    (void)h;
    return 0;
#endif
}

/* ---- the bucket trees (rbtree.h) --------------------------------------- */
static inline struct record *rt_root(const struct rtree *t)
{
    return (struct record *)(t->w & RT_PTR_MASK);
}
/* Whether the bucket may hold a record of hash h (0: it holds none). */
static inline int rt_may_hold(const struct rtree *t, uint64_t h)
{
    uintptr_t f = rt_fbits(h);
    return (t->w & f) == f;
}
/* the tree as rbtree.h's root, to give back with rt_put() */
static inline struct mdc_rb_root rt_get(const struct rtree *t)
{
    struct mdc_rb_root x = {(struct mdc_rb_node *)rt_root(t)};
    return x;
}
/* Put a tree rbtree.h changed back, with filter bits 'f' more (an empty
 * tree keeps none). */
static inline void rt_put(struct rtree *t, struct mdc_rb_root x, uintptr_t f)
{
    if (x.node == NULL)
        t->w = 0;
    else
        t->w = (t->w & ~RT_PTR_MASK) | f | (uintptr_t)x.node;
}
static inline struct record *rt_left(const struct record *r)
{
    return (struct record *)r->rb.child[MDC_RB_LEFT];
}
static inline struct record *rt_right(const struct record *r)
{
    return (struct record *)r->rb.child[MDC_RB_RIGHT];
}
static inline struct record *rt_first(const struct rtree *t)
{
    struct mdc_rb_root x = rt_get(t);
    return (struct record *)mdc_rb_first(&x);
}
static inline struct record *rt_next(const struct record *r)
{
    return (struct record *)mdc_rb_next(&r->rb);
}
static inline int rt_empty(const struct rtree *t)
{
    return rt_root(t) == NULL;
}
static inline void rt_remove(struct rtree *t, struct record *r)
{
    struct mdc_rb_root x = rt_get(t);
    mdc_rb_erase(&x, &r->rb);
    rt_put(t, x, 0);
}
static inline int rt_verify(const struct rtree *t, const char **why)
{
    struct mdc_rb_root x = rt_get(t);
    return mdc_rb_verify(&x, why);
}
/* The trees' order: key length, then the key's 8-byte words as integers,
 * then its last bytes (any total order will do; this one needs no call
 * for short keys).  No hash in the header: a bucket holds one record, up
 * to about eight at the table's maximum, and a small record's key shares
 * the header's cache line. */
static inline int rec_keycmp(const void *key, uint32_t klen,
                             const struct record *n)
{
    uint32_t nk = rec_klen(n);
    if (klen != nk)
        return klen < nk ? -1 : 1;
    const unsigned char *a = key, *b = n->data;
    for (; klen >= 8; a += 8, b += 8, klen -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y)
            return x < y ? -1 : 1;
    }
    return klen ? memcmp(a, b, klen) : 0;
}
/* Insert r, of hash h, whose key t does not hold. */
static inline void rt_insert(struct rtree *t, struct record *r, uint64_t h)
{
    struct mdc_rb_root x = rt_get(t);
    struct mdc_rb_node **link = &x.node, *parent = NULL;
    uint32_t klen = rec_klen(r);
#if RT_FILTER
    assert(((uintptr_t)r & ~RT_PTR_MASK) == 0);
#endif
    while (*link != NULL) {
        parent = *link;
        link = rec_keycmp(r->data, klen, (struct record *)parent) < 0
                   ? &parent->child[MDC_RB_LEFT]
                   : &parent->child[MDC_RB_RIGHT];
    }
    mdc_rb_link(&r->rb, parent, link);
    mdc_rb_insert_fixup(&x, &r->rb);
    rt_put(t, x, rt_fbits(h));
}
#define RT_FOREACH(r, t) for ((r) = rt_first(t); (r) != NULL; (r) = rt_next(r))
#define RT_FOREACH_SAFE(r, t, nx)                                              \
    for ((r) = rt_first(t); (r) != NULL && ((nx) = rt_next(r), 1); (r) = (nx))


/*
 * The table grows by linear hashing: 'n' buckets plus 'split' of the next
 * doubling.  Bucket b (< split) has been split into b and b + n.  Since
 * n >= nlocks, b and b + n share a lock stripe (index & lmask), which is
 * also (hash & lmask): a key's stripe never changes, and a bucket is only
 * split under its stripe's write lock, so bucket_idx() is exact for any
 * caller holding the key's stripe (read or write).
 */
static inline uint32_t bucket_idx(struct store *st, uint64_t h)
{
    uint64_t s = atomic_load_explicit(&st->hstate, memory_order_relaxed);
    uint32_t n = (uint32_t)(s >> 32), split = (uint32_t)s;
    uint32_t b = (uint32_t)h & (n - 1);
    if (b < split)
        b = (uint32_t)h & (2 * n - 1);
    return b;
}
/* buckets in use now (grows; never above cfg.nbuckets) */
static inline uint32_t nbuckets_now(struct store *st)
{
    uint64_t s = atomic_load_explicit(&st->hstate, memory_order_relaxed);
    return (uint32_t)(s >> 32) + (uint32_t)s;
}
static inline mdc_rwlock_t *stripe_of(struct store *st, uint64_t h)
{
    return &st->locks[(uint32_t)h & st->lmask];
}
static inline mdc_rwlock_t *lock_of(struct store *st, uint32_t b)
{
    return &st->locks[b & st->lmask];
}

static inline void announce(struct store *st, enum store_event ev,
                            struct record *r, uint64_t h)
{
    if (st->hook != NULL)
        st->hook(st->hook_ctx, ev, rec_key(r), rec_klen(r), h);
}

static inline struct record *do_find(struct store *st, uint64_t h, const void *key,
                              uint32_t klen)
{
    const struct rtree *t = &st->buckets[bucket_idx(st, h)];
    if (!rt_may_hold(t, h))
        return NULL;
    struct record *n = rt_root(t);
    while (n != NULL) {
        int c = rec_keycmp(key, klen, n);
        if (c == 0)
            return n;
        n = c < 0 ? rt_left(n) : rt_right(n);
    }
    return NULL;
}

/* ---- store_forest.c: the caller holds the key's stripe (write) unless
 * said otherwise ---------------------------------------------------------- */
void do_detach_b(struct store *st, uint32_t b, struct record *r);
void rec_untag(struct store *st, struct record *r);
void do_unlink_b(struct store *st, uint32_t b, struct record *r);
void do_unlink(struct store *st, uint64_t h, struct record *r);
int do_link(struct store *st, uint64_t h, struct record *r,
            struct record *old, int keep_pos);
void maybe_grow(struct store *st); /* no lock held */
/* Recompute bucket b's filter from its records (hashing their keys). */
void do_refilter_b(struct store *st, uint32_t b);
/* Remove a dead record (expired or flushed) found under the write lock. */
void do_expire(struct store *st, struct record *r, uint64_t h);
/* A read under the read lock found the key's record expired: count it and
 * reclaim it under the write lock (no lock held on entry or return). */
void reclaim_expired_key(struct store *st, uint64_t h, const void *key,
                         uint32_t klen, bool flushed);
/* what do_find_live reclaimed: nothing, an expired or a flushed record */
enum { GONE_NONE, GONE_EXPIRED, GONE_FLUSHED };
/* Find a live record under the write lock, reclaiming it if dead; *gone
 * says what was reclaimed. */
static inline struct record *do_find_live_gone(struct store *st, uint64_t h,
                                               const void *key, uint32_t klen,
                                               int *gone)
{
    struct record *r = do_find(st, h, key, klen);
    *gone = GONE_NONE;
    if (r != NULL && rec_dead(st, r, now_s(st))) {
        *gone = rec_flushed(st, r) ? GONE_FLUSHED : GONE_EXPIRED;
        do_expire(st, r, h);
        r = NULL;
    }
    return r;
}

static inline struct record *do_find_live(struct store *st, uint64_t h,
                                          const void *key, uint32_t klen)
{
    int gone;
    return do_find_live_gone(st, h, key, klen, &gone);
}

/* ---- store_hooks.c: what a link or a deadline's change enters ------------ */
/*
 * The expiry wheel (its invariant and the sweeper's turn: store_expiry.c):
 * per lock stripe, EW_SLOTS one-second slots of 8-byte entries, each the
 * key hash's low 32 bits (bucket and stripe), its top 16 bits, and the lap
 * (16 bits of deadline / EW_SLOTS).
 */
#define EW_SLOTS 256u /* one-second slots: a lap of 256 s */
#define EW_SLOT(d) ((d) & (EW_SLOTS - 1))
struct eslot {
    uint64_t *e;
    uint32_t n;
    uint32_t cap : 31;
    uint32_t dirty : 1; /* added to since the last turn: not sorted */
};
struct ewheel {
    struct eslot s[EW_SLOTS];
};
#define EW_LAP(d) ((uint16_t)((d) / EW_SLOTS))
static inline uint64_t ew_entry(uint64_t h, uint32_t d)
{
    return (uint64_t)(uint16_t)(h >> 48) << 48 |
           (uint64_t)(uint32_t)h << 16 | EW_LAP(d);
}
static inline uint64_t ew_key(uint64_t e) { return e >> 16; }
/* laps of e's tag after 'lap' (negative: before), on the 16-bit circle */
static inline int ew_ahead(uint64_t e, uint16_t lap)
{
    return (int16_t)(uint16_t)((uint16_t)e - lap);
}
/* Enter h for deadline d (under h's stripe write lock). */
void wheel_add(struct store *st, uint64_t h, uint32_t d);
/* the same, 'now' the store second the caller's view is of */
void wheel_add_at(struct store *st, uint64_t h, uint32_t d, uint32_t now);
bool wheel_has(struct store *st, uint64_t h, uint32_t d);
void wheel_teardown(struct store *st);
/* the eviction bits of a record being linked (in place of 'old', if any) */
uint8_t evict_link_bits(struct store *st, uint64_t h,
                        const struct record *old);
/* remember an evicted key (the sampler's ghosts) */
void ghost_put(struct store *st, uint64_t h);

#endif
