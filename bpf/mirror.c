/*
 * mirror.c - the server side of the XDP fast path: load and attach
 * bpf/mdc_xdp.bpf.c (through its bpftool skeleton), and write the mirror of
 * bpf/mirror_layout.h with plain stores into the mmap'ed BPF arrays.
 *
 * Writers follow a seqlock per slot: claim (seq even -> odd with a
 * compare-and-swap, so two writers never share a slot), write, release
 * (seq odd -> even).  The XDP program reads seq, copies, re-reads seq.
 * Fills and invalidations of one key are serialized by the caller's bucket
 * lock (mirror.h); that is what makes the invalidation below sufficient.
 *
 * Without --enable-xdp only the pure parts are built: mirror_setup() fails.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mirror.h"
#include "mirror_layout.h"
#include "protocol/mctext.h"

#ifdef MDC_XDP
#include <fcntl.h>
#include <linux/if_link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <dlfcn.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* libbpf is opened by mirror_setup(), not linked: the daemon without -x
 * then maps neither it nor the libelf and libz it loads, 0.3 MiB of
 * relocated pages in every idle process (docs/performance.md, "Idle
 * footprint").  The calls below, the skeleton's included, go through this
 * table; the types come from libbpf's own declarations, and
 * MDC_LIBBPF_SONAME is the library configure linked its test against. */
#define MDC_LIBBPF_FUNCS(X)                                                    \
    X(bpf_object__open_skeleton)                                               \
    X(bpf_object__load_skeleton)                                               \
    X(bpf_object__destroy_skeleton)                                            \
    X(bpf_program__fd)                                                         \
    X(bpf_map__fd)                                                             \
    X(bpf_map__set_max_entries)                                                \
    X(bpf_link_create)                                                         \
    X(bpf_obj_get_info_by_fd)                                                  \
    X(bpf_map_lookup_elem)                                                     \
    X(libbpf_num_possible_cpus)
static struct {
#define X(f) __typeof__(f) *f;
    MDC_LIBBPF_FUNCS(X)
#undef X
} lb;
static const struct {
    const char *name;
    size_t off;
} lb_syms[] = {
#define X(f) {#f, offsetof(__typeof__(lb), f)},
    MDC_LIBBPF_FUNCS(X)
#undef X
};
#define bpf_object__open_skeleton lb.bpf_object__open_skeleton
#define bpf_object__load_skeleton lb.bpf_object__load_skeleton
#define bpf_object__destroy_skeleton lb.bpf_object__destroy_skeleton
#define bpf_program__fd lb.bpf_program__fd
#define bpf_map__fd lb.bpf_map__fd
#define bpf_map__set_max_entries lb.bpf_map__set_max_entries
#define bpf_link_create lb.bpf_link_create
#define bpf_obj_get_info_by_fd lb.bpf_obj_get_info_by_fd
#define bpf_map_lookup_elem lb.bpf_map_lookup_elem
#define libbpf_num_possible_cpus lb.libbpf_num_possible_cpus

#include "bpf/mdc_xdp.skel.h"
#endif

_Static_assert(MIRROR_NCOUNTERS == MC__COUNT, "counter tables disagree");
_Static_assert(MIRROR_NTIERS == MIRROR_TIERS, "tier counts disagree");
_Static_assert(MIRROR_MAX_DADDRS == MIRROR_MAX_ADDRS, "address limits");
_Static_assert(sizeof(struct mirror_entry) == MIRROR_HDR_SIZE, "header");

static const char *const counter_names[] = {
#define X(e, s) s,
    MIRROR_COUNTERS(X)
#undef X
};

struct tier {
    uint8_t *base;   /* mmap'ed array: nslots * size bytes */
    size_t bytes;    /* mapping length */
    uint32_t mask;   /* hashed slots - 1 */
    uint32_t size;   /* slot size */
    uint32_t hot;    /* slots of the dense front (tier 0 only; 0 = none) */
    uint32_t nslots; /* hot + mask + 1 */
};

struct mirror {
    struct tier tier[MIRROR_TIERS];
    uint64_t seed;
    uint32_t max_blob; /* largest blob a frame carries */
    const char *mode;
    uint32_t verified_insns;
    uint64_t fills, fill_busy, fill_rejected, invalidations; /* atomics */
#ifdef MDC_XDP
    struct mdc_xdp *skel;
    int link_fd;
#endif
};

