/*
 * proto_text.c - protocol selection by first byte, and the handlers for
 * streams this server does not speak (yet): memcached's binary protocol
 * (0x80, deprecated upstream) gets a clear error line; memcached's text
 * protocol (printable ASCII) gets an ERROR-style line until its parser
 * lands (it plugs in as proto_text here).  Both then close.  Any other
 * first byte goes to the native handler, which answers a wrong magic with
 * status "bad magic" in a native frame.
 */
#include "config.h"

#include "proto.h"

#include <string.h>

#include "conn.h"
#include "wire.h"

static void proto_refuse(struct conn *c, struct worker *w, const char *line)
{
    size_t len;

    (void)conn_in_data(c, &len);
    conn_in_consume(c, len);
    STAT_INC(&w->stats, protocol_errors);
    (void)conn_out_bytes(c, line, strlen(line));
    conn_close_after_flush(c);
}

static void proto_mcbin_process(struct conn *c, struct worker *w)
{
    proto_refuse(c, w,
                 "SERVER_ERROR memcached binary protocol is not supported\r\n");
}

static void proto_text_process(struct conn *c, struct worker *w)
{
    proto_refuse(c, w,
                 "SERVER_ERROR memcached text protocol is not supported yet\r\n");
}

const struct proto proto_mcbin_reject = {"memcached-binary",
                                         proto_mcbin_process};
const struct proto proto_text = {"text", proto_text_process};

const struct proto *proto_detect(uint8_t b)
{
    if (b == 0x80)
        return &proto_mcbin_reject;
    if (b >= 0x20 && b < 0x7f)
        return &proto_text;
    /* 0xB7, and any other byte: the native parser answers bad magic. */
    return &proto_native;
}
