/*
 * udp.c - memcached's UDP protocol (-U PORT) at the edge of the text
 * handler: the sockets, the batched receive and send loop of a network
 * thread, the 8-byte frame header, and the cutting of replies into
 * datagrams (docs/protocol.md, "UDP"; udp.h).
 *
 * One turn of a socket: recvmmsg() up to UDP_BATCH datagrams; for each,
 * check the frame header and hand its commands to the text handler
 * (server/proto/proto_text.c) on the thread's datagram connection (a
 * struct conn without a socket, c->dgram): the handler that answers a TCP
 * request answers each command, get and gets through the same GET, into
 * the connection's output queue - text in its lent buffer, values as
 * references into their records - and each reply's length is known before
 * its first datagram is built (every datagram carries the total).  Then
 * the replies are cut into datagrams of UDP_CHUNK bytes after their
 * header, sendmmsg()ed, untagged hits are offered to the XDP mirror
 * (srv->udp_hit_hook) and the records released.  The buffers come from the
 * thread's pool: a GET hit allocates nothing and copies no value.
 */
#include "config.h"

#include "udp.h"
#include "compat.h"
#include "conn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>


#include "server/core/alloc.h"
#include "evloop.h"
#include "net.h"
#include "server/server.h"
#include "server/addr.h"
#include "server/log.h"
#include "protocol/mctext.h"
#include "server/core/store.h"

#define UDP_ROUNDS 8     /* recvmmsg() calls per readiness event ... */
/* ... bytes of request datagrams per turn: the TCP read budget (conn.c) */
#define UDP_TURN_BYTES (256u * 1024)
/* ... and bytes of replies per turn */
#define UDP_TURN_OUT (256u * 1024)
#define UDP_TX_MSGS 64   /* datagrams per sendmmsg() */
#define UDP_TX_IOVS 1024 /* iovecs of one sendmmsg() batch */
/*
 * Iovecs one datagram may take: its header, then alternating text and value
 * segments.  A value segment is never empty and the text between two values
 * is at least "\r\nVALUE k 0 1\r\n" (15 bytes; adjacent text merges), so a
 * UDP_CHUNK of 1392 bytes spans at most 2 * 1392 / 16 + 2 segments: 176.
 */
#define UDP_DGRAM_IOVS 256
/* Composed reply text (bytes of the output buffer) or segments of the
 * output queue that trigger a send in the middle of a batch. */
#define UDP_COMPOSE_MAX 65536
#define UDP_COMPOSE_SEGS 2048
/* Socket buffer full: up to this many waits of 10 ms, then drop. */
#define UDP_SEND_TRIES 10

/* One request's reply: the next bytes of the connection's output queue,
 * and where they go. */
struct udp_reply {
    const struct sockaddr_storage *to;
    socklen_t tolen;
    uint16_t rid;
    size_t bytes;
};

struct udp_sock {
    struct udp_sock *next;
    struct worker *w;
    int fd;
    struct evloop_ev *ev;
    bool loopback;      /* bound to a loopback address */
    char name[128];
};

struct udp_worker {
    struct udp_sock *socks;

    /* receive: UDP_BATCH slots of UDP_RX_MAX bytes */
    uint8_t *rxbuf;
    struct mmsghdr rx[UDP_BATCH];
    struct iovec rxiov[UDP_BATCH];
    struct sockaddr_storage rxaddr[UDP_BATCH];

    /* the requests: a connection without a socket, run by the text
     * handler; its output queue holds the replies until they are sent */
    struct conn *c;
    struct conn_dgram dg;
    struct udp_reply *reps;
    size_t repcap, nrep;

    /* send */
    struct mmsghdr tx[UDP_TX_MSGS];
    struct iovec txiov[UDP_TX_IOVS];
    uint8_t txhdr[UDP_TX_MSGS][UDP_FRAME_HDR];
    size_t ntx, niov;
    size_t si, soff;    /* where udp_emit() is in c's output queue */
    uint64_t out_bytes; /* bytes sent, ever: a turn counts its share */
    size_t dgram_out;   /* reply bytes per request datagram, lately */
};

/* ---- running the requests ------------------------------------------------ */

static void udp_send(struct udp_worker *u, struct udp_sock *us);

/*
 * The commands of one request datagram (the frame header checked), run by
 * the text handler one at a time on the thread's datagram connection, each
 * answered by a reply of its own, as memcached does.  Incomplete input and
 * a line without its newline are not answered (memcached waits for more
 * bytes that UDP never brings).
 */
