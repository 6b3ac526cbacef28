/*
 * test_dump.c - dumps at the store level (server/core/dump.c):
 *
 *  - a round trip of MDC_DUMP_RECORDS records (default 10^6) with binary
 *    keys, flags, TTLs, CAS values, tags and tstacks: every record
 *    identical after loading, tstacks pop in the same order, expired ones
 *    left out, store_check clean;
 *  - damage: truncation at every block boundary and at random offsets,
 *    single bit flips in the header, a block and the footer: strict
 *    refuses naming the offset, repair loads exactly the intact blocks;
 *  - a dump taken while 4 threads write, delete, push/pop and delete by
 *    tag: the loaded store passes store_check and every record in it was
 *    live at some moment of the dump;
 *  - loading more than -m: the most recently used records first;
 *  - a write that fails leaves the previous dump and no temporary file;
 *  - records whose checksums verify but whose fields the protocol would
 *    refuse (an empty key, tags twice or out of order, a key over 65534
 *    bytes, flags over 32 bits, over the writer's -I or --max-tags) are
 *    damage: strict refuses the file naming the record's offset, repair
 *    skips that record only.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dump_image.h"
#include "server/core/dump.h"
#include "server/core/store.h"
#include "testclock.h"

static char tmpdir[] = "/tmp/mdc-dump-XXXXXX";
static char path[256];

static uint64_t xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(tmpdir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/d.mdc", tmpdir);
    return 0;
}

/* Names in tmpdir starting with a dot: the dump's temporary files
 * (".d.mdc.XXXXXX", server/core/newfile.h) */
static int hidden_files(void)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 &&
            strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int teardown(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd);
}

static struct store *mkstore(size_t mem)
{
    struct store_config cfg = {.mem_limit = mem, .max_tags = 8};
    struct store *st = store_setup(&cfg);
    assert_non_null(st);
    return st;
}

static void check_clean(struct store *st)
{
    char buf[256];
    if (store_check(st, buf, sizeof(buf)) != 0)
        fail_msg("store_check: %s", buf);
}

static uint8_t *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* ---- round trip ------------------------------------------------------------ */
/* 10^6 records (a few seconds); 10^5 in the sanitizer builds, which run
 * the same code several times slower */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DEFAULT_RECORDS 100000
#define FLIP_STEP 5 /* every 5th bit of the header and footer */
#else
#define DEFAULT_RECORDS 1000000
#define FLIP_STEP 1
#endif
static size_t nrecords(void)
{
    const char *e = getenv("MDC_DUMP_RECORDS");
    long n = e ? atol(e) : DEFAULT_RECORDS;
    return n > 1000 ? (size_t)n : 1000;
}

