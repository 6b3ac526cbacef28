/*
 * test_server_udp.c - memcached's UDP protocol (-U) against a real daemon:
 * get/gets hits and misses byte for byte, multi-key gets, values cut over
 * many datagrams and put back together, the reply limit, request ids
 * echoed, malformed and foreign datagrams (no crash, no reply where
 * memcached gives none), several commands in one datagram, two client
 * threads at once, the thread models, IPv6, SIGTERM.  Then, in-process
 * (SPED, the calling thread is the worker): the mirror hook (called once per
 * untagged hit, after the reply left) and, with jemalloc, that a batch of
 * UDP GET hits allocates nothing.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/core/alloc.h"
#include "server/daemon.h"
#include "server/options.h"
#include "server_client.h"
#include "server/core/store.h"
#include "server/net/udp.h"
#include "protocol/wire.h"

#define BIG_LEN 65536      /* 48 datagrams */
#define REPLY_LIMIT "160k" /* two BIG_LEN values fit, three do not */

static struct tsrv g_srv;
static int g_uport; /* the shared daemon's UDP port */
static unsigned g_uniq;

static char *ukey(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "%s-%u-%ld", what, ++g_uniq, (long)getpid());
    return buf;
}

/* ---- a small memcached UDP client -------------------------------------- */

/* Start a daemon with -U auto: the UDP port it picked (on 127.0.0.1) is
 * read back from its port file (server_client.c). */
static int start_udp(struct tsrv *s, int *uport, const char *const *extra)
{
    const char *args[32];
    int i, n = 0;

    args[n++] = "-U";
    args[n++] = "auto";
    for (i = 0; extra != NULL && extra[i] != NULL && n < 30; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    if (tsrv_start(s, args) != 0)
        return -1;
    *uport = s->udp_port;
    return *uport > 0 ? 0 : -1;
}

/* A UDP socket connected to host:port, 2 s receive timeout, big buffer. */
static int uc_open(const char *host, int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, buf = 4 << 20;
    /* a reply later than this is a hang, not a busy machine (2 s was
     * crossed under tools/busy-load.sh); no test waits it out for a
     * datagram that must not come: those count udp_ignored instead */
    struct timeval tv = {TC_HANG_MS / 1000, 0};

    memset(&ss, 0, sizeof(ss));
    if (strchr(host, ':') != NULL) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
            return -1;
        len = sizeof(*s6);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
            return -1;
        len = sizeof(*s4);
    }
    fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* FORCE works as root and goes past rmem_max; else the plain one. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static unsigned get16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* Send a frame header (id, seq, total, reserved) and then body. */
static void uc_send_raw(int fd, unsigned rid, unsigned seq, unsigned total,
                        unsigned reserved, const void *body, size_t blen)
{
    uint8_t *b = malloc(UDP_FRAME_HDR + blen + 1);

    assert_non_null(b);
    put16(b, rid);
    put16(b + 2, seq);
    put16(b + 4, total);
    put16(b + 6, reserved);
    if (blen > 0)
        memcpy(b + UDP_FRAME_HDR, body, blen);
    assert_int_equal(send(fd, b, UDP_FRAME_HDR + blen, 0),
                     (ssize_t)(UDP_FRAME_HDR + blen));
    free(b);
}

static void uc_send(int fd, unsigned rid, const char *cmd)
{
    uc_send_raw(fd, rid, 0, 1, 0, cmd, strlen(cmd));
}

/*
 * Receive one whole reply to rid and put it together: every datagram must
 * carry rid, the same total, reserved 0 and at most 1400 bytes, and every
 * one but the last exactly 1400.  Returns the payload (malloc'd, NUL-
 * terminated); *ndg gets the datagram count.
 */
static char *uc_reply(int fd, unsigned rid, size_t *len, unsigned *ndg)
{
    uint8_t d[2048];
    uint8_t **parts = NULL;
    size_t *plen = NULL, total = 0, off = 0;
    unsigned n = 0, got = 0, i;
    char *out;

    for (;;) {
        ssize_t k = recv(fd, d, sizeof(d), 0);
        unsigned seq;

        if (k < 0)
            fail_msg("no reply to request %u (%u of %u datagrams): %s", rid,
                     got, n, strerror(errno));
        assert_true(k > UDP_FRAME_HDR);
        assert_true(k <= UDP_DGRAM_MAX);
        assert_int_equal(get16(d), rid);
        assert_int_equal(get16(d + 6), 0);
        if (n == 0) {
            n = get16(d + 4);
            assert_true(n >= 1);
            parts = calloc(n, sizeof(*parts));
            plen = calloc(n, sizeof(*plen));
        }
        assert_int_equal(get16(d + 4), n);
        seq = get16(d + 2);
        assert_true(seq < n);
        assert_null(parts[seq]);
        if (seq + 1 < n)
            assert_int_equal(k, UDP_DGRAM_MAX);
        plen[seq] = (size_t)k - UDP_FRAME_HDR;
        parts[seq] = malloc(plen[seq]);
        memcpy(parts[seq], d + UDP_FRAME_HDR, plen[seq]);
        total += plen[seq];
        if (++got == n)
            break;
    }
    out = malloc(total + 1);
    for (i = 0; i < n; i++) {
        memcpy(out + off, parts[i], plen[i]);
        off += plen[i];
        free(parts[i]);
    }
    out[total] = '\0';
    free(parts);
    free(plen);
    *len = total;
    if (ndg != NULL)
        *ndg = n;
    return out;
}

/* Send cmd, expect exactly the reply text want in one datagram. */
static void uc_expect(int fd, unsigned rid, const char *cmd, const char *want)
{
    size_t len;
    unsigned n;
    char *r;

    uc_send(fd, rid, cmd);
    r = uc_reply(fd, rid, &len, &n);
    assert_int_equal(n, 1);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(r, want, len);
    free(r);
}

/* Nothing more arrives within ms. */
static void uc_expect_silence(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};

    assert_int_equal(poll(&p, 1, ms), 0);
}

/* Native SET with flags; returns the new CAS. */
static uint64_t nset(const char *key, const void *val, size_t vlen,
                     uint32_t flags, const struct wire_tag *tags, size_t ntags)
{
    int fd = tc_connect(&g_srv);
    struct treq r = {.op = WIRE_OP_SET,
                     .key = key,
                     .klen = strlen(key),
                     .val = val,
                     .vlen = vlen,
                     .iflags = flags,
                     .tags = tags,
                     .ntags = ntags};
    struct tresp p;
    uint64_t cas;

    assert_true(fd >= 0);
    assert_int_equal(tc_call(fd, &r, &p), WIRE_S_OK);
    cas = p.h.cas;
    tc_resp_free(&p);
    close(fd);
    return cas;
}

static long long stat_of(const char *name)
{
    int fd = tc_connect(&g_srv);
    long long v;

    assert_true(fd >= 0);
    v = tc_stat(fd, name);
    close(fd);
    return v;
}

/* ---- group: one daemon, two network threads ---------------------------- */

