/*
 * test_client_unit.c - libmdcached internals that need no daemon: MD5
 * against RFC 1321's vectors and padding boundaries, and the properties of
 * the ketama circle (equal weights give 160 points each; weights move
 * points; adding or removing a server moves only about 1/N of the keys,
 * all of them to or from that server).
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

#include "ketama.h"
#include "md5.h"

static void hex(const uint8_t d[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_md5_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t repeat; /* 0: in as is; else 'x' * repeat */
        const char *hex;
    } v[] = {
        {"", 0, "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", 0, "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", 0, "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", 0, "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", 0, "c3fcd3d76192e4007dfb496cca67e13b"},
        {"1234567890123456789012345678901234567890123456789012345678901234"
         "5678901234567890",
         0, "57edf4a22be3c955ac49da2e2107b67a"},
        {NULL, 55, "04364420e25c512fd958a70738aa8f72"},
        {NULL, 56, "668a72d5ba17f08e62dabcafad6db14b"},
        {NULL, 63, "7dc2ca208106a2f703567bdff99d8981"},
        {NULL, 64, "c1bb4f81d892b2d57947682aeb252456"},
        {NULL, 65, "1bc932052302d074bdec39795fe00cf6"},
        {NULL, 1000, "398533d48111e9f664b1f64cb10c4b63"},
    };
    char buf[1000], out[33];
    uint8_t d[16];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        const char *in = v[i].in;
        size_t len;
        if (in == NULL) {
            memset(buf, 'x', v[i].repeat);
            in = buf;
            len = v[i].repeat;
        } else {
            len = strlen(in);
        }
        mdci_md5(in, len, d);
        hex(d, out);
        assert_string_equal(out, v[i].hex);
    }
}

static const char *names5[] = {"10.0.0.1", "10.0.0.2:11311", "cache-c:11311",
                               "/run/mdc.sock:0", "[::1]:7000"};

static void test_points(void **state)
{
    (void)state;
    struct mdci_continuum c = {0};
    size_t count[5] = {0};
    assert_int_equal(mdci_ketama_build(&c, names5, NULL, 5), 0);
    assert_int_equal(c.n, 5 * 160);
    for (size_t i = 0; i < c.n; i++) {
        count[c.points[i].index]++;
        if (i > 0)
            assert_true(c.points[i - 1].value <= c.points[i].value);
    }
    for (int i = 0; i < 5; i++)
        assert_int_equal(count[i], 160);

    uint32_t w[3] = {1, 2, 1};
    assert_int_equal(mdci_ketama_build(&c, names5, w, 3), 0);
    memset(count, 0, sizeof(count));
    for (size_t i = 0; i < c.n; i++)
        count[c.points[i].index]++;
    assert_int_equal(count[0], 120);
    assert_int_equal(count[1], 240);
    assert_int_equal(count[2], 120);

    struct mdci_continuum empty = {0};
    assert_int_equal(mdci_ketama_find(&empty, 123), 0);

    /* the last server removed (e.g. PHP's resetServerList()): an empty
     * continuum, without handing qsort() a null array (UBSan build) */
    assert_int_equal(mdci_ketama_build(&c, names5, NULL, 0), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(mdci_ketama_find(&c, 123), 0);
    mdci_ketama_free(&c);
}

/* Adding a 5th server moves ~1/5 of keys, each to the new server;
 * removing it moves them back and nothing else. */
static void test_minimal_movement(void **state)
{
    (void)state;
    struct mdci_continuum four = {0}, five = {0};
    enum { N = 20000 };
    size_t moved = 0, per[5] = {0};
    char key[32];

    assert_int_equal(mdci_ketama_build(&four, names5, NULL, 4), 0);
    assert_int_equal(mdci_ketama_build(&five, names5, NULL, 5), 0);
    for (int i = 0; i < N; i++) {
        int n = snprintf(key, sizeof(key), "user:%d:profile", i);
        uint32_t h = mdci_ketama_hash(key, (size_t)n);
        uint32_t a = mdci_ketama_find(&four, h), b = mdci_ketama_find(&five, h);
        per[b]++;
        if (a != b) {
            moved++;
            assert_int_equal(b, 4);
        }
    }
    double frac = (double)moved / N;
    printf("# adding a 5th server moved %.1f%% of keys\n", frac * 100);
    assert_true(frac > 0.12 && frac < 0.28);
    for (int i = 0; i < 5; i++) /* each server holds a fair share */
        assert_true(per[i] > N / 5 / 2 && per[i] < N / 5 * 2);
    mdci_ketama_free(&four);
    mdci_ketama_free(&five);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_vectors),
        cmocka_unit_test(test_points),
        cmocka_unit_test(test_minimal_movement),
    };
    return cmocka_run_group_tests_name("client_unit", tests, NULL, NULL);
}
