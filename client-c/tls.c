/*
 * tls.c - libmdcached's TLS layer on OpenSSL 3 (docs/client-c.md, "TLS").
 *
 * A context (struct mdci_tls: an SSL_CTX with the CA store, the optional
 * client certificate, and the verification mode) is built by mdc_set_tls()
 * or mdc_pool_set_tls() and shared by reference between the handles of a
 * pool.  Each connection gets an SSL object over the handle's socket
 * through a small BIO of our own that calls send(MSG_NOSIGNAL |
 * MSG_DONTWAIT) and recv(MSG_DONTWAIT): OpenSSL's socket BIO uses write(),
 * which would raise SIGPIPE in the application when the server goes away,
 * and the flags keep every call non-blocking whatever the socket's mode, so
 * the exchange engine (conn.c) drives the handshake and the records from
 * its poll loop exactly as it drives plain sockets.
 *
 * Without OpenSSL (configure --without-tls) the functions exist and
 * mdc_set_tls() reports MDC_ERR_TLS.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mdc_int.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_OPENSSL

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct mdci_tls {
    SSL_CTX *ctx;
    char *server_name; /* NULL: each handle's host */
    bool insecure;
    int refs;
};

/* ---- the BIO: send/recv with MSG_NOSIGNAL | MSG_DONTWAIT ------------------ */

static BIO_METHOD *bio_method; /* built once; never freed (process lifetime) */

static int bio_fd(BIO *b)
{
    return (int)(intptr_t)BIO_get_data(b);
}

static int bio_write(BIO *b, const char *buf, int len)
{
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = send(bio_fd(b), buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = recv(bio_fd(b), buf, (size_t)len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    return (int)n;
}

static int bio_puts(BIO *b, const char *s)
{
    return bio_write(b, s, (int)strlen(s));
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    default:
        return 0;
    }
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *bio_get_method(void)
{
    /* A handle is used by one thread; a race here at worst leaks one
     * method table, and both are equal. */
    BIO_METHOD *bm = __atomic_load_n(&bio_method, __ATOMIC_ACQUIRE);
    if (bm != NULL)
        return bm;
    bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                      "mdcached socket");
    if (bm == NULL || !BIO_meth_set_write(bm, bio_write) ||
        !BIO_meth_set_read(bm, bio_read) || !BIO_meth_set_puts(bm, bio_puts) ||
        !BIO_meth_set_ctrl(bm, bio_ctrl) ||
        !BIO_meth_set_create(bm, bio_create)) {
        BIO_meth_free(bm);
        return NULL;
    }
    BIO_METHOD *expected = NULL;
    if (!__atomic_compare_exchange_n(&bio_method, &expected, bm, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        BIO_meth_free(bm);
        return expected;
    }
    return bm;
}

/* ---- messages ----------------------------------------------------------- */

/* OpenSSL's reason for the last error of this thread's queue. */
static const char *ssl_reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    return r != NULL ? r : "unknown TLS error";
}

/* ---- contexts ------------------------------------------------------------ */

int mdci_tls_new(const struct mdc_tls_config *cfg, struct mdci_tls **out,
                 char *err, size_t errlen)
{
    struct mdci_tls *t;
    int rc = MDC_ERR_TLS;

    *out = NULL;
    for (size_t i = 0; i < sizeof(cfg->reserved) / sizeof(cfg->reserved[0]);
         i++)
        if (cfg->reserved[i] != NULL) {
            snprintf(err, errlen, "TLS: reserved fields must be NULL");
            return MDC_ERR_ARG;
        }
    if ((cfg->flags & ~MDC_TLS_INSECURE) != 0) {
        snprintf(err, errlen, "TLS: unknown flags 0x%x", cfg->flags);
        return MDC_ERR_ARG;
    }
    if (cfg->key_file != NULL && cfg->cert_file == NULL) {
        snprintf(err, errlen, "TLS: a key_file needs its cert_file");
        return MDC_ERR_ARG;
    }
    if (cfg->server_name != NULL &&
        (cfg->server_name[0] == '\0' || strlen(cfg->server_name) > 253)) {
        snprintf(err, errlen, "TLS: bad server_name");
        return MDC_ERR_ARG;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return MDC_ERR_NOMEM;
    }
    t->refs = 1;
    t->insecure = (cfg->flags & MDC_TLS_INSECURE) != 0;
    if (cfg->server_name != NULL) {
        t->server_name = strdup(cfg->server_name);
        if (t->server_name == NULL) {
            snprintf(err, errlen, "out of memory");
            rc = MDC_ERR_NOMEM;
            goto fail;
        }
    }
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL) {
        snprintf(err, errlen, "TLS: cannot create a context: %s",
                 ssl_reason());
        goto fail;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    /* A server that closes without close_notify reads as an end of file
     * (MDC_ERR_IO, like a plain socket), not an OpenSSL 3 error: replies
     * are length-framed, so a truncation cannot pass for a whole reply. */
    SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (cfg->ca_file != NULL || cfg->ca_path != NULL) {
        if (SSL_CTX_load_verify_locations(t->ctx, cfg->ca_file,
                                          cfg->ca_path) != 1) {
            snprintf(err, errlen, "TLS: cannot load the CAs of %s: %s",
                     cfg->ca_file ? cfg->ca_file : cfg->ca_path,
                     ssl_reason());
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        snprintf(err, errlen, "TLS: cannot load the system's CA store: %s",
                 ssl_reason());
        goto fail;
    }
    if (cfg->cert_file != NULL) {
        const char *key = cfg->key_file ? cfg->key_file : cfg->cert_file;
        if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->cert_file) != 1) {
            snprintf(err, errlen, "TLS: cannot load the certificate %s: %s",
                     cfg->cert_file, ssl_reason());
            goto fail;
        }
        if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1) {
            snprintf(err, errlen, "TLS: cannot load the key %s: %s", key,
                     ssl_reason());
            goto fail;
        }
        if (SSL_CTX_check_private_key(t->ctx) != 1) {
            snprintf(err, errlen,
                     "TLS: the key %s does not match the certificate %s",
                     key, cfg->cert_file);
            goto fail;
        }
    }
    SSL_CTX_set_verify(t->ctx, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    if (bio_get_method() == NULL) {
        snprintf(err, errlen, "TLS: cannot create the socket BIO");
        goto fail;
    }
    ERR_clear_error();
    *out = t;
    return MDC_OK;
fail:
    ERR_clear_error();
    mdci_tls_unref(t);
    return rc;
}

