/*
 * load_text.c - mdc-load's module for memcached's text protocol
 * (get / set only, which is all the standard workloads need).
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "load_proto.h"

static size_t text_req_size(enum load_op op, size_t klen, size_t vlen)
{
    /* "set " key " 0 0 " digits "\r\n" value "\r\n" */
    return op == LOP_SET ? 4 + klen + 5 + 20 + 2 + vlen + 2 : 4 + klen + 2;
}

static size_t text_compose(uint8_t *out, enum load_op op, const char *key,
                           size_t klen, const void *val, size_t vlen,
                           uint32_t opaque)
{
    uint8_t *p = out;

    memcpy(p, op == LOP_SET ? "set " : "get ", 4);
    p += 4;
    memcpy(p, key, klen);
    p += klen;
    if (op == LOP_SET) {
        memcpy(p, " 0 0 ", 5);
        p += 5;
        p += load_put_uint(p, vlen);
        memcpy(p, "\r\n", 2);
        p += 2;
        memcpy(p, val, vlen);
        p += vlen;
    }
    memcpy(p, "\r\n", 2);
    return (size_t)(p + 2 - out);
}

/* Length of the line at buf including its "\r\n", or 0 when incomplete. */
static size_t line_len(const uint8_t *buf, size_t len)
{
    const uint8_t *nl = memchr(buf, '\n', len);
    return nl == NULL ? 0 : (size_t)(nl - buf) + 1;
}

static bool starts(const uint8_t *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    return len >= n && memcmp(buf, s, n) == 0;
}

static ssize_t text_parse(const uint8_t *buf, size_t len, enum load_op op,
                          int *res, uint32_t *opaque)
{
    size_t ll = line_len(buf, len);

    if (ll == 0)
        return len > 8192 ? -1 : 0;
    if (op == LOP_GET && starts(buf, ll, "VALUE ")) {
        /* VALUE <key> <flags> <bytes> [<cas>]\r\n: the 4th field */
        size_t i = 0, field = 0;
        uint64_t bytes = 0;
        while (i < ll && field < 3) {
            if (buf[i] == ' ')
                field++;
            i++;
        }
        if (field < 3)
            return -1;
        while (i < ll && buf[i] >= '0' && buf[i] <= '9')
            bytes = bytes * 10 + (uint64_t)(buf[i++] - '0');
        uint64_t need = ll + bytes + 2 + 5; /* data, "\r\n", "END\r\n" */
        if (len < need)
            return 0;
        if (memcmp(buf + ll + bytes + 2, "END\r\n", 5) != 0)
            return -1; /* one key per get: anything else is out of step */
        *res = LR_HIT;
        return (ssize_t)need;
    }
    if (op == LOP_GET && starts(buf, ll, "END\r\n"))
        *res = LR_MISS;
    else if (op == LOP_SET && starts(buf, ll, "STORED\r\n"))
        *res = LR_STORED;
    else if (op == LOP_SET && starts(buf, ll, "SERVER_ERROR out of memory"))
        *res = LR_NOMEM;
    else if (starts(buf, ll, "ERROR") || starts(buf, ll, "CLIENT_ERROR") ||
             starts(buf, ll, "SERVER_ERROR") || starts(buf, ll, "NOT_STORED"))
        *res = LR_ERROR;
    else
        return -1;
    return (ssize_t)ll;
}

const struct load_proto load_proto_text = {
    .name = "text",
    .default_port = 11211,
    .req_size = text_req_size,
    .compose = text_compose,
    .parse = text_parse,
};
