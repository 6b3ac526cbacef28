/*
 * watch.c - memcached's "watch" (watch.h): watchers' buffers, and the
 * thread that writes them to their sockets.
 *
 * One mutex guards the watchers and their buffers; a worker holds it to
 * copy one line into each watcher that wants it, the watch thread to take
 * a watcher in or out and to move a buffer's head after a write.  The
 * bytes between head and tail are written by the watch thread outside
 * the lock: workers only ever write past the tail.  srv->watch_mask, the
 * union of the watchers' types, is written under the mutex and read
 * relaxed by the hot path (a line missed or made while a watcher comes or
 * goes is of no consequence).
 */
#include "config.h"

#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/core/alloc.h"
#include "server/core/store.h"
#include "server/log.h"

#define WATCH_POLL_MS 50   /* how soon a new line goes out */
#define WATCH_LINE_MAX 1536

struct watcher {
    int fd;
    unsigned types;
    char *buf;            /* WATCH_BUF bytes, a ring */
    size_t head, len;     /* unsent bytes: [head, head + len) mod size */
    uint64_t skipped;     /* lines dropped since the last that fitted */
};

struct watch {
    struct server *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thr;
    bool started, stop;
    unsigned n;
    struct watcher *w[WATCH_MAX];
    uint64_t gid;         /* lines made (memcached's gid), atomic */
};

static pthread_mutex_t watch_init_mu = PTHREAD_MUTEX_INITIALIZER;

unsigned watch_parse(const char *args, size_t len)
{
    static const struct {
        const char *name;
        unsigned t;
    } types[] = {{"fetchers", WATCH_FETCHERS},
                 {"mutations", WATCH_MUTATIONS},
                 {"evictions", WATCH_EVICTIONS},
                 {"connevents", WATCH_CONNEVENTS}};
    const char *p = args, *end = args + len;
    unsigned t = 0;
    size_t i;

    if (args == NULL)
        return WATCH_FETCHERS;
    while (p < end) {
        const char *s;
        unsigned one = 0;

        while (p < end && *p == ' ')
            p++;
        if (p == end)
            break;
        for (s = p; s < end && *s != ' '; s++)
            ;
        for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if ((size_t)(s - p) == strlen(types[i].name) &&
                memcmp(p, types[i].name, (size_t)(s - p)) == 0)
                one = types[i].t;
        if (one == 0)
            return 0;
        t |= one;
        p = s;
    }
    return t != 0 ? t : WATCH_FETCHERS;
}

/* The store's eviction callback while a watcher wants evictions:
 * memcached's eviction line (key, fetch, ttl, la, clsid, size). */
static void watch_evicted(void *ctx, struct store *st, const struct record *r)
{
    struct server *srv = ctx;
    uint32_t klen = record_klen(r);
    int64_t exp = record_expiry_wall(st, r), now = (int64_t)time(NULL);
    uint64_t idle_s = ((uint64_t)record_idle_ticks(st, r) << 20) / 1000000000u;
    char k[3 * 256];
    uint32_t i, n = 0;
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *key = record_key(r);

    if (klen > 250)
        klen = 250;
    for (i = 0; i < klen; i++) { /* URL-encoded, as proto_uriencode() */
        unsigned char ch = key[i];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
            ch == '~') {
            k[n++] = (char)ch;
        } else {
            k[n++] = '%';
            k[n++] = hex[ch >> 4];
            k[n++] = hex[ch & 15];
        }
    }
    k[n] = '\0';
    watch_log(srv, WATCH_EVICTIONS,
              "type=eviction key=%s fetch=%s ttl=%lld la=%lld clsid=1 "
              "size=%u",
              k, record_fetched(r) ? "yes" : "no",
              (long long)(exp == 0 ? -1 : exp - now), (long long)idle_s,
              record_vlen(r));
}

/* Under mu: the union of the watchers' types, for the hot path; the
 * store tells of evictions only while a watcher wants them. */
