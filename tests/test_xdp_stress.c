/*
 * test_xdp_stress.c - the consistency contract under concurrency, without a
 * network: a writer thread acknowledges new versions of a key (invalidating
 * the mirror under an exclusive "bucket lock" first, as the store's hook
 * does), filler threads copy the current version into the mirror under the
 * shared lock, another filler fights for the same slots with a colliding
 * key, and reader threads run the XDP program on GET packets
 * (BPF_PROG_TEST_RUN).  Fails on any reply that is torn, malformed, for the
 * wrong key, or older than the last version acknowledged before the GET was
 * sent (docs/xdp.md, "The consistency contract", rule 5).  Runs
 * MDC_XDP_STRESS_SECONDS (default 3) seconds, and longer until XDP has
 * answered a read of A (a ceiling of HANG_SECS).
 * MDC_XDP_STRESS_FRONT=N gives tier 0 a dense front of N slots (2: A and B
 * then share their front slot as well as their hashed ones;
 * tests/xdp_stress_front.sh).
 *
 * Needs root: otherwise prints "SKIP: ..." and exits 77.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "bpf/mirror.h"
#include "bpf/mirror_layout.h"
#include "bpf/xdp_pkt.h"

#define NFILL 2
#define NREAD 2
#define HANG_SECS 120

static struct mirror *M;
static char key_a[24] = "stress-A", key_b[24];

struct rec {
    pthread_rwlock_t lock; /* the record's bucket lock */
    uint64_t version;      /* under lock */
    int present;           /* under lock */
};
static struct rec A, B;
static uint64_t acked; /* last acknowledged version of A (atomic) */
static int stop;       /* atomic */
static uint64_t n_hits, n_pass, n_hits_b, n_writes, n_fills; /* atomic */
static const char *failure; /* first failure (atomic pointer) */
static char failure_buf[256];

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    va_list ap;

    pthread_mutex_lock(&mu);
    if (!__atomic_load_n(&failure, __ATOMIC_ACQUIRE)) {
        va_start(ap, fmt);
        vsnprintf(failure_buf, sizeof(failure_buf), fmt, ap);
        va_end(ap);
        __atomic_store_n(&failure, failure_buf, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&mu);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
}

/* Version v's value: its length moves the record between all three tiers;
 * every byte depends on v, so a mix of two versions cannot pass. */
static uint32_t gen(char tag, uint64_t v, char *buf)
{
    static const uint32_t sizes[] = {24, 200, 900, 1300};
    uint32_t n = sizes[v % 4], i;

    snprintf(buf, 24, "%c%020" PRIu64, tag, v);
    for (i = 21; i < n; i++)
        buf[i] = (char)(' ' + (v * 31 + i * 7) % 90);
    return n;
}

static void *writer(void *arg)
{
    uint64_t v;
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        pthread_rwlock_wrlock(&A.lock);
        mirror_invalidate(M, key_a, (uint32_t)strlen(key_a)); /* the hook */
        v = ++A.version;
        A.present = v % 7 != 0; /* every 7th write is a delete */
        pthread_rwlock_unlock(&A.lock);
        __atomic_store_n(&acked, v, __ATOMIC_RELEASE); /* acknowledged */
        __atomic_fetch_add(&n_writes, 1, __ATOMIC_RELAXED);
        usleep(20);
    }
    return NULL;
}

static void *filler(void *arg)
{
    struct rec *r = arg;
    const char *key = r == &A ? key_a : key_b;
    char buf[1400];
    uint32_t n;

    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        pthread_rwlock_rdlock(&r->lock);
        if (r->present) {
            n = gen(r == &A ? 'A' : 'B', r->version, buf);
            if (mirror_fill(M, key, (uint32_t)strlen(key), buf, n, 0, 0) == 0)
                __atomic_fetch_add(&n_fills, 1, __ATOMIC_RELAXED);
        }
        pthread_rwlock_unlock(&r->lock);
        if (r == &B) {
            /* B changes too, so its slot claims keep moving */
            pthread_rwlock_wrlock(&B.lock);
            mirror_invalidate(M, key_b, (uint32_t)strlen(key_b));
            B.version++;
            pthread_rwlock_unlock(&B.lock);
        }
        sched_yield();
    }
    return NULL;
}

