/*
 * ops.c - the operations of one handle: each composes its request(s) with
 * the wire composer, runs one exchange, and turns the reply into results.
 * Single requests share one reply handler (one_*); multi-get, batched
 * stores and get_by_tag have their own, also used by the pool's fan-out.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mdc_int.h"
#include "ops.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- single request, single reply ------------------------------------- */

static int unexpected(struct mdc *m, const struct wire_msg *msg)
{
    return mdci_seterr(
        m, MDC_ERR_PROTOCOL,
        "%s: unexpected reply (opcode 0x%02x, id %" PRIu32 ", flags 0x%02x)",
        m->label, msg->hdr.opcode, msg->hdr.opaque, msg->hdr.flags);
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s == NULL)
        return NULL;
    if (n)
        memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static int on_one(struct mdc *m, const struct wire_msg *msg, void *vctx)
{
    struct mdci_one *c = vctx;
    const struct wire_hdr *h = &msg->hdr;

    if (h->opaque != c->opaque || h->opcode != c->opcode ||
        (h->flags & WIRE_F_MORE))
        return unexpected(m, msg);
    c->status = h->status;
    c->cas = h->cas;
    if (h->status != WIRE_S_OK) {
        mdci_setstatus(m, h->status, msg);
        /* cmpset mismatch carries the current value */
        if (c->want == MDCI_WANT_U64 && h->status == WIRE_S_EXISTS &&
            h->vlen == 8)
            c->u64 = wire_get_u64(msg->value);
        return 1;
    }
    switch (c->want) {
    case MDCI_WANT_ITEM:
        c->item = mdci_item_from_msg(msg, c->key, c->klen);
        if (c->item == NULL)
            c->nomem = true;
        break;
    case MDCI_WANT_U64:
        if (h->vlen != 8)
            return mdci_seterr(m, MDC_ERR_PROTOCOL,
                               "%s: counter reply of %" PRIu32 " bytes",
                               m->label, h->vlen);
        c->u64 = wire_get_u64(msg->value);
        break;
    case MDCI_WANT_TEXT:
        c->text = dup_bytes(msg->value, h->vlen);
        c->textlen = h->vlen;
        if (c->text == NULL)
            c->nomem = true;
        break;
    case MDCI_WANT_KEY:
        c->text = dup_bytes(msg->key, h->klen);
        c->textlen = h->klen;
        if (c->text == NULL)
            c->nomem = true;
        break;
    default: break;
    }
    return 1;
}

int mdci_one_begin(struct mdc *m, struct wire_hdr *h,
                   const struct mdc_tag *tags, size_t ntags, const void *key,
                   size_t klen, const void *value, size_t vlen,
                   struct mdci_one *c)
{
    int rc = mdci_begin(m, on_one, c);
    if (rc != MDC_OK)
        return rc;
    c->opcode = h->opcode;
    c->opaque = h->opaque = mdci_opaque(m);
    c->status = -1;
    rc = mdci_add(m, h, tags, ntags, key, klen, value, vlen);
    if (rc != MDC_OK)
        m->busy = false;
    return rc;
}

int mdci_one_finish(struct mdc *m, struct mdci_one *c)
{
    if (m->xrc != MDC_OK)
        return m->xrc;
    if (c->nomem) {
        mdc_item_free(c->item);
        free(c->text);
        c->item = NULL;
        c->text = NULL;
        return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory");
    }
    if (c->status == WIRE_S_OK)
        return mdci_setstatus(m, MDC_OK, NULL);
    return c->status; /* message set by on_one */
}

static int one(struct mdc *m, struct wire_hdr *h, const struct mdc_tag *tags,
               size_t ntags, const void *key, size_t klen, const void *value,
               size_t vlen, struct mdci_one *c)
{
    int rc = mdci_one_begin(m, h, tags, ntags, key, klen, value, vlen, c);
    if (rc != MDC_OK)
        return rc;
    mdci_exchange(m);
    return mdci_one_finish(m, c);
}

