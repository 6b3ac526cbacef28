/*
 * test_server.c - black-box tests of mdcached over the native protocol:
 * every operation, quiet batches, pipelining with order checked, concurrent
 * clients, malformed and oversize input, vanishing clients, a client that
 * never reads, max connections, the Unix socket, every thread model, and a
 * graceful SIGTERM.  Each test group starts its own daemon on a free port;
 * MDC_TEST_SERVER=host:port runs the functional tests against a running
 * server instead (tests that need their own configuration are skipped).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"
#include "protocol/wire.h"

static struct tsrv g_srv; /* the shared daemon of the functional group */
static unsigned g_uniq;   /* makes keys unique across tests and runs */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *ukey(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "%s-%u-%ld", what, ++g_uniq, (long)getpid());
    return buf;
}

static uint64_t u64_of(const struct tresp *p)
{
    assert_int_equal(p->h.vlen, 8);
    return wire_get_u64(p->val);
}

static int status_of(int fd, uint8_t op, const char *key, const void *val,
                     size_t vlen, uint64_t cas, int64_t exp)
{
    struct treq r = {.op = op, .key = key, .klen = key ? strlen(key) : 0,
                     .val = val, .vlen = vlen, .cas = cas, .exp = exp};
    return tc_call(fd, &r, NULL);
}

static void u64le(uint8_t *b, uint64_t v) { wire_put_u64(b, v); }

/* ---- group: one daemon for the functional tests ---------------------- */

static int group_setup(void **state)
{
    static const char *const args[] = {"-n", "4", "-t", "0",
                                       "--tag-reply-limit", "8k",
                                       "-I", "256k", NULL};
    (void)state;
    g_uniq = (unsigned)time(NULL) % 100000u * 1000u;
    return tsrv_start_or_external(&g_srv, args);
}

static int group_teardown(void **state)
{
    int rc;

    (void)state;
    rc = tsrv_stop(&g_srv);
    if (rc != 0)
        fprintf(stderr, "daemon exit status %d\n", rc);
    return rc == 0 ? 0 : -1;
}

/* ---- keyed operations ------------------------------------------------ */

static void test_get_set_family(void **state)
{
    char k[64], *v = NULL;
    struct tresp p;
    size_t vl = 0;
    uint64_t cas;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "gs");
    assert_int_equal(tc_get(fd, k, NULL, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_set(fd, k, "hello", 5, NULL, 0), WIRE_S_OK);
    assert_int_equal(tc_get(fd, k, &v, &vl), WIRE_S_OK);
    assert_int_equal(vl, 5);
    assert_memory_equal(v, "hello", 5);
    free(v);

    /* GETK carries the key, flags and CAS; expiry -1 = never */
    {
        struct treq r = {.op = WIRE_OP_SET, .key = k, .klen = strlen(k),
                         .val = "x", .vlen = 1, .iflags = 0xdeadbeef,
                         .opaque = 77};
        assert_int_equal(tc_call(fd, &r, &p), 0);
        assert_int_equal(p.h.opaque, 77);
        assert_true(p.h.flags & WIRE_F_RESPONSE);
        cas = p.h.cas;
        assert_true(cas != 0);
        tc_resp_free(&p);
        r = (struct treq){.op = WIRE_OP_GETK, .key = k, .klen = strlen(k)};
        assert_int_equal(tc_call(fd, &r, &p), 0);
        assert_int_equal(p.h.klen, strlen(k));
        assert_memory_equal(p.key, k, strlen(k));
        assert_int_equal(p.h.iflags, 0xdeadbeef);
        assert_int_equal(p.h.cas, cas);
        assert_int_equal(p.h.expiry, -1);
        assert_int_equal(p.h.vlen, 1);
        tc_resp_free(&p);

        /* CAS: wrong version, right version, SET with CAS */
        r = (struct treq){.op = WIRE_OP_CAS, .key = k, .klen = strlen(k),
                          .val = "y", .vlen = 1, .cas = cas + 1000};
        assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_EXISTS);
        r.cas = cas;
        assert_int_equal(tc_call(fd, &r, &p), WIRE_S_OK);
        assert_true(p.h.cas != cas);
        cas = p.h.cas;
        tc_resp_free(&p);
        r = (struct treq){.op = WIRE_OP_SET, .key = k, .klen = strlen(k),
                          .val = "z", .vlen = 1, .cas = cas + 1};
        assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_EXISTS);
    }

    /* ADD / REPLACE / APPEND / PREPEND */
    assert_int_equal(status_of(fd, WIRE_OP_ADD, k, "a", 1, 0, 0),
                     WIRE_S_EXISTS);
    assert_int_equal(status_of(fd, WIRE_OP_REPLACE, k, "mid", 3, 0, 0), 0);
    assert_int_equal(status_of(fd, WIRE_OP_APPEND, k, ">>", 2, 0, 0), 0);
    assert_int_equal(status_of(fd, WIRE_OP_PREPEND, k, "<<", 2, 0, 0), 0);
    assert_int_equal(tc_get(fd, k, &v, &vl), 0);
    assert_string_equal(v, "<<mid>>");
    free(v);
    ukey(k, sizeof(k), "gs-absent");
    assert_int_equal(status_of(fd, WIRE_OP_REPLACE, k, "a", 1, 0, 0),
                     WIRE_S_NOT_STORED);
    assert_int_equal(status_of(fd, WIRE_OP_APPEND, k, "a", 1, 0, 0),
                     WIRE_S_NOT_STORED);
    assert_int_equal(status_of(fd, WIRE_OP_ADD, k, "new", 3, 0, 0), 0);
    assert_int_equal(status_of(fd, WIRE_OP_ADD, k, "new", 3, 0, 0),
                     WIRE_S_EXISTS);

    /* DELETE, with a CAS that does not match, then plain */
    assert_int_equal(status_of(fd, WIRE_OP_DELETE, k, NULL, 0, 1, 0),
                     WIRE_S_EXISTS);
    assert_int_equal(status_of(fd, WIRE_OP_DELETE, k, NULL, 0, 0, 0), 0);
    assert_int_equal(status_of(fd, WIRE_OP_DELETE, k, NULL, 0, 0, 0),
                     WIRE_S_NOT_FOUND);
    assert_int_equal(tc_get(fd, k, NULL, NULL), WIRE_S_NOT_FOUND);
    close(fd);
}

