/*
 * w5.c - W5, the tag benchmark (docs/benchmarking.md): the same application
 * behaviour - records with three tags, reads, tagged writes, "all records of
 * a tag" reads and tag invalidations - done three ways:
 *
 *   mdcached   libmdcached: native tags, one request per operation
 *   memcached  libmemcached, Symfony TagAwareAdapter style: a version key
 *              per tag; a record stores the versions of its tags when
 *              written; every read fetches the record, then its tags'
 *              current versions, and treats a mismatch as a miss;
 *              invalidation increments the version (old records stay in
 *              memory until evicted or expired)
 *   redis      hiredis, Laravel style reverse-index sets: SET + SADD per
 *              tag on write (pipelined), SMEMBERS + MGET to read a tag,
 *              SMEMBERS + DEL to invalidate it
 *
 * Data: R records "r:<i>" (100-byte values) with tags (1, i) (own),
 * (2, i / 5) (owner, 5 records) and (3, page): 60 % of records sit on pages
 * of 100-1000 records, the others on pages of 5, so 20 % of tag references
 * are to tags shared by 100-1000 records.  "all records of a tag" on
 * memcached has no index to use: the benchmark hands it the member keys (as
 * an application would take them from its database) and it multi-gets them
 * plus their version keys.
 *
 * Mix per operation: 70 % get (a miss re-creates the record, cache-aside),
 * 20 % tagged set, 8 % get_by_tag, 2 % del_by_tag; the tag of the last two
 * is one of a random record's three tags.  Every target counts its own
 * round trips, so "round trips per read" is measured, not assumed.
 *
 * Modes (one JSON line each on stdout):
 *   w5 -T target -h host -p port load            prefill
 *   w5 ... run -d SEC -c CONNS [-P serverpid] [-n OPS]  mixed workload
 *                                      (-n: at most OPS per connection)
 *   w5 ... inval                                 invalidation latency by size
 *   w5 ... leak -e TTL -w SETTLE                 memory left after expiry
 *   w5 ... w5a -d SEC [-P serverpid] [-g GROUPS]  W5a, the tagged read:
 *          GROUPS tags of exactly 100 records ("a:<g>:<j>", tag (10, g),
 *          100-byte values) are loaded, then each operation fetches the
 *          100 records of a random one - mdcached one get_by_tag; memcached
 *          (Symfony version keys) one multi-get of the 100 keys and one of
 *          the tag's version key, each value checked against it; Redis
 *          SMEMBERS + MGET - for SEC seconds on one connection (the data
 *          is loaded, after a flush, unless an earlier round left it)
 *   w5 ... w5b -d SEC [-g SIZE] [-i PERIOD_MS]   W5b, the invalidation:
 *          every PERIOD_MS (100) a tag (11, 0) is refilled with SIZE
 *          (10 000) records "b:<j>" (one pipelined batch: mdcached mset,
 *          Redis SET + SADD pipeline, memcached multi-set under the tag's
 *          version) and invalidated, timed: mdcached del_by_tag; Redis a Lua
 *          script that SSCANs the tag's set and DELs the members, then the
 *          set (as Symfony's RedisTagAwareAdapter does); memcached an incr
 *          of the version key.  After each invalidation the tag's index is
 *          read back (mdcached get_by_tag, Redis SCARD; memcached keeps the
 *          records).  Run beside W1 (bench/run w5b) for its p99.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <libmemcached/memcached.h>

#include "mdcached.h"

#define VLEN 100
#define NTAGS 3
#define MAXMEMBERS 1000
#define HBUCKETS 12000 /* latency histogram: 1 us to 2 ms, then 100 us */

enum op { OP_GET, OP_SET, OP_GBT, OP_DBT, OP__N, OP_REFILL = OP__N };
static const char *op_names[OP__N] = {"get", "set", "get_by_tag", "del_by_tag"};

struct stats {
    uint64_t ops[OP__N];
    uint64_t rts[OP__N + 1]; /* round trips; refills after a miss apart */
    uint64_t misses;         /* gets that missed (then re-set) */
    uint64_t stale;          /* memcached: hit with an outdated tag version */
    uint64_t errors;
    uint64_t hist[HBUCKETS];
};

/* ---- data model --------------------------------------------------------- */

static uint32_t nrec = 20000;
static uint32_t *page_of;    /* record -> page id */
static uint32_t *page_start; /* page -> first record (pages are ranges) */
static uint32_t npages;
#define SMALL_PAGE 5
#define OWNER_GROUP 5

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void model_build(void)
{
    uint64_t save = rng_state;
    rng_state = 0x5eed5eedull;
    page_of = malloc(nrec * sizeof(*page_of));
    page_start = malloc((nrec + 1) * sizeof(*page_start));
    uint32_t i = 0, shared_end = (uint32_t)(nrec * 0.6);
    npages = 0;
    while (i < nrec) {
        uint32_t size =
            i < shared_end ? 100 + (uint32_t)(rnd() % 901) : SMALL_PAGE;
        if (i < shared_end && i + size > shared_end)
            size = shared_end - i;
        if (i + size > nrec)
            size = nrec - i;
        page_start[npages] = i;
        for (uint32_t j = 0; j < size; j++)
            page_of[i + j] = npages;
        npages++;
        i += size;
    }
    page_start[npages] = nrec;
    rng_state = save;
}

static void rec_tags(uint32_t r, struct mdc_tag t[NTAGS])
{
    t[0] = (struct mdc_tag){1, (int32_t)r};
    t[1] = (struct mdc_tag){2, (int32_t)(r / OWNER_GROUP)};
    t[2] = (struct mdc_tag){3, (int32_t)page_of[r]};
}

/* Members of a tag (records are laid out so that every tag is a range). */
static void tag_range(struct mdc_tag t, uint32_t *first, uint32_t *n)
{
    switch (t.tkey) {
    case 1:
        *first = (uint32_t)t.tval;
        *n = 1;
        break;
    case 2:
        *first = (uint32_t)t.tval * OWNER_GROUP;
        *n = OWNER_GROUP;
        if (*first + *n > nrec)
            *n = nrec - *first;
        break;
    case 3:
        *first = page_start[t.tval];
        *n = page_start[t.tval + 1] - page_start[t.tval];
        break;
    default: /* the invalidation test's own tags: key "inv:<tval>:<j>" */
        *first = 0;
        *n = (uint32_t)t.tval;
        break;
    }
}

