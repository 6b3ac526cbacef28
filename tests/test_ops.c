/*
 * test_ops.c - black-box tests of correctness under pressure and of
 * memcached's operational surface (issue 14), each against a real mdcached
 * started on a free loopback port with the options the test needs:
 * eviction instead of refusal on a full cache, no stale value after a
 * refused store, fair service beside hostile long lines, -u root, strict
 * tag grammar, and the stats/admin commands and meta flags that memcached
 * tools send.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"

/* a reply later than this is a hang, never a slow machine (docs/testing.md,
 * "A busy machine") */
#define IO_MS TC_HANG_MS

/* ---- text I/O ---------------------------------------------------------- */

static void tx_send(int fd, const void *p, size_t n)
{
    assert_int_equal(tc_send_all(fd, p, n), 0);
}

static void tx_str(int fd, const char *s) { tx_send(fd, s, strlen(s)); }

static void tx_fmt(int fd, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof(buf));
    tx_send(fd, buf, (size_t)n);
}

/* One reply line without its \r\n; false on EOF or timeout. */
static bool tx_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;

    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t k;

        if (poll(&p, 1, IO_MS) <= 0)
            return false;
        k = recv(fd, buf + n, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        if (buf[n] == '\n') {
            if (n > 0 && buf[n - 1] == '\r')
                n--;
            buf[n] = '\0';
            return true;
        }
        n++;
    }
    buf[n] = '\0';
    return true;
}

static void tx_expect(int fd, const char *want)
{
    char line[4096];

    if (!tx_line(fd, line, sizeof(line)))
        fail_msg("expected \"%s\", got EOF/timeout", want);
    if (strcmp(line, want) != 0)
        fail_msg("expected \"%s\", got \"%s\"", want, line);
}

/* Send a command line (\r\n added) and check the one-line reply. */
static void tx_cmd(int fd, const char *cmd, const char *want)
{
    tx_fmt(fd, "%s\r\n", cmd);
    tx_expect(fd, want);
}

/* set key with a value of n bytes of c; returns the reply line. */
static void tx_set_fill(int fd, const char *cmd, const char *key,
                        size_t n, char c, const char *extra)
{
    char *buf = malloc(n + 2);

    assert_non_null(buf);
    memset(buf, c, n);
    memcpy(buf + n, "\r\n", 2);
    tx_fmt(fd, "%s %s 0 0 %zu%s%s\r\n", cmd, key, n, extra ? " " : "",
           extra ? extra : "");
    tx_send(fd, buf, n + 2);
    free(buf);
}

/* "get key": the value's length, or -1 on a miss (END). */
static long tx_get_len(int fd, const char *key)
{
    char line[512];
    unsigned flags;
    long len = -1;

    tx_fmt(fd, "get %s\r\n", key);
    assert_true(tx_line(fd, line, sizeof(line)));
    if (strcmp(line, "END") == 0)
        return -1;
    assert_int_equal(sscanf(line, "VALUE %*s %u %ld", &flags, &len), 2);
    {
        char *v = malloc((size_t)len + 2);
        assert_non_null(v);
        assert_int_equal(tc_read_full(fd, v, (size_t)len + 2), 0);
        free(v);
    }
    tx_expect(fd, "END");
    return len;
}

/* "stats [group]": the value of one STAT line, or -1 if absent. */
static long long tx_stat(int fd, const char *group, const char *name)
{
    char line[1024], want[256];
    long long v = -1;

    if (group != NULL)
        tx_fmt(fd, "stats %s\r\n", group);
    else
        tx_str(fd, "stats\r\n");
    snprintf(want, sizeof(want), "STAT %s ", name);
    for (;;) {
        assert_true(tx_line(fd, line, sizeof(line)));
        if (strcmp(line, "END") == 0)
            break;
        if (strncmp(line, want, strlen(want)) == 0)
            v = atoll(line + strlen(want));
    }
    return v;
}

static int tx_open(const struct tsrv *s)
{
    int fd = tc_connect(s);

    assert_true(fd >= 0);
    tc_set_timeout_ms(fd, IO_MS);
    return fd;
}

/* The daemon of the running test, stopped by the teardown if a failed
 * assertion skipped srv_stop(). */
static struct tsrv cur_srv;
static bool cur_on;

static void srv_start(struct tsrv *s, const char *const *args)
{
    assert_int_equal(tsrv_start(s, args), 0);
    cur_srv = *s;
    cur_on = true;
}

static void srv_stop(struct tsrv *s)
{
    cur_on = false;
    assert_int_equal(tsrv_stop(s), 0);
}

static int teardown(void **state)
{
    (void)state;
    if (cur_on) {
        tsrv_print_log(&cur_srv, "its test failed");
        (void)tsrv_stop(&cur_srv);
        cur_on = false;
    }
    return 0;
}

/* Deterministic sizes: xorshift. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ---- 1: a full cache evicts instead of refusing ------------------------ */

/* Fill with mixed sizes 16 B - 64 KiB (log-uniform) up to 'total' bytes,
 * pipelined with noreply, then a round trip to be sure all went in. */
