/*
 * store_record.h - the store's level 1, the record (docs/architecture.md,
 * "The levels of the store"): its layout, struct store, the inline
 * accessors and clocks every path uses, references, and the functions of
 * store_record.c (allocation, references, the key hash, the CAS clock).
 * Only the store's files, tags.c and dump.c include it (other modules use
 * store.h); each level's header includes the one below:
 *
 *   store_record.h   1 the record           store_record.c
 *   store_index.h    2 the index            store_forest.c, store_hooks.c,
 *                                           tags.c
 *   store_policy.h   3 the policies         store_expiry.c, store_evict.c,
 *                                           store_write.c
 *   (store.h)        4 the operations       store_get.c, store_put.c,
 *                                           store_counter.c, store_tag.c
 *                    5 the store's life     store.c, store_check.c, dump.c
 *
 * A file calls only functions of its level or below; an operation calls
 * no other operation's file (tools/check-layers.sh checks both).
 *
 * Record layout (one allocation; docs/architecture.md, "Record layout"):
 *
 *   struct record (48 bytes) | key | value | [flags] | pad to 8 | tag area
 *
 * The client flags take 4 bytes after the value only when they are not 0
 * (R_FLAGS); the tag area is there only for tagged records (R_TAGGED).
 * The tag area is a struct tag_area followed by ntags struct tag_entry; each
 * entry is both the record's copy of one tag and the link node that the tag
 * forest keeps in that tag's list, so linking never allocates.
 */
#ifndef MDC_STORE_RECORD_H
#define MDC_STORE_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include "alloc.h"
#include "lock.h"
#include "rbtree.h"
#include "store.h"
#include "tags.h"

#ifndef __unused
#define __unused __attribute__((unused))
#endif

/* rflags bits (accessed atomically: readers set R_FETCHED under a read lock) */
#define R_LINKED 0x01  /* in the record forest (holds the index reference) */
#define R_TAGGED 0x02  /* has a tag area */
#define R_FETCHED 0x04 /* read at least once (for *_unfetched stats) */
/* memcached's meta states (docs/protocol-text.md, "Stale records and win
 * tokens"): R_STALE is set before the record is linked (ms I) or in place
 * under the write lock (md I, stale tdel); R_WON is taken by one reader
 * with an atomic fetch-or under the read lock, so exactly one gets W */
#define R_STALE 0x08   /* marked stale: mg answers X */
#define R_WON 0x10     /* a win token (W) went out: later readers get Z */
#define R_FLAGS 0x20   /* client flags stored after the value (not 0) */

/*
 * 48 bytes, so that a 16-byte key and a 32-byte value fit jemalloc's 96-byte
 * class (64 + 48 was its 112-byte class).  What went, and why the rest
 * stays: docs/architecture.md, "Record layout".
 */
struct record {
    struct mdc_rb_node rb; /* 24: left, right, parent | colour */
    uint64_t cas_klen; /* atomic: version (low CAS_BITS bits, bumped in
                        * place by an invalidation) | key length << 48
                        * (fixed for the record's life) */
    uint32_t vlen;
    uint32_t deadline; /* store seconds (now_s()); 0 = never */
    uint32_t refcnt;   /* atomic: index token (bit 31) + counted refs */
    uint16_t atime;    /* atomic relaxed; ticks of 2^ATIME_SHIFT ns
                        * (~1.07 s), wraps after ~19.5 h: of the last read,
                        * or of the link while R_FETCHED is unset */
    uint8_t rflags;    /* atomic */
    uint8_t evb;       /* atomic relaxed: eviction bits (EVB_* below) */
    unsigned char data[]; /* key, value, [flags, pad, tag area] */
};
_Static_assert(sizeof(struct record) == 48, "record header must stay 48 bytes");
_Static_assert(offsetof(struct record, rb) == 0, "a tree node is its record");
_Static_assert(offsetof(struct record, evb) == 47, "evb is the last byte");

/* Versions are CAS_BITS wide: 2^48 stores before one repeats (nine years
 * at a million stores a second). */
#define CAS_BITS 48
#define CAS_MASK ((UINT64_C(1) << CAS_BITS) - 1)
#define KLEN_SHIFT 48
#define ATIME_SHIFT 30

struct tag_area {
    uint32_t ntags;
    uint32_t lseq; /* store's link_seq when first linked (kept by append/
                    * incr, which keep the tag positions): the order of
                    * the tag lists, for dumps (dump.c) */
    struct tag_entry e[];
};

/* the buckets' trees (store_index.h) */
struct rtree;