static void udp_commands(struct udp_worker *u, struct udp_sock *us,
                         size_t slot, uint16_t rid, const uint8_t *buf,
                         size_t len)
{
    struct worker *w = us->w;
    struct conn *c = u->c;
    bool answered = false;

    /* the datagram is the input, parsed where it lies (the slot stays
     * valid until the next recvmmsg()) */
    c->ibuf = (uint8_t *)buf;
    c->icap = c->ilen = len;
    c->ioff = c->iscan = 0;
    c->in_ext = true;
    while (c->ilen > c->ioff && !c->closing) {
        size_t avail = c->ilen - c->ioff, before = c->opending;

        u->dg.reply0 = before;
        c->proto->process(c, w);
        if (c->ilen - c->ioff == avail)
            break; /* an incomplete request: left unanswered */
        STAT_INC(&w->stats, udp_requests);
        if (c->closing)
            break; /* out of memory: udp_send() drops the batch */
        if (c->opending > before) {
            struct udp_reply *rp;

            if (u->nrep == u->repcap) {
                size_t cap = u->repcap > 0 ? 2 * u->repcap : UDP_BATCH;
                void *np = mdc_realloc(u->reps, cap * sizeof(*u->reps));

                if (np == NULL) {
                    c->closing = true;
                    break;
                }
                u->reps = np;
                u->repcap = cap;
            }
            rp = &u->reps[u->nrep++];
            rp->to = &u->rxaddr[slot];
            rp->tolen = u->rx[slot].msg_hdr.msg_namelen;
            rp->rid = rid;
            rp->bytes = c->opending - before;
            answered = true;
            /* out before the next command runs: the connection's output
             * stays under --max-output, what a batch holds bounded */
            if (c->olen > UDP_COMPOSE_MAX || c->nseg > UDP_COMPOSE_SEGS ||
                conn_out_full(c))
                udp_send(u, us);
        }
    }
    c->ibuf = NULL;
    c->icap = c->ilen = c->ioff = c->iscan = 0;
    c->in_ext = false;
    if (!answered)
        STAT_INC(&w->stats, udp_ignored);
}

/* One received datagram: the frame header, then its commands. */
static void udp_datagram(struct udp_worker *u, struct udp_sock *us,
                         size_t slot)
{
    struct worker *w = us->w;
    const uint8_t *p = u->rxbuf + slot * UDP_RX_MAX;
    size_t len = u->rx[slot].msg_len;
    uint16_t rid;

    STAT_INC(&w->stats, udp_datagrams_in);
    STAT_ADD(&w->stats, bytes_read, len);
    /* Truncated, header only or less, or a multi-datagram request:
     * silently ignored (mctext_udp_request()). */
    if ((u->rx[slot].msg_hdr.msg_flags & MSG_TRUNC) ||
        mctext_udp_request(p, len, &rid) < 0) {
        STAT_INC(&w->stats, udp_ignored);
        return;
    }
    /* The reply carries 0 in sequence and reserved. */
    udp_commands(u, us, slot, rid, p + UDP_FRAME_HDR, len - UDP_FRAME_HDR);
}

/* ---- sending --------------------------------------------------------------
 */

/* sendmmsg() the datagrams built so far. */
static void udp_flush(struct udp_worker *u, struct udp_sock *us)
{
    struct worker *w = us->w;
    size_t i = 0;
    int tries = 0;

    while (i < u->ntx) {
        int n = sendmmsg(us->fd, u->tx + i, (unsigned)(u->ntx - i), 0);

        if (n > 0) {
            uint64_t bytes = 0;
            int k;

            for (k = 0; k < n; k++)
                bytes += u->tx[i + (size_t)k].msg_len;
            u->out_bytes += bytes;
            STAT_ADD(&w->stats, udp_datagrams_out, n);
            /* the frame headers: the replies are counted as the output
             * queue retires them (conn_out_sent, udp_release) */
            STAT_ADD(&w->stats, bytes_written, (uint64_t)n * UDP_FRAME_HDR);
            i += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) &&
            tries++ < UDP_SEND_TRIES) {
            /* A burst of large replies filled the socket buffer. */
            struct pollfd pfd = {us->fd, POLLOUT, 0};
            (void)poll(&pfd, 1, 10);
            continue;
        }
        if (n < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
            STAT_ADD(&w->stats, udp_send_drops, u->ntx - i);
            log_debug("udp %s: send buffer full, %zu datagrams dropped",
                      us->name, u->ntx - i);
            break;
        }
        /* This datagram cannot go (unreachable peer...): skip it. */
        log_debug("udp %s: sendmmsg: %s", us->name, strerror(errno));
        STAT_INC(&w->stats, udp_send_drops);
        i++;
    }
    u->ntx = u->niov = 0;
}

