/*
 * store_bench.c - operations per second and bytes per record of the store.
 *
 * Drives server/core/store.h directly (no network): get, put, put with 3 tags,
 * get_by_tag and del_by_tag (tags carried by 100 records each), with 1 and
 * 2 threads, at several record counts (16-byte keys, 32-byte values, random
 * keys generated up front and accessed in a random order).  Each record count
 * runs in a forked child so the RSS delta of loading it is not blurred by
 * memory the allocator kept from a previous, larger run.  Issue 2 item 10;
 * results and command lines go to docs/performance.md.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/core/store.h"

#define KEY_LEN 16
#define VAL_LEN 32
#define TAG_GROUP 100       /* records carrying each tag */
#define MAX_TAGGED 1000000u /* records tagged for the tag queries */
#define MAX_LIST 16

enum op {
    OP_LOAD,
    OP_GET,
    OP_PUT,
    OP_PUT_TAGS,
    OP_GET_BY_TAG,
    OP_DEL_BY_TAG,
    OP_GET_PRIVATE, /* get, each thread its own store (share-nothing) */
    OP_GET_PF,      /* get in batches: store_prefetch of each key first */
    OP_GET_BATCH,   /* get in batches: store_get_batch */
    OP__COUNT
};
static const char *const op_names[OP__COUNT] = {
    "load", "get", "put", "put_3tags", "get_by_tag", "del_by_tag",
    "get_private", "get_pf", "get_batch",
};

/* One measured figure, sent from the child to the parent through a pipe. */
struct result {
    uint64_t records;
    uint32_t nbuckets_opt; /* what -b asked for (0 = default) */
    uint32_t threads;      /* 0 for the memory row */
    int op;                /* enum op, or -1 for the memory row */
    uint64_t ops;
    uint64_t items; /* records returned / deleted by tag queries */
    uint64_t misses;
    double secs;
    double min_rate, max_rate; /* over the repeats; the figure is the median */
    double cpu_secs;           /* the workers' own CPU time (all threads) */
    double cpu_min, cpu_max;   /* CPU ns per op over the repeats */
    /* memory row */
    uint64_t nbuckets;
    uint64_t rss_delta;
    uint64_t acct_bytes;
    uint64_t fixed_bytes;
};

static struct {
    uint64_t counts[MAX_LIST];
    int ncounts;
    uint32_t threads[MAX_LIST];
    int nthreads;
    uint32_t buckets[MAX_LIST];
    int nbuckets;
    double window;
    int repeat;
    size_t mem_mib;
    bool pin;
    unsigned ops_mask;
    const char *json_path;
    const char *csv_path;
    const char *md_path;
    uint64_t seed;
    uint32_t batch;
    size_t chase_mib;
} opt = {
    .counts = {1000, 100000, 1000000, 10000000},
    .ncounts = 4,
    .threads = {1, 2},
    .nthreads = 2,
    .buckets = {0},
    .nbuckets = 1,
    .window = 1.0,
    .repeat = 3,
    .mem_mib = 4096,
    .pin = true,
    .ops_mask = ~0u,
    .seed = 0x6d646361636865ULL,
    .batch = 8,
};

/* ---- helpers ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Unbiased enough for benchmark shuffles: n is far below 2^32. */
static uint32_t rand_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((splitmix64(s) >> 32) * (uint64_t)n) >> 32);
}

static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &res) != 2)
        res = 0;
    fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ---- the data set ----------------------------------------------------- */

struct dataset {
    uint64_t n;
    char *keys;       /* n * KEY_LEN bytes: 16 hex digits of a bijective hash */
    uint32_t *order;  /* a random permutation of 0..n-1 */
    uint32_t ntagged; /* records 0..ntagged-1 carry tags after the tag fill */
    char value[VAL_LEN];
};

static const char *key_of(const struct dataset *ds, uint32_t i)
{
    return ds->keys + (size_t)i * KEY_LEN;
}

static void dataset_init(struct dataset *ds, uint64_t n)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t s = opt.seed;

    ds->n = n;
    ds->keys = malloc((size_t)n * KEY_LEN);
    ds->order = malloc((size_t)n * sizeof(uint32_t));
    if (ds->keys == NULL || ds->order == NULL) {
        fprintf(stderr, "store_bench: out of memory for %" PRIu64 " keys\n", n);
        exit(1);
    }
    for (uint64_t i = 0; i < n; i++) {
        /* splitmix64's output function is a bijection: keys are distinct. */
        uint64_t seq = opt.seed + i * 0x9e3779b97f4a7c15ULL,
                 h = splitmix64(&seq);
        char *k = ds->keys + i * KEY_LEN;
        for (int j = 0; j < KEY_LEN; j++)
            k[j] = hex[(h >> (4 * j)) & 15];
        ds->order[i] = (uint32_t)i;
    }
    for (uint64_t i = n - 1; i > 0; i--) {
        uint32_t j = rand_below(&s, (uint32_t)(i + 1));
        uint32_t t = ds->order[i];
        ds->order[i] = ds->order[j];
        ds->order[j] = t;
    }
    for (int j = 0; j < VAL_LEN; j++)
        ds->value[j] = (char)('a' + j % 26);
    ds->ntagged = (uint32_t)(n < MAX_TAGGED ? n : MAX_TAGGED);
}

