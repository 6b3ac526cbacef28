/*
 * auth_flood.c - a failed-login flood beside good logins (bench/auth_flood.sh;
 * docs/security.md, "Authentication").
 *
 * Flood threads connect, send a wrong login (memcached's text form and the
 * native AUTH in turn), and close without waiting for the answer, paced to
 * RATE connections a second in all.  Meanwhile one thread logs in with the
 * right password every GOOD_MS milliseconds (connect, login, read the
 * answer, close) and counts the logins answered STORED within 5 s.  With
 * -T every connection is TLS (server certificate not verified).
 *
 * usage: auth_flood -p PORT [-H HOST] [-r RATE] [-d SECS] [-j THREADS]
 *                   [-g GOOD_MS] [-u USER] [-P PASS] [-T]
 * Prints one line: the flood's rate reached, the good logins that
 * succeeded of those tried, and their slowest answer.  Exit 0.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#ifdef HAVE_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

static const char *host = "127.0.0.1";
static int port, rate = 10000, secs = 10, nthreads = 2, good_ms = 100;
static const char *user = "alice", *pass = "s3cret";
static bool use_tls;
static double t_end;
static atomic_ulong bad_done, bad_errors;
#ifdef HAVE_TLS
static SSL_CTX *ctx;
#endif

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_until(double t)
{
    double d = t - now_s();

    if (d > 0) {
        struct timespec ts = {(time_t)d, (long)((d - (time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* A connected socket (timeouts 5 s), or -1. */