static int group_setup(void **state)
{
    static const char *const args[] = {
        "-n", "2", "-I", "256k", "--udp-reply-limit", REPLY_LIMIT, NULL};

    (void)state;
    g_uniq = (unsigned)time(NULL) % 100000u * 1000u;
    return start_udp(&g_srv, &g_uport, args);
}

static int group_teardown(void **state)
{
    (void)state;
    return tsrv_stop(&g_srv) == 0 ? 0 : -1;
}

static void test_get_hit_miss(void **state)
{
    char k[64], want[256];
    int fd = uc_open("127.0.0.1", g_uport);
    uint8_t d[256];

    (void)state;
    assert_true(fd >= 0);
    ukey(k, sizeof(k), "hit");
    nset(k, "hello", 5, 42, NULL, 0);
    snprintf(want, sizeof(want), "VALUE %s 42 5\r\nhello\r\nEND\r\n", k);
    uc_expect(fd, 1, "get missing-key\r\n", "END\r\n");
    {
        /* The exact datagram the XDP program builds (mirror_reply_build):
         * id, sequence 0, 1 datagram, reserved 0, then the text. */
        char cmd[128];
        ssize_t n;

        snprintf(cmd, sizeof(cmd), "get %s\r\n", k);
        uc_send(fd, 0xA1B2, cmd);
        n = recv(fd, d, sizeof(d), 0);
        assert_int_equal(n, UDP_FRAME_HDR + strlen(want));
        assert_memory_equal(d, "\xA1\xB2\0\0\0\x01\0\0", UDP_FRAME_HDR);
        assert_memory_equal(d + UDP_FRAME_HDR, want, strlen(want));
    }
    /* memcached's accepted variants: bare LF, extra spaces */
    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "get  %s \n", k);
        uc_expect(fd, 2, cmd, want);
    }
    /* a flags value up to 2^32-1 and an empty value */
    ukey(k, sizeof(k), "empty");
    nset(k, "", 0, 4294967295u, NULL, 0);
    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "get %s\r\n", k);
        snprintf(want, sizeof(want), "VALUE %s 4294967295 0\r\n\r\nEND\r\n", k);
        uc_expect(fd, 3, cmd, want);
    }
    close(fd);
}

static void test_multi_get_and_gets(void **state)
{
    char a[64], b[64], c[64], cmd[512], want[1024];
    struct wire_tag t = {5, 6};
    uint64_t ca, cb;
    int fd = uc_open("127.0.0.1", g_uport);

    (void)state;
    assert_true(fd >= 0);
    ukey(a, sizeof(a), "ma");
    ukey(b, sizeof(b), "mb");
    ukey(c, sizeof(c), "mc");
    ca = nset(a, "AAA", 3, 1, NULL, 0);
    cb = nset(b, "bb", 2, 2, &t, 1); /* tagged records are served too */
    snprintf(cmd, sizeof(cmd), "get %s %s nope-%s %s %s\r\n", a, b, c, a, c);
    snprintf(want, sizeof(want),
             "VALUE %s 1 3\r\nAAA\r\nVALUE %s 2 2\r\nbb\r\n"
             "VALUE %s 1 3\r\nAAA\r\nEND\r\n",
             a, b, a);
    uc_expect(fd, 10, cmd, want);
    snprintf(cmd, sizeof(cmd), "gets %s %s\r\n", a, b);
    snprintf(want, sizeof(want),
             "VALUE %s 1 3 %llu\r\nAAA\r\nVALUE %s 2 2 %llu\r\nbb\r\nEND\r\n",
             a, (unsigned long long)ca, b, (unsigned long long)cb);
    uc_expect(fd, 11, cmd, want);
    /* Two commands in one datagram: two replies, same id, in order. */
    {
        size_t len;
        unsigned n;
        char *r;

        snprintf(cmd, sizeof(cmd), "get %s\r\nget nope-%s\r\n", a, c);
        uc_send(fd, 12, cmd);
        r = uc_reply(fd, 12, &len, &n);
        snprintf(want, sizeof(want), "VALUE %s 1 3\r\nAAA\r\nEND\r\n", a);
        assert_string_equal(r, want);
        free(r);
        r = uc_reply(fd, 12, &len, &n);
        assert_string_equal(r, "END\r\n");
        free(r);
    }
    close(fd);
}

/* A value over many datagrams, and replies right at datagram boundaries. */
static void test_multi_datagram(void **state)
{
    char k[64], cmd[256], line[128];
    char *val = malloc(BIG_LEN), *r;
    size_t len, ll, sizes[3], i;
    unsigned n;
    int fd = uc_open("127.0.0.1", g_uport);

    (void)state;
    assert_true(fd >= 0);
    for (i = 0; i < BIG_LEN; i++)
        val[i] = (char)('A' + (i * 7 + i / 1000) % 61);
    ukey(k, sizeof(k), "big");
    nset(k, val, BIG_LEN, 9, NULL, 0);
    snprintf(cmd, sizeof(cmd), "get %s\r\n", k);
    uc_send(fd, 0xFFFF, cmd);
    r = uc_reply(fd, 0xFFFF, &len, &n);
    ll = (size_t)snprintf(line, sizeof(line), "VALUE %s 9 %d\r\n", k, BIG_LEN);
    assert_int_equal(len, ll + BIG_LEN + 7);
    assert_int_equal(n, (len + UDP_CHUNK - 1) / UDP_CHUNK);
    assert_memory_equal(r, line, ll);
    assert_memory_equal(r + ll, val, BIG_LEN);
    assert_memory_equal(r + ll + BIG_LEN, "\r\nEND\r\n", 7);
    free(r);

    /* Replies of exactly 1392 and 2 * 1392 bytes, and one byte more. */
    sizes[0] = UDP_CHUNK;
    sizes[1] = 2 * UDP_CHUNK;
    sizes[2] = 2 * UDP_CHUNK + 1;
    for (i = 0; i < 3; i++) {
        size_t vlen;

        ukey(k, sizeof(k), "edge");
        ll = (size_t)snprintf(line, sizeof(line), "VALUE %s 0 %zu\r\n", k,
                              (size_t)9999);
        vlen = sizes[i] - ll - 7; /* the line keeps 4 digits */
        nset(k, val, vlen, 0, NULL, 0);
        snprintf(cmd, sizeof(cmd), "get %s\r\n", k);
        uc_send(fd, 100 + (unsigned)i, cmd);
        r = uc_reply(fd, 100 + (unsigned)i, &len, &n);
        assert_int_equal(len, sizes[i]);
        assert_int_equal(n, i == 0 ? 1 : i == 1 ? 2 : 3);
        assert_memory_equal(r + ll, val, vlen);
        free(r);
    }

    /* The reply limit: two big values fit, the third ends the reply. */
    ukey(k, sizeof(k), "big2");
    nset(k, val, BIG_LEN, 0, NULL, 0);
    snprintf(cmd, sizeof(cmd), "get %s %s %s\r\n", k, k, k);
    uc_send(fd, 7, cmd);
    r = uc_reply(fd, 7, &len, &n);
    ll = (size_t)snprintf(line, sizeof(line), "VALUE %s 0 %d\r\n", k, BIG_LEN);
    assert_int_equal(len, 2 * (ll + BIG_LEN + 2) + strlen(UDP_E_TOO_LARGE));
    assert_memory_equal(r + 2 * (ll + BIG_LEN + 2), UDP_E_TOO_LARGE,
                        strlen(UDP_E_TOO_LARGE));
    free(r);
    assert_true(stat_of("udp_reply_too_large") >= 1);
    free(val);
    close(fd);
}

