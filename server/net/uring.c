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
 * the file (transport.h); its state lives in the connection's allocation
 * (struct uconn, conn_xpriv).
 *
 * docs/threads-models.md, "The io_uring loop", has the rules and costs.
 */
#include "config.h"

#ifdef HAVE_LIBURING

#include "uring.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#include <event2/event.h>
#include <liburing.h>

#include "server/core/alloc.h"
#include "server/log.h"
#include "conn.h"
#include "net.h"
#include "sockio.h"
#include "threads.h"
#include "transport.h"
#include "udp.h"

/* The backend --io=auto picks: io_uring, measured cheaper per request
 * (docs/performance-history.md, "The io_uring backend"); auto falls back
 * to epoll (with a warning) where the kernel refuses io_uring or a ring
 * cannot be set up.  0 makes auto mean epoll. */
#define URING_DEFAULT_IS_URING 1

#define URING_ENTRIES 512       /* submission queue; completions 2x */
#define URING_BGID 1            /* provided-buffer groups: 1 and 2 */
#define URING_NBUFS 256         /* light group: buffers per thread ... */
#define URING_BUFSZ 4096u       /* ... of this size (1 MiB per thread) */
#define URING_BULK_NBUFS 64     /* bulk group: buffers per thread ... */
#define URING_BULK_BUFSZ 16384u /* ... of this size (1 MiB per thread) */
/* A group's ring starts with this many of its buffers (light, bulk) and
 * takes as many more each time a receive finds it empty (ENOBUFS), up to
 * all of them: the kernel takes buffers in ring order, so every buffer
 * given to the ring is soon written and resident.  With all of them from
 * the start, a load of 4 connections made the 8 MiB of -n 4 resident
 * (the overfill load and the per-size table, docs/performance.md), which
 * only as many connections receiving at once need.  64 light buffers:
 * 64 connections' requests are still read in one turn; 8 bulk ones to
 * begin with, more as bulk senders run them dry. */
#define URING_BUF_STEP 64u
#define URING_BULK_STEP 8u
/* A connection that receives this much in one loop turn moves to the bulk
 * group, and back after URING_BULK_IDLE seconds without a turn of
 * URING_BULK_KEEP bytes (idle, or small requests only): bulk
 * senders (long values, floods) then share their own buffers, and the
 * light group stays free for the requests of everyone else (a multishot
 * receive that finds its group empty ends with ENOBUFS and waits a turn;
 * the kernel lets one connection take up to 32 buffers per pass). */
#define URING_BULK_AT (64u * 1024)
#define URING_BULK_IDLE 2
/* A turn in which a bulk connection receives this much (one bulk buffer
 * filled) keeps it bulk: a flooder that shares the 64 bulk buffers with
 * many others gets less than URING_BULK_AT per turn, and must not swing
 * back to the light group and take 32 of its buffers every 2 s. */
#define URING_BULK_KEEP URING_BULK_BUFSZ
#define URING_IOV_MAX 256       /* segments per sendmsg */
#define URING_IOV_POOL 64       /* free iovec arrays kept per thread */
#define URING_IN_MAX (1u << 20) /* unconsumed input that stops receiving */
#define URING_STASH_MAX 64      /* buffers held for a connection in flight */
/* Bytes one connection may receive in one loop turn before its multishot
 * receive is stopped until the next turn: the epoll path's per-turn read
 * budget (conn.c), so a connection that floods the server cannot take
 * every provided buffer and every turn from the others. */
#define URING_TURN_BYTES (256u * 1024)
#define URING_UDP_MAX 64

enum {
    UD_IGNORE = 0, /* cancellations */
    UD_RECV = 1,
    UD_SEND = 2,
    UD_WAKE = 3,
    UD_UDP = 4,
    UD_ACCEPT = 5, /* listener index << 3 */
    UD_RECV_BULK = 6, /* a receive on the bulk group */
    UD_POLL = 7,      /* a filtered connection's readiness poll; with
                         UD_POLL_WR (struct conn is 16-byte aligned):
                         the one-shot write poll */
};
#define UD_TYPE(u) ((unsigned)((u) & 7u))
#define UD_PTR(u) ((void *)(uintptr_t)((u) & ~(uint64_t)7u))
#define UD_POLL_WR 8u

/* A buffer received while a payload thread owns the input. */
struct ustash {
    uint32_t id;  /* group << 16 | buffer id */
    uint32_t len;
};

/* A connection's ring state: the backend-private part of struct conn
 * (conn_xpriv), zeroed with it; 80 bytes, so that with the connection (304)
 * it makes one 384-byte allocation (docs/performance.md, "Memory per
 * connection"). */
struct uconn {
    unsigned ops;         /* operations in flight that reference c */
    int zc_res;           /* the zero-copy send's result */
    uint32_t turn;        /* the loop turn turn_bytes counts in (low bits) */
    uint32_t turn_bytes;  /* bytes received in that turn */
    uint32_t last_bulk;   /* w->now of the last turn with URING_BULK_AT */
    uint16_t nstash, stashcap; /* stash entries used, allocated */
    bool recv_armed;      /* the multishot receive (or, filtered, the
                             multishot read poll) is active */
    bool wr_polled;       /* filtered: the one-shot write poll is armed */
    bool recv_cancel;     /* it is being cancelled (too much input) */
    bool zombie;          /* torn down: freed when ops reaches 0 */
    bool in_rq, in_ra;    /* on the requeue / rearm list */
    bool bulk;            /* receives on the bulk group */
    bool recv_bulk;       /* the armed receive is on the bulk group */
    bool zc;              /* the send in flight is a zero-copy one ... */
    bool zc_wait;         /* ... whose notification is still to come */
    bool no_zc;           /* the socket refused a zero-copy send */
    struct conn *rq_next, *ra_next, *z_next;
    struct usend *snd;    /* lent for a sendmsg in flight */
    struct ustash *stash; /* buffers received while a payload thread owns
                             the input */
};

