/*
 * store.c - the record forest: buckets of red-black trees under striped
 * reader-writer locks, records with reference counts, expiry, memory
 * accounting and sampled-LRU eviction, counters, and the mutation hook.
 *
 * Lock discipline (docs/threads.md): at most one record-bucket lock is held
 * at a time; tag-bucket locks (tags.c) nest inside it and are innermost.
 * Allocation that may evict happens with no lock held.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "alloc.h"
#include "store_int.h"
#include "tags.h"

#define DEFAULT_MEM_LIMIT ((size_t)1024 << 20)
#define DEFAULT_MAX_ITEM (1u << 20)
#define DEFAULT_MAX_TAGS 64u
#define DEFAULT_TAG_BUCKETS 64u
#define DEFAULT_TAG_REPLY ((size_t)16 << 20)
#define DEFAULT_NLOCKS 1024u
#define MIN_BUCKETS 1024u
#define INITIAL_BUCKETS 65536u
#define GROW_LOAD 1 /* records per bucket that trigger a split */
#define GROW_STEPS 8 /* buckets split per trigger */
#define MAX_BUCKETS (1u << 30)
#define EVICT_SAMPLES 5
#define EVICT_PROBE 64
#define RETRY_LIMIT 1000000

static int rec_cmp(struct record *a, struct record *b)
{
    if (a->hash32 != b->hash32)
        return a->hash32 < b->hash32 ? -1 : 1;
    if (a->klen != b->klen)
        return a->klen < b->klen ? -1 : 1;
    return memcmp(a->data, b->data, a->klen);
}
RB_GENERATE_STATIC(rtree, record, rb, rec_cmp);

/* ---- status and event names -------------------------------------------- */
const char *store_strstatus(int status)
{
    switch (status) {
    case ST_OK: return "ok";
    case ST_NOT_FOUND: return "not found";
    case ST_EXISTS: return "exists";
    case ST_NOT_STORED: return "not stored";
    case ST_TOO_LARGE: return "value too large";
    case ST_KEY_INVALID: return "key too long";
    case ST_NO_MEMORY: return "out of memory";
    case ST_TOO_MANY_TAGS: return "too many tags";
    case ST_NOT_NUMBER: return "value is not a number";
    case ST_TRUNCATED: return "reply truncated";
    case ST_INVALID: return "invalid argument";
    default: return "unknown status";
    }
}

const char *store_event_name(enum store_event ev)
{
    static const char *const names[] = {
#define X(e, s) s,
        STORE_EVENTS(X)
#undef X
    };
    return (unsigned)ev < EV__COUNT ? names[ev] : "?";
}

/* ---- clock --------------------------------------------------------------- */
static uint64_t sys_mono_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    /* the coarse clock (a few ms resolution) is several times cheaper and
     * lags the precise one: a deadline it checks is never passed earlier
     * than bpf_ktime_get_ns() sees it (the XDP mirror stays conservative) */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int64_t sys_wall_s(void *ctx)
{
    (void)ctx;
    return (int64_t)time(NULL);
}

/* Store seconds: 1 at creation, so a deadline of 0 can mean "never". */
static inline uint32_t secs_of(struct store *st, uint64_t ns)
{
    return (uint32_t)((ns - st->epoch_ns) / 1000000000u) + 1;
}
static inline uint32_t tick_of(uint64_t ns) { return (uint32_t)(ns >> 20); }
/* store_get refreshes atime only when it is this many ticks old (~1 s) */
#define ATIME_GRAIN 1024u
static inline uint64_t now_ns(struct store *st)
{
    return st->clk.mono_ns(st->clk.ctx);
}
static inline uint32_t now_s(struct store *st)
{
    return secs_of(st, now_ns(st));
}
static inline uint32_t now_tick(struct store *st)
{
    return tick_of(now_ns(st));
}

static inline int rec_expired(const struct record *r, uint32_t now)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    return d != 0 && d <= now;
}

/* memcached expiry: 0 never; <0 already expired; <=30 days relative;
 * otherwise absolute Unix time, converted to the monotonic clock now. */
static uint32_t deadline_of(struct store *st, int64_t exptime)
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

/* ---- CAS versions: per-thread blocks of a global counter ------------------ */
static _Atomic uint64_t cas_global = 1;
static __thread uint64_t cas_next, cas_end;
static uint64_t next_cas(void)
{
    if (cas_next == cas_end) {
        cas_next = atomic_fetch_add_explicit(&cas_global, 256,
                                             memory_order_relaxed);
        cas_end = cas_next + 256;
    }
    return cas_next++;
}

/* ---- accounting ---------------------------------------------------------- */
static void store_account(struct store *st, int64_t delta, int tag_index)
{
    atomic_fetch_add_explicit(&st->mem, delta, memory_order_relaxed);
    if (tag_index)
        atomic_fetch_add_explicit(&st->tag_mem, delta, memory_order_relaxed);
}

uint64_t store_hash(const void *key, uint32_t klen)
{
    return XXH3_64bits(key, klen);
}

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
        st->hook(st->hook_ctx, ev, rec_key(r), r->klen, h);
}

void store_flush(struct store *st);

/* ---- get_flushed: the keys the last flush removed (store_int.h) ---------- */
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
static bool fmarks_take(struct store *st, uint64_t h)
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

/* Run a pending delayed flush once its moment has come (one relaxed load
 * on the common path). */
static inline void check_flush(struct store *st, uint32_t now)
{
    uint32_t at = atomic_load_explicit(&st->flush_at, memory_order_relaxed);
    if (__builtin_expect(at != 0, 0) && at <= now &&
        atomic_compare_exchange_strong(&st->flush_at, &at, 0))
        store_flush(st);
}

/* ---- records -------------------------------------------------------------- */
const void *record_key(const struct record *r) { return r->data; }
uint32_t record_klen(const struct record *r) { return r->klen; }
const void *record_value(const struct record *r) { return r->data + r->klen; }
uint32_t record_vlen(const struct record *r) { return r->vlen; }
uint32_t record_flags(const struct record *r) { return r->flags; }
uint64_t record_cas(const struct record *r)
{
    return __atomic_load_n(&r->cas, __ATOMIC_RELAXED);
}
bool record_stale(const struct record *r)
{
    return (rec_rflags(r) & R_STALE) != 0;
}
bool record_won(const struct record *r)
{
    return (rec_rflags(r) & R_WON) != 0;
}
bool record_meta_marked(const struct record *r)
{
    return (rec_rflags(r) & (R_STALE | R_WON)) != 0;
}
uint32_t record_ntags(const struct record *r)
{
    if (!(rec_rflags(r) & R_TAGGED))
        return 0;
    return rec_tags((struct record *)r)->ntags;
}
struct mdc_tag record_tag(const struct record *r, uint32_t i)
{
    struct tag_entry *e = &rec_tags((struct record *)r)->e[i];
    struct mdc_tag t = {e->tkey, e->tval};
    return t;
}

/* The size rec_alloc() asked for: from the header, so that freeing needs
 * no allocator lookup (mdc_alloc_size, mdc_free_sized). */
static inline size_t rec_req_size(uint32_t klen, uint32_t vlen,
                                  uint32_t ntags)
{
    if (ntags == 0)
        return sizeof(struct record) + klen + vlen;
    return rec_tag_offset(klen, vlen) + sizeof(struct tag_area) +
           (size_t)ntags * sizeof(struct tag_entry);
}
static inline size_t rec_req_size_of(struct record *r)
{
    return rec_req_size(r->klen, r->vlen,
                        (rec_rflags(r) & R_TAGGED) ? rec_tags(r)->ntags : 0);
}

/* Free r; returns the bytes it was accounted for (the caller accounts). */
static size_t rec_free_quiet(struct record *r)
{
    size_t req = rec_req_size_of(r);
    size_t sz = mdc_alloc_size(r, req);
    mdc_free_sized(r, req);
    return sz;
}

static void rec_free(struct store *st, struct record *r)
{
    store_account(st, -(int64_t)rec_free_quiet(r), 0);
}

/*
 * References (docs/threads.md, "Reads write nothing shared").  A record is
 * kept alive by tokens: the index's (REF_INDEX in refcnt while linked),
 * counted references (the rest of refcnt: tag queries, eviction, a thread
 * whose hold slots are full) and holds published in a thread's slots
 * (readers.h: what store_get takes, writing only the thread's own line).
 * Tokens are interchangeable: store_release drops one, never the index's;
 * the thread that drops the last counted token retires the record, which
 * is freed once no slot holds it.
 */
#define REF_INDEX (1u << 31)

static void rec_retire(struct store *st, struct record *r)
{
    if (!mdc_held_anywhere(r)) {
        rec_free(st, r);
        return;
    }
    pthread_mutex_lock(&st->retire_mu);
    r->rb.rbe_left = st->retired; /* out of every tree: the link is free */
    st->retired = r;
    atomic_fetch_add_explicit(&st->nretired, 1, memory_order_relaxed);
    pthread_mutex_unlock(&st->retire_mu);
}

