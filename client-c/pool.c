/*
 * pool.c - a pool of servers: keyed operations routed by ketama (ketama.c),
 * tag operations and flush fanned out to every server at once (every
 * request composed and sent, then one poll loop over all connections), each
 * server's failure reported on its own.  A failing server is marked down by
 * its handle for the retry delay; its keys are not moved meanwhile (as
 * libmemcached without auto-eject), so no stale copy appears elsewhere.
 *
 * A fan-out takes one path per operation (choose_path()): "tcp", the poll
 * loop over every connection; "uring", the same connections driven by
 * io_uring (one submission for N sends, one wait for N replies) where
 * liburing was found at build time and every connection is plain and up;
 * later "bpf".  With a spool directory (spool.c), tag deletes and deletes
 * that could not reach a server are written to a file and replayed in order
 * when the pool next talks to that server (spool_*() below).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "mdc_int.h"
#include "ops.h"
#include "ketama.h"
#include "spool.h"
#include "sg.h"
#include "sg_layout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define POOL_DEFAULT_RETRY_MS 2000
#define SPOOL_CHECK_MS 100 /* the file is looked at at most this often */
#define SPOOL_CALL_ENTRIES 100
#define SPOOL_CALL_MS 10
#define POOL_ERRLEN 1024
#define SG_DEFAULT_MS 50

struct mdc_pool {
    struct mdc **servers;
    uint32_t *weights;
    size_t n, cap;
    struct mdci_continuum ring;
    int connect_ms, io_ms, retry_ms;
    struct mdci_tls *tls; /* mdc_pool_set_tls(), or NULL */
    /* fan-out */
    int fanout_mode;           /* enum mdc_fanout_mode */
    struct mdci_uring *uring;  /* created at the first io_uring fan-out */
    bool uring_none;           /* none can be had (no liburing, no memory) */
    int last_path;             /* -1 before the first fan-out */
    struct mdc_pool_stats st;
    int *srv_path;             /* each server's path in the last fan-out */
    /* the kernel scatter-gather (mdc_pool_set_bpf(), sg.c) */
    struct mdci_sg *sg;
    unsigned sg_need;
    int sg_ms;
    int sg_map[MDCI_SG_MAX];   /* description's server -> pool index, -1 */
    bool sg_map_stale;         /* servers added or removed since */
    /* the spool (mdc_pool_set_spool_dir()) */
    char *spool_dir;
    struct mdci_spool *spool;  /* opened at first use */
    size_t spool_limit;
    unsigned spool_entries;
    int spool_ms;
    int64_t spool_checked;     /* monotonic ms of the last look */
    uint64_t spool_seen_size, spool_seen_ino, spool_seen_mtime;
    bool spool_dirty;          /* look now (this pool appended) */
    int err;
    char errstr[POOL_ERRLEN];
};

mdc_pool_t *mdc_pool_create(void)
{
    struct mdc_pool *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->connect_ms = MDCI_DEFAULT_CONNECT_MS;
    p->io_ms = MDCI_DEFAULT_IO_MS;
    p->retry_ms = POOL_DEFAULT_RETRY_MS;
    p->last_path = -1;
    /* MDC_FANOUT=poll|uring: the default mode, for tests and benches */
    const char *fm = getenv("MDC_FANOUT");
    if (fm != NULL && strcmp(fm, "poll") == 0)
        p->fanout_mode = MDC_FANOUT_POLL;
    else if (fm != NULL && strcmp(fm, "uring") == 0)
        p->fanout_mode = MDC_FANOUT_URING;
    p->spool_entries = SPOOL_CALL_ENTRIES;
    p->spool_ms = SPOOL_CALL_MS;
    strcpy(p->errstr, "ok");
    /* MDC_POOL_BPF=DESC[,NEED[,MS]]: the kernel path, for tests, benches
     * and programs that cannot call mdc_pool_set_bpf() */
    const char *sg = getenv("MDC_POOL_BPF");
    if (sg != NULL && sg[0] != '\0') {
        char d[512];
        unsigned need = 0;
        int ms = 0;
        if (sscanf(sg, "%511[^,],%u,%d", d, &need, &ms) >= 1)
            mdc_pool_set_bpf(p, d, need, ms);
    }
    return p;
}

void mdc_pool_destroy(mdc_pool_t *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++)
        mdc_destroy(p->servers[i]);
    free(p->servers);
    free(p->weights);
    mdci_tls_unref(p->tls);
    mdci_ketama_free(&p->ring);
    mdci_uring_free(p->uring);
    mdci_sg_free(p->sg);
    free(p->srv_path);
    if (p->spool != NULL)
        mdci_spool_close(p->spool);
    free(p->spool);
    free(p->spool_dir);
    free(p);
}

static int pool_seterr(struct mdc_pool *p, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int pool_seterr(struct mdc_pool *p, int rc, const char *fmt, ...)
{
    va_list ap;
    p->err = rc;
    va_start(ap, fmt);
    vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
    va_end(ap);
    return rc;
}

static int rebuild(struct mdc_pool *p)
{
    const char *stack[16] = {0};
    const char **names = stack;
    int rc = MDC_OK;
    p->sg_map_stale = true;
    if (p->n > 0) {
        int *sp = realloc(p->srv_path, p->n * sizeof(*sp));
        if (sp == NULL)
            return MDC_ERR_NOMEM;
        p->srv_path = sp;
        for (size_t i = 0; i < p->n; i++)
            sp[i] = -1;
    }
    if (p->n > 16) {
        names = malloc(p->n * sizeof(*names));
        if (names == NULL)
            return MDC_ERR_NOMEM;
    }
    for (size_t i = 0; i < p->n; i++)
        names[i] = p->servers[i]->name;
    if (mdci_ketama_build(&p->ring, names, p->weights, p->n) < 0)
        rc = MDC_ERR_NOMEM;
    if (names != stack)
        free(names);
    return rc;
}

int mdc_pool_add(mdc_pool_t *p, const char *spec, uint32_t weight)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (p->n >= INT32_MAX)
        return pool_seterr(p, MDC_ERR_ARG, "too many servers");
    struct mdc *m = mdci_create_spec(spec);
    if (m == NULL)
        return pool_seterr(p, MDC_ERR_ARG, "bad server \"%s\"",
                           spec ? spec : "(null)");
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 4;
        struct mdc **s = realloc(p->servers, cap * sizeof(*s));
        if (s != NULL)
            p->servers = s;
        uint32_t *w = realloc(p->weights, cap * sizeof(*w));
        if (w != NULL)
            p->weights = w;
        if (s == NULL || w == NULL) {
            mdc_destroy(m);
            return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        }
        p->cap = cap;
    }
    mdc_set_timeouts(m, p->connect_ms, p->io_ms);
    mdc_set_retry_delay(m, p->retry_ms);
    if (p->tls != NULL)
        mdci_set_tls_shared(m, p->tls);
    m->ident_want = p->spool_dir != NULL;
    p->servers[p->n] = m;
    p->weights[p->n] = weight ? weight : 1;
    p->n++;
    if (rebuild(p) != MDC_OK) {
        p->n--;
        mdc_destroy(m);
        return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    }
    pool_seterr(p, MDC_OK, "ok");
    return (int)(p->n - 1);
}

