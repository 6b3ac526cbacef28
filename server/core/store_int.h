/*
 * store_int.h - internals shared by store.c, tags.c and dump.c (not for other
 * modules: they use store.h).
 *
 * Record layout (one allocation):
 *
 *   struct record (64 bytes) | key | value | pad to 8 | tag area (tagged only)
 *
 * The tag area is a struct tag_area followed by ntags struct tag_entry; each
 * entry is both the record's copy of one tag and the link node that the tag
 * forest keeps in that tag's list, so linking never allocates.
 */
#ifndef MDC_STORE_INT_H
#define MDC_STORE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include "lock.h"
#include "store.h"
#include "tags.h"

#ifndef __unused
#define __unused __attribute__((unused))
#endif

/*
 * <sys/tree.h>'s entry is three pointers and an int: 32 bytes once padded.
 * Packed to 28, the record header fits 64 bytes and a 16-byte key with a
 * 32-byte value fits jemalloc's 112-byte class.  The pointers stay at 8-byte
 * aligned offsets because the record itself is.
 */
#define MDC_RB_ENTRY_PACKED(type)                                              \
    struct __attribute__((packed, aligned(4))) {                               \
        struct type *rbe_left;                                                 \
        struct type *rbe_right;                                                \
        struct type *rbe_parent;                                               \
        int rbe_color;                                                         \
    }

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

struct record {
    MDC_RB_ENTRY_PACKED(record) rb; /* 28 */
    uint32_t hash32;                /* upper half of the key's 64-bit hash */
    uint64_t cas;      /* atomic: bumped in place by an invalidation */
    uint32_t vlen;
    uint32_t flags;    /* client flags */
    uint32_t deadline; /* store seconds (now_s() in store.c); 0 = never */
    uint32_t refcnt;   /* atomic: index token (bit 31) + counted refs */
    uint32_t atime;    /* atomic relaxed; ~1 ms ticks, wraps */
    uint16_t klen;
    uint8_t rflags;    /* atomic */
    uint8_t spare;
    unsigned char data[]; /* key, value, [pad, tag area] */
};
_Static_assert(sizeof(struct record) == 64, "record header must stay 64 bytes");

struct tag_area {
    uint32_t ntags;
    uint32_t lseq; /* store's link_seq when first linked (kept by append/
                    * incr, which keep the tag positions): the order of
                    * the tag lists, for dumps (dump.c) */
    struct tag_entry e[];
};

RB_HEAD(rtree, record);

/* One stripe's flushed keys (struct store, fmarks). */
struct flush_marks {
    _Atomic uint64_t *h; /* hash | 1 (0: consumed) */
    uint32_t n, cap;
};
#define FLUSH_MARKS_MAX 65536u

struct store {
    struct store_config cfg;
    uint32_t bmask; /* of the reserved array (cfg.nbuckets, the maximum) */
    uint32_t lmask;
    _Atomic uint64_t hstate; /* linear hashing: n << 32 | split */
    pthread_mutex_t grow_mu;
    struct rtree *buckets;
    mdc_rwlock_t *locks; /* record stripes: biased (readers.h) */
    struct tags *tags;

    store_hook_fn hook;
    void *hook_ctx;
    struct store_clock clk;
    uint64_t epoch_ns; /* monotonic ns at which store second 1 began */

    /* read on every operation, written rarely: apart from the counters */
    _Atomic uint32_t flush_at; /* store second of a pending flush; 0 none */
    _Atomic int64_t mem_limit; /* cfg.mem_limit, changed live */
    /* the keys (hashes) of records the last flush removed, per stripe,
     * written under the stripe's write lock; an entry is consumed (set to
     * 0 with a CAS, readers may race) by the first get of its key, which
     * counts get_flushed, or by a store of the key.  At most
     * FLUSH_MARKS_MAX in all; flush_live: entries not yet consumed. */
    struct flush_marks *fmarks; /* [nlocks] */
    _Atomic uint64_t flush_live;
    _Atomic uint64_t flush_total;

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
    _Atomic uint64_t get_flushed; /* gets of records a flush removed */
    uint64_t fixed_bytes;

    /* unlinked records no counted token keeps but a hold slot still does
     * (linked through rb.rbe_left); freed once no slot holds them */
    _Alignas(64) pthread_mutex_t retire_mu;
    struct record *retired;
    _Atomic uint32_t nretired;

    pthread_t sweeper;
    int sweeper_running;
    pthread_mutex_t sweep_mu;
    pthread_cond_t sweep_cv;
    int sweep_stop;
};

/* ---- record helpers ---------------------------------------------------- */
static inline unsigned char *rec_key(struct record *r) { return r->data; }
static inline unsigned char *rec_val(struct record *r)
{
    return r->data + r->klen;
}
static inline size_t rec_tag_offset(uint32_t klen, uint32_t vlen)
{
    size_t off = sizeof(struct record) + klen + vlen;
    return (off + 7) & ~(size_t)7;
}
static inline struct tag_area *rec_tags(struct record *r)
{
    return (struct tag_area *)((unsigned char *)r +
                               rec_tag_offset(r->klen, r->vlen));
}
static inline uint8_t rec_rflags(const struct record *r)
{
    return __atomic_load_n(&r->rflags, __ATOMIC_RELAXED);
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

#endif
