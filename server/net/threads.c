/*
 * threads.c - the thread models (SPED, AMPED, SYMPED, SEDA, SEDA-S; the
 * table is in docs/threads-models.md) as wirings of workers:
 * which thread accepts, which threads run event loops, and whether requests
 * run in the network thread or go through a payload queue.  Also the
 * network loop's housekeeping (inbox, 1 s tick, graceful stop) and the
 * payload threads' main loop.  docs/threads-models.md explains the choices.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/core/alloc.h"
#include "server/core/testhook.h"
#include "conn.h"
#include "evloop.h"
#include "threads.h"
#include "udp.h"
#include "transport.h"
#include "server/server.h"
#include "server/log.h"

#define STOP_GRACE_S 5 /* in-flight work gets this long after SIGTERM */

struct mdc_tag *worker_tags(struct worker *w, size_t n)
{
    if (n > w->tagcap) {
        struct mdc_tag *t = mdc_realloc(w->tagbuf, n * sizeof(*t));
        if (t == NULL)
            return NULL;
        w->tagbuf = t;
        w->tagcap = n;
    }
    return w->tagbuf;
}

/* A stopping loop ends once its last connection is gone. */
static void worker_check_done(struct worker *w)
{
    if (w->stopping && w->nconns == 0)
        w->srv->xp->done(w);
}

void worker_inbox_run(struct worker *w)
{
    struct mq_node *n = mq_take_all(&w->inbox);

    while (n != NULL) {
        struct mq_node *next = n->next; /* c may be queued again below */
        struct conn *c = conn_of_node(n);

        if (c->adopted) {
            w->srv->xp->returned(c); /* input that came meanwhile */
            conn_returned(c);
        } else if (w->stopping || conn_adopt(c) < 0) {
            conn_teardown(c);
        } else {
            conn_drive(c);
        }
        n = next;
    }
    worker_check_done(w);
}

/*
 * When the tick runs next, as a coarse-clock reading: the start of the
 * next coarse second (the whole-second checks: stalled output, a held
 * reply, the stop's grace), or the earliest connection deadline due if
 * that comes first, but not sooner than WORKER_TICK_GRAIN_MS after now: a walk
 * costs every connection a look, and connections due within the grain are
 * closed by one walk.
 */
uint64_t worker_next_tick_ms(uint64_t now_ms, uint64_t due)
{
    /* server_coarse_ms() is the clock's ms + 1 (never 0), so the coarse
     * second (server_mono_s()) turns at readings of k * 1000 + 1 */
    uint64_t next_s = (now_ms - 1) / 1000 * 1000 + 1001;

    if (due < now_ms + WORKER_TICK_GRAIN_MS)
        due = now_ms + WORKER_TICK_GRAIN_MS;
    return due < next_s ? due : next_s;
}

/* How long to wait, in true ms, from the coarse reading now_ms until a
 * coarse reading is at least at (res: the clock's resolution).  The coarse
 * clock lags the true time by up to res, so waiting only at - now_ms may
 * wake to a reading still before at: the wait's end is pushed by res, and
 * a reading after it is at or after at.  0 when at has come. */
uint64_t worker_wait_ms(uint64_t now_ms, uint64_t at, uint64_t res)
{
    return at > now_ms ? at - now_ms + res : 0;
}

/* The network thread's tick: each connection's timeouts (conn_tick), the
 * stop's grace; then w->next_tick_ms says when it is due again.  Run when
 * that moment comes: by the libevent loop's tick event (evloop.c) or the
 * io_uring loop's wait timeout. */
