/*
 * proto_native.c - the native binary protocol's request handler
 * (docs/protocol.md): frames are parsed with wire.h, run against the store
 * (store.h) and answered into the connection's output (conn.h), in request
 * order.  Record replies carry the value as a reference to the record, so a
 * GET hit allocates nothing and copies only a value of at most CONN_COPY_MAX
 * (conn.h).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server/log.h"
#include "server/report.h"
#include "server/metrics.h"
#include "proto.h"
#include "server/core/store.h"
#include "protocol/wire.h"

/* Header plus an optional small body copied into the output buffer. */
static void nat_reply(struct conn *c, const struct wire_hdr *req,
                      uint16_t status, uint64_t cas, const void *key,
                      uint16_t klen, const void *val, uint32_t vlen)
{
    struct wire_hdr h;
    uint8_t *p;

    wire_hdr_response(&h, req, status);
    h.cas = cas;
    h.klen = klen;
    h.vlen = vlen;
    p = conn_out_reserve(c, WIRE_HDR_LEN + klen + vlen);
    if (p == NULL)
        return;
    wire_encode_header(p, &h);
    if (klen > 0)
        memcpy(p + WIRE_HDR_LEN, key, klen);
    if (vlen > 0)
        memcpy(p + WIRE_HDR_LEN + klen, val, vlen);
    conn_out_commit(c, WIRE_HDR_LEN + klen + vlen);
}

/* A status reply; OK is suppressed for quiet requests. */
static void nat_status(struct conn *c, const struct wire_hdr *req,
                       uint16_t status, uint64_t cas)
{
    if (status == WIRE_S_OK && (req->flags & WIRE_F_QUIET))
        return;
    nat_reply(c, req, status, cas, NULL, 0, NULL, 0);
}

/* An error reply for a protocol error, with the reason as its value. */
static void nat_error(struct conn *c, struct worker *w,
                      const struct wire_hdr *req, int rc)
{
    const char *why = wire_strerror(rc);

    STAT_INC(&w->stats, protocol_errors);
    nat_reply(c, req, wire_err_status(rc), 0, NULL, 0, why,
              (uint32_t)strlen(why));
}

static void nat_u64_reply(struct conn *c, const struct wire_hdr *req,
                          uint16_t status, uint64_t v, uint64_t cas)
{
    uint8_t b[8];

    if (status == WIRE_S_OK && (req->flags & WIRE_F_QUIET))
        return;
    wire_put_u64(b, v);
    nat_reply(c, req, status, cas, NULL, 0, b, sizeof(b));
}

/* The largest body of a too-large store that is read and discarded, the
 * connection kept (64 times the message bound: a client's honest mistake,
 * not a claim of gigabytes, which closes the connection). */
#define NAT_SWALLOW_MAX(srv) ((uint64_t)(srv)->max_body * 64)

/* Bytes of a record reply before its value: header, tags, key. */
static size_t nat_record_head_len(const struct record *r, bool with_key)
{
    return WIRE_HDR_LEN + (size_t)record_ntags(r) * WIRE_TAG_LEN +
           (with_key ? record_klen(r) : 0);
}

/*
 * The one encoder of a record reply's head (every record a GET, GETK or
 * GET_BY_TAG answers): the header, the record's tags and (optionally) its
 * key, into p[nat_record_head_len()].  The value follows it on the wire.
 */
static void nat_record_head(uint8_t *p, const struct wire_hdr *req,
                            struct store *st, const struct record *r,
                            bool with_key, uint8_t rflags)
{
    uint32_t ntags = record_ntags(r);
    uint32_t klen = with_key ? record_klen(r) : 0;
    struct wire_hdr h;
    uint32_t i;

    wire_hdr_response(&h, req, WIRE_S_OK);
    h.flags |= rflags;
    h.klen = (uint16_t)klen;
    h.ntags = (uint16_t)ntags;
    h.vlen = record_vlen(r);
    h.iflags = record_flags(r);
    h.cas = record_cas(r);
    h.expiry = record_ttl(st, r);
    wire_encode_header(p, &h);
    p += WIRE_HDR_LEN;
    for (i = 0; i < ntags; i++, p += WIRE_TAG_LEN) {
        struct mdc_tag t = record_tag(r, i);
        wire_encode_tag(p, t.tkey, t.tval);
    }
    if (klen > 0)
        memcpy(p, record_key(r), klen);
}

