/*
 * proto_text.c - the memcached text protocol handler
 * (docs/protocol-text.md): requests parsed by protocol/mctext.c, run
 * against the store, answered in request order.
 *
 * Values go out as the native GET path sends them: the VALUE/VA line is
 * composed into the connection's output buffer, the value is queued as a
 * reference to the record (released once sent), then "\r\n" -- a GET hit
 * allocates nothing and copies only a value of at most CONN_COPY_MAX
 * (server/net/conn.h).
 *
 * The commands of UDP datagrams run here too, on a connection without a
 * socket (c->dgram, server/net/udp.c): one request per process() call, get
 * and gets through the same GET (txt_get), the writes with --udp-writes
 * (txt_udp_allowed), everything else refused.
 */
#include "config.h"

#include "proto.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server/net/udp.h"
#include "server/log.h"
#include "server/report.h"
#include "server/metrics.h"
#include "protocol/mctext.h"
#include "server/core/store.h"
#include "server/core/alloc.h"
#include "server/core/testhook.h"
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

/*
 * A UDP reply (c->dgram) whose value would take it over --udp-reply-limit,
 * n being its VALUE line and the value: true, and the reply ends with
 * UDP_E_TOO_LARGE instead (the caller sends nothing more of it).
 */
static bool txt_udp_too_large(struct conn *c, size_t n)
{
    /* the value's "\r\n" and a final "END\r\n" must fit too */
    if (c->opending - c->dgram->reply0 + n + 2 + 5 <= c->dgram->reply_limit)
        return false;
    STAT_INC(&c->owner->stats, udp_reply_too_large);
    txt_str(c, UDP_E_TOO_LARGE);
    return true;
}

/* VALUE line, the value in place, "\r\n", and "END\r\n" after it when end
 * is set (the last key of a get).  Takes over the reference r.  False (r
 * released, the reply ended) when a UDP reply would go over its limit. */
static bool txt_value_end(struct conn *c, struct record *r, bool with_cas,
                          bool end)
{
    struct record_parts rp;
    uint32_t klen, vlen;
    size_t tail = end ? 7 : 2, n;
    uint8_t *p;

    record_parts(r, &rp);
    klen = rp.klen;
    vlen = rp.vlen;
    if (vlen <= CONN_COPY_MAX && c->dgram == NULL &&
        MCTEXT_VALUE_LINE_LEN(klen) + vlen + tail <= c->ocap - c->olen) {
        /* a value conn_out_ref() would copy: the line, the value and
         * what follows written at once, one commit (obuf has the room, so
         * it does not grow: the same condition as conn_out_ref's copy) */
        p = c->obuf + c->olen;
        n = mctext_value_line((char *)p, rp.key, klen, rp.flags, vlen,
                              with_cas, with_cas ? record_cas(r) : 0);
        memcpy(p + n, rp.value, vlen);
        if (end) /* constant lengths: stores, not a memcpy() call */
            memcpy(p + n + vlen, "\r\nEND\r\n", 7);
        else
            memcpy(p + n + vlen, "\r\n", 2);
        conn_out_commit(c, n + vlen + tail);
        store_release(c->srv->store, r);
        return true;
    }
    p = conn_out_reserve(c, MCTEXT_VALUE_LINE_LEN(klen));
    if (p == NULL) {
        store_release(c->srv->store, r);
        return true;
    }
    n = mctext_value_line((char *)p, rp.key, klen, rp.flags, vlen, with_cas,
                          record_cas(r));
    if (c->dgram != NULL && txt_udp_too_large(c, n + vlen)) {
        store_release(c->srv->store, r);
        return false;
    }
    conn_out_commit(c, n);
    conn_out_ref(c, rp.value, vlen, r);
    (void)conn_out_bytes(c, "\r\n", 2);
    if (end)
        txt_str(c, MCTEXT_R_END);
    return true;
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
    memset(v, 0, sizeof(*v));
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
    case ST_TOO_LARGE:
        /* an append or prepend that would take the record over -I:
         * memcached cannot allocate the joined item and answers
         * NOT_STORED */
        return mode == STORE_APPEND || mode == STORE_PREPEND
                   ? MCTEXT_R_NOT_STORED
                   : MCTEXT_E_TOO_LARGE;
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

#define TXT_GET_BATCH 7 /* keys of a multi-get looked up together (the
                          * reader hold slots, MDC_HOLDS) */

/*
 * The GET: get, gets, gat and gats, whichever way the request came -- the
 * parsed request, a pipelined batch, a UDP datagram (c->dgram); the
 * shortcut of "get <key>\r\n" (txt_fast) takes txt_get_one() below, the
 * same lookup, counting and reply for its one key.  key/klen is the first
 * key, it (never NULL here) holds the others.  The keys are looked up by proto_get_keys() in batches of
 * TXT_GET_BATCH; each hit is a VALUE line, the value (in place, or copied
 * when small) and "\r\n", the last one fused with "END\r\n" when it is
 * the last key.
 */
static void txt_get(struct conn *c, struct worker *w, enum mctext_cmd cmd,
                    int64_t exptime, const char *key, uint32_t klen,
                    struct mctext_iter *it)
{
    bool gat = cmd == MCT_GAT || cmd == MCT_GATS;
    bool with_cas = cmd == MCT_GETS || cmd == MCT_GATS;
    struct store_key ks[TXT_GET_BATCH];
    struct record *rs[TXT_GET_BATCH];
    bool more = it != NULL, ended = false;
    size_t n = 1, i;

