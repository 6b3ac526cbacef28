/*
 * lock.h - the one lock wrapper.  Reader-writer locks are pthreads in every
 * build: they sleep instead of spinning (4 network threads may share 2
 * cores) and ThreadSanitizer understands them without suppressions.  The
 * record forest stripes its locks (docs/threads.md, "The locks"), so their
 * 56-byte size is paid per stripe, not per bucket.
 */
#ifndef MDC_LOCK_H
#define MDC_LOCK_H

#include <pthread.h>

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
static inline void mdc_rdlock(mdc_rwlock_t *l) { pthread_rwlock_rdlock(&l->rw); }
static inline void mdc_wrlock(mdc_rwlock_t *l) { pthread_rwlock_wrlock(&l->rw); }
static inline void mdc_unlock(mdc_rwlock_t *l) { pthread_rwlock_unlock(&l->rw); }

typedef pthread_mutex_t mdc_mutex_t;
#define mdc_mutex_init(m) pthread_mutex_init((m), NULL)
#define mdc_mutex_destroy(m) pthread_mutex_destroy(m)
#define mdc_mutex_lock(m) pthread_mutex_lock(m)
#define mdc_mutex_unlock(m) pthread_mutex_unlock(m)

#endif
