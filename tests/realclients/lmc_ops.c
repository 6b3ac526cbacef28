/* tests/realclients/lmc_ops.c - Debian's libmemcached (text protocol)
 * against a running mdcached: every operation a memcached client uses,
 * every result asserted.  Run by tests/rc_libmemcached.sh, which starts the
 * daemon:  lmc_ops HOST:PORT
 * Prints "ok: ..." / "FAIL: ..." per check; exits 1 on any failure. */
#include <libmemcached/memcached.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fails, oks;
static memcached_st *M;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (cond) {                                                           \
            oks++;                                                            \
            printf("ok: ");                                                   \
        } else {                                                              \
            fails++;                                                          \
            printf("FAIL (line %d): ", __LINE__);                             \
        }                                                                     \
        printf(__VA_ARGS__);                                                  \
        printf("\n");                                                         \
    } while (0)

#define RC(expr, want, what)                                                  \
    do {                                                                      \
        memcached_return_t rc_ = (expr);                                      \
        CHECK(rc_ == (want), "%s -> %s (want %s)%s%s", what,                  \
              memcached_strerror(M, rc_), memcached_strerror(M, want),        \
              rc_ == (want) ? "" : ": ",                                      \
              rc_ == (want) ? "" : memcached_last_error_message(M));          \
    } while (0)

static memcached_return_t set(const char *k, const char *v, time_t exp,
                              uint32_t flags)
{
    return memcached_set(M, k, strlen(k), v, strlen(v), exp, flags);
}

/* get K and compare with WANT (NULL: expect a miss) */
static void expect_get(const char *k, const char *want, uint32_t want_flags)
{
    size_t len = 0;
    uint32_t flags = 0;
    memcached_return_t rc;
    char *v = memcached_get(M, k, strlen(k), &len, &flags, &rc);
    if (want == NULL) {
        CHECK(v == NULL && rc == MEMCACHED_NOTFOUND, "get %s -> miss (%s)", k,
              memcached_strerror(M, rc));
    } else {
        CHECK(v != NULL && rc == MEMCACHED_SUCCESS && len == strlen(want) &&
                  memcmp(v, want, len) == 0 && flags == want_flags,
              "get %s -> [%.*s] flags %" PRIu32 " (want [%s] flags %" PRIu32
              ", %s)",
              k, v ? (int)len : 6, v ? v : "(null)", flags, want,
              want_flags, memcached_strerror(M, rc));
    }
    free(v);
}

/* gets K: its CAS unique (0 when missing) */
static uint64_t gets_cas(const char *k)
{
    const char *keys[1] = {k};
    size_t lens[1] = {strlen(k)};
    uint64_t cas = 0;
    memcached_return_t rc;
    if (memcached_mget(M, keys, lens, 1) != MEMCACHED_SUCCESS)
        return 0;
    memcached_result_st *r;
    while ((r = memcached_fetch_result(M, NULL, &rc)) != NULL) {
        cas = memcached_result_cas(r);
        memcached_result_free(r);
    }
    return cas;
}

