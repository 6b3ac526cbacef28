/*
 * rbtree.c - the red-black tree of rbtree.h.  The algorithms are the
 * classic ones (as in <sys/tree.h>'s RB_INSERT_COLOR and RB_REMOVE): only
 * the parent pointer and the colour share a word.
 */
#include "config.h"

#include "rbtree.h"

static inline void set_parent(struct mdc_rb_node *n, struct mdc_rb_node *p)
{
    n->pc = (uintptr_t)p | (n->pc & MDC_RB_BLACK);
}
static inline void set_black(struct mdc_rb_node *n) { n->pc |= MDC_RB_BLACK; }
static inline void set_red(struct mdc_rb_node *n) { n->pc &= ~MDC_RB_BLACK; }
static inline int is_red(const struct mdc_rb_node *n)
{
    return n != NULL && !mdc_rb_is_black(n);
}

#define L MDC_RB_LEFT
#define R MDC_RB_RIGHT

/* Make 'nw' the child of p (or the root) where 'old' was. */
static inline void replace_child(struct mdc_rb_root *t, struct mdc_rb_node *p,
                                 struct mdc_rb_node *old,
                                 struct mdc_rb_node *nw)
{
    if (p == NULL)
        t->node = nw;
    else
        p->child[p->child[R] == old] = nw;
}

/* Rotate x down to side 'dir' (L: a left rotation): its child on the other
 * side takes its place, and that child's 'dir' subtree becomes x's.
 * Inlined: called, it cost a put ~11 more instructions than the two
 * mirrored functions did (cachegrind), inlined ~3. */
static inline __attribute__((always_inline)) void
rotate(struct mdc_rb_root *t, struct mdc_rb_node *x, int dir)
{
    struct mdc_rb_node *y = x->child[!dir], *p = mdc_rb_parent(x);
    x->child[!dir] = y->child[dir];
    if (y->child[dir] != NULL)
        set_parent(y->child[dir], x);
    set_parent(y, p);
    replace_child(t, p, x, y);
    y->child[dir] = x;
    set_parent(x, y);
}

void mdc_rb_insert_fixup(struct mdc_rb_root *t, struct mdc_rb_node *n)
{
    struct mdc_rb_node *p, *g, *u;

    while ((p = mdc_rb_parent(n)) != NULL && is_red(p)) {
        g = mdc_rb_parent(p); /* p is red, so not the root */
        int d = g->child[R] == p; /* p's side of g; u is on the other */
        u = g->child[!d];
        if (is_red(u)) {
            set_black(u);
            set_black(p);
            set_red(g);
            n = g;
            continue;
        }
        if (n == p->child[!d]) { /* n on the inside: turn it outside */
            rotate(t, p, d);
            n = p;
            p = mdc_rb_parent(n);
        }
        set_black(p);
        set_red(g);
        rotate(t, g, !d);
    }
    set_black(t->node);
}

/* Restore the rules after a black node was taken out above n (n may be
 * NULL), n being a child of p. */
static void erase_fixup(struct mdc_rb_root *t, struct mdc_rb_node *p,
                        struct mdc_rb_node *n)
{
    struct mdc_rb_node *s;

    while (!is_red(n) && n != t->node) {
        int d = p->child[L] != n; /* n's side of p; its sibling s is on
                                   * the other (n NULL: s is not) */
        s = p->child[!d];
        if (is_red(s)) {
            set_black(s);
            set_red(p);
            rotate(t, p, d);
            s = p->child[!d];
        }
        if (!is_red(s->child[L]) && !is_red(s->child[R])) {
            set_red(s);
            n = p;
            p = mdc_rb_parent(n);
            continue;
        }
        if (!is_red(s->child[!d])) {
            set_black(s->child[d]);
            set_red(s);
            rotate(t, s, !d);
            s = p->child[!d];
        }
        /* s takes p's colour */
        s->pc = (s->pc & ~MDC_RB_BLACK) | (p->pc & MDC_RB_BLACK);
        set_black(p);
        if (s->child[!d] != NULL)
            set_black(s->child[!d]);
        rotate(t, p, d);
        n = t->node;
        break;
    }
    if (n != NULL)
        set_black(n);
}

void mdc_rb_erase(struct mdc_rb_root *t, struct mdc_rb_node *n)
{
    struct mdc_rb_node *child, *p;
    int black;

    if (n->child[L] != NULL && n->child[R] != NULL) {
        /* two children: the successor s (no left child) takes n's place
         * and colour; s's old place is where a node goes missing */
        struct mdc_rb_node *s = n->child[R];
        while (s->child[L] != NULL)
            s = s->child[L];
        child = s->child[R];
        p = mdc_rb_parent(s);
        black = mdc_rb_is_black(s);
        if (child != NULL)
            set_parent(child, p);
        replace_child(t, p, s, child);
        if (p == n)
            p = s;
        /* s takes n's links and colour (n's right may have just changed) */
        s->child[L] = n->child[L];
        s->child[R] = n->child[R];
        s->pc = n->pc;
        replace_child(t, mdc_rb_parent(n), n, s);
        set_parent(s->child[L], s);
        if (s->child[R] != NULL)
            set_parent(s->child[R], s);
    } else {
        child = n->child[L] != NULL ? n->child[L] : n->child[R];
        p = mdc_rb_parent(n);
        black = mdc_rb_is_black(n);
        if (child != NULL)
            set_parent(child, p);
        replace_child(t, p, n, child);
    }
    if (black)
        erase_fixup(t, p, child);
}

struct mdc_rb_node *mdc_rb_first(const struct mdc_rb_root *t)
{
    struct mdc_rb_node *n = t->node;
    if (n == NULL)
        return NULL;
    while (n->child[L] != NULL)
        n = n->child[L];
    return n;
}

struct mdc_rb_node *mdc_rb_next(const struct mdc_rb_node *n)
{
    if (n->child[R] != NULL) {
        n = n->child[R];
        while (n->child[L] != NULL)
            n = n->child[L];
        return (struct mdc_rb_node *)n;
    }
    struct mdc_rb_node *p;
    while ((p = mdc_rb_parent(n)) != NULL && n == p->child[R])
        n = p;
    return p;
}

static int verify(const struct mdc_rb_node *n, const struct mdc_rb_node *p,
                  const char **why)
{
    if (n == NULL)
        return 1;
    if (mdc_rb_parent(n) != p) {
        *why = "parent link wrong";
        return -1;
    }
    if (is_red(n) && (is_red(n->child[L]) || is_red(n->child[R]))) {
        *why = "red node with a red child";
        return -1;
    }
    int l = verify(n->child[L], n, why);
    if (l < 0)
        return -1;
    int r = verify(n->child[R], n, why);
    if (r < 0)
        return -1;
    if (l != r) {
        *why = "black heights differ";
        return -1;
    }
    return l + mdc_rb_is_black(n);
}

int mdc_rb_verify(const struct mdc_rb_root *t, const char **why)
{
    const char *dummy;
    if (why == NULL)
        why = &dummy;
    if (t->node != NULL && !mdc_rb_is_black(t->node)) {
        *why = "red root";
        return -1;
    }
    return verify(t->node, NULL, why);
}
