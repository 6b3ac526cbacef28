/*
 * store.h - the record forest and tag forest: the store's API
 * (docs/architecture.md, "The store").
 *
 * Records live in H buckets chosen by a 64-bit xxHash of the key; each bucket
 * is a red-black tree.  Buckets are guarded by striped reader-writer locks
 * (bucket i uses lock i % nlocks).  Tagged records are linked two ways into
 * the tag forest (tags.c).  Lock discipline: docs/threads.md.
 *
 * Every function returning a struct record * hands the caller one reference;
 * give it back with store_release().  A referenced record stays readable
 * (key, value, flags, CAS, tags) after it has been deleted or replaced.
 */
#ifndef MDC_STORE_H
#define MDC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct record;

/* One tag: a pair of signed 32-bit integers. */
struct mdc_tag {
    int32_t tkey;
    int32_t tval;
};

/* Status codes shared by every store operation (0 = success). */
enum store_status {
    ST_OK = 0,
    ST_NOT_FOUND,     /* no live record under that key / tag */
    ST_EXISTS,        /* add on a present key; CAS or compare-and-set mismatch */
    ST_NOT_STORED,    /* replace/append/prepend on a missing key */
    ST_TOO_LARGE,     /* value over the maximum item size */
    ST_KEY_INVALID,   /* key longer than STORE_MAX_KEY */
    ST_NO_MEMORY,     /* memory limit reached and eviction impossible or -M */
    ST_TOO_MANY_TAGS, /* more distinct tags than the configured maximum */
    ST_NOT_NUMBER,    /* incr/atomic op on a value that is not a decimal u64 */
    ST_TRUNCATED,     /* get_by_tag reply over the size limit (partial result) */
    ST_INVALID,       /* bad argument */
};
const char *store_strstatus(int status);

#define STORE_MAX_KEY 65534u
#define STORE_REL_EXPIRY_MAX (60 * 60 * 24 * 30) /* memcached's 30 days */

struct store_config {
    size_t mem_limit;       /* bytes of records + tag index; 0 = 1024 MiB */
    bool no_evict;          /* -M: refuse stores instead of evicting */
    uint32_t nbuckets;      /* power of two; 0 = derived from mem_limit.
                             * The most buckets; the table starts with
                             * initial_buckets and grows as records come */
    uint32_t initial_buckets; /* 0 = 65536, or nbuckets if that was set */
    uint32_t nlocks;        /* lock stripes, power of two; 0 = default */
    uint32_t tag_buckets;   /* power of two; 0 = 64 */
    uint32_t max_tags;      /* per record; 0 = 64 */
    uint32_t max_item_size; /* bytes of key, value and memcached's item
                             * header (over_item_size() in store_record.h);
                             * a restore checks the value alone; 0 = 1 MiB */
    size_t tag_reply_limit; /* get_by_tag reply bytes; 0 = 16 MiB */
    uint32_t sweep_interval_ms; /* background expiry sweep; 0 = no thread */
};

/* Mutation kinds announced through the hook, before they become visible. */
#define STORE_EVENTS(X)                                                        \
    X(EV_SET, "set")                                                           \
    X(EV_ADD, "add")                                                           \
    X(EV_REPLACE, "replace")                                                   \
    X(EV_CAS, "cas")                                                           \
    X(EV_APPEND, "append")                                                     \
    X(EV_PREPEND, "prepend")                                                   \
    X(EV_INCR, "incr")                                                         \
    X(EV_ATOMIC, "atomic")                                                     \
    X(EV_TOUCH, "touch")                                                       \
    X(EV_DELETE, "delete")                                                     \
    X(EV_TSTACK_PUSH, "tstack_push")                                           \
    X(EV_TSTACK_POP, "tstack_pop")                                             \
    X(EV_EXPIRE, "expire")                                                     \
    X(EV_EVICT, "evict")                                                       \
    X(EV_FLUSH, "flush")                                                       \
    X(EV_DEL_BY_TAG, "del_by_tag")                                             \
    X(EV_STALE, "stale")

