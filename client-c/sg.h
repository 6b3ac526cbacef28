/*
 * sg.h - libmdcached's side of the kernel scatter-gather of tag deletes
 * (docs/pool-bpf.md): the pool's description the loader wrote, the UDP
 * socket to the virtual address, one request and its completion.  No
 * bpf() call: the programs were loaded by root (mdcached-tool pool-bpf).
 */
#ifndef MDCI_SG_H
#define MDCI_SG_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define MDCI_SG_MAX 64
#define MDCI_SG_MAX_CMD 1400 /* one datagram, no fragments */

struct mdci_sg {
    char *desc;                 /* the description's path */
    int nserv;
    char *servers[MDCI_SG_MAX]; /* "addr:port" as the loader was given */
    int fd;                     /* UDP, connected to the virtual address */
    int pid;                    /* the process fd was made in */
    struct sockaddr_in vip;
    uint16_t reqid;
};

/* What one request got back. */
struct mdci_sg_res {
    int kind;          /* 0: nothing came back; else MDC_SG_DONE/POLLED/.. */
    uint64_t answered; /* bit i: description's server i answered */
    uint64_t failed;   /* ... answered an error */
    uint64_t sum;      /* counts of the ok answers, summed */
    int first_err;
};

/* Read desc and open the socket; NULL with err filled when unusable (no
 * such file: nothing loaded). */
struct mdci_sg *mdci_sg_open(const char *desc, char *err, size_t errlen);
void mdci_sg_free(struct mdci_sg *s);
/* Send cmd (a text command, "\r\n" ended) with the policy's count need
 * (0: all) and wait up to timeout_ms for its completion; on timeout (or a
 * completion with servers missing) poll the kernel for the aggregate.
 * Returns 0 (res filled, maybe partial) or -1 (the send failed: nothing
 * went out). */
int mdci_sg_run(struct mdci_sg *s, const char *cmd, size_t len,
                unsigned need, int timeout_ms, struct mdci_sg_res *res);

#endif
