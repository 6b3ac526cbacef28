/*
 * lock.h - the one lock wrapper.  Reader-writer locks are pthreads in every
 * build: they sleep instead of spinning (4 network threads may share 2
 * cores) and ThreadSanitizer understands them without suppressions.  The
 * record forest stripes its locks (DESIGN.md §3), so their 56-byte size is
 * paid per stripe, not per bucket.
 */
#ifndef MDC_LOCK_H
#define MDC_LOCK_H

#include <pthread.h>

#include "readers.h"

typedef struct {
    pthread_rwlock_t rw;
} __attribute__((aligned(64))) mdc_rwlock_t;

static inline void mdc_rwlock_init(mdc_rwlock_t *l)
{
    pthread_rwlock_init(&l->rw, NULL);
}
static inline void mdc_rwlock_destroy(mdc_rwlock_t *l)
{
    pthread_rwlock_destroy(&l->rw);
}
static inline void mdc_rw_rdlock(mdc_rwlock_t *l)
{
    pthread_rwlock_rdlock(&l->rw);
}
static inline void mdc_rw_wrlock(mdc_rwlock_t *l)
{
    pthread_rwlock_wrlock(&l->rw);
}
static inline void mdc_rw_unlock(mdc_rwlock_t *l)
{
    pthread_rwlock_unlock(&l->rw);
}

/* One set of verbs for both kinds: the record stripes are biased locks
 * (readers.h), the tag buckets plain ones. */
#define mdc_rdlock(l)                                                          \
    _Generic((l), mdc_brlock_t *: mdc_br_rdlock, default: mdc_rw_rdlock)(l)
#define mdc_wrlock(l)                                                          \
    _Generic((l), mdc_brlock_t *: mdc_br_wrlock, default: mdc_rw_wrlock)(l)
#define mdc_unlock(l)                                                          \
    _Generic((l), mdc_brlock_t *: mdc_br_unlock, default: mdc_rw_unlock)(l)

typedef pthread_mutex_t mdc_mutex_t;
#define mdc_mutex_init(m) pthread_mutex_init((m), NULL)
#define mdc_mutex_destroy(m) pthread_mutex_destroy(m)
#define mdc_mutex_lock(m) pthread_mutex_lock(m)
#define mdc_mutex_unlock(m) pthread_mutex_unlock(m)

#endif
