/*
 * test_fault_alloc.c - allocation failure under a mixed load
 * (docs/security.md, "What was tested").  The daemon runs in-process
 * (SPED: this thread is its worker) with connections on socketpairs; the
 * allocator shim (server/core/alloc.c) fails about one allocation in 8
 * while text and native clients set, append, tag, read by key and by tag,
 * count, delete by tag and reconnect.  Every reply must be well formed and
 * one the request allows, an allocation failure answered
 * "SERVER_ERROR out of memory..." (text) or NO_MEMORY (native), or the
 * connection closed when not even the reply could be allocated; every
 * value read back must be one that was written.  At the end store_check()
 * is clean, and in the sanitizer build LeakSanitizer sees no leak.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "server/core/alloc.h"
#include "server/net/conn.h"
#include "server/daemon.h"
#include "server/options.h"
#include "server/core/store.h"
#include "protocol/wire.h"

#define NCONN 8
#define NKEYS 200
#define ROUNDS 6000
#define FAULT_ONE_IN 8

struct tconn {
    struct conn *c;
    int peer;
    bool native;
};

static struct server *srv;
static struct tconn conns[NCONN];
static uint8_t rbuf[4 << 20];
static uint64_t n_ok, n_oom, n_closed, n_reconnect_fail;

static uint64_t rng = 0x1234567887654321ull;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

static char pattern(unsigned k)
{
    return (char)('a' + k % 26);
}

static bool open_conn(struct tconn *t, bool native)
{
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    atomic_fetch_add(&srv->nconns, 1);
    t->c = conn_setup(srv, &srv->workers[0], sv[0], AF_UNIX);
    if (t->c == NULL) {
        /* as net.c does: the accepted socket is closed */
        atomic_fetch_sub(&srv->nconns, 1);
        close(sv[0]);
        close(sv[1]);
        return false;
    }
    if (conn_adopt(t->c) < 0) {
        conn_teardown(t->c);
        t->c = NULL;
        close(sv[1]);
        return false;
    }
    t->peer = sv[1];
    t->native = native;
    return true;
}

/* Send req, run the connection, collect what it wrote; -1 if it closed. */
static ssize_t exchange(struct tconn *t, const void *req, size_t len)
{
    size_t got = 0;
    ssize_t k;

    assert_int_equal(write(t->peer, req, len), (ssize_t)len);
    conn_on_io(t->c, EV_READ | EV_WRITE);
    for (;;) {
        k = recv(t->peer, rbuf + got, sizeof(rbuf) - 1 - got, MSG_DONTWAIT);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k == 0 || (k < 0 && errno == ECONNRESET)) {
            /* the server closed: the conn is gone (conn_teardown) */
            close(t->peer);
            t->c = NULL;
            return -1;
        }
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        /* no EOF: the connection lives; a long reply may wait for room */
        if (t->c->opending == 0)
            break;
        conn_on_io(t->c, EV_WRITE);
    }
    rbuf[got] = 0;
    return (ssize_t)got;
}

static bool starts(const uint8_t *p, size_t n, const char *s)
{
    size_t l = strlen(s);
    return n >= l && memcmp(p, s, l) == 0;
}

/* VALUE blocks, each value all one key's pattern byte; then END (or, for
 * tget, SERVER_ERROR out of memory). */
static void check_values(const uint8_t *p, size_t n, bool tag_oom_ok)
{
    while (starts(p, n, "VALUE ")) {
        unsigned key, flags;
        size_t vlen, i;
        int used = 0;
        const uint8_t *v;

        if (sscanf((const char *)p, "VALUE k%u %u %zu\r\n%n", &key, &flags,
                   &vlen, &used) != 3 || used == 0)
            fail_msg("bad VALUE line: %.60s", p);
        v = p + used;
        assert_true((size_t)used + vlen + 2 <= n);
        for (i = 0; i < vlen; i++)
            if (v[i] != (uint8_t)pattern(key))
                fail_msg("k%u: byte %zu is %c, want %c", key, i, v[i],
                         pattern(key));
        assert_memory_equal(v + vlen, "\r\n", 2);
        p = v + vlen + 2;
        n -= (size_t)used + vlen + 2;
    }
    if (n == 5 && memcmp(p, "END\r\n", 5) == 0) {
        n_ok++;
        return;
    }
    if (tag_oom_ok && n == 28 &&
        memcmp(p, "SERVER_ERROR out of memory\r\n", 28) == 0) {
        n_oom++;
        return;
    }
    fail_msg("reply does not end well: '%.*s'", (int)n, (const char *)p);
}

