/*
 * udp.c - memcached's UDP protocol (-U PORT): sockets, the batched receive
 * and send loop of a network thread, and the get/gets handler
 * (docs/protocol.md, "UDP"; udp.h).
 *
 * One turn of a socket: recvmmsg() up to UDP_BATCH datagrams; for each, check
 * the frame header and run its commands (mctext.h parses them), composing
 * every reply as a list of segments - text in the thread's buffer, values as
 * references into their records - with its length known before the first
 * datagram is built (every datagram carries the total); cut the replies into
 * datagrams of UDP_CHUNK bytes after an 8-byte header, sendmmsg() them, then
 * offer untagged hits to the XDP mirror (srv->udp_hit_hook) and release the
 * records.  Buffers belong to the thread and are reused: a GET hit allocates
 * nothing and copies no value.
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

#include <event2/event.h>

#include "server/core/alloc.h"
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
/* Composed text that triggers a send in the middle of a batch. */
#define UDP_COMPOSE_MAX 65536
/* Socket buffer full: up to this many waits of 10 ms, then drop. */
#define UDP_SEND_TRIES 10
#define UDP_TEXT_INIT 16384u
#define UDP_SEGS_INIT 256u
#define UDP_SHRINK_AT (4 * UDP_TEXT_INIT)

/* A piece of a reply: bytes of a record (ptr) or of the text buffer (off). */
struct udp_seg {
    const uint8_t *ptr;
    size_t off;
    uint32_t len;
};

/* One command's reply: segments [seg0, seg1), bytes in all, and where to. */
struct udp_reply {
    const struct sockaddr_storage *to;
    socklen_t tolen;
    uint16_t rid;
    size_t seg0, seg1;
    size_t bytes;
};

struct udp_sock {
    struct udp_sock *next;
    struct worker *w;
    int fd;
    struct event *ev;
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

    /* composition (reset after every send) */
    char *text;
    size_t textcap, textlen;
    struct udp_seg *segs;
    size_t segcap, nseg;
    struct udp_reply *reps;
    size_t repcap, nrep;
    struct record **recs; /* references held until the replies are out */
    size_t reccap, nrec;
    struct udp_reply cur; /* the reply being composed */
    size_t cur_rec0, cur_text0;
    bool cur_failed; /* out of memory: drop this reply */

    /* send */
    struct mmsghdr tx[UDP_TX_MSGS];
    struct iovec txiov[UDP_TX_IOVS];
    uint8_t txhdr[UDP_TX_MSGS][UDP_FRAME_HDR];
    size_t ntx, niov;
    uint64_t out_bytes; /* bytes sent, ever: a turn counts its share */
    size_t dgram_out;   /* reply bytes per request datagram, lately */
};

/* ---- growable per-thread arrays --------------------------------------- */

static int udp_grow(void **p, size_t *cap, size_t need, size_t elem,
                    size_t init)
{
    size_t n = *cap > 0 ? *cap : init;
    void *np;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    np = mdc_realloc(*p, n * elem);
    if (np == NULL)
        return -1;
    *p = np;
    *cap = n;
    return 0;
}

/* ---- composing a reply ------------------------------------------------ */

static void udp_reply_begin(struct udp_worker *u, size_t slot, uint16_t rid)
{
    u->cur.to = &u->rxaddr[slot];
    u->cur.tolen = u->rx[slot].msg_hdr.msg_namelen;
    u->cur.rid = rid;
    u->cur.seg0 = u->nseg;
    u->cur.bytes = 0;
    u->cur_rec0 = u->nrec;
    u->cur_text0 = u->textlen;
    u->cur_failed = false;
}

static void udp_seg_push(struct udp_worker *u, const uint8_t *ptr, size_t off,
                         size_t len)
{
    struct udp_seg *s;

    if (udp_grow((void **)&u->segs, &u->segcap, u->nseg + 1, sizeof(*s),
                 UDP_SEGS_INIT) < 0) {
        u->cur_failed = true;
        return;
    }
    s = &u->segs[u->nseg++];
    s->ptr = ptr;
    s->off = off;
    s->len = (uint32_t)len;
    u->cur.bytes += len;
}

