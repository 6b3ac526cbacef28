/*
 * fuzz_udp.c - libFuzzer target for the memcached UDP frame
 * (protocol/mctext.c: mctext_udp_request(), mctext_udp_frame()) and the
 * commands a datagram carries, taken the way server/net/udp.c takes them.
 * The input is one received datagram.  Checks: a datagram is answered only
 * when it is longer than the 8-byte header and says "1 datagram"; its
 * request id is the header's; commands are parsed within the datagram and
 * each step moves forward; for every get/gets the reply (VALUE lines for
 * each key, values of a length drawn from the key, END) is cut into
 * datagrams of at most UDP_DGRAM_MAX bytes whose headers carry the
 * request id, sequence 0..n-1, total n and reserved 0, and which put back
 * together give the reply byte for byte.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "protocol/mctext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static uint8_t reply[1 << 20], back[1 << 20];

static void check_frames(uint16_t rid, size_t rlen)
{
    size_t ndg = rlen == 0 ? 1 : (rlen + UDP_CHUNK - 1) / UDP_CHUNK;
    size_t off = 0, got = 0, d;

    if (ndg > 0xFFFF)
        return; /* the server caps replies (--udp-reply-limit) far below */
    for (d = 0; d < ndg; d++) {
        uint8_t dg[UDP_DGRAM_MAX];
        size_t n = rlen - off < UDP_CHUNK ? rlen - off : UDP_CHUNK;

        mctext_udp_frame(dg, rid, (uint16_t)d, (uint16_t)ndg);
        memcpy(dg + UDP_FRAME_HDR, reply + off, n);
        off += n;
        /* the receiving side */
        CHECK(UDP_FRAME_HDR + n <= UDP_DGRAM_MAX);
        CHECK((uint16_t)(dg[0] << 8 | dg[1]) == rid);
        CHECK((size_t)(dg[2] << 8 | dg[3]) == d);
        CHECK((size_t)(dg[4] << 8 | dg[5]) == ndg);
        CHECK(dg[6] == 0 && dg[7] == 0);
        memcpy(back + got, dg + UDP_FRAME_HDR, n);
        got += n;
    }
    CHECK(got == rlen && memcmp(back, reply, rlen) == 0);
}

static size_t compose_get(const struct mctext_req *req)
{
    struct mctext_iter it;
    const char *key;
    uint32_t klen;
    size_t n = 0;

    mctext_iter_init(&it, req);
    while (mctext_next_key(&it, &key, &klen)) {
        uint32_t vlen = (uint32_t)((klen * 131u + (uint8_t)key[0]) % 3000);

        CHECK(klen >= 1 && klen <= MCTEXT_KEY_MAX);
        if (n + MCTEXT_VALUE_LINE_LEN(klen) + vlen + 7 > sizeof(reply))
            break;
        n += mctext_value_line((char *)reply + n, key, klen, 7, vlen,
                               req->cmd == MCT_GETS, 42);
        memset(reply + n, 'v', vlen);
        n += vlen;
        memcpy(reply + n, "\r\n", 2);
        n += 2;
    }
    memcpy(reply + n, "END\r\n", 5);
    return n + 5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct mctext_limits lim = {1 << 20};
    const uint8_t *buf;
    uint16_t rid = 0;
    size_t len;
    int steps = 0;

    if (size > 65536)
        return 0;
    if (mctext_udp_request(data, size, &rid) < 0) {
        CHECK(size <= UDP_FRAME_HDR || data[4] != 0 || data[5] != 1);
        return 0;
    }
    CHECK(size > UDP_FRAME_HDR && data[4] == 0 && data[5] == 1);
    CHECK(rid == (uint16_t)(data[0] << 8 | data[1]));
    buf = data + UDP_FRAME_HDR;
    len = size - UDP_FRAME_HDR;
    while (len > 0) {
        struct mctext_req req;
        ssize_t n = mctext_parse(buf, len, &lim, &req);

        CHECK(++steps <= 65536);
        if (n == MCTEXT_AGAIN || (n == MCTEXT_ERROR && req.close))
            break;
        if (n == MCTEXT_ERROR) {
            n = req.skip < len ? (ssize_t)req.skip : (ssize_t)len;
        } else {
            CHECK(n > 0 && (size_t)n <= len);
            if (req.cmd == MCT_GET || req.cmd == MCT_GETS)
                check_frames(rid, compose_get(&req));
        }
        if (n <= 0)
            break;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}
