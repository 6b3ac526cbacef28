/*
 * xdp_daemon_check - the client half of tests/xdp_daemon_e2e.sh: drives a
 * real mdcached started with -U PORT -x IFACE from another network
 * namespace, writes over TCP, reads over UDP, and tells from the daemon's
 * counters which path answered each read.
 *
 *   xdp_daemon_check check SRV TCPPORT UDPPORT [OTHER]
 *       hits answered by XDP (xdp_hits moves, udp_requests does not), misses
 *       by userspace, byte for byte the same reply; after set, append,
 *       incr, touch, delete, expiry, flush and a set that adds a tag (each
 *       acknowledged first) the next GET sees the new state; another
 *       destination address (OTHER) and other commands pass.
 *   xdp_daemon_check race SRV TCPPORT UDPPORT SECONDS
 *       the stress test: a writer sets versions 1, 2, 3... over the text
 *       protocol, waiting for each STORED, while readers GET over UDP; any
 *       reply older than the last version acknowledged before its request
 *       was sent, or not a well-formed version, fails.
 *   xdp_daemon_check udpw SRV TCPPORT UDPPORT
 *       the daemon runs with --udp-writes: the writes come over UDP (set,
 *       append, prepend, incr, decr, touch, delete, ms, ma, md, md I,
 *       tset), each acknowledged by its reply datagram, and the next GET
 *       sees the new state, as after the same writes over TCP;
 *       flush_all over UDP is refused and changes nothing.
 *   xdp_daemon_check race-udp SRV TCPPORT UDPPORT SECONDS
 *       the race with its writer's sets sent over UDP.
 *
 * Writes of the check go through libmdcached (the native protocol), the
 * race's writer speaks memcached's text protocol: both are acknowledged
 * before the next read is sent.  Exit 0 when everything held, 1 otherwise.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mdcached.h"

static const char *srv_addr;
static uint16_t tcp_port, udp_port;
static int failures;

#define FAIL(...)                                                              \
    do {                                                                       \
        printf("FAIL: " __VA_ARGS__);                                          \
        putchar('\n');                                                         \
        failures++;                                                            \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* ---- UDP ---------------------------------------------------------------- */

static int udp_open(const char *addr)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(udp_port);
    if (fd < 0 || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("xdp_daemon_check: udp socket");
        exit(1);
    }
    return fd;
}

/* The wait for a reply that is due: a ceiling only a hang or a lost
 * datagram reaches, not a latency bound (a busy machine's daemon may take
 * seconds); 300 ms only where silence is the expected answer. */
#define REPLY_MS 30000

/*
 * Send "CMD\r\n" behind a frame header with a fresh request id and wait
 * for the one-datagram reply with that id (later replies to earlier ids are
 * skipped).  The reply's text (after the header) goes to out, NUL-ended.
 * Returns its length, or -1 after timeout_ms without it.
 */
static int udp_cmd(int fd, uint16_t *rid, const char *cmd, char *out,
                   size_t cap, int timeout_ms)
{
    uint8_t req[600], rep[2048];
    uint16_t id = ++*rid;
    uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
    int n = snprintf((char *)req + 8, sizeof(req) - 8, "%s\r\n", cmd);
    ssize_t r;

    req[0] = (uint8_t)(id >> 8);
    req[1] = (uint8_t)id;
    memcpy(req + 2, "\0\0\0\x01\0\0", 6);
    if (send(fd, req, (size_t)n + 8, 0) != n + 8)
        return -1;
    for (;;) {
        uint64_t t = now_ns();
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (t >= end || poll(&p, 1, (int)((end - t) / 1000000u) + 1) <= 0)
            return -1;
        r = recv(fd, rep, sizeof(rep), 0);
        if (r < 8 || rep[0] != req[0] || rep[1] != req[1])
            continue;
        if (memcmp(rep + 2, "\0\0\0\x01\0\0", 6) != 0) {
            FAIL("reply to '%s' is not one datagram", cmd);
            return -1;
        }
        r -= 8;
        if ((size_t)r >= cap)
            r = (ssize_t)cap - 1;
        memcpy(out, rep + 8, (size_t)r);
        out[r] = '\0';
        return (int)r;
    }
}

