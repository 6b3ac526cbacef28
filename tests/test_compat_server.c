/*
 * test_compat_server.c - memcached's operator commands against a real
 * daemon: lru_crawler metadump (memcached's line format, keys URL-encoded,
 * tags, class arguments; streamed: a reader that reads nothing stalls
 * only its own dump, while another client of the same network thread
 * stores and reads, and every record is listed once in the end) and
 * watch (memcached's log types and lines, the skipped count of a watcher
 * that does not read, both refused before login under --auth-file).
 * MDC_TEST_IO=epoll runs it on the other backend.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"

/* ---- a text client -------------------------------------------------------- */

static const char *phase = ""; /* named in a failure */

static void send_str(int fd, const char *s)
{
    assert_int_equal(tc_send_all(fd, s, strlen(s)), 0);
}

/* Read until the bytes end with tail (or the connection ends); the whole
 * reply, NUL-terminated, malloc'd. */
static char *read_until(int fd, const char *tail, size_t *lenp)
{
    size_t cap = 1 << 16, len = 0, tl = strlen(tail);
    char *b = malloc(cap);

    assert_non_null(b);
    for (;;) {
        ssize_t k;

        if (len >= tl && memcmp(b + len - tl, tail, tl) == 0)
            break;
        if (cap - len < 4096) {
            cap *= 2;
            b = realloc(b, cap);
            assert_non_null(b);
        }
        k = recv(fd, b + len, cap - len - 1, 0);
        if (k <= 0)
            fail_msg("%s: connection ended (%zd, %s) after %zu bytes, want "
                     "'%s'",
                     phase, k, strerror(errno), len, tail);
        len += (size_t)k;
    }
    b[len] = '\0';
    if (lenp != NULL)
        *lenp = len;
    return b;
}

static void xchg(int fd, const char *req, const char *want)
{
    char *r;

    send_str(fd, req);
    r = read_until(fd, "\r\n", NULL);
    assert_string_equal(r, want);
    free(r);
}

/* A stat from a text "stats" on fd. */
static long long tc_stat_text(int fd, const char *name)
{
    char *t, pat[96], *p;
    long long v;

    send_str(fd, "stats\r\n");
    t = read_until(fd, "END\r\n", NULL);
    snprintf(pat, sizeof(pat), "STAT %s ", name);
    p = strstr(t, pat);
    assert_non_null(p);
    v = atoll(p + strlen(pat));
    free(t);
    return v;
}

static int text_conn(const struct tsrv *s)
{
    int fd = tc_connect(s);

    assert_true(fd >= 0);
    tc_set_timeout_ms(fd, 30000); /* only a hang reaches it */
    return fd;
}

/* ---- lru_crawler metadump ------------------------------------------------ */

struct mline {
    char key[800];
    long long exp, la;
    unsigned long long cas;
    char fetch[4];
    unsigned cls;
    size_t size;
    char tags[128];
};

static bool parse_mline(const char *l, struct mline *m)
{
    int n = 0;

    m->tags[0] = '\0';
    if (sscanf(l, "key=%799s exp=%lld la=%lld cas=%llu fetch=%3s cls=%u "
                  "size=%zu%n",
               m->key, &m->exp, &m->la, &m->cas, m->fetch, &m->cls, &m->size,
               &n) != 7)
        return false;
    if (l[n] == ' ' && sscanf(l + n, " tags=%127s", m->tags) != 1)
        return false;
    return true;
}

/* The lines of a metadump reply (each ending "\n"), then "END\r\n". */
static int split_lines(char *r, size_t len, char ***out)
{
    int n = 0, cap = 1024;
    char **v = malloc(sizeof(*v) * (size_t)cap), *p = r;

    assert_true(len >= 5 && strcmp(r + len - 5, "END\r\n") == 0);
    r[len - 5] = '\0';
    while (*p != '\0') {
        char *nl = strchr(p, '\n');

        assert_non_null(nl);
        *nl = '\0';
        if (n == cap) {
            cap *= 2;
            v = realloc(v, sizeof(*v) * (size_t)cap);
        }
        v[n++] = p;
        p = nl + 1;
    }
    *out = v;
    return n;
}

