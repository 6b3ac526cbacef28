/*
 * mctext.c - the memcached text protocol parser and reply composer
 * (mctext.h, docs/protocol-text.md).  Lines are split on spaces as
 * memcached does; numbers are strict decimals; every error carries
 * memcached's own wording and says how many bytes to discard so that the
 * stream stays in sync (a rejected storage command's data block is
 * discarded whenever its length is known, so value bytes never run as
 * commands).
 */
#include "config.h"

#include "mctext.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct tok {
    const char *p;
    uint32_t n;
};

static const struct {
    const char *name;
    enum mctext_cmd cmd;
} mct_cmds[] = {
    {"get", MCT_GET},
    {"gets", MCT_GETS},
    {"set", MCT_SET},
    {"mg", MCT_MG},
    {"ms", MCT_MS},
    {"delete", MCT_DELETE},
    {"incr", MCT_INCR},
    {"decr", MCT_DECR},
    {"gat", MCT_GAT},
    {"gats", MCT_GATS},
    {"add", MCT_ADD},
    {"replace", MCT_REPLACE},
    {"append", MCT_APPEND},
    {"prepend", MCT_PREPEND},
    {"cas", MCT_CAS},
    {"touch", MCT_TOUCH},
    {"md", MCT_MD},
    {"ma", MCT_MA},
    {"mn", MCT_MN},
    {"me", MCT_ME},
    {"flush_all", MCT_FLUSH_ALL},
    {"stats", MCT_STATS},
    {"version", MCT_VERSION},
    {"verbosity", MCT_VERBOSITY},
    {"quit", MCT_QUIT},
    {"cache_memlimit", MCT_CACHE_MEMLIMIT},
    {"shutdown", MCT_SHUTDOWN},
    {"tset", MCT_TSET},
    {"tget", MCT_TGET},
    {"tgets", MCT_TGETS},
    {"tdel", MCT_TDEL},
    {"tpush", MCT_TPUSH},
    {"tpop", MCT_TPOP},
    {"dump", MCT_DUMP},
    {"lru_crawler", MCT_LRU_CRAWLER},
    {"watch", MCT_WATCH},
};

const char *mctext_cmd_name(enum mctext_cmd cmd)
{
    size_t i;

    for (i = 0; i < sizeof(mct_cmds) / sizeof(mct_cmds[0]); i++)
        if (mct_cmds[i].cmd == cmd)
            return mct_cmds[i].name;
    return "?";
}

static enum mctext_cmd cmd_lookup(const struct tok *t)
{
    size_t i;

    for (i = 0; i < sizeof(mct_cmds) / sizeof(mct_cmds[0]); i++) {
        const char *s = mct_cmds[i].name;
        if (s[0] == t->p[0] && strlen(s) == t->n && memcmp(s, t->p, t->n) == 0)
            return mct_cmds[i].cmd;
    }
    return MCT_NONE;
}

/* ---- tokens and numbers ------------------------------------------------ */

/*
 * Split [p, end) on spaces into at most max tokens.  *more is where a
 * token beyond max starts, or NULL when the line had no more.
 */
static unsigned tokenize(const char *p, const char *end, struct tok *t,
                         unsigned max, const char **more)
{
    unsigned n = 0;

    *more = NULL;
    for (;;) {
        const char *s;

        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        if (n == max) {
            *more = p;
            break;
        }
        s = p;
        while (p < end && *p != ' ')
            p++;
        t[n].p = s;
        t[n].n = (uint32_t)(p - s);
        n++;
    }
    return n;
}

static bool tok_is(const struct tok *t, const char *s)
{
    size_t n = strlen(s);

    return t->n == n && memcmp(t->p, s, n) == 0;
}

