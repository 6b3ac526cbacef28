/*
 * test_wire.c - unit tests of the native protocol parser and composer
 * (protocol/wire.c): round trips of every opcode, partial input at every split
 * point, every malformed-header case, and the byte-exact worked example of
 * docs/protocol.md.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/store.h"
#include "protocol/wire.h"

#define NO_LIMIT SIZE_MAX

/* docs/protocol.md §8: SET "foo" = "bar", tag (42, -2), flags 5, expiry
 * 3600, opaque 0x11223344.  Keep in step with the document. */
static const uint8_t example_req[] = {
    0xb7, 0x01, 0x10, 0x00, 0x00, 0x00, 0x03, 0x00, /* magic ver op fl st kl */
    0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, /* ntags rsv vlen */
    0x44, 0x33, 0x22, 0x11, 0x05, 0x00, 0x00, 0x00, /* opaque iflags */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cas */
    0x10, 0x0e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* expiry */
    0x2a, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, /* tag (42, -2) */
    0x66, 0x6f, 0x6f,                               /* "foo" */
    0x62, 0x61, 0x72,                               /* "bar" */
};
/* Its reply: OK, CAS 0x1f. */
static const uint8_t example_rsp[] = {
    0xb7, 0x01, 0x10, 0x80, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0x00, 0x00,
    0x1f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static const uint8_t all_opcodes[] = {
#define X(n, v, s) v,
    WIRE_OPCODES(X)
#undef X
};

/* Parse buf, which must hold exactly one valid message. */
static void parse_whole(const uint8_t *buf, size_t len, struct wire_msg *m)
{
    ssize_t n = wire_parse(buf, len, m, NO_LIMIT);
    assert_int_equal(n, (ssize_t)len);
    assert_int_equal(m->size, len);
}

/* A copy of buf in an exactly sized heap block, so ASan sees overreads. */
static uint8_t *dup_exact(const uint8_t *buf, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    assert_non_null(p);
    if (len)
        memcpy(p, buf, len);
    return p;
}

/* Build a request for op that wire_check_request accepts, exercising every
 * field the opcode allows. */
static void valid_request(uint8_t op, struct wire_hdr *h, struct wire_tag *tags,
                          const char **key, uint8_t *value)
{
    wire_hdr_request(h, op);
    h->opaque = 0xA0000000u | op;
    *key = NULL;
    tags[0] = (struct wire_tag){-7, 1};
    tags[1] = (struct wire_tag){-7, INT32_MIN};
    tags[2] = (struct wire_tag){-7, INT32_MAX};
    switch (op) {
    case WIRE_OP_GET:
    case WIRE_OP_GETK:
    case WIRE_OP_ATOMIC_READ_CLEAR:
        *key = "k";
        break;
    case WIRE_OP_GAT:
    case WIRE_OP_GATK:
    case WIRE_OP_TOUCH:
        *key = "touchy";
        h->expiry = -1;
        break;
    case WIRE_OP_SET:
    case WIRE_OP_ADD:
    case WIRE_OP_REPLACE:
    case WIRE_OP_CAS:
        *key = "storekey";
        h->ntags = 3;
        h->vlen = 5;
        memcpy(value, "hello", 5);
        h->iflags = 0xDEADBEEF;
        h->expiry = 2592001; /* absolute */
        if (op == WIRE_OP_CAS || op == WIRE_OP_SET)
            h->cas = 0x0102030405060708ull;
        break;
    case WIRE_OP_APPEND:
    case WIRE_OP_PREPEND:
        *key = "a";
        h->vlen = 1;
        value[0] = 'z';
        break;
    case WIRE_OP_DELETE:
        *key = "gone";
        h->cas = UINT64_MAX;
        break;
    case WIRE_OP_INCR:
    case WIRE_OP_DECR:
    case WIRE_OP_ATOMIC_ADD:
    case WIRE_OP_ATOMIC_FETCH_ADD:
        *key = "ctr";
        h->vlen = 8;
        wire_put_u64(value, 0x8877665544332211ull);
        break;
    case WIRE_OP_ATOMIC_CMPSET:
        *key = "ctr";
        h->vlen = 16;
        wire_put_u64(value, 1);
        wire_put_u64(value + 8, 2);
        break;
    case WIRE_OP_GET_BY_TAG:
    case WIRE_OP_DEL_BY_TAG:
        h->ntags = 3;
        break;
    case WIRE_OP_TSTACK_PUSH:
        h->ntags = 1;
        h->vlen = 3;
        memcpy(value, "job", 3);
        h->iflags = 9;
        h->expiry = 60;
        break;
    case WIRE_OP_TSTACK_POP:
        h->ntags = 1;
        h->flags = WIRE_F_QUIET;
        break;
    case WIRE_OP_STATS:
        *key = "settings";
        break;
    case WIRE_OP_AUTH:
        *key = "user";
        h->vlen = 6;
        memcpy(value, "secret", 6);
        break;
    default:
        break;
    }
    h->klen = *key ? (uint16_t)strlen(*key) : 0;
}

static void assert_hdr_equal(const struct wire_hdr *a, const struct wire_hdr *b)
{
    assert_int_equal(a->magic, b->magic);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->opcode, b->opcode);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->klen, b->klen);
    assert_int_equal(a->ntags, b->ntags);
    assert_int_equal(a->reserved, b->reserved);
    assert_int_equal(a->vlen, b->vlen);
    assert_int_equal(a->opaque, b->opaque);
    assert_int_equal(a->iflags, b->iflags);
    assert_true(a->cas == b->cas);
    assert_true(a->expiry == b->expiry);
}