/* Room for n bytes of text; NULL (and the reply dropped) without memory. */
static char *udp_text_reserve(struct udp_worker *u, size_t n)
{
    if (u->cur_failed || udp_grow((void **)&u->text, &u->textcap,
                                  u->textlen + n, 1, UDP_TEXT_INIT) < 0) {
        u->cur_failed = true;
        return NULL;
    }
    return u->text + u->textlen;
}

/* Commit n reserved bytes; text right after text of this reply merges. */
static void udp_text_commit(struct udp_worker *u, size_t n)
{
    struct udp_seg *last = u->nseg > u->cur.seg0 ? &u->segs[u->nseg - 1] : NULL;

    if (n == 0)
        return;
    if (last != NULL && last->ptr == NULL &&
        last->off + last->len == u->textlen) {
        last->len += (uint32_t)n;
        u->cur.bytes += n;
    } else {
        udp_seg_push(u, NULL, u->textlen, n);
    }
    u->textlen += n;
}

static void udp_text(struct udp_worker *u, const char *s, size_t n)
{
    char *p = udp_text_reserve(u, n);

    if (p == NULL)
        return;
    memcpy(p, s, n);
    udp_text_commit(u, n);
}

static void udp_str(struct udp_worker *u, const char *s)
{
    udp_text(u, s, strlen(s));
}

/* Hold r until the replies are sent; on failure r is released at once. */
static bool udp_hold(struct udp_worker *u, struct store *st, struct record *r)
{
    if (u->cur_failed || udp_grow((void **)&u->recs, &u->reccap, u->nrec + 1,
                                  sizeof(r), UDP_SEGS_INIT) < 0) {
        u->cur_failed = true;
        store_release(st, r);
        return false;
    }
    u->recs[u->nrec++] = r;
    return true;
}

/* Queue the reply for sending; false when there is nothing to send. */
static bool udp_reply_end(struct udp_worker *u, struct store *st)
{
    u->cur.seg1 = u->nseg;
    if (!u->cur_failed && u->nseg > u->cur.seg0 &&
        udp_grow((void **)&u->reps, &u->repcap, u->nrep + 1, sizeof(u->cur),
                 UDP_BATCH) < 0)
        u->cur_failed = true;
    if (u->cur_failed) {
        /* Out of memory: this reply is not sent (the client retries). */
        while (u->nrec > u->cur_rec0)
            store_release(st, u->recs[--u->nrec]);
        u->nseg = u->cur.seg0;
        u->textlen = u->cur_text0;
        return false;
    }
    if (u->nseg == u->cur.seg0)
        return false; /* noreply */
    u->reps[u->nrep++] = u->cur;
    return true;
}

/*
 * get/gets: "VALUE <key> <flags> <bytes>[ <cas>]\r\n", the value from its
 * record, "\r\n", ..., "END\r\n".  The "\r\n" after a value is written in
 * front of the next line, so text stays one segment between two values.
 */
static void udp_get(struct udp_worker *u, struct worker *w,
                    const struct mctext_req *req)
{
    struct store *st = w->srv->store;
    size_t limit = (size_t)w->srv->opt.udp_reply_limit;
    bool with_cas = req->cmd == MCT_GETS;
    bool after_value = false;
    struct mctext_iter it;
    const char *key;
    uint32_t klen;

    mctext_iter_init(&it, req);
    while (mctext_next_key(&it, &key, &klen)) {
        struct record *r;
        uint32_t vlen;
        size_t n = 0;
        char *p;

        r = store_get(st, key, klen);
        stats_count_get(&w->stats, 0, r != NULL);
        if (r == NULL)
            continue;
        vlen = record_vlen(r);
        p = udp_text_reserve(u, 2 + MCTEXT_VALUE_LINE_LEN(record_klen(r)));
        if (p == NULL) {
            store_release(st, r);
            return;
        }
        if (after_value) {
            memcpy(p, "\r\n", 2);
            n = 2;
        }
        n += mctext_value_line(p + n, record_key(r), record_klen(r),
                               record_flags(r), vlen, with_cas, record_cas(r));
        /* this value, its "\r\n" and a final "END\r\n" must fit */
        if (u->cur.bytes + n + (size_t)vlen + 2 + 5 > limit) {
            store_release(st, r);
            STAT_INC(&w->stats, udp_reply_too_large);
            udp_str(u, after_value ? "\r\n" UDP_E_TOO_LARGE : UDP_E_TOO_LARGE);
            return;
        }
        if (!udp_hold(u, st, r))
            return;
        udp_text_commit(u, n);
        if (vlen > 0)
            udp_seg_push(u, record_value(r), 0, vlen);
        after_value = true;
    }
    udp_str(u, after_value ? "\r\n" MCTEXT_R_END : MCTEXT_R_END);
}

