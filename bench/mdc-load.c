/*
 * mdc-load.c - closed-loop load generator for mdcached, memcached and Redis.
 *
 * An epoll loop per thread (one thread by default) drives many non-blocking
 * connections, each keeping up to --depth requests in flight.  The wire
 * format is a module (load_proto.h): native (protocol/wire.h), memcached text
 * or RESP.  With --rate the load is an open loop instead: requests leave on
 * a fixed schedule (RATE per second in all, evenly spaced, round-robin over
 * the connections, pipelined behind any still unanswered), and a request's
 * latency runs from the moment the schedule meant to send it, so a server
 * that falls behind is charged for the queue it builds (no coordinated
 * omission).  With --window N (or --eager) a closed loop keeps N requests in
 * flight per connection as a sliding window: the replies one read() brings
 * are answered by as many new requests in one write (as libevent-based
 * generators like memtier_benchmark do); --window-each writes each new
 * request on its own as its reply is parsed.  Reports throughput, latency
 * percentiles from a log-linear histogram, and the server's CPU time per
 * request read from /proc/PID/stat over the measured window
 * (docs/benchmarking.md).  Issue 3 item 10.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#include "load_proto.h"
#include "load_zipf.h"

#define PREFILL_DEPTH 64
/* a prefill set refused for want of memory is sent again until stored,
 * for up to this long from its first refusal (ns) */
#define PREFILL_PATIENCE_NS 1000000000ull
#define RBUF_MIN (64 * 1024)

/* ---- options ------------------------------------------------------------ */

static struct {
    const char *server;
    const struct load_proto *proto;
    int conns;
    int depth;
    int threads;
    double get_frac;
    uint64_t keys;
    size_t key_size;
    size_t value_size;
    double zipf; /* 0 = uniform */
    bool prefill;
    double duration;
    double warmup;
    long server_pid;
    const char *json; /* NULL, "-" or a path */
    const char *label;
    uint64_t seed;
    bool quiet;
    bool eager; /* refill each reply at once instead of per whole batch */
    bool each;  /* --window-each: one write per reply (implies eager) */
    double rate; /* open loop: requests per second in all; 0 = closed loop */
    bool tls;    /* --tls: OpenSSL client, no certificate check (bench only) */
} opt = {
    .conns = 50,
    .depth = 1,
    .threads = 1,
    .get_frac = 0.9,
    .keys = 100000,
    .key_size = 16,
    .value_size = 32,
    .duration = 5,
    .warmup = 1,
    .seed = 1,
};

/* ---- latency histogram: log-linear, 1/32 relative precision ------------- */

#define HSUB_BITS 5
#define HSUB (1u << HSUB_BITS)
#define HBUCKETS (HSUB * 2 + (64 - HSUB_BITS - 1) * HSUB)

struct hist {
    uint64_t c[HBUCKETS];
    uint64_t n, sum, max;
};

static unsigned hist_index(uint64_t v)
{
    if (v < 2 * HSUB)
        return (unsigned)v;
    unsigned m = 63u - (unsigned)__builtin_clzll(v); /* >= HSUB_BITS + 1 */
    unsigned shift = m - HSUB_BITS;
    return 2 * HSUB + (m - HSUB_BITS - 1) * HSUB +
           (unsigned)((v >> shift) - HSUB);
}

/* The middle of bucket i's range. */
static double hist_value(unsigned i)
{
    if (i < 2 * HSUB)
        return i;
    unsigned m = (i - 2 * HSUB) / HSUB + HSUB_BITS + 1;
    unsigned shift = m - HSUB_BITS;
    uint64_t lo = ((uint64_t)((i - 2 * HSUB) % HSUB + HSUB)) << shift;
    return (double)lo + (double)(1ull << shift) / 2.0;
}

