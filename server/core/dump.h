/*
 * dump.h - writing every live record of a store to a file and loading such
 * a file back (docs/dump.md: the format, what a concurrent writer can see,
 * durability).  Store-level code: no threads, no logging, no network; the
 * daemon's server/dumper.c runs it and reports.
 */
#ifndef MDC_DUMP_H
#define MDC_DUMP_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define DUMP_VERSION 3     /* written; 2 added the stale record bit, 3
                            * the unread one */
#define DUMP_VERSION_MIN 1 /* the oldest read */

enum dump_load_mode {
    DUMP_LOAD_REPAIR, /* keep every block that verifies */
    DUMP_LOAD_STRICT, /* any damage: load nothing */
    DUMP_LOAD_IGNORE, /* do not read the file */
};
/* "repair", "strict", "ignore" -> mode; -1 for anything else. */
int dump_load_mode_of(const char *s);

struct dump_info {
    uint64_t records;    /* written, or loaded */
    uint64_t bytes;      /* file size */
    uint64_t blocks;     /* written, or intact blocks read */
    uint64_t bad;        /* load: damaged places found */
    uint64_t invalid;    /* load: of them, records with a field the
                          * protocol would refuse (skipped in repair) */
    uint64_t expired;    /* load: records whose expiry had passed */
    uint64_t over_limit; /* load: records left out at the memory limit */
    uint64_t refused;    /* load: records the store would not take */
    uint64_t generation; /* load: the file's data generation (0: none) */
    uint64_t err_offset; /* first damage: file offset */
    char err[256];       /* first damage, or why a write failed */
};

/* Damage found while loading: called once per bad place, in file order. */
typedef void (*dump_report_fn)(void *ctx, uint64_t offset, const char *what);

/*
 * Dump st to path: written to path.tmp, fsync, rename over path, fsync of
 * the directory.  Safe while other threads use the store (each hash class
 * is copied under its stripe's read lock; no lock is held across I/O).
 * 0 on success; -1 with info->err, path.tmp removed, path untouched.
 */
int dump_write(struct store *st, const char *path, struct dump_info *info);

/*
 * Load a dump image into st (which no other thread uses yet).  Records
 * already expired are skipped; when the records exceed the memory limit
 * the most recently used are loaded first.  strict: the whole image is
 * verified before anything is loaded.  Returns 0 when loaded (in repair
 * mode possibly with info->bad > 0), -1 when strict found damage (nothing
 * loaded).  rep may be NULL.
 */
int dump_load_buf(struct store *st, const uint8_t *buf, size_t len,
                  enum dump_load_mode mode, dump_report_fn rep, void *ctx,
                  struct dump_info *info);
/* The same from a file: 1 if it does not exist (nothing loaded), -1 also
 * when it cannot be read (info->err). */
int dump_load(struct store *st, const char *path, enum dump_load_mode mode,
              dump_report_fn rep, void *ctx, struct dump_info *info);

#endif