static void test_roundtrip_every_opcode(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(all_opcodes); i++) {
        uint8_t op = all_opcodes[i], value[16], buf[256];
        struct wire_hdr h;
        struct wire_tag tags[3];
        const char *key;
        struct wire_msg m;

        valid_request(op, &h, tags, &key, value);
        ssize_t n = wire_compose(buf, sizeof(buf), &h, tags, key, value);
        assert_true(n >= (ssize_t)WIRE_HDR_LEN);
        assert_int_equal((uint64_t)n, WIRE_HDR_LEN + wire_body_len(&h));
        parse_whole(buf, (size_t)n, &m);
        assert_hdr_equal(&m.hdr, &h);
        assert_int_equal(wire_check_request(&m), WIRE_OK);
        for (uint32_t t = 0; t < h.ntags; t++) {
            struct wire_tag got = wire_msg_tag(&m, t);
            assert_int_equal(got.tkey, tags[t].tkey);
            assert_int_equal(got.tval, tags[t].tval);
        }
        if (h.klen)
            assert_memory_equal(m.key, key, h.klen);
        if (h.vlen)
            assert_memory_equal(m.value, value, h.vlen);
        assert_non_null(wire_opcode_name(op));

        /* The matching response: record-shaped, with MORE and a status. */
        struct wire_hdr r;
        wire_hdr_response(&r, &h, WIRE_S_NOT_FOUND);
        assert_int_equal(r.opcode, op);
        assert_int_equal(r.opaque, h.opaque);
        r.flags |= WIRE_F_MORE;
        r.klen = h.klen;
        r.ntags = h.ntags;
        r.vlen = h.vlen;
        r.cas = 42;
        r.expiry = -1;
        r.iflags = 7;
        n = wire_compose(buf, sizeof(buf), &r, tags, key, value);
        assert_true(n > 0);
        parse_whole(buf, (size_t)n, &m);
        assert_hdr_equal(&m.hdr, &r);
        assert_int_equal(wire_check_request(&m), WIRE_EFLAGS);
    }
}

static void test_example_bytes(void **state)
{
    (void)state;
    struct wire_hdr h;
    struct wire_tag tag = {42, -2};
    uint8_t buf[sizeof(example_req)];

    wire_hdr_request(&h, WIRE_OP_SET);
    h.klen = 3;
    h.ntags = 1;
    h.vlen = 3;
    h.opaque = 0x11223344;
    h.iflags = 5;
    h.expiry = 3600;
    ssize_t n = wire_compose(buf, sizeof(buf), &h, &tag, "foo", "bar");
    assert_int_equal(n, sizeof(example_req));
    assert_memory_equal(buf, example_req, sizeof(example_req));

    struct wire_msg m;
    parse_whole(example_req, sizeof(example_req), &m);
    assert_int_equal(m.hdr.opcode, WIRE_OP_SET);
    assert_int_equal(m.hdr.opaque, 0x11223344);
    assert_int_equal(m.hdr.iflags, 5);
    assert_true(m.hdr.expiry == 3600);
    assert_int_equal(wire_msg_tag(&m, 0).tkey, 42);
    assert_int_equal(wire_msg_tag(&m, 0).tval, -2);
    assert_memory_equal(m.key, "foo", 3);
    assert_memory_equal(m.value, "bar", 3);
    assert_int_equal(wire_check_request(&m), WIRE_OK);

    struct wire_hdr r;
    uint8_t rbuf[WIRE_HDR_LEN];
    wire_hdr_response(&r, &m.hdr, WIRE_S_OK);
    r.cas = 0x1f;
    wire_encode_header(rbuf, &r);
    assert_memory_equal(rbuf, example_rsp, sizeof(example_rsp));
    parse_whole(example_rsp, sizeof(example_rsp), &m);
    assert_true(m.hdr.flags & WIRE_F_RESPONSE);
    assert_true(m.hdr.cas == 0x1f);
}

/* The hex dumps in docs/protocol.md §8 are these very bytes (skipped when
 * the source tree is not at $srcdir). */
