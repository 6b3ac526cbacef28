/*
 * test_uring.c - the io_uring backend (--io=uring, server/net/uring.c):
 *  - one loop turn serves many ready connections (one wait, one submit);
 *  - listeners accept through a multishot accept on the ring;
 *  - a client that vanishes while a send of a referenced record is in
 *    flight, and a connection dropped by the server in the same state:
 *    the record is released (once: ASan/UBSan builds run this too);
 *  - more ready connections than provided buffers: nothing is lost;
 *  - a kernel that refuses io_uring (a seccomp filter here): an explicit
 *    --io=uring stops with a clear message, --io=auto runs on epoll.
 * Without liburing only the refusal of --io=uring is checked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <cmocka.h>

#include "server_client.h"

#include "server/core/alloc.h"
#include "server/core/store.h"
#include "server/daemon.h"
#include "server/net/conn.h"
#include "server/net/evloop.h"
#include "server/net/net.h"
#include "server/net/threads.h"
#include "server/net/uring.h"
#include "server/options.h"

/* In the daemon's child before exec: its own backend choice (not the
 * suite's MDC_TEST_IO), and with deny_uring a seccomp filter that fails
 * io_uring_setup() with ENOSYS, as a kernel without io_uring does. */
static void daemon_pre_exec(void *arg)
{
    bool deny_uring = arg != NULL;

    unsetenv("MDC_TEST_IO");
#ifdef HAVE_LIBURING
    if (deny_uring) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                     offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
            _exit(99);
    }
#else
    (void)deny_uring;
#endif
}

/* Run the daemon with args (NULL-terminated) through the harness
 * (tests/server_client.h), seccomp-filtered when deny_uring; return its
 * exit status, its log in err.  A daemon that gets ready is stopped with
 * SIGTERM (status 0 then), and its log must hold ready (its ready line). */
static int run_daemon(bool deny_uring, char *err, size_t errlen,
                      const char *const *args, const char *ready)
{
    struct tsrv_opts o = {.flags = TSRV_RAW, .pre_exec = daemon_pre_exec,
                          .arg = deny_uring ? (void *)1 : NULL};
    struct tsrv s;
    int rc = tsrv_start_opts(&s, &o, args);
    char *log;

    if (rc == 0)
        rc = tsrv_kill(&s, SIGTERM);
    log = tsrv_log(&s);
    snprintf(err, errlen, "%s", log != NULL ? log : "");
    free(log);
    tsrv_stop(&s);
    if (rc == 0 && ready != NULL && strstr(err, ready) == NULL)
        return -1;
    return rc;
}

static void test_bad_io_value(void **state)
{
    char err[4096];
    const char *const a[] = {"-p", "0", "-s", "/tmp/mdc-test-uring-x.sock",
                             "--io=kqueue", NULL};

    (void)state;
    assert_int_equal(run_daemon(false, err, sizeof(err), a, NULL), 64);
    assert_non_null(strstr(err, "--io: want auto, epoll or uring"));
}