/* Free the retired records no slot holds any more. */
static void reclaim_retired(struct store *st)
{
    if (pthread_mutex_trylock(&st->retire_mu) != 0)
        return;
    struct record *r = st->retired, *keep = NULL;
    st->retired = NULL;
    while (r != NULL) {
        struct record *next = r->rb.rbe_left;
        if (!mdc_held_anywhere(r)) {
            atomic_fetch_sub_explicit(&st->nretired, 1, memory_order_relaxed);
            rec_free(st, r);
        } else {
            r->rb.rbe_left = keep;
            keep = r;
        }
        r = next;
    }
    st->retired = keep;
    pthread_mutex_unlock(&st->retire_mu);
}

/* A hold on a record found under its lock (before the lock is left). */
static inline void rec_hold(struct record *r)
{
    if (!mdc_hold(r))
        rec_incref(r);
}

/* The index lets go of an unlinked record. */
static void rec_unindex(struct store *st, struct record *r)
{
    if (__atomic_fetch_sub(&r->refcnt, REF_INDEX, __ATOMIC_SEQ_CST) ==
        REF_INDEX)
        rec_retire(st, r);
}

void store_release(struct store *st, struct record *r)
{
    if (r == NULL)
        return;
    if (!mdc_unhold_own(r)) {
        for (unsigned spins = 0;; spins++) {
            uint32_t c = __atomic_load_n(&r->refcnt, __ATOMIC_SEQ_CST);
            uint32_t n = c & ~REF_INDEX;
            if (n >= 2 || (n == 1 && (c & REF_INDEX))) {
                /* never the last token: take a counted one */
                if (__atomic_compare_exchange_n(&r->refcnt, &c, c - 1, 0,
                                                __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))
                    break;
                continue;
            }
            if (mdc_unhold_any(r)) /* taken by another thread's slot */
                break;
            if (c == 1) {
                if (__atomic_compare_exchange_n(&r->refcnt, &c, 0, 0,
                                                __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST)) {
                    rec_retire(st, r);
                    break;
                }
                continue;
            }
            /* only the index's token and no hold: a release without a
             * reference */
            if (spins > 1000000) {
                fprintf(stderr, "store_release: record without reference\n");
                abort();
            }
            sched_yield();
        }
    }
    if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
        reclaim_retired(st);
}

static int evict_one(struct store *st);

/* Change a linked record's deadline in place (touch/gat), under the write
 * lock, keeping the count of records the sweep must look at. */
static void set_deadline(struct store *st, struct record *r, uint32_t d)
{
    uint32_t o = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    if (o == 0 && d != 0)
        atomic_fetch_add_explicit(&st->expiring, 1, memory_order_relaxed);
    else if (o != 0 && d == 0)
        atomic_fetch_sub_explicit(&st->expiring, 1, memory_order_relaxed);
    __atomic_store_n(&r->deadline, d, __ATOMIC_RELAXED);
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
static int reserve(struct store *st, size_t size)
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

/* Sort and drop duplicate tags; returns the distinct count. */
static int tag_cmp(const void *a, const void *b)
{
    const struct mdc_tag *x = a, *y = b;
    if (x->tkey != y->tkey)
        return x->tkey < y->tkey ? -1 : 1;
    return x->tval < y->tval ? -1 : x->tval > y->tval;
}

/*
 * Allocate a record (refcnt 1, not linked) with key and room for the value
 * and 'ntags' tag entries; the caller fills value and tags.  Accounting is
 * done here with its exact usable size.
 */
static int rec_alloc(struct store *st, const void *key, uint32_t klen,
                     uint32_t vlen, uint32_t ntags, struct record **out)
{
    size_t size = rec_req_size(klen, vlen, ntags);
    size_t real = mdc_good_size(size);
    int rc = reserve(st, real);
    if (rc != 0)
        return rc;
    struct record *r = mdc_malloc(size);
    if (r == NULL) {
        store_account(st, -(int64_t)real, 0);
        return ST_NO_MEMORY;
    }
    /* correct the reservation to the exact usable size */
    size_t usable = mdc_alloc_size(r, size);
    if (usable != real)
        store_account(st, (int64_t)usable - (int64_t)real, 0);
    memset(r, 0, sizeof(*r));
    uint64_t h = store_hash(key, klen);
    r->hash32 = (uint32_t)(h >> 32);
    r->klen = (uint16_t)klen;
    r->vlen = vlen;
    r->refcnt = 1;
    if (klen)
        memcpy(r->data, key, klen);
    if (ntags > 0) {
        r->rflags = R_TAGGED;
        struct tag_area *ta = rec_tags(r);
        ta->ntags = ntags;
        ta->lseq = 0;
    }
    *out = r;
    return 0;
}

/* Copy the tags of 'src' (sorted, distinct) into the entries of 'r'. */
static void rec_set_tags(struct record *r, const struct mdc_tag *tags,
                         uint32_t n)
{
    struct tag_area *ta = rec_tags(r);
    for (uint32_t i = 0; i < n; i++) {
        ta->e[i].tkey = tags[i].tkey;
        ta->e[i].tval = tags[i].tval;
        ta->e[i].tv = NULL;
        ta->e[i].rec = r;
    }
}

static void rec_copy_tags(struct record *r, struct record *src)
{
    struct tag_area *sa = rec_tags(src), *ta = rec_tags(r);
    for (uint32_t i = 0; i < sa->ntags; i++) {
        ta->e[i].tkey = sa->e[i].tkey;
        ta->e[i].tval = sa->e[i].tval;
        ta->e[i].tv = NULL;
        ta->e[i].rec = r;
    }
}

/* ---- lookup and (un)linking; caller holds the bucket lock ----------------- */
static struct record *do_find(struct store *st, uint64_t h, const void *key,
                              uint32_t klen)
{
    uint32_t h32 = (uint32_t)(h >> 32);
    struct record *n = RB_ROOT(&st->buckets[bucket_idx(st, h)]);
    while (n != NULL) {
        int c;
        if (h32 != n->hash32)
            c = h32 < n->hash32 ? -1 : 1;
        else if (klen != n->klen)
            c = klen < n->klen ? -1 : 1;
        else
            c = memcmp(key, n->data, klen);
        if (c == 0)
            return n;
        n = c < 0 ? RB_LEFT(n, rb) : RB_RIGHT(n, rb);
    }
    return NULL;
}

/* Take 'r' out of the record forest (not yet out of the tag index: the
 * index's reference stays until it is, see rec_untag). */
static void do_detach_b(struct store *st, uint32_t b, struct record *r)
{
    RB_REMOVE(rtree, &st->buckets[b], r);
    rec_clear_rflag(r, R_LINKED);
    atomic_fetch_sub_explicit(&st->curr_items, 1, memory_order_relaxed);
    if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
        atomic_fetch_sub_explicit(&st->expiring, 1, memory_order_relaxed);
}

/* Take a detached record's tags out of the tag index. */
static void rec_untag(struct store *st, struct record *r)
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
static void do_unlink_b(struct store *st, uint32_t b, struct record *r)
{
    do_detach_b(st, b, r);
    rec_untag(st, r);
    rec_unindex(st, r);
}

static void do_unlink(struct store *st, uint64_t h, struct record *r)
{
    do_unlink_b(st, bucket_idx(st, h), r);
}

/*
 * Link new record 'r' (its creator's reference becomes the index's),
 * replacing 'old' if not NULL.  keep_pos: r's tags are old's tags, put each
 * entry where old's is so tstack order survives append/incr.
 * Returns 0 or ST_NO_MEMORY (tag node allocation failed; nothing changed).
 */
static int do_link(struct store *st, uint64_t h, struct record *r,
                   struct record *old, int keep_pos)
{
    uint32_t b = bucket_idx(st, h);
    uint32_t nt = (rec_rflags(r) & R_TAGGED) ? rec_tags(r)->ntags : 0;
    struct tag_area *ta = nt ? rec_tags(r) : NULL;
    int64_t tmem = 0, d_items = 0, d_tagged = 0, d_links = 0, d_expiring = 0;

    (void)fmarks_take(st, h); /* stored again: a later miss is no flush's */

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
        RB_REMOVE(rtree, &st->buckets[b], old);
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
    RB_INSERT(rtree, &st->buckets[b], r);
    if (r->deadline != 0)
        d_expiring++;
    /* the creator's reference becomes the index's */
    __atomic_fetch_add(&r->refcnt, REF_INDEX - 1, __ATOMIC_RELAXED);
    rec_set_rflag(r, R_LINKED);
    __atomic_store_n(&r->atime, 0, __ATOMIC_RELAXED);
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

/* Remove an expired record found under the write lock. */
static void do_expire(struct store *st, struct record *r, uint64_t h)
{
    announce(st, EV_EXPIRE, r, h);
    atomic_fetch_add_explicit(&st->expired, 1, memory_order_relaxed);
    if (!(rec_rflags(r) & R_FETCHED))
        atomic_fetch_add_explicit(&st->expired_unfetched, 1,
                                  memory_order_relaxed);
    do_unlink(st, h, r);
}

/* Find a live record under the write lock, reclaiming it if expired. */
static struct record *do_find_live(struct store *st, uint64_t h,
                                   const void *key, uint32_t klen)
{
    struct record *r = do_find(st, h, key, klen);
    if (r != NULL && rec_expired(r, now_s(st))) {
        do_expire(st, r, h);
        r = NULL;
    }
    return r;
}

/* ---- create / destroy ----------------------------------------------------- */
static uint32_t pow2_at_least(uint64_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 31))
        p <<= 1;
    return p;
}

