/*
 * test_xdp.c - the XDP program on crafted packets (BPF_PROG_TEST_RUN) with
 * the mirror written through bpf/mirror.c: hits compared byte for byte
 * with mirror_reply_build() (what the userspace UDP path sends), and every
 * way a packet must pass untouched, each with the counter it moves.
 *
 * Needs root (CAP_BPF, CAP_NET_ADMIN): otherwise prints "SKIP: ..." and
 * exits 77.  No interface is involved (MIRROR_MODE_NONE).
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "bpf/mirror.h"
#include "bpf/mirror_layout.h"
#include "bpf/xdp_pkt.h"

static struct mirror *M;     /* tiers of 16 slots: collisions are easy */
static struct mirror *MHEAD; /* the same program growing at the head */
static uint8_t pkt[PKT_MAX], out[4096];

static uint32_t open_slots = 16; /* slots per tier of open_mirror() */
static uint32_t open_hot;        /* tier 0's dense front (0: default) */

static void open_mirror(struct mirror **m, unsigned flags)
{
    struct mirror_config cfg;
    struct in_addr a[2];
    char err[256];
    int rc;

    inet_pton(AF_INET, "192.0.2.99", &a[0]);
    inet_pton(AF_INET, SRV_ADDR, &a[1]);
    memset(&cfg, 0, sizeof(cfg));
    cfg.mode = MIRROR_MODE_NONE;
    cfg.port = SRV_PORT;
    cfg.addrs = a;
    cfg.naddrs = 2;
    cfg.slots[0] = cfg.slots[1] = cfg.slots[2] = open_slots;
    cfg.slots_hot = open_hot;
    cfg.mtu = 1500;
    cfg.flags = flags;
    rc = mirror_setup(&cfg, m, err, sizeof(err));
    if (rc) {
        printf("%s: %s\n", rc == -EPERM ? "SKIP" : "FAIL", err);
        exit(rc == -EPERM ? 77 : 1);
    }
}

static uint64_t counter(struct mirror *m, int c)
{
    struct mirror_stats st;
    assert_int_equal(mirror_stats(m, &st), 0);
    return st.xdp[c];
}

/* Run the program once; returns its verdict, the frame in out/outlen. */
static int run_on(struct mirror *m, const uint8_t *in, size_t len,
                  size_t *outlen)
{
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = (__u32)len,
                .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
    int rc = bpf_prog_test_run_opts(mirror_prog_fd(m), &o);

    assert_int_equal(rc, 0);
    *outlen = o.data_size_out;
    return (int)o.retval;
}

/* The packet must pass unchanged, moving counter c by one. */
static void expect_pass_on(struct mirror *m, const uint8_t *in, size_t len,
                           int c)
{
    uint64_t before = counter(m, c), hits = counter(m, MC_HIT);
    size_t olen;

    assert_int_equal(run_on(m, in, len, &olen), XDP_PASS);
    assert_int_equal(olen, len);
    assert_memory_equal(out, in, len);
    if (c >= 0)
        assert_int_equal(counter(m, c), before + 1);
    assert_int_equal(counter(m, MC_HIT), hits);
}

static void expect_pass(const struct req *r, int c)
{
    size_t len = build_req(pkt, r);
    expect_pass_on(M, pkt, len, c);
}

static char keybuf[512];

static const char *get_of(const char *key)
{
    snprintf(keybuf, sizeof(keybuf), "get %s\r\n", key);
    return keybuf;
}

/* GET key must be answered with exactly the userspace path's bytes. */
static void expect_hit_on(struct mirror *m, const char *key, uint32_t flags,
                          const void *val, uint32_t vlen, uint16_t reqid)
{
    struct req r = {.payload = get_of(key), .reqid = reqid};
    uint8_t want[2048];
    const uint8_t *pl;
    size_t len = build_req(pkt, &r), olen, wlen, plen;
    uint64_t hits = counter(m, MC_HIT);
    const char *why;

    assert_int_equal(run_on(m, pkt, len, &olen), XDP_TX);
    why = check_reply(pkt, out, olen, &pl, &plen);
    if (why)
        fail_msg("reply for %s: %s", key, why);
    wlen = mirror_reply_build(want, sizeof(want), reqid, key,
                              (uint32_t)strlen(key), flags, val, vlen);
    assert_true(wlen > 0);
    assert_int_equal(plen, wlen);
    assert_memory_equal(pl, want, wlen);
    assert_int_equal(counter(m, MC_HIT), hits + 1);
}

static void expect_hit(const char *key, uint32_t flags, const void *val,
                       uint32_t vlen)
{
    expect_hit_on(M, key, flags, val, vlen, 0xbeef);
}