/* Request ids are echoed whatever they are; seq and reserved are not
 * checked (memcached does not) and come back as 0. */
static void test_request_id_echo(void **state)
{
    static const unsigned ids[] = {0,      1,      0x00FF, 0x0100,
                                   0x7FFF, 0x8000, 0xFFFE, 0xFFFF};
    size_t i;
    char *r;
    size_t len;
    int fd = uc_open("127.0.0.1", g_uport);

    (void)state;
    assert_true(fd >= 0);
    for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        uc_expect(fd, ids[i], "get no-such-key\r\n", "END\r\n");
    uc_send_raw(fd, 0x4242, 3, 1, 0x5555, "get x\r\n", 7);
    r = uc_reply(fd, 0x4242, &len, NULL); /* asserts seq 0, reserved 0 */
    assert_string_equal(r, "END\r\n");
    free(r);
    close(fd);
}

/*
 * Garbage: every datagram memcached leaves unanswered is sent first, then
 * one valid get; the only reply must be the get's (one client's datagrams
 * reach one server thread, in order).  Then what memcached does answer.
 */
static void test_malformed(void **state)
{
    static const uint8_t hdr[8] = {0x12, 0x34, 0, 0, 0, 1, 0, 0};
    char *big = malloc(UDP_RX_MAX + 100);
    long long ign0 = stat_of("udp_ignored");
    int fd = uc_open("127.0.0.1", g_uport);
    size_t i;

    (void)state;
    assert_true(fd >= 0);
    /* 0..8 bytes: header-only or shorter */
    for (i = 0; i <= UDP_FRAME_HDR; i++)
        assert_int_equal(send(fd, hdr, i, 0), (ssize_t)i);
    /* total datagrams 0 and 2: multi-datagram requests are not supported */
    uc_send_raw(fd, 1, 0, 0, 0, "get a\r\n", 7);
    uc_send_raw(fd, 2, 0, 2, 0, "get a\r\n", 7);
    uc_send_raw(fd, 3, 1, 2, 0, "get a\r\n", 7);
    /* no newline; a lone CR; long lines without one */
    uc_send(fd, 4, "get a");
    uc_send(fd, 5, "get a\r");
    memset(big, 'x', UDP_RX_MAX + 100);
    uc_send_raw(fd, 6, 0, 1, 0, big, 3000);
    memcpy(big, "get ", 4);
    uc_send_raw(fd, 7, 0, 1, 0, big, 5000);
    /* a storage command without its data; noreply commands */
    uc_send(fd, 8, "set k 0 0 5\r\nab");
    uc_send(fd, 9, "set k 0 0 1 noreply\r\nx\r\n");
    uc_send(fd, 10, "delete k noreply\r\n");
    /* over UDP_RX_MAX: truncated, ignored */
    memcpy(big, "get ", 4);
    big[UDP_RX_MAX + 50] = '\n';
    uc_send_raw(fd, 11, 0, 1, 0, big, UDP_RX_MAX + 60);
    /* HTTP-looking: not answered (docs/protocol-text.md) */
    uc_send(fd, 12, "GET / HTTP/1.0\r\n");
    uc_expect(fd, 0x77, "get sentinel-key\r\n", "END\r\n");
    uc_expect_silence(fd, 100);
    assert_true(stat_of("udp_ignored") - ign0 >= 17);

    /* Answered, as memcached answers them (or refused: not get/gets). */
    uc_expect(fd, 20, "bogus\r\n", "ERROR\r\n");
    uc_expect(fd, 21, "\r\n", "ERROR\r\n");
    uc_expect(fd, 22, "get\r\n", "ERROR\r\n");
    uc_expect(fd, 23, "Get a\r\n", "ERROR\r\n"); /* case-sensitive */
    uc_expect(fd, 24, "\x01\x02\xff\xfe\n", "ERROR\r\n");
    memset(big, 'k', 251);
    memcpy(big + 251, "\r\n", 3);
    {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "get %s", big);
        uc_expect(fd, 25, cmd, "CLIENT_ERROR bad command line format\r\n");
    }
    uc_expect(fd, 26, "set k 0 0 1\r\nxyz\r\n",
              "CLIENT_ERROR bad data chunk\r\n");
    {
        /* the block is 1 byte: "yz\r\n" minus the 2 skipped is a line */
        size_t len;
        char *r = uc_reply(fd, 26, &len, NULL);
        assert_string_equal(r, "ERROR\r\n");
        free(r);
    }
    uc_expect(fd, 27, "set k 0 0 1\r\nx\r\n", UDP_E_REFUSED);
    uc_expect(fd, 28, "gat 0 k\r\n", UDP_E_REFUSED);
    uc_expect(fd, 29, "mg k v\r\n", UDP_E_REFUSED);
    uc_expect(fd, 30, "stats\r\n", UDP_E_REFUSED);
    uc_expect(fd, 31, "version\r\n", UDP_E_REFUSED);
    uc_expect_silence(fd, 50);
    assert_true(stat_of("udp_refused") >= 7);
    /* the refused set stored nothing */
    {
        int tfd = tc_connect(&g_srv);
        assert_true(tfd >= 0);
        assert_int_equal(tc_get(tfd, "k", NULL, NULL), WIRE_S_NOT_FOUND);
        close(tfd);
    }
    free(big);
    close(fd);
}

/* Without --udp-writes a write is refused, not run, and counted in
 * udp_writes_refused (so are flush_all and shutdown); stats and version
 * are refused but are no writes. */
static void test_writes_refused(void **state)
{
    long long wr0 = stat_of("udp_writes_refused"), r0 = stat_of("udp_refused");
    long long w0 = stat_of("udp_writes");
    int fd = uc_open("127.0.0.1", g_uport), tfd;

    (void)state;
    assert_true(fd >= 0);
    uc_expect(fd, 1, "set wr 0 0 1\r\nx\r\n", UDP_E_REFUSED);
    uc_expect(fd, 2, "ms wr 1\r\nx\r\n", UDP_E_REFUSED);
    uc_expect(fd, 3, "tset wr 0 0 1 1:1\r\nx\r\n", UDP_E_REFUSED);
    uc_send(fd, 4, "delete wr noreply\r\n"); /* refused, unanswered */
    uc_expect(fd, 5, "flush_all\r\n", UDP_E_REFUSED);
    uc_expect(fd, 6, "shutdown\r\n", UDP_E_REFUSED);
    uc_expect(fd, 7, "stats\r\n", UDP_E_REFUSED);
    uc_expect(fd, 8, "version\r\n", UDP_E_REFUSED);
    uc_expect_silence(fd, 50);
    assert_int_equal(stat_of("udp_writes_refused") - wr0, 6);
    assert_int_equal(stat_of("udp_refused") - r0, 8);
    assert_int_equal(stat_of("udp_writes") - w0, 0);
    tfd = tc_connect(&g_srv);
    assert_true(tfd >= 0);
    assert_int_equal(tc_get(tfd, "wr", NULL, NULL), WIRE_S_NOT_FOUND);
    close(tfd);
    close(fd);
}

