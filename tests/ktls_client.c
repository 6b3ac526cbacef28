/*
 * ktls_client.c - the client of tests/ktls_vm.sh: run inside a virtual
 * machine whose kernel has the tls module, against a daemon's
 * --tls-listen, it checks that kernel TLS engages on the server and that
 * the replies it produces are right.
 *
 * For each protocol version and cipher below it opens one connection
 * (OpenSSL in user space on this side: the client's own kTLS does not
 * matter) and, in the memcached text protocol:
 *   - (the last one) resumes the session of the one before, and sends
 *     its first request in the same segment as its Finished;
 *   - reads `stats` first: the difference to the last connection's counts
 *     tells which directions of this connection the server handed to the
 *     kernel (tls_ktls_send, tls_ktls_recv, tls_userspace);
 *   - sets and gets a 1 KiB value and a 1 MiB value (the 1 MiB GET is
 *     sent by the server with sendmsg() straight from the record under
 *     kTLS send), byte for byte;
 *   - sends 64 sets and 64 gets and a get of the 1 MiB value in one write
 *     (pipelined) and checks every reply byte;
 *   - sends a last get and close_notify in one segment: close_notify
 *     reaches the server as a TLS alert record (a control record under
 *     kTLS receive), after the get's reply it must be read and answered
 *     with the server's close_notify, not a reset or silence.
 * It asserts the kTLS directions that Linux (6.1: AES-GCM and
 * ChaCha20-Poly1305) and the OpenSSL in use offer: send under TLS 1.2 and
 * 1.3, receive under TLS 1.2, and under TLS 1.3 from OpenSSL 3.2 (3.0
 * hands only the sending side of TLS 1.3 to the kernel); it prints one
 * line per connection, and exits 0 when all holds, 1 otherwise.
 *
 * Usage: ktls_client HOST PORT CA-FILE
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#ifndef TCP_CORK /* Linux; FreeBSD's is TCP_NOPUSH */
#define TCP_CORK TCP_NOPUSH
#endif

#define SMALL 1024
#define LARGE (1024 * 1024)
#define NPIPE 64
#define PIPE_VLEN 100

struct suite {
    const char *version_name;
    int version;
    const char *cipher;  /* TLS 1.3 ciphersuite or TLS 1.2 cipher list */
    bool want_tx, want_rx;
    bool resume; /* resume the last session; the first request is sent
                    with the client's Finished in one segment */
};

static SSL_SESSION *last_session;

struct counts {
    long long conns, tx, rx, user;
};

static int failures;
static int peer_key_updates; /* KeyUpdate messages received */

/* counts the server's KeyUpdate handshake messages (type 24) */
static void msg_cb(int write_p, int version, int content_type,
                   const void *buf, size_t len, SSL *ssl, void *arg)
{
    (void)version;
    (void)ssl;
    (void)arg;
    if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
        ((const unsigned char *)buf)[0] == SSL3_MT_KEY_UPDATE)
        peer_key_updates++;
}

static void fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    printf("ktls_client: FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    ERR_print_errors_fp(stdout);
    failures++;
}