static int fill(const char *key, const char *val, uint32_t flags)
{
    return mirror_fill(M, key, (uint32_t)strlen(key), val,
                       (uint32_t)strlen(val), flags, 0);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- tests --------------------------------------------------------------- */

static void test_reply_builder(void **state)
{
    static const char want[] = "\xbe\xef\0\0\0\x01\0\0"
                               "VALUE foo 5 3\r\nbar\r\nEND\r\n";
    uint8_t b[64];
    size_t n = mirror_reply_build(b, sizeof(b), 0xbeef, "foo", 3, 5, "bar", 3);

    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(b, want, n);
    assert_int_equal(mirror_reply_build(b, n - 1, 1, "foo", 3, 5, "bar", 3), 0);
    n = mirror_reply_build(b, sizeof(b), 7, "k", 1, 4294967295u, "", 0);
    assert_memory_equal(b + 8, "VALUE k 4294967295 0\r\n\r\nEND\r\n", n - 8);
}

/* The word-at-a-time key checks agree with a byte loop. */
static void test_swar(void **state)
{
    uint64_t w;
    uint8_t b[8];
    int i, j, bad, sp;

    srand(42);
    for (i = 0; i < 2000000; i++) {
        for (j = 0; j < 8; j++) {
            int r = rand();
            /* mostly valid bytes, with edge values mixed in */
            static const uint8_t edge[] = {0x00, 0x1f, 0x20, 0x21, 0x7e,
                                           0x7f, 0x80, 0xff, '\r', '\n'};
            b[j] = (r & 15) == 0 ? edge[(r >> 4) % 10]
                                 : (uint8_t)(0x21 + (r >> 4) % 94);
        }
        memcpy(&w, b, 8);
        bad = sp = 0;
        for (j = 0; j < 8; j++) {
            bad |= !mirror_key_byte_ok(b[j]);
            sp |= b[j] == ' ';
        }
        assert_int_equal(!!mirror_word_bad(w), bad);
        assert_int_equal(!!mirror_word_has_space(w), sp);
    }
}

static void test_verifier_figure(void **state)
{
    struct mirror_stats st;

    assert_int_equal(mirror_stats(M, &st), 0);
    printf("# verifier: %u instructions processed\n", st.verified_insns);
    assert_true(st.verified_insns > 0 && st.verified_insns < 100000);
}

static void test_hit_small(void **state)
{
    assert_int_equal(fill("foo", "bar", 5), 0);
    expect_hit("foo", 5, "bar", 3);
    /* the same key again, another request id */
    expect_hit_on(M, "foo", 5, "bar", 3, 1);
    /* an empty value and the largest flags */
    assert_int_equal(fill("empty", "", 4294967295u), 0);
    expect_hit("empty", 4294967295u, "", 0);
}

static void test_hit_tiers(void **state)
{
    static char v[1500];
    uint32_t n, fl = 0;
    const uint32_t sizes[] = {1, 50, 60, 200, 470, 471, 1000, 1420};
    char key[32];
    size_t i;

    for (i = 0; i < sizeof(v); i++)
        v[i] = (char)(i * 7 + 3); /* binary, \r and \n included */
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        n = sizes[i];
        snprintf(key, sizeof(key), "tier-key-%u", n);
        assert_int_equal(
            mirror_fill(M, key, (uint32_t)strlen(key), v, n, fl, 0), 0);
        expect_hit(key, fl, v, n);
        fl = fl * 10 + 7;
    }
}

/* Every key length around the inline limit (32 bytes) and every value
 * length through the small-reply writer and across the tier-0 boundary. */
static void test_hit_sweep(void **state)
{
    char key[48], val[128];
    uint32_t kl, vl, i;

    for (i = 0; i < sizeof(val); i++)
        val[i] = (char)('a' + i % 26);
    for (kl = 1; kl <= 40; kl++) {
        for (i = 0; i < kl; i++)
            key[i] = (char)('!' + (kl * 7 + i * 13) % 94);
        key[kl] = 0;
        assert_int_equal(mirror_fill(M, key, kl, val, kl, kl, 0), 0);
        expect_hit(key, kl, val, kl);
        /* the same length, one byte different: never answered */
        key[kl - 1] = key[kl - 1] == '~' ? '!' : (char)(key[kl - 1] + 1);
        {
            struct req r = {.payload = get_of(key)};
            uint64_t hits = counter(M, MC_HIT);
            size_t len = build_req(pkt, &r), olen;
            assert_int_equal(run_on(M, pkt, len, &olen), XDP_PASS);
            assert_int_equal(counter(M, MC_HIT), hits);
        }
    }
    for (vl = 0; vl <= 100; vl++) {
        snprintf(key, sizeof(key), "sweep-v");
        assert_int_equal(mirror_fill(M, key, 7, val, vl, vl * 3, 0), 0);
        expect_hit(key, vl * 3, val, vl);
    }
}

