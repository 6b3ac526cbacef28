/*
 * store_expiry.c - deadlines (memcached's exptime on the store's monotonic
 * seconds), reclaiming expired records, flush_all (now or delayed) with the
 * marks that count get_flushed, and the sweeper thread.
 */
#include "config.h"

#include <time.h>

#include "alloc.h"
#include "store_int.h"

/* memcached expiry: 0 never; <0 already expired; <=30 days relative;
 * otherwise absolute Unix time, converted to the monotonic clock now. */
uint32_t deadline_of(struct store *st, int64_t exptime)
{
    uint32_t now = now_s(st);
    if (exptime == 0)
        return 0;
    if (exptime < 0)
        return 1;
    if (exptime <= STORE_REL_EXPIRY_MAX)
        return now + (uint32_t)exptime;
    int64_t rel = exptime - st->clk.wall_s(st->clk.ctx);
    if (rel <= 0)
        return 1;
    if (rel > (int64_t)UINT32_MAX - now)
        return UINT32_MAX;
    return now + (uint32_t)rel;
}

int64_t record_ttl(struct store *st, const struct record *r)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    if (d == 0)
        return -1;
    uint32_t now = now_s(st);
    return d > now ? (int64_t)(d - now) : 0;
}

uint64_t record_deadline_ns(const struct store *st, const struct record *r)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    /* a pending delayed flush ends every record's life at its moment */
    uint32_t f = atomic_load_explicit(&((struct store *)st)->flush_at,
                                      memory_order_relaxed);
    if (f != 0 && (d == 0 || f < d))
        d = f;
    if (d == 0)
        return 0;
    return st->epoch_ns + (uint64_t)(d - 1) * 1000000000u;
}

int64_t record_expiry_wall(struct store *st, const struct record *r)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    uint32_t f = atomic_load_explicit(&st->flush_at, memory_order_relaxed);
    if (f != 0 && (d == 0 || f < d))
        d = f;
    if (d == 0)
        return 0;
    uint32_t now = now_s(st);
    int64_t wall = st->clk.wall_s(st->clk.ctx);
    return wall + (d > now ? (int64_t)(d - now) : 1);
}

static inline uint64_t fmark_of(uint64_t h) { return h | 1; }

/* Remember h (a flush, under h's stripe write lock). */
static void fmarks_add(struct store *st, uint64_t h)
{
    struct flush_marks *m = &st->fmarks[(uint32_t)h & st->lmask];

    if (atomic_fetch_add_explicit(&st->flush_total, 1, memory_order_relaxed) >=
        FLUSH_MARKS_MAX)
        return;
    if (m->n == m->cap) {
        uint32_t nc = m->cap ? m->cap * 2 : 8;
        _Atomic uint64_t *nh = mdc_realloc(m->h, nc * sizeof(*nh));
        if (nh == NULL)
            return;
        m->h = nh;
        m->cap = nc;
    }
    atomic_store_explicit(&m->h[m->n++], fmark_of(h), memory_order_relaxed);
    atomic_fetch_add_explicit(&st->flush_live, 1, memory_order_relaxed);
}

/* Consume h's mark if the last flush left one; under h's stripe lock, read
 * (racing readers: the CAS lets one win) or write.  One relaxed load when
 * no mark is left. */
bool fmarks_take(struct store *st, uint64_t h)
{
    if (atomic_load_explicit(&st->flush_live, memory_order_relaxed) == 0)
        return false;
    struct flush_marks *m = &st->fmarks[(uint32_t)h & st->lmask];
    uint64_t want = fmark_of(h);
    for (uint32_t i = 0; i < m->n; i++) {
        uint64_t v = atomic_load_explicit(&m->h[i], memory_order_relaxed);
        if (v == want && atomic_compare_exchange_strong(&m->h[i], &v, 0)) {
            atomic_fetch_sub_explicit(&st->flush_live, 1,
                                      memory_order_relaxed);
            return true;
        }
    }
    return false;
}

/* A new flush forgets the marks of the last one. */
static void fmarks_reset(struct store *st)
{
    for (uint32_t i = 0; i <= st->lmask; i++) {
        struct flush_marks *m = &st->fmarks[i];
        uint64_t live = 0;
        mdc_wrlock(&st->locks[i]);
        for (uint32_t k = 0; k < m->n; k++)
            live += atomic_load_explicit(&m->h[k], memory_order_relaxed) != 0;
        m->n = 0;
        mdc_unlock(&st->locks[i]);
        if (live)
            atomic_fetch_sub_explicit(&st->flush_live, live,
                                      memory_order_relaxed);
    }
    atomic_store_explicit(&st->flush_total, 0, memory_order_relaxed);
}