static void test_metadump_format(void **state)
{
    static const char *const args[] = {"-n", "2", "-m", "64", NULL};
    const struct wire_tag tags[] = {{1, 2}, {3, -4}};
    struct tsrv s;
    struct mline m;
    char *r, **lines;
    size_t len;
    int fd, nfd, n, i, seen = 0;
    long long now = (long long)time(NULL);

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    nfd = tc_connect(&s);
    assert_true(nfd >= 0);
    /* keys the text protocol cannot carry: through the native one */
    assert_int_equal(tc_set(nfd, "a b/c\x01~", "v", 1, NULL, 0), WIRE_S_OK);
    {
        struct treq q = {.op = WIRE_OP_SET, .key = "tagged", .klen = 6,
                         .val = "xyz", .vlen = 3, .tags = tags, .ntags = 2};
        struct tresp p;

        assert_int_equal(tc_call(nfd, &q, &p), WIRE_S_OK);
        tc_resp_free(&p);
    }
    close(nfd);
    fd = text_conn(&s);
    xchg(fd, "set plain 5 100 3\r\nbar\r\n", "STORED\r\n");
    send_str(fd, "get plain\r\n");
    r = read_until(fd, "END\r\n", NULL);
    assert_string_equal(r, "VALUE plain 5 3\r\nbar\r\nEND\r\n");
    free(r);

    send_str(fd, "lru_crawler metadump all\r\n");
    r = read_until(fd, "END\r\n", &len);
    n = split_lines(r, len, &lines);
    assert_int_equal(n, 3);
    for (i = 0; i < n; i++) {
        assert_true(parse_mline(lines[i], &m));
        assert_int_equal(m.cls, 1);
        assert_true(m.la >= now - 5 && m.la <= now + 5);
        assert_true(m.cas > 0 && m.size > 0);
        if (strcmp(m.key, "a%20b%2Fc%01~") == 0) {
            assert_int_equal(m.exp, -1);
            assert_string_equal(m.fetch, "no");
            seen |= 1;
        } else if (strcmp(m.key, "plain") == 0) {
            assert_true(m.exp >= now + 95 && m.exp <= now + 105);
            assert_string_equal(m.fetch, "yes");
            assert_string_equal(m.tags, "");
            seen |= 2;
        } else if (strcmp(m.key, "tagged") == 0) {
            assert_string_equal(m.tags, "1:2,3:-4");
            seen |= 4;
        } else {
            fail_msg("unexpected line '%s'", lines[i]);
        }
    }
    assert_int_equal(seen, 7);
    free(lines);
    free(r);
    /* hash is the same walk; class 1 holds every record, 2-63 none */
    send_str(fd, "lru_crawler metadump hash\r\n");
    r = read_until(fd, "END\r\n", &len);
    n = split_lines(r, len, &lines);
    assert_int_equal(n, 3);
    free(lines);
    free(r);
    send_str(fd, "lru_crawler metadump 2,1\r\n");
    r = read_until(fd, "END\r\n", &len);
    n = split_lines(r, len, &lines);
    assert_int_equal(n, 3);
    free(lines);
    free(r);
    xchg(fd, "lru_crawler metadump 2\r\n", "END\r\n");
    xchg(fd, "lru_crawler metadump 63\r\n", "END\r\n");
    xchg(fd, "lru_crawler metadump 0\r\n", "BADCLASS invalid class id\r\n");
    xchg(fd, "lru_crawler metadump 64\r\n", "BADCLASS invalid class id\r\n");
    xchg(fd, "lru_crawler metadump 1,x\r\n", "BADCLASS invalid class id\r\n");
    xchg(fd, "lru_crawler metadump\r\n", "ERROR\r\n");
    xchg(fd, "lru_crawler metadump all more\r\n", "ERROR\r\n");
    xchg(fd, "lru_crawler crawl all\r\n", "ERROR\r\n");
    xchg(fd, "lru_crawler\r\n", "ERROR\r\n");
    /* pipelined behind it, the next request is answered after END */
    send_str(fd, "lru_crawler metadump all\r\nget plain\r\n");
    r = read_until(fd, "END\r\nVALUE plain 5 3\r\nbar\r\nEND\r\n", NULL);
    free(r);
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
}