static void fill_mixed(int fd, const char *cmd, size_t total,
                       const char *extra)
{
    static char val[65536 + 2];
    size_t sent = 0;
    unsigned i = 0;

    memset(val, 'f', sizeof(val));
    while (sent < total) {
        unsigned shift = 4 + (unsigned)(rng() % 13); /* 16 .. 64 KiB */
        size_t n = ((size_t)1 << shift) + rng() % ((size_t)1 << shift);
        char key[64];

        if (n > 65536)
            n = 65536;
        snprintf(key, sizeof(key), "fill:%u", i++);
        tx_fmt(fd, "%s %s 0 0 %zu%s%s noreply\r\n", cmd, key, n,
               extra ? " " : "", extra ? extra : "");
        memcpy(val + n, "\r\n", 2);
        tx_send(fd, val, n + 2);
        val[n] = 'f';
        val[n + 1] = 'f';
        sent += n;
    }
    tx_cmd(fd, "mn", "MN");
}

static void test_evict_not_refuse(void **state)
{
    const char *args[] = {"-m", "64", "-n", "2", NULL};
    struct tsrv s;
    int fd, i, refused = 0;
    char line[256], key[64];

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    fill_mixed(fd, "set", (size_t)96 << 20, NULL);
    assert_true(tx_stat(fd, NULL, "evictions") > 0);
    for (i = 0; i < 64; i++) {
        /* the largest value -I 1m takes with this key (memcached's
         * count: 59 bytes of header, the key, the value) */
        size_t n = i % 2 ? ((size_t)1 << 20) - 59 - 7 : (size_t)512 << 10;

        snprintf(key, sizeof(key), "big:%02d", i);
        tx_set_fill(fd, "set", key, n, 'b', NULL);
        assert_true(tx_line(fd, line, sizeof(line)));
        if (strcmp(line, "STORED") != 0) {
            fprintf(stderr, "set %s (%zu B): %s\n", key, n, line);
            refused++;
        }
        /* mixed traffic between the big ones keeps the table dense */
        fill_mixed(fd, "set", (size_t)1 << 20, NULL);
    }
    assert_int_equal(refused, 0);
    assert_int_equal(tx_stat(fd, NULL, "store_no_memory"), 0);
    close(fd);
    srv_stop(&s);
}

/* -m 8: tagged stores of 1 - 32 KiB all succeed. */
static void test_evict_small_tset(void **state)
{
    const char *args[] = {"-m", "8", "-n", "1", NULL};
    struct tsrv s;
    int fd, i, refused = 0;
    char line[256], key[64], tags[64];

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    fill_mixed(fd, "tset", (size_t)24 << 20, "1:1,2:2");
    for (i = 0; i < 400; i++) {
        size_t n = 1024 + rng() % (31 * 1024);

        snprintf(key, sizeof(key), "t:%d", i);
        snprintf(tags, sizeof(tags), "%d:%d,7:1", i % 5, i);
        tx_set_fill(fd, "tset", key, n, 't', tags);
        assert_true(tx_line(fd, line, sizeof(line)));
        if (strcmp(line, "STORED") != 0) {
            fprintf(stderr, "tset %s (%zu B): %s\n", key, n, line);
            refused++;
        }
    }
    assert_int_equal(refused, 0);
    assert_true(tx_stat(fd, NULL, "evictions") > 0);
    close(fd);
    srv_stop(&s);
}

/* ---- 5: a refused store leaves no stale value ------------------------- */

static void test_refused_store_drops_old(void **state)
{
    const char *args[] = {"-I", "1k", "-n", "1", NULL};
    struct tsrv s;
    char big[2100];
    int fd;

    (void)state;
    memset(big, 'x', sizeof(big));
    srv_start(&s, args);
    fd = tx_open(&s);
    /* classic set over -I */
    tx_cmd(fd, "set k 0 0 3\r\nMOO", "STORED");
    assert_int_equal(tx_get_len(fd, "k"), 3);
    tx_set_fill(fd, "set", "k", 2000, 'x', NULL);
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), -1);
    /* tset, cas and replace too; add and append leave the record */
    tx_cmd(fd, "set k 0 0 3\r\nMOO", "STORED");
    tx_set_fill(fd, "tset", "k", 2000, 'x', "1:1");
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), -1);
    tx_cmd(fd, "set k 0 0 3\r\nMOO", "STORED");
    tx_set_fill(fd, "replace", "k", 2000, 'x', NULL);
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), -1);
    tx_cmd(fd, "set k 0 0 3\r\nMOO", "STORED");
    tx_set_fill(fd, "add", "k", 2000, 'x', NULL);
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), 3);
    tx_set_fill(fd, "append", "k", 2000, 'x', NULL);
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), 3);
    /* append that would grow the record over -I (refused in the store):
     * NOT_STORED, as memcached, which cannot allocate the joined item;
     * 962 bytes fit alone (59 + 1 + 962 <= 1024), not joined to "MOO" */
    tx_set_fill(fd, "append", "k", 962, 'x', NULL);
    tx_expect(fd, "NOT_STORED");
    assert_int_equal(tx_get_len(fd, "k"), 3);
    /* meta set */
    tx_fmt(fd, "ms k 2000 T0\r\n");
    tx_send(fd, big, 2000);
    tx_str(fd, "\r\n");
    tx_expect(fd, "SERVER_ERROR object too large for cache");
    assert_int_equal(tx_get_len(fd, "k"), -1);
    assert_true(tx_stat(fd, NULL, "store_too_large") >= 5);
    close(fd);

    /* the native protocol */
    fd = tx_open(&s);
    assert_int_equal(tc_set(fd, "n", "MOO", 3, NULL, 0), WIRE_S_OK);
    assert_int_equal(tc_set(fd, "n", big, 2000, NULL, 0), WIRE_S_TOO_LARGE);
    {
        char *v = NULL;
        size_t vl = 0;
        assert_int_equal(tc_get(fd, "n", &v, &vl), WIRE_S_NOT_FOUND);
        free(v);
    }
    close(fd);
    srv_stop(&s);
}

