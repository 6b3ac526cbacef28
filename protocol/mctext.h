/*
 * mctext.h - memcached's text protocol (protocol.txt: the classic commands
 * and the meta commands) and mdcached's tag extension commands, parsed from
 * and composed into plain buffers.  No I/O and no allocation: the server,
 * the fuzzer and the tests share this grammar.  docs/protocol-text.md is
 * the normative description and changes with this file.
 *
 * mctext_parse() reads one request -- a command line and, for storage
 * commands, its data block -- and returns:
 *   > 0           the request is whole; that many bytes belong to it
 *   MCTEXT_AGAIN  the buffer holds only part of it; req->need is the number
 *                 of bytes (from the start of the buffer) the next try needs
 *   MCTEXT_ERROR  req->err is the reply line (memcached's wording; "" for
 *                 none: an HTTP-looking line closes silently), req->skip
 *                 the bytes to discard to stay in sync (possibly more than
 *                 the buffer holds yet: the rest of an unwanted data block),
 *                 req->close whether the stream is lost (answer, then close)
 * Pointers in the request point into the buffer, or into the request itself
 * for a base64-decoded meta key, and live as long as both.
 */
#ifndef MDC_MCTEXT_H
#define MDC_MCTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#define MCTEXT_KEY_MAX 250                 /* bytes of a key, as memcached */
#define MCTEXT_LINE_MAX 2048               /* a command line with its \r\n */
#define MCTEXT_LONG_LINE_MAX (256u * 1024) /* key and tag lists (get, tget) */
#define MCTEXT_OPAQUE_MAX 32               /* meta O(opaque) token */
#define MCTEXT_TOKENS_MAX 24               /* tokens of a line without a list */
#define MCTEXT_BYTES_MAX 2147483646u       /* <bytes> beyond: bad format */
#define MCTEXT_TOKEN_SHOWN 64              /* bytes of a token an error names */
#define MCTEXT_ERRBUF (MCTEXT_TOKEN_SHOWN + 48)

/* Room for a VALUE line of a key of klen bytes, and for a meta reply line. */
#define MCTEXT_VALUE_LINE_LEN(klen) ((size_t)(klen) + 64)
#define MCTEXT_META_LINE_MAX 512

/*
 * The end of the key starting at k: the first byte at or below ' ' or DEL
 * (protocol.txt: a key has no control character or whitespace), or end.
 * The one key scanner: the parser's key check, the server's get shortcut
 * and its prefetch of a batch's keys all call it.  Eight bytes at a time
 * while eight remain (any byte below 0x21, or equal to 0x7f, sets its top
 * bit in the test word), then byte by byte.
 */
static inline const uint8_t *mctext_key_end(const uint8_t *k,
                                            const uint8_t *end)
{
    const uint64_t ones = 0x0101010101010101ull, highs = ones << 7;
    const uint8_t *p = k;

    for (; end - p >= 8; p += 8) {
        uint64_t x, d;

        memcpy(&x, p, 8);
        d = x ^ (ones * 0x7f);
        if ((((x - ones * 0x21) & ~x) | ((d - ones) & ~d)) & highs)
            break;
    }
    while (p < end && *p > ' ' && *p != 0x7f)
        p++;
    return p;
}

/* protocol.txt: a key is 1 to MCTEXT_KEY_MAX bytes, none of them a
 * control character or whitespace. */
static inline bool mctext_key_ok(const void *k, size_t n)
{
    const uint8_t *p = k;

    return n > 0 && n <= MCTEXT_KEY_MAX && mctext_key_end(p, p + n) == p + n;
}

#define MCTEXT_AGAIN (-1)
#define MCTEXT_ERROR (-2)

