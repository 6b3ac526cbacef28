/*
 * sg.c - one pool-wide tag delete through the kernel scatter-gather
 * programs (client-c/sg.bpf.c; docs/pool-bpf.md): a single datagram to the
 * virtual address (memcached's 8-byte frame header, the policy's count in
 * its reserved field, then the text command), one completion back.  When
 * the completion does not come in time, or came with servers missing (a
 * policy of N of M), a poll datagram with the same request id asks the
 * egress program for the aggregate so far; pool.c retries over TCP every
 * server it does not show as answered.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sg.h"
#include "sg_layout.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SG_POLL_MS 100 /* the poll's own answer: the kernel, no server */

static int parse_ipport(const char *s, struct sockaddr_in *sa)
{
    char buf[64], *colon, *end;
    long port;

    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    if ((colon = strrchr(buf, ':')) == NULL)
        return -1;
    *colon = '\0';
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, buf, &sa->sin_addr) == 1 ? 0 : -1;
}

/* the socket, connected to the virtual address: the completions of this
 * process's requests come back to it (a child after fork() makes its own,
 * or parent and child would read each other's) */
static int sg_socket(struct mdci_sg *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->pid = (int)getpid();
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return -1;
    if (connect(s->fd, (struct sockaddr *)&s->vip, sizeof(s->vip)) < 0) {
        close(s->fd);
        s->fd = -1;
        return -1;
    }
    return 0;
}

void mdci_sg_free(struct mdci_sg *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        close(s->fd);
    for (int i = 0; i < s->nserv; i++)
        free(s->servers[i]);
    free(s->desc);
    free(s);
}

struct mdci_sg *mdci_sg_open(const char *desc, char *err, size_t errlen)
{
    struct mdci_sg *s = calloc(1, sizeof(*s));
    struct sockaddr_in vip;
    char line[256], word[16], arg[200];
    bool have_vip = false;
    FILE *f;

    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->fd = -1;
    if ((f = fopen(desc, "re")) == NULL) {
        snprintf(err, errlen, "%s: %s (nothing loaded: mdcached-tool "
                 "pool-bpf load)", desc, strerror(errno));
        goto fail;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (line[0] == '#' || sscanf(line, "%15s %199s", word, arg) != 2)
            continue;
        if (strcmp(word, "vip") == 0) {
            have_vip = parse_ipport(arg, &vip) == 0;
        } else if (strcmp(word, "server") == 0) {
            struct sockaddr_in sa;
            if (s->nserv >= MDCI_SG_MAX || parse_ipport(arg, &sa) < 0 ||
                (s->servers[s->nserv] = strdup(arg)) == NULL) {
                fclose(f);
                snprintf(err, errlen, "%s: bad server line", desc);
                goto fail;
            }
            s->nserv++;
        }
    }
    fclose(f);
    if (!have_vip || s->nserv == 0) {
        snprintf(err, errlen, "%s: no vip or no server", desc);
        goto fail;
    }
    s->vip = vip;
    if (sg_socket(s) < 0) {
        snprintf(err, errlen, "UDP socket to the virtual address: %s",
                 strerror(errno));
        goto fail;
    }
    if ((s->desc = strdup(desc)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s->reqid = (uint16_t)(ts.tv_nsec ^ (long)getpid());
    }
    return s;
fail:
    mdci_sg_free(s);
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until deadline for a completion of reqid; 1 got one, 0 not. */
static int wait_done(struct mdci_sg *s, uint16_t reqid, int64_t deadline,
                     struct mdci_sg_res *res)
{
    uint8_t buf[128];
    for (;;) {
        ssize_t n = recv(s->fd, buf, sizeof(buf), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t left = deadline - now_ms();
            struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
            if (left <= 0)
                return 0;
            if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
                return 0;
            continue;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return 0; /* ECONNREFUSED: nothing behind the address */
        }
        struct mdc_sg_done d;
        if ((size_t)n < 8 + sizeof(d) ||
            (uint16_t)(buf[0] << 8 | buf[1]) != reqid)
            continue; /* a late completion of an earlier request */
        memcpy(&d, buf + 8, sizeof(d));
        if (d.magic[0] != MDC_SG_MAGIC0 || d.magic[1] != MDC_SG_MAGIC1 ||
            d.magic[2] != MDC_SG_MAGIC2 || d.magic[3] != MDC_SG_MAGIC3 ||
            d.version != MDC_SG_VERSION)
            continue;
        res->kind = d.kind;
        res->answered = d.answered;
        res->failed = d.failed;
        res->sum = d.sum;
        res->first_err = d.first_err;
        return 1;
    }
}

int mdci_sg_run(struct mdci_sg *s, const char *cmd, size_t len,
                unsigned need, int timeout_ms, struct mdci_sg_res *res)
{
    uint8_t buf[8 + MDCI_SG_MAX_CMD];
    uint16_t rid = ++s->reqid;
    uint64_t all = s->nserv >= 64 ? ~0ULL : (1ULL << s->nserv) - 1;
    int64_t deadline;

    memset(res, 0, sizeof(*res));
    res->first_err = -1;
    if (len > MDCI_SG_MAX_CMD)
        return -1;
    if ((s->pid != (int)getpid() || s->fd < 0) && sg_socket(s) < 0)
        return -1;
    buf[0] = (uint8_t)(rid >> 8);
    buf[1] = (uint8_t)rid;
    buf[2] = buf[3] = 0;
    buf[4] = 0;
    buf[5] = 1;
    /* the policy's count, where servers ignore it (memcached's reserved) */
    buf[6] = (uint8_t)(need >> 8);
    buf[7] = (uint8_t)need;
    memcpy(buf + 8, cmd, len);
    {
        /* an earlier ICMP error pending on the socket fails this send */
        ssize_t w;
        while ((w = send(s->fd, buf, 8 + len, 0)) < 0 && errno == EINTR)
            ;
        if (w < 0 && errno == ECONNREFUSED)
            w = send(s->fd, buf, 8 + len, 0);
        if (w != (ssize_t)(8 + len))
            return -1;
    }
    deadline = now_ms() + timeout_ms;
    if (wait_done(s, rid, deadline, res) && (res->answered & all) == all)
        return 0;
    /* late, or a policy of N of M: what does the kernel know now? */
    {
        struct mdc_sg_done p = {.magic = {MDC_SG_MAGIC0, MDC_SG_MAGIC1,
                                          MDC_SG_MAGIC2, MDC_SG_MAGIC3},
                                .version = MDC_SG_VERSION,
                                .kind = MDC_SG_POLL};
        memcpy(buf + 8, &p, sizeof(p));
        buf[6] = buf[7] = 0;
        if (send(s->fd, buf, 8 + sizeof(p), 0) == (ssize_t)(8 + sizeof(p))) {
            struct mdci_sg_res r2;
            memset(&r2, 0, sizeof(r2));
            if (wait_done(s, rid, now_ms() + SG_POLL_MS, &r2) &&
                r2.kind != MDC_SG_UNKNOWN)
                *res = r2;
        }
    }
    return 0;
}
