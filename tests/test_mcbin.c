/*
 * test_mcbin.c - memcached's binary protocol codec (protocol/mcbin.c) on
 * plain buffers: headers both ways, each opcode's shape as memcached 1.6
 * checks it, the quiet and K forms folded, partial input, the errors that
 * keep the stream and those that lose it, the too-large value refused
 * with its key, and the error replies' texts.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/mcbin.h"

static const struct mcbin_limits lim = {1024, 64 * 1024};

static size_t mk(uint8_t *out, uint8_t op, const void *ext, uint8_t extlen,
                 const char *key, const void *val, uint32_t vlen)
{
    return mcbin_request(out, op, ext, extlen, key,
                         key != NULL ? (uint16_t)strlen(key) : 0, val, vlen,
                         0x01020304, 0);
}

static void test_header_roundtrip(void **state)
{
    struct mcbin_hdr h = {0x80, 0x1d, 0x1234, 20, 0, 0xbeef, 0x01020304,
                          0xa1b2c3d4, 0x1122334455667788ull};
    struct mcbin_hdr g;
    uint8_t b[MCBIN_HDR_LEN];
    static const uint8_t want[MCBIN_HDR_LEN] = {
        0x80, 0x1d, 0x12, 0x34, 20,   0,    0xbe, 0xef, 1,    2,    3,    4,
        0xa1, 0xb2, 0xc3, 0xd4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};

    (void)state;
    mcbin_encode_header(b, &h);
    assert_memory_equal(b, want, sizeof(want)); /* big-endian throughout */
    mcbin_decode_header(b, &g);
    assert_memory_equal(&g, &h, sizeof(h));
}

static void test_get_forms(void **state)
{
    static const struct {
        uint8_t op;
        bool quiet, with_key;
    } forms[] = {{MCBIN_OP_GET, false, false},
                 {MCBIN_OP_GETQ, true, false},
                 {MCBIN_OP_GETK, false, true},
                 {MCBIN_OP_GETKQ, true, true}};
    uint8_t b[64];
    struct mcbin_req r;
    size_t i, n;

    (void)state;
    for (i = 0; i < 4; i++) {
        n = mk(b, forms[i].op, NULL, 0, "key", NULL, 0);
        assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
        assert_int_equal(r.cmd, MCBIN_OP_GET);
        assert_int_equal(r.quiet, forms[i].quiet);
        assert_int_equal(r.with_key, forms[i].with_key);
        assert_int_equal(r.klen, 3);
        assert_memory_equal(r.key, "key", 3);
        assert_int_equal(r.hdr.opaque, 0x01020304);
        assert_int_equal(r.hdr.opcode, forms[i].op);
    }
}

static void test_set_extras(void **state)
{
    uint8_t b[64], ext[8];
    struct mcbin_req r;
    size_t n;

    (void)state;
    mcbin_put_u32(ext, 0xdeadbeef); /* flags */
    mcbin_put_u32(ext + 4, 3600);   /* exptime */
    n = mk(b, MCBIN_OP_SETQ, ext, 8, "k", "value", 5);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    assert_int_equal(r.cmd, MCBIN_OP_SET);
    assert_true(r.quiet);
    assert_int_equal(r.flags, 0xdeadbeef);
    assert_int_equal(r.exptime, 3600);
    assert_int_equal(r.vlen, 5);
    assert_memory_equal(r.value, "value", 5);
    /* an empty value is a value */
    n = mk(b, MCBIN_OP_ADD, ext, 8, "k", NULL, 0);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    assert_int_equal(r.cmd, MCBIN_OP_ADD);
    assert_int_equal(r.vlen, 0);
}

static void test_incr_extras(void **state)
{
    uint8_t b[64], ext[20];
    struct mcbin_req r;
    size_t n;

    (void)state;
    mcbin_put_u64(ext, 7);
    mcbin_put_u64(ext + 8, 1000);
    mcbin_put_u32(ext + 16, 0xffffffff);
    n = mk(b, MCBIN_OP_DECRQ, ext, 20, "ctr", NULL, 0);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    assert_int_equal(r.cmd, MCBIN_OP_DECR);
    assert_true(r.quiet);
    assert_int_equal(r.delta, 7);
    assert_int_equal(r.initial, 1000);
    assert_int_equal(r.exptime, 0xffffffff);
}

