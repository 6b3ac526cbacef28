/*
 * sg_layout.h - what the kernel scatter-gather programs (sg.bpf.c), their
 * loader (tool/sg_load.c) and the library (sg.c) agree on: the maps'
 * entries and the completion datagram.  docs/pool-bpf.md describes the
 * path.  Plain fixed-width types only: included by BPF and user space.
 */
#ifndef MDC_SG_LAYOUT_H
#define MDC_SG_LAYOUT_H

#if defined(__linux__) || defined(__bpf__)
#include <linux/types.h>
#else /* the library's portable build: the layout only */
#include <stdint.h>
typedef uint8_t __u8;
typedef uint16_t __u16;
typedef uint32_t __u32;
typedef int32_t __s32;
typedef uint64_t __u64;
#endif

/* servers one pool map holds: one bit each in the answered bitmap */
#define MDC_SG_MAX 64
/* "MDSG" as the first four bytes of a completion or a poll */
#define MDC_SG_MAGIC0 'M'
#define MDC_SG_MAGIC1 'D'
#define MDC_SG_MAGIC2 'S'
#define MDC_SG_MAGIC3 'G'
#define MDC_SG_VERSION 1

/* kind of a completion datagram */
#define MDC_SG_DONE 1      /* the policy's count of servers answered */
#define MDC_SG_POLLED 2    /* the aggregate so far, asked for by a poll */
#define MDC_SG_UNKNOWN 3   /* a poll for a request the kernel does not know */
/* kind of the poll datagram the library sends */
#define MDC_SG_POLL 9

/* one server of the pool map (addresses and ports in network order; mac
 * all zero: the next hop of the virtual address, unchanged) */
struct mdc_sg_server {
    __u32 addr;
    __u16 port;
    __u8 mac[6];
};

/* the reverse lookup: a reply's source -> its server's index */
struct mdc_sg_addr {
    __u32 addr;
    __u16 port;
    __u16 pad;
};

/* a request in flight: the client's address, port and request id */
struct mdc_sg_key {
    __u32 addr;
    __u16 port;
    __u16 reqid;
};

/*
 * The completion datagram's body, after the 8-byte memcached frame header
 * (same request id).  Host byte order: it never leaves the host.  The poll
 * the library sends is the same size (the egress program writes the
 * aggregate into it), kind MDC_SG_POLL.
 */
struct mdc_sg_done {
    __u8 magic[4];
    __u8 version;
    __u8 kind;
    __u8 nserv;     /* servers the request went to */
    __u8 nans;      /* of which answered */
    __u32 need;     /* the policy's count */
    __s32 first_err; /* index of the first server that answered an error,
                        or -1 */
    __u64 answered; /* bit i: server i answered (ok or error) */
    __u64 failed;   /* bit i: server i answered an error */
    __u64 sum;      /* sum of the counts of the ok answers */
};

#endif /* MDC_SG_LAYOUT_H */
