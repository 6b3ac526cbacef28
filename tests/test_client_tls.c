/*
 * test_client_tls.c - libmdcached over TLS (mdc_set_tls, mdc_pool_set_tls)
 * against real processes: plain mdcached daemons behind TLS endpoints
 * (tls_endpoint.h: socat, or the server's own --tls-listen), with
 * certificates made at test time.  Covers records and tags over TLS,
 * verification on by default, wrong names, mutual TLS, the insecure
 * opt-out, a TLS client on a plain port, the handshake timeout, idle
 * connections (session tickets, a server gone), a pool, and bad settings.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mdcached.h"
#include "server_client.h"
#include "tls_endpoint.h"

static struct tls_certs certs;
static struct tsrv srv_a, srv_b;
static struct tls_ep ep_ok, ep_self, ep_other, ep_mtls, ep_ok_b;

/* Endpoints and daemons a test starts for itself: stopped by the group
 * teardown too, should an assertion end the test first. */
static struct tls_ep *local_eps[4];
static struct tsrv *local_srvs[2];

static void local_ep(struct tls_ep *e)
{
    for (size_t i = 0; i < 4; i++)
        if (local_eps[i] == NULL || local_eps[i] == e) {
            local_eps[i] = e;
            return;
        }
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int group_setup(void **state)
{
    (void)state;
    if (tls_certs_make(&certs) != 0)
        return -1;
    if (tsrv_start(&srv_a, NULL) != 0 || tsrv_start(&srv_b, NULL) != 0)
        return -1;
    if (tls_ep_start(&ep_ok, certs.dir, srv_a.port, certs.srv_cert,
                     certs.srv_key, NULL, NULL) != 0 ||
        tls_ep_start(&ep_self, certs.dir, srv_a.port, certs.self_cert,
                     certs.self_key, NULL, NULL) != 0 ||
        tls_ep_start(&ep_other, certs.dir, srv_a.port, certs.other_cert,
                     certs.other_key, NULL, NULL) != 0 ||
        tls_ep_start(&ep_mtls, certs.dir, srv_a.port, certs.srv_cert,
                     certs.srv_key, certs.cli_ca, NULL) != 0 ||
        tls_ep_start(&ep_ok_b, certs.dir, srv_b.port, certs.srv_cert,
                     certs.srv_key, NULL, NULL) != 0)
        return -1;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tls_ep_stop(&ep_ok);
    tls_ep_stop(&ep_self);
    tls_ep_stop(&ep_other);
    tls_ep_stop(&ep_mtls);
    tls_ep_stop(&ep_ok_b);
    for (size_t i = 0; i < 4; i++)
        if (local_eps[i] != NULL)
            tls_ep_stop(local_eps[i]);
    for (size_t i = 0; i < 2; i++)
        if (local_srvs[i] != NULL && local_srvs[i]->pid > 0)
            tsrv_stop(local_srvs[i]);
    tsrv_stop(&srv_a);
    tsrv_stop(&srv_b);
    tls_certs_remove(&certs);
    return 0;
}

/* A handle on 127.0.0.1 (or host) : port with TLS cfg (NULL: plain). */
static mdc_t *handle(const char *host, int port,
                     const struct mdc_tls_config *cfg)
{
    mdc_t *m = mdc_create_tcp(host ? host : "127.0.0.1", (uint16_t)port);

    assert_non_null(m);
    /* hang ceilings, not bounds: a handshake on a loaded machine took
     * over the 2 s this was (the CI's busy step) */
    assert_int_equal(mdc_set_timeouts(m, 30000, 30000), MDC_OK);
    if (cfg != NULL)
        assert_int_equal(mdc_set_tls(m, cfg), MDC_OK);
    return m;
}

static struct mdc_tls_config with_ca(void)
{
    struct mdc_tls_config c = {0};

    c.ca_file = certs.ca;
    return c;
}

/* The operation fails with MDC_ERR_TLS and the message holds want. */
static void expect_tls_error(mdc_t *m, int rc, const char *want)
{
    if (rc != MDC_ERR_TLS)
        fail_msg("want MDC_ERR_TLS, got %d: %s", rc, mdc_errstr(m));
    assert_int_equal(mdc_error(m), MDC_ERR_TLS);
    if (want != NULL && strstr(mdc_errstr(m), want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", mdc_errstr(m), want);
}

/* expr (on handle m) succeeds, else its message is shown */
#define OK(m, expr)                                                            \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != MDC_OK)                                                     \
            fail_msg("%s: %d: %s", #expr, rc_, mdc_errstr(m));                 \
    } while (0)

static uint64_t stat_of(mdc_t *m, const char *name)
{
    char *text = NULL;
    uint64_t v = 0;

    OK(m, mdc_stats(m, NULL, &text, NULL));
    assert_int_equal(mdc_stats_u64(text, name, &v), MDC_OK);
    free(text);
    return v;
}

static void test_records_and_tags(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    mdc_t *m = handle(NULL, ep_ok.port, &cfg);
    struct mdc_tag tags[2] = {{7, 1}, {8, 2}};
    struct mdc_item *it = NULL;
    struct mdc_itemset set = {0};
    uint64_t deleted = 0;
    char key[32];

    (void)state;
    OK(m, mdc_set(m, "k1", 2, "hello", 5, 9, 0, tags, 2));
    assert_int_equal(mdc_get(m, "k1", 2, &it), MDC_OK);
    assert_int_equal(it->vlen, 5);
    assert_memory_equal(it->value, "hello", 5);
    assert_int_equal(it->flags, 9);
    assert_int_equal(it->ntags, 2);
    mdc_item_free(it);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "tk%d", i);
        assert_int_equal(mdc_set(m, key, strlen(key), key, strlen(key), 0, 0,
                                 &tags[1], 1),
                         MDC_OK);
    }
    int32_t tv = 2;
    assert_int_equal(mdc_get_by_tag(m, 8, &tv, 1, &set), MDC_OK);
    assert_int_equal(set.count, 51);
    mdc_itemset_free(&set);

    /* a pipelined mget */
    const void *keys[50];
    size_t klens[50];
    struct mdc_item *out[50];
    char kbuf[50][8];
    for (int i = 0; i < 50; i++) {
        snprintf(kbuf[i], sizeof(kbuf[i]), "tk%d", i);
        keys[i] = kbuf[i];
        klens[i] = strlen(kbuf[i]);
    }
    assert_int_equal(mdc_mget(m, 50, keys, klens, out), MDC_OK);
    for (int i = 0; i < 50; i++) {
        assert_non_null(out[i]);
        assert_memory_equal(out[i]->value, kbuf[i], klens[i]);
        mdc_item_free(out[i]);
    }
    assert_int_equal(mdc_del_by_tag(m, 8, &tv, 1, &deleted), MDC_OK);
    assert_int_equal(deleted, 51);

    /* 900 KiB each way: many TLS records, partial writes */
    size_t big = 900u << 10; /* under the default item limit */
    char *v = malloc(big);
    assert_non_null(v);
    for (size_t i = 0; i < big; i++)
        v[i] = (char)(i * 7 + (i >> 13));
    assert_int_equal(mdc_set(m, "big", 3, v, big, 0, 0, NULL, 0), MDC_OK);
    assert_int_equal(mdc_get(m, "big", 3, &it), MDC_OK);
    assert_int_equal(it->vlen, big);
    assert_memory_equal(it->value, v, big);
    mdc_item_free(it);
    free(v);
    mdc_destroy(m);
}

/* A zeroed config: the system's CAs, which do not know the test CA. */
static void test_verification_on_by_default(void **state)
{
    struct mdc_tls_config cfg = {0};
    struct mdc_tls_config ca = with_ca();
    mdc_t *m = handle(NULL, ep_ok.port, &cfg);
    int rc;

    (void)state;
    expect_tls_error(m, mdc_noop(m), "certificate refused");
    assert_string_equal(mdc_strerror(MDC_ERR_TLS),
                        "TLS handshake or certificate verification failed");
    mdc_destroy(m);
    /* mdc_connect() reports it too */
    m = handle(NULL, ep_ok.port, &cfg);
    expect_tls_error(m, mdc_connect(m), "certificate refused");
    mdc_destroy(m);
    /* a self-signed server certificate, with the test CA trusted */
    m = handle(NULL, ep_self.port, &ca);
    rc = mdc_set(m, "x", 1, "y", 1, 0, 0, NULL, 0);
    expect_tls_error(m, rc, "self-signed");
    mdc_destroy(m);
    /* an expired certificate of the trusted CA */
    static struct tls_ep ep;
    local_ep(&ep);
    assert_int_equal(tls_ep_start(&ep, certs.dir, srv_a.port, certs.exp_cert,
                                  certs.exp_key, NULL, NULL),
                     0);
    m = handle(NULL, ep.port, &ca);
    expect_tls_error(m, mdc_noop(m), "certificate has expired");
    mdc_destroy(m);
    tls_ep_stop(&ep);
}

static void test_server_name(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    mdc_t *m;

    (void)state;
    /* the name verified is the handle's host by default: an IP ... */
    m = handle(NULL, ep_other.port, &cfg);
    expect_tls_error(m, mdc_noop(m), "IP address mismatch");
    mdc_destroy(m);
    /* ... or a DNS name */
    m = handle("localhost", ep_ok.port, &cfg);
    assert_int_equal(mdc_noop(m), MDC_OK);
    mdc_destroy(m);
    /* server_name overrides it, both ways */
    cfg.server_name = "wrong.example";
    m = handle(NULL, ep_ok.port, &cfg);
    expect_tls_error(m, mdc_noop(m), "hostname mismatch");
    mdc_destroy(m);
    cfg.server_name = "other.example";
    m = handle(NULL, ep_other.port, &cfg);
    assert_int_equal(mdc_noop(m), MDC_OK);
    mdc_destroy(m);
}

static void test_mutual_tls(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    mdc_t *m;

    (void)state;
    /* the server wants a client certificate: none */
    m = handle(NULL, ep_mtls.port, &cfg);
    expect_tls_error(m, mdc_noop(m), NULL);
    mdc_destroy(m);
    /* one its CA did not sign */
    cfg.cert_file = certs.srv_cert;
    cfg.key_file = certs.srv_key;
    m = handle(NULL, ep_mtls.port, &cfg);
    expect_tls_error(m, mdc_noop(m), NULL);
    mdc_destroy(m);
    /* the right one */
    cfg.cert_file = certs.cli_cert;
    cfg.key_file = certs.cli_key;
    m = handle(NULL, ep_mtls.port, &cfg);
    OK(m, mdc_set(m, "mtls", 4, "ok", 2, 0, 0, NULL, 0));
    struct mdc_item *it = NULL;
    assert_int_equal(mdc_get(m, "mtls", 4, &it), MDC_OK);
    assert_memory_equal(it->value, "ok", 2);
    mdc_item_free(it);
    mdc_destroy(m);
}

static void test_insecure(void **state)
{
    struct mdc_tls_config cfg = {0};
    mdc_t *m;

    (void)state;
    cfg.flags = MDC_TLS_INSECURE;
    m = handle(NULL, ep_self.port, &cfg);
    assert_int_equal(mdc_set(m, "ins", 3, "1", 1, 0, 0, NULL, 0), MDC_OK);
    assert_int_equal(mdc_noop(m), MDC_OK);
    mdc_destroy(m);
    m = handle(NULL, ep_other.port, &cfg); /* the name is not checked */
    assert_int_equal(mdc_noop(m), MDC_OK);
    mdc_destroy(m);
}

/* TLS to a plain port: a clean refusal (MDC_ERR_TLS, not the I/O
 * timeout's MDC_ERR_TIMEOUT: how soon is not a bound, a busy machine is
 * slow); the daemon lives on. */
static void test_plain_port(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    mdc_t *m = handle(NULL, srv_a.port, &cfg);
    double t0 = now_s();

    (void)state;
    expect_tls_error(m, mdc_noop(m), "TLS handshake failed");
    print_message("refused after %.3f s\n", now_s() - t0);
    mdc_destroy(m);
    /* the same handle class back to plain works */
    m = handle(NULL, srv_a.port, &cfg);
    assert_int_equal(mdc_set_tls(m, NULL), MDC_OK);
    assert_int_equal(mdc_noop(m), MDC_OK);
    mdc_destroy(m);
}

/* A server that accepts TCP but never answers the handshake: the connect
 * timeout (300 ms) bounds the handshake, not the I/O timeout (60 s here,
 * so that the two cannot be confused on a busy machine): never before
 * 0.25 s, and well before the I/O timeout (30 s, a hang's ceiling). */
static void test_handshake_timeout(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    double t0, dt;

    (void)state;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    mdc_t *m = mdc_create_tcp("127.0.0.1", ntohs(sa.sin_port));
    assert_int_equal(mdc_set_timeouts(m, 300, 60000), MDC_OK);
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_OK);
    t0 = now_s();
    assert_int_equal(mdc_noop(m), MDC_ERR_TIMEOUT);
    dt = now_s() - t0;
    assert_non_null(strstr(mdc_errstr(m), "TLS handshake"));
    print_message("timed out after %.3f s (connect timeout 0.3 s)\n", dt);
    if (dt < 0.25 || dt > 30.0)
        fail_msg("timed out after %.3f s, want about 0.3 s", dt);
    mdc_destroy(m);
    close(lfd);
}

