/*
 * test_mcbin_server.c - memcached's binary protocol against a real daemon
 * (docs/protocol-binary.md): every opcode and every status it answers,
 * with the replies memcached 1.6.18 gives (its texts, CAS rules, quiet
 * forms, the key of a GETK miss, the flags of a TOUCH hit), STAT and its
 * groups, large values, a pipelined quiet multi-get, hostile headers
 * (bad magic mid-stream, lengths that contradict, a huge body, an
 * unknown opcode) answered or closed while another client is served, the
 * Unix socket, the counters in text stats, and SASL PLAIN against
 * --auth-file beside the text login.  MDC_TEST_IO=epoll runs it on the
 * other backend.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "protocol/mcbin.h"
#include "server_client.h"

static struct tsrv g_srv;

struct rsp {
    struct mcbin_hdr h;
    uint8_t *body;
    uint8_t *ext, *key, *val;
    uint32_t vlen;
};

static void rsp_free(struct rsp *r)
{
    free(r->body);
    r->body = NULL;
}

static int mc_conn(void)
{
    int fd = tc_connect(&g_srv);

    assert_true(fd >= 0);
    tc_set_timeout_ms(fd, 30000);
    return fd;
}

/* One response; -1 on EOF or a timeout. */
static int rd(int fd, struct rsp *r)
{
    uint8_t h[MCBIN_HDR_LEN];

    memset(r, 0, sizeof(*r));
    if (tc_read_full(fd, h, sizeof(h)) < 0)
        return -1;
    mcbin_decode_header(h, &r->h);
    assert_int_equal(r->h.magic, MCBIN_RES);
    r->body = malloc(r->h.bodylen + 1);
    assert_non_null(r->body);
    if (r->h.bodylen > 0 && tc_read_full(fd, r->body, r->h.bodylen) < 0) {
        rsp_free(r);
        return -1;
    }
    r->body[r->h.bodylen] = 0;
    r->ext = r->body;
    r->key = r->body + r->h.extlen;
    r->val = r->key + r->h.klen;
    r->vlen = r->h.bodylen - r->h.extlen - r->h.klen;
    return 0;
}

static void snd(int fd, uint8_t op, const void *ext, uint8_t extlen,
                const char *key, const void *val, uint32_t vlen,
                uint64_t cas)
{
    size_t klen = key != NULL ? strlen(key) : 0;
    uint8_t *b = malloc(MCBIN_HDR_LEN + extlen + klen + vlen);
    size_t n;

    assert_non_null(b);
    n = mcbin_request(b, op, ext, extlen, key, (uint16_t)klen, val, vlen,
                      0x5eed0000u | op, cas);
    assert_int_equal(tc_send_all(fd, b, n), 0);
    free(b);
}

/* Send one request, read its one response. */
static void call(int fd, uint8_t op, const void *ext, uint8_t extlen,
                 const char *key, const void *val, uint32_t vlen,
                 uint64_t cas, struct rsp *r)
{
    snd(fd, op, ext, extlen, key, val, vlen, cas);
    assert_int_equal(rd(fd, r), 0);
    assert_int_equal(r->h.opcode, op);
    assert_int_equal(r->h.opaque, 0x5eed0000u | op);
}

static void expect_status(const struct rsp *r, uint16_t st)
{
    if (r->h.status != st)
        fail_msg("opcode 0x%02x: status 0x%04x (%.*s), want 0x%04x",
                 r->h.opcode, r->h.status, (int)r->vlen, r->val, st);
    if (st != MCBIN_S_OK && st != MCBIN_S_AUTH_CONTINUE &&
        !(st == MCBIN_S_NOT_FOUND && r->h.klen > 0)) {
        const char *t = mcbin_status_text(st);
        assert_int_equal(r->vlen, strlen(t));
        assert_memory_equal(r->val, t, r->vlen);
    }
}

static uint64_t set_(int fd, uint8_t op, const char *k, const char *v,
                     uint32_t flags, uint64_t cas, uint16_t want)
{
    uint8_t ext[8];
    struct rsp r;
    uint64_t got;

    mcbin_put_u32(ext, flags);
    mcbin_put_u32(ext + 4, 0);
    call(fd, op, ext, 8, k, v, (uint32_t)strlen(v), cas, &r);
    expect_status(&r, want);
    if (want == MCBIN_S_OK)
        assert_true(r.h.cas != 0);
    else
        assert_int_equal(r.h.cas, 0);
    got = r.h.cas;
    rsp_free(&r);
    return got;
}

/* GET k: the value (NULL on a miss) and its CAS. */
static char *get_(int fd, const char *k, uint64_t *cas, uint32_t *flags)
{
    struct rsp r;
    char *v = NULL;

    call(fd, MCBIN_OP_GET, NULL, 0, k, NULL, 0, 0, &r);
    if (r.h.status == MCBIN_S_OK) {
        assert_int_equal(r.h.extlen, 4);
        assert_int_equal(r.h.klen, 0);
        v = strndup((char *)r.val, r.vlen);
        if (cas)
            *cas = r.h.cas;
        if (flags)
            *flags = mcbin_get_u32(r.ext);
    } else {
        expect_status(&r, MCBIN_S_NOT_FOUND);
    }
    rsp_free(&r);
    return v;
}

static void noop_(int fd)
{
    struct rsp r;

    call(fd, MCBIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.h.bodylen, 0);
    rsp_free(&r);
}

static void ukey(char *k, size_t n, const char *what)
{
    static unsigned seq;

    snprintf(k, n, "mcbin-%s-%d-%u", what, (int)getpid(), ++seq);
}

