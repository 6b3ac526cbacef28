/*
 * load_mcbin.c - mdc-load's module for memcached's binary protocol
 * (-P binary): GET and SET, composed and parsed with protocol/mcbin.h, the
 * codec the server uses.  Each request carries its opaque; replies come
 * in request order.
 */
#include "config.h"

#include <string.h>

#include "load_proto.h"
#include "protocol/mcbin.h"

static size_t mcbin_req_size(enum load_op op, size_t klen, size_t vlen)
{
    return MCBIN_HDR_LEN + (op == LOP_SET ? 8 + klen + vlen : klen);
}

static size_t mcbin_compose(uint8_t *out, enum load_op op, const char *key,
                            size_t klen, const void *val, size_t vlen,
                            uint32_t opaque)
{
    static const uint8_t ext[8]; /* flags 0, expiry 0 */

    if (op == LOP_SET)
        return mcbin_request(out, MCBIN_OP_SET, ext, 8, key, (uint16_t)klen,
                             val, (uint32_t)vlen, opaque, 0);
    return mcbin_request(out, MCBIN_OP_GET, NULL, 0, key, (uint16_t)klen,
                         NULL, 0, opaque, 0);
}

static ssize_t mcbin_parse_reply(const uint8_t *buf, size_t len,
                                 enum load_op op, int *res, uint32_t *opaque)
{
    struct mcbin_hdr h;

    if (len < MCBIN_HDR_LEN)
        return 0;
    mcbin_decode_header(buf, &h);
    if (h.magic != MCBIN_RES)
        return -1;
    if (len < MCBIN_HDR_LEN + (size_t)h.bodylen)
        return 0;
    *opaque = h.opaque;
    switch (h.status) {
    case MCBIN_S_OK: *res = op == LOP_GET ? LR_HIT : LR_STORED; break;
    case MCBIN_S_NOT_FOUND: *res = op == LOP_GET ? LR_MISS : LR_ERROR; break;
    case MCBIN_S_NO_MEMORY: *res = op == LOP_SET ? LR_NOMEM : LR_ERROR; break;
    default: *res = LR_ERROR; break;
    }
    return (ssize_t)(MCBIN_HDR_LEN + (size_t)h.bodylen);
}

const struct load_proto load_proto_mcbin = {
    .name = "binary",
    .default_port = 11211,
    .req_size = mcbin_req_size,
    .compose = mcbin_compose,
    .parse = mcbin_parse_reply,
};