int mdc_pool_remove(mdc_pool_t *p, size_t index)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (index >= p->n)
        return pool_seterr(p, MDC_ERR_ARG, "no server %zu", index);
    mdc_destroy(p->servers[index]);
    memmove(p->servers + index, p->servers + index + 1,
            (p->n - index - 1) * sizeof(*p->servers));
    memmove(p->weights + index, p->weights + index + 1,
            (p->n - index - 1) * sizeof(*p->weights));
    p->n--;
    if (rebuild(p) != MDC_OK)
        return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    return pool_seterr(p, MDC_OK, "ok");
}

size_t mdc_pool_count(const mdc_pool_t *p)
{
    return p ? p->n : 0;
}

mdc_t *mdc_pool_server(mdc_pool_t *p, size_t index)
{
    return (p && index < p->n) ? p->servers[index] : NULL;
}

int mdc_pool_index(const mdc_pool_t *p, const void *key, size_t klen)
{
    if (p == NULL || p->n == 0)
        return MDC_ERR_NO_SERVERS;
    if (p->n == 1)
        return 0;
    return (int)mdci_ketama_find(&p->ring, mdci_ketama_hash(key, klen));
}

static void spool_before_one(struct mdc_pool *p, size_t i);

mdc_t *mdc_pool_pick(mdc_pool_t *p, const void *key, size_t klen)
{
    int i = mdc_pool_index(p, key, klen);
    if (i < 0)
        return NULL;
    /* the caller is about to talk to it: its spooled entries go first */
    spool_before_one(p, (size_t)i);
    return p->servers[i];
}

int mdc_pool_set_timeouts(mdc_pool_t *p, int connect_ms, int io_ms)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (connect_ms <= 0 || io_ms <= 0)
        return pool_seterr(p, MDC_ERR_ARG, "timeouts must be positive");
    p->connect_ms = connect_ms;
    p->io_ms = io_ms;
    for (size_t i = 0; i < p->n; i++)
        mdc_set_timeouts(p->servers[i], connect_ms, io_ms);
    return MDC_OK;
}

int mdc_pool_set_retry_delay(mdc_pool_t *p, int retry_ms)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (retry_ms < 0)
        return pool_seterr(p, MDC_ERR_ARG, "retry delay must be >= 0");
    p->retry_ms = retry_ms;
    for (size_t i = 0; i < p->n; i++)
        mdc_set_retry_delay(p->servers[i], retry_ms);
    return MDC_OK;
}

int mdc_pool_set_auth(mdc_pool_t *p, const char *user, const char *password)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    for (size_t i = 0; i < p->n; i++) {
        int rc = mdc_set_auth(p->servers[i], user, password);
        if (rc != MDC_OK)
            return pool_seterr(p, rc, "%s", mdc_errstr(p->servers[i]));
    }
    return MDC_OK;
}

int mdc_pool_set_tls(mdc_pool_t *p, const struct mdc_tls_config *cfg)
{
    struct mdci_tls *t = NULL;
    char err[MDCI_ERRLEN];

    if (p == NULL)
        return MDC_ERR_ARG;
    if (cfg != NULL) {
        int rc = mdci_tls_new(cfg, &t, err, sizeof(err));
        if (rc != MDC_OK)
            return pool_seterr(p, rc, "%s", err);
    }
    for (size_t i = 0; i < p->n; i++)
        mdci_set_tls_shared(p->servers[i], t);
    mdci_tls_unref(p->tls);
    p->tls = t; /* the pool's reference */
    return pool_seterr(p, MDC_OK, "ok");
}

int mdc_pool_error(const mdc_pool_t *p)
{
    return p ? p->err : MDC_ERR_ARG;
}

const char *mdc_pool_errstr(const mdc_pool_t *p)
{
    return p ? p->errstr : "no pool";
}

/* ---- the spool ------------------------------------------------------------
 *
 * What could not be delivered goes to a file shared by every process using
 * the same server list (spool.c); each pool looks at the file at most every
 * SPOOL_CHECK_MS (at once after it appended itself) and, before talking to
 * a server with entries, replays them in order within the per-call bounds.
 */

int mdc_pool_set_spool_dir(mdc_pool_t *p, const char *dir)
{
    char *d = NULL;
    struct stat sb;

    if (p == NULL)
        return MDC_ERR_ARG;
    if (dir != NULL) {
        if (dir[0] == '\0')
            return pool_seterr(p, MDC_ERR_ARG, "spool: empty directory");
        if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || stat(dir, &sb) < 0)
            return pool_seterr(p, MDC_ERR_ARG, "spool %s: %s", dir,
                               strerror(errno));
        if (!S_ISDIR(sb.st_mode))
            return pool_seterr(p, MDC_ERR_ARG, "spool %s: not a directory",
                               dir);
        if ((d = strdup(dir)) == NULL)
            return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    }
    if (p->spool != NULL)
        mdci_spool_close(p->spool);
    free(p->spool);
    p->spool = NULL;
    free(p->spool_dir);
    p->spool_dir = d;
    p->spool_checked = 0;
    p->spool_dirty = true;
    for (size_t i = 0; i < p->n; i++) {
        p->servers[i]->ident_want = d != NULL;
        p->servers[i]->spool_pending = false;
    }
    return pool_seterr(p, MDC_OK, "ok");
}

int mdc_pool_set_spool_limits(mdc_pool_t *p, size_t max_bytes,
                              unsigned per_call_entries, int per_call_ms)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (per_call_ms < 0)
        return pool_seterr(p, MDC_ERR_ARG, "spool: negative time bound");
    p->spool_limit = max_bytes;
    if (p->spool != NULL)
        p->spool->limit = max_bytes ? (max_bytes < MDCI_SPOOL_MIN_LIMIT
                                           ? MDCI_SPOOL_MIN_LIMIT
                                           : max_bytes)
                                    : MDCI_SPOOL_DEFAULT_LIMIT;
    p->spool_entries = per_call_entries ? per_call_entries
                                        : SPOOL_CALL_ENTRIES;
    p->spool_ms = per_call_ms ? per_call_ms : SPOOL_CALL_MS;
    return MDC_OK;
}

/* The pool's spool file, opened (named after the server list) at first
 * use; NULL with the message in errstr. */
static struct mdci_spool *spool_get(struct mdc_pool *p)
{
    char name[64];
    const char *stack[16] = {0};
    const char **names = stack;

    if (p->spool != NULL)
        return p->spool;
    if (p->n > 16 && (names = malloc(p->n * sizeof(*names))) == NULL)
        return NULL;
    for (size_t i = 0; i < p->n; i++)
        names[i] = p->servers[i]->label;
    mdci_spool_name(name, sizeof(name), names, p->n);
    if (names != stack)
        free(names);
    struct mdci_spool *s = malloc(sizeof(*s));
    if (s == NULL)
        return NULL;
    if (mdci_spool_open(s, p->spool_dir, name, p->spool_limit) < 0) {
        pool_seterr(p, MDC_ERR_IO, "%s", s->err);
        mdci_spool_close(s);
        free(s);
        return NULL;
    }
    p->spool = s;
    return s;
}

