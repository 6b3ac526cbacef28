/*
 * tags.c - the tag forest: (tkey, tval) -> records carrying that tag
 * (the interface and its lock rule: tags.h).
 *
 * A tag's bucket is chosen by a hash of the pair (tkey, tval), so tags that
 * share a tkey spread over the buckets and their writers do not serialise
 * on one lock.  Each bucket keeps one red-black tree of tag nodes ordered by
 * (tkey, tval); a node heads the list of its entries.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/tree.h>

#include "alloc.h"
#include "store_record.h"
#include "tags.h"

struct tval_node {
    RB_ENTRY(tval_node) rb;
    int32_t tkey;
    int32_t tval;
    uint32_t count;
    LIST_HEAD(, tag_entry) list;
};

RB_HEAD(tvtree, tval_node);

struct tag_bucket {
    mdc_plainlock_t lock;
    struct tvtree tags;
};

struct tags {
    uint32_t mask;
    struct tag_bucket *b;
};

static int tv_cmp(struct tval_node *a, struct tval_node *b)
{
    if (a->tkey != b->tkey)
        return a->tkey < b->tkey ? -1 : 1;
    return a->tval < b->tval ? -1 : a->tval > b->tval;
}
RB_GENERATE_STATIC(tvtree, tval_node, rb, tv_cmp);

static inline uint32_t tag_bucket_idx(const struct tags *t, int32_t tkey,
                                  int32_t tval)
{
    uint64_t x = (uint64_t)(uint32_t)tkey << 32 | (uint32_t)tval;
    x *= 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32) & t->mask;
}
static inline struct tag_bucket *bucket_of(struct tags *t, int32_t tkey,
                                           int32_t tval)
{
    return &t->b[tag_bucket_idx(t, tkey, tval)];
}

uint32_t tags_bucket(const struct tags *t, int32_t tkey, int32_t tval)
{
    return tag_bucket_idx(t, tkey, tval);
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
        mdc_plainlock_init(&t->b[i].lock);
        RB_INIT(&t->b[i].tags);
    }
    return t;
}

void tags_teardown(struct tags *t, int64_t *mem)
{
    if (t == NULL)
        return;
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tval_node *v, *vn;
        RB_FOREACH_SAFE(v, tvtree, &t->b[i].tags, vn)
        {
            RB_REMOVE(tvtree, &t->b[i].tags, v);
            *mem -= (int64_t)mdc_usable_size(v);
            mdc_free(v);
        }
        mdc_plainlock_destroy(&t->b[i].lock);
    }
    mdc_free(t->b);
    mdc_free(t);
}

size_t tags_fixed_bytes(const struct tags *t)
{
    return sizeof(*t) + (size_t)(t->mask + 1) * sizeof(*t->b);
}

static struct tval_node *find_tv(struct tag_bucket *b, int32_t tkey,
                                 int32_t tval)
{
    struct tval_node q = {.tkey = tkey, .tval = tval};
    return RB_FIND(tvtree, &b->tags, &q);
}

int tags_link(struct tags *t, struct tag_entry *e, int64_t *mem)
{
    struct tag_bucket *b = bucket_of(t, e->tkey, e->tval);
    int rc = 0;

    mdc_wrlock(&b->lock);
    struct tval_node *v = find_tv(b, e->tkey, e->tval);
    if (v == NULL) {
        v = mdc_malloc(sizeof(*v));
        if (v == NULL) {
            rc = -1;
            goto out;
        }
        v->tkey = e->tkey;
        v->tval = e->tval;
        v->count = 0;
        LIST_INIT(&v->list);
        RB_INSERT(tvtree, &b->tags, v);
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
    struct tag_bucket *b = bucket_of(t, old->tkey, old->tval);
    mdc_wrlock(&b->lock);
    LIST_INSERT_AFTER(old, ne, le);
    ne->tv = old->tv;
    LIST_REMOVE(old, le);
    old->tv = NULL;
    mdc_unlock(&b->lock);
}

/* Unlink under the bucket's write lock. */
static void unlink_locked(struct tag_bucket *b, struct tag_entry *e,
                          int64_t *mem)
{
    struct tval_node *v = e->tv;
    if (v == NULL)
        return;
    LIST_REMOVE(e, le);
    e->tv = NULL;
    if (--v->count == 0) {
        RB_REMOVE(tvtree, &b->tags, v);
        *mem -= (int64_t)mdc_usable_size(v);
        mdc_free(v);
    }
}

