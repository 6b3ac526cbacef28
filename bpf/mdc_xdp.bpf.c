/*
 * mdc_xdp.bpf.c - mdcached's XDP fast path: answers memcached UDP
 * "get <key>\r\n" from the mirror (bpf/mirror_layout.h) before the network
 * stack, and passes everything else untouched.  docs/xdp.md.
 *
 * Answered: Ethernet + IPv4 (no options, not fragmented, valid header
 * checksum) + UDP to the configured port and one of the configured addresses
 * + an 8-byte frame header (sequence 0, 1 datagram, reserved 0) + exactly
 * "get <key>\r\n" with a key of 1..250 bytes in 0x21..0x7e, mirrored and not
 * expired.  The reply replaces the request in place: MACs, addresses and
 * ports swapped, lengths and both checksums computed, the same request id.
 *
 * Reading an entry (docs/xdp.md, "The consistency contract"):
 *   seq1 = entry.seq; check hash; odd -> conflict; read the header fields;
 *   copy the blob into per-CPU scratch; seq2 = entry.seq; seq2 != seq1 ->
 *   conflict; then compare the full key in the copy and check the deadline.
 * The loads are ordered on x86-64 (TSO) by program order; elsewhere the two
 * sequence reads are full-barrier atomics.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "mirror_layout.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile struct mirror_cfg mdc_cfg = {};

#define TIER_MAP(name, size)                                                   \
    struct {                                                                   \
        __uint(type, BPF_MAP_TYPE_ARRAY);                                      \
        __uint(map_flags, BPF_F_MMAPABLE);                                     \
        __uint(max_entries, 1);                                                \
        __uint(key_size, sizeof(__u32));                                       \
        __uint(value_size, size);                                              \
    } name SEC(".maps")

TIER_MAP(mirror_t0, MIRROR_SLOT0);
TIER_MAP(mirror_t1, MIRROR_SLOT1);
TIER_MAP(mirror_t2, MIRROR_SLOT2);

/* counters and scratch in one value: one lookup a packet for both */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct mirror_percpu);
} mirror_percpu SEC(".maps");

#if defined(__TARGET_ARCH_x86)
#define SEQ_READ(p) (*(volatile __u32 *)(p))
#else
#define SEQ_READ(p) __sync_fetch_and_add((__u32 *)(p), 0)
#endif
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
/*
 * clang's BPF backend splits a load or store it knows to be misaligned into
 * byte operations (a copy of 12 words to an odd offset became 264
 * instructions).  x86-64 has efficient unaligned access, so the verifier
 * allows it on map values and packets: hiding a pointer's origin makes clang
 * assume the type's alignment and emit one instruction.  Elsewhere the
 * pointer keeps its known alignment and the byte operations stay.
 */
#if defined(__TARGET_ARCH_x86)
#define UNALIGNED_OK(p) barrier_var(p)
#else
#define UNALIGNED_OK(p) ((void)0)
#endif
/* Head growth that fits the 256-byte XDP headroom less struct xdp_frame. */
#define HEAD_PART 192

static __always_inline int count(struct mirror_counters *cnt, int c)
{
    cnt->c[c]++;
    return XDP_PASS;
}

static __always_inline struct mirror_scratch *scratch(void)
{
    struct mirror_percpu *v;
    __u32 zero = 0;

    v = bpf_map_lookup_elem(&mirror_percpu, &zero);
    return v ? &v->s : NULL;
}

/* ---- key scan: validate bytes and hash, a word at a time --------------- */
struct scan_ctx {
    __u64 hash;
    __u64 lastmask;
    __u32 nwords;
    __u32 bad; /* 1: bad byte, 2: space (several keys) */
};

static __always_inline long scan_one(struct mirror_scratch *s,
                                     struct scan_ctx *c, __u32 i)
{
    __u64 w, chk;

    w = s->key[i];
    if (i + 1 == c->nwords) {
        /* bytes past the key become 'A' for the check, 0 for the hash */
        chk = w | (~c->lastmask & (MIRROR_ONES * 'A'));
        w &= c->lastmask;
    } else {
        chk = w;
    }
    if (mirror_word_has_space(chk)) {
        c->bad = 2;
        return 1;
    }
    if (mirror_word_bad(chk)) {
        c->bad = 1;
        return 1;
    }
    c->hash = mirror_hash_word(c->hash, w);
    return 0;
}

