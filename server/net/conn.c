/*
 * conn.c - client connections: buffered input, output as a queue of byte
 * ranges and record references written with sendmsg() from an iovec array
 * (send() when the output is one piece), and the edge-triggered state
 * machine a network thread runs.
 *
 * The GET fast path lives here and in proto_native.c: the response header
 * goes into obuf, the value is queued as a reference to the record and sent
 * from where it lies; the reference is released once its last byte is out.
 * A value of at most CONN_COPY_MAX is copied into obuf instead (one piece,
 * one send()).  obuf, the segment array and ibuf are lent by the thread's
 * pool while the connection has bytes to parse or to send, and given back
 * once it has none (an idle connection holds no buffer); a pooled buffer
 * is reused, so a GET hit allocates nothing (tests/test_server_alloc.c).
 */
#include "config.h"

#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "server/core/alloc.h"
#include "net.h"
#include "threads.h"
#include "transport.h"
#include "udp.h"
#include "tls.h"
#include "server/log.h"
#include "server/core/store.h"
#include "watch.h"

/* The request loop's steps (and what they do once a request), inlined
 * into the readiness path (conn_on_io) whatever the compiler's own
 * estimate: left to it, inlining the loop there made it split the steps
 * out again, at a call each. */
#define CONN_LOOP_INLINE static inline __attribute__((always_inline))

#define CONN_IBUF_INIT 16384u
#define CONN_OBUF_INIT 16384u
#define CONN_SEGS_INIT 256u
#define CONN_OBUF_SMALL 2048u /* output lent first (a reply or two) ... */
#define CONN_SEGS_SMALL 16u   /* ... with this many segments */
#define CONN_SHRINK_AT (4 * CONN_IBUF_INIT) /* shrink idle buffers above */
#define CONN_READ_BUDGET 16                  /* reads per turn, for fairness */
#define CONN_READ_BYTES_BUDGET (256u * 1024) /* and bytes read per turn */

struct conn *conn_setup(struct server *srv, struct worker *w, int fd,
                         int family)
{
    static atomic_uint_fast64_t next_id = 1;
    /* the backend's part of the connection in the same allocation */
    struct conn *c = mdc_calloc(1, sizeof(*c) + srv->xp->conn_priv);

    if (c == NULL)
        return NULL;
    c->srv = srv;
    c->owner = w;
    c->fd = fd;
    c->family = (uint8_t)family;
    c->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    c->need = 1;
    c->authed = srv->auth == NULL;
    /* no buffer yet: lent when bytes arrive or a reply is composed */
    return c;
}

/* ---- buffers lent per thread ------------------------------------------- */

/*
 * A connection holds ibuf while it has unconsumed input, its output while
 * it has output queued or in flight; otherwise they are back in its
 * owner's pool (struct conn_pool), so an idle connection costs its struct
 * alone.  Output starts small: one block of the pool holds
 * CONN_OBUF_SMALL bytes of buffer and, after them, CONN_SEGS_SMALL
 * segments (a reply or two), so lending and taking back the output of a
 * request is one pointer moved each way.  Either part moves to its full
 * size from the pool when a batch needs more (the block goes back once
 * neither part is in it): under io_uring the buffers of a reply stay lent
 * until its send completes, so one loop turn may hold one per connection
 * it answered.  The pool keeps at most conn_pool_max[k] free buffers of
 * each kind; a buffer of another size (grown for a long request or reply)
 * is freed when given back.  A take from an empty pool allocates and
 * counts conn_buffer_pool_misses.  Only the owner thread takes and gives:
 * while c->inflight a payload thread owns the buffers and may grow them
 * with malloc and realloc, never through the pool.
 */
enum conn_pool_kind {
    PK_IN,     /* input */
    PK_OUT_S,  /* the small output block: buffer, then segments */
    PK_OUT,    /* a full output buffer */
    PK_UNUSED, /* (the small segments are in PK_OUT_S's block) */
    PK_SEGS    /* a full segment array */
};
#define CONN_OBLOCK (CONN_OBUF_SMALL + CONN_SEGS_SMALL * sizeof(struct oseg))

static const size_t conn_pool_size[CONN_POOL_KINDS] = {
    CONN_IBUF_INIT, CONN_OBLOCK, CONN_OBUF_INIT, 0,
    CONN_SEGS_INIT * sizeof(struct oseg)};
/* the small ones are what a turn of many connections holds at once */
static const unsigned conn_pool_max[CONN_POOL_KINDS] = {16, CONN_POOL_MAX, 16,
                                                        0, 16};

/* An empty pool: allocate (counted as a miss). */
static void *conn_pool_miss(struct worker *w, enum conn_pool_kind k)
{
    void *p = mdc_malloc(conn_pool_size[k]);

    if (p != NULL)
        STAT_INC(&w->stats, conn_buffer_pool_misses);
    return p;
}

static inline void *conn_pool_get(struct worker *w, enum conn_pool_kind k)
{
    struct conn_pool *pl = &w->pool;

    if (__builtin_expect(pl->n[k] > 0, 1))
        return pl->free[k][--pl->n[k]];
    return conn_pool_miss(w, k);
}

/* Give p (of size bytes) back: pooled if it is of kind k's size. */
static inline void conn_pool_put(struct worker *w, enum conn_pool_kind k,
                                 void *p, size_t size)
{
    struct conn_pool *pl = &w->pool;

    if (__builtin_expect(size == conn_pool_size[k] &&
                             pl->n[k] < conn_pool_max[k], 1))
        pl->free[k][pl->n[k]++] = p;
    else
        mdc_free(p);
}

static inline void conn_lent_add(struct worker *w, int d)
{
    __atomic_store_n(&w->pool.lent,
                     __atomic_load_n(&w->pool.lent, __ATOMIC_RELAXED) +
                         (uint64_t)(int64_t)d,
                     __ATOMIC_RELAXED);
}

/* A buffer of size bytes for a part of kind k: the pool's when it is
 * of the pool's size and pooled is true (the owner thread; a payload
 * thread never takes from the pool), else allocated (a long request or
 * reply: its own size; pooled once given back if of the pool's). */
static void *conn_buf_new(struct worker *w, enum conn_pool_kind k,
                          size_t size, bool pooled)
{
    if (pooled && size == conn_pool_size[k])
        return conn_pool_get(w, k);
    return mdc_malloc(size);
}