/* ---- retrieval --------------------------------------------------------------
 */

/* One GET-like request: op with flags, the request value val (a lease
 * get's TTLs, else none). */
static int get_common(mdc_t *m, uint8_t op, uint8_t flags, const void *key,
                      size_t klen, int64_t exptime, const void *val,
                      size_t vlen, struct mdc_item **out)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_ITEM, .key = key, .klen = klen};
    int rc;

    if (out != NULL)
        *out = NULL;
    if (m == NULL)
        return MDC_ERR_ARG;
    if ((rc = mdci_check_key(m, klen)) != MDC_OK)
        return rc;
    wire_hdr_request(&h, op);
    h.flags = flags;
    h.expiry = exptime;
    rc = one(m, &h, NULL, 0, key, klen, val, vlen, &c);
    if (rc == MDC_OK && out != NULL)
        *out = c.item;
    else
        mdc_item_free(c.item);
    return rc;
}

int mdc_get(mdc_t *m, const void *key, size_t klen, struct mdc_item **out)
{
    return get_common(m, WIRE_OP_GET, 0, key, klen, 0, NULL, 0, out);
}

int mdc_gat(mdc_t *m, const void *key, size_t klen, int64_t exptime,
            struct mdc_item **out)
{
    return get_common(m, WIRE_OP_GAT, 0, key, klen, exptime, NULL, 0, out);
}

int mdc_lease_get(mdc_t *m, const void *key, size_t klen, int64_t vivify_ttl,
                  int64_t recache_ttl, struct mdc_item **out)
{
    uint8_t ttls[WIRE_LEASE_VLEN];

    wire_put_u64(ttls, (uint64_t)vivify_ttl);
    wire_put_u64(ttls + 8, (uint64_t)recache_ttl);
    return get_common(m, WIRE_OP_GET, WIRE_F_LEASE, key, klen, 0, ttls,
                      sizeof(ttls), out);
}

/* Multi-get: quiet GETs (ids base .. base+n-1) closed by a NOOP (base+n). */
static int on_mget(struct mdc *m, const struct wire_msg *msg, void *vctx)
{
    struct mdci_mget *c = vctx;
    const struct wire_hdr *h = &msg->hdr;
    uint32_t off = h->opaque - c->base;

    if (off == c->n && h->opcode == WIRE_OP_NOOP && !(h->flags & WIRE_F_MORE))
        return 1;
    if (off >= c->n || h->opcode != WIRE_OP_GET || (h->flags & WIRE_F_MORE))
        return unexpected(m, msg);
    size_t i = c->map ? c->map[off] : off;
    if (h->status == WIRE_S_OK) {
        if (c->out[i] != NULL)
            return unexpected(m, msg);
        c->out[i] = mdci_item_from_msg(msg, c->keys[i], c->klens[i]);
        if (c->out[i] == NULL)
            c->nomem = true;
    } else if (h->status != WIRE_S_NOT_FOUND && c->first_err == 0) {
        c->first_err = h->status;
        mdci_setstatus(m, h->status, msg);
    }
    return 0;
}

int mdci_mget_begin(struct mdc *m, struct mdci_mget *c)
{
    struct wire_hdr h;
    int rc = mdci_begin(m, on_mget, c);
    if (rc != MDC_OK)
        return rc;
    c->base = m->next_opaque;
    m->next_opaque += (uint32_t)c->n + 1;
    for (size_t j = 0; j < c->n; j++) {
        size_t i = c->map ? c->map[j] : j;
        wire_hdr_request(&h, WIRE_OP_GET);
        h.flags = WIRE_F_QUIET;
        h.opaque = c->base + (uint32_t)j;
        rc = mdci_add(m, &h, NULL, 0, c->keys[i], c->klens[i], NULL, 0);
        if (rc != MDC_OK)
            goto out;
    }
    wire_hdr_request(&h, WIRE_OP_NOOP);
    h.opaque = c->base + (uint32_t)c->n;
    rc = mdci_add(m, &h, NULL, 0, NULL, 0, NULL, 0);
out:
    if (rc != MDC_OK)
        m->busy = false;
    return rc;
}