struct store {
    struct store_config cfg;
    /* the data generation (store_set_generation()): kept across a dump */
    _Atomic uint64_t generation;
    uint32_t bmask; /* of the reserved array (cfg.nbuckets, the maximum) */
    uint32_t lmask;
    _Atomic uint64_t hstate; /* linear hashing: n << 32 | split */
    pthread_mutex_t grow_mu;
    struct rtree *buckets;
    mdc_rwlock_t *locks; /* record stripes: biased (readers.h) */
    struct tags *tags;

    store_hook_fn hook;
    void *hook_ctx;
    store_evict_fn evict_log; /* atomic: set while a watcher wants it */
    void *evict_ctx;
    struct store_clock clk;
    bool clk_sys;      /* clk is the system's (now_ns reads it inline) */
    uint64_t epoch_ns; /* monotonic ns at which store second 1 began */

    /* read on every operation, written rarely: apart from the counters */
    _Atomic uint32_t flush_at; /* store second of a pending flush; 0 none */
    _Atomic int64_t mem_limit; /* cfg.mem_limit, changed live */
    /* flush_all's cut-off (store_expiry.c, "flush"): a record whose
     * version is below it (in CAS_BITS arithmetic) is flushed, as absent to
     * every read and write, until the sweeper or eviction reclaims it; 0:
     * none.  Set by store_flush, cleared by the sweeper long after its
     * walk has reclaimed what the cut-off hid. */
    _Atomic uint64_t flush_cut;
    /* flushes begun, and the last one whose records the sweeper's walk
     * has all reclaimed (flush_pending counts the difference as one) */
    _Atomic uint32_t flush_gen;
    _Atomic uint32_t flush_walked;
    /* the expiry wheel (store_expiry.c), with a sweeper only: per stripe,
     * allocated when a record with a deadline is first linked there,
     * written under the stripe's write lock; wlost[j]: an entry of stripe
     * j could not be stored, the sweeper rebuilds that stripe's wheel */
    struct ewheel **wheels; /* [nlocks], NULL without a sweeper */
    uint8_t *wlost;         /* [nlocks] */
    _Atomic uint32_t wheel_lost; /* some wlost[j] is set */
    /* the sweeper's: the last store second turned (every record whose
     * deadline is at or before it is reclaimed); atomic for the tests */
    _Atomic uint32_t wheel_done;
    uint32_t fwalk_gen;  /* the sweeper's: the flush its walk serves */
    uint32_t fwalk_next; /* the sweeper's: the walk's next stripe */
    uint32_t fwalk_b;    /* the sweeper's: its next bucket in the stripe */

    /* counters every write updates: on lines of their own, so that the
     * read-mostly fields above and the retire list's below are not
     * invalidated by every store of another thread */
    _Alignas(64) _Atomic int64_t mem; /* accounted bytes: records + tag
                                       * index */
    _Atomic int64_t tag_mem; /* of which tag index nodes */
    _Atomic uint64_t curr_items;
    _Atomic uint64_t total_items;
    _Atomic uint64_t evictions;
    _Atomic uint64_t expired;
    _Atomic uint64_t expired_unfetched;
    _Atomic uint64_t evicted_unfetched;
    _Atomic uint64_t get_expired;
    _Atomic int64_t expiring; /* linked records with a deadline */
    _Atomic uint64_t tagged_items;
    _Atomic uint64_t tag_links;
    _Atomic uint64_t tstack_seq;
    _Atomic uint32_t link_seq; /* tag_area.lseq source; wraps */
    _Atomic uint64_t sweep_cursor;
    _Atomic uint64_t evict_seed;
    _Atomic uint64_t nomem_held; /* refusals with eviction on (reserve) */
    _Atomic uint64_t direct_reclaims; /* stores that evicted (reserve) */
    _Atomic uint64_t lrutail_reflocked; /* evictions of referenced records */
    _Atomic uint64_t get_flushed; /* reads that found a flushed record */
    _Atomic uint64_t flush_reclaimed; /* flushed records reclaimed */
    _Atomic int64_t wheel_bytes; /* the expiry wheel's allocations */
    uint64_t fixed_bytes;
    /* ghosts (store_evict.c): a 16-bit fingerprint of each evicted key
     * at a slot its hash picks, 0 = empty; read and cleared by a link */
    uint16_t *ghost; /* atomic relaxed, [gmask + 1] */
    uint32_t gmask;

    /* unlinked records no counted token keeps but a hold slot still does
     * (linked through their left child link); freed once no slot holds
     * them */
    _Alignas(64) pthread_mutex_t retire_mu;
    struct record *retired;
    _Atomic uint32_t nretired;

