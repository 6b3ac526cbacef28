/*
 * mdcached.h - libmdcached, the C client library of the mdcached tagged
 * cache server.
 *
 * A synchronous API over the server's native binary protocol
 * (docs/protocol.md): one opaque handle per server (mdc_t), a pool over
 * several servers with libketama-compatible consistent hashing and tag
 * operations fanned out to every server (mdc_pool_t).  A tour with examples
 * is in docs/client-c.md.
 *
 * Conventions
 *  - Every operation returns an int: MDC_OK (0) on success, a positive
 *    server status (MDC_NOT_FOUND, MDC_EXISTS, ...; values equal the wire
 *    status codes) when the server answered but did not do it, or a
 *    negative MDC_ERR_* code for a client-side failure (arguments, memory,
 *    connection, timeout, protocol).  The same code and a message are kept
 *    on the handle: mdc_error(), mdc_errstr().
 *  - Keys are binary-safe (pointer + length, 1 .. 65534 bytes); values are
 *    opaque bytes.  Expiry follows memcached: 0 never, up to 30 days
 *    relative seconds, above that an absolute Unix time.
 *  - A handle is not thread-safe: use one per thread (or a lock).  A handle
 *    connects lazily on its first operation and reconnects after an error;
 *    after a connection failure the server is "down" for the retry delay and
 *    operations fail fast with MDC_ERR_DOWN.
 *  - Results that carry records are allocated by the library and released
 *    with mdc_item_free() / mdc_itemset_free().
 */
#ifndef MDCACHED_H
#define MDCACHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Library version, also in the pkg-config file (libmdcached). */
#define MDC_VERSION_MAJOR 0
#define MDC_VERSION_MINOR 1
#define MDC_VERSION_PATCH 0
#define MDC_VERSION_STRING "0.1.0"
/** MAJOR * 10000 + MINOR * 100 + PATCH, for preprocessor comparisons. */
#define MDC_VERSION_NUMBER                                                     \
    (MDC_VERSION_MAJOR * 10000 + MDC_VERSION_MINOR * 100 + MDC_VERSION_PATCH)

/** The server's default TCP port. */
#define MDC_DEFAULT_PORT 11311
/** Longest key the protocol carries. */
#define MDC_MAX_KEY 65534u

/**
 * Return codes.  0 is success; positive codes are server statuses (equal to
 * the wire protocol's status codes); negative codes are client errors.
 */
enum mdc_rc {
    MDC_OK = 0, /**< success */
    /* server statuses (docs/protocol.md §6) */
    MDC_NOT_FOUND = 1,     /**< no live record (key, tag or stack) */
    MDC_EXISTS = 2,        /**< add of a present key; CAS mismatch */
    MDC_NOT_STORED = 3,    /**< replace/append/prepend of a missing key */
    MDC_TOO_LARGE = 4,     /**< value over the server's maximum item size */
    MDC_KEY_INVALID = 5,   /**< key empty or too long */
    MDC_NO_MEMORY = 6,     /**< server memory full and eviction impossible */
    MDC_TOO_MANY_TAGS = 7, /**< more tags than the server allows per record */
    MDC_NOT_NUMBER = 8,    /**< counter operation on a non-numeric value */
    MDC_TRUNCATED = 9,     /**< get_by_tag cut short by the reply limit */
    MDC_INVALID = 10,      /**< bad argument (server side) */
    MDC_UNKNOWN_OPCODE = 0x80, /**< the server does not know the operation */
    MDC_BAD_MAGIC = 0x81,      /**< protocol mismatch (server closed) */
    MDC_BAD_VERSION = 0x82,    /**< protocol version refused (server closed) */
    MDC_MALFORMED = 0x83,      /**< the server judged the request malformed */
    MDC_MSG_TOO_LARGE = 0x84,  /**< request over the server's message bound */
    MDC_SERVER_ERROR = 0x85,   /**< internal server error */
    MDC_NOT_SUPPORTED = 0x86,  /**< operation disabled in this server */
    MDC_AUTH_FAILED = 0x87,    /**< the server refused the credentials */
    MDC_AUTH_REQUIRED = 0x88,  /**< the server wants credentials first */
    /* client errors */
    MDC_ERR_ARG = -1,        /**< invalid argument to the library */
    MDC_ERR_NOMEM = -2,      /**< client out of memory */
    MDC_ERR_CONNECT = -3,    /**< could not connect (refused, unreachable) */
    MDC_ERR_TIMEOUT = -4,    /**< connect or I/O timeout */
    MDC_ERR_IO = -5,         /**< connection lost or socket error */
    MDC_ERR_PROTOCOL = -6,   /**< unexpected or malformed reply */
    MDC_ERR_DOWN = -7,       /**< server marked down; retried after a delay */
    MDC_ERR_PARTIAL = -8,    /**< pool: some servers failed, others answered */
    MDC_ERR_NO_SERVERS = -9, /**< pool: no server configured */
    MDC_ERR_TLS = -10, /**< TLS: handshake failed, the server's certificate
                            was refused (verification, name), a TLS
                            protocol error, or TLS cannot be set up (bad
                            files; a library built without TLS) */
};

/** A tag: a pair of signed 32-bit integers. */
struct mdc_tag {
    int32_t tkey; /**< tag key, e.g. an object type */
    int32_t tval; /**< tag value, e.g. a hash of a page or an object id */
};

/**
 * A record returned by the server.  One allocation; free with
 * mdc_item_free().  key and value are followed by a NUL byte (not counted)
 * so text can be used directly.
 */
