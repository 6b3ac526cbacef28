/*
 * proto.c - protocol selection by the first byte of a connection, and the
 * refusal of memcached's binary protocol (0x80, deprecated upstream: an
 * error response in that protocol, then close).  Any first byte that is
 * neither 0x80 nor printable ASCII goes to the native handler, which
 * answers a wrong magic with status "bad magic" in a native frame.
 * daemon.c injects proto_detect() into the network layer (struct
 * server's proto_detect).
 */
#include "config.h"

#include "proto.h"

#include <string.h>

#include "server/auth.h"
#include "server/log.h"
#include "server/stats.h"

bool proto_auth(struct conn *c, struct worker *w, const void *user,
                size_t ulen, const void *pass, size_t plen)
{
    bool ok = c->srv->auth != NULL &&
              auth_check(c->srv->auth, user, ulen, pass, plen);
    unsigned shift;

    STAT_INC(&w->stats, auth_cmds);
    if (ok) {
        c->authed = true;
        c->auth_fails = 0;
        return true;
    }
    STAT_INC(&w->stats, auth_errors);
    c->auth_fails++;
    /* one line a second per thread at most: a flood of failures (new
     * connections each time) must not turn into a flood of log writes */
    if (w->auth_log_at != w->now || w->auth_log_at == 0) {
        if (w->auth_log_quiet > 0)
            log_info("%u more authentication failures not logged",
                     w->auth_log_quiet);
        log_info("conn %llu: authentication failed (%u on this connection)",
                 (unsigned long long)c->id, c->auth_fails);
        w->auth_log_at = w->now;
        w->auth_log_quiet = 0;
    } else {
        w->auth_log_quiet++;
    }
    if (c->auth_fails >= PROTO_AUTH_MAX_FAILS) {
        conn_close_after_flush(c);
        return false;
    }
    shift = c->auth_fails - 1 < 3 ? c->auth_fails - 1 : 3;
    conn_hold(c, 1u << shift);
    return false;
}

/* memcached's binary protocol: a 24-byte request header (magic 0x80,
 * opcode at 1, body length at 8, opaque at 12, big-endian). */
#define MCBIN_HDR 24

/*
 * Refuse it in its own terms, as memcached answers an opcode it does not
 * know: a response header (magic 0x81, the request's opcode and opaque,
 * status 0x0081 "unknown command") with the body "Unknown command", then
 * close.  A binary client reads an error instead of waiting for a header
 * that a text line cannot give it.  The first request is read whole when
 * its body is short (a login's size at most), so that closing with it
 * unread does not reset the connection before the client has the answer.
 */
static void proto_mcbin_process(struct conn *c, struct worker *w)
{
    static const char msg[] = "Unknown command";
    uint8_t rsp[MCBIN_HDR + sizeof(msg) - 1];
    size_t len;
    const uint8_t *b = conn_in_data(c, &len);
    uint32_t body;

    if (len < MCBIN_HDR) {
        conn_in_need(c, MCBIN_HDR);
        return;
    }
    body = (uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 |
           b[11];
    if (body <= PROTO_PREAUTH_MAX && len < MCBIN_HDR + body) {
        conn_in_need(c, MCBIN_HDR + body);
        return;
    }
    memset(rsp, 0, MCBIN_HDR);
    rsp[0] = 0x81;
    rsp[1] = b[1];               /* opcode */
    rsp[7] = 0x81;               /* status 0x0081: unknown command */
    rsp[11] = sizeof(msg) - 1;   /* total body length */
    memcpy(rsp + 12, b + 12, 4); /* opaque */
    memcpy(rsp + MCBIN_HDR, msg, sizeof(msg) - 1);
    conn_in_consume(c, len);
    STAT_INC(&w->stats, protocol_errors);
    (void)conn_out_bytes(c, rsp, sizeof(rsp));
    conn_close_after_flush(c);
}

const struct proto proto_mcbin_reject = {"memcached-binary",
                                         proto_mcbin_process};

const struct proto *proto_detect(uint8_t b)
{
    if (b == 0x80)
        return &proto_mcbin_reject;
    /* printable ASCII, and an empty line (memcached answers it ERROR) */
    if ((b >= 0x20 && b < 0x7f) || b == '\r' || b == '\n')
        return &proto_text;
    /* 0xB7, and any other byte: the native parser answers bad magic. */
    return &proto_native;
}

/* ---- watch lines (memcached's formats: server/net/watch.h) ------------ */

void proto_watch_get(struct conn *c, const void *key, uint32_t klen,
                     const struct record *r)
{
    char k[3 * 256];

    if (klen > 250)
        klen = 250; /* a native key may be longer: the line shows 250 */
    k[proto_uriencode(k, key, klen)] = '\0';
    watch_log(c->srv, WATCH_FETCHERS,
              "type=item_get key=%s status=%s clsid=%u cfd=%d size=%u", k,
              r != NULL ? "found" : "not_found", r != NULL ? 1u : 0u, c->fd,
              r != NULL ? record_vlen(r) : 0u);
}

void proto_watch_store(struct conn *c, const void *key, uint32_t klen,
                       const char *cmd, int status, int64_t exptime,
                       uint32_t vlen)
{
    const char *st;
    char k[3 * 256];

    switch (status) {
    case ST_OK: st = "stored"; break;
    case ST_EXISTS: st = strcmp(cmd, "add") == 0 ? "not_stored" : "exists";
        break;
    case ST_NOT_FOUND: st = "not_found"; break;
    case ST_TOO_LARGE: st = "too_large"; break;
    case ST_NO_MEMORY: st = "no_memory"; break;
    default: st = "not_stored"; break;
    }
    if (klen > 250)
        klen = 250;
    k[proto_uriencode(k, key, klen)] = '\0';
    watch_log(c->srv, WATCH_MUTATIONS,
              "type=item_store key=%s status=%s cmd=%s ttl=%lld clsid=%u "
              "cfd=%d size=%u",
              k, st, cmd, (long long)(exptime > 0 ? exptime : 0),
              status == ST_OK ? 1u : 0u, c->fd, vlen);
}
