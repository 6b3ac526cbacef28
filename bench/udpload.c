/*
 * udpload - memcached UDP GET load generator for W8 (docs/benchmarking.md,
 * docs/xdp.md): many GETs in flight over a few sockets, sent with sendmmsg() and
 * collected with recvmmsg(), one thread.
 *
 *   udpload get -a ADDR -p PORT [-k KEYS] [-d SECONDS] [-W WARMUP]
 *               [-w WINDOW] [-b BATCH] [-S SOCKETS] [-T TIMEOUT_MS]
 *       uniform random GETs of "key:%08u" (KEYS of them, default 1000),
 *       WINDOW requests in flight in all (default 256), BATCH per system
 *       call (default 32); WARMUP seconds first, not counted.  Prints one
 *       JSON object: requests, replies (hits, misses, other - a bounce-back
 *       program returns the request itself), lost, req/s, latency
 *       percentiles, the machine's CPU time over the measured window from
 *       /proc/stat (all CPUs: user, system, softirq, ...) and this
 *       process's own (getrusage).
 *   udpload prefill -a ADDR -P TCPPORT [-k KEYS] [-v VLEN]
 *       set every key over memcached's text protocol (TCP), pipelined.
 *   udpload stats -a ADDR -P TCPPORT
 *       print the server's "stats" as "name value" lines.
 *
 * Every reply is matched to its request by the frame header's request id
 * (per socket); a request unanswered after TIMEOUT_MS (default 200) is
 * counted lost and its slot reused.
 */
#define _GNU_SOURCE
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SOCKS 64
#define MAX_BATCH 256
#define KEY_FMT "key:%08u"
#define REQ_MAX 64
#define REP_MAX 2048

/* Requests in flight per socket are tracked in a ring indexed by the low
 * bits of the request id: small, so the generator's own cache footprint
 * stays out of the way of what is measured. */