int mdci_mget_finish(struct mdc *m, struct mdci_mget *c)
{
    if (m->xrc != MDC_OK)
        return m->xrc;
    if (c->nomem)
        return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory");
    if (c->first_err != 0)
        return c->first_err;
    return mdci_setstatus(m, MDC_OK, NULL);
}

int mdc_mget(mdc_t *m, size_t n, const void *const *keys, const size_t *klens,
             struct mdc_item **out)
{
    struct mdci_mget c = {0};
    int rc;

    if (m == NULL || out == NULL || (n > 0 && (keys == NULL || klens == NULL)))
        return m ? mdci_seterr(m, MDC_ERR_ARG, "NULL argument") : MDC_ERR_ARG;
    if (n > UINT32_MAX - 1)
        return mdci_seterr(m, MDC_ERR_ARG, "too many keys");
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        if ((rc = mdci_check_key(m, klens[i])) != MDC_OK)
            return rc;
    }
    c.n = n;
    c.keys = keys;
    c.klens = klens;
    c.out = out;
    if ((rc = mdci_mget_begin(m, &c)) != MDC_OK)
        return rc;
    mdci_exchange(m);
    rc = mdci_mget_finish(m, &c);
    if (rc < 0)
        for (size_t i = 0; i < n; i++) {
            mdc_item_free(out[i]);
            out[i] = NULL;
        }
    return rc;
}

/* ---- storage ----------------------------------------------------------------
 */

static int check_kv(struct mdc *m, enum mdc_store_mode mode,
                    const struct mdc_kv *kv)
{
    int rc;
    if (kv == NULL || (kv->vlen > 0 && kv->value == NULL) ||
        (kv->ntags > 0 && kv->tags == NULL))
        return mdci_seterr(m, MDC_ERR_ARG, "NULL argument");
    if (mode < MDC_SET || mode > MDC_PREPEND)
        return mdci_seterr(m, MDC_ERR_ARG, "bad store mode %d", (int)mode);
    if (mode == MDC_CAS && kv->cas == 0)
        return mdci_seterr(m, MDC_ERR_ARG, "cas needs a version");
    if ((rc = mdci_check_key(m, kv->klen)) != MDC_OK)
        return rc;
    return MDC_OK;
}

/* append/prepend carry only key and value; add/replace no CAS. */
static void store_hdr(struct wire_hdr *h, enum mdc_store_mode mode,
                      const struct mdc_kv *kv)
{
    wire_hdr_request(h, (uint8_t)mode);
    if (mode == MDC_APPEND || mode == MDC_PREPEND)
        return;
    h->iflags = kv->flags;
    h->expiry = kv->exptime;
    if (mode == MDC_SET || mode == MDC_CAS)
        h->cas = kv->cas;
}

static size_t store_ntags(enum mdc_store_mode mode, const struct mdc_kv *kv)
{
    return (mode == MDC_APPEND || mode == MDC_PREPEND) ? 0 : kv->ntags;
}

int mdc_store(mdc_t *m, enum mdc_store_mode mode, const struct mdc_kv *kv,
              uint64_t *cas_out)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_NONE};
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if ((rc = check_kv(m, mode, kv)) != MDC_OK)
        return rc;
    store_hdr(&h, mode, kv);
    rc = one(m, &h, kv->tags, store_ntags(mode, kv), kv->key, kv->klen,
             kv->value, kv->vlen, &c);
    if (rc == MDC_OK && cas_out != NULL)
        *cas_out = c.cas;
    return rc;
}

static int store_simple(mdc_t *m, enum mdc_store_mode mode, const void *key,
                        size_t klen, const void *value, size_t vlen,
                        uint32_t flags, int64_t exptime,
                        const struct mdc_tag *tags, size_t ntags, uint64_t cas)
{
    struct mdc_kv kv = {
        .key = key,
        .klen = klen,
        .value = value,
        .vlen = vlen,
        .flags = flags,
        .exptime = exptime,
        .cas = cas,
        .tags = tags,
        .ntags = ntags,
    };
    return mdc_store(m, mode, &kv, NULL);
}