#ifndef HAVE_LIBURING
static void test_uring_not_built(void **state)
{
    char err[4096];
    const char *const a[] = {"-p", "0", "-s", "/tmp/mdc-test-uring-x.sock",
                             "--io=uring", NULL};

    (void)state;
    assert_int_equal(run_daemon(false, err, sizeof(err), a, NULL), 64);
    assert_non_null(strstr(err, "built without liburing"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_io_value),
        cmocka_unit_test(test_uring_not_built),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else

static void test_seccomp_refusal(void **state)
{
    char err[8192], sock[64];
    int rc;
    const char *const a[] = {"-p", "0", "-s", sock, "--io=uring", "-n", "1",
                             NULL};
    const char *const b[] = {"-p", "0", "-s", sock, "--io=auto", "-n", "1",
                             NULL};

    (void)state;
    snprintf(sock, sizeof(sock), "/tmp/mdc-test-uring-%d.sock", (int)getpid());
    unlink(sock);
    /* explicit: refused with the reason, nothing served */
    assert_int_equal(run_daemon(true, err, sizeof(err), a, NULL), 70);
    assert_non_null(strstr(err, "--io=uring: io_uring is not available here"));
    assert_non_null(strstr(err, "use --io=epoll"));
    /* auto (the default): io_uring is tried, refused, and epoll serves
     * (stopped by SIGTERM once ready: 0) */
    rc = run_daemon(true, err, sizeof(err), b, " ready: model");
    if (rc != 0)
        fail_msg("--io=auto under seccomp: exit %d: %s", rc, err);
    assert_non_null(strstr(err, "io_uring is not available (io_uring_setup "
                                "failed"));
    assert_non_null(strstr(err, "using epoll"));
    assert_null(strstr(err, "network I/O: io_uring"));
    /* and without the filter, auto is io_uring */
    rc = run_daemon(false, err, sizeof(err), b, " ready: model");
    if (rc != 0)
        fail_msg("--io=auto: exit %d: %s", rc, err);
    assert_non_null(strstr(err, "network I/O: io_uring"));
    unlink(sock);
}

/* The probe passes but the rings of the threads cannot be set up (here a
 * ring size the kernel refuses): auto goes back to epoll for every thread
 * and serves; an explicit --io=uring stops. */
static void test_ring_setup_fallback(void **state)
{
    char err[8192], sock[64];
    int rc;
    const char *const a[] = {"-p", "0", "-s", sock, "--io=uring", "-n", "2",
                             NULL};
    const char *const b[] = {"-p", "0", "-s", sock, "-n", "2", NULL};

    (void)state;
    snprintf(sock, sizeof(sock), "/tmp/mdc-test-uring-f%d.sock",
             (int)getpid());
    unlink(sock);
    setenv("MDC_URING_ENTRIES", "1000000", 1);
    rc = run_daemon(false, err, sizeof(err), b, " ready: model");
    if (rc != 0)
        fail_msg("--io=auto, no ring: exit %d: %s", rc, err);
    assert_non_null(strstr(err, "a ring could not be set up: using epoll"));
    rc = run_daemon(false, err, sizeof(err), a, " ready: model");
    unsetenv("MDC_URING_ENTRIES");
    if (rc == 0)
        fail_msg("--io=uring, no ring: started: %s", err);
    assert_null(strstr(err, "using epoll"));
    unlink(sock);
}

/* ---- in-process: the calling thread is the worker (-n 0) -------------- */

static struct server *srv;
static uint64_t zc_min; /* --uring-send-zc of the next start() */

static struct server *start(const char *nbufs)
{
    struct options o;

    if (nbufs != NULL)
        setenv("MDC_URING_NBUFS", nbufs, 1);
    else
        unsetenv("MDC_URING_NBUFS");
    options_defaults(&o);
    o.net_threads = 0;
    o.payload_threads = 0;
    o.memory_mb = 64;
    o.max_item_size = 8u << 20;
    o.reqs_per_event = 1000000;
    o.io = "uring";
    o.uring_send_zc = zc_min;
    srv = server_setup(&o);
    unsetenv("MDC_URING_NBUFS");
    return srv;
}

static void stop(void)
{
    options_teardown(&srv->opt);
    server_teardown(srv);
    srv = NULL;
}

static struct conn *open_conn(int *peer)
{
    int sv[2];
    struct conn *c;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    atomic_fetch_add(&srv->nconns, 1);
    c = conn_setup(srv, &srv->workers[0], sv[0], AF_UNIX);
    assert_non_null(c);
    assert_int_equal(conn_adopt(c), 0);
    assert_true(uring_conn_ringed(c)); /* on the ring */
    *peer = sv[1];
    return c;
}

/* A connection over TCP on loopback (zero-copy sends need TCP). */
static struct conn *open_tcp(int *peer)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    int lfd, cfd, sfd;
    struct conn *c;

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
    cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    sfd = accept(lfd, NULL, NULL);
    assert_true(sfd >= 0);
    close(lfd);
    fcntl(sfd, F_SETFL, O_NONBLOCK);
    atomic_fetch_add(&srv->nconns, 1);
    c = conn_setup(srv, &srv->workers[0], sfd, AF_INET);
    assert_non_null(c);
    assert_int_equal(conn_adopt(c), 0);
    *peer = cfd;
    return c;
}

static void put(const char *key, const void *v, size_t vlen)
{
    struct store_item it = {0};

    it.key = key;
    it.klen = (uint32_t)strlen(key);
    it.value = v;
    it.vlen = (uint32_t)vlen;
    assert_int_equal(store_put(srv->store, STORE_SET, &it, NULL), ST_OK);
}

static uint64_t store_bytes(void)
{
    struct store_stats st;

    store_get_stats(srv->store, &st);
    return st.bytes;
}

#define NMANY 64

static void test_many_connections_one_turn(void **state)
{
    static struct conn *c[NMANY];
    static int peer[NMANY];
    static const char want[] = "VALUE k 0 3\r\nabc\r\nEND\r\n";
    char buf[128];
    int i;

    (void)state;
    assert_non_null(start(NULL));
    put("k", "abc", 3);
    for (i = 0; i < NMANY; i++)
        c[i] = open_conn(&peer[i]);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0); /* arm receives */
    for (i = 0; i < NMANY; i++)
        assert_int_equal(write(peer[i], "get k\r\n", 7), 7);
    /* one turn: one wait for completions, every receive run, every send
     * submitted together */
    assert_int_equal(uring_turn(&srv->workers[0], 1000), 1);
    for (i = 0; i < NMANY; i++) {
        struct pollfd p = {peer[i], POLLIN, 0};
        ssize_t n;

        assert_int_equal(poll(&p, 1, 0), 1);
        n = read(peer[i], buf, sizeof(buf));
        assert_int_equal(n, (ssize_t)sizeof(want) - 1);
        assert_memory_equal(buf, want, sizeof(want) - 1);
    }
    for (i = 0; i < NMANY; i++) {
        conn_teardown(c[i]);
        close(peer[i]);
    }
    stop();
}

