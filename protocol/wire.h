/*
 * wire.h - the native binary protocol, version 1 (docs/protocol.md).
 *
 * The one definition of the wire format shared by the server and the C
 * client: header layout, opcodes, flags, status codes, and a parser and
 * composer that work on plain buffers (no I/O, no allocation).  Everything on
 * the wire is little-endian whatever the host; fields are read and written
 * byte by byte, never through struct casts, so buffers need no alignment.
 *
 * Return convention: 0 or a positive byte count on success, WIRE_AGAIN when
 * the buffer holds only part of a message, another negative WIRE_E* code for
 * malformed input.  wire_err_in_sync() tells whether the stream can go on.
 */
#ifndef MDC_WIRE_H
#define MDC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WIRE_MAGIC 0xB7
#define WIRE_VERSION 1
#define WIRE_HDR_LEN 40u
#define WIRE_TAG_LEN 8u
#define WIRE_MAX_KEY 65534u       /* key length 0xFFFF is reserved */
#define WIRE_DEFAULT_PORT 11311

/* Header byte offsets (all little-endian). */
#define WIRE_OFF_MAGIC 0    /* u8  0xB7 */
#define WIRE_OFF_VERSION 1  /* u8  1 */
#define WIRE_OFF_OPCODE 2   /* u8 */
#define WIRE_OFF_FLAGS 3    /* u8  WIRE_F_* */
#define WIRE_OFF_STATUS 4   /* u16 0 in requests */
#define WIRE_OFF_KLEN 6     /* u16 <= 65534 */
#define WIRE_OFF_NTAGS 8    /* u16 */
#define WIRE_OFF_RESERVED 10 /* u16 must be 0 */
#define WIRE_OFF_VLEN 12    /* u32 */
#define WIRE_OFF_OPAQUE 16  /* u32 echoed in the response */
#define WIRE_OFF_IFLAGS 20  /* u32 item (client) flags */
#define WIRE_OFF_CAS 24     /* u64 */
#define WIRE_OFF_EXPIRY 32  /* i64 */