/*
 * The commands of one request datagram (the frame header checked), each
 * answered by a reply of its own, as memcached does.  Incomplete input and
 * a line without its newline are not answered (memcached waits for more
 * bytes that UDP never brings).
 */
static void udp_commands(struct udp_worker *u, struct worker *w, size_t slot,
                         uint16_t rid, const uint8_t *buf, size_t len)
{
    struct store *st = w->srv->store;
    struct mctext_limits lim = {(uint32_t)w->srv->opt.max_item_size};
    bool answered = false;

    while (len > 0) {
        struct mctext_req req;
        ssize_t n = mctext_parse(buf, len, &lim, &req);

        if (n == MCTEXT_AGAIN || (n == MCTEXT_ERROR && req.close))
            break;
        STAT_INC(&w->stats, udp_requests);
        udp_reply_begin(u, slot, rid);
        if (n == MCTEXT_ERROR) {
            STAT_INC(&w->stats, protocol_errors);
            if (!req.noreply)
                udp_str(u, req.err);
            n = req.skip < len ? (ssize_t)req.skip : (ssize_t)len;
        } else if (req.cmd == MCT_GET || req.cmd == MCT_GETS) {
            udp_get(u, w, &req);
        } else {
            /* Not run; with noreply not answered either (memcached sends
             * nothing to noreply), so udp_refused is the trace it leaves. */
            STAT_INC(&w->stats, udp_refused);
            if (!req.noreply)
                udp_str(u, UDP_E_REFUSED);
        }
        if (udp_reply_end(u, st))
            answered = true;
        if (n <= 0)
            break;
        buf += n;
        len -= (size_t)n;
    }
    if (!answered)
        STAT_INC(&w->stats, udp_ignored);
}

