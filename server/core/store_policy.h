/*
 * store_policy.h - the store's level 3, the policies (store_record.h lists
 * the levels): deadlines, flush and the sweeper that turns the expiry
 * wheel (store_expiry.c), the memory limit: reserving a record's bytes
 * before it is allocated, evicting to make room (store_evict.c), and the
 * write steps the operations share, which apply them (store_write.c).
 * The operations (level 4) call these and the levels below, never each
 * other.
 */
#ifndef MDC_STORE_POLICY_H
#define MDC_STORE_POLICY_H

#include "store_index.h"

/* Set a pending delayed flush's cut-off once its moment has come (one
 * relaxed load on the common path), before the caller takes a version:
 * what is stored from its moment on is above the cut-off. */
static inline void check_flush(struct store *st, uint32_t now)
{
    uint32_t at = atomic_load_explicit(&st->flush_at, memory_order_relaxed);
    if (__builtin_expect(at != 0, 0) && at <= now &&
        atomic_compare_exchange_strong(&st->flush_at, &at, 0))
        store_flush(st);
}

/* ---- store_expiry.c ------------------------------------------------------ */
#define EW_MARGIN_NS 20000000u /* the sweeper wakes 20 ms into a second */
uint32_t deadline_of(struct store *st, int64_t exptime);
/* the deadline of an absolute wall-clock second (a dump's) */
uint32_t deadline_of_wall(struct store *st, int64_t wall);
void set_deadline(struct store *st, struct record *r, uint64_t h,
                  uint32_t d);
void *sweeper_main(void *arg);

/* ---- store_evict.c: the memory limit ------------------------------------- */
int mem_reserve(struct store *st, size_t size);
/* Allocate a record (rec_alloc_reserved) with its bytes reserved first
 * under the memory limit, which may evict (no lock held). */
static inline int rec_alloc(struct store *st, const void *key, uint32_t klen,
                            uint32_t vlen, uint32_t flags, uint32_t ntags,
                            struct record **out)
{
    size_t real = rec_alloc_size(klen, vlen, flags, ntags);
    int rc = mem_reserve(st, real);
    if (rc != 0)
        return rc;
    return rec_alloc_reserved(st, real, key, klen, vlen, flags, ntags, out);
}

/* ---- store_write.c: the steps the operations share ----------------------- */
/* A write by key, begun: a due delayed flush run, the key's stripe
 * write-locked (kw->l, to unlock), kw->r its live record (an expired one
 * reclaimed first) or NULL.  Returns ST_NOT_FOUND without one, ST_EXISTS
 * if cas (0: any) is not its version, else ST_OK.  klen is valid. */
struct key_write {
    uint64_t h;
    mdc_rwlock_t *l;
    struct record *r;
    int gone; /* GONE_*: what was reclaimed on the way */
};
int key_write_begin(struct store *st, struct key_write *kw, const void *key,
                    uint32_t klen, uint64_t cas);
/* The order of a record's tags (sorted, distinct): a store normalises
 * them (put_common), a restore checks them. */
static inline int tag_cmp(const void *a, const void *b)
{
    const struct mdc_tag *x = a, *y = b;
    if (x->tkey != y->tkey)
        return x->tkey < y->tkey ? -1 : 1;
    return x->tval < y->tval ? -1 : x->tval > y->tval;
}
int put_common(struct store *st, enum store_mode mode,
               const struct store_item *it, uint64_t *cas_out,
               enum store_event ev);
/* The new value a replace_rmw() callback builds from the current record:
 * a || b (either may be empty, NULL when it is); buf holds bytes the
 * callback composes itself (a counter's digits). */
struct derived {
    const void *a, *b;
    uint32_t alen, blen;
    char buf[24];
};
/* Builds d from old (held, its CAS checked) and ctx: 0 to replace old by
 * it, else a status replace_rmw() returns as it is. */
typedef int (*derive_fn)(struct store *st, struct record *old, void *ctx,
                         struct derived *d);
/* The read-modify-write of append, prepend and the counters: read key's
 * live record, check its CAS (cas; 0: any, else ST_EXISTS), build the new
 * value with fn and commit a record of it that keeps old's flags,
 * deadline and tags, if old is still the key's live record; else (another
 * writer came first) start again (optimistic retry; ST_NO_MEMORY after
 * RETRY_LIMIT).  A key with no live record, or one that went away before
 * the commit, answers 'gone' (append: ST_NOT_STORED, a counter:
 * ST_NOT_FOUND).  klen is valid (check_key). */
int replace_rmw(struct store *st, const void *key, uint32_t klen,
                uint64_t cas, enum store_event ev, int gone, derive_fn fn,
                void *ctx, uint64_t *cas_out);
/* Mark a linked record stale in place, under its stripe's write lock
 * (md I, and each record of a stale tag delete). */
static inline void do_invalidate(struct store *st, struct record *r,
                                 uint64_t h, bool set_ttl, int64_t exptime)
{
    announce(st, EV_STALE, r, h);
    if (set_ttl)
        set_deadline(st, r, h, deadline_of(st, exptime));
    rec_set_rflag(r, R_STALE);
    rec_clear_rflag(r, R_WON); /* the next reader wins */
    rec_set_cas(r, cas_over(next_cas(), rec_cas(r)));
}

/* ---- the read by key (store_get(), and the writes that read first) ------ */
/* The live record of key (hash h) with a hold on it, its access noted
 * (atime and the eviction bits at most once per ATIME_GRAIN, R_FETCHED),
 * or NULL; a dead one found is reclaimed (no lock held on entry or
 * return).  *prev, if not NULL, gets the access state before this one. */
static inline struct record *get_hashed(struct store *st, uint64_t h,
                                        const void *key, uint32_t klen,
                                        struct store_access *prev)
{
    mdc_rwlock_t *l = stripe_of(st, h);
    int expired = 0;
    bool flushed = false;

    uint64_t ns = now_ns(st);
    uint32_t now = secs_of(st, ns);
    check_flush(st, now);
    mdc_rdlock(l);
    struct record *r = do_find(st, h, key, klen);
    if (r != NULL) {
        if (rec_dead(st, r, now)) {
            flushed = rec_flushed(st, r);
            r = NULL;
            expired = 1;
        } else {
            rec_hold(r);
            /* recency and reads for eviction, written at most once per
             * ATIME_GRAIN so that reads of a hot record share its line */
            uint16_t t = tick_of(ns);
            uint16_t at = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
            uint8_t fl = rec_rflags(r);
            if (prev != NULL) {
                prev->hit_before = (fl & R_FETCHED) != 0;
                prev->idle_s = tick_secs(tick_age(t, at));
            }
            if (atime_due(t, at, fl)) {
                __atomic_store_n(&r->atime, t, __ATOMIC_RELAXED);
                rec_note_read(r);
            }
            if (!(fl & R_FETCHED))
                rec_set_rflag(r, R_FETCHED);
        }
    }
    mdc_unlock(l);
    if (expired) /* lazy reclaim */
        reclaim_expired_key(st, h, key, klen, flushed);
    return r;
}

#endif
