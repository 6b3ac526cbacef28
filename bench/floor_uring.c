/*
 * floor_uring.c - the floor of bench/floor.c, on io_uring instead of epoll:
 * what a server that does nothing but read requests and write fixed
 * replies costs per request when its I/O goes through io_uring.  It tells
 * whether an io_uring backend can go below the epoll floor on this kernel
 * (issue 12 item 2) before one is written.
 *
 * The same protocol subset and replies as bench/floor.c (a "get"/"gets"
 * line gets a fixed VALUE reply of the real size, a storage command
 * "STORED", "version" a version line, anything else "ERROR").  One thread,
 * one ring: a multishot accept per listener; per connection one multishot
 * receive into a ring of provided buffers (requests are parsed in the
 * provided buffer when nothing is pending, else appended to the
 * connection's buffer); the replies of one loop turn are sent with one
 * IORING_OP_SEND per connection, and all the turn's submissions go in the
 * one io_uring_enter() that also waits for the next completions.
 *
 * usage: floor_uring [-s PATH] [-p PORT] [-K KEYLEN] [-v VALUELEN]
 */
#include "config.h"

#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define NBUF 1024  /* provided buffers */
#define BUFSZ 4096 /* bytes each */
#define BGID 1
#define MAX_LINE 2048
#define RBUF_MAX (4 * 1024 * 1024)

enum { UD_RECV = 0, UD_SEND = 1, UD_ACCEPT = 2 };

struct conn {
    int fd;
    bool tcp;           /* listener: TCP (set TCP_NODELAY on accepted) */
    bool recv_armed;    /* a multishot receive is active */
    bool sending;       /* an IORING_OP_SEND is in flight (sbuf) */
    bool closing;
    bool dirty;         /* on the turn's list of connections with output */
    struct conn *next_dirty;
    char *rbuf;         /* partial request carried between receives */
    size_t rlen, rcap;
    char *obuf;         /* replies of this turn */
    size_t olen, ocap;
    char *sbuf;         /* being sent */
    size_t slen, soff, scap;
};

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;
static struct conn *dirty;
static char *get_reply;
static size_t get_reply_len;
static volatile sig_atomic_t stop;
static const char stored[] = "STORED\r\n";
static const char error_reply[] = "ERROR\r\n";
static const char version_reply[] = "VERSION floor_uring\r\n";

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "floor_uring: %s: %s\n", what, strerror(err));
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        fputs("floor_uring: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static struct io_uring_sqe *sqe_get(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

    if (sqe == NULL) { /* full: hand what we have to the kernel */
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
        if (sqe == NULL)
            die("io_uring_get_sqe", EBUSY);
    }
    return sqe;
}

static void *ud(struct conn *c, int kind)
{
    return (void *)((uintptr_t)c | (uintptr_t)kind);
}

static void arm_recv(struct conn *c)
{
    struct io_uring_sqe *sqe = sqe_get();

    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data(sqe, ud(c, UD_RECV));
    c->recv_armed = true;
}

static void arm_accept(struct conn *l)
{
    struct io_uring_sqe *sqe = sqe_get();

    io_uring_prep_multishot_accept(sqe, l->fd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data(sqe, ud(l, UD_ACCEPT));
}

static void out_add(struct conn *c, const char *s, size_t n)
{
    if (c->olen + n > c->ocap) {
        while (c->olen + n > c->ocap)
            c->ocap = c->ocap ? c->ocap * 2 : 4096;
        c->obuf = xrealloc(c->obuf, c->ocap);
    }
    memcpy(c->obuf + c->olen, s, n);
    c->olen += n;
}

static bool word_is(const char *p, size_t n, const char *w)
{
    size_t wl = strlen(w);
    return n >= wl && memcmp(p, w, wl) == 0 && (n == wl || p[wl] == ' ');
}

/* bench/floor.c's parser: answers the complete requests at the start of
 * buf; the bytes consumed, or -1 to close. */
static ssize_t parse(struct conn *c, const char *buf, size_t len)
{
    size_t off = 0;

    while (off < len) {
        const char *line = buf + off;
        const char *nl = memchr(line, '\n', len - off);
        if (nl == NULL)
            return len - off > MAX_LINE ? -1 : (ssize_t)off;
        size_t ll = (size_t)(nl - line) + 1;
        size_t wl = ll - 1 - (ll >= 2 && nl[-1] == '\r');

        if (word_is(line, wl, "get") || word_is(line, wl, "gets")) {
            out_add(c, get_reply, get_reply_len);
            off += ll;
        } else if (word_is(line, wl, "set") || word_is(line, wl, "add") ||
                   word_is(line, wl, "replace") ||
                   word_is(line, wl, "append") ||
                   word_is(line, wl, "prepend") || word_is(line, wl, "cas")) {
            size_t i = 0, field = 0;
            unsigned long long bytes = 0;
            while (i < wl && field < 4)
                field += line[i++] == ' ';
            if (field < 4)
                return -1;
            while (i < wl && line[i] >= '0' && line[i] <= '9')
                bytes = bytes * 10 + (unsigned long long)(line[i++] - '0');
            if (bytes > RBUF_MAX)
                return -1;
            if (len - off < ll + bytes + 2)
                return (ssize_t)off;
            bool noreply = wl >= 8 && memcmp(line + wl - 8, " noreply", 8) == 0;
            if (!noreply)
                out_add(c, stored, sizeof(stored) - 1);
            off += ll + bytes + 2;
        } else if (word_is(line, wl, "version")) {
            out_add(c, version_reply, sizeof(version_reply) - 1);
            off += ll;
        } else if (word_is(line, wl, "quit")) {
            return -1;
        } else {
            out_add(c, error_reply, sizeof(error_reply) - 1);
            off += ll;
        }
    }
    return (ssize_t)off;
}

static void mark_dirty(struct conn *c)
{
    if (!c->dirty) {
        c->dirty = true;
        c->next_dirty = dirty;
        dirty = c;
    }
}

/* Free once nothing is in flight for it any more. */
static void maybe_free(struct conn *c)
{
    if (!c->closing || c->recv_armed || c->sending || c->dirty)
        return;
    close(c->fd);
    free(c->rbuf);
    free(c->obuf);
    free(c->sbuf);
    free(c);
}

static void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    c->closing = true;
    if (c->recv_armed)
        shutdown(c->fd, SHUT_RDWR); /* ends the multishot receive */
    /* freed by maybe_free() once the last completion for it is in */
}