void tags_unlink(struct tags *t, struct tag_entry *e, int64_t *mem)
{
    struct tag_bucket *b = bucket_of(t, e->tkey, e->tval);
    mdc_wrlock(&b->lock);
    unlink_locked(b, e, mem);
    mdc_unlock(&b->lock);
}

int tags_unlink_many(struct tags *t, struct tag_entry *const *es, size_t n,
                     int64_t *mem)
{
    /* a counting sort by bucket: two passes over the entries and one over
     * the bucket counts, where a comparison sort cost more than the lock
     * rounds it saves */
    uint32_t nb = t->mask + 1;
    uint32_t *start = n ? mdc_calloc(nb + 1, sizeof(*start)) : NULL;
    struct tag_entry **s = n ? mdc_malloc(n * sizeof(*s)) : NULL;
    uint32_t *bi = n ? mdc_malloc(n * sizeof(*bi)) : NULL;
    if (start == NULL || s == NULL || bi == NULL) {
        mdc_free(start);
        mdc_free(s);
        mdc_free(bi);
        for (size_t i = 0; i < n; i++)
            tags_unlink(t, es[i], mem);
        return (int)n;
    }
    for (size_t i = 0; i < n; i++) {
        bi[i] = tag_bucket_idx(t, es[i]->tkey, es[i]->tval);
        start[bi[i] + 1]++;
    }
    for (uint32_t b = 0; b < nb; b++)
        start[b + 1] += start[b];
    for (size_t i = 0; i < n; i++)
        s[start[bi[i]]++] = es[i]; /* start[b] ends as bucket b's end */
    int rounds = 0;
    uint32_t from = 0;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t to = start[b];
        if (to == from)
            continue;
        struct tag_bucket *tb = &t->b[b];
        mdc_wrlock(&tb->lock);
        for (uint32_t k = from; k < to; k++)
            unlink_locked(tb, s[k], mem);
        mdc_unlock(&tb->lock);
        rounds++;
        from = to;
    }
    mdc_free(start);
    mdc_free(s);
    mdc_free(bi);
    return rounds;
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
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        struct tag_bucket *b = bucket_of(t, tkey, tvals[i]);
        mdc_rdlock(&b->lock);
        struct tval_node *v = find_tv(b, tkey, tvals[i]);
        struct tag_entry *e;
        if (v != NULL && out->n + v->count > out->cap) {
            /* room for the whole list at once, not by doubling */
            size_t nc = out->n + v->count;
            struct record **nr = mdc_realloc(out->recs, nc * sizeof(*nr));
            if (nr != NULL) {
                out->recs = nr;
                out->cap = nc;
            }
        }
        if (v != NULL) {
            LIST_FOREACH(e, &v->list, le)
            {
                struct record *r = e->rec;
                size_t sz = (size_t)rec_klen(r) + r->vlen;
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
    }
    return rc;
}

struct record *tags_newest(struct tags *t, struct mdc_tag tag)
{
    struct tag_bucket *b = bucket_of(t, tag.tkey, tag.tval);
    struct record *r = NULL;

    mdc_rdlock(&b->lock);
    struct tval_node *v = find_tv(b, tag.tkey, tag.tval);
    if (v != NULL) {
        /* the newest still in the record forest: del_by_tag takes records
         * out of the forest before it unlinks their tags */
        struct tag_entry *e;
        LIST_FOREACH(e, &v->list, le)
        {
            if (rec_rflags(e->rec) & R_LINKED) {
                r = e->rec;
                rec_incref(r);
                break;
            }
        }
    }
    mdc_unlock(&b->lock);
    return r;
}

