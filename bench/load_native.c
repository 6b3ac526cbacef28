/*
 * load_native.c - mdc-load's module for mdcached's native binary protocol.
 *
 * Requests are composed and replies parsed with the shared protocol/wire.h
 * functions, so the generator never holds a second copy of the format.
 */
#include "config.h"

#include <stdint.h>

#include "load_proto.h"
#include "protocol/wire.h"

static size_t native_req_size(enum load_op op, size_t klen, size_t vlen)
{
    return WIRE_HDR_LEN + klen + (op == LOP_SET ? vlen : 0);
}

static size_t native_compose(uint8_t *out, enum load_op op, const char *key,
                             size_t klen, const void *val, size_t vlen,
                             uint32_t opaque)
{
    struct wire_hdr h;
    ssize_t n;

    wire_hdr_request(&h, op == LOP_SET ? WIRE_OP_SET : WIRE_OP_GET);
    h.klen = (uint16_t)klen;
    h.opaque = opaque;
    if (op == LOP_SET)
        h.vlen = (uint32_t)vlen;
    n = wire_compose(out, native_req_size(op, klen, vlen), &h, NULL, key,
                     op == LOP_SET ? val : NULL);
    return n > 0 ? (size_t)n : 0;
}

static ssize_t native_parse(const uint8_t *buf, size_t len, enum load_op op,
                            int *res, uint32_t *opaque)
{
    struct wire_msg m;
    ssize_t n = wire_parse(buf, len, &m, SIZE_MAX);

    if (n == WIRE_AGAIN)
        return 0;
    if (n < 0 || !(m.hdr.flags & WIRE_F_RESPONSE))
        return -1;
    *opaque = m.hdr.opaque;
    if (m.hdr.status == WIRE_S_OK)
        *res = op == LOP_GET ? LR_HIT : LR_STORED;
    else if (m.hdr.status == WIRE_S_NOT_FOUND && op == LOP_GET)
        *res = LR_MISS;
    else if (m.hdr.status == WIRE_S_NO_MEMORY && op == LOP_SET)
        *res = LR_NOMEM;
    else
        *res = LR_ERROR;
    return n;
}

const struct load_proto load_proto_native = {
    .name = "native",
    .default_port = WIRE_DEFAULT_PORT,
    .req_size = native_req_size,
    .compose = native_compose,
    .parse = native_parse,
};
