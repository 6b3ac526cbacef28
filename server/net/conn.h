/*
 * conn.h - one client connection: its input buffer, its output queue of
 * byte ranges and record references (both lent from the thread's pool
 * while the connection has bytes to hold: the output buffer and its first
 * segments one pooled block, the input read into a free buffer of the
 * pool in place and taken only if a partial request is left; the queue
 * is sent as an iovec array, so a GET hit never allocates, and copies
 * only a value of at most CONN_COPY_MAX), and the request loop
 * (conn_run) that a network thread's backend (transport.h: epoll.c or
 * uring.c) runs on readiness or completions, sending and reading itself
 * between its calls; conn_drive runs it with the table's read and flush
 * for the callers outside a backend.
 *
 * The loop is a state machine with named steps (conn.c: enum conn_next,
 * what to do next, read from the flags below; enum conn_step, where a
 * turn is between conn_run()'s calls).  The flags are facts, each set
 * where it becomes true: readiness (rd_*, wr_*), ownership (inflight,
 * wr_busy), the way out (closing, rd_shut, rd_drain, dead); "stats
 * conns" shows enum conn_state, derived from them where the loop rests.
 *
 * Ownership: a connection belongs to one network worker (c->owner).  While
 * c->inflight is set a payload thread owns its input and output and the
 * network thread touches only the readiness flags; the queue hand-off in
 * both directions orders the accesses.  See docs/threads-models.md.
 */
#ifndef MDC_CONN_H
#define MDC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/server.h"
#include "server/queue.h"

struct record;
struct tls_conn;

/*
 * A protocol handler (server/proto/ implements it; the network layer only
 * calls it).  process() runs requests from c's input until the input holds
 * no whole request, the output is over its bound (conn_out_full) or the
 * connection is closing.  Before returning it sets conn_in_need() to the
 * bytes it needs to make progress.  w is the thread running it (stats,
 * scratch).
 */
struct proto {
    const char *name;
    void (*process)(struct conn *c, struct worker *w);
};

/*
 * A connection without a socket of its own: the requests of a UDP socket's
 * datagrams (udp.c).  The text handler runs one request per process() call
 * (each answered by a reply of its own), serves get and gets only and
 * refuses the rest; values stay references to their records (never copied:
 * the XDP mirror is offered each hit once its reply is sent); udp.c frames
 * and sends what the output queue holds.
 */
struct conn_dgram {
    size_t reply_limit; /* bytes one reply may take (--udp-reply-limit) */
    size_t reply0;      /* c->opending when this request's reply began */
};

/* One piece of pending output. */
struct oseg {
    const uint8_t *ptr; /* external bytes; NULL: obuf[off, off + len) */
    struct record *rec; /* reference to release once sent, or NULL */
    uint32_t off;
    uint32_t len;
};

struct conn {
    struct mq_node qnode;  /* in an inbox or a payload queue */
    struct conn_link link; /* in owner's connection list */
    struct worker *owner;  /* network worker */
    struct server *srv;
    int fd;
    uint32_t iscan;        /* unconsumed bytes a protocol has scanned for
                              its line end without finding it: the next
                              scan resumes there (reset on consume; a
                              line is far shorter than 4 GiB) */
    uint64_t id;

    /* protocol (set from the first byte) */
    const struct proto *proto;

    /* input: bytes [ioff, ilen) of ibuf are unconsumed */
    uint8_t *ibuf;
    size_t icap, ioff, ilen;
    size_t need;           /* bytes the next step needs (>= 1) */
    uint64_t skip;         /* input bytes still to discard */

    /* output */
    uint8_t *obuf;
    size_t ocap, olen;
    struct oseg *segs;
    size_t opending;       /* unsent bytes */
    /* segments: allocated, queued, the first unsent, bytes of it sent (a
     * segment is at most 4 GiB: struct oseg's len) */
    uint32_t segcap, nseg, seghead, headsent;

    uint32_t hold_until;   /* coarse seconds: run no request before; 0 = no
                              hold (conn_hold) */
    uint32_t blocked_since; /* coarse seconds output stalled; 0 = not */