static int rec_key(char *buf, uint32_t r)
{
    return sprintf(buf, "r:%" PRIu32, r);
}

static char value[VLEN + 1];

/* ---- targets ------------------------------------------------------------ */

struct target {
    const char *name;
    int (*connect)(struct target *t, const char *host, int port);
    int (*set)(struct target *t, const char *key, size_t klen,
               const struct mdc_tag *tags, size_t ntags, int ttl);
    int (*get)(struct target *t, const char *key, size_t klen, bool *hit);
    /* records of a tag: returns the count read */
    long (*gbt)(struct target *t, struct mdc_tag tag);
    int (*dbt)(struct target *t, struct mdc_tag tag);
    int (*flush)(struct target *t);
    struct stats *st;
    int cur; /* current op, for round-trip accounting */
    void *h;
    void *h2;
};

#define RT(t) ((t)->st->rts[(t)->cur]++)

/* mdcached --------------------------------------------------------------- */

static int mdc_tconnect(struct target *t, const char *host, int port)
{
    char spec[256];
    snprintf(spec, sizeof(spec), "%s:%d", host, port);
    t->h = mdc_create(spec);
    if (t->h == NULL)
        return -1;
    mdc_set_timeouts(t->h, 2000, 10000);
    return mdc_connect(t->h) == MDC_OK ? 0 : -1;
}

static int mdc_tset(struct target *t, const char *key, size_t klen,
                    const struct mdc_tag *tags, size_t ntags, int ttl)
{
    RT(t);
    return mdc_set(t->h, key, klen, value, VLEN, 0, ttl, tags, ntags) == MDC_OK
               ? 0
               : -1;
}

static int mdc_tget(struct target *t, const char *key, size_t klen, bool *hit)
{
    struct mdc_item *it = NULL;
    RT(t);
    int rc = mdc_get(t->h, key, klen, &it);
    *hit = rc == MDC_OK;
    mdc_item_free(it);
    return (rc == MDC_OK || rc == MDC_NOT_FOUND) ? 0 : -1;
}

static long mdc_tgbt(struct target *t, struct mdc_tag tag)
{
    struct mdc_itemset set = {0};
    RT(t);
    int rc = mdc_get_by_tag(t->h, tag.tkey, &tag.tval, 1, &set);
    long n = (long)set.count;
    mdc_itemset_free(&set);
    return rc == MDC_OK ? n : -1;
}

static int mdc_tdbt(struct target *t, struct mdc_tag tag)
{
    RT(t);
    return mdc_del_by_tag(t->h, tag.tkey, &tag.tval, 1, NULL) == MDC_OK ? 0
                                                                        : -1;
}

static int mdc_tflush(struct target *t)
{
    return mdc_flush(t->h) == MDC_OK ? 0 : -1;
}

/* memcached, Symfony-style tag versions --------------------------------------
 */

static int tv_key(char *buf, struct mdc_tag t)
{
    return sprintf(buf, "tv:%" PRId32 ":%" PRId32, t.tkey, t.tval);
}

static int mc_tconnect(struct target *t, const char *host, int port)
{
    memcached_st *mc = memcached_create(NULL);
    if (mc == NULL)
        return -1;
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 10000);
    if (memcached_server_add(mc, host, (in_port_t)port) != MEMCACHED_SUCCESS)
        return -1;
    t->h = mc;
    return memcached_version(mc) == MEMCACHED_SUCCESS ? 0 : -1;
}

/* Fetch versions of n tag keys (one round trip); absent = 0. */
static int mc_versions(struct target *t, char (*keys)[32], size_t n,
                       uint64_t *ver)
{
    const char *kp[MAXMEMBERS * NTAGS];
    size_t kl[MAXMEMBERS * NTAGS];
    memcached_return_t rc;
    for (size_t i = 0; i < n; i++) {
        kp[i] = keys[i];
        kl[i] = strlen(keys[i]);
        ver[i] = 0;
    }
    RT(t);
    rc = memcached_mget(t->h, kp, kl, n);
    if (rc != MEMCACHED_SUCCESS)
        return -1;
    memcached_result_st res, *r;
    memcached_result_create(t->h, &res);
    while ((r = memcached_fetch_result(t->h, &res, &rc)) != NULL) {
        const char *k = memcached_result_key_value(r);
        size_t klen = memcached_result_key_length(r);
        uint64_t v = strtoull(memcached_result_value(r), NULL, 10);
        for (size_t i = 0; i < n; i++)
            if (kl[i] == klen && memcmp(kp[i], k, klen) == 0)
                ver[i] = v;
    }
    memcached_result_free(&res);
    return 0;
}

static int mc_tset(struct target *t, const char *key, size_t klen,
                   const struct mdc_tag *tags, size_t ntags, int ttl)
{
    char keys[NTAGS][32];
    uint64_t ver[NTAGS];
    char buf[VLEN + 128];
    for (size_t i = 0; i < ntags; i++)
        tv_key(keys[i], tags[i]);
    if (mc_versions(t, keys, ntags, ver) < 0)
        return -1;
    /* value = "v1,v2,v3|" + payload */
    int n = 0;
    for (size_t i = 0; i < ntags; i++)
        n += sprintf(buf + n, "%" PRIu64 "%c", ver[i],
                     i + 1 < ntags ? ',' : '|');
    memcpy(buf + n, value, VLEN);
    RT(t);
    return memcached_set(t->h, key, klen, buf, (size_t)n + VLEN, (time_t)ttl,
                         0) == MEMCACHED_SUCCESS
               ? 0
               : -1;
}

/* Check a stored value's versions against the tags' current ones. */
static bool mc_fresh(struct target *t, uint32_t r, const char *val)
{
    struct mdc_tag tags[NTAGS];
    char keys[NTAGS][32];
    uint64_t cur[NTAGS], stored[NTAGS];
    rec_tags(r, tags);
    const char *p = val;
    for (int i = 0; i < NTAGS; i++) {
        stored[i] = strtoull(p, (char **)&p, 10);
        p++;
        tv_key(keys[i], tags[i]);
    }
    if (mc_versions(t, keys, NTAGS, cur) < 0)
        return false;
    for (int i = 0; i < NTAGS; i++)
        if (cur[i] != stored[i])
            return false;
    return true;
}