/* An idle connection is this one allocation (the receive's buffers are
 * the thread's, a send's iovec array is lent): keep it in jemalloc's
 * 384-byte class, under memcached's ~640 bytes a connection
 * (docs/performance.md, "Memory per connection"). */
_Static_assert(sizeof(struct conn) + sizeof(struct uconn) <= 384,
               "an io_uring connection fits in 384 bytes");

/* User data of c's armed receive (or read poll). */
static uint64_t uc_recv_ud(const struct conn *c);

static inline struct uconn *UC(const struct conn *c)
{
    return conn_xpriv((struct conn *)c);
}

static uint64_t uc_recv_ud(const struct conn *c)
{
    return (uint64_t)(uintptr_t)c |
           (c->filtered ? UD_POLL : UC(c)->recv_bulk ? UD_RECV_BULK : UD_RECV);
}

/* What a sendmsg in flight needs to stay put (4 KiB): lent by the thread
 * for the send only, so an idle connection holds none. */
struct usend {
    struct msghdr mh;
    struct iovec iov[URING_IOV_MAX];
};

/* A provided-buffer group: 0 light, 1 bulk (buffer group id g + 1). */
struct ugroup {
    struct io_uring_buf_ring *br;
    uint8_t *bufs;
    unsigned n, sz;
    unsigned live; /* buffers given to the ring so far: ids 0 .. live-1 */
    unsigned held; /* buffers held in stashes */
};

struct uring_worker {
    struct io_uring ring;
    struct worker *w;
    bool outer;            /* runs the thread (uring_run) */
    bool exiting;          /* the ring is gone: buffers are not returned */
    struct ugroup g[2];
    int efd;               /* wake-ups from other threads */
    uint64_t efd_val;
    struct conn *rq_head, *rq_tail; /* connections to drive next turn */
    unsigned rq_n;
    uint64_t turn;         /* loop turns (one reap each) */
    bool deferred;         /* a receive waits for the next turn: no sleep */
    struct conn *ra;       /* connections whose receive needs arming */
    struct conn *zombies;  /* torn down, operations still in flight */
    struct io_uring_cqe *later; /* bulk receive completions of a reap */
    unsigned nlater;
    size_t zc_min;         /* --uring-send-zc: 0 = off */
    /* iovec arrays lent to connections for a sendmsg in flight, so an
     * idle connection holds none (4 KiB each) */
    struct usend *iovfree[URING_IOV_POOL];
    unsigned niovfree;
    uint64_t zc_sends, zc_notifs;
    /* main thread (-n 0): the ring as a libevent event */
    struct event *ev;
    bool kicked;
    /* UDP sockets of this thread (-U), polled one-shot */
    int udp_fd[URING_UDP_MAX];
    bool udp_armed[URING_UDP_MAX];
    unsigned nudp;
    bool udp_due;
};

static void uw_buf_grow(struct uring_worker *uw, unsigned gi);

static void uw_kick(struct uring_worker *uw);
static void uw_zombie_done(struct uring_worker *uw, struct conn *c);

