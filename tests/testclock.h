/*
 * testclock.h - a controllable clock for store tests.
 */
#ifndef MDC_TESTCLOCK_H
#define MDC_TESTCLOCK_H

#include <stdint.h>
#include "server/core/store.h"

struct testclock {
    uint64_t mono_ns;
    int64_t wall_s;
};

static uint64_t tc_mono(void *ctx) { return ((struct testclock *)ctx)->mono_ns; }
static int64_t tc_wall(void *ctx) { return ((struct testclock *)ctx)->wall_s; }

static inline void testclock_install(struct store *st, struct testclock *tc)
{
    struct store_clock c = {tc_mono, tc_wall, tc};
    store_set_clock(st, &c);
}

static inline void testclock_advance(struct testclock *tc, int64_t seconds)
{
    tc->mono_ns += (uint64_t)seconds * 1000000000ull;
    tc->wall_s += seconds;
}

#endif
