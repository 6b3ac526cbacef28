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

/* Make 'nw' the child of p (or the root) where 'old' was. */
static inline void replace_child(struct mdc_rb_root *t, struct mdc_rb_node *p,
                                 struct mdc_rb_node *old,
                                 struct mdc_rb_node *nw)
{
    if (p == NULL)
        t->node = nw;
    else if (p->left == old)
        p->left = nw;
    else
        p->right = nw;
}

static void rotate_left(struct mdc_rb_root *t, struct mdc_rb_node *x)
{
    struct mdc_rb_node *y = x->right, *p = mdc_rb_parent(x);
    x->right = y->left;
    if (y->left != NULL)
        set_parent(y->left, x);
    set_parent(y, p);
    replace_child(t, p, x, y);
    y->left = x;
    set_parent(x, y);
}

static void rotate_right(struct mdc_rb_root *t, struct mdc_rb_node *x)
{
    struct mdc_rb_node *y = x->left, *p = mdc_rb_parent(x);
    x->left = y->right;
    if (y->right != NULL)
        set_parent(y->right, x);
    set_parent(y, p);
    replace_child(t, p, x, y);
    y->right = x;
    set_parent(x, y);
}

void mdc_rb_insert_fixup(struct mdc_rb_root *t, struct mdc_rb_node *n)
{
    struct mdc_rb_node *p, *g, *u;

    while ((p = mdc_rb_parent(n)) != NULL && is_red(p)) {
        g = mdc_rb_parent(p); /* p is red, so not the root */
        if (p == g->left) {
            u = g->right;
            if (is_red(u)) {
                set_black(u);
                set_black(p);
                set_red(g);
                n = g;
                continue;
            }
            if (n == p->right) {
                rotate_left(t, p);
                n = p;
                p = mdc_rb_parent(n);
            }
            set_black(p);
            set_red(g);
            rotate_right(t, g);
        } else {
            u = g->left;
            if (is_red(u)) {
                set_black(u);
                set_black(p);
                set_red(g);
                n = g;
                continue;
            }
            if (n == p->left) {
                rotate_right(t, p);
                n = p;
                p = mdc_rb_parent(n);
            }
            set_black(p);
            set_red(g);
            rotate_left(t, g);
        }
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
        if (p->left == n) {
            s = p->right;
            if (is_red(s)) {
                set_black(s);
                set_red(p);
                rotate_left(t, p);
                s = p->right;
            }
            if (!is_red(s->left) && !is_red(s->right)) {
                set_red(s);
                n = p;
                p = mdc_rb_parent(n);
            } else {
                if (!is_red(s->right)) {
                    set_black(s->left);
                    set_red(s);
                    rotate_right(t, s);
                    s = p->right;
                }
                /* s takes p's colour */
                s->pc = (s->pc & ~MDC_RB_BLACK) | (p->pc & MDC_RB_BLACK);
                set_black(p);
                if (s->right != NULL)
                    set_black(s->right);
                rotate_left(t, p);
                n = t->node;
                break;
            }
        } else {
            s = p->left;
            if (is_red(s)) {
                set_black(s);
                set_red(p);
                rotate_right(t, p);
                s = p->left;
            }
            if (!is_red(s->left) && !is_red(s->right)) {
                set_red(s);
                n = p;
                p = mdc_rb_parent(n);
            } else {
                if (!is_red(s->left)) {
                    set_black(s->right);
                    set_red(s);
                    rotate_left(t, s);
                    s = p->left;
                }
                s->pc = (s->pc & ~MDC_RB_BLACK) | (p->pc & MDC_RB_BLACK);
                set_black(p);
                if (s->left != NULL)
                    set_black(s->left);
                rotate_right(t, p);
                n = t->node;
                break;
            }
        }
    }
    if (n != NULL)
        set_black(n);
}

void mdc_rb_erase(struct mdc_rb_root *t, struct mdc_rb_node *n)
{
    struct mdc_rb_node *child, *p;
    int black;

    if (n->left != NULL && n->right != NULL) {
        /* two children: the successor s (no left child) takes n's place
         * and colour; s's old place is where a node goes missing */
        struct mdc_rb_node *s = n->right;
        while (s->left != NULL)
            s = s->left;
        child = s->right;
        p = mdc_rb_parent(s);
        black = mdc_rb_is_black(s);
        if (child != NULL)
            set_parent(child, p);
        replace_child(t, p, s, child);
        if (p == n)
            p = s;
        /* s takes n's links and colour (n's right may have just changed) */
        s->left = n->left;
        s->right = n->right;
        s->pc = n->pc;
        replace_child(t, mdc_rb_parent(n), n, s);
        set_parent(s->left, s);
        if (s->right != NULL)
            set_parent(s->right, s);
    } else {
        child = n->left != NULL ? n->left : n->right;
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
    while (n->left != NULL)
        n = n->left;
    return n;
}

struct mdc_rb_node *mdc_rb_next(const struct mdc_rb_node *n)
{
    if (n->right != NULL) {
        n = n->right;
        while (n->left != NULL)
            n = n->left;
        return (struct mdc_rb_node *)n;
    }
    struct mdc_rb_node *p;
    while ((p = mdc_rb_parent(n)) != NULL && n == p->right)
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
    if (is_red(n) && (is_red(n->left) || is_red(n->right))) {
        *why = "red node with a red child";
        return -1;
    }
    int l = verify(n->left, n, why);
    if (l < 0)
        return -1;
    int r = verify(n->right, n, why);
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