#define MD_RECORDS 60000

/*
 * A dump far larger than --max-output, and a reader that reads none of
 * it: its dump stops where the output is full, holding no lock, so a
 * client of the same (only) network thread stores and reads meanwhile,
 * new keys included, and the dump still waits after them.  Then the reader reads all: every record stored
 * before the dump is listed exactly once.
 */
static void test_metadump_slow_reader(void **state)
{
    static const char *const args[] = {"-n", "1", "-m", "256", "--max-output",
                                       "64k", NULL};
    struct tsrv s;
    char *buf, *r, **lines, *seen, cmd[256];
    size_t len, off = 0;
    int a, b, n, i, extra = 0;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    b = text_conn(&s);
    buf = malloc((size_t)MD_RECORDS * 210);
    for (i = 0; i < MD_RECORDS; i++)
        off += (size_t)sprintf(buf + off,
                               "set md-%06d-%0150d 0 0 2 noreply\r\nvv\r\n", i,
                               0);
    assert_int_equal(tc_send_all(b, buf, off), 0);
    xchg(b, "mn\r\n", "MN\r\n");
    free(buf);

    a = tc_connect_rcvbuf(&s, 4096);
    assert_true(a >= 0);
    tc_set_timeout_ms(a, 30000);
    send_str(a, "lru_crawler metadump all\r\n");
    /* the dump has begun and filled what the socket takes: a connection
     * in conn_mwrite (a is accepted by the main thread and handed over,
     * which on a loaded machine may come after many of b's requests);
     * the 30 s is a hang's ceiling, not a bound */
    for (i = 0;; i++) {
        send_str(b, "stats conns\r\n");
        r = read_until(b, "END\r\n", NULL);
        if (strstr(r, ":state conn_mwrite\r\n") != NULL)
            break;
        if (i == 3000)
            fail_msg("the dump never waited for its reader:\n%s", r);
        free(r);
        usleep(10000);
    }
    free(r);
    /* a reads nothing: b, on the same thread, is served meanwhile */
    for (i = 0; i < 300; i++) {
        snprintf(cmd, sizeof(cmd), "set new-%d 0 0 1\r\nn\r\n", i);
        xchg(b, cmd, "STORED\r\n");
        snprintf(cmd, sizeof(cmd), "get md-%06d-%0150d\r\n",
                 i * (MD_RECORDS / 300), 0);
        send_str(b, cmd);
        free(read_until(b, "END\r\n", NULL));
    }
    /* the dump is still waiting for its reader, not over */
    send_str(b, "stats conns\r\n");
    r = read_until(b, "END\r\n", NULL);
    if (strstr(r, ":state conn_mwrite\r\n") == NULL)
        fail_msg("no connection in conn_mwrite:\n%s", r);
    free(r);
    /* now a reads it all */
    r = read_until(a, "END\r\n", &len);
    n = split_lines(r, len, &lines);
    seen = calloc(MD_RECORDS, 1);
    for (i = 0; i < n; i++) {
        int k;

        if (strncmp(lines[i], "key=new-", 8) == 0) {
            extra++;
            continue;
        }
        assert_int_equal(sscanf(lines[i], "key=md-%d-", &k), 1);
        assert_true(k >= 0 && k < MD_RECORDS);
        assert_int_equal(seen[k], 0); /* once */
        seen[k] = 1;
    }
    for (i = 0; i < MD_RECORDS; i++)
        if (!seen[i])
            fail_msg("record md-%06d missing from the dump", i);
    assert_true(extra <= 300);
    free(seen);
    free(lines);
    free(r);
    {
        int nfd = tc_connect(&s);

        assert_true(tc_stat(nfd, "output_paused") >= 1);
        close(nfd);
    }
    close(a);
    close(b);
    assert_int_equal(tsrv_stop(&s), 0);
}

