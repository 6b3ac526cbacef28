/*
 * test_mctext.c - unit tests of the memcached text protocol parser and
 * composer (protocol/mctext.c): every command with and without noreply,
 * errors worded as memcached words them, partial input at every split
 * point (need more), oversize lines, bad data chunks, keys too long or
 * with control characters, negative and huge numbers, meta flags, the tag
 * extension commands, and byte-exact composed replies.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/mctext.h"

static const struct mctext_limits lim = {1024 * 1024};

/* Parse the whole of s; the request must take all of it. */
static void parse_all(const char *s, struct mctext_req *req)
{
    ssize_t n = mctext_parse(s, strlen(s), &lim, req);

    if (n != (ssize_t)strlen(s))
        fail_msg("parse of \"%s\": %zd (err %s)", s, n,
                 req->err != NULL ? req->err : "-");
}

/* Parse s expecting error err; returns req->skip. */
static uint64_t parse_err(const char *s, const char *err,
                          struct mctext_req *req)
{
    ssize_t n = mctext_parse(s, strlen(s), &lim, req);

    assert_int_equal(n, MCTEXT_ERROR);
    assert_string_equal(req->err, err);
    return req->skip;
}

static bool key_is(const struct mctext_req *req, const char *k)
{
    return req->klen == strlen(k) && memcmp(req->key, k, req->klen) == 0;
}

/* ---- classic commands ---------------------------------------------- */

static void test_storage(void **state)
{
    static const struct {
        const char *name;
        enum mctext_cmd cmd;
    } cmds[] = {{"set", MCT_SET},
                {"add", MCT_ADD},
                {"replace", MCT_REPLACE},
                {"append", MCT_APPEND},
                {"prepend", MCT_PREPEND}};
    struct mctext_req req;
    char buf[128];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        snprintf(buf, sizeof(buf), "%s foo 42 3600 3\r\nbar\r\n", cmds[i].name);
        parse_all(buf, &req);
        assert_int_equal(req.cmd, cmds[i].cmd);
        assert_true(key_is(&req, "foo"));
        assert_int_equal(req.flags, 42);
        assert_int_equal(req.exptime, 3600);
        assert_int_equal(req.vlen, 3);
        assert_memory_equal(req.value, "bar", 3);
        assert_false(req.noreply);
        assert_int_equal(req.linelen, strlen(cmds[i].name) + 16);

        snprintf(buf, sizeof(buf), "%s foo 0 0 0 noreply\r\n\r\n",
                 cmds[i].name);
        parse_all(buf, &req);
        assert_true(req.noreply);
        assert_int_equal(req.vlen, 0);
    }
    parse_all("cas k 1 -1 2 12345678901234567890\r\nab\r\n", &req);
    assert_int_equal(req.cmd, MCT_CAS);
    assert_int_equal(req.exptime, -1);
    assert_true(req.cas == 12345678901234567890ull);
    parse_all("cas k 1 0 2 7 noreply\r\nab\r\n", &req);
    assert_true(req.noreply);
    /* A sixth token other than noreply is ignored, as memcached. */
    parse_all("set a 0 0 1 norepl\r\nx\r\n", &req);
    assert_false(req.noreply);
    /* Bare \n ends a line too; extra spaces are separators. */
    parse_all("set  a   4294967295 0 1 \nx\r\n", &req);
    assert_int_equal(req.flags, 4294967295u);
    /* The value may hold \r\n. */
    parse_all("set a 0 0 4\r\n\r\n\r\n\r\n", &req);
    assert_memory_equal(req.value, "\r\n\r\n", 4);
}