static bool rec_is(const struct mdci_spool_rec *r, const struct mdc *m)
{
    return r->slen == strlen(m->label) &&
           memcmp(r->server, m->label, r->slen) == 0;
}

/* After a scan (locked): which servers have entries. */
static void spool_mark(struct mdc_pool *p, struct mdci_spool *s)
{
    for (size_t i = 0; i < p->n; i++)
        p->servers[i]->spool_pending = false;
    for (size_t k = 0; k < s->nrecs; k++) {
        const struct mdci_spool_rec *r = &s->recs[k];
        if (!r->pending)
            continue;
        for (size_t i = 0; i < p->n; i++)
            if (rec_is(r, p->servers[i]))
                p->servers[i]->spool_pending = true;
    }
}

/* Look at the file (not more often than SPOOL_CHECK_MS unless this pool
 * wrote to it): a change of size, inode or time means a scan. */
static void spool_check(struct mdc_pool *p)
{
    struct mdci_spool *s;
    struct stat sb;
    int64_t now;

    if (p->spool_dir == NULL)
        return;
    now = mdci_now_ms();
    if (!p->spool_dirty && now - p->spool_checked < SPOOL_CHECK_MS)
        return;
    p->spool_checked = now;
    p->spool_dirty = false;
    if ((s = spool_get(p)) == NULL)
        return;
    if (stat(s->path, &sb) < 0)
        return;
    if ((uint64_t)sb.st_size == p->spool_seen_size &&
        (uint64_t)sb.st_ino == p->spool_seen_ino &&
        (uint64_t)sb.st_mtim.tv_nsec + (uint64_t)sb.st_mtime * 1000000000u ==
            p->spool_seen_mtime)
        return;
    if (mdci_spool_lock(s, false) < 0)
        return;
    if (mdci_spool_scan(s) == 0) {
        spool_mark(p, s);
        p->st.spool_damaged += s->damaged;
    }
    if (fstat(s->fd, &sb) == 0) {
        p->spool_seen_size = (uint64_t)sb.st_size;
        p->spool_seen_ino = (uint64_t)sb.st_ino;
        p->spool_seen_mtime = (uint64_t)sb.st_mtim.tv_nsec +
                              (uint64_t)sb.st_mtime * 1000000000u;
    }
    mdci_spool_unlock(s);
}

/* One entry copied out of the file (replayed without the lock held). */
struct spent {
    struct mdci_spool_rec r;
    uint8_t *data;
};