/* Check one reply for 'key'; returns the version it carries. */
static uint64_t check_value(const uint8_t *req, const uint8_t *rep, size_t rlen,
                            const char *key, char tag)
{
    char head[64], want[1400];
    const uint8_t *pl, *data;
    size_t plen, hl;
    uint64_t v;
    uint32_t n, vlen;
    const char *why = check_reply(req, rep, rlen, &pl, &plen);

    if (why) {
        fail("reply for %s: %s", key, why);
        return 0;
    }
    if (plen < 8 + 30 || memcmp(pl, "\x12\x34\0\0\0\x01\0\0", 8) != 0) {
        fail("frame header of reply for %s", key);
        return 0;
    }
    /* "VALUE <key> 0 <n>\r\n" */
    if (sscanf((const char *)pl + 8, "VALUE %*s 0 %u\r\n", &vlen) != 1) {
        fail("reply for %s: no VALUE line", key);
        return 0;
    }
    hl = (size_t)snprintf(head, sizeof(head), "VALUE %s 0 %u\r\n", key, vlen);
    if (plen != 8 + hl + vlen + 7 || memcmp(pl + 8, head, hl) != 0 ||
        memcmp(pl + 8 + hl + vlen, "\r\nEND\r\n", 7) != 0) {
        fail("reply for %s: malformed (%zu bytes)", key, plen);
        return 0;
    }
    data = pl + 8 + hl;
    if (vlen < 21 || data[0] != tag) {
        fail("reply for %s carries another key's value", key);
        return 0;
    }
    memcpy(head, data + 1, 20);
    head[20] = 0;
    v = strtoull(head, NULL, 10);
    n = gen(tag, v, want);
    if (n != vlen || memcmp(want, data, n) != 0) {
        fail("TORN reply for %s: version %" PRIu64 " does not match", key, v);
        return 0;
    }
    return v;
}

static void *reader(void *arg)
{
    uint8_t req_a[PKT_MAX], req_b[PKT_MAX], out[2048];
    char pa[64], pb[64];
    struct req ra = {.payload = pa, .reqid = 0x1234};
    struct req rb = {.payload = pb, .reqid = 0x1234};
    size_t la, lb;
    uint64_t a, v;
    int fd = mirror_prog_fd(M);
    (void)arg;

    snprintf(pa, sizeof(pa), "get %s\r\n", key_a);
    snprintf(pb, sizeof(pb), "get %s\r\n", key_b);
    la = build_req(req_a, &ra);
    lb = build_req(req_b, &rb);
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = req_a,
                    .data_size_in = (__u32)la, .data_out = out,
                    .data_size_out = sizeof(out), .repeat = 1);
        a = __atomic_load_n(&acked, __ATOMIC_ACQUIRE); /* before sending */
        if (bpf_prog_test_run_opts(fd, &o) != 0) {
            fail("BPF_PROG_TEST_RUN: %s", strerror(errno));
            break;
        }
        if (o.retval == XDP_TX) {
            v = check_value(req_a, out, o.data_size_out, key_a, 'A');
            if (v && v < a)
                fail("STALE read: version %" PRIu64 " after %" PRIu64
                     " was acknowledged",
                     v, a);
            __atomic_fetch_add(&n_hits, 1, __ATOMIC_RELAXED);
        } else if (o.retval == XDP_PASS) {
            if (memcmp(out, req_a, la) != 0)
                fail("a passed packet was modified");
            __atomic_fetch_add(&n_pass, 1, __ATOMIC_RELAXED);
        } else {
            fail("verdict %u", o.retval);
        }
        {
            LIBBPF_OPTS(bpf_test_run_opts, ob, .data_in = req_b,
                        .data_size_in = (__u32)lb, .data_out = out,
                        .data_size_out = sizeof(out), .repeat = 1);
            if (bpf_prog_test_run_opts(fd, &ob) == 0 && ob.retval == XDP_TX) {
                check_value(req_b, out, ob.data_size_out, key_b, 'B');
                __atomic_fetch_add(&n_hits_b, 1, __ATOMIC_RELAXED);
            }
        }
    }
    return NULL;
}

/* Whether to go on at the i-th tenth of a second. */
static int running(int i, int secs)
{
    if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
        return 0;
    if (i < secs * 10)
        return 1;
    return __atomic_load_n(&n_hits, __ATOMIC_RELAXED) == 0 &&
           i < HANG_SECS * 10;
}