struct mdc_item {
    char *key;      /**< key (always set: the requested or returned key) */
    size_t klen;    /**< key length */
    char *value;    /**< value bytes (NUL-terminated for convenience) */
    size_t vlen;    /**< value length */
    uint32_t flags; /**< client flags stored with the record */
    uint64_t cas;   /**< the record's version */
    int64_t ttl;    /**< seconds before expiry, -1 for never */
    struct mdc_tag *tags; /**< the record's tags */
    size_t ntags;         /**< number of tags */
    unsigned state;       /**< MDC_ITEM_* bits: set by mdc_lease_get()
                               only, 0 from every other call */
};

/* mdc_item.state after mdc_lease_get() (memcached's W, X, Z flags). */
#define MDC_ITEM_WIN 0x1u     /**< this caller won: recompute and store */
#define MDC_ITEM_STALE 0x2u   /**< the value is stale (invalidated) */
#define MDC_ITEM_PENDING 0x4u /**< another caller holds the win */

/** A set of records (get_by_tag): free with mdc_itemset_free(). */
struct mdc_itemset {
    struct mdc_item **items; /**< count records */
    size_t count;            /**< number of records */
    size_t cap;              /**< allocated slots (internal) */
};

/** How mdc_store() stores. */
enum mdc_store_mode {
    MDC_SET = 0x10,     /**< store unconditionally (CAS if kv->cas != 0) */
    MDC_ADD = 0x11,     /**< store only if absent */
    MDC_REPLACE = 0x12, /**< store only if present */
    MDC_CAS = 0x13,     /**< store only if the version equals kv->cas */
    MDC_APPEND = 0x14,  /**< append to the value (tags, flags kept) */
    MDC_PREPEND = 0x15, /**< prepend to the value (tags, flags kept) */
};

/** One record to store (mdc_store(), mdc_mset()). */
struct mdc_kv {
    const void *key;            /**< key bytes */
    size_t klen;                /**< key length, 1 .. MDC_MAX_KEY */
    const void *value;          /**< value bytes (may be NULL when vlen 0) */
    size_t vlen;                /**< value length */
    uint32_t flags;             /**< client flags */
    int64_t exptime;            /**< expiry (memcached rules) */
    uint64_t cas;               /**< expected version for MDC_CAS, else 0 */
    const struct mdc_tag *tags; /**< tags to attach (replace the old ones) */
    size_t ntags;               /**< number of tags */
};

/** A connection to one server (opaque). */
typedef struct mdc mdc_t;
/** A pool of servers (opaque). */
typedef struct mdc_pool mdc_pool_t;

/* ---- library ------------------------------------------------------------ */

/** @return the library's version string at run time (MDC_VERSION_STRING). */
const char *mdc_lib_version(void);

/**
 * Describe a return code.
 * @param rc any value of enum mdc_rc
 * @return a static English description
 */
const char *mdc_strerror(int rc);

/* ---- handle ------------------------------------------------------------- */

/**
 * Create a handle for a server reached over TCP.  Nothing is connected
 * until the first operation (or mdc_connect()).
 * @param host name or address (IPv4, IPv6, or a name to resolve)
 * @param port TCP port; 0 means MDC_DEFAULT_PORT
 * @return the handle, or NULL when out of memory or host is NULL
 */
mdc_t *mdc_create_tcp(const char *host, uint16_t port);

/**
 * Create a handle for a server reached over a Unix stream socket.
 * @param path the socket's path
 * @return the handle, or NULL when out of memory or path is NULL/too long
 */
mdc_t *mdc_create_unix(const char *path);

/**
 * Create a handle from a server specification: "/path" or "unix:/path" for a
 * Unix socket, "host", "host:port", "[v6addr]" or "[v6addr]:port" for TCP.
 * @param spec the specification
 * @return the handle, or NULL when out of memory or spec is malformed
 */
mdc_t *mdc_create(const char *spec);

/**
 * Close the connection (if any) and free the handle.
 * @param m handle, or NULL (no-op)
 */
void mdc_destroy(mdc_t *m);

/**
 * Set timeouts.  The I/O timeout bounds how long an operation waits
 * without the connection making progress.
 * @param m handle
 * @param connect_ms connect timeout in milliseconds (> 0; default 1000)
 * @param io_ms I/O timeout in milliseconds (> 0; default 5000)
 * @return MDC_OK, or MDC_ERR_ARG
 */
int mdc_set_timeouts(mdc_t *m, int connect_ms, int io_ms);

/**
 * Set how long a server that failed to connect or dropped a connection is
 * considered down: operations fail at once with MDC_ERR_DOWN until the delay
 * has passed, then the next operation tries again.
 * @param m handle
 * @param retry_ms delay in milliseconds; 0 (the default for a lone handle)
 *        retries on every operation
 * @return MDC_OK, or MDC_ERR_ARG for a negative delay
 */
int mdc_set_retry_delay(mdc_t *m, int retry_ms);

/**
 * Authenticate every connection of this handle (servers started with
 * --auth-file, docs/security.md): from now on each new connection sends an
 * AUTH request with these credentials ahead of its first request, and a
 * connection already open sends one before the next request.  If the
 * server refuses them the operation returns MDC_AUTH_FAILED (a server
 * without --auth-file: MDC_NOT_SUPPORTED) and the connection is closed.
 * The strings are copied.
 * @param m handle
 * @param user user name (1-65534 bytes)
 * @param password password
 * @return MDC_OK, MDC_ERR_ARG or MDC_ERR_NOMEM
 */
int mdc_set_auth(mdc_t *m, const char *user, const char *password);

/** mdc_tls_config.flags: do not verify the server's certificate (chain nor
 * name).  Encrypts, but any server is accepted: for tests only. */
#define MDC_TLS_INSECURE 0x1u