int mdc_set(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags)
{
    return store_simple(m, MDC_SET, key, klen, value, vlen, flags, exptime,
                        tags, ntags, 0);
}

int mdc_add(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags)
{
    return store_simple(m, MDC_ADD, key, klen, value, vlen, flags, exptime,
                        tags, ntags, 0);
}

int mdc_replace(mdc_t *m, const void *key, size_t klen, const void *value,
                size_t vlen, uint32_t flags, int64_t exptime,
                const struct mdc_tag *tags, size_t ntags)
{
    return store_simple(m, MDC_REPLACE, key, klen, value, vlen, flags, exptime,
                        tags, ntags, 0);
}

int mdc_cas(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags, uint64_t cas)
{
    return store_simple(m, MDC_CAS, key, klen, value, vlen, flags, exptime,
                        tags, ntags, cas);
}

int mdc_append(mdc_t *m, const void *key, size_t klen, const void *value,
               size_t vlen)
{
    return store_simple(m, MDC_APPEND, key, klen, value, vlen, 0, 0, NULL, 0,
                        0);
}

int mdc_prepend(mdc_t *m, const void *key, size_t klen, const void *value,
                size_t vlen)
{
    return store_simple(m, MDC_PREPEND, key, klen, value, vlen, 0, 0, NULL, 0,
                        0);
}

/* Batched stores: quiet stores (ids base ..) closed by a NOOP. */
struct mset_ctx {
    uint32_t base;
    size_t n;
    int *status;
    int first_err;
    uint8_t opcode;
};

static int on_mset(struct mdc *m, const struct wire_msg *msg, void *vctx)
{
    struct mset_ctx *c = vctx;
    const struct wire_hdr *h = &msg->hdr;
    uint32_t off = h->opaque - c->base;

    if (off == c->n && h->opcode == WIRE_OP_NOOP && !(h->flags & WIRE_F_MORE))
        return 1;
    if (off >= c->n || h->opcode != c->opcode || (h->flags & WIRE_F_MORE))
        return unexpected(m, msg);
    if (c->status != NULL)
        c->status[off] = h->status;
    if (h->status != WIRE_S_OK && c->first_err == 0) {
        c->first_err = h->status;
        mdci_setstatus(m, h->status, msg);
    }
    return 0;
}

int mdc_mset(mdc_t *m, enum mdc_store_mode mode, size_t n,
             const struct mdc_kv *kvs, int *status)
{
    struct mset_ctx c = {0};
    struct wire_hdr h;
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if (n > 0 && kvs == NULL)
        return mdci_seterr(m, MDC_ERR_ARG, "NULL argument");
    if (n > UINT32_MAX - 1)
        return mdci_seterr(m, MDC_ERR_ARG, "too many records");
    for (size_t i = 0; i < n; i++) {
        if (status != NULL)
            status[i] = MDC_OK;
        if ((rc = check_kv(m, mode, &kvs[i])) != MDC_OK)
            return rc;
    }
    c.n = n;
    c.status = status;
    c.opcode = (uint8_t)mode;
    if ((rc = mdci_begin(m, on_mset, &c)) != MDC_OK)
        return rc;
    c.base = m->next_opaque;
    m->next_opaque += (uint32_t)n + 1;
    for (size_t i = 0; i < n; i++) {
        store_hdr(&h, mode, &kvs[i]);
        h.flags = WIRE_F_QUIET;
        h.opaque = c.base + (uint32_t)i;
        rc = mdci_add(m, &h, kvs[i].tags, store_ntags(mode, &kvs[i]),
                      kvs[i].key, kvs[i].klen, kvs[i].value, kvs[i].vlen);
        if (rc != MDC_OK) {
            m->busy = false;
            return rc;
        }
    }
    wire_hdr_request(&h, WIRE_OP_NOOP);
    h.opaque = c.base + (uint32_t)n;
    if ((rc = mdci_add(m, &h, NULL, 0, NULL, 0, NULL, 0)) != MDC_OK) {
        m->busy = false;
        return rc;
    }
    if ((rc = mdci_exchange(m)) != MDC_OK)
        return rc;
    if (c.first_err != 0)
        return c.first_err;
    return mdci_setstatus(m, MDC_OK, NULL);
}