int main(void)
{
    pthread_t w, f[NFILL + 1], r[NREAD];
    pthread_rwlockattr_t la;
    struct mirror_config cfg;
    struct mirror_stats st;
    struct in_addr addr;
    const char *env = getenv("MDC_XDP_STRESS_SECONDS");
    const char *fenv = getenv("MDC_XDP_STRESS_FRONT");
    uint32_t front = fenv ? (uint32_t)atoi(fenv) : 0;
    int secs = env ? atoi(env) : 3, i, rc;
    char err[256];
    uint64_t ha;
    struct timespec t0, t1;

    if (geteuid() != 0) {
        printf("SKIP: the XDP stress test needs root (BPF_PROG_TEST_RUN)\n");
        return 77;
    }
    inet_pton(AF_INET, SRV_ADDR, &addr);
    memset(&cfg, 0, sizeof(cfg));
    cfg.mode = MIRROR_MODE_NONE;
    cfg.port = SRV_PORT;
    cfg.addrs = &addr;
    cfg.naddrs = 1;
    cfg.slots[0] = cfg.slots[1] = cfg.slots[2] = 4;
    cfg.slots_hot = front;
    cfg.mtu = 1500;
    rc = mirror_setup(&cfg, &M, err, sizeof(err));
    if (rc) {
        printf("%s: %s\n", rc == -EPERM ? "SKIP" : "FAIL", err);
        return rc == -EPERM ? 77 : 1;
    }
    /* B shares A's slot in every tier, and its front slot (with one) */
    ha = mirror_key_hash(M, key_a, (uint32_t)strlen(key_a));
    for (i = 0;; i++) {
        uint64_t x;

        snprintf(key_b, sizeof(key_b), "stress-%d", i);
        x = mirror_key_hash(M, key_b, (uint32_t)strlen(key_b)) ^ ha;
        if ((x & 3) == 0 && (front < 2 || ((x >> 32) & (front - 1)) == 0))
            break;
    }
    if (front) {
        mirror_stats(M, &st);
        printf("# tier 0: a front of %u slots, %u hashed\n", st.slots_hot,
               st.slots[0]);
        if (st.slots_hot != front) {
            printf("FAIL: front of %u slots, not %u\n", st.slots_hot, front);
            return 1;
        }
    }
    pthread_rwlockattr_init(&la);
    pthread_rwlockattr_setkind_np(&la,
                                  PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&A.lock, &la);
    pthread_rwlock_init(&B.lock, &la);
    A.present = B.present = 1;
    A.version = B.version = 1;
    acked = 1;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_create(&w, NULL, writer, NULL);
    for (i = 0; i < NFILL; i++)
        pthread_create(&f[i], NULL, filler, &A);
    pthread_create(&f[NFILL], NULL, filler, &B);
    for (i = 0; i < NREAD; i++)
        pthread_create(&r[i], NULL, reader, NULL);
    /* secs seconds, and on until the first read of A that XDP answers: on
     * a loaded machine a fill can stay rare and the writer's next
     * invalidation come before any reader runs (0 hits in 3 s under a load
     * average of 40).  HANG_SECS is a ceiling only a program that never
     * answers crosses. */
    for (i = 0; running(i, secs); i++)
        usleep(100000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(w, NULL);
    for (i = 0; i <= NFILL; i++)
        pthread_join(f[i], NULL);
    for (i = 0; i < NREAD; i++)
        pthread_join(r[i], NULL);

    mirror_stats(M, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %.1f s: %" PRIu64 " writes, %" PRIu64 " fills (%" PRIu64
           " busy), %" PRIu64 " invalidations; reads of A: %" PRIu64
           " hits, %" PRIu64 " passes; hits of B: %" PRIu64 "\n",
           (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           n_writes, n_fills, st.fill_busy, st.invalidations, n_hits, n_pass,
           n_hits_b);
    printf("# program: hits %" PRIu64 ", misses %" PRIu64 ", conflicts %" PRIu64
           "\n",
           st.xdp[MC_HIT], st.xdp[MC_MISS], st.xdp[MC_CONFLICT]);
    mirror_teardown(M);
    if (failure) {
        printf("FAIL: %s\n", failure);
        return 1;
    }
    if (n_hits == 0) {
        printf("FAIL: no read of A was ever answered by XDP\n");
        return 1;
    }
    printf("PASS: no torn, foreign or stale reply\n");
    return 0;
}
