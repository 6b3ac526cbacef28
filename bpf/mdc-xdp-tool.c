/*
 * mdc-xdp-tool - XDP helpers for measurement and tests (not installed).
 *
 *   mdc-xdp-tool bounce -i IF -p PORT [-m MODE]
 *       attach the bare bounce-back program (docs/benchmarking.md, W8 (d))
 *   mdc-xdp-tool pass -i IF [-m MODE]
 *       attach an XDP_PASS program (the client end of a native veth pair)
 *   mdc-xdp-tool mirror -i IF -p PORT -a ADDR [-a ADDR..] [-m MODE]
 *       a stand-alone mirror with a tiny userspace UDP GET server behind it,
 *       driven by commands on stdin - what tests/xdp_e2e.sh runs until the
 *       daemon serves UDP itself:
 *         set KEY VALUE [FLAGS [TTL_MS]]   del KEY   stats   quit
 *       A GET the program passes is answered here from the table (the
 *       userspace path, byte for byte mirror_reply_build()) and the record
 *       is then copied into the mirror, as the daemon does.
 *
 *   mdc-xdp-tool progbench [-n REPEAT] [-v VLEN] [-k HOTKEYS] [-s SLOTS]
 *                          [-H FRONT_SLOTS]
 *       the programs' own cost through BPF_PROG_TEST_RUN: mdc_xdp on a hit
 *       (tail and head growth) and a miss, mdc_bounce; ns per run (JSON);
 *       -s: slots of the 128-byte tier (how many pages the hot keys span);
 *       -H: slots of its dense front (0: the library's default,
 *       0xffffffff: none)
 *
 * MODE: auto (default), native, generic.  Each program stays attached
 * through a bpf_link held by this process: it goes when the process goes.
 * "ready <mode> prog_id=<id>" is printed once attached.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/mdc_bounce.skel.h"
#include "mirror.h"
#include "xdp_pkt.h"

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
    (void)sig;
    quit = 1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mdc-xdp-tool bounce|pass|mirror -i IF [-m auto|native|"
            "generic] [-p PORT] [-a ADDR]...\n");
    exit(2);
}

static enum mirror_mode parse_mode(const char *s)
{
    if (!strcmp(s, "auto"))
        return MIRROR_MODE_AUTO;
    if (!strcmp(s, "native"))
        return MIRROR_MODE_NATIVE;
    if (!strcmp(s, "generic"))
        return MIRROR_MODE_GENERIC;
    usage();
    return MIRROR_MODE_AUTO;
}

static uint32_t prog_id(int fd)
{
    struct bpf_prog_info info;
    __u32 len = sizeof(info);

    memset(&info, 0, sizeof(info));
    return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* bounce / pass: attach one program of the bounce object and wait. */
static int run_simple(int bounce, const char *ifname, enum mirror_mode mode,
                      uint16_t port)
{
    struct mdc_bounce *skel;
    int ifindex = (int)if_nametoindex(ifname), prog, fd = -1;
    const char *how = "native";

    if (!ifindex) {
        fprintf(stderr, "mdc-xdp-tool: no interface '%s'\n", ifname);
        return 1;
    }
    skel = mdc_bounce__open();
    if (!skel)
        return 1;
    skel->rodata->bounce_port = htons(port);
    if (mdc_bounce__load(skel)) {
        fprintf(stderr, "mdc-xdp-tool: load failed: %s\n", strerror(errno));
        return 1;
    }
    prog =
        bpf_program__fd(bounce ? skel->progs.mdc_bounce : skel->progs.mdc_pass);
    if (mode != MIRROR_MODE_GENERIC) {
        LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_DRV_MODE);
        fd = bpf_link_create(prog, ifindex, BPF_XDP, &o);
    }
    if (fd < 0 && mode != MIRROR_MODE_NATIVE) {
        LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_SKB_MODE);
        fd = bpf_link_create(prog, ifindex, BPF_XDP, &o);
        how = "generic";
    }
    if (fd < 0) {
        fprintf(stderr, "mdc-xdp-tool: attach to %s: %s\n", ifname,
                strerror(errno));
        return 1;
    }
    printf("ready %s prog_id=%u\n", how, prog_id(prog));
    fflush(stdout);
    while (!quit)
        pause();
    close(fd);
    mdc_bounce__destroy(skel);
    return 0;
}

