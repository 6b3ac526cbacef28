/*
 * fuzz_native.c - libFuzzer target for the native protocol parser
 * (protocol/wire.c).  Consumes messages from the input the way the server does
 * (until "need more" or an out-of-sync error), checks each one against the
 * request rules, and asserts that composing what was parsed gives back the
 * same bytes and parses to the same header.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/wire.h"

#define FUZZ_MAX_BODY (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static uint8_t out[WIRE_HDR_LEN + FUZZ_MAX_BODY];
static struct wire_tag tags[UINT16_MAX];

static int hdr_equal(const struct wire_hdr *a, const struct wire_hdr *b)
{
    return a->magic == b->magic && a->version == b->version &&
           a->opcode == b->opcode && a->flags == b->flags &&
           a->status == b->status && a->klen == b->klen &&
           a->ntags == b->ntags && a->reserved == b->reserved &&
           a->vlen == b->vlen && a->opaque == b->opaque &&
           a->iflags == b->iflags && a->cas == b->cas &&
           a->expiry == b->expiry;
}

/* A whole, valid message: compose it again and compare. */
static void roundtrip(const uint8_t *buf, const struct wire_msg *m)
{
    wire_decode_tags(m->tags, m->hdr.ntags, tags);
    for (uint32_t i = 0; i < m->hdr.ntags; i++) {
        struct wire_tag t = wire_msg_tag(m, i);
        CHECK(t.tkey == tags[i].tkey && t.tval == tags[i].tval);
    }
    ssize_t n = wire_compose(out, sizeof(out), &m->hdr, tags, m->key,
                             m->value);
    CHECK(n == (ssize_t)m->size);
    CHECK(memcmp(out, buf, m->size) == 0);

    struct wire_msg again;
    CHECK(wire_parse(out, (size_t)n, &again, FUZZ_MAX_BODY) == n);
    CHECK(hdr_equal(&again.hdr, &m->hdr));
    /* One byte short is always "need more". */
    CHECK(wire_parse(out, (size_t)n - 1, &again, FUZZ_MAX_BODY) ==
          WIRE_AGAIN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        struct wire_msg m;
        struct wire_hdr h;
        const uint8_t *p = data + off;
        size_t left = size - off;
        ssize_t n = wire_parse(p, left, &m, FUZZ_MAX_BODY);
        int hrc = wire_parse_header(p, left, &h, FUZZ_MAX_BODY);

        if (n == WIRE_AGAIN) {
            CHECK(hrc == WIRE_AGAIN || hrc == WIRE_OK ||
                  wire_err_in_sync(hrc));
            break;
        }
        if (n < 0) {
            CHECK(n == hrc);
            CHECK(wire_err_status((int)n) != WIRE_S_OK);
            if (!wire_err_in_sync((int)n))
                break;           /* the server replies, then closes */
            CHECK(m.size <= left);
            off += m.size;       /* in sync: skip the message */
            continue;
        }
        CHECK(hrc == WIRE_OK);
        CHECK((size_t)n == m.size && m.size <= left);
        CHECK(hdr_equal(&h, &m.hdr));
        int rc = wire_check_request(&m);
        CHECK(rc == WIRE_OK || wire_err_in_sync(rc));
        roundtrip(p, &m);
        off += (size_t)n;
    }
    return 0;
}