static inline void hist_add(struct hist *h, uint64_t v)
{
    h->c[hist_index(v)]++;
    h->n++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

static void hist_merge(struct hist *to, const struct hist *from)
{
    for (unsigned i = 0; i < HBUCKETS; i++)
        to->c[i] += from->c[i];
    to->n += from->n;
    to->sum += from->sum;
    if (from->max > to->max)
        to->max = from->max;
}

static double hist_pct(const struct hist *h, double p)
{
    uint64_t want = (uint64_t)ceil(p / 100.0 * (double)h->n), seen = 0;
    if (h->n == 0)
        return 0;
    if (want == 0)
        want = 1;
    for (unsigned i = 0; i < HBUCKETS; i++) {
        seen += h->c[i];
        if (seen >= want)
            return fmin(hist_value(i), (double)h->max);
    }
    return (double)h->max;
}

/* ---- time, randomness ------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_u01(void *s)
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- keys ------------------------------------------------------------- */

static struct zipf zipf;
static uint32_t *zipf_scramble; /* rank - 1 -> key index */
static uint8_t *value_buf;

/* Key i as "k" followed by zero-padded decimal digits, key_size bytes. */
static void key_of(uint64_t i, char *out)
{
    size_t p = opt.key_size;
    memset(out, '0', opt.key_size);
    out[0] = 'k';
    while (i != 0 && p > 1) {
        out[--p] = (char)('0' + i % 10);
        i /= 10;
    }
}

static uint64_t pick_key(uint64_t *rng)
{
    if (opt.zipf > 0)
        return zipf_scramble[zipf_next(&zipf, rng_u01, rng) - 1];
    return ((rng_next(rng) >> 32) * opt.keys) >> 32;
}

/* ---- connections and threads ------------------------------------------ */

struct inflight {
    uint64_t t; /* when composed, ns */
    uint64_t key;
    uint64_t since; /* prefill: when the key was first refused (ns), or 0 */
    uint32_t tries; /* prefill: refusals of the key so far */
    uint32_t opaque;
    uint8_t op;
};

/* a prefill set refused for want of memory, to be sent again */
struct retry {
    uint64_t key, since;
    uint32_t tries;
};

struct conn {
    int fd;
    void *ssl; /* SSL * with --tls, else NULL */
    struct thread *th;
    uint8_t *rbuf;
    size_t rlen, rcap;
    uint8_t *wbuf;
    size_t wlen, woff, wcap;
    bool want_out;
    struct inflight *q; /* ring of in-flight requests (grows, open loop) */
    uint32_t qhead, qn, qcap;
    uint32_t next_opaque;
    uint64_t pre_next, pre_end; /* prefill: key range still to send */
    struct retry *retry;        /* prefill: refused keys to send again */
    uint32_t nretry, cretry;
};

struct thread {
    int id;
    pthread_t tid;
    int epfd;
    struct conn *conns;
    int nconns;
    uint64_t rng;
    bool prefilling, measuring;
    /* open loop: the schedule */
    uint64_t next_send;  /* ns, when the next request is due */
    double interval;     /* ns between this thread's requests */
    double sched_frac;   /* fractional ns carried between steps */
    int rr;              /* next connection to send on */
    uint64_t scheduled;  /* requests due within the measured window */
    /* counters for the measured window */
    uint64_t gets, sets, hits, misses, errors;
    struct hist lat;
    uint64_t prefill_errors;
    char prefill_err[72];    /* the first failed set's reply, printable */
    uint64_t prefill_nomem;  /* sets refused for memory, then sent again */
    uint32_t prefill_tries;  /* the most refusals of one key */
};

static struct {
    pthread_barrier_t ready;    /* threads connected and prefilled */
    pthread_barrier_t go;       /* start times published */
    _Atomic uint64_t t_measure; /* ns */
    _Atomic uint64_t t_end;     /* ns */
    _Atomic bool prefill_stop;  /* a key refused for too long: stop */
} run;

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mdc-load: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int connect_server(void)
{
    const char *s = opt.server;
    int fd;

    if (strchr(s, '/') != NULL) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        if (strlen(s) >= sizeof(sun.sun_path))
            die("socket path too long: %s", s);
        strcpy(sun.sun_path, s);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
            die("connect %s: %s", s, strerror(errno));
    } else {
        char host[256], port[16];
        const char *colon = strrchr(s, ':');
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
        if (s[0] == '[') { /* [v6]:port */
            const char *rb = strchr(s, ']');
            if (rb == NULL)
                die("bad address %s", s);
            snprintf(host, sizeof(host), "%.*s", (int)(rb - s - 1), s + 1);
            colon = rb[1] == ':' ? rb + 1 : NULL;
        } else {
            snprintf(host, sizeof(host), "%.*s",
                     (int)(colon ? (size_t)(colon - s) : strlen(s)), s);
        }
        snprintf(port, sizeof(port), "%s", colon ? colon + 1 : "");
        if (port[0] == '\0')
            snprintf(port, sizeof(port), "%u", opt.proto->default_port);
        int rc = getaddrinfo(host, port, &hints, &ai);
        if (rc != 0)
            die("%s: %s", s, gai_strerror(rc));
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
            die("connect %s: %s", s, strerror(errno));
        freeaddrinfo(ai);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

#ifdef HAVE_TLS
static SSL_CTX *tls_ctx;

/* --tls: handshake on the still-blocking socket; the server's certificate
 * is not checked (a benchmark of the record layer, not of trust). */
static void *tls_connect(int fd)
{
    SSL *ssl;

    if (tls_ctx == NULL) {
        tls_ctx = SSL_CTX_new(TLS_client_method());
        if (tls_ctx == NULL)
            die("SSL_CTX_new failed");
        SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_NONE, NULL);
        SSL_CTX_set_mode(tls_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    ssl = SSL_new(tls_ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
        char eb[256];
        ERR_error_string_n(ERR_get_error(), eb, sizeof(eb));
        die("TLS handshake: %s", eb);
    }
    return ssl;
}
#endif

/* read()/write() or, with --tls, SSL_read()/SSL_write() with errno set as
 * they would (EAGAIN for WANT_READ/WANT_WRITE). */
static ssize_t io_read(struct conn *c, void *buf, size_t n)
{
#ifdef HAVE_TLS
    if (c->ssl != NULL) {
        int k = SSL_read(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        if (k > 0)
            return k;
        switch (SSL_get_error(c->ssl, k)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
        case SSL_ERROR_ZERO_RETURN: return 0;
        default: errno = errno ? errno : EPROTO; return -1;
        }
    }
#endif
    return read(c->fd, buf, n);
}

static ssize_t io_write(struct conn *c, const void *buf, size_t n)
{
#ifdef HAVE_TLS
    if (c->ssl != NULL) {
        int k = SSL_write(c->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
        if (k > 0)
            return k;
        switch (SSL_get_error(c->ssl, k)) {
        case SSL_ERROR_WANT_READ:
        case SSL_ERROR_WANT_WRITE: errno = EAGAIN; return -1;
        default: errno = errno ? errno : EPROTO; return -1;
        }
    }
#endif
    return write(c->fd, buf, n);
}

static void set_out_interest(struct conn *c, bool want)
{
    if (c->want_out == want)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0),
                             .data.ptr = c};
    epoll_ctl(c->th->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = want;
}

static void conn_flush(struct conn *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = io_write(c, c->wbuf + c->woff, c->wlen - c->woff);
        if (n > 0) {
            c->woff += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            set_out_interest(c, true);
            return;
        } else {
            die("write: %s", n == 0 ? "closed" : strerror(errno));
        }
    }
    c->wlen = c->woff = 0;
    set_out_interest(c, false);
}

static void conn_compose(struct conn *c, enum load_op op, uint64_t key,
                         uint64_t t)
{
    const struct load_proto *p = opt.proto;
    char kbuf[256];
    size_t need = p->req_size(op, opt.key_size, opt.value_size);

    if (c->wlen + need > c->wcap) {
        if (c->woff > 0) {
            memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
            c->wlen -= c->woff;
            c->woff = 0;
        }
        while (c->wlen + need > c->wcap)
            c->wcap *= 2;
        c->wbuf = realloc(c->wbuf, c->wcap);
        if (c->wbuf == NULL)
            die("out of memory");
    }
    if (c->qn == c->qcap) { /* open loop: more in flight than ever before */
        struct inflight *nq = malloc(2 * c->qcap * sizeof(*nq));
        if (nq == NULL)
            die("out of memory");
        for (uint32_t i = 0; i < c->qn; i++)
            nq[i] = c->q[(c->qhead + i) % c->qcap];
        free(c->q);
        c->q = nq;
        c->qhead = 0;
        c->qcap *= 2;
    }
    key_of(key, kbuf);
    c->wlen += p->compose(c->wbuf + c->wlen, op, kbuf, opt.key_size, value_buf,
                          opt.value_size, c->next_opaque);
    struct inflight *f = &c->q[(c->qhead + c->qn) % c->qcap];
    f->t = t;
    f->key = key;
    f->since = 0;
    f->tries = 0;
    f->opaque = c->next_opaque++;
    f->op = (uint8_t)op;
    c->qn++;
}

/* Top the connection up to its depth with new requests. */
static void conn_refill(struct conn *c, uint64_t t)
{
    struct thread *th = c->th;

    if (th->prefilling) {
        if (atomic_load_explicit(&run.prefill_stop, memory_order_relaxed))
            return;
        while (c->qn < PREFILL_DEPTH && c->nretry > 0) {
            struct retry *rt = &c->retry[--c->nretry];
            conn_compose(c, LOP_SET, rt->key, t);
            struct inflight *f = &c->q[(c->qhead + c->qn - 1) % c->qcap];
            f->since = rt->since;
            f->tries = rt->tries;
        }
        while (c->qn < PREFILL_DEPTH && c->pre_next < c->pre_end)
            conn_compose(c, LOP_SET, c->pre_next++, t);
        return;
    }
    if (t >= atomic_load_explicit(&run.t_end, memory_order_relaxed))
        return;
    if (opt.rate > 0)
        return; /* open loop: the schedule sends (open_send) */
    if (!opt.eager && c->qn > 0)
        return; /* batch mode: the next batch goes when this one is answered */
    while (c->qn < (uint32_t)opt.depth) {
        bool get =
            (double)(rng_next(&th->rng) >> 11) * 0x1.0p-53 < opt.get_frac;
        conn_compose(c, get ? LOP_GET : LOP_SET, pick_key(&th->rng), t);
    }
}

/* The start of a reply as printable text (other bytes as '.'), for a
 * message: which error a refused set got. */
static void reply_text(char *out, size_t cap, const uint8_t *buf, size_t len)
{
    size_t n = 0;

    while (n < len && n + 1 < cap && buf[n] != '\r' && buf[n] != '\n') {
        out[n] = buf[n] >= 0x20 && buf[n] < 0x7f ? (char)buf[n] : '.';
        n++;
    }
    out[n] = '\0';
}

/*
 * A prefill set refused for want of memory (answered at t): queue its key
 * to be sent again, unless it has been refused for PREFILL_PATIENCE_NS
 * already (then the prefill stops: the server is full and keeps nothing
 * new, e.g. a cache that does not evict).  Returns whether it is queued.
 */
static bool prefill_again(struct conn *c, const struct inflight *f,
                          uint64_t t)
{
    struct thread *th = c->th;
    uint64_t since = f->since ? f->since : t;

    th->prefill_nomem++;
    if (f->tries + 1 > th->prefill_tries)
        th->prefill_tries = f->tries + 1;
    if (t - since > PREFILL_PATIENCE_NS) {
        atomic_store(&run.prefill_stop, true);
        return false;
    }
    if (c->nretry == c->cretry) {
        uint32_t n = c->cretry ? 2 * c->cretry : 16;
        struct retry *nr = realloc(c->retry, n * sizeof(*nr));
        if (nr == NULL)
            die("out of memory");
        c->retry = nr;
        c->cretry = n;
    }
    c->retry[c->nretry++] =
        (struct retry){.key = f->key, .since = since, .tries = f->tries + 1};
    return true;
}

static void conn_read(struct conn *c)
{
    struct thread *th = c->th;
    const struct load_proto *p = opt.proto;

    for (;;) {
        if (c->rlen == c->rcap) {
            c->rcap *= 2;
            c->rbuf = realloc(c->rbuf, c->rcap);
            if (c->rbuf == NULL)
                die("out of memory");
        }
        size_t room = c->rcap - c->rlen;
        ssize_t n = io_read(c, c->rbuf + c->rlen, room);
        if (n == 0)
            die("server closed a connection");
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            die("read: %s", strerror(errno));
        }
        c->rlen += (size_t)n;

        uint64_t t = now_ns();
        uint64_t te = atomic_load_explicit(&run.t_end, memory_order_relaxed);
        if (!th->prefilling && !th->measuring &&
            t >= atomic_load_explicit(&run.t_measure, memory_order_relaxed)) {
            th->measuring = true; /* warmup over: start counting afresh */
            th->gets = th->sets = th->hits = th->misses = th->errors = 0;
            memset(&th->lat, 0, sizeof(th->lat));
        }
        size_t off = 0;
        while (c->qn > 0) {
            struct inflight *f = &c->q[c->qhead];
            int res = LR_ERROR;
            uint32_t opaque = f->opaque;
            ssize_t m =
                p->parse(c->rbuf + off, c->rlen - off, f->op, &res, &opaque);
            if (m == 0)
                break;
            if (m < 0)
                die("malformed %s reply", p->name);
            if (opaque != f->opaque)
                die("reply out of order (opaque %u, expected %u)", opaque,
                    f->opaque);
            if (th->prefilling) {
                bool again = res == LR_NOMEM && prefill_again(c, f, t);
                if (res != LR_STORED && !again && th->prefill_errors++ == 0)
                    reply_text(th->prefill_err, sizeof(th->prefill_err),
                               c->rbuf + off, (size_t)m);
            } else if (th->measuring && t < te) {
                hist_add(&th->lat, t - f->t);
                if (f->op == LOP_GET) {
                    th->gets++;
                    th->hits += res == LR_HIT;
                    th->misses += res == LR_MISS;
                } else {
                    th->sets++;
                }
                th->errors += res == LR_ERROR || res == LR_NOMEM;
            }
            off += (size_t)m;
            c->qhead = (c->qhead + 1) % c->qcap;
            c->qn--;
            if (opt.each && !th->prefilling) {
                /* the strictest sliding window: this reply's successor
                 * leaves now, in a write of its own */
                conn_refill(c, t);
                conn_flush(c);
            }
        }
        if (off > 0) {
            memmove(c->rbuf, c->rbuf + off, c->rlen - off);
            c->rlen -= off;
        }
        if (c->qn == 0 && c->rlen > 0)
            die("unsolicited bytes from the server");
        if ((size_t)n < room)
            break; /* the socket is likely drained */
    }
}

/*
 * Open loop: send every request whose moment has come, each stamped with
 * that moment (not the time it actually leaves), round-robin over the
 * connections.  Returns the ns until the next one is due.
 */
static uint64_t open_send(struct thread *th, uint64_t t)
{
    uint64_t te = atomic_load_explicit(&run.t_end, memory_order_relaxed);
    uint64_t tm = atomic_load_explicit(&run.t_measure, memory_order_relaxed);

    while (th->next_send <= t && th->next_send < te) {
        th->scheduled += th->next_send >= tm;
        struct conn *c = &th->conns[th->rr];
        bool get =
            (double)(rng_next(&th->rng) >> 11) * 0x1.0p-53 < opt.get_frac;
        double step = th->interval + th->sched_frac;

        th->rr = (th->rr + 1) % th->nconns;
        conn_compose(c, get ? LOP_GET : LOP_SET, pick_key(&th->rng),
                     th->next_send);
        conn_flush(c);
        th->next_send += (uint64_t)step;
        th->sched_frac = step - (double)(uint64_t)step;
    }
    return th->next_send > t ? th->next_send - t : 0;
}

/* Run the loop until every connection is idle (prefill) or t_end passes. */
static void thread_loop(struct thread *th)
{
    struct epoll_event evs[64];
    bool open = opt.rate > 0 && !th->prefilling;

    if (open) {
        th->interval = 1e9 * opt.threads / opt.rate;
        /* threads start staggered within one interval */
        th->next_send = now_ns() + (uint64_t)(th->interval * th->id /
                                              opt.threads);
    }
    for (int i = 0; i < th->nconns; i++) {
        conn_refill(&th->conns[i], now_ns());
        conn_flush(&th->conns[i]);
    }
    for (;;) {
        int n;
        if (open) {
            uint64_t wait = open_send(th, now_ns());
            struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)wait};
            if (wait > 50000000ull)
                ts.tv_nsec = 50000000;
            n = epoll_pwait2(th->epfd, evs, 64, &ts, NULL);
        } else {
            n = epoll_wait(th->epfd, evs, 64, 50);
        }
        if (n < 0 && errno != EINTR)
            die("epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
                conn_read(c);
                conn_refill(c, now_ns());
            }
            conn_flush(c);
        }
        if (th->prefilling) {
            bool busy = false, stop = atomic_load(&run.prefill_stop);
            for (int i = 0; i < th->nconns && !busy; i++)
                busy = th->conns[i].qn > 0 ||
                       (th->conns[i].nretry > 0 && !stop);
            if (!busy)
                return;
        } else if (now_ns() >= atomic_load(&run.t_end)) {
            if (open) /* what fell due before the end still goes out */
                (void)open_send(th, atomic_load(&run.t_end));
            return;
        }
    }
}

