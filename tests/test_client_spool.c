/*
 * test_client_spool.c - libmdcached's spool of undelivered invalidations
 * (client-c/spool.c, pool.c; docs/client-c.md, "Invalidations that survive
 * absence"): the file format (records read back, DONE records, a truncated
 * or corrupt record skipped with a clear message and the rest read), the
 * safe opening (a link or another user's file refused, mode 0600), flock
 * between two processes, the full-spool policy (a flush mark, replayed as
 * a flush), a stale delete spooled and replayed as a stale delete, the
 * replay bounded per call (a server's first entry replayed whatever the
 * time), entries of a server that started
 * empty dropped by its data generation, and the replayer refusing root.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mdcached.h"
#include "server_client.h"
#include "spool.h"

static char dir[] = "/tmp/mdc-spool-XXXXXX";

static void rm_dir(void)
{
    char c[128];
    snprintf(c, sizeof(c), "rm -rf '%s'/* '%s'/.[!.]*", dir, dir);
    if (system(c) != 0) {
        /* nothing there */
    }
}

static struct mdci_spool_rec dbt(const char *server, int32_t tkey,
                                 const uint8_t *vals, uint32_t n)
{
    struct mdci_spool_rec r = {.kind = MDCI_SP_DBT, .tkey = tkey,
                               .count = n, .data = vals, .server = server,
                               .slen = (uint16_t)strlen(server)};
    return r;
}

static size_t pending(const struct mdci_spool *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nrecs; i++)
        n += s->recs[i].pending;
    return n;
}

