/*
 * store_record.c - the store's lowest level (store_record.h): records'
 * allocation (their bytes reserved beforehand by the caller: mem_reserve,
 * store_policy.h), the accessors of store.h, references (tokens, holds, the
 * retire list and the one function that drops tokens, rec_put), the key
 * hash and the CAS clock.  Calls nothing of the store's other files.
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_hash.h"
#include "store_record.h"

const void *record_key(const struct record *r) { return r->data; }
uint32_t record_klen(const struct record *r) { return rec_klen(r); }
const void *record_value(const struct record *r) { return r->data + rec_klen(r); }
uint32_t record_vlen(const struct record *r) { return r->vlen; }
uint32_t record_flags(const struct record *r) { return rec_flags(r); }
void record_parts(const struct record *r, struct record_parts *p)
{
    uint32_t klen = rec_klen(r);

    p->key = r->data;
    p->klen = klen;
    p->value = r->data + klen;
    p->vlen = r->vlen;
    p->flags = rec_flags(r);
}
uint64_t record_cas(const struct record *r)
{
    return rec_cas(r);
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

/* The last token is gone: free r, or retire it while a hold slot still
 * holds it.  The bytes freed are added to *freed for the caller to account
 * (a batch accounts once), or accounted here when freed is NULL. */
static void rec_retire(struct store *st, struct record *r, int64_t *freed)
{
    if (!mdc_held_anywhere(r)) {
        if (freed != NULL)
            *freed += (int64_t)rec_free_quiet(r);
        else
            rec_free(st, r);
        return;
    }
    pthread_mutex_lock(&st->retire_mu);
    /* out of every tree: the link is free */
    r->rb.child[MDC_RB_LEFT] = (struct mdc_rb_node *)st->retired;
    st->retired = r;
    atomic_fetch_add_explicit(&st->nretired, 1, memory_order_relaxed);
    pthread_mutex_unlock(&st->retire_mu);
}

/* Free the retired records no slot holds any more. */
void reclaim_retired(struct store *st)
{
    if (pthread_mutex_trylock(&st->retire_mu) != 0)
        return;
    struct record *r = st->retired, *keep = NULL;
    st->retired = NULL;
    while (r != NULL) {
        struct record *next = (struct record *)r->rb.child[MDC_RB_LEFT];
        if (!mdc_held_anywhere(r)) {
            atomic_fetch_sub_explicit(&st->nretired, 1, memory_order_relaxed);
            rec_free(st, r);
        } else {
            r->rb.child[MDC_RB_LEFT] = (struct mdc_rb_node *)keep;
            keep = r;
        }
        r = next;
    }
    st->retired = keep;
    pthread_mutex_unlock(&st->retire_mu);
}

/*
 * Drop tokens of r: with TOK_OWN one of the caller's (a hold in its own
 * slot first; else a counted one while it is not the last token; else a
 * hold in another thread's slot, which that thread's release then finds
 * gone and takes a count instead; else the last count), with TOK_INDEX the
 * index's (the record was unlinked).  Both together go in one
 * compare-and-swap when a count is there to take.  Whoever drops the last
 * token retires the record (rec_retire, with 'freed' as there).  The one
 * place where tokens are dropped: store_release, the index letting go
 * (rec_unindex) and del_by_tag's batch all come here.
 */