static void on_recv(struct conn *c, struct io_uring_cqe *cqe)
{
    int res = cqe->res;

    if (!(cqe->flags & IORING_CQE_F_MORE))
        c->recv_armed = false;
    if (res > 0 && (cqe->flags & IORING_CQE_F_BUFFER)) {
        unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
        char *data = bufs + (size_t)bid * BUFSZ;
        ssize_t used;

        if (!c->closing) {
            if (c->rlen == 0) { /* parse in place, keep only a tail */
                used = parse(c, data, (size_t)res);
                if (used >= 0 && (size_t)used < (size_t)res) {
                    size_t left = (size_t)res - (size_t)used;
                    if (left > c->rcap) {
                        c->rcap = left * 2;
                        c->rbuf = xrealloc(c->rbuf, c->rcap);
                    }
                    memcpy(c->rbuf, data + used, left);
                    c->rlen = left;
                }
            } else {
                if (c->rlen + (size_t)res > c->rcap) {
                    c->rcap = (c->rlen + (size_t)res) * 2;
                    c->rbuf = xrealloc(c->rbuf, c->rcap);
                }
                memcpy(c->rbuf + c->rlen, data, (size_t)res);
                c->rlen += (size_t)res;
                used = parse(c, c->rbuf, c->rlen);
                if (used > 0) {
                    memmove(c->rbuf, c->rbuf + used, c->rlen - (size_t)used);
                    c->rlen -= (size_t)used;
                }
            }
            if (used < 0 || c->rlen > RBUF_MAX)
                conn_close(c);
            else if (c->olen > 0)
                mark_dirty(c);
        }
        io_uring_buf_ring_add(br, data, BUFSZ, (unsigned short)bid,
                              io_uring_buf_ring_mask(NBUF), 0);
        io_uring_buf_ring_advance(br, 1);
    } else if (res == -ENOBUFS) {
        /* out of provided buffers: re-armed below once this one ended */
    } else if (res <= 0) {
        conn_close(c);
    }
    if (!c->recv_armed && !c->closing)
        arm_recv(c);
    maybe_free(c);
}

static void start_send(struct conn *c)
{
    struct io_uring_sqe *sqe = sqe_get();

    io_uring_prep_send(sqe, c->fd, c->sbuf + c->soff, c->slen - c->soff,
                       MSG_NOSIGNAL);
    io_uring_sqe_set_data(sqe, ud(c, UD_SEND));
    c->sending = true;
}

static void on_send(struct conn *c, int res)
{
    c->sending = false;
    if (res < 0) {
        conn_close(c);
    } else {
        c->soff += (size_t)res;
        if (c->soff < c->slen && !c->closing)
            start_send(c);
        else if (c->olen > 0)
            mark_dirty(c);
    }
    maybe_free(c);
}

static void on_accept(struct conn *l, struct io_uring_cqe *cqe)
{
    if (!(cqe->flags & IORING_CQE_F_MORE))
        arm_accept(l);
    if (cqe->res < 0)
        return;
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(cqe->res);
        return;
    }
    c->fd = cqe->res;
    if (l->tcp) {
        int one = 1;
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    arm_recv(c);
}