static void test_expiry_touch_gat(void **state)
{
    char k[64];
    struct tresp p;
    struct treq r;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "exp");
    /* negative expiry: stored, never returned */
    assert_int_equal(status_of(fd, WIRE_OP_SET, k, "v", 1, 0, -1), 0);
    assert_int_equal(tc_get(fd, k, NULL, NULL), WIRE_S_NOT_FOUND);
    /* relative expiry reported back as seconds left */
    assert_int_equal(status_of(fd, WIRE_OP_SET, k, "v", 1, 0, 100), 0);
    r = (struct treq){.op = WIRE_OP_GET, .key = k, .klen = strlen(k)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_true(p.h.expiry > 90 && p.h.expiry <= 100);
    tc_resp_free(&p);
    /* TOUCH and GAT move the deadline */
    assert_int_equal(status_of(fd, WIRE_OP_TOUCH, k, NULL, 0, 0, 1000), 0);
    r = (struct treq){.op = WIRE_OP_GATK, .key = k, .klen = strlen(k),
                      .exp = 5000};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_memory_equal(p.key, k, strlen(k));
    assert_memory_equal(p.val, "v", 1);
    tc_resp_free(&p);
    r = (struct treq){.op = WIRE_OP_GET, .key = k, .klen = strlen(k)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_true(p.h.expiry > 4900 && p.h.expiry <= 5000);
    tc_resp_free(&p);
    r = (struct treq){.op = WIRE_OP_GAT, .key = k, .klen = strlen(k),
                      .exp = -1};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(p.h.klen, 0);
    tc_resp_free(&p);
    assert_int_equal(tc_get(fd, k, NULL, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(status_of(fd, WIRE_OP_TOUCH, k, NULL, 0, 0, 10),
                     WIRE_S_NOT_FOUND);
    close(fd);
}

static void test_counters(void **state)
{
    char k[64], *v;
    uint8_t b[16];
    struct tresp p;
    struct treq r;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "ctr");
    u64le(b, 1);
    r = (struct treq){.op = WIRE_OP_INCR, .key = k, .klen = strlen(k),
                      .val = b, .vlen = 8};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_set(fd, k, "5", 1, NULL, 0), 0);
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 6);
    tc_resp_free(&p);
    assert_int_equal(tc_get(fd, k, &v, NULL), 0);
    assert_string_equal(v, "6");
    free(v);
    u64le(b, 10);
    r.op = WIRE_OP_DECR;
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 0); /* decr stops at 0 */
    tc_resp_free(&p);

    u64le(b, 7);
    r.op = WIRE_OP_ATOMIC_ADD;
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 7);
    tc_resp_free(&p);
    r.op = WIRE_OP_ATOMIC_FETCH_ADD;
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 7);
    tc_resp_free(&p);
    /* compare-and-set: 14 -> 100 fails with a=13, succeeds with a=14 */
    u64le(b, 13);
    u64le(b + 8, 100);
    r = (struct treq){.op = WIRE_OP_ATOMIC_CMPSET, .key = k,
                      .klen = strlen(k), .val = b, .vlen = 16};
    assert_int_equal(tc_call(fd, &r, &p), WIRE_S_EXISTS);
    assert_int_equal(u64_of(&p), 14);
    tc_resp_free(&p);
    u64le(b, 14);
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 14);
    tc_resp_free(&p);
    r = (struct treq){.op = WIRE_OP_ATOMIC_READ_CLEAR, .key = k,
                      .klen = strlen(k)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 100);
    tc_resp_free(&p);
    assert_int_equal(tc_get(fd, k, &v, NULL), 0);
    assert_string_equal(v, "0");
    free(v);
    /* not a number */
    assert_int_equal(tc_set(fd, k, "abc", 3, NULL, 0), 0);
    u64le(b, 1);
    r = (struct treq){.op = WIRE_OP_INCR, .key = k, .klen = strlen(k),
                      .val = b, .vlen = 8};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_NOT_NUMBER);
    close(fd);
}

/* ---- tags --------------------------------------------------------------- */

/* Read a GET_BY_TAG reply; returns the terminator status, count in *n. */
static int read_by_tag(int fd, size_t *n, char keys[][64], size_t maxkeys)
{
    struct tresp p;
    int st;

    *n = 0;
    for (;;) {
        if (tc_recv(fd, &p) < 0)
            return -1;
        if (!(p.h.flags & WIRE_F_MORE)) {
            st = p.h.status;
            assert_int_equal(wire_body_len(&p.h), 0);
            tc_resp_free(&p);
            return st;
        }
        assert_int_equal(p.h.status, 0);
        assert_int_equal(p.h.opcode, WIRE_OP_GET_BY_TAG);
        if (*n < maxkeys) {
            assert_true(p.h.klen < 64);
            memcpy(keys[*n], p.key, p.h.klen);
            keys[*n][p.h.klen] = '\0';
        }
        (*n)++;
        tc_resp_free(&p);
    }
}

static bool has_key(char keys[][64], size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i], k) == 0)
            return true;
    return false;
}

static void test_tags(void **state)
{
    char k1[64], k2[64], k3[64], keys[16][64];
    int32_t tk = (int32_t)(g_uniq + 1000003u);
    struct wire_tag t1[2] = {{tk, 1}, {tk + 1, 9}};
    struct wire_tag t2[1] = {{tk, 2}};
    struct wire_tag q[2] = {{tk, 1}, {tk, 2}};
    struct wire_tag bad[2] = {{tk, 1}, {tk + 1, 2}};
    struct tresp p;
    struct treq r;
    size_t n;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k1, sizeof(k1), "tag1");
    ukey(k2, sizeof(k2), "tag2");
    ukey(k3, sizeof(k3), "tag3");
    assert_int_equal(tc_set(fd, k1, "one", 3, t1, 2), 0);
    assert_int_equal(tc_set(fd, k2, "two", 3, t2, 1), 0);
    assert_int_equal(tc_set(fd, k3, "three", 5, t2, 1), 0);

    /* GET returns the record's tags */
    r = (struct treq){.op = WIRE_OP_GET, .key = k1, .klen = strlen(k1)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(p.h.ntags, 2);
    tc_resp_free(&p);

    /* union of (tk,1) and (tk,2): three records */
    r = (struct treq){.op = WIRE_OP_GET_BY_TAG, .tags = q, .ntags = 2};
    assert_int_equal(tc_send(fd, &r), 0);
    assert_int_equal(read_by_tag(fd, &n, keys, 16), WIRE_S_OK);
    assert_int_equal(n, 3);
    assert_true(has_key(keys, n, k1) && has_key(keys, n, k2) &&
                has_key(keys, n, k3));
    /* tags with different tkeys in one request: malformed, still in sync */
    r = (struct treq){.op = WIRE_OP_GET_BY_TAG, .tags = bad, .ntags = 2};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);

    /* a store without tags leaves an untagged record */
    assert_int_equal(tc_set(fd, k3, "plain", 5, NULL, 0), 0);
    r = (struct treq){.op = WIRE_OP_GET_BY_TAG, .tags = t2, .ntags = 1};
    assert_int_equal(tc_send(fd, &r), 0);
    assert_int_equal(read_by_tag(fd, &n, keys, 16), WIRE_S_OK);
    assert_int_equal(n, 1);
    assert_string_equal(keys[0], k2);

    /* DEL_BY_TAG removes and counts */
    r = (struct treq){.op = WIRE_OP_DEL_BY_TAG, .tags = q, .ntags = 2};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 2);
    tc_resp_free(&p);
    assert_int_equal(tc_get(fd, k1, NULL, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_get(fd, k2, NULL, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_get(fd, k3, NULL, NULL), WIRE_S_OK);
    r = (struct treq){.op = WIRE_OP_GET_BY_TAG, .tags = q, .ntags = 2};
    assert_int_equal(tc_send(fd, &r), 0);
    assert_int_equal(read_by_tag(fd, &n, keys, 16), WIRE_S_OK);
    assert_int_equal(n, 0);
    r = (struct treq){.op = WIRE_OP_DEL_BY_TAG, .tags = q, .ntags = 2};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 0);
    tc_resp_free(&p);
    close(fd);
}

/* DEL_BY_TAG with STALE: the records stay, stale (X, and one W, in the
 * text protocol's mg), with the expiry given as their TTL. */
static void test_tags_stale(void **state)
{
    char k1[64], k2[64], line[64];
    int32_t tk = (int32_t)(g_uniq + 2000003u);
    struct wire_tag t1[1] = {{tk, 1}};
    struct tresp p;
    struct treq r;
    uint64_t cas;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k1, sizeof(k1), "stale1");
    ukey(k2, sizeof(k2), "stale2");
    assert_int_equal(tc_set(fd, k1, "one", 3, t1, 1), 0);
    assert_int_equal(tc_set(fd, k2, "two", 3, t1, 1), 0);
    r = (struct treq){.op = WIRE_OP_GET, .key = k1, .klen = strlen(k1)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    cas = p.h.cas;
    tc_resp_free(&p);
    /* an expiry without STALE, STALE on another opcode: malformed */
    r = (struct treq){.op = WIRE_OP_DEL_BY_TAG, .tags = t1, .ntags = 1,
                      .exp = 30};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);
    r = (struct treq){.op = WIRE_OP_GET, .flags = WIRE_F_STALE, .key = k1,
                      .klen = strlen(k1)};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);
    r = (struct treq){.op = WIRE_OP_DEL_BY_TAG, .flags = WIRE_F_STALE,
                      .tags = t1, .ntags = 1, .exp = 30};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(u64_of(&p), 2);
    tc_resp_free(&p);
    /* still there, value kept, a new CAS, the TTL given */
    r = (struct treq){.op = WIRE_OP_GET, .key = k1, .klen = strlen(k1)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_true(p.h.cas > cas);
    assert_true(p.h.expiry == 30 || p.h.expiry == 29);
    assert_int_equal(p.h.vlen, 3);
    tc_resp_free(&p);
    /* the same port speaks text: the first mg wins, the next sees Z */
    close(fd);
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    snprintf(line, sizeof(line), "mg %s s\r\nmg %s s\r\n", k2, k2);
    assert_int_equal(tc_send_all(fd, line, strlen(line)), 0);
    memset(line, 0, sizeof(line));
    assert_int_equal(tc_read_full(fd, line, 22), 0);
    assert_string_equal(line, "HD s3 X W\r\nHD s3 Z X\r\n");
    close(fd);
}