/* ---- watch --------------------------------------------------------------- */

/* The local port of fd, as a conn_new line names the client. */
static unsigned local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &sl), 0);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Read the watcher until a line contains want; the text read so far. */
static char *watch_until(int w, const char *want)
{
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);

    for (;;) {
        ssize_t k;

        b[len] = '\0';
        if (strstr(b, want) != NULL)
            return b;
        if (cap - len < 4096) {
            cap *= 2;
            b = realloc(b, cap);
        }
        k = recv(w, b + len, cap - len - 1, 0);
        if (k <= 0)
            fail_msg("watcher ended without '%s'; got:\n%s", want, b);
        len += (size_t)k;
    }
}

/* Every line of text has memcached's prefix "ts=<s>.<us> gid=<n> ". */
static void check_prefixes(const char *text)
{
    const char *l = text;

    while (*l != '\0') {
        const char *nl = strchr(l, '\n');
        long long s, us;
        unsigned long long gid;

        if (nl == NULL)
            break;
        if (strncmp(l, "skipped=", 8) != 0)
            assert_int_equal(sscanf(l, "ts=%lld.%lld gid=%llu ", &s, &us,
                                    &gid),
                             3);
        l = nl + 1;
    }
}

/*
 * watch fetchers mutations evictions connevents: a client's connection,
 * stores, gets, mg, evictions and close come as memcached's lines; bad
 * types answer ERROR, and a watch over UDP is refused.
 */
