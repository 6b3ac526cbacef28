/*
 * mdcached_session.c - the "mdcached" session save handler:
 *
 *   session.save_handler = mdcached
 *   session.save_path = "127.0.0.1:11311[,host2:port2...]"
 *
 * The session record is "<mdcached.sess_prefix><sid>", stored with
 * session.gc_maxlifetime as its expiry.  With mdcached.sess_locking (the
 * default) the session is locked the way php-memcached does it: read()
 * adds the record "lock.<prefix><sid>" (an add succeeds for one request
 * only) and, while another request holds it, waits
 * mdcached.sess_lock_wait_min ms, doubling up to sess_lock_wait_max, at most
 * sess_lock_retries times; then read() fails.  The lock expires by itself
 * after sess_lock_expire seconds (0: max_execution_time, or 30), so a
 * crashed request cannot hold it forever.  write(), destroy() and close()
 * release it - close() runs on every exit path of a request, errors and
 * exit() included - and a release deletes the lock only if it is still the
 * version this request added (CAS), never another request's lock.
 *
 * The connection is per process (persistent), checked before reuse, and
 * recreated when save_path changes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <php.h>
#include <ext/session/php_session.h>

#include <time.h>

#include "php_mdcached.h"

typedef struct {
    mdcx_conn *c;
    char *lock_key; /* emalloc'ed while the lock is held */
    size_t lock_klen;
    uint64_t lock_cas;
} mdcx_sess;

/* one per process: survives requests */
static mdcx_conn *sess_conn;
static char *sess_conn_path;

static mdc_t *sess_pick(mdcx_sess *s, const char *k, size_t kl)
{
    return mdc_pool_pick(s->c->pool, k, kl);
}

static zend_string *sess_key(const zend_string *sid)
{
    return zend_strpprintf(0, "%s%s", MDCX_G(sess_prefix), ZSTR_VAL(sid));
}

static void sess_unlock(mdcx_sess *s)
{
    if (s->lock_key == NULL)
        return;
    mdc_t *h = sess_pick(s, s->lock_key, s->lock_klen);
    if (h)
        mdc_delete(h, s->lock_key, s->lock_klen, s->lock_cas);
    efree(s->lock_key);
    s->lock_key = NULL;
}

static int sess_lock(mdcx_sess *s, zend_string *key)
{
    zend_long expire = MDCX_G(lock_expire);
    if (expire <= 0) {
        expire = INI_INT("max_execution_time");
        if (expire <= 0)
            expire = 30;
    }
    char *lk = emalloc(ZSTR_LEN(key) + 6);
    memcpy(lk, "lock.", 5);
    memcpy(lk + 5, ZSTR_VAL(key), ZSTR_LEN(key) + 1);
    size_t lkl = ZSTR_LEN(key) + 5;
    mdc_t *h = sess_pick(s, lk, lkl);
    zend_long wait = MDCX_G(lock_wait_min) > 0 ? MDCX_G(lock_wait_min) : 1;
    zend_long retries = MDCX_G(lock_retries) > 0 ? MDCX_G(lock_retries) : 1;
    char val[64];
    int vl = snprintf(val, sizeof(val), "%ld", (long)getpid());
    for (zend_long i = 0; h != NULL && i < retries; i++) {
        uint64_t cas = 0;
        struct mdc_kv kv = {.key = lk, .klen = lkl, .value = val,
                            .vlen = (size_t)vl, .exptime = expire};
        int rc = mdc_store(h, MDC_ADD, &kv, &cas);
        if (rc == MDC_OK) {
            s->lock_key = lk;
            s->lock_klen = lkl;
            s->lock_cas = cas;
            return SUCCESS;
        }
        if (rc != MDC_EXISTS) {
            php_error_docref(NULL, E_WARNING,
                             "mdcached session: cannot lock: %s",
                             mdc_errstr(h));
            break;
        }
        struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        wait *= 2;
        if (wait > MDCX_G(lock_wait_max))
            wait = MDCX_G(lock_wait_max) > 0 ? MDCX_G(lock_wait_max) : 1;
    }
    if (h != NULL && s->lock_key == NULL)
        php_error_docref(NULL, E_WARNING,
                         "mdcached session: lock of %s not acquired "
                         "(held by another request)", ZSTR_VAL(key));
    efree(lk);
    return FAILURE;
}