static void test_example_matches_doc(void **state)
{
    (void)state;
    const char *srcdir = getenv("srcdir");
    char path[4096];
    snprintf(path, sizeof(path), "%s/docs/protocol.md", srcdir ? srcdir : ".");
    FILE *f = fopen(path, "r");
    if (f == NULL)
        skip();

    uint8_t got[sizeof(example_req) + sizeof(example_rsp)];
    size_t n = 0;
    char line[256];
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned addr;
        int pos = 0; /* %n is not reached when the ':' does not match */
        if (sscanf(line, " %8x:%n", &addr, &pos) != 1 || pos < 12)
            continue;
        /* xxd layout: 8 groups of 4 hex digits, then the ASCII column. */
        for (const char *p = line + pos; p < line + pos + 40 && *p; p++) {
            unsigned byte;
            if (*p == ' ')
                continue;
            if (sscanf(p, "%2x", &byte) != 1 || n == sizeof(got))
                break;
            got[n++] = (uint8_t)byte;
            p++;
        }
    }
    fclose(f);
    assert_int_equal(n, sizeof(got));
    assert_memory_equal(got, example_req, sizeof(example_req));
    assert_memory_equal(got + sizeof(example_req), example_rsp,
                        sizeof(example_rsp));
}

static void test_partial_every_split(void **state)
{
    (void)state;
    struct wire_msg m;
    for (size_t len = 0; len < sizeof(example_req); len++) {
        uint8_t *p = dup_exact(example_req, len);
        assert_int_equal(wire_parse(p, len, &m, NO_LIMIT), WIRE_AGAIN);
        if (len < WIRE_HDR_LEN)
            assert_int_equal(wire_parse_header(p, len, &m.hdr, NO_LIMIT),
                             WIRE_AGAIN);
        else
            assert_int_equal(wire_parse_header(p, len, &m.hdr, NO_LIMIT),
                             WIRE_OK);
        free(p);
    }
}

/* A pipelined batch: quiet GETs closed by a NOOP, parsed back to back. */
static void test_pipeline(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len = 0;
    const char *keys[] = {"a", "bb", "ccc"};
    struct wire_hdr h;
    for (int i = 0; i < 3; i++) {
        wire_hdr_request(&h, WIRE_OP_GETK);
        h.flags = WIRE_F_QUIET;
        h.opaque = (uint32_t)i;
        h.klen = (uint16_t)strlen(keys[i]);
        len += (size_t)wire_compose(buf + len, sizeof(buf) - len, &h, NULL,
                                    keys[i], NULL);
    }
    wire_hdr_request(&h, WIRE_OP_NOOP);
    h.opaque = 3;
    len += (size_t)wire_compose(buf + len, sizeof(buf) - len, &h, NULL, NULL,
                                NULL);

    size_t off = 0;
    for (uint32_t i = 0; i < 4; i++) {
        struct wire_msg m;
        ssize_t n = wire_parse(buf + off, len - off, &m, NO_LIMIT);
        assert_true(n > 0);
        assert_int_equal(m.hdr.opaque, i);
        assert_int_equal(wire_check_request(&m), WIRE_OK);
        if (i < 3) {
            assert_int_equal(m.hdr.opcode, WIRE_OP_GETK);
            assert_memory_equal(m.key, keys[i], m.hdr.klen);
        } else {
            assert_int_equal(m.hdr.opcode, WIRE_OP_NOOP);
        }
        /* Every split of the remainder is "need more" short of n. */
        for (size_t cut = 0; cut < (size_t)n; cut++)
            assert_int_equal(wire_parse(buf + off, cut, &m, NO_LIMIT),
                             WIRE_AGAIN);
        off += (size_t)n;
    }
    assert_int_equal(off, len);
}

static void test_bad_magic(void **state)
{
    (void)state;
    struct wire_msg m;
    const uint8_t firsts[] = {0x80, 0x81, 'g', 's', 0x00, 0xff};
    for (size_t i = 0; i < sizeof(firsts); i++) {
        uint8_t b = firsts[i];
        assert_int_equal(wire_parse(&b, 1, &m, NO_LIMIT), WIRE_EMAGIC);
    }
    uint8_t buf[sizeof(example_req)];
    memcpy(buf, example_req, sizeof(buf));
    buf[0] = 0x80;
    memset(&m, 0x5a, sizeof(m));
    assert_int_equal(wire_parse(buf, sizeof(buf), &m, NO_LIMIT), WIRE_EMAGIC);
    /* Zeroed header: the error reply echoes opcode 0 and opaque 0. */
    assert_int_equal(m.hdr.opcode, 0);
    assert_int_equal(m.hdr.opaque, 0);
    assert_false(wire_err_in_sync(WIRE_EMAGIC));
    assert_int_equal(wire_err_status(WIRE_EMAGIC), WIRE_S_BAD_MAGIC);
}