static int write_all(SSL *s, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        int k = SSL_write(s, p, n > (1u << 30) ? 1 << 30 : (int)n);

        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int read_exact(SSL *s, void *buf, size_t n)
{
    char *p = buf;

    while (n > 0) {
        int k = SSL_read(s, p, n > (1u << 30) ? 1 << 30 : (int)n);

        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Read until the reply ends with "END\r\n" (stats): into buf, NUL ended. */
static int read_until_end(SSL *s, char *buf, size_t cap)
{
    size_t len = 0;

    while (len + 1 < cap) {
        int k = SSL_read(s, buf + len, (int)(cap - 1 - len));

        if (k <= 0)
            return -1;
        len += (size_t)k;
        buf[len] = 0;
        if (len >= 5 && strcmp(buf + len - 5, "END\r\n") == 0)
            return 0;
    }
    return -1;
}

static long long stat_of(const char *text, const char *name)
{
    char key[96];
    const char *p;

    snprintf(key, sizeof(key), "STAT %s ", name);
    p = strstr(text, key);
    return p == NULL ? -1 : atoll(p + strlen(key));
}

static int read_stats(SSL *s, struct counts *c)
{
    static char buf[65536];

    if (write_all(s, "stats\r\n", 7) < 0 ||
        read_until_end(s, buf, sizeof(buf)) < 0)
        return -1;
    c->conns = stat_of(buf, "tls_connections");
    c->tx = stat_of(buf, "tls_ktls_send");
    c->rx = stat_of(buf, "tls_ktls_recv");
    c->user = stat_of(buf, "tls_userspace");
    return c->conns < 0 || c->tx < 0 || c->rx < 0 || c->user < 0 ? -1 : 0;
}

static void fill(char *v, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++)
        v[i] = (char)('a' + (i * 7 + seed) % 26);
}

/* set key to v (n bytes), expect STORED */
static int do_set(SSL *s, const char *key, const char *v, size_t n)
{
    char hdr[128], rep[16];
    int hl = snprintf(hdr, sizeof(hdr), "set %s 0 0 %zu\r\n", key, n);

    if (write_all(s, hdr, (size_t)hl) < 0 || write_all(s, v, n) < 0 ||
        write_all(s, "\r\n", 2) < 0 || read_exact(s, rep, 8) < 0)
        return -1;
    return memcmp(rep, "STORED\r\n", 8) == 0 ? 0 : -1;
}

/* Append the expected reply of "get key" for value v to want. */
static size_t want_get(char *want, const char *key, const char *v, size_t n)
{
    size_t l = (size_t)sprintf(want, "VALUE %s 0 %zu\r\n", key, n);

    memcpy(want + l, v, n);
    l += n;
    memcpy(want + l, "\r\nEND\r\n", 7);
    return l + 7;
}

static int do_get(SSL *s, const char *key, const char *v, size_t n,
                  char *want, char *got)
{
    char req[128];
    int rl = snprintf(req, sizeof(req), "get %s\r\n", key);
    size_t wl = want_get(want, key, v, n);

    if (write_all(s, req, (size_t)rl) < 0 || read_exact(s, got, wl) < 0)
        return -1;
    return memcmp(got, want, wl) == 0 ? 0 : -1;
}

static int connect_to(const char *host, int port)
{
    struct sockaddr_in a;
    struct timeval tmo = {10, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* a server that stops reading fails the test instead of hanging it */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
    return fd;
}

/* One connection with suite u; prev holds the counts after the last one. */
static void run_suite(const char *host, int port, const char *ca,
                      const struct suite *u, struct counts *prev,
                      char *large, char *want, char *got, char *pipe)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *s = NULL;
    struct counts now, end;
    char small[SMALL];
    bool tx, rx;
    size_t pl = 0, wl = 0;
    int fd = -1, i, r;

    if (ctx == NULL) {
        fail("SSL_CTX_new");
        return;
    }
    SSL_CTX_set_min_proto_version(ctx, u->version);
    SSL_CTX_set_max_proto_version(ctx, u->version);
    r = u->version == TLS1_3_VERSION
            ? SSL_CTX_set_ciphersuites(ctx, u->cipher)
            : SSL_CTX_set_cipher_list(ctx, u->cipher);
    if (r != 1 || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        fail("%s %s: cannot configure the client", u->version_name,
             u->cipher);
        goto out;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    fd = connect_to(host, port);
    s = SSL_new(ctx);
    if (fd >= 0 && u->resume) {
        /* TCP_CORK: the client's last handshake flight and the first
         * request leave together, so the server's OpenSSL reads the
         * request's record ahead with its Finished (before kTLS receive
         * is set up) and must hand it over */
        r = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &r, sizeof(r));
        if (last_session == NULL || SSL_set_session(s, last_session) != 1) {
            fail("%s %s: no session to resume", u->version_name, u->cipher);
            goto out;
        }
    }
    if (fd < 0 || s == NULL || SSL_set_fd(s, fd) != 1 ||
        SSL_set1_host(s, "localhost") != 1 || SSL_connect(s) != 1) {
        fail("%s %s: connect/handshake", u->version_name, u->cipher);
        goto out;
    }
    if (u->resume) {
        fill(small, sizeof(small), 1); /* as the last connection set it */
        wl = want_get(want, "ktls-small", small, sizeof(small));
        r = write_all(s, "get ktls-small\r\n", 16);
        i = 0;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &i, sizeof(i));
        if (!SSL_session_reused(s)) {
            fail("%s %s: the session was not resumed", u->version_name,
                 u->cipher);
            goto out;
        }
        if (r < 0 || read_exact(s, got, wl) < 0 || memcmp(got, want, wl) != 0) {
            fail("%s %s: the request sent with the Finished",
                 u->version_name, u->cipher);
            goto out;
        }
        wl = 0;
    }
    if (strcmp(SSL_get_cipher_name(s), u->cipher) != 0 &&
        u->version == TLS1_3_VERSION) {
        fail("%s: negotiated %s", u->cipher, SSL_get_cipher_name(s));
        goto out;
    }
    /* the server counts a connection when its handshake completes, before
     * it reads this request */
    if (read_stats(s, &now) < 0) {
        fail("%s %s: stats", u->version_name, u->cipher);
        goto out;
    }
    if (now.conns != prev->conns + 1) {
        fail("%s %s: tls_connections %lld, expected %lld", u->version_name,
             u->cipher, now.conns, prev->conns + 1);
        goto out;
    }
    tx = now.tx == prev->tx + 1;
    rx = now.rx == prev->rx + 1;
    if ((now.user == prev->user + 1) != (!tx || !rx))
        fail("%s %s: tls_userspace %lld -> %lld with kTLS send %d receive %d",
             u->version_name, u->cipher, prev->user, now.user, tx, rx);
    if (u->want_tx && !tx)
        fail("%s %s: the server did not use kTLS to send", u->version_name,
             u->cipher);
    if (u->want_rx && !rx)
        fail("%s %s: the server did not use kTLS to receive",
             u->version_name, u->cipher);

    fill(small, sizeof(small), 1);
    if (do_set(s, "ktls-small", small, sizeof(small)) < 0 ||
        do_get(s, "ktls-small", small, sizeof(small), want, got) < 0) {
        fail("%s %s: 1 KiB set/get", u->version_name, u->cipher);
        goto out;
    }
    /* TLS 1.3: a KeyUpdate that asks for the server's (RFC 8446, 4.6.3);
     * what follows must still be answered, under keys both sides agree on */
    peer_key_updates = 0;
    SSL_set_msg_callback(s, msg_cb);
    if (u->version == TLS1_3_VERSION &&
        (SSL_key_update(s, SSL_KEY_UPDATE_REQUESTED) != 1 ||
         do_get(s, "ktls-small", small, sizeof(small), want, got) < 0 ||
         do_get(s, "ktls-small", small, sizeof(small), want, got) < 0)) {
        fail("%s %s: a get after a requested KeyUpdate", u->version_name,
             u->cipher);
        goto out;
    }
    if (u->version == TLS1_3_VERSION)
        printf("ktls_client: %s %s: after a requested KeyUpdate: gets "
               "answered; KeyUpdate messages from the server: %d\n",
               u->version_name, u->cipher, peer_key_updates);
    fill(large, LARGE, (unsigned)u->version + (unsigned)strlen(u->cipher));
    if (do_set(s, "ktls-large", large, LARGE) < 0 ||
        do_get(s, "ktls-large", large, LARGE, want, got) < 0) {
        fail("%s %s: 1 MiB set/get", u->version_name, u->cipher);
        goto out;
    }
    /* pipelined: NPIPE sets, NPIPE gets and the large get in one write */
    for (i = 0; i < NPIPE; i++) {
        char v[PIPE_VLEN];

        fill(v, sizeof(v), (unsigned)i);
        pl += (size_t)sprintf(pipe + pl, "set ktls-p%d 0 0 %d\r\n", i,
                              PIPE_VLEN);
        memcpy(pipe + pl, v, sizeof(v));
        pl += sizeof(v);
        memcpy(pipe + pl, "\r\n", 2);
        pl += 2;
        memcpy(want + wl, "STORED\r\n", 8);
        wl += 8;
    }
    for (i = 0; i < NPIPE; i++) {
        char v[PIPE_VLEN], k[32];

        fill(v, sizeof(v), (unsigned)i);
        snprintf(k, sizeof(k), "ktls-p%d", i);
        pl += (size_t)sprintf(pipe + pl, "get %s\r\n", k);
        wl += want_get(want + wl, k, v, sizeof(v));
    }
    pl += (size_t)sprintf(pipe + pl, "get ktls-large\r\n");
    wl += want_get(want + wl, "ktls-large", large, LARGE);
    if (write_all(s, pipe, pl) < 0 || read_exact(s, got, wl) < 0 ||
        memcmp(got, want, wl) != 0) {
        fail("%s %s: pipelined batch (%zu bytes of replies)",
             u->version_name, u->cipher, wl);
        goto out;
    }
    if (read_stats(s, &end) < 0) {
        fail("%s %s: stats at the end", u->version_name, u->cipher);
        goto out;
    }
    *prev = end;
    SSL_SESSION_free(last_session);
    last_session = SSL_get1_session(s);
    /* a last get and close_notify in one segment (TCP_CORK): the server
     * reads the get's record, answers, and must read on to the alert
     * behind it (its read of the get was short only because the kernel
     * stops before a control record), then answer with its close_notify */
    r = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &r, sizeof(r));
    wl = want_get(want, "ktls-small", small, sizeof(small));
    if (write_all(s, "get ktls-small\r\n", 16) < 0 || SSL_shutdown(s) != 0) {
        fail("%s %s: get and close_notify", u->version_name, u->cipher);
        goto out;
    }
    r = 0;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &r, sizeof(r));
    if (read_exact(s, got, wl) < 0 || memcmp(got, want, wl) != 0) {
        fail("%s %s: the get before close_notify", u->version_name,
             u->cipher);
        goto out;
    }
    r = SSL_shutdown(s);
    if (r != 1)
        fail("%s %s: no close_notify from the server after ours "
             "(SSL_shutdown %d, error %d)",
             u->version_name, u->cipher, r, SSL_get_error(s, r));
    printf("ktls_client: %s %s%s: kernel TLS send %s, receive %s; 1 KiB, "
           "1 MiB, %d pipelined sets and gets, close_notify: ok\n",
           u->version_name, SSL_get_cipher_name(s),
           u->resume ? " (resumed, request with the Finished)" : "",
           tx ? "yes" : "no", rx ? "yes" : "no", NPIPE);
