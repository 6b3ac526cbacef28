/*
 * test_fault_net.c - the network under faults, against a real daemon
 * (docs/security.md, "What was tested"):
 *  - descriptor exhaustion: the daemon runs with a low RLIMIT_NOFILE and
 *    more clients connect than it has descriptors: accept pauses with a
 *    log line, established clients keep being served, and once clients
 *    leave, accepting resumes by itself;
 *  - text-protocol clients that vanish at every byte offset of a request,
 *    and at every byte offset of a large reply (a small receive buffer
 *    keeps the server mid-reply), by FIN or by RST: nothing is stored
 *    from a partial request, every connection is reclaimed, the server
 *    keeps serving;
 *  - a text client that sends and never reads: paused, then dropped,
 *    while others are served.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Send a text request, read the reply up to and including `end`. */
static int txt_call(int fd, const char *req, size_t rlen, const char *end,
                    char *out, size_t cap)
{
    size_t n = 0;

    if (tc_send_all(fd, req, rlen) < 0)
        return -1;
    while (n + 1 < cap) {
        ssize_t k = recv(fd, out + n, cap - 1 - n, 0);
        if (k <= 0)
            return -1;
        n += (size_t)k;
        out[n] = '\0';
        if (n >= strlen(end) && strcmp(out + n - strlen(end), end) == 0)
            return (int)n;
    }
    return -1;
}

static long long txt_stat(int fd, const char *name)
{
    static char buf[16384];
    char pat[80];
    char *p;

    if (txt_call(fd, "stats\r\n", 7, "END\r\n", buf, sizeof(buf)) < 0)
        return -1;
    snprintf(pat, sizeof(pat), "STAT %s ", name);
    p = strstr(buf, pat);
    return p != NULL ? atoll(p + strlen(pat)) : -1;
}

static bool file_has(const char *path, const char *s)
{
    static char buf[1 << 20];
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, s) != NULL;
}

static void test_fd_exhaustion(void **state)
{
    static const int NCLI = 120;
    struct rlimit old, low;
    char dir[] = "/tmp/mdc-fds-XXXXXX", log[64], buf[256];
    const char *args[] = {"-n", "1", "-c", "10000", "--log-file", log, NULL};
    struct tsrv s;
    int fds[120], a, b, i, served = 0;

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777);
    snprintf(log, sizeof(log), "%s/log", dir);
    /* the daemon inherits a soft limit of 40 descriptors */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 40;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    i = tsrv_start(&s, args);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(i, 0);

    a = tc_connect(&s);
    assert_true(a >= 0);
    assert_int_equal(txt_call(a, "set a 0 0 1\r\nA\r\n", 16, "\r\n", buf,
                              sizeof(buf)), 8);
    /* more clients than the daemon has descriptors: the kernel completes
     * their handshakes (backlog), the daemon cannot accept them all */
    for (i = 0; i < NCLI; i++) {
        fds[i] = tc_connect(&s);
        assert_true(fds[i] >= 0);
    }
    /* a hang's ceiling: 30 s (docs/testing.md, "A busy machine") */
    for (i = 0; i < 3000 && !file_has(log, "Too many open files; pausing");
         i++)
        sleep_ms(10);
    if (!file_has(log, "Too many open files; pausing"))
        fail_msg("no 'pausing' log line in %s", log);
    /* the established client is served throughout */
    for (i = 0; i < 20; i++) {
        assert_int_equal(txt_call(a, "get a\r\n", 7, "END\r\n", buf,
                                  sizeof(buf)),
                         (int)strlen("VALUE a 0 1\r\nA\r\nEND\r\n"));
        sleep_ms(20);
    }
    /* some of the waiting clients were accepted and are served, not all
     * (the daemon has 40 descriptors): every one asks, then the answers
     * are counted until one came (a 30 s ceiling) and the rest have had
     * as long again as that took, at least a second */
    for (i = 0; i < NCLI; i++)
        assert_int_equal(tc_send_all(fds[i], "version\r\n", 9), 0);
    {
        bool got[120] = {false};
        double t0 = now_s(), first = 0;

        while (now_s() - t0 < 30 &&
               (served == 0 || now_s() - t0 < 2 * first + 1)) {
            struct pollfd pf[120];

            for (i = 0; i < NCLI; i++) {
                pf[i].fd = got[i] ? -1 : fds[i];
                pf[i].events = POLLIN;
            }
            if (poll(pf, NCLI, 100) <= 0)
                continue;
            for (i = 0; i < NCLI; i++)
                if (pf[i].revents != 0 &&
                    recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT) > 0) {
                    got[i] = true;
                    if (served++ == 0)
                        first = now_s() - t0;
                }
        }
    }
    assert_true(served > 0 && served < NCLI);
    /* clients leave: accepting resumes by itself */
    for (i = 0; i < NCLI; i++)
        close(fds[i]);
    /* a new client is accepted and served (the connect completes in the
     * kernel's backlog; the answer needs the accept): within the 30 s
     * receive timeout of tc_connect(), a hang's ceiling */
    b = tc_connect(&s);
    assert_true(b >= 0);
    if (txt_call(b, "get a\r\n", 7, "END\r\n", buf, sizeof(buf)) <= 0)
        fail_msg("accepting did not resume within 30 s");
    assert_non_null(strstr(buf, "VALUE a 0 1"));
    printf("# %d of %d waiting clients served while out of descriptors\n",
           served, NCLI);
    close(b);
    close(a);
    assert_int_equal(tsrv_stop(&s), 0);
    unlink(log);
    rmdir(dir);
}

