/*
 * mdcached.c - the mdcached PHP extension: Mdcached\Client, a
 * php-memcached-like client with tags, over libmdcached's server pool
 * (ketama placement, pipelined multi-get, tag fan-out).  The session
 * handler is in mdcached_session.c.  docs/client-php.md describes the API,
 * the value encoding, the string-tag hash and the result codes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <php.h>
#include <ext/standard/info.h>
#include <ext/standard/php_var.h>
#include <ext/spl/spl_exceptions.h>
#include <zend_exceptions.h>
#include <zend_smart_str.h>

/* compression libraries: each one config.m4 found (the project's build
 * always has both; a PECL build on php-dev alone may have neither) */
#ifdef MDC_HAVE_ZLIB
#include <zlib.h>
#else
PHPAPI uint32_t php_crc32_bulk_update(uint32_t crc, const char *p, size_t nr);
#define php_crc32_bulk_init() (0 ^ 0xffffffff)
#define php_crc32_bulk_end(c) ((c) ^ 0xffffffff)
#endif
#ifdef MDC_HAVE_ZSTD
#include <zstd.h>
#endif

#include "php_mdcached.h"
#include "mdcached_arginfo.h"

ZEND_DECLARE_MODULE_GLOBALS(mdcached)

PHP_INI_BEGIN()
    STD_PHP_INI_ENTRY("mdcached.sess_prefix", "mdc.sess.", PHP_INI_ALL,
                      OnUpdateString, sess_prefix, zend_mdcached_globals,
                      mdcached_globals)
    STD_PHP_INI_ENTRY("mdcached.sess_locking", "1", PHP_INI_ALL,
                      OnUpdateBool, sess_locking, zend_mdcached_globals,
                      mdcached_globals)
    STD_PHP_INI_ENTRY("mdcached.sess_lock_wait_min", "10", PHP_INI_ALL,
                      OnUpdateLong, lock_wait_min, zend_mdcached_globals,
                      mdcached_globals)
    STD_PHP_INI_ENTRY("mdcached.sess_lock_wait_max", "150", PHP_INI_ALL,
                      OnUpdateLong, lock_wait_max, zend_mdcached_globals,
                      mdcached_globals)
    STD_PHP_INI_ENTRY("mdcached.sess_lock_retries", "200", PHP_INI_ALL,
                      OnUpdateLong, lock_retries, zend_mdcached_globals,
                      mdcached_globals)
    STD_PHP_INI_ENTRY("mdcached.sess_lock_expire", "0", PHP_INI_ALL,
                      OnUpdateLong, lock_expire, zend_mdcached_globals,
                      mdcached_globals)
PHP_INI_END()

static PHP_GINIT_FUNCTION(mdcached)
{
#if defined(COMPILE_DL_MDCACHED) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    memset(mdcached_globals, 0, sizeof(*mdcached_globals));
}

/* requests served by this process: a persistent connection is in use
 * only by an object of the current request */
static uint64_t mdcx_request;

static zend_class_entry *mdcx_ce;
static zend_class_entry *mdcx_exc_ce;
static zend_object_handlers mdcx_handlers;
static int le_mdcx_pconn;

/* options (Client::OPT_*) */
enum {
    OPT_EXCEPTIONS = 1,
    OPT_PREFIX = 2,
    OPT_SERIALIZER = 3,
    OPT_COMPRESSION = 4,
    OPT_COMPRESSION_TYPE = 5,
    OPT_COMPRESSION_THRESHOLD = 6,
    OPT_CONNECT_TIMEOUT = 7,
    OPT_READ_TIMEOUT = 8,
    OPT_RETRY_TIMEOUT = 9,
    OPT_SPOOL_DIR = 10, /* libmdcached's spool of invalidations */
    OPT_POOL_BPF = 11,  /* the kernel scatter-gather of tag deletes */
};
enum { SER_PHP = 1, SER_IGBINARY = 2, SER_MSGPACK = 3 };
enum { COMP_ZLIB = 1, COMP_ZSTD = 2 };
#define GET_EXTENDED 2

/* value encoding in the record's client flags: the low 4 bits are the
 * type, bit 4 zlib, bit 5 zstd (docs/client-php.md) */
enum {
    VT_STRING = 0,
    VT_LONG = 1,
    VT_DOUBLE = 2,
    VT_BOOL = 3,
    VT_PHP = 4,
    VT_IGBINARY = 5,
    VT_MSGPACK = 6,
    VT_NULL = 7,
};
#define VF_ZLIB 0x10u
#define VF_ZSTD 0x20u
#define MAX_UNCOMPRESSED (256u << 20) /* refuse to inflate above 256 MiB */

/* ---- connections ---------------------------------------------------------- */

static void mdcx_conn_apply(mdcx_conn *c)
{
    mdc_pool_set_timeouts(c->pool, c->connect_ms, c->io_ms);
    mdc_pool_set_retry_delay(c->pool, c->retry_ms);
}

static mdcx_conn *mdcx_conn_new(bool persistent)
{
    mdcx_conn *c = pecalloc(1, sizeof(*c), persistent);
    c->pool = mdc_pool_create();
    if (c->pool == NULL) {
        pefree(c, persistent);
        return NULL;
    }
    c->persistent = persistent;
    c->connect_ms = 1000;
    c->io_ms = 5000;
    c->retry_ms = 2000;
    mdcx_conn_apply(c);
    return c;
}

static void mdcx_conn_clear(mdcx_conn *c)
{
    for (size_t i = 0; i < c->nspecs; i++)
        pefree(c->specs[i], c->persistent);
    if (c->specs)
        pefree(c->specs, c->persistent);
    if (c->weights)
        pefree(c->weights, c->persistent);
    c->specs = NULL;
    c->weights = NULL;
    c->nspecs = 0;
}

void mdcx_conn_free(mdcx_conn *c)
{
    if (c == NULL)
        return;
    mdc_pool_destroy(c->pool);
    mdcx_conn_clear(c);
    if (c->auth_user)
        pefree(c->auth_user, c->persistent);
    if (c->auth_pass)
        pefree(c->auth_pass, c->persistent);
    if (c->tls_key)
        pefree(c->tls_key, c->persistent);
    if (c->spool_dir)
        pefree(c->spool_dir, c->persistent);
    if (c->pool_bpf)
        pefree(c->pool_bpf, c->persistent);
    pefree(c, c->persistent);
}

void mdcx_conn_check(mdcx_conn *c)
{
    size_t n = mdc_pool_count(c->pool);
    for (size_t i = 0; i < n; i++)
        mdc_check(mdc_pool_server(c->pool, i));
}

/* Add a server; 0, or a libmdcached error.  A spec already present is not
 * added again (a persistent connection keeps its servers). */
static int mdcx_conn_add(mdcx_conn *c, const char *spec, uint32_t weight)
{
    for (size_t i = 0; i < c->nspecs; i++)
        if (strcmp(c->specs[i], spec) == 0)
            return MDC_OK;
    int idx = mdc_pool_add(c->pool, spec, weight);
    if (idx < 0)
        return idx;
    /* the pool gives its TLS settings to new servers itself */
    if (c->auth_user != NULL) {
        int rc = mdc_set_auth(mdc_pool_server(c->pool, (size_t)idx),
                              c->auth_user, c->auth_pass);
        if (rc != MDC_OK) {
            mdc_pool_remove(c->pool, (size_t)idx);
            return rc;
        }
    }
    c->specs = perealloc(c->specs, (c->nspecs + 1) * sizeof(char *),
                         c->persistent);
    c->weights = perealloc(c->weights, (c->nspecs + 1) * sizeof(uint32_t),
                           c->persistent);
    c->specs[c->nspecs] = pestrdup(spec, c->persistent);
    c->weights[c->nspecs] = weight;
    c->nspecs++;
    return MDC_OK;
}

mdcx_conn *mdcx_conn_from_list(const char *list, bool persistent)
{
    mdcx_conn *c = mdcx_conn_new(persistent);
    if (c == NULL)
        return NULL;
    char *dup = estrdup(list);
    char *save = NULL;
    int ok = 0;
    for (char *tok = strtok_r(dup, ", \t", &save); tok != NULL;
         tok = strtok_r(NULL, ", \t", &save)) {
        if (mdcx_conn_add(c, tok, 1) != MDC_OK) {
            ok = -1;
            break;
        }
        ok = 1;
    }
    efree(dup);
    if (ok != 1) {
        mdcx_conn_free(c);
        return NULL;
    }
    return c;
}

static ZEND_RSRC_DTOR_FUNC(mdcx_pconn_dtor)
{
    if (res->ptr) {
        mdcx_conn_free((mdcx_conn *)res->ptr);
        res->ptr = NULL;
    }
}

/* ---- results ---------------------------------------------------------------- */

static const char *mdcx_code_text(int rc)
{
    switch (rc) {
    case MDCX_RES_PAYLOAD_FAILURE:
        return "payload failure (serialize, compress or decode)";
    case MDCX_RES_BAD_TAG:
        return "bad tag";
    case MDCX_RES_BAD_KEY:
        return "bad key";
    case MDCX_RES_INVALID_ARGS:
        return "invalid arguments";
    default:
        return mdc_strerror(rc);
    }
}

/* Codes that are outcomes, not failures: never an exception. */
static bool mdcx_expected(int rc)
{
    return rc == MDC_OK || rc == MDC_NOT_FOUND || rc == MDC_EXISTS ||
           rc == MDC_NOT_STORED || rc == MDC_TRUNCATED;
}

/* Record a result; with OPT_EXCEPTIONS a failure throws.  Returns rc. */
static int mdcx_result(mdcx_obj *o, int rc, const char *fmt, ...)
{
    if (rc == MDC_MSG_TOO_LARGE) /* over the server's message bound */
        rc = MDC_TOO_LARGE;
    o->rc = rc;
    if (rc == MDC_OK) {
        strcpy(o->msg, "SUCCESS");
        return rc;
    }
    if (fmt != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(o->msg, sizeof(o->msg), fmt, ap);
        va_end(ap);
    } else {
        snprintf(o->msg, sizeof(o->msg), "%s", mdcx_code_text(rc));
    }
    if (o->exceptions && !mdcx_expected(rc) && !EG(exception))
        zend_throw_exception(mdcx_exc_ce, o->msg, rc);
    return rc;
}

/* Result of an operation on one server handle: its message. */
static int mdcx_result_h(mdcx_obj *o, mdc_t *h, int rc)
{
    if (rc == MDC_OK)
        return mdcx_result(o, rc, NULL);
    if (h != NULL && mdc_error(h) == rc)
        return mdcx_result(o, rc, "%s", mdc_errstr(h));
    return mdcx_result(o, rc, NULL);
}

static int mdcx_result_pool(mdcx_obj *o, int rc)
{
    if (rc == MDC_OK)
        return mdcx_result(o, rc, NULL);
    if (mdc_pool_error(o->c->pool) == rc && mdc_pool_errstr(o->c->pool)[0])
        return mdcx_result(o, rc, "%s", mdc_pool_errstr(o->c->pool));
    return mdcx_result(o, rc, NULL);
}

/* ---- keys ------------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t len;
    char buf[256];
} mdcx_key;

/* Build the wire key (prefix + key).  0, or MDCX_RES_BAD_KEY. */
static int mdcx_key_make(mdcx_obj *o, const char *k, size_t klen,
                         mdcx_key *out)
{
    size_t plen = o->prefix ? ZSTR_LEN(o->prefix) : 0;
    out->p = NULL;
    if (klen == 0 || plen + klen > MDC_MAX_KEY)
        return MDCX_RES_BAD_KEY;
    out->len = plen + klen;
    out->p = out->len <= sizeof(out->buf) ? out->buf : emalloc(out->len);
    if (plen)
        memcpy(out->p, ZSTR_VAL(o->prefix), plen);
    memcpy(out->p + plen, k, klen);
    return 0;
}

static void mdcx_key_free(mdcx_key *k)
{
    if (k->p && k->p != k->buf)
        efree(k->p);
    k->p = NULL;
}

static int mdcx_bad_key(mdcx_obj *o, size_t klen)
{
    return mdcx_result(o, MDCX_RES_BAD_KEY,
                       klen == 0 ? "bad key: empty"
                                 : "bad key: longer than %u bytes with the "
                                   "prefix",
                       MDC_MAX_KEY);
}

/* The key as the user sees it (prefix removed when present). */
static zend_string *mdcx_user_key(mdcx_obj *o, const char *k, size_t klen)
{
    size_t plen = o->prefix ? ZSTR_LEN(o->prefix) : 0;
    if (plen && klen >= plen && memcmp(k, ZSTR_VAL(o->prefix), plen) == 0)
        return zend_string_init(k + plen, klen - plen, 0);
    return zend_string_init(k, klen, 0);
}

static int mdcx_no_servers(mdcx_obj *o)
{
    return mdcx_result(o, MDC_ERR_NO_SERVERS,
                       "no servers: call addServer() first");
}

static mdc_t *mdcx_pick(mdcx_obj *o, const mdcx_key *k)
{
    mdc_t *h = mdc_pool_pick(o->c->pool, k->p, k->len);
    if (h == NULL)
        mdcx_no_servers(o);
    return h;
}

/* A method's key argument as the wire key; false (recorded) when bad. */
static bool mdcx_key_arg(mdcx_obj *o, zend_string *key, mdcx_key *k)
{
    if (mdcx_key_make(o, ZSTR_VAL(key), ZSTR_LEN(key), k) == 0)
        return true;
    mdcx_bad_key(o, ZSTR_LEN(key));
    return false;
}

/* The key argument and its server; NULL (recorded, nothing to free) when
 * the key is bad or there is no server. */
static mdc_t *mdcx_key_server(mdcx_obj *o, zend_string *key, mdcx_key *k)
{
    if (!mdcx_key_arg(o, key, k))
        return NULL;
    mdc_t *h = mdcx_pick(o, k);
    if (h == NULL)
        mdcx_key_free(k);
    return h;
}