/* ---- the check ---------------------------------------------------------- */

static mdc_t *mc;
static int ufd;
static uint16_t urid;

static uint64_t sv(const char *name)
{
    char *text = NULL;
    uint64_t v = 0;

    if (mdc_stats(mc, NULL, &text, NULL) != MDC_OK ||
        mdc_stats_u64(text, name, &v) != MDC_OK) {
        FAIL("no stat %s (%s)", name, mdc_errstr(mc));
        v = 0;
    }
    free(text);
    return v;
}

static void want(const char *what, const char *key, const char *value,
                 uint32_t flags, const char *got)
{
    char exp[2048];

    if (value != NULL)
        snprintf(exp, sizeof(exp), "VALUE %s %u %zu\r\n%s\r\nEND\r\n", key,
                 flags, strlen(value), value);
    else
        snprintf(exp, sizeof(exp), "END\r\n");
    if (got == NULL || strcmp(got, exp) != 0)
        FAIL("%s: GET %s returned '%s', want '%s'", what, key,
             got ? got : "(no reply)", exp);
}

/* GET key over UDP; the reply text, or NULL without one. */
static const char *get(const char *key)
{
    static char buf[2048];
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "get %s", key);
    return udp_cmd(ufd, &urid, cmd, buf, sizeof(buf), REPLY_MS) < 0 ? NULL
                                                                    : buf;
}

static void set(const char *key, const char *value, uint32_t flags,
                int64_t exptime)
{
    int rc = mdc_set(mc, key, strlen(key), value, strlen(value), flags, exptime,
                     NULL, 0);

    if (rc != MDC_OK)
        FAIL("set %s: %s", key, mdc_strerror(rc));
}

/*
 * GET key until XDP answers one (the first reply comes from userspace,
 * which fills the mirror once the reply is out).  Returns true when one
 * did; every reply must equal the expected one meanwhile.
 */
static bool warm(const char *key, const char *value, uint32_t flags)
{
    int i;

    for (i = 0; i < 100; i++) {
        uint64_t h = sv("xdp_hits");

        want("warming", key, value, flags, get(key));
        if (sv("xdp_hits") > h)
            return true;
        sleep_ms(10);
    }
    FAIL("GET %s never answered by XDP", key);
    return false;
}

/* n GETs: all answered by XDP, byte for byte. */
static void xdp_gets(const char *what, const char *key, const char *value,
                     uint32_t flags, int n)
{
    uint64_t h0 = sv("xdp_hits"), u0 = sv("udp_requests"), h1, u1;
    int i;

    for (i = 0; i < n; i++)
        want(what, key, value, flags, get(key));
    h1 = sv("xdp_hits");
    u1 = sv("udp_requests");
    if (h1 - h0 != (uint64_t)n || u1 != u0)
        FAIL("%s: %d GETs of %s: %" PRIu64 " by XDP, %" PRIu64 " by userspace",
             what, n, key, h1 - h0, u1 - u0);
    else
        printf("ok: %s: %d GETs of %s answered by XDP\n", what, n, key);
}

/* The next GET, right after an acknowledged write, sees the new state. */
static void after(const char *what, const char *key, const char *value,
                  uint32_t flags)
{
    want(what, key, value, flags, get(key));
    if (value != NULL && warm(key, value, flags))
        xdp_gets(what, key, value, flags, 5);
    else
        printf("ok: %s: GET %s sees the new state\n", what, key);
}