    /* state; see the ownership note above (no bitfields on purpose).
     * The narrow fields sit together: an idle connection is this struct
     * and its backend's part, 304 + 80 bytes on io_uring, one 384-byte
     * allocation (docs/performance.md, "Memory per connection"). */
    uint8_t in_ext;        /* ibuf is not lent (CONN_IN_*): the backend's
                              (an io_uring provided buffer parsed in
                              place: what is left is copied out before it
                              goes back) or the pool's (read into in
                              place: taken if a partial request is left) */
    bool closing;          /* stop processing, close once output is out */
    bool inflight;         /* a payload thread owns the buffers */
    bool adopted;          /* registered with owner's event loop */
    bool rd_ready;         /* edge seen, input not yet known drained */
    bool rd_short;         /* the last read since the edge came back short */
    bool rd_hup;           /* peer half-closed (EV_CLOSED): read to EOF */
    bool wr_ready;         /* a write is worth trying (not known to block) */
    bool wr_busy;          /* a send of obuf/segments is in flight (a
                              completion backend): no request runs (obuf
                              must not move) until it completes */
    bool rd_shut;          /* no more reading: EOF or shutdown */
    bool rd_drain;         /* shutdown: read until EAGAIN, then rd_shut */
    bool dead;             /* close as soon as the network thread can */
    bool paused;           /* output over the bound: input not processed */
    bool authed;           /* may run requests (always without --auth-file) */
    uint8_t watch_types;   /* "watch": its socket goes to the watch thread
                              once the output is out (conn_teardown) */
    bool yielded;          /* process() stopped after -R requests with more
                              input waiting: let other connections run */
    bool need_body;        /* the protocol waits for the rest of a
                              request's value (conn_in_need_body) */
    uint8_t state;         /* enum conn_state, relaxed atomic, for stats */
    /* a byte filter (TLS, tls.h) between c and its socket: c is read and
     * written when ready, through sockio.c, on either backend */
    bool filtered;
    bool hs_pending;       /* the filter's handshake is not done */
    bool rd_wants_wr;      /* the filter's read needs the socket writable */
    bool wr_wants_rd;      /* the filter's write needs it readable */
    uint8_t family;        /* the socket's address family (AF_*) */
    uint8_t auth_fails;    /* failed authentications on this connection
                              (at most PROTO_AUTH_MAX_FAILS, 10) */
    uint64_t born;         /* server_coarse_ms() when the owner adopted it
                              (the --auth-timeout clock); 0 once that
                              timeout found input waiting (conn_tick) */
    uint64_t last_active;  /* server_coarse_ms() of the last input, or of
                              the last -R yield with requests left (written
                              by the owner with relaxed atomics: stats
                              conns reads it from other threads) */

    /* parking (conn_park): a request that waits for another thread */
    void (*park)(struct conn *c);  /* to run once process() has returned */
    void (*park_done)(struct conn *c, int rc, const char *msg); /* answer */
    uint64_t park_seq;             /* the parking thread's own use */
    union {                        /* the one long request in progress */
        uint64_t park_req[6];      /* a parked request, as the protocol
                                      needs it to answer (48 bytes) */
        struct {
            uint32_t next;         /* lru_crawler metadump: the next hash
                                      class of its walk */
            uint32_t classes;      /* ... the classes of the walk; 0: no
                                      walk runs */
        } mdump;
    };
    struct tls_conn *tls;  /* the TLS filter's state (tls.h), or NULL */
    struct conn_dgram *dgram; /* a UDP socket's requests, or NULL */
    /* the backend's own state (transport.conn_priv bytes): conn_xpriv() */
    _Alignas(16) unsigned char xpriv[];
};

/* c->in_ext: whose buffer c's input is parsed in, when not lent to c. */
#define CONN_IN_BACKEND 1 /* the backend's (conn_in_lend) */
#define CONN_IN_POOL 2    /* the pool's, read into in place (conn_in_room) */

