/*
 * sockio.c - a connection's socket read and written when ready (sockio.h):
 * what the epoll backend does for every connection and the io_uring
 * backend for a filtered (TLS) one.  The request loop (conn.c) never
 * calls it directly: it calls its backend's table (transport.h).
 */
#include "config.h"

#include "sockio.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "conn.h"
#include "tls.h"
#include "server/log.h"

#define SOCKIO_IOV_MAX 256 /* segments per sendmsg(); 4 KiB of stack */

/* recv() and send() of a plain socket.  glibc's wrappers are thread
 * cancellation points: in a multi-threaded process each call pays two
 * atomic read-modify-writes around the system call.  mdcached never
 * cancels a thread, so on Linux the calls are made without them (the
 * same system calls, errno set the same way): on x86-64 inline, since
 * syscall() moves each of its seven arguments into the kernel's
 * registers after the caller has placed them for a C call (about 18
 * instructions a call, two a request), elsewhere through syscall(). */
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_recvfrom) && \
    defined(SYS_sendto)
/* recvfrom(fd, b, n, flags, NULL, NULL), sendto(fd, b, n, flags, NULL,
 * 0): -1 and errno on failure, as the library's calls */
static inline ssize_t conn_sys_rw(long nr, int fd, const void *b, size_t n,
                                  int flags)
{
    register long r10 __asm__("r10") = flags;
    register long r8 __asm__("r8") = 0;
    register long r9 __asm__("r9") = 0;
    long ret;

    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"((long)fd), "S"(b), "d"(n), "r"(r10),
                       "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if (__builtin_expect((unsigned long)ret > -4096ul, 0)) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}
#define conn_sys_recv(fd, b, n) conn_sys_rw(SYS_recvfrom, (fd), (b), (n), 0)
#define conn_sys_send(fd, b, n, f) \
    conn_sys_rw(SYS_sendto, (fd), (b), (n), (f))
#elif defined(__linux__) && defined(SYS_recvfrom) && defined(SYS_sendto)
#define conn_sys_recv(fd, b, n) \
    ((ssize_t)syscall(SYS_recvfrom, (fd), (b), (n), 0, NULL, NULL))
#define conn_sys_send(fd, b, n, f) \
    ((ssize_t)syscall(SYS_sendto, (fd), (b), (n), (f), NULL, 0))
#else
#define conn_sys_recv(fd, b, n) recv((fd), (b), (n), 0)
#define conn_sys_send(fd, b, n, f) send((fd), (b), (n), (f))
#endif

void sockio_wr_blocked(struct conn *c)
{
    c->wr_ready = false;
    __atomic_store_n(&c->state, CS_MWRITE, __ATOMIC_RELAXED);
    if (c->blocked_since == 0)
        c->blocked_since = c->owner->now;
}

/*
 * 1: got bytes, 0: nothing more for now (EAGAIN or EOF), -1: error.
 *
 * A read that returns less than the room offered emptied the socket's
 * receive queue, so another read now could only return EAGAIN; bytes that
 * arrive later raise a new edge.  What a short read cannot tell is whether
 * the peer also closed within the edge we were handed (its data and its
 * hang-up both in before we looked): rd_short records the short read, and
 * the input counts as drained once a send to the peer has succeeded after
 * it (a closed peer makes the send fail) or a later read says EAGAIN.  A
 * half-close (FIN, shutdown(SHUT_WR)) comes as EV_CLOSED: then we read to
 * EOF.  docs/threads-models.md, "I/O path and system calls".
 */
int sockio_read(struct conn *c)
{
    size_t room = conn_in_room(c);
    bool drained = false;
    ssize_t n;

    if (room == 0)
        return -1;
    /* recv(), not read(): same result on a socket, without the VFS layer.
     * TLS in user space: SSL_read() (it may hold bytes no edge announces:
     * only a short read of the socket with nothing left in OpenSSL counts
     * as short, see tls_recv()).  Kernel TLS: recvmsg() with the record
     * type (tls_ktls_recv()); its short reads prove nothing either. */
    if (c->tls != NULL && tls_rx_user(c->tls))
        n = tls_recv(c, c->ibuf + c->ilen, room, &drained);
    else if (c->tls != NULL) /* kernel TLS: a short read proves nothing */
        n = tls_ktls_recv(c, c->ibuf + c->ilen, room);
    else
        n = conn_sys_recv(c->fd, c->ibuf + c->ilen, room);
    if (n > 0) {
        conn_in_got(c, (size_t)n);
        /* The last read decides: one that filled the room (or left bytes
         * in OpenSSL) after a short one means more came since, so a short
         * read before it no longer proves the input drained (a stale
         * rd_short let the next send end the reading with a pipelined
         * request still in OpenSSL: test tls_e2e.py, 128 KiB set then
         * 3 gets, about 1 run in 40 under load). */
        c->rd_short = (c->tls == NULL ? (size_t)n < room : drained) &&
                      !c->rd_hup;
        return 1;
    }
    if (n == 0) {
        c->rd_shut = true;
        c->rd_ready = false;
        return 0;
    }
    if (errno == EINTR)
        return 1;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        conn_rd_drained(c);
        if (c->rd_wants_wr) { /* SSL_read must write first */
            sockio_wr_blocked(c);
            return SOCKIO_WAIT_WR;
        }
        return 0;
    }
    log_debug("conn %llu read: %s", (unsigned long long)c->id,
              strerror(errno));
    return -1;
}

