/*
 * proto_mcbin.c - memcached's binary protocol handler
 * (docs/protocol-binary.md): requests parsed by protocol/mcbin.c, run
 * through the store calls the text handler makes, answered in request
 * order with memcached 1.6's status codes, texts and CAS rules.  SASL
 * PLAIN logs a connection in against --auth-file (proto_auth(), shared
 * with the text and native logins).
 *
 * A GET goes through the lookup every GET shares (proto_get_keys(),
 * proto.h); a run of pipelined get requests (libmemcached's multi-get:
 * GETKQ... NOOP) is looked up in one batch.  The reply is this format's:
 * the header and flags composed into the output buffer, the value queued
 * as a reference to the record (copied when small, conn_out_ref()).
 */
#include "config.h"

#include "proto.h"

#include <string.h>

#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server/log.h"
#include "server/report.h"
#include "server/metrics.h"
#include "server/core/store.h"
#include "protocol/mcbin.h"

/* A body larger than this is not skipped (an unknown opcode's, a value
 * over -I): the connection closes instead of reading it.  64 values of the
 * largest size: a client's honest mistake, not a claim of gigabytes. */
#define MCB_SKIP_MAX(srv) ((uint64_t)(srv)->opt.max_item_size * 64)

/* Get requests of a pipelined run looked up together (the reader hold
 * slots, MDC_HOLDS: as the text multi-get's batch) */
#define MCB_GET_BATCH 7

/* A reply header with no body beyond extras/key/value given after it. */
static uint8_t *mcb_head(struct conn *c, const struct mcbin_req *req,
                         uint16_t status, uint8_t extlen, uint16_t klen,
                         uint32_t vlen, uint64_t cas, size_t room)
{
    uint8_t *p = conn_out_reserve(c, MCBIN_HDR_LEN + room);

    if (p != NULL)
        mcbin_response(p, &req->hdr, status, extlen, klen, vlen, cas);
    return p;
}

/* A bare reply (no body), or nothing for a quiet request's success. */
static void mcb_ok(struct conn *c, const struct mcbin_req *req, uint64_t cas)
{
    if (req->quiet)
        return;
    if (mcb_head(c, req, MCBIN_S_OK, 0, 0, 0, cas, 0) != NULL)
        conn_out_commit(c, MCBIN_HDR_LEN);
}

/* A reply whose value is v (a short text). */
static void mcb_text(struct conn *c, const struct mcbin_req *req,
                     uint16_t status, const char *v)
{
    size_t n = strlen(v);
    uint8_t *p = mcb_head(c, req, status, 0, 0, (uint32_t)n, 0, n);

    if (p == NULL)
        return;
    memcpy(p + MCBIN_HDR_LEN, v, n);
    conn_out_commit(c, MCBIN_HDR_LEN + n);
}

/* An error: memcached's text as the value; sent even for a quiet request
 * (only success, and a get's miss, are kept quiet). */
static void mcb_error(struct conn *c, const struct mcbin_hdr *h,
                      uint16_t status)
{
    uint8_t *p = conn_out_reserve(c, mcbin_error_len(status));

    if (p != NULL)
        conn_out_commit(c, mcbin_error(p, h, status));
}

/*
 * A record's reply: flags as extras, the key when asked, then the value
 * (none for TOUCH), the record's CAS in the header.  Takes over r.
 */
static void mcb_record(struct conn *c, const struct mcbin_req *req,
                       struct record *r, bool with_value)
{
    uint32_t klen = req->with_key ? record_klen(r) : 0;
    uint32_t vlen = with_value ? record_vlen(r) : 0;
    uint8_t *p = mcb_head(c, req, MCBIN_S_OK, 4, (uint16_t)klen, vlen,
                          record_cas(r), 4 + klen);

    if (p == NULL) {
        store_release(c->srv->store, r);
        return;
    }
    mcbin_put_u32(p + MCBIN_HDR_LEN, record_flags(r));
    if (klen > 0)
        memcpy(p + MCBIN_HDR_LEN + 4, record_key(r), klen);
    conn_out_commit(c, MCBIN_HDR_LEN + 4 + klen);
    if (vlen > 0)
        conn_out_ref(c, record_value(r), vlen, r);
    else
        store_release(c->srv->store, r);
}