/* Refused for memory (-M): the old record goes too. */
static void test_refused_nomem_drops_old(void **state)
{
    /* -I at most half of -m, as memcached requires */
    const char *args[] = {"-M", "-m", "1", "-I", "512k", "-n", "1", NULL};
    struct tsrv s;
    char line[256], key[32];
    int fd, i, refused = 0;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    tx_cmd(fd, "set stale 0 0 3\r\nMOO", "STORED");
    for (i = 0; i < 40 && !refused; i++) {
        snprintf(key, sizeof(key), "f%d", i);
        tx_set_fill(fd, "set", key, 60000, 'f', NULL);
        assert_true(tx_line(fd, line, sizeof(line)));
        refused = strcmp(line, "SERVER_ERROR out of memory storing object") == 0;
    }
    assert_true(refused);
    assert_int_equal(tx_get_len(fd, "stale"), 3);
    tx_set_fill(fd, "set", "stale", 500000, 's', NULL);
    tx_expect(fd, "SERVER_ERROR out of memory storing object");
    assert_int_equal(tx_get_len(fd, "stale"), -1);
    assert_true(tx_stat(fd, NULL, "store_no_memory") >= 2);
    close(fd);
    srv_stop(&s);
}

/* ---- 2: linear line scanning, fair service ---------------------------- */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of a process, in seconds. */
static double proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* A line without its newline, sent in 1 KiB pieces with a pause now and
 * then so the server sees it grow: the server's CPU stays small (it was
 * quadratic: 0.56 s for 250 KiB). */
static void test_long_line_linear(void **state)
{
    const char *args[] = {"-n", "1", NULL};
    struct tsrv s;
    static char line[250 * 1024];
    double cpu0, cpu;
    size_t off;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    memcpy(line, "get ", 4);
    for (off = 4; off < sizeof(line); off++)
        line[off] = off % 200 == 0 ? ' ' : 'a' + (char)(off % 26);
    cpu0 = proc_cpu_s(s.pid);
    for (off = 0; off < sizeof(line); off += 1024) {
        tx_send(fd, line + off, 1024);
        if (off % (16 * 1024) == 0)
            usleep(1000);
    }
    tx_str(fd, "\r\n");
    /* every key misses: just END */
    tx_expect(fd, "END");
    cpu = proc_cpu_s(s.pid) - cpu0;
    fprintf(stderr, "250 KiB line in 1 KiB pieces: server CPU %.3f s\n", cpu);
    assert_true(cpu < 0.1);
    close(fd);
    srv_stop(&s);
}

#define ATTACKERS 32
#define ATTACK_S 3.0
#define FAIR_RATIO 20
#define FAIR_TRIES 3

/* 32 connections to s sending 1 MiB lines without a newline, reconnecting
 * whenever the other end closes one, for ATTACK_S seconds. */
static void attack(const struct tsrv *s)
{
    static char junk[1 << 20];
    size_t sent[ATTACKERS];
    int fd[ATTACKERS], i;
    double end = now_s() + ATTACK_S;

    memcpy(junk, "get ", 4);
    memset(junk + 4, 'k', sizeof(junk) - 4);
    for (i = 0; i < ATTACKERS; i++)
        fd[i] = -1;
    while (now_s() < end) {
        struct pollfd p[ATTACKERS];

        for (i = 0; i < ATTACKERS; i++) {
            if (fd[i] < 0) {
                fd[i] = tc_connect(s);
                sent[i] = 0;
            }
            p[i].fd = fd[i];
            p[i].events = POLLOUT | POLLIN;
            p[i].revents = 0;
        }
        if (poll(p, ATTACKERS, 100) <= 0)
            continue;
        for (i = 0; i < ATTACKERS; i++) {
            char rb[4096];
            ssize_t k;

            if (fd[i] < 0)
                continue;
            if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                k = recv(fd[i], rb, sizeof(rb), MSG_DONTWAIT);
                if (k == 0 || (k < 0 && errno != EAGAIN)) {
                    close(fd[i]);
                    fd[i] = -1;
                    continue;
                }
            }
            if (p[i].revents & POLLOUT) {
                k = send(fd[i], junk + sent[i], sizeof(junk) - sent[i],
                         MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && errno != EAGAIN) {
                    close(fd[i]);
                    fd[i] = -1;
                } else if (k > 0 && (sent[i] += (size_t)k) == sizeof(junk)) {
                    sent[i] = 4; /* keep the line going */
                }
            }
        }
    }
    for (i = 0; i < ATTACKERS; i++)
        if (fd[i] >= 0)
            close(fd[i]);
}

/* The baseline's target: a child process on a loopback port of its own
 * (written to *sink's host and port) that accepts every connection and
 * reads and drops what comes, the receiving half of the attack's cost on
 * the machine without the server.  Its pid; kill it with SIGKILL. */