/* An idle TLS connection: mdc_check() keeps it (the server's session
 * tickets arrive after the handshake and are not data), and closes it
 * once the server is gone. */
static void test_idle_check(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    static struct tls_ep ep;
    mdc_t *m, *m2, *watch;
    uint64_t c0, c1;
    int rc;

    (void)state;
    local_ep(&ep);
    assert_int_equal(tls_ep_start(&ep, certs.dir, srv_b.port, certs.srv_cert,
                                  certs.srv_key, NULL, NULL),
                     0);
    watch = handle(NULL, ep.port, &cfg); /* counts the others */
    OK(watch, mdc_noop(watch));
    c0 = stat_of(watch, "total_connections");
    m = handle(NULL, ep.port, &cfg);
    assert_int_equal(mdc_connect(m), MDC_OK);
    usleep(200 * 1000);
    assert_int_equal(mdc_check(m), MDC_OK);
    assert_int_equal(mdc_noop(m), MDC_OK);
    assert_int_equal(mdc_check(m), MDC_OK);
    assert_int_equal(mdc_noop(m), MDC_OK);
    c1 = stat_of(watch, "total_connections");
    assert_int_equal(c1, c0 + 1); /* one connection, kept */
    m2 = handle(NULL, ep.port, &cfg);
    OK(m2, mdc_noop(m2));
    tls_ep_stop(&ep);
    usleep(100 * 1000);
    assert_int_equal(mdc_check(m), MDC_ERR_IO);
    /* a connection lost is MDC_ERR_IO over TLS too (not a TLS error) */
    rc = mdc_noop(m2);
    if (rc != MDC_ERR_IO)
        fail_msg("want MDC_ERR_IO, got %d: %s", rc, mdc_errstr(m2));
    mdc_destroy(m2);
    mdc_destroy(m);
    mdc_destroy(watch);
}

