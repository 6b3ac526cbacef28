/*
 * test_reads.c - the read path writes nothing shared (issue 13 item 1):
 * a GET leaves the record's header and its stripe lock as they were, its
 * access time is refreshed at most once a grain, and a record a reader
 * holds outlives its deletion until released - by the same thread or by
 * another, past the thread's hold slots too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "server/core/store_policy.h"
#include "testclock.h"

static struct store *mk(struct testclock *tc)
{
    struct store_config c = {0};
    c.nbuckets = 1024;
    struct store *st = store_setup(&c);
    assert_non_null(st);
    tc->mono_ns = 1000000000ull * 1000;
    tc->wall_s = 1700000000;
    testclock_install(st, tc);
    return st;
}

static void set(struct store *st, const char *k, const char *v)
{
    struct store_item it = {.key = k, .klen = (uint32_t)strlen(k),
                            .value = v, .vlen = (uint32_t)strlen(v)};
    assert_int_equal(store_put(st, STORE_SET, &it, NULL), ST_OK);
}

static uint64_t bytes(struct store *st)
{
    struct store_stats s;
    store_get_stats(st, &s);
    return s.bytes;
}

static mdc_brlock_t *stripe(struct store *st, const char *k)
{
    uint64_t h = store_hash(k, (uint32_t)strlen(k));
    return &st->locks[(uint32_t)h & st->lmask];
}

struct snap {
    mdc_brlock_t lock;
    int same;
};
static void in_lock(void *ctx, struct store *st, const struct record *r)
{
    struct snap *s = ctx;
    (void)r;
    s->same = memcmp(&s->lock, stripe(st, "k"), sizeof(s->lock)) == 0;
}

/* While a GET's record is out, the record's header is byte for byte what
 * it was; inside a read the stripe lock is too (a pthread read lock counts
 * its readers in it, a count in the record is a shared write). */
static void test_get_writes_nothing_shared(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    set(st, "k", "value");
    struct record *r = store_get(st, "k", 1); /* first read: flags, atime */
    assert_non_null(r);
    store_release(st, r);

    struct record before;
    memcpy(&before, r, sizeof(before));
    tc.mono_ns += 5000000; /* 5 ms later: within the atime grain */
    struct record *r2 = store_get(st, "k", 1);
    assert_ptr_equal(r2, r);
    assert_memory_equal(&before, r2, sizeof(before));
    struct record *r3 = store_get(st, "k", 1); /* two reads out at once */
    assert_memory_equal(&before, r3, sizeof(before));
    store_release(st, r3);
    store_release(st, r2);

    /* the SET revoked the stripe's bias; a read after the inhibition
     * (a few microseconds) restores it */
    mdc_brlock_t *l = stripe(st, "k");
    for (int i = 0; i < 1000000 && !atomic_load(&l->rbias); i++)
        store_release(st, store_get(st, "k", 1));
    assert_true(atomic_load(&l->rbias));
    struct snap sn;
    memcpy(&sn.lock, l, sizeof(sn.lock));
    sn.same = 0;
    assert_int_equal(store_visit(st, "k", 1, in_lock, &sn), 1);
    assert_true(sn.same);
    store_teardown(st);
}

/* Recency for eviction survives: the access time and the eviction bits
 * (reads counted, store_record.h's EVB_*) move once a grain, together. */
