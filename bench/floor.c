/*
 * floor.c - the floor: a bare epoll server that does nothing but read
 * requests and write fixed replies, the lower bound of server CPU per
 * request for the network benchmarks (docs/benchmarking.md, issue 4's targets).
 *
 * It speaks just enough of memcached's text protocol for mdc-load: a line
 * starting "get " or "gets " is answered with a fixed
 * "VALUE <key> 0 <vlen>\r\n<value>\r\nEND\r\n" of the same size as a real
 * server's reply for a key of -K bytes and a value of -v bytes; a storage
 * command ("set", "add", ... with its data block) with "STORED\r\n" (nothing
 * for "noreply"); "version" with a version line, "quit" closes, anything else
 * gets "ERROR\r\n".  No store, no key lookup.
 *
 * One thread, level-triggered epoll, Unix and TCP listeners (both at once
 * allowed).  Per readiness event it makes one read(2); it parses every
 * complete request in the buffer (so pipelined batches work) and answers all
 * of them with one write(2).  A read that filled the buffer is followed by
 * another, otherwise the socket is left to epoll: a short read means the
 * socket was drained, so no read ever returns EAGAIN in steady state.  With
 * one request per read that is one read and one write per request plus the
 * amortised epoll_wait: what a server cannot go below without batching
 * across connections or leaving the socket API.
 *
 * Pinning is the caller's job (taskset), as for the other servers.
 *
 * Two switches price what real servers do beyond that, side by side:
 * -E reads until EAGAIN (the usual "drain the socket" loop: one more, failed
 * read per event) and -M replies with sendmsg(2) from a three-piece iovec,
 * the shape of a zero-copy reply, instead of write(2).
 *
 * usage: floor [-s PATH] [-p PORT] [-l ADDR] [-K KEYLEN] [-v VALUELEN] [-E] [-M]
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define RBUF_INIT (16 * 1024)
#define RBUF_MAX (4 * 1024 * 1024)
#define MAX_EVENTS 256
#define MAX_LINE 2048

struct conn {
    int fd;
    bool is_listener;
    bool tcp;
    bool writing; /* EPOLLOUT instead of EPOLLIN: output is pending */
    char *rbuf;
    size_t rlen, rcap;
    char *obuf;
    size_t olen, ooff, ocap;
};

static volatile sig_atomic_t stop;
static bool opt_drain;   /* -E: read again until EAGAIN, as many servers do */
static bool opt_sendmsg; /* -M: reply with sendmsg from an iovec */
static int epfd;
static char *get_reply;
static size_t get_reply_len;
static const char stored[] = "STORED\r\n";
static const char error_reply[] = "ERROR\r\n";
static const char version_reply[] = "VERSION floor\r\n";

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what)
{
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (p == NULL) {
        fputs("floor: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static void watch(struct conn *c, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(epfd, op, c->fd, &ev) != 0)
        die("epoll_ctl");
}

static void conn_close(struct conn *c)
{
    close(c->fd); /* also leaves the epoll set */
    free(c->rbuf);
    free(c->obuf);
    free(c);
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

static bool flush(struct conn *c);

/* Answers every complete request at the start of rbuf; returns the bytes
 * consumed, or -1 to close the connection (quit, garbage). */
static ssize_t parse(struct conn *c)
{
    size_t off = 0;

    while (off < c->rlen) {
        char *line = c->rbuf + off;
        char *nl = memchr(line, '\n', c->rlen - off);
        if (nl == NULL)
            return c->rlen - off > MAX_LINE ? -1 : (ssize_t)off;
        size_t ll = (size_t)(nl - line) + 1;       /* with "\n" */
        size_t wl = ll - 1 - (ll >= 2 && nl[-1] == '\r'); /* words only */

        if (word_is(line, wl, "get") || word_is(line, wl, "gets")) {
            out_add(c, get_reply, get_reply_len);
            off += ll;
        } else if (word_is(line, wl, "set") || word_is(line, wl, "add") ||
                   word_is(line, wl, "replace") ||
                   word_is(line, wl, "append") ||
                   word_is(line, wl, "prepend") || word_is(line, wl, "cas")) {
            /* <cmd> <key> <flags> <exptime> <bytes> [cas] [noreply] */
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
            if (c->rlen - off < ll + bytes + 2)
                return (ssize_t)off; /* wait for the data block */
            bool noreply = wl >= 8 && memcmp(line + wl - 8, " noreply", 8) == 0;
            if (!noreply)
                out_add(c, stored, sizeof(stored) - 1);
            off += ll + bytes + 2;
        } else if (word_is(line, wl, "version")) {
            out_add(c, version_reply, sizeof(version_reply) - 1);
            off += ll;
        } else if (word_is(line, wl, "quit")) {
            flush(c); /* what came before quit is still answered */
            return -1;
        } else {
            out_add(c, error_reply, sizeof(error_reply) - 1);
            off += ll;
        }
    }
    return (ssize_t)off;
}

/* Writes pending output; false when the connection must close. */
static bool flush(struct conn *c)
{
    while (c->ooff < c->olen) {
        ssize_t n;
        if (opt_sendmsg) {
            /* the shape of a zero-copy reply: one iovec per reply piece,
             * here the whole buffer split in up to three */
            size_t left = c->olen - c->ooff, a = left / 3, b = left / 3;
            struct iovec iov[3] = {
                {c->obuf + c->ooff, a},
                {c->obuf + c->ooff + a, b},
                {c->obuf + c->ooff + a + b, left - a - b},
            };
            struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 3};
            n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        } else {
            n = write(c->fd, c->obuf + c->ooff, c->olen - c->ooff);
        }
        if (n > 0) {
            c->ooff += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->writing) {
                watch(c, EPOLL_CTL_MOD, EPOLLOUT);
                c->writing = true;
            }
            return true;
        } else {
            return false;
        }
    }
    c->olen = c->ooff = 0;
    if (c->writing) {
        watch(c, EPOLL_CTL_MOD, EPOLLIN);
        c->writing = false;
    }
    return true;
}

static void on_readable(struct conn *c)
{
    for (;;) {
        if (c->rlen == c->rcap) {
            if (c->rcap >= RBUF_MAX) {
                conn_close(c);
                return;
            }
            c->rcap *= 2;
            c->rbuf = xrealloc(c->rbuf, c->rcap);
        }
        size_t room = c->rcap - c->rlen;
        ssize_t n = read(c->fd, c->rbuf + c->rlen, room);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN &&
                       errno != EWOULDBLOCK)) {
            conn_close(c);
            return;
        }
        if (n < 0)
            return; /* EINTR: epoll reports it again; EAGAIN: spurious */
        c->rlen += (size_t)n;
        ssize_t used = parse(c);
        if (used < 0) {
            conn_close(c);
            return;
        }
        if (used > 0) {
            memmove(c->rbuf, c->rbuf + used, c->rlen - (size_t)used);
            c->rlen -= (size_t)used;
        }
        if (!flush(c)) {
            conn_close(c);
            return;
        }
        if (((size_t)n < room && !opt_drain) || c->writing)
            return; /* drained (or the client is not reading): to epoll */
    }
}