/* A LEASE get's two TTLs (vivify, recache) as its 16-byte value. */
static int lease_call(int fd, uint8_t op, const char *k, int64_t viv,
                      int64_t rec, struct tresp *p)
{
    uint8_t v[WIRE_LEASE_VLEN];
    struct treq r = {.op = op, .flags = WIRE_F_LEASE, .key = k,
                     .klen = strlen(k), .val = v, .vlen = sizeof(v)};

    wire_put_u64(v, (uint64_t)viv);
    wire_put_u64(v + 8, (uint64_t)rec);
    return tc_call(fd, &r, p);
}

static uint8_t lease_state(const struct tresp *p)
{
    return p->h.flags & WIRE_F_LEASE_STATE;
}

/* Native lease gets, stale DELETE and SET in invalidate mode: the text
 * protocol's mg N/R, md I [T], ms I (docs/protocol.md, "Lease gets"). */
static void test_lease(void **state)
{
    char k1[64], k2[64];
    struct tresp p;
    struct treq r;
    uint64_t cas, old;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    ukey(k1, sizeof(k1), "lease1");
    ukey(k2, sizeof(k2), "lease2");
    /* a miss without vivify: NOT_FOUND; with N: an empty stub, W */
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, NULL),
                     WIRE_S_NOT_FOUND);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 30, 0, &p), 0);
    assert_int_equal(p.h.vlen, 0);
    assert_int_equal(lease_state(&p), WIRE_F_WIN);
    assert_true(p.h.expiry == 30 || p.h.expiry == 29);
    tc_resp_free(&p);
    /* the next one: Z (the win is out); a plain GET sees no flags */
    assert_int_equal(lease_call(fd, WIRE_OP_GETK, k1, 30, 0, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_PENDING);
    assert_int_equal(p.h.klen, strlen(k1));
    tc_resp_free(&p);
    r = (struct treq){.op = WIRE_OP_GET, .key = k1, .klen = strlen(k1)};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_int_equal(p.h.flags, WIRE_F_RESPONSE);
    tc_resp_free(&p);
    /* the winner stores: fresh, no flags */
    assert_int_equal(tc_set(fd, k1, "v1", 2, NULL, 0), 0);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 30, 0, &p), 0);
    assert_int_equal(lease_state(&p), 0);
    cas = p.h.cas;
    tc_resp_free(&p);
    /* DELETE with STALE and a TTL: kept, stale, a new CAS */
    r = (struct treq){.op = WIRE_OP_DELETE, .flags = WIRE_F_STALE,
                      .key = k1, .klen = strlen(k1), .exp = 100};
    assert_int_equal(tc_call(fd, &r, NULL), 0);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_STALE | WIRE_F_WIN);
    assert_int_equal(p.h.vlen, 2);
    assert_true(p.h.cas > cas);
    assert_true(p.h.expiry == 100 || p.h.expiry == 99);
    old = cas;
    cas = p.h.cas;
    tc_resp_free(&p);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_STALE | WIRE_F_PENDING);
    tc_resp_free(&p);
    /* SET in invalidate mode with an older CAS: stored, still stale */
    r = (struct treq){.op = WIRE_OP_SET, .flags = WIRE_F_STALE, .key = k1,
                      .klen = strlen(k1), .val = "v0", .vlen = 2,
                      .cas = old};
    assert_int_equal(tc_call(fd, &r, NULL), 0);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_STALE | WIRE_F_PENDING);
    assert_memory_equal(p.val, "v0", 2);
    tc_resp_free(&p);
    /* without STALE that CAS is refused; STALE without a CAS: malformed */
    r.flags = 0;
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_EXISTS);
    r.flags = WIRE_F_STALE;
    r.cas = 0;
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);
    /* a store with the current CAS, in invalidate mode: fresh */
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, &p), 0);
    r.cas = p.h.cas;
    tc_resp_free(&p);
    assert_int_equal(tc_call(fd, &r, NULL), 0);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k1, 0, 0, &p), 0);
    assert_int_equal(lease_state(&p), 0);
    tc_resp_free(&p);
    /* R: below the TTL left, one win */
    r = (struct treq){.op = WIRE_OP_SET, .key = k2, .klen = strlen(k2),
                      .val = "x", .vlen = 1, .exp = 20};
    assert_int_equal(tc_call(fd, &r, NULL), 0);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k2, 0, 10, &p), 0);
    assert_int_equal(lease_state(&p), 0);
    tc_resp_free(&p);
    assert_int_equal(lease_call(fd, WIRE_OP_GET, k2, 0, 60, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_WIN);
    tc_resp_free(&p);
    assert_int_equal(lease_call(fd, WIRE_OP_GAT, k2, 0, 60, &p), 0);
    assert_int_equal(lease_state(&p), WIRE_F_PENDING);
    tc_resp_free(&p);
    /* DELETE STALE of a missing key; LEASE on a SET: malformed */
    r = (struct treq){.op = WIRE_OP_DELETE, .flags = WIRE_F_STALE,
                      .key = "no-such-lease-key", .klen = 17};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_NOT_FOUND);
    r = (struct treq){.op = WIRE_OP_SET, .flags = WIRE_F_LEASE, .key = k2,
                      .klen = strlen(k2), .val = "x", .vlen = 1};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);
    /* a lease GET with a value that is not 16 bytes: malformed */
    r = (struct treq){.op = WIRE_OP_GET, .flags = WIRE_F_LEASE, .key = k2,
                      .klen = strlen(k2), .val = "12345678", .vlen = 8};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_MALFORMED);
    close(fd);
}

static void test_tag_reply_truncated(void **state)
{
    static char big[1000];
    char k[64], keys[16][64];
    struct wire_tag t = {(int32_t)(g_uniq + 2000003u), 5};
    struct treq r;
    size_t n;
    int fd, i;

    (void)state;
    if (g_srv.external)
        skip(); /* needs --tag-reply-limit 8k */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    memset(big, 'b', sizeof(big));
    for (i = 0; i < 20; i++) {
        ukey(k, sizeof(k), "trunc");
        assert_int_equal(tc_set(fd, k, big, sizeof(big), &t, 1), 0);
    }
    r = (struct treq){.op = WIRE_OP_GET_BY_TAG, .tags = &t, .ntags = 1};
    assert_int_equal(tc_send(fd, &r), 0);
    assert_int_equal(read_by_tag(fd, &n, keys, 16), WIRE_S_TRUNCATED);
    assert_true(n > 0 && n < 20);
    /* the connection carries on */
    assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    close(fd);
}

static void test_tstack(void **state)
{
    struct wire_tag t = {(int32_t)(g_uniq + 3000003u), 1};
    char pushed[3][64];
    struct tresp p;
    struct treq r;
    int fd = tc_connect(&g_srv), i;

    (void)state;
    assert_true(fd >= 0);
    for (i = 0; i < 3; i++) {
        char v[8];
        snprintf(v, sizeof(v), "v%d", i);
        r = (struct treq){.op = WIRE_OP_TSTACK_PUSH, .tags = &t, .ntags = 1,
                          .val = v, .vlen = strlen(v), .iflags = (uint32_t)i};
        assert_int_equal(tc_call(fd, &r, &p), 0);
        assert_true(p.h.klen > 0 && p.h.klen < 64);
        memcpy(pushed[i], p.key, p.h.klen);
        pushed[i][p.h.klen] = '\0';
        tc_resp_free(&p);
    }
    /* a pushed record is an ordinary record */
    assert_int_equal(tc_get(fd, pushed[0], NULL, NULL), 0);
    for (i = 2; i >= 0; i--) {
        char v[8];
        snprintf(v, sizeof(v), "v%d", i);
        r = (struct treq){.op = WIRE_OP_TSTACK_POP, .tags = &t, .ntags = 1};
        assert_int_equal(tc_call(fd, &r, &p), 0);
        assert_int_equal(p.h.vlen, strlen(v));
        assert_memory_equal(p.val, v, strlen(v));
        assert_int_equal(p.h.klen, strlen(pushed[i]));
        assert_memory_equal(p.key, pushed[i], p.h.klen);
        assert_int_equal(p.h.iflags, (uint32_t)i);
        tc_resp_free(&p);
    }
    r = (struct treq){.op = WIRE_OP_TSTACK_POP, .tags = &t, .ntags = 1};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_get(fd, pushed[0], NULL, NULL), WIRE_S_NOT_FOUND);
    close(fd);
}