/*
 * A record reply: its head copied into obuf, the value queued in place.
 * rflags: response flags beyond RESPONSE (MORE, a lease get's W/X/Z).
 * Takes over the reference r.
 */
static void nat_record(struct conn *c, const struct wire_hdr *req,
                       struct record *r, bool with_key, uint8_t rflags)
{
    struct store *st = c->srv->store;
    size_t n = nat_record_head_len(r, with_key);
    uint8_t *p = conn_out_reserve(c, n);

    if (p == NULL) {
        store_release(st, r);
        return;
    }
    nat_record_head(p, req, st, r, with_key, rflags);
    conn_out_commit(c, n);
    conn_out_ref(c, record_value(r), record_vlen(r), r);
}

/* Decode the request's tags into the worker's scratch. */
static struct mdc_tag *nat_tags(struct worker *w, const struct wire_msg *m)
{
    struct mdc_tag *t;
    uint32_t i;

    if (m->hdr.ntags == 0)
        return NULL;
    t = worker_tags(w, m->hdr.ntags);
    if (t == NULL)
        return NULL;
    for (i = 0; i < m->hdr.ntags; i++) {
        struct wire_tag wt = wire_msg_tag(m, i);
        t[i].tkey = wt.tkey;
        t[i].tval = wt.tval;
    }
    return t;
}

static bool nat_is_store_op(uint8_t op)
{
    switch (op) {
    case WIRE_OP_SET:
    case WIRE_OP_ADD:
    case WIRE_OP_REPLACE:
    case WIRE_OP_CAS:
    case WIRE_OP_APPEND:
    case WIRE_OP_PREPEND:
    case WIRE_OP_TSTACK_PUSH:
        return true;
    default:
        return false;
    }
}

/*
 * A LEASE get (docs/protocol.md, "Lease gets"): store_mget() with the
 * request's vivify and recache TTLs, the win state in the reply's flags.
 * R tests the TTL left before a GAT's touch.
 */
static void nat_lease_get(struct conn *c, struct worker *w,
                          const struct wire_msg *m, bool gat, bool with_key)
{
    const struct wire_hdr *h = &m->hdr;
    struct store_mget q;
    struct store_mget_res res;
    struct record *r;
    uint8_t rflags = 0;

    memset(&q, 0, sizeof(q));
    q.touch = gat;
    q.exptime = h->expiry;
    if (h->vlen == WIRE_LEASE_VLEN) {
        int64_t viv = (int64_t)wire_get_u64(m->value);
        int64_t rec = (int64_t)wire_get_u64(m->value + 8);
        q.vivify = viv != 0;
        q.vivify_exptime = viv;
        q.recache = rec != 0;
        q.recache_exptime = rec;
    }
    r = store_mget(c->srv->store, m->key, h->klen, &q, &res);
    stats_count_get(&w->stats, gat, r != NULL && !res.created);
    if (r == NULL) {
        if (!(h->flags & WIRE_F_QUIET))
            nat_reply(c, h, WIRE_S_NOT_FOUND, 0, NULL, 0, NULL, 0);
        return;
    }
    if (res.won)
        rflags |= WIRE_F_WIN;
    if (res.stale)
        rflags |= WIRE_F_STALE;
    if (res.pending)
        rflags |= WIRE_F_PENDING;
    nat_record(c, h, r, with_key, rflags);
}

static void nat_get(struct conn *c, struct worker *w, const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    bool gat = h->opcode == WIRE_OP_GAT || h->opcode == WIRE_OP_GATK;
    bool with_key = h->opcode == WIRE_OP_GETK || h->opcode == WIRE_OP_GATK;
    struct record *r;

    if (h->flags & WIRE_F_LEASE) {
        nat_lease_get(c, w, m, gat, with_key);
        return;
    }
    /* the lookup every GET shares (proto.h); the reply is this format's */
    proto_get_keys(c, w, &(struct store_key){m->key, h->klen}, 1, gat,
                   h->expiry, &r);
    if (r != NULL) {
        nat_record(c, h, r, with_key, 0);
        return;
    }
    if (!(h->flags & WIRE_F_QUIET))
        nat_reply(c, h, WIRE_S_NOT_FOUND, 0, NULL, 0, NULL, 0);
}