static void test_hit_padded_frame(void **state)
{
    struct req r = {.payload = "get p\r\n", .pad_to = 60};
    size_t len, olen, plen;
    const uint8_t *pl;

    assert_int_equal(fill("p", "padded", 0), 0);
    len = build_req(pkt, &r);
    assert_int_equal(len, 60);
    assert_int_equal(run_on(M, pkt, len, &olen), XDP_TX);
    assert_null(check_reply(pkt, out, olen, &pl, &plen));
    assert_memory_equal(pl + 8, "VALUE p 0 6\r\npadded\r\nEND\r\n", plen - 8);
}

static void test_key_limits(void **state)
{
    char key[260];
    struct req r = {0};

    memset(key, 'k', sizeof(key));
    key[250] = 0;
    assert_int_equal(fill(key, "long", 1), 0);
    expect_hit(key, 1, "long", 4);
    key[250] = 'k';
    key[251] = 0;
    assert_int_equal(fill(key, "toolong", 1), MIRROR_EINVAL);
    r.payload = get_of(key);
    expect_pass(&r, MC_KEY);
    /* bytes the program never answers for */
    assert_int_equal(fill("a\x01", "x", 0), MIRROR_EINVAL);
    r.payload = "get a\x01\r\n";
    expect_pass(&r, MC_KEY);
    r.payload = "get \xc3\xa9t\xc3\xa9\r\n";
    expect_pass(&r, MC_KEY);
    r.payload = "get a\tb\r\n";
    expect_pass(&r, MC_KEY);
}

static void test_miss(void **state)
{
    struct req r = {.payload = "get nosuchkey\r\n"};
    expect_pass(&r, MC_MISS);
}

static void test_invalidate(void **state)
{
    struct req r = {.payload = "get inv\r\n"};
    char v[300];

    assert_int_equal(fill("inv", "1", 0), 0);
    expect_hit("inv", 0, "1", 1);
    mirror_invalidate(M, "inv", 3);
    expect_pass(&r, MC_MISS);
    assert_int_equal(fill("inv", "2", 0), 0);
    expect_hit("inv", 0, "2", 1);
    mirror_store_hook(M, EV_DELETE, "inv", 3, 12345);
    expect_pass(&r, MC_MISS);
    /* a value that changes tier: the old copy must not survive */
    assert_int_equal(fill("inv", "3", 0), 0);
    memset(v, 'z', sizeof(v));
    assert_int_equal(mirror_fill(M, "inv", 3, v, sizeof(v), 0, 0), 0);
    expect_hit("inv", 0, v, sizeof(v));
    assert_int_equal(fill("inv", "4", 0), 0);
    expect_hit("inv", 0, "4", 1);
    mirror_invalidate(M, "inv", 3);
    expect_pass(&r, MC_MISS);
}

static void test_expired(void **state)
{
    struct req r = {.payload = "get exp\r\n"};

    assert_int_equal(mirror_fill(M, "exp", 3, "old", 3, 0, now_ns() - 1), 0);
    expect_pass(&r, MC_EXPIRED);
    assert_int_equal(
        mirror_fill(M, "exp", 3, "new", 3, 0, now_ns() + 60000000000ULL), 0);
    expect_hit("exp", 0, "new", 3);
}

static void test_oversize(void **state)
{
    static char v[1500];
    struct mirror_entry *e;
    struct req r = {.payload = "get big\r\n"};
    uint32_t s;

    memset(v, 'v', sizeof(v));
    /* 1500-byte MTU: 1472 bytes of UDP payload */
    assert_int_equal(mirror_fill(M, "big", 3, v, 1440, 0, 0), MIRROR_E2BIG);
    expect_pass(&r, MC_MISS);
    assert_int_equal(mirror_fill(M, "big", 3, v, 1435, 0, 0), 0);
    expect_hit("big", 0, v, 1435);
    /* an entry larger than a frame (only a bug could write one): the
     * program refuses it on its own */
    e = mirror_slot(M, 2, "big", 3);
    s = e->seq;
    e->seq = s + 1;
    e->blob_len = MIRROR_BLOB_MAX;
    e->seq = s + 2;
    expect_pass(&r, MC_TOO_BIG);
    mirror_invalidate(M, "big", 3);
}

