/*
 * test_rbtree.c - the three-word red-black tree (server/core/rbtree.h):
 * random inserts and erases against a sorted reference, the red-black rules
 * and parent links checked after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/rbtree.h"

struct item {
    struct mdc_rb_node rb;
    uint32_t key;
    int in;
};

_Static_assert(sizeof(struct mdc_rb_node) == 3 * sizeof(void *),
               "node is three words");

#define N 2000

static struct item items[N];

static void insert(struct mdc_rb_root *t, struct item *it)
{
    struct mdc_rb_node **link = &t->node, *parent = NULL;
    while (*link != NULL) {
        struct item *c = (struct item *)*link;
        parent = *link;
        link = &(*link)->child[it->key < c->key ? MDC_RB_LEFT
                                                : MDC_RB_RIGHT];
    }
    mdc_rb_link(&it->rb, parent, link);
    mdc_rb_insert_fixup(t, &it->rb);
    it->in = 1;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

/* The tree holds exactly the items marked in, in key order. */
static void check(struct mdc_rb_root *t)
{
    const char *why = NULL;
    int bh = mdc_rb_verify(t, &why);
    if (bh < 0)
        fail_msg("tree broken: %s", why);
    size_t n = 0, want = 0;
    uint32_t last = 0;
    for (struct mdc_rb_node *x = mdc_rb_first(t); x != NULL;
         x = mdc_rb_next(x)) {
        struct item *it = (struct item *)x;
        assert_true(it->in);
        if (n > 0)
            assert_true(it->key >= last);
        last = it->key;
        n++;
    }
    for (size_t i = 0; i < N; i++)
        want += items[i].in;
    assert_int_equal(n, want);
}

static void test_random_ops(void **state)
{
    (void)state;
    struct mdc_rb_root t = {NULL};
    for (size_t i = 0; i < N; i++) {
        items[i].key = next() % (N / 2); /* duplicates too */
        items[i].in = 0;
    }
    for (int round = 0; round < 20000; round++) {
        struct item *it = &items[next() % N];
        if (it->in) {
            mdc_rb_erase(&t, &it->rb);
            it->in = 0;
        } else {
            insert(&t, it);
        }
        if (round % 97 == 0 || round < 200)
            check(&t);
    }
    check(&t);
    /* empty it in a random order */
    for (size_t i = 0; i < N; i++) {
        struct item *it = &items[(i * 7919) % N];
        if (it->in) {
            mdc_rb_erase(&t, &it->rb);
            it->in = 0;
            if (i % 13 == 0)
                check(&t);
        }
    }
    assert_true(mdc_rb_empty(&t));
    check(&t);
}

/* Sorted input, ascending (every insert on the right spine) then
 * descending (the left: the mirrored cases), and erasing the root again
 * and again: the rotations' worst cases. */
static void test_sorted_and_root(void **state)
{
    (void)state;
    for (int desc = 0; desc <= 1; desc++) {
        struct mdc_rb_root t = {NULL};
        for (size_t i = 0; i < N; i++) {
            items[i].key = (uint32_t)(desc ? N - 1 - i : i);
            items[i].in = 0;
            insert(&t, &items[i]);
        }
        check(&t);
        /* height of a red-black tree: at most 2 log2(n + 1) */
        int bh = mdc_rb_verify(&t, NULL);
        assert_true(bh <= 12);
        while (!mdc_rb_empty(&t)) {
            struct item *it = (struct item *)t.node;
            mdc_rb_erase(&t, t.node);
            it->in = 0;
            check(&t);
        }
        for (size_t i = 0; i < N; i++)
            assert_int_equal(items[i].in, 0);
    }
}

/* A tree that mdc_rb_verify must reject: a red root, a red-red pair. */
static void test_verify_rejects(void **state)
{
    (void)state;
    struct mdc_rb_root t = {NULL};
    for (size_t i = 0; i < 3; i++) {
        items[i].key = (uint32_t)i;
        insert(&t, &items[i]);
    }
    assert_true(mdc_rb_verify(&t, NULL) >= 0);
    t.node->pc &= ~MDC_RB_BLACK;
    assert_int_equal(mdc_rb_verify(&t, NULL), -1);
    t.node->pc |= MDC_RB_BLACK;
    struct mdc_rb_node *l = t.node->child[MDC_RB_LEFT];
    struct mdc_rb_node *r = t.node->child[MDC_RB_RIGHT];
    l->pc &= ~MDC_RB_BLACK;
    r->pc &= ~MDC_RB_BLACK;
    l->child[MDC_RB_LEFT] = r; /* a red child of a red node */
    const char *why = NULL;
    assert_int_equal(mdc_rb_verify(&t, &why), -1);
    assert_non_null(why);
}

/* mdc_rb_verify names the fault: a wrong parent link, unequal black
 * heights. */
static void test_verify_names_fault(void **state)
{
    (void)state;
    struct mdc_rb_root t = {NULL};
    const char *why = NULL;
    memset(items, 0, 3 * sizeof(items[0]));
    for (size_t i = 0; i < 3; i++) {
        items[i].key = (uint32_t)i;
        insert(&t, &items[i]);
    }
    /* root black, both children red: black height 2 */
    assert_int_equal(mdc_rb_verify(&t, NULL), 2);
    struct mdc_rb_node *l = t.node->child[MDC_RB_LEFT], *r = t.node->child[MDC_RB_RIGHT];
    uintptr_t saved = l->pc;
    l->pc = (uintptr_t)r | (saved & MDC_RB_BLACK);
    assert_int_equal(mdc_rb_verify(&t, &why), -1);
    assert_string_equal(why, "parent link wrong");
    l->pc = saved | MDC_RB_BLACK; /* right still red: heights 2 and 1 */
    assert_int_equal(mdc_rb_verify(&t, &why), -1);
    assert_string_equal(why, "black heights differ");
    r->pc |= MDC_RB_BLACK; /* both black: a valid tree again */
    assert_int_equal(mdc_rb_verify(&t, &why), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ops),
        cmocka_unit_test(test_sorted_and_root),
        cmocka_unit_test(test_verify_rejects),
        cmocka_unit_test(test_verify_names_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