static void check_line(const uint8_t *p, size_t n, const char *const *ok)
{
    size_t i;

    if (starts(p, n, "SERVER_ERROR out of memory") && n >= 2 &&
        p[n - 2] == '\r' && p[n - 1] == '\n' &&
        memchr(p, '\n', n) == p + n - 1) {
        n_oom++;
        return;
    }
    for (i = 0; ok[i] != NULL; i++) {
        size_t l = strlen(ok[i]);
        bool prefix = ok[i][l - 1] == '*'; /* the prefix, then one line */

        if (prefix ? (n >= l - 1 && memcmp(p, ok[i], l - 1) == 0 &&
                      memchr(p, '\n', n) == p + n - 1)
                   : (n == l && memcmp(p, ok[i], l) == 0)) {
            n_ok++;
            return;
        }
    }
    fail_msg("unexpected reply '%.*s'", (int)n, (const char *)p);
}

static void text_op(struct tconn *t)
{
    static char val[70000];
    char req[80000];
    unsigned k = rnd(NKEYS);
    size_t vlen = rnd(10) == 0 ? 1000 + rnd(60000) : 1 + rnd(300);
    int len = 0, op = (int)rnd(9);
    ssize_t n;
    static const char *const stored[] = {"STORED\r\n", NULL};
    static const char *const appended[] = {"STORED\r\n", "NOT_STORED\r\n",
                                           NULL};
    static const char *const deleted[] = {"DELETED\r\n", "NOT_FOUND\r\n",
                                          NULL};
    static const char *const tdeleted[] = {"DELETED *", NULL};
    static const char *const counted[] = {"NOT_FOUND\r\n", "0*", "1*", "2*",
                                          "3*", "4*", "5*", "6*", "7*", "8*",
                                          "9*", NULL};

    switch (op) {
    case 0:
    case 1:
        len = snprintf(req, sizeof(req), "set k%u 0 0 %zu\r\n", k, vlen);
        break;
    case 2:
        len = snprintf(req, sizeof(req), "tset k%u 0 0 %zu 1:%u,2:%u\r\n", k,
                       vlen, k % 10, k % 7);
        break;
    case 3:
        vlen = 1 + rnd(50);
        len = snprintf(req, sizeof(req), "append k%u 0 0 %zu\r\n", k, vlen);
        break;
    case 4:
        len = snprintf(req, sizeof(req), "get k%u k%u k%u\r\n", k,
                       rnd(NKEYS), rnd(NKEYS));
        break;
    case 5:
        len = snprintf(req, sizeof(req), "tget 1 %u %u\r\n", rnd(10),
                       rnd(10));
        break;
    case 6:
        len = snprintf(req, sizeof(req), rnd(4) ? "incr c%u 1\r\n"
                                                : "set c%u 0 0 1\r\n5\r\n",
                       k % 16);
        break;
    case 7:
        len = snprintf(req, sizeof(req), rnd(8) ? "delete k%u\r\n"
                                                : "tdel 2 %u\r\n",
                       rnd(8) ? k : k % 7);
        break;
    default:
        len = snprintf(req, sizeof(req), "get k%u\r\n", k);
        break;
    }
    if (op <= 3) {
        memset(val, pattern(k), vlen);
        memcpy(req + len, val, vlen);
        memcpy(req + len + vlen, "\r\n", 2);
        len += (int)vlen + 2;
    }
    n = exchange(t, req, (size_t)len);
    if (n < 0) {
        n_closed++;
        return;
    }
    switch (op) {
    case 0:
    case 1:
    case 2: check_line(rbuf, (size_t)n, stored); break;
    case 3: check_line(rbuf, (size_t)n, appended); break;
    case 4:
    case 8: check_values(rbuf, (size_t)n, false); break;
    case 5: check_values(rbuf, (size_t)n, true); break;
    case 6:
        if (strstr(req, "set") != NULL)
            check_line(rbuf, (size_t)n, stored);
        else
            check_line(rbuf, (size_t)n, counted);
        break;
    default:
        if (strstr(req, "tdel") != NULL)
            check_line(rbuf, (size_t)n, tdeleted);
        else
            check_line(rbuf, (size_t)n, deleted);
        break;
    }
}