/* The end of a one-key call: the key freed, the result recorded. */
static int mdcx_key_done(mdcx_obj *o, mdc_t *h, mdcx_key *k, int rc)
{
    mdcx_key_free(k);
    return mdcx_result_h(o, h, rc);
}

/* A loop over the servers keeps its first failure: code and server. */
static void mdcx_first_fail(int *first, mdc_t **fh, int rc, mdc_t *h)
{
    if (rc != MDC_OK && *first == MDC_OK) {
        *first = rc;
        *fh = h;
    }
}

/* ZPP for union parameters taken as zvals: a TypeError otherwise */
static bool mdcx_arg_types(uint32_t num, zval *z, uint32_t mask,
                           const char *types)
{
    if (z == NULL || (mask & (1u << Z_TYPE_P(z))))
        return true;
    zend_argument_type_error(num, "must be of type %s, %s given", types,
                             zend_zval_type_name(z));
    return false;
}
#define TY(t) (1u << (t))

/* ---- tags ---------------------------------------------------------------- */

static int32_t mdcx_string_tval(const char *s, size_t len)
{
#ifdef MDC_HAVE_ZLIB
    return (int32_t)(crc32(0L, (const Bytef *)s, (uInt)len) & 0x7fffffffu);
#else
    /* PHP's crc32(), the same CRC-32 as zlib's */
    uint32_t c = php_crc32_bulk_update(php_crc32_bulk_init(), s, len);
    return (int32_t)(php_crc32_bulk_end(c) & 0x7fffffffu);
#endif
}

typedef struct {
    struct mdc_tag *v;
    size_t n, cap;
    struct mdc_tag buf[16];
} mdcx_tags;

static void mdcx_tags_init(mdcx_tags *t)
{
    t->v = t->buf;
    t->n = 0;
    t->cap = 16;
}

static void mdcx_tags_free(mdcx_tags *t)
{
    if (t->v != t->buf)
        efree(t->v);
    t->v = t->buf;
}

static void mdcx_tags_push(mdcx_tags *t, int32_t tkey, int32_t tval)
{
    if (t->n == t->cap) {
        size_t cap = t->cap * 2;
        struct mdc_tag *v = emalloc(cap * sizeof(*v));
        memcpy(v, t->v, t->n * sizeof(*v));
        if (t->v != t->buf)
            efree(t->v);
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n].tkey = tkey;
    t->v[t->n].tval = tval;
    t->n++;
}

static bool mdcx_int32(zval *z, int32_t *out)
{
    if (Z_TYPE_P(z) != IS_LONG || Z_LVAL_P(z) < INT32_MIN ||
        Z_LVAL_P(z) > INT32_MAX)
        return false;
    *out = (int32_t)Z_LVAL_P(z);
    return true;
}

/* A [tkey, tval] pair (what GET_EXTENDED returns): exactly two int32s at
 * keys 0 and 1.  0, or MDCX_RES_BAD_TAG. */
static int mdcx_tag_pair(mdcx_obj *o, HashTable *pair, mdcx_tags *t)
{
    zval *k = zend_hash_index_find(pair, 0), *v = zend_hash_index_find(pair, 1);
    int32_t tkey, tval;
    if (zend_hash_num_elements(pair) != 2 || k == NULL || v == NULL)
        return mdcx_result(o, MDCX_RES_BAD_TAG,
                           "bad tag: in a list of tags an array must be a "
                           "[tkey, tval] pair, as GET_EXTENDED returns");
    ZVAL_DEREF(k);
    ZVAL_DEREF(v);
    if (!mdcx_int32(k, &tkey) || !mdcx_int32(v, &tval))
        return mdcx_result(o, MDCX_RES_BAD_TAG,
                           "bad tag: a [tkey, tval] pair must hold two int32");
    mdcx_tags_push(t, tkey, tval);
    return 0;
}

/* Parse a tags array: [tkey => tval], [tkey => [tval, ...]], a list of
 * strings (string tags), mixed freely, or a list of [tkey, tval] pairs.
 * In a list (keys 0, 1, ...) an array element is always a pair, so the
 * tags GET_EXTENDED returns can be written back as they were read (read
 * as [tkey => [tvals]] they named tag keys 0, 1, ... instead).
 * 0, or MDCX_RES_BAD_TAG. */
static int mdcx_tags_parse(mdcx_obj *o, HashTable *ht, mdcx_tags *t)
{
    zend_ulong ik;
    zend_string *sk;
    zval *v;
    bool list = zend_array_is_list(ht);
    ZEND_HASH_FOREACH_KEY_VAL(ht, ik, sk, v) {
        ZVAL_DEREF(v);
        if (Z_TYPE_P(v) == IS_STRING) {
            if (Z_STRLEN_P(v) == 0)
                return mdcx_result(o, MDCX_RES_BAD_TAG,
                                   "bad tag: empty string tag");
            mdcx_tags_push(t, MDCX_STRING_TAG_KEY,
                           mdcx_string_tval(Z_STRVAL_P(v), Z_STRLEN_P(v)));
            continue;
        }
        if (list && Z_TYPE_P(v) == IS_ARRAY) {
            if (mdcx_tag_pair(o, Z_ARRVAL_P(v), t) != 0)
                return MDCX_RES_BAD_TAG;
            continue;
        }
        if (sk != NULL || (zend_long)ik < INT32_MIN ||
            (zend_long)ik > INT32_MAX)
            return mdcx_result(o, MDCX_RES_BAD_TAG,
                               "bad tag: an integer tag needs an int32 tag "
                               "key as array key");
        int32_t tval;
        if (Z_TYPE_P(v) == IS_ARRAY) {
            zval *e;
            ZEND_HASH_FOREACH_VAL(Z_ARRVAL_P(v), e) {
                ZVAL_DEREF(e);
                if (!mdcx_int32(e, &tval))
                    return mdcx_result(o, MDCX_RES_BAD_TAG,
                                       "bad tag: tag values must be int32");
                mdcx_tags_push(t, (int32_t)(zend_long)ik, tval);
            } ZEND_HASH_FOREACH_END();
            continue;
        }
        if (!mdcx_int32(v, &tval))
            return mdcx_result(o, MDCX_RES_BAD_TAG,
                               "bad tag: tag values must be int32 or strings");
        mdcx_tags_push(t, (int32_t)(zend_long)ik, tval);
    } ZEND_HASH_FOREACH_END();
    return 0;
}

/* A tag selector (getByTag/deleteByTag): an int tkey with int|array tvals,
 * a string tag, or a list of string tags.  Fills tkey and tvals. */
static int mdcx_selector(mdcx_obj *o, zval *tag, zval *tvals, int32_t *tkey,
                         mdcx_tags *t)
{
    zval *e;
    int32_t v;
    if (Z_TYPE_P(tag) == IS_STRING || Z_TYPE_P(tag) == IS_ARRAY) {
        if (tvals != NULL && Z_TYPE_P(tvals) != IS_NULL)
            return mdcx_result(o, MDCX_RES_BAD_TAG,
                               "bad tag: string tags take no tag values");
        *tkey = MDCX_STRING_TAG_KEY;
        if (Z_TYPE_P(tag) == IS_STRING) {
            if (Z_STRLEN_P(tag) == 0)
                return mdcx_result(o, MDCX_RES_BAD_TAG,
                                   "bad tag: empty string tag");
            mdcx_tags_push(t, 0, mdcx_string_tval(Z_STRVAL_P(tag),
                                                  Z_STRLEN_P(tag)));
        } else {
            ZEND_HASH_FOREACH_VAL(Z_ARRVAL_P(tag), e) {
                ZVAL_DEREF(e);
                if (Z_TYPE_P(e) != IS_STRING || Z_STRLEN_P(e) == 0)
                    return mdcx_result(o, MDCX_RES_BAD_TAG,
                                       "bad tag: a list of tags must hold "
                                       "non-empty strings");
                mdcx_tags_push(t, 0, mdcx_string_tval(Z_STRVAL_P(e),
                                                      Z_STRLEN_P(e)));
            } ZEND_HASH_FOREACH_END();
        }
    } else {
        if (!mdcx_int32(tag, tkey))
            return mdcx_result(o, MDCX_RES_BAD_TAG,
                               "bad tag: tag key must be int32");
        if (tvals == NULL || Z_TYPE_P(tvals) == IS_NULL)
            return mdcx_result(o, MDCX_RES_BAD_TAG,
                               "bad tag: an integer tag key needs tag values");
        if (Z_TYPE_P(tvals) == IS_LONG) {
            if (!mdcx_int32(tvals, &v))
                return mdcx_result(o, MDCX_RES_BAD_TAG,
                                   "bad tag: tag values must be int32");
            mdcx_tags_push(t, 0, v);
        } else {
            ZEND_HASH_FOREACH_VAL(Z_ARRVAL_P(tvals), e) {
                ZVAL_DEREF(e);
                if (!mdcx_int32(e, &v))
                    return mdcx_result(o, MDCX_RES_BAD_TAG,
                                       "bad tag: tag values must be int32");
                mdcx_tags_push(t, 0, v);
            } ZEND_HASH_FOREACH_END();
        }
    }
    if (t->n == 0)
        return mdcx_result(o, MDCX_RES_BAD_TAG, "bad tag: no tag values");
    return 0;
}

/* tvals of a selector: the tval fields, contiguous */
static int32_t *mdcx_tvals(mdcx_tags *t)
{
    int32_t *v = emalloc(t->n * sizeof(int32_t));
    for (size_t i = 0; i < t->n; i++)
        v[i] = t->v[i].tval;
    return v;
}

/* ---- values ---------------------------------------------------------------- */

static bool mdcx_call1(const char *fn, zval *arg, zval *ret)
{
    zval fname;
    bool ok;
    ZVAL_STRING(&fname, fn);
    ok = call_user_function(NULL, NULL, &fname, ret, 1, arg) == SUCCESS &&
         !EG(exception);
    zval_ptr_dtor(&fname);
    return ok;
}

static bool mdcx_have_fn(const char *fn)
{
    return zend_hash_str_exists(EG(function_table), fn, strlen(fn));
}

/* The output bound of compressing len bytes with type; 0 when this build
 * lacks that library. */
static size_t mdcx_zbound(int type, size_t len)
{
#ifdef MDC_HAVE_ZSTD
    if (type == COMP_ZSTD)
        return ZSTD_compressBound(len);
#endif
#ifdef MDC_HAVE_ZLIB
    if (type == COMP_ZLIB)
        return compressBound((uLong)len);
#endif
    (void)len;
    return 0;
}

/* Compress s into d (cap bytes, mdcx_zbound()'s): true and *zlen. */
static bool mdcx_zcompress(int type, unsigned char *d, size_t cap,
                           const char *s, size_t len, size_t *zlen)
{
#ifdef MDC_HAVE_ZSTD
    if (type == COMP_ZSTD) {
        *zlen = ZSTD_compress(d, cap, s, len, 3);
        return !ZSTD_isError(*zlen);
    }
#endif
#ifdef MDC_HAVE_ZLIB
    if (type == COMP_ZLIB) {
        uLongf dl = (uLongf)cap;
        bool ok = compress2(d, &dl, (const Bytef *)s, (uLong)len,
                            Z_DEFAULT_COMPRESSION) == Z_OK;
        *zlen = dl;
        return ok;
    }
#endif
    (void)d, (void)cap, (void)s, (void)len, (void)zlen;
    return false;
}

/* Encode a value into out (a smart_str) and flags.  0 or an error. */
static int mdcx_encode(mdcx_obj *o, zval *v, smart_str *out, uint32_t *flags)
{
    uint32_t type;
    ZVAL_DEREF(v);
    switch (Z_TYPE_P(v)) {
    case IS_STRING:
        smart_str_appendl(out, Z_STRVAL_P(v), Z_STRLEN_P(v));
        type = VT_STRING;
        break;
    case IS_LONG:
        smart_str_append_long(out, Z_LVAL_P(v));
        type = VT_LONG;
        break;
    case IS_DOUBLE:
        smart_str_append_double(out, Z_DVAL_P(v), 17, false);
        type = VT_DOUBLE;
        break;
    case IS_TRUE:
        smart_str_appendc(out, '1');
        type = VT_BOOL;
        break;
    case IS_FALSE:
        type = VT_BOOL;
        break;
    case IS_NULL:
        type = VT_NULL;
        break;
    default:
        if (o->serializer == SER_IGBINARY || o->serializer == SER_MSGPACK) {
            const char *fn = o->serializer == SER_IGBINARY
                                 ? "igbinary_serialize"
                                 : "msgpack_pack";
            zval ret;
            if (!mdcx_call1(fn, v, &ret) || Z_TYPE(ret) != IS_STRING) {
                if (!EG(exception))
                    zval_ptr_dtor(&ret);
                return mdcx_result(o, MDCX_RES_PAYLOAD_FAILURE,
                                   "payload failure: %s failed", fn);
            }
            smart_str_appendl(out, Z_STRVAL(ret), Z_STRLEN(ret));
            zval_ptr_dtor(&ret);
            type = o->serializer == SER_IGBINARY ? VT_IGBINARY : VT_MSGPACK;
        } else {
            php_serialize_data_t vh;
            PHP_VAR_SERIALIZE_INIT(vh);
            php_var_serialize(out, v, &vh);
            PHP_VAR_SERIALIZE_DESTROY(vh);
            if (EG(exception))
                return mdcx_result(o, MDCX_RES_PAYLOAD_FAILURE,
                                   "payload failure: serialize failed");
            type = VT_PHP;
        }
    }
    *flags = type;
    size_t len = out->s ? ZSTR_LEN(out->s) : 0;
    if (o->compression && len >= (size_t)o->compression_threshold &&
        len > 0 && len <= MAX_UNCOMPRESSED) {
        size_t cap = mdcx_zbound(o->compression_type, len);
        if (cap == 0) /* this build lacks the library: stored plain */
            return 0;
        zend_string *z = zend_string_alloc(cap + 4, 0);
        unsigned char *d = (unsigned char *)ZSTR_VAL(z);
        size_t zlen = 0;
        bool ok;
        d[0] = len & 0xff;
        d[1] = (len >> 8) & 0xff;
        d[2] = (len >> 16) & 0xff;
        d[3] = (len >> 24) & 0xff;
        ok = mdcx_zcompress(o->compression_type, d + 4, cap,
                            ZSTR_VAL(out->s), len, &zlen);
        /* keep compressed data only when it saves space */
        if (ok && zlen + 4 < len) {
            ZSTR_LEN(z) = zlen + 4;
            smart_str_free(out);
            out->s = z;
            out->a = cap + 4;
            *flags |= o->compression_type == COMP_ZSTD ? VF_ZSTD : VF_ZLIB;
        } else {
            zend_string_efree(z);
        }
    }
    return 0;
}