/* Send one entry to m: its status, or a transport error. */
static int spool_send(struct mdc *m, const struct spent *e)
{
    const struct mdci_spool_rec *r = &e->r;
    int32_t stackv[64];
    int32_t *v = stackv;
    int rc;

    switch (r->kind) {
    case MDCI_SP_DBT:
    case MDCI_SP_DBT_STALE:
        if (r->count > 64 && (v = malloc(r->count * sizeof(*v))) == NULL)
            return MDC_ERR_NOMEM;
        for (uint32_t k = 0; k < r->count; k++) {
            const uint8_t *b = e->data + 4 * k;
            v[k] = (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 |
                             (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        }
        rc = r->kind == MDCI_SP_DBT
                 ? mdc_del_by_tag(m, r->tkey, v, r->count, NULL)
                 : mdc_del_by_tag_stale(m, r->tkey, v, r->count, r->ttl,
                                        NULL);
        if (v != stackv)
            free(v);
        return rc;
    case MDCI_SP_DEL:
        return mdc_delete(m, e->data, r->count, r->cas);
    case MDCI_SP_DEL_STALE:
        return mdc_delete_stale(m, e->data, r->count, r->cas, r->ttl);
    case MDCI_SP_FLUSH:
        return mdc_flush(m);
    default:
        return MDC_OK;
    }
}

/*
 * Replay server i's entries in order: at most *budget entries and until
 * deadline (0: no bound), the first entry whatever the time (the identity
 * query before it can outlast a 10 ms deadline on a busy machine, and a
 * call that replayed nothing let the request after it see what the entry
 * was to invalidate).  The server's identity decides: an entry whose
 * server had another data generation (it started empty since) is dropped;
 * one of the same generation, or of an unknown one, is sent.  A transport
 * error stops (the rest stays).  Returns the entries still pending.
 */
static uint64_t spool_replay_server(struct mdc_pool *p,
                                    struct mdci_spool *s, size_t i,
                                    unsigned *budget, int64_t deadline,
                                    struct mdc_spool_result *res)
{
    struct mdc *m = p->servers[i];
    struct spent *es = NULL;
    size_t ne = 0, done = 0;
    uint64_t epoch, left = 0, gen = 0, boot = 0, upto = 0;
    char *text = NULL;
    size_t tlen = 0;
    int rc;

    if (s == NULL || mdci_spool_lock(s, false) < 0)
        return 1;
    if (mdci_spool_scan(s) < 0) {
        mdci_spool_unlock(s);
        return 1;
    }
    p->st.spool_damaged += s->damaged;
    if (res != NULL)
        res->damaged += s->damaged;
    epoch = s->epoch;
    for (size_t k = 0; k < s->nrecs; k++)
        ne += s->recs[k].pending && rec_is(&s->recs[k], m);
    if (ne > 0 && (es = calloc(ne, sizeof(*es))) != NULL) {
        size_t j = 0;
        for (size_t k = 0; k < s->nrecs && j < ne; k++) {
            const struct mdci_spool_rec *r = &s->recs[k];
            if (!r->pending || !rec_is(r, m))
                continue;
            size_t dl = 0;
            if (r->kind == MDCI_SP_DEL || r->kind == MDCI_SP_DEL_STALE)
                dl = r->count; /* key bytes */
            else if (r->kind == MDCI_SP_DBT || r->kind == MDCI_SP_DBT_STALE)
                dl = 4 * (size_t)r->count; /* tag values */
            es[j].r = *r;
            if (dl > 0 && (es[j].data = malloc(dl)) == NULL)
                break;
            if (dl > 0)
                memcpy(es[j].data, r->data, dl);
            j++;
        }
        ne = j;
    }
    mdci_spool_unlock(s);
    if (ne == 0) {
        m->spool_pending = false;
        free(es);
        return 0;
    }
    /* whose records does the server hold now? */
    rc = mdc_stats(m, "identity", &text, &tlen);
    if (rc == MDC_OK)
        mdci_parse_identity((const uint8_t *)text, tlen, &boot, &gen);
    free(text);
    if (rc < 0) {
        left = ne;
        goto out;
    }
    (void)boot;
    for (done = 0; done < ne; done++) {
        const struct spent *e = &es[done];
        if (budget != NULL && *budget == 0)
            break;
        if (deadline != 0 && done > 0 && mdci_now_ms() >= deadline)
            break;
        if (e->r.generation != 0 && gen != 0 && e->r.generation != gen) {
            /* started empty since: its records are not the ones */
            p->st.dropped++;
            if (res != NULL)
                res->dropped++;
        } else {
            rc = spool_send(m, e);
            if (rc < 0)
                break; /* unreachable again: the rest waits */
            p->st.replayed++;
            if (res != NULL)
                res->replayed++;
        }
        if (budget != NULL)
            (*budget)--;
        upto = e->r.off + 1;
    }
    left = ne - done;
    if (upto != 0 && mdci_spool_lock(s, false) == 0) {
        /* offsets of an older epoch (compacted meanwhile) are not
         * applied: those entries are replayed again, which is harmless */
        if (s->epoch == epoch) {
            struct mdci_spool_rec d = {.kind = MDCI_SP_DONE,
                                       .server = m->label,
                                       .slen = (uint16_t)strlen(m->label),
                                       .upto = upto,
                                       .time = (uint64_t)time(NULL)};
            if (mdci_spool_append(s, &d, true) == 0 &&
                mdci_spool_scan(s) == 0) {
                bool any = false;
                for (size_t k = 0; k < s->nrecs && !any; k++)
                    any = s->recs[k].pending;
                if (!any)
                    mdci_spool_compact(s); /* back to the header */
                else
                    spool_mark(p, s);
            }
        }
        mdci_spool_unlock(s);
        p->spool_dirty = true;
    }
out:
    m->spool_pending = left > 0;
    for (size_t k = 0; k < ne; k++)
        free(es[k].data);
    free(es);
    return left;
}

/* Before a call talks to server i: its spooled entries first, within this
 * call's bounds (*budget entries, until deadline). */
static void spool_before(struct mdc_pool *p, size_t i, unsigned *budget,
                         int64_t *deadline)
{
    struct mdc *m = p->servers[i];
    if (!m->spool_pending || *budget == 0)
        return;
    if (m->down_until != 0 && mdci_now_ms() < m->down_until)
        return;
    if (*deadline == 0)
        *deadline = mdci_now_ms() + p->spool_ms;
    spool_replay_server(p, spool_get(p), i, budget, *deadline, NULL);
}

/* One server a call goes to (keyed operations). */
static void spool_before_one(struct mdc_pool *p, size_t i)
{
    unsigned budget = p->spool_entries;
    int64_t deadline = 0;
    if (p->spool_dir == NULL)
        return;
    spool_check(p);
    spool_before(p, i, &budget, &deadline);
}

/* Every server (a fan-out), sharing the call's bounds. */
static void spool_before_all(struct mdc_pool *p)
{
    unsigned budget = p->spool_entries;
    int64_t deadline = 0;
    if (p->spool_dir == NULL)
        return;
    spool_check(p);
    for (size_t i = 0; i < p->n; i++)
        spool_before(p, i, &budget, &deadline);
}

/* A failure that means the server was not reached (its state unknown). */
static bool unreached(int rc)
{
    return rc == MDC_ERR_CONNECT || rc == MDC_ERR_TIMEOUT ||
           rc == MDC_ERR_IO || rc == MDC_ERR_DOWN || rc == MDC_ERR_TLS ||
           rc == MDC_ERR_PROTOCOL;
}

/*
 * Write one undelivered invalidation for server i.  boot/gen: the server's
 * identity on the connection the request was lost on (0: not known, e.g.
 * it was never reached: replayed whatever the server says then).  When the
 * file is full (after dropping what is done), the server is marked for a
 * flush instead; a pending flush covers every later entry.
 */
static void spool_add(struct mdc_pool *p, size_t i,
                      struct mdci_spool_rec *r)
{
    struct mdci_spool *s;
    struct mdc *m = p->servers[i];
    int rc;

    r->server = m->label;
    r->slen = (uint16_t)strlen(m->label);
    r->time = (uint64_t)time(NULL);
    if ((s = spool_get(p)) == NULL || mdci_spool_lock(s, false) < 0) {
        p->st.spool_errors++;
        return;
    }
    rc = mdci_spool_append(s, r, false);
    if (rc == 1 && mdci_spool_scan(s) == 0 && mdci_spool_compact(s) == 0)
        rc = mdci_spool_append(s, r, false);
    if (rc == 1 && mdci_spool_scan(s) == 0) {
        bool flush = false;
        for (size_t k = 0; k < s->nrecs && !flush; k++)
            flush = s->recs[k].pending && s->recs[k].kind == MDCI_SP_FLUSH &&
                    rec_is(&s->recs[k], m);
        if (flush) {
            p->st.spool_covered++;
            rc = 0;
        } else {
            struct mdci_spool_rec f = *r;
            f.kind = MDCI_SP_FLUSH;
            f.count = 0;
            f.data = NULL;
            rc = mdci_spool_append(s, &f, true);
            if (rc == 0)
                p->st.spool_flush_marks++;
        }
    } else if (rc == 0) {
        p->st.spooled++;
    }
    if (rc != 0)
        p->st.spool_errors++;
    mdci_spool_unlock(s);
    m->spool_pending = true;
    p->spool_dirty = true;
}

/* The identity to record for a request lost on m: the connection's, if it
 * was up (and its identity known) when the call began and the failure was
 * on it (not a refused connect, nor the local down mark). */
struct ident_snap {
    bool known;
    uint64_t serial, boot, gen;
};

static void ident_take(const struct mdc *m, struct ident_snap *sn)
{
    sn->known = m->state == MDCI_READY && m->ident_conn == m->conn_serial &&
                m->conn_serial != 0;
    sn->serial = m->conn_serial;
    sn->boot = m->ident_boot;
    sn->gen = m->ident_gen;
}

static void ident_for(const struct mdc *m, const struct ident_snap *sn,
                      int rc, struct mdci_spool_rec *r)
{
    r->boot_id = r->generation = 0;
    if (sn->known && sn->serial == m->conn_serial &&
        (rc == MDC_ERR_IO || rc == MDC_ERR_TIMEOUT)) {
        r->boot_id = sn->boot;
        r->generation = sn->gen;
    }
}

/* ---- keyed ----------------------------------------------------------------
 */

static struct mdc *route(struct mdc_pool *p, const void *key, size_t klen)
{
    if (p == NULL)
        return NULL;
    if (p->n == 0) {
        pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
        return NULL;
    }
    int i = mdc_pool_index(p, key, klen);
    if (i < 0)
        return NULL;
    spool_before_one(p, (size_t)i); /* its spooled entries go first */
    return p->servers[i];
}

/* route() for a read: *out cleared when there is no server */
static struct mdc *route_read(struct mdc_pool *p, const void *key,
                              size_t klen, struct mdc_item **out)
{
    struct mdc *m = route(p, key, klen);
    if (m == NULL && out != NULL)
        *out = NULL;
    return m;
}

int mdc_pool_get(mdc_pool_t *p, const void *key, size_t klen,
                 struct mdc_item **out)
{
    struct mdc *m = route_read(p, key, klen, out);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_get(m, key, klen, out);
}

int mdc_pool_lease_get(mdc_pool_t *p, const void *key, size_t klen,
                       int64_t vivify_ttl, int64_t recache_ttl,
                       struct mdc_item **out)
{
    struct mdc *m = route_read(p, key, klen, out);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_lease_get(m, key, klen, vivify_ttl, recache_ttl, out);
}

int mdc_pool_store(mdc_pool_t *p, enum mdc_store_mode mode,
                   const struct mdc_kv *kv, uint64_t *cas_out)
{
    if (kv == NULL)
        return p ? pool_seterr(p, MDC_ERR_ARG, "NULL record") : MDC_ERR_ARG;
    struct mdc *m = route(p, kv->key, kv->klen);
    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    return mdc_store(m, mode, kv, cas_out);
}

/*
 * A delete (stale: mdc_delete_stale()) on the server the key maps to; a
 * connection lost on the way is tried once more at once, and a server not
 * reached gets the delete spooled, in its own form (a stale delete is
 * replayed as a stale delete: the record marked, not removed).
 */
static int pool_delete(mdc_pool_t *p, const void *key, size_t klen,
                       uint64_t cas, bool stale, int64_t ttl)
{
    struct ident_snap sn;
    struct mdc *m = route(p, key, klen);
    int rc;

    if (m == NULL)
        return p ? p->err : MDC_ERR_ARG;
    ident_take(m, &sn);
    rc = stale ? mdc_delete_stale(m, key, klen, cas, ttl)
               : mdc_delete(m, key, klen, cas);
    if (rc == MDC_ERR_IO && sn.known) {
        /* the connection was lost: once more on a new one, now */
        m->down_until = 0;
        p->st.retries++;
        rc = stale ? mdc_delete_stale(m, key, klen, cas, ttl)
                   : mdc_delete(m, key, klen, cas);
        if (rc < 0)
            rc = MDC_ERR_IO;
    }
    if (p->spool_dir != NULL && unreached(rc) && klen > 0 &&
        klen <= WIRE_MAX_KEY) {
        struct mdci_spool_rec sr = {
            .kind = stale ? MDCI_SP_DEL_STALE : MDCI_SP_DEL, .cas = cas,
            .ttl = stale ? ttl : 0, .count = (uint32_t)klen, .data = key};
        ident_for(m, &sn, rc, &sr);
        spool_add(p, (size_t)mdc_pool_index(p, key, klen), &sr);
    }
    return rc;
}

int mdc_pool_delete(mdc_pool_t *p, const void *key, size_t klen, uint64_t cas)
{
    return pool_delete(p, key, klen, cas, false, 0);
}

int mdc_pool_delete_stale(mdc_pool_t *p, const void *key, size_t klen,
                          uint64_t cas, int64_t ttl)
{
    return pool_delete(p, key, klen, cas, true, ttl);
}

/* ---- fan-out --------------------------------------------------------------
 */

/*
 * Summarise per-server results: MDC_OK when all succeeded, the common
 * status when every server failed the same way, MDC_ERR_PARTIAL when some
 * failed.  okish() says which per-server codes count as answers.
 */
static int gather(struct mdc_pool *p, const int *rc, int *server_rc,
                  const char *what, bool (*okish)(int))
{
    size_t nfail = 0, pos = 0;
    int first = MDC_OK;
    char *buf = p->errstr;

    for (size_t i = 0; i < p->n; i++) {
        if (server_rc != NULL)
            server_rc[i] = rc[i];
        if (okish(rc[i]))
            continue;
        if (nfail++ == 0)
            first = rc[i];
    }
    if (nfail == 0) {
        p->err = MDC_OK;
        strcpy(p->errstr, "ok");
        return MDC_OK;
    }
    pos = (size_t)snprintf(buf, POOL_ERRLEN, "%s: %zu of %zu servers failed",
                           what, nfail, p->n);
    for (size_t i = 0; i < p->n && pos < POOL_ERRLEN; i++) {
        if (okish(rc[i]))
            continue;
        pos += (size_t)snprintf(buf + pos, POOL_ERRLEN - pos, "; [%zu] %s", i,
                                p->servers[i]->errstr);
    }
    p->err = nfail == p->n ? first : MDC_ERR_PARTIAL;
    return p->err;
}

static bool ok_only(int rc)
{
    return rc == MDC_OK;
}

static bool ok_or_truncated(int rc)
{
    return rc == MDC_OK || rc == MDC_TRUNCATED;
}

const char *mdc_pool_last_path(const mdc_pool_t *p)
{
    static const char *const names[MDC_PATH_COUNT] = {"tcp", "uring", "bpf",
                                                      "?"};
    if (p == NULL || p->last_path < 0 || p->last_path >= MDC_PATH_COUNT)
        return "";
    return names[p->last_path];
}

int mdc_pool_set_fanout(mdc_pool_t *p, int mode)
{
    if (p == NULL)
        return MDC_ERR_ARG;
    if (mode != MDC_FANOUT_AUTO && mode != MDC_FANOUT_POLL &&
        mode != MDC_FANOUT_URING)
        return pool_seterr(p, MDC_ERR_ARG, "unknown fan-out mode %d", mode);
    p->fanout_mode = mode;
    return MDC_OK;
}

int mdc_pool_get_stats(const mdc_pool_t *p, struct mdc_pool_stats *out)
{
    if (p == NULL || out == NULL)
        return MDC_ERR_ARG;
    *out = p->st;
    return MDC_OK;
}

/*
 * The path of one fan-out operation: the per-operation choice point.  Today
 * "uring" when the pool may use it (mode) and a ring can be had, else
 * "tcp".  (A kernel scatter-gather path, "bpf", is chosen here too, for the
 * operations and pools it can carry.)
 */
static int choose_path(struct mdc_pool *p, const struct mdci_req *r)
{
    (void)r;
    if (p->fanout_mode == MDC_FANOUT_POLL || p->uring_none)
        return MDC_PATH_TCP;
    if (p->uring == NULL && (p->uring = mdci_uring_new()) == NULL) {
        p->uring_none = true; /* built without liburing, or no memory */
        return MDC_PATH_TCP;
    }
    return MDC_PATH_URING;
}

/* Run every handle that began successfully: over io_uring when path says
 * so and every connection can take it, else in one poll loop.  Returns
 * the path that carried them. */
static int run_all(struct mdc_pool *p, const int *rc, int path,
                   const uint8_t *skip)
{
    struct mdc *stack[16];
    struct mdc **hs = stack;
    size_t k = 0;
    if (p->n > 16) {
        hs = malloc(p->n * sizeof(*hs));
        if (hs == NULL) { /* fall back to one at a time */
            for (size_t i = 0; i < p->n; i++)
                if (rc[i] == MDC_OK && (skip == NULL || !skip[i]))
                    mdci_exchange(p->servers[i]);
            return MDC_PATH_TCP;
        }
    }
    for (size_t i = 0; i < p->n; i++)
        if (rc[i] == MDC_OK && p->servers[i]->busy &&
            (skip == NULL || !skip[i]))
            hs[k++] = p->servers[i];
    if (path == MDC_PATH_URING) {
        /* one submission for every send, one wait for the replies */
        if (k > 0 && mdci_uring_run(p->uring, hs, k) == 0)
            goto out;
        if (k > 0)
            p->st.uring_fallbacks++; /* a connect, TLS, or no ring */
        path = MDC_PATH_TCP;
    }
    /* Put every request on the wire before waiting on any reply. */
    for (size_t i = 0; i < k; i++)
        if (hs[i]->state == MDCI_READY)
            mdci_exchange_write(hs[i]);
    mdci_run(hs, k);
out:
    if (hs != stack)
        free(hs);
    return path;
}

static int *rc_array(struct mdc_pool *p, int *stack, size_t nstack)
{
    if (p->n <= nstack)
        return stack;
    int *rc = malloc(p->n * sizeof(*rc));
    if (rc == NULL)
        pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    return rc;
}

/*
 * One request (ops.h, struct mdci_req) to every server at once: composed
 * and sent on all, the replies gathered on the path choose_path() picks,
 * each server's result read, then summarised by gather() (what names the
 * operation, okish says which codes count as answers).  A DBT's counts are
 * added into *total.  rc (p->n slots) receives each server's result; a DBT
 * lost with its connection (a server restart, an idle connection closed)
 * is sent once more at once; sn (p->n slots, or NULL) receives the
 * identity each connection had when the call began (for the spool).
 */
static int fan_out(struct mdc_pool *p, const struct mdci_req *r, int *rc,
                   int *server_rc, const char *what, bool (*okish)(int),
                   uint64_t *total, struct ident_snap *sn,
                   const uint8_t *skip)
{
    union mdci_req_ctx stack_c[16];
    union mdci_req_ctx *c = stack_c;
    int ret, path;

    if (p->n == 0)
        return pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
    if (p->n > 16 && (c = calloc(p->n, sizeof(*c))) == NULL)
        return pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
    spool_before_all(p); /* what an earlier call could not deliver first */
    path = choose_path(p, r);
    /* skip[i]: done already (the kernel path), rc[i] holds its result */
    for (size_t i = 0; i < p->n; i++) {
        if (sn != NULL)
            ident_take(p->servers[i], &sn[i]);
        if (skip != NULL && skip[i])
            continue;
        rc[i] = mdci_req_begin(p->servers[i], r, &c[i]);
    }
    path = run_all(p, rc, path, skip);
    {
        size_t nrun = 0;
        for (size_t i = 0; i < p->n; i++)
            nrun += skip == NULL || !skip[i];
        if (nrun > 0)
            p->st.ops[path]++;
    }
    if (skip == NULL)
        p->last_path = path;
    for (size_t i = 0; i < p->n; i++) {
        if (skip != NULL && skip[i])
            continue;
        p->srv_path[i] = path;
        if (rc[i] == MDC_OK)
            rc[i] = mdci_req_finish(p->servers[i], r, &c[i]);
        if (rc[i] == MDC_ERR_IO && r->kind == MDCI_REQ_DBT && sn != NULL &&
            sn[i].known) {
            /* the connection was lost (an idle one the server closed, a
             * restart): once more on a new one, now */
            struct mdc *m = p->servers[i];
            memset(&c[i], 0, sizeof(c[i]));
            m->down_until = 0;
            p->st.retries++;
            rc[i] = mdci_req_run(m, r, &c[i]);
            if (rc[i] < 0)
                rc[i] = MDC_ERR_IO; /* the first failure's kind */
        }
        if (rc[i] == MDC_OK && total != NULL)
            *total += c[i].one.u64;
    }
    ret = gather(p, rc, server_rc, what, okish);
    /* every server answered, some cut short (where okish allows that) */
    if (ret == MDC_OK)
        for (size_t i = 0; i < p->n; i++)
            if (rc[i] == MDC_TRUNCATED) {
                ret = pool_seterr(p, MDC_TRUNCATED,
                                  "%s: [%zu] %s: reply truncated", what, i,
                                  p->servers[i]->label);
                break;
            }
    if (c != stack_c)
        free(c);
    return ret;
}

int mdc_pool_get_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, struct mdc_itemset *out, int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_GBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .out = out};
    int stack_rc[16], *rc, ret;

    if (p == NULL)
        return MDC_ERR_ARG;
    if (out == NULL || tvals == NULL || ntvals == 0)
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    ret = fan_out(p, &r, rc, server_rc, "get_by_tag", ok_or_truncated, NULL,
                  NULL, NULL);
    if (rc != stack_rc)
        free(rc);
    return ret;
}

