/*
 * tags.c - the tag forest: (tkey, tval) -> records carrying that tag
 * (the interface and its lock rule: tags.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_int.h"
#include "tags.h"

struct tval_node {
    RB_ENTRY(tval_node) rb;
    int32_t tval;
    uint32_t count;
    LIST_HEAD(, tag_entry) list;
};

RB_HEAD(tvtree, tval_node);

struct tkey_node {
    RB_ENTRY(tkey_node) rb;
    int32_t tkey;
    struct tvtree vals;
};

RB_HEAD(tktree, tkey_node);

struct tag_bucket {
    mdc_rwlock_t lock;
    struct tktree keys;
};

struct tags {
    uint32_t mask;
    struct tag_bucket *b;
};

static int tv_cmp(struct tval_node *a, struct tval_node *b)
{
    return a->tval < b->tval ? -1 : a->tval > b->tval;
}
static int tk_cmp(struct tkey_node *a, struct tkey_node *b)
{
    return a->tkey < b->tkey ? -1 : a->tkey > b->tkey;
}
RB_GENERATE_STATIC(tvtree, tval_node, rb, tv_cmp);
RB_GENERATE_STATIC(tktree, tkey_node, rb, tk_cmp);

static inline struct tag_bucket *bucket_of(struct tags *t, int32_t tkey)
{
    uint32_t h = (uint32_t)tkey * 0x9E3779B1u;
    return &t->b[(h >> 16 ^ h) & t->mask];
}

struct tags *tags_setup(uint32_t nbuckets)
{
    struct tags *t = mdc_calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->mask = nbuckets - 1;
    t->b = mdc_calloc(nbuckets, sizeof(*t->b));
    if (t->b == NULL) {
        mdc_free(t);
        return NULL;
    }
    for (uint32_t i = 0; i < nbuckets; i++) {
        mdc_rwlock_init(&t->b[i].lock);
        RB_INIT(&t->b[i].keys);
    }
    return t;
}

void tags_teardown(struct tags *t, int64_t *mem)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tkey_node *k, *kn;
        RB_FOREACH_SAFE(k, tktree, &t->b[i].keys, kn)
        {
            struct tval_node *v, *vn;
            RB_FOREACH_SAFE(v, tvtree, &k->vals, vn)
            {
                RB_REMOVE(tvtree, &k->vals, v);
                *mem -= (int64_t)mdc_usable_size(v);
                mdc_free(v);
            }
            RB_REMOVE(tktree, &t->b[i].keys, k);
            *mem -= (int64_t)mdc_usable_size(k);
            mdc_free(k);
        }
        mdc_rwlock_destroy(&t->b[i].lock);
    }
    mdc_free(t->b);
    mdc_free(t);
}

size_t tags_fixed_bytes(const struct tags *t)
{
    return sizeof(*t) + (size_t)(t->mask + 1) * sizeof(*t->b);
}

static struct tval_node *find_tv(struct tag_bucket *b, int32_t tkey,
                                 int32_t tval, struct tkey_node **kout)
{
    struct tkey_node kq = {.tkey = tkey};
    struct tkey_node *k = RB_FIND(tktree, &b->keys, &kq);
    if (kout != NULL)
        *kout = k;
    if (k == NULL)
        return NULL;
    struct tval_node vq = {.tval = tval};
    return RB_FIND(tvtree, &k->vals, &vq);
}

int tags_link(struct tags *t, struct tag_entry *e, int64_t *mem)
{
    struct tag_bucket *b = bucket_of(t, e->tkey);
    int rc = 0;

    mdc_wrlock(&b->lock);
    struct tkey_node *k;
    struct tval_node *v = find_tv(b, e->tkey, e->tval, &k);
    if (v == NULL) {
        if (k == NULL) {
            k = mdc_malloc(sizeof(*k));
            if (k == NULL) {
                rc = -1;
                goto out;
            }
            k->tkey = e->tkey;
            RB_INIT(&k->vals);
            RB_INSERT(tktree, &b->keys, k);
            *mem += (int64_t)mdc_usable_size(k);
        }
        v = mdc_malloc(sizeof(*v));
        if (v == NULL) {
            if (RB_EMPTY(&k->vals)) {
                RB_REMOVE(tktree, &b->keys, k);
                *mem -= (int64_t)mdc_usable_size(k);
                mdc_free(k);
            }
            rc = -1;
            goto out;
        }
        v->tval = e->tval;
        v->count = 0;
        LIST_INIT(&v->list);
        RB_INSERT(tvtree, &k->vals, v);
        *mem += (int64_t)mdc_usable_size(v);
    }
    LIST_INSERT_HEAD(&v->list, e, le);
    e->tv = v;
    v->count++;
out:
    mdc_unlock(&b->lock);
    return rc;
}

void tags_relink(struct tags *t, struct tag_entry *old, struct tag_entry *ne)
{
    struct tag_bucket *b = bucket_of(t, old->tkey);
    mdc_wrlock(&b->lock);
    LIST_INSERT_AFTER(old, ne, le);
    ne->tv = old->tv;
    LIST_REMOVE(old, le);
    old->tv = NULL;
    mdc_unlock(&b->lock);
}

void tags_unlink(struct tags *t, struct tag_entry *e, int64_t *mem)
{
    struct tag_bucket *b = bucket_of(t, e->tkey);
    mdc_wrlock(&b->lock);
    struct tval_node *v = e->tv;
    if (v == NULL)
        goto out;
    LIST_REMOVE(e, le);
    e->tv = NULL;
    if (--v->count == 0) {
        struct tkey_node kq = {.tkey = e->tkey};
        struct tkey_node *k = RB_FIND(tktree, &b->keys, &kq);
        RB_REMOVE(tvtree, &k->vals, v);
        *mem -= (int64_t)mdc_usable_size(v);
        mdc_free(v);
        if (RB_EMPTY(&k->vals)) {
            RB_REMOVE(tktree, &b->keys, k);
            *mem -= (int64_t)mdc_usable_size(k);
            mdc_free(k);
        }
    }
out:
    mdc_unlock(&b->lock);
}

/* tags_collect's only growth step */
static int recset_push(struct store_recset *s, struct record *r)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        struct record **nr = mdc_realloc(s->recs, nc * sizeof(*nr));
        if (nr == NULL)
            return -1;
        s->recs = nr;
        s->cap = nc;
    }
    s->recs[s->n++] = r;
    return 0;
}