/* msgpack values as the check below sees them */
enum { MP_NIL, MP_INT, MP_STR, MP_CONTAINER, MP_OTHER };
#define MP_MAX_DEPTH 1024 /* msgpack-php's own nesting limit */

/* msgpack-php numbers the arrays and maps from 1 in the order they start
 * and a back reference names one by number; bad[i] marks those whose
 * zval it frees or moves before a reference could copy it. */
typedef struct {
    unsigned char *bad;
    size_t n;
} mdcx_mp;

static bool mdcx_mp_value(mdcx_mp *m, const unsigned char *p, size_t len,
                          size_t *pos, int depth, bool unstable, int *kind,
                          int64_t *ival);

/* A map's entries.  msgpack-php marks objects and references with nil
 * keys and uses their values unchecked, so only the shapes its packer
 * writes pass: first {nil: 1} (a reference), then {nil: "Class"}, then
 * {nil: [...]} (__serialize data); or exactly {nil: 2|4|5, key: number}
 * (a back reference) or {nil: 3, "Class": "data"} (Serializable).  Other
 * keys are strings or integers.  A back reference may name only a
 * container that stays where msgpack-php recorded it: not __serialize
 * data (freed once the object has it) nor anything in it, not another
 * back reference, not a child of a map of more than 8 entries (the
 * table it was put in grows and moves). */
static bool mdcx_mp_map(mdcx_mp *m, const unsigned char *p, size_t len,
                        size_t *pos, int depth, bool unstable, size_t self,
                        size_t n)
{
    int64_t type = 0; /* the {nil: int} of entry 0 */
    bool prev_class = false;
    for (size_t i = 0; i < n; i++) {
        int kk, vk;
        int64_t kv, vv;
        if (!mdcx_mp_value(m, p, len, pos, depth, true, &kk, &kv))
            return false;
        if (kk != MP_NIL && kk != MP_INT && kk != MP_STR)
            return false;
        size_t first = m->n; /* the containers the value starts */
        if (!mdcx_mp_value(m, p, len, pos, depth, unstable || n > 8, &vk,
                           &vv))
            return false;
        bool cls = false;
        if (kk == MP_NIL) {
            if (i == 0 && vk == MP_INT && vv >= 1 && vv <= 5) {
                type = vv;
                if (type != 1 && n != 2)
                    return false;
                if (type != 1 && type != 3)
                    m->bad[self] = 1;
            } else if (vk == MP_STR && (i == 0 || (i == 1 && type == 1))) {
                cls = true;
            } else if (vk == MP_CONTAINER && prev_class) {
                memset(m->bad + first, 1, m->n - first);
            } else {
                return false;
            }
        } else if (type == 3) {
            if (kk != MP_STR || vk != MP_STR)
                return false;
        } else if (type >= 2) {
            if (vk != MP_INT || vv < 1 || (uint64_t)vv > m->n ||
                m->bad[vv - 1])
                return false;
        }
        prev_class = cls;
    }
    return true;
}

/* One msgpack value at *pos: its kind, and for an integer its value
 * (saturated; only small ones matter).  unstable: a container starting
 * here may not be named by a back reference. */
static bool mdcx_mp_value(mdcx_mp *m, const unsigned char *p, size_t len,
                          size_t *pos, int depth, bool unstable, int *kind,
                          int64_t *ival)
{
    if (*pos >= len || depth > MP_MAX_DEPTH)
        return false;
    unsigned b = p[(*pos)++];
    size_t lb = 0, skip = 0, n = 0;
    int per = 0; /* values per element: 1 array, 2 map */
    *kind = MP_OTHER;
    *ival = 0;
    if (b <= 0x7f) {
        *kind = MP_INT, *ival = b;
        return true;
    }
    if (b >= 0xe0) {
        *kind = MP_INT, *ival = (int64_t)b - 256;
        return true;
    }
    if (b <= 0x8f) {
        n = b & 0xf, per = 2;
    } else if (b <= 0x9f) {
        n = b & 0xf, per = 1;
    } else if (b <= 0xbf) {
        *kind = MP_STR, skip = b & 0x1f;
    } else {
        switch (b) {
        case 0xc0: *kind = MP_NIL; return true;
        case 0xc2: case 0xc3: return true;                /* bool */
        case 0xd9: *kind = MP_STR; /* fall through */
        case 0xc4: lb = 1; break;                         /* bin8, str8 */
        case 0xda: *kind = MP_STR; /* fall through */
        case 0xc5: lb = 2; break;
        case 0xdb: *kind = MP_STR; /* fall through */
        case 0xc6: lb = 4; break;
        case 0xc7: lb = 1, skip = 1; break;               /* ext: + type */
        case 0xc8: lb = 2, skip = 1; break;
        case 0xc9: lb = 4, skip = 1; break;
        case 0xca: skip = 4; break;                       /* float32 */
        case 0xcb: skip = 8; break;
        case 0xcc: case 0xcd: case 0xce: case 0xcf:       /* uint8..64 */
        case 0xd0: case 0xd1: case 0xd2: case 0xd3: {     /* int8..64 */
            size_t w = (size_t)1 << (b & 3);
            if (w > len - *pos)
                return false;
            uint64_t u = 0;
            for (size_t i = 0; i < w; i++)
                u = (u << 8) | p[*pos + i];
            *pos += w;
            *kind = MP_INT;
            if (b >= 0xd0 && (u >> (8 * w - 1)))
                *ival = -1;                /* negative: never a number */
            else if (u > INT64_MAX)
                *ival = INT64_MAX;
            else
                *ival = (int64_t)u;
            return true;
        }
        case 0xd4: skip = 2; break;                       /* fixext */
        case 0xd5: skip = 3; break;
        case 0xd6: skip = 5; break;
        case 0xd7: skip = 9; break;
        case 0xd8: skip = 17; break;
        case 0xdc: lb = 2, per = 1; break;                /* array16 */
        case 0xdd: lb = 4, per = 1; break;
        case 0xde: lb = 2, per = 2; break;                /* map16 */
        case 0xdf: lb = 4, per = 2; break;
        default: return false;                            /* 0xc1 */
        }
    }
    if (lb > len - *pos)
        return false;
    size_t l = 0;
    for (size_t i = 0; i < lb; i++)
        l = (l << 8) | p[*pos + i];
    *pos += lb;
    if (!per) {
        skip += l;
        if (skip > len - *pos)
            return false;
        *pos += skip;
        return true;
    }
    if (lb)
        n = l;
    *kind = MP_CONTAINER;
    if (n > (len - *pos) / per) /* each value takes a byte at least */
        return false;
    size_t self = m->n++; /* at most one container per byte: fits bad */
    m->bad[self] = unstable;
    if (per == 2)
        return mdcx_mp_map(m, p, len, pos, depth + 1, unstable, self, n);
    for (size_t i = 0; i < n; i++) {
        int k;
        int64_t v;
        if (!mdcx_mp_value(m, p, len, pos, depth + 1,
                           unstable || n > (1u << 16), &k, &v))
            return false;
    }
    return true;
}

/* Whether p holds one msgpack value that msgpack_unpack can be given:
 * complete, nothing after it, objects and references only in the shapes
 * msgpack-php writes and back references only to what it keeps in place
 * (mdcx_mp_map).  msgpack-php trusts its input: a map cut short after a
 * nil key (82 c0 81 fe fb), nil keys elsewhere, or a back reference to
 * freed __serialize data corrupt PHP's heap and a later allocation
 * crashes (robust.phpt's random bytes did; msgpack_garbage.phpt). */
static bool mdcx_msgpack_ok(const unsigned char *p, size_t len)
{
    mdcx_mp m = {emalloc(len + 1), 0};
    size_t pos = 0;
    int k;
    int64_t v;
    bool ok = mdcx_mp_value(&m, p, len, &pos, 0, false, &k, &v) &&
              pos == len;
    efree(m.bad);
    return ok;
}

/* Decode a record's value into rv.  0, or MDCX_RES_PAYLOAD_FAILURE. */
static int mdcx_decode(mdcx_obj *o, const char *p, size_t len, uint32_t flags,
                       zval *rv)
{
    zend_string *plain = NULL;
    if (flags & (VF_ZLIB | VF_ZSTD)) {
        if (len < 4)
            goto bad;
        const unsigned char *u = (const unsigned char *)p;
        size_t olen = (size_t)u[0] | ((size_t)u[1] << 8) |
                      ((size_t)u[2] << 16) | ((size_t)u[3] << 24);
        /* check the claimed size before allocating it: deflate expands
         * at most 1032:1, and a zstd frame states its size */
        if (olen > MAX_UNCOMPRESSED)
            goto bad;
        if (flags & VF_ZSTD) {
#ifdef MDC_HAVE_ZSTD
            if (ZSTD_getFrameContentSize(p + 4, len - 4) !=
                (unsigned long long)olen)
                goto bad;
            plain = zend_string_alloc(olen, 0);
            size_t r = ZSTD_decompress(ZSTR_VAL(plain), olen, p + 4, len - 4);
            if (ZSTD_isError(r) || r != olen ||
                ZSTD_findFrameCompressedSize(p + 4, len - 4) != len - 4)
                goto bad;
#else
            goto bad; /* built without libzstd */
#endif
        } else {
#ifdef MDC_HAVE_ZLIB
            if (olen > (len - 4) * 1032 + 64)
                goto bad;
            plain = zend_string_alloc(olen, 0);
            uLongf dl = (uLongf)olen;
            uLong sl = (uLong)(len - 4);
            /* the whole stream must be consumed: trailing bytes are a
             * corrupted record, not data to ignore */
            if (uncompress2((Bytef *)ZSTR_VAL(plain), &dl,
                            (const Bytef *)p + 4, &sl) != Z_OK ||
                dl != olen || sl != (uLong)(len - 4))
                goto bad;
#else
            goto bad; /* built without zlib */
#endif
        }
        ZSTR_VAL(plain)[olen] = '\0';
        p = ZSTR_VAL(plain);
        len = olen;
    }
    switch (flags & 0xf) {
    case VT_STRING:
        if (plain && ZSTR_LEN(plain) == len) {
            ZVAL_STR(rv, plain);
            return 0;
        }
        ZVAL_STRINGL(rv, p, len);
        break;
    case VT_LONG: {
        char buf[32];
        zend_long l;
        if (len == 0 || len >= sizeof(buf))
            goto bad;
        memcpy(buf, p, len);
        buf[len] = '\0';
        while (len > 0 && buf[len - 1] == ' ') /* incr may pad */
            buf[--len] = '\0';
        if (is_numeric_string(buf, len, &l, NULL, 0) != IS_LONG) {
            /* a counter past ZEND_LONG_MAX comes back as a float */
            if (strspn(buf, "0123456789") != len)
                goto bad;
            ZVAL_DOUBLE(rv, zend_strtod(buf, NULL));
            break;
        }
        ZVAL_LONG(rv, l);
        break;
    }
    case VT_DOUBLE: {
        char buf[64];
        if (len == 0 || len >= sizeof(buf))
            goto bad;
        memcpy(buf, p, len);
        buf[len] = '\0';
        ZVAL_DOUBLE(rv, zend_strtod(buf, NULL));
        break;
    }
    case VT_BOOL:
        ZVAL_BOOL(rv, len == 1 && p[0] == '1');
        break;
    case VT_NULL:
        ZVAL_NULL(rv);
        break;
    case VT_PHP: {
        const unsigned char *s = (const unsigned char *)p;
        php_unserialize_data_t vh;
        bool ok;
        int er = EG(error_reporting);
        ZVAL_NULL(rv);
        PHP_VAR_UNSERIALIZE_INIT(vh);
        /* bad data is reported by the result code, not by notices that
         * classes' unserializers (e.g. ArrayObject's) raise on it */
        EG(error_reporting) = 0;
        ok = php_var_unserialize(rv, &s, (const unsigned char *)p + len,
                                 &vh);
        EG(error_reporting) = er;
        if (ok && s != (const unsigned char *)p + len) /* trailing bytes */
            ok = false;
        if (!ok) /* as PHP's unserialize(): before the var_hash goes */
            zval_ptr_dtor(rv);
        PHP_VAR_UNSERIALIZE_DESTROY(vh);
        if (!ok) {
            ZVAL_UNDEF(rv);
            goto bad;
        }
        break;
    }
    case VT_IGBINARY:
    case VT_MSGPACK: {
        const char *fn = (flags & 0xf) == VT_IGBINARY ? "igbinary_unserialize"
                                                      : "msgpack_unpack";
        zval arg;
        if (!mdcx_have_fn(fn)) {
            if (plain)
                zend_string_efree(plain);
            return mdcx_result(o, MDCX_RES_PAYLOAD_FAILURE,
                               "payload failure: the value needs %s, which "
                               "is not loaded", fn);
        }
        if ((flags & 0xf) == VT_MSGPACK &&
            !mdcx_msgpack_ok((const unsigned char *)p, len))
            goto bad;
        ZVAL_STRINGL(&arg, p, len);
        /* bad data is reported by the result code, not by the
         * serializer's own warnings */
        int er = EG(error_reporting);
        EG(error_reporting) = 0;
        ZVAL_UNDEF(rv);
        bool ok = mdcx_call1(fn, &arg, rv);
        EG(error_reporting) = er;
        zval_ptr_dtor(&arg);
        /* both return null or false on bad data; this extension stores
         * only arrays and objects with them (scalars have their own
         * types), so null or false is bad data */
        if (ok && (Z_TYPE_P(rv) == IS_NULL || Z_TYPE_P(rv) == IS_FALSE))
            ok = false;
        if (!ok) {
            zval_ptr_dtor(rv);
            ZVAL_UNDEF(rv);
            goto bad;
        }
        break;
    }
    default:
        goto bad;
    }
    if (plain)
        zend_string_efree(plain);
    return 0;
bad:
    if (plain)
        zend_string_efree(plain);
    return mdcx_result(o, MDCX_RES_PAYLOAD_FAILURE,
                       "payload failure: cannot decode the stored value "
                       "(flags %u, %zu bytes)", flags, len);
}

