/*
 * pool.c - a pool of servers: keyed operations routed by ketama (ketama.c),
 * tag operations and flush fanned out to every server at once (every
 * request composed and sent, then one poll loop over all connections), each
 * server's failure reported on its own.  A failing server is marked down by
 * its handle for the retry delay; its keys are not moved meanwhile (as
 * libmemcached without auto-eject), so no stale copy appears elsewhere.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mdc_int.h"
#include "ops.h"
#include "ketama.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_DEFAULT_RETRY_MS 2000
#define POOL_ERRLEN 1024

struct mdc_pool {
    struct mdc **servers;
    uint32_t *weights;
    size_t n, cap;
    struct mdci_continuum ring;
    int connect_ms, io_ms, retry_ms;
    struct mdci_tls *tls; /* mdc_pool_set_tls(), or NULL */
    int err;
    char errstr[POOL_ERRLEN];
};

mdc_pool_t *mdc_pool_create(void)
{
    struct mdc_pool *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->connect_ms = MDCI_DEFAULT_CONNECT_MS;
    p->io_ms = MDCI_DEFAULT_IO_MS;
    p->retry_ms = POOL_DEFAULT_RETRY_MS;
    strcpy(p->errstr, "ok");
    return p;
}

void mdc_pool_destroy(mdc_pool_t *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        mdc_destroy(p->servers[i]);
    free(p->servers);
    free(p->weights);
    mdci_tls_unref(p->tls);
    mdci_ketama_free(&p->ring);
    free(p);
}

static int pool_seterr(struct mdc_pool *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pool_seterr(struct mdc_pool *p, int rc, const char *fmt, ...)
{
    va_list ap;
    p->err = rc;
    va_start(ap, fmt);
    vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
    va_end(ap);
    return rc;
}

static int rebuild(struct mdc_pool *p)
{
    const char *stack[16] = {0};
    const char **names = stack;
    int rc = MDC_OK;
    if (p->n > 16) {
        names = malloc(p->n * sizeof(*names));
        if (names == NULL)
            return MDC_ERR_NOMEM;
    }
    for (size_t i = 0; i < p->n; i++)
        names[i] = p->servers[i]->name;
    if (mdci_ketama_build(&p->ring, names, p->weights, p->n) < 0)
        rc = MDC_ERR_NOMEM;
    if (names != stack)
        free(names);
    return rc;
}

int mdc_pool_add(mdc_pool_t *p, const char *spec, uint32_t weight)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (p->n >= INT32_MAX)
        return pool_seterr(p, MDC_ERR_ARG, "too many servers");
    struct mdc *m = mdci_create_spec(spec);
    if (m == NULL)
        return pool_seterr(p, MDC_ERR_ARG, "bad server \"%s\"",
                           spec ? spec : "(null)");
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4;
        struct mdc **s = realloc(p->servers, cap * sizeof(*s));
        if (s != NULL)
            p->servers = s;
        uint32_t *w = realloc(p->weights, cap * sizeof(*w));
        if (w != NULL)
            p->weights = w;
        if (s == NULL || w == NULL) {
            mdc_destroy(m);
            return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        }
        p->cap = cap;
    }
    mdc_set_timeouts(m, p->connect_ms, p->io_ms);
    mdc_set_retry_delay(m, p->retry_ms);
    if (p->tls != NULL)
        mdci_set_tls_shared(m, p->tls);
    p->servers[p->n] = m;
    p->weights[p->n] = weight ? weight : 1;
    p->n++;
    if (rebuild(p) != MDC_OK) {
        p->n--;
        mdc_destroy(m);
        return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    }
    pool_seterr(p, MDC_OK, "ok");
    return (int)(p->n - 1);
}

int mdc_pool_remove(mdc_pool_t *p, size_t index)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (index >= p->n)
        return pool_seterr(p, MDC_ERR_ARG, "no server %zu", index);
    mdc_destroy(p->servers[index]);
    memmove(p->servers + index, p->servers + index + 1,
            (p->n - index - 1) * sizeof(*p->servers));
    memmove(p->weights + index, p->weights + index + 1,
            (p->n - index - 1) * sizeof(*p->weights));
    p->n--;
    if (rebuild(p) != MDC_OK)
        return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    return pool_seterr(p, MDC_OK, "ok");
}

size_t mdc_pool_count(const mdc_pool_t *p)
{
    return p ? p->n : 0;
}

mdc_t *mdc_pool_server(mdc_pool_t *p, size_t index)
{
    return (p && index < p->n) ? p->servers[index] : NULL;
}