static void test_storage_errors(void **state)
{
    struct mctext_req req;
    (void)state;

    /* Wrong token counts: ERROR, nothing swallowed (bytes unknown). */
    assert_int_equal(parse_err("set a\r\n", MCTEXT_R_ERROR, &req), 7);
    assert_int_equal(parse_err("set a 0 0\r\n", MCTEXT_R_ERROR, &req), 11);
    parse_err("set a 0 0 1 noreply extra\r\nx\r\n", MCTEXT_R_ERROR, &req);
    parse_err("cas a 0 0 1\r\nx\r\n", MCTEXT_R_ERROR, &req);
    /* Bad <bytes>: the line only. */
    assert_int_equal(parse_err("set a 0 0 -1\r\n", MCTEXT_E_FORMAT, &req), 14);
    parse_err("set a 0 0 x\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 0 0 99999999999999999999\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 0 0 2147483648\r\n", MCTEXT_E_FORMAT, &req);
    /* Other bad fields: the line and the data block are discarded. */
    assert_int_equal(parse_err("set a x 0 1\r\nx\r\n", MCTEXT_E_FORMAT, &req),
                     16);
    parse_err("set a -1 0 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 4294967296 0 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 0 x 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 0 99999999999999999999 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("set a 0 +1 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("cas a 0 0 1 x\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("cas a 0 0 1 -1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    /* The data block is discarded even before it arrives. */
    assert_int_equal(parse_err("set a x 0 100\r\n", MCTEXT_E_FORMAT, &req),
                     15 + 102);
    /* noreply is known even when the line is bad: the error is silent. */
    parse_err("set a x 0 1 noreply\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    assert_true(req.noreply);
    assert_false(req.close);
}

static void test_bad_data_chunk(void **state)
{
    struct mctext_req req;
    (void)state;

    /* memcached reads <bytes>+2 and checks the \r\n; it resyncs there. */
    assert_int_equal(parse_err("set a 0 0 1\r\nxy\r\n", MCTEXT_E_DATA, &req),
                     16);
    assert_false(req.close);
    parse_err("set a 0 0 1\r\nx\n\r\n", MCTEXT_E_DATA, &req);
    parse_err("set a 0 0 0\r\nxx", MCTEXT_E_DATA, &req);
    parse_err("ms k 2\r\nhiX\r\n", MCTEXT_E_DATA, &req);
    parse_err("set a 0 0 1 noreply\r\nxy\r\n", MCTEXT_E_DATA, &req);
    assert_true(req.noreply);
}

static void test_too_large(void **state)
{
    struct mctext_req req;
    struct mctext_limits small = {10};
    const char *s = "set a 0 0 11\r\n";
    (void)state;

    /* Answered before the data arrives; the data is discarded. */
    assert_int_equal(mctext_parse(s, strlen(s), &small, &req), MCTEXT_ERROR);
    assert_string_equal(req.err, MCTEXT_E_TOO_LARGE);
    assert_int_equal(req.skip, strlen(s) + 11 + 2);
    assert_false(req.close);
    s = "set a 0 0 10\r\n0123456789\r\n";
    assert_int_equal(mctext_parse(s, strlen(s), &small, &req),
                     (ssize_t)strlen(s));
    s = "ms a 11 T0\r\n";
    assert_int_equal(mctext_parse(s, strlen(s), &small, &req), MCTEXT_ERROR);
    assert_string_equal(req.err, MCTEXT_E_TOO_LARGE);
    assert_int_equal(req.skip, strlen(s) + 13);
    s = "tpush 1 2 0 0 11 noreply\r\n";
    assert_int_equal(mctext_parse(s, strlen(s), &small, &req), MCTEXT_ERROR);
    assert_string_equal(req.err, MCTEXT_E_TOO_LARGE);
    assert_true(req.noreply);
}

static void test_retrieval(void **state)
{
    struct mctext_req req;
    struct mctext_iter it;
    const char *k;
    uint32_t kl;
    (void)state;

    parse_all("get foo\r\n", &req);
    assert_int_equal(req.cmd, MCT_GET);
    assert_int_equal(req.nlist, 1);
    assert_true(key_is(&req, "foo"));

    parse_all("gets  a bb   ccc \r\n", &req);
    assert_int_equal(req.cmd, MCT_GETS);
    assert_int_equal(req.nlist, 3);
    assert_true(key_is(&req, "a"));
    mctext_iter_init(&it, &req);
    assert_true(mctext_next_key(&it, &k, &kl));
    assert_int_equal(kl, 1);
    assert_true(mctext_next_key(&it, &k, &kl));
    assert_int_equal(kl, 2);
    assert_memory_equal(k, "bb", 2);
    assert_true(mctext_next_key(&it, &k, &kl));
    assert_memory_equal(k, "ccc", 3);
    assert_false(mctext_next_key(&it, &k, &kl));

    parse_all("gat 100 a b\r\n", &req);
    assert_int_equal(req.cmd, MCT_GAT);
    assert_int_equal(req.exptime, 100);
    assert_int_equal(req.nlist, 2);
    parse_all("gats -5 a\r\n", &req);
    assert_int_equal(req.cmd, MCT_GATS);
    assert_int_equal(req.exptime, -5);
    /* gat without keys answers END in memcached: no keys, no error. */
    parse_all("gat 10\r\n", &req);
    assert_int_equal(req.nlist, 0);

    parse_err("get\r\n", MCTEXT_R_ERROR, &req);
    parse_err("get \r\n", MCTEXT_R_ERROR, &req);
    parse_err("gets\r\n", MCTEXT_R_ERROR, &req);
    parse_err("gat\r\n", MCTEXT_R_ERROR, &req);
    parse_err("gat a\r\n", MCTEXT_E_EXPTIME, &req);
    parse_err("gat x a\r\n", MCTEXT_E_EXPTIME, &req);
    /* One bad key rejects the whole command. */
    parse_err("get a b\x01 c\r\n", MCTEXT_E_FORMAT, &req);
}

static void test_keys(void **state)
{
    struct mctext_req req;
    char buf[600];
    (void)state;

    memset(buf, 0, sizeof(buf));
    memcpy(buf, "get ", 4);
    memset(buf + 4, 'k', 250);
    memcpy(buf + 254, "\r\n", 2);
    parse_all(buf, &req);
    assert_int_equal(req.klen, 250);
    memset(buf + 4, 'k', 251);
    memcpy(buf + 255, "\r\n", 3);
    parse_err(buf, MCTEXT_E_FORMAT, &req);

    memcpy(buf, "set ", 4);
    memcpy(buf + 255, " 0 0 1\r\nx\r\n", 12);
    assert_int_equal(parse_err(buf, MCTEXT_E_FORMAT, &req), strlen(buf));
    parse_err("set a\x7f 0 0 1\r\nx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("get a\tb\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("get a\rb\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("delete a\x01\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("incr \x1b 1\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("mg a\x02 v\r\n", MCTEXT_E_FORMAT, &req);
    /* Bytes above 0x7f (UTF-8) are allowed. */
    parse_all("get \xc3\xa9t\xc3\xa9\r\n", &req);
    assert_int_equal(req.klen, 5);
}

static void test_delete(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("delete k\r\n", &req);
    assert_int_equal(req.cmd, MCT_DELETE);
    assert_true(key_is(&req, "k"));
    assert_false(req.noreply);
    parse_all("delete k noreply\r\n", &req);
    assert_true(req.noreply);
    parse_all("delete k 0\r\n", &req);
    assert_false(req.noreply);
    parse_all("delete k 0 noreply\r\n", &req);
    assert_true(req.noreply);
    parse_err("delete\r\n", MCTEXT_R_ERROR, &req);
    parse_err("delete k x\r\n", MCTEXT_E_DELETE, &req);
    parse_err("delete k 1\r\n", MCTEXT_E_DELETE, &req);
    parse_err("delete k 1 noreply\r\n", MCTEXT_E_DELETE, &req);
    assert_true(req.noreply);
    parse_err("delete a b c\r\n", MCTEXT_E_DELETE, &req);
    parse_err("delete a b c d\r\n", MCTEXT_R_ERROR, &req);
}

static void test_incr_touch(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("incr n 18446744073709551615\r\n", &req);
    assert_int_equal(req.cmd, MCT_INCR);
    assert_true(req.delta == UINT64_MAX);
    parse_all("decr n 1 noreply\r\n", &req);
    assert_int_equal(req.cmd, MCT_DECR);
    assert_true(req.noreply);
    /* A fourth token other than noreply is ignored, as memcached. */
    parse_all("incr n 1 junk\r\n", &req);
    assert_false(req.noreply);
    parse_err("incr n\r\n", MCTEXT_R_ERROR, &req);
    parse_err("incr n 1 noreply junk\r\n", MCTEXT_R_ERROR, &req);
    parse_err("incr n x\r\n", MCTEXT_E_DELTA, &req);
    parse_err("incr n -1\r\n", MCTEXT_E_DELTA, &req);
    parse_err("incr n 18446744073709551616\r\n", MCTEXT_E_DELTA, &req);
    parse_err("decr n x noreply\r\n", MCTEXT_E_DELTA, &req);
    assert_true(req.noreply);

    parse_all("touch k 10\r\n", &req);
    assert_int_equal(req.cmd, MCT_TOUCH);
    assert_int_equal(req.exptime, 10);
    parse_all("touch k -1 noreply\r\n", &req);
    assert_int_equal(req.exptime, -1);
    assert_true(req.noreply);
    parse_err("touch k\r\n", MCTEXT_R_ERROR, &req);
    parse_err("touch k x\r\n", MCTEXT_E_EXPTIME, &req);
    parse_err("touch k 9223372036854775808\r\n", MCTEXT_E_EXPTIME, &req);
    parse_all("touch k -9223372036854775808\r\n", &req);
    assert_true(req.exptime == INT64_MIN);
}

static void test_admin(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("flush_all\r\n", &req);
    assert_int_equal(req.cmd, MCT_FLUSH_ALL);
    assert_int_equal(req.exptime, 0);
    parse_all("flush_all 10\r\n", &req);
    assert_int_equal(req.exptime, 10);
    parse_all("flush_all noreply\r\n", &req);
    assert_true(req.noreply);
    parse_all("flush_all -1 noreply\r\n", &req);
    assert_int_equal(req.exptime, -1);
    assert_true(req.noreply);
    /* memcached 1.6: "CLIENT_ERROR invalid exptime argument" */
    parse_err("flush_all x\r\n", MCTEXT_E_EXPTIME, &req);
    parse_err("flush_all invalid\r\n", MCTEXT_E_EXPTIME, &req);
    parse_err("flush_all 1x noreply\r\n", MCTEXT_E_EXPTIME, &req);
    assert_true(req.noreply); /* kept back, as memcached does */
    parse_err("flush_all 99999999999999999999\r\n", MCTEXT_E_EXPTIME, &req);
    parse_err("verbosity x\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("verbosity 1 x\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("cache_memlimit x\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("cache_memlimit -1\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("shutdown now\r\n", MCTEXT_E_SHUTDOWN_MODE, &req);
    parse_all("cache_memlimit 100 noreply\r\n", &req);
    assert_int_equal(req.cmd, MCT_CACHE_MEMLIMIT);
    assert_int_equal(req.level, 100);
    assert_true(req.noreply);
    parse_err("flush_all 0 noreply x\r\n", MCTEXT_R_ERROR, &req);

    parse_all("stats\r\n", &req);
    assert_int_equal(req.cmd, MCT_STATS);
    assert_null(req.arg);
    parse_all("stats settings\r\n", &req);
    assert_int_equal(req.arglen, 8);
    assert_memory_equal(req.arg, "settings", 8);

    parse_all("version\r\n", &req);
    assert_int_equal(req.cmd, MCT_VERSION);
    parse_all("version x\r\n", &req);
    parse_all("quit\r\n", &req);
    assert_int_equal(req.cmd, MCT_QUIT);
    parse_all("mn\r\n", &req);
    assert_int_equal(req.cmd, MCT_MN);

    parse_all("verbosity 1\r\n", &req);
    assert_int_equal(req.cmd, MCT_VERBOSITY);
    assert_int_equal(req.level, 1);
    parse_all("verbosity 1 noreply\r\n", &req);
    assert_true(req.noreply);
    parse_err("verbosity\r\n", MCTEXT_R_ERROR, &req);
    parse_err("verbosity x\r\n", MCTEXT_E_FORMAT, &req);
}

static void test_unknown(void **state)
{
    struct mctext_req req;
    (void)state;

    assert_int_equal(parse_err("foo\r\n", MCTEXT_R_ERROR, &req), 5);
    parse_err("Get a\r\n", MCTEXT_R_ERROR, &req); /* case-sensitive */
    /* HTTP-looking lines: no reply, the connection closes */
    parse_err("GET a\r\n", "", &req);
    assert_true(req.close);
    parse_err("GET / HTTP/1.0\r\n", "", &req);
    parse_err("get / HTTP/1.1\r\n", "", &req);
    parse_err("POST /x HTTP/1.1\r\n", "", &req);
    parse_err("PUT /x HTTP/1.1\r\n", "", &req);
    parse_err("DELETE /x\r\n", "", &req);
    parse_err("HEAD / HTTP/1.0\r\n", "", &req);
    parse_err("Host: localhost\r\n", "", &req);
    parse_err("host: localhost\r\n", "", &req);
    parse_err("\r\n", MCTEXT_R_ERROR, &req);
    parse_err("\n", MCTEXT_R_ERROR, &req);
    parse_err("   \r\n", MCTEXT_R_ERROR, &req);
    parse_err("tfoo 1 2\r\n", MCTEXT_R_ERROR, &req);
    parse_err("get\ta\r\n", MCTEXT_R_ERROR, &req); /* tab: not a separator */
    assert_false(req.close);
    /* Leading spaces are skipped, as memcached. */
    parse_all("  get a\r\n", &req);
    assert_int_equal(req.cmd, MCT_GET);
}

/* ---- partial input and line limits -------------------------------------- */

/* Every proper prefix of s is "need more" with a need beyond the prefix;
 * the whole is one request. */
static void check_splits(const char *s)
{
    size_t len = strlen(s), i;
    struct mctext_req req;

    for (i = 0; i < len; i++) {
        ssize_t n = mctext_parse(s, i, &lim, &req);
        if (n != MCTEXT_AGAIN)
            fail_msg("\"%s\" cut at %zu: %zd", s, i, n);
        assert_true(req.need > i);
        assert_true(req.need <= len);
    }
    assert_int_equal(mctext_parse(s, len, &lim, &req), (ssize_t)len);
}

static void test_partial(void **state)
{
    (void)state;
    check_splits("get foo bar\r\n");
    check_splits("set foo 1 2 5\r\nhello\r\n");
    check_splits("cas foo 1 2 5 99 noreply\r\nhe\r\no\r\n");
    check_splits("ms foo 5 T10 F3 c\r\nhello\r\n");
    check_splits("mg foo v k Oxx\r\n");
    check_splits("tset foo 1 2 3 1:2,3:4\r\nabc\r\n");
    check_splits("tpush 1 2 0 0 3\r\nabc\r\n");
    check_splits("delete foo\n");
}

static void test_pipeline(void **state)
{
    const char *s = "set a 0 0 1\r\nx\r\nget a b\r\nincr a 1\r\n"
                    "mg a v\r\nquit\r\n";
    const enum mctext_cmd want[] = {MCT_SET, MCT_GET, MCT_INCR, MCT_MG,
                                    MCT_QUIT};
    struct mctext_req req;
    size_t off = 0, i;
    (void)state;

    for (i = 0; i < 5; i++) {
        ssize_t n = mctext_parse(s + off, strlen(s) - off, &lim, &req);
        assert_true(n > 0);
        assert_int_equal(req.cmd, want[i]);
        off += (size_t)n;
    }
    assert_int_equal(off, strlen(s));
}

static void test_line_limits(void **state)
{
    static char buf[MCTEXT_LONG_LINE_MAX + 64];
    struct mctext_req req;
    size_t i;
    (void)state;

    /* No newline within 2048 bytes: error, and the stream is lost. */
    memset(buf, 'x', MCTEXT_LINE_MAX);
    assert_int_equal(mctext_parse(buf, MCTEXT_LINE_MAX - 1, &lim, &req),
                     MCTEXT_AGAIN);
    assert_int_equal(req.need, MCTEXT_LINE_MAX);
    assert_int_equal(mctext_parse(buf, MCTEXT_LINE_MAX, &lim, &req),
                     MCTEXT_ERROR);
    assert_string_equal(req.err, MCTEXT_E_LINE);
    assert_true(req.close);
    /* A whole line over the limit is refused the same way, whatever the
     * packets were. */
    memset(buf, 'x', 2100);
    memcpy(buf, "set ", 4);
    memcpy(buf + 2100, " 0 0 1\r\nx\r\n", 12);
    assert_int_equal(mctext_parse(buf, strlen(buf), &lim, &req), MCTEXT_ERROR);
    assert_true(req.close);
    /* Exactly 2048 bytes with the newline: fine (an unknown command). */
    memset(buf, 'x', MCTEXT_LINE_MAX);
    memcpy(buf + MCTEXT_LINE_MAX - 2, "\r\n", 2);
    assert_int_equal(mctext_parse(buf, MCTEXT_LINE_MAX, &lim, &req),
                     MCTEXT_ERROR);
    assert_string_equal(req.err, MCTEXT_R_ERROR);
    assert_false(req.close);

    /* Key lists may be long: a get of 1000 keys of 100 bytes. */
    memcpy(buf, "get", 3);
    for (i = 0; i < 1000; i++) {
        buf[3 + i * 101] = ' ';
        memset(buf + 4 + i * 101, 'a' + i % 26, 100);
    }
    memcpy(buf + 3 + 1000 * 101, "\r\n", 2);
    assert_int_equal(mctext_parse(buf, 3 + 1000 * 101, &lim, &req),
                     MCTEXT_AGAIN);
    assert_int_equal(mctext_parse(buf, 5 + 1000 * 101, &lim, &req),
                     5 + 1000 * 101);
    assert_int_equal(req.nlist, 1000);
    /* ... up to the long limit. */
    memset(buf + 4, 'k', MCTEXT_LONG_LINE_MAX);
    assert_int_equal(mctext_parse(buf, MCTEXT_LONG_LINE_MAX - 1, &lim, &req),
                     MCTEXT_AGAIN);
    assert_int_equal(mctext_parse(buf, MCTEXT_LONG_LINE_MAX, &lim, &req),
                     MCTEXT_ERROR);
    assert_true(req.close);
    assert_string_equal(req.err, MCTEXT_E_LINE);
}

/* ---- meta commands ----------------------------------------------------------
 */

static void test_meta_get(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("mg foo\r\n", &req);
    assert_int_equal(req.cmd, MCT_MG);
    assert_true(key_is(&req, "foo"));
    assert_int_equal(req.meta.flags, 0);
    assert_int_equal(req.meta.nret, 0);

    parse_all("mg foo s v f t c k Oxy q u T30 Pp L\r\n", &req);
    assert_true(req.meta.flags & MCTEXT_MF('v'));
    assert_true(req.meta.flags & MCTEXT_MF('q'));
    assert_true(req.meta.flags & MCTEXT_MF('u'));
    assert_true(req.meta.flags & MCTEXT_MF('T'));
    assert_false(req.meta.flags & MCTEXT_MF('P'));
    assert_int_equal(req.meta.ttl, 30);
    assert_int_equal(req.meta.nret, 6);
    assert_memory_equal(req.meta.ret, "sftckO", 6);
    assert_int_equal(req.meta.olen, 2);
    assert_memory_equal(req.meta.opaque, "xy", 2);

    parse_err("mg\r\n", MCTEXT_R_ERROR, &req);
    parse_err("mg foo z\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("mg foo v v\r\n", MCTEXT_E_DUP_FLAG, &req);
    parse_err("mg foo 1\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("mg foo T\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("mg foo Tx\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("mg foo Oxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n", MCTEXT_E_OPAQUE,
              &req);
    /* Unsupported flags: invalid, never ignored. */
    parse_err("mg foo E5\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("ms foo 2 E5\r\nhi\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("md foo x\r\n", MCTEXT_E_INVALID_DUP, &req);
    /* N, R (R after T tests the touched TTL), ms I, md I T */
    parse_all("mg foo N30 R-2 v\r\n", &req);
    assert_true(req.meta.flags & MCTEXT_MF('N'));
    assert_int_equal(req.meta.vivify, 30);
    assert_int_equal(req.meta.recache, -2);
    assert_false(req.meta.recache_after_touch);
    parse_all("mg foo T5 R30\r\n", &req);
    assert_true(req.meta.recache_after_touch);
    parse_all("mg foo R30 T5\r\n", &req);
    assert_false(req.meta.recache_after_touch);
    parse_err("mg foo Rx\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("mg foo N\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_all("ms foo 2 I C5\r\nhi\r\n", &req);
    assert_true(req.meta.flags & MCTEXT_MF('I'));
    parse_all("md foo I T30 q\r\n", &req);
    assert_true(req.meta.flags & MCTEXT_MF('I'));
    assert_int_equal(req.meta.ttl, 30);
    parse_err("md foo I I\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("md foo Tx\r\n", MCTEXT_E_INVALID_DUP, &req);
    /* O may be empty. */
    parse_all("mg foo O\r\n", &req);
    assert_int_equal(req.meta.olen, 0);
    assert_true(req.meta.flags & MCTEXT_MF('O'));
    /* Meta errors never depend on noreply. */
    assert_false(req.noreply);
}

static void test_meta_base64(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("mg bWI= b k v\r\n", &req);
    assert_true(key_is(&req, "mb"));
    assert_int_equal(req.meta.rawklen, 4);
    assert_memory_equal(req.meta.rawkey, "bWI=", 4);
    parse_all("mg AAEC/w== b\r\n", &req);
    assert_int_equal(req.klen, 4);
    assert_memory_equal(req.key, "\x00\x01\x02\xff", 4);
    parse_all("mg Zm9v b\r\n", &req);
    assert_true(key_is(&req, "foo"));
    parse_err("mg m b\r\n", MCTEXT_E_KEY_DECODE, &req);
    parse_err("mg bW=I b\r\n", MCTEXT_E_KEY_DECODE, &req);
    parse_err("mg b*I= b\r\n", MCTEXT_E_KEY_DECODE, &req);
    parse_err("ms m 2 b\r\nhi\r\n", MCTEXT_E_KEY_DECODE, &req);
    parse_err("me m b\r\n", MCTEXT_E_FORMAT, &req);
}

static void test_meta_set(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("ms foo 2\r\nhi\r\n", &req);
    assert_int_equal(req.cmd, MCT_MS);
    assert_int_equal(req.vlen, 2);
    assert_memory_equal(req.value, "hi", 2);
    assert_int_equal(req.meta.mode, 0);

    parse_all("ms foo 2 c k Oabc F5 T100 C77 MA q\r\nhi\r\n", &req);
    assert_int_equal(req.meta.cflags, 5);
    assert_int_equal(req.meta.ttl, 100);
    assert_int_equal(req.meta.cas, 77);
    assert_int_equal(req.meta.mode, 'A');
    assert_memory_equal(req.meta.ret, "ckO", 3);

    parse_err("ms\r\n", MCTEXT_R_ERROR, &req);
    parse_err("ms foo\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("ms foo x\r\n", MCTEXT_E_FORMAT, &req);
    assert_int_equal(parse_err("ms foo -1\r\n", MCTEXT_E_FORMAT, &req), 11);
    /* Flag errors discard the data block, as memcached. */
    assert_int_equal(parse_err("ms foo 2 MX\r\nhi\r\n", MCTEXT_E_MS_MODE, &req),
                     17);
    parse_err("ms foo 2 Ms\r\nhi\r\n", MCTEXT_E_MS_MODE, &req);
    parse_err("ms foo 2 M\r\nhi\r\n", MCTEXT_E_M_LEN, &req);
    parse_err("ms foo 2 Mappend\r\nhi\r\n", MCTEXT_E_M_LEN, &req);
    parse_err("ms foo 2 S5\r\nhi\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("ms foo 2 Cx\r\nhi\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("ms foo 2 Tx\r\nhi\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("ms foo 2 Fx\r\nhi\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("ms foo 2 F-1\r\nhi\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("ms foo 2 F4294967296\r\nhi\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("ms foo 2 q q\r\nhi\r\n", MCTEXT_E_DUP_FLAG, &req);
    parse_err("ms foo 2 I I\r\nhi\r\n", MCTEXT_E_DUP_FLAG, &req);
    parse_all("ms foo 2 ME\r\nhi\r\n", &req);
    assert_int_equal(req.meta.mode, 'E');
    parse_err("ms foo 2 MS MR\r\nhi\r\n", MCTEXT_E_DUP_FLAG, &req);
}

static void test_meta_delete_arith(void **state)
{
    struct mctext_req req;
    (void)state;

    parse_all("md foo q C5 k Oa\r\n", &req);
    assert_int_equal(req.cmd, MCT_MD);
    assert_int_equal(req.meta.cas, 5);
    assert_memory_equal(req.meta.ret, "kO", 2);
    parse_err("md\r\n", MCTEXT_R_ERROR, &req);
    parse_err("md foo x\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("md foo C\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("md foo q q\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("md foo E5\r\n", MCTEXT_E_INVALID_DUP, &req);

    parse_all("ma foo\r\n", &req);
    assert_int_equal(req.cmd, MCT_MA);
    assert_int_equal(req.meta.delta, 1);
    assert_int_equal(req.meta.mode, 0);
    parse_all("ma foo N0 J7 D18446744073709551615 MD T9 t c v k Oz q\r\n",
              &req);
    assert_int_equal(req.meta.vivify, 0);
    assert_int_equal(req.meta.initial, 7);
    assert_true(req.meta.delta == UINT64_MAX);
    assert_int_equal(req.meta.mode, 'D');
    assert_memory_equal(req.meta.ret, "tckO", 4);
    parse_all("ma foo M+\r\n", &req);
    assert_int_equal(req.meta.mode, 'I');
    parse_all("ma foo M-\r\n", &req);
    assert_int_equal(req.meta.mode, 'D');
    parse_err("ma\r\n", MCTEXT_R_ERROR, &req);
    parse_err("ma foo Dx\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("ma foo D\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("ma foo D18446744073709551616\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("ma foo N\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("ma foo MX\r\n", MCTEXT_E_MA_MODE, &req);
    parse_err("ma foo Md\r\n", MCTEXT_E_MA_MODE, &req);
    parse_all("ma foo C5\r\n", &req); /* compare-and-swap */
    assert_int_equal(req.meta.cas, 5);
    parse_err("ma foo Cx\r\n", MCTEXT_E_INVALID_DUP, &req);

    parse_all("me foo\r\n", &req);
    assert_int_equal(req.cmd, MCT_ME);
    parse_err("me\r\n", MCTEXT_E_FORMAT, &req);
}

/*
 * memcached 1.6.18 parses one set of meta flags for mg, ms, md and ma and
 * lets each command ignore those that mean nothing to it: the flags of
 * one command are accepted by the others (the Rust client's "ms k 4 MA
 * N60" and "mg k v f c C2"), E, x and S stay refused, and the errors come
 * in memcached's order (tests/meta_compat.py compares the replies with a
 * running memcached).
 */
static void test_meta_flags_shared(void **state)
{
    static const char *const cmds[] = {"mg", "md", "ma"};
    struct mctext_req req;
    char buf[256];
    size_t i;
    (void)state;

    parse_all("ms foo 4 MA N60\r\nabcd\r\n", &req);
    assert_int_equal(req.meta.mode, 'A');
    assert_int_equal(req.meta.vivify, 60);
    parse_all("mg foo v f c C2\r\n", &req);
    assert_memory_equal(req.meta.ret, "fc", 2);
    assert_int_equal(req.meta.nret, 2);
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        snprintf(buf, sizeof(buf),
                 "%s Zm9v b N1 T2 R3 l O4 P L k s t c F5 C6 M%c J7 D8 I\r\n",
                 cmds[i], i == 2 ? 'D' : 'S');
        parse_all(buf, &req);
        assert_true(key_is(&req, "foo"));
        assert_int_equal(req.meta.mode, i == 2 ? 'D' : 0);
        assert_int_equal(req.meta.cas, 6);
        assert_int_equal(req.meta.delta, 8);
        snprintf(buf, sizeof(buf), "%s foo f v h u q\r\n", cmds[i]);
        parse_all(buf, &req);
        snprintf(buf, sizeof(buf), "%s foo E5\r\n", cmds[i]);
        parse_err(buf, i == 0 ? MCTEXT_E_INVALID_FLAG : MCTEXT_E_INVALID_DUP,
                  &req);
        snprintf(buf, sizeof(buf), "%s foo P P\r\n", cmds[i]);
        parse_err(buf, i == 0 ? MCTEXT_E_DUP_FLAG : MCTEXT_E_INVALID_DUP, &req);
    }
    /* ma's mode S is no ma mode; mg and md ignore M's letter */
    parse_err("ma foo MS\r\n", MCTEXT_E_MA_MODE, &req);
    parse_all("mg foo MX\r\n", &req);
    assert_int_equal(req.meta.mode, 0);
    parse_err("ma foo M\r\n", MCTEXT_E_INVALID_DUP, &req);
    parse_err("mg foo M\r\n", MCTEXT_E_M_LEN, &req);
    parse_all("ms foo 2 v s t h l u N5 R5 J1 D1\r\nhi\r\n", &req);
    assert_int_equal(req.meta.nret, 0);
    /* the order of errors */
    parse_err("mg foo Tx Z\r\n", MCTEXT_E_INVALID_FLAG, &req);
    parse_err("mg foo Tx Jx\r\n", MCTEXT_E_INITIAL, &req);
    parse_err("mg foo Jx Tx\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("mg foo Dx\r\n", MCTEXT_E_DELTA_VALUE, &req);
    parse_err("mg foo Tx Fx\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("mg foo Fx\r\n", MCTEXT_E_FORMAT, &req);
    parse_err("mg foo Tx b\r\n", MCTEXT_E_KEY_DECODE, &req);
    parse_err("mg !!!! b Tx\r\n", MCTEXT_E_BAD_TOKEN, &req);
    parse_err("ms foo 2 MX Ooooooooooooooooooooooooooooooooooooooo\r\nhi\r\n",
              MCTEXT_E_MS_MODE, &req);
    /* me looks at its first flag only */
    parse_all("me foo x y\r\n", &req);
    parse_all("me Zm9v b\r\n", &req);
    assert_true(key_is(&req, "foo"));
    parse_all("me foo x b\r\n", &req);
    assert_true(key_is(&req, "foo"));
}

static void test_meta_too_many_tokens(void **state)
{
    struct mctext_req req;
    char buf[256];
    int i, n = 0;
    (void)state;

    n = snprintf(buf, sizeof(buf), "mg foo");
    for (i = 0; i < MCTEXT_TOKENS_MAX; i++)
        n += snprintf(buf + n, sizeof(buf) - (size_t)n, " P%d", i);
    snprintf(buf + n, sizeof(buf) - (size_t)n, "\r\n");
    parse_err(buf, MCTEXT_E_FORMAT, &req);
}

/* ---- tag extensions ----------------------------------------------------- */

static void test_tags(void **state)
{
    struct mctext_req req;
    struct mctext_iter it;
    int32_t tk, tv;
    (void)state;

    parse_all("tset foo 1 2 3 42:-7,-2147483648:2147483647 noreply\r\n"
              "abc\r\n",
              &req);
    assert_int_equal(req.cmd, MCT_TSET);
    assert_true(key_is(&req, "foo"));
    assert_int_equal(req.flags, 1);
    assert_int_equal(req.exptime, 2);
    assert_int_equal(req.nlist, 2);
    assert_true(req.noreply);
    mctext_iter_init(&it, &req);
    assert_true(mctext_next_tag(&it, &tk, &tv));
    assert_int_equal(tk, 42);
    assert_int_equal(tv, -7);
    assert_true(mctext_next_tag(&it, &tk, &tv));
    assert_int_equal(tk, INT32_MIN);
    assert_int_equal(tv, INT32_MAX);
    assert_false(mctext_next_tag(&it, &tk, &tv));

    parse_err("tset foo 1 2 3\r\nabc\r\n", MCTEXT_R_ERROR, &req);
#define TOK(t) "CLIENT_ERROR invalid token '" t "'\r\n"
    parse_err("tset foo 1 2 3 42\r\nabc\r\n", TOK("42"), &req);
    parse_err("tset foo 1 2 3 42:\r\nabc\r\n", TOK("42:"), &req);
    parse_err("tset foo 1 2 3 1:2,\r\nabc\r\n", TOK(","), &req);
    parse_err("tset foo 1 2 3 1:2,,3:4\r\nabc\r\n", TOK(""), &req);
    parse_err("tset foo 1 2 3 1:2:3\r\nabc\r\n", TOK("1:2:3"), &req);
    parse_err("tset foo 1 2 3 1:2,x:3\r\nabc\r\n", TOK("x:3"), &req);
    assert_int_equal(parse_err("tset foo 1 2 3 2147483648:1\r\nabc\r\n",
                               TOK("2147483648:1"), &req),
                     34);
    /* a space in the tag list: the token after it is named, the data
     * block discarded (issue 14: the second tag was silently dropped) */
    assert_int_equal(
        parse_err("tset x 0 0 5 1:10 2:20\r\nhello\r\n", TOK("2:20"), &req),
        31);
    parse_err("tset x 0 0 5 1:10 noreply 2:20\r\nhello\r\n", TOK("2:20"),
              &req);
    parse_err("tset x y 0 5 1:10\r\nhello\r\n", TOK("y"), &req);
    parse_err("tset x 0 z 5 1:10\r\nhello\r\n", TOK("z"), &req);
    parse_err("tset x 0 0 w 1:10\r\nhello\r\n", TOK("w"), &req);

    parse_all("tget 42 1 -2 3\r\n", &req);
    assert_int_equal(req.cmd, MCT_TGET);
    assert_int_equal(req.tkey, 42);
    assert_int_equal(req.nlist, 3);
    mctext_iter_init(&it, &req);
    assert_true(mctext_next_tval(&it, &tv));
    assert_int_equal(tv, 1);
    assert_true(mctext_next_tval(&it, &tv));
    assert_int_equal(tv, -2);
    assert_true(mctext_next_tval(&it, &tv));
    assert_false(mctext_next_tval(&it, &tv));
    parse_all("tgets 1 2\r\n", &req);
    assert_int_equal(req.cmd, MCT_TGETS);
    parse_err("tget 42\r\n", MCTEXT_R_ERROR, &req);
    parse_err("tget x 1\r\n", TOK("x"), &req);
    parse_err("tget 1 2 x\r\n", TOK("x"), &req);
    parse_err("tgets 1 2,3\r\n", TOK("2,3"), &req);
    parse_err("tget 1 2 noreply\r\n", TOK("noreply"), &req);

    parse_all("tdel 42 1 2 noreply\r\n", &req);
    assert_int_equal(req.cmd, MCT_TDEL);
    assert_true(req.noreply);
    assert_int_equal(req.nlist, 2);
    parse_all("tdel 42 1\r\n", &req);
    assert_false(req.noreply);
    parse_err("tdel 42 noreply\r\n", TOK("noreply"), &req);
    parse_err("tdel 42 1 x noreply\r\n", TOK("x"), &req);
    parse_err("tdel 42 1:2\r\n", TOK("1:2"), &req);
    assert_false(req.stale);
    /* the stale mode: I [T<ttl>] after the tvals, either order */
    parse_all("tdel 42 1 2 I T-5 noreply\r\n", &req);
    assert_true(req.stale && req.stale_ttl && req.noreply);
    assert_int_equal(req.exptime, -5);
    assert_int_equal(req.nlist, 2);
    parse_all("tdel 42 3 T60 I\r\n", &req);
    assert_true(req.stale && req.stale_ttl && !req.noreply);
    assert_int_equal(req.exptime, 60);
    assert_int_equal(req.nlist, 1);
    parse_all("tdel 42 3 I\r\n", &req);
    assert_true(req.stale && !req.stale_ttl);
    parse_all("tdel 42 3\r\n", &req);
    assert_false(req.stale || req.stale_ttl);
    parse_err("tdel 42 3 T60\r\n", TOK("T60"), &req);
    parse_err("tdel 42 3 I I\r\n", TOK("I"), &req);
    parse_err("tdel 42 3 I T1 T2\r\n", TOK("T1"), &req);
    parse_err("tdel 42 3 I Tx\r\n", TOK("Tx"), &req);
    parse_err("tdel 42 3 Ix\r\n", TOK("Ix"), &req);
    parse_err("tdel 42 I\r\n", TOK("I"), &req);
    parse_err("tdel 42 I 3\r\n", TOK("I"), &req);
    parse_err("tget 42 3 I\r\n", TOK("I"), &req);

    parse_all("tpush 5 -6 7 8 3\r\none\r\n", &req);
    assert_int_equal(req.cmd, MCT_TPUSH);
    assert_int_equal(req.tkey, 5);
    assert_int_equal(req.tval, -6);
    assert_int_equal(req.flags, 7);
    assert_int_equal(req.exptime, 8);
    assert_memory_equal(req.value, "one", 3);
    parse_err("tpush 5 6 7 8\r\n", MCTEXT_R_ERROR, &req);
    parse_err("tpush 5 x 7 8 3\r\none\r\n", TOK("x"), &req);
    assert_int_equal(parse_err("tpush 5 6 7 8 3 extra\r\none\r\n",
                               TOK("extra"), &req),
                     28);
    parse_err("tpush 5 6 7 8 3 noreply x\r\none\r\n", TOK("x"), &req);

    parse_all("tpop 5 6\r\n", &req);
    assert_int_equal(req.cmd, MCT_TPOP);
    parse_err("tpop 5\r\n", MCTEXT_R_ERROR, &req);
    parse_err("tpop 5 6 7\r\n", TOK("7"), &req);
    parse_err("tpop 5 y\r\n", TOK("y"), &req);
    /* a long or binary token is cut and masked */
    parse_err("tpop 5 \x01" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
              TOK("?aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa..."),
              &req);
#undef TOK
}

/* ---- composing ------------------------------------------------------------
 */

static void test_compose(void **state)
{
    char out[MCTEXT_META_LINE_MAX];
    struct mctext_req req;
    struct mctext_meta_vals v = {123, -1, 5, 2};
    size_t n;
    (void)state;

    n = mctext_u64(out, 0);
    assert_memory_equal(out, "0", n);
    n = mctext_u64(out, UINT64_MAX);
    assert_int_equal(n, 20);
    assert_memory_equal(out, "18446744073709551615", 20);
    n = mctext_i64(out, INT64_MIN);
    assert_memory_equal(out, "-9223372036854775808", n);
    {
        /* every short path (one digit, two) and each length's edges,
         * against snprintf */
        char want[24];
        uint64_t x, p10;

        for (x = 0; x < 1100; x++) {
            n = mctext_u64(out, x);
            assert_int_equal(n, (size_t)snprintf(want, sizeof(want),
                                                 "%" PRIu64, x));
            assert_memory_equal(out, want, n);
        }
        for (p10 = 10; p10 <= UINT64_MAX / 10; p10 *= 10)
            for (x = p10 - 1; x <= p10 + 1; x++) {
                n = mctext_u64(out, x);
                assert_int_equal(n, (size_t)snprintf(want, sizeof(want),
                                                     "%" PRIu64, x));
                assert_memory_equal(out, want, n);
            }
    }

    n = mctext_value_line(out, "foo", 3, 42, 3, false, 0);
    assert_int_equal(n, strlen("VALUE foo 42 3\r\n"));
    assert_memory_equal(out, "VALUE foo 42 3\r\n", n);
    n = mctext_value_line(out, "foo", 3, 4294967295u, 0, true, UINT64_MAX);
    assert_memory_equal(out, "VALUE foo 4294967295 0 18446744073709551615\r\n",
                        n);
    /* the line writes its short numbers itself: each side of the one-
     * and two-digit cases, for flags and length alike */
    {
        static const uint32_t nums[] = {0, 9, 10, 11, 99, 100, 101, 1000};
        char want[96];
        size_t i, j;

        for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
            for (j = 0; j < sizeof(nums) / sizeof(nums[0]); j++) {
                int wn = snprintf(want, sizeof(want),
                                  "VALUE k %" PRIu32 " %" PRIu32 "\r\n",
                                  nums[i], nums[j]);

                n = mctext_value_line(out, "k", 1, nums[i], nums[j], false,
                                      0);
                assert_int_equal(n, (size_t)wn);
                assert_memory_equal(out, want, n);
            }
        /* every key length the line copies its own way (up to 16 bytes)
         * and a few past it */
        for (i = 1; i <= 24; i++) {
            const char *key = "abcdefghijklmnopqrstuvwxyz";
            int wn = snprintf(want, sizeof(want), "VALUE %.*s 0 7\r\n",
                              (int)i, key);

            memset(out, '#', 64);
            n = mctext_value_line(out, key, (uint32_t)i, 0, 7, false, 0);
            assert_int_equal(n, (size_t)wn);
            assert_memory_equal(out, want, n);
            assert_int_equal(out[n], '#'); /* nothing written past it */
        }
    }

    parse_all("mg foo s v f t c k Oxy q\r\n", &req);
    n = mctext_meta_line(out, "VA", 2, &req, &v);
    assert_memory_equal(out, "VA 2 s2 f5 t-1 c123 kfoo Oxy\r\n", n);
    n = mctext_meta_line(out, "EN", -1, &req, NULL);
    assert_memory_equal(out, "EN kfoo Oxy\r\n", n);
    parse_all("mg bWI= b k v\r\n", &req);
    n = mctext_meta_line(out, "HD", -1, &req, &v);
    assert_memory_equal(out, "HD kbWI= b\r\n", n);
    parse_all("mn\r\n", &req);
    memset(&req.meta, 0, sizeof(req.meta));
    n = mctext_meta_line(out, "HD", -1, &req, NULL);
    assert_memory_equal(out, "HD\r\n", n);
}

/* The longest meta reply fits MCTEXT_META_LINE_MAX. */
static void test_compose_bounds(void **state)
{
    char line[1024], out[MCTEXT_META_LINE_MAX + 1];
    char key[400];
    struct mctext_req req;
    struct mctext_meta_vals v = {UINT64_MAX, INT64_MIN, UINT32_MAX, UINT32_MAX};
    size_t n;
    (void)state;

    memset(key, 'A', 334); /* 250 bytes: 83 quads and "AA==" */
    key[334] = '=';
    key[335] = '=';
    key[336] = '\0';
    snprintf(line, sizeof(line),
             "mg %s b s v f t c k O12345678901234567890123456789012\r\n", key);
    parse_all(line, &req);
    assert_int_equal(req.klen, 250);
    out[MCTEXT_META_LINE_MAX] = 'Z';
    n = mctext_meta_line(out, "VA", UINT32_MAX, &req, &v);
    assert_true(n <= MCTEXT_META_LINE_MAX);
    assert_int_equal(out[MCTEXT_META_LINE_MAX], 'Z');
    /* A 337-character key cannot decode to 250 bytes or fewer. */
    key[334] = 'A';
    key[335] = 'A';
    key[336] = 'A';
    key[337] = 'A';
    key[338] = 'A';
    key[339] = 'A';
    key[340] = '\0';
    snprintf(line, sizeof(line), "mg %s b\r\n", key);
    parse_err(line, MCTEXT_E_KEY_DECODE, &req);
}

static void test_cmd_names(void **state)
{
    (void)state;
    assert_string_equal(mctext_cmd_name(MCT_GET), "get");
    assert_string_equal(mctext_cmd_name(MCT_FLUSH_ALL), "flush_all");
    assert_string_equal(mctext_cmd_name(MCT_TPOP), "tpop");
    assert_string_equal(mctext_cmd_name(MCT_NONE), "?");
}

/* Corners of the parser no other test reaches: base64 keys with '+' and
 * one decoding past the key limit, bad fields of tpush and tset, a bad J,
 * arguments where a command takes none, a line with more tokens than any
 * fixed-form command has. */
static void test_parse_corners(void **state)
{
    struct mctext_req req;
    char buf[512];
    int n, i;
    (void)state;

#define TOK(t) "CLIENT_ERROR invalid token '" t "'\r\n"
    parse_all("mg ab+/ b\r\n", &req);
    assert_int_equal(req.klen, 3);
    assert_memory_equal(req.key, "i\xbf\xbf", 3);
    /* 336 characters: within the length bound, but 252 bytes decoded */
    n = snprintf(buf, sizeof(buf), "mg ");
    memset(buf + n, 'A', 336);
    snprintf(buf + n + 336, sizeof(buf) - (size_t)n - 336, " b\r\n");
    parse_err(buf, MCTEXT_E_KEY_DECODE, &req);

    /* tpush <tkey> <tval> <flags> <exptime> <bytes>: each field named */
    parse_err("tpush 1 2 0 0 x\r\n", TOK("x"), &req);
    assert_int_equal(parse_err("tpush x 2 0 0 1\r\na\r\n", TOK("x"), &req),
                     20); /* the data block goes too */
    parse_err("tpush 1 2 y 0 1\r\na\r\n", TOK("y"), &req);
    parse_err("tpush 1 2 0 z 1\r\na\r\n", TOK("z"), &req);
    parse_all("tpush 1 2 3 4 1 noreply\r\na\r\n", &req);
    assert_int_equal(req.cmd, MCT_TPUSH);
    assert_true(req.noreply);
    assert_int_equal(req.flags, 3);
    assert_int_equal(req.exptime, 4);
    /* tset with a key that is not one (a control character) */
    parse_err("tset a\x01z 0 0 1 1:1\r\na\r\n", TOK("a?z"), &req); /* shown escaped */
    /* tdel's noreply with spaces after it */
    parse_all("tdel 42 1 2 noreply   \r\n", &req);
    assert_int_equal(req.cmd, MCT_TDEL);
    assert_true(req.noreply);
    assert_int_equal(req.nlist, 2);
    parse_err("tpop 1 2 3\r\n", TOK("3"), &req);
    /* memcached words a bad ma flag value so, whichever flag it is */
    parse_err("ma foo Jx\r\n", MCTEXT_E_INVALID_DUP, &req);

    parse_err("shutdown graceful now\r\n", MCTEXT_R_ERROR, &req);
    parse_err("dump now\r\n", MCTEXT_R_ERROR, &req);

    /* more tokens than a fixed-form command has: ERROR, the line skipped */
    static const char *const cmds[] = {"set", "tpush", "flush_all"};
    for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
        n = snprintf(buf, sizeof(buf), "%s", cmds[c]);
        for (i = 0; i < MCTEXT_TOKENS_MAX; i++)
            n += snprintf(buf + n, sizeof(buf) - (size_t)n, " 1");
        snprintf(buf + n, sizeof(buf) - (size_t)n, "\r\n");
        assert_int_equal(parse_err(buf, MCTEXT_R_ERROR, &req), strlen(buf));
    }
#undef TOK
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storage),
        cmocka_unit_test(test_storage_errors),
        cmocka_unit_test(test_bad_data_chunk),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_retrieval),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_delete),
        cmocka_unit_test(test_incr_touch),
        cmocka_unit_test(test_admin),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_partial),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_line_limits),
        cmocka_unit_test(test_meta_get),
        cmocka_unit_test(test_meta_base64),
        cmocka_unit_test(test_meta_set),
        cmocka_unit_test(test_meta_delete_arith),
        cmocka_unit_test(test_meta_flags_shared),
        cmocka_unit_test(test_meta_too_many_tokens),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_compose),
        cmocka_unit_test(test_compose_bounds),
        cmocka_unit_test(test_cmd_names),
        cmocka_unit_test(test_parse_corners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
