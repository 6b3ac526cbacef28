/*
 * mirror_layout.h - the XDP mirror's layout: the one definition shared by the
 * XDP program (bpf/mdc_xdp.bpf.c, compiled for the BPF target) and the server
 * side that writes it (bpf/mirror.c).  docs/xdp.md explains the design.
 *
 * The mirror is MIRROR_TIERS BPF_F_MMAPABLE array maps of fixed-size slots.
 * Tier t has 2^k slots of mirror_slot_size[t] bytes; a record lives in the
 * smallest tier whose slot holds it, in the slot its hash selects:
 * (hash & mask[t]), no index in front of it (tier 0 may have a small dense
 * front of slots before those, below).  The arrays' values start on a
 * page and the slot sizes are multiples of 64, so a slot covers whole cache
 * lines: a tier-0 hit reads the two lines of one 128-byte slot, both
 * addresses known from the hash (no dependent load), header and blob
 * together.  The newest fill of a slot wins; two keys sharing it evict each
 * other (a miss, never a wrong answer).  A slot is a struct mirror_entry
 * header followed by
 * the reply "blob" exactly as the server would send it after the 8-byte
 * memcached UDP frame header:
 *
 *     VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n
 *
 * so the program copies it without formatting anything.  Each entry carries
 * a sequence counter (a seqlock: odd while the server writes it); the server
 * claims a slot by moving the counter from even to odd with a compare-and-swap,
 * so two writers never share a slot.  The program copies the entry into a
 * per-CPU scratch buffer, re-reads the counter and re-checks the full key in
 * the copy; any doubt degrades to XDP_PASS.
 *
 * Every number here is host byte order except where a field says "network".
 */
#ifndef MDC_MIRROR_LAYOUT_H
#define MDC_MIRROR_LAYOUT_H

#include <linux/types.h>

#define MIRROR_KEY_MAX 250u  /* memcached's text-protocol key limit */
#define MIRROR_KEY_WORDS 32u /* 8-byte words covering a key */
#define MIRROR_FRAME_HDR 8u  /* memcached UDP frame header */
#define MIRROR_MAX_ADDRS 8u  /* destination addresses answered */

#define MIRROR_TIERS 3u
#define MIRROR_SLOT0 128u
#define MIRROR_SLOT1 512u
#define MIRROR_SLOT2 1536u

#define MIRROR_HDR_SIZE 32u
#define MIRROR_BLOB_MAX (MIRROR_SLOT2 - MIRROR_HDR_SIZE)

/* Reply frame: Ethernet 14 + IPv4 20 + UDP 8 + frame header 8 + blob. */
#define MIRROR_L2_HDRS 14u
#define MIRROR_REPLY_HDRS 50u
#define MIRROR_PKT_MAX (MIRROR_REPLY_HDRS + MIRROR_BLOB_MAX)
/* In the scratch copy the key of "VALUE <key>" is at this aligned offset. */
#define MIRROR_REPLY_KEY_OFF (MIRROR_REPLY_HDRS + 6u)

/* A slot.  blob_len == 0 means empty. */
struct mirror_entry {
    __u32 seq;      /* seqlock: odd while a writer owns the slot */
    __u16 blob_len; /* bytes of blob[] */
    __u8 klen;      /* key length, 1..MIRROR_KEY_MAX */
    __u8 pad0;
    __u32 csum;        /* ones'-complement sum of blob[], 16-bit, folded,
                          summed as native-order 16-bit loads */
    __u32 vlen;        /* value bytes (statistics only) */
    __u64 hash;        /* mirror_hash() of the key */
    __u64 deadline_ns; /* CLOCK_MONOTONIC expiry; 0 = never */
    __u8 blob[];       /* VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n */
};
_Static_assert(MIRROR_SLOT0 % 64 == 0 && MIRROR_SLOT1 % 64 == 0 &&
                   MIRROR_SLOT2 % 64 == 0,
               "a slot covers whole cache lines");

/* Per-CPU scratch of the program: the reply frame is assembled in pkt[]
 * (8-aligned: the key compare reads it as words). */
_Static_assert(MIRROR_REPLY_KEY_OFF % 8 == 0, "key offset must be aligned");
struct mirror_scratch {
    union {
        __u8 pkt[MIRROR_PKT_MAX + 6];
        __u64 pktw[(MIRROR_PKT_MAX + 6) / 8];
    };
    __u64 key[MIRROR_KEY_WORDS + 1]; /* request key + "\r\n", word aligned */
};

/* Flags of mirror_cfg.flags. */
#define MIRROR_CFG_HEAD_ONLY 1u /* never try tail growth (tests) */

/* Loader-set configuration (the program's .rodata, fixed at load). */
struct mirror_cfg {
    __u32 addrs[MIRROR_MAX_ADDRS]; /* IPv4 destinations answered, network */
    __u32 naddrs;
    __u16 port; /* UDP port, network order */
    __u16 flags;
    __u32 max_pkt;            /* largest reply frame: MTU + 14 */
    __u32 mask[MIRROR_TIERS]; /* slots - 1 per tier */
    __u64 seed;               /* hash seed */
    __u32 hot_slots;          /* tier 0's dense front: 0 or a power of two */
    __u32 hot_mask;           /* hot_slots - 1 (0 without a front) */
};

/*
 * Tier 0's dense front: the map's first hot_slots slots (2 or more), then
 * its mask+1 hashed ones.  A key may sit in either of its two front slots,
 * p1 = (hash >> 32) & hot_mask and p2 (another slot of p1's page), or in
 * its hashed one, hot_slots + (hash & mask): a fill takes the first front
 * slot that is empty or already the key's, else the hashed one (the newest
 * fill wins there); the reader tries them in that order.  The front is a
 * few hundred KiB, so the hot set of a busy server sits in a few dozen
 * pages whatever the tier's size: with half as many keys as front slots,
 * about 92 % of them sit in the front (one choice: about 80 %), the rest
 * in their hashed slots.
 */
