/*
 * ops.h - reply contexts of the operations (ops.c), split into begin and
 * finish halves so that the pool can start the same request on several
 * handles, drive them in one poll loop, and collect each result.  The tag
 * operations and flush are described once (struct mdci_req) and run by the
 * same code on one handle or on a pool.  Internal.
 */
#ifndef MDC_OPS_H
#define MDC_OPS_H

#include "mdc_int.h"

enum mdci_want {
    MDCI_WANT_NONE,
    MDCI_WANT_ITEM, /* record reply -> item */
    MDCI_WANT_U64,  /* value is a u64 */
    MDCI_WANT_TEXT, /* value as a NUL-terminated string */
    MDCI_WANT_KEY,  /* key as a NUL-terminated string */
};

/* One request, one reply. */
struct mdci_one {
    enum mdci_want want;
    const void *key; /* for items of replies without key */
    size_t klen;
    uint8_t opcode;
    uint32_t opaque;
    int status; /* reply status, -1 before */
    uint64_t cas;
    uint64_t u64;
    struct mdc_item *item;
    char *text;
    size_t textlen;
    bool nomem;
};

/* Multi-get batch; map (optional) maps batch position -> keys[] index. */
struct mdci_mget {
    size_t n;
    const size_t *map;
    const void *const *keys;
    const size_t *klens;
    struct mdc_item **out;
    uint32_t base;
    int first_err;
    bool nomem;
};

/* get_by_tag: records appended to out. */
struct mdci_gbt {
    struct mdc_itemset *out;
    uint32_t opaque;
    int status;
    bool nomem;
};

int mdci_one_begin(struct mdc *m, struct wire_hdr *h,
                   const struct mdc_tag *tags, size_t ntags, const void *key,
                   size_t klen, const void *value, size_t vlen,
                   struct mdci_one *c);
int mdci_one_finish(struct mdc *m, struct mdci_one *c);

int mdci_mget_begin(struct mdc *m, struct mdci_mget *c);
int mdci_mget_finish(struct mdc *m, struct mdci_mget *c);

/*
 * A tag request or a no-argument one (flush), to one handle
 * (mdci_req_run: mdc_get_by_tag(), mdc_del_by_tag(), mdc_flush(), ...) or
 * to every server of a pool at once (pool.c, fan_out()): begin composes it
 * on m into the context c, finish reads the result once the reply is in.
 */
enum mdci_req_kind {
    MDCI_REQ_GBT,    /* get_by_tag: records appended to out */
    MDCI_REQ_DBT,    /* del_by_tag: the count in c->one.u64 */
    MDCI_REQ_SIMPLE, /* op, no argument, no result */
};
struct mdci_req {
    enum mdci_req_kind kind;
    int32_t tkey; /* GBT, DBT: tkey x tvals[] */
    const int32_t *tvals;
    size_t ntvals;
    bool stale;   /* DBT: the STALE flag (mark instead of delete) */
    int64_t ttl;  /* DBT stale: the records' new expiry, 0 keeps it */
    struct mdc_itemset *out; /* GBT */
    uint8_t op;   /* SIMPLE: the opcode */
};
union mdci_req_ctx {
    struct mdci_one one; /* DBT, SIMPLE */
    struct mdci_gbt gbt; /* GBT */
};
int mdci_req_begin(struct mdc *m, const struct mdci_req *r,
                   union mdci_req_ctx *c);
int mdci_req_finish(struct mdc *m, const struct mdci_req *r,
                    union mdci_req_ctx *c);
/* begin, the exchange, finish */
int mdci_req_run(struct mdc *m, const struct mdci_req *r,
                 union mdci_req_ctx *c);

#endif