static void watch_set_mask(struct server *srv, struct watch *wt)
{
    unsigned m = 0, i;

    for (i = 0; i < wt->n; i++)
        m |= wt->w[i]->types;
    if ((m ^ __atomic_load_n(&srv->watch_mask, __ATOMIC_RELAXED)) &
            WATCH_EVICTIONS &&
        srv->store != NULL)
        store_set_evict_log(srv->store,
                            (m & WATCH_EVICTIONS) ? watch_evicted : NULL, srv);
    __atomic_store_n(&srv->watch_mask, m, __ATOMIC_RELAXED);
    __atomic_store_n(&srv->watchers, wt->n, __ATOMIC_RELAXED);
}

static void watcher_free(struct watcher *w)
{
    close(w->fd);
    mdc_free(w->buf);
    mdc_free(w);
}

/* Under mu: drop watcher i. */
static void watch_drop(struct server *srv, struct watch *wt, unsigned i)
{
    struct watcher *w = wt->w[i];

    wt->w[i] = wt->w[--wt->n];
    watch_set_mask(srv, wt);
    log_debug("watch: a watcher went (%u left)", wt->n);
    watcher_free(w);
}

/* Append n bytes at w's tail (the caller checked the room). */
static void ring_put(struct watcher *w, const char *p, size_t n)
{
    size_t tail = (w->head + w->len) % WATCH_BUF;
    size_t first = WATCH_BUF - tail < n ? WATCH_BUF - tail : n;

    memcpy(w->buf + tail, p, first);
    memcpy(w->buf, p + first, n - first);
    w->len += n;
}