static int i32_cmp(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return a < b ? -1 : a > b;
}

void tags_counts(struct tags *t, uint64_t *nkeys, uint64_t *nvals,
                 uint64_t *nlinks)
{
    uint64_t nv = 0, nl = 0;
    /* distinct tkeys: a tkey's tags spread over the buckets */
    int32_t *keys = NULL;
    size_t nk = 0, cap = 0;
    int nomem = 0;
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tag_bucket *b = &t->b[i];
        mdc_rdlock(&b->lock);
        struct tval_node *v;
        RB_FOREACH(v, tvtree, &b->tags)
        {
            nv++;
            nl += v->count;
            if (nomem)
                continue;
            if (nk == cap) {
                size_t nc = cap ? cap * 2 : 64;
                int32_t *nkp = mdc_realloc(keys, nc * sizeof(*nkp));
                if (nkp == NULL) {
                    nomem = 1;
                    continue;
                }
                keys = nkp;
                cap = nc;
            }
            keys[nk++] = v->tkey;
        }
        mdc_unlock(&b->lock);
    }
    uint64_t distinct = 0;
    if (!nomem && nk > 0) {
        qsort(keys, nk, sizeof(*keys), i32_cmp);
        distinct = 1;
        for (size_t i = 1; i < nk; i++)
            distinct += keys[i] != keys[i - 1];
    } else if (nomem) {
        distinct = nv; /* an upper bound */
    }
    mdc_free(keys);
    *nkeys = distinct;
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
        struct tval_node *v;

        mdc_rdlock(&b->lock);
        RB_FOREACH(v, tvtree, &b->tags)
        {
            struct store_tag_count c = {{v->tkey, v->tval}, v->count};
            size_t j;

            if (c.records == 0 || (have == n && !tc_before(&c, &out[n - 1])))
                continue;
            /* insertion into the sorted array (n is small) */
            j = have < n ? have++ : n - 1;
            while (j > 0 && tc_before(&c, &out[j - 1])) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = c;
        }
        mdc_unlock(&b->lock);
    }
    return have;
}

/* Take and release every bucket's lock: what other threads wrote under
 * them before is then visible to this one (store_check's barrier). */
void tags_barrier(struct tags *t)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        mdc_wrlock(&t->b[i].lock);
        mdc_unlock(&t->b[i].lock);
    }
}

/* The forest alone: every tag in its bucket, no empty node left behind,
 * every entry in the list of its own (tkey, tval), lists holding exactly
 * 'count' entries. */
int tags_check(struct tags *t, char *buf, size_t len)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tag_bucket *b = &t->b[i];
        struct tval_node *v;
        RB_FOREACH(v, tvtree, &b->tags)
        {
            if (bucket_of(t, v->tkey, v->tval) != b) {
                snprintf(buf, len, "tag (%d,%d) in wrong bucket", v->tkey,
                         v->tval);
                return -1;
            }
            uint32_t c = 0;
            struct tag_entry *e;
            LIST_FOREACH(e, &v->list, le)
            {
                c++;
                if (e->tkey != v->tkey || e->tval != v->tval || e->tv != v) {
                    snprintf(buf, len, "entry (%d,%d) in list (%d,%d)",
                             e->tkey, e->tval, v->tkey, v->tval);
                    return -1;
                }
            }
            if (c != v->count || c == 0) {
                snprintf(buf, len, "tag (%d,%d) count %u, list %u", v->tkey,
                         v->tval, v->count, c);
                return -1;
            }
        }
    }
    return 0;
}

int tags_foreach(struct tags *t, tags_visit_fn fn, void *ctx)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        struct tval_node *v;
        RB_FOREACH(v, tvtree, &t->b[i].tags)
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
    return 0;
}