static long long text_stat(const char *name)
{
    int fd = tc_connect(&g_srv);
    char buf[65536], want[128];
    size_t got = 0;
    char *p;
    long long v = -1;

    assert_true(fd >= 0);
    assert_int_equal(tc_send_all(fd, "stats\r\n", 7), 0);
    while (got < sizeof(buf) - 1) {
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "END\r\n") != NULL)
            break;
    }
    close(fd);
    snprintf(want, sizeof(want), "STAT %s ", name);
    if ((p = strstr(buf, want)) != NULL)
        v = atoll(p + strlen(want));
    return v;
}

/* ---- the opcodes ------------------------------------------------------- */

static void test_get_forms(void **state)
{
    char k[64];
    struct rsp r;
    uint64_t cas;
    uint32_t flags = 0;
    char *v;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "get");
    cas = set_(fd, MCBIN_OP_SET, k, "hello", 0xabcdef01, 0, MCBIN_S_OK);
    v = get_(fd, k, NULL, &flags);
    assert_string_equal(v, "hello");
    assert_int_equal(flags, 0xabcdef01);
    free(v);
    /* GETK: the key in the reply, CAS in the header */
    call(fd, MCBIN_OP_GETK, NULL, 0, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.h.klen, strlen(k));
    assert_memory_equal(r.key, k, strlen(k));
    assert_int_equal(r.vlen, 5);
    assert_int_equal(r.h.cas, cas);
    rsp_free(&r);
    /* misses: GET "Not found", GETK the key without a text */
    call(fd, MCBIN_OP_GET, NULL, 0, "mcbin-no-such", NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_NOT_FOUND);
    rsp_free(&r);
    call(fd, MCBIN_OP_GETK, NULL, 0, "mcbin-no-such", NULL, 0, 0, &r);
    assert_int_equal(r.h.status, MCBIN_S_NOT_FOUND);
    assert_int_equal(r.h.klen, 13);
    assert_int_equal(r.vlen, 0);
    assert_memory_equal(r.key, "mcbin-no-such", 13);
    rsp_free(&r);
    /* quiet misses say nothing, quiet hits answer: then NOOP */
    snd(fd, MCBIN_OP_GETQ, NULL, 0, "mcbin-no-such", NULL, 0, 0);
    snd(fd, MCBIN_OP_GETKQ, NULL, 0, "mcbin-no-such", NULL, 0, 0);
    snd(fd, MCBIN_OP_GETQ, NULL, 0, k, NULL, 0, 0);
    snd(fd, MCBIN_OP_GETKQ, NULL, 0, k, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_GETQ);
    assert_int_equal(r.h.klen, 0);
    assert_memory_equal(r.val, "hello", 5);
    rsp_free(&r);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_GETKQ);
    assert_memory_equal(r.key, k, strlen(k));
    rsp_free(&r);
    noop_(fd);
    close(fd);
}