static void *sweeper_main(void *arg);

struct store *store_setup(const struct store_config *cfg)
{
    struct store *st = mdc_calloc_aligned(64, sizeof(*st));
    if (st == NULL)
        return NULL;
    if (cfg != NULL)
        st->cfg = *cfg;
    struct store_config *c = &st->cfg;
    if (c->mem_limit == 0)
        c->mem_limit = DEFAULT_MEM_LIMIT;
    if (c->max_item_size == 0)
        c->max_item_size = DEFAULT_MAX_ITEM;
    if (c->max_tags == 0)
        c->max_tags = DEFAULT_MAX_TAGS;
    if (c->max_tags > 65535)
        c->max_tags = 65535;
    if (c->tag_buckets == 0)
        c->tag_buckets = DEFAULT_TAG_BUCKETS;
    c->tag_buckets = pow2_at_least(c->tag_buckets);
    if (c->tag_reply_limit == 0)
        c->tag_reply_limit = DEFAULT_TAG_REPLY;
    int explicit_buckets = c->nbuckets != 0;
    if (c->nbuckets == 0) {
        /* about eight smallest records per bucket when memory is full: a few
         * levels of tree, and under 8 bytes of bucket array per record */
        uint64_t want = c->mem_limit / (112 * 8);
        c->nbuckets = pow2_at_least(want < MIN_BUCKETS ? MIN_BUCKETS : want);
    }
    c->nbuckets = pow2_at_least(c->nbuckets);
    if (c->nbuckets > MAX_BUCKETS)
        c->nbuckets = MAX_BUCKETS;
    if (c->nlocks == 0)
        c->nlocks = DEFAULT_NLOCKS;
    c->nlocks = pow2_at_least(c->nlocks);
    if (c->nlocks > c->nbuckets)
        c->nlocks = c->nbuckets;
    /* the table starts small and grows by linear hashing up to nbuckets
     * (reserved, but its pages are only touched as buckets come into use);
     * an explicit bucket count (-b) is used as it is */
    uint32_t init = c->initial_buckets;
    if (init == 0)
        init = explicit_buckets ? c->nbuckets : INITIAL_BUCKETS;
    init = pow2_at_least(init);
    if (init < c->nlocks)
        init = c->nlocks;
    if (init > c->nbuckets)
        init = c->nbuckets;
    c->initial_buckets = init;
    atomic_store(&st->hstate, (uint64_t)init << 32);

    st->bmask = c->nbuckets - 1;
    st->lmask = c->nlocks - 1;
    st->clk.mono_ns = sys_mono_ns;
    st->clk.wall_s = sys_wall_s;
    st->epoch_ns = sys_mono_ns(NULL);
    st->buckets = mdc_huge_calloc((size_t)c->nbuckets * sizeof(*st->buckets));
    st->locks = mdc_calloc(c->nlocks, sizeof(*st->locks));
    st->fmarks = mdc_calloc(c->nlocks, sizeof(*st->fmarks));
    st->tags = tags_setup(c->tag_buckets);
    if (st->buckets == NULL || st->locks == NULL || st->fmarks == NULL ||
        st->tags == NULL)
        goto fail;
    for (uint32_t i = 0; i < c->nlocks; i++)
        mdc_rwlock_init(&st->locks[i]);
    st->fixed_bytes = sizeof(*st) +
                      (uint64_t)c->nlocks *
                          (sizeof(*st->locks) + sizeof(*st->fmarks)) +
                      tags_fixed_bytes(st->tags); /* + buckets in use */
    atomic_store(&st->evict_seed, 0x9E3779B97F4A7C15ull);
    atomic_store(&st->mem_limit, (int64_t)c->mem_limit);
    pthread_mutex_init(&st->sweep_mu, NULL);
    pthread_mutex_init(&st->grow_mu, NULL);
    pthread_mutex_init(&st->retire_mu, NULL);
    pthread_cond_init(&st->sweep_cv, NULL);
    if (c->sweep_interval_ms != 0) {
        if (pthread_create(&st->sweeper, NULL, sweeper_main, st) != 0)
            goto fail;
        st->sweeper_running = 1;
    }
    return st;
fail:
    if (st->locks)
        mdc_free(st->locks);
    mdc_free(st->fmarks);
    mdc_huge_free(st->buckets, (size_t)c->nbuckets * sizeof(*st->buckets));
    if (st->tags != NULL) {
        int64_t tmem = 0;
        tags_teardown(st->tags, &tmem);
    }
    mdc_free(st);
    return NULL;
}

/* Post-order walk through child links only (depth <= 2 log2 n). */
static void free_tree(struct store *st, struct record *r)
{
    while (r != NULL) {
        free_tree(st, RB_LEFT(r, rb));
        struct record *right = RB_RIGHT(r, rb);
        rec_clear_rflag(r, R_LINKED);
        if (rec_rflags(r) & R_TAGGED) {
            struct tag_area *ta = rec_tags(r);
            for (uint32_t i = 0; i < ta->ntags; i++)
                ta->e[i].tv = NULL;
        }
        rec_unindex(st, r);
        r = right;
    }
}

void store_teardown(struct store *st)
{
    if (st == NULL)
        return;
    if (st->sweeper_running) {
        pthread_mutex_lock(&st->sweep_mu);
        st->sweep_stop = 1;
        pthread_cond_signal(&st->sweep_cv);
        pthread_mutex_unlock(&st->sweep_mu);
        pthread_join(st->sweeper, NULL);
    }
    st->hook = NULL;
    /* no other thread may use the store now: drop every record without
     * rebalancing trees or unlinking tags one by one (tags_teardown frees
     * the whole tag index) */
    for (uint32_t b = 0; b < nbuckets_now(st); b++) {
        free_tree(st, RB_ROOT(&st->buckets[b]));
        RB_INIT(&st->buckets[b]);
    }
    int64_t tmem = 0;
    tags_teardown(st->tags, &tmem);
    store_account(st, tmem, 1);
    reclaim_retired(st); /* what is still held stays (as a count did) */
    pthread_mutex_destroy(&st->retire_mu);
    for (uint32_t i = 0; i <= st->lmask; i++)
        mdc_rwlock_destroy(&st->locks[i]);
    pthread_mutex_destroy(&st->sweep_mu);
    pthread_mutex_destroy(&st->grow_mu);
    pthread_cond_destroy(&st->sweep_cv);
    mdc_free(st->locks);
    for (uint32_t i = 0; i <= st->lmask; i++)
        mdc_free(st->fmarks[i].h);
    mdc_free(st->fmarks);
    mdc_huge_free(st->buckets, (size_t)st->cfg.nbuckets * sizeof(*st->buckets));
    mdc_free(st);
}

void store_set_hook(struct store *st, store_hook_fn fn, void *ctx)
{
    st->hook = fn;
    st->hook_ctx = ctx;
}

void store_set_clock(struct store *st, const struct store_clock *clk)
{
    st->clk = *clk;
    st->epoch_ns = clk->mono_ns(clk->ctx);
}

const struct store_config *store_config(const struct store *st)
{
    return &st->cfg;
}

void store_get_stats(struct store *st, struct store_stats *o)
{
    memset(o, 0, sizeof(*o));
#define LD(f) atomic_load_explicit(&st->f, memory_order_relaxed)
    o->curr_items = LD(curr_items);
    o->total_items = LD(total_items);
    int64_t m = LD(mem), tm = LD(tag_mem);
    o->bytes = m > 0 ? (uint64_t)m : 0;
    o->tag_bytes = tm > 0 ? (uint64_t)tm : 0;
    o->limit_maxbytes = (uint64_t)atomic_load_explicit(&st->mem_limit,
                                                       memory_order_relaxed);
    o->evictions = LD(evictions);
    o->expired = LD(expired);
    o->expired_unfetched = LD(expired_unfetched);
    o->evicted_unfetched = LD(evicted_unfetched);
    o->get_expired = LD(get_expired);
    o->nomem_held = LD(nomem_held);
    o->direct_reclaims = LD(direct_reclaims);
    o->lrutail_reflocked = LD(lrutail_reflocked);
    o->get_flushed = LD(get_flushed);
    o->tagged_items = LD(tagged_items);
    o->tag_links = LD(tag_links);
#undef LD
    uint64_t nk, nv, nl;
    tags_counts(st->tags, &nk, &nv, &nl);
    o->tag_keys = nk;
    o->tag_values = nv;
    o->nbuckets = nbuckets_now(st);
    o->fixed_bytes = st->fixed_bytes + o->nbuckets * sizeof(*st->buckets);
}