static void *thread_main(void *arg)
{
    struct thread *th = arg;

    th->epfd = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < th->nconns; i++) {
        struct conn *c = &th->conns[i];
        c->th = th;
        c->fd = connect_server();
#ifdef HAVE_TLS
        if (opt.tls)
            c->ssl = tls_connect(c->fd);
#endif
        fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
        c->rcap = RBUF_MIN + opt.value_size * 2;
        c->rbuf = malloc(c->rcap);
        c->wcap = 4096 + opt.depth * 2 *
                             opt.proto->req_size(LOP_SET, opt.key_size,
                                                 opt.value_size);
        c->wbuf = malloc(c->wcap);
        c->qcap =
            (uint32_t)(opt.depth > PREFILL_DEPTH ? opt.depth : PREFILL_DEPTH);
        c->q = calloc(c->qcap, sizeof(*c->q));
        if (c->rbuf == NULL || c->wbuf == NULL || c->q == NULL)
            die("out of memory");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(th->epfd, EPOLL_CTL_ADD, c->fd, &ev);
    }
    if (opt.prefill) {
        th->prefilling = true;
        thread_loop(th);
        th->prefilling = false;
    }
    pthread_barrier_wait(&run.ready);
    pthread_barrier_wait(&run.go);
    thread_loop(th);
    for (int i = 0; i < th->nconns; i++)
        close(th->conns[i].fd);
    return NULL;
}