#define MIRROR_PAGE_SLOTS0 (4096u / MIRROR_SLOT0)
static inline __u32 mirror_hot_pos(__u64 h, __u32 hot_mask)
{
    return (__u32)(h >> 32) & hot_mask;
}

/* The second front slot: p1 with some of its low bits flipped (the last
 * always), so a different slot of the same 4 KiB page. */
static inline __u32 mirror_hot_pos2(__u32 p1, __u64 h, __u32 hot_mask)
{
    return (p1 ^ (((__u32)(h >> 48) & (MIRROR_PAGE_SLOTS0 - 1)) | 1)) &
           hot_mask;
}

static inline __u32 mirror_cold_pos(__u64 h, __u32 hot_slots, __u32 mask)
{
    return hot_slots + ((__u32)h & mask);
}

/*
 * Per-CPU counters, one table for the program, the library and the docs.
 * Everything but MC_HIT and MC_GROW_HEAD is a reason for XDP_PASS; those two
 * share the first cache line, which is all a hit touches.
 */
#define MIRROR_COUNTERS(X)                                                     \
    X(MC_HIT, "hits")                 /* answered with XDP_TX */               \
    X(MC_GROW_HEAD, "grow_head")      /* of the hits: grown at the head */     \
    X(MC_MISS, "misses")              /* well-formed GET, key not mirrored */  \
    X(MC_EXPIRED, "expired")          /* mirrored but past its deadline */     \
    X(MC_CONFLICT, "conflicts")       /* entry being written under us */       \
    X(MC_NOT_IPV4, "pass_not_ipv4")   /* not Ethernet + IPv4 (ARP, IPv6..) */  \
    X(MC_MALFORMED, "pass_malformed") /* truncated or inconsistent headers */  \
    X(MC_IP_OPTIONS, "pass_ip_options")                                        \
    X(MC_FRAGMENT, "pass_fragment")                                            \
    X(MC_NOT_UDP, "pass_not_udp")                                              \
    X(MC_ADDR, "pass_addr")       /* not to an address we serve */             \
    X(MC_PORT, "pass_port")       /* not to our UDP port */                    \
    X(MC_FRAME, "pass_frame")     /* bad memcached UDP frame header */         \
    X(MC_CMD, "pass_cmd")         /* not a single-key "get" */                 \
    X(MC_KEY, "pass_key")         /* key too long or invalid bytes */          \
    X(MC_TOO_BIG, "pass_too_big") /* reply over the MTU */                     \
    X(MC_NO_ROOM, "pass_no_room") /* driver refused tail and head growth */

enum mirror_counter {
#define MIRROR_X_ENUM(e, s) e,
    MIRROR_COUNTERS(MIRROR_X_ENUM)
#undef MIRROR_X_ENUM
        MC__COUNT
};

struct mirror_counters {
    __u64 c[MC__COUNT];
};

/*
 * The program's one per-CPU map value: its counters, then its scratch.  One
 * map, so a packet makes one lookup for both (a hit: this and its slot's).
 * The counters come first: a hit's two lie in the value's first line.
 */
struct mirror_percpu {
    struct mirror_counters cnt;
    struct mirror_scratch s;
};

/* ---- key hash: same on both sides -----------------------------------------
 * The key is read as 8-byte words in host order (the BPF target has the
 * host's byte order), the last word masked to the key's bytes. */
static inline __u64 mirror_hash_init(__u64 seed, __u32 klen)
{
    return seed ^ ((__u64)klen * 0x9E3779B97F4A7C15ULL);
}

static inline __u64 mirror_hash_word(__u64 h, __u64 w)
{
    h ^= w * 0xC2B2AE3D27D4EB4FULL;
    h = (h << 31) | (h >> 33);
    return h * 0x9E3779B97F4A7C15ULL;
}

static inline __u64 mirror_hash_final(__u64 h)
{
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return h;
}

/* Mask keeping the first 'n' (1..8) bytes of a word loaded in host order.
 * Without a branch: in the program a branch here doubles the states the
 * verifier walks through everything after it. */
static inline __u64 mirror_word_mask(__u32 n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return ~0ULL << (8 * (8 - n));
#else
    return ~0ULL >> (8 * (8 - n));
#endif
}

/*
 * Key bytes the program answers for: 0x21..0x7e (no space, control or
 * non-ASCII byte; anything else goes to the server).  Whole-word tests,
 * exact as booleans (the bit tricks of "Bit Twiddling Hacks").
 */
#define MIRROR_ONES 0x0101010101010101ULL
#define MIRROR_HIGHS 0x8080808080808080ULL
static inline int mirror_word_has_space(__u64 w)
{
    __u64 x = w ^ (MIRROR_ONES * 0x20);
    return ((x - MIRROR_ONES) & ~x & MIRROR_HIGHS) != 0;
}

static inline int mirror_word_bad(__u64 w)
{
    __u64 below = (w - MIRROR_ONES * 0x21) & ~w & MIRROR_HIGHS;
    __u64 above = ((w + MIRROR_ONES * (0x7f - 0x7e)) | w) & MIRROR_HIGHS;
    return (below | above) != 0;
}

static inline int mirror_key_byte_ok(__u8 c)
{
    return c >= 0x21 && c <= 0x7e;
}

#endif /* MDC_MIRROR_LAYOUT_H */