static pid_t sink_start(struct tsrv *sink)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    pid_t pid;
    int ls;

    memset(sink, 0, sizeof(*sink));
    ls = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(ls >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(ls, ATTACKERS), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
    snprintf(sink->host, sizeof(sink->host), "127.0.0.1");
    sink->port = ntohs(sa.sin_port);
    sink->udp_port = -1;
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct pollfd p[ATTACKERS + 1];
        static char rb[1 << 16];
        int n = 1, i;

        p[0].fd = ls;
        p[0].events = POLLIN;
        for (;;) {
            if (poll(p, (nfds_t)n, -1) <= 0)
                continue;
            for (i = n - 1; i >= 1; i--) {
                if (p[i].revents == 0)
                    continue;
                if (read(p[i].fd, rb, sizeof(rb)) <= 0) {
                    close(p[i].fd);
                    p[i] = p[--n];
                }
            }
            if ((p[0].revents & POLLIN) && n <= ATTACKERS) {
                int c = accept(ls, NULL, NULL);

                if (c >= 0) {
                    p[n].fd = c;
                    p[n].events = POLLIN;
                    p[n].revents = 0;
                    n++;
                }
            }
        }
    }
    close(ls);
    return pid;
}

/* The honest client's gets of "honest" on fd while a child runs attack()
 * on target: the round trips made, the worst and the mean in *worst and
 * *mean (s). */
static long fair_window(int fd, const struct tsrv *target, double *worst,
                        double *mean)
{
    double t0, end, sum = 0;
    long rounds = 0;
    pid_t child;
    int st;

    *worst = 0;
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        attack(target);
        _exit(0);
    }
    usleep(200000); /* let the attack build up */
    end = now_s() + ATTACK_S - 0.4;
    while ((t0 = now_s()) < end) {
        double rtt;

        tx_str(fd, "get honest\r\n");
        tx_expect(fd, "VALUE honest 0 1");
        tx_expect(fd, "x");
        tx_expect(fd, "END");
        rtt = now_s() - t0;
        if (rtt > *worst)
            *worst = rtt;
        sum += rtt;
        rounds++;
    }
    assert_int_equal(waitpid(child, &st, 0), child);
    *mean = rounds > 0 ? sum / (double)rounds : 0;
    return rounds;
}

/*
 * An honest client of the same network thread as 32 connections sending
 * 1 MiB lines is served beside them.  The measure is a ratio to a baseline
 * taken in the same test (docs/testing.md, "A busy machine"): the same
 * client loop while the same attacker sends the same lines to a sink of
 * this test's own instead of the server (the same cost on the machine, no
 * work for the server), then while it sends them to the server.  With a
 * fair server the client's worst round trip stays within FAIR_RATIO times
 * the baseline's worst (10 ms at least, a scheduler's slice); a server
 * that scanned a whole long line on every read kept it waiting past its
 * 10 s timeout.  The mean is printed, not judged: the server's one
 * thread reads the attackers' bytes between the client's requests (tens
 * of ms on a loaded machine, beside a baseline of a fraction of one).
 * One pair of FAIR_TRIES passing passes.  It was "the worst round trip
 * under 1 s", which a loaded machine crossed.
 */
static void test_fair_beside_long_lines(void **state)
{
    const char *args[] = {"-n", "1", NULL};
    struct tsrv s, sink;
    double worst = 0, mean = 0, bworst = 0, bmean = 0;
    long rounds = 0, brounds = 0;
    bool fair = false;
    int fd, attempt;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    tx_cmd(fd, "set honest 0 0 1\r\nx", "STORED");
    for (attempt = 1; attempt <= FAIR_TRIES && !fair; attempt++) {
        pid_t sp = sink_start(&sink);
        int st;

        brounds = fair_window(fd, &sink, &bworst, &bmean);
        kill(sp, SIGKILL);
        assert_int_equal(waitpid(sp, &st, 0), sp);
        rounds = fair_window(fd, &s, &worst, &mean);
        fprintf(stderr,
                "pair %d: honest client beside %d connections sending "
                "1 MiB lines to a sink: %ld round trips, mean %.4f s, "
                "worst %.3f s; to the server: %ld round trips, mean %.4f "
                "s, worst %.3f s\n",
                attempt, ATTACKERS, brounds, bmean, bworst, rounds, mean,
                worst);
        fair = rounds > 0 &&
               worst <= (bworst > 0.010 ? bworst : 0.010) * FAIR_RATIO;
    }
    if (!fair)
        fail_msg("no pair of %d passed; the last: worst %.3f s, baseline "
                 "%.3f s", FAIR_TRIES, worst, bworst);
    close(fd);
    srv_stop(&s);
}

/* -R: a long pipeline yields after N requests (conn_yields). */
static void test_reqs_per_event(void **state)
{
    const char *args[] = {"-n", "1", "-R", "5", NULL};
    struct tsrv s;
    static char batch[200 * 16];
    size_t n = 0;
    int fd, i;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    for (i = 0; i < 200; i++)
        n += (size_t)snprintf(batch + n, sizeof(batch) - n, "get y%d\r\n", i);
    tx_send(fd, batch, n);
    for (i = 0; i < 200; i++)
        tx_expect(fd, "END");
    assert_true(tx_stat(fd, NULL, "conn_yields") >= 200 / 5 - 1);
    assert_int_equal(tx_stat(fd, "settings", "reqs_per_event"), 5);
    close(fd);
    srv_stop(&s);
}

/* ---- 3: -u root ------------------------------------------------------- */