/* ---- server CPU ------------------------------------------------------- */

/* utime and stime of a process, all threads, in clock ticks. */
static bool proc_cpu(long pid, uint64_t *utime, uint64_t *stime)
{
    char path[64], buf[1024];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if ((f = fopen(path, "r")) == NULL)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (p == NULL)
        return false;
    /* after ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime(14) stime(15) */
    unsigned long long u, s;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
               &u, &s) != 2)
        return false;
    *utime = u;
    *stime = s;
    return true;
}

/* Per-CPU time from /proc/stat in clock ticks, to tell how busy the machine
 * was with other work during the window (the server and generator are
 * pinned, so CPU busy time minus theirs is a neighbour's). */
#define MAX_CPUS 64
struct cpu_times {
    int n;
    uint64_t user[MAX_CPUS], sys[MAX_CPUS], idle[MAX_CPUS],
        softirq[MAX_CPUS], steal[MAX_CPUS];
};

static bool read_cpu_times(struct cpu_times *ct)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512];

    if (f == NULL)
        return false;
    ct->n = 0;
    while (fgets(line, sizeof(line), f) != NULL && ct->n < MAX_CPUS) {
        unsigned long long u, ni, sy, id, io, irq, sirq, st;
        int cpu;
        if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
                   &u, &ni, &sy, &id, &io, &irq, &sirq, &st) != 9 ||
            cpu != ct->n)
            continue;
        ct->user[cpu] = u + ni;
        ct->sys[cpu] = sy + irq;
        ct->idle[cpu] = id + io;
        ct->softirq[cpu] = sirq;
        ct->steal[cpu] = st;
        ct->n++;
    }
    fclose(f);
    return ct->n > 0;
}

