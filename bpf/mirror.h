/*
 * mirror.h - the server side of the XDP fast path (docs/xdp.md):
 * loads bpf/mdc_xdp.bpf.c, attaches it to an interface through a bpf_link
 * owned by this process, and writes the mirror - copies of hot, untagged,
 * small records that the program answers memcached UDP GETs from.
 *
 * The caller's duties (the consistency contract):
 *  - mirror_invalidate() for every mutation of a key, before the mutation
 *    becomes visible, holding the key's bucket lock exclusively: the store's
 *    mutation hook does exactly that (mirror_store_hook() plugs into
 *    store_set_hook() directly).  The one keyless announcement - a delayed
 *    flush being scheduled, made with no lock held - empties the mirror.
 *  - mirror_fill() only while holding that same bucket lock at least shared,
 *    copying the record's current value - so a fill never races with an
 *    invalidation of the same key and never resurrects an old value.
 *  - Only untagged records (tag invalidation never has to chase the kernel).
 * Two fills of the same slot exclude each other inside the library (the
 * slot's sequence counter is claimed with a compare-and-swap).
 *
 * Every function accepts a NULL mirror and does nothing, so a daemon without
 * -x calls them unconditionally.  Built without --enable-xdp, mirror_setup()
 * fails with -ENOTSUP and a message; mirror_reply_build() always works.
 */
#ifndef MDC_MIRROR_H
#define MDC_MIRROR_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "server/core/store.h"

struct mirror;

enum mirror_mode {
    MIRROR_MODE_AUTO,    /* native (driver) mode, else generic */
    MIRROR_MODE_NATIVE,  /* XDP_FLAGS_DRV_MODE or fail */
    MIRROR_MODE_GENERIC, /* XDP_FLAGS_SKB_MODE ("xdpgeneric") */
    MIRROR_MODE_NONE,    /* load only, attach nowhere (tests) */
};

#define MIRROR_NTIERS 3
#define MIRROR_MAX_DADDRS 8

/* Flags of struct mirror_config. */
#define MIRROR_F_HEAD_ONLY 1u /* grow replies at the head only (tests) */

struct mirror_config {
    const char *ifname; /* interface; unused with MIRROR_MODE_NONE */
    enum mirror_mode mode;
    uint16_t port;               /* UDP port served, host order */
    const struct in_addr *addrs; /* destinations answered, 1..8; the
                                    addresses the UDP socket is bound to (for
                                    INADDR_ANY: the interface's addresses) */
    size_t naddrs;
    uint32_t slots[MIRROR_NTIERS]; /* per tier (128 / 512 / 1536-byte slots),
                                      rounded up to a power of two; 0 =
                                      default 32768 / 8192 / 2048 */
    uint32_t mtu; /* 0: the interface's MTU (1500 without one) */
    unsigned flags;
    uint32_t slots_hot; /* tier 0's dense front (docs/xdp.md, "The
                           mirror"): rounded up to a power of two, 2 at
                           least; 0 = 2048 if tier 0 has 8192 slots or
                           more, else none; MIRROR_HOT_NONE = none */
};
#define MIRROR_HOT_NONE UINT32_MAX

/*
 * Load and attach.  Needs root (CAP_BPF + CAP_NET_ADMIN) - call it before
 * dropping privileges; the mirror stays writable afterwards (it is mmap'ed).
 * Returns 0 or a negative errno, with a one-line reason in err.
 */
int mirror_setup(const struct mirror_config *cfg, struct mirror **out, char *err,
                size_t errlen);
/* Detach (closing the link) and unmap.  Process exit does the same. */
void mirror_teardown(struct mirror *m);

/* mirror_fill() results besides 0 (all are a harmless "not mirrored"). */
#define MIRROR_EBUSY (-16)  /* -EBUSY: another writer owns the slot */
#define MIRROR_EINVAL (-22) /* -EINVAL: key the program never answers */
#define MIRROR_E2BIG (-7)   /* -E2BIG: reply would exceed a frame */