enum store_event {
#define X(e, s) e,
    STORE_EVENTS(X)
#undef X
        EV__COUNT
};
const char *store_event_name(enum store_event ev);

/*
 * The mutation hook.  Called with the key's bucket lock held exclusively,
 * before the change becomes visible to any reader, once per affected key.
 * 'hash' is the key's 64-bit hash.  Must not call back into the store.
 * One exception: scheduling a delayed flush (store_flush_at) is announced
 * once as EV_FLUSH with key NULL, klen 0, hash 0 and no lock held, meaning
 * "every record may change": drop all copies.
 */
typedef void (*store_hook_fn)(void *ctx, enum store_event ev, const void *key,
                              uint32_t klen, uint64_t hash);

/* Clock, replaceable for tests: monotonic nanoseconds and wall-clock seconds. */
struct store_clock {
    uint64_t (*mono_ns)(void *ctx);
    int64_t (*wall_s)(void *ctx);
    void *ctx;
};

struct store_stats {
    uint64_t curr_items;
    uint64_t total_items;     /* successful stores */
    uint64_t bytes;           /* accounted bytes: records + tag index */
    uint64_t tag_bytes;       /* of which the tag index */
    uint64_t limit_maxbytes;
    uint64_t evictions;
    uint64_t expired;         /* records reclaimed because expired */
    uint64_t expired_unfetched;
    uint64_t evicted_unfetched;
    uint64_t get_expired;     /* reads that found an expired record */
    uint64_t nomem_held;      /* stores refused although eviction is on:
                               * the memory is held by readers */
    uint64_t direct_reclaims; /* stores that evicted records themselves to
                               * fit under the limit (memcached's name) */
    uint64_t lrutail_reflocked; /* evictions of a record a reader still
                                 * referenced (its memory returns when the
                                 * reader lets go) */
    uint64_t get_flushed;     /* reads by key that found a record a flush
                               * had made unreadable and not yet reclaimed
                               * (and reclaimed it), as memcached counts */
    uint64_t flush_reclaimed; /* flushed records reclaimed (by a read or
                               * write of the key, the sweeper, eviction) */
    uint64_t flush_pending;   /* flush cut-offs pending: a delayed flush
                               * not yet due, and a flush whose records the
                               * sweeper has not all reclaimed (0..2) */
    uint64_t tagged_items;    /* live records with at least one tag */
    uint64_t tag_links;       /* (record, tag) links in the tag index */
    uint64_t tag_values;      /* distinct (tkey, tval) in the index */
    uint64_t tag_keys;        /* distinct tkey in the index */
    uint64_t nbuckets;
    uint64_t fixed_bytes;     /* bucket arrays, locks, expiry wheel */
};

struct store *store_setup(const struct store_config *cfg);
void store_teardown(struct store *st);
void store_set_hook(struct store *st, store_hook_fn fn, void *ctx);

/* Told of each eviction, after the record left the index (no lock held,
 * the record still readable): memcached's "watch evictions".  fn NULL
 * turns it off; set and cleared from any thread. */
typedef void (*store_evict_fn)(void *ctx, struct store *st,
                               const struct record *r);
void store_set_evict_log(struct store *st, store_evict_fn fn, void *ctx);
void store_set_clock(struct store *st, const struct store_clock *clk);
void store_get_stats(struct store *st, struct store_stats *out);
const struct store_config *store_config(const struct store *st);
/*
 * The data generation: an identity of the records the store holds, chosen
 * at random by the server when it starts empty and carried over by a dump
 * (written into the dump's header, set again by the load), so a client can
 * tell a server that kept its records from one that lost them.  0: none.
 */
void store_set_generation(struct store *st, uint64_t gen);
uint64_t store_generation(const struct store *st);

