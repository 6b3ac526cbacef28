/*
 * proto.h - protocol handlers.  The first byte of a connection picks one
 * (DESIGN.md §4): the native magic 0xB7, memcached's binary 0x80 (refused
 * with a clear error), or printable ASCII for memcached's text protocol (a
 * later issue plugs its parser in here; until then it is refused too).
 *
 * A handler runs whole requests from the connection's input into its output
 * (conn.h) and never does I/O itself, so it runs unchanged in a network
 * thread or in a payload thread.
 */
#ifndef MDC_PROTO_H
#define MDC_PROTO_H

#include <stdint.h>

struct conn;
struct worker;

struct proto {
    const char *name;
    /*
     * Run requests from c's input until the input holds no whole request,
     * the output is over its bound (conn_out_full) or the connection is
     * closing.  Before returning it sets conn_in_need() to the bytes it
     * needs to make progress.  w is the thread running it (stats, scratch).
     */
    void (*process)(struct conn *c, struct worker *w);
};

extern const struct proto proto_native;
extern const struct proto proto_mcbin_reject;
extern const struct proto proto_text;

/* The handler for a connection whose first byte is b. */
const struct proto *proto_detect(uint8_t b);

#endif
