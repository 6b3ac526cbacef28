/*
 * mcbin.h - memcached's binary protocol (first byte 0x80; deprecated
 * upstream, still spoken by libmemcached's BINARY_PROTOCOL, pylibmc
 * binary=True, the Rust memcache crate, spymemcached and every SASL
 * client), parsed from and composed into plain buffers.  No I/O and no
 * allocation: the server, the fuzzer and the tests share this grammar.
 * docs/protocol-binary.md is the normative description and changes with
 * this file.
 *
 * Everything on the wire is big-endian; fields are read and written byte
 * by byte, so buffers need no alignment.
 *
 * mcbin_parse() reads one request -- the 24-byte header, then its extras,
 * key and value -- and returns:
 *   > 0          the request is whole and well formed; that many bytes
 *   MCBIN_AGAIN  more bytes are needed: req->need from the buffer's start
 *                (the header first, then the whole body)
 *   MCBIN_ERROR  req->status is the status to answer, req->close whether
 *                the stream is lost (answer, then close), req->skip the
 *                bytes to discard to stay in sync otherwise (possibly more
 *                than the buffer holds: the rest of an unwanted body)
 * The header's opcode and opaque are in req->hdr as soon as the header is
 * in, so an error reply can echo them.  Pointers in the request point into
 * the buffer and live as long as it.
 */
#ifndef MDC_MCBIN_H
#define MDC_MCBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MCBIN_HDR_LEN 24u
#define MCBIN_REQ 0x80     /* request magic */
#define MCBIN_RES 0x81     /* response magic */
#define MCBIN_KEY_MAX 250u /* memcached's internal key limit */
/* The most a SASL exchange's value may take (a PLAIN message: authzid,
 * user and password, each NUL-separated). */
#define MCBIN_SASL_MAX 4096u

#define MCBIN_AGAIN (-1)
#define MCBIN_ERROR (-2)

/* Opcodes memcached 1.6 serves (its protocol_binary.h), plus VERBOSITY
 * (0x1b), which memcached 1.6.18 answers "unknown command" but
 * libmemcached sends. */
enum mcbin_op {
    MCBIN_OP_GET = 0x00,
    MCBIN_OP_SET = 0x01,
    MCBIN_OP_ADD = 0x02,
    MCBIN_OP_REPLACE = 0x03,
    MCBIN_OP_DELETE = 0x04,
    MCBIN_OP_INCR = 0x05,
    MCBIN_OP_DECR = 0x06,
    MCBIN_OP_QUIT = 0x07,
    MCBIN_OP_FLUSH = 0x08,
    MCBIN_OP_GETQ = 0x09,
    MCBIN_OP_NOOP = 0x0a,
    MCBIN_OP_VERSION = 0x0b,
    MCBIN_OP_GETK = 0x0c,
    MCBIN_OP_GETKQ = 0x0d,
    MCBIN_OP_APPEND = 0x0e,
    MCBIN_OP_PREPEND = 0x0f,
    MCBIN_OP_STAT = 0x10,
    MCBIN_OP_SETQ = 0x11,
    MCBIN_OP_ADDQ = 0x12,
    MCBIN_OP_REPLACEQ = 0x13,
    MCBIN_OP_DELETEQ = 0x14,
    MCBIN_OP_INCRQ = 0x15,
    MCBIN_OP_DECRQ = 0x16,
    MCBIN_OP_QUITQ = 0x17,
    MCBIN_OP_FLUSHQ = 0x18,
    MCBIN_OP_APPENDQ = 0x19,
    MCBIN_OP_PREPENDQ = 0x1a,
    MCBIN_OP_VERBOSITY = 0x1b,
    MCBIN_OP_TOUCH = 0x1c,
    MCBIN_OP_GAT = 0x1d,
    MCBIN_OP_GATQ = 0x1e,
    MCBIN_OP_SASL_LIST = 0x20,
    MCBIN_OP_SASL_AUTH = 0x21,
    MCBIN_OP_SASL_STEP = 0x22,
    MCBIN_OP_GATK = 0x23,
    MCBIN_OP_GATKQ = 0x24,
};

/* Response status codes (memcached's protocol_binary.h). */
enum mcbin_status {
    MCBIN_S_OK = 0x0000,
    MCBIN_S_NOT_FOUND = 0x0001,
    MCBIN_S_EXISTS = 0x0002,
    MCBIN_S_TOO_LARGE = 0x0003,
    MCBIN_S_INVALID = 0x0004,
    MCBIN_S_NOT_STORED = 0x0005,
    MCBIN_S_NON_NUMERIC = 0x0006,
    MCBIN_S_AUTH_ERROR = 0x0020,
    MCBIN_S_AUTH_CONTINUE = 0x0021,
    MCBIN_S_UNKNOWN = 0x0081,
    MCBIN_S_NO_MEMORY = 0x0082,
};