static void test_store_statuses(void **state)
{
    char k[64], k2[64];
    uint64_t c1, c2;
    struct rsp r;
    char *v;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "store");
    ukey(k2, sizeof(k2), "store");
    /* add: new key stored, present key "exists" */
    c1 = set_(fd, MCBIN_OP_ADD, k, "a", 0, 0, MCBIN_S_OK);
    set_(fd, MCBIN_OP_ADD, k, "b", 0, 0, MCBIN_S_EXISTS);
    /* replace: missing key "not found", present one stored */
    set_(fd, MCBIN_OP_REPLACE, k2, "x", 0, 0, MCBIN_S_NOT_FOUND);
    c2 = set_(fd, MCBIN_OP_REPLACE, k, "c", 0, 0, MCBIN_S_OK);
    assert_true(c2 != c1);
    /* CAS: a SET with the current CAS stores, an old one "exists", any
     * CAS on a missing key "not found"; ADD and REPLACE with a CAS are
     * compare-and-swaps too (memcached's rule) */
    set_(fd, MCBIN_OP_SET, k, "d", 0, c1, MCBIN_S_EXISTS);
    c1 = set_(fd, MCBIN_OP_SET, k, "e", 0, c2, MCBIN_S_OK);
    set_(fd, MCBIN_OP_SET, k2, "f", 0, 12345, MCBIN_S_NOT_FOUND);
    set_(fd, MCBIN_OP_ADD, k2, "f", 0, 12345, MCBIN_S_NOT_FOUND);
    c1 = set_(fd, MCBIN_OP_ADD, k, "g", 0, c1, MCBIN_S_OK);
    c1 = set_(fd, MCBIN_OP_REPLACE, k, "h", 0, c1, MCBIN_S_OK);
    set_(fd, MCBIN_OP_REPLACE, k, "i", 0, c1 + 1000, MCBIN_S_EXISTS);
    v = get_(fd, k, NULL, NULL);
    assert_string_equal(v, "h");
    free(v);
    /* append / prepend keep the flags; missing key "not stored"; a CAS
     * must match */
    call(fd, MCBIN_OP_APPEND, NULL, 0, k, "Z", 1, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    call(fd, MCBIN_OP_PREPEND, NULL, 0, k, "A", 1, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    c1 = r.h.cas;
    rsp_free(&r);
    call(fd, MCBIN_OP_APPEND, NULL, 0, k2, "Z", 1, 0, &r);
    expect_status(&r, MCBIN_S_NOT_STORED);
    rsp_free(&r);
    call(fd, MCBIN_OP_APPEND, NULL, 0, k, "Z", 1, c1 + 1000, &r);
    expect_status(&r, MCBIN_S_EXISTS);
    rsp_free(&r);
    call(fd, MCBIN_OP_APPEND, NULL, 0, k, "!", 1, c1, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    v = get_(fd, k, NULL, NULL);
    assert_string_equal(v, "AhZ!");
    free(v);
    /* the quiet forms: success silent, an error still answered */
    {
        uint8_t ext[8] = {0};
        snd(fd, MCBIN_OP_SETQ, ext, 8, k2, "q", 1, 0);
        snd(fd, MCBIN_OP_ADDQ, ext, 8, k2, "q", 1, 0);
        snd(fd, MCBIN_OP_REPLACEQ, ext, 8, k2, "r", 1, 0);
        snd(fd, MCBIN_OP_APPENDQ, NULL, 0, k2, "s", 1, 0);
        snd(fd, MCBIN_OP_PREPENDQ, NULL, 0, k2, "p", 1, 0);
        assert_int_equal(rd(fd, &r), 0);
        assert_int_equal(r.h.opcode, MCBIN_OP_ADDQ);
        expect_status(&r, MCBIN_S_EXISTS);
        rsp_free(&r);
        noop_(fd);
        v = get_(fd, k2, NULL, NULL);
        assert_string_equal(v, "prs");
        free(v);
    }
    close(fd);
}

static void test_delete(void **state)
{
    char k[64];
    uint64_t cas;
    struct rsp r;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "del");
    cas = set_(fd, MCBIN_OP_SET, k, "v", 0, 0, MCBIN_S_OK);
    call(fd, MCBIN_OP_DELETE, NULL, 0, k, NULL, 0, cas + 1, &r);
    expect_status(&r, MCBIN_S_EXISTS);
    rsp_free(&r);
    call(fd, MCBIN_OP_DELETE, NULL, 0, k, NULL, 0, cas, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    call(fd, MCBIN_OP_DELETE, NULL, 0, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_NOT_FOUND);
    rsp_free(&r);
    /* DELETEQ: a miss is still answered, a hit is not */
    snd(fd, MCBIN_OP_DELETEQ, NULL, 0, k, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_DELETEQ);
    expect_status(&r, MCBIN_S_NOT_FOUND);
    rsp_free(&r);
    set_(fd, MCBIN_OP_SET, k, "v", 0, 0, MCBIN_S_OK);
    snd(fd, MCBIN_OP_DELETEQ, NULL, 0, k, NULL, 0, 0);
    noop_(fd);
    close(fd);
}

static void incr_(int fd, uint8_t op, const char *k, uint64_t delta,
                  uint64_t initial, uint32_t exp, uint64_t cas, uint16_t st,
                  uint64_t want)
{
    uint8_t ext[20];
    struct rsp r;

    mcbin_put_u64(ext, delta);
    mcbin_put_u64(ext + 8, initial);
    mcbin_put_u32(ext + 16, exp);
    call(fd, op, ext, 20, k, NULL, 0, cas, &r);
    expect_status(&r, st);
    if (st == MCBIN_S_OK) {
        assert_int_equal(r.vlen, 8);
        assert_int_equal(mcbin_get_u64(r.val), want);
        assert_true(r.h.cas != 0);
    }
    rsp_free(&r);
}

static void test_counters(void **state)
{
    char k[64], k2[64];
    uint8_t ext[20] = {0};
    struct rsp r;
    uint64_t cas;
    char *v;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "ctr");
    ukey(k2, sizeof(k2), "ctr");
    /* a miss with expiry 0xffffffff: "not found"; otherwise created at
     * the initial value (the delta not applied) */
    incr_(fd, MCBIN_OP_INCR, k, 5, 100, 0xffffffff, 0, MCBIN_S_NOT_FOUND, 0);
    incr_(fd, MCBIN_OP_INCR, k, 5, 100, 0, 0, MCBIN_S_OK, 100);
    incr_(fd, MCBIN_OP_INCR, k, 5, 100, 0, 0, MCBIN_S_OK, 105);
    incr_(fd, MCBIN_OP_DECR, k, 200, 0, 0, 0, MCBIN_S_OK, 0); /* floor 0 */
    incr_(fd, MCBIN_OP_INCR, k, UINT64_MAX, 0, 0, 0, MCBIN_S_OK, UINT64_MAX);
    incr_(fd, MCBIN_OP_INCR, k, 2, 0, 0, 0, MCBIN_S_OK, 1); /* wraps */
    /* it reads back as decimal digits, through the text protocol too */
    v = get_(fd, k, &cas, NULL);
    assert_string_equal(v, "1");
    free(v);
    /* a CAS must match */
    incr_(fd, MCBIN_OP_INCR, k, 1, 0, 0, cas + 1, MCBIN_S_EXISTS, 0);
    incr_(fd, MCBIN_OP_INCR, k, 1, 0, 0, cas, MCBIN_S_OK, 2);
    /* not a number */
    set_(fd, MCBIN_OP_SET, k2, "abc", 0, 0, MCBIN_S_OK);
    incr_(fd, MCBIN_OP_INCR, k2, 1, 0, 0, 0, MCBIN_S_NON_NUMERIC, 0);
    /* quiet: success silent */
    mcbin_put_u64(ext, 10);
    snd(fd, MCBIN_OP_INCRQ, ext, 20, k, NULL, 0, 0);
    snd(fd, MCBIN_OP_DECRQ, ext, 20, k, NULL, 0, 0);
    snd(fd, MCBIN_OP_DECRQ, ext, 20, k2, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_DECRQ);
    expect_status(&r, MCBIN_S_NON_NUMERIC);
    rsp_free(&r);
    noop_(fd);
    v = get_(fd, k, NULL, NULL);
    assert_string_equal(v, "2");
    free(v);
    close(fd);
}

static void test_touch_gat(void **state)
{
    char k[64];
    uint8_t ext[4];
    struct rsp r;
    uint64_t cas;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "touch");
    cas = set_(fd, MCBIN_OP_SET, k, "tv", 77, 0, MCBIN_S_OK);
    mcbin_put_u32(ext, 1000);
    /* TOUCH: memcached answers a hit with the flags and CAS, no value */
    call(fd, MCBIN_OP_TOUCH, ext, 4, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.h.extlen, 4);
    assert_int_equal(mcbin_get_u32(r.ext), 77);
    assert_int_equal(r.vlen, 0);
    assert_int_equal(r.h.cas, cas);
    rsp_free(&r);
    call(fd, MCBIN_OP_TOUCH, ext, 4, "mcbin-no-such", NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_NOT_FOUND);
    rsp_free(&r);
    call(fd, MCBIN_OP_GAT, ext, 4, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.h.klen, 0);
    assert_memory_equal(r.val, "tv", 2);
    rsp_free(&r);
    call(fd, MCBIN_OP_GATK, ext, 4, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_memory_equal(r.key, k, strlen(k));
    rsp_free(&r);
    call(fd, MCBIN_OP_GATK, ext, 4, "mcbin-no-such", NULL, 0, 0, &r);
    assert_int_equal(r.h.status, MCBIN_S_NOT_FOUND);
    assert_int_equal(r.h.klen, 13);
    rsp_free(&r);
    snd(fd, MCBIN_OP_GATQ, ext, 4, "mcbin-no-such", NULL, 0, 0);
    snd(fd, MCBIN_OP_GATKQ, ext, 4, "mcbin-no-such", NULL, 0, 0);
    snd(fd, MCBIN_OP_GATKQ, ext, 4, k, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_GATKQ);
    assert_memory_equal(r.val, "tv", 2);
    rsp_free(&r);
    noop_(fd);
    /* a TTL of 1 s, through GAT: the record is gone after it (waited
     * for as a condition, bounded far above) */
    mcbin_put_u32(ext, 1);
    call(fd, MCBIN_OP_GAT, ext, 4, k, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    {
        char *v;
        int i;
        for (i = 0; i < 300; i++) {
            v = get_(fd, k, NULL, NULL);
            if (v == NULL)
                break;
            free(v);
            usleep(100000);
        }
        assert_null(v);
    }
    close(fd);
}

static void test_misc_ops(void **state)
{
    uint8_t ext[4];
    struct rsp r;
    char k[64];
    int fd = mc_conn();

    (void)state;
    call(fd, MCBIN_OP_VERSION, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_true(r.vlen > 4 && memcmp(r.val, "1.6.", 4) == 0);
    rsp_free(&r);
    mcbin_put_u32(ext, 0);
    call(fd, MCBIN_OP_VERBOSITY, ext, 4, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    noop_(fd);
    /* FLUSH: everything gone; FLUSHQ silent; a delay in the extras */
    ukey(k, sizeof(k), "flush");
    set_(fd, MCBIN_OP_SET, k, "v", 0, 0, MCBIN_S_OK);
    call(fd, MCBIN_OP_FLUSH, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    assert_null(get_(fd, k, NULL, NULL));
    set_(fd, MCBIN_OP_SET, k, "v", 0, 0, MCBIN_S_OK);
    mcbin_put_u32(ext, 0);
    snd(fd, MCBIN_OP_FLUSHQ, ext, 4, NULL, NULL, 0, 0);
    noop_(fd);
    assert_null(get_(fd, k, NULL, NULL));
    /* an opcode memcached does not serve: "unknown command", its body
     * skipped, the connection goes on */
    snd(fd, 0x50, NULL, 0, "x", "yy", 2, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, 0x50);
    expect_status(&r, MCBIN_S_UNKNOWN);
    rsp_free(&r);
    noop_(fd);
    /* SASL without --auth-file: unknown, as memcached without -S */
    call(fd, MCBIN_OP_SASL_LIST, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_UNKNOWN);
    rsp_free(&r);
    /* QUIT: answered, then EOF; QUITQ: EOF only */
    call(fd, MCBIN_OP_QUIT, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    assert_true(tc_wait_eof(fd, 30000));
    close(fd);
    fd = mc_conn();
    snd(fd, MCBIN_OP_QUITQ, NULL, 0, NULL, NULL, 0, 0);
    assert_true(tc_wait_eof(fd, 30000));
    close(fd);
}

/* Read STAT packets up to the empty one; returns how many, and the value
 * of name (if given) into out. */
static int read_stats(int fd, uint8_t op, const char *name, char *out,
                      size_t outlen)
{
    struct rsp r;
    int n = 0;

    for (;;) {
        assert_int_equal(rd(fd, &r), 0);
        assert_int_equal(r.h.opcode, op);
        if (r.h.status != MCBIN_S_OK) {
            rsp_free(&r);
            return -(int)r.h.status;
        }
        if (r.h.klen == 0) {
            assert_int_equal(r.h.bodylen, 0);
            rsp_free(&r);
            return n;
        }
        if (name != NULL && r.h.klen == strlen(name) &&
            memcmp(r.key, name, r.h.klen) == 0)
            snprintf(out, outlen, "%.*s", (int)r.vlen, r.val);
        n++;
        rsp_free(&r);
    }
}

static void test_stat_groups(void **state)
{
    char v[128] = "", k[64];
    struct rsp r;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "stat");
    set_(fd, MCBIN_OP_SET, k, "v", 0, 0, MCBIN_S_OK);
    snd(fd, MCBIN_OP_STAT, NULL, 0, NULL, NULL, 0, 0);
    assert_true(read_stats(fd, MCBIN_OP_STAT, "curr_items", v, sizeof(v)) >
                20);
    assert_true(atoll(v) >= 1);
    /* every binary request counted in binary_requests */
    v[0] = 0;
    snd(fd, MCBIN_OP_STAT, NULL, 0, NULL, NULL, 0, 0);
    assert_true(read_stats(fd, MCBIN_OP_STAT, "binary_requests", v,
                           sizeof(v)) > 0);
    assert_true(atoll(v) >= 3);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "settings", NULL, 0, 0);
    assert_true(read_stats(fd, MCBIN_OP_STAT, "maxbytes", v, sizeof(v)) > 5);
    assert_int_equal(atoll(v), 64ll << 20);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "items", NULL, 0, 0);
    assert_true(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0) > 0);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "slabs", NULL, 0, 0);
    assert_true(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0) > 0);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "sizes", NULL, 0, 0);
    assert_int_equal(read_stats(fd, MCBIN_OP_STAT, "sizes_status", v,
                                sizeof(v)), 1);
    assert_string_equal(v, "disabled");
    snd(fd, MCBIN_OP_STAT, NULL, 0, "detail on", NULL, 0, 0);
    assert_int_equal(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0), 0);
    assert_null(get_(fd, "mcbin:detail", NULL, NULL));
    snd(fd, MCBIN_OP_STAT, NULL, 0, "detail dump", NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.h.klen, 8);
    assert_memory_equal(r.key, "detailed", 8);
    assert_non_null(strstr((char *)r.val, "PREFIX mcbin get 1 hit 0"));
    rsp_free(&r);
    assert_int_equal(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0), 0);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "detail off", NULL, 0, 0);
    assert_int_equal(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0), 0);
    snd(fd, MCBIN_OP_STAT, NULL, 0, "no-such-group", NULL, 0, 0);
    assert_int_equal(read_stats(fd, MCBIN_OP_STAT, NULL, NULL, 0),
                     -MCBIN_S_NOT_FOUND);
    noop_(fd);
    close(fd);
}

