/*
 * store_counter.c - incr/decr and the atomic counter operations: a
 * read-modify-write of a decimal value, committed as a replacement record
 * with an optimistic retry (replace_rmw(), store_write.c, which append
 * and prepend use too).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "store_policy.h"

static int parse_u64(const unsigned char *p, uint32_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/*
 * A decimal counter's step: fn computes the new value 'nv' from the
 * current one and the operands, and the result the caller answers; it
 * returns 0 to write nv, or 1 for "no change" (a compare mismatch).
 */
typedef int (*counter_fn)(uint64_t cur, uint64_t a, uint64_t b,
                          uint64_t *nv, uint64_t *result);

struct counter_op {
    counter_fn fn;
    uint64_t a, b;
    uint64_t res;  /* fn's result, of the last record read */
    bool mismatch; /* fn said "no change": ST_EXISTS, res answered */
};

/* replace_rmw()'s callback: the new value's digits, or a status */
static int counter_derive(struct store *st, struct record *old, void *ctx,
                          struct derived *d)
{
    struct counter_op *op = ctx;
    uint64_t cur, nv = 0;

    (void)st;
    if (parse_u64(rec_val(old), old->vlen, &cur) != 0)
        return ST_NOT_NUMBER;
    if (op->fn(cur, op->a, op->b, &nv, &op->res) == 1) {
        op->mismatch = true;
        return ST_EXISTS;
    }
    int dn = snprintf(d->buf, sizeof(d->buf), "%" PRIu64, nv);
    d->a = d->buf;
    d->alen = (uint32_t)dn;
    d->b = NULL;
    d->blen = 0;
    return 0;
}

/*
 * Read-modify-write of a decimal counter through replace_rmw()
 * (store_write.c): the replacement keeps tags, flags and deadline.
 * expect != 0: only while the record's CAS is that (else ST_EXISTS).
 * *result gets fn's result when it is written, or on a compare mismatch.
 */
static int counter_rmw(struct store *st, enum store_event ev, const void *key,
                       uint32_t klen, counter_fn fn, uint64_t a, uint64_t b,
                       uint64_t expect, uint64_t *result, uint64_t *cas_out)
{
    int rc = check_key(klen);
    if (rc != 0)
        return rc;
    struct counter_op op = {fn, a, b, 0, false};
    rc = replace_rmw(st, key, klen, expect, ev, ST_NOT_FOUND, counter_derive,
                     &op, cas_out);
    if (rc == ST_OK || op.mismatch)
        *result = op.res;
    return rc;
}

static int fn_incr(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                   uint64_t *res)
{
    (void)b;
    *nv = *res = cur + a; /* wraps at 2^64, as memcached */
    return 0;
}
static int fn_decr(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                   uint64_t *res)
{
    (void)b;
    *nv = *res = cur > a ? cur - a : 0;
    return 0;
}
static int fn_fetch_add(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                        uint64_t *res)
{
    (void)b;
    *nv = cur + a;
    *res = cur;
    return 0;
}
static int fn_cmpset(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                     uint64_t *res)
{
    *res = cur;
    if (cur != a)
        return 1;
    *nv = b;
    return 0;
}
static int fn_read_clear(uint64_t cur, uint64_t a, uint64_t b, uint64_t *nv,
                         uint64_t *res)
{
    (void)a;
    (void)b;
    *res = cur;
    *nv = 0;
    return 0;
}

int store_incr_cas(struct store *st, const void *key, uint32_t klen,
                   uint64_t delta, bool decr, uint64_t expect_cas,
                   uint64_t *value_out, uint64_t *cas_out)
{
    uint64_t res = 0;
    int rc = counter_rmw(st, EV_INCR, key, klen, decr ? fn_decr : fn_incr,
                         delta, 0, expect_cas, &res, cas_out);
    if (rc == 0 && value_out)
        *value_out = res;
    return rc;
}

int store_incr(struct store *st, const void *key, uint32_t klen,
               uint64_t delta, bool decr, uint64_t *value_out,
               uint64_t *cas_out)
{
    uint64_t res = 0;
    int rc = counter_rmw(st, EV_INCR, key, klen, decr ? fn_decr : fn_incr,
                         delta, 0, 0, &res, cas_out);
    if (rc == 0 && value_out)
        *value_out = res;
    return rc;
}

int store_atomic(struct store *st, enum store_atomic_op op, const void *key,
                 uint32_t klen, uint64_t a, uint64_t b, uint64_t *result,
                 uint64_t *cas_out)
{
    counter_fn fn;
    switch (op) {
    case ATOMIC_ADD: fn = fn_incr; break;
    case ATOMIC_FETCH_ADD: fn = fn_fetch_add; break;
    case ATOMIC_CMPSET: fn = fn_cmpset; break;
    case ATOMIC_READ_CLEAR: fn = fn_read_clear; break;
    default: return ST_INVALID;
    }
    uint64_t res = 0;
    int rc = counter_rmw(st, EV_ATOMIC, key, klen, fn, a, b, 0, &res,
                         cas_out);
    if (result != NULL && (rc == 0 || rc == ST_EXISTS))
        *result = res;
    return rc;
}