static void test_atime_grain(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    set(st, "k", "v");
    struct record *r = store_get(st, "k", 1);
    uint16_t a0 = r->atime;
    uint8_t e0 = r->evb;
    assert_int_equal(e0 & EVB_READS, 1);
    store_release(st, r);
    for (int i = 0; i < 100; i++) {
        tc.mono_ns += 1000000; /* 100 reads in 0.1 s */
        r = store_get(st, "k", 1);
        assert_int_equal(r->atime, a0);
        assert_int_equal(r->evb, e0);
        store_release(st, r);
    }
    tc.mono_ns += 3000000000ull; /* 3 s: at least ATIME_GRAIN ticks */
    r = store_get(st, "k", 1);
    assert_true(r->atime != a0);
    assert_int_equal(r->evb & EVB_READS, 2);
    store_release(st, r);
    /* a read every 10 ms for 10 s: the record's atime and evb are written
     * at most once a second, and at least every ATIME_GRAIN + 1 ticks */
    uint16_t a = r->atime;
    uint64_t last = tc.mono_ns;
    int writes = 0;
    for (int i = 0; i < 1000; i++) {
        tc.mono_ns += 10000000;
        r = store_get(st, "k", 1);
        if (r->atime != a) {
            assert_true(tc.mono_ns - last >= 1000000000ull);
            assert_true(tc.mono_ns - last <=
                        (uint64_t)(ATIME_GRAIN + 1) << ATIME_SHIFT);
            a = r->atime;
            last = tc.mono_ns;
            writes++;
        }
        store_release(st, r);
    }
    assert_true(writes >= 3 && writes <= 10);
    store_teardown(st);
}

/* The 16-bit tick wraps every ~19.5 h: a read just before the wrap and
 * one just after (2 us apart) write atime and evb once, and the second
 * reports an idle time under a second.  Checked at the first two multiples
 * of 2^16 and of 65535 ticks (before the fix, tick 0 read as 1: a record
 * read at tick 65535 looked two ticks old at the next, and was written
 * again).  Then reads every 100 ms across a wrap: writes at least a second
 * apart, and at most ATIME_GRAIN + 1 ticks. */
static void test_atime_wrap(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    const uint64_t wraps[] = {65535, 65536, 2 * 65535, 2 * 65536};
    for (size_t i = 0; i < sizeof(wraps) / sizeof(wraps[0]); i++) {
        char k[8];
        snprintf(k, sizeof(k), "w%zu", i);
        tc.mono_ns = (wraps[i] << ATIME_SHIFT) - 1000;
        set(st, k, "v");
        struct store_access prev;
        struct record *r = store_get_access(st, k, 2, &prev);
        uint16_t a0 = r->atime;
        assert_int_equal(r->evb & EVB_READS, 1);
        store_release(st, r);
        tc.mono_ns += 2000; /* over the wrap */
        r = store_get_access(st, k, 2, &prev);
        assert_int_equal(r->atime, a0);
        assert_int_equal(r->evb & EVB_READS, 1);
        assert_true(prev.hit_before);
        assert_true(prev.idle_s <= 1);
        /* and the idle ticks a dump writes: one tick, not two */
        assert_true(record_idle_ticks(st, r) <= 1u << IDLE_TICK_SHIFT);
        store_release(st, r);
    }

    set(st, "k", "v");
    tc.mono_ns = (3 * 65535ull - 6) << ATIME_SHIFT;
    store_release(st, store_get(st, "k", 1));
    struct record *r = store_get(st, "k", 1);
    uint16_t a = r->atime;
    store_release(st, r);
    uint64_t last = tc.mono_ns;
    int writes = 0;
    for (int i = 0; i < 150; i++) { /* 15 s, through tick 3 * 65535 */
        tc.mono_ns += 100000000;
        r = store_get(st, "k", 1);
        if (r->atime != a) {
            assert_true(tc.mono_ns - last >= 1000000000ull);
            assert_true(tc.mono_ns - last <=
                        (uint64_t)(ATIME_GRAIN + 1) << ATIME_SHIFT);
            a = r->atime;
            last = tc.mono_ns;
            writes++;
        }
        store_release(st, r);
    }
    assert_true(writes >= 4 && writes <= 8);
    store_teardown(st);
}

static void idle_of(void *ctx, struct store *st, const struct record *r)
{
    *(uint32_t *)ctx = record_idle_ticks(st, r);
}

/* A record loaded from a dump with an idle time keeps it across the
 * wrap: restored around tick 65535 with 5 ticks idle, it reads as 5 ticks
 * idle (its atime is counted back past the wrap; before the fix, a record
 * restored 5 ticks after the 16-bit wrap got atime 0 -> 1 and read as 4). */