/* ---- object ---------------------------------------------------------------- */

static zend_object *mdcx_create(zend_class_entry *ce)
{
    mdcx_obj *o = zend_object_alloc(sizeof(mdcx_obj), ce);
    zend_object_std_init(&o->std, ce);
    object_properties_init(&o->std, ce);
    o->std.handlers = &mdcx_handlers;
    o->serializer = SER_PHP;
    o->compression = true;
    o->compression_type = COMP_ZLIB;
    o->compression_threshold = 2000;
    strcpy(o->msg, "SUCCESS");
    array_init(&o->server_results);
    return &o->std;
}

static void mdcx_free(zend_object *obj)
{
    mdcx_obj *o = mdcx_from_obj(obj);
    if (o->c) {
        if (o->c->persistent)
            o->c->in_use = false;
        else
            mdcx_conn_free(o->c);
        o->c = NULL;
    }
    if (o->persistent_id)
        zend_string_release(o->persistent_id);
    if (o->prefix)
        zend_string_release(o->prefix);
    zval_ptr_dtor(&o->server_results);
    zend_object_std_dtor(obj);
}

#define MDCX_THIS()                                                           \
    mdcx_obj *o = Z_MDCX_P(ZEND_THIS);                                         \
    if (o->c == NULL) {                                                        \
        zend_throw_error(NULL, "Mdcached\\Client is not constructed");         \
        RETURN_THROWS();                                                       \
    }

PHP_METHOD(Mdcached_Client, __construct)
{
    zend_string *pid = NULL;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_STR_OR_NULL(pid)
    ZEND_PARSE_PARAMETERS_END();
    mdcx_obj *o = Z_MDCX_P(ZEND_THIS);
    if (o->c != NULL) {
        zend_throw_error(NULL, "Mdcached\\Client is already constructed");
        RETURN_THROWS();
    }
    if (pid != NULL && ZSTR_LEN(pid) > 0) {
        zend_string *hkey = zend_strpprintf(0, "mdcached:%s", ZSTR_VAL(pid));
        zend_resource *le =
            zend_hash_find_ptr(&EG(persistent_list), hkey);
        if (le != NULL && le->type == le_mdcx_pconn && le->ptr != NULL &&
            !(((mdcx_conn *)le->ptr)->in_use &&
              ((mdcx_conn *)le->ptr)->in_use_req == mdcx_request)) {
            o->c = le->ptr;
            /* checked before reuse: sockets the server closed while
             * the process was idle are closed and reopened on demand */
            mdcx_conn_check(o->c);
        } else if (le == NULL) {
            o->c = mdcx_conn_new(true);
            if (o->c) /* copies the key into a persistent string */
                zend_register_persistent_resource(ZSTR_VAL(hkey),
                                                  ZSTR_LEN(hkey), o->c,
                                                  le_mdcx_pconn);
        } else {
            /* the same id used twice in one request: a plain connection */
            o->c = mdcx_conn_new(false);
            zend_string_release(hkey);
            hkey = NULL;
            pid = NULL;
        }
        if (hkey)
            zend_string_release(hkey);
        if (pid)
            o->persistent_id = zend_string_copy(pid);
    } else {
        o->c = mdcx_conn_new(false);
    }
    if (o->c == NULL) {
        zend_throw_exception(mdcx_exc_ce, "out of memory", MDC_ERR_NOMEM);
        RETURN_THROWS();
    }
    if (o->c->persistent) {
        o->c->in_use = true;
        o->c->in_use_req = mdcx_request;
    }
}

/* "host:port" spec; IPv6 in brackets; a path for a Unix socket */
static zend_string *mdcx_spec(const char *host, size_t hlen, zend_long port)
{
    if (hlen > 0 && (host[0] == '/' || strncmp(host, "unix:", 5) == 0))
        return zend_string_init(host, hlen, 0);
    if (memchr(host, ':', hlen) != NULL && host[0] != '[')
        return zend_strpprintf(0, "[%.*s]:" ZEND_LONG_FMT, (int)hlen, host,
                               port);
    return zend_strpprintf(0, "%.*s:" ZEND_LONG_FMT, (int)hlen, host, port);
}

static bool mdcx_add_server(mdcx_obj *o, const char *host, size_t hlen,
                            zend_long port, zend_long weight)
{
    if (hlen == 0 || memchr(host, '\0', hlen) || port < 0 || port > 65535 ||
        weight < 0 || weight > UINT32_MAX) {
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: bad server host, port or weight");
        return false;
    }
    zend_string *spec = mdcx_spec(host, hlen, port ? port : MDC_DEFAULT_PORT);
    int rc = mdcx_conn_add(o->c, ZSTR_VAL(spec), (uint32_t)weight);
    if (rc != MDC_OK) {
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: cannot add server %s",
                    ZSTR_VAL(spec));
        zend_string_release(spec);
        return false;
    }
    zend_string_release(spec);
    mdcx_result(o, MDC_OK, NULL);
    return true;
}

PHP_METHOD(Mdcached_Client, addServer)
{
    zend_string *host;
    zend_long port = MDC_DEFAULT_PORT, weight = 0;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_STR(host)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(port)
        Z_PARAM_LONG(weight)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    RETURN_BOOL(mdcx_add_server(o, ZSTR_VAL(host), ZSTR_LEN(host), port,
                                weight));
}

PHP_METHOD(Mdcached_Client, addServers)
{
    HashTable *servers;
    zval *e;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_ARRAY_HT(servers)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    ZEND_HASH_FOREACH_VAL(servers, e) {
        ZVAL_DEREF(e);
        zval *h, *p, *w;
        if (Z_TYPE_P(e) != IS_ARRAY ||
            (h = zend_hash_index_find(Z_ARRVAL_P(e), 0)) == NULL ||
            Z_TYPE_P(h) != IS_STRING) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: each server is [host, port, "
                        "weight]");
            RETURN_FALSE;
        }
        p = zend_hash_index_find(Z_ARRVAL_P(e), 1);
        w = zend_hash_index_find(Z_ARRVAL_P(e), 2);
        if (!mdcx_add_server(o, Z_STRVAL_P(h), Z_STRLEN_P(h),
                             p ? zval_get_long(p) : MDC_DEFAULT_PORT,
                             w ? zval_get_long(w) : 0))
            RETURN_FALSE;
    } ZEND_HASH_FOREACH_END();
    RETURN_TRUE;
}

static void mdcx_server_entry(mdcx_conn *c, size_t i, zval *s);

PHP_METHOD(Mdcached_Client, getServerList)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    array_init(return_value);
    for (size_t i = 0; i < o->c->nspecs; i++) {
        zval s;
        mdcx_server_entry(o->c, i, &s);
        add_next_index_zval(return_value, &s);
    }
}

static void mdcx_server_entry(mdcx_conn *c, size_t i, zval *s)
{
    const char *spec = c->specs[i];
    const char *colon = strrchr(spec, ':');
    array_init(s);
    if (spec[0] == '/' || strncmp(spec, "unix:", 5) == 0 || !colon) {
        add_assoc_string(s, "host", spec);
        add_assoc_long(s, "port", 0);
    } else {
        const char *h = spec;
        size_t hl = colon - spec;
        if (h[0] == '[' && hl >= 2) {
            h++;
            hl -= 2;
        }
        add_assoc_stringl(s, "host", h, hl);
        add_assoc_long(s, "port", atol(colon + 1));
    }
    add_assoc_long(s, "weight", c->weights[i]);
}

PHP_METHOD(Mdcached_Client, getServerByKey)
{
    zend_string *key;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_key k;
    if (!mdcx_key_arg(o, key, &k))
        RETURN_FALSE;
    int idx = mdc_pool_index(o->c->pool, k.p, k.len);
    mdcx_key_free(&k);
    if (idx < 0 || (size_t)idx >= o->c->nspecs) {
        mdcx_no_servers(o);
        RETURN_FALSE;
    }
    mdcx_server_entry(o->c, (size_t)idx, return_value);
    mdcx_result(o, MDC_OK, NULL);
}

PHP_METHOD(Mdcached_Client, resetServerList)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    while (mdc_pool_count(o->c->pool) > 0)
        mdc_pool_remove(o->c->pool, 0);
    mdcx_conn_clear(o->c);
    RETURN_TRUE;
}

PHP_METHOD(Mdcached_Client, isPersistent)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    RETURN_BOOL(o->c->persistent);
}

PHP_METHOD(Mdcached_Client, isPristine)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    RETURN_BOOL(o->c->nspecs == 0);
}

static bool mdcx_set_option(mdcx_obj *o, zend_long opt, zval *v)
{
    zend_long l;
    switch (opt) {
    case OPT_EXCEPTIONS:
        o->exceptions = zend_is_true(v);
        break;
    case OPT_PREFIX: {
        zend_string *s = zval_get_string(v);
        if (ZSTR_LEN(s) > 128) {
            zend_string_release(s);
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: prefix longer than 128 bytes");
            return false;
        }
        if (o->prefix)
            zend_string_release(o->prefix);
        o->prefix = ZSTR_LEN(s) ? s : NULL;
        if (!o->prefix)
            zend_string_release(s);
        break;
    }
    case OPT_SERIALIZER:
        l = zval_get_long(v);
        if ((l == SER_IGBINARY && !mdcx_have_fn("igbinary_serialize")) ||
            (l == SER_MSGPACK && !mdcx_have_fn("msgpack_pack")) ||
            (l != SER_PHP && l != SER_IGBINARY && l != SER_MSGPACK)) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: serializer " ZEND_LONG_FMT
                        " unknown or its extension not loaded", l);
            return false;
        }
        o->serializer = l;
        break;
    case OPT_COMPRESSION:
        o->compression = zend_is_true(v);
        break;
    case OPT_COMPRESSION_TYPE:
        l = zval_get_long(v);
        if (l != COMP_ZLIB && l != COMP_ZSTD) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: unknown compression type");
            return false;
        }
        if (mdcx_zbound((int)l, 1) == 0) {
            mdcx_result(o, MDC_NOT_SUPPORTED,
                        l == COMP_ZSTD ? "not supported: built without libzstd"
                                       : "not supported: built without zlib");
            return false;
        }
        o->compression_type = l;
        break;
    case OPT_COMPRESSION_THRESHOLD:
        l = zval_get_long(v);
        if (l < 0) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: negative threshold");
            return false;
        }
        o->compression_threshold = l;
        break;
    case OPT_CONNECT_TIMEOUT:
    case OPT_READ_TIMEOUT:
    case OPT_RETRY_TIMEOUT:
        l = zval_get_long(v);
        if (l < (opt == OPT_RETRY_TIMEOUT ? 0 : 1) || l > INT32_MAX) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: timeout out of range");
            return false;
        }
        if (opt == OPT_CONNECT_TIMEOUT)
            o->c->connect_ms = (int)l;
        else if (opt == OPT_READ_TIMEOUT)
            o->c->io_ms = (int)l;
        else
            o->c->retry_ms = (int)l;
        mdcx_conn_apply(o->c);
        break;
    case OPT_SPOOL_DIR: {
        /* tag deletes and deletes that miss a server are spooled in this
         * directory and replayed (docs/client-c.md); "" or null: off */
        zend_string *s = Z_TYPE_P(v) == IS_NULL ? NULL : zval_get_string(v);
        const char *d = (s != NULL && ZSTR_LEN(s) > 0) ? ZSTR_VAL(s) : NULL;
        int rc = mdc_pool_set_spool_dir(o->c->pool, d);
        if (rc != MDC_OK) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS, "invalid arguments: %s",
                        mdc_pool_errstr(o->c->pool));
            if (s != NULL)
                zend_string_release(s);
            return false;
        }
        if (o->c->spool_dir)
            pefree(o->c->spool_dir, o->c->persistent);
        o->c->spool_dir = d ? pestrdup(d, o->c->persistent) : NULL;
        if (s != NULL)
            zend_string_release(s);
        break;
    }
    case OPT_POOL_BPF: {
        /* "DESC[,NEED[,MS]]" as MDC_POOL_BPF (docs/pool-bpf.md): tag
         * deletes through the programs root loaded for the pool; "" or
         * null: off.  A description that cannot be opened is refused,
         * with libmdcached's reason, and leaves the kernel path off. */
        zend_string *s = Z_TYPE_P(v) == IS_NULL ? NULL : zval_get_string(v);
        const char *spec = (s != NULL && ZSTR_LEN(s) > 0) ? ZSTR_VAL(s)
                                                          : NULL;
        char d[512], extra;
        unsigned need = 0;
        int ms = 0, rc, nf = 0;
        if (spec != NULL && strlen(spec) < sizeof(d))
            nf = sscanf(spec, "%511[^,],%u,%d%c", d, &need, &ms, &extra);
        if (spec != NULL && (nf < 1 || nf > 3)) {
            mdc_pool_set_bpf(o->c->pool, NULL, 0, 0); /* off */
            rc = mdcx_result(o, MDCX_RES_INVALID_ARGS,
                             "invalid arguments: OPT_POOL_BPF is "
                             "DESC[,NEED[,MS]]");
        } else if ((rc = mdc_pool_set_bpf(o->c->pool, spec ? d : NULL, need,
                                        ms)) != MDC_OK)
            rc = mdcx_result(o, MDCX_RES_INVALID_ARGS,
                             "invalid arguments: %s",
                             mdc_pool_errstr(o->c->pool));
        if (o->c->pool_bpf)
            pefree(o->c->pool_bpf, o->c->persistent);
        o->c->pool_bpf = rc == MDC_OK && spec != NULL
                             ? pestrdup(spec, o->c->persistent)
                             : NULL;
        if (s != NULL)
            zend_string_release(s);
        if (rc != MDC_OK)
            return false; /* libmdcached left the kernel path off */
        break;
    }
    default:
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: unknown option " ZEND_LONG_FMT, opt);
        return false;
    }
    mdcx_result(o, MDC_OK, NULL);
    return true;
}

