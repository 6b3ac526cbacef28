/*
 * fuzz_mcbin.c - libFuzzer target for memcached's binary protocol parser
 * and composers (protocol/mcbin.c).  Consumes requests from the input the
 * way the server does (until "need more" or a closing error; an in-sync
 * error skips its body) and checks each result: a whole request is
 * exactly its header's length and does not depend on the bytes after it,
 * one byte less is "need more"; key, extras and value lie inside the
 * buffer and agree with the header; every error has memcached's status
 * and text; composed replies have the lengths they announce.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mcbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static const struct mcbin_limits lim = {4096, 64 * 4096};

static void check_reply(const struct mcbin_req *req, uint16_t status)
{
    static uint8_t out[MCBIN_HDR_LEN + 128];
    struct mcbin_hdr h;
    size_t n = mcbin_error(out, &req->hdr, status);

    CHECK(n == mcbin_error_len(status) && n <= sizeof(out));
    mcbin_decode_header(out, &h);
    CHECK(h.magic == MCBIN_RES && h.opcode == req->hdr.opcode &&
          h.opaque == req->hdr.opaque && h.status == status &&
          h.bodylen == n - MCBIN_HDR_LEN);
}

static void check_request(const uint8_t *buf, size_t len, size_t n,
                          const struct mcbin_req *req)
{
    struct mcbin_req again;

    CHECK(n == MCBIN_HDR_LEN + (size_t)req->hdr.bodylen && n <= len);
    CHECK(req->hdr.magic == MCBIN_REQ);
    CHECK(req->klen == req->hdr.klen && req->klen <= MCBIN_KEY_MAX);
    CHECK((size_t)req->hdr.extlen + req->klen + req->vlen ==
          req->hdr.bodylen);
    if (req->klen > 0)
        CHECK(req->key == buf + MCBIN_HDR_LEN + req->hdr.extlen);
    CHECK(req->value == buf + MCBIN_HDR_LEN + req->hdr.extlen + req->klen);
    CHECK(mcbin_op_name(req->hdr.opcode) != NULL);
    switch (req->cmd) {
    case MCBIN_OP_GET:
    case MCBIN_OP_DELETE:
        CHECK(req->hdr.extlen == 0 && req->klen > 0 && req->vlen == 0);
        break;
    case MCBIN_OP_SET:
    case MCBIN_OP_ADD:
    case MCBIN_OP_REPLACE:
        CHECK(req->hdr.extlen == 8 && req->klen > 0 &&
              req->vlen <= lim.max_value);
        break;
    case MCBIN_OP_INCR:
    case MCBIN_OP_DECR:
        CHECK(req->hdr.extlen == 20 && req->vlen == 0);
        break;
    case MCBIN_OP_SASL_AUTH:
    case MCBIN_OP_SASL_STEP:
        CHECK(req->vlen <= MCBIN_SASL_MAX);
        break;
    default: break;
    }
    /* the same request with nothing after it, and one byte short */
    CHECK(mcbin_parse(buf, n, &lim, &again) == (ssize_t)n);
    CHECK(again.cmd == req->cmd && again.vlen == req->vlen);
    CHECK(mcbin_parse(buf, n - 1, &lim, &again) == MCBIN_AGAIN);
    CHECK(again.need > n - 1 && again.need <= n);
    check_reply(req, MCBIN_S_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    int guard = 0;

    while (off < size && guard++ < 10000) {
        struct mcbin_req req;
        ssize_t n = mcbin_parse(data + off, size - off, &lim, &req);

        if (n == MCBIN_AGAIN) {
            CHECK(req.need > size - off);
            break;
        }
        if (n == MCBIN_ERROR) {
            CHECK(mcbin_status_text(req.status)[0] != '\0');
            check_reply(&req, req.status);
            if (req.close)
                break;
            CHECK(req.skip >= MCBIN_HDR_LEN);
            if (req.skip >= size - off)
                break;
            off += req.skip;
            continue;
        }
        CHECK(n > 0);
        check_request(data + off, size - off, (size_t)n, &req);
        off += (size_t)n;
    }
    return 0;
}