/* Lend c an input buffer of at least want bytes; -1 out of memory. */
static int conn_in_take(struct conn *c, size_t want)
{
    size_t cap = want > CONN_IBUF_INIT ? want : CONN_IBUF_INIT;
    uint8_t *b = conn_buf_new(c->owner, PK_IN, cap, true);

    if (b == NULL)
        return -1;
    conn_lent_add(c->owner, 1);
    c->ibuf = b;
    c->icap = cap;
    c->ioff = c->ilen = 0;
    return 0;
}

/* Give the input buffer back (no unconsumed input). */
static void conn_in_give(struct conn *c)
{
    if (c->ibuf == NULL)
        return;
    if (c->in_ext) {
        /* the backend's buffer (it takes it back) or the pool's own */
        c->in_ext = 0;
    } else {
        conn_pool_put(c->owner, PK_IN, c->ibuf, c->icap);
        conn_lent_add(c->owner, -1);
    }
    c->ibuf = NULL;
    c->icap = c->ioff = c->ilen = 0;
    c->iscan = 0;
}

static inline int conn_out_lend(struct conn *c)
{
    uint8_t *b;

    if (c->obuf != NULL) /* the buffer and the segments come together */
        return 0;
    b = conn_pool_get(c->owner, PK_OUT_S);
    if (b == NULL)
        return -1;
    conn_lent_add(c->owner, 1);
    c->obuf = b;
    c->ocap = CONN_OBUF_SMALL;
    c->olen = 0;
    c->segs = (struct oseg *)(b + CONN_OBUF_SMALL);
    c->segcap = CONN_SEGS_SMALL;
    return 0;
}

int conn_out_take(struct conn *c) { return conn_out_lend(c); }

/* The small output block's start while a part of the output is in it. */
static uint8_t *conn_oblock(const struct conn *c)
{
    return c->ocap == CONN_OBUF_SMALL
               ? c->obuf
               : (uint8_t *)c->segs - CONN_OBUF_SMALL;
}

/* One part of the output left the small block (the other one is at its
 * full size already): the block goes back (freed by a payload thread,
 * which never gives to the pool). */
static void conn_oblock_drop(struct conn *c, uint8_t *block)
{
    if (c->inflight)
        mdc_free(block);
    else
        conn_pool_put(c->owner, PK_OUT_S, block, CONN_OBLOCK);
}

/* A byte buffer c owns (ibuf, obuf; never one lent in place, in_ext, nor
 * the small output block) reallocated to ncap bytes, larger or smaller:
 * 0, or -1 out of memory (the buffer as it was).  Given back, it is pooled
 * only if ncap is the pool's size (conn_pool_put), and conn_mem() counts
 * it through *cap. */
static int conn_buf_resize(uint8_t **buf, size_t *cap, size_t ncap)
{
    uint8_t *nb = mdc_realloc(*buf, ncap);

    if (nb == NULL)
        return -1;
    *buf = nb;
    *cap = ncap;
    return 0;
}

/* The same, grown to hold need bytes: doubled, or to need if that is
 * more, so that a run of appends costs a logarithmic number of copies. */
static int conn_buf_grow(uint8_t **buf, size_t *cap, size_t need)
{
    size_t ncap = *cap * 2;

    return conn_buf_resize(buf, cap, ncap < need ? need : ncap);
}

/* Output buffer of at least need bytes: the small one moves to the full
 * size from the pool (owner thread) or allocated (in a payload thread, or
 * beyond the full size); a full one grows with realloc.  0, or -1 out of
 * memory. */
static int conn_out_grow(struct conn *c, size_t need)
{
    size_t cap;
    uint8_t *nb;

    if (c->ocap != CONN_OBUF_SMALL)
        return conn_buf_grow(&c->obuf, &c->ocap, need);
    cap = need > CONN_OBUF_INIT ? need : CONN_OBUF_INIT;
    nb = conn_buf_new(c->owner, PK_OUT, cap, !c->inflight);
    if (nb == NULL)
        return -1;
    memcpy(nb, c->obuf, c->olen);
    if (c->segcap != CONN_SEGS_SMALL)
        conn_oblock_drop(c, c->obuf);
    c->obuf = nb;
    c->ocap = cap;
    return 0;
}

/* The segment array, one size up (as conn_out_grow()). */
static int conn_segs_grow(struct conn *c)
{
    size_t cap = c->segcap == CONN_SEGS_SMALL ? CONN_SEGS_INIT : c->segcap * 2;
    struct oseg *ns;

    if (c->segcap != CONN_SEGS_SMALL) {
        ns = mdc_realloc(c->segs, cap * sizeof(*ns));
        if (ns == NULL)
            return -1;
    } else {
        ns = conn_buf_new(c->owner, PK_SEGS, cap * sizeof(*ns),
                          !c->inflight);
        if (ns == NULL)
            return -1;
        memcpy(ns, c->segs, c->nseg * sizeof(*ns));
        if (c->ocap != CONN_OBUF_SMALL)
            conn_oblock_drop(c, conn_oblock(c));
    }
    c->segs = ns;
    c->segcap = cap;
    return 0;
}

/* Give the output buffer and the segment array back (nothing queued, no
 * send in flight). */
static void conn_out_give_grown(struct conn *c);
static inline void conn_out_give(struct conn *c)
{
    if (c->obuf == NULL)
        return;
    if (c->ocap != CONN_OBUF_SMALL || c->segcap != CONN_SEGS_SMALL) {
        conn_out_give_grown(c);
        return;
    }
    conn_pool_put(c->owner, PK_OUT_S, c->obuf, CONN_OBLOCK);
    conn_lent_add(c->owner, -1);
    c->obuf = NULL;
    c->segs = NULL;
    c->segcap = 0;
    c->ocap = c->olen = 0;
}

/* The same, a part of the output grown out of the small block. */
static void conn_out_give_grown(struct conn *c)
{
    struct worker *w = c->owner;
    /* each full part back on its own, then the block if a part is still
     * in it */
    bool small = c->ocap == CONN_OBUF_SMALL || c->segcap == CONN_SEGS_SMALL;
    uint8_t *block = small ? conn_oblock(c) : NULL;

    if (c->ocap != CONN_OBUF_SMALL)
        conn_pool_put(w, PK_OUT, c->obuf, c->ocap);
    if (c->segcap != CONN_SEGS_SMALL)
        conn_pool_put(w, PK_SEGS, c->segs, c->segcap * sizeof(*c->segs));
    if (block != NULL)
        conn_pool_put(w, PK_OUT_S, block, CONN_OBLOCK);
    conn_lent_add(w, -1);
    c->obuf = NULL;
    c->segs = NULL;
    c->segcap = 0;
    c->ocap = c->olen = 0;
}