/* ---- eviction ---------------------------------------------------------------- */
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
                      uint32_t tick, struct record **best,
                      uint32_t *best_age)
{
    mdc_rwlock_t *l = lock_of(st, b);
    struct record *r;
    int hit = 0;

    mdc_rdlock(l);
    RB_FOREACH(r, rtree, &st->buckets[b])
    {
        hit = 1;
        uint32_t age =
            rec_expired(r, now)
                ? UINT32_MAX
                : tick - __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
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
    uint32_t now = now_s(st), tick = now_tick(st);
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

    uint64_t h = store_hash(rec_key(best), best->klen);
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

/* ---- validation ---------------------------------------------------------------- */
static int check_key(uint32_t klen)
{
    return klen > STORE_MAX_KEY ? ST_KEY_INVALID : 0;
}

/* ---- get ---------------------------------------------------------------------- */
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

static struct record *get_hashed(struct store *st, uint64_t h,
                                 const void *key, uint32_t klen,
                                 struct store_access *prev);

static struct record *get_common(struct store *st, const void *key,
                                 uint32_t klen, struct store_access *prev)
{
    if (klen > STORE_MAX_KEY)
        return NULL;
    return get_hashed(st, store_hash(key, klen), key, klen, prev);
}

static struct record *get_hashed(struct store *st, uint64_t h,
                                 const void *key, uint32_t klen,
                                 struct store_access *prev)
{
    mdc_rwlock_t *l = stripe_of(st, h);
    int expired = 0;

    uint64_t ns = now_ns(st);
    check_flush(st, secs_of(st, ns));
    mdc_rdlock(l);
    struct record *r = do_find(st, h, key, klen);
    if (r == NULL && fmarks_take(st, h))
        atomic_fetch_add_explicit(&st->get_flushed, 1, memory_order_relaxed);
    if (r != NULL) {
        if (rec_expired(r, secs_of(st, ns))) {
            r = NULL;
            expired = 1;
        } else {
            rec_hold(r);
            /* recency for eviction, written at most once per ATIME_GRAIN
             * so that reads of a hot record share its line */
            uint32_t t = tick_of(ns);
            uint32_t at = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
            uint8_t fl = rec_rflags(r);
            if (prev != NULL) {
                prev->hit_before = (fl & R_FETCHED) != 0;
                /* ticks of 2^20 ns */
                prev->idle_s = (uint32_t)(((uint64_t)(t - at) << 20) /
                                          1000000000u);
            }
            if (t - at >= ATIME_GRAIN)
                __atomic_store_n(&r->atime, t, __ATOMIC_RELAXED);
            if (!(fl & R_FETCHED))
                rec_set_rflag(r, R_FETCHED);
        }
    }
    mdc_unlock(l);
    if (expired) {
        atomic_fetch_add_explicit(&st->get_expired, 1, memory_order_relaxed);
        /* lazy reclaim */
        mdc_wrlock(l);
        (void)do_find_live(st, h, key, klen);
        mdc_unlock(l);
    }
    return r;
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
    RB_FOREACH_SAFE(r, rtree, &st->buckets[b], nx)
    {
        uint64_t h = store_hash(rec_key(r), r->klen);
        if ((uint32_t)h & n) {
            RB_REMOVE(rtree, &st->buckets[b], r);
            RB_INSERT(rtree, &st->buckets[b + n], r);
        }
    }
    if (++split == n) {
        n *= 2;
        split = 0;
    }
    atomic_store_explicit(&st->hstate, (uint64_t)n << 32 | split,
                          memory_order_relaxed);
    mdc_unlock(l);
}

/* After an insert: grow while records outnumber GROW_LOAD per bucket.
 * Called with no lock held; one thread grows at a time, others go on. */
static void maybe_grow(struct store *st)
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
    if (r != NULL && !rec_expired(r, now_s(st))) {
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
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    uint32_t d = deadline_of(st, exptime);

    mdc_wrlock(l);
    struct record *r = do_find_live(st, h, key, klen);
    if (r != NULL) {
        announce(st, EV_TOUCH, r, h);
        set_deadline(st, r, d);
        __atomic_store_n(&r->atime, now_tick(st), __ATOMIC_RELAXED);
        rec_set_rflag(r, R_FETCHED);
        rec_hold(r);
    } else if (fmarks_take(st, h)) {
        atomic_fetch_add_explicit(&st->get_flushed, 1, memory_order_relaxed);
    }
    mdc_unlock(l);
    return r;
}

/* ---- meta get: vivify, recache, stale and win tokens ----------------------- */
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
    uint32_t t = tick_of(ns);
    uint32_t at = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
    uint8_t fl = rec_rflags(r);
    bool want = false;

    res->prev.hit_before = (fl & R_FETCHED) != 0;
    res->prev.idle_s = (uint32_t)(((uint64_t)(t - at) << 20) / 1000000000u);
    if (!q->no_bump) {
        if (t - at >= ATIME_GRAIN)
            __atomic_store_n(&r->atime, t, __ATOMIC_RELAXED);
        if (!(fl & R_FETCHED))
            rec_set_rflag(r, R_FETCHED);
    }
    if (res->created) { /* its expiry came from N; T then applies */
        res->won = true;
        if (q->touch)
            set_deadline(st, r, deadline_of(st, q->exptime));
        return;
    }
    if (q->recache && !q->recache_after_touch)
        want = recache_due(st, r, q->recache_exptime);
    if (q->touch) {
        announce(st, EV_TOUCH, r, h);
        set_deadline(st, r, deadline_of(st, q->exptime));
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
        int expired = 0;
        check_flush(st, now);
        if (wr) {
            mdc_wrlock(l);
            r = do_find_live(st, h, key, klen);
        } else {
            mdc_rdlock(l);
            r = do_find(st, h, key, klen);
            if (r != NULL && rec_expired(r, now)) {
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
                    rec_alloc(st, key, klen, 0, 0, &fresh) != 0)
                    return NULL;
                wr = true;
                continue;
            }
            r = fresh;
            fresh = NULL;
            r->deadline = deadline_of(st, q->vivify_exptime);
            r->cas = next_cas();
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
        if (expired) {
            atomic_fetch_add_explicit(&st->get_expired, 1,
                                      memory_order_relaxed);
            mdc_wrlock(l);
            (void)do_find_live(st, h, key, klen);
            mdc_unlock(l);
        }
        break;
    }
    if (fresh != NULL)
        store_release(st, fresh);
    if (res->created)
        maybe_grow(st);
    return r;
}

/* Mark a linked record stale in place, under its stripe's write lock. */
static void do_invalidate(struct store *st, struct record *r, uint64_t h,
                          bool set_ttl, int64_t exptime)
{
    announce(st, EV_STALE, r, h);
    if (set_ttl)
        set_deadline(st, r, deadline_of(st, exptime));
    rec_set_rflag(r, R_STALE);
    rec_clear_rflag(r, R_WON); /* the next reader wins */
    __atomic_store_n(&r->cas, next_cas(), __ATOMIC_RELAXED);
}

int store_invalidate(struct store *st, const void *key, uint32_t klen,
                     uint64_t cas, bool set_ttl, int64_t exptime)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    int rc = ST_NOT_FOUND;

    check_flush(st, now_s(st));
    mdc_wrlock(l);
    struct record *r = do_find_live(st, h, key, klen);
    if (r != NULL) {
        if (cas != 0 && r->cas != cas) {
            rc = ST_EXISTS;
        } else {
            do_invalidate(st, r, h, set_ttl, exptime);
            rc = ST_OK;
        }
    }
    mdc_unlock(l);
    return rc;
}

int store_touch(struct store *st, const void *key, uint32_t klen,
                int64_t exptime)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    uint32_t d = deadline_of(st, exptime);
    int rc = ST_NOT_FOUND;

    mdc_wrlock(l);
    struct record *r = do_find_live(st, h, key, klen);
    if (r != NULL) {
        announce(st, EV_TOUCH, r, h);
        set_deadline(st, r, d);
        rc = ST_OK;
    }
    mdc_unlock(l);
    return rc;
}

int store_delete(struct store *st, const void *key, uint32_t klen,
                 uint64_t cas)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    uint64_t h = store_hash(key, klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    int rc = ST_NOT_FOUND;

    mdc_wrlock(l);
    struct record *r = do_find_live(st, h, key, klen);
    if (r == NULL)
        (void)fmarks_take(st, h); /* memcached unlinks the flushed item */
    if (r != NULL) {
        if (cas != 0 && r->cas != cas) {
            rc = ST_EXISTS;
        } else {
            announce(st, EV_DELETE, r, h);
            do_unlink(st, h, r);
            rc = ST_OK;
        }
    }
    mdc_unlock(l);
    return rc;
}

/* ---- put --------------------------------------------------------------------- */
static const enum store_event mode_event[] = {
    [STORE_SET] = EV_SET,         [STORE_ADD] = EV_ADD,
    [STORE_REPLACE] = EV_REPLACE, [STORE_CAS] = EV_CAS,
    [STORE_APPEND] = EV_APPEND,   [STORE_PREPEND] = EV_PREPEND,
};

/* Normalise a tag list: sorted, distinct.  'buf' must hold n tags. */
static int norm_tags(struct store *st, const struct mdc_tag *in, uint32_t n,
                     struct mdc_tag *buf, uint32_t *nout)
{
    if (n == 0) {
        *nout = 0;
        return 0;
    }
    memcpy(buf, in, n * sizeof(*in));
    qsort(buf, n, sizeof(*buf), tag_cmp);
    uint32_t k = 1;
    for (uint32_t i = 1; i < n; i++)
        if (tag_cmp(&buf[i], &buf[k - 1]) != 0)
            buf[k++] = buf[i];
    if (k > st->cfg.max_tags)
        return ST_TOO_MANY_TAGS;
    *nout = k;
    return 0;
}