/* The store mode of a storage opcode (SET with a CAS value is a cas). */
static enum store_mode nat_store_mode(uint8_t op, uint64_t cas)
{
    switch (op) {
    case WIRE_OP_ADD: return STORE_ADD;
    case WIRE_OP_REPLACE: return STORE_REPLACE;
    case WIRE_OP_CAS: return STORE_CAS;
    case WIRE_OP_APPEND: return STORE_APPEND;
    case WIRE_OP_PREPEND: return STORE_PREPEND;
    case WIRE_OP_TSTACK_PUSH: return STORE_ADD; /* a new key */
    default: return cas != 0 ? STORE_CAS : STORE_SET;
    }
}

static void nat_store(struct conn *c, struct worker *w,
                      const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct store_item it;
    enum store_mode mode = STORE_SET;
    uint64_t cas = 0;
    int st;

    STAT_INC(&w->stats, cmd_set);
    memset(&it, 0, sizeof(it));
    it.key = m->key;
    it.klen = h->klen;
    it.value = m->value;
    it.vlen = h->vlen;
    it.flags = h->iflags;
    it.exptime = h->expiry;
    it.cas = h->cas;
    it.ntags = h->ntags;
    it.invalidate = (h->flags & WIRE_F_STALE) != 0; /* a CAS (wire.c) */
    it.tags = nat_tags(w, m);
    if (h->ntags > 0 && it.tags == NULL) {
        nat_status(c, h, WIRE_S_INTERNAL, 0);
        return;
    }
    mode = nat_store_mode(h->opcode, h->cas);
    st = store_put(c->srv->store, mode, &it, &cas);
    if (watch_wants(c->srv, WATCH_MUTATIONS))
        proto_watch_store(c, m->key, h->klen, proto_store_mode_name(mode), st,
                          h->expiry, h->vlen);
    stats_count_put(&w->stats, mode == STORE_CAS, st);
    nat_status(c, h, wire_status_from_store(st), st == ST_OK ? cas : 0);
}

static void nat_counter(struct conn *c, struct worker *w,
                        const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct store *store = c->srv->store;
    uint64_t a = 0, b = 0, res = 0, cas = 0;
    int st;

    if (h->vlen >= 8)
        a = wire_get_u64(m->value);
    if (h->vlen >= 16)
        b = wire_get_u64(m->value + 8);
    switch (h->opcode) {
    case WIRE_OP_INCR:
    case WIRE_OP_DECR: {
        bool decr = h->opcode == WIRE_OP_DECR;
        st = store_incr(store, m->key, h->klen, a, decr, &res, &cas);
        stats_count_incr(&w->stats, decr, st);
        break;
    }
    default: {
        enum store_atomic_op op = ATOMIC_ADD;

        STAT_INC(&w->stats, cmd_atomic);
        if (h->opcode == WIRE_OP_ATOMIC_FETCH_ADD)
            op = ATOMIC_FETCH_ADD;
        else if (h->opcode == WIRE_OP_ATOMIC_CMPSET)
            op = ATOMIC_CMPSET;
        else if (h->opcode == WIRE_OP_ATOMIC_READ_CLEAR)
            op = ATOMIC_READ_CLEAR;
        st = store_atomic(store, op, m->key, h->klen, a, b, &res, &cas);
        break;
    }
    }
    if (st == ST_OK || (st == ST_EXISTS && h->opcode == WIRE_OP_ATOMIC_CMPSET))
        nat_u64_reply(c, h, wire_status_from_store(st), res, cas);
    else
        nat_status(c, h, wire_status_from_store(st), 0);
}

