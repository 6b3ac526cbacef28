/*
 * store_tag.c - operations that start from a tag (docs/threads.md,
 * "Operations that start from a tag"): get, delete and mark stale by tag,
 * and the tag stacks.  Phase 1 collects under the tag locks, phase 2 works
 * under each candidate's record stripe, never both at once.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_policy.h"
#include "tags.h"

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
        int live = (rec_rflags(r) & R_LINKED) && !rec_dead(st, r, now);
        if (live) {
            cand.recs[k++] = r;
            out->bytes += (size_t)rec_klen(r) + r->vlen;
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
/* del_by_tag's lists live on the stack up to this many entries; beyond,
 * on the heap, and where the heap says no, the work goes in rounds of
 * this many (the same code, a smaller batch) */
#define DBT_STACK 64

/* One del_by_tag call: what it looks for and what it has summed. */
struct dbt {
    struct store *st;
    int32_t tkey;
    const int32_t *tvals;
    size_t ntvals;
    uint32_t now;
    uint64_t nlive;  /* deleted and not expired: the count returned */
    int64_t freed;   /* bytes of the records freed, accounted once */
};

/*
 * Phase 2 over the candidates cand[0, k): under each one's stripe (write),
 * take whatever record is current for its key out of the record forest if
 * it carries one of the tags.  slot[] (k entries) first holds the hashes,
 * so that each lookup's bucket can be fetched a few candidates ahead, then
 * the deleted records behind the reads (low bit: the record was its own
 * candidate, whose pointer is cleared in cand).  Returns how many were
 * deleted, with their tag entries added to *ntags.
 */
static size_t dbt_detach(struct dbt *d, struct record **cand, size_t k,
                         uint64_t *slot, size_t *ntags)
{
    struct store *st = d->st;
    size_t n = 0;
    uint64_t nexp = 0;

    for (size_t i = 0; i < k; i++) {
        struct record *c = cand[i];
        slot[i] = store_hash(rec_key(c), rec_klen(c));
        if (i < DBT_AHEAD)
            __builtin_prefetch(&st->buckets[bucket_idx(st, slot[i])]);
    }
    for (size_t i = 0; i < k; i++) {
        struct record *c = cand[i];
        uint64_t h = slot[i];
        if (i + DBT_AHEAD < k)
            __builtin_prefetch(&st->buckets[bucket_idx(st, slot[i + DBT_AHEAD])]);
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        struct record *r = do_find(st, h, rec_key(c), rec_klen(c));
        if (r != NULL && carries(r, d->tkey, d->tvals, d->ntvals)) {
            announce(st, EV_DEL_BY_TAG, r, h);
            /* do_detach_b, with the shared counters summed for the end */
            rt_remove(&st->buckets[bucket_idx(st, h)], r);
            rec_clear_rflag(r, R_LINKED);
            if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
                nexp++;
            /* an expired record is removed but not counted: to clients
             * it was gone already (tget skips it too) */
            d->nlive += !rec_dead(st, r, d->now);
            if (r == c)
                cand[i] = NULL;
            slot[n++] = (uint64_t)(uintptr_t)r | (r == c); /* n <= i */
            *ntags += record_ntags(r);
        }
        mdc_unlock(l);
    }
    if (n > 0)
        atomic_fetch_sub_explicit(&st->curr_items, n, memory_order_relaxed);
    if (nexp > 0)
        atomic_fetch_sub_explicit(&st->expiring, nexp, memory_order_relaxed);
    return n;
}

static inline struct record *dbt_rec(uint64_t slot)
{
    return (struct record *)(uintptr_t)(slot & ~(uint64_t)1);
}

/* Phase 3: the deleted records' tag entries leave the tag index, one pass
 * per tag bucket for each batch of entries (tags_unlink_many). */
static void dbt_untag(struct dbt *d, const uint64_t *gone, size_t n,
                      size_t ntags)
{
    struct store *st = d->st;
    struct tag_entry *stack_es[DBT_STACK];
    struct tag_entry **es =
        ntags > DBT_STACK ? mdc_malloc(ntags * sizeof(*es)) : NULL;
    size_t cap = es != NULL ? ntags : DBT_STACK, k = 0;
    uint64_t links = 0;
    int64_t tmem = 0;

    if (es == NULL)
        es = stack_es;
    for (size_t i = 0; i < n; i++) {
        struct tag_area *ta = rec_tags(dbt_rec(gone[i]));
        for (uint32_t t = 0; t < ta->ntags; t++) {
            if (k == cap) {
                tags_unlink_many(st->tags, es, k, &tmem);
                k = 0;
            }
            es[k++] = &ta->e[t];
        }
        links += ta->ntags;
    }
    if (k > 0)
        tags_unlink_many(st->tags, es, k, &tmem);
    if (es != stack_es)
        mdc_free(es);
    store_account(st, tmem, 1);
    atomic_fetch_sub_explicit(&st->tagged_items, n, memory_order_relaxed);
    atomic_fetch_sub_explicit(&st->tag_links, links, memory_order_relaxed);
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
 * Phases 2 and 3 run once over all the candidates, or in rounds of
 * DBT_STACK when their list cannot be allocated.
 */
int store_del_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, uint64_t *ndeleted)
{
    if (ntvals > 0 && tvals == NULL)
        return ST_INVALID;
    struct dbt d = {.st = st, .tkey = tkey, .tvals = tvals,
                    .ntvals = ntvals, .now = now_s(st)};
    struct store_recset cand = {0};
    int rc = tags_collect(st->tags, tkey, tvals, ntvals, &cand, 0);
    uint64_t stack_slot[DBT_STACK];
    uint64_t *slot =
        cand.n > DBT_STACK ? mdc_malloc(cand.n * sizeof(*slot)) : NULL;
    size_t cap = slot != NULL ? cand.n : DBT_STACK;

    if (slot == NULL)
        slot = stack_slot;
    for (size_t from = 0; from < cand.n; from += cap) {
        size_t k = cand.n - from < cap ? cand.n - from : cap, ntags = 0;
        size_t n = dbt_detach(&d, cand.recs + from, k, slot, &ntags);
        dbt_untag(&d, slot, n, ntags);
        /* our other counted references first, while the index token
         * keeps them from being the last (no slot scan), then the index
         * lets go, with the candidate's own token in the same step */
        for (size_t i = from; i < from + k; i++) {
            store_release(st, cand.recs[i]);
            cand.recs[i] = NULL;
        }
        for (size_t i = 0; i < n; i++)
            rec_put(st, dbt_rec(slot[i]),
                    (slot[i] & 1) ? TOK_OWN | TOK_INDEX : TOK_INDEX,
                    &d.freed);
    }
    if (d.freed != 0)
        store_account(st, -d.freed, 0);
    /* as store_release would have: records retired while held by a slot
     * that has let go since */
    if (atomic_load_explicit(&st->nretired, memory_order_relaxed) != 0)
        reclaim_retired(st);
    if (slot != stack_slot)
        mdc_free(slot);
    store_recset_release(st, &cand);
    if (ndeleted)
        *ndeleted = d.nlive;
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
        uint64_t h = store_hash(rec_key(c), rec_klen(c));
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        struct record *r = do_find_live(st, h, rec_key(c), rec_klen(c));
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
        uint64_t h = store_hash(rec_key(c), rec_klen(c));
        mdc_rwlock_t *l = stripe_of(st, h);
        mdc_wrlock(l);
        if (rec_rflags(c) & R_LINKED) {
            if (rec_dead(st, c, now_s(st))) {
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