/* Values up to -I both ways (the server started with -I 4m), in place and
 * through pieces of the socket. */
static void test_large_values(void **state)
{
    static const uint32_t sizes[] = {0, 1, 1024, 1025, 65536, 1 << 20,
                                     (4u << 20) - 100};
    uint8_t ext[8] = {0};
    char k[64];
    struct rsp r;
    size_t i;
    uint8_t *v = malloc(4u << 20);
    int fd = mc_conn();

    (void)state;
    for (i = 0; i < (4u << 20); i++)
        v[i] = (uint8_t)(i * 131 + (i >> 9));
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ukey(k, sizeof(k), "large");
        call(fd, MCBIN_OP_SET, ext, 8, k, v, sizes[i], 0, &r);
        expect_status(&r, MCBIN_S_OK);
        rsp_free(&r);
        call(fd, MCBIN_OP_GETK, NULL, 0, k, NULL, 0, 0, &r);
        expect_status(&r, MCBIN_S_OK);
        assert_int_equal(r.vlen, sizes[i]);
        assert_memory_equal(r.val, v, sizes[i]);
        rsp_free(&r);
    }
    free(v);
    close(fd);
}

/* Over -I: "too large", even for SETQ; the body skipped, the connection
 * goes on, the old value gone (memcached's set drops it); a claim of a
 * gigabyte: answered and closed, nothing read. */
