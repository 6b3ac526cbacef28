/*
 * conn.c - libmdcached handles: addresses, non-blocking connect, buffers,
 * and the exchange engine.  An exchange is a batch of requests composed into
 * the handle's output buffer and a callback that consumes the replies; one
 * poll loop (mdci_run) drives any number of handles at once, which is how
 * both a single request and a pool's fan-out are carried.  All framing goes
 * through protocol/wire.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mdc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBURING
#include <liburing.h>
#include <pthread.h>
#endif

#define IN_CHUNK 16384u
#define OUT_KEEP (4u << 20) /* larger output buffers are freed after use */

/* The public codes mirror the wire statuses one to one. */
_Static_assert((int)MDC_NOT_FOUND == (int)WIRE_S_NOT_FOUND, "status");
_Static_assert((int)MDC_INVALID == (int)WIRE_S_INVALID, "status");
_Static_assert((int)MDC_UNKNOWN_OPCODE == (int)WIRE_S_UNKNOWN_OPCODE, "status");
_Static_assert((int)MDC_NOT_SUPPORTED == (int)WIRE_S_NOT_SUPPORTED, "status");
_Static_assert((int)MDC_AUTH_REQUIRED == (int)WIRE_S_AUTH_REQUIRED, "status");
_Static_assert((int)MDC_SET == (int)WIRE_OP_SET &&
                   (int)MDC_PREPEND == (int)WIRE_OP_PREPEND,
               "store modes are opcodes");
_Static_assert(sizeof(struct mdc_tag) == WIRE_TAG_LEN, "tag layout");

int64_t mdci_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *mdc_lib_version(void)
{
    return MDC_VERSION_STRING;
}

const char *mdc_strerror(int rc)
{
    switch (rc) {
    case MDC_ERR_ARG: return "invalid argument";
    case MDC_ERR_NOMEM: return "out of memory";
    case MDC_ERR_CONNECT: return "cannot connect";
    case MDC_ERR_TIMEOUT: return "timeout";
    case MDC_ERR_IO: return "connection lost";
    case MDC_ERR_PROTOCOL: return "protocol error";
    case MDC_ERR_DOWN: return "server marked down";
    case MDC_ERR_PARTIAL: return "some servers failed";
    case MDC_ERR_NO_SERVERS: return "no servers";
    case MDC_ERR_TLS: return "TLS handshake or certificate verification failed";
    default:
        if (rc >= 0 && rc <= 0xFFFF)
            return wire_strstatus((uint16_t)rc);
        return "unknown error";
    }
}

int mdci_seterr(struct mdc *m, int rc, const char *fmt, ...)
{
    va_list ap;
    m->err = rc;
    va_start(ap, fmt);
    vsnprintf(m->errstr, sizeof(m->errstr), fmt, ap);
    va_end(ap);
    return rc;
}

int mdci_setstatus(struct mdc *m, int status, const struct wire_msg *msg)
{
    if (status == MDC_OK) {
        m->err = MDC_OK;
        strcpy(m->errstr, "ok");
        return MDC_OK;
    }
    /* An error reply may carry a human-readable message as its value. */
    if (msg != NULL && msg->hdr.vlen > 0 && msg->hdr.vlen < 160 &&
        msg->hdr.status >= WIRE_S_UNKNOWN_OPCODE)
        return mdci_seterr(m, status, "%s: %s (%.*s)", m->label,
                           wire_strstatus((uint16_t)status), (int)msg->hdr.vlen,
                           (const char *)msg->value);
    return mdci_seterr(m, status, "%s: %s", m->label,
                       wire_strstatus((uint16_t)status));
}

int mdci_check_key(struct mdc *m, size_t klen)
{
    if (klen == 0 || klen > WIRE_MAX_KEY)
        return mdci_seterr(m, MDC_KEY_INVALID, "key length %zu not in 1..%u",
                           klen, WIRE_MAX_KEY);
    return MDC_OK;
}

/* ---- handles ------------------------------------------------------------ */