/**
 * TLS settings (mdc_set_tls(), mdc_pool_set_tls()).  Zero the whole struct
 * first (e.g. "struct mdc_tls_config c = {0};"): a zeroed struct means TLS
 * with the system's CA store and the handle's host name verified.
 */
struct mdc_tls_config {
    const char *ca_file;     /**< PEM file of trusted CAs; NULL with ca_path
                                  NULL: the system's default store */
    const char *ca_path;     /**< directory of hashed CA certificates
                                  (openssl rehash), or NULL */
    const char *cert_file;   /**< client certificate chain, PEM, for servers
                                  that ask for one (mutual TLS), or NULL */
    const char *key_file;    /**< its private key, PEM; NULL: in cert_file */
    const char *server_name; /**< name sent as SNI and verified against the
                                  certificate (a DNS name or an IP address);
                                  NULL: the handle's host */
    unsigned flags;          /**< MDC_TLS_INSECURE, or 0 */
    void *reserved[4];       /**< for later fields: must be NULL */
};

/**
 * Talk TLS (1.2 or later) to the server: every connection made from now on
 * does a TLS handshake before its first request, and an open plain
 * connection is closed.  The server's certificate must chain to a trusted
 * CA and carry the server name (as a DNS or IP subjectAltName) unless
 * MDC_TLS_INSECURE is set.  The files are read now; the strings are
 * copied.  The connect timeout bounds the TCP connect and again the
 * handshake.  A refused handshake or certificate makes the operation
 * return MDC_ERR_TLS, with the reason in mdc_errstr().  A Unix socket
 * handle needs server_name (or MDC_TLS_INSECURE).  The fields of struct
 * mdc_tls_config: ca_file, ca_path (trusted CAs; both NULL: the system's
 * store), cert_file, key_file (a client certificate, for mutual TLS),
 * server_name (SNI and the name verified; NULL: the handle's host), flags
 * (MDC_TLS_INSECURE), reserved (NULL).
 * @param m handle
 * @param cfg settings, or NULL to go back to plain TCP
 * @return MDC_OK, MDC_ERR_ARG (reserved fields set, key without
 *         certificate), MDC_ERR_NOMEM, or MDC_ERR_TLS (a file cannot be
 *         loaded, the key does not match the certificate, or the library was
 *         built without TLS)
 */
int mdc_set_tls(mdc_t *m, const struct mdc_tls_config *cfg);

/**
 * Connect now (operations connect on demand anyway).  Succeeds at once when
 * already connected.
 * @param m handle
 * @return MDC_OK, MDC_ERR_CONNECT, MDC_ERR_TIMEOUT, MDC_ERR_DOWN or
 *         MDC_ERR_TLS (with mdc_set_tls(): the handshake failed)
 */
int mdc_connect(mdc_t *m);

/**
 * Close the connection, keeping the handle (the next operation reconnects).
 * Pending replies are discarded.
 * @param m handle
 */
void mdc_close(mdc_t *m);

/**
 * Check an idle connection without a round trip (e.g. before reusing a
 * persistent handle): if the socket is readable - the server closed or
 * reset it, or bytes arrived out of step - close it so that the next
 * operation reconnects.  A handle that is not connected is left alone.
 * @param m handle
 * @return MDC_OK (connected and idle, or not connected), or MDC_ERR_IO
 *         when the connection was found dead and closed
 */
int mdc_check(mdc_t *m);

/**
 * @param m handle
 * @return the code of the handle's last operation (MDC_OK after success)
 */
int mdc_error(const mdc_t *m);

/**
 * @param m handle
 * @return a message describing the last operation's result ("ok" after
 *         success); valid until the next operation on the handle
 */
const char *mdc_errstr(const mdc_t *m);

/**
 * @param m handle
 * @return the server's name as used for ketama placement: "host:port",
 *         "host" for libmemcached's default port 11211, or "path:0"
 */
const char *mdc_server_name(const mdc_t *m);

/* ---- results ------------------------------------------------------------ */

/**
 * Free an item returned by the library.
 * @param it item, or NULL (no-op)
 */
void mdc_item_free(struct mdc_item *it);

/**
 * Free the items of a set and reset it to empty (the struct itself is the
 * caller's).
 * @param set set, or NULL (no-op)
 */
void mdc_itemset_free(struct mdc_itemset *set);

/* ---- keyed operations --------------------------------------------------- */

/**
 * Fetch one record.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param[out] out receives the record (free with mdc_item_free()); NULL
 *        unless MDC_OK
 * @return MDC_OK, MDC_NOT_FOUND, or an error
 */
int mdc_get(mdc_t *m, const void *key, size_t klen, struct mdc_item **out);

/**
 * Fetch one record and set its expiry (memcached gat).
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param exptime new expiry
 * @param[out] out receives the record; NULL unless MDC_OK
 * @return MDC_OK, MDC_NOT_FOUND, or an error
 */
int mdc_gat(mdc_t *m, const void *key, size_t klen, int64_t exptime,
            struct mdc_item **out);

/**
 * A lease get, for read-through without a stampede (docs/client-c.md,
 * "Leases"; memcached's mg N/R): fetch the record and learn from
 * (*out)->state whether this caller is to recompute it.  Exactly one caller
 * per record gets MDC_ITEM_WIN until the record is stored again or
 * invalidated again; the others get MDC_ITEM_PENDING.  A stale record
 * (mdc_delete_stale(), mdc_del_by_tag_stale()) comes with MDC_ITEM_STALE
 * and its old value, and its first reader wins.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param vivify_ttl > 0: a miss creates an empty record with this TTL and
 *        the caller wins (MDC_OK, vlen 0, MDC_ITEM_WIN); a caller that then
 *        finds it gets vlen 0 and MDC_ITEM_PENDING.  0: a miss is
 *        MDC_NOT_FOUND.
 * @param recache_ttl > 0: a record with fewer seconds than this left hands
 *        out one win (early recompute); 0 for none
 * @param[out] out receives the record; NULL unless MDC_OK
 * @return MDC_OK, MDC_NOT_FOUND, or an error
 */