static bool file_has(const char *path, const char *needle)
{
    char buf[8192];
    size_t n;
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void test_user_root(void **state)
{
    char logf[128], line[256], status[64];
    const char *args[] = {"-u", "root", "-n", "1", "--log-file", logf, NULL};
    struct tsrv s;
    FILE *f;
    long uid = -1;
    int fd;

    (void)state;
    if (geteuid() != 0) {
        printf("SKIP: -u root needs root\n");
        return;
    }
    snprintf(logf, sizeof(logf), "/tmp/mdc-ops-root-%ld.log", (long)getpid());
    unlink(logf);
    srv_start(&s, args);
    fd = tx_open(&s);
    tx_cmd(fd, "set r 0 0 1\r\nx", "STORED");
    snprintf(status, sizeof(status), "/proc/%ld/status", (long)s.pid);
    f = fopen(status, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Uid: %ld", &uid) == 1)
            break;
    fclose(f);
    assert_int_equal(uid, 0);
    close(fd);
    srv_stop(&s);
    assert_true(file_has(logf, "running as root"));
    unlink(logf);
}

/* ---- 4: strict tag grammar ------------------------------------------- */

static void test_tag_grammar(void **state)
{
    const char *args[] = {"-n", "1", NULL};
    struct tsrv s;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    /* a space instead of a comma: refused, naming the token; nothing
     * stored, and the data block does not run as a command */
    tx_cmd(fd, "tset x 0 0 5 1:10 2:20\r\nhello",
           "CLIENT_ERROR invalid token '2:20'");
    assert_int_equal(tx_get_len(fd, "x"), -1);
    tx_cmd(fd, "tset x 0 0 5 1:10,2:2O\r\nhello",
           "CLIENT_ERROR invalid token '2:2O'");
    tx_cmd(fd, "tset x 0 0 5 1:10,2:20 noreply\r\nhello\r\nmn", "MN");
    tx_cmd(fd, "tget 2 20", "VALUE x 0 5");
    tx_expect(fd, "hello");
    tx_expect(fd, "END");
    tx_cmd(fd, "tget 2 20,21", "CLIENT_ERROR invalid token '20,21'");
    tx_cmd(fd, "tgets 2 x", "CLIENT_ERROR invalid token 'x'");
    tx_cmd(fd, "tdel 2 20 norepl", "CLIENT_ERROR invalid token 'norepl'");
    tx_cmd(fd, "tpush 1 1 0 0 2 2:3\r\nab", "CLIENT_ERROR invalid token '2:3'");
    tx_cmd(fd, "tpop 1 1 1", "CLIENT_ERROR invalid token '1'");
    tx_cmd(fd, "tpop 1 1x", "CLIENT_ERROR invalid token '1x'");
    /* the record is still there: no tag command above did anything */
    assert_int_equal(tx_get_len(fd, "x"), 5);
    tx_cmd(fd, "tdel 2 20", "DELETED 1");
    close(fd);
    srv_stop(&s);
}

/* ---- the operational surface ------------------------------------------ */

/* "stats <group>": every STAT line's text after "STAT " joined by '\n'. */
static char *tx_stats_text(int fd, const char *group)
{
    static char out[65536];
    char line[1024];
    size_t n = 0;

    tx_fmt(fd, group ? "stats %s\r\n" : "stats\r\n", group);
    out[0] = '\0';
    for (;;) {
        assert_true(tx_line(fd, line, sizeof(line)));
        if (strcmp(line, "END") == 0)
            break;
        assert_true(strncmp(line, "STAT ", 5) == 0 ||
                    strncmp(line, "PREFIX ", 7) == 0);
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s\n", line);
        assert_true(n < sizeof(out));
    }
    return out;
}

static void test_stats_groups(void **state)
{
    const char *args[] = {"-n", "2", NULL};
    struct tsrv s;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char want[128], *t;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    /* no items: items and slabs list no class */
    t = tx_stats_text(fd, "items");
    assert_string_equal(t, "");
    assert_non_null(strstr(tx_stats_text(fd, "slabs"), "STAT active_slabs 0"));
    tx_cmd(fd, "set a:1 0 0 2\r\nhi", "STORED");
    tx_cmd(fd, "set b 0 0 2\r\nho", "STORED");
    t = tx_stats_text(fd, "items");
    assert_non_null(strstr(t, "STAT items:1:number 2\n"));
    assert_non_null(strstr(t, "STAT items:1:evicted 0\n"));
    t = tx_stats_text(fd, "slabs");
    assert_non_null(strstr(t, "STAT 1:used_chunks 2\n"));
    assert_non_null(strstr(t, "STAT active_slabs 1\n"));
    assert_non_null(strstr(t, "STAT total_malloced "));
    assert_string_equal(tx_stats_text(fd, "sizes"),
                        "STAT sizes_status disabled\n");
    /* conns: this connection with its address, state and idle time */
    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &sl), 0);
    snprintf(want, sizeof(want), ":addr tcp:127.0.0.1:%u\n",
             ntohs(((struct sockaddr_in *)&ss)->sin_port));
    t = tx_stats_text(fd, "conns");
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, ":state conn_listening\n"));
    assert_non_null(strstr(t, ":state conn_parse_cmd\n"));
    {
        /* seconds on the coarse clock: 0, or 1 if it just ticked */
        const char *p = strstr(t, ":secs_since_last_cmd ");
        assert_non_null(p);
        assert_true(atoi(p + 21) <= 1);
    }
    /* reset zeroes the counters, not the items */
    assert_int_equal(tx_get_len(fd, "a:1"), 2);
    assert_int_equal(tx_get_len(fd, "zz"), -1);
    assert_true(tx_stat(fd, NULL, "cmd_get") >= 2);
    tx_cmd(fd, "stats reset", "RESET");
    assert_int_equal(tx_stat(fd, NULL, "cmd_get"), 0);
    assert_int_equal(tx_stat(fd, NULL, "get_hits"), 0);
    assert_int_equal(tx_stat(fd, NULL, "total_items"), 0);
    assert_int_equal(tx_stat(fd, NULL, "curr_items"), 2);
    assert_int_equal(tx_get_len(fd, "a:1"), 2);
    assert_int_equal(tx_stat(fd, NULL, "get_hits"), 1);
    /* detail: per-prefix counts while on */
    tx_cmd(fd, "stats detail on", "OK");
    assert_int_equal(tx_get_len(fd, "a:1"), 2);
    assert_int_equal(tx_get_len(fd, "a:2"), -1);
    tx_cmd(fd, "set a:3 0 0 1\r\nx", "STORED");
    tx_cmd(fd, "delete a:3", "DELETED");
    assert_int_equal(tx_get_len(fd, "nop"), -1); /* no prefix */
    assert_string_equal(tx_stats_text(fd, "detail dump"),
                        "PREFIX a get 2 hit 1 set 1 del 1\n");
    tx_cmd(fd, "stats detail off", "OK");
    assert_int_equal(tx_get_len(fd, "a:1"), 2);
    assert_string_equal(tx_stats_text(fd, "detail dump"),
                        "PREFIX a get 2 hit 1 set 1 del 1\n");
    tx_cmd(fd, "stats detail x", "CLIENT_ERROR usage: stats detail on|off|dump");
    tx_cmd(fd, "stats nosuch", "ERROR");
    close(fd);
    srv_stop(&s);
}

