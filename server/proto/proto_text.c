/*
 * proto_text.c - the memcached text protocol handler
 * (docs/protocol-text.md): requests parsed by protocol/mctext.c, run
 * against the store, answered in request order.
 *
 * Values go out as the native GET path sends them: the VALUE/VA line is
 * composed into the connection's output buffer, the value is queued as a
 * reference to the record (released once sent), then "\r\n" -- a GET hit
 * neither copies the value nor allocates.
 */
#include "config.h"

#include "proto.h"

#include <string.h>

#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server/log.h"
#include "server/report.h"
#include "protocol/mctext.h"
#include "server/core/store.h"
#include "protocol/wire.h"

/* ---- memcached text protocol ------------------------------------------ */

#define TXT_E_OOM "SERVER_ERROR out of memory\r\n"

static void txt_str(struct conn *c, const char *s)
{
    (void)conn_out_bytes(c, s, strlen(s));
}

/* A reply line unless the request said noreply. */
static void txt_reply(struct conn *c, const struct mctext_req *req,
                      const char *s)
{
    if (!req->noreply)
        txt_str(c, s);
}

/* "<prefix><number>\r\n" */
static void txt_number(struct conn *c, const char *prefix, uint64_t v)
{
    size_t lp = strlen(prefix);
    uint8_t *p = conn_out_reserve(c, lp + 22);
    size_t n;

    if (p == NULL)
        return;
    memcpy(p, prefix, lp);
    n = lp + mctext_u64((char *)p + lp, v);
    p[n++] = '\r';
    p[n++] = '\n';
    conn_out_commit(c, n);
}

/* VALUE line, the value in place, "\r\n".  Takes over the reference r. */
static void txt_value(struct conn *c, struct record *r, bool with_cas)
{
    uint32_t klen = record_klen(r), vlen = record_vlen(r);
    uint8_t *p = conn_out_reserve(c, MCTEXT_VALUE_LINE_LEN(klen));

    if (p == NULL) {
        store_release(c->srv->store, r);
        return;
    }
    conn_out_commit(c, mctext_value_line((char *)p, record_key(r), klen,
                                         record_flags(r), vlen, with_cas,
                                         record_cas(r)));
    conn_out_ref(c, record_value(r), vlen, r);
    (void)conn_out_bytes(c, "\r\n", 2);
}

static void txt_meta(struct conn *c, const char *code, int64_t vlen,
                     const struct mctext_req *req,
                     const struct mctext_meta_vals *v)
{
    uint8_t *p = conn_out_reserve(c, MCTEXT_META_LINE_MAX);

    if (p != NULL)
        conn_out_commit(c, mctext_meta_line((char *)p, code, vlen, req, v));
}

static void txt_vals(struct store *st, struct record *r,
                     struct mctext_meta_vals *v)
{
    v->cas = record_cas(r);
    v->ttl = record_ttl(st, r);
    v->flags = record_flags(r);
    v->size = record_vlen(r);
}

/* A store status as a classic reply line. */
static const char *txt_put_status(int st, enum store_mode mode)
{
    switch (st) {
    case ST_OK: return MCTEXT_R_STORED;
    case ST_EXISTS:
        return mode == STORE_ADD ? MCTEXT_R_NOT_STORED : MCTEXT_R_EXISTS;
    case ST_NOT_STORED: return MCTEXT_R_NOT_STORED;
    case ST_NOT_FOUND: return MCTEXT_R_NOT_FOUND;
    case ST_TOO_LARGE: return MCTEXT_E_TOO_LARGE;
    case ST_NO_MEMORY: return MCTEXT_E_NO_MEMORY;
    case ST_TOO_MANY_TAGS: return MCTEXT_E_TOO_MANY_TAGS;
    default: return MCTEXT_E_FORMAT;
    }
}