int mdc_lease_get(mdc_t *m, const void *key, size_t klen, int64_t vivify_ttl,
                  int64_t recache_ttl, struct mdc_item **out);

/**
 * Fetch several records in one pipelined exchange: all requests go out in
 * one write (quiet GETs closed by a NOOP), replies come back in one read
 * loop.
 * @param m handle
 * @param n number of keys
 * @param keys n key pointers
 * @param klens n key lengths
 * @param[out] out n slots: out[i] receives key i's record or NULL on a miss
 * @return MDC_OK (misses are not errors), or an error (a key-level server
 *         error, e.g. MDC_KEY_INVALID, is returned after the whole batch
 *         was read; out[] then holds what was found)
 */
int mdc_mget(mdc_t *m, size_t n, const void *const *keys, const size_t *klens,
             struct mdc_item **out);

/**
 * Store a record.
 * @param m handle
 * @param mode MDC_SET, MDC_ADD, MDC_REPLACE, MDC_CAS, MDC_APPEND or
 *        MDC_PREPEND (append/prepend ignore flags, exptime and tags)
 * @param kv the record
 * @param[out] cas_out if not NULL, receives the new version
 * @return MDC_OK, MDC_EXISTS, MDC_NOT_STORED, MDC_NOT_FOUND (cas),
 *         MDC_TOO_LARGE, MDC_TOO_MANY_TAGS, MDC_NO_MEMORY, or an error
 */
int mdc_store(mdc_t *m, enum mdc_store_mode mode, const struct mdc_kv *kv,
              uint64_t *cas_out);

/**
 * Store a record unconditionally, replacing the whole old record (tags
 * included: no tags leaves an untagged record).
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value value bytes
 * @param vlen value length (0 allowed)
 * @param flags client flags
 * @param exptime expiry
 * @param tags tags to attach, or NULL
 * @param ntags number of tags
 * @return MDC_OK or an error (see mdc_store())
 */
int mdc_set(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags);

/**
 * Store a record only if the key is absent.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value value bytes
 * @param vlen value length
 * @param flags client flags
 * @param exptime expiry
 * @param tags tags, or NULL
 * @param ntags number of tags
 * @return MDC_OK, MDC_EXISTS, or an error
 */
int mdc_add(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags);

/**
 * Store a record only if the key is present.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value value bytes
 * @param vlen value length
 * @param flags client flags
 * @param exptime expiry
 * @param tags tags, or NULL
 * @param ntags number of tags
 * @return MDC_OK, MDC_NOT_STORED, or an error
 */
int mdc_replace(mdc_t *m, const void *key, size_t klen, const void *value,
                size_t vlen, uint32_t flags, int64_t exptime,
                const struct mdc_tag *tags, size_t ntags);

/**
 * Compare-and-swap: store only if the record's version is still cas.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value value bytes
 * @param vlen value length
 * @param flags client flags
 * @param exptime expiry
 * @param tags tags, or NULL
 * @param ntags number of tags
 * @param cas the version read earlier (mdc_item.cas); must not be 0
 * @return MDC_OK, MDC_EXISTS (changed since), MDC_NOT_FOUND, or an error
 */
int mdc_cas(mdc_t *m, const void *key, size_t klen, const void *value,
            size_t vlen, uint32_t flags, int64_t exptime,
            const struct mdc_tag *tags, size_t ntags, uint64_t cas);

/**
 * Append bytes to a record's value; its tags, flags and expiry are kept.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value bytes to append
 * @param vlen their length
 * @return MDC_OK, MDC_NOT_STORED, MDC_TOO_LARGE, or an error
 */
int mdc_append(mdc_t *m, const void *key, size_t klen, const void *value,
               size_t vlen);

/**
 * Prepend bytes to a record's value; its tags, flags and expiry are kept.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param value bytes to prepend
 * @param vlen their length
 * @return MDC_OK, MDC_NOT_STORED, MDC_TOO_LARGE, or an error
 */
int mdc_prepend(mdc_t *m, const void *key, size_t klen, const void *value,
                size_t vlen);

/**
 * Store several records in one pipelined exchange (quiet stores closed by a
 * NOOP: only failures are answered).
 * @param m handle
 * @param mode store mode applied to every record
 * @param n number of records
 * @param kvs the records
 * @param[out] status if not NULL, n slots receiving each record's status
 * @return MDC_OK when every record was stored; otherwise the first failing
 *         record's status, or a client error
 */
int mdc_mset(mdc_t *m, enum mdc_store_mode mode, size_t n,
             const struct mdc_kv *kvs, int *status);

/**
 * Delete a record.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param cas 0 to delete whatever is there, else only that version
 * @return MDC_OK, MDC_NOT_FOUND, MDC_EXISTS (other version), or an error
 */
int mdc_delete(mdc_t *m, const void *key, size_t klen, uint64_t cas);

/**
 * Mark a record stale instead of deleting it (memcached's md I [T]): it
 * stays readable with a new version, and the next mdc_lease_get() of it
 * wins (MDC_ITEM_STALE | MDC_ITEM_WIN).
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param cas 0 for whatever is there, else only that version
 * @param ttl > 0 (or an absolute time): the record's new expiry; 0 keeps it
 * @return MDC_OK, MDC_NOT_FOUND, MDC_EXISTS (other version), or an error
 */
int mdc_delete_stale(mdc_t *m, const void *key, size_t klen, uint64_t cas,
                     int64_t ttl);

