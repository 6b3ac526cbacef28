/*
 * store_account.c - the store's counters read out (store_get_stats) and
 * CAS versions.  The counters themselves are atomics in struct store,
 * updated where the change happens (store_account() for bytes).
 */
#include "config.h"

#include <string.h>

#include "store_int.h"
#include "tags.h"

/*
 * CAS versions: per-thread blocks of a global counter, CAS_BITS wide (the
 * top 16 bits of a record's version word hold its key length).  The
 * counter is also the eviction's clock (a record's age is cas_clock() -
 * its version in CAS_BITS arithmetic: rec_age() in store_int.h), so a
 * thread whose block has fallen far behind (it stores rarely while others
 * store a lot) drops the rest of it: its records would otherwise look old
 * from the start.  Reading the counter costs little: it is written once
 * per block.
 */
#define CAS_BLOCK 256
#define CAS_STALE 4096
static _Atomic uint64_t cas_global = 1;
static __thread uint64_t cas_next, cas_end;
uint64_t next_cas(void)
{
    for (;;) {
        if (cas_next == cas_end ||
            atomic_load_explicit(&cas_global, memory_order_relaxed) - cas_end >
                CAS_STALE) {
            cas_next = atomic_fetch_add_explicit(&cas_global, CAS_BLOCK,
                                                 memory_order_relaxed);
            cas_end = cas_next + CAS_BLOCK;
        }
        uint64_t c = cas_next++ & CAS_MASK; /* CAS_BITS wide, never 0 */
        if (c != 0)
            return c;
    }
}

/* Exact for the thread that took the newest block (a store's own thread,
 * and every thread of a server with one): the next version it hands out;
 * otherwise the newest block's end, at most a block ahead. */
uint64_t cas_clock(void)
{
    uint64_t g = atomic_load_explicit(&cas_global, memory_order_relaxed);
    return (cas_end == g ? cas_next : g) & CAS_MASK; /* as versions are */
}

/* A flush's cut-off.  Every thread's block ends at or below the counter,
 * so moving the counter more than CAS_STALE past it makes every thread
 * drop the rest of its block at its next version (next_cas's staleness
 * test) and take a new one at or above the cut-off; the versions skipped
 * are never handed out. */
uint64_t cas_cut(void)
{
    for (;;) {
        uint64_t c = (atomic_fetch_add(&cas_global, CAS_STALE + 1) +
                      CAS_STALE + 1) & CAS_MASK;
        if (c != 0)
            return c;
    }
}

/* Versions handed out later are above 'cas' (a restored record's). */
void cas_above(uint64_t cas)
{
    uint64_t g = atomic_load(&cas_global);
    while (g <= cas && !atomic_compare_exchange_weak(&cas_global, &g, cas + 1))
        ;
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
    o->flush_reclaimed = LD(flush_reclaimed);
    o->flush_pending = (LD(flush_at) != 0) +
                       (LD(flush_gen) != LD(flush_walked));
    o->tagged_items = LD(tagged_items);
    o->tag_links = LD(tag_links);
#undef LD
    uint64_t nk, nv, nl;
    tags_counts(st->tags, &nk, &nv, &nl);
    o->tag_keys = nk;
    o->tag_values = nv;
    o->nbuckets = nbuckets_now(st);
    o->fixed_bytes = st->fixed_bytes + o->nbuckets * sizeof(*st->buckets) +
                     (uint64_t)atomic_load_explicit(&st->wheel_bytes,
                                                    memory_order_relaxed);
}
