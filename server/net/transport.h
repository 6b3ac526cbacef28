/*
 * transport.h - the one interface between a connection (conn.c: buffers,
 * output queue, request loop) and the network backend under it: epoll.c
 * (libevent, readiness) or uring.c (io_uring, completions; with
 * uring_loop.c and uring_conn.c).  The backend
 * is chosen once at start (transport_resolve, then threads_setup: srv->xp)
 * and every connection and network thread of the process uses its table.
 *
 * Each backend keeps its state private, in parts the others only carry:
 * a connection's (conn_priv bytes after struct conn, conn_xpriv), a
 * thread's (struct worker's xw, made by worker_setup) and a listener's
 * (struct listener's xl, made by accept_on).  Outside epoll.c, evloop.c
 * (the libevent loop, evloop.h) and the io_uring files (uring*.c,
 * uring_int.h) no file names a libevent or io_uring type or function
 * (tools/check-backends.sh); a thread's libevent loop, which the main
 * thread runs under both backends, is reached through evloop.h.
 *
 * Direction: conn.c calls the table's connection operations (read and
 * flush from its drive loop, conn_drive, the one both backends and every
 * other caller run), threads.c and net.c its thread and listener ones.
 * A backend calls the connection only through conn.h's entry points:
 * conn_on_io/conn_io_ready for readiness; conn_drive to run the request
 * loop (conn_run), which returns to the drive loop to send
 * (CONN_RUN_SEND) or to read (CONN_RUN_READ), the drive loop doing
 * either through the table and calling it again;
 * conn_in_lend/conn_in_append for bytes io_uring received; conn_out_sent
 * for sent ones; conn_teardown, conn_free, conn_xpriv, conn_backend_held.
 * sockio.c, the byte I/O of epoll and of filtered connections, reads
 * through conn_in_room/conn_in_got.  No table operation calls back into
 * conn.c's request loop before it returns.
 *
 * TLS (tls.c) is a byte filter between the connection and the socket,
 * the same over both backends: a TLS connection is read and written when
 * ready through sockio.c (SSL_read/SSL_write, or kernel TLS), so a backend
 * that runs completions for plain connections (io_uring) runs readiness
 * polls for a filtered one (c->filtered).  docs/architecture.md,
 * "Networking".
 */
#ifndef MDC_TRANSPORT_H
#define MDC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "server/server.h"

struct conn;

struct transport {
    const char *name;
    /* bytes of backend-private state allocated after each struct conn
     * (conn_xpriv) */
    size_t conn_priv;
    /* ---- a connection (owner thread) ---- */
    /* Register c with its owner's loop; 0, or -1. */
    int (*adopt)(struct conn *c);
    /* A filtered connection's handshake (c->hs_pending): 1 done, 0 wait
     * for the socket, -1 failed. */
    int (*start)(struct conn *c);
    /* Read what the socket has into c's input (c->rd_ready): 1 bytes
     * came, 0 nothing more for now, -1 broken. */
    int (*read)(struct conn *c);
    /* Send c's pending output, or start sending it: 0, or -1 broken. */
    int (*flush)(struct conn *c);
    /* Run c again on a later turn of its loop without a new event (it
     * yielded, or stopped reading at the per-turn budget). */
    void (*requeue)(struct conn *c);
    /* c is being closed: true when operations still in flight reference
     * it (the backend calls conn_free once they are done), false when it
     * may be freed now. */
    bool (*close)(struct conn *c);
    /* Free c's backend-private state (conn_free). */
    void (*release)(struct conn *c);
    /* c is back from a payload thread: input that arrived meanwhile goes
     * into its buffers (before conn_returned). */
    void (*returned)(struct conn *c);
    /* During a hold (no reading): has the peer hung up or reset? */
    bool (*peer_gone)(struct conn *c);
    /* Once a second, from the thread's tick: the backend's own check of
     * c (NULL: none). */
    void (*tick)(struct conn *c);
    /* Input for c that the backend holds and c has not been given yet (a
     * completion not reaped): asked by the tick before an --auth-timeout
     * close (NULL: it holds none; the socket's bytes conn.c sees). */
    bool (*in_waiting)(struct conn *c);
    /* ---- a network thread ---- */
    /* Give network (or main) thread w the backend's part (w->xw), after
     * its libevent loop (evloop_setup): 0, or -1. */
    int (*worker_setup)(struct worker *w);
    /* Free it (connections torn down, their last operations done). */
    void (*worker_teardown)(struct worker *w);
    /* Wake w's loop from another thread: its inbox has connections. */
    void (*wake)(struct worker *w);
    /* Ask network thread w to stop (from the main thread). */
    void (*stop)(struct worker *w);
    /* Run network thread w's loop until it stops. */
    void (*run)(struct worker *w);
    /* w is stopping and its last connection went: end its loop. */
    void (*done)(struct worker *w);
    /* ---- listeners (main thread) ---- */
    /* Accept on listener i (net_accepted gets each connection): 0, -1. */
    int (*accept_on)(struct server *srv, size_t i);
    /* Stop accepting on listener i (before it is closed). */
    void (*accept_off)(struct server *srv, size_t i);
    /* Listener i is being closed: free its state (l->xl). */
    void (*accept_close)(struct server *srv, size_t i);
};

/* Choose the backend from --io (and MDC_TEST_IO for auto) and what this
 * kernel runs: srv->xp, srv->io_uring and srv->io_uring_fallback.  0, or
 * -1 with the reason logged (an explicit --io=uring that cannot run). */
int transport_resolve(struct server *srv);

extern const struct transport transport_epoll;
#ifdef HAVE_LIBURING
extern const struct transport transport_uring;
#endif

#endif