static void mkkey(size_t i, uint8_t *k, uint32_t *kl)
{
    /* binary keys: every byte value, NULs and CR/LF included */
    uint64_t s = i * 0x9E3779B97F4A7C15ull + 1;
    uint32_t n = 4 + (uint32_t)(i % 29);
    memcpy(k, &i, 4);
    for (uint32_t j = 4; j < n; j++)
        k[j] = (uint8_t)xs(&s);
    if (i % 7 == 0 && n > 5)
        k[5] = 0, k[n - 1] = '\n';
    *kl = n;
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t n = nrecords();
    struct testclock tc = {.mono_ns = 5000000000ull, .wall_s = 1700000000};
    struct store *a = mkstore((size_t)1 << 30);
    testclock_install(a, &tc);
    uint8_t k[64], v[300];
    uint32_t kl;
    uint64_t *cas = calloc(n, sizeof(*cas));
    assert_non_null(cas);
    uint64_t s = 42;
    for (size_t i = 0; i < n; i++) {
        mkkey(i, k, &kl);
        uint32_t vl = (uint32_t)(i % 97);
        for (uint32_t j = 0; j < vl; j++)
            v[j] = (uint8_t)xs(&s);
        struct mdc_tag tags[3] = {{(int32_t)(i % 5), (int32_t)(i % 11)},
                                  {-7, (int32_t)i},
                                  {INT32_MAX, INT32_MIN}};
        struct store_item it = {
            .key = k, .klen = kl, .value = v, .vlen = vl,
            .flags = (uint32_t)(i * 2654435761u),
            /* a third expire within 100 s, some after 1000 s, rest never */
            .exptime = i % 3 == 0 ? 100 : i % 3 == 1 ? 0 : 1000 + (int64_t)i % 500,
            .tags = tags, .ntags = (uint32_t)(i % 4),
        };
        assert_int_equal(store_put(a, STORE_SET, &it, &cas[i]), ST_OK);
    }
    /* three tstacks of 50 */
    char kb[STORE_TSTACK_KEYMAX];
    for (int t = 0; t < 3; t++)
        for (int j = 0; j < 50; j++) {
            char val[16];
            int vl = snprintf(val, sizeof(val), "%d/%d", t, j);
            struct mdc_tag tg = {1000 + t, t};
            assert_int_equal(store_tstack_push(a, tg, val, (uint32_t)vl, 0, 0,
                                               kb, NULL, NULL), ST_OK);
        }
    /* a record read once (recency kept) */
    mkkey(1, k, &kl);
    store_release(a, store_get(a, k, kl));

    struct dump_info wi, li;
    assert_int_equal(dump_write(a, path, &wi), 0);
    assert_int_equal(wi.records, n + 150);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, wi.bytes);
    assert_int_equal(hidden_files(), 0); /* no temporary file left */

    /* restart 200 s later: the 100 s records are gone */
    struct testclock tc2 = {.mono_ns = 1000000000ull, .wall_s = 1700000200};
    struct store *b = mkstore((size_t)1 << 30);
    testclock_install(b, &tc2);
    assert_int_equal(dump_load(b, path, DUMP_LOAD_STRICT, NULL, NULL, &li), 0);
    assert_int_equal(li.bad, 0);
    size_t expired = (n + 2) / 3;
    assert_int_equal(li.expired, expired);
    assert_int_equal(li.records, n - expired + 150);
    check_clean(b);
    testclock_advance(&tc, 200);

    for (size_t i = 0; i < n; i++) {
        mkkey(i, k, &kl);
        struct record *ra = store_get(a, k, kl);
        struct record *rb = store_get(b, k, kl);
        if (i % 3 == 0) {
            assert_null(ra);
            assert_null(rb);
            continue;
        }
        assert_non_null(ra);
        if (rb == NULL)
            fail_msg("record %zu missing after loading", i);
        assert_int_equal(record_vlen(rb), record_vlen(ra));
        assert_memory_equal(record_value(rb), record_value(ra),
                            record_vlen(ra));
        assert_int_equal(record_flags(rb), record_flags(ra));
        assert_int_equal(record_cas(rb), cas[i]);
        assert_int_equal(record_ttl(b, rb), record_ttl(a, ra));
        assert_int_equal(record_ntags(rb), record_ntags(ra));
        for (uint32_t t = 0; t < record_ntags(ra); t++) {
            struct mdc_tag x = record_tag(ra, t), y = record_tag(rb, t);
            assert_int_equal(x.tkey, y.tkey);
            assert_int_equal(x.tval, y.tval);
        }
        store_release(a, ra);
        store_release(b, rb);
    }
    /* tstacks pop in the same order from both; new pushes do not clash */
    for (int t = 0; t < 3; t++) {
        struct mdc_tag tg = {1000 + t, t};
        assert_int_equal(store_tstack_push(b, tg, "new", 3, 0, 0, kb, NULL,
                                           NULL), ST_OK);
        struct record *rb;
        assert_int_equal(store_tstack_pop(b, tg, &rb), ST_OK);
        assert_memory_equal(record_value(rb), "new", 3);
        store_release(b, rb);
        for (int j = 49; j >= 0; j--) {
            struct record *ra;
            assert_int_equal(store_tstack_pop(a, tg, &ra), ST_OK);
            assert_int_equal(store_tstack_pop(b, tg, &rb), ST_OK);
            assert_int_equal(record_klen(ra), record_klen(rb));
            assert_memory_equal(record_key(ra), record_key(rb),
                                record_klen(ra));
            char val[16];
            int vl = snprintf(val, sizeof(val), "%d/%d", t, j);
            assert_int_equal(record_vlen(rb), (uint32_t)vl);
            assert_memory_equal(record_value(rb), val, (size_t)vl);
            store_release(a, ra);
            store_release(b, rb);
        }
    }
    /* a new version after loading is above every loaded one */
    uint64_t maxcas = 0, nc;
    for (size_t i = 0; i < n; i++)
        if (cas[i] > maxcas)
            maxcas = cas[i];
    struct store_item it = {.key = "fresh", .klen = 5, .value = "x", .vlen = 1};
    assert_int_equal(store_put(b, STORE_SET, &it, &nc), ST_OK);
    assert_true(nc > maxcas);
    check_clean(b);
    free(cas);
    store_teardown(a);
    store_teardown(b);
}

/* ---- damage ------------------------------------------------------------------ */
#define DN 2000
static uint8_t *dimg;
static size_t dlen;
static size_t boff[256], bend[256];
static uint32_t brec[256];
static size_t nblk, ftr_off;

static void make_damage_image(void)
{
    if (dimg != NULL)
        return;
    struct store *a = mkstore((size_t)256 << 20);
    char key[32], val[200];
    for (int i = 0; i < DN; i++) {
        int kl = snprintf(key, sizeof(key), "key-%d", i);
        memset(val, 'a' + i % 26, sizeof(val));
        struct mdc_tag tg = {i % 3, i % 10};
        struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                .value = val, .vlen = sizeof(val),
                                .tags = &tg, .ntags = (uint32_t)(i % 2)};
        assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    }
    struct dump_info wi;
    assert_int_equal(dump_write(a, path, &wi), 0);
    store_teardown(a);
    dimg = slurp(path, &dlen);
    /* walk the blocks as docs/dump.md describes them */
    size_t off = 64;
    while (off + 4 <= dlen && le32(dimg + off) == 0x314b4c42u) {
        assert_true(nblk < 256);
        boff[nblk] = off;
        brec[nblk] = le32(dimg + off + 8);
        off += 32 + le32(dimg + off + 4);
        bend[nblk++] = off;
    }
    ftr_off = off;
    assert_int_equal(ftr_off + 48, dlen);
    assert_true(nblk >= 5);
}

