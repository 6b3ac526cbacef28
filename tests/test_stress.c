/*
 * test_stress.c - concurrency stress of the store: threads mix tagged puts,
 * deletes, gets, get_by_tag, del_by_tag, counters, tstack and eviction for
 * a bounded time; then both indexes must agree exactly and a flush must
 * bring accounted memory back to zero.  A second test checks del_by_tag's
 * race rule against a concurrent writer; two more the stale mode's: one
 * winner per record among concurrent readers, and no version stored before
 * a stale tag delete read fresh after it.
 *
 * MDC_STRESS_SECONDS sets the duration of each phase (default 2).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <cmocka.h>

#include "server/core/store.h"

#define NTHREADS 6
#define NKEYS 4000
#define NTAGVALS 40

static double seconds(void)
{
    const char *e = getenv("MDC_STRESS_SECONDS");
    double s = e ? atof(e) : 2.0;
    return s > 0 ? s : 2.0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t xs(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

struct ctx {
    struct store *st;
    double deadline;
    atomic_ulong ops;
    atomic_int failed;
    char why[200];
    /* a GET's record passed to whichever thread comes next, which checks
     * and releases it (a reference released by another thread) */
    _Atomic(struct record *) handoff;
};

/* Records a worker keeps after reading them, as a connection keeps a value
 * it is still sending: more than a thread's hold slots. */
#define KEEP 12

static int key_ok(struct record *rec)
{
    char k[32];
    uint32_t kl = record_klen(rec);
    if (kl < 5 || kl >= sizeof k)
        return 0;
    memcpy(k, record_key(rec), kl);
    k[kl] = 0;
    return strncmp(k, "key:", 4) == 0 && atoi(k + 4) < NKEYS;
}

static void failf(struct ctx *c, const char *m)
{
    if (atomic_exchange(&c->failed, 1) == 0)
        snprintf(c->why, sizeof c->why, "%s", m);
}

/* the values put: filled before the workers start, then only read */
static char val[24000];

