/*
 * readers.c - the table of per-thread reader slots (readers.h).
 */
#include "config.h"

#include <sched.h>
#include <time.h>

#include "readers.h"

struct mdc_reader mdc_readers[MDC_MAX_READERS];
_Atomic uint32_t mdc_readers_hw;
__thread struct mdc_reader *mdc_self_;

static pthread_mutex_t ids_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t ids_used[MDC_MAX_READERS];
static pthread_key_t ids_key;
static pthread_once_t ids_once = PTHREAD_ONCE_INIT;

/* At thread exit the id goes back.  Holds left in the slot stay valid: any
 * thread may drop them (mdc_unhold_any), and a later owner of the id only
 * fills free slots. */
static void id_release(void *arg)
{
    struct mdc_reader *s = arg;
    pthread_mutex_lock(&ids_mu);
    ids_used[s - mdc_readers] = 0;
    pthread_mutex_unlock(&ids_mu);
}

static void ids_init(void) { pthread_key_create(&ids_key, id_release); }

struct mdc_reader *mdc_reader_register(void)
{
    pthread_once(&ids_once, ids_init);
    struct mdc_reader *s = NULL;
    pthread_mutex_lock(&ids_mu);
    for (uint32_t i = 0; i < MDC_MAX_READERS; i++) {
        if (!ids_used[i]) {
            ids_used[i] = 1;
            s = &mdc_readers[i];
            if (i + 1 > atomic_load(&mdc_readers_hw))
                atomic_store(&mdc_readers_hw, i + 1);
            break;
        }
    }
    pthread_mutex_unlock(&ids_mu);
    if (s != NULL) {
        pthread_setspecific(ids_key, s);
        mdc_self_ = s;
    }
    return s;
}

bool mdc_unhold_any(const void *p)
{
    uint32_t n = atomic_load(&mdc_readers_hw);
    for (uint32_t t = 0; t < n; t++) {
        for (int i = 0; i < MDC_HOLDS; i++) {
            const void *q = p;
            if (atomic_load_explicit(&mdc_readers[t].hold[i],
                                     memory_order_relaxed) == p &&
                atomic_compare_exchange_strong(&mdc_readers[t].hold[i], &q,
                                               NULL))
                return true;
        }
    }
    return false;
}

bool mdc_held_anywhere(const void *p)
{
    uint32_t n = atomic_load(&mdc_readers_hw);
    for (uint32_t t = 0; t < n; t++)
        for (int i = 0; i < MDC_HOLDS; i++)
            if (atomic_load_explicit(&mdc_readers[t].hold[i],
                                     memory_order_acquire) == p)
                return true;
    return false;
}

uint32_t mdc_br_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)(((uint64_t)ts.tv_sec * 1000000000u +
                       (uint64_t)ts.tv_nsec) >> 10);
}

/* Called by a writer holding l's pthread write lock: no new fast-path
 * reader enters once the bias is off; wait out those inside. */
void mdc_br_revoke(mdc_brlock_t *l)
{
    uint32_t t0 = mdc_br_clock();
    atomic_store_explicit(&l->rbias, 0, memory_order_seq_cst);
    uint32_t n = atomic_load(&mdc_readers_hw);
    for (uint32_t t = 0; t < n; t++) {
        unsigned spins = 0;
        while (atomic_load_explicit(&mdc_readers[t].reading,
                                    memory_order_seq_cst) == l) {
            if (++spins > 64)
                sched_yield();
        }
    }
    uint32_t t1 = mdc_br_clock();
    atomic_store_explicit(&l->inhibit, t1 + 1 + MDC_INHIBIT_MULT * (t1 - t0),
                          memory_order_relaxed);
}
