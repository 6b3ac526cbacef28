/*
 * test_text_server.c - black-box tests of the memcached text protocol
 * against a real mdcached on a free loopback port: every command with and
 * without noreply, pipelining and requests split at every byte, the
 * zero-copy value path (multi-get, large values), resync after bad data,
 * oversize values and lines, -I's boundary as memcached counts it, meta commands, the tag extension commands
 * (with a truncated tget), stats, quit and the binary-protocol refusal.
 * The suite runs once with requests in the network threads (SYMPED) and
 * once with payload threads (AMPED).
 *
 * MDC_TEST_TEXT_SERVER=host:port runs it against a daemon already running
 * (the tests that need special limits are skipped then).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"

/* a reply later than this is a hang, never a busy machine */
#define IO_TIMEOUT_MS TC_HANG_MS
#define TAG_REPLY_LIMIT 4096 /* --tag-reply-limit of the spawned daemon */

struct daemon {
    pid_t pid;
    char host[64];
    int port;
    bool external;
    struct tsrv t; /* tests/server_client.h's harness */
};

static struct daemon D;
static unsigned key_seq;

/* ---- the daemon ---------------------------------------------------------- */

static int try_connect(void)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)D.port);
    inet_pton(AF_INET, D.host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int daemon_start(const char *nnet, const char *npay)
{
    const char *ext = getenv("MDC_TEST_TEXT_SERVER");

    memset(&D, 0, sizeof(D));
    if (ext != NULL && *ext != '\0') {
        const char *colon = strrchr(ext, ':');
        if (colon == NULL || (size_t)(colon - ext) >= sizeof(D.host))
            return -1;
        memcpy(D.host, ext, (size_t)(colon - ext));
        D.port = atoi(colon + 1);
        D.external = true;
        return 0;
    }
    snprintf(D.host, sizeof(D.host), "127.0.0.1");
    {
        static char limit[16];
        static const char *args[16];
        static const struct tsrv_opts raw = {.flags = TSRV_RAW};
        int n = 0;

        snprintf(limit, sizeof(limit), "%d", TAG_REPLY_LIMIT);
        /* -p auto: the kernel picks the port, the port file says it */
        args[n++] = "-l";
        args[n++] = "127.0.0.1";
        args[n++] = "-p";
        args[n++] = "auto";
        args[n++] = "-n";
        args[n++] = nnet;
        args[n++] = "-t";
        args[n++] = npay;
        args[n++] = "-m";
        args[n++] = "64";
        args[n++] = "-v";
        args[n++] = "1";
        args[n++] = "--tag-reply-limit";
        args[n++] = limit;
        args[n] = NULL;
        if (tsrv_start_opts(&D.t, &raw, args) == 0) {
            D.pid = D.t.pid;
            D.port = D.t.port;
            return 0;
        }
        tsrv_stop(&D.t);
    }
    return -1;
}

static void on_crash(int sig)
{
    if (D.pid > 0 && !D.external)
        kill(D.pid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int daemon_stop(void)
{
    int rc;

    if (D.external || D.pid <= 0)
        return 0;
    /* A graceful stop exits 0 (and a sanitizer build finds no leak); the
     * harness prints the daemon's log if not. */
    rc = tsrv_stop(&D.t);
    D.pid = 0;
    if (rc == 0)
        return 0;
    fprintf(stderr, "mdcached did not stop cleanly (exit %d)\n", rc);
    return -1;
}

static int setup_symped(void **state)
{
    (void)state;
    return daemon_start("2", "0");
}
static int setup_amped(void **state)
{
    (void)state;
    return daemon_start("1", "2");
}
/* cmocka does not count a failed group teardown: main() does. */
static int teardown_failures;

static int teardown(void **state)
{
    (void)state;
    if (daemon_stop() == 0)
        return 0;
    teardown_failures++;
    return -1;
}

/* ---- I/O helpers ----------------------------------------------------------
 */

static int conn_open(void)
{
    int fd = try_connect();

    assert_true(fd >= 0);
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        assert_true(k > 0);
        c += k;
        n -= (size_t)k;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* Read exactly n bytes; returns how many came before EOF or timeout. */
static size_t recv_n(int fd, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t k;

        if (poll(&p, 1, IO_TIMEOUT_MS) <= 0)
            break;
        k = recv(fd, (char *)buf + got, n - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* Read one line (with its \r\n) into buf. */
static void recv_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;

    while (n + 1 < cap) {
        assert_int_equal(recv_n(fd, buf + n, 1), 1);
        if (buf[n++] == '\n')
            break;
    }
    buf[n] = '\0';
}

static void expect_bytes(int fd, const void *want, size_t n)
{
    char *got = malloc(n + 1);

    assert_non_null(got);
    got[recv_n(fd, got, n)] = '\0';
    if (memcmp(got, want, n) != 0)
        fail_msg("expected \"%.*s\", got \"%s\"", (int)(n > 300 ? 300 : n),
                 (const char *)want, got);
    free(got);
}

static void expect_str(int fd, const char *want)
{
    expect_bytes(fd, want, strlen(want));
}

/* Send a request and check the whole reply. */
static void xchg(int fd, const char *req, const char *want)
{
    send_str(fd, req);
    expect_str(fd, want);
}

/* No more bytes within ms (replies that must stay silent). */
static void expect_silence(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    char c;

    if (poll(&p, 1, ms) > 0) {
        ssize_t k = recv(fd, &c, 1, MSG_PEEK);
        if (k > 0)
            fail_msg("unexpected byte 0x%02x", (unsigned char)c);
    }
}

static void expect_eof(int fd)
{
    char buf[256];
    struct pollfd p = {fd, POLLIN, 0};

    assert_true(poll(&p, 1, IO_TIMEOUT_MS) > 0);
    assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
}

/* When the command that set the TTL read next was sent (ttl_mark()). */
static struct timespec ttl_set_at;

static void ttl_mark(void)
{
    clock_gettime(CLOCK_MONOTONIC, &ttl_set_at);
}

/* Read one line equal to fmt with %d as ttl less the seconds that may have
 * ticked since ttl_mark(): ttl or ttl - 1 on an idle machine; a busy one
 * can take more than a second between the store and the read (ttl - 2
 * seen at load average 50), and this test measures how long it did. */
static void expect_ttl_line(int fd, const char *fmt, int ttl)
{
    char line[512], a[512], b[512];
    struct timespec now;

    recv_line(fd, line, sizeof(line));
    clock_gettime(CLOCK_MONOTONIC, &now);
    long late = (long)(now.tv_sec - ttl_set_at.tv_sec) + 1;
    for (long d = 0; d <= late; d++) {
        snprintf(b, sizeof(b), fmt, ttl - (int)d);
        if (strcmp(line, b) == 0)
            return;
    }
    snprintf(a, sizeof(a), fmt, ttl);
    fail_msg("expected \"%s\" (or up to %ld s less), got \"%s\"", a, late,
             line);
}

/* A key of this test run, unique across tests and runs on one daemon. */
static const char *ukey(char *buf, size_t cap, const char *base)
{
    snprintf(buf, cap, "%s_%d_%u", base, (int)getpid(), ++key_seq);
    return buf;
}

static uint64_t gets_cas(int fd, const char *key)
{
    char line[512], cmd[300];
    unsigned long long cas = 0;
    unsigned flags, bytes;
    char k[300];

    snprintf(cmd, sizeof(cmd), "gets %s\r\n", key);
    send_str(fd, cmd);
    recv_line(fd, line, sizeof(line));
    assert_int_equal(
        sscanf(line, "VALUE %299s %u %u %llu", k, &flags, &bytes, &cas), 4);
    recv_n(fd, line, bytes + 2);
    recv_line(fd, line, sizeof(line));
    assert_string_equal(line, "END\r\n");
    return cas;
}

/* ---- tests ----------------------------------------------------------------
 */

static void test_storage_commands(void **state)
{
    char k[64], b[512];
    uint64_t cas;
    int fd = conn_open();
    (void)state;

    ukey(k, sizeof(k), "st");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    xchg(fd, b, "END\r\n");
    snprintf(b, sizeof(b), "add %s 5 0 3\r\nabc\r\n", k);
    xchg(fd, b, "STORED\r\n");
    xchg(fd, b, "NOT_STORED\r\n");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    snprintf(b + 200, 200, "VALUE %s 5 3\r\nabc\r\nEND\r\n", k);
    xchg(fd, b, b + 200);
    snprintf(b, sizeof(b), "replace %s 6 0 2\r\nxy\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "append %s 0 0 2\r\nzz\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "prepend %s 0 0 2\r\naa\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    snprintf(b + 200, 200, "VALUE %s 6 6\r\naaxyzz\r\nEND\r\n", k);
    xchg(fd, b, b + 200);

    cas = gets_cas(fd, k);
    snprintf(b, sizeof(b), "cas %s 7 0 1 %llu\r\nC\r\n", k,
             (unsigned long long)cas + 1000);
    xchg(fd, b, "EXISTS\r\n");
    snprintf(b, sizeof(b), "cas %s 7 0 1 %llu\r\nC\r\n", k,
             (unsigned long long)cas);
    xchg(fd, b, "STORED\r\n");
    xchg(fd, b, "EXISTS\r\n");
    snprintf(b, sizeof(b), "cas nosuch_%s 7 0 1 1\r\nC\r\n", k);
    xchg(fd, b, "NOT_FOUND\r\n");
    snprintf(b, sizeof(b), "replace nosuch_%s 0 0 1\r\nC\r\n", k);
    xchg(fd, b, "NOT_STORED\r\n");
    snprintf(b, sizeof(b), "append nosuch_%s 0 0 1\r\nC\r\n", k);
    xchg(fd, b, "NOT_STORED\r\n");

    /* noreply: nothing at all, the next reply comes next. */
    snprintf(b, sizeof(b),
             "set %s 1 0 1 noreply\r\nA\r\nappend %s 0 0 1 noreply\r\nB\r\n"
             "add %s 0 0 1 noreply\r\nX\r\ncas %s 0 0 1 1 noreply\r\nX\r\n"
             "get %s\r\n",
             k, k, k, k, k);
    snprintf(b + 400, 100, "VALUE %s 1 2\r\nAB\r\nEND\r\n", k);
    xchg(fd, b, b + 400);
    close(fd);
}

static void test_counters_touch_delete(void **state)
{
    char k[64], b[512];
    int fd = conn_open();
    (void)state;

    ukey(k, sizeof(k), "ctr");
    snprintf(b, sizeof(b), "set %s 3 0 1\r\n5\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "incr %s 1\r\n", k);
    xchg(fd, b, "6\r\n");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    snprintf(b + 200, 200, "VALUE %s 3 1\r\n6\r\nEND\r\n", k);
    xchg(fd, b, b + 200);
    snprintf(b, sizeof(b), "incr %s 18446744073709551615\r\n", k);
    xchg(fd, b, "5\r\n"); /* wraps at 2^64 */
    snprintf(b, sizeof(b), "decr %s 100\r\n", k);
    xchg(fd, b, "0\r\n"); /* stops at 0 */
    snprintf(b, sizeof(b),
             "incr %s 10 noreply\r\ndecr %s 3 noreply\r\n"
             "incr %s 0\r\n",
             k, k, k);
    xchg(fd, b, "7\r\n");
    snprintf(b, sizeof(b), "incr %s x\r\n", k);
    xchg(fd, b, "CLIENT_ERROR invalid numeric delta argument\r\n");
    snprintf(b, sizeof(b), "incr nosuch_%s 1\r\n", k);
    xchg(fd, b, "NOT_FOUND\r\n");
    snprintf(b, sizeof(b), "set %s 0 0 1\r\nx\r\nincr %s 1\r\n", k, k);
    xchg(fd, b,
         "STORED\r\nCLIENT_ERROR cannot increment or decrement "
         "non-numeric value\r\n");

    ttl_mark();
    snprintf(b, sizeof(b), "touch %s 100\r\n", k);
    xchg(fd, b, "TOUCHED\r\n");
    snprintf(b, sizeof(b), "touch nosuch_%s 100\r\n", k);
    xchg(fd, b, "NOT_FOUND\r\n");
    snprintf(b, sizeof(b), "mg %s t\r\n", k);
    send_str(fd, b);
    expect_ttl_line(fd, "HD t%d\r\n", 100);
    ttl_mark();
    snprintf(b, sizeof(b), "gat 200 %s nosuch_%s\r\n", k, k);
    snprintf(b + 200, 200, "VALUE %s 0 1\r\nx\r\nEND\r\n", k);
    xchg(fd, b, b + 200);
    snprintf(b, sizeof(b), "mg %s t\r\n", k);
    send_str(fd, b);
    expect_ttl_line(fd, "HD t%d\r\n", 200);
    /* A negative exptime expires at once. */
    snprintf(b, sizeof(b), "touch %s -1\r\nget %s\r\n", k, k);
    xchg(fd, b, "TOUCHED\r\nEND\r\n");

    snprintf(b, sizeof(b), "set %s 0 0 1\r\nx\r\ndelete %s\r\ndelete %s\r\n", k,
             k, k);
    xchg(fd, b, "STORED\r\nDELETED\r\nNOT_FOUND\r\n");
    snprintf(b, sizeof(b),
             "set %s 0 0 1 noreply\r\nx\r\ndelete %s noreply\r\n"
             "delete %s 0\r\n",
             k, k, k);
    xchg(fd, b, "NOT_FOUND\r\n");
    snprintf(b, sizeof(b), "delete %s 5\r\n", k);
    xchg(fd, b,
         "CLIENT_ERROR bad command line format.  Usage: delete "
         "<key> [noreply]\r\n");
    close(fd);
}

static void test_admin_commands(void **state)
{
    char line[512];
    int fd = conn_open(), n = 0;
    bool saw_cmd_get = false, saw_item = false;
    (void)state;

    xchg(fd, "version\r\n", "VERSION 1.6.0-mdcached-" PACKAGE_VERSION "\r\n");
    xchg(fd, "verbosity 1\r\n", "OK\r\n");
    xchg(fd, "verbosity 0\r\n", "OK\r\n");
    {
        /* an empty first line selects the text protocol, as in memcached */
        int e = conn_open();
        xchg(e, "\r\nversion\r\n",
             "ERROR\r\nVERSION 1.6.0-mdcached-" PACKAGE_VERSION "\r\n");
        close(e);
    }
    xchg(fd, "verbosity 1 noreply\r\nmn\r\n", "MN\r\n");
    xchg(fd, "verbosity\r\n", "ERROR\r\n");
    xchg(fd, "bogus\r\n", "ERROR\r\n");
    xchg(fd, "stats nosuchgroup\r\n", "ERROR\r\n");
    /* a delayed flush is accepted (30 days away: it never fires here) */
    xchg(fd, "flush_all 2592000\r\n", "OK\r\n");

    send_str(fd, "stats\r\n");
    for (;;) {
        recv_line(fd, line, sizeof(line));
        if (strcmp(line, "END\r\n") == 0)
            break;
        assert_memory_equal(line, "STAT ", 5);
        assert_true(strlen(line) > 8);
        assert_memory_equal(line + strlen(line) - 2, "\r\n", 2);
        saw_cmd_get |= strncmp(line, "STAT cmd_get ", 13) == 0;
        saw_item |= strncmp(line, "STAT curr_items ", 16) == 0;
        n++;
    }
    assert_true(saw_cmd_get && saw_item && n > 20);

    send_str(fd, "stats settings\r\n");
    saw_item = false;
    for (;;) {
        recv_line(fd, line, sizeof(line));
        if (strcmp(line, "END\r\n") == 0)
            break;
        assert_memory_equal(line, "STAT ", 5);
        saw_item |= strncmp(line, "STAT max-item-size ", 19) == 0;
    }
    assert_true(saw_item);
    xchg(fd, "quit\r\n", "");
    expect_eof(fd);
    close(fd);
}

/* flush_all runs alone: it empties the cache other tests use. */
static void test_flush_all(void **state)
{
    char k[64], b[256];
    int fd = conn_open();
    (void)state;

    if (D.external)
        skip();
    ukey(k, sizeof(k), "fl");
    snprintf(b, sizeof(b), "set %s 0 0 1\r\nx\r\nflush_all\r\nget %s\r\n", k,
             k);
    xchg(fd, b, "STORED\r\nOK\r\nEND\r\n");
    snprintf(b, sizeof(b),
             "set %s 0 0 1\r\nx\r\nflush_all noreply\r\nflush_all 0\r\n"
             "flush_all -1\r\nget %s\r\n",
             k, k);
    xchg(fd, b, "STORED\r\nOK\r\nOK\r\nEND\r\n");
    close(fd);
}

static void test_multiget_zero_copy(void **state)
{
    enum { NKEYS = 100, BIG = 600 * 1024 };
    char(*keys)[64] = calloc(NKEYS, 64);
    char *big = malloc(BIG), *b = malloc(NKEYS * 64 + 64);
    char line[512];
    int fd = conn_open(), i, n;
    (void)state;

    assert_non_null(keys);
    assert_non_null(big);
    for (i = 0; i < BIG; i++)
        big[i] = (char)(i * 7 + i / 251);
    memcpy(big + 1000, "\r\nEND\r\n", 7); /* values are binary-safe */
    for (i = 0; i < NKEYS; i++) {
        ukey(keys[i], 64, "mg");
        if (i % 3 == 2)
            continue; /* a third are misses */
        n = snprintf(line, sizeof(line), "set %s %d 0 %d\r\n", keys[i], i,
                     i == 50 ? BIG : i);
        send_all(fd, line, (size_t)n);
        send_all(fd, i == 50 ? big : big + 1, i == 50 ? BIG : (size_t)i);
        send_all(fd, "\r\n", 2);
        expect_str(fd, "STORED\r\n");
    }
    n = snprintf(b, 8, "gets");
    for (i = 0; i < NKEYS; i++)
        n += sprintf(b + n, " %s", keys[i]);
    n += sprintf(b + n, "\r\n");
    send_all(fd, b, (size_t)n);
    for (i = 0; i < NKEYS; i++) {
        char k[64];
        unsigned flags, bytes;
        unsigned long long cas;
        char *v;

        if (i % 3 == 2)
            continue;
        recv_line(fd, line, sizeof(line));
        assert_int_equal(
            sscanf(line, "VALUE %63s %u %u %llu", k, &flags, &bytes, &cas), 4);
        assert_string_equal(k, keys[i]);
        assert_int_equal(flags, i);
        assert_int_equal(bytes, i == 50 ? BIG : i);
        v = malloc(bytes + 2);
        assert_int_equal(recv_n(fd, v, bytes + 2), bytes + 2);
        assert_memory_equal(v, i == 50 ? big : big + 1, bytes);
        assert_memory_equal(v + bytes, "\r\n", 2);
        free(v);
    }
    expect_str(fd, "END\r\n");
    free(keys);
    free(big);
    free(b);
    close(fd);
}

/* Every request sent one byte at a time: partial lines and data blocks. */
static void test_split_every_byte(void **state)
{
    char k[64], b[512], want[512];
    int fd = conn_open(), n;
    size_t i;
    (void)state;

    ukey(k, sizeof(k), "split");
    n = snprintf(b, sizeof(b),
                 "set %s 9 0 5\r\nhe\r\no\r\nget %s\r\nms %s 2 T0 F1\r\nhi\r\n"
                 "mg %s v f\r\nincr nosuch_%s 1\r\n",
                 k, k, k, k, k);
    snprintf(want, sizeof(want),
             "STORED\r\nVALUE %s 9 5\r\nhe\r\no\r\nEND\r\nHD\r\nVA 2 f1\r\n"
             "hi\r\nNOT_FOUND\r\n",
             k);
    for (i = 0; i < (size_t)n; i++) {
        send_all(fd, b + i, 1);
        if (i % 7 == 0)
            usleep(1000);
    }
    expect_str(fd, want);
    close(fd);
}

/* Send a storage line then a value of n bytes of 'c' and its "\r\n". */
static void send_value(int fd, const char *line, size_t n, char c)
{
    char *v = malloc(n + 2);

    assert_non_null(v);
    memset(v, c, n);
    memcpy(v + n, "\r\n", 2);
    send_str(fd, line);
    send_all(fd, v, n + 2);
    free(v);
}

/* -I at its boundary, as memcached 1.6.18 counts it (-I 1m, the default):
 * a record is 59 bytes of memcached's item header + key + value (+ 4 with
 * flags), so the largest value stored is 1048576 - 59 - klen (4 fewer
 * with flags); one byte more is refused with memcached's words and its
 * data discarded, the connection carrying on.  An append or prepend that
 * would take a record over it answers NOT_STORED (ms in mode A: NS) and
 * leaves the record, as memcached.  Run with MDC_TEST_TEXT_SERVER against
 * memcached 1.6.18 -I 1m, it passes as it is. */
static void test_item_size_boundary(void **state)
{
    char k[64], b[512], want[512];
    int fd = conn_open();
    size_t max;

    (void)state;
    ukey(k, sizeof(k), "isz");
    max = ((size_t)1 << 20) - 59 - strlen(k);
    /* exactly the largest: stored, and read back whole */
    snprintf(b, sizeof(b), "set %s 0 0 %zu\r\n", k, max);
    send_value(fd, b, max, 'a');
    expect_str(fd, "STORED\r\n");
    snprintf(b, sizeof(b), "mg %s s\r\n", k);
    snprintf(want, sizeof(want), "HD s%zu\r\n", max);
    xchg(fd, b, want);
    /* one byte more: refused, the old record removed (as memcached's set
     * does), the data discarded, the next request answered */
    snprintf(b, sizeof(b), "set %s 0 0 %zu\r\n", k, max + 1);
    send_value(fd, b, max + 1, 'b');
    expect_str(fd, "SERVER_ERROR object too large for cache\r\n");
    xchg(fd, "mn\r\n", "MN\r\n");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    xchg(fd, b, "END\r\n");
    /* with flags: 4 bytes fewer */
    snprintf(b, sizeof(b), "set %s 7 0 %zu\r\n", k, max - 4);
    send_value(fd, b, max - 4, 'c');
    expect_str(fd, "STORED\r\n");
    snprintf(b, sizeof(b), "set %s 7 0 %zu\r\n", k, max - 3);
    send_value(fd, b, max - 3, 'c');
    expect_str(fd, "SERVER_ERROR object too large for cache\r\n");
    xchg(fd, "mn\r\n", "MN\r\n");
    /* meta set, the same count */
    snprintf(b, sizeof(b), "ms %s %zu\r\n", k, max + 1);
    send_value(fd, b, max + 1, 'd');
    expect_str(fd, "SERVER_ERROR object too large for cache\r\n");
    snprintf(b, sizeof(b), "ms %s %zu\r\n", k, max);
    send_value(fd, b, max, 'd');
    expect_str(fd, "HD\r\n");
    /* joined over the limit: NOT_STORED, the record kept */
    snprintf(b, sizeof(b), "append %s 0 0 1\r\nz\r\n", k);
    xchg(fd, b, "NOT_STORED\r\n");
    snprintf(b, sizeof(b), "prepend %s 0 0 1\r\nz\r\n", k);
    xchg(fd, b, "NOT_STORED\r\n");
    snprintf(b, sizeof(b), "ms %s 1 MA\r\nz\r\n", k);
    xchg(fd, b, "NS\r\n");
    snprintf(b, sizeof(b), "mg %s s\r\n", k);
    snprintf(want, sizeof(want), "HD s%zu\r\n", max);
    xchg(fd, b, want);
    /* one byte under: the append fits exactly */
    snprintf(b, sizeof(b), "set %s 0 0 %zu\r\n", k, max - 1);
    send_value(fd, b, max - 1, 'e');
    expect_str(fd, "STORED\r\n");
    snprintf(b, sizeof(b), "append %s 0 0 1\r\nz\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "mg %s s\r\n", k);
    xchg(fd, b, want);
    close(fd);
}

static void test_resync_and_limits(void **state)
{
    char k[64], b[512];
    int fd = conn_open();
    size_t big = 2 * 1024 * 1024, i;
    char *v = malloc(64 * 1024);
    (void)state;

    ukey(k, sizeof(k), "rs");
    /* Bad data chunk: error, then the stream goes on. */
    snprintf(b, sizeof(b), "set %s 0 0 1\r\nxy\r\nget %s\r\n", k, k);
    xchg(fd, b, "CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n");
    /* A bad line's data block is discarded, never run as a command. */
    snprintf(b, sizeof(b), "set %s x 0 11\r\nflush_all\r\n\r\nmn\r\n", k);
    xchg(fd, b, "CLIENT_ERROR bad command line format\r\nMN\r\n");
    snprintf(b, sizeof(b), "set %s 0 0\r\nmn\r\n", k);
    xchg(fd, b, "ERROR\r\nMN\r\n");
    /* A value over the item size (1 MiB): refused at once, discarded as
     * it streams in, then the connection carries on. */
    snprintf(b, sizeof(b), "set %s 0 0 %zu\r\n", k, big);
    xchg(fd, b, "SERVER_ERROR object too large for cache\r\n");
    memset(v, 'v', 64 * 1024);
    for (i = 0; i < big; i += 64 * 1024)
        send_all(fd, v, 64 * 1024);
    snprintf(b, sizeof(b), "\r\nget %s\r\n", k);
    xchg(fd, b, "END\r\n");
    snprintf(b, sizeof(b), "set %s 0 0 %zu noreply\r\n", k, big);
    send_str(fd, b);
    for (i = 0; i < big; i += 64 * 1024)
        send_all(fd, v, 64 * 1024);
    xchg(fd, "\r\nmn\r\n", "MN\r\n");
    /* Key of 251 bytes. */
    memset(b, 'k', 251);
    b[251] = '\0';
    send_str(fd, "get ");
    send_str(fd, b);
    xchg(fd, "\r\n", "CLIENT_ERROR bad command line format\r\n");
    close(fd);

    /* No newline within 2048 bytes: error, then close. */
    fd = conn_open();
    send_str(fd, "get_");
    send_all(fd, v, 4000);
    expect_str(fd, "CLIENT_ERROR line too long\r\n");
    expect_eof(fd);
    close(fd);
    free(v);
}

static void test_meta_commands(void **state)
{
    char k[64], b[512], w[512];
    uint64_t cas;
    int fd = conn_open();
    (void)state;

    ukey(k, sizeof(k), "meta");
    ttl_mark();
    snprintf(b, sizeof(b), "ms %s 2 F5 T100 k Oab\r\nhi\r\n", k);
    snprintf(w, sizeof(w), "HD k%s Oab\r\n", k);
    xchg(fd, b, w);
    snprintf(b, sizeof(b), "mg %s s v f t k Oxy q\r\n", k);
    send_str(fd, b);
    snprintf(w, sizeof(w), "VA 2 s2 f5 t%%d k%s Oxy\r\n", k);
    expect_ttl_line(fd, w, 100);
    expect_str(fd, "hi\r\n");
    snprintf(b, sizeof(b), "mg %s\r\n", k);
    xchg(fd, b, "HD\r\n");
    snprintf(b, sizeof(b), "mg nosuch_%s v q\r\nmg nosuch_%s v\r\nmn\r\n", k,
             k);
    xchg(fd, b, "EN\r\nMN\r\n");
    snprintf(b, sizeof(b), "ms %s 2 ME\r\nhi\r\n", k);
    xchg(fd, b, "NS\r\n");
    snprintf(b, sizeof(b), "ms %s 1 MA q\r\n!\r\nmg %s v\r\n", k, k);
    xchg(fd, b, "VA 3\r\nhi!\r\n");
    cas = gets_cas(fd, k);
    snprintf(b, sizeof(b), "ms %s 1 C%llu c\r\nX\r\n", k,
             (unsigned long long)cas + 1);
    xchg(fd, b, "EX c0\r\n");
    snprintf(b, sizeof(b), "ms %s 1 C%llu\r\nX\r\nmg %s v\r\n", k,
             (unsigned long long)cas, k);
    xchg(fd, b, "HD\r\nVA 1\r\nX\r\n");
    snprintf(b, sizeof(b), "md %s q\r\nmd %s k\r\n", k, k);
    snprintf(w, sizeof(w), "NF k%s\r\n", k);
    xchg(fd, b, w);
    /* ma with auto-create, delta, mode and value. */
    snprintf(b, sizeof(b),
             "ma %s N0 J10 v\r\nma %s v D5\r\nma %s MD v\r\n"
             "ma %s q\r\nma %s\r\nmg %s v\r\n",
             k, k, k, k, k, k);
    xchg(fd, b,
         "VA 2\r\n10\r\nVA 2\r\n15\r\nVA 2\r\n14\r\nHD\r\nVA 2\r\n16\r\n");
    snprintf(b, sizeof(b), "ma nosuch_%s\r\n", k);
    xchg(fd, b, "NF\r\n");
    snprintf(b, sizeof(b), "me %s\r\n", k);
    send_str(fd, b);
    recv_line(fd, w, sizeof(w));
    snprintf(b, sizeof(b), "ME %s exp=-1 cas=", k);
    assert_memory_equal(w, b, strlen(b));
    assert_non_null(strstr(w, " size=2\r\n"));
    /* base64 keys. */
    xchg(fd, "ms bWI= 2 b k\r\nhi\r\nmg bWI= b k v\r\n",
         "HD kbWI= b\r\nVA 2 kbWI= b\r\nhi\r\n");
    xchg(fd, "mg xx z\r\n", "CLIENT_ERROR invalid flag\r\n");
    xchg(fd, "mn\r\n", "MN\r\n");
    close(fd);
}

/* ms in each mode on a missing and a present key, ma's T and t and its
 * refusal of a value that is not a number, me of a missing key. */
static void test_meta_modes(void **state)
{
    char k[64], n[64], b[1024], w[256];
    int fd = conn_open();
    (void)state;

    ukey(k, sizeof(k), "mode");
    ukey(n, sizeof(n), "num");
    snprintf(b, sizeof(b), "ms %s 2 MR\r\nhi\r\nms %s 2 MP\r\nhi\r\nmn\r\n", k,
             k);
    xchg(fd, b, "NS\r\nNS\r\nMN\r\n");
    snprintf(b, sizeof(b),
             "ms %s 2\r\nhi\r\nms %s 2 MP\r\n<<\r\nmg %s v\r\n"
             "ms %s 2 MR\r\nab\r\nmg %s v\r\n",
             k, k, k, k, k);
    xchg(fd, b, "HD\r\nHD\r\nVA 4\r\n<<hi\r\nHD\r\nVA 2\r\nab\r\n");
    /* add with a CAS: nothing to compare with, the key is there: NS */
    snprintf(b, sizeof(b), "ms %s 1 ME C12345\r\nz\r\nmg %s v\r\n", k, k);
    xchg(fd, b, "NS\r\nVA 2\r\nab\r\n");
    snprintf(b, sizeof(b), "ma %s\r\n", k);
    xchg(fd, b,
         "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    /* created by N with J, then T sets the TTL that t reports */
    snprintf(b, sizeof(b), "ma %s N0 J7 T100 t v\r\n", n);
    xchg(fd, b, "VA 1 t100\r\n7\r\n");
    snprintf(b, sizeof(b), "ma %s t\r\n", n);
    send_str(fd, b);
    recv_line(fd, w, sizeof(w));
    assert_true(strcmp(w, "HD t100\r\n") == 0 || strcmp(w, "HD t99\r\n") == 0);
    snprintf(b, sizeof(b), "me nosuch_%s\r\n", k);
    xchg(fd, b, "EN\r\n");
    close(fd);
}

static void test_tag_commands(void **state)
{
    char k[3][64], b[1024], line[512];
    int fd = conn_open(), i, found = 0;
    int32_t tk = (int32_t)getpid() + (int32_t)key_seq * 7;
    (void)state;

    for (i = 0; i < 3; i++)
        ukey(k[i], sizeof(k[i]), "tag");
    snprintf(b, sizeof(b),
             "tset %s 1 0 2 %d:1,%d:2\r\naa\r\ntset %s 2 0 2 %d:2 noreply\r\n"
             "bb\r\ntset %s 3 0 2 %d:3\r\ncc\r\n",
             k[0], tk, tk, k[1], tk, k[2], tk);
    xchg(fd, b, "STORED\r\nSTORED\r\n");
    snprintf(b, sizeof(b), "me %s\r\n", k[0]);
    send_str(fd, b);
    recv_line(fd, line, sizeof(line));
    snprintf(b, sizeof(b), " tags=%d:1,%d:2\r\n", tk, tk);
    assert_non_null(strstr(line, b));

    /* tget: a union, each record once, in no promised order. */
    snprintf(b, sizeof(b), "tget %d 2 1\r\n", tk);
    send_str(fd, b);
    for (i = 0; i < 2; i++) {
        char key[64], v[8];
        unsigned flags, bytes;

        recv_line(fd, line, sizeof(line));
        assert_int_equal(sscanf(line, "VALUE %63s %u %u", key, &flags, &bytes),
                         3);
        assert_int_equal(bytes, 2);
        recv_n(fd, v, 4);
        if (strcmp(key, k[0]) == 0 && memcmp(v, "aa\r\n", 4) == 0)
            found |= 1;
        if (strcmp(key, k[1]) == 0 && memcmp(v, "bb\r\n", 4) == 0)
            found |= 2;
    }
    expect_str(fd, "END\r\n");
    assert_int_equal(found, 3);
    snprintf(b, sizeof(b), "tgets %d 3\r\n", tk);
    send_str(fd, b);
    recv_line(fd, line, sizeof(line));
    snprintf(b, sizeof(b), "VALUE %s 3 2 ", k[2]);
    assert_memory_equal(line, b, strlen(b));
    expect_str(fd, "cc\r\nEND\r\n");
    snprintf(b, sizeof(b), "tget %d 99\r\n", tk);
    xchg(fd, b, "END\r\n");

    /* tdel, then nothing carrying those tags is left. */
    snprintf(b, sizeof(b), "tdel %d 2 3\r\ntget %d 1 2 3\r\n", tk, tk);
    xchg(fd, b, "DELETED 3\r\nEND\r\n");
    snprintf(b, sizeof(b),
             "get %s %s %s\r\ntdel %d 1 noreply\r\n"
             "tdel %d 1\r\n",
             k[0], k[1], k[2], tk, tk);
    xchg(fd, b, "END\r\nDELETED 0\r\n");

    /* A plain set leaves an untagged record. */
    snprintf(b, sizeof(b),
             "tset %s 0 0 1 %d:7\r\nx\r\nset %s 0 0 1\r\ny\r\n"
             "tget %d 7\r\n",
             k[0], tk, k[0], tk);
    xchg(fd, b, "STORED\r\nSTORED\r\nEND\r\n");

    /* tstack: push returns the generated key, pop the newest first. */
    snprintf(b, sizeof(b), "tpush %d 5 0 0 3\r\none\r\n", tk);
    send_str(fd, b);
    recv_line(fd, line, sizeof(line));
    assert_memory_equal(line, "STORED ", 7);
    line[strlen(line) - 2] = '\0';
    snprintf(b, sizeof(b), "get %s\r\n", line + 7);
    send_str(fd, b);
    snprintf(b, sizeof(b), "VALUE %s 0 3\r\none\r\nEND\r\n", line + 7);
    expect_str(fd, b);
    snprintf(b, sizeof(b), "tpush %d 5 4 0 3 noreply\r\ntwo\r\ntpop %d 5\r\n",
             tk, tk);
    send_str(fd, b);
    recv_line(fd, line, sizeof(line));
    assert_non_null(strstr(line, " 4 3\r\n"));
    expect_str(fd, "two\r\nEND\r\n");
    snprintf(b, sizeof(b), "tpop %d 5\r\n", tk);
    send_str(fd, b);
    recv_line(fd, line, sizeof(line));
    assert_non_null(strstr(line, " 0 3\r\n"));
    expect_str(fd, "one\r\nEND\r\n");
    xchg(fd, b, "END\r\n");

    xchg(fd, "tget 1\r\n", "ERROR\r\n");
    xchg(fd, "tset k 0 0 1 1\r\nx\r\nmn\r\n",
         "CLIENT_ERROR invalid token '1'\r\nMN\r\n");
    close(fd);
}

/* A tget answer over --tag-reply-limit ends with the truncation line. */
static void test_tget_truncated(void **state)
{
    char k[64], b[256], line[512];
    char *v = malloc(1002);
    int fd = conn_open(), i, values = 0;
    int32_t tk = (int32_t)getpid() + 1000 + (int32_t)key_seq;
    (void)state;

    if (D.external)
        skip();
    memset(v, 'q', 1000);
    for (i = 0; i < 10; i++) {
        snprintf(b, sizeof(b), "tset %s 0 0 1000 %d:1\r\n",
                 ukey(k, sizeof(k), "tr"), tk);
        send_str(fd, b);
        send_all(fd, v, 1000);
        xchg(fd, "\r\n", "STORED\r\n");
    }
    snprintf(b, sizeof(b), "tget %d 1\r\n", tk);
    send_str(fd, b);
    for (;;) {
        recv_line(fd, line, sizeof(line));
        if (strncmp(line, "VALUE ", 6) != 0)
            break;
        recv_n(fd, v, 1002);
        values++;
    }
    assert_string_equal(line, "SERVER_ERROR reply truncated\r\n");
    assert_true(values >= 1 && values < 10);
    xchg(fd, "mn\r\n", "MN\r\n");
    free(v);
    close(fd);
}

/* memcached's binary protocol, detected by its first byte on the text
 * port (its own tests: tests/test_mcbin_server.c): a NOOP and a SET
 * answered with magic 0x81, the opcode and opaque echoed, status 0, the
 * header arriving in two writes. */
static void check_binary_served(const uint8_t *req, size_t len, size_t split)
{
    uint8_t got[24];
    int fd = conn_open();

    send_all(fd, req, split);
    usleep(20000);
    send_all(fd, req + split, len - split);
    assert_int_equal(recv_n(fd, got, sizeof(got)), sizeof(got));
    assert_int_equal(got[0], 0x81);
    assert_int_equal(got[1], req[1]);
    assert_int_equal(got[6] << 8 | got[7], 0); /* status: no error */
    assert_memory_equal(got + 12, req + 12, 4);
    close(fd);
}

static void test_binary_served(void **state)
{
    /* a noop, opaque 0xdeadbeef */
    static const uint8_t noop[24] = {0x80, 0x0a, [12] = 0xde, 0xad, 0xbe,
                                     0xef};
    /* a set of "k" = "hello" (flags, exptime as extras), opaque 7 */
    static const uint8_t set[24 + 8 + 1 + 5] = {
        0x80, 0x01, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x0e, 0x00, 0x00, 0x00, 0x07, [32] = 'k', 'h', 'e', 'l', 'l', 'o'};
    (void)state;

    check_binary_served(noop, sizeof(noop), 5);
    check_binary_served(set, sizeof(set), 24);
}

/* Many pipelined gets in one write: answers in order, nothing lost. */
static void test_pipelined_burst(void **state)
{
    enum { N = 2000 };
    char k[64], line[128];
    char *b = malloc(N * 80);
    size_t n = 0;
    int fd = conn_open(), i;
    (void)state;

    ukey(k, sizeof(k), "burst");
    n += (size_t)sprintf(b + n, "set %s 0 0 5\r\nhello\r\n", k);
    for (i = 0; i < N; i++)
        n += (size_t)sprintf(b + n, i % 2 ? "get %s\r\n" : "mg %s v\r\n", k);
    send_all(fd, b, n);
    expect_str(fd, "STORED\r\n");
    for (i = 0; i < N; i++) {
        if (i % 2) {
            snprintf(line, sizeof(line), "VALUE %s 0 5\r\nhello\r\nEND\r\n", k);
            expect_str(fd, line);
        } else {
            expect_str(fd, "VA 5\r\nhello\r\n");
        }
    }
    expect_silence(fd, 50);
    free(b);
    close(fd);
}

/* One number of "stats" (the line "STAT name <n>"), asked on fd. */
static uint64_t stat_u64(int fd, const char *name)
{
    char line[512], want[128];
    uint64_t v = UINT64_MAX;
    size_t wl = (size_t)snprintf(want, sizeof(want), "STAT %s ", name);

    send_str(fd, "stats\r\n");
    for (;;) {
        recv_line(fd, line, sizeof(line));
        if (strcmp(line, "END\r\n") == 0)
            break;
        if (strncmp(line, want, wl) == 0)
            v = strtoull(line + wl, NULL, 10);
    }
    if (v == UINT64_MAX)
        fail_msg("stats has no %s", name);
    return v;
}

/* conn_buffers_lent reaches want within 3 s (a reply the client has read
 * may wait a moment for its send's completion on the server). */
static uint64_t lent_reaches(int fd, uint64_t want)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 300; i++) {
        v = stat_u64(fd, "conn_buffers_lent");
        if (v == want)
            break;
        usleep(10000);
    }
    return v;
}

/*
 * Buffers lent per thread (docs/threads-models.md): a connection borrows
 * its input and output buffers only while it has bytes to parse or to
 * send.  NIDLE clients each send a get (small and zero-copy large values)
 * and read the reply: once they idle, none holds a buffer.  A client that
 * left half a request holds exactly one (its input) until it finishes it;
 * NHALF of them at once take more than the pool holds, and the misses are
 * counted.
 */
static void test_idle_conns_hold_no_buffers(void **state)
{
    enum { NIDLE = 40, NHALF = 160, BIG = 5000 };
    int adm = conn_open(), fds[NIDLE], half[NHALF], i;
    char k[64], kb[64], req[256], *big = malloc(BIG + 64);
    uint64_t m0, m1, m2;
    (void)state;

    if (D.external) {
        close(adm);
        free(big);
        skip(); /* other clients may hold buffers */
    }
    ukey(k, sizeof(k), "idle");
    ukey(kb, sizeof(kb), "idlebig");
    snprintf(req, sizeof(req), "set %s 0 0 5\r\nhello\r\n", k);
    xchg(adm, req, "STORED\r\n");
    memset(big, 'b', BIG);
    snprintf(req, sizeof(req), "set %s 0 0 %d\r\n", kb, BIG);
    send_str(adm, req);
    send_all(adm, big, BIG);
    xchg(adm, "\r\n", "STORED\r\n");
    m0 = stat_u64(adm, "conn_buffer_pool_misses");
    for (i = 0; i < NIDLE; i++) {
        char want[256];

        fds[i] = conn_open();
        snprintf(req, sizeof(req), "get %s\r\n", i % 2 ? kb : k);
        send_str(fds[i], req);
        if (i % 2) {
            snprintf(want, sizeof(want), "VALUE %s 0 %d\r\n", kb, BIG);
            expect_str(fds[i], want);
            expect_bytes(fds[i], big, BIG);
            expect_str(fds[i], "\r\nEND\r\n");
        } else {
            snprintf(want, sizeof(want), "VALUE %s 0 5\r\nhello\r\nEND\r\n",
                     k);
            expect_str(fds[i], want);
        }
    }
    assert_int_equal(lent_reaches(adm, 0), 0);
    /* one after another, the clients reused a few pooled buffers */
    m1 = stat_u64(adm, "conn_buffer_pool_misses");
    assert_true(m1 - m0 < NIDLE / 2);

    /* half a request: its input stays lent, and nothing else */
    snprintf(req, sizeof(req), "get %s", k);
    send_str(fds[0], req);
    assert_int_equal(lent_reaches(adm, 1), 1);
    send_str(fds[0], "\r\n");
    snprintf(req, sizeof(req), "VALUE %s 0 5\r\nhello\r\nEND\r\n", k);
    expect_str(fds[0], req);
    assert_int_equal(lent_reaches(adm, 0), 0);

    /* NHALF halves at once: each holds an input buffer, more than the
     * pools keep (CONN_POOL_MAX a thread), so some were misses */
    for (i = 0; i < NHALF; i++) {
        half[i] = conn_open();
        snprintf(req, sizeof(req), "get %s", k);
        send_str(half[i], req);
    }
    assert_int_equal(lent_reaches(adm, NHALF), NHALF);
    m2 = stat_u64(adm, "conn_buffer_pool_misses");
    assert_true(m2 > m1);
    for (i = 0; i < NHALF; i++) {
        send_str(half[i], "\r\n");
        snprintf(req, sizeof(req), "VALUE %s 0 5\r\nhello\r\nEND\r\n", k);
        expect_str(half[i], req);
    }
    assert_int_equal(lent_reaches(adm, 0), 0);
    for (i = 0; i < NHALF; i++)
        close(half[i]);
    for (i = 0; i < NIDLE; i++)
        close(fds[i]);
    close(adm);
    free(big);
}

/* conn_backend_held reaches want; 30 s is a ceiling only a hang crosses
 * (3 s was crossed by a TSan build on a loaded machine). */
static uint64_t held_reaches(int fd, uint64_t want)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 3000; i++) {
        v = stat_u64(fd, "conn_backend_held");
        if (v == want)
            break;
        usleep(10000);
    }
    return v;
}

/*
 * Issue 34, idle connections: besides lent buffers, an idle connection
 * holds no backend state beyond its struct (conn_backend_held counts it:
 * epoll's write event, made only while a write would block; io_uring's
 * iovec array, lent for a sendmsg in flight, and stash).  A reader that
 * stops reading large replies makes the server hold some; once it has
 * read them and idles, with NIDLE other clients idle after a get, none is
 * held.  Before, every epoll connection held its write event for life.
 */
static void test_idle_conns_hold_no_backend_state(void **state)
{
    enum { NIDLE = 20, NGET = 32, BIG = 512 * 1024 };
    int adm = conn_open(), slow, fds[NIDLE], i;
    uint64_t held;
    char k[64], req[256], want[256];
    char *big = malloc(BIG), *got = malloc(BIG);
    (void)state;

    assert_non_null(big);
    assert_non_null(got);
    if (D.external) {
        close(adm);
        free(big);
        free(got);
        skip(); /* other clients may hold some */
    }
    ukey(k, sizeof(k), "heldbig");
    memset(big, 'h', BIG);
    snprintf(req, sizeof(req), "set %s 0 0 %d\r\n", k, BIG);
    send_str(adm, req);
    send_all(adm, big, BIG);
    xchg(adm, "\r\n", "STORED\r\n");
    for (i = 0; i < NIDLE; i++) {
        fds[i] = conn_open();
        snprintf(req, sizeof(req), "get %s-none\r\n", k);
        xchg(fds[i], req, "END\r\n");
    }
    assert_int_equal(held_reaches(adm, 0), 0);

    /* NGET large replies (16 MiB, more than the socket buffers take) to a
     * reader that does not read yet: the server's send cannot finish, so
     * it holds what a blocked send needs.  The figure read is the one
     * judged: read again, it can be 0 for a moment while the server is
     * still sending (on io_uring a send's iovec array goes back when the
     * send completes and is taken again for the next). */
    slow = conn_open();
    snprintf(req, sizeof(req), "get %s\r\n", k);
    for (i = 0; i < NGET; i++)
        send_str(slow, req);
    held = 0;
    for (i = 0; i < 3000 && held == 0; i++) { /* 30 s: a hang only */
        held = stat_u64(adm, "conn_backend_held");
        if (held == 0)
            usleep(10000);
    }
    assert_true(held > 0);
    snprintf(want, sizeof(want), "VALUE %s 0 %d\r\n", k, BIG);
    for (i = 0; i < NGET; i++) {
        expect_str(slow, want);
        assert_int_equal(recv_n(slow, got, BIG), BIG);
        assert_memory_equal(got, big, BIG);
        expect_str(slow, "\r\nEND\r\n");
    }
    /* all read: every connection idles, and holds nothing but itself */
    assert_int_equal(held_reaches(adm, 0), 0);
    assert_int_equal(lent_reaches(adm, 0), 0);
    close(slow);
    for (i = 0; i < NIDLE; i++)
        close(fds[i]);
    close(adm);
    free(big);
    free(got);
}

/* "get <key>\r\n" and "mg <key> v\r\n" have a shortcut past the general
 * parser (proto_text.c, txt_fast): each reply equals the general path's
 * (the same request ended by a bare "\n", which the shortcut leaves to
 * it), for hits small and large, misses, the longest key, and keys or
 * shapes the shortcut must refuse. */
static void test_get_mg_shortcut(void **state)
{
    static const size_t sizes[] = {5, 1500};
    char k[300], b[2400], v[1600], want[2000];
    size_t i;
    int fd = conn_open();

    (void)state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const char *shapes[] = {"get %s%s", "mg %s v%s"};
        size_t s;

        ukey(k, sizeof(k), "fast");
        memset(v, 'a' + (int)i, sizes[i]);
        v[sizes[i]] = 0;
        snprintf(b, sizeof(b), "set %s 3 0 %zu\r\n%s\r\n", k, sizes[i], v);
        xchg(fd, b, "STORED\r\n");
        for (s = 0; s < 2; s++) {
            if (s == 0)
                snprintf(want, sizeof(want), "VALUE %s 3 %zu\r\n%s\r\nEND\r\n",
                         k, sizes[i], v);
            else
                snprintf(want, sizeof(want), "VA %zu\r\n%s\r\n", sizes[i], v);
            snprintf(b, sizeof(b), shapes[s], k, "\r\n");
            xchg(fd, b, want);
            snprintf(b, sizeof(b), shapes[s], k, "\n");
            xchg(fd, b, want);
        }
    }
    /* misses */
    xchg(fd, "get nosuch_fast\r\n", "END\r\n");
    xchg(fd, "mg nosuch_fast v\r\n", "EN\r\n");
    /* the longest key (250 bytes) and one byte more */
    memset(k, 'L', 250);
    k[250] = 0;
    snprintf(b, sizeof(b), "set %s 0 0 1\r\nx\r\n", k);
    xchg(fd, b, "STORED\r\n");
    snprintf(b, sizeof(b), "get %s\r\n", k);
    snprintf(want, sizeof(want), "VALUE %s 0 1\r\nx\r\nEND\r\n", k);
    xchg(fd, b, want);
    snprintf(b, sizeof(b), "mg %s v\r\n", k);
    xchg(fd, b, "VA 1\r\nx\r\n");
    k[250] = 'L';
    k[251] = 0;
    snprintf(b, sizeof(b), "get %s\r\n", k);
    send_str(fd, b);
    recv_line(fd, want, sizeof(want));
    assert_memory_equal(want, "CLIENT_ERROR", 12);
    snprintf(b, sizeof(b), "mg %s v\r\n", k);
    send_str(fd, b);
    recv_line(fd, want, sizeof(want));
    assert_memory_equal(want, "CLIENT_ERROR", 12);
    /* not the shortcut's shapes: a control byte in the key, two keys,
     * other flags, an empty key */
    send_str(fd, "get a\001b\r\n");
    recv_line(fd, want, sizeof(want));
    assert_memory_equal(want, "CLIENT_ERROR", 12);
    xchg(fd, "get nosuch_a nosuch_b\r\n", "END\r\n");
    xchg(fd, "mg nosuch_fast v q\r\nmn\r\n", "MN\r\n");
    send_str(fd, "get \r\n");
    recv_line(fd, want, sizeof(want));
    assert_true(strncmp(want, "ERROR", 5) == 0 ||
                strncmp(want, "CLIENT_ERROR", 12) == 0);
    xchg(fd, "mn\r\n", "MN\r\n");
    /* the shortcut scans the key eight bytes at a time (txt_key_end):
     * bytes 0x80-0xff belong to a key wherever they sit, and a control
     * byte or DEL at any offset of a long key, in the middle of a word or
     * in the tail, still sends the request to the general parser's
     * CLIENT_ERROR instead of a lookup */
    for (i = 0; i < 20; i++) {
        static const char bad[] = {'\001', '\t', '\177'};
        size_t j;

        memset(k, 'h', 20);
        k[20] = 0;
        k[i] = (char)(i % 2 ? 0x80 : 0xff);
        k[(i + 9) % 20] = (char)0xa0;
        snprintf(b, sizeof(b), "set %s 0 0 2\r\nhi\r\n", k);
        xchg(fd, b, "STORED\r\n");
        snprintf(b, sizeof(b), "get %s\r\n", k);
        snprintf(want, sizeof(want), "VALUE %s 0 2\r\nhi\r\nEND\r\n", k);
        xchg(fd, b, want);
        for (j = 0; j < sizeof(bad); j++) {
            k[i] = bad[j];
            snprintf(b, sizeof(b), "get %s\r\n", k);
            send_str(fd, b);
            recv_line(fd, want, sizeof(want));
            assert_memory_equal(want, "CLIENT_ERROR", 12);
        }
    }
    close(fd);
}

/*
 * memcached's stale records and win tokens (docs/protocol-text.md, "Stale
 * records and win tokens"): mg N vivifies, R hands out a recache win, md I
 * marks stale, ms I stores an older version stale, u leaves no trace, and
 * the "mg <key> v" shortcut defers to them.
 */
static void test_meta_stale(void **state)
{
    char k[64], b[1024], w[1024];
    uint64_t cas;
    int fd = conn_open();
    (void)state;

    /* N: the first miss wins an empty record, the others see Z */
    ukey(k, sizeof(k), "viv");
    ttl_mark();
    snprintf(b, sizeof(b), "mg %s s v N30\r\nmg %s s v N30\r\nmg %s v\r\n"
             "get %s\r\n", k, k, k, k);
    snprintf(w, sizeof(w), "VA 0 s0 W\r\n\r\nVA 0 s0 Z\r\n\r\nVA 0 Z\r\n\r\n"
             "VALUE %s 0 0\r\n\r\nEND\r\n", k);
    xchg(fd, b, w);
    snprintf(b, sizeof(b), "mg %s t q\r\n", k);
    send_str(fd, b);
    expect_ttl_line(fd, "HD t%d Z\r\n", 30);
    /* the winner's store: fresh */
    snprintf(b, sizeof(b), "ms %s 2\r\nok\r\nmg %s v\r\n", k, k);
    xchg(fd, b, "HD\r\nVA 2\r\nok\r\n");
    /* R: a TTL left below R's wins once */
    ukey(k, sizeof(k), "rec");
    snprintf(b, sizeof(b), "ms %s 1 T100\r\nx\r\nmg %s R30\r\nmg %s R200\r\n"
             "mg %s R200\r\nmg %s\r\n", k, k, k, k, k);
    xchg(fd, b, "HD\r\nHD\r\nHD W\r\nHD Z\r\nHD Z\r\n");
    /* md I [T]: stale, value kept, new CAS, the next reader wins */
    ukey(k, sizeof(k), "stale");
    snprintf(b, sizeof(b), "ms %s 3\r\nold\r\n", k);
    xchg(fd, b, "HD\r\n");
    cas = gets_cas(fd, k);
    ttl_mark();
    snprintf(b, sizeof(b), "md %s I C%llu\r\nmd %s I T40 q\r\nmn\r\n", k,
             (unsigned long long)cas + 1, k);
    xchg(fd, b, "EX\r\nMN\r\n");
    snprintf(b, sizeof(b), "mg %s v\r\nmg %s v\r\nget %s\r\nmg %s k v\r\n", k,
             k, k, k);
    snprintf(w, sizeof(w), "VA 3 X W\r\nold\r\nVA 3 Z X\r\nold\r\n"
             "VALUE %s 0 3\r\nold\r\nEND\r\nVA 3 k%s Z X\r\nold\r\n", k, k);
    xchg(fd, b, w);
    assert_true(gets_cas(fd, k) > cas);
    snprintf(b, sizeof(b), "mg %s t\r\n", k);
    send_str(fd, b);
    expect_ttl_line(fd, "HD t%d Z X\r\n", 40);
    /* ms I with an older CAS: stored, still stale, win still out */
    snprintf(b, sizeof(b), "ms %s 3 C%llu\r\nmid\r\nms %s 3 C%llu I\r\nmid\r\n"
             "mg %s v\r\n", k, (unsigned long long)cas, k,
             (unsigned long long)cas, k);
    xchg(fd, b, "EX\r\nHD\r\nVA 3 Z X\r\nmid\r\n");
    /* any store ends it */
    snprintf(b, sizeof(b), "ms %s 3\r\nnew\r\nmg %s v\r\n", k, k);
    xchg(fd, b, "HD\r\nVA 3\r\nnew\r\n");
    /* md T without I deletes, as memcached */
    snprintf(b, sizeof(b), "md %s T30\r\nmg %s v\r\nmd %s I\r\n", k, k, k);
    xchg(fd, b, "HD\r\nEN\r\nNF\r\n");
    /* u: no hit recorded */
    ukey(k, sizeof(k), "nobump");
    snprintf(b, sizeof(b), "ms %s 1\r\nx\r\nmg %s h u\r\nmg %s h u\r\n"
             "mg %s h\r\nmg %s h\r\n", k, k, k, k, k);
    xchg(fd, b, "HD\r\nHD h0\r\nHD h0\r\nHD h0\r\nHD h1\r\n");
    /* l of a record never read: the seconds since its store (0, or 1 over
     * a tick), as memcached; before the fix, the age of the server's
     * clock (its ticks count from the machine's boot) */
    ukey(k, sizeof(k), "lastaccess");
    snprintf(b, sizeof(b), "ms %s 1\r\nx\r\nmg %s h l\r\n", k, k);
    send_str(fd, b);
    expect_str(fd, "HD\r\n");
    char line[128];
    unsigned l = 99999;
    recv_line(fd, line, sizeof(line));
    if (sscanf(line, "HD h0 l%u", &l) != 1)
        fail_msg("mg h l: got \"%s\"", line);
    assert_in_range(l, 0, 1);
    close(fd);
}

/* tdel I [T<ttl>]: every record of the tag stale, one winner each. */
static void test_tdel_stale(void **state)
{
    char k[3][64], b[1024], w[1024];
    int fd = conn_open(), i;
    int32_t tk = (int32_t)getpid() + (int32_t)key_seq * 7 + 1000003;
    (void)state;

    for (i = 0; i < 3; i++)
        ukey(k[i], sizeof(k[i]), "tstale");
    snprintf(b, sizeof(b),
             "tset %s 0 0 2 %d:1\r\naa\r\ntset %s 0 0 2 %d:1,%d:2\r\nbb\r\n"
             "tset %s 0 0 2 %d:2\r\ncc\r\n",
             k[0], tk, k[1], tk, tk, k[2], tk);
    xchg(fd, b, "STORED\r\nSTORED\r\nSTORED\r\n");
    ttl_mark();
    snprintf(b, sizeof(b), "tdel %d 1 I T50\r\n", tk);
    xchg(fd, b, "DELETED 2\r\n");
    for (i = 0; i < 2; i++) {
        snprintf(b, sizeof(b), "mg %s v t\r\n", k[i]);
        send_str(fd, b);
        expect_ttl_line(fd, "VA 2 t%d X W\r\n", 50);
        expect_str(fd, i ? "bb\r\n" : "aa\r\n");
        snprintf(b, sizeof(b), "mg %s v\r\n", k[i]);
        snprintf(w, sizeof(w), "VA 2 Z X\r\n%s\r\n", i ? "bb" : "aa");
        xchg(fd, b, w);
    }
    snprintf(b, sizeof(b), "mg %s v t\r\n", k[2]);
    xchg(fd, b, "VA 2 t-1\r\ncc\r\n");
    /* the records keep their tags: tget still finds both */
    snprintf(b, sizeof(b), "tget %d 1\r\n", tk);
    send_str(fd, b);
    for (i = 0; i < 5; i++)
        recv_line(fd, w, sizeof(w));
    assert_string_equal(w, "END\r\n");
    /* again, any flag order, noreply; a winner's store is fresh */
    snprintf(b, sizeof(b), "tset %s 0 0 2 %d:1\r\nAA\r\nmg %s v\r\n"
             "tdel %d 1 2 T0 I noreply\r\nmg %s v t\r\nmg %s v t\r\n",
             k[0], tk, k[0], tk, k[0], k[2]);
    xchg(fd, b, "STORED\r\nVA 2\r\nAA\r\nVA 2 t-1 X W\r\nAA\r\n"
                "VA 2 t-1 X W\r\ncc\r\n");
    /* the plain form is unchanged */
    snprintf(b, sizeof(b), "tdel %d 2\r\nmg %s v\r\n", tk, k[2]);
    xchg(fd, b, "DELETED 2\r\nEN\r\n");
    /* its grammar: T only with I, each once, nothing else */
    snprintf(b, sizeof(b), "tdel %d 1 T5\r\n", tk);
    xchg(fd, b, "CLIENT_ERROR invalid token 'T5'\r\n");
    snprintf(b, sizeof(b), "tdel %d 1 I I\r\n", tk);
    xchg(fd, b, "CLIENT_ERROR invalid token 'I'\r\n");
    snprintf(b, sizeof(b), "tdel %d 1 I Tx\r\n", tk);
    xchg(fd, b, "CLIENT_ERROR invalid token 'Tx'\r\n");
    snprintf(b, sizeof(b), "tdel %d I\r\n", tk);
    xchg(fd, b, "CLIENT_ERROR invalid token 'I'\r\n");
    close(fd);
}

#define WIN_CLIENTS 8
#define WIN_KEYS 200

/*
 * One client of test_meta_one_winner, in a child process: wait for the
 * start byte, send one mg per key in a pipeline (reply "HD <flags>"), and
 * report per key 'W' (won), 'Z' (another won), '?' (neither) on out.
 */
static void win_client(int start, int out, const char *prefix,
                       const char *flags)
{
    static char req[WIN_KEYS * 128], rep[WIN_KEYS * 64];
    char res[WIN_KEYS], c;
    size_t n = 0, got = 0;
    int fd = try_connect(), lines = 0, i;
    int per = strchr(flags, 'v') ? 2 : 1; /* v: a value line follows */

    if (fd < 0 || read(start, &c, 1) != 1)
        _exit(2);
    for (i = 0; i < WIN_KEYS; i++)
        n += (size_t)snprintf(req + n, sizeof(req) - n, "mg %s%d %s\r\n",
                              prefix, i, flags);
    if (send(fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
        _exit(3);
    while (lines < per * WIN_KEYS && got < sizeof(rep)) {
        ssize_t k = recv(fd, rep + got, sizeof(rep) - got, 0);
        if (k <= 0)
            _exit(4);
        for (ssize_t j = 0; j < k; j++)
            lines += rep[got + (size_t)j] == '\n';
        got += (size_t)k;
    }
    char *p = rep;
    for (i = 0; i < WIN_KEYS; i++) {
        char *e = strchr(p, '\n');
        if (e == NULL)
            _exit(5);
        *e = '\0';
        res[i] = strstr(p, " W") ? 'W' : strstr(p, " Z") ? 'Z' : '?';
        p = e + 1;
        if (per == 2 && (e = strchr(p, '\n')) != NULL)
            p = e + 1;
    }
    _exit(write(out, res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 6);
}

/* Run WIN_CLIENTS clients at once; every key must have exactly one W and
 * every other reply Z. */
static void win_round(const char *prefix, const char *flags)
{
    int start[2], out[2], i, j, status;
    pid_t kids[WIN_CLIENTS];
    char res[WIN_CLIENTS][WIN_KEYS];
    int wins[WIN_KEYS] = {0};

    assert_int_equal(pipe(start), 0);
    assert_int_equal(pipe(out), 0);
    for (i = 0; i < WIN_CLIENTS; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            close(start[1]);
            close(out[0]);
            win_client(start[0], out[1], prefix, flags);
        }
    }
    close(start[0]);
    close(out[1]);
    for (i = 0; i < WIN_CLIENTS; i++) /* all go at once */
        assert_int_equal(write(start[1], "g", 1), 1);
    close(start[1]);
    for (i = 0; i < WIN_CLIENTS; i++) {
        size_t got = 0;
        while (got < WIN_KEYS) {
            ssize_t k = read(out[0], res[i] + got, WIN_KEYS - got);
            if (k <= 0)
                fail_msg("client %d reported %zu of %d keys", i, got,
                         WIN_KEYS);
            got += (size_t)k;
        }
    }
    close(out[0]);
    for (i = 0; i < WIN_CLIENTS; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (i = 0; i < WIN_CLIENTS; i++)
        for (j = 0; j < WIN_KEYS; j++) {
            if (res[i][j] == '?')
                fail_msg("%s%d: a reply without W or Z", prefix, j);
            wins[j] += res[i][j] == 'W';
        }
    for (j = 0; j < WIN_KEYS; j++)
        if (wins[j] != 1)
            fail_msg("%s%d: %d winners (%s)", prefix, j, wins[j], flags);
}

/* Concurrent clients: exactly one winner per record, on vivify and after
 * a stale tag delete. */
static void test_meta_one_winner(void **state)
{
    char prefix[64], b[256];
    int fd = conn_open(), i;
    int32_t tk = (int32_t)getpid() + 2000003;
    (void)state;

    ukey(prefix, sizeof(prefix), "win");
    strcat(prefix, "_");
    win_round(prefix, "N30");
    /* the same records, stored with a tag, then stale by tag */
    for (i = 0; i < WIN_KEYS; i++) {
        snprintf(b, sizeof(b), "tset %s%d 0 0 1 %d:1 noreply\r\nv\r\n",
                 prefix, i, tk);
        send_str(fd, b);
    }
    snprintf(b, sizeof(b), "tdel %d 1 I\r\n", tk);
    send_str(fd, b);
    snprintf(b, sizeof(b), "DELETED %d\r\n", WIN_KEYS);
    expect_str(fd, b);
    win_round(prefix, "s");
    /* and once more through md I */
    for (i = 0; i < WIN_KEYS; i++) {
        snprintf(b, sizeof(b), "md %s%d I q\r\n", prefix, i);
        send_str(fd, b);
    }
    xchg(fd, "mn\r\n", "MN\r\n");
    win_round(prefix, "v");
    close(fd);
}

#define SUITE                                                                  \
    cmocka_unit_test(test_storage_commands),                                   \
        cmocka_unit_test(test_counters_touch_delete),                          \
        cmocka_unit_test(test_admin_commands),                                 \
        cmocka_unit_test(test_flush_all),                                      \
        cmocka_unit_test(test_multiget_zero_copy),                             \
        cmocka_unit_test(test_split_every_byte),                               \
        cmocka_unit_test(test_resync_and_limits),                              \
        cmocka_unit_test(test_item_size_boundary),                             \
        cmocka_unit_test(test_meta_commands),                                  \
        cmocka_unit_test(test_meta_modes),                                     \
        cmocka_unit_test(test_tag_commands),                                   \
        cmocka_unit_test(test_tget_truncated),                                 \
        cmocka_unit_test(test_binary_served),                                 \
        cmocka_unit_test(test_pipelined_burst),                                \
        cmocka_unit_test(test_get_mg_shortcut),                                \
        cmocka_unit_test(test_idle_conns_hold_no_buffers),                     \
        cmocka_unit_test(test_idle_conns_hold_no_backend_state),               \
        cmocka_unit_test(test_meta_stale),                                     \
        cmocka_unit_test(test_tdel_stale),                                     \
        cmocka_unit_test(test_meta_one_winner)

int main(void)
{
    const struct CMUnitTest tests[] = {SUITE};
    int rc;

    signal(SIGPIPE, SIG_IGN);
    signal(SIGABRT, on_crash);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    rc = cmocka_run_group_tests_name("text, SYMPED (-n 2 -t 0)", tests,
                                     setup_symped, teardown);
    if (getenv("MDC_TEST_TEXT_SERVER") == NULL)
        rc |= cmocka_run_group_tests_name("text, AMPED (-n 1 -t 2)", tests,
                                          setup_amped, teardown);
    return rc != 0 || teardown_failures != 0;
}