/*
 * The commit step shared by append/prepend and the counter operations:
 * build a replacement for 'old' whose value is a || b, keeping old's flags,
 * deadline and tags (in their stack positions), and link it if 'old' is
 * still the live record for its key.  Returns ST_OK, REPLACE_RETRY when
 * someone else changed the key first, REPLACE_GONE when the key went away,
 * or the allocation's status.  The caller keeps its reference on 'old'.
 */
#define REPLACE_RETRY (-1)
#define REPLACE_GONE (-2)
static int replace_derived(struct store *st, uint64_t h, struct record *old,
                           const void *a, uint32_t alen, const void *b,
                           uint32_t blen, enum store_event ev,
                           uint64_t *cas_out)
{
    uint32_t nt = record_ntags(old);
    struct record *r;
    int rc = rec_alloc(st, rec_key(old), old->klen, alen + blen, nt, &r);
    if (rc != 0)
        return rc;
    if (alen)
        memcpy(rec_val(r), a, alen);
    if (blen)
        memcpy(rec_val(r) + alen, b, blen);
    r->flags = old->flags;
    r->deadline = __atomic_load_n(&old->deadline, __ATOMIC_RELAXED);
    if (nt)
        rec_copy_tags(r, old);
    r->cas = next_cas();

    mdc_rwlock_t *l = stripe_of(st, h);
    mdc_wrlock(l);
    struct record *cur = do_find_live(st, h, rec_key(old), old->klen);
    if (cur != old) {
        mdc_unlock(l);
        store_release(st, r);
        return cur == NULL ? REPLACE_GONE : REPLACE_RETRY;
    }
    uint64_t ncas = r->cas; /* r may be replaced once unlocked */
    /* a counter changes in place in memcached (stale state and win kept);
     * append and prepend build a new item there (both dropped) */
    if (ev == EV_INCR || ev == EV_ATOMIC)
        rec_set_rflag(r, rec_rflags(old) & (R_STALE | R_WON));
    announce(st, ev, old, h);
    do_link(st, h, r, old, nt != 0);
    mdc_unlock(l);
    if (cas_out)
        *cas_out = ncas;
    return ST_OK;
}

/* append/prepend: read the current record, check its CAS and the new size,
 * then commit the concatenation through replace_derived() (tags kept), and
 * start again if another writer changed the key first (optimistic retry). */
static int put_concat(struct store *st, enum store_mode mode,
                      const struct store_item *it, uint64_t *cas_out)
{
    uint64_t h = store_hash(it->key, it->klen);

    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *old = store_get(st, it->key, it->klen);
        if (old == NULL)
            return ST_NOT_STORED;
        int rc;
        if (it->cas != 0 && record_cas(old) != it->cas)
            rc = ST_EXISTS;
        else if ((uint64_t)old->vlen + it->vlen > st->cfg.max_item_size)
            rc = ST_TOO_LARGE;
        else if (mode == STORE_APPEND)
            rc = replace_derived(st, h, old, rec_val(old), old->vlen,
                                 it->value, it->vlen, mode_event[mode],
                                 cas_out);
        else
            rc = replace_derived(st, h, old, it->value, it->vlen,
                                 rec_val(old), old->vlen, mode_event[mode],
                                 cas_out);
        store_release(st, old);
        if (rc == REPLACE_GONE)
            return ST_NOT_STORED;
        if (rc != REPLACE_RETRY)
            return rc;
    }
    return ST_NO_MEMORY;
}

static int put_common(struct store *st, enum store_mode mode,
                      const struct store_item *it, uint64_t *cas_out,
                      enum store_event ev);

int store_drop_stale(struct store *st, enum store_mode mode, const void *key,
                     uint32_t klen, uint64_t cas)
{
    if (mode != STORE_SET && mode != STORE_REPLACE && mode != STORE_CAS)
        return 0;
    if (mode == STORE_CAS && cas == 0)
        return 0;
    return store_delete(st, key, klen, mode == STORE_CAS ? cas : 0) == ST_OK;
}

int store_put(struct store *st, enum store_mode mode,
              const struct store_item *it, uint64_t *cas_out)
{
    if ((unsigned)mode > STORE_PREPEND)
        return ST_INVALID;
    int rc = put_common(st, mode, it, cas_out, mode_event[mode]);
    if (rc == ST_TOO_LARGE || rc == ST_NO_MEMORY)
        (void)store_drop_stale(st, mode, it->key, it->klen, it->cas);
    return rc;
}

static int put_common(struct store *st, enum store_mode mode,
                      const struct store_item *it, uint64_t *cas_out,
                      enum store_event ev)
{
    int rc = check_key(it->klen);
    if (rc != 0)
        return rc;
    if ((unsigned)mode > STORE_PREPEND)
        return ST_INVALID;
    if (mode == STORE_APPEND || mode == STORE_PREPEND)
        return put_concat(st, mode, it, cas_out);
    if (it->vlen > st->cfg.max_item_size)
        return ST_TOO_LARGE;
    if (it->ntags > 0 && it->tags == NULL)
        return ST_INVALID;
    if (it->ntags > 65535)
        return ST_TOO_MANY_TAGS;

    struct mdc_tag stackbuf[64], *tb = stackbuf;
    uint32_t nt = 0;
    if (it->ntags > 64) {
        tb = mdc_malloc(it->ntags * sizeof(*tb));
        if (tb == NULL)
            return ST_NO_MEMORY;
    }
    rc = norm_tags(st, it->tags, it->ntags, tb, &nt);
    if (rc != 0)
        goto out;

    check_flush(st, now_s(st));
    struct record *r;
    rc = rec_alloc(st, it->key, it->klen, it->vlen, nt, &r);
    if (rc != 0)
        goto out;
    if (it->vlen)
        memcpy(rec_val(r), it->value, it->vlen);
    r->flags = it->flags;
    r->deadline = deadline_of(st, it->exptime);
    if (nt)
        rec_set_tags(r, tb, nt);
    r->cas = next_cas();