#define RING 1024
struct slot {
    uint64_t sent_at; /* 0 = free */
    uint16_t id;
};
struct sock {
    int fd;
    uint16_t next_id;
    unsigned inflight;
    struct slot ring[RING];
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* ---- /proc/stat ------------------------------------------------------------ */

#define CPU_FIELDS 8 /* user nice system idle iowait irq softirq steal */
static const char *const cpu_names[CPU_FIELDS] = {
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};

static void cpu_read(unsigned long long v[CPU_FIELDS])
{
    FILE *f = fopen("/proc/stat", "r");

    memset(v, 0, sizeof(unsigned long long) * CPU_FIELDS);
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                     &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
        die("/proc/stat");
    fclose(f);
}

/* This process's CPU time (user + system), seconds. */
static double self_cpu(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* ---- latency histogram: 1 us buckets to 10 ms, then one overflow --------- */

#define HIST_N 10001
static uint64_t hist[HIST_N];

static void hist_add(uint64_t ns)
{
    uint64_t us = ns / 1000;

    hist[us < HIST_N - 1 ? us : HIST_N - 1]++;
}

static double hist_pct(double p, uint64_t n)
{
    uint64_t want = (uint64_t)(p * (double)n), acc = 0;
    unsigned i;

    for (i = 0; i < HIST_N; i++) {
        acc += hist[i];
        if (acc > want)
            return (double)i;
    }
    return (double)(HIST_N - 1);
}

/* ---- get ------------------------------------------------------------------- */

struct counts {
    uint64_t sent, replies, hits, misses, other, lost;
};

static int udp_sock(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int sz = 4 << 20;

    if (fd < 0)
        die("socket");
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
        die("connect");
    return fd;
}

static int run_get(const struct sockaddr_in *sa, unsigned nkeys, double secs,
                   double warm, unsigned window, unsigned batch,
                   unsigned nsocks, unsigned timeout_ms)
{
    static struct sock socks[MAX_SOCKS];
    static uint8_t reqbuf[MAX_BATCH][REQ_MAX];
    static uint8_t repbuf[MAX_BATCH][REP_MAX];
    static struct mmsghdr tx[MAX_BATCH], rx[MAX_BATCH];
    static struct iovec txiov[MAX_BATCH], rxiov[MAX_BATCH];
    struct pollfd pfd[MAX_SOCKS];
    unsigned long long c0[CPU_FIELDS], c1[CPU_FIELDS];
    struct counts cnt = {0}, zero = {0};
    uint64_t t_start, t_meas = 0, t_end, t_next_expire, t, tmo;
    uint64_t rnd = 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
    unsigned per_sock = (window + nsocks - 1) / nsocks, i, s;
    bool measuring = warm <= 0;
    long tck = sysconf(_SC_CLK_TCK);
    double busy = 0, meas_s, self0 = 0;

    tmo = (uint64_t)timeout_ms * 1000000u;
    for (s = 0; s < nsocks; s++) {
        socks[s].fd = udp_sock(sa);
        socks[s].next_id = (uint16_t)(s * 4099);
        pfd[s].fd = socks[s].fd;
        pfd[s].events = POLLIN;
    }
    for (i = 0; i < MAX_BATCH; i++) {
        txiov[i].iov_base = reqbuf[i];
        tx[i].msg_hdr.msg_iov = &txiov[i];
        tx[i].msg_hdr.msg_iovlen = 1;
        rxiov[i].iov_base = repbuf[i];
        rxiov[i].iov_len = REP_MAX;
        rx[i].msg_hdr.msg_iov = &rxiov[i];
        rx[i].msg_hdr.msg_iovlen = 1;
    }
    t_start = now_ns();
    t_end = t_start + (uint64_t)((warm + secs) * 1e9);
    if (measuring) {
        cpu_read(c0);
        self0 = self_cpu();
        t_meas = t_start;
    }
    t_next_expire = t_start + tmo / 4;
    while ((t = now_ns()) < t_end) {
        if (!measuring && t >= t_start + (uint64_t)(warm * 1e9)) {
            measuring = true;
            cnt = zero;
            memset(hist, 0, sizeof(hist));
            cpu_read(c0);
            self0 = self_cpu();
            t_meas = t;
        }
        /* fill every socket's window */
        for (s = 0; s < nsocks; s++) {
            struct sock *k = &socks[s];
            unsigned n = 0;
            int r;

            while (k->inflight + n < per_sock && n < batch) {
                uint16_t id = k->next_id++;
                struct slot *sl = &k->ring[id % RING];
                unsigned key;
                int len;

                if (sl->sent_at) { /* wrapped onto a lost request */
                    sl->sent_at = 0;
                    k->inflight--;
                    cnt.lost++;
                }
                rnd ^= rnd << 13;
                rnd ^= rnd >> 7;
                rnd ^= rnd << 17;
                key = (unsigned)(rnd % nkeys);
                reqbuf[n][0] = (uint8_t)(id >> 8);
                reqbuf[n][1] = (uint8_t)id;
                memcpy(reqbuf[n] + 2, "\0\0\0\x01\0\0", 6);
                len = snprintf((char *)reqbuf[n] + 8, REQ_MAX - 8,
                               "get " KEY_FMT "\r\n", key);
                txiov[n].iov_len = (size_t)len + 8;
                sl->sent_at = t;
                sl->id = id;
                n++;
            }
            if (n == 0)
                continue;
            r = sendmmsg(k->fd, tx, n, 0);
            if (r < 0) {
                if (errno != EAGAIN && errno != ENOBUFS)
                    die("sendmmsg");
                r = 0;
            }
            /* unsent ones: free their ids again */
            for (i = (unsigned)r; i < n; i++) {
                uint16_t id = (uint16_t)(reqbuf[i][0] << 8 | reqbuf[i][1]);
                k->ring[id % RING].sent_at = 0;
            }
            k->inflight += (unsigned)r;
            cnt.sent += (unsigned)r;
        }
        /* collect */
        if (poll(pfd, nsocks, 1) < 0 && errno != EINTR)
            die("poll");
        t = now_ns();
        for (s = 0; s < nsocks; s++) {
            struct sock *k = &socks[s];
            int r, j;

            if (!(pfd[s].revents & POLLIN))
                continue;
            r = recvmmsg(k->fd, rx, batch, MSG_DONTWAIT, NULL);
            for (j = 0; j < r; j++) {
                const uint8_t *p = repbuf[j];
                unsigned len = rx[j].msg_len;
                struct slot *sl;
                uint16_t id;

                if (len < 8)
                    continue;
                id = (uint16_t)(p[0] << 8 | p[1]);
                sl = &k->ring[id % RING];
                if (!sl->sent_at || sl->id != id)
                    continue; /* late: already counted lost */
                if (measuring)
                    hist_add(t - sl->sent_at);
                sl->sent_at = 0;
                k->inflight--;
                cnt.replies++;
                if (len >= 13 && !memcmp(p + 8, "VALUE", 5))
                    cnt.hits++;
                else if (len == 13 && !memcmp(p + 8, "END\r\n", 5))
                    cnt.misses++;
                else
                    cnt.other++;
            }
        }
        /* expire the lost */
        if (t >= t_next_expire) {
            for (s = 0; s < nsocks; s++) {
                struct sock *k = &socks[s];
                unsigned id;

                if (k->inflight == 0)
                    continue;
                for (id = 0; id < RING; id++)
                    if (k->ring[id].sent_at &&
                        t - k->ring[id].sent_at > tmo) {
                        k->ring[id].sent_at = 0;
                        k->inflight--;
                        cnt.lost++;
                    }
            }
            t_next_expire = t + tmo / 4;
        }
    }
    cpu_read(c1);
    self0 = self_cpu() - self0;
    meas_s = (double)(now_ns() - t_meas) / 1e9;
    printf("{\"seconds\": %.3f, \"window\": %u, \"batch\": %u, \"sockets\": "
           "%u, \"keys\": %u, \"sent\": %" PRIu64 ", \"replies\": %" PRIu64
           ", \"hits\": %" PRIu64 ", \"misses\": %" PRIu64
           ", \"other\": %" PRIu64 ", \"lost\": %" PRIu64
           ", \"rps\": %.0f, \"p50_us\": %.0f, \"p99_us\": %.0f, "
           "\"cpu_s\": {",
           meas_s, window, batch, nsocks, nkeys, cnt.sent, cnt.replies,
           cnt.hits, cnt.misses, cnt.other, cnt.lost,
           (double)cnt.replies / meas_s, hist_pct(0.5, cnt.replies),
           hist_pct(0.99, cnt.replies));
    for (i = 0; i < CPU_FIELDS; i++) {
        double v = (double)(c1[i] - c0[i]) / (double)tck;

        printf("%s\"%s\": %.2f", i ? ", " : "", cpu_names[i], v);
        if (i != 3 && i != 4)
            busy += v;
    }
    printf("}, \"cpu_busy_s\": %.2f, \"cpu_s_per_mreq\": %.3f, "
           "\"self_cpu_s\": %.3f}\n",
           busy, cnt.replies ? busy / ((double)cnt.replies / 1e6) : 0.0,
           self0);
    return 0;
}

/* ---- prefill and stats over TCP -------------------------------------------- */

static int tcp_open(const char *addr, uint16_t port)
{
    struct sockaddr_in sa;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        die("tcp connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            die("write");
        p += w;
        n -= (size_t)w;
    }
}

/* Read until 'count' lines equal to 'line' arrived (the pipelined replies). */
static void read_lines(int fd, const char *line, unsigned count)
{
    char buf[65536];
    size_t have = 0, ll = strlen(line);
    unsigned seen = 0;

    while (seen < count) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);
        char *p = buf, *nl;

        if (r <= 0)
            die("read");
        have += (size_t)r;
        while ((nl = memchr(p, '\n', have - (size_t)(p - buf))) != NULL) {
            if ((size_t)(nl - p + 1) == ll && !memcmp(p, line, ll))
                seen++;
            else {
                fprintf(stderr, "udpload: unexpected reply '%.*s'\n",
                        (int)(nl - p), p);
                exit(1);
            }
            p = nl + 1;
        }
        have -= (size_t)(p - buf);
        memmove(buf, p, have);
    }
}

