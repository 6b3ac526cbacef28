/*
 * tls.c - TLS listeners with OpenSSL 3 (tls.h; docs/security.md, "TLS").
 *
 * The handshake runs inside the connection's state machine (conn_run,
 * through the table's start and sockio.c):
 * SSL_do_handshake() on the non-blocking socket until it completes, waiting
 * for the read edge on SSL_ERROR_WANT_READ (OpenSSL read until the socket
 * said EAGAIN, so no edge is lost) and for the write edge on WANT_WRITE.
 * Before it, one recv(MSG_PEEK) checks that the client starts with a TLS
 * handshake record (0x16): a plain-text client gets one clear error line.
 *
 * After it, with kernel TLS for a direction the socket is used as a plain
 * one for that direction; otherwise SSL_read() fills the input buffer
 * (reading until WANT_READ, since OpenSSL may hold decrypted bytes that no
 * new edge will announce) and SSL_write() takes the output queue's head,
 * one record at a time (SSL_MODE_ENABLE_PARTIAL_WRITE).  After WANT_WRITE
 * the same bytes are offered again, from where they lie now
 * (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER) and never fewer: the queue's head
 * does not move until OpenSSL reports bytes taken.  The records go
 * through the socket with recv()/send() (tls_bio_read/tls_bio_write, a
 * socket BIO without read()/write()'s VFS layer).
 */
#include "config.h"

#include "tls.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "server/core/alloc.h"
#include "server/log.h"
#include "server/stats.h"

#ifdef HAVE_TLS

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#ifdef __linux__
#include <linux/tls.h> /* TLS_GET_RECORD_TYPE */
#endif

struct tls_server {
    SSL_CTX *ctx; /* for new connections; live ones hold their own ref */
};

/* A record's plaintext at most: a gathered write fills one record. */
#define TLS_GATHER 16384u

static const char tls_plain_msg[] =
    "SERVER_ERROR this port speaks TLS: connect with a TLS client "
    "(docs/security.md)\r\n";