/* Two client threads, many pipelined requests each, against two network
 * threads (each client's port hashes to one of the SO_REUSEPORT sockets). */
#define CONC_KEYS 64
#define CONC_REQS 3000
#define CONC_WINDOW 16

struct conc_arg {
    int id;
    int errors;
};

static void *conc_client(void *p)
{
    struct conc_arg *a = p;
    int fd = uc_open("127.0.0.1", g_uport);
    unsigned sent = 0, rcvd = 0;
    uint8_t d[2048];

    if (fd < 0) {
        a->errors++;
        return NULL;
    }
    while (rcvd < CONC_REQS) {
        while (sent < CONC_REQS && sent - rcvd < CONC_WINDOW) {
            uint8_t b[128];
            int n = snprintf((char *)b + UDP_FRAME_HDR, 100, "get conc-%d\r\n",
                             (int)(sent % CONC_KEYS));
            put16(b, (sent & 0xFFFF));
            put16(b + 2, 0);
            put16(b + 4, 1);
            put16(b + 6, 0);
            if (send(fd, b, UDP_FRAME_HDR + (size_t)n, 0) < 0)
                a->errors++;
            sent++;
        }
        {
            ssize_t k = recv(fd, d, sizeof(d) - 1, 0);
            char want[64];
            unsigned rid;

            if (k < 0) { /* lost: should not happen on loopback */
                a->errors++;
                break;
            }
            d[k] = '\0';
            rid = get16(d);
            snprintf(want, sizeof(want), "VALUE conc-%u 0 8\r\nv%02u-",
                     rid % CONC_KEYS, rid % CONC_KEYS);
            if (rid != rcvd || get16(d + 4) != 1 ||
                strncmp((char *)d + UDP_FRAME_HDR, want, strlen(want)) != 0)
                a->errors++;
            rcvd++;
        }
    }
    close(fd);
    return NULL;
}

static void test_concurrent(void **state)
{
    pthread_t t[2];
    struct conc_arg a[2];
    long long in0 = stat_of("udp_datagrams_in");
    long long out0 = stat_of("udp_datagrams_out");
    int i;

    (void)state;
    for (i = 0; i < CONC_KEYS; i++) {
        char k[32], v[16];
        snprintf(k, sizeof(k), "conc-%d", i);
        snprintf(v, sizeof(v), "v%02d-%04d", i, i);
        nset(k, v, 8, 0, NULL, 0);
    }
    for (i = 0; i < 2; i++) {
        a[i].id = i;
        a[i].errors = 0;
        assert_int_equal(pthread_create(&t[i], NULL, conc_client, &a[i]), 0);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].errors, 0);
    }
    assert_true(stat_of("udp_datagrams_in") - in0 >= 2 * CONC_REQS);
    assert_true(stat_of("udp_datagrams_out") - out0 >= 2 * CONC_REQS);
    assert_true(stat_of("udp_requests") >= 2 * CONC_REQS);
}

#ifdef MDC_UDP_REUSEPORT_LB
/* udp_datagrams_in of network thread thr (stats threads). */
static long long thread_udp_in(int fd, int thr)
{
    struct treq r = {.op = WIRE_OP_STATS, .key = "threads", .klen = 7};
    struct tresp p;
    char want[64], *at;
    long long v = -1;

    assert_int_equal(tc_call(fd, &r, &p), 0);
    snprintf(want, sizeof(want), "%d:udp_datagrams_in ", thr);
    at = strstr((const char *)p.val, want);
    if (at != NULL)
        v = atoll(at + strlen(want));
    tc_resp_free(&p);
    return v;
}

/* The port is balanced over both threads' sockets: datagrams from many
 * source ports reach each.  The first socket takes SO_REUSEPORT once it
 * is bound (udp.c); it must still be one of the group, not left out. */
static void test_both_sockets_serve(void **state)
{
    int fd = tc_connect(&g_srv), i;
    long long in1, in2;

    (void)state;
    assert_true(fd >= 0);
    in1 = thread_udp_in(fd, 1);
    in2 = thread_udp_in(fd, 2);
    assert_true(in1 >= 0 && in2 >= 0);
    for (i = 0; i < 64; i++) { /* a new source port each: 2^-63 to miss */
        int u = uc_open("127.0.0.1", g_uport);

        assert_true(u >= 0);
        uc_expect(u, (unsigned)i, "get balanced-missing\r\n", "END\r\n");
        close(u);
    }
    assert_true(thread_udp_in(fd, 1) > in1);
    assert_true(thread_udp_in(fd, 2) > in2);
    close(fd);
}
#endif

static void test_stats_settings(void **state)
{
    int fd = tc_connect(&g_srv);
    struct treq r = {.op = WIRE_OP_STATS, .key = "settings", .klen = 8};
    struct tresp p;
    char want[64];

    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(tc_call(fd, &r, &p), 0);
    /* the option as given: started with -U auto (start_udp) */
    snprintf(want, sizeof(want), "udp-port auto\n");
    assert_non_null(strstr((const char *)p.val, want));
    /* memcached's name: the port it got */
    snprintf(want, sizeof(want), "udpport %d\n", g_uport);
    assert_non_null(strstr((const char *)p.val, want));
    snprintf(want, sizeof(want), "tcpport %d\n", g_srv.port);
    assert_non_null(strstr((const char *)p.val, want));
    assert_non_null(strstr((const char *)p.val, "udp-reply-limit 163840\n"));
#ifdef MDC_UDP_REUSEPORT_LB
    /* one socket per network thread, balanced by the kernel */
    assert_non_null(strstr((const char *)p.val, "udp_sockets 2\n"));
#else
    /* portable build: one socket serves the port (server/net/compat.h) */
    assert_non_null(strstr((const char *)p.val, "udp_sockets 1\n"));
#endif
    tc_resp_free(&p);
    assert_true(tc_stat(fd, "udp_datagrams_in") > 0);
    assert_true(tc_stat(fd, "bytes_written") > 0);
    assert_int_equal(tc_stat(fd, "get_expired"), 0);
    close(fd);
}

/* A text command over TCP; the reply up to and including its last line
 * (one that ends with end). */
