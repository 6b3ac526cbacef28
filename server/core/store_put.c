/*
 * store_put.c - writes by key: the storage commands (tags normalised, the
 * record built with no lock held, then linked under the stripe), append
 * and prepend, touch, delete, invalidation in place, and loading records
 * from a dump.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_int.h"
#include "tags.h"

/* Sort and drop duplicate tags; returns the distinct count. */
static int tag_cmp(const void *a, const void *b)
{
    const struct mdc_tag *x = a, *y = b;
    if (x->tkey != y->tkey)
        return x->tkey < y->tkey ? -1 : 1;
    return x->tval < y->tval ? -1 : x->tval > y->tval;
}

static const enum store_event mode_event[] = {
    [STORE_SET] = EV_SET,         [STORE_ADD] = EV_ADD,
    [STORE_REPLACE] = EV_REPLACE, [STORE_CAS] = EV_CAS,
    [STORE_APPEND] = EV_APPEND,   [STORE_PREPEND] = EV_PREPEND,
};

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

/*
 * The commit step shared by append/prepend and the counter operations:
 * build a replacement for 'old' whose value is a || b, keeping old's flags,
 * deadline and tags (in their stack positions), and link it if 'old' is
 * still the live record for its key.  Returns ST_OK, REPLACE_RETRY when
 * someone else changed the key first, REPLACE_GONE when the key went away,
 * or the allocation's status.  The caller keeps its reference on 'old'.
 */
int replace_derived(struct store *st, uint64_t h, struct record *old,
                           const void *a, uint32_t alen, const void *b,
                           uint32_t blen, enum store_event ev,
                           uint64_t *cas_out)
{
    uint32_t nt = record_ntags(old);
    struct record *r;
    int rc = rec_alloc(st, rec_key(old), rec_klen(old), alen + blen,
                       rec_flags(old), nt, &r);
    if (rc != 0)
        return rc;
    if (alen)
        memcpy(rec_val(r), a, alen);
    if (blen)
        memcpy(rec_val(r) + alen, b, blen);
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

/* append/prepend: read the current record, check its CAS and the new size,
 * then commit the concatenation through replace_derived() (tags kept), and
 * start again if another writer changed the key first (optimistic retry). */
static int put_concat(struct store *st, enum store_mode mode,
                      const struct store_item *it, uint64_t *cas_out)
{
    uint64_t h = store_hash(it->key, it->klen);

    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *old = store_get(st, it->key, it->klen);
        if (old == NULL)
            return ST_NOT_STORED;
        int rc;
        if (it->cas != 0 && record_cas(old) != it->cas)
            rc = ST_EXISTS;
        else if (over_item_size(st, it->klen, (uint64_t)old->vlen + it->vlen,
                                rec_flags(old)))
            rc = ST_TOO_LARGE;
        else if (mode == STORE_APPEND)
            rc = replace_derived(st, h, old, rec_val(old), old->vlen,
                                 it->value, it->vlen, mode_event[mode],
                                 cas_out);
        else
            rc = replace_derived(st, h, old, it->value, it->vlen,
                                 rec_val(old), old->vlen, mode_event[mode],
                                 cas_out);
        store_release(st, old);
        if (rc == REPLACE_GONE)
            return ST_NOT_STORED;
        if (rc != REPLACE_RETRY)
            return rc;
    }
    return ST_NO_MEMORY;
}

int store_drop_stale(struct store *st, enum store_mode mode, const void *key,
                     uint32_t klen, uint64_t cas)
{
    if (mode != STORE_SET && mode != STORE_REPLACE && mode != STORE_CAS)
        return 0;
    if (mode == STORE_CAS && cas == 0)
        return 0;
    return store_delete(st, key, klen, mode == STORE_CAS ? cas : 0) == ST_OK;
}

int store_put(struct store *st, enum store_mode mode,
              const struct store_item *it, uint64_t *cas_out)
{
    if ((unsigned)mode > STORE_PREPEND)
        return ST_INVALID;
    int rc = put_common(st, mode, it, cas_out, mode_event[mode]);
    if (rc == ST_TOO_LARGE || rc == ST_NO_MEMORY)
        (void)store_drop_stale(st, mode, it->key, it->klen, it->cas);
    return rc;
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
        return put_concat(st, mode, it, cas_out);
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
    uint64_t ncas = rec_cas(r); /* r may be replaced once unlocked */
    mdc_wrlock(l);
    struct record *old = do_find_live(st, h, it->key, it->klen);
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

/* Mark a linked record stale in place, under its stripe's write lock. */
void do_invalidate(struct store *st, struct record *r, uint64_t h,
                          bool set_ttl, int64_t exptime)
{
    announce(st, EV_STALE, r, h);
    if (set_ttl)
        set_deadline(st, r, h, deadline_of(st, exptime));
    rec_set_rflag(r, R_STALE);
    rec_clear_rflag(r, R_WON); /* the next reader wins */
    rec_set_cas(r, next_cas());
}

int store_invalidate(struct store *st, const void *key, uint32_t klen,
                     uint64_t cas, bool set_ttl, int64_t exptime)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    struct key_write kw;
    int rc = key_write_begin(st, &kw, key, klen, cas);
    if (rc == ST_OK)
        do_invalidate(st, kw.r, kw.h, set_ttl, exptime);
    mdc_unlock(kw.l);
    return rc;
}