static long scan_word(__u32 i, void *arg)
{
    struct scan_ctx *c = arg;
    struct mirror_scratch *s = scratch();

    barrier_var(i);
    if (!s || i >= MIRROR_KEY_WORDS) {
        c->bad = 1;
        return 1;
    }
    return scan_one(s, c, i);
}

/* ---- full key compare: request key vs the key inside the copied blob --- */
struct cmp_ctx {
    __u64 lastmask;
    __u32 nwords;
    __u32 differ;
};

static __always_inline long cmp_one(struct mirror_scratch *s, struct cmp_ctx *c,
                                    __u32 i)
{
    __u64 a, b;

    a = s->key[i];
    b = ((__u64 *)&s->pkt[MIRROR_REPLY_KEY_OFF])[i];
    if (i + 1 == c->nwords) {
        a &= c->lastmask;
        b &= c->lastmask;
    }
    if (a != b) {
        c->differ = 1;
        return 1;
    }
    return 0;
}

static long cmp_word(__u32 i, void *arg)
{
    struct cmp_ctx *c = arg;
    struct mirror_scratch *s = scratch();

    barrier_var(i);
    if (!s || i >= MIRROR_KEY_WORDS) {
        c->differ = 1;
        return 1;
    }
    return cmp_one(s, c, i);
}

/*
 * Keys of up to INLINE_WORDS words are scanned and compared inline; longer
 * ones through bpf_loop.  Calls are what a hit mostly pays for on CPUs whose
 * returns go through a mitigation thunk (SRSO "safe RET", retpolines).
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define INLINE_WORDS 4
#else
#define INLINE_WORDS 0 /* the packet reads below assume little-endian */
#endif
/* Replies up to this size are written inline (tier-0 entries). */
#define SMALL_REPLY (MIRROR_REPLY_HDRS + MIRROR_SLOT0 - MIRROR_HDR_SIZE)

/* ---- reading one tier's slot under its seqlock ------------------------- */
enum { R_MISS, R_FOUND, R_CONFLICT };

struct found {
    __u64 deadline;
    __u32 csum;
    __u32 blob_len;
};

static __always_inline int tier_read(void *map, __u32 slot_size, __u32 pos,
                                     __u64 h, __u32 klen,
                                     struct mirror_scratch *s, struct found *f)
{
    struct bpf_dynptr dp;
    struct mirror_entry *e;
    __u32 seq1, blen;

    /* the hash selects the slot: its lines are the only ones read */
    e = bpf_map_lookup_elem(map, &pos);
    if (!e)
        return R_MISS;
    seq1 = SEQ_READ(&e->seq);
    barrier(); /* everything below is read after the first sequence read */
    if (READ_ONCE(e->hash) != h)
        return R_MISS;
    if (seq1 & 1)
        return R_CONFLICT;
    blen = READ_ONCE(e->blob_len);
    if (READ_ONCE(e->klen) != klen)
        return R_MISS;
    f->csum = READ_ONCE(e->csum);
    f->deadline = READ_ONCE(e->deadline_ns);
    /* only a torn read can look like this (an emptied slot's hash is 0,
     * never a key's: an empty one matched nothing above) */
    if (blen > slot_size - MIRROR_HDR_SIZE || blen < 6 + klen)
        return R_CONFLICT;
    f->blob_len = blen;
    if (slot_size == MIRROR_SLOT0) {
        /* a small slot is copied whole, inline: no helper call */
        __u64 *src = (__u64 *)e->blob;
        __u64 *dst = (__u64 *)&s->pkt[MIRROR_REPLY_HDRS];
        int i;

        UNALIGNED_OK(dst); /* offset 50: one store per word, not eight */
#pragma unroll
        for (i = 0; i < (MIRROR_SLOT0 - MIRROR_HDR_SIZE) / 8; i++)
            dst[i] = src[i];
    } else {
        if (bpf_dynptr_from_mem(e, slot_size, 0, &dp))
            return R_CONFLICT;
        if (bpf_dynptr_read(&s->pkt[MIRROR_REPLY_HDRS], blen, &dp,
                            MIRROR_HDR_SIZE, 0))
            return R_CONFLICT;
    }
    barrier(); /* the copy happens before the second sequence read */
    if (SEQ_READ(&e->seq) != seq1)
        return R_CONFLICT;
    return R_FOUND;
}

