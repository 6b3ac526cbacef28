/*
 * server.h - the server's shared declarations: struct server (settings,
 * store, listeners, threads) and struct worker (one thread).  Every layer
 * of the daemon above the core may include it; it includes only the core,
 * the protocol codecs and the other declaration headers of server/
 * (docs/architecture.md).  The lifecycle is daemon.h's; the few functions
 * declared here (clocks, thread model names) are server.c's, in this layer.
 *
 * Every thread of the server is a struct worker.  Worker 0 is the main
 * thread: it runs the listeners and signals, and with -n 0 also all network
 * I/O.  Workers 1..N are network threads (one event loop each); after them
 * come the M payload threads, which block on a struct mq.  The thread models
 * (SPED, AMPED, SYMPED, SEDA, SEDA-S) are only different wirings of these
 * workers (threads.c, docs/threads-models.md).
 */
#ifndef MDC_SERVER_H
#define MDC_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "options.h"
#include "queue.h"
#include "stats.h"
#include "server/core/store.h"

struct evloop;
struct evloop_ev;
struct conn;
struct record;
struct udp_worker;
struct transport;
struct proto;
struct dumper;
struct auth;
struct tls_server;

/*
 * The XDP mirror's way in (docs/xdp.md: a record enters the mirror only
 * after the userspace UDP path has served a GET hit for it, untagged).  When
 * set, the network thread that answered a UDP get/gets calls it once for
 * every hit whose record carries no tag, after sendmmsg() has returned for
 * the reply and before the thread's own reference is released: r is
 * readable, but may already have been replaced, deleted or expired in the
 * store.  So the hook decides admission (mirror_fits(), a threshold) from r,
 * and fills the mirror from the *live* record under the bucket read lock:
 * store_visit(st, record_key(r), record_klen(r), fill, m) - never from r
 * itself (mirror.h's consistency contract).  It runs on every network
 * thread (the main thread with -n 0), concurrently with itself, and must
 * not block.  Set it before server_run() starts the threads; NULL (the
 * default) turns it off.  Called from one place: udp.c, udp_release().
 */
typedef void (*udp_hit_hook_fn)(void *ctx, struct store *st,
                                const struct record *r);

enum thread_model {
    TM_SPED,     /* -n 0 -t 0: one thread does everything */
    TM_AMPED_1,  /* -n 0 -t M: accept + I/O in one thread, M payload */
    TM_SYMPED,   /* -n N -t 0: accept thread, N network threads */
    TM_AMPED,    /* -n 1 -t M: accept, one network thread, M payload */
    TM_SEDA,     /* -n N -t M, N >= 2, M >= 1, N != M: shared payload queue */
    TM_SEDA_S,   /* -n N -t N, N >= 2: network i feeds only payload i */
};
enum thread_model thread_model_of(unsigned nnet, unsigned npay);
const char *thread_model_name(enum thread_model tm);

enum worker_role {
    ROLE_MAIN,    /* listeners, signals; with -n 0 also network I/O */
    ROLE_NET,     /* event loop of connections */
    ROLE_PAYLOAD, /* runs requests handed over by network threads */
};

/* Doubly linked list of a network worker's connections. */
struct conn_link {
    struct conn *prev, *next;
};

/* Buffers a network thread lends its connections while they have bytes to
 * parse or to send, and takes back once they have none (server/net/conn.c,
 * "Buffers lent per thread"; docs/threads-models.md).  Only the owning
 * thread takes and gives; lent is read by stats from any thread. */
#define CONN_POOL_KINDS 5 /* enum conn_pool_kind (conn.c) */
#define CONN_POOL_MAX 64  /* free buffers a thread keeps of a kind, at most */
struct conn_pool {
    void *free[CONN_POOL_KINDS][CONN_POOL_MAX];
    unsigned n[CONN_POOL_KINDS];
    uint64_t lent;        /* input and output buffers lent out now
                             (relaxed atomic, for stats) */
    uint64_t xheld;       /* backend state a connection holds beyond its
                             read registration, now: epoll's EPOLLOUT
                             asked for while a write would block (in the
                             portable build libevent's write event, an
                             allocation), io_uring's iovec array while a
                             sendmsg is in flight and stash while a payload
                             thread has the input (relaxed atomic, for
                             stats conn_backend_held; 0 when all idle) */
    uint64_t rbuf_bytes;  /* io_uring: receive buffers given to the ring
                             (relaxed atomic, stats uring_recv_buffer_bytes) */
};

