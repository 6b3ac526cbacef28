/*
 * load_resp.c - mdc-load's module for RESP (Redis): GET and SET only.
 */
#include "config.h"

#include <string.h>

#include "load_proto.h"

static size_t resp_req_size(enum load_op op, size_t klen, size_t vlen)
{
    /* "*3\r\n$3\r\nSET\r\n$" digits "\r\n" key "\r\n$" digits "\r\n" val "\r\n"
     */
    return 13 + 1 + 20 + 2 + klen + 2 +
           (op == LOP_SET ? 1 + 20 + 2 + vlen + 2 : 0);
}

static uint8_t *bulk(uint8_t *p, const void *s, size_t n)
{
    *p++ = '$';
    p += load_put_uint(p, n);
    memcpy(p, "\r\n", 2);
    memcpy(p + 2, s, n);
    memcpy(p + 2 + n, "\r\n", 2);
    return p + 4 + n;
}

static size_t resp_compose(uint8_t *out, enum load_op op, const char *key,
                           size_t klen, const void *val, size_t vlen,
                           uint32_t opaque)
{
    uint8_t *p = out;

    if (op == LOP_SET) {
        memcpy(p, "*3\r\n$3\r\nSET\r\n", 13);
        p = bulk(p + 13, key, klen);
        p = bulk(p, val, vlen);
    } else {
        memcpy(p, "*2\r\n$3\r\nGET\r\n", 13);
        p = bulk(p + 13, key, klen);
    }
    return (size_t)(p - out);
}

static ssize_t resp_parse(const uint8_t *buf, size_t len, enum load_op op,
                          int *res, uint32_t *opaque)
{
    const uint8_t *nl = memchr(buf, '\n', len);
    size_t ll;

    if (nl == NULL)
        return len > 8192 ? -1 : 0;
    ll = (size_t)(nl - buf) + 1;
    switch (buf[0]) {
    case '+': /* +OK */
        *res = op == LOP_SET ? LR_STORED : LR_ERROR;
        return (ssize_t)ll;
    case '-': /* -OOM: over maxmemory (with noeviction, or no key to evict) */
        *res = op == LOP_SET && ll >= 4 && memcmp(buf + 1, "OOM", 3) == 0
                   ? LR_NOMEM
                   : LR_ERROR;
        return (ssize_t)ll;
    case '_': /* RESP3 null */ *res = LR_MISS; return (ssize_t)ll;
    case '$': {
        if (ll >= 4 && buf[1] == '-') { /* $-1: RESP2 null */
            *res = LR_MISS;
            return (ssize_t)ll;
        }
        uint64_t n = 0;
        for (size_t i = 1; i < ll && buf[i] >= '0' && buf[i] <= '9'; i++)
            n = n * 10 + (uint64_t)(buf[i] - '0');
        if (len < ll + n + 2)
            return 0;
        *res = op == LOP_GET ? LR_HIT : LR_ERROR;
        return (ssize_t)(ll + n + 2);
    }
    default: return -1;
    }
}

const struct load_proto load_proto_resp = {
    .name = "resp",
    .default_port = 6379,
    .req_size = resp_req_size,
    .compose = resp_compose,
    .parse = resp_parse,
};
