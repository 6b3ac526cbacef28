/*
 * sg.bpf.c - kernel scatter-gather of pool-wide tag deletes
 * (docs/pool-bpf.md).
 *
 * mdc_sg_egress (tc egress, clsact): a UDP datagram to the virtual
 * address and port, from the permitted cgroup or socket mark, whose
 * command is a tag delete, is cloned to every server of the pool map
 * (destination address, port and checksums rewritten; the original goes
 * to the last server), and its request is recorded in "pending".  A poll
 * datagram (same request id) is turned into a completion holding the
 * aggregate so far and sent back up the receive path.  Everything else to
 * the virtual address is dropped; everything not to it is left untouched.
 *
 * mdc_sg_ingress (XDP): a reply from a server of the map to a pending
 * request is added to its aggregate and dropped, except the one that
 * completes the policy's count, rewritten into the completion datagram
 * (from the virtual address and port, so a connected socket takes it).
 *
 * The configuration is read-only data fixed when the loader loads the
 * programs; the map of servers is frozen by the loader after filling it.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "client-c/sg_layout.h"

const volatile __u32 cfg_vip = 0;    /* network order */
const volatile __u16 cfg_vport = 0;  /* network order */
const volatile __u32 cfg_nserv = 0;
const volatile __u64 cfg_cgroup = 0; /* permitted cgroup v2 id, or 0 */
const volatile __u32 cfg_mark = 0;   /* permitted socket mark, or 0 */
const volatile __u32 cfg_loopback = 0; /* the device is a loopback */

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, MDC_SG_MAX);
    __type(key, __u32);
    __type(value, struct mdc_sg_server);
} servers SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, MDC_SG_MAX);
    __type(key, struct mdc_sg_addr);
    __type(value, __u32);
} server_index SEC(".maps");

/* updated with atomic instructions (BPF v3): an LRU map cannot hold a
 * spin lock, and a request left behind (its client gone) must not fill
 * the map for ever */
struct sg_state {
    __u32 need, nserv, nans;
    __s32 first_err;
    __u64 answered, failed, sum;
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct mdc_sg_key);
    __type(value, struct sg_state);
} pending SEC(".maps");

#define ETH_OFF 0
#define IP_OFF ETH_HLEN
#define UDP_OFF (IP_OFF + (int)sizeof(struct iphdr))
#define FRAME_OFF (UDP_OFF + (int)sizeof(struct udphdr))
#define BODY_OFF (FRAME_OFF + 8)
#define IP_CSUM (IP_OFF + 10)
#define IP_SRC (IP_OFF + 12)
#define IP_DST (IP_OFF + 16)
#define UDP_SPORT (UDP_OFF + 0)
#define UDP_DPORT (UDP_OFF + 2)
#define UDP_CSUM (UDP_OFF + 6)

/* A completion's counts from a request's aggregate (a poll's answer and
 * the final completion say the same things) */
static __always_inline void done_from(struct mdc_sg_done *d,
                                      const struct sg_state *st)
{
    d->nserv = (__u8)st->nserv;
    d->nans = (__u8)st->nans;
    d->need = st->need;
    d->first_err = st->first_err;
    d->answered = st->answered;
    d->failed = st->failed;
    d->sum = st->sum;
}

static __always_inline int permitted(struct __sk_buff *skb)
{
    if (cfg_mark != 0 && skb->mark == cfg_mark)
        return 1;
    if (cfg_cgroup != 0 && bpf_skb_cgroup_id(skb) == cfg_cgroup)
        return 1;
    return 0;
}