static struct mdc *handle_alloc(void)
{
    struct mdc *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    m->fd = -1;
    m->state = MDCI_CLOSED;
    m->connect_ms = MDCI_DEFAULT_CONNECT_MS;
    m->io_ms = MDCI_DEFAULT_IO_MS;
    m->next_opaque = 1;
    strcpy(m->errstr, "ok");
    return m;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* Names: libmemcached omits the port for its own default port (11211) when
 * it builds ketama points, so we do the same to land keys where it does. */
static int set_names(struct mdc *m)
{
    size_t n = strlen(m->host) + 16;
    m->name = malloc(n);
    m->label = malloc(n + 8);
    if (m->name == NULL || m->label == NULL)
        return -1;
    if (m->is_unix) {
        snprintf(m->name, n, "%s:0", m->host);
        snprintf(m->label, n + 8, "unix:%s", m->host);
    } else {
        if (m->port == 11211)
            snprintf(m->name, n, "%s", m->host);
        else
            snprintf(m->name, n, "%s:%u", m->host, (unsigned)m->port);
        if (strchr(m->host, ':') != NULL)
            snprintf(m->label, n + 8, "[%s]:%u", m->host, (unsigned)m->port);
        else
            snprintf(m->label, n + 8, "%s:%u", m->host, (unsigned)m->port);
    }
    return 0;
}

mdc_t *mdc_create_tcp(const char *host, uint16_t port)
{
    if (host == NULL || *host == '\0')
        return NULL;
    struct mdc *m = handle_alloc();
    if (m == NULL)
        return NULL;
    m->port = port ? port : MDC_DEFAULT_PORT;
    m->host = xstrdup(host);
    if (m->host == NULL || set_names(m) < 0) {
        mdc_destroy(m);
        return NULL;
    }
    return m;
}

mdc_t *mdc_create_unix(const char *path)
{
    struct sockaddr_un sun;
    if (path == NULL || *path == '\0' || strlen(path) >= sizeof(sun.sun_path))
        return NULL;
    struct mdc *m = handle_alloc();
    if (m == NULL)
        return NULL;
    m->is_unix = true;
    m->host = xstrdup(path);
    if (m->host == NULL || set_names(m) < 0) {
        mdc_destroy(m);
        return NULL;
    }
    return m;
}

static int parse_port(const char *s, uint16_t *port)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

mdc_t *mdc_create(const char *spec)
{
    mdc_t *m = NULL;
    char *copy = NULL;
    uint16_t port = MDC_DEFAULT_PORT;

    if (spec == NULL || *spec == '\0')
        return NULL;
    if (strncmp(spec, "unix:", 5) == 0)
        return mdc_create_unix(spec + 5);
    if (spec[0] == '/')
        return mdc_create_unix(spec);
    copy = xstrdup(spec);
    if (copy == NULL)
        goto out;
    char *host = copy;
    if (copy[0] == '[') {
        char *close = strchr(copy, ']');
        if (close == NULL)
            goto out;
        *close = '\0';
        host = copy + 1;
        if (close[1] == ':') {
            if (parse_port(close + 2, &port) < 0)
                goto out;
        } else if (close[1] != '\0') {
            goto out;
        }
    } else {
        char *colon = strchr(copy, ':');
        if (colon != NULL) {
            if (strchr(colon + 1, ':') != NULL) {
                /* a bare IPv6 address: no port */
            } else {
                *colon = '\0';
                if (parse_port(colon + 1, &port) < 0)
                    goto out;
            }
        }
    }
    m = mdc_create_tcp(host, port);
out:
    free(copy);
    return m;
}

struct mdc *mdci_create_spec(const char *spec)
{
    return mdc_create(spec);
}

void mdc_close(mdc_t *m)
{
    if (m == NULL)
        return;
    mdci_tls_close(m);
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
    m->state = MDCI_CLOSED;
    m->auth_pending = false;
    m->ident_pending = false;
    m->in.off = m->in.len = 0;
    m->out.off = m->out.len = 0;
}

int mdc_check(mdc_t *m)
{
    struct pollfd pfd;

    if (m == NULL)
        return MDC_ERR_ARG;
    if (m->fd < 0 || m->state != MDCI_READY)
        return MDC_OK;
    /* an idle connection has nothing to read: readable means the server
     * closed it (EOF), reset it, or sent bytes out of step */
    pfd.fd = m->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) == 0 && m->in.len == m->in.off &&
        !mdci_tls_pending(m))
        return MDC_OK;
    if (m->ssl != NULL && m->in.len == m->in.off) {
        /* TLS: a server sends records of its own after the handshake
         * (TLS 1.3 session tickets); reading them yields no data */
        uint8_t b[64];
        ssize_t n = mdci_tls_read(m, b, sizeof(b));
        if (n < 0 && n != MDCI_TLS_EFAIL && errno == EAGAIN)
            return MDC_OK;
    }
    mdc_close(m);
    return mdci_seterr(m, MDC_ERR_IO, "%s: idle connection closed by the "
                       "server or out of step; closed", m->label);
}

void mdc_destroy(mdc_t *m)
{
    if (m == NULL)
        return;
    mdc_close(m);
    mdci_tls_unref(m->tls);
    free(m->in.p);
    free(m->out.p);
    free(m->auth_user);
    free(m->auth_pass);
    free(m->host);
    free(m->name);
    free(m->label);
    free(m);
}

int mdc_set_timeouts(mdc_t *m, int connect_ms, int io_ms)
{
    if (m == NULL)
        return MDC_ERR_ARG;
    if (connect_ms <= 0 || io_ms <= 0)
        return mdci_seterr(m, MDC_ERR_ARG, "timeouts must be positive");
    m->connect_ms = connect_ms;
    m->io_ms = io_ms;
    return MDC_OK;
}

int mdc_set_retry_delay(mdc_t *m, int retry_ms)
{
    if (m == NULL)
        return MDC_ERR_ARG;
    if (retry_ms < 0)
        return mdci_seterr(m, MDC_ERR_ARG, "retry delay must be >= 0");
    m->retry_ms = retry_ms;
    return MDC_OK;
}

int mdc_error(const mdc_t *m)
{
    return m ? m->err : MDC_ERR_ARG;
}

const char *mdc_errstr(const mdc_t *m)
{
    return m ? m->errstr : "no handle";
}

const char *mdc_server_name(const mdc_t *m)
{
    return m ? m->name : "";
}

/* ---- connecting -----------------------------------------------------------
 */

static int resolve(struct mdc *m)
{
    if (m->naddrs > 0)
        return MDC_OK;
    if (m->is_unix) {
        struct sockaddr_un *sun = (struct sockaddr_un *)&m->addrs[0];
        memset(sun, 0, sizeof(*sun));
        sun->sun_family = AF_UNIX;
        strcpy(sun->sun_path, m->host); /* length checked at creation */
        m->addrlens[0] = sizeof(*sun);
        m->naddrs = 1;
        return MDC_OK;
    }
    struct addrinfo hints, *res = NULL;
    char portstr[8];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(portstr, sizeof(portstr), "%u", (unsigned)m->port);
    int rc = getaddrinfo(m->host, portstr, &hints, &res);
    if (rc != 0)
        return mdci_seterr(m, MDC_ERR_CONNECT, "%s: cannot resolve: %s",
                           m->label, gai_strerror(rc));
    for (struct addrinfo *ai = res; ai != NULL && m->naddrs < 8;
         ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(m->addrs[0]))
            continue;
        memcpy(&m->addrs[m->naddrs], ai->ai_addr, ai->ai_addrlen);
        m->addrlens[m->naddrs++] = ai->ai_addrlen;
    }
    freeaddrinfo(res);
    if (m->naddrs == 0)
        return mdci_seterr(m, MDC_ERR_CONNECT, "%s: no usable address",
                           m->label);
    return MDC_OK;
}

/* Mark a transport failure: close, remember the server is down. */
/* A receive that ended the reply early: e is 0 for the server's end of
 * file, else the errno (the poll loops and the io_uring fan-out alike). */
static void recv_failed(struct mdc *m, int e)
{
    if (e == 0)
        mdci_seterr(m, MDC_ERR_IO,
                    "%s: connection closed by the server before the reply "
                    "was complete",
                    m->label);
    else
        mdci_seterr(m, MDC_ERR_IO, "%s: recv: %s", m->label, strerror(e));
}