static void native_op(struct tconn *t)
{
    static uint8_t req[70000 + 256], val[70000];
    struct wire_hdr h;
    struct wire_tag tag;
    char key[16];
    unsigned k = rnd(NKEYS);
    size_t vlen = rnd(10) == 0 ? 1000 + rnd(60000) : 1 + rnd(300);
    bool set = rnd(2) == 0;
    struct wire_msg m;
    ssize_t len, n;

    snprintf(key, sizeof(key), "k%u", k);
    memset(val, pattern(k), vlen);
    wire_hdr_request(&h, set ? WIRE_OP_SET : WIRE_OP_GETK);
    h.klen = (uint16_t)strlen(key);
    tag.tkey = 1;
    tag.tval = (int32_t)(k % 10);
    if (set) {
        h.vlen = (uint32_t)vlen;
        h.ntags = rnd(2);
    }
    len = wire_compose(req, sizeof(req), &h, &tag, key, set ? val : NULL);
    assert_true(len > 0);
    n = exchange(t, req, (size_t)len);
    if (n < 0) {
        n_closed++;
        return;
    }
    assert_int_equal(wire_parse(rbuf, (size_t)n, &m, SIZE_MAX), n);
    if (m.hdr.status == WIRE_S_NO_MEMORY) {
        n_oom++;
        return;
    }
    if (set) {
        assert_int_equal(m.hdr.status, WIRE_S_OK);
    } else if (m.hdr.status == WIRE_S_OK) {
        for (uint32_t i = 0; i < m.hdr.vlen; i++)
            assert_int_equal(m.value[i], (uint8_t)pattern(k));
    } else {
        assert_int_equal(m.hdr.status, WIRE_S_NOT_FOUND);
    }
    n_ok++;
}

static void test_mixed_load_with_failing_allocations(void **state)
{
    char msg[256];
    int i, r;

    (void)state;
    for (i = 0; i < NCONN; i++)
        assert_true(open_conn(&conns[i], i % 4 == 3));
    mdc_alloc_fault_set(FAULT_ONE_IN, 42);
    for (r = 0; r < ROUNDS; r++) {
        struct tconn *t = &conns[rnd(NCONN)];

        if (t->c == NULL || rnd(200) == 0) {
            /* churn: a closed connection is replaced, and now and then a
             * live one is dropped by its client */
            if (t->c != NULL) {
                close(t->peer);
                conn_on_io(t->c, EV_READ | EV_CLOSED);
                t->c = NULL;
            }
            if (!open_conn(t, rnd(4) == 0)) {
                n_reconnect_fail++;
                continue;
            }
        }
        if (t->native)
            native_op(t);
        else
            text_op(t);
    }
    mdc_alloc_fault_set(0, 0);
    printf("# %d requests: %llu answered, %llu out-of-memory replies, "
           "%llu connections closed, %llu connection setups failed; "
           "%llu allocations failed\n",
           ROUNDS, (unsigned long long)n_ok, (unsigned long long)n_oom,
           (unsigned long long)n_closed,
           (unsigned long long)n_reconnect_fail,
           (unsigned long long)mdc_alloc_faults());
    assert_true(mdc_alloc_faults() > 100);
    assert_true(n_oom > 50);
    assert_true(n_ok > ROUNDS / 2);
    if (store_check(srv->store, msg, sizeof(msg)) != 0)
        fail_msg("store_check: %s", msg);
    /* the server still works without faults, on every connection */
    for (i = 0; i < NCONN; i++) {
        if (conns[i].c == NULL)
            assert_true(open_conn(&conns[i], false));
        if (conns[i].native)
            continue;
        assert_int_equal(exchange(&conns[i], "set z 0 0 1\r\nz\r\n", 16), 8);
        assert_memory_equal(rbuf, "STORED\r\n", 8);
    }
}

static int setup(void **state)
{
    struct options o;

    (void)state;
    options_defaults(&o);
    o.net_threads = 0; /* SPED: the calling thread is the worker */
    o.payload_threads = 0;
    o.memory_mb = 64;
    /* the test drives the epoll path's state machine by hand
     * (conn_on_io); test_server_alloc and test_uring cover io_uring */
    o.io = "epoll";
    srv = server_setup(&o);
    return srv != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < NCONN; i++)
        if (conns[i].c != NULL) {
            conn_teardown(conns[i].c);
            close(conns[i].peer);
        }
    options_teardown(&srv->opt);
    server_teardown(srv);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_load_with_failing_allocations),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