/* ---- records -------------------------------------------------------- */
const void *record_key(const struct record *r);
uint32_t record_klen(const struct record *r);
const void *record_value(const struct record *r);
uint32_t record_vlen(const struct record *r);
uint32_t record_flags(const struct record *r);
uint64_t record_cas(const struct record *r);
/* What a reply is composed of, read in one call: a GET's reply needs all
 * of it, and one call per field made the record's layout cost a call
 * each (the struct is opaque above the store). */
struct record_parts {
    const void *key;
    const void *value;
    uint32_t klen;
    uint32_t vlen;
    uint32_t flags;
};
void record_parts(const struct record *r, struct record_parts *p);
/* Seconds left before expiry as a protocol would report it: -1 = never. */
int64_t record_ttl(struct store *st, const struct record *r);
/* Deadline on CLOCK_MONOTONIC in ns (what bpf_ktime_get_ns() reads), or 0
 * for never; never later than the moment the store itself expires it. */
uint64_t record_deadline_ns(const struct store *st, const struct record *r);
uint32_t record_ntags(const struct record *r);
struct mdc_tag record_tag(const struct record *r, uint32_t i);

void store_release(struct store *st, struct record *r);

/* ---- keyed operations ----------------------------------------------- */
enum store_mode {
    STORE_SET,
    STORE_ADD,
    STORE_REPLACE,
    STORE_CAS,
    STORE_APPEND,
    STORE_PREPEND,
};

struct store_item {
    const void *key;
    uint32_t klen;
    const void *value;
    uint32_t vlen;
    uint32_t flags;          /* client flags */
    int64_t exptime;         /* protocol expiry: 0, relative, absolute, <0 */
    uint64_t cas;            /* STORE_CAS: expected version */
    const struct mdc_tag *tags;
    uint32_t ntags;          /* ignored (tags kept) by append/prepend */
    bool invalidate;         /* STORE_CAS (memcached's ms I): a cas older
                              * than the record's still stores, keeping its
                              * expiry and win token, marked stale */
};

/* Store one item; on success *cas_out (if not NULL) gets the new version. */
int store_put(struct store *st, enum store_mode mode,
              const struct store_item *it, uint64_t *cas_out);

/*
 * A store in 'mode' was refused for its size or for memory: remove the
 * record it would have overwritten, so that the client that just failed to
 * update the key does not go on reading the old value (memcached does this
 * for set).  Done for set, replace and cas (cas: only the version given);
 * add, append and prepend leave the record as it is.  store_put() calls it
 * itself; a protocol that refuses a value before it reaches the store
 * (over -I) calls it.  Returns 1 when a record was removed.
 */
int store_drop_stale(struct store *st, enum store_mode mode, const void *key,
                     uint32_t klen, uint64_t cas);

/* Look a key up; NULL when absent or expired.  Returns a reference. */
struct record *store_get(struct store *st, const void *key, uint32_t klen);
/* The same, also telling what the record's access state was before this
 * read (memcached's mg h and l). */
struct store_access {
    bool hit_before;  /* read at least once before */
    uint32_t idle_s;  /* seconds since the last read or store */
};
struct record *store_get_access(struct store *st, const void *key,
                                uint32_t klen, struct store_access *prev);
/*
 * memcached's mg with its record-changing flags (docs/protocol-text.md,
 * "Stale records and win tokens").  One lookup, atomic with the win:
 *  - N (vivify): a miss links an empty record (flags 0, expiry N) and its
 *    caller wins (W); a racing miss finds that record instead;
 *  - R: a record whose TTL left is below R's TTL hands out a win once;
 *  - a stale record (X) hands out a win to its first reader;
 *  - a record whose win went out answers Z (the winner does not);
 *  - T touches (the write lock is taken then), before or after R's test
 *    as the request ordered them (recache_after_touch);
 *  - no_bump (u): neither the access stamp nor the hit bit change.
 * Returns a reference, or NULL on a miss without N.
 */