static void test_pool(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    struct mdc_tls_config sys = {0};
    mdc_pool_t *p = mdc_pool_create();
    char spec[64], key[32];
    struct mdc_tag tag = {42, 4242};
    struct mdc_itemset set = {0};
    int rcs[2];

    (void)state;
    assert_non_null(p);
    snprintf(spec, sizeof(spec), "127.0.0.1:%d", ep_ok.port);
    assert_true(mdc_pool_add(p, spec, 1) >= 0);
    assert_int_equal(mdc_pool_set_tls(p, &cfg), MDC_OK);
    /* a server added later gets the pool's TLS settings */
    snprintf(spec, sizeof(spec), "127.0.0.1:%d", ep_ok_b.port);
    assert_true(mdc_pool_add(p, spec, 1) >= 0);
    for (int i = 0; i < 40; i++) {
        struct mdc_kv kv = {0};
        snprintf(key, sizeof(key), "pk%d", i);
        kv.key = key;
        kv.klen = strlen(key);
        kv.value = key;
        kv.vlen = strlen(key);
        kv.tags = &tag;
        kv.ntags = 1;
        int rc = mdc_pool_store(p, MDC_SET, &kv, NULL);
        if (rc != MDC_OK)
            fail_msg("store %s: %s", key, mdc_errstr(mdc_pool_pick(p, key,
                                                                 kv.klen)));
    }
    /* both servers hold some (each asked alone, over TLS) */
    int32_t tv = 4242;
    struct mdc_itemset sa = {0}, sb = {0};
    OK(mdc_pool_server(p, 0),
       mdc_get_by_tag(mdc_pool_server(p, 0), 42, &tv, 1, &sa));
    OK(mdc_pool_server(p, 1),
       mdc_get_by_tag(mdc_pool_server(p, 1), 42, &tv, 1, &sb));
    assert_true(sa.count > 0 && sb.count > 0);
    assert_int_equal(sa.count + sb.count, 40);
    mdc_itemset_free(&sa);
    mdc_itemset_free(&sb);
    /* fan-out over TLS */
    assert_int_equal(mdc_pool_get_by_tag(p, 42, &tv, 1, &set, rcs), MDC_OK);
    assert_int_equal(set.count, 40);
    mdc_itemset_free(&set);
    /* the system CAs: every server refuses, each says why */
    assert_int_equal(mdc_pool_set_tls(p, &sys), MDC_OK);
    assert_int_equal(mdc_pool_get_by_tag(p, 42, &tv, 1, &set, rcs),
                     MDC_ERR_TLS);
    assert_int_equal(rcs[0], MDC_ERR_TLS);
    assert_int_equal(rcs[1], MDC_ERR_TLS);
    assert_non_null(strstr(mdc_pool_errstr(p), "certificate refused"));
    mdc_itemset_free(&set);
    mdc_pool_destroy(p);
}

