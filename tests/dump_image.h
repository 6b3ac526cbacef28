/*
 * dump_image.h - a dump file built byte by byte as docs/dump.md describes
 * it, with every checksum right, for tests of what the loader makes of
 * records the writer never writes (tests/test_dump.c, test_dump_server.c).
 */
#ifndef MDC_TEST_DUMP_IMAGE_H
#define MDC_TEST_DUMP_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* A record as the file holds it, tags in the order given (docs/dump.md). */
struct raw {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
    uint64_t flags;
    const int32_t *tags; /* tkey, tval pairs */
    size_t ntags;
};

static inline size_t put_v(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A whole dump file (header -I 1024, --max-tags 4) of one block holding
 * recs with CAS 1, 2, ...; every checksum right.  *roff: each record's
 * file offset.  With bytes, a record i whose bytes[i] is set is those
 * nbytes[i] bytes as they are (CAS delta first): a record no writer could
 * encode.  malloc'd; NULL when out of memory. */
static inline uint8_t *mk_image_bytes(const struct raw *recs, size_t n,
                                      size_t *len, uint64_t *roff,
                                      const uint8_t *const *bytes,
                                      const size_t *nbytes)
{
    size_t cap = 64 + 32 + 48 + 100000;
    for (size_t i = 0; i < n; i++)
        cap += recs[i].klen + recs[i].vlen + 64 + 20 * recs[i].ntags +
               (bytes != NULL && bytes[i] != NULL ? nbytes[i] : 0);
    uint8_t *b = calloc(1, cap), *p;
    if (b == NULL)
        return NULL;
    memcpy(b, "MDCDUMP\n", 8);
    put_le(b + 8, 1, 4);
    put_le(b + 12, 64, 4);
    put_le(b + 16, 1700000000, 8);
    put_le(b + 24, (uint64_t)64 << 20, 8);
    put_le(b + 32, 1024, 4); /* the writer's -I */
    put_le(b + 36, 4, 4);    /* and --max-tags */
    put_le(b + 40, 65536, 4);
    put_le(b + 56, XXH3_64bits(b, 56), 8);
    uint8_t *blk = b + 64, *pl = blk + 32;
    p = pl;
    for (size_t i = 0; i < n; i++) {
        const struct raw *r = &recs[i];
        roff[i] = (uint64_t)(p - b);
        if (bytes != NULL && bytes[i] != NULL) {
            memcpy(p, bytes[i], nbytes[i]);
            p += nbytes[i];
            continue;
        }
        p += put_v(p, 1); /* CAS i + 1: one more than the previous */
        *p++ = (uint8_t)((r->flags ? 0x01 : 0) | (r->ntags ? 0x08 : 0));
        p += put_v(p, r->klen);
        p += put_v(p, r->vlen);
        if (r->flags)
            p += put_v(p, r->flags);
        if (r->ntags) {
            p += put_v(p, r->ntags);
            p += put_v(p, 0); /* link age */
            for (size_t t = 0; t < 2 * r->ntags; t++) {
                int64_t v = r->tags[t];
                p += put_v(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
            }
        }
        memcpy(p, r->key, r->klen);
        p += r->klen;
        memcpy(p, r->val, r->vlen);
        p += r->vlen;
    }
    size_t pln = (size_t)(p - pl);
    memcpy(blk, "BLK1", 4);
    put_le(blk + 4, pln, 4);
    put_le(blk + 8, n, 4);
    put_le(blk + 12, 0, 4);
    put_le(blk + 16, XXH3_64bits(pl, pln), 8);
    put_le(blk + 24, XXH3_64bits(blk, 24), 8);
    uint8_t *f = p;
    memcpy(f, "FTR1", 4);
    put_le(f + 4, 1, 4);
    put_le(f + 8, n, 8);
    put_le(f + 16, 0, 8);
    put_le(f + 32, XXH3_64bits(b, (size_t)(f - b) + 32), 8);
    put_le(f + 40, XXH3_64bits(f, 40), 8);
    *len = (size_t)(f - b) + 48;
    return b;
}

static inline uint8_t *mk_image(const struct raw *recs, size_t n, size_t *len,
                                uint64_t *roff)
{
    return mk_image_bytes(recs, n, len, roff, NULL, NULL);
}

#endif