/*
 * Record i carries three tags, each shared by TAG_GROUP records:
 * (1, i/100) and (3, i/100) group consecutive indices, (2, ...) groups every
 * 100th index inside a block of 10 000.  Indices map to random keys, so no
 * group is clustered in the record forest.
 */
static void tags_of(uint32_t i, struct mdc_tag t[3])
{
    t[0] = (struct mdc_tag){1, (int32_t)(i / TAG_GROUP)};
    t[1] = (struct mdc_tag){2, (int32_t)((i / 10000) * 100 + i % 100)};
    t[2] = (struct mdc_tag){3, (int32_t)(i / TAG_GROUP) ^ 0x5bd1e995};
}

static int put_one(struct store *st, const struct dataset *ds, uint32_t i,
                   bool tagged)
{
    struct mdc_tag tags[3];
    struct store_item it = {
        .key = key_of(ds, i),
        .klen = KEY_LEN,
        .value = ds->value,
        .vlen = VAL_LEN,
    };
    if (tagged) {
        tags_of(i, tags);
        it.tags = tags;
        it.ntags = 3;
    }
    return store_put(st, STORE_SET, &it, NULL);
}

/* ---- measured loops ----------------------------------------------------- */

/*
 * A server finds the key in its (hot) receive buffer; here the key array is
 * 160 MB at 10^7 records, so fetch a key a few operations ahead to keep the
 * benchmark's own cache misses out of the figures.
 */
#define PREFETCH_AHEAD 8
static inline void prefetch_key(const struct dataset *ds, uint64_t pos)
{
    pos += PREFETCH_AHEAD;
    if (pos >= ds->n)
        pos -= ds->n;
    __builtin_prefetch(key_of(ds, ds->order[pos]));
}

struct worker {
    pthread_t tid;
    int id, nthreads;
    enum op op;
    struct store *st;
    struct dataset *ds;
    pthread_barrier_t *bar;
    double deadline_len;
    uint64_t ops, items, misses;
    double busy; /* del_by_tag: seconds inside the call only */
    double t0, t1;
    double cpu;    /* this thread's CPU seconds in the window */
    double cpu_in; /* del_by_tag: CPU seconds inside the calls only */
    uint64_t rng;
};

#define CHECK_EVERY 256

static void run_get(struct worker *w)
{
    const struct dataset *ds = w->ds;
    uint64_t pos = (ds->n / (uint64_t)w->nthreads) * (uint64_t)w->id;
    double end = w->t0 + w->deadline_len;
    unsigned sink = 0;

    for (;;) {
        for (int k = 0; k < CHECK_EVERY; k++) {
            uint32_t i = ds->order[pos];
            if (++pos == ds->n)
                pos = 0;
            prefetch_key(ds, pos);
            struct record *r = store_get(w->st, key_of(ds, i), KEY_LEN);
            if (r == NULL) {
                w->misses++;
                continue;
            }
            sink += *(const unsigned char *)record_value(r);
            store_release(w->st, r);
        }
        w->ops += CHECK_EVERY;
        if (now_s() >= end)
            break;
    }
    w->items = sink & 1; /* keep the value read from being optimised out */
}

#define MAX_BATCH 64
/*
 * get_pf and get_batch: keys in batches of opt.batch, as a server's multi-get
 * or pipelined requests would present them.  get_pf is what the text
 * protocol did before store_prefetch_batch (store_prefetch of every key of
 * the batch, then store_get each); get_batch calls store_get_batch.  Every
 * record's value is read and released, as in get.
 */
static void run_get_batched(struct worker *w, bool api)
{
    const struct dataset *ds = w->ds;
    uint64_t pos = (ds->n / (uint64_t)w->nthreads) * (uint64_t)w->id;
    double end = w->t0 + w->deadline_len;
    unsigned sink = 0;
    uint32_t nb = opt.batch;
    const char *kp[MAX_BATCH];
    struct record *recs[MAX_BATCH];
#ifdef STORE_HAVE_BATCH
    struct store_key keys[MAX_BATCH];
#else
    if (api)
        return; /* the store under test has no batch API */
#endif
    for (;;) {
        for (int k = 0; k < CHECK_EVERY; k += (int)nb) {
            for (uint32_t j = 0; j < nb; j++) {
                uint32_t i = ds->order[pos];
                if (++pos == ds->n)
                    pos = 0;
                prefetch_key(ds, pos + nb);
#ifdef STORE_HAVE_BATCH
                keys[j] = (struct store_key){key_of(ds, i), KEY_LEN};
#endif
                kp[j] = key_of(ds, i);
                if (!api)
                    store_prefetch(w->st, kp[j], KEY_LEN);
            }
            if (api) {
#ifdef STORE_HAVE_BATCH
                store_get_batch(w->st, keys, nb, recs);
#endif
            } else {
                for (uint32_t j = 0; j < nb; j++)
                    recs[j] = store_get(w->st, kp[j], KEY_LEN);
            }
            for (uint32_t j = 0; j < nb; j++) {
                if (recs[j] == NULL) {
                    w->misses++;
                    continue;
                }
                sink += *(const unsigned char *)record_value(recs[j]);
                store_release(w->st, recs[j]);
            }
            w->ops += nb;
        }
        if (now_s() >= end)
            break;
    }
    w->items = sink & 1;
}