/* DELETE, or with WIRE_F_STALE a mark-stale with an optional TTL. */
static int delete_common(mdc_t *m, uint8_t flags, const void *key,
                         size_t klen, uint64_t cas, int64_t ttl)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_NONE};
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if ((rc = mdci_check_key(m, klen)) != MDC_OK)
        return rc;
    wire_hdr_request(&h, WIRE_OP_DELETE);
    h.flags = flags;
    h.cas = cas;
    h.expiry = ttl;
    return one(m, &h, NULL, 0, key, klen, NULL, 0, &c);
}

int mdc_delete(mdc_t *m, const void *key, size_t klen, uint64_t cas)
{
    return delete_common(m, 0, key, klen, cas, 0);
}

int mdc_delete_stale(mdc_t *m, const void *key, size_t klen, uint64_t cas,
                     int64_t ttl)
{
    return delete_common(m, WIRE_F_STALE, key, klen, cas, ttl);
}

int mdc_touch(mdc_t *m, const void *key, size_t klen, int64_t exptime)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_NONE};
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if ((rc = mdci_check_key(m, klen)) != MDC_OK)
        return rc;
    wire_hdr_request(&h, WIRE_OP_TOUCH);
    h.expiry = exptime;
    return one(m, &h, NULL, 0, key, klen, NULL, 0, &c);
}

/* ---- counters ---------------------------------------------------------------
 */

static int counter(mdc_t *m, uint8_t op, const void *key, size_t klen,
                   uint64_t a, uint64_t b, int nargs, uint64_t *result)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_U64};
    uint8_t val[16];
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if ((rc = mdci_check_key(m, klen)) != MDC_OK)
        return rc;
    wire_put_u64(val, a);
    wire_put_u64(val + 8, b);
    wire_hdr_request(&h, op);
    rc = one(m, &h, NULL, 0, key, klen, val, (size_t)nargs * 8, &c);
    if (result != NULL &&
        (rc == MDC_OK || (op == WIRE_OP_ATOMIC_CMPSET && rc == MDC_EXISTS)))
        *result = c.u64;
    return rc;
}

int mdc_incr(mdc_t *m, const void *key, size_t klen, uint64_t delta,
             uint64_t *value)
{
    return counter(m, WIRE_OP_INCR, key, klen, delta, 0, 1, value);
}

int mdc_decr(mdc_t *m, const void *key, size_t klen, uint64_t delta,
             uint64_t *value)
{
    return counter(m, WIRE_OP_DECR, key, klen, delta, 0, 1, value);
}

int mdc_atomic_add(mdc_t *m, const void *key, size_t klen, uint64_t a,
                   uint64_t *result)
{
    return counter(m, WIRE_OP_ATOMIC_ADD, key, klen, a, 0, 1, result);
}

int mdc_atomic_fetch_add(mdc_t *m, const void *key, size_t klen, uint64_t a,
                         uint64_t *result)
{
    return counter(m, WIRE_OP_ATOMIC_FETCH_ADD, key, klen, a, 0, 1, result);
}

int mdc_atomic_cmpset(mdc_t *m, const void *key, size_t klen, uint64_t expect,
                      uint64_t desired, uint64_t *result)
{
    return counter(m, WIRE_OP_ATOMIC_CMPSET, key, klen, expect, desired, 2,
                   result);
}

int mdc_atomic_read_clear(mdc_t *m, const void *key, size_t klen,
                          uint64_t *result)
{
    return counter(m, WIRE_OP_ATOMIC_READ_CLEAR, key, klen, 0, 0, 0, result);
}

