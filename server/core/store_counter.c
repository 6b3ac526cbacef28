/*
 * store_counter.c - incr/decr and the atomic counter operations: a
 * read-modify-write of a decimal value, committed as a replacement record
 * (store_write.c, replace_derived) with an optimistic retry.
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
 * Read-modify-write of a decimal counter: compute the new value from the
 * current record, build a replacement (tags, flags, deadline kept) and
 * commit it if the record is still current.  fn returns 0 to write 'nv',
 * 1 for "no change" (compare mismatch), or a status.
 */
typedef int (*counter_fn)(uint64_t cur, uint64_t a, uint64_t b,
                          uint64_t *nv, uint64_t *result);

static int counter_rmw_cas(struct store *st, enum store_event ev,
                           const void *key, uint32_t klen, counter_fn fn,
                           uint64_t a, uint64_t b_, uint64_t expect,
                           uint64_t *result, uint64_t *cas_out);

static int counter_rmw(struct store *st, enum store_event ev, const void *key,
                       uint32_t klen, counter_fn fn, uint64_t a, uint64_t b_,
                       uint64_t *result, uint64_t *cas_out)
{
    return counter_rmw_cas(st, ev, key, klen, fn, a, b_, 0, result, cas_out);
}

/* expect != 0: only while the record's CAS is that (else ST_EXISTS). */
static int counter_rmw_cas(struct store *st, enum store_event ev,
                           const void *key, uint32_t klen, counter_fn fn,
                           uint64_t a, uint64_t b_, uint64_t expect,
                           uint64_t *result, uint64_t *cas_out)
{
    int rc = check_key(klen);
    if (rc != 0)
        return rc;
    uint64_t h = store_hash(key, klen);

    for (int attempt = 0; attempt < RETRY_LIMIT; attempt++) {
        struct record *old = get_key(st, key, klen);
        if (old == NULL)
            return ST_NOT_FOUND;
        uint64_t cur, nv = 0, res = 0;
        if (expect != 0 && record_cas(old) != expect) {
            rc = ST_EXISTS;
        } else if (parse_u64(rec_val(old), old->vlen, &cur) != 0) {
            rc = ST_NOT_NUMBER;
        } else if ((rc = fn(cur, a, b_, &nv, &res)) == 1) {
            *result = res; /* compare-and-set mismatch: no change */
            rc = ST_EXISTS;
        } else if (rc == 0) {
            char digits[24];
            int dn = snprintf(digits, sizeof(digits), "%" PRIu64, nv);
            rc = replace_derived(st, h, old, digits, (uint32_t)dn, NULL, 0, ev,
                                 cas_out);
            if (rc == ST_OK)
                *result = res;
        }
        store_release(st, old);
        if (rc == REPLACE_GONE)
            return ST_NOT_FOUND;
        if (rc != REPLACE_RETRY)
            return rc;
    }
    return ST_NO_MEMORY;
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
    int rc = counter_rmw_cas(st, EV_INCR, key, klen,
                             decr ? fn_decr : fn_incr, delta, 0, expect_cas,
                             &res, cas_out);
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
                         delta, 0, &res, cas_out);
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
    int rc = counter_rmw(st, EV_ATOMIC, key, klen, fn, a, b, &res, cas_out);
    if (result != NULL && (rc == 0 || rc == ST_EXISTS))
        *result = res;
    return rc;
}