/* -D: the prefix delimiter, and detail on from the start. */
static void test_prefix_delimiter(void **state)
{
    const char *args[] = {"-n", "1", "-D", "/", NULL};
    struct tsrv s;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    tx_cmd(fd, "set u/1 0 0 1\r\nx", "STORED");
    tx_cmd(fd, "set u:1 0 0 1\r\nx", "STORED");
    assert_int_equal(tx_get_len(fd, "u/1"), 1);
    assert_string_equal(tx_stats_text(fd, "detail dump"),
                        "PREFIX u get 1 hit 1 set 1 del 0\n");
    assert_non_null(
        strstr(tx_stats_text(fd, "settings"), "STAT detail_enabled yes\n"));
    close(fd);
    srv_stop(&s);
}

static void test_cache_memlimit(void **state)
{
    const char *args[] = {"-n", "1", "-m", "64", NULL};
    struct tsrv s;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    fill_mixed(fd, "set", (size_t)40 << 20, NULL);
    assert_true(tx_stat(fd, NULL, "bytes") > (32ll << 20));
    tx_cmd(fd, "cache_memlimit 16", "OK");
    assert_true(tx_stat(fd, NULL, "bytes") <= (16ll << 20));
    assert_int_equal(tx_stat(fd, NULL, "limit_maxbytes"), 16ll << 20);
    assert_int_equal(tx_stat(fd, "settings", "maxbytes"), 16ll << 20);
    tx_cmd(fd, "cache_memlimit 4", "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
    tx_cmd(fd, "cache_memlimit x", "CLIENT_ERROR bad command line format");
    tx_cmd(fd, "cache_memlimit", "ERROR");
    tx_cmd(fd, "cache_memlimit 128 noreply\r\nmn", "MN");
    assert_int_equal(tx_stat(fd, NULL, "limit_maxbytes"), 128ll << 20);
    close(fd);
    srv_stop(&s);
}

/* A native FLUSH (0x40) on its own connection: its status, after a SET of
 * key "keep" and before a GET of it (*kept: the GET found it); the
 * reply's value, if any, is copied into msg. */
static int native_flush(const struct tsrv *s, bool *kept, char *msg,
                        size_t msglen)
{
    struct treq r = {.op = WIRE_OP_FLUSH};
    struct tresp resp;
    char *v = NULL;
    size_t vlen = 0;
    int fd = tc_connect(s), st;

    assert_true(fd >= 0);
    tc_set_timeout_ms(fd, IO_MS);
    assert_int_equal(tc_set(fd, "keep", "v", 1, NULL, 0), WIRE_S_OK);
    st = tc_call(fd, &r, &resp);
    assert_true(st >= 0);
    snprintf(msg, msglen, "%.*s", (int)resp.h.vlen,
             resp.val != NULL ? (const char *)resp.val : "");
    tc_resp_free(&resp);
    *kept = tc_get(fd, "keep", &v, &vlen) == WIRE_S_OK;
    free(v);
    close(fd);
    return st;
}

/* -A allows shutdown; -F refuses flush_all and the native FLUSH alike,
 * and the records stay. */
static void test_shutdown_and_flush_switches(void **state)
{
    const char *plain[] = {"-n", "1", NULL};
    const char *armed[] = {"-n", "1", "-A", "-F", NULL};
    struct tsrv s;
    char buf[16], msg[128];
    bool kept;
    int fd, st, i;

    (void)state;
    srv_start(&s, plain);
    fd = tx_open(&s);
    tx_cmd(fd, "shutdown", "ERROR: shutdown not enabled");
    tx_cmd(fd, "shutdown graceful", "ERROR: shutdown not enabled");
    tx_cmd(fd, "flush_all", "OK");
    assert_non_null(
        strstr(tx_stats_text(fd, "settings"), "STAT flush_enabled yes\n"));
    close(fd);
    /* without -F the native FLUSH runs */
    assert_int_equal(native_flush(&s, &kept, msg, sizeof(msg)), WIRE_S_OK);
    assert_false(kept);
    srv_stop(&s);

    srv_start(&s, armed);
    fd = tx_open(&s);
    tx_cmd(fd, "flush_all", "CLIENT_ERROR flush_all not allowed");
    tx_cmd(fd, "flush_all 10", "CLIENT_ERROR flush_all not allowed");
    tx_cmd(fd, "flush_all soon", "CLIENT_ERROR flush_all not allowed");
    /* noreply, with or without a delay: refused without a word, so a
     * pipelining client stays in step (memcached -F does the same) */
    tx_str(fd, "flush_all noreply\r\nflush_all 10 noreply\r\nversion\r\n");
    assert_true(tx_line(fd, msg, sizeof(msg)));
    if (strncmp(msg, "VERSION ", 8) != 0)
        fail_msg("-F, flush_all noreply: got \"%s\", want VERSION", msg);
    /* -F refuses the native FLUSH too, with the reason; nothing is lost */
    assert_int_equal(native_flush(&s, &kept, msg, sizeof(msg)),
                     WIRE_S_NOT_SUPPORTED);
    assert_true(kept);
    assert_non_null(strstr(msg, "-F"));
    assert_int_equal(tx_stat(fd, NULL, "cmd_flush"), 0);
    assert_non_null(
        strstr(tx_stats_text(fd, "settings"), "STAT flush_enabled no\n"));
    tx_cmd(fd, "shutdown now", "CLIENT_ERROR invalid shutdown mode");
    tx_str(fd, "shutdown graceful\r\n");
    assert_true(tc_wait_eof(fd, IO_MS));
    close(fd);
    /* the daemon stops by itself, cleanly */
    for (i = 0; i < 3000 && waitpid(s.pid, &st, WNOHANG) != s.pid; i++)
        usleep(10000);
    assert_true(i < 3000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    cur_on = false;
    (void)buf;
    tsrv_stop(&s); /* reaped above: only its directory goes */
}

static void test_bad_numbers_and_fields(void **state)
{
    const char *args[] = {"-n", "1", "-c", "50", NULL};
    struct tsrv s;
    char line[256], ver[128], *t;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    tx_cmd(fd, "verbosity x", "CLIENT_ERROR bad command line format");
    tx_cmd(fd, "verbosity 1 2", "CLIENT_ERROR bad command line format");
    /* memcached 1.6's wording for a flush_all delay that is no number */
    tx_cmd(fd, "flush_all soon", "CLIENT_ERROR invalid exptime argument");
    tx_cmd(fd, "flush_all invalid", "CLIENT_ERROR invalid exptime argument");
    tx_cmd(fd, "flush_all 1x", "CLIENT_ERROR invalid exptime argument");
    /* and under noreply nothing: the next reply is the next request's */
    tx_str(fd, "flush_all invalid noreply\r\n");
    tx_cmd(fd, "flush_all 0 x", "OK"); /* extra words ignored, as memcached */
    tx_cmd(fd, "set k 0 0 2147483647", "CLIENT_ERROR bad command line format");
    tx_cmd(fd, "set k 0 0 -1", "CLIENT_ERROR bad command line format");
    tx_cmd(fd, "incr k x", "CLIENT_ERROR invalid numeric delta argument");
    tx_cmd(fd, "touch k x", "CLIENT_ERROR invalid exptime argument");
    tx_cmd(fd, "verbosity 1", "OK");
    /* memcached 1.6's general fields */
    t = tx_stats_text(fd, NULL);
    {
        static const char *const names[] = {
            "get_flushed", "accepting_conns", "store_too_large",
            "store_no_memory", "reclaimed", "listen_disabled_num",
            "conn_yields", "rusage_user", "rusage_system", "cmd_flush",
            "curr_connections", "total_connections", "evictions",
            "limit_maxbytes", "threads", "max_connections"};
        size_t i;

        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            char w[64];
            snprintf(w, sizeof(w), "STAT %s ", names[i]);
            if (strstr(t, w) == NULL)
                fail_msg("stats lacks %s", names[i]);
        }
    }
    assert_non_null(strstr(t, "STAT accepting_conns 1\n"));
    /* the version stat is what "version" says */
    tx_str(fd, "version\r\n");
    assert_true(tx_line(fd, line, sizeof(line)));
    assert_true(strncmp(line, "VERSION ", 8) == 0);
    snprintf(ver, sizeof(ver), "STAT version %s\n", line + 8);
    assert_non_null(strstr(tx_stats_text(fd, NULL), ver));
    /* settings under memcached's names */
    t = tx_stats_text(fd, "settings");
    assert_non_null(strstr(t, "STAT maxconns 50\n"));
    assert_non_null(strstr(t, "STAT item_size_max 1048576\n"));
    assert_non_null(strstr(t, "STAT tcp_backlog 1024\n"));
    assert_non_null(strstr(t, "STAT cas_enabled yes\n"));
    assert_non_null(strstr(t, "STAT maxbytes 1073741824\n"));
    assert_non_null(strstr(t, "STAT evictions on\n"));
    assert_non_null(strstr(t, "STAT reqs_per_event 100\n"));
    close(fd);
    srv_stop(&s);
}

static void test_http_closes(void **state)
{
    const char *args[] = {"-n", "1", NULL};
    static const char *const reqs[] = {
        "GET / HTTP/1.0\r\n\r\n", "POST /set HTTP/1.1\r\nHost: x\r\n",
        "PUT /k HTTP/1.1\r\n",       "DELETE /k HTTP/1.1\r\n",
        "HEAD / HTTP/1.0\r\n",       "Host: cache.local\r\n",
        "get k HTTP/1.1\r\n"};
    struct tsrv s;
    size_t i;
    int fd;

    (void)state;
    srv_start(&s, args);
    for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        char c;

        fd = tx_open(&s);
        /* a whole forged request: nothing of it may run */
        tx_str(fd, reqs[i]);
        tx_str(fd, "set pwned 0 0 1\r\nx\r\n");
        assert_true(tc_wait_eof(fd, IO_MS));
        assert_int_equal(recv(fd, &c, 1, MSG_DONTWAIT), 0);
        close(fd);
    }
    fd = tx_open(&s);
    assert_int_equal(tx_get_len(fd, "pwned"), -1);
    close(fd);
    srv_stop(&s);
}

