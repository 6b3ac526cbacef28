/*
 * wire.c - parser and composer of the native binary protocol (wire.h,
 * docs/protocol.md).  Buffers only: no I/O, no allocation, no reads past the
 * length given, so the server, the C client, the tests and the fuzzer share
 * one grammar.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "wire.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#ifndef SSIZE_MAX /* POSIX <limits.h>; absent in strict C11 */
#define SSIZE_MAX PTRDIFF_MAX
#endif

#define F_RESERVED ((uint8_t) ~(WIRE_F_REQ_MASK | WIRE_F_RSP_MASK))

static bool op_is_get(uint8_t op)
{
    return op == WIRE_OP_GET || op == WIRE_OP_GETK || op == WIRE_OP_GAT ||
           op == WIRE_OP_GATK;
}

/* The flags beyond QUIET/MORE/RESPONSE, by direction and opcode. */
static bool flags_allowed(const struct wire_hdr *h)
{
    if (h->flags & WIRE_F_RESPONSE) /* W/X/Z: a get's reply only */
        return !(h->flags & WIRE_F_LEASE_STATE) || op_is_get(h->opcode);
    if (h->flags & WIRE_F_PENDING)
        return false;
    if ((h->flags & WIRE_F_LEASE) && !op_is_get(h->opcode))
        return false;
    if (h->flags & WIRE_F_STALE)
        return h->opcode == WIRE_OP_DEL_BY_TAG ||
               h->opcode == WIRE_OP_DELETE || h->opcode == WIRE_OP_SET ||
               h->opcode == WIRE_OP_CAS;
    return true;
}

int wire_parse_header(const uint8_t *buf, size_t len, struct wire_hdr *h,
                      size_t max_body)
{
    /* Report a foreign stream from its first bytes rather than waiting; the
     * header is zeroed so that a reply echoes opcode 0 and opaque 0. */
    if (len >= 1 && buf[WIRE_OFF_MAGIC] != WIRE_MAGIC) {
        memset(h, 0, sizeof(*h));
        return WIRE_EMAGIC;
    }
    if (len >= 2 && buf[WIRE_OFF_VERSION] != WIRE_VERSION) {
        memset(h, 0, sizeof(*h));
        return WIRE_EVERSION;
    }
    if (len < WIRE_HDR_LEN)
        return WIRE_AGAIN;

    h->magic = buf[WIRE_OFF_MAGIC];
    h->version = buf[WIRE_OFF_VERSION];
    h->opcode = buf[WIRE_OFF_OPCODE];
    h->flags = buf[WIRE_OFF_FLAGS];
    h->status = wire_get_u16(buf + WIRE_OFF_STATUS);
    h->klen = wire_get_u16(buf + WIRE_OFF_KLEN);
    h->ntags = wire_get_u16(buf + WIRE_OFF_NTAGS);
    h->reserved = wire_get_u16(buf + WIRE_OFF_RESERVED);
    h->vlen = wire_get_u32(buf + WIRE_OFF_VLEN);
    h->opaque = wire_get_u32(buf + WIRE_OFF_OPAQUE);
    h->iflags = wire_get_u32(buf + WIRE_OFF_IFLAGS);
    h->cas = wire_get_u64(buf + WIRE_OFF_CAS);
    h->expiry = (int64_t)wire_get_u64(buf + WIRE_OFF_EXPIRY);

    /* Out of sync first: the body bound decides before anything is kept. */
    uint64_t body = wire_body_len(h);
    if (body > max_body || body > (uint64_t)SSIZE_MAX - WIRE_HDR_LEN)
        return WIRE_ETOOBIG;

    if (!wire_opcode_known(h->opcode))
        return WIRE_EOPCODE;
    if (h->flags & F_RESERVED)
        return WIRE_EFLAGS;
    if (!flags_allowed(h))
        return WIRE_EFLAGS;
    if (h->flags & WIRE_F_RESPONSE) {
        if (h->flags & WIRE_F_QUIET)
            return WIRE_EFLAGS;
    } else {
        if (h->flags & WIRE_F_MORE)
            return WIRE_EFLAGS;
        if (h->status != 0)
            return WIRE_ESTATUS;
    }
    if (h->reserved != 0)
        return WIRE_ERESERVED;
    if (h->klen > WIRE_MAX_KEY)
        return WIRE_EKEYLEN;
    return WIRE_OK;
}