/* ---- misc operations -------------------------------------------------- */

/* A daemon without -f has nothing to dump to: the native DUMP answers
 * NOT_SUPPORTED naming -f, the text dump a SERVER_ERROR, and the
 * connections go on. */
static void test_dump_without_file(void **state)
{
    struct tresp p;
    struct treq r = {.op = WIRE_OP_DUMP};
    char line[128];
    int fd;

    (void)state;
    if (g_srv.external)
        skip(); /* its -f is unknown */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    assert_int_equal(tc_call(fd, &r, &p), WIRE_S_NOT_SUPPORTED);
    assert_int_equal(p.h.vlen, strlen("no dump file (-f)"));
    assert_memory_equal(p.val, "no dump file (-f)", p.h.vlen);
    tc_resp_free(&p);
    assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    close(fd);

    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    assert_int_equal(tc_send_all(fd, "dump\r\nversion\r\n", 15), 0);
    static const char want[] = "SERVER_ERROR no dump file (-f)\r\nVERSION ";
    assert_int_equal(tc_read_full(fd, line, sizeof(want) - 1), 0);
    assert_memory_equal(line, want, sizeof(want) - 1);
    close(fd);
}

static void test_stats_version_noop(void **state)
{
    char buf[64];
    struct tresp p;
    struct treq r = {.op = WIRE_OP_VERSION};
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_true(p.h.vlen > 0);
    tc_resp_free(&p);
    assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    assert_int_equal(tc_stat_str(fd, "thread_model", buf, sizeof(buf)), 0);
    if (!g_srv.external)
        assert_string_equal(buf, "SYMPED");
    assert_true(tc_stat(fd, "curr_connections") >= 1);
    assert_true(tc_stat(fd, "cmd_get") >= 0);
    assert_true(tc_stat(fd, "limit_maxbytes") > 0);
    assert_true(tc_stat(fd, "tag_links") >= 0);
    assert_true(tc_stat(fd, "uptime") >= 0);
    assert_true(tc_stat(fd, "payload_threads") >= 0);
    r = (struct treq){.op = WIRE_OP_STATS, .key = "settings", .klen = 8};
    assert_int_equal(tc_call(fd, &r, &p), 0);
    assert_non_null(strstr((const char *)p.val, "max-conns "));
    assert_non_null(strstr((const char *)p.val, "thread_model "));
    tc_resp_free(&p);
    r = (struct treq){.op = WIRE_OP_STATS, .key = "nosuch", .klen = 6};
    assert_int_equal(tc_call(fd, &r, NULL), WIRE_S_NOT_FOUND);
    /* QUIT answers, then the server closes */
    r = (struct treq){.op = WIRE_OP_QUIT};
    assert_int_equal(tc_call(fd, &r, NULL), 0);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);
}

static void test_quiet_multiget(void **state)
{
    char k[4][64];
    struct tresp p;
    struct treq r;
    int fd = tc_connect(&g_srv), i;

    (void)state;
    assert_true(fd >= 0);
    for (i = 0; i < 4; i++)
        ukey(k[i], sizeof(k[i]), "mget");
    /* quiet SETs answer nothing on success */
    for (i = 0; i < 4; i += 2) {
        r = (struct treq){.op = WIRE_OP_SET, .flags = WIRE_F_QUIET,
                          .key = k[i], .klen = strlen(k[i]), .val = k[i],
                          .vlen = strlen(k[i]), .opaque = (uint32_t)i};
        assert_int_equal(tc_send(fd, &r), 0);
    }
    /* a quiet error is still answered */
    r = (struct treq){.op = WIRE_OP_REPLACE, .flags = WIRE_F_QUIET,
                      .key = k[1], .klen = strlen(k[1]), .val = "x",
                      .vlen = 1, .opaque = 100};
    assert_int_equal(tc_send(fd, &r), 0);
    /* quiet GETKs: only hits come back, then the NOOP */
    for (i = 0; i < 4; i++) {
        r = (struct treq){.op = WIRE_OP_GETK, .flags = WIRE_F_QUIET,
                          .key = k[i], .klen = strlen(k[i]),
                          .opaque = (uint32_t)(200 + i)};
        assert_int_equal(tc_send(fd, &r), 0);
    }
    r = (struct treq){.op = WIRE_OP_NOOP, .opaque = 999};
    assert_int_equal(tc_send(fd, &r), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.opaque, 100);
    assert_int_equal(p.h.status, WIRE_S_NOT_STORED);
    tc_resp_free(&p);
    for (i = 0; i < 4; i += 2) {
        assert_int_equal(tc_recv(fd, &p), 0);
        assert_int_equal(p.h.opaque, 200 + i);
        assert_int_equal(p.h.status, 0);
        assert_memory_equal(p.key, k[i], strlen(k[i]));
        assert_memory_equal(p.val, k[i], strlen(k[i]));
        tc_resp_free(&p);
    }
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.opaque, 999);
    assert_int_equal(p.h.opcode, WIRE_OP_NOOP);
    tc_resp_free(&p);
    close(fd);
}

/* ---- pipelining and concurrency (also run under every thread model) --- */

/* 1000 mixed requests in one write; replies checked in order. */
static void run_pipeline(const struct tsrv *s)
{
    enum { N = 1000 };
    uint8_t *all = NULL, one[8];
    size_t len = 0, i;
    char keys[N][32];
    int fd = tc_connect(s);
    unsigned base = ++g_uniq;

    assert_true(fd >= 0);
    u64le(one, 1);
    for (i = 0; i < N; i++) {
        struct treq r = {.opaque = (uint32_t)i};
        size_t n;
        uint8_t *m;

        snprintf(keys[i], sizeof(keys[i]), "pl-%u-%zu", base, i / 5);
        r.key = keys[i];
        r.klen = strlen(keys[i]);
        switch (i % 5) {
        case 0:
            r.op = WIRE_OP_SET;
            r.val = "10";
            r.vlen = 2;
            break;
        case 1:
            r.op = WIRE_OP_GETK;
            break;
        case 2:
            r.op = WIRE_OP_INCR;
            r.val = one;
            r.vlen = 8;
            break;
        case 3:
            r.op = WIRE_OP_DELETE;
            break;
        default:
            r.op = WIRE_OP_GET; /* a miss after the delete */
            break;
        }
        m = tc_compose(&r, &n);
        assert_non_null(m);
        all = realloc(all, len + n);
        memcpy(all + len, m, n);
        len += n;
        free(m);
    }
    assert_int_equal(tc_send_all(fd, all, len), 0);
    free(all);
    for (i = 0; i < N; i++) {
        struct tresp p;

        assert_int_equal(tc_recv(fd, &p), 0);
        assert_int_equal(p.h.opaque, (uint32_t)i);
        switch (i % 5) {
        case 0:
        case 3:
            assert_int_equal(p.h.status, 0);
            break;
        case 1:
            assert_int_equal(p.h.status, 0);
            assert_int_equal(p.h.opcode, WIRE_OP_GETK);
            assert_memory_equal(p.key, keys[i], strlen(keys[i]));
            assert_memory_equal(p.val, "10", 2);
            break;
        case 2:
            assert_int_equal(p.h.status, 0);
            assert_int_equal(u64_of(&p), 11);
            break;
        default:
            assert_int_equal(p.h.status, WIRE_S_NOT_FOUND);
            break;
        }
        tc_resp_free(&p);
    }
    close(fd);
}