PHP_METHOD(Mdcached_Client, setOption)
{
    zend_long opt;
    zval *v;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_LONG(opt)
        Z_PARAM_ZVAL(v)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    RETURN_BOOL(mdcx_set_option(o, opt, v));
}

PHP_METHOD(Mdcached_Client, setOptions)
{
    HashTable *opts;
    zend_ulong k;
    zend_string *sk;
    zval *v;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_ARRAY_HT(opts)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    ZEND_HASH_FOREACH_KEY_VAL(opts, k, sk, v) {
        if (sk != NULL) {
            mdcx_result(o, MDCX_RES_INVALID_ARGS,
                        "invalid arguments: option keys are integers");
            RETURN_FALSE;
        }
        if (!mdcx_set_option(o, (zend_long)k, v))
            RETURN_FALSE;
    } ZEND_HASH_FOREACH_END();
    RETURN_TRUE;
}

PHP_METHOD(Mdcached_Client, getOption)
{
    zend_long opt;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_LONG(opt)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    switch (opt) {
    case OPT_EXCEPTIONS:
        RETURN_BOOL(o->exceptions);
    case OPT_PREFIX:
        if (o->prefix)
            RETURN_STR_COPY(o->prefix);
        RETURN_EMPTY_STRING();
    case OPT_SERIALIZER:
        RETURN_LONG(o->serializer);
    case OPT_COMPRESSION:
        RETURN_BOOL(o->compression);
    case OPT_COMPRESSION_TYPE:
        RETURN_LONG(o->compression_type);
    case OPT_COMPRESSION_THRESHOLD:
        RETURN_LONG(o->compression_threshold);
    case OPT_CONNECT_TIMEOUT:
        RETURN_LONG(o->c->connect_ms);
    case OPT_READ_TIMEOUT:
        RETURN_LONG(o->c->io_ms);
    case OPT_RETRY_TIMEOUT:
        RETURN_LONG(o->c->retry_ms);
    case OPT_SPOOL_DIR:
        if (o->c->spool_dir == NULL)
            RETURN_NULL();
        RETURN_STRING(o->c->spool_dir);
    case OPT_POOL_BPF:
        if (o->c->pool_bpf == NULL)
            RETURN_NULL();
        RETURN_STRING(o->c->pool_bpf);
    }
    mdcx_result(o, MDCX_RES_INVALID_ARGS,
                "invalid arguments: unknown option " ZEND_LONG_FMT, opt);
    RETURN_FALSE;
}

PHP_METHOD(Mdcached_Client, getResultCode)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    RETURN_LONG(o->rc);
}

PHP_METHOD(Mdcached_Client, getResultMessage)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    RETURN_STRING(o->msg);
}

PHP_METHOD(Mdcached_Client, getServerResults)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    RETURN_COPY(&o->server_results);
}

/* ---- records ---------------------------------------------------------------- */

/* Build the value to return for an item: value or, with GET_EXTENDED, an
 * array of value, cas, flags, tags.  0 or an error (already recorded). */
static int mdcx_item_zval(mdcx_obj *o, struct mdc_item *it, zend_long flags,
                          zval *rv)
{
    zval v;
    if (mdcx_decode(o, it->value, it->vlen, it->flags, &v) != 0)
        return -1;
    if (!(flags & GET_EXTENDED)) {
        ZVAL_COPY_VALUE(rv, &v);
        return 0;
    }
    array_init(rv);
    add_assoc_zval(rv, "value", &v);
    add_assoc_long(rv, "cas", (zend_long)it->cas);
    add_assoc_long(rv, "flags", (zend_long)it->flags);
    zval tags;
    array_init(&tags);
    for (size_t i = 0; i < it->ntags; i++) {
        zval t;
        array_init(&t);
        add_next_index_long(&t, it->tags[i].tkey);
        add_next_index_long(&t, it->tags[i].tval);
        add_next_index_zval(&tags, &t);
    }
    add_assoc_zval(rv, "tags", &tags);
    return 0;
}

static int mdcx_store(mdcx_obj *o, enum mdc_store_mode mode,
                      zend_string *key, zval *value, zend_long ttl,
                      HashTable *tags, uint64_t cas);

PHP_METHOD(Mdcached_Client, get)
{
    zend_string *key;
    zend_fcall_info fci = empty_fcall_info;
    zend_fcall_info_cache fcc = empty_fcall_info_cache;
    zend_long flags = 0;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_STR(key)
        Z_PARAM_OPTIONAL
        Z_PARAM_FUNC_OR_NULL(fci, fcc)
        Z_PARAM_LONG(flags)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    struct mdc_item *it = NULL;
    int rc = mdc_get(h, k.p, k.len, &it);
    mdcx_key_free(&k);
    if (rc == MDC_OK) {
        int r = mdcx_item_zval(o, it, flags, return_value);
        mdc_item_free(it);
        if (r != 0)
            RETURN_FALSE;
        mdcx_result(o, MDC_OK, NULL);
        return;
    }
    if (rc != MDC_NOT_FOUND || !ZEND_FCI_INITIALIZED(fci)) {
        mdcx_result_h(o, h, rc);
        RETURN_FALSE;
    }
    /* read-through: callback(Client $c, string $key, &$value): bool */
    zval params[3], retval, *ref;
    ZVAL_COPY(&params[0], ZEND_THIS);
    ZVAL_STR_COPY(&params[1], key);
    ZVAL_NEW_REF(&params[2], &EG(uninitialized_zval));
    fci.retval = &retval;
    fci.params = params;
    fci.param_count = 3;
    bool stored = false;
    if (zend_call_function(&fci, &fcc) == SUCCESS && !EG(exception)) {
        ref = Z_REFVAL(params[2]);
        if (zend_is_true(&retval)) {
            if (mdcx_store(o, MDC_SET, key, ref, 0, NULL, 0) == MDC_OK ||
                !EG(exception)) {
                stored = true;
                if (flags & GET_EXTENDED) {
                    array_init(return_value);
                    Z_TRY_ADDREF_P(ref);
                    add_assoc_zval(return_value, "value", ref);
                    add_assoc_long(return_value, "cas", 0);
                    add_assoc_long(return_value, "flags", 0);
                } else {
                    ZVAL_COPY(return_value, ref);
                }
            }
        }
        zval_ptr_dtor(&retval);
    }
    zval_ptr_dtor(&params[0]);
    zval_ptr_dtor(&params[1]);
    zval_ptr_dtor(&params[2]);
    if (!stored) {
        if (!EG(exception))
            mdcx_result(o, MDC_NOT_FOUND, "%s", mdc_strerror(MDC_NOT_FOUND));
        RETURN_FALSE;
    }
}

/* leaseGet(key, vivifyTtl, recacheTtl, &state, flags): a get that hands
 * one caller per record the recompute (docs/client-php.md, "Leases").
 * $state gets the LEASE_* bits; an empty vivified record (ours to fill, or
 * another caller's pending) reads as null. */
PHP_METHOD(Mdcached_Client, leaseGet)
{
    zend_string *key;
    zend_long vivify = 0, recache = 0, flags = 0;
    zval *state = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 5)
        Z_PARAM_STR(key)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(vivify)
        Z_PARAM_LONG(recache)
        Z_PARAM_ZVAL(state)
        Z_PARAM_LONG(flags)
    ZEND_PARSE_PARAMETERS_END();
    if (state != NULL)
        ZEND_TRY_ASSIGN_REF_LONG(state, 0);
    if (vivify < 0 || recache < 0) {
        zend_argument_value_error(vivify < 0 ? 2 : 3,
                                  "must be greater than or equal to 0");
        RETURN_THROWS();
    }
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    struct mdc_item *it = NULL;
    int rc = mdc_lease_get(h, k.p, k.len, vivify, recache, &it);
    mdcx_key_free(&k);
    if (rc != MDC_OK) {
        mdcx_result_h(o, h, rc);
        RETURN_FALSE;
    }
    zend_long st = (zend_long)it->state;
    /* a vivified placeholder: no value, the win or a pending win, never
     * stale (a stale "" is a value: it was stored) */
    bool empty = it->vlen == 0 && it->flags == 0 && !(st & MDC_ITEM_STALE) &&
                 (st & (MDC_ITEM_WIN | MDC_ITEM_PENDING));
    int r = 0;
    if (!empty) {
        r = mdcx_item_zval(o, it, flags, return_value);
    } else if (flags & GET_EXTENDED) {
        array_init(return_value);
        add_assoc_null(return_value, "value");
        add_assoc_long(return_value, "cas", (zend_long)it->cas);
        add_assoc_long(return_value, "flags", 0);
        zval tags;
        array_init(&tags);
        zend_hash_str_update(Z_ARRVAL_P(return_value), "tags", 4, &tags);
    } else {
        ZVAL_NULL(return_value);
    }
    mdc_item_free(it);
    if (r != 0)
        RETURN_FALSE;
    if (flags & GET_EXTENDED)
        add_assoc_long(return_value, "state", st);
    if (state != NULL)
        ZEND_TRY_ASSIGN_REF_LONG(state, st);
    mdcx_result(o, MDC_OK, NULL);
}

PHP_METHOD(Mdcached_Client, getMulti)
{
    HashTable *keys;
    zend_long flags = 0;
    zval *e;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_ARRAY_HT(keys)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(flags)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    size_t n = zend_hash_num_elements(keys), i = 0;
    if (n == 0) {
        mdcx_result(o, MDC_OK, NULL);
        RETURN_EMPTY_ARRAY();
    }
    if (mdc_pool_count(o->c->pool) == 0) {
        mdcx_no_servers(o);
        RETURN_FALSE;
    }
    mdcx_key *ks = ecalloc(n, sizeof(mdcx_key));
    const void **kp = emalloc(n * sizeof(void *));
    size_t *kl = emalloc(n * sizeof(size_t));
    struct mdc_item **out = ecalloc(n, sizeof(*out));
    zend_string **uk = ecalloc(n, sizeof(*uk));
    int rc = MDC_OK;
    ZEND_HASH_FOREACH_VAL(keys, e) {
        uk[i] = zval_get_string(e);
        if (mdcx_key_make(o, ZSTR_VAL(uk[i]), ZSTR_LEN(uk[i]), &ks[i]) != 0) {
            mdcx_bad_key(o, ZSTR_LEN(uk[i]));
            rc = MDCX_RES_BAD_KEY;
            i++;
            break;
        }
        kp[i] = ks[i].p;
        kl[i] = ks[i].len;
        i++;
    } ZEND_HASH_FOREACH_END();
    size_t nk = i;
    if (rc == MDC_OK) {
        if (n == 1) {
            /* one key: a plain GET (no quiet GET + NOOP pair) */
            mdc_t *h = mdc_pool_pick(o->c->pool, kp[0], kl[0]);
            rc = mdc_get(h, kp[0], kl[0], &out[0]);
            if (rc == MDC_NOT_FOUND)
                rc = MDC_OK;
            if (rc != MDC_OK)
                mdcx_result_h(o, h, rc);
        } else {
            rc = mdc_pool_mget(o->c->pool, n, kp, kl, out, NULL);
        }
        if (n == 1 && rc != MDC_OK) {
            /* recorded above */
        } else if (rc != MDC_OK && rc != MDC_ERR_PARTIAL) {
            mdcx_result_pool(o, rc);
        } else {
            int partial = rc;
            array_init(return_value);
            for (i = 0; i < n; i++) {
                zval v;
                if (out[i] == NULL)
                    continue;
                if (mdcx_item_zval(o, out[i], flags, &v) != 0) {
                    rc = MDCX_RES_PAYLOAD_FAILURE;
                    continue;
                }
                zend_symtable_update(Z_ARRVAL_P(return_value), uk[i], &v);
            }
            if (rc == MDC_OK || rc == MDC_ERR_PARTIAL)
                mdcx_result_pool(o, partial);
            rc = MDC_OK;
        }
    }
    for (i = 0; i < n; i++)
        mdc_item_free(out[i]);
    for (i = 0; i < nk; i++) {
        mdcx_key_free(&ks[i]);
        zend_string_release(uk[i]);
    }
    efree(ks);
    efree(kp);
    efree(kl);
    efree(out);
    efree(uk);
    if (rc != MDC_OK) {
        if (Z_TYPE_P(return_value) == IS_ARRAY)
            zval_ptr_dtor(return_value);
        RETURN_FALSE;
    }
}