/**
 * Set a record's expiry without fetching it.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param exptime new expiry
 * @return MDC_OK, MDC_NOT_FOUND, or an error
 */
int mdc_touch(mdc_t *m, const void *key, size_t klen, int64_t exptime);

/**
 * memcached incr: add delta to a decimal counter (wraps at 2^64).
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param delta amount to add
 * @param[out] value if not NULL, receives the new value
 * @return MDC_OK, MDC_NOT_FOUND, MDC_NOT_NUMBER, or an error
 */
int mdc_incr(mdc_t *m, const void *key, size_t klen, uint64_t delta,
             uint64_t *value);

/**
 * memcached decr: subtract delta from a decimal counter (stops at 0).
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param delta amount to subtract
 * @param[out] value if not NULL, receives the new value
 * @return MDC_OK, MDC_NOT_FOUND, MDC_NOT_NUMBER, or an error
 */
int mdc_decr(mdc_t *m, const void *key, size_t klen, uint64_t delta,
             uint64_t *value);

/**
 * Atomic add: value += a.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param a amount to add (wraps at 2^64)
 * @param[out] result if not NULL, receives the new value
 * @return MDC_OK, MDC_NOT_FOUND, MDC_NOT_NUMBER, or an error
 */
int mdc_atomic_add(mdc_t *m, const void *key, size_t klen, uint64_t a,
                   uint64_t *result);

/**
 * Atomic fetch-and-add: value += a, returning the old value.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param a amount to add
 * @param[out] result if not NULL, receives the value before the addition
 * @return MDC_OK, MDC_NOT_FOUND, MDC_NOT_NUMBER, or an error
 */
int mdc_atomic_fetch_add(mdc_t *m, const void *key, size_t klen, uint64_t a,
                         uint64_t *result);

/**
 * Atomic compare-and-set: if value == expect then value = desired.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param expect the value expected
 * @param desired the value to set
 * @param[out] result if not NULL, receives the value before the operation
 *        (the current value when MDC_EXISTS)
 * @return MDC_OK (swapped), MDC_EXISTS (value differed), MDC_NOT_FOUND,
 *         MDC_NOT_NUMBER, or an error
 */
int mdc_atomic_cmpset(mdc_t *m, const void *key, size_t klen, uint64_t expect,
                      uint64_t desired, uint64_t *result);

/**
 * Atomic read-and-clear: returns the value and sets it to 0.
 * @param m handle
 * @param key key bytes
 * @param klen key length
 * @param[out] result if not NULL, receives the value before clearing
 * @return MDC_OK, MDC_NOT_FOUND, MDC_NOT_NUMBER, or an error
 */
int mdc_atomic_read_clear(mdc_t *m, const void *key, size_t klen,
                          uint64_t *result);

/* ---- tags --------------------------------------------------------------- */

/**
 * Fetch every live record carrying (tkey, tvals[i]) for any i, each once,
 * in no promised order, in one request.
 * @param m handle
 * @param tkey the tag key
 * @param tvals tag values (at least one)
 * @param ntvals number of tag values
 * @param[out] out receives the records (appended to what it holds; start
 *        from a zeroed struct; free with mdc_itemset_free())
 * @return MDC_OK, MDC_TRUNCATED (the server's reply limit cut the set: the
 *         records received are valid, others exist), or an error
 */
int mdc_get_by_tag(mdc_t *m, int32_t tkey, const int32_t *tvals, size_t ntvals,
                   struct mdc_itemset *out);

/**
 * Delete every record carrying (tkey, tvals[i]) for any i, atomically with
 * respect to concurrent writers: once it returns, no record that carried one
 * of the tags when the call began can be read again, and a store racing
 * with it is either deleted or left whole with its tags indexed
 * (docs/threads.md, "del_by_tag's race rule").
 * @param m handle
 * @param tkey the tag key
 * @param tvals tag values (at least one)
 * @param ntvals number of tag values
 * @param[out] deleted if not NULL, receives the number of records deleted
 * @return MDC_OK (also when nothing carried the tags), or an error
 */
int mdc_del_by_tag(mdc_t *m, int32_t tkey, const int32_t *tvals, size_t ntvals,
                   uint64_t *deleted);

/**
 * Tag invalidation without a stampede: every live record carrying
 * (tkey, tvals[i]) for any i is marked stale (as mdc_delete_stale()), with
 * the race rule of mdc_del_by_tag(), instead of deleted.  Readers using
 * mdc_lease_get() keep getting the old values (MDC_ITEM_STALE) while one
 * of them per record recomputes (MDC_ITEM_WIN).
 * @param m handle
 * @param tkey the tag key
 * @param tvals tag values (at least one)
 * @param ntvals number of tag values
 * @param ttl > 0: the records' new expiry; 0 keeps each one's own
 * @param[out] marked if not NULL, receives the number of records marked
 * @return MDC_OK (also when nothing carried the tags), or an error
 */
int mdc_del_by_tag_stale(mdc_t *m, int32_t tkey, const int32_t *tvals,
                         size_t ntvals, int64_t ttl, uint64_t *marked);

/**
 * Push a value on the stack of a tag: the server stores it as a record
 * carrying the tag under a key it generates.
 * @param m handle
 * @param tag the stack's tag
 * @param value value bytes
 * @param vlen value length
 * @param flags client flags
 * @param exptime expiry
 * @param[out] key_out if not NULL, receives the generated key,
 *        NUL-terminated, allocated with malloc() (release with free())
 * @param[out] klen_out if not NULL, receives the key's length
 * @param[out] cas_out if not NULL, receives the record's version
 * @return MDC_OK, or an error
 */
int mdc_tstack_push(mdc_t *m, struct mdc_tag tag, const void *value,
                    size_t vlen, uint32_t flags, int64_t exptime,
                    char **key_out, size_t *klen_out, uint64_t *cas_out);

