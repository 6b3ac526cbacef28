/*
 * test_client_ketama.c - the pool places keys exactly where Debian's
 * libmemcached does in MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED mode (what
 * php-memcached's OPT_LIBKETAMA_COMPATIBLE selects): 10 000 keys over pools
 * of 3 and 5 servers, on libmemcached's default port (names without a port)
 * and on others, with equal and unequal weights.  Skipped (77) when
 * libmemcached was not found at configure time.
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

#include "mdcached.h"

#ifdef HAVE_LIBMEMCACHED
#include <libmemcached/memcached.h>

struct srvdef {
    const char *host;
    uint16_t port;
    uint32_t weight;
};

static void compare(const struct srvdef *s, size_t n)
{
    memcached_st *mc = memcached_create(NULL);
    mdc_pool_t *p = mdc_pool_create();
    char key[64];
    size_t mismatches = 0, per[8] = {0};

    assert_non_null(mc);
    assert_non_null(p);
    assert_int_equal(
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1),
        MEMCACHED_SUCCESS);
    for (size_t i = 0; i < n; i++) {
        char spec[128];
        assert_int_equal(memcached_server_add_with_weight(
                             mc, s[i].host, s[i].port, s[i].weight),
                         MEMCACHED_SUCCESS);
        snprintf(spec, sizeof(spec), "%s:%u", s[i].host, s[i].port);
        assert_int_equal(mdc_pool_add(p, spec, s[i].weight), (int)i);
    }
    for (int k = 0; k < 10000; k++) {
        int len =
            snprintf(key, sizeof(key), k % 2 ? "key:%d" : "obj/%d/x", k * 7919);
        uint32_t want = memcached_generate_hash(mc, key, (size_t)len);
        int got = mdc_pool_index(p, key, (size_t)len);
        assert_true(got >= 0 && (size_t)got < n);
        per[got]++;
        if ((uint32_t)got != want) {
            if (mismatches++ < 5)
                printf("# key %s: libmemcached %u, libmdcached %d\n", key, want,
                       got);
        }
    }
    printf("# %zu servers:", n);
    for (size_t i = 0; i < n; i++)
        printf(" %zu", per[i]);
    printf(" keys; %zu mismatches\n", mismatches);
    assert_int_equal(mismatches, 0);
    mdc_pool_destroy(p);
    memcached_free(mc);
}

static void test_three_default_port(void **state)
{
    (void)state;
    const struct srvdef s[] = {
        {"10.0.0.1", 11211, 1}, {"10.0.0.2", 11211, 1}, {"10.0.0.3", 11211, 1}};
    compare(s, 3);
}

static void test_three_other_ports(void **state)
{
    (void)state;
    const struct srvdef s[] = {{"127.0.0.1", 11311, 1},
                               {"127.0.0.1", 11312, 1},
                               {"127.0.0.1", 11313, 1}};
    compare(s, 3);
}

static void test_five_mixed(void **state)
{
    (void)state;
    const struct srvdef s[] = {{"cache1.example", 11211, 1},
                               {"cache2.example", 11311, 1},
                               {"192.168.1.20", 11311, 1},
                               {"192.168.1.21", 22122, 1},
                               {"localhost", 11211, 1}};
    compare(s, 5);
}

static void test_five_weighted(void **state)
{
    (void)state;
    const struct srvdef s[] = {{"10.1.0.1", 11311, 1},
                               {"10.1.0.2", 11311, 2},
                               {"10.1.0.3", 11311, 3},
                               {"10.1.0.4", 11211, 1},
                               {"10.1.0.5", 11311, 5}};
    compare(s, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_default_port),
        cmocka_unit_test(test_three_other_ports),
        cmocka_unit_test(test_five_mixed),
        cmocka_unit_test(test_five_weighted),
    };
    return cmocka_run_group_tests_name("client_ketama", tests, NULL, NULL);
}
#else
int main(void)
{
    printf("# libmemcached not found at configure time: skipped\n");
    return 77;
}
#endif