int mdc_pool_index(const mdc_pool_t *p, const void *key, size_t klen)
{
    if (p == NULL || p->n == 0)
        return MDC_ERR_NO_SERVERS;
    if (p->n == 1)
        return 0;
    return (int)mdci_ketama_find(&p->ring, mdci_ketama_hash(key, klen));
}

mdc_t *mdc_pool_pick(mdc_pool_t *p, const void *key, size_t klen)
{
    int i = mdc_pool_index(p, key, klen);
    return i < 0 ? NULL : p->servers[i];
}

int mdc_pool_set_timeouts(mdc_pool_t *p, int connect_ms, int io_ms)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (connect_ms <= 0 || io_ms <= 0)
        return pool_seterr(p, MDC_ERR_ARG, "timeouts must be positive");
    p->connect_ms = connect_ms;
    p->io_ms = io_ms;
    for (size_t i = 0; i < p->n; i++)
        mdc_set_timeouts(p->servers[i], connect_ms, io_ms);
    return MDC_OK;
}

int mdc_pool_set_retry_delay(mdc_pool_t *p, int retry_ms)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (retry_ms < 0)
        return pool_seterr(p, MDC_ERR_ARG, "retry delay must be >= 0");
    p->retry_ms = retry_ms;
    for (size_t i = 0; i < p->n; i++)
        mdc_set_retry_delay(p->servers[i], retry_ms);
    return MDC_OK;
}

int mdc_pool_set_auth(mdc_pool_t *p, const char *user, const char *password)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    for (size_t i = 0; i < p->n; i++) {
        int rc = mdc_set_auth(p->servers[i], user, password);
        if (rc != MDC_OK)
            return pool_seterr(p, rc, "%s", mdc_errstr(p->servers[i]));
    }
    return MDC_OK;
}

int mdc_pool_set_tls(mdc_pool_t *p, const struct mdc_tls_config *cfg)
{
    struct mdci_tls *t = NULL;
    char err[MDCI_ERRLEN];

    if (p == NULL)
        return MDC_ERR_ARG;
    if (cfg != NULL) {
        int rc = mdci_tls_new(cfg, &t, err, sizeof(err));
        if (rc != MDC_OK)
            return pool_seterr(p, rc, "%s", err);
    }
    for (size_t i = 0; i < p->n; i++)
        mdci_set_tls_shared(p->servers[i], t);
    mdci_tls_unref(p->tls);
    p->tls = t; /* the pool's reference */
    return pool_seterr(p, MDC_OK, "ok");
}

int mdc_pool_error(const mdc_pool_t *p)
{
    return p ? p->err : MDC_ERR_ARG;
}

const char *mdc_pool_errstr(const mdc_pool_t *p)
{
    return p ? p->errstr : "no pool";
}

/* ---- keyed ----------------------------------------------------------------
 */

static struct mdc *route(struct mdc_pool *p, const void *key, size_t klen)
{
    if (p == NULL)
        return NULL;
    if (p->n == 0) {
        pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
        return NULL;
    }
    return mdc_pool_pick(p, key, klen);
}

/* route() for a read: *out cleared when there is no server */
static struct mdc *route_read(struct mdc_pool *p, const void *key,
                              size_t klen, struct mdc_item **out)
{
    struct mdc *m = route(p, key, klen);
    if (m == NULL && out != NULL)
        *out = NULL;
    return m;
}

int mdc_pool_get(mdc_pool_t *p, const void *key, size_t klen,
                 struct mdc_item **out)
{
    struct mdc *m = route_read(p, key, klen, out);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_get(m, key, klen, out);
}

int mdc_pool_lease_get(mdc_pool_t *p, const void *key, size_t klen,
                       int64_t vivify_ttl, int64_t recache_ttl,
                       struct mdc_item **out)
{
    struct mdc *m = route_read(p, key, klen, out);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_lease_get(m, key, klen, vivify_ttl, recache_ttl, out);
}

int mdc_pool_store(mdc_pool_t *p, enum mdc_store_mode mode,
                   const struct mdc_kv *kv, uint64_t *cas_out)
{
    if (kv == NULL)
        return p ? pool_seterr(p, MDC_ERR_ARG, "NULL record") : MDC_ERR_ARG;
    struct mdc *m = route(p, kv->key, kv->klen);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_store(m, mode, kv, cas_out);
}

int mdc_pool_delete(mdc_pool_t *p, const void *key, size_t klen, uint64_t cas)
{
    struct mdc *m = route(p, key, klen);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_delete(m, key, klen, cas);
}

int mdc_pool_delete_stale(mdc_pool_t *p, const void *key, size_t klen,
                          uint64_t cas, int64_t ttl)
{
    struct mdc *m = route(p, key, klen);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_delete_stale(m, key, klen, cas, ttl);
}