struct cc_arg {
    const struct tsrv *s;
    int id;
    const char *counter;
    int failures;
};

static void *cc_main(void *a)
{
    struct cc_arg *arg = a;
    uint8_t one[8];
    int fd = tc_connect(arg->s), i;

    if (fd < 0) {
        arg->failures = 1000;
        return NULL;
    }
    u64le(one, 1);
    for (i = 0; i < 40; i++) {
        char k[96], v[160], *got = NULL;
        struct treq r;

        snprintf(k, sizeof(k), "cc-%s-%d-%d", arg->counter, arg->id, i);
        snprintf(v, sizeof(v), "value-%d-%d-%s", arg->id, i, k);
        if (tc_set(fd, k, v, strlen(v), NULL, 0) != 0)
            arg->failures++;
        if (tc_get(fd, k, &got, NULL) != 0 || strcmp(got, v) != 0)
            arg->failures++;
        free(got);
        r = (struct treq){.op = WIRE_OP_INCR, .key = arg->counter,
                          .klen = strlen(arg->counter), .val = one,
                          .vlen = 8};
        if (tc_call(fd, &r, NULL) != 0)
            arg->failures++;
    }
    close(fd);
    return NULL;
}

/* 50 clients at once, each checking its own values; one shared counter. */
static void run_concurrent(const struct tsrv *s)
{
    enum { NC = 50 };
    pthread_t th[NC];
    struct cc_arg args[NC];
    char counter[64], *v = NULL;
    int fd = tc_connect(s), i;

    assert_true(fd >= 0);
    ukey(counter, sizeof(counter), "cc-counter");
    assert_int_equal(tc_set(fd, counter, "0", 1, NULL, 0), 0);
    for (i = 0; i < NC; i++) {
        args[i] = (struct cc_arg){s, i, counter, 0};
        assert_int_equal(pthread_create(&th[i], NULL, cc_main, &args[i]), 0);
    }
    for (i = 0; i < NC; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].failures, 0);
    }
    assert_int_equal(tc_get(fd, counter, &v, NULL), 0);
    assert_int_equal(atoi(v), NC * 40);
    free(v);
    close(fd);
}

static void test_pipeline(void **state)
{
    (void)state;
    run_pipeline(&g_srv);
}

static void test_concurrent(void **state)
{
    (void)state;
    run_concurrent(&g_srv);
}

static void test_unix_socket(void **state)
{
    char k[64], *v = NULL;
    int fd;

    (void)state;
    if (g_srv.external)
        skip();
    fd = tc_connect_unix(&g_srv);
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "unix");
    assert_int_equal(tc_set(fd, k, "u", 1, NULL, 0), 0);
    assert_int_equal(tc_get(fd, k, &v, NULL), 0);
    assert_string_equal(v, "u");
    free(v);
    close(fd);
}

/* ---- bad input ---------------------------------------------------------- */

static void raw_header(uint8_t *h, uint8_t op, uint16_t klen, uint16_t ntags,
                       uint32_t vlen, uint32_t opaque)
{
    struct wire_hdr w;

    wire_hdr_request(&w, op);
    w.klen = klen;
    w.ntags = ntags;
    w.vlen = vlen;
    w.opaque = opaque;
    wire_encode_header(h, &w);
}

static void expect_line_then_eof(int fd, const char *prefix)
{
    char buf[256];
    ssize_t n;
    size_t got = 0;

    while (got < sizeof(buf) - 1) {
        n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    if (strncmp(buf, prefix, strlen(prefix)) != 0)
        fail_msg("got '%s' (%zu bytes, errno %d), want '%s...'", buf, got,
                 errno, prefix);
    assert_true(got >= 2 && buf[got - 2] == '\r' && buf[got - 1] == '\n');
}

static void test_foreign_protocols(void **state)
{
    static const uint8_t mcbin[24] = {0x80, 0x0a, [12] = 1, 2, 3, 4};
    uint8_t rsp[24];
    int fd;

    (void)state;
    /* memcached's binary protocol: served (a NOOP answered with magic
     * 0x81, the request's opcode and opaque, status 0), the connection
     * kept (tests/test_mcbin_server.c has the protocol itself) */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    assert_int_equal(tc_send_all(fd, mcbin, sizeof(mcbin)), 0);
    assert_int_equal(tc_read_full(fd, rsp, sizeof(rsp)), 0);
    assert_int_equal(rsp[0], 0x81);
    assert_int_equal(rsp[1], 0x0a);
    assert_int_equal(rsp[6] << 8 | rsp[7], 0);
    assert_memory_equal(rsp + 12, mcbin + 12, 4);
    assert_false(tc_wait_eof(fd, 100));
    close(fd);
    /* printable ASCII selects memcached's text protocol: a text line comes
     * back (its own tests live with the text protocol) */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    assert_int_equal(tc_send_all(fd, "get mdc-no-such-key\r\n", 21), 0);
    {
        char line[64];
        assert_int_equal(tc_read_full(fd, line, 5), 0);
        assert_true(memcmp(line, "END\r\n", 5) == 0 ||
                    memcmp(line, "SERVE", 5) == 0);
    }
    close(fd);
}

static void test_bad_magic_and_version(void **state)
{
    uint8_t h[WIRE_HDR_LEN];
    struct tresp p;
    int fd;

    (void)state;
    /* wrong magic as the first message: answered at once, then closed */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 5);
    h[0] = 0xB8;
    assert_int_equal(tc_send_all(fd, h, 1), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_BAD_MAGIC);
    assert_int_equal(p.h.opaque, 0);
    tc_resp_free(&p);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);

    /* wrong magic after a good request: good reply, error, close */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 1);
    assert_int_equal(tc_send_all(fd, h, sizeof(h)), 0);
    h[0] = 0x00;
    assert_int_equal(tc_send_all(fd, h, sizeof(h)), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, 0);
    assert_int_equal(p.h.opaque, 1);
    tc_resp_free(&p);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_BAD_MAGIC);
    tc_resp_free(&p);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);

    /* bad version */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 1);
    h[1] = 9;
    assert_int_equal(tc_send_all(fd, h, sizeof(h)), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_BAD_VERSION);
    tc_resp_free(&p);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);
}

static void test_in_sync_errors(void **state)
{
    uint8_t h[WIRE_HDR_LEN + 8];
    struct tresp p;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    /* unknown opcode with a body: skipped whole */
    raw_header(h, 0x7e, 0, 0, 8, 1);
    memset(h + WIRE_HDR_LEN, 0xB7, 8);
    assert_int_equal(tc_send_all(fd, h, sizeof(h)), 0);
    /* reserved flag bit */
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 2);
    h[WIRE_OFF_FLAGS] = 0x40;
    assert_int_equal(tc_send_all(fd, h, WIRE_HDR_LEN), 0);
    /* GET without a key */
    raw_header(h, WIRE_OP_GET, 0, 0, 0, 3);
    assert_int_equal(tc_send_all(fd, h, WIRE_HDR_LEN), 0);
    /* INCR with a 3-byte value */
    raw_header(h, WIRE_OP_INCR, 1, 0, 3, 4);
    memcpy(h + WIRE_HDR_LEN, "kabc", 4);
    assert_int_equal(tc_send_all(fd, h, WIRE_HDR_LEN + 4), 0);
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 5);
    assert_int_equal(tc_send_all(fd, h, WIRE_HDR_LEN), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_UNKNOWN_OPCODE);
    assert_int_equal(p.h.opaque, 1);
    tc_resp_free(&p);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_MALFORMED);
    assert_int_equal(p.h.opaque, 2);
    tc_resp_free(&p);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_KEY_INVALID);
    assert_int_equal(p.h.opaque, 3);
    tc_resp_free(&p);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_MALFORMED);
    assert_int_equal(p.h.opaque, 4);
    tc_resp_free(&p);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, 0);
    assert_int_equal(p.h.opaque, 5);
    tc_resp_free(&p);
    close(fd);
}