    ks[0] = (struct store_key){key, klen};
    for (;;) {
        while (more && n < TXT_GET_BATCH &&
               (more = mctext_next_key(it, &key, &klen)))
            ks[n++] = (struct store_key){key, klen};
        if (n == 0)
            break;
        proto_get_keys(c, w, ks, n, gat, exptime, rs);
        for (i = 0; i < n; i++) {
            if (rs[i] == NULL)
                continue;
            ended = !more && i == n - 1;
            if (!txt_value_end(c, rs[i], with_cas, ended)) {
                /* over --udp-reply-limit: the reply ended there */
                while (++i < n)
                    if (rs[i] != NULL)
                        store_release(c->srv->store, rs[i]);
                return;
            }
        }
        if (!more)
            break;
        n = 0;
    }
    if (!ended)
        txt_str(c, MCTEXT_R_END);
}

/* txt_get() of one plain get's key (the shortcut's): one lookup, no
 * batch to gather or walk. */
static void txt_get_one(struct conn *c, struct worker *w, const char *key,
                        uint32_t klen)
{
    struct store_key k = {key, klen};
    struct record *r;

    proto_get_keys(c, w, &k, 1, false, 0, &r);
    if (r != NULL)
        (void)txt_value_end(c, r, false, true);
    else
        (void)conn_out_bytes(c, MCTEXT_R_END, sizeof(MCTEXT_R_END) - 1);
}