enum mctext_cmd {
    MCT_NONE = 0,
    /* retrieval */
    MCT_GET,
    MCT_GETS,
    MCT_GAT,
    MCT_GATS,
    /* storage: key flags exptime bytes [cas] */
    MCT_SET,
    MCT_ADD,
    MCT_REPLACE,
    MCT_APPEND,
    MCT_PREPEND,
    MCT_CAS,
    MCT_DELETE,
    MCT_INCR,
    MCT_DECR,
    MCT_TOUCH,
    MCT_FLUSH_ALL,
    MCT_STATS,
    MCT_VERSION,
    MCT_VERBOSITY,
    MCT_QUIT,
    MCT_CACHE_MEMLIMIT, /* cache_memlimit <MiB> [noreply] */
    MCT_SHUTDOWN,       /* shutdown [graceful] */
    /* meta */
    MCT_MG,
    MCT_MS,
    MCT_MD,
    MCT_MA,
    MCT_MN,
    MCT_ME,
    /* tag extensions */
    MCT_TSET,
    MCT_TGET,
    MCT_TGETS,
    MCT_TDEL,
    MCT_TPUSH,
    MCT_TPOP,
    /* admin */
    MCT_DUMP,             /* "dump": write -f now, answer when on disk */
    MCT_LRU_CRAWLER,      /* lru_crawler <sub> [<arg>]: arg is the rest */
    MCT_WATCH,            /* watch [<type>...]: arg is the rest, or NULL */
};

/* Bit of meta flag character c ('a'-'z', 'A'-'Z') in mctext_meta.flags. */
#define MCTEXT_MF(c)                                                           \
    ((c) >= 'a' ? 1ull << ((c) - 'a') : 1ull << ((c) - 'A' + 26))

struct mctext_meta {
    uint64_t flags;              /* MCTEXT_MF() of every flag given */
    char ret[MCTEXT_TOKENS_MAX]; /* flags answered, in request order */
    uint8_t nret;
    uint8_t olen;
    char mode;          /* M: ms 'S','E','A','P','R'; ma 'I','D' */
    const char *opaque; /* O token */
    const char *rawkey; /* the key as sent (base64 text with b) */
    uint32_t rawklen;
    uint32_t cflags;  /* F */
    int64_t ttl;      /* T */
    int64_t vivify;   /* N: TTL of an auto-created item */
    int64_t recache;  /* R: win when the TTL left is below this */
    bool recache_after_touch; /* mg: T came before R (R tests the new TTL) */
    uint64_t cas;     /* C */
    uint64_t initial; /* J */
    uint64_t delta;   /* D, default 1 */
};

struct mctext_req {
    enum mctext_cmd cmd;
    bool noreply;    /* classic "noreply" (meta uses flag q) */
    bool close;      /* MCTEXT_ERROR: the stream cannot go on */
    const char *key; /* the (first) key */
    uint32_t klen;
    uint32_t nlist;   /* keys of get/gat, tags of tset, tvals */
    const char *list; /* that list as text, for mctext_iter */
    size_t listlen;
    uint32_t flags;       /* client flags */
    uint32_t vlen;        /* bytes of the data block */
    const uint8_t *value; /* the data block */
    int64_t exptime;      /* also flush_all's delay */
    uint64_t cas;         /* cas unique */
    uint64_t delta;       /* incr/decr */
    uint32_t level;       /* verbosity; cache_memlimit MiB */
    int32_t tkey, tval;   /* tget/tdel tkey; tpush/tpop tag */
    bool stale;           /* tdel I: mark stale instead of deleting */
    bool stale_ttl;       /* tdel I T<ttl>: with that expiry (exptime) */
    const char *arg;      /* stats group, or NULL */
    uint32_t arglen;
    size_t linelen;  /* the command line with its newline */
    size_t need;     /* MCTEXT_AGAIN: bytes needed in all */
    uint64_t skip;   /* MCTEXT_ERROR: bytes to discard */
    const char *err; /* MCTEXT_ERROR: reply line with \r\n (may point
                        into errbuf) */
    struct mctext_meta meta;
    char keybuf[MCTEXT_KEY_MAX]; /* a base64-decoded meta key */
    char errbuf[MCTEXT_ERRBUF];  /* an error line naming a token */
};