/* Store one record; returns the code (recorded). */
static int mdcx_store(mdcx_obj *o, enum mdc_store_mode mode,
                      zend_string *key, zval *value, zend_long ttl,
                      HashTable *tags, uint64_t cas)
{
    mdcx_key k;
    mdcx_tags t;
    smart_str buf = {0};
    uint32_t flags = 0;
    int rc;
    if (mdcx_key_make(o, ZSTR_VAL(key), ZSTR_LEN(key), &k) != 0)
        return mdcx_bad_key(o, ZSTR_LEN(key));
    mdcx_tags_init(&t);
    if (tags != NULL && (rc = mdcx_tags_parse(o, tags, &t)) != 0)
        goto out;
    if (mode == MDC_APPEND || mode == MDC_PREPEND) {
        /* raw bytes: the record keeps its flags */
        smart_str_append(&buf, Z_STR_P(value));
    } else if ((rc = mdcx_encode(o, value, &buf, &flags)) != 0) {
        goto out;
    }
    mdc_t *h = mdcx_pick(o, &k);
    if (h == NULL) {
        rc = MDC_ERR_NO_SERVERS;
        goto out;
    }
    struct mdc_kv kv = {
        .key = k.p,
        .klen = k.len,
        .value = buf.s ? ZSTR_VAL(buf.s) : "",
        .vlen = buf.s ? ZSTR_LEN(buf.s) : 0,
        .flags = flags,
        .exptime = ttl,
        .cas = cas,
        .tags = t.n ? t.v : NULL,
        .ntags = t.n,
    };
    rc = mdcx_result_h(o, h, mdc_store(h, mode, &kv, NULL));
out:
    smart_str_free(&buf);
    mdcx_tags_free(&t);
    mdcx_key_free(&k);
    return rc;
}

static void mdcx_store_method(INTERNAL_FUNCTION_PARAMETERS,
                              enum mdc_store_mode mode)
{
    zend_string *key;
    zval *value;
    zend_long ttl = 0;
    HashTable *tags = NULL;
    ZEND_PARSE_PARAMETERS_START(2, 4)
        Z_PARAM_STR(key)
        Z_PARAM_ZVAL(value)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
        Z_PARAM_ARRAY_HT(tags)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    RETURN_BOOL(mdcx_store(o, mode, key, value, ttl, tags, 0) == MDC_OK);
}

PHP_METHOD(Mdcached_Client, set)
{
    mdcx_store_method(INTERNAL_FUNCTION_PARAM_PASSTHRU, MDC_SET);
}

PHP_METHOD(Mdcached_Client, add)
{
    mdcx_store_method(INTERNAL_FUNCTION_PARAM_PASSTHRU, MDC_ADD);
}

PHP_METHOD(Mdcached_Client, replace)
{
    mdcx_store_method(INTERNAL_FUNCTION_PARAM_PASSTHRU, MDC_REPLACE);
}

PHP_METHOD(Mdcached_Client, cas)
{
    zval *token, *value;
    zend_string *key;
    zend_long ttl = 0;
    HashTable *tags = NULL;
    ZEND_PARSE_PARAMETERS_START(3, 5)
        Z_PARAM_ZVAL(token)
        Z_PARAM_STR(key)
        Z_PARAM_ZVAL(value)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
        Z_PARAM_ARRAY_HT(tags)
    ZEND_PARSE_PARAMETERS_END();
    if (!mdcx_arg_types(1, token, TY(IS_LONG) | TY(IS_STRING), "string|int"))
        RETURN_THROWS();
    MDCX_THIS();
    uint64_t cas;
    if (Z_TYPE_P(token) == IS_LONG) {
        cas = (uint64_t)Z_LVAL_P(token);
    } else {
        char *end = NULL;
        errno = 0;
        cas = strtoull(Z_STRVAL_P(token), &end, 10);
        if (errno || end == Z_STRVAL_P(token) || *end)
            cas = 0;
    }
    if (cas == 0) {
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: bad CAS token");
        RETURN_FALSE;
    }
    RETURN_BOOL(mdcx_store(o, MDC_CAS, key, value, ttl, tags, cas) == MDC_OK);
}

static void mdcx_pend_method(INTERNAL_FUNCTION_PARAMETERS,
                             enum mdc_store_mode mode)
{
    zend_string *key, *value;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(key)
        Z_PARAM_STR(value)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    zval v;
    ZVAL_STR(&v, value);
    RETURN_BOOL(mdcx_store(o, mode, key, &v, 0, NULL, 0) == MDC_OK);
}

PHP_METHOD(Mdcached_Client, append)
{
    mdcx_pend_method(INTERNAL_FUNCTION_PARAM_PASSTHRU, MDC_APPEND);
}

PHP_METHOD(Mdcached_Client, prepend)
{
    mdcx_pend_method(INTERNAL_FUNCTION_PARAM_PASSTHRU, MDC_PREPEND);
}

PHP_METHOD(Mdcached_Client, setMulti)
{
    HashTable *items, *tags = NULL;
    zend_long ttl = 0;
    zend_ulong ik;
    zend_string *sk;
    zval *v;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_ARRAY_HT(items)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
        Z_PARAM_ARRAY_HT(tags)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    size_t n = zend_hash_num_elements(items), i = 0;
    size_t ns = mdc_pool_count(o->c->pool);
    if (n == 0) {
        mdcx_result(o, MDC_OK, NULL);
        RETURN_TRUE;
    }
    if (ns == 0) {
        mdcx_no_servers(o);
        RETURN_FALSE;
    }
    mdcx_tags t;
    mdcx_tags_init(&t);
    if (tags != NULL && mdcx_tags_parse(o, tags, &t) != 0) {
        mdcx_tags_free(&t);
        RETURN_FALSE;
    }
    mdcx_key *ks = ecalloc(n, sizeof(mdcx_key));
    smart_str *bufs = ecalloc(n, sizeof(smart_str));
    struct mdc_kv *kvs = ecalloc(n, sizeof(struct mdc_kv));
    int *srv = emalloc(n * sizeof(int));
    int rc = MDC_OK;
    ZEND_HASH_FOREACH_KEY_VAL(items, ik, sk, v) {
        zend_string *key = sk ? zend_string_copy(sk) : zend_long_to_str(ik);
        uint32_t flags = 0;
        bool good = mdcx_key_arg(o, key, &ks[i]);
        zend_string_release(key);
        i++;
        if (!good || mdcx_encode(o, v, &bufs[i - 1], &flags) != 0) {
            rc = o->rc;
            break;
        }
        kvs[i - 1] = (struct mdc_kv){
            .key = ks[i - 1].p,
            .klen = ks[i - 1].len,
            .value = bufs[i - 1].s ? ZSTR_VAL(bufs[i - 1].s) : "",
            .vlen = bufs[i - 1].s ? ZSTR_LEN(bufs[i - 1].s) : 0,
            .flags = flags,
            .exptime = ttl,
            .tags = t.n ? t.v : NULL,
            .ntags = t.n,
        };
        srv[i - 1] = mdc_pool_index(o->c->pool, ks[i - 1].p, ks[i - 1].len);
    } ZEND_HASH_FOREACH_END();
    size_t nk = i;
    if (rc == MDC_OK) {
        /* one pipelined batch per server */
        struct mdc_kv *batch = emalloc(n * sizeof(*batch));
        int first = MDC_OK;
        mdc_t *fh = NULL;
        for (size_t s = 0; s < ns; s++) {
            size_t m = 0;
            for (i = 0; i < n; i++)
                if (srv[i] == (int)s)
                    batch[m++] = kvs[i];
            if (m == 0)
                continue;
            mdc_t *h = mdc_pool_server(o->c->pool, s);
            /* one record: a plain SET (no quiet SET + NOOP pair) */
            int r = m == 1 ? mdc_store(h, MDC_SET, &batch[0], NULL)
                           : mdc_mset(h, MDC_SET, m, batch, NULL);
            mdcx_first_fail(&first, &fh, r, h);
        }
        efree(batch);
        rc = mdcx_result_h(o, fh, first);
    }
    for (i = 0; i < nk; i++) {
        mdcx_key_free(&ks[i]);
        smart_str_free(&bufs[i]);
    }
    efree(ks);
    efree(bufs);
    efree(kvs);
    efree(srv);
    mdcx_tags_free(&t);
    RETURN_BOOL(rc == MDC_OK);
}

PHP_METHOD(Mdcached_Client, delete)
{
    zend_string *key;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(key)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    /* through the pool: a delete that misses its server is spooled
     * (OPT_SPOOL_DIR) */
    RETURN_BOOL(mdcx_key_done(o, h, &k,
                              mdc_pool_delete(o->c->pool, k.p, k.len, 0)) ==
                MDC_OK);
}

/* deleteStale(key, ttl): memcached's md I [T]: the record stays readable,
 * stale, and the next leaseGet() of it wins the recompute */
PHP_METHOD(Mdcached_Client, deleteStale)
{
    zend_string *key;
    zend_long ttl = 0;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_STR(key)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();
    if (ttl < 0) {
        zend_argument_value_error(2, "must be greater than or equal to 0");
        RETURN_THROWS();
    }
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    RETURN_BOOL(mdcx_key_done(o, h, &k, mdc_delete_stale(h, k.p, k.len, 0, ttl)) == MDC_OK);
}

PHP_METHOD(Mdcached_Client, deleteMulti)
{
    HashTable *keys;
    zval *e;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_ARRAY_HT(keys)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    int last = MDC_OK;
    array_init(return_value);
    ZEND_HASH_FOREACH_VAL(keys, e) {
        zend_string *key = zval_get_string(e);
        mdcx_key k;
        int rc;
        if (mdcx_key_make(o, ZSTR_VAL(key), ZSTR_LEN(key), &k) != 0) {
            rc = MDCX_RES_BAD_KEY;
        } else {
            mdc_t *h = mdc_pool_pick(o->c->pool, k.p, k.len);
            rc = h ? mdc_delete(h, k.p, k.len, 0) : MDC_ERR_NO_SERVERS;
            mdcx_key_free(&k);
        }
        if (rc == MDC_OK)
            add_assoc_bool_ex(return_value, ZSTR_VAL(key), ZSTR_LEN(key), 1);
        else
            add_assoc_long_ex(return_value, ZSTR_VAL(key), ZSTR_LEN(key), rc);
        if (rc != MDC_OK && last == MDC_OK)
            last = rc;
        zend_string_release(key);
    } ZEND_HASH_FOREACH_END();
    /* a missing key is an outcome, not an exception */
    o->rc = last;
    snprintf(o->msg, sizeof(o->msg), "%s",
             last == MDC_OK ? "SUCCESS" : mdcx_code_text(last));
}

static void mdcx_counter(INTERNAL_FUNCTION_PARAMETERS, bool incr)
{
    zend_string *key;
    zend_long offset = 1, initial = 0, ttl = 0;
    ZEND_PARSE_PARAMETERS_START(1, 4)
        Z_PARAM_STR(key)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(offset)
        Z_PARAM_LONG(initial)
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    bool create = ZEND_NUM_ARGS() >= 3;
    if (offset < 0) {
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: offset must be >= 0");
        RETURN_FALSE;
    }
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    uint64_t v = 0;
    int rc;
    for (int attempt = 0; attempt < 3; attempt++) {
        rc = incr ? mdc_incr(h, k.p, k.len, (uint64_t)offset, &v)
                  : mdc_decr(h, k.p, k.len, (uint64_t)offset, &v);
        if (rc != MDC_NOT_FOUND || !create)
            break;
        /* create with the initial value; a racing creator wins: retry */
        char num[32];
        int nl = snprintf(num, sizeof(num), ZEND_LONG_FMT, initial);
        rc = mdc_add(h, k.p, k.len, num, nl, VT_LONG, ttl, NULL, 0);
        if (rc == MDC_OK) {
            v = (uint64_t)initial;
            break;
        }
        if (rc != MDC_EXISTS)
            break;
    }
    if (mdcx_key_done(o, h, &k, rc) != MDC_OK)
        RETURN_FALSE;
    RETURN_LONG((zend_long)v);
}

PHP_METHOD(Mdcached_Client, increment)
{
    mdcx_counter(INTERNAL_FUNCTION_PARAM_PASSTHRU, true);
}

PHP_METHOD(Mdcached_Client, decrement)
{
    mdcx_counter(INTERNAL_FUNCTION_PARAM_PASSTHRU, false);
}

PHP_METHOD(Mdcached_Client, touch)
{
    zend_string *key;
    zend_long ttl;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(key)
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    RETURN_BOOL(mdcx_key_done(o, h, &k, mdc_touch(h, k.p, k.len, ttl)) == MDC_OK);
}

/* per-server results of a fan-out into server_results */
static void mdcx_server_results(mdcx_obj *o, const int *rcs)
{
    size_t n = mdc_pool_count(o->c->pool);
    zval_ptr_dtor(&o->server_results);
    array_init(&o->server_results);
    for (size_t i = 0; i < n; i++)
        add_assoc_long(&o->server_results,
                       mdc_server_name(mdc_pool_server(o->c->pool, i)),
                       rcs ? rcs[i] : MDC_OK);
}

PHP_METHOD(Mdcached_Client, flush)
{
    zend_long delay = 0;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(delay)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    if (delay != 0) {
        mdcx_result(o, MDC_NOT_SUPPORTED,
                    "delayed flush is not supported by mdcached");
        RETURN_FALSE;
    }
    size_t n = mdc_pool_count(o->c->pool);
    int *rcs = ecalloc(n ? n : 1, sizeof(int));
    int rc = mdc_pool_flush(o->c->pool, rcs);
    mdcx_server_results(o, rcs);
    efree(rcs);
    RETURN_BOOL(mdcx_result_pool(o, rc) == MDC_OK);
}

/* One call per server (getStats(), getVersion()): fn fills the server's
 * entry of rv, an array under the server's name, or leaves it undefined
 * for none, and returns the code.  The first failure and its server come
 * back; no server at all is MDC_ERR_NO_SERVERS (recorded) with *fh NULL
 * and rv untouched. */
typedef int (*mdcx_server_fn)(mdc_t *h, void *arg, zval *entry);
static int mdcx_each_server(mdcx_obj *o, zval *rv, mdcx_server_fn fn,
                            void *arg, mdc_t **fh)
{
    size_t n = mdc_pool_count(o->c->pool);
    int first = MDC_OK;
    *fh = NULL;
    if (n == 0)
        return mdcx_no_servers(o);
    array_init(rv);
    for (size_t i = 0; i < n; i++) {
        mdc_t *h = mdc_pool_server(o->c->pool, i);
        zval entry;
        ZVAL_UNDEF(&entry);
        mdcx_first_fail(&first, fh, fn(h, arg, &entry), h);
        if (!Z_ISUNDEF(entry))
            add_assoc_zval(rv, mdc_server_name(h), &entry);
    }
    return first;
}