/* The 24-byte header, request or response (status in place of vbucket). */
struct mcbin_hdr {
    uint8_t magic;
    uint8_t opcode;
    uint16_t klen;
    uint8_t extlen;
    uint8_t datatype;
    uint16_t status; /* vbucket id in a request (ignored, as memcached) */
    uint32_t bodylen;
    uint32_t opaque;
    uint64_t cas;
};

/* A request, its opcode folded: the quiet forms (SETQ, GETKQ, ...) are
 * their loud command with quiet set; the K forms set with_key. */
struct mcbin_req {
    struct mcbin_hdr hdr;
    uint8_t cmd;   /* enum mcbin_op, loud form: SET for SETQ, GET for
                      GETK/GETQ/GETKQ, GAT for GATK/GATQ/GATKQ */
    bool quiet;    /* answer only what is not routine (see the doc) */
    bool with_key; /* GETK, GETKQ, GATK, GATKQ: the reply carries the key */
    bool close;    /* MCBIN_ERROR: the stream is lost */
    uint16_t status; /* MCBIN_ERROR: the status to answer */
    const uint8_t *key;
    uint16_t klen;
    const uint8_t *value;
    uint32_t vlen;
    uint32_t flags;   /* SET, ADD, REPLACE: client flags */
    uint32_t exptime; /* SET/ADD/REPLACE, TOUCH, GAT, INCR, FLUSH */
    bool has_exptime; /* FLUSH: extras given */
    uint64_t delta;   /* INCR, DECR */
    uint64_t initial; /* INCR, DECR: the value of a created counter */
    uint32_t level;   /* VERBOSITY */
    size_t need;      /* MCBIN_AGAIN: bytes needed from the start */
    uint64_t skip;    /* MCBIN_ERROR, in sync: bytes to discard */
};

struct mcbin_limits {
    uint32_t max_value; /* largest value of a store (-I) */
    uint64_t max_skip;  /* largest body discarded with the stream kept
                           (a larger one closes) */
};

/* Decode the header at buf (len >= MCBIN_HDR_LEN). */
void mcbin_decode_header(const uint8_t *buf, struct mcbin_hdr *h);
/* Encode h into out[MCBIN_HDR_LEN]. */
void mcbin_encode_header(uint8_t *out, const struct mcbin_hdr *h);

ssize_t mcbin_parse(const void *buf, size_t len,
                    const struct mcbin_limits *lim, struct mcbin_req *req);

/* The opcode as memcached's header names it ("GETKQ"), or NULL. */
const char *mcbin_op_name(uint8_t opcode);

/* memcached's text for an error status ("Not found"), or "" for a status
 * whose reply has no body (OK, AUTH_CONTINUE). */
const char *mcbin_status_text(uint16_t status);

/*
 * A response header for req into out[MCBIN_HDR_LEN]: magic 0x81, the
 * request's opcode and opaque, the status, the lengths (bodylen =
 * extlen + klen + vlen) and cas.
 */
void mcbin_response(uint8_t *out, const struct mcbin_hdr *req,
                    uint16_t status, uint8_t extlen, uint16_t klen,
                    uint32_t vlen, uint64_t cas);
/* The size of mcbin_error()'s reply for status. */
size_t mcbin_error_len(uint16_t status);
/* An error reply (header and memcached's text as its value) into
 * out[mcbin_error_len(status)]; returns the bytes written. */
size_t mcbin_error(uint8_t *out, const struct mcbin_hdr *req,
                   uint16_t status);

/* Request composer (the tests, the fuzzer's seeds, mdc-load): header,
 * extras, key, value into out[MCBIN_HDR_LEN + extlen + klen + vlen];
 * returns the bytes written. */
size_t mcbin_request(uint8_t *out, uint8_t opcode, const void *extras,
                     uint8_t extlen, const void *key, uint16_t klen,
                     const void *value, uint32_t vlen, uint32_t opaque,
                     uint64_t cas);

/* Big-endian helpers. */
static inline uint32_t mcbin_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}
static inline uint64_t mcbin_get_u64(const uint8_t *p)
{
    return (uint64_t)mcbin_get_u32(p) << 32 | mcbin_get_u32(p + 4);
}
static inline void mcbin_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void mcbin_put_u64(uint8_t *p, uint64_t v)
{
    mcbin_put_u32(p, (uint32_t)(v >> 32));
    mcbin_put_u32(p + 4, (uint32_t)v);
}

#endif
