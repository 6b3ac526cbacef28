/*
 * test_tags.c - unit tests of the tag forest through its own interface
 * (server/core/tags.h), without a store: the bytes its nodes take come back
 * through the 'mem' arguments, the forest checks itself, and store_check
 * cross-checks it against the record forest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/store_policy.h"
#include "server/core/tags.h"

/* A stand-alone record with 'nt' tag entries (never in a store). */
static struct record *fake(const char *key, const struct mdc_tag *tg,
                           uint32_t nt)
{
    uint32_t klen = (uint32_t)strlen(key);
    size_t sz = rec_tag_offset(klen, 0, 0) + sizeof(struct tag_area) +
                nt * sizeof(struct tag_entry);
    struct record *r = calloc(1, sz);
    assert_non_null(r);
    r->cas_klen = (uint64_t)klen << KLEN_SHIFT;
    r->refcnt = 1;
    r->rflags = R_TAGGED | R_LINKED;
    memcpy(r->data, key, klen);
    struct tag_area *ta = rec_tags(r);
    ta->ntags = nt;
    for (uint32_t i = 0; i < nt; i++) {
        ta->e[i].tkey = tg[i].tkey;
        ta->e[i].tval = tg[i].tval;
        ta->e[i].rec = r;
    }
    return r;
}

static void forest_ok(struct tags *t)
{
    char msg[256] = "";
    if (tags_check(t, msg, sizeof msg) != 0)
        fail_msg("tags_check: %s", msg);
}

static int count_visit(void *ctx, const struct tag_entry *e)
{
    (void)e;
    ++*(int *)ctx;
    return 0;
}

/* Every byte a link takes is handed back by the matching unlink, through
 * the caller's counter; the forest never reaches a store. */
static void test_accounting_by_argument(void **state)
{
    (void)state;
    struct tags *t = tags_setup(16);
    assert_non_null(t);
    struct mdc_tag tg[2] = {{1, 10}, {2, 20}};
    struct record *a = fake("a", tg, 2), *b = fake("b", tg, 1);
    int64_t mem = 0;

    assert_int_equal(tags_link(t, &rec_tags(a)->e[0], &mem), 0);
    int64_t one = mem; /* a tkey node and a tval node */
    assert_true(one > 0);
    assert_int_equal(tags_link(t, &rec_tags(a)->e[1], &mem), 0);
    assert_int_equal(mem, 2 * one);
    /* a second record under an existing tag allocates nothing */
    assert_int_equal(tags_link(t, &rec_tags(b)->e[0], &mem), 0);
    assert_int_equal(mem, 2 * one);
    forest_ok(t);

    uint64_t nk, nv, nl;
    tags_counts(t, &nk, &nv, &nl);
    assert_int_equal(nk, 2);
    assert_int_equal(nv, 2);
    assert_int_equal(nl, 3);
    int visited = 0;
    assert_int_equal(tags_foreach(t, count_visit, &visited), 0);
    assert_int_equal(visited, 3);

    /* newest first, referenced */
    struct record *n = tags_newest(t, (struct mdc_tag){1, 10});
    assert_ptr_equal(n, b);
    assert_int_equal(b->refcnt, 2);
    b->refcnt = 1;

    struct store_recset set = {0};
    int32_t tv = 10;
    assert_int_equal(tags_collect(t, 1, &tv, 1, &set, 0), 0);
    assert_int_equal(set.n, 2);
    assert_ptr_equal(set.recs[0], b);
    assert_ptr_equal(set.recs[1], a);
    free(set.recs);
    a->refcnt = b->refcnt = 1;

    tags_unlink(t, &rec_tags(a)->e[0], &mem);
    assert_int_equal(mem, 2 * one); /* (1,10) still holds b */
    tags_unlink(t, &rec_tags(b)->e[0], &mem);
    assert_int_equal(mem, one);
    tags_unlink(t, &rec_tags(b)->e[0], &mem); /* not linked: no-op */
    assert_int_equal(mem, one);
    forest_ok(t);
    /* teardown hands back what is still held */
    tags_teardown(t, &mem);
    assert_int_equal(mem, 0);
    free(a);
    free(b);
}