int tags_collect(struct tags *t, int32_t tkey, const int32_t *tvals,
                 size_t n, struct store_recset *out, size_t byte_limit)
{
    struct tag_bucket *b = bucket_of(t, tkey);
    int rc = 0;

    mdc_rdlock(&b->lock);
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct tval_node *v = find_tv(b, tkey, tvals[i], NULL);
        if (v == NULL)
            continue;
        struct tag_entry *e;
        LIST_FOREACH(e, &v->list, le)
        {
            struct record *r = e->rec;
            size_t sz = (size_t)r->klen + r->vlen;
            if (byte_limit != 0 && out->bytes + sz > byte_limit) {
                rc = ST_TRUNCATED;
                break;
            }
            if (recset_push(out, r) != 0) {
                rc = ST_NO_MEMORY;
                break;
            }
            rec_incref(r);
            out->bytes += sz;
        }
    }
    mdc_unlock(&b->lock);
    return rc;
}

struct record *tags_newest(struct tags *t, struct mdc_tag tag)
{
    struct tag_bucket *b = bucket_of(t, tag.tkey);
    struct record *r = NULL;

    mdc_rdlock(&b->lock);
    struct tval_node *v = find_tv(b, tag.tkey, tag.tval, NULL);
    if (v != NULL && !LIST_EMPTY(&v->list)) {
        r = LIST_FIRST(&v->list)->rec;
        rec_incref(r);
    }
    mdc_unlock(&b->lock);
    return r;
}