void worker_tick_run(struct worker *w)
{
    static const uint64_t grace = STOP_GRACE_S;
    struct conn *c, *next;
    uint64_t now_ms, due = UINT64_MAX;

    testhook_tick_gate(); /* a test makes this thread late (testhook.h) */
    now_ms = server_coarse_ms();
    w->now = server_mono_s();
    for (c = w->conns; c != NULL; c = next) {
        uint64_t d;

        next = c->link.next;
        d = conn_tick(c, w->now, now_ms);
        if (d < due)
            due = d;
    }
    w->next_tick_ms = worker_next_tick_ms(now_ms, due);
    if (w->stopping && w->nconns > 0 && w->now >= w->stop_at + grace) {
        log_warn("%zu connections still busy %llu s after stop: closing",
                 w->nconns, (unsigned long long)grace);
        for (c = w->conns; c != NULL; c = next) {
            next = c->link.next;
            if (c->inflight)
                c->dead = true; /* closed when its payload thread is done */
            else
                conn_teardown(c);
        }
    }
    worker_check_done(w);
}

/* Stop: no more reading; finish what is buffered, flush, close. */
void worker_begin_stop(struct worker *w)
{
    struct conn *c, *next;

    if (w->stopping)
        return;
    w->stopping = true;
    w->stop_at = server_mono_s();
    udp_worker_close(w); /* UDP has nothing in flight between turns */
    for (c = w->conns; c != NULL; c = next) {
        next = c->link.next;
        conn_shutdown(c);
    }
    worker_check_done(w);
}

int worker_net_setup(struct worker *w)
{
    mq_setup(&w->inbox);
    w->now = server_mono_s();
    w->next_tick_ms = worker_next_tick_ms(server_coarse_ms(), UINT64_MAX);
    return evloop_setup(w);
}

void worker_give_conn(struct worker *w, struct conn *c)
{
    if (mq_push(&w->inbox, &c->qnode))
        w->srv->xp->wake(w);
}

void worker_return_conn(struct worker *w, struct conn *c)
{
    worker_give_conn(w, c);
}

/* CPUs this process may run on (its affinity mask). */
static unsigned threads_cpus(void)
{
    cpu_set_t set;
    long n;

    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static void *worker_net_main(void *arg)
{
    struct worker *w = arg;

    log_debug("network thread %u running", w->id);
    testhook_hold_loop("net");
    w->srv->xp->run(w);
    log_debug("network thread %u done", w->id);
    return NULL;
}

static void *worker_payload_main(void *arg)
{
    struct worker *w = arg;
    struct mq_node *n;

    log_debug("payload thread %u running", w->id);
    testhook_hold_loop("payload");
    while ((n = mq_pop_wait(w->pq)) != NULL) {
        struct conn *c = conn_of_node(n);

        c->proto->process(c, w);
        if (!conn_park_run(c)) /* parked: the other thread gives it back */
            worker_return_conn(c->owner, c);
    }
    log_debug("payload thread %u done", w->id);
    return NULL;
}

/* --io=auto and the backend's part of worker upto could not be set up
 * (the probe of transport_resolve passed, yet the real rings failed:
 * memory, limits): every worker goes back to libevent's loop (epoll).
 * 0, or -1 when the backend was explicit. */
static int threads_backend_fallback(struct server *srv, unsigned upto)
{
    unsigned j;

    if (!srv->io_uring_fallback)
        return -1;
    /* the one backend with a fallback is io_uring: its rings */
    log_warn("%s: a ring could not be set up: using epoll", srv->xp->name);
    for (j = 0; j <= upto; j++) {
        struct worker *w = &srv->workers[j];

        if (w->role == ROLE_PAYLOAD)
            continue;
        srv->xp->worker_teardown(w);
        if (w->loop != NULL)
            evloop_tick_arm(w);
    }
    srv->xp = &transport_epoll;
    srv->io_uring = false;
    return 0;
}

int threads_setup(struct server *srv)
{
    unsigned i, ncpu = threads_cpus();
    int rc = -1;

    if (transport_resolve(srv) < 0) /* srv->xp */
        goto out;
    srv->nworkers = 1 + srv->nnet + srv->npay;
    srv->workers = mdc_calloc(srv->nworkers, sizeof(*srv->workers));
    if (srv->workers == NULL)
        goto out;
    srv->npqs = srv->model == TM_SEDA_S ? srv->npay : srv->npay > 0 ? 1 : 0;
    if (srv->npqs > 0) {
        srv->pqs = mdc_calloc(srv->npqs, sizeof(*srv->pqs));
        if (srv->pqs == NULL)
            goto out;
        for (i = 0; i < srv->npqs; i++)
            mq_setup(&srv->pqs[i]);
    }
    for (i = 0; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];

        w->srv = srv;
        w->id = i;
        pthread_mutex_init(&w->conns_mu, NULL);
        if (i == 0)
            w->role = ROLE_MAIN;
        else if (i <= srv->nnet)
            w->role = ROLE_NET;
        else
            w->role = ROLE_PAYLOAD;
        if (w->role == ROLE_PAYLOAD) {
            unsigned k = i - 1 - srv->nnet;
            w->pq = &srv->pqs[srv->model == TM_SEDA_S ? k : 0];
            continue;
        }
        if (worker_net_setup(w) < 0)
            goto out;
        /* the backend's part: under io_uring every network thread gets a
         * ring and runs its loop, and the main thread's ring (multishot
         * accepts, and its connections with -n 0) is polled from its
         * libevent loop */
        if (srv->xp->worker_setup(w) < 0 &&
            threads_backend_fallback(srv, i) < 0)
            goto out;
        w->yield_turns = w->role == ROLE_NET && srv->nnet > ncpu;
        if (srv->npay > 0 && (w->role == ROLE_NET || srv->nnet == 0))
            w->payload_q = &srv->pqs[srv->model == TM_SEDA_S ? i - 1 : 0];
    }
    if (srv->nnet > ncpu)
        log_info("%u network threads on %u CPUs: loops yield after each turn",
                 srv->nnet, ncpu);
    rc = 0;
out:
    return rc;
}