struct store_mget {
    bool no_bump;
    bool touch;
    int64_t exptime;        /* T */
    bool vivify;
    int64_t vivify_exptime; /* N */
    bool recache;
    int64_t recache_exptime; /* R: protocol expiry, as exptime */
    bool recache_after_touch;
};
struct store_mget_res {
    struct store_access prev; /* before this read, as store_get_access */
    bool won;     /* W: this caller is to recompute */
    bool stale;   /* X */
    bool pending; /* Z: another caller holds the win */
    bool created; /* the record was vivified by this call */
};
struct record *store_mget(struct store *st, const void *key, uint32_t klen,
                          const struct store_mget *q,
                          struct store_mget_res *res);
/* Whether a referenced record is stale / its win token went out (racy
 * looks, for reports). */
bool record_stale(const struct record *r);
bool record_won(const struct record *r);
/* Either of the two: an mg reply carries X, W or Z. */
bool record_meta_marked(const struct record *r);
/*
 * memcached's md I: mark the live record stale instead of deleting it -
 * a new CAS, the win token taken back (the next reader wins), and with
 * set_ttl the expiry exptime.  cas != 0: only that version (ST_EXISTS).
 * ST_NOT_FOUND on a miss.
 */
int store_invalidate(struct store *st, const void *key, uint32_t klen,
                     uint64_t cas, bool set_ttl, int64_t exptime);
/* Change the memory limit live (memcached's cache_memlimit); lowering it
 * evicts down to the new limit now (unless only records readers hold are
 * left: ST_NO_MEMORY, the limit is set anyway).  ST_INVALID for 0. */
int store_set_mem_limit(struct store *st, size_t bytes);
/* Hint: key is about to be looked up (its bucket slot and lock stripe are
 * prefetched; nothing is read or locked). */
void store_prefetch(struct store *st, const void *key, uint32_t klen);
/* A key of a batch (store_prefetch_batch, store_get_batch). */
#define STORE_HAVE_BATCH 1
struct store_key {
    const void *key;
    uint32_t klen;
};
/* Hint for a batch of lookups about to run one after another: prefetches
 * each key's bucket slot and stripe, then (under the stripe's read lock,
 * which a reader takes without writing shared lines) the first record of
 * its bucket, pipelined so the misses of different keys overlap. */
void store_prefetch_batch(struct store *st, const struct store_key *keys,
                          size_t n);
/* store_get of every key (out[i], NULL when absent, expired or invalid),
 * pipelined like store_prefetch_batch; each record returned is a reference
 * to drop with store_release.  A thread keeps up to 7 references in its
 * own hold slots; more are counted in the record (a shared write), so
 * batches of at most 7 hits keep reads writing nothing shared.  Returns the
 * number of hits. */
size_t store_get_batch(struct store *st, const struct store_key *keys,
                       size_t n, struct record **out);
/*
 * Run fn on the live record under key while its bucket's read lock is held
 * (no reference taken; fn must not call into the store).  This is how the
 * XDP mirror is filled: a fill is thereby serialized with the invalidation
 * that every mutation announces under the write lock (docs/xdp.md, "The
 * consistency contract", rule 2).
 * Returns 1 if fn ran, 0 if the key is absent or expired.
 */
typedef void (*store_visit_fn)(void *ctx, struct store *st,
                               const struct record *r);
int store_visit(struct store *st, const void *key, uint32_t klen,
                store_visit_fn fn, void *ctx);
/* Get and touch (memcached gat). */
struct record *store_gat(struct store *st, const void *key, uint32_t klen,
                         int64_t exptime);
int store_touch(struct store *st, const void *key, uint32_t klen,
                int64_t exptime);
/* cas == 0 deletes whatever is there; otherwise only that version. */
int store_delete(struct store *st, const void *key, uint32_t klen,
                 uint64_t cas);

