/*
 * mcbin.c - memcached's binary protocol on plain buffers: the request
 * parser with memcached 1.6's checks of each opcode's shape, and the
 * response composers (docs/protocol-binary.md).
 */
#include "config.h"

#include "mcbin.h"

#include <string.h>

void mcbin_decode_header(const uint8_t *b, struct mcbin_hdr *h)
{
    h->magic = b[0];
    h->opcode = b[1];
    h->klen = (uint16_t)(b[2] << 8 | b[3]);
    h->extlen = b[4];
    h->datatype = b[5];
    h->status = (uint16_t)(b[6] << 8 | b[7]);
    h->bodylen = mcbin_get_u32(b + 8);
    h->opaque = mcbin_get_u32(b + 12);
    h->cas = mcbin_get_u64(b + 16);
}

void mcbin_encode_header(uint8_t *b, const struct mcbin_hdr *h)
{
    b[0] = h->magic;
    b[1] = h->opcode;
    b[2] = (uint8_t)(h->klen >> 8);
    b[3] = (uint8_t)h->klen;
    b[4] = h->extlen;
    b[5] = h->datatype;
    b[6] = (uint8_t)(h->status >> 8);
    b[7] = (uint8_t)h->status;
    mcbin_put_u32(b + 8, h->bodylen);
    /* the opaque is echoed as it came: its bytes, not a number */
    mcbin_put_u32(b + 12, h->opaque);
    mcbin_put_u64(b + 16, h->cas);
}

/* The shape memcached 1.6 accepts for each opcode. */
enum {
    K_NONE,     /* no key */
    K_NEED,     /* a key of 1..MCBIN_KEY_MAX bytes */
    K_ANY,      /* a key or none (STAT's group) */
};
enum {
    V_NONE,  /* bodylen = extlen + klen */
    V_STORE, /* a value of up to lim->max_value bytes (else TOO_LARGE) */
    V_SASL,  /* a value of up to MCBIN_SASL_MAX bytes */
};
struct shape {
    uint8_t known;
    uint8_t cmd;    /* the loud form */
    uint8_t quiet;
    uint8_t with_key;
    uint8_t ext;    /* extras required; 0xff: FLUSH's 0 or 4 */
    uint8_t key;
    uint8_t value;
};