/* Header flags. */
#define WIRE_F_QUIET 0x01    /* request: suppress the uninteresting reply */
#define WIRE_F_MORE 0x02     /* response: more responses follow for it */
#define WIRE_F_STALE 0x04    /* request: DEL_BY_TAG marks the records stale
                              * instead of deleting them, DELETE marks its
                              * record stale (a non-zero expiry becomes
                              * their TTL), SET/CAS with a CAS stores in
                              * invalidate mode (memcached's ms I);
                              * response to a LEASE get: the record is
                              * stale (memcached's X) (docs/protocol.md) */
#define WIRE_F_LEASE 0x08    /* request, GET GETK GAT GATK only: a lease
                              * get (memcached's mg with N/R): value empty
                              * or 16 bytes, vivify TTL i64 + recache
                              * TTL i64; the reply tells W/X/Z */
#define WIRE_F_WIN 0x08      /* response to a LEASE get: this client won,
                              * it is to recompute and store (W) */
#define WIRE_F_PENDING 0x10  /* response to a LEASE get: another client
                              * holds the win (Z) */
#define WIRE_F_RESPONSE 0x80 /* set in every response, never in requests */
#define WIRE_F_REQ_MASK (WIRE_F_QUIET | WIRE_F_STALE | WIRE_F_LEASE)
#define WIRE_F_RSP_MASK                                                        \
    (WIRE_F_RESPONSE | WIRE_F_MORE | WIRE_F_STALE | WIRE_F_WIN |              \
     WIRE_F_PENDING)
/* The reply flags of a LEASE get (responses of GET GETK GAT GATK only). */
#define WIRE_F_LEASE_STATE (WIRE_F_STALE | WIRE_F_WIN | WIRE_F_PENDING)
#define WIRE_LEASE_VLEN 16u  /* a LEASE get's value: vivify, recache TTLs */

/* Opcodes: X(name, value, text).  Gaps are unassigned. */
#define WIRE_OPCODES(X)                                                        \
    X(NOOP, 0x00, "noop")                                                      \
    X(GET, 0x01, "get")                                                        \
    X(GETK, 0x02, "getk")                                                      \
    X(GAT, 0x03, "gat")                                                        \
    X(GATK, 0x04, "gatk")                                                      \
    X(TOUCH, 0x05, "touch")                                                    \
    X(SET, 0x10, "set")                                                        \
    X(ADD, 0x11, "add")                                                        \
    X(REPLACE, 0x12, "replace")                                                \
    X(CAS, 0x13, "cas")                                                        \
    X(APPEND, 0x14, "append")                                                  \
    X(PREPEND, 0x15, "prepend")                                                \
    X(DELETE, 0x18, "delete")                                                  \
    X(INCR, 0x19, "incr")                                                      \
    X(DECR, 0x1A, "decr")                                                      \
    X(ATOMIC_ADD, 0x20, "atomic_add")                                          \
    X(ATOMIC_FETCH_ADD, 0x21, "atomic_fetch_add")                              \
    X(ATOMIC_CMPSET, 0x22, "atomic_cmpset")                                    \
    X(ATOMIC_READ_CLEAR, 0x23, "atomic_read_clear")                            \
    X(GET_BY_TAG, 0x30, "get_by_tag")                                          \
    X(DEL_BY_TAG, 0x31, "del_by_tag")                                          \
    X(TSTACK_PUSH, 0x32, "tstack_push")                                        \
    X(TSTACK_POP, 0x33, "tstack_pop")                                          \
    X(FLUSH, 0x40, "flush")                                                    \
    X(STATS, 0x41, "stats")                                                    \
    X(VERSION, 0x42, "version")                                                \
    X(QUIT, 0x43, "quit")                                                      \
    X(DUMP, 0x44, "dump")                                                      \
    X(AUTH, 0x45, "auth")

enum wire_opcode {
#define X(n, v, s) WIRE_OP_##n = v,
    WIRE_OPCODES(X)
#undef X
};

/*
 * Response status codes (u16).  0..10 equal enum store_status (store.h) on
 * purpose, so a store result maps with wire_status_from_store().
 */
#define WIRE_STATUSES(X)                                                       \
    X(OK, 0x0000, "ok")                                                        \
    X(NOT_FOUND, 0x0001, "not found")                                          \
    X(EXISTS, 0x0002, "exists")                                                \
    X(NOT_STORED, 0x0003, "not stored")                                        \
    X(TOO_LARGE, 0x0004, "value too large")                                    \
    X(KEY_INVALID, 0x0005, "invalid key")                                      \
    X(NO_MEMORY, 0x0006, "out of memory")                                      \
    X(TOO_MANY_TAGS, 0x0007, "too many tags")                                  \
    X(NOT_NUMBER, 0x0008, "not a number")                                      \
    X(TRUNCATED, 0x0009, "truncated")                                          \
    X(INVALID, 0x000A, "invalid argument")                                     \
    X(UNKNOWN_OPCODE, 0x0080, "unknown opcode")                                \
    X(BAD_MAGIC, 0x0081, "bad magic")                                          \
    X(BAD_VERSION, 0x0082, "unsupported protocol version")                     \
    X(MALFORMED, 0x0083, "malformed message")                                  \
    X(MSG_TOO_LARGE, 0x0084, "message too large")                              \
    X(INTERNAL, 0x0085, "server error")                                        \
    X(NOT_SUPPORTED, 0x0086, "not supported")                                  \
    X(AUTH_FAILED, 0x0087, "authentication failed")                            \
    X(AUTH_REQUIRED, 0x0088, "authentication required")

enum wire_status {
#define X(n, v, s) WIRE_S_##n = v,
    WIRE_STATUSES(X)
#undef X
};

/* Parser / composer return codes. */
enum wire_rc {
    WIRE_OK = 0,
    WIRE_AGAIN = -1,      /* need more bytes */
    /* out of sync: reply (status via wire_err_status), then close */
    WIRE_EMAGIC = -2,     /* first byte is not 0xB7 */
    WIRE_EVERSION = -3,   /* unsupported version */
    WIRE_ETOOBIG = -4,    /* body longer than the caller's max_body */
    /* in sync: the message is whole in the buffer; skip msg.size bytes */
    WIRE_EOPCODE = -5,    /* unknown opcode */
    WIRE_EFLAGS = -6,     /* reserved flag bits, or response flags in a request */
    WIRE_ERESERVED = -7,  /* reserved header field not zero */
    WIRE_ESTATUS = -8,    /* non-zero status in a request */
    WIRE_EKEYLEN = -9,    /* key length 0xFFFF; key missing/present wrongly */
    WIRE_EFIELD = -10,    /* a field (value length, CAS, flags, expiry) the
                             opcode does not allow (wire_check_request) */
    WIRE_ETAGS = -11,     /* tag count/tkeys wrong for the opcode */
    /* composer */
    WIRE_ENOSPACE = -12,  /* output buffer too small */
};

/* A tag as decoded from the wire (same layout as store.h's mdc_tag). */
struct wire_tag {
    int32_t tkey;
    int32_t tval;
};

/* The decoded fixed header, in host byte order. */
struct wire_hdr {
    uint8_t magic;
    uint8_t version;
    uint8_t opcode;
    uint8_t flags;
    uint16_t status;
    uint16_t klen;
    uint16_t ntags;
    uint16_t reserved;
    uint32_t vlen;
    uint32_t opaque;
    uint32_t iflags;
    uint64_t cas;
    int64_t expiry;
};

/* A parsed message: the header plus pointers into the caller's buffer. */
struct wire_msg {
    struct wire_hdr hdr;
    const uint8_t *tags;  /* hdr.ntags * 8 raw bytes; see wire_msg_tag() */
    const uint8_t *key;   /* hdr.klen bytes */
    const uint8_t *value; /* hdr.vlen bytes */
    size_t size;          /* whole message: header + tags + key + value */
};

/* ---- little-endian helpers (any alignment) ---------------------------- */
static inline uint16_t wire_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t wire_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t wire_get_u64(const uint8_t *p)
{
    return (uint64_t)wire_get_u32(p) | (uint64_t)wire_get_u32(p + 4) << 32;
}
static inline void wire_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void wire_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void wire_put_u64(uint8_t *p, uint64_t v)
{
    wire_put_u32(p, (uint32_t)v);
    wire_put_u32(p + 4, (uint32_t)(v >> 32));
}

/* Bytes after the header: tags, key and value (cannot overflow 64 bits). */
static inline uint64_t wire_body_len(const struct wire_hdr *h)
{
    return (uint64_t)h->ntags * WIRE_TAG_LEN + h->klen + h->vlen;
}

/* ---- parsing ------------------------------------------------------------ */

/*
 * Decode and check the fixed header only.  Returns WIRE_OK, WIRE_AGAIN (fewer
 * than 40 bytes, and no early error in the bytes present), or a WIRE_E* code;
 * *h is zeroed on EMAGIC/EVERSION, otherwise filled once 40 bytes are here.  Body offsets follow from it:
 * tags at 40, key at 40 + 8 * ntags, value after the key.  Lets the server
 * read a large value straight into a record.  max_body bounds
 * wire_body_len() (SIZE_MAX for none); WIRE_ETOOBIG is reported before any
 * byte of the body is needed.
 */
int wire_parse_header(const uint8_t *buf, size_t len, struct wire_hdr *h,
                      size_t max_body);

/*
 * Parse one whole message (request or response) at buf.  Returns the bytes it
 * occupies (> 0), WIRE_AGAIN, or a WIRE_E* code.  Never reads past len.
 *  - Out-of-sync errors (EMAGIC, EVERSION, ETOOBIG) come as soon as they are
 *    seen; out->hdr is zeroed for EMAGIC/EVERSION and decoded for ETOOBIG,
 *    so wire_hdr_response(&rsp, &out->hdr, wire_err_status(rc)) is the reply
 *    to send before closing.
 *  - In-sync errors come only once the whole message is in the buffer, with
 *    out->hdr, out->size and the body pointers set: reply, drop out->size
 *    bytes, go on.
 * The server then applies wire_check_request() to a successfully parsed
 * request (also in sync on error).
 */
ssize_t wire_parse(const uint8_t *buf, size_t len, struct wire_msg *out,
                   size_t max_body);

/*
 * Per-opcode rules for a request (docs/protocol.md §5): which of key, value,
 * tags, item flags, CAS and expiry may or must be present.  Returns WIRE_OK
 * or an in-sync WIRE_E* code.  The server calls it after wire_parse().
 */
int wire_check_request(const struct wire_msg *m);

/* Tag i (< hdr.ntags) of a parsed message. */
struct wire_tag wire_msg_tag(const struct wire_msg *m, uint32_t i);
/* Decode n tags from raw wire bytes into out[]. */
void wire_decode_tags(const uint8_t *raw, size_t n, struct wire_tag *out);

/* true when the stream is still in sync after error rc (skip msg.size). */
bool wire_err_in_sync(int rc);
/* The status code to answer error rc with (WIRE_S_*). */
uint16_t wire_err_status(int rc);
const char *wire_strerror(int rc);
const char *wire_strstatus(uint16_t status);
const char *wire_opcode_name(uint8_t opcode); /* NULL when unknown */
bool wire_opcode_known(uint8_t opcode);

/* store.h's enum store_status -> wire status (identity on 0..10). */
static inline uint16_t wire_status_from_store(int st)
{
    return (st >= 0 && st <= WIRE_S_INVALID) ? (uint16_t)st : WIRE_S_INTERNAL;
}

/* ---- composing ------------------------------------------------------ */

/* A request header for opcode: magic, version set, everything else zero. */
void wire_hdr_request(struct wire_hdr *h, uint8_t opcode);
/* A response header to req: opcode and opaque echoed, WIRE_F_RESPONSE set,
 * status given, lengths and other fields zero. */
void wire_hdr_response(struct wire_hdr *h, const struct wire_hdr *req,
                       uint16_t status);

/* Write h as the 40-byte wire header (lengths are taken from h as given). */
void wire_encode_header(uint8_t out[WIRE_HDR_LEN], const struct wire_hdr *h);
/* Encode n tags as 8 * n bytes; returns the byte count. */
size_t wire_encode_tags(uint8_t *out, const struct wire_tag *tags, size_t n);
static inline void wire_encode_tag(uint8_t out[WIRE_TAG_LEN], int32_t tkey,
                                   int32_t tval)
{
    wire_put_u32(out, (uint32_t)tkey);
    wire_put_u32(out + 4, (uint32_t)tval);
}

/*
 * Compose a whole message into buf: header (h's ntags/klen/vlen give the
 * lengths), tags, key, value.  Returns the byte count or WIRE_ENOSPACE.  For
 * large values send the header from wire_encode_header() and the value from
 * where it lives (writev) instead.
 */
ssize_t wire_compose(uint8_t *buf, size_t cap, const struct wire_hdr *h,
                     const struct wire_tag *tags, const void *key,
                     const void *value);

#endif
