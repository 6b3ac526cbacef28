/*
 * fuzz_xdp.c - libFuzzer target for the XDP program (bpf/mdc_xdp.bpf.c),
 * run through BPF_PROG_TEST_RUN on frames made from the input: either the
 * raw frame, or a well-formed GET for a mirrored key with input-chosen
 * byte changes (so that mutations stay near the accepting path).  The
 * verdict is judged against the program's contract (docs/xdp.md):
 *  - XDP_TX only for Ethernet + IPv4 (no options, not a fragment, valid
 *    header checksum) + UDP to a bound address and port, consistent
 *    lengths, a frame header saying sequence 0 of 1, and exactly
 *    "get <key>\r\n" with a key of 1..250 bytes in 0x21..0x7e; the reply
 *    built must be well formed (tests/../bpf/xdp_pkt.h check_reply():
 *    MACs, addresses, ports swapped; lengths; both checksums) and carry
 *    the request id, sequence 0 of 1 and a VALUE line for that key;
 *  - XDP_PASS leaves the frame byte for byte as it was;
 *  - no other verdict.
 * Needs root and an XDP build; otherwise it says SKIP and exits 0 (under
 * CI=true as root that is a failure).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "bpf/mirror.h"
#include "bpf/xdp_pkt.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_xdp: check failed: %s\n", #c);               \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define BOUND_OTHER "192.0.2.99"
static struct mirror *M;
static uint8_t in[PKT_MAX], out[PKT_MAX + 256];
static unsigned long n_tx, n_pass;

static void report(void)
{
    fprintf(stderr, "fuzz_xdp: %lu frames answered (XDP_TX), %lu passed\n",
            n_tx, n_pass);
}
static const char *const keys[] = {"foo", "k1", "a", "key-with-dashes",
                                   "x2345678901234567890123456789012"};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct mirror_config cfg;
    struct in_addr a[2];
    char err[256];
    size_t i;
    int rc;

    (void)argc;
    (void)argv;
    inet_pton(AF_INET, BOUND_OTHER, &a[0]);
    inet_pton(AF_INET, SRV_ADDR, &a[1]);
    memset(&cfg, 0, sizeof(cfg));
    cfg.mode = MIRROR_MODE_NONE;
    cfg.port = SRV_PORT;
    cfg.addrs = a;
    cfg.naddrs = 2;
    cfg.slots[0] = cfg.slots[1] = cfg.slots[2] = 64;
    cfg.mtu = 1500;
    rc = mirror_setup(&cfg, &M, err, sizeof(err));
    if (rc != 0) {
        const char *ci = getenv("CI");
        fprintf(stderr, "fuzz_xdp: SKIP: %s\n", err);
        exit(ci != NULL && strcmp(ci, "true") == 0 && getuid() == 0 ? 1 : 0);
    }
    atexit(report);
    for (i = 0; i < NKEYS; i++)
        CHECK(mirror_fill(M, keys[i], (uint32_t)strlen(keys[i]), "value",
                          5, (uint32_t)i, 0) == 0);
    return 0;
}

/* The program's contract for an answered frame. */
static const char *judge(const uint8_t *f, size_t len)
{
    const uint8_t *ip = f + 14, *udp = f + 34, *fr = f + 42, *cmd = f + 50;
    size_t tot, klen, i;
    struct in_addr a1, a2;

    if (len < 14 + 20 + 8 + 8 + 7)
        return "too short";
    if (get16(f + 12) != 0x0800)
        return "not IPv4";
    if (ip[0] != 0x45)
        return "version/IHL";
    if (get16(ip + 6) & 0x3fff)
        return "fragment";
    if (ip[9] != 17)
        return "not UDP";
    if (fold(sum_be(ip, 20, 0)) != 0xffff)
        return "IP checksum";
    inet_pton(AF_INET, SRV_ADDR, &a1);
    inet_pton(AF_INET, BOUND_OTHER, &a2);
    if (memcmp(ip + 16, &a1, 4) != 0 && memcmp(ip + 16, &a2, 4) != 0)
        return "address not bound";
    if (get16(udp + 2) != SRV_PORT)
        return "port";
    tot = get16(ip + 2);
    if (tot < 28 || 14 + tot > len || get16(udp + 4) != tot - 20)
        return "lengths";
    if (fr[2] | fr[3] | fr[4] | (fr[5] ^ 1) | fr[6] | fr[7])
        return "frame header";
    if (tot < 20 + 8 + 8 + 4 + 1 + 2 || memcmp(cmd, "get ", 4) != 0)
        return "command";
    klen = tot - 20 - 8 - 8 - 4 - 2;
    if (klen < 1 || klen > 250 || cmd[4 + klen] != '\r' ||
        cmd[5 + klen] != '\n')
        return "key or line end";
    for (i = 0; i < klen; i++)
        if (cmd[4 + i] < 0x21 || cmd[4 + i] > 0x7e)
            return "key byte";
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    LIBBPF_OPTS(bpf_test_run_opts, o);
    const uint8_t *pl;
    size_t len, plen, i;
    const char *why;
    int rc;

    if (size < 1)
        return 0;
    if (data[0] & 1) { /* the raw frame */
        len = size - 1 < PKT_MAX ? size - 1 : PKT_MAX;
        memcpy(in, data + 1, len);
    } else { /* a GET for a mirrored key, then byte changes (pos, xor) */
        char line[300];
        struct req r;

        memset(&r, 0, sizeof(r));
        snprintf(line, sizeof(line), "get %s\r\n",
                 keys[(size > 1 ? data[1] : 0) % NKEYS]);
        r.payload = line;
        r.reqid = size > 2 ? data[2] : 7;
        len = build_req(in, &r);
        for (i = 3; i + 1 < size; i += 2)
            in[data[i] % len] ^= data[i + 1];
    }
    if (len < 14)
        return 0; /* BPF_PROG_TEST_RUN wants an Ethernet header */
    o.data_in = in;
    o.data_size_in = (__u32)len;
    o.data_out = out;
    o.data_size_out = sizeof(out);
    o.repeat = 1;
    rc = bpf_prog_test_run_opts(mirror_prog_fd(M), &o);
    CHECK(rc == 0);
    if (o.retval == XDP_PASS) {
        n_pass++;
        CHECK(o.data_size_out == len && memcmp(out, in, len) == 0);
        return 0;
    }
    CHECK(o.retval == XDP_TX);
    n_tx++;
    why = judge(in, len);
    if (why != NULL) {
        fprintf(stderr, "fuzz_xdp: answered a frame that is not a GET it "
                "may answer: %s\n", why);
        abort();
    }
    why = check_reply(in, out, o.data_size_out, &pl, &plen);
    if (why != NULL) {
        fprintf(stderr, "fuzz_xdp: ill-formed reply: %s\n", why);
        abort();
    }
    /* the request id, sequence 0 of 1, VALUE <the key asked> */
    CHECK(plen > 8 + 6);
    CHECK(memcmp(pl, in + 42, 2) == 0);
    CHECK(pl[2] == 0 && pl[3] == 0 && pl[4] == 0 && pl[5] == 1 &&
          pl[6] == 0 && pl[7] == 0);
    CHECK(memcmp(pl + 8, "VALUE ", 6) == 0);
    {
        size_t klen = get16(in + 14 + 2) - 20 - 8 - 8 - 6;
        CHECK(plen >= 14 + klen + 1);
        CHECK(memcmp(pl + 14, in + 54, klen) == 0 && pl[14 + klen] == ' ');
    }
    return 0;
}