/* ---- fan-out --------------------------------------------------------------
 */

/*
 * Summarise per-server results: MDC_OK when all succeeded, the common
 * status when every server failed the same way, MDC_ERR_PARTIAL when some
 * failed.  okish() says which per-server codes count as answers.
 */
static int gather(struct mdc_pool *p, const int *rc, int *server_rc,
                  const char *what, bool (*okish)(int))
{
    size_t nfail = 0, pos = 0;
    int first = MDC_OK;
    char *buf = p->errstr;

    for (size_t i = 0; i < p->n; i++) {
        if (server_rc != NULL)
            server_rc[i] = rc[i];
        if (okish(rc[i]))
            continue;
        if (nfail++ == 0)
            first = rc[i];
    }
    if (nfail == 0) {
        p->err = MDC_OK;
        strcpy(p->errstr, "ok");
        return MDC_OK;
    }
    pos = (size_t)snprintf(buf, POOL_ERRLEN, "%s: %zu of %zu servers failed",
                           what, nfail, p->n);
    for (size_t i = 0; i < p->n && pos < POOL_ERRLEN; i++) {
        if (okish(rc[i]))
            continue;
        pos += (size_t)snprintf(buf + pos, POOL_ERRLEN - pos, "; [%zu] %s", i,
                                p->servers[i]->errstr);
    }
    p->err = nfail == p->n ? first : MDC_ERR_PARTIAL;
    return p->err;
}

static bool ok_only(int rc)
{
    return rc == MDC_OK;
}

static bool ok_or_truncated(int rc)
{
    return rc == MDC_OK || rc == MDC_TRUNCATED;
}

/* Run every handle that began successfully in one poll loop. */
static void run_all(struct mdc_pool *p, const int *rc)
{
    struct mdc *stack[16];
    struct mdc **hs = stack;
    size_t k = 0;
    if (p->n > 16) {
        hs = malloc(p->n * sizeof(*hs));
        if (hs == NULL) { /* fall back to one at a time */
            for (size_t i = 0; i < p->n; i++)
                if (rc[i] == MDC_OK)
                    mdci_exchange(p->servers[i]);
            return;
        }
    }
    for (size_t i = 0; i < p->n; i++)
        if (rc[i] == MDC_OK && p->servers[i]->busy)
            hs[k++] = p->servers[i];
    /* Put every request on the wire before waiting on any reply. */
    for (size_t i = 0; i < k; i++)
        if (hs[i]->state == MDCI_READY)
            mdci_exchange_write(hs[i]);
    mdci_run(hs, k);
    if (hs != stack)
        free(hs);
}

static int *rc_array(struct mdc_pool *p, int *stack, size_t nstack)
{
    if (p->n <= nstack)
        return stack;
    int *rc = malloc(p->n * sizeof(*rc));
    if (rc == NULL)
        pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    return rc;
}

/*
 * One request (ops.h, struct mdci_req) to every server at once: composed
 * and sent on all, one poll loop for the replies, each server's result
 * read, then summarised by gather() (what names the operation, okish says
 * which codes count as answers).  A DBT's counts are added into *total.
 */
static int fan_out(struct mdc_pool *p, const struct mdci_req *r,
                   int *server_rc, const char *what, bool (*okish)(int),
                   uint64_t *total)
{
    int stack_rc[16];
    union mdci_req_ctx stack_c[16];
    union mdci_req_ctx *c = stack_c;
    int *rc;
    int ret;

    if (p->n == 0)
        return pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    if (p->n > 16 && (c = calloc(p->n, sizeof(*c))) == NULL) {
        ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < p->n; i++)
        rc[i] = mdci_req_begin(p->servers[i], r, &c[i]);
    run_all(p, rc);
    for (size_t i = 0; i < p->n; i++) {
        if (rc[i] == MDC_OK)
            rc[i] = mdci_req_finish(p->servers[i], r, &c[i]);
        if (rc[i] == MDC_OK && total != NULL)
            *total += c[i].one.u64;
    }
    ret = gather(p, rc, server_rc, what, okish);
    /* every server answered, some cut short (where okish allows that) */
    if (ret == MDC_OK)
        for (size_t i = 0; i < p->n; i++)
            if (rc[i] == MDC_TRUNCATED) {
                ret = pool_seterr(p, MDC_TRUNCATED,
                                  "%s: [%zu] %s: reply truncated", what, i,
                                  p->servers[i]->label);
                break;
            }
out:
    if (c != stack_c)
        free(c);
    if (rc != stack_rc)
        free(rc);
    return ret;
}