struct mctext_limits {
    uint32_t max_value; /* largest data block: -I, max item size */
};

ssize_t mctext_parse(const void *buf, size_t len,
                     const struct mctext_limits *lim, struct mctext_req *req);

/* The longest line (with its newline) the request starting at buf may
 * send: MCTEXT_LONG_LINE_MAX for key and tag lists, else MCTEXT_LINE_MAX.
 * A caller that scans for the newline itself (resuming where it stopped,
 * so the work stays linear in the bytes received) calls mctext_parse()
 * only once the newline is there or len has reached this limit. */
size_t mctext_line_limit(const void *buf, size_t len);

/* Name of a command as sent on the wire ("get", "mg", "tset"...). */
const char *mctext_cmd_name(enum mctext_cmd cmd);

/* Walk req->list: keys of get/gat, tk:tv pairs of tset, tvals of tget and
 * tdel.  The parser has checked every element already. */
struct mctext_iter {
    const char *p, *end;
};
void mctext_iter_init(struct mctext_iter *it, const struct mctext_req *req);
bool mctext_next_key(struct mctext_iter *it, const char **key, uint32_t *klen);
bool mctext_next_tag(struct mctext_iter *it, int32_t *tkey, int32_t *tval);
bool mctext_next_tval(struct mctext_iter *it, int32_t *tval);

/* ---- composing replies (return the bytes written) ------------------- */

/* Decimal digits of v; out needs 20 (u64) or 20 (i64) bytes. */
size_t mctext_u64(char *out, uint64_t v);
size_t mctext_i64(char *out, int64_t v);

/* "VALUE <key> <flags> <bytes>[ <cas>]\r\n"; out needs
 * MCTEXT_VALUE_LINE_LEN(klen). */
size_t mctext_value_line(char *out, const void *key, uint32_t klen,
                         uint32_t flags, uint32_t vlen, bool with_cas,
                         uint64_t cas);

/* Item facts a meta reply may carry. */
struct mctext_meta_vals {
    uint64_t cas;
    int64_t ttl; /* -1: never expires */
    uint32_t flags;
    uint32_t size;
    uint32_t last;   /* l: seconds since last access */
    bool hit_before; /* h */
    bool pending;    /* Z: another client holds the win */
    bool stale;      /* X: the record is stale */
    bool won;        /* W: this client is to recache */
};

/*
 * A meta reply line: code ("VA", "HD", "EN", "NF", "NS", "EX"), " <vlen>"
 * when vlen >= 0, then the flags the request asked back, in its order
 * (k and O always; c, f, s, t only when v is not NULL), then Z, X and W
 * as v says (memcached's order), and "\r\n".  out
 * needs MCTEXT_META_LINE_MAX bytes.
 */
size_t mctext_meta_line(char *out, const char *code, int64_t vlen,
                        const struct mctext_req *req,
                        const struct mctext_meta_vals *v);

/* Reply lines, exactly as memcached words them. */
#define MCTEXT_R_STORED "STORED\r\n"
#define MCTEXT_R_NOT_STORED "NOT_STORED\r\n"
#define MCTEXT_R_EXISTS "EXISTS\r\n"
#define MCTEXT_R_NOT_FOUND "NOT_FOUND\r\n"
#define MCTEXT_R_DELETED "DELETED\r\n"
#define MCTEXT_R_TOUCHED "TOUCHED\r\n"
#define MCTEXT_R_END "END\r\n"
#define MCTEXT_R_OK "OK\r\n"
#define MCTEXT_R_MN "MN\r\n"
#define MCTEXT_R_ERROR "ERROR\r\n"
#define MCTEXT_E_FORMAT "CLIENT_ERROR bad command line format\r\n"
#define MCTEXT_E_DATA "CLIENT_ERROR bad data chunk\r\n"
#define MCTEXT_E_LINE "CLIENT_ERROR line too long\r\n"
#define MCTEXT_E_EXPTIME "CLIENT_ERROR invalid exptime argument\r\n"
#define MCTEXT_E_DELTA "CLIENT_ERROR invalid numeric delta argument\r\n"
#define MCTEXT_E_DELETE                                                        \
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
#define MCTEXT_E_NONNUM                                                        \
    "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
