/*
 * test_server_alloc.c - proves the GET fast path (docs/threads-models.md,
 * "The GET fast path"): a batch
 * of GET hits, parsed, answered and written through a real connection on a
 * socketpair, allocates nothing (jemalloc's thread.allocated does not move)
 * and copies no value over CONN_COPY_MAX (every such value goes out as a
 * segment pointing into its record); smaller values are copied into obuf,
 * so a batch of them leaves as one piece holding no reference.  Runs in-process, in the thread that does the work.  Without
 * jemalloc (sanitizer builds) the counter does not exist: SKIP (exit 77).
 */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "server/core/alloc.h"
#include "server/net/conn.h"
#include "server/net/uring.h"
#include "server/daemon.h"
#include "server/options.h"
#include "server/proto/proto.h"
#include "server/core/store.h"
#include "protocol/wire.h"

#define NKEYS 64
#define VLEN (CONN_COPY_MAX + 500) /* sent by reference */
#define NSMALL 16
#define SVLEN 32             /* copied */

struct fixture {
    struct server *srv;
    struct conn *c;
    int peer;
    uint8_t *batch;   /* NKEYS GET/GETK requests */
    size_t batchlen;
    uint8_t *rbuf;
    size_t rcap;
};

static struct fixture fx;

/*
 * Run c as its network thread would.  epoll: one conn_on_io() call.
 * io_uring (the default; MDC_TEST_IO=epoll for the other): turns of the worker's
 * ring - the multishot receive's completion runs the batch, the send's
 * completion retires the output - until the peer has the reply and
 * nothing is pending (input: the request was written to the socket).
 */
static void drive(struct conn *c, short what, bool input)
{
    int i;

    if (!uring_conn_ringed(c)) {
        conn_on_io(c, what);
        return;
    }
    if (!input)
        conn_drive(c); /* output queued by the test itself: send it */
    for (i = 0; i < 200; i++) {
        struct pollfd p = {fx.peer, POLLIN, 0};

        if (poll(&p, 1, 0) == 1 && c->opending == 0 && !c->wr_busy)
            return;
        assert_true(uring_turn(c->owner, 50) >= 0);
    }
    fail_msg("io_uring: the reply did not go out");
}

static void key_of(char *k, size_t len, int i)
{
    snprintf(k, len, "alloc-key-%04d", i);
}

static int setup(void **state)
{
    struct options o;
    int sv[2], i;
    size_t off = 0;

    (void)state;
    options_defaults(&o);
    o.net_threads = 0; /* SPED: the calling thread is the worker */
    o.payload_threads = 0;
    o.memory_mb = 64;
    /* one conn_on_io() call must run the whole batch: no -R yield (the
     * test has no event loop to come back) */
    o.reqs_per_event = 1000000;
    fx.srv = server_setup(&o);
    if (fx.srv == NULL)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fx.peer = sv[1];
    atomic_fetch_add(&fx.srv->nconns, 1);
    fx.c = conn_setup(fx.srv, &fx.srv->workers[0], sv[0], AF_UNIX);
    if (fx.c == NULL || conn_adopt(fx.c) < 0)
        return -1;
    /* io_uring (the default where the kernel allows it, or
     * MDC_TEST_IO=uring) must really run on a ring */
    if ((fx.srv->io_uring && !uring_conn_ringed(fx.c)) ||
        (getenv("MDC_TEST_IO") != NULL &&
         strcmp(getenv("MDC_TEST_IO"), "uring") == 0 && !uring_conn_ringed(fx.c)))
        return -1;

    fx.batch = malloc(NKEYS * (WIRE_HDR_LEN + 32));
    for (i = 0; i < NKEYS; i++) {
        char k[32], v[VLEN];
        struct mdc_tag t = {7, i};
        struct store_item it = {0};
        struct wire_hdr h;

        key_of(k, sizeof(k), i);
        memset(v, 'a' + i % 26, sizeof(v));
        it.key = k;
        it.klen = (uint32_t)strlen(k);
        it.value = v;
        it.vlen = VLEN;
        it.tags = &t;
        it.ntags = i % 2; /* half of them tagged */
        if (store_put(fx.srv->store, STORE_SET, &it, NULL) != ST_OK)
            return -1;
        wire_hdr_request(&h, i % 3 == 0 ? WIRE_OP_GETK : WIRE_OP_GET);
        h.klen = (uint16_t)strlen(k);
        h.opaque = (uint32_t)i;
        off += (size_t)wire_compose(fx.batch + off, NKEYS * (WIRE_HDR_LEN + 32),
                                    &h, NULL, k, NULL);
    }
    fx.batchlen = off;
    for (i = 0; i < NSMALL; i++) {
        char k[32], v[SVLEN];
        struct store_item it = {0};

        snprintf(k, sizeof(k), "small-%02d", i);
        memset(v, 'A' + i, sizeof(v));
        it.key = k;
        it.klen = (uint32_t)strlen(k);
        it.value = v;
        it.vlen = SVLEN;
        if (store_put(fx.srv->store, STORE_SET, &it, NULL) != ST_OK)
            return -1;
    }
    fx.rcap = NKEYS * (WIRE_HDR_LEN + 64 + VLEN);
    fx.rbuf = malloc(fx.rcap);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conn_teardown(fx.c);
    close(fx.peer);
    options_teardown(&fx.srv->opt);
    server_teardown(fx.srv);
    free(fx.batch);
    free(fx.rbuf);
    return 0;
}