/* The turn's replies: one send per connection with output. */
static void flush_dirty(void)
{
    while (dirty != NULL) {
        struct conn *c = dirty;
        dirty = c->next_dirty;
        c->dirty = false;
        if (c->closing) {
            maybe_free(c);
            continue;
        }
        if (c->sending || c->olen == 0)
            continue; /* the send's completion picks the rest up */
        char *t = c->sbuf;
        size_t tc = c->scap;
        c->sbuf = c->obuf;
        c->scap = c->ocap;
        c->slen = c->olen;
        c->soff = 0;
        c->obuf = t;
        c->ocap = tc;
        c->olen = 0;
        start_send(c);
    }
}

static void add_listener(int fd, bool tcp)
{
    struct conn *l = calloc(1, sizeof(*l));
    if (l == NULL)
        die("calloc", ENOMEM);
    l->fd = fd;
    l->tcp = tcp;
    if (listen(fd, 1024) != 0)
        die("listen", errno);
    arm_accept(l);
}

static void setup_buffers(void)
{
    struct io_uring_buf_reg reg = {0};
    size_t rsz = NBUF * sizeof(struct io_uring_buf);
    int rc;

    br = mmap(NULL, rsz, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE,
              -1, 0);
    bufs = malloc((size_t)NBUF * BUFSZ);
    if (br == MAP_FAILED || bufs == NULL)
        die("buffers", ENOMEM);
    reg.ring_addr = (unsigned long)br;
    reg.ring_entries = NBUF;
    reg.bgid = BGID;
    rc = io_uring_register_buf_ring(&ring, &reg, 0);
    if (rc != 0)
        die("io_uring_register_buf_ring", -rc);
    io_uring_buf_ring_init(br);
    for (unsigned i = 0; i < NBUF; i++)
        io_uring_buf_ring_add(br, bufs + (size_t)i * BUFSZ, BUFSZ,
                              (unsigned short)i, io_uring_buf_ring_mask(NBUF),
                              (int)i);
    io_uring_buf_ring_advance(br, NBUF);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *port = NULL;
    unsigned long klen = 16, vlen = 32;
    struct io_uring_params p = {0};
    int c, rc;

    while ((c = getopt(argc, argv, "s:p:K:v:h")) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'p': port = optarg; break;
        case 'K': klen = strtoul(optarg, NULL, 10); break;
        case 'v': vlen = strtoul(optarg, NULL, 10); break;
        default:
            fputs("usage: floor_uring [-s PATH] [-p PORT] [-K KEYLEN] "
                  "[-v VALUELEN]\n", stderr);
            return c == 'h' ? 0 : 64;
        }
    }
    if (klen < 1 || klen > 250 || vlen > (1u << 20))
        die("bad -K or -v", EINVAL);
    get_reply = xrealloc(NULL, klen + vlen + 64);
    {
        int n = snprintf(get_reply, 64, "VALUE ");
        memset(get_reply + n, 'k', klen);
        n += (int)klen;
        n += snprintf(get_reply + n, 64, " 0 %lu\r\n", vlen);
        memset(get_reply + n, 'v', vlen);
        n += (int)vlen;
        memcpy(get_reply + n, "\r\nEND\r\n", 7);
        get_reply_len = (size_t)n + 7;
    }
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    rc = io_uring_queue_init_params(4096, &ring, &p);
    if (rc == -EINVAL) { /* an older kernel: without the two hints */
        memset(&p, 0, sizeof(p));
        rc = io_uring_queue_init_params(4096, &ring, &p);
    }
    if (rc != 0)
        die("io_uring_queue_init", -rc);
    setup_buffers();
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (path != NULL) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || strlen(path) >= sizeof(sun.sun_path))
            die("socket", errno);
        strcpy(sun.sun_path, path);
        unlink(path);
        if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
            die("bind", errno);
        add_listener(fd, false);
    }
    if (port != NULL && atoi(port) > 0) {
        struct sockaddr_in sin = {.sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)atoi(port)),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            die("socket", errno);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
            die("bind", errno);
        add_listener(fd, true);
    }
    while (!stop) {
        struct io_uring_cqe *cqe;
        unsigned head, n = 0;

        rc = io_uring_submit_and_wait(&ring, 1);
        if (rc < 0 && rc != -EINTR)
            die("io_uring_submit_and_wait", -rc);
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            uintptr_t u = (uintptr_t)io_uring_cqe_get_data(cqe);
            struct conn *cn = (struct conn *)(u & ~(uintptr_t)3);

            switch (u & 3) {
            case UD_RECV: on_recv(cn, cqe); break;
            case UD_SEND: on_send(cn, cqe->res); break;
            case UD_ACCEPT: on_accept(cn, cqe); break;
            }
            n++;
        }
        io_uring_cq_advance(&ring, n);
        flush_dirty();
    }
    if (path != NULL)
        unlink(path);
    return 0;
}