/* Cut reply rp, the next rp->bytes of c's output queue, into datagrams
 * behind their frame headers; sends whenever the batch arrays fill. */
static void udp_emit(struct udp_worker *u, struct udp_sock *us,
                     const struct udp_reply *rp)
{
    const struct conn *c = u->c;
    size_t ndg = (rp->bytes + UDP_CHUNK - 1) / UDP_CHUNK;
    size_t left = rp->bytes, d;

    if (ndg == 0)
        ndg = 1;
    if (ndg > 65535) { /* cannot happen under --udp-reply-limit's maximum */
        STAT_INC(&us->w->stats, udp_send_drops);
        goto skip;
    }
    for (d = 0; d < ndg; d++) {
        struct iovec *iov;
        struct msghdr *mh;
        uint8_t *h;
        size_t room = UDP_CHUNK, k = 0;

        if (u->ntx == UDP_TX_MSGS || UDP_TX_IOVS - u->niov < UDP_DGRAM_IOVS)
            udp_flush(u, us);
        h = u->txhdr[u->ntx];
        mctext_udp_frame(h, rp->rid, (uint16_t)d, (uint16_t)ndg);
        iov = &u->txiov[u->niov];
        iov[k].iov_base = h;
        iov[k++].iov_len = UDP_FRAME_HDR;
        while (room > 0 && left > 0 && u->si < c->nseg) {
            const struct oseg *s = &c->segs[u->si];
            const uint8_t *base = s->ptr != NULL ? s->ptr : c->obuf + s->off;
            size_t take = s->len - u->soff;

            if (take > room)
                take = room;
            if (take > left) /* the next reply's text may follow in s */
                take = left;
            if (k == UDP_DGRAM_IOVS) { /* see UDP_DGRAM_IOVS: impossible */
                STAT_ADD(&us->w->stats, udp_send_drops, ndg - d);
                goto skip;
            }
            iov[k].iov_base = (void *)(base + u->soff);
            iov[k++].iov_len = take;
            room -= take;
            left -= take;
            u->soff += take;
            if (u->soff == s->len) {
                u->si++;
                u->soff = 0;
            }
        }
        mh = &u->tx[u->ntx].msg_hdr;
        memset(mh, 0, sizeof(*mh));
        mh->msg_name = (void *)rp->to;
        mh->msg_namelen = rp->tolen;
        mh->msg_iov = iov;
        mh->msg_iovlen = k;
        u->ntx++;
        u->niov += k;
    }
    return;
skip: /* the rest of this reply is not sent: move past it */
    while (left > 0 && u->si < c->nseg) {
        size_t take = c->segs[u->si].len - u->soff;

        if (take > left)
            take = left;
        left -= take;
        u->soff += take;
        if (u->soff == c->segs[u->si].len) {
            u->si++;
            u->soff = 0;
        }
    }
}

/*
 * Give back the batch's references, offering untagged hits to the mirror
 * first (the hook's contract is at its typedef in server.h): the values of
 * a datagram connection are all references (struct conn_dgram), so every
 * hit is in the queue.  Then the queue is retired as sent.
 */
static void udp_release(struct udp_worker *u, struct server *srv, bool offer)
{
    udp_hit_hook_fn hook = offer ? srv->udp_hit_hook : NULL;
    struct conn *c = u->c;
    size_t i;

    for (i = c->seghead; i < c->nseg; i++) {
        struct record *r = c->segs[i].rec;

        if (r == NULL)
            continue;
        if (hook != NULL && record_ntags(r) == 0)
            hook(srv->udp_hit_ctx, srv->store, r);
        store_release(srv->store, r);
        c->segs[i].rec = NULL;
    }
    conn_out_sent(c, c->opending);
}

/* Send every composed reply (or, out of memory, drop them all: the
 * clients retry), release, and reset the composition. */