out:
    SSL_free(s);
    SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
}

/*
 * TLS 1.2 (kernel TLS receive on the server): a set whose data block
 * arrives all but its last byte, so the server's input buffer, sized to
 * the request, has room for one byte, then close_notify.  The server's
 * one-byte read meets the 2-byte alert: it must still see close_notify
 * (the end of the stream) and answer with its own, not take half an alert
 * for an unknown record and close without one.
 */
static void close_notify_one_byte_room(const char *host, int port,
                                       const char *ca, char *large)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    SSL *s = NULL;
    const size_t n = 100000; /* more than the server's first buffer */
    char hdr[64];
    int hl, fd = -1, r;

    if (ctx == NULL) {
        fail("SSL_CTX_new");
        return;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
    if (SSL_CTX_set_cipher_list(ctx, "ECDHE-ECDSA-AES128-GCM-SHA256") != 1 ||
        SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        fail("one-byte room: cannot configure the client");
        goto out;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    fd = connect_to(host, port);
    s = SSL_new(ctx);
    if (fd < 0 || s == NULL || SSL_set_fd(s, fd) != 1 ||
        SSL_set1_host(s, "localhost") != 1 || SSL_connect(s) != 1) {
        fail("one-byte room: connect/handshake");
        goto out;
    }
    fill(large, n + 1, 3);
    large[n] = '\r'; /* the block's "\r\n" without its '\n' */
    hl = snprintf(hdr, sizeof(hdr), "set ktls-edge 0 0 %zu\r\n", n);
    if (write_all(s, hdr, (size_t)hl) < 0 || write_all(s, large, n + 1) < 0) {
        fail("one-byte room: the partial set");
        goto out;
    }
    usleep(200000); /* the server reads it all: one byte of room left */
    if (SSL_shutdown(s) != 0) {
        fail("one-byte room: close_notify");
        goto out;
    }
    r = SSL_shutdown(s);
    if (r != 1)
        fail("one-byte room: no close_notify from the server after ours "
             "(SSL_shutdown %d, error %d)", r, SSL_get_error(s, r));
    else
        printf("ktls_client: close_notify read with one byte of room: "
               "ok\n");
out:
    SSL_free(s);
    SSL_CTX_free(ctx);
    if (fd >= 0)
        close(fd);
}

int main(int argc, char **argv)
{
    /* TLS 1.3 receive needs OpenSSL 3.2's record layer */
    bool rx13 = OpenSSL_version_num() >= 0x30200000L;
    const struct suite suites[] = {
        {"TLSv1.3", TLS1_3_VERSION, "TLS_AES_128_GCM_SHA256", true, rx13,
         false},
        {"TLSv1.3", TLS1_3_VERSION, "TLS_AES_256_GCM_SHA384", true, rx13,
         false},
        {"TLSv1.3", TLS1_3_VERSION, "TLS_CHACHA20_POLY1305_SHA256", true,
         rx13, false},
        {"TLSv1.2", TLS1_2_VERSION, "ECDHE-ECDSA-AES128-GCM-SHA256", true,
         true, false},
        {"TLSv1.2", TLS1_2_VERSION, "ECDHE-ECDSA-AES256-GCM-SHA384", true,
         true, false},
        {"TLSv1.2", TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305", true,
         true, false},
        {"TLSv1.2", TLS1_2_VERSION, "ECDHE-ECDSA-CHACHA20-POLY1305", true,
         true, true},
    };
    struct counts prev = {0, 0, 0, 0};
    char *large, *want, *got, *pipe;
    size_t i, cap = 2 * (size_t)LARGE + 65536;

    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST PORT CA-FILE\n", argv[0]);
        return 2;
    }
    large = malloc(LARGE);
    want = malloc(cap);
    got = malloc(cap);
    pipe = malloc(65536);
    if (large == NULL || want == NULL || got == NULL || pipe == NULL)
        return 2;
    for (i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
        run_suite(argv[1], atoi(argv[2]), argv[3], &suites[i], &prev, large,
                  want, got, pipe);
    close_notify_one_byte_room(argv[1], atoi(argv[2]), argv[3], large);
    if (prev.tx < 1 || prev.rx < 1)
        fail("over all connections tls_ktls_send %lld, tls_ktls_recv %lld: "
             "both must be at least 1", prev.tx, prev.rx);
    printf("ktls_client: stats tls_connections %lld tls_ktls_send %lld "
           "tls_ktls_recv %lld tls_userspace %lld\n",
           prev.conns, prev.tx, prev.rx, prev.user);
    SSL_SESSION_free(last_session);
    free(large);
    free(want);
    free(got);
    free(pipe);
    return failures == 0 ? 0 : 1;
}