int mdc_pool_get_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, struct mdc_itemset *out, int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_GBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .out = out};

    if (p == NULL)
        return MDC_ERR_ARG;
    if (out == NULL || tvals == NULL || ntvals == 0)
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    return fan_out(p, &r, server_rc, "get_by_tag", ok_or_truncated, NULL);
}

static int pool_dbt(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                    size_t ntvals, bool stale, int64_t ttl, uint64_t *deleted,
                    int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_DBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .stale = stale, .ttl = ttl};
    uint64_t total = 0;
    int ret;

    if (deleted != NULL)
        *deleted = 0;
    if (p == NULL)
        return MDC_ERR_ARG;
    if (tvals == NULL || ntvals == 0)
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    ret = fan_out(p, &r, server_rc, stale ? "del_by_tag_stale" : "del_by_tag",
                  ok_only, &total);
    if (deleted != NULL)
        *deleted = total;
    return ret;
}

int mdc_pool_del_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, uint64_t *deleted, int *server_rc)
{
    return pool_dbt(p, tkey, tvals, ntvals, false, 0, deleted, server_rc);
}

int mdc_pool_del_by_tag_stale(mdc_pool_t *p, int32_t tkey,
                              const int32_t *tvals, size_t ntvals, int64_t ttl,
                              uint64_t *marked, int *server_rc)
{
    return pool_dbt(p, tkey, tvals, ntvals, true, ttl, marked, server_rc);
}

int mdc_pool_flush(mdc_pool_t *p, int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_SIMPLE, .op = WIRE_OP_FLUSH};

    if (p == NULL)
        return MDC_ERR_ARG;
    return fan_out(p, &r, server_rc, "flush", ok_only, NULL);
}

int mdc_pool_mget(mdc_pool_t *p, size_t n, const void *const *keys,
                  const size_t *klens, struct mdc_item **out, int *server_rc)
{
    int stack_rc[16];
    int *rc = NULL;
    size_t *map = NULL, *start = NULL;
    struct mdci_mget *c = NULL;
    int ret;

    if (p == NULL)
        return MDC_ERR_ARG;
    if (out == NULL || (n > 0 && (keys == NULL || klens == NULL)))
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (p->n == 0)
        return pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    map = malloc((n ? n : 1) * sizeof(*map));
    start = calloc(p->n + 1, sizeof(*start));
    c = calloc(p->n, sizeof(*c));
    if (map == NULL || start == NULL || c == NULL) {
        ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* Group key indexes by server (counting sort keeps request order). */
    for (size_t i = 0; i < n; i++) {
        if (klens[i] == 0 || klens[i] > WIRE_MAX_KEY) {
            ret = pool_seterr(p, MDC_KEY_INVALID, "key %zu: length %zu", i,
                              klens[i]);
            goto out;
        }
        start[mdc_pool_index(p, keys[i], klens[i]) + 1]++;
    }
    for (size_t s = 0; s < p->n; s++)
        start[s + 1] += start[s];
    {
        size_t *fill = calloc(p->n, sizeof(*fill));
        if (fill == NULL) {
            ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            size_t s = (size_t)mdc_pool_index(p, keys[i], klens[i]);
            map[start[s] + fill[s]++] = i;
        }
        free(fill);
    }
    for (size_t s = 0; s < p->n; s++) {
        rc[s] = MDC_OK;
        c[s].n = start[s + 1] - start[s];
        if (c[s].n == 0)
            continue;
        c[s].map = map + start[s];
        c[s].keys = keys;
        c[s].klens = klens;
        c[s].out = out;
        rc[s] = mdci_mget_begin(p->servers[s], &c[s]);
    }
    {
        /* only servers with keys take part */
        int stack_part[16] = {0};
        int *part = rc_array(p, stack_part, 16);
        if (part == NULL) {
            ret = MDC_ERR_NOMEM;
            goto out;
        }
        for (size_t s = 0; s < p->n; s++)
            part[s] = (c[s].n > 0) ? rc[s] : 1;
        run_all(p, part);
        if (part != stack_part)
            free(part);
    }
    for (size_t s = 0; s < p->n; s++) {
        if (c[s].n > 0 && rc[s] == MDC_OK)
            rc[s] = mdci_mget_finish(p->servers[s], &c[s]);
        if (rc[s] < 0) /* a failed server's keys read as misses */
            for (size_t j = 0; j < c[s].n; j++) {
                mdc_item_free(out[c[s].map[j]]);
                out[c[s].map[j]] = NULL;
            }
    }
    ret = gather(p, rc, server_rc, "mget", ok_only);
out:
    free(map);
    free(start);
    free(c);
    if (rc != stack_rc)
        free(rc);
    return ret;
}