static void *worker(void *arg)
{
    struct ctx *c = arg;
    uint64_t seed = (uint64_t)(uintptr_t)&seed ^ 0x1234567;
    char key[32];
    unsigned long n = 0;
    struct record *keep[KEEP] = {0};
    while (now() < c->deadline && !atomic_load(&c->failed)) {
        for (int burst = 0; burst < 64; burst++, n++) {
            uint64_t r = xs(&seed);
            int k = (int)(r % NKEYS);
            int kl = snprintf(key, sizeof key, "key:%d", k);
            int tv = (int)((r >> 20) % NTAGVALS);
            switch ((r >> 40) % 12) {
            case 0:
            case 1:
            case 2: { /* put with up to 3 tags */
                struct mdc_tag t[3] = {{1, tv}, {2, tv / 4}, {3, k % 7}};
                struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                        .value = val,
                                        /* 1 in 16 large: the record
                                         * slabs' classes to 24 KiB */
                                        .vlen = (uint32_t)((r >> 48) % 16
                                                    ? r % 60
                                                    : (r >> 24) % 24000),
                                        .tags = t,
                                        .ntags = (uint32_t)((r >> 8) % 4)};
                int rc = store_put(c->st, STORE_SET, &it, NULL);
                if (rc != ST_OK && rc != ST_NO_MEMORY)
                    failf(c, "put failed");
                break;
            }
            case 3:
                store_delete(c->st, key, (uint32_t)kl, 0);
                break;
            case 4:
            case 5: {
                struct record *rec = store_get(c->st, key, (uint32_t)kl);
                if (rec != NULL) {
                    if (record_klen(rec) != (uint32_t)kl ||
                        memcmp(record_key(rec), key, (size_t)kl) != 0)
                        failf(c, "get returned another key");
                    /* keep it a while; what it replaces in the ring, or
                     * in the handoff, is checked intact and released */
                    struct record *old = keep[(r >> 8) % KEEP];
                    keep[(r >> 8) % KEEP] = rec;
                    if (old != NULL && (r >> 12) % 4 == 0)
                        old = atomic_exchange(&c->handoff, old);
                    if (old != NULL) {
                        if (!key_ok(old))
                            failf(c, "a kept record changed under its reader");
                        store_release(c->st, old);
                    }
                }
                break;
            }
            case 6: {
                struct store_recset s;
                int32_t tvs[2] = {tv, (tv + 1) % NTAGVALS};
                store_get_by_tag(c->st, 1, tvs, 2, &s);
                for (size_t i = 0; i < s.n; i++) {
                    int ok = 0;
                    for (uint32_t j = 0; j < record_ntags(s.recs[i]); j++) {
                        struct mdc_tag t = record_tag(s.recs[i], j);
                        if (t.tkey == 1 && (t.tval == tvs[0] ||
                                            t.tval == tvs[1]))
                            ok = 1;
                    }
                    if (!ok)
                        failf(c, "get_by_tag returned a record without tag");
                    for (size_t m = 0; m < i; m++)
                        if (s.recs[m] == s.recs[i])
                            failf(c, "get_by_tag returned a record twice");
                }
                store_recset_release(c->st, &s);
                break;
            }
            case 7: {
                if ((r >> 50) % 8 == 0) {
                    int32_t t2 = tv / 4;
                    store_del_by_tag(c->st, 2, &t2, 1, NULL);
                }
                break;
            }
            case 8: {
                kl = snprintf(key, sizeof key, "ctr:%d", k % 16);
                uint64_t v, cas;
                /* cas_out is read back after the commit: a regression test
                 * for reading the new record after its lock was dropped */
                if (store_atomic(c->st, ATOMIC_ADD, key, (uint32_t)kl, 1, 0,
                                 &v, &cas) == ST_NOT_FOUND) {
                    struct mdc_tag t = {4, k % 3};
                    struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                            .value = "0", .vlen = 1,
                                            .tags = &t, .ntags = 1};
                    store_put(c->st, STORE_ADD, &it, &cas);
                }
                break;
            }
            case 9: {
                uint64_t v;
                kl = snprintf(key, sizeof key, "ctr:%d", k % 16);
                store_atomic(c->st, (r & 1) ? ATOMIC_READ_CLEAR : ATOMIC_CMPSET,
                             key, (uint32_t)kl, 3, 0, &v, NULL);
                uint64_t cas;
                store_incr(c->st, key, (uint32_t)kl, 2, (r >> 1) & 1, &v,
                           &cas);
                break;
            }
            case 10: {
                struct mdc_tag t = {5, tv % 4};
                char kb[STORE_TSTACK_KEYMAX];
                uint32_t kbl;
                if (r & 1) {
                    store_tstack_push(c->st, t, val, 8, 0, 0, kb, &kbl, NULL);
                } else {
                    struct record *rec;
                    if (store_tstack_pop(c->st, t, &rec) == ST_OK)
                        store_release(c->st, rec);
                }
                break;
            }
            case 11: {
                struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                        .value = "x", .vlen = 1};
                uint64_t cas;
                store_put(c->st, (r & 1) ? STORE_APPEND : STORE_PREPEND, &it,
                          &cas);
                store_touch(c->st, key, (uint32_t)kl, (int64_t)(r % 3600));
                break;
            }
            }
        }
    }
    for (int i = 0; i < KEEP; i++) {
        if (keep[i] != NULL && !key_ok(keep[i]))
            failf(c, "a kept record changed under its reader");
        store_release(c->st, keep[i]);
    }
    atomic_fetch_add(&c->ops, n);
    return NULL;
}

static void test_mixed(void **state)
{
    (void)state;
    /* small enough that eviction runs all the time */
    /* the table starts at 64 buckets and grows (linear hashing) while the
     * workers run */
    struct store_config cfg = {.mem_limit = 128 * 1024, .nbuckets = 4096,
                               .initial_buckets = 64,
                               .nlocks = 64, .tag_buckets = 8,
                               .sweep_interval_ms = 5};
    struct ctx c = {0};
    c.st = store_setup(&cfg);
    assert_non_null(c.st);
    memset(val, 'v', sizeof val);
    c.deadline = now() + seconds();
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, &c);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    store_release(c.st, atomic_exchange(&c.handoff, NULL));
    if (atomic_load(&c.failed))
        fail_msg("%s", c.why);
    struct store_stats s;
    store_get_stats(c.st, &s);
    print_message("  %lu ops, %llu items, %llu evictions, %llu tag links\n",
                  (unsigned long)atomic_load(&c.ops),
                  (unsigned long long)s.curr_items,
                  (unsigned long long)s.evictions,
                  (unsigned long long)s.tag_links);
    assert_true(s.evictions > 0);
    assert_true(s.nbuckets > 64); /* it grew under load */
    assert_true(s.bytes <= cfg.mem_limit + 64 * 1024);
    char msg[256];
    if (store_check(c.st, msg, sizeof msg) != 0)
        fail_msg("indexes disagree: %s", msg);
    store_flush(c.st);
    /* the flush is a cut-off: the sweep reclaims what it hides (this
     * store's sweeper thread may be walking too: sweep until it is done,
     * a 30 s ceiling that only a hang crosses) */
    for (int i = 0; i < 30000; i++) {
        (void)store_sweep(c.st, SIZE_MAX);
        store_get_stats(c.st, &s);
        if (s.curr_items == 0)
            break;
        usleep(1000);
    }
    assert_int_equal(s.curr_items, 0);
    assert_int_equal(s.tag_links, 0);
    assert_int_equal(s.tag_values, 0);
    assert_int_equal(s.bytes, 0);
    if (store_check(c.st, msg, sizeof msg) != 0)
        fail_msg("after flush: %s", msg);
    store_teardown(c.st);
}