/*
 * Copy a record into the mirror.  deadline_ns: CLOCK_MONOTONIC nanoseconds
 * at which the record expires (0 = never); never later than the store's own.
 * The caller holds the key's bucket lock at least shared (see above).
 */
int mirror_fill(struct mirror *m, const void *key, uint32_t klen,
                const void *value, uint32_t vlen, uint32_t flags,
                uint64_t deadline_ns);
/* Remove the key from the mirror (a no-op if absent).  Caller holds the
 * key's bucket lock exclusively; returns once no reader can see it. */
void mirror_invalidate(struct mirror *m, const void *key, uint32_t klen);
/* Empty every slot (each claimed and released in turn). */
void mirror_clear(struct mirror *m);
/* A store_hook_fn: store_set_hook(st, mirror_store_hook, m).  An event
 * without a key (key NULL or klen 0) empties the whole mirror. */
void mirror_store_hook(void *m, enum store_event ev, const void *key,
                       uint32_t klen, uint64_t hash);

/* Would this record be accepted by mirror_fill()?  (Admission pre-check.) */
int mirror_fits(const struct mirror *m, uint32_t klen, uint32_t vlen,
                uint32_t flags);

/* Counters: the program's per-CPU counters summed, plus the writer's. */
#define MIRROR_NCOUNTERS 17
struct mirror_stats {
    uint64_t xdp[MIRROR_NCOUNTERS]; /* indexed as mirror_counter_name() */
    uint64_t fills;                 /* entries written */
    uint64_t fill_busy;     /* fills skipped: slot owned by another writer */
    uint64_t fill_rejected; /* fills refused: key or size */
    uint64_t invalidations; /* entries actually removed */
    uint64_t mem_bytes;     /* the mirror's fixed memory (all slots) */
    uint32_t slots[MIRROR_NTIERS];    /* hashed slots per tier */
    uint32_t slot_size[MIRROR_NTIERS];
    uint32_t slots_hot;               /* tier 0's dense front besides */
    uint32_t verified_insns; /* the verifier's processed-instruction count */
    const char *mode;        /* "native", "generic" or "none" */
};
int mirror_stats(struct mirror *m, struct mirror_stats *out);
const char *mirror_counter_name(unsigned i);
/* Walk every slot: entries in use and the bytes their records hold
 * (key + value), for a "memory per cached byte" figure.  O(slots). */
void mirror_usage(struct mirror *m, uint64_t *entries, uint64_t *bytes);
/* The same with the entries counted per tier (slot size: mirror_stats()). */
void mirror_usage_tiers(struct mirror *m, uint64_t entries[MIRROR_NTIERS],
                        uint64_t *bytes);

/*
 * The UDP payload of a GET hit, byte for byte what the XDP program sends and
 * what the userspace UDP path must send: the 8-byte frame header (request id,
 * sequence 0, 1 datagram, reserved 0) then
 * "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n".
 * Returns the length, or 0 if it does not fit in cap.
 */
size_t mirror_reply_build(void *buf, size_t cap, uint16_t request_id,
                          const void *key, uint32_t klen, uint32_t flags,
                          const void *value, uint32_t vlen);

/* The MTU of interface ifname, or -1. */
int mirror_if_mtu(const char *ifname);

/* ---- for tests and tools ---------------------------------------------- */
int mirror_prog_fd(const struct mirror *m);
/* The slot a key's hash selects in a tier (whatever it holds now), and its
 * slots 0 and 1 in tier 0's dense front (NULL without one). */
void *mirror_slot(struct mirror *m, unsigned tier, const void *key,
                  uint32_t klen);
void *mirror_slot_hot(struct mirror *m, const void *key, uint32_t klen,
                      unsigned which);
uint64_t mirror_key_hash(const struct mirror *m, const void *key,
                         uint32_t klen);

#endif
