/*
 * store_hooks.c - what the index enters when a record is linked or its
 * deadline changes, for the policies above it to read (store_index.h):
 * the expiry wheel's entries, which the sweeper turns (store_expiry.c,
 * "the expiry wheel"), and the eviction sampler's link bits and ghosts
 * (store_evict.c).  Level 2: calls only the record level.
 */
#include "config.h"

#include "alloc.h"
#include "store_index.h"

static void wheel_lose(struct store *st, uint32_t j)
{
    st->wlost[j] = 1;
    atomic_store_explicit(&st->wheel_lost, 1, memory_order_relaxed);
}

/* Enter h for deadline d (under h's stripe write lock).  A deadline
 * already past (a touch to a negative time, a record restored or linked
 * late) is entered for the next second, whose turn is still to come: its
 * own slot may have been turned already, and would wait a lap. */
void wheel_add(struct store *st, uint64_t h, uint32_t d)
{
    wheel_add_at(st, h, d, now_s(st));
}

/* wheel_add with 'now' the store second the caller's view is of: the
 * sweeper's rebuild passes the second its pass turns up to, so that a
 * deadline after it goes in its own slot, turned by the next pass, even
 * when the clock has moved on meanwhile (had it been entered for the
 * clock's next second instead, nothing would turn it until that second
 * comes) */
void wheel_add_at(struct store *st, uint64_t h, uint32_t d,
                         uint32_t now)
{
    if (st->wheels == NULL || d == 0)
        return;
    if (d <= now)
        d = now + 1;
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
    } else if (w != NULL && d <= now_s(st)) {
        /* past: entered for a later second (wheel_add), any slot */
        for (uint32_t i = 0; i < EW_SLOTS && !found; i++)
            for (uint32_t x = 0; x < w->s[i].n && !found; x++)
                found = ew_key(w->s[i].e[x]) == want;
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

/* Remember an evicted key (a racy slot: a lost ghost costs only a miss). */
void ghost_put(struct store *st, uint64_t h)
{
    __atomic_store_n(&st->ghost[(uint32_t)(h >> 16) & st->gmask],
                     (uint16_t)((h >> 48) | 1), __ATOMIC_RELAXED);
}

/*
 * The eviction bits of record being linked with hash h: a replacement
 * keeps the reads of the record it replaces, as does a key whose ghost is
 * found (consumed then); otherwise none.  Under the key's write lock.
 */
uint8_t evict_link_bits(struct store *st, uint64_t h, const struct record *old)
{
    unsigned reads = 0;
    if (old != NULL)
        reads = __atomic_load_n(&old->evb, __ATOMIC_RELAXED) & EVB_READS;
    /* no ghost before the first eviction: spare a store the slot's miss
     * (the counter shares the line every store writes) */
    if (atomic_load_explicit(&st->evictions, memory_order_relaxed) == 0)
        return (uint8_t)reads;
    uint16_t *g = &st->ghost[(uint32_t)(h >> 16) & st->gmask];
    uint16_t fp = (uint16_t)((h >> 48) | 1);
    if (__atomic_load_n(g, __ATOMIC_RELAXED) == fp) {
        __atomic_store_n(g, (uint16_t)0, __ATOMIC_RELAXED);
        if (reads == 0)
            reads = 1;
    }
    return (uint8_t)reads; /* last read: at its linking (age code 0) */
}