static void nat_get_by_tag(struct conn *c, struct worker *w,
                           const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct store *store = c->srv->store;
    struct store_recset set = {NULL, 0, 0, 0};
    struct mdc_tag *t = nat_tags(w, m);
    int32_t *tvals = (int32_t *)t;
    int32_t tkey;
    size_t i;
    int st;

    STAT_INC(&w->stats, cmd_get_by_tag);
    if (t == NULL) {
        nat_reply(c, h, WIRE_S_INTERNAL, 0, NULL, 0, NULL, 0);
        return;
    }
    /* Compact the tvals in place: element i never overtakes tag i. */
    tkey = t[0].tkey;
    for (i = 0; i < h->ntags; i++)
        tvals[i] = t[i].tval;
    st = store_get_by_tag(store, tkey, tvals, h->ntags, &set);
    if (st == ST_OK || st == ST_TRUNCATED) {
        /*
         * Records with small values (the common tagged record) are written
         * whole into the output buffer under one reservation - the bytes
         * nat_record() sends, the value copied - and their references
         * dropped at once: the reply is one contiguous segment, one iovec
         * for sendmsg(), instead of a header segment and a value reference
         * per record (which also cut a large reply into several sendmsg()
         * calls of CONN_IOV_MAX segments).  Large values, and whatever
         * passes the copy budget, still go by reference, after them (the
         * order of a tag's records is not promised).
         */
        enum { GBT_COPY_VLEN = 1024, GBT_COPY_BUDGET = 1 << 20 };
        size_t ncopy = 0, bytes = 0;
        uint8_t *p = NULL;

        STAT_ADD(&w->stats, get_by_tag_records, set.n);
        if (st == ST_TRUNCATED)
            STAT_INC(&w->stats, get_by_tag_truncated);
        for (i = 0; i < set.n; i++) {
            struct record *r = set.recs[i];
            uint32_t vlen = record_vlen(r);
            size_t n = nat_record_head_len(r, true) + vlen;

            if (vlen > GBT_COPY_VLEN || bytes + n > GBT_COPY_BUDGET)
                continue;
            set.recs[i] = set.recs[ncopy];
            set.recs[ncopy++] = r;
            bytes += n;
        }
        if (ncopy > 0)
            p = conn_out_reserve(c, bytes);
        if (p == NULL)
            ncopy = 0; /* nat_record() below fails and releases alike */
        if (ncopy > 0) {
            for (i = 0; i < ncopy; i++) {
                struct record *r = set.recs[i];
                uint32_t vlen = record_vlen(r);

                nat_record_head(p, h, store, r, true, WIRE_F_MORE);
                p += nat_record_head_len(r, true);
                if (vlen > 0)
                    memcpy(p, record_value(r), vlen);
                p += vlen;
                store_release(store, r);
            }
            conn_out_commit(c, bytes);
        }
        for (i = ncopy; i < set.n; i++)
            nat_record(c, h, set.recs[i], true, WIRE_F_MORE);
        set.n = 0; /* the references are dropped or queued with the output */
    }
    store_recset_release(store, &set);
    /* Terminator: OK, TRUNCATED, or the error alone. */
    nat_reply(c, h, wire_status_from_store(st == ST_NOT_FOUND ? ST_OK : st), 0,
              NULL, 0, NULL, 0);
}

static void nat_del_by_tag(struct conn *c, struct worker *w,
                           const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct mdc_tag *t = nat_tags(w, m);
    int32_t *tvals = (int32_t *)t;
    int32_t tkey;
    uint64_t n = 0;
    size_t i;
    int st;

    STAT_INC(&w->stats, cmd_del_by_tag);
    if (t == NULL) {
        nat_status(c, h, WIRE_S_INTERNAL, 0);
        return;
    }
    tkey = t[0].tkey;
    for (i = 0; i < h->ntags; i++)
        tvals[i] = t[i].tval;
    if (h->flags & WIRE_F_STALE) /* expiry 0: each keeps its own */
        st = store_stale_by_tag(c->srv->store, tkey, tvals, h->ntags,
                                h->expiry != 0, h->expiry, &n);
    else
        st = store_del_by_tag(c->srv->store, tkey, tvals, h->ntags, &n);
    if (st == ST_NOT_FOUND)
        st = ST_OK; /* nothing carried the tag: zero deleted */
    STAT_ADD(&w->stats, del_by_tag_records, n);
    if (st == ST_OK)
        nat_u64_reply(c, h, WIRE_S_OK, n, 0);
    else
        nat_status(c, h, wire_status_from_store(st), 0);
}