static void test_no_key_ops(void **state)
{
    static const uint8_t ops[] = {MCBIN_OP_NOOP, MCBIN_OP_VERSION,
                                  MCBIN_OP_QUIT, MCBIN_OP_QUITQ,
                                  MCBIN_OP_FLUSH, MCBIN_OP_FLUSHQ,
                                  MCBIN_OP_STAT, MCBIN_OP_SASL_LIST};
    uint8_t b[64], ext[4] = {0, 0, 0, 9};
    struct mcbin_req r;
    size_t i, n;

    (void)state;
    for (i = 0; i < sizeof(ops); i++) {
        n = mk(b, ops[i], NULL, 0, NULL, NULL, 0);
        assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
        /* a key where none belongs: invalid, the stream lost */
        n = mk(b, ops[i], NULL, 0, "k", NULL, 0);
        if (ops[i] == MCBIN_OP_STAT) {
            assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
            continue;
        }
        assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
        assert_int_equal(r.status, MCBIN_S_INVALID);
        assert_true(r.close);
    }
    /* FLUSH's delay is optional */
    n = mk(b, MCBIN_OP_FLUSH, ext, 4, NULL, NULL, 0);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    assert_true(r.has_exptime);
    assert_int_equal(r.exptime, 9);
    n = mk(b, MCBIN_OP_VERBOSITY, ext, 4, NULL, NULL, 0);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    assert_int_equal(r.level, 9);
}

/* memcached 1.6's checks: each one "invalid arguments", then close. */
static void test_bad_shapes(void **state)
{
    uint8_t b[512], ext[20] = {0};
    char longkey[252];
    struct mcbin_req r;
    size_t n;

    (void)state;
    memset(longkey, 'k', 251);
    longkey[251] = '\0';
    n = mk(b, MCBIN_OP_GET, ext, 4, "k", NULL, 0); /* extras on a get */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_INVALID);
    assert_true(r.close);
    n = mk(b, MCBIN_OP_GET, NULL, 0, NULL, NULL, 0); /* no key */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    n = mk(b, MCBIN_OP_GET, NULL, 0, "k", "v", 1); /* a value on a get */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_true(r.close);
    n = mk(b, MCBIN_OP_SET, ext, 4, "k", "v", 1); /* set wants 8 extras */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    n = mk(b, MCBIN_OP_INCR, ext, 8, "k", NULL, 0); /* incr wants 20 */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    n = mk(b, MCBIN_OP_TOUCH, NULL, 0, "k", NULL, 0); /* touch wants 4 */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    n = mk(b, MCBIN_OP_FLUSH, ext, 8, NULL, NULL, 0); /* 0 or 4 */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    n = mk(b, MCBIN_OP_GET, NULL, 0, longkey, NULL, 0); /* over 250 */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_INVALID);
    assert_true(r.close);
    longkey[250] = '\0'; /* 250 is fine */
    n = mk(b, MCBIN_OP_GET, NULL, 0, longkey, NULL, 0);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
}

/* Key and extras longer than the body: memcached's "unknown command",
 * then close; nothing read past the header. */