static void txt_call(int fd, const char *cmd, const char *end, char *buf,
                     size_t cap)
{
    size_t n = 0, el = strlen(end);

    assert_int_equal(tc_send_all(fd, cmd, strlen(cmd)), 0);
    for (;;) {
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);

        assert_true(k > 0);
        n += (size_t)k;
        buf[n] = '\0';
        if (n >= el && memcmp(buf + n - el, end, el) == 0)
            return;
        assert_true(n < cap - 1);
    }
}

/*
 * One GET for every way in: a UDP get runs through the text handler's GET
 * and a native GET shares its lookup (proto_get_keys), so both are counted
 * by "stats detail" as a TCP get is (the UDP and the native ones were not,
 * each having a GET of its own).
 */
static void test_one_get_counts_detail(void **state)
{
    char pu[32], pn[32], k[64], cmd[160], want[160], buf[8192];
    int tfd = tc_connect(&g_srv), ufd = uc_open("127.0.0.1", g_uport);
    struct treq r = {.op = WIRE_OP_GET};
    struct tresp p;

    (void)state;
    assert_true(tfd >= 0 && ufd >= 0);
    snprintf(pu, sizeof(pu), "ud%u", ++g_uniq);
    snprintf(pn, sizeof(pn), "nd%u", ++g_uniq);
    txt_call(tfd, "stats detail on\r\n", "\r\n", buf, sizeof(buf));
    assert_string_equal(buf, "OK\r\n");
    snprintf(k, sizeof(k), "%s:k", pu);
    nset(k, "v", 1, 0, NULL, 0);
    snprintf(cmd, sizeof(cmd), "get %s %s:nope\r\n", k, pu);
    snprintf(want, sizeof(want), "VALUE %s 0 1\r\nv\r\nEND\r\n", k);
    uc_expect(ufd, 40, cmd, want);
    snprintf(k, sizeof(k), "%s:k", pn);
    nset(k, "v", 1, 0, NULL, 0);
    r.key = k;
    r.klen = strlen(k);
    {
        int nfd = tc_connect(&g_srv); /* a connection's first byte picks
                                         its protocol */
        assert_true(nfd >= 0);
        assert_int_equal(tc_call(nfd, &r, &p), WIRE_S_OK);
        tc_resp_free(&p);
        close(nfd);
    }
    txt_call(tfd, "stats detail dump\r\n", "END\r\n", buf, sizeof(buf));
    txt_call(tfd, "stats detail off\r\n", "\r\n", cmd, sizeof(cmd));
    snprintf(want, sizeof(want), "PREFIX %s get 2 hit 1 ", pu);
    assert_non_null(strstr(buf, want));
    snprintf(want, sizeof(want), "PREFIX %s get 1 hit 1 ", pn);
    assert_non_null(strstr(buf, want));
    close(tfd);
    close(ufd);
}

static const struct CMUnitTest functional_tests[] = {
    cmocka_unit_test(test_get_hit_miss),
    cmocka_unit_test(test_multi_get_and_gets),
    cmocka_unit_test(test_multi_datagram),
    cmocka_unit_test(test_request_id_echo),
    cmocka_unit_test(test_malformed),
    cmocka_unit_test(test_writes_refused),
    cmocka_unit_test(test_concurrent),
    cmocka_unit_test(test_stats_settings),
#ifdef MDC_UDP_REUSEPORT_LB
    cmocka_unit_test(test_both_sockets_serve),
#endif
    cmocka_unit_test(test_one_get_counts_detail),
};

/* ---- own daemons -------------------------------------------------------- */

/* UDP in the main thread (-n 0) with and without payload threads, with
 * SIGTERM; UDP only (-p 0) is accepted as something to listen on. */
static void test_models_and_stop(void **state)
{
    static const char *const models[][5] = {
        {"-n", "0", "-t", "0", NULL},
        {"-n", "0", "-t", "2", NULL},
        {"-n", "1", "-t", "2", NULL},
        {"-n", "3", "-t", "3", NULL},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        struct tsrv s;
        int port, fd;
        char *r;
        size_t len;

        assert_int_equal(start_udp(&s, &port, models[i]), 0);
        fd = uc_open("127.0.0.1", port);
        assert_true(fd >= 0);
        uc_send(fd, 9, "get a b c\r\n");
        r = uc_reply(fd, 9, &len, NULL);
        assert_string_equal(r, "END\r\n");
        free(r);
        close(fd);
        assert_int_equal(tsrv_stop(&s), 0);
    }
}

