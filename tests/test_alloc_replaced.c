/*
 * test_alloc_replaced.c - the allocator shim (server/core/alloc.c) compiled
 * with AddressSanitizer in a jemalloc build, as the libFuzzer targets are
 * when a fuzz build is configured without --without-jemalloc: the
 * sanitizer's malloc then serves every allocation, and the shim must not
 * size or free them with jemalloc's nallocx/sdallocx.  Before the shim
 * knew (fuzz_dump on its seed small.mdc aborted: store_check "record size
 * from its header is wrong"), mdc_alloc_size() said 32 for a 17-byte
 * record and mdc_free_sized() handed the pointer to jemalloc.
 * Built and run only in jemalloc builds (tests/include.am).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/alloc.h"

/* A record's size is computed from its header (mdc_alloc_size) and must
 * be what the allocator reserved (mdc_usable_size), for every size. */
static void test_sizes_agree(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 20000; n += n < 512 ? 1 : 97) {
        void *p = mdc_malloc(n);

        assert_non_null(p);
        memset(p, 0x5a, n);
        if (mdc_alloc_size(p, n) != mdc_usable_size(p))
            fail_msg("size %zu: mdc_alloc_size %zu, usable %zu", n,
                     mdc_alloc_size(p, n), mdc_usable_size(p));
        mdc_free_sized(p, n); /* the sanitizer's free, not sdallocx */
    }
}

/* mdc_good_size(n) is what mdc_malloc(n) reserves: accounting relies on
 * it before allocating. */
static void test_good_size(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 4096; n += 13) {
        void *p = mdc_malloc(n);

        assert_non_null(p);
        assert_int_equal(mdc_good_size(n), mdc_usable_size(p));
        mdc_free(p);
    }
}

/* No per-thread counter or allocator name that is not the one in use. */
static void test_name(void **state)
{
    (void)state;
    assert_string_equal(mdc_allocator_name(), "libc");
    assert_int_equal(mdc_alloc_counts_threads(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_agree),
        cmocka_unit_test(test_good_size),
        cmocka_unit_test(test_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