/* A GET of a value larger than the socket buffer: its send stays in
 * flight, holding the record; then the peer goes (vanish) or the server
 * drops the connection. */
static void vanish(bool server_drops)
{
    size_t vlen = 4u << 20;
    char *v = malloc(vlen);
    uint64_t base, held;
    struct conn *c;
    int peer, i;

    assert_non_null(start(NULL));
    base = store_bytes();
    memset(v, 'z', vlen);
    put("big", v, vlen);
    free(v);
    c = open_conn(&peer);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0);
    assert_int_equal(write(peer, "get big\r\n", 9), 9);
    for (i = 0; i < 20 && !(c->wr_busy && c->opending > 0 &&
                            c->nseg > c->seghead); i++)
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
    assert_true(c->wr_busy); /* the send is in flight ... */
    assert_true(c->opending > 0);
    assert_true(uring_turn(&srv->workers[0], 50) >= 0);
    assert_true(c->wr_busy); /* ... and stays (the peer reads nothing) */
    assert_int_equal(store_delete(srv->store, "big", 3, 0), ST_OK);
    held = store_bytes();
    assert_true(held >= base + vlen); /* the reply holds the record */
    if (server_drops)
        conn_teardown(c); /* as the tick's --output-timeout drop does */
    else
        close(peer);
    for (i = 0; i < 100 && store_bytes() >= base + vlen; i++)
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
    assert_true(store_bytes() < base + vlen); /* released */
    assert_int_equal(atomic_load(&srv->nconns), 0);
    if (server_drops)
        close(peer);
    stop();
}

static void test_client_vanishes_mid_reply(void **state)
{
    (void)state;
    vanish(false);
}

static void test_server_drops_mid_reply(void **state)
{
    (void)state;
    vanish(true);
}

/* --uring-send-zc: GETs of 64 KiB, 256 KiB and 1 MiB values go out with
 * zero-copy sends, byte for byte, each followed by its notification. */
static void test_send_zc_bytes(void **state)
{
    static const size_t sizes[] = {64u << 10, 256u << 10, 1u << 20};
    size_t vlen, got, want, j, si;
    char *v, *buf, head[64];
    uint64_t sends, notifs;
    struct conn *c;
    int peer, i, h;

    (void)state;
    zc_min = 32u << 10;
    assert_non_null(start(NULL));
    zc_min = 0;
    c = open_tcp(&peer);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0);
    for (si = 0; si < 3; si++) {
        vlen = sizes[si];
        v = malloc(vlen);
        buf = malloc(vlen + 64);
        assert_non_null(v);
        assert_non_null(buf);
        for (j = 0; j < vlen; j++)
            v[j] = (char)('a' + (j * 7 + si) % 26);
        put("zc", v, vlen);
        assert_int_equal(write(peer, "get zc\r\n", 8), 8);
        h = snprintf(head, sizeof(head), "VALUE zc 0 %zu\r\n", vlen);
        want = (size_t)h + vlen + 7;
        for (i = 0, got = 0; i < 500 && got < want; i++) {
            ssize_t k;

            assert_true(uring_turn(&srv->workers[0], 5) >= 0);
            while ((k = recv(peer, buf + got, vlen + 64 - got,
                             MSG_DONTWAIT)) > 0)
                got += (size_t)k;
        }
        assert_int_equal(got, want);
        assert_memory_equal(buf, head, (size_t)h);
        assert_memory_equal(buf + h, v, vlen);
        assert_memory_equal(buf + h + vlen, "\r\nEND\r\n", 7);
        /* the zero-allocation GET (tests/test_server_alloc.c) holds with
         * zero-copy sends: a GET after the first allocates nothing */
        if (mdc_alloc_counts_threads()) {
            uint64_t a0 = mdc_thread_allocated(), a1;

            assert_int_equal(write(peer, "get zc\r\n", 8), 8);
            for (i = 0, got = 0; i < 500 && (got < want || c->wr_busy);
                 i++) {
                ssize_t k;

                assert_true(uring_turn(&srv->workers[0], 5) >= 0);
                while ((k = recv(peer, buf + got, vlen + 64 - got,
                                 MSG_DONTWAIT)) > 0)
                    got += (size_t)k;
            }
            a1 = mdc_thread_allocated();
            assert_int_equal(got, want);
            if (a1 != a0)
                fail_msg("a zero-copy GET of %zu bytes allocated %llu bytes",
                         vlen, (unsigned long long)(a1 - a0));
        }
        free(v);
        free(buf);
    }
    for (i = 0; i < 100; i++) {
        uring_zc_counts(&srv->workers[0], &sends, &notifs);
        if (sends == notifs && !c->wr_busy)
            break;
        assert_true(uring_turn(&srv->workers[0], 5) >= 0);
    }
    fprintf(stderr, "zero-copy sends %llu, notifications %llu\n",
            (unsigned long long)sends, (unsigned long long)notifs);
    assert_true(sends >= 3);
    assert_int_equal(notifs, sends);
    conn_teardown(c);
    close(peer);
    stop();
}