static int load_img(const uint8_t *b, size_t len, enum dump_load_mode m,
                    struct dump_info *info, uint64_t *check_n)
{
    struct store *s = mkstore((size_t)256 << 20);
    int rc = dump_load_buf(s, b, len, m, NULL, NULL, info);
    struct store_stats ss;
    store_get_stats(s, &ss);
    *check_n = ss.curr_items;
    /* every loaded record is the original one */
    char key[32], val[200];
    size_t found = 0;
    for (int i = 0; i < DN; i++) {
        int kl = snprintf(key, sizeof(key), "key-%d", i);
        struct record *r = store_get(s, key, (uint32_t)kl);
        if (r == NULL)
            continue;
        found++;
        memset(val, 'a' + i % 26, sizeof(val));
        assert_int_equal(record_vlen(r), sizeof(val));
        assert_memory_equal(record_value(r), val, sizeof(val));
        assert_int_equal(record_ntags(r), (uint32_t)(i % 2));
        store_release(s, r);
    }
    assert_int_equal(found, ss.curr_items);
    check_clean(s);
    store_teardown(s);
    return rc;
}

/* Records in the blocks that end at or before len. */
static uint64_t recs_before(size_t len)
{
    uint64_t n = 0;
    for (size_t i = 0; i < nblk; i++)
        if (bend[i] <= len)
            n += brec[i];
    return n;
}

static void test_truncation(void **state)
{
    (void)state;
    make_damage_image();
    struct dump_info info;
    uint64_t n;
    assert_int_equal(load_img(dimg, dlen, DUMP_LOAD_STRICT, &info, &n), 0);
    assert_int_equal(n, DN);
    /* every block boundary, the header's end, and inside the footer */
    size_t cuts[300], nc = 0;
    cuts[nc++] = 0;
    cuts[nc++] = 64;
    for (size_t i = 0; i < nblk; i++)
        cuts[nc++] = bend[i];
    cuts[nc++] = ftr_off + 20;
    cuts[nc++] = dlen - 1;
    uint64_t s = 7;
    for (int i = 0; i < 40; i++)
        cuts[nc++] = (size_t)(xs(&s) % dlen);
    for (size_t c = 0; c < nc; c++) {
        size_t len = cuts[c];
        uint8_t *b = malloc(len + 1);
        memcpy(b, dimg, len);
        assert_int_equal(load_img(b, len, DUMP_LOAD_STRICT, &info, &n), -1);
        assert_int_equal(n, 0);
        assert_true(info.bad > 0);
        /* strict names where: the first damage is at or before the cut */
        assert_true(info.err_offset <= len);
        if (len >= 64 && len < ftr_off && recs_before(len) > 0) {
            /* the first thing missing is where the cut is, or the block
             * it cuts */
            size_t want = len;
            for (size_t i = 0; i < nblk; i++)
                if (boff[i] < len && len < bend[i])
                    want = boff[i];
            assert_int_equal(info.err_offset, want);
        }
        assert_int_equal(load_img(b, len, DUMP_LOAD_REPAIR, &info, &n), 0);
        assert_int_equal(n, recs_before(len));
        assert_true(info.bad > 0);
        free(b);
    }
}

static void flip_and_check(size_t bit, uint64_t expect_repair,
                           size_t expect_off)
{
    uint8_t *b = malloc(dlen);
    memcpy(b, dimg, dlen);
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    struct dump_info info;
    uint64_t n;
    assert_int_equal(load_img(b, dlen, DUMP_LOAD_STRICT, &info, &n), -1);
    assert_int_equal(n, 0);
    if (info.err_offset != expect_off)
        fail_msg("bit %zu: strict names offset %llu (%s), expected %zu", bit,
                 (unsigned long long)info.err_offset, info.err, expect_off);
    assert_int_equal(load_img(b, dlen, DUMP_LOAD_REPAIR, &info, &n), 0);
    if (n != expect_repair)
        fail_msg("bit %zu: repair loaded %llu, expected %llu (%s)", bit,
                 (unsigned long long)n, (unsigned long long)expect_repair,
                 info.err);
    free(b);
}

static void test_bit_flips(void **state)
{
    (void)state;
    make_damage_image();
    uint64_t s = 99;
    /* header: every bit of it; the blocks all still load in repair */
    for (size_t bit = 0; bit < 64 * 8; bit += FLIP_STEP)
        flip_and_check(bit, DN, 0);
    /* a block: random bits in its header and its payload */
    for (int i = 0; i < 60; i++) {
        size_t k = (size_t)(xs(&s) % nblk);
        size_t span = (bend[k] - boff[k]) * 8;
        size_t bit = boff[k] * 8 + (i < 20 ? (size_t)(xs(&s) % 256)
                                           : (size_t)(xs(&s) % span));
        flip_and_check(bit, DN - brec[k], boff[k]);
    }
    /* the footer: every bit */
    for (size_t bit = ftr_off * 8; bit < dlen * 8; bit += FLIP_STEP)
        flip_and_check(bit, DN, ftr_off);
}

