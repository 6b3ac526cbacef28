/*
 * sweep_bench.c - what the expiry sweep costs at scale (issue 27 item 4).
 *
 * Loads a store with N records (16-byte keys, 32-byte values; default
 * 10^7) and measures, over a window of W seconds (default 10), the CPU
 * time of the store's sweeper thread (the daemon's default sweep interval,
 * 1000 ms), as a share of one CPU, with:
 *   none   no record has a TTL
 *   long   every record has a TTL of 1 to 24 hours (none expires in the
 *          window: the sweeper only turns slots, and revisits the entries
 *          of TTLs longer than the wheel's 256-second lap)
 *   short  every record has a TTL of 1 to 600 s (about N/600 expire each
 *          second, each reclaimed within a second of its deadline)
 *   walk   as short, but the sweep is the walk the store had before the
 *          expiry wheel (a tenth of the table a second, store_sweep), run
 *          by this program's thread and timed the same way
 * It also prints the records reclaimed in the window, the records still
 * held a second or more past their deadline at its end, and the memory of
 * the expiry wheel per record with a TTL.
 *
 *   bench/sweep_bench [-n RECORDS] [-w SECONDS] [-o none,long,short,walk]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/store.h"
#include "server/core/store_policy.h"

static uint64_t thread_cpu_ns(clockid_t cid)
{
    struct timespec ts;
    clock_gettime(cid, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Linked records whose deadline passed a second or more ago (a walk of
 * the table under each stripe's read lock, after the window). */
static uint64_t held_late(struct store *st)
{
    uint32_t now = now_s(st);
    uint64_t late = 0;
    for (uint32_t b = 0; b < nbuckets_now(st); b++) {
        mdc_rwlock_t *l = lock_of(st, b);
        struct record *r;
        mdc_rdlock(l);
        RT_FOREACH(r, &st->buckets[b])
        {
            uint32_t d = __atomic_load_n(&r->deadline, __ATOMIC_RELAXED);
            late += d != 0 && d + 1 <= now;
        }
        mdc_unlock(l);
    }
    return late;
}

enum mode { M_NONE, M_LONG, M_SHORT, M_WALK, M__COUNT };
static const char *const mode_names[M__COUNT] = {"none", "long", "short",
                                                 "walk"};

static void run(enum mode m, uint64_t n, unsigned window)
{
    struct store_config c = {0};
    c.mem_limit = (size_t)8 << 30;
    c.no_evict = true;
    c.sweep_interval_ms = m == M_WALK ? 0 : 1000;
    struct store *st = store_setup(&c);
    if (st == NULL) {
        fprintf(stderr, "store_setup failed\n");
        exit(1);
    }
    store_reserve(st, n);
    char key[17], val[32];
    memset(val, 'v', sizeof(val));
    uint64_t t0 = mono_ns();
    for (uint64_t i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%016" PRIx64, next_rand());
        int64_t ttl = 0;
        if (m == M_LONG)
            ttl = 3600 + (int64_t)(next_rand() % (23 * 3600));
        else if (m == M_SHORT || m == M_WALK)
            ttl = 1 + (int64_t)(next_rand() % 600);
        struct store_item it = {.key = key, .klen = 16, .value = val,
                                .vlen = sizeof(val), .exptime = ttl};
        if (store_put(st, STORE_SET, &it, NULL) != ST_OK) {
            fprintf(stderr, "store_put failed at %" PRIu64 "\n", i);
            exit(1);
        }
    }
    double load_s = (double)(mono_ns() - t0) / 1e9;
    struct store_stats s0, s1;
    store_get_stats(st, &s0);

    clockid_t cid;
    if (m == M_WALK)
        pthread_getcpuclockid(pthread_self(), &cid);
    else
        pthread_getcpuclockid(st->sweeper, &cid);
    uint64_t c0 = thread_cpu_ns(cid), w0 = mono_ns();
    for (unsigned s = 0; s < window; s++) {
        if (m == M_WALK) { /* the sweep before the wheel, once a second */
            uint64_t a = mono_ns();
            store_sweep(st, (size_t)s0.nbuckets / 10 + 1);
            uint64_t used = mono_ns() - a;
            if (used < 1000000000u) {
                struct timespec nap = {0, (long)(1000000000u - used)};
                nanosleep(&nap, NULL);
            }
        } else {
            struct timespec nap = {1, 0};
            nanosleep(&nap, NULL);
        }
    }
    uint64_t c1 = thread_cpu_ns(cid), w1 = mono_ns();
    store_get_stats(st, &s1);
    double wall = (double)(w1 - w0) / 1e9;
    double cpu = (double)(c1 - c0) / 1e9;
    int64_t wheel_bytes = atomic_load(&st->wheel_bytes);
    uint64_t late = held_late(st);
    uint64_t with_ttl = m == M_NONE ? 0 : n;
    printf("%-6s records %" PRIu64 " (load %.1f s) window %.1f s: sweeper "
           "CPU %.1f ms = %.3f %% of one CPU; reclaimed %" PRIu64
           " (%.0f/s), %" PRIu64 " held 1 s or more past their deadline; "
           "expiry wheel %.1f MiB = %.1f B per record with a TTL\n",
           mode_names[m], n, load_s, wall, cpu * 1e3, 100.0 * cpu / wall,
           s1.expired - s0.expired, (double)(s1.expired - s0.expired) / wall,
           late,
           (double)wheel_bytes / (1 << 20),
           with_ttl ? (double)wheel_bytes / (double)with_ttl : 0.0);
    fflush(stdout);
    store_teardown(st);
}

int main(int argc, char **argv)
{
    uint64_t n = 10000000;
    unsigned window = 10;
    unsigned mask = (1u << M__COUNT) - 1;
    int o;
    while ((o = getopt(argc, argv, "n:w:o:h")) != -1) {
        switch (o) {
        case 'n': n = strtoull(optarg, NULL, 0); break;
        case 'w': window = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'o': {
            mask = 0;
            char buf[128];
            snprintf(buf, sizeof(buf), "%s", optarg);
            for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
                for (int k = 0; k < M__COUNT; k++)
                    if (strcmp(t, mode_names[k]) == 0)
                        mask |= 1u << k;
            break;
        }
        default:
            fprintf(stderr, "usage: sweep_bench [-n RECORDS] [-w SECONDS] "
                            "[-o none,long,short,walk]\n");
            return o == 'h' ? 0 : 2;
        }
    }
    for (int k = 0; k < M__COUNT; k++)
        if (mask & (1u << k))
            run((enum mode)k, n, window);
    return 0;
}