static void test_bad_settings(void **state)
{
    struct mdc_tls_config cfg = {0};
    mdc_t *m = mdc_create_tcp("127.0.0.1", (uint16_t)ep_ok.port);
    int dummy;

    (void)state;
    cfg.ca_file = "/nonexistent/ca.pem";
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_TLS);
    assert_non_null(strstr(mdc_errstr(m), "/nonexistent/ca.pem"));
    cfg = with_ca();
    cfg.key_file = certs.cli_key;
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_ARG);
    cfg.cert_file = certs.srv_cert; /* the wrong key for it */
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_TLS);
    if (strstr(mdc_errstr(m), "mismatch") == NULL)
        fail_msg("%s", mdc_errstr(m));
    cfg = with_ca();
    cfg.cert_file = "/nonexistent/cert.pem";
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_TLS);
    assert_non_null(strstr(mdc_errstr(m), "cannot load the certificate"));
    /* an SNI name is 1..253 bytes */
    char longname[255];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    cfg = with_ca();
    cfg.server_name = "";
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_ARG);
    assert_non_null(strstr(mdc_errstr(m), "bad server_name"));
    cfg.server_name = longname;
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_ARG);
    cfg = with_ca();
    cfg.reserved[0] = &dummy;
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_ARG);
    cfg = with_ca();
    cfg.flags = 0x80;
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_ERR_ARG);
    assert_int_equal(mdc_set_tls(NULL, &cfg), MDC_ERR_ARG);
    assert_int_equal(mdc_pool_set_tls(NULL, &cfg), MDC_ERR_ARG);
    /* a failed mdc_set_tls() leaves the handle plain: no handshake */
    mdc_destroy(m);
    /* a Unix socket handle needs a name to verify */
    m = mdc_create_unix(srv_a.unix_path);
    cfg = with_ca();
    assert_int_equal(mdc_set_tls(m, &cfg), MDC_OK);
    expect_tls_error(m, mdc_noop(m), "server_name");
    mdc_destroy(m);
}