#define S(op, c, q, k, e, ky, v) [op] = {1, c, q, k, e, ky, v}
static const struct shape shapes[0x25] = {
    S(MCBIN_OP_GET, MCBIN_OP_GET, 0, 0, 0, K_NEED, V_NONE),
    S(MCBIN_OP_GETQ, MCBIN_OP_GET, 1, 0, 0, K_NEED, V_NONE),
    S(MCBIN_OP_GETK, MCBIN_OP_GET, 0, 1, 0, K_NEED, V_NONE),
    S(MCBIN_OP_GETKQ, MCBIN_OP_GET, 1, 1, 0, K_NEED, V_NONE),
    S(MCBIN_OP_SET, MCBIN_OP_SET, 0, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_SETQ, MCBIN_OP_SET, 1, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_ADD, MCBIN_OP_ADD, 0, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_ADDQ, MCBIN_OP_ADD, 1, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_REPLACE, MCBIN_OP_REPLACE, 0, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_REPLACEQ, MCBIN_OP_REPLACE, 1, 0, 8, K_NEED, V_STORE),
    S(MCBIN_OP_APPEND, MCBIN_OP_APPEND, 0, 0, 0, K_NEED, V_STORE),
    S(MCBIN_OP_APPENDQ, MCBIN_OP_APPEND, 1, 0, 0, K_NEED, V_STORE),
    S(MCBIN_OP_PREPEND, MCBIN_OP_PREPEND, 0, 0, 0, K_NEED, V_STORE),
    S(MCBIN_OP_PREPENDQ, MCBIN_OP_PREPEND, 1, 0, 0, K_NEED, V_STORE),
    S(MCBIN_OP_DELETE, MCBIN_OP_DELETE, 0, 0, 0, K_NEED, V_NONE),
    S(MCBIN_OP_DELETEQ, MCBIN_OP_DELETE, 1, 0, 0, K_NEED, V_NONE),
    S(MCBIN_OP_INCR, MCBIN_OP_INCR, 0, 0, 20, K_NEED, V_NONE),
    S(MCBIN_OP_INCRQ, MCBIN_OP_INCR, 1, 0, 20, K_NEED, V_NONE),
    S(MCBIN_OP_DECR, MCBIN_OP_DECR, 0, 0, 20, K_NEED, V_NONE),
    S(MCBIN_OP_DECRQ, MCBIN_OP_DECR, 1, 0, 20, K_NEED, V_NONE),
    S(MCBIN_OP_QUIT, MCBIN_OP_QUIT, 0, 0, 0, K_NONE, V_NONE),
    S(MCBIN_OP_QUITQ, MCBIN_OP_QUIT, 1, 0, 0, K_NONE, V_NONE),
    S(MCBIN_OP_FLUSH, MCBIN_OP_FLUSH, 0, 0, 0xff, K_NONE, V_NONE),
    S(MCBIN_OP_FLUSHQ, MCBIN_OP_FLUSH, 1, 0, 0xff, K_NONE, V_NONE),
    S(MCBIN_OP_NOOP, MCBIN_OP_NOOP, 0, 0, 0, K_NONE, V_NONE),
    S(MCBIN_OP_VERSION, MCBIN_OP_VERSION, 0, 0, 0, K_NONE, V_NONE),
    S(MCBIN_OP_STAT, MCBIN_OP_STAT, 0, 0, 0, K_ANY, V_NONE),
    S(MCBIN_OP_VERBOSITY, MCBIN_OP_VERBOSITY, 0, 0, 4, K_NONE, V_NONE),
    S(MCBIN_OP_TOUCH, MCBIN_OP_TOUCH, 0, 0, 4, K_NEED, V_NONE),
    S(MCBIN_OP_GAT, MCBIN_OP_GAT, 0, 0, 4, K_NEED, V_NONE),
    S(MCBIN_OP_GATQ, MCBIN_OP_GAT, 1, 0, 4, K_NEED, V_NONE),
    S(MCBIN_OP_GATK, MCBIN_OP_GAT, 0, 1, 4, K_NEED, V_NONE),
    S(MCBIN_OP_GATKQ, MCBIN_OP_GAT, 1, 1, 4, K_NEED, V_NONE),
    S(MCBIN_OP_SASL_LIST, MCBIN_OP_SASL_LIST, 0, 0, 0, K_NONE, V_NONE),
    S(MCBIN_OP_SASL_AUTH, MCBIN_OP_SASL_AUTH, 0, 0, 0, K_NEED, V_SASL),
    S(MCBIN_OP_SASL_STEP, MCBIN_OP_SASL_STEP, 0, 0, 0, K_NEED, V_SASL),
};
#undef S

static const char *const op_names[0x25] = {
    [MCBIN_OP_GET] = "GET",         [MCBIN_OP_SET] = "SET",
    [MCBIN_OP_ADD] = "ADD",         [MCBIN_OP_REPLACE] = "REPLACE",
    [MCBIN_OP_DELETE] = "DELETE",   [MCBIN_OP_INCR] = "INCREMENT",
    [MCBIN_OP_DECR] = "DECREMENT",  [MCBIN_OP_QUIT] = "QUIT",
    [MCBIN_OP_FLUSH] = "FLUSH",     [MCBIN_OP_GETQ] = "GETQ",
    [MCBIN_OP_NOOP] = "NOOP",       [MCBIN_OP_VERSION] = "VERSION",
    [MCBIN_OP_GETK] = "GETK",       [MCBIN_OP_GETKQ] = "GETKQ",
    [MCBIN_OP_APPEND] = "APPEND",   [MCBIN_OP_PREPEND] = "PREPEND",
    [MCBIN_OP_STAT] = "STAT",       [MCBIN_OP_SETQ] = "SETQ",
    [MCBIN_OP_ADDQ] = "ADDQ",       [MCBIN_OP_REPLACEQ] = "REPLACEQ",
    [MCBIN_OP_DELETEQ] = "DELETEQ", [MCBIN_OP_INCRQ] = "INCREMENTQ",
    [MCBIN_OP_DECRQ] = "DECREMENTQ", [MCBIN_OP_QUITQ] = "QUITQ",
    [MCBIN_OP_FLUSHQ] = "FLUSHQ",   [MCBIN_OP_APPENDQ] = "APPENDQ",
    [MCBIN_OP_PREPENDQ] = "PREPENDQ", [MCBIN_OP_VERBOSITY] = "VERBOSITY",
    [MCBIN_OP_TOUCH] = "TOUCH",     [MCBIN_OP_GAT] = "GAT",
    [MCBIN_OP_GATQ] = "GATQ",       [MCBIN_OP_SASL_LIST] = "SASL_LIST_MECHS",
    [MCBIN_OP_SASL_AUTH] = "SASL_AUTH", [MCBIN_OP_SASL_STEP] = "SASL_STEP",
    [MCBIN_OP_GATK] = "GATK",       [MCBIN_OP_GATKQ] = "GATKQ",
};

