/*
 * dump.c - the dump file (docs/dump.md): a 64-byte header, blocks of
 * records each with an xxh3 checksum, and a footer with the counts and a
 * checksum of the whole file.  All integers little endian.
 *
 * Writing walks the store by hash classes (store_walk_class): each class is
 * encoded into the current block under its stripe's read lock, and the
 * block is written once the lock is dropped.  Loading verifies each block
 * before it inserts any of its records.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "alloc.h"
#include "dump.h"
#include "newfile.h"
#include "store_policy.h"

#define HDR_MAGIC "MDCDUMP\n"
#define HDR_SIZE 64
#define BLK_MAGIC 0x314b4c42u /* "BLK1" */
#define BLK_HDR 32
#define FTR_MAGIC 0x31525446u /* "FTR1" */
#define FTR_SIZE 48
#define BLOCK_TARGET (64u << 10)
#define OUTBUF (1u << 20)

/* record field bits */
#define RB_FLAGS 0x01
#define RB_EXPIRY 0x02
#define RB_IDLE 0x04
#define RB_TAGS 0x08
#define RB_STALE 0x10 /* version 2: marked stale (a pending win is not kept) */
#define RB_UNREAD 0x20 /* version 3: not read since stored (idle counts
                        * from the store) */
#define RB_KNOWN 0x3f

int dump_load_mode_of(const char *s)
{
    if (strcmp(s, "repair") == 0)
        return DUMP_LOAD_REPAIR;
    if (strcmp(s, "strict") == 0)
        return DUMP_LOAD_STRICT;
    if (strcmp(s, "ignore") == 0)
        return DUMP_LOAD_IGNORE;
    return -1;
}

/* ---- little-endian helpers ------------------------------------------------ */
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static size_t put_var(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
/* 0 ok, -1 past the end or longer than 10 bytes */
static int get_var(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}
static uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* ---- writing ------------------------------------------------------------- */
struct dwi {
    uint64_t cas;
    uint32_t off, len; /* the record without its CAS, in blk's payload */
};

struct dw {
    struct dwi *idx;  /* the block's records, sorted by CAS when written */
    size_t idxcap;
    uint8_t *pay;     /* the block as written: header, then payload */
    size_t paycap;
    int fd;
    int err;          /* errno of the first failed write */
    uint8_t *blk;     /* current block: BLK_HDR bytes of room, then payload */
    size_t len, cap;  /* payload bytes in blk, room after the header */
    uint32_t nrec;
    uint32_t nblocks;
    uint64_t records, mem;
    int oom;
    uint8_t *out;
    size_t olen;
    uint64_t off;     /* bytes handed to dw_raw */
    uint64_t written; /* bytes written to fd */
    uint64_t synced;  /* writeback started up to here */
    XXH3_state_t *fh; /* whole-file checksum */
};

/* Start writing back each 32 MiB as it is written (as Redis's
 * rdb-save-incremental-fsync does): the final fsync then has little left,
 * and a dump does not pile up dirty pages. */
#define WRITEBACK_STEP ((uint64_t)32 << 20)
static void dw_writeback(struct dw *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
    uint64_t written = w->written;
    if (written >= w->synced + WRITEBACK_STEP) {
        (void)sync_file_range(w->fd, (off64_t)w->synced,
                              (off64_t)(written - w->synced),
                              SYNC_FILE_RANGE_WRITE);
        w->synced = written;
    }
#else
    (void)w;
#endif
}

static void dw_raw(struct dw *w, const void *p, size_t n)
{
    XXH3_64bits_update(w->fh, p, n);
    w->off += n;
    while (n > 0 && w->err == 0) {
        if (w->olen == OUTBUF) {
            size_t done = 0;
            while (done < w->olen) {
                ssize_t k = write(w->fd, w->out + done, w->olen - done);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k <= 0) {
                    w->err = k < 0 ? errno : EIO;
                    return;
                }
                done += (size_t)k;
            }
            w->written += w->olen;
            w->olen = 0;
            dw_writeback(w);
        }
        size_t c = OUTBUF - w->olen < n ? OUTBUF - w->olen : n;
        memcpy(w->out + w->olen, p, c);
        w->olen += c;
        p = (const uint8_t *)p + c;
        n -= c;
    }
}

