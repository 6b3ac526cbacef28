/*
 * stampede.c - the tag invalidation stampede bench
 * (docs/performance-history.md, "Tag invalidation without a stampede").
 *
 * N records under one tag, C client threads reading them read-through
 * (Zipf-distributed keys by default: hot records are what stampedes).  The
 * "database" is a pool of D slots shared by the clients (a semaphore); a
 * recompute holds one slot for R microseconds.  After a warm phase the
 * main thread invalidates the tag once, and the bench counts, over the
 * reads that start in the following window: recomputations per record
 * read, and the clients' read latency (request sent to value in hand,
 * waiting for a database slot included).
 *
 * Modes:
 *   plain    mdcached, mdc_get; tdel (mdc_del_by_tag); a miss recomputes
 *   stale    mdcached, mdc_lease_get; stale tdel (mdc_del_by_tag_stale):
 *            a reader holding a stale value serves it; the one winner per
 *            record (MDC_ITEM_WIN) refreshes it after its read has been
 *            answered, as Laravel's flexible() defers its refresh
 *   version  memcached with version-key tags (Symfony's TagAwareAdapter
 *            scheme): each record carries the tag version it was computed
 *            at, a read fetches record and version key in one get, an old
 *            version is a miss; invalidation increments the version key
 *
 * Usage: stampede [-m plain|stale|version|all] [-s mdcached-spec]
 *        [-M memcached-host:port] [-n records] [-c clients] [-d slots]
 *        [-r recompute-us] [-z zipf-s (0 = uniform)] [-w warm-s] [-a after-s]
 */
#include "mdcached.h"
#include "load_zipf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum mode { M_PLAIN, M_STALE, M_VERSION };
static const char *const mode_name[] = {"plain", "stale", "version"};

static struct {
    const char *spec, *mc;
    int n, clients, slots, recompute_us;
    double zipf_s, warm_s, after_s;
} opt = {"127.0.0.1:11311", "127.0.0.1:11211", 10000, 64, 4, 1000, 0.99,
         0.5, 1.0};

#define TKEY 1
#define TVAL 1

static sem_t db;
static atomic_int phase; /* 0 warm, 1 after the invalidation, 2 stop */
static int64_t t0_ns;    /* the invalidation sent */
static atomic_uint_fast64_t recomputes, errors, stale_served;
static atomic_uint *rec_count;  /* per record: recomputes in the window */
static atomic_uchar *read_once; /* per record: read in the window */
static struct zipf zipf;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The database: one of D slots for R microseconds. */
static void recompute(int i, bool counted)
{
    struct timespec d = {0, (long)opt.recompute_us * 1000};

    while (sem_wait(&db) != 0 && errno == EINTR)
        ;
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    sem_post(&db);
    if (counted) {
        atomic_fetch_add(&recomputes, 1);
        atomic_fetch_add(&rec_count[i], 1);
    }
}

/* ---- memcached text protocol, just enough for the version scheme ------- */

struct mc {
    int fd;
    char buf[4096];
    size_t len;
};

static int mc_open(struct mc *c)
{
    char host[64];
    const char *colon = strrchr(opt.mc, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int one = 1;

    if (colon == NULL || (size_t)(colon - opt.mc) >= sizeof(host))
        return -1;
    memcpy(host, opt.mc, (size_t)(colon - opt.mc));
    host[colon - opt.mc] = '\0';
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return -1;
    c->len = 0;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
}

static int mc_send(struct mc *c, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(c->fd, s, n);
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One line (without \r\n) into line[]; values here are short. */
static int mc_line(struct mc *c, char *line, size_t cap)
{
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - c->buf) + 1;
            size_t l = n >= 2 ? n - 2 : 0;
            if (l >= cap)
                return -1;
            memcpy(line, c->buf, l);
            line[l] = '\0';
            memmove(c->buf, c->buf + n, c->len - n);
            c->len -= n;
            return 0;
        }
        if (c->len == sizeof(c->buf))
            return -1;
        ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
        if (r <= 0)
            return -1;
        c->len += (size_t)r;
    }
}

/* get rec:<i> tagv: *ver the record's version (0 absent), *cur the tag's. */
static int mc_get2(struct mc *c, int i, long *ver, long *cur)
{
    char req[64], line[256], key[64];
    long v;
    int n = snprintf(req, sizeof(req), "get rec:%d tagv\r\n", i);

    *ver = 0;
    *cur = 0;
    if (mc_send(c, req, (size_t)n) != 0)
        return -1;
    for (;;) {
        if (mc_line(c, line, sizeof(line)) != 0)
            return -1;
        if (strcmp(line, "END") == 0)
            return 0;
        if (sscanf(line, "VALUE %63s", key) != 1)
            return -1;
        if (mc_line(c, line, sizeof(line)) != 0) /* the data line */
            return -1;
        v = strtol(line, NULL, 10);
        if (strcmp(key, "tagv") == 0)
            *cur = v;
        else
            *ver = v;
    }
}