/* ---- concurrent writers ------------------------------------------------------ */
#define CW_THREADS 4
#define CW_KEYS 2000
#define CW_MAXV (1u << 21)

struct vmeta {
    _Atomic uint64_t start, end; /* clock at the op's start / removal's end */
    uint32_t key;                /* thread << 16 | key index, or tstack */
};
static struct vmeta *vm;
static _Atomic uint64_t clk = 1, nextv = 1;
static atomic_int cw_stop;

struct cw {
    struct store *st;
    int id;
    uint64_t cur[CW_KEYS]; /* live version per key, 0 none */
    uint64_t pushed[4096];
    size_t npushed;
};

static void cw_key(int t, int i, char *k, uint32_t *kl)
{
    *kl = (uint32_t)snprintf(k, 32, "t%d-k%d", t, i);
}

static void *cw_main(void *arg)
{
    struct cw *c = arg;
    uint64_t s = 1234 + (uint64_t)c->id;
    char k[32];
    uint32_t kl;
    while (!atomic_load(&cw_stop)) {
        int op = (int)(xs(&s) % 100);
        int i = (int)(xs(&s) % CW_KEYS);
        cw_key(c->id, i, k, &kl);
        if (op < 60) {
            uint64_t v = atomic_fetch_add(&nextv, 1);
            if (v >= CW_MAXV)
                break;
            vm[v].key = (uint32_t)c->id << 16 | (uint32_t)i;
            atomic_store(&vm[v].start, atomic_fetch_add(&clk, 1));
            struct mdc_tag tg = {c->id, i % 16};
            struct store_item it = {.key = k, .klen = kl, .value = &v,
                                    .vlen = 8, .tags = &tg, .ntags = 1};
            assert_int_equal(store_put(c->st, STORE_SET, &it, NULL), ST_OK);
            uint64_t e = atomic_fetch_add(&clk, 1);
            if (c->cur[i])
                atomic_store(&vm[c->cur[i]].end, e);
            c->cur[i] = v;
        } else if (op < 75) {
            store_delete(c->st, k, kl, 0);
            uint64_t e = atomic_fetch_add(&clk, 1);
            if (c->cur[i])
                atomic_store(&vm[c->cur[i]].end, e);
            c->cur[i] = 0;
        } else if (op < 80) {
            int32_t tv = i % 16;
            uint64_t nd;
            store_del_by_tag(c->st, c->id, &tv, 1, &nd);
            uint64_t e = atomic_fetch_add(&clk, 1);
            for (int j = tv; j < CW_KEYS; j += 16)
                if (c->cur[j]) {
                    atomic_store(&vm[c->cur[j]].end, e);
                    c->cur[j] = 0;
                }
        } else if (op < 92 && c->npushed < 4096) {
            uint64_t v = atomic_fetch_add(&nextv, 1);
            if (v >= CW_MAXV)
                break;
            vm[v].key = 0xffffffffu;
            atomic_store(&vm[v].start, atomic_fetch_add(&clk, 1));
            char kb[STORE_TSTACK_KEYMAX];
            struct mdc_tag tg = {100 + c->id, 0};
            assert_int_equal(store_tstack_push(c->st, tg, &v, 8, 0, 0, kb,
                                               NULL, NULL), ST_OK);
            c->npushed++;
        } else {
            struct mdc_tag tg = {100 + c->id, 0};
            struct record *r;
            if (store_tstack_pop(c->st, tg, &r) == ST_OK) {
                uint64_t e = atomic_fetch_add(&clk, 1), v;
                memcpy(&v, record_value(r), 8);
                atomic_store(&vm[v].end, e);
                store_release(c->st, r);
                c->npushed--;
            }
        }
    }
    return NULL;
}

struct lv {
    uint64_t d0, d1;
    size_t n;
    const char *bad;
};

static void check_live(void *ctx, struct store *st, const struct record *r)
{
    struct lv *l = ctx;
    (void)st;
    uint64_t v;
    l->n++;
    if (record_vlen(r) != 8) {
        l->bad = "value length";
        return;
    }
    memcpy(&v, record_value(r), 8);
    if (v == 0 || v >= CW_MAXV) {
        l->bad = "unknown version";
        return;
    }
    uint64_t s = atomic_load(&vm[v].start), e = atomic_load(&vm[v].end);
    /* written before the dump ended, not removed before it began */
    if (s == 0 || s > l->d1 || (e != 0 && e < l->d0))
        l->bad = "a record that was not live during the dump";
    if (vm[v].key != 0xffffffffu) {
        char k[32];
        uint32_t kl;
        cw_key((int)(vm[v].key >> 16), (int)(vm[v].key & 0xffff), k, &kl);
        if (record_klen(r) != kl || memcmp(record_key(r), k, kl) != 0)
            l->bad = "version under another key";
    }
}