static void test_too_large(void **state)
{
    uint8_t ext[8] = {0};
    size_t big = (4u << 20) + 1;
    uint8_t *v = calloc(1, big);
    char k[64];
    struct rsp r;
    int fd = mc_conn();

    (void)state;
    ukey(k, sizeof(k), "toolarge");
    set_(fd, MCBIN_OP_SET, k, "old", 0, 0, MCBIN_S_OK);
    snd(fd, MCBIN_OP_SETQ, ext, 8, k, v, (uint32_t)big, 0);
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_SETQ);
    expect_status(&r, MCBIN_S_TOO_LARGE);
    rsp_free(&r);
    noop_(fd);
    assert_null(get_(fd, k, NULL, NULL));
    close(fd);
    free(v);
    {
        uint8_t b[MCBIN_HDR_LEN + 9];
        struct mcbin_hdr h = {0x80, MCBIN_OP_SET, 1, 8, 0, 0, 0xfffffff0u,
                              1, 0};
        fd = mc_conn();
        mcbin_encode_header(b, &h);
        memset(b + MCBIN_HDR_LEN, 'k', 9);
        assert_int_equal(tc_send_all(fd, b, sizeof(b)), 0);
        assert_int_equal(rd(fd, &r), 0);
        expect_status(&r, MCBIN_S_TOO_LARGE);
        rsp_free(&r);
        assert_true(tc_wait_eof(fd, 30000));
        close(fd);
    }
}

/* libmemcached's multi-get: SETQs, then GETKQs (hits and misses mixed),
 * then NOOP, all in one write; the replies are the hits in order, then
 * the NOOP. */