    uint64_t h = store_hash(it->key, it->klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    uint64_t ncas = r->cas; /* r may be replaced once unlocked */
    mdc_wrlock(l);
    struct record *old = do_find_live(st, h, it->key, it->klen);
    switch (mode) {
    case STORE_ADD:
        if (old != NULL)
            rc = ST_EXISTS;
        break;
    case STORE_REPLACE:
        if (old == NULL)
            rc = ST_NOT_STORED;
        break;
    case STORE_CAS:
        if (old == NULL)
            rc = ST_NOT_FOUND;
        else if (old->cas == it->cas)
            break;
        else if (it->invalidate && it->cas < old->cas) {
            /* memcached's ms I: an older version is stored, stale, for
             * the old record's remaining life and with its win token */
            uint8_t ofl = rec_rflags(old);
            r->deadline = __atomic_load_n(&old->deadline, __ATOMIC_RELAXED);
            rec_set_rflag(r, (uint8_t)(R_STALE | (ofl & R_WON)));
        } else
            rc = ST_EXISTS;
        break;
    default:
        break;
    }
    if (rc == 0) {
        announce(st, ev, r, h);
        rc = do_link(st, h, r, old, 0);
    }
    mdc_unlock(l);
    if (rc != 0) {
        store_release(st, r);
    } else {
        if (cas_out != NULL)
            *cas_out = ncas;
        if (old == NULL)
            maybe_grow(st);
    }
out:
    if (tb != stackbuf)
        mdc_free(tb);
    return rc;
}

/* ---- counters ------------------------------------------------------------------ */
static int parse_u64(const unsigned char *p, uint32_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/*
 * Read-modify-write of a decimal counter: compute the new value from the
 * current record, build a replacement (tags, flags, deadline kept) and
 * commit it if the record is still current.  fn returns 0 to write 'nv',
 * 1 for "no change" (compare mismatch), or a status.
 */
typedef int (*counter_fn)(uint64_t cur, uint64_t a, uint64_t b,
                          uint64_t *nv, uint64_t *result);

static int counter_rmw_cas(struct store *st, enum store_event ev,
                           const void *key, uint32_t klen, counter_fn fn,
                           uint64_t a, uint64_t b_, uint64_t expect,
                           uint64_t *result, uint64_t *cas_out);

static int counter_rmw(struct store *st, enum store_event ev, const void *key,
                       uint32_t klen, counter_fn fn, uint64_t a, uint64_t b_,
                       uint64_t *result, uint64_t *cas_out)
{
    return counter_rmw_cas(st, ev, key, klen, fn, a, b_, 0, result, cas_out);
}

/* expect != 0: only while the record's CAS is that (else ST_EXISTS). */
static int counter_rmw_cas(struct store *st, enum store_event ev,
                           const void *key, uint32_t klen, counter_fn fn,
                           uint64_t a, uint64_t b_, uint64_t expect,
                           uint64_t *result, uint64_t *cas_out)
{
    int rc = check_key(klen);
    if (rc != 0)
        return rc;
    uint64_t h = store_hash(key, klen);

    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *old = store_get(st, key, klen);
        if (old == NULL)
            return ST_NOT_FOUND;
        uint64_t cur, nv = 0, res = 0;
        if (expect != 0 && record_cas(old) != expect) {
            rc = ST_EXISTS;
        } else if (parse_u64(rec_val(old), old->vlen, &cur) != 0) {
            rc = ST_NOT_NUMBER;
        } else if ((rc = fn(cur, a, b_, &nv, &res)) == 1) {
            *result = res; /* compare-and-set mismatch: no change */
            rc = ST_EXISTS;
        } else if (rc == 0) {
            char digits[24];
            int dn = snprintf(digits, sizeof(digits), "%" PRIu64, nv);
            rc = replace_derived(st, h, old, digits, (uint32_t)dn, NULL, 0, ev,
                                 cas_out);
            if (rc == ST_OK)
                *result = res;
        }
        store_release(st, old);
        if (rc == REPLACE_GONE)
            return ST_NOT_FOUND;
        if (rc != REPLACE_RETRY)
            return rc;
    }
    return ST_NO_MEMORY;
}

static int fn_incr(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                   uint64_t *res)
{
    (void)b;
    *nv = *res = cur + a; /* wraps at 2^64, as memcached */
    return 0;
}
static int fn_decr(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                   uint64_t *res)
{
    (void)b;
    *nv = *res = cur > a ? cur - a : 0;
    return 0;
}
static int fn_fetch_add(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                        uint64_t *res)
{
    (void)b;
    *nv = cur + a;
    *res = cur;
    return 0;
}
static int fn_cmpset(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                     uint64_t *res)
{
    *res = cur;
    if (cur != a)
        return 1;
    *nv = b;
    return 0;
}
static int fn_read_clear(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                         uint64_t *res)
{
    (void)a;
    (void)b;
    *res = cur;
    *nv = 0;
    return 0;
}

int store_incr_cas(struct store *st, const void *key, uint32_t klen,
                   uint64_t delta, bool decr, uint64_t expect_cas,
                   uint64_t *value_out, uint64_t *cas_out)
{
    uint64_t res = 0;
    int rc = counter_rmw_cas(st, EV_INCR, key, klen,
                             decr ? fn_decr : fn_incr, delta, 0, expect_cas,
                             &res, cas_out);
    if (rc == 0 && value_out)
        *value_out = res;
    return rc;
}

int store_incr(struct store *st, const void *key, uint32_t klen,
               uint64_t delta, bool decr, uint64_t *value_out,
               uint64_t *cas_out)
{
    uint64_t res = 0;
    int rc = counter_rmw(st, EV_INCR, key, klen, decr ? fn_decr : fn_incr,
                         delta, 0, &res, cas_out);
    if (rc == 0 && value_out)
        *value_out = res;
    return rc;
}

int store_atomic(struct store *st, enum store_atomic_op op, const void *key,
                 uint32_t klen, uint64_t a, uint64_t b, uint64_t *result,
                 uint64_t *cas_out)
{
    counter_fn fn;
    switch (op) {
    case ATOMIC_ADD: fn = fn_incr; break;
    case ATOMIC_FETCH_ADD: fn = fn_fetch_add; break;
    case ATOMIC_CMPSET: fn = fn_cmpset; break;
    case ATOMIC_READ_CLEAR: fn = fn_read_clear; break;
    default: return ST_INVALID;
    }
    uint64_t res = 0;
    int rc = counter_rmw(st, EV_ATOMIC, key, klen, fn, a, b, &res, cas_out);
    if (result != NULL && (rc == 0 || rc == ST_EXISTS))
        *result = res;
    return rc;
}

/* ---- flush and sweep ------------------------------------------------------------ */
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
        while ((r = RB_ROOT(&st->buckets[b])) != NULL) {
            uint64_t h = store_hash(rec_key(r), r->klen);
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
        RB_FOREACH_SAFE(r, rtree, &st->buckets[b], nx)
        {
            if (rec_expired(r, now)) {
                do_expire(st, r, store_hash(rec_key(r), r->klen));
                n++;
            }
        }
        mdc_unlock(l);
    }
    return n;
}

static void *sweeper_main(void *arg)
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

/* ---- tag operations ---------------------------------------------------------------- */
void store_recset_release(struct store *st, struct store_recset *set)
{
    for (size_t i = 0; i < set->n; i++)
        store_release(st, set->recs[i]);
    mdc_free(set->recs);
    memset(set, 0, sizeof(*set));
}

static int ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (struct record *const *)a;
    uintptr_t y = (uintptr_t) * (struct record *const *)b;
    return x < y ? -1 : x > y;
}

int store_get_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, struct store_recset *out)
{
    memset(out, 0, sizeof(*out));
    if (ntvals > 0 && tvals == NULL)
        return ST_INVALID;
    struct store_recset cand = {0};
    int rc = tags_collect(st->tags, tkey, tvals, ntvals, &cand,
                          st->cfg.tag_reply_limit);
    if (rc == ST_NO_MEMORY) {
        store_recset_release(st, &cand);
        return rc;
    }
    /* a record listed under two of the tvals appears twice: keep one */
    if (ntvals > 1 && cand.n > 1) {
        qsort(cand.recs, cand.n, sizeof(*cand.recs), ptr_cmp);
        size_t k = 1;
        for (size_t i = 1; i < cand.n; i++) {
            if (cand.recs[i] == cand.recs[k - 1])
                store_release(st, cand.recs[i]);
            else
                cand.recs[k++] = cand.recs[i];
        }
        cand.n = k;
    }
    /* keep a record if it is still the live record for its key: it was in
     * the tag index when collected and we hold a reference (it cannot be
     * freed), R_LINKED is only ever cleared, and flags and deadline are
     * atomics, so one atomic look decides as a look under the stripe lock
     * did (a record unlinked or expiring meanwhile goes either way, as it
     * could under the lock), without hashing the key and taking the lock */
    uint32_t now = now_s(st);
    size_t k = 0;
    out->bytes = 0;
    for (size_t i = 0; i < cand.n; i++) {
        struct record *r = cand.recs[i];
        int live = (rec_rflags(r) & R_LINKED) && !rec_expired(r, now);
        if (live) {
            cand.recs[k++] = r;
            out->bytes += (size_t)r->klen + r->vlen;
            if (!(rec_rflags(r) & R_FETCHED))
                rec_set_rflag(r, R_FETCHED);
        } else {
            store_release(st, r);
        }
    }
    cand.n = k;
    out->recs = cand.recs;
    out->n = cand.n;
    out->cap = cand.cap;
    return rc;
}

static int carries(struct record *r, int32_t tkey, const int32_t *tvals,
                   size_t n)
{
    uint32_t nt = record_ntags(r);
    if (nt == 0)
        return 0;
    struct tag_area *ta = rec_tags(r);
    for (uint32_t i = 0; i < nt; i++) {
        if (ta->e[i].tkey != tkey)
            continue;
        for (size_t j = 0; j < n; j++)
            if (ta->e[i].tval == tvals[j])
                return 1;
    }
    return 0;
}

/* del_by_tag prefetches the bucket of the candidate this far ahead */
#define DBT_AHEAD 4

/* del_by_tag without memory for its list: one record at a time. */
static uint64_t del_each(struct store *st, int32_t tkey, const int32_t *tvals,
                         size_t ntvals, struct store_recset *cand)
{
    uint64_t n = 0;
    uint32_t now = now_s(st);
    for (size_t i = 0; i < cand->n; i++) {
        struct record *c = cand->recs[i];
        uint64_t h = store_hash(rec_key(c), c->klen);
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        struct record *r = do_find(st, h, rec_key(c), c->klen);
        if (r != NULL && carries(r, tkey, tvals, ntvals)) {
            announce(st, EV_DEL_BY_TAG, r, h);
            n += !rec_expired(r, now); /* the expired were gone already */
            do_unlink(st, h, r);
        }
        mdc_unlock(l);
    }
    return n;
}

/*
 * Delete every record carrying (tkey, tv) for any listed tv.
 *  1. Candidates are collected under the tag locks (tags_collect).
 *  2. Under each candidate's record stripe (write), whatever record is
 *     current for its key and carries one of the tags is announced and
 *     taken out of the record forest (so it can no longer be read by key,
 *     and readers by tag skip it), keeping the index's reference.  A record
 *     replaced in between by append/incr (tags kept) is caught too, and a
 *     concurrent tagged write is either deleted here or was linked after
 *     the collection (so it did not exist when we began).
 *  3. The deleted records' tag entries leave the tag index in one pass per
 *     tag bucket (tags_unlink_many), then the index lets the records go.
 */