static void test_truncated(void **state)
{
    struct req r = {.payload = "get trunc\r\n"};
    uint8_t full[PKT_MAX];
    size_t len, l, olen;

    assert_int_equal(fill("trunc", "t", 0), 0);
    len = build_req(full, &r);
    expect_hit("trunc", 0, "t", 1);
    /* every length short of the whole frame: headers cut at every byte */
    for (l = 14; l < len; l++) {
        uint64_t hits = counter(M, MC_HIT);
        memcpy(pkt, full, l);
        assert_int_equal(run_on(M, pkt, l, &olen), XDP_PASS);
        assert_int_equal(olen, l);
        assert_memory_equal(out, full, l);
        assert_int_equal(counter(M, MC_HIT), hits);
    }
    expect_pass_on(M, full, 14 + 19, MC_MALFORMED);         /* IP header */
    expect_pass_on(M, full, 14 + 20 + 7, MC_MALFORMED);     /* UDP header */
    expect_pass_on(M, full, 14 + 20 + 8 + 3, MC_MALFORMED); /* datagram */
    expect_pass_on(M, full, len - 1, MC_MALFORMED);
    /* (BPF_PROG_TEST_RUN itself refuses frames under 14 bytes) */
}

static void test_not_ip_udp(void **state)
{
    struct req r = {0};

    r.ethertype = 0x0806; /* ARP */
    expect_pass(&r, MC_NOT_IPV4);
    r.ethertype = 0x86dd; /* IPv6 */
    expect_pass(&r, MC_NOT_IPV4);
    r.ethertype = 0x8100; /* VLAN */
    expect_pass(&r, MC_NOT_IPV4);
    r.ethertype = 0;
    r.proto = 6; /* TCP */
    expect_pass(&r, MC_NOT_UDP);
    r.proto = 1; /* ICMP */
    expect_pass(&r, MC_NOT_UDP);
}

static void test_wrong_destination(void **state)
{
    struct req r = {0};

    assert_int_equal(fill("foo", "bar", 5), 0);
    r.dport = 11212;
    expect_pass(&r, MC_PORT);
    r.dport = 0;
    r.daddr = "10.11.0.3";
    expect_pass(&r, MC_ADDR);
    r.daddr = "192.0.2.99"; /* the second configured address */
    {
        size_t len = build_req(pkt, &r), olen, plen;
        const uint8_t *pl;
        assert_int_equal(run_on(M, pkt, len, &olen), XDP_TX);
        assert_null(check_reply(pkt, out, olen, &pl, &plen));
    }
}

static void test_ip_header(void **state)
{
    struct req r = {0};

    assert_int_equal(fill("foo", "bar", 5), 0);
    r.ihl = 6;
    expect_pass(&r, MC_IP_OPTIONS);
    r.ihl = 15;
    expect_pass(&r, MC_IP_OPTIONS);
    r.ihl = 0;
    r.frag_off = 0x2000; /* more fragments */
    expect_pass(&r, MC_FRAGMENT);
    r.frag_off = 0x0010; /* a later fragment */
    expect_pass(&r, MC_FRAGMENT);
    r.frag_off = 0;
    r.bad_ip_csum = 1;
    expect_pass(&r, MC_MALFORMED);
    r.bad_ip_csum = 0;
    r.udp_len_delta = -1;
    expect_pass(&r, MC_MALFORMED);
    r.udp_len_delta = 1;
    expect_pass(&r, MC_MALFORMED);
    r.udp_len_delta = 0;
    expect_hit("foo", 5, "bar", 3);
}

static void test_commands(void **state)
{
    struct req r = {0};
    static const char *const cmds[] = {
        "gets foo\r\n",    "GET foo\r\n",
        "get foo\n",       "get foo\r",
        "get foo bar\r\n", "get foo \r\n",
        "get  foo\r\n",    "get \r\n",
        "get\r\n",         "set foo 0 0 3\r\nbar\r\n",
        "gat 0 foo\r\n",   "get",
        "delete foo\r\n",
    };
    size_t i;

    assert_int_equal(fill("foo", "bar", 5), 0);
    assert_int_equal(fill("bar", "foo", 5), 0);
    for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        r.payload = cmds[i];
        expect_pass(&r, MC_CMD);
    }
    /* two commands in one datagram: "\r\n" inside the would-be key */
    r.payload = "get foo\r\nget bar\r\n";
    expect_pass(&r, MC_KEY);
}

