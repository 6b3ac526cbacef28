/*
 * metrics.c - the Prometheus endpoint (metrics.h): GET /metrics rendered
 * from the same counters as "stats" (report.c), per thread where the
 * counter is per thread, plus the request-time histograms kept here.
 */
#include "config.h"

#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "log.h"
#include "options.h"
#include "server/core/testhook.h"
#include "report.h"
#include "stats.h"

/* One thread's histograms: only that thread writes them (relaxed loads and
 * stores, like STAT_ADD); the HTTP thread sums them. */
struct metrics_hist {
    uint64_t b[MC__COUNT][METRICS_NBOUNDS + 1]; /* per bucket, not cumulative */
    uint64_t sum_ns[MC__COUNT];
} __attribute__((aligned(64)));

struct metrics {
    struct event_base *base;
    struct evhttp *http;
    struct event *ev_stop; /* made active to stop the thread's loop */
    pthread_t tid;
    bool started;
    struct metrics_hist *hist; /* one per worker */
    unsigned nhist;
    char name[160];
};

static const uint64_t bound_ns[METRICS_NBOUNDS] = {
    1000,      2000,      5000,      10000,      20000,      50000,     100000,
    200000,    500000,    1000000,   2000000,    5000000,    10000000,  20000000,
    50000000,  100000000, 200000000, 500000000, 1000000000,
};
static const char *const bound_le[METRICS_NBOUNDS] = {
    "1e-06", "2e-06", "5e-06", "1e-05", "2e-05", "5e-05", "0.0001",
    "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01", "0.02",
    "0.05", "0.1", "0.2", "0.5", "1",
};
static const char *const cmd_name[MC__COUNT] = {
#define X(e, s) s,
    METRICS_COMMANDS(X)
#undef X
};