static int fail(struct mdc *m, int rc)
{
    mdc_close(m);
    if (m->retry_ms > 0 &&
        (rc == MDC_ERR_CONNECT || rc == MDC_ERR_IO || rc == MDC_ERR_TIMEOUT ||
         rc == MDC_ERR_TLS))
        m->down_until = mdci_now_ms() + m->retry_ms;
    m->busy = false;
    m->xrc = rc;
    m->err = rc;
    return rc;
}

/*
 * The connection is up.  The socket becomes blocking so that a lone
 * exchange waits for its reply in recv() itself (read_blocking()), one
 * system call per reply instead of poll() then recv(); the poll loop passes
 * MSG_DONTWAIT and never blocks.  If the flag cannot be changed the socket
 * stays non-blocking and every exchange uses the poll loop.
 */
static void conn_ready(struct mdc *m)
{
    if (m->ssl != NULL) {
        /* TLS: records are read whole by OpenSSL, so a lone exchange
         * waits in the poll loop (tls.c's BIO never blocks) */
        m->blocking = false;
    } else {
        int fl = fcntl(m->fd, F_GETFL);
        m->blocking = fl >= 0 && fcntl(m->fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
    }
    m->rcvtimeo_ms = 0;
    m->state = MDCI_READY;
    m->deadline = mdci_now_ms() + m->io_ms;
}

/* One step of the TLS handshake: READY when done, else still HANDSHAKE
 * waiting for m->tls_want.  MDC_OK, or the error (message set). */
static int handshake_step(struct mdc *m)
{
    int r = mdci_tls_handshake(m);
    if (r < 0)
        return m->err;
    if (r == 1)
        conn_ready(m);
    return MDC_OK;
}

/* The TCP connection is up: ready, or (TLS) the handshake starts, with the
 * connect timeout again as its bound.  MDC_OK, or the error (message
 * set). */
static int conn_up(struct mdc *m)
{
    if (m->tls == NULL) {
        conn_ready(m);
        return MDC_OK;
    }
    int rc = mdci_tls_start(m);
    if (rc != MDC_OK)
        return rc;
    m->state = MDCI_HANDSHAKE;
    m->deadline = mdci_now_ms() + m->connect_ms;
    return handshake_step(m);
}

/*
 * Start a non-blocking connect to address m->addr_cur onwards.  Returns
 * MDC_OK with state READY or CONNECTING, or an error when no address could
 * even be tried (message set).
 */
static int connect_start(struct mdc *m)
{
    int last_errno = 0;
    for (; m->addr_cur < m->naddrs; m->addr_cur++) {
        struct sockaddr *sa = (struct sockaddr *)&m->addrs[m->addr_cur];
        int fd = socket(sa->sa_family,
                        SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        if (sa->sa_family != AF_UNIX) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        if (connect(fd, sa, m->addrlens[m->addr_cur]) == 0) {
            m->fd = fd;
            return conn_up(m);
        }
        if (errno == EINPROGRESS || errno == EAGAIN) {
            /* EAGAIN: a Unix socket whose backlog is full */
            m->fd = fd;
            m->state = MDCI_CONNECTING;
            m->deadline = mdci_now_ms() + m->connect_ms;
            return MDC_OK;
        }
        last_errno = errno;
        close(fd);
    }
    return mdci_seterr(m, MDC_ERR_CONNECT, "%s: cannot connect: %s", m->label,
                       strerror(last_errno));
}

/* A pending connect finished (POLLOUT) or timed out. */
static int connect_finish(struct mdc *m, bool timed_out)
{
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (timed_out) {
        soerr = ETIMEDOUT;
    } else if (getsockopt(m->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
        soerr = errno;
    }
    if (soerr == 0)
        return conn_up(m);
    close(m->fd);
    m->fd = -1;
    m->state = MDCI_CLOSED;
    m->addr_cur++;
    if (m->addr_cur < m->naddrs && connect_start(m) == MDC_OK)
        return MDC_OK;
    if (soerr == ETIMEDOUT)
        return mdci_seterr(m, MDC_ERR_TIMEOUT, "%s: connect timed out",
                           m->label);
    return mdci_seterr(m, MDC_ERR_CONNECT, "%s: cannot connect: %s", m->label,
                       strerror(soerr));
}

int mdci_begin(struct mdc *m, mdci_on_msg on_msg, void *ctx)
{
    int rc;
    if (m->down_until != 0) {
        int64_t now = mdci_now_ms();
        if (now < m->down_until)
            return mdci_seterr(m, MDC_ERR_DOWN,
                               "%s: marked down after a failure; retry in "
                               "%lld ms",
                               m->label, (long long)(m->down_until - now));
        m->down_until = 0;
    }
    if (m->state == MDCI_CLOSED) {
        rc = resolve(m);
        if (rc != MDC_OK)
            return fail(m, rc);
        m->addr_cur = 0;
        rc = connect_start(m);
        if (rc != MDC_OK)
            return fail(m, rc);
        m->auth_due = m->auth_user != NULL;
        m->auth_pending = false;
        m->conn_serial++;
        m->ident_due = m->ident_want;
        m->ident_pending = false;
    }
    m->out.off = m->out.len = 0;
    m->on_msg = on_msg;
    m->ctx = ctx;
    m->busy = true;
    m->xrc = MDC_OK;
    if (m->auth_due && on_msg != NULL) {
        /* ahead of the request, in the same write */
        struct wire_hdr h;

        wire_hdr_request(&h, WIRE_OP_AUTH);
        h.opaque = mdci_opaque(m);
        rc = mdci_add(m, &h, NULL, 0, m->auth_user, strlen(m->auth_user),
                      m->auth_pass, strlen(m->auth_pass));
        if (rc != MDC_OK) {
            m->busy = false;
            return rc;
        }
        m->auth_due = false;
        m->auth_pending = true;
    }
    if (m->ident_due && on_msg != NULL) {
        /* the identity, also ahead of the request (after AUTH) */
        struct wire_hdr h;

        wire_hdr_request(&h, WIRE_OP_STATS);
        h.opaque = m->ident_opaque = mdci_opaque(m);
        rc = mdci_add(m, &h, NULL, 0, "identity", 8, NULL, 0);
        if (rc != MDC_OK) {
            m->busy = false;
            return rc;
        }
        m->ident_due = false;
        m->ident_pending = true;
    }
    return MDC_OK;
}

int mdc_set_auth(mdc_t *m, const char *user, const char *password)
{
    char *u, *p;

    if (m == NULL || user == NULL || password == NULL || user[0] == '\0' ||
        strlen(user) > WIRE_MAX_KEY)
        return m ? mdci_seterr(m, MDC_ERR_ARG, "mdc_set_auth: bad user")
                 : MDC_ERR_ARG;
    u = strdup(user);
    p = strdup(password);
    if (u == NULL || p == NULL) {
        free(u);
        free(p);
        return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory");
    }
    free(m->auth_user);
    free(m->auth_pass);
    m->auth_user = u;
    m->auth_pass = p;
    m->auth_due = true; /* also on the open connection, before the next op */
    return MDC_OK;
}

int mdc_connect(mdc_t *m)
{
    if (m == NULL)
        return MDC_ERR_ARG;
    if (m->state == MDCI_READY)
        return mdci_setstatus(m, MDC_OK, NULL);
    int rc = mdci_begin(m, NULL, NULL);
    if (rc != MDC_OK)
        return rc;
    if (m->state != MDCI_READY) {
        /* nothing to send: finishes once connected (and the TLS
         * handshake done) */
        mdci_run(&m, 1);
        if (m->xrc != MDC_OK)
            return m->xrc;
    }
    m->busy = false;
    return mdci_setstatus(m, MDC_OK, NULL);
}

/* ---- buffers --------------------------------------------------------------
 */

static int buf_reserve(struct mdci_buf *b, size_t more)
{
    if (b->cap - b->len >= more)
        return 0;
    if (b->off > 0) { /* compact first */
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->cap - b->len >= more)
            return 0;
    }
    size_t need = b->len + more;
    size_t cap = b->cap ? b->cap : IN_CHUNK;
    while (cap < need) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int mdci_add(struct mdc *m, struct wire_hdr *h, const struct mdc_tag *tags,
             size_t ntags, const void *key, size_t klen, const void *value,
             size_t vlen)
{
    if (ntags > UINT16_MAX)
        return mdci_seterr(m, MDC_TOO_MANY_TAGS, "%zu tags: at most %u", ntags,
                           UINT16_MAX);
    if (vlen > UINT32_MAX)
        return mdci_seterr(m, MDC_TOO_LARGE, "value of %zu bytes", vlen);
    h->ntags = (uint16_t)ntags;
    h->klen = (uint16_t)klen;
    h->vlen = (uint32_t)vlen;
    size_t size = WIRE_HDR_LEN + ntags * WIRE_TAG_LEN + klen + vlen;
    if (buf_reserve(&m->out, size) < 0)
        return mdci_seterr(m, MDC_ERR_NOMEM, "out of memory (%zu bytes)", size);
    uint8_t *p = m->out.p + m->out.len;
    wire_encode_header(p, h);
    p += WIRE_HDR_LEN;
    for (size_t i = 0; i < ntags; i++, p += WIRE_TAG_LEN)
        wire_encode_tag(p, tags[i].tkey, tags[i].tval);
    if (klen) {
        memcpy(p, key, klen);
        p += klen;
    }
    if (vlen)
        memcpy(p, value, vlen);
    m->out.len += size;
    return MDC_OK;
}

/* ---- the engine -----------------------------------------------------------
 */

static void exchange_done(struct mdc *m)
{
    m->busy = false;
    m->xrc = MDC_OK;
    m->out.off = m->out.len = 0;
    if (m->out.cap > OUT_KEEP) {
        free(m->out.p);
        m->out.p = NULL;
        m->out.cap = 0;
    }
}

/*
 * A TLS connection that fails before its first byte of data: in TLS 1.3
 * the server judges the client's certificate after the client's side of
 * the handshake is done, and a refusal can arrive as a reset rather than
 * an alert.  Report it as a TLS failure (true: done).
 */
static bool tls_refused(struct mdc *m, const char *why)
{
    if (m->ssl == NULL || m->tls_data)
        return false;
    mdci_seterr(m, MDC_ERR_TLS,
                "%s: TLS: the server closed the connection after the "
                "handshake (%s); does it want a client certificate?",
                m->label, why);
    fail(m, MDC_ERR_TLS);
    return true;
}

static void do_write(struct mdc *m)
{
    while (m->out.off < m->out.len) {
        ssize_t n;
        if (m->ssl != NULL)
            n = mdci_tls_write(m, m->out.p + m->out.off,
                               m->out.len - m->out.off);
        else
            n = send(m->fd, m->out.p + m->out.off, m->out.len - m->out.off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == MDCI_TLS_EFAIL) {
            fail(m, MDC_ERR_TLS);
            return;
        }
        if (n > 0) {
            m->out.off += (size_t)n;
            m->deadline = mdci_now_ms() + m->io_ms;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (tls_refused(m, n < 0 ? strerror(errno) : "nothing written"))
            return;
        mdci_seterr(m, MDC_ERR_IO, "%s: send: %s", m->label,
                    n < 0 ? strerror(errno) : "nothing written");
        fail(m, MDC_ERR_IO);
        return;
    }
}

/* Dispatch every whole message in the input buffer. */
static void dispatch(struct mdc *m)
{
    while (m->busy) {
        struct wire_msg msg;
        ssize_t n = wire_parse(m->in.p + m->in.off, m->in.len - m->in.off, &msg,
                               MDCI_MAX_RSP_BODY);
        if (n == WIRE_AGAIN)
            return;
        if (n < 0) {
            mdci_seterr(m, MDC_ERR_PROTOCOL, "%s: bad reply: %s", m->label,
                        wire_strerror((int)n));
            fail(m, MDC_ERR_PROTOCOL);
            return;
        }
        if (!(msg.hdr.flags & WIRE_F_RESPONSE)) {
            mdci_seterr(m, MDC_ERR_PROTOCOL,
                        "%s: reply without the "
                        "response flag",
                        m->label);
            fail(m, MDC_ERR_PROTOCOL);
            return;
        }
        m->in.off += (size_t)n;
        uint16_t st = msg.hdr.status;
        if (st == WIRE_S_BAD_MAGIC || st == WIRE_S_BAD_VERSION ||
            st == WIRE_S_MSG_TOO_LARGE) {
            /* The server closes after these: the operation returns the
             * status, and the connection is reopened next time. */
            mdci_setstatus(m, st, &msg);
            mdc_close(m);
            m->busy = false;
            m->xrc = st;
            return;
        }
        if (m->auth_pending && msg.hdr.opcode == WIRE_OP_AUTH) {
            /* mdc_set_auth()'s request, sent ahead of this exchange */
            m->auth_pending = false;
            if (st != WIRE_S_OK) {
                mdci_setstatus(m, st, &msg);
                mdc_close(m);
                m->busy = false;
                m->xrc = st;
                return;
            }
            continue;
        }
        if (m->ident_pending && msg.hdr.opcode == WIRE_OP_STATS &&
            msg.hdr.opaque == m->ident_opaque) {
            /* the identity asked ahead of this exchange; a server that
             * does not know the group (NOT_FOUND) leaves it unknown */
            m->ident_pending = false;
            m->ident_conn = m->conn_serial;
            m->ident_boot = m->ident_gen = 0;
            if (st == WIRE_S_OK)
                mdci_parse_identity(msg.value, msg.hdr.vlen, &m->ident_boot,
                                    &m->ident_gen);
            continue;
        }
        int rc = m->on_msg ? m->on_msg(m, &msg, m->ctx) : 1;
        if (rc < 0) {
            fail(m, rc);
            return;
        }
        if (rc == 1)
            exchange_done(m);
    }
}

static void do_read(struct mdc *m)
{
    for (;;) {
        if (buf_reserve(&m->in, IN_CHUNK) < 0) {
            mdci_seterr(m, MDC_ERR_NOMEM, "%s: out of memory reading",
                        m->label);
            fail(m, MDC_ERR_NOMEM);
            return;
        }
        ssize_t n;
        if (m->ssl != NULL)
            n = mdci_tls_read(m, m->in.p + m->in.len, m->in.cap - m->in.len);
        else
            n = recv(m->fd, m->in.p + m->in.len, m->in.cap - m->in.len,
                     MSG_DONTWAIT);
        if (n == MDCI_TLS_EFAIL) {
            fail(m, MDC_ERR_TLS);
            return;
        }
        if (n > 0) {
            m->in.len += (size_t)n;
            m->tls_data = true;
            m->deadline = mdci_now_ms() + m->io_ms;
            dispatch(m);
            if (!m->busy)
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (tls_refused(m, n == 0 ? "end of file" : strerror(errno)))
            return;
        recv_failed(m, n == 0 ? 0 : errno);
        fail(m, MDC_ERR_IO);
        return;
    }
}

/* The poll loop; fresh: ready connections start their I/O deadline now
 * (else each keeps the one it has, from its last progress). */
static void run(struct mdc **hs, size_t n, bool fresh)
{
    struct pollfd stackfds[16];
    struct pollfd *fds = stackfds;
    size_t *idx = NULL, stackidx[16];

    if (n > 16) {
        fds = malloc(n * sizeof(*fds));
        idx = malloc(n * sizeof(*idx));
        if (fds == NULL || idx == NULL) {
            for (size_t i = 0; i < n; i++)
                if (hs[i]->busy) {
                    mdci_seterr(hs[i], MDC_ERR_NOMEM, "out of memory");
                    fail(hs[i], MDC_ERR_NOMEM);
                }
            goto out;
        }
    } else {
        idx = stackidx;
    }

    int64_t now = mdci_now_ms();
    if (fresh)
        for (size_t i = 0; i < n; i++)
            if (hs[i]->busy && hs[i]->state == MDCI_READY)
                hs[i]->deadline = now + hs[i]->io_ms;

    for (;;) {
        size_t nfds = 0;
        int timeout = -1;
        now = mdci_now_ms();
        for (size_t i = 0; i < n; i++) {
            struct mdc *m = hs[i];
            if (!m->busy)
                continue;
            if (now >= m->deadline) {
                if (m->state == MDCI_CONNECTING) {
                    if (connect_finish(m, true) != MDC_OK) {
                        fail(m, m->err);
                        continue;
                    }
                    if (m->state != MDCI_CONNECTING)
                        continue;
                } else if (m->state == MDCI_HANDSHAKE) {
                    mdci_seterr(m, MDC_ERR_TIMEOUT,
                                "%s: TLS handshake not done within %d ms",
                                m->label, m->connect_ms);
                    fail(m, MDC_ERR_TIMEOUT);
                    continue;
                } else {
                    mdci_seterr(m, MDC_ERR_TIMEOUT, "%s: no reply within %d ms",
                                m->label, m->io_ms);
                    fail(m, MDC_ERR_TIMEOUT);
                    continue;
                }
            }
            short ev;
            if (m->state == MDCI_CONNECTING)
                ev = POLLOUT;
            else if (m->state == MDCI_HANDSHAKE)
                ev = m->tls_want;
            else if (m->ssl != NULL)
                /* OpenSSL may need to read to write, or the reverse */
                ev = (short)(POLLIN |
                             (((m->out.off < m->out.len &&
                                !m->tls_wr_wants_read) ||
                               m->tls_rd_wants_write)
                                  ? POLLOUT
                                  : 0));
            else if (m->out.off < m->out.len)
                ev = POLLIN | POLLOUT;
            else
                ev = POLLIN;
            fds[nfds].fd = m->fd;
            fds[nfds].events = ev;
            fds[nfds].revents = 0;
            idx[nfds++] = i;
            int64_t left = m->deadline - now;
            if (mdci_tls_pending(m))
                left = 0; /* decrypted bytes already wait */
            if (timeout < 0 || left < timeout)
                timeout = (int)(left > 0 ? left : 0);
        }
        if (nfds == 0)
            break;
        int rc = poll(fds, nfds, timeout);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            for (size_t k = 0; k < nfds; k++) {
                mdci_seterr(hs[idx[k]], MDC_ERR_IO, "poll: %s",
                            strerror(errno));
                fail(hs[idx[k]], MDC_ERR_IO);
            }
            break;
        }
        for (size_t k = 0; k < nfds; k++) {
            struct mdc *m = hs[idx[k]];
            short re = fds[k].revents;
            if (m->state == MDCI_READY && mdci_tls_pending(m))
                re |= POLLIN;
            if (re == 0)
                continue;
            if (m->state == MDCI_CONNECTING || m->state == MDCI_HANDSHAKE) {
                int crc = m->state == MDCI_CONNECTING
                              ? connect_finish(m, false)
                              : handshake_step(m);
                if (crc != MDC_OK) {
                    fail(m, m->err);
                    continue;
                }
                if (m->state == MDCI_READY) {
                    if (m->on_msg == NULL) { /* mdc_connect(): done */
                        exchange_done(m);
                        continue;
                    }
                    do_write(m);
                }
                continue;
            }
            if ((re & POLLOUT) ||
                (m->ssl != NULL && m->out.off < m->out.len))
                do_write(m);
            if (m->busy && ((re & (POLLIN | POLLHUP | POLLERR)) ||
                            (m->ssl != NULL && m->tls_rd_wants_write)))
                do_read(m);
        }
    }
out:
    if (fds != stackfds)
        free(fds);
    if (idx != stackidx)
        free(idx);
}

/* ---- the io_uring fan-out -------------------------------------------------
 *
 * The same exchanges as run() over io_uring: every handle's send and a
 * receive into its input buffer go in one submission, and one wait gathers
 * the completions (io_uring_submit_and_wait_timeout: one system call for N
 * sends and the first replies, then one per wait while replies are still
 * out).  Only plain connections that are up take this path (TLS goes
 * through OpenSSL's BIO, a pending connect needs the poll loop's rules):
 * mdci_uring_run() refuses anything else and the caller uses mdci_run().
 */
#ifdef HAVE_LIBURING
struct mdci_uring {
    struct io_uring ring;
    unsigned entries;
    unsigned forks; /* uring_forks when made: not carried across fork() */
    bool up;
};

/* Counted in every child at fork(): a ring made before is the parent's
 * (checked without a getpid() system call per operation). */
static _Atomic unsigned uring_forks;
static pthread_once_t uring_once = PTHREAD_ONCE_INIT;
static void uring_child(void)
{
    uring_forks++;
}
static void uring_atfork(void)
{
    pthread_atfork(NULL, NULL, uring_child);
}

static int uring_setup(struct mdci_uring *u, unsigned entries)
{
    struct io_uring_params pr;

    memset(&pr, 0, sizeof(pr));
    /* completions are run when this thread waits: no interrupt-time task
     * work, no wake-ups while it is busy (kernel 6.1+) */
    pr.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(entries, &u->ring, &pr) < 0) {
        memset(&pr, 0, sizeof(pr));
        if (io_uring_queue_init_params(entries, &u->ring, &pr) < 0)
            return -1;
    }
    u->entries = entries;
    u->forks = uring_forks;
    u->up = true;
    return 0;
}

struct mdci_uring *mdci_uring_new(void)
{
    pthread_once(&uring_once, uring_atfork);
    return calloc(1, sizeof(struct mdci_uring));
}

void mdci_uring_free(struct mdci_uring *u)
{
    if (u == NULL)
        return;
    if (u->up && u->forks == uring_forks)
        io_uring_queue_exit(&u->ring);
    free(u);
}

/* A ring of at least 2n entries for this process; false when io_uring is
 * unavailable (kernel, seccomp, sysctl) */
static bool uring_ready(struct mdci_uring *u, size_t n)
{
    unsigned want = 8;
    while (want < 2 * n + 2)
        want *= 2;
    if (u->up && u->forks != uring_forks) /* the parent's ring: leave it */
        u->up = false;
    if (u->up && u->entries >= want)
        return true;
    if (u->up) {
        io_uring_queue_exit(&u->ring);
        u->up = false;
    }
    return uring_setup(u, want) == 0;
}

#define UR_SEND 0u
#define UR_RECV 1u
#define UR_CANCEL 2u

static bool ur_send(struct mdci_uring *u, struct mdc *m, size_t i)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (sqe == NULL)
        return false;
    io_uring_prep_send(sqe, m->fd, m->out.p + m->out.off,
                       m->out.len - m->out.off, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, (uint64_t)i << 2 | UR_SEND);
    return true;
}

static bool ur_recv(struct mdci_uring *u, struct mdc *m, size_t i)
{
    struct io_uring_sqe *sqe;
    if (buf_reserve(&m->in, IN_CHUNK) < 0)
        return false;
    sqe = io_uring_get_sqe(&u->ring);
    if (sqe == NULL)
        return false;
    io_uring_prep_recv(sqe, m->fd, m->in.p + m->in.len,
                       m->in.cap - m->in.len, 0);
    io_uring_sqe_set_data64(sqe, (uint64_t)i << 2 | UR_RECV);
    return true;
}

int mdci_uring_run(struct mdci_uring *u, struct mdc **hs, size_t n)
{
    uint8_t stack_out[64];
    uint8_t *out = stack_out; /* operations in flight per handle */
    uint8_t stack_bad[64];
    uint8_t *bad = stack_bad; /* failed: 1, cancel sent: 2; closed once
                                 nothing is in flight */
    size_t inflight = 0, busy = 0;
    int ret = -1;

    if (u == NULL || n == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!hs[i]->busy || hs[i]->state != MDCI_READY ||
            hs[i]->ssl != NULL || hs[i]->out.off >= hs[i]->out.len)
            return -1;
    if (!uring_ready(u, n))
        return -1;
    if (n > 64) {
        out = calloc(n, 1);
        bad = calloc(n, 1);
        if (out == NULL || bad == NULL)
            goto out;
    } else {
        memset(out, 0, n);
        memset(bad, 0, n);
    }
    /* reserve first: a buffer that cannot grow leaves the poll loop to
     * report it, before anything was queued */
    for (size_t i = 0; i < n; i++)
        if (buf_reserve(&hs[i]->in, IN_CHUNK) < 0)
            goto out;
    int64_t now = mdci_now_ms();
    for (size_t i = 0; i < n; i++) {
        /* recv first: the reply may come before the send's completion
         * is seen; both are queued in this one submission */
        if (!ur_recv(u, hs[i], i) || !ur_send(u, hs[i], i)) {
            /* cannot happen with 2n entries; nothing was submitted */
            io_uring_queue_exit(&u->ring);
            u->up = false;
            goto out;
        }
        out[i] = 2;
        hs[i]->deadline = now + hs[i]->io_ms;
    }
    inflight = 2 * n;
    busy = n;
    ret = 0;
    bool first = true;
    while (inflight > 0) {
        struct io_uring_cqe *cqe = NULL;
        int64_t dl = INT64_MAX;
        now = mdci_now_ms();
        for (size_t i = 0; i < n; i++)
            if (hs[i]->busy && !bad[i] && hs[i]->deadline < dl)
                dl = hs[i]->deadline;
        int64_t left = dl == INT64_MAX ? 1000 : dl - now;
        if (left < 0)
            left = 0;
        struct __kernel_timespec ts = {.tv_sec = left / 1000,
                                       .tv_nsec = (left % 1000) * 1000000};
        /* wait for every completion still out: one call returns when all
         * replies are in (or at the first deadline) */
        int r = io_uring_submit_and_wait_timeout(&u->ring, &cqe,
                                                 (unsigned)inflight, &ts,
                                                 NULL);
        if (getenv("MDC_URING_DEBUG"))
            fprintf(stderr, "uring: wait %lld ms inflight %zu -> %d at %lld\n",
                    (long long)left, inflight, r, (long long)mdci_now_ms());
        if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN &&
            r != -EBUSY) {
            if (first) {
                /* the ring refuses this thread (SINGLE_ISSUER: a pool
                 * moved to another thread) or is broken: a new ring next
                 * time; nothing was queued in the kernel */
                io_uring_queue_exit(&u->ring);
                u->up = false;
                ret = -1;
                goto out;
            }
            for (size_t i = 0; i < n; i++)
                if (hs[i]->busy && !bad[i]) {
                    mdci_seterr(hs[i], MDC_ERR_IO, "io_uring: %s",
                                strerror(-r));
                    bad[i] = 1;
                }
        }
        first = false;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&u->ring, head, cqe)
        {
            uint64_t d = io_uring_cqe_get_data64(cqe);
            size_t i = (size_t)(d >> 2);
            unsigned kind = (unsigned)(d & 3);
            int res = cqe->res;
            struct mdc *m = hs[i];
            seen++;
            if (kind == UR_CANCEL)
                continue; /* not counted in flight */
            inflight--;
            out[i]--;
            if (bad[i] || !m->busy)
                continue;
            if (kind == UR_SEND) {
                if (res > 0) {
                    /* (no new deadline: the send happened at the
                     * submission, this is only its completion seen) */
                    m->out.off += (size_t)res;
                    if (m->out.off < m->out.len) {
                        if (ur_send(u, m, i)) {
                            out[i]++;
                            inflight++;
                        } else {
                            mdci_seterr(m, MDC_ERR_IO, "%s: io_uring: no "
                                        "room to send", m->label);
                            bad[i] = 1;
                        }
                    }
                } else {
                    mdci_seterr(m, MDC_ERR_IO, "%s: send: %s", m->label,
                                res < 0 ? strerror(-res) : "nothing written");
                    bad[i] = 1;
                }
                continue;
            }
            /* UR_RECV */
            if (res > 0) {
                m->in.len += (size_t)res;
                m->deadline = mdci_now_ms() + m->io_ms;
                dispatch(m);
                if (!m->busy) { /* done, or failed (closed: fd is -1) */
                    busy--;
                    continue;
                }
                if (ur_recv(u, m, i)) {
                    out[i]++;
                    inflight++;
                } else {
                    mdci_seterr(m, MDC_ERR_NOMEM, "%s: out of memory "
                                "reading", m->label);
                    bad[i] = 1;
                }
                continue;
            }
            recv_failed(m, -res);
            bad[i] = 1;
        }
        io_uring_cq_advance(&u->ring, seen);
        /* deadlines: a handle without progress for io_ms times out */
        now = mdci_now_ms();
        for (size_t i = 0; i < n; i++)
            if (hs[i]->busy && !bad[i] && now >= hs[i]->deadline) {
                mdci_seterr(hs[i], MDC_ERR_TIMEOUT,
                            "%s: no reply within %d ms", hs[i]->label,
                            hs[i]->io_ms);
                bad[i] = 1;
            }
        /* failed handles: cancel what they still have in flight (the
         * kernel holds the socket and our buffers until it completes),
         * then close them */
        for (size_t i = 0; i < n; i++) {
            if (!bad[i] || !hs[i]->busy)
                continue;
            if (out[i] > 0) {
                struct io_uring_sqe *sqe;
                if (bad[i] == 1 &&
                    (sqe = io_uring_get_sqe(&u->ring)) != NULL) {
                    io_uring_prep_cancel_fd(sqe, hs[i]->fd,
                                            IORING_ASYNC_CANCEL_ALL);
                    io_uring_sqe_set_data64(sqe,
                                            (uint64_t)i << 2 | UR_CANCEL);
                    bad[i] = 2;
                }
                continue; /* closed once drained */
            }
            int rc = hs[i]->err;
            fail(hs[i], rc < 0 ? rc : MDC_ERR_IO);
            busy--;
        }
        if (busy == 0 && inflight == 0)
            break;
    }
out:
    if (out != stack_out)
        free(out);
    if (bad != stack_bad)
        free(bad);
    return ret;
}
#else
struct mdci_uring *mdci_uring_new(void)
{
    return NULL;
}
void mdci_uring_free(struct mdci_uring *u)
{
    (void)u;
}
int mdci_uring_run(struct mdci_uring *u, struct mdc **hs, size_t n)
{
    (void)u;
    (void)hs;
    (void)n;
    return -1;
}
#endif