static void test_meta_flags(void **state)
{
    const char *args[] = {"-n", "1", NULL};
    struct tsrv s;
    char line[256];
    unsigned long long cas = 0;
    struct timespec t0, t1;
    char want[64];
    unsigned idle = 0;
    int fd;

    (void)state;
    srv_start(&s, args);
    fd = tx_open(&s);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tx_cmd(fd, "set k 0 0 2\r\nhi", "STORED");
    /* h: hit before (0 first), l: seconds since last access, which is at
     * most one more than the whole seconds this test saw pass (a second of
     * the server's clock may turn between the accesses) */
    tx_cmd(fd, "mg k h", "HD h0");
    tx_str(fd, "mg k h l t v\r\n");
    assert_true(tx_line(fd, line, sizeof(line)));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(sscanf(line, "VA 2 h1 l%u", &idle), 1);
    snprintf(want, sizeof(want), "VA 2 h1 l%u t-1", idle);
    assert_string_equal(line, want);
    assert_true(idle <= (unsigned)(t1.tv_sec - t0.tv_sec) + 1);
    tx_expect(fd, "hi");
    tx_cmd(fd, "mg nope h l", "EN");
    /* ma C: compare-and-swap */
    tx_cmd(fd, "set n 0 0 1\r\n5", "STORED");
    tx_str(fd, "mg n c\r\n");
    assert_true(tx_line(fd, line, sizeof(line)));
    assert_int_equal(sscanf(line, "HD c%llu", &cas), 1);
    tx_fmt(fd, "ma n C%llu v\r\n", cas + 1);
    tx_expect(fd, "EX");
    tx_fmt(fd, "ma n C%llu v\r\n", cas);
    tx_expect(fd, "VA 1");
    tx_expect(fd, "6");
    tx_fmt(fd, "ma n C%llu\r\n", cas); /* the old CAS no longer matches */
    tx_expect(fd, "EX");
    tx_cmd(fd, "get n", "VALUE n 0 1");
    tx_expect(fd, "6");
    tx_expect(fd, "END");
    /* flags memcached acts on that mdcached does not: an explicit error */
    tx_cmd(fd, "mg k E30", "CLIENT_ERROR invalid flag");
    tx_cmd(fd, "md k x", "CLIENT_ERROR invalid or duplicate flag");
    tx_cmd(fd, "ms k 2 E5\r\nhi", "CLIENT_ERROR invalid flag");
    tx_cmd(fd, "ma n E5", "CLIENT_ERROR invalid or duplicate flag");
    close(fd);
    srv_stop(&s);
}