static void test_storage(void)
{
    RC(set("rc:a", "alpha", 0, 42), MEMCACHED_SUCCESS, "set rc:a");
    expect_get("rc:a", "alpha", 42);
    RC(set("rc:a", "alpha2", 0, 7), MEMCACHED_SUCCESS, "set rc:a again");
    expect_get("rc:a", "alpha2", 7);
    RC(memcached_add(M, "rc:a", 4, "x", 1, 0, 0), MEMCACHED_NOTSTORED,
       "add existing rc:a");
    RC(memcached_add(M, "rc:b", 4, "beta", 4, 0, 1), MEMCACHED_SUCCESS,
       "add new rc:b");
    expect_get("rc:b", "beta", 1);
    RC(memcached_replace(M, "rc:none", 7, "x", 1, 0, 0), MEMCACHED_NOTSTORED,
       "replace missing rc:none");
    expect_get("rc:none", NULL, 0);
    RC(memcached_replace(M, "rc:b", 4, "BETA", 4, 0, 2), MEMCACHED_SUCCESS,
       "replace rc:b");
    expect_get("rc:b", "BETA", 2);
    RC(memcached_append(M, "rc:b", 4, "-end", 4, 0, 0), MEMCACHED_SUCCESS,
       "append rc:b");
    RC(memcached_prepend(M, "rc:b", 4, "start-", 6, 0, 0), MEMCACHED_SUCCESS,
       "prepend rc:b");
    expect_get("rc:b", "start-BETA-end", 2);
    RC(memcached_append(M, "rc:none", 7, "x", 1, 0, 0), MEMCACHED_NOTSTORED,
       "append missing rc:none");

    /* binary-safe value: CR LF and NUL inside, and a 600 KB value */
    static const char bin[] = "a\r\nEND\r\n\0b";
    RC(memcached_set(M, "rc:bin", 6, bin, sizeof(bin), 0, 0),
       MEMCACHED_SUCCESS, "set rc:bin (CR LF NUL inside)");
    {
        size_t len = 0;
        uint32_t fl;
        memcached_return_t rc;
        char *v = memcached_get(M, "rc:bin", 6, &len, &fl, &rc);
        CHECK(v && len == sizeof(bin) && memcmp(v, bin, len) == 0,
              "get rc:bin byte for byte (%zu bytes)", len);
        free(v);
    }
    size_t big_len = 600 * 1024;
    char *big = malloc(big_len);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    RC(memcached_set(M, "rc:big", 6, big, big_len, 0, 3), MEMCACHED_SUCCESS,
       "set rc:big (600 KiB)");
    {
        size_t len = 0;
        uint32_t fl = 0;
        memcached_return_t rc;
        char *v = memcached_get(M, "rc:big", 6, &len, &fl, &rc);
        CHECK(v && len == big_len && memcmp(v, big, len) == 0 && fl == 3,
              "get rc:big (%zu bytes)", len);
        free(v);
    }
    free(big);
}

static void test_mget(void)
{
    const char *keys[] = {"rc:m1", "rc:m2", "rc:missing", "rc:m3"};
    const char *vals[] = {"one", "two", NULL, "three"};
    size_t lens[4];
    int seen[4] = {0};
    for (int i = 0; i < 4; i++) {
        lens[i] = strlen(keys[i]);
        if (vals[i])
            RC(set(keys[i], vals[i], 0, (uint32_t)i), MEMCACHED_SUCCESS,
               "set for mget");
    }
    RC(memcached_mget(M, keys, lens, 4), MEMCACHED_SUCCESS, "mget 4 keys");
    memcached_result_st *r;
    memcached_return_t rc;
    int n = 0, bad = 0;
    while ((r = memcached_fetch_result(M, NULL, &rc)) != NULL) {
        n++;
        int hit = -1;
        for (int i = 0; i < 4; i++)
            if (memcached_result_key_length(r) == lens[i] &&
                memcmp(memcached_result_key_value(r), keys[i], lens[i]) == 0)
                hit = i;
        if (hit < 0 || vals[hit] == NULL || seen[hit] ||
            memcached_result_length(r) != strlen(vals[hit]) ||
            memcmp(memcached_result_value(r), vals[hit],
                   strlen(vals[hit])) != 0 ||
            memcached_result_flags(r) != (uint32_t)hit)
            bad++;
        else
            seen[hit] = 1;
        memcached_result_free(r);
    }
    CHECK(n == 3 && bad == 0 && seen[0] && seen[1] && seen[3],
          "mget returned the 3 stored keys with values and flags (%d "
          "results, %d wrong)",
          n, bad);
    CHECK(rc == MEMCACHED_END || rc == MEMCACHED_NOTFOUND ||
              rc == MEMCACHED_SUCCESS,
          "mget ends cleanly (%s)", memcached_strerror(M, rc));
    /* the connection is still in sync: a plain get works afterwards */
    expect_get("rc:m2", "two", 1);
}