void mdci_tls_ref(struct mdci_tls *t)
{
    if (t != NULL)
        t->refs++;
}

void mdci_tls_unref(struct mdci_tls *t)
{
    if (t == NULL || --t->refs > 0)
        return;
    SSL_CTX_free(t->ctx);
    free(t->server_name);
    free(t);
}

/* ---- connections ---------------------------------------------------------- */

int mdci_tls_start(struct mdc *m)
{
    struct mdci_tls *t = m->tls;
    const char *name = t->server_name;
    unsigned char ip[16];
    bool is_ip;
    BIO *bio;
    SSL *ssl;

    if (name == NULL && !m->is_unix)
        name = m->host;
    if (name == NULL && !t->insecure)
        return mdci_seterr(m, MDC_ERR_TLS,
                           "%s: TLS over a Unix socket needs a server_name "
                           "to verify (mdc_set_tls())",
                           m->label);
    ERR_clear_error();
    ssl = SSL_new(t->ctx);
    bio = bio_get_method() ? BIO_new(bio_get_method()) : NULL;
    if (ssl == NULL || bio == NULL) {
        SSL_free(ssl);
        BIO_free(bio);
        ERR_clear_error();
        return mdci_seterr(m, MDC_ERR_NOMEM, "%s: out of memory (TLS)",
                           m->label);
    }
    BIO_set_data(bio, (void *)(intptr_t)m->fd);
    SSL_set_bio(ssl, bio, bio);
    if (name != NULL) {
        is_ip = inet_pton(AF_INET, name, ip) == 1 ||
                inet_pton(AF_INET6, name, ip) == 1;
        /* SNI carries host names only (RFC 6066) */
        if (!is_ip && SSL_set_tlsext_host_name(ssl, name) != 1)
            goto bad_name;
        if (!t->insecure) {
            if (is_ip) {
                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) !=
                    1)
                    goto bad_name;
            } else {
                SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
                if (SSL_set1_host(ssl, name) != 1)
                    goto bad_name;
            }
        }
    }
    SSL_set_connect_state(ssl);
    m->ssl = ssl;
    m->tls_want = POLLOUT;
    m->tls_wr_wants_read = m->tls_rd_wants_write = false;
    m->tls_data = false;
    return MDC_OK;
bad_name:
    SSL_free(ssl);
    ERR_clear_error();
    return mdci_seterr(m, MDC_ERR_TLS, "%s: TLS: bad server name \"%s\"",
                       m->label, name);
}

int mdci_tls_handshake(struct mdc *m)
{
    SSL *ssl = m->ssl;
    int r, e;
    long vr;

    ERR_clear_error();
    errno = 0;
    r = SSL_connect(ssl);
    if (r == 1)
        return 1;
    e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        m->tls_want = POLLIN;
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        m->tls_want = POLLOUT;
        return 0;
    }
    vr = SSL_get_verify_result(ssl);
    if (e == SSL_ERROR_SSL && vr != X509_V_OK)
        mdci_seterr(m, MDC_ERR_TLS,
                    "%s: TLS handshake failed: server certificate refused: %s",
                    m->label, X509_verify_cert_error_string(vr));
    else if (e == SSL_ERROR_SSL)
        mdci_seterr(m, MDC_ERR_TLS, "%s: TLS handshake failed: %s", m->label,
                    ssl_reason());
    else if (e == SSL_ERROR_SYSCALL && errno != 0)
        mdci_seterr(m, MDC_ERR_TLS, "%s: TLS handshake failed: %s", m->label,
                    strerror(errno));
    else
        mdci_seterr(m, MDC_ERR_TLS,
                    "%s: TLS handshake failed: connection closed by the "
                    "server",
                    m->label);
    ERR_clear_error();
    return -1;
}