static void on_accept(struct conn *l)
{
    for (;;) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                perror("floor: accept");
            return;
        }
        if (l->tcp) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        struct conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->rcap = RBUF_INIT;
        c->rbuf = xrealloc(NULL, c->rcap);
        watch(c, EPOLL_CTL_ADD, EPOLLIN);
    }
}

static void add_listener(int fd, bool tcp)
{
    struct conn *l = calloc(1, sizeof(*l));
    if (l == NULL)
        die("calloc");
    l->fd = fd;
    l->is_listener = true;
    l->tcp = tcp;
    if (listen(fd, 1024) != 0)
        die("listen");
    watch(l, EPOLL_CTL_ADD, EPOLLIN);
}

static void listen_unix(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path)) {
        fprintf(stderr, "floor: socket path too long: %s\n", path);
        exit(64);
    }
    strcpy(sun.sun_path, path);
    unlink(path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
        die(path);
    add_listener(fd, false);
}

static void listen_tcp(const char *addr, const char *port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai;
    int rc = getaddrinfo(addr, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "floor: %s:%s: %s\n", addr, port, gai_strerror(rc));
        exit(64);
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
    int one = 1;
    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("bind");
    freeaddrinfo(ai);
    add_listener(fd, true);
}

static long num(const char *s, long lo, long hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "floor: bad %s '%s'\n", what, s);
        exit(64);
    }
    return v;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *port = NULL, *addr = "127.0.0.1";
    long klen = 16, vlen = 32;
    int c;

    while ((c = getopt(argc, argv, "s:p:l:K:v:EMh")) != -1) {
        switch (c) {
        case 's': path = optarg; break;
        case 'p': port = optarg; break;
        case 'l': addr = optarg; break;
        case 'K': klen = num(optarg, 1, 250, "key length"); break;
        case 'v': vlen = num(optarg, 0, 1 << 20, "value length"); break;
        case 'E': opt_drain = true; break;
        case 'M': opt_sendmsg = true; break;
        default:
            fputs("usage: floor [-s PATH] [-p PORT] [-l ADDR] [-K KEYLEN] "
                  "[-v VALUELEN] [-E] [-M]\n"
                  "  a bare epoll server answering memcached text get/set "
                  "with fixed replies\n"
                  "  -E  read until EAGAIN (one failed read per event, to "
                  "price it)\n"
                  "  -M  reply with sendmsg and a 3-piece iovec instead of "
                  "write\n",
                  c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 64;
        }
    }
    if ((path == NULL && port == NULL) || optind != argc) {
        fputs("floor: give -s PATH and/or -p PORT\n", stderr);
        return 64;
    }

    /* "VALUE " key " 0 " vlen "\r\n" value "\r\nEND\r\n", key and value
     * filler of the configured sizes: byte for byte as long as a real
     * server's reply to mdc-load's GET. */
    get_reply = xrealloc(NULL, (size_t)(klen + vlen + 64));
    size_t p = 0;
    p += (size_t)sprintf(get_reply, "VALUE ");
    memset(get_reply + p, 'k', (size_t)klen);
    p += (size_t)klen;
    p += (size_t)sprintf(get_reply + p, " 0 %ld\r\n", vlen);
    memset(get_reply + p, 'v', (size_t)vlen);
    p += (size_t)vlen;
    memcpy(get_reply + p, "\r\nEND\r\n", 7);
    get_reply_len = p + 7;

    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die("epoll_create1");
    if (path != NULL)
        listen_unix(path);
    if (port != NULL)
        listen_tcp(addr, port);

    struct epoll_event evs[MAX_EVENTS];
    while (!stop) {
        int n = epoll_wait(epfd, evs, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            struct conn *cn = evs[i].data.ptr;
            if (cn->is_listener)
                on_accept(cn);
            else if (cn->writing) {
                if (!flush(cn))
                    conn_close(cn);
            } else
                on_readable(cn);
        }
    }
    if (path != NULL)
        unlink(path);
    return 0;
}