static void test_bad_version(void **state)
{
    (void)state;
    struct wire_msg m;
    uint8_t buf[sizeof(example_req)];
    memcpy(buf, example_req, sizeof(buf));
    buf[1] = 2;
    assert_int_equal(wire_parse(buf, 2, &m, NO_LIMIT), WIRE_EVERSION);
    assert_int_equal(wire_parse(buf, sizeof(buf), &m, NO_LIMIT),
                     WIRE_EVERSION);
    buf[1] = 0;
    memset(&m, 0x5a, sizeof(m));
    assert_int_equal(wire_parse(buf, sizeof(buf), &m, NO_LIMIT),
                     WIRE_EVERSION);
    assert_int_equal(m.hdr.opaque, 0);
    assert_false(wire_err_in_sync(WIRE_EVERSION));
    assert_int_equal(wire_err_status(WIRE_EVERSION), WIRE_S_BAD_VERSION);
}

/* In-sync errors: reported once the message is whole, with its size. */
static void expect_in_sync(const uint8_t *buf, size_t len, int err)
{
    struct wire_msg m;
    for (size_t cut = WIRE_HDR_LEN; cut < len; cut++)
        assert_int_equal(wire_parse(buf, cut, &m, NO_LIMIT), WIRE_AGAIN);
    assert_int_equal(wire_parse(buf, len, &m, NO_LIMIT), err);
    assert_int_equal(m.size, len);
    assert_int_equal(m.hdr.opaque, 0x11223344);
    assert_true(wire_err_in_sync(err));
    /* The header alone reports the same error at once. */
    assert_int_equal(wire_parse_header(buf, WIRE_HDR_LEN, &m.hdr, NO_LIMIT),
                     err);
}

static void test_reserved_bits(void **state)
{
    (void)state;
    uint8_t buf[sizeof(example_req)];
    for (int bit = 1; bit < 8; bit++) {
        memcpy(buf, example_req, sizeof(buf));
        buf[WIRE_OFF_FLAGS] = (uint8_t)(1u << bit); /* MORE/RESP/reserved */
        if ((1u << bit) == WIRE_F_RESPONSE)
            continue; /* a valid response */
        if ((1u << bit) == WIRE_F_STALE) {
            /* a SET's invalidate mode: a CAS is required (EFIELD) */
            struct wire_msg m;
            assert_int_equal(wire_parse(buf, sizeof(buf), &m, NO_LIMIT),
                             (ssize_t)sizeof(buf));
            assert_int_equal(wire_check_request(&m), WIRE_EFIELD);
            continue;
        }
        expect_in_sync(buf, sizeof(buf), WIRE_EFLAGS);
    }
    /* QUIET is a request flag only. */
    memcpy(buf, example_req, sizeof(buf));
    buf[WIRE_OFF_FLAGS] = WIRE_F_RESPONSE | WIRE_F_QUIET;
    expect_in_sync(buf, sizeof(buf), WIRE_EFLAGS);

    memcpy(buf, example_req, sizeof(buf));
    buf[WIRE_OFF_RESERVED + 1] = 1;
    expect_in_sync(buf, sizeof(buf), WIRE_ERESERVED);

    memcpy(buf, example_req, sizeof(buf));
    buf[WIRE_OFF_STATUS] = 1;
    expect_in_sync(buf, sizeof(buf), WIRE_ESTATUS);
    assert_int_equal(wire_err_status(WIRE_ESTATUS), WIRE_S_MALFORMED);

    memcpy(buf, example_req, sizeof(buf));
    buf[WIRE_OFF_OPCODE] = 0xEE;
    expect_in_sync(buf, sizeof(buf), WIRE_EOPCODE);
    assert_int_equal(wire_err_status(WIRE_EOPCODE), WIRE_S_UNKNOWN_OPCODE);
}

static void test_key_too_long(void **state)
{
    (void)state;
    size_t len = WIRE_HDR_LEN + 0xFFFF;
    uint8_t *buf = calloc(1, len);
    assert_non_null(buf);
    struct wire_hdr h;
    wire_hdr_request(&h, WIRE_OP_GET);
    h.klen = 0xFFFF;
    h.opaque = 0x11223344;
    wire_encode_header(buf, &h);
    expect_in_sync(buf, len, WIRE_EKEYLEN);
    assert_int_equal(wire_err_status(WIRE_EKEYLEN), WIRE_S_KEY_INVALID);
    /* 65534 is the longest key. */
    h.klen = WIRE_MAX_KEY;
    wire_encode_header(buf, &h);
    struct wire_msg m;
    assert_int_equal(wire_parse(buf, len, &m, NO_LIMIT),
                     (ssize_t)(WIRE_HDR_LEN + WIRE_MAX_KEY));
    assert_int_equal(wire_check_request(&m), WIRE_OK);
    free(buf);
}