const char *mcbin_op_name(uint8_t opcode)
{
    return opcode < sizeof(op_names) / sizeof(op_names[0])
               ? op_names[opcode]
               : NULL;
}

static ssize_t fail(struct mcbin_req *req, uint16_t status, bool close,
                    uint64_t skip)
{
    req->status = status;
    req->close = close;
    req->skip = skip;
    return MCBIN_ERROR;
}

ssize_t mcbin_parse(const void *buf, size_t len,
                    const struct mcbin_limits *lim, struct mcbin_req *req)
{
    const uint8_t *b = buf;
    const struct shape *s;
    struct mcbin_hdr *h = &req->hdr;
    uint64_t total;
    uint32_t fixed;

    memset(req, 0, sizeof(*req));
    if (len < MCBIN_HDR_LEN) {
        /* a wrong first byte need not wait for the rest of a header */
        if (len > 0 && b[0] != MCBIN_REQ) {
            h->magic = b[0];
            return fail(req, MCBIN_S_INVALID, true, 0);
        }
        req->need = MCBIN_HDR_LEN;
        return MCBIN_AGAIN;
    }
    mcbin_decode_header(b, h);
    total = MCBIN_HDR_LEN + (uint64_t)h->bodylen;
    /* out of step (a response, a text line, garbage): nothing after it
     * can be trusted to be a header */
    if (h->magic != MCBIN_REQ)
        return fail(req, MCBIN_S_INVALID, true, 0);
    /* memcached answers "unknown command" to lengths that contradict
     * each other, and closes */
    if ((uint32_t)h->klen + h->extlen > h->bodylen)
        return fail(req, MCBIN_S_UNKNOWN, true, 0);
    s = h->opcode < sizeof(shapes) / sizeof(shapes[0]) ? &shapes[h->opcode]
                                                       : NULL;
    if (s == NULL || !s->known) {
        /* answered, and its body skipped: the stream stays in step */
        if (lim != NULL && total - MCBIN_HDR_LEN > lim->max_skip)
            return fail(req, MCBIN_S_UNKNOWN, true, 0);
        return fail(req, MCBIN_S_UNKNOWN, false, total);
    }
    req->cmd = s->cmd;
    req->quiet = s->quiet;
    req->with_key = s->with_key;
    /* the shape: extras, key and value as the opcode wants them, else
     * "invalid arguments" and close, as memcached does */
    if (s->ext == 0xff ? h->extlen != 0 && h->extlen != 4
                       : h->extlen != s->ext)
        return fail(req, MCBIN_S_INVALID, true, 0);
    if ((s->key == K_NONE && h->klen != 0) ||
        (s->key == K_NEED && h->klen == 0) || h->klen > MCBIN_KEY_MAX)
        return fail(req, MCBIN_S_INVALID, true, 0);
    fixed = (uint32_t)h->extlen + h->klen;
    req->vlen = h->bodylen - fixed;
    if (s->value == V_NONE && req->vlen != 0)
        return fail(req, MCBIN_S_INVALID, true, 0);
    if (s->value == V_SASL && req->vlen > MCBIN_SASL_MAX)
        return fail(req, MCBIN_S_INVALID, true, 0);
    if (s->value == V_STORE && lim != NULL && req->vlen > lim->max_value) {
        /* refused before it is read; the key is wanted (the record it
         * would have replaced goes, as memcached's set does), the value
         * is skipped as it streams in, or the connection closed when it
         * claims more than anyone would send by mistake */
        if (len < MCBIN_HDR_LEN + fixed) {
            req->need = MCBIN_HDR_LEN + fixed;
            return MCBIN_AGAIN;
        }
        req->key = b + MCBIN_HDR_LEN + h->extlen;
        req->klen = h->klen;
        return fail(req, MCBIN_S_TOO_LARGE,
                    total - MCBIN_HDR_LEN > lim->max_skip, total);
    }
    if (len < total) {
        req->need = (size_t)total;
        return MCBIN_AGAIN;
    }
    b += MCBIN_HDR_LEN;
    switch (h->extlen) {
    case 4: /* TOUCH, GAT*: exptime; FLUSH: delay; VERBOSITY: level */
        req->exptime = mcbin_get_u32(b);
        req->level = req->exptime;
        req->has_exptime = true;
        break;
    case 8: /* SET, ADD, REPLACE: flags, exptime */
        req->flags = mcbin_get_u32(b);
        req->exptime = mcbin_get_u32(b + 4);
        break;
    case 20: /* INCR, DECR: delta, initial, exptime */
        req->delta = mcbin_get_u64(b);
        req->initial = mcbin_get_u64(b + 8);
        req->exptime = mcbin_get_u32(b + 16);
        break;
    default: break;
    }
    req->key = h->klen > 0 ? b + h->extlen : NULL;
    req->klen = h->klen;
    req->value = b + fixed;
    return (ssize_t)total;
}