/* After SSL_read/SSL_write returned r <= 0: -1 with errno EAGAIN (retry
 * when the socket allows), 0 on EOF, -1 with another errno, or
 * MDCI_TLS_EFAIL with the message set. */
static ssize_t io_result(struct mdc *m, int r, const char *what)
{
    int e = SSL_get_error(m->ssl, r);
    int saved = errno;

    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        if (what[0] == 'w')
            m->tls_wr_wants_read = e == SSL_ERROR_WANT_READ;
        else
            m->tls_rd_wants_write = e == SSL_ERROR_WANT_WRITE;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN: /* close_notify */
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved == 0)
            return 0; /* EOF without close_notify */
        errno = saved;
        return -1;
    default:
        mdci_seterr(m, MDC_ERR_TLS, "%s: TLS %s: %s", m->label, what,
                    ssl_reason());
        ERR_clear_error();
        return MDCI_TLS_EFAIL;
    }
}

ssize_t mdci_tls_write(struct mdc *m, const void *buf, size_t len)
{
    int r;

    if (len > INT32_MAX)
        len = INT32_MAX;
    m->tls_wr_wants_read = false;
    ERR_clear_error();
    errno = 0;
    r = SSL_write(m->ssl, buf, (int)len);
    if (r > 0)
        return r;
    return io_result(m, r, "write");
}

ssize_t mdci_tls_read(struct mdc *m, void *buf, size_t cap)
{
    int r;

    if (cap > INT32_MAX)
        cap = INT32_MAX;
    m->tls_rd_wants_write = false;
    ERR_clear_error();
    errno = 0;
    r = SSL_read(m->ssl, buf, (int)cap);
    if (r > 0)
        return r;
    return io_result(m, r, "read");
}

bool mdci_tls_pending(const struct mdc *m)
{
    return m->ssl != NULL && SSL_has_pending(m->ssl);
}

void mdci_tls_close(struct mdc *m)
{
    if (m->ssl == NULL)
        return;
    /* one close_notify if the session is up; never waits for the peer's */
    if (m->state == MDCI_READY && SSL_is_init_finished(m->ssl)) {
        ERR_clear_error();
        SSL_shutdown(m->ssl);
    }
    ERR_clear_error();
    SSL_free(m->ssl); /* frees the BIO */
    m->ssl = NULL;
}

#else /* !HAVE_OPENSSL */

int mdci_tls_new(const struct mdc_tls_config *cfg, struct mdci_tls **out,
                 char *err, size_t errlen)
{
    (void)cfg;
    *out = NULL;
    snprintf(err, errlen, "TLS: libmdcached was built without TLS "
                          "(configure --with-tls, OpenSSL 3)");
    return MDC_ERR_TLS;
}

void mdci_tls_ref(struct mdci_tls *t)
{
    (void)t;
}

void mdci_tls_unref(struct mdci_tls *t)
{
    (void)t;
}

int mdci_tls_start(struct mdc *m)
{
    return mdci_seterr(m, MDC_ERR_TLS, "%s: built without TLS", m->label);
}

int mdci_tls_handshake(struct mdc *m)
{
    mdci_seterr(m, MDC_ERR_TLS, "%s: built without TLS", m->label);
    return -1;
}

ssize_t mdci_tls_write(struct mdc *m, const void *buf, size_t len)
{
    (void)buf;
    (void)len;
    mdci_seterr(m, MDC_ERR_TLS, "%s: built without TLS", m->label);
    return MDCI_TLS_EFAIL;
}

ssize_t mdci_tls_read(struct mdc *m, void *buf, size_t cap)
{
    (void)buf;
    (void)cap;
    mdci_seterr(m, MDC_ERR_TLS, "%s: built without TLS", m->label);
    return MDCI_TLS_EFAIL;
}

bool mdci_tls_pending(const struct mdc *m)
{
    (void)m;
    return false;
}

void mdci_tls_close(struct mdc *m)
{
    m->ssl = NULL;
}

#endif /* HAVE_OPENSSL */

/* ---- the public setters ------------------------------------------------ */

void mdci_set_tls_shared(struct mdc *m, struct mdci_tls *t)
{
    mdc_close(m); /* the next connection uses the new settings */
    mdci_tls_ref(t);
    mdci_tls_unref(m->tls);
    m->tls = t;
}

int mdc_set_tls(mdc_t *m, const struct mdc_tls_config *cfg)
{
    struct mdci_tls *t = NULL;
    char err[MDCI_ERRLEN];
    int rc;

    if (m == NULL)
        return MDC_ERR_ARG;
    if (cfg != NULL) {
        rc = mdci_tls_new(cfg, &t, err, sizeof(err));
        if (rc != MDC_OK)
            return mdci_seterr(m, rc, "%s", err);
    }
    mdci_set_tls_shared(m, t);
    mdci_tls_unref(t);
    return mdci_seterr(m, MDC_OK, "ok");
}