static int mc_cmd(struct mc *c, const char *req, size_t n, const char *want)
{
    char line[256];
    if (mc_send(c, req, n) != 0 || mc_line(c, line, sizeof(line)) != 0)
        return -1;
    return strncmp(line, want, strlen(want)) == 0 ? 0 : -1;
}

static int mc_set_rec(struct mc *c, int i, long ver)
{
    char val[64], req[160];
    int vl = snprintf(val, sizeof(val), "%ld:value-of-%d", ver, i);
    int n = snprintf(req, sizeof(req), "set rec:%d 0 0 %d\r\n%s\r\n", i, vl,
                     val);
    return mc_cmd(c, req, (size_t)n, "STORED");
}

/* ---- the clients ------------------------------------------------------- */

struct client {
    pthread_t th;
    enum mode mode;
    uint64_t rng;
    uint32_t *lat_us; /* latencies of the reads started in the window */
    size_t nlat, cap;
};

static double u01(void *p)
{
    uint64_t *s = p; /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int pick(struct client *cl)
{
    if (opt.zipf_s > 0) /* rank 1 = record 0, the hottest */
        return (int)zipf_next(&zipf, u01, &cl->rng) - 1;
    return (int)(u01(&cl->rng) * opt.n);
}

static int mdc_store_rec(mdc_t *m, int i)
{
    char key[32], val[64];
    struct mdc_tag tag = {TKEY, TVAL};
    int kl = snprintf(key, sizeof(key), "rec:%d", i);
    int vl = snprintf(val, sizeof(val), "value-of-%d", i);
    return mdc_set(m, key, (size_t)kl, val, (size_t)vl, 0, 0, &tag, 1);
}

/* One read-through each; the caller takes the latency when it returns
 * (the value in hand).  read_stale's *refresh: this reader won a stale
 * record and recomputes it after its answer. */
static int read_plain(mdc_t *m, int i, bool counted)
{
    char key[32];
    struct mdc_item *it = NULL;
    int kl = snprintf(key, sizeof(key), "rec:%d", i);
    int rc = mdc_get(m, key, (size_t)kl, &it);

    mdc_item_free(it);
    if (rc == MDC_OK)
        return 0;
    if (rc != MDC_NOT_FOUND)
        return -1;
    recompute(i, counted);
    return mdc_store_rec(m, i) == MDC_OK ? 0 : -1;
}

static int read_stale(mdc_t *m, int i, bool counted, bool *refresh)
{
    char key[32];
    int kl = snprintf(key, sizeof(key), "rec:%d", i);

    for (int tries = 0; tries < 10000; tries++) {
        struct mdc_item *it = NULL;
        int rc = mdc_lease_get(m, key, (size_t)kl, 30, 0, &it);
        if (rc != MDC_OK)
            return -1;
        unsigned st = it->state;
        size_t vlen = it->vlen;
        mdc_item_free(it);
        if (st & MDC_ITEM_STALE)
            atomic_fetch_add(&stale_served, 1);
        if ((st & MDC_ITEM_WIN) && vlen > 0) {
            *refresh = true; /* serve the stale value, refresh after */
            return 0;
        }
        if (st & MDC_ITEM_WIN) { /* a vivified miss: nothing to serve */
            recompute(i, counted);
            return mdc_store_rec(m, i) == MDC_OK ? 0 : -1;
        }
        if (vlen > 0 || !(st & MDC_ITEM_PENDING))
            return 0;
        struct timespec d = {0, 200000}; /* an empty stub: wait for it */
        nanosleep(&d, NULL);
    }
    return -1;
}

static int read_version(struct mc *c, int i, bool counted)
{
    long ver, cur;
    if (mc_get2(c, i, &ver, &cur) != 0)
        return -1;
    if (ver != 0 && ver >= cur)
        return 0;
    recompute(i, counted); /* absent, or computed at an older version */
    return mc_set_rec(c, i, cur);
}

static void lat_push(struct client *cl, uint32_t us)
{
    if (cl->nlat == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 65536;
        uint32_t *p = realloc(cl->lat_us, cap * sizeof(*p));
        if (p == NULL)
            return;
        cl->lat_us = p;
        cl->cap = cap;
    }
    cl->lat_us[cl->nlat++] = us;
}

static void *client_main(void *arg)
{
    struct client *cl = arg;
    mdc_t *m = NULL;
    struct mc mc = {.fd = -1};

    if (cl->mode == M_VERSION) {
        if (mc_open(&mc) != 0) {
            atomic_fetch_add(&errors, 1);
            return NULL;
        }
    } else if ((m = mdc_create(opt.spec)) == NULL) {
        atomic_fetch_add(&errors, 1);
        return NULL;
    }
    while (atomic_load(&phase) != 2) {
        int i = pick(cl);
        int64_t start = now_ns();
        bool in_window = atomic_load(&phase) == 1 &&
                         start < t0_ns + (int64_t)(opt.after_s * 1e9);
        bool refresh = false;
        int rc;

        switch (cl->mode) {
        case M_PLAIN: rc = read_plain(m, i, in_window); break;
        case M_STALE: rc = read_stale(m, i, in_window, &refresh); break;
        default: rc = read_version(&mc, i, in_window); break;
        }
        if (rc != 0)
            atomic_fetch_add(&errors, 1);
        if (in_window) {
            lat_push(cl, (uint32_t)((now_ns() - start) / 1000));
            atomic_store(&read_once[i], 1);
        }
        if (refresh) { /* the winner's recompute, off the read path */
            recompute(i, in_window);
            if (mdc_store_rec(m, i) != MDC_OK)
                atomic_fetch_add(&errors, 1);
        }
    }
    mdc_destroy(m);
    if (mc.fd >= 0)
        close(mc.fd);
    return NULL;
}

/* ---- one run ------------------------------------------------------------ */

static int populate(enum mode mode, mdc_t *m, struct mc *c)
{
    if (mode == M_VERSION) {
        if (mc_cmd(c, "flush_all\r\n", 11, "OK") != 0 ||
            mc_cmd(c, "set tagv 0 0 1\r\n1\r\n", 19, "STORED") != 0)
            return -1;
        for (int i = 0; i < opt.n; i++)
            if (mc_set_rec(c, i, 1) != 0)
                return -1;
        return 0;
    }
    if (mdc_flush(m) != MDC_OK)
        return -1;
    for (int i = 0; i < opt.n; i++)
        if (mdc_store_rec(m, i) != MDC_OK)
            return -1;
    return 0;
}

static int invalidate(enum mode mode, mdc_t *m, struct mc *c)
{
    int32_t tv = TVAL;
    switch (mode) {
    case M_PLAIN: return mdc_del_by_tag(m, TKEY, &tv, 1, NULL);
    case M_STALE: return mdc_del_by_tag_stale(m, TKEY, &tv, 1, 0, NULL);
    default: return mc_cmd(c, "incr tagv 1\r\n", 13, "2");
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int run(enum mode mode)
{
    struct client *cl = calloc((size_t)opt.clients, sizeof(*cl));
    mdc_t *m = mode == M_VERSION ? NULL : mdc_create(opt.spec);
    struct mc c = {.fd = -1};
    struct timespec warm = {(time_t)opt.warm_s,
                            (long)((opt.warm_s - (time_t)opt.warm_s) * 1e9)};
    struct timespec after = {(time_t)opt.after_s,
                             (long)((opt.after_s - (time_t)opt.after_s) * 1e9)};
    int rc = -1;

    if (cl == NULL || (mode != M_VERSION && m == NULL) ||
        (mode == M_VERSION && mc_open(&c) != 0)) {
        fprintf(stderr, "%s: cannot connect\n", mode_name[mode]);
        goto out;
    }
    if (populate(mode, m, &c) != 0) {
        fprintf(stderr, "%s: populate failed: %s\n", mode_name[mode],
                m ? mdc_errstr(m) : "memcached");
        goto out;
    }
    for (int i = 0; i < opt.n; i++) {
        atomic_store(&rec_count[i], 0);
        atomic_store(&read_once[i], 0);
    }
    atomic_store(&recomputes, 0);
    atomic_store(&errors, 0);
    atomic_store(&stale_served, 0);
    atomic_store(&phase, 0);
    for (int t = 0; t < opt.clients; t++) {
        cl[t].mode = mode;
        cl[t].rng = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
        pthread_create(&cl[t].th, NULL, client_main, &cl[t]);
    }
    nanosleep(&warm, NULL);
    /* the window opens as the invalidation is sent, so that every read
     * that can see its effect is counted */
    t0_ns = now_ns();
    atomic_store(&phase, 1);
    if (invalidate(mode, m, &c) != 0) {
        fprintf(stderr, "%s: invalidation failed\n", mode_name[mode]);
        atomic_fetch_add(&errors, 1);
    }
    nanosleep(&after, NULL);
    atomic_store(&phase, 2);
    for (int t = 0; t < opt.clients; t++)
        pthread_join(cl[t].th, NULL);

    size_t nlat = 0, k = 0;
    for (int t = 0; t < opt.clients; t++)
        nlat += cl[t].nlat;
    uint32_t *all = malloc((nlat ? nlat : 1) * sizeof(*all));
    for (int t = 0; t < opt.clients; t++) {
        memcpy(all + k, cl[t].lat_us, cl[t].nlat * sizeof(*all));
        k += cl[t].nlat;
    }
    qsort(all, nlat, sizeof(*all), cmp_u32);
    uint64_t nread = 0, maxrc = 0, total = atomic_load(&recomputes);
    for (int i = 0; i < opt.n; i++) {
        nread += atomic_load(&read_once[i]);
        if (atomic_load(&rec_count[i]) > maxrc)
            maxrc = atomic_load(&rec_count[i]);
    }
    printf("%-8s reads %7zu  records read %5llu  recomputes %6llu  "
           "per record read %.3f  max one record %3llu  stale served %7llu  "
           "latency us p50 %6u p99 %6u max %6u  errors %llu\n",
           mode_name[mode], nlat, (unsigned long long)nread,
           (unsigned long long)total, nread ? (double)total / nread : 0.0,
           (unsigned long long)maxrc,
           (unsigned long long)atomic_load(&stale_served),
           nlat ? all[nlat / 2] : 0, nlat ? all[nlat * 99 / 100] : 0,
           nlat ? all[nlat - 1] : 0,
           (unsigned long long)atomic_load(&errors));
    fflush(stdout);
    free(all);
    rc = atomic_load(&errors) ? 1 : 0;
out:
    if (cl != NULL)
        for (int t = 0; t < opt.clients; t++)
            free(cl[t].lat_us);
    free(cl);
    mdc_destroy(m);
    if (c.fd >= 0)
        close(c.fd);
    return rc;
}

int main(int argc, char **argv)
{
    const char *mode = "all";
    int ch, rc = 0;

    while ((ch = getopt(argc, argv, "m:s:M:n:c:d:r:z:w:a:")) != -1) {
        switch (ch) {
        case 'm': mode = optarg; break;
        case 's': opt.spec = optarg; break;
        case 'M': opt.mc = optarg; break;
        case 'n': opt.n = atoi(optarg); break;
        case 'c': opt.clients = atoi(optarg); break;
        case 'd': opt.slots = atoi(optarg); break;
        case 'r': opt.recompute_us = atoi(optarg); break;
        case 'z': opt.zipf_s = atof(optarg); break;
        case 'w': opt.warm_s = atof(optarg); break;
        case 'a': opt.after_s = atof(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-m plain|stale|version|all] [-s spec] "
                            "[-M host:port] [-n records] [-c clients] "
                            "[-d slots] [-r recompute-us] [-z zipf-s] "
                            "[-w warm-s] [-a after-s]\n",
                    argv[0]);
            return 64;
        }
    }
    if (opt.n < 1 || opt.clients < 1 || opt.slots < 1 ||
        opt.recompute_us < 0 || opt.after_s <= 0 || opt.warm_s < 0) {
        fprintf(stderr, "bad arguments\n");
        return 64;
    }
    rec_count = calloc((size_t)opt.n, sizeof(*rec_count));
    read_once = calloc((size_t)opt.n, sizeof(*read_once));
    if (rec_count == NULL || read_once == NULL || sem_init(&db, 0,
                                                           (unsigned)opt.slots))
        return 1;
    if (opt.zipf_s > 0)
        zipf_init(&zipf, (uint64_t)opt.n, opt.zipf_s);
    printf("# %d records under one tag, %d clients, %d database slots, "
           "recompute %d us, keys %s%.2f, window %.1f s after the "
           "invalidation\n",
           opt.n, opt.clients, opt.slots, opt.recompute_us,
           opt.zipf_s > 0 ? "zipf s=" : "uniform ", opt.zipf_s, opt.after_s);
    for (int md = M_PLAIN; md <= M_VERSION; md++)
        if (strcmp(mode, "all") == 0 || strcmp(mode, mode_name[md]) == 0)
            rc |= run((enum mode)md);
    return rc;
}