static void test_huge_tag_count(void **state)
{
    (void)state;
    struct wire_hdr h;
    struct wire_msg m;
    uint8_t *buf = malloc(WIRE_HDR_LEN + 16);
    assert_non_null(buf);
    wire_hdr_request(&h, WIRE_OP_GET_BY_TAG);
    h.ntags = 0xFFFF;
    wire_encode_header(buf, &h);
    memset(buf + WIRE_HDR_LEN, 0, 16);
    /* Unbounded: waits for 512 KiB of tags, reading nothing past 56. */
    assert_int_equal(wire_parse(buf, WIRE_HDR_LEN + 16, &m, NO_LIMIT),
                     WIRE_AGAIN);
    /* Bounded below it: refused from the header alone. */
    assert_int_equal(wire_parse(buf, WIRE_HDR_LEN + 16, &m, 64 * 1024),
                     WIRE_ETOOBIG);
    free(buf);
}

static void test_value_past_bound(void **state)
{
    (void)state;
    struct wire_hdr h;
    struct wire_msg m;
    uint8_t *buf = malloc(WIRE_HDR_LEN); /* header only: nothing else exists */
    assert_non_null(buf);
    wire_hdr_request(&h, WIRE_OP_SET);
    h.klen = 1;
    h.vlen = UINT32_MAX;
    wire_encode_header(buf, &h);
    assert_int_equal(wire_parse(buf, WIRE_HDR_LEN, &m, 1 << 20),
                     WIRE_ETOOBIG);
    assert_int_equal(wire_parse_header(buf, WIRE_HDR_LEN, &m.hdr, 1 << 20),
                     WIRE_ETOOBIG);
    assert_false(wire_err_in_sync(WIRE_ETOOBIG));
    assert_int_equal(wire_err_status(WIRE_ETOOBIG), WIRE_S_MSG_TOO_LARGE);
    /* The bound is inclusive: body == max_body passes the header check. */
    h.vlen = (1 << 20) - 1;
    wire_encode_header(buf, &h);
    assert_int_equal(wire_parse_header(buf, WIRE_HDR_LEN, &m.hdr, 1 << 20),
                     WIRE_OK);
    assert_int_equal(wire_parse(buf, WIRE_HDR_LEN, &m, 1 << 20), WIRE_AGAIN);
    /* Too big wins over an in-sync error in the same header. */
    buf[WIRE_OFF_OPCODE] = 0xEE;
    h.vlen = UINT32_MAX;
    wire_put_u32(buf + WIRE_OFF_VLEN, h.vlen);
    assert_int_equal(wire_parse(buf, WIRE_HDR_LEN, &m, 1 << 20),
                     WIRE_ETOOBIG);
    free(buf);
}

static void test_lengths_past_end(void **state)
{
    (void)state;
    /* The example with vlen claiming 4 bytes more than follow. */
    uint8_t *buf = dup_exact(example_req, sizeof(example_req));
    struct wire_msg m;
    wire_put_u32(buf + WIRE_OFF_VLEN, 7);
    assert_int_equal(wire_parse(buf, sizeof(example_req), &m, NO_LIMIT),
                     WIRE_AGAIN);
    assert_int_equal(m.size, sizeof(example_req) + 4);
    wire_put_u16(buf + WIRE_OFF_KLEN, 0xFFFE);
    assert_int_equal(wire_parse(buf, sizeof(example_req), &m, NO_LIMIT),
                     WIRE_AGAIN);
    wire_put_u16(buf + WIRE_OFF_NTAGS, 2);
    assert_int_equal(wire_parse(buf, sizeof(example_req), &m, NO_LIMIT),
                     WIRE_AGAIN);
    free(buf);
}

static void test_truncated_header(void **state)
{
    (void)state;
    struct wire_msg m;
    for (size_t len = 0; len < WIRE_HDR_LEN; len++) {
        uint8_t *p = dup_exact(example_rsp, len);
        assert_int_equal(wire_parse(p, len, &m, NO_LIMIT), WIRE_AGAIN);
        free(p);
    }
}

static void check_rule(uint8_t op, void (*edit)(struct wire_hdr *, int),
                       int arg, int want)
{
    uint8_t value[16], buf[512];
    struct wire_hdr h;
    struct wire_tag tags[3];
    const char *key;
    struct wire_msg m;
    char longkey[300];

    valid_request(op, &h, tags, &key, value);
    edit(&h, arg);
    if (h.klen && !key) {
        memset(longkey, 'x', sizeof(longkey));
        key = longkey;
    }
    if (h.ntags > 3)
        h.ntags = 3;
    ssize_t n = wire_compose(buf, sizeof(buf), &h, tags, key, value);
    assert_true(n > 0);
    assert_true(wire_parse(buf, (size_t)n, &m, NO_LIMIT) == n);
    assert_int_equal(wire_check_request(&m), want);
}

static void e_klen(struct wire_hdr *h, int v) { h->klen = (uint16_t)v; }
static void e_vlen(struct wire_hdr *h, int v) { h->vlen = (uint32_t)v; }
static void e_ntags(struct wire_hdr *h, int v) { h->ntags = (uint16_t)v; }
static void e_cas(struct wire_hdr *h, int v) { h->cas = (uint64_t)v; }
static void e_iflags(struct wire_hdr *h, int v) { h->iflags = (uint32_t)v; }
static void e_expiry(struct wire_hdr *h, int v) { h->expiry = v; }