/* The backend-private part of c (struct transport, conn_priv). */
static inline void *conn_xpriv(struct conn *c)
{
    return c->xpriv;
}

/* The connection whose qnode n is. */
static inline struct conn *conn_of_node(struct mq_node *n)
{
    return (struct conn *)((char *)n - offsetof(struct conn, qnode));
}

/* What a connection is doing, as memcached's "stats conns" names it. */
enum conn_state {
    CS_WAITING = 0, /* conn_waiting: for input */
    CS_PARSE,       /* conn_parse_cmd: running requests */
    CS_MWRITE,      /* conn_mwrite: output blocked on the socket */
    CS_CLOSING,     /* conn_closing */
    CS_NREAD,       /* conn_nread: waiting for the rest of a value */
};

/* One connection, listener or UDP socket as "stats conns" lists it. */
enum conn_info_kind { CI_CONN, CI_LISTENER, CI_UDP };
struct conn_info {
    enum conn_info_kind kind;
    int fd;
    char addr[140];   /* tcp:HOST:PORT, tcp6:[HOST]:PORT or unix:PATH */
    char listen_addr[140]; /* CI_CONN: its listener's, as
                              net_listener_label() */
    const char *state;
    uint64_t idle_s;  /* seconds since its last input */
};
typedef void (*conn_info_fn)(void *ctx, const struct conn_info *ci);
/* Visit every listener, UDP socket and open connection of every thread, in
 * that order (any thread may call it; the listeners are held under
 * stats_mu, each thread's lists under its conns_mu while visited, so fn
 * must not block or call back into the network layer). */
void conn_visit_all(struct server *srv, conn_info_fn fn, void *ctx);

/* Allocate a connection for fd, to be run by network worker w. */
struct conn *conn_setup(struct server *srv, struct worker *w, int fd,
                         int family);
/* Register with the owner's event loop and start serving (owner thread). */
int conn_adopt(struct conn *c);
/* Close the socket and free everything, releasing held records. */
void conn_teardown(struct conn *c);
/* Readiness of c's socket (owner thread): what is a mask of CONN_EV_*
 * (the values of libevent's EV_READ, EV_WRITE, EV_CLOSED).  A readiness
 * backend calls it for each edge (tests call it directly). */
#define CONN_EV_READ 0x02
#define CONN_EV_WRITE 0x04
#define CONN_EV_CLOSED 0x80
void conn_on_io(struct conn *c, short what);
/* Run the state machine: write, process, read until nothing moves, with
 * the table's read and flush (for callers outside a backend: a payload
 * thread's hand-back, the tick, shutdown, tests). */
void conn_drive(struct conn *c);
/*
 * The same, for a backend that sends and reads itself: conn_run() returns
 * CONN_RUN_SEND where output is to be sent (c->opending > 0, c->wr_ready),
 * the backend sends it (or starts sending it) and calls conn_run() again
 * with the same turn, which goes on from there; CONN_RUN_DONE when the
 * loop is done for now, CONN_RUN_GONE when c was torn down (it may be
 * freed).  So the request loop never re-enters the backend that is
 * running it: the send follows the loop, made by the backend's own send
 * path (io_uring: a send queued to the ring; epoll: sockio.c).  The turn
 * carries the per-turn read budget across the calls.
 */
/* Where a turn is between conn_run()'s calls: what it last asked of
 * the backend. */
enum conn_step {
    CT_START = 0, /* a new turn (the handshake, if pending, first) */
    CT_RUN,       /* in the loop */
    CT_READ,      /* CONN_RUN_READ was returned: account the read */
    CT_SENT,      /* CONN_RUN_SEND was returned: go on past the send */
    CT_LAST,      /* the send after a yield was asked: the turn is over */
};
struct conn_turn {
    int reads;          /* reads this turn (CONN_READ_BUDGET) */
    size_t rbytes;      /* bytes they brought (CONN_READ_BYTES_BUDGET) */
    enum conn_step step;
    int rd;             /* CT_READ: the caller puts its read's result here */
    size_t rd_before;   /* ... unconsumed input before that read */
};
/* CONN_RUN_READ: read the socket (the table's read: 1 bytes came, 0
 * nothing more, -1 broken) into t->rd, then call again; like the send,
 * the read is the backend's, after the loop returned to it. */
