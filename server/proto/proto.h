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

#include <stdint.h>

#include "server/net/conn.h"

extern const struct proto proto_native;
extern const struct proto proto_mcbin_reject;
extern const struct proto proto_text;

/* The handler for a connection whose first byte is b. */
const struct proto *proto_detect(uint8_t b);

#endif