static void udp_send(struct udp_worker *u, struct udp_sock *us)
{
    struct conn *c = u->c;
    bool failed = c->closing;
    size_t i;

    u->si = c->seghead;
    u->soff = c->headsent;
    for (i = 0; i < u->nrep && !failed; i++)
        udp_emit(u, us, &u->reps[i]);
    if (u->ntx > 0)
        udp_flush(u, us);
    udp_release(u, us->w->srv, !failed);
    u->nrep = 0;
    c->closing = false;
}

/* ---- receiving -------------------------------------------------------- */

/* Protected mode (net.c): a datagram to a non-loopback address from
 * another host is dropped unanswered (an error datagram would go to an
 * address anyone can forge) and counted. */
static bool udp_protected_drop(struct udp_worker *u, struct udp_sock *us,
                               size_t slot)
{
    struct worker *w = us->w;

    if (!w->srv->protected_mode || us->loopback ||
        addr_is_loopback((const struct sockaddr *)&u->rxaddr[slot]))
        return false;
    STAT_INC(&w->stats, udp_datagrams_in);
    STAT_INC(&w->stats, protected_mode_refusals);
    return true;
}

/*
 * One turn of a UDP socket: at most -R request datagrams (max-reqs-per-
 * event, the requests a TCP connection runs in a turn), UDP_TURN_BYTES of
 * them (the TCP read budget) and about UDP_TURN_OUT bytes of replies, then
 * the loop's other connections have their turn (docs/threads-models.md).
 * A datagram received is served in the turn that received it, so each
 * recvmmsg() asks for no more than the replies left in the turn's share
 * should take, at the reply size of the last round.  What is left waits
 * in the socket: its readiness is level-triggered (libevent) or polled
 * again at once (io_uring), so the socket is served again next turn.
 */
static void udp_sock_serve(struct udp_sock *us)
{
    struct worker *w = us->w;
    struct udp_worker *u = w->udp;
    uint64_t budget = w->srv->opt.reqs_per_event;
    uint64_t out0 = u->out_bytes;
    size_t bytes = 0;
    int round, n, i;

    for (round = 0; round < UDP_ROUNDS && budget > 0 &&
                    bytes < UDP_TURN_BYTES &&
                    u->out_bytes - out0 < UDP_TURN_OUT;
         round++) {
        uint64_t out_left = UDP_TURN_OUT - (u->out_bytes - out0);
        uint64_t before = u->out_bytes;
        int want = budget < UDP_BATCH ? (int)budget : UDP_BATCH;

        if (u->dgram_out > 0 && out_left / u->dgram_out + 1 < (uint64_t)want)
            want = (int)(out_left / u->dgram_out + 1);
        for (i = 0; i < want; i++) {
            u->rx[i].msg_hdr.msg_namelen = sizeof(u->rxaddr[i]);
            u->rx[i].msg_hdr.msg_flags = 0;
        }
        n = recvmmsg(us->fd, u->rx, (unsigned)want, MSG_DONTWAIT, NULL);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
                errno != EINTR)
                log_debug("udp %s: recvmmsg: %s", us->name, strerror(errno));
            break;
        }
        budget -= (uint64_t)n;
        for (i = 0; i < n; i++) {
            bytes += u->rx[i].msg_len;
            if (udp_protected_drop(u, us, (size_t)i))
                continue;
            udp_datagram(u, us, (size_t)i); /* may send what it composed:
                                               the slots stay valid until
                                               the next recvmmsg() */
        }
        udp_send(u, us);
        u->dgram_out = (size_t)((u->out_bytes - before) / (uint64_t)n);
        if (n < want)
            break; /* drained */
    }
    conn_bufs_release(u->c); /* back to the thread's pool until next turn */
}

static void udp_read_cb(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    udp_sock_serve(arg);
}

void udp_serve(struct worker *w)
{
    struct udp_sock *us;

    if (w->udp == NULL)
        return;
    for (us = w->udp->socks; us != NULL; us = us->next)
        udp_sock_serve(us);
}

unsigned udp_worker_fds(struct worker *w, int *fds, unsigned max)
{
    struct udp_sock *us;
    unsigned n = 0;

    if (w->udp == NULL)
        return 0;
    for (us = w->udp->socks; us != NULL && n < max; us = us->next)
        fds[n++] = us->fd;
    return n;
}

/* ---- sockets ------------------------------------------------------------ */

static struct udp_worker *udp_worker_setup(struct worker *w)
{
    struct udp_worker *u = mdc_calloc(1, sizeof(*u));
    size_t i;

