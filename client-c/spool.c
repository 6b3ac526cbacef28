/*
 * spool.c - the spool file of undelivered invalidations (spool.h): safe
 * creation, flock, append, scan with damage skipped, compaction.  No
 * network here: pool.c replays.
 *
 * The file is written by every process of an application (PHP workers) in
 * a directory it owns: created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600
 * whatever the umask; an existing one is used only if it is a regular file
 * with one link owned by this user (a link or a file planted by another
 * user is refused, never written through).  Compaction writes a new file
 * under a random name (mkostemp: O_EXCL) and renames it over the path, so
 * a crash leaves the old file or the new one, whole.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HDR_MAGIC "MDCSPL1\n"
#define SPOOL_VERSION 1
#define REC_MAGIC 0x31525053u /* "SPR1" */
#define MAX_BODY                                                              \
    (MDCI_SPOOL_BODY_FIXED + MDCI_SPOOL_MAX_NAME + 4 * MDCI_SPOOL_MAX_COUNT)

/* ---- CRC-32 (IEEE 802.3, reflected, as zlib's crc32()) ------------------ */
static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t mdci_crc32(uint32_t crc, const void *p, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    const uint8_t *b = p;

    pthread_once(&once, crc_init);
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
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
static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static int spool_err(struct mdci_spool *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int spool_err(struct mdci_spool *s, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(s->err, sizeof(s->err), "spool %s: ", s->path);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(s->err))
        vsnprintf(s->err + n, sizeof(s->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

void mdci_spool_name(char *out, size_t cap, const char *const *names,
                     size_t n)
{
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++)
        c = mdci_crc32(c, names[i], strlen(names[i]) + 1);
    snprintf(out, cap, "pool-%08" PRIx32 ".spool", c);
}

/* ---- open, lock ----------------------------------------------------------- */

static int check_file(struct mdci_spool *s, int fd)
{
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return spool_err(s, "fstat: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return spool_err(s, "not a regular file: refused");
    if (sb.st_nlink != 1)
        return spool_err(s, "has %ju links: refused",
                         (uintmax_t)sb.st_nlink);
    if (sb.st_uid != geteuid())
        return spool_err(s, "owned by uid %ju, not this user (%ju): refused",
                         (uintmax_t)sb.st_uid, (uintmax_t)geteuid());
    return 0;
}

static int open_path(struct mdci_spool *s)
{
    int fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    if (fd >= 0) {
        if (fchmod(fd, 0600) < 0) { /* whatever the umask */
            spool_err(s, "fchmod: %s", strerror(errno));
            close(fd);
            return -1;
        }
    } else if (errno == EEXIST) {
        fd = open(s->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            return spool_err(s, "%s", errno == ELOOP
                                          ? "a symbolic link: refused"
                                          : strerror(errno));
        if (check_file(s, fd) < 0) {
            close(fd);
            return -1;
        }
    } else {
        return spool_err(s, "cannot create: %s", strerror(errno));
    }
    s->fd = fd;
    return 0;
}

int mdci_spool_open(struct mdci_spool *s, const char *dir, const char *name,
                    size_t limit)
{
    memset(s, 0, sizeof(*s));
    s->fd = -1;
    s->limit = limit ? limit : MDCI_SPOOL_DEFAULT_LIMIT;
    if (s->limit < MDCI_SPOOL_MIN_LIMIT)
        s->limit = MDCI_SPOOL_MIN_LIMIT;
    if ((size_t)snprintf(s->path, sizeof(s->path), "%s/%s", dir, name) >=
        sizeof(s->path))
        return spool_err(s, "path too long");
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return spool_err(s, "cannot create the directory: %s",
                         strerror(errno));
    return open_path(s);
}

static void free_scan(struct mdci_spool *s)
{
    free(s->buf);
    free(s->recs);
    s->buf = NULL;
    s->recs = NULL;
    s->len = s->nrecs = s->caprecs = 0;
}

void mdci_spool_close(struct mdci_spool *s)
{
    if (s->fd >= 0)
        close(s->fd); /* releases the lock */
    s->fd = -1;
    s->locked = false;
    free_scan(s);
}

static int write_all(int fd, const void *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, p, n, off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p = (const uint8_t *)p + k;
        n -= (size_t)k;
        off += k;
    }
    return 0;
}

static void make_header(uint8_t *h, uint64_t epoch)
{
    memcpy(h, HDR_MAGIC, 8);
    put32(h + 8, SPOOL_VERSION);
    put64(h + 12, epoch);
    put32(h + 20, mdci_crc32(0, h, 20));
}

/* The header: epoch read; an empty file gets one.  A damaged header is
 * reported and rewritten with a new epoch (the records stay). */
static int read_header(struct mdci_spool *s)
{
    uint8_t h[MDCI_SPOOL_HDR];
    ssize_t n = pread(s->fd, h, sizeof(h), 0);
    if (n < 0)
        return spool_err(s, "read: %s", strerror(errno));
    if (n == (ssize_t)sizeof(h) && memcmp(h, HDR_MAGIC, 8) == 0 &&
        get32(h + 20) == mdci_crc32(0, h, 20)) {
        if (get32(h + 8) != SPOOL_VERSION)
            return spool_err(s, "format version %" PRIu32 " unknown",
                             get32(h + 8));
        s->epoch = get64(h + 12);
        return 0;
    }
    if (n != 0)
        spool_err(s, "damaged header: rewritten");
    s->epoch = (uint64_t)time(NULL) << 20; /* a fresh start */
    make_header(h, s->epoch);
    if (write_all(s->fd, h, sizeof(h), 0) < 0)
        return spool_err(s, "write: %s", strerror(errno));
    return 0;
}

int mdci_spool_lock(struct mdci_spool *s, bool nb)
{
    for (int tries = 0; tries < 16; tries++) {
        struct stat a, b;
        if (s->fd < 0 && open_path(s) < 0)
            return -1;
        if (flock(s->fd, LOCK_EX | (nb ? LOCK_NB : 0)) < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            if (e != EWOULDBLOCK)
                spool_err(s, "flock: %s", strerror(e));
            errno = e;
            return -1;
        }
        /* the path still names this file (no compaction replaced it) */
        if (fstat(s->fd, &a) == 0 && stat(s->path, &b) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            s->locked = true;
            if (read_header(s) < 0) {
                mdci_spool_unlock(s);
                return -1;
            }
            return 0;
        }
        close(s->fd);
        s->fd = -1;
    }
    return spool_err(s, "the file keeps being replaced");
}

void mdci_spool_unlock(struct mdci_spool *s)
{
    if (s->fd >= 0 && s->locked)
        flock(s->fd, LOCK_UN);
    s->locked = false;
}

uint64_t mdci_spool_size(struct mdci_spool *s)
{
    struct stat sb;
    return (s->fd >= 0 && fstat(s->fd, &sb) == 0) ? (uint64_t)sb.st_size : 0;
}

/* ---- records -------------------------------------------------------------- */

static size_t body_len(const struct mdci_spool_rec *r)
{
    size_t per = 4; /* tag values */
    if (r->kind == MDCI_SP_DEL || r->kind == MDCI_SP_DEL_STALE)
        per = 1; /* key bytes */
    if (r->kind == MDCI_SP_FLUSH || r->kind == MDCI_SP_DONE)
        per = 0;
    return MDCI_SPOOL_BODY_FIXED + r->slen + per * r->count;
}

int mdci_spool_append(struct mdci_spool *s, const struct mdci_spool_rec *r,
                      bool over_limit)
{
    if (r->slen == 0 || (size_t)r->slen > (size_t)MDCI_SPOOL_MAX_NAME ||
        r->count > MDCI_SPOOL_MAX_COUNT)
        return spool_err(s, "record out of bounds");
    size_t blen = body_len(r), tot = MDCI_SPOOL_REC_HDR + blen;
    uint64_t size = mdci_spool_size(s);
    if (size < MDCI_SPOOL_HDR)
        return spool_err(s, "no header");
    if (!over_limit && size + tot > s->limit)
        return 1;
    uint8_t *b = calloc(1, tot), *p = b + MDCI_SPOOL_REC_HDR;
    if (b == NULL)
        return spool_err(s, "out of memory");
    p[0] = r->kind;
    put16(p + 2, r->slen);
    put32(p + 4, r->count);
    put64(p + 8, r->boot_id);
    put64(p + 16, r->generation);
    put64(p + 24, (uint64_t)r->ttl);
    put64(p + 32, r->cas);
    put64(p + 40, r->time);
    put32(p + 48, (uint32_t)r->tkey);
    put64(p + 56, r->upto);
    memcpy(p + MDCI_SPOOL_BODY_FIXED, r->server, r->slen);
    if (blen > MDCI_SPOOL_BODY_FIXED + r->slen)
        memcpy(p + MDCI_SPOOL_BODY_FIXED + r->slen, r->data,
               blen - MDCI_SPOOL_BODY_FIXED - r->slen);
    put32(b, REC_MAGIC);
    put32(b + 4, (uint32_t)blen);
    put32(b + 8, mdci_crc32(0, p, blen));
    int rc = write_all(s->fd, b, tot, (off_t)size);
    free(b);
    if (rc < 0) {
        int e = errno;
        if (ftruncate(s->fd, (off_t)size) < 0) { /* no torn record left */
            /* the scan skips it */
        }
        return spool_err(s, "write: %s", strerror(e));
    }
    return 0;
}

/* Decode the record at off (its 12-byte header verified); NULL message when
 * it is good. */
static const char *decode(const uint8_t *b, size_t blen, uint64_t off,
                          struct mdci_spool_rec *r)
{
    if (blen < MDCI_SPOOL_BODY_FIXED)
        return "record shorter than its fixed part";
    memset(r, 0, sizeof(*r));
    r->off = off;
    r->kind = b[0];
    r->slen = get16(b + 2);
    r->count = get32(b + 4);
    r->boot_id = get64(b + 8);
    r->generation = get64(b + 16);
    r->ttl = (int64_t)get64(b + 24);
    r->cas = get64(b + 32);
    r->time = get64(b + 40);
    r->tkey = (int32_t)get32(b + 48);
    r->upto = get64(b + 56);
    r->server = (const char *)b + MDCI_SPOOL_BODY_FIXED;
    r->data = b + MDCI_SPOOL_BODY_FIXED + r->slen;
    if (r->kind < MDCI_SP_DBT || r->kind > MDCI_SP_KIND_MAX)
        return "unknown record kind";
    if (r->slen == 0 || r->count > MDCI_SPOOL_MAX_COUNT)
        return "field out of bounds";
    if (body_len(r) != blen)
        return "length does not match the fields";
    if ((r->kind == MDCI_SP_DBT || r->kind == MDCI_SP_DBT_STALE ||
         r->kind == MDCI_SP_DEL || r->kind == MDCI_SP_DEL_STALE) &&
        r->count == 0)
        return "an entry without tag values or key";
    return NULL;
}

static int push_rec(struct mdci_spool *s, const struct mdci_spool_rec *r)
{
    if (s->nrecs == s->caprecs) {
        size_t cap = s->caprecs ? s->caprecs * 2 : 64;
        struct mdci_spool_rec *n = realloc(s->recs, cap * sizeof(*n));
        if (n == NULL)
            return -1;
        s->recs = n;
        s->caprecs = cap;
    }
    s->recs[s->nrecs++] = *r;
    return 0;
}

static void damaged(struct mdci_spool *s, uint64_t off, const char *what)
{
    if (s->damaged++ == 0)
        spool_err(s, "offset %" PRIu64 ": %s: skipped", off, what);
}

static bool same_server(const struct mdci_spool_rec *a,
                        const struct mdci_spool_rec *b)
{
    return a->slen == b->slen && memcmp(a->server, b->server, a->slen) == 0;
}

/* Pending flags: walked from the end, each server's "done up to" grows
 * with its DONE records and its FLUSH (which covers what came before).  A
 * pending FLUSH also covers the server's entries written after it: the
 * flush runs when the server is back, after all of them. */
static int mark_pending(struct mdci_spool *s)
{
    struct srv_upto {
        const struct mdci_spool_rec *r;
        uint64_t upto;
        bool flush;
    } *u = NULL;
    size_t nu = 0, capu = 0;
    uint32_t *slot = malloc((s->nrecs ? s->nrecs : 1) * sizeof(*slot));

    if (slot == NULL)
        return -1;
    for (size_t k = s->nrecs; k-- > 0;) {
        struct mdci_spool_rec *r = &s->recs[k];
        size_t j;
        for (j = 0; j < nu && !same_server(u[j].r, r); j++)
            ;
        if (j == nu) {
            if (nu == capu) {
                size_t cap = capu ? capu * 2 : 16;
                struct srv_upto *n = realloc(u, cap * sizeof(*n));
                if (n == NULL) {
                    free(u);
                    free(slot);
                    return -1;
                }
                u = n;
                capu = cap;
            }
            u[nu].r = r;
            u[nu].flush = false;
            u[nu++].upto = 0;
        }
        slot[k] = (uint32_t)j;
        if (r->kind == MDCI_SP_DONE) {
            r->pending = false;
            if (r->upto > u[j].upto)
                u[j].upto = r->upto;
            continue;
        }
        r->pending = r->off >= u[j].upto;
        if (r->kind == MDCI_SP_FLUSH && r->pending) {
            u[j].flush = true;
            if (r->off > u[j].upto)
                u[j].upto = r->off; /* covers every earlier entry */
        }
    }
    for (size_t k = 0; k < s->nrecs; k++)
        if (u[slot[k]].flush && s->recs[k].kind != MDCI_SP_FLUSH)
            s->recs[k].pending = false;
    free(u);
    free(slot);
    return 0;
}

int mdci_spool_scan(struct mdci_spool *s)
{
    uint64_t size = mdci_spool_size(s);
    free_scan(s);
    s->damaged = 0;
    if (size <= MDCI_SPOOL_HDR)
        return 0;
    if (size > (uint64_t)SIZE_MAX / 2)
        return spool_err(s, "too large");
    s->buf = malloc((size_t)size);
    if (s->buf == NULL)
        return spool_err(s, "out of memory");
    size_t got = 0;
    while (got < size) {
        ssize_t k = pread(s->fd, s->buf + got, (size_t)size - got, (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return spool_err(s, "read: %s", strerror(errno));
        if (k == 0)
            break;
        got += (size_t)k;
    }
    s->len = got;
    size_t off = MDCI_SPOOL_HDR;
    while (off < s->len) {
        const uint8_t *p = s->buf + off;
        size_t avail = s->len - off;
        const char *why = NULL;
        struct mdci_spool_rec r;
        if (avail < MDCI_SPOOL_REC_HDR || get32(p) != REC_MAGIC) {
            why = avail < MDCI_SPOOL_REC_HDR ? "truncated record"
                                              : "bad record magic";
        } else {
            uint32_t blen = get32(p + 4);
            if (blen > MAX_BODY)
                why = "record length out of bounds";
            else if (avail < MDCI_SPOOL_REC_HDR + (size_t)blen)
                why = "truncated record";
            else if (get32(p + 8) !=
                     mdci_crc32(0, p + MDCI_SPOOL_REC_HDR, blen))
                why = "checksum mismatch";
            else
                why = decode(p + MDCI_SPOOL_REC_HDR, blen, off, &r);
            if (why == NULL) {
                if (push_rec(s, &r) < 0)
                    return spool_err(s, "out of memory");
                off += MDCI_SPOOL_REC_HDR + blen;
                continue;
            }
        }
        damaged(s, off, why);
        /* resync: the next record magic whose record verifies is taken */
        size_t next = off + 1;
        while (next + 4 <= s->len && get32(s->buf + next) != REC_MAGIC)
            next++;
        off = next + 4 <= s->len ? next : s->len;
    }
    if (mark_pending(s) < 0)
        return spool_err(s, "out of memory");
    return 0;
}

/* The bytes of record r as they are in the file. */
static size_t raw_len(const struct mdci_spool_rec *r)
{
    return MDCI_SPOOL_REC_HDR + body_len(r);
}

int mdci_spool_compact(struct mdci_spool *s)
{
    uint8_t h[MDCI_SPOOL_HDR];
    size_t npend = 0;

    for (size_t i = 0; i < s->nrecs; i++)
        npend += s->recs[i].pending;
    make_header(h, s->epoch + 1);
    if (npend == 0) {
        /* nothing left: the header of the next epoch alone, in place */
        if (ftruncate(s->fd, MDCI_SPOOL_HDR) < 0 ||
            write_all(s->fd, h, sizeof(h), 0) < 0)
            return spool_err(s, "truncate: %s", strerror(errno));
        s->epoch++;
        free_scan(s);
        return 0;
    }
    char tmp[4200];
    const char *slash = strrchr(s->path, '/');
    snprintf(tmp, sizeof(tmp), "%.*s/.%s.XXXXXX", (int)(slash - s->path),
             s->path, slash + 1);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return spool_err(s, "compaction: cannot create a file: %s",
                         strerror(errno));
    /* locked before anyone can find it: waiters see the new inode */
    if (fchmod(fd, 0600) < 0 || flock(fd, LOCK_EX) < 0)
        goto fail;
    off_t at = 0;
    if (write_all(fd, h, sizeof(h), at) < 0)
        goto fail;
    at += (off_t)sizeof(h);
    for (size_t i = 0; i < s->nrecs; i++) {
        const struct mdci_spool_rec *r = &s->recs[i];
        if (!r->pending)
            continue;
        if (write_all(fd, s->buf + r->off, raw_len(r), at) < 0)
            goto fail;
        at += (off_t)raw_len(r);
    }
    if (fdatasync(fd) < 0 || rename(tmp, s->path) < 0)
        goto fail;
    close(s->fd); /* the old inode's lock goes; its waiters reopen */
    s->fd = fd;
    s->epoch++;
    free_scan(s);
    return 0;
fail:;
    int e = errno;
    close(fd);
    unlink(tmp);
    return spool_err(s, "compaction: %s", strerror(e));
}