static void test_lengths_contradict(void **state)
{
    uint8_t b[MCBIN_HDR_LEN];
    struct mcbin_hdr h = {0x80, MCBIN_OP_GET, 10, 0, 0, 0, 2, 77, 0};
    struct mcbin_req r;

    (void)state;
    mcbin_encode_header(b, &h);
    assert_int_equal(mcbin_parse(b, sizeof(b), &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_UNKNOWN);
    assert_true(r.close);
    assert_int_equal(r.hdr.opaque, 77);
    h.klen = 1;
    h.extlen = 8;
    h.bodylen = 8; /* extras + key = 9 > 8 */
    mcbin_encode_header(b, &h);
    assert_int_equal(mcbin_parse(b, sizeof(b), &lim, &r), MCBIN_ERROR);
    assert_true(r.close);
}

static void test_bad_magic(void **state)
{
    uint8_t b[64];
    struct mcbin_req r;
    size_t n = mk(b, MCBIN_OP_NOOP, NULL, 0, NULL, NULL, 0);

    (void)state;
    b[0] = 0x81; /* a response where a request belongs */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_INVALID);
    assert_true(r.close);
    /* no need to wait for a whole header to know */
    assert_int_equal(mcbin_parse("get k\r\n", 3, &lim, &r), MCBIN_ERROR);
    assert_true(r.close);
}

/* An opcode memcached does not serve: answered, the body skipped. */
static void test_unknown_opcode(void **state)
{
    uint8_t b[64];
    struct mcbin_req r;
    size_t n = mcbin_request(b, 0x50, NULL, 0, "x", 1, "yy", 2, 9, 0);
    struct mcbin_hdr h = {0x80, 0x50, 0, 0, 0, 0, 1u << 30, 9, 0};

    (void)state;
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_UNKNOWN);
    assert_false(r.close);
    assert_int_equal(r.skip, n);
    /* known only from its header: the body need not be there */
    assert_int_equal(mcbin_parse(b, MCBIN_HDR_LEN, &lim, &r), MCBIN_ERROR);
    assert_int_equal(r.skip, n);
    /* a body no one sends by mistake: close rather than read it */
    mcbin_encode_header(b, &h);
    assert_int_equal(mcbin_parse(b, MCBIN_HDR_LEN, &lim, &r), MCBIN_ERROR);
    assert_true(r.close);
}

/* A value over the limit: refused as soon as the key is in, the rest to
 * be skipped; a claim far over it closes. */
static void test_too_large(void **state)
{
    uint8_t *b = calloc(1, 4096), *v = calloc(1, 2048), ext[8] = {0};
    struct mcbin_req r;
    size_t n;

    (void)state;
    n = mk(b, MCBIN_OP_SETQ, ext, 8, "bigkey", v, 2000);
    assert_int_equal(mcbin_parse(b, MCBIN_HDR_LEN + 4, &lim, &r), MCBIN_AGAIN);
    assert_int_equal(r.need, MCBIN_HDR_LEN + 8 + 6);
    assert_int_equal(mcbin_parse(b, MCBIN_HDR_LEN + 14, &lim, &r),
                     MCBIN_ERROR);
    assert_int_equal(r.status, MCBIN_S_TOO_LARGE);
    assert_false(r.close);
    assert_int_equal(r.skip, n);
    assert_int_equal(r.klen, 6);
    assert_memory_equal(r.key, "bigkey", 6);
    assert_int_equal(r.cmd, MCBIN_OP_SET);
    /* exactly the limit is fine */
    n = mk(b, MCBIN_OP_SET, ext, 8, "k", v, 1024);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    /* 1 GiB claimed */
    {
        struct mcbin_hdr h = {0x80, MCBIN_OP_SET, 1, 8, 0, 0, 1u << 30, 0, 0};
        mcbin_encode_header(b, &h);
        assert_int_equal(mcbin_parse(b, MCBIN_HDR_LEN + 9, &lim, &r),
                         MCBIN_ERROR);
        assert_int_equal(r.status, MCBIN_S_TOO_LARGE);
        assert_true(r.close);
    }
    free(v);
    free(b);
}

/* Every prefix of a request asks for more, with the right count. */
static void test_partial(void **state)
{
    uint8_t b[64], ext[8] = {0};
    struct mcbin_req r;
    size_t n = mk(b, MCBIN_OP_SET, ext, 8, "key", "value", 5), i;

    (void)state;
    for (i = 0; i < n; i++) {
        assert_int_equal(mcbin_parse(b, i, &lim, &r), MCBIN_AGAIN);
        assert_int_equal(r.need, i < MCBIN_HDR_LEN ? MCBIN_HDR_LEN : n);
    }
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
}