/* ---- tags -------------------------------------------------------------------
 */

static int on_gbt(struct mdc *m, const struct wire_msg *msg, void *vctx)
{
    struct mdci_gbt *c = vctx;
    const struct wire_hdr *h = &msg->hdr;

    if (h->opaque != c->opaque || h->opcode != WIRE_OP_GET_BY_TAG)
        return unexpected(m, msg);
    if (h->flags & WIRE_F_MORE) {
        if (h->status != WIRE_S_OK)
            return unexpected(m, msg);
        struct mdc_item *it = mdci_item_from_msg(msg, NULL, 0);
        if (it == NULL || mdci_itemset_push(c->out, it) != MDC_OK) {
            mdc_item_free(it);
            c->nomem = true;
        }
        return 0;
    }
    c->status = h->status;
    if (h->status != WIRE_S_OK)
        mdci_setstatus(m, h->status, msg);
    return 1;
}

static int tag_args(struct mdc *m, const int32_t *tvals, size_t ntvals)
{
    if (ntvals == 0 || tvals == NULL)
        return mdci_seterr(m, MDC_ERR_ARG, "at least one tag value needed");
    if (ntvals > UINT16_MAX)
        return mdci_seterr(m, MDC_ERR_ARG, "at most %u tag values", UINT16_MAX);
    return MDC_OK;
}

/* The wire form of tkey x tvals[]: composed straight into the buffer. */
static int add_tag_req(struct mdc *m, struct wire_hdr *h, int32_t tkey,
                       const int32_t *tvals, size_t ntvals)
{
    struct mdc_tag stack[32] = {{0}};
    struct mdc_tag *tags = stack;
    int rc;
    if (ntvals > 32) {
        tags = malloc(ntvals * sizeof(*tags));
        if (tags == NULL)
            return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < ntvals; i++) {
        tags[i].tkey = tkey;
        tags[i].tval = tvals[i];
    }
    rc = mdci_add(m, h, tags, ntvals, NULL, 0, NULL, 0);
    if (tags != stack)
        free(tags);
    return rc;
}

static int gbt_begin(struct mdc *m, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, struct mdci_gbt *c)
{
    struct wire_hdr h;
    int rc;
    if ((rc = tag_args(m, tvals, ntvals)) != MDC_OK)
        return rc;
    if ((rc = mdci_begin(m, on_gbt, c)) != MDC_OK)
        return rc;
    wire_hdr_request(&h, WIRE_OP_GET_BY_TAG);
    c->opaque = h.opaque = mdci_opaque(m);
    c->status = -1;
    rc = add_tag_req(m, &h, tkey, tvals, ntvals);
    if (rc != MDC_OK)
        m->busy = false;
    return rc;
}

static int gbt_finish(struct mdc *m, struct mdci_gbt *c)
{
    if (m->xrc != MDC_OK)
        return m->xrc;
    if (c->nomem)
        return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory");
    if (c->status == WIRE_S_OK)
        return mdci_setstatus(m, MDC_OK, NULL);
    return c->status;
}

int mdc_get_by_tag(mdc_t *m, int32_t tkey, const int32_t *tvals, size_t ntvals,
                   struct mdc_itemset *out)
{
    struct mdci_req r = {.kind = MDCI_REQ_GBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .out = out};
    union mdci_req_ctx c;

    if (m == NULL)
        return MDC_ERR_ARG;
    if (out == NULL)
        return mdci_seterr(m, MDC_ERR_ARG, "NULL result set");
    return mdci_req_run(m, &r, &c);
}

