/*
 * mdc_int.h - internals of libmdcached shared by its source files: the
 * handle, its buffers, and the exchange engine that drives one or many
 * connections through a single poll loop.  Not installed.  Internal
 * functions are prefixed mdci_ (the symbol map exports only the public
 * mdc_ API).
 */
#ifndef MDC_INT_H
#define MDC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "mdcached.h"
#include "protocol/wire.h"

#define MDCI_ERRLEN 256
#define MDCI_DEFAULT_CONNECT_MS 1000
#define MDCI_DEFAULT_IO_MS 5000
/* Largest response message the client accepts (a get_by_tag record is at
 * most one record; the server's own bound is max item + key + tags). */
#define MDCI_MAX_RSP_BODY ((size_t)1 << 30)

struct mdci_buf {
    uint8_t *p;
    size_t off; /* first unconsumed byte */
    size_t len; /* end of data */
    size_t cap;
};

/*
 * Called for every response of the current exchange.  Returns 0 to go on,
 * 1 when the exchange is complete, or a negative MDC_ERR_* (the message set
 * with mdci_seterr()) to abandon the connection.
 */
typedef int (*mdci_on_msg)(struct mdc *m, const struct wire_msg *msg,
                           void *ctx);

enum mdci_state {
    MDCI_CLOSED,
    MDCI_CONNECTING,
    MDCI_HANDSHAKE, /* TCP up, TLS handshake running (tls.c) */
    MDCI_READY,
};

struct mdc {
    /* address */
    bool is_unix;
    char *host; /* TCP host, or the Unix path */
    uint16_t port;
    char *name;  /* ketama name: "host:port", "host", "path:0" */
    char *label; /* for messages: "host:port" or "unix:path" */
    struct sockaddr_storage addrs[8];
    socklen_t addrlens[8];
    int naddrs;   /* 0 = not resolved yet */
    int addr_cur; /* address tried by the pending connect */

    /* connection */
    int fd;
    enum mdci_state state;
    int connect_ms, io_ms, retry_ms;
    int64_t down_until; /* monotonic ms; 0 = up */
    int64_t deadline;   /* monotonic ms of the running exchange step */
    bool blocking;      /* the connected socket blocks (mdci_exchange()
                           waits in recv(); the poll loop uses
                           MSG_DONTWAIT) */
    int rcvtimeo_ms;    /* SO_RCVTIMEO set on fd; 0 = none yet */
    uint32_t next_opaque;
    char *auth_user, *auth_pass; /* mdc_set_auth(), or NULL */
    bool auth_due;     /* this connection has not sent AUTH yet */
    bool auth_pending; /* AUTH sent, its reply not yet read */
    /* the server's identity (a pool with a spool, docs/client-c.md): asked
     * with "STATS identity" ahead of the first request of each connection,
     * in the same write; valid for the connection numbered ident_conn */
    bool ident_want;    /* ask on every new connection */
    bool ident_due, ident_pending;
    uint32_t ident_opaque;
    uint64_t conn_serial;          /* connections started by this handle */
    uint64_t ident_conn;           /* the connection the identity is of */
    uint64_t ident_boot, ident_gen; /* 0: the server did not say */
    bool spool_pending; /* the pool's spool holds entries for this server */
    struct mdci_buf out;
    struct mdci_buf in;

    /* TLS (tls.c): the shared context, this connection's SSL object */
    struct mdci_tls *tls; /* mdc_set_tls(), or NULL: plain */
    void *ssl;            /* SSL * while connected over TLS */
    short tls_want;       /* handshake: POLLIN or POLLOUT */
    bool tls_wr_wants_read, tls_rd_wants_write;
    bool tls_data;        /* this connection has received data */

    /* running exchange */
    mdci_on_msg on_msg;
    void *ctx;
    bool busy; /* an exchange is pending on this handle */
    int xrc;   /* its result: MDC_OK, MDC_ERR_*, or a status after
                  which the server closes (BAD_MAGIC, ...) */

    /* last result */
    int err;
    char errstr[MDCI_ERRLEN];
};

int64_t mdci_now_ms(void);

