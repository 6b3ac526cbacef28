/*
 * test_tls_alloc.c - the zero-allocation GET test (tests/test_server_alloc.c)
 * over TLS with OpenSSL's user-space record layer (this is what runs where
 * the kernel has no kTLS, as on the machines the tests ran on).
 *
 * A connection of a TLS listener is driven in-process on a socketpair,
 * with an OpenSSL client on the other end; after the handshake and one
 * warm-up batch, a batch of native GET hits (values over CONN_COPY_MAX,
 * queued as references to their records) and a batch of text gets (small
 * values, copied into obuf) are read with SSL_read, answered, encrypted
 * with SSL_write and sent.  jemalloc's thread.allocated counts every
 * allocation of the thread, OpenSSL's included; OpenSSL's own are counted
 * apart through CRYPTO_set_mem_functions().  What holds, and is asserted:
 * the server allocates nothing of its own for a GET hit over TLS (thread
 * total minus OpenSSL's = 0), as over plain TCP.  OpenSSL 3.0's user-space
 * record layer does allocate, and free, a little per record (about 100
 * bytes measured, whatever the record's size): that is bounded here per
 * record, not zero, and docs/security.md says so.  User-space TLS also
 * copies: the value is encrypted from the record into OpenSSL's write
 * buffer (kernel TLS would send it with sendmsg from the record).  The
 * replies are checked byte for byte.  Without jemalloc (sanitizer builds)
 * there is no counter: SKIP.
 * Certificates are made with the openssl CLI in a temporary directory.
 *
 * With MDC_TLS_ALLOC_KTLS=1.3 or 1.2 (tests/ktls_vm.sh runs it so, in a
 * virtual machine whose kernel has the tls module) the connection is a TCP
 * one over loopback instead of a socketpair, the client speaks that TLS
 * version, and the test asserts kernel TLS: the server's socket encrypts
 * (ktls_tx) and, under TLS 1.2, decrypts (ktls_rx); the GET replies leave
 * without a single SSL_write() (counted by wrapping it at link time:
 * sent with sendmsg() straight from the records), and the server still
 * allocates nothing, OpenSSL included when both directions are the
 * kernel's.
 *
 * And, in every build: an error left in the thread's OpenSSL error queue
 * by someone else does not make the connection's next read that finds
 * nothing (SSL_ERROR_WANT_READ) a fatal error (tls.c, tls_outcome(): the
 * queue is not emptied before every SSL_read/SSL_write).
 */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <malloc.h>

#include <cmocka.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/core/alloc.h"
#include "server/net/conn.h"
#include "server/net/tls.h"
#include "server/net/uring.h"
#include "server/daemon.h"
#include "server/options.h"
#include "server/core/store.h"
#include "protocol/wire.h"

#define NKEYS 64
#define VLEN (CONN_COPY_MAX + 500) /* sent by reference */
#define NSMALL 16
#define SVLEN 32                   /* copied */

static struct server *srv;
static struct conn *c;
static SSL_CTX *cctx;
static SSL *cli;
static int peer;
static char dir[] = "/tmp/mdc-tlsalloc-XXXXXX";
static char certp[256], keyp[256];
/* MDC_TLS_ALLOC_KTLS: 0 (socketpair, user-space TLS), or the TLS version
 * whose kernel TLS is required (TLS1_2_VERSION, TLS1_3_VERSION) */
static int ktls_version;

/* SSL_write() calls while `counting` (-Wl,--wrap=SSL_write) */
int __real_SSL_write(SSL *s, const void *buf, int num);
int __wrap_SSL_write(SSL *s, const void *buf, int num);
static unsigned long ssl_writes;
static bool counting;

int __wrap_SSL_write(SSL *s, const void *buf, int num)
{
    if (counting)
        ssl_writes++;
    return __real_SSL_write(s, buf, num);
}

