/*
 * test_hook.c - the mutation hook fires for every mutating operation, before
 * the change is visible, and for none of the reads (table-driven).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/store.h"
#include "testclock.h"

struct listener {
    struct store *st;
    unsigned count[EV__COUNT];
    unsigned total;
    char last_key[64];
    uint64_t items_at_hook; /* curr_items seen from inside the hook */
};

static void hook(void *ctx, enum store_event ev, const void *key,
                 uint32_t klen, uint64_t hash)
{
    struct listener *l = ctx;
    assert_true(ev < EV__COUNT);
    if (key == NULL) { /* "every record": only a scheduled delayed flush */
        assert_int_equal(ev, EV_FLUSH);
        assert_int_equal(klen, 0);
        assert_int_equal(hash, 0);
        l->count[ev]++;
        l->total++;
        strcpy(l->last_key, "*");
        return;
    }
    assert_int_equal(hash, store_hash(key, klen));
    l->count[ev]++;
    l->total++;
    size_t n = klen < sizeof(l->last_key) - 1 ? klen : sizeof(l->last_key) - 1;
    memcpy(l->last_key, key, n);
    l->last_key[n] = 0;
    struct store_stats s;
    store_get_stats(l->st, &s);
    l->items_at_hook = s.curr_items;
}

static struct testclock tc;

static void put(struct store *st, enum store_mode m, const char *k,
                const char *v, int tagged, int64_t exp)
{
    struct mdc_tag t = {1, 1};
    struct store_item it = {.key = k, .klen = (uint32_t)strlen(k), .value = v,
                            .vlen = (uint32_t)strlen(v), .exptime = exp,
                            .tags = tagged ? &t : NULL, .ntags = tagged ? 1 : 0};
    (void)store_put(st, m, &it, NULL);
}

/* fixture: "k" = "10" tagged (1,1), "u" = "x" untagged, "e" expiring in 5s */
static void setup_data(struct store *st)
{
    put(st, STORE_SET, "k", "10", 1, 0);
    put(st, STORE_SET, "u", "x", 0, 0);
    put(st, STORE_SET, "e", "y", 0, 5);
}

static uint64_t cas_of(struct store *st, const char *k)
{
    struct record *r = store_get(st, k, (uint32_t)strlen(k));
    uint64_t c = r ? record_cas(r) : 0;
    store_release(st, r);
    return c;
}