/* Whatever c does not need now goes back to the pool (owner thread). */
CONN_LOOP_INLINE void conn_bufs_idle(struct conn *c)
{
    if (c->inflight)
        return;
    if (c->ibuf != NULL && c->ilen == c->ioff)
        conn_in_give(c);
    if (c->obuf != NULL && c->seghead == c->nseg && !c->wr_busy) {
        c->nseg = c->seghead = c->headsent = 0;
        conn_out_give(c);
    }
}

void conn_bufs_release(struct conn *c) { conn_bufs_idle(c); }

int conn_bufs_take(struct conn *c)
{
    if (c->ibuf == NULL && conn_in_take(c, CONN_IBUF_INIT) < 0)
        return -1;
    return conn_out_take(c);
}

/* The pool's free input buffer c reads into in place (CONN_IN_POOL)
 * becomes c's: taken off the free list.  It is the top one unless
 * another connection gave one back meanwhile. */
static bool conn_in_keep(struct conn *c)
{
    struct conn_pool *pl = &c->owner->pool;
    unsigned i = pl->n[PK_IN];

    while (i > 0 && pl->free[PK_IN][i - 1] != c->ibuf)
        i--;
    if (i == 0) { /* not there: never happens (copied then) */
        log_error("conn %llu: input buffer not in the pool",
                  (unsigned long long)c->id);
        return false;
    }
    pl->free[PK_IN][i - 1] = pl->free[PK_IN][pl->n[PK_IN] - 1];
    pl->n[PK_IN]--;
    conn_lent_add(c->owner, 1);
    return true;
}

/* Input read or lent in place (in_ext) that a partial request leaves:
 * the pool's buffer becomes c's, the backend's is copied into a buffer
 * of the pool before the backend takes it back.  -1 out of memory. */
static int conn_in_settle_slow(struct conn *c)
{
    const uint8_t *p = c->ibuf + c->ioff;
    size_t avail = c->ilen - c->ioff;
    bool pool = c->in_ext == CONN_IN_POOL;

    c->in_ext = 0;
    if (pool && avail > 0 && conn_in_keep(c))
        return 0;
    c->ibuf = NULL;
    c->icap = c->ilen = c->ioff = 0;
    if (avail == 0)
        return 0;
    if (conn_in_take(c, c->need > avail ? c->need : avail) < 0)
        return -1;
    memcpy(c->ibuf, p, avail);
    c->ilen = avail;
    return 0;
}

static inline int conn_in_settle(struct conn *c)
{
    if (!c->in_ext)
        return 0;
    if (c->in_ext == CONN_IN_POOL && c->ilen == c->ioff) {
        /* all parsed: the pool's buffer was never taken */
        c->in_ext = 0;
        c->ibuf = NULL;
        c->icap = c->ioff = c->ilen = 0;
        return 0;
    }
    return conn_in_settle_slow(c);
}

void conn_pool_free(struct worker *w)
{
    unsigned k;

    for (k = 0; k < CONN_POOL_KINDS; k++)
        while (w->pool.n[k] > 0)
            mdc_free(w->pool.free[k][--w->pool.n[k]]);
}

int conn_adopt(struct conn *c)
{
    struct worker *w = c->owner;
    int rc = -1;

    if (c->srv->xp->adopt(c) < 0)
        goto out;
    c->adopted = true;
    /* milliseconds, not w->now: the tick's seconds may be a second
     * behind, and a timeout must not fire early (conn_tick) */
    c->born = server_coarse_ms();
    __atomic_store_n(&c->last_active, c->born, __ATOMIC_RELAXED);
    pthread_mutex_lock(&w->conns_mu);
    c->link.prev = NULL;
    c->link.next = w->conns;
    if (w->conns != NULL)
        w->conns->link.prev = c;
    w->conns = c;
    w->nconns++;
    pthread_mutex_unlock(&w->conns_mu);
    /* No read yet: registering polls the socket and reports data that
     * already waits, so a read now could only return EAGAIN. */
    c->rd_ready = false;
    c->wr_ready = true;
    rc = 0;
out:
    return rc;
}

/* "ip", "port" and "tcp"/"local" of c's peer, as memcached's connevents
 * lines name them. */
static void conn_peer(const struct conn *c, char *ip, size_t iplen,
                      unsigned *port, const char **transport)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    snprintf(ip, iplen, "unix");
    *port = 0;
    *transport = "local";
    if (c->fd < 0 || getpeername(c->fd, (struct sockaddr *)&ss, &sl) < 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &s4->sin_addr, ip, (socklen_t)iplen);
        *port = ntohs(s4->sin_port);
        *transport = "tcp";
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, (socklen_t)iplen);
        *port = ntohs(s6->sin6_port);
        *transport = "tcp";
    }
}

void conn_watch_event(struct conn *c, bool open)
{
    char ip[64];
    unsigned port;
    const char *tr;

    conn_peer(c, ip, sizeof(ip), &port, &tr);
    if (open)
        watch_log(c->srv, WATCH_CONNEVENTS,
                  "type=conn_new rip=%s rport=%u transport=%s cfd=%d", ip,
                  port, tr, c->fd);
    else
        watch_log(c->srv, WATCH_CONNEVENTS,
                  "type=conn_close rip=%s rport=%u transport=%s reason=%s "
                  "cfd=%d",
                  ip, port, tr,
                  c->closing || c->rd_shut ? "normal" : "error", c->fd);
}