int store_del_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, uint64_t *ndeleted)
{
    if (ntvals > 0 && tvals == NULL)
        return ST_INVALID;
    uint64_t n = 0, nlive = 0;
    uint32_t now = now_s(st);
    struct store_recset cand = {0};
    int rc = tags_collect(st->tags, tkey, tvals, ntvals, &cand, 0);
    struct record **gone = cand.n ? mdc_malloc(cand.n * sizeof(*gone)) : NULL;
    uint64_t *hs = NULL;
    uint8_t *both = NULL; /* gone[i] was its own candidate */
    if (cand.n > 0 && gone == NULL) {
        nlive = del_each(st, tkey, tvals, ntvals, &cand);
        goto out;
    }
    size_t ntags = 0;
    uint64_t nexp = 0;
    both = cand.n ? mdc_malloc(cand.n) : NULL;
    if (cand.n > 0 && both == NULL) {
        nlive = del_each(st, tkey, tvals, ntvals, &cand);
        goto out;
    }
    /* hash every candidate first, so that each lookup's bucket can be
     * fetched a few candidates ahead (the hashes go where 'gone' will
     * be filled, behind the reads) */
    hs = cand.n ? mdc_malloc(cand.n * sizeof(*hs)) : NULL;
    for (size_t i = 0; hs != NULL && i < cand.n; i++) {
        struct record *c = cand.recs[i];
        hs[i] = store_hash(rec_key(c), c->klen);
        if (i < DBT_AHEAD)
            __builtin_prefetch(&st->buckets[bucket_idx(st, hs[i])]);
    }
    for (size_t i = 0; i < cand.n; i++) {
        struct record *c = cand.recs[i];
        uint64_t h = hs != NULL ? hs[i] : store_hash(rec_key(c), c->klen);
        if (hs != NULL && i + DBT_AHEAD < cand.n)
            __builtin_prefetch(&st->buckets[bucket_idx(st, hs[i + DBT_AHEAD])]);
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        struct record *r = do_find(st, h, rec_key(c), c->klen);
        if (r != NULL && carries(r, tkey, tvals, ntvals)) {
            announce(st, EV_DEL_BY_TAG, r, h);
            /* do_detach_b, with the shared counters summed for the end */
            RB_REMOVE(rtree, &st->buckets[bucket_idx(st, h)], r);
            rec_clear_rflag(r, R_LINKED);
            if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
                nexp++;
            /* an expired record is removed but not counted: to clients
             * it was gone already (tget skips it too) */
            nlive += !rec_expired(r, now);
            /* the candidate itself: its counted reference is dropped
             * together with the index's (low bit set) */
            if (r == c)
                cand.recs[i] = NULL;
            gone[n++] = (struct record *)((uintptr_t)r | (r == c));
            ntags += record_ntags(r);
        }
        mdc_unlock(l);
    }
    if (n > 0)
        atomic_fetch_sub_explicit(&st->curr_items, n, memory_order_relaxed);
    if (nexp > 0)
        atomic_fetch_sub_explicit(&st->expiring, nexp, memory_order_relaxed);
    for (size_t i = 0; i < n; i++) { /* bare pointers from here on */
        both[i] = (uint8_t)((uintptr_t)gone[i] & 1);
        gone[i] = (struct record *)((uintptr_t)gone[i] & ~(uintptr_t)1);
    }
    /* phase 3: one pass per tag bucket over every deleted record's tags */
    struct tag_entry **es = ntags ? mdc_malloc(ntags * sizeof(*es)) : NULL;
    if (es != NULL) {
        size_t k = 0;
        uint64_t links = 0;
        for (size_t i = 0; i < n; i++) {
            struct tag_area *ta = rec_tags(gone[i]);
            for (uint32_t t = 0; t < ta->ntags; t++)
                es[k++] = &ta->e[t];
            links += ta->ntags;
        }
        int64_t tmem = 0;
        tags_unlink_many(st->tags, es, k, &tmem);
        store_account(st, tmem, 1);
        atomic_fetch_sub_explicit(&st->tagged_items, n, memory_order_relaxed);
        atomic_fetch_sub_explicit(&st->tag_links, links, memory_order_relaxed);
        mdc_free(es);
    } else {
        for (size_t i = 0; i < n; i++)
            rec_untag(st, gone[i]);
    }
    /* our other counted references first, while the index token keeps
     * them from being the last (no slot scan), then the index lets go,
     * with the candidate's own count in the same subtraction; the bytes
     * freed are accounted once */
    store_recset_release(st, &cand);
    int64_t freed = 0;
    for (size_t i = 0; i < n; i++) {
        struct record *r = gone[i];
        /* as store_release() then rec_unindex(): a hold of our own thread
         * goes first (our count then stands in for it); a count only if
         * there is one (tokens are interchangeable: another thread's
         * release may have taken ours and left its hold slot instead) */
        uint32_t c = __atomic_load_n(&r->refcnt, __ATOMIC_SEQ_CST), left;
        if (both[i] && !mdc_unhold_own(r)) {
            while ((c & ~REF_INDEX) != 0 &&
                   !__atomic_compare_exchange_n(&r->refcnt, &c,
                                                c - REF_INDEX - 1, 0,
                                                __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))
                ;
            if ((c & ~REF_INDEX) == 0) { /* no count left to take */
                store_release(st, r);
                rec_unindex(st, r);
                continue;
            }
            left = c - REF_INDEX - 1;
        } else {
            left = __atomic_sub_fetch(&r->refcnt, REF_INDEX, __ATOMIC_SEQ_CST);
        }
        if (left != 0)
            continue;
        if (!mdc_held_anywhere(r))
            freed += (int64_t)rec_free_quiet(r);
        else
            rec_retire(st, r);
    }
    if (freed != 0)
        store_account(st, -freed, 0);
    /* as store_release would have: records retired while held by a slot
     * that has let go since */
    if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
        reclaim_retired(st);
out:
    mdc_free(hs);
    mdc_free(both);
    mdc_free(gone);
    store_recset_release(st, &cand);
    if (ndeleted)
        *ndeleted = nlive;
    return rc == ST_NO_MEMORY ? rc : ST_OK;
}

/*
 * The stale mode: phase 1 as del_by_tag; in phase 2 the current record of
 * each candidate's key that carries one of the tags is invalidated in
 * place under the write lock (it stays linked, tags and all, so there is
 * no phase 3).  The race rule is del_by_tag's with "marked stale" for
 * "deleted" (docs/threads.md).
 */
int store_stale_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                       size_t ntvals, bool set_ttl, int64_t exptime,
                       uint64_t *nmarked)
{
    if (ntvals > 0 && tvals == NULL)
        return ST_INVALID;
    uint64_t n = 0;
    struct store_recset cand = {0};
    int rc = tags_collect(st->tags, tkey, tvals, ntvals, &cand, 0);
    check_flush(st, now_s(st));
    for (size_t i = 0; i < cand.n; i++) {
        struct record *c = cand.recs[i];
        uint64_t h = store_hash(rec_key(c), c->klen);
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        struct record *r = do_find_live(st, h, rec_key(c), c->klen);
        if (r != NULL && carries(r, tkey, tvals, ntvals)) {
            do_invalidate(st, r, h, set_ttl, exptime);
            n++;
        }
        mdc_unlock(l);
    }
    store_recset_release(st, &cand);
    if (nmarked)
        *nmarked = n;
    return rc == ST_NO_MEMORY ? rc : ST_OK;
}

int store_tstack_push(struct store *st, struct mdc_tag tag, const void *value,
                      uint32_t vlen, uint32_t flags, int64_t exptime,
                      char *keybuf, uint32_t *klen_out, uint64_t *cas_out)
{
    uint64_t seq = atomic_fetch_add_explicit(&st->tstack_seq, 1,
                                             memory_order_relaxed) + 1;
    int kl = snprintf(keybuf, STORE_TSTACK_KEYMAX, "tstack:%d:%d:%" PRIu64,
                      tag.tkey, tag.tval, seq);
    struct store_item it = {
        .key = keybuf, .klen = (uint32_t)kl, .value = value, .vlen = vlen,
        .flags = flags, .exptime = exptime, .tags = &tag, .ntags = 1,
    };
    int rc = put_common(st, STORE_ADD, &it, cas_out, EV_TSTACK_PUSH);
    if (rc == 0 && klen_out)
        *klen_out = (uint32_t)kl;
    return rc;
}

int store_tstack_pop(struct store *st, struct mdc_tag tag, struct record **out)
{
    *out = NULL;
    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *c = tags_newest(st->tags, tag);
        if (c == NULL)
            return ST_NOT_FOUND;
        uint64_t h = store_hash(rec_key(c), c->klen);
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        if (rec_rflags(c) & R_LINKED) {
            if (rec_expired(c, now_s(st))) {
                do_expire(st, c, h);
                mdc_unlock(l);
                store_release(st, c);
                continue;
            }
            announce(st, EV_TSTACK_POP, c, h);
            do_unlink(st, h, c);
            mdc_unlock(l);
            *out = c; /* the caller gets our reference */
            return ST_OK;
        }
        mdc_unlock(l);
        store_release(st, c);
    }
    return ST_NOT_FOUND;
}

/* ---- consistency check ------------------------------------------------------------- */
struct xcheck {
    struct store *st;
    char *buf;
    size_t len;
};

/* One tag entry against the record forest: it must belong to a linked
 * record that is the one found under its key, and carry the entry. */
