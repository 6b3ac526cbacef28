/*
 * queue.h - the one queue wrapper used between threads
 * (docs/threads-models.md, "Queues"):
 * an intrusive FIFO guarded by a pthread mutex, with a condition variable
 * for consumers that block (payload threads).  Network threads do not block
 * on it: the producer learns from mq_push() that the queue was empty and
 * then wakes the consumer's event loop (libevent's own notification).
 * Intrusive nodes mean a hand-off never allocates; pthreads mean
 * ThreadSanitizer sees every edge without suppressions.
 */
#ifndef MDC_QUEUE_H
#define MDC_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct mq_node {
    struct mq_node *next;
};

struct mq {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct mq_node *head;
    struct mq_node **tail;
    size_t len;
    bool closed;
};

static inline void mq_setup(struct mq *q)
{
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->head = NULL;
    q->tail = &q->head;
    q->len = 0;
    q->closed = false;
}

static inline void mq_teardown(struct mq *q)
{
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

/* Append n; returns true when the queue was empty before (wake the reader). */
static inline bool mq_push(struct mq *q, struct mq_node *n)
{
    bool was_empty;

    n->next = NULL;
    pthread_mutex_lock(&q->mu);
    was_empty = q->head == NULL;
    *q->tail = n;
    q->tail = &n->next;
    q->len++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return was_empty;
}

/* Take the first node, blocking while empty; NULL once closed and empty. */
static inline struct mq_node *mq_pop_wait(struct mq *q)
{
    struct mq_node *n;

    pthread_mutex_lock(&q->mu);
    while (q->head == NULL && !q->closed)
        pthread_cond_wait(&q->cv, &q->mu);
    n = q->head;
    if (n != NULL) {
        q->head = n->next;
        if (q->head == NULL)
            q->tail = &q->head;
        q->len--;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Detach the whole list (FIFO order) without blocking; NULL when empty. */
static inline struct mq_node *mq_take_all(struct mq *q)
{
    struct mq_node *n;

    pthread_mutex_lock(&q->mu);
    n = q->head;
    q->head = NULL;
    q->tail = &q->head;
    q->len = 0;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* Wake every blocked consumer; they drain what is left, then get NULL. */
static inline void mq_close(struct mq *q)
{
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

#endif