bool uring_outer(const struct worker *w)
{
    return w->uring != NULL && w->uring->outer;
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

int uring_resolve(struct server *srv)
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

static void uw_ev_cb(evutil_socket_t fd, short what, void *arg);

int uring_worker_setup(struct worker *w, bool outer)
{
    struct uring_worker *uw = mdc_calloc(1, sizeof(*uw));
    struct io_uring_params p;
    struct io_uring_buf_reg reg;
    const char *e = getenv("MDC_URING_NBUFS"); /* tests: exhaustion */
    /* tests: a ring size the kernel refuses for the network threads, after
     * the main thread's ring was made (the fallback to epoll) */
    const char *ent = getenv("MDC_URING_ENTRIES");
    unsigned entries = outer && ent != NULL && atoi(ent) > 0
                           ? (unsigned)atoi(ent)
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
    rc = io_uring_queue_init_params(entries, &uw->ring, &p);
    if (rc == -EINVAL && outer) {
        memset(&p, 0, sizeof(p));
        rc = io_uring_queue_init_params(entries, &uw->ring, &p);
    }
    if (rc < 0) {
        log_error("io_uring_setup: %s", strerror(-rc));
        mdc_free(uw);
        return -1;
    }
    w->uring = uw;
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
        if (w->ev_tick != NULL)
            event_del(w->ev_tick);
    } else {
        uw->ev = event_new(w->base, uw->ring.ring_fd, EV_READ | EV_PERSIST,
                           uw_ev_cb, uw);
        if (uw->ev == NULL || event_add(uw->ev, NULL) < 0) {
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

void uring_worker_teardown(struct worker *w)
{
    struct uring_worker *uw = w->uring;
    unsigned i;

    if (uw == NULL)
        return;
    if (uw->ev != NULL)
        event_free(uw->ev);
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
    w->uring = NULL;
}

/* ---- submissions ------------------------------------------------------------ */

static struct io_uring_sqe *uw_sqe(struct uring_worker *uw)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&uw->ring);

    if (sqe == NULL) {
        /* the submission queue is full: send what is there now */
        io_uring_submit(&uw->ring);
        sqe = io_uring_get_sqe(&uw->ring);
    }
    if (!uw->outer)
        uw_kick(uw);
    return sqe;
}

static void uw_buf_put(struct uring_worker *uw, unsigned gi, unsigned bid)
{
    struct ugroup *g = &uw->g[gi];

    if (uw->exiting)
        return;
    io_uring_buf_ring_add(g->br, g->bufs + (size_t)bid * g->sz, g->sz,
                          (unsigned short)bid, io_uring_buf_ring_mask(g->n),
                          0);
    io_uring_buf_ring_advance(g->br, 1);
}

/* More of group gi's buffers into its ring (URING_BUF_STEP). */
static void uw_buf_grow(struct uring_worker *uw, unsigned gi)
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

static int uc_arm_recv(struct uring_worker *uw, struct conn *c)
{
    struct io_uring_sqe *sqe = uw_sqe(uw);

    if (sqe == NULL)
        return -1;
    if (c->filtered) {
        /* the filter (TLS) reads the socket itself when it is ready:
         * a multishot poll, one completion per new readiness (an edge,
         * as with EPOLLET) */
        io_uring_prep_poll_multishot(sqe, c->fd, POLLIN | POLLRDHUP);
        io_uring_sqe_set_data64(sqe, uc_recv_ud(c));
        UC(c)->recv_armed = true;
        UC(c)->ops++;
        return 0;
    }
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = (uint16_t)(URING_BGID + (UC(c)->bulk ? 1 : 0));
    UC(c)->recv_bulk = UC(c)->bulk;
    io_uring_sqe_set_data64(sqe, uc_recv_ud(c));
    UC(c)->recv_armed = true;
    UC(c)->ops++;
    return 0;
}

static void uc_cancel_recv(struct uring_worker *uw, struct conn *c)
{
    struct io_uring_sqe *sqe;

    if (!UC(c)->recv_armed || UC(c)->recv_cancel)
        return;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return;
    io_uring_prep_cancel64(sqe, uc_recv_ud(c), 0);
    io_uring_sqe_set_data64(sqe, UD_IGNORE);
    UC(c)->recv_cancel = true;
}

static void uw_want_rearm(struct uring_worker *uw, struct conn *c)
{
    if (UC(c)->in_ra)
        return;
    UC(c)->in_ra = true;
    UC(c)->ra_next = uw->ra;
    uw->ra = c;
    if (!uw->outer)
        uw_kick(uw);
}

static void uw_arm_wake(struct uring_worker *uw)
{
    struct io_uring_sqe *sqe = uw_sqe(uw);

    if (sqe == NULL)
        return;
    io_uring_prep_read(sqe, uw->efd, &uw->efd_val, sizeof(uw->efd_val), 0);
    io_uring_sqe_set_data64(sqe, UD_WAKE);
}

static void uw_arm_udp(struct uring_worker *uw, unsigned i)
{
    struct io_uring_sqe *sqe;

    if (uw->udp_armed[i])
        return;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return;
    io_uring_prep_poll_add(sqe, uw->udp_fd[i], POLLIN);
    io_uring_sqe_set_data64(sqe, ((uint64_t)i << 3) | UD_UDP);
    uw->udp_armed[i] = true;
}

/* ---- accept (main thread) ---------------------------------------------- */

static int uring_accept_arm(struct server *srv, size_t i)
{
    struct uring_worker *uw = srv->workers[0].uring;
    struct listener *l = &srv->listeners[i];
    struct io_uring_sqe *sqe;

    if (l->ring_armed)
        return 0;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return -1;
    io_uring_prep_multishot_accept(sqe, l->fd, NULL, NULL,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC);
    /* the index, not a pointer: the listener array may be gone by the
     * time a late completion arrives (net_accepted checks it) */
    io_uring_sqe_set_data64(sqe, ((uint64_t)i << 3) | UD_ACCEPT);
    l->ring_armed = true;
    return 0;
}

static void uring_accept_cancel(struct server *srv, size_t i)
{
    struct uring_worker *uw = srv->workers[0].uring;
    struct listener *l = &srv->listeners[i];
    struct io_uring_sqe *sqe;

    if (!l->ring_armed || l->fd < 0)
        return;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return;
    io_uring_prep_cancel64(sqe, ((uint64_t)i << 3) | UD_ACCEPT, 0);
    io_uring_sqe_set_data64(sqe, UD_IGNORE);
    io_uring_submit(&uw->ring); /* before the listener may be closed */
    l->ring_armed = false;
}

static void uw_on_accept(struct uring_worker *uw, size_t i,
                         const struct io_uring_cqe *cqe)
{
    struct server *srv = uw->w->srv;
    bool more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    int fd = cqe->res;

    /* a cancelled one was marked off by uring_accept_cancel, and another
     * may be armed since */
    if (!more && cqe->res != -ECANCELED && i < srv->nlisteners &&
        srv->listeners != NULL)
        srv->listeners[i].ring_armed = false;
#ifdef MDC_TSAN
    /* ThreadSanitizer follows descriptors through the calls it intercepts
     * and never sees one the ring's accept made: a number another thread
     * used and closed before (the metrics thread's) would look shared, and
     * its close by the network thread a race.  A dup() shows it the new
     * descriptor, made here; the ring's is closed with the raw system
     * call, which it does not follow either.  Out of descriptors (the
     * dup needs one more), the ring's own is kept. */
    if (fd >= 0) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);

        if (nfd >= 0) {
            (void)syscall(SYS_close, fd);
            fd = nfd;
        }
    }
#endif
    net_accepted(srv, i, fd);
    /* the multishot accept ended (an error, or the kernel's choice): on
     * again while accepting, unless net_accepted paused accepting */
    if (!more && i < srv->nlisteners && srv->listeners != NULL &&
        __atomic_load_n(&srv->accepting, __ATOMIC_RELAXED) &&
        cqe->res != -ECANCELED)
        (void)uring_accept_arm(srv, i);
}

/* ---- connections -------------------------------------------------------- */

static int ur_adopt(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;

    /* a blocking socket: a send the socket cannot take yet waits in the
     * ring (poll-armed) instead of failing with EAGAIN; a filtered one
     * (TLS) is read and written when ready, and stays non-blocking */
    if (!c->filtered)
        (void)fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
    if (uc_arm_recv(uw, c) < 0)
        return -1;
    c->wr_ready = true;
    return 0;
}

/* ---- filtered connections (TLS): readiness polls ------------------------ */

/* The filter's write would block, or its read must write first: a
 * one-shot poll for room in the socket. */
