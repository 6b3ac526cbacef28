/*
 * store_write.c - the steps of a write the operations share (level 3,
 * store_policy.h): beginning a write by key, storing a record (tags
 * normalised, the record built with no lock held, then linked under the
 * stripe) and the read-modify-write that replaces one by a value derived
 * from it (replace_rmw: append and prepend here, the counters in
 * store_counter.c); invalidating one in place is inline (do_invalidate).
 * They apply the policies: the memory limit before allocating, deadlines
 * and a due delayed flush.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_policy.h"
#include "tags.h"

int key_write_begin(struct store *st, struct key_write *kw, const void *key,
                    uint32_t klen, uint64_t cas)
{
    check_flush(st, now_s(st));
    kw->h = store_hash(key, klen);
    kw->l = stripe_of(st, kw->h);
    mdc_wrlock(kw->l);
    kw->r = do_find_live_gone(st, kw->h, key, klen, &kw->gone);
    if (kw->r == NULL)
        return ST_NOT_FOUND;
    if (cas != 0 && rec_cas(kw->r) != cas)
        return ST_EXISTS;
    return ST_OK;
}

/* Normalise a tag list: sorted, distinct.  'buf' must hold n tags. */
static int norm_tags(struct store *st, const struct mdc_tag *in, uint32_t n,
                     struct mdc_tag *buf, uint32_t *nout)
{
    if (n == 0) {
        *nout = 0;
        return 0;
    }
    memcpy(buf, in, n * sizeof(*in));
    qsort(buf, n, sizeof(*buf), tag_cmp);
    uint32_t k = 1;
    for (uint32_t i = 1; i < n; i++)
        if (tag_cmp(&buf[i], &buf[k - 1]) != 0)
            buf[k++] = buf[i];
    if (k > st->cfg.max_tags)
        return ST_TOO_MANY_TAGS;
    *nout = k;
    return 0;
}

#define REPLACE_RETRY (-1)
#define REPLACE_GONE (-2)

/*
 * replace_rmw()'s commit: build a replacement for 'old' whose value is
 * d's a || b, keeping old's flags, deadline and tags (in their stack
 * positions), and link it if 'old' is still the live record for its key.
 * Returns ST_OK, REPLACE_RETRY when someone else changed the key first,
 * REPLACE_GONE when the key went away, or the allocation's status.  The
 * caller keeps its reference on 'old'.
 */
static int replace_derived(struct store *st, uint64_t h, struct record *old,
                           const struct derived *d, enum store_event ev,
                           uint64_t *cas_out)
{
    uint32_t nt = record_ntags(old);
    struct record *r;
    int rc = rec_alloc(st, rec_key(old), rec_klen(old), d->alen + d->blen,
                       rec_flags(old), nt, &r);
    if (rc != 0)
        return rc;
    if (d->alen)
        memcpy(rec_val(r), d->a, d->alen);
    if (d->blen)
        memcpy(rec_val(r) + d->alen, d->b, d->blen);
    r->deadline = __atomic_load_n(&old->deadline, __ATOMIC_RELAXED);
    if (nt)
        rec_copy_tags(r, old);
    rec_set_cas(r, next_cas());

    mdc_rwlock_t *l = stripe_of(st, h);
    mdc_wrlock(l);
    struct record *cur = do_find_live(st, h, rec_key(old), rec_klen(old));
    if (cur != old) {
        mdc_unlock(l);
        store_release(st, r);
        return cur == NULL ? REPLACE_GONE : REPLACE_RETRY;
    }
    rec_set_cas(r, cas_over(rec_cas(r), rec_cas(old)));
    uint64_t ncas = rec_cas(r); /* r may be replaced once unlocked */
    /* a counter changes in place in memcached (stale state and win kept);
     * append and prepend build a new item there (both dropped) */
    if (ev == EV_INCR || ev == EV_ATOMIC)
        rec_set_rflag(r, rec_rflags(old) & (R_STALE | R_WON));
    announce(st, ev, old, h);
    do_link(st, h, r, old, nt != 0);
    mdc_unlock(l);
    if (cas_out)
        *cas_out = ncas;
    return ST_OK;
}

int replace_rmw(struct store *st, const void *key, uint32_t klen,
                uint64_t cas, enum store_event ev, int gone, derive_fn fn,
                void *ctx, uint64_t *cas_out)
{
    if (klen > STORE_MAX_KEY)
        return gone;
    uint64_t h = store_hash(key, klen); /* once, for every attempt */

    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *old = get_hashed(st, h, key, klen, NULL);
        if (old == NULL)
            return gone;
        struct derived d;
        int rc;
        if (cas != 0 && record_cas(old) != cas)
            rc = ST_EXISTS;
        else if ((rc = fn(st, old, ctx, &d)) == 0)
            rc = replace_derived(st, h, old, &d, ev, cas_out);
        store_release(st, old);
        if (rc == REPLACE_GONE)
            return gone;
        if (rc != REPLACE_RETRY)
            return rc;
    }
    return ST_NO_MEMORY;
}