/* A get's miss: nothing when quiet; GETK/GATK carry the key and no
 * text, the others memcached's "Not found". */
static void mcb_miss(struct conn *c, const struct mcbin_req *req)
{
    uint8_t *p;

    if (req->quiet)
        return;
    if (!req->with_key) {
        mcb_error(c, &req->hdr, MCBIN_S_NOT_FOUND);
        return;
    }
    p = mcb_head(c, req, MCBIN_S_NOT_FOUND, 0, req->klen, 0, 0, req->klen);
    if (p == NULL)
        return;
    memcpy(p + MCBIN_HDR_LEN, req->key, req->klen);
    conn_out_commit(c, MCBIN_HDR_LEN + req->klen);
}

/*
 * GET, GETQ, GETK, GETKQ, GAT, GATQ, GATK, GATKQ: reqs[0..n) looked up by
 * proto_get_keys() in one pass (n > 1 only for a pipelined run of plain
 * gets), then answered in order.
 */
static void mcb_get(struct conn *c, struct worker *w,
                    const struct mcbin_req *reqs, size_t n)
{
    struct store_key ks[MCB_GET_BATCH];
    struct record *rs[MCB_GET_BATCH];
    bool gat = reqs[0].cmd == MCBIN_OP_GAT;
    size_t i;

    ks[0] = (struct store_key){reqs[0].key, reqs[0].klen};
    for (i = 1; i < n; i++)
        ks[i] = (struct store_key){reqs[i].key, reqs[i].klen};
    proto_get_keys(c, w, ks, n, gat, (int64_t)reqs[0].exptime, rs);
    for (i = 0; i < n; i++) {
        if (rs[i] != NULL)
            mcb_record(c, &reqs[i], rs[i], true);
        else
            mcb_miss(c, &reqs[i]);
    }
}

/* TOUCH: the new expiry; memcached answers a hit with the flags and CAS
 * (no value). */
static void mcb_touch(struct conn *c, struct worker *w,
                      const struct mcbin_req *req)
{
    struct record *r = store_gat(c->srv->store, req->key, req->klen,
                                 (int64_t)req->exptime);

    stats_count_touch(&w->stats, r != NULL ? ST_OK : ST_NOT_FOUND);
    if (r == NULL)
        mcb_error(c, &req->hdr, MCBIN_S_NOT_FOUND);
    else
        mcb_record(c, req, r, false);
}

/* The store mode of a storage request: memcached turns SET, ADD and
 * REPLACE with a CAS into a compare-and-swap (an ADD included). */
static enum store_mode mcb_store_mode(uint8_t cmd, uint64_t cas)
{
    switch (cmd) {
    case MCBIN_OP_APPEND: return STORE_APPEND;
    case MCBIN_OP_PREPEND: return STORE_PREPEND;
    case MCBIN_OP_ADD: return cas != 0 ? STORE_CAS : STORE_ADD;
    case MCBIN_OP_REPLACE: return cas != 0 ? STORE_CAS : STORE_REPLACE;
    default: return cas != 0 ? STORE_CAS : STORE_SET;
    }
}