static int mc_tget(struct target *t, const char *key, size_t klen, bool *hit)
{
    size_t vlen;
    uint32_t flags;
    memcached_return_t rc;
    RT(t);
    char *v = memcached_get(t->h, key, klen, &vlen, &flags, &rc);
    *hit = false;
    if (v == NULL)
        return (rc == MEMCACHED_NOTFOUND) ? 0 : -1;
    uint32_t r = (uint32_t)strtoul(key + 2, NULL, 10);
    if (key[0] == 'r')
        *hit = mc_fresh(t, r, v);
    else
        *hit = true;
    if (!*hit)
        t->st->stale++;
    free(v);
    return 0;
}

static long mc_tgbt(struct target *t, struct mdc_tag tag)
{
    uint32_t first, n;
    static char keys[MAXMEMBERS][32], vkeys[MAXMEMBERS * NTAGS][32];
    static uint64_t cur[MAXMEMBERS * NTAGS];
    static char *vals[MAXMEMBERS];
    static uint32_t recs[MAXMEMBERS];
    const char *kp[MAXMEMBERS];
    size_t kl[MAXMEMBERS];
    memcached_return_t rc;
    long found = 0;

    tag_range(tag, &first, &n);
    if (n > MAXMEMBERS)
        n = MAXMEMBERS;
    for (uint32_t i = 0; i < n; i++) {
        kl[i] = (size_t)rec_key(keys[i], first + i);
        kp[i] = keys[i];
        vals[i] = NULL;
    }
    RT(t);
    if (memcached_mget(t->h, kp, kl, n) != MEMCACHED_SUCCESS)
        return -1;
    memcached_result_st res, *r;
    memcached_result_create(t->h, &res);
    size_t nv = 0;
    while ((r = memcached_fetch_result(t->h, &res, &rc)) != NULL) {
        uint32_t rec =
            (uint32_t)strtoul(memcached_result_key_value(r) + 2, NULL, 10);
        if (rec < first || rec >= first + n)
            continue;
        vals[rec - first] = strdup(memcached_result_value(r));
    }
    memcached_result_free(&res);
    /* one multi-get of the distinct version keys of what was found */
    for (uint32_t i = 0; i < n; i++) {
        if (vals[i] == NULL)
            continue;
        struct mdc_tag tags[NTAGS];
        rec_tags(first + i, tags);
        recs[i] = first + i;
        for (int k = 0; k < NTAGS; k++) {
            char kb[32];
            tv_key(kb, tags[k]);
            size_t j;
            for (j = 0; j < nv; j++)
                if (strcmp(vkeys[j], kb) == 0)
                    break;
            if (j == nv)
                strcpy(vkeys[nv++], kb);
        }
    }
    if (nv > 0 && mc_versions(t, vkeys, nv, cur) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (vals[i] == NULL)
            continue;
        struct mdc_tag tags[NTAGS];
        rec_tags(recs[i], tags);
        const char *p = vals[i];
        bool fresh = true;
        for (int k = 0; k < NTAGS && fresh; k++) {
            uint64_t sv = strtoull(p, (char **)&p, 10);
            p++;
            char kb[32];
            tv_key(kb, tags[k]);
            for (size_t j = 0; j < nv; j++)
                if (strcmp(vkeys[j], kb) == 0 && cur[j] != sv)
                    fresh = false;
        }
        found += fresh;
        free(vals[i]);
    }
    return found;
}

static int mc_tdbt(struct target *t, struct mdc_tag tag)
{
    char key[32];
    uint64_t v;
    int n = tv_key(key, tag);
    RT(t);
    memcached_return_t rc = memcached_increment(t->h, key, (size_t)n, 1, &v);
    if (rc == MEMCACHED_NOTFOUND) {
        RT(t);
        rc = memcached_add(t->h, key, (size_t)n, "1", 1, 0, 0);
        if (rc == MEMCACHED_NOTSTORED)
            rc = MEMCACHED_SUCCESS;
    }
    return rc == MEMCACHED_SUCCESS ? 0 : -1;
}

static int mc_tflush(struct target *t)
{
    return memcached_flush(t->h, 0) == MEMCACHED_SUCCESS ? 0 : -1;
}

/* Redis, reverse-index sets -------------------------------------------------
 */

static int rd_tconnect(struct target *t, const char *host, int port)
{
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err)
        return -1;
    redisSetTimeout(c, tv);
    t->h = c;
    return 0;
}

