/*
 * store_get.c - lookups by key: get (with the access state a meta get
 * reports), visit, get-and-touch, meta get (vivify, recache, stale and win
 * tokens) and batched gets that overlap their cache misses; and walks of
 * the table by hash class (dumps).  An operation (level 4,
 * store_record.h): the lookup itself is get_hashed() (store_policy.h),
 * which the writes that read first share.
 */
#include "config.h"

#include <string.h>

#include "store_hash.h"
#include "store_policy.h"

static struct record *get_common(struct store *st, const void *key,
                                 uint32_t klen, struct store_access *prev);

struct record *store_get(struct store *st, const void *key, uint32_t klen)
{
    return get_common(st, key, klen, NULL);
}

struct record *store_get_access(struct store *st, const void *key,
                                uint32_t klen, struct store_access *prev)
{
    return get_common(st, key, klen, prev);
}

static struct record *get_common(struct store *st, const void *key,
                                 uint32_t klen, struct store_access *prev)
{
    if (klen > STORE_MAX_KEY)
        return NULL;
    return get_hashed(st, store_hash_inline(key, klen), key, klen, prev);
}


int store_visit(struct store *st, const void *key, uint32_t klen,
                store_visit_fn fn, void *ctx)
{
    if (klen > STORE_MAX_KEY)
        return 0;
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    int ran = 0;

    check_flush(st, now_s(st));

    mdc_rdlock(l);
    struct record *r = do_find(st, h, key, klen);
    if (r != NULL && !rec_dead(st, r, now_s(st))) {
        fn(ctx, st, r);
        ran = 1;
    }
    mdc_unlock(l);
    return ran;
}

struct record *store_gat(struct store *st, const void *key, uint32_t klen,
                         int64_t exptime)
{
    if (klen > STORE_MAX_KEY)
        return NULL;
    uint32_t d = deadline_of(st, exptime);
    struct key_write kw;
    struct record *r = NULL;

    if (key_write_begin(st, &kw, key, klen, 0) == ST_OK) {
        r = kw.r;
        announce(st, EV_TOUCH, r, kw.h);
        set_deadline(st, r, kw.h, d);
        /* a touch writes the line anyway; a read counts once a grain */
        uint16_t t = now_tick(st);
        if (atime_due(t, __atomic_load_n(&r->atime, __ATOMIC_RELAXED),
                      rec_rflags(r)))
            rec_note_read(r);
        __atomic_store_n(&r->atime, t, __ATOMIC_RELAXED);
        rec_set_rflag(r, R_FETCHED);
        rec_hold(r);
    } else if (kw.gone == GONE_FLUSHED) {
        atomic_fetch_add_explicit(&st->get_flushed, 1, memory_order_relaxed);
    }
    mdc_unlock(kw.l);
    return r;
}

/* R's test: a deadline below the one R's TTL would give (memcached:
 * exptime < realtime(token); never for a record without expiry). */
static bool recache_due(struct store *st, const struct record *r,
                        int64_t exptime)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    return d != 0 && exptime > 0 && d < deadline_of(st, exptime);
}

/* The hit half of store_mget, under the key's stripe (written when q
 * touches): access state, recency, touch, then the win. */
static void mget_hit(struct store *st, struct record *r, uint64_t h,
                     uint64_t ns, const struct store_mget *q,
                     struct store_mget_res *res)
{
    uint16_t t = tick_of(ns);
    uint16_t at = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
    uint8_t fl = rec_rflags(r);
    bool want = false;

    res->prev.hit_before = (fl & R_FETCHED) != 0;
    res->prev.idle_s = tick_secs(tick_age(t, at));
    if (!q->no_bump) {
        if (atime_due(t, at, fl)) {
            __atomic_store_n(&r->atime, t, __ATOMIC_RELAXED);
            rec_note_read(r);
        }
        if (!(fl & R_FETCHED))
            rec_set_rflag(r, R_FETCHED);
    }
    if (res->created) { /* its expiry came from N; T then applies */
        res->won = true;
        if (q->touch)
            set_deadline(st, r, h, deadline_of(st, q->exptime));
        return;
    }
    if (q->recache && !q->recache_after_touch)
        want = recache_due(st, r, q->recache_exptime);
    if (q->touch) {
        announce(st, EV_TOUCH, r, h);
        set_deadline(st, r, h, deadline_of(st, q->exptime));
    }
    if (q->recache && q->recache_after_touch)
        want = recache_due(st, r, q->recache_exptime);
    if (fl & R_STALE) {
        res->stale = true;
        want = true;
    }
    if (fl & R_WON) {
        res->pending = true;
        return;
    }
    if (want) {
        /* readers race here under the read lock: one fetch-or wins */
        uint8_t was = __atomic_fetch_or(&r->rflags, R_WON, __ATOMIC_RELAXED);
        if (was & R_WON)
            res->pending = true;
        else
            res->won = true;
    }
}