/* stale: the STALE flag (mark instead of delete), ttl in the expiry */
static int dbt_begin(struct mdc *m, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, bool stale, int64_t ttl,
                     struct mdci_one *c)
{
    struct wire_hdr h;
    int rc;
    if ((rc = tag_args(m, tvals, ntvals)) != MDC_OK)
        return rc;
    if ((rc = mdci_begin(m, on_one, c)) != MDC_OK)
        return rc;
    wire_hdr_request(&h, WIRE_OP_DEL_BY_TAG);
    if (stale) {
        h.flags = WIRE_F_STALE;
        h.expiry = ttl;
    }
    c->want = MDCI_WANT_U64;
    c->opcode = h.opcode;
    c->opaque = h.opaque = mdci_opaque(m);
    c->status = -1;
    rc = add_tag_req(m, &h, tkey, tvals, ntvals);
    if (rc != MDC_OK)
        m->busy = false;
    return rc;
}

/* del_by_tag, or with stale the mark-stale; the count into *count */
static int dbt(mdc_t *m, int32_t tkey, const int32_t *tvals, size_t ntvals,
               bool stale, int64_t ttl, uint64_t *count)
{
    struct mdci_req r = {.kind = MDCI_REQ_DBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .stale = stale, .ttl = ttl};
    union mdci_req_ctx c;
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    rc = mdci_req_run(m, &r, &c);
    if (rc == MDC_OK && count != NULL)
        *count = c.one.u64;
    return rc;
}

int mdc_del_by_tag(mdc_t *m, int32_t tkey, const int32_t *tvals, size_t ntvals,
                   uint64_t *deleted)
{
    return dbt(m, tkey, tvals, ntvals, false, 0, deleted);
}

int mdc_del_by_tag_stale(mdc_t *m, int32_t tkey, const int32_t *tvals,
                         size_t ntvals, int64_t ttl, uint64_t *marked)
{
    if (marked != NULL)
        *marked = 0;
    return dbt(m, tkey, tvals, ntvals, true, ttl, marked);
}

int mdc_tstack_push(mdc_t *m, struct mdc_tag tag, const void *value,
                    size_t vlen, uint32_t flags, int64_t exptime,
                    char **key_out, size_t *klen_out, uint64_t *cas_out)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_KEY};
    int rc;

    if (key_out != NULL)
        *key_out = NULL;
    if (m == NULL)
        return MDC_ERR_ARG;
    if (vlen > 0 && value == NULL)
        return mdci_seterr(m, MDC_ERR_ARG, "NULL value");
    wire_hdr_request(&h, WIRE_OP_TSTACK_PUSH);
    h.iflags = flags;
    h.expiry = exptime;
    rc = one(m, &h, &tag, 1, NULL, 0, value, vlen, &c);
    if (rc == MDC_OK) {
        if (klen_out != NULL)
            *klen_out = c.textlen;
        if (cas_out != NULL)
            *cas_out = c.cas;
        if (key_out != NULL) {
            *key_out = c.text;
            c.text = NULL;
        }
    }
    free(c.text);
    return rc;
}

int mdc_tstack_pop(mdc_t *m, struct mdc_tag tag, struct mdc_item **out)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_ITEM};
    int rc;

    if (out != NULL)
        *out = NULL;
    if (m == NULL)
        return MDC_ERR_ARG;
    wire_hdr_request(&h, WIRE_OP_TSTACK_POP);
    rc = one(m, &h, &tag, 1, NULL, 0, NULL, 0, &c);
    if (rc == MDC_OK && out != NULL)
        *out = c.item;
    else
        mdc_item_free(c.item);
    return rc;
}

/* ---- requests for one handle or a pool --------------------------------------
 */

int mdci_req_begin(struct mdc *m, const struct mdci_req *r,
                   union mdci_req_ctx *c)
{
    struct wire_hdr h;

    memset(c, 0, sizeof(*c));
    switch (r->kind) {
    case MDCI_REQ_GBT:
        c->gbt.out = r->out;
        return gbt_begin(m, r->tkey, r->tvals, r->ntvals, &c->gbt);
    case MDCI_REQ_DBT:
        return dbt_begin(m, r->tkey, r->tvals, r->ntvals, r->stale, r->ttl,
                         &c->one);
    default:
        c->one.want = MDCI_WANT_NONE;
        wire_hdr_request(&h, r->op);
        return mdci_one_begin(m, &h, NULL, 0, NULL, 0, NULL, 0, &c->one);
    }
}