/* point the datagram at server s (from the address and port it has) */
static __always_inline int retarget(struct __sk_buff *skb, __u32 from_a,
                                    __u16 from_p,
                                    const struct mdc_sg_server *s)
{
    __u32 to_a = s->addr;
    __u16 to_p = s->port;

    if (bpf_l3_csum_replace(skb, IP_CSUM, from_a, to_a, 4) < 0 ||
        bpf_l4_csum_replace(skb, UDP_CSUM, from_a, to_a,
                            BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0 | 4) < 0 ||
        bpf_skb_store_bytes(skb, IP_DST, &to_a, 4, 0) < 0 ||
        bpf_l4_csum_replace(skb, UDP_CSUM, from_p, to_p,
                            BPF_F_MARK_MANGLED_0 | 2) < 0 ||
        bpf_skb_store_bytes(skb, UDP_DPORT, &to_p, 2, 0) < 0)
        return -1;
    if (s->mac[0] | s->mac[1] | s->mac[2] | s->mac[3] | s->mac[4] | s->mac[5])
        if (bpf_skb_store_bytes(skb, ETH_OFF, s->mac, 6, 0) < 0)
            return -1;
    return 0;
}

static __always_inline int scatter(struct __sk_buff *skb,
                                   const struct mdc_sg_key *key, __u32 need,
                                   __u32 daddr, __u16 dport)
{
    struct sg_state st = {};
    __u32 n = cfg_nserv, ifindex = skb->ifindex;

    if (n == 0 || n > MDC_SG_MAX)
        return TC_ACT_SHOT;
    st.need = need == 0 || need > n ? n : need;
    st.nserv = n;
    st.first_err = -1;
    if (bpf_map_update_elem(&pending, key, &st, BPF_ANY) < 0)
        return TC_ACT_SHOT;
    for (__u32 i = 0; i < MDC_SG_MAX; i++) {
        __u32 k = i;
        struct mdc_sg_server *s;
        if (i >= n)
            break;
        s = bpf_map_lookup_elem(&servers, &k);
        if (s == NULL || retarget(skb, daddr, dport, s) < 0)
            return TC_ACT_SHOT;
        daddr = s->addr;
        dport = s->port;
        if (i + 1 == n)
            return TC_ACT_OK; /* the original goes to the last one */
        bpf_clone_redirect(skb, ifindex, 0);
    }
    return TC_ACT_SHOT;
}

/* a poll: the aggregate so far, back to the sender's socket */
static __always_inline int poll(struct __sk_buff *skb,
                                const struct mdc_sg_key *key, __u32 saddr,
                                __u32 daddr, __u16 sport, __u16 dport)
{
    struct mdc_sg_done d = {};
    struct sg_state *st;
    __u8 mac[12];
    __u16 zero = 0;

    d.magic[0] = MDC_SG_MAGIC0;
    d.magic[1] = MDC_SG_MAGIC1;
    d.magic[2] = MDC_SG_MAGIC2;
    d.magic[3] = MDC_SG_MAGIC3;
    d.version = MDC_SG_VERSION;
    d.first_err = -1;
    st = bpf_map_lookup_elem(&pending, key);
    if (st != NULL) {
        d.kind = MDC_SG_POLLED;
        done_from(&d, st);
        /* the library asks once, then retries the rest over TCP: later
         * replies find nothing here and go their way (no socket takes
         * them) */
        bpf_map_delete_elem(&pending, key);
    } else {
        d.kind = MDC_SG_UNKNOWN;
        d.nserv = (__u8)cfg_nserv;
    }
    /* swapped addresses and ports leave the IP checksum as it is; the UDP
     * checksum is left out (0: none, allowed for IPv4) */
    if (bpf_skb_load_bytes(skb, 0, mac, 12) < 0 ||
        bpf_skb_store_bytes(skb, 0, mac + 6, 6, 0) < 0 ||
        bpf_skb_store_bytes(skb, 6, mac, 6, 0) < 0 ||
        bpf_skb_store_bytes(skb, BODY_OFF, &d, sizeof(d), 0) < 0 ||
        bpf_skb_store_bytes(skb, IP_SRC, &daddr, 4, 0) < 0 ||
        bpf_skb_store_bytes(skb, IP_DST, &saddr, 4, 0) < 0 ||
        bpf_skb_store_bytes(skb, UDP_SPORT, &dport, 2, 0) < 0 ||
        bpf_skb_store_bytes(skb, UDP_DPORT, &sport, 2, 0) < 0 ||
        bpf_skb_store_bytes(skb, UDP_CSUM, &zero, 2, 0) < 0)
        return TC_ACT_SHOT;
    /* on a loopback it goes on its way (out and back in, its route kept:
     * received afresh, a loopback source would be a martian); on any
     * other device back up its receive path */
    if (cfg_loopback)
        return TC_ACT_OK;
    return bpf_redirect(skb->ifindex, BPF_F_INGRESS);
}