static void test_sasl_bound(void **state)
{
    uint8_t *b = calloc(1, 8192), *v = calloc(1, MCBIN_SASL_MAX + 1);
    struct mcbin_req r;
    size_t n;

    (void)state;
    n = mk(b, MCBIN_OP_SASL_AUTH, NULL, 0, "PLAIN", v, MCBIN_SASL_MAX);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), (ssize_t)n);
    n = mk(b, MCBIN_OP_SASL_AUTH, NULL, 0, "PLAIN", v, MCBIN_SASL_MAX + 1);
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    assert_true(r.close);
    n = mk(b, MCBIN_OP_SASL_AUTH, NULL, 0, NULL, NULL, 0); /* no mech */
    assert_int_equal(mcbin_parse(b, n, &lim, &r), MCBIN_ERROR);
    free(v);
    free(b);
}

static void test_compose(void **state)
{
    struct mcbin_hdr req = {0x80, MCBIN_OP_DELETEQ, 0, 0, 0, 0, 0, 0xcafe, 0};
    uint8_t b[128];
    struct mcbin_hdr h;
    size_t n;

    (void)state;
    n = mcbin_error(b, &req, MCBIN_S_NOT_FOUND);
    assert_int_equal(n, MCBIN_HDR_LEN + 9);
    assert_int_equal(mcbin_error_len(MCBIN_S_NOT_FOUND), n);
    mcbin_decode_header(b, &h);
    assert_int_equal(h.magic, 0x81);
    assert_int_equal(h.opcode, MCBIN_OP_DELETEQ);
    assert_int_equal(h.status, MCBIN_S_NOT_FOUND);
    assert_int_equal(h.bodylen, 9);
    assert_int_equal(h.opaque, 0xcafe);
    assert_memory_equal(b + MCBIN_HDR_LEN, "Not found", 9);
    mcbin_response(b, &req, 0, 4, 3, 10, 42);
    mcbin_decode_header(b, &h);
    assert_int_equal(h.extlen, 4);
    assert_int_equal(h.klen, 3);
    assert_int_equal(h.bodylen, 17);
    assert_int_equal(h.cas, 42);
    assert_string_equal(mcbin_status_text(MCBIN_S_AUTH_ERROR),
                        "Auth failure.");
    assert_string_equal(mcbin_status_text(MCBIN_S_EXISTS),
                        "Data exists for key.");
    assert_string_equal(mcbin_op_name(MCBIN_OP_GATKQ), "GATKQ");
    assert_null(mcbin_op_name(0x50));
}

/* A pipelined stream parses request by request. */
static void test_pipeline(void **state)
{
    uint8_t b[1024], ext[8] = {0};
    struct mcbin_req r;
    size_t n = 0, off = 0;
    int count = 0;
    uint8_t last = 0;
    ssize_t k;

    (void)state;
    n += mk(b + n, MCBIN_OP_SETQ, ext, 8, "a", "1", 1);
    n += mk(b + n, MCBIN_OP_GETKQ, NULL, 0, "a", NULL, 0);
    n += mk(b + n, MCBIN_OP_GETKQ, NULL, 0, "b", NULL, 0);
    n += mk(b + n, MCBIN_OP_NOOP, NULL, 0, NULL, NULL, 0);
    while ((k = mcbin_parse(b + off, n - off, &lim, &r)) > 0) {
        off += (size_t)k;
        last = r.cmd;
        count++;
    }
    assert_int_equal(count, 4);
    assert_int_equal(off, n);
    assert_int_equal(last, MCBIN_OP_NOOP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_roundtrip),
        cmocka_unit_test(test_get_forms),
        cmocka_unit_test(test_set_extras),
        cmocka_unit_test(test_incr_extras),
        cmocka_unit_test(test_no_key_ops),
        cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_lengths_contradict),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_unknown_opcode),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_partial),
        cmocka_unit_test(test_sasl_bound),
        cmocka_unit_test(test_compose),
        cmocka_unit_test(test_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