static __always_inline __u32 csum_fold(__u64 sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (__u32)sum;
}

/* A ones'-complement sum taken over 32-bit words folds to the same 16 bits
 * as one over their 16-bit halves: half the loads. */
static __always_inline __u64 sum32(const void *p, int nwords)
{
    const __u32 *w = p;
    __u64 sum = 0;
    int i;

#pragma unroll
    for (i = 0; i < nwords; i++)
        sum += w[i];
    return sum;
}

/* The IPv4 header checksum over 20 bytes: 0 when valid. */
static __always_inline __u32 ip_csum20(const void *ip)
{
    return (~csum_fold(sum32(ip, 5))) & 0xffff;
}

/*
 * The steps of one request, in the manner of xdp-tools' parsing helpers:
 * each is a small always-inline function that returns GO to carry on, or
 * the counter (MC_*) that says why the packet is passed.
 *
 *   parse          Ethernet, IPv4, UDP, memcached frame, "get <key>\r\n";
 *                  the key goes to scratch
 *   match          validate and hash the key, read the mirror under its
 *                  seqlock, compare the full key, check the deadline
 *   build_headers  the reply's Ethernet, IPv4 and UDP headers in scratch
 *   resize         grow or shrink the frame to the reply's length
 *   write_reply    copy scratch over the frame
 *
 * The request's bytes stay untouched until resize: every earlier step only
 * reads the packet.
 */
#define GO (-1)

/* What parse found (the packet pointers are used within parse only). */
struct req {
    struct ethhdr *eth;
    struct iphdr *ip;
    struct udphdr *udp;
    __u8 *frame;
    __u32 plen;   /* UDP payload bytes */
    __u32 klen;   /* key bytes */
    __u32 nwords; /* key words of 8 bytes */
    __u64 addr_sum;  /* the request's two addresses, as two 32-bit words */
    __u32 port_pair; /* its two ports, as one 32-bit word */
    __u64 lastmask;  /* the key's bytes in its last word */
    __u64 hash;      /* a short key's hash, not finalised (parse_key);
                        a long key's initial value */
};

/* ---- parse -------------------------------------------------------------- */
static __always_inline int parse_ipv4(void *data, void *data_end,
                                      struct req *q)
{
    struct ethhdr *eth = data;
    struct iphdr *ip;
    __u32 i, naddr;
    int found_addr = 0;

    if ((void *)(eth + 1) > data_end)
        return MC_MALFORMED;
    if (eth->h_proto != bpf_htons(ETH_P_IP))
        return MC_NOT_IPV4;
    ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > data_end)
        return MC_MALFORMED;
    if (ip->version != 4 || ip->ihl < 5)
        return MC_MALFORMED;
    if (ip->ihl != 5)
        return MC_IP_OPTIONS;
    if (ip->frag_off & bpf_htons(0x3fff)) /* MF or an offset */
        return MC_FRAGMENT;
    if (ip->protocol != IPPROTO_UDP)
        return MC_NOT_UDP;
    naddr = mdc_cfg.naddrs;
#pragma unroll
    for (i = 0; i < MIRROR_MAX_ADDRS; i++)
        if (i < naddr && ip->daddr == mdc_cfg.addrs[i])
            found_addr = 1;
    if (!found_addr)
        return MC_ADDR;
    q->eth = eth;
    q->ip = ip;
    return GO;
}

static __always_inline int parse_udp(void *data_end, struct req *q)
{
    struct iphdr *ip = q->ip;
    struct udphdr *udp = (void *)(ip + 1);
    __u32 tot;

    if ((void *)(udp + 1) > data_end)
        return MC_MALFORMED;
    if (udp->dest != mdc_cfg.port)
        return MC_PORT;
    tot = bpf_ntohs(ip->tot_len);
    if (tot < sizeof(*ip) + sizeof(*udp) || (void *)ip + tot > data_end ||
        bpf_ntohs(udp->len) != tot - sizeof(*ip))
        return MC_MALFORMED;
    if (ip_csum20(ip) != 0)
        return MC_MALFORMED;
    q->udp = udp;
    q->plen = tot - sizeof(*ip) - sizeof(*udp);
    return GO;
}

