/*
 * pool_fanout.c - the client's cost of a pool-wide tag delete, fan-out over
 * the poll loop ("tcp") against io_uring ("uring") and, with -B, the
 * kernel scatter-gather ("bpf", docs/pool-bpf.md), side by side in one
 * run: rounds alternate the paths on the same pool and connections, so
 * a busy machine slows them alike.  Per path: client CPU (user + system,
 * getrusage) per operation, operations per second, p50/p99 latency.
 * bench/pool_fanout.sh runs it on the pool test bed (tests/pool_bed.sh).
 *
 *   pool_fanout [-n OPS] [-r ROUNDS] [-M poll|uring|bpf] [-B DESC] SERVER...
 *   (-M: that path only, e.g. under strace -c to count system calls;
 *   -B: the pool's description the loader wrote, adds the path "bpf")
 *   pool_fanout -S DIR -n OPS SERVER...
 *   (fill the spool of DIR: OPS tag deletes while the servers do not
 *   answer; bench/pool_fanout.sh then times mdcached-tool spool-replay)
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mdcached.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* path k: 0 poll loop, 1 io_uring, 2 the kernel (desc) */
static int use_path(mdc_pool_t *p, int k, const int *modes, const char *desc)
{
    mdc_pool_set_fanout(p, modes[k]);
    return mdc_pool_set_bpf(p, k == 2 ? desc : NULL, 0, 200);
}

int main(int argc, char **argv)
{
    int ops = 2000, rounds = 6, c, only = -1, npath = 2;
    const char *spool = NULL, *desc = NULL;
    static const int modes[3] = {MDC_FANOUT_POLL, MDC_FANOUT_URING,
                                 MDC_FANOUT_URING};
    static const char *const names[3] = {"tcp", "uring", "bpf"};

    while ((c = getopt(argc, argv, "n:r:M:S:B:")) != -1) {
        if (c == 'S')
            spool = optarg;
        else if (c == 'B')
            desc = optarg;
        else if (c == 'n')
            ops = atoi(optarg);
        else if (c == 'r')
            rounds = atoi(optarg);
        else if (c == 'M')
            only = strcmp(optarg, "poll") == 0    ? 0
                   : strcmp(optarg, "uring") == 0 ? 1
                                                  : 2;
        else
            return 2;
    }
    if (optind >= argc || ops < 1 || rounds < 1)
        return fprintf(stderr, "usage: pool_fanout [-n OPS] [-r ROUNDS] "
                               "[-M poll|uring|bpf] [-B DESC] SERVER...\n"),
               2;
    if (desc != NULL)
        npath = 3;
    if (only == 2 && desc == NULL)
        return fprintf(stderr, "-M bpf wants -B DESC\n"), 2;
    mdc_pool_t *p = mdc_pool_create();
    for (int i = optind; i < argc; i++)
        if (mdc_pool_add(p, argv[i], 1) < 0)
            return fprintf(stderr, "bad server %s\n", argv[i]), 2;
    int nsrv = argc - optind;
    if (spool != NULL) {
        struct mdc_pool_stats st;
        mdc_pool_set_timeouts(p, 100, 100);
        mdc_pool_set_retry_delay(p, 600000); /* the rest fail at once */
        mdc_pool_set_spool_limits(p, (size_t)64 << 20, 0, 0);
        if (mdc_pool_set_spool_dir(p, spool) != MDC_OK)
            return fprintf(stderr, "%s\n", mdc_pool_errstr(p)), 1;
        for (int32_t i = 0; i < ops; i++)
            mdc_pool_del_by_tag(p, 1, &i, 1, NULL, NULL);
        mdc_pool_get_stats(p, &st);
        printf("spooled %llu errors %llu\n", (unsigned long long)st.spooled,
               (unsigned long long)st.spool_errors);
        mdc_pool_destroy(p);
        return st.spooled == (uint64_t)ops * (uint64_t)nsrv ? 0 : 1;
    }
    int64_t *lat[3];
    int64_t cpu[3] = {0, 0, 0}, wall[3] = {0, 0, 0};
    size_t nlat[3] = {0, 0, 0};
    for (int k = 0; k < npath; k++)
        lat[k] = malloc((size_t)ops * (size_t)rounds * sizeof(int64_t));
    /* connect and warm every path */
    for (int k = 0; k < npath; k++) {
        if (use_path(p, k, modes, desc) != MDC_OK)
            return fprintf(stderr, "%s\n", mdc_pool_errstr(p)), 1;
        for (int i = 0; i < 50; i++) {
            int32_t v = -1 - i;
            if (mdc_pool_del_by_tag(p, 1, &v, 1, NULL, NULL) != MDC_OK)
                return fprintf(stderr, "%s\n", mdc_pool_errstr(p)), 1;
        }
    }
    int32_t tv = 0;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < npath; k++) {
            int kk = (k + r) % npath; /* rotate which goes first */
            if (only >= 0 && kk != only)
                continue;
            use_path(p, kk, modes, desc);
            int64_t c0 = cpu_ns(), w0 = now_ns();
            for (int i = 0; i < ops; i++) {
                int64_t t = now_ns();
                tv++;
                if (mdc_pool_del_by_tag(p, 1, &tv, 1, NULL, NULL) != MDC_OK)
                    return fprintf(stderr, "%s\n", mdc_pool_errstr(p)), 1;
                lat[kk][nlat[kk]++] = now_ns() - t;
            }
            wall[kk] += now_ns() - w0;
            cpu[kk] += cpu_ns() - c0;
            if (strcmp(mdc_pool_last_path(p), names[kk]) != 0)
                return fprintf(stderr, "path %s, wanted %s\n",
                               mdc_pool_last_path(p), names[kk]),
                       1;
        }
    printf("fanout %d ops/path %zu\n", nsrv,
           nlat[0]   ? nlat[0]
           : nlat[1] ? nlat[1]
                     : nlat[2]);
    double per[3] = {0, 0, 0};
    for (int k = 0; k < npath; k++) {
        if (nlat[k] == 0)
            continue;
        qsort(lat[k], nlat[k], sizeof(int64_t), cmp64);
        per[k] = (double)cpu[k] / (double)nlat[k] / 1000.0;
        printf("%-5s cpu_us_per_op %.2f ops_per_s %.0f p50_us %.1f "
               "p99_us %.1f\n",
               names[k], per[k], (double)nlat[k] * 1e9 / (double)wall[k],
               (double)lat[k][nlat[k] / 2] / 1000.0,
               (double)lat[k][nlat[k] * 99 / 100] / 1000.0);
    }
    if (per[0] > 0 && per[1] > 0)
        printf("ratio uring/tcp cpu %.2f\n", per[1] / per[0]);
    if (per[1] > 0 && per[2] > 0)
        printf("ratio uring/bpf cpu %.2f\n", per[1] / per[2]);
    if (desc != NULL) {
        /* honest: how many operations needed the poll or TCP retries */
        struct mdc_pool_stats st;
        mdc_pool_get_stats(p, &st);
        printf("bpf ops %" PRIu64 " polls %" PRIu64 " tcp_retries %" PRIu64
               "\n",
               st.ops[MDC_PATH_BPF], st.bpf_polls, st.bpf_tcp_retries);
    }
    mdc_pool_destroy(p);
    return 0;
}