static void nat_tstack(struct conn *c, struct worker *w,
                       const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct store *store = c->srv->store;
    struct wire_tag wt = wire_msg_tag(m, 0);
    struct mdc_tag tag = {wt.tkey, wt.tval};
    char key[STORE_TSTACK_KEYMAX];
    uint32_t klen = 0;
    uint64_t cas = 0;
    struct record *r = NULL;
    int st;

    if (h->opcode == WIRE_OP_TSTACK_PUSH) {
        STAT_INC(&w->stats, cmd_tstack_push);
        st = store_tstack_push(store, tag, m->value, h->vlen, h->iflags,
                               h->expiry, key, &klen, &cas);
        if (st == ST_OK) {
            if (!(h->flags & WIRE_F_QUIET))
                nat_reply(c, h, WIRE_S_OK, cas, key, (uint16_t)klen, NULL,
                          0);
        } else {
            stats_count_put(&w->stats, 0, st);
            nat_status(c, h, wire_status_from_store(st), 0);
        }
        return;
    }
    STAT_INC(&w->stats, cmd_tstack_pop);
    st = store_tstack_pop(store, tag, &r);
    if (st == ST_OK && r != NULL) {
        nat_record(c, h, r, true, 0);
        return;
    }
    if (st == ST_NOT_FOUND && (h->flags & WIRE_F_QUIET))
        return;
    nat_status(c, h, wire_status_from_store(st == ST_OK ? ST_NOT_FOUND : st),
               0);
}

static void nat_stats_line(void *ctx, const char *name, const char *value)
{
    struct conn *c = ctx;
    size_t ln = strlen(name), lv = strlen(value);
    uint8_t *p = conn_out_reserve(c, ln + lv + 2);

    if (p == NULL)
        return;
    memcpy(p, name, ln);
    p[ln] = ' ';
    memcpy(p + ln + 1, value, lv);
    p[ln + 1 + lv] = '\n';
    conn_out_commit(c, ln + lv + 2);
}

/* The reply's value is written after its header, then the header patched. */
static void nat_stats(struct conn *c, struct worker *w,
                      const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    struct wire_hdr rh;
    size_t hoff = c->olen;

    STAT_INC(&w->stats, cmd_stats);
    if (h->klen != 0 && stats_collect_group(c->srv, (const char *)m->key,
                                            h->klen, NULL, NULL) < 0) {
        nat_reply(c, h, WIRE_S_NOT_FOUND, 0, NULL, 0, NULL, 0);
        return;
    }
    if (conn_out_reserve(c, WIRE_HDR_LEN) == NULL)
        return;
    conn_out_commit(c, WIRE_HDR_LEN);
    if (h->klen == 0)
        stats_collect_conn(c->srv, nat_stats_line, c, conn_bufs_held(c));
    else
        (void)stats_collect_group(c->srv, (const char *)m->key, h->klen,
                                  nat_stats_line, c);
    if (c->closing)
        return; /* out of memory: the connection goes */
    wire_hdr_response(&rh, h, WIRE_S_OK);
    rh.vlen = (uint32_t)(c->olen - hoff - WIRE_HDR_LEN);
    wire_encode_header(c->obuf + hoff, &rh);
}