/* The first queued OpenSSL error, as text (clears the queue). */
static const char *tls_err_text(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();

    if (e == 0)
        snprintf(buf, len, "no OpenSSL error (errno %s)", strerror(errno));
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static SSL_CTX *tls_ctx_build(const struct options *o)
{
    char eb[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (ctx == NULL) {
        log_error("TLS: cannot create a context: %s",
                  tls_err_text(eb, sizeof(eb)));
        return NULL;
    }
    (void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* kernel TLS when the kernel and the cipher allow; no renegotiation
     * (so SSL_write never needs to read); a peer closing without
     * close_notify is an end of stream, not an error */
    SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* one read() takes whatever has arrived (a whole record and more),
     * not a 5-byte header and then the body */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* resumption by stateless tickets only: no shared session cache */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    (void)SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"mdcached",
                                         8);
    if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1) {
        log_error("TLS: cannot load the certificate %s: %s", o->tls_cert,
                  tls_err_text(eb, sizeof(eb)));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1) {
        log_error("TLS: cannot load the key %s: %s", o->tls_key,
                  tls_err_text(eb, sizeof(eb)));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        log_error("TLS: the key %s does not match the certificate %s: %s",
                  o->tls_key, o->tls_cert, tls_err_text(eb, sizeof(eb)));
        goto fail;
    }
    if (o->tls_ca != NULL) {
        STACK_OF(X509_NAME) *names;

        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca, NULL) != 1) {
            log_error("TLS: cannot load the client CAs %s: %s", o->tls_ca,
                      tls_err_text(eb, sizeof(eb)));
            goto fail;
        }
        names = SSL_load_client_CA_file(o->tls_ca);
        if (names == NULL) {
            log_error("TLS: no CA names in %s: %s", o->tls_ca,
                      tls_err_text(eb, sizeof(eb)));
            goto fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx,
                           SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                           NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/*
 * The connection's BIO: OpenSSL's socket BIO (its create, destroy and
 * controls, so kTLS and the fd controls work as ever), except that once
 * the handshake is done, a direction the kernel does not encrypt moves
 * records with recv()/send() rather than the socket BIO's read()/write()
 * (no VFS layer, as on the plain path; conn_read/conn_flush), and a read
 * notes whether it took less than asked (bio_short: the socket's receive
 * queue was emptied) without a BIO callback on every call.  During the
 * handshake, and for a kTLS direction (control messages, record types),
 * the socket BIO's own read and write are used.
 */
static BIO_METHOD *tls_bio_method;
/* the socket BIO's own (int) read and write: its _ex entries are
 * wrappers that call the int ones of the BIO's method, i.e. ours */
static int (*sock_read)(BIO *, char *, int);
static int (*sock_write)(BIO *, const char *, int);
static long (*sock_ctrl)(BIO *, int, long, void *);

static int tls_bio_read(BIO *b, char *buf, size_t len, size_t *got)
{
    struct tls_conn *t = (struct tls_conn *)BIO_get_callback_arg(b);
    ssize_t n;

    if (!t->bio_plain_rx) {
        int r = sock_read(b, buf, len > INT32_MAX ? INT32_MAX : (int)len);

        t->bio_short = r > 0 && (size_t)r < len;
        *got = r > 0 ? (size_t)r : 0;
        return r > 0 ? 1 : r; /* as OpenSSL's own adapter of int reads */
    }
    BIO_clear_retry_flags(b);
    n = recv(t->fd, buf, len, 0);
    if (n > 0) {
        t->bio_short = (size_t)n < len;
        *got = (size_t)n;
        return 1;
    }
    *got = 0;
    if (n == 0) {
        BIO_set_flags(b, BIO_FLAGS_IN_EOF); /* as the socket BIO: BIO_eof() */
        return 0;
    }
    if (BIO_sock_should_retry(-1))
        BIO_set_retry_read(b);
    return -1;
}

static int tls_bio_write(BIO *b, const char *buf, size_t len, size_t *put)
{
    struct tls_conn *t = (struct tls_conn *)BIO_get_callback_arg(b);
    ssize_t n;

    if (!t->bio_plain_tx) {
        int r = sock_write(b, buf, len > INT32_MAX ? INT32_MAX : (int)len);

        *put = r > 0 ? (size_t)r : 0;
        return r > 0 ? 1 : r;
    }
    BIO_clear_retry_flags(b);
    n = send(t->fd, buf, len, MSG_NOSIGNAL);
    if (n > 0) {
        *put = (size_t)n;
        return 1;
    }
    *put = 0;
    if (n < 0 && BIO_sock_should_retry(-1))
        BIO_set_retry_write(b);
    return n < 0 ? -1 : 0;
}

/* The connection whose SSL_read()/SSL_write() runs on this thread
 * (tls_recv, tls_send_pending), NULL otherwise: its BIO's controls. */
static __thread const struct tls_conn *tls_io_conn;

/* OpenSSL 3.0 asks the BIO whether the kernel encrypts (BIO_get_ktls_send)
 * eight times per record written and twice per record read; once the
 * handshake has settled it for a direction, the answer is ours (no kTLS:
 * 0), without the socket BIO's control, and found without a call (no
 * BIO_get_callback_arg()).  Everything else is the socket BIO's. */
static long tls_bio_ctrl(BIO *b, int cmd, long larg, void *parg)
{
#if defined(BIO_CTRL_GET_KTLS_SEND) && defined(BIO_CTRL_GET_KTLS_RECV)
    const struct tls_conn *t = tls_io_conn;

    if (t != NULL && ((cmd == BIO_CTRL_GET_KTLS_SEND && t->bio_plain_tx) ||
                      (cmd == BIO_CTRL_GET_KTLS_RECV && t->bio_plain_rx)))
        return 0;
#endif
    return sock_ctrl(b, cmd, larg, parg);
}

static int tls_bio_method_setup(void)
{
    const BIO_METHOD *s = BIO_s_socket();
    BIO_METHOD *m;

    if (tls_bio_method != NULL)
        return 0;
    m = BIO_meth_new(BIO_TYPE_SOCKET, "mdcached socket");
    if (m == NULL)
        return -1;
    sock_read = BIO_meth_get_read(s);
    sock_write = BIO_meth_get_write(s);
    sock_ctrl = BIO_meth_get_ctrl(s);
    if (sock_read == NULL || sock_write == NULL || sock_ctrl == NULL ||
        !BIO_meth_set_read_ex(m, tls_bio_read) ||
        !BIO_meth_set_write_ex(m, tls_bio_write) ||
        !BIO_meth_set_puts(m, BIO_meth_get_puts(s)) ||
        !BIO_meth_set_ctrl(m, tls_bio_ctrl) ||
        !BIO_meth_set_create(m, BIO_meth_get_create(s)) ||
        !BIO_meth_set_destroy(m, BIO_meth_get_destroy(s)) ||
        !BIO_meth_set_callback_ctrl(m, BIO_meth_get_callback_ctrl(s))) {
        BIO_meth_free(m);
        return -1;
    }
    tls_bio_method = m;
    return 0;
}

/*
 * SSL_get_error() of an SSL_read()/SSL_write() that returned n <= 0.  It
 * reads any error in the thread's queue as this call's failure, so the
 * queue must not hold one left by an earlier call; rather than look
 * before every call (ERR_peek_error(): about 200 instructions, twice a
 * request), a failure that claims an error is checked: a call that
 * stopped for want of I/O says so itself - OpenSSL resets its I/O state
 * (SSL_want()) at the start of every read and write and again once its
 * socket reads succeed, so a record that fails after them leaves
 * SSL_NOTHING - and the BIO holds the retry flag it set on EAGAIN
 * (cleared at every BIO call).  Then the queued error is not this call's:
 * it is dropped and the outcome asked again.  (A failure path here empties
 * the queue anyway; this covers any other OpenSSL user on the thread.)
 */
static int tls_outcome(SSL *ssl, int n)
{
    int e = SSL_get_error(ssl, n);

    if ((e == SSL_ERROR_SSL || e == SSL_ERROR_SYSCALL) &&
        SSL_want(ssl) != SSL_NOTHING && BIO_should_retry(SSL_get_rbio(ssl))) {
        ERR_clear_error();
        e = SSL_get_error(ssl, n);
    }
    return e;
}

int tls_setup(struct server *srv)
{
    struct tls_server *t;

    if (srv->opt.tls_listen.n == 0)
        return 0;
    t = mdc_calloc(1, sizeof(*t));
    if (t == NULL)
        return -1;
    t->ctx = tls_ctx_build(&srv->opt);
    if (t->ctx == NULL || tls_bio_method_setup() < 0) {
        SSL_CTX_free(t->ctx);
        mdc_free(t);
        return -1;
    }
    srv->tls = t;
    log_info("TLS: certificate %s, key %s%s%s", srv->opt.tls_cert,
             srv->opt.tls_key, srv->opt.tls_ca != NULL ? ", client CAs " : "",
             srv->opt.tls_ca != NULL ? srv->opt.tls_ca : "");
    return 0;
}

int tls_reload(struct server *srv)
{
    SSL_CTX *ctx;

    if (srv->tls == NULL)
        return 0;
    ctx = tls_ctx_build(&srv->opt);
    if (ctx == NULL) {
        log_error("TLS reload failed: the certificates in force are kept");
        return -1;
    }
    /* main thread, like the accept path: no other reader of t->ctx */
    SSL_CTX_free(srv->tls->ctx); /* freed once its last connection is */
    srv->tls->ctx = ctx;
    log_info("TLS: certificate %s and key %s reloaded", srv->opt.tls_cert,
             srv->opt.tls_key);
    return 0;
}

void tls_teardown(struct server *srv)
{
    if (srv->tls == NULL)
        return;
    SSL_CTX_free(srv->tls->ctx);
    mdc_free(srv->tls);
    srv->tls = NULL;
    BIO_meth_free(tls_bio_method); /* every connection's BIO is freed */
    tls_bio_method = NULL;
}

int tls_conn_attach(struct conn *c)
{
    struct tls_conn *t;
    BIO *bio;
    char eb[256];

    if (c->srv->tls == NULL)
        return -1;
    t = mdc_calloc(1, sizeof(*t));
    if (t == NULL)
        return -1;
    t->fd = c->fd;
    t->ssl = SSL_new(c->srv->tls->ctx);
    bio = t->ssl != NULL ? BIO_new(tls_bio_method) : NULL;
    if (bio == NULL) {
        log_warn("TLS: cannot set up a connection: %s",
                 tls_err_text(eb, sizeof(eb)));
        SSL_free(t->ssl);
        mdc_free(t);
        return -1;
    }
    BIO_set_fd(bio, c->fd, BIO_NOCLOSE); /* the socket BIO's control */
    BIO_set_callback_arg(bio, (char *)t);
    SSL_set_bio(t->ssl, bio, bio); /* one reference, for both ways */
    SSL_set_accept_state(t->ssl);
    t->started = server_coarse_ms();
    c->tls = t;
    c->filtered = true; /* read and written through the filter (sockio.c) */
    c->hs_pending = true;
    return 0;
}

void tls_conn_free(struct conn *c)
{
    struct tls_conn *t = c->tls;

    if (t == NULL)
        return;
    if (t->hs_done && !t->failed) {
        /* one try at close_notify; a full socket or a gone peer is fine */
        ERR_clear_error();
        (void)SSL_shutdown(t->ssl);
    }
    ERR_clear_error();
    SSL_free(t->ssl);
    mdc_free(t);
    c->tls = NULL;
}

static int tls_hs_fail(struct conn *c, const char *why)
{
    c->tls->failed = true;
    STAT_INC(&c->owner->stats, tls_handshake_failures);
    log_info("conn %llu: TLS handshake failed: %s", (unsigned long long)c->id,
             why);
    return -1;
}

int tls_handshake(struct conn *c)
{
    struct tls_conn *t = c->tls;
    char eb[256];
    int r, e;

    if (!t->peeked) {
        uint8_t b;
        ssize_t n = recv(c->fd, &b, 1, MSG_PEEK);

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        if (n <= 0)
            return tls_hs_fail(c, n == 0 ? "closed before the handshake"
                                         : strerror(errno));
        if (b != 0x16) {
            /* not a TLS handshake record: say so in clear text */
            (void)send(c->fd, tls_plain_msg, sizeof(tls_plain_msg) - 1,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)shutdown(c->fd, SHUT_WR);
            return tls_hs_fail(c, "a plain-text client on a TLS port");
        }
        t->peeked = true;
    }
    ERR_clear_error();
    r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        struct thread_stats *ts = &c->owner->stats;

        t->hs_done = true;
        t->ktls_tx = BIO_get_ktls_send(SSL_get_wbio(t->ssl)) != 0;
        t->ktls_rx = BIO_get_ktls_recv(SSL_get_rbio(t->ssl)) != 0;
        /* Records read ahead with the client's Finished (a request sent
         * right behind it) were read before the kernel took over: OpenSSL
         * holds them, and decrypts them itself (3.0 counts them into the
         * kernel's sequence number).  A plain recvmsg() would skip them. */
        t->rx_ahead = t->ktls_rx && SSL_has_pending(t->ssl);
        t->bio_plain_tx = !t->ktls_tx;
        t->bio_plain_rx = !t->ktls_rx;
        STAT_INC(ts, tls_connections);
        if (t->ktls_tx)
            STAT_INC(ts, tls_ktls_send);
        if (t->ktls_rx)
            STAT_INC(ts, tls_ktls_recv);
        if (!t->ktls_tx || !t->ktls_rx)
            STAT_INC(ts, tls_userspace);
        log_debug("conn %llu: %s %s, kernel TLS send %s, receive %s",
                  (unsigned long long)c->id, SSL_get_version(t->ssl),
                  SSL_get_cipher_name(t->ssl), t->ktls_tx ? "yes" : "no",
                  t->ktls_rx ? "yes" : "no");
        return 1;
    }
    e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ)
        return 0;
    if (e == SSL_ERROR_WANT_WRITE)
        return 2;
    if (e == SSL_ERROR_SSL && SSL_get_verify_result(t->ssl) != X509_V_OK) {
        snprintf(eb, sizeof(eb), "client certificate: %s",
                 X509_verify_cert_error_string(
                     SSL_get_verify_result(t->ssl)));
        ERR_clear_error();
        return tls_hs_fail(c, eb);
    }
    return tls_hs_fail(c, tls_err_text(eb, sizeof(eb)));
}