void mdci_run(struct mdc **hs, size_t n)
{
    run(hs, n, true);
}

void mdci_exchange_write(struct mdc *m)
{
    if (m->busy && m->state == MDCI_READY)
        do_write(m);
}

/*
 * One handle whose requests are all sent: wait for the replies in recv()
 * itself, the socket blocking with SO_RCVTIMEO set to the I/O timeout (the
 * same rule as the poll loop's: no progress for io_ms is a timeout).
 * Returns with the exchange complete or failed, or still busy when the
 * poll loop has to take over (a signal interrupted the wait, or the
 * timeout could not be set).
 */
static void read_blocking(struct mdc *m)
{
    if (m->rcvtimeo_ms != m->io_ms) {
        struct timeval tv = {.tv_sec = m->io_ms / 1000,
                             .tv_usec = (m->io_ms % 1000) * 1000};
        if (setsockopt(m->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
            return;
        m->rcvtimeo_ms = m->io_ms;
    }
    while (m->busy) {
        if (buf_reserve(&m->in, IN_CHUNK) < 0) {
            mdci_seterr(m, MDC_ERR_NOMEM, "%s: out of memory reading",
                        m->label);
            fail(m, MDC_ERR_NOMEM);
            return;
        }
        ssize_t n = recv(m->fd, m->in.p + m->in.len, m->in.cap - m->in.len, 0);
        if (n > 0) {
            m->in.len += (size_t)n;
            /* progress: the deadline the poll loop would keep after EINTR */
            m->deadline = mdci_now_ms() + m->io_ms;
            dispatch(m);
            continue;
        }
        if (n < 0 && errno == EINTR)
            return; /* the poll loop goes on to the same deadline */
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            mdci_seterr(m, MDC_ERR_TIMEOUT, "%s: no reply within %d ms",
                        m->label, m->io_ms);
            fail(m, MDC_ERR_TIMEOUT);
            return;
        }
        recv_failed(m, n == 0 ? 0 : errno);
        fail(m, MDC_ERR_IO);
        return;
    }
}

int mdci_exchange(struct mdc *m)
{
    /* Write what can go at once; if everything went, wait for the reply in
     * recv(), else (a connect pending, a batch larger than the socket
     * buffer) the poll loop writes and reads together. */
    mdci_exchange_write(m);
    if (m->busy && m->state == MDCI_READY && m->blocking && m->out.len > 0 &&
        m->out.off == m->out.len) {
        /* do_write() set the deadline when the last byte went */
        read_blocking(m);
        if (m->busy)
            run(&m, 1, false);
    } else if (m->busy) {
        run(&m, 1, true);
    }
    return m->xrc;
}

/* ---- items ----------------------------------------------------------------
 */

struct mdc_item *mdci_item_from_msg(const struct wire_msg *msg, const void *key,
                                    size_t klen)
{
    const struct wire_hdr *h = &msg->hdr;
    if (h->klen > 0) {
        key = msg->key;
        klen = h->klen;
    }
    size_t tagbytes = (size_t)h->ntags * sizeof(struct mdc_tag);
    size_t size = sizeof(struct mdc_item) + tagbytes + klen + 1 + h->vlen + 1;
    struct mdc_item *it = malloc(size);
    if (it == NULL)
        return NULL;
    uint8_t *p = (uint8_t *)(it + 1);
    it->tags = (struct mdc_tag *)p;
    it->ntags = h->ntags;
    for (size_t i = 0; i < h->ntags; i++) {
        it->tags[i].tkey = (int32_t)wire_get_u32(msg->tags + i * WIRE_TAG_LEN);
        it->tags[i].tval =
            (int32_t)wire_get_u32(msg->tags + i * WIRE_TAG_LEN + 4);
    }
    p += tagbytes;
    it->key = (char *)p;
    it->klen = klen;
    if (klen)
        memcpy(p, key, klen);
    p[klen] = '\0';
    p += klen + 1;
    it->value = (char *)p;
    it->vlen = h->vlen;
    if (h->vlen)
        memcpy(p, msg->value, h->vlen);
    p[h->vlen] = '\0';
    it->flags = h->iflags;
    it->cas = h->cas;
    it->ttl = h->expiry;
    it->state = 0; /* a lease get's W/X/Z (none in other replies) */
    if (h->flags & WIRE_F_WIN)
        it->state |= MDC_ITEM_WIN;
    if (h->flags & WIRE_F_STALE)
        it->state |= MDC_ITEM_STALE;
    if (h->flags & WIRE_F_PENDING)
        it->state |= MDC_ITEM_PENDING;
    if (h->ntags == 0)
        it->tags = NULL;
    return it;
}

void mdc_item_free(struct mdc_item *it)
{
    free(it);
}

int mdci_itemset_push(struct mdc_itemset *set, struct mdc_item *it)
{
    if (set->count == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        struct mdc_item **p = realloc(set->items, cap * sizeof(*p));
        if (p == NULL)
            return MDC_ERR_NOMEM;
        set->items = p;
        set->cap = cap;
    }
    set->items[set->count++] = it;
    return MDC_OK;
}

void mdc_itemset_free(struct mdc_itemset *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->count; i++)
        free(set->items[i]);
    free(set->items);
    set->items = NULL;
    set->count = set->cap = 0;
}

/* "boot_id N\ndata_generation N\n..." (STATS identity, or general STATS) */
void mdci_parse_identity(const uint8_t *v, size_t n, uint64_t *boot,
                         uint64_t *gen)
{
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && v[e] != '\n')
            e++;
        size_t l = e - i;
        const char *line = (const char *)v + i;
        uint64_t *dst = NULL;
        size_t skip = 0;
        if (l > 8 && memcmp(line, "boot_id ", 8) == 0)
            dst = boot, skip = 8;
        else if (l > 16 && memcmp(line, "data_generation ", 16) == 0)
            dst = gen, skip = 16;
        if (dst != NULL) {
            uint64_t x = 0;
            for (size_t k = skip; k < l && line[k] >= '0' && line[k] <= '9';
                 k++)
                x = x * 10 + (uint64_t)(line[k] - '0');
            *dst = x;
        }
        i = e + 1;
    }
}