/* The --metrics histogram a request is timed in. */
static enum metrics_cmd nat_metrics_cmd(uint8_t op)
{
    switch (op) {
    case WIRE_OP_GET: case WIRE_OP_GETK: case WIRE_OP_GAT: case WIRE_OP_GATK:
        return MC_GET;
    case WIRE_OP_SET: case WIRE_OP_ADD: case WIRE_OP_REPLACE: case WIRE_OP_CAS:
    case WIRE_OP_APPEND: case WIRE_OP_PREPEND:
        return MC_SET;
    case WIRE_OP_DELETE: return MC_DELETE;
    case WIRE_OP_INCR: case WIRE_OP_DECR: case WIRE_OP_ATOMIC_ADD:
    case WIRE_OP_ATOMIC_FETCH_ADD: case WIRE_OP_ATOMIC_CMPSET:
    case WIRE_OP_ATOMIC_READ_CLEAR:
        return MC_INCR;
    case WIRE_OP_TOUCH: return MC_TOUCH;
    case WIRE_OP_GET_BY_TAG: return MC_GET_BY_TAG;
    case WIRE_OP_DEL_BY_TAG: return MC_DEL_BY_TAG;
    case WIRE_OP_TSTACK_PUSH: case WIRE_OP_TSTACK_POP: return MC_TSTACK;
    case WIRE_OP_FLUSH: return MC_FLUSH;
    case WIRE_OP_STATS: return MC_STATS;
    default: return MC_OTHER;
    }
}

/* AUTH: key the user, value the password (docs/protocol.md).  Without
 * --auth-file it is not supported.  A failure leaves the connection
 * unauthenticated, even one that had authenticated before. */
static void nat_auth(struct conn *c, struct worker *w,
                     const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;

    if (c->srv->auth == NULL) {
        static const char why[] = "authentication is not configured";
        nat_reply(c, h, WIRE_S_NOT_SUPPORTED, 0, NULL, 0, why,
                  (uint32_t)sizeof(why) - 1);
        return;
    }
    if (proto_auth(c, w, m->key, h->klen, m->value, h->vlen)) {
        nat_status(c, h, WIRE_S_OK, 0);
        return;
    }
    c->authed = false;
    nat_reply(c, h, WIRE_S_AUTH_FAILED, 0, NULL, 0, NULL, 0);
}

/* Before authentication: AUTH, QUIT, or AUTH_REQUIRED. */
static void nat_unauthed(struct conn *c, struct worker *w,
                         const struct wire_msg *m)
{
    switch (m->hdr.opcode) {
    case WIRE_OP_AUTH:
        nat_auth(c, w, m);
        break;
    case WIRE_OP_QUIT:
        nat_status(c, &m->hdr, WIRE_S_OK, 0);
        conn_close_after_flush(c);
        break;
    default:
        nat_reply(c, &m->hdr, WIRE_S_AUTH_REQUIRED, 0, NULL, 0, NULL, 0);
        break;
    }
}

/* Run one whole, checked request. */
/* The answer to DUMP, written by the dump thread (c is parked; its
 * request header waits in park_req). */
static void nat_dump_done(struct conn *c, int rc, const char *msg)
{
    struct wire_hdr h;

    memcpy(&h, c->park_req, sizeof(h));
    if (rc < 0)
        nat_reply(c, &h, WIRE_S_INTERNAL, 0, NULL, 0, msg,
                  (uint32_t)strlen(msg));
    else
        nat_status(c, &h, WIRE_S_OK, 0);
}