struct worker {
    struct thread_stats stats; /* written only by this thread */
    struct server *srv;
    unsigned id;
    enum worker_role role;
    pthread_t tid;
    bool started;

    /* network role (and main) */
    /* this thread's libevent loop (net/evloop.h: its inbox, tick and stop
     * events): every network thread's and the main thread's */
    struct evloop *loop;
    /* the backend's own part of this thread (transport.h worker_setup):
     * io_uring's ring; NULL under epoll */
    void *xw;
    struct mq inbox;          /* conns: new ones and ones back from payload */
    struct conn *conns;       /* list head (struct conn_link in conn) */
    pthread_mutex_t conns_mu; /* guards the list for other threads' readers
                                 (stats conns); the owner writes under it */
    size_t nconns;
    struct mq *payload_q;     /* NULL: run requests in this thread */
    bool yield_turns;         /* more network threads than CPUs: give the
                                 CPU away after each loop turn (threads.c) */
    bool stopping;
    uint64_t stop_at;         /* coarse seconds when stopping began */
    uint64_t now;             /* coarse monotonic seconds, set by the tick */
    uint64_t next_tick_ms;    /* server_coarse_ms() when the tick is due:
                                 the next second, or a connection's
                                 timeout before it */
    uint64_t auth_log_at;     /* proto.c: second of the last failure logged */
    unsigned auth_log_quiet;  /* failures since then not logged */

    /* payload role */
    struct mq *pq;            /* queue this payload thread consumes */

    /* connection buffers lent by this thread (network role and main) */
    struct conn_pool pool;

    /* request scratch (tags of one request), grown on demand */
    struct mdc_tag *tagbuf;
    size_t tagcap;

    /* UDP (-U): this thread's sockets and batch buffers, or NULL */
    struct udp_worker *udp;
};

struct listener {
    struct server *srv;
    int fd;
    int family;               /* AF_INET, AF_INET6, AF_UNIX */
    bool loopback;            /* bound to a loopback address (or Unix) */
    bool tls;                 /* --tls-listen: connections start a TLS
                                 handshake (net/tls.h) */
    /* the backend's accept state (transport.h accept_on): epoll's event;
     * io_uring's mark while its multishot accept is armed */
    void *xl;
    char name[128];
};

struct metrics;

struct watch;

struct server {
    struct options opt;
    struct store *store;
    /* watch (server/net/watch.h): the types some watcher wants, read
     * relaxed on the hot path; the watchers, made at the first one */
    uint32_t watch_mask;
    uint32_t watchers;        /* watchers now (log_watchers), atomic */
    uint64_t watch_skipped;   /* lines dropped for slow watchers, atomic */
    struct watch *watch;
    enum thread_model model;
    unsigned nnet;            /* network threads (-n) */
    unsigned npay;            /* payload threads (-t) */
    size_t max_body;          /* bound on a request body, before allocation */
    time_t started_wall;
    uint64_t started_mono;

    struct worker *workers;   /* [0] main, [1..nnet] net, then payload */
    unsigned nworkers;
    struct mq *pqs;           /* payload queues */
    unsigned npqs;
    unsigned next_net;        /* round-robin for new connections */
    bool io_uring;            /* --io=uring in force (uring.c resolves it) */
    bool io_uring_fallback;   /* --io=auto: epoll if a ring cannot be set up */
    /* the network backend in force (net/transport.h), chosen once by
     * threads_setup: epoll or io_uring */
    const struct transport *xp;