/* One received datagram: the frame header, then its commands. */
static void udp_datagram(struct udp_worker *u, struct worker *w, size_t slot)
{
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
    udp_commands(u, w, slot, rid, p + UDP_FRAME_HDR, len - UDP_FRAME_HDR);
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
            STAT_ADD(&w->stats, bytes_written, bytes);
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

/* Cut reply rp into datagrams; sends whenever the batch arrays fill. */
static void udp_emit(struct udp_worker *u, struct udp_sock *us,
                     const struct udp_reply *rp)
{
    size_t ndg = (rp->bytes + UDP_CHUNK - 1) / UDP_CHUNK;
    size_t si = rp->seg0, soff = 0, d;

    if (ndg == 0)
        ndg = 1;
    if (ndg > 65535) { /* cannot happen under --udp-reply-limit's maximum */
        STAT_INC(&us->w->stats, udp_send_drops);
        return;
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
        while (room > 0 && si < rp->seg1) {
            const struct udp_seg *s = &u->segs[si];
            const uint8_t *base =
                s->ptr != NULL ? s->ptr : (const uint8_t *)u->text + s->off;
            size_t take = s->len - soff < room ? s->len - soff : room;

            if (k == UDP_DGRAM_IOVS) { /* see UDP_DGRAM_IOVS: impossible */
                STAT_ADD(&us->w->stats, udp_send_drops, ndg - d);
                return;
            }
            iov[k].iov_base = (void *)(base + soff);
            iov[k++].iov_len = take;
            room -= take;
            soff += take;
            if (soff == s->len) {
                si++;
                soff = 0;
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
}

/* Give back the batch's references, offering untagged hits to the mirror
 * first (the hook's contract is at its typedef in daemon.h). */
static void udp_release(struct udp_worker *u, struct server *srv)
{
    udp_hit_hook_fn hook = srv->udp_hit_hook;
    size_t i;

    for (i = 0; i < u->nrec; i++) {
        struct record *r = u->recs[i];

        if (hook != NULL && record_ntags(r) == 0)
            hook(srv->udp_hit_ctx, srv->store, r);
        store_release(srv->store, r);
    }
    u->nrec = 0;
}

/* Send every composed reply, release, and reset the composition buffers. */
static void udp_send(struct udp_worker *u, struct udp_sock *us)
{
    size_t i;

    for (i = 0; i < u->nrep; i++)
        udp_emit(u, us, &u->reps[i]);
    if (u->ntx > 0)
        udp_flush(u, us);
    udp_release(u, us->w->srv);
    u->nrep = u->nseg = u->textlen = 0;
    /* Give back what an exceptional burst grew. */
    if (u->textcap > UDP_SHRINK_AT) {
        mdc_free(u->text);
        u->text = NULL;
        u->textcap = 0;
    }
    if (u->segcap > 8 * UDP_SEGS_INIT) {
        mdc_free(u->segs);
        u->segs = NULL;
        u->segcap = 0;
    }
    if (u->reccap > 8 * UDP_SEGS_INIT) {
        mdc_free(u->recs);
        u->recs = NULL;
        u->reccap = 0;
    }
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
            udp_datagram(u, w, (size_t)i);
            if (u->textlen > UDP_COMPOSE_MAX)
                udp_send(u, us); /* the slots stay valid until recvmmsg */
        }
        udp_send(u, us);
        u->dgram_out = (size_t)((u->out_bytes - before) / (uint64_t)n);
        if (n < want)
            break; /* drained */
    }
}

static void udp_read_cb(evutil_socket_t fd, short what, void *arg)
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

static struct udp_worker *udp_worker_setup(void)
{
    struct udp_worker *u = mdc_calloc(1, sizeof(*u));
    size_t i;

    if (u == NULL)
        return NULL;
    u->rxbuf = mdc_malloc((size_t)UDP_BATCH * UDP_RX_MAX);
    if (u->rxbuf == NULL) {
        mdc_free(u);
        return NULL;
    }
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

    if (w->udp == NULL && (w->udp = udp_worker_setup()) == NULL)
        goto fail;
    us = mdc_calloc(1, sizeof(*us));
    if (us == NULL)
        goto fail;
    us->w = w;
    us->fd = fd;
    us->loopback = loopback;
    snprintf(us->name, sizeof(us->name), "%s", name);
    us->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, udp_read_cb, us);
    if (us->ev == NULL || event_add(us->ev, NULL) < 0)
        goto fail;
    us->next = w->udp->socks;
    w->udp->socks = us;
    w->srv->nudp++;
    return 0;
fail:
    if (us != NULL) {
        if (us->ev != NULL)
            event_free(us->ev);
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
        event_free(us->ev);
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
    while (u->nrec > 0)
        store_release(w->srv->store, u->recs[--u->nrec]);
    mdc_free(u->rxbuf);
    mdc_free(u->text);
    mdc_free(u->segs);
    mdc_free(u->reps);
    mdc_free(u->recs);
    mdc_free(u);
    w->udp = NULL;
}

/* -U on one -l address: a socket per network thread, the kernel balancing
 * the port over them (MDC_UDP_REUSEPORT_LB, compat.h); without such an
 * option, one socket served by the first network thread. */
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
#ifdef MDC_UDP_REUSEPORT_LB
            if (setsockopt(fd, SOL_SOCKET, MDC_UDP_REUSEPORT_LB, &one,
                           sizeof(one)) < 0)
                log_warn("SO_REUSEPORT on %s: %s", name, strerror(errno));
#endif
            if (ai->ai_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
                                 sizeof(one));
            if (bind(fd, bound.ai_addr, bound.ai_addrlen) < 0) {
                log_error("cannot bind UDP %s: %s", name, strerror(errno));
                close(fd);
                goto out;
            }
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