static int uc_want_wr(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;
    struct uconn *uc = UC(c);
    struct io_uring_sqe *sqe;

    if (uc->wr_polled)
        return 0;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return -1;
    io_uring_prep_poll_add(sqe, c->fd, POLLOUT);
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | UD_POLL_WR |
                                     UD_POLL);
    uc->wr_polled = true;
    uc->ops++;
    return 0;
}

static void ur_drive(struct conn *c);

/* A readiness poll of a filtered connection completed. */
static void uw_on_poll(struct uring_worker *uw, uint64_t ud,
                       const struct io_uring_cqe *cqe)
{
    struct conn *c = (void *)(uintptr_t)(ud & ~(uint64_t)15u);
    struct uconn *uc = UC(c);
    bool wr = (ud & UD_POLL_WR) != 0;
    int res = cqe->res;
    short what = 0;

    if (wr) {
        uc->wr_polled = false;
        uc->ops--;
    } else if (!(cqe->flags & IORING_CQE_F_MORE)) {
        uc->recv_armed = false;
        uc->ops--;
    }
    if (uc->zombie) {
        uw_zombie_done(uw, c);
        return;
    }
    if (res < 0) {
        /* cancelled, or the kernel ended the multishot poll: armed again
         * (the next pass); a write poll is armed again by the next write
         * that would block */
        if (!wr)
            uw_want_rearm(uw, c);
        return;
    }
    /* as libevent reports them: a hang-up or an error is both
     * directions, a half-close is EV_CLOSED */
    if (res & (POLLIN | POLLHUP | POLLERR))
        what |= CONN_EV_READ;
    if (res & POLLRDHUP)
        what |= CONN_EV_CLOSED;
    if (res & (POLLOUT | POLLHUP | POLLERR))
        what |= CONN_EV_WRITE;
    if (!wr && !uc->recv_armed)
        uw_want_rearm(uw, c);
    if (conn_io_ready(c, what))
        ur_drive(c); /* may free c */
}

static int ur_start(struct conn *c)
{
    int h = sockio_start(c);

    if (h == SOCKIO_WAIT_WR)
        return uc_want_wr(c) < 0 ? -1 : 0;
    return h;
}

/* Read what the socket has: only a filtered connection is read so (the
 * others' bytes come with their receive's completions, uw_on_recv). */
static int ur_read(struct conn *c)
{
    int r;

    if (!c->filtered) {
        c->rd_ready = false;
        return 0;
    }
    r = sockio_read(c);
    if (r == SOCKIO_WAIT_WR)
        return uc_want_wr(c) < 0 ? -1 : 0;
    return r;
}

static bool ur_peer_gone(struct conn *c)
{
    /* a receive sees the EOF or the reset itself */
    return c->filtered && sockio_peer_gone(c);
}

static int uc_send(struct conn *c);

static int ur_flush(struct conn *c)
{
    int r;

    if (!c->filtered)
        return uc_send(c);
    r = sockio_flush(c);
    if (r == 1)
        return uc_want_wr(c);
    return r;
}

/* Run c's request loop, and send what it leaves when it asks (conn_run):
 * the send is started here, after the loop returned, never from inside
 * it, so the loop never re-enters this backend while it is handling c's
 * completion (conn.h, conn_run).  May free c. */
static void ur_drive(struct conn *c)
{
    struct conn_turn t = {0};
    int r;

    while ((r = conn_run(c, &t)) > 0) {
        if (r == CONN_RUN_READ) {
            t.rd = ur_read(c);
        } else if (ur_flush(c) < 0) {
            conn_teardown(c);
            return;
        }
    }
}

/* ---- plain connections: sends from the output queue ------------------- */

static int uc_send(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;
    struct uconn *uc = UC(c);
    struct io_uring_sqe *sqe;
    size_t i, k;
    bool zc;

    if (c->wr_busy || c->seghead == c->nseg)
        return 0;
    /* --uring-send-zc: a reply of that size goes out of the records'
     * pages themselves; they are released on the notification that the
     * kernel is done with them (uw_on_send), not on the send's completion */
    zc = uw->zc_min > 0 && !uc->no_zc && c->opending >= uw->zc_min;
    if (c->nseg - c->seghead > 1 && uc->snd == NULL) {
        uc->snd = uw->niovfree > 0 ? uw->iovfree[--uw->niovfree]
                                   : mdc_malloc(sizeof(*uc->snd));
        if (uc->snd == NULL)
            return -1;
        conn_backend_held(c->owner, 1);
    }
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return -1;
    if (c->nseg - c->seghead == 1) {
        const struct oseg *s = &c->segs[c->seghead];
        const uint8_t *p = s->ptr != NULL ? s->ptr : c->obuf + s->off;

        if (zc)
            io_uring_prep_send_zc(sqe, c->fd, p + c->headsent,
                                  s->len - c->headsent, MSG_NOSIGNAL, 0);
        else
            io_uring_prep_send(sqe, c->fd, p + c->headsent,
                               s->len - c->headsent, MSG_NOSIGNAL);
    } else {
        for (i = c->seghead, k = 0; i < c->nseg && k < URING_IOV_MAX;
             i++, k++) {
            const struct oseg *s = &c->segs[i];
            const uint8_t *p = s->ptr != NULL ? s->ptr : c->obuf + s->off;
            size_t skip = i == c->seghead ? c->headsent : 0;

            uc->snd->iov[k].iov_base = (void *)(p + skip);
            uc->snd->iov[k].iov_len = s->len - skip;
        }
        memset(&uc->snd->mh, 0, sizeof(uc->snd->mh));
        uc->snd->mh.msg_iov = uc->snd->iov;
        uc->snd->mh.msg_iovlen = k;
        if (zc)
            io_uring_prep_sendmsg_zc(sqe, c->fd, &uc->snd->mh, MSG_NOSIGNAL);
        else
            io_uring_prep_sendmsg(sqe, c->fd, &uc->snd->mh, MSG_NOSIGNAL);
    }
    uc->zc = zc;
    uw->zc_sends += zc;
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | UD_SEND);
    uc->ops++;
    c->wr_busy = true;
    c->wr_ready = false;
    if (c->blocked_since == 0)
        c->blocked_since = c->owner->now;
    return 0;
}