/* getStats(): "name value" lines as an array, numbers as ints */
static int mdcx_stats_entry(mdc_t *h, void *type, zval *s)
{
    char *text = NULL;
    int rc = mdc_stats(h, type, &text, NULL);
    if (rc != MDC_OK)
        return rc;
    array_init(s);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(line, ' ');
        if (!sp)
            continue;
        *sp = '\0';
        const char *val = sp + 1;
        zend_long l;
        size_t vl = strlen(val);
        if (vl && is_numeric_string(val, vl, &l, NULL, 0) == IS_LONG)
            add_assoc_long(s, line, l);
        else
            add_assoc_stringl(s, line, val, vl);
    }
    free(text);
    return MDC_OK;
}

PHP_METHOD(Mdcached_Client, getStats)
{
    zend_string *type = NULL;
    ZEND_PARSE_PARAMETERS_START(0, 1)
        Z_PARAM_OPTIONAL
        Z_PARAM_STR_OR_NULL(type)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdc_t *fh;
    int first = mdcx_each_server(o, return_value, mdcx_stats_entry,
                                 type ? ZSTR_VAL(type) : NULL, &fh);
    if (fh == NULL && first != MDC_OK) /* no servers */
        RETURN_FALSE;
    if (first != MDC_OK && zend_hash_num_elements(Z_ARRVAL_P(return_value))
                               == 0) {
        mdcx_result_h(o, fh, first);
        zval_ptr_dtor(return_value);
        RETURN_FALSE;
    }
    if (first != MDC_OK)
        mdcx_result(o, MDC_ERR_PARTIAL, "some servers failed: %s",
                    mdc_errstr(fh));
    else
        mdcx_result(o, MDC_OK, NULL);
}

/* getVersion(): a server that fails reads as "255.255.255" */
static int mdcx_version_entry(mdc_t *h, void *arg, zval *v)
{
    char buf[128];
    int rc = mdc_version(h, buf, sizeof(buf));
    (void)arg;
    ZVAL_STRING(v, rc == MDC_OK ? buf : "255.255.255");
    return rc;
}

PHP_METHOD(Mdcached_Client, getVersion)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    mdc_t *fh;
    int first = mdcx_each_server(o, return_value, mdcx_version_entry, NULL,
                                 &fh);
    if (fh == NULL && first != MDC_OK) /* no servers */
        RETURN_FALSE;
    mdcx_result_h(o, fh, first);
}

/* ---- tags ------------------------------------------------------------------ */

/* getByTag()'s answer: the records by user key */
static void mdcx_got_by_tag(mdcx_obj *o, int rc, struct mdc_itemset *set,
                            zval *return_value)
{
    if (rc != MDC_OK && rc != MDC_TRUNCATED && rc != MDC_ERR_PARTIAL) {
        mdcx_result_pool(o, rc);
        mdc_itemset_free(set);
        RETURN_FALSE;
    }
    array_init(return_value);
    int drc = MDC_OK;
    for (size_t i = 0; i < set->count; i++) {
        struct mdc_item *it = set->items[i];
        zval v;
        if (mdcx_decode(o, it->value, it->vlen, it->flags, &v) != 0) {
            drc = MDCX_RES_PAYLOAD_FAILURE;
            continue;
        }
        zend_string *uk = mdcx_user_key(o, it->key, it->klen);
        zend_symtable_update(Z_ARRVAL_P(return_value), uk, &v);
        zend_string_release(uk);
    }
    mdc_itemset_free(set);
    if (drc == MDC_OK)
        mdcx_result_pool(o, rc);
}

/* deleteByTag()'s answer: the count */
static void mdcx_deleted_by_tag(mdcx_obj *o, int rc, uint64_t deleted,
                                zval *return_value)
{
    if (rc != MDC_OK && rc != MDC_ERR_PARTIAL) {
        mdcx_result_pool(o, rc);
        RETURN_FALSE;
    }
    /* partial: the count of the servers that answered; the code says
     * RES_SOME_ERRORS and getServerResults() which server failed */
    mdcx_result_pool(o, rc);
    if (EG(exception))
        RETURN_THROWS();
    RETURN_LONG((zend_long)deleted);
}

/* getByTag(tag, tvals), deleteByTag(tag, tvals) and
 * deleteByTagStale(tag, tvals, ttl): one argument parser and selector,
 * one fan-out over the pool (each server's code in getServerResults());
 * stale marks instead of deleting. */
enum { TAG_GET, TAG_DEL, TAG_DEL_STALE };

static void mdcx_by_tag(INTERNAL_FUNCTION_PARAMETERS, int op)
{
    zval *tag, *tvals = NULL;
    zend_long ttl = 0;
    ZEND_PARSE_PARAMETERS_START(1, op == TAG_DEL_STALE ? 3 : 2)
        Z_PARAM_ZVAL(tag)
        Z_PARAM_OPTIONAL
        Z_PARAM_ZVAL_OR_NULL(tvals)
        Z_PARAM_LONG(ttl)
    ZEND_PARSE_PARAMETERS_END();
    if (!mdcx_arg_types(1, tag, TY(IS_LONG) | TY(IS_STRING) | TY(IS_ARRAY),
                        "array|string|int") ||
        !mdcx_arg_types(2, tvals, TY(IS_LONG) | TY(IS_ARRAY) | TY(IS_NULL),
                        "array|int|null"))
        RETURN_THROWS();
    if (ttl < 0) {
        zend_argument_value_error(3, "must be greater than or equal to 0");
        RETURN_THROWS();
    }
    MDCX_THIS();
    mdcx_tags t;
    int32_t tkey;
    mdcx_tags_init(&t);
    if (mdcx_selector(o, tag, tvals, &tkey, &t) != 0) {
        mdcx_tags_free(&t);
        RETURN_FALSE;
    }
    int32_t *tv = mdcx_tvals(&t);
    mdc_pool_t *pool = o->c->pool;
    size_t n = mdc_pool_count(pool);
    int *rcs = ecalloc(n ? n : 1, sizeof(int));
    struct mdc_itemset set = {0};
    uint64_t deleted = 0;
    int rc = MDC_ERR_NO_SERVERS;
    if (n && op == TAG_GET)
        rc = mdc_pool_get_by_tag(pool, tkey, tv, t.n, &set, rcs);
    else if (n && op == TAG_DEL_STALE)
        rc = mdc_pool_del_by_tag_stale(pool, tkey, tv, t.n, ttl, &deleted,
                                       rcs);
    else if (n)
        rc = mdc_pool_del_by_tag(pool, tkey, tv, t.n, &deleted, rcs);
    mdcx_server_results(o, rcs);
    efree(rcs);
    efree(tv);
    mdcx_tags_free(&t);
    if (op == TAG_GET)
        mdcx_got_by_tag(o, rc, &set, return_value);
    else
        mdcx_deleted_by_tag(o, rc, deleted, return_value);
}

PHP_METHOD(Mdcached_Client, getByTag)
{
    mdcx_by_tag(INTERNAL_FUNCTION_PARAM_PASSTHRU, TAG_GET);
}

PHP_METHOD(Mdcached_Client, deleteByTag)
{
    mdcx_by_tag(INTERNAL_FUNCTION_PARAM_PASSTHRU, TAG_DEL);
}

PHP_METHOD(Mdcached_Client, deleteByTagStale)
{
    mdcx_by_tag(INTERNAL_FUNCTION_PARAM_PASSTHRU, TAG_DEL_STALE);
}

/* the stack's tag: string tag, or int tkey with tval */
static int mdcx_stack_tag(mdcx_obj *o, zval *tag, zval *tval,
                          struct mdc_tag *out)
{
    mdcx_tags t;
    int32_t tkey;
    mdcx_tags_init(&t);
    if (Z_TYPE_P(tag) == IS_LONG && tval != NULL && Z_TYPE_P(tval) == IS_ARRAY)
        return mdcx_result(o, MDCX_RES_BAD_TAG, "bad tag: one tag value");
    int rc = mdcx_selector(o, tag, tval, &tkey, &t);
    if (rc == 0) {
        out->tkey = tkey;
        out->tval = t.v[0].tval;
    }
    mdcx_tags_free(&t);
    return rc;
}

/* tagPush()'s and tagPop()'s tag and tag value (argument tval_num) */
static bool mdcx_stack_arg_types(zval *tag, uint32_t tval_num, zval *tval)
{
    return mdcx_arg_types(1, tag, TY(IS_LONG) | TY(IS_STRING), "string|int") &&
           mdcx_arg_types(tval_num, tval, TY(IS_LONG) | TY(IS_NULL), "?int");
}

/* the tag of a stack and its server, the one the key "\0tstack:tkey:tval"
 * maps to; NULL (recorded) on a bad tag or no server */
static mdc_t *mdcx_stack_server(mdcx_obj *o, zval *tag, zval *tval,
                                struct mdc_tag *tg)
{
    if (mdcx_stack_tag(o, tag, tval, tg) != 0)
        return NULL;
    char k[48];
    int kl = snprintf(k + 1, sizeof(k) - 1, "tstack:%d:%d", tg->tkey,
                      tg->tval) + 1;
    k[0] = '\0';
    mdc_t *h = mdc_pool_pick(o->c->pool, k, (size_t)kl);
    if (h == NULL)
        mdcx_no_servers(o);
    return h;
}

PHP_METHOD(Mdcached_Client, tagPush)
{
    zval *tag, *value, *tval = NULL;
    zend_long ttl = 0;
    ZEND_PARSE_PARAMETERS_START(2, 4)
        Z_PARAM_ZVAL(tag)
        Z_PARAM_ZVAL(value)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(ttl)
        Z_PARAM_ZVAL_OR_NULL(tval)
    ZEND_PARSE_PARAMETERS_END();
    if (!mdcx_stack_arg_types(tag, 4, tval))
        RETURN_THROWS();
    MDCX_THIS();
    struct mdc_tag tg;
    mdc_t *h = mdcx_stack_server(o, tag, tval, &tg);
    if (h == NULL)
        RETURN_FALSE;
    smart_str buf = {0};
    uint32_t flags;
    if (mdcx_encode(o, value, &buf, &flags) != 0) {
        smart_str_free(&buf);
        RETURN_FALSE;
    }
    char *key = NULL;
    size_t klen = 0;
    int rc = mdc_tstack_push(h, tg, buf.s ? ZSTR_VAL(buf.s) : "",
                             buf.s ? ZSTR_LEN(buf.s) : 0, flags, ttl, &key,
                             &klen, NULL);
    smart_str_free(&buf);
    if (mdcx_result_h(o, h, rc) != MDC_OK) {
        free(key);
        RETURN_FALSE;
    }
    RETVAL_STRINGL(key, klen);
    free(key);
}

PHP_METHOD(Mdcached_Client, tagPop)
{
    zval *tag, *tval = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 2)
        Z_PARAM_ZVAL(tag)
        Z_PARAM_OPTIONAL
        Z_PARAM_ZVAL_OR_NULL(tval)
    ZEND_PARSE_PARAMETERS_END();
    if (!mdcx_stack_arg_types(tag, 2, tval))
        RETURN_THROWS();
    MDCX_THIS();
    struct mdc_tag tg;
    mdc_t *h = mdcx_stack_server(o, tag, tval, &tg);
    if (h == NULL)
        RETURN_FALSE;
    struct mdc_item *it = NULL;
    int rc = mdc_tstack_pop(h, tg, &it);
    if (mdcx_result_h(o, h, rc) != MDC_OK)
        RETURN_FALSE;
    int r = mdcx_decode(o, it->value, it->vlen, it->flags, return_value);
    mdc_item_free(it);
    if (r != 0)
        RETURN_FALSE;
}

/* atomic operations on a counter record */
enum { AT_CMPSET, AT_FETCHADD, AT_READCLEAR };

static void mdcx_atomic(INTERNAL_FUNCTION_PARAMETERS, int op)
{
    zend_string *key;
    zend_long a = 0, b = 0;
    ZEND_PARSE_PARAMETERS_START(1, 3)
        Z_PARAM_STR(key)
        Z_PARAM_OPTIONAL
        Z_PARAM_LONG(a)
        Z_PARAM_LONG(b)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_key k;
    mdc_t *h = mdcx_key_server(o, key, &k);
    if (h == NULL)
        RETURN_FALSE;
    uint64_t r = 0;
    int rc;
    if (op == AT_CMPSET)
        rc = mdc_atomic_cmpset(h, k.p, k.len, (uint64_t)a, (uint64_t)b, &r);
    else if (op == AT_FETCHADD)
        rc = mdc_atomic_fetch_add(h, k.p, k.len, (uint64_t)a, &r);
    else
        rc = mdc_atomic_read_clear(h, k.p, k.len, &r);
    mdcx_key_done(o, h, &k, rc);
    if (op == AT_CMPSET)
        RETURN_BOOL(rc == MDC_OK);
    if (rc != MDC_OK)
        RETURN_FALSE;
    RETURN_LONG((zend_long)r);
}

PHP_METHOD(Mdcached_Client, cmpSet)
{
    mdcx_atomic(INTERNAL_FUNCTION_PARAM_PASSTHRU, AT_CMPSET);
}

PHP_METHOD(Mdcached_Client, fetchAdd)
{
    mdcx_atomic(INTERNAL_FUNCTION_PARAM_PASSTHRU, AT_FETCHADD);
}

PHP_METHOD(Mdcached_Client, readAndClear)
{
    mdcx_atomic(INTERNAL_FUNCTION_PARAM_PASSTHRU, AT_READCLEAR);
}