/* ---- del_by_tag against a concurrent tagged writer ------------------------ */
#define RKEYS 16
struct race {
    struct store *st;
    double deadline;
    atomic_ulong completed; /* highest sequence whose put has returned */
    atomic_int stop;
};

static void *race_writer(void *arg)
{
    struct race *r = arg;
    char key[16], v[24];
    struct mdc_tag t = {7, 7};
    for (unsigned long seq = 1; !atomic_load(&r->stop); seq++) {
        int kl = snprintf(key, sizeof key, "r%lu", seq % RKEYS);
        int vl = snprintf(v, sizeof v, "%lu", seq);
        struct store_item it = {.key = key, .klen = (uint32_t)kl, .value = v,
                                .vlen = (uint32_t)vl, .tags = &t, .ntags = 1};
        if (store_put(r->st, STORE_SET, &it, NULL) == ST_OK)
            atomic_store(&r->completed, seq);
        /* an append keeps the tag: the record is replaced by a new one */
        if (seq % 5 == 0) {
            struct store_item ap = {.key = key, .klen = (uint32_t)kl,
                                    .value = "", .vlen = 0};
            store_put(r->st, STORE_APPEND, &ap, NULL);
        }
    }
    return NULL;
}

static void test_del_by_tag_race(void **state)
{
    (void)state;
    struct store_config cfg = {.nbuckets = 1024};
    struct race r = {0};
    r.st = store_setup(&cfg);
    pthread_t w;
    pthread_create(&w, NULL, race_writer, &r);
    double end = now() + seconds() / 2;
    unsigned long rounds = 0;
    while (now() < end) {
        unsigned long snap = atomic_load(&r.completed);
        int32_t tv = 7;
        assert_int_equal(store_del_by_tag(r.st, 7, &tv, 1, NULL), ST_OK);
        for (int i = 0; i < RKEYS; i++) {
            char key[16];
            int kl = snprintf(key, sizeof key, "r%d", i);
            struct record *rec = store_get(r.st, key, (uint32_t)kl);
            if (rec == NULL)
                continue;
            char v[24] = {0};
            memcpy(v, record_value(rec), record_vlen(rec) < 23
                                             ? record_vlen(rec) : 23);
            unsigned long seq = strtoul(v, NULL, 10);
            store_release(r.st, rec);
            /* every value acknowledged before del_by_tag began carried
             * the tag then: it must be gone (a later write may be there) */
            if (seq <= snap)
                fail_msg("key %s holds seq %lu, acknowledged before "
                         "del_by_tag began (snapshot %lu)", key, seq, snap);
        }
        rounds++;
    }
    atomic_store(&r.stop, 1);
    pthread_join(w, NULL);
    print_message("  %lu del_by_tag rounds\n", rounds);
    char msg[256];
    if (store_check(r.st, msg, sizeof msg) != 0)
        fail_msg("indexes disagree: %s", msg);
    store_teardown(r.st);
}

/* ---- stale tag deletes: one winner per record, and the race rule --------- */
#define WKEYS 64
#define WREADERS 4
struct wins {
    struct store *st;
    pthread_barrier_t go, done;
    atomic_int stop;
    atomic_uint won[WKEYS];   /* W handed out this round, per key */
    atomic_uint other[WKEYS]; /* replies without W: must carry Z and X */
    atomic_uint bad;
};

static void *win_reader(void *arg)
{
    struct wins *w = arg;
    char key[16];
    struct store_mget q = {0};
    for (;;) {
        pthread_barrier_wait(&w->go);
        if (atomic_load(&w->stop))
            return NULL;
        for (int i = 0; i < WKEYS; i++) {
            struct store_mget_res res;
            int kl = snprintf(key, sizeof key, "w%d", i);
            struct record *r = store_mget(w->st, key, (uint32_t)kl, &q, &res);
            if (r == NULL || !res.stale)
                atomic_fetch_add(&w->bad, 1);
            else if (res.won)
                atomic_fetch_add(&w->won[i], 1);
            else if (res.pending)
                atomic_fetch_add(&w->other[i], 1);
            else
                atomic_fetch_add(&w->bad, 1);
            store_release(w->st, r);
        }
        pthread_barrier_wait(&w->done);
    }
}