/* ---- the stand-alone mirror -------------------------------------------- */

struct item {
    char key[251];
    uint32_t klen, flags, vlen;
    uint64_t deadline; /* CLOCK_MONOTONIC ns, 0 = never */
    char *value;
};

#define NITEMS 64
static struct item items[NITEMS];
static struct mirror *M;
static uint64_t udp_gets, udp_hits;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct item *find(const char *key, size_t klen)
{
    int i;
    for (i = 0; i < NITEMS; i++)
        if (items[i].value && items[i].klen == klen &&
            !memcmp(items[i].key, key, klen))
            return &items[i];
    return NULL;
}

static void drop_item(struct item *it)
{
    mirror_invalidate(M, it->key, it->klen); /* before it changes */
    free(it->value);
    it->value = NULL;
}

static void command(char *line)
{
    char *cmd = strtok(line, " \n"), *key, *val, *fl, *ttl;
    struct item *it;
    struct mirror_stats st;
    unsigned i;

    if (!cmd)
        return;
    if (!strcmp(cmd, "set")) {
        key = strtok(NULL, " \n");
        val = strtok(NULL, " \n");
        fl = strtok(NULL, " \n");
        ttl = strtok(NULL, " \n");
        if (!key || !val || strlen(key) > 250) {
            printf("ERROR\n");
            return;
        }
        it = find(key, strlen(key));
        if (it)
            drop_item(it);
        for (i = 0; i < NITEMS && items[i].value; i++)
            ;
        if (i == NITEMS) {
            printf("ERROR full\n");
            return;
        }
        it = &items[i];
        it->klen = (uint32_t)strlen(key);
        memcpy(it->key, key, it->klen);
        it->value = strdup(val);
        it->vlen = (uint32_t)strlen(val);
        it->flags = fl ? (uint32_t)strtoul(fl, NULL, 10) : 0;
        it->deadline = ttl ? mono_ns() + strtoull(ttl, NULL, 10) * 1000000 : 0;
        printf("STORED\n");
    } else if (!strcmp(cmd, "del")) {
        key = strtok(NULL, " \n");
        it = key ? find(key, strlen(key)) : NULL;
        if (it)
            drop_item(it);
        printf(it ? "DELETED\n" : "NOT_FOUND\n");
    } else if (!strcmp(cmd, "stats")) {
        mirror_stats(M, &st);
        for (i = 0; i < MIRROR_NCOUNTERS; i++)
            printf("STAT %s %llu\n", mirror_counter_name(i),
                   (unsigned long long)st.xdp[i]);
        printf("STAT fills %llu\nSTAT invalidations %llu\n",
               (unsigned long long)st.fills,
               (unsigned long long)st.invalidations);
        printf("STAT udp_gets %llu\nSTAT udp_hits %llu\n",
               (unsigned long long)udp_gets, (unsigned long long)udp_hits);
        printf("STAT mode %s\nSTAT verified_insns %u\nEND\n", st.mode,
               st.verified_insns);
    } else if (!strcmp(cmd, "quit")) {
        quit = 1;
    } else {
        printf("ERROR\n");
    }
    fflush(stdout);
}

