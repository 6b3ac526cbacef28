/*
 * udp.h - memcached's UDP protocol (-U PORT; docs/protocol.md, "UDP"): the
 * 8-byte frame header, get/gets answered by the text handler that answers
 * TCP (every other command refused), replies split over datagrams of at
 * most 1400 bytes.  This is the path the XDP program
 * accelerates (docs/xdp.md), so a single-key hit must leave byte for byte as
 * mirror_reply_build() composes it.
 *
 * Each network thread (the main thread with -n 0) owns one SO_REUSEPORT
 * socket per -l address, read with recvmmsg() and answered with sendmmsg()
 * in batches, in its own event loop; UDP requests never go to payload
 * threads.  Values leave from their records (iovecs, references held until
 * sendmmsg() returns), so a hit neither copies nor allocates.
 */
#ifndef MDC_UDP_H
#define MDC_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "protocol/mctext.h" /* the frame: UDP_FRAME_HDR, UDP_DGRAM_MAX */

struct server;
struct worker;

#define UDP_BATCH 32    /* datagrams per recvmmsg() */
#define UDP_RX_MAX 8192 /* largest request datagram; longer: ignored */

/* Reply to a command other than get/gets (well-formed or not, it is not
 * run): UDP serves retrieval only (docs/protocol.md, "UDP"). */
#define UDP_E_REFUSED "SERVER_ERROR UDP serves get and gets only\r\n"
/* ... with --udp-writes, to a command it does not add (flush_all,
 * shutdown, stats, ...: docs/protocol.md, "UDP"). */
#define UDP_E_NOT_SERVED "SERVER_ERROR command not served over UDP\r\n"
/* A get whose reply would exceed --udp-reply-limit ends with this. */
#define UDP_E_TOO_LARGE "SERVER_ERROR reply too large for UDP\r\n"

/* Serve a socket fd (bound, any family) from w's loop; takes fd over.
 * loopback: fd is bound to a loopback address (protected mode lets every
 * datagram to it through).  For udp_listen_all() and tests.  0 ok, -1
 * (fd closed). */
int udp_sock_add(struct worker *w, int fd, const char *name, bool loopback);
/* Read and answer whatever is queued on w's sockets now (what the event
 * callback does), for tests that drive a worker without its loop. */
void udp_serve(struct worker *w);

/* w's UDP descriptors (at most max), for a loop that polls them itself
 * and calls udp_serve() (uring.c). */
unsigned udp_worker_fds(struct worker *w, int *fds, unsigned max);

/* Bind -U on every -l address, one SO_REUSEPORT socket per network thread. */
int udp_listen_all(struct server *srv);
/* "stats conns": fn(ctx, info) for each of w's UDP sockets (CI_UDP; w's
 * conns_mu held by the caller, which udp_worker_close takes too). */
struct conn_info;
void udp_worker_visit(struct worker *w,
                      void (*fn)(void *ctx, const struct conn_info *ci),
                      void *ctx);
/* "udp ADDR:PORT" for every bound address (--port-file). */
void udp_write_names(struct server *srv, FILE *f);
/* Close w's UDP sockets (w's own thread, or before the threads start). */
void udp_worker_close(struct worker *w);
/* ... and free its buffers too. */
void udp_worker_teardown(struct worker *w);

#endif