/* The memcached UDP frame header (id, sequence 0, 1 datagram, reserved 0)
 * and "get ": the key's length. */
static __always_inline int parse_frame(void *data_end, struct req *q)
{
    __u8 *frame = (void *)(q->udp + 1), *cmd;
    __u32 plen = q->plen, klen;

    if (plen < MIRROR_FRAME_HDR ||
        (void *)(frame + MIRROR_FRAME_HDR) > data_end)
        return MC_FRAME;
    UNALIGNED_OK(frame); /* words, not bytes */
    /* sequence 0, 1 datagram, reserved 0: bytes 2..7 = 00 00 00 01 00 00 */
    if (*(__u16 *)&frame[2] |
        (*(__u32 *)&frame[4] ^ bpf_htonl(0x00010000)))
        return MC_FRAME;
    cmd = frame + MIRROR_FRAME_HDR;
    if (plen < MIRROR_FRAME_HDR + 4 + 1 + 2 || (void *)(cmd + 4) > data_end)
        return MC_CMD;
    if (*(__u32 *)cmd != bpf_htonl(0x67657420)) /* "get " */
        return MC_CMD;
    klen = plen - MIRROR_FRAME_HDR - 4 - 2;
    if (klen > MIRROR_KEY_MAX)
        return MC_KEY;
    barrier_var(klen); /* clang must not recompute it from plen */
    q->frame = frame;
    q->klen = klen;
    q->nwords = (klen + 7) / 8;
    return GO;
}

/* The key, word-aligned, into scratch, and its "\r\n" checked. */
static __always_inline int parse_key(struct xdp_md *ctx, void *data_end,
                                     struct req *q, struct mirror_scratch *s)
{
    __u8 *cmd = q->frame + MIRROR_FRAME_HDR;
    __u32 klen = q->klen, i;
    __u64 h;

    q->lastmask = mirror_word_mask(klen - (q->nwords - 1) * 8);
    /* set on both paths: the verifier cannot tell that match() takes the
     * same one */
    h = mirror_hash_init(mdc_cfg.seed, klen);
    if (q->nwords <= INLINE_WORDS) {
        /* short key: read straight from the packet.  The datagram's last
         * 8 bytes hold "\r\n" and the key's last 1..6 bytes. */
        __u8 *tail = cmd + klen - 2;
        __u64 wend, w;

        if ((void *)(tail + 8) > data_end)
            return MC_MALFORMED;
        wend = *(__u64 *)tail;
        if ((wend >> 48) != ('\r' | '\n' << 8))
            return MC_CMD;
        /* hashed as they are read, the last word masked to the key */
        for (i = 0; i < INLINE_WORDS; i++) {
            __u32 r = klen - i * 8; /* key bytes from word i on */
            __u8 *p = cmd + 4 + i * 8;

            if (i >= q->nwords)
                break;
            if (r >= 6) {
                if ((void *)(p + 8) > data_end)
                    return MC_MALFORMED;
                w = *(__u64 *)p;
            } else {
                w = wend >> (8 * (6 - r));
            }
            if (i + 1 == q->nwords)
                w &= q->lastmask;
            s->key[i] = w;
            h = mirror_hash_word(h, w);
        }
    } else {
        /* the key and its "\r\n" into word-aligned scratch */
        __u8 *k = (__u8 *)s->key;

        if (bpf_xdp_load_bytes(ctx, MIRROR_REPLY_HDRS + 4, s->key, klen + 2))
            return MC_MALFORMED;
        if (k[klen & 0xff] != '\r' || k[(klen + 1) & 0x1ff] != '\n')
            return MC_CMD;
    }
    q->hash = h;
    return GO;
}

