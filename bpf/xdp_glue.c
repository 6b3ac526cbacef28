/*
 * xdp_glue.c - the daemon's side of -x (docs/xdp.md): find the addresses
 * the program may answer, load and attach it through mirror.c, and wire
 * the mirror into the store (invalidation on every mutation) and into the
 * userspace UDP path (fill on hits).  Runs once, on the main thread,
 * before privileges are dropped.
 */
#include "config.h"

#include "xdp_glue.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sysexits.h>

#include "mirror.h"
#include "protocol/mctext.h"
#include "server/core/store.h"
#include "server/addr.h"
#include "server/log.h"
#include "server/server.h"


/* Per network thread: approximate hit counts for --xdp-admit N > 1, by
 * mirror hash (a collision only admits a record a little early). */
#define XDP_ADMIT_SLOTS 4096
static __thread uint8_t xdp_admit_count[XDP_ADMIT_SLOTS];

/* Under the key's bucket read lock (store_visit): copy the live record. */
static void xdp_glue_fill(void *ctx, struct store *st, const struct record *r)
{
    if (record_ntags(r) != 0)
        return; /* a store that added tags since the hit */
    (void)mirror_fill(ctx, record_key(r), record_klen(r), record_value(r),
                      record_vlen(r), record_flags(r),
                      record_deadline_ns(st, r));
}

/* The UDP hit hook (server/server.h): r is the record the reply was sent from,
 * untagged then, possibly replaced since - so it only decides admission. */
static void xdp_glue_hit(void *ctx, struct store *st, const struct record *r)
{
    struct server *srv = ctx;
    uint32_t klen = record_klen(r);

    if (!mirror_fits(srv->mirror, klen, record_vlen(r), record_flags(r)))
        return;
    if (srv->opt.xdp_admit > 1) {
        uint64_t h = mirror_key_hash(srv->mirror, record_key(r), klen);
        uint8_t *c = &xdp_admit_count[h & (XDP_ADMIT_SLOTS - 1)];

        if (++*c < srv->opt.xdp_admit)
            return;
        *c = 0;
    }
    (void)store_visit(st, record_key(r), klen, xdp_glue_fill, srv->mirror);
}

/* Add a unique IPv4 address; -1 when the table is full. */
static int xdp_addr_add(struct in_addr *v, size_t *n, struct in_addr a)
{
    size_t i;

    for (i = 0; i < *n; i++)
        if (v[i].s_addr == a.s_addr)
            return 0;
    if (*n == MIRROR_MAX_DADDRS)
        return -1;
    v[(*n)++] = a;
    return 0;
}

/*
 * The destinations the program may answer: the IPv4 addresses of -l (the
 * UDP sockets are bound to exactly those), an unspecified address standing
 * for every IPv4 address of the interface.  Sets *on_if when at least one of
 * them is configured on the interface.
 */
static int xdp_addrs(struct server *srv, struct in_addr *v, size_t *n,
                     bool *on_if)
{
    struct in_addr ifa_v[64];
    size_t ifa_n = 0, i, j;
    struct ifaddrs *ifs = NULL, *ifa;
    const char *ifname = srv->opt.xdp;

    *n = 0;
    *on_if = false;
    if (getifaddrs(&ifs) == 0) {
        for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next)
            if (ifa->ifa_addr != NULL && ifa->ifa_addr->sa_family == AF_INET &&
                strcmp(ifa->ifa_name, ifname) == 0 &&
                ifa_n < sizeof(ifa_v) / sizeof(ifa_v[0]))
                ifa_v[ifa_n++] =
                    ((struct sockaddr_in *)(void *)ifa->ifa_addr)->sin_addr;
        freeifaddrs(ifs);
    }
    for (i = 0; i < srv->opt.listen.n; i++) {
        struct addrinfo *res = NULL, *ai;
        char port[16];

        /* IPv4 only: IPv6 requests pass to userspace */
        if (addr_resolve_listen(srv->opt.listen.v[i], srv->opt.port, NULL,
                                AF_INET, SOCK_DGRAM, "-x listen address", port,
                                sizeof(port), &res) < 0)
            continue;
        for (ai = res; ai != NULL; ai = ai->ai_next) {
            struct in_addr a =
                ((struct sockaddr_in *)(void *)ai->ai_addr)->sin_addr;

            if (a.s_addr == htonl(INADDR_ANY)) {
                for (j = 0; j < ifa_n; j++)
                    if (xdp_addr_add(v, n, ifa_v[j]) < 0)
                        goto full;
                continue;
            }
            if (xdp_addr_add(v, n, a) < 0)
                goto full;
        }
        freeaddrinfo(res);
        continue;
full:
        freeaddrinfo(res);
        log_error("-x %s: more than %u IPv4 addresses to answer on (-l)",
                  ifname, MIRROR_MAX_DADDRS);
        return -1;
    }
    for (i = 0; i < *n; i++)
        for (j = 0; j < ifa_n; j++)
            if (v[i].s_addr == ifa_v[j].s_addr)
                *on_if = true;
    return 0;
}

