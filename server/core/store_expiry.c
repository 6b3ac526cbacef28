/*
 * store_expiry.c - deadlines (memcached's exptime on the store's monotonic
 * seconds), reclaiming expired records, flush_all (now or delayed) with the
 * marks that count get_flushed, and the sweeper thread.
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "alloc.h"
#include "store_int.h"
#include "testhook.h"

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
 * lock, keeping the count of records with one and the expiry wheel: a new
 * entry unless the old deadline is in the new one's slot and not later
 * (its entry then stands for the new deadline too, see "the expiry wheel"
 * below). */
void set_deadline(struct store *st, struct record *r, uint64_t h, uint32_t d)
{
    uint32_t o = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    if (o == 0 && d != 0)
        atomic_fetch_add_explicit(&st->expiring, 1, memory_order_relaxed);
    else if (o != 0 && d == 0)
        atomic_fetch_sub_explicit(&st->expiring, 1, memory_order_relaxed);
    __atomic_store_n(&r->deadline, d, __ATOMIC_RELAXED);
    if (d != 0 && (o == 0 || EW_SLOT(o) != EW_SLOT(d) || d < o))
        wheel_add(st, h, d);
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

int key_write_begin(struct store *st, struct key_write *kw, const void *key,
                    uint32_t klen, uint64_t cas)
{
    check_flush(st, now_s(st));
    kw->h = store_hash(key, klen);
    kw->l = stripe_of(st, kw->h);
    mdc_wrlock(kw->l);
    kw->r = do_find_live(st, kw->h, key, klen);
    if (kw->r == NULL)
        return ST_NOT_FOUND;
    if (cas != 0 && rec_cas(kw->r) != cas)
        return ST_EXISTS;
    return ST_OK;
}

void reclaim_expired_key(struct store *st, uint64_t h, const void *key,
                         uint32_t klen)
{
    mdc_rwlock_t *l = stripe_of(st, h);

    atomic_fetch_add_explicit(&st->get_expired, 1, memory_order_relaxed);
    mdc_wrlock(l);
    (void)do_find_live(st, h, key, klen);
    mdc_unlock(l);
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

/*
 * The expiry wheel: what lets the sweeper reclaim a record within a second
 * of its deadline without walking the table.  Each lock stripe has
 * EW_SLOTS one-second slots; slot (d mod EW_SLOTS) of the key's stripe
 * holds an entry for a linked record with deadline d: 8 bytes, the key
 * hash's low 32 bits (its bucket and stripe) and its top 16 bits (which
 * record of the bucket: the turn hashes the bucket's keys, the record has
 * no room for a hash), and a lap tag, the 16 bits of
 * d / EW_SLOTS.  Nothing is kept for a record without a deadline, and
 * nothing in the record.
 *
 * Invariant: every linked record with a deadline d has an entry in slot
 * EW_SLOT(d) of its stripe whose lap tag is not after d's lap, or its
 * stripe is marked lost.  Linking a record with a deadline adds one
 * unless the record it replaces had a deadline in the same slot no later
 * than the new one (replacements keep the hash, so that entry stands for
 * the new record); changing a deadline in place adds one unless the same
 * holds.
 *
 * Each second the sweeper turns the second's slot of every stripe, under
 * the stripe's write lock.  An entry whose lap is still ahead is passed
 * over without looking at the table (a TTL longer than a lap costs one
 * scan of its 8 bytes a lap).  The others are looked up: records of the
 * entry's hash past their deadline are expired; if one is due in this
 * slot on a later lap the entry stays, tagged with that lap, else it goes
 * (so a stale entry, of a record deleted, replaced or touched, goes at its
 * lap's turn).  A slot written since its last turn is sorted first, and
 * the entries of one key are made one (the earliest lap).  An entry that
 * cannot be stored (no memory) marks the stripe lost: the sweeper then
 * walks that stripe's buckets once and enters every deadline again.
 */
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

static void wheel_lose(struct store *st, uint32_t j)
{
    st->wlost[j] = 1;
    atomic_store_explicit(&st->wheel_lost, 1, memory_order_relaxed);
}

/* Enter h for deadline d (under h's stripe write lock). */
void wheel_add(struct store *st, uint64_t h, uint32_t d)
{
    if (st->wheels == NULL || d == 0)
        return;
    uint32_t j = (uint32_t)h & st->lmask;
    struct ewheel *w = st->wheels[j];
    if (w == NULL) {
        w = mdc_calloc(1, sizeof(*w));
        if (w == NULL) {
            wheel_lose(st, j);
            return;
        }
        atomic_fetch_add_explicit(&st->wheel_bytes, (int64_t)sizeof(*w),
                                  memory_order_relaxed);
        /* the sweeper looks without the lock first (release: the slots
         * it then reads under the lock are the zeroed ones) */
        __atomic_store_n(&st->wheels[j], w, __ATOMIC_RELEASE);
    }
    struct eslot *s = &w->s[EW_SLOT(d)];
    if (s->n == s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 4;
        uint64_t *ne = mdc_realloc(s->e, nc * sizeof(*ne));
        if (ne == NULL) {
            wheel_lose(st, j);
            return;
        }
        atomic_fetch_add_explicit(&st->wheel_bytes,
                                  (int64_t)(nc - s->cap) * 8,
                                  memory_order_relaxed);
        s->e = ne;
        s->cap = nc;
    }
    s->e[s->n++] = ew_entry(h, d);
    s->dirty = 1;
}

/* Whether a record of hash h with deadline d has its entry, or h's stripe
 * is lost (store_check). */
bool wheel_has(struct store *st, uint64_t h, uint32_t d)
{
    if (st->wheels == NULL)
        return true;
    uint32_t j = (uint32_t)h & st->lmask;
    uint64_t want = ew_key(ew_entry(h, d));
    bool found = false;
    mdc_rdlock(&st->locks[j]); /* the sweeper may be turning it */
    struct ewheel *w = st->wheels[j];
    if (st->wlost[j]) {
        found = true;
    } else if (w != NULL) {
        struct eslot *s = &w->s[EW_SLOT(d)];
        for (uint32_t i = 0; i < s->n && !found; i++)
            found = ew_key(s->e[i]) == want &&
                    ew_ahead(s->e[i], EW_LAP(d)) <= 0;
    }
    mdc_unlock(&st->locks[j]);
    return found;
}

void wheel_teardown(struct store *st)
{
    if (st->wheels == NULL)
        return;
    for (uint32_t j = 0; j <= st->lmask; j++) {
        struct ewheel *w = st->wheels[j];
        if (w == NULL)
            continue;
        for (uint32_t i = 0; i < EW_SLOTS; i++)
            mdc_free(w->s[i].e);
        mdc_free(w);
    }
    mdc_free(st->wheels);
    mdc_free(st->wlost);
    st->wheels = NULL;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The records of entry e's hash in slot i at store second now: expire
 * those past their deadline; returns the earliest deadline of those due
 * in this slot on a later lap, 0 if none. */
static uint32_t wheel_visit(struct store *st, uint64_t e, uint32_t i,
                            uint32_t now)
{
    uint16_t hi = (uint16_t)(e >> 48);
    uint32_t keep = 0;
    struct record *r, *nx;
    RT_FOREACH_SAFE(r, &st->buckets[bucket_idx(st, e >> 16 & 0xffffffffu)],
                    nx)
    {
        uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
        if (d == 0)
            continue;
        uint64_t h = store_hash(rec_key(r), rec_klen(r));
        if ((uint16_t)(h >> 48) != hi)
            continue;
        if (d <= now)
            do_expire(st, r, h);
        else if (EW_SLOT(d) == i && (keep == 0 || d < keep))
            keep = d;
    }
    return keep;
}

/* Turn slot i of stripe j at store second now. */
static void wheel_turn(struct store *st, uint32_t j, uint32_t i, uint32_t now)
{
    struct ewheel *w = __atomic_load_n(&st->wheels[j], __ATOMIC_ACQUIRE);
    if (w == NULL)
        return;
    mdc_rwlock_t *l = &st->locks[j];
    uint16_t lap = EW_LAP(now);
    struct eslot *s = &w->s[i]; /* a wheel never moves once published */
    /* a look under the read lock first (its biased fast path writes
     * nothing shared): the write lock, which takes the stripe's reader
     * bias away, only when an entry's lap has come or the slot was added
     * to (sorted then, so that entries of one key cannot pile up) */
    mdc_rdlock(l);
    bool due = s->dirty;
    for (uint32_t x = 0; x < s->n && !due; x++)
        due = ew_ahead(s->e[x], lap) <= 0;
    mdc_unlock(l);
    if (!due)
        return;
    mdc_wrlock(l);
    if (s->dirty && s->n > 1)
        qsort(s->e, s->n, sizeof(*s->e), u64_cmp);
    s->dirty = 0;
    uint32_t k = 0;
    for (uint32_t x = 0; x < s->n;) {
        /* the run of one key's entries (one entry once sorted) */
        uint64_t e = s->e[x];
        uint32_t y = x + 1;
        for (; y < s->n && ew_key(s->e[y]) == ew_key(e); y++)
            if (ew_ahead(s->e[y], lap) < ew_ahead(e, lap))
                e = s->e[y];
        x = y;
        if (ew_ahead(e, lap) > 0) { /* its lap is still ahead */
            s->e[k++] = e;
            continue;
        }
        uint32_t d = wheel_visit(st, e, i, now);
        if (d != 0)
            s->e[k++] = (e & ~(uint64_t)0xffff) | EW_LAP(d);
    }
    s->n = k;
    if (s->cap > 8 && k <= s->cap / 4) { /* give back what a burst took */
        uint32_t nc = k ? k * 2 : 0;
        uint64_t *ne = nc ? mdc_realloc(s->e, nc * sizeof(*ne)) : NULL;
        if (nc == 0 || ne != NULL) {
            if (nc == 0)
                mdc_free(s->e);
            atomic_fetch_sub_explicit(&st->wheel_bytes,
                                      (int64_t)(s->cap - nc) * 8,
                                      memory_order_relaxed);
            s->e = ne;
            s->cap = nc;
        }
    }
    mdc_unlock(l);
}

/* Enter every deadline of a lost stripe's records again (expiring those
 * past it), under the stripe's write lock: its buckets are j, j + nlocks,
 * ... (none of them can split meanwhile). */
static void wheel_rebuild(struct store *st, uint32_t j, uint32_t now)
{
    mdc_rwlock_t *l = &st->locks[j];
    mdc_wrlock(l);
    st->wlost[j] = 0;
    uint32_t nb = nbuckets_now(st);
    for (uint32_t b = j; b < nb; b += st->lmask + 1) {
        struct record *r, *nx;
        RT_FOREACH_SAFE(r, &st->buckets[b], nx)
        {
            uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
            if (d == 0)
                continue;
            uint64_t h = store_hash(rec_key(r), rec_klen(r));
            if (d <= now)
                do_expire(st, r, h);
            else
                wheel_add(st, h, d);
        }
    }
    mdc_unlock(l);
}

/* The sweeper's pass: rebuild lost stripes, then turn every slot of the
 * seconds since the last pass (each slot once after a long pause). */
static void wheel_run(struct store *st, uint32_t now)
{
    if (atomic_exchange_explicit(&st->wheel_lost, 0, memory_order_relaxed))
        for (uint32_t j = 0; j <= st->lmask; j++) {
            mdc_rdlock(&st->locks[j]);
            bool lost = st->wlost[j] != 0;
            mdc_unlock(&st->locks[j]);
            if (lost)
                wheel_rebuild(st, j, now);
        }
    if (now <= st->wheel_done) {
        st->wheel_done = now; /* the clock was set back (tests) */
        return;
    }
    uint32_t from = now - st->wheel_done >= EW_SLOTS
                        ? now - EW_SLOTS + 1
                        : st->wheel_done + 1;
    for (uint32_t sec = from; sec <= now; sec++)
        for (uint32_t j = 0; j <= st->lmask; j++)
            wheel_turn(st, j, EW_SLOT(sec), now);
    st->wheel_done = now;
}

/* When the sweeper wakes next: every interval, and with an interval of a
 * second or more just after a store second begins (EW_MARGIN_NS later, for
 * the coarse clock), so a deadline is acted on within that margin. */
static void sweep_wake_at(struct store *st, struct timespec *ts)
{
    uint64_t wait = (uint64_t)st->cfg.sweep_interval_ms * 1000000u;
    if (wait >= 1000000000u) {
        uint64_t t = now_ns(st) - st->epoch_ns;
        uint64_t next = ((t + wait - 1000000000u) / 1000000000u + 1) *
                            1000000000u +
                        EW_MARGIN_NS;
        wait = next - t;
    }
    clock_gettime(CLOCK_REALTIME, ts);
    uint64_t ns = (uint64_t)ts->tv_nsec + wait;
    ts->tv_sec += (time_t)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

void *sweeper_main(void *arg)
{
    struct store *st = arg;

    testhook_hold_loop("sweeper");
    pthread_mutex_lock(&st->sweep_mu);
    while (!st->sweep_stop) {
        struct timespec ts;
        sweep_wake_at(st, &ts);
        pthread_cond_timedwait(&st->sweep_cv, &st->sweep_mu, &ts);
        if (st->sweep_stop)
            break;
        pthread_mutex_unlock(&st->sweep_mu);
        uint32_t now = now_s(st);
        check_flush(st, now); /* a pending delayed flush */
        wheel_run(st, now);
        if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
            reclaim_retired(st);
        pthread_mutex_lock(&st->sweep_mu);
    }
    pthread_mutex_unlock(&st->sweep_mu);
    return NULL;
}