/* memcached incr/decr: incr wraps at 2^64, decr stops at 0. */
int store_incr(struct store *st, const void *key, uint32_t klen,
               uint64_t delta, bool decr, uint64_t *value_out,
               uint64_t *cas_out);

/* The same only while the record's CAS is expect_cas (0: any), else
 * ST_EXISTS (memcached's ma C). */
int store_incr_cas(struct store *st, const void *key, uint32_t klen,
                   uint64_t delta, bool decr, uint64_t expect_cas,
                   uint64_t *value_out, uint64_t *cas_out);

enum store_atomic_op {
    ATOMIC_ADD,        /* value += a; returns the new value */
    ATOMIC_FETCH_ADD,  /* value += a; returns the old value */
    ATOMIC_CMPSET,     /* if value == a then value = b; returns old value */
    ATOMIC_READ_CLEAR, /* returns value, sets it to 0 */
};
int store_atomic(struct store *st, enum store_atomic_op op, const void *key,
                 uint32_t klen, uint64_t a, uint64_t b, uint64_t *result,
                 uint64_t *cas_out);

/* Flush every record, in O(1): a cut-off on the version clock hides every
 * record stored before it at once (announced once, as EV_FLUSH with no
 * key); the sweeper, a read or write of the key, or eviction reclaims
 * them later (without a sweeper: only the last two). */
void store_flush(struct store *st);
/* memcached's "flush_all <delay>": flush everything when the protocol
 * expiry (relative or absolute, as for records) comes; a later call
 * replaces the pending one, exptime <= 0 flushes now.  The cut-off is set
 * by the first store call from the moment on (or the sweeper's tick), so
 * that what is stored from then on is above it. */
void store_flush_at(struct store *st, int64_t exptime);

/* Reclaim expired records in up to 'max_buckets' buckets; returns count. */
size_t store_sweep(struct store *st, size_t max_buckets);

/* ---- tag operations -------------------------------------------------- */
struct store_recset {
    struct record **recs;
    size_t n, cap;
    size_t bytes;            /* sum of key + value lengths */
};
void store_recset_release(struct store *st, struct store_recset *set);

/* Union of live records carrying (tkey, tv) for any tv; each once.
 * ST_TRUNCATED when the reply limit cut it short (set holds what fit). */
int store_get_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, struct store_recset *out);
int store_del_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                     size_t ntvals, uint64_t *ndeleted);
/* The stale mode of del_by_tag: every live record carrying one of the tags
 * is invalidated as store_invalidate() does (with set_ttl, its expiry
 * becomes exptime) instead of deleted; the race rule is del_by_tag's
 * (docs/threads.md).  *nmarked gets the count. */
int store_stale_by_tag(struct store *st, int32_t tkey, const int32_t *tvals,
                       size_t ntvals, bool set_ttl, int64_t exptime,
                       uint64_t *nmarked);

/* The n tags carrying the most records, largest first (ties by tkey,
 * tval); returns how many were written.  Walks the tag index under each
 * bucket's read lock in turn: a consistent view per bucket, not overall. */
struct store_tag_count {
    struct mdc_tag tag;
    uint64_t records;
};
size_t store_top_tags(struct store *st, struct store_tag_count *out,
                      size_t n);

/* tstack: push stores value under a generated key carrying tag; the key is
 * written to keybuf (at least STORE_TSTACK_KEYMAX bytes). */
#define STORE_TSTACK_KEYMAX 64
int store_tstack_push(struct store *st, struct mdc_tag tag, const void *value,
                      uint32_t vlen, uint32_t flags, int64_t exptime,
                      char *keybuf, uint32_t *klen_out, uint64_t *cas_out);
/* Remove and return the most recently pushed (linked) record of the tag. */
int store_tstack_pop(struct store *st, struct mdc_tag tag,
                     struct record **out);

