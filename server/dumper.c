/*
 * dumper.c - dumps in the running daemon (dumper.h; docs/dump.md).
 *
 * One dump thread sleeps on a condition variable.  A request sets
 * 'pending' unless a dump is already pending or running; either way the
 * requester's dump is the next one to end (seq_done + 1), and a waiting
 * requester sleeps until seq_done reaches it.  So two triggers close
 * together give one dump, and both are told when it ends.
 *
 * The dump commands do not wait: their connection is parked (conn_park)
 * on the waiters list with the dump it gets (park_seq); the dump thread,
 * when that dump ends, writes the answer into the connection (park_done)
 * and gives it back to its network thread.  A parked connection is in
 * flight, so its owner touches nothing but its readiness flags meanwhile.
 */
#include "config.h"

#include "dumper.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "server/net/conn.h"
#include "server/net/threads.h"
#include "server/core/alloc.h"
#include "server/core/dump.h"
#include "server/core/testhook.h"

struct dumper {
    struct server *srv;
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* to the thread: work or stop */
    pthread_cond_t done_cv; /* to requesters: seq_done moved */
    bool pending, running, stop;
    uint64_t seq_done;      /* dumps ended (ok or failed) */
    struct mq_node *waiters; /* parked connections (conn.qnode), by park_seq */
    int last_rc;
    char last_msg[256];
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void load_report(void *ctx, uint64_t off, const char *what)
{
    const char *path = ctx;
    log_warn("dump %s: damage at offset %" PRIu64 ": %s", path, off, what);
}

int dumper_load(struct server *srv)
{
    const char *path = srv->opt.dump_file;
    int mode = dump_load_mode_of(srv->opt.dump_load);
    struct dump_info info;
    uint64_t t0 = mono_ms();
    int rc;

    if (path == NULL)
        return 0;
    if (mode == DUMP_LOAD_IGNORE) {
        log_info("dump %s: not loaded (--dump-load=ignore)", path);
        return 0;
    }
    rc = dump_load(srv->store, path, (enum dump_load_mode)mode,
                   mode == DUMP_LOAD_STRICT ? NULL : load_report,
                   (void *)path, &info);
    if (rc == 1) {
        log_info("dump %s: no such file, starting empty", path);
        return 0;
    }
    /* Only strict refuses damage (exit 65, docs/dump.md).  repair skips
     * every damaged place and starts, so when it fails (the file cannot
     * be opened, mapped, or memory runs out) that is no verdict on the
     * content: exit 66, naming the mode and any damage met before. */
    if (rc < 0 && mode == DUMP_LOAD_STRICT && info.bad > 0) {
        log_error("dump %s: damaged at offset %" PRIu64 ": %s "
                  "(--dump-load=strict: not starting)",
                  path, info.err_offset, info.err);
        return EX_DATAERR;
    }
    if (rc < 0 && info.bad > 0) {
        log_error("dump %s: cannot be loaded (--dump-load=%s) after %" PRIu64
                  " damaged places, the first at offset %" PRIu64 ": %s",
                  path, srv->opt.dump_load, info.bad, info.err_offset,
                  info.err);
        return EX_NOINPUT;
    }
    if (rc < 0) {
        log_error("dump %s: %s", path, info.err);
        return EX_NOINPUT;
    }
    srv->load_records = info.records;
    srv->load_ms = mono_ms() - t0;
    if (info.bad > 0) {
        char dest[4096];
        snprintf(dest, sizeof(dest), "%s.corrupt-%lld", path,
                 (long long)time(NULL));
        if (rename(path, dest) < 0)
            log_error("dump %s: cannot keep the damaged file as %s: %s",
                      path, dest, strerror(errno));
        else
            log_warn("dump %s: %" PRIu64 " damaged places skipped (%" PRIu64
                     " of them records with an invalid field), %" PRIu64
                     " intact blocks loaded; the damaged file is kept as %s",
                     path, info.bad, info.invalid, info.blocks, dest);
    }
    if (info.over_limit > 0)
        log_warn("dump %s: memory limit (%" PRIu64 " KiB) reached: %"
                 PRIu64 " least recently used records not loaded", path,
                 srv->opt.memory_kib != 0 ? srv->opt.memory_kib
                                          : srv->opt.memory_mb << 10,
                 info.over_limit);
    if (info.refused > 0)
        log_warn("dump %s: %" PRIu64 " records refused by the store "
                 "(duplicate key, or over -I / --max-tags)", path,
                 info.refused);
    log_info("dump %s: loaded %" PRIu64 " records in %" PRIu64 " ms (%"
             PRIu64 " expired skipped)", path, info.records, srv->load_ms,
             info.expired);
    return 0;
}

static void do_dump(struct dumper *d)
{
    struct server *srv = d->srv;
    struct dump_info info;
    uint64_t t0 = mono_ms();
    int rc;

    atomic_store(&srv->dump_running, true);
    /* tests: a dump in progress held as long as a test wants */
    testhook_fifo_hold("MDC_TEST_DUMP_GATE", "a dump");
    rc = dump_write(srv->store, srv->opt.dump_file, &info);
    atomic_store(&srv->dump_running, false);
    uint64_t ms = mono_ms() - t0;
    if (rc == 0) {
        atomic_fetch_add(&srv->dumps, 1);
        atomic_store(&srv->dump_last_records, info.records);
        atomic_store(&srv->dump_last_bytes, info.bytes);
        atomic_store(&srv->dump_last_ms, ms);
        atomic_store(&srv->dump_last_time, (uint64_t)time(NULL));
        log_info("dump %s: %" PRIu64 " records, %" PRIu64 " bytes in %"
                 PRIu64 " ms", srv->opt.dump_file, info.records, info.bytes,
                 ms);
    } else {
        atomic_fetch_add(&srv->dump_failures, 1);
        log_error("dump %s failed: %s (the previous dump is kept)",
                  srv->opt.dump_file, info.err);
    }
    pthread_mutex_lock(&d->mu);
    d->last_rc = rc;
    snprintf(d->last_msg, sizeof(d->last_msg), "%s",
             rc == 0 ? "ok" : info.err);
    pthread_mutex_unlock(&d->mu);
}

/* Ask for a dump (d->mu held): returns the number (seq_done) of the dump
 * the request gets.  A running dump is the one it gets; otherwise the
 * next one to start, which a pending request has already asked for. */
static uint64_t dumper_ask(struct dumper *d)
{
    if (d->running)
        return d->seq_done + 1;
    if (!d->pending) {
        d->pending = true;
        pthread_cond_signal(&d->cv);
    }
    testhook_stop_asked("dumper"); /* asked for a dump: as good */
    return d->seq_done + 1;
}

/* Answer parked connections whose dump has ended (all of them when
 * stopping) and give them back.  Called with d->mu held; drops it while
 * answering. */
static void dumper_answer(struct dumper *d, bool all)
{
    struct mq_node *ready = NULL, **pp = &d->waiters;
    int rc = d->last_rc;
    char msg[sizeof(d->last_msg)];

    snprintf(msg, sizeof(msg), "%s", d->last_msg);
    while (*pp != NULL) {
        struct mq_node *n = *pp;
        struct conn *c = conn_of_node(n);

        if (all || c->park_seq <= d->seq_done) {
            *pp = n->next;
            n->next = ready;
            ready = n;
        } else {
            pp = &n->next;
        }
    }
    if (ready == NULL)
        return;
    pthread_mutex_unlock(&d->mu);
    while (ready != NULL) {
        struct mq_node *next = ready->next;
        struct conn *c = conn_of_node(ready);
        bool got = c->park_seq <= d->seq_done;

        c->park_done(c, got ? rc : -1, got ? msg : "stopping");
        worker_return_conn(c->owner, c);
        ready = next;
    }
    pthread_mutex_lock(&d->mu);
}

void dumper_park(struct conn *c)
{
    struct dumper *d = c->srv->dumper;

    pthread_mutex_lock(&d->mu);
    if (d->stop) {
        pthread_mutex_unlock(&d->mu);
        c->park_done(c, -1, "stopping");
        worker_return_conn(c->owner, c);
        return;
    }
    c->park_seq = dumper_ask(d);
    c->qnode.next = d->waiters;
    d->waiters = &c->qnode;
    pthread_mutex_unlock(&d->mu);
}

static void *dumper_main(void *arg)
{
    struct dumper *d = arg;
    uint64_t every = d->srv->opt.dump_interval * 1000;
    uint64_t next = every ? mono_ms() + every : 0;

    testhook_hold_loop("dumper");
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->pending && !d->stop) {
            if (every == 0) {
                pthread_cond_wait(&d->cv, &d->mu);
                continue;
            }
            uint64_t now = mono_ms();
            if (now >= next) {
                d->pending = true;
                break;
            }
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t ns = (uint64_t)ts.tv_nsec + (next - now) * 1000000;
            ts.tv_sec += (time_t)(ns / 1000000000);
            ts.tv_nsec = (long)(ns % 1000000000);
            pthread_cond_timedwait(&d->cv, &d->mu, &ts);
        }
        if (d->stop)
            break;
        d->pending = false;
        d->running = true;
        pthread_mutex_unlock(&d->mu);
        if (every)
            next = mono_ms() + every;
        do_dump(d);
        pthread_mutex_lock(&d->mu);
        d->running = false;
        d->seq_done++;
        pthread_cond_broadcast(&d->done_cv);
        dumper_answer(d, false);
    }
    dumper_answer(d, true); /* stopping: nobody is left behind */
    d->running = false;
    pthread_cond_broadcast(&d->done_cv);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int dumper_request(struct server *srv, bool wait, char *msg, size_t len)
{
    struct dumper *d = srv->dumper;
    int rc = 0;

    if (d == NULL) {
        if (msg != NULL)
            snprintf(msg, len, "no dump file (-f)");
        return -1;
    }
    pthread_mutex_lock(&d->mu);
    if (d->stop) {
        pthread_mutex_unlock(&d->mu);
        if (msg != NULL)
            snprintf(msg, len, "stopping");
        return -1;
    }
    uint64_t target = dumper_ask(d);
    if (wait) {
        while (d->seq_done < target && !(d->stop && !d->running))
            pthread_cond_wait(&d->done_cv, &d->mu);
        rc = d->seq_done >= target ? d->last_rc : -1;
        if (msg != NULL)
            snprintf(msg, len, "%s",
                     d->seq_done >= target ? d->last_msg : "stopping");
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

int dumper_setup(struct server *srv)
{
    struct dumper *d;
    pthread_condattr_t ca;
    sigset_t all, old;
    int e;

    if (srv->opt.dump_file == NULL)
        return 0;
    d = mdc_calloc(1, sizeof(*d));
    if (d == NULL)
        return -1;
    d->srv = srv;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&d->done_cv, NULL);
    /* only the main thread takes signals (daemon.c's libevent events) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(&d->tid, NULL, dumper_main, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        pthread_cond_destroy(&d->done_cv);
        mdc_free(d);
        return -1;
    }
    srv->dumper = d;
    srv->dump_request = dumper_request;
    srv->dump_park = dumper_park;
    return 0;
}

void dumper_teardown(struct server *srv)
{
    struct dumper *d = srv->dumper;

    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    testhook_stop_asked("dumper");
    pthread_join(d->tid, NULL);
    srv->dumper = NULL;
    srv->dump_request = NULL;
    srv->dump_park = NULL;
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    pthread_cond_destroy(&d->done_cv);
    mdc_free(d);
}