/* ---- the kernel scatter-gather path (sg.c, docs/pool-bpf.md) ---- */

int mdc_pool_set_bpf(mdc_pool_t *p, const char *desc, unsigned need,
                     int timeout_ms)
{
    char err[300];
    if (p == NULL)
        return MDC_ERR_ARG;
    mdci_sg_free(p->sg);
    p->sg = NULL;
    if (desc == NULL)
        return pool_seterr(p, MDC_OK, "ok");
    if (timeout_ms < 0 || need > MDCI_SG_MAX)
        return pool_seterr(p, MDC_ERR_ARG, "bad need or timeout");
    p->sg_need = need;
    p->sg_ms = timeout_ms > 0 ? timeout_ms : SG_DEFAULT_MS;
    p->sg_map_stale = true;
    if ((p->sg = mdci_sg_open(desc, err, sizeof(err))) == NULL)
        return pool_seterr(p, MDC_ERR_CONNECT, "kernel path: %s", err);
    return pool_seterr(p, MDC_OK, "ok");
}

int mdc_pool_server_path(const mdc_pool_t *p, size_t index)
{
    if (p == NULL || index >= p->n || p->srv_path == NULL)
        return -1;
    return p->srv_path[index];
}

/* the pool's index of each server of the description (by "addr:port") */
static void sg_remap(struct mdc_pool *p)
{
    for (int k = 0; k < p->sg->nserv; k++) {
        p->sg_map[k] = -1;
        for (size_t i = 0; i < p->n; i++)
            if (strcmp(p->servers[i]->label, p->sg->servers[k]) == 0) {
                p->sg_map[k] = (int)i;
                break;
            }
    }
    p->sg_map_stale = false;
}

