/*
 * ketama.c - the pool's consistent hashing, placed exactly as libmemcached
 * places keys with MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, so that mdcached
 * pools, libmemcached and php-memcached (OPT_LIBKETAMA_COMPATIBLE) agree:
 *
 *  - each server gets floor(weight/total * 40 * nservers) * 4 points (160 for
 *    equal weights), computed in single precision as libmemcached does;
 *  - point group j of a server hashes "name-j" with MD5 and yields four
 *    points, bytes 4k..4k+3 of the digest read little-endian;
 *  - name is "host:port", or "host" alone for port 11211 (libmemcached's
 *    default port);
 *  - a key hashes to the first four digest bytes of MD5(key), little-endian,
 *    and belongs to the first point at or after it, wrapping to the first.
 *
 * tests/test_client_ketama.c checks this against Debian's libmemcached.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ketama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md5.h"

#define POINTS_PER_SERVER 160
#define POINTS_PER_HASH 4

static uint32_t digest_word(const uint8_t d[16], int k)
{
    return (uint32_t)d[k * 4] | (uint32_t)d[k * 4 + 1] << 8 |
           (uint32_t)d[k * 4 + 2] << 16 | (uint32_t)d[k * 4 + 3] << 24;
}

static int point_cmp(const void *a, const void *b)
{
    const struct mdci_point *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return 0;
}

/* Points for one server: single-precision arithmetic as in libmemcached. */
static uint32_t points_for(uint32_t weight, uint64_t total, size_t nservers)
{
    float pct = (float)weight / (float)total;
    float x = pct * POINTS_PER_SERVER / 4 * (float)nservers;
    return (uint32_t)floorf((float)((double)x + 0.0000000001)) * 4;
}

int mdci_ketama_build(struct mdci_continuum *c, const char *const *names,
                      const uint32_t *weights, size_t nservers)
{
    uint64_t total = 0;
    size_t cap = 0, n = 0;
    struct mdci_point *pts = NULL;

    for (size_t i = 0; i < nservers; i++)
        total += (weights && weights[i]) ? weights[i] : 1;
    for (size_t i = 0; i < nservers; i++)
        cap += points_for((weights && weights[i]) ? weights[i] : 1, total,
                          nservers);
    if (cap > 0) {
        pts = malloc(cap * sizeof(*pts));
        if (pts == NULL)
            return -1;
    }
    for (size_t i = 0; i < nservers; i++) {
        uint32_t w = (weights && weights[i]) ? weights[i] : 1;
        uint32_t groups = points_for(w, total, nservers) / POINTS_PER_HASH;
        size_t nlen = strlen(names[i]);
        char *buf = malloc(nlen + 16);
        if (buf == NULL) {
            free(pts);
            return -1;
        }
        for (uint32_t j = 0; j < groups; j++) {
            uint8_t d[16];
            int len = snprintf(buf, nlen + 16, "%s-%u", names[i], j);
            mdci_md5(buf, (size_t)len, d);
            for (int k = 0; k < POINTS_PER_HASH && n < cap; k++) {
                pts[n].value = digest_word(d, k);
                pts[n].index = (uint32_t)i;
                n++;
            }
        }
        free(buf);
    }
    if (n > 1) /* no servers left: pts is NULL */
        qsort(pts, n, sizeof(*pts), point_cmp);
    free(c->points);
    c->points = pts;
    c->n = n;
    return 0;
}

void mdci_ketama_free(struct mdci_continuum *c)
{
    free(c->points);
    c->points = NULL;
    c->n = 0;
}

uint32_t mdci_ketama_hash(const void *key, size_t klen)
{
    uint8_t d[16];
    mdci_md5(key, klen, d);
    return digest_word(d, 0);
}

uint32_t mdci_ketama_find(const struct mdci_continuum *c, uint32_t hash)
{
    size_t lo = 0, hi = c->n;
    if (c->n == 0)
        return 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->points[mid].value < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == c->n)
        lo = 0;
    return c->points[lo].index;
}