/* The userspace UDP path: "get <key>\r\n" only, memcached's replies. */
static void serve_udp(int fd)
{
    uint8_t in[1500], out[1500];
    struct sockaddr_in peer;
    socklen_t plen = sizeof(peer);
    ssize_t n =
        recvfrom(fd, in, sizeof(in), 0, (struct sockaddr *)&peer, &plen);
    const char *cmd = (const char *)in + 8;
    size_t olen = 0, clen;
    struct item *it;

    if (n < 8)
        return;
    clen = (size_t)n - 8;
    memcpy(out, in, 2);
    memcpy(out + 2, "\0\0\0\x01\0\0", 6);
    if (clen > 6 && !memcmp(cmd, "get ", 4) &&
        !memcmp(cmd + clen - 2, "\r\n", 2)) {
        udp_gets++;
        it = find(cmd + 4, clen - 6);
        if (it && it->deadline && mono_ns() >= it->deadline) {
            drop_item(it); /* expiry is a mutation too */
            it = NULL;
        }
        if (it) {
            udp_hits++;
            olen = mirror_reply_build(out, sizeof(out),
                                      (uint16_t)(in[0] << 8 | in[1]), it->key,
                                      it->klen, it->flags, it->value, it->vlen);
            /* single-threaded: nothing can change the item meanwhile */
            mirror_fill(M, it->key, it->klen, it->value, it->vlen, it->flags,
                        it->deadline);
        }
        if (!olen) {
            memcpy(out + 8, "END\r\n", 5);
            olen = 13;
        }
    } else {
        memcpy(out + 8, "ERROR\r\n", 7);
        olen = 15;
    }
    sendto(fd, out, olen, 0, (struct sockaddr *)&peer, plen);
}

static int run_mirror(const char *ifname, enum mirror_mode mode, uint16_t port,
                      struct in_addr *addrs, size_t naddrs)
{
    struct mirror_config cfg;
    struct mirror_stats st;
    struct sockaddr_in sa;
    struct pollfd pfd[2];
    char err[256], line[2048];
    int fd, one = 1;

    memset(&cfg, 0, sizeof(cfg));
    cfg.ifname = ifname;
    cfg.mode = mode;
    cfg.port = port;
    cfg.addrs = addrs;
    cfg.naddrs = naddrs;
    if (mirror_setup(&cfg, &M, err, sizeof(err))) {
        fprintf(stderr, "mdc-xdp-tool: %s\n", err);
        return 1;
    }
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr = addrs[0];
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        fprintf(stderr, "mdc-xdp-tool: bind: %s\n", strerror(errno));
        return 1;
    }
    mirror_stats(M, &st);
    printf("ready %s prog_id=%u verified_insns=%u\n", st.mode,
           prog_id(mirror_prog_fd(M)), st.verified_insns);
    fflush(stdout);
    pfd[0].fd = 0;
    pfd[0].events = POLLIN;
    pfd[1].fd = fd;
    pfd[1].events = POLLIN;
    while (!quit) {
        if (poll(pfd, 2, 200) < 0 && errno != EINTR)
            break;
        if (pfd[1].revents & POLLIN)
            serve_udp(fd);
        if (pfd[0].revents & (POLLIN | POLLHUP)) {
            if (!fgets(line, sizeof(line), stdin))
                break;
            command(line);
        }
    }
    close(fd);
    mirror_teardown(M);
    return 0;
}

/* ---- progbench: the programs' own cost through BPF_PROG_TEST_RUN ------- */

static uint32_t test_run(int fd, const uint8_t *in, size_t len, int repeat,
                         int *verdict)
{
    static uint8_t out[PKT_MAX + 512];
    LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = (__u32)len,
                .data_out = out, .data_size_out = sizeof(out),
                .repeat = repeat);

    if (bpf_prog_test_run_opts(fd, &o)) {
        fprintf(stderr, "mdc-xdp-tool: test run: %s\n", strerror(errno));
        exit(1);
    }
    *verdict = (int)o.retval;
    return o.duration;
}

/*
 * mdc_xdp on a hit (growing the frame at the tail, and at the head only as
 * native veth does), on a miss, and mdc_bounce on the same request.  A
 * test run with repeat > 1 would run again on the frame the previous run
 * rewrote (a reply, which passes), so each figure is the median of 'repeat'
 * single runs as the kernel times them (one clock read pair per run
 * included, as in run_time_ns).
 */
/* The kernel's own statistics of a program (kernel.bpf_stats_enabled=1;
 * test runs count too): run time and run count so far. */