static __always_inline int parse(struct xdp_md *ctx, struct mirror_scratch *s,
                                 struct req *q)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    int c;

    if ((c = parse_ipv4(data, data_end, q)) != GO)
        return c;
    if ((c = parse_udp(data_end, q)) != GO)
        return c;
    if ((c = parse_frame(data_end, q)) != GO)
        return c;
    if ((c = parse_key(ctx, data_end, q, s)) != GO)
        return c;
    /* what the reply takes from the request goes to scratch now, swapped
     * (the blob lands after it): MACs, addresses, ports, request id; and
     * the sums the checksums need (a sum does not depend on the order of
     * its terms, so the request's words serve for the reply's) */
    {
        __u8 *e = (__u8 *)q->eth, *o = s->pkt;
        __u32 sa = q->ip->saddr, da = q->ip->daddr, pp;

        UNALIGNED_OK(e);
        UNALIGNED_OK(o);
        *(__u32 *)&o[0] = *(__u32 *)&e[6]; /* destination MAC: the sender */
        *(__u16 *)&o[4] = *(__u16 *)&e[10];
        *(__u16 *)&o[6] = *(__u16 *)&e[0]; /* source MAC: ours */
        *(__u32 *)&o[8] = *(__u32 *)&e[2];
        *(__u32 *)&o[26] = da;
        *(__u32 *)&o[30] = sa;
        pp = *(__u32 *)q->udp; /* source port, destination port */
        *(__u32 *)&o[34] = (pp >> 16) | (pp << 16);
        *(__u16 *)&o[42] = *(__u16 *)q->frame; /* request id */
        q->addr_sum = (__u64)sa + da;
        q->port_pair = pp;
    }
    return GO;
}

/* ---- match -------------------------------------------------------------- */
/* Why a short key that was only hashed is not answered: its bytes decide
 * between 'reason' and a bad key (MC_KEY) or several keys (MC_CMD). */
static __always_inline int unanswered(struct mirror_scratch *s,
                                      struct scan_ctx *sc, int checked,
                                      int reason)
{
    __u32 i;

    if (!checked) {
        for (i = 0; i < INLINE_WORDS; i++)
            if (i >= sc->nwords || scan_one(s, sc, i))
                break;
        if (sc->bad)
            return sc->bad == 2 ? MC_CMD : MC_KEY;
    }
    return reason;
}

static __always_inline int match(struct mirror_scratch *s, const struct req *q,
                                 struct found *f)
{
    struct scan_ctx sc;
    struct cmp_ctx cc;
    __u32 i, rc;
    int checked;

    /* hash the key.  A short key's bytes are checked only if it is not
     * answered: one found equal to a mirrored key is valid, since the
     * mirror holds only keys of 0x21..0x7e (mirror_fill() refuses others),
     * so the check is off the hit path; the counters come out the same. */
    sc.nwords = q->nwords;
    sc.lastmask = q->lastmask;
    sc.bad = 0;
    sc.hash = q->hash; /* a short key hashed by parse_key, a long one not */
    if (sc.nwords <= INLINE_WORDS) {
        checked = 0;
    } else {
        bpf_loop(sc.nwords, scan_word, &sc, 0);
        if (sc.bad)
            return sc.bad == 2 ? MC_CMD : MC_KEY;
        checked = 1;
    }
    sc.hash = mirror_hash_final(sc.hash);

    /* look the key up: tier 0's dense front, then its hashed slot, then
     * the other tiers (a fill leaves it in one place; a duplicate another
     * fill of the same record may leave for a moment holds the same) */
    rc = R_MISS;
    if (mdc_cfg.hot_slots) { /* .rodata: the verifier drops it without */
        __u32 p1 = mirror_hot_pos(sc.hash, mdc_cfg.hot_mask);

        rc = tier_read(&mirror_t0, MIRROR_SLOT0, p1, sc.hash, q->klen, s, f);
        if (rc == R_MISS)
            rc = tier_read(&mirror_t0, MIRROR_SLOT0,
                           mirror_hot_pos2(p1, sc.hash, mdc_cfg.hot_mask),
                           sc.hash, q->klen, s, f);
    }
    if (rc == R_MISS)
        rc = tier_read(&mirror_t0, MIRROR_SLOT0,
                       mirror_cold_pos(sc.hash, mdc_cfg.hot_slots,
                                       mdc_cfg.mask[0]),
                       sc.hash, q->klen, s, f);
    if (rc == R_MISS)
        rc = tier_read(&mirror_t1, MIRROR_SLOT1,
                       (__u32)sc.hash & mdc_cfg.mask[1], sc.hash, q->klen, s,
                       f);
    if (rc == R_MISS)
        rc = tier_read(&mirror_t2, MIRROR_SLOT2,
                       (__u32)sc.hash & mdc_cfg.mask[2], sc.hash, q->klen, s,
                       f);
    if (rc == R_FOUND) {
        /* the copy is consistent: now the full key, then the deadline */
        cc.nwords = sc.nwords;
        cc.lastmask = sc.lastmask;
        cc.differ = 0;
        if (cc.nwords <= INLINE_WORDS) {
            for (i = 0; i < INLINE_WORDS; i++)
                if (i >= cc.nwords || cmp_one(s, &cc, i))
                    break;
        } else {
            bpf_loop(cc.nwords, cmp_word, &cc, 0);
        }
        if (!cc.differ)
            goto found;
        rc = R_MISS;
    }
    /* one place for the check of the bytes: one copy of its code */
    return unanswered(s, &sc, checked, rc == R_MISS ? MC_MISS : MC_CONFLICT);
found:
    if (f->deadline && bpf_ktime_get_ns() >= f->deadline)
        return MC_EXPIRED;
    return GO;
}

