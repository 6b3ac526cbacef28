/*
 * tags.h - the tag forest: (tkey, tval) -> the records carrying that tag.
 *
 *   T buckets (rwlock + RB tree of tag nodes), chosen by hash of (tkey, tval)
 *     tag node (tkey, tval): list of struct tag_entry (embedded in records),
 *                            newest first; each entry points back to its
 *                            record.
 *
 * The forest owns only its nodes.  It never calls into the store: the bytes
 * its nodes take or give back are returned to the caller through 'mem'
 * arguments (added to *mem), for the caller to account.  It reads a linked
 * record's key and value lengths and takes references on records it hands
 * out (store_record.h's record layout).
 *
 * Lock rule (docs/threads.md): a tag bucket lock is always the innermost
 * lock.  Code here never takes a record-bucket lock and never holds two tag
 * bucket locks at once; callers may hold one record-bucket lock.
 */
#ifndef MDC_TAGS_H
#define MDC_TAGS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "store.h"

struct record;
struct tval_node;
struct tags;

/* One tag of one record, and the link node of that tag's list: embedded in
 * the record's tag area, so linking never allocates a link. */
struct tag_entry {
    int32_t tkey;
    int32_t tval;
    LIST_ENTRY(tag_entry) le; /* in the tag value's list, newest first */
    struct tval_node *tv;     /* NULL while not linked */
    struct record *rec;       /* back link */
};

struct tags *tags_setup(uint32_t nbuckets);
/* The bucket (lock) of a tag: a hash of the pair. */
uint32_t tags_bucket(const struct tags *t, int32_t tkey, int32_t tval);
/* Frees the forest's nodes (not the entries: they belong to records);
 * adds the bytes they held, negated, to *mem. */
void tags_teardown(struct tags *t, int64_t *mem);
size_t tags_fixed_bytes(const struct tags *t);

/* Link one entry at the head of its tag's list (newest first).  Returns 0,
 * or -1 if a node could not be allocated (nothing linked then). */
int tags_link(struct tags *t, struct tag_entry *e, int64_t *mem);
/* Put 'ne' where 'old' is in its list and unlink 'old' (keeps stack order;
 * never allocates or frees). */
void tags_relink(struct tags *t, struct tag_entry *old, struct tag_entry *ne);
/* Unlink one entry (no-op if not linked), freeing emptied nodes. */
void tags_unlink(struct tags *t, struct tag_entry *e, int64_t *mem);
/* Unlink n entries taking each bucket's lock once (one pass per bucket);
 * returns the number of lock rounds. */
int tags_unlink_many(struct tags *t, struct tag_entry *const *es, size_t n,
                     int64_t *mem);

/* Append to 'out' a referenced pointer to every record linked under
 * (tkey, tv) for each tv in tvals.  Stops adding once 'byte_limit' (sum of
 * key+value lengths) would be passed and returns ST_TRUNCATED then; 0 = no
 * limit.  ST_NO_MEMORY if 'out' could not grow.  The caller releases what
 * it got (store_recset_release). */
int tags_collect(struct tags *t, int32_t tkey, const int32_t *tvals,
                 size_t n, struct store_recset *out, size_t byte_limit);
/* Referenced newest record of one tag still in the record forest, or NULL. */
struct record *tags_newest(struct tags *t, struct mdc_tag tag);

/* The n largest tags by record count, largest first (store_top_tags()). */
size_t tags_top(struct tags *t, struct store_tag_count *out, size_t n);

/* Counters, the forest's own consistency and a walk over every linked entry
 * (quiescent forest only: no locks taken by check and foreach).  tags_check
 * checks the forest alone; store_check cross-checks it against the record
 * forest through tags_foreach.  'fn' returning non-zero stops the walk and
 * is returned. */
void tags_counts(struct tags *t, uint64_t *nkeys, uint64_t *nvals,
                 uint64_t *nlinks);
int tags_check(struct tags *t, char *buf, size_t len);
void tags_barrier(struct tags *t);
typedef int (*tags_visit_fn)(void *ctx, const struct tag_entry *e);
int tags_foreach(struct tags *t, tags_visit_fn fn, void *ctx);

#endif