static void test_request_rules(void **state)
{
    (void)state;
    check_rule(WIRE_OP_GET, e_klen, 0, WIRE_EKEYLEN);
    check_rule(WIRE_OP_GET, e_vlen, 1, WIRE_EFIELD);
    check_rule(WIRE_OP_GET, e_ntags, 1, WIRE_ETAGS);
    check_rule(WIRE_OP_GET, e_cas, 1, WIRE_EFIELD);
    check_rule(WIRE_OP_GET, e_expiry, 1, WIRE_EFIELD);
    check_rule(WIRE_OP_GET, e_iflags, 1, WIRE_EFIELD);
    check_rule(WIRE_OP_NOOP, e_klen, 1, WIRE_EKEYLEN);
    check_rule(WIRE_OP_SET, e_klen, 0, WIRE_EKEYLEN);
    check_rule(WIRE_OP_SET, e_cas, 0, WIRE_OK);
    check_rule(WIRE_OP_SET, e_vlen, 0, WIRE_OK);
    check_rule(WIRE_OP_ADD, e_cas, 1, WIRE_EFIELD);
    check_rule(WIRE_OP_CAS, e_cas, 0, WIRE_EFIELD);
    check_rule(WIRE_OP_APPEND, e_ntags, 1, WIRE_ETAGS);
    check_rule(WIRE_OP_APPEND, e_expiry, 5, WIRE_EFIELD);
    check_rule(WIRE_OP_INCR, e_vlen, 7, WIRE_EFIELD);
    check_rule(WIRE_OP_ATOMIC_CMPSET, e_vlen, 8, WIRE_EFIELD);
    check_rule(WIRE_OP_ATOMIC_READ_CLEAR, e_vlen, 8, WIRE_EFIELD);
    check_rule(WIRE_OP_GET_BY_TAG, e_ntags, 0, WIRE_ETAGS);
    check_rule(WIRE_OP_GET_BY_TAG, e_ntags, 1, WIRE_OK);
    check_rule(WIRE_OP_GET_BY_TAG, e_klen, 1, WIRE_EKEYLEN);
    check_rule(WIRE_OP_TSTACK_PUSH, e_ntags, 2, WIRE_ETAGS);
    check_rule(WIRE_OP_TSTACK_POP, e_ntags, 0, WIRE_ETAGS);
    check_rule(WIRE_OP_STATS, e_klen, 0, WIRE_OK);
    check_rule(WIRE_OP_DELETE, e_cas, 0, WIRE_OK);

    /* get_by_tag tags must share one tkey. */
    uint8_t buf[128];
    struct wire_hdr h;
    struct wire_tag mixed[2] = {{1, 1}, {2, 1}};
    struct wire_msg m;
    wire_hdr_request(&h, WIRE_OP_DEL_BY_TAG);
    h.ntags = 2;
    ssize_t n = wire_compose(buf, sizeof(buf), &h, mixed, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), n);
    assert_int_equal(wire_check_request(&m), WIRE_ETAGS);
    assert_true(wire_err_in_sync(WIRE_ETAGS));
    assert_true(wire_err_in_sync(WIRE_EFIELD));

    /* STALE: DEL_BY_TAG requests only, and it allows an expiry */
    struct wire_tag one = {1, 1};
    wire_hdr_request(&h, WIRE_OP_DEL_BY_TAG);
    h.ntags = 1;
    h.expiry = 30;
    n = wire_compose(buf, sizeof(buf), &h, &one, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), n);
    assert_int_equal(wire_check_request(&m), WIRE_EFIELD);
    h.flags = WIRE_F_STALE;
    n = wire_compose(buf, sizeof(buf), &h, &one, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), n);
    assert_int_equal(wire_check_request(&m), WIRE_OK);
    h.flags = WIRE_F_STALE | WIRE_F_QUIET;
    n = wire_compose(buf, sizeof(buf), &h, &one, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), n);
    assert_int_equal(wire_check_request(&m), WIRE_OK);
    h.flags = WIRE_F_STALE | WIRE_F_RESPONSE;
    n = wire_compose(buf, sizeof(buf), &h, &one, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), WIRE_EFLAGS);
    wire_hdr_request(&h, WIRE_OP_GET_BY_TAG);
    h.ntags = 1;
    h.flags = WIRE_F_STALE;
    n = wire_compose(buf, sizeof(buf), &h, &one, NULL, NULL);
    assert_int_equal(wire_parse(buf, (size_t)n, &m, NO_LIMIT), WIRE_EFLAGS);
}