void tags_counts(struct tags *t, uint64_t *nkeys, uint64_t *nvals,
                 uint64_t *nlinks)
{
    uint64_t nk = 0, nv = 0, nl = 0;
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tag_bucket *b = &t->b[i];
        mdc_rdlock(&b->lock);
        struct tkey_node *k;
        RB_FOREACH(k, tktree, &b->keys)
        {
            nk++;
            struct tval_node *v;
            RB_FOREACH(v, tvtree, &k->vals)
            {
                nv++;
                nl += v->count;
            }
        }
        mdc_unlock(&b->lock);
    }
    *nkeys = nk;
    *nvals = nv;
    *nlinks = nl;
}

static int tc_before(const struct store_tag_count *a,
                     const struct store_tag_count *b)
{
    if (a->records != b->records)
        return a->records > b->records;
    if (a->tag.tkey != b->tag.tkey)
        return a->tag.tkey < b->tag.tkey;
    return a->tag.tval < b->tag.tval;
}

size_t tags_top(struct tags *t, struct store_tag_count *out, size_t n)
{
    size_t have = 0;

    if (n == 0)
        return 0;
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tag_bucket *b = &t->b[i];
        struct tkey_node *k;

        mdc_rdlock(&b->lock);
        RB_FOREACH(k, tktree, &b->keys)
        {
            struct tval_node *v;
            RB_FOREACH(v, tvtree, &k->vals)
            {
                struct store_tag_count c = {{k->tkey, v->tval}, v->count};
                size_t j;

                if (c.records == 0 ||
                    (have == n && !tc_before(&c, &out[n - 1])))
                    continue;
                /* insertion into the sorted array (n is small) */
                j = have < n ? have++ : n - 1;
                while (j > 0 && tc_before(&c, &out[j - 1])) {
                    out[j] = out[j - 1];
                    j--;
                }
                out[j] = c;
            }
        }
        mdc_unlock(&b->lock);
    }
    return have;
}

/* The forest alone: every tkey in its bucket, no empty node left behind,
 * every entry in the list of its own (tkey, tval), lists holding exactly
 * 'count' entries. */
int tags_check(struct tags *t, char *buf, size_t len)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tag_bucket *b = &t->b[i];
        struct tkey_node *k;
        RB_FOREACH(k, tktree, &b->keys)
        {
            if (bucket_of(t, k->tkey) != b) {
                snprintf(buf, len, "tkey %d in wrong bucket", k->tkey);
                return -1;
            }
            if (RB_EMPTY(&k->vals)) {
                snprintf(buf, len, "empty tkey node %d left behind", k->tkey);
                return -1;
            }
            struct tval_node *v;
            RB_FOREACH(v, tvtree, &k->vals)
            {
                uint32_t c = 0;
                struct tag_entry *e;
                LIST_FOREACH(e, &v->list, le)
                {
                    c++;
                    if (e->tkey != k->tkey || e->tval != v->tval ||
                        e->tv != v) {
                        snprintf(buf, len, "entry (%d,%d) in list (%d,%d)",
                                 e->tkey, e->tval, k->tkey, v->tval);
                        return -1;
                    }
                }
                if (c != v->count || c == 0) {
                    snprintf(buf, len, "tag (%d,%d) count %u, list %u",
                             k->tkey, v->tval, v->count, c);
                    return -1;
                }
            }
        }
    }
    return 0;
}

int tags_foreach(struct tags *t, tags_visit_fn fn, void *ctx)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tkey_node *k;
        RB_FOREACH(k, tktree, &t->b[i].keys)
        {
            struct tval_node *v;
            RB_FOREACH(v, tvtree, &k->vals)
            {
                struct tag_entry *e;
                LIST_FOREACH(e, &v->list, le)
                {
                    int rc = fn(ctx, e);
                    if (rc != 0)
                        return rc;
                }
            }
        }
    }
    return 0;
}