static void txt_put_stats(struct worker *w, enum store_mode mode, int st)
{
    STAT_INC(&w->stats, cmd_set);
    stats_count_put(&w->stats, mode == STORE_CAS, st);
}

static void txt_get(struct conn *c, struct worker *w,
                    const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    bool gat = req->cmd == MCT_GAT || req->cmd == MCT_GATS;
    bool with_cas = req->cmd == MCT_GETS || req->cmd == MCT_GATS;
    struct mctext_iter it;
    const char *key;
    uint32_t klen;

    mctext_iter_init(&it, req);
    while (mctext_next_key(&it, &key, &klen)) {
        struct record *r;

        if (gat)
            r = store_gat(st, key, klen, req->exptime);
        else
            r = store_get(st, key, klen);
        stats_count_get(&w->stats, gat, r != NULL);
        if (r == NULL)
            continue;
        txt_value(c, r, with_cas);
    }
    txt_str(c, MCTEXT_R_END);
}

static void txt_store(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    struct store_item it;
    enum store_mode mode = STORE_SET;
    int st;

    memset(&it, 0, sizeof(it));
    it.key = req->key;
    it.klen = req->klen;
    it.value = req->value;
    it.vlen = req->vlen;
    it.flags = req->flags;
    it.exptime = req->exptime;
    it.cas = req->cas;
    switch (req->cmd) {
    case MCT_ADD: mode = STORE_ADD; break;
    case MCT_REPLACE: mode = STORE_REPLACE; break;
    case MCT_APPEND: mode = STORE_APPEND; break;
    case MCT_PREPEND: mode = STORE_PREPEND; break;
    case MCT_CAS: mode = STORE_CAS; break;
    default: break;
    }
    if (req->cmd == MCT_TSET) {
        struct mctext_iter i;
        struct mdc_tag *t = worker_tags(w, req->nlist);
        uint32_t n = 0;

        if (t == NULL) {
            STAT_INC(&w->stats, cmd_set);
            txt_reply(c, req, MCTEXT_E_NO_MEMORY);
            return;
        }
        mctext_iter_init(&i, req);
        while (n < req->nlist && mctext_next_tag(&i, &t[n].tkey, &t[n].tval))
            n++;
        it.tags = t;
        it.ntags = n;
    }
    st = store_put(c->srv->store, mode, &it, NULL);
    txt_put_stats(w, mode, st);
    txt_reply(c, req, txt_put_status(st, mode));
}

static void txt_counter(struct conn *c, struct worker *w,
                        const struct mctext_req *req)
{
    bool decr = req->cmd == MCT_DECR;
    uint64_t v = 0;
    int st = store_incr(c->srv->store, req->key, req->klen, req->delta, decr,
                        &v, NULL);

    stats_count_incr(&w->stats, decr, st);
    switch (st) {
    case ST_OK:
        if (!req->noreply)
            txt_number(c, "", v);
        break;
    case ST_NOT_FOUND: txt_reply(c, req, MCTEXT_R_NOT_FOUND); break;
    case ST_NOT_NUMBER: txt_reply(c, req, MCTEXT_E_NONNUM); break;
    case ST_NO_MEMORY: txt_reply(c, req, TXT_E_OOM); break;
    default: txt_reply(c, req, MCTEXT_E_FORMAT); break;
    }
}

static void txt_delete(struct conn *c, struct worker *w,
                       const struct mctext_req *req)
{
    int st = store_delete(c->srv->store, req->key, req->klen, 0);

    if (st == ST_OK) {
        STAT_INC(&w->stats, delete_hits);
        txt_reply(c, req, MCTEXT_R_DELETED);
    } else {
        STAT_INC(&w->stats, delete_misses);
        txt_reply(c, req, MCTEXT_R_NOT_FOUND);
    }
}

static void txt_touch(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    int st = store_touch(c->srv->store, req->key, req->klen, req->exptime);

    stats_count_touch(&w->stats, st);
    if (st == ST_OK)
        txt_reply(c, req, MCTEXT_R_TOUCHED);
    else
        txt_reply(c, req, MCTEXT_R_NOT_FOUND);
}