PS_OPEN_FUNC(mdcached)
{
    if (save_path == NULL || *save_path == '\0') {
        php_error_docref(NULL, E_WARNING,
                         "mdcached session: session.save_path is empty");
        PS_SET_MOD_DATA(NULL);
        return FAILURE;
    }
    if (sess_conn != NULL && strcmp(sess_conn_path, save_path) == 0) {
        mdcx_conn_check(sess_conn);
    } else {
        if (sess_conn) {
            mdcx_conn_free(sess_conn);
            free(sess_conn_path);
            sess_conn = NULL;
        }
        sess_conn = mdcx_conn_from_list(save_path, true);
        if (sess_conn == NULL) {
            php_error_docref(NULL, E_WARNING,
                             "mdcached session: bad session.save_path "
                             "\"%s\"", save_path);
            PS_SET_MOD_DATA(NULL);
            return FAILURE;
        }
        sess_conn_path = strdup(save_path);
    }
    mdcx_sess *s = ecalloc(1, sizeof(*s));
    s->c = sess_conn;
    PS_SET_MOD_DATA(s);
    return SUCCESS;
}

PS_CLOSE_FUNC(mdcached)
{
    mdcx_sess *s = PS_GET_MOD_DATA();
    if (s) {
        sess_unlock(s);
        efree(s);
        PS_SET_MOD_DATA(NULL);
    }
    return SUCCESS;
}

PS_READ_FUNC(mdcached)
{
    mdcx_sess *s = PS_GET_MOD_DATA();
    if (s == NULL)
        return FAILURE;
    zend_string *k = sess_key(key);
    if (MDCX_G(sess_locking) && s->lock_key == NULL &&
        sess_lock(s, k) != SUCCESS) {
        zend_string_release(k);
        return FAILURE;
    }
    mdc_t *h = sess_pick(s, ZSTR_VAL(k), ZSTR_LEN(k));
    struct mdc_item *it = NULL;
    int rc = h ? mdc_get(h, ZSTR_VAL(k), ZSTR_LEN(k), &it) : MDC_ERR_NO_SERVERS;
    zend_string_release(k);
    if (rc == MDC_OK) {
        *val = zend_string_init(it->value, it->vlen, 0);
        mdc_item_free(it);
        return SUCCESS;
    }
    if (rc == MDC_NOT_FOUND) {
        *val = ZSTR_EMPTY_ALLOC();
        return SUCCESS;
    }
    php_error_docref(NULL, E_WARNING, "mdcached session: read failed: %s",
                     h ? mdc_errstr(h) : "no servers");
    return FAILURE;
}

PS_WRITE_FUNC(mdcached)
{
    mdcx_sess *s = PS_GET_MOD_DATA();
    if (s == NULL)
        return FAILURE;
    zend_string *k = sess_key(key);
    mdc_t *h = sess_pick(s, ZSTR_VAL(k), ZSTR_LEN(k));
    int rc = h ? mdc_set(h, ZSTR_VAL(k), ZSTR_LEN(k), ZSTR_VAL(val),
                         ZSTR_LEN(val), 0, (int64_t)maxlifetime, NULL, 0)
               : MDC_ERR_NO_SERVERS;
    zend_string_release(k);
    if (rc != MDC_OK) {
        php_error_docref(NULL, E_WARNING,
                         "mdcached session: write failed: %s",
                         h ? mdc_errstr(h) : "no servers");
        return FAILURE;
    }
    return SUCCESS;
}

PS_DESTROY_FUNC(mdcached)
{
    mdcx_sess *s = PS_GET_MOD_DATA();
    if (s == NULL)
        return FAILURE;
    zend_string *k = sess_key(key);
    mdc_t *h = sess_pick(s, ZSTR_VAL(k), ZSTR_LEN(k));
    int rc = h ? mdc_delete(h, ZSTR_VAL(k), ZSTR_LEN(k), 0)
               : MDC_ERR_NO_SERVERS;
    zend_string_release(k);
    sess_unlock(s);
    return (rc == MDC_OK || rc == MDC_NOT_FOUND) ? SUCCESS : FAILURE;
}

PS_GC_FUNC(mdcached)
{
    /* records expire on the server */
    *nrdels = 0;
    return SUCCESS;
}

static const ps_module ps_mod_mdcached = {PS_MOD(mdcached)};

int mdcx_session_minit(void)
{
    php_session_register_module(&ps_mod_mdcached);
    return SUCCESS;
}

void mdcx_session_mshutdown(void)
{
    if (sess_conn) {
        mdcx_conn_free(sess_conn);
        free(sess_conn_path);
        sess_conn = NULL;
        sess_conn_path = NULL;
    }
}