/* A parsed get, gets, gat or gats. */
static void txt_get_req(struct conn *c, struct worker *w,
                        const struct mctext_req *req)
{
    struct mctext_iter it;
    const char *key;
    uint32_t klen;

    mctext_iter_init(&it, req);
    if (!mctext_next_key(&it, &key, &klen)) { /* the parser refuses it */
        txt_str(c, MCTEXT_R_END);
        return;
    }
    txt_get(c, w, req->cmd, req->exptime, key, klen, &it);
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
    if (watch_wants(c->srv, WATCH_MUTATIONS))
        proto_watch_store(c, req->key, req->klen,
                          req->cmd == MCT_TSET ? "set"
                                               : mctext_cmd_name(req->cmd),
                          st, req->exptime, req->vlen);
    if (proto_detail_on(c->srv))
        stats_detail_count(c->srv, req->key, req->klen, DETAIL_SET, false);
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

    if (proto_detail_on(c->srv))
        stats_detail_count(c->srv, req->key, req->klen, DETAIL_DEL, false);
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

/* The answer to dump, written by the dump thread (c is parked). */
static void txt_dump_done(struct conn *c, int rc, const char *msg)
{
    char line[300];

    if (rc < 0) {
        snprintf(line, sizeof(line), "SERVER_ERROR dump failed: %s\r\n", msg);
        txt_str(c, line);
        return;
    }
    txt_str(c, MCTEXT_R_OK);
}

/* dump: answers once the -f file is safe on disk.  The connection waits
 * parked (conn_park); this thread goes on with the others. */
static void txt_dump(struct conn *c)
{
    if (c->srv->dump_park == NULL) {
        txt_str(c, "SERVER_ERROR no dump file (-f)\r\n");
        return;
    }
    conn_park(c, c->srv->dump_park, txt_dump_done);
}

/* flush_all: at once.  A delay would need a timer the store lacks; it is
 * refused rather than run early (docs/protocol-text.md). */
static void txt_flush(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    if (c->srv->opt.disable_flush_all) { /* -F */
        /* refused, and like every reply kept back under noreply: a
         * pipelining client must not pair it with its next request */
        txt_reply(c, req, MCTEXT_E_FLUSH_OFF);
        return;
    }
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

static void txt_conn_info(void *ctx, const struct conn_info *ci)
{
    struct conn *c = ctx;
    char name[32], val[32];

    /* memcached 1.6's lines: a UDP socket is marked, a connection names
     * the listener that accepted it */
    if (ci->kind == CI_UDP) {
        snprintf(name, sizeof(name), "%d:UDP", ci->fd);
        txt_stats_line(c, name, "UDP");
    }
    snprintf(name, sizeof(name), "%d:addr", ci->fd);
    txt_stats_line(c, name, ci->addr);
    if (ci->kind == CI_CONN) {
        snprintf(name, sizeof(name), "%d:listen_addr", ci->fd);
        txt_stats_line(c, name, ci->listen_addr);
    }
    snprintf(name, sizeof(name), "%d:state", ci->fd);
    txt_stats_line(c, name, ci->state);
    snprintf(name, sizeof(name), "%d:secs_since_last_cmd", ci->fd);
    snprintf(val, sizeof(val), "%llu", (unsigned long long)ci->idle_s);
    txt_stats_line(c, name, val);
}

static void txt_line(void *ctx, const char *line)
{
    struct conn *c = ctx;

    txt_str(c, line);
    txt_str(c, "\r\n");
}

static bool arg_is(const struct mctext_req *req, const char *s)
{
    size_t n = strlen(s);

    return req->arglen == n && memcmp(req->arg, s, n) == 0;
}

/* One unsigned 32-bit decimal of a stats argument, from *p (spaces
 * skipped); 1 read, 0 none left, -1 not a number. */
static int stats_arg_u32(const char **p, const char *end, uint32_t *out)
{
    const char *s = *p;
    uint64_t v = 0;

    while (s < end && *s == ' ')
        s++;
    if (s == end)
        return 0;
    *p = s;
    while (s < end && *s != ' ') {
        if (*s < '0' || *s > '9' || v > UINT32_MAX / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
        s++;
    }
    if (v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    *p = s;
    return 1;
}

/* stats cachedump <class> <limit>, memcached's replies to bad arguments. */
static void txt_cachedump(struct conn *c, const struct mctext_req *req)
{
    const char *p = req->arg + 9, *end = req->arg + req->arglen;
    uint32_t cls = 0, limit = 0;
    int a = stats_arg_u32(&p, end, &cls);
    int b = a > 0 ? stats_arg_u32(&p, end, &limit) : 0;

    if (a < 0 || b < 0) {
        txt_str(c, "CLIENT_ERROR bad command line format\r\n");
        return;
    }
    if (a == 0 || b == 0) {
        txt_str(c, "CLIENT_ERROR bad command line\r\n");
        return;
    }
    if (cls >= STATS_CACHEDUMP_CLASSES) {
        txt_str(c, "CLIENT_ERROR Illegal slab id\r\n");
        return;
    }
    stats_cachedump(c->srv, cls, limit, txt_line, c);
    txt_str(c, MCTEXT_R_END);
}

/* stats [settings|threads|tags|items|slabs|sizes|conns|cachedump|reset|
 * detail on|off|dump]; another group: ERROR (docs/protocol-text.md,
 * "stats"). */
static void txt_stats(struct conn *c, struct worker *w,
                      const struct mctext_req *req)
{
    struct server *srv = c->srv;

    STAT_INC(&w->stats, cmd_stats);
    if (req->arg == NULL) {
        stats_collect_conn(srv, txt_stats_line, c, conn_bufs_held(c));
#ifdef MDC_DEBUG_COMMANDS
    } else if (req->arglen == 11 && memcmp(req->arg, "store_check", 11) == 0) {
        /* --enable-debug-commands only: needs a quiescent store (no
         * writer, no expiry due), as bench/soak.sh arranges */
        char msg[256];
        txt_stats_line(c, "store_check",
                       store_check(srv->store, msg, sizeof(msg)) == 0
                           ? "ok"
                           : msg);
    } else if (arg_is(req, "stall_tick")) {
        /* --enable-debug-commands only: this thread's next tick holds at
         * the test's gate (server/core/testhook.h) */
        txt_str(c, testhook_tick_gate_arm() == 0
                       ? MCTEXT_R_OK
                       : "CLIENT_ERROR no MDC_TEST_TICK_GATE\r\n");
        return;
#endif
    } else if (stats_collect_group(srv, req->arg, req->arglen, NULL,
                                   NULL) == 0) { /* settings, threads, tags */
        (void)stats_collect_group(srv, req->arg, req->arglen, txt_stats_line,
                                  c);
    } else if (arg_is(req, "items")) {
        stats_collect_items(srv, txt_stats_line, c);
    } else if (arg_is(req, "slabs")) {
        stats_collect_slabs(srv, txt_stats_line, c);
    } else if (arg_is(req, "sizes")) {
        txt_stats_line(c, "sizes_status", "disabled");
    } else if (arg_is(req, "conns")) {
        conn_visit_all(srv, txt_conn_info, c);
    } else if (req->arglen >= 9 && memcmp(req->arg, "cachedump", 9) == 0 &&
               (req->arglen == 9 || req->arg[9] == ' ')) {
        txt_cachedump(c, req);
        return;
    } else if (arg_is(req, "reset")) {
        stats_reset(srv);
        txt_str(c, "RESET\r\n");
        return;
    } else if (arg_is(req, "detail on")) {
        stats_detail_set(srv, true);
        txt_str(c, MCTEXT_R_OK);
        return;
    } else if (arg_is(req, "detail off")) {
        stats_detail_set(srv, false);
        txt_str(c, MCTEXT_R_OK);
        return;
    } else if (arg_is(req, "detail dump")) {
        stats_detail_dump(srv, txt_line, c);
    } else if (req->arglen >= 6 && memcmp(req->arg, "detail", 6) == 0) {
        txt_str(c, "CLIENT_ERROR usage: stats detail on|off|dump\r\n");
        return;
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
    const struct mctext_meta *m = &req->meta;
    struct mctext_meta_vals v;
    struct record *r;
    struct store_mget q;
    struct store_mget_res res;

    memset(&q, 0, sizeof(q));
    q.no_bump = MF('u') != 0;
    q.touch = MF('T') != 0;
    q.exptime = m->ttl;
    q.vivify = MF('N') != 0;
    q.vivify_exptime = m->vivify;
    q.recache = MF('R') != 0;
    q.recache_exptime = m->recache;
    q.recache_after_touch = m->recache_after_touch;
    r = store_mget(st, req->key, req->klen, &q, &res);
    if (watch_wants(c->srv, WATCH_FETCHERS))
        proto_watch_get(c, req->key, req->klen, r);
    /* a vivified record is the miss it stands for */
    stats_count_get(&w->stats, q.touch, r != NULL && !res.created);
    if (r == NULL) {
        if (!MF('q'))
            txt_meta(c, "EN", -1, req, NULL);
        return;
    }
    txt_vals(st, r, &v);
    v.hit_before = res.prev.hit_before;
    v.last = res.prev.idle_s;
    v.pending = res.pending;
    v.stale = res.stale;
    v.won = res.won;
    if (!MF('v')) {
        txt_meta(c, "HD", -1, req, &v);
        store_release(st, r);
        return;
    }
    if (c->dgram != NULL &&
        txt_udp_too_large(c, MCTEXT_META_LINE_MAX + (size_t)v.size)) {
        store_release(st, r); /* --udp-writes: over --udp-reply-limit */
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
    it.invalidate = MF('I') != 0; /* with C: an older cas stores stale */
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
    if (watch_wants(c->srv, WATCH_MUTATIONS)) {
        static const char *const names[] = {
            [STORE_SET] = "set", [STORE_ADD] = "add",
            [STORE_REPLACE] = "replace", [STORE_APPEND] = "append",
            [STORE_PREPEND] = "prepend", [STORE_CAS] = "cas"};

        proto_watch_store(c, req->key, req->klen,
                          (size_t)mode < sizeof(names) / sizeof(names[0]) &&
                                  names[mode] != NULL
                              ? names[mode]
                              : "set",
                          st, req->meta.ttl, req->vlen);
    }
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
    case ST_TOO_LARGE: /* joined over -I: NS, as memcached (above) */
        if (mode == STORE_APPEND || mode == STORE_PREPEND) {
            txt_meta(c, "NS", -1, req, &v);
            break;
        }
        txt_str(c, MCTEXT_E_TOO_LARGE);
        break;
    default: txt_str(c, txt_put_status(st, mode)); break;
    }
}

static void txt_md(struct conn *c, struct worker *w,
                   const struct mctext_req *req)
{
    uint64_t cas = MF('C') ? req->meta.cas : 0;
    /* I marks stale instead of deleting; T goes with I only (memcached
     * ignores it otherwise) */
    int st = MF('I') ? store_invalidate(c->srv->store, req->key, req->klen,
                                        cas, MF('T') != 0, req->meta.ttl)
                     : store_delete(c->srv->store, req->key, req->klen, cas);

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
    rc = store_incr_cas(st, req->key, req->klen, m->delta, decr,
                        MF('C') ? m->cas : 0, &val, &cas);
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
    case ST_EXISTS: txt_meta(c, "EX", -1, req, NULL); break; /* C mismatch */
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

/* ---- lru_crawler metadump ------------------------------------------------ */

#define MDUMP_TURN_CLASSES 1024     /* hash classes walked per turn ... */
#define MDUMP_TURN_BYTES (256u << 10) /* ... or bytes of lines per turn */

/* The lines of one hash class, formatted under its read lock. */
struct mdump_buf {
    char *p;
    size_t len, cap;
    bool oom;
    int64_t now; /* wall clock, for la */
};

static bool mdump_room(struct mdump_buf *b, size_t n)
{
    if (b->len + n <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap * 2 : 8192;
    char *np;

    while (nc < b->len + n)
        nc *= 2;
    np = mdc_realloc(b->p, nc);
    if (np == NULL) {
        b->oom = true;
        return false;
    }
    b->p = np;
    b->cap = nc;
    return true;
}

/* A key as memcached's metadump and watch show it: URL-encoded, bytes
 * other than letters, digits and "-._~" as %XX.  out needs 3 * klen. */
size_t proto_uriencode(char *out, const void *key, uint32_t klen)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *k = key;
    size_t n = 0;
    uint32_t i;

    for (i = 0; i < klen; i++) {
        unsigned char ch = k[i];

        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
            ch == '~') {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    return n;
}

/* Under a class's read lock: one line per record, into the buffer only
 * (nothing else is called). */
static void mdump_record(void *ctx, struct store *st, const struct record *r)
{
    struct mdump_buf *b = ctx;
    uint32_t klen = record_klen(r), ntags = record_ntags(r), i;
    int64_t exp = record_expiry_wall(st, r);
    uint64_t idle_s = ((uint64_t)record_idle_ticks(st, r) << 20) / 1000000000u;
    char *p;

    if (b->oom || !mdump_room(b, 3 * (size_t)klen + 160 + (size_t)ntags * 24))
        return;
    p = b->p + b->len;
    memcpy(p, "key=", 4);
    p += 4;
    p += proto_uriencode(p, record_key(r), klen);
    p += sprintf(p, " exp=%" PRId64 " la=%" PRId64 " cas=%" PRIu64
                    " fetch=%s cls=1 size=%zu",
                 exp == 0 ? (int64_t)-1 : exp, b->now - (int64_t)idle_s,
                 record_cas(r), record_fetched(r) ? "yes" : "no",
                 record_req_bytes(r));
    for (i = 0; i < ntags; i++) {
        struct mdc_tag t = record_tag(r, i);

        p += sprintf(p, "%s%" PRId32 ":%" PRId32, i == 0 ? " tags=" : ",",
                     t.tkey, t.tval);
    }
    *p++ = '\n';
    b->len = (size_t)(p - b->p);
}

/* The class list of metadump: 1 when it names class 1 (every record is
 * in class 1, as for stats cachedump), 0 when only other valid classes,
 * -1 when an entry is not a class (memcached: 1 to 63). */
static int mdump_classes_arg(const char *p, size_t n)
{
    int one = 0;

    while (n > 0) {
        uint32_t v = 0;
        size_t d = 0;

        while (d < n && p[d] >= '0' && p[d] <= '9' && v < 1000)
            v = v * 10 + (uint32_t)(p[d++] - '0');
        if (d == 0 || v == 0 || v > 63 || (d < n && p[d] != ','))
            return -1;
        one |= v == 1;
        if (d < n)
            d++; /* the comma */
        if (d == n && p[d - 1] == ',')
            return -1;
        p += d;
        n -= d;
    }
    return one;
}

/*
 * lru_crawler metadump all|hash|<class>[,<class>...]: memcached's key dump,
 * streamed.  The store is walked one hash class (one bucket's records) at
 * a time under that class's read lock; the lines go into the output
 * between classes.  The request stays unconsumed until the walk is over:
 * when the output is full (a slow reader) or this turn's share is done,
 * false is returned and process() runs it again once there is room (the
 * walk goes on from c->mdump.next), so a slow reader holds no lock, and
 * the other connections of the thread have their turns.  Records stored
 * during the walk may or may not be listed; each record present from the
 * start to the end is listed once.  Other subcommands answer ERROR.
 */
static bool txt_lru_crawler(struct conn *c, const struct mctext_req *req)
{
    struct store *st = c->srv->store;
    const char *a = req->arg, *end = req->arg + req->arglen, *s;
    struct mdump_buf b = {NULL, 0, 0, false, (int64_t)time(NULL)};
    size_t bytes = 0;
    unsigned walked = 0;
    int which;

    while (end > a && end[-1] == ' ')
        end--;
    if ((size_t)(end - a) < 9 || memcmp(a, "metadump ", 9) != 0) {
        txt_str(c, MCTEXT_R_ERROR);
        return true;
    }
    a += 9;
    while (a < end && *a == ' ')
        a++;
    for (s = a; s < end && *s != ' '; s++)
        ;
    if (a == end || s != end) { /* no argument, or more than one */
        txt_str(c, MCTEXT_R_ERROR);
        return true;
    }
    if ((s - a == 3 && memcmp(a, "all", 3) == 0) ||
        (s - a == 4 && memcmp(a, "hash", 4) == 0))
        which = 1;
    else
        which = mdump_classes_arg(a, (size_t)(s - a));
    if (which < 0) {
        txt_str(c, "BADCLASS invalid class id\r\n");
        return true;
    }
    if (which == 0) {
        txt_str(c, MCTEXT_R_END);
        return true;
    }
    if (c->mdump.classes == 0) { /* a new walk */
        c->mdump.classes = store_walk_classes(st);
        c->mdump.next = 0;
    }
    while (c->mdump.next < c->mdump.classes) {
        if (conn_out_full(c))
            goto again; /* run again once the reader made room */
        if (walked >= MDUMP_TURN_CLASSES || bytes >= MDUMP_TURN_BYTES) {
            conn_yield(c);
            goto again;
        }
        b.len = 0;
        (void)store_walk_class(st, c->mdump.classes, c->mdump.next,
                               mdump_record, &b);
        if (b.oom) {
            txt_str(c, TXT_E_OOM);
            break;
        }
        if (b.len > 0)
            (void)conn_out_bytes(c, b.p, b.len);
        bytes += b.len;
        walked++;
        c->mdump.next++;
    }
    c->mdump.classes = 0;
    mdc_free(b.p);
    if (!b.oom)
        txt_str(c, MCTEXT_R_END);
    return true;
again:
    mdc_free(b.p);
    return false;
}

/* ---- watch ----------------------------------------------------------------- */

/*
 * watch [fetchers|mutations|evictions|connevents]...: OK, then the
 * connection becomes a watcher (server/net/watch.h): once the OK and
 * whatever came before it are out, its socket goes to the watch thread
 * and the connection ends (its later requests are not run, as in
 * memcached).  Not over TLS: the watch thread writes plain bytes.
 */
static void txt_watch(struct conn *c, const struct mctext_req *req)
{
    unsigned t = watch_parse(req->arg, req->arglen);

    if (t == 0) { /* a type memcached has and mdcached has not, or none */
        txt_str(c, MCTEXT_R_ERROR);
        return;
    }
    if (c->filtered) {
        txt_str(c, "CLIENT_ERROR watch is not served over TLS\r\n");
        return;
    }
    txt_str(c, MCTEXT_R_OK);
    c->watch_types = (uint8_t)t;
    conn_close_after_flush(c);
}

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
            if (!txt_value_end(c, set.recs[i], req->cmd == MCT_TGETS,
                               false)) {
                /* UDP: over --udp-reply-limit, the reply ended there
                 * (that record released); the rest go back */
                while (++i < set.n)
                    store_release(st, set.recs[i]);
                set.n = 0;
                store_recset_release(st, &set);
                return;
            }
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
    if (req->stale) /* I [T<ttl>]: mark stale instead */
        rc = store_stale_by_tag(c->srv->store, req->tkey, tv, req->nlist,
                                req->stale_ttl, req->exptime, &n);
    else
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
        stats_count_put(&w->stats, 0, rc);
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
    if (rc == ST_OK && r != NULL) {
        /* with END; over UDP's reply limit, the reply ends without it */
        (void)txt_value_end(c, r, false, true);
        return;
    }
    if (rc != ST_OK && rc != ST_NOT_FOUND) {
        txt_str(c, TXT_E_OOM);
        return;
    }
    txt_str(c, MCTEXT_R_END);
}

/* ---- authentication (--auth-file) --------------------------------------- */

#define TXT_E_UNAUTH "CLIENT_ERROR unauthenticated\r\n"
#define TXT_E_AUTHFAIL "CLIENT_ERROR authentication failure\r\n"
#define TXT_E_PREAUTH_LONG                                                     \
    "CLIENT_ERROR request too long before authentication\r\n"

/* A request over PROTO_PREAUTH_MAX before authentication: refused, the
 * input dropped, the connection closed. */
static void txt_preauth_too_long(struct conn *c, struct worker *w)
{
    size_t avail;

    STAT_INC(&w->stats, protocol_errors);
    txt_str(c, TXT_E_PREAUTH_LONG);
    (void)conn_in_data(c, &avail);
    conn_in_consume(c, avail);
    conn_close_after_flush(c);
}

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
    case MCT_GATS: txt_get_req(c, w, req); break;
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
        txt_str(c, "VERSION " MDC_TEXT_VERSION "\r\n");
        break;
    case MCT_VERBOSITY:
        /* memcached's levels 0..3 on top of our default (info): 0 info,
         * 1 debug, 2 and more trace */
        log_set_level(req->level >= 2 ? LOG_LVL_TRACE
                                      : LOG_LVL_INFO + (int)req->level);
        txt_reply(c, req, MCTEXT_R_OK);
        break;
    case MCT_QUIT: conn_close_after_flush(c); break;
    case MCT_DUMP: txt_dump(c); break;
    case MCT_CACHE_MEMLIMIT:
        if (req->level < 8) {
            txt_reply(c, req, MCTEXT_E_MEMLIMIT_SMALL);
            break;
        }
        /* lowering it evicts down to the new limit now */
        (void)store_set_mem_limit(c->srv->store, (size_t)req->level << 20);
        log_info("cache_memlimit: %u MiB", req->level);
        txt_reply(c, req, MCTEXT_R_OK);
        break;
    case MCT_SHUTDOWN:
        if (!c->srv->opt.enable_shutdown) { /* memcached: only with -A */
            txt_str(c, MCTEXT_E_SHUTDOWN_OFF);
            break;
        }
        /* both modes stop gracefully, as SIGTERM does */
        log_info("shutdown%s requested by conn %llu",
                 req->arg != NULL ? " graceful" : "",
                 (unsigned long long)c->id);
        conn_close_after_flush(c);
        kill(getpid(), SIGTERM);
        break;
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
    case MCT_WATCH: txt_watch(c, req); break;
    case MCT_LRU_CRAWLER: /* UDP: refused before it gets here */
    case MCT_NONE: txt_str(c, MCTEXT_R_ERROR); break;
    }
}

/*
 * The parser refused a storage command's value as over -I before it
 * reached the store: count it as a refused store and remove the record it
 * would have overwritten (store_drop_stale), as store_put() does.
 */
static void txt_refused_large(struct conn *c, struct worker *w,
                              const struct mctext_req *req)
{
    enum store_mode mode = STORE_SET;
    uint64_t cas = 0;

    switch (req->cmd) {
    case MCT_SET:
    case MCT_TSET: break;
    case MCT_REPLACE: mode = STORE_REPLACE; break;
    case MCT_CAS:
        mode = STORE_CAS;
        cas = req->cas;
        break;
    case MCT_MS:
        if (req->meta.mode == 'R')
            mode = STORE_REPLACE;
        else if (req->meta.mode != 0 && req->meta.mode != 'S')
            mode = STORE_ADD; /* E, A, P: nothing overwritten */
        if (req->meta.flags & MCTEXT_MF('C')) {
            cas = req->meta.cas;
            if (mode != STORE_ADD)
                mode = STORE_CAS;
        }
        break;
    default: return; /* tpush: a new key; others have no value */
    }
    STAT_INC(&w->stats, cmd_set);
    stats_count_put(&w->stats, mode == STORE_CAS, ST_TOO_LARGE);
    if (req->key != NULL)
        (void)store_drop_stale(c->srv->store, mode, req->key, req->klen, cas);
}

/*
 * The commands --udp-writes lets a datagram run besides get and gets:
 * what memcached 1.6 serves over UDP that changes or reads the store
 * (stores, delete, incr/decr, touch, gat, the meta commands) and the tag
 * commands.  flush_all and shutdown never run from a datagram, nor do
 * the commands about the daemon (stats, verbosity, cache_memlimit, dump,
 * version, quit).
 */
static bool txt_udp_write(enum mctext_cmd cmd)
{
    switch (cmd) {
    case MCT_SET: case MCT_ADD: case MCT_REPLACE: case MCT_APPEND:
    case MCT_PREPEND: case MCT_CAS: case MCT_DELETE: case MCT_INCR:
    case MCT_DECR: case MCT_TOUCH: case MCT_GAT: case MCT_GATS:
    case MCT_MG: case MCT_MS: case MCT_MD: case MCT_MA: case MCT_MN:
    case MCT_ME: case MCT_TSET: case MCT_TGET: case MCT_TGETS:
    case MCT_TDEL: case MCT_TPUSH: case MCT_TPOP:
        return true;
    default: return false;
    }
}

/*
 * A datagram's command other than get/gets: true when it runs (a write
 * under --udp-writes, counted as udp_writes), else refused here -- not
 * run, and with noreply not answered either (memcached sends nothing to
 * noreply), so udp_refused is the trace it leaves; a write the option
 * would serve, and flush_all and shutdown always, count in
 * udp_writes_refused too.
 */
static bool txt_udp_allowed(struct conn *c, struct worker *w,
                            const struct mctext_req *req)
{
    bool write = txt_udp_write(req->cmd);

    if (write && c->srv->opt.udp_writes) {
        STAT_INC(&w->stats, udp_writes);
        return true;
    }
    STAT_INC(&w->stats, udp_refused);
    if (write || req->cmd == MCT_FLUSH_ALL || req->cmd == MCT_SHUTDOWN)
        STAT_INC(&w->stats, udp_writes_refused);
    txt_reply(c, req, c->srv->opt.udp_writes ? UDP_E_NOT_SERVED
                                             : UDP_E_REFUSED);
    return false;
}

/*
 * The two commands a cache mostly sees, "get <key>\r\n" and
 * "mg <key> v\r\n", answered without the general parser (no tokenizing,
 * no request structure to clear).  Anything else -- another command, more
 * keys or flags, a bare "\n", a key the parser would refuse, a line not yet
 * whole, an mg hit on a stale record or one whose win token went out --
 * returns 0 and takes the general path, which gives the same reply for
 * these two shapes.  Returns the bytes consumed.
 */
/* The shortcut's "mg <key> v": the hit's "VA <len>" reply, or "EN". */
static bool txt_fast_mg(struct conn *c, struct worker *w, const uint8_t *k,
                        uint32_t klen)
{
    struct store *st = c->srv->store;
    struct record *r = store_get(st, k, klen);
    uint32_t vlen;
    uint8_t *o;
    size_t n;

    if (r != NULL && record_meta_marked(r)) {
        /* stale or its win out: the general path answers X, W, Z */
        store_release(st, r);
        return false;
    }
    stats_count_get(&w->stats, 0, r != NULL);
    if (watch_wants(c->srv, WATCH_FETCHERS))
        proto_watch_get(c, k, klen, r);
    if (r == NULL) {
        txt_str(c, "EN\r\n");
        return true;
    }
    vlen = record_vlen(r);
    o = conn_out_reserve(c, 3 + 10 + 2);
    if (o == NULL) {
        store_release(st, r);
        return true;
    }
    memcpy(o, "VA ", 3);
    n = 3 + mctext_u64((char *)o + 3, vlen);
    o[n++] = '\r';
    o[n++] = '\n';
    conn_out_commit(c, n);
    conn_out_ref(c, record_value(r), vlen, r);
    (void)conn_out_bytes(c, "\r\n", 2);
    return true;
}

static size_t txt_fast(struct conn *c, struct worker *w, const uint8_t *b,
                       size_t len)
{
    const uint8_t *k, *p, *end = b + len;
    uint32_t klen;
    bool mg;

    if (len > 4 && memcmp(b, "get ", 4) == 0)
        k = b + 4, mg = false;
    else if (len > 3 && memcmp(b, "mg ", 3) == 0 &&
             c->dgram == NULL) /* UDP's mg: the general path (refused,
                                  or with --udp-writes its reply limit) */
        k = b + 3, mg = true;
    else
        return 0;
    p = mctext_key_end(k, end - k > MCTEXT_KEY_MAX + 4
                              ? k + MCTEXT_KEY_MAX + 4 : end);
    klen = (uint32_t)(p - k);
    if (klen == 0 || klen > MCTEXT_KEY_MAX)
        return 0;
    if (mg) {
        if (end - p < 4 || memcmp(p, " v\r\n", 4) != 0)
            return 0;
        return txt_fast_mg(c, w, k, klen) ? (size_t)(p + 4 - b) : 0;
    }
    if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
        return 0;
    /* the GET every get is served by, the key already split out */
    txt_get_one(c, w, (const char *)k, klen);
    return (size_t)(p + 2 - b);
}

#define TXT_PREFETCH_MAX 32 /* GETs of one batch whose slots are prefetched */

/*
 * A batch of several requests: once the first has run and more input is
 * left, prefetch the bucket slot of each following "get <key>" / "mg <key>"
 * before their lookups, so those cache misses overlap instead of coming one
 * after another.  A lone request (W1) costs one comparison.
 */
static void txt_prefetch(struct conn *c, const uint8_t *b, size_t len)
{
    const uint8_t *end = b + len, *nl;
    struct store_key ks[TXT_PREFETCH_MAX];
    unsigned n = 0;

    while (n < TXT_PREFETCH_MAX && b < end) {
        const uint8_t *k, *p;

        if (end - b > 4 && memcmp(b, "get ", 4) == 0)
            k = b + 4;
        else if (end - b > 3 && memcmp(b, "mg ", 3) == 0)
            k = b + 3;
        else
            break;
        p = mctext_key_end(k, end - k > MCTEXT_KEY_MAX ?
                                  k + MCTEXT_KEY_MAX + 1 : end);
        if (p - k > MCTEXT_KEY_MAX)
            break; /* no key: the parser refuses it */
        if (p >= end || (nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
            break;
        if (p > k)
            ks[n++] = (struct store_key){k, (uint32_t)(p - k)};
        b = nl + 1;
    }
    store_prefetch_batch(c->srv->store, ks, n);
}

/* The --metrics histogram a request is timed in. */
static enum metrics_cmd txt_metrics_cmd(enum mctext_cmd cmd)
{
    switch (cmd) {
    case MCT_GET: case MCT_GETS: case MCT_GAT: case MCT_GATS: case MCT_MG:
        return MC_GET;
    case MCT_SET: case MCT_ADD: case MCT_REPLACE: case MCT_APPEND:
    case MCT_PREPEND: case MCT_CAS: case MCT_TSET: case MCT_MS:
        return MC_SET;
    case MCT_DELETE: case MCT_MD: return MC_DELETE;
    case MCT_INCR: case MCT_DECR: case MCT_MA: return MC_INCR;
    case MCT_TOUCH: return MC_TOUCH;
    case MCT_TGET: case MCT_TGETS: return MC_GET_BY_TAG;
    case MCT_TDEL: return MC_DEL_BY_TAG;
    case MCT_TPUSH: case MCT_TPOP: return MC_TSTACK;
    case MCT_FLUSH_ALL: return MC_FLUSH;
    case MCT_STATS: return MC_STATS;
    default: return MC_OTHER;
    }
}

/* The request at buf may be parsed: its line is whole, or long enough
 * to be refused.  false: wait for more bytes (need set), or the
 * connection is closing. */
static bool txt_line_ready(struct conn *c, struct worker *w,
                           const uint8_t *buf, size_t avail)
{
    /* Look for the line's end only in bytes not scanned before, so a long
     * line arriving in pieces costs time linear in its length. */
    const uint8_t *nl = c->iscan < avail ? memchr(buf + c->iscan, '\n',
                                                  avail - c->iscan)
                                         : NULL;

    if (nl != NULL) {
        c->iscan = (size_t)(nl - buf); /* no newline before it */
        return true;
    }
    c->iscan = avail;
    if (!c->authed && avail > PROTO_PREAUTH_MAX) {
        txt_preauth_too_long(c, w);
        return false;
    }
    if (avail < mctext_line_limit(buf, avail)) {
        conn_in_need(c, avail + 1);
        return false;
    }
    return true;
}

/* A datagram's request refused, whatever it was. */
static void txt_refuse_dgram(struct conn *c, struct worker *w,
                             const struct mctext_req *req, size_t avail)
{
    /* a too large value refused removes the record it would have
     * replaced, as over TCP, when UDP may write */
    if (strcmp(req->err, MCTEXT_E_TOO_LARGE) == 0 &&
        c->srv->opt.udp_writes && txt_udp_write(req->cmd))
        txt_refused_large(c, w, req);
    txt_reply(c, req, req->err);
    conn_in_consume(c, req->skip < avail ? req->skip : avail);
}

/* mctext_parse() refused the request: answer it and skip it.  false:
 * stop processing (the connection closes, or a datagram ends). */
static bool txt_refuse(struct conn *c, struct worker *w,
                       struct mctext_req *req, size_t avail)
{
    if (!c->authed && req->skip > PROTO_PREAUTH_MAX) {
        txt_preauth_too_long(c, w);
        return false;
    }
    if (req->close && c->dgram != NULL)
        return false; /* UDP: no more bytes come, no answer (udp.c) */
    STAT_INC(&w->stats, protocol_errors);
    if (req->close) {
        /* No newline within the limit: the stream is lost. */
        txt_str(c, req->err);
        conn_in_consume(c, avail);
        conn_close_after_flush(c);
        return false;
    }
    if (c->dgram != NULL) {
        txt_refuse_dgram(c, w, req, avail);
        return true;
    }
    /* before authentication the store is not touched: the too large
     * value is only refused (and skipped) */
    if (c->authed && strcmp(req->err, MCTEXT_E_TOO_LARGE) == 0)
        txt_refused_large(c, w, req);
    /* -F refuses flush_all before looking at its delay, as memcached
     * does */
    if (req->cmd == MCT_FLUSH_ALL && strcmp(req->err, MCTEXT_E_EXPTIME) == 0 &&
        c->srv->opt.disable_flush_all)
        req->err = MCTEXT_E_FLUSH_OFF;
    txt_reply(c, req, req->err);
    conn_in_skip(c, req->skip);
    return true;
}

/* Run a parsed request of n bytes.  false: stop processing (a failed
 * login's hold, or the rest of an lru_crawler walk to come). */
static bool txt_run(struct conn *c, struct worker *w,
                    const struct mctext_req *req, size_t n)
{
    uint64_t t0;

    if (!c->authed) {
        txt_auth(c, w, req);
        conn_in_consume(c, n);
        /* a failure: the next request waits (conn_hold) */
        return c->hold_until == 0;
    }
    if (c->dgram != NULL && req->cmd != MCT_GET && req->cmd != MCT_GETS &&
        !txt_udp_allowed(c, w, req)) {
        conn_in_consume(c, n);
        return true;
    }
    if (req->cmd == MCT_LRU_CRAWLER && c->dgram == NULL) {
        if (!txt_lru_crawler(c, req))
            return false; /* the rest of the walk: this request again */
        conn_in_consume(c, n);
        return true;
    }
    t0 = metrics_start(c->srv);
    txt_exec(c, w, req);
    if (t0 != 0)
        metrics_observe(c->srv, w->id, txt_metrics_cmd(req->cmd), t0);
    conn_in_consume(c, n);
    return true;
}

/* A whole line is in, its value is not: wait for it. */
static void txt_wait_body(struct conn *c, struct worker *w,
                          const struct mctext_req *req)
{
    if (!c->authed && req->need > PROTO_PREAUTH_MAX)
        txt_preauth_too_long(c, w);
    else
        conn_in_need_body(c, req->need);
}

/* The get shortcut may answer: it counts nothing but the get, so not
 * before the connection has authenticated, nor while stats detail or
 * --metrics want each request counted or timed. */
static bool txt_fast_on(const struct conn *c)
{
    return c->authed && !proto_detail_on(c->srv) && c->srv->metrics == NULL;
}

/* Another request may run: not closing, output under its bound, not
 * parked. */
static bool txt_more(const struct conn *c)
{
    return !c->closing && !conn_out_full(c) && c->park == NULL;
}

static void proto_text_process(struct conn *c, struct worker *w)
{
    struct mctext_limits lim = {c->srv->opt.max_item_size};
    uint64_t budget = c->srv->opt.reqs_per_event;
    unsigned nreq = 0;

    conn_in_need(c, 1); /* every "wait for bytes" exit below sets it */
    while (txt_more(c)) {
        struct mctext_req req;
        size_t avail;
        const uint8_t *buf = conn_in_data(c, &avail);
        ssize_t n;

        if (avail == 0 || (c->dgram != NULL && nreq > 0))
            break; /* a datagram's requests: a reply each (udp.c) */
        if (budget-- == 0) {
            conn_yield(c);
            break;
        }
        if (nreq++ == 1 && c->authed)
            txt_prefetch(c, buf, avail);
        if (txt_fast_on(c) && (n = (ssize_t)txt_fast(c, w, buf, avail)) > 0) {
            conn_in_consume(c, (size_t)n);
            continue;
        }
        if (!txt_line_ready(c, w, buf, avail))
            break;
        n = mctext_parse(buf, avail, &lim, &req);
        if (n == MCTEXT_AGAIN) {
            txt_wait_body(c, w, &req);
            break;
        }
        if (n == MCTEXT_ERROR ? !txt_refuse(c, w, &req, avail)
                              : !txt_run(c, w, &req, (size_t)n))
            break;
    }
    if (c->closing)
        conn_in_need(c, 1);
}

const struct proto proto_text = {"text", proto_text_process};
