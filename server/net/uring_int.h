/*
 * uring_int.h - what the io_uring backend's files share (uring.c: the
 * rings, their setup and the transport table; uring_loop.c: the loop,
 * wake-ups, UDP polls and the listeners' accepts; uring_conn.c: a
 * connection's receives, sends, polls and close): the constants, the
 * completion tags, the ring's state per thread (struct uring_worker) and
 * per connection (struct uconn).  Nothing outside those files includes
 * it; the rest of the server sees the backend through transport.h and
 * uring.h only.
 */
#ifndef MDC_URING_INT_H
#define MDC_URING_INT_H

#include "config.h"

#ifdef HAVE_LIBURING

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <liburing.h>

#include "conn.h"
#include "server/server.h"


/* The backend --io=auto picks: io_uring, measured cheaper per request
 * (docs/performance-history.md, "The io_uring backend"); auto falls back
 * to epoll (with a warning) where the kernel refuses io_uring or a ring
 * cannot be set up.  0 makes auto mean epoll. */
#define URING_DEFAULT_IS_URING 1

/* A ring's queues: a network thread's submission queue takes a turn's
 * sends and re-arms (a full one is submitted and taken again: uw_sqe),
 * its completion queue a turn's completions (more overflow to the
 * kernel's list, slower but not lost).  The main thread's ring, when
 * network threads serve the connections, has listeners and timers only.
 * Each ring's queues are resident from its first use: 512 and 1 024 were
 * 52 KiB a ring, 260 KiB of an idle -n 4 daemon's RSS. */
#define URING_ENTRIES 128      /* submission queue */
#define URING_CQ_ENTRIES 1024  /* completion queue */
#define URING_MAIN_ENTRIES 16  /* the main thread's, with -n 1 or more */
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
    uint8_t quiet;        /* ticks since a receive that left the socket
                             empty with no reply sent after it (ur_tick) */
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

static inline struct uconn *UC(const struct conn *c)
{
    return conn_xpriv((struct conn *)c);
}

/* User data of c's armed receive (or read poll). */
static inline uint64_t uc_recv_ud(const struct conn *c)
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
    /* main thread (-n 0): the ring as an event of its libevent loop */
    struct evloop_ev *ev;
    atomic_bool stop_req;  /* network thread: the main thread asks it to
                              stop */
    bool kicked;
    /* UDP sockets of this thread (-U), polled one-shot */
    int udp_fd[URING_UDP_MAX];
    bool udp_armed[URING_UDP_MAX];
    unsigned nudp;
    bool udp_due;
};

/* Thread w's ring (struct worker's backend part), or NULL. */
static inline struct uring_worker *UW(const struct worker *w)
{
    return w->xw;
}

/* ---- submissions (inline: every send and receive takes one) ------------- */

void uw_kick(struct uring_worker *uw);

static inline struct io_uring_sqe *uw_sqe(struct uring_worker *uw)
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

static inline void uw_buf_put(struct uring_worker *uw, unsigned gi,
                              unsigned bid)
{
    struct ugroup *g = &uw->g[gi];

    if (uw->exiting)
        return;
    io_uring_buf_ring_add(g->br, g->bufs + (size_t)bid * g->sz, g->sz,
                          (unsigned short)bid, io_uring_buf_ring_mask(g->n),
                          0);
    io_uring_buf_ring_advance(g->br, 1);
}

/* ---- uring.c ---------------------------------------------------------- */

/* True when w's thread runs the ring's loop rather than libevent's. */
bool uring_outer(const struct worker *w);

/* More of group gi's buffers into its ring (URING_BUF_STEP). */
void uw_buf_grow(struct uring_worker *uw, unsigned gi);

/* ---- uring_loop.c ----------------------------------------------------- */

/* The main thread's ring is one libevent event: its callback. */
void uw_ev_cb(int fd, short what, void *arg);
/* The network thread's loop (the table's run). */
void uring_run(struct worker *w);
/* Wake w's loop from another thread (inbox, stop). */
void uring_wake(struct worker *w);
void uw_arm_wake(struct uring_worker *uw);
void uw_arm_udp(struct uring_worker *uw, unsigned i);
int uring_accept_arm(struct server *srv, size_t i);
void uring_accept_cancel(struct server *srv, size_t i);

/* ---- uring_conn.c ----------------------------------------------------- */

int uc_arm_recv(struct uring_worker *uw, struct conn *c);
void uc_cancel_recv(struct uring_worker *uw, struct conn *c);
void uw_want_rearm(struct uring_worker *uw, struct conn *c);
/* c's input waits to be parsed: its receive stays off. */
bool uc_backlogged(const struct conn *c);
/* c took its share of this turn's receiving (URING_TURN_BYTES). */
bool uc_over_turn(const struct uring_worker *uw, const struct conn *c);
/* Completions. */
void uw_on_poll(struct uring_worker *uw, uint64_t ud,
                const struct io_uring_cqe *cqe);
void uw_on_recv(struct uring_worker *uw, struct conn *c,
                const struct io_uring_cqe *cqe, unsigned gi);
void uw_on_send(struct uring_worker *uw, struct conn *c,
                const struct io_uring_cqe *cqe);
void uw_zombie_done(struct uring_worker *uw, struct conn *c);
/* The connection operations of the transport table (transport.h). */
int ur_adopt(struct conn *c);
int ur_start(struct conn *c);
int ur_read(struct conn *c);
int ur_flush(struct conn *c);
void ur_requeue(struct conn *c);
bool ur_close(struct conn *c);
void ur_release(struct conn *c);
void ur_returned(struct conn *c);
bool ur_peer_gone(struct conn *c);
void ur_tick(struct conn *c);
bool ur_in_waiting(struct conn *c);

#endif /* HAVE_LIBURING */

#endif