static int run_check(const char *other)
{
    struct mdc_tag tag = {7, 42};
    char big[160], buf[512];
    uint64_t h0, u0, m0, e0, f0;
    int i, rc;

    mc = mdc_create_tcp(srv_addr, tcp_port);
    if (mc == NULL || mdc_connect(mc) != MDC_OK) {
        printf("FAIL: cannot connect to %s:%u\n", srv_addr, tcp_port);
        return 1;
    }
    ufd = udp_open(srv_addr);
    mdc_flush(mc);

    /* a hit: first answered by userspace (which fills), then by XDP */
    set("foo", "bar", 5, 0);
    h0 = sv("xdp_hits");
    u0 = sv("udp_requests");
    want("first GET", "foo", "bar", 5, get("foo"));
    if (sv("udp_requests") != u0 + 1 || sv("xdp_hits") != h0)
        FAIL("first GET of foo not answered by userspace");
    if (warm("foo", "bar", 5))
        xdp_gets("hit", "foo", "bar", 5, 50);

    /* a miss: XDP counts it and passes, userspace answers END */
    m0 = sv("xdp_misses");
    u0 = sv("udp_requests");
    want("miss", "nokey", NULL, 0, get("nokey"));
    if (sv("xdp_misses") != m0 + 1 || sv("udp_requests") != u0 + 1)
        FAIL("miss not counted by XDP and answered by userspace");
    else
        printf("ok: miss passed by XDP, answered by userspace\n");

    /* every mutation, acknowledged, then the very next GET */
    set("foo", "bazz", 7, 0);
    after("set", "foo", "bazz", 7);
    rc = mdc_append(mc, "foo", 3, "-tail", 5);
    if (rc != MDC_OK)
        FAIL("append: %s", mdc_strerror(rc));
    after("append", "foo", "bazz-tail", 7);
    rc = mdc_prepend(mc, "foo", 3, "head-", 5);
    if (rc != MDC_OK)
        FAIL("prepend: %s", mdc_strerror(rc));
    after("prepend", "foo", "head-bazz-tail", 7);
    set("cnt", "41", 0, 0);
    warm("cnt", "41", 0);
    rc = mdc_incr(mc, "cnt", 3, 1, NULL);
    if (rc != MDC_OK)
        FAIL("incr: %s", mdc_strerror(rc));
    after("incr", "cnt", "42", 0);
    rc = mdc_delete(mc, "foo", 3, 0);
    if (rc != MDC_OK)
        FAIL("delete: %s", mdc_strerror(rc));
    after("delete", "foo", NULL, 0);

    /* expiry: the program checks the deadline itself (the daemon runs with
     * --sweep-interval 0, so nothing else removes the entry) */
    set("ttl", "soon", 0, 2);
    warm("ttl", "soon", 0);
    e0 = sv("xdp_expired");
    sleep_ms(3100);
    after("expiry", "ttl", NULL, 0);
    if (sv("xdp_expired") <= e0)
        FAIL("expiry: xdp_expired did not move");
    /* touch: a new deadline is a change too (here: already past) */
    set("tch", "touched", 0, 0);
    warm("tch", "touched", 0);
    rc = mdc_touch(mc, "tch", 3, -1);
    if (rc != MDC_OK)
        FAIL("touch: %s", mdc_strerror(rc));
    after("touch to the past", "tch", NULL, 0);

    /* flush */
    set("fa", "one", 0, 0);
    set("fb", "two", 0, 0);
    warm("fa", "one", 0);
    warm("fb", "two", 0);
    rc = mdc_flush(mc);
    if (rc != MDC_OK)
        FAIL("flush: %s", mdc_strerror(rc));
    after("flush", "fa", NULL, 0);
    after("flush", "fb", NULL, 0);

    /* a set that adds a tag: the record leaves the mirror for good */
    set("tg", "plain", 0, 0);
    warm("tg", "plain", 0);
    rc = mdc_set(mc, "tg", 2, "tagged", 6, 0, 0, &tag, 1);
    if (rc != MDC_OK)
        FAIL("tagged set: %s", mdc_strerror(rc));
    h0 = sv("xdp_hits");
    f0 = sv("xdp_fills");
    u0 = sv("udp_requests");
    for (i = 0; i < 5; i++) {
        want("tagged set", "tg", "tagged", 0, get("tg"));
        sleep_ms(5);
    }
    if (sv("xdp_hits") != h0 || sv("udp_requests") != u0 + 5 ||
        sv("xdp_fills") != f0)
        FAIL("a tagged record was mirrored");
    else
        printf("ok: tagged set: the record is answered by userspace only\n");

    /* a 150-byte value (the 512-byte tier) */
    memset(big, 'v', 150);
    big[150] = '\0';
    set("big", big, 3, 0);
    want("150-byte value", "big", big, 3, get("big"));
    h0 = sv("xdp_hits");
    for (i = 0; i < 10; i++) {
        want("150-byte value", "big", big, 3, get("big"));
        sleep_ms(2);
    }
    printf("ok: 150-byte value: %" PRIu64 " of 10 GETs by XDP "
           "(pass_no_room %" PRIu64 ")\n",
           sv("xdp_hits") - h0, sv("xdp_pass_no_room"));

    /* another destination: passed (no one answers), never by XDP */
    if (other != NULL) {
        int ofd = udp_open(other);
        uint16_t orid = 0;

        set("foo", "bar", 5, 0);
        warm("foo", "bar", 5);
        h0 = sv("xdp_hits");
        m0 = sv("xdp_pass_addr");
        if (udp_cmd(ofd, &orid, "get foo", buf, sizeof(buf), 300) >= 0)
            FAIL("a GET to %s was answered", other);
        if (sv("xdp_pass_addr") <= m0 || sv("xdp_hits") != h0)
            FAIL("GET to another address not passed");
        else
            printf("ok: GET to %s passed\n", other);
        close(ofd);
    }
    /* other commands pass, userspace answers them */
    m0 = sv("xdp_pass_cmd");
    u0 = sv("udp_requests");
    if (udp_cmd(ufd, &urid, "gets foo", buf, sizeof(buf), REPLY_MS) < 0 ||
        strncmp(buf, "VALUE foo 5 3 ", 14) != 0)
        FAIL("gets foo: '%s'", buf);
    if (sv("xdp_pass_cmd") <= m0 || sv("udp_requests") != u0 + 1)
        FAIL("gets not passed to userspace");
    else
        printf("ok: gets passed to userspace\n");

    {
        char *text = NULL;

        if (mdc_stats(mc, NULL, &text, NULL) == MDC_OK) {
            char *l = text, *nl;

            for (; l && *l; l = nl) {
                nl = strchr(l, '\n');
                if (nl)
                    *nl++ = '\0';
                if (strncmp(l, "xdp_", 4) == 0)
                    printf("  %s\n", l);
            }
        }
        free(text);
    }
    mdc_destroy(mc);
    close(ufd);
    return failures ? 1 : 0;
}

