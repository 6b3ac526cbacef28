/* tests/realclients/lmc_binary.c - Debian's libmemcached with
 * MEMCACHED_BEHAVIOR_BINARY_PROTOCOL against a running mdcached: the
 * operations a binary client uses, every result asserted, and with
 * --sasl USER PASS a SASL PLAIN login first (memcached -S deployments).
 * Run by tests/rc_mcbin.sh, which starts the daemon:
 *     lmc_binary HOST:PORT [--sasl USER PASS]
 * Prints "ok: ..." / "FAIL: ..." per check; exits 1 on any failure. */
#include <libmemcached/memcached.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails, oks;
static memcached_st *M;
static int sasl;

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
        CHECK(rc_ == (want), "%s -> %s (want %s)", what,                      \
              memcached_strerror(M, rc_), memcached_strerror(M, want));       \
    } while (0)

static memcached_return_t set(const char *k, const char *v, uint32_t flags)
{
    return memcached_set(M, k, strlen(k), v, strlen(v), 0, flags);
}

static void expect_get(const char *k, const char *want, uint32_t want_flags)
{
    size_t len = 0;
    uint32_t flags = 0;
    memcached_return_t rc;
    char *v = memcached_get(M, k, strlen(k), &len, &flags, &rc);

    if (want == NULL)
        CHECK(v == NULL && rc == MEMCACHED_NOTFOUND, "get %s -> miss (%s)", k,
              memcached_strerror(M, rc));
    else
        CHECK(v != NULL && rc == MEMCACHED_SUCCESS && len == strlen(want) &&
                  memcmp(v, want, len) == 0 && flags == want_flags,
              "get %s -> [%.*s] flags %" PRIu32 " (want [%s] %" PRIu32 ")", k,
              v ? (int)len : 6, v ? v : "(null)", flags, want, want_flags);
    free(v);
}