/*
 * A tag delete through the kernel: -1 when the path cannot take it (then
 * nothing was sent; counted as a fallback), else 0 with skip[i] set and
 * rc[i] = MDC_OK for every server the completion shows as answered
 * without an error (their counts added into *total).  The others are left
 * to the caller's TCP fan-out.
 */
static int sg_dbt(struct mdc_pool *p, const struct mdci_req *r, int *rc,
                  uint8_t *skip, uint64_t *total)
{
    char cmd[MDCI_SG_MAX_CMD + 1];
    size_t len;
    struct mdci_sg_res res;
    int n;

    if (p->tls != NULL)
        goto fallback;
    for (size_t i = 0; i < p->n; i++)
        if (p->servers[i]->auth_user != NULL || p->servers[i]->tls != NULL)
            goto fallback;
    n = snprintf(cmd, sizeof(cmd), "tdel %" PRId32, r->tkey);
    for (size_t k = 0; k < r->ntvals && n > 0 && (size_t)n < sizeof(cmd);
         k++)
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " %" PRId32,
                      r->tvals[k]);
    if (r->stale && n > 0 && (size_t)n < sizeof(cmd))
        n += r->ttl > 0 ? snprintf(cmd + n, sizeof(cmd) - (size_t)n,
                                   " I T%" PRId64, r->ttl)
                        : snprintf(cmd + n, sizeof(cmd) - (size_t)n, " I");
    if (n > 0 && (size_t)n < sizeof(cmd))
        n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, "\r\n");
    if (n <= 0 || (size_t)n >= sizeof(cmd))
        goto fallback; /* more than one datagram: TCP */
    len = (size_t)n;
    if (p->sg_map_stale)
        sg_remap(p);
    if (mdci_sg_run(p->sg, cmd, len, p->sg_need, p->sg_ms, &res) < 0)
        goto fallback;
    p->st.ops[MDC_PATH_BPF]++;
    if (res.kind != MDC_SG_DONE ||
        (p->sg->nserv < 64 && res.answered != (1ULL << p->sg->nserv) - 1) ||
        (p->sg->nserv == 64 && res.answered != ~0ULL))
        p->st.bpf_polls++;
    for (int k = 0; k < p->sg->nserv; k++) {
        int i = p->sg_map[k];
        uint64_t bit = 1ULL << k;
        if (i < 0 || !(res.answered & bit) || (res.failed & bit))
            continue; /* not ours, not answered, or an error: TCP */
        skip[i] = 1;
        rc[i] = MDC_OK;
        p->srv_path[i] = MDC_PATH_BPF;
    }
    /* the sum counts the ok answers only, the ones skipped here */
    *total += res.sum;
    return 0;