static void test_stale_one_winner(void **state)
{
    (void)state;
    struct store_config cfg = {.nbuckets = 1024};
    struct wins w;
    memset(&w, 0, sizeof w);
    w.st = store_setup(&cfg);
    pthread_barrier_init(&w.go, NULL, WREADERS + 1);
    pthread_barrier_init(&w.done, NULL, WREADERS + 1);
    struct mdc_tag t = {9, 9};
    for (int i = 0; i < WKEYS; i++) {
        char key[16];
        int kl = snprintf(key, sizeof key, "w%d", i);
        struct store_item it = {.key = key, .klen = (uint32_t)kl,
                                .value = "v", .vlen = 1, .tags = &t,
                                .ntags = 1};
        assert_int_equal(store_put(w.st, STORE_SET, &it, NULL), ST_OK);
    }
    pthread_t th[WREADERS];
    for (int i = 0; i < WREADERS; i++)
        pthread_create(&th[i], NULL, win_reader, &w);
    double end = now() + seconds() / 2;
    unsigned long rounds = 0;
    while (now() < end || rounds < 10) {
        int32_t tv = 9;
        uint64_t n = 0;
        assert_int_equal(store_stale_by_tag(w.st, 9, &tv, 1, false, 0, &n),
                         ST_OK);
        assert_int_equal(n, WKEYS);
        for (int i = 0; i < WKEYS; i++) {
            atomic_store(&w.won[i], 0);
            atomic_store(&w.other[i], 0);
        }
        pthread_barrier_wait(&w.go);
        pthread_barrier_wait(&w.done);
        assert_int_equal(atomic_load(&w.bad), 0);
        for (int i = 0; i < WKEYS; i++) {
            if (atomic_load(&w.won[i]) != 1)
                fail_msg("round %lu: key w%d had %u winners", rounds, i,
                         atomic_load(&w.won[i]));
            assert_int_equal(atomic_load(&w.other[i]), WREADERS - 1);
        }
        rounds++;
    }
    atomic_store(&w.stop, 1);
    pthread_barrier_wait(&w.go);
    for (int i = 0; i < WREADERS; i++)
        pthread_join(th[i], NULL);
    print_message("  %lu stale rounds, one winner each\n", rounds);
    pthread_barrier_destroy(&w.go);
    pthread_barrier_destroy(&w.done);
    store_teardown(w.st);
}

/* A writer storing versions (set only: an append would make a record
 * fresh, as in memcached) and readers taking wins, against stale tag
 * deletes: after each, no version acknowledged before it began may be
 * read fresh. */
static void *stale_writer(void *arg)
{
    struct race *r = arg;
    char key[16], v[24];
    struct mdc_tag t = {7, 7};
    for (unsigned long seq = 1; !atomic_load(&r->stop); seq++) {
        int kl = snprintf(key, sizeof key, "r%lu", seq % RKEYS);
        int vl = snprintf(v, sizeof v, "%lu", seq);
        struct store_item it = {.key = key, .klen = (uint32_t)kl, .value = v,
                                .vlen = (uint32_t)vl, .tags = &t, .ntags = 1};
        if (store_put(r->st, STORE_SET, &it, NULL) == ST_OK)
            atomic_store(&r->completed, seq);
    }
    return NULL;
}

static void *stale_reader(void *arg)
{
    struct race *r = arg;
    char key[16];
    struct store_mget q = {0};
    for (unsigned i = 0; !atomic_load(&r->stop); i++) {
        struct store_mget_res res;
        int kl = snprintf(key, sizeof key, "r%u", i % RKEYS);
        store_release(r->st, store_mget(r->st, key, (uint32_t)kl, &q, &res));
    }
    return NULL;
}

