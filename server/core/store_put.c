/*
 * store_put.c - writes by key: the storage commands (their steps, shared
 * with the counters and the tag stacks, in store_write.c), touch, delete,
 * invalidation in place, and loading records from a dump.  An operation
 * (level 4, store_record.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "store_policy.h"
#include "tags.h"

static const enum store_event mode_event[] = {
    [STORE_SET] = EV_SET,         [STORE_ADD] = EV_ADD,
    [STORE_REPLACE] = EV_REPLACE, [STORE_CAS] = EV_CAS,
    [STORE_APPEND] = EV_APPEND,   [STORE_PREPEND] = EV_PREPEND,
};

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
    /* versions are CAS_BITS wide (store_record.h): a wider one from
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
