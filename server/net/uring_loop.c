/*
 * uring_loop.c - the io_uring backend's loop (uring.c has the rings): a
 * network thread's (uring_run: reap, run, submit and wait in one call),
 * one turn for tests (uring_turn), the main thread's ring as a libevent
 * event, the wake-ups from other threads, the UDP sockets' polls and the
 * listeners' multishot accepts (the main thread's ring).
 */
#include "config.h"

#ifdef HAVE_LIBURING

#include "uring.h"
#include "uring_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#include "server/log.h"
#include "evloop.h"
#include "net.h"
#include "threads.h"
#include "udp.h"

void uw_arm_wake(struct uring_worker *uw)
{
    struct io_uring_sqe *sqe = uw_sqe(uw);

    if (sqe == NULL)
        return;
    io_uring_prep_read(sqe, uw->efd, &uw->efd_val, sizeof(uw->efd_val), 0);
    io_uring_sqe_set_data64(sqe, UD_WAKE);
}

void uw_arm_udp(struct uring_worker *uw, unsigned i)
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

int uring_accept_arm(struct server *srv, size_t i)
{
    struct uring_worker *uw = UW(&srv->workers[0]);
    struct listener *l = &srv->listeners[i];
    struct io_uring_sqe *sqe;

    if (l->xl != NULL)
        return 0;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return -1;
    io_uring_prep_multishot_accept(sqe, l->fd, NULL, NULL,
                                   SOCK_NONBLOCK | SOCK_CLOEXEC);
    /* the index, not a pointer: the listener array may be gone by the
     * time a late completion arrives (net_accepted checks it) */
    io_uring_sqe_set_data64(sqe, ((uint64_t)i << 3) | UD_ACCEPT);
    l->xl = uw; /* the mark of an armed accept (never dereferenced) */
    return 0;
}

void uring_accept_cancel(struct server *srv, size_t i)
{
    struct uring_worker *uw = UW(&srv->workers[0]);
    struct listener *l = &srv->listeners[i];
    struct io_uring_sqe *sqe;

    if (l->xl == NULL || l->fd < 0)
        return;
    sqe = uw_sqe(uw);
    if (sqe == NULL)
        return;
    io_uring_prep_cancel64(sqe, ((uint64_t)i << 3) | UD_ACCEPT, 0);
    io_uring_sqe_set_data64(sqe, UD_IGNORE);
    io_uring_submit(&uw->ring); /* before the listener may be closed */
    l->xl = NULL;
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
        srv->listeners[i].xl = NULL;
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
        conn_drive(c); /* may free c */
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
    struct uring_worker *uw = UW(w);
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

        if (atomic_load_explicit(&uw->stop_req, memory_order_acquire) &&
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
    struct uring_worker *uw = UW(w);
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

    if (write(UW(w)->efd, &one, sizeof(one)) < 0)
        log_debug("eventfd write: %s", strerror(errno));
}

/* ---- the main thread's ring (-n 0): one libevent event ------------------- */

void uw_kick(struct uring_worker *uw)
{
    if (uw->kicked || uw->ev == NULL)
        return;
    uw->kicked = true;
    evloop_trigger(uw->ev);
}

void uw_ev_cb(int fd, short what, void *arg)
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

#else
typedef int mdc_uring_loop_unused; /* ISO C wants a declaration */
#endif