/* ---- main ------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: mdc-load [options]\n"
        "  -s, --server ADDR     host:port, [v6]:port or a Unix socket path\n"
        "                        (default 127.0.0.1 and the protocol's port)\n"
        "  -P, --proto NAME      native (default), text (memcached), binary\n"
        "                        (memcached's binary protocol), resp "
        "(Redis)\n"
        "  -c, --conns N         connections (default 50)\n"
        "  -d, --depth N         pipeline depth: requests written together "
        "per\n"
        "                        connection, the next batch once all are\n"
        "                        answered (default 1)\n"
        "  -e, --eager           keep depth requests in flight, refilling as\n"
        "                        each reply arrives, instead of whole batches\n"
        "      --window N        sliding window: -d N --eager (the replies of\n"
        "                        one read are followed by as many requests in\n"
        "                        one write, as memtier_benchmark does)\n"
        "      --window-each     with --window: one write per reply, each new\n"
        "                        request sent as its reply is parsed\n"
        "  -R, --rate N          open loop: N requests/s in all on a fixed\n"
        "                        schedule, latency from each one's due time\n"
        "  -T, --threads N       generator threads, each with its own epoll "
        "(1)\n"
        "  -r, --ratio G:S       get:set mix (default 90:10)\n"
        "  -k, --keys N          key space (default 100000)\n"
        "  -K, --key-size N      key bytes (default 16)\n"
        "  -v, --value-size N    value bytes (default 32)\n"
        "  -z, --zipf S          Zipf exponent (e.g. 0.99); default uniform\n"
        "  -f, --prefill         set every key before measuring (a set\n"
        "                        refused for want of memory is sent again,\n"
        "                        for up to 1 s)\n"
        "  -D, --duration SECS   measured window (default 5)\n"
        "  -w, --warmup SECS     unmeasured run first (default 1)\n"
        "  -p, --pid PID         server process, for CPU per request\n"
        "  -j, --json FILE       machine-readable result ('-' = stdout)\n"
        "  -L, --label TEXT      label copied into the JSON\n"
        "      --seed N          random seed\n"
        "      --zipf-check      check the Zipf generator's skew and exit\n"
        "  -q, --quiet           no human-readable report\n"
        "      --tls             TLS (OpenSSL), the server's certificate "
        "not checked\n");
}

static const struct load_proto *proto_by_name(const char *s)
{
    if (strcmp(s, "native") == 0)
        return &load_proto_native;
    if (strcmp(s, "text") == 0 || strcmp(s, "memcache") == 0 ||
        strcmp(s, "memcached") == 0)
        return &load_proto_text;
    if (strcmp(s, "resp") == 0 || strcmp(s, "redis") == 0)
        return &load_proto_resp;
    if (strcmp(s, "binary") == 0)
        return &load_proto_mcbin;
    return NULL;
}

static double num_arg(const char *s, double lo, double hi, const char *what)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "mdc-load: bad %s '%s'\n", what, s);
        exit(64);
    }
    return v;
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"server", required_argument, NULL, 's'},
        {"proto", required_argument, NULL, 'P'},
        {"conns", required_argument, NULL, 'c'},
        {"depth", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 'T'},
        {"ratio", required_argument, NULL, 'r'},
        {"keys", required_argument, NULL, 'k'},
        {"key-size", required_argument, NULL, 'K'},
        {"value-size", required_argument, NULL, 'v'},
        {"zipf", required_argument, NULL, 'z'},
        {"prefill", no_argument, NULL, 'f'},
        {"duration", required_argument, NULL, 'D'},
        {"warmup", required_argument, NULL, 'w'},
        {"pid", required_argument, NULL, 'p'},
        {"json", required_argument, NULL, 'j'},
        {"label", required_argument, NULL, 'L'},
        {"seed", required_argument, NULL, 'S'},
        {"zipf-check", no_argument, NULL, 'Z'},
        {"quiet", no_argument, NULL, 'q'},
        {"eager", no_argument, NULL, 'e'},
        {"window", required_argument, NULL, 'N'},
        {"window-each", no_argument, NULL, 'E'},
        {"rate", required_argument, NULL, 'R'},
        {"tls", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool zcheck = false;
    int c;

    opt.proto = &load_proto_native;
    while ((c = getopt_long(argc, argv, "s:P:c:d:eR:T:r:k:K:v:z:fD:w:p:j:L:qh",
                            lo, NULL)) != -1) {
        switch (c) {
        case 's': opt.server = optarg; break;
        case 'P':
            if ((opt.proto = proto_by_name(optarg)) == NULL) {
                fprintf(stderr, "mdc-load: unknown protocol '%s'\n", optarg);
                exit(64);
            }
            break;
        case 'c':
            opt.conns = (int)num_arg(optarg, 1, 100000, "connection count");
            break;
        case 'd': opt.depth = (int)num_arg(optarg, 1, 65536, "depth"); break;
        case 'T':
            opt.threads = (int)num_arg(optarg, 1, 256, "thread count");
            break;
        case 'r': {
            double g, s;
            if (sscanf(optarg, "%lf:%lf", &g, &s) != 2 || g < 0 || s < 0 ||
                g + s <= 0) {
                fprintf(stderr, "mdc-load: bad ratio '%s' (want G:S)\n",
                        optarg);
                exit(64);
            }
            opt.get_frac = g / (g + s);
            break;
        }
        case 'k':
            opt.keys = (uint64_t)num_arg(optarg, 1, 4e9, "key count");
            break;
        case 'K':
            opt.key_size = (size_t)num_arg(optarg, 2, 250, "key size");
            break;
        case 'v':
            opt.value_size = (size_t)num_arg(optarg, 0, 1 << 30, "value size");
            break;
        case 'z': opt.zipf = num_arg(optarg, 0, 10, "Zipf exponent"); break;
        case 'f': opt.prefill = true; break;
        case 'D': opt.duration = num_arg(optarg, 0, 1e6, "duration"); break;
        case 'w': opt.warmup = num_arg(optarg, 0, 1e6, "warmup"); break;
        case 'p': opt.server_pid = (long)num_arg(optarg, 1, 1e9, "pid"); break;
        case 'j': opt.json = optarg; break;
        case 'L': opt.label = optarg; break;
        case 'S': opt.seed = strtoull(optarg, NULL, 0); break;
        case 'Z': zcheck = true; break;
        case 'q': opt.quiet = true; break;
        case 'e': opt.eager = true; break;
        case 'N':
            opt.depth = (int)num_arg(optarg, 1, 65536, "window");
            opt.eager = true;
            break;
        case 'E': opt.each = opt.eager = true; break;
        case 'R': opt.rate = num_arg(optarg, 1, 1e9, "rate"); break;
        case 't':
#ifdef HAVE_TLS
            opt.tls = true;
            break;
#else
            fprintf(stderr, "mdc-load: built without TLS\n");
            exit(64);
#endif
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(64);
        }
    }
    if (optind != argc) {
        usage(stderr);
        exit(64);
    }
    if (zcheck)
        exit(zipf_self_check(opt.keys, opt.zipf > 0 ? opt.zipf : 0.99,
                             20000000));
    /* enough digits for every key index after the leading 'k' */
    uint64_t maxk = opt.keys - 1;
    size_t digits = 1;
    while (maxk >= 10) {
        maxk /= 10;
        digits++;
    }
    if (opt.key_size < digits + 1) {
        fprintf(stderr,
                "mdc-load: --key-size %zu too small for %" PRIu64 " keys\n",
                opt.key_size, opt.keys);
        exit(64);
    }
    if (opt.server == NULL)
        opt.server = "127.0.0.1";
    if (opt.conns < opt.threads)
        opt.threads = opt.conns;
}

