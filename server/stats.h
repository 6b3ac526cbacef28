/*
 * stats.h - per-thread counters declared once (STATS_THREAD_FIELDS).  Each
 * server thread owns one struct thread_stats and is its only writer; a
 * reader sums all threads on demand (stats_collect()).  No global lock: a
 * counter is bumped with a relaxed load and store (no locked instruction),
 * which also keeps ThreadSanitizer informed.
 */
#ifndef MDC_STATS_H
#define MDC_STATS_H

#include <stdint.h>

#include "server/core/store.h"

/* X(name): memcached's names where memcached has the counter. */
#define STATS_THREAD_FIELDS(X)                                                 \
    X(total_connections)                                                       \
    X(rejected_connections)                                                    \
    X(protected_mode_refusals)                                                 \
    X(auth_cmds)                                                               \
    X(auth_errors)                                                             \
    X(auth_timeouts)                                                           \
    X(auth_timeouts_deferred)                                                  \
    X(sasl_auth_errors)                                                        \
    X(binary_requests)                                                         \
    X(closed_connections)                                                      \
    X(cmd_get)                                                                 \
    X(cmd_set)                                                                 \
    X(cmd_touch)                                                               \
    X(cmd_flush)                                                               \
    X(get_hits)                                                                \
    X(get_misses)                                                              \
    X(delete_hits)                                                             \
    X(delete_misses)                                                           \
    X(incr_hits)                                                               \
    X(incr_misses)                                                             \
    X(decr_hits)                                                               \
    X(decr_misses)                                                             \
    X(cas_hits)                                                                \
    X(cas_misses)                                                              \
    X(cas_badval)                                                              \
    X(touch_hits)                                                              \
    X(touch_misses)                                                            \
    X(cmd_atomic)                                                              \
    X(cmd_get_by_tag)                                                          \
    X(get_by_tag_records)                                                      \
    X(get_by_tag_truncated)                                                    \
    X(cmd_del_by_tag)                                                          \
    X(del_by_tag_records)                                                      \
    X(cmd_tstack_push)                                                         \
    X(cmd_tstack_pop)                                                          \
    X(cmd_stats)                                                               \
    X(store_refused)                                                           \
    X(store_too_large)                                                         \
    X(store_no_memory)                                                         \
    X(protocol_errors)                                                         \
    X(bytes_read)                                                              \
    X(bytes_written)                                                           \
    X(output_paused)                                                           \
    X(conn_yields)                                                             \
    X(conn_buffer_pool_misses)                                                 \
    X(listen_disabled_num)                                                     \
    X(slow_reader_drops)                                                       \
    X(idle_kicks)                                                              \
    X(payload_handoffs)                                                        \
    X(loop_yields)                                                             \
    X(udp_datagrams_in)                                                        \
    X(udp_datagrams_out)                                                       \
    X(udp_requests)                                                            \
    X(udp_ignored)                                                             \
    X(udp_refused)                                                             \
    X(udp_writes)                                                              \
    X(udp_writes_refused)                                                      \
    X(udp_reply_too_large)                                                     \
    X(udp_send_drops)                                                          \
    X(tls_connections)                                                         \
    X(tls_handshake_failures)                                                  \
    X(tls_ktls_send)                                                           \
    X(tls_ktls_recv)                                                           \
    X(tls_userspace)

struct thread_stats {
#define X(n) uint64_t n;
    STATS_THREAD_FIELDS(X)
#undef X
} __attribute__((aligned(64)));

/* Single-writer increment: only the owning thread calls this. */
#define STAT_ADD(ts, field, v)                                                 \
    __atomic_store_n(&(ts)->field,                                             \
                     __atomic_load_n(&(ts)->field, __ATOMIC_RELAXED) +         \
                         (uint64_t)(v),                                        \
                     __ATOMIC_RELAXED)
#define STAT_INC(ts, field) STAT_ADD(ts, field, 1)

/* Count one retrieval (get, gets, gat, gats, mg; native GET/GAT; UDP get)
 * the same way for every protocol: cmd_get and a hit or a miss, and for a
 * get-and-touch cmd_touch and a touch hit or miss too. */
static inline void stats_count_get(struct thread_stats *ts, int touch, int hit)
{
    STAT_INC(ts, cmd_get);
    if (hit)
        STAT_INC(ts, get_hits);
    else
        STAT_INC(ts, get_misses);
    if (touch) {
        STAT_INC(ts, cmd_touch);
        if (hit)
            STAT_INC(ts, touch_hits);
        else
            STAT_INC(ts, touch_misses);
    }
}

/* Count a touch from its store status: cmd_touch, touch hits/misses. */
static inline void stats_count_touch(struct thread_stats *ts, int status)
{
    STAT_INC(ts, cmd_touch);
    if (status == ST_OK)
        STAT_INC(ts, touch_hits);
    else if (status == ST_NOT_FOUND)
        STAT_INC(ts, touch_misses);
}

/* Count an incr or decr from its store status (hits, misses). */
static inline void stats_count_incr(struct thread_stats *ts, int decr,
                                    int status)
{
    if (decr && status == ST_OK)
        STAT_INC(ts, decr_hits);
    else if (decr && status == ST_NOT_FOUND)
        STAT_INC(ts, decr_misses);
    else if (status == ST_OK)
        STAT_INC(ts, incr_hits);
    else if (status == ST_NOT_FOUND)
        STAT_INC(ts, incr_misses);
}

/* Count the outcome of a store_put() the same way for every protocol:
 * cas hits/misses/bad values, and stores refused for size or memory. */
static inline void stats_count_put(struct thread_stats *ts, int is_cas,
                                   int status)
{
    if (is_cas) {
        if (status == ST_OK)
            STAT_INC(ts, cas_hits);
        else if (status == ST_EXISTS)
            STAT_INC(ts, cas_badval);
        else if (status == ST_NOT_FOUND)
            STAT_INC(ts, cas_misses);
    }
    if (status == ST_NO_MEMORY || status == ST_TOO_LARGE)
        STAT_INC(ts, store_refused);
    if (status == ST_NO_MEMORY)
        STAT_INC(ts, store_no_memory);
    else if (status == ST_TOO_LARGE)
        STAT_INC(ts, store_too_large);
}

#endif