static void test_cas(void)
{
    RC(set("rc:c", "v1", 0, 0), MEMCACHED_SUCCESS, "set rc:c");
    uint64_t c1 = gets_cas("rc:c");
    CHECK(c1 != 0, "gets rc:c -> cas %" PRIu64, c1);
    RC(memcached_cas(M, "rc:c", 4, "v2", 2, 0, 5, c1), MEMCACHED_SUCCESS,
       "cas rc:c with its unique");
    expect_get("rc:c", "v2", 5);
    uint64_t c2 = gets_cas("rc:c");
    CHECK(c2 != 0 && c2 != c1, "cas unique changed (%" PRIu64 " -> %" PRIu64
                               ")", c1, c2);
    RC(memcached_cas(M, "rc:c", 4, "v3", 2, 0, 0, c1), MEMCACHED_DATA_EXISTS,
       "cas rc:c with the stale unique");
    expect_get("rc:c", "v2", 5);
    RC(memcached_cas(M, "rc:nocas", 8, "v", 1, 0, 0, c2), MEMCACHED_NOTFOUND,
       "cas missing rc:nocas");
    /* a plain set changes the unique too */
    RC(set("rc:c", "v4", 0, 0), MEMCACHED_SUCCESS, "set rc:c");
    RC(memcached_cas(M, "rc:c", 4, "v5", 2, 0, 0, c2), MEMCACHED_DATA_EXISTS,
       "cas after an intervening set");
}

static void test_incr(void)
{
    uint64_t v = 0;
    RC(set("rc:n", "10", 0, 0), MEMCACHED_SUCCESS, "set rc:n 10");
    RC(memcached_increment(M, "rc:n", 4, 5, &v), MEMCACHED_SUCCESS,
       "incr rc:n 5");
    CHECK(v == 15, "incr -> %" PRIu64 " (want 15)", v);
    RC(memcached_decrement(M, "rc:n", 4, 3, &v), MEMCACHED_SUCCESS,
       "decr rc:n 3");
    CHECK(v == 12, "decr -> %" PRIu64 " (want 12)", v);
    RC(memcached_decrement(M, "rc:n", 4, 100, &v), MEMCACHED_SUCCESS,
       "decr rc:n 100");
    CHECK(v == 0, "decr below zero clamps -> %" PRIu64 " (want 0)", v);
    expect_get("rc:n", "0", 0);
    RC(set("rc:n", "18446744073709551615", 0, 0), MEMCACHED_SUCCESS,
       "set rc:n 2^64-1");
    RC(memcached_increment(M, "rc:n", 4, 2, &v), MEMCACHED_SUCCESS,
       "incr rc:n 2");
    CHECK(v == 1, "incr wraps at 2^64 -> %" PRIu64 " (want 1)", v);
    RC(memcached_increment(M, "rc:nonum", 8, 1, &v), MEMCACHED_NOTFOUND,
       "incr missing rc:nonum");
    RC(set("rc:s", "abc", 0, 0), MEMCACHED_SUCCESS, "set rc:s abc");
    RC(memcached_increment(M, "rc:s", 4, 1, &v), MEMCACHED_CLIENT_ERROR,
       "incr non-numeric rc:s");
    expect_get("rc:s", "abc", 0);
}

