/*
 * uring_conn.c - a connection under the io_uring backend (uring.c has the
 * rings): its multishot receive and the input it brings, its sends from
 * the output queue in place (one send or sendmsg at a time, zero-copy
 * from --uring-send-zc), a filtered (TLS) connection's readiness polls,
 * the buffers stashed while a payload thread has the input, and its close
 * once no operation in flight references it.  These are the connection
 * operations of the backend's transport table (transport.h).
 */
#include "config.h"

#ifdef HAVE_LIBURING

#include "uring.h"
#include "uring_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>

#include "server/core/alloc.h"
#include "server/log.h"
#include "sockio.h"
#include "transport.h"

int uc_arm_recv(struct uring_worker *uw, struct conn *c)
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

void uc_cancel_recv(struct uring_worker *uw, struct conn *c)
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

void uw_want_rearm(struct uring_worker *uw, struct conn *c)
{
    if (UC(c)->in_ra)
        return;
    UC(c)->in_ra = true;
    UC(c)->ra_next = uw->ra;
    uw->ra = c;
    if (!uw->outer)
        uw_kick(uw);
}

/* ---- connections -------------------------------------------------------- */

int ur_adopt(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);

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
    struct uring_worker *uw = UW(c->owner);
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

/* A readiness poll of a filtered connection completed. */
void uw_on_poll(struct uring_worker *uw, uint64_t ud,
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
    conn_on_io(c, what); /* may free c */
}

int ur_start(struct conn *c)
{
    int h = sockio_start(c);

    if (h == SOCKIO_WAIT_WR)
        return uc_want_wr(c) < 0 ? -1 : 0;
    return h;
}

/* Read what the socket has: only a filtered connection is read so (the
 * others' bytes come with their receive's completions, uw_on_recv). */
int ur_read(struct conn *c)
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

bool ur_peer_gone(struct conn *c)
{
    /* a receive sees the EOF or the reset itself */
    return c->filtered && sockio_peer_gone(c);
}

/*
 * The multishot receive can miss a reset that comes with the last bytes
 * (seen on Linux 6.18 with a client that sends part of a request, or a
 * noreply one, and resets at once): it hands the bytes over, finds the
 * socket empty (a reset, unlike a FIN, leaves nothing queued) and waits
 * for a wake-up that already came.  The connection would stay open, its
 * peer gone, for ever.  So a connection whose last receive left the socket
 * empty and that sent nothing after it (uw_on_recv sets uc->quiet, a send
 * clears it) is looked at once, a whole tick later: a hang-up or an error
 * on a socket whose receive is still armed means the receive missed it;
 * cancelled, the receive is armed again (uw_on_recv), and the new one
 * sees the reset or the EOF.  One poll(2) per such connection, once:
 * requests that get replies never set it.
 */
void ur_tick(struct conn *c)
{
    struct uconn *uc = UC(c);
    struct pollfd p = {.fd = c->fd, .events = POLLRDHUP};

    if (uc->quiet == 0 || uc->quiet++ < 2)
        return;
    uc->quiet = 0;
    if (c->filtered || !uc->recv_armed || uc->recv_cancel)
        return;
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLRDHUP))) {
        log_debug("conn %llu: the receive missed the peer's hang-up; armed "
                  "again", (unsigned long long)c->id);
        uc_cancel_recv(UW(c->owner), c);
    }
}

/*
 * A receive (or, filtered, a read poll) of c that completed and is not
 * reaped yet.  The loop reaps before its tick and a network thread's ring
 * posts completions only while it waits (DEFER_TASKRUN: the bytes are
 * still in the socket then), so this finds one only on a ring that posts
 * them as they come (the main thread's, or a kernel without
 * DEFER_TASKRUN) or for a thread that was late: what the tick asks
 * before an --auth-timeout close (conn_tick).
 */
bool ur_in_waiting(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);
    struct io_uring_cqe *cqe;
    unsigned head;

    if (uw == NULL)
        return false;
    io_uring_for_each_cqe(&uw->ring, head, cqe)
    {
        unsigned t = UD_TYPE(cqe->user_data);

        /* a write poll's user data has UD_POLL_WR: not c's pointer */
        if (UD_PTR(cqe->user_data) == (void *)c && cqe->res > 0 &&
            (t == UD_RECV || t == UD_RECV_BULK || t == UD_POLL))
            return true;
    }
    return false;
}

static int uc_send(struct conn *c);

int ur_flush(struct conn *c)
{
    int r;

    if (!c->filtered)
        return uc_send(c);
    r = sockio_flush(c);
    if (r == 1)
        return uc_want_wr(c);
    return r;
}

/* ---- plain connections: sends from the output queue ------------------- */

static int uc_send(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);
    struct uconn *uc = UC(c);
    struct io_uring_sqe *sqe;
    size_t k, want;
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
        k = sockio_out_iov(c, uc->snd->iov, URING_IOV_MAX, &want);
        memset(&uc->snd->mh, 0, sizeof(uc->snd->mh));
        uc->snd->mh.msg_iov = uc->snd->iov;
        uc->snd->mh.msg_iovlen = k;
        if (zc)
            io_uring_prep_sendmsg_zc(sqe, c->fd, &uc->snd->mh, MSG_NOSIGNAL);
        else
            io_uring_prep_sendmsg(sqe, c->fd, &uc->snd->mh, MSG_NOSIGNAL);
    }
    uc->zc = zc;
    uc->quiet = 0;
    uw->zc_sends += zc;
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)c | UD_SEND);
    uc->ops++;
    c->wr_busy = true;
    c->wr_ready = false;
    if (c->blocked_since == 0)
        c->blocked_since = c->owner->now;
    return 0;
}

void ur_requeue(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);
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

bool ur_close(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);
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

void ur_release(struct conn *c)
{
    struct uconn *uc = UC(c);
    struct uring_worker *uw;
    unsigned i;

    sockio_release(c); /* the filter's state (a close_notify) */
    uw = UW(c->owner);
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
void uw_zombie_done(struct uring_worker *uw, struct conn *c)
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

void ur_returned(struct conn *c)
{
    struct uring_worker *uw = UW(c->owner);
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
    *sends = UW(w) != NULL ? UW(w)->zc_sends : 0;
    *notifs = UW(w) != NULL ? UW(w)->zc_notifs : 0;
}

bool uc_backlogged(const struct conn *c)
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
bool uc_over_turn(const struct uring_worker *uw, const struct conn *c)
{
    return UC(c)->turn == (uint32_t)uw->turn &&
           UC(c)->turn_bytes >= URING_TURN_BYTES;
}

void uw_on_recv(struct uring_worker *uw, struct conn *c,
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
        /* left the socket empty: looked at by ur_tick unless a reply
         * follows (uc_send) */
        uc->quiet = !(cqe->flags & IORING_CQE_F_SOCK_NONEMPTY);
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
            conn_drive(c); /* may free c */
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
        conn_drive(c);
        return;
    }
    if (buf)
        uw_buf_put(uw, gi, bid);
    if (res == 0) { /* EOF */
        c->rd_shut = true;
        if (!c->inflight)
            conn_drive(c);
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

void uw_on_send(struct uring_worker *uw, struct conn *c,
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
        conn_drive(c);
}

#else
typedef int mdc_uring_conn_unused; /* ISO C wants a declaration */
#endif