static int rd_reply_ok(redisContext *c)
{
    redisReply *r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
        return -1;
    int ok = r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static int rd_tset(struct target *t, const char *key, size_t klen,
                   const struct mdc_tag *tags, size_t ntags, int ttl)
{
    redisContext *c = t->h;
    int rc = 0;
    if (ttl > 0)
        redisAppendCommand(c, "SET %b %b EX %d", key, klen, value, (size_t)VLEN,
                           ttl);
    else
        redisAppendCommand(c, "SET %b %b", key, klen, value, (size_t)VLEN);
    for (size_t i = 0; i < ntags; i++)
        redisAppendCommand(c, "SADD tag:%d:%d %b", tags[i].tkey, tags[i].tval,
                           key, klen);
    RT(t); /* one pipelined round trip */
    for (size_t i = 0; i < ntags + 1; i++)
        if (rd_reply_ok(c) < 0)
            rc = -1;
    return rc;
}

static int rd_tget(struct target *t, const char *key, size_t klen, bool *hit)
{
    RT(t);
    redisReply *r = redisCommand(t->h, "GET %b", key, klen);
    if (r == NULL)
        return -1;
    *hit = r->type == REDIS_REPLY_STRING;
    int rc = r->type == REDIS_REPLY_ERROR ? -1 : 0;
    freeReplyObject(r);
    return rc;
}

static redisReply *rd_members(struct target *t, struct mdc_tag tag)
{
    RT(t);
    redisReply *r =
        redisCommand(t->h, "SMEMBERS tag:%d:%d", tag.tkey, tag.tval);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* cmd + every member as argv, sent as one command. */
static redisReply *rd_multi(struct target *t, const char *cmd, redisReply *m,
                            const char *extra)
{
    size_t n = m->elements + 1 + (extra != NULL);
    const char **argv = malloc(n * sizeof(*argv));
    size_t *lens = malloc(n * sizeof(*lens));
    argv[0] = cmd;
    lens[0] = strlen(cmd);
    for (size_t i = 0; i < m->elements; i++) {
        argv[i + 1] = m->element[i]->str;
        lens[i + 1] = m->element[i]->len;
    }
    if (extra) {
        argv[n - 1] = extra;
        lens[n - 1] = strlen(extra);
    }
    RT(t);
    redisReply *r = redisCommandArgv(t->h, (int)n, argv, lens);
    free(argv);
    free(lens);
    return r;
}

static long rd_tgbt(struct target *t, struct mdc_tag tag)
{
    redisReply *m = rd_members(t, tag);
    long n = 0;
    if (m == NULL)
        return -1;
    if (m->elements > 0) {
        redisReply *r = rd_multi(t, "MGET", m, NULL);
        if (r == NULL) {
            freeReplyObject(m);
            return -1;
        }
        for (size_t i = 0; i < r->elements; i++)
            n += r->element[i]->type == REDIS_REPLY_STRING;
        freeReplyObject(r);
    }
    freeReplyObject(m);
    return n;
}

static int rd_tdbt(struct target *t, struct mdc_tag tag)
{
    char tk[32];
    snprintf(tk, sizeof(tk), "tag:%d:%d", tag.tkey, tag.tval);
    redisReply *m = rd_members(t, tag);
    if (m == NULL)
        return -1;
    /* the records and the tag's own set; the records' keys stay in the
     * sets of their other tags (nothing knows them) */
    redisReply *r = rd_multi(t, "DEL", m, tk);
    freeReplyObject(m);
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

static int rd_tflush(struct target *t)
{
    redisReply *r = redisCommand(t->h, "FLUSHALL");
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
}

static struct target targets[] = {
    {"mdcached", mdc_tconnect, mdc_tset, mdc_tget, mdc_tgbt, mdc_tdbt,
     mdc_tflush, NULL, 0, NULL, NULL},
    {"memcached", mc_tconnect, mc_tset, mc_tget, mc_tgbt, mc_tdbt, mc_tflush,
     NULL, 0, NULL, NULL},
    {"redis", rd_tconnect, rd_tset, rd_tget, rd_tgbt, rd_tdbt, rd_tflush, NULL,
     0, NULL, NULL},
};

/* ---- helpers ------------------------------------------------------------- */

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void hist_add(struct stats *s, uint64_t us)
{
    size_t b = us < 2000 ? us : 2000 + (us - 2000) / 100;
    if (b >= HBUCKETS)
        b = HBUCKETS - 1;
    s->hist[b]++;
}

static double hist_pct(const uint64_t *h, double pct)
{
    uint64_t total = 0, acc = 0;
    for (size_t i = 0; i < HBUCKETS; i++)
        total += h[i];
    if (total == 0)
        return 0;
    for (size_t i = 0; i < HBUCKETS; i++) {
        acc += h[i];
        if ((double)acc >= pct / 100.0 * (double)total)
            return i < 2000 ? (double)i : 2000.0 + (double)(i - 2000) * 100;
    }
    return 0;
}

static double proc_cpu_s(int pid)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (p == NULL || sscanf(p + 2,
                            "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                            "%*u %lu %lu",
                            &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void pick_tag(struct mdc_tag *tag)
{
    struct mdc_tag t[NTAGS];
    rec_tags((uint32_t)(rnd() % nrec), t);
    *tag = t[rnd() % NTAGS];
}

static int set_rec(struct target *t, uint32_t r, int ttl)
{
    char key[32];
    struct mdc_tag tags[NTAGS];
    int klen = rec_key(key, r);
    rec_tags(r, tags);
    return t->set(t, key, (size_t)klen, tags, NTAGS, ttl);
}

/* ---- modes --------------------------------------------------------------- */

static int do_load(struct target *t, int ttl)
{
    t->cur = OP_SET;
    for (uint32_t r = 0; r < nrec; r++)
        if (set_rec(t, r, ttl) < 0)
            return -1;
    return 0;
}

/* Operations per connection, 0 = until the time is up (-n: a fixed op
 * sequence, for instruction counts under callgrind). */
static uint64_t max_ops;

static void worker(struct target *t, double secs, unsigned seed)
{
    rng_state ^= (uint64_t)seed * 0x9E3779B97F4A7C15ull;
    uint64_t end = now_us() + (uint64_t)(secs * 1e6);
    char key[32];
    uint64_t done = 0;
    while (now_us() < end && (max_ops == 0 || done < max_ops)) {
        for (int burst = 0; burst < 64 && (max_ops == 0 || done < max_ops);
             burst++, done++) {
            unsigned p = (unsigned)(rnd() % 100);
            uint64_t t0 = now_us();
            int rc = 0;
            if (p < 70) {
                uint32_t r = (uint32_t)(rnd() % nrec);
                bool hit;
                t->cur = OP_GET;
                int klen = rec_key(key, r);
                rc = t->get(t, key, (size_t)klen, &hit);
                if (rc == 0 && !hit) {
                    t->st->misses++;
                    t->cur = OP_REFILL;
                    rc = set_rec(t, r, 0); /* cache-aside refill */
                    t->cur = OP_GET;
                }
            } else if (p < 90) {
                t->cur = OP_SET;
                rc = set_rec(t, (uint32_t)(rnd() % nrec), 0);
            } else if (p < 98) {
                struct mdc_tag tag;
                pick_tag(&tag);
                t->cur = OP_GBT;
                rc = t->gbt(t, tag) < 0 ? -1 : 0;
            } else {
                struct mdc_tag tag;
                pick_tag(&tag);
                t->cur = OP_DBT;
                rc = t->dbt(t, tag);
            }
            t->st->ops[t->cur]++;
            if (rc < 0)
                t->st->errors++;
            hist_add(t->st, now_us() - t0);
        }
    }
}

/* CPU time of the waited-for load processes (user + system), seconds. */
static double children_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* CPU seconds the whole machine spent busy (user, system, irq, softirq,
 * steal; niced work such as a background fuzzer left out), from
 * /proc/stat: less the server's and the load's own, it tells how much
 * other work shared the two CPUs during a round. */
static double machine_busy_s(void)
{
    unsigned long long us = 0, ni = 0, sy = 0, id = 0, io = 0, irq = 0,
                       sirq = 0, stl = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &us, &ni,
               &sy, &id, &io, &irq, &sirq, &stl) != 8)
        us = sy = irq = sirq = stl = 0;
    fclose(f);
    (void)ni;
    (void)id;
    (void)io;
    return (double)(us + sy + irq + sirq + stl) /
           (double)sysconf(_SC_CLK_TCK);
}

/* The machine's 1-minute load average (other work sharing the CPUs). */
static double loadavg1(void)
{
    double l = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf", &l) != 1)
            l = 0;
        fclose(f);
    }
    return l;
}

static void print_stats(const char *target, const struct stats *s, double secs,
                        int conns, double cpu, double ccpu, double other)
{
    uint64_t total = 0;
    for (int i = 0; i < OP__N; i++)
        total += s->ops[i];
    printf("{\"mode\":\"run\",\"target\":\"%s\",\"conns\":%d,\"secs\":%.2f,"
           "\"records\":%" PRIu32 ",\"ops\":%" PRIu64 ",\"ops_per_s\":%.0f,"
           "\"p50_us\":%.0f,\"p99_us\":%.0f,\"server_cpu_us_per_op\":%.2f,"
           "\"client_cpu_us_per_op\":%.2f,\"other_cpus\":%.2f,"
           "\"loadavg1\":%.2f,"
           "\"misses\":%" PRIu64 ",\"stale\":%" PRIu64 ",\"errors\":%" PRIu64,
           target, conns, secs, nrec, total, (double)total / secs,
           hist_pct(s->hist, 50), hist_pct(s->hist, 99),
           total ? cpu * 1e6 / (double)total : 0.0,
           total ? ccpu * 1e6 / (double)total : 0.0, other / secs, loadavg1(),
           s->misses,
           s->stale, s->errors);
    for (int i = 0; i < OP__N; i++)
        printf(",\"%s_ops\":%" PRIu64 ",\"%s_rt_per_op\":%.2f", op_names[i],
               s->ops[i], op_names[i],
               s->ops[i] ? (double)s->rts[i] / (double)s->ops[i] : 0.0);
    printf(",\"refill_rt\":%" PRIu64 "}\n", s->rts[OP_REFILL]);
}

static int do_run(struct target *proto, const char *host, int port, double secs,
                  int conns, int pid)
{
    struct stats *sh =
        mmap(NULL, sizeof(struct stats) * (size_t)conns, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return -1;
    memset(sh, 0, sizeof(struct stats) * (size_t)conns);
    double cpu0 = proc_cpu_s(pid);
    double ccpu0 = children_cpu_s();
    double busy0 = machine_busy_s();
    uint64_t t0 = now_us();
    for (int i = 0; i < conns; i++) {
        pid_t c = fork();
        if (c == 0) {
            struct target t = *proto;
            t.st = &sh[i];
            if (t.connect(&t, host, port) < 0) {
                fprintf(stderr, "w5: %s: cannot connect\n", t.name);
                _exit(1);
            }
            worker(&t, secs, (unsigned)i + 1);
            _exit(0);
        }
    }
    int bad = 0, status;
    while (wait(&status) > 0)
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    double elapsed = (double)(now_us() - t0) / 1e6;
    double cpu = proc_cpu_s(pid) - cpu0;
    double ccpu = children_cpu_s() - ccpu0; /* the load processes' own */
    double other = machine_busy_s() - busy0 - cpu - ccpu;
    if (other < 0 || pid <= 0)
        other = 0;
    struct stats *sum = calloc(1, sizeof(*sum));
    for (int i = 0; i < conns; i++) {
        for (int k = 0; k < OP__N; k++)
            sum->ops[k] += sh[i].ops[k];
        for (int k = 0; k <= OP__N; k++)
            sum->rts[k] += sh[i].rts[k];
        sum->misses += sh[i].misses;
        sum->stale += sh[i].stale;
        sum->errors += sh[i].errors;
        for (int b = 0; b < HBUCKETS; b++)
            sum->hist[b] += sh[i].hist[b];
    }
    print_stats(proto->name, sum, elapsed, conns, cpu, ccpu, other);
    free(sum);
    munmap(sh, sizeof(struct stats) * (size_t)conns);
    return bad ? -1 : 0;
}

/* Invalidation latency against tag size: n records tagged (9, n) under keys
 * "inv:<n>:<j>", then one invalidation, timed; median of reps. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int do_inval(struct target *t)
{
    static const uint32_t sizes[] = {10, 100, 1000, 10000};
    enum { REPS = 5 };
    printf("{\"mode\":\"inval\",\"target\":\"%s\"", t->name);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        uint64_t lat[REPS];
        uint64_t rts = 0;
        for (int rep = 0; rep < REPS; rep++) {
            struct mdc_tag tag = {9, (int32_t)sizes[s]};
            t->cur = OP_SET;
            for (uint32_t j = 0; j < sizes[s]; j++) {
                char key[48];
                int n = sprintf(key, "inv:%" PRIu32 ":%" PRIu32, sizes[s], j);
                if (t->set(t, key, (size_t)n, &tag, 1, 0) < 0)
                    return -1;
            }
            t->cur = OP_DBT;
            uint64_t before = t->st->rts[OP_DBT];
            uint64_t t0 = now_us();
            if (t->dbt(t, tag) < 0)
                return -1;
            lat[rep] = now_us() - t0;
            rts += t->st->rts[OP_DBT] - before;
        }
        qsort(lat, REPS, sizeof(lat[0]), cmp_u64);
        printf(",\"us_%" PRIu32 "\":%" PRIu64 ",\"rt_%" PRIu32 "\":%.1f",
               sizes[s], lat[REPS / 2], sizes[s], (double)rts / REPS);
    }
    printf("}\n");
    return 0;
}

/* Server memory and tag-index leftovers (after everything expired). */
static void leftovers(struct target *t, const char *phase)
{
    printf("{\"mode\":\"leak\",\"target\":\"%s\",\"phase\":\"%s\"", t->name,
           phase);
    if (t->connect == mdc_tconnect) {
        char *text = NULL;
        uint64_t v;
        if (mdc_stats(t->h, NULL, &text, NULL) == MDC_OK) {
            const char *names[] = {"curr_items", "bytes", "tag_bytes",
                                   "tag_links", "tag_values"};
            for (size_t i = 0; i < 5; i++)
                if (mdc_stats_u64(text, names[i], &v) == MDC_OK)
                    printf(",\"%s\":%" PRIu64, names[i], v);
        }
        free(text);
    } else if (t->connect == mc_tconnect) {
        memcached_return_t rc;
        memcached_stat_st *st = memcached_stat(t->h, NULL, &rc);
        if (st != NULL) {
            printf(",\"curr_items\":%" PRIu64 ",\"bytes\":%" PRIu64,
                   (uint64_t)st->curr_items, (uint64_t)st->bytes);
            memcached_stat_free(t->h, st);
        }
    } else {
        redisReply *r = redisCommand(t->h, "INFO memory");
        if (r && r->type == REDIS_REPLY_STRING) {
            const char *p = strstr(r->str, "used_memory:");
            if (p)
                printf(",\"used_memory\":%llu", strtoull(p + 12, NULL, 10));
        }
        if (r)
            freeReplyObject(r);
        r = redisCommand(t->h, "DBSIZE");
        if (r && r->type == REDIS_REPLY_INTEGER)
            printf(",\"keys\":%lld", r->integer);
        if (r)
            freeReplyObject(r);
        /* members left in tag sets */
        unsigned long long members = 0, sets = 0;
        char cursor[32] = "0";
        do {
            r = redisCommand(t->h, "SCAN %s MATCH tag:* COUNT 1000", cursor);
            if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
                break;
            snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
            for (size_t i = 0; i < r->element[1]->elements; i++) {
                redisReply *c = redisCommand(t->h, "SCARD %s",
                                             r->element[1]->element[i]->str);
                if (c && c->type == REDIS_REPLY_INTEGER)
                    members += (unsigned long long)c->integer;
                if (c)
                    freeReplyObject(c);
                sets++;
            }
            freeReplyObject(r);
        } while (strcmp(cursor, "0") != 0);
        printf(",\"tag_sets\":%llu,\"tag_set_members\":%llu", sets, members);
    }
    printf("}\n");
    fflush(stdout);
}

static int do_leak(struct target *t, int ttl, int settle)
{
    if (t->flush(t) < 0)
        return -1;
    if (t->connect == rd_tconnect)
        sleep(1); /* let FLUSHALL's memory be given back */
    leftovers(t, "empty");
    if (do_load(t, ttl) < 0)
        return -1;
    /* some invalidations, as in production */
    t->cur = OP_DBT;
    for (int i = 0; i < 200; i++) {
        struct mdc_tag tag;
        pick_tag(&tag);
        if (t->dbt(t, tag) < 0)
            return -1;
    }
    leftovers(t, "loaded");
    /* just after expiry, then once background reclamation has had time
     * (mdcached's sweep visits every bucket about every 10 s; memcached's
     * LRU crawler; Redis's active expiry) */
    sleep((unsigned)ttl + 2);
    leftovers(t, "expired");
    sleep((unsigned)settle);
    leftovers(t, "settled");
    return 0;
}

/* ---- W5a: the tagged read ------------------------------------------------ */
#define W5A_TKEY 10
#define W5A_SIZE 100

static int w5a_key(char *buf, uint32_t g, uint32_t j)
{
    return sprintf(buf, "a:%" PRIu32 ":%" PRIu32, g, j);
}

static int w5a_load(struct target *t, uint32_t groups)
{
    t->cur = OP_SET;
    for (uint32_t g = 0; g < groups; g++) {
        struct mdc_tag tag = {W5A_TKEY, (int32_t)g};
        for (uint32_t j = 0; j < W5A_SIZE; j++) {
            char key[48];
            int n = w5a_key(key, g, j);
            if (t->set(t, key, (size_t)n, &tag, 1, 0) < 0)
                return -1;
        }
    }
    return 0;
}

/* The records of one group, read as each design reads a tag; returns the
 * number of fresh records found. */
static long w5a_fetch(struct target *t, uint32_t g)
{
    struct mdc_tag tag = {W5A_TKEY, (int32_t)g};
    if (t->connect == mdc_tconnect || t->connect == rd_tconnect)
        return t->gbt(t, tag);
    /* memcached: the application knows the 100 keys; it multi-gets them,
     * then the tag's version, and keeps values stored under that version */
    static char keys[W5A_SIZE][48];
    const char *kp[W5A_SIZE];
    size_t kl[W5A_SIZE];
    static uint64_t stored[W5A_SIZE];
    static bool have[W5A_SIZE];
    memcached_return_t rc;
    for (uint32_t j = 0; j < W5A_SIZE; j++) {
        kl[j] = (size_t)w5a_key(keys[j], g, j);
        kp[j] = keys[j];
        have[j] = false;
    }
    RT(t);
    if (memcached_mget(t->h, kp, kl, W5A_SIZE) != MEMCACHED_SUCCESS)
        return -1;
    memcached_result_st res, *r;
    memcached_result_create(t->h, &res);
    while ((r = memcached_fetch_result(t->h, &res, &rc)) != NULL) {
        const char *k = memcached_result_key_value(r);
        const char *c = strrchr(k, ':');
        uint32_t j = c ? (uint32_t)strtoul(c + 1, NULL, 10) : W5A_SIZE;
        if (j < W5A_SIZE) {
            stored[j] = strtoull(memcached_result_value(r), NULL, 10);
            have[j] = true;
        }
    }
    memcached_result_free(&res);
    char vk[1][32];
    uint64_t cur;
    tv_key(vk[0], tag);
    if (mc_versions(t, vk, 1, &cur) < 0)
        return -1;
    long found = 0;
    for (uint32_t j = 0; j < W5A_SIZE; j++)
        found += have[j] && stored[j] == cur;
    return found;
}

static int do_w5a(struct target *t, double secs, int pid, uint32_t groups)
{
    /* loaded by an earlier round if the last group reads back whole */
    if (w5a_fetch(t, groups - 1) != W5A_SIZE &&
        (t->flush(t) < 0 || w5a_load(t, groups) < 0))
        return -1;
    memset(t->st, 0, sizeof(*t->st));
    t->cur = OP_GBT;
    double cpu0 = proc_cpu_s(pid), busy0 = machine_busy_s();
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = now_us(), end = t0 + (uint64_t)(secs * 1e6), ops = 0;
    uint64_t records = 0, short_reads = 0;
    while (now_us() < end) {
        for (int k = 0; k < 16; k++) {
            uint64_t a = now_us();
            long n = w5a_fetch(t, (uint32_t)(rnd() % groups));
            hist_add(t->st, now_us() - a);
            if (n < 0) {
                t->st->errors++;
                continue;
            }
            records += (uint64_t)n;
            short_reads += n != W5A_SIZE;
            ops++;
        }
    }
    double elapsed = (double)(now_us() - t0) / 1e6;
    double cpu = proc_cpu_s(pid) - cpu0;
    getrusage(RUSAGE_SELF, &ru1);
    double ccpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec +
                           ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                  (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
                           ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) /
                      1e6;
    double other = machine_busy_s() - busy0 - cpu - ccpu;
    printf("{\"mode\":\"w5a\",\"target\":\"%s\",\"groups\":%" PRIu32
           ",\"secs\":%.2f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.0f,"
           "\"records_per_op\":%.1f,\"short_reads\":%" PRIu64 ","
           "\"rt_per_op\":%.2f,\"p50_us\":%.0f,\"p99_us\":%.0f,"
           "\"server_cpu_us_per_op\":%.2f,\"client_cpu_us_per_op\":%.2f,"
           "\"other_cpus\":%.2f,\"loadavg1\":%.2f,\"errors\":%" PRIu64 "}\n",
           t->name, groups, elapsed, ops, (double)ops / elapsed,
           ops ? (double)records / (double)ops : 0.0, short_reads,
           ops ? (double)t->st->rts[OP_GBT] / (double)ops : 0.0,
           hist_pct(t->st->hist, 50), hist_pct(t->st->hist, 99),
           ops && pid > 0 ? cpu * 1e6 / (double)ops : 0.0,
           ops ? ccpu * 1e6 / (double)ops : 0.0,
           other > 0 ? other / elapsed : 0.0, loadavg1(), t->st->errors);
    return 0;
}

/* ---- W5b: invalidation beside W1 ------------------------------------------- */
#define W5B_TKEY 11

static int w5b_refill(struct target *t, uint32_t size)
{
    static struct mdc_kv *kv;
    static char (*keys)[24];
    struct mdc_tag tag = {W5B_TKEY, 0};
    if (keys == NULL) {
        keys = malloc((size_t)size * sizeof(*keys));
        kv = calloc(size, sizeof(*kv));
        if (keys == NULL || kv == NULL)
            return -1;
    }
    size_t kl[size];
    for (uint32_t j = 0; j < size; j++)
        kl[j] = (size_t)sprintf(keys[j], "b:%" PRIu32, j);
    RT(t);
    if (t->connect == mdc_tconnect) {
        for (uint32_t j = 0; j < size; j++)
            kv[j] = (struct mdc_kv){.key = keys[j], .klen = kl[j],
                                    .value = value, .vlen = VLEN,
                                    .tags = &tag, .ntags = 1};
        return mdc_mset(t->h, MDC_SET, size, kv, NULL) == MDC_OK ? 0 : -1;
    }
    if (t->connect == rd_tconnect) {
        redisContext *c = t->h;
        for (uint32_t j = 0; j < size; j++) {
            redisAppendCommand(c, "SET %b %b", keys[j], kl[j], value,
                               (size_t)VLEN);
            redisAppendCommand(c, "SADD tag:%d:0 %b", W5B_TKEY, keys[j],
                               kl[j]);
        }
        int rc = 0;
        for (uint32_t j = 0; j < 2 * size; j++)
            if (rd_reply_ok(c) < 0)
                rc = -1;
        return rc;
    }
    /* memcached: values carry the tag's current version */
    char vk[1][32];
    uint64_t ver;
    char buf[VLEN + 32];
    tv_key(vk[0], tag);
    if (mc_versions(t, vk, 1, &ver) < 0)
        return -1;
    int n = sprintf(buf, "%" PRIu64 "|", ver);
    memcpy(buf + n, value, VLEN);
    memcached_behavior_set(t->h, MEMCACHED_BEHAVIOR_NOREPLY, 1);
    memcached_behavior_set(t->h, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS, 1);
    int rc = 0;
    for (uint32_t j = 0; j < size; j++)
        if (memcached_set(t->h, keys[j], kl[j], buf, (size_t)n + VLEN, 0, 0) !=
            MEMCACHED_SUCCESS &&
            memcached_last_error(t->h) != MEMCACHED_BUFFERED)
            rc = -1;
    memcached_flush_buffers(t->h);
    memcached_behavior_set(t->h, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS, 0);
    memcached_behavior_set(t->h, MEMCACHED_BEHAVIOR_NOREPLY, 0);
    /* a round trip so that every set has been applied */
    if (mc_versions(t, vk, 1, &ver) < 0)
        rc = -1;
    return rc;
}

/* Symfony's RedisTagAwareAdapter invalidates with a Lua script that
 * SSCANs the tag set and deletes what it lists, then the set. */
static const char w5b_lua[] =
    "local c = '0' local n = 0 "
    "repeat "
    "  local r = redis.call('SSCAN', KEYS[1], c, 'COUNT', 1000) "
    "  c = r[1] "
    "  if #r[2] > 0 then n = n + redis.call('DEL', unpack(r[2])) end "
    "until c == '0' "
    "redis.call('DEL', KEYS[1]) "
    "return n";

static int w5b_invalidate(struct target *t)
{
    struct mdc_tag tag = {W5B_TKEY, 0};
    if (t->connect != rd_tconnect)
        return t->dbt(t, tag);
    RT(t);
    redisReply *r = redisCommand(t->h, "EVAL %s 1 tag:%d:0", w5b_lua,
                                 W5B_TKEY);
    int rc = r != NULL && r->type == REDIS_REPLY_INTEGER ? 0 : -1;
    if (r)
        freeReplyObject(r);
    return rc;
}

/* What the tag's index still holds right after its invalidation. */
static long w5b_left(struct target *t)
{
    struct mdc_tag tag = {W5B_TKEY, 0};
    if (t->connect == mdc_tconnect)
        return t->gbt(t, tag);
    if (t->connect == rd_tconnect) {
        redisReply *r = redisCommand(t->h, "SCARD tag:%d:0", W5B_TKEY);
        long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? (long)r->integer
                                                             : -1;
        if (r)
            freeReplyObject(r);
        return n;
    }
    return 0; /* version keys: nothing to clean, the records stay */
}

static int do_w5b(struct target *t, double secs, uint32_t size, int period_ms)
{
    enum { MAXN = 4096 };
    static uint64_t lat[MAXN], refill[MAXN];
    uint64_t t0 = now_us(), end = t0 + (uint64_t)(secs * 1e6);
    uint32_t n = 0;
    long left_max = 0;
    uint64_t errors = 0, late = 0;
    t->cur = OP_DBT;
    while (now_us() < end && n < MAXN) {
        uint64_t start = now_us();
        if (w5b_refill(t, size) < 0)
            errors++;
        uint64_t a = now_us();
        if (w5b_invalidate(t) < 0)
            errors++;
        uint64_t b = now_us();
        long left = w5b_left(t);
        if (left < 0)
            errors++;
        else if (left > left_max)
            left_max = left;
        refill[n] = a - start;
        lat[n++] = b - a;
        uint64_t next = start + (uint64_t)period_ms * 1000;
        uint64_t now = now_us();
        if (now < next)
            usleep((useconds_t)(next - now));
        else
            late++;
    }
    qsort(lat, n, sizeof(lat[0]), cmp_u64);
    qsort(refill, n, sizeof(refill[0]), cmp_u64);
    printf("{\"mode\":\"w5b\",\"target\":\"%s\",\"size\":%" PRIu32
           ",\"period_ms\":%d,\"secs\":%.2f,\"invalidations\":%" PRIu32
           ",\"late_periods\":%" PRIu64 ",\"inval_p50_us\":%" PRIu64
           ",\"inval_p99_us\":%" PRIu64 ",\"inval_max_us\":%" PRIu64
           ",\"refill_p50_us\":%" PRIu64 ",\"tag_left_max\":%ld"
           ",\"errors\":%" PRIu64 "}\n",
           t->name, size, period_ms, (double)(now_us() - t0) / 1e6, n, late,
           n ? lat[n / 2] : 0, n ? lat[(n * 99) / 100] : 0,
           n ? lat[n - 1] : 0, n ? refill[n / 2] : 0, left_max, errors);
    return errors ? -1 : 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: w5 -T mdcached|memcached|redis [-h host] [-p port] "
            "[-r records] [-d secs] [-c conns] [-P server_pid] [-e ttl] "
            "[-w settle_secs] [-n ops_per_conn] [-g w5a_groups|w5b_size] "
            "[-i w5b_period_ms] load|run|inval|leak|w5a|w5b\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *tname = NULL;
    int port = 0, conns = 4, pid = 0, ttl = 3, settle = 15, opt;
    uint32_t groups = 0;
    int period_ms = 100;
    double secs = 5;
    struct stats st;

    while ((opt = getopt(argc, argv, "T:h:p:r:d:c:P:e:w:n:g:i:")) != -1) {
        switch (opt) {
        case 'T': tname = optarg; break;
        case 'h': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'r': nrec = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'd': secs = atof(optarg); break;
        case 'c': conns = atoi(optarg); break;
        case 'P': pid = atoi(optarg); break;
        case 'e': ttl = atoi(optarg); break;
        case 'w': settle = atoi(optarg); break;
        case 'n': max_ops = strtoull(optarg, NULL, 10); break;
        case 'g': groups = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'i': period_ms = atoi(optarg); break;
        default: usage();
        }
    }
    if (tname == NULL || optind != argc - 1 || port <= 0 || conns <= 0 ||
        nrec < 1000)
        usage();
    struct target *t = NULL;
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
        if (strcmp(targets[i].name, tname) == 0)
            t = &targets[i];
    if (t == NULL)
        usage();
    signal(SIGPIPE, SIG_IGN);
    memset(value, 'v', VLEN);
    model_build();
    memset(&st, 0, sizeof(st));
    t->st = &st;
    const char *mode = argv[optind];
    if (strcmp(mode, "run") == 0)
        return do_run(t, host, port, secs, conns, pid) < 0;
    if (t->connect(t, host, port) < 0) {
        fprintf(stderr, "w5: %s: cannot connect to %s:%d\n", t->name, host,
                port);
        return 1;
    }
    int rc;
    if (strcmp(mode, "load") == 0) {
        uint64_t t0 = now_us();
        rc = t->flush(t) < 0 || do_load(t, 0) < 0;
        printf("{\"mode\":\"load\",\"target\":\"%s\",\"records\":%" PRIu32
               ",\"pages\":%" PRIu32 ",\"secs\":%.2f,\"rt_per_set\":%.2f}\n",
               t->name, nrec, npages, (double)(now_us() - t0) / 1e6,
               (double)st.rts[OP_SET] / nrec);
    } else if (strcmp(mode, "inval") == 0) {
        rc = do_inval(t);
    } else if (strcmp(mode, "leak") == 0) {
        rc = do_leak(t, ttl, settle);
    } else if (strcmp(mode, "w5a") == 0) {
        rc = do_w5a(t, secs, pid, groups ? groups : 1000);
    } else if (strcmp(mode, "w5b") == 0 && period_ms > 0) {
        rc = do_w5b(t, secs, groups ? groups : 10000, period_ms);
    } else {
        usage();
        rc = 1;
    }
    if (rc)
        fprintf(stderr, "w5: %s %s failed\n", t->name, mode);
    return rc != 0;
}