/* mdc_set_auth() and TLS together: AUTH goes in the first TLS record. */
static void test_auth_over_tls(void **state)
{
    struct mdc_tls_config cfg = with_ca();
    char users[160];
    const char *args[] = {"--auth-file", users, NULL};
    static struct tsrv as;
    static struct tls_ep ep;
    FILE *f;
    mdc_t *m;

    (void)state;
    snprintf(users, sizeof(users), "%s/users", certs.dir);
    f = fopen(users, "w");
    assert_non_null(f);
    fputs("alice:s3cret\n", f);
    fclose(f);
    local_srvs[0] = &as;
    local_ep(&ep);
    assert_int_equal(tsrv_start(&as, args), 0);
    assert_int_equal(tls_ep_start(&ep, certs.dir, as.port, certs.srv_cert,
                                  certs.srv_key, NULL, args),
                     0);
    m = handle(NULL, ep.port, &cfg);
    assert_int_equal(mdc_noop(m), MDC_AUTH_REQUIRED);
    OK(m, mdc_set_auth(m, "alice", "wrong"));
    assert_int_equal(mdc_noop(m), MDC_AUTH_FAILED);
    OK(m, mdc_set_auth(m, "alice", "s3cret"));
    OK(m, mdc_set(m, "a", 1, "b", 1, 0, 0, NULL, 0));
    OK(m, mdc_noop(m));
    mdc_destroy(m);
    tls_ep_stop(&ep);
    tsrv_stop(&as);
    unlink(users);
}

