/*
 * sockio.h - reading and writing a connection's stream socket when it is
 * ready: plain recv()/send()/sendmsg(), or through the TLS byte filter
 * (tls.h: SSL_read/SSL_write in user space, kernel TLS after the
 * handshake).  The readiness backend (epoll.c) reads and writes every
 * connection with it; the io_uring backend the filtered ones (TLS), which
 * it runs on readiness polls of its ring.  It never arms anything: it
 * says what to wait for, and the backend arms it (transport.h).
 */
#ifndef MDC_SOCKIO_H
#define MDC_SOCKIO_H

#include <stdbool.h>
#include <stddef.h>

struct iovec;

struct conn;

/* What a read or a write now waits for. */
enum { SOCKIO_WAIT_WR = 2 };

/* Read what the socket has into c's input: 1 got bytes, 0 nothing more
 * for now (EAGAIN or EOF), SOCKIO_WAIT_WR nothing until the socket is
 * writable (the filter's read must write first), -1 broken. */
int sockio_read(struct conn *c);
/* Write c's output until done or the socket is full: 0 done, 1 blocked
 * (c->wr_ready is false: wait until writable), -1 broken. */
int sockio_flush(struct conn *c);
/* c's unsent output as up to max iovecs from its first unsent byte (the
 * epoll path's sendmsg, the io_uring backend's): how many, and in *want
 * the bytes they hold. */
size_t sockio_out_iov(const struct conn *c, struct iovec *iov, size_t max,
                      size_t *want);
/* The filter's handshake: 1 done, 0 wait until readable, SOCKIO_WAIT_WR
 * wait until writable, -1 failed. */
int sockio_start(struct conn *c);
/* Output would block: c waits (state, blocked_since, wr_ready). */
void sockio_wr_blocked(struct conn *c);
/* During a hold: the peer half-closed, hung up or reset. */
bool sockio_peer_gone(const struct conn *c);
/* Free the filter's state (a close_notify when clean). */
void sockio_release(struct conn *c);

#endif