int store_touch(struct store *st, const void *key, uint32_t klen,
                int64_t exptime)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    uint32_t d = deadline_of(st, exptime);
    struct key_write kw;
    int rc = key_write_begin(st, &kw, key, klen, 0);
    if (rc == ST_OK) {
        announce(st, EV_TOUCH, kw.r, kw.h);
        set_deadline(st, kw.r, kw.h, d);
    }
    mdc_unlock(kw.l);
    return rc;
}

int store_delete(struct store *st, const void *key, uint32_t klen,
                 uint64_t cas)
{
    if (klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    struct key_write kw;
    int rc = key_write_begin(st, &kw, key, klen, cas);
    if (rc == ST_OK) {
        announce(st, EV_DELETE, kw.r, kw.h);
        do_unlink(st, kw.h, kw.r);
    }
    mdc_unlock(kw.l);
    return rc;
}

void store_note_tstack_seq(struct store *st, uint64_t seq)
{
    uint64_t cur = atomic_load(&st->tstack_seq);
    while (cur < seq && !atomic_compare_exchange_weak(&st->tstack_seq, &cur,
                                                      seq))
        ;
}

int store_restore(struct store *st, const struct store_restore *it,
                  struct record **tagged)
{
    *tagged = NULL;
    if (it->klen > STORE_MAX_KEY)
        return ST_KEY_INVALID;
    if (it->vlen > st->cfg.max_item_size)
        return ST_TOO_LARGE;
    if (it->ntags > st->cfg.max_tags)
        return ST_TOO_MANY_TAGS;
    if ((it->ntags > 0 && it->tags == NULL) || it->cas == 0)
        return ST_INVALID;
    /* tags as a dump writes them: sorted and distinct */
    for (uint32_t i = 1; i < it->ntags; i++)
        if (tag_cmp(&it->tags[i - 1], &it->tags[i]) >= 0)
            return ST_INVALID;
    uint32_t d = 0;
    if (it->expiry_wall != 0) {
        d = deadline_of_wall(st, it->expiry_wall);
        if (d <= now_s(st))
            return ST_NOT_FOUND;
    }
    size_t size = rec_req_size(it->klen, it->vlen,
                               it->flags ? sizeof(it->flags) : 0, it->ntags);
    if (atomic_load_explicit(&st->mem, memory_order_relaxed) +
            (int64_t)mdc_good_size(size) > (int64_t)st->cfg.mem_limit)
        return ST_NO_MEMORY;
    uint64_t h = store_hash(it->key, it->klen);
    mdc_rwlock_t *l = stripe_of(st, h);
    struct record *r;
    int rc = rec_alloc(st, it->key, it->klen, it->vlen, it->flags,
                       it->ntags, &r);
    if (rc != 0)
        return rc;
    if (it->vlen)
        memcpy(rec_val(r), it->value, it->vlen);
    r->deadline = d;
    /* versions are CAS_BITS wide (store_int.h): a wider one from
     * elsewhere keeps its low bits */
    rec_set_cas(r, (it->cas & CAS_MASK) ? it->cas : next_cas());
    if (it->ntags)
        rec_set_tags(r, it->tags, it->ntags);
    if (it->stale) /* its win token is not: the next reader wins */
        r->rflags |= R_STALE;
    /* versions handed out later are above this one */
    cas_above(it->cas);
    mdc_wrlock(l);
    if (do_find_live(st, h, it->key, it->klen) != NULL) {
        mdc_unlock(l);
        store_release(st, r);
        return ST_EXISTS;
    }
    /* keep_pos without an old record: into the forest, tags not linked */
    do_link(st, h, r, NULL, 1);
    if (it->idle_ticks != UINT32_MAX) {
        uint32_t idle = it->idle_ticks >> IDLE_TICK_SHIFT;
        uint16_t a = tick_before(now_tick(st), idle > ATIME_TICKS - 1
                                                   ? ATIME_TICKS - 1
                                                   : idle);
        __atomic_store_n(&r->atime, a, __ATOMIC_RELAXED);
        if (!it->unread) {
            /* it had been read: off probation, as old as its version
             * says, and fetched (mg's h; its next read need not write
             * atime and evb at once) */
            __atomic_store_n(&r->evb, (uint8_t)1, __ATOMIC_RELAXED);
            rec_set_rflag(r, R_FETCHED);
        }
    }
    if (it->ntags) {
        rec_incref(r);
        *tagged = r;
    }
    mdc_unlock(l);
    maybe_grow(st);
    return ST_OK;
}

int store_restore_tags(struct store *st, struct record *r)
{
    uint64_t h = store_hash(rec_key(r), rec_klen(r));
    mdc_rwlock_t *l = stripe_of(st, h);
    int64_t tmem = 0;
    int rc = ST_OK;
    mdc_wrlock(l);
    if ((rec_rflags(r) & R_LINKED) && (rec_rflags(r) & R_TAGGED)) {
        struct tag_area *ta = rec_tags(r);
        ta->lseq = atomic_fetch_add_explicit(&st->link_seq, 1,
                                             memory_order_relaxed);
        for (uint32_t i = 0; i < ta->ntags; i++) {
            if (tags_link(st->tags, &ta->e[i], &tmem) != 0) {
                store_account(st, tmem, 1);
                tmem = 0;
                do_unlink(st, h, r); /* unlinks the linked ones */
                rc = ST_NO_MEMORY;
                break;
            }
        }
        if (tmem != 0)
            store_account(st, tmem, 1);
    }
    mdc_unlock(l);
    store_release(st, r);
    return rc;
}