void metrics_observe(struct server *srv, unsigned worker, enum metrics_cmd cmd,
                     uint64_t t0)
{
    struct metrics *m = srv->metrics;
    struct metrics_hist *h;
    struct timespec ts;
    uint64_t now, ns;
    unsigned i;

    if (m == NULL || t0 == 0 || worker >= m->nhist || (unsigned)cmd >= MC__COUNT)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    ns = now > t0 ? now - t0 : 0;
    for (i = 0; i < METRICS_NBOUNDS && ns > bound_ns[i]; i++)
        ;
    h = &m->hist[worker];
    __atomic_store_n(&h->b[cmd][i],
                     __atomic_load_n(&h->b[cmd][i], __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&h->sum_ns[cmd],
                     __atomic_load_n(&h->sum_ns[cmd], __ATOMIC_RELAXED) + ns,
                     __ATOMIC_RELAXED);
}

int metrics_parse_addr(const char *spec, char *host, size_t hlen,
                       uint16_t *port)
{
    char p[16];
    char *end;
    unsigned long v;

    if (spec == NULL || spec[0] == '\0')
        return -1;
    if (strspn(spec, "0123456789") == strlen(spec) ||
        strcmp(spec, "auto") == 0) {
        snprintf(host, hlen, "127.0.0.1"); /* loopback unless told */
        snprintf(p, sizeof(p), "%s", spec);
    } else if (options_split_listen(spec, 0, host, hlen, p, sizeof(p)) < 0) {
        return -1;
    }
    if (strcmp(p, "auto") == 0) {
        *port = 0; /* the kernel picks; --port-file reports it */
        return 0;
    }
    errno = 0;
    v = strtoul(p, &end, 10);
    if (errno != 0 || *end != '\0' || v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* ---- rendering ------------------------------------------------------------ */

/* memcached_exporter's names for per-thread counters whose meaning matches;
 * the others are mdcached_<name>_total. */
struct tmap {
    const char *field, *family, *labels, *help;
};
static const struct tmap tmaps[] = {
    {"get_hits", "memcached_commands_total", "command=\"get\",status=\"hit\"",
     "Commands by kind and outcome (memcached_exporter's family)."},
    {"get_misses", "memcached_commands_total", "command=\"get\",status=\"miss\"", NULL},
    {"cmd_set", "memcached_commands_total", "command=\"set\",status=\"hit\"", NULL},
    {"delete_hits", "memcached_commands_total", "command=\"delete\",status=\"hit\"", NULL},
    {"delete_misses", "memcached_commands_total", "command=\"delete\",status=\"miss\"", NULL},
    {"incr_hits", "memcached_commands_total", "command=\"incr\",status=\"hit\"", NULL},
    {"incr_misses", "memcached_commands_total", "command=\"incr\",status=\"miss\"", NULL},
    {"decr_hits", "memcached_commands_total", "command=\"decr\",status=\"hit\"", NULL},
    {"decr_misses", "memcached_commands_total", "command=\"decr\",status=\"miss\"", NULL},
    {"cas_hits", "memcached_commands_total", "command=\"cas\",status=\"hit\"", NULL},
    {"cas_misses", "memcached_commands_total", "command=\"cas\",status=\"miss\"", NULL},
    {"cas_badval", "memcached_commands_total", "command=\"cas\",status=\"badval\"", NULL},
    {"touch_hits", "memcached_commands_total", "command=\"touch\",status=\"hit\"", NULL},
    {"touch_misses", "memcached_commands_total", "command=\"touch\",status=\"miss\"", NULL},
    {"cmd_flush", "memcached_commands_total", "command=\"flush\",status=\"hit\"", NULL},
    {"total_connections", "memcached_connections_total", "",
     "Connections accepted."},
    {"rejected_connections", "memcached_connections_rejected_total", "",
     "Connections refused over --max-conns."},
    {"bytes_read", "memcached_read_bytes_total", "", "Bytes received."},
    {"bytes_written", "memcached_written_bytes_total", "", "Bytes sent."},
    {"conn_yields", "memcached_connections_yielded_total", "",
     "Times a connection gave the loop up after -R requests."},
    {"listen_disabled_num", "memcached_connections_listener_disabled_total", "",
     "Times accepting was paused (descriptors exhausted)."},
    {"store_too_large", "memcached_item_too_large_total", "",
     "Stores refused: the value is over --max-item-size."},
    {"store_no_memory", "memcached_item_no_memory_total", "",
     "Stores refused for lack of memory."},
};

/* General stats under memcached_exporter's names (where the meaning
 * matches) or a name of ours with the type the value has; a counter is
 * named *_total.  The other numeric stats are gauges mdcached_<name>. */
struct gmap {
    const char *stat, *name, *type, *help;
};
static const struct gmap gmaps[] = {
    /* a gauge, not the exporter's counter: it is not named _total */
    {"uptime", "memcached_uptime_seconds", "gauge", "Seconds since the server started."},
    {"time", "memcached_time_seconds", "gauge", "The server's Unix time."},
    {"rusage_user", "memcached_process_user_cpu_seconds_total", "counter",
     "CPU seconds the process spent in user mode."},
    {"rusage_system", "memcached_process_system_cpu_seconds_total", "counter",
     "CPU seconds the process spent in the kernel."},
    {"accepting_conns", "memcached_accepting_connections", "gauge",
     "1 while new connections are accepted."},
    {"reclaimed", "memcached_items_reclaimed_total", "counter",
     "Expired records reclaimed (memcached: stores reusing an expired item's memory)."},
    {"direct_reclaims", "memcached_direct_reclaims_total", "counter",
     "Stores that evicted records themselves to fit under the memory limit."},
    {"total_malloced", "memcached_malloced_bytes", "gauge",
     "Bytes allocated to records and the tag index."},
    {"get_flushed", "mdcached_get_flushed_total", "counter",
     "Gets that found a record a flush_all had invalidated."},
    {"flush_pending", "mdcached_flush_pending", "gauge",
     "flush_all cut-offs pending: a delayed one not yet due, one whose records are not all reclaimed."},
    {"flush_reclaimed", "mdcached_flush_reclaimed_total", "counter",
     "Records a flush_all had hidden, reclaimed since."},
    {"dumps", "mdcached_dumps_total", "counter", "Dumps written."},
    {"dump_failures", "mdcached_dump_failures_total", "counter", "Dumps that failed."},
    {"store_no_memory_held", "mdcached_store_no_memory_held_total", "counter",
     "Stores refused although eviction is on: the memory is held by readers."},
    {"lrutail_reflocked", "mdcached_lrutail_reflocked_total", "counter",
     "Evictions of a record a reader still referenced."},
    {"time_in_listen_disabled_us", "mdcached_listen_disabled_seconds_total", "counter",
     "Seconds accepting was paused."},
    {"curr_connections", "memcached_current_connections", "gauge", "Open connections."},
    {"log_watchers", "mdcached_log_watchers", "gauge", "Connections watching (watch)."},
    {"log_watcher_skipped", "mdcached_log_watcher_skipped_total", "counter",
     "Watch lines dropped: the watcher did not read them in time."},
    {"max_connections", "memcached_max_connections", "gauge", "--max-conns."},
    {"curr_items", "memcached_current_items", "gauge", "Records stored."},
    {"total_items", "memcached_items_total", "counter", "Records ever stored."},
    {"bytes", "memcached_current_bytes", "gauge", "Bytes used by records and the tag index."},
    {"limit_maxbytes", "memcached_limit_bytes", "gauge", "--memory-limit in bytes."},
    {"evictions", "memcached_items_evicted_total", "counter", "Records evicted for memory."},
    {"expired", "mdcached_items_expired_total", "counter", "Records reclaimed after expiry."},
    {"expired_unfetched", "mdcached_items_expired_unfetched_total", "counter", "Expired records never read."},
    {"evicted_unfetched", "mdcached_items_evicted_unfetched_total", "counter", "Evicted records never read."},
    {"get_expired", "mdcached_get_expired_total", "counter", "Gets that found an expired record."},
    {"tagged_items", "mdcached_tag_index_records", "gauge", "Records carrying at least one tag."},
    {"tag_links", "mdcached_tag_index_links", "gauge", "Record-tag links in the tag index."},
    {"tag_values", "mdcached_tag_index_tags", "gauge", "Distinct (tkey, tval) tags in the index."},
    {"tag_keys", "mdcached_tag_index_keys", "gauge", "Distinct tag keys in the index."},
    {"tag_bytes", "mdcached_tag_index_bytes", "gauge", "Bytes used by the tag index."},
};

/* Names that "stats" reports summed over threads: rendered per thread. */
static bool is_thread_field(const char *name)
{
#define X(n)                                                                   \
    if (strcmp(name, #n) == 0)                                                 \
        return true;
    STATS_THREAD_FIELDS(X)
#undef X
    return false;
}

struct gstat {
    char name[64];
    char value[64];
};
struct gcollect {
    struct gstat *v;
    size_t n, cap;
};

static void gcollect_fn(void *ctx, const char *name, const char *value)
{
    struct gcollect *g = ctx;

    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 128;
        struct gstat *nv = realloc(g->v, nc * sizeof(*nv));
        if (nv == NULL)
            return;
        g->v = nv;
        g->cap = nc;
    }
    snprintf(g->v[g->n].name, sizeof(g->v[g->n].name), "%s", name);
    snprintf(g->v[g->n].value, sizeof(g->v[g->n].value), "%s", value);
    g->n++;
}

static bool is_number(const char *s)
{
    return s[0] != '\0' && strspn(s, "0123456789") == strlen(s);
}

/* An unsigned decimal, with a fraction or not (rusage_user: "1.230000"). */
static bool is_decimal(const char *s)
{
    size_t i = strspn(s, "0123456789");

    if (i == 0)
        return false;
    if (s[i] == '.' && strspn(s + i + 1, "0123456789") > 0)
        i += 1 + strspn(s + i + 1, "0123456789");
    return s[i] == '\0';
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n > k && strcmp(s + n - k, suffix) == 0;
}

/* The XDP program's and the mirror writer's counters (stats_xdp(), -x);
 * its other figures are gauges. */
static bool is_xdp_counter(const char *name)
{
    static const char *const gauges[] = {"xdp_verified_insns", "xdp_items",
                                         "xdp_item_bytes", "xdp_slot_bytes",
                                         "xdp_mem_bytes"};
    size_t i;

    if (strncmp(name, "xdp_", 4) != 0)
        return false;
    for (i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
        if (strcmp(name, gauges[i]) == 0)
            return false;
    return true;
}

static const struct gmap *gmap_find(const char *stat)
{
    size_t j;

    for (j = 0; j < sizeof(gmaps) / sizeof(gmaps[0]); j++)
        if (strcmp(gmaps[j].stat, stat) == 0)
            return &gmaps[j];
    return NULL;
}

static void render_mapped(FILE *f, const struct gmap *m, const char *value)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
            m->type);
    if (ends_with(m->stat, "_us")) { /* Prometheus wants seconds */
        unsigned long long us = strtoull(value, NULL, 10);

        fprintf(f, "%s %llu.%06llu\n", m->name, us / 1000000, us % 1000000);
    } else
        fprintf(f, "%s %s\n", m->name, value);
}

static void render_stat(FILE *f, const struct gstat *s)
{
    const struct gmap *m = gmap_find(s->name);

    if (m != NULL) {
        if (is_decimal(s->value))
            render_mapped(f, m, s->value);
    } else if (!is_number(s->value)) {
        return;
    } else if (ends_with(s->name, "_ms")) {
        /* a duration in milliseconds: Prometheus wants seconds */
        int bl = (int)strlen(s->name) - 3;
        unsigned long long ms = strtoull(s->value, NULL, 10);

        fprintf(f, "# HELP mdcached_%.*s_seconds The \"%s\" statistic, "
                   "in seconds.\n# TYPE mdcached_%.*s_seconds gauge\n"
                   "mdcached_%.*s_seconds %llu.%03llu\n",
                bl, s->name, s->name, bl, s->name, bl, s->name, ms / 1000,
                ms % 1000);
    } else if (is_xdp_counter(s->name)) {
        fprintf(f, "# HELP mdcached_%s_total The \"%s\" counter.\n"
                   "# TYPE mdcached_%s_total counter\nmdcached_%s_total %s\n",
                s->name, s->name, s->name, s->name, s->value);
    } else
        fprintf(f, "# HELP mdcached_%s The \"%s\" statistic.\n"
                   "# TYPE mdcached_%s gauge\nmdcached_%s %s\n",
                s->name, s->name, s->name, s->name, s->value);
}

static void render_general(struct server *srv, FILE *f)
{
    struct gcollect g = {NULL, 0, 0}, sl = {NULL, 0, 0};
    size_t i;

    stats_collect(srv, gcollect_fn, &g);
    fprintf(f, "# HELP memcached_up Whether the server answered (always 1).\n"
               "# TYPE memcached_up gauge\nmemcached_up 1\n");
    for (i = 0; i < g.n; i++) {
        const struct gstat *s = &g.v[i];

        if (strcmp(s->name, "version") == 0) {
            fprintf(f, "# HELP memcached_version The server's version.\n"
                       "# TYPE memcached_version gauge\n"
                       "memcached_version{version=\"%s\"} 1\n", s->value);
            continue;
        }
        if (is_thread_field(s->name) || strcmp(s->name, "pid") == 0 ||
            strcmp(s->name, "pointer_size") == 0)
            continue;
        render_stat(f, s);
    }
    /* memcached_exporter reads total_malloced from "stats slabs" */
    stats_collect_slabs(srv, gcollect_fn, &sl);
    for (i = 0; i < sl.n; i++)
        if (strcmp(sl.v[i].name, "total_malloced") == 0)
            render_stat(f, &sl.v[i]);
    free(sl.v);
    free(g.v);
}

struct trow {
    const char *field, *family, *labels, *help;
    size_t off;
};

static void render_threads(struct server *srv, FILE *f)
{
    static const struct {
        const char *field;
        size_t off;
    } fields[] = {
#define X(n) {#n, offsetof(struct thread_stats, n)},
        STATS_THREAD_FIELDS(X)
#undef X
    };
    enum { NF = sizeof(fields) / sizeof(fields[0]) };
    struct trow rows[NF];
    char fam[NF][80];
    bool done[NF];
    size_t i, j, k;
    unsigned w;

    fprintf(f, "# HELP mdcached_thread_info A server thread and its role.\n"
               "# TYPE mdcached_thread_info gauge\n");
    for (w = 0; w < srv->nworkers; w++)
        fprintf(f, "mdcached_thread_info{thread=\"%u\",role=\"%s\"} 1\n",
                srv->workers[w].id,
                srv->workers[w].role == ROLE_MAIN  ? "main"
                : srv->workers[w].role == ROLE_NET ? "network"
                                                   : "payload");
    for (i = 0; i < NF; i++) {
        rows[i].field = fields[i].field;
        rows[i].off = fields[i].off;
        rows[i].labels = "";
        rows[i].help = NULL;
        snprintf(fam[i], sizeof(fam[i]), "mdcached_%s_total", fields[i].field);
        rows[i].family = fam[i];
        for (j = 0; j < sizeof(tmaps) / sizeof(tmaps[0]); j++)
            if (strcmp(tmaps[j].field, fields[i].field) == 0) {
                rows[i].family = tmaps[j].family;
                rows[i].labels = tmaps[j].labels;
                rows[i].help = tmaps[j].help;
            }
        done[i] = false;
    }
    /* one family at a time, all its samples together */
    for (i = 0; i < NF; i++) {
        const char *help = rows[i].help;

        if (done[i])
            continue;
        for (k = i; k < NF && help == NULL; k++)
            if (strcmp(rows[k].family, rows[i].family) == 0)
                help = rows[k].help;
        if (help != NULL)
            fprintf(f, "# HELP %s %s\n", rows[i].family, help);
        else
            fprintf(f, "# HELP %s The \"%s\" counter of each thread.\n",
                    rows[i].family, rows[i].field);
        fprintf(f, "# TYPE %s counter\n", rows[i].family);
        for (k = i; k < NF; k++) {
            if (done[k] || strcmp(rows[k].family, rows[i].family) != 0)
                continue;
            done[k] = true;
            for (w = 0; w < srv->nworkers; w++) {
                const uint64_t *p = (const uint64_t *)(const void *)(
                    (const char *)&srv->workers[w].stats + rows[k].off);
                fprintf(f, "%s{%s%sthread=\"%u\"} %" PRIu64 "\n",
                        rows[k].family, rows[k].labels,
                        rows[k].labels[0] ? "," : "", srv->workers[w].id,
                        __atomic_load_n(p, __ATOMIC_RELAXED));
            }
        }
    }
}

static void render_histograms(struct server *srv, FILE *f)
{
    struct metrics *m = srv->metrics;
    unsigned c, i, w;

    if (m == NULL)
        return;
    fprintf(f, "# HELP mdcached_request_duration_seconds Service time of a "
               "request, from its parse to its reply queued, per command.\n"
               "# TYPE mdcached_request_duration_seconds histogram\n");
    for (c = 0; c < MC__COUNT; c++) {
        uint64_t cum = 0, sum = 0;

        for (i = 0; i <= METRICS_NBOUNDS; i++) {
            for (w = 0; w < m->nhist; w++)
                cum += __atomic_load_n(&m->hist[w].b[c][i], __ATOMIC_RELAXED);
            fprintf(f,
                    "mdcached_request_duration_seconds_bucket{command=\"%s\","
                    "le=\"%s\"} %" PRIu64 "\n",
                    cmd_name[c], i < METRICS_NBOUNDS ? bound_le[i] : "+Inf",
                    cum);
        }
        for (w = 0; w < m->nhist; w++)
            sum += __atomic_load_n(&m->hist[w].sum_ns[c], __ATOMIC_RELAXED);
        fprintf(f,
                "mdcached_request_duration_seconds_sum{command=\"%s\"} "
                "%.9f\n"
                "mdcached_request_duration_seconds_count{command=\"%s\"} "
                "%" PRIu64 "\n",
                cmd_name[c], (double)sum / 1e9, cmd_name[c], cum);
    }
}

char *metrics_render(struct server *srv, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);

    if (f == NULL)
        return NULL;
    render_general(srv, f);
    render_threads(srv, f);
    render_histograms(srv, f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    if (len != NULL)
        *len = n;
    return buf;
}

/* ---- HTTP ------------------------------------------------------------------ */

static void metrics_http_cb(struct evhttp_request *req, void *arg)
{
    struct server *srv = arg;
    struct evbuffer *out;
    size_t len = 0;
    char *text;

    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_send_error(req, 405, "only GET");
        return;
    }
    text = metrics_render(srv, &len);
    out = evbuffer_new();
    if (text == NULL || out == NULL) {
        free(text);
        if (out != NULL)
            evbuffer_free(out);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    evbuffer_add(out, text, len);
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", out);
    evbuffer_free(out);
}

static void metrics_other_cb(struct evhttp_request *req, void *arg)
{
    (void)arg;
    evhttp_send_error(req, 404, "see /metrics");
}

/* The port the kernel picked for --metrics ADDR:auto. */
static int metrics_bound_port(struct evhttp_bound_socket *bound,
                              uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss,
                    &len) < 0)
        return -1;
    *port = ntohs(ss.ss_family == AF_INET6
                      ? ((struct sockaddr_in6 *)&ss)->sin6_port
                      : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

const char *metrics_name(const struct server *srv)
{
    return srv->metrics != NULL ? srv->metrics->name : NULL;
}

/* The stop, run by the thread's own loop.  The stop is an event made
 * active rather than event_base_loopbreak() from the main thread: a break
 * asked before the loop runs is forgotten when it starts (libevent clears
 * the flag), and the main thread then waited for good in pthread_join().
 * An active event stays active until the loop runs it. */
static void metrics_stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

int metrics_setup(struct server *srv)
{
    const char *spec = srv->opt.metrics;
    struct evhttp_bound_socket *bound;
    struct metrics *m;
    char host[256];
    uint16_t port = 0;

    if (spec == NULL)
        return 0;
    if (metrics_parse_addr(spec, host, sizeof(host), &port) < 0) {
        log_error("--metrics %s: want ADDR:PORT, [V6ADDR]:PORT or PORT", spec);
        return -1;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        goto nomem;
    m->nhist = srv->nworkers;
    if (posix_memalign((void **)&m->hist, 64,
                       (size_t)m->nhist * sizeof(*m->hist)) != 0) {
        m->hist = NULL;
        goto nomem;
    }
    memset(m->hist, 0, (size_t)m->nhist * sizeof(*m->hist));
    m->base = event_base_new();
    m->http = m->base != NULL ? evhttp_new(m->base) : NULL;
    m->ev_stop = m->base != NULL ? event_new(m->base, -1, 0, metrics_stop_cb,
                                             m->base)
                                 : NULL;
    if (m->http == NULL || m->ev_stop == NULL)
        goto nomem;
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_cb(m->http, "/metrics", metrics_http_cb, srv);
    evhttp_set_gencb(m->http, metrics_other_cb, srv);
    evhttp_set_timeout(m->http, 10);
    bound = evhttp_bind_socket_with_handle(m->http, host, port);
    if (bound == NULL) {
        log_error("--metrics %s: cannot listen on %s port %u: %s", spec, host,
                  (unsigned)port, strerror(errno));
        srv->metrics = m;
        metrics_teardown(srv);
        return -1;
    }
    if (port == 0 && metrics_bound_port(bound, &port) < 0) {
        log_error("--metrics %s: cannot read the port bound: %s", spec,
                  strerror(errno));
        srv->metrics = m;
        metrics_teardown(srv);
        return -1;
    }
    snprintf(m->name, sizeof(m->name),
             strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host,
             (unsigned)port);
    srv->metrics = m;
    log_info("metrics on http://%s/metrics", m->name);
    return 0;
nomem:
    log_error("--metrics: out of memory");
    srv->metrics = m;
    metrics_teardown(srv);
    return -1;
}

static void *metrics_main(void *arg)
{
    struct metrics *m = arg;

    testhook_hold_loop("metrics");
    event_base_dispatch(m->base);
    return NULL;
}

int metrics_start_thread(struct server *srv)
{
    struct metrics *m = srv->metrics;
    sigset_t all, old;
    int e;

    if (m == NULL)
        return 0;
    /* only the main thread takes signals (daemon.c's libevent events) */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    e = pthread_create(&m->tid, NULL, metrics_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        log_error("--metrics: cannot start its thread");
        return -1;
    }
    m->started = true;
    return 0;
}

void metrics_teardown(struct server *srv)
{
    struct metrics *m = srv->metrics;

    if (m == NULL)
        return;
    if (m->started) {
        event_active(m->ev_stop, EV_READ, 0);
        testhook_stop_asked("metrics");
        pthread_join(m->tid, NULL);
    }
    srv->metrics = NULL;
    if (m->ev_stop != NULL)
        event_free(m->ev_stop);
    if (m->http != NULL)
        evhttp_free(m->http);
    if (m->base != NULL)
        event_base_free(m->base);
    free(m->hist);
    free(m);
}
