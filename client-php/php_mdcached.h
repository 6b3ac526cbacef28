/*
 * php_mdcached.h - the mdcached PHP extension (Mdcached\Client over
 * libmdcached, and the "mdcached" session handler).  docs/client-php.md.
 */
#ifndef PHP_MDCACHED_H
#define PHP_MDCACHED_H

#include <stdbool.h>
#include <stdint.h>

#include <php.h>
#include <mdcached.h>

#define PHP_MDCACHED_VERSION "0.1.0"

extern zend_module_entry mdcached_module_entry;
#define phpext_mdcached_ptr &mdcached_module_entry

/* Result codes of the extension beyond libmdcached's enum mdc_rc. */
#define MDCX_RES_PAYLOAD_FAILURE (-20) /* serialize/compress/decode failed */
#define MDCX_RES_BAD_TAG (-21)         /* a tag that is not int32 or string */
#define MDCX_RES_BAD_KEY (-22)         /* empty key, or too long w/ prefix */
#define MDCX_RES_INVALID_ARGS (-23)    /* other bad argument */
#define MDCX_RES_NO_SERVERS MDC_ERR_NO_SERVERS

/* The tag namespace of string tags: tkey of every string tag. */
#define MDCX_STRING_TAG_KEY 0x53544147 /* "STAG" */

/*
 * A connection: a pool and the servers added to it.  Plain (emalloc'ed,
 * owned by one object) or persistent (pemalloc'ed, kept in
 * EG(persistent_list) under "mdcached:<id>" across requests).
 */
typedef struct mdcx_conn {
    mdc_pool_t *pool;
    char **specs;       /* server specifications, as added */
    uint32_t *weights;
    size_t nspecs;
    bool persistent;
    int connect_ms, io_ms, retry_ms;
    char *auth_user, *auth_pass; /* setSaslAuthData(), or NULL */
    char *tls_key; /* setTls()'s options in one string (unchanged options
                      on a persistent connection keep it open), or NULL */
    char *spool_dir; /* OPT_SPOOL_DIR (libmdcached's spool), or NULL */
    char *pool_bpf;  /* OPT_POOL_BPF (the kernel path), or NULL */
    bool in_use; /* a persistent connection taken by a live object */
    uint64_t in_use_req; /* ... of this request (a request that died
                            without freeing its objects frees it) */
} mdcx_conn;

typedef struct mdcx_obj {
    mdcx_conn *c;
    zend_string *persistent_id; /* NULL for a plain client */
    zend_string *prefix;        /* OPT_PREFIX, or NULL */
    zend_long serializer;
    bool compression;
    zend_long compression_type;
    zend_long compression_threshold;
    bool exceptions;
    int rc;
    char msg[512];
    zval server_results; /* array name => code of the last fan-out */
    zend_object std;
} mdcx_obj;

static inline mdcx_obj *mdcx_from_obj(zend_object *o)
{
    return (mdcx_obj *)((char *)o - XtOffsetOf(mdcx_obj, std));
}
#define Z_MDCX_P(zv) mdcx_from_obj(Z_OBJ_P(zv))

ZEND_BEGIN_MODULE_GLOBALS(mdcached)
    char *sess_prefix;      /* key prefix of session records */
    bool sess_locking;      /* lock sessions (default on) */
    zend_long lock_wait_min; /* ms: first wait for a held lock */
    zend_long lock_wait_max; /* ms: waits double up to this */
    zend_long lock_retries;  /* attempts before giving up */
    zend_long lock_expire;   /* s: lock lifetime; 0 = max_execution_time
                                or 30 */
ZEND_END_MODULE_GLOBALS(mdcached)

ZEND_EXTERN_MODULE_GLOBALS(mdcached)
#define MDCX_G(v) ZEND_MODULE_GLOBALS_ACCESSOR(mdcached, v)

/* Session handler registration (mdcached_session.c). */
int mdcx_session_minit(void);
void mdcx_session_mshutdown(void);

/* Shared by the session handler: create a plain connection from a
 * comma-separated server list; NULL on a bad list. */
mdcx_conn *mdcx_conn_from_list(const char *list, bool persistent);
void mdcx_conn_free(mdcx_conn *c);
/* Check a reused connection: close sockets the server has closed. */
void mdcx_conn_check(mdcx_conn *c);

#endif