static void test_frame_header(void **state)
{
    struct req r = {0};
    static const uint8_t bad[][8] = {
        {0, 0, 0, 1, 0, 1, 0, 0}, /* sequence 1 */
        {0, 0, 0, 0, 0, 2, 0, 0}, /* 2 datagrams */
        {0, 0, 0, 0, 0, 0, 0, 0}, /* 0 datagrams */
        {0, 0, 0, 0, 1, 1, 0, 0}, /* 257 datagrams */
        {0, 0, 0, 0, 0, 1, 0, 1}, /* reserved */
        {0, 0, 1, 0, 0, 1, 0, 0},
    };
    size_t i, len;

    assert_int_equal(fill("foo", "bar", 5), 0);
    r.set_frame = 1;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memcpy(r.frame, bad[i], 8);
        expect_pass(&r, MC_FRAME);
    }
    /* a datagram shorter than the frame header */
    r.set_frame = 0;
    r.payload = "";
    len = build_req(pkt, &r);
    (void)len;
    {
        /* 4 bytes of UDP payload: rebuild lengths by hand */
        uint8_t *ip = pkt + 14, *udp = ip + 20;
        put16(ip + 2, 20 + 8 + 4);
        put16(ip + 10, 0);
        put16(ip + 10, (uint16_t)~fold(sum_be(ip, 20, 0)));
        put16(udp + 4, 12);
        expect_pass_on(M, pkt, 14 + 20 + 8 + 4, MC_FRAME);
    }
}

static void test_conflict(void **state)
{
    struct req r = {.payload = "get cfl\r\n"};
    struct mirror_entry *e;
    size_t len;

    assert_int_equal(fill("cfl", "value", 0), 0);
    expect_hit("cfl", 0, "value", 5);
    e = mirror_slot(M, 0, "cfl", 3);
    assert_non_null(e);
    __atomic_fetch_add(&e->seq, 1, __ATOMIC_SEQ_CST); /* a writer is in */
    len = build_req(pkt, &r);
    expect_pass_on(M, pkt, len, MC_CONFLICT);
    /* the library's fill gives way, invalidation skips it harmlessly */
    assert_int_equal(fill("cfl", "other", 0), MIRROR_EBUSY);
    __atomic_fetch_add(&e->seq, 1, __ATOMIC_SEQ_CST); /* writer done */
    expect_hit("cfl", 0, "value", 5);
}

/* Two keys sharing a slot, and an entry whose hash matches another key. */
static void test_slot_reuse(void **state)
{
    char a[32], b[32];
    struct mirror_entry *ea, *eb;
    struct req r = {0};
    uint32_t mask = 15, i, s;
    uint64_t ha;

    snprintf(a, sizeof(a), "reuse-a");
    ha = mirror_key_hash(M, a, 7);
    for (i = 0;; i++) {
        snprintf(b, sizeof(b), "r-%05u", i);
        if (((uint32_t)mirror_key_hash(M, b, 7) & mask) ==
            ((uint32_t)ha & mask))
            break;
        assert_true(i < 99999);
    }
    assert_int_equal(fill(a, "AAAA", 1), 0);
    expect_hit(a, 1, "AAAA", 4);
    assert_int_equal(fill(b, "BBBB", 2), 0); /* replaces a in the slot */
    expect_hit(b, 2, "BBBB", 4);
    r.payload = get_of(a);
    expect_pass(&r, MC_MISS);

    /* b's entry relabelled with a's hash: lookup matches, key must not */
    ea = mirror_slot(M, 0, a, 7);
    eb = mirror_slot(M, 0, b, 7);
    assert_ptr_equal(ea, eb);
    s = eb->seq;
    eb->seq = s + 1;
    eb->hash = ha;
    eb->seq = s + 2;
    r.payload = get_of(a);
    expect_pass(&r, MC_MISS);
    r.payload = get_of(b);
    expect_pass(&r, MC_MISS); /* hash no longer b's */
}

/* The key's hash selects its slot, nothing in front of it: a tier-0 hit
 * reads one 128-byte slot, two whole cache lines (docs/xdp.md, "The
 * mirror").  Slots sit at (hash & mask) * 128 from a 64-byte aligned base,
 * so the distance between two keys' slots is that of their positions. */