/* ---- build headers ------------------------------------------------------ */
/* IPv4, UDP and the frame header of the reply into scratch (parse put the
 * MACs and request id there), in front of the blob that match copied;
 * *rlen = the reply's length. */
static __always_inline int build_headers(struct mirror_scratch *s,
                                         const struct req *q,
                                         const struct found *f, __u32 *rlen)
{
    __u8 *o = s->pkt;
    __u32 len, ulen_n, check;
    __u64 sum;

    len = MIRROR_REPLY_HDRS + f->blob_len;
    if (len > mdc_cfg.max_pkt || len > MIRROR_PKT_MAX)
        return MC_TOO_BIG;
    UNALIGNED_OK(o);

    /* IPv4: 45 00 <tot_len> 00 00 40 00 (DF) 40 11 (TTL 64, UDP) <check>
     * <saddr> <daddr>; the addresses are in place (parse).  Sums are of
     * native-order words, as loads of the bytes would give. */
    sum = q->addr_sum + bpf_htons(0x4500) + bpf_htons(len - MIRROR_L2_HDRS) +
          bpf_htons(0x4000) + bpf_htons(0x4011);
    *(__u16 *)&o[12] = bpf_htons(ETH_P_IP);
    *(__u16 *)&o[14] = bpf_htons(0x4500);
    *(__u16 *)&o[16] = bpf_htons(len - MIRROR_L2_HDRS);
    *(__u32 *)&o[18] = bpf_htonl(0x00004000);
    *(__u16 *)&o[22] = bpf_htons(0x4011);
    *(__u16 *)&o[24] = ~csum_fold(sum) & 0xffff;

    /* UDP: the ports are in place; checksum = pseudo header (addresses,
     * protocol, length) + header (ports, length) + frame header (request
     * id, 00 00 00 01 00 00) + the blob's sum from the mirror */
    ulen_n = bpf_htons(len - MIRROR_L2_HDRS - 20);
    sum = q->addr_sum + bpf_htons(IPPROTO_UDP) + 2 * ulen_n + q->port_pair +
          *(__u16 *)&o[42] + bpf_htons(1) + f->csum;
    check = ~csum_fold(sum) & 0xffff;
    if (check == 0)
        check = 0xffff;
    *(__u16 *)&o[38] = ulen_n;
    *(__u16 *)&o[40] = check;
    *(__u32 *)&o[44] = bpf_htonl(1); /* sequence 0, 1 datagram */
    *(__u16 *)&o[48] = 0;            /* reserved */
    *rlen = len;
    return GO;
}

/* ---- resize ------------------------------------------------------------- */
/* Make room: at the head first - the whole frame is rewritten anyway, every
 * XDP driver leaves 256 bytes of headroom, and native veth often refuses
 * tail growth, so one helper call does it; else at the tail; else both, the
 * head by HEAD_PART.  The packet is left as it came (a head move undone) if
 * nothing fits. */