int main(int argc, char **argv)
{
    struct thread *ths;
    uint64_t u0 = 0, s0 = 0, u1 = 0, s1 = 0;
    bool have_cpu = false;
    struct rusage ru0, ru1;
    struct cpu_times ct0, ct1;
    bool have_ct = false;
    double loadavg[3] = {0, 0, 0};
    char date[64];
    time_t wall = time(NULL);

    parse_args(argc, argv);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&wall));

    value_buf = malloc(opt.value_size + 1);
    for (size_t i = 0; i < opt.value_size; i++)
        value_buf[i] = (uint8_t)('a' + i % 26);
    if (opt.zipf > 0) {
        uint64_t s = opt.seed ^ 0x5a5a5a5aULL;
        zipf_init(&zipf, opt.keys, opt.zipf);
        zipf_scramble = malloc(opt.keys * sizeof(uint32_t));
        if (zipf_scramble == NULL)
            die("out of memory");
        for (uint64_t i = 0; i < opt.keys; i++)
            zipf_scramble[i] = (uint32_t)i;
        for (uint64_t i = opt.keys - 1; i > 0; i--) { /* hot keys anywhere */
            uint64_t j = ((rng_next(&s) >> 32) * (i + 1)) >> 32;
            uint32_t t = zipf_scramble[i];
            zipf_scramble[i] = zipf_scramble[j];
            zipf_scramble[j] = t;
        }
    }

    ths = calloc((size_t)opt.threads, sizeof(*ths));
    /* kept reachable from a static until exit (the process ends with them) */
    static struct conn *conns;
    conns = calloc((size_t)opt.conns, sizeof(*conns));
    if (ths == NULL || conns == NULL)
        die("out of memory");
    pthread_barrier_init(&run.ready, NULL, (unsigned)opt.threads + 1);
    pthread_barrier_init(&run.go, NULL, (unsigned)opt.threads + 1);
    atomic_store(&run.t_end, UINT64_MAX);
    atomic_store(&run.t_measure, UINT64_MAX);
    for (int t = 0, ci = 0; t < opt.threads; t++) {
        struct thread *th = &ths[t];
        th->id = t;
        /* the seed hashed first: with seed * step + 1, seed N + 1's stream
         * was seed N's one draw later and seed N + 2's one request (two
         * draws) later: the same keys set again */
        uint64_t sx = opt.seed;
        th->rng = rng_next(&sx) + (uint64_t)t + 1;
        th->nconns = opt.conns / opt.threads + (t < opt.conns % opt.threads);
        th->conns = conns + ci;
        ci += th->nconns;
    }
    /* prefill: each connection sets a contiguous share of the key space */
    for (int i = 0; i < opt.conns; i++) {
        conns[i].pre_next = opt.keys * (uint64_t)i / (uint64_t)opt.conns;
        conns[i].pre_end = opt.keys * (uint64_t)(i + 1) / (uint64_t)opt.conns;
    }
    uint64_t tp = now_ns();
    for (int t = 0; t < opt.threads; t++)
        if (pthread_create(&ths[t].tid, NULL, thread_main, &ths[t]) != 0)
            die("pthread_create failed");
    pthread_barrier_wait(&run.ready);
    double prefill_s = (double)(now_ns() - tp) * 1e-9;
    uint64_t prefill_errors = 0, prefill_nomem = 0;
    uint32_t prefill_tries = 0;
    const char *first_err = "";
    for (int t = 0; t < opt.threads; t++) {
        if (ths[t].prefill_errors && !prefill_errors)
            first_err = ths[t].prefill_err;
        prefill_errors += ths[t].prefill_errors;
        prefill_nomem += ths[t].prefill_nomem;
        if (ths[t].prefill_tries > prefill_tries)
            prefill_tries = ths[t].prefill_tries;
    }
    if (opt.prefill && !opt.quiet)
        fprintf(stderr, "prefill: %" PRIu64 " keys in %.2f s (%.0f sets/s)%s\n",
                opt.keys, prefill_s, (double)opt.keys / prefill_s,
                prefill_errors ? ", with errors" : "");
    /* said even with -q: the server refused stores (bench/run logs it) */
    if (prefill_nomem)
        fprintf(stderr,
                "prefill: %" PRIu64 " sets refused for want of memory and "
                "sent again (at most %" PRIu32 " refusal%s of one key)\n",
                prefill_nomem, prefill_tries, prefill_tries == 1 ? "" : "s");
    if (atomic_load(&run.prefill_stop))
        die("prefill stopped: a key was still refused %.1f s after its "
            "first refusal (\"%s\"): a full cache that does not evict?",
            (double)PREFILL_PATIENCE_NS * 1e-9, first_err);
    if (prefill_errors)
        die("%" PRIu64 " of %" PRIu64 " prefill sets failed (one reply: \"%s\")",
            prefill_errors, opt.keys, first_err);

    uint64_t t0 = now_ns();
    uint64_t tm = t0 + (uint64_t)(opt.warmup * 1e9);
    uint64_t te = opt.duration > 0 ? tm + (uint64_t)(opt.duration * 1e9) : t0;
    atomic_store(&run.t_measure, tm);
    atomic_store(&run.t_end, te);
    pthread_barrier_wait(&run.go);

    if (opt.duration > 0) {
        struct timespec ts = {.tv_sec = (time_t)(tm / 1000000000ull),
                              .tv_nsec = (long)(tm % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR)
            ;
        getrusage(RUSAGE_SELF, &ru0);
        have_ct = read_cpu_times(&ct0);
        if (opt.server_pid)
            have_cpu = proc_cpu(opt.server_pid, &u0, &s0);
        ts = (struct timespec){.tv_sec = (time_t)(te / 1000000000ull),
                               .tv_nsec = (long)(te % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
               EINTR)
            ;
        if (have_cpu)
            have_cpu = proc_cpu(opt.server_pid, &u1, &s1);
        getrusage(RUSAGE_SELF, &ru1);
        if (have_ct)
            have_ct = read_cpu_times(&ct1) && ct1.n == ct0.n;
        if (getloadavg(loadavg, 3) < 0)
            loadavg[0] = loadavg[1] = loadavg[2] = -1;
    }
    for (int t = 0; t < opt.threads; t++)
        pthread_join(ths[t].tid, NULL);
    if (opt.duration <= 0)
        return 0; /* prefill only (e.g. loading a server for a memory test) */

    struct hist lat;
    memset(&lat, 0, sizeof(lat));
    uint64_t gets = 0, sets = 0, hits = 0, misses = 0, errors = 0;
    uint64_t scheduled = 0;
    for (int t = 0; t < opt.threads; t++) {
        scheduled += ths[t].scheduled;
        hist_merge(&lat, &ths[t].lat);
        gets += ths[t].gets;
        sets += ths[t].sets;
        hits += ths[t].hits;
        misses += ths[t].misses;
        errors += ths[t].errors;
    }
    uint64_t reqs = gets + sets;
    double secs = opt.duration;
    double tput = (double)reqs / secs;
    double tick = (double)sysconf(_SC_CLK_TCK);
    double su = have_cpu ? (double)(u1 - u0) / tick : 0;
    double ss = have_cpu ? (double)(s1 - s0) / tick : 0;
    double per = reqs ? 1e6 / (double)reqs : 0;
    double cu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) * 1e-6;
    double cs = (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) * 1e-6;
    double p50 = hist_pct(&lat, 50) / 1e3, p99 = hist_pct(&lat, 99) / 1e3,
           p999 = hist_pct(&lat, 99.9) / 1e3;
    double mean = lat.n ? (double)lat.sum / (double)lat.n / 1e3 : 0;

    if (!opt.quiet) {
        printf("%s %s: %d conn, depth %d%s, %d thread, get:set %.0f:%.0f, "
               "%" PRIu64 " keys %s, value %zu B\n",
               opt.proto->name, opt.server, opt.conns, opt.depth,
               opt.each    ? " (sliding window, a write per reply)"
               : opt.eager ? " (sliding window)"
                           : "",
               opt.threads,
               100 * opt.get_frac, 100 * (1 - opt.get_frac), opt.keys,
               opt.zipf > 0 ? "zipf" : "uniform", opt.value_size);
        if (opt.rate > 0)
            printf("  offered     %12.0f req/s  (open loop, fixed schedule: "
                   "%" PRIu64 " due in the window)\n",
                   opt.rate, scheduled);
        printf("  throughput  %12.0f req/s  (%" PRIu64
               " in %.1f s; gets %" PRIu64 " hit %" PRIu64 " miss %" PRIu64
               ", sets %" PRIu64 ", errors %" PRIu64 ")\n",
               tput, reqs, secs, gets, hits, misses, sets, errors);
        printf("  latency us  p50 %.1f  p99 %.1f  p99.9 %.1f  mean %.1f  max "
               "%.1f\n",
               p50, p99, p999, mean, (double)lat.max / 1e3);
        if (have_cpu)
            printf("  server cpu  %.3f us/req (user %.3f, sys %.3f) = %.0f%% "
                   "of a CPU\n",
                   (su + ss) * per, su * per, ss * per, 100 * (su + ss) / secs);
        printf("  client cpu  %.3f us/req (user %.3f, sys %.3f)\n",
               (cu + cs) * per, cu * per, cs * per);
    }
    if (opt.json != NULL) {
        FILE *f = strcmp(opt.json, "-") == 0 ? stdout : fopen(opt.json, "w");
        if (f == NULL)
            die("%s: %s", opt.json, strerror(errno));
        fprintf(
            f,
            "{\"tool\": \"mdc-load\", \"date\": \"%s\", \"label\": \"%s\", "
            "\"proto\": \"%s\", \"server\": \"%s\", \"conns\": %d, "
            "\"depth\": %d, \"eager\": %s, \"window_each\": %s, "
            "\"rate\": %.0f, \"threads\": %d, "
            "\"get_fraction\": "
            "%.4f, "
            "\"keys\": %" PRIu64 ", \"key_size\": %zu, \"value_size\": %zu, "
            "\"distribution\": \"%s\", \"zipf\": %.3f, \"prefill\": %s, "
            "\"warmup_s\": %.3f, \"duration_s\": %.3f,\n"
            " \"requests\": %" PRIu64 ", \"gets\": %" PRIu64
            ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
            ", \"sets\": %" PRIu64 ", \"errors\": %" PRIu64
            ", \"throughput\": %.1f, \"scheduled\": %" PRIu64 ",\n"
            " \"latency_us\": {\"p50\": %.2f, \"p99\": %.2f, \"p999\": %.2f, "
            "\"mean\": %.2f, \"max\": %.2f},\n",
            date, opt.label ? opt.label : "", opt.proto->name, opt.server,
            opt.conns, opt.depth, opt.eager ? "true" : "false",
            opt.each ? "true" : "false", opt.rate,
            opt.threads, opt.get_frac, opt.keys, opt.key_size, opt.value_size,
            opt.zipf > 0 ? "zipf" : "uniform", opt.zipf,
            opt.prefill ? "true" : "false", opt.warmup, opt.duration, reqs,
            gets, hits, misses, sets, errors, tput, scheduled, p50, p99, p999,
            mean, (double)lat.max / 1e3);
        if (have_cpu)
            fprintf(
                f,
                " \"server_cpu\": {\"pid\": %ld, \"user_s\": %.3f, "
                "\"sys_s\": %.3f, \"us_per_req\": %.4f, \"user_us_per_req\": "
                "%.4f, \"sys_us_per_req\": %.4f},\n",
                opt.server_pid, su, ss, (su + ss) * per, su * per, ss * per);
        else
            fprintf(f, " \"server_cpu\": null,\n");
        fprintf(f,
                " \"client_cpu\": {\"user_s\": %.3f, \"sys_s\": %.3f, "
                "\"us_per_req\": %.4f},\n",
                cu, cs, (cu + cs) * per);
        /* the machine over the window: per-CPU seconds, load average */
        fprintf(f, " \"loadavg\": [%.2f, %.2f, %.2f], \"cpus\": [", loadavg[0],
                loadavg[1], loadavg[2]);
        for (int i = 0; have_ct && i < ct1.n; i++)
            fprintf(f,
                    "%s{\"user_s\": %.2f, \"sys_s\": %.2f, \"softirq_s\": "
                    "%.2f, \"steal_s\": %.2f, \"idle_s\": %.2f}",
                    i ? ", " : "", (double)(ct1.user[i] - ct0.user[i]) / tick,
                    (double)(ct1.sys[i] - ct0.sys[i]) / tick,
                    (double)(ct1.softirq[i] - ct0.softirq[i]) / tick,
                    (double)(ct1.steal[i] - ct0.steal[i]) / tick,
                    (double)(ct1.idle[i] - ct0.idle[i]) / tick);
        fprintf(f, "]}\n");
        if (f != stdout)
            fclose(f);
    }
    return errors ? 2 : 0;
}
