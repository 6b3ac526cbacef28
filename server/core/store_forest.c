/*
 * store_forest.c - the record forest: buckets of red-black trees under
 * striped reader-writer locks, grown by linear hashing; linking and
 * unlinking records (with their tags), reclaiming a dead record found.
 * The index (level 2, store_index.h): a link enters what the policies
 * read through store_hooks.c, never calling them.  The caller of do_*
 * holds the key's stripe write lock.
 */
#include "config.h"

#include <string.h>

#include "alloc.h"
#include "store_index.h"
#include "tags.h"

#define GROW_LOAD 1 /* records per bucket that trigger a split */
#define GROW_STEPS 8 /* buckets split per trigger */


/* Take 'r' out of the record forest (not yet out of the tag index: the
 * index's reference stays until it is, see rec_untag). */
void do_detach_b(struct store *st, uint32_t b, struct record *r)
{
    rt_remove(&st->buckets[b], r);
    rec_clear_rflag(r, R_LINKED);
    atomic_fetch_sub_explicit(&st->curr_items, 1, memory_order_relaxed);
    if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
        atomic_fetch_sub_explicit(&st->expiring, 1, memory_order_relaxed);
}

/* Take a detached record's tags out of the tag index. */
void rec_untag(struct store *st, struct record *r)
{
    if (rec_rflags(r) & R_TAGGED) {
        struct tag_area *ta = rec_tags(r);
        int64_t tmem = 0;
        for (uint32_t i = 0; i < ta->ntags; i++)
            tags_unlink(st->tags, &ta->e[i], &tmem);
        store_account(st, tmem, 1);
        atomic_fetch_sub_explicit(&st->tagged_items, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&st->tag_links, ta->ntags,
                                  memory_order_relaxed);
    }
}

/* Unlink 'r' from the forest and the tag index, dropping the index's
 * reference.  The caller announced the change. */
void do_unlink_b(struct store *st, uint32_t b, struct record *r)
{
    do_detach_b(st, b, r);
    rec_untag(st, r);
    rec_unindex(st, r);
}

void do_unlink(struct store *st, uint64_t h, struct record *r)
{
    do_unlink_b(st, bucket_idx(st, h), r);
}

/*
 * Link new record 'r' (its creator's reference becomes the index's),
 * replacing 'old' if not NULL.  keep_pos: r's tags are old's tags, put each
 * entry where old's is so tstack order survives append/incr.
 * Returns 0 or ST_NO_MEMORY (tag node allocation failed; nothing changed).
 */
int do_link(struct store *st, uint64_t h, struct record *r,
                   struct record *old, int keep_pos)
{
    uint32_t b = bucket_idx(st, h);
    uint32_t nt = (rec_rflags(r) & R_TAGGED) ? rec_tags(r)->ntags : 0;
    struct tag_area *ta = nt ? rec_tags(r) : NULL;
    int64_t tmem = 0, d_items = 0, d_tagged = 0, d_links = 0, d_expiring = 0;

    if (!keep_pos && nt)
        ta->lseq = atomic_fetch_add_explicit(&st->link_seq, 1,
                                             memory_order_relaxed);
    else if (nt && old != NULL)
        ta->lseq = rec_tags(old)->lseq;
    if (!keep_pos) {
        for (uint32_t i = 0; i < nt; i++) {
            if (tags_link(st->tags, &ta->e[i], &tmem) != 0) {
                while (i-- > 0)
                    tags_unlink(st->tags, &ta->e[i], &tmem);
                store_account(st, tmem, 1);
                return ST_NO_MEMORY;
            }
        }
    }
    if (old != NULL) {
        rt_remove(&st->buckets[b], old);
        if (keep_pos) {
            struct tag_area *oa = rec_tags(old);
            for (uint32_t i = 0; i < nt; i++)
                tags_relink(st->tags, &oa->e[i], &ta->e[i]);
        } else if (rec_rflags(old) & R_TAGGED) {
            struct tag_area *oa = rec_tags(old);
            for (uint32_t i = 0; i < oa->ntags; i++)
                tags_unlink(st->tags, &oa->e[i], &tmem);
        }
        if (rec_rflags(old) & R_TAGGED) {
            d_tagged--;
            d_links -= rec_tags(old)->ntags;
        }
        rec_clear_rflag(old, R_LINKED);
        d_items--;
        if (__atomic_load_n(&old->deadline, __ATOMIC_RELAXED) != 0)
            d_expiring--;
    }
    if (tmem != 0)
        store_account(st, tmem, 1);
    rt_insert(&st->buckets[b], r, h);
    if (r->deadline != 0) {
        d_expiring++;
        /* the expiry wheel: old's entry stands for r if in the same slot
         * and not later */
        uint32_t o = old != NULL ? __atomic_load_n(&old->deadline,
                                                   __ATOMIC_RELAXED)
                                 : 0;
        if (o == 0 || EW_SLOT(o) != EW_SLOT(r->deadline) || r->deadline < o)
            wheel_add(st, h, r->deadline);
    }
    /* the creator's reference becomes the index's */
    __atomic_fetch_add(&r->refcnt, REF_INDEX - 1, __ATOMIC_RELAXED);
    rec_set_rflag(r, R_LINKED);
    /* idle since the store until a read (R_FETCHED unset: not yet); a
     * caller that read the clock already stamped it (rec_alloc zeroes) */
    if (r->atime == 0)
        __atomic_store_n(&r->atime, now_tick(st), __ATOMIC_RELAXED);
    __atomic_store_n(&r->evb, evict_link_bits(st, h, old), __ATOMIC_RELAXED);
    if (nt) {
        d_tagged++;
        d_links += nt;
    }
    d_items++;
    /* shared counters: a replacement mostly nets to zero, and then does
     * not write their line at all (two threads storing would bounce it) */
    if (d_items != 0)
        atomic_fetch_add_explicit(&st->curr_items, (uint64_t)d_items,
                                  memory_order_relaxed);
    if (d_tagged != 0)
        atomic_fetch_add_explicit(&st->tagged_items, (uint64_t)d_tagged,
                                  memory_order_relaxed);
    if (d_links != 0)
        atomic_fetch_add_explicit(&st->tag_links, (uint64_t)d_links,
                                  memory_order_relaxed);
    if (d_expiring != 0)
        atomic_fetch_add_explicit(&st->expiring, d_expiring,
                                  memory_order_relaxed);
    atomic_fetch_add_explicit(&st->total_items, 1, memory_order_relaxed);
    if (old != NULL)
        rec_unindex(st, old);
    return 0;
}