ssize_t wire_parse(const uint8_t *buf, size_t len, struct wire_msg *out,
                   size_t max_body)
{
    int rc = wire_parse_header(buf, len, &out->hdr, max_body);
    if (rc == WIRE_AGAIN || (rc < 0 && !wire_err_in_sync(rc)))
        return rc;

    size_t tagbytes = (size_t)out->hdr.ntags * WIRE_TAG_LEN;
    size_t size = WIRE_HDR_LEN + tagbytes + out->hdr.klen + out->hdr.vlen;
    out->size = size;
    out->tags = NULL;
    out->key = NULL;
    out->value = NULL;
    if (len < size)
        return WIRE_AGAIN;

    out->tags = buf + WIRE_HDR_LEN;
    out->key = out->tags + tagbytes;
    out->value = out->key + out->hdr.klen;
    if (rc < 0)
        return rc;
    return (ssize_t)size;
}

/* ---- per-opcode request rules ---------------------------------------- */

enum { K_NONE, K_REQ, K_OPT };
enum { V_NONE, V_ANY, V_U64, V_2U64 };
enum { T_NONE, T_ANY, T_ONE, T_SAME };
#define A_IFLAGS 0x01 /* item flags may be non-zero */
#define A_CAS 0x02    /* CAS may be non-zero */
#define A_CASREQ 0x04 /* CAS must be non-zero */
#define A_EXPIRY 0x08 /* expiry may be non-zero */

struct rule {
    uint8_t key, value, tags, allow;
};

static const struct rule *rule_of(uint8_t opcode)
{
    static const struct rule none = {K_NONE, V_NONE, T_NONE, 0};
    static const struct rule get = {K_REQ, V_NONE, T_NONE, 0};
    static const struct rule gat = {K_REQ, V_NONE, T_NONE, A_EXPIRY};
    static const struct rule set = {K_REQ, V_ANY, T_ANY,
                                    A_IFLAGS | A_CAS | A_EXPIRY};
    static const struct rule add = {K_REQ, V_ANY, T_ANY, A_IFLAGS | A_EXPIRY};
    static const struct rule cas = {K_REQ, V_ANY, T_ANY,
                                    A_IFLAGS | A_CAS | A_CASREQ | A_EXPIRY};
    static const struct rule append = {K_REQ, V_ANY, T_NONE, 0};
    static const struct rule del = {K_REQ, V_NONE, T_NONE, A_CAS};
    static const struct rule arith = {K_REQ, V_U64, T_NONE, 0};
    static const struct rule cmpset = {K_REQ, V_2U64, T_NONE, 0};
    static const struct rule byref = {K_NONE, V_NONE, T_SAME, 0};
    static const struct rule push = {K_NONE, V_ANY, T_ONE,
                                     A_IFLAGS | A_EXPIRY};
    static const struct rule pop = {K_NONE, V_NONE, T_ONE, 0};
    static const struct rule stats = {K_OPT, V_NONE, T_NONE, 0};
    static const struct rule auth = {K_REQ, V_ANY, T_NONE, 0};

    switch (opcode) {
    case WIRE_OP_NOOP:
    case WIRE_OP_FLUSH:
    case WIRE_OP_VERSION:
    case WIRE_OP_QUIT:
    case WIRE_OP_DUMP:
        return &none;
    case WIRE_OP_GET:
    case WIRE_OP_GETK:
    case WIRE_OP_ATOMIC_READ_CLEAR:
        return &get;
    case WIRE_OP_GAT:
    case WIRE_OP_GATK:
    case WIRE_OP_TOUCH:
        return &gat;
    case WIRE_OP_SET:
        return &set;
    case WIRE_OP_ADD:
    case WIRE_OP_REPLACE:
        return &add;
    case WIRE_OP_CAS:
        return &cas;
    case WIRE_OP_APPEND:
    case WIRE_OP_PREPEND:
        return &append;
    case WIRE_OP_DELETE:
        return &del;
    case WIRE_OP_INCR:
    case WIRE_OP_DECR:
    case WIRE_OP_ATOMIC_ADD:
    case WIRE_OP_ATOMIC_FETCH_ADD:
        return &arith;
    case WIRE_OP_ATOMIC_CMPSET:
        return &cmpset;
    case WIRE_OP_GET_BY_TAG:
    case WIRE_OP_DEL_BY_TAG:
        return &byref;
    case WIRE_OP_TSTACK_PUSH:
        return &push;
    case WIRE_OP_TSTACK_POP:
        return &pop;
    case WIRE_OP_STATS:
        return &stats;
    case WIRE_OP_AUTH:
        return &auth;
    default:
        return NULL;
    }
}