/* tags_check sees the forest's own faults. */
static void test_check_finds_misfiled_entry(void **state)
{
    (void)state;
    struct tags *t = tags_setup(4);
    struct mdc_tag tg = {3, 30};
    struct record *a = fake("a", &tg, 1);
    int64_t mem = 0;
    char msg[256] = "";

    assert_int_equal(tags_link(t, &rec_tags(a)->e[0], &mem), 0);
    forest_ok(t);
    rec_tags(a)->e[0].tval = 31; /* now in the list of another tag */
    assert_int_not_equal(tags_check(t, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "in list"));
    rec_tags(a)->e[0].tval = 30;
    tags_unlink(t, &rec_tags(a)->e[0], &mem);
    assert_int_equal(mem, 0);
    tags_teardown(t, &mem);
    free(a);
}

/* The cross-check of both indexes is store_check's: a tag linking a record
 * that the record forest does not hold is found there. */
static void test_store_check_cross_checks(void **state)
{
    (void)state;
    struct store_config c = {0};
    c.nbuckets = 1024;
    struct store *st = store_setup(&c);
    assert_non_null(st);
    struct mdc_tag tg = {5, 50};
    struct store_item it = {.key = "k", .klen = 1, .value = "v", .vlen = 1,
                            .tags = &tg, .ntags = 1};
    char msg[256] = "";
    assert_int_equal(store_put(st, STORE_SET, &it, NULL), 0);
    assert_int_equal(store_check(st, msg, sizeof msg), 0);

    /* swap the record's entry in the tag list for a stray record's: both
     * indexes still agree on counts and the forest is sound by itself */
    struct record *r = store_get(st, "k", 1);
    assert_non_null(r);
    struct tag_entry *re = &rec_tags(r)->e[0];
    struct record *stray = fake("stray", &tg, 1);
    struct tag_entry *se = &rec_tags(stray)->e[0];
    tags_relink(st->tags, re, se);
    re->tv = se->tv; /* the record walk sees its tag linked */
    assert_int_equal(tags_check(st->tags, msg, sizeof msg), 0);
    assert_int_not_equal(store_check(st, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "not in the forest"));
    rec_clear_rflag(stray, R_LINKED);
    assert_int_not_equal(store_check(st, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "unlinked record"));
    se->rec = r; /* an entry pointing at a record that does not hold it */
    assert_int_not_equal(store_check(st, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "does not carry"));
    se->rec = stray;
    tags_relink(st->tags, se, re);
    assert_int_equal(store_check(st, msg, sizeof msg), 0);
    store_release(st, r);
    store_teardown(st);
    free(stray);
}

/* A tag's lock is chosen by the pair: the tags of one tkey spread over
 * the buckets (with the bucket chosen by tkey they all shared one). */
static void test_bucket_by_pair(void **state)
{
    (void)state;
    struct tags *t = tags_setup(64);
    uint8_t seen[64] = {0};
    int distinct = 0;
    for (int32_t v = 0; v < 64; v++) {
        uint32_t b = tags_bucket(t, 1, v);
        assert_true(b < 64);
        distinct += !seen[b];
        seen[b] = 1;
    }
    assert_true(distinct >= 32);
    int64_t mem = 0;
    tags_teardown(t, &mem);
}