static __always_inline int resize(struct xdp_md *ctx, __u32 rlen,
                                  struct mirror_counters *cnt)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    __u32 cur = (__u32)(data_end - data);
    int delta = (int)rlen - (int)cur;

    if (delta > 0 && bpf_xdp_adjust_head(ctx, -delta) == 0) {
        cnt->c[MC_GROW_HEAD]++;
        return GO;
    }
    if (delta == 0)
        return GO;
    if (delta < 0 || !(mdc_cfg.flags & MIRROR_CFG_HEAD_ONLY)) {
        if (bpf_xdp_adjust_tail(ctx, delta) == 0)
            return GO;
        if (delta < 0)
            return MC_NO_ROOM;
    }
    if (delta <= HEAD_PART || (mdc_cfg.flags & MIRROR_CFG_HEAD_ONLY) ||
        bpf_xdp_adjust_head(ctx, -HEAD_PART))
        return MC_NO_ROOM;
    if (bpf_xdp_adjust_tail(ctx, delta - HEAD_PART)) {
        bpf_xdp_adjust_head(ctx, HEAD_PART); /* as it came */
        return MC_NO_ROOM;
    }
    cnt->c[MC_GROW_HEAD]++;
    return GO;
}

/* ---- write -------------------------------------------------------------- */
static __always_inline int write_reply(struct xdp_md *ctx,
                                       struct mirror_scratch *s, __u32 rlen)
{
    __u32 i;

    if (rlen < MIRROR_REPLY_HDRS || rlen > MIRROR_PKT_MAX)
        return XDP_ABORTED;
    if (rlen <= SMALL_REPLY) {
        /* a small reply is written with plain stores: no helper call */
        __u8 *data = (void *)(long)ctx->data;
        void *pend = (void *)(long)ctx->data_end;
        __u64 *p = (__u64 *)data;
        __u8 *o = s->pkt;
        __u32 off;

        __u64 *src;

        /* every hit's frame is longer than 64 bytes (50 of headers, at
         * least 20 of blob) and at most SMALL_REPLY (146): its first 64
         * bytes, its bytes 64..127 if it is longer than 128, and its last
         * 64 bytes, overlapping the others - a bound check per 8 words,
         * not per word (the frame is exactly rlen long) */
        if ((void *)(p + 8) > pend)
            return XDP_ABORTED; /* cannot happen: the frame is rlen long */
#pragma unroll
        for (i = 0; i < 8; i++)
            p[i] = s->pktw[i];
        if (rlen > 128) {
            if ((void *)(p + 16) > pend)
                return XDP_ABORTED;
#pragma unroll
            for (i = 8; i < 16; i++)
                p[i] = s->pktw[i];
        }
        off = rlen - 64;
        if (off > SMALL_REPLY - 64)
            return XDP_ABORTED;
        p = (__u64 *)(data + off);
        src = (__u64 *)&o[off];
        UNALIGNED_OK(p);
        UNALIGNED_OK(src);
        if ((void *)(p + 8) > pend)
            return XDP_ABORTED;
#pragma unroll
        for (i = 0; i < 8; i++)
            p[i] = src[i];
    } else if (bpf_xdp_store_bytes(ctx, 0, s->pkt, rlen)) {
        return XDP_ABORTED; /* cannot happen: the frame is rlen long */
    }
    return XDP_TX;
}

SEC("xdp")
int mdc_xdp(struct xdp_md *ctx)
{
    struct mirror_counters *cnt;
    struct mirror_percpu *pc;
    struct mirror_scratch *s;
    struct found f = {};
    struct req q;
    __u32 zero = 0, rlen;
    int c, verdict;

    pc = bpf_map_lookup_elem(&mirror_percpu, &zero);
    if (!pc)
        return XDP_PASS;
    cnt = &pc->cnt;
    s = &pc->s;
    if ((c = parse(ctx, s, &q)) != GO)
        return count(cnt, c);
    if ((c = match(s, &q, &f)) != GO)
        return count(cnt, c);
    if ((c = build_headers(s, &q, &f, &rlen)) != GO)
        return count(cnt, c);
    if ((c = resize(ctx, rlen, cnt)) != GO)
        return count(cnt, c);
    verdict = write_reply(ctx, s, rlen);
    if (verdict == XDP_TX)
        cnt->c[MC_HIT]++;
    return verdict;
}