/* Compose h with key "k" and value v[vlen]; parse; the check's result. */
static int lease_rule(const struct wire_hdr *hin, const void *v, uint32_t vlen,
                      int *parse_rc)
{
    uint8_t buf[128];
    struct wire_hdr h = *hin;
    struct wire_msg m;

    h.klen = 1;
    h.vlen = vlen;
    ssize_t n = wire_compose(buf, sizeof(buf), &h, NULL, "k", v);
    assert_true(n > 0);
    ssize_t rc = wire_parse(buf, (size_t)n, &m, NO_LIMIT);
    *parse_rc = rc == n ? WIRE_OK : (int)rc;
    return *parse_rc == WIRE_OK ? wire_check_request(&m) : *parse_rc;
}

/* LEASE gets, stale DELETE, SET/CAS invalidate mode, and the W/X/Z reply
 * flags (docs/protocol.md, "Lease gets"). */
static void test_lease_rules(void **state)
{
    static const uint8_t ttl16[WIRE_LEASE_VLEN];
    static const uint8_t ops[] = {WIRE_OP_GET, WIRE_OP_GETK, WIRE_OP_GAT,
                                  WIRE_OP_GATK};
    struct wire_hdr h;
    int prc;

    (void)state;
    for (size_t i = 0; i < sizeof(ops); i++) {
        wire_hdr_request(&h, ops[i]);
        h.flags = WIRE_F_LEASE;
        assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_OK);
        assert_int_equal(lease_rule(&h, ttl16, 16, &prc), WIRE_OK);
        assert_int_equal(lease_rule(&h, ttl16, 8, &prc), WIRE_EFIELD);
        h.flags = 0; /* the old request keeps its rule: no value */
        assert_int_equal(lease_rule(&h, ttl16, 16, &prc), WIRE_EFIELD);
        h.flags = WIRE_F_LEASE | WIRE_F_QUIET;
        assert_int_equal(lease_rule(&h, ttl16, 16, &prc), WIRE_OK);
        h.flags = WIRE_F_PENDING; /* a response flag */
        assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFLAGS);
        /* a reply may carry W, X and Z */
        h.flags = WIRE_F_RESPONSE | WIRE_F_LEASE_STATE;
        assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFLAGS);
        assert_int_equal(prc, WIRE_OK); /* parsed; only a request check */
    }
    /* LEASE elsewhere; reply flags on another opcode's response */
    wire_hdr_request(&h, WIRE_OP_DELETE);
    h.flags = WIRE_F_LEASE;
    assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFLAGS);
    wire_hdr_request(&h, WIRE_OP_TOUCH);
    h.flags = WIRE_F_LEASE;
    assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFLAGS);
    wire_hdr_request(&h, WIRE_OP_DELETE);
    h.flags = WIRE_F_RESPONSE | WIRE_F_WIN;
    assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFLAGS);
    /* DELETE with STALE: an expiry and a CAS allowed */
    wire_hdr_request(&h, WIRE_OP_DELETE);
    h.expiry = 30;
    assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_EFIELD);
    h.flags = WIRE_F_STALE;
    h.cas = 7;
    assert_int_equal(lease_rule(&h, NULL, 0, &prc), WIRE_OK);
    /* SET/CAS with STALE: a CAS needed; other stores refuse the flag */
    wire_hdr_request(&h, WIRE_OP_SET);
    h.flags = WIRE_F_STALE;
    assert_int_equal(lease_rule(&h, "v", 1, &prc), WIRE_EFIELD);
    h.cas = 9;
    assert_int_equal(lease_rule(&h, "v", 1, &prc), WIRE_OK);
    h.opcode = WIRE_OP_CAS;
    assert_int_equal(lease_rule(&h, "v", 1, &prc), WIRE_OK);
    h.opcode = WIRE_OP_ADD;
    h.cas = 0;
    assert_int_equal(lease_rule(&h, "v", 1, &prc), WIRE_EFLAGS);
    h.opcode = WIRE_OP_APPEND;
    assert_int_equal(lease_rule(&h, "v", 1, &prc), WIRE_EFLAGS);
}

static void test_compose_nospace(void **state)
{
    (void)state;
    uint8_t buf[sizeof(example_req)];
    struct wire_msg m;
    parse_whole(example_req, sizeof(example_req), &m);
    struct wire_tag t = wire_msg_tag(&m, 0);
    assert_int_equal(wire_compose(buf, sizeof(buf) - 1, &m.hdr, &t, m.key,
                                  m.value),
                     WIRE_ENOSPACE);
    assert_int_equal(wire_compose(buf, sizeof(buf), &m.hdr, &t, m.key,
                                  m.value),
                     (ssize_t)sizeof(buf));
}