/* Exit status of the daemon run with args (it must not start): the
 * harness returns it; one that gets ready is stopped, -1. */
static int run_status(const char *const *args)
{
    static const struct tsrv_opts raw = {.flags = TSRV_RAW};
    struct tsrv s;
    int rc = tsrv_start_opts(&s, &raw, args);

    if (rc == 0)
        tsrv_print_log(&s, "started, but should not have");
    tsrv_stop(&s);
    return rc > 0 ? rc : -1;
}

static void test_option_edges(void **state)
{
    static const char *const small_i[] = {"-p", "0", "-I", "512", NULL};
    static const char *const big_i[] = {"-p", "0", "-I", "2g", NULL};
    static const char *const zero_m[] = {"-p", "0", "-m", "0", NULL};
    static const char *const nothing[] = {"-p", "0", NULL};
    static const char *const bad_l[] = {"-l", "127.0.0.1:99999", NULL};
    static const char *const bad_d[] = {"-D", "ab", NULL};
    static const char *const bad_r[] = {"-R", "0", NULL};

    (void)state;
    assert_int_equal(run_status(small_i), 64);
    assert_int_equal(run_status(big_i), 64);
    assert_int_equal(run_status(zero_m), 64);
    assert_int_equal(run_status(nothing), 64);
    assert_int_equal(run_status(bad_l), 64);
    assert_int_equal(run_status(bad_d), 64);
    assert_int_equal(run_status(bad_r), 64);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_evict_not_refuse),
        T(test_evict_small_tset),
        T(test_refused_store_drops_old),
        T(test_refused_nomem_drops_old),
        T(test_long_line_linear),
        T(test_fair_beside_long_lines),
        T(test_reqs_per_event),
        T(test_user_root),
        T(test_tag_grammar),
        T(test_stats_groups),
        T(test_prefix_delimiter),
        T(test_cache_memlimit),
        T(test_shutdown_and_flush_switches),
        T(test_bad_numbers_and_fields),
        T(test_http_closes),
        T(test_meta_flags),
        T(test_option_edges),
    };

    signal(SIGPIPE, SIG_IGN);
    if (getenv("MDC_TEST_FILTER") != NULL) /* e.g. "test_fair*" */
        cmocka_set_test_filter(getenv("MDC_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