fallback:
    p->st.bpf_fallbacks++;
    return -1;
}

static int pool_dbt(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                    size_t ntvals, bool stale, int64_t ttl, uint64_t *deleted,
                    int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_DBT, .tkey = tkey, .tvals = tvals,
                         .ntvals = ntvals, .stale = stale, .ttl = ttl};
    struct ident_snap stack_sn[16], *sn = stack_sn;
    int stack_rc[16], *rc = NULL;
    uint64_t total = 0;
    int ret;

    if (deleted != NULL)
        *deleted = 0;
    if (p == NULL)
        return MDC_ERR_ARG;
    if (tvals == NULL || ntvals == 0)
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    if (ntvals > MDCI_SPOOL_MAX_COUNT && p->spool_dir != NULL)
        return pool_seterr(p, MDC_ERR_ARG, "more than %d tag values with a "
                           "spool", MDCI_SPOOL_MAX_COUNT);
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    if (p->n > 16 && (sn = calloc(p->n, sizeof(*sn))) == NULL) {
        ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (p->sg != NULL && p->n > 0) {
        /* the kernel path first; what it did not reach goes over TCP */
        uint8_t stack_skip[16], *skip = stack_skip;
        if (p->n > 16 && (skip = calloc(p->n, 1)) == NULL) {
            ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
            goto out;
        }
        memset(skip, 0, p->n);
        if (sg_dbt(p, &r, rc, skip, &total) == 0) {
            size_t nleft = 0;
            for (size_t i = 0; i < p->n; i++)
                nleft += !skip[i];
            p->st.bpf_tcp_retries += nleft;
            ret = fan_out(p, &r, rc, server_rc,
                          stale ? "del_by_tag_stale" : "del_by_tag", ok_only,
                          &total, sn, skip);
            p->last_path = MDC_PATH_BPF;
            if (skip != stack_skip)
                free(skip);
            goto spool;
        }
        if (skip != stack_skip)
            free(skip);
    }
    ret = fan_out(p, &r, rc, server_rc,
                  stale ? "del_by_tag_stale" : "del_by_tag", ok_only, &total,
                  sn, NULL);
spool:
    if (p->spool_dir != NULL && (ret == MDC_ERR_PARTIAL || ret < 0) &&
        p->n > 0) {
        /* what did not reach a server waits in the spool */
        size_t nsp = 0;
        for (size_t i = 0; i < p->n; i++) {
            if (!unreached(rc[i]))
                continue;
            struct mdci_spool_rec sr = {
                .kind = stale ? MDCI_SP_DBT_STALE : MDCI_SP_DBT,
                .ttl = ttl, .tkey = tkey, .count = (uint32_t)ntvals};
            uint8_t stackd[256], *d = stackd;
            if (4 * ntvals > sizeof(stackd) &&
                (d = malloc(4 * ntvals)) == NULL) {
                p->st.spool_errors++;
                continue;
            }
            for (size_t k = 0; k < ntvals; k++) {
                uint32_t v = (uint32_t)tvals[k];
                d[4 * k] = (uint8_t)v;
                d[4 * k + 1] = (uint8_t)(v >> 8);
                d[4 * k + 2] = (uint8_t)(v >> 16);
                d[4 * k + 3] = (uint8_t)(v >> 24);
            }
            sr.data = d;
            ident_for(p->servers[i], &sn[i], rc[i], &sr);
            spool_add(p, i, &sr);
            if (d != stackd)
                free(d);
            nsp++;
        }
        if (nsp > 0) {
            size_t pos = strlen(p->errstr);
            snprintf(p->errstr + pos, POOL_ERRLEN - pos,
                     "; %zu spooled for replay", nsp);
        }
    }
out:
    if (deleted != NULL)
        *deleted = total;
    if (sn != stack_sn)
        free(sn);
    if (rc != stack_rc)
        free(rc);
    return ret;
}

int mdc_pool_del_by_tag(mdc_pool_t *p, int32_t tkey, const int32_t *tvals,
                        size_t ntvals, uint64_t *deleted, int *server_rc)
{
    return pool_dbt(p, tkey, tvals, ntvals, false, 0, deleted, server_rc);
}

int mdc_pool_del_by_tag_stale(mdc_pool_t *p, int32_t tkey,
                              const int32_t *tvals, size_t ntvals, int64_t ttl,
                              uint64_t *marked, int *server_rc)
{
    return pool_dbt(p, tkey, tvals, ntvals, true, ttl, marked, server_rc);
}

int mdc_pool_flush(mdc_pool_t *p, int *server_rc)
{
    struct mdci_req r = {.kind = MDCI_REQ_SIMPLE, .op = WIRE_OP_FLUSH};
    int stack_rc[16], *rc, ret;

    if (p == NULL)
        return MDC_ERR_ARG;
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    ret = fan_out(p, &r, rc, server_rc, "flush", ok_only, NULL, NULL, NULL);
    if (rc != stack_rc)
        free(rc);
    return ret;
}