/* flush_all: at once.  A delay would need a timer the store lacks; it is
 * refused rather than run early (docs/protocol-text.md). */
static void txt_flush(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    STAT_INC(&w->stats, cmd_flush);
    /* a delay is memcached's expiry: relative up to 30 days, else absolute */
    store_flush_at(c->srv->store, req->exptime);
    txt_reply(c, req, MCTEXT_R_OK);
}

static void txt_stats_line(void *ctx, const char *name, const char *value)
{
    struct conn *c = ctx;
    size_t ln = strlen(name), lv = strlen(value);
    uint8_t *p = conn_out_reserve(c, ln + lv + 8);

    if (p == NULL)
        return;
    memcpy(p, "STAT ", 5);
    memcpy(p + 5, name, ln);
    p[5 + ln] = ' ';
    memcpy(p + 6 + ln, value, lv);
    p[6 + ln + lv] = '\r';
    p[7 + ln + lv] = '\n';
    conn_out_commit(c, ln + lv + 8);
}

/* stats, stats settings (the daemon's tables); other groups: ERROR. */
static void txt_stats(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    STAT_INC(&w->stats, cmd_stats);
    if (req->arg == NULL) {
        stats_collect(c->srv, txt_stats_line, c);
    } else if (req->arglen == 8 && memcmp(req->arg, "settings", 8) == 0) {
        stats_collect_settings(c->srv, txt_stats_line, c);
#ifdef MDC_DEBUG_COMMANDS
    } else if (req->arglen == 11 && memcmp(req->arg, "store_check", 11) == 0) {
        /* --enable-debug-commands only: needs a quiescent store (no
         * writer, no expiry due), as bench/soak.sh arranges */
        char msg[256];
        txt_stats_line(c, "store_check",
                       store_check(c->srv->store, msg, sizeof(msg)) == 0
                           ? "ok"
                           : msg);
#endif
    } else {
        txt_str(c, MCTEXT_R_ERROR);
        return;
    }
    txt_str(c, MCTEXT_R_END);
}

/* ---- meta commands ------------------------------------------------------- */

#define MF(ch) (req->meta.flags & MCTEXT_MF(ch))

static void txt_mg(struct conn *c, struct worker *w,
                   const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    struct mctext_meta_vals v;
    struct record *r;
    bool touch = MF('T') != 0;

    if (touch)
        r = store_gat(st, req->key, req->klen, req->meta.ttl);
    else
        r = store_get(st, req->key, req->klen);
    stats_count_get(&w->stats, touch, r != NULL);
    if (r == NULL) {
        if (!MF('q'))
            txt_meta(c, "EN", -1, req, NULL);
        return;
    }
    txt_vals(st, r, &v);
    if (!MF('v')) {
        txt_meta(c, "HD", -1, req, &v);
        store_release(st, r);
        return;
    }
    txt_meta(c, "VA", v.size, req, &v);
    conn_out_ref(c, record_value(r), v.size, r);
    (void)conn_out_bytes(c, "\r\n", 2);
}