#define OP(name) static void op_##name(struct store *st)
OP(set) { put(st, STORE_SET, "n", "v", 0, 0); }
OP(set_tagged) { put(st, STORE_SET, "u", "v", 1, 0); }
OP(add) { put(st, STORE_ADD, "n", "v", 0, 0); }
OP(replace) { put(st, STORE_REPLACE, "u", "v", 0, 0); }
OP(cas)
{
    struct store_item it = {.key = "u", .klen = 1, .value = "z", .vlen = 1,
                            .cas = cas_of(st, "u")};
    assert_int_equal(store_put(st, STORE_CAS, &it, NULL), ST_OK);
}
OP(append) { put(st, STORE_APPEND, "u", "a", 0, 0); }
OP(prepend) { put(st, STORE_PREPEND, "u", "p", 0, 0); }
OP(incr) { assert_int_equal(store_incr(st, "k", 1, 1, false, NULL, NULL), 0); }
OP(decr) { assert_int_equal(store_incr(st, "k", 1, 1, true, NULL, NULL), 0); }
OP(atomic_add)
{
    uint64_t v;
    assert_int_equal(store_atomic(st, ATOMIC_ADD, "k", 1, 1, 0, &v, NULL), 0);
}
OP(atomic_fetch_add)
{
    uint64_t v;
    assert_int_equal(store_atomic(st, ATOMIC_FETCH_ADD, "k", 1, 1, 0, &v,
                                  NULL), 0);
}
OP(atomic_cmpset)
{
    uint64_t v;
    assert_int_equal(store_atomic(st, ATOMIC_CMPSET, "k", 1, 10, 3, &v, NULL),
                     0);
}
OP(atomic_read_clear)
{
    uint64_t v;
    assert_int_equal(store_atomic(st, ATOMIC_READ_CLEAR, "k", 1, 0, 0, &v,
                                  NULL), 0);
}
OP(touch) { assert_int_equal(store_touch(st, "u", 1, 100), 0); }
OP(gat) { store_release(st, store_gat(st, "u", 1, 100)); }
OP(delete) { assert_int_equal(store_delete(st, "u", 1, 0), 0); }
OP(invalidate)
{
    assert_int_equal(store_invalidate(st, "u", 1, 0, true, 30), 0);
}
OP(stale_by_tag)
{
    int32_t tv = 1;
    uint64_t n = 0;
    assert_int_equal(store_stale_by_tag(st, 1, &tv, 1, false, 0, &n), 0);
    assert_int_equal(n, 1);
}
OP(cas_invalidate)
{
    struct store_item it = {.key = "u", .klen = 1, .value = "z", .vlen = 1,
                            .cas = 1, .invalidate = true};
    assert_int_equal(store_put(st, STORE_CAS, &it, NULL), ST_OK);
}
static void mget_op(struct store *st, const char *k,
                    const struct store_mget *q, bool want_win)
{
    struct store_mget_res res;
    struct record *r = store_mget(st, k, (uint32_t)strlen(k), q, &res);
    assert_non_null(r);
    assert_int_equal(res.won, want_win);
    store_release(st, r);
}
OP(mget_vivify)
{
    struct store_mget q = {.vivify = true, .vivify_exptime = 30};
    mget_op(st, "n", &q, true);
}
OP(mget_touch)
{
    struct store_mget q = {.touch = true, .exptime = 30};
    mget_op(st, "u", &q, false);
}
OP(mget_recache_win)
{
    struct store_mget q = {.recache = true, .recache_exptime = 30};
    mget_op(st, "e", &q, true);
}
OP(tstack_push)
{
    char kb[STORE_TSTACK_KEYMAX];
    uint32_t kl;
    struct mdc_tag t = {5, 5};
    assert_int_equal(store_tstack_push(st, t, "v", 1, 0, 0, kb, &kl, NULL), 0);
}
OP(tstack_pop)
{
    struct record *r;
    struct mdc_tag t = {1, 1};
    assert_int_equal(store_tstack_pop(st, t, &r), 0);
    store_release(st, r);
}
OP(expire_lazy)
{
    testclock_advance(&tc, 10);
    assert_null(store_get(st, "e", 1));
}
OP(expire_sweep)
{
    testclock_advance(&tc, 10);
    assert_int_equal(store_sweep(st, 1u << 20), 1);
}
OP(evict)
{
    /* fill a tiny store well past its limit */
    char k[16];
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof k, "f%d", i);
        put(st, STORE_SET, k, "0123456789012345678901234567890123456789", 0,
            0);
    }
}
OP(flush) { store_flush(st); }
OP(flush_delayed) { store_flush_at(st, 100); }
OP(del_by_tag)
{
    int32_t tv = 1;
    uint64_t n;
    assert_int_equal(store_del_by_tag(st, 1, &tv, 1, &n), 0);
    assert_int_equal(n, 1);
}
/* reads and failed writes: nothing changes, nothing is announced */
OP(get) { store_release(st, store_get(st, "u", 1)); }
OP(get_miss) { assert_null(store_get(st, "none", 4)); }
OP(get_by_tag)
{
    struct store_recset s;
    int32_t tv = 1;
    assert_int_equal(store_get_by_tag(st, 1, &tv, 1, &s), 0);
    assert_int_equal(s.n, 1);
    store_recset_release(st, &s);
}
OP(stats)
{
    struct store_stats s;
    store_get_stats(st, &s);
}
OP(add_exists) { put(st, STORE_ADD, "u", "v", 0, 0); }
OP(replace_missing) { put(st, STORE_REPLACE, "none", "v", 0, 0); }
OP(cmpset_mismatch)
{
    uint64_t v;
    assert_int_equal(store_atomic(st, ATOMIC_CMPSET, "k", 1, 99, 3, &v, NULL),
                     ST_EXISTS);
}
OP(cas_mismatch)
{
    struct store_item it = {.key = "u", .klen = 1, .value = "z", .vlen = 1,
                            .cas = 1};
    assert_int_equal(store_put(st, STORE_CAS, &it, NULL), ST_EXISTS);
}
OP(incr_not_number)
{
    assert_int_equal(store_incr(st, "u", 1, 1, false, NULL, NULL),
                     ST_NOT_NUMBER);
}
OP(delete_missing) { assert_int_equal(store_delete(st, "no", 2, 0), 1); }
OP(touch_missing) { assert_int_equal(store_touch(st, "no", 2, 1), 1); }
OP(pop_empty)
{
    struct record *r;
    struct mdc_tag t = {9, 9};
    assert_int_equal(store_tstack_pop(st, t, &r), ST_NOT_FOUND);
}

struct row {
    const char *name;
    void (*op)(struct store *);
    int ev;            /* expected event, -1 = none */
    const char *key;   /* expected key of the last event, or NULL */
    int items_delta;   /* curr_items change the op makes (checks "before") */
};

