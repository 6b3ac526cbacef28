/*
 * test_timeouts.c - the connection timeouts (--idle-timeout, --auth-timeout,
 * --tls-handshake-timeout) fire never early and as soon after their moment
 * on io_uring as on epoll.
 *
 * The arithmetic first (conn_deadline_ms, worker_next_tick_ms,
 * worker_wait_ms): a network thread's loop is simulated against a coarse
 * clock that lags the true time by up to its resolution, as
 * CLOCK_MONOTONIC_COARSE does; every connection must be closed no sooner
 * than its timeout after it was born and within the tick's grain and a few
 * clock steps after.  Then black-box: daemons on both backends, side by
 * side in the same run, each with silent connections spread over a second;
 * none may close early, and io_uring's median lateness may be at most
 * UE_RATIO times epoll's (100 ms at least, under which both are on time):
 * a ratio to a baseline taken in the same run, which a busy machine
 * delays alike (docs/testing.md, "A busy machine").  The loop that slept
 * a whole second past the moment had io_uring's median at 2.2 times
 * epoll's (1.2 s against 0.54 s, epoll then on a free 1 s timer).  One
 * round of UE_TRIES passing passes; the worst lateness is printed, not
 * judged (it was "io_uring's worst within epoll's + 0.5 s", which one
 * preemption on a loaded machine crossed).
 *
 * Last, the epoll network thread's loop while its turns are full
 * (test_epoll_loop_busy): the tick, the wake and the stop still run (the
 * own epoll loop; libevent's in the portable build).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server_client.h"

/* ---- the arithmetic ------------------------------------------------------- */

/* A coarse clock stepping every res ms (phase ph), read as
 * server_coarse_ms() reads it (ms + 1): at true ms t, the last step. */
static uint64_t coarse(uint64_t t, uint64_t res, uint64_t ph)
{
    if (t < ph)
        return 1;
    return (t - ph) / res * res + ph + 1;
}

/* One connection born at true ms tb with a timeout of secs, on a thread
 * whose tick last ran at true ms tl <= tb: run the loop as uring_run and
 * the one-shot ev_tick do (wait, read the coarse clock, tick when due),
 * the waits ending exactly; returns the true ms it is closed at. */
static uint64_t simulate(uint64_t tl, uint64_t tb, uint64_t secs,
                         uint64_t res, uint64_t ph)
{
    uint64_t next = worker_next_tick_ms(coarse(tl, res, ph), UINT64_MAX);
    uint64_t deadline = conn_deadline_ms(coarse(tb, res, ph), secs, res);
    uint64_t t = tb;
    int turns = 0;

    for (;;) {
        uint64_t now = coarse(t, res, ph), wait;

        if (now >= next) { /* the tick: the connection's check */
            if (now >= deadline)
                return t;
            next = worker_next_tick_ms(now, deadline);
        }
        wait = worker_wait_ms(now, next, res);
        assert_true(wait > 0); /* no busy loop */
        t += wait;
        assert_true(++turns < 1000);
    }
}

/* Never early, and at most the grain and three clock steps late, whatever
 * the clock's resolution, its phase, the birth within the second and the
 * last tick before it. */
static void test_deadline_arithmetic(void **state)
{
    static const uint64_t ress[] = {1, 4, 10};
    uint64_t worst = 0;
    size_t r;

    (void)state;
    for (r = 0; r < sizeof(ress) / sizeof(ress[0]); r++) {
        uint64_t res = ress[r], ph, tb, secs;

        for (ph = 0; ph < res; ph += res > 4 ? 3 : 1)
            for (secs = 1; secs <= 3; secs++)
                for (tb = 5000; tb < 7000; tb += 3) {
                    uint64_t tl = tb - (tb * 7919 % 1000); /* 0-999 before */
                    uint64_t tc = simulate(tl, tb, secs, res, ph);
                    uint64_t bound = secs * 1000 + WORKER_TICK_GRAIN_MS +
                                     3 * res + 1;

                    if (tc < tb + secs * 1000 || tc > tb + bound)
                        fail_msg("res %llu ms, phase %llu: born at %llu, "
                                 "timeout %llu s, closed at %llu (%lld ms "
                                 "after its moment)",
                                 (unsigned long long)res,
                                 (unsigned long long)ph,
                                 (unsigned long long)tb,
                                 (unsigned long long)secs,
                                 (unsigned long long)tc,
                                 (long long)(tc - tb - secs * 1000));
                    if (tc - tb - secs * 1000 > worst)
                        worst = tc - tb - secs * 1000;
                }
    }
    print_message("worst lateness simulated: %llu ms\n",
                  (unsigned long long)worst);
}