ssize_t tls_recv(struct conn *c, void *buf, size_t len, bool *drained)
{
    struct tls_conn *t = c->tls;
    int n, e;

    t->bio_short = false;
    tls_io_conn = t;
    n = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    tls_io_conn = NULL;
    if (n > 0) {
        if (t->rx_ahead) {
            /* what OpenSSL read ahead: then the kernel's records, by
             * tls_ktls_recv(); a read of it only can tell when drained */
            t->rx_ahead = SSL_has_pending(t->ssl);
            *drained = false;
        } else
            *drained = t->bio_short && !SSL_has_pending(t->ssl);
        if (c->wr_wants_rd) {
            c->wr_wants_rd = false;
            c->wr_ready = true;
        }
        return n;
    }
    e = tls_outcome(t->ssl, n);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        c->rd_wants_wr = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL: {
        int err = errno != 0 ? errno : ECONNRESET;

        t->failed = true;
        ERR_clear_error(); /* it may hold the system error: leave none */
        errno = err;
        return -1;
    }
    default: {
        char eb[256];

        t->failed = true;
        log_debug("conn %llu: TLS read: %s", (unsigned long long)c->id,
                  tls_err_text(eb, sizeof(eb)));
        errno = EPROTO;
        return -1;
    }
    }
}

/* TLS record types (RFC 8446, 5.1) */
#define TLS_CT_ALERT 21
#define TLS_CT_APPLICATION_DATA 23
#define TLS_ALERT_CLOSE_NOTIFY 0