    pthread_t sweeper;
    int sweeper_running;
    pthread_mutex_t sweep_mu;
    pthread_cond_t sweep_cv;
    int sweep_stop;
    /* a flush asked for a walk the sweeper has not begun: set by
     * store_flush, which signals only when it was clear, so a storm of
     * flushes wakes the sweeper once a slice rather than once each */
    _Atomic int sweep_kick;
};

/* ---- record helpers ---------------------------------------------------- */
static inline uint32_t rec_klen(const struct record *r)
{
    return (uint32_t)(__atomic_load_n(&r->cas_klen, __ATOMIC_RELAXED) >>
                      KLEN_SHIFT);
}
static inline uint64_t rec_cas(const struct record *r)
{
    return __atomic_load_n(&r->cas_klen, __ATOMIC_RELAXED) & CAS_MASK;
}
/* A new version (under the write lock, or before the record is linked). */
/* A record's age on the version clock (cas_clock(), eviction's): stores
 * since its version, in CAS_BITS arithmetic (klen is not part of it); a
 * version above the clock (restored, or set by a client) is age 0. */
static inline uint64_t rec_age(const struct record *r, uint64_t clock)
{
    uint64_t d = (clock - rec_cas(r)) & CAS_MASK;
    return d >> (CAS_BITS - 1) ? 0 : d;
}
static inline void rec_set_cas(struct record *r, uint64_t cas)
{
    uint64_t w = __atomic_load_n(&r->cas_klen, __ATOMIC_RELAXED);
    __atomic_store_n(&r->cas_klen, (w & ~CAS_MASK) | (cas & CAS_MASK),
                     __ATOMIC_RELAXED);
}
static inline unsigned char *rec_key(struct record *r) { return r->data; }
static inline unsigned char *rec_val(struct record *r)
{
    return r->data + rec_klen(r);
}
static inline uint8_t rec_rflags(const struct record *r)
{
    return __atomic_load_n(&r->rflags, __ATOMIC_RELAXED);
}
/* bytes of client flags after the value: 0 or 4 */
static inline size_t rec_flags_len(const struct record *r)
{
    return (rec_rflags(r) & R_FLAGS) ? sizeof(uint32_t) : 0;
}
static inline uint32_t rec_flags(const struct record *r)
{
    uint32_t f = 0;
    if (rec_rflags(r) & R_FLAGS)
        memcpy(&f, r->data + rec_klen(r) + r->vlen, sizeof(f));
    return f;
}
static inline size_t rec_tag_offset(uint32_t klen, uint32_t vlen, size_t fl)
{
    size_t off = sizeof(struct record) + klen + vlen + fl;
    return (off + 7) & ~(size_t)7;
}
static inline struct tag_area *rec_tags(struct record *r)
{
    return (struct tag_area *)((unsigned char *)r +
                               rec_tag_offset(rec_klen(r), r->vlen,
                                              rec_flags_len(r)));
}
static inline void rec_set_rflag(struct record *r, uint8_t f)
{
    __atomic_fetch_or(&r->rflags, f, __ATOMIC_RELAXED);
}
static inline void rec_clear_rflag(struct record *r, uint8_t f)
{
    __atomic_fetch_and(&r->rflags, (uint8_t)~f, __ATOMIC_RELAXED);
}
static inline void rec_incref(struct record *r)
{
    __atomic_fetch_add(&r->refcnt, 1, __ATOMIC_RELAXED);
}

/* ---- the clocks: inline on every path ----------------------------------- */
/* Store seconds: 1 at creation, so a deadline of 0 can mean "never". */
static inline uint32_t secs_of(struct store *st, uint64_t ns)
{
    return (uint32_t)((ns - st->epoch_ns) / 1000000000u) + 1;
}
/* atime ticks (struct record) run 1..ATIME_TICKS (0 only before a
 * record is linked): the clock's ticks modulo 65535, not 65536, so that
 * the wrap (every ~19.5 h) skips no tick and ages stay exact across it
 * (folding tick 0 onto 1 made a record read at 65535 look two ticks old
 * one tick later, and written again well within a second) */
#define ATIME_TICKS 65535u
static inline uint16_t tick_of(uint64_t ns)
{
    return (uint16_t)((ns >> ATIME_SHIFT) % ATIME_TICKS + 1);
}
/* ticks since a, modulo ATIME_TICKS (an age past ~19.5 h wraps and reads
 * as shorter) */