/* ---- the race ----------------------------------------------------------- */

#define RACE_KEYS 4
#define RACE_READERS 3

static atomic_uint_fast64_t acked[RACE_KEYS]; /* last version acknowledged */
static atomic_bool race_stop;
static atomic_uint_fast64_t n_reads, n_misses, n_lost, n_stale, n_bad, n_writes;

/* A version's value: "<version>:" then filler, a length that moves the
 * record between the 128- and 512-byte tiers, all derived from it. */
static size_t race_value(uint64_t v, char *out)
{
    size_t len = 12 + (size_t)(v * 37 % 140), n;

    n = (size_t)snprintf(out, 32, "%010" PRIu64 ":", v);
    memset(out + n, 'a' + (int)(v % 26), len - n);
    out[len] = '\0';
    return len;
}

static int tcp_open(void)
{
    struct sockaddr_in sa;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(tcp_port);
    if (fd < 0 || inet_pton(AF_INET, srv_addr, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("xdp_daemon_check: tcp connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static bool race_udp; /* the writer's sets go over UDP (race-udp) */

static void *race_writer(void *arg)
{
    char cmd[512], val[200], rep[64];
    int fd = race_udp ? udp_open(srv_addr) : tcp_open();
    uint16_t rid = 0;
    uint64_t v;

    (void)arg;
    for (v = 1; !atomic_load(&race_stop); v++) {
        unsigned k = (unsigned)(v % RACE_KEYS);
        size_t len = race_value(v, val), got = 0;
        int n = snprintf(cmd, sizeof(cmd), "set race%u 0 0 %zu\r\n%s\r\n", k,
                         len, val);

        if (race_udp) {
            /* udp_cmd() adds the last \r\n; a lost datagram is sent
             * again (a set is idempotent), never counted as acknowledged */
            cmd[n - 2] = '\0';
            if (udp_cmd(fd, &rid, cmd, rep, sizeof(rep), 500) < 0) {
                v--;
                continue;
            }
            if (strcmp(rep, "STORED\r\n") != 0) {
                FAIL("writer: UDP set race%u: '%s'", k, rep);
                break;
            }
            atomic_store(&acked[k], v);
            atomic_fetch_add(&n_writes, 1);
            continue;
        }
        if (write(fd, cmd, (size_t)n) != n) {
            FAIL("writer: write: %s", strerror(errno));
            break;
        }
        while (got < 8) {
            ssize_t r = read(fd, rep + got, sizeof(rep) - 1 - got);
            if (r <= 0) {
                FAIL("writer: connection lost");
                goto out;
            }
            got += (size_t)r;
        }
        rep[got] = '\0';
        if (strcmp(rep, "STORED\r\n") != 0) {
            FAIL("writer: set race%u: '%s'", k, rep);
            break;
        }
        atomic_store(&acked[k], v); /* acknowledged: readers must see >= v */
        atomic_fetch_add(&n_writes, 1);
    }
out:
    close(fd);
    return NULL;
}

static void *race_reader(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    int fd = udp_open(srv_addr);
    uint16_t rid = (uint16_t)((uintptr_t)arg << 12);
    char cmd[32], buf[2048], want_v[200];

    while (!atomic_load(&race_stop)) {
        unsigned k = (seed = seed * 1103515245u + 12345u) >> 16 & 3;
        uint64_t before = atomic_load(&acked[k]), v;
        unsigned flags, len;
        int n, hl;

        snprintf(cmd, sizeof(cmd), "get race%u", k);
        n = udp_cmd(fd, &rid, cmd, buf, sizeof(buf), 500);
        if (n < 0) {
            atomic_fetch_add(&n_lost, 1);
            continue;
        }
        atomic_fetch_add(&n_reads, 1);
        if (strcmp(buf, "END\r\n") == 0) {
            atomic_fetch_add(&n_misses, 1); /* before the first set only */
            if (before != 0)
                goto bad;
            continue;
        }
        hl = 0;
        if (sscanf(buf, "VALUE race%*u %u %u\r\n%n", &flags, &len, &hl) != 2 ||
            hl == 0 || (size_t)n != (size_t)hl + len + 7 ||
            sscanf(buf + hl, "%" SCNu64 ":", &v) != 1)
            goto bad;
        if (race_value(v, want_v) != len || memcmp(buf + hl, want_v, len) ||
            memcmp(buf + hl + len, "\r\nEND\r\n", 7) || v % RACE_KEYS != k)
            goto bad;
        if (v < before) {
            if (atomic_fetch_add(&n_stale, 1) < 10)
                printf("FAIL: STALE: GET race%u returned version %" PRIu64
                       ", version %" PRIu64 " was acknowledged before the "
                       "GET was sent\n",
                       k, v, before);
        }
        continue;
    bad:
        if (atomic_fetch_add(&n_bad, 1) < 10)
            printf("FAIL: bad reply to GET race%u: '%.80s'\n", k, buf);
    }
    close(fd);
    return NULL;
}

/* What a race must have done to mean anything: acknowledged writes and
 * reads, and XDP hits, fills and invalidations (the daemon's counters, less
 * their values before it). */
#define RACE_MIN_WRITES 100
#define RACE_MIN_READS 1000
#define RACE_MIN_XDP 100
/* A race runs its seconds, then on until it has done that much: on a busy
 * machine 8 s may not be enough.  Only a daemon or a client that stopped
 * crosses this ceiling. */
#define RACE_CEILING_S 120

struct race_counts {
    uint64_t hits, udp, conflicts, fills, invals;
};

static void race_counts(struct race_counts *c)
{
    c->hits = sv("xdp_hits");
    c->udp = sv("udp_requests");
    c->conflicts = sv("xdp_conflicts");
    c->fills = sv("xdp_fills");
    c->invals = sv("xdp_invalidations");
}

static bool race_enough(const struct race_counts *c0,
                        const struct race_counts *c1)
{
    return atomic_load(&n_writes) >= RACE_MIN_WRITES &&
           atomic_load(&n_reads) >= RACE_MIN_READS &&
           c1->hits - c0->hits >= RACE_MIN_XDP &&
           c1->fills - c0->fills >= RACE_MIN_XDP &&
           c1->invals - c0->invals >= RACE_MIN_XDP;
}

static int run_race(double seconds)
{
    pthread_t w, r[RACE_READERS];
    struct race_counts c0, c1;
    uintptr_t i;
    unsigned ms = (unsigned)(seconds * 1000);

    mc = mdc_create_tcp(srv_addr, tcp_port);
    if (mc == NULL || mdc_connect(mc) != MDC_OK) {
        printf("FAIL: cannot connect to %s:%u\n", srv_addr, tcp_port);
        return 1;
    }
    race_counts(&c0);
    pthread_create(&w, NULL, race_writer, NULL);
    for (i = 0; i < RACE_READERS; i++)
        pthread_create(&r[i], NULL, race_reader, (void *)(i + 1));
    sleep_ms(ms);
    race_counts(&c1);
    while (!race_enough(&c0, &c1) && ms < RACE_CEILING_S * 1000) {
        sleep_ms(500);
        ms += 500;
        race_counts(&c1);
    }
    atomic_store(&race_stop, true);
    pthread_join(w, NULL);
    for (i = 0; i < RACE_READERS; i++)
        pthread_join(r[i], NULL);
    race_counts(&c1);
    printf("race %.1f s: %" PRIu64 " acknowledged writes, %" PRIu64
           " reads (%" PRIu64 " by XDP, %" PRIu64 " by userspace, %" PRIu64
           " lost, %" PRIu64 " misses); %" PRIu64 " fills, %" PRIu64
           " invalidations, %" PRIu64 " conflicts; stale %" PRIu64
           ", malformed %" PRIu64 "\n",
           ms / 1000.0, (uint64_t)n_writes, (uint64_t)n_reads,
           c1.hits - c0.hits, c1.udp - c0.udp, (uint64_t)n_lost,
           (uint64_t)n_misses, c1.fills - c0.fills, c1.invals - c0.invals,
           c1.conflicts - c0.conflicts, (uint64_t)n_stale, (uint64_t)n_bad);
    if (n_stale || n_bad)
        failures++;
    if (n_writes < RACE_MIN_WRITES || n_reads < RACE_MIN_READS)
        FAIL("race too slow to mean anything (%u s)", RACE_CEILING_S);
    if (c1.hits - c0.hits < RACE_MIN_XDP ||
        c1.fills - c0.fills < RACE_MIN_XDP ||
        c1.invals - c0.invals < RACE_MIN_XDP)
        FAIL("race did not exercise XDP hits, fills and invalidations");
    mdc_destroy(mc);
    return failures ? 1 : 0;
}

/* One write over UDP, and the reply it must get. */
static void uwrite(const char *cmd, const char *want_rep)
{
    char rep[512];

    if (udp_cmd(ufd, &urid, cmd, rep, sizeof(rep), REPLY_MS) < 0)
        FAIL("UDP '%s': no reply", cmd);
    else if (strcmp(rep, want_rep) != 0)
        FAIL("UDP '%s': '%s', want '%s'", cmd, rep, want_rep);
}

static int run_udpw(void)
{
    uint64_t h0, u0, f0;
    int i;

    mc = mdc_create_tcp(srv_addr, tcp_port);
    if (mc == NULL || mdc_connect(mc) != MDC_OK) {
        printf("FAIL: cannot connect to %s:%u\n", srv_addr, tcp_port);
        return 1;
    }
    ufd = udp_open(srv_addr);
    mdc_flush(mc);

    uwrite("set uw 5 0 3\r\nbar", "STORED\r\n");
    after("UDP set", "uw", "bar", 5);
    uwrite("set uw 7 0 4\r\nbazz", "STORED\r\n");
    after("UDP set again", "uw", "bazz", 7);
    uwrite("append uw 0 0 5\r\n-tail", "STORED\r\n");
    after("UDP append", "uw", "bazz-tail", 7);
    uwrite("prepend uw 0 0 5\r\nhead-", "STORED\r\n");
    after("UDP prepend", "uw", "head-bazz-tail", 7);
    uwrite("ms uw 2 F9\r\nms", "HD\r\n");
    after("UDP ms", "uw", "ms", 9);
    uwrite("ms uw 3 MA\r\n+ma", "HD\r\n");
    after("UDP ms MA", "uw", "ms+ma", 9);
    uwrite("set ucnt 0 0 2\r\n41", "STORED\r\n");
    warm("ucnt", "41", 0);
    uwrite("incr ucnt 1", "42\r\n");
    after("UDP incr", "ucnt", "42", 0);
    uwrite("decr ucnt 2", "40\r\n");
    after("UDP decr", "ucnt", "40", 0);
    uwrite("ma ucnt D5 v", "VA 2\r\n45\r\n");
    after("UDP ma", "ucnt", "45", 0);
    uwrite("md ucnt I", "HD\r\n");
    /* stale: the value stays readable, the mirror entry went */
    want("UDP md I", "ucnt", "45", 0, get("ucnt"));
    uwrite("touch uw -1", "TOUCHED\r\n");
    after("UDP touch to the past", "uw", NULL, 0);
    uwrite("set uw 1 0 1\r\nx", "STORED\r\n");
    warm("uw", "x", 1);
    uwrite("delete uw", "DELETED\r\n");
    after("UDP delete", "uw", NULL, 0);
    uwrite("set uw 1 0 1\r\ny", "STORED\r\n");
    warm("uw", "y", 1);
    uwrite("md uw", "HD\r\n");
    after("UDP md", "uw", NULL, 0);
    /* a tset: the record leaves the mirror, userspace answers it */
    uwrite("set utg 0 0 5\r\nplain", "STORED\r\n");
    warm("utg", "plain", 0);
    uwrite("tset utg 0 0 6 7:42\r\ntagged", "STORED\r\n");
    h0 = sv("xdp_hits");
    f0 = sv("xdp_fills");
    u0 = sv("udp_requests");
    for (i = 0; i < 5; i++) {
        want("UDP tset", "utg", "tagged", 0, get("utg"));
        sleep_ms(5);
    }
    if (sv("xdp_hits") != h0 || sv("udp_requests") != u0 + 5 ||
        sv("xdp_fills") != f0)
        FAIL("a record tagged over UDP was mirrored");
    else
        printf("ok: UDP tset: the record is answered by userspace only\n");
    /* flush_all never runs from a datagram: the mirrored record stays */
    uwrite("set ufa 0 0 3\r\none", "STORED\r\n");
    warm("ufa", "one", 0);
    uwrite("flush_all", "SERVER_ERROR command not served over UDP\r\n");
    xdp_gets("after a refused UDP flush_all", "ufa", "one", 0, 5);
    mdc_destroy(mc);
    close(ufd);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 5)
        goto usage;
    srv_addr = argv[2];
    tcp_port = (uint16_t)atoi(argv[3]);
    udp_port = (uint16_t)atoi(argv[4]);
    if (strcmp(argv[1], "check") == 0 && argc <= 6)
        return run_check(argc == 6 ? argv[5] : NULL);
    if (strcmp(argv[1], "race") == 0 && argc == 6)
        return run_race(atof(argv[5]));
    if (strcmp(argv[1], "udpw") == 0 && argc == 5)
        return run_udpw();
    if (strcmp(argv[1], "race-udp") == 0 && argc == 6) {
        race_udp = true;
        return run_race(atof(argv[5]));
    }
usage:
    fprintf(stderr, "usage: xdp_daemon_check check SRV TCPPORT UDPPORT "
                    "[OTHER]\n       xdp_daemon_check race SRV TCPPORT "
                    "UDPPORT SECONDS\n       xdp_daemon_check udpw SRV "
                    "TCPPORT UDPPORT\n       xdp_daemon_check race-udp SRV "
                    "TCPPORT UDPPORT SECONDS\n");
    return 2;
}