PHP_METHOD(Mdcached_Client, quit)
{
    ZEND_PARSE_PARAMETERS_NONE();
    MDCX_THIS();
    size_t n = mdc_pool_count(o->c->pool);
    for (size_t i = 0; i < n; i++)
        mdc_close(mdc_pool_server(o->c->pool, i));
    mdcx_result(o, MDC_OK, NULL);
    RETURN_TRUE;
}

/* setSaslAuthData(): php-memcached's name for credentials; here they go
 * in the native AUTH request (mdc_set_auth(), docs/security.md) on every
 * connection, present servers and those added later.  The same
 * credentials again (a persistent connection's next request) change
 * nothing. */
PHP_METHOD(Mdcached_Client, setSaslAuthData)
{
    zend_string *user, *pass;
    ZEND_PARSE_PARAMETERS_START(2, 2)
        Z_PARAM_STR(user)
        Z_PARAM_STR(pass)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_conn *c = o->c;
    if (ZSTR_LEN(user) == 0 || ZSTR_LEN(user) > MDC_MAX_KEY ||
        memchr(ZSTR_VAL(user), '\0', ZSTR_LEN(user)) ||
        memchr(ZSTR_VAL(pass), '\0', ZSTR_LEN(pass))) {
        mdcx_result(o, MDCX_RES_INVALID_ARGS,
                    "invalid arguments: the user name must be 1-%u bytes, "
                    "and neither may hold a NUL byte",
                    MDC_MAX_KEY);
        RETURN_FALSE;
    }
    if (c->auth_user != NULL && strcmp(c->auth_user, ZSTR_VAL(user)) == 0 &&
        strcmp(c->auth_pass, ZSTR_VAL(pass)) == 0) {
        mdcx_result(o, MDC_OK, NULL);
        RETURN_TRUE;
    }
    int rc = mdc_pool_set_auth(c->pool, ZSTR_VAL(user), ZSTR_VAL(pass));
    if (rc != MDC_OK) {
        mdcx_result_pool(o, rc);
        RETURN_FALSE;
    }
    if (c->auth_user)
        pefree(c->auth_user, c->persistent);
    if (c->auth_pass)
        pefree(c->auth_pass, c->persistent);
    c->auth_user = pestrdup(ZSTR_VAL(user), c->persistent);
    c->auth_pass = pestrdup(ZSTR_VAL(pass), c->persistent);
    mdcx_result(o, MDC_OK, NULL);
    RETURN_TRUE;
}

/* setTls(['ca_file' => ..., 'ca_path' => ..., 'cert_file' => ...,
 * 'key_file' => ..., 'server_name' => ..., 'insecure' => bool]) or
 * setTls(null): mdc_pool_set_tls() for every server, present and future.
 * Options equal to the connection's (a persistent connection's next
 * request) change nothing, so its open connections stay open. */
PHP_METHOD(Mdcached_Client, setTls)
{
    HashTable *opts = NULL;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_ARRAY_HT_OR_NULL(opts)
    ZEND_PARSE_PARAMETERS_END();
    MDCX_THIS();
    mdcx_conn *c = o->c;
    static const char *const names[] = {"ca_file", "ca_path", "cert_file",
                                        "key_file", "server_name"};
    const char *vals[5] = {NULL, NULL, NULL, NULL, NULL};
    bool insecure = false;
    zend_string *k;
    zval *v;

    if (opts != NULL) {
        ZEND_HASH_FOREACH_STR_KEY_VAL(opts, k, v) {
            size_t i;
            if (k == NULL) {
                mdcx_result(o, MDCX_RES_INVALID_ARGS,
                            "invalid arguments: setTls() options are named");
                RETURN_FALSE;
            }
            if (zend_string_equals_literal(k, "insecure")) {
                insecure = zend_is_true(v);
                continue;
            }
            for (i = 0; i < 5; i++)
                if (zend_string_equals_cstr(k, names[i], strlen(names[i])))
                    break;
            if (i == 5) {
                mdcx_result(o, MDCX_RES_INVALID_ARGS,
                            "invalid arguments: unknown setTls() option "
                            "'%s'",
                            ZSTR_VAL(k));
                RETURN_FALSE;
            }
            if (Z_TYPE_P(v) == IS_NULL)
                continue;
            if (Z_TYPE_P(v) != IS_STRING || Z_STRLEN_P(v) == 0 ||
                memchr(Z_STRVAL_P(v), '\0', Z_STRLEN_P(v))) {
                mdcx_result(o, MDCX_RES_INVALID_ARGS,
                            "invalid arguments: setTls() option '%s' wants "
                            "a non-empty string",
                            names[i]);
                RETURN_FALSE;
            }
            vals[i] = Z_STRVAL_P(v);
        } ZEND_HASH_FOREACH_END();
    }
    zend_string *key = NULL;
    if (opts != NULL) {
        key = zend_strpprintf(0, "%d", insecure ? 1 : 0);
        for (size_t i = 0; i < 5; i++) {
            zend_string *nk = zend_strpprintf(
                0, "%s|%zu:%s", ZSTR_VAL(key),
                vals[i] ? strlen(vals[i]) : (size_t)0, vals[i] ? vals[i] : "");
            zend_string_release(key);
            key = nk;
        }
    }
    if ((key == NULL && c->tls_key == NULL) ||
        (key != NULL && c->tls_key != NULL &&
         strcmp(ZSTR_VAL(key), c->tls_key) == 0)) {
        if (key)
            zend_string_release(key);
        mdcx_result(o, MDC_OK, NULL);
        RETURN_TRUE;
    }
    struct mdc_tls_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.ca_file = vals[0];
    cfg.ca_path = vals[1];
    cfg.cert_file = vals[2];
    cfg.key_file = vals[3];
    cfg.server_name = vals[4];
    cfg.flags = insecure ? MDC_TLS_INSECURE : 0;
    int rc = mdc_pool_set_tls(c->pool, opts != NULL ? &cfg : NULL);
    if (rc != MDC_OK) {
        if (key)
            zend_string_release(key);
        mdcx_result_pool(o, rc);
        RETURN_FALSE;
    }
    if (c->tls_key)
        pefree(c->tls_key, c->persistent);
    c->tls_key = key ? pestrdup(ZSTR_VAL(key), c->persistent) : NULL;
    if (key)
        zend_string_release(key);
    mdcx_result(o, MDC_OK, NULL);
    RETURN_TRUE;
}

PHP_METHOD(Mdcached_Client, tagOf)
{
    zend_string *tag;
    ZEND_PARSE_PARAMETERS_START(1, 1)
        Z_PARAM_STR(tag)
    ZEND_PARSE_PARAMETERS_END();
    array_init(return_value);
    add_next_index_long(return_value, MDCX_STRING_TAG_KEY);
    add_next_index_long(return_value,
                        mdcx_string_tval(ZSTR_VAL(tag), ZSTR_LEN(tag)));
}

/* ---- module ---------------------------------------------------------------- */

static void mdcx_const(const char *name, zend_long v)
{
    zend_declare_class_constant_long(mdcx_ce, name, strlen(name), v);
}

PHP_MINIT_FUNCTION(mdcached)
{
    REGISTER_INI_ENTRIES();
    mdcx_ce = register_class_Mdcached_Client();
    mdcx_ce->create_object = mdcx_create;
    memcpy(&mdcx_handlers, zend_get_std_object_handlers(),
           sizeof(mdcx_handlers));
    mdcx_handlers.offset = XtOffsetOf(mdcx_obj, std);
    mdcx_handlers.free_obj = mdcx_free;
    mdcx_handlers.clone_obj = NULL;
    mdcx_exc_ce = register_class_Mdcached_Exception(spl_ce_RuntimeException);
    le_mdcx_pconn = zend_register_list_destructors_ex(
        NULL, mdcx_pconn_dtor, "mdcached persistent connection",
        module_number);

    mdcx_const("OPT_EXCEPTIONS", OPT_EXCEPTIONS);
    mdcx_const("OPT_PREFIX", OPT_PREFIX);
    mdcx_const("OPT_SERIALIZER", OPT_SERIALIZER);
    mdcx_const("OPT_COMPRESSION", OPT_COMPRESSION);
    mdcx_const("OPT_COMPRESSION_TYPE", OPT_COMPRESSION_TYPE);
    mdcx_const("OPT_COMPRESSION_THRESHOLD", OPT_COMPRESSION_THRESHOLD);
    mdcx_const("OPT_CONNECT_TIMEOUT", OPT_CONNECT_TIMEOUT);
    mdcx_const("OPT_READ_TIMEOUT", OPT_READ_TIMEOUT);
    mdcx_const("OPT_RETRY_TIMEOUT", OPT_RETRY_TIMEOUT);
    mdcx_const("OPT_SPOOL_DIR", OPT_SPOOL_DIR);
    mdcx_const("OPT_POOL_BPF", OPT_POOL_BPF);
    mdcx_const("SERIALIZER_PHP", SER_PHP);
    mdcx_const("SERIALIZER_IGBINARY", SER_IGBINARY);
    mdcx_const("SERIALIZER_MSGPACK", SER_MSGPACK);
    mdcx_const("COMPRESSION_ZLIB", COMP_ZLIB);
    mdcx_const("COMPRESSION_ZSTD", COMP_ZSTD);
    mdcx_const("GET_EXTENDED", GET_EXTENDED);
    mdcx_const("LEASE_WIN", MDC_ITEM_WIN);
    mdcx_const("LEASE_STALE", MDC_ITEM_STALE);
    mdcx_const("LEASE_PENDING", MDC_ITEM_PENDING);
    mdcx_const("STRING_TAG_KEY", MDCX_STRING_TAG_KEY);

    mdcx_const("RES_SUCCESS", MDC_OK);
    mdcx_const("RES_NOTFOUND", MDC_NOT_FOUND);
    mdcx_const("RES_DATA_EXISTS", MDC_EXISTS);
    mdcx_const("RES_NOTSTORED", MDC_NOT_STORED);
    mdcx_const("RES_E2BIG", MDC_TOO_LARGE);
    mdcx_const("RES_KEY_INVALID", MDC_KEY_INVALID);
    mdcx_const("RES_SERVER_OUT_OF_MEMORY", MDC_NO_MEMORY);
    mdcx_const("RES_TOO_MANY_TAGS", MDC_TOO_MANY_TAGS);
    mdcx_const("RES_NOT_NUMBER", MDC_NOT_NUMBER);
    mdcx_const("RES_TRUNCATED", MDC_TRUNCATED);
    mdcx_const("RES_SERVER_INVALID", MDC_INVALID);
    mdcx_const("RES_SERVER_ERROR", MDC_SERVER_ERROR);
    mdcx_const("RES_NOT_SUPPORTED", MDC_NOT_SUPPORTED);
    mdcx_const("RES_CLIENT_ERROR", MDC_ERR_ARG);
    mdcx_const("RES_CLIENT_OUT_OF_MEMORY", MDC_ERR_NOMEM);
    mdcx_const("RES_CONNECTION_FAILURE", MDC_ERR_CONNECT);
    mdcx_const("RES_TIMEOUT", MDC_ERR_TIMEOUT);
    mdcx_const("RES_CONNECTION_CLOSED", MDC_ERR_IO);
    mdcx_const("RES_PROTOCOL_ERROR", MDC_ERR_PROTOCOL);
    mdcx_const("RES_SERVER_MARKED_DEAD", MDC_ERR_DOWN);
    mdcx_const("RES_SOME_ERRORS", MDC_ERR_PARTIAL);
    mdcx_const("RES_NO_SERVERS", MDC_ERR_NO_SERVERS);
    mdcx_const("RES_AUTH_FAILURE", MDC_AUTH_FAILED);
    mdcx_const("RES_AUTH_REQUIRED", MDC_AUTH_REQUIRED);
    mdcx_const("RES_TLS_FAILURE", MDC_ERR_TLS);
    mdcx_const("RES_PAYLOAD_FAILURE", MDCX_RES_PAYLOAD_FAILURE);
    mdcx_const("RES_BAD_TAG", MDCX_RES_BAD_TAG);
    mdcx_const("RES_BAD_KEY_PROVIDED", MDCX_RES_BAD_KEY);
    mdcx_const("RES_INVALID_ARGUMENTS", MDCX_RES_INVALID_ARGS);

    return mdcx_session_minit();
}

PHP_MINFO_FUNCTION(mdcached)
{
    php_info_print_table_start();
    php_info_print_table_header(2, "mdcached support", "enabled");
    php_info_print_table_row(2, "Version", PHP_MDCACHED_VERSION);
    php_info_print_table_row(2, "libmdcached", mdc_lib_version());
    php_info_print_table_row(2, "Session handler", "mdcached");
    php_info_print_table_end();
    DISPLAY_INI_ENTRIES();
}

PHP_RINIT_FUNCTION(mdcached)
{
#if defined(ZTS) && defined(COMPILE_DL_MDCACHED)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    mdcx_request++;
    return SUCCESS;
}

PHP_MSHUTDOWN_FUNCTION(mdcached)
{
    mdcx_session_mshutdown();
    UNREGISTER_INI_ENTRIES();
    return SUCCESS;
}

static const zend_module_dep mdcached_deps[] = {
    ZEND_MOD_REQUIRED("session")
    ZEND_MOD_OPTIONAL("igbinary")
    ZEND_MOD_OPTIONAL("msgpack")
    ZEND_MOD_END
};

zend_module_entry mdcached_module_entry = {
    STANDARD_MODULE_HEADER_EX,
    NULL,
    mdcached_deps,
    "mdcached",
    NULL,
    PHP_MINIT(mdcached),
    PHP_MSHUTDOWN(mdcached),
    PHP_RINIT(mdcached),
    NULL,
    PHP_MINFO(mdcached),
    PHP_MDCACHED_VERSION,
    PHP_MODULE_GLOBALS(mdcached),
    PHP_GINIT(mdcached),
    NULL,
    NULL,
    STANDARD_MODULE_PROPERTIES_EX
};

#ifdef COMPILE_DL_MDCACHED
ZEND_GET_MODULE(mdcached)
#endif
