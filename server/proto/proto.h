/*
 * proto.h - the protocol handlers.  The first byte of a connection picks
 * one (proto_detect): the native magic 0xB7, memcached's binary 0x80
 * (proto_mcbin.c), or printable ASCII for memcached's text protocol.  A handler implements net/conn.h's struct proto: it runs whole
 * requests from the connection's input into its output and never does I/O
 * itself, so it runs unchanged in a network thread or a payload thread.
 */
#ifndef MDC_PROTO_H
#define MDC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/net/conn.h"
#include "server/net/watch.h"
#include "server/report.h"
#include "server/core/store.h"

extern const struct proto proto_native;
extern const struct proto proto_mcbin;
extern const struct proto proto_text;

/*
 * --auth-file (docs/security.md): check user/password for c, count it
 * (auth_cmds, auth_errors) and, on success, let c run requests.  A failure
 * holds c's next request back 1, 2, 4, then 8 s (conn_hold), and the
 * PROTO_AUTH_MAX_FAILS-th closes the connection.  Returns the outcome.
 */
#define PROTO_AUTH_MAX_FAILS 10
/*
 * The most input one request may take before its connection has
 * authenticated: a login is a short line (or header) and a user and
 * password of at most 4 KiB together (auth.c's line limit).  A longer
 * request is refused and the connection closed, so a client without
 * credentials never makes the server buffer more than this.
 */
#define PROTO_PREAUTH_MAX 8192
bool proto_auth(struct conn *c, struct worker *w, const void *user,
                size_t ulen, const void *pass, size_t plen);

/* stats_detail_on() without a call into report.c: the text handler asks
 * for every request. */
static inline bool proto_detail_on(const struct server *srv)
{
    return atomic_load_explicit(&srv->detail_on, memory_order_relaxed);
}

/* A fetchers line (watch.h) for a lookup of key: r the record, or NULL. */
void proto_watch_get(struct conn *c, const void *key, uint32_t klen,
                     const struct record *r);
/* A mutations line for a store of key: its command ("set", "add"...),
 * the store status, the exptime asked and the value's bytes. */
void proto_watch_store(struct conn *c, const void *key, uint32_t klen,
                       const char *cmd, int status, int64_t exptime,
                       uint32_t vlen);
/* The command name a watch line gives a store of mode (the text and meta
 * commands name their own; the native and binary stores use this). */
const char *proto_store_mode_name(enum store_mode mode);

/*
 * The lookup of a GET, for every protocol and transport: the text get,
 * gets, gat and gats over TCP, in a pipelined batch or in a UDP datagram,
 * and the native GET/GAT.  Looks keys[0..n) up (a get of several keys in
 * one pass, store_get_batch, so their cache misses overlap; n stays within
 * the thread's hold slots, MDC_HOLDS) or, for a gat, touches each, and
 * counts each (cmd_get, a hit or a miss; stats detail while on).  out[i]
 * is a reference the caller composes its reply from, or NULL.  What is
 * left to each protocol is the reply's format.  Inline: it runs for every
 * GET of every protocol, and apart from the store calls it is a few
 * counter updates; where a caller's n or gat is a constant (the native GET
 * passes one key) the branches on them fold away.
 */
static inline void proto_get_keys(struct conn *c, struct worker *w,
                                  const struct store_key *keys, size_t n,
                                  bool gat, int64_t exptime,
                                  struct record **out)
{
    struct server *srv = c->srv;
    bool detail = proto_detail_on(srv);
    size_t i;

    if (gat)
        for (i = 0; i < n; i++)
            out[i] = store_gat(srv->store, keys[i].key, keys[i].klen, exptime);
    else if (n == 1)
        out[0] = store_get(srv->store, keys[0].key, keys[0].klen);
    else
        (void)store_get_batch(srv->store, keys, n, out);
    for (i = 0; i < n; i++) {
        stats_count_get(&w->stats, gat, out[i] != NULL);
        if (detail)
            stats_detail_count(srv, keys[i].key, keys[i].klen, DETAIL_GET,
                               out[i] != NULL);
    }
    if (watch_wants(srv, WATCH_FETCHERS))
        for (i = 0; i < n; i++)
            proto_watch_get(c, keys[i].key, keys[i].klen, out[i]);
}

/* The handler for a connection whose first byte is b. */
const struct proto *proto_detect(uint8_t b);

/* A key as memcached's metadump and watch lines show it (URL-encoded:
 * bytes other than letters, digits and "-._~" as %XX); out needs 3 * klen
 * bytes.  Returns the bytes written. */
size_t proto_uriencode(char *out, const void *key, uint32_t klen);

#endif