enum {
    CONN_RUN_GONE = -1,
    CONN_RUN_DONE = 0,
    CONN_RUN_SEND = 1,
    CONN_RUN_READ = 2
};
int conn_run(struct conn *c, struct conn_turn *t);
/* conn_on_io() without the run: note the readiness what says; true when
 * the backend should run c now (not in a payload thread). */
bool conn_io_ready(struct conn *c, short what);
/* A payload thread finished with c (owner thread). */
void conn_returned(struct conn *c);
/* Owner-thread checks (worker_tick_run): the timeouts (auth, TLS
 * handshake, idle: now_ms, server_coarse_ms()), stalled output (now, whole
 * seconds).  Returns the coarse ms at which a timeout of c may fire next
 * (UINT64_MAX: none, or c is gone). */
uint64_t conn_tick(struct conn *c, uint64_t now, uint64_t now_ms);
/* The coarse ms from which a timeout of secs seconds counted from stamp (a
 * server_coarse_ms() reading) may fire, res the coarse clock's resolution
 * (server_coarse_res_ms()): never before secs true seconds have passed. */
uint64_t conn_deadline_ms(uint64_t stamp, uint64_t secs, uint64_t res);
/* Begin a graceful close (no more input; finish and flush). */
void conn_shutdown(struct conn *c);

/* ---- for the backends (transport.h) and the byte I/O (sockio.c) ----------- */
/* Room for the next read at the end of the input (owner thread, on c's
 * own turn: a free buffer of the pool read into in place when c holds
 * none, else its lent buffer compacted or grown towards c->need); 0 when
 * it cannot be made. */
size_t conn_in_room(struct conn *c);
/* Input to discard (c->skip) applied to what is buffered (conn.c). */
void conn_in_apply_skip(struct conn *c);
/* The connection is active now (last_active: --idle-timeout counts from
 * here). */
static inline void conn_touch(struct conn *c)
{
    __atomic_store_n(&c->last_active, server_coarse_ms(), __ATOMIC_RELAXED);
}
/* n bytes of input arrived (by recv, SSL_read or an io_uring completion):
 * the connection is active, and they count as read. */
static inline void conn_in_arrived(struct conn *c, size_t n)
{
    conn_touch(c);
    STAT_ADD(&c->owner->stats, bytes_read, n);
}
/* n bytes were read into the room conn_in_room() gave: count them
 * (inline: sockio.c's every read). */
static inline void conn_in_got(struct conn *c, size_t n)
{
    c->ilen += n;
    conn_in_arrived(c, n);
    if (c->skip > 0)
        conn_in_apply_skip(c);
}
/* The input is known drained: wait for the next edge (inline: sockio.c
 * calls it on every send that follows a short read). */
static inline void conn_rd_drained(struct conn *c)
{
    c->rd_ready = false;
    c->rd_short = false;
    if (c->rd_drain)
        c->rd_shut = true; /* stopping: all that had arrived is read */
}
/* Append n received bytes to the input (skip, stats, last_active); 0, or -1
 * when the buffer cannot grow. */
int conn_in_append(struct conn *c, const void *p, size_t n);
/* n bytes of the output were sent: retire them, release records. */
void conn_out_sent(struct conn *c, size_t n);
/* Free a torn-down connection (after conn_teardown deferred it). */
void conn_free(struct conn *c);
/* n received bytes at p, to be parsed where they lie (c holds no input and
 * is not in flight): the backend's run of conn_run() serves them, and
 * conn_run() copies what a partial request leaves into a lent buffer
 * before it returns (conn_in_settle); the caller takes p back after that
 * run, whatever became of c. */
void conn_in_lend(struct conn *c, const uint8_t *p, size_t n);

/* ---- buffers lent per thread (owner thread) ---------------------------- */
/* Lend c an output buffer and a segment array if it holds none; -1 out of
 * memory.  conn_run() does it before a request runs. */