static void test_concurrent(void **state)
{
    (void)state;
    vm = calloc(CW_MAXV, sizeof(*vm));
    assert_non_null(vm);
    struct store_config cfg = {.mem_limit = (size_t)512 << 20,
                               .initial_buckets = 1024};
    struct store *a = store_setup(&cfg);
    struct cw *c = calloc(CW_THREADS, sizeof(*c));
    pthread_t th[CW_THREADS];
    for (int t = 0; t < CW_THREADS; t++) {
        c[t].st = a;
        c[t].id = t;
        assert_int_equal(pthread_create(&th[t], NULL, cw_main, &c[t]), 0);
    }
    /* the first dump once the writers have made 1000 versions, not after
     * 100 ms: on a busy machine they may not have run by then, and the
     * dump was empty */
    while (atomic_load(&nextv) < 1000)
        usleep(1000);
    for (int round = 0; round < 5; round++) {
        struct dump_info wi, li;
        uint64_t d0 = atomic_fetch_add(&clk, 1);
        assert_int_equal(dump_write(a, path, &wi), 0);
        uint64_t d1 = atomic_fetch_add(&clk, 1);
        struct store *b = mkstore((size_t)512 << 20);
        assert_int_equal(dump_load(b, path, DUMP_LOAD_STRICT, NULL, NULL, &li),
                         0);
        assert_int_equal(li.records, wi.records);
        check_clean(b);
        struct lv l = {.d0 = d0, .d1 = d1};
        uint32_t m = store_walk_classes(b);
        for (uint32_t i = 0; i < m; i++)
            store_walk_class(b, m, i, check_live, &l);
        assert_int_equal(l.n, li.records);
        if (l.bad != NULL)
            fail_msg("round %d: %s", round, l.bad);
        assert_true(l.n > 0);
        store_teardown(b);
        usleep(50000);
    }
    atomic_store(&cw_stop, 1);
    for (int t = 0; t < CW_THREADS; t++)
        pthread_join(th[t], NULL);
    check_clean(a);
    store_teardown(a);
    free(c);
    free(vm);
}

/* ---- memory limit: most recently used first ---------------------------------- */
static void test_recency_limit(void **state)
{
    (void)state;
    struct testclock tc = {.mono_ns = 1000000000ull, .wall_s = 1700000000};
    struct store *a = mkstore((size_t)256 << 20);
    testclock_install(a, &tc);
    char key[32], val[1000];
    memset(val, 'v', sizeof(val));
    for (int i = 0; i < 8000; i++) {
        int kl = snprintf(key, sizeof(key), "r%d", i);
        struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                .value = val, .vlen = sizeof(val)};
        assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    }
    /* read 0..999 long ago, 1000..1999 a little later, 2000..2999 now */
    for (int g = 0; g < 3; g++) {
        testclock_advance(&tc, 100);
        for (int i = g * 1000; i < (g + 1) * 1000; i++) {
            int kl = snprintf(key, sizeof(key), "r%d", i);
            store_release(a, store_get(a, key, (uint32_t)kl));
        }
    }
    testclock_advance(&tc, 1);
    struct dump_info wi, li;
    assert_int_equal(dump_write(a, path, &wi), 0);
    /* room for 1500 records of 1280 bytes (jemalloc's class; fewer bytes
     * each with libc malloc: then about 1800) */
    struct store *b = mkstore((size_t)1500 * 1280);
    assert_int_equal(dump_load(b, path, DUMP_LOAD_STRICT, NULL, NULL, &li), 0);
    assert_true(li.over_limit > 0);
    assert_int_equal(li.records + li.over_limit, 8000);
    int got[4] = {0};
    for (int i = 0; i < 8000; i++) {
        int kl = snprintf(key, sizeof(key), "r%d", i);
        struct record *r = store_get(b, key, (uint32_t)kl);
        if (r != NULL) {
            got[i < 3000 ? i / 1000 : 3]++;
            store_release(b, r);
        }
    }
    assert_int_equal(got[2], 1000); /* the most recent all in */
    assert_true(got[1] > 0);        /* then the next ones */
    assert_int_equal(got[0], 0);
    assert_int_equal(got[3], 0);    /* never read: last */
    check_clean(b);
    store_teardown(a);
    store_teardown(b);
}

/* Relabel a dump image as format version v, with every checksum that
 * covers the header made again (header, whole file, footer). */
static void relabel(uint8_t *img, size_t len, uint8_t v)
{
    uint8_t *f = img + len - 48;
    uint64_t h;
    img[8] = v;
    h = XXH3_64bits(img, 56);
    for (int i = 0; i < 8; i++)
        img[56 + i] = (uint8_t)(h >> (8 * i));
    h = XXH3_64bits(img, len - 48 + 32);
    for (int i = 0; i < 8; i++)
        f[32 + i] = (uint8_t)(h >> (8 * i));
    h = XXH3_64bits(f, 40);
    for (int i = 0; i < 8; i++)
        f[40 + i] = (uint8_t)(h >> (8 * i));
}

/* ---- idle times survive a dump, read or not --------------------------------- */
static uint32_t mg_l(struct store *st, const char *k, bool *hit_before)
{
    struct store_mget q = {.no_bump = true};
    struct store_mget_res res;
    struct record *r = store_mget(st, k, (uint32_t)strlen(k), &q, &res);
    assert_non_null(r);
    store_release(st, r);
    *hit_before = res.prev.hit_before;
    return res.prev.idle_s;
}