static void nat_exec(struct conn *c, struct worker *w, const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;

    switch (h->opcode) {
    case WIRE_OP_GET:
    case WIRE_OP_GETK:
    case WIRE_OP_GAT:
    case WIRE_OP_GATK:
        nat_get(c, w, m);
        break;
    case WIRE_OP_TOUCH: {
        int st = store_touch(c->srv->store, m->key, h->klen, h->expiry);
        stats_count_touch(&w->stats, st);
        nat_status(c, h, wire_status_from_store(st), 0);
        break;
    }
    case WIRE_OP_SET:
    case WIRE_OP_ADD:
    case WIRE_OP_REPLACE:
    case WIRE_OP_CAS:
    case WIRE_OP_APPEND:
    case WIRE_OP_PREPEND:
        nat_store(c, w, m);
        break;
    case WIRE_OP_DELETE: {
        int st = (h->flags & WIRE_F_STALE) /* memcached's md I [T] */
                     ? store_invalidate(c->srv->store, m->key, h->klen,
                                        h->cas, h->expiry != 0, h->expiry)
                     : store_delete(c->srv->store, m->key, h->klen, h->cas);
        if (st == ST_OK)
            STAT_INC(&w->stats, delete_hits);
        else if (st == ST_NOT_FOUND)
            STAT_INC(&w->stats, delete_misses);
        nat_status(c, h, wire_status_from_store(st), 0);
        break;
    }
    case WIRE_OP_INCR:
    case WIRE_OP_DECR:
    case WIRE_OP_ATOMIC_ADD:
    case WIRE_OP_ATOMIC_FETCH_ADD:
    case WIRE_OP_ATOMIC_CMPSET:
    case WIRE_OP_ATOMIC_READ_CLEAR:
        nat_counter(c, w, m);
        break;
    case WIRE_OP_GET_BY_TAG:
        nat_get_by_tag(c, w, m);
        break;
    case WIRE_OP_DEL_BY_TAG:
        nat_del_by_tag(c, w, m);
        break;
    case WIRE_OP_TSTACK_PUSH:
    case WIRE_OP_TSTACK_POP:
        nat_tstack(c, w, m);
        break;
    case WIRE_OP_FLUSH:
        if (c->srv->opt.disable_flush_all) { /* -F, as the text flush_all */
            static const char msg[] = "flush disabled (-F)";
            nat_reply(c, h, WIRE_S_NOT_SUPPORTED, 0, NULL, 0, msg,
                      (uint32_t)strlen(msg));
            break;
        }
        STAT_INC(&w->stats, cmd_flush);
        store_flush(c->srv->store);
        nat_status(c, h, WIRE_S_OK, 0);
        break;
    case WIRE_OP_STATS:
        nat_stats(c, w, m);
        break;
    case WIRE_OP_VERSION:
        nat_reply(c, h, WIRE_S_OK, 0, NULL, 0, PACKAGE_VERSION,
                  (uint32_t)strlen(PACKAGE_VERSION));
        break;
    case WIRE_OP_NOOP:
        nat_reply(c, h, WIRE_S_OK, 0, NULL, 0, NULL, 0);
        break;
    case WIRE_OP_DUMP:
        /* answers once the dump file is safe on disk; the connection
         * waits parked (conn_park), this thread goes on with the others */
        if (c->srv->dump_park == NULL) {
            static const char msg[] = "no dump file (-f)";
            nat_reply(c, h, WIRE_S_NOT_SUPPORTED, 0, NULL, 0, msg,
                      (uint32_t)strlen(msg));
        } else {
            _Static_assert(sizeof(struct wire_hdr) <= sizeof(c->park_req),
                           "the DUMP request header fits in park_req");
            memcpy(c->park_req, h, sizeof(*h));
            conn_park(c, c->srv->dump_park, nat_dump_done);
        }
        break;
    case WIRE_OP_QUIT:
        nat_status(c, h, WIRE_S_OK, 0);
        conn_close_after_flush(c);
        break;
    case WIRE_OP_AUTH:
        nat_auth(c, w, m);
        break;
    default:
        nat_error(c, w, h, WIRE_EOPCODE);
        break;
    }
}

/* The out-of-sync errors: answer once, then the connection closes. */
static void nat_lost_sync(struct conn *c, struct worker *w,
                          const struct wire_hdr *h, int rc)
{
    struct wire_hdr zero;
    size_t avail;

    if (rc == WIRE_EMAGIC || rc == WIRE_EVERSION) {
        memset(&zero, 0, sizeof(zero));
        h = &zero; /* opcode and opaque 0 */
    }
    log_debug("conn %llu: %s, closing", (unsigned long long)c->id,
              wire_strerror(rc));
    nat_error(c, w, h, rc);
    (void)conn_in_data(c, &avail);
    conn_in_consume(c, avail);
    conn_close_after_flush(c);
}