static const struct row rows[] = {
    {"set", op_set, EV_SET, "n", 1},
    {"set adds a tag", op_set_tagged, EV_SET, "u", 0},
    {"add", op_add, EV_ADD, "n", 1},
    {"replace", op_replace, EV_REPLACE, "u", 0},
    {"cas", op_cas, EV_CAS, "u", 0},
    {"append", op_append, EV_APPEND, "u", 0},
    {"prepend", op_prepend, EV_PREPEND, "u", 0},
    {"incr", op_incr, EV_INCR, "k", 0},
    {"decr", op_decr, EV_INCR, "k", 0},
    {"atomic add", op_atomic_add, EV_ATOMIC, "k", 0},
    {"atomic fetch-add", op_atomic_fetch_add, EV_ATOMIC, "k", 0},
    {"atomic cmpset", op_atomic_cmpset, EV_ATOMIC, "k", 0},
    {"atomic read-clear", op_atomic_read_clear, EV_ATOMIC, "k", 0},
    {"touch", op_touch, EV_TOUCH, "u", 0},
    {"gat", op_gat, EV_TOUCH, "u", 0},
    {"delete", op_delete, EV_DELETE, "u", -1},
    {"tstack push", op_tstack_push, EV_TSTACK_PUSH, NULL, 1},
    {"tstack pop", op_tstack_pop, EV_TSTACK_POP, "k", -1},
    {"expiry on access", op_expire_lazy, EV_EXPIRE, "e", -1},
    {"expiry by sweep", op_expire_sweep, EV_EXPIRE, "e", -1},
    {"eviction", op_evict, EV_EVICT, NULL, 99},
    {"flush", op_flush, EV_FLUSH, NULL, 99},
    {"flush_all with a delay", op_flush_delayed, EV_FLUSH, "*", 0},
    {"del_by_tag", op_del_by_tag, EV_DEL_BY_TAG, "k", -1},
    {"md I (invalidate)", op_invalidate, EV_STALE, "u", 0},
    {"stale del_by_tag", op_stale_by_tag, EV_STALE, "k", 0},
    {"ms I (cas older, stored stale)", op_cas_invalidate, EV_CAS, "u", 0},
    {"mg N (vivify)", op_mget_vivify, EV_ADD, "n", 1},
    {"mg T", op_mget_touch, EV_TOUCH, "u", 0},
    /* a win token changes nothing a copy of the record holds */
    {"mg R (a win)", op_mget_recache_win, -1, NULL, 0},
    {"get", op_get, -1, NULL, 0},
    {"get miss", op_get_miss, -1, NULL, 0},
    {"get_by_tag", op_get_by_tag, -1, NULL, 0},
    {"stats", op_stats, -1, NULL, 0},
    {"add on present key", op_add_exists, -1, NULL, 0},
    {"replace on missing key", op_replace_missing, -1, NULL, 0},
    {"cmpset mismatch", op_cmpset_mismatch, -1, NULL, 0},
    {"cas mismatch", op_cas_mismatch, -1, NULL, 0},
    {"incr on a non-number", op_incr_not_number, -1, NULL, 0},
    {"delete missing", op_delete_missing, -1, NULL, 0},
    {"touch missing", op_touch_missing, -1, NULL, 0},
    {"pop of an empty stack", op_pop_empty, -1, NULL, 0},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct store_config c = {.nbuckets = 1024};
        if (r->op == op_evict)
            c.mem_limit = 4096;
        struct store *st = store_setup(&c);
        tc.mono_ns = 1000000000ull * 50;
        tc.wall_s = 1700000000;
        testclock_install(st, &tc);
        struct listener l;
        memset(&l, 0, sizeof(l));
        l.st = st;
        setup_data(st);
        struct store_stats before;
        store_get_stats(st, &before);
        store_set_hook(st, hook, &l);
        r->op(st);
        store_set_hook(st, NULL, NULL);
        print_message("  %-24s events=%u\n", r->name, l.total);
        if (r->ev < 0) {
            if (l.total != 0)
                fail_msg("%s: hook fired %u times for a read", r->name,
                         l.total);
        } else {
            if (l.count[r->ev] == 0)
                fail_msg("%s: no %s event", r->name,
                         store_event_name((enum store_event)r->ev));
            if (r->key != NULL && strcmp(l.last_key, r->key) != 0)
                fail_msg("%s: event for key '%s', expected '%s'", r->name,
                         l.last_key, r->key);
            /* for single-record inserts and removals the hook ran while
             * the old state was still the visible one */
            if (r->items_delta == 1 || r->items_delta == -1)
                if (l.items_at_hook != before.curr_items)
                    fail_msg("%s: hook saw %llu items, before was %llu",
                             r->name, (unsigned long long)l.items_at_hook,
                             (unsigned long long)before.curr_items);
        }
        char msg[200];
        if (store_check(st, msg, sizeof msg) != 0)
            fail_msg("%s: %s", r->name, msg);
        store_teardown(st);
    }
}

/* Every event kind in the enum is produced by at least one row. */
static void test_all_events_covered(void **state)
{
    (void)state;
    int seen[EV__COUNT] = {0};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].ev >= 0)
            seen[rows[i].ev] = 1;
    for (int e = 0; e < EV__COUNT; e++)
        if (!seen[e])
            fail_msg("event %s has no row", store_event_name(e));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_all_events_covered),
    };
    return cmocka_run_group_tests_name("hook", tests, NULL, NULL);
}