/* Not root: CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON effective (ambient ones
 * from systemd's AmbientCapabilities=, dist/systemd/xdp.conf)?  CAP_PERFMON
 * because without it the verifier refuses packet-pointer arithmetic from a
 * non-root loader.  Reads CapEff of /proc/self/status. */
static bool xdp_have_caps(void)
{
    unsigned long long eff = 0;
    char line[256];
    bool found = false;
    FILE *f = fopen("/proc/self/status", "r");

    if (f == NULL)
        return false;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "CapEff: %llx", &eff) == 1) {
            found = true;
            break;
        }
    fclose(f);
    /* CAP_NET_ADMIN is 12, CAP_PERFMON 38, CAP_BPF 39 */
    return found && (eff >> 12 & 1) && (eff >> 38 & 1) && (eff >> 39 & 1);
}

int xdp_glue_setup(struct server *srv)
{
    const struct options *o = &srv->opt;
    struct mirror_config cfg;
    struct mirror_stats ms;
    struct in_addr addrs[MIRROR_MAX_DADDRS];
    char err[256], list[MIRROR_MAX_DADDRS * 17];
    size_t naddrs = 0, i, k = 0;
    bool on_if;
    int mtu, rc;

    if (o->xdp == NULL)
        return 0;
    if (o->udp_port == 0) { /* options_parse() refuses it already */
        log_error("-x %s needs -U PORT", o->xdp);
        return EX_USAGE;
    }
    if (if_nametoindex(o->xdp) == 0) {
        log_error("-x %s: no such network interface", o->xdp);
        return EX_UNAVAILABLE;
    }
    if (geteuid() != 0 && !xdp_have_caps()) {
        log_error("-x %s needs root, or CAP_BPF, CAP_NET_ADMIN and "
                  "CAP_PERFMON (the systemd drop-in xdp.conf grants them), to "
                  "load and "
                  "attach XDP; as root mdcached then drops to -u USER "
                  "(default nobody)", o->xdp);
        return EX_UNAVAILABLE;
    }
    if (srv->protected_mode) {
        /* the program answers before any check of the sender could run */
        log_error("-x %s: protected mode is in force (a -l address is not "
                  "loopback and there is no authentication), and XDP would "
                  "answer GETs from any host: start with --protected-mode=no "
                  "(and filter the UDP port) to use -x", o->xdp);
        return EX_USAGE;
    }
    if (xdp_addrs(srv, addrs, &naddrs, &on_if) < 0)
        return EX_USAGE;
    if (naddrs == 0) {
        log_error("-x %s: no IPv4 address to answer on: give -l an IPv4 "
                  "address of %s (or 0.0.0.0)", o->xdp, o->xdp);
        return EX_USAGE;
    }
    for (i = 0; i < naddrs; i++) {
        char a[INET_ADDRSTRLEN];

        inet_ntop(AF_INET, &addrs[i], a, sizeof(a));
        k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s", i ? "," : "",
                              a);
    }
    if (!on_if)
        log_warn("-x %s: none of the addresses answered (%s) is configured on "
                 "%s: XDP will pass every request", o->xdp, list, o->xdp);
    memset(&cfg, 0, sizeof(cfg));
    cfg.ifname = o->xdp;
    cfg.mode = strcmp(o->xdp_mode, "native") == 0    ? MIRROR_MODE_NATIVE
               : strcmp(o->xdp_mode, "generic") == 0 ? MIRROR_MODE_GENERIC
                                                     : MIRROR_MODE_AUTO;
    cfg.port = (uint16_t)o->udp_port;
    cfg.addrs = addrs;
    cfg.naddrs = naddrs;
    cfg.slots[0] = (uint32_t)o->xdp_slots_small;
    cfg.slots[1] = (uint32_t)o->xdp_slots_medium;
    cfg.slots[2] = (uint32_t)o->xdp_slots_large;
    /* The userspace path sends a reply over UDP_DGRAM_MAX bytes as several
     * datagrams; the program answers only what fits in one, the same bytes. */
    mtu = mirror_if_mtu(o->xdp);
    if (mtu <= 0 || mtu > UDP_DGRAM_MAX + 28)
        mtu = UDP_DGRAM_MAX + 28;
    cfg.mtu = (uint32_t)mtu;
    rc = mirror_setup(&cfg, &srv->mirror, err, sizeof(err));
    if (rc < 0) {
        log_error("-x %s: %s", o->xdp, err);
        return rc == -ENOTSUP || rc == -ENODEV || rc == -EPERM
                   ? EX_UNAVAILABLE
                   : EX_OSERR;
    }
    store_set_hook(srv->store, mirror_store_hook, srv->mirror);
    srv->udp_hit_hook = xdp_glue_hit;
    srv->udp_hit_ctx = srv;
    mirror_stats(srv->mirror, &ms);
    log_info("XDP on %s (%s mode) for UDP port %llu on %s: program verified "
             "in %u instructions, mirror %u+%u+%u+%u slots (%llu KiB), admit "
             "on hit %llu",
             o->xdp, ms.mode, (unsigned long long)o->udp_port, list,
             ms.verified_insns, ms.slots_hot, ms.slots[0], ms.slots[1],
             ms.slots[2],
             (unsigned long long)(ms.mem_bytes >> 10),
             (unsigned long long)o->xdp_admit);
    return 0;
}