/* A zero-copy GET in flight holds the record after a delete, through the
 * send's completion, until the notification; then it is released.  The
 * peer vanishing (or the server dropping it) mid-send leaks nothing. */
static void zc_release(int how)
{
    size_t vlen = 4u << 20;
    char *v = malloc(vlen), buf[65536];
    uint64_t base, sends, notifs;
    struct conn *c;
    int peer, i, waits = 0;

    zc_min = 64u << 10;
    assert_non_null(start(NULL));
    zc_min = 0;
    base = store_bytes();
    memset(v, 'z', vlen);
    put("big", v, vlen);
    free(v);
    c = open_tcp(&peer);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0);
    assert_int_equal(write(peer, "get big\r\n", 9), 9);
    for (i = 0; i < 20 && !(c->wr_busy && c->opending > 0); i++)
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
    assert_true(c->wr_busy);
    assert_int_equal(store_delete(srv->store, "big", 3, 0), ST_OK);
    assert_true(store_bytes() >= base + vlen); /* the send holds it */
    if (how == 0) {
        /* read it all: every turn, a send whose notification has not
         * come still holds the record */
        size_t got = 0;

        for (i = 0; i < 2000 && store_bytes() >= base + vlen; i++) {
            ssize_t k;

            assert_true(uring_turn(&srv->workers[0], 2) >= 0);
            if (uring_conn_zc_wait(c)) {
                waits++;
                assert_true(store_bytes() >= base + vlen);
            }
            while ((k = recv(peer, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
                got += (size_t)k;
        }
        assert_true(got >= vlen);
        fprintf(stderr, "turns with a notification pending: %d\n", waits);
    } else if (how == 1) {
        close(peer);
    } else {
        conn_teardown(c);
    }
    for (i = 0; i < 200 && store_bytes() >= base + vlen; i++)
        assert_true(uring_turn(&srv->workers[0], 10) >= 0);
    assert_true(store_bytes() < base + vlen); /* released */
    uring_zc_counts(&srv->workers[0], &sends, &notifs);
    assert_true(sends >= 1);
    if (how == 0) {
        assert_int_equal(notifs, sends);
        conn_teardown(c);
        close(peer);
    } else if (how == 2) {
        close(peer);
    }
    for (i = 0; i < 100 && atomic_load(&srv->nconns) > 0; i++)
        assert_true(uring_turn(&srv->workers[0], 10) >= 0);
    assert_int_equal(atomic_load(&srv->nconns), 0);
    stop();
}

static void test_send_zc_release(void **state)
{
    (void)state;
    zc_release(0);
}

static void test_send_zc_vanish(void **state)
{
    (void)state;
    zc_release(1);
}

static void test_send_zc_drop(void **state)
{
    (void)state;
    zc_release(2);
}

/* Accepting on the ring: a multishot accept per listener, no accept4(). */
static void test_multishot_accept(void **state)
{
    struct sockaddr_un sa;
    char path[64], buf[64];
    int fd[3], i, k;

    (void)state;
    snprintf(path, sizeof(path), "/tmp/mdc-test-uring-acc-%d.sock",
             (int)getpid());
    assert_non_null(start(NULL));
    srv->opt.unix_socket = path;
    srv->opt.port = 0;
    assert_int_equal(net_listen_all(srv), 0);
    assert_int_equal(net_enable_accept(srv), 0);
    assert_true(uring_accept_armed(srv, 0));
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    for (i = 0; i < 3; i++) {
        fd[i] = socket(AF_UNIX, SOCK_STREAM, 0);
        assert_int_equal(connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)),
                         0);
    }
    /* the listener's libevent event is not used: only the ring's turns
     * accept (one multishot accept, three completions) */
    for (k = 0; k < 50 && atomic_load(&srv->nconns) < 3; k++)
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
    assert_int_equal(atomic_load(&srv->nconns), 3);
    assert_true(uring_accept_armed(srv, 0)); /* still on */
    for (i = 0; i < 3; i++)
        assert_int_equal(write(fd[i], "version\r\n", 9), 9);
    for (i = 0; i < 3; i++) {
        struct pollfd p = {fd[i], POLLIN, 0};

        for (k = 0; k < 50 && poll(&p, 1, 0) != 1; k++)
            assert_true(uring_turn(&srv->workers[0], 20) >= 0);
        assert_true(read(fd[i], buf, sizeof(buf)) > 8);
        assert_memory_equal(buf, "VERSION ", 8);
        close(fd[i]);
    }
    for (k = 0; k < 50 && atomic_load(&srv->nconns) > 0; k++)
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
    assert_int_equal(atomic_load(&srv->nconns), 0);
    net_close_all(srv);
    srv->opt.unix_socket = NULL;
    stop();
}