void conn_teardown(struct conn *c)
{
    struct worker *w = c->owner;
    bool deferred;

    if (c->watch_types != 0 && c->opending == 0 && c->fd >= 0) {
        /* "watch": the socket (a dup) goes on as a watcher, its OK sent;
         * this connection ends */
        int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);

        if (fd >= 0)
            (void)watch_adopt(c->srv, fd, c->watch_types);
    } else if (watch_wants(c->srv, WATCH_CONNEVENTS)) {
        conn_watch_event(c, false);
    }
    deferred = c->srv->xp->close(c); /* c's events or operations */

    if (c->adopted) {
        pthread_mutex_lock(&w->conns_mu);
        if (c->link.prev != NULL)
            c->link.prev->link.next = c->link.next;
        else
            w->conns = c->link.next;
        if (c->link.next != NULL)
            c->link.next->link.prev = c->link.prev;
        w->nconns--;
        pthread_mutex_unlock(&w->conns_mu);
        if (w->stopping && w->nconns == 0)
            c->srv->xp->done(w);
    }
    atomic_fetch_sub(&c->srv->nconns, 1);
    STAT_INC(&w->stats, closed_connections);
    log_debug("conn %llu closed", (unsigned long long)c->id);
    /* io_uring: operations still in flight reference the buffers and the
     * records; the ring frees the connection when the last one is done */
    if (deferred)
        return;
    conn_free(c);
}

void conn_free(struct conn *c)
{
    size_t i;

    c->srv->xp->release(c); /* its filter's state too (a close_notify) */
    for (i = c->seghead; i < c->nseg; i++)
        if (c->segs[i].rec != NULL)
            store_release(c->srv->store, c->segs[i].rec);
    if (c->fd >= 0)
        close(c->fd);
    c->ilen = c->ioff = 0;
    conn_in_give(c);
    conn_out_give(c);
    mdc_free(c);
}

size_t conn_mem(const struct conn *c)
{
    return sizeof(*c) + (c->in_ext ? 0 : c->icap) + c->ocap +
           c->segcap * sizeof(*c->segs);
}


/* ---- input ------------------------------------------------------------ */

void conn_in_apply_skip(struct conn *c)
{
    size_t avail = c->ilen - c->ioff;
    size_t k = c->skip < avail ? (size_t)c->skip : avail;

    conn_in_consume(c, k);
    c->skip -= k;
}

void conn_in_skip(struct conn *c, uint64_t n)
{
    c->skip += n;
    conn_in_apply_skip(c);
    c->need = 1;
}

/* Shrink an idle oversized input buffer; move the unconsumed bytes to
 * the front when the room behind them runs short. */
static void conn_in_compact(struct conn *c, size_t avail, size_t want)
{
    if (avail == 0 && c->icap > CONN_SHRINK_AT && want <= CONN_IBUF_INIT)
        (void)conn_buf_resize(&c->ibuf, &c->icap, CONN_IBUF_INIT);
    if (c->ioff > 0 && (c->icap - c->ilen < CONN_IBUF_INIT / 4 ||
                        c->icap - c->ioff < want)) {
        memmove(c->ibuf, c->ibuf + c->ioff, avail);
        c->ilen = avail;
        c->ioff = 0;
    }
}

/* Grow the input buffer towards want; -1 when it may not (before login)
 * or cannot. */
static int conn_in_grow(struct conn *c, size_t avail, size_t want)
{
    /* before login the input never grows past its bound: the caller
     * closes the connection (it is not read from while its output is
     * full, so only io_uring receives already under way get here) */
    if (!c->authed && c->icap >= CONN_PREAUTH_IN) {
        log_debug("conn %llu: %zu bytes of input before authentication, "
                  "closed",
                  (unsigned long long)c->id, avail);
        return -1;
    }
    /* an exact total (a value's data block) gets just that; "one more
     * byte" (a line without its newline yet) doubles, so a long line
     * costs a logarithmic number of reallocations and full reads */
    if (want > c->icap && want > avail + 1)
        return conn_buf_resize(&c->ibuf, &c->icap, want);
    return conn_buf_grow(&c->ibuf, &c->icap, want);
}

/*
 * Make room for the next read: compact, shrink an idle oversized buffer,
 * or grow towards c->need (bounded by the protocol's body limit, which the
 * parser enforced before setting need).  Returns free bytes at the end.
 */
static size_t conn_in_make_room(struct conn *c)
{
    size_t avail = c->ilen - c->ioff;
    size_t want = c->need > avail ? c->need : avail + 1;

    if (c->in_ext && conn_in_settle(c) < 0)
        return 0;
    if (c->ibuf == NULL) /* lent from the pool as bytes arrive */
        return conn_in_take(c, want) < 0 ? 0 : c->icap;
    conn_in_compact(c, avail, want);
    if ((c->ilen == c->icap || c->icap < want) &&
        conn_in_grow(c, avail, want) < 0)
        return 0;
    return c->icap - c->ilen;
}

/* Nothing buffered: the read goes into the pool's top free input buffer
 * where it lies, not taken (CONN_IN_POOL).  The requests are parsed
 * there, and the loop takes the buffer only if a partial one is left
 * when it rests (conn_in_settle), so a request read and answered in one
 * turn costs no take and no give.  Only a read made by the owner on its
 * own turn does so: nothing else of the thread runs until the loop
 * rests. */
size_t conn_in_room(struct conn *c)
{
    const struct conn_pool *pl = &c->owner->pool;

    if (c->in_ext == CONN_IN_POOL && c->ilen == c->ioff &&
        c->need <= CONN_IBUF_INIT) {
        c->ioff = c->ilen = 0; /* all parsed: read into it again */
        return CONN_IBUF_INIT;
    }
    if (c->ibuf != NULL || pl->n[PK_IN] == 0 || c->need > CONN_IBUF_INIT ||
        c->inflight)
        return conn_in_make_room(c);
    c->ibuf = pl->free[PK_IN][pl->n[PK_IN] - 1];
    c->icap = CONN_IBUF_INIT;
    c->ioff = c->ilen = 0;
    c->iscan = 0;
    c->in_ext = CONN_IN_POOL;
    return CONN_IBUF_INIT;
}

int conn_in_append(struct conn *c, const void *p, size_t n)
{
    const uint8_t *b = p;

    conn_in_arrived(c, n);
    while (n > 0) {
        size_t room = conn_in_make_room(c);
        size_t k = n < room ? n : room;

        if (room == 0)
            return -1;
        memcpy(c->ibuf + c->ilen, b, k);
        c->ilen += k;
        if (c->skip > 0)
            conn_in_apply_skip(c);
        b += k;
        n -= k;
    }
    return 0;
}

