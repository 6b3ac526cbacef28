/*
 * load_proto.h - the protocol modules of mdc-load.
 *
 * mdc-load's event loop knows nothing of any wire format: it asks a module to
 * compose GET and SET requests into a buffer and to parse one reply at a time,
 * so the same engine drives mdcached (native), memcached (text) and Redis
 * (RESP).  Replies come back in request order on every protocol here.
 */
#ifndef MDC_LOAD_PROTO_H
#define MDC_LOAD_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum load_op { LOP_GET, LOP_SET };

enum load_result {
    LR_HIT,    /* GET found the key */
    LR_MISS,   /* GET found nothing */
    LR_STORED, /* SET succeeded */
    LR_ERROR,  /* an error reply; the stream is still in sync */
    LR_NOMEM,  /* SET refused for want of memory (text "SERVER_ERROR out of
                * memory...", native NO_MEMORY, RESP "-OOM"): a cache may
                * take it when sent again (memcached lets a set fail when
                * the items at its LRU tail are locked) */
};

struct load_proto {
    const char *name;
    uint16_t default_port;
    /* Upper bound of the bytes compose() writes for one request. */
    size_t (*req_size)(enum load_op op, size_t klen, size_t vlen);
    /* Write one request into out (room for req_size() bytes); returns the
     * bytes written. */
    size_t (*compose)(uint8_t *out, enum load_op op, const char *key,
                      size_t klen, const void *val, size_t vlen,
                      uint32_t opaque);
    /* Parse one reply to a request of kind op at buf: bytes consumed (> 0),
     * 0 when more bytes are needed, -1 when the stream is broken.  Sets *res;
     * sets *opaque where the protocol echoes one (else leaves it alone). */
    ssize_t (*parse)(const uint8_t *buf, size_t len, enum load_op op, int *res,
                     uint32_t *opaque);
};

extern const struct load_proto load_proto_native;
extern const struct load_proto load_proto_text;
extern const struct load_proto load_proto_resp;
extern const struct load_proto load_proto_mcbin;

/* Writes the decimal digits of v at p; returns the count. */
static inline size_t load_put_uint(uint8_t *p, uint64_t v)
{
    uint8_t tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (uint8_t)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

#endif