static void test_watch_lines(void **state)
{
    static const char *const args[] = {"-n", "2", "-m", "8", NULL};
    struct tsrv s;
    int w, d, i;
    unsigned dport;
    char want[256], *r, *big;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    w = text_conn(&s);
    xchg(w, "watch bogus\r\n", "ERROR\r\n");
    xchg(w, "watch fetchers rawcmds\r\n", "ERROR\r\n");
    xchg(w, "watch fetchers mutations evictions connevents\r\n", "OK\r\n");
    {
        int n = text_conn(&s);
        long long v = 0;

        /* the watcher is taken in once its OK is out: wait for it */
        for (i = 0; i < 3000 && v != 1; i++) {
            char *t;

            send_str(n, "stats\r\n");
            t = read_until(n, "END\r\n", NULL);
            v = strstr(t, "STAT log_watchers ") != NULL
                    ? atoll(strstr(t, "STAT log_watchers ") + 18)
                    : -1;
            free(t);
            if (v != 1)
                usleep(10000);
        }
        assert_int_equal(v, 1);
        close(n);
    }
    d = text_conn(&s);
    dport = local_port(d);
    xchg(d, "set w%20k 3 100 2\r\nhi\r\n", "STORED\r\n");
    xchg(d, "add w%20k 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    send_str(d, "get w%20k nokey\r\n");
    free(read_until(d, "END\r\n", NULL));
    send_str(d, "mg w%20k v\r\n");
    r = read_until(d, "hi\r\n", NULL);
    assert_string_equal(r, "VA 2\r\nhi\r\n");
    free(r);
    close(d);
    snprintf(want, sizeof(want),
             "type=conn_close rip=127.0.0.1 rport=%u transport=tcp "
             "reason=normal",
             dport);
    r = watch_until(w, want);
    check_prefixes(r);
    snprintf(want, sizeof(want),
             "type=conn_new rip=127.0.0.1 rport=%u transport=tcp cfd=", dport);
    assert_non_null(strstr(r, want));
    assert_non_null(strstr(r, " type=item_store key=w%2520k status=stored "
                              "cmd=set ttl=100 clsid=1 cfd="));
    assert_non_null(strstr(r, " type=item_store key=w%2520k "
                              "status=not_stored cmd=add ttl=0 clsid=0 cfd="));
    assert_non_null(strstr(r, " type=item_get key=w%2520k status=found "
                              "clsid=1 cfd="));
    assert_non_null(strstr(r, " type=item_get key=nokey status=not_found "
                              "clsid=0 cfd="));
    assert_non_null(strstr(r, " size=2\n"));
    /* the get and the mg: two found lines for the key */
    assert_non_null(strstr(strstr(r, "status=found") + 1, "status=found"));
    free(r);
    /* mutations over the native protocol and memcached's binary one too */
    {
        /* memcached binary SET "bink" = "vv", flags 0, exptime 0 */
        static const uint8_t bset[24 + 8 + 4 + 2] = {
            0x80, 0x01, 0, 4, 8, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0,
            0,    0,    0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0,
            'b',  'i',  'n', 'k', 'v', 'v'};
        uint8_t rsp[24];
        int nfd = tc_connect(&s), bfd = text_conn(&s);

        assert_true(nfd >= 0 && bfd >= 0);
        assert_int_equal(tc_set(nfd, "natk", "v", 1, NULL, 0), 0);
        assert_int_equal(tc_send_all(bfd, bset, sizeof(bset)), 0);
        assert_int_equal(tc_read_full(bfd, rsp, sizeof(rsp)), 0);
        assert_int_equal(rsp[0], 0x81);
        assert_int_equal(rsp[6] << 8 | rsp[7], 0); /* status: no error */
        close(nfd);
        close(bfd);
        r = watch_until(w, " type=item_store key=bink status=stored cmd=set");
        assert_non_null(strstr(r, " type=item_store key=natk status=stored "
                                  "cmd=set ttl=0 clsid=1 cfd="));
        free(r);
    }
    /* evictions: 8 MiB of 100 KB values through -m 8 */
    d = text_conn(&s);
    big = malloc(100000 + 64);
    memset(big, 'v', 100000 + 64);
    for (i = 0; i < 200; i++) {
        int n = sprintf(big, "set ev%d 0 0 100000 noreply\r\n", i);

        memset(big + n, 'v', 100000);
        memcpy(big + n + 100000, "\r\n", 2);
        assert_int_equal(tc_send_all(d, big, (size_t)n + 100002), 0);
    }
    xchg(d, "mn\r\n", "MN\r\n");
    free(big);
    r = watch_until(w, " type=eviction key=ev");
    assert_non_null(strstr(r, " fetch=no ttl=-1 la="));
    check_prefixes(r);
    free(r);
    close(d);
    close(w);
    assert_int_equal(tsrv_stop(&s), 0);
}

/*
 * A watcher that reads nothing: its lines stop fitting its buffer and are
 * dropped, counted (log_watcher_skipped) - the clients' requests are
 * answered meanwhile, none waits for the watcher - and once it reads, a
 * "skipped=N" line says how many it lost.
 */
static void test_watch_slow_watcher(void **state)
{
    static const char *const args[] = {"-n", "1", "-m", "64", NULL};
    struct tsrv s;
    int w, d, i, n;
    char *buf;
    size_t off = 0;
    long long skipped;

    (void)state;
    assert_int_equal(tsrv_start(&s, args), 0);
    w = tc_connect_rcvbuf(&s, 4096);
    assert_true(w >= 0);
    tc_set_timeout_ms(w, 30000);
    xchg(w, "watch fetchers\r\n", "OK\r\n");
    d = text_conn(&s);
    phase = "waiting for the watcher";
    {
        long long v = 0;

        for (i = 0; i < 3000 && v != 1; i++) {
            char *t;

            send_str(d, "stats\r\n");
            t = read_until(d, "END\r\n", NULL);
            v = atoll(strstr(t, "STAT log_watchers ") + 18);
            free(t);
            if (v != 1)
                usleep(10000);
        }
        assert_int_equal(v, 1);
    }
    /* 100 000 gets of a 200-byte key, in batches of 5 000: some 30 MB
     * of lines for the watcher */
    buf = malloc(5000 * 210);
    n = 0;
    phase = "gets";
    for (int batch = 0; batch < 20; batch++) {
        int got = 0;

        off = 0;
        for (i = 0; i < 5000; i++)
            off += (size_t)sprintf(buf + off, "get s%0200d\r\n",
                                   batch * 5000 + i);
        assert_int_equal(tc_send_all(d, buf, off), 0);
        while (got < 5000) { /* each answered, the watcher reading nothing */
            char *t = read_until(d, "END\r\n", NULL);

            for (char *p = t; (p = strstr(p, "END\r\n")) != NULL; p += 5)
                got++;
            free(t);
        }
        n += got;
    }
    free(buf);
    assert_int_equal(n, 100000);
    skipped = tc_stat_text(d, "log_watcher_skipped");
    assert_true(skipped > 0);
    /* the watcher reads now: "skipped=N" comes before the next line that
     * fits its buffer, so gets go on until it shows (bounded: 30 s) */
    {
        size_t cap = 1 << 20, len = 0;
        char *b = malloc(cap);

        phase = "reading the watcher";
        tc_set_timeout_ms(w, 200);
        for (i = 0; i < 150; i++) {
            ssize_t k;

            send_str(d, "get s0\r\n");
            free(read_until(d, "END\r\n", NULL));
            while ((k = recv(w, b + len, cap - len - 1, 0)) > 0) {
                len += (size_t)k;
                if (cap - len < 65536) {
                    cap *= 2;
                    b = realloc(b, cap);
                }
            }
            b[len] = '\0';
            if (strstr(b, "skipped=") != NULL)
                break;
        }
        assert_non_null(strstr(b, "skipped="));
        check_prefixes(b);
        free(b);
    }
    close(w);
    close(d);
    assert_int_equal(tsrv_stop(&s), 0);
}

/* Under --auth-file neither runs before login; both do after it. */
static void test_login_first(void **state)
{
    char path[] = "/tmp/mdc-compat-auth-XXXXXX";
    const char *args[] = {"-n", "1", "--auth-file", path, NULL};
    struct tsrv s;
    int fd, afd;
    char *r;

    (void)state;
    afd = mkstemp(path);
    assert_true(afd >= 0);
    assert_int_equal(write(afd, "ops:secret\n", 11), 11);
    close(afd);
    assert_int_equal(tsrv_start(&s, args), 0);
    fd = text_conn(&s);
    xchg(fd, "lru_crawler metadump all\r\n", "CLIENT_ERROR unauthenticated\r\n");
    xchg(fd, "watch fetchers\r\n", "CLIENT_ERROR unauthenticated\r\n");
    xchg(fd, "set x 0 0 10\r\nops secret\r\n", "STORED\r\n");
    xchg(fd, "set k 0 0 1\r\nv\r\n", "STORED\r\n");
    send_str(fd, "lru_crawler metadump all\r\n");
    r = read_until(fd, "END\r\n", NULL);
    assert_true(strncmp(r, "key=k exp=-1 la=", 16) == 0);
    free(r);
    xchg(fd, "watch fetchers\r\n", "OK\r\n");
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadump_format),
        cmocka_unit_test(test_metadump_slow_reader),
        cmocka_unit_test(test_watch_lines),
        cmocka_unit_test(test_watch_slow_watcher),
        cmocka_unit_test(test_login_first),
    };

    signal(SIGPIPE, SIG_IGN);
    if (getenv("MDC_TEST_FILTER") != NULL)
        cmocka_set_test_filter(getenv("MDC_TEST_FILTER"));
    return cmocka_run_group_tests_name("compat", tests, NULL, NULL);
}