struct record *store_mget(struct store *st, const void *key, uint32_t klen,
                          const struct store_mget *q,
                          struct store_mget_res *res)
{
    memset(res, 0, sizeof(*res));
    if (klen > STORE_MAX_KEY)
        return NULL;
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    bool wr = q->touch; /* a touch writes the deadline */
    struct record *fresh = NULL, *r;

    for (;;) {
        uint64_t ns = now_ns(st);
        uint32_t now = secs_of(st, ns);
        int expired = 0, gone = GONE_NONE;
        check_flush(st, now);
        if (wr) {
            mdc_wrlock(l);
            r = do_find_live_gone(st, h, key, klen, &gone);
            if (gone == GONE_FLUSHED)
                atomic_fetch_add_explicit(&st->get_flushed, 1,
                                          memory_order_relaxed);
        } else {
            mdc_rdlock(l);
            r = do_find(st, h, key, klen);
            if (r != NULL && rec_dead(st, r, now)) {
                gone = rec_flushed(st, r) ? GONE_FLUSHED : GONE_EXPIRED;
                r = NULL;
                expired = 1;
            }
        }
        if (r == NULL && q->vivify) {
            if (!wr || fresh == NULL) {
                /* allocate with no lock held, then look again under the
                 * write lock: a racing vivify may have linked first */
                mdc_unlock(l);
                if (fresh == NULL &&
                    rec_alloc(st, key, klen, 0, 0, 0, &fresh) != 0)
                    return NULL;
                wr = true;
                continue;
            }
            r = fresh;
            fresh = NULL;
            r->deadline = deadline_of(st, q->vivify_exptime);
            rec_set_cas(r, next_cas());
            r->rflags |= R_WON;
            announce(st, EV_ADD, r, h);
            if (do_link(st, h, r, NULL, 0) != 0) { /* no tags: cannot */
                mdc_unlock(l);
                store_release(st, r);
                return NULL;
            }
            res->created = true;
        }
        if (r != NULL) {
            mget_hit(st, r, h, ns, q, res);
            rec_hold(r);
        }
        mdc_unlock(l);
        if (expired)
            reclaim_expired_key(st, h, key, klen, gone == GONE_FLUSHED);
        break;
    }
    if (fresh != NULL)
        store_release(st, fresh);
    if (res->created)
        maybe_grow(st);
    return r;
}

/*
 * Batched lookups.  A GET in a large store pays two dependent cache misses
 * (the bucket slot, then the first record of its tree: header and key);
 * a batch overlaps them across its keys, as a software pipeline of three
 * stages PF_DIST keys apart:
 *   1. hash the key, prefetch its bucket slot and lock stripe;
 *   2. under the stripe's read lock (the biased fast path writes only the
 *      thread's own slot), read the bucket's root and prefetch the root
 *      record's header and key lines;
 *   3. (store_get_batch only) the lookup proper, as store_get.
 */
#define PF_DIST 4

/* Prefetch the bucket slot and lock stripe of key (no memory is read, so
 * no lock is needed): a batch of GETs calls this for every key before its
 * first lookup, so their cache misses overlap. */
void store_prefetch(struct store *st, const void *key, uint32_t klen)
{
    uint64_t h;

    if (klen > STORE_MAX_KEY)
        return;
    h = store_hash(key, klen);
    __builtin_prefetch(&st->buckets[bucket_idx(st, h)], 0, 3);
    __builtin_prefetch(stripe_of(st, h), 1, 3);
}

