/*
 * soak_load.c - the load of bench/soak.sh: for a given time, a mixed
 * workload through libmdcached over many connections - stores with tags
 * and TTLs over a key space ten times the server's memory (so eviction
 * runs all the time), reads by key and by tag, tag invalidations, counter
 * updates, and connection churn (every handle closes its connection now
 * and then; some are destroyed and created anew).  Every reply must be a
 * success or an expected miss; anything else is counted and fails the run.
 *
 *     soak_load HOST:PORT SECONDS KEYS
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mdcached.h"

#define NHANDLES 16

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    static char val[8192];
    mdc_t *h[NHANDLES];
    uint64_t ops = 0, errors = 0, churn = 0;
    double end;
    uint32_t keys;
    int i;

    if (argc != 4) {
        fprintf(stderr, "usage: soak_load HOST:PORT SECONDS KEYS\n");
        return 64;
    }
    end = now_s() + atof(argv[2]);
    keys = (uint32_t)strtoul(argv[3], NULL, 10);
    for (i = 0; i < NHANDLES; i++) {
        h[i] = mdc_create(argv[1]);
        if (h[i] == NULL)
            return 1;
    }
    while (now_s() < end) {
        for (int b = 0; b < 256; b++) {
            int hi = (int)rnd(NHANDLES);
            mdc_t *m = h[hi];
            char key[32];
            uint32_t k = rnd(keys);
            int klen = snprintf(key, sizeof(key), "soak:%u", k);
            int op = (int)rnd(100), rc = MDC_OK;

            if (op < 35) { /* store: 1-8 KiB, maybe a TTL, maybe tags */
                struct mdc_tag t[2] = {{1, (int32_t)(k % 1000)},
                                       {2, (int32_t)(k % 37)}};
                size_t vlen = 1024 + rnd(7 * 1024);
                memset(val, 'a' + (int)(k % 26), vlen);
                size_t nt = rnd(3); /* 0, 1 or 2 tags */
                rc = mdc_set(m, key, (size_t)klen, val, vlen, k,
                             rnd(3) == 0 ? (int64_t)(1 + rnd(20)) : 0,
                             nt ? t : NULL, nt);
                if (rc != MDC_OK && rc != MDC_NO_MEMORY)
                    errors++;
            } else if (op < 80) {
                struct mdc_item *it = NULL;
                rc = mdc_get(m, key, (size_t)klen, &it);
                if (rc == MDC_OK &&
                    (it->vlen < 1024 || it->value[0] != 'a' + (int)(k % 26) ||
                     it->value[it->vlen - 1] != 'a' + (int)(k % 26)))
                    errors++; /* a value that was never written */
                else if (rc != MDC_OK && rc != MDC_NOT_FOUND)
                    errors++;
                mdc_item_free(it);
            } else if (op < 88) {
                struct mdc_itemset set;
                int32_t tv[2] = {(int32_t)rnd(1000), (int32_t)rnd(1000)};
                memset(&set, 0, sizeof(set));
                rc = mdc_get_by_tag(m, 1, tv, 2, &set);
                if (rc != MDC_OK && rc != MDC_TRUNCATED)
                    errors++;
                mdc_itemset_free(&set);
            } else if (op < 93) { /* tag invalidation */
                int32_t tv = (int32_t)rnd(37);
                rc = mdc_del_by_tag(m, 2, &tv, 1, NULL);
                if (rc != MDC_OK)
                    errors++;
            } else if (op < 98) {
                char ck[16];
                uint64_t v;
                int cl = snprintf(ck, sizeof(ck), "ctr:%u", k % 64);
                rc = mdc_incr(m, ck, (size_t)cl, 1, &v);
                if (rc == MDC_NOT_FOUND)
                    rc = mdc_add(m, ck, (size_t)cl, "0", 1, 0, 0, NULL, 0);
                if (rc != MDC_OK && rc != MDC_EXISTS && rc != MDC_NO_MEMORY)
                    errors++;
            } else if (op < 99) { /* churn: reconnect */
                mdc_close(m);
                churn++;
            } else { /* churn: a new handle */
                mdc_destroy(m);
                h[hi] = mdc_create(argv[1]);
                if (h[hi] == NULL)
                    return 1;
                churn++;
            }
            if (rc < 0 && op < 98)
                fprintf(stderr, "soak_load: %s\n", mdc_errstr(m));
            ops++;
        }
    }
    for (i = 0; i < NHANDLES; i++)
        mdc_destroy(h[i]);
    printf("soak_load: %llu operations, %llu reconnects, %llu errors\n",
           (unsigned long long)ops, (unsigned long long)churn,
           (unsigned long long)errors);
    return errors == 0 ? 0 : 1;
}