/* Unlinking many entries takes each bucket's lock once. */
static void test_unlink_many_one_pass_per_bucket(void **state)
{
    (void)state;
    struct tags *t = tags_setup(64);
    enum { N = 100 };
    struct record *r[N];
    struct tag_entry *es[2 * N];
    int64_t mem = 0;
    uint8_t seen[64] = {0};
    int buckets = 0;
    for (int i = 0; i < N; i++) {
        char k[8];
        snprintf(k, sizeof k, "r%d", i);
        struct mdc_tag tg[2] = {{9, 1}, {9, 2 + i % 3}};
        r[i] = fake(k, tg, 2);
        for (int j = 0; j < 2; j++) {
            assert_int_equal(tags_link(t, &rec_tags(r[i])->e[j], &mem), 0);
            es[2 * i + j] = &rec_tags(r[i])->e[j];
            uint32_t b = tags_bucket(t, tg[j].tkey, tg[j].tval);
            buckets += !seen[b];
            seen[b] = 1;
        }
    }
    forest_ok(t);
    assert_int_equal(tags_unlink_many(t, es, 2 * N, &mem), buckets);
    assert_true(buckets <= 4);
    assert_int_equal(mem, 0);
    uint64_t nk, nv, nl;
    tags_counts(t, &nk, &nv, &nl);
    assert_int_equal(nl, 0);
    forest_ok(t);
    tags_teardown(t, &mem);
    for (int i = 0; i < N; i++)
        free(r[i]);
}

/* store_check finds what every store test relies on it to find: a record
 * in the forest not marked linked, a deadline the expiry wheel does not
 * hold, a record's tag entry not in the index, and counters that disagree
 * with the records.  Each fault undone, the store checks clean again. */
static void test_store_check_finds_faults(void **state)
{
    (void)state;
    struct store_config c = {0};
    c.nbuckets = 1024;
    c.sweep_interval_ms = 3600 * 1000; /* the expiry wheel, never turned */
    struct store *st = store_setup(&c);
    assert_non_null(st);
    struct mdc_tag tg = {5, 50};
    struct store_item it = {.key = "k", .klen = 1, .value = "v", .vlen = 1,
                            .tags = &tg, .ntags = 1};
    char msg[256] = "";
    assert_int_equal(store_put(st, STORE_SET, &it, NULL), 0);
    it.key = "e";
    it.ntags = 0;
    it.exptime = 100;
    assert_int_equal(store_put(st, STORE_SET, &it, NULL), 0);
    assert_int_equal(store_check(st, msg, sizeof msg), 0);
    struct record *r = store_get(st, "k", 1);
    assert_non_null(r);

    rec_clear_rflag(r, R_LINKED);
    assert_int_equal(store_check(st, msg, sizeof msg), -1);
    assert_string_equal(msg, "record in forest without R_LINKED");
    rec_set_rflag(r, R_LINKED);

    r->deadline = 12345; /* no wheel entry for it */
    assert_int_equal(store_check(st, msg, sizeof msg), -1);
    assert_string_equal(msg, "record with a deadline not in the expiry wheel");
    r->deadline = 0;

    struct tag_entry *e = &rec_tags(r)->e[0];
    void *tv = e->tv;
    e->tv = NULL;
    assert_int_equal(store_check(st, msg, sizeof msg), -1);
    assert_string_equal(msg, "record tag 0 not linked");
    e->tv = tv;

    atomic_fetch_add(&st->expiring, 1);
    assert_int_equal(store_check(st, msg, sizeof msg), -1);
    assert_string_equal(msg, "expiring count 2, records 1");
    atomic_fetch_sub(&st->expiring, 1);

    atomic_fetch_add(&st->curr_items, 1);
    assert_int_equal(store_check(st, msg, sizeof msg), -1);
    assert_string_equal(msg,
                        "counters disagree: items 2/3 tagged 1/1 links 1/1");
    atomic_fetch_sub(&st->curr_items, 1);

    assert_int_equal(store_check(st, msg, sizeof msg), 0);
    store_release(st, r);
    store_teardown(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accounting_by_argument),
        cmocka_unit_test(test_check_finds_misfiled_entry),
        cmocka_unit_test(test_store_check_cross_checks),
        cmocka_unit_test(test_store_check_finds_faults),
        cmocka_unit_test(test_bucket_by_pair),
        cmocka_unit_test(test_unlink_many_one_pass_per_bucket),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