static inline void batch_stage1(struct store *st, const struct store_key *k,
                                uint64_t *h)
{
    if (k->klen > STORE_MAX_KEY) {
        *h = 0;
        return;
    }
    *h = store_hash(k->key, k->klen);
    __builtin_prefetch(&st->buckets[bucket_idx(st, *h)], 0, 3);
    __builtin_prefetch(stripe_of(st, *h), 0, 3);
}

static inline void batch_stage2(struct store *st, const struct store_key *k,
                                uint64_t h)
{
    if (k->klen > STORE_MAX_KEY)
        return;
    mdc_rwlock_t *l = stripe_of(st, h);
    mdc_rdlock(l);
    const struct rtree *t = &st->buckets[bucket_idx(st, h)];
    struct record *r = rt_root(t);
    if (r != NULL && rt_may_hold(t, h)) {
        __builtin_prefetch(r, 0, 3);
        __builtin_prefetch((const char *)r + 64, 0, 3);
    }
    mdc_unlock(l);
}

void store_prefetch_batch(struct store *st, const struct store_key *keys,
                          size_t n)
{
    uint64_t h[PF_DIST];

    for (size_t j = 0; j < n + PF_DIST; j++) {
        if (j >= PF_DIST)
            batch_stage2(st, &keys[j - PF_DIST], h[(j - PF_DIST) % PF_DIST]);
        if (j < n)
            batch_stage1(st, &keys[j], &h[j % PF_DIST]);
    }
}

size_t store_get_batch(struct store *st, const struct store_key *keys,
                       size_t n, struct record **out)
{
    uint64_t h[2 * PF_DIST];
    size_t hits = 0;

    if (n == 1) { /* nothing to overlap: the pipeline would only cost */
        out[0] = store_get(st, keys[0].key, keys[0].klen);
        return out[0] != NULL;
    }
    for (size_t j = 0; j < n + 2 * PF_DIST; j++) {
        if (j >= 2 * PF_DIST) {
            size_t i = j - 2 * PF_DIST;
            out[i] = keys[i].klen > STORE_MAX_KEY
                         ? NULL
                         : get_hashed(st, h[i % (2 * PF_DIST)], keys[i].key,
                                      keys[i].klen, NULL);
            hits += out[i] != NULL;
        }
        if (j >= PF_DIST && j - PF_DIST < n)
            batch_stage2(st, &keys[j - PF_DIST],
                         h[(j - PF_DIST) % (2 * PF_DIST)]);
        if (j < n)
            batch_stage1(st, &keys[j], &h[j % (2 * PF_DIST)]);
    }
    return hits;
}

/*
 * Hash classes for a walk: the table's size when it begins, M (a power of
 * two).  Every record of class L (hash & (M - 1) == L) lives in a bucket b
 * with b & (K - 1) == L & (K - 1), K = min(M, table size now), whatever the
 * table grew to meanwhile; all those buckets share L's stripe (M and K are
 * multiples of the stripe count), and buckets split only under it.  So the
 * stripe's read lock freezes the class, and each record has one class.
 */
uint32_t store_walk_classes(struct store *st)
{
    uint64_t s = atomic_load_explicit(&st->hstate, memory_order_relaxed);
    uint32_t n = (uint32_t)(s >> 32), split = (uint32_t)s;
    return split ? 2 * n : n;
}

size_t store_walk_class(struct store *st, uint32_t nclasses, uint32_t cls,
                        store_walk_fn fn, void *ctx)
{
    size_t visited = 0;
    mdc_rwlock_t *l = lock_of(st, cls);
    uint64_t ns = now_ns(st);
    check_flush(st, secs_of(st, ns));
    uint32_t now = secs_of(st, ns);
    mdc_rdlock(l);
    uint64_t s = atomic_load_explicit(&st->hstate, memory_order_relaxed);
    uint32_t n = (uint32_t)(s >> 32);
    uint32_t nb = nbuckets_now(st);
    uint32_t k = nclasses < n ? nclasses : n;
    for (uint32_t b = cls & (k - 1); b < nb; b += k) {
        struct record *r;
        RT_FOREACH(r, &st->buckets[b])
        {
            if (rec_dead(st, r, now))
                continue;
            if (k != nclasses &&
                ((uint32_t)store_hash(rec_key(r), rec_klen(r)) &
                 (nclasses - 1)) != cls)
                continue;
            fn(ctx, st, r);
            visited++;
        }
    }
    mdc_unlock(l);
    return visited;
}