static void dw_flush(struct dw *w)
{
    size_t done = 0;
    while (w->err == 0 && done < w->olen) {
        ssize_t k = write(w->fd, w->out + done, w->olen - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            w->err = k < 0 ? errno : EIO;
        else
            done += (size_t)k;
    }
    w->olen = 0;
}

static int dwi_cmp(const void *a, const void *b)
{
    const struct dwi *x = a, *y = b;
    return x->cas < y->cas ? -1 : x->cas > y->cas;
}

/* Write the block: records in CAS order, each CAS as the difference from
 * the previous one's (a block's CAS values are close: about 2 bytes each
 * instead of 4 at 10^7 records). */
static void dw_block(struct dw *w)
{
    if (w->nrec == 0)
        return;
    size_t need = BLK_HDR + w->len + (size_t)w->nrec * 10;
    if (need > w->paycap) {
        uint8_t *np = mdc_realloc(w->pay, need);
        if (np == NULL) {
            w->oom = 1;
            return;
        }
        w->pay = np;
        w->paycap = need;
    }
    qsort(w->idx, w->nrec, sizeof(*w->idx), dwi_cmp);
    uint8_t *h = w->pay, *pl = w->pay + BLK_HDR, *p = pl;
    const uint8_t *src = w->blk + BLK_HDR;
    uint64_t prev = 0;
    for (uint32_t i = 0; i < w->nrec; i++) {
        p += put_var(p, w->idx[i].cas - prev);
        prev = w->idx[i].cas;
        memcpy(p, src + w->idx[i].off, w->idx[i].len);
        p += w->idx[i].len;
    }
    size_t len = (size_t)(p - pl);
    put32(h, BLK_MAGIC);
    put32(h + 4, (uint32_t)len);
    put32(h + 8, w->nrec);
    put32(h + 12, w->nblocks);
    put64(h + 16, XXH3_64bits(pl, len));
    put64(h + 24, XXH3_64bits(h, 24));
    dw_raw(w, w->pay, BLK_HDR + len);
    w->nblocks++;
    w->len = 0;
    w->nrec = 0;
}

static int dw_room(struct dw *w, size_t need)
{
    if (w->len + need <= w->cap)
        return 0;
    size_t nc = w->cap * 2;
    while (nc < w->len + need)
        nc *= 2;
    uint8_t *nb = mdc_realloc(w->blk, BLK_HDR + nc);
    if (nb == NULL)
        return -1;
    w->blk = nb;
    w->cap = nc;
    return 0;
}

/* Under the class's read lock: encode one record into the block. */
static void dw_record(void *ctx, struct store *st, const struct record *r)
{
    struct dw *w = ctx;
    uint32_t nt = record_ntags(r);
    size_t need = 1 + 9 * 10 + (size_t)nt * 10 + rec_klen(r) + r->vlen;
    if (dw_room(w, need) < 0) {
        w->oom = 1;
        return;
    }
    if (w->nrec == w->idxcap) {
        size_t nc = w->idxcap ? w->idxcap * 2 : 2048;
        struct dwi *ni = mdc_realloc(w->idx, nc * sizeof(*ni));
        if (ni == NULL) {
            w->oom = 1;
            return;
        }
        w->idx = ni;
        w->idxcap = nc;
    }
    int64_t exp = record_expiry_wall(st, r);
    uint32_t idle = record_idle_ticks(st, r);
    uint8_t *p = w->blk + BLK_HDR + w->len, *p0 = p;
    uint8_t bits = (rec_flags(r) ? RB_FLAGS : 0) | (exp ? RB_EXPIRY : 0) |
                   RB_IDLE | (nt ? RB_TAGS : 0) |
                   (record_stale(r) ? RB_STALE : 0) |
                   (record_fetched(r) ? 0 : RB_UNREAD);
    *p++ = bits;
    p += put_var(p, rec_klen(r));
    p += put_var(p, r->vlen);
    if (bits & RB_FLAGS)
        p += put_var(p, rec_flags(r));
    if (bits & RB_EXPIRY)
        p += put_var(p, (uint64_t)exp);
    if (bits & RB_IDLE)
        p += put_var(p, idle);
    if (nt) {
        p += put_var(p, nt);
        p += put_var(p, record_link_age(st, r));
        for (uint32_t i = 0; i < nt; i++) {
            struct mdc_tag t = record_tag(r, i);
            p += put_var(p, zz(t.tkey));
            p += put_var(p, zz(t.tval));
        }
    }
    memcpy(p, record_key(r), rec_klen(r));
    p += rec_klen(r);
    memcpy(p, record_value(r), r->vlen);
    p += r->vlen;
    w->idx[w->nrec].cas = rec_cas(r);
    w->idx[w->nrec].off = (uint32_t)w->len;
    w->idx[w->nrec].len = (uint32_t)(p - p0);
    w->len += (size_t)(p - p0);
    w->nrec++;
    w->records++;
    w->mem += record_mem(r);
}

static void set_err(struct dump_info *info, const char *fmt, const char *a,
                    int e)
{
    snprintf(info->err, sizeof(info->err), fmt, a, strerror(e));
}

int dump_write(struct store *st, const char *path, struct dump_info *info)
{
    memset(info, 0, sizeof(*info));
    struct newfile *nf = mdc_malloc(sizeof(*nf));
    struct dw w = {.fd = -1};
    const char *step = NULL;
    int rc = -1;

    if (nf == NULL) {
        snprintf(info->err, sizeof(info->err), "out of memory");
        goto out;
    }
    nf->fd = -1;
    w.cap = BLOCK_TARGET * 2;
    w.blk = mdc_malloc(BLK_HDR + w.cap);
    w.out = mdc_malloc(OUTBUF);
    w.fh = XXH3_createState();
    if (w.blk == NULL || w.out == NULL || w.fh == NULL) {
        snprintf(info->err, sizeof(info->err), "out of memory");
        goto out;
    }
    XXH3_64bits_reset(w.fh);
    /* a fresh file under a random name beside path, mode 0600 whatever
     * the umask, renamed over path: nothing planted is written through */
    if (newfile_open(nf, path, 0600) < 0) {
        set_err(info, "cannot create a file beside %s: %s", path, errno);
        goto out;
    }
    w.fd = nf->fd;

    const struct store_config *cfg = store_config(st);
    uint8_t h[HDR_SIZE];
    memset(h, 0, sizeof(h));
    memcpy(h, HDR_MAGIC, 8);
    put32(h + 8, DUMP_VERSION);
    put32(h + 12, HDR_SIZE);
    put64(h + 16, (uint64_t)time(NULL));
    put64(h + 24, cfg->mem_limit);
    put32(h + 32, cfg->max_item_size);
    put32(h + 36, cfg->max_tags);
    put32(h + 40, BLOCK_TARGET);
    put64(h + 44, store_generation(st)); /* once reserved: old readers
                                          * ignore it */
    put64(h + 56, XXH3_64bits(h, 56));
    dw_raw(&w, h, sizeof(h));

    uint32_t nclasses = store_walk_classes(st);
    for (uint32_t c = 0; c < nclasses && w.err == 0 && !w.oom; c++) {
        store_walk_class(st, nclasses, c, dw_record, &w);
        if (w.len >= BLOCK_TARGET)
            dw_block(&w);
    }
    dw_block(&w);
    if (w.oom) {
        snprintf(info->err, sizeof(info->err),
                 "out of memory for a block buffer");
        goto out;
    }
    uint8_t f[FTR_SIZE];
    memset(f, 0, sizeof(f));
    put32(f, FTR_MAGIC);
    put32(f + 4, w.nblocks);
    put64(f + 8, w.records);
    put64(f + 16, w.mem);
    XXH3_64bits_update(w.fh, f, 32);
    put64(f + 32, XXH3_64bits_digest(w.fh));
    put64(f + 40, XXH3_64bits(f, 40));
    /* the footer's checksums are outside the whole-file checksum */
    dw_raw(&w, f, 32);
    dw_raw(&w, f + 32, 16);
    dw_flush(&w);
    if (w.err != 0) {
        set_err(info, "cannot write beside %s: %s", path, w.err);
        goto out;
    }
    w.fd = -1;
    if (newfile_commit(nf, true, &step) < 0) {
        if (strcmp(step, "directory fsync") != 0) {
            snprintf(info->err, sizeof(info->err), "%s of %s: %s", step,
                     path, strerror(errno));
            goto out;
        }
        /* renamed but maybe not durable yet: report, the file is whole */
        set_err(info, "fsync of the directory of %s: %s", path, errno);
        info->records = w.records;
        goto out_renamed;
    }
    info->records = w.records;
    info->blocks = w.nblocks;
    info->bytes = w.off;
    rc = 0;
    goto out_renamed;
out:
    if (nf != NULL)
        newfile_discard(nf); /* closes w.fd, removes the temporary file */
out_renamed:
    if (w.fh != NULL)
        XXH3_freeState(w.fh);
    mdc_free(w.out);
    mdc_free(w.blk);
    mdc_free(w.idx);
    mdc_free(w.pay);
    mdc_free(nf);
    return rc;
}

/* ---- reading --------------------------------------------------------------- */
struct drec {
    uint8_t bits;
    uint64_t klen, vlen, cas, flags, expiry, idle, ntags, link_age;
    const uint8_t *tags; /* varint pairs */
    const uint8_t *key, *value;
};

/* Decode one record; 0 ok, -1 malformed (why set). */
static int rec_decode(const uint8_t **pp, const uint8_t *end, struct drec *d,
                      uint64_t *prev_cas, const char **why)
{
    const uint8_t *p = *pp;
    uint64_t delta;
    memset(d, 0, sizeof(*d));
    if (p >= end) {
        *why = "record past the block's end";
        return -1;
    }
    if (get_var(&p, end, &delta) || p >= end)
        goto trunc;
    if (delta > UINT64_MAX - *prev_cas) {
        *why = "CAS out of range";
        return -1;
    }
    d->cas = *prev_cas + delta;
    d->bits = *p++;
    if (d->bits & ~RB_KNOWN) {
        *why = "unknown record field bits";
        return -1;
    }
    if (get_var(&p, end, &d->klen) || get_var(&p, end, &d->vlen))
        goto trunc;
    if ((d->bits & RB_FLAGS) && get_var(&p, end, &d->flags))
        goto trunc;
    if ((d->bits & RB_EXPIRY) && get_var(&p, end, &d->expiry))
        goto trunc;
    if ((d->bits & RB_IDLE) && get_var(&p, end, &d->idle))
        goto trunc;
    d->idle = (d->bits & RB_IDLE) ? d->idle : UINT32_MAX;
    if (d->bits & RB_TAGS) {
        if (get_var(&p, end, &d->ntags) || get_var(&p, end, &d->link_age))
            goto trunc;
        if (d->ntags == 0 || d->ntags > 65535) {
            *why = "bad tag count";
            return -1;
        }
        d->tags = p;
        for (uint64_t i = 0; i < 2 * d->ntags; i++) {
            uint64_t v;
            if (get_var(&p, end, &v))
                goto trunc;
            if (v > UINT32_MAX) {
                *why = "tag out of range";
                return -1;
            }
        }
    }
    if (d->vlen > UINT32_MAX || d->idle > UINT32_MAX ||
        d->link_age > UINT32_MAX || d->expiry > INT64_MAX || d->cas == 0) {
        *why = "field out of range";
        return -1;
    }
    if ((uint64_t)(end - p) < d->klen + d->vlen)
        goto trunc;
    d->key = p;
    p += d->klen;
    d->value = p;
    p += d->vlen;
    *pp = p;
    *prev_cas = d->cas;
    return 0;
trunc:
    *why = "record runs past the block's end";
    return -1;
}

/*
 * A record that decodes, checked field by field as the protocol checks a
 * request (docs/protocol.md): a key of 1..65534 bytes, flags of 32 bits,
 * tags sorted and distinct (as the writer puts them), and nothing over
 * the writer's own -I and --max-tags (the header's; 0: unknown).  NULL
 * when valid, else what is wrong (in buf).
 */
static const char *rec_check(const struct drec *d, uint64_t max_item,
                             uint64_t max_tags, char *buf, size_t len)
{
    const uint8_t *p = d->tags;
    int64_t pk = 0, pv = 0;

    if (d->klen == 0)
        return "empty key";
    if (d->klen > STORE_MAX_KEY) {
        snprintf(buf, len, "key of %" PRIu64 " bytes, over %u", d->klen,
                 STORE_MAX_KEY);
        return buf;
    }
    if (d->flags > UINT32_MAX)
        return "client flags over 32 bits";
    if (max_item != 0 && d->vlen > max_item) {
        snprintf(buf, len, "value of %" PRIu64 " bytes, over the writer's "
                 "-I %" PRIu64, d->vlen, max_item);
        return buf;
    }
    if (max_tags != 0 && d->ntags > max_tags) {
        snprintf(buf, len, "%" PRIu64 " tags, over the writer's --max-tags %"
                 PRIu64, d->ntags, max_tags);
        return buf;
    }
    for (uint64_t i = 0; i < d->ntags; i++) {
        uint64_t a = 0, b = 0;
        (void)get_var(&p, p + 20, &a); /* verified by rec_decode */
        (void)get_var(&p, p + 20, &b);
        int64_t k = unzz(a), v = unzz(b);
        if (i > 0 && (k < pk || (k == pk && v < pv)))
            return "tags not sorted";
        if (i > 0 && k == pk && v == pv) {
            snprintf(buf, len, "tag %" PRId64 ":%" PRId64 " twice", k, v);
            return buf;
        }
        pk = k;
        pv = v;
    }
    return NULL;
}

struct deferred {
    struct record *r;
    uint32_t age;
    uint32_t idx;
};

#define NBINS 470
static unsigned idle_bin(const struct drec *d)
{
    /* never read: loaded last, as before version 3 kept their idle time */
    if (d->idle >= UINT32_MAX || (d->bits & RB_UNREAD))
        return NBINS - 1;
    uint32_t v = (uint32_t)d->idle;
    if (v < 16)
        return v;
    unsigned e = 31u - (unsigned)__builtin_clz(v); /* >= 4 */
    return (e - 3) * 16 + ((v >> (e - 4)) & 15);
}

struct dl {
    struct store *st;
    enum dump_load_mode mode;
    dump_report_fn rep;
    void *ctx;
    struct dump_info *info;
    struct dump_info *out; /* insert counts (info may be a scratch copy) */
    int pass;             /* 0 verify only, 1 histogram, 2 insert */
    unsigned lo, hi;      /* pass 2: load idle bins in [lo, hi] */
    unsigned cut;         /* bins above it are not loaded at all */
    uint64_t hist[NBINS]; /* pass 1: bytes per idle bin */
    struct deferred *def;
    size_t ndef, capdef;
    uint32_t nexttag;
    uint32_t version; /* the file's format version */
    uint64_t tstack_max;
    uint64_t max_item, max_tags; /* the writer's, from the header; 0 unknown */
    uint64_t generation;         /* the header's data generation; 0 none */
    int nomem;
};

static void damage(struct dl *l, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void damage(struct dl *l, uint64_t off, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (l->info->bad++ == 0) {
        l->info->err_offset = off;
        snprintf(l->info->err, sizeof(l->info->err), "%s", msg);
    }
    if (l->rep != NULL)
        l->rep(l->ctx, off, msg);
}

static size_t est_mem(const struct drec *d)
{
    return mdc_good_size(rec_req_size((uint32_t)d->klen, (uint32_t)d->vlen,
                                      d->flags ? sizeof(uint32_t) : 0,
                                      (uint32_t)d->ntags));
}

static void note_tstack(struct dl *l, const struct drec *d)
{
    /* keys made by store_tstack_push: "tstack:<tkey>:<tval>:<seq>" */
    if (d->klen < 8 || d->klen > 63 || memcmp(d->key, "tstack:", 7) != 0)
        return;
    const uint8_t *e = d->key + d->klen, *p = e;
    uint64_t seq = 0, mul = 1;
    while (p > d->key && p[-1] >= '0' && p[-1] <= '9' && mul <= 1000000000000000000ull) {
        seq += (uint64_t)(p[-1] - '0') * mul;
        mul *= 10;
        p--;
    }
    if (p < e && p > d->key && p[-1] == ':' && seq > l->tstack_max)
        l->tstack_max = seq;
}

static void insert(struct dl *l, const struct drec *d)
{
    struct dump_info *info = l->out;
    unsigned bin = idle_bin(d);
    if (bin < l->lo || bin > l->hi) {
        if (bin > l->cut && l->lo == l->hi)
            info->over_limit++; /* counted in the last scan only */
        return;
    }
    struct mdc_tag tb[64], *tags = tb;
    if (d->ntags > 64) {
        tags = mdc_malloc(d->ntags * sizeof(*tags));
        if (tags == NULL) {
            info->refused++;
            return;
        }
    }
    const uint8_t *p = d->tags;
    for (uint64_t i = 0; i < d->ntags; i++) {
        uint64_t a = 0, b = 0;
        (void)get_var(&p, p + 20, &a); /* verified by rec_decode */
        (void)get_var(&p, p + 20, &b);
        tags[i].tkey = (int32_t)unzz(a);
        tags[i].tval = (int32_t)unzz(b);
    }
    struct store_restore it = {
        .key = d->key, .klen = (uint32_t)d->klen, .value = d->value,
        .vlen = (uint32_t)d->vlen, .flags = (uint32_t)d->flags,
        .cas = d->cas, .expiry_wall = (int64_t)d->expiry,
        .idle_ticks = (uint32_t)d->idle, .tags = tags,
        .ntags = (uint32_t)d->ntags, .stale = (d->bits & RB_STALE) != 0,
        .unread = (d->bits & RB_UNREAD) != 0,
    };
    struct record *tr = NULL;
    int rc = store_restore(l->st, &it, &tr);
    if (tags != tb)
        mdc_free(tags);
    if (rc == ST_NOT_FOUND) {
        info->expired++;
        return;
    }
    if (rc == ST_NO_MEMORY) {
        info->over_limit++;
        return;
    }
    if (rc != ST_OK) {
        info->refused++;
        return;
    }
    info->records++;
    if (tr != NULL) {
        if (l->ndef == l->capdef) {
            size_t nc = l->capdef ? l->capdef * 2 : 1024;
            struct deferred *nd = mdc_realloc(l->def, nc * sizeof(*nd));
            if (nd == NULL) {
                /* linked without its place in the lists' order */
                l->nomem = 1;
                store_restore_tags(l->st, tr);
                return;
            }
            l->def = nd;
            l->capdef = nc;
        }
        l->def[l->ndef].r = tr;
        l->def[l->ndef].age = (uint32_t)d->link_age;
        l->def[l->ndef].idx = (uint32_t)l->ndef;
        l->ndef++;
        note_tstack(l, d);
    }
}

/* A block whose checksums verify: check every record, then use them.  A
 * record that decodes but has a field the protocol would refuse (an empty
 * key, tags out of order...) is damage at its own offset: strict refuses
 * the file, repair skips that record and loads the rest of the block. */
static int do_block(struct dl *l, const uint8_t *pl, uint32_t len,
                    uint32_t nrec, uint64_t off, uint32_t idx)
{
    const uint8_t *p = pl, *end = pl + len;
    struct drec d;
    const char *why = NULL;
    char buf[128];
    uint64_t prev = 0;
    for (uint32_t i = 0; i < nrec; i++) {
        if (rec_decode(&p, end, &d, &prev, &why) < 0 ||
            /* version 0: the header is lost, any bit may be right */
            (((l->version == 1 && (d.bits & RB_STALE)) ||
              ((l->version == 1 || l->version == 2) &&
               (d.bits & RB_UNREAD))) &&
             (why = "unknown record field bits") != NULL)) {
            damage(l, off, "block %u: record %u: %s", idx, i, why);
            return -1;
        }
    }
    if (p != end) {
        damage(l, off, "block %u: bytes after its last record", idx);
        return -1;
    }
    p = pl;
    prev = 0;
    for (uint32_t i = 0; i < nrec; i++) {
        const uint8_t *r0 = p;
        (void)rec_decode(&p, end, &d, &prev, &why);
        why = rec_check(&d, l->max_item, l->max_tags, buf, sizeof(buf));
        if (why != NULL) {
            l->info->invalid++;
            damage(l, off + BLK_HDR + (uint64_t)(r0 - pl),
                   "block %u: record %u: %s", idx, i, why);
        } else if (l->pass == 1) {
            l->hist[idle_bin(&d)] += est_mem(&d);
        } else if (l->pass == 2) {
            insert(l, &d);
        }
    }
    return 0;
}

static int blk_hdr_ok(const uint8_t *b, size_t avail)
{
    return avail >= BLK_HDR && get32(b) == BLK_MAGIC &&
           get64(b + 24) == XXH3_64bits(b, 24);
}
static int ftr_ok(const uint8_t *b, size_t avail)
{
    return avail >= FTR_SIZE && get32(b) == FTR_MAGIC &&
           get64(b + 40) == XXH3_64bits(b, 40);
}

/* Walk the image; returns the footer's stated mem (0 when no footer). */
static uint64_t scan(struct dl *l, const uint8_t *buf, size_t len)
{
    uint64_t blocks = 0, recs = 0, ftr_mem = 0;
    size_t off = HDR_SIZE;
    int footer = 0;

    if (len < HDR_SIZE || memcmp(buf, HDR_MAGIC, 8) != 0) {
        damage(l, 0, "not a dump: bad magic or shorter than the header");
        off = 0;
    } else if (get64(buf + 56) != XXH3_64bits(buf, 56)) {
        damage(l, 0, "header checksum mismatch");
    } else if (get32(buf + 8) < DUMP_VERSION_MIN ||
               get32(buf + 8) > DUMP_VERSION || get32(buf + 12) < HDR_SIZE ||
               get32(buf + 12) > len) {
        damage(l, 8, "unsupported format version %u (header size %u)",
               get32(buf + 8), get32(buf + 12));
        return 0;
    } else {
        off = get32(buf + 12);
        l->version = get32(buf + 8);
        l->max_item = get32(buf + 32);
        l->max_tags = get32(buf + 36);
        l->generation = get64(buf + 44); /* 0 in older files */
    }
    while (off < len) {
        const uint8_t *b = buf + off;
        size_t avail = len - off;
        if (ftr_ok(b, avail)) {
            footer = 1;
            ftr_mem = get64(b + 16);
            if (get32(b + 4) != blocks || get64(b + 8) != recs)
                damage(l, off, "footer counts %u blocks and %" PRIu64
                       " records, the file holds %" PRIu64 " intact blocks"
                       " and %" PRIu64 " records", get32(b + 4),
                       get64(b + 8), blocks, recs);
            else if (get64(b + 32) != XXH3_64bits(buf, off + 32))
                damage(l, off, "whole-file checksum mismatch");
            if (off + FTR_SIZE != len)
                damage(l, off + FTR_SIZE, "%zu bytes after the footer",
                       len - off - FTR_SIZE);
            break;
        }
        if (blk_hdr_ok(b, avail) && get32(b + 4) <= avail - BLK_HDR) {
            uint32_t bl = get32(b + 4), nrec = get32(b + 8);
            uint32_t idx = get32(b + 12);
            if (get64(b + 16) != XXH3_64bits(b + BLK_HDR, bl)) {
                damage(l, off, "block %u: checksum mismatch", idx);
            } else if (do_block(l, b + BLK_HDR, bl, nrec, off, idx) == 0) {
                blocks++;
                recs += nrec;
                l->info->blocks++;
            }
            off += BLK_HDR + bl;
            continue;
        }
        /* lost: look for the next block or footer that verifies */
        size_t start = off;
        for (off++; off < len; off++) {
            if ((buf[off] == 'B' && blk_hdr_ok(buf + off, len - off)) ||
                (buf[off] == 'F' && ftr_ok(buf + off, len - off)))
                break;
        }
        damage(l, start, off < len ? "%zu damaged bytes"
                                   : "%zu bytes with no block or footer "
                                     "(file truncated?)",
               off - start);
    }
    if (!footer)
        damage(l, len, "no footer: file truncated");
    return ftr_mem;
}

static int def_cmp(const void *a, const void *b)
{
    const struct deferred *x = a, *y = b;
    /* oldest link first (the greatest age), then file order */
    if (x->age != y->age)
        return x->age > y->age ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int dump_load_buf(struct store *st, const uint8_t *buf, size_t len,
                  enum dump_load_mode mode, dump_report_fn rep, void *ctx,
                  struct dump_info *info)
{
    memset(info, 0, sizeof(*info));
    info->bytes = len;
    if (mode == DUMP_LOAD_IGNORE)
        return 0;
    struct dl *l = mdc_calloc(1, sizeof(*l));
    if (l == NULL) {
        snprintf(info->err, sizeof(info->err), "out of memory");
        return -1;
    }
    l->st = st;
    l->mode = mode;
    l->info = info;
    l->out = info;
    l->lo = 0;
    l->hi = NBINS;
    l->cut = NBINS; /* no bin is above: nothing counted as over */
    l->ctx = ctx;
    l->rep = rep;
    struct dump_info scratch;
    uint64_t need = 0;

    /* a first pass (reports off) verifies for strict, and finds whether
     * the records fit: the footer's stated size when it verifies */
    l->pass = 0;
    if (mode == DUMP_LOAD_STRICT) {
        need = scan(l, buf, len);
        if (info->bad) {
            mdc_free(l);
            return -1;
        }
    } else if (len >= HDR_SIZE + FTR_SIZE &&
               ftr_ok(buf + len - FTR_SIZE, FTR_SIZE)) {
        need = get64(buf + len - FTR_SIZE + 16);
    }
    /* size the table for the footer's record count (no splits) */
    if (len >= HDR_SIZE + FTR_SIZE && ftr_ok(buf + len - FTR_SIZE, FTR_SIZE))
        store_reserve(st, get64(buf + len - FTR_SIZE + 8));
    struct store_stats ss;
    store_get_stats(st, &ss);
    uint64_t avail = ss.limit_maxbytes > ss.bytes ? ss.limit_maxbytes - ss.bytes
                                                  : 0;
    if (need > avail) {
        /* more than fits: the most recently used first */
        l->pass = 1;
        l->rep = NULL;
        l->info = &scratch;
        memset(&scratch, 0, sizeof(scratch));
        scan(l, buf, len);
        l->rep = rep;
        l->info = info;
        uint64_t cum = 0;
        unsigned c;
        for (c = 0; c < NBINS; c++) {
            cum += l->hist[c];
            if (cum > avail)
                break;
        }
        /* the bins that fit, then bin c until the limit */
        l->cut = c;
        if (c > 0) {
            l->pass = 2;
            l->hi = c - 1;
            scan(l, buf, len);
            l->rep = NULL;
            l->info = &scratch;
            memset(&scratch, 0, sizeof(scratch));
        }
        l->lo = l->hi = c;
    }
    l->pass = 2;
    scan(l, buf, len);
    l->info = info;
    /* rebuild the tag lists' order: link the oldest first */
    if (l->ndef > 1)
        qsort(l->def, l->ndef, sizeof(*l->def), def_cmp);
    for (size_t i = 0; i < l->ndef; i++)
        if (store_restore_tags(st, l->def[i].r) != ST_OK) {
            info->records--;
            info->over_limit++;
        }
    store_note_tstack_seq(st, l->tstack_max);
    /* the records are the writer's: so is their generation (a file
     * without one leaves the server's own) */
    info->generation = l->generation;
    if (l->generation != 0)
        store_set_generation(st, l->generation);
    mdc_free(l->def);
    mdc_free(l);
    return 0;
}

int dump_load(struct store *st, const char *path, enum dump_load_mode mode,
              dump_report_fn rep, void *ctx, struct dump_info *info)
{
    memset(info, 0, sizeof(*info));
    if (mode == DUMP_LOAD_IGNORE)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        set_err(info, "cannot open %s: %s", path, errno);
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        set_err(info, "cannot stat %s: %s", path, errno);
        close(fd);
        return -1;
    }
    size_t len = (size_t)sb.st_size;
    const uint8_t *buf = (const uint8_t *)"";
    void *map = NULL;
    if (len > 0) {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            set_err(info, "cannot map %s: %s", path, errno);
            close(fd);
            return -1;
        }
        madvise(map, len, MADV_SEQUENTIAL);
        buf = map;
    }
    close(fd);
    int rc = dump_load_buf(st, buf, len, mode, rep, ctx, info);
    if (map != NULL)
        munmap(map, len);
    return rc;
}