/* Run mdcached-tool with args; its exit status, stdout+stderr in out. */
static int tool(char *out, size_t cap, const char *fmt, ...)
{
    char args[1024], cmd[2048];
    const char *b = getenv("MDC_BUILDDIR");
    va_list ap;
    FILE *f;
    size_t n = 0;
    int st;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "'%s/client-c/tool/mdcached-tool' %s 2>&1",
             b != NULL && b[0] ? b : ".", args);
    f = popen(cmd, "r");
    assert_non_null(f);
    out[0] = '\0';
    while (n + 1 < cap) {
        size_t k = fread(out + n, 1, cap - 1 - n, f);
        if (k == 0)
            break;
        n += k;
    }
    out[n] = '\0';
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* mdcached-tool --tls, --tls-ca, --tls-cert, --tls-key, --tls-insecure,
 * --tls-name */
static void test_tool(void **state)
{
    char out[4096];
    int rc;

    (void)state;
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls-ca %s set tk vv",
              ep_ok.port, certs.ca);
    if (rc != 0)
        fail_msg("set: exit %d: %s", rc, out);
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls-ca %s get tk",
              ep_ok.port, certs.ca);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "vv\n");
    /* --tls alone: the system's CAs refuse the test CA */
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls get tk", ep_ok.port);
    assert_int_equal(rc, 69);
    assert_non_null(strstr(out, "certificate refused"));
    /* without TLS the endpoint is no mdcached */
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d -T 1000 get tk", ep_ok.port);
    assert_true(rc != 0);
    /* (the other endpoints may be other daemons: version, not get) */
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls-insecure version",
              ep_self.port);
    assert_int_equal(rc, 0);
    rc = tool(out, sizeof(out),
              "-s 127.0.0.1:%d --tls-ca %s --tls-name other.example version",
              ep_other.port, certs.ca);
    assert_int_equal(rc, 0);
    rc = tool(out, sizeof(out),
              "-s 127.0.0.1:%d --tls-ca %s --tls-cert %s --tls-key %s version",
              ep_mtls.port, certs.ca, certs.cli_cert, certs.cli_key);
    if (rc != 0)
        fail_msg("mutual TLS: exit %d: %s", rc, out);
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls-ca %s version",
              ep_mtls.port, certs.ca);
    assert_int_equal(rc, 69);
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls-ca /nonexistent get tk",
              ep_ok.port);
    assert_int_equal(rc, 78);
    rc = tool(out, sizeof(out), "-s 127.0.0.1:%d --tls dump", ep_ok.port);
    assert_int_equal(rc, 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_and_tags),
        cmocka_unit_test(test_verification_on_by_default),
        cmocka_unit_test(test_server_name),
        cmocka_unit_test(test_mutual_tls),
        cmocka_unit_test(test_insecure),
        cmocka_unit_test(test_plain_port),
        cmocka_unit_test(test_handshake_timeout),
        cmocka_unit_test(test_idle_check),
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_bad_settings),
        cmocka_unit_test(test_auth_over_tls),
        cmocka_unit_test(test_tool),
    };
    const char *ci = getenv("CI");
    bool in_ci = ci != NULL && strcmp(ci, "true") == 0;
    const char *mode = getenv("MDC_TEST_TLS_ENDPOINT");

#ifndef HAVE_OPENSSL
    printf("%s: libmdcached built without TLS (configure --with-tls)\n",
           in_ci ? "FAIL" : "SKIP");
    return in_ci ? 1 : 77;
#endif
    if ((mode == NULL || strcmp(mode, "mdcached") != 0) &&
        system("command -v socat >/dev/null 2>&1") != 0) {
        printf("%s: socat not installed (tools/deps.sh)\n",
               in_ci ? "FAIL" : "SKIP");
        return in_ci ? 1 : 77;
    }
    if (system("command -v openssl >/dev/null 2>&1") != 0) {
        printf("%s: the openssl command is not installed\n",
               in_ci ? "FAIL" : "SKIP");
        return in_ci ? 1 : 77;
    }
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