static void run_put(struct worker *w, bool tagged)
{
    const struct dataset *ds = w->ds;
    uint64_t pos = (ds->n / (uint64_t)w->nthreads) * (uint64_t)w->id;
    double end = w->t0 + w->deadline_len;

    for (;;) {
        for (int k = 0; k < CHECK_EVERY; k++) {
            uint32_t i = ds->order[pos];
            if (++pos == ds->n)
                pos = 0;
            prefetch_key(ds, pos);
            if (put_one(w->st, ds, i, tagged) != ST_OK)
                w->misses++;
        }
        w->ops += CHECK_EVERY;
        if (now_s() >= end)
            break;
    }
}

static void run_get_by_tag(struct worker *w)
{
    uint32_t ngroups = w->ds->ntagged / TAG_GROUP;
    double end = w->t0 + w->deadline_len;

    if (ngroups == 0)
        return;
    for (;;) {
        for (int k = 0; k < 16; k++) {
            int32_t tv = (int32_t)rand_below(&w->rng, ngroups);
            struct store_recset set = {0};
            int rc = store_get_by_tag(w->st, 1, &tv, 1, &set);
            if (rc != ST_OK)
                w->misses++;
            w->items += set.n;
            store_recset_release(w->st, &set);
        }
        w->ops += 16;
        if (now_s() >= end)
            break;
    }
}

/*
 * del_by_tag empties a group, so between calls the group is put back (not
 * timed).  Thread t owns the groups g with g % nthreads == t; each record is in
 * exactly one (1, g) group, so refills never race with another thread's.
 */