static inline uint32_t tick_age(uint16_t now, uint16_t a)
{
    return now >= a ? (uint32_t)(now - a) : now + ATIME_TICKS - a;
}
/* the tick 'ticks' (at most ATIME_TICKS - 1) before now: never 0 */
static inline uint16_t tick_before(uint16_t now, uint32_t ticks)
{
    return (uint16_t)(now > ticks ? now - ticks : now + ATIME_TICKS - ticks);
}
/* A read refreshes atime only when it is this many ticks old: two ticks
 * apart, two writes are at least one tick (~1.07 s) apart, so reads of a
 * hot record share its line.  The first read of a record (R_FETCHED unset
 * in rflags, which the read loads anyway) always writes, however soon
 * after the link: atime is the link's tick until then (so that mg's l
 * counts from the store, as memcached's), and the sampler counts that
 * read (evb).  A tag query sets R_FETCHED without writing either: a GET
 * within ATIME_GRAIN of the store after one is then not counted. */
#define ATIME_GRAIN 2u
static inline bool atime_due(uint16_t now, uint16_t a, uint8_t rflags)
{
    return !(rflags & R_FETCHED) || tick_age(now, a) >= ATIME_GRAIN;
}
/* idle seconds as a protocol reports them (mg's l and la) */
static inline uint32_t tick_secs(uint32_t ticks)
{
    return (uint32_t)(((uint64_t)ticks << ATIME_SHIFT) / 1000000000u);
}
/* record_idle_ticks() and dumps count ticks of 2^20 ns, as before atime
 * was 16 bits of 2^30 ns */
#define IDLE_TICK_SHIFT (ATIME_SHIFT - 20)
/* The system clock: the coarse clock (a few ms resolution) is several
 * times cheaper and lags the precise one: a deadline it checks is never
 * passed earlier than bpf_ktime_get_ns() sees it (the XDP mirror stays
 * conservative). */
static inline uint64_t store_sys_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* Read on every GET: the system clock read directly (clk_sys), with no
 * indirect call through the clock's function pointer, which only a clock
 * a test set (store_set_clock) needs. */
static inline uint64_t now_ns(struct store *st)
{
    if (st->clk_sys)
        return store_sys_mono_ns();
    return st->clk.mono_ns(st->clk.ctx);
}
static inline uint32_t now_s(struct store *st)
{
    return secs_of(st, now_ns(st));
}
static inline uint16_t now_tick(struct store *st)
{
    return tick_of(now_ns(st));
}

/*
 * Eviction bits (struct record's evb), written by a read at most once per
 * ATIME_GRAIN together with atime (so a hot record's line is shared between
 * readers), by a link, and read by the sampler (store_evict.c):
 *   bits 0-1  reads: how many of those writes since the record was linked
 *             (saturates at 3; 0 = never read, still on probation)
 *   bits 2-7  when the last of them was, as the record's age on the version
 *             clock (rec_age(): cas_clock() - version) then, log-scaled
 *             (evb_age_code)
 */
#define EVB_READS 3u
uint64_t cas_clock(void); /* below, store_record.c */
#define EVB_AGE_SHIFT 2
static inline unsigned evb_age_code(uint64_t age)
{
    /* two steps per doubling: 2^p and 1.5 * 2^p; 63 is 2^31.5, enough */
    if (age < 2)
        return (unsigned)age;
    unsigned p = 63u - (unsigned)__builtin_clzll(age);
    unsigned c = p * 2 + (unsigned)((age >> (p - 1)) & 1);
    return c > 63 ? 63 : c;
}
static inline uint64_t evb_age_of(unsigned code)
{
    if (code < 2)
        return code;
    return (uint64_t)(2 | (code & 1)) << (code / 2 - 1);
}
/* A read's eviction bits: one more read, the last one now. */
static inline void rec_note_read(struct record *r)
{
    uint8_t e = __atomic_load_n(&r->evb, __ATOMIC_RELAXED);
    unsigned n = e & EVB_READS;
    uint64_t age = rec_age(r, cas_clock());
    if (n < EVB_READS)
        n++;
    __atomic_store_n(&r->evb,
                     (uint8_t)(evb_age_code(age) << EVB_AGE_SHIFT | n),
                     __ATOMIC_RELAXED);
}

static inline int rec_expired(const struct record *r, uint32_t now)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    return d != 0 && d <= now;
}
/* Below flush_all's cut-off: versions are CAS_BITS wide and wrap, so
 * "below" is a distance under half the circle (the cut-off is cleared
 * long before versions come round: store_expiry.c).  A version a client
 * set below it (meta E) is flushed too, as in memcached. */