static void test_status_names(void **state)
{
    (void)state;
    /* Wire statuses 0..10 are store.h's, value for value. */
    assert_int_equal(WIRE_S_OK, ST_OK);
    assert_int_equal(WIRE_S_NOT_FOUND, ST_NOT_FOUND);
    assert_int_equal(WIRE_S_EXISTS, ST_EXISTS);
    assert_int_equal(WIRE_S_NOT_STORED, ST_NOT_STORED);
    assert_int_equal(WIRE_S_TOO_LARGE, ST_TOO_LARGE);
    assert_int_equal(WIRE_S_KEY_INVALID, ST_KEY_INVALID);
    assert_int_equal(WIRE_S_NO_MEMORY, ST_NO_MEMORY);
    assert_int_equal(WIRE_S_TOO_MANY_TAGS, ST_TOO_MANY_TAGS);
    assert_int_equal(WIRE_S_NOT_NUMBER, ST_NOT_NUMBER);
    assert_int_equal(WIRE_S_TRUNCATED, ST_TRUNCATED);
    assert_int_equal(WIRE_S_INVALID, ST_INVALID);
    for (int s = ST_OK; s <= ST_INVALID; s++)
        assert_int_equal(wire_status_from_store(s), s);
    assert_int_equal(wire_status_from_store(-1), WIRE_S_INTERNAL);
    assert_int_equal(wire_status_from_store(99), WIRE_S_INTERNAL);
    assert_int_equal(WIRE_MAX_KEY, STORE_MAX_KEY);
    assert_string_equal(wire_strstatus(WIRE_S_TRUNCATED), "truncated");
    assert_string_equal(wire_strstatus(0x7777), "unknown status");
    for (int rc = WIRE_OK; rc >= WIRE_ENOSPACE; rc--)
        assert_string_not_equal(wire_strerror(rc), "unknown error");
    assert_null(wire_opcode_name(0xEE));
    assert_string_equal(wire_opcode_name(WIRE_OP_GET_BY_TAG), "get_by_tag");
}

/* The status a server answers for each parse or check error (what a
 * client sees before the close or the skip), and the texts of the errors. */
static void test_err_status(void **state)
{
    (void)state;
    static const struct {
        int rc;
        uint16_t status;
    } map[] = {
        {WIRE_OK, WIRE_S_OK},
        {WIRE_EMAGIC, WIRE_S_BAD_MAGIC},
        {WIRE_EVERSION, WIRE_S_BAD_VERSION},
        {WIRE_ETOOBIG, WIRE_S_MSG_TOO_LARGE},
        {WIRE_EOPCODE, WIRE_S_UNKNOWN_OPCODE},
        {WIRE_EKEYLEN, WIRE_S_KEY_INVALID},
        {WIRE_EFLAGS, WIRE_S_MALFORMED},
        {WIRE_ERESERVED, WIRE_S_MALFORMED},
        {WIRE_ESTATUS, WIRE_S_MALFORMED},
        {WIRE_EFIELD, WIRE_S_MALFORMED},
        {WIRE_ETAGS, WIRE_S_MALFORMED},
        {WIRE_ENOSPACE, WIRE_S_INTERNAL},
        {WIRE_AGAIN, WIRE_S_INTERNAL},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        assert_int_equal(wire_err_status(map[i].rc), map[i].status);
    assert_string_equal(wire_strerror(WIRE_EOPCODE), "unknown opcode");
    assert_string_equal(wire_strerror(1), "unknown error");
    assert_string_equal(wire_strerror(-100), "unknown error");

    /* a request with an opcode no rule knows */
    struct wire_msg m;
    memset(&m, 0, sizeof(m));
    m.hdr.magic = WIRE_MAGIC;
    m.hdr.opcode = 0xEE;
    assert_int_equal(wire_check_request(&m), WIRE_EOPCODE);
    assert_true(wire_err_in_sync(WIRE_EOPCODE));
}

static void test_le_helpers(void **state)
{
    (void)state;
    uint8_t b[9];
    wire_put_u64(b + 1, 0x0102030405060708ull); /* unaligned on purpose */
    const uint8_t want[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    assert_memory_equal(b + 1, want, 8);
    assert_true(wire_get_u64(b + 1) == 0x0102030405060708ull);
    wire_encode_tag(b + 1, -1, INT32_MIN);
    const uint8_t tag[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80};
    assert_memory_equal(b + 1, tag, 8);
    struct wire_tag t;
    wire_decode_tags(b + 1, 1, &t);
    assert_int_equal(t.tkey, -1);
    assert_int_equal(t.tval, INT32_MIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_opcode),
        cmocka_unit_test(test_example_bytes),
        cmocka_unit_test(test_example_matches_doc),
        cmocka_unit_test(test_partial_every_split),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_truncated_header),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_bad_version),
        cmocka_unit_test(test_reserved_bits),
        cmocka_unit_test(test_key_too_long),
        cmocka_unit_test(test_huge_tag_count),
        cmocka_unit_test(test_value_past_bound),
        cmocka_unit_test(test_lengths_past_end),
        cmocka_unit_test(test_request_rules),
        cmocka_unit_test(test_lease_rules),
        cmocka_unit_test(test_compose_nospace),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_err_status),
        cmocka_unit_test(test_le_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