static void txt_ms(struct conn *c, struct worker *w,
                   const struct mctext_req *req)
{
    struct store_item it;
    struct mctext_meta_vals v;
    enum store_mode mode = STORE_SET;
    uint64_t cas = 0;
    int st;

    memset(&it, 0, sizeof(it));
    memset(&v, 0, sizeof(v));
    it.key = req->key;
    it.klen = req->klen;
    it.value = req->value;
    it.vlen = req->vlen;
    it.flags = req->meta.cflags;
    it.exptime = req->meta.ttl;
    switch (req->meta.mode) {
    case 'E': mode = STORE_ADD; break;
    case 'A': mode = STORE_APPEND; break;
    case 'P': mode = STORE_PREPEND; break;
    case 'R': mode = STORE_REPLACE; break;
    default: break;
    }
    if (MF('C')) {
        it.cas = req->meta.cas;
        if (mode == STORE_SET || mode == STORE_REPLACE)
            mode = STORE_CAS;
        else if (mode == STORE_ADD)
            it.cas = 0; /* add: nothing to compare with */
    }
    st = store_put(c->srv->store, mode, &it, &cas);
    txt_put_stats(w, mode, st);
    switch (st) {
    case ST_OK:
        if (!MF('q')) {
            v.cas = cas;
            txt_meta(c, "HD", -1, req, &v);
        }
        break;
    /* Failures answer c0, as memcached does. */
    case ST_NOT_STORED: txt_meta(c, "NS", -1, req, &v); break;
    case ST_EXISTS:
        txt_meta(c, mode == STORE_ADD ? "NS" : "EX", -1, req, &v);
        break;
    case ST_NOT_FOUND: txt_meta(c, "NF", -1, req, &v); break;
    default: txt_str(c, txt_put_status(st, mode)); break;
    }
}

static void txt_md(struct conn *c, struct worker *w,
                   const struct mctext_req *req)
{
    int st = store_delete(c->srv->store, req->key, req->klen,
                          MF('C') ? req->meta.cas : 0);

    switch (st) {
    case ST_OK:
        STAT_INC(&w->stats, delete_hits);
        if (!MF('q'))
            txt_meta(c, "HD", -1, req, NULL);
        break;
    case ST_EXISTS: txt_meta(c, "EX", -1, req, NULL); break;
    default:
        STAT_INC(&w->stats, delete_misses);
        txt_meta(c, "NF", -1, req, NULL);
        break;
    }
}

/*
 * ma: incr/decr; with N a miss creates the counter from J (an add, so a
 * racing creator wins and the delta then applies to its value).  T and t
 * are applied and read right after the operation, not atomically with it.
 */
static void txt_ma(struct conn *c, struct worker *w,
                   const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    const struct mctext_meta *m = &req->meta;
    struct mctext_meta_vals v;
    bool decr = m->mode == 'D';
    uint64_t val = 0, cas = 0;
    int rc;

    memset(&v, 0, sizeof(v));
    rc = store_incr(st, req->key, req->klen, m->delta, decr, &val, &cas);
    if (rc == ST_NOT_FOUND && MF('N')) {
        struct store_item it;
        char digits[24];

        memset(&it, 0, sizeof(it));
        it.key = req->key;
        it.klen = req->klen;
        it.value = digits;
        it.vlen = (uint32_t)mctext_u64(digits, m->initial);
        it.exptime = m->vivify;
        rc = store_put(st, STORE_ADD, &it, &cas);
        if (rc == ST_OK)
            val = m->initial;
        else if (rc == ST_EXISTS)
            rc =
                store_incr(st, req->key, req->klen, m->delta, decr, &val, &cas);
        else
            rc = ST_NOT_STORED;
    }
    stats_count_incr(&w->stats, decr, rc);
    switch (rc) {
    case ST_OK: {
        char digits[24];
        size_t n = mctext_u64(digits, val);

        if (MF('T'))
            (void)store_touch(st, req->key, req->klen, m->ttl);
        v.cas = cas;
        v.ttl = -1;
        if (MF('t')) {
            struct record *r = store_get(st, req->key, req->klen);
            if (r != NULL) {
                v.ttl = record_ttl(st, r);
                store_release(st, r);
            }
        }
        if (MF('v')) {
            txt_meta(c, "VA", (int64_t)n, req, &v);
            (void)conn_out_bytes(c, digits, n);
            (void)conn_out_bytes(c, "\r\n", 2);
        } else if (!MF('q')) {
            txt_meta(c, "HD", -1, req, &v);
        }
        break;
    }
    case ST_NOT_FOUND: txt_meta(c, "NF", -1, req, NULL); break;
    case ST_NOT_STORED: txt_meta(c, "NS", -1, req, NULL); break;
    case ST_NOT_NUMBER: txt_str(c, MCTEXT_E_NONNUM); break;
    case ST_NO_MEMORY: txt_str(c, TXT_E_OOM); break;
    default: txt_str(c, MCTEXT_E_FORMAT); break;
    }
}