static void test_pipelined_quiet(void **state)
{
    enum { N = 3000 };
    uint8_t ext[8] = {0}, *b = malloc((size_t)N * 200);
    char k[64], want[64];
    size_t n = 0;
    struct rsp r;
    int fd = mc_conn(), i;

    (void)state;
    for (i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "mcbin-pipe-%d-%d", (int)getpid(), i);
        if (i % 3 != 0)
            n += mcbin_request(b + n, MCBIN_OP_SETQ, ext, 8, k,
                               (uint16_t)strlen(k), k, (uint32_t)strlen(k),
                               (uint32_t)i, 0);
    }
    for (i = 0; i < N; i++) {
        snprintf(k, sizeof(k), "mcbin-pipe-%d-%d", (int)getpid(), i);
        n += mcbin_request(b + n, MCBIN_OP_GETKQ, NULL, 0, k,
                           (uint16_t)strlen(k), NULL, 0, (uint32_t)i, 0);
    }
    n += mcbin_request(b + n, MCBIN_OP_NOOP, NULL, 0, NULL, 0, NULL, 0,
                       0xffffffff, 0);
    assert_int_equal(tc_send_all(fd, b, n), 0);
    for (i = 0; i < N; i++) {
        if (i % 3 == 0)
            continue;
        snprintf(want, sizeof(want), "mcbin-pipe-%d-%d", (int)getpid(), i);
        assert_int_equal(rd(fd, &r), 0);
        assert_int_equal(r.h.opcode, MCBIN_OP_GETKQ);
        assert_int_equal(r.h.opaque, (uint32_t)i);
        assert_int_equal(r.h.klen, strlen(want));
        assert_memory_equal(r.key, want, r.h.klen);
        assert_memory_equal(r.val, want, r.vlen);
        rsp_free(&r);
    }
    assert_int_equal(rd(fd, &r), 0);
    assert_int_equal(r.h.opcode, MCBIN_OP_NOOP);
    assert_int_equal(r.h.opaque, 0xffffffff);
    rsp_free(&r);
    free(b);
    close(fd);
}

/* A connection that is sending a header byte by byte, or has announced a
 * body it does not send, holds no one else up; hostile headers get their
 * answer and a close. */
static void check_close(const uint8_t *b, size_t n, uint16_t st)
{
    int fd = mc_conn();
    struct rsp r;

    assert_int_equal(tc_send_all(fd, b, n), 0);
    if (st != 0) {
        assert_int_equal(rd(fd, &r), 0);
        assert_int_equal(r.h.status, st);
        rsp_free(&r);
    }
    assert_true(tc_wait_eof(fd, 30000));
    close(fd);
}

static void test_hostile_headers(void **state)
{
    uint8_t b[256];
    struct mcbin_hdr h;
    size_t n;
    int slow = mc_conn(), body = mc_conn(), fd;
    char *v;

    (void)state;
    /* half a header, and a SET announcing 1 MiB with 10 bytes of it */
    n = mcbin_request(b, MCBIN_OP_GET, NULL, 0, "k", 1, NULL, 0, 1, 0);
    assert_int_equal(tc_send_all(slow, b, 10), 0);
    h = (struct mcbin_hdr){0x80, MCBIN_OP_SET, 1, 8, 0, 0, 9 + (1u << 20),
                           2, 0};
    mcbin_encode_header(b, &h);
    assert_int_equal(tc_send_all(body, b, MCBIN_HDR_LEN + 10), 0);
    /* the others are served meanwhile */
    fd = mc_conn();
    set_(fd, MCBIN_OP_SET, "mcbin-hostile", "ok", 0, 0, MCBIN_S_OK);
    v = get_(fd, "mcbin-hostile", NULL, NULL);
    assert_string_equal(v, "ok");
    free(v);
    close(fd);
    close(slow);
    close(body);
    /* a NOOP, then a response's magic: the NOOP answered, then "invalid
     * arguments" and close */
    n = mcbin_request(b, MCBIN_OP_NOOP, NULL, 0, NULL, 0, NULL, 0, 1, 0);
    memcpy(b + n, b, n);
    b[n] = 0x81;
    {
        struct rsp r;
        fd = mc_conn();
        assert_int_equal(tc_send_all(fd, b, 2 * n), 0);
        assert_int_equal(rd(fd, &r), 0);
        expect_status(&r, MCBIN_S_OK);
        rsp_free(&r);
        assert_int_equal(rd(fd, &r), 0);
        expect_status(&r, MCBIN_S_INVALID);
        rsp_free(&r);
        assert_true(tc_wait_eof(fd, 30000));
        close(fd);
    }
    /* text after binary on one connection: out of step, closed */
    n = mcbin_request(b, MCBIN_OP_NOOP, NULL, 0, NULL, 0, NULL, 0, 1, 0);
    memcpy(b + n, "get k\r\n", 7);
    {
        struct rsp r;
        fd = mc_conn();
        assert_int_equal(tc_send_all(fd, b, n + 7), 0);
        assert_int_equal(rd(fd, &r), 0);
        expect_status(&r, MCBIN_S_OK);
        rsp_free(&r);
        assert_int_equal(rd(fd, &r), 0);
        expect_status(&r, MCBIN_S_INVALID);
        rsp_free(&r);
        assert_true(tc_wait_eof(fd, 30000));
        close(fd);
    }
    /* key and extras longer than the body: "unknown command", close */
    h = (struct mcbin_hdr){0x80, MCBIN_OP_GET, 10, 0, 0, 0, 2, 3, 0};
    mcbin_encode_header(b, &h);
    check_close(b, MCBIN_HDR_LEN + 2, MCBIN_S_UNKNOWN);
    /* a GET claiming a 4 GiB body: invalid, closed, nothing waited for */
    h = (struct mcbin_hdr){0x80, MCBIN_OP_GET, 1, 0, 0, 0, 0xffffffffu, 4,
                           0};
    mcbin_encode_header(b, &h);
    check_close(b, MCBIN_HDR_LEN, MCBIN_S_INVALID);
    /* extras the opcode does not take */
    n = mcbin_request(b, MCBIN_OP_GET, "abcd", 4, "k", 1, NULL, 0, 5, 0);
    check_close(b, n, MCBIN_S_INVALID);
    /* a key over 250 bytes */
    {
        uint8_t *lk = malloc(600);
        memset(lk + 300, 'k', 251);
        n = mcbin_request(lk, MCBIN_OP_GET, NULL, 0, lk + 300, 251, NULL, 0,
                          6, 0);
        check_close(lk, n, MCBIN_S_INVALID);
        free(lk);
    }
    /* an unknown opcode with a 1 GiB body: answered and closed */
    h = (struct mcbin_hdr){0x80, 0x60, 0, 0, 0, 0, 1u << 30, 7, 0};
    mcbin_encode_header(b, &h);
    check_close(b, MCBIN_HDR_LEN, MCBIN_S_UNKNOWN);
    /* the server is still there */
    fd = mc_conn();
    noop_(fd);
    close(fd);
    assert_true(text_stat("protocol_errors") >= 6);
}