static void test_direct_slots(void **state)
{
    enum { N = 64, SLOTS = 4096 };
    static uint8_t used[SLOTS];
    struct mirror_entry *e[N];
    struct mirror *big;
    uint32_t pos[N];
    char keys[N][32];
    int i, n = 0, c;

    open_slots = SLOTS;
    open_mirror(&big, 0);
    open_slots = 16;
    memset(used, 0, sizeof(used));
    for (c = 0; n < N; c++) {
        snprintf(keys[n], sizeof(keys[n]), "direct-%d", c);
        pos[n] = (uint32_t)mirror_key_hash(big, keys[n], strlen(keys[n])) &
                 (SLOTS - 1);
        if (!used[pos[n]]) {
            used[pos[n]] = 1;
            n++;
        }
    }
    for (i = 0; i < N; i++)
        assert_int_equal(mirror_fill(big, keys[i], (uint32_t)strlen(keys[i]),
                                     "v", 1, 0, 0), 0);
    for (i = 0; i < N; i++) {
        expect_hit_on(big, keys[i], 0, "v", 1, (uint16_t)i);
        e[i] = mirror_slot(big, 0, keys[i], (uint32_t)strlen(keys[i]));
        assert_non_null(e[i]);
        assert_int_equal((uintptr_t)e[i] % 64, 0);
        assert_int_equal(e[i]->hash,
                         mirror_key_hash(big, keys[i], strlen(keys[i])));
        assert_true((intptr_t)((uint8_t *)e[i] - (uint8_t *)e[0]) ==
                    ((intptr_t)pos[i] - (intptr_t)pos[0]) * MIRROR_SLOT0);
    }
    mirror_teardown(big);
}

/* An entry's sequence, hash and length as one snapshot of the slot. */
static uint64_t slot_hash(void *slot)
{
    struct mirror_entry *e = slot;

    return e->blob_len ? e->hash : 0;
}

/*
 * Tier 0's dense front (docs/xdp.md, "The mirror"), here of 2 slots: every
 * key's two front slots are both of them.  Keys a and b fill the front,
 * c then lives in its hashed slot; all three are answered, each with its
 * own bytes; invalidating any of them, wherever it sits, makes its next GET
 * a miss and leaves the others answered; a fill moving a key into the
 * front drops its hashed copy; a front slot whose hash is relabelled as
 * another key's is never answered for it; a front slot being written is a
 * conflict, and a fill of another key meanwhile goes to its hashed slot.
 */
static int in_front(struct mirror *h, const char *k, uint64_t hk)
{
    uint32_t kl = (uint32_t)strlen(k);

    return (slot_hash(mirror_slot_hot(h, k, kl, 0)) == hk) +
           (slot_hash(mirror_slot_hot(h, k, kl, 1)) == hk);
}