void rec_put(struct store *st, struct record *r, unsigned tokens,
             int64_t *freed)
{
    uint32_t ix = (tokens & TOK_INDEX) ? REF_INDEX : 0, left = 1;

    if ((tokens & TOK_OWN) && mdc_unhold_own(r))
        tokens &= ~TOK_OWN;
    for (unsigned spins = 0; tokens & TOK_OWN; spins++) {
        uint32_t c = __atomic_load_n(&r->refcnt, __ATOMIC_SEQ_CST);
        uint32_t n = c & ~REF_INDEX;
        if (n >= 2 || (n == 1 && (c & REF_INDEX))) {
            /* never the last token (or the last with the index's, which
             * goes with it) */
            if (__atomic_compare_exchange_n(&r->refcnt, &c, c - 1 - ix, 0,
                                            __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
                left = c - 1 - ix;
                tokens = 0;
            }
            continue;
        }
        if (mdc_unhold_any(r)) /* taken by another thread's slot */
            break;
        if (c == 1) {
            if (__atomic_compare_exchange_n(&r->refcnt, &c, 0, 0,
                                            __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
                left = 0;
                tokens = 0;
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
    if (tokens & TOK_INDEX)
        left = __atomic_sub_fetch(&r->refcnt, REF_INDEX, __ATOMIC_SEQ_CST);
    if (left == 0)
        rec_retire(st, r, freed);
}

/* The index lets go of an unlinked record. */
void rec_unindex(struct store *st, struct record *r)
{
    rec_put(st, r, TOK_INDEX, NULL);
}

void store_release(struct store *st, struct record *r)
{
    if (r == NULL)
        return;
    /* the common case, a hold this thread took: dropped without
     * rec_put()'s token accounting (which would try the same first) */
    if (!mdc_unhold_own(r))
        rec_put(st, r, TOK_OWN, NULL);
    if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
        reclaim_retired(st);
}

/*
 * Allocate a record (refcnt 1, not linked) with key and room for the value
 * and 'ntags' tag entries; the caller fills value and tags.  'real' bytes
 * (rec_alloc_size) are reserved already (rec_alloc, store_policy.h): they
 * are given back on failure, else corrected to the exact usable size.
 */
int rec_alloc_reserved(struct store *st, size_t real, const void *key,
                       uint32_t klen, uint32_t vlen, uint32_t flags,
                       uint32_t ntags, struct record **out)
{
    size_t fl = flags ? sizeof(flags) : 0;
    size_t size = rec_req_size(klen, vlen, fl, ntags);
    struct record *r = mdc_rec_malloc(size);
    if (r == NULL) {
        store_account(st, -(int64_t)real, 0);
        return ST_NO_MEMORY;
    }
    /* correct the reservation to the exact usable size */
    size_t usable = mdc_alloc_size(r, size);
    if (usable != real)
        store_account(st, (int64_t)usable - (int64_t)real, 0);
    memset(r, 0, sizeof(*r));
    r->cas_klen = (uint64_t)klen << KLEN_SHIFT;
    r->vlen = vlen;
    r->refcnt = 1;
    if (klen)
        memcpy(r->data, key, klen);
    if (flags) { /* after the value, only when not 0 */
        r->rflags = R_FLAGS;
        memcpy(r->data + klen + vlen, &flags, sizeof(flags));
    }
    if (ntags > 0) {
        r->rflags |= R_TAGGED;
        struct tag_area *ta = rec_tags(r);
        ta->ntags = ntags;
        ta->lseq = 0;
    }
    *out = r;
    return 0;
}

/* Copy the tags of 'src' (sorted, distinct) into the entries of 'r'. */
void rec_set_tags(struct record *r, const struct mdc_tag *tags,
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

void rec_copy_tags(struct record *r, struct record *src)
{
    struct tag_area *sa = rec_tags(src), *ta = rec_tags(r);
    for (uint32_t i = 0; i < sa->ntags; i++) {
        ta->e[i].tkey = sa->e[i].tkey;
        ta->e[i].tval = sa->e[i].tval;
        ta->e[i].tv = NULL;
        ta->e[i].rec = r;
    }
}

void store_recset_release(struct store *st, struct store_recset *set)
{
    for (size_t i = 0; i < set->n; i++)
        store_release(st, set->recs[i]);
    mdc_free(set->recs);
    memset(set, 0, sizeof(*set));
}

uint32_t record_idle_ticks(struct store *st, const struct record *r)
{
    uint16_t a = __atomic_load_n(&r->atime, __ATOMIC_RELAXED);
    return tick_age(now_tick(st), a) << IDLE_TICK_SHIFT;
}

bool record_fetched(const struct record *r)
{
    return (rec_rflags(r) & R_FETCHED) != 0;
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
    return mdc_rec_usable_size(r, rec_req_size_of((struct record *)r));
}

size_t record_req_bytes(const struct record *r)
{
    return rec_req_size_of((struct record *)r);
}

/*
 * CAS versions: per-thread blocks of a global counter, CAS_BITS wide (the
 * top 16 bits of a record's version word hold its key length).  The
 * counter is also the eviction's clock (a record's age is cas_clock() -
 * its version in CAS_BITS arithmetic: rec_age() in store_record.h), so a
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

/* A version above 'old' for a record that replaces one at 'old' (or
 * re-versions it): 'cand' if it is above, else one from a new block above
 * 'old'.  Blocks are per thread, so a store on one thread can take a
 * version below the one another thread gave the key just before; memcached
 * compares versions by age (ms I's "older CAS", md I's new CAS), so a
 * key's versions must grow as its stores happen. */
uint64_t cas_over(uint64_t cand, uint64_t old)
{
    if (cand > old)
        return cand;
    cas_above(old);
    cas_next = cas_end; /* this thread's block is behind: drop it */
    return next_cas();
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

/* The key hash (store_hash.h) for every caller outside the inline lookups. */
uint64_t store_hash(const void *key, uint32_t klen)
{
    return store_hash_inline(key, klen);
}
