/*
 * mdc_bounce.bpf.c - two trivial XDP programs for measurement and tests.
 *
 * mdc_bounce: the floor no XDP cache can beat (docs/benchmarking.md, W8 (d)).
 * Every IPv4 UDP datagram to the configured port goes straight back to its
 * sender with MACs, addresses and ports swapped and nothing else touched:
 * both checksums stay valid, because a ones'-complement sum does not depend
 * on the order of its terms.  Everything else passes.
 *
 * mdc_pass: XDP_PASS for everything - on the client side of a veth pair in
 * native mode, XDP_TX frames only arrive if the peer runs an XDP program.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u16 bounce_port = 0; /* network order; set by the loader */

SEC("xdp")
int mdc_bounce(struct xdp_md *ctx)
{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    struct ethhdr *eth = data;
    struct iphdr *ip = (void *)(eth + 1);
    struct udphdr *udp;
    unsigned char mac[ETH_ALEN];
    __u32 a;
    __u16 p;

    if ((void *)(ip + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) ||
        ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
        return XDP_PASS;
    udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > data_end || udp->dest != bounce_port)
        return XDP_PASS;
    __builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
    __builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
    __builtin_memcpy(eth->h_source, mac, ETH_ALEN);
    a = ip->saddr;
    ip->saddr = ip->daddr;
    ip->daddr = a;
    p = udp->source;
    udp->source = udp->dest;
    udp->dest = p;
    return XDP_TX;
}

SEC("xdp")
int mdc_pass(struct xdp_md *ctx)
{
    return XDP_PASS;
}