/* A connected TCP pair over loopback (kernel TLS needs TCP): sv[0] the
 * server's end, sv[1] the client's; both non-blocking, with buffers large
 * enough for one batch of replies (root: the FORCE options). */
static int tcp_pair(int sv[2])
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, big = 4 << 20;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0)
        return -1;
    sv[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (sv[1] < 0)
        return -1;
#ifdef SO_RCVBUFFORCE
    (void)setsockopt(sv[1], SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
#endif
    if (connect(sv[1], (struct sockaddr *)&a, sizeof(a)) < 0)
        return -1;
    sv[0] = accept(l, NULL, NULL);
    close(l);
    if (sv[0] < 0)
        return -1;
#ifdef SO_SNDBUFFORCE
    (void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
#endif
    (void)setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

/* OpenSSL's allocations on this thread, in usable bytes as jemalloc's
 * thread.allocated counts them (size classes) */
static __thread uint64_t ossl_bytes;

static void *cnt_malloc(size_t n, const char *file, int line)
{
    void *p = malloc(n);

    (void)file;
    (void)line;
    if (p != NULL)
        ossl_bytes += malloc_usable_size(p);
    return p;
}

static void *cnt_realloc(void *o, size_t n, const char *file, int line)
{
    void *p = realloc(o, n);

    (void)file;
    (void)line;
    if (p != NULL)
        ossl_bytes += malloc_usable_size(p);
    return p;
}

static void cnt_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    free(p);
}

/* Bytes OpenSSL may allocate per record (measured about 100 on 3.0). */
#define OSSL_PER_RECORD 256u

static int setup(void **state)
{
    struct options o;
    char cmd[1024];
    int sv[2], i;

    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(certp, sizeof(certp), "%s/c.pem", dir);
    snprintf(keyp, sizeof(keyp), "%s/k.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
             "-nodes -keyout %s -out %s -days 2 -subj /CN=localhost "
             ">/dev/null 2>&1",
             keyp, certp);
    if (system(cmd) != 0)
        return -1;
    options_defaults(&o);
    o.net_threads = 0; /* the calling thread is the worker */
    o.payload_threads = 0;
    o.memory_mb = 64;
    o.reqs_per_event = 1000000;
    o.tls_listen.v = malloc(sizeof(*o.tls_listen.v)); /* options_teardown */
    if (o.tls_listen.v == NULL)
        return -1;
    o.tls_listen.v[0] = "127.0.0.1:0"; /* not bound: tls_setup needs one */
    o.tls_listen.n = 1;
    o.tls_cert = certp;
    o.tls_key = keyp;
    srv = server_setup(&o);
    if (srv == NULL || server_tls_setup(srv) < 0)
        return -1;
    if (ktls_version != 0 ? tcp_pair(sv) < 0
                          : socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    peer = sv[1];
    atomic_fetch_add(&srv->nconns, 1);
    c = conn_setup(srv, &srv->workers[0], sv[0],
                   ktls_version != 0 ? AF_INET : AF_UNIX);
    if (c == NULL || tls_conn_attach(c) < 0 || conn_adopt(c) < 0)
        return -1;
    /* TLS runs over the backend in force: io_uring (the default where the
     * kernel allows it, or MDC_TEST_IO=uring) puts the connection on the
     * ring, as it does a plain one (test_server_alloc) */
    if (srv->io_uring != uring_conn_ringed(c) ||
        (getenv("MDC_TEST_IO") != NULL &&
         strcmp(getenv("MDC_TEST_IO"), "uring") == 0 &&
         !uring_conn_ringed(c))) {
        printf("the TLS connection is not on the backend in force (%s)\n",
               srv->io_uring ? "io_uring" : "epoll");
        return -1;
    }
    printf("backend: %s\n", srv->io_uring ? "io_uring" : "epoll");
    cctx = SSL_CTX_new(TLS_client_method());
    if (ktls_version != 0) {
        SSL_CTX_set_min_proto_version(cctx, ktls_version);
        SSL_CTX_set_max_proto_version(cctx, ktls_version);
        /* AES-GCM: the cipher kernel TLS takes in both versions */
        (void)SSL_CTX_set_ciphersuites(cctx, "TLS_AES_128_GCM_SHA256");
        (void)SSL_CTX_set_cipher_list(cctx, "ECDHE-ECDSA-AES128-GCM-SHA256");
    }
    cli = SSL_new(cctx);
    SSL_set_fd(cli, peer);
    SSL_set_connect_state(cli);
    for (i = 0; i < 100 && !c->tls->hs_done; i++) {
        (void)SSL_do_handshake(cli);
        conn_on_io(c, EV_READ | EV_WRITE);
    }
    if (!c->tls->hs_done || SSL_do_handshake(cli) != 1)
        return -1;
    printf("%s %s, kernel TLS send %s, receive %s\n", SSL_get_version(cli),
           SSL_get_cipher_name(cli), c->tls->ktls_tx ? "yes" : "no",
           c->tls->ktls_rx ? "yes" : "no");
    if (ktls_version != 0 && !c->tls->ktls_tx) {
        printf("MDC_TLS_ALLOC_KTLS: the server did not get kernel TLS to "
               "send\n");
        return -1;
    }
    if (ktls_version == TLS1_2_VERSION && !c->tls->ktls_rx) {
        printf("MDC_TLS_ALLOC_KTLS: the server did not get kernel TLS to "
               "receive\n");
        return -1;
    }
    for (i = 0; i < NKEYS; i++) {
        char k[32], v[VLEN];
        struct store_item it = {0};

        snprintf(k, sizeof(k), "alloc-key-%04d", i);
        memset(v, 'a' + i % 26, sizeof(v));
        it.key = k;
        it.klen = (uint32_t)strlen(k);
        it.value = v;
        it.vlen = VLEN;
        if (store_put(srv->store, STORE_SET, &it, NULL) != ST_OK)
            return -1;
    }
    for (i = 0; i < NSMALL; i++) {
        char k[32], v[SVLEN];
        struct store_item it = {0};

        snprintf(k, sizeof(k), "small-%02d", i);
        memset(v, 'A' + i, sizeof(v));
        it.key = k;
        it.klen = (uint32_t)strlen(k);
        it.value = v;
        it.vlen = SVLEN;
        if (store_put(srv->store, STORE_SET, &it, NULL) != ST_OK)
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    conn_teardown(c);
    SSL_free(cli);
    SSL_CTX_free(cctx);
    close(peer);
    options_teardown(&srv->opt);
    server_teardown(srv);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Read exactly n decrypted bytes (the server side has already sent). */
static void cli_read(uint8_t *buf, size_t n)
{
    size_t got = 0;
    int spins = 0;

    while (got < n && spins < 100000) {
        int k = SSL_read(cli, buf + got, (int)(n - got));

        if (k > 0)
            got += (size_t)k;
        else
            spins++;
    }
    assert_int_equal(got, n);
}

/* Send req over TLS, let the server answer in one conn_on_io(), return
 * the bytes the server allocated of its own meanwhile (and OpenSSL's in
 * *ossl); the reply is read into rbuf. */
static uint64_t exchange(const void *req, size_t rl, uint8_t *rbuf,
                         size_t want, uint64_t *ossl)
{
    uint64_t a0, a1, o0;

    assert_int_equal(SSL_write(cli, req, (int)rl), (int)rl);
    a0 = mdc_thread_allocated();
    o0 = ossl_bytes;
    ssl_writes = 0;
    counting = true;
    conn_on_io(c, EV_READ | EV_WRITE);
    counting = false;
    a1 = mdc_thread_allocated();
    *ossl = ossl_bytes - o0;
    /* kernel TLS sends: the replies leave by send()/sendmsg(), from the
     * records, never through SSL_write(); user-space TLS needs it */
    if (c->tls->ktls_tx)
        assert_int_equal(ssl_writes, 0);
    else
        assert_true(ssl_writes > 0);
    /* both directions in the kernel: OpenSSL is not called at all */
    if (c->tls->ktls_tx && c->tls->ktls_rx)
        assert_int_equal(*ossl, 0);
    assert_int_equal(c->opending, 0); /* all of it went out */
    cli_read(rbuf, want);
    return a1 - a0 - *ossl;
}

/* Records one exchange moves: the request's, and the reply's (16 KiB of
 * plaintext each at most, one more for a part-filled gather). */
static uint64_t records_of(size_t rl, size_t want)
{
    return (rl + 16383) / 16384 + (want + 16383) / 16384 + 1;
}

static bool have_counter; /* jemalloc: the allocation tests can count */

static void test_native_get_hits_allocate_nothing(void **state)
{
    static uint8_t batch[NKEYS * (WIRE_HDR_LEN + 32)];
    static uint8_t rbuf[NKEYS * (WIRE_HDR_LEN + VLEN)];
    size_t bl = 0, want = (size_t)NKEYS * (WIRE_HDR_LEN + VLEN);
    int i, round;

    (void)state;
    if (!have_counter)
        skip();
    for (i = 0; i < NKEYS; i++) {
        struct wire_hdr h;
        char k[32];

        snprintf(k, sizeof(k), "alloc-key-%04d", i);
        wire_hdr_request(&h, WIRE_OP_GET);
        h.klen = (uint16_t)strlen(k);
        h.opaque = (uint32_t)i;
        bl += (size_t)wire_compose(batch + bl, sizeof(batch) - bl, &h, NULL,
                                   k, NULL);
    }
    uint64_t ossl;

    (void)exchange(batch, bl, rbuf, want, &ossl); /* warm-up: buffers */
    for (round = 0; round < 20; round++) {
        uint64_t bytes = exchange(batch, bl, rbuf, want, &ossl);
        size_t off = 0;

        if (bytes != 0)
            fail_msg("round %d: the server allocated %llu bytes for %d GET "
                     "hits over TLS", round, (unsigned long long)bytes, NKEYS);
        if (round == 0)
            printf("OpenSSL allocated %llu bytes for %llu records\n",
                   (unsigned long long)ossl,
                   (unsigned long long)records_of(bl, want));
        if (ossl > OSSL_PER_RECORD * records_of(bl, want))
            fail_msg("round %d: OpenSSL allocated %llu bytes", round,
                     (unsigned long long)ossl);
        for (i = 0; i < NKEYS; i++) {
            struct wire_msg m;
            ssize_t n = wire_parse(rbuf + off, want - off, &m, SIZE_MAX);

            assert_true(n > 0);
            assert_int_equal(m.hdr.status, 0);
            assert_int_equal(m.hdr.opaque, (uint32_t)i);
            assert_int_equal(m.hdr.vlen, VLEN);
            assert_int_equal(m.value[0], 'a' + i % 26);
            assert_int_equal(m.value[VLEN - 1], 'a' + i % 26);
            off += (size_t)n;
        }
        assert_int_equal(off, want);
    }
}

static void test_text_gets_allocate_nothing(void **state)
{
    char req[NSMALL * 24], want[NSMALL * 64];
    uint8_t got[NSMALL * 64];
    size_t rl = 0, wl = 0, i;
    int round;

    (void)state;
    if (!have_counter)
        skip();
    for (i = 0; i < NSMALL; i++) {
        char v[SVLEN + 1];

        memset(v, (int)('A' + i), SVLEN);
        v[SVLEN] = 0;
        rl += (size_t)snprintf(req + rl, sizeof(req) - rl,
                               "get small-%02zu\r\n", i);
        wl += (size_t)snprintf(want + wl, sizeof(want) - wl,
                               "VALUE small-%02zu 0 %d\r\n%s\r\nEND\r\n", i,
                               SVLEN, v);
    }
    /* the connection speaks the native protocol already: a new one would
     * need a handshake; text detection is per connection, so switch by
     * hand as test_server_alloc does */
    uint64_t ossl;

    c->proto = NULL;
    (void)exchange(req, rl, got, wl, &ossl);
    for (round = 0; round < 10; round++) {
        uint64_t bytes;

        c->proto = NULL; /* detected again from the first byte */
        bytes = exchange(req, rl, got, wl, &ossl);
        if (bytes != 0)
            fail_msg("round %d: the server allocated %llu bytes for %d text "
                     "gets over TLS", round, (unsigned long long)bytes,
                     NSMALL);
        if (ossl > OSSL_PER_RECORD * records_of(rl, wl))
            fail_msg("round %d: OpenSSL allocated %llu bytes", round,
                     (unsigned long long)ossl);
        assert_memory_equal(got, want, wl);
    }
}

/* A stale error in the thread's queue (another OpenSSL user's, raised
 * here by hand) while the connection reads and finds nothing: it waits,
 * the queue is emptied, and it answers the next request. */
static void test_stale_error_is_not_fatal(void **state)
{
    static const char req[] = "get small-03\r\n";
    char want[64], v[SVLEN + 1];
    uint8_t got[64];
    unsigned n0 = atomic_load(&srv->nconns);
    size_t wl;
    int round;

    (void)state;
    if (c->tls->ktls_rx) /* no SSL_read at all */
        skip();
    memset(v, 'A' + 3, SVLEN);
    v[SVLEN] = 0;
    wl = (size_t)snprintf(want, sizeof(want),
                          "VALUE small-03 0 %d\r\n%s\r\nEND\r\n", SVLEN, v);
    for (round = 0; round < 3; round++) {
        ERR_raise(ERR_LIB_EVP, ERR_R_MALLOC_FAILURE);
        conn_on_io(c, EV_READ); /* nothing sent: SSL_read wants more */
        assert_int_equal(atomic_load(&srv->nconns), n0); /* not closed */
        assert_false(c->tls->failed);
        assert_int_equal(ERR_peek_error(), 0);
        c->proto = NULL; /* text, detected again from the first byte */
        assert_int_equal(SSL_write(cli, req, (int)strlen(req)),
                         (int)strlen(req));
        ERR_raise(ERR_LIB_EVP, ERR_R_MALLOC_FAILURE); /* before the read */
        conn_on_io(c, EV_READ | EV_WRITE);
        assert_int_equal(atomic_load(&srv->nconns), n0);
        cli_read(got, wl);
        assert_memory_equal(got, want, wl);
        ERR_clear_error();
    }
}

int main(void)
{
    const char *kv = getenv("MDC_TLS_ALLOC_KTLS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_native_get_hits_allocate_nothing),
        cmocka_unit_test(test_text_gets_allocate_nothing),
        cmocka_unit_test(test_stale_error_is_not_fatal),
    };

    if (kv != NULL && strcmp(kv, "1.3") == 0)
        ktls_version = TLS1_3_VERSION;
    else if (kv != NULL && strcmp(kv, "1.2") == 0)
        ktls_version = TLS1_2_VERSION;
    else if (kv != NULL && kv[0] != 0 && strcmp(kv, "0") != 0) {
        printf("MDC_TLS_ALLOC_KTLS=%s: 1.3, 1.2 or 0\n", kv);
        return 1;
    }
    /* before OpenSSL's first allocation */
    if (!CRYPTO_set_mem_functions(cnt_malloc, cnt_realloc, cnt_free)) {
        printf("cannot count OpenSSL's allocations\n");
        return 1;
    }
    have_counter = mdc_alloc_counts_threads();
    if (!have_counter)
        printf("SKIP (the allocation tests): %s has no per-thread "
               "allocation counter; the zero-allocation GET test needs the "
               "jemalloc build\n",
               mdc_allocator_name());
    return cmocka_run_group_tests(tests, setup, teardown);
}