/* me: "ME <key> exp=<ttl> cas=<cas> flags=<flags> size=<bytes>
 * [tags=<tk:tv,...>]", or EN. */
static void txt_me(struct conn *c, const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    struct record *r = store_get(st, req->key, req->klen);
    uint32_t i, ntags;
    uint8_t *p0;
    char *p;

    if (r == NULL) {
        txt_str(c, "EN\r\n");
        return;
    }
    ntags = record_ntags(r);
    p0 = conn_out_reserve(c, 128 + req->meta.rawklen + (size_t)ntags * 24);
    if (p0 == NULL) {
        store_release(st, r);
        return;
    }
    p = (char *)p0;
    memcpy(p, "ME ", 3);
    p += 3;
    memcpy(p, req->meta.rawkey, req->meta.rawklen);
    p += req->meta.rawklen;
    memcpy(p, " exp=", 5);
    p += 5 + mctext_i64(p + 5, record_ttl(st, r));
    memcpy(p, " cas=", 5);
    p += 5 + mctext_u64(p + 5, record_cas(r));
    memcpy(p, " flags=", 7);
    p += 7 + mctext_u64(p + 7, record_flags(r));
    memcpy(p, " size=", 6);
    p += 6 + mctext_u64(p + 6, record_vlen(r));
    for (i = 0; i < ntags; i++) {
        struct mdc_tag t = record_tag(r, i);

        if (i == 0) {
            memcpy(p, " tags=", 6);
            p += 6;
        } else {
            *p++ = ',';
        }
        p += mctext_i64(p, t.tkey);
        *p++ = ':';
        p += mctext_i64(p, t.tval);
    }
    *p++ = '\r';
    *p++ = '\n';
    conn_out_commit(c, (size_t)(p - (char *)p0));
    store_release(st, r);
}

#undef MF

/* ---- tag extension commands ---------------------------------------------- */

/* The tvals of tget/tdel in w's scratch; NULL on allocation failure. */
static int32_t *txt_tvals(struct worker *w, const struct mctext_req *req)
{
    struct mdc_tag *t = worker_tags(w, (req->nlist + 1) / 2);
    int32_t *tv = (int32_t *)t;
    struct mctext_iter it;
    uint32_t n = 0;

    if (t == NULL)
        return NULL;
    mctext_iter_init(&it, req);
    while (n < req->nlist && mctext_next_tval(&it, &tv[n]))
        n++;
    return tv;
}

static void txt_tget(struct conn *c, struct worker *w,
                     const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    struct store_recset set = {NULL, 0, 0, 0};
    int32_t *tv = txt_tvals(w, req);
    size_t i;
    int rc;

    STAT_INC(&w->stats, cmd_get_by_tag);
    if (tv == NULL) {
        txt_str(c, TXT_E_OOM);
        return;
    }
    rc = store_get_by_tag(st, req->tkey, tv, req->nlist, &set);
    if (rc == ST_OK || rc == ST_TRUNCATED) {
        STAT_ADD(&w->stats, get_by_tag_records, set.n);
        for (i = 0; i < set.n; i++)
            txt_value(c, set.recs[i], req->cmd == MCT_TGETS);
        set.n = 0; /* the references now belong to the output queue */
    }
    store_recset_release(st, &set);
    if (rc == ST_TRUNCATED) {
        STAT_INC(&w->stats, get_by_tag_truncated);
        txt_str(c, MCTEXT_E_TRUNCATED);
    } else if (rc == ST_OK || rc == ST_NOT_FOUND) {
        txt_str(c, MCTEXT_R_END);
    } else {
        txt_str(c, TXT_E_OOM);
    }
}

