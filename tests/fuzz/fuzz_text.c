/*
 * fuzz_text.c - libFuzzer target for the memcached text protocol parser
 * and composer (protocol/mctext.c), meta and tag commands included.
 * Consumes requests from the input the way the server does (until "need
 * more" or a closing error) and checks each result: a whole request does
 * not depend on the bytes after it and one byte less is "need more"; keys,
 * lists and values lie inside the buffer and obey the rules; errors are
 * memcached-worded lines; composed replies stay within their bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/mctext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static const struct mctext_limits lim = {4096};

static bool inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
    const uint8_t *q = p;
    return q >= buf && q + n <= buf + len;
}

static void check_key(const char *k, uint32_t n)
{
    uint32_t i;

    CHECK(n >= 1 && n <= MCTEXT_KEY_MAX);
    for (i = 0; i < n; i++)
        CHECK((unsigned char)k[i] > ' ' && (unsigned char)k[i] != 0x7f);
}

static void check_request(const uint8_t *buf, size_t len, size_t n,
                          const struct mctext_req *req)
{
    static char
        out[MCTEXT_VALUE_LINE_LEN(MCTEXT_KEY_MAX) + MCTEXT_META_LINE_MAX + 16];
    struct mctext_iter it;
    struct mctext_req again;
    const char *k;
    uint32_t kl, count = 0;
    int32_t a, b;

    CHECK(req->cmd != MCT_NONE);
    CHECK(req->linelen >= 1 && req->linelen <= n);
    CHECK(buf[req->linelen - 1] == '\n');
    CHECK(memchr(buf, '\n', req->linelen - 1) == NULL);
    if (req->value != NULL) {
        CHECK(req->value == buf + req->linelen);
        CHECK(req->vlen <= lim.max_value);
        CHECK(n == req->linelen + req->vlen + 2);
        CHECK(buf[n - 2] == '\r' && buf[n - 1] == '\n');
    } else {
        CHECK(n == req->linelen);
    }
    switch (req->cmd) {
    case MCT_GET:
    case MCT_GETS:
    case MCT_GAT:
    case MCT_GATS:
        mctext_iter_init(&it, req);
        while (mctext_next_key(&it, &k, &kl)) {
            CHECK(inside(k, kl, buf, req->linelen));
            check_key(k, kl);
            if (count == 0)
                CHECK(k == req->key && kl == req->klen);
            count++;
        }
        CHECK(count == req->nlist);
        break;
    case MCT_TSET:
        mctext_iter_init(&it, req);
        while (mctext_next_tag(&it, &a, &b))
            count++;
        CHECK(count == req->nlist && count >= 1);
        /* fall through: it has a key too */
    case MCT_SET:
    case MCT_ADD:
    case MCT_REPLACE:
    case MCT_APPEND:
    case MCT_PREPEND:
    case MCT_CAS:
    case MCT_DELETE:
    case MCT_INCR:
    case MCT_DECR:
    case MCT_TOUCH:
        CHECK(inside(req->key, req->klen, buf, req->linelen));
        check_key(req->key, req->klen);
        CHECK(req->value != NULL ||
              (req->cmd >= MCT_DELETE && req->cmd <= MCT_TOUCH));
        break;
    case MCT_TGET:
    case MCT_TGETS:
    case MCT_TDEL:
        mctext_iter_init(&it, req);
        while (mctext_next_tval(&it, &a))
            count++;
        CHECK(count == req->nlist && count >= 1);
        break;
    case MCT_MG:
    case MCT_MS:
    case MCT_MD:
    case MCT_MA:
    case MCT_ME: {
        struct mctext_meta_vals v = {UINT64_MAX, INT64_MIN, UINT32_MAX,
                                     UINT32_MAX};
        size_t m;

        CHECK(req->klen >= 1 && req->klen <= MCTEXT_KEY_MAX);
        CHECK(inside(req->meta.rawkey, req->meta.rawklen, buf, req->linelen));
        CHECK(req->meta.olen <= MCTEXT_OPAQUE_MAX);
        if (req->meta.flags & MCTEXT_MF('b'))
            CHECK(req->key == req->keybuf);
        else
            check_key(req->key, req->klen);
        m = mctext_meta_line(out, "VA", UINT32_MAX, req, &v);
        CHECK(m <= MCTEXT_META_LINE_MAX);
        CHECK(out[m - 2] == '\r' && out[m - 1] == '\n');
        m = mctext_meta_line(out, "EN", -1, req, NULL);
        CHECK(m <= MCTEXT_META_LINE_MAX);
        break;
    }
    default: break;
    }
    if (req->klen > 0 && req->klen <= MCTEXT_KEY_MAX) {
        size_t m = mctext_value_line(out, req->key, req->klen, UINT32_MAX,
                                     UINT32_MAX, true, UINT64_MAX);
        CHECK(m <= MCTEXT_VALUE_LINE_LEN(req->klen));
    }
    /* The request's extent does not depend on what follows it ... */
    CHECK(mctext_parse(buf, n, &lim, &again) == (ssize_t)n);
    CHECK(again.cmd == req->cmd && again.klen == req->klen);
    /* ... and one byte less is "need more", for exactly n bytes. */
    CHECK(mctext_parse(buf, n - 1, &lim, &again) == MCTEXT_AGAIN);
    CHECK(again.need == n);
    (void)len;
}

static void check_error(const struct mctext_req *req, size_t len)
{
    size_t el = strlen(req->err);

    if (el == 0) { /* an HTTP-looking line: close without a reply */
        CHECK(req->close && req->skip == len);
        return;
    }
    CHECK(el >= 7 && req->err[el - 2] == '\r' && req->err[el - 1] == '\n');
    /* a named token never grows the line past its buffer */
    CHECK(el < MCTEXT_ERRBUF || req->err != req->errbuf);
    CHECK(strcmp(req->err, MCTEXT_R_ERROR) == 0 ||
          strncmp(req->err, "CLIENT_ERROR ", 13) == 0 ||
          strncmp(req->err, "SERVER_ERROR ", 13) == 0);
    if (req->close)
        CHECK(req->skip == len);
    else
        CHECK(req->skip >= req->linelen && req->linelen >= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;

    while (off < size) {
        struct mctext_req req;
        size_t len = size - off;
        ssize_t n = mctext_parse(data + off, len, &lim, &req);

        if (n == MCTEXT_AGAIN) {
            CHECK(req.need > len);
            break;
        }
        if (n == MCTEXT_ERROR) {
            check_error(&req, len);
            if (req.close || req.skip >= len)
                break;
            off += (size_t)req.skip;
            continue;
        }
        CHECK(n > 0 && (size_t)n <= len);
        check_request(data + off, len, (size_t)n, &req);
        off += (size_t)n;
    }
    return 0;
}