size_t sockio_out_iov(const struct conn *c, struct iovec *iov, size_t max,
                      size_t *want)
{
    size_t i, k, bytes = 0;

    for (i = c->seghead, k = 0; i < c->nseg && k < max; i++, k++) {
        const struct oseg *s = &c->segs[i];
        const uint8_t *p = s->ptr != NULL ? s->ptr : c->obuf + s->off;
        size_t skip = i == c->seghead ? c->headsent : 0;

        iov[k].iov_base = (void *)(p + skip);
        iov[k].iov_len = s->len - skip;
        bytes += s->len - skip;
    }
    *want = bytes;
    return k;
}

/*
 * Write until done or the socket is full; 0 ok, -1 the connection is
 * broken, 1 blocked.  Everything pending goes in one sendmsg() (up to SOCKIO_IOV_MAX
 * segments), so a pipelined batch is answered with one system call.  A
 * send that takes less than offered means the send buffer is full: we stop
 * there instead of asking again only to get EAGAIN (the kernel has marked
 * the socket out of space and raises EPOLLOUT once there is room).
 */
int sockio_flush(struct conn *c)
{
    struct iovec iov[SOCKIO_IOV_MAX];
    struct msghdr mh;
    ssize_t n;
    size_t k, want;

    while (c->seghead < c->nseg) {
        if (c->tls != NULL && !c->tls->ktls_tx) {
            /* SSL_write(): one record at a time, so taking less than the
             * whole queue says nothing of the socket (want = 0); a full
             * socket comes back as EAGAIN */
            want = 0;
            n = tls_send_pending(c);
            goto sent;
        }
        if (c->nseg - c->seghead == 1) {
            /* One piece: send() costs less than sendmsg() with one iovec
             * (no msghdr/iovec import). */
            const struct oseg *s = &c->segs[c->seghead];
            const uint8_t *p = s->ptr != NULL ? s->ptr : c->obuf + s->off;

            want = s->len - c->headsent;
            n = conn_sys_send(c->fd, p + c->headsent, want, MSG_NOSIGNAL);
            goto sent;
        }
        k = sockio_out_iov(c, iov, SOCKIO_IOV_MAX, &want);
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = k;
        n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
    sent:
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                sockio_wr_blocked(c);
                return 1;
            }
            log_debug("conn %llu write: %s", (unsigned long long)c->id,
                      strerror(errno));
            return -1;
        }
        /* The peer took bytes, so it had not closed when the last short
         * read emptied the socket: that read drained the input. */
        if (c->rd_short)
            conn_rd_drained(c);
        conn_out_sent(c, (size_t)n); /* stats, records, reset once empty */
        if ((size_t)n < want) {
            sockio_wr_blocked(c);
            return 1;
        }
    }
    return 0;
}

int sockio_start(struct conn *c)
{
    int h = tls_handshake(c);

    if (h == 1)
        c->hs_pending = false;
    else if (h == 0) /* OpenSSL read until EAGAIN: wait for the edge */
        c->rd_ready = false;
    else if (h == 2)
        sockio_wr_blocked(c);
    return h;
}

/* Nothing is read during a hold, so a readiness edge then may be the
 * peer's FIN (EV_CLOSED) or its reset: libevent reports EPOLLHUP and
 * EPOLLERR as EV_READ|EV_WRITE, without EV_CLOSED, and a client that
 * closes with our answer unread sends a reset.  poll() tells both apart
 * from input, whatever is queued. */
bool sockio_peer_gone(const struct conn *c)
{
    struct pollfd p = {c->fd, POLLRDHUP, 0};

    return c->rd_hup || (poll(&p, 1, 0) == 1 &&
                         (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
}

void sockio_release(struct conn *c)
{
    tls_conn_free(c);
}