/* "n" stored and never read, "r" read 20 s after its store; 100 s later
 * they are dumped and loaded by a store whose clock is elsewhere: "n"
 * still reports 100 s since its store (mg l, h0), "r" 80 s since its read
 * (h1).  Before the fix "n" came back with no idle time and reported the
 * age of the loading store's clock (l 5000 here). */
static void test_idle_round_trip(void **state)
{
    (void)state;
    struct testclock tc = {.mono_ns = 1000000000ull * 1000,
                           .wall_s = 1700000000};
    struct store *a = mkstore((size_t)64 << 20);
    testclock_install(a, &tc);
    struct store_item it = {.key = "n", .klen = 1, .value = "v", .vlen = 1};
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    it.key = "r";
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    testclock_advance(&tc, 20);
    store_release(a, store_get(a, "r", 1));
    testclock_advance(&tc, 80);
    struct dump_info wi, li;
    assert_int_equal(dump_write(a, path, &wi), 0);
    struct testclock tb = {.mono_ns = 1000000000ull * 5000,
                           .wall_s = 1700000100};
    struct store *b = mkstore((size_t)64 << 20);
    testclock_install(b, &tb);
    assert_int_equal(dump_load(b, path, DUMP_LOAD_STRICT, NULL, NULL, &li), 0);
    assert_int_equal(li.records, 2);
    bool h;
    assert_in_range(mg_l(b, "n", &h), 98, 100);
    assert_false(h);
    assert_in_range(mg_l(b, "r", &h), 78, 80);
    assert_true(h);
    /* and again, from b: the same */
    testclock_advance(&tb, 10);
    assert_int_equal(dump_write(b, path, &wi), 0);
    struct store *c = mkstore((size_t)64 << 20);
    testclock_install(c, &tc);
    assert_int_equal(dump_load(c, path, DUMP_LOAD_STRICT, NULL, NULL, &li), 0);
    assert_in_range(mg_l(c, "n", &h), 108, 110);
    assert_false(h);
    assert_in_range(mg_l(c, "r", &h), 88, 90);
    assert_true(h);
    check_clean(c);
    /* the unread bit came with version 3: in a version 2 file, damage */
    size_t len;
    uint8_t *img = slurp(path, &len);
    assert_int_equal(le32(img + 8), 3);
    relabel(img, len, 2);
    struct store *d = mkstore((size_t)64 << 20);
    assert_int_equal(dump_load_buf(d, img, len, DUMP_LOAD_STRICT, NULL, NULL,
                                   &li), -1);
    store_teardown(d);
    free(img);
    store_teardown(a);
    store_teardown(b);
    store_teardown(c);
}

/* ---- a failed write keeps the previous dump ----------------------------------- */
/*
 * The temporary file cannot be created: PATH's name is 250 bytes, so
 * ".NAME.XXXXXX" is over NAME_MAX.  (A directory or anything else planted
 * at the old fixed name PATH.tmp no longer stops a dump: test_newfile.)
 */
static void test_failed_write(void **state)
{
    (void)state;
    struct store *a = mkstore((size_t)64 << 20);
    struct store_item it = {.key = "k", .klen = 1, .value = "v", .vlen = 1};
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    struct dump_info wi;
    assert_int_equal(dump_write(a, path, &wi), 0);
    char lpath[600];
    int n = snprintf(lpath, sizeof(lpath), "%s/", tmpdir);
    memset(lpath + n, 'L', 250);
    lpath[n + 250] = '\0';
    assert_int_equal(rename(path, lpath), 0);
    size_t l0, l1;
    uint8_t *before = slurp(lpath, &l0);
    assert_int_equal(dump_write(a, lpath, &wi), -1);
    assert_int_equal(strncmp(wi.err, "cannot create", 13), 0);
    uint8_t *after = slurp(lpath, &l1);
    assert_int_equal(l0, l1);
    assert_memory_equal(before, after, l0);
    assert_int_equal(hidden_files(), 0);
    assert_int_equal(unlink(lpath), 0);
    free(before);
    free(after);
    store_teardown(a);
}

/* ---- stale records (version 2) and version 1 files ----------------------- */
static void stale_state(struct store *st, const char *k, bool *stale,
                        bool *won)
{
    struct store_mget q = {.no_bump = true};
    struct store_mget_res res;
    struct record *r = store_mget(st, k, (uint32_t)strlen(k), &q, &res);
    assert_non_null(r);
    *stale = res.stale;
    *won = res.won;
    store_release(st, r);
}