#ifdef TLS_GET_RECORD_TYPE
/* recvmsg() with room for the record-type control message: its type in
 * *type (TLS_CT_APPLICATION_DATA when the kernel gave none) */
static ssize_t tls_ktls_recvmsg(int fd, void *buf, size_t len, int flags,
                                unsigned *type)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(unsigned char))];
    } cb;
    struct iovec iov;
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;

    memset(&mh, 0, sizeof(mh));
    iov.iov_base = buf;
    iov.iov_len = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cb.b;
    mh.msg_controllen = sizeof(cb.b);
    *type = TLS_CT_APPLICATION_DATA;
    n = recvmsg(fd, &mh, flags);
    if (n < 0)
        return n;
    cm = CMSG_FIRSTHDR(&mh);
    if (cm != NULL && cm->cmsg_level == SOL_TLS &&
        cm->cmsg_type == TLS_GET_RECORD_TYPE)
        *type = *(const unsigned char *)CMSG_DATA(cm);
    return n; /* end of stream (0), or a record's bytes */
}
#endif

ssize_t tls_ktls_recv(struct conn *c, void *buf, size_t len)
{
#ifdef TLS_GET_RECORD_TYPE
    struct tls_conn *t = c->tls;
    uint8_t alert[2];
    const uint8_t *rec = buf;
    unsigned type;
    ssize_t n;

    /* With a control buffer the kernel hands over a record of another type
     * than application data (it stops before one, then returns it alone)
     * and says its type; without one it fails the read with EIO.  With
     * room for less than an alert (2 bytes; the input buffer sized to a
     * request's last byte), the next record's type is looked at first: a
     * control record is read whole into alert[], never split. */
    if (len < sizeof(alert)) {
        n = tls_ktls_recvmsg(c->fd, alert, sizeof(alert), MSG_PEEK, &type);
        if (n <= 0)
            return n;
        if (type != TLS_CT_APPLICATION_DATA) {
            buf = alert;
            len = sizeof(alert);
            rec = alert;
        }
    }
    n = tls_ktls_recvmsg(c->fd, buf, len, 0, &type);
    if (n <= 0 || type == TLS_CT_APPLICATION_DATA)
        return n;
    if (type == TLS_CT_ALERT && n >= 2 && rec[1] == TLS_ALERT_CLOSE_NOTIFY)
        return 0; /* the peer's close_notify: the end of its stream */
    t->failed = true;
    if (type == TLS_CT_ALERT && n >= 2)
        log_info("conn %llu: TLS alert %u (level %u) from the peer",
                 (unsigned long long)c->id, rec[1], rec[0]);
    else /* a TLS 1.2 renegotiation, a TLS 1.3 KeyUpdate: the kernel's
          * keys cannot follow; refused (docs/security.md) */
        log_info("conn %llu: a TLS record of type %u after the handshake "
                 "under kernel TLS receive: closed",
                 (unsigned long long)c->id, type);
    errno = EPROTO;
    return -1;
#else
    return recv(c->fd, buf, len, 0);
#endif
}