int wire_check_request(const struct wire_msg *m)
{
    const struct wire_hdr *h = &m->hdr;
    const struct rule *r = rule_of(h->opcode);

    if (r == NULL)
        return WIRE_EOPCODE;
    if (h->flags & WIRE_F_RESPONSE)
        return WIRE_EFLAGS;

    switch (r->key) {
    case K_NONE:
        if (h->klen != 0)
            return WIRE_EKEYLEN;
        break;
    case K_REQ:
        if (h->klen == 0)
            return WIRE_EKEYLEN;
        break;
    default:
        break;
    }

    switch (r->value) {
    case V_NONE:
        /* a LEASE get may carry its two TTLs */
        if (h->vlen != 0 &&
            !((h->flags & WIRE_F_LEASE) && h->vlen == WIRE_LEASE_VLEN))
            return WIRE_EFIELD;
        break;
    case V_U64:
        if (h->vlen != 8)
            return WIRE_EFIELD;
        break;
    case V_2U64:
        if (h->vlen != 16)
            return WIRE_EFIELD;
        break;
    default:
        break;
    }

    switch (r->tags) {
    case T_NONE:
        if (h->ntags != 0)
            return WIRE_ETAGS;
        break;
    case T_ONE:
        if (h->ntags != 1)
            return WIRE_ETAGS;
        break;
    case T_SAME:
        if (h->ntags == 0)
            return WIRE_ETAGS;
        for (uint32_t i = 1; i < h->ntags; i++)
            if (wire_get_u32(m->tags + i * WIRE_TAG_LEN) !=
                wire_get_u32(m->tags))
                return WIRE_ETAGS;
        break;
    default:
        break;
    }

    if (h->iflags != 0 && !(r->allow & A_IFLAGS))
        return WIRE_EFIELD;
    if (h->cas != 0 && !(r->allow & A_CAS))
        return WIRE_EFIELD;
    if (h->cas == 0 && (r->allow & A_CASREQ))
        return WIRE_EFIELD;
    /* a stale DEL_BY_TAG or DELETE may give the records' TTL */
    if (h->expiry != 0 && !(r->allow & A_EXPIRY) &&
        !(h->flags & WIRE_F_STALE))
        return WIRE_EFIELD;
    /* invalidate mode is a CAS store's */
    if ((h->flags & WIRE_F_STALE) && h->opcode == WIRE_OP_SET && h->cas == 0)
        return WIRE_EFIELD;
    return WIRE_OK;
}

struct wire_tag wire_msg_tag(const struct wire_msg *m, uint32_t i)
{
    struct wire_tag t;
    const uint8_t *p = m->tags + (size_t)i * WIRE_TAG_LEN;
    t.tkey = (int32_t)wire_get_u32(p);
    t.tval = (int32_t)wire_get_u32(p + 4);
    return t;
}

void wire_decode_tags(const uint8_t *raw, size_t n, struct wire_tag *out)
{
    for (size_t i = 0; i < n; i++, raw += WIRE_TAG_LEN) {
        out[i].tkey = (int32_t)wire_get_u32(raw);
        out[i].tval = (int32_t)wire_get_u32(raw + 4);
    }
}

/* ---- errors and names --------------------------------------------------- */

bool wire_err_in_sync(int rc)
{
    return rc <= WIRE_EOPCODE && rc >= WIRE_ETAGS;
}

uint16_t wire_err_status(int rc)
{
    switch (rc) {
    case WIRE_OK:
        return WIRE_S_OK;
    case WIRE_EMAGIC:
        return WIRE_S_BAD_MAGIC;
    case WIRE_EVERSION:
        return WIRE_S_BAD_VERSION;
    case WIRE_ETOOBIG:
        return WIRE_S_MSG_TOO_LARGE;
    case WIRE_EOPCODE:
        return WIRE_S_UNKNOWN_OPCODE;
    case WIRE_EKEYLEN:
        return WIRE_S_KEY_INVALID;
    case WIRE_EFLAGS:
    case WIRE_ERESERVED:
    case WIRE_ESTATUS:
    case WIRE_EFIELD:
    case WIRE_ETAGS:
        return WIRE_S_MALFORMED;
    default:
        return WIRE_S_INTERNAL;
    }
}

