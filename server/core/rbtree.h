/*
 * rbtree.h - an intrusive red-black tree whose node is three words: the
 * left and right children, and the parent pointer with the node's colour in
 * its low bit.
 *
 * <sys/tree.h>'s entry is three pointers and an int (28 bytes packed, 32
 * aligned); every record of the store carries one, so the four bytes of
 * the colour are worth the masking (docs/architecture.md, "Record
 * layout").  Nodes must be at least 2-byte aligned (every allocation is).
 *
 * The caller does the descent itself (it knows how to compare its keys),
 * links the new node where the descent ended with mdc_rb_link(), then
 * rebalances with mdc_rb_insert_fixup().  No locking: the store holds the
 * bucket's lock around every call.
 */
#ifndef MDC_RBTREE_H
#define MDC_RBTREE_H

#include <stddef.h>
#include <stdint.h>

/* The children by direction, so that each mirrored pair of cases of the
 * rebalancing is one piece of code with the side as a parameter. */
#define MDC_RB_LEFT 0
#define MDC_RB_RIGHT 1

struct mdc_rb_node {
    struct mdc_rb_node *child[2]; /* [MDC_RB_LEFT], [MDC_RB_RIGHT] */
    uintptr_t pc; /* parent | colour (bit 0: 1 = black) */
};

struct mdc_rb_root {
    struct mdc_rb_node *node;
};

#define MDC_RB_BLACK ((uintptr_t)1)

static inline struct mdc_rb_node *mdc_rb_parent(const struct mdc_rb_node *n)
{
    return (struct mdc_rb_node *)(n->pc & ~MDC_RB_BLACK);
}
static inline int mdc_rb_is_black(const struct mdc_rb_node *n)
{
    return (n->pc & MDC_RB_BLACK) != 0;
}
static inline int mdc_rb_empty(const struct mdc_rb_root *t)
{
    return t->node == NULL;
}

/* Put n (red, no children) at *link, a child slot of parent (or the root
 * slot, parent NULL); then call mdc_rb_insert_fixup. */
static inline void mdc_rb_link(struct mdc_rb_node *n, struct mdc_rb_node *parent,
                               struct mdc_rb_node **link)
{
    n->child[MDC_RB_LEFT] = n->child[MDC_RB_RIGHT] = NULL;
    n->pc = (uintptr_t)parent;
    *link = n;
}

void mdc_rb_insert_fixup(struct mdc_rb_root *t, struct mdc_rb_node *n);
void mdc_rb_erase(struct mdc_rb_root *t, struct mdc_rb_node *n);

/* In-order walk: the first (smallest) node, and the one after n. */
struct mdc_rb_node *mdc_rb_first(const struct mdc_rb_root *t);
struct mdc_rb_node *mdc_rb_next(const struct mdc_rb_node *n);

/* Red-black rules and parent links of the whole tree (tests, store_check):
 * returns the black height, or -1 with a reason in *why. */
int mdc_rb_verify(const struct mdc_rb_root *t, const char **why);

#endif