static void test_truncated_and_short(void **state)
{
    uint8_t h[WIRE_HDR_LEN + 16];
    struct tresp p;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    /* a header in two pieces: nothing until it is whole */
    raw_header(h, WIRE_OP_NOOP, 0, 0, 0, 9);
    assert_int_equal(tc_send_all(fd, h, 20), 0);
    tc_set_timeout_ms(fd, 200);
    assert_int_equal(tc_recv(fd, &p), -1);
    tc_set_timeout_ms(fd, TC_HANG_MS);
    assert_int_equal(tc_send_all(fd, h + 20, WIRE_HDR_LEN - 20), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.opaque, 9);
    tc_resp_free(&p);
    /* lengths past the end of what is sent, then the client half-closes:
     * no reply to the partial request, and the server closes */
    raw_header(h, WIRE_OP_SET, 3, 0, 100, 10);
    memcpy(h + WIRE_HDR_LEN, "key0123456789", 13);
    assert_int_equal(tc_send_all(fd, h, WIRE_HDR_LEN + 13), 0);
    shutdown(fd, SHUT_WR);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);

    /* a truncated header, then the client is gone */
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    assert_int_equal(tc_send_all(fd, h, 7), 0);
    close(fd);
}

static void test_oversize(void **state)
{
    size_t big = 300 * 1024; /* the group's -I is 256k */
    uint8_t *buf = calloc(1, WIRE_HDR_LEN + 1 + big);
    uint8_t h[WIRE_HDR_LEN];
    struct tresp p;
    int fd = tc_connect(&g_srv);

    (void)state;
    assert_true(fd >= 0);
    assert_non_null(buf);
    /* a value over the item size: TOO_LARGE, body skipped, in sync */
    raw_header(buf, WIRE_OP_SET, 1, 0, (uint32_t)big, 1);
    buf[WIRE_HDR_LEN] = 'k';
    assert_int_equal(tc_send_all(fd, buf, WIRE_HDR_LEN + 1 + big), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    if (!g_srv.external)
        assert_int_equal(p.h.status, WIRE_S_TOO_LARGE);
    tc_resp_free(&p);
    assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    /* a value over the message bound too (a 3 MiB value against -I 256k;
     * what a client sends by mistake): TOO_LARGE, swallowed, in sync */
    {
        size_t huge = 3u << 20;
        uint8_t *m = calloc(1, WIRE_HDR_LEN + 1 + huge);

        assert_non_null(m);
        raw_header(m, WIRE_OP_SET, 1, 0, (uint32_t)huge, 4);
        m[WIRE_HDR_LEN] = 'k';
        assert_int_equal(tc_send_all(fd, m, WIRE_HDR_LEN + 1 + huge), 0);
        free(m);
        assert_int_equal(tc_recv(fd, &p), 0);
        if (!g_srv.external)
            assert_int_equal(p.h.status, WIRE_S_TOO_LARGE);
        assert_int_equal(p.h.opaque, 4);
        tc_resp_free(&p);
        assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    }
    /* huge tag count on a set: every byte sent, refused, still in sync */
    {
        size_t nt = 65535, blen = WIRE_HDR_LEN + nt * 8 + 1 + 1;
        uint8_t *m = calloc(1, blen);
        assert_non_null(m);
        raw_header(m, WIRE_OP_SET, 1, (uint16_t)nt, 1, 2);
        for (size_t i = 0; i < nt; i++)
            wire_encode_tag(m + WIRE_HDR_LEN + i * 8, 1, (int32_t)i);
        m[blen - 2] = 'k';
        m[blen - 1] = 'v';
        assert_int_equal(tc_send_all(fd, m, blen), 0);
        free(m);
        assert_int_equal(tc_recv(fd, &p), 0);
        assert_int_equal(p.h.status, WIRE_S_TOO_MANY_TAGS);
        assert_int_equal(p.h.opaque, 2);
        tc_resp_free(&p);
        assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    }
    /* a body over the message bound: refused from the header, closed */
    raw_header(h, WIRE_OP_SET, 1, 65535, 0xfffffff0u, 3);
    assert_int_equal(tc_send_all(fd, h, sizeof(h)), 0);
    assert_int_equal(tc_recv(fd, &p), 0);
    assert_int_equal(p.h.status, WIRE_S_MSG_TOO_LARGE);
    assert_int_equal(p.h.opaque, 3);
    tc_resp_free(&p);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);
    free(buf);
}

/* "stats conns" over a new text connection, printed for the log: which
 * connection stayed, in what state. */
static void print_conns(void)
{
    static char out[65536];
    size_t n = 0;
    int t = tc_connect(&g_srv);

    if (t < 0 || tc_send_all(t, "stats conns\r\n", 13) < 0)
        goto done;
    while (n + 1 < sizeof(out)) {
        ssize_t k = recv(t, out + n, sizeof(out) - 1 - n, 0);

        if (k <= 0)
            break;
        n += (size_t)k;
        out[n] = '\0';
        if (n >= 5 && strcmp(out + n - 5, "END\r\n") == 0)
            break;
    }
    out[n] = '\0';
    printf("# stats conns:\n%s", out);
done:
    if (t >= 0)
        close(t);
}

/* Clients that vanish mid-request and mid-response leave nothing behind. */
static void test_client_vanishes(void **state)
{
    static char val[200 * 1024];
    char k[64];
    long long before, accepted;
    int fd, i, j;

    (void)state;
    fd = tc_connect(&g_srv);
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "vanish");
    memset(val, 'v', sizeof(val));
    assert_int_equal(tc_set(fd, k, val, sizeof(val), NULL, 0), 0);
    before = tc_stat(fd, "curr_connections");
    accepted = tc_stat(fd, "total_connections");
    for (i = 0; i < 10; i++) {
        struct linger lg = {1, 0};
        int c = tc_connect(&g_srv);
        uint8_t *m;
        size_t n;
        struct treq r = {.op = WIRE_OP_GET, .key = k, .klen = strlen(k)};

        assert_true(c >= 0);
        if (i % 2 == 0) {
            /* mid-response: ask for 40 x 200 KiB, read a little, reset */
            m = tc_compose(&r, &n);
            for (j = 0; j < 40; j++)
                assert_int_equal(tc_send_all(c, m, n), 0);
            free(m);
            assert_int_equal(tc_read_full(c, val, 1000), 0);
            memset(val, 'v', 1000);
        } else {
            /* mid-request: half a SET */
            r = (struct treq){.op = WIRE_OP_SET, .key = k, .klen = strlen(k),
                              .val = val, .vlen = sizeof(val)};
            m = tc_compose(&r, &n);
            assert_int_equal(tc_send_all(c, m, n / 2), 0);
            free(m);
        }
        setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(c);
    }
    /* the server notices every one of them and keeps serving: once it
     * has accepted all ten (a loaded machine accepts the last ones after
     * the first are closed, and the count dips to before in between),
     * the count comes back to before; 30 s ceilings, for a hang */
    for (i = 0; i < 3000 && tc_stat(fd, "total_connections") < accepted + 10;
         i++)
        sleep_ms(10);
    for (i = 0; i < 3000 && tc_stat(fd, "curr_connections") > before; i++)
        sleep_ms(10);
    /* (<=: a connection of an earlier test may have closed meanwhile) */
    if (tc_stat(fd, "curr_connections") > before)
        print_conns();
    assert_true(tc_stat(fd, "curr_connections") <= before);
    {
        char *v = NULL;
        size_t vl = 0;
        assert_int_equal(tc_get(fd, k, &v, &vl), 0);
        assert_int_equal(vl, sizeof(val));
        free(v);
    }
    close(fd);
}

/*
 * The end of the stream is seen however it arrives.  The server stops
 * reading after a short read once a reply has gone out (docs/threads-
 * models.md, "I/O path and system calls"), so these send the last request
 * and the close together, over TCP and the Unix socket: a half-close after
 * a request with a reply (the reply, then EOF); quiet requests, whose
 * batch sends nothing, followed by a half-close or a full close.
 */