const char *wire_strerror(int rc)
{
    switch (rc) {
    case WIRE_OK:
        return "ok";
    case WIRE_AGAIN:
        return "incomplete message";
    case WIRE_EMAGIC:
        return "bad magic byte";
    case WIRE_EVERSION:
        return "unsupported protocol version";
    case WIRE_ETOOBIG:
        return "message body over the size limit";
    case WIRE_EOPCODE:
        return "unknown opcode";
    case WIRE_EFLAGS:
        return "reserved or misplaced header flags";
    case WIRE_ERESERVED:
        return "reserved header field not zero";
    case WIRE_ESTATUS:
        return "status not zero in a request";
    case WIRE_EKEYLEN:
        return "key length invalid for the opcode";
    case WIRE_EFIELD:
        return "field not allowed for the opcode";
    case WIRE_ETAGS:
        return "tags invalid for the opcode";
    case WIRE_ENOSPACE:
        return "output buffer too small";
    default:
        return "unknown error";
    }
}

const char *wire_strstatus(uint16_t status)
{
    switch (status) {
#define X(n, v, s)                                                             \
    case v:                                                                    \
        return s;
        WIRE_STATUSES(X)
#undef X
    default:
        return "unknown status";
    }
}

const char *wire_opcode_name(uint8_t opcode)
{
    switch (opcode) {
#define X(n, v, s)                                                             \
    case v:                                                                    \
        return s;
        WIRE_OPCODES(X)
#undef X
    default:
        return NULL;
    }
}

bool wire_opcode_known(uint8_t opcode)
{
    return wire_opcode_name(opcode) != NULL;
}

/* ---- composing ---------------------------------------------------------- */

void wire_hdr_request(struct wire_hdr *h, uint8_t opcode)
{
    memset(h, 0, sizeof(*h));
    h->magic = WIRE_MAGIC;
    h->version = WIRE_VERSION;
    h->opcode = opcode;
}

void wire_hdr_response(struct wire_hdr *h, const struct wire_hdr *req,
                       uint16_t status)
{
    memset(h, 0, sizeof(*h));
    h->magic = WIRE_MAGIC;
    h->version = WIRE_VERSION;
    h->opcode = req->opcode;
    h->flags = WIRE_F_RESPONSE;
    h->status = status;
    h->opaque = req->opaque;
}

void wire_encode_header(uint8_t out[WIRE_HDR_LEN], const struct wire_hdr *h)
{
    out[WIRE_OFF_MAGIC] = h->magic;
    out[WIRE_OFF_VERSION] = h->version;
    out[WIRE_OFF_OPCODE] = h->opcode;
    out[WIRE_OFF_FLAGS] = h->flags;
    wire_put_u16(out + WIRE_OFF_STATUS, h->status);
    wire_put_u16(out + WIRE_OFF_KLEN, h->klen);
    wire_put_u16(out + WIRE_OFF_NTAGS, h->ntags);
    wire_put_u16(out + WIRE_OFF_RESERVED, h->reserved);
    wire_put_u32(out + WIRE_OFF_VLEN, h->vlen);
    wire_put_u32(out + WIRE_OFF_OPAQUE, h->opaque);
    wire_put_u32(out + WIRE_OFF_IFLAGS, h->iflags);
    wire_put_u64(out + WIRE_OFF_CAS, h->cas);
    wire_put_u64(out + WIRE_OFF_EXPIRY, (uint64_t)h->expiry);
}

size_t wire_encode_tags(uint8_t *out, const struct wire_tag *tags, size_t n)
{
    for (size_t i = 0; i < n; i++)
        wire_encode_tag(out + i * WIRE_TAG_LEN, tags[i].tkey, tags[i].tval);
    return n * WIRE_TAG_LEN;
}

ssize_t wire_compose(uint8_t *buf, size_t cap, const struct wire_hdr *h,
                     const struct wire_tag *tags, const void *key,
                     const void *value)
{
    uint64_t size = WIRE_HDR_LEN + wire_body_len(h);
    if (size > cap || size > (uint64_t)SSIZE_MAX)
        return WIRE_ENOSPACE;

    uint8_t *p = buf;
    wire_encode_header(p, h);
    p += WIRE_HDR_LEN;
    p += wire_encode_tags(p, tags, h->ntags);
    if (h->klen) {
        memcpy(p, key, h->klen);
        p += h->klen;
    }
    if (h->vlen)
        memcpy(p, value, h->vlen);
    return (ssize_t)size;
}