    struct listener *listeners;
    size_t nlisteners;
    bool accepting;
    struct evloop_ev *ev_accept_resume; /* net.c's backoff timer */
    /* accepting paused for lack of descriptors (net.c's backoff): since
     * when (CLOCK_MONOTONIC us, 0 = not paused) and the paused time
     * before (memcached's time_in_listen_disabled_us) */
    _Atomic uint64_t listen_disabled_at_us;
    _Atomic uint64_t listen_disabled_us;
    /* Protected mode is in force (net.c): a listener or UDP socket on a
     * non-loopback address, no authentication; only loopback peers are
     * served. */
    bool protected_mode;
    /* --auth-file: the credentials (auth.h), or NULL when not required */
    struct auth *auth;
    /* --tls-listen: the certificates in force (net/tls.h), or NULL */
    struct tls_server *tls;

    atomic_uint nconns;       /* open connections, for -c */
    atomic_bool stop;

    struct evloop_ev *ev_sig[5]; /* daemon.c: signals, and its stop */
    const char *loop_version; /* libevent's (stats version), daemon.c */
    bool pidfile_written;
    bool portfile_written;    /* --port-file: removed at exit */
    /* -p auto, -U auto: the first port the kernel picked (stats settings'
     * tcpport and udpport) */
    unsigned auto_tcp_port, auto_udp_port;

    /* The protocol of a new connection from its first byte (net/conn.h's
     * interface); daemon.c sets it to proto_detect() (proto/proto.h), so
     * the network layer never includes a protocol handler. */
    const struct proto *(*proto_detect)(uint8_t first);

    /* -f: dumps (server/dumper.c).  dump_request() asks for a dump and,
     * with wait, returns once it is safe on disk (a dump already running
     * counts): 0, or -1 with the reason in msg.  NULL without -f. */
    struct dumper *dumper;
    int (*dump_request)(struct server *srv, bool wait, char *msg,
                        size_t len);
    /* The dump commands' way: conn_park(c, dump_park, done) (net/conn.h).
     * The dump thread answers c with done() once the dump c gets has
     * ended, and gives c back to its owner; no network or payload thread
     * waits.  NULL without -f. */
    void (*dump_park)(struct conn *c);
    _Atomic uint64_t dumps;           /* dumps written */
    _Atomic uint64_t dump_failures;   /* dumps that failed (logged) */
    _Atomic uint64_t dump_last_records;
    _Atomic uint64_t dump_last_bytes;
    _Atomic uint64_t dump_last_ms;    /* how long the last dump took */
    _Atomic uint64_t dump_last_time;  /* Unix time it ended */
    _Atomic bool dump_running;
    uint64_t boot_id;                 /* random at each start, never 0 */
    uint64_t load_records;            /* loaded at start */
    uint64_t load_ms;
    /* stats reset and stats detail (report.c) */
    pthread_mutex_t stats_mu;         /* guards the three below */
    struct thread_stats stats_base;   /* counters at the last stats reset */
    struct store_stats store_base;
    uint64_t listen_disabled_base_us; /* time_in_listen_disabled_us then */
    struct prefix_stats *prefixes;    /* per-prefix counts, or NULL */
    atomic_bool detail_on;            /* stats detail on (or -D) */
    char prefix_delim;                /* -D, default ':' */

    struct mirror *mirror;    /* -x: the XDP mirror (bpf/mirror.h), or NULL */
    struct metrics *metrics;  /* --metrics (metrics.h), or NULL */
    unsigned nudp;            /* UDP sockets, over all network threads */
    bool udp_public;          /* some UDP socket is not on loopback */
    udp_hit_hook_fn udp_hit_hook; /* see its typedef; NULL = off */
    void *udp_hit_ctx;
};

/*
 * The two clocks below are read on every request (a connection's activity
 * stamp, the backends' turn time): inline here, as memcached and Redis keep
 * their hot clock reads, so that reading one is the vDSO's clock_gettime()
 * and not also a call into server.c on each request.
 */
/* Coarse monotonic seconds, never 0 (0 means "unset"). */
static inline uint64_t server_mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec + 1; /* never 0: 0 means "unset" */
}
/* Monotonic milliseconds from the kernel's coarse clock (a few ns to read,
 * behind the true time by at most server_coarse_res_ms()), never 0: the
 * stamps of the connection timeouts (--auth-timeout, --idle-timeout). */
static inline uint64_t server_coarse_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1;
}
uint64_t server_coarse_res_ms(void);
/* Seconds since the server started (monotonic). */
uint64_t server_uptime(const struct server *srv);

#endif
