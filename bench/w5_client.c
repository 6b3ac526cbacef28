/*
 * w5_client.c - libmdcached's own costs (issue 5 targets): ops/s of single
 * GETs and of 100-key pipelined multi-gets against one server, and the
 * latency of a del_by_tag fanned out over a pool of 1 or more servers.
 * One JSON line per measurement.  Run by bench/run w5; the system calls per
 * multi-get are counted there with strace.
 *
 *   w5_client -s host:port [-s host:port ...] [-d secs] get|mget|fanout
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mdcached.h"

#define NKEYS 10000

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *servers[16];
    int nservers = 0, opt;
    double secs = 3;
    static char keys[NKEYS][16];
    static const void *kp[NKEYS];
    static size_t kl[NKEYS];
    char val[32];

    while ((opt = getopt(argc, argv, "s:d:")) != -1) {
        if (opt == 's' && nservers < 16)
            servers[nservers++] = optarg;
        else if (opt == 'd')
            secs = atof(optarg);
        else
            goto usage;
    }
    if (nservers == 0 || optind != argc - 1)
        goto usage;
    const char *mode = argv[optind];
    memset(val, 'v', sizeof(val));
    for (int i = 0; i < NKEYS; i++) {
        kl[i] = (size_t)snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        kp[i] = keys[i];
    }

    if (strcmp(mode, "get") == 0 || strcmp(mode, "mget") == 0) {
        mdc_t *m = mdc_create(servers[0]);
        struct mdc_kv kv[100];
        struct mdc_item *out[100];
        for (int i = 0; i < NKEYS; i += 100) {
            for (int j = 0; j < 100; j++)
                kv[j] = (struct mdc_kv){.key = kp[i + j],
                                        .klen = kl[i + j],
                                        .value = val,
                                        .vlen = sizeof(val)};
            if (mdc_mset(m, MDC_SET, 100, kv, NULL) != MDC_OK) {
                fprintf(stderr, "mset: %s\n", mdc_errstr(m));
                return 1;
            }
        }
        bool multi = strcmp(mode, "mget") == 0;
        uint64_t n = 0, keysread = 0, end = now_us() + (uint64_t)(secs * 1e6);
        uint64_t t0 = now_us();
        unsigned r = 1;
        while (now_us() < end) {
            for (int b = 0; b < 100; b++) {
                r = r * 1103515245u + 12345u;
                int i = (int)((r >> 8) % (NKEYS - 100));
                if (multi) {
                    if (mdc_mget(m, 100, kp + i, kl + i, out) != MDC_OK)
                        return 1;
                    for (int j = 0; j < 100; j++) {
                        keysread += out[j] != NULL;
                        mdc_item_free(out[j]);
                    }
                } else {
                    struct mdc_item *it = NULL;
                    if (mdc_get(m, kp[i], kl[i], &it) != MDC_OK)
                        return 1;
                    keysread++;
                    mdc_item_free(it);
                }
                n++;
            }
        }
        double el = (double)(now_us() - t0) / 1e6;
        printf("{\"mode\":\"%s\",\"ops\":%" PRIu64 ",\"secs\":%.2f,"
               "\"ops_per_s\":%.0f,\"keys_per_s\":%.0f}\n",
               mode, n, el, (double)n / el, (double)keysread / el);
        mdc_destroy(m);
        return 0;
    }
    if (strcmp(mode, "fanout") == 0) {
        mdc_pool_t *p = mdc_pool_create();
        for (int i = 0; i < nservers; i++)
            mdc_pool_add(p, servers[i], 1);
        enum { REPS = 200 };
        uint64_t lat[REPS];
        int32_t tv = 77;
        for (int rep = 0; rep < REPS; rep++) {
            /* 30 records of tag (5, 77) spread over the pool */
            for (int j = 0; j < 30; j++) {
                struct mdc_tag tag = {5, tv};
                struct mdc_kv kv = {.key = kp[j],
                                    .klen = kl[j],
                                    .value = val,
                                    .vlen = sizeof(val),
                                    .tags = &tag,
                                    .ntags = 1};
                if (mdc_pool_store(p, MDC_SET, &kv, NULL) != MDC_OK)
                    return 1;
            }
            uint64_t del = 0, t0 = now_us();
            if (mdc_pool_del_by_tag(p, 5, &tv, 1, &del, NULL) != MDC_OK ||
                del != 30) {
                fprintf(stderr, "del_by_tag: %s\n", mdc_pool_errstr(p));
                return 1;
            }
            lat[rep] = now_us() - t0;
        }
        qsort(lat, REPS, sizeof(lat[0]), cmp_u64);
        printf("{\"mode\":\"fanout\",\"servers\":%d,\"reps\":%d,"
               "\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 "}\n",
               nservers, REPS, lat[REPS / 2], lat[REPS * 99 / 100]);
        mdc_pool_destroy(p);
        return 0;
    }
usage:
    fprintf(stderr, "usage: w5_client -s host:port [-s ...] [-d secs] "
                    "get|mget|fanout\n");
    return 2;
}