static void ur_requeue(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;
    struct uconn *uc = UC(c);

    if (uc->in_rq)
        return;
    uc->in_rq = true;
    uc->rq_next = NULL;
    if (uw->rq_tail != NULL)
        UC(uw->rq_tail)->rq_next = c;
    else
        uw->rq_head = c;
    uw->rq_tail = c;
    uw->rq_n++;
    if (!uw->outer)
        uw_kick(uw);
}

static void uw_unlink(struct uring_worker *uw, struct conn *c)
{
    struct uconn *uc = UC(c);
    struct conn **pp, *prev = NULL;

    if (uc->in_rq) {
        for (pp = &uw->rq_head; *pp != NULL; prev = *pp, pp = &UC(*pp)->rq_next)
            if (*pp == c) {
                *pp = uc->rq_next;
                if (uw->rq_tail == c)
                    uw->rq_tail = prev;
                uw->rq_n--;
                break;
            }
        uc->in_rq = false;
    }
    if (uc->in_ra) {
        for (pp = &uw->ra; *pp != NULL; pp = &UC(*pp)->ra_next)
            if (*pp == c) {
                *pp = uc->ra_next;
                break;
            }
        uc->in_ra = false;
    }
}

static bool ur_close(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;
    struct uconn *uc = UC(c);
    struct io_uring_sqe *sqe;

    uw_unlink(uw, c);
    if (uc->ops == 0 || uw->exiting)
        return false;
    uc->zombie = true;
    uc->z_next = uw->zombies;
    uw->zombies = c;
    if (uc->zc) {
        /* A zero-copy send: the socket's queue references the records'
         * pages until it is purged, and a peer that reads nothing would
         * keep them (and c) for ever.  Cancel by user data, and close now
         * with a reset (the ring's own references keep the socket until
         * its operations end; then its queue goes, and the notification
         * comes). */
        struct linger lg = {1, 0};

        if (uc->recv_armed && (sqe = uw_sqe(uw)) != NULL) {
            io_uring_prep_cancel64(sqe, uc_recv_ud(c), 0);
            io_uring_sqe_set_data64(sqe, UD_IGNORE);
        }
        if (!uc->zc_wait && (sqe = uw_sqe(uw)) != NULL) {
            io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)c | UD_SEND, 0);
            io_uring_sqe_set_data64(sqe, UD_IGNORE);
        }
        (void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(c->fd);
        c->fd = -1;
        return true;
    }
    /* end the receive and any send; their completions free c */
    sqe = uw_sqe(uw);
    if (sqe != NULL) {
        io_uring_prep_cancel_fd(sqe, c->fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, UD_IGNORE);
    } else {
        (void)shutdown(c->fd, SHUT_RDWR);
    }
    return true;
}

/* The send is done: its msghdr and iovec array go back to the thread. */
static void uc_iov_give(struct uring_worker *uw, struct conn *c)
{
    struct uconn *uc = UC(c);

    if (uc->snd == NULL)
        return;
    conn_backend_held(c->owner, -1);
    if (!uw->exiting && uw->niovfree < URING_IOV_POOL)
        uw->iovfree[uw->niovfree++] = uc->snd;
    else
        mdc_free(uc->snd);
    uc->snd = NULL;
}

static void ur_release(struct conn *c)
{
    struct uconn *uc = UC(c);
    struct uring_worker *uw;
    unsigned i;

    sockio_release(c); /* the filter's state (a close_notify) */
    uw = c->owner->uring;
    if (uw != NULL) {
        for (i = 0; i < uc->nstash; i++) {
            uw_buf_put(uw, uc->stash[i].id >> 16, uc->stash[i].id & 0xffff);
            uw->g[uc->stash[i].id >> 16].held--;
        }
    }
    if (uc->stash != NULL)
        conn_backend_held(c->owner, -1);
    mdc_free(uc->stash);
    if (uw != NULL)
        uc_iov_give(uw, c);
    if (uc->snd != NULL) /* the ring is gone */
        conn_backend_held(c->owner, -1);
    mdc_free(uc->snd);
    uc->snd = NULL;
    uc->stash = NULL;
    uc->nstash = uc->stashcap = 0;
}

/* A zombie's operation completed: free it with the last one. */
static void uw_zombie_done(struct uring_worker *uw, struct conn *c)
{
    struct conn **pp;

    if (UC(c)->ops > 0)
        return;
    for (pp = &uw->zombies; *pp != NULL; pp = &UC(*pp)->z_next)
        if (*pp == c) {
            *pp = UC(c)->z_next;
            break;
        }
    conn_free(c);
}

static int uc_stash(struct uring_worker *uw, struct conn *c, unsigned gi,
                    unsigned bid, uint32_t len)
{
    struct uconn *uc = UC(c);

    if (uc->nstash == uc->stashcap) {
        unsigned cap = uc->stashcap ? uc->stashcap * 2u : 8u;
        struct ustash *st;

        if (cap > UINT16_MAX)
            return -1;
        st = mdc_realloc(uc->stash, cap * sizeof(*st));
        if (st == NULL)
            return -1;
        if (uc->stash == NULL)
            conn_backend_held(c->owner, 1);
        uc->stash = st;
        uc->stashcap = (uint16_t)cap;
    }
    uc->stash[uc->nstash].id = gi << 16 | bid;
    uc->stash[uc->nstash].len = len;
    uc->nstash++;
    uw->g[gi].held++;
    if (uc->nstash >= URING_STASH_MAX)
        uc_cancel_recv(uw, c);
    return 0;
}