SEC("tc")
int mdc_sg_egress(struct __sk_buff *skb)
{
    void *data, *end;
    struct ethhdr *eth;
    struct iphdr *ip;
    struct udphdr *uh;
    __u8 *f;
    struct mdc_sg_key key = {};
    __u32 saddr, daddr;
    __u16 sport, dport;

    if (skb->protocol != bpf_htons(ETH_P_IP))
        return TC_ACT_OK;
    /* the headers and the start of the body in the linear part */
    bpf_skb_pull_data(skb, BODY_OFF + sizeof(struct mdc_sg_done));
    data = (void *)(long)skb->data;
    end = (void *)(long)skb->data_end;
    eth = data;
    ip = (void *)(eth + 1);
    uh = (void *)(ip + 1);
    f = (void *)(uh + 1);
    if ((void *)(uh + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
        ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
        ip->daddr != cfg_vip || uh->dest != cfg_vport)
        return TC_ACT_OK; /* not ours: untouched */
    /* to the virtual address and port: only what is allowed goes on */
    if (!permitted(skb) || (ip->frag_off & bpf_htons(0x3fff)))
        return TC_ACT_SHOT;
    if ((void *)(f + 8 + 5) > end || f[4] != 0 || f[5] != 1)
        return TC_ACT_SHOT;
    saddr = ip->saddr;
    daddr = ip->daddr;
    sport = uh->source;
    dport = uh->dest;
    key.addr = saddr;
    key.port = sport;
    key.reqid = (__u16)(f[0] << 8 | f[1]);
    if (f[8] == 't' && f[9] == 'd' && f[10] == 'e' && f[11] == 'l' &&
        f[12] == ' ')
        return scatter(skb, &key, (__u32)(f[6] << 8 | f[7]), daddr, dport);
    if ((void *)(f + 8 + sizeof(struct mdc_sg_done)) <= end &&
        f[8] == MDC_SG_MAGIC0 && f[9] == MDC_SG_MAGIC1 &&
        f[10] == MDC_SG_MAGIC2 && f[11] == MDC_SG_MAGIC3 &&
        f[8 + 5] == MDC_SG_POLL)
        return poll(skb, &key, saddr, daddr, sport, dport);
    return TC_ACT_SHOT;
}

static __always_inline __u16 csum_fold(__u32 s)
{
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    return (__u16)~s;
}

SEC("xdp")
int mdc_sg_ingress(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    struct udphdr *uh = (void *)(ip + 1);
    __u8 *f = (void *)(uh + 1);
    struct mdc_sg_addr src = {};
    struct mdc_sg_key key = {};
    struct mdc_sg_done d = {};
    struct sg_state *st;
    __u32 *idx, i;
    __u64 count = 0, bit;
    int ok = 0, complete = 0, dup = 0;
    __u8 macs[12];
    __u32 caddr;
    __u16 cport;

    if ((void *)(f + 8) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
        ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
        (ip->frag_off & bpf_htons(0x3fff)) || f[4] != 0 || f[5] != 1)
        return XDP_PASS;
    src.addr = ip->saddr;
    src.port = uh->source;
    idx = bpf_map_lookup_elem(&server_index, &src);
    if (idx == NULL || *idx >= MDC_SG_MAX)
        return XDP_PASS;
    i = *idx;
    key.addr = ip->daddr;
    key.port = uh->dest;
    key.reqid = (__u16)(f[0] << 8 | f[1]);
    st = bpf_map_lookup_elem(&pending, &key);
    if (st == NULL)
        return XDP_PASS; /* not a request of ours: the socket's business */
    /* "DELETED <n>\r\n" is an answer; anything else an error */
    if ((void *)(f + 8 + 8) <= end && f[8] == 'D' && f[9] == 'E' &&
        f[10] == 'L' && f[11] == 'E' && f[12] == 'T' && f[13] == 'E' &&
        f[14] == 'D' && f[15] == ' ') {
        __u8 *c = f + 16;
        ok = 1;
        for (int k = 0; k < 20; k++) {
            if ((void *)(c + 1) > end || *c < '0' || *c > '9')
                break;
            count = count * 10 + (*c - '0');
            c++;
        }
    }
    bit = 1ULL << i;
    if (__sync_fetch_and_or(&st->answered, bit) & bit)
        dup = 1; /* a server's second answer: counted once */
    if (!dup) {
        if (ok) {
            __sync_fetch_and_add(&st->sum, count);
        } else {
            __sync_fetch_and_or(&st->failed, bit);
            __sync_val_compare_and_swap(&st->first_err, -1, (__s32)i);
        }
        /* the answer that reaches the policy's count completes it, once:
         * the sum and bits above are in before the count says so */
        complete = __sync_fetch_and_add(&st->nans, 1) + 1 == st->need;
    }
    if (dup || !complete)
        return XDP_DROP;
    done_from(&d, st);
    if (st->nans >= st->nserv)
        bpf_map_delete_elem(&pending, &key); /* nothing more to come */

    /* this reply becomes the completion: same frame, new body */
    __builtin_memcpy(macs, eth, 12);
    caddr = ip->daddr;
    cport = uh->dest;
    {
        int want = BODY_OFF + (int)sizeof(struct mdc_sg_done);
        int have = (int)((long)end - (long)data);
        if (have < want) {
            if (bpf_xdp_adjust_head(ctx, have - want) < 0)
                return XDP_DROP;
        } else if (have > want) {
            if (bpf_xdp_adjust_tail(ctx, want - have) < 0)
                return XDP_DROP;
        }
    }
    data = (void *)(long)ctx->data;
    end = (void *)(long)ctx->data_end;
    if (data + BODY_OFF + sizeof(struct mdc_sg_done) > end)
        return XDP_DROP;
    eth = data;
    ip = (void *)(eth + 1);
    uh = (void *)(ip + 1);
    f = (void *)(uh + 1);
    __builtin_memcpy(eth, macs, 12);
    eth->h_proto = bpf_htons(ETH_P_IP);
    ip->version = 4;
    ip->ihl = 5;
    ip->tos = 0;
    ip->tot_len = bpf_htons(BODY_OFF - IP_OFF + sizeof(struct mdc_sg_done));
    ip->id = 0;
    ip->frag_off = bpf_htons(0x4000);
    ip->ttl = 64;
    ip->protocol = IPPROTO_UDP;
    ip->check = 0;
    ip->saddr = cfg_vip;
    ip->daddr = caddr;
    {
        __u16 *w = (void *)ip;
        __u32 s = 0;
        for (int k = 0; k < 10; k++)
            s += w[k];
        ip->check = csum_fold(s);
    }
    uh->source = cfg_vport;
    uh->dest = cport;
    uh->len = bpf_htons(BODY_OFF - UDP_OFF + sizeof(struct mdc_sg_done));
    uh->check = 0;
    f[0] = (__u8)(key.reqid >> 8);
    f[1] = (__u8)key.reqid;
    f[2] = f[3] = f[4] = f[6] = f[7] = 0;
    f[5] = 1;
    d.magic[0] = MDC_SG_MAGIC0;
    d.magic[1] = MDC_SG_MAGIC1;
    d.magic[2] = MDC_SG_MAGIC2;
    d.magic[3] = MDC_SG_MAGIC3;
    d.version = MDC_SG_VERSION;
    d.kind = MDC_SG_DONE;
    __builtin_memcpy(f + 8, &d, sizeof(d));
    return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