int conn_out_take(struct conn *c);
/* Lend c an input and an output buffer (tests that put bytes straight into
 * ibuf); -1 out of memory. */
int conn_bufs_take(struct conn *c);
/* Lent buffers c holds: its input and its output buffer (stats). */
static inline unsigned conn_bufs_held(const struct conn *c)
{
    return (c->ibuf != NULL && !c->in_ext) + (c->obuf != NULL);
}
/* The backend took (d = 1) or gave back (d = -1) a piece of per-connection
 * state that an idle connection does not hold (owner thread; counted in
 * w->pool.xheld, stats conn_backend_held). */
static inline void conn_backend_held(struct worker *w, int d)
{
    __atomic_store_n(&w->pool.xheld,
                     __atomic_load_n(&w->pool.xheld, __ATOMIC_RELAXED) +
                         (uint64_t)(int64_t)d,
                     __ATOMIC_RELAXED);
}
/* Give c's buffers back to its owner's pool unless it holds input or
 * output (a connection without a socket, once its owner has sent what it
 * composed: udp.c). */
void conn_bufs_release(struct conn *c);
/* Free w's pooled buffers (teardown, every connection gone). */
void conn_pool_free(struct worker *w);

/* ---- for protocol handlers (whoever owns the buffers) ---------------- */
static inline const uint8_t *conn_in_data(const struct conn *c, size_t *len)
{
    *len = c->ilen - c->ioff;
    return c->ibuf + c->ioff;
}
static inline void conn_in_consume(struct conn *c, size_t n)
{
    c->ioff += n;
    c->iscan = 0;
    if (c->ioff == c->ilen)
        c->ioff = c->ilen = 0;
}
/* The next step needs total unconsumed bytes (from the current offset). */
static inline void conn_in_need(struct conn *c, size_t total)
{
    c->need = total > 0 ? total : 1;
    c->need_body = false;
}
/* The same, the request's line (or header) being in: what is missing is
 * its value ("stats conns" shows conn_nread meanwhile). */
static inline void conn_in_need_body(struct conn *c, size_t total)
{
    conn_in_need(c, total);
    c->need_body = true;
}
/* Discard n bytes of input: what is buffered now, the rest as it comes. */
void conn_in_skip(struct conn *c, uint64_t n);

/*
 * The output appends below are inline: a protocol handler calls them for
 * every reply, and they are a few stores into the queue conn_run() lent
 * (as memcached's and Redis's reply appends are), less work than a call;
 * only their slow paths (lend or grow a buffer) are calls into conn.c.
 */
/* Slow paths: room for one more segment (0, or -1), and n bytes of room
 * at the end of obuf (NULL, the connection then closing). */
int conn_seg_room(struct conn *c);
uint8_t *conn_out_reserve_slow(struct conn *c, size_t n);

/* Queue one segment; -1 when the array cannot grow. */
static inline int conn_seg_push(struct conn *c, const struct oseg *s)
{
    if ((c->segs == NULL || c->nseg == c->segcap) && conn_seg_room(c) < 0)
        return -1;
    c->segs[c->nseg++] = *s;
    c->opending += s->len;
    return 0;
}
/* Reserve n bytes at the end of the output; NULL on allocation failure. */
static inline uint8_t *conn_out_reserve(struct conn *c, size_t n)
{
    if (c->obuf != NULL && c->ocap - c->olen >= n)
        return c->obuf + c->olen;
    return conn_out_reserve_slow(c, n);
}
/* Commit n bytes written into the last reservation. */
static inline void conn_out_commit(struct conn *c, size_t n)
{
    struct oseg *last = c->nseg > c->seghead ? &c->segs[c->nseg - 1] : NULL;

    if (n == 0)
        return;
    if (last != NULL && last->ptr == NULL && last->off + last->len == c->olen) {
        last->len += (uint32_t)n;
        c->opending += n;
    } else {
        struct oseg s = {NULL, NULL, (uint32_t)c->olen, (uint32_t)n};
        if (conn_seg_push(c, &s) < 0) {
            c->closing = true;
            return;
        }
    }
    c->olen += n;
}
static inline int conn_out_bytes(struct conn *c, const void *p, size_t n)
{
    uint8_t *d = conn_out_reserve(c, n);

    if (d == NULL)
        return -1;
    memcpy(d, p, n);
    conn_out_commit(c, n);
    return 0;
}
/* Values up to this size are copied into obuf instead of being queued as a
 * reference (conn_out_ref), so a small reply is one piece that goes out
 * with one send(); larger ones stay zero-copy (sendmsg() from the record),
 * and so does a value that would make obuf grow.  The figure is measured:
 * docs/performance-history.md, "One-piece replies". */
