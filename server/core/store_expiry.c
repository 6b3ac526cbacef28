/*
 * store_expiry.c - deadlines (memcached's exptime on the store's monotonic
 * seconds), flush_all (now or delayed) with the marks that count
 * get_flushed, and the sweeper thread that turns the expiry wheel and
 * reclaims what a flush hid.  A policy (level 3, store_policy.h).
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "alloc.h"
#include "store_policy.h"
#include "testhook.h"

/*
 * Deadlines.  A record with deadline d (a store second, now_s()) is dead
 * once now_s() >= d, i.e. once the monotonic clock reaches
 * epoch_ns + (d - 1) s.  So a deadline is the first store second that
 * begins at or after the moment it stands for: whole wall-clock seconds
 * are not whole store seconds (the store's seconds begin when it was set
 * up), and rounding down (d = now + ttl) let a record go up to a second
 * early.  The moment is taken on the precise clocks (the coarse one lags
 * by a few ms, which would move it earlier); the wall clock is read before
 * the monotonic one, so the time between the two reads can only move it
 * later.  With a test clock, wall seconds are taken as whole.
 */
static uint64_t mono_precise_ns(struct store *st)
{
    if (!st->clk_sys)
        return st->clk.mono_ns(st->clk.ctx);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int64_t wall_ns(struct store *st)
{
    if (!st->clk_sys)
        return st->clk.wall_s(st->clk.ctx) * 1000000000;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The first store second beginning at or after monotonic ns 'at'. */
static uint32_t deadline_at(struct store *st, uint64_t at)
{
    if (at <= st->epoch_ns)
        return 1;
    uint64_t s = (at - st->epoch_ns + 999999999u) / 1000000000u + 1;
    return s > UINT32_MAX ? UINT32_MAX : (uint32_t)s;
}

uint32_t deadline_of_wall(struct store *st, int64_t wall)
{
    int64_t w = wall_ns(st);
    uint64_t mono = mono_precise_ns(st);
    if (wall > INT64_MAX / 1000000000)
        return UINT32_MAX;
    int64_t rel = wall * 1000000000 - w;
    if (rel <= 0)
        return 1;
    return deadline_at(st, mono + (uint64_t)rel);
}

/* memcached expiry: 0 never; <0 already expired; <=30 days relative;
 * otherwise absolute Unix time. */
uint32_t deadline_of(struct store *st, int64_t exptime)
{
    if (exptime == 0)
        return 0;
    if (exptime < 0)
        return 1;
    if (exptime <= STORE_REL_EXPIRY_MAX)
        return deadline_at(st, mono_precise_ns(st) +
                                   (uint64_t)exptime * 1000000000u);
    return deadline_of_wall(st, exptime);
}

/* The monotonic ns at which deadline d falls (d != 0). */
static inline uint64_t deadline_ns(const struct store *st, uint32_t d)
{
    return st->epoch_ns + (uint64_t)(d - 1) * 1000000000u;
}

int64_t record_ttl(struct store *st, const struct record *r)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    if (d == 0)
        return -1;
    uint64_t at = deadline_ns(st, d), now = mono_precise_ns(st);
    return at > now ? (int64_t)((at - now) / 1000000000u) : 0;
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
    return deadline_ns(st, d);
}

/* The wall-clock second at which the record dies (dumps, cachedump): its
 * deadline, the start of a store second, which begins with a wall-clock
 * second (store_setup), so rounded to the nearest: an absolute time is
 * given back as it was set, a relative TTL rounded up. */
int64_t record_expiry_wall(struct store *st, const struct record *r)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    uint32_t f = atomic_load_explicit(&st->flush_at, memory_order_relaxed);
    if (f != 0 && (d == 0 || f < d))
        d = f;
    if (d == 0)
        return 0;
    int64_t w = wall_ns(st);
    uint64_t now = mono_precise_ns(st), at = deadline_ns(st, d);
    int64_t ws = w / 1000000000;
    if (at <= now)
        return ws + 1;
    int64_t e = (w + (int64_t)(at - now) + 500000000) / 1000000000;
    return e > ws ? e : ws + 1;
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

/*
 * flush: memcached's cut-off.  A flush takes a cut-off on the version
 * clock (cas_cut: versions handed out from then on are above it, by every
 * thread) and publishes it; every path that finds a record by key, a tag
 * or a walk treats one below it as absent (rec_dead), and a write by key
 * reclaims it first.  Nothing is walked and no byte is added to the
 * record.  The sweeper then walks the table (flush_walk) and reclaims what
 * the cut-off hides, a bounded number of buckets under each stripe lock
 * taken; eviction takes such records first, as expired ones.  A flush
 * while a walk is under way restarts it (its cut-off is the higher one).
 * The cut-off stays after the walk (a version a client set below it stays
 * hidden, as in memcached) until the version clock is 2^45 past it, so
 * that versions, CAS_BITS wide, never come round to it.
 */
void store_flush(struct store *st)
{
    uint64_t cut = cas_cut();
    /* the generation first: a walk that sees the new cut-off must not be
     * taken as the walk of this flush before it began */
    atomic_fetch_add(&st->flush_gen, 1);
    atomic_store(&st->flush_cut, cut);
    /* copies of records made outside the store (the XDP mirror) are
     * dropped: "everything" (no key) */
    if (st->hook != NULL)
        st->hook(st->hook_ctx, EV_FLUSH, NULL, 0, 0);
    if (st->sweeper_running && !atomic_exchange(&st->sweep_kick, 1)) {
        pthread_mutex_lock(&st->sweep_mu);
        pthread_cond_signal(&st->sweep_cv);
        pthread_mutex_unlock(&st->sweep_mu);
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

/* Buckets one stripe lock covers in the walk at most, and records it
 * reclaims under it at most (the bucket it is in is finished), before it
 * is let go; the buckets of one slice, and the sweeper's pause between
 * slices.  At 10^7 records (4.8 a bucket) 64 buckets held the lock for
 * 143 us of CPU on average, and for up to 168 ms when the sweeper was
 * preempted holding it (a busy machine); 32 records hold it ~15 us. */
#define FWALK_BATCH 64u
#define FWALK_RECS 32u
#define FWALK_SLICE 16384u
#define FWALK_PAUSE_NS 5000000
/* ... and at least FWALK_IDLE times as long as the slice took: the walk
 * takes at most a quarter of a CPU (freeing 10^7 records at full speed
 * took a CPU for 20 s on a busy 2-CPU machine and slowed the clients'
 * GETs by as much: docs/performance-history.md, "flush_all at 10^7
 * records").  The flushed records are hidden meanwhile, and eviction
 * takes them first. */
#define FWALK_IDLE 3u

/* The sweeper's walk after a flush: up to max_buckets buckets, stripe by
 * stripe (a stripe's buckets are j, j + nlocks, ...; a split, under the
 * stripe's lock, only moves records to the newest bucket, ahead of the
 * walk), reclaiming flushed records.  Returns true when the walk is done
 * (or none is due). */
static bool flush_walk(struct store *st, uint32_t max_buckets)
{
    uint32_t gen = atomic_load(&st->flush_gen);
    if (gen == atomic_load(&st->flush_walked)) {
        /* done: forget the cut-off once versions are far past it */
        uint64_t c = atomic_load_explicit(&st->flush_cut,
                                          memory_order_relaxed);
        if (c != 0 && ((cas_clock() - c) & CAS_MASK) > (UINT64_C(1) << 45))
            atomic_compare_exchange_strong(&st->flush_cut, &c, 0);
        return true;
    }
    if (gen != st->fwalk_gen) { /* a new flush: from the start */
        st->fwalk_gen = gen;
        st->fwalk_next = 0;
        st->fwalk_b = 0;
    }
    uint32_t done = 0;
    while (st->fwalk_next <= st->lmask && done < max_buckets) {
        uint32_t j = st->fwalk_next;
        mdc_rwlock_t *l = &st->locks[j];
        mdc_wrlock(l);
        uint32_t nb = nbuckets_now(st), b = st->fwalk_b;
        if (b < j)
            b = j;
        uint32_t freed = 0;
        for (uint32_t k = 0;
             k < FWALK_BATCH && freed < FWALK_RECS && b < nb;
             k++, b += st->lmask + 1) {
            struct record *r, *nx;
            RT_FOREACH_SAFE(r, &st->buckets[b], nx)
            {
                if (rec_flushed(st, r)) {
                    atomic_fetch_add_explicit(&st->flush_reclaimed, 1,
                                              memory_order_relaxed);
                    do_unlink_b(st, b, r);
                    freed++;
                }
            }
            done++;
        }
        mdc_unlock(l);
        if (b >= nb) {
            st->fwalk_next++;
            st->fwalk_b = 0;
        } else {
            st->fwalk_b = b;
        }
    }
    if (st->fwalk_next <= st->lmask)
        return false;
    atomic_store(&st->flush_walked, gen);
    return true;
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
            if (rec_dead(st, r, now)) {
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
/* the wheel's slots and entries: store_index.h; adding an entry:
 * store_hooks.c */

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
                wheel_add_at(st, h, d, now);
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

/* The sweeper's pacing clocks: the precise monotonic clock (the coarse
 * one's ticks of a few ms are longer than a pause) and the thread's CPU
 * time, which is what a slice costs (a slice preempted costs no more). */
static uint64_t sweep_clock_ns(clockid_t id)
{
    struct timespec t;

    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* With sweep_mu held: wait until 'ns' of the monotonic clock or a stop;
 * a flush's signal does not cut it short (a storm of flushes would
 * otherwise drive the walk at full speed). */
static void sweep_pause_until(struct store *st, uint64_t ns)
{
    for (;;) {
        uint64_t now = sweep_clock_ns(CLOCK_MONOTONIC);
        if (st->sweep_stop || now >= ns)
            return;
        uint64_t left = ns - now;
        struct timespec p;
        clock_gettime(CLOCK_REALTIME, &p);
        left += (uint64_t)p.tv_nsec;
        p.tv_sec += (time_t)(left / 1000000000u);
        p.tv_nsec = (long)(left % 1000000000u);
        pthread_cond_timedwait(&st->sweep_cv, &st->sweep_mu, &p);
    }
}

/* One turn of the sweeper, sweep_mu not held: a delayed flush due and the
 * expiry wheel's seconds (when 'woken', and in a new second '*sec'), a slice of a flush's walk, retired records.
 * Returns true when no walk is left to do; *took is the slice's CPU
 * time. */
static bool sweep_turn(struct store *st, uint64_t *took, bool woken,
                       uint32_t *sec)
{
    uint32_t now = now_s(st);
    if (woken || now != *sec) { /* at each wake, and each new second */
        *sec = now;
        check_flush(st, now); /* a pending delayed flush */
        wheel_run(st, now);
    }
    /* a flush's walk, a slice at a time: between slices the sweeper
     * pauses FWALK_IDLE times the slice's time (FWALK_PAUSE_NS at least),
     * so that it takes a quarter of a CPU at most and a stripe lock only
     * briefly, whatever the table's size and however many flushes come */
    atomic_store(&st->sweep_kick, 0);
    uint64_t t0 = sweep_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    bool walked = flush_walk(st, FWALK_SLICE);
    if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
        reclaim_retired(st);
    *took = sweep_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
    return walked && !atomic_load(&st->sweep_kick);
}

void *sweeper_main(void *arg)
{
    struct store *st = arg;
    uint64_t next_slice = 0; /* CLOCK_MONOTONIC's ns: no slice before it */

    testhook_hold_loop("sweeper");
    pthread_mutex_lock(&st->sweep_mu);
    while (!st->sweep_stop) {
        if (!atomic_load(&st->sweep_kick)) {
            struct timespec ts;
            sweep_wake_at(st, &ts);
            pthread_cond_timedwait(&st->sweep_cv, &st->sweep_mu, &ts);
        }
        if (atomic_load(&st->sweep_kick))
            sweep_pause_until(st, next_slice);
        uint32_t sec = 0;
        for (bool walked = false, woken = true; !walked && !st->sweep_stop;
             woken = false) {
            uint64_t took, pause;
            pthread_mutex_unlock(&st->sweep_mu);
            walked = sweep_turn(st, &took, woken, &sec);
            pause = took * FWALK_IDLE;
            if (pause < FWALK_PAUSE_NS)
                pause = FWALK_PAUSE_NS;
            if (pause > 1000000000u) /* a slice of a table too large */
                pause = 1000000000u;
            next_slice = sweep_clock_ns(CLOCK_MONOTONIC) + pause;
            pthread_mutex_lock(&st->sweep_mu);
            if (!walked)
                sweep_pause_until(st, next_slice);
        }
    }
    pthread_mutex_unlock(&st->sweep_mu);
    return NULL;
}