/* A text exchange over TCP: send cmd, read until want's length. */
static void tcp_expect(int fd, const char *cmd, const char *want)
{
    char buf[4096];
    size_t n = 0, wl = strlen(want);

    assert_int_equal(write(fd, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
    while (n < wl) {
        ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
        assert_true(k > 0);
        n += (size_t)k;
    }
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

/*
 * --udp-writes: a datagram carries what memcached carries over UDP
 * (stores, delete, incr/decr, touch, gat, the meta commands) and the tag
 * commands, each answered as over TCP and seen by TCP clients at once;
 * flush_all and shutdown are never served (nothing flushed, the daemon
 * runs on), nor stats; the counters say so.  A value over -I refused
 * over UDP removes the record it would have replaced, as over TCP.
 */
static void test_udp_writes(void **state)
{
    static const char *const args[] = {"-n", "2", "-I", "1k", "-A",
                                       "--udp-writes", NULL};
    struct tsrv s;
    int port, fd, tfd, sfd;
    char big[1200 + 64];
    size_t len;
    char *r;

    (void)state;
    assert_int_equal(start_udp(&s, &port, args), 0);
    fd = uc_open("127.0.0.1", port);
    assert_true(fd >= 0);
    tfd = tc_connect(&s); /* text */
    assert_true(tfd >= 0);
    sfd = tc_connect(&s); /* native, for the counters */
    assert_true(sfd >= 0);
    assert_int_equal(tc_stat(sfd, "udp_writes"), 0);

    uc_expect(fd, 1, "set a 3 0 2\r\nhi\r\n", "STORED\r\n");
    tcp_expect(tfd, "get a\r\n", "VALUE a 3 2\r\nhi\r\nEND\r\n");
    uc_expect(fd, 2, "add a 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    uc_expect(fd, 3, "replace a 0 0 2\r\nho\r\n", "STORED\r\n");
    uc_expect(fd, 4, "append a 0 0 1\r\n!\r\n", "STORED\r\n");
    uc_expect(fd, 5, "prepend a 0 0 1\r\n<\r\n", "STORED\r\n");
    uc_expect(fd, 6, "get a\r\n", "VALUE a 0 4\r\n<ho!\r\nEND\r\n");
    uc_expect(fd, 7, "cas a 0 0 1 1\r\nz\r\n", "EXISTS\r\n");
    uc_expect(fd, 8, "set n 0 0 2\r\n10\r\n", "STORED\r\n");
    uc_expect(fd, 9, "incr n 5\r\n", "15\r\n");
    uc_expect(fd, 10, "decr n 3\r\n", "12\r\n");
    uc_expect(fd, 11, "touch n 100\r\n", "TOUCHED\r\n");
    uc_expect(fd, 12, "gat 200 n\r\n", "VALUE n 0 2\r\n12\r\nEND\r\n");
    uc_expect(fd, 13, "delete a\r\n", "DELETED\r\n");
    tcp_expect(tfd, "get a\r\n", "END\r\n");
    /* the meta commands */
    uc_expect(fd, 20, "ms m 3 T0 F7\r\nabc\r\n", "HD\r\n");
    uc_expect(fd, 21, "mg m v f\r\n", "VA 3 f7\r\nabc\r\n");
    uc_expect(fd, 22, "ma n D8 v\r\n", "VA 2\r\n20\r\n");
    uc_expect(fd, 23, "md m q\r\nmn\r\n", "MN\r\n");
    uc_expect(fd, 24, "mg m v\r\n", "EN\r\n");
    uc_send(fd, 25, "me n\r\n");
    r = uc_reply(fd, 25, &len, NULL);
    assert_true(strncmp(r, "ME n exp=", 9) == 0);
    free(r);
    /* the tag commands */
    uc_expect(fd, 30, "tset t1 0 0 2 4:5\r\nt1\r\n", "STORED\r\n");
    uc_expect(fd, 31, "tget 4 5\r\n", "VALUE t1 0 2\r\nt1\r\nEND\r\n");
    uc_expect(fd, 32, "tdel 4 5\r\n", "DELETED 1\r\n");
    uc_send(fd, 33, "tpush 4 6 0 0 1\r\np\r\n");
    r = uc_reply(fd, 33, &len, NULL);
    assert_true(strncmp(r, "STORED ", 7) == 0);
    free(r);
    uc_send(fd, 34, "tpop 4 6\r\n");
    r = uc_reply(fd, 34, &len, NULL);
    assert_true(strncmp(r, "VALUE ", 6) == 0);
    assert_true(len > 12 && memcmp(r + len - 10, "\r\np\r\nEND\r\n", 10) ==
                                 0);
    free(r);
    /* noreply: stored, not answered */
    uc_send(fd, 40, "set q 0 0 1 noreply\r\nq\r\n");
    uc_expect(fd, 41, "get q\r\n", "VALUE q 0 1\r\nq\r\nEND\r\n");
    /* too large for -I: refused, and the old record goes, as over TCP */
    memset(big, 'v', sizeof(big));
    memcpy(big, "set q 0 0 1200\r\n", 16);
    memcpy(big + 16 + 1200, "\r\n", 3);
    uc_expect(fd, 42, big, "SERVER_ERROR object too large for cache\r\n");
    uc_expect(fd, 43, "get q\r\n", "END\r\n");
    /* never over UDP: flush_all, shutdown (even with -A), stats */
    uc_expect(fd, 50, "flush_all\r\n", UDP_E_NOT_SERVED);
    uc_expect(fd, 51, "flush_all 0 noreply\r\n"
                      "get n\r\n", "VALUE n 0 2\r\n20\r\nEND\r\n");
    uc_expect(fd, 52, "shutdown\r\n", UDP_E_NOT_SERVED);
    uc_expect(fd, 53, "stats\r\n", UDP_E_NOT_SERVED);
    tcp_expect(tfd, "get n\r\n", "VALUE n 0 2\r\n20\r\nEND\r\n");
    assert_int_equal(tc_stat(sfd, "udp_writes_refused"), 3);
    assert_int_equal(tc_stat(sfd, "udp_refused"), 4);
    assert_int_equal(tc_stat(sfd, "udp_writes"), 25);
    close(sfd);
    close(tfd);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

static void test_ipv6(void **state)
{
    static const char *const args[] = {"-l", "127.0.0.1", "-l", "[::1]", NULL};
    struct tsrv s;
    int port, fd;
    char *r;
    size_t len;

    (void)state;
    fd = socket(AF_INET6, SOCK_DGRAM, 0);
    if (fd < 0) {
        skip();
    }
    {
        struct sockaddr_in6 sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin6_family = AF_INET6;
        sa.sin6_addr = in6addr_loopback;
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            close(fd);
            skip(); /* no ::1 here */
        }
        close(fd);
    }
    assert_int_equal(start_udp(&s, &port, args), 0);
    port = tsrv_port_of(&s, "udp", "[::1]"); /* each address its own */
    assert_true(port > 0);
    fd = uc_open("::1", port);
    assert_true(fd >= 0);
    uc_send(fd, 0x6666, "get six\r\n");
    r = uc_reply(fd, 0x6666, &len, NULL);
    assert_string_equal(r, "END\r\n");
    free(r);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

/*
 * A datagram's replies go out through the text handler's output queue,
 * bounded by --max-output: a reply over it is sent before the next
 * command of the same datagram runs, which is answered too.
 */
static void test_reply_over_max_output(void **state)
{
    static const char *const args[] = {"--max-output", "4096", NULL};
    static char big[6000];
    struct tsrv s;
    int port, fd, tfd;
    struct treq r = {.op = WIRE_OP_SET};
    struct tresp p;
    char *rep;
    size_t len;
    unsigned n;

    (void)state;
    memset(big, 'b', sizeof(big));
    assert_int_equal(start_udp(&s, &port, args), 0);
    tfd = tc_connect(&s);
    assert_true(tfd >= 0);
    r.key = "big";
    r.klen = 3;
    r.val = big;
    r.vlen = sizeof(big);
    assert_int_equal(tc_call(tfd, &r, &p), WIRE_S_OK);
    tc_resp_free(&p);
    r.key = "small";
    r.klen = 5;
    r.val = "s";
    r.vlen = 1;
    assert_int_equal(tc_call(tfd, &r, &p), WIRE_S_OK);
    tc_resp_free(&p);
    close(tfd);
    fd = uc_open("127.0.0.1", port);
    assert_true(fd >= 0);
    uc_send(fd, 0x4242, "get big\r\nget small\r\n");
    rep = uc_reply(fd, 0x4242, &len, &n);
    assert_int_equal(len, 18 + sizeof(big) + 7);
    assert_memory_equal(rep, "VALUE big 0 6000\r\n", 18);
    assert_true(n > 1);
    free(rep);
    rep = uc_reply(fd, 0x4242, &len, &n);
    assert_string_equal(rep, "VALUE small 0 1\r\ns\r\nEND\r\n");
    free(rep);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

/*
 * UDP work shares the loop turn with TCP (docs/threads-models.md): on one
 * network thread, a flood of 200-key UDP gets (hits) for FLOOD_S seconds
 * must not keep a TCP client of the same thread waiting.  Before the
 * budget, one readiness event read up to 256 datagrams (51 200 lookups)
 * and the TCP client waited for all of them, every turn: 13 round trips in
 * 6 s, the worst 0.6 s.
 *
 * The measure is a ratio to a baseline taken in the same test, so that a
 * busy machine, which slows both alike, does not fail it: the same client
 * loop for FLOOD_S seconds while the same sender floods a socket of this
 * test's own instead of the server (the same sending cost on the
 * machine, no work for the server), then while it floods the server.  The
 * flood may slow the client (the server's thread and the machine's CPUs
 * are shared), but with a fair server its worst round trip stays within
 * FLOOD_RATIO times the baseline's worst (10 ms at least, the grain of a
 * scheduler's slice); the unfair server above missed it by far (a worst
 * of 0.6 s on a quiet machine).  The mean is printed, not judged: with
 * the flood the server's thread is always runnable, so on a loaded
 * machine each request waits for the scheduler to come round to it
 * (100-170 ms under tools/busy-load.sh, a fair server, against a baseline
 * of 1-4 ms whose idle server wakes at once); it failed there.  The
 * number of round trips is printed, not judged: on an overloaded machine
 * it measures when this client got a CPU.  That the
 * flood reached the server is a count, not a rate: in the flood's window
 * the server served at least as many datagrams as the client made round
 * trips (UDP work beside every TCP request) and fewer than were sent (a
 * backlog all along).  A busy machine's server serves a few hundred where
 * a quiet one serves thousands: "more than 1000 served" failed under
 * tools/busy-load.sh.  One pair of FLOOD_TRIES passing passes.  The
 * absolute figures are printed (a quiet machine: a worst of a few ms
 * under the flood).
 */
#define FLOOD_KEYS 200
#define FLOOD_VLEN 200
#define FLOOD_S 2.0
#define FLOOD_RATIO 20
#define FLOOD_TRIES 3

struct flood {
    int uport;
    int stop; /* __atomic: the main thread ends the flood */
    unsigned long sent;
};

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *flood_sender(void *p)
{
    struct flood *f = p;
    int fd = uc_open("127.0.0.1", f->uport);
    uint8_t b[UDP_FRAME_HDR + FLOOD_KEYS * 16 + 8];
    size_t n = UDP_FRAME_HDR;
    int i;

    if (fd < 0)
        return NULL;
    n += (size_t)sprintf((char *)b + n, "get");
    for (i = 0; i < FLOOD_KEYS; i++)
        n += (size_t)sprintf((char *)b + n, " fl-%03d", i);
    n += (size_t)sprintf((char *)b + n, "\r\n");
    put16(b + 2, 0);
    put16(b + 4, 1);
    put16(b + 6, 0);
    /* bursts of 64, a millisecond apart: more than one thread serves, so
     * the socket always has a backlog; the replies are never read */
    while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
        for (i = 0; i < 64; i++) {
            put16(b, (unsigned)(f->sent++ & 0xFFFF));
            (void)send(fd, b, n, MSG_DONTWAIT);
        }
        usleep(1000);
    }
    close(fd);
    return NULL;
}

/* FLOOD_S seconds of TCP gets of one key while f floods f->uport: the
 * round trips made, the worst in *worst and their mean in *mean (ms) */
static unsigned flood_window(struct flood *f, int fd, const char *want,
                             size_t n, double *worst, double *mean)
{
    char buf[FLOOD_VLEN + 64];
    unsigned rounds = 0;
    pthread_t t;
    double t0, sum = 0;

    *worst = 0;
    f->stop = 0;
    f->sent = 0;
    assert_int_equal(pthread_create(&t, NULL, flood_sender, f), 0);
    usleep(200000); /* the flood under way */
    t0 = mono_s();
    while (mono_s() - t0 < FLOOD_S) {
        double a = mono_s(), d;

        assert_int_equal(tc_send_all(fd, "get fl-007\r\n", 12), 0);
        assert_int_equal(tc_read_full(fd, buf, n), 0);
        assert_memory_equal(buf, want, n);
        d = (mono_s() - a) * 1000.0;
        if (d > *worst)
            *worst = d;
        sum += d;
        rounds++;
        usleep(2000);
    }
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    *mean = rounds > 0 ? sum / rounds : 0;
    return rounds;
}

/* udp_datagrams_in of s, over a connection of its own */
static long long udp_in_of(const struct tsrv *s)
{
    int fd = tc_connect(s);
    long long v;

    assert_true(fd >= 0);
    v = tc_stat(fd, "udp_datagrams_in");
    close(fd);
    return v;
}

static void test_udp_flood_tcp_fair(void **state)
{
    static const char *const args[] = {"-n", "1", NULL};
    struct tsrv s;
    struct flood f, sink;
    char cmd[64], buf[FLOOD_VLEN + 64], want[FLOOD_VLEN + 64];
    char val[FLOOD_VLEN + 2];
    double worst = 0, bworst = 0;
    size_t n;
    unsigned rounds = 0, brounds = 0;
    long long served = 0;
    bool fair = false, flooded = false;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int fd, sfd, i, attempt;

    (void)state;
    assert_int_equal(start_udp(&s, &f.uport, args), 0);
    /* the baseline's flood goes to this socket, never read */
    sfd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(sfd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(sfd, (struct sockaddr *)&sa, &sl), 0);
    sink.uport = ntohs(sa.sin_port);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    memset(val, 'v', FLOOD_VLEN);
    memcpy(val + FLOOD_VLEN, "\r\n", 2);
    for (i = 0; i < FLOOD_KEYS; i++) {
        snprintf(cmd, sizeof(cmd), "set fl-%03d 0 0 %d\r\n", i, FLOOD_VLEN);
        assert_int_equal(tc_send_all(fd, cmd, strlen(cmd)), 0);
        assert_int_equal(tc_send_all(fd, val, FLOOD_VLEN + 2), 0);
        assert_int_equal(tc_read_full(fd, buf, 8), 0);
        assert_memory_equal(buf, "STORED\r\n", 8);
    }
    n = (size_t)snprintf(want, sizeof(want), "VALUE fl-007 0 %d\r\n",
                         FLOOD_VLEN);
    memcpy(want + n, val, FLOOD_VLEN + 2);
    n += FLOOD_VLEN + 2;
    memcpy(want + n, "END\r\n", 5);
    n += 5;
    for (attempt = 1; attempt <= FLOOD_TRIES && !fair; attempt++) {
        double mean, bmean, bw;
        long long in0;

        brounds = flood_window(&sink, fd, want, n, &bworst, &bmean);
        in0 = udp_in_of(&s);
        rounds = flood_window(&f, fd, want, n, &worst, &mean);
        served = udp_in_of(&s) - in0;
        bw = bworst > 10.0 ? bworst : 10.0;
        print_message("pair %d: baseline %u round trips, mean %.2f ms, "
                      "worst %.1f ms; UDP flood %u round trips, mean %.2f "
                      "ms, worst %.1f ms; %lu datagrams sent, %lld served\n",
                      attempt, brounds, bmean, bworst, rounds, mean, worst,
                      f.sent, served);
        flooded = rounds > 0 && served >= (long long)rounds &&
                  (unsigned long long)served < f.sent;
        fair = flooded && worst <= bw * FLOOD_RATIO;
        if (!fair)
            usleep(300000); /* the backlog of the last flood drained */
    }
    close(sfd);
    close(fd);
    fd = tc_connect(&s); /* native stats: a connection of its own */
    assert_true(fd >= 0);
    print_message("udp_send_drops %lld, udp_datagrams_out %lld\n",
                  tc_stat(fd, "udp_send_drops"), tc_stat(fd, "udp_datagrams_out"));
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
    if (!fair)
        fail_msg("no pair of %d passed; the last: the flood %s (%lld of %lu "
                 "datagrams served, %u round trips), worst %.1f ms "
                 "(baseline %.1f)",
                 FLOOD_TRIES, flooded ? "reached the server" :
                 "did not reach the server", served, f.sent, rounds, worst,
                 bworst);
}

static const struct CMUnitTest own_daemon_tests[] = {
    cmocka_unit_test(test_models_and_stop),
    cmocka_unit_test(test_udp_writes),
    cmocka_unit_test(test_ipv6),
    cmocka_unit_test(test_reply_over_max_output),
    cmocka_unit_test(test_udp_flood_tcp_fair),
};

/* ---- in-process: the mirror hook and allocations ------------------------ */

#define IP_KEYS 32
#define IP_VLEN 600

struct ipfx {
    struct server *srv;
    int cli; /* client socket, connected to the server's */
    unsigned hook_calls;
    unsigned hook_tagged; /* calls for tagged records: must stay 0 */
    unsigned hook_early;  /* calls before the reply was readable */
    uint8_t batch[IP_KEYS][64];
    size_t blen[IP_KEYS];
};

static struct ipfx ip;

static void hit_hook(void *ctx, struct store *st, const struct record *r)
{
    struct ipfx *f = ctx;
    struct pollfd p = {f->cli, POLLIN, 0};

    (void)st;
    f->hook_calls++;
    if (record_ntags(r) != 0)
        f->hook_tagged++;
    if (poll(&p, 1, 0) != 1)
        f->hook_early++; /* the reply is handed to the kernel first */
}

static int ip_setup(void **state)
{
    struct options o;
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int sfd, i;

    (void)state;
    options_defaults(&o);
    o.net_threads = 0; /* SPED: this thread is the worker */
    o.payload_threads = 0;
    o.memory_mb = 64;
    ip.srv = server_setup(&o);
    if (ip.srv == NULL)
        return -1;
    ip.srv->udp_hit_hook = hit_hook;
    ip.srv->udp_hit_ctx = &ip;
    sfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(sfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(sfd, (struct sockaddr *)&sa, &sl) < 0)
        return -1;
    if (udp_sock_add(&ip.srv->workers[0], sfd, "test", true) < 0)
        return -1;
    ip.cli = socket(AF_INET, SOCK_DGRAM, 0);
    if (connect(ip.cli, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    for (i = 0; i < IP_KEYS; i++) {
        char k[32], v[IP_VLEN];
        struct mdc_tag t = {7, i};
        struct store_item it = {0};
        int n;

        snprintf(k, sizeof(k), "ip-key-%02d", i);
        memset(v, 'a' + i % 26, sizeof(v));
        it.key = k;
        it.klen = (uint32_t)strlen(k);
        it.value = v;
        it.vlen = IP_VLEN;
        it.flags = (uint32_t)i;
        it.tags = &t;
        it.ntags = i % 2; /* odd keys tagged */
        if (store_put(ip.srv->store, STORE_SET, &it, NULL) != ST_OK)
            return -1;
        ip.batch[i][0] = 0;
        ip.batch[i][1] = (uint8_t)i;
        memcpy(ip.batch[i] + 2, "\0\0\0\x01\0\0", 6);
        /* even: get, odd: gets; every fourth asks for a miss too */
        n = snprintf((char *)ip.batch[i] + 8, 56, "%s %s%s\r\n",
                     i % 2 ? "gets" : "get", k, i % 4 == 0 ? " nope" : "");
        ip.blen[i] = 8 + (size_t)n;
    }
    return 0;
}

static int ip_teardown(void **state)
{
    (void)state;
    close(ip.cli);
    options_teardown(&ip.srv->opt);
    server_teardown(ip.srv);
    return 0;
}

/* Send the batch, serve it in this thread, read and check the replies. */
static uint64_t ip_round(void)
{
    uint8_t d[2048];
    uint64_t a0, a1;
    int i;

    for (i = 0; i < IP_KEYS; i++)
        assert_int_equal(send(ip.cli, ip.batch[i], ip.blen[i], 0),
                         (ssize_t)ip.blen[i]);
    a0 = mdc_thread_allocated();
    udp_serve(&ip.srv->workers[0]);
    a1 = mdc_thread_allocated();
    for (i = 0; i < IP_KEYS; i++) {
        ssize_t n = recv(ip.cli, d, sizeof(d), MSG_DONTWAIT);
        char want[64];
        int l;

        assert_true(n > 0);
        assert_int_equal(get16(d), (unsigned)i);
        l = snprintf(want, sizeof(want), "VALUE ip-key-%02d %d %d", i, i,
                     IP_VLEN);
        assert_memory_equal(d + 8, want, (size_t)l);
        assert_memory_equal((char *)d + n - 5, "END\r\n", 5);
    }
    assert_true(recv(ip.cli, d, sizeof(d), MSG_DONTWAIT) < 0);
    return a1 - a0;
}

static void test_hit_hook(void **state)
{
    (void)state;
    ip.hook_calls = ip.hook_tagged = ip.hook_early = 0;
    (void)ip_round();
    assert_int_equal(ip.hook_calls, IP_KEYS / 2); /* the untagged half */
    assert_int_equal(ip.hook_tagged, 0);
    assert_int_equal(ip.hook_early, 0);
}

static void test_udp_hits_allocate_nothing(void **state)
{
    uint64_t bytes;
    int round;

    (void)state;
    if (!mdc_alloc_counts_threads())
        skip(); /* sanitizer builds: libc malloc has no per-thread counter */
    (void)ip_round(); /* may size the buffers */
    for (round = 0; round < 20; round++) {
        bytes = ip_round();
        if (bytes != 0)
            fail_msg("round %d: %llu bytes allocated by %d UDP GET hits", round,
                     (unsigned long long)bytes, IP_KEYS);
    }
}

static const struct CMUnitTest inprocess_tests[] = {
    cmocka_unit_test(test_hit_hook),
    cmocka_unit_test(test_udp_hits_allocate_nothing),
};

int main(void)
{
    int fails = 0;

    signal(SIGPIPE, SIG_IGN);
    if (getenv("MDC_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("MDC_TEST_FILTER"));
    fails += cmocka_run_group_tests_name("udp", functional_tests, group_setup,
                                         group_teardown);
    fails += cmocka_run_group_tests_name("udp own daemon", own_daemon_tests,
                                         NULL, NULL);
    fails += cmocka_run_group_tests_name("udp in-process", inprocess_tests,
                                         ip_setup, ip_teardown);
    return fails != 0;
}
