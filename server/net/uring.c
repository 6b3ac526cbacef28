/*
 * uring.c - the io_uring network backend (--io=uring).
 *
 * Every thread that serves connections owns one ring.  A connection has one
 * multishot receive armed for its life, which picks buffers from the
 * thread's ring of provided buffers; each completion's bytes are appended
 * to the connection's input and the buffer goes straight back.  Output is
 * one send (or sendmsg of up to URING_IOV_MAX segments) at a time, from the
 * connection's output queue in place: record references stay held until
 * the completion says the bytes are out (conn_out_sent), so the zero-copy
 * GET of the epoll path is kept.  A turn of the loop reaps every
 * completion, runs what they made ready, and submits every send they
 * produced, and the next wait, in one io_uring_enter.
 *
 * A network thread runs the ring's loop itself (uring_run): libevent is not
 * polled per turn.  Other threads wake it through an eventfd that the ring
 * reads (inbox: new connections, payload-thread hand-backs; stop); the
 * tick (threads.c: the next second, or a connection's timeout due before
 * it) is the wait's timeout; UDP sockets (-U) are one-shot polls on the
 * ring.  The main thread with -n 0 keeps libevent's loop (signals,
 * listeners, timers) and polls the ring's descriptor from it.
 *
 * A connection with a byte filter (c->filtered: TLS) has no receive: the
 * filter reads and writes the socket itself (sockio.c), on a multishot
 * POLLIN poll of the ring and, while a write would block, a one-shot
 * POLLOUT poll.  The backend's face is the transport table at the end of
 * this file (transport.h); its state lives in the connection's allocation
 * (struct uconn, conn_xpriv), the thread's (struct uring_worker, w->xw)
 * and the listener's mark of an armed accept (l->xl).
 *
 * This file: the probe, the rings' setup and teardown, the table.
 * uring_loop.c: the loop, the wake-ups, UDP polls and accepts.
 * uring_conn.c: a connection's receives, sends, polls and close.
 * uring_int.h: what they share.
 *
 * docs/threads-models.md, "The io_uring loop", has the rules and costs.
 */

#include "config.h"

#ifdef HAVE_LIBURING

#include "uring.h"
#include "uring_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/core/alloc.h"
#include "server/log.h"
#include "evloop.h"
#include "threads.h"
#include "transport.h"

bool uring_outer(const struct worker *w)
{
    return UW(w) != NULL && UW(w)->outer;
}

/* ---- setup ---------------------------------------------------------------- */

/* Can this kernel run the backend?  0, or -errno with what failed. */
static int uring_probe(const char **what)
{
    struct io_uring r;
    struct io_uring_buf_ring *br = NULL;
    int rc;

    *what = "io_uring_setup";
    rc = io_uring_queue_init(8, &r, 0);
    if (rc < 0)
        return rc;
    *what = "provided-buffer ring (kernel 5.19+)";
    br = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE,
              -1, 0);
    if (br == MAP_FAILED) {
        rc = -errno;
    } else {
        struct io_uring_buf_reg reg;

        memset(&reg, 0, sizeof(reg));
        reg.ring_addr = (uint64_t)(uintptr_t)br;
        reg.ring_entries = 8;
        reg.bgid = URING_BGID;
        rc = io_uring_register_buf_ring(&r, &reg, 0);
        munmap(br, 4096);
    }
    io_uring_queue_exit(&r);
    return rc;
}

/* Decide srv->io_uring from --io (and MDC_TEST_IO for auto): 0, or -1
 * with the reason logged (an explicit --io=uring that cannot run). */
static int uring_resolve(struct server *srv)
{
    const char *io = srv->opt.io != NULL ? srv->opt.io : "auto";
    const char *env = getenv("MDC_TEST_IO");
    const char *what = "";
    bool explicit_ = strcmp(io, "auto") != 0;
    int rc;

    srv->io_uring = false;
    srv->io_uring_fallback = false;
    /* the test suite's second pass (tools/test-all.sh): an unset --io
     * means this backend */
    if (!explicit_ && env != NULL && *env != '\0') {
        io = env;
        explicit_ = true;
    }
    if (strcmp(io, "auto") == 0)
        io = URING_DEFAULT_IS_URING ? "uring" : "epoll";
    if (strcmp(io, "uring") != 0)
        return 0;
    rc = uring_probe(&what);
    if (rc < 0) {
        if (explicit_) {
            log_error("--io=uring: io_uring is not available here: %s "
                      "failed: %s (kernel too old, disabled by sysctl "
                      "kernel.io_uring_disabled, or refused by a seccomp "
                      "filter); use --io=epoll",
                      what, strerror(-rc));
            return -1;
        }
        log_warn("io_uring is not available (%s failed: %s): using epoll",
                 what, strerror(-rc));
        return 0;
    }
    srv->io_uring = true;
    srv->io_uring_fallback = !explicit_;
    log_info("network I/O: io_uring");
    return 0;
}

/* Give worker w a ring.  outer: the ring's loop runs the thread
 * (uring_run); otherwise (the main thread) the ring is one event of its
 * libevent loop. */
