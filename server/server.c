/*
 * server.c - the few functions server.h declares for every layer above the
 * core: the clock resolution and uptime beside the monotonic clocks the
 * connections, threads and the report stamp with (those two are inline in
 * server.h: read on every request), and the thread model's name.  Base layer (docs/architecture.md,
 * "Layers"): net/, proto/ and the report call these, so they cannot live in
 * daemon.c or net/ (tools/check-layers.sh checks the calls too).
 */
#include "config.h"

#include <time.h>

#include "server.h"

uint64_t server_coarse_res_ms(void)
{
    static uint64_t res_ms; /* read once; every thread stores the same */
    uint64_t res = __atomic_load_n(&res_ms, __ATOMIC_RELAXED);
    struct timespec ts;

    if (res != 0)
        return res;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) != 0)
        res = 1000;
    else
        res = (uint64_t)ts.tv_sec * 1000 +
              ((uint64_t)ts.tv_nsec + 999999) / 1000000; /* rounded up */
    __atomic_store_n(&res_ms, res, __ATOMIC_RELAXED);
    return res;
}

uint64_t server_uptime(const struct server *srv)
{
    return server_mono_s() - srv->started_mono;
}

enum thread_model thread_model_of(unsigned nnet, unsigned npay)
{
    if (nnet == 0)
        return npay == 0 ? TM_SPED : TM_AMPED_1;
    if (npay == 0)
        return TM_SYMPED;
    if (nnet == 1)
        return TM_AMPED;
    return nnet == npay ? TM_SEDA_S : TM_SEDA;
}

const char *thread_model_name(enum thread_model tm)
{
    switch (tm) {
    case TM_SPED:
        return "SPED";
    case TM_AMPED_1:
    case TM_AMPED:
        return "AMPED";
    case TM_SYMPED:
        return "SYMPED";
    case TM_SEDA:
        return "SEDA";
    case TM_SEDA_S:
        return "SEDA-S";
    }
    return "?";
}