int mdci_req_finish(struct mdc *m, const struct mdci_req *r,
                    union mdci_req_ctx *c)
{
    if (r->kind == MDCI_REQ_GBT)
        return gbt_finish(m, &c->gbt);
    return mdci_one_finish(m, &c->one);
}

int mdci_req_run(struct mdc *m, const struct mdci_req *r,
                 union mdci_req_ctx *c)
{
    int rc = mdci_req_begin(m, r, c);
    if (rc != MDC_OK)
        return rc;
    mdci_exchange(m);
    return mdci_req_finish(m, r, c);
}

/* ---- server -----------------------------------------------------------------
 */

static int simple(mdc_t *m, uint8_t op)
{
    struct mdci_req r = {.kind = MDCI_REQ_SIMPLE, .op = op};
    union mdci_req_ctx c;
    if (m == NULL)
        return MDC_ERR_ARG;
    return mdci_req_run(m, &r, &c);
}

int mdc_flush(mdc_t *m)
{
    return simple(m, WIRE_OP_FLUSH);
}

int mdc_noop(mdc_t *m)
{
    return simple(m, WIRE_OP_NOOP);
}

int mdc_quit(mdc_t *m)
{
    int rc = simple(m, WIRE_OP_QUIT);
    if (m != NULL)
        mdc_close(m);
    return rc;
}

int mdc_stats(mdc_t *m, const char *group, char **out, size_t *len)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_TEXT};
    size_t glen = group ? strlen(group) : 0;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (m == NULL)
        return MDC_ERR_ARG;
    if (out == NULL)
        return mdci_seterr(m, MDC_ERR_ARG, "NULL output");
    if (glen > WIRE_MAX_KEY)
        return mdci_seterr(m, MDC_ERR_ARG, "group name too long");
    wire_hdr_request(&h, WIRE_OP_STATS);
    rc = one(m, &h, NULL, 0, group, glen, NULL, 0, &c);
    if (rc == MDC_OK) {
        *out = c.text;
        if (len != NULL)
            *len = c.textlen;
    } else {
        free(c.text);
    }
    return rc;
}

int mdc_stats_u64(const char *text, const char *name, uint64_t *value)
{
    size_t nlen;
    if (text == NULL || name == NULL || value == NULL)
        return MDC_ERR_ARG;
    nlen = strlen(name);
    for (const char *line = text; *line != '\0';) {
        const char *eol = strchr(line, '\n');
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        /* "name value" (memcached's "STAT name value" also accepted) */
        const char *p = line;
        if (llen > 5 && strncmp(p, "STAT ", 5) == 0)
            p += 5;
        if ((size_t)(line + llen - p) > nlen && strncmp(p, name, nlen) == 0 &&
            p[nlen] == ' ') {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p + nlen + 1, &end, 10);
            if (errno != 0 || end == p + nlen + 1 ||
                (*end != '\n' && *end != '\r' && *end != '\0'))
                return MDC_ERR_ARG;
            *value = v;
            return MDC_OK;
        }
        if (eol == NULL)
            break;
        line = eol + 1;
    }
    return MDC_NOT_FOUND;
}

int mdc_version(mdc_t *m, char *buf, size_t cap)
{
    struct wire_hdr h;
    struct mdci_one c = {.want = MDCI_WANT_TEXT};
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if (buf == NULL || cap == 0)
        return mdci_seterr(m, MDC_ERR_ARG, "no buffer");
    wire_hdr_request(&h, WIRE_OP_VERSION);
    rc = one(m, &h, NULL, 0, NULL, 0, NULL, 0, &c);
    if (rc == MDC_OK) {
        size_t n = c.textlen < cap - 1 ? c.textlen : cap - 1;
        memcpy(buf, c.text, n);
        buf[n] = '\0';
    }
    free(c.text);
    return rc;
}