static void test_stale_by_tag_race(void **state)
{
    (void)state;
    struct store_config cfg = {.nbuckets = 1024};
    struct race r = {0};
    r.st = store_setup(&cfg);
    pthread_t w, rd[2];
    pthread_create(&w, NULL, stale_writer, &r);
    for (int i = 0; i < 2; i++)
        pthread_create(&rd[i], NULL, stale_reader, &r);
    double end = now() + seconds() / 2;
    unsigned long rounds = 0, checked = 0;
    while (now() < end) {
        unsigned long snap = atomic_load(&r.completed);
        int32_t tv = 7;
        assert_int_equal(store_stale_by_tag(r.st, 7, &tv, 1, false, 0, NULL),
                         ST_OK);
        for (int i = 0; i < RKEYS; i++) {
            char key[16];
            int kl = snprintf(key, sizeof key, "r%d", i);
            struct store_mget q = {.no_bump = true};
            struct store_mget_res res;
            struct record *rec = store_mget(r.st, key, (uint32_t)kl, &q, &res);
            if (rec == NULL)
                continue;
            char v[24] = {0};
            memcpy(v, record_value(rec), record_vlen(rec) < 23
                                             ? record_vlen(rec) : 23);
            unsigned long seq = strtoul(v, NULL, 10);
            store_release(r.st, rec);
            if (seq <= snap && !res.stale)
                fail_msg("key %s holds seq %lu fresh, acknowledged before "
                         "the stale tdel began (snapshot %lu)", key, seq,
                         snap);
            checked++;
        }
        rounds++;
    }
    atomic_store(&r.stop, 1);
    pthread_join(w, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(rd[i], NULL);
    print_message("  %lu stale tdel rounds, %lu reads checked\n", rounds,
                  checked);
    char msg[256];
    if (store_check(r.st, msg, sizeof msg) != 0)
        fail_msg("indexes disagree: %s", msg);
    store_teardown(r.st);
}

/* ---- append and incr on a key that comes and goes ------------------------ */
/* A read-modify-write whose record goes away between its read and its
 * commit answers as if there had been none: NOT_STORED for an append,
 * NOT_FOUND for a counter (memcached's answers), never another status.
 * Another thread sets and deletes both keys until each outcome of each
 * operation was seen often (a hang, not a timing, fails it). */
struct vanish {
    struct store *st;
    atomic_int stop;
};

static void *vanish_writer(void *arg)
{
    struct vanish *v = arg;
    static const char *keys[] = {"va", "vi"};
    while (!atomic_load(&v->stop))
        for (int i = 0; i < 2; i++) {
            struct store_item it = {.key = keys[i], .klen = 2, .value = "1",
                                    .vlen = 1};
            assert_int_equal(store_put(v->st, STORE_SET, &it, NULL), ST_OK);
            /* a while with the key there, then gone */
            for (int k = 0; k < 4; k++) {
                struct record *r = store_get(v->st, keys[i], 2);
                if (r != NULL)
                    store_release(v->st, r);
            }
            store_delete(v->st, keys[i], 2, 0);
        }
    return NULL;
}

static void test_rmw_vanishing(void **state)
{
    (void)state;
    struct store_config cfg = {.nbuckets = 1024};
    struct vanish v = {0};
    v.st = store_setup(&cfg);
    pthread_t w;
    assert_int_equal(pthread_create(&w, NULL, vanish_writer, &v), 0);
    unsigned long seen[4] = {0}; /* append ok, not stored, incr ok, not found */
    /* a hang's ceiling: the writer may get little of a busy machine */
    double ceiling = now() + 120;
    while (seen[0] < 1000 || seen[1] < 1000 || seen[2] < 1000 ||
           seen[3] < 1000) {
        if (now() > ceiling)
            fail_msg("120 s without each outcome 1000 times: %lu %lu %lu %lu",
                     seen[0], seen[1], seen[2], seen[3]);
        struct store_item ap = {.key = "va", .klen = 2, .value = "0",
                                .vlen = 1};
        int rc = store_put(v.st, STORE_APPEND, &ap, NULL);
        if (rc != ST_OK && rc != ST_NOT_STORED)
            fail_msg("append on a vanishing key: status %d", rc);
        seen[rc == ST_OK ? 0 : 1]++;
        uint64_t n;
        rc = store_incr(v.st, "vi", 2, 1, false, &n, NULL);
        if (rc != ST_OK && rc != ST_NOT_FOUND)
            fail_msg("incr on a vanishing key: status %d", rc);
        seen[rc == ST_OK ? 2 : 3]++;
    }
    atomic_store(&v.stop, 1);
    pthread_join(w, NULL);
    print_message("  appends %lu stored, %lu not; incrs %lu done, %lu not\n",
                  seen[0], seen[1], seen[2], seen[3]);
    char msg[256];
    if (store_check(v.st, msg, sizeof msg) != 0)
        fail_msg("indexes disagree: %s", msg);
    store_teardown(v.st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_del_by_tag_race),
        cmocka_unit_test(test_stale_one_winner),
        cmocka_unit_test(test_stale_by_tag_race),
        cmocka_unit_test(test_rmw_vanishing),
    };
    return cmocka_run_group_tests_name("stress", tests, NULL, NULL);
}