static void txt_tdel(struct conn *c, struct worker *w,
                     const struct mctext_req *req)
{
    int32_t *tv = txt_tvals(w, req);
    uint64_t n = 0;
    int rc;

    STAT_INC(&w->stats, cmd_del_by_tag);
    if (tv == NULL) {
        txt_reply(c, req, TXT_E_OOM);
        return;
    }
    rc = store_del_by_tag(c->srv->store, req->tkey, tv, req->nlist, &n);
    STAT_ADD(&w->stats, del_by_tag_records, n);
    if (rc != ST_OK && rc != ST_NOT_FOUND)
        txt_reply(c, req, TXT_E_OOM);
    else if (!req->noreply)
        txt_number(c, "DELETED ", n);
}

static void txt_tpush(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    struct mdc_tag tag = {req->tkey, req->tval};
    char key[STORE_TSTACK_KEYMAX];
    uint32_t klen = 0;
    uint64_t cas = 0;
    int rc;

    STAT_INC(&w->stats, cmd_tstack_push);
    rc = store_tstack_push(c->srv->store, tag, req->value, req->vlen,
                           req->flags, req->exptime, key, &klen, &cas);
    if (rc != ST_OK) {
        if (rc == ST_NO_MEMORY || rc == ST_TOO_LARGE)
            STAT_INC(&w->stats, store_refused);
        txt_reply(c, req, txt_put_status(rc, STORE_SET));
        return;
    }
    if (!req->noreply) {
        uint8_t *p = conn_out_reserve(c, 7 + klen + 2);

        if (p == NULL)
            return;
        memcpy(p, "STORED ", 7);
        memcpy(p + 7, key, klen);
        memcpy(p + 7 + klen, "\r\n", 2);
        conn_out_commit(c, 7 + klen + 2);
    }
}

static void txt_tpop(struct conn *c, struct worker *w,
                     const struct mctext_req *req)
{
    struct mdc_tag tag = {req->tkey, req->tval};
    struct record *r = NULL;
    int rc;

    STAT_INC(&w->stats, cmd_tstack_pop);
    rc = store_tstack_pop(c->srv->store, tag, &r);
    if (rc == ST_OK && r != NULL)
        txt_value(c, r, false);
    else if (rc != ST_OK && rc != ST_NOT_FOUND) {
        txt_str(c, TXT_E_OOM);
        return;
    }
    txt_str(c, MCTEXT_R_END);
}

/* ---- authentication (--auth-file) --------------------------------------- */

#define TXT_E_UNAUTH "CLIENT_ERROR unauthenticated\r\n"
#define TXT_E_AUTHFAIL "CLIENT_ERROR authentication failure\r\n"

/* Before a connection has authenticated: memcached 1.6's exchange, "set
 * <any> <flags> <exptime> <n>\r\n<user> <password>\r\n" (STORED on
 * success), or quit; anything else is refused. */
static void txt_auth(struct conn *c, struct worker *w,
                     const struct mctext_req *req)
{
    const uint8_t *v = req->value;
    const uint8_t *sp;
    size_t ulen;

    if (req->cmd == MCT_QUIT) {
        conn_close_after_flush(c);
        return;
    }
    if (req->cmd != MCT_SET) {
        txt_str(c, TXT_E_UNAUTH);
        return;
    }
    sp = req->vlen > 0 ? memchr(v, ' ', req->vlen) : NULL;
    ulen = sp != NULL ? (size_t)(sp - v) : req->vlen;
    if (proto_auth(c, w, v, ulen, sp != NULL ? sp + 1 : v + ulen,
                   sp != NULL ? req->vlen - ulen - 1 : 0))
        txt_str(c, MCTEXT_R_STORED);
    else
        txt_str(c, TXT_E_AUTHFAIL);
}

