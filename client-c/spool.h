/*
 * spool.h - the spool of invalidations a pool could not deliver
 * (docs/client-c.md, "Invalidations that survive absence"): one file per
 * pool in a directory the application chooses, shared by every process of
 * the application under flock(), append-only records each with a CRC-32.
 * This layer knows the file only (format, lock, append, scan, compaction);
 * pool.c decides what to spool and replays it over its handles.  Internal.
 *
 * File: a 24-byte header ("MDCSPL1\n", u32 version 1, u64 epoch, u32 CRC-32
 * of bytes 0-19), then records, little endian:
 *
 *   u32 magic "SPR1" | u32 body length | u32 CRC-32 of the body | body
 *   body: u8 kind | u8 0 | u16 server name length | u32 count |
 *         u64 boot_id | u64 data_generation | i64 ttl | u64 cas |
 *         u64 unix time | i32 tkey | u32 0 | u64 "up to" offset (DONE) |
 *         server name | count x i32 tag values (DBT) or count key bytes
 *         (DEL, DEL_STALE)
 *
 * A record's offset in the file is its sequence number: a DONE record for a
 * server says every entry of that server before offset "up to" is replayed
 * (or dropped); compaction rewrites the file with the pending entries only
 * (or truncates it when none is left), with the next epoch, so offsets
 * read under an older epoch are never applied to the new file.
 */
#ifndef MDC_SPOOL_H
#define MDC_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MDCI_SPOOL_HDR 24
#define MDCI_SPOOL_REC_HDR 12
#define MDCI_SPOOL_BODY_FIXED ((size_t)64)
#define MDCI_SPOOL_DEFAULT_LIMIT ((size_t)1 << 20)
#define MDCI_SPOOL_MIN_LIMIT ((size_t)4096)
#define MDCI_SPOOL_MAX_NAME 1024
#define MDCI_SPOOL_MAX_COUNT 65536 /* tag values per entry, key bytes */

enum mdci_spool_kind {
    MDCI_SP_DBT = 1,       /* del_by_tag */
    MDCI_SP_DBT_STALE = 2, /* del_by_tag_stale (ttl) */
    MDCI_SP_DEL = 3,       /* delete of one key (cas) */
    MDCI_SP_FLUSH = 4,     /* the spool was full: flush the server */
    MDCI_SP_DONE = 5,      /* the server's entries before upto are done */
    MDCI_SP_DEL_STALE = 6, /* delete_stale of one key (cas, ttl); a
                            * library before it reads it as damage */
    MDCI_SP_KIND_MAX = MDCI_SP_DEL_STALE,
};

struct mdci_spool_rec {
    uint8_t kind;
    uint64_t off; /* read: its offset (sequence number) */
    uint64_t boot_id, generation; /* the server's when it failed; 0 unknown */
    int64_t ttl;
    uint64_t cas;
    uint64_t time;
    int32_t tkey;
    uint32_t count;
    uint64_t upto;        /* DONE */
    const char *server;   /* not NUL-terminated */
    uint16_t slen;
    const uint8_t *data;  /* count tag values (4 bytes each, LE) or key */
    bool pending;         /* scan: not done, not superseded */
};

struct mdci_spool {
    int fd;          /* -1: not open */
    bool locked;
    char path[4096];
    size_t limit;    /* bytes; a FLUSH record may pass it (one per server) */
    char err[512];   /* the last problem (open, lock, damage met) */
    uint64_t epoch;  /* the header's, read by lock */
    /* the last scan */
    uint8_t *buf;
    size_t len;
    struct mdci_spool_rec *recs;
    size_t nrecs, caprecs;
    uint64_t damaged; /* places skipped by the last scan */
};

uint32_t mdci_crc32(uint32_t crc, const void *p, size_t n);

/* The file name of a pool: "pool-XXXXXXXX.spool", a CRC-32 of the server
 * names in order (so processes with the same list share one file). */
void mdci_spool_name(char *out, size_t cap, const char *const *names,
                     size_t n);

/* Open (creating: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) dir/name.  An
 * existing file must be a regular file with one link, owned by this
 * process's user.  0, or -1 with s->err. */
int mdci_spool_open(struct mdci_spool *s, const char *dir, const char *name,
                    size_t limit);
void mdci_spool_close(struct mdci_spool *s);
/* flock(LOCK_EX) (nb: LOCK_NB, -1 with errno EWOULDBLOCK when held).
 * Follows a compaction by another process (the path replaced: reopen);
 * writes the header into an empty file. */
int mdci_spool_lock(struct mdci_spool *s, bool nb);
void mdci_spool_unlock(struct mdci_spool *s);
/* Read and check every record (locked): s->recs[], pending flags set by
 * the DONE and FLUSH records.  A truncated or corrupt place is skipped
 * (s->damaged, s->err names the first: "spool PATH: offset N: ...").
 * 0, or -1 (I/O, memory). */
int mdci_spool_scan(struct mdci_spool *s);
/* Append one record (locked).  Returns 0, 1 when the record does not fit
 * the limit (nothing written; the caller appends a FLUSH instead), -1. */
int mdci_spool_append(struct mdci_spool *s, const struct mdci_spool_rec *r,
                      bool over_limit);
/* Rewrite the file with the pending records of the last scan only
 * (locked): a new file (next epoch) renamed over the path, or, when none
 * is pending, the header of the next epoch alone.  0 or -1. */
int mdci_spool_compact(struct mdci_spool *s);
/* The file's size now (locked), or 0. */
uint64_t mdci_spool_size(struct mdci_spool *s);

#endif