#define NFLOOD 16
#define VFLOOD (4u << 20)

/* A GET beside connections that send long values as fast as the socket
 * takes them: the bulk senders move to the bulk buffer group, and the GET
 * is answered in the turn its bytes arrive, every time (on one shared
 * group its receive found the buffers taken by the senders, ended with
 * ENOBUFS and waited for a later turn). */
static void test_light_beside_bulk(void **state)
{
    static struct conn *f[NFLOOD];
    static int fpeer[NFLOOD];
    static size_t fsent[NFLOOD];
    static char junk[256 * 1024];
    static const char want[] = "VALUE k 0 3\r\nabc\r\nEND\r\n";
    struct conn *l;
    int lpeer, i, round, t, worst = 0;
    char buf[128];

    (void)state;
    assert_non_null(start(NULL));
    put("k", "abc", 3);
    memset(junk, 'b', sizeof(junk));
    for (i = 0; i < NFLOOD; i++) {
        char head[64];
        int n = snprintf(head, sizeof(head), "set f%d 0 0 %u\r\n", i,
                         VFLOOD);

        f[i] = open_conn(&fpeer[i]);
        assert_int_equal(write(fpeer[i], head, (size_t)n), n);
    }
    l = open_conn(&lpeer);
    (void)l;
    for (round = 0; round < 30; round++) {
        assert_int_equal(write(lpeer, "get k\r\n", 7), 7);
        for (t = 1; t <= 50; t++) {
            struct pollfd p = {lpeer, POLLIN, 0};

            for (i = 0; i < NFLOOD; i++) {
                size_t left = VFLOOD - fsent[i];
                ssize_t k = send(fpeer[i], junk,
                                 left < sizeof(junk) ? left : sizeof(junk),
                                 MSG_DONTWAIT);
                if (k > 0)
                    fsent[i] += (size_t)k;
            }
            assert_true(uring_turn(&srv->workers[0], 10) >= 0);
            if (poll(&p, 1, 0) == 1)
                break;
        }
        assert_int_equal(read(lpeer, buf, sizeof(buf)),
                         (ssize_t)sizeof(want) - 1);
        assert_memory_equal(buf, want, sizeof(want) - 1);
        if (round >= 2 && t > worst) /* the first turns sort them out */
            worst = t;
    }
    fprintf(stderr, "GET beside %d bulk senders: answered within %d turns\n",
            NFLOOD, worst);
    assert_true(worst <= 1);
    for (i = 0; i < NFLOOD; i++)
        assert_true(uring_conn_bulk(f[i])); /* they moved */
    assert_false(uring_conn_bulk(l));
    for (i = 0; i < NFLOOD; i++) {
        conn_teardown(f[i]);
        close(fpeer[i]);
    }
    conn_teardown(l);
    close(lpeer);
    stop();
}

/* Send len bytes to peer while running turns; then run turns until want
 * (NUL-terminated) has been read back whole. */
static void roundtrip(int peer, const char *req, size_t len, const char *want)
{
    static char got[256];
    size_t off = 0, glen = 0, wl = strlen(want);
    int turn;

    for (turn = 0; turn < 1000 && glen < wl; turn++) {
        if (off < len) {
            ssize_t k = send(peer, req + off, len - off, MSG_DONTWAIT);
            if (k > 0)
                off += (size_t)k;
        }
        assert_true(uring_turn(&srv->workers[0], 5) >= 0);
        if (glen < wl) {
            ssize_t k = recv(peer, got + glen, wl - glen, MSG_DONTWAIT);
            if (k > 0)
                glen += (size_t)k;
        }
    }
    assert_int_equal(off, len);
    assert_int_equal(glen, wl);
    assert_memory_equal(got, want, wl);
}

/* A connection that sent one long value goes back to the light group once
 * it has received under 16 KiB a turn for URING_BULK_IDLE seconds, even
 * though it
 * never stops sending small requests (a pooled client that is never idle
 * for 2 s stayed on the bulk group for ever, its GETs competing with the
 * floods for the bulk buffers and parsed after everyone else's). */