int mdc_pool_mget(mdc_pool_t *p, size_t n, const void *const *keys,
                  const size_t *klens, struct mdc_item **out, int *server_rc)
{
    int stack_rc[16];
    int *rc = NULL;
    size_t *map = NULL, *start = NULL;
    struct mdci_mget *c = NULL;
    int ret;

    if (p == NULL)
        return MDC_ERR_ARG;
    if (out == NULL || (n > 0 && (keys == NULL || klens == NULL)))
        return pool_seterr(p, MDC_ERR_ARG, "bad arguments");
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (p->n == 0)
        return pool_seterr(p, MDC_ERR_NO_SERVERS, "pool has no servers");
    if ((rc = rc_array(p, stack_rc, 16)) == NULL)
        return MDC_ERR_NOMEM;
    spool_before_all(p);
    map = malloc((n ? n : 1) * sizeof(*map));
    start = calloc(p->n + 1, sizeof(*start));
    c = calloc(p->n, sizeof(*c));
    if (map == NULL || start == NULL || c == NULL) {
        ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
        goto out;
    }
    /* Group key indexes by server (counting sort keeps request order). */
    for (size_t i = 0; i < n; i++) {
        if (klens[i] == 0 || klens[i] > WIRE_MAX_KEY) {
            ret = pool_seterr(p, MDC_KEY_INVALID, "key %zu: length %zu", i,
                              klens[i]);
            goto out;
        }
        start[mdc_pool_index(p, keys[i], klens[i]) + 1]++;
    }
    for (size_t s = 0; s < p->n; s++)
        start[s + 1] += start[s];
    {
        size_t *fill = calloc(p->n, sizeof(*fill));
        if (fill == NULL) {
            ret = pool_seterr(p, MDC_ERR_NOMEM, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            size_t s = (size_t)mdc_pool_index(p, keys[i], klens[i]);
            map[start[s] + fill[s]++] = i;
        }
        free(fill);
    }
    for (size_t s = 0; s < p->n; s++) {
        rc[s] = MDC_OK;
        c[s].n = start[s + 1] - start[s];
        if (c[s].n == 0)
            continue;
        c[s].map = map + start[s];
        c[s].keys = keys;
        c[s].klens = klens;
        c[s].out = out;
        rc[s] = mdci_mget_begin(p->servers[s], &c[s]);
    }
    {
        /* only servers with keys take part */
        int stack_part[16] = {0};
        int *part = rc_array(p, stack_part, 16);
        if (part == NULL) {
            ret = MDC_ERR_NOMEM;
            goto out;
        }
        for (size_t s = 0; s < p->n; s++)
            part[s] = (c[s].n > 0) ? rc[s] : 1;
        run_all(p, part, MDC_PATH_TCP, NULL);
        if (part != stack_part)
            free(part);
    }
    for (size_t s = 0; s < p->n; s++) {
        if (c[s].n > 0 && rc[s] == MDC_OK)
            rc[s] = mdci_mget_finish(p->servers[s], &c[s]);
        if (rc[s] < 0) /* a failed server's keys read as misses */
            for (size_t j = 0; j < c[s].n; j++) {
                mdc_item_free(out[c[s].map[j]]);
                out[c[s].map[j]] = NULL;
            }
    }
    ret = gather(p, rc, server_rc, "mget", ok_only);
out:
    free(map);
    free(start);
    free(c);
    if (rc != stack_rc)
        free(rc);
    return ret;
}

/* ---- the background replayer ---------------------------------------------- */

static int find_label(struct mdc_pool *p, const char *label, size_t len)
{
    for (size_t i = 0; i < p->n; i++)
        if (strlen(p->servers[i]->label) == len &&
            memcmp(p->servers[i]->label, label, len) == 0)
            return (int)i;
    return -1;
}

/* Replay one spool file completely. */
static int replay_file(struct mdc_pool *p, const char *dir, const char *name,
                       struct mdc_spool_result *res)
{
    struct mdci_spool s;
    char (*labels)[MDCI_SPOOL_MAX_NAME + 1] = NULL;
    size_t nl = 0;
    int ret = MDC_OK;

    if (mdci_spool_open(&s, dir, name, 0) < 0 ||
        mdci_spool_lock(&s, false) < 0) {
        pool_seterr(p, MDC_ERR_IO, "%s", s.err);
        mdci_spool_close(&s);
        return MDC_ERR_IO;
    }
    if (mdci_spool_scan(&s) < 0) {
        pool_seterr(p, MDC_ERR_IO, "%s", s.err);
        mdci_spool_close(&s);
        return MDC_ERR_IO;
    }
    if (s.damaged > 0) /* reported; the replay below counts them */
        fprintf(stderr, "%s\n", s.err);
    labels = calloc(s.nrecs ? s.nrecs : 1, sizeof(*labels));
    for (size_t k = 0; labels != NULL && k < s.nrecs; k++) {
        const struct mdci_spool_rec *r = &s.recs[k];
        size_t j;
        if (!r->pending)
            continue;
        for (j = 0; j < nl; j++)
            if (strlen(labels[j]) == r->slen &&
                memcmp(labels[j], r->server, r->slen) == 0)
                break;
        if (j == nl) {
            memcpy(labels[nl], r->server, r->slen);
            labels[nl++][r->slen] = '\0';
        }
    }
    mdci_spool_unlock(&s);
    res->files++;
    for (size_t j = 0; j < nl; j++) {
        int i = find_label(p, labels[j], strlen(labels[j]));
        if (i < 0) {
            const char *spec = labels[j];
            if (strncmp(spec, "unix:", 5) == 0)
                spec += 5;
            i = mdc_pool_add(p, spec, 1);
        }
        if (i < 0) {
            ret = MDC_ERR_PARTIAL;
            continue;
        }
        p->servers[i]->down_until = 0;
        uint64_t before = res->damaged;
        res->left += spool_replay_server(p, &s, (size_t)i, NULL, 0, res);
        res->damaged = before; /* counted once per file, below */
    }
    res->damaged += s.damaged;
    free(labels);
    mdci_spool_close(&s);
    return ret;
}

int mdc_pool_spool_replay(mdc_pool_t *p, const char *dir,
                          struct mdc_spool_result *res)
{
    struct mdc_spool_result dummy;
    DIR *d;
    struct dirent *e;
    int ret = MDC_OK;

    if (res == NULL)
        res = &dummy;
    memset(res, 0, sizeof(*res));
    if (p == NULL)
        return MDC_ERR_ARG;
    if (geteuid() == 0)
        return pool_seterr(p, MDC_ERR_ARG,
                           "spool replay: refusing to run as root (run it "
                           "as the user whose processes write the spool)");
    if (dir == NULL || (d = opendir(dir)) == NULL)
        return pool_seterr(p, MDC_ERR_ARG, "spool %s: %s",
                           dir ? dir : "(null)", strerror(errno));
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (e->d_name[0] == '.' || l < 7 ||
            strcmp(e->d_name + l - 6, ".spool") != 0)
            continue;
        int rc = replay_file(p, dir, e->d_name, res);
        if (rc != MDC_OK)
            ret = rc;
    }
    closedir(d);
    if (ret == MDC_OK && res->left > 0)
        ret = pool_seterr(p, MDC_ERR_PARTIAL,
                          "spool replay: %llu entries left (servers "
                          "unreachable)", (unsigned long long)res->left);
    else if (ret == MDC_OK)
        pool_seterr(p, MDC_OK, "ok");
    return ret;
}