static void nat_process(struct conn *c, struct worker *w)
{
    struct server *srv = c->srv;
    uint64_t budget = srv->opt.reqs_per_event;

    conn_in_need(c, 1); /* every "wait for bytes" exit below sets it */
    while (!c->closing && !conn_out_full(c) && c->park == NULL) {
        size_t avail, total;
        const uint8_t *buf = conn_in_data(c, &avail);
        struct wire_msg m;
        ssize_t n;
        int rc;

        if (avail == 0) {
            conn_in_need(c, WIRE_HDR_LEN);
            break;
        }
        if (budget-- == 0) {
            conn_yield(c); /* -R requests run: the others' turn */
            break;
        }
        rc = wire_parse_header(buf, avail, &m.hdr, srv->max_body);
        if (rc == WIRE_AGAIN) {
            conn_in_need(c, WIRE_HDR_LEN);
            break;
        }
        /* A store whose value is over the item size, even one over the
         * body bound: answer now and discard the body as it streams in,
         * instead of buffering it or dropping a well-formed request's
         * connection (the body never needs memory). */
        bool too_large = (rc == WIRE_OK || rc == WIRE_ETOOBIG) &&
                         nat_is_store_op(m.hdr.opcode) &&
                         !(m.hdr.flags & ~WIRE_F_QUIET) && m.hdr.reserved == 0 &&
                         m.hdr.vlen > srv->opt.max_item_size &&
                         wire_body_len(&m.hdr) <= NAT_SWALLOW_MAX(srv);

        if (rc < 0 && !wire_err_in_sync(rc) && !too_large) {
            nat_lost_sync(c, w, &m.hdr, rc);
            break;
        }
        total = WIRE_HDR_LEN + (size_t)wire_body_len(&m.hdr);
        if (!c->authed && total > PROTO_PREAUTH_MAX) {
            /* no login is that long: refused, and the connection closed
             * rather than its body buffered or read */
            STAT_INC(&w->stats, protocol_errors);
            nat_reply(c, &m.hdr, WIRE_S_AUTH_REQUIRED, 0, NULL, 0, NULL, 0);
            conn_in_consume(c, avail);
            conn_close_after_flush(c);
            break;
        }
        if (too_large && !c->authed) {
            /* before authentication: refused, the store left alone */
            nat_reply(c, &m.hdr, WIRE_S_AUTH_REQUIRED, 0, NULL, 0, NULL, 0);
            conn_in_skip(c, total);
            continue;
        }
        if (too_large) {
            /* the key (after the tags) decides which record goes stale */
            size_t koff = WIRE_HDR_LEN + (size_t)m.hdr.ntags * WIRE_TAG_LEN;

            if (avail < koff + m.hdr.klen) {
                conn_in_need(c, koff + m.hdr.klen);
                break;
            }
            STAT_INC(&w->stats, cmd_set);
            enum store_mode mode = nat_store_mode(m.hdr.opcode, m.hdr.cas);
            stats_count_put(&w->stats, mode == STORE_CAS, ST_TOO_LARGE);
            (void)store_drop_stale(srv->store, mode, buf + koff, m.hdr.klen,
                                   m.hdr.cas);
            nat_status(c, &m.hdr, WIRE_S_TOO_LARGE, 0);
            conn_in_skip(c, total);
            continue;
        }
        if (avail < total) {
            conn_in_need_body(c, total); /* the header is in */
            break;
        }
        n = wire_parse(buf, avail, &m, srv->max_body);
        if (n < 0) {
            /* in sync: the whole message is here; answer and skip it */
            nat_error(c, w, &m.hdr, (int)n);
            conn_in_consume(c, m.size);
            continue;
        }
        rc = wire_check_request(&m);
        if (rc < 0)
            nat_error(c, w, &m.hdr, rc);
        else if (!c->authed)
            nat_unauthed(c, w, &m);
        else {
            uint64_t t0 = metrics_start(srv);

            nat_exec(c, w, &m);
            if (t0 != 0)
                metrics_observe(srv, w->id, nat_metrics_cmd(m.hdr.opcode), t0);
        }
        conn_in_consume(c, (size_t)n);
        if (c->hold_until != 0)
            break; /* a failed AUTH: the next request waits (conn_hold) */
    }
    if (c->closing)
        conn_in_need(c, 1);
}

const struct proto proto_native = {"native", nat_process};
