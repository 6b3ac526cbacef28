/*
 * proto.h - the protocol handlers.  The first byte of a connection picks
 * one (proto_detect): the native magic 0xB7, memcached's binary 0x80
 * (refused with a clear error), or printable ASCII for memcached's text
 * protocol.  A handler implements net/conn.h's struct proto: it runs whole
 * requests from the connection's input into its output and never does I/O
 * itself, so it runs unchanged in a network thread or a payload thread.
 */
#ifndef MDC_PROTO_H
#define MDC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/net/conn.h"

extern const struct proto proto_native;
extern const struct proto proto_mcbin_reject;
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

/* The handler for a connection whose first byte is b. */
const struct proto *proto_detect(uint8_t b);

#endif