/* Strict unsigned decimal: digits only, no sign, no overflow. */
static bool parse_u64(const char *p, uint32_t n, uint64_t *out)
{
    uint64_t v = 0;
    uint32_t i;

    if (n == 0 || n > 20)
        return false;
    for (i = 0; i < n; i++) {
        unsigned d = (unsigned char)p[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_u32(const char *p, uint32_t n, uint32_t *out)
{
    uint64_t v;

    if (!parse_u64(p, n, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool parse_i64(const char *p, uint32_t n, int64_t *out)
{
    uint64_t v;
    bool neg = n > 0 && p[0] == '-';

    if (!parse_u64(p + neg, n - neg, &v))
        return false;
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool parse_i32(const char *p, uint32_t n, int32_t *out)
{
    int64_t v;

    if (!parse_i64(p, n, &v) || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

static bool tok_u64(const struct tok *t, uint64_t *v)
{
    return parse_u64(t->p, t->n, v);
}
static bool tok_u32(const struct tok *t, uint32_t *v)
{
    return parse_u32(t->p, t->n, v);
}
static bool tok_i64(const struct tok *t, int64_t *v)
{
    return parse_i64(t->p, t->n, v);
}
static bool tok_i32(const struct tok *t, int32_t *v)
{
    return parse_i32(t->p, t->n, v);
}

/* Standard base64 with padding; -1 unless it decodes to 1..cap bytes. */
static int b64_decode(const char *in, uint32_t n, char *out, uint32_t cap)
{
    uint32_t i, o = 0;

    if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap + 2)
        return -1;
    for (i = 0; i < n; i += 4) {
        uint32_t acc = 0;
        int j, pad = 0;

        for (j = 0; j < 4; j++) {
            unsigned char c = (unsigned char)in[i + j];
            int v;

            if (c >= 'A' && c <= 'Z')
                v = c - 'A';
            else if (c >= 'a' && c <= 'z')
                v = c - 'a' + 26;
            else if (c >= '0' && c <= '9')
                v = c - '0' + 52;
            else if (c == '+')
                v = 62;
            else if (c == '/')
                v = 63;
            else if (c == '=' && i + 4 == n && j >= 2)
                v = -1;
            else
                return -1;
            if (v < 0)
                pad++;
            else if (pad > 0)
                return -1; /* data after padding */
            acc = acc << 6 | (uint32_t)(v < 0 ? 0 : v);
        }
        for (j = 0; j < 3 - pad; j++) {
            if (o == cap)
                return -1;
            out[o++] = (char)(acc >> (16 - 8 * j));
        }
    }
    return o == 0 ? -1 : (int)o;
}

/* ---- lists: keys, tags, tag values --------------------------------------- */

/* Count the keys of [p, end); 0 when one is not a valid key. */
static uint32_t count_keys(const char *p, const char *end)
{
    uint32_t n = 0;

    for (;;) {
        const char *s;

        while (p < end && *p == ' ')
            p++;
        if (p == end)
            return n;
        s = p;
        while (p < end && *p != ' ')
            p++;
        if (!mctext_key_ok(s, (uint32_t)(p - s)))
            return 0;
        n++;
    }
}

/* Count "tk:tv[,tk:tv...]"; 0 when malformed, *bad then the element (a
 * tk:tv between commas) that is wrong. */
static uint32_t count_tags(const char *p, const char *end, struct tok *bad)
{
    uint32_t n = 0;

    for (;;) {
        const char *e = memchr(p, ',', (size_t)(end - p));
        const char *c;
        int32_t v;

        if (e == NULL)
            e = end;
        c = memchr(p, ':', (size_t)(e - p));
        bad->p = p;
        bad->n = (uint32_t)(e - p);
        if (c == NULL || !parse_i32(p, (uint32_t)(c - p), &v) ||
            !parse_i32(c + 1, (uint32_t)(e - c - 1), &v))
            return 0;
        n++;
        if (e == end)
            return n;
        p = e + 1;
        if (p == end) { /* a trailing comma: an empty element */
            bad->p = e;
            bad->n = 1;
            return 0;
        }
    }
}

/* Count space-separated signed 32-bit values; 0 when one is malformed
 * (*bad is that one). */
static uint32_t count_tvals(const char *p, const char *end, struct tok *bad)
{
    uint32_t n = 0;

    for (;;) {
        const char *s;
        int32_t v;

        while (p < end && *p == ' ')
            p++;
        if (p == end)
            return n;
        s = p;
        while (p < end && *p != ' ')
            p++;
        if (!parse_i32(s, (uint32_t)(p - s), &v)) {
            bad->p = s;
            bad->n = (uint32_t)(p - s);
            return 0;
        }
        n++;
    }
}

void mctext_iter_init(struct mctext_iter *it, const struct mctext_req *req)
{
    it->p = req->list;
    it->end = req->list != NULL ? req->list + req->listlen : NULL;
}

bool mctext_next_key(struct mctext_iter *it, const char **key, uint32_t *klen)
{
    const char *p = it->p;

    while (p < it->end && *p == ' ')
        p++;
    if (p == it->end) {
        it->p = p;
        return false;
    }
    *key = p;
    while (p < it->end && *p != ' ')
        p++;
    *klen = (uint32_t)(p - *key);
    it->p = p;
    return true;
}

bool mctext_next_tag(struct mctext_iter *it, int32_t *tkey, int32_t *tval)
{
    const char *c, *e;

    if (it->p >= it->end)
        return false;
    c = memchr(it->p, ':', (size_t)(it->end - it->p));
    if (c == NULL)
        return false;
    e = memchr(c, ',', (size_t)(it->end - c));
    if (e == NULL)
        e = it->end;
    if (!parse_i32(it->p, (uint32_t)(c - it->p), tkey) ||
        !parse_i32(c + 1, (uint32_t)(e - c - 1), tval))
        return false;
    it->p = e < it->end ? e + 1 : e;
    return true;
}

bool mctext_next_tval(struct mctext_iter *it, int32_t *tval)
{
    const char *key;
    uint32_t n;

    if (!mctext_next_key(it, &key, &n))
        return false;
    return parse_i32(key, n, tval);
}

/* ---- the parser -------------------------------------------------------- */

static ssize_t fail(struct mctext_req *req, const char *err, uint64_t skip)
{
    req->err = err;
    req->skip = skip;
    return MCTEXT_ERROR;
}

/* A tag command's token its grammar does not allow: an error naming it. */
static ssize_t fail_tok(struct mctext_req *req, const struct tok *t,
                        uint64_t skip)
{
    char shown[MCTEXT_TOKEN_SHOWN + 4];
    uint32_t i, n = t->n > MCTEXT_TOKEN_SHOWN ? MCTEXT_TOKEN_SHOWN : t->n;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t->p[i];
        shown[i] = c < ' ' || c >= 0x7f || c == '\'' ? '?' : (char)c;
    }
    if (n < t->n) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }
    shown[n] = '\0';
    snprintf(req->errbuf, sizeof(req->errbuf), MCTEXT_E_TOKEN_FMT, shown);
    return fail(req, req->errbuf, skip);
}

/* The longest line the command starting at b may send: long for key and
 * tag lists, memcached's 2048 bytes otherwise. */
size_t mctext_line_limit(const void *buf, size_t len)
{
    const char *b = buf;
    static const char *const longs[] = {"get ",  "gets ",  "gat ",  "gats ",
                                        "tget ", "tgets ", "tdel ", "tset "};
    size_t i;

    while (len > 0 && *b == ' ') {
        b++;
        len--;
    }
    if (len == 0 || (*b != 'g' && *b != 't'))
        return MCTEXT_LINE_MAX; /* every long one starts with g or t */
    for (i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
        size_t n = strlen(longs[i]);
        if (len >= n && memcmp(b, longs[i], n) == 0)
            return MCTEXT_LONG_LINE_MAX;
    }
    return MCTEXT_LINE_MAX;
}

/* The data block after the line: "<vlen bytes>\r\n". */
static ssize_t data_block(const char *b, size_t len,
                          const struct mctext_limits *lim,
                          struct mctext_req *req)
{
    uint64_t total = req->linelen + (uint64_t)req->vlen + 2;

    if (req->vlen > lim->max_value)
        return fail(req, MCTEXT_E_TOO_LARGE, total);
    if (len < total) {
        req->need = (size_t)total;
        return MCTEXT_AGAIN;
    }
    if (b[total - 2] != '\r' || b[total - 1] != '\n')
        return fail(req, MCTEXT_E_DATA, total);
    req->value = (const uint8_t *)b + req->linelen;
    return (ssize_t)total;
}

/* set/add/replace/append/prepend <key> <flags> <exptime> <bytes>
 * [noreply]; cas ... <bytes> <cas unique> [noreply]; tset ... <bytes>
 * <tags> [noreply]. */
static ssize_t parse_storage(const char *b, size_t len,
                             const struct mctext_limits *lim,
                             struct mctext_req *req, const struct tok *t,
                             unsigned n)
{
    unsigned want = req->cmd == MCT_CAS || req->cmd == MCT_TSET ? 6 : 5;
    bool tagged = req->cmd == MCT_TSET;
    uint64_t v, swallow;
    struct tok bad;

    if (n < want || (n > want + 1 && !tagged))
        return fail(req, MCTEXT_R_ERROR, req->linelen);
    req->noreply = n >= want + 1 && tok_is(&t[want], "noreply");
    if (!tok_u64(&t[4], &v) || v > MCTEXT_BYTES_MAX)
        return tagged && tok_u64(&t[4], &v) == false
                   ? fail_tok(req, &t[4], req->linelen)
                   : fail(req, MCTEXT_E_FORMAT, req->linelen);
    req->vlen = (uint32_t)v;
    swallow = req->linelen + v + 2;
    /* tset: every token after the tags must be "noreply" (a space inside
     * the tag list would otherwise drop the tags after it) */
    if (tagged && n > want && (!req->noreply || n > want + 1))
        return fail_tok(req, &t[req->noreply ? want + 1 : want], swallow);
    req->key = t[1].p;
    req->klen = t[1].n;
    if (tagged) {
        if (!mctext_key_ok(t[1].p, t[1].n))
            return fail_tok(req, &t[1], swallow);
        if (!tok_u32(&t[2], &req->flags))
            return fail_tok(req, &t[2], swallow);
        if (!tok_i64(&t[3], &req->exptime))
            return fail_tok(req, &t[3], swallow);
    }
    if (!mctext_key_ok(t[1].p, t[1].n) || !tok_u32(&t[2], &req->flags) ||
        !tok_i64(&t[3], &req->exptime))
        return fail(req, MCTEXT_E_FORMAT, swallow);
    if (req->cmd == MCT_CAS && !tok_u64(&t[5], &req->cas))
        return fail(req, MCTEXT_E_FORMAT, swallow);
    if (tagged) {
        req->list = t[5].p;
        req->listlen = t[5].n;
        req->nlist = count_tags(t[5].p, t[5].p + t[5].n, &bad);
        if (req->nlist == 0)
            return fail_tok(req, &bad, swallow);
    }
    return data_block(b, len, lim, req);
}

/* tpush <tkey> <tval> <flags> <exptime> <bytes> [noreply] */
static ssize_t parse_tpush(const char *b, size_t len,
                           const struct mctext_limits *lim,
                           struct mctext_req *req, const struct tok *t,
                           unsigned n)
{
    uint64_t v, swallow;

    if (n < 6)
        return fail(req, MCTEXT_R_ERROR, req->linelen);
    req->noreply = n >= 7 && tok_is(&t[6], "noreply");
    if (!tok_u64(&t[5], &v) || v > MCTEXT_BYTES_MAX)
        return fail_tok(req, &t[5], req->linelen);
    req->vlen = (uint32_t)v;
    swallow = req->linelen + v + 2;
    if (n > 6 && (!req->noreply || n > 7))
        return fail_tok(req, &t[req->noreply ? 7 : 6], swallow);
    if (!tok_i32(&t[1], &req->tkey))
        return fail_tok(req, &t[1], swallow);
    if (!tok_i32(&t[2], &req->tval))
        return fail_tok(req, &t[2], swallow);
    if (!tok_u32(&t[3], &req->flags))
        return fail_tok(req, &t[3], swallow);
    if (!tok_i64(&t[4], &req->exptime))
        return fail_tok(req, &t[4], swallow);
    return data_block(b, len, lim, req);
}

/* get/gets <key>*; gat/gats <exptime> <key>* */
static ssize_t parse_retrieval(struct mctext_req *req, const char *p,
                               const char *end)
{
    struct tok t[2];
    const char *more;
    unsigned fixed = req->cmd == MCT_GAT || req->cmd == MCT_GATS ? 2 : 1;
    unsigned n = tokenize(p, end, t, fixed, &more);

    if (n < fixed || (more == NULL && fixed == 1))
        return fail(req, MCTEXT_R_ERROR, req->linelen);
    if (fixed == 2 && !tok_i64(&t[1], &req->exptime))
        return fail(req, MCTEXT_E_EXPTIME, req->linelen);
    if (more == NULL) { /* gat without keys: END, as memcached */
        req->list = end;
        return (ssize_t)req->linelen;
    }
    req->list = more;
    req->listlen = (size_t)(end - more);
    req->nlist = count_keys(more, end);
    if (req->nlist == 0)
        return fail(req, MCTEXT_E_FORMAT, req->linelen);
    req->key = more;
    req->klen = 0;
    while (more + req->klen < end && more[req->klen] != ' ')
        req->klen++;
    return (ssize_t)req->linelen;
}

/*
 * tdel's stale mode: "I" and "T<ttl>" after the tvals, in either order,
 * each once, T only with I (as md's).  Returns where the tvals end; *bad
 * gets a token the grammar does not allow (bad->p NULL: none).
 */
static const char *tdel_flags(struct mctext_req *req, const char *more,
                              const char *end, struct tok *bad)
{
    struct tok ttok = {NULL, 0};

    bad->p = NULL;
    for (;;) {
        const char *q = end, *s;

        while (q > more && q[-1] == ' ')
            q--;
        s = q;
        while (s > more && s[-1] != ' ')
            s--;
        /* the first token is a tval (count_tvals names it if not) */
        if (s == q || s == more || (*s != 'I' && *s != 'T'))
            break;
        if (*s == 'I' && q - s == 1 && !req->stale) {
            req->stale = true;
        } else if (*s == 'T' && !req->stale_ttl &&
                   parse_i64(s + 1, (uint32_t)(q - s - 1), &req->exptime)) {
            req->stale_ttl = true;
            ttok.p = s;
            ttok.n = (uint32_t)(q - s);
        } else {
            bad->p = s;
            bad->n = (uint32_t)(q - s);
            return end;
        }
        end = s;
    }
    if (req->stale_ttl && !req->stale)
        *bad = ttok;
    return end;
}

/* tget/tgets <tkey> <tval>+; tdel <tkey> <tval>+ [I [T<ttl>]] [noreply] */
static ssize_t parse_tag_list(struct mctext_req *req, const char *p,
                              const char *end)
{
    struct tok t[2], bad;
    const char *more;
    unsigned n = tokenize(p, end, t, 2, &more);

    if (n < 2 || more == NULL)
        return fail(req, MCTEXT_R_ERROR, req->linelen);
    if (req->cmd == MCT_TDEL) {
        const char *q = end;

        while (q > more && q[-1] == ' ')
            q--;
        if (q - more >= 8 && memcmp(q - 7, "noreply", 7) == 0 && q[-8] == ' ') {
            req->noreply = true;
            end = q - 7;
        }
        end = tdel_flags(req, more, end, &bad);
        if (bad.p != NULL)
            return fail_tok(req, &bad, req->linelen);
    }
    if (!tok_i32(&t[1], &req->tkey))
        return fail_tok(req, &t[1], req->linelen);
    req->list = more;
    req->listlen = (size_t)(end - more);
    bad.p = more;
    bad.n = (uint32_t)(end - more);
    req->nlist = count_tvals(more, end, &bad);
    if (req->nlist == 0)
        return fail_tok(req, &bad, req->linelen);
    return (ssize_t)req->linelen;
}

/*
 * The meta flags memcached 1.6.18 accepts: one set, shared by mg, ms, md
 * and ma (memcached parses them all before it knows the command), each
 * command giving meaning to those that concern it and ignoring the rest
 * (`mg k C5` reads as `mg k`, `ms k 2 MA N60` appends or answers NS).
 * The flags only the newer protocol.txt documents (E, x, S) are refused,
 * as memcached 1.6.18 refuses them (docs/protocol-text.md, section 4).
 */
#define META_FLAGS_1618 "bNTRlOPLkstcfvhuqFCMJDI"

/* Which meta flags a command answers, and the wording of its errors. */
struct meta_rules {
    const char *ret;   /* flags answered with a token */
    const char *e_all; /* every flag error worded so (md, ma), or NULL */
    const char *e_mode; /* bad M mode */
};

static const struct meta_rules *meta_rules_of(enum mctext_cmd cmd)
{
    static const struct meta_rules mg = {"cfhklOst", NULL, NULL};
    static const struct meta_rules ms = {"ckO", NULL, MCTEXT_E_MS_MODE};
    static const struct meta_rules md = {"kO", MCTEXT_E_INVALID_DUP, NULL};
    static const struct meta_rules ma = {"ctkO", MCTEXT_E_INVALID_DUP,
                                         MCTEXT_E_MA_MODE};

    switch (cmd) {
    case MCT_MG: return &mg;
    case MCT_MS: return &ms;
    case MCT_MD: return &md;
    default: return &ma;
    }
}

static const char *meta_key(struct mctext_req *req, const struct tok *k);

/*
 * The flags of mg, ms, md or ma; NULL or the error line.  memcached's
 * order of errors: a repeated or unknown flag answers at once; a bad
 * token (or key encoding) is noted and the last one noted wins once every
 * flag is read (a bad F keeps the one before, or the command's default);
 * then a bad mode, then an opaque too long.  md and ma word every flag
 * error alike.
 */
static const char *meta_flags(struct mctext_req *req, const struct tok *t,
                              unsigned n, const struct tok *key)
{
    const struct meta_rules *r = meta_rules_of(req->cmd);
    struct mctext_meta *m = &req->meta;
    const char *err = NULL;
    bool olong = false, seen_b = false;
    uint64_t seen_pl = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        char c = t[i].p[0];
        const char *arg = t[i].p + 1;
        uint32_t alen = t[i].n - 1;
        uint64_t bit;

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
            /* memcached: bytes above 126 are duplicates, others unknown */
            if ((unsigned char)c >= 127)
                return r->e_all ? r->e_all : MCTEXT_E_DUP_FLAG;
            return r->e_all ? r->e_all : MCTEXT_E_INVALID_FLAG;
        }
        bit = MCTEXT_MF(c);
        if ((m->flags | seen_pl) & bit)
            return r->e_all ? r->e_all : MCTEXT_E_DUP_FLAG;
        if (strchr(META_FLAGS_1618, c) == NULL)
            return r->e_all ? r->e_all : MCTEXT_E_INVALID_FLAG;
        if (c == 'P' || c == 'L') {
            seen_pl |= bit; /* proxy hints: ignored, as memcached does */
            continue;
        }
        m->flags |= bit;
        if (strchr(r->ret, c) != NULL)
            m->ret[m->nret++] = c;
        switch (c) {
        case 'b':
            seen_b = true;
            if (meta_key(req, key) != NULL)
                err = MCTEXT_E_KEY_DECODE;
            break;
        case 'O':
            if (alen > MCTEXT_OPAQUE_MAX)
                olong = true;
            m->opaque = arg;
            m->olen = (uint8_t)(alen > 255 ? 255 : alen);
            break;
        case 'T':
            if (!parse_i64(arg, alen, &m->ttl))
                err = MCTEXT_E_BAD_TOKEN;
            break;
        case 'C':
            if (!parse_u64(arg, alen, &m->cas))
                err = MCTEXT_E_BAD_TOKEN;
            break;
        case 'F':
            if (!parse_u32(arg, alen, &m->cflags) && err == NULL)
                err = MCTEXT_E_FORMAT;
            break;
        case 'N':
            if (!parse_i64(arg, alen, &m->vivify))
                err = MCTEXT_E_BAD_TOKEN;
            break;
        case 'R':
            if (!parse_i64(arg, alen, &m->recache))
                err = MCTEXT_E_BAD_TOKEN;
            m->recache_after_touch = (m->flags & MCTEXT_MF('T')) != 0;
            break;
        case 'J':
            if (!parse_u64(arg, alen, &m->initial))
                err = MCTEXT_E_INITIAL;
            break;
        case 'D':
            if (!parse_u64(arg, alen, &m->delta))
                err = MCTEXT_E_DELTA_VALUE;
            break;
        case 'M':
            if (alen != 1)
                err = MCTEXT_E_M_LEN;
            else
                m->mode = arg[0];
            break;
        default: break;
        }
    }
    if (err != NULL)
        return r->e_all ? r->e_all : err;
    if (!seen_b && (err = meta_key(req, key)) != NULL)
        return err;
    /* the mode: ms and ma check it, mg and md ignore it */
    if (req->cmd == MCT_MS && m->mode != 0 && strchr("SEAPR", m->mode) == NULL)
        return r->e_mode;
    if (req->cmd == MCT_MA && m->mode != 0) {
        if (m->mode == '+')
            m->mode = 'I';
        else if (m->mode == '-')
            m->mode = 'D';
        else if (m->mode != 'I' && m->mode != 'D')
            return r->e_mode;
    }
    if (req->cmd != MCT_MA && req->cmd != MCT_MS)
        m->mode = 0; /* meaningless here */
    if (olong)
        return MCTEXT_E_OPAQUE;
    return NULL;
}

/* The key of a meta command: plain, or base64 with flag b. */
static const char *meta_key(struct mctext_req *req, const struct tok *k)
{
    req->meta.rawkey = k->p;
    req->meta.rawklen = k->n;
    if (req->meta.flags & MCTEXT_MF('b')) {
        int n = k->n > 4 * ((MCTEXT_KEY_MAX + 2) / 3)
                    ? -1
                    : b64_decode(k->p, k->n, req->keybuf, MCTEXT_KEY_MAX);
        if (n < 0)
            return req->cmd == MCT_ME ? MCTEXT_E_FORMAT : MCTEXT_E_KEY_DECODE;
        req->key = req->keybuf;
        req->klen = (uint32_t)n;
        return NULL;
    }
    if (!mctext_key_ok(k->p, k->n))
        return MCTEXT_E_FORMAT;
    req->key = k->p;
    req->klen = k->n;
    return NULL;
}

/* mg|md|ma <key> <flag>*; ms <key> <datalen> <flag>*; me <key> [b]
 * (memcached's me looks at its first flag only, for b) */
static ssize_t parse_meta(const char *b, size_t len,
                          const struct mctext_limits *lim,
                          struct mctext_req *req, const struct tok *t,
                          unsigned n, bool more)
{
    unsigned first = req->cmd == MCT_MS ? 3 : 2;
    uint64_t swallow = req->linelen;
    const char *err;

    memset(&req->meta, 0, sizeof(req->meta));
    req->meta.delta = 1;
    if (n < 2)
        return fail(req, req->cmd == MCT_ME ? MCTEXT_E_FORMAT : MCTEXT_R_ERROR,
                    req->linelen);
    if (req->cmd == MCT_MS) {
        uint64_t v;

        if (n < 3 || !tok_u64(&t[2], &v) || v > MCTEXT_BYTES_MAX)
            return fail(req, MCTEXT_E_FORMAT, req->linelen);
        req->vlen = (uint32_t)v;
        swallow = req->linelen + v + 2;
    }
    if (more)
        return fail(req, MCTEXT_E_FORMAT, swallow);
    if (req->cmd == MCT_ME) {
        if (n >= 3 && tok_is(&t[2], "b"))
            req->meta.flags = MCTEXT_MF('b');
        err = meta_key(req, &t[1]);
    } else {
        err = meta_flags(req, t + first, n - first, &t[1]);
    }
    if (err != NULL)
        return fail(req, err, swallow);
    if (req->cmd == MCT_MS)
        return data_block(b, len, lim, req);
    return (ssize_t)req->linelen;
}

/* Commands with a fixed token count and no data block. */
static ssize_t parse_simple(struct mctext_req *req, const struct tok *t,
                            unsigned n, const char *rest, const char *end)
{
    bool last_noreply = n >= 2 && tok_is(&t[n - 1], "noreply");

    switch (req->cmd) {
    case MCT_DELETE:
        if (n < 2 || n > 4)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->noreply = n >= 3 && last_noreply;
        req->key = t[1].p;
        req->klen = t[1].n;
        if ((n == 3 && !last_noreply && !tok_is(&t[2], "0")) ||
            (n == 4 && (!tok_is(&t[2], "0") || !last_noreply)))
            return fail(req, MCTEXT_E_DELETE, req->linelen);
        if (!mctext_key_ok(t[1].p, t[1].n))
            return fail(req, MCTEXT_E_FORMAT, req->linelen);
        break;
    case MCT_INCR:
    case MCT_DECR:
    case MCT_TOUCH:
        if (n != 3 && n != 4)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->noreply = n == 4 && last_noreply;
        req->key = t[1].p;
        req->klen = t[1].n;
        if (!mctext_key_ok(t[1].p, t[1].n))
            return fail(req, MCTEXT_E_FORMAT, req->linelen);
        if (req->cmd == MCT_TOUCH) {
            if (!tok_i64(&t[2], &req->exptime))
                return fail(req, MCTEXT_E_EXPTIME, req->linelen);
        } else if (!tok_u64(&t[2], &req->delta)) {
            return fail(req, MCTEXT_E_DELTA, req->linelen);
        }
        break;
    case MCT_FLUSH_ALL:
        if (n > 3)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->noreply = last_noreply;
        if (n - req->noreply >= 2 && !tok_i64(&t[1], &req->exptime))
            return fail(req, MCTEXT_E_EXPTIME, req->linelen); /* memcached */
        break;
    case MCT_CACHE_MEMLIMIT:
        if (n != 2 && n != 3)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->noreply = n == 3 && last_noreply;
        if (!tok_u32(&t[1], &req->level) || (n == 3 && !last_noreply))
            return fail(req, MCTEXT_E_FORMAT, req->linelen);
        break;
    case MCT_SHUTDOWN:
        if (n > 2)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        if (n == 2) {
            if (!tok_is(&t[1], "graceful"))
                return fail(req, MCTEXT_E_SHUTDOWN_MODE, req->linelen);
            req->arg = t[1].p;
            req->arglen = t[1].n;
        }
        break;
    case MCT_DUMP:
        if (n != 1)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        break;
    case MCT_VERBOSITY:
        if (n != 2 && n != 3)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->noreply = last_noreply;
        if (!tok_u32(&t[1], &req->level) || (n == 3 && !last_noreply))
            return fail(req, MCTEXT_E_FORMAT, req->linelen);
        break;
    case MCT_STATS:
    case MCT_WATCH:
        if (n >= 2) {
            req->arg = t[1].p;
            req->arglen = (uint32_t)(end - t[1].p);
        }
        break;
    case MCT_LRU_CRAWLER: /* the subcommand is the handler's */
        if (n < 2)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        req->arg = t[1].p;
        req->arglen = (uint32_t)(end - t[1].p);
        break;
    case MCT_TPOP:
        if (n < 3)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        if (n > 3)
            return fail_tok(req, &t[3], req->linelen);
        if (!tok_i32(&t[1], &req->tkey))
            return fail_tok(req, &t[1], req->linelen);
        if (!tok_i32(&t[2], &req->tval))
            return fail_tok(req, &t[2], req->linelen);
        break;
    default: /* version, quit, mn: arguments ignored, as memcached */ break;
    }
    (void)rest;
    return (ssize_t)req->linelen;
}

/*
 * A line that looks like HTTP: a request line (an upper-case method, or a
 * last token starting "HTTP/", memcached's own test) or a Host: header.
 * A browser or a forged request must not drive the cache.
 */
static bool looks_http(const char *b, const char *end)
{
    static const char *const methods[] = {"GET",     "POST",  "PUT",
                                          "DELETE",  "HEAD",  "OPTIONS",
                                          "PATCH",   "TRACE", "CONNECT"};
    const char *p = b, *s, *q = end;
    size_t i, n;

    while (p < end && *p == ' ')
        p++;
    s = p;
    while (p < end && *p != ' ')
        p++;
    n = (size_t)(p - s);
    for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (n > 0 && s[0] == methods[i][0] && n == strlen(methods[i]) &&
            memcmp(s, methods[i], n) == 0)
            return true;
    if (n == 5 && (s[0] | 0x20) == 'h' && (s[1] | 0x20) == 'o' &&
        (s[2] | 0x20) == 's' && (s[3] | 0x20) == 't' && s[4] == ':')
        return true;
    while (q > b && q[-1] == ' ')
        q--;
    s = q;
    while (s > b && s[-1] != ' ')
        s--;
    return q - s >= 5 && memcmp(s, "HTTP/", 5) == 0;
}

ssize_t mctext_parse(const void *buf, size_t len,
                     const struct mctext_limits *lim, struct mctext_req *req)
{
    const char *b = buf;
    const char *nl, *end, *more;
    size_t scan = len < MCTEXT_LONG_LINE_MAX ? len : MCTEXT_LONG_LINE_MAX;
    struct tok t[MCTEXT_TOKENS_MAX];
    unsigned n;

    memset(req, 0, offsetof(struct mctext_req, meta));
    nl = memchr(b, '\n', scan);
    if (nl == NULL) {
        if (len >= mctext_line_limit(b, len)) {
            req->close = true;
            return fail(req, MCTEXT_E_LINE, len);
        }
        req->need = len + 1;
        return MCTEXT_AGAIN;
    }
    req->linelen = (size_t)(nl - b) + 1;
    if (req->linelen > mctext_line_limit(b, len)) {
        req->close = true;
        return fail(req, MCTEXT_E_LINE, len);
    }
    end = nl;
    if (end > b && end[-1] == '\r')
        end--;
    if (looks_http(b, end)) {
        req->close = true; /* no reply: close at once, as memcached */
        return fail(req, "", len);
    }

    n = tokenize(b, end, t, 1, &more);
    if (n == 0)
        return fail(req, MCTEXT_R_ERROR, req->linelen);
    req->cmd = cmd_lookup(&t[0]);
    switch (req->cmd) {
    case MCT_NONE: return fail(req, MCTEXT_R_ERROR, req->linelen);
    case MCT_GET:
    case MCT_GETS:
    case MCT_GAT:
    case MCT_GATS: return parse_retrieval(req, b, end);
    case MCT_TGET:
    case MCT_TGETS:
    case MCT_TDEL: return parse_tag_list(req, b, end);
    default: break;
    }
    n = tokenize(b, end, t, MCTEXT_TOKENS_MAX, &more);
    switch (req->cmd) {
    case MCT_SET:
    case MCT_ADD:
    case MCT_REPLACE:
    case MCT_APPEND:
    case MCT_PREPEND:
    case MCT_CAS:
    case MCT_TSET:
        if (more != NULL)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        return parse_storage(b, len, lim, req, t, n);
    case MCT_TPUSH:
        if (more != NULL)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        return parse_tpush(b, len, lim, req, t, n);
    case MCT_MG:
    case MCT_MS:
    case MCT_MD:
    case MCT_MA:
    case MCT_ME: return parse_meta(b, len, lim, req, t, n, more != NULL);
    default:
        if (more != NULL && req->cmd != MCT_STATS && req->cmd != MCT_VERSION &&
            req->cmd != MCT_QUIT && req->cmd != MCT_MN &&
            req->cmd != MCT_WATCH && req->cmd != MCT_LRU_CRAWLER)
            return fail(req, MCTEXT_R_ERROR, req->linelen);
        return parse_simple(req, t, n, more, end);
    }
}

/* ---- composing ------------------------------------------------------------
 */

size_t mctext_u64(char *out, uint64_t v)
{
    uint64_t t;
    size_t n = 1, i;

    if (v < 10) { /* flags 0, the common case */
        out[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100) { /* a short value's length */
        out[0] = (char)('0' + v / 10);
        out[1] = (char)('0' + v % 10);
        return 2;
    }
    for (t = v; t >= 10; t /= 10)
        n++;
    for (i = n; i-- > 0; v /= 10)
        out[i] = (char)('0' + v % 10);
    return n;
}

size_t mctext_i64(char *out, int64_t v)
{
    if (v < 0) {
        out[0] = '-';
        return 1 + mctext_u64(out + 1, 0 - (uint64_t)v);
    }
    return mctext_u64(out, (uint64_t)v);
}

/* mctext_u64() with its two short cases here, so that a VALUE line's
 * usual numbers (flags 0, a small value's length) cost no call. */
static inline size_t u64_short(char *out, uint64_t v)
{
    if (v < 10) {
        out[0] = (char)('0' + v);
        return 1;
    }
    if (v < 100) {
        out[0] = (char)('0' + v / 10);
        out[1] = (char)('0' + v % 10);
        return 2;
    }
    return mctext_u64(out, v);
}

/* memcpy() of n bytes, a key of up to 16 bytes (the usual one) in two
 * overlapping fixed-size copies instead of a call: they read and write
 * only the n bytes' span. */
static inline void copy_key(char *dst, const void *src, size_t n)
{
    const char *s = src;

    if (n >= 8 && n <= 16) {
        memcpy(dst, s, 8);
        memcpy(dst + n - 8, s + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(dst, s, 4);
        memcpy(dst + n - 4, s + n - 4, 4);
    } else {
        memcpy(dst, s, n);
    }
}

size_t mctext_value_line(char *out, const void *key, uint32_t klen,
                         uint32_t flags, uint32_t vlen, bool with_cas,
                         uint64_t cas)
{
    char *p = out;

    memcpy(p, "VALUE ", 6);
    p += 6;
    copy_key(p, key, klen);
    p += klen;
    *p++ = ' ';
    p += u64_short(p, flags);
    *p++ = ' ';
    p += u64_short(p, vlen);
    if (with_cas) {
        *p++ = ' ';
        p += mctext_u64(p, cas);
    }
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - out);
}

size_t mctext_meta_line(char *out, const char *code, int64_t vlen,
                        const struct mctext_req *req,
                        const struct mctext_meta_vals *v)
{
    const struct mctext_meta *m = &req->meta;
    char *p = out;
    unsigned i;

    p[0] = code[0];
    p[1] = code[1];
    p += 2;
    if (vlen >= 0) {
        *p++ = ' ';
        p += mctext_i64(p, vlen);
    }
    for (i = 0; i < m->nret; i++) {
        char c = m->ret[i];

        if (v == NULL && c != 'k' && c != 'O')
            continue;
        *p++ = ' ';
        *p++ = c;
        switch (c) {
        case 'k':
            memcpy(p, m->rawkey, m->rawklen);
            p += m->rawklen;
            if (m->flags & MCTEXT_MF('b')) {
                memcpy(p, " b", 2);
                p += 2;
            }
            break;
        case 'O':
            memcpy(p, m->opaque, m->olen);
            p += m->olen;
            break;
        case 'c': p += mctext_u64(p, v->cas); break;
        case 'h': *p++ = v->hit_before ? '1' : '0'; break;
        case 'l': p += mctext_u64(p, v->last); break;
        case 'f': p += mctext_u64(p, v->flags); break;
        case 's': p += mctext_u64(p, v->size); break;
        case 't': p += mctext_i64(p, v->ttl); break;
        default: break;
        }
    }
    if (v != NULL) { /* after the flags asked for, as memcached */
        if (v->pending) {
            memcpy(p, " Z", 2);
            p += 2;
        }
        if (v->stale) {
            memcpy(p, " X", 2);
            p += 2;
        }
        if (v->won) {
            memcpy(p, " W", 2);
            p += 2;
        }
    }
    *p++ = '\r';
    *p++ = '\n';
    return (size_t)(p - out);
}

void mctext_udp_frame(uint8_t *h, uint16_t request_id, uint16_t seq,
                      uint16_t total)
{
    h[0] = (uint8_t)(request_id >> 8);
    h[1] = (uint8_t)request_id;
    h[2] = (uint8_t)(seq >> 8);
    h[3] = (uint8_t)seq;
    h[4] = (uint8_t)(total >> 8);
    h[5] = (uint8_t)total;
    h[6] = h[7] = 0;
}

int mctext_udp_request(const uint8_t *d, size_t len, uint16_t *request_id)
{
    /* Header only or less, or a multi-datagram request (total != 1, which
     * memcached does not support either): not a request we answer.  The
     * sequence number and reserved field are not checked (memcached does
     * not). */
    if (len <= UDP_FRAME_HDR || d[4] != 0 || d[5] != 1)
        return -1;
    *request_id = (uint16_t)(d[0] << 8 | d[1]);
    return 0;
}