void conn_in_lend(struct conn *c, const uint8_t *p, size_t n)
{
    c->ibuf = (uint8_t *)p; /* the ring's buffer: writable memory */
    c->icap = c->ilen = n;
    c->ioff = 0;
    c->iscan = 0;
    c->in_ext = CONN_IN_BACKEND;
    conn_in_arrived(c, n);
    if (c->skip > 0)
        conn_in_apply_skip(c);
}

/* ---- output ------------------------------------------------------------ */

/* The slow paths of conn.h's inline output appends: lend the output, grow
 * the segment array or the buffer. */
int conn_seg_room(struct conn *c)
{
    if (c->segs == NULL && conn_out_take(c) < 0)
        return -1;
    if (c->nseg == c->segcap && conn_segs_grow(c) < 0)
        return -1;
    return 0;
}

uint8_t *conn_out_reserve_slow(struct conn *c, size_t n)
{
    /* taken before process() runs (conn_run); here for a reply composed
     * outside it */
    if (c->obuf == NULL && conn_out_take(c) < 0) {
        c->closing = true;
        return NULL;
    }
    if (c->ocap - c->olen < n && conn_out_grow(c, c->olen + n) < 0) {
        c->closing = true;
        return NULL;
    }
    return c->obuf + c->olen;
}

int conn_out_ref(struct conn *c, const void *p, size_t len,
                 struct record *rec)
{
    struct oseg s = {p, rec, 0, (uint32_t)len};

    /* the small buffer counts as the full one it moves to */
    if (len <= CONN_COPY_MAX && len > 0 && c->dgram == NULL &&
        len <= (c->ocap == CONN_OBUF_SMALL ? CONN_OBUF_INIT : c->ocap) -
                   c->olen) {
        int rc = conn_out_bytes(c, p, len);

        if (rec != NULL)
            store_release(c->srv->store, rec);
        return rc;
    }
    /* a datagram connection keeps every record, an empty value's too,
     * until its owner has sent the reply (struct conn_dgram) */
    if (len == 0 && c->dgram == NULL) {
        if (rec != NULL)
            store_release(c->srv->store, rec);
        return 0;
    }
    if (conn_seg_push(c, &s) < 0) {
        if (rec != NULL)
            store_release(c->srv->store, rec);
        c->closing = true;
        return -1;
    }
    return 0;
}

/* Forget sent output; give back buffers grown by an exceptional burst. */
static void conn_out_reset(struct conn *c)
{
    c->nseg = c->seghead = c->headsent = 0;
    c->olen = 0;
    if (c->ocap > CONN_SHRINK_AT)
        (void)conn_buf_resize(&c->obuf, &c->ocap, CONN_OBUF_INIT);
    if (c->segcap > 8 * CONN_SEGS_INIT) {
        struct oseg *ns = mdc_realloc(c->segs, CONN_SEGS_INIT * sizeof(*ns));
        if (ns != NULL) {
            c->segs = ns;
            c->segcap = CONN_SEGS_INIT;
        }
    }
}

/* Retire n sent bytes from the head of the output queue. */
static void conn_out_advance(struct conn *c, size_t n)
{
    while (n > 0) {
        struct oseg *s = &c->segs[c->seghead];
        size_t left = s->len - c->headsent;

        if (n < left) {
            c->headsent += n;
            break;
        }
        n -= left;
        if (s->rec != NULL)
            store_release(c->srv->store, s->rec);
        c->seghead++;
        c->headsent = 0;
    }
}

void conn_out_sent(struct conn *c, size_t n)
{
    STAT_ADD(&c->owner->stats, bytes_written, n);
    c->opending -= n;
    if (n > 0)
        c->blocked_since = 0;
    conn_out_advance(c, n);
    if (c->seghead == c->nseg)
        conn_out_reset(c);
}

/* ---- state machine ------------------------------------------------------ */

/*
 * The request loop, one named step at a time.  conn_next() reads c's
 * flags and says what the loop does next; conn_run() runs that in one
 * switch.  Between its calls the turn's step (enum conn_step in
 * struct conn_turn) says what the backend did meanwhile.  The flags stay
 * what they are: facts set where they become true (a readiness edge, a
 * short read, a protocol asking to close), not a state to keep in step.
 */
enum conn_next {
    CN_SEND,    /* output to send: the backend sends, then calls again */
    CN_SERVE,   /* a whole request is in: run the protocol (or hand off) */
    CN_READ,    /* the socket may have input: the backend reads */
    CN_REQUEUE, /* the turn's read budget is spent: a later turn reads on */
    CN_KILL,    /* closing or shut with nothing left to send: close */
    CN_REST,    /* nothing to do before the next event */
};

/* A whole request waits and may run now. */
CONN_LOOP_INLINE bool conn_has_work(const struct conn *c)
{
    size_t avail = c->ilen - c->ioff;

    return avail > 0 && avail >= c->need && !c->closing &&
           c->hold_until == 0 && !c->wr_busy && !conn_out_full(c);
}

/* conn_next() with no request to run: read, rest or close. */
CONN_LOOP_INLINE enum conn_next
conn_next_idle(struct conn *c, const struct conn_turn *t)
{
    /* The peer hung up during a failed login's hold (conn_hold): its
     * requests would never be answered, so its -c slot goes now, not
     * when the hold ends (a connect, wrong AUTH, close loop would fill
     * -c otherwise).  The io_uring receive sees the EOF or the reset
     * itself (its peer_gone says no). */
    if (c->hold_until != 0 && c->rd_ready && c->srv->xp->peer_gone(c))
        c->rd_shut = true;
    if (c->closing || c->rd_shut)
        return c->opending == 0 ? CN_KILL : CN_REST;
    if (!c->rd_ready || c->hold_until != 0 || conn_out_full(c))
        return CN_REST;
    /* Let the other connections of this loop have a turn past the
     * budget (rd_ready stays: the next turn reads on). */
    if (t->reads >= CONN_READ_BUDGET || t->rbytes >= CONN_READ_BYTES_BUDGET)
        return CN_REQUEUE;
    return CN_READ;
}

CONN_LOOP_INLINE enum conn_next
conn_next(struct conn *c, const struct conn_turn *t)
{
    /* Output to send: the caller (the backend) sends it, then calls
     * again, which goes on from here without sending again (CT_SENT).
     * conn.c never calls the backend's flush from the loop. */
    if (c->opending > 0 && c->wr_ready && t->step != CT_SENT)
        return CN_SEND;
    if (conn_has_work(c))
        return CN_SERVE;
    return conn_next_idle(c, t);
}