const char *mirror_counter_name(unsigned i)
{
    return i < MC__COUNT ? counter_names[i] : NULL;
}

static void stat_add(uint64_t *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* ---- the reply, shared with the userspace UDP path ------------------------
 */

#define BLOB_TAIL "\r\nEND\r\n"
#define BLOB_TAIL_LEN 7

size_t mirror_reply_build(void *buf, size_t cap, uint16_t request_id,
                          const void *key, uint32_t klen, uint32_t flags,
                          const void *value, uint32_t vlen)
{
    char head[MCTEXT_VALUE_LINE_LEN(MIRROR_KEY_MAX)];
    uint8_t *p = buf;
    size_t hl, total;

    if (klen > MIRROR_KEY_MAX)
        return 0;
    hl = mctext_value_line(head, key, klen, flags, vlen, false, 0);
    total = MIRROR_FRAME_HDR + hl + (size_t)vlen + BLOB_TAIL_LEN;
    if (total > cap)
        return 0;
    mctext_udp_frame(p, request_id, 0, 1); /* one datagram */
    memcpy(p + 8, head, hl);
    memcpy(p + 8 + hl, value, vlen);
    memcpy(p + 8 + hl + vlen, BLOB_TAIL, BLOB_TAIL_LEN);
    return total;
}

/* ---- hash and checksum, as the program computes them ----------------------
 */

static uint64_t key_hash(uint64_t seed, const void *key, uint32_t klen)
{
    const uint8_t *k = key;
    uint64_t h = mirror_hash_init(seed, klen), w;
    uint32_t i, n;

    for (i = 0; i < klen; i += 8) {
        n = klen - i < 8 ? klen - i : 8;
        w = 0;
        memcpy(&w, k + i, n);
        h = mirror_hash_word(h, w);
    }
    return mirror_hash_final(h);
}

uint64_t mirror_key_hash(const struct mirror *m, const void *key, uint32_t klen)
{
    return key_hash(m ? m->seed : 0, key, klen);
}

/* Ones'-complement sum of native-order 16-bit words, folded to 16 bits. */
static uint32_t csum16(const uint8_t *p, size_t n)
{
    uint64_t sum = 0;
    uint16_t w;
    size_t i;

    for (i = 0; i + 1 < n; i += 2) {
        memcpy(&w, p + i, 2);
        sum += w;
    }
    if (n & 1) {
        uint8_t last[2] = {p[n - 1], 0};
        memcpy(&w, last, 2);
        sum += w;
    }
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint32_t)sum;
}

/* ---- slots ----------------------------------------------------------------
 */

static struct mirror_entry *slot_at(struct mirror *m, unsigned t, uint32_t i)
{
    struct tier *tr = &m->tier[t];
    return (struct mirror_entry *)(tr->base + (size_t)i * tr->size);
}

/* The slot hash h selects in tier t (whatever it holds now), after the
 * dense front if the tier has one. */
static struct mirror_entry *slot_of(struct mirror *m, unsigned t, uint64_t h)
{
    struct tier *tr = &m->tier[t];

    return slot_at(m, t, mirror_cold_pos(h, tr->hot, tr->mask));
}

/* Its slot 'which' (0, 1) in tier t's dense front, or NULL without one. */
static struct mirror_entry *hot_of(struct mirror *m, unsigned t, uint64_t h,
                                   unsigned which)
{
    struct tier *tr = &m->tier[t];
    uint32_t p;

    if (!tr->hot)
        return NULL;
    p = mirror_hot_pos(h, tr->hot - 1);
    if (which)
        p = mirror_hot_pos2(p, h, tr->hot - 1);
    return slot_at(m, t, p);
}

void *mirror_slot(struct mirror *m, unsigned tier, const void *key,
                  uint32_t klen)
{
    if (!m || tier >= MIRROR_TIERS || !m->tier[tier].base)
        return NULL;
    return slot_of(m, tier, key_hash(m->seed, key, klen));
}

void *mirror_slot_hot(struct mirror *m, const void *key, uint32_t klen,
                      unsigned which)
{
    if (!m || !m->tier[0].base || which > 1)
        return NULL;
    return hot_of(m, 0, key_hash(m->seed, key, klen), which);
}