static void mcb_store(struct conn *c, struct worker *w,
                      const struct mcbin_req *req)
{
    enum store_mode mode = mcb_store_mode(req->cmd, req->hdr.cas);
    struct store_item it;
    uint64_t cas = 0;
    uint16_t s;
    int st;

    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.klen = req->klen;
    it.value = req->value;
    it.vlen = req->vlen;
    it.flags = req->flags;
    it.exptime = (int64_t)req->exptime;
    it.cas = req->hdr.cas;
    st = store_put(c->srv->store, mode, &it, &cas);
    if (watch_wants(c->srv, WATCH_MUTATIONS))
        proto_watch_store(c, req->key, req->klen, proto_store_mode_name(mode),
                          st, (int64_t)req->exptime, req->vlen);
    if (proto_detail_on(c->srv))
        stats_detail_count(c->srv, (const char *)req->key, req->klen,
                           DETAIL_SET, false);
    STAT_INC(&w->stats, cmd_set);
    stats_count_put(&w->stats, mode == STORE_CAS, st);
    switch (st) {
    case ST_OK: mcb_ok(c, req, cas); return;
    case ST_EXISTS: s = MCBIN_S_EXISTS; break;
    case ST_NOT_FOUND: s = MCBIN_S_NOT_FOUND; break;
    case ST_NOT_STORED: /* replace finds nothing: memcached's ENOENT */
        s = mode == STORE_REPLACE ? MCBIN_S_NOT_FOUND : MCBIN_S_NOT_STORED;
        break;
    case ST_TOO_LARGE: /* append/prepend past -I: memcached's NOT_STORED */
        s = mode == STORE_APPEND || mode == STORE_PREPEND
                ? MCBIN_S_NOT_STORED
                : MCBIN_S_TOO_LARGE;
        break;
    case ST_NO_MEMORY: s = MCBIN_S_NO_MEMORY; break;
    default: s = MCBIN_S_INVALID; break;
    }
    mcb_error(c, &req->hdr, s);
}

static void mcb_delete(struct conn *c, struct worker *w,
                       const struct mcbin_req *req)
{
    int st = store_delete(c->srv->store, req->key, req->klen, req->hdr.cas);

    if (proto_detail_on(c->srv))
        stats_detail_count(c->srv, (const char *)req->key, req->klen,
                           DETAIL_DEL, false);
    switch (st) {
    case ST_OK:
        STAT_INC(&w->stats, delete_hits);
        mcb_ok(c, req, 0);
        break;
    case ST_EXISTS: mcb_error(c, &req->hdr, MCBIN_S_EXISTS); break;
    default:
        STAT_INC(&w->stats, delete_misses);
        mcb_error(c, &req->hdr, MCBIN_S_NOT_FOUND);
        break;
    }
}

/*
 * INCREMENT, DECREMENT: the delta on a decimal value (a CAS in the header
 * must match); a miss creates the counter at the initial value unless the
 * expiry is 0xffffffff (memcached's rule; the created value is answered
 * as it is, the delta not applied).  Created as an add, so a racing
 * creator wins and the delta then applies to its value.
 */