/* Change a linked record's deadline in place (touch/gat), under the write
 * lock, keeping the count of records the sweep must look at. */
void set_deadline(struct store *st, struct record *r, uint32_t d)
{
    uint32_t o = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    if (o == 0 && d != 0)
        atomic_fetch_add_explicit(&st->expiring, 1, memory_order_relaxed);
    else if (o != 0 && d == 0)
        atomic_fetch_sub_explicit(&st->expiring, 1, memory_order_relaxed);
    __atomic_store_n(&r->deadline, d, __ATOMIC_RELAXED);
}

/* Remove an expired record found under the write lock. */
void do_expire(struct store *st, struct record *r, uint64_t h)
{
    announce(st, EV_EXPIRE, r, h);
    atomic_fetch_add_explicit(&st->expired, 1, memory_order_relaxed);
    if (!(rec_rflags(r) & R_FETCHED))
        atomic_fetch_add_explicit(&st->expired_unfetched, 1,
                                  memory_order_relaxed);
    do_unlink(st, h, r);
}

/* Find a live record under the write lock, reclaiming it if expired. */
struct record *do_find_live(struct store *st, uint64_t h,
                                   const void *key, uint32_t klen)
{
    struct record *r = do_find(st, h, key, klen);
    if (r != NULL && rec_expired(r, now_s(st))) {
        do_expire(st, r, h);
        r = NULL;
    }
    return r;
}

void store_flush(struct store *st)
{
    uint32_t now = now_s(st);

    fmarks_reset(st);
    /* re-read the size each step: a bucket split behind the cursor moves
     * records ahead of it, never behind */
    for (uint32_t b = 0; b < nbuckets_now(st); b++) {
        mdc_rwlock_t *l = lock_of(st, b);
        mdc_wrlock(l);
        struct record *r;
        while ((r = rt_root(&st->buckets[b])) != NULL) {
            uint64_t h = store_hash(rec_key(r), rec_klen(r));
            if (!rec_expired(r, now))
                fmarks_add(st, h); /* a get of it counts get_flushed */
            announce(st, EV_FLUSH, r, h);
            do_unlink_b(st, b, r);
        }
        mdc_unlock(l);
    }
}

void store_flush_at(struct store *st, int64_t exptime)
{
    if (exptime <= 0) {
        atomic_store(&st->flush_at, 0);
        store_flush(st);
        return;
    }
    atomic_store(&st->flush_at, deadline_of(st, exptime));
    /* copies of records made outside the store (the XDP mirror) must not
     * outlive the moment: announce "everything" (no key) so they are
     * dropped; later copies take the moment as their deadline
     * (record_deadline_ns) */
    if (st->hook != NULL)
        st->hook(st->hook_ctx, EV_FLUSH, NULL, 0, 0);
    check_flush(st, now_s(st)); /* an absolute time already past */
}

size_t store_sweep(struct store *st, size_t max_buckets)
{
    size_t n = 0;
    uint32_t now = now_s(st);
    check_flush(st, now);
    uint32_t nb = nbuckets_now(st);
    if (max_buckets > nb)
        max_buckets = nb;
    uint64_t start = atomic_fetch_add_explicit(&st->sweep_cursor, max_buckets,
                                               memory_order_relaxed);
    for (size_t i = 0; i < max_buckets; i++) {
        uint32_t b = (uint32_t)((start + i) % nb);
        mdc_rwlock_t *l = lock_of(st, b);
        mdc_wrlock(l);
        struct record *r, *nx;
        RT_FOREACH_SAFE(r, &st->buckets[b], nx)
        {
            if (rec_expired(r, now)) {
                do_expire(st, r, store_hash(rec_key(r), rec_klen(r)));
                n++;
            }
        }
        mdc_unlock(l);
    }
    return n;
}

void *sweeper_main(void *arg)
{
    struct store *st = arg;
    pthread_mutex_lock(&st->sweep_mu);
    while (!st->sweep_stop) {
        /* visit every bucket about once every 10 intervals */
        size_t per = (size_t)nbuckets_now(st) / 10 + 1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec +
                      (uint64_t)st->cfg.sweep_interval_ms * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&st->sweep_cv, &st->sweep_mu, &ts);
        if (st->sweep_stop)
            break;
        pthread_mutex_unlock(&st->sweep_mu);
        /* nothing can expire: skip the walk (a pending delayed flush is
         * still checked) */
        if (atomic_load_explicit(&st->expiring, memory_order_relaxed) > 0)
            store_sweep(st, per);
        else
            check_flush(st, now_s(st));
        if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
            reclaim_retired(st);
        pthread_mutex_lock(&st->sweep_mu);
    }
    pthread_mutex_unlock(&st->sweep_mu);
    return NULL;
}
