/*
 * proto.c - protocol selection by the first byte of a connection
 * (memcached's binary protocol 0x80, its text protocol, or the native
 * one), and the login every protocol shares (proto_auth).  Any first byte
 * that is neither 0x80 nor printable ASCII goes to the native handler,
 * which answers a wrong magic with status "bad magic" in a native frame.
 * daemon.c injects proto_detect() into the network layer (struct
 * server's proto_detect).  Over TLS the byte is the first decrypted one.
 */
#include "config.h"

#include "proto.h"

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

const struct proto *proto_detect(uint8_t b)
{
    if (b == 0x80)
        return &proto_mcbin;
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

const char *proto_store_mode_name(enum store_mode mode)
{
    switch (mode) {
    case STORE_ADD: return "add";
    case STORE_REPLACE: return "replace";
    case STORE_CAS: return "cas";
    case STORE_APPEND: return "append";
    case STORE_PREPEND: return "prepend";
    default: return "set";
    }
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
