/*
 * flush_bench.c - flush_all at scale: its reply time, and what it costs a
 * client issuing GETs beside it (bench/flush_bench.sh; docs/performance.md
 * "flush_all at 10^7 records").  Text protocol, so the same run measures
 * mdcached and memcached.
 *
 *   flush_bench HOST PORT [RECORDS [WINDOW_S [ROUNDS]]]
 *
 * On an empty cache: 20 flush_all round trips (the reference).  Then each
 * round: RECORDS records loaded by 4 connections of pipelined noreply sets
 * (8-byte values; a version round trip on each then says the server has
 * run them), checked with curr_items; a GET client (one connection, one
 * GET of a loaded key at a time) runs WINDOW_S seconds without a flush
 * (its worst round trip: the baseline), then WINDOW_S seconds more during
 * which a second connection sends flush_all 1 s in; the GET window goes on
 * until mdcached's sweeper has reclaimed the flushed records
 * (flush_pending 0; memcached has no such walk) and 1 s after.  Reported
 * per round, one JSON line: the flush reply time, the GET client's worst,
 * p99 and count in each window, and the worst while the sweeper walked;
 * then a window as long as the flush's, after it ("after": as many
 * seconds, GETs missing as they do after the flush), since the worst of a
 * longer window is larger by chance alone.
 * GETs after the flush miss (END) where before they hit: with 8-byte
 * values the replies differ by ~30 bytes.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LOADERS 4
#define MAXS 4000000 /* GET samples per window */

static struct sockaddr_in addr;
static uint64_t nrec = 10000000;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *m)
{
    fprintf(stderr, "flush_bench: %s: %s\n", m, strerror(errno));
    exit(1);
}

static int conn(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
        die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *b, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("write");
        b += w;
        n -= (size_t)w;
    }
}

/* read until the buffer ends with 'end'; returns the length */
static size_t read_until(int fd, char *b, size_t cap, const char *end)
{
    size_t n = 0, el = strlen(end);
    for (;;) {
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("read");
        n += (size_t)r;
        b[n] = 0;
        if (n >= el && memcmp(b + n - el, end, el) == 0)
            return n;
        if (n + 1 >= cap)
            die("reply too long");
    }
}

static long long stat_of(int fd, const char *name)
{
    static char b[1 << 16];
    char pat[96];
    send_all(fd, "stats\r\n", 7);
    read_until(fd, b, sizeof(b), "END\r\n");
    snprintf(pat, sizeof(pat), "STAT %s ", name);
    char *p = strstr(b, pat);
    return p == NULL ? -1 : atoll(p + strlen(pat));
}

static void *loader(void *arg)
{
    uint64_t id = (uintptr_t)arg, lo = nrec * id / LOADERS,
             hi = nrec * (id + 1) / LOADERS;
    int fd = conn();
    static __thread char buf[1 << 16];
    size_t n = 0;
    for (uint64_t k = lo; k < hi; k++) {
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "set fb:%llu 0 0 8 noreply\r\nvalue-%02llu\r\n",
                              (unsigned long long)k,
                              (unsigned long long)(k % 100));
        if (n > sizeof(buf) - 128) {
            send_all(fd, buf, n);
            n = 0;
        }
    }
    send_all(fd, buf, n);
    send_all(fd, "version\r\n", 9);
    read_until(fd, buf, sizeof(buf), "\r\n");
    if (strncmp(buf, "VERSION", 7) != 0) {
        fprintf(stderr, "flush_bench: load: %s", buf);
        exit(1);
    }
    close(fd);
    return NULL;
}

/* the GET client */
static _Atomic int phase; /* 0 stop, 1 run */
static uint64_t *samp;    /* [MAXS] (ns since the window began, rtt) */
static size_t nsamp;
static uint64_t t_begin;

static void *getter(void *arg)
{
    (void)arg;
    int fd = conn();
    char req[64], b[256];
    uint64_t x = 88172645463325252ull;
    while (atomic_load(&phase)) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int l = snprintf(req, sizeof(req), "get fb:%llu\r\n",
                         (unsigned long long)(x % nrec));
        uint64_t t0 = now_ns();
        send_all(fd, req, (size_t)l);
        read_until(fd, b, sizeof(b), "END\r\n");
        uint64_t t1 = now_ns();
        if (nsamp < MAXS / 2) {
            samp[2 * nsamp] = t0 - t_begin;
            samp[2 * nsamp + 1] = t1 - t0;
            nsamp++;
        }
    }
    close(fd);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct wstat {
    size_t n;
    double worst_us, p99_us, p999_us;
};

/* the samples begun in [from, to) ns of the window */
static struct wstat wstat_of(uint64_t from, uint64_t to)
{
    struct wstat w = {0};
    uint64_t *v = malloc(nsamp * sizeof(*v) + 1);
    for (size_t i = 0; i < nsamp; i++)
        if (samp[2 * i] >= from && samp[2 * i] < to)
            v[w.n++] = samp[2 * i + 1];
    if (w.n > 0) {
        qsort(v, w.n, sizeof(*v), cmp_u64);
        w.worst_us = v[w.n - 1] / 1e3;
        w.p99_us = v[(size_t)(w.n * 0.99)] / 1e3;
        w.p999_us = v[(size_t)(w.n * 0.999)] / 1e3;
    }
    free(v);
    return w;
}

static void start_getter(pthread_t *t)
{
    nsamp = 0;
    t_begin = now_ns();
    atomic_store(&phase, 1);
    if (pthread_create(t, NULL, getter, NULL) != 0)
        die("pthread_create");
}