static int dial(void)
{
    struct sockaddr_in sa;
    struct timeval tv = {5, 0};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

struct link {
    int fd;
#ifdef HAVE_TLS
    SSL *ssl;
#endif
};

static int link_open(struct link *l)
{
    l->fd = dial();
    if (l->fd < 0)
        return -1;
#ifdef HAVE_TLS
    l->ssl = NULL;
    if (use_tls) {
        l->ssl = SSL_new(ctx);
        if (l->ssl == NULL || SSL_set_fd(l->ssl, l->fd) != 1 ||
            SSL_connect(l->ssl) != 1) {
            ERR_clear_error();
            if (l->ssl != NULL)
                SSL_free(l->ssl);
            close(l->fd);
            return -1;
        }
    }
#endif
    return 0;
}

static int link_send(struct link *l, const void *p, size_t n)
{
#ifdef HAVE_TLS
    if (l->ssl != NULL)
        return SSL_write(l->ssl, p, (int)n) == (int)n ? 0 : -1;
#endif
    return send(l->fd, p, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

static ssize_t link_recv(struct link *l, void *p, size_t n)
{
#ifdef HAVE_TLS
    if (l->ssl != NULL)
        return SSL_read(l->ssl, p, (int)n);
#endif
    return recv(l->fd, p, n, 0);
}

static void link_close(struct link *l)
{
#ifdef HAVE_TLS
    if (l->ssl != NULL)
        SSL_free(l->ssl); /* no close_notify: the flood just hangs up */
#endif
    close(l->fd);
}

/* The text login "set <any> 0 0 <n>\r\n<user> <pass>\r\n" into buf. */
static size_t text_login(char *buf, size_t cap, const char *u, const char *p)
{
    int n = snprintf(buf, cap, "set a 0 0 %zu\r\n%s %s\r\n",
                     strlen(u) + 1 + strlen(p), u, p);

    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The native AUTH (docs/protocol.md: 40-byte header, key = user, value =
 * password). */
static size_t native_login(uint8_t *buf, size_t cap, const char *u,
                           const char *p)
{
    size_t ul = strlen(u), pl = strlen(p);

    if (40 + ul + pl > cap)
        return 0;
    memset(buf, 0, 40);
    buf[0] = 0xB7;
    buf[1] = 1;
    buf[2] = 0x45; /* AUTH */
    buf[6] = (uint8_t)ul;
    buf[7] = (uint8_t)(ul >> 8);
    buf[12] = (uint8_t)pl;
    buf[13] = (uint8_t)(pl >> 8);
    memcpy(buf + 40, u, ul);
    memcpy(buf + 40 + ul, p, pl);
    return 40 + ul + pl;
}

static void *flood(void *arg)
{
    double per = (double)nthreads / rate, next = now_s();
    unsigned long i = (unsigned long)(uintptr_t)arg;
    uint8_t req[256];

    while (now_s() < t_end) {
        struct link l;
        size_t n;

        sleep_until(next);
        next += per;
        if (now_s() - next > 1.0)
            next = now_s(); /* behind by a second: do not burst to catch up */
        if (link_open(&l) < 0) {
            atomic_fetch_add(&bad_errors, 1);
            continue;
        }
        n = i++ % 2 == 0 ? text_login((char *)req, sizeof(req), user, "bad")
                         : native_login(req, sizeof(req), user, "wrong!");
        (void)link_send(&l, req, n);
        link_close(&l);
        atomic_fetch_add(&bad_done, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[64];
    unsigned long tried = 0, ok = 0;
    double worst = 0, t0;
    char login[256];
    size_t llen;
    int o, i;

    while ((o = getopt(argc, argv, "H:p:r:d:j:g:u:P:T")) != -1) {
        switch (o) {
        case 'H': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'r': rate = atoi(optarg); break;
        case 'd': secs = atoi(optarg); break;
        case 'j': nthreads = atoi(optarg); break;
        case 'g': good_ms = atoi(optarg); break;
        case 'u': user = optarg; break;
        case 'P': pass = optarg; break;
        case 'T': use_tls = true; break;
        default:
            fprintf(stderr, "usage: %s -p PORT [-H HOST] [-r RATE] [-d SECS] "
                    "[-j THREADS] [-g GOOD_MS] [-u USER] [-P PASS] [-T]\n",
                    argv[0]);
            return 64;
        }
    }
    if (port <= 0 || rate <= 0 || secs <= 0 || nthreads < 1 ||
        nthreads > 64 || good_ms <= 0) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 64;
    }
#ifdef HAVE_TLS
    if (use_tls) {
        ctx = SSL_CTX_new(TLS_client_method());
        if (ctx == NULL)
            return 70;
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    }
#else
    if (use_tls) {
        fprintf(stderr, "%s: built without TLS\n", argv[0]);
        return 69;
    }
#endif
    llen = text_login(login, sizeof(login), user, pass);
    t0 = now_s();
    t_end = t0 + secs;
    for (i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, flood, (void *)(uintptr_t)i);
    /* the good logins, from the first second to the last */
    for (double next = t0 + good_ms / 1000.0; next < t_end;
         next += good_ms / 1000.0) {
        struct link l;
        char buf[128];
        size_t got = 0;
        double t;

        sleep_until(next);
        t = now_s();
        tried++;
        if (link_open(&l) < 0)
            continue;
        if (link_send(&l, login, llen) == 0) {
            while (got < 8) {
                ssize_t k = link_recv(&l, buf + got, sizeof(buf) - 1 - got);
                if (k <= 0)
                    break;
                got += (size_t)k;
            }
        }
        link_close(&l);
        if (got >= 8 && memcmp(buf, "STORED\r\n", 8) == 0) {
            ok++;
            if (now_s() - t > worst)
                worst = now_s() - t;
        } else if (got > 0) {
            buf[got] = '\0';
            buf[strcspn(buf, "\r\n")] = '\0';
            fprintf(stderr, "good login %lu: \"%s\"\n", tried, buf);
        }
    }
    for (i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    printf("%s flood: %lu bad logins in %d s (%.0f/s, target %d/s), %lu "
           "failed to connect; good logins: %lu of %lu (%.1f %%), slowest "
           "%.3f s\n",
           use_tls ? "TLS" : "plain", atomic_load(&bad_done), secs,
           atomic_load(&bad_done) / (now_s() - t0), rate,
           atomic_load(&bad_errors), ok, tried,
           tried ? 100.0 * ok / tried : 0.0, worst);
    return 0;
}