int threads_start(struct server *srv)
{
    sigset_t all, old;
    unsigned i;
    int rc = 0;

    /* Only the main thread takes signals (libevent signal events). */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 1; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        void *(*fn)(void *) =
            w->role == ROLE_NET ? worker_net_main : worker_payload_main;
        int e = pthread_create(&w->tid, NULL, fn, w);

        if (e != 0) {
            log_error("cannot start thread: %s", strerror(e));
            rc = -1;
            break;
        }
        w->started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void threads_stop_and_join(struct server *srv)
{
    unsigned i;

    for (i = 1; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        if (w->role == ROLE_NET && w->started) {
            srv->xp->stop(w);
        }
    }
    testhook_stop_asked("net");
    for (i = 1; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        if (w->role == ROLE_NET && w->started) {
            pthread_join(w->tid, NULL);
            w->started = false;
        }
    }
    /* No network thread is left to hand work over: payload threads go. */
    for (i = 0; i < srv->npqs; i++)
        mq_close(&srv->pqs[i]);
    testhook_stop_asked("payload");
    for (i = 1; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        if (w->role == ROLE_PAYLOAD && w->started) {
            pthread_join(w->tid, NULL);
            w->started = false;
        }
    }
}

void threads_teardown(struct server *srv)
{
    unsigned i;

    if (srv->workers == NULL)
        return;
    for (i = 0; i < srv->nworkers; i++) {
        struct worker *w = &srv->workers[i];
        struct conn *c, *next;

        for (c = w->conns; c != NULL; c = next) {
            next = c->link.next;
            conn_teardown(c);
        }
        if (w->role != ROLE_PAYLOAD) /* frees torn-down connections */
            srv->xp->worker_teardown(w);
        udp_worker_teardown(w); /* its events first, then the loop */
        if (w->loop != NULL) { /* a network (or main) thread */
            struct mq_node *n = mq_take_all(&w->inbox);
            while (n != NULL) {
                struct mq_node *nx = n->next;
                conn_teardown(conn_of_node(n));
                n = nx;
            }
            mq_teardown(&w->inbox);
        }
        evloop_teardown(w);
        mdc_free(w->tagbuf);
    }
    for (i = 0; i < srv->nworkers; i++) /* every connection is gone */
        conn_pool_free(&srv->workers[i]);
    for (i = 0; i < srv->npqs; i++)
        mq_teardown(&srv->pqs[i]);
    mdc_free(srv->pqs);
    mdc_free(srv->workers);
    srv->workers = NULL;
}