/*
 * Split one bucket (the next of linear hashing) under its stripe's write
 * lock: records whose hash has bit n set move to bucket b + n.  Only the
 * holder of grow_mu splits.
 */
static void grow_step(struct store *st)
{
    uint64_t s = atomic_load_explicit(&st->hstate, memory_order_relaxed);
    uint32_t n = (uint32_t)(s >> 32), split = (uint32_t)s;
    if ((uint64_t)n + split >= st->cfg.nbuckets)
        return;
    uint32_t b = split;
    mdc_rwlock_t *l = lock_of(st, b);
    mdc_wrlock(l);
    struct record *r, *nx;
    uintptr_t keep = 0; /* the filter of what stays */
    RT_FOREACH_SAFE(r, &st->buckets[b], nx)
    {
        uint64_t h = store_hash(rec_key(r), rec_klen(r));
        if ((uint32_t)h & n) {
            rt_remove(&st->buckets[b], r);
            rt_insert(&st->buckets[b + n], r, h);
        } else {
            keep |= rt_fbits(h);
        }
    }
    st->buckets[b].w = (st->buckets[b].w & RT_PTR_MASK) | keep;
    if (++split == n) {
        n *= 2;
        split = 0;
    }
    atomic_store_explicit(&st->hstate, (uint64_t)n << 32 | split,
                          memory_order_relaxed);
    mdc_unlock(l);
}

void do_refilter_b(struct store *st, uint32_t b)
{
#if RT_FILTER
    struct rtree *t = &st->buckets[b];
    uintptr_t f = 0;
    struct record *r;
    RT_FOREACH(r, t)
        f |= rt_fbits(store_hash(rec_key(r), rec_klen(r)));
    t->w = (t->w & RT_PTR_MASK) | f;
#else
    (void)st;
    (void)b;
#endif
}

/* After an insert: grow while records outnumber GROW_LOAD per bucket.
 * Called with no lock held; one thread grows at a time, others go on. */
void maybe_grow(struct store *st)
{
    uint64_t items = atomic_load_explicit(&st->curr_items,
                                          memory_order_relaxed);
    if (items <= (uint64_t)GROW_LOAD * nbuckets_now(st) ||
        nbuckets_now(st) >= st->cfg.nbuckets)
        return;
    if (pthread_mutex_trylock(&st->grow_mu) != 0)
        return;
    for (int i = 0; i < GROW_STEPS; i++)
        grow_step(st);
    pthread_mutex_unlock(&st->grow_mu);
}

void store_reserve(struct store *st, uint64_t n)
{
    /* an empty table has nothing to split: set its size directly */
    if (atomic_load(&st->curr_items) != 0)
        return;
    uint64_t want = n / GROW_LOAD;
    if (want > st->cfg.nbuckets)
        want = st->cfg.nbuckets;
    uint32_t nb = pow2_at_least(want);
    if (nb > st->cfg.nbuckets)
        nb = st->cfg.nbuckets;
    pthread_mutex_lock(&st->grow_mu);
    if (atomic_load(&st->curr_items) == 0 && nb > nbuckets_now(st))
        atomic_store(&st->hstate, (uint64_t)nb << 32);
    pthread_mutex_unlock(&st->grow_mu);
}

/* Remove a dead record (expired or flushed) found under the write lock.
 * A flushed one is not counted as expired (memcached neither): the flush
 * was announced once for every record. */
void do_expire(struct store *st, struct record *r, uint64_t h)
{
    if (rec_flushed(st, r)) {
        atomic_fetch_add_explicit(&st->flush_reclaimed, 1,
                                  memory_order_relaxed);
        do_unlink(st, h, r);
        return;
    }
    announce(st, EV_EXPIRE, r, h);
    atomic_fetch_add_explicit(&st->expired, 1, memory_order_relaxed);
    if (!(rec_rflags(r) & R_FETCHED))
        atomic_fetch_add_explicit(&st->expired_unfetched, 1,
                                  memory_order_relaxed);
    do_unlink(st, h, r);
}

void reclaim_expired_key(struct store *st, uint64_t h, const void *key,
                         uint32_t klen, bool flushed)
{
    mdc_rwlock_t *l = stripe_of(st, h);

    atomic_fetch_add_explicit(flushed ? &st->get_flushed : &st->get_expired,
                              1, memory_order_relaxed);
    mdc_wrlock(l);
    (void)do_find_live(st, h, key, klen);
    mdc_unlock(l);
}