/* The tick's own moments: the coarse second turns at k * 1000 + 1 (the
 * reading is ms + 1); a deadline before it comes first, but not sooner
 * than the grain; the wait covers the clock's lag. */
static void test_next_tick(void **state)
{
    (void)state;
    assert_int_equal(worker_next_tick_ms(1, UINT64_MAX), 1001);
    assert_int_equal(worker_next_tick_ms(1000, UINT64_MAX), 1001);
    assert_int_equal(worker_next_tick_ms(1001, UINT64_MAX), 2001);
    assert_int_equal(worker_next_tick_ms(1500, 1700), 1700);
    assert_int_equal(worker_next_tick_ms(1500, 2500), 2001);
    assert_int_equal(worker_next_tick_ms(1500, 1501),
                     1500 + WORKER_TICK_GRAIN_MS);
    assert_int_equal(worker_next_tick_ms(1995, 1996), 2001);
    assert_int_equal(worker_wait_ms(1500, 2001, 4), 505);
    assert_int_equal(worker_wait_ms(2001, 2001, 4), 0);
    assert_int_equal(worker_wait_ms(2002, 2001, 4), 0);
    /* a stamp read at 1000 with 1 s to go: not before 2000 + res */
    assert_int_equal(conn_deadline_ms(1000, 1, 4), 2004);
}

/* ---- both backends, side by side ------------------------------------------ */

enum { NCONN = 20, NSIDE = 4, UE_TRIES = 3 };
#define UE_RATIO 1.5