/* ---- format --------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
    struct mdci_spool s;
    uint8_t v[8] = {7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}; /* 7, -1 */
    struct stat sb;
    (void)state;
    rm_dir();
    assert_int_equal(mdci_spool_open(&s, dir, "a.spool", 0), 0);
    assert_int_equal(fstat(s.fd, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    for (int i = 0; i < 10; i++) {
        struct mdci_spool_rec r = dbt(i % 2 ? "h:1" : "h:2", i, v, 2);
        r.generation = 42;
        assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    }
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 10);
    assert_int_equal(s.damaged, 0);
    assert_int_equal(pending(&s), 10);
    assert_int_equal(s.recs[3].tkey, 3);
    assert_int_equal(s.recs[3].generation, 42);
    assert_int_equal(s.recs[3].count, 2);
    assert_memory_equal(s.recs[3].data, v, 8);
    /* h:1's entries before the 6th record are done */
    struct mdci_spool_rec d = {.kind = MDCI_SP_DONE, .server = "h:1",
                               .slen = 3, .upto = s.recs[5].off + 1};
    assert_int_equal(mdci_spool_append(&s, &d, true), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(pending(&s), 10 - 3); /* records 1, 3, 5 */
    assert_false(s.recs[5].pending);
    assert_true(s.recs[7].pending);
    /* compaction keeps the pending ones, next epoch */
    uint64_t ep = s.epoch;
    assert_int_equal(mdci_spool_compact(&s), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 7);
    assert_int_equal(pending(&s), 7);
    assert_int_equal(s.epoch, ep + 1);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
}

/* A record cut short at the end (a crash while appending) and a flipped
 * byte in the middle: each skipped with a message naming its offset, the
 * records around them read. */
static void test_damage(void **state)
{
    struct mdci_spool s;
    uint8_t v[4] = {1, 0, 0, 0};
    (void)state;
    rm_dir();
    assert_int_equal(mdci_spool_open(&s, dir, "b.spool", 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    for (int i = 0; i < 5; i++) {
        struct mdci_spool_rec r = dbt("h:1", i, v, 1);
        assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    }
    assert_int_equal(mdci_spool_scan(&s), 0);
    uint64_t off2 = s.recs[2].off, size = mdci_spool_size(&s);
    /* flip a byte of record 2's body */
    uint8_t c;
    assert_int_equal(pread(s.fd, &c, 1, (off_t)off2 + 20), 1);
    c ^= 0x40;
    assert_int_equal(pwrite(s.fd, &c, 1, (off_t)off2 + 20), 1);
    /* cut the last record short */
    assert_int_equal(ftruncate(s.fd, (off_t)size - 5), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 3); /* 0, 1, 3 */
    assert_int_equal(s.recs[2].tkey, 3);
    assert_int_equal(s.damaged, 2);
    printf("# %s\n", s.err);
    char want[64];
    snprintf(want, sizeof(want), "offset %llu: checksum mismatch",
             (unsigned long long)off2);
    assert_non_null(strstr(s.err, want));
    /* an append after the torn end is found (the resync) */
    struct mdci_spool_rec r = dbt("h:1", 99, v, 1);
    assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 4);
    assert_int_equal(s.recs[3].tkey, 99);
    /* garbage only: everything skipped, no crash */
    uint8_t junk[300];
    memset(junk, 'S', sizeof(junk));
    assert_int_equal(pwrite(s.fd, junk, sizeof(junk),
                            (off_t)mdci_spool_size(&s)),
                     (ssize_t)sizeof(junk));
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 4);
    assert_true(s.damaged >= 3);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
}

static void test_safe_open(void **state)
{
    struct mdci_spool s;
    char p[256], target[256];
    (void)state;
    rm_dir();
    snprintf(p, sizeof(p), "%s/l.spool", dir);
    snprintf(target, sizeof(target), "%s/target", dir);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(mdci_spool_open(&s, dir, "l.spool", 0), -1);
    printf("# %s\n", s.err);
    assert_non_null(strstr(s.err, "symbolic link"));
    assert_int_not_equal(access(target, F_OK), 0); /* nothing created */
    mdci_spool_close(&s);
    /* a hard link to another file */
    int fd = open(target, O_CREAT | O_WRONLY, 0600);
    close(fd);
    snprintf(p, sizeof(p), "%s/h.spool", dir);
    assert_int_equal(link(target, p), 0);
    assert_int_equal(mdci_spool_open(&s, dir, "h.spool", 0), -1);
    assert_non_null(strstr(s.err, "links"));
    mdci_spool_close(&s);
    if (geteuid() == 0) { /* another user's file */
        snprintf(p, sizeof(p), "%s/o.spool", dir);
        fd = open(p, O_CREAT | O_WRONLY, 0600);
        assert_int_equal(fchown(fd, 65534, 65534), 0);
        close(fd);
        assert_int_equal(mdci_spool_open(&s, dir, "o.spool", 0), -1);
        assert_non_null(strstr(s.err, "owned by uid 65534"));
        mdci_spool_close(&s);
    }
}

/* Two processes: the lock excludes, and 2 x 300 appends all land whole. */
static void test_flock(void **state)
{
    struct mdci_spool s;
    int pfd[2];
    char b;
    uint8_t v[4] = {1, 0, 0, 0};
    (void)state;
    rm_dir();
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        struct mdci_spool c;
        if (mdci_spool_open(&c, dir, "f.spool", 0) < 0 ||
            mdci_spool_lock(&c, false) < 0)
            _exit(1);
        if (write(pfd[1], "L", 1) != 1)
            _exit(1);
        usleep(300 * 1000); /* held */
        mdci_spool_unlock(&c);
        for (int i = 0; i < 300; i++) {
            struct mdci_spool_rec r = dbt("child:1", i, v, 1);
            if (mdci_spool_lock(&c, false) < 0 ||
                mdci_spool_append(&c, &r, false) != 0)
                _exit(1);
            mdci_spool_unlock(&c);
        }
        mdci_spool_close(&c);
        _exit(0);
    }
    assert_int_equal(read(pfd[0], &b, 1), 1);
    assert_int_equal(mdci_spool_open(&s, dir, "f.spool", 0), 0);
    assert_int_equal(mdci_spool_lock(&s, true), -1);
    assert_int_equal(errno, EWOULDBLOCK);
    for (int i = 0; i < 300; i++) {
        struct mdci_spool_rec r = dbt("parent:1", i, v, 1);
        assert_int_equal(mdci_spool_lock(&s, false), 0);
        assert_int_equal(mdci_spool_append(&s, &r, false), 0);
        mdci_spool_unlock(&s);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 600);
    assert_int_equal(s.damaged, 0);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
}

/* ---- with a server ---------------------------------------------------------- */

static struct tsrv srv;

static int srv_up(void **state)
{
    static const char *const args[] = {"-m", "8", NULL};
    (void)state;
    return tsrv_start(&srv, args) == 0 ? 0 : -1;
}

static int srv_down(void **state)
{
    (void)state;
    if (srv.pid > 0)
        kill(srv.pid, SIGCONT); /* a failed test may leave it stopped */
    tsrv_stop(&srv);
    return 0;
}