static inline int rec_flushed(struct store *st, const struct record *r)
{
    uint64_t c = atomic_load_explicit(&st->flush_cut, memory_order_relaxed);
    if (__builtin_expect(c == 0, 1))
        return 0;
    uint64_t d = (c - rec_cas(r)) & CAS_MASK;
    return d != 0 && !(d >> (CAS_BITS - 1));
}
/* Gone to every reader: past its deadline, or flushed. */
static inline int rec_dead(struct store *st, const struct record *r,
                           uint32_t now)
{
    return rec_expired(r, now) || rec_flushed(st, r);
}

static inline void store_account(struct store *st, int64_t delta, int tag_index)
{
    atomic_fetch_add_explicit(&st->mem, delta, memory_order_relaxed);
    if (tag_index)
        atomic_fetch_add_explicit(&st->tag_mem, delta, memory_order_relaxed);
}

/* The size rec_alloc() asked for: from the header, so that freeing needs
 * no allocator lookup (mdc_alloc_size, mdc_free_sized). */
static inline size_t rec_req_size(uint32_t klen, uint32_t vlen, size_t fl,
                                  uint32_t ntags)
{
    if (ntags == 0)
        return sizeof(struct record) + klen + vlen + fl;
    return rec_tag_offset(klen, vlen, fl) + sizeof(struct tag_area) +
           (size_t)ntags * sizeof(struct tag_entry);
}
static inline size_t rec_req_size_of(struct record *r)
{
    return rec_req_size(rec_klen(r), r->vlen, rec_flags_len(r),
                        (rec_rflags(r) & R_TAGGED) ? rec_tags(r)->ntags : 0);
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

/* A hold on a record found under its lock (before the lock is left). */
static inline void rec_hold(struct record *r)
{
    if (!mdc_hold(r))
        rec_incref(r);
}

static inline uint32_t pow2_at_least(uint64_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 31))
        p <<= 1;
    return p;
}

/* A record's size as memcached counts it against -I (item_size_ok()):
 * its 48-byte item header, the key and its NUL, the value and its "\r\n",
 * the 8-byte CAS, and 4 bytes of client flags unless they are 0.
 * memcached 1.6.18 -I 1m stores a value of 1048576 - 59 - klen bytes,
 * 4 fewer with flags, and refuses one byte more. */
#define MC_ITEM_OVERHEAD 59u
static inline bool over_item_size(const struct store *st, uint32_t klen,
                                  uint64_t vlen, uint32_t flags)
{
    return MC_ITEM_OVERHEAD + (uint64_t)klen + vlen + (flags ? 4 : 0) >
           st->cfg.max_item_size;
}

static inline int check_key(uint32_t klen)
{
    return klen > STORE_MAX_KEY ? ST_KEY_INVALID : 0;
}

/* ---- limits shared by the store's files -------------------------------- */
#define RETRY_LIMIT 1000000 /* optimistic retries before giving up */

/* ---- store_record.c ---------------------------------------------------- */
/* The bytes a record of this shape takes from the allocator: what its
 * caller reserves (mem_reserve) before rec_alloc_reserved. */
static inline size_t rec_alloc_size(uint32_t klen, uint32_t vlen,
                                    uint32_t flags, uint32_t ntags)
{
    return mdc_good_size(rec_req_size(klen, vlen, flags ? sizeof(flags) : 0,
                                      ntags));
}
int rec_alloc_reserved(struct store *st, size_t real, const void *key,
                       uint32_t klen, uint32_t vlen, uint32_t flags,
                       uint32_t ntags, struct record **out);
void rec_set_tags(struct record *r, const struct mdc_tag *tags, uint32_t n);
void rec_copy_tags(struct record *r, struct record *src);
#define TOK_OWN 1u   /* one of the caller's tokens: its hold, else a count */
#define TOK_INDEX 2u /* the index's token (the record was unlinked) */
void rec_put(struct store *st, struct record *r, unsigned tokens,
             int64_t *freed);
void rec_unindex(struct store *st, struct record *r);
void reclaim_retired(struct store *st);
/* CAS versions */
uint64_t next_cas(void);
uint64_t cas_over(uint64_t cand, uint64_t old);
void cas_above(uint64_t cas);
/* a flush's cut-off: every version handed out from now on, by any thread,
 * is at or above it, every one handed out before is below it */
uint64_t cas_cut(void);
/* the version clock: above every version handed out (with this thread's
 * block still partly unused); counts stores, so the eviction's clock */
uint64_t cas_clock(void);

#endif