/* ---- dumps and restore (dump.c; docs/dump.md) -------------------------- */
/*
 * A walk over every live record, split into hash classes: the records whose
 * key hash is cls modulo nclasses.  store_walk_classes() gives nclasses
 * (the table's size when the walk begins); store_walk_class() runs fn on
 * each live record of one class while that class's stripe read lock is
 * held - one bucket's worth of records at a time, each record visited once
 * over the whole walk even while the table grows.  fn must not call into
 * the store.  Returns the records visited.
 */
typedef void (*store_walk_fn)(void *ctx, struct store *st,
                              const struct record *r);
uint32_t store_walk_classes(struct store *st);
size_t store_walk_class(struct store *st, uint32_t nclasses, uint32_t cls,
                        store_walk_fn fn, void *ctx);
/* Expiry as absolute Unix time (0 = never), a pending delayed flush
 * included; at least now + 1 for a live record. */
int64_t record_expiry_wall(struct store *st, const struct record *r);
/* Recency: ticks of 2^20 ns since the record was last read, or since it
 * was stored if it was not read since (record_fetched() tells which). */
uint32_t record_idle_ticks(struct store *st, const struct record *r);
/* Whether the record was read since it was stored (mg's h). */
bool record_fetched(const struct record *r);
/* Tagged records: tag links made since this one was linked (its place in
 * its tags' lists, newest first); 0 untagged. */
uint32_t record_link_age(struct store *st, const struct record *r);
/* Accounted bytes of one record. */
size_t record_mem(const struct record *r);
/* The bytes the record asked the allocator for (header, key, value, flags,
 * tag area): record_mem() less the allocator's rounding. */
size_t record_req_bytes(const struct record *r);

/* One record to put back as it was dumped. */
struct store_restore {
    const void *key;
    uint32_t klen;
    const void *value;
    uint32_t vlen;
    uint32_t flags;
    uint64_t cas;
    int64_t expiry_wall;   /* Unix time, 0 = never */
    uint32_t idle_ticks;   /* as record_idle_ticks(); UINT32_MAX: none
                            * known (idle from now, not read) */
    const struct mdc_tag *tags;
    uint32_t ntags;
    bool stale;            /* restored stale; a win token never is */
    bool unread;           /* not read since stored: idle_ticks count
                            * from the store, and it stays on probation */
};
/*
 * Insert a record with its own CAS, expiry and recency, never evicting:
 * ST_NO_MEMORY once it would pass the memory limit, ST_NOT_FOUND if its
 * expiry has passed, ST_EXISTS if the key is present, ST_KEY_INVALID,
 * ST_TOO_LARGE, ST_TOO_MANY_TAGS or ST_INVALID for a record this store
 * would not hold.  Later CAS versions are above every restored one.  A
 * tagged record is linked into the record forest only: *tagged gets a
 * reference, and store_restore_tags() must be called on it (oldest link
 * first, to rebuild the lists' order) before the store is used.
 * For a store no other thread uses yet (loading at start).
 */
int store_restore(struct store *st, const struct store_restore *it,
                  struct record **tagged);
/* Link a restored record's tags (newest in its lists) and release it;
 * ST_NO_MEMORY removes the record. */
int store_restore_tags(struct store *st, struct record *r);
/* Before restoring into an empty store: size the record table for n
 * records at once (no bucket splits while loading).  No-op otherwise. */
void store_reserve(struct store *st, uint64_t n);
/* tstack keys generated later use sequence numbers above seq. */
void store_note_tstack_seq(struct store *st, uint64_t seq);

/* ---- checks for tests ------------------------------------------------- */
/* Walk both indexes and verify they agree exactly; returns 0 if consistent,
 * otherwise -1 with a message in buf.  Must run with the store quiescent
 * (no writer, no expiry due; the sweeper thread may be alive). */
int store_check(struct store *st, char *buf, size_t buflen);

uint64_t store_hash(const void *key, uint32_t klen);

#endif
