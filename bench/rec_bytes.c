/*
 * rec_bytes.c - where a record's bytes go (issue 27 item 3): loads N records
 * of one shape (or of the miss-ratio trace's size mix) into a store with
 * room for all, and prints per record: the header, key, value, flags, tag
 * area and padding a record asks the allocator for, the size class it gets,
 * the tag index nodes, the bucket array, what `stats bytes` counts, and the
 * RSS the load added.  No network: bench/bytes.sh puts the daemon's figures
 * beside memcached's.
 *
 * usage: rec-bytes [-n N] [-k KEY_BYTES] [-v VALUE_BYTES] [-t TAGS]
 *                  [-F FLAGS] [-x] [-S SEED]
 *   -t: each record carries TAGS tags (tkey i, tval = record / 100: each tag
 *       shared by 100 records); -x: value sizes from the miss-ratio trace's
 *       model (lognormal, median 300 B, sigma 0.8, 16 B .. 16 KiB; 11-byte
 *       keys: bench/missratio/mr_trace.h).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/missratio/mr_trace.h"
#include "server/core/alloc.h"
#include "server/core/store_policy.h"

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next64(void)
{
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double unif(void) { return ((next64() >> 11) + 0.5) / 9007199254740992.0; }

/* the trace's value size model (mr_gen.c draws the same distribution) */
static uint32_t mix_size(void)
{
    double z = sqrt(-2.0 * log(unif())) * cos(2.0 * M_PI * unif());
    double s = MR_SIZE_MEDIAN * exp(MR_SIZE_SIGMA * z);
    if (s < MR_SIZE_MIN)
        s = MR_SIZE_MIN;
    if (s > MR_SIZE_MAX)
        s = MR_SIZE_MAX;
    return (uint32_t)s;
}

int main(int argc, char **argv)
{
    uint64_t n = 1000000;
    uint32_t klen = 16, vlen = 32, ntags = 0, flags = 0;
    int mix = 0, c;
    while ((c = getopt(argc, argv, "n:k:v:t:F:xS:h")) != -1) {
        switch (c) {
        case 'n': n = strtoull(optarg, NULL, 10); break;
        case 'k': klen = (uint32_t)atoi(optarg); break;
        case 'v': vlen = (uint32_t)atoi(optarg); break;
        case 't': ntags = (uint32_t)atoi(optarg); break;
        case 'F': flags = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'x': mix = 1; klen = MR_KEY_LEN; break;
        case 'S': rng = strtoull(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: rec-bytes [-n N] [-k KEY] [-v VALUE] "
                            "[-t TAGS] [-F FLAGS] [-x] [-S SEED]\n");
            return 64;
        }
    }
    if (klen < 11 || klen > 250 || ntags > 64 || n == 0) {
        fprintf(stderr, "rec-bytes: key 11..250 bytes, at most 64 tags\n");
        return 64;
    }
    struct store_config cfg = {0};
    cfg.mem_limit = (size_t)1 << 40; /* nothing evicted */
    cfg.nbuckets = 0;
    /* the daemon's table for -m 4096 (W6): buckets derived from the limit */
    struct store_config probe = {0};
    probe.mem_limit = (size_t)4096 << 20;
    struct store *p = store_setup(&probe);
    if (p == NULL)
        return 1;
    cfg.nbuckets = store_config(p)->nbuckets;
    cfg.initial_buckets = store_config(p)->initial_buckets;
    store_teardown(p);

    long rss0 = rss_kib();
    struct store *st = store_setup(&cfg);
    if (st == NULL)
        return 1;
    char key[256];
    static char val[MR_SIZE_MAX + 1];
    memset(val, 'v', sizeof(val));
    struct mdc_tag tags[64];
    uint64_t vsum = 0, reqsum = 0, classsum = 0, hdrsum = 0, padsum = 0,
             tagareasum = 0, flagsum = 0;
    for (uint64_t i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "k%0*" PRIu64, (int)klen - 1, i);
        uint32_t vl = mix ? mix_size() : vlen;
        for (uint32_t t = 0; t < ntags; t++) {
            tags[t].tkey = (int32_t)t + 1;
            tags[t].tval = (int32_t)(i / 100);
        }
        struct store_item it = {
            .key = key, .klen = klen, .value = val, .vlen = vl,
            .flags = flags, .tags = ntags ? tags : NULL, .ntags = ntags};
        int rc = store_put(st, STORE_SET, &it, NULL);
        if (rc != ST_OK) {
            fprintf(stderr, "rec-bytes: store %" PRIu64 ": %s\n", i,
                    store_strstatus(rc));
            return 1;
        }
        struct record *r = store_get(st, key, klen);
        size_t hdr = sizeof(struct record);
        size_t area = 0, fl;
        if (ntags)
            area = sizeof(struct tag_area) + ntags * sizeof(struct tag_entry);
        size_t req = rec_req_size_of(r);
        fl = rec_flags_len(r);
        vsum += vl;
        hdrsum += hdr;
        flagsum += fl;
        tagareasum += area;
        padsum += req - hdr - klen - vl - fl - area;
        reqsum += req;
        classsum += record_mem(r);
        store_release(st, r);
    }
    long rss1 = rss_kib();
    struct store_stats s;
    store_get_stats(st, &s);
    double dn = (double)n;
    printf("rec-bytes: %" PRIu64 " records, key %u B, value %s, %u tags, "
           "flags %u, allocator %s\n",
           n, klen, mix ? "trace mix" : "fixed", ntags, flags,
           mdc_allocator_name());
    printf("  %-34s %8.1f\n", "header (struct record)", hdrsum / dn);
    printf("  %-34s %8.1f\n", "key", (double)klen);
    printf("  %-34s %8.1f\n", "value", vsum / dn);
    printf("  %-34s %8.1f\n", "client flags (in the record)", flagsum / dn);
    printf("  %-34s %8.1f\n", "padding before the tag area", padsum / dn);
    printf("  %-34s %8.1f\n", "tag area (8 + 40 per tag)", tagareasum / dn);
    printf("  %-34s %8.1f\n", "= asked of the allocator", reqsum / dn);
    printf("  %-34s %8.1f\n", "size class rounding",
           (classsum - reqsum) / dn);
    printf("  %-34s %8.1f\n", "= record's size class", classsum / dn);
    printf("  %-34s %8.1f\n", "tag index nodes",
           (double)s.tag_bytes / dn);
    printf("  %-34s %8.1f\n", "= stats bytes", (double)s.bytes / dn);
    printf("  %-34s %8.1f  (%" PRIu64 " buckets in use)\n",
           "bucket array, locks (fixed_bytes)",
           (double)s.fixed_bytes / dn, s.nbuckets);
    printf("  %-34s %8.1f\n", "= bytes + fixed",
           (double)(s.bytes + s.fixed_bytes) / dn);
    printf("  %-34s %8.1f\n", "RSS added by the load",
           (double)(rss1 - rss0) * 1024 / dn);
    store_teardown(st);
    return 0;
}