static void mcb_counter(struct conn *c, struct worker *w,
                        const struct mcbin_req *req)
{
    struct store *st = c->srv->store;
    bool decr = req->cmd == MCBIN_OP_DECR;
    uint64_t val = 0, cas = 0;
    uint8_t *p;
    int rc;

    rc = store_incr_cas(st, req->key, req->klen, req->delta, decr,
                        req->hdr.cas, &val, &cas);
    stats_count_incr(&w->stats, decr, rc);
    if (rc == ST_NOT_FOUND && req->exptime != 0xffffffffu) {
        struct store_item it;
        char digits[24];
        uint64_t v = req->initial;
        size_t n = 0;

        do { /* decimal digits, as the text protocol's counters */
            digits[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v != 0);
        for (size_t i = 0; i < n / 2; i++) {
            char t = digits[i];
            digits[i] = digits[n - 1 - i];
            digits[n - 1 - i] = t;
        }
        memset(&it, 0, sizeof(it));
        it.key = req->key;
        it.klen = req->klen;
        it.value = digits;
        it.vlen = (uint32_t)n;
        it.exptime = (int64_t)req->exptime;
        rc = store_put(st, STORE_ADD, &it, &cas);
        if (rc == ST_OK)
            val = req->initial;
        else if (rc == ST_EXISTS)
            rc = store_incr(st, req->key, req->klen, req->delta, decr, &val,
                            &cas);
    }
    switch (rc) {
    case ST_OK:
        if (req->quiet)
            return;
        p = mcb_head(c, req, MCBIN_S_OK, 0, 0, 8, cas, 8);
        if (p == NULL)
            return;
        mcbin_put_u64(p + MCBIN_HDR_LEN, val);
        conn_out_commit(c, MCBIN_HDR_LEN + 8);
        return;
    case ST_NOT_FOUND: mcb_error(c, &req->hdr, MCBIN_S_NOT_FOUND); return;
    case ST_EXISTS: mcb_error(c, &req->hdr, MCBIN_S_EXISTS); return;
    case ST_NOT_NUMBER: mcb_error(c, &req->hdr, MCBIN_S_NON_NUMERIC); return;
    case ST_NO_MEMORY: mcb_error(c, &req->hdr, MCBIN_S_NO_MEMORY); return;
    default: mcb_error(c, &req->hdr, MCBIN_S_NOT_STORED); return;
    }
}

/* ---- STAT ---------------------------------------------------------------- */

struct mcb_stat_ctx {
    struct conn *c;
    const struct mcbin_req *req;
};

/* One statistic: a packet of its own, the name as key, the value as
 * value (memcached's binary stats). */
static void mcb_stat_line(void *ctx, const char *name, const char *value)
{
    struct mcb_stat_ctx *x = ctx;
    size_t ln = strlen(name), lv = strlen(value);
    uint8_t *p;

    if (ln > UINT16_MAX)
        return;
    p = mcb_head(x->c, x->req, MCBIN_S_OK, 0, (uint16_t)ln, (uint32_t)lv, 0,
                 ln + lv);
    if (p == NULL)
        return;
    memcpy(p + MCBIN_HDR_LEN, name, ln);
    memcpy(p + MCBIN_HDR_LEN + ln, value, lv);
    conn_out_commit(x->c, MCBIN_HDR_LEN + ln + lv);
}

/* stats detail dump: its lines, "\r\n"-ended, as one value. */
static void mcb_detail_line(void *ctx, const char *line)
{
    struct conn *c = ctx;

    (void)conn_out_bytes(c, line, strlen(line));
    (void)conn_out_bytes(c, "\r\n", 2);
}

static bool key_is(const struct mcbin_req *req, const char *s)
{
    size_t n = strlen(s);

    return req->klen == n && memcmp(req->key, s, n) == 0;
}

/*
 * STAT with its groups as memcached's binary protocol has them: none (the
 * general statistics), settings, items, slabs, sizes, reset, detail
 * on|off|dump, and mdcached's threads and tags; each statistic a packet,
 * then an empty packet ends the list.  Another group: "Not found".
 */
static void mcb_stat(struct conn *c, struct worker *w,
                     const struct mcbin_req *req)
{
    struct server *srv = c->srv;
    struct mcb_stat_ctx x = {c, req};

    STAT_INC(&w->stats, cmd_stats);
    if (req->klen == 0) {
        stats_collect_conn(srv, mcb_stat_line, &x, conn_bufs_held(c));
    } else if (stats_collect_group(srv, (const char *)req->key, req->klen,
                                   NULL, NULL) == 0) {
        (void)stats_collect_group(srv, (const char *)req->key, req->klen,
                                  mcb_stat_line, &x);
    } else if (key_is(req, "items")) {
        stats_collect_items(srv, mcb_stat_line, &x);
    } else if (key_is(req, "slabs")) {
        stats_collect_slabs(srv, mcb_stat_line, &x);
    } else if (key_is(req, "sizes")) {
        mcb_stat_line(&x, "sizes_status", "disabled");
    } else if (key_is(req, "reset")) {
        stats_reset(srv);
    } else if (key_is(req, "detail on")) {
        stats_detail_set(srv, true);
    } else if (key_is(req, "detail off")) {
        stats_detail_set(srv, false);
    } else if (key_is(req, "detail dump")) {
        /* one packet "detailed": its header patched once the lines are
         * in (the output buffer may move as it grows: an offset) */
        uint8_t *p = conn_out_reserve(c, MCBIN_HDR_LEN + 8);
        size_t hoff;

        if (p == NULL)
            return;
        hoff = (size_t)(p - c->obuf);
        memcpy(p + MCBIN_HDR_LEN, "detailed", 8);
        conn_out_commit(c, MCBIN_HDR_LEN + 8);
        stats_detail_dump(srv, mcb_detail_line, c);
        if (c->closing)
            return;
        mcbin_response(c->obuf + hoff, &req->hdr, MCBIN_S_OK, 0, 8,
                       (uint32_t)(c->olen - hoff - MCBIN_HDR_LEN - 8), 0);
    } else {
        mcb_error(c, &req->hdr, MCBIN_S_NOT_FOUND);
        return;
    }
    /* the end of the list */
    if (mcb_head(c, req, MCBIN_S_OK, 0, 0, 0, 0, 0) != NULL)
        conn_out_commit(c, MCBIN_HDR_LEN);
}

/* ---- SASL (--auth-file) -------------------------------------------------- */

#define MCB_SASL_MECHS "PLAIN"

/*
 * SASL_AUTH with PLAIN (RFC 4616: [authzid] NUL authcid NUL password)
 * against the users of --auth-file, through proto_auth() as the text and
 * native logins (counted, held after a failure, closed after the tenth).
 * Another mechanism, a malformed message or a SASL_STEP (PLAIN has one
 * step) fail alike.  A failure leaves the connection unauthenticated,
 * even one that had logged in before.
 */
static void mcb_sasl_auth(struct conn *c, struct worker *w,
                          const struct mcbin_req *req)
{
    const uint8_t *v = req->value, *end = v + req->vlen, *u, *pw;
    const uint8_t *nul;
    bool ok = false;

    if (req->cmd == MCBIN_OP_SASL_AUTH && key_is(req, "PLAIN") &&
        (nul = memchr(v, 0, req->vlen)) != NULL) {
        u = nul + 1; /* the authorization identity before it is ignored */
        nul = memchr(u, 0, (size_t)(end - u));
        if (nul != NULL) {
            pw = nul + 1;
            ok = proto_auth(c, w, u, (size_t)(nul - u), pw,
                            (size_t)(end - pw));
            if (!ok)
                STAT_INC(&w->stats, sasl_auth_errors);
            goto out;
        }
    }
    /* counted and held as any failed login */
    (void)proto_auth(c, w, "", 0, "", 0);
    STAT_INC(&w->stats, sasl_auth_errors);
out:
    if (ok) {
        mcb_text(c, req, MCBIN_S_OK, "Authenticated");
        return;
    }
    c->authed = false;
    mcb_error(c, &req->hdr, MCBIN_S_AUTH_ERROR);
}

static void mcb_sasl(struct conn *c, struct worker *w,
                     const struct mcbin_req *req)
{
    if (c->srv->auth == NULL) {
        /* memcached without -S: SASL is an unknown command */
        mcb_error(c, &req->hdr, MCBIN_S_UNKNOWN);
        return;
    }
    if (req->cmd == MCBIN_OP_SASL_LIST)
        mcb_text(c, req, MCBIN_S_OK, MCB_SASL_MECHS);
    else
        mcb_sasl_auth(c, w, req);
}

/* ---- dispatch ------------------------------------------------------------ */

static void mcb_exec(struct conn *c, struct worker *w,
                     const struct mcbin_req *req)
{
    switch (req->cmd) {
    case MCBIN_OP_GET:
    case MCBIN_OP_GAT: mcb_get(c, w, req, 1); break;
    case MCBIN_OP_TOUCH: mcb_touch(c, w, req); break;
    case MCBIN_OP_SET:
    case MCBIN_OP_ADD:
    case MCBIN_OP_REPLACE:
    case MCBIN_OP_APPEND:
    case MCBIN_OP_PREPEND: mcb_store(c, w, req); break;
    case MCBIN_OP_DELETE: mcb_delete(c, w, req); break;
    case MCBIN_OP_INCR:
    case MCBIN_OP_DECR: mcb_counter(c, w, req); break;
    case MCBIN_OP_FLUSH:
        if (c->srv->opt.disable_flush_all) { /* -F, as memcached answers */
            mcb_error(c, &req->hdr, MCBIN_S_AUTH_ERROR);
            break;
        }
        STAT_INC(&w->stats, cmd_flush);
        /* a delay is memcached's expiry: relative up to 30 days, else
         * absolute (as the text flush_all's) */
        store_flush_at(c->srv->store,
                       req->has_exptime ? (int64_t)req->exptime : 0);
        mcb_ok(c, req, 0);
        break;
    case MCBIN_OP_NOOP: mcb_ok(c, req, 0); break;
    case MCBIN_OP_VERSION:
        mcb_text(c, req, MCBIN_S_OK, MDC_TEXT_VERSION);
        break;
    case MCBIN_OP_VERBOSITY:
        /* the text command's mapping: 0 info, 1 debug, 2 and more trace */
        log_set_level(req->level >= 2 ? LOG_LVL_TRACE
                                      : LOG_LVL_INFO + (int)req->level);
        mcb_ok(c, req, 0);
        break;
    case MCBIN_OP_STAT: mcb_stat(c, w, req); break;
    case MCBIN_OP_QUIT:
        mcb_ok(c, req, 0);
        conn_close_after_flush(c);
        break;
    case MCBIN_OP_SASL_LIST:
    case MCBIN_OP_SASL_AUTH:
    case MCBIN_OP_SASL_STEP: mcb_sasl(c, w, req); break;
    default: mcb_error(c, &req->hdr, MCBIN_S_UNKNOWN); break;
    }
}

/* The --metrics histogram a request is timed in. */
static enum metrics_cmd mcb_metrics_cmd(uint8_t cmd)
{
    switch (cmd) {
    case MCBIN_OP_GET: case MCBIN_OP_GAT: return MC_GET;
    case MCBIN_OP_SET: case MCBIN_OP_ADD: case MCBIN_OP_REPLACE:
    case MCBIN_OP_APPEND: case MCBIN_OP_PREPEND:
        return MC_SET;
    case MCBIN_OP_DELETE: return MC_DELETE;
    case MCBIN_OP_INCR: case MCBIN_OP_DECR: return MC_INCR;
    case MCBIN_OP_TOUCH: return MC_TOUCH;
    case MCBIN_OP_FLUSH: return MC_FLUSH;
    case MCBIN_OP_STAT: return MC_STATS;
    default: return MC_OTHER;
    }
}

/* What a connection may send before it has logged in (memcached -S):
 * the SASL exchange and VERSION. */
static bool mcb_preauth_op(uint8_t opcode)
{
    return opcode == MCBIN_OP_SASL_LIST || opcode == MCBIN_OP_SASL_AUTH ||
           opcode == MCBIN_OP_SASL_STEP || opcode == MCBIN_OP_VERSION;
}

/* A store refused for its size before its value was read: counted as the
 * store it is, and the record it would have replaced removed
 * (store_drop_stale, as store_put() does). */
static void mcb_refused_large(struct conn *c, struct worker *w,
                              const struct mcbin_req *req)
{
    enum store_mode mode = mcb_store_mode(req->cmd, req->hdr.cas);

    STAT_INC(&w->stats, cmd_set);
    stats_count_put(&w->stats, mode == STORE_CAS, ST_TOO_LARGE);
    (void)store_drop_stale(c->srv->store, mode, req->key, req->klen,
                           req->hdr.cas);
}

/* Answer once, drop the input, close once the answer is out. */
static void mcb_close(struct conn *c, const struct mcbin_hdr *h,
                      uint16_t status)
{
    size_t avail;

    mcb_error(c, h, status);
    (void)conn_in_data(c, &avail);
    conn_in_consume(c, avail);
    conn_close_after_flush(c);
}

/*
 * More plain gets right behind reqs[0] in the input (a multi-get: GETKQ...
 * then NOOP): parse them into reqs[1..] while they are whole, up to
 * MCB_GET_BATCH.  Returns how many requests reqs holds and their bytes in
 * *used.
 */
static size_t mcb_get_run(const uint8_t *buf, size_t avail,
                          const struct mcbin_limits *lim,
                          struct mcbin_req *reqs, size_t *used)
{
    size_t n = 1;

    while (n < MCB_GET_BATCH && *used < avail &&
           avail - *used >= MCBIN_HDR_LEN && buf[*used] == MCBIN_REQ) {
        uint8_t op = buf[*used + 1];
        ssize_t k;

        if (op != MCBIN_OP_GET && op != MCBIN_OP_GETQ &&
            op != MCBIN_OP_GETK && op != MCBIN_OP_GETKQ)
            break;
        k = mcbin_parse(buf + *used, avail - *used, lim, &reqs[n]);
        if (k <= 0)
            break; /* the next round parses it again and answers it */
        *used += (size_t)k;
        n++;
    }
    return n;
}

static void mcb_process(struct conn *c, struct worker *w)
{
    struct server *srv = c->srv;
    struct mcbin_limits lim = {srv->opt.max_item_size, MCB_SKIP_MAX(srv)};
    uint64_t budget = srv->opt.reqs_per_event;

    conn_in_need(c, 1); /* every "wait for bytes" exit below sets it */
    while (!c->closing && !conn_out_full(c) && c->park == NULL) {
        struct mcbin_req reqs[MCB_GET_BATCH];
        struct mcbin_req *req = &reqs[0];
        size_t avail;
        const uint8_t *buf = conn_in_data(c, &avail);
        ssize_t n;

        if (avail == 0) {
            conn_in_need(c, MCBIN_HDR_LEN);
            break;
        }
        if (budget-- == 0) {
            conn_yield(c); /* -R requests run: the others' turn */
            break;
        }
        n = mcbin_parse(buf, avail, &lim, req);
        if (!c->authed && avail >= MCBIN_HDR_LEN && buf[0] == MCBIN_REQ &&
            !mcb_preauth_op(buf[1])) {
            /* memcached -S: anything but the SASL exchange (and VERSION)
             * before login gets the auth error, and the connection
             * closes; its body is never read */
            STAT_INC(&w->stats, binary_requests);
            STAT_INC(&w->stats, protocol_errors);
            mcb_close(c, &req->hdr, MCBIN_S_AUTH_ERROR);
            break;
        }
        if (n == MCBIN_AGAIN) {
            if (avail >= MCBIN_HDR_LEN)
                conn_in_need_body(c, req->need); /* the header is in */
            else
                conn_in_need(c, req->need);
            break;
        }
        STAT_INC(&w->stats, binary_requests);
        if (n == MCBIN_ERROR) {
            if (req->status == MCBIN_S_TOO_LARGE)
                mcb_refused_large(c, w, req);
            else
                STAT_INC(&w->stats, protocol_errors);
            if (req->close) {
                log_debug("conn %llu: binary request refused (status "
                          "0x%04x), closing",
                          (unsigned long long)c->id, req->status);
                mcb_close(c, &req->hdr, req->status);
                break;
            }
            mcb_error(c, &req->hdr, req->status);
            conn_in_skip(c, req->skip);
            continue;
        }
        {
            uint64_t t0 = metrics_start(srv);
            size_t used = (size_t)n, k = 1;

            if (req->cmd == MCBIN_OP_GET) {
                k = mcb_get_run(buf, avail, &lim, reqs, &used);
                if (k > 1) /* each one counted, the first above */
                    STAT_ADD(&w->stats, binary_requests, k - 1);
                mcb_get(c, w, reqs, k);
            } else {
                mcb_exec(c, w, req);
            }
            if (t0 != 0)
                metrics_observe(srv, w->id, mcb_metrics_cmd(req->cmd), t0);
            conn_in_consume(c, used);
        }
        if (c->hold_until != 0)
            break; /* a failed login: the next request waits (conn_hold) */
    }
    if (c->closing)
        conn_in_need(c, 1);
}

const struct proto proto_mcbin = {"memcached-binary", mcb_process};