static int run_prefill(const char *addr, uint16_t port, unsigned nkeys,
                       unsigned vlen)
{
    char *buf = malloc(65536 + 256 + vlen), val[4096];
    int fd = tcp_open(addr, port);
    unsigned k = 0, batch;
    size_t n;

    if (!buf || vlen >= sizeof(val))
        die("prefill");
    while (k < nkeys) {
        n = 0;
        batch = 0;
        while (k < nkeys && n < 65536) {
            memset(val, 'a' + (int)(k % 26), vlen);
            val[vlen] = '\0';
            n += (size_t)sprintf(buf + n, "set " KEY_FMT " 0 0 %u\r\n%s\r\n",
                                 k, vlen, val);
            k++;
            batch++;
        }
        write_all(fd, buf, n);
        read_lines(fd, "STORED\r\n", batch);
    }
    close(fd);
    free(buf);
    return 0;
}

static int run_stats(const char *addr, uint16_t port)
{
    char buf[65536];
    size_t have = 0;
    int fd = tcp_open(addr, port);

    write_all(fd, "stats\r\n", 7);
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (r <= 0)
            die("read");
        have += (size_t)r;
        buf[have] = '\0';
        if (have >= 5 && !strcmp(buf + have - 5, "END\r\n"))
            break;
    }
    for (char *l = buf, *nl; (nl = strstr(l, "\r\n")) != NULL; l = nl + 2) {
        *nl = '\0';
        if (!strncmp(l, "STAT ", 5))
            printf("%s\n", l + 5);
    }
    close(fd);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: udpload get -a ADDR -p PORT [-k KEYS] [-d SECONDS] "
            "[-W WARMUP] [-w WINDOW] [-b BATCH] [-S SOCKETS] [-T MS]\n"
            "       udpload prefill -a ADDR -P TCPPORT [-k KEYS] [-v VLEN]\n"
            "       udpload stats -a ADDR -P TCPPORT\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *mode, *addr = NULL;
    unsigned port = 0, tport = 0, nkeys = 1000, window = 256, batch = 32;
    unsigned nsocks = 4, vlen = 32, timeout_ms = 200;
    double secs = 5, warm = 1;
    struct sockaddr_in sa;
    int c;

    if (argc < 2)
        usage();
    mode = argv[1];
    optind = 2;
    while ((c = getopt(argc, argv, "a:p:P:k:d:W:w:b:S:T:v:")) != -1) {
        switch (c) {
        case 'a': addr = optarg; break;
        case 'p': port = (unsigned)atoi(optarg); break;
        case 'P': tport = (unsigned)atoi(optarg); break;
        case 'k': nkeys = (unsigned)atoi(optarg); break;
        case 'd': secs = atof(optarg); break;
        case 'W': warm = atof(optarg); break;
        case 'w': window = (unsigned)atoi(optarg); break;
        case 'b': batch = (unsigned)atoi(optarg); break;
        case 'S': nsocks = (unsigned)atoi(optarg); break;
        case 'T': timeout_ms = (unsigned)atoi(optarg); break;
        case 'v': vlen = (unsigned)atoi(optarg); break;
        default: usage();
        }
    }
    if (!addr || nkeys == 0 || batch == 0 || batch > MAX_BATCH ||
        nsocks == 0 || nsocks > MAX_SOCKS || window < nsocks ||
        window / nsocks > RING / 2)
        usage();
    if (!strcmp(mode, "prefill") && tport)
        return run_prefill(addr, (uint16_t)tport, nkeys, vlen);
    if (!strcmp(mode, "stats") && tport)
        return run_stats(addr, (uint16_t)tport);
    if (strcmp(mode, "get") || !port)
        usage();
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        usage();
    return run_get(&sa, nkeys, secs, warm, window, batch, nsocks, timeout_ms);
}