/**
 * Pop the most recently pushed record of a tag's stack.
 * @param m handle
 * @param tag the stack's tag
 * @param[out] out receives the record, key included; NULL unless MDC_OK
 * @return MDC_OK, MDC_NOT_FOUND (empty stack), or an error
 */
int mdc_tstack_pop(mdc_t *m, struct mdc_tag tag, struct mdc_item **out);

/* ---- server ------------------------------------------------------------- */

/**
 * Remove every record from the server.
 * @param m handle
 * @return MDC_OK or an error; MDC_NOT_SUPPORTED when the server runs with
 *         -F (--disable-flush-all), and nothing is removed
 */
int mdc_flush(mdc_t *m);

/**
 * Fetch statistics as text, one "name value\n" line per statistic.
 * @param m handle
 * @param group NULL or "" for the general group, or e.g. "settings"
 * @param[out] out receives the NUL-terminated text, allocated with malloc()
 *        (release with free())
 * @param[out] len if not NULL, receives its length
 * @return MDC_OK, MDC_NOT_FOUND (unknown group), or an error
 */
int mdc_stats(mdc_t *m, const char *group, char **out, size_t *len);

/**
 * Find one statistic in the text returned by mdc_stats().
 * @param text stats text
 * @param name statistic name, e.g. "curr_items"
 * @param[out] value receives the value parsed as an unsigned integer
 * @return MDC_OK, MDC_NOT_FOUND (absent), or MDC_ERR_ARG (not a number)
 */
int mdc_stats_u64(const char *text, const char *name, uint64_t *value);

/**
 * Fetch the server's version string.
 * @param m handle
 * @param[out] buf receives the NUL-terminated version (truncated to fit)
 * @param cap size of buf (> 0)
 * @return MDC_OK or an error
 */
int mdc_version(mdc_t *m, char *buf, size_t cap);

/**
 * Round trip without effect (NOOP), e.g. to check that a server is alive.
 * @param m handle
 * @return MDC_OK or an error
 */
int mdc_noop(mdc_t *m);

/**
 * Ask the server to close the connection (QUIT) and close it here.  The
 * handle stays usable: the next operation reconnects.
 * @param m handle
 * @return MDC_OK or an error
 */
int mdc_quit(mdc_t *m);

/* ---- pools -------------------------------------------------------------- */

/**
 * Create an empty pool.  Keyed operations go to one server chosen by
 * consistent hashing in libmemcached's libketama-compatible mode (weighted
 * ketama, MD5, 160 points per server, server names as in
 * mdc_server_name()), so a key lands on the server libmemcached and
 * php-memcached (OPT_LIBKETAMA_COMPATIBLE) choose for the same list.  A
 * server that fails is marked down for the retry delay (default 2000 ms);
 * keys are not moved to other servers meanwhile.
 * @return the pool, or NULL when out of memory
 */
mdc_pool_t *mdc_pool_create(void);

/**
 * Close every connection and free the pool and its handles.
 * @param p pool, or NULL (no-op)
 */
void mdc_pool_destroy(mdc_pool_t *p);

/**
 * Add a server (see mdc_create() for spec) with a ketama weight.
 * @param p pool
 * @param spec server specification
 * @param weight relative weight, >= 1 (0 counts as 1)
 * @return the server's index (>= 0), or MDC_ERR_ARG / MDC_ERR_NOMEM
 */
int mdc_pool_add(mdc_pool_t *p, const char *spec, uint32_t weight);

/**
 * Remove the server at an index; later servers move down one index.  Only
 * the keys of that server move (to the others).
 * @param p pool
 * @param index server index
 * @return MDC_OK or MDC_ERR_ARG
 */
int mdc_pool_remove(mdc_pool_t *p, size_t index);

/**
 * @param p pool
 * @return number of servers
 */
size_t mdc_pool_count(const mdc_pool_t *p);

/**
 * @param p pool
 * @param index server index (< mdc_pool_count())
 * @return the handle of that server (owned by the pool), or NULL
 */
mdc_t *mdc_pool_server(mdc_pool_t *p, size_t index);

/**
 * The server index a key maps to (ketama).
 * @param p pool
 * @param key key bytes
 * @param klen key length
 * @return the index (>= 0), or MDC_ERR_NO_SERVERS
 */
int mdc_pool_index(const mdc_pool_t *p, const void *key, size_t klen);

/**
 * The handle of the server a key maps to: run any keyed operation on it,
 * e.g. mdc_incr(mdc_pool_pick(p, k, n), k, n, 1, &v).  With a spool
 * (mdc_pool_set_spool_dir()), that server's spooled invalidations are
 * replayed first (within the per-call bounds).
 * @param p pool
 * @param key key bytes
 * @param klen key length
 * @return the handle (owned by the pool), or NULL when the pool is empty
 */
mdc_t *mdc_pool_pick(mdc_pool_t *p, const void *key, size_t klen);

/**
 * Set timeouts of every server, present and future (see
 * mdc_set_timeouts()).
 * @param p pool
 * @param connect_ms connect timeout in milliseconds
 * @param io_ms I/O timeout in milliseconds
 * @return MDC_OK or MDC_ERR_ARG
 */
int mdc_pool_set_timeouts(mdc_pool_t *p, int connect_ms, int io_ms);

/**
 * Set the down-server retry delay of every server (see
 * mdc_set_retry_delay()).
 * @param p pool
 * @param retry_ms delay in milliseconds
 * @return MDC_OK or MDC_ERR_ARG
 */
int mdc_pool_set_retry_delay(mdc_pool_t *p, int retry_ms);