#ifndef CONN_COPY_MAX
#define CONN_COPY_MAX 1024u
#endif
/* Queue len bytes at p to be sent in place (copied instead when len is at
 * most CONN_COPY_MAX and obuf has the room); rec (may be NULL) is released
 * once they are sent, or at once on failure (-1; the connection is then
 * marked to close). */
int conn_out_ref(struct conn *c, const void *p, size_t len,
                 struct record *rec);
/* process() ran its -R requests (options reqs_per_event) with input left:
 * it returns, and the network thread serves the others before coming back
 * (counted as conn_yields). */
static inline void conn_yield(struct conn *c) { c->yielded = true; }

/*
 * Park c: the request process() is running must wait for another thread
 * (a dump) without holding up the thread running it.  process() calls
 * conn_park() and returns at once (no further request of c runs: the
 * order of replies is kept); the thread that called process() then marks
 * c in flight and calls park(c), which hands c to the other thread.  That
 * thread calls done(c, rc, msg) to write the answer (it owns c's buffers
 * then, as a payload thread does) and gives c back to its owner with
 * worker_return_conn(); the owner then carries on with c's next request.
 */
static inline void conn_park(struct conn *c, void (*park)(struct conn *),
                             void (*done)(struct conn *, int, const char *))
{
    c->park = park;
    c->park_done = done;
}
/* After process(): if it parked c, hand c over (c->inflight must be set
 * by the caller) and return true; false otherwise. */
bool conn_park_run(struct conn *c);

/* A connevents line (watch.h) for c: conn_new (open) or conn_close. */
void conn_watch_event(struct conn *c, bool open);

/* Drop the connection once pending output is flushed. */
static inline void conn_close_after_flush(struct conn *c) { c->closing = true; }

/* Run none of c's requests for at least secs seconds (a failed
 * authentication): the owner's once-a-second tick lifts the hold. */
static inline void conn_hold(struct conn *c, unsigned secs)
{
    c->hold_until = (uint32_t)(server_mono_s() + secs + 1);
}

/*
 * Before authentication (--auth-file) a connection holds at most
 * CONN_PREAUTH_IN bytes of input and CONN_PREAUTH_OUT of output: a client
 * that never logs in and pipelines requests without reading the errors
 * they earn is not read from again until it reads (docs/security.md).
 * Output counts full CONN_PREAUTH_SLACK short of the bound, so the last
 * reply (an error line, STORED, a native status: all far shorter) still
 * fits the 16 KiB output buffer of the pool.
 */
#define CONN_PREAUTH_IN 16384u
#define CONN_PREAUTH_OUT 16384u
#define CONN_PREAUTH_SLACK 1024u

/* Pending output at its bound: stop running this connection's requests
 * (and reading its input). */
static inline bool conn_out_full(const struct conn *c)
{
    /* nothing pending is never full (--max-output is 4 KiB at least):
     * the common answer, without reaching into the server's options */
    if (c->opending == 0)
        return false;
    /* before login all output is text in obuf, sent or not since the
     * last reset: olen is what the buffer holds */
    if (!c->authed &&
        c->olen + CONN_PREAUTH_SLACK >= CONN_PREAUTH_OUT)
        return true;
    return c->opending >= c->srv->opt.max_output;
}

/* Bytes of memory a connection holds (buffers, not referenced records). */
size_t conn_mem(const struct conn *c);

#endif