static void test_restore_idle_wrap(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    for (uint64_t t = 65535 - 2; t <= 65535 + 7; t++) {
        char k[16];
        snprintf(k, sizeof(k), "r%llu", (unsigned long long)t);
        tc.mono_ns = (t << ATIME_SHIFT) + 1000;
        struct store_restore it = {.key = k, .klen = (uint32_t)strlen(k),
                                   .value = "v", .vlen = 1, .cas = 7,
                                   .idle_ticks = 5u << IDLE_TICK_SHIFT};
        struct record *tagged;
        assert_int_equal(store_restore(st, &it, &tagged), ST_OK);
        uint32_t idle = 0;
        assert_int_equal(store_visit(st, k, (uint32_t)strlen(k), idle_of,
                                     &idle), 1);
        assert_int_equal(idle, 5u << IDLE_TICK_SHIFT);
    }
    store_teardown(st);
}

/* mg's l (seconds since last access) as the store path reports it. */
static uint32_t mg_idle(struct store *st, const char *k, bool no_bump,
                        bool *hit_before)
{
    struct store_mget q = {.no_bump = no_bump};
    struct store_mget_res res;
    struct record *r = store_mget(st, k, (uint32_t)strlen(k), &q, &res);
    assert_non_null(r);
    store_release(st, r);
    *hit_before = res.prev.hit_before;
    return res.prev.idle_s;
}

/* A record never read is idle since its store, as memcached's (an item's
 * time is set when it is stored): 60 s after the store, mg's l reports
 * 58-60 s (ticks of ~1.07 s) and a dump's idle time the same, not the age
 * of the clock (before the fix atime 0 read as tick 0: l was 1060 here,
 * the store clock being at 1060 s).  A replacement is idle since it
 * replaced, a touch since it touched.  The first read still counts for
 * eviction however soon it comes, and later reads report the time since
 * the last one. */
static void test_idle_since_store(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    bool h;
    set(st, "k", "v");
    testclock_advance(&tc, 60);
    uint32_t l = mg_idle(st, "k", true, &h); /* u: nothing recorded */
    assert_false(h);
    assert_in_range(l, 58, 60);
    uint32_t idle = 0;
    assert_int_equal(store_visit(st, "k", 1, idle_of, &idle), 1);
    assert_in_range(idle, 55u << IDLE_TICK_SHIFT, 56u << IDLE_TICK_SHIFT);
    struct store_access prev;
    struct record *r = store_get_access(st, "k", 1, &prev);
    assert_false(prev.hit_before);
    assert_in_range(prev.idle_s, 58, 60);
    assert_int_equal(r->evb & EVB_READS, 1);
    store_release(st, r);
    testclock_advance(&tc, 10);
    l = mg_idle(st, "k", false, &h);
    assert_true(h);
    assert_in_range(l, 9, 10);

    /* a replacement: idle since it replaced; its first read, at once,
     * counts (the 2 reads of the ones it replaced, then 3) */
    testclock_advance(&tc, 20);
    set(st, "k", "w");
    testclock_advance(&tc, 5);
    l = mg_idle(st, "k", true, &h);
    assert_false(h);
    assert_in_range(l, 3, 5);
    set(st, "k", "x");
    r = store_get_access(st, "k", 1, &prev);
    assert_false(prev.hit_before);
    assert_true(prev.idle_s <= 1);
    assert_int_equal(r->evb & EVB_READS, 3);
    store_release(st, r);

    /* a record stored and read in the same tick: that read counts too */
    set(st, "n", "v");
    r = store_get(st, "n", 1);
    assert_int_equal(r->evb & EVB_READS, 1);
    store_release(st, r);

    /* gat: idle since the touch */
    set(st, "g", "v");
    testclock_advance(&tc, 30);
    r = store_gat(st, "g", 1, 100);
    assert_int_equal(r->evb & EVB_READS, 1);
    store_release(st, r);
    testclock_advance(&tc, 3);
    l = mg_idle(st, "g", true, &h);
    assert_true(h);
    assert_in_range(l, 2, 3);
    store_teardown(st);
}