static void test_bulk_returns_when_chatty(void **state)
{
    static char big[256 * 1024 + 64];
    struct worker *w;
    struct conn *c;
    int peer, n, sec;

    (void)state;
    assert_non_null(start(NULL));
    w = &srv->workers[0];
    put("k", "abc", 3);
    c = open_conn(&peer);
    n = snprintf(big, sizeof(big), "set big 0 0 %u\r\n", 256u * 1024);
    memset(big + n, 'v', 256 * 1024);
    memcpy(big + n + 256 * 1024, "\r\n", 2);
    roundtrip(peer, big, (size_t)n + 256 * 1024 + 2, "STORED\r\n");
    assert_true(uring_conn_bulk(c)); /* a turn's worth: bulk */
    /* 20 KB values every second: less than a light turn's worth, more
     * than a bulk buffer: it stays bulk */
    n = snprintf(big, sizeof(big), "set mid 0 0 20000\r\n");
    memset(big + n, 'm', 20000);
    memcpy(big + n + 20000, "\r\n", 2);
    for (sec = 0; sec < 4; sec++) {
        w->now++;
        roundtrip(peer, big, (size_t)n + 20002, "STORED\r\n");
        assert_true(uring_conn_bulk(c));
    }
    /* a GET every second for 4 s: never 2 s without input */
    for (sec = 0; sec < 4; sec++) {
        w->now++;
        roundtrip(peer, "get k\r\n", 7, "VALUE k 0 3\r\nabc\r\nEND\r\n");
    }
    assert_false(uring_conn_bulk(c));
    /* served on the light group after the switch */
    roundtrip(peer, "get k\r\n", 7, "VALUE k 0 3\r\nabc\r\nEND\r\n");
    assert_false(uring_conn_bulk(c));
    /* and a long value moves it again */
    n = snprintf(big, sizeof(big), "set big 0 0 %u\r\n", 256u * 1024);
    memset(big + n, 'v', 256 * 1024);
    memcpy(big + n + 256 * 1024, "\r\n", 2);
    roundtrip(peer, big, (size_t)n + 256 * 1024 + 2, "STORED\r\n");
    assert_true(uring_conn_bulk(c));
    conn_teardown(c);
    close(peer);
    stop();
}

#define NBULK 24
#define VBULK (600u * 1024)

/* 24 connections sending 600 KB values at once: they move to the bulk
 * group (64 buffers), whose receives run out of buffers (ENOBUFS) and are
 * re-armed; every value arrives whole and in order. */
static void test_bulk_group_exhaustion(void **state)
{
    static struct conn *c[NBULK];
    static int peer[NBULK];
    static char req[NBULK][VBULK + 64];
    static size_t rlen[NBULK], sent[NBULK], glen[NBULK];
    static char got[VBULK + 64];
    int i, turn, done;
    size_t j;

    (void)state;
    assert_non_null(start(NULL));
    for (i = 0; i < NBULK; i++) {
        int n = snprintf(req[i], sizeof(req[i]), "set b%02d 0 0 %u\r\n", i,
                         VBULK);

        c[i] = open_conn(&peer[i]);
        for (j = 0; j < VBULK; j++)
            req[i][n + j] = (char)('a' + (j / 4093 + (size_t)i) % 26);
        memcpy(req[i] + n + VBULK, "\r\n", 2);
        rlen[i] = (size_t)n + VBULK + 2;
    }
    for (turn = 0, done = 0; turn < 2000 && done < NBULK; turn++) {
        for (i = 0, done = 0; i < NBULK; i++) {
            ssize_t k;

            if (sent[i] < rlen[i]) {
                k = send(peer[i], req[i] + sent[i], rlen[i] - sent[i],
                         MSG_DONTWAIT);
                if (k > 0)
                    sent[i] += (size_t)k;
            }
            k = recv(peer[i], got, sizeof(got), MSG_DONTWAIT);
            if (k > 0)
                glen[i] += (size_t)k;
            if (glen[i] == 8)
                done++;
        }
        assert_true(uring_turn(&srv->workers[0], 5) >= 0);
    }
    assert_int_equal(done, NBULK);
    for (i = 0; i < NBULK; i++) {
        char key[8];
        int n = snprintf(key, sizeof(key), "b%02d", i);
        struct record *r = store_get(srv->store, key, (uint32_t)n);

        assert_true(uring_conn_bulk(c[i]));
        assert_non_null(r);
        assert_int_equal(record_vlen(r), VBULK);
        assert_memory_equal(record_value(r), req[i] + rlen[i] - VBULK - 2,
                            VBULK);
        store_release(srv->store, r);
    }
    for (i = 0; i < NBULK; i++) {
        conn_teardown(c[i]);
        close(peer[i]);
    }
    stop();
}