static void test_stale_kept(void **state)
{
    (void)state;
    struct store *a = mkstore((size_t)64 << 20);
    struct mdc_tag t = {3, 4};
    struct store_item it = {.key = "s", .klen = 1, .value = "old", .vlen = 3,
                            .tags = &t, .ntags = 1};
    bool stale, won;
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    it.key = "f";
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    it.key = "w";
    assert_int_equal(store_put(a, STORE_SET, &it, NULL), ST_OK);
    assert_int_equal(store_invalidate(a, "s", 1, 0, false, 0), ST_OK);
    assert_int_equal(store_invalidate(a, "w", 1, 0, true, 600), ST_OK);
    stale_state(a, "w", &stale, &won); /* w's win is out when dumped */
    assert_true(stale && won);
    struct dump_info wi, li;
    assert_int_equal(dump_write(a, path, &wi), 0);
    size_t len;
    uint8_t *img = slurp(path, &len);
    assert_int_equal(le32(img + 8), 3);
    /* the stale bits survive, the win does not: each next reader wins */
    struct store *b = mkstore((size_t)64 << 20);
    assert_int_equal(dump_load(b, path, DUMP_LOAD_STRICT, NULL, NULL, &li), 0);
    assert_int_equal(li.records, 3);
    stale_state(b, "s", &stale, &won);
    assert_true(stale && won);
    stale_state(b, "w", &stale, &won);
    assert_true(stale && won);
    stale_state(b, "w", &stale, &won);
    assert_true(stale && !won);
    stale_state(b, "f", &stale, &won);
    assert_true(!stale && !won);
    struct record *r = store_get(b, "w", 1);
    assert_true(record_ttl(b, r) > 590);
    store_release(b, r);
    check_clean(b);
    store_teardown(b);
    /* the same file marked version 1 (with its header checksum): the
     * stale bit is unknown there, damage */
    relabel(img, len, 1);
    b = mkstore((size_t)64 << 20);
    assert_int_equal(dump_load_buf(b, img, len, DUMP_LOAD_STRICT, NULL, NULL,
                                   &li), -1);
    store_teardown(b);
    b = mkstore((size_t)64 << 20); /* repair: that block is lost */
    assert_int_equal(dump_load_buf(b, img, len, DUMP_LOAD_REPAIR, NULL, NULL,
                                   &li), 0);
    assert_true(li.bad > 0);
    assert_int_equal(li.records, 0);
    store_teardown(b);
    free(img);
    /* a version 1 file without stale (or unread) records loads as before */
    store_release(a, store_get(a, "f", 1));
    assert_int_equal(store_delete(a, "s", 1, 0), ST_OK);
    assert_int_equal(store_delete(a, "w", 1, 0), ST_OK);
    assert_int_equal(dump_write(a, path, &wi), 0);
    img = slurp(path, &len);
    relabel(img, len, 1);
    b = mkstore((size_t)64 << 20);
    assert_int_equal(dump_load_buf(b, img, len, DUMP_LOAD_STRICT, NULL, NULL,
                                   &li), 0);
    assert_int_equal(li.records, 1);
    stale_state(b, "f", &stale, &won);
    assert_true(!stale && !won);
    check_clean(b);
    store_teardown(b);
    /* and version 4 is refused */
    relabel(img, len, 4);
    b = mkstore((size_t)64 << 20);
    assert_int_equal(dump_load_buf(b, img, len, DUMP_LOAD_STRICT, NULL, NULL,
                                   &li), -1);
    store_teardown(b);
    free(img);
    store_teardown(a);
}

/* ---- records no writer encodes ------------------------------------------ */
/* A record whose bytes do not decode (its block's checksums right): a
 * strict load refuses the file naming the block, the record and the
 * fault, and loads nothing. */
