/*
 * md5.c - MD5 (RFC 1321), only for ketama placement: libmemcached's
 * libketama-compatible mode hashes server points and keys with MD5, so the
 * pool must too.  Not for anything that needs a secure hash.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "md5.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#define ROTL(x, c) (((x) << (c)) | ((x) >> (32 - (c))))

/* Per-round shift amounts. */
static const uint8_t S[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

/* floor(abs(sin(i + 1)) * 2^32), computed once. */
static uint32_t K[64];
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

static void k_init(void)
{
    for (int i = 0; i < 64; i++)
        K[i] = (uint32_t)(uint64_t)floor(fabs(sin((double)(i + 1))) *
                                         4294967296.0);
}

static void block(uint32_t st[4], const uint8_t *p)
{
    uint32_t w[16];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[i * 4] | (uint32_t)p[i * 4 + 1] << 8 |
               (uint32_t)p[i * 4 + 2] << 16 | (uint32_t)p[i * 4 + 3] << 24;
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g;
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) & 15;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) & 15;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) & 15;
        }
        uint32_t t = d;
        d = c;
        c = b;
        b = b + ROTL(a + f + K[i] + w[g], S[i]);
        a = t;
    }
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
}

void mdci_md5(const void *data, size_t len, uint8_t out[16])
{
    pthread_once(&k_once, k_init);
    uint32_t st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    const uint8_t *p = data;
    size_t left = len;
    while (left >= 64) {
        block(st, p);
        p += 64;
        left -= 64;
    }
    uint8_t tail[128];
    memset(tail, 0, sizeof(tail));
    if (left)
        memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t tlen = left < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[tlen - 8 + i] = (uint8_t)(bits >> (8 * i));
    block(st, tail);
    if (tlen == 128)
        block(st, tail + 64);
    for (int i = 0; i < 4; i++) {
        out[i * 4] = (uint8_t)st[i];
        out[i * 4 + 1] = (uint8_t)(st[i] >> 8);
        out[i * 4 + 2] = (uint8_t)(st[i] >> 16);
        out[i * 4 + 3] = (uint8_t)(st[i] >> 24);
    }
}