    if (u == NULL)
        return NULL;
    u->rxbuf = mdc_malloc((size_t)UDP_BATCH * UDP_RX_MAX);
    /* the requests' connection: no socket; the text handler (the one of
     * any printable first byte) runs them */
    u->c = conn_setup(w->srv, w, -1, AF_UNSPEC);
    if (u->rxbuf == NULL || u->c == NULL) {
        if (u->c != NULL)
            conn_free(u->c);
        mdc_free(u->rxbuf);
        mdc_free(u);
        return NULL;
    }
    u->dg.reply_limit = (size_t)w->srv->opt.udp_reply_limit;
    u->c->dgram = &u->dg;
    u->c->proto = w->srv->proto_detect((uint8_t)'g');
    for (i = 0; i < UDP_BATCH; i++) {
        u->rxiov[i].iov_base = u->rxbuf + i * UDP_RX_MAX;
        u->rxiov[i].iov_len = UDP_RX_MAX;
        u->rx[i].msg_hdr.msg_name = &u->rxaddr[i];
        u->rx[i].msg_hdr.msg_iov = &u->rxiov[i];
        u->rx[i].msg_hdr.msg_iovlen = 1;
    }
    return u;
}

int udp_sock_add(struct worker *w, int fd, const char *name, bool loopback)
{
    struct udp_sock *us = NULL;

    if (w->udp == NULL && (w->udp = udp_worker_setup(w)) == NULL)
        goto fail;
    us = mdc_calloc(1, sizeof(*us));
    if (us == NULL)
        goto fail;
    us->w = w;
    us->fd = fd;
    us->loopback = loopback;
    snprintf(us->name, sizeof(us->name), "%s", name);
    us->ev = evloop_fd_new(w, fd, udp_read_cb, us);
    if (us->ev == NULL)
        goto fail;
    us->next = w->udp->socks;
    w->udp->socks = us;
    w->srv->nudp++;
    return 0;
fail:
    if (us != NULL) {
        mdc_free(us);
    }
    close(fd);
    return -1;
}

void udp_worker_visit(struct worker *w,
                      void (*fn)(void *ctx, const struct conn_info *ci),
                      void *ctx)
{
    struct conn_info ci;
    struct udp_sock *us;

    if (w->udp == NULL)
        return;
    memset(&ci, 0, sizeof(ci));
    ci.kind = CI_UDP;
    ci.state = "conn_read"; /* memcached's, for a UDP socket */
    for (us = w->udp->socks; us != NULL; us = us->next) {
        ci.fd = us->fd;
        snprintf(ci.addr, sizeof(ci.addr), "%s:%s",
                 us->name[0] == '[' ? "udp6" : "udp", us->name);
        fn(ctx, &ci);
    }
}

void udp_worker_close(struct worker *w)
{
    struct udp_sock *us, *next;

    if (w->udp == NULL)
        return;
    /* "stats conns" of another thread walks the list under conns_mu */
    pthread_mutex_lock(&w->conns_mu);
    us = w->udp->socks;
    w->udp->socks = NULL;
    pthread_mutex_unlock(&w->conns_mu);
    for (; us != NULL; us = next) {
        next = us->next;
        evloop_ev_free(us->ev);
        close(us->fd);
        mdc_free(us);
    }
    w->udp->socks = NULL;
}

void udp_worker_teardown(struct worker *w)
{
    struct udp_worker *u = w->udp;

    if (u == NULL)
        return;
    udp_worker_close(w);
    conn_free(u->c); /* releases what its queue still references */
    mdc_free(u->rxbuf);
    mdc_free(u->reps);
    mdc_free(u);
    w->udp = NULL;
}

/*
 * The option that balances a port over the threads' sockets
 * (MDC_UDP_REUSEPORT_LB, compat.h).  On Linux the first socket of a port
 * is bound without it and given it once bound; the others are bound with
 * it and join that one.  Bound with it, the first would share a port that
 * a socket of the same user already holds with the option: another
 * daemon's -U port, or, with -U auto, the very port the kernel picks
 * (Linux counts such a port as free for such a bind), and the two daemons
 * would split its datagrams.  Bound without it, that bind fails
 * (EADDRINUSE, as memcached's does) and auto gets a port nobody holds.
 * Elsewhere (FreeBSD's SO_REUSEPORT_LB) every socket takes it before its
 * bind, as before.
 */