ssize_t tls_send_pending(struct conn *c)
{
    static __thread uint8_t gather[TLS_GATHER];
    struct tls_conn *t = c->tls;
    const struct oseg *s = &c->segs[c->seghead];
    const uint8_t *p = (s->ptr != NULL ? s->ptr : c->obuf + s->off) +
                       c->headsent;
    size_t len = s->len - c->headsent;
    int n, e;

    /* Several small pieces (header, value, trailer) are gathered into one
     * record rather than a record (and a write()) each.  Offered again
     * after WANT_WRITE, the bytes are the same and at least as many: the
     * head has not moved and the queue only grows at its tail. */
    if (len < TLS_GATHER && c->nseg - c->seghead > 1) {
        size_t i, k = 0;

        for (i = c->seghead; i < c->nseg && k < TLS_GATHER; i++) {
            const struct oseg *q = &c->segs[i];
            const uint8_t *qp = q->ptr != NULL ? q->ptr : c->obuf + q->off;
            size_t skip = i == c->seghead ? c->headsent : 0;
            size_t m = q->len - skip;

            if (m > TLS_GATHER - k)
                m = TLS_GATHER - k;
            memcpy(gather + k, qp + skip, m);
            k += m;
        }
        p = gather;
        len = k;
    }
    if (len > (1u << 30))
        len = 1u << 30;
    tls_io_conn = t;
    n = SSL_write(t->ssl, p, (int)len);
    tls_io_conn = NULL;
    if (n > 0) {
        if (c->rd_wants_wr) {
            c->rd_wants_wr = false;
            c->rd_ready = true;
        }
        return n;
    }
    e = tls_outcome(t->ssl, n);
    if (e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_WANT_READ) {
        c->wr_wants_rd = true;
        errno = EAGAIN;
        return -1;
    }
    t->failed = true;
    if (e == SSL_ERROR_SYSCALL) {
        int err = errno != 0 ? errno : EPIPE;

        ERR_clear_error(); /* it may hold the system error: leave none */
        errno = err;
    } else {
        char eb[256];

        log_debug("conn %llu: TLS write: %s", (unsigned long long)c->id,
                  tls_err_text(eb, sizeof(eb)));
        errno = EPROTO;
    }
    return -1;
}