#define MCTEXT_E_TOO_LARGE "SERVER_ERROR object too large for cache\r\n"
#define MCTEXT_E_NO_MEMORY "SERVER_ERROR out of memory storing object\r\n"
#define MCTEXT_E_TOO_MANY_TAGS "CLIENT_ERROR too many tags\r\n"
/* tag commands: a token their grammar does not allow, named (at most
 * MCTEXT_TOKEN_SHOWN bytes of it, control bytes as '?') */
#define MCTEXT_E_TOKEN_FMT "CLIENT_ERROR invalid token '%s'\r\n"
#define MCTEXT_E_TRUNCATED "SERVER_ERROR reply truncated\r\n"
#define MCTEXT_E_INVALID_FLAG "CLIENT_ERROR invalid flag\r\n"
#define MCTEXT_E_DUP_FLAG "CLIENT_ERROR duplicate flag\r\n"
#define MCTEXT_E_INVALID_DUP "CLIENT_ERROR invalid or duplicate flag\r\n"
#define MCTEXT_E_BAD_TOKEN "CLIENT_ERROR bad token in command line format\r\n"
#define MCTEXT_E_INITIAL "CLIENT_ERROR invalid numeric initial value\r\n"
#define MCTEXT_E_DELTA_VALUE "CLIENT_ERROR invalid numeric delta value\r\n"
#define MCTEXT_E_OPAQUE "CLIENT_ERROR opaque token too long\r\n"
#define MCTEXT_E_KEY_DECODE "CLIENT_ERROR error decoding key\r\n"
#define MCTEXT_E_MS_MODE "CLIENT_ERROR invalid mode for ms M token\r\n"
#define MCTEXT_E_MA_MODE "CLIENT_ERROR invalid mode for ma M token\r\n"
#define MCTEXT_E_M_LEN "CLIENT_ERROR incorrect length for M token\r\n"
#define MCTEXT_E_FLUSH_OFF "CLIENT_ERROR flush_all not allowed\r\n"
#define MCTEXT_E_SHUTDOWN_OFF "ERROR: shutdown not enabled\r\n"
#define MCTEXT_E_SHUTDOWN_MODE "CLIENT_ERROR invalid shutdown mode\r\n"
#define MCTEXT_E_MEMLIMIT_SMALL                                                \
    "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
#define MCTEXT_E_CONNS "ERROR Too many open connections\r\n"

/* memcached's UDP frame (docs/protocol.md, "UDP"): every datagram starts
 * with an 8-byte header (request id, sequence, total, reserved); a reply
 * datagram carries at most UDP_DGRAM_MAX bytes, header included. */
#define UDP_FRAME_HDR 8    /* request id, sequence, total, reserved */
#define UDP_DGRAM_MAX 1400 /* a reply datagram's payload, header included */
/* Reply bytes per datagram, after the header. */
#define UDP_CHUNK (UDP_DGRAM_MAX - UDP_FRAME_HDR)

/* The frame header of reply datagram seq of total, into h[UDP_FRAME_HDR]:
 * request id, sequence, total, reserved 0, each 16-bit big-endian. */
void mctext_udp_frame(uint8_t *h, uint16_t request_id, uint16_t seq,
                      uint16_t total);
/* A received datagram of len bytes at d: 0 with its request id when it is
 * a request to answer (more than the header, a single-datagram request),
 * -1 when it is to be ignored.  Its commands follow the header. */
int mctext_udp_request(const uint8_t *d, size_t len, uint16_t *request_id);

#endif
