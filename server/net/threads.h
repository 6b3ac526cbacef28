/*
 * threads.h - the thread models (docs/threads-models.md) as wirings of
 * struct worker: network threads with their event loops, payload threads
 * fed through queues, and the hand-off of connections between them.
 */
#ifndef MDC_THREADS_H
#define MDC_THREADS_H

#include <stddef.h>

#include "server/server.h"

struct conn;
struct mdc_tag;

int threads_setup(struct server *srv);
int threads_start(struct server *srv);
void threads_stop_and_join(struct server *srv);
void threads_teardown(struct server *srv);
/* Set up a network loop on w: inbox, tick and stop events. */
int worker_net_setup(struct worker *w);
/* The inbox (new and returned connections) and the 1 s tick, for a loop
 * that is not libevent's (uring.c). */
void worker_inbox_run(struct worker *w);
void worker_tick_run(struct worker *w);
/* The tick runs at most this often for a connection's timeout: a walk
 * looks at every connection, and those due within a grain go in one. */
#define WORKER_TICK_GRAIN_MS 20
/* The tick's arithmetic (threads.c), coarse-clock ms (server_coarse_ms()):
 * when the tick is due next, given the earliest connection deadline due
 * (UINT64_MAX: none); and how long to wait from now_ms until a coarse
 * reading is at least at, res the clock's resolution. */
uint64_t worker_next_tick_ms(uint64_t now_ms, uint64_t due);
uint64_t worker_wait_ms(uint64_t now_ms, uint64_t at, uint64_t res);
/* Begin a graceful stop of w's connections (w's own thread). */
void worker_begin_stop(struct worker *w);
/* Hand a new connection to a network worker (from the main thread). */
void worker_give_conn(struct worker *w, struct conn *c);
/* Return a processed connection to its network worker (payload thread). */
void worker_return_conn(struct worker *w, struct conn *c);
/* Grow w's tag scratch to n entries; NULL on allocation failure. */
struct mdc_tag *worker_tags(struct worker *w, size_t n);

#endif