#if defined(MDC_UDP_REUSEPORT_LB) && defined(__linux__)
#define UDP_REUSEPORT_LATE 1
#else
#define UDP_REUSEPORT_LATE 0
#endif

static void udp_reuseport(int fd, const char *name)
{
#ifdef MDC_UDP_REUSEPORT_LB
    int one = 1;

    if (setsockopt(fd, SOL_SOCKET, MDC_UDP_REUSEPORT_LB, &one, sizeof(one)) < 0)
        log_warn("SO_REUSEPORT on %s: %s", name, strerror(errno));
#else
    (void)fd;
    (void)name;
#endif
}

/* -U on one -l address: a socket per network thread, the kernel balancing
 * the port over them (udp_reuseport); without such an option, one socket
 * served by the first network thread. */
static int udp_listen_addr(struct server *srv, const char *spec)
{
    struct addrinfo *res = NULL, *ai;
    char uport[16], port[16], name[128];
    unsigned first = srv->nnet == 0 ? 0 : 1, last = srv->nnet, i;
    int rc = -1;

#ifndef MDC_UDP_REUSEPORT_LB
    last = first;
#endif
    if (srv->opt.udp_port == OPT_PORT_AUTO)
        snprintf(uport, sizeof(uport), "auto");
    else
        snprintf(uport, sizeof(uport), "%llu",
                 (unsigned long long)srv->opt.udp_port);
    if (addr_resolve_listen(spec, srv->opt.port, uport, AF_UNSPEC, SOCK_DGRAM,
                            "UDP address", port, sizeof(port), &res) < 0)
        goto out;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        struct sockaddr_storage sa; /* -U auto: the port the first took */
        struct addrinfo bound = *ai;

        memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
        bound.ai_addr = (struct sockaddr *)&sa;
        addr_name(ai, port, name, sizeof(name));
        for (i = first; i <= last; i++) {
            int one = 1;
            int fd =
                socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       ai->ai_protocol);

            if (fd < 0) {
                log_error("UDP socket for %s: %s", name, strerror(errno));
                goto out;
            }
            if (i != first || !UDP_REUSEPORT_LATE)
                udp_reuseport(fd, name);
            if (ai->ai_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
                                 sizeof(one));
            if (bind(fd, bound.ai_addr, bound.ai_addrlen) < 0) {
                log_error("cannot bind UDP %s: %s", name, strerror(errno));
                close(fd);
                goto out;
            }
            if (i == first && UDP_REUSEPORT_LATE) /* once bound */
                udp_reuseport(fd, name);
            if (i == first && strcmp(port, "auto") == 0) {
                /* the other threads' sockets share the port it got */
                socklen_t sl = sizeof(sa);
                if (getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 ||
                    net_bound_name(fd, ai, name, sizeof(name)) < 0) {
                    log_error("cannot read the port of UDP %s: %s", name,
                              strerror(errno));
                    close(fd);
                    goto out;
                }
                bound.ai_addrlen = sl;
                if (srv->auto_udp_port == 0)
                    srv->auto_udp_port =
                        (unsigned)atoi(strrchr(name, ':') + 1);
            }
            if (udp_sock_add(&srv->workers[i], fd, name,
                             addr_is_loopback(ai->ai_addr)) < 0) {
                log_error("out of memory for UDP %s", name);
                goto out;
            }
        }
        if (!addr_is_loopback(ai->ai_addr))
            srv->udp_public = true;
        log_info("UDP on %s (%u socket%s)", name, last - first + 1,
                 last > first ? "s" : "");
    }
    rc = 0;
out:
    if (res != NULL)
        freeaddrinfo(res);
    return rc;
}

void udp_write_names(struct server *srv, FILE *f)
{
    /* every address has a socket in the first network thread */
    struct worker *w = &srv->workers[srv->nnet == 0 ? 0 : 1];
    struct udp_sock *us;

    if (w->udp == NULL)
        return;
    for (us = w->udp->socks; us != NULL; us = us->next)
        fprintf(f, "udp %s\n", us->name);
}

int udp_listen_all(struct server *srv)
{
    size_t i;

    if (srv->opt.udp_port == 0)
        return 0;
    for (i = 0; i < srv->opt.listen.n; i++)
        if (udp_listen_addr(srv, srv->opt.listen.v[i]) < 0)
            return -1;
    return 0;
}