static void ur_returned(struct conn *c)
{
    struct uring_worker *uw = c->owner->uring;
    struct uconn *uc = UC(c);
    unsigned i;
    int rc = 0;

    for (i = 0; i < uc->nstash; i++) {
        struct ugroup *g = &uw->g[uc->stash[i].id >> 16];
        unsigned bid = uc->stash[i].id & 0xffff;

        if (rc == 0)
            rc = conn_in_append(c, g->bufs + (size_t)bid * g->sz,
                                uc->stash[i].len);
        uw_buf_put(uw, uc->stash[i].id >> 16, bid);
        g->held--;
    }
    /* the stash goes with its last buffer: an idle connection holds none */
    if (uc->stash != NULL) {
        mdc_free(uc->stash);
        uc->stash = NULL;
        uc->stashcap = 0;
        conn_backend_held(c->owner, -1);
    }
    uc->nstash = 0;
    if (rc < 0)
        c->dead = true;
    if (!uc->recv_armed)
        uw_want_rearm(uw, c);
}

bool uring_conn_ringed(const struct conn *c)
{
    return c->srv->xp == &transport_uring && c->adopted;
}

bool uring_conn_bulk(const struct conn *c)
{
    return uring_conn_ringed(c) && UC(c)->bulk;
}

bool uring_conn_zc_wait(const struct conn *c)
{
    return uring_conn_ringed(c) && UC(c)->zc_wait;
}

void uring_zc_counts(const struct worker *w, uint64_t *sends,
                     uint64_t *notifs)
{
    *sends = w->uring != NULL ? w->uring->zc_sends : 0;
    *notifs = w->uring != NULL ? w->uring->zc_notifs : 0;
}

static bool uc_backlogged(const struct conn *c)
{
    size_t avail = c->ilen - c->ioff;

    /* before login: no receive while a reply is in flight (nothing is
     * parsed meanwhile) or the output is at its bound, nor with half the
     * input bound waiting; what the kernel hands over before the
     * cancellation lands must fit, or the connection is closed
     * (conn_in_room) */
    if (!c->authed && (c->wr_busy || conn_out_full(c) ||
                       avail >= CONN_PREAUTH_IN / 2))
        return true;
    return avail > URING_IN_MAX && avail > c->need;
}

/* c had its share of this turn's input (URING_TURN_BYTES). */
static bool uc_over_turn(const struct uring_worker *uw, const struct conn *c)
{
    return UC(c)->turn == (uint32_t)uw->turn &&
           UC(c)->turn_bytes >= URING_TURN_BYTES;
}

static void uw_on_recv(struct uring_worker *uw, struct conn *c,
                       const struct io_uring_cqe *cqe, unsigned gi)
{
    struct uconn *uc = UC(c);
    struct ugroup *g = &uw->g[gi];
    int res = cqe->res;
    bool buf = (cqe->flags & IORING_CQE_F_BUFFER) != 0;
    unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;

    if (!(cqe->flags & IORING_CQE_F_MORE)) {
        uc->recv_armed = false;
        uc->recv_cancel = false;
        uc->ops--;
    }
    if (uc->zombie) {
        if (buf)
            uw_buf_put(uw, gi, bid);
        uw_zombie_done(uw, c);
        return;
    }
    if (res > 0 && buf) {
        if (uc->turn != (uint32_t)uw->turn) {
            uc->turn = (uint32_t)uw->turn;
            uc->turn_bytes = 0;
        }
        uc->turn_bytes += (uint32_t)res;
        /* bulk after a turn's worth, light after URING_BULK_IDLE seconds
         * without one (idle, or small requests only: a client that never
         * pauses for 2 s must not stay bulk for ever); the receive runs on
         * the new group from the next arming.  Input held while a payload
         * thread owns c counts too: with -t most of a flood arrives so. */
        if (uc->turn_bytes >= (uc->bulk ? URING_BULK_KEEP : URING_BULK_AT))
            uc->last_bulk = (uint32_t)c->owner->now;
        if (uc->bulk && c->owner->now - uc->last_bulk >= URING_BULK_IDLE) {
            uc->bulk = false;
            uc_cancel_recv(uw, c);
        } else if (!uc->bulk && uc->turn_bytes >= URING_BULK_AT) {
            uc->bulk = true;
            uc_cancel_recv(uw, c);
        }
        if (c->inflight) {
            /* a payload thread owns the input: keep the buffer until c
             * comes back (uring_conn_returned) */
            if (uc_stash(uw, c, gi, bid, (uint32_t)res) < 0) {
                uw_buf_put(uw, gi, bid);
                c->dead = true;
            }
            return;
        }
        if (c->ibuf == NULL) {
            /* Nothing buffered: the requests are parsed where the kernel
             * put them, and conn_run() copies what a partial one leaves
             * into a lent buffer (the ring is the thread's input pool). */
            conn_in_lend(c, g->bufs + (size_t)bid * g->sz, (size_t)res);
            if (uc_over_turn(uw, c) || uc_backlogged(c))
                uc_cancel_recv(uw, c);
            if (!uc->recv_armed)
                uw_want_rearm(uw, c);
            ur_drive(c); /* may free c */
            uw_buf_put(uw, gi, bid);
            return;
        }
        res = conn_in_append(c, g->bufs + (size_t)bid * g->sz, (size_t)res);
        uw_buf_put(uw, gi, bid);
        if (res < 0) {
            conn_teardown(c);
            return;
        }
        if (uc_backlogged(c) || uc_over_turn(uw, c))
            uc_cancel_recv(uw, c);
        if (!uc->recv_armed)
            uw_want_rearm(uw, c);
        ur_drive(c);
        return;
    }
    if (buf)
        uw_buf_put(uw, gi, bid);
    if (res == 0) { /* EOF */
        c->rd_shut = true;
        if (!c->inflight)
            ur_drive(c);
        return;
    }
    /* a ring that ran dry takes more buffers, unless this connection
     * emptied it alone: one past its turn's share, or one just moved to
     * the bulk group (a flood fills any number of buffers, and more
     * would only be more resident memory) */
    if (res == -ENOBUFS && UC(c)->bulk == UC(c)->recv_bulk &&
        !uc_over_turn(uw, c))
        uw_buf_grow(uw, UC(c)->recv_bulk ? 1 : 0);
    if (res == -ENOBUFS || res == -ECANCELED || res == -EINTR ||
        res == -EAGAIN || res > 0) {
        /* out of provided buffers (the data waits in the socket), or our
         * own cancellation: armed again once it can be */
        uw_want_rearm(uw, c);
        return;
    }
    log_debug("conn %llu receive: %s", (unsigned long long)c->id,
              strerror(-res));
    if (c->inflight)
        c->dead = true;
    else
        conn_teardown(c);
}