static mdc_pool_t *pool_on(void)
{
    char spec[160];
    mdc_pool_t *p = mdc_pool_create();
    kill(srv.pid, SIGCONT); /* an earlier test that failed stopped it */
    snprintf(spec, sizeof(spec), "%s:%d", srv.host, srv.port);
    assert_true(mdc_pool_add(p, spec, 1) >= 0);
    assert_int_equal(mdc_pool_set_spool_dir(p, dir), MDC_OK);
    /* a hang's ceiling, not the library's 5 s (a test that wants a
     * timeout sets its own) */
    mdc_pool_set_timeouts(p, TC_HANG_MS, TC_HANG_MS);
    return p;
}

static void set_tagged(mdc_t *m, const char *key, int32_t tval)
{
    struct mdc_tag t = {5, tval};
    assert_int_equal(mdc_set(m, key, strlen(key), "v", 1, 0, 0, &t, 1),
                     MDC_OK);
}

/*
 * The server stops answering (SIGSTOP): the deletes are spooled, the file
 * bounded at 4 KiB turns into a flush mark; once the server answers again
 * the next call replays the flush before its own request.
 */
static void test_full_flush(void **state)
{
    struct mdc_pool_stats st;
    struct mdc_item *it = NULL;
    (void)state;
    rm_dir();
    mdc_pool_t *p = pool_on();
    mdc_t *m = mdc_pool_server(p, 0);
    mdc_pool_set_retry_delay(p, 3000); /* the 199 others fail at once */
    /* a replay bound of 1 ms, shorter than the identity round trip made
     * below: the call must still replay one entry (the flush) */
    assert_int_equal(mdc_pool_set_spool_limits(p, 4096, 0, 1), MDC_OK);
    assert_int_equal(mdc_set(m, "untagged", 8, "x", 1, 0, 0, NULL, 0),
                     MDC_OK);
    /* 100 ms only once the server is stopped: a set that a busy machine
     * answered later than that timed out here */
    mdc_pool_set_timeouts(p, 1000, 100);
    tsrv_stop_fully(srv.pid); /* every thread: none serves the next */
    struct timespec t0, t1;
    for (int i = 0; i < 200; i++) {
        int32_t v = i;
        int rc = mdc_pool_del_by_tag(p, 5, &v, 1, NULL, NULL);
        if (rc >= 0)
            printf("# del_by_tag %d: %d %s\n", i, rc, mdc_pool_errstr(p));
        assert_true(rc < 0); /* timed out, then marked down */
    }
    /* the last mark down was before now: the retry delay counts from
     * here (from before the loop, a busy machine's loop that took over
     * 3 s retried the stopped server, and the get below came within the
     * delay of that second mark) */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_non_null(strstr(mdc_pool_errstr(p), "spooled for replay"));
    assert_int_equal(kill(srv.pid, SIGCONT), 0);
    /* the server is back: from here only a hang may time out (with 100 ms,
     * a loaded machine's replay of the flush timed out and the get after
     * it was served the record) */
    mdc_pool_set_timeouts(p, TC_HANG_MS, TC_HANG_MS);
    mdc_pool_get_stats(p, &st);
    printf("# spooled %llu flush marks %llu covered %llu errors %llu\n",
           (unsigned long long)st.spooled,
           (unsigned long long)st.spool_flush_marks,
           (unsigned long long)st.spool_covered,
           (unsigned long long)st.spool_errors);
    assert_int_equal(st.spool_flush_marks, 1);
    assert_int_equal(st.spooled + st.spool_covered + 1, 200);
    assert_int_equal(st.spool_errors, 0);
    { /* bounded: the limit, plus at most the flush mark */
        char label[160], name[64], path[300];
        const char *names[1] = {label};
        struct stat sb;
        snprintf(label, sizeof(label), "%s:%d", srv.host, srv.port);
        mdci_spool_name(name, sizeof(name), names, 1);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_int_equal(stat(path, &sb), 0);
        printf("# spool file: %lld bytes\n", (long long)sb.st_size);
        assert_true(sb.st_size <= 4096 + 128);
    }
    /* back: the next call (a get) replays the flush first, once past
     * the retry delay */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long el = (t1.tv_sec - t0.tv_sec) * 1000 +
              (t1.tv_nsec - t0.tv_nsec) / 1000000;
    if (el < 3300)
        usleep((useconds_t)(3300 - el) * 1000);
    /* the server answers the replay's identity question 200 ms late (it
     * is stopped until a child wakes it), past the 1 ms replay bound */
    tsrv_stop_fully(srv.pid);
    pid_t waker = fork();
    assert_true(waker >= 0);
    if (waker == 0) {
        usleep(200 * 1000);
        kill(srv.pid, SIGCONT);
        _exit(0);
    }
    assert_int_equal(mdc_pool_get(p, "untagged", 8, &it), MDC_NOT_FOUND);
    assert_int_equal(waitpid(waker, NULL, 0), waker);
    mdc_pool_get_stats(p, &st);
    assert_int_equal(st.replayed, 1); /* the flush covered the rest */
    mdc_pool_destroy(p);
}