void watch_log(struct server *srv, unsigned t, const char *fmt, ...)
{
    struct watch *wt = __atomic_load_n(&srv->watch, __ATOMIC_ACQUIRE);
    char line[WATCH_LINE_MAX];
    struct timeval tv;
    va_list ap;
    int n, m;
    unsigned i;

    if (wt == NULL)
        return;
    gettimeofday(&tv, NULL);
    n = snprintf(line, sizeof(line), "ts=%lld.%06ld gid=%" PRIu64 " ",
                 (long long)tv.tv_sec, (long)tv.tv_usec,
                 __atomic_add_fetch(&wt->gid, 1, __ATOMIC_RELAXED));
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0 || (size_t)(n + m) >= sizeof(line) - 1)
        return; /* cannot be longer: a key is URL-encoded in 750 bytes */
    n += m;
    line[n++] = '\n';
    pthread_mutex_lock(&wt->mu);
    for (i = 0; i < wt->n; i++) {
        struct watcher *w = wt->w[i];
        char sk[40];
        int skn = 0;

        if (!(w->types & t))
            continue;
        if (w->skipped > 0)
            skn = snprintf(sk, sizeof(sk), "skipped=%" PRIu64 "\n",
                           w->skipped);
        if (w->len + (size_t)skn + (size_t)n > WATCH_BUF) {
            w->skipped++; /* the watcher is behind: never wait for it */
            __atomic_add_fetch(&srv->watch_skipped, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (skn > 0) {
            ring_put(w, sk, (size_t)skn);
            w->skipped = 0;
        }
        ring_put(w, line, (size_t)n);
    }
    pthread_mutex_unlock(&wt->mu);
}

/*
 * The watch thread: poll the watchers' sockets for the hang-up (what they
 * send is read and dropped) and, while a buffer holds lines, for room;
 * write what each buffer holds, as much as its socket takes.  It sleeps on
 * the condition variable while there is no watcher.
 */
static void *watch_main(void *arg)
{
    struct watch *wt = arg;
    struct server *srv = wt->srv;

    pthread_mutex_lock(&wt->mu);
    while (!wt->stop) {
        struct pollfd pf[WATCH_MAX];
        unsigned i, n;

        if (wt->n == 0) {
            pthread_cond_wait(&wt->cv, &wt->mu);
            continue;
        }
        n = wt->n;
        for (i = 0; i < n; i++) {
            pf[i].fd = wt->w[i]->fd;
            pf[i].events = POLLIN | (wt->w[i]->len > 0 ? POLLOUT : 0);
            pf[i].revents = 0;
        }
        pthread_mutex_unlock(&wt->mu);
        (void)poll(pf, n, WATCH_POLL_MS);
        pthread_mutex_lock(&wt->mu);
        /* only this thread removes watchers: w[0..n) are the same, and
         * those added meanwhile come after them */
        for (i = n; i-- > 0;) {
            struct watcher *w = wt->w[i];
            bool gone = (pf[i].revents & (POLLERR | POLLNVAL)) != 0;

            if (pf[i].revents & (POLLIN | POLLHUP)) {
                char junk[512];
                ssize_t k = recv(w->fd, junk, sizeof(junk), MSG_DONTWAIT);

                if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                    gone = true;
            }
            while (!gone && w->len > 0) {
                size_t chunk = WATCH_BUF - w->head < w->len
                                   ? WATCH_BUF - w->head
                                   : w->len;
                ssize_t k;

                /* [head, head + chunk) is not written by the workers */
                pthread_mutex_unlock(&wt->mu);
                k = send(w->fd, w->buf + w->head, chunk,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
                pthread_mutex_lock(&wt->mu);
                if (k < 0) {
                    if (errno != EAGAIN && errno != EWOULDBLOCK &&
                        errno != EINTR)
                        gone = true;
                    break;
                }
                w->head = (w->head + (size_t)k) % WATCH_BUF;
                w->len -= (size_t)k;
                if ((size_t)k < chunk)
                    break;
            }
            if (gone)
                watch_drop(srv, wt, i);
        }
    }
    pthread_mutex_unlock(&wt->mu);
    return NULL;
}

/* The watch state and its thread, made at the first watcher. */
static struct watch *watch_get(struct server *srv)
{
    struct watch *wt;

    pthread_mutex_lock(&watch_init_mu);
    wt = srv->watch;
    if (wt == NULL) {
        wt = mdc_calloc(1, sizeof(*wt));
        if (wt != NULL) {
            wt->srv = srv;
            pthread_mutex_init(&wt->mu, NULL);
            pthread_cond_init(&wt->cv, NULL);
            if (pthread_create(&wt->thr, NULL, watch_main, wt) != 0) {
                pthread_cond_destroy(&wt->cv);
                pthread_mutex_destroy(&wt->mu);
                mdc_free(wt);
                wt = NULL;
            } else {
                wt->started = true;
                __atomic_store_n(&srv->watch, wt, __ATOMIC_RELEASE);
            }
        }
    }
    pthread_mutex_unlock(&watch_init_mu);
    return wt;
}

int watch_adopt(struct server *srv, int fd, unsigned types)
{
    struct watch *wt = watch_get(srv);
    struct watcher *w;

    if (wt == NULL)
        goto fail;
    w = mdc_calloc(1, sizeof(*w));
    if (w == NULL)
        goto fail;
    w->buf = mdc_malloc(WATCH_BUF);
    if (w->buf == NULL) {
        mdc_free(w);
        goto fail;
    }
    w->fd = fd;
    w->types = types;
    pthread_mutex_lock(&wt->mu);
    if (wt->n == WATCH_MAX || wt->stop) {
        pthread_mutex_unlock(&wt->mu);
        mdc_free(w->buf);
        mdc_free(w);
        goto fail;
    }
    wt->w[wt->n++] = w;
    watch_set_mask(srv, wt);
    pthread_cond_signal(&wt->cv);
    pthread_mutex_unlock(&wt->mu);
    log_debug("watch: a watcher of types %#x (%u in all)", types, wt->n);
    return 0;
fail:
    close(fd);
    return -1;
}

void watch_teardown(struct server *srv)
{
    struct watch *wt = srv->watch;

    if (wt == NULL)
        return;
    pthread_mutex_lock(&wt->mu);
    wt->stop = true;
    pthread_cond_signal(&wt->cv);
    pthread_mutex_unlock(&wt->mu);
    if (wt->started)
        pthread_join(wt->thr, NULL);
    if (srv->store != NULL)
        store_set_evict_log(srv->store, NULL, NULL);
    __atomic_store_n(&srv->watch_mask, 0, __ATOMIC_RELAXED);
    while (wt->n > 0)
        watcher_free(wt->w[--wt->n]);
    srv->watch = NULL;
    pthread_cond_destroy(&wt->cv);
    pthread_mutex_destroy(&wt->mu);
    mdc_free(wt);
}