static void test_eof_with_last_request(void **state)
{
    char k[64];
    long long before;
    int ctl, t, i;

    (void)state;
    ctl = tc_connect(&g_srv);
    assert_true(ctl >= 0);
    before = tc_stat(ctl, "curr_connections");
    ukey(k, sizeof(k), "eof");
    for (t = 0; t < 2; t++) {
        if (t == 1 && g_srv.external)
            break;
        for (i = 0; i < 20; i++) {
            struct treq get = {.op = WIRE_OP_GET, .key = k, .klen = strlen(k),
                               .opaque = 7};
            struct treq qset = {.op = WIRE_OP_SET, .flags = WIRE_F_QUIET,
                                .key = k, .klen = strlen(k), .val = "q",
                                .vlen = 1};
            int fd = t == 0 ? tc_connect(&g_srv) : tc_connect_unix(&g_srv);
            uint8_t *m1, *m2, *buf;
            size_t n1, n2;
            struct tresp p;

            assert_true(fd >= 0);
            m1 = tc_compose(&qset, &n1);
            m2 = tc_compose(&get, &n2);
            buf = malloc(n1 + n2);
            assert_non_null(buf);
            memcpy(buf, m1, n1);
            memcpy(buf + n1, m2, n2);
            switch (i % 3) {
            case 0: /* quiet set + get, half-close: one reply, then EOF */
                assert_int_equal(tc_send_all(fd, buf, n1 + n2), 0);
                shutdown(fd, SHUT_WR);
                assert_int_equal(tc_recv(fd, &p), 0);
                assert_int_equal(p.h.opaque, 7);
                tc_resp_free(&p);
                assert_true(tc_wait_eof(fd, TC_HANG_MS));
                break;
            case 1: /* quiet set alone, half-close: no reply, EOF */
                assert_int_equal(tc_send_all(fd, m1, n1), 0);
                shutdown(fd, SHUT_WR);
                assert_true(tc_wait_eof(fd, TC_HANG_MS));
                break;
            default: /* quiet set alone, then gone */
                assert_int_equal(tc_send_all(fd, m1, n1), 0);
                break;
            }
            free(m1);
            free(m2);
            free(buf);
            close(fd);
        }
    }
    /* every one of them is closed on the server side too */
    for (i = 0; i < 3000 && tc_stat(ctl, "curr_connections") > before; i++)
        sleep_ms(10);
    assert_true(tc_stat(ctl, "curr_connections") <= before);
    close(ctl);
}

static const struct CMUnitTest functional_tests[] = {
    cmocka_unit_test(test_get_set_family),
    cmocka_unit_test(test_expiry_touch_gat),
    cmocka_unit_test(test_counters),
    cmocka_unit_test(test_tags),
        cmocka_unit_test(test_tags_stale),
    cmocka_unit_test(test_lease),
    cmocka_unit_test(test_tag_reply_truncated),
    cmocka_unit_test(test_tstack),
    cmocka_unit_test(test_stats_version_noop),
    cmocka_unit_test(test_dump_without_file),
    cmocka_unit_test(test_quiet_multiget),
    cmocka_unit_test(test_pipeline),
    cmocka_unit_test(test_concurrent),
    cmocka_unit_test(test_unix_socket),
    cmocka_unit_test(test_foreign_protocols),
    cmocka_unit_test(test_bad_magic_and_version),
    cmocka_unit_test(test_in_sync_errors),
    cmocka_unit_test(test_truncated_and_short),
    cmocka_unit_test(test_oversize),
    cmocka_unit_test(test_client_vanishes),
    cmocka_unit_test(test_eof_with_last_request),
};

/* ---- tests with their own daemon ------------------------------------ */