static void test_hot_front(void **state)
{
    struct mirror *h;
    struct req r = {0};
    char a[32], k[4][32]; /* b, c, d (never filled), e */
    uint64_t ha, hk[4];
    void *ca, *ck[4];
    struct mirror_entry *fb;
    uint32_t i, s, n = 0, used = 0;
    struct mirror_stats st;
    size_t len;

    open_hot = 2;
    open_mirror(&h, 0);
    open_hot = 0;
    assert_int_equal(mirror_stats(h, &st), 0);
    assert_int_equal(st.slots_hot, 2);
    assert_int_equal(st.slots[0], 16);
    /* the front is mapped with the tier (each tier rounded to pages) */
    assert_true(st.mem_bytes >= (16 + 2) * MIRROR_SLOT0 +
                                    16 * MIRROR_SLOT1 + 16 * MIRROR_SLOT2);
    snprintf(a, sizeof(a), "front-a");
    ha = mirror_key_hash(h, a, 7);
    used = 1u << (ha & 15);
    /* b, c, d, e: 8 bytes, hashed slots distinct from a's and each
     * other's; b's first front slot a's (so b takes its second) */
    for (i = 0; n < 4; i++) {
        snprintf(k[n], 32, "fr-%05u", i);
        hk[n] = mirror_key_hash(h, k[n], 8);
        if (n == 0 && ((hk[0] ^ ha) >> 32 & 1))
            continue;
        if (!(used & (1u << (hk[n] & 15)))) {
            used |= 1u << (hk[n] & 15);
            n++;
        }
        assert_true(i < 99999);
    }
    ca = mirror_slot(h, 0, a, 7);
    for (i = 0; i < 4; i++)
        ck[i] = mirror_slot(h, 0, k[i], 8);
    /* the front comes first in the map, its two slots a key's two */
    assert_ptr_not_equal(mirror_slot_hot(h, a, 7, 0),
                         mirror_slot_hot(h, a, 7, 1));
    assert_true((uint8_t *)ca >=
                (uint8_t *)mirror_slot_hot(h, a, 7, 0) + MIRROR_SLOT0);

    assert_int_equal(mirror_fill(h, a, 7, "A1", 2, 1, 0), 0);
    assert_int_equal(mirror_fill(h, k[0], 8, "B1", 2, 2, 0), 0);
    assert_int_equal(mirror_fill(h, k[1], 8, "C1", 2, 3, 0), 0);
    assert_int_equal(in_front(h, a, ha), 1); /* first come keep the front */
    assert_int_equal(slot_hash(mirror_slot_hot(h, k[0], 8, 1)), hk[0]);
    assert_int_equal(in_front(h, k[1], hk[1]), 0);
    assert_int_equal(slot_hash(ck[1]), hk[1]);
    assert_int_equal(slot_hash(ca), 0);
    expect_hit_on(h, a, 1, "A1", 2, 1);
    expect_hit_on(h, k[0], 2, "B1", 2, 2);
    expect_hit_on(h, k[1], 3, "C1", 2, 3);

    /* a write of c (in its hashed slot): invalidated, then refilled */
    mirror_invalidate(h, k[1], 8);
    r.payload = get_of(k[1]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    expect_hit_on(h, a, 1, "A1", 2, 4);
    expect_hit_on(h, k[0], 2, "B1", 2, 5);
    assert_int_equal(mirror_fill(h, k[1], 8, "C2", 2, 3, 0), 0);
    expect_hit_on(h, k[1], 3, "C2", 2, 6);

    /* a write of a (in the front): the others stay where they are */
    mirror_store_hook(h, EV_SET, a, 7, 0);
    r.payload = get_of(a);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    assert_int_equal(in_front(h, a, ha), 0);
    expect_hit_on(h, k[1], 3, "C2", 2, 7);

    /* the next fill of c takes the free front slot and drops its hashed
     * copy (no invalidation first, as test_invalidate changes tiers: only
     * the library's own drop removes it) */
    assert_int_equal(slot_hash(ck[1]), hk[1]);
    assert_int_equal(mirror_fill(h, k[1], 8, "C3", 2, 3, 0), 0);
    assert_int_equal(in_front(h, k[1], hk[1]), 1);
    assert_int_equal(slot_hash(ck[1]), 0);
    expect_hit_on(h, k[1], 3, "C3", 2, 8);
    /* a refill of c while it holds a front slot stays there */
    assert_int_equal(mirror_fill(h, k[1], 8, "C3", 2, 3, 0), 0);
    assert_int_equal(in_front(h, k[1], hk[1]), 1);
    assert_int_equal(slot_hash(ck[1]), 0);
    /* a now goes to its hashed slot */
    assert_int_equal(mirror_fill(h, a, 7, "A2", 2, 1, 0), 0);
    assert_int_equal(slot_hash(ca), ha);
    expect_hit_on(h, a, 1, "A2", 2, 9);
    expect_hit_on(h, k[0], 2, "B1", 2, 10);

    /* b's front entry relabelled with d's hash (d: as long as b, never
     * mirrored, its front slots the same two): a lookup of d finds its
     * hash there, the full key differs - never b's bytes for d; nor is b
     * found any more */
    fb = slot_hash(mirror_slot_hot(h, k[0], 8, 0)) == hk[0]
             ? mirror_slot_hot(h, k[0], 8, 0)
             : mirror_slot_hot(h, k[0], 8, 1);
    assert_int_equal(slot_hash(fb), hk[0]);
    s = fb->seq;
    fb->seq = s + 1;
    fb->hash = hk[2];
    fb->seq = s + 2;
    r.payload = get_of(k[2]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    r.payload = get_of(k[0]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    fb->seq = s + 3;
    fb->hash = hk[0];
    fb->seq = s + 4;
    expect_hit_on(h, k[0], 2, "B1", 2, 11);

    /* b's front slot being written: b's GET conflicts, e's fill goes to
     * its hashed slot (the other front slot holds c) */
    __atomic_fetch_add(&fb->seq, 1, __ATOMIC_SEQ_CST);
    r.payload = get_of(k[0]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_CONFLICT);
    assert_int_equal(mirror_fill(h, k[3], 8, "E1", 2, 4, 0), 0);
    assert_int_equal(slot_hash(ck[3]), hk[3]);
    __atomic_fetch_add(&fb->seq, 1, __ATOMIC_SEQ_CST);
    expect_hit_on(h, k[0], 2, "B1", 2, 12);
    expect_hit_on(h, k[3], 4, "E1", 2, 13);
    expect_hit_on(h, k[1], 3, "C3", 2, 14);
    expect_hit_on(h, a, 1, "A2", 2, 15);

    /* a write of b (in its second front slot) */
    mirror_invalidate(h, k[0], 8);
    r.payload = get_of(k[0]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    expect_hit_on(h, k[1], 3, "C3", 2, 16);

    /* usage counts both parts; clear empties both */
    {
        uint64_t ent, bytes;

        mirror_usage(h, &ent, &bytes);
        assert_int_equal(ent, 3);
        mirror_clear(h);
        mirror_usage(h, &ent, &bytes);
        assert_int_equal(ent, 0);
    }
    r.payload = get_of(k[0]);
    len = build_req(pkt, &r);
    expect_pass_on(h, pkt, len, MC_MISS);
    mirror_teardown(h);
}

/* The library's default front: 2048 slots in front of a tier of 8192 or
 * more, none in front of a smaller one (already dense) or when refused. */
static void test_hot_default(void **state)
{
    struct mirror *h;
    struct mirror_stats st;

    open_slots = 8192;
    open_mirror(&h, 0);
    assert_int_equal(mirror_stats(h, &st), 0);
    assert_int_equal(st.slots_hot, 2048);
    assert_int_equal(st.slots[0], 8192);
    assert_true(mirror_fill(h, "d", 1, "v", 1, 0, 0) == 0);
    expect_hit_on(h, "d", 0, "v", 1, 1);
    assert_int_equal(slot_hash(mirror_slot_hot(h, "d", 1, 0)),
                     mirror_key_hash(h, "d", 1));
    mirror_teardown(h);
    open_hot = MIRROR_HOT_NONE;
    open_mirror(&h, 0);
    open_hot = 0;
    open_slots = 16;
    assert_int_equal(mirror_stats(h, &st), 0);
    assert_int_equal(st.slots_hot, 0);
    assert_null(mirror_slot_hot(h, "d", 1, 0));
    mirror_teardown(h);
}

static void test_clear(void **state)
{
    struct req r = {.payload = "get foo\r\n"};
    uint64_t n, bytes;

    assert_int_equal(fill("foo", "bar", 5), 0);
    mirror_usage(M, &n, &bytes);
    assert_true(n > 0 && bytes >= 6);
    mirror_clear(M);
    mirror_usage(M, &n, &bytes);
    assert_int_equal(n, 0);
    expect_pass(&r, MC_MISS);
}

/* Growth at the head (what native veth needs), and its limit. */
static void test_grow_head(void **state)
{
    static char v[1400];
    struct req r = {.payload = "get h\r\n"};
    size_t len;

    memset(v, 'h', sizeof(v));
    assert_int_equal(mirror_fill(MHEAD, "h", 1, v, 100, 3, 0), 0);
    {
        uint64_t g = counter(MHEAD, MC_GROW_HEAD);
        expect_hit_on(MHEAD, "h", 3, v, 100, 77);
        assert_int_equal(counter(MHEAD, MC_GROW_HEAD), g + 1);
    }
    /* more than the headroom: passes untouched, counted */
    assert_int_equal(mirror_fill(MHEAD, "h", 1, v, 1000, 3, 0), 0);
    len = build_req(pkt, &r);
    expect_pass_on(MHEAD, pkt, len, MC_NO_ROOM);
}

/* The counters stay readable and the mirror writable after the daemon drops
 * root (it attaches first, then becomes nobody). */
static void test_after_privdrop(void **state)
{
    pid_t pid = fork();
    int status;

    assert_true(pid >= 0);
    if (pid == 0) {
        struct mirror_stats st;
        if (setgid(65534) || setuid(65534))
            _exit(2);
        if (mirror_stats(M, &st) != 0 || st.verified_insns == 0)
            _exit(3);
        if (mirror_fill(M, "priv", 4, "drop", 4, 0, 0) != 0)
            _exit(4);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    expect_hit("priv", 0, "drop", 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_builder),
        cmocka_unit_test(test_swar),
        cmocka_unit_test(test_verifier_figure),
        cmocka_unit_test(test_hit_small),
        cmocka_unit_test(test_hit_tiers),
        cmocka_unit_test(test_hit_sweep),
        cmocka_unit_test(test_hit_padded_frame),
        cmocka_unit_test(test_key_limits),
        cmocka_unit_test(test_miss),
        cmocka_unit_test(test_invalidate),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_oversize),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_not_ip_udp),
        cmocka_unit_test(test_wrong_destination),
        cmocka_unit_test(test_ip_header),
        cmocka_unit_test(test_commands),
        cmocka_unit_test(test_frame_header),
        cmocka_unit_test(test_conflict),
        cmocka_unit_test(test_slot_reuse),
        cmocka_unit_test(test_direct_slots),
        cmocka_unit_test(test_hot_front),
        cmocka_unit_test(test_hot_default),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_grow_head),
        cmocka_unit_test(test_after_privdrop),
    };
    int rc;

    if (geteuid() != 0) {
        printf("SKIP: the XDP tests need root (BPF_PROG_TEST_RUN)\n");
        return 77;
    }
    open_mirror(&M, 0);
    open_mirror(&MHEAD, MIRROR_F_HEAD_ONLY);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    mirror_teardown(MHEAD);
    mirror_teardown(M);
    return rc;
}