static void ops(void)
{
    const char *keys[] = {"lb.m1", "lb.m2", "lb.missing", "lb.m3"};
    size_t klens[4];
    uint64_t val = 0;
    int i, found = 0;
    memcached_return_t rc;
    memcached_result_st *res;
    size_t big = 900 * 1024;
    char *bigv = malloc(big + 1);

    RC(set("lb.k", "hello", 17), MEMCACHED_SUCCESS, "set");
    expect_get("lb.k", "hello", 17);
    RC(memcached_add(M, "lb.k", 4, "x", 1, 0, 0), MEMCACHED_DATA_EXISTS,
       "add existing");
    RC(memcached_add(M, "lb.new", 6, "n", 1, 0, 0), MEMCACHED_SUCCESS,
       "add new");
    RC(memcached_replace(M, "lb.none", 7, "x", 1, 0, 0), MEMCACHED_NOTFOUND,
       "replace missing");
    RC(memcached_replace(M, "lb.new", 6, "r", 1, 0, 0), MEMCACHED_SUCCESS,
       "replace");
    RC(memcached_append(M, "lb.k", 4, "!", 1, 0, 0), MEMCACHED_SUCCESS,
       "append");
    RC(memcached_prepend(M, "lb.k", 4, ">", 1, 0, 0), MEMCACHED_SUCCESS,
       "prepend");
    expect_get("lb.k", ">hello!", 17);
    RC(memcached_append(M, "lb.none", 7, "!", 1, 0, 0), MEMCACHED_NOTSTORED,
       "append missing");
    /* gets + cas, and a cas mismatch */
    RC(memcached_mget(M, (const char *const[]){"lb.k"}, (size_t[]){4}, 1),
       MEMCACHED_SUCCESS, "mget for cas");
    res = memcached_fetch_result(M, NULL, &rc);
    CHECK(res != NULL, "fetch cas");
    if (res != NULL) {
        uint64_t cas = memcached_result_cas(res);
        memcached_result_free(res);
        while (memcached_fetch_result(M, NULL, &rc) != NULL)
            ;
        RC(memcached_cas(M, "lb.k", 4, "c1", 2, 0, 0, cas + 1),
           MEMCACHED_DATA_EXISTS, "cas mismatch");
        RC(memcached_cas(M, "lb.k", 4, "c2", 2, 0, 0, cas), MEMCACHED_SUCCESS,
           "cas match");
        expect_get("lb.k", "c2", 0);
    }
    /* counters: a miss creates with the initial value */
    RC(memcached_increment_with_initial(M, "lb.ctr", 6, 5, 100, 0, &val),
       MEMCACHED_SUCCESS, "incr with initial (created)");
    CHECK(val == 100, "incr created at 100: %" PRIu64, val);
    RC(memcached_increment(M, "lb.ctr", 6, 5, &val), MEMCACHED_SUCCESS,
       "incr");
    CHECK(val == 105, "incr -> %" PRIu64, val);
    RC(memcached_decrement(M, "lb.ctr", 6, 200, &val), MEMCACHED_SUCCESS,
       "decr");
    CHECK(val == 0, "decr floors at 0: %" PRIu64, val);
    RC(memcached_increment(M, "lb.nocounter", 12, 1, &val),
       MEMCACHED_NOTFOUND, "incr missing");
    /* multi-get: GETKQ... NOOP on the wire */
    RC(set("lb.m1", "v1", 1), MEMCACHED_SUCCESS, "set m1");
    RC(set("lb.m2", "v2", 2), MEMCACHED_SUCCESS, "set m2");
    RC(set("lb.m3", "v3", 3), MEMCACHED_SUCCESS, "set m3");
    for (i = 0; i < 4; i++)
        klens[i] = strlen(keys[i]);
    RC(memcached_mget(M, keys, klens, 4), MEMCACHED_SUCCESS, "mget 4 keys");
    while ((res = memcached_fetch_result(M, NULL, &rc)) != NULL) {
        const char *k = memcached_result_key_value(res);
        size_t kl = memcached_result_key_length(res);
        const char *v = memcached_result_value(res);
        CHECK(kl == 5 && memcmp(k, "lb.m", 4) == 0 && v[0] == 'v' &&
                  v[1] == k[4],
              "mget result %.*s = %.*s", (int)kl, k,
              (int)memcached_result_length(res), v);
        found++;
        memcached_result_free(res);
    }
    CHECK(found == 3, "mget found %d of 3", found);
    /* touch, delete */
    RC(memcached_touch(M, "lb.m1", 5, 1000), MEMCACHED_SUCCESS, "touch");
    RC(memcached_touch(M, "lb.none", 7, 1000), MEMCACHED_NOTFOUND,
       "touch missing");
    RC(memcached_delete(M, "lb.m1", 5, 0), MEMCACHED_SUCCESS, "delete");
    RC(memcached_delete(M, "lb.m1", 5, 0), MEMCACHED_NOTFOUND,
       "delete missing");
    expect_get("lb.m1", NULL, 0);
    /* a large value both ways */
    for (size_t j = 0; j < big; j++)
        bigv[j] = (char)('a' + j % 26);
    bigv[big] = 0;
    RC(memcached_set(M, "lb.big", 6, bigv, big, 0, 0), MEMCACHED_SUCCESS,
       "set 900 KiB");
    {
        size_t len = 0;
        uint32_t fl;
        char *v = memcached_get(M, "lb.big", 6, &len, &fl, &rc);
        CHECK(v != NULL && len == big && memcmp(v, bigv, big) == 0,
              "get 900 KiB (%zu bytes)", len);
        free(v);
    }
    free(bigv);
    /* noreply (the quiet opcodes) then a read that must see them */
    memcached_behavior_set(M, MEMCACHED_BEHAVIOR_NOREPLY, 1);
    RC(set("lb.q", "quiet", 0), MEMCACHED_SUCCESS, "setq");
    RC(memcached_delete(M, "lb.m2", 5, 0), MEMCACHED_SUCCESS, "deleteq");
    memcached_behavior_set(M, MEMCACHED_BEHAVIOR_NOREPLY, 0);
    expect_get("lb.q", "quiet", 0);
    expect_get("lb.m2", NULL, 0);
    /* version, stats, verbosity */
    RC(memcached_version(M), MEMCACHED_SUCCESS, "version");
    {
        memcached_stat_st *st = memcached_stat(M, NULL, &rc);
        CHECK(rc == MEMCACHED_SUCCESS && st != NULL && st->curr_items > 0,
              "stats: curr_items %" PRIu64, st ? (uint64_t)st->curr_items : 0);
        memcached_stat_free(M, st);
    }
    /* libmemcached sends verbosity as a text command on a connection of
     * its own, without SASL: only without a login */
    if (!sasl)
        RC(memcached_verbosity(M, 0), MEMCACHED_SUCCESS, "verbosity");
    RC(memcached_flush(M, 0), MEMCACHED_SUCCESS, "flush");
    expect_get("lb.k", NULL, 0);
}

int main(int argc, char **argv)
{
    char conf[256];

    if (argc != 2 && argc != 5) {
        fprintf(stderr, "usage: lmc_binary HOST:PORT [--sasl USER PASS]\n");
        return 2;
    }
    snprintf(conf, sizeof(conf), "--SERVER=%s --BINARY-PROTOCOL", argv[1]);
    M = memcached(conf, strlen(conf));
    if (M == NULL) {
        fprintf(stderr, "lmc_binary: bad configuration %s\n", conf);
        return 2;
    }
    CHECK(memcached_behavior_get(M, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL) == 1,
          "binary protocol on");
    if (argc == 5) {
        sasl = 1;
#ifdef LIBMEMCACHED_WITH_SASL_SUPPORT
        memcached_return_t rc;
        RC(memcached_set_sasl_auth_data(M, argv[3], "wrong-password"),
           MEMCACHED_SUCCESS, "sasl data (wrong)");
        rc = memcached_set(M, "lb.sasl", 7, "x", 1, 0, 0);
        CHECK(rc != MEMCACHED_SUCCESS, "a wrong password is refused (%s)",
              memcached_strerror(M, rc));
        memcached_free(M);
        M = memcached(conf, strlen(conf));
        RC(memcached_set_sasl_auth_data(M, argv[3], argv[4]),
           MEMCACHED_SUCCESS, "sasl data");
#else
        printf("SKIP: libmemcached without SASL\n");
        return 77;
#endif
    }
    ops();
    memcached_free(M);
    printf("%d passed, %d failed\n", oks, fails);
    return fails > 0;
}