const char *mcbin_status_text(uint16_t status)
{
    switch (status) {
    case MCBIN_S_NOT_FOUND: return "Not found";
    case MCBIN_S_EXISTS: return "Data exists for key.";
    case MCBIN_S_TOO_LARGE: return "Too large.";
    case MCBIN_S_INVALID: return "Invalid arguments";
    case MCBIN_S_NOT_STORED: return "Not stored.";
    case MCBIN_S_NON_NUMERIC:
        return "Non-numeric server-side value for incr or decr";
    case MCBIN_S_AUTH_ERROR: return "Auth failure.";
    case MCBIN_S_UNKNOWN: return "Unknown command";
    case MCBIN_S_NO_MEMORY: return "Out of memory";
    default: return "";
    }
}

void mcbin_response(uint8_t *out, const struct mcbin_hdr *req,
                    uint16_t status, uint8_t extlen, uint16_t klen,
                    uint32_t vlen, uint64_t cas)
{
    struct mcbin_hdr h;

    h.magic = MCBIN_RES;
    h.opcode = req->opcode;
    h.klen = klen;
    h.extlen = extlen;
    h.datatype = 0;
    h.status = status;
    h.bodylen = (uint32_t)extlen + klen + vlen;
    h.opaque = req->opaque;
    h.cas = cas;
    mcbin_encode_header(out, &h);
}

size_t mcbin_error_len(uint16_t status)
{
    return MCBIN_HDR_LEN + strlen(mcbin_status_text(status));
}

size_t mcbin_error(uint8_t *out, const struct mcbin_hdr *req,
                   uint16_t status)
{
    const char *t = mcbin_status_text(status);
    size_t n = strlen(t);

    mcbin_response(out, req, status, 0, 0, (uint32_t)n, 0);
    memcpy(out + MCBIN_HDR_LEN, t, n);
    return MCBIN_HDR_LEN + n;
}

size_t mcbin_request(uint8_t *out, uint8_t opcode, const void *extras,
                     uint8_t extlen, const void *key, uint16_t klen,
                     const void *value, uint32_t vlen, uint32_t opaque,
                     uint64_t cas)
{
    struct mcbin_hdr h = {MCBIN_REQ, opcode, klen, extlen, 0, 0,
                          (uint32_t)extlen + klen + vlen, opaque, cas};
    uint8_t *p = out + MCBIN_HDR_LEN;

    mcbin_encode_header(out, &h);
    if (extlen > 0)
        memcpy(p, extras, extlen);
    p += extlen;
    if (klen > 0)
        memcpy(p, key, klen);
    p += klen;
    if (vlen > 0)
        memcpy(p, value, vlen);
    return MCBIN_HDR_LEN + (size_t)extlen + klen + vlen;
}
