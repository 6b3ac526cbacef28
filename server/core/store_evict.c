/*
 * store_evict.c - the memory limit: reserving a record's bytes before it
 * is allocated, evicting (sampled LRU) to make room, and a live change of
 * the limit.  Runs with no lock held; each sample takes one stripe.
 */
#include "config.h"

#include "store_int.h"

#define EVICT_SAMPLES 5
#define EVICT_PROBE 64

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
 * Pick the record of bucket b with the oldest access stamp (an expired one
 * wins outright) into *best (referenced).  Returns whether b had records.
 */
static int evict_pick(struct store *st, uint32_t b, uint32_t now,
                      uint16_t tick, struct record **best,
                      uint32_t *best_age)
{
    mdc_rwlock_t *l = lock_of(st, b);
    struct record *r;
    int hit = 0;

    mdc_rdlock(l);
    RT_FOREACH(r, &st->buckets[b])
    {
        hit = 1;
        /* expired first, then never read, then the least recent */
        uint16_t at = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
        uint32_t age = rec_expired(r, now) ? UINT32_MAX
                       : at == 0          ? 1u << 16
                                          : tick_age(tick, at);
        if (*best == NULL || age > *best_age) {
            if (*best != NULL)
                store_release(st, *best);
            rec_incref(r);
            *best = r;
            *best_age = age;
        }
    }
    mdc_unlock(l);
    return hit;
}

/*
 * Evict one record, approximately the least recently used: sample a few
 * non-empty buckets, pick the record with the oldest access stamp (an
 * expired one wins outright), then remove it under its bucket's write lock
 * if it is still there.  When the samples find only empty buckets (a
 * sparse table: few large records) every bucket is walked from a random
 * one until a record turns up.  Returns 0 if something was removed (or a
 * racing thread removed it first), -1 if no bucket holds a record.
 */
static int evict_one(struct store *st)
{
    struct record *best = NULL;
    uint32_t best_age = 0;
    uint32_t now = now_s(st);
    uint16_t tick = now_tick(st);
    int found_any = 0;

    for (int s = 0; s < EVICT_SAMPLES; s++) {
        uint32_t nb = nbuckets_now(st);
        uint32_t start = (uint32_t)(rnd(st) % nb);
        for (int p = 0; p < EVICT_PROBE; p++) {
            uint32_t b = (start + (uint32_t)p) % nb;
            if (evict_pick(st, b, now, tick, &best, &best_age)) {
                found_any = 1;
                break;
            }
        }
    }
    if (!found_any) {
        uint32_t nb = nbuckets_now(st);
        uint32_t start = (uint32_t)(rnd(st) % nb);
        for (uint32_t p = 0; p < nb && best == NULL; p++)
            (void)evict_pick(st, (start + p) % nb, now, tick, &best,
                             &best_age);
    }
    if (best == NULL)
        return -1;

    uint64_t h = store_hash(rec_key(best), rec_klen(best));
    mdc_rwlock_t *l = stripe_of(st, h); /* best may have moved bucket */
    mdc_wrlock(l);
    if (rec_rflags(best) & R_LINKED) {
        if (rec_expired(best, now)) {
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
            do_unlink(st, h, best);
        }
    }
    mdc_unlock(l);
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
int mem_reserve(struct store *st, size_t size)
{
    int64_t lim = atomic_load_explicit(&st->mem_limit, memory_order_relaxed);
    int64_t m = atomic_fetch_add_explicit(&st->mem, (int64_t)size,
                                          memory_order_relaxed) +
                (int64_t)size;
    if (m <= lim)
        return 0;
    if (!st->cfg.no_evict && (int64_t)size <= lim) {
        int evicted = 0;
        /* bounded only against a livelock with concurrent stores */
        for (int i = 0; i < RETRY_LIMIT; i++) {
            if (atomic_load_explicit(&st->mem, memory_order_relaxed) <= lim)
                break;
            if (evict_one(st) < 0)
                break;
            evicted = 1;
        }
        /* memcached's direct_reclaims: this store, not a background
         * thread, made the room (here every eviction is such a one) */
        if (evicted)
            atomic_fetch_add_explicit(&st->direct_reclaims, 1,
                                      memory_order_relaxed);
        if (atomic_load_explicit(&st->mem, memory_order_relaxed) <= lim)
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