/**
 * Set the credentials of every server added so far (see mdc_set_auth()).
 * @param p pool
 * @param user user name
 * @param password password
 * @return MDC_OK, MDC_ERR_ARG or MDC_ERR_NOMEM
 */
int mdc_pool_set_auth(mdc_pool_t *p, const char *user, const char *password);

/**
 * TLS for every server, present and future (see mdc_set_tls()): the files
 * are loaded once and shared; each server's name is verified (its host, or
 * cfg->server_name for all).
 * @param p pool
 * @param cfg settings, or NULL for plain TCP
 * @return as mdc_set_tls(); the message is in mdc_pool_errstr()
 */
int mdc_pool_set_tls(mdc_pool_t *p, const struct mdc_tls_config *cfg);

/**
 * @param p pool
 * @return the code of the pool's last fan-out operation
 */
int mdc_pool_error(const mdc_pool_t *p);

/**
 * @param p pool
 * @return the message of the pool's last fan-out operation, naming each
 *         server that failed and why
 */
const char *mdc_pool_errstr(const mdc_pool_t *p);

/**
 * Get a record from the server its key maps to.
 * @param p pool
 * @param key key bytes
 * @param klen key length
 * @param[out] out receives the record; NULL unless MDC_OK
 * @return as mdc_get(); the message is on the server's handle
 */
int mdc_pool_get(mdc_pool_t *p, const void *key, size_t klen,
                 struct mdc_item **out);

/**
 * mdc_lease_get() on the server the key maps to.
 * @return as mdc_lease_get()
 */
int mdc_pool_lease_get(mdc_pool_t *p, const void *key, size_t klen,
                       int64_t vivify_ttl, int64_t recache_ttl,
                       struct mdc_item **out);

/**
 * Store a record on the server its key maps to.
 * @param p pool
 * @param mode store mode
 * @param kv the record
 * @param[out] cas_out if not NULL, receives the new version
 * @return as mdc_store()
 */
int mdc_pool_store(mdc_pool_t *p, enum mdc_store_mode mode,
                   const struct mdc_kv *kv, uint64_t *cas_out);

/**
 * Delete a record on the server its key maps to.
 * @param p pool
 * @param key key bytes
 * @param klen key length
 * @param cas 0, or the version to delete
 * @return as mdc_delete()
 */
int mdc_pool_delete(mdc_pool_t *p, const void *key, size_t klen, uint64_t cas);

/**
 * mdc_delete_stale() on the server the key maps to.
 * @return as mdc_delete_stale()
 */
int mdc_pool_delete_stale(mdc_pool_t *p, const void *key, size_t klen,
                          uint64_t cas, int64_t ttl);

/**
 * Multi-get across the pool: keys are grouped by server, every server's
 * pipelined batch is sent, then one poll loop gathers all replies.
 * @param p pool
 * @param n number of keys
 * @param keys key pointers
 * @param klens key lengths
 * @param[out] out n slots receiving each record or NULL
 * @param[out] server_rc if not NULL, mdc_pool_count() slots receiving each
 *        server's result (MDC_OK for servers not involved)
 * @return MDC_OK, MDC_ERR_PARTIAL (some servers failed; their keys read as
 *         misses; see mdc_pool_errstr()), or an error
 */
int mdc_pool_mget(mdc_pool_t *p, size_t n, const void *const *keys,
                  const size_t *klens, struct mdc_item **out, int *server_rc);

/**
 * get_by_tag on every server in parallel (all requests sent, then one poll
 * loop), results merged.
 * @param p pool
 * @param tkey tag key
 * @param tvals tag values
 * @param ntvals number of tag values
 * @param[out] out receives the records of every server that answered
 * @param[out] server_rc if not NULL, mdc_pool_count() slots receiving each
 *        server's result
 * @return MDC_OK, MDC_TRUNCATED (some server cut its reply), MDC_ERR_PARTIAL
 *         (some servers failed; mdc_pool_errstr() names them), or an error
 *         when every server failed
 */
int mdc_pool_get_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, struct mdc_itemset *out, int *server_rc);

/**
 * del_by_tag on every server in parallel.
 * @param p pool
 * @param tkey tag key
 * @param tvals tag values
 * @param ntvals number of tag values
 * @param[out] deleted if not NULL, receives the total deleted
 * @param[out] server_rc if not NULL, mdc_pool_count() slots receiving each
 *        server's result
 * @return MDC_OK, MDC_ERR_PARTIAL (mdc_pool_errstr() names the servers that
 *         failed), or an error when every server failed
 */
int mdc_pool_del_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, uint64_t *deleted, int *server_rc);

/**
 * mdc_del_by_tag_stale() on every server in parallel.
 * @param ttl as mdc_del_by_tag_stale()
 * @param[out] marked if not NULL, receives the total marked
 * @return as mdc_pool_del_by_tag()
 */
int mdc_pool_del_by_tag_stale(mdc_pool_t *p, int32_t tkey,
                              const int32_t *tvals, size_t ntvals, int64_t ttl,
                              uint64_t *marked, int *server_rc);

/**
 * Flush every server in parallel.
 * @param p pool
 * @param[out] server_rc if not NULL, per-server results
 * @return MDC_OK, MDC_ERR_PARTIAL, or an error when every server failed
 */
int mdc_pool_flush(mdc_pool_t *p, int *server_rc);

/* ---- fan-out paths and pool statistics (docs/client-c.md, "Pools") ---- */

/** The path that carried a fan-out operation (tag operations, flush). */
enum mdc_fanout_path {
    MDC_PATH_TCP = 0,   /**< one TCP connection per server, one poll loop */
    MDC_PATH_URING = 1, /**< the same connections driven by io_uring */
    MDC_PATH_BPF = 2,   /**< kernel scatter-gather (mdc_pool_set_bpf()) */
    MDC_PATH_COUNT = 4
};