static void test_flush(void **state)
{
    struct tsrv s;
    static const char *const args[] = {"-n", "1", NULL};
    int fd;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    assert_int_equal(tc_set(fd, "a", "1", 1, NULL, 0), 0);
    assert_int_equal(tc_set(fd, "b", "2", 1, NULL, 0), 0);
    assert_int_equal(status_of(fd, WIRE_OP_FLUSH, NULL, NULL, 0, 0, 0), 0);
    assert_int_equal(tc_get(fd, "a", NULL, NULL), WIRE_S_NOT_FOUND);
    assert_int_equal(tc_get(fd, "b", NULL, NULL), WIRE_S_NOT_FOUND);
    /* flush is a cut-off: the sweeper's walk reclaims what it hides and
     * then ends (within a 30 s ceiling that only a hang crosses) */
    for (int i = 0; i < 3000 && (tc_stat(fd, "curr_items") != 0 ||
                                 tc_stat(fd, "flush_pending") != 0);
         i++)
        usleep(10000);
    assert_int_equal(tc_stat(fd, "curr_items"), 0);
    assert_int_equal(tc_stat(fd, "flush_pending"), 0);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

static void test_max_connections(void **state)
{
    struct tsrv s;
    static const char *const args[] = {"-c", "5", "-n", "2", NULL};
    int fds[5], extra, i;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    /* tsrv_start's probe connection may still be counted: wait it out */
    for (i = 0; i < 5; i++) {
        int k;
        for (k = 0; k < 100; k++) {
            fds[i] = tc_connect(&s);
            assert_true(fds[i] >= 0);
            if (status_of(fds[i], WIRE_OP_NOOP, NULL, NULL, 0, 0, 0) == 0)
                break;
            close(fds[i]);
            sleep_ms(10);
        }
        assert_true(k < 100);
    }
    extra = tc_connect(&s);
    assert_true(extra >= 0);
    expect_line_then_eof(extra, "ERROR Too many open connections");
    close(extra);
    for (i = 0; i < 5; i++)
        assert_int_equal(status_of(fds[i], WIRE_OP_NOOP, NULL, NULL, 0, 0, 0),
                         0);
    assert_true(tc_stat(fds[0], "rejected_connections") >= 1);
    close(fds[4]);
    for (i = 0; i < 200; i++) {
        extra = tc_connect(&s);
        assert_true(extra >= 0);
        if (status_of(extra, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0) == 0)
            break;
        close(extra);
        extra = -1;
        sleep_ms(10);
    }
    assert_true(extra >= 0);
    close(extra);
    for (i = 0; i < 4; i++)
        close(fds[i]);
    assert_int_equal(tsrv_stop(&s), 0);
}

/* A client that never reads: paused, then dropped; others unaffected and
 * the server's memory does not follow the backlog. */
static void test_slow_reader(void **state)
{
    static char val[64 * 1024];
    struct tsrv s;
    static const char *const args[] = {"-n", "2", "-m", "64",
                                       "--max-output", "256k",
                                       "--output-timeout", "2", NULL};
    struct treq r = {.op = WIRE_OP_GET, .key = "big", .klen = 3};
    uint8_t *m;
    size_t n;
    long rss0, rss1;
    int fd, slow, rcv = 4096, i;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    memset(val, 's', sizeof(val));
    assert_int_equal(tc_set(fd, "big", val, sizeof(val), NULL, 0), 0);
    rss0 = tsrv_rss_kb(&s);

    slow = tc_connect_rcvbuf(&s, rcv);
    assert_true(slow >= 0);
    tc_set_timeout_ms(slow, 300);
    /* ask for 64 KiB x 5000 = 320 MiB and read none of it */
    m = tc_compose(&r, &n);
    for (i = 0; i < 5000; i++)
        if (tc_send_all(slow, m, n) < 0)
            break; /* the server stopped reading us: our send blocked */
    free(m);
    /* others are served meanwhile */
    for (i = 0; i < 50; i++) {
        char *v = NULL;
        assert_int_equal(tc_get(fd, "big", &v, NULL), 0);
        free(v);
    }
    /* the pause is noticed by the server's loop; give a loaded machine time */
    for (i = 0; i < 3000 && tc_stat(fd, "output_paused") < 1; i++)
        sleep_ms(10);
    assert_true(tc_stat(fd, "output_paused") >= 1);
    rss1 = tsrv_rss_kb(&s);
    if (rss0 > 0 && rss1 > 0)
        assert_true(rss1 - rss0 < 32 * 1024); /* far below 320 MiB */
    /* no progress for --output-timeout: dropped */
    for (i = 0; i < 3000 && tc_stat(fd, "slow_reader_drops") < 1; i++)
        sleep_ms(10);
    assert_int_equal(tc_stat(fd, "slow_reader_drops"), 1);
    close(slow);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

static void test_idle_timeout(void **state)
{
    struct tsrv s;
    static const char *const args[] = {"-n", "1", "--idle-timeout", "1",
                                       NULL};
    int fd;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    assert_int_equal(status_of(fd, WIRE_OP_NOOP, NULL, NULL, 0, 0, 0), 0);
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

static double mono_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --idle-timeout SEC closes no connection earlier than SEC seconds after
 * its last input (how late it may be: test_timeouts).  The requests are spread over a second, so that some come just
 * before a second of the clock turns, where a timeout counted in whole
 * seconds of the tick fired almost a second early. */
static void test_idle_timeout_not_early(void **state)
{
    enum { N = 10 };
    struct tsrv s;
    static const char *const args[] = {"-n", "1", "--idle-timeout", "2",
                                       NULL};
    int fds[N], i, early = 0, late = 0;
    double t0[N], worst = 10;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    for (i = 0; i < N; i++) {
        fds[i] = tc_connect(&s);
        assert_true(fds[i] >= 0);
        t0[i] = mono_now(); /* before the request: its arrival is later */
        assert_int_equal(status_of(fds[i], WIRE_OP_NOOP, NULL, NULL, 0, 0, 0),
                         0);
        sleep_ms(50); /* half a second in all: none is due before the end */
    }
    /* all at once: an EOF is timed when it comes, not when its turn is */
    {
        double end = mono_now() + 30, eof[N] = {0}; /* a hang's ceiling */
        int left = N;

        while (left > 0 && mono_now() < end) {
            struct pollfd pf[N];

            for (i = 0; i < N; i++) {
                pf[i].fd = eof[i] == 0 ? fds[i] : -1;
                pf[i].events = POLLIN;
            }
            if (poll(pf, N, 50) <= 0)
                continue;
            for (i = 0; i < N; i++) {
                char b[256];

                if (pf[i].fd >= 0 && pf[i].revents != 0 &&
                    recv(fds[i], b, sizeof(b), MSG_DONTWAIT) <= 0) {
                    eof[i] = mono_now();
                    left--;
                }
            }
        }
        for (i = 0; i < N; i++) {
            if (eof[i] == 0) {
                late++;
                continue;
            }
            if (eof[i] - t0[i] < worst)
                worst = eof[i] - t0[i];
            if (eof[i] - t0[i] < 2.0)
                early++;
        }
    }
    for (i = 0; i < N; i++)
        close(fds[i]);
    assert_int_equal(tsrv_stop(&s), 0);
    if (early > 0 || late > 0)
        fail_msg("--idle-timeout 2: %d of %d closed early (first %.3f s "
                 "after its last request), %d not closed in 30 s",
                 early, N, worst, late);
}

/* SIGTERM while a large reply is being sent: the reply completes, exit 0. */
static void test_sigterm_finishes_inflight(void **state)
{
    static char val[100 * 1024], got[100 * 1024];
    struct tsrv s;
    static const char *const args[] = {"-n", "2", "-t", "2", NULL};
    struct treq r = {.op = WIRE_OP_GET, .key = "k", .klen = 1};
    struct tresp p;
    uint8_t *m;
    size_t n;
    int fd, i, status;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    memset(val, 'q', sizeof(val));
    assert_int_equal(tc_set(fd, "k", val, sizeof(val), NULL, 0), 0);
    /* all 50 requests in one write, so the server has them all */
    m = tc_compose(&r, &n);
    for (i = 0; i < 50; i++)
        memcpy(got + i * n, m, n);
    free(m);
    assert_int_equal(tc_send_all(fd, got, 50 * n), 0);
    assert_int_equal(tc_read_full(fd, got, WIRE_HDR_LEN), 0);
    kill(s.pid, SIGTERM);
    assert_int_equal(tc_read_full(fd, got, sizeof(val)), 0);
    for (i = 1; i < 50; i++) {
        assert_int_equal(tc_recv(fd, &p), 0);
        assert_int_equal(p.h.vlen, sizeof(val));
        tc_resp_free(&p);
    }
    assert_true(tc_wait_eof(fd, TC_HANG_MS));
    close(fd);
    /* new connections are refused once stopping */
    for (i = 0; i < 500; i++) {
        pid_t w = waitpid(s.pid, &status, WNOHANG);
        if (w == s.pid)
            break;
        sleep_ms(10);
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    s.pid = 0;
    tsrv_stop(&s);
}

/* Every row of docs/threads-models.md's table of thread models: name, ops,
 * pipelining, concurrency. */
static void test_thread_models(void **state)
{
    static const struct {
        const char *n, *t, *name;
    } models[] = {
        {"0", "0", "SPED"},   {"0", "2", "AMPED"}, {"4", "0", "SYMPED"},
        {"1", "2", "AMPED"},  {"2", "3", "SEDA"},  {"2", "2", "SEDA-S"},
    };
    size_t i;

    (void)state;
    if (tsrv_external())
        skip();
    for (i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        const char *args[] = {"-n", models[i].n, "-t", models[i].t, NULL};
        struct tsrv s;
        char name[32];
        int fd;

        assert_int_equal(tsrv_start(&s, args), 0);
        fd = tc_connect(&s);
        assert_true(fd >= 0);
        assert_int_equal(tc_stat_str(fd, "thread_model", name, sizeof(name)),
                         0);
        assert_string_equal(name, models[i].name);
        assert_int_equal(tc_stat(fd, "payload_threads"), atoi(models[i].t));
        assert_int_equal(tc_stat(fd, "network_threads"), atoi(models[i].n));
        run_pipeline(&s);
        run_concurrent(&s);
        if (atoi(models[i].t) > 0)
            assert_true(tc_stat(fd, "payload_handoffs") > 0);
        else
            assert_int_equal(tc_stat(fd, "payload_handoffs"), 0);
        close(fd);
        assert_int_equal(tsrv_stop(&s), 0);
    }
}

/* More network threads than CPUs (the daemon confined to one CPU): each
 * loop yields the CPU after every turn (loop_yields counts it); with no
 * more threads than CPUs the loops run undisturbed. */
static void test_oversubscribed_loops_yield(void **state)
{
    cpu_set_t old, one;
    int pass, cpu = 0;

    (void)state;
    if (tsrv_external())
        skip();
    assert_int_equal(sched_getaffinity(0, sizeof(old), &old), 0);
    while (!CPU_ISSET(cpu, &old))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    for (pass = 0; pass < 2; pass++) {
        const char *args[] = {"-n", pass == 0 ? "3" : "1", "-t", "0", NULL};
        struct tsrv s;
        long long y;
        int fd, rc;

        /* the daemon inherits the affinity of the process starting it */
        assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
        rc = tsrv_start(&s, args);
        assert_int_equal(sched_setaffinity(0, sizeof(old), &old), 0);
        assert_int_equal(rc, 0);
        run_concurrent(&s);
        fd = tc_connect(&s);
        assert_true(fd >= 0);
        y = tc_stat(fd, "loop_yields");
        if (pass == 0)
            assert_true(y > 0);
        else
            assert_int_equal(y, 0);
        close(fd);
        assert_int_equal(tsrv_stop(&s), 0);
    }
}

static const struct CMUnitTest own_daemon_tests[] = {
    cmocka_unit_test(test_flush),
    cmocka_unit_test(test_max_connections),
    cmocka_unit_test(test_slow_reader),
    cmocka_unit_test(test_idle_timeout),
    cmocka_unit_test(test_idle_timeout_not_early),
    cmocka_unit_test(test_sigterm_finishes_inflight),
    cmocka_unit_test(test_thread_models),
    cmocka_unit_test(test_oversubscribed_loops_yield),
};

int main(void)
{
    int fails = 0;

    signal(SIGPIPE, SIG_IGN);
    if (getenv("MDC_TEST_FILTER") != NULL) /* e.g. "test_slow*" */
        cmocka_set_test_filter(getenv("MDC_TEST_FILTER"));
    fails += cmocka_run_group_tests_name("functional", functional_tests,
                                         group_setup, group_teardown);
    fails += cmocka_run_group_tests_name("own daemon", own_daemon_tests, NULL,
                                         NULL);
    return fails != 0;
}