static int xcheck_entry(void *ctx, const struct tag_entry *e)
{
    struct xcheck *x = ctx;
    struct record *r = e->rec;
    if (!(rec_rflags(r) & R_LINKED)) {
        snprintf(x->buf, x->len, "tag (%d,%d) links an unlinked record",
                 e->tkey, e->tval);
        return -1;
    }
    uint64_t h = store_hash(rec_key(r), r->klen);
    if (do_find(x->st, h, rec_key(r), r->klen) != r) {
        snprintf(x->buf, x->len, "tag (%d,%d) links a record not in the "
                 "forest", e->tkey, e->tval);
        return -1;
    }
    struct tag_area *ta = (rec_rflags(r) & R_TAGGED) ? rec_tags(r) : NULL;
    if (ta == NULL || e < &ta->e[0] || e >= &ta->e[ta->ntags]) {
        snprintf(x->buf, x->len, "tag (%d,%d) links a record that does not "
                 "carry it", e->tkey, e->tval);
        return -1;
    }
    return 0;
}

int store_check(struct store *st, char *buf, size_t len)
{
    uint64_t items = 0, tagged = 0, links = 0;
    int64_t expiring = 0;
    for (uint32_t b = 0; b <= st->bmask; b++) {
        if (b >= nbuckets_now(st) && !RB_EMPTY(&st->buckets[b])) {
            snprintf(buf, len, "records in bucket %u beyond the table", b);
            return -1;
        }
        struct record *r;
        RB_FOREACH(r, rtree, &st->buckets[b])
        {
            items++;
            if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
                expiring++;
            uint64_t h = store_hash(rec_key(r), r->klen);
            if (bucket_idx(st, h) != b || r->hash32 != (uint32_t)(h >> 32)) {
                snprintf(buf, len, "record in wrong bucket");
                return -1;
            }
            if (!(rec_rflags(r) & R_LINKED)) {
                snprintf(buf, len, "record in forest without R_LINKED");
                return -1;
            }
            /* the size a free computes from the header is the allocation's */
            if (mdc_alloc_size(r, rec_req_size_of(r)) != mdc_usable_size(r)) {
                snprintf(buf, len, "record size from its header is wrong");
                return -1;
            }
            uint32_t nt = record_ntags(r);
            if (nt) {
                tagged++;
                links += nt;
                struct tag_area *ta = rec_tags(r);
                for (uint32_t i = 0; i < nt; i++) {
                    if (ta->e[i].tv == NULL || ta->e[i].rec != r) {
                        snprintf(buf, len, "record tag %u not linked", i);
                        return -1;
                    }
                }
            }
        }
    }
    if (expiring != atomic_load(&st->expiring)) {
        snprintf(buf, len, "expiring count %" PRId64 ", records %" PRId64,
                 (int64_t)atomic_load(&st->expiring), expiring);
        return -1;
    }
    if (items != atomic_load(&st->curr_items) ||
        tagged != atomic_load(&st->tagged_items) ||
        links != atomic_load(&st->tag_links)) {
        snprintf(buf, len,
                 "counters disagree: items %" PRIu64 "/%" PRIu64
                 " tagged %" PRIu64 "/%" PRIu64 " links %" PRIu64
                 "/%" PRIu64,
                 items, (uint64_t)atomic_load(&st->curr_items), tagged,
                 (uint64_t)atomic_load(&st->tagged_items), links,
                 (uint64_t)atomic_load(&st->tag_links));
        return -1;
    }
    uint64_t nk, nv, nl;
    tags_counts(st->tags, &nk, &nv, &nl);
    if (nl != links) {
        snprintf(buf, len, "tag index holds %" PRIu64 " links, records %" PRIu64,
                 nl, links);
        return -1;
    }
    if (tags_check(st->tags, buf, len) != 0)
        return -1;
    struct xcheck x = {st, buf, len};
    return tags_foreach(st->tags, xcheck_entry, &x);
}

/* ---- dumps and restore (dump.c) ------------------------------------------------ */
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
        RB_FOREACH(r, rtree, &st->buckets[b])
        {
            if (rec_expired(r, now))
                continue;
            if (k != nclasses &&
                ((uint32_t)store_hash(rec_key(r), r->klen) &
                 (nclasses - 1)) != cls)
                continue;
            fn(ctx, st, r);
            visited++;
        }
    }
    mdc_unlock(l);
    return visited;
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

uint32_t record_idle_ticks(struct store *st, const struct record *r)
{
    uint32_t a = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
    if (a == 0)
        return UINT32_MAX;
    uint32_t idle = now_tick(st) - a;
    return idle == UINT32_MAX ? UINT32_MAX - 1 : idle;
}

uint32_t record_link_age(struct store *st, const struct record *r)
{
    if (!(rec_rflags(r) & R_TAGGED))
        return 0;
    return atomic_load_explicit(&st->link_seq, memory_order_relaxed) -
           rec_tags((struct record *)r)->lseq;
}

size_t record_mem(const struct record *r)
{
    return mdc_usable_size((void *)r);
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

void store_note_tstack_seq(struct store *st, uint64_t seq)
{
    uint64_t cur = atomic_load(&st->tstack_seq);
    while (cur < seq && !atomic_compare_exchange_weak(&st->tstack_seq, &cur,
                                                      seq))
        ;
}

int store_restore(struct store *st, const struct store_restore *it,
                  struct record **tagged)
{
    *tagged = NULL;
    if (it->klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    if (it->vlen > st->cfg.max_item_size)
        return ST_TOO_LARGE;
    if (it->ntags > st->cfg.max_tags)
        return ST_TOO_MANY_TAGS;
    if ((it->ntags > 0 && it->tags == NULL) || it->cas == 0)
        return ST_INVALID;
    /* tags as a dump writes them: sorted and distinct */
    for (uint32_t i = 1; i < it->ntags; i++)
        if (tag_cmp(&it->tags[i - 1], &it->tags[i]) >= 0)
            return ST_INVALID;
    uint32_t now = now_s(st);
    uint32_t d = 0;
    if (it->expiry_wall != 0) {
        int64_t rel = it->expiry_wall - st->clk.wall_s(st->clk.ctx);
        if (rel <= 0)
            return ST_NOT_FOUND;
        d = rel > (int64_t)UINT32_MAX - now ? UINT32_MAX : now + (uint32_t)rel;
    }
    size_t size = sizeof(struct record) + it->klen + it->vlen;
    if (it->ntags > 0)
        size = rec_tag_offset(it->klen, it->vlen) + sizeof(struct tag_area) +
               (size_t)it->ntags * sizeof(struct tag_entry);
    if (atomic_load_explicit(&st->mem, memory_order_relaxed) +
            (int64_t)mdc_good_size(size) > (int64_t)st->cfg.mem_limit)
        return ST_NO_MEMORY;
    uint64_t h = store_hash(it->key, it->klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    struct record *r;
    int rc = rec_alloc(st, it->key, it->klen, it->vlen, it->ntags, &r);
    if (rc != 0)
        return rc;
    if (it->vlen)
        memcpy(rec_val(r), it->value, it->vlen);
    r->flags = it->flags;
    r->deadline = d;
    r->cas = it->cas;
    if (it->ntags)
        rec_set_tags(r, it->tags, it->ntags);
    if (it->stale) /* its win token is not: the next reader wins */
        r->rflags |= R_STALE;
    /* versions handed out later are above this one */
    uint64_t g = atomic_load(&cas_global);
    while (g <= it->cas &&
           !atomic_compare_exchange_weak(&cas_global, &g, it->cas + 1))
        ;
    mdc_wrlock(l);
    if (do_find(st, h, it->key, it->klen) != NULL) {
        mdc_unlock(l);
        store_release(st, r);
        return ST_EXISTS;
    }
    /* keep_pos without an old record: into the forest, tags not linked */
    do_link(st, h, r, NULL, 1);
    if (it->idle_ticks != UINT32_MAX)
        __atomic_store_n(&r->atime, now_tick(st) - it->idle_ticks,
                         __ATOMIC_RELAXED);
    if (it->ntags) {
        rec_incref(r);
        *tagged = r;
    }
    mdc_unlock(l);
    maybe_grow(st);
    return ST_OK;
}

int store_restore_tags(struct store *st, struct record *r)
{
    uint64_t h = store_hash(rec_key(r), r->klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    int64_t tmem = 0;
    int rc = ST_OK;
    mdc_wrlock(l);
    if ((rec_rflags(r) & R_LINKED) && (rec_rflags(r) & R_TAGGED)) {
        struct tag_area *ta = rec_tags(r);
        ta->lseq = atomic_fetch_add_explicit(&st->link_seq, 1,
                                             memory_order_relaxed);
        for (uint32_t i = 0; i < ta->ntags; i++) {
            if (tags_link(st->tags, &ta->e[i], &tmem) != 0) {
                store_account(st, tmem, 1);
                tmem = 0;
                do_unlink(st, h, r); /* unlinks the linked ones */
                rc = ST_NO_MEMORY;
                break;
            }
        }
        if (tmem != 0)
            store_account(st, tmem, 1);
    }
    mdc_unlock(l);
    store_release(st, r);
    return rc;
}

size_t store_top_tags(struct store *st, struct store_tag_count *out, size_t n)
{
    return tags_top(st->tags, out, n);
}

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
    struct record *r = RB_ROOT(&st->buckets[bucket_idx(st, h)]);
    if (r != NULL) {
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