/* Set the handle's result code and message (printf-style); returns rc. */
int mdci_seterr(struct mdc *m, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Success, or the message of a server status (plus the server's text). */
int mdci_setstatus(struct mdc *m, int status, const struct wire_msg *msg);

/* Check key length and the like before anything is sent. */
int mdci_check_key(struct mdc *m, size_t klen);

/*
 * Start an exchange: fails fast while the server is marked down, starts a
 * (non-blocking) connect when needed, and empties the output buffer.
 * Requests are then appended with mdci_add(), and mdci_run() carries them.
 */
int mdci_begin(struct mdc *m, mdci_on_msg on_msg, void *ctx);
/* Compose one request (h's lengths are filled from the arguments). */
int mdci_add(struct mdc *m, struct wire_hdr *h, const struct mdc_tag *tags,
             size_t ntags, const void *key, size_t klen, const void *value,
             size_t vlen);
/* Next request id. */
static inline uint32_t mdci_opaque(struct mdc *m)
{
    return m->next_opaque++;
}

/*
 * Drive every busy handle of hs[] (connect, write, read, dispatch) in one
 * poll loop until each has completed or failed; each handle's xrc then
 * holds MDC_OK or the transport error (also in its err/errstr).
 */
void mdci_run(struct mdc **hs, size_t n);
/*
 * The io_uring fan-out (HAVE_LIBURING; else the stubs refuse): drives the
 * exchanges of hs[] - all busy, plain and connected, requests not yet sent
 * - with one submission for every send and receive and one wait for the
 * replies.  0 when it ran them (each handle's xrc as after mdci_run()), -1
 * when it could not start (no ring, TLS, a connect pending): nothing was
 * sent, run them with mdci_run().
 */
struct mdci_uring;
struct mdci_uring *mdci_uring_new(void); /* NULL without liburing */
void mdci_uring_free(struct mdci_uring *u);
int mdci_uring_run(struct mdci_uring *u, struct mdc **hs, size_t n);

/* Send what the socket takes now, without waiting (before mdci_run). */
void mdci_exchange_write(struct mdc *m);
/* One handle: begin is assumed done; returns m->xrc. */
int mdci_exchange(struct mdc *m);

/* Build an item from a record reply; key given when the reply has none. */
struct mdc_item *mdci_item_from_msg(const struct wire_msg *msg, const void *key,
                                    size_t klen);
/* Append to a set; returns MDC_OK or MDC_ERR_NOMEM. */
int mdci_itemset_push(struct mdc_itemset *set, struct mdc_item *it);

/* ---- TLS (tls.c) ---------------------------------------------------------
 * Contexts are reference-counted: a pool's servers share one. */
struct mdci_tls;
#define MDCI_TLS_EFAIL (-2) /* read/write: TLS error, message set */
/* Build a context; MDC_OK, or an error code with the message in err. */
int mdci_tls_new(const struct mdc_tls_config *cfg, struct mdci_tls **out,
                 char *err, size_t errlen);
void mdci_tls_ref(struct mdci_tls *t);
void mdci_tls_unref(struct mdci_tls *t);
/* Use context t (NULL: plain) from the next connection on; closes. */
void mdci_set_tls_shared(struct mdc *m, struct mdci_tls *t);
/* The TCP connection is up: create the SSL object (MDC_OK or error set). */
int mdci_tls_start(struct mdc *m);
/* One handshake step: 1 done, 0 wait for m->tls_want, -1 failed (set). */
int mdci_tls_handshake(struct mdc *m);
/* As send()/recv() with MSG_DONTWAIT: > 0 bytes, 0 EOF (read), -1 with
 * errno (EAGAIN: retry), or MDCI_TLS_EFAIL (MDC_ERR_TLS, message set). */
ssize_t mdci_tls_write(struct mdc *m, const void *buf, size_t len);
ssize_t mdci_tls_read(struct mdc *m, void *buf, size_t cap);
/* Decrypted bytes wait inside OpenSSL (poll() would not say so). */
bool mdci_tls_pending(const struct mdc *m);
/* Send close_notify if the session is up (never waits), free the SSL. */
void mdci_tls_close(struct mdc *m);

/* Read boot_id and data_generation out of STATS lines (0 when absent). */
void mdci_parse_identity(const uint8_t *v, size_t n, uint64_t *boot,
                         uint64_t *gen);

/* Used by the pool to build handles with the pool's settings. */
struct mdc *mdci_create_spec(const char *spec);

#endif
