/*
 * lock.h - the one lock wrapper.  Reader-writer locks are pthreads in every
 * build: they sleep instead of spinning (4 network threads may share 2
 * cores) and ThreadSanitizer understands them without suppressions; the
 * record stripes' (mdc_rwlock_t) add a reader bias (readers.h).  The
 * record forest stripes its locks (docs/threads.md, "The locks"), so their 56-byte size is
 * paid per stripe, not per bucket.
 */
#ifndef MDC_LOCK_H
#define MDC_LOCK_H

#include <pthread.h>

#include "readers.h"

/* The record stripes' lock: a pthread rwlock with a reader bias, so that
 * reads write nothing shared (readers.h, docs/threads.md). */
typedef mdc_brlock_t mdc_rwlock_t;
#define mdc_rwlock_init(l) mdc_brlock_init(l)
#define mdc_rwlock_destroy(l) mdc_brlock_destroy(l)

/* A plain pthread rwlock (the tag buckets: written as often as read). */
typedef struct {
    pthread_rwlock_t rw;
} __attribute__((aligned(64))) mdc_plainlock_t;

static inline void mdc_plainlock_init(mdc_plainlock_t *l)
{
    pthread_rwlock_init(&l->rw, NULL);
}
static inline void mdc_plainlock_destroy(mdc_plainlock_t *l)
{
    pthread_rwlock_destroy(&l->rw);
}
static inline void mdc_pl_rdlock(mdc_plainlock_t *l)
{
    pthread_rwlock_rdlock(&l->rw);
}
static inline void mdc_pl_wrlock(mdc_plainlock_t *l)
{
    pthread_rwlock_wrlock(&l->rw);
}
static inline void mdc_pl_unlock(mdc_plainlock_t *l)
{
    pthread_rwlock_unlock(&l->rw);
}

/* One set of verbs for both kinds. */
#define mdc_rdlock(l)                                                          \
    _Generic((l), mdc_plainlock_t *: mdc_pl_rdlock, default: mdc_br_rdlock)(l)
#define mdc_wrlock(l)                                                          \
    _Generic((l), mdc_plainlock_t *: mdc_pl_wrlock, default: mdc_br_wrlock)(l)
#define mdc_unlock(l)                                                          \
    _Generic((l), mdc_plainlock_t *: mdc_pl_unlock, default: mdc_br_unlock)(l)

typedef pthread_mutex_t mdc_mutex_t;
#define mdc_mutex_init(m) pthread_mutex_init((m), NULL)
#define mdc_mutex_destroy(m) pthread_mutex_destroy(m)
#define mdc_mutex_lock(m) pthread_mutex_lock(m)
#define mdc_mutex_unlock(m) pthread_mutex_unlock(m)

#endif