/* conn_run()'s own codes beside CONN_RUN_*: go on with the next step;
 * close c; -R requests ran (conn_serve): rest, sending what they left. */
enum { CONN_RUN_AGAIN = 16, CONN_RUN_KILL = -16, CONN_RUN_YIELD = 17 };

/* Hand c to another thread (a payload thread, or the thread a parked
 * request waits for): c is theirs until it comes back through the inbox
 * (conn_returned).  Input lent in place is copied out first. */
static int conn_hand_off(struct conn *c)
{
    if (conn_in_settle(c) < 0)
        return CONN_RUN_KILL;
    c->inflight = true;
    return CONN_RUN_DONE;
}

/* CN_SERVE: run the protocol on c's input (or hand c to a payload
 * thread).  Inlined into the loop, which enters it once a request; the
 * turn (struct conn_turn) is not passed down: the loop keeps it in
 * registers. */
CONN_LOOP_INLINE int conn_serve(struct conn *c)
{
    struct worker *w = c->owner;

    /* the protocol, from the first byte (there is one: conn_has_work) */
    if (c->proto == NULL)
        c->proto = c->srv->proto_detect(c->ibuf[c->ioff]);
    /* the reply's buffers, lent before anyone composes into them (a
     * payload thread never takes from the pool) */
    if (conn_out_lend(c) < 0)
        return CONN_RUN_KILL;
    if (w->payload_q != NULL) {
        if (conn_hand_off(c) == CONN_RUN_KILL)
            return CONN_RUN_KILL;
        STAT_INC(&w->stats, payload_handoffs);
        mq_push(w->payload_q, &c->qnode);
        return CONN_RUN_DONE;
    }
    __atomic_store_n(&c->state, CS_PARSE, __ATOMIC_RELAXED);
    c->proto->process(c, w);
    if (c->park != NULL) {
        /* the request waits for another thread */
        if (conn_hand_off(c) == CONN_RUN_KILL)
            return CONN_RUN_KILL;
        conn_park_run(c);
        return CONN_RUN_DONE;
    }
    if (!c->yielded)
        return CONN_RUN_AGAIN;
    c->yielded = false;
    if (c->closing)
        return CONN_RUN_AGAIN;
    /* -R requests done: send what they produced and give the loop to
     * the other connections (memcached's reqs_per_event, conn_yields).
     * It is active while it has requests to run, though it reads nothing
     * until they are done: --idle-timeout counts from here too (a slow
     * daemon serving a deep pipeline at -R 2 took more than the timeout
     * over input it had read at once, and closed a busy connection) */
    conn_touch(c);
    STAT_INC(&w->stats, conn_yields);
    c->srv->xp->requeue(c);
    return CONN_RUN_YIELD;
}

/* What "stats conns" shows for c at rest. */
static uint8_t conn_rest_state(const struct conn *c, bool send_last)
{
    if (c->closing)
        return CS_CLOSING;
    if (c->opending > 0 && (!c->wr_ready || send_last))
        return CS_MWRITE;
    if (c->need_body && c->ilen - c->ioff < c->need)
        return CS_NREAD;
    return CS_WAITING;
}

/* CN_REST: the loop is done for this turn.  What c does not need goes
 * back to the pool; output a yield left is sent after the loop
 * (send_last: CONN_RUN_SEND, the caller's turn ends there, CT_LAST).
 * Inlined where the loop rests after a request (CN_REST), called
 * (conn_rest) where it rests otherwise. */
CONN_LOOP_INLINE int conn_rest_here(struct conn *c, bool send_last)
{
    if (conn_in_settle(c) < 0)
        return CONN_RUN_KILL;
    conn_bufs_idle(c);
    __atomic_store_n(&c->state, conn_rest_state(c, send_last),
                     __ATOMIC_RELAXED);
    if (!conn_out_full(c)) {
        c->paused = false;
    } else if (!c->paused) {
        c->paused = true;
        STAT_INC(&c->owner->stats, output_paused);
        log_debug("conn %llu paused: %zu bytes pending",
                  (unsigned long long)c->id, c->opending);
    }
    return send_last ? CONN_RUN_SEND : CONN_RUN_DONE;
}

static int conn_rest(struct conn *c, bool send_last)
{
    return conn_rest_here(c, send_last);
}

/* The read CONN_RUN_READ asked for is in t->rd: 0 go on (its bytes
 * counted in the turn's budget), -1 close. */
CONN_LOOP_INLINE int conn_resume_read(const struct conn *c,
                                      struct conn_turn *t)
{
    if (t->rd < 0)
        return -1;
    if (c->ilen - c->ioff > t->rd_before)
        t->rbytes += c->ilen - c->ioff - t->rd_before;
    return 0;
}

/* A new turn: the byte filter's handshake (TLS) first while it is
 * pending.  0 go on, -1 close, 1 the turn is over (waiting for the
 * socket: the backend watches it). */
CONN_LOOP_INLINE int conn_resume_start(struct conn *c)
{
    int r;

    if (!c->hs_pending)
        return 0;
    r = c->srv->xp->start(c);
    if (r <= 0)
        return r < 0 ? -1 : 1;
    c->rd_ready = true; /* a request may have come with the Finished */
    return 0;
}

/* The backend is back from the step it was asked for: 0 go on, -1 close,
 * 1 the turn is over. */
CONN_LOOP_INLINE int conn_resume(struct conn *c, struct conn_turn *t)
{
    if (t->step == CT_READ) /* the read CONN_RUN_READ asked for */
        return conn_resume_read(c, t);
    if (t->step == CT_LAST) /* the send after a yield is made */
        return 1;
    if (t->step != CT_START)
        return 0; /* CT_SENT, CT_RUN: on past the send */
    return conn_resume_start(c);
}

/* One step of the loop: what conn_next() names, done. */
CONN_LOOP_INLINE int conn_step(struct conn *c, struct conn_turn *t)
{
    enum conn_next nx = conn_next(c, t);
    int r;

    t->step = CT_RUN;
    switch (nx) {
    case CN_SEND:
        t->step = CT_SENT;
        return CONN_RUN_SEND;
    case CN_READ:
        t->reads++;
        t->rd_before = c->ilen - c->ioff;
        t->step = CT_READ;
        return CONN_RUN_READ;
    case CN_SERVE:
        r = conn_serve(c);
        if (r != CONN_RUN_YIELD)
            return r;
        r = conn_rest(c, c->opending > 0 && c->wr_ready);
        if (r == CONN_RUN_SEND)
            t->step = CT_LAST;
        return r;
    case CN_REQUEUE:
        t->reads++;
        c->rd_short = false;
        c->srv->xp->requeue(c);
        return conn_rest(c, false);
    case CN_REST:
        return conn_rest_here(c, false);
    default:
        return CONN_RUN_KILL;
    }
}

