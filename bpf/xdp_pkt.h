/*
 * xdp_pkt.h - crafting memcached UDP requests as Ethernet frames and checking
 * the XDP program's replies, for tests/test_xdp.c and tests/test_xdp_stress.c.
 * Checksums here are computed the textbook way (RFC 1071, big-endian words),
 * independently of the program's and the library's code.
 */
#ifndef MDC_XDP_PKT_H
#define MDC_XDP_PKT_H

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#define PKT_MAX 2048
#define SRV_PORT 11211
#define SRV_ADDR "10.11.0.1"
#define CLI_ADDR "10.11.0.2"
#define CLI_PORT 40000

static const uint8_t srv_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t cli_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

/* What to put in a request; zero-initialised fields take the defaults. */
struct req {
    const char *payload; /* after the frame header; default "get foo\r\n" */
    size_t plen;         /* 0: strlen(payload) */
    uint16_t reqid;
    uint16_t ethertype; /* default 0x0800 */
    uint8_t proto;      /* default 17 */
    uint8_t ihl;        /* default 5 (extra words are NOP options) */
    uint16_t frag_off;  /* host order */
    const char *daddr;  /* default SRV_ADDR */
    uint16_t dport;     /* default SRV_PORT */
    uint8_t frame[8];   /* frame header bytes 2..7 if set_frame */
    int set_frame;
    int bad_ip_csum;
    int udp_len_delta;
    size_t pad_to; /* Ethernet padding up to this length */
};

static inline uint32_t sum_be(const uint8_t *p, size_t n, uint32_t sum)
{
    size_t i;
    for (i = 0; i + 1 < n; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (n & 1)
        sum += (uint32_t)(p[n - 1] << 8);
    return sum;
}

static inline uint16_t fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

/* UDP checksum over the IPv4 pseudo header and the datagram at ip + 20. */
static inline uint16_t udp_csum(const uint8_t *ip, const uint8_t *udp,
                                size_t ulen)
{
    uint32_t sum = sum_be(ip + 12, 8, 0);
    sum += 17 + (uint32_t)ulen;
    sum = sum_be(udp, ulen, sum);
    return (uint16_t)~fold(sum);
}

static inline void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Build the frame; returns its length. */
static inline size_t build_req(uint8_t *pkt, const struct req *r)
{
    const char *pl = r->payload ? r->payload : "get foo\r\n";
    size_t plen = r->plen ? r->plen : strlen(pl);
    uint8_t ihl = r->ihl ? r->ihl : 5;
    uint8_t *ip = pkt + 14, *udp, *fr;
    size_t iplen = (size_t)ihl * 4, ulen = 8 + 8 + plen, len;
    struct in_addr a;
    uint16_t c;

    memset(pkt, 0, PKT_MAX);
    memcpy(pkt, srv_mac, 6);
    memcpy(pkt + 6, cli_mac, 6);
    put16(pkt + 12, r->ethertype ? r->ethertype : 0x0800);
    ip[0] = (uint8_t)(0x40 | ihl);
    put16(ip + 2, (uint16_t)(iplen + ulen));
    put16(ip + 4, 0x1234);
    put16(ip + 6, r->frag_off ? r->frag_off : 0x4000);
    ip[8] = 64;
    ip[9] = r->proto ? r->proto : 17;
    inet_pton(AF_INET, CLI_ADDR, &a);
    memcpy(ip + 12, &a, 4);
    inet_pton(AF_INET, r->daddr ? r->daddr : SRV_ADDR, &a);
    memcpy(ip + 16, &a, 4);
    memset(ip + 20, 1, iplen - 20); /* NOP options */
    c = (uint16_t)~fold(sum_be(ip, iplen, 0));
    put16(ip + 10, r->bad_ip_csum ? (uint16_t)(c ^ 0x5555) : c);
    udp = ip + iplen;
    put16(udp, CLI_PORT);
    put16(udp + 2, r->dport ? r->dport : SRV_PORT);
    put16(udp + 4, (uint16_t)((int)ulen + r->udp_len_delta));
    fr = udp + 8;
    put16(fr, r->reqid);
    if (r->set_frame)
        memcpy(fr + 2, r->frame + 2, 6);
    else
        fr[5] = 1;
    memcpy(fr + 8, pl, plen);
    put16(udp + 6, udp_csum(ip, udp, ulen));
    len = 14 + iplen + ulen;
    if (r->pad_to > len)
        len = r->pad_to;
    return len;
}

/*
 * Check a reply frame against its request; returns NULL if sound (and the
 * UDP payload in *payload, *plen), else what is wrong.
 */
static inline const char *check_reply(const uint8_t *req, const uint8_t *rep,
                                      size_t rlen, const uint8_t **payload,
                                      size_t *plen)
{
    const uint8_t *ip = rep + 14, *udp = rep + 34, *qip = req + 14;
    size_t ulen;

    if (rlen < 50)
        return "reply shorter than its headers";
    if (memcmp(rep, req + 6, 6) || memcmp(rep + 6, req, 6))
        return "MAC addresses not swapped";
    if (get16(rep + 12) != 0x0800)
        return "ethertype";
    if (ip[0] != 0x45 || ip[9] != 17)
        return "IP version, header length or protocol";
    if (get16(ip + 2) != rlen - 14)
        return "IP total length";
    if (get16(ip + 6) & 0x3fff)
        return "reply is a fragment";
    if (fold(sum_be(ip, 20, 0)) != 0xffff)
        return "IP header checksum";
    if (memcmp(ip + 12, qip + 16, 4) || memcmp(ip + 16, qip + 12, 4))
        return "IP addresses not swapped";
    if (get16(udp) != get16(qip + 20 + 2) || get16(udp + 2) != get16(qip + 20))
        return "UDP ports not swapped";
    ulen = get16(udp + 4);
    if (ulen != rlen - 34)
        return "UDP length";
    if (get16(udp + 6) == 0)
        return "UDP checksum missing";
    if (udp_csum(ip, udp, ulen) != 0)
        return "UDP checksum";
    *payload = udp + 8;
    *plen = ulen - 8;
    return NULL;
}

#endif