/* A read dates itself on the store clock by the record's 48-bit version:
 * the key length sharing that word (cas_klen) is not part of its age.  A
 * long key is stored, then 1000 others: its first read records an age of
 * about 1000 stores (evb's log-scaled code), not 0 or a wrapped one. */
static void test_evb_age_is_version_age(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    char key[200];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    set(st, key, "v");
    for (int i = 0; i < 1000; i++) {
        char k[16];
        snprintf(k, sizeof(k), "o%d", i);
        set(st, k, "v");
    }
    struct record *r = store_get(st, key, strlen(key));
    assert_non_null(r);
    assert_int_equal(rec_klen(r), strlen(key));
    assert_true(rec_age(r, cas_clock()) >= 1000 &&
                rec_age(r, cas_clock()) <= 1001);
    unsigned code = r->evb >> EVB_AGE_SHIFT;
    assert_int_equal(r->evb & EVB_READS, 1);
    assert_int_equal(code, evb_age_code(1000));
    store_release(st, r);
    store_teardown(st);
}

/* A held record outlives deletion and overwrite, its bytes accounted until
 * the last release; more holds than a thread's slots fall back to counts. */
static void test_hold_outlives_delete(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    uint64_t empty = bytes(st);
    set(st, "k", "first");
    uint64_t one = bytes(st);
    enum { N = MDC_HOLDS * 2 + 3 };
    struct record *h[N];
    for (int i = 0; i < N; i++) {
        h[i] = store_get(st, "k", 1);
        assert_non_null(h[i]);
    }
    set(st, "k", "second"); /* the first record leaves the index */
    assert_int_equal(store_delete(st, "k", 1, 0), ST_OK);
    assert_int_equal(bytes(st), one); /* still held: still accounted */
    for (int i = 0; i < N; i++)
        assert_memory_equal(record_value(h[i]), "first", 5);
    /* release in a scrambled order */
    for (int i = 0; i < N; i++) {
        int j = (i * 7) % N;
        assert_int_equal(bytes(st), one);
        store_release(st, h[j]);
    }
    assert_int_equal(bytes(st), empty);
    store_teardown(st);
}

struct xt {
    struct store *st;
    struct record *r[MDC_HOLDS + 2];
    int n;
};
static void *take(void *arg)
{
    struct xt *x = arg;
    for (int i = 0; i < x->n; i++)
        x->r[i] = store_get(x->st, "x", 1);
    return NULL;
}
static void *give_back(void *arg)
{
    struct xt *x = arg;
    for (int i = 0; i < x->n; i++)
        store_release(x->st, x->r[i]);
    return NULL;
}

/* A hold taken by one thread may be released by another (a connection
 * closed elsewhere), also after the first thread exited. */
static void test_release_by_another_thread(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    uint64_t empty = bytes(st);
    set(st, "x", "value");
    struct xt x = {.st = st, .n = MDC_HOLDS + 2};
    pthread_t a, b;
    pthread_create(&a, NULL, take, &x);
    pthread_join(a, NULL);
    for (int i = 0; i < x.n; i++)
        assert_non_null(x.r[i]);
    assert_int_equal(store_delete(st, "x", 1, 0), ST_OK);
    assert_true(bytes(st) > empty);
    pthread_create(&b, NULL, give_back, &x);
    pthread_join(b, NULL);
    assert_int_equal(bytes(st), empty);
    /* and while the taker is alive, from this thread */
    set(st, "x", "again");
    store_release(st, store_get(st, "x", 1)); /* this thread's slot */
    x.n = 3;
    pthread_create(&a, NULL, take, &x);
    pthread_join(a, NULL);
    assert_int_equal(store_delete(st, "x", 1, 0), ST_OK);
    give_back(&x);
    assert_int_equal(bytes(st), empty);
    char msg[256];
    assert_int_equal(store_check(st, msg, sizeof msg), 0);
    store_teardown(st);
}