static void stop_getter(pthread_t t)
{
    atomic_store(&phase, 0);
    pthread_join(t, NULL);
}

static double flush_rtt_us(int fd)
{
    char b[64];
    uint64_t t0 = now_ns();
    send_all(fd, "flush_all\r\n", 11);
    read_until(fd, b, sizeof(b), "\r\n");
    uint64_t t1 = now_ns();
    if (strcmp(b, "OK\r\n") != 0) {
        fprintf(stderr, "flush_bench: flush_all: %s", b);
        exit(1);
    }
    return (t1 - t0) / 1e3;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u),
                          (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: flush_bench HOST PORT [RECORDS [WINDOW_S "
                        "[ROUNDS]]]\n");
        return 2;
    }
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1)
        die("address");
    if (argc > 3)
        nrec = strtoull(argv[3], NULL, 10);
    double window = argc > 4 ? atof(argv[4]) : 5;
    int rounds = argc > 5 ? atoi(argv[5]) : 1;
    uint64_t wns = (uint64_t)(window * 1e9);
    samp = malloc(MAXS * sizeof(*samp));
    int ctl = conn();

    /* the empty cache's flush_all */
    double e[20], emax = 0;
    for (int i = 0; i < 20; i++) {
        e[i] = flush_rtt_us(ctl);
        emax = e[i] > emax ? e[i] : emax;
        sleep_ns(10000000);
    }
    qsort(e, 20, sizeof(*e), cmp_d);
    printf("{\"what\":\"empty\",\"flush_us_median\":%.1f,"
           "\"flush_us_max\":%.1f}\n", (e[9] + e[10]) / 2, emax);
    fflush(stdout);

    for (int round = 0; round < rounds; round++) {
        pthread_t lt[LOADERS], g;
        uint64_t t0 = now_ns();
        for (uintptr_t i = 0; i < LOADERS; i++)
            if (pthread_create(&lt[i], NULL, loader, (void *)i) != 0)
                die("pthread_create");
        for (int i = 0; i < LOADERS; i++)
            pthread_join(lt[i], NULL);
        double load_s = (now_ns() - t0) / 1e9;
        long long items = stat_of(ctl, "curr_items");
        fprintf(stderr, "flush_bench: round %d: %llu records loaded in "
                "%.1f s; curr_items %lld\n", round, (unsigned long long)nrec,
                load_s, items);

        /* without a flush */
        start_getter(&g);
        sleep_ns(wns);
        stop_getter(g);
        struct wstat base = wstat_of(0, UINT64_MAX);

        /* with one, 1 s in; on until the walk is done, then 1 s */
        start_getter(&g);
        sleep_ns(1000000000u);
        uint64_t tf = now_ns() - t_begin;
        double fus = flush_rtt_us(ctl);
        uint64_t tr = now_ns() - t_begin, twalk;
        for (;;) {
            long long p = stat_of(ctl, "flush_pending");
            twalk = now_ns() - t_begin;
            if (p <= 0)
                break;
            sleep_ns(20000000);
        }
        uint64_t end = tf + wns;
        if (end < twalk + 1000000000u)
            end = twalk + 1000000000u;
        while (now_ns() - t_begin < end)
            sleep_ns(10000000);
        stop_getter(g);
        struct wstat fl = wstat_of(0, UINT64_MAX);
        struct wstat at = wstat_of(tf, tr + 1);
        struct wstat walk = wstat_of(tr, twalk);
        long long left = stat_of(ctl, "curr_items");
        /* a window as long as the flush's, after it (GETs miss, as after
         * the flush): the worst of an equal number of seconds */
        uint64_t flen = end;
        start_getter(&g);
        sleep_ns(flen);
        stop_getter(g);
        struct wstat after = wstat_of(0, UINT64_MAX);
        printf("{\"what\":\"round\",\"round\":%d,\"records\":%llu,"
               "\"curr_items_loaded\":%lld,\"load_s\":%.1f,"
               "\"flush_us\":%.1f,\"walk_s\":%.2f,"
               "\"curr_items_after\":%lld,"
               "\"base\":{\"n\":%zu,\"worst_us\":%.1f,\"p99_us\":%.1f,"
               "\"p999_us\":%.1f},"
               "\"flush\":{\"n\":%zu,\"worst_us\":%.1f,\"p99_us\":%.1f,"
               "\"p999_us\":%.1f},"
               "\"during_reply\":{\"n\":%zu,\"worst_us\":%.1f},"
               "\"during_walk\":{\"n\":%zu,\"worst_us\":%.1f,"
               "\"p99_us\":%.1f},"
               "\"after\":{\"n\":%zu,\"worst_us\":%.1f,\"p99_us\":%.1f,"
               "\"p999_us\":%.1f,\"s\":%.1f},"
               "\"worst_ratio\":%.3f,\"worst_ratio_after\":%.3f}\n",
               round, (unsigned long long)nrec, items, load_s, fus,
               (twalk - tr) / 1e9, left, base.n, base.worst_us, base.p99_us,
               base.p999_us, fl.n, fl.worst_us, fl.p99_us, fl.p999_us, at.n,
               at.worst_us, walk.n, walk.worst_us, walk.p99_us, after.n,
               after.worst_us, after.p99_us, after.p999_us, flen / 1e9,
               base.worst_us > 0 ? fl.worst_us / base.worst_us : 0,
               after.worst_us > 0 ? fl.worst_us / after.worst_us : 0);
        fflush(stdout);
    }
    close(ctl);
    return 0;
}