/* ---- dispatch ------------------------------------------------------------ */

static void txt_exec(struct conn *c, struct worker *w,
                     const struct mctext_req *req)
{
    switch (req->cmd) {
    case MCT_GET:
    case MCT_GETS:
    case MCT_GAT:
    case MCT_GATS: txt_get(c, w, req); break;
    case MCT_SET:
    case MCT_ADD:
    case MCT_REPLACE:
    case MCT_APPEND:
    case MCT_PREPEND:
    case MCT_CAS:
    case MCT_TSET: txt_store(c, w, req); break;
    case MCT_DELETE: txt_delete(c, w, req); break;
    case MCT_INCR:
    case MCT_DECR: txt_counter(c, w, req); break;
    case MCT_TOUCH: txt_touch(c, w, req); break;
    case MCT_FLUSH_ALL: txt_flush(c, w, req); break;
    case MCT_STATS: txt_stats(c, w, req); break;
    /* clients parse "major.minor.micro" and reject major 0 (libmemcached):
     * announce the memcached protocol level we speak, then our own version */
    case MCT_VERSION:
        txt_str(c, "VERSION 1.6.0 mdcached-" PACKAGE_VERSION "\r\n");
        break;
    case MCT_VERBOSITY:
        /* memcached's levels 0..3 on top of our default (info): 0 info,
         * 1 debug, 2 and more trace */
        log_set_level(req->level >= 2 ? LOG_LVL_TRACE
                                      : LOG_LVL_INFO + (int)req->level);
        txt_reply(c, req, MCTEXT_R_OK);
        break;
    case MCT_QUIT: conn_close_after_flush(c); break;
    case MCT_MG: txt_mg(c, w, req); break;
    case MCT_MS: txt_ms(c, w, req); break;
    case MCT_MD: txt_md(c, w, req); break;
    case MCT_MA: txt_ma(c, w, req); break;
    case MCT_MN: txt_str(c, MCTEXT_R_MN); break;
    case MCT_ME: txt_me(c, req); break;
    case MCT_TGET:
    case MCT_TGETS: txt_tget(c, w, req); break;
    case MCT_TDEL: txt_tdel(c, w, req); break;
    case MCT_TPUSH: txt_tpush(c, w, req); break;
    case MCT_TPOP: txt_tpop(c, w, req); break;
    case MCT_NONE: txt_str(c, MCTEXT_R_ERROR); break;
    }
}

static void proto_text_process(struct conn *c, struct worker *w)
{
    struct mctext_limits lim = {c->srv->opt.max_item_size};

    conn_in_need(c, 1); /* every "wait for bytes" exit below sets it */
    while (!c->closing && !conn_out_full(c)) {
        struct mctext_req req;
        size_t avail;
        const uint8_t *buf = conn_in_data(c, &avail);
        ssize_t n;

        if (avail == 0)
            break;
        n = mctext_parse(buf, avail, &lim, &req);
        if (n == MCTEXT_AGAIN) {
            conn_in_need(c, req.need);
            break;
        }
        if (n == MCTEXT_ERROR) {
            STAT_INC(&w->stats, protocol_errors);
            if (req.close) {
                /* No newline within the limit: the stream is lost. */
                txt_str(c, req.err);
                conn_in_consume(c, avail);
                conn_close_after_flush(c);
                break;
            }
            txt_reply(c, &req, req.err);
            conn_in_skip(c, req.skip);
            continue;
        }
        if (!c->authed) {
            txt_auth(c, w, &req);
            conn_in_consume(c, (size_t)n);
            if (c->hold_until != 0)
                break; /* a failure: the next request waits (conn_hold) */
            continue;
        }
        txt_exec(c, w, &req);
        conn_in_consume(c, (size_t)n);
    }
    if (c->closing)
        conn_in_need(c, 1);
}

const struct proto proto_text = {"text", proto_text_process};