static void uw_on_send(struct uring_worker *uw, struct conn *c,
                       const struct io_uring_cqe *cqe)
{
    struct uconn *uc = UC(c);
    int res = cqe->res;

    if (cqe->flags & IORING_CQE_F_MORE) {
        /* a zero-copy send's result: the notification follows, and
         * until then the kernel may still read the records' pages */
        uc->zc_res = res;
        uc->zc_wait = true;
        return;
    }
    if (cqe->flags & IORING_CQE_F_NOTIF) {
        uw->zc_notifs++;
        uc->zc_wait = false;
        res = uc->zc_res;
    }
    if (uc->zc && (res == -EOPNOTSUPP || res == -EINVAL)) {
        /* not on this socket (a Unix socket): plain sends from now */
        uc->no_zc = true;
        res = 0;
    }
    uc->zc = false;
    UC(c)->ops--;
    c->wr_busy = false;
    uc_iov_give(uw, c);
    if (UC(c)->zombie) {
        uw_zombie_done(uw, c);
        return;
    }
    if (res >= 0) {
        conn_out_sent(c, (size_t)res);
    } else if (res != -EAGAIN && res != -EINTR) {
        log_debug("conn %llu write: %s", (unsigned long long)c->id,
                  strerror(-res));
        conn_teardown(c);
        return;
    }
    c->wr_ready = true;
    if (!c->inflight)
        ur_drive(c);
}

/* ---- the loop ------------------------------------------------------------ */

static void uw_dispatch(struct uring_worker *uw, const struct io_uring_cqe *cqe)
{
    uint64_t ud = cqe->user_data;

    switch (UD_TYPE(ud)) {
    case UD_RECV:
    case UD_RECV_BULK:
        uw_on_recv(uw, UD_PTR(ud), cqe, UD_TYPE(ud) == UD_RECV_BULK);
        break;
    case UD_SEND:
        uw_on_send(uw, UD_PTR(ud), cqe);
        break;
    case UD_WAKE:
        worker_inbox_run(uw->w);
        uw_arm_wake(uw);
        break;
    case UD_UDP:
        uw->udp_armed[ud >> 3] = false;
        uw->udp_due = true;
        break;
    case UD_ACCEPT:
        uw_on_accept(uw, (size_t)(ud >> 3), cqe);
        break;
    case UD_POLL:
        uw_on_poll(uw, ud, cqe);
        break;
    default:
        break;
    }
}

/* Run the completions: the bulk group's receives last, after the sends
 * that the others produced are on their way (one io_uring_enter more, in
 * turns that have bulk input only): a request beside bulk input is
 * answered before the bulk bytes are copied and parsed, and its next
 * request makes the next turn. */
static void uw_reap(struct uring_worker *uw)
{
    struct io_uring_cqe *cqe;
    unsigned head, n, i;

    uw->turn++;
    do {
        n = 0;
        uw->nlater = 0;
        io_uring_for_each_cqe(&uw->ring, head, cqe)
        {
            if (UD_TYPE(cqe->user_data) == UD_RECV_BULK &&
                uw->nlater < uw->ring.cq.ring_entries)
                uw->later[uw->nlater++] = *cqe;
            else
                uw_dispatch(uw, cqe);
            n++;
        }
        io_uring_cq_advance(&uw->ring, n);
        if (uw->nlater > 0) {
            io_uring_submit(&uw->ring);
            for (i = 0; i < uw->nlater; i++)
                uw_dispatch(uw, &uw->later[i]);
        }
    } while (n > 0);
}

/* Connections that yielded, then receives to arm again. */
static void uw_passes(struct uring_worker *uw)
{
    unsigned n = uw->rq_n;
    struct conn *c, *keep = NULL;

    uw->deferred = false;
    while (n-- > 0 && (c = uw->rq_head) != NULL) {
        uw->rq_head = UC(c)->rq_next;
        if (uw->rq_head == NULL)
            uw->rq_tail = NULL;
        uw->rq_n--;
        UC(c)->in_rq = false;
        ur_drive(c); /* may free c */
    }
    while ((c = uw->ra) != NULL) {
        struct uconn *uc = UC(c);

        uw->ra = uc->ra_next;
        uc->in_ra = false;
        if (uc->recv_armed || c->rd_shut || c->closing || c->dead)
            continue;
        if (uc_over_turn(uw, c)) {
            /* its share of this turn is taken: armed again next turn,
             * which comes without sleeping */
            uw->deferred = true;
            uc->ra_next = keep;
            keep = c;
            uc->in_ra = true;
            continue;
        }
        if (c->inflight || uc_backlogged(c) ||
            uw->g[uc->bulk].held >= uw->g[uc->bulk].n) {
            uc->ra_next = keep; /* later */
            keep = c;
            uc->in_ra = true;
            continue;
        }
        if (uc_arm_recv(uw, c) < 0) {
            uc->ra_next = keep;
            keep = c;
            uc->in_ra = true;
        }
    }
    uw->ra = keep;
    if (uw->udp_due) {
        unsigned i;

        uw->udp_due = false;
        udp_serve(uw->w);
        if (!uw->w->stopping)
            for (i = 0; i < uw->nudp; i++)
                uw_arm_udp(uw, i);
    }
}