/* append/prepend's value: old's and the item's, in that order or the
 * other, within the item size */
struct concat {
    enum store_mode mode;
    const struct store_item *it;
};

static int concat_derive(struct store *st, struct record *old, void *ctx,
                         struct derived *d)
{
    const struct concat *cc = ctx;
    const struct store_item *it = cc->it;

    if (over_item_size(st, it->klen, (uint64_t)old->vlen + it->vlen,
                       rec_flags(old)))
        return ST_TOO_LARGE;
    bool app = cc->mode == STORE_APPEND;
    d->a = app ? rec_val(old) : it->value;
    d->alen = app ? old->vlen : it->vlen;
    d->b = app ? it->value : rec_val(old);
    d->blen = app ? it->vlen : old->vlen;
    return 0;
}

int put_common(struct store *st, enum store_mode mode,
                      const struct store_item *it, uint64_t *cas_out,
                      enum store_event ev)
{
    int rc = check_key(it->klen);
    if (rc != 0)
        return rc;
    if ((unsigned)mode > STORE_PREPEND)
        return ST_INVALID;
    if (mode == STORE_APPEND || mode == STORE_PREPEND)
        return replace_rmw(st, it->key, it->klen, it->cas, ev, ST_NOT_STORED,
                           concat_derive, &(struct concat){mode, it}, cas_out);
    if (over_item_size(st, it->klen, it->vlen, it->flags))
        return ST_TOO_LARGE;
    if (it->ntags > 0 && it->tags == NULL)
        return ST_INVALID;
    if (it->ntags > 65535)
        return ST_TOO_MANY_TAGS;

    struct mdc_tag stackbuf[64], *tb = stackbuf;
    uint32_t nt = 0;
    if (it->ntags > 64) {
        tb = mdc_malloc(it->ntags * sizeof(*tb));
        if (tb == NULL)
            return ST_NO_MEMORY;
    }
    rc = norm_tags(st, it->tags, it->ntags, tb, &nt);
    if (rc != 0)
        goto out;

    uint64_t ns = now_ns(st);
    check_flush(st, secs_of(st, ns));
    struct record *r;
    rc = rec_alloc(st, it->key, it->klen, it->vlen, it->flags, nt, &r);
    if (rc != 0)
        goto out;
    if (it->vlen)
        memcpy(rec_val(r), it->value, it->vlen);
    r->atime = tick_of(ns); /* its store's tick: do_link needs no clock */
    r->deadline = deadline_of(st, it->exptime);
    if (nt)
        rec_set_tags(r, tb, nt);
    rec_set_cas(r, next_cas());

    uint64_t h = store_hash(it->key, it->klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    mdc_wrlock(l);
    struct record *old = do_find_live(st, h, it->key, it->klen);
    if (old != NULL)
        rec_set_cas(r, cas_over(rec_cas(r), rec_cas(old)));
    uint64_t ncas = rec_cas(r); /* r may be replaced once unlocked */
    switch (mode) {
    case STORE_ADD:
        if (old != NULL)
            rc = ST_EXISTS;
        break;
    case STORE_REPLACE:
        if (old == NULL)
            rc = ST_NOT_STORED;
        break;
    case STORE_CAS:
        if (old == NULL)
            rc = ST_NOT_FOUND;
        else if (rec_cas(old) == it->cas)
            break;
        else if (it->invalidate && it->cas < rec_cas(old)) {
            /* memcached's ms I: an older version is stored, stale, for
             * the old record's remaining life and with its win token */
            uint8_t ofl = rec_rflags(old);
            r->deadline = __atomic_load_n(&old->deadline, __ATOMIC_RELAXED);
            rec_set_rflag(r, (uint8_t)(R_STALE | (ofl & R_WON)));
        } else
            rc = ST_EXISTS;
        break;
    default:
        break;
    }
    bool dead = rc == 0 && rec_expired(r, secs_of(st, ns));
    if (dead) {
        /* stored already expired (a negative or past exptime): counted as
         * memcached counts it (total_items; the protocol's cmd_set), and
         * it replaces the old record, but it is never linked, so neither
         * curr_items nor bytes keep it (linked, only the sweeper's next
         * lap of the wheel would have reclaimed it) */
        announce(st, ev, r, h);
        if (old != NULL)
            do_unlink(st, h, old);
        atomic_fetch_add_explicit(&st->total_items, 1, memory_order_relaxed);
    } else if (rc == 0) {
        announce(st, ev, r, h);
        rc = do_link(st, h, r, old, 0);
    }
    mdc_unlock(l);
    if (rc != 0 || dead) {
        store_release(st, r);
        if (dead && cas_out != NULL)
            *cas_out = ncas;
    } else {
        if (cas_out != NULL)
            *cas_out = ncas;
        if (old == NULL)
            maybe_grow(st);
    }
out:
    if (tb != stackbuf)
        mdc_free(tb);
    return rc;
}