/* One run of the loop's steps, up to what the backend is asked for. */
CONN_LOOP_INLINE int conn_steps(struct conn *c, struct conn_turn *t)
{
    int r;

    do
        r = conn_step(c, t);
    while (r == CONN_RUN_AGAIN);
    return r;
}

int conn_run(struct conn *c, struct conn_turn *t)
{
    int r;

    if (c->inflight)
        return CONN_RUN_DONE;
    if (c->dead || (r = conn_resume(c, t)) < 0)
        goto kill;
    if (r > 0)
        return CONN_RUN_DONE;
    r = conn_steps(c, t);
    if (r != CONN_RUN_KILL)
        return r;
kill:
    conn_teardown(c);
    return CONN_RUN_GONE;
}

/* conn_run() with the backend's read and flush through its table: the one
 * drive loop, run by the backends on readiness or a completion (epoll.c,
 * uring_conn.c) and by the callers outside them (a payload thread's
 * hand-back, the tick, shutdown, tests).  The read and the send are made
 * here, between the loop's runs, never from inside them, so the request
 * loop never re-enters the backend that runs it (conn_run's comment).
 * conn_run()'s resume is spelt out where each step comes back (a read, a
 * send), so the turn's step is not tested again, and the turn stays in
 * registers: a W1 request enters the loop three times (read; serve, then
 * send; rest).  Inlined into the readiness path (conn_on_io).  May free
 * c. */
CONN_LOOP_INLINE void conn_drive_turn(struct conn *c)
{
    struct conn_turn t = {0};
    const struct transport *xp = c->srv->xp;
    int r;

    if (c->inflight)
        return;
    if (c->dead || (r = conn_resume_start(c)) < 0)
        goto kill;
    if (r > 0)
        return;
    for (;;) {
        r = conn_steps(c, &t);
        if (r == CONN_RUN_KILL)
            goto kill;
        if (r == CONN_RUN_DONE)
            return;
        if (r == CONN_RUN_READ) {
            t.rd = xp->read(c);
            r = conn_resume_read(c, &t);
        } else if (xp->flush(c) < 0) {
            conn_teardown(c);
            return;
        } else {
            r = t.step == CT_LAST; /* the send after a yield: over */
        }
        if (c->inflight)
            return;
        if (c->dead || r < 0)
            goto kill;
        if (r > 0)
            return;
    }
kill:
    conn_teardown(c);
}

void conn_drive(struct conn *c)
{
    conn_drive_turn(c);
}

CONN_LOOP_INLINE bool conn_io_note(struct conn *c, short what)
{
    if (what & (CONN_EV_READ | CONN_EV_CLOSED)) {
        c->rd_ready = true; /* a new edge: read at least once more */
        c->rd_short = false;
    }
    if (what & CONN_EV_CLOSED)
        c->rd_hup = true; /* the peer half-closed: read up to EOF */
    /* the byte filter (TLS) waiting on the other direction */
    if ((what & CONN_EV_WRITE) && c->rd_wants_wr) {
        c->rd_wants_wr = false;
        c->rd_ready = true;
    }
    if ((what & (CONN_EV_READ | CONN_EV_CLOSED)) && c->wr_wants_rd) {
        c->wr_wants_rd = false;
        c->wr_ready = true;
    }
    if (what & CONN_EV_WRITE)
        c->wr_ready = true;
    return !c->inflight;
}

bool conn_io_ready(struct conn *c, short what)
{
    return conn_io_note(c, what);
}

void conn_on_io(struct conn *c, short what)
{
    if (conn_io_note(c, what))
        conn_drive_turn(c); /* the readiness path: conn_drive inlined */
}

/* Stopping: requests that already arrived are served, later ones not. */
static void conn_stop_reading(struct conn *c)
{
    if (c->rd_ready)
        c->rd_drain = true; /* read up to the first EAGAIN, then stop */
    else
        c->rd_shut = true;
}

bool conn_park_run(struct conn *c)
{
    void (*park)(struct conn *) = c->park;

    if (park == NULL)
        return false;
    c->park = NULL;
    park(c); /* c may be back with its owner already: touch it no more */
    return true;
}

void conn_returned(struct conn *c)
{
    c->inflight = false;
    if (c->yielded) {
        /* the payload thread ran -R requests: requeue behind the others */
        c->yielded = false;
        STAT_INC(&c->owner->stats, conn_yields);
        if (c->opending > 0 && c->wr_ready && c->srv->xp->flush(c) < 0) {
            conn_teardown(c);
            return;
        }
        if (!c->closing && !(c->owner->stopping && !c->rd_drain)) {
            c->srv->xp->requeue(c);
            return;
        }
    }
    if (c->owner->stopping && !c->rd_drain)
        conn_stop_reading(c);
    conn_drive(c);
}

void conn_shutdown(struct conn *c)
{
    if (c->inflight)
        return; /* conn_returned() sees owner->stopping */
    conn_stop_reading(c);
    conn_drive(c);
}

/* The coarse-clock ms from which a timeout of secs seconds counted from
 * stamp may fire.  Both readings come from the coarse clock, each behind
 * the true time by less than its resolution res: adding res keeps the
 * timeout from firing early (the stamp's true time may be up to res after
 * the reading).  Not later than that either: the owner's tick is armed for
 * the earliest such moment of its connections (worker_tick_run). */
uint64_t conn_deadline_ms(uint64_t stamp, uint64_t secs, uint64_t res)
{
    return stamp + secs * 1000 + res;
}

/* A timeout that fired: close c.  Its deadline otherwise, the earliest
 * seen so far kept in *due. */
static bool conn_due(uint64_t now_ms, uint64_t deadline, uint64_t *due)
{
    if (now_ms >= deadline)
        return true;
    if (deadline < *due)
        *due = deadline;
    return false;
}