static void prog_stats(int fd, uint64_t *ns, uint64_t *cnt)
{
    struct bpf_prog_info info;
    uint32_t len = sizeof(info);

    memset(&info, 0, sizeof(info));
    *ns = *cnt = 0;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
        *ns = info.run_time_ns;
        *cnt = info.run_cnt;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * -k N: N hot keys "hot:<i>" filled, and the hit runs cycle through their
 * requests in a scattered order (the cost per hit once the working set is
 * larger than one key); the single-key figures are unchanged.
 */
static unsigned hotkeys, slots0, slots_hot;

static int run_progbench(int repeat, unsigned vlen)
{
    static uint8_t pkt[PKT_MAX], pmiss[PKT_MAX];
    static const char *const what[4] = {"hit (tail growth)",
                                        "hit (head growth)", "miss", "bounce"};
    struct mirror *m[2] = {NULL, NULL};
    struct mdc_bounce *bsk;
    struct mirror_config cfg;
    struct in_addr a;
    struct req r;
    char err[256], val[1500];
    uint32_t best[4];
    uint64_t ns0, c0, ns1, c1;
    double stat[4];
    struct mirror_stats ms;
    const char *key = "key:00000001";
    int i, k, fd, v, want[4] = {XDP_TX, XDP_TX, XDP_PASS, XDP_TX};
    size_t len, mlen;

    if (vlen >= sizeof(val))
        vlen = sizeof(val) - 1;
    memset(val, 'v', vlen);
    inet_pton(AF_INET, SRV_ADDR, &a);
    for (i = 0; i < 2; i++) {
        memset(&cfg, 0, sizeof(cfg));
        cfg.mode = MIRROR_MODE_NONE;
        cfg.port = SRV_PORT;
        cfg.addrs = &a;
        cfg.naddrs = 1;
        cfg.mtu = 1500;
        cfg.flags = i ? MIRROR_F_HEAD_ONLY : 0;
        cfg.slots[0] = slots0;
        cfg.slots_hot = slots_hot;
        if (mirror_setup(&cfg, &m[i], err, sizeof(err))) {
            fprintf(stderr, "mdc-xdp-tool: %s\n", err);
            return 1;
        }
        if (mirror_fill(m[i], key, (uint32_t)strlen(key), val, vlen, 0, 0)) {
            fprintf(stderr, "mdc-xdp-tool: value does not fit\n");
            return 1;
        }
    }
    bsk = mdc_bounce__open();
    if (!bsk)
        return 1;
    bsk->rodata->bounce_port = htons(SRV_PORT);
    if (mdc_bounce__load(bsk)) {
        fprintf(stderr, "mdc-xdp-tool: load failed: %s\n", strerror(errno));
        return 1;
    }
    memset(&r, 0, sizeof(r));
    if (vlen > 150)
        want[1] = XDP_PASS; /* more than the headroom: passed, pass_no_room */
    r.payload = "get key:00000001\r\n";
    len = build_req(pkt, &r);
    r.payload = "get key:00000002\r\n";
    mlen = build_req(pmiss, &r);
    static uint8_t (*hot)[128];
    int hot_missed[4] = {0, 0, 0, 0};
    static size_t *hotlen;
    if (hotkeys > 0) {
        char hk[32];
        hot = calloc(hotkeys, sizeof(*hot));
        hotlen = calloc(hotkeys, sizeof(*hotlen));
        if (!hot || !hotlen)
            return 1;
        for (unsigned h = 0; h < hotkeys; h++) {
            char pl[48];
            int kl = snprintf(hk, sizeof(hk), "hot:%u", h);
            for (int q = 0; q < 2; q++)
                if (mirror_fill(m[q], hk, (uint32_t)kl, val, vlen, 0, 0)) {
                    fprintf(stderr, "mdc-xdp-tool: hot key does not fit\n");
                    return 1;
                }
            snprintf(pl, sizeof(pl), "get %s\r\n", hk);
            r.payload = pl;
            hotlen[h] = build_req(pmiss, &r); /* writes PKT_MAX bytes */
            memcpy(hot[h], pmiss, hotlen[h]);
        }
    }
    if (hotkeys > 0) {
        r.payload = "get key:00000002\r\n";
        mlen = build_req(pmiss, &r);
    }
    for (i = 0; i < 4; i++) {
        uint32_t *t = calloc((size_t)repeat, sizeof(*t));

        if (!t)
            return 1;
        fd = i == 3 ? bpf_program__fd(bsk->progs.mdc_bounce)
                    : mirror_prog_fd(m[i == 1]);
        prog_stats(fd, &ns0, &c0);
        for (k = 0; k < repeat; k++) {
            if (hotkeys > 0 && i < 2) {
                /* a scattered walk over the hot keys; a key that lost its
                 * slot to another (the mirror keeps the newest fill) is a
                 * miss, counted and left out of the timings */
                unsigned h = (unsigned)(((uint64_t)k * 2654435761u) % hotkeys);
                t[k] = test_run(fd, hot[h], hotlen[h], 1, &v);
                if (v != want[i]) {
                    hot_missed[i]++;
                    t[k] = UINT32_MAX;
                    v = want[i];
                }
            } else {
                t[k] = test_run(fd, i == 2 ? pmiss : pkt, i == 2 ? mlen : len,
                                1, &v);
            }
            if (v != want[i]) {
                fprintf(stderr, "mdc-xdp-tool: %s: verdict %d\n", what[i], v);
                return 1;
            }
        }
        prog_stats(fd, &ns1, &c1);
        stat[i] = c1 > c0 ? (double)(ns1 - ns0) / (double)(c1 - c0) : 0;
        qsort(t, (size_t)repeat, sizeof(*t), cmp_u32);
        best[i] = t[(repeat - hot_missed[i]) / 2]; /* misses sort last */
        free(t);
    }
    if (mirror_stats(m[0], &ms) != 0)
        ms.verified_insns = 0;
    printf("{\"value_bytes\": %u, \"repeat\": %d, \"hot_keys\": %u, "
           "\"hot_misses\": %d, \"verified_insns\": %u",
           vlen, repeat, hotkeys, hot_missed[0], ms.verified_insns);
    for (i = 0; i < 4; i++) {
        const char *n = i == 0   ? "hit_tail"
                        : i == 1 ? "hit_head"
                        : i == 2 ? "miss"
                                 : "bounce";
        printf(", \"%s_ns\": %u", n, best[i]);
        /* mean over the runs, 0 unless kernel.bpf_stats_enabled=1 */
        printf(", \"%s_stats_ns\": %.1f", n, stat[i]);
    }
    printf("}\n");
    mdc_bounce__destroy(bsk);
    mirror_teardown(m[0]);
    mirror_teardown(m[1]);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what, *ifname = NULL;
    enum mirror_mode mode = MIRROR_MODE_AUTO;
    struct in_addr addrs[MIRROR_MAX_DADDRS];
    size_t naddrs = 0;
    uint16_t port = 0;
    unsigned vlen = 32;
    int c, repeat = 20000;

    if (argc < 2)
        usage();
    what = argv[1];
    optind = 2;
    while ((c = getopt(argc, argv, "i:m:p:a:n:v:k:s:H:")) != -1) {
        switch (c) {
        case 'n': repeat = atoi(optarg); break;
        case 'v': vlen = (unsigned)atoi(optarg); break;
        case 'k': hotkeys = (unsigned)atoi(optarg); break;
        case 's': slots0 = (unsigned)atoi(optarg); break;
        case 'H': /* tier 0's dense front; 0xffffffff: none */
            slots_hot = (unsigned)strtol(optarg, NULL, 0);
            break;
        case 'i': ifname = optarg; break;
        case 'm': mode = parse_mode(optarg); break;
        case 'p': port = (uint16_t)atoi(optarg); break;
        case 'a':
            if (naddrs == MIRROR_MAX_DADDRS ||
                inet_pton(AF_INET, optarg, &addrs[naddrs]) != 1)
                usage();
            naddrs++;
            break;
        default: usage();
        }
    }
    if (!strcmp(what, "progbench"))
        return run_progbench(repeat > 0 ? repeat : 1, vlen);
    if (!ifname)
        usage();
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (!strcmp(what, "bounce"))
        return port ? run_simple(1, ifname, mode, port) : (usage(), 2);
    if (!strcmp(what, "pass"))
        return run_simple(0, ifname, mode, 0);
    if (!strcmp(what, "mirror"))
        return port && naddrs ? run_mirror(ifname, mode, port, addrs, naddrs)
                              : (usage(), 2);
    usage();
    return 2;
}