/** How to fan out: mdc_pool_set_fanout(). */
enum mdc_fanout_mode {
    MDC_FANOUT_AUTO = 0,  /**< io_uring where available, else poll */
    MDC_FANOUT_POLL = 1,  /**< the poll loop only */
    MDC_FANOUT_URING = 2, /**< io_uring when usable (else poll, counted) */
};

/** Counters of a pool, since its creation (mdc_pool_get_stats()). */
struct mdc_pool_stats {
    uint64_t ops[MDC_PATH_COUNT]; /**< fan-out operations by path */
    uint64_t uring_fallbacks; /**< io_uring wanted, poll used (no ring, a
                                   connect or TLS pending) */
    uint64_t retries;         /**< deletes sent again at once after a lost
                                   connection */
    uint64_t spooled;         /**< invalidations written to the spool */
    uint64_t spool_flush_marks; /**< spool full: servers marked for flush */
    uint64_t spool_covered;   /**< not written: a pending flush covers them */
    uint64_t spool_errors;    /**< could not be spooled (see errstr) */
    uint64_t replayed;        /**< spooled entries replayed */
    uint64_t dropped;         /**< spooled entries dropped: the server
                                   started empty since */
    uint64_t spool_damaged;   /**< damaged places skipped in spool files */
    uint64_t bpf_fallbacks;   /**< kernel path wanted, TCP used (nothing
                                   loaded, TLS or auth, command too long) */
    uint64_t bpf_polls;       /**< kernel path: completion late or partial,
                                   the kernel polled for the aggregate */
    uint64_t bpf_tcp_retries; /**< servers the kernel path did not show as
                                   answered, retried over TCP */
    uint64_t reserved[4];
};

/**
 * Choose the fan-out path (default MDC_FANOUT_AUTO).
 * @return MDC_OK, or MDC_ERR_ARG for an unknown mode
 */
int mdc_pool_set_fanout(mdc_pool_t *p, int mode);
/** Copy the pool's counters into out (zeroed first). */
int mdc_pool_get_stats(const mdc_pool_t *p, struct mdc_pool_stats *out);
/** "tcp", "uring" or "bpf": the path of the last fan-out ("" before). */
const char *mdc_pool_last_path(const mdc_pool_t *p);

/**
 * The path that carried server index's part of the last fan-out: one of
 * enum mdc_fanout_path (MDC_PATH_BPF: answered through the kernel
 * scatter-gather; MDC_PATH_TCP or MDC_PATH_URING: over its connection,
 * e.g. retried after the kernel path showed no answer), -1 before any.
 */
int mdc_pool_server_path(const mdc_pool_t *p, size_t index);

/**
 * Send tag deletes (plain and stale) through the kernel scatter-gather
 * programs that root loaded with mdcached-tool pool-bpf (docs/pool-bpf.md):
 * one datagram to the virtual address, one completion back.  Pools with
 * TLS or credentials, and servers not in the description, stay on TCP;
 * every server the completion does not show as answered is retried over
 * TCP before the call returns.
 * @param desc the description the loader wrote
 *        (/run/mdcached/pool-bpf/NAME); NULL turns it off
 * @param need completion policy: return when need servers answered
 *        (0: all of them), the rest finished over TCP
 * @param timeout_ms how long to wait for the completion (0: 50 ms)
 * @return MDC_OK, or MDC_ERR_CONNECT when nothing is loaded (the pool then
 *         fans out over TCP as before; mdc_pool_errstr() says why)
 */
int mdc_pool_set_bpf(mdc_pool_t *p, const char *desc, unsigned need,
                     int timeout_ms);

/* ---- the spool of invalidations (docs/client-c.md, "Invalidations that
 * survive absence") ---- */

/**
 * Keep the tag deletes (plain and stale) and deletes that could not reach
 * a server in a file of dir (created 0700 if missing; the file 0600), and
 * replay them in order when the pool next talks to that server.
 * @param dir a directory of the application's user; NULL turns it off
 * @return MDC_OK, or an error (mdc_pool_errstr()) when dir is unusable
 */
int mdc_pool_set_spool_dir(mdc_pool_t *p, const char *dir);
/**
 * Bounds: the file's size (0: 1 MiB; when full, a server's entries are
 * replaced by one mark to flush it when it comes back), and the replay
 * done inside one pool call (0, 0: 100 entries, 10 ms; a server's first
 * entry is replayed however long the call has taken).
 */
int mdc_pool_set_spool_limits(mdc_pool_t *p, size_t max_bytes,
                              unsigned per_call_entries, int per_call_ms);

/** What a replay did (mdc_pool_spool_replay()). */
struct mdc_spool_result {
    uint64_t replayed; /**< entries sent */
    uint64_t dropped;  /**< entries not sent: the server started empty */
    uint64_t left;     /**< entries still pending (server unreachable) */
    uint64_t damaged;  /**< damaged places skipped */
    uint64_t files;    /**< spool files read */
    uint64_t reserved[3];
};

/**
 * Replay every pending entry of every spool file in dir, without the
 * per-call bounds (the background replayer: mdcached-tool spool-replay).
 * Servers named in the files are added to p as needed, so p's timeouts,
 * credentials and TLS settings apply.  Refuses to run as root.
 * @return MDC_OK when nothing is left, MDC_ERR_PARTIAL when entries are
 *         left, MDC_ERR_ARG (root, a bad dir), or an error
 */
int mdc_pool_spool_replay(mdc_pool_t *p, const char *dir,
                          struct mdc_spool_result *res);

#ifdef __cplusplus
}
#endif

#endif /* MDCACHED_H */