static void test_unix_socket(void **state)
{
    int fd = tc_connect_unix(&g_srv);
    struct rsp r;

    (void)state;
    assert_true(fd >= 0);
    call(fd, MCBIN_OP_VERSION, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    close(fd);
}

/* The text protocol sees what the binary one stored, and the reverse. */
static void test_text_interop(void **state)
{
    char k[64], line[256], buf[256];
    int fd = mc_conn(), t = mc_conn();
    size_t n;
    char *v;

    (void)state;
    ukey(k, sizeof(k), "interop");
    set_(fd, MCBIN_OP_SET, k, "fromb", 42, 0, MCBIN_S_OK);
    n = (size_t)snprintf(line, sizeof(line), "get %s\r\n", k);
    assert_int_equal(tc_send_all(t, line, n), 0);
    n = (size_t)snprintf(line, sizeof(line), "VALUE %s 42 5\r\nfromb\r\nEND\r\n",
                         k);
    assert_int_equal(tc_read_full(t, buf, n), 0);
    assert_memory_equal(buf, line, n);
    n = (size_t)snprintf(line, sizeof(line), "set %s 0 0 5\r\nfromt\r\n", k);
    assert_int_equal(tc_send_all(t, line, n), 0);
    assert_int_equal(tc_read_full(t, buf, 8), 0);
    assert_memory_equal(buf, "STORED\r\n", 8);
    v = get_(fd, k, NULL, NULL);
    assert_string_equal(v, "fromt");
    free(v);
    close(fd);
    close(t);
}

/* ---- SASL ---------------------------------------------------------------- */

static void sasl_auth(int fd, const char *user, const char *pass,
                      uint16_t want)
{
    char msg[256];
    size_t n = 0, ul = strlen(user), pl = strlen(pass);
    struct rsp r;

    msg[n++] = 0; /* no authorization identity */
    memcpy(msg + n, user, ul);
    n += ul;
    msg[n++] = 0;
    memcpy(msg + n, pass, pl);
    n += pl;
    call(fd, MCBIN_OP_SASL_AUTH, NULL, 0, "PLAIN", msg, (uint32_t)n, 0, &r);
    expect_status(&r, want);
    if (want == MCBIN_S_OK)
        assert_memory_equal(r.val, "Authenticated", r.vlen);
    rsp_free(&r);
}

static void test_sasl(void **state)
{
    char dir[] = "/tmp/mdc-mcbin-XXXXXX", file[128], arg[160], buf[64];
    const char *args[] = {"-n", "2", "--metrics=127.0.0.1:auto", NULL, NULL};
    struct tsrv saved = g_srv, s;
    struct rsp r;
    FILE *f;
    int fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0755);
    snprintf(file, sizeof(file), "%s/users", dir);
    f = fopen(file, "w");
    assert_non_null(f);
    fputs("alice:s3cret\n", f);
    fclose(f);
    chmod(file, 0644);
    snprintf(arg, sizeof(arg), "--auth-file=%s", file);
    args[3] = arg;
    assert_int_equal(tsrv_start(&s, args), 0);
    g_srv = s;

    /* the mechanisms, and VERSION, before login */
    fd = mc_conn();
    call(fd, MCBIN_OP_SASL_LIST, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    assert_int_equal(r.vlen, 5);
    assert_memory_equal(r.val, "PLAIN", 5);
    rsp_free(&r);
    call(fd, MCBIN_OP_VERSION, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_OK);
    rsp_free(&r);
    /* anything else: the auth error, then close (memcached -S) */
    snd(fd, MCBIN_OP_GET, NULL, 0, "k", NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    assert_true(tc_wait_eof(fd, 30000));
    close(fd);
    /* a wrong password, an unknown mechanism, a STEP: the auth error,
     * counted (each on a connection of its own: a failure holds that
     * connection's next request back); then the right one logs in */
    fd = mc_conn();
    sasl_auth(fd, "alice", "wrong", MCBIN_S_AUTH_ERROR);
    close(fd);
    fd = mc_conn();
    call(fd, MCBIN_OP_SASL_AUTH, NULL, 0, "CRAM-MD5", "x", 1, 0, &r);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    close(fd);
    fd = mc_conn();
    call(fd, MCBIN_OP_SASL_STEP, NULL, 0, "PLAIN", "x", 1, 0, &r);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    close(fd);
    fd = mc_conn();
    sasl_auth(fd, "alice", "s3cret", MCBIN_S_OK);
    set_(fd, MCBIN_OP_SET, "mcbin-sasl", "in", 0, 0, MCBIN_S_OK);
    {
        char *v = get_(fd, "mcbin-sasl", NULL, NULL);
        assert_string_equal(v, "in");
        free(v);
    }
    /* a failed login afterwards logs the connection out */
    sasl_auth(fd, "alice", "nope", MCBIN_S_AUTH_ERROR);
    snd(fd, MCBIN_OP_NOOP, NULL, 0, NULL, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    close(fd);
    /* the text login keeps working beside it */
    fd = mc_conn();
    assert_int_equal(tc_send_all(fd, "set a 0 0 12\r\nalice s3cret\r\n", 28),
                     0);
    assert_int_equal(tc_read_full(fd, buf, 8), 0);
    assert_memory_equal(buf, "STORED\r\n", 8);
    assert_int_equal(tc_send_all(fd, "get mcbin-sasl\r\n", 16), 0);
    assert_int_equal(tc_read_full(fd, buf, 27), 0);
    assert_memory_equal(buf, "VALUE mcbin-sasl 0 2\r\nin\r\n", 26);
    close(fd);
    /* counters: four SASL failures of ours, each an auth error too */
    fd = mc_conn();
    sasl_auth(fd, "alice", "s3cret", MCBIN_S_OK);
    snd(fd, MCBIN_OP_STAT, NULL, 0, NULL, NULL, 0, 0);
    {
        char v[64] = "";
        assert_true(read_stats(fd, MCBIN_OP_STAT, "sasl_auth_errors", v,
                               sizeof(v)) > 0);
        assert_int_equal(atoll(v), 4);
    }
    close(fd);
    /* the same counters in text stats (after a text login) */
    fd = mc_conn();
    assert_int_equal(tc_send_all(fd, "set a 0 0 12\r\nalice s3cret\r\n"
                                     "stats\r\n", 35), 0);
    {
        char st[32768];
        size_t got = 0;
        ssize_t k;
        while (got < sizeof(st) - 1 &&
               (k = recv(fd, st + got, sizeof(st) - 1 - got, 0)) > 0) {
            got += (size_t)k;
            st[got] = 0;
            if (strstr(st, "END\r\n") != NULL)
                break;
        }
        assert_non_null(strstr(st, "STAT sasl_auth_errors 4\r\n"));
        assert_non_null(strstr(st, "STAT binary_requests "));
        assert_null(strstr(st, "STAT binary_requests 0\r\n"));
    }
    close(fd);
    /* and in /metrics, per thread: summed */
    {
        int mport = tsrv_port_of(&s, "metrics", "127.0.0.1");
        struct sockaddr_in sa = {0};
        char page[1 << 17], *p;
        size_t got = 0;
        ssize_t k;
        long long sasl = 0, bin = 0;

        assert_true(mport > 0);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)mport);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        tc_set_timeout_ms(fd, 30000);
        assert_int_equal(tc_send_all(fd, "GET /metrics HTTP/1.0\r\n\r\n", 25),
                         0);
        while (got < sizeof(page) - 1 &&
               (k = recv(fd, page + got, sizeof(page) - 1 - got, 0)) > 0)
            got += (size_t)k;
        page[got] = 0;
        close(fd);
        for (p = page; (p = strstr(p, "\nmdcached_sasl_auth_errors_total{"));
             p++)
            sasl += atoll(strchr(p, '}') + 1);
        for (p = page; (p = strstr(p, "\nmdcached_binary_requests_total{"));
             p++)
            bin += atoll(strchr(p, '}') + 1);
        assert_int_equal(sasl, 4);
        assert_true(bin >= 10);
    }
    g_srv = saved;
    assert_int_equal(tsrv_stop(&s), 0);
    unlink(file);
    rmdir(dir);
}

/* -F refuses FLUSH with memcached's answer (the auth error). */
static void test_flush_disabled(void **state)
{
    const char *args[] = {"-n", "1", "-F", NULL};
    struct tsrv saved = g_srv, s;
    struct rsp r;
    int fd;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    g_srv = s;
    fd = mc_conn();
    call(fd, MCBIN_OP_FLUSH, NULL, 0, NULL, NULL, 0, 0, &r);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    snd(fd, MCBIN_OP_FLUSHQ, NULL, 0, NULL, NULL, 0, 0);
    assert_int_equal(rd(fd, &r), 0);
    expect_status(&r, MCBIN_S_AUTH_ERROR);
    rsp_free(&r);
    close(fd);
    g_srv = saved;
    assert_int_equal(tsrv_stop(&s), 0);
}

static int setup(void **state)
{
    static const char *const args[] = {"-n", "2", "-m", "64", "-I", "4m",
                                       NULL};

    (void)state;
    return tsrv_start(&g_srv, args);
}

static int teardown(void **state)
{
    (void)state;
    return tsrv_stop(&g_srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_forms),
        cmocka_unit_test(test_store_statuses),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_touch_gat),
        cmocka_unit_test(test_stat_groups),
        cmocka_unit_test(test_large_values),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_pipelined_quiet),
        cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_text_interop),
        cmocka_unit_test(test_misc_ops), /* flushes: after the others */
        cmocka_unit_test(test_sasl),
        cmocka_unit_test(test_flush_disabled),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