static void test_delete_touch(void)
{
    RC(set("rc:d", "x", 0, 0), MEMCACHED_SUCCESS, "set rc:d");
    RC(memcached_delete(M, "rc:d", 4, 0), MEMCACHED_SUCCESS, "delete rc:d");
    expect_get("rc:d", NULL, 0);
    RC(memcached_delete(M, "rc:d", 4, 0), MEMCACHED_NOTFOUND,
       "delete rc:d again");

    RC(memcached_exist(M, "rc:a", 4), MEMCACHED_SUCCESS, "exist rc:a");
    RC(memcached_exist(M, "rc:nx", 5), MEMCACHED_NOTFOUND, "exist rc:nx");
    expect_get("rc:nx", NULL, 0);

    RC(set("rc:t", "tt", 0, 0), MEMCACHED_SUCCESS, "set rc:t (no expiry)");
    RC(set("rc:t2", "tt", 1, 0), MEMCACHED_SUCCESS, "set rc:t2 (1 s)");
    RC(memcached_touch(M, "rc:t", 4, 1), MEMCACHED_SUCCESS, "touch rc:t 1 s");
    RC(memcached_touch(M, "rc:t2", 5, 100), MEMCACHED_SUCCESS,
       "touch rc:t2 100 s");
    RC(memcached_touch(M, "rc:tnone", 8, 10), MEMCACHED_NOTFOUND,
       "touch missing rc:tnone");
    /* rc:t expires within ~2 s; rc:t2 must outlive its first 1 s */
    int gone = 0;
    for (int i = 0; i < 40 && !gone; i++) {
        usleep(100 * 1000);
        size_t len;
        uint32_t fl;
        memcached_return_t rc;
        char *v = memcached_get(M, "rc:t", 4, &len, &fl, &rc);
        gone = v == NULL && rc == MEMCACHED_NOTFOUND;
        free(v);
    }
    CHECK(gone, "rc:t expired after touch to 1 s");
    usleep(1100 * 1000);
    expect_get("rc:t2", "tt", 0);
}

static void test_noreply(void)
{
    memcached_behavior_set(M, MEMCACHED_BEHAVIOR_NOREPLY, 1);
    int bad = 0;
    char k[32], v[32];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof(k), "rc:nr%d", i);
        snprintf(v, sizeof(v), "val%d", i);
        if (memcached_set(M, k, strlen(k), v, strlen(v), 0, 0) !=
            MEMCACHED_SUCCESS)
            bad++;
    }
    memcached_return_t drc = memcached_delete(M, "rc:nr0", 6, 0);
    memcached_behavior_set(M, MEMCACHED_BEHAVIOR_NOREPLY, 0);
    CHECK(bad == 0 && drc == MEMCACHED_SUCCESS,
          "100 sets and a delete with noreply sent");
    expect_get("rc:nr0", NULL, 0);
    expect_get("rc:nr1", "val1", 0);
    expect_get("rc:nr99", "val99", 0);
}

static memcached_return_t stat_cb(const memcached_instance_st *inst,
                                  const char *key, size_t klen,
                                  const char *val, size_t vlen, void *ctx)
{
    (void)inst;
    (void)val;
    (void)vlen;
    if (klen == 3 && memcmp(key, "pid", 3) == 0)
        *(int *)ctx = 1;
    return MEMCACHED_SUCCESS;
}

static void test_misc(void)
{
    int have_pid = 0;
    RC(memcached_stat_execute(M, NULL, stat_cb, &have_pid), MEMCACHED_SUCCESS,
       "stats");
    CHECK(have_pid, "stats lists pid");
    RC(memcached_version(M), MEMCACHED_SUCCESS, "version");
    RC(memcached_verbosity(M, 1), MEMCACHED_SUCCESS, "verbosity 1");
}

static void test_flush(void)
{
    RC(set("rc:f", "x", 0, 0), MEMCACHED_SUCCESS, "set rc:f");
    RC(memcached_flush(M, 0), MEMCACHED_SUCCESS, "flush_all");
    expect_get("rc:f", NULL, 0);
    expect_get("rc:a", NULL, 0);
    RC(set("rc:f", "y", 0, 0), MEMCACHED_SUCCESS, "set after flush");
    expect_get("rc:f", "y", 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
        return 2;
    }
    char cfg[300];
    snprintf(cfg, sizeof(cfg), "--SERVER=%s --SUPPORT-CAS --CONNECT-TIMEOUT=2000"
             " --POLL-TIMEOUT=5000", argv[1]);
    M = memcached(cfg, strlen(cfg));
    if (M == NULL) {
        fprintf(stderr, "bad libmemcached config %s\n", cfg);
        return 2;
    }
    test_storage();
    test_mget();
    test_cas();
    test_incr();
    test_delete_touch();
    test_noreply();
    test_misc();
    test_flush();
    memcached_free(M);
    printf("libmemcached: %d passed, %d failed\n", oks, fails);
    return fails ? 1 : 0;
}