static int uring_worker_setup(struct worker *w, bool outer)
{
    struct uring_worker *uw = mdc_calloc(1, sizeof(*uw));
    struct io_uring_params p;
    struct io_uring_buf_reg reg;
    const char *e = getenv("MDC_URING_NBUFS"); /* tests: exhaustion */
    /* tests: a ring size the kernel refuses for the network threads, after
     * the main thread's ring was made (the fallback to epoll) */
    const char *ent = getenv("MDC_URING_ENTRIES");
    bool small = !outer && w->srv->nnet > 0; /* no connection here */
    unsigned entries = outer && ent != NULL && atoi(ent) > 0
                           ? (unsigned)atoi(ent)
                       : small ? URING_MAIN_ENTRIES
                               : URING_ENTRIES;
    size_t brsz;
    unsigned gi;
    int rc;

    if (uw == NULL)
        return -1;
    uw->w = w;
    uw->outer = outer;
    uw->efd = -1;
    uw->g[0].n = URING_NBUFS;
    if (e != NULL && atoi(e) > 0 && atoi(e) <= 32768 &&
        (atoi(e) & (atoi(e) - 1)) == 0)
        uw->g[0].n = (unsigned)atoi(e);
    uw->g[0].sz = URING_BUFSZ;
    uw->zc_min = (size_t)w->srv->opt.uring_send_zc;
    uw->g[1].n = URING_BULK_NBUFS;
    uw->g[1].sz = URING_BULK_BUFSZ;
    memset(&p, 0, sizeof(p));
    /* A network thread's ring is submitted to by that thread only, and its
     * completions are run when it waits (DEFER_TASKRUN): it is created
     * here, disabled, and enabled by the thread itself (uring_run). */
    p.flags = outer ? IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                          IORING_SETUP_R_DISABLED
                    : 0;
    if (!small) { /* completions: URING_CQ_ENTRIES, twice a larger SQ */
        p.flags |= IORING_SETUP_CQSIZE;
        p.cq_entries = entries > URING_CQ_ENTRIES / 2 ? entries * 2
                                                      : URING_CQ_ENTRIES;
    }
    rc = io_uring_queue_init_params(entries, &uw->ring, &p);
    if (rc == -EINVAL && outer) { /* without the network thread's flags */
        unsigned cq = p.cq_entries;
        memset(&p, 0, sizeof(p));
        p.flags = IORING_SETUP_CQSIZE;
        p.cq_entries = cq;
        rc = io_uring_queue_init_params(entries, &uw->ring, &p);
    }
    if (rc < 0) {
        log_error("io_uring_setup: %s", strerror(-rc));
        mdc_free(uw);
        return -1;
    }
    w->xw = uw;
    uw->later = mdc_malloc(uw->ring.cq.ring_entries * sizeof(*uw->later));
    if (uw->later == NULL)
        return -1;
    for (gi = 0; gi < 2; gi++) {
        struct ugroup *g = &uw->g[gi];

        brsz = g->n * sizeof(struct io_uring_buf);
        brsz = (brsz + 4095) & ~(size_t)4095;
        g->br = mmap(NULL, brsz, PROT_READ | PROT_WRITE,
                     MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        /* pages of their own, not the allocator's: its huge pages
         * (alloc.c) would make the first receive fault in 2 MiB, both
         * groups at once, where the light group's 4 KiB buffers touch
         * only what the kernel fills */
        g->bufs = mmap(NULL, (size_t)g->n * g->sz, PROT_READ | PROT_WRITE,
                       MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
        if (g->bufs == MAP_FAILED)
            g->bufs = NULL;
        if (g->br == MAP_FAILED || g->bufs == NULL) {
            if (g->br == MAP_FAILED)
                g->br = NULL;
            log_error("io_uring: out of memory for receive buffers");
            return -1;
        }
        io_uring_buf_ring_init(g->br);
        memset(&reg, 0, sizeof(reg));
        reg.ring_addr = (uint64_t)(uintptr_t)g->br;
        reg.ring_entries = g->n;
        reg.bgid = (uint16_t)(URING_BGID + gi);
        rc = io_uring_register_buf_ring(&uw->ring, &reg, 0);
        if (rc < 0) {
            log_error("io_uring: cannot register the buffer ring: %s",
                      strerror(-rc));
            return -1;
        }
        g->live = 0;
        uw_buf_grow(uw, gi);
    }
    if (outer) {
        uw->efd = eventfd(0, EFD_CLOEXEC);
        if (uw->efd < 0) {
            log_error("eventfd: %s", strerror(errno));
            return -1;
        }
        /* the ring's wait timeout is the tick */
        if (w->loop != NULL)
            evloop_tick_off(w);
    } else {
        uw->ev = evloop_fd_new(w, uw->ring.ring_fd, uw_ev_cb, uw);
        if (uw->ev == NULL) {
            log_error("io_uring: cannot watch the ring");
            return -1;
        }
    }
    return 0;
}

static void uw_free_zombies(struct uring_worker *uw)
{
    while (uw->zombies != NULL) {
        struct conn *c = uw->zombies;

        uw->zombies = UC(c)->z_next;
        UC(c)->ops = 0;
        conn_free(c);
    }
}

static void uring_worker_teardown(struct worker *w)
{
    struct uring_worker *uw = UW(w);
    unsigned i;

    if (uw == NULL)
        return;
    evloop_ev_free(uw->ev);
    /* exiting the ring cancels and waits for whatever is in flight; only
     * then may the buffers and the records of torn-down connections go */
    if (uw->ring.ring_fd >= 0)
        io_uring_queue_exit(&uw->ring);
    uw->exiting = true;
    uw_free_zombies(uw);
    if (uw->efd >= 0)
        close(uw->efd);
    for (i = 0; i < 2; i++) {
        struct ugroup *g = &uw->g[i];

        if (g->br != NULL) {
            size_t brsz = g->n * sizeof(struct io_uring_buf);
            munmap(g->br, (brsz + 4095) & ~(size_t)4095);
        }
        if (g->bufs != NULL)
            munmap(g->bufs, (size_t)g->n * g->sz);
    }
    while (uw->niovfree > 0)
        mdc_free(uw->iovfree[--uw->niovfree]);
    mdc_free(uw->later);
    mdc_free(uw);
    w->xw = NULL;
}

/* More of group gi's buffers into its ring (URING_BUF_STEP). */
void uw_buf_grow(struct uring_worker *uw, unsigned gi)
{
    struct ugroup *g = &uw->g[gi];
    unsigned k = g->n - g->live;

    if (uw->exiting || k == 0)
        return;
    if (k > (gi == 0 ? URING_BUF_STEP : URING_BULK_STEP))
        k = gi == 0 ? URING_BUF_STEP : URING_BULK_STEP;
    for (unsigned i = 0; i < k; i++)
        io_uring_buf_ring_add(g->br, g->bufs + (size_t)(g->live + i) * g->sz,
                              g->sz, (unsigned short)(g->live + i),
                              io_uring_buf_ring_mask(g->n), (int)i);
    io_uring_buf_ring_advance(g->br, (int)k);
    g->live += k;
    __atomic_store_n(&uw->w->pool.rbuf_bytes,
                     __atomic_load_n(&uw->w->pool.rbuf_bytes, __ATOMIC_RELAXED) +
                         (uint64_t)k * g->sz,
                     __ATOMIC_RELAXED);
}

/* ---- the transport table (transport.h) ----------------------------------- */

/* A network thread runs its ring's loop; the main thread its libevent
 * loop, which polls the ring (evloop.h). */
static int ur_worker_setup(struct worker *w)
{
    return uring_worker_setup(w, w->role == ROLE_NET);
}

static void ur_wake(struct worker *w)
{
    if (uring_outer(w))
        uring_wake(w); /* the ring's loop does not run libevent's */
    else
        evloop_wake(w);
}

static void ur_stop(struct worker *w)
{
    if (uring_outer(w)) {
        atomic_store(&UW(w)->stop_req, true);
        uring_wake(w);
    } else {
        evloop_stop(w);
    }
}

static void ur_run(struct worker *w)
{
    if (uring_outer(w))
        uring_run(w);
    else
        evloop_run(w);
}

/* the ring's loop ends by itself once a stopping thread has no
 * connection; the main thread's is libevent's */
static void ur_done(struct worker *w)
{
    evloop_exit(w);
}

/* A listener's accept state is the mark uring_accept_arm leaves in it. */
static void ur_accept_close(struct server *srv, size_t i)
{
    srv->listeners[i].xl = NULL;
}

bool uring_accept_armed(const struct server *srv, size_t i)
{
    return srv->listeners[i].xl != NULL;
}

const struct transport transport_uring = {
    .name = "io_uring",
    .conn_priv = sizeof(struct uconn),
    .adopt = ur_adopt,
    .start = ur_start,
    .read = ur_read,
    .flush = ur_flush,
    .requeue = ur_requeue,
    .close = ur_close,
    .release = ur_release,
    .returned = ur_returned,
    .peer_gone = ur_peer_gone,
    .tick = ur_tick,
    .in_waiting = ur_in_waiting,
    .worker_setup = ur_worker_setup,
    .worker_teardown = uring_worker_teardown,
    .wake = ur_wake,
    .stop = ur_stop,
    .run = ur_run,
    .done = ur_done,
    .accept_on = uring_accept_arm,
    .accept_off = uring_accept_cancel,
    .accept_close = ur_accept_close,
};

int transport_resolve(struct server *srv)
{
    if (uring_resolve(srv) < 0)
        return -1;
    srv->xp = srv->io_uring ? &transport_uring : &transport_epoll;
    return 0;
}

#else /* without liburing, epoll (options.c refuses --io=uring) */

#include "transport.h"

int transport_resolve(struct server *srv)
{
    srv->io_uring = false;
    srv->io_uring_fallback = false;
    srv->xp = &transport_epoll;
    return 0;
}
#endif