uint64_t tls_handshake_due_ms(const struct conn *c)
{
    const struct tls_conn *t = c->tls;

    /* milliseconds, as conn.c's timeouts: in whole seconds a connection
     * accepted late in a second was closed by the tick just after it,
     * whatever the timeout */
    if (t == NULL || t->hs_done)
        return 0;
    return t->started + c->srv->opt.tls_handshake_timeout * 1000;
}

#else /* !HAVE_TLS: options.c refuses --tls-listen */

int tls_setup(struct server *srv)
{
    return srv->opt.tls_listen.n == 0 ? 0 : -1;
}
int tls_reload(struct server *srv)
{
    (void)srv;
    return 0;
}
void tls_teardown(struct server *srv)
{
    (void)srv;
}
int tls_conn_attach(struct conn *c)
{
    (void)c;
    return -1;
}
void tls_conn_free(struct conn *c)
{
    (void)c;
}
int tls_handshake(struct conn *c)
{
    (void)c;
    return -1;
}
ssize_t tls_recv(struct conn *c, void *buf, size_t len, bool *drained)
{
    (void)c;
    (void)drained;
    (void)buf;
    (void)len;
    errno = ENOTSUP;
    return -1;
}
ssize_t tls_ktls_recv(struct conn *c, void *buf, size_t len)
{
    (void)c;
    (void)buf;
    (void)len;
    errno = ENOTSUP;
    return -1;
}
ssize_t tls_send_pending(struct conn *c)
{
    (void)c;
    errno = ENOTSUP;
    return -1;
}
uint64_t tls_handshake_due_ms(const struct conn *c)
{
    (void)c;
    return 0;
}

#endif