/* The network thread's loop: reap, run, submit and wait in one call. */
void uring_run(struct worker *w)
{
    struct uring_worker *uw = w->uring;
    unsigned i;

    if (uw->ring.flags & IORING_SETUP_R_DISABLED) {
        (void)syscall(__NR_io_uring_register, uw->ring.ring_fd,
                      IORING_REGISTER_ENABLE_RINGS, NULL, 0);
        uw->ring.flags &= ~IORING_SETUP_R_DISABLED;
    }
    uw_arm_wake(uw);
    if (w->udp != NULL) {
        uw->nudp = udp_worker_fds(w, uw->udp_fd, URING_UDP_MAX);
        for (i = 0; i < uw->nudp; i++)
            uw_arm_udp(uw, i);
    }
    worker_inbox_run(w); /* connections given before the thread ran */
    for (;;) {
        struct __kernel_timespec to;
        struct io_uring_cqe *cqe;
        uint64_t now_ms;

        if (atomic_load_explicit(&w->stop_req, memory_order_acquire) &&
            !w->stopping) {
            for (i = 0; i < uw->nudp; i++) {
                struct io_uring_sqe *sqe = uw_sqe(uw);
                if (sqe != NULL) {
                    io_uring_prep_cancel_fd(sqe, uw->udp_fd[i], 0);
                    io_uring_sqe_set_data64(sqe, UD_IGNORE);
                }
            }
            uw->nudp = 0;
            worker_begin_stop(w);
        }
        now_ms = server_coarse_ms();
        if (now_ms >= w->next_tick_ms) {
            worker_tick_run(w);
            now_ms = server_coarse_ms();
        }
        uw_passes(uw);
        if (w->stopping && w->nconns == 0)
            break;
        if (uw->rq_n > 0 || uw->deferred) {
            io_uring_submit_and_get_events(&uw->ring);
        } else {
            /* until the tick is due: computed on the coarse clock the
             * deadlines are read on (a wake computed on the precise clock
             * could find the coarse second not yet turned, and sleep a
             * whole second more before the next tick) */
            uint64_t ms = worker_wait_ms(now_ms, w->next_tick_ms,
                                         server_coarse_res_ms());

            to.tv_sec = (long long)(ms / 1000);
            to.tv_nsec = (long long)(ms % 1000) * 1000000;
            (void)io_uring_submit_and_wait_timeout(&uw->ring, &cqe, 1, &to,
                                                   NULL);
        }
        uw_reap(uw);
        if (w->yield_turns) {
            STAT_INC(&w->stats, loop_yields);
            sched_yield();
        }
    }
    io_uring_submit(&uw->ring);
}

int uring_turn(struct worker *w, int wait_ms)
{
    struct uring_worker *uw = w->uring;
    struct __kernel_timespec to = {wait_ms / 1000,
                                   (long long)(wait_ms % 1000) * 1000000};
    struct io_uring_cqe *cqe;
    int rc;

    if (uw->ring.flags & IORING_SETUP_R_DISABLED) {
        (void)syscall(__NR_io_uring_register, uw->ring.ring_fd,
                      IORING_REGISTER_ENABLE_RINGS, NULL, 0);
        uw->ring.flags &= ~IORING_SETUP_R_DISABLED;
    }
    rc = io_uring_submit_and_wait_timeout(&uw->ring, &cqe, wait_ms > 0 ? 1 : 0,
                                          &to, NULL);
    uw_reap(uw);
    uw_passes(uw);
    io_uring_submit(&uw->ring);
    return rc == -ETIME ? 0 : rc < 0 ? rc : 1;
}

void uring_wake(struct worker *w)
{
    uint64_t one = 1;

    if (write(w->uring->efd, &one, sizeof(one)) < 0)
        log_debug("eventfd write: %s", strerror(errno));
}

/* ---- the main thread's ring (-n 0): one libevent event ------------------- */

static void uw_kick(struct uring_worker *uw)
{
    if (uw->kicked || uw->ev == NULL)
        return;
    uw->kicked = true;
    event_active(uw->ev, EV_TIMEOUT, 0);
}

static void uw_ev_cb(evutil_socket_t fd, short what, void *arg)
{
    struct uring_worker *uw = arg;

    (void)fd;
    (void)what;
    uw->kicked = true; /* what runs now needs no second call */
    uw_reap(uw);
    uw_passes(uw);
    io_uring_submit(&uw->ring);
    uw->kicked = false;
    if (uw->rq_n > 0)
        uw_kick(uw);
}

/* ---- the transport table (transport.h) ----------------------------------- */

static void ur_wake(struct worker *w)
{
    if (uring_outer(w))
        uring_wake(w); /* the ring's loop does not run libevent's */
    else
        event_active(w->ev_inbox, EV_READ, 0);
}

static void ur_stop(struct worker *w)
{
    if (uring_outer(w)) {
        atomic_store(&w->stop_req, true);
        uring_wake(w);
    } else {
        event_active(w->ev_stop, EV_READ, 0);
    }
}

static void ur_run(struct worker *w)
{
    if (uring_outer(w))
        uring_run(w);
    else
        event_base_dispatch(w->base);
}

/* the ring's loop ends by itself once a stopping thread has no
 * connection; the main thread's is libevent's */
static void ur_done(struct worker *w)
{
    event_base_loopexit(w->base, NULL);
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
    .wake = ur_wake,
    .stop = ur_stop,
    .run = ur_run,
    .done = ur_done,
    .accept_on = uring_accept_arm,
    .accept_off = uring_accept_cancel,
};

#else
typedef int mdc_uring_unused; /* ISO C wants a declaration */
#endif
