/*
 * store_check.c - the consistency check of the record forest, the tag
 * index and the counters against each other (quiescent store only).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "alloc.h"
#include "store_policy.h"
#include "tags.h"

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
    uint64_t h = store_hash(rec_key(r), rec_klen(r));
    if (do_find(x->st, h, rec_key(r), rec_klen(r)) != r) {
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

/* A linked record of bucket b: in the expiry wheel if it has a deadline,
 * in the bucket's filter and the bucket its hash selects, flagged linked,
 * its size from the header the allocation's.  0, or -1 with buf set. */
static int check_linked(struct store *st, uint32_t b, struct record *r,
                        char *buf, size_t len)
{
    uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
    uint64_t h = store_hash(rec_key(r), rec_klen(r));

    if (d != 0 && !wheel_has(st, h, d)) {
        snprintf(buf, len, "record with a deadline not in the expiry wheel");
        return -1;
    }
    if (!rt_may_hold(&st->buckets[b], h)) {
        snprintf(buf, len, "bucket %u's filter misses a record", b);
        return -1;
    }
    if (bucket_idx(st, h) != b) {
        snprintf(buf, len, "record in wrong bucket");
        return -1;
    }
    if (!(rec_rflags(r) & R_LINKED)) {
        snprintf(buf, len, "record in forest without R_LINKED");
        return -1;
    }
    /* the size a free computes from the header is the allocation's */
    if (mdc_alloc_size(r, rec_req_size_of(r)) !=
        mdc_rec_usable_size(r, rec_req_size_of(r))) {
        snprintf(buf, len, "record size from its header is wrong");
        return -1;
    }
    return 0;
}

int store_check(struct store *st, char *buf, size_t len)
{
    uint64_t items = 0, tagged = 0, links = 0;
    int64_t expiring = 0;

    /* the store must be quiescent, but the sweeper thread may be alive
     * between passes: every lock taken once makes what it wrote under
     * them visible here (with nothing due, its next passes write only
     * the wheel, under the stripe locks, as wheel_has reads it) */
    for (uint32_t j = 0; j <= st->lmask; j++) {
        mdc_wrlock(&st->locks[j]);
        mdc_unlock(&st->locks[j]);
    }
    tags_barrier(st->tags);
    for (uint32_t b = 0; b <= st->bmask; b++) {
        if (b >= nbuckets_now(st) && !rt_empty(&st->buckets[b])) {
            snprintf(buf, len, "records in bucket %u beyond the table", b);
            return -1;
        }
        const char *why = NULL;
        if (rt_verify(&st->buckets[b], &why) < 0) {
            snprintf(buf, len, "bucket %u: %s", b, why);
            return -1;
        }
        struct record *r, *prev = NULL;
        RT_FOREACH(r, &st->buckets[b])
        {
            if (prev != NULL &&
                rec_keycmp(rec_key(prev), rec_klen(prev), r) >= 0) {
                snprintf(buf, len, "bucket %u out of key order", b);
                return -1;
            }
            prev = r;
            items++;
            if (__atomic_load_n(&r->deadline, __ATOMIC_RELAXED) != 0)
                expiring++;
            if (check_linked(st, b, r, buf, len) < 0)
                return -1;
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