static void run_del_by_tag(struct worker *w)
{
    uint32_t ngroups = w->ds->ntagged / TAG_GROUP;
    uint32_t mine = (ngroups + (uint32_t)w->nthreads - 1 - (uint32_t)w->id) /
                    (uint32_t)w->nthreads;
    double end = w->t0 + w->deadline_len;

    if (mine == 0)
        return;
    while (now_s() < end) {
        uint32_t g =
            rand_below(&w->rng, mine) * (uint32_t)w->nthreads + (uint32_t)w->id;
        int32_t tv = (int32_t)g;
        uint64_t ndel = 0;
        double a = now_s();
        struct timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        int rc = store_del_by_tag(w->st, 1, &tv, 1, &ndel);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        w->busy += now_s() - a;
        w->cpu_in += (double)(c1.tv_sec - c0.tv_sec) +
                     (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
        if (rc != ST_OK)
            w->misses++;
        w->ops++;
        w->items += ndel;
        for (uint32_t i = g * TAG_GROUP; i < (g + 1) * TAG_GROUP; i++)
            put_one(w->st, w->ds, i, true);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    if (opt.pin)
        pin_to(w->id);
    pthread_barrier_wait(w->bar);
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    w->t0 = now_s();
    switch (w->op) {
    case OP_GET:
    case OP_GET_PRIVATE: run_get(w); break;
    case OP_GET_PF: run_get_batched(w, false); break;
    case OP_GET_BATCH: run_get_batched(w, true); break;
    case OP_PUT: run_put(w, false); break;
    case OP_PUT_TAGS: run_put(w, true); break;
    case OP_GET_BY_TAG: run_get_by_tag(w); break;
    case OP_DEL_BY_TAG: run_del_by_tag(w); break;
    default: break;
    }
    w->t1 = now_s();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    w->cpu = (double)(c1.tv_sec - c0.tv_sec) +
             (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    return NULL;
}

/* 'own' (OP_GET_PRIVATE): thread t reads its own store own[t]. */
static struct result measure(struct store *st, struct dataset *ds, enum op op,
                             uint32_t nthreads, struct store **own)
{
    struct worker w[MAX_LIST];
    pthread_barrier_t bar;
    struct result res = {.records = ds->n, .threads = nthreads, .op = op};
    double t0 = 1e300, t1 = 0, rate = 0;

    pthread_barrier_init(&bar, NULL, nthreads);
    for (uint32_t t = 0; t < nthreads; t++) {
        w[t] = (struct worker){
            .id = (int)t,
            .nthreads = (int)nthreads,
            .op = op,
            .st = own != NULL ? own[t] : st,
            .ds = ds,
            .bar = &bar,
            .deadline_len = opt.window,
            .rng = opt.seed ^ (0x1234567ULL * (t + 1)) ^ (uint64_t)op,
        };
        pthread_create(&w[t].tid, NULL, worker_main, &w[t]);
    }
    for (uint32_t t = 0; t < nthreads; t++) {
        pthread_join(w[t].tid, NULL);
        res.ops += w[t].ops;
        res.items += w[t].items;
        res.misses += w[t].misses;
        res.cpu_secs += op == OP_DEL_BY_TAG ? w[t].cpu_in : w[t].cpu;
        if (w[t].t0 < t0)
            t0 = w[t].t0;
        if (w[t].t1 > t1)
            t1 = w[t].t1;
        if (op == OP_DEL_BY_TAG && w[t].busy > 0)
            rate += (double)w[t].ops / w[t].busy;
    }
    pthread_barrier_destroy(&bar);
    res.secs = t1 - t0;
    if (op == OP_DEL_BY_TAG) /* report time inside the calls only */
        res.secs = rate > 0 ? (double)res.ops / rate : 0;
    if (op == OP_GET || op == OP_GET_PRIVATE || op == OP_GET_PF ||
        op == OP_GET_BATCH)
        res.items = 0;
    return res;
}

/* ---- one record count, in a child process ------------------------------ */

static double per_sec(const struct result *r)
{
    return r->secs > 0 ? (double)r->ops / r->secs : 0;
}

static int cmp_rate(const void *a, const void *b)
{
    double x = per_sec(a), y = per_sec(b);
    return x < y ? -1 : x > y;
}

static double cpu_ns(const struct result *r)
{
    return r->ops ? 1e9 * r->cpu_secs / (double)r->ops : 0;
}

/* CPU ns per op: the median window's, and the spread over all windows. */
static void cpu_spread(struct result *r, const struct result *rs, int n)
{
    r->cpu_min = r->cpu_max = cpu_ns(&rs[0]);
    for (int i = 1; i < n; i++) {
        double c = cpu_ns(&rs[i]);
        if (c < r->cpu_min)
            r->cpu_min = c;
        if (c > r->cpu_max)
            r->cpu_max = c;
    }
}

static void emit(int fd, const struct result *r)
{
    if (write(fd, r, sizeof(*r)) != (ssize_t)sizeof(*r))
        _exit(2);
}

/* Untimed: make sure records 0..ntagged-1 all carry their tags.  In the
 * random order, so a group's records are not neighbours in memory. */
static void tag_fill(struct store *st, struct dataset *ds)
{
    for (uint64_t k = 0; k < ds->n; k++)
        if (ds->order[k] < ds->ntagged)
            put_one(st, ds, ds->order[k], true);
}

static void run_count(uint64_t n, uint32_t nbuckets, int fd)
{
    struct dataset ds;
    struct store_config cfg;
    struct store_stats stats;
    struct result mem = {.records = n, .nbuckets_opt = nbuckets, .op = -1};
    uint64_t rss0, rss1, fails = 0;
    struct store *st;
    double t0;

    if (opt.pin)
        pin_to(0);
    dataset_init(&ds, n);
    memset(&cfg, 0, sizeof(cfg));
    cfg.mem_limit = opt.mem_mib << 20;
    cfg.nbuckets = nbuckets;

    rss0 = rss_bytes();
    st = store_setup(&cfg);
    if (st == NULL) {
        fprintf(stderr, "store_bench: store_setup failed\n");
        _exit(1);
    }
    t0 = now_s();
    for (uint64_t k = 0; k < n; k++)
        if (put_one(st, &ds, ds.order[k], false) != ST_OK)
            fails++;
    struct result load = {.records = n,
                          .nbuckets_opt = nbuckets,
                          .threads = 1,
                          .op = OP_LOAD,
                          .ops = n,
                          .misses = fails,
                          .secs = now_s() - t0};
    rss1 = rss_bytes();
    store_get_stats(st, &stats);
    mem.nbuckets = stats.nbuckets;
    mem.rss_delta = rss1 - rss0;
    mem.acct_bytes = stats.bytes;
    mem.fixed_bytes = stats.fixed_bytes;
    mem.ops = stats.curr_items;
    emit(fd, &mem);
    if (opt.ops_mask & (1u << OP_LOAD))
        emit(fd, &load);
    if (stats.curr_items != n)
        fprintf(stderr,
                "store_bench: %" PRIu64 " of %" PRIu64
                " records present after load (evictions %" PRIu64 ")\n",
                stats.curr_items, n, stats.evictions);

    /* get, get_private, get_pf and get_batch alternate: one window each
     * in turn, so that they are measured side by side on a shared machine */
    static const enum op alt[] = {OP_GET, OP_GET_PRIVATE, OP_GET_PF,
                                  OP_GET_BATCH};
    enum op altsel[4];
    int nalt = 0;
    for (int a = 0; a < 4; a++)
        if (opt.ops_mask & (1u << alt[a]))
            altsel[nalt++] = alt[a];
    struct store *own[MAX_LIST] = {NULL};
    uint32_t most = 1;
    if (opt.ops_mask & (1u << OP_GET_PRIVATE)) {
        for (int t = 0; t < opt.nthreads; t++)
            if (opt.threads[t] > most)
                most = opt.threads[t];
        own[0] = st;
        for (uint32_t t = 1; t < most; t++) {
            own[t] = store_setup(&cfg);
            if (own[t] == NULL) {
                fprintf(stderr, "store_bench: store_setup failed\n");
                _exit(1);
            }
            for (uint64_t k = 0; k < n; k++)
                put_one(own[t], &ds, ds.order[k], false);
        }
    }
    for (int t = 0; t < opt.nthreads && nalt > 0; t++) {
        struct result rs[4][MAX_LIST];
        for (int k = 0; k < opt.repeat; k++)
            for (int a = 0; a < nalt; a++)
                rs[a][k] = measure(st, &ds, altsel[a], opt.threads[t],
                                   altsel[a] == OP_GET_PRIVATE ? own : NULL);
        for (int a = 0; a < nalt; a++) {
            qsort(rs[a], (size_t)opt.repeat, sizeof(rs[a][0]), cmp_rate);
            struct result r = rs[a][opt.repeat / 2];
            r.nbuckets_opt = nbuckets;
            r.min_rate = per_sec(&rs[a][0]);
            r.max_rate = per_sec(&rs[a][opt.repeat - 1]);
            cpu_spread(&r, rs[a], opt.repeat);
            if (r.ops > 0)
                emit(fd, &r);
        }
    }
    for (uint32_t t = 1; t < most; t++)
        store_teardown(own[t]);

    static const enum op seq[] = {OP_GET, OP_PUT, OP_PUT_TAGS, OP_GET_BY_TAG,
                                  OP_DEL_BY_TAG};
    for (size_t s = 0; s < sizeof(seq) / sizeof(seq[0]); s++) {
        enum op op = seq[s];
        if (op == OP_GET_BY_TAG &&
            (opt.ops_mask & (1u << OP_GET_BY_TAG | 1u << OP_DEL_BY_TAG)))
            tag_fill(st, &ds);
        if (!(opt.ops_mask & (1u << op)))
            continue;
        if (op == OP_GET)
            continue; /* measured above, alternating with the others */
        for (int t = 0; t < opt.nthreads; t++) {
            struct result rs[MAX_LIST];
            for (int k = 0; k < opt.repeat; k++) {
                rs[k] = measure(st, &ds, op, opt.threads[t], NULL);
                rs[k].nbuckets_opt = nbuckets;
            }
            qsort(rs, (size_t)opt.repeat, sizeof(rs[0]), cmp_rate);
            struct result r = rs[opt.repeat / 2];
            r.min_rate = per_sec(&rs[0]);
            r.max_rate = per_sec(&rs[opt.repeat - 1]);
            cpu_spread(&r, rs, opt.repeat);
            emit(fd, &r);
        }
    }
    store_teardown(st);
}

/* ---- output ------------------------------------------------------------- */

static void print_mem(FILE *f, const struct result *m)
{
    double n = (double)m->records;
    fprintf(f,
            "%10" PRIu64 " %9" PRIu64 " %10" PRIu64 " %12.1f %12.1f %12.1f\n",
            m->records, m->nbuckets, m->fixed_bytes >> 10,
            (double)m->rss_delta / n, (double)m->acct_bytes / n,
            (double)(m->acct_bytes + m->fixed_bytes) / n);
}

static void json_result(FILE *f, const struct result *r, bool first)
{
    fprintf(f, "%s\n    {", first ? "" : ",");
    if (r->op < 0) {
        fprintf(f,
                "\"kind\": \"memory\", \"records\": %" PRIu64
                ", \"buckets_opt\": %u, \"nbuckets\": %" PRIu64
                ", \"present\": %" PRIu64 ", \"rss_delta\": %" PRIu64
                ", \"accounted\": %" PRIu64 ", \"fixed\": %" PRIu64
                ", \"rss_per_record\": %.2f, \"accounted_per_record\": %.2f"
                ", \"accounted_fixed_per_record\": %.2f}",
                r->records, r->nbuckets_opt, r->nbuckets, r->ops, r->rss_delta,
                r->acct_bytes, r->fixed_bytes,
                (double)r->rss_delta / (double)r->records,
                (double)r->acct_bytes / (double)r->records,
                (double)(r->acct_bytes + r->fixed_bytes) / (double)r->records);
    } else {
        fprintf(f,
                "\"kind\": \"ops\", \"op\": \"%s\", \"records\": %" PRIu64
                ", \"buckets_opt\": %u, \"threads\": %u, \"ops\": %" PRIu64
                ", \"secs\": %.6f, \"ops_per_sec\": %.0f, \"items\": %" PRIu64
                ", \"failures\": %" PRIu64
                ", \"repeats\": %d, \"min_ops_per_sec\": %.0f"
                ", \"max_ops_per_sec\": %.0f, \"cpu_ns_per_op\": %.2f"
                ", \"cpu_ns_min\": %.2f, \"cpu_ns_max\": %.2f}",
                op_names[r->op], r->records, r->nbuckets_opt, r->threads,
                r->ops, r->secs, per_sec(r), r->items, r->misses, opt.repeat,
                r->op == OP_LOAD ? per_sec(r) : r->min_rate,
                r->op == OP_LOAD ? per_sec(r) : r->max_rate, cpu_ns(r),
                r->cpu_min, r->cpu_max);
    }
}

static void csv_result(FILE *f, const struct result *r)
{
    if (r->op < 0)
        fprintf(f,
                "memory,%" PRIu64 ",%u,%" PRIu64 ",,,,,,%" PRIu64 ",%" PRIu64
                ",%" PRIu64 "\n",
                r->records, r->nbuckets_opt, r->nbuckets, r->rss_delta,
                r->acct_bytes, r->fixed_bytes);
    else
        fprintf(f,
                "%s,%" PRIu64 ",%u,,%u,%" PRIu64 ",%.6f,%.0f,%" PRIu64 ",,,\n",
                op_names[r->op], r->records, r->nbuckets_opt, r->threads,
                r->ops, r->secs, per_sec(r), r->items);
}

/* Two pivot tables: ops/s by record count x (op, threads), and memory. */
static void write_markdown(FILE *f, const struct result *all, size_t nall)
{
    fprintf(f, "| records | buckets |");
    for (int op = 0; op < OP__COUNT; op++)
        for (int t = 0; t < opt.nthreads; t++)
            if ((opt.ops_mask & (1u << op)) && (op != OP_LOAD || t == 0))
                fprintf(f, " %s %u thr |", op_names[op],
                        op == OP_LOAD ? 1 : opt.threads[t]);
    fprintf(f, "\n|---:|---:|");
    for (int op = 0; op < OP__COUNT; op++)
        for (int t = 0; t < opt.nthreads; t++)
            if ((opt.ops_mask & (1u << op)) && (op != OP_LOAD || t == 0))
                fprintf(f, "---:|");
    fprintf(f, "\n");
    for (size_t i = 0; i < nall; i++) {
        if (all[i].op >= 0)
            continue;
        fprintf(f, "| %" PRIu64 " | %" PRIu64 " |", all[i].records,
                all[i].nbuckets);
        for (int op = 0; op < OP__COUNT; op++)
            for (int t = 0; t < opt.nthreads; t++) {
                if (!(opt.ops_mask & (1u << op)) || (op == OP_LOAD && t > 0))
                    continue;
                const struct result *r = NULL;
                for (size_t j = i + 1; j < nall && all[j].op >= 0; j++)
                    if (all[j].op == op &&
                        (op == OP_LOAD || all[j].threads == opt.threads[t]))
                        r = &all[j];
                if (r == NULL)
                    fprintf(f, " - |");
                else if (per_sec(r) >= 1e6)
                    fprintf(f, " %.2f M |", per_sec(r) / 1e6);
                else
                    fprintf(f, " %.0f k |", per_sec(r) / 1e3);
            }
        fprintf(f, "\n");
    }
    fprintf(f, "\n| records | buckets | fixed (bucket arrays, locks) | RSS "
               "delta / record |"
               " accounted / record | accounted + fixed / record |\n"
               "|---:|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < nall; i++)
        if (all[i].op < 0) {
            double n = (double)all[i].records;
            fprintf(f,
                    "| %" PRIu64 " | %" PRIu64
                    " | %.1f MiB | %.1f B | %.1f B | %.1f B |\n",
                    all[i].records, all[i].nbuckets,
                    (double)all[i].fixed_bytes / 1048576.0,
                    (double)all[i].rss_delta / n, (double)all[i].acct_bytes / n,
                    (double)(all[i].acct_bytes + all[i].fixed_bytes) / n);
        }
}

/* ---- options ------------------------------------------------------------ */

static int parse_list(const char *s, uint64_t *out, int max)
{
    int n = 0;
    while (*s != '\0' && n < max) {
        char *end;
        double v = strtod(s, &end); /* accepts 1e7 */
        if (end == s || v < 0)
            return -1;
        out[n++] = (uint64_t)(v + 0.5);
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return n;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: store_bench [options]\n"
        "  -n, --records LIST   record counts (default 1e3,1e5,1e6,1e7)\n"
        "  -t, --threads LIST   thread counts (default 1,2)\n"
        "  -b, --buckets LIST   bucket counts, 0 = store default (default 0)\n"
        "  -m, --mem MIB        store memory limit (default 4096, like W6's "
        "-m)\n"
        "  -d, --window SECS    measurement window (default 1)\n"
        "  -R, --repeat N       windows per figure; the median is reported "
        "(3)\n"
        "  -o, --ops LIST       subset of "
        "load,get,put,put_3tags,get_by_tag,del_by_tag,\n"
        "                       get_private (get with each thread its own "
        "store:\n"
        "                       the share-nothing baseline), get_pf "
        "(batches:\n"
        "                       store_prefetch of each key, then store_get "
        "each),\n"
        "                       get_batch (batches: store_get_batch); the "
        "four\n"
        "                       alternate window by window\n"
        "  -B, --batch N        keys per batch of get_pf and get_batch "
        "(default 8)\n"
        "      --no-pin         do not pin thread i to CPU i\n"
        "      --json FILE      machine-readable results ('-' = stdout)\n"
        "      --csv FILE       CSV results\n"
        "      --markdown FILE  Markdown tables (Mops/s; bytes per record)\n"
        "      --seed N         key and order seed\n"
        "      --chase MIB      only measure a dependent random load (a "
        "pointer\n"
        "                       chase over a MIB array: the DRAM miss the "
        "XDP\n"
        "                       figures are set against), print ns per load\n");
}

static unsigned parse_ops(const char *s)
{
    unsigned mask = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < OP__COUNT; k++)
            if (strcmp(tok, op_names[k]) == 0)
                break;
        if (k == OP__COUNT) {
            fprintf(stderr, "store_bench: unknown op '%s'\n", tok);
            exit(64);
        }
        mask |= 1u << k;
    }
    return mask;
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"records", required_argument, NULL, 'n'},
        {"threads", required_argument, NULL, 't'},
        {"buckets", required_argument, NULL, 'b'},
        {"mem", required_argument, NULL, 'm'},
        {"window", required_argument, NULL, 'd'},
        {"repeat", required_argument, NULL, 'R'},
        {"ops", required_argument, NULL, 'o'},
        {"no-pin", no_argument, NULL, 'P'},
        {"json", required_argument, NULL, 'J'},
        {"csv", required_argument, NULL, 'C'},
        {"markdown", required_argument, NULL, 'M'},
        {"seed", required_argument, NULL, 'S'},
        {"batch", required_argument, NULL, 'B'},
        {"chase", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t list[MAX_LIST];
    int c, n;

    while ((c = getopt_long(argc, argv, "n:t:b:m:d:R:o:B:h", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            if ((opt.ncounts = parse_list(optarg, opt.counts, MAX_LIST)) <= 0)
                goto bad;
            for (int i = 0; i < opt.ncounts; i++)
                if (opt.counts[i] < 1 || opt.counts[i] > UINT32_MAX)
                    goto bad;
            break;
        case 't':
            if ((n = parse_list(optarg, list, MAX_LIST)) <= 0)
                goto bad;
            for (int i = 0; i < n; i++) {
                if (list[i] < 1 || list[i] > MAX_LIST)
                    goto bad;
                opt.threads[i] = (uint32_t)list[i];
            }
            opt.nthreads = n;
            break;
        case 'b':
            if ((n = parse_list(optarg, list, MAX_LIST)) <= 0)
                goto bad;
            for (int i = 0; i < n; i++) {
                if (list[i] > (1u << 31) || (list[i] & (list[i] - 1)) != 0)
                    goto bad; /* 0 or a power of two */
                opt.buckets[i] = (uint32_t)list[i];
            }
            opt.nbuckets = n;
            break;
        case 'm': opt.mem_mib = strtoull(optarg, NULL, 10); break;
        case 'd':
            opt.window = strtod(optarg, NULL);
            if (opt.window <= 0)
                goto bad;
            break;
        case 'R':
            opt.repeat = atoi(optarg);
            if (opt.repeat < 1 || opt.repeat > MAX_LIST)
                goto bad;
            break;
        case 'o': opt.ops_mask = parse_ops(optarg); break;
        case 'P': opt.pin = false; break;
        case 'J': opt.json_path = optarg; break;
        case 'C': opt.csv_path = optarg; break;
        case 'M': opt.md_path = optarg; break;
        case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
        case 'K': opt.chase_mib = strtoull(optarg, NULL, 10); break;
        case 'B':
            opt.batch = (uint32_t)atoi(optarg);
            if (opt.batch < 1 || opt.batch > MAX_BATCH)
                goto bad;
            break;
        case 'h': usage(stdout); exit(0);
        default: goto bad;
        }
    }
    return;
bad:
    usage(stderr);
    exit(64);
}

/* ---- main --------------------------------------------------------------- */

/* A random cyclic permutation of 64-byte lines (Sattolo), chased: each load
 * depends on the previous one.  Median of 5 passes of 2^22 loads. */
static int run_chase(size_t mib)
{
    size_t n = (mib << 20) / 64;
    uint64_t *a = NULL, s = opt.seed;
    double t[5];

    if (n < 2 || posix_memalign((void **)&a, 64, n * 64) != 0) {
        fprintf(stderr, "store_bench: no memory for the chase\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        a[i * 8] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rand_below(&s, (uint32_t)i);
        uint64_t x = a[i * 8];
        a[i * 8] = a[j * 8];
        a[j * 8] = x;
    }
    if (opt.pin)
        pin_to(0);
    uint64_t p = 0;
    for (int k = 0; k < 5; k++) {
        double t0 = now_s();
        for (int i = 0; i < (1 << 22); i++)
            p = a[p * 8];
        t[k] = (now_s() - t0) / (1 << 22) * 1e9;
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (t[j] < t[i]) {
                double x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    printf("{\"chase_mib\": %zu, \"ns_per_load\": %.1f, \"min\": %.1f, "
           "\"max\": %.1f, \"sink\": %u}\n",
           mib, t[2], t[0], t[4], (unsigned)(p & 1));
    free(a);
    return 0;
}

int main(int argc, char **argv)
{
    struct result *all = NULL;
    size_t nall = 0, cap = 0;
    FILE *json = NULL, *csv = NULL;
    struct utsname un;
    char date[64];
    time_t now = time(NULL);

    parse_args(argc, argv);
    if (opt.chase_mib > 0)
        return run_chase(opt.chase_mib);
    uname(&un);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    setvbuf(stdout, NULL, _IOLBF, 0);
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    printf("store_bench %s on %s (%s), %ld CPUs, load %.2f, median of %d x "
           "%.1f s, "
           "mem limit %zu MiB%s\n",
           date, un.nodename, un.release, sysconf(_SC_NPROCESSORS_ONLN),
           load[0], opt.repeat, opt.window, opt.mem_mib,
           opt.pin ? ", thread i pinned to CPU i" : "");
    printf("%10s %9s %-11s %3s %14s %10s %s\n", "records", "buckets", "op",
           "thr", "ops/s", "ns/op/thr", "note");

    for (int b = 0; b < opt.nbuckets; b++) {
        for (int c = 0; c < opt.ncounts; c++) {
            int fds[2];
            pid_t pid;
            struct result r;

            if (pipe(fds) != 0) {
                perror("pipe");
                return 1;
            }
            fflush(NULL);
            pid = fork();
            if (pid < 0) {
                perror("fork");
                return 1;
            }
            if (pid == 0) {
                close(fds[0]);
                run_count(opt.counts[c], opt.buckets[b], fds[1]);
                _exit(0);
            }
            close(fds[1]);
            while (read(fds[0], &r, sizeof(r)) == (ssize_t)sizeof(r)) {
                if (nall == cap) {
                    cap = cap ? cap * 2 : 64;
                    all = realloc(all, cap * sizeof(*all));
                }
                all[nall++] = r;
                if (r.op < 0) {
                    printf(
                        "%10" PRIu64 " %9" PRIu64 " %-11s %3s %14s %10s"
                        " rss %.1f B/rec, accounted %.1f + fixed %.1f B/rec\n",
                        r.records, r.nbuckets, "memory", "-", "-", "-",
                        (double)r.rss_delta / (double)r.records,
                        (double)r.acct_bytes / (double)r.records,
                        (double)r.fixed_bytes / (double)r.records);
                    continue;
                }
                double ps = per_sec(&r);
                printf("%10" PRIu64 " %9s %-11s %3u %14.0f %10.1f", r.records,
                       "", op_names[r.op], r.threads, ps,
                       ps > 0 ? 1e9 * r.threads / ps : 0.0);
                if (r.op == OP_GET_BY_TAG || r.op == OP_DEL_BY_TAG)
                    printf(" %.1f records/call",
                           r.ops ? (double)r.items / (double)r.ops : 0.0);
                if (r.op != OP_LOAD && opt.repeat > 1)
                    printf(" [%.2f-%.2f M]", r.min_rate / 1e6,
                           r.max_rate / 1e6);
                if (r.op != OP_LOAD && r.cpu_secs > 0)
                    printf(" cpu %.1f ns/op [%.1f-%.1f]", cpu_ns(&r),
                           r.cpu_min, r.cpu_max);
                if (r.misses)
                    printf(" %" PRIu64 " failed", r.misses);
                printf("\n");
            }
            close(fds[0]);
            int status;
            waitpid(pid, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr,
                        "store_bench: child for %" PRIu64
                        " records failed (status %d)\n",
                        opt.counts[c], status);
                return 1;
            }
        }
    }

    printf("\nmemory: %10s %9s %10s %12s %12s %12s\n", "records", "buckets",
           "fixed KiB", "RSS B/rec", "acct B/rec", "acct+fix B/r");
    for (size_t i = 0; i < nall; i++)
        if (all[i].op < 0) {
            printf("        ");
            print_mem(stdout, &all[i]);
        }

    if (opt.json_path != NULL) {
        json = strcmp(opt.json_path, "-") == 0 ? stdout
                                               : fopen(opt.json_path, "w");
        if (json == NULL) {
            perror(opt.json_path);
            return 1;
        }
        fprintf(json,
                "{\n  \"bench\": \"store_bench\", \"date\": \"%s\", \"host\": "
                "\"%s\","
                " \"kernel\": \"%s\", \"cpus\": %ld, \"window_s\": %.3f,"
                " \"mem_limit_mib\": %zu, \"pinned\": %s, \"loadavg\": %.2f,\n "
                " \"results\": [",
                date, un.nodename, un.release, sysconf(_SC_NPROCESSORS_ONLN),
                opt.window, opt.mem_mib, opt.pin ? "true" : "false", load[0]);
        for (size_t i = 0; i < nall; i++)
            json_result(json, &all[i], i == 0);
        fprintf(json, "\n  ]\n}\n");
        if (json != stdout)
            fclose(json);
    }
    if (opt.csv_path != NULL) {
        csv = fopen(opt.csv_path, "w");
        if (csv == NULL) {
            perror(opt.csv_path);
            return 1;
        }
        fprintf(csv,
                "op,records,buckets_opt,nbuckets,threads,ops,secs,ops_per_sec,"
                "items,rss_delta,accounted,fixed\n");
        for (size_t i = 0; i < nall; i++)
            csv_result(csv, &all[i]);
        fclose(csv);
    }
    if (opt.md_path != NULL) {
        FILE *md = fopen(opt.md_path, "w");
        if (md == NULL) {
            perror(opt.md_path);
            return 1;
        }
        write_markdown(md, all, nall);
        fclose(md);
    }
    free(all);
    return 0;
}