/* With a payload thread (-n 0 -t 1) a flooder's input mostly arrives while
 * the payload thread owns the connection, and is held in the stash: it
 * counts towards the turn's bytes all the same, so the flooder moves to
 * the bulk group instead of holding up to 64 light buffers at a time. */
static void test_bulk_with_payload_thread(void **state)
{
    static char req[64 * 1024], sink[256 * 1024];
    struct options o;
    struct conn *c;
    int peer, turn, i;
    size_t sent = 0, got = 0;
    const size_t total = 4u << 20;
    bool bulk = false;

    (void)state;
    for (i = 0; i + 11 <= (int)sizeof(req); i += 11)
        memcpy(req + i, "get nokey\r\n", 11);
    unsetenv("MDC_URING_NBUFS");
    options_defaults(&o);
    o.net_threads = 0;
    o.payload_threads = 1;
    o.memory_mb = 64;
    o.io = "uring";
    srv = server_setup(&o);
    assert_non_null(srv);
    assert_int_equal(threads_start(srv), 0);
    c = open_conn(&peer);
    i = 1 << 20;
    (void)setsockopt(peer, SOL_SOCKET, SO_SNDBUF, &i, sizeof(i));
    for (turn = 0; turn < 20000 && got < total / 11 * 5 && !bulk; turn++) {
        ssize_t k;

        /* 256 KiB a turn where the socket takes it: well over 64 KiB */
        for (i = 0; i < 4 && sent < total; i++) {
            size_t off = sent % (sizeof(req) / 11 * 11);
            size_t n = sizeof(req) / 11 * 11 - off;

            k = send(peer, req + off, n, MSG_DONTWAIT);
            if (k <= 0)
                break;
            sent += (size_t)k;
        }
        assert_true(uring_turn(&srv->workers[0], 1) >= 0);
        evloop_turn_nowait(&srv->workers[0]);
        while ((k = recv(peer, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
            got += (size_t)k;
        bulk = bulk || uring_conn_bulk(c);
    }
    fprintf(stderr, "payload flood: sent %zu, got %zu, bulk %d\n", sent, got,
            bulk);
    assert_true(bulk);
    /* the rest is answered; then c is the network thread's again */
    for (turn = 0; turn < 20000 && got < sent / 11 * 5; turn++) {
        ssize_t k;

        assert_true(uring_turn(&srv->workers[0], 1) >= 0);
        evloop_turn_nowait(&srv->workers[0]);
        while ((k = recv(peer, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
            got += (size_t)k;
    }
    assert_int_equal(got, sent / 11 * 5);
    for (turn = 0; turn < 1000 && __atomic_load_n(&c->inflight,
                                                  __ATOMIC_ACQUIRE); turn++)
        evloop_turn_nowait(&srv->workers[0]);
    assert_false(c->inflight);
    conn_teardown(c);
    close(peer);
    threads_stop_and_join(srv);
    stop();
}

#define NEXH 32
#define VEXH 20000

/* 4 provided buffers of 4 KiB, 32 connections with 20 KB each at once. */
static void test_buffer_ring_exhaustion(void **state)
{
    static struct conn *c[NEXH];
    static int peer[NEXH];
    static char req[VEXH + 64], got[NEXH][VEXH + 64];
    static size_t glen[NEXH];
    int i, turn, done;

    (void)state;
    assert_non_null(start("4"));
    for (i = 0; i < NEXH; i++)
        c[i] = open_conn(&peer[i]);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0);
    for (i = 0; i < NEXH; i++) {
        int n = snprintf(req, sizeof(req), "set k%02d 0 0 %d\r\n", i, VEXH);

        memset(req + n, 'A' + i % 26, VEXH);
        memcpy(req + n + VEXH, "\r\nget k", 7);
        n += VEXH + 7;
        n += snprintf(req + n, sizeof(req) - (size_t)n, "%02d\r\n", i);
        assert_int_equal(write(peer[i], req, (size_t)n), n);
    }
    for (turn = 0, done = 0; turn < 500 && done < NEXH; turn++) {
        assert_true(uring_turn(&srv->workers[0], 20) >= 0);
        for (i = 0, done = 0; i < NEXH; i++) {
            ssize_t k = recv(peer[i], got[i] + glen[i],
                             sizeof(got[i]) - glen[i], MSG_DONTWAIT);
            if (k > 0)
                glen[i] += (size_t)k;
            if (glen[i] >= 5 && memcmp(got[i] + glen[i] - 5, "END\r\n", 5) == 0)
                done++;
        }
    }
    assert_int_equal(done, NEXH);
    for (i = 0; i < NEXH; i++) {
        char head[64];
        int h = snprintf(head, sizeof(head), "STORED\r\nVALUE k%02d 0 %d\r\n",
                         i, VEXH);
        size_t j;

        assert_int_equal(glen[i], (size_t)h + VEXH + 7);
        assert_memory_equal(got[i], head, (size_t)h);
        for (j = 0; j < VEXH; j++)
            if (got[i][h + j] != 'A' + i % 26)
                fail_msg("conn %d: byte %zu of the value is wrong", i, j);
    }
    for (i = 0; i < NEXH; i++) {
        conn_teardown(c[i]);
        close(peer[i]);
    }
    stop();
}

/* The groups' buffers go to the ring as receives need them: one
 * connection in lockstep keeps to the first 64 light and 8 bulk buffers
 * (so the rest are never written, never resident), 100 connections ready
 * at once take more (a receive that finds the ring empty grows it), and
 * every request is answered either way. */
#define NDEM 100
static void test_buffers_on_demand(void **state)
{
    static struct conn *c[NDEM];
    static int peer[NDEM];
    const uint64_t first = 64 * 4096 + 8 * 16384;
    char buf[256];
    int i, turn, done;

    (void)state;
    assert_non_null(start(NULL));
    c[0] = open_conn(&peer[0]);
    assert_int_equal(srv->workers[0].pool.rbuf_bytes, first);
    for (i = 0; i < 2000; i++) {
        size_t got = 0;

        assert_int_equal(write(peer[0], "set k 0 0 1\r\nx\r\n", 16), 16);
        for (turn = 0; turn < 1000 && got < 8; turn++) {
            ssize_t k;

            assert_true(uring_turn(&srv->workers[0], 1) >= 0);
            k = recv(peer[0], buf + got, sizeof(buf) - got, MSG_DONTWAIT);
            if (k > 0)
                got += (size_t)k;
        }
        assert_int_equal(got, 8);
        assert_memory_equal(buf, "STORED\r\n", 8);
    }
    /* the buffers default to 256 of 4 KiB and 64 of 16 KiB: all given
     * to the ring from the start, and all resident after 2 000 receives */
    assert_int_equal(srv->workers[0].pool.rbuf_bytes, first);
    for (i = 1; i < NDEM; i++)
        c[i] = open_conn(&peer[i]);
    assert_true(uring_turn(&srv->workers[0], 0) >= 0);
    for (i = 0; i < NDEM; i++)
        assert_int_equal(write(peer[i], "get k\r\n", 7), 7);
    static size_t glen[NDEM];
    static char got[NDEM][64];
    for (turn = 0, done = 0; turn < 1000 && done < NDEM; turn++) {
        assert_true(uring_turn(&srv->workers[0], 1) >= 0);
        for (i = 0, done = 0; i < NDEM; i++) {
            ssize_t k = recv(peer[i], got[i] + glen[i],
                             sizeof(got[i]) - glen[i], MSG_DONTWAIT);
            if (k > 0)
                glen[i] += (size_t)k;
            if (glen[i] == 21)
                done++;
        }
    }
    assert_int_equal(done, NDEM);
    for (i = 0; i < NDEM; i++)
        assert_memory_equal(got[i], "VALUE k 0 1\r\nx\r\nEND\r\n", 21);
    assert_true(srv->workers[0].pool.rbuf_bytes > first);
    assert_true(srv->workers[0].pool.rbuf_bytes <= 256 * 4096 + 64 * 16384);
    for (i = 0; i < NDEM; i++) {
        conn_teardown(c[i]);
        close(peer[i]);
    }
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_io_value),
        cmocka_unit_test(test_seccomp_refusal),
        cmocka_unit_test(test_ring_setup_fallback),
        cmocka_unit_test(test_many_connections_one_turn),
        cmocka_unit_test(test_client_vanishes_mid_reply),
        cmocka_unit_test(test_server_drops_mid_reply),
        cmocka_unit_test(test_buffer_ring_exhaustion),
        cmocka_unit_test(test_buffers_on_demand),
        cmocka_unit_test(test_light_beside_bulk),
        cmocka_unit_test(test_bulk_returns_when_chatty),
        cmocka_unit_test(test_bulk_group_exhaustion),
        cmocka_unit_test(test_bulk_with_payload_thread),
        cmocka_unit_test(test_multishot_accept),
        cmocka_unit_test(test_send_zc_bytes),
        cmocka_unit_test(test_send_zc_release),
        cmocka_unit_test(test_send_zc_vanish),
        cmocka_unit_test(test_send_zc_drop),
    };
    struct io_uring r;
    int rc = io_uring_queue_init(8, &r, 0);

    if (rc < 0) {
        /* a kernel or sandbox without io_uring: a skip, but never in CI */
        fprintf(stderr, "io_uring_setup: %s\n", strerror(-rc));
        if (getenv("CI") != NULL && strcmp(getenv("CI"), "true") == 0)
            return 1;
        printf("SKIP: io_uring is not available here\n");
        return 77;
    }
    io_uring_queue_exit(&r);
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
