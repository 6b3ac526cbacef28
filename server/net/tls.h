/*
 * tls.h - TLS listeners (--tls-listen) with OpenSSL 3: the server context
 * (certificate, key, client CAs; rebuilt on SIGHUP), and per connection
 * the non-blocking handshake and the record layer that sockio.c calls
 * instead of recv()/send() while OpenSSL does the records in user space:
 * a byte filter between a connection and its socket, on either backend.
 * After the handshake, a direction that OpenSSL could hand to kernel TLS
 * (SSL_OP_ENABLE_KTLS, BIO_get_ktls_send/recv) goes back to plain
 * recv()/send()/sendmsg() on the socket: the kernel encrypts, and a GET
 * reply is sent straight from the record.  docs/security.md, "TLS".
 *
 * Threads: the context is built and swapped on the main thread (start,
 * SIGHUP), where connections are also accepted and their SSL objects
 * created; each SSL object is then used only by its connection's owner.
 */
#ifndef MDC_TLS_H
#define MDC_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/server.h"

struct conn;
struct ssl_st;

/* A connection's TLS state (conn->tls); NULL on a plain connection. */
struct tls_conn {
    struct ssl_st *ssl;
    uint64_t started;   /* server_coarse_ms() at accept: the handshake
                           timeout, never early */
    bool peeked;        /* the first byte was checked to be a TLS record */
    bool hs_done;       /* handshake complete */
    bool ktls_tx;       /* the kernel encrypts: send()/sendmsg() as plain */
    bool ktls_rx;       /* the kernel decrypts: recv() as plain */
    bool rx_ahead;      /* with ktls_rx: OpenSSL read records ahead before
                           the kernel took over: SSL_read() them first */
    bool failed;        /* a fatal error: no close_notify */
    bool bio_short;     /* the socket's last read returned less than
                           asked: its receive queue was emptied */
    bool bio_plain_tx;  /* the BIO sends with send(), not OpenSSL's write() */
    bool bio_plain_rx;  /* the BIO receives with recv(), not read() */
    int fd;             /* the connection's socket */
};

/* Build the context from --tls-cert/--tls-key/--tls-ca: 0, or -1 logged.
 * Does nothing (0) without --tls-listen. */
int tls_setup(struct server *srv);
/* SIGHUP: build a new context from the same paths; on success new
 * connections use it (live ones keep theirs), on failure the old one stays
 * and the reason is logged.  0 or -1. */
int tls_reload(struct server *srv);
void tls_teardown(struct server *srv);

/* A connection accepted on a TLS listener (main thread): 0, or -1. */
int tls_conn_attach(struct conn *c);
/* Free c's TLS state (owner thread), with a close_notify when clean. */
void tls_conn_free(struct conn *c);

/* Advance the handshake: 1 done, 0 waiting for input, 2 waiting for the
 * socket to be writable, -1 failed (counted and logged). */
int tls_handshake(struct conn *c);
/* Whether conn.c reads through tls_recv() (user-space records, or records
 * OpenSSL read ahead before kTLS receive began) or tls_ktls_recv(). */
static inline bool tls_rx_user(const struct tls_conn *t)
{
    return !t->ktls_rx || t->rx_ahead;
}
/* SSL_read into buf: like recv(): > 0 bytes, 0 end of stream, -1 with
 * errno (EAGAIN: wait; c->rd_wants_wr tells which edge).  *drained is set
 * when the bytes came from a socket read that emptied the receive queue
 * and OpenSSL holds nothing more: then, as after a short recv(), another
 * read could only say EAGAIN (conn.c's rd_short). */
ssize_t tls_recv(struct conn *c, void *buf, size_t len, bool *drained);
/* Kernel TLS receive (ktls_rx): recvmsg() of decrypted bytes into buf,
 * like recv(): > 0 bytes, 0 end of stream (a FIN, or the peer's
 * close_notify alert), -1 with errno (EAGAIN: wait; EPROTO: another alert,
 * or a handshake record the kernel's keys cannot follow, logged).  A
 * short read does not prove the socket drained: the kernel stops before a
 * control record and keeps it for the next read. */
ssize_t tls_ktls_recv(struct conn *c, void *buf, size_t len);
/* SSL_write of the head of c's output queue: > 0 bytes taken (fewer than
 * pending is normal: one record at a time), -1 with errno (EAGAIN: wait). */
ssize_t tls_send_pending(struct conn *c);
/* The coarse ms (server_coarse_ms()) at which c's handshake has taken
 * --tls-handshake-timeout, before the clock's resolution is added (owner
 * tick, conn_tick()); 0: no handshake pending. */
uint64_t tls_handshake_due_ms(const struct conn *c);

#endif
