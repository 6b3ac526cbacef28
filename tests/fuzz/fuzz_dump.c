/*
 * fuzz_dump.c - libFuzzer target for the dump loader (server/core/dump.c).
 * Each input is loaded as a dump file into a fresh store in repair mode and
 * in strict mode; the loader must never crash, the loaded store must pass
 * store_check, strict must load all or nothing, and when strict accepts,
 * repair must load the same records.  A small memory limit makes the
 * "larger than -m" path (recency histogram) run too.  Random bytes
 * rarely keep a checksum right, so for half of the inputs the checksums are
 * first recomputed (docs/dump.md's layout), which lets the mutations reach
 * the record decoder and the store.  Seeds: real dumps written by mdcached
 * (tests/fuzz/corpus/dump/).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "server/core/dump.h"
#include "server/core/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static struct store *mk(size_t mem)
{
    struct store_config cfg = {.mem_limit = mem, .nbuckets = 1024,
                               .max_tags = 16, .max_item_size = 4096};
    struct store *st = store_setup(&cfg);
    CHECK(st != NULL);
    return st;
}

static uint64_t items(struct store *st)
{
    char buf[256];
    struct store_stats s;
    if (store_check(st, buf, sizeof(buf)) != 0) {
        fprintf(stderr, "store_check: %s\n", buf);
        abort();
    }
    store_get_stats(st, &s);
    return s.curr_items;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Make every checksum where the layout puts one right. */
static void fix_checksums(uint8_t *b, size_t size)
{
    if (size < 64)
        return;
    put64(b + 56, XXH3_64bits(b, 56));
    size_t off = 64;
    while (off + 32 <= size) {
        if (memcmp(b + off, "BLK1", 4) == 0) {
            size_t len = le32(b + off + 4);
            if (len > size - off - 32)
                return;
            put64(b + off + 16, XXH3_64bits(b + off + 32, len));
            put64(b + off + 24, XXH3_64bits(b + off, 24));
            off += 32 + len;
        } else if (memcmp(b + off, "FTR1", 4) == 0 && off + 48 <= size) {
            put64(b + off + 32, XXH3_64bits(b, off + 32));
            put64(b + off + 40, XXH3_64bits(b + off, 40));
            return;
        } else {
            return;
        }
    }
}

static uint8_t *copy;
static size_t copycap;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dump_info ri, si, li;
    if (size > 0 && (data[size - 1] & 2)) {
        if (size > copycap) {
            free(copy);
            copy = malloc(size);
            CHECK(copy != NULL);
            copycap = size;
        }
        memcpy(copy, data, size);
        fix_checksums(copy, size);
        data = copy;
    }
    /* the last byte picks a small or a roomy memory limit */
    size_t mem = size > 0 && (data[size - 1] & 1) ? 4096 : (size_t)64 << 20;

    struct store *r = mk((size_t)64 << 20);
    CHECK(dump_load_buf(r, data, size, DUMP_LOAD_REPAIR, NULL, NULL, &ri) == 0);
    uint64_t nr = items(r);
    CHECK(nr == ri.records);

    struct store *s = mk((size_t)64 << 20);
    int rc = dump_load_buf(s, data, size, DUMP_LOAD_STRICT, NULL, NULL, &si);
    uint64_t ns = items(s);
    if (rc != 0) {
        CHECK(ns == 0 && si.bad > 0);
    } else {
        CHECK(si.bad == 0 && ri.bad == 0 && ns == nr);
    }
    store_teardown(s);
    store_teardown(r);

    struct store *l = mk(mem);
    CHECK(dump_load_buf(l, data, size, DUMP_LOAD_REPAIR, NULL, NULL, &li) == 0);
    CHECK(items(l) == li.records);
    store_teardown(l);
    return 0;
}