struct excl {
    mdc_brlock_t l;
    atomic_int writer_in;
    atomic_int reader_go;
};
static void *writer(void *arg)
{
    struct excl *x = arg;
    mdc_br_wrlock(&x->l);
    atomic_store(&x->writer_in, 1);
    mdc_br_unlock(&x->l);
    return NULL;
}

/* A writer waits for a reader that took the biased (fast) path, and the
 * reader's next read after a write goes through the rwlock until the bias
 * returns. */
static void test_brlock_excludes_fast_readers(void **state)
{
    (void)state;
    struct excl x;
    mdc_brlock_init(&x.l);
    atomic_init(&x.writer_in, 0);
    mdc_br_rdlock(&x.l);
    assert_ptr_equal(atomic_load(&mdc_reader_self()->reading), &x.l);
    pthread_t w;
    pthread_create(&w, NULL, writer, &x);
    /* the writer revokes the bias (waited for, up to 10 s: a loaded
     * machine may not run it within a fixed sleep), then waits for us */
    struct timespec ms = {0, 1000 * 1000};
    for (int i = 0; i < 10000 && atomic_load(&x.l.rbias); i++)
        nanosleep(&ms, NULL);
    assert_int_equal(atomic_load(&x.l.rbias), 0); /* it revoked */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&x.writer_in), 0); /* still excluded */
    mdc_br_unlock(&x.l);
    pthread_join(w, NULL);
    assert_int_equal(atomic_load(&x.writer_in), 1);
    /* bias off: this read takes the pthread lock */
    mdc_br_rdlock(&x.l);
    assert_null(atomic_load(&mdc_reader_self()->reading));
    mdc_br_unlock(&x.l);
    /* a slow read after the inhibit time (9x the revocation, which here
     * waited 50 ms for us) biases the lock again */
    struct timespec tick = {0, 10 * 1000 * 1000};
    /* (30 s: a ceiling; the revocation, and so the inhibit time, is
     * longer on a busy machine) */
    for (int i = 0; i < 3000 && !atomic_load(&x.l.rbias); i++) {
        nanosleep(&tick, NULL);
        mdc_br_rdlock(&x.l);
        mdc_br_unlock(&x.l);
    }
    assert_int_equal(atomic_load(&x.l.rbias), 1);
    mdc_br_rdlock(&x.l);
    assert_ptr_equal(atomic_load(&mdc_reader_self()->reading), &x.l);
    mdc_br_unlock(&x.l);
    mdc_brlock_destroy(&x.l);
}

/* store_get_batch (issue 13, the pipelined lookup) answers exactly what
 * store_get answers key by key - hits, misses, an expired record, an
 * over-long key, the same key twice - at every batch length around the
 * pipeline's depth; its references are ordinary ones (a batch within the
 * hold slots writes no record header), and every byte is freed after. */