struct side {
    const char *io;
    const char *kind; /* "idle" or "auth" */
    struct tsrv s;
    int fd[NCONN];
    double t0[NCONN], eof[NCONN];
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Time the EOFs of the connections opened so far, for secs seconds. */
static void poll_eofs(struct side *sd, int nopen, double secs)
{
    double end = now_s() + secs;

    for (;;) {
        struct pollfd pf[NSIDE * NCONN];
        int k, i, n = 0, left;

        for (k = 0; k < NSIDE; k++)
            for (i = 0; i < nopen; i++) {
                pf[n].fd = sd[k].eof[i] == 0 ? sd[k].fd[i] : -1;
                pf[n].events = POLLIN;
                n++;
            }
        left = (int)((end - now_s()) * 1000);
        if (left <= 0 || poll(pf, (nfds_t)n, left) <= 0)
            return;
        n = 0;
        for (k = 0; k < NSIDE; k++)
            for (i = 0; i < nopen; i++, n++) {
                char b[256];

                if (pf[n].fd >= 0 && pf[n].revents != 0 &&
                    recv(pf[n].fd, b, sizeof(b), MSG_DONTWAIT) <= 0)
                    sd[k].eof[i] = now_s();
            }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static bool all_closed(const struct side *sd)
{
    int k, i;

    for (k = 0; k < NSIDE; k++)
        for (i = 0; i < NCONN; i++)
            if (sd[k].eof[i] == 0)
                return false;
    return true;
}

static void test_backends_alike(void **state)
{
    static const struct tsrv_opts nowait = {.flags = TSRV_NOWAIT};
    char dir[] = "/tmp/mdc-timeouts-XXXXXX", afile[64];
    const char *idle_e[] = {"-n", "1", "--io=epoll", "--idle-timeout", "1",
                            NULL};
    const char *idle_u[] = {"-n", "1", "--io=uring", "--idle-timeout", "1",
                            NULL};
    const char *auth_e[] = {"-n", "1", "--io=epoll", "--auth-file", afile,
                            "--auth-timeout", "1", NULL};
    const char *auth_u[] = {"-n", "1", "--io=uring", "--auth-file", afile,
                            "--auth-timeout", "1", NULL};
    const char *const *args[NSIDE] = {idle_e, idle_u, auth_e, auth_u};
    struct side sd[NSIDE];
    double median[NSIDE];
    FILE *f;
    int k, i, early = 0, attempt, rounds;
    bool alike = false;

    (void)state;
    if (tsrv_external())
        skip();
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0755);
    snprintf(afile, sizeof(afile), "%s/users", dir);
    f = fopen(afile, "w");
    assert_non_null(f);
    fputs("alice:s3cret\n", f);
    fclose(f);
    chmod(afile, 0644);
    memset(sd, 0, sizeof(sd));
    for (k = 0; k < NSIDE; k++) {
        sd[k].io = k % 2 == 0 ? "epoll" : "io_uring";
        sd[k].kind = k < 2 ? "idle" : "auth";
        assert_int_equal(tsrv_start_opts(&sd[k].s, &nowait, args[k]), 0);
    }
    for (k = 0; k < NSIDE; k++) {
        int rc = tsrv_wait_ready(&sd[k].s);
        char *log = rc > 0 ? tsrv_log(&sd[k].s) : NULL;
        const char *ci = getenv("CI");
        /* a build without liburing (the portable one), or a kernel or
         * sandbox without io_uring (never in CI): nothing to compare */
        bool none = log != NULL &&
                    (strstr(log, "built without liburing") != NULL ||
                     (strstr(log, "io_uring is not available") != NULL &&
                      !(ci != NULL && strcmp(ci, "true") == 0)));

        free(log);
        if (none) {
            for (i = 0; i < NSIDE; i++)
                if (i != k && sd[i].s.pid > 0)
                    tsrv_kill(&sd[i].s, SIGKILL);
            for (i = 0; i < NSIDE; i++)
                tsrv_stop(&sd[i].s);
            unlink(afile);
            rmdir(dir);
            print_message("SKIP: io_uring is not available here\n");
            skip();
        }
        assert_int_equal(rc, 0);
    }
    for (attempt = 1; attempt <= UE_TRIES && !alike; attempt++) {
        alike = true;
        for (k = 0; k < NSIDE; k++)
            for (i = 0; i < NCONN; i++)
                sd[k].eof[i] = 0;
        /* spread over a second, the four daemons in turn, so that each
         * backend's connections meet its tick at every phase */
        for (i = 0; i < NCONN; i++) {
            for (k = 0; k < NSIDE; k++) {
                /* before connect(): the accept is later */
                sd[k].t0[i] = now_s();
                sd[k].fd[i] = tc_connect(&sd[k].s);
                assert_true(sd[k].fd[i] >= 0);
            }
            poll_eofs(sd, i + 1, 1.0 / NCONN);
        }
        /* a hang's ceiling: 30 s */
        for (i = 0; i < 100 && !all_closed(sd); i++)
            poll_eofs(sd, NCONN, 0.3);
        for (k = 0; k < NSIDE; k++) {
            double late[NCONN], worst = 0;

            for (i = 0; i < NCONN; i++) {
                late[i] = sd[k].eof[i] - sd[k].t0[i] - 1.0;
                if (sd[k].eof[i] == 0)
                    fail_msg("%s %s: connection %d not closed in 30 s",
                             sd[k].io, sd[k].kind, i);
                if (late[i] < 0)
                    early++;
                if (late[i] > worst)
                    worst = late[i];
                close(sd[k].fd[i]);
            }
            qsort(late, NCONN, sizeof(late[0]), cmp_double);
            median[k] = late[NCONN / 2];
            print_message("round %d: %s --%s-timeout 1: median %.0f ms, "
                          "worst %.0f ms after the second\n", attempt,
                          sd[k].io, sd[k].kind, median[k] * 1000,
                          worst * 1000);
        }
        for (k = 0; k < NSIDE; k += 2)
            if (median[k + 1] >
                UE_RATIO * (median[k] > 0.1 ? median[k] : 0.1))
                alike = false;
    }
    rounds = attempt - 1;
    {
        int fd = tc_connect(&sd[0].s);

        assert_true(fd >= 0);
        assert_int_equal(tc_stat(fd, "idle_kicks"), NCONN * rounds);
        close(fd);
        fd = tc_connect(&sd[1].s);
        assert_true(fd >= 0);
        assert_int_equal(tc_stat(fd, "idle_kicks"), NCONN * rounds);
        close(fd);
    }
    for (k = 0; k < NSIDE; k++)
        assert_int_equal(tsrv_stop(&sd[k].s), 0);
    unlink(afile);
    rmdir(dir);
    assert_int_equal(early, 0);
    for (k = 0; k < NSIDE; k += 2)
        if (median[k + 1] > UE_RATIO * (median[k] > 0.1 ? median[k] : 0.1))
            fail_msg("no round of %d passed; the last: --%s-timeout: "
                     "io_uring's median %.0f ms late, epoll's %.0f ms",
                     UE_TRIES, sd[k].kind, median[k + 1] * 1000,
                     median[k] * 1000);
}

/* ---- the epoll network loop while busy ----------------------------------- */

enum { LB_BUSY = 4, LB_DEPTH = 400, LB_NEW = 20 };

struct hammer {
    int fd[LB_BUSY];
    atomic_bool stop;
    long long rounds;
    double t_open;  /* when the connections were opened (now_s()) */
    double max_gap; /* the longest time between two turns of the thread's
                     * loop, the first counted from t_open: a thread the
                     * machine left without a CPU (or a daemon that did
                     * not read) for a second lets --idle-timeout 1 close
                     * its connections rightly */
};

/* A turn of the hammer's loop at now_s(): the gap since *last counted. */
static void hammer_turn(struct hammer *h, double *last)
{
    double t = now_s();

    if (t - *last > h->max_gap)
        h->max_gap = t - *last;
    *last = t;
}

/* Keep the thread's loop busy: each connection writes gets of a missing
 * key without end, as fast as the daemon takes them, and reads their
 * "END"s as they come: its input is never empty, so with -R 2 it is
 * requeued turn after turn and the loop's epoll_wait never waits.  Until
 * told to stop, or the daemon goes. */
static void *hammer_main(void *arg)
{
    char req[LB_DEPTH * 10], got[65536];
    struct hammer *h = arg;
    size_t off[LB_BUSY] = {0};
    double last = h->t_open;
    int i, k;

    for (i = 0; i < LB_DEPTH; i++)
        memcpy(req + i * 10, "get lbk00\n", 10);
    while (!atomic_load(&h->stop)) {
        struct pollfd pf[LB_BUSY];

        hammer_turn(h, &last);

        for (k = 0; k < LB_BUSY; k++) {
            pf[k].fd = h->fd[k];
            pf[k].events = POLLIN | POLLOUT;
        }
        int ready = poll(pf, LB_BUSY, 30000);

        hammer_turn(h, &last); /* a poll that waited for the daemon too */
        if (ready <= 0)
            return NULL;
        for (k = 0; k < LB_BUSY; k++) {
            ssize_t n;

            if (pf[k].revents & (POLLERR | POLLHUP))
                return NULL;
            if (pf[k].revents & POLLOUT) {
                n = send(h->fd[k], req + off[k], sizeof(req) - off[k],
                         MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno != EAGAIN)
                    return NULL;
                if (n > 0)
                    off[k] = (off[k] + (size_t)n) % sizeof(req);
            }
            if (pf[k].revents & POLLIN) {
                n = recv(h->fd[k], got, sizeof(got), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN))
                    return NULL;
            }
        }
        h->rounds++;
    }
    return NULL;
}

/* LB_NEW connections opened, each asked "version" and closed: the
 * seconds it took. */
static double lb_new_conns(const struct tsrv *s)
{
    double t0 = now_s();
    char b[64];
    int i, fd;

    for (i = 0; i < LB_NEW; i++) {
        fd = tc_connect(s);
        assert_true(fd >= 0);
        tc_set_timeout_ms(fd, 30000);
        assert_int_equal(tc_send_all(fd, "version\r\n", 9), 0);
        memset(b, 0, sizeof(b));
        assert_true(recv(fd, b, sizeof(b) - 1, 0) > 0);
        assert_memory_equal(b, "VERSION ", 8);
        close(fd);
    }
    return now_s() - t0;
}

/* A silent connection opened at t0 is closed by --idle-timeout 1: the
 * seconds after t0 (-1: not in 30 s, a hang). */
static double lb_idle_closed(int fd, double t0)
{
    double at = tc_wait_eof(fd, 30000) ? now_s() - t0 : -1;

    close(fd);
    return at;
}

/*
 * The epoll network thread's loop (evloop.c: its own over an epoll set,
 * libevent's in the portable build) keeps its contract while its turns
 * are full: LB_BUSY connections whose input never runs out are requeued
 * turn after turn at -R 2 (the loop then does not wait), and
 * meanwhile the tick runs (a silent connection is closed by
 * --idle-timeout, not before its second), connections handed over through
 * the wake are adopted and served, and a stop asked in the middle of it
 * ends the daemon cleanly.  Both timings are judged against the same
 * daemon's while idle, in this run: at most LB_RATIO times (LB_FLOOR s
 * at least: the ASan build served the new connections in 0.55 s busy).
 * libevent's loop, which ran the requeued ones again in the same pass
 * over its active queue, took 21 s for the new connections and closed the
 * silent one 20 s late (main; in the portable build before its bases
 * were given a callback limit, 14.7 s and 13.7 s late).
 * Waits end at 30 s (a hang); the counters are asserted.  With -n 0
 * (test_epoll_loop_busy_main) the main thread serves the connections
 * itself, on its libevent loop (their epoll set one event of it, or in
 * the portable build libevent's events), and accepts the new ones.
 */
#define LB_RATIO 20.0
#define LB_FLOOR 0.25
static void lb_run(const char *nthreads)
{
    const char *args[] = {"-n", nthreads, "--io=epoll", "--idle-timeout",
                          "1", "-R", "2", NULL};
    struct tsrv s;
    struct hammer h;
    pthread_t tid;
    double t0, idle_late0, idle_late, new0, new1;
    int idle, i, fd;
    long long yields, kicks;

    if (tsrv_external())
        skip();
    assert_int_equal(tsrv_start(&s, args), 0);
    /* the baselines: the loop idle */
    new0 = lb_new_conns(&s);
    t0 = now_s();
    idle = tc_connect(&s);
    assert_true(idle >= 0);
    idle_late0 = lb_idle_closed(idle, t0) - 1.0;
    /* busy */
    memset(&h, 0, sizeof(h));
    atomic_init(&h.stop, false);
    h.t_open = now_s();
    for (i = 0; i < LB_BUSY; i++) {
        h.fd[i] = tc_connect(&s);
        assert_true(h.fd[i] >= 0);
        tc_set_timeout_ms(h.fd[i], 30000);
    }
    t0 = now_s();
    idle = tc_connect(&s);
    assert_true(idle >= 0);
    assert_int_equal(pthread_create(&tid, NULL, hammer_main, &h), 0);
    new1 = lb_new_conns(&s); /* the wake while busy */
    idle_late = lb_idle_closed(idle, t0) - 1.0; /* the tick while busy */
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    tc_set_timeout_ms(fd, 30000);
    yields = tc_stat(fd, "conn_yields");
    kicks = tc_stat(fd, "idle_kicks");
    close(fd);
    /* the stop while busy: a clean exit */
    assert_int_equal(tsrv_kill(&s, SIGTERM), 0);
    atomic_store(&h.stop, true);
    pthread_join(tid, NULL);
    for (i = 0; i < LB_BUSY; i++)
        close(h.fd[i]);
    /* the two silent connections; a busy one only if its own thread let
     * it be silent for a second (a busy machine).  A connection still
     * running its pipelined requests is not idle: 6 kicks here at a gap of
     * 0.055 s, TSan build, before a -R yield counted as activity */
    print_message("idle kicks: %lld; the busy connections' longest gap "
                  "%.3f s\n", kicks, h.max_gap);
    if (h.max_gap < 0.9)
        assert_int_equal(kicks, 2);
    else
        assert_true(kicks >= 2 && kicks <= 2 + LB_BUSY);
    print_message("epoll loop (-n %s): %d new connections served in "
                  "%.3f s idle, %.3f s busy; the silent one closed %.3f s "
                  "after its second idle, %.3f s busy (%lld polls of %d "
                  "busy connections, %lld yields)\n",
                  nthreads, LB_NEW, new0, new1, idle_late0, idle_late,
                  h.rounds, LB_BUSY, yields);
    assert_true(idle_late0 >= 0); /* never early (-2: not closed) */
    assert_true(idle_late >= 0);
    assert_true(h.rounds > 0);
    assert_true(yields > 0);
    assert_true(new1 <= LB_RATIO * (new0 > LB_FLOOR ? new0 : LB_FLOOR));
    assert_true(idle_late <=
                LB_RATIO * (idle_late0 > LB_FLOOR ? idle_late0 : LB_FLOOR));
    assert_int_equal(tsrv_stop(&s), 0);
}

static void test_epoll_loop_busy(void **state)
{
    (void)state;
    lb_run("1");
}

static void test_epoll_loop_busy_main(void **state)
{
    (void)state;
    lb_run("0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline_arithmetic),
        cmocka_unit_test(test_next_tick),
        cmocka_unit_test(test_backends_alike),
        cmocka_unit_test(test_epoll_loop_busy),
        cmocka_unit_test(test_epoll_loop_busy_main),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