/* Input of c that arrived and has not run (the look before an
 * --auth-timeout close): a whole request buffered, a readiness edge not
 * read to its end, bytes in the socket, or the backend's (a completion
 * not reaped yet). */
static bool conn_in_waiting(struct conn *c)
{
    int n = 0;

    if ((c->ilen > c->ioff && c->ilen - c->ioff >= c->need) || c->rd_ready)
        return true;
    if (c->fd >= 0 && ioctl(c->fd, FIONREAD, &n) == 0 && n > 0)
        return true;
    return c->srv->xp->in_waiting != NULL && c->srv->xp->in_waiting(c);
}

uint64_t conn_tick(struct conn *c, uint64_t now, uint64_t now_ms)
{
    const struct options *o = &c->srv->opt;
    struct worker *w = c->owner;
    uint64_t res = server_coarse_res_ms(), due = UINT64_MAX, hs;

    if (c->inflight)
        return due; /* back on this thread at most a tick later */
    if (c->srv->xp->tick != NULL)
        c->srv->xp->tick(c);
    if (c->hold_until != 0 && now >= c->hold_until) {
        c->hold_until = 0;
        conn_drive(c);
        return due; /* the connection may be gone */
    }
    if (!c->authed && o->auth_timeout > 0 &&
        conn_due(now_ms, conn_deadline_ms(c->born, o->auth_timeout, res),
                 &due)) {
        if (c->born != 0 && conn_in_waiting(c)) {
            /* Input came that has not run: a login sent in time is not
             * refused because this thread came late (a busy machine).
             * It runs first; judged once more on the next tick, which
             * the loop's reads come before (born 0: no second look, so
             * input that keeps coming keeps no -c slot). */
            c->born = 0;
            due = now_ms;
            STAT_INC(&w->stats, auth_timeouts_deferred);
            log_debug("conn %llu: auth timeout with input waiting: read "
                      "first", (unsigned long long)c->id);
            return due;
        }
        /* --auth-file: a connection that never logs in gives its -c slot
         * back, however much it sends */
        STAT_INC(&w->stats, auth_timeouts);
        log_debug("conn %llu: not authenticated in %llu s, closed",
                  (unsigned long long)c->id,
                  (unsigned long long)o->auth_timeout);
        conn_teardown(c);
        return UINT64_MAX;
    }
    hs = tls_handshake_due_ms(c);
    if (hs != 0 && conn_due(now_ms, hs + res, &due)) {
        STAT_INC(&w->stats, tls_handshake_failures);
        log_info("conn %llu: TLS handshake not done in %llu s, closed",
                 (unsigned long long)c->id,
                 (unsigned long long)o->tls_handshake_timeout);
        conn_teardown(c);
        return UINT64_MAX;
    }
    if (c->opending > 0 && c->blocked_since != 0 &&
        now - c->blocked_since >= o->output_timeout) {
        STAT_INC(&w->stats, slow_reader_drops);
        log_info("conn %llu dropped: %zu bytes unread for %llu s",
                 (unsigned long long)c->id, c->opending,
                 (unsigned long long)(now - c->blocked_since));
        conn_teardown(c);
        return UINT64_MAX;
    }
    if (o->idle_timeout > 0 && c->opending == 0 &&
        conn_due(now_ms,
                 conn_deadline_ms(__atomic_load_n(&c->last_active,
                                                  __ATOMIC_RELAXED),
                                  o->idle_timeout, res),
                 &due)) {
        STAT_INC(&w->stats, idle_kicks);
        log_debug("conn %llu idle, closed", (unsigned long long)c->id);
        conn_teardown(c);
        return UINT64_MAX;
    }
    return due;
}

/* ---- stats conns ---------------------------------------------------------- */

static void conn_peer_name(const struct conn *c, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";

    memset(&ss, 0, sizeof(ss));
    if (c->family == AF_UNIX) {
        snprintf(buf, len, "unix:%s",
                 c->srv->opt.unix_socket ? c->srv->opt.unix_socket : "");
        return;
    }
    if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) < 0) {
        snprintf(buf, len, "tcp:?");
        return;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        snprintf(buf, len, "tcp6:[%s]:%u", host, ntohs(a->sin6_port));
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(buf, len, "tcp:%s:%u", host, ntohs(a->sin_port));
    }
}

void conn_visit_all(struct server *srv, conn_info_fn fn, void *ctx)
{
    static const char *const names[] = {"conn_waiting", "conn_parse_cmd",
                                        "conn_mwrite", "conn_closing",
                                        "conn_nread"};
    uint64_t now = server_coarse_ms();
    struct conn_info ci;
    unsigned i;

    memset(&ci, 0, sizeof(ci));
    ci.kind = CI_LISTENER;
    ci.state = "conn_listening";
    pthread_mutex_lock(&srv->stats_mu); /* net_close_all frees them */
    for (i = 0; i < srv->nlisteners; i++) {
        if (srv->listeners[i].fd < 0)
            continue;
        ci.fd = srv->listeners[i].fd;
        net_listener_label(&srv->listeners[i], ci.addr, sizeof(ci.addr));
        fn(ctx, &ci);
    }
    pthread_mutex_unlock(&srv->stats_mu);
    for (i = 0; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];

        if (w->role == ROLE_PAYLOAD)
            continue;
        pthread_mutex_lock(&w->conns_mu);
        udp_worker_visit(w, fn, ctx);
        pthread_mutex_unlock(&w->conns_mu);
    }
    for (i = 0; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        struct conn *c;

        if (w->role == ROLE_PAYLOAD)
            continue;
        pthread_mutex_lock(&w->conns_mu);
        for (c = w->conns; c != NULL; c = c->link.next) {
            uint64_t la = __atomic_load_n(&c->last_active, __ATOMIC_RELAXED);
            uint8_t st = __atomic_load_n(&c->state, __ATOMIC_RELAXED);

            ci.kind = CI_CONN;
            ci.fd = c->fd;
            conn_peer_name(c, ci.addr, sizeof(ci.addr));
            ci.state = names[st <= CS_NREAD ? st : 0];
            net_listen_addr_of(srv, c->fd, c->family, ci.listen_addr,
                               sizeof(ci.listen_addr));
            ci.idle_s = now > la ? (now - la) / 1000 : 0;
            fn(ctx, &ci);
        }
        pthread_mutex_unlock(&w->conns_mu);
    }
}