/*
 * A stale delete of a key whose server is down is spooled as a stale
 * delete and replayed as one: the record is marked stale (still readable,
 * the next lease wins), not left fresh, nor removed.  The server is first
 * marked down by a get that times out while it is stopped, so the delete
 * itself never reaches it: only the replay can mark the record.
 */
static void test_delete_stale_spooled(void **state)
{
    struct mdc_pool_stats st;
    struct mdc_item *it = NULL;
    struct mdci_spool s;
    char label[160], name[64];
    const char *names[1] = {label};
    (void)state;
    rm_dir();
    mdc_pool_t *p = pool_on();
    snprintf(label, sizeof(label), "%s:%d", srv.host, srv.port);
    mdc_t *m = mdc_create(label); /* a handle of its own, never down */
    mdc_set_timeouts(m, TC_HANG_MS, TC_HANG_MS); /* not the library's 5 s */
    mdc_pool_set_timeouts(p, 1000, 100);
    /* 3 s, not a fraction of one: the delete below must find the mark
     * still there however long a busy machine takes between the two */
    mdc_pool_set_retry_delay(p, 3000);
    assert_int_equal(mdc_set(m, "sd1", 3, "v", 1, 0, 0, NULL, 0),
                     MDC_OK);
    tsrv_stop_fully(srv.pid); /* every thread: none serves the next */
    assert_true(mdc_pool_get(p, "sd1", 3, &it) < 0); /* timed out: down */
    int rc = mdc_pool_delete_stale(p, "sd1", 3, 0, 0);
    assert_int_equal(rc, MDC_ERR_DOWN);
    mdc_pool_get_stats(p, &st);
    assert_int_equal(st.spooled, 1);
    assert_int_equal(st.spool_errors, 0);
    /* in the file as a stale delete of that key */
    mdci_spool_name(name, sizeof(name), names, 1);
    assert_int_equal(mdci_spool_open(&s, dir, name, 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    assert_int_equal(mdci_spool_scan(&s), 0);
    assert_int_equal(s.nrecs, 1);
    assert_int_equal(s.recs[0].kind, MDCI_SP_DEL_STALE);
    assert_int_equal(s.recs[0].count, 3);
    assert_memory_equal(s.recs[0].data, "sd1", 3);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
    assert_int_equal(kill(srv.pid, SIGCONT), 0);
    mdc_pool_set_timeouts(p, TC_HANG_MS, TC_HANG_MS); /* back: no 100 ms */
    /* the server never saw the delete: still fresh */
    assert_int_equal(mdc_lease_get(m, "sd1", 3, 0, 0, &it), MDC_OK);
    assert_int_equal(it->state & MDC_ITEM_STALE, 0);
    mdc_item_free(it);
    /* past the retry delay, the pool's next call on that server replays
     * the entry first (30 s: a ceiling only a hang crosses) */
    for (int i = 0; i < 600; i++) {
        usleep(50 * 1000);
        rc = mdc_pool_get(p, "other", 5, &it);
        if (rc == MDC_OK)
            mdc_item_free(it);
        mdc_pool_get_stats(p, &st);
        if (st.replayed > 0)
            break;
    }
    assert_int_equal(st.replayed, 1);
    assert_int_equal(st.dropped, 0);
    /* marked stale, not removed: the next lease reads it and wins */
    assert_int_equal(mdc_lease_get(m, "sd1", 3, 0, 0, &it), MDC_OK);
    assert_true(it->state & MDC_ITEM_STALE);
    assert_true(it->state & MDC_ITEM_WIN);
    assert_memory_equal(it->value, "v", 1);
    mdc_item_free(it);
    mdc_destroy(m);
    mdc_pool_destroy(p);
}

/* 250 entries; one call replays 100 (the per-call bound), the next ones
 * the rest; the records of those tags are gone once replayed. */
/*
 * The per-call time bound never stops a server's first entry: with a bound
 * of 1 ms and the server's answer to the identity query held back 100 ms
 * (stopped; a child continues it), the next call still replays the first
 * entry before its own request.  The bound was checked before the first
 * entry, after the query: the call replayed nothing and the get found the
 * record the entry was to invalidate, as a busy machine did with the
 * default 10 ms (client-php's spool.phpt under tools/busy-load.sh).
 */
static void test_first_entry_beyond_deadline(void **state)
{
    struct mdc_pool_stats st;
    struct mdci_spool s;
    struct mdc_item *it = NULL;
    char name[64], label[160];
    const char *names[1];
    uint8_t v[4];
    int32_t t = 2000;
    pid_t child;
    int status, rc;
    (void)state;
    rm_dir();
    mdc_pool_t *p = pool_on();
    mdc_t *m = mdc_pool_server(p, 0);
    assert_int_equal(mdc_pool_set_spool_limits(p, 0, 0, 1), MDC_OK);
    snprintf(label, sizeof(label), "%s:%d", srv.host, srv.port);
    names[0] = label;
    mdci_spool_name(name, sizeof(name), names, 1);
    set_tagged(m, "f1", t);
    assert_int_equal(mdci_spool_open(&s, dir, name, 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    memcpy(v, &t, 4); /* little endian machine */
    struct mdci_spool_rec r = dbt(label, 5, v, 1);
    assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
    tsrv_stop_fully(srv.pid);
    child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        usleep(100 * 1000);
        kill(srv.pid, SIGCONT);
        _exit(0);
    }
    rc = mdc_pool_get(p, "f1", 2, &it);
    assert_int_equal(waitpid(child, &status, 0), child);
    mdc_pool_get_stats(p, &st);
    printf("# get: %d (%s), replayed %llu\n", rc, mdc_pool_errstr(p),
           (unsigned long long)st.replayed);
    if (rc == MDC_OK)
        mdc_item_free(it);
    assert_int_equal(st.replayed, 1);
    assert_int_equal(rc, MDC_NOT_FOUND);
    mdc_pool_destroy(p);
}

static void test_bounded_replay(void **state)
{
    struct mdc_pool_stats st;
    struct mdci_spool s;
    char name[64], label[160];
    const char *names[1];
    uint8_t v[4];
    (void)state;
    rm_dir();
    mdc_pool_t *p = pool_on();
    mdc_t *m = mdc_pool_server(p, 0);
    mdc_pool_set_spool_limits(p, 0, 0, 60000); /* 100 entries, no time */
    snprintf(label, sizeof(label), "%s:%d", srv.host, srv.port);
    names[0] = label;
    mdci_spool_name(name, sizeof(name), names, 1);
    assert_int_equal(mdci_spool_open(&s, dir, name, 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    for (int i = 0; i < 250; i++) {
        char key[32];
        snprintf(key, sizeof(key), "b%d", i);
        set_tagged(m, key, 1000 + i);
        int32_t t = 1000 + i;
        memcpy(v, &t, 4); /* little endian machine */
        struct mdci_spool_rec r = dbt(label, 5, v, 1);
        assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    }
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
    struct mdc_item *it = NULL;
    assert_int_equal(mdc_pool_get(p, "nokey", 5, &it), MDC_NOT_FOUND);
    mdc_pool_get_stats(p, &st);
    assert_int_equal(st.replayed, 100);
    assert_int_equal(mdc_get(m, "b99", 3, &it), MDC_NOT_FOUND);
    assert_int_equal(mdc_get(m, "b100", 4, &it), MDC_OK);
    mdc_item_free(it);
    usleep(120 * 1000); /* the pool looks at the file every 100 ms */
    assert_int_equal(mdc_pool_get(p, "nokey", 5, &it), MDC_NOT_FOUND);
    usleep(120 * 1000);
    assert_int_equal(mdc_pool_get(p, "nokey", 5, &it), MDC_NOT_FOUND);
    mdc_pool_get_stats(p, &st);
    assert_int_equal(st.replayed, 250);
    assert_int_equal(mdc_get(m, "b249", 4, &it), MDC_NOT_FOUND);
    /* all done: the file is back to its header */
    assert_int_equal(mdci_spool_open(&s, dir, name, 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    assert_int_equal(mdci_spool_size(&s), MDCI_SPOOL_HDR);
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
    mdc_pool_destroy(p);
}

/* An entry written when the server had another data generation (it has
 * started empty since) is dropped; one of its generation, or of an unknown
 * one (0), is replayed.  Then the replayer: refused as root, else it
 * finds nothing left. */
static void test_generation_and_root(void **state)
{
    struct mdci_spool s;
    struct mdc_spool_result res;
    char label[160], *text = NULL;
    size_t tlen;
    uint64_t boot = 0, gen = 0;
    uint8_t v[4];
    (void)state;
    rm_dir();
    mdc_pool_t *p = mdc_pool_create();
    snprintf(label, sizeof(label), "%s:%d", srv.host, srv.port);
    mdc_t *m = mdc_create(label);
    assert_int_equal(mdc_stats(m, "identity", &text, &tlen), MDC_OK);
    assert_int_equal(mdc_stats_u64(text, "data_generation", &gen), MDC_OK);
    assert_int_equal(mdc_stats_u64(text, "boot_id", &boot), MDC_OK);
    free(text);
    assert_true(gen != 0);
    assert_int_equal(mdci_spool_open(&s, dir, "g.spool", 0), 0);
    assert_int_equal(mdci_spool_lock(&s, false), 0);
    const uint64_t gens[3] = {gen + 1, gen, 0};
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "g%d", i);
        set_tagged(m, key, 2000 + i);
        int32_t t = 2000 + i;
        memcpy(v, &t, 4);
        struct mdci_spool_rec r = dbt(label, 5, v, 1);
        r.generation = gens[i];
        r.boot_id = boot;
        assert_int_equal(mdci_spool_append(&s, &r, false), 0);
    }
    mdci_spool_unlock(&s);
    mdci_spool_close(&s);
    int rc = mdc_pool_spool_replay(p, dir, &res);
    if (geteuid() == 0) {
        assert_int_equal(rc, MDC_ERR_ARG);
        printf("# %s\n", mdc_pool_errstr(p));
        assert_non_null(strstr(mdc_pool_errstr(p), "refusing to run as root"));
        /* as the web user: the library's part, in a child */
        char c[256];
        snprintf(c, sizeof(c), "chown -R 65534:65534 '%s'", dir);
        assert_int_equal(system(c), 0);
        pid_t pid = fork();
        if (pid == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(10);
            mdc_pool_t *q = mdc_pool_create();
            int r = mdc_pool_spool_replay(q, dir, &res);
            _exit(r == MDC_OK && res.replayed == 2 && res.dropped == 1
                      ? 0
                      : 11);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    } else {
        assert_int_equal(rc, MDC_OK);
        assert_int_equal(res.replayed, 2);
        assert_int_equal(res.dropped, 1);
    }
    struct mdc_item *it = NULL;
    assert_int_equal(mdc_get(m, "g0", 2, &it), MDC_OK); /* dropped */
    mdc_item_free(it);
    assert_int_equal(mdc_get(m, "g1", 2, &it), MDC_NOT_FOUND);
    assert_int_equal(mdc_get(m, "g2", 2, &it), MDC_NOT_FOUND);
    mdc_destroy(m);
    mdc_pool_destroy(p);
}

int main(void)
{
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_damage),
        cmocka_unit_test(test_safe_open),
        cmocka_unit_test(test_flock),
    };
    const struct CMUnitTest live[] = {
        cmocka_unit_test(test_full_flush),
        cmocka_unit_test(test_delete_stale_spooled),
        cmocka_unit_test(test_bounded_replay),
        cmocka_unit_test(test_first_entry_beyond_deadline),
        cmocka_unit_test(test_generation_and_root),
    };
    int rc;
    if (mkdtemp(dir) == NULL)
        return 1;
    chmod(dir, 0755);
    rc = cmocka_run_group_tests(unit, NULL, NULL);
    rc |= cmocka_run_group_tests(live, srv_up, srv_down);
    rm_dir();
    rmdir(dir);
    return rc;
}