/* Read and check the NKEYS replies of one batch. */
static void check_replies(void)
{
    size_t got = 0, off = 0;
    int i;

    for (i = 0; i < NKEYS; i++) {
        struct wire_msg m;
        ssize_t n;
        char k[32];

        for (;;) {
            n = wire_parse(fx.rbuf + off, got - off, &m, SIZE_MAX);
            if (n != WIRE_AGAIN)
                break;
            ssize_t k2 = read(fx.peer, fx.rbuf + got, fx.rcap - got);
            assert_true(k2 > 0);
            got += (size_t)k2;
        }
        assert_true(n > 0);
        key_of(k, sizeof(k), i);
        assert_int_equal(m.hdr.status, 0);
        assert_int_equal(m.hdr.opaque, (uint32_t)i);
        assert_int_equal(m.hdr.vlen, VLEN);
        assert_int_equal(m.hdr.ntags, i % 2);
        assert_int_equal(m.value[0], 'a' + i % 26);
        assert_int_equal(m.value[VLEN - 1], 'a' + i % 26);
        if (i % 3 == 0)
            assert_memory_equal(m.key, k, strlen(k));
        else
            assert_int_equal(m.hdr.klen, 0);
        off += (size_t)n;
    }
    assert_int_equal(off, got);
}

static void run_batch(uint64_t *allocated)
{
    uint64_t a0, a1;

    assert_int_equal(write(fx.peer, fx.batch, fx.batchlen),
                     (ssize_t)fx.batchlen);
    a0 = mdc_thread_allocated();
    drive(fx.c, EV_READ | EV_WRITE, true);
    a1 = mdc_thread_allocated();
    *allocated = a1 - a0;
    assert_int_equal(fx.c->opending, 0); /* everything went out */
    check_replies();
}

static void test_get_hits_allocate_nothing(void **state)
{
    uint64_t bytes = 0;
    int round;

    (void)state;
    /* the counter works: a real allocation shows */
    {
        uint64_t a0 = mdc_thread_allocated();
        void *p = mdc_malloc(4096);
        uint64_t a1 = mdc_thread_allocated();
        mdc_free(p);
        assert_true(a1 - a0 >= 4096);
    }
    /* the first batch may size buffers; after that nothing moves */
    run_batch(&bytes);
    for (round = 0; round < 20; round++) {
        run_batch(&bytes);
        if (bytes != 0)
            fail_msg("round %d: %llu bytes allocated by %d GET hits", round,
                     (unsigned long long)bytes, NKEYS);
    }
}

/* Values leave as references into their records, never through obuf. */
static void test_values_not_copied(void **state)
{
    struct conn *c = fx.c;
    size_t i, refs = 0, avail;
    uint64_t a0, a1;

    (void)state;
    /* Put the batch straight into the input and run only the handler, so
     * the output queue can be inspected before it is written. */
    assert_int_equal(conn_bufs_take(c), 0); /* idle: it holds none */
    memcpy(c->ibuf, fx.batch, fx.batchlen);
    c->ioff = 0;
    c->ilen = fx.batchlen;
    a0 = mdc_thread_allocated();
    c->proto = &proto_native;
    c->proto->process(c, c->owner);
    a1 = mdc_thread_allocated();
    assert_int_equal(a1 - a0, 0);
    (void)conn_in_data(c, &avail);
    assert_int_equal(avail, 0);
    for (i = c->seghead; i < c->nseg; i++) {
        const struct oseg *s = &c->segs[i];
        if (s->rec != NULL) {
            assert_ptr_equal(s->ptr, record_value(s->rec));
            assert_int_equal(s->len, VLEN);
            refs++;
        }
    }
    assert_int_equal(refs, NKEYS);
    /* obuf holds headers, tags and GETK keys only: no value bytes */
    assert_true(c->olen < (size_t)NKEYS * (WIRE_HDR_LEN + 8 + 32));
    drive(c, EV_WRITE, false);
    assert_int_equal(c->opending, 0);
    check_replies();
}

/* Small values (text get): copied, so the whole reply to a pipelined batch
 * is one piece of obuf holding no record reference, allocating nothing. */
static void test_small_values_one_piece(void **state)
{
    struct conn *c = fx.c;
    char req[NSMALL * 24], want[NSMALL * 64], got[NSMALL * 64];
    size_t rl = 0, wl = 0, gl = 0, i;
    int round;

    (void)state;
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
    for (round = 0; round < 3; round++) {
        uint64_t a0, a1;
        size_t avail;

        assert_int_equal(conn_bufs_take(c), 0);
        memcpy(c->ibuf, req, rl);
        c->ioff = 0;
        c->ilen = rl;
        c->proto = &proto_text;
        a0 = mdc_thread_allocated();
        c->proto->process(c, c->owner);
        a1 = mdc_thread_allocated();
        assert_int_equal(a1 - a0, 0);
        (void)conn_in_data(c, &avail);
        assert_int_equal(avail, 0);
        assert_int_equal(c->nseg - c->seghead, 1);
        assert_null(c->segs[c->seghead].ptr);
        assert_null(c->segs[c->seghead].rec);
        assert_int_equal(c->opending, wl);
        drive(c, EV_WRITE, false);
        assert_int_equal(c->opending, 0);
        for (gl = 0; gl < wl;) {
            ssize_t n = read(fx.peer, got + gl, sizeof(got) - gl);
            assert_true(n > 0);
            gl += (size_t)n;
        }
        assert_int_equal(gl, wl);
        assert_memory_equal(got, want, wl);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_hits_allocate_nothing),
        cmocka_unit_test(test_values_not_copied),
        cmocka_unit_test(test_small_values_one_piece),
    };

    if (!mdc_alloc_counts_threads()) {
        printf("SKIP: %s has no per-thread allocation counter; the zero-"
               "allocation GET test needs the jemalloc build\n",
               mdc_allocator_name());
        return 77;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