static void test_get_batch(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
    uint64_t empty = bytes(st);
    enum { NK = 300, NB = 40 };
    static char names[NK][16];
    static char longkey[STORE_MAX_KEY + 2];
    for (int i = 0; i < NK; i++) {
        snprintf(names[i], sizeof(names[i]), "key%d", i);
        if (i % 3 != 2) /* every third key is missing */
            set(st, names[i], names[i]);
    }
    struct store_item ex = {.key = "exp", .klen = 3, .value = "x", .vlen = 1,
                            .exptime = 5};
    assert_int_equal(store_put(st, STORE_SET, &ex, NULL), ST_OK);
    tc.mono_ns += 10ull * 1000000000u; /* "exp" is now expired */
    memset(longkey, 'L', sizeof(longkey));

    struct store_key ks[NB];
    struct record *out[NB];
    unsigned seed = 1;
    for (size_t n = 0; n <= NB; n++) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned pick = (seed >> 8) % (NK + 3);
            if (pick < NK)
                ks[i] = (struct store_key){names[pick],
                                           (uint32_t)strlen(names[pick])};
            else if (pick == NK)
                ks[i] = (struct store_key){"exp", 3};
            else if (pick == NK + 1)
                ks[i] = (struct store_key){longkey, STORE_MAX_KEY + 1};
            else
                ks[i] = i > 0 ? ks[i - 1] : (struct store_key){"key0", 4};
        }
        size_t hits = store_get_batch(st, ks, n, out);
        size_t want = 0;
        for (size_t i = 0; i < n; i++) {
            struct record *r = store_get(st, ks[i].key, ks[i].klen);
            assert_ptr_equal(out[i], r);
            if (r != NULL) {
                want++;
                assert_int_equal(record_klen(r), ks[i].klen);
                assert_memory_equal(record_key(r), ks[i].key, ks[i].klen);
                assert_memory_equal(record_value(r), ks[i].key, ks[i].klen);
                store_release(st, r);
            }
        }
        assert_int_equal(hits, want);
        for (size_t i = 0; i < n; i++)
            store_release(st, out[i]);
    }

    /* within the hold slots a batch leaves the record headers as they were */
    struct store_key k7[MDC_HOLDS];
    struct record before[MDC_HOLDS], *r7[MDC_HOLDS];
    for (int i = 0; i < MDC_HOLDS; i++) {
        k7[i] = (struct store_key){names[3 * i], (uint32_t)strlen(names[3 * i])};
        struct record *r = store_get(st, k7[i].key, k7[i].klen);
        memcpy(&before[i], r, sizeof(before[i]));
        store_release(st, r);
    }
    assert_int_equal(store_get_batch(st, k7, MDC_HOLDS, r7), MDC_HOLDS);
    for (int i = 0; i < MDC_HOLDS; i++)
        assert_memory_equal(&before[i], r7[i], sizeof(before[i]));
    /* and they outlive a flush and its reclaim until released (the flush
     * hides them; without a sweeper, store_sweep reclaims them) */
    store_flush(st);
    (void)store_sweep(st, SIZE_MAX);
    for (int i = 0; i < MDC_HOLDS; i++) {
        assert_true(bytes(st) > empty);
        assert_memory_equal(record_value(r7[i]), k7[i].key, k7[i].klen);
        store_release(st, r7[i]);
    }
    assert_int_equal(bytes(st), empty);
    store_teardown(st);
}

/* What every operation reads (the hook, clock, flush moment, limit, table
 * state) and what every store writes (the counters) and every release
 * reads (the retire list's count) sit on different cache lines, so
 * writers on one core do not invalidate the lines readers on another
 * need. */
static void test_counter_lines(void **state)
{
    (void)state;
    struct testclock tc;
    struct store *st = mk(&tc);
#define LINE(f) (((uintptr_t)&st->f) / 64)
    assert_int_equal((uintptr_t)st % 64, 0);
    uintptr_t hot[] = {LINE(mem), LINE(tag_mem), LINE(curr_items),
                       LINE(total_items), LINE(tagged_items), LINE(tag_links),
                       LINE(link_seq), LINE(expiring)};
    uintptr_t cold[] = {LINE(hstate), LINE(buckets), LINE(locks), LINE(tags),
                        LINE(hook), LINE(clk), LINE(epoch_ns), LINE(flush_at),
                        LINE(mem_limit), LINE(nretired)};
#undef LINE
    for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
        for (size_t j = 0; j < sizeof(cold) / sizeof(cold[0]); j++)
            assert_true(hot[i] != cold[j]);
    store_teardown(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_writes_nothing_shared),
        cmocka_unit_test(test_atime_grain),
        cmocka_unit_test(test_atime_wrap),
        cmocka_unit_test(test_idle_since_store),
        cmocka_unit_test(test_restore_idle_wrap),
        cmocka_unit_test(test_evb_age_is_version_age),
        cmocka_unit_test(test_hold_outlives_delete),
        cmocka_unit_test(test_release_by_another_thread),
        cmocka_unit_test(test_brlock_excludes_fast_readers),
        cmocka_unit_test(test_get_batch),
        cmocka_unit_test(test_counter_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