static void test_malformed_records(void **state)
{
    (void)state;
    static const uint8_t bits[] = {1, 0x80, 1, 1, 'k', 'v'};
    static const uint8_t no_tags[] = {1, 0x08, 1, 1, 0, 0, 'k', 'v'};
    static const uint8_t big_tag[] = {1, 0x08, 1, 1, 1, 0, 0x80, 0x80,
                                      0x80, 0x80, 0x20, 0, 'k', 'v'};
    static const uint8_t big_vlen[] = {1, 0, 1, 0x80, 0x80, 0x80, 0x80,
                                       0x20, 'k', 'v'};
    static const uint8_t cas_wrap[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0x01, 0, 1, 1,
                                       'k', 'v'};
    static const uint8_t past_end[] = {1, 0, 100, 1, 'k', 'v'};
    static const struct {
        const uint8_t *b;
        size_t n;
        const char *why;
    } cases[] = {
        {bits, sizeof(bits), "unknown record field bits"},
        {no_tags, sizeof(no_tags), "bad tag count"},
        {big_tag, sizeof(big_tag), "tag out of range"},
        {big_vlen, sizeof(big_vlen), "field out of range"},
        {cas_wrap, sizeof(cas_wrap), "CAS out of range"},
        {past_end, sizeof(past_end), "record runs past the block's end"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct raw recs[2] = {
            {"a", 1, "1", 1, 0, NULL, 0},
            {"", 0, "", 0, 0, NULL, 0}, /* replaced by the bytes */
        };
        const uint8_t *bytes[2] = {NULL, cases[c].b};
        const size_t nbytes[2] = {0, cases[c].n};
        uint64_t roff[2];
        size_t len;
        uint8_t *img = mk_image_bytes(recs, 2, &len, roff, bytes, nbytes);
        struct dump_info info;
        assert_non_null(img);
        struct store *s = mkstore((size_t)64 << 20);
        assert_int_equal(dump_load_buf(s, img, len, DUMP_LOAD_STRICT, NULL,
                                       NULL, &info), -1);
        char want[96];
        snprintf(want, sizeof(want), "block 0: record 1: %s", cases[c].why);
        if (strstr(info.err, want) == NULL)
            fail_msg("case %zu: strict says '%s', want '%s'", c, info.err,
                     want);
        /* a record that does not decode is no place to resume from: the
         * block's offset is reported (its header, 32 bytes before 'a') */
        assert_int_equal(info.err_offset, roff[0] - 32);
        struct store_stats ss;
        store_get_stats(s, &ss);
        assert_int_equal(ss.curr_items, 0);
        store_teardown(s);
        free(img);
    }
}

/* ---- fields the protocol would refuse ------------------------------------ */
static void test_invalid_fields(void **state)
{
    (void)state;
    static const int32_t t_ok[] = {1, 2, 1, 3, 5, -1};
    static const int32_t t_dup[] = {1, 2, 1, 2};
    static const int32_t t_unsorted[] = {2, 1, 1, 1};
    static const int32_t t_unsorted_val[] = {7, 5, 7, 4};
    static const int32_t t_many[] = {1, 1, 1, 2, 1, 3, 1, 4, 1, 5};
    static char big[70000];
    memset(big, 'k', sizeof(big));
    static const struct {
        struct raw bad;
        const char *why;
    } cases[] = {
        {{"", 0, "v", 1, 0, NULL, 0}, "empty key"},
        {{"", 0, "v", 1, 7, t_ok, 3}, "empty key"},
        {{"dup", 3, "v", 1, 0, t_dup, 2}, "tag 1:2 twice"},
        {{"uns", 3, "v", 1, 0, t_unsorted, 2}, "tags not sorted"},
        {{"uns", 3, "v", 1, 0, t_unsorted_val, 2}, "tags not sorted"},
        {{big, 65535, "v", 1, 0, NULL, 0}, "key of 65535 bytes, over 65534"},
        {{"fl", 2, "v", 1, (uint64_t)1 << 32, NULL, 0},
         "client flags over 32 bits"},
        {{"big", 3, big, 1025, 0, NULL, 0},
         "value of 1025 bytes, over the writer's -I 1024"},
        {{"many", 4, "v", 1, 0, t_many, 5},
         "5 tags, over the writer's --max-tags 4"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct raw recs[3] = {
            {"a", 1, "1", 1, 0, t_ok, 3},
            cases[c].bad,
            {"c", 1, "3", 1, 9, NULL, 0},
        };
        uint64_t roff[3];
        size_t len;
        uint8_t *img = mk_image(recs, 3, &len, roff);
        struct dump_info info;
        assert_non_null(img);

        /* strict: the file is refused, the record named by its offset */
        struct store *s = mkstore((size_t)64 << 20);
        assert_int_equal(dump_load_buf(s, img, len, DUMP_LOAD_STRICT, NULL,
                                       NULL, &info), -1);
        struct store_stats ss;
        store_get_stats(s, &ss);
        assert_int_equal(ss.curr_items, 0);
        if (strstr(info.err, cases[c].why) == NULL)
            fail_msg("case %zu: strict says '%s', want '%s'", c, info.err,
                     cases[c].why);
        assert_int_equal(info.err_offset, roff[1]);
        store_teardown(s);

        /* repair: that record only is skipped, counted and reported */
        s = mkstore((size_t)64 << 20);
        assert_int_equal(dump_load_buf(s, img, len, DUMP_LOAD_REPAIR, NULL,
                                       NULL, &info), 0);
        assert_int_equal(info.bad, 1);
        assert_int_equal(info.invalid, 1);
        assert_int_equal(info.records, 2);
        assert_int_equal(info.err_offset, roff[1]);
        store_get_stats(s, &ss);
        assert_int_equal(ss.curr_items, 2);
        struct record *r = store_get(s, "a", 1);
        assert_non_null(r);
        assert_int_equal(record_ntags(r), 3);
        store_release(s, r);
        r = store_get(s, "c", 1);
        assert_non_null(r);
        assert_int_equal(record_flags(r), 9);
        store_release(s, r);
        assert_null(store_get(s, "", 0));
        check_clean(s);
        store_teardown(s);

        /* the same file without the bad record loads whole in strict */
        recs[1] = recs[2];
        free(img);
        img = mk_image(recs, 2, &len, roff);
        assert_non_null(img);
        s = mkstore((size_t)64 << 20);
        assert_int_equal(dump_load_buf(s, img, len, DUMP_LOAD_STRICT, NULL,
                                       NULL, &info), 0);
        assert_int_equal(info.records, 2);
        assert_int_equal(info.bad, 0);
        store_teardown(s);
        free(img);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_bit_flips),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_recency_limit),
        cmocka_unit_test(test_idle_round_trip),
        cmocka_unit_test(test_failed_write),
        cmocka_unit_test(test_stale_kept),
        cmocka_unit_test(test_invalid_fields),
        cmocka_unit_test(test_malformed_records),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
