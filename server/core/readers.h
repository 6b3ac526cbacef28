/*
 * readers.h - per-thread reader state, so that a read writes only its own
 * thread's cache line (docs/threads.md, "Reads write nothing shared"):
 *
 *  - biased reader-writer locks (mdc_brlock_t, after BRAVO, Dice & Kogan,
 *    USENIX ATC 2019): a reader announces the lock in its own slot and
 *    checks the lock's bias; a writer takes the underlying pthread lock,
 *    revokes the bias and waits until no slot names the lock;
 *  - record holds: a reader publishes a pointer it keeps after the lock is
 *    released in one of its own hold slots (a hazard pointer, Michael 2004)
 *    instead of counting it in the object; whoever frees an object first
 *    looks that no slot holds it (mdc_held_anywhere).
 *
 * Each thread that calls in gets one 64-byte slot (its id is recycled when
 * it exits).  Past MDC_MAX_READERS threads, mdc_reader_self() returns NULL
 * and callers take the unbiased paths (the pthread read lock, a count).
 */
#ifndef MDC_READERS_H
#define MDC_READERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MDC_MAX_READERS 256
#define MDC_HOLDS 7

struct mdc_reader {
    _Atomic(const void *) reading;          /* the brlock read-held, or NULL */
    _Atomic(const void *) hold[MDC_HOLDS];  /* published pointers */
} __attribute__((aligned(64)));

extern struct mdc_reader mdc_readers[MDC_MAX_READERS];
extern _Atomic uint32_t mdc_readers_hw; /* ids in use are below this */
extern __thread struct mdc_reader *mdc_self_;

struct mdc_reader *mdc_reader_register(void);
static inline struct mdc_reader *mdc_reader_self(void)
{
    struct mdc_reader *s = mdc_self_;
    return s != NULL ? s : mdc_reader_register();
}

/* ---- holds ---------------------------------------------------------------- */
/* Publish p in a free slot of the calling thread; false if none is free.
 * Call while p is still protected (under the lock that found it). */
static inline bool mdc_hold(const void *p)
{
    struct mdc_reader *s = mdc_reader_self();
    if (s == NULL)
        return false;
    for (int i = 0; i < MDC_HOLDS; i++) {
        /* Acquire: the NULL may be another thread's mdc_unhold_any() of a
         * hold handed to it, and that thread read the old record's
         * refcnt before it.  A scanner that later reads our store below
         * (not an RMW, so it ends that CAS's release sequence) must still
         * come after those reads before it frees the old record: the
         * acquire here chains them (TSan found the gap in test_stress). */
        if (atomic_load_explicit(&s->hold[i], memory_order_acquire) == NULL) {
            /* ordered before the release of the lock that protects p,
             * which a retirer's scan comes after (docs/threads.md) */
            atomic_store_explicit(&s->hold[i], p, memory_order_release);
            return true;
        }
    }
    return false;
}
/* Drop one hold of p from the calling thread's slots; false if none. */
static inline bool mdc_unhold_own(const void *p)
{
    struct mdc_reader *s = mdc_self_;
    if (s == NULL)
        return false;
    for (int i = 0; i < MDC_HOLDS; i++) {
        const void *q = p;
        /* A compare-and-swap, not a store: mdc_unhold_any() on another
         * thread may take this very slot at the same moment (a hold handed
         * to and released by it), and exactly one of the two may consume
         * it; with a plain store both did, and the other release's token
         * was never dropped (a leaked record, found by ASan in
         * tests/test_stress).  Release: our reads of p come before a
         * scanner sees it gone; a scanner that still sees p only defers
         * the free. */
        if (atomic_load_explicit(&s->hold[i], memory_order_relaxed) == p &&
            atomic_compare_exchange_strong_explicit(&s->hold[i], &q, NULL,
                                                    memory_order_release,
                                                    memory_order_relaxed))
            return true;
    }
    return false;
}
/* Drop one hold of p from any thread's slots (a hold released by another
 * thread than the one that took it); false if none. */
bool mdc_unhold_any(const void *p);
/* Is p published in any slot?  (acquire loads of every slot) */
bool mdc_held_anywhere(const void *p);

/* ---- biased reader-writer lock ---------------------------------------------- */
typedef struct {
    pthread_rwlock_t rw;
    _Atomic uint32_t rbias;   /* readers may take the fast path */
    _Atomic uint32_t inhibit; /* no re-bias before this (mdc_br_clock) */
} __attribute__((aligned(64))) mdc_brlock_t;

/* A revocation keeps the bias off for this many times its own cost, so
 * writers spend at most about 1/(1+N) of their time revoking (BRAVO's N). */
#define MDC_INHIBIT_MULT 9

/* Monotonic time in units of 1024 ns, wrapping (compare by difference). */
uint32_t mdc_br_clock(void);

static inline void mdc_brlock_init(mdc_brlock_t *l)
{
    pthread_rwlock_init(&l->rw, NULL);
    atomic_init(&l->rbias, 1);
    atomic_init(&l->inhibit, 0);
}
static inline void mdc_brlock_destroy(mdc_brlock_t *l)
{
    pthread_rwlock_destroy(&l->rw);
}
static inline void mdc_br_rdlock(mdc_brlock_t *l)
{
    struct mdc_reader *s = mdc_reader_self();
    if (s != NULL && atomic_load_explicit(&l->rbias, memory_order_relaxed) &&
        atomic_load_explicit(&s->reading, memory_order_relaxed) == NULL) {
        /* announce, then look at the bias (Dekker with the writer's
         * revoke-then-scan: one of the two sees the other) */
        atomic_store_explicit(&s->reading, l, memory_order_seq_cst);
        if (atomic_load_explicit(&l->rbias, memory_order_seq_cst))
            return;
        atomic_store_explicit(&s->reading, NULL, memory_order_release);
    }
    pthread_rwlock_rdlock(&l->rw);
    if (s != NULL && !atomic_load_explicit(&l->rbias, memory_order_relaxed) &&
        (int32_t)(mdc_br_clock() - atomic_load_explicit(
                                       &l->inhibit, memory_order_relaxed)) >=
            0) {
        /* no writer can be inside while we read-hold: bias it again */
        atomic_store_explicit(&l->rbias, 1, memory_order_seq_cst);
    }
}
void mdc_br_revoke(mdc_brlock_t *l);
static inline void mdc_br_wrlock(mdc_brlock_t *l)
{
    pthread_rwlock_wrlock(&l->rw);
    if (atomic_load_explicit(&l->rbias, memory_order_relaxed))
        mdc_br_revoke(l);
}
static inline void mdc_br_unlock(mdc_brlock_t *l)
{
    struct mdc_reader *s = mdc_self_;
    if (s != NULL &&
        atomic_load_explicit(&s->reading, memory_order_relaxed) == l) {
        atomic_store_explicit(&s->reading, NULL, memory_order_release);
        return;
    }
    pthread_rwlock_unlock(&l->rw);
}

#endif