/* Close c with a FIN (odd i) or an RST (even i). */
static void vanish(int c, int i)
{
    if (i % 2 == 0) {
        struct linger lg = {1, 0};
        setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    close(c);
}

/* Wait for the server to have closed the vanished clients' connections:
 * up to 30 s (a sanitizer build on a loaded 2-CPU machine can take a few
 * seconds for a backlog of 64 closes); a connection never closed fails. */
static void wait_conns(int fd, long long want)
{
    long long now = 0;
    int i;

    for (i = 0; i < 3000 && (now = txt_stat(fd, "curr_connections")) > want;
         i++)
        sleep_ms(10);
    if (now > want) {
        static char conns[65536];

        /* which connection stayed, in what state, for the log */
        if (txt_call(fd, "stats conns\r\n", 13, "END\r\n", conns,
                     sizeof(conns)) > 0)
            printf("# stats conns:\n%s", conns);
        fail_msg("curr_connections %lld, want <= %lld after 30 s", now, want);
    }
    if (i > 100)
        printf("# %lld connections closed after %d ms\n", want, i * 10);
}

static void test_text_vanish_every_offset(void **state)
{
    static const char *const args[] = {"-n", "2", NULL};
    static char val[65536 + 1], reply[70000], buf[256];
    char req[512];
    struct tsrv s;
    long long base;
    int fd, off, len, rlen, hdr, vk;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    base = txt_stat(fd, "curr_connections");

    /* every prefix of a storage request, then gone */
    len = snprintf(req, sizeof(req), "set partial 7 0 64\r\n");
    memset(req + len, 'p', 64);
    memcpy(req + len + 64, "\r\n", 2);
    len += 66;
    for (off = 0; off < len; off++) {
        int c = tc_connect(&s);
        assert_true(c >= 0);
        if (off > 0)
            assert_int_equal(tc_send_all(c, req, (size_t)off), 0);
        vanish(c, off);
    }
    wait_conns(fd, base);
    assert_int_equal(txt_call(fd, "get partial\r\n", 13, "END\r\n", buf,
                              sizeof(buf)), 5); /* nothing was stored */

    /* every byte offset of a large value's reply: 16 KiB, four times a
     * socket buffer of 4 KiB (MDC_VANISH_KIB, up to 64, for more) */
    vk = getenv("MDC_VANISH_KIB") ? atoi(getenv("MDC_VANISH_KIB")) : 16;
    if (vk < 1 || vk > 64)
        vk = 16;
    memset(val, 'L', (size_t)vk * 1024);
    hdr = snprintf(req, sizeof(req), "set large 0 0 %d\r\n", vk * 1024);
    assert_int_equal(tc_send_all(fd, req, (size_t)hdr), 0);
    assert_int_equal(tc_send_all(fd, val, (size_t)vk * 1024), 0);
    assert_int_equal(txt_call(fd, "\r\n", 2, "\r\n", buf, sizeof(buf)), 8);
    rlen = snprintf(buf, sizeof(buf), "VALUE large 0 %d\r\n", vk * 1024) +
           vk * 1024 + 7;
    for (off = 0; off < rlen; off++) {
        int c = tc_connect_rcvbuf(&s, 4096);
        assert_true(c >= 0);
        assert_int_equal(tc_send_all(c, "get large\r\n", 11), 0);
        if (off > 0)
            assert_int_equal(tc_read_full(c, reply, (size_t)off), 0);
        vanish(c, off);
        if (off % 4096 == 0)
            wait_conns(fd, base + 64); /* bound the backlog of closes */
    }
    wait_conns(fd, base);
    /* the server is whole: a complete reply, and a store */
    {
        int c = tc_connect(&s);
        int n = txt_call(c, "get large\r\n", 11, "END\r\n", reply,
                         sizeof(reply));
        assert_int_equal(n, rlen);
        assert_int_equal(txt_call(c, "set after 0 0 1\r\nx\r\n", 20, "\r\n",
                                  buf, sizeof(buf)), 8);
        close(c);
    }
    printf("# %d request prefixes and %d reply offsets, each by FIN and RST "
           "alternately\n", len, rlen);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

/* A text client that asks and never reads: paused, then dropped. */
static void test_text_never_reads(void **state)
{
    static const char *const args[] = {"-n", "2", "-m", "64", "--max-output",
                                       "256k", "--output-timeout", "2", NULL};
    static char val[64 * 1024], buf[70000];
    struct tsrv s;
    char hdr[64];
    int fd, slow, i, n;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    memset(val, 's', sizeof(val));
    n = snprintf(hdr, sizeof(hdr), "set big 0 0 %zu\r\n", sizeof(val));
    assert_int_equal(tc_send_all(fd, hdr, (size_t)n), 0);
    assert_int_equal(tc_send_all(fd, val, sizeof(val)), 0);
    assert_int_equal(txt_call(fd, "\r\n", 2, "\r\n", buf, sizeof(buf)), 8);

    slow = tc_connect_rcvbuf(&s, 4096);
    assert_true(slow >= 0);
    tc_set_timeout_ms(slow, 300);
    /* a batch first, so the server has several requests at once: on
     * io_uring a connection runs no request while its send is in flight,
     * so requests arriving one by one would each wait for the previous
     * reply's send, which blocks, and the output would never reach
     * --max-output (the slow client is dropped by --output-timeout all
     * the same) */
    for (i = 0; i < 64; i++)
        memcpy(buf + 9 * i, "get big\r\n", 9);
    assert_int_equal(tc_send_all(slow, buf, 9 * 64), 0);
    for (i = 0; i < 5000; i++)
        if (tc_send_all(slow, "get big\r\n", 9) < 0)
            break; /* the server stopped reading us */
    for (i = 0; i < 50; i++)
        assert_true(txt_call(fd, "get big\r\n", 9, "END\r\n", buf,
                             sizeof(buf)) > 65536);
    /* 30 s ceilings: only a hang takes this long */
    for (i = 0; i < 3000 && txt_stat(fd, "output_paused") < 1; i++)
        sleep_ms(10);
    assert_true(txt_stat(fd, "output_paused") >= 1);
    for (i = 0; i < 3000 && txt_stat(fd, "slow_reader_drops") < 1; i++)
        sleep_ms(10);
    assert_int_equal(txt_stat(fd, "slow_reader_drops"), 1);
    close(slow);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_exhaustion),
        cmocka_unit_test(test_text_vanish_every_offset),
        cmocka_unit_test(test_text_never_reads),
    };

    if (tsrv_external()) {
        printf("SKIP: needs its own daemons (MDC_TEST_SERVER is set)\n");
        return 77;
    }
    if (getenv("MDC_TEST_FILTER") != NULL) /* e.g. "test_text_vanish*" */
        cmocka_set_test_filter(getenv("MDC_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