/*
 * Order a claim's odd sequence before the stores that follow it, for the
 * XDP reader (a compiler barrier on x86-64).  ThreadSanitizer does not model
 * fences; between writers the claim's acq_rel compare-and-swap is the order.
 */
static void claim_fence(void)
{
#ifdef MDC_TSAN
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#else
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

static bool claim(struct mirror_entry *e, uint32_t *seq)
{
    uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);

    if (s & 1)
        return false;
    if (!__atomic_compare_exchange_n(&e->seq, &s, s + 1, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return false;
    claim_fence(); /* the odd sequence is visible before any store below */
    *seq = s;
    return true;
}

static void release(struct mirror_entry *e, uint32_t s)
{
    __atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

/*
 * Remove the entry of hash h from slot e, if it is there.  A slot owned by
 * another writer (odd sequence) is left alone: that writer is filling some
 * other key (the caller's bucket lock excludes fills of this one; a front
 * slot is only claimed for a key when empty or already that key's) or
 * clearing it, so when it releases the slot our key is gone.
 */
static void drop_at(struct mirror *m, struct mirror_entry *e, uint64_t h)
{
    uint32_t s;

    if (!e)
        return;
    for (;;) {
        s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
        if (s & 1)
            return;
        if (__atomic_load_n(&e->hash, __ATOMIC_RELAXED) != h ||
            __atomic_load_n(&e->blob_len, __ATOMIC_RELAXED) == 0)
            return;
        if (__atomic_compare_exchange_n(&e->seq, &s, s + 1, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            break;
    }
    claim_fence();
    __atomic_store_n(&e->blob_len, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->hash, 0, __ATOMIC_RELAXED);
    release(e, s);
    stat_add(&m->invalidations);
}

/* Every place of hash h but 'keep': tier 0's three, the other tiers'. */
static void drop_all(struct mirror *m, uint64_t h, struct mirror_entry *keep)
{
    struct mirror_entry *e;
    unsigned t;

    for (t = 0; t < MIRROR_TIERS; t++) {
        if (!m->tier[t].base)
            continue;
        if ((e = hot_of(m, t, h, 0)) != keep)
            drop_at(m, e, h);
        if ((e = hot_of(m, t, h, 1)) != keep)
            drop_at(m, e, h);
        if ((e = slot_of(m, t, h)) != keep)
            drop_at(m, e, h);
    }
}

/*
 * Claim a front slot for hash h only if it is empty or holds h already:
 * the first key to take a front slot keeps it until it is invalidated, so
 * two hot keys sharing one do not evict each other (the second goes to its
 * hashed slot).  The contents are read between the sequence's load and the
 * compare-and-swap from it, which fails if any writer came in between.
 */
static bool claim_front(struct mirror_entry *e, uint64_t h, uint32_t *seq)
{
    uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

    if (s & 1)
        return false;
    if (__atomic_load_n(&e->blob_len, __ATOMIC_RELAXED) != 0 &&
        __atomic_load_n(&e->hash, __ATOMIC_RELAXED) != h)
        return false;
    if (!__atomic_compare_exchange_n(&e->seq, &s, s + 1, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return false;
    claim_fence();
    *seq = s;
    return true;
}

/* The slot of hash h in tier t, claimed for a fill: the first of its front
 * slots that is free or already h's (tier 0), else its hashed slot,
 * whatever that holds (the newest fill wins there); one another writer
 * owns is not waited for (NULL: MIRROR_EBUSY, a spurious miss). */
static struct mirror_entry *fill_slot(struct mirror *m, unsigned t, uint64_t h,
                                      uint32_t *seq)
{
    struct mirror_entry *e = hot_of(m, t, h, 0);

    if (e && claim_front(e, h, seq))
        return e;
    e = hot_of(m, t, h, 1);
    if (e && claim_front(e, h, seq))
        return e;
    e = slot_of(m, t, h);
    return claim(e, seq) ? e : NULL;
}

static bool key_ok(const uint8_t *k, uint32_t klen)
{
    uint32_t i;

    if (klen == 0 || klen > MIRROR_KEY_MAX)
        return false;
    for (i = 0; i < klen; i++)
        if (!mirror_key_byte_ok(k[i]))
            return false;
    return true;
}

static uint32_t ndigits(uint32_t v)
{
    uint32_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static int tier_for(const struct mirror *m, uint32_t klen, uint32_t vlen,
                    uint32_t flags, uint32_t *blen)
{
    uint64_t b = 6 + (uint64_t)klen + 1 + ndigits(flags) + 1 + ndigits(vlen) +
                 2 + vlen + BLOB_TAIL_LEN;
    unsigned t;

    if (b > m->max_blob)
        return MIRROR_E2BIG;
    for (t = 0; t < MIRROR_TIERS; t++)
        if (m->tier[t].base && b <= m->tier[t].size - MIRROR_HDR_SIZE) {
            *blen = (uint32_t)b;
            return (int)t;
        }
    return MIRROR_E2BIG;
}

int mirror_fits(const struct mirror *m, uint32_t klen, uint32_t vlen,
                uint32_t flags)
{
    uint32_t b;
    return m && klen && klen <= MIRROR_KEY_MAX &&
           tier_for(m, klen, vlen, flags, &b) >= 0;
}

int mirror_fill(struct mirror *m, const void *key, uint32_t klen,
                const void *value, uint32_t vlen, uint32_t flags,
                uint64_t deadline_ns)
{
    struct mirror_entry *e;
    uint32_t blen, s, hl;
    uint64_t h;
    int t;

    if (!m)
        return 0;
    if (!key_ok(key, klen)) {
        stat_add(&m->fill_rejected);
        return MIRROR_EINVAL;
    }
    t = tier_for(m, klen, vlen, flags, &blen);
    if (t < 0) {
        stat_add(&m->fill_rejected);
        return t;
    }
    h = key_hash(m->seed, key, klen);
    e = fill_slot(m, (unsigned)t, h, &s);
    if (!e) {
        stat_add(&m->fill_busy);
        return MIRROR_EBUSY;
    }
    hl = (uint32_t)mctext_value_line((char *)e->blob, key, klen, flags, vlen,
                                     false, 0);
    memcpy(e->blob + hl, value, vlen);
    memcpy(e->blob + hl + vlen, BLOB_TAIL, BLOB_TAIL_LEN);
    __atomic_store_n(&e->klen, (uint8_t)klen, __ATOMIC_RELAXED);
    __atomic_store_n(&e->vlen, vlen, __ATOMIC_RELAXED);
    __atomic_store_n(&e->deadline_ns, deadline_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&e->csum, csum16(e->blob, blen), __ATOMIC_RELAXED);
    __atomic_store_n(&e->hash, h, __ATOMIC_RELAXED);
    __atomic_store_n(&e->blob_len, (uint16_t)blen, __ATOMIC_RELAXED);
    release(e, s);
    /* a copy anywhere else could only be stale: drop it */
    drop_all(m, h, e);
    stat_add(&m->fills);
    return 0;
}

void mirror_invalidate(struct mirror *m, const void *key, uint32_t klen)
{
    if (!m || klen == 0 || klen > MIRROR_KEY_MAX)
        return; /* never mirrored */
    drop_all(m, key_hash(m->seed, key, klen), NULL);
}

void mirror_store_hook(void *m, enum store_event ev, const void *key,
                       uint32_t klen, uint64_t hash)
{
    (void)ev;
    (void)hash; /* the store's hash; the mirror indexes by its own */
    if (key == NULL) {
        mirror_clear(m); /* an announcement about every key */
        return;
    }
    mirror_invalidate(m, key, klen);
}

void mirror_clear(struct mirror *m)
{
    struct mirror_entry *e;
    uint32_t i, s;
    unsigned t;

    if (!m)
        return;
    for (t = 0; t < MIRROR_TIERS; t++) {
        if (!m->tier[t].base)
            continue;
        for (i = 0; i < m->tier[t].nslots; i++) {
            e = (void *)(m->tier[t].base + (size_t)i * m->tier[t].size);
            if (__atomic_load_n(&e->blob_len, __ATOMIC_RELAXED) == 0)
                continue;
            while (!claim(e, &s))
                ; /* a writer finishes in a few hundred nanoseconds */
            __atomic_store_n(&e->blob_len, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&e->hash, 0, __ATOMIC_RELAXED);
            release(e, s);
        }
    }
}

void mirror_usage_tiers(struct mirror *m, uint64_t entries[MIRROR_NTIERS],
                        uint64_t *bytes)
{
    struct mirror_entry *e;
    uint64_t b = 0;
    uint32_t i;
    unsigned t;

    for (t = 0; t < MIRROR_TIERS; t++) {
        entries[t] = 0;
        for (i = 0; m && m->tier[t].base && i < m->tier[t].nslots; i++) {
            e = (void *)(m->tier[t].base + (size_t)i * m->tier[t].size);
            if (__atomic_load_n(&e->blob_len, __ATOMIC_RELAXED) == 0)
                continue;
            entries[t]++;
            b += __atomic_load_n(&e->klen, __ATOMIC_RELAXED) +
                 (uint64_t)__atomic_load_n(&e->vlen, __ATOMIC_RELAXED);
        }
    }
    *bytes = b;
}

void mirror_usage(struct mirror *m, uint64_t *entries, uint64_t *bytes)
{
    uint64_t n[MIRROR_TIERS];
    unsigned t;

    mirror_usage_tiers(m, n, bytes);
    *entries = 0;
    for (t = 0; t < MIRROR_TIERS; t++)
        *entries += n[t];
}

/* ---- load, attach, counters ------------------------------------------------
 */

/* The one place the interface MTU is read (the glue caps replies by it). */
int mirror_if_mtu(const char *ifname)
{
    struct ifreq ifr;
    int fd, mtu = -1;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
        mtu = ifr.ifr_mtu;
    close(fd);
    return mtu;
}

#ifdef MDC_XDP

static const uint32_t tier_size[MIRROR_TIERS] = {MIRROR_SLOT0, MIRROR_SLOT1,
                                                 MIRROR_SLOT2};
static const uint32_t tier_default[MIRROR_TIERS] = {32768, 8192, 2048};
/* Tier 0's dense front by default: 2048 slots (256 KiB, 64 pages), when
 * the tier has at least four times as many (a smaller one is dense). */
#define HOT_DEFAULT 2048u

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v && p < (1u << 24))
        p <<= 1;
    return p;
}

/* Open libbpf once (never closed: the mirror's maps and program outlive
 * any one caller).  0, or -ENOTSUP with the loader's message. */
static int libbpf_open(char *err, size_t errlen)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static bool done;
    void *h;
    size_t i;
    int rc = 0;

    pthread_mutex_lock(&mu);
    if (done)
        goto out;
    h = dlopen(MDC_LIBBPF_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(err, errlen, "XDP needs libbpf (%s): %s", MDC_LIBBPF_SONAME,
                 dlerror());
        rc = -ENOTSUP;
        goto out;
    }
    for (i = 0; rc == 0 && i < sizeof(lb_syms) / sizeof(lb_syms[0]); i++) {
        void *f = dlsym(h, lb_syms[i].name);

        if (f == NULL) {
            snprintf(err, errlen, "XDP: %s has no %s", MDC_LIBBPF_SONAME,
                     lb_syms[i].name);
            rc = -ENOTSUP;
        }
        memcpy((char *)&lb + lb_syms[i].off, &f, sizeof(f));
    }
    if (rc < 0) {
        memset(&lb, 0, sizeof(lb));
        dlclose(h);
        goto out;
    }
    done = true;
out:
    pthread_mutex_unlock(&mu);
    return rc;
}

static int attach(struct mirror *m, int ifindex, enum mirror_mode mode,
                  const char *ifname, char *err, size_t errlen)
{
    int prog = bpf_program__fd(m->skel->progs.mdc_xdp), fd = -1;

    if (mode == MIRROR_MODE_AUTO || mode == MIRROR_MODE_NATIVE) {
        LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_DRV_MODE);
        fd = bpf_link_create(prog, ifindex, BPF_XDP, &o);
        if (fd >= 0) {
            m->mode = "native";
        } else if (mode == MIRROR_MODE_NATIVE || errno == EBUSY) {
            goto fail;
        }
    }
    if (fd < 0) {
        LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_SKB_MODE);
        fd = bpf_link_create(prog, ifindex, BPF_XDP, &o);
        if (fd < 0)
            goto fail;
        m->mode = "generic";
    }
    m->link_fd = fd;
    return 0;
fail:
    fd = -errno;
    if (fd == -EBUSY || fd == -EEXIST)
        snprintf(err, errlen, "%s already has an XDP program attached", ifname);
    else if (fd == -EPERM)
        snprintf(err, errlen, "attaching XDP to %s needs root", ifname);
    else
        snprintf(err, errlen, "attaching XDP (%s mode) to %s: %s",
                 mode == MIRROR_MODE_NATIVE ? "native" : "generic", ifname,
                 strerror(-fd));
    return fd;
}

int mirror_setup(const struct mirror_config *cfg, struct mirror **out, char *err,
                size_t errlen)
{
    struct mirror *m;
    struct bpf_map *maps[MIRROR_TIERS];
    struct bpf_prog_info info;
    __u32 ilen = sizeof(info);
    int ifindex = 0, mtu, rc;
    unsigned t;
    size_t i;

    *out = NULL;
    if (!cfg || cfg->naddrs < 1 || cfg->naddrs > MIRROR_MAX_ADDRS ||
        !cfg->addrs || cfg->port == 0) {
        snprintf(err, errlen, "XDP needs a UDP port and 1..%u addresses",
                 MIRROR_MAX_ADDRS);
        return -EINVAL;
    }
    if (cfg->mode != MIRROR_MODE_NONE) {
        if (!cfg->ifname || !(ifindex = (int)if_nametoindex(cfg->ifname))) {
            snprintf(err, errlen, "no interface '%s'",
                     cfg->ifname ? cfg->ifname : "");
            return -ENODEV;
        }
    }
    rc = libbpf_open(err, errlen);
    if (rc < 0)
        return rc;
    m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    m->link_fd = -1;
    m->mode = "none";
    if (getrandom(&m->seed, sizeof(m->seed), 0) != sizeof(m->seed))
        m->seed = 0x6d6463616368656dULL;
    mtu = cfg->mtu ? (int)cfg->mtu
                   : (cfg->ifname && cfg->mode != MIRROR_MODE_NONE
                          ? mirror_if_mtu(cfg->ifname)
                          : 1500);
    if (mtu < 576)
        mtu = 1500;
    m->max_blob = (uint32_t)mtu - 20 - 8 - MIRROR_FRAME_HDR;
    if (m->max_blob > MIRROR_BLOB_MAX)
        m->max_blob = MIRROR_BLOB_MAX;

    m->skel = mdc_xdp__open();
    if (!m->skel) {
        rc = -errno;
        snprintf(err, errlen, "opening the XDP object: %s", strerror(-rc));
        goto fail;
    }
    maps[0] = m->skel->maps.mirror_t0;
    maps[1] = m->skel->maps.mirror_t1;
    maps[2] = m->skel->maps.mirror_t2;
    for (i = 0; i < cfg->naddrs; i++)
        m->skel->rodata->mdc_cfg.addrs[i] = cfg->addrs[i].s_addr;
    m->skel->rodata->mdc_cfg.naddrs = (__u32)cfg->naddrs;
    m->skel->rodata->mdc_cfg.port = htons(cfg->port);
    m->skel->rodata->mdc_cfg.flags =
        (cfg->flags & MIRROR_F_HEAD_ONLY) ? MIRROR_CFG_HEAD_ONLY : 0;
    m->skel->rodata->mdc_cfg.max_pkt = MIRROR_REPLY_HDRS + m->max_blob;
    m->skel->rodata->mdc_cfg.seed = m->seed;
    for (t = 0; t < MIRROR_TIERS; t++) {
        uint32_t n =
            pow2_at_least(cfg->slots[t] ? cfg->slots[t] : tier_default[t]);
        uint32_t hot = 0;

        if (t == 0 && cfg->slots_hot == 0)
            hot = n >= 4 * HOT_DEFAULT ? HOT_DEFAULT : 0;
        else if (t == 0 && cfg->slots_hot != MIRROR_HOT_NONE)
            hot = pow2_at_least(cfg->slots_hot < 2 ? 2 : cfg->slots_hot);
        m->tier[t].mask = n - 1;
        m->tier[t].size = tier_size[t];
        m->tier[t].hot = hot;
        m->tier[t].nslots = hot + n;
        m->skel->rodata->mdc_cfg.mask[t] = n - 1;
        if (t == 0) {
            m->skel->rodata->mdc_cfg.hot_slots = hot;
            m->skel->rodata->mdc_cfg.hot_mask = hot ? hot - 1 : 0;
        }
        bpf_map__set_max_entries(maps[t], hot + n);
    }
    rc = mdc_xdp__load(m->skel);
    if (rc) {
        rc = rc < 0 ? rc : -errno;
        snprintf(err, errlen, "loading the XDP program: %s%s", strerror(-rc),
                 rc == -EPERM ? " (needs root: CAP_BPF, CAP_NET_ADMIN)" : "");
        goto fail;
    }
    memset(&info, 0, sizeof(info));
    if (bpf_obj_get_info_by_fd(bpf_program__fd(m->skel->progs.mdc_xdp), &info,
                               &ilen) == 0)
        m->verified_insns = info.verified_insns;
    for (t = 0; t < MIRROR_TIERS; t++) {
        size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        size_t len = (size_t)m->tier[t].nslots * m->tier[t].size;
        void *p;

        len = (len + pg - 1) / pg * pg;
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
                 bpf_map__fd(maps[t]), 0);
        if (p == MAP_FAILED) {
            rc = -errno;
            snprintf(err, errlen, "mapping the mirror: %s", strerror(-rc));
            goto fail;
        }
        m->tier[t].base = p;
        m->tier[t].bytes = len;
    }
    if (cfg->mode != MIRROR_MODE_NONE) {
        rc = attach(m, ifindex, cfg->mode, cfg->ifname, err, errlen);
        if (rc)
            goto fail;
    }
    *out = m;
    return 0;
fail:
    mirror_teardown(m);
    return rc;
}

void mirror_teardown(struct mirror *m)
{
    unsigned t;

    if (!m)
        return;
    if (m->link_fd >= 0)
        close(m->link_fd); /* the link's last reference: detaches */
    for (t = 0; t < MIRROR_TIERS; t++) {
        if (m->tier[t].base)
            munmap(m->tier[t].base, m->tier[t].bytes);
    }
    mdc_xdp__destroy(m->skel);
    free(m);
}

int mirror_prog_fd(const struct mirror *m)
{
    return m ? bpf_program__fd(m->skel->progs.mdc_xdp) : -1;
}

int mirror_stats(struct mirror *m, struct mirror_stats *out)
{
    struct mirror_percpu *v;
    int ncpu, c, rc = 0;
    __u32 zero = 0;
    unsigned i, t;

    memset(out, 0, sizeof(*out));
    if (!m)
        return -ENOENT;
    ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0)
        return -EINVAL;
    v = calloc((size_t)ncpu, sizeof(*v));
    if (!v)
        return -ENOMEM;
    /* the counters share their per-CPU value with the program's scratch */
    if (bpf_map_lookup_elem(bpf_map__fd(m->skel->maps.mirror_percpu), &zero,
                            v) == 0) {
        for (c = 0; c < ncpu; c++)
            for (i = 0; i < MC__COUNT; i++)
                out->xdp[i] += v[c].cnt.c[i];
    } else {
        rc = -errno;
    }
    free(v);
    out->fills = __atomic_load_n(&m->fills, __ATOMIC_RELAXED);
    out->fill_busy = __atomic_load_n(&m->fill_busy, __ATOMIC_RELAXED);
    out->fill_rejected = __atomic_load_n(&m->fill_rejected, __ATOMIC_RELAXED);
    out->invalidations = __atomic_load_n(&m->invalidations, __ATOMIC_RELAXED);
    for (t = 0; t < MIRROR_TIERS; t++) {
        out->slots[t] = m->tier[t].mask + 1;
        out->slots_hot += m->tier[t].hot;
        out->slot_size[t] = m->tier[t].size;
        out->mem_bytes += m->tier[t].bytes;
    }
    out->verified_insns = m->verified_insns;
    out->mode = m->mode;
    return rc;
}

#else /* !MDC_XDP */

int mirror_setup(const struct mirror_config *cfg, struct mirror **out, char *err,
                size_t errlen)
{
    (void)cfg;
    *out = NULL;
    snprintf(err, errlen, "XDP support not built (configure --enable-xdp)");
    return -ENOTSUP;
}

void mirror_teardown(struct mirror *m)
{
    (void)m;
}

int mirror_prog_fd(const struct mirror *m)
{
    (void)m;
    return -1;
}

int mirror_stats(struct mirror *m, struct mirror_stats *out)
{
    (void)m;
    memset(out, 0, sizeof(*out));
    return -ENOENT;
}

#endif /* MDC_XDP */
