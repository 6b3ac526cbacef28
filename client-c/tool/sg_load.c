/*
 * sg_load.c - mdcached-tool pool-bpf (docs/pool-bpf.md): as root, load the
 * kernel scatter-gather programs (client-c/sg.bpf.c) for one pool, fill
 * and freeze its map of servers, pin programs and maps under
 * PIN_ROOT/mdcached/NAME, attach the egress program to the interface's
 * clsact qdisc and the XDP program to its receive path, and write the
 * pool's description for libmdcached (RUN_DIR/NAME, 0644).  "unload" takes
 * all of it away.  The web process reads only the description: it never
 * calls bpf().
 *
 * Built without libbpf (configure's xdp off), the subcommand says so.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "client-c/tool/sg_load.h"

#include <stdio.h>
#include <string.h>

#define SG_EX_USAGE 64
#define SG_EX_UNAVAILABLE 69
#define SG_EX_SOFTWARE 70

#ifndef MDC_XDP

int sg_tool_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "mdcached-tool: pool-bpf: built without libbpf "
            "(configure --enable-xdp)\n");
    return SG_EX_UNAVAILABLE;
}

#else

#include "client-c/sg_layout.h"
#include "client-c/sg.skel.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define SG_BPF_FS_MAGIC 0xcafe4a11
#define SG_TC_HANDLE 0x5347 /* "SG" */
#define SG_TC_PRIO 0x4d53

struct sg_opts {
    const char *name, *dev, *vip, *cgroup, *pin_root, *run_dir, *mode;
    unsigned mark;
    const char *xdev[MDC_SG_MAX]; /* --xdp-dev, default --dev */
    int nxdev;
};

static int sg_usage(void)
{
    fprintf(stderr,
"Usage: mdcached-tool pool-bpf load NAME --dev IFACE --vip ADDR:PORT\n"
"           (--cgroup DIR | --mark N) [--xdp-mode generic|native]\n"
"           [--xdp-dev IFACE]...\n"
"           [--pin-root DIR] [--run-dir DIR] SERVER[@MAC]...\n"
"       mdcached-tool pool-bpf unload NAME [--pin-root DIR] [--run-dir DIR]\n"
"SERVER is IPV4:PORT as the pool names it, /UDPPORT its -U port when not\n"
"the same, @MAC its next hop's address when not the virtual address's;\n"
"at most %d.\n", MDC_SG_MAX);
    return SG_EX_USAGE;
}

/* IPV4:PORT[/UDPPORT][@MAC]: *port the UDP port (network order), label
 * (if not NULL) IPV4:PORT, the name the pool knows the server by */
static int parse_addr(const char *s, __u32 *addr, __u16 *port, __u8 *mac,
                      char *label, size_t nlabel)
{
    char buf[64], *colon, *at, *slash, *end;
    long p, up = 0;

    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    if ((at = strchr(buf, '@')) != NULL) {
        unsigned m[6];
        char tail;
        *at = '\0';
        if (mac == NULL || sscanf(at + 1, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1],
                                  &m[2], &m[3], &m[4], &m[5], &tail) != 6)
            return -1;
        for (int i = 0; i < 6; i++) {
            if (m[i] > 255)
                return -1;
            mac[i] = (__u8)m[i];
        }
    }
    if ((slash = strchr(buf, '/')) != NULL) {
        *slash = '\0';
        up = strtol(slash + 1, &end, 10);
        if (label == NULL || *end != '\0' || up < 1 || up > 65535)
            return -1;
    }
    if (label != NULL && (size_t)snprintf(label, nlabel, "%s", buf) >= nlabel)
        return -1;
    if ((colon = strrchr(buf, ':')) == NULL)
        return -1;
    *colon = '\0';
    p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
        return -1;
    if (inet_pton(AF_INET, buf, addr) != 1)
        return -1;
    *port = htons((__u16)(up ? up : p));
    return 0;
}

static void sg_paths(const struct sg_opts *o, char *pin, size_t npin,
                     char *run, size_t nrun)
{
    snprintf(pin, npin, "%s/mdcached/%s", o->pin_root, o->name);
    snprintf(run, nrun, "%s/%s", o->run_dir, o->name);
}

/* a bpf file system at root (mounted there when nothing is) */
static int ensure_bpffs(const char *root)
{
    struct statfs sf;
    if (statfs(root, &sf) == 0 && (unsigned long)sf.f_type == SG_BPF_FS_MAGIC)
        return 0;
    if (mount("bpf", root, "bpf", 0, "mode=0755") < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s is no bpf file system "
                "and mounting one failed: %s\n", root, strerror(errno));
        return -1;
    }
    return 0;
}

static int mkdirs(const char *path, mode_t mode)
{
    char buf[512];
    size_t n = strlen(path);
    if (n >= sizeof(buf))
        return -1;
    strcpy(buf, path);
    for (char *s = buf + 1; *s != '\0'; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int pin_one(int fd, const char *dir, const char *leaf, mode_t mode)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, leaf);
    if (bpf_obj_pin(fd, path) < 0 || chmod(path, mode) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: pin %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    return 0;
}

static void unpin_all(const char *dir)
{
    static const char *const leaves[] = {"egress", "ingress", "servers",
                                         "server_index"};
    char path[600];
    for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, leaves[i]);
        unlink(path);
    }
    rmdir(dir);
}

static int sg_load(struct sg_opts *o, int nsrv, char **srv)
{
    struct mdc_sg *skel = NULL;
    struct mdc_sg_server s[MDC_SG_MAX];
    char label[MDC_SG_MAX][64];
    __u32 vip = 0;
    __u16 vport = 0;
    __u64 cg = 0;
    unsigned ifindex;
    __u32 xflags;
    char pin[512], run[512], tmp[600];
    bool hook_made = false, tc_done = false;
    unsigned xidx[MDC_SG_MAX];
    int xdone = 0;
    int rc = SG_EX_SOFTWARE, err;
    FILE *f;

    if (o->dev == NULL || o->vip == NULL || nsrv < 1 ||
        (o->cgroup == NULL && o->mark == 0))
        return sg_usage();
    if (nsrv > MDC_SG_MAX) {
        fprintf(stderr, "mdcached-tool: pool-bpf: at most %d servers\n",
                MDC_SG_MAX);
        return SG_EX_USAGE;
    }
    if (parse_addr(o->vip, &vip, &vport, NULL, NULL, 0) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: --vip %s: want IPV4:PORT\n",
                o->vip);
        return SG_EX_USAGE;
    }
    memset(s, 0, sizeof(s));
    for (int i = 0; i < nsrv; i++)
        if (parse_addr(srv[i], &s[i].addr, &s[i].port, s[i].mac, label[i],
                       sizeof(label[i])) < 0) {
            fprintf(stderr, "mdcached-tool: pool-bpf: server %s: want "
                    "IPV4:PORT[/UDPPORT][@MAC]\n", srv[i]);
            return SG_EX_USAGE;
        }
    if (strcmp(o->mode, "generic") == 0)
        xflags = XDP_FLAGS_SKB_MODE;
    else if (strcmp(o->mode, "native") == 0)
        xflags = XDP_FLAGS_DRV_MODE;
    else
        return sg_usage();
    if ((ifindex = if_nametoindex(o->dev)) == 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: --dev %s: %s\n", o->dev,
                strerror(errno));
        return SG_EX_USAGE;
    }
    if (o->nxdev == 0)
        o->xdev[o->nxdev++] = o->dev;
    for (int k = 0; k < o->nxdev; k++)
        if ((xidx[k] = if_nametoindex(o->xdev[k])) == 0) {
            fprintf(stderr, "mdcached-tool: pool-bpf: --xdp-dev %s: %s\n",
                    o->xdev[k], strerror(errno));
            return SG_EX_USAGE;
        }
    if (o->cgroup != NULL) {
        struct stat st;
        struct statfs sf;
        /* a cgroup v2 directory's id is its inode number */
        if (stat(o->cgroup, &st) < 0 || statfs(o->cgroup, &sf) < 0 ||
            (unsigned long)sf.f_type != 0x63677270 /* CGROUP2_SUPER_MAGIC */) {
            fprintf(stderr, "mdcached-tool: pool-bpf: --cgroup %s: not a "
                    "cgroup v2 directory\n", o->cgroup);
            return SG_EX_USAGE;
        }
        cg = (__u64)st.st_ino;
    }
    sg_paths(o, pin, sizeof(pin), run, sizeof(run));
    if (ensure_bpffs(o->pin_root) < 0)
        return SG_EX_UNAVAILABLE;
    if (access(pin, F_OK) == 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s exists: unload %s "
                "first\n", pin, o->name);
        return SG_EX_USAGE;
    }

    if ((skel = mdc_sg__open()) == NULL) {
        fprintf(stderr, "mdcached-tool: pool-bpf: open: %s\n",
                strerror(errno));
        return SG_EX_SOFTWARE;
    }
    skel->rodata->cfg_vip = vip;
    skel->rodata->cfg_vport = vport;
    skel->rodata->cfg_nserv = (__u32)nsrv;
    skel->rodata->cfg_cgroup = cg;
    skel->rodata->cfg_mark = o->mark;
    {
        struct ifreq ifr;
        int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", o->dev);
        if (sk >= 0 && ioctl(sk, SIOCGIFFLAGS, &ifr) == 0 &&
            (ifr.ifr_flags & IFF_LOOPBACK))
            skel->rodata->cfg_loopback = 1;
        if (sk >= 0)
            close(sk);
    }
    if ((err = mdc_sg__load(skel)) != 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: load: %s (needs root: "
                "CAP_BPF, CAP_NET_ADMIN)\n", strerror(-err));
        rc = SG_EX_UNAVAILABLE;
        goto out;
    }
    for (__u32 i = 0; i < (__u32)nsrv; i++) {
        struct mdc_sg_addr a = {.addr = s[i].addr, .port = s[i].port};
        if (bpf_map_update_elem(bpf_map__fd(skel->maps.servers), &i, &s[i],
                                BPF_ANY) < 0 ||
            bpf_map_update_elem(bpf_map__fd(skel->maps.server_index), &a, &i,
                                BPF_NOEXIST) < 0) {
            fprintf(stderr, "mdcached-tool: pool-bpf: server %s: %s\n",
                    srv[i], errno == EEXIST ? "named twice" : strerror(errno));
            rc = SG_EX_USAGE;
            goto out;
        }
    }
    /* the servers are fixed now: no one changes them, root included */
    if (bpf_map_freeze(bpf_map__fd(skel->maps.servers)) < 0 ||
        bpf_map_freeze(bpf_map__fd(skel->maps.server_index)) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: freeze: %s\n",
                strerror(errno));
        goto out;
    }
    if (mkdirs(pin, 0755) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s: %s\n", pin,
                strerror(errno));
        goto out;
    }
    if (pin_one(bpf_program__fd(skel->progs.mdc_sg_egress), pin, "egress",
                0600) < 0 ||
        pin_one(bpf_program__fd(skel->progs.mdc_sg_ingress), pin, "ingress",
                0600) < 0 ||
        pin_one(bpf_map__fd(skel->maps.servers), pin, "servers", 0644) < 0 ||
        pin_one(bpf_map__fd(skel->maps.server_index), pin, "server_index",
                0644) < 0)
        goto out_unpin;

    {
        DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
                            .attach_point = BPF_TC_EGRESS);
        DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = SG_TC_HANDLE,
                            .priority = SG_TC_PRIO,
                            .prog_fd = bpf_program__fd(
                                skel->progs.mdc_sg_egress));
        err = bpf_tc_hook_create(&hook);
        if (err == 0)
            hook_made = true;
        else if (err != -EEXIST) {
            fprintf(stderr, "mdcached-tool: pool-bpf: clsact on %s: %s\n",
                    o->dev, strerror(-err));
            goto out_unpin;
        }
        if ((err = bpf_tc_attach(&hook, &opts)) < 0) {
            fprintf(stderr, "mdcached-tool: pool-bpf: tc egress on %s: %s\n",
                    o->dev, strerror(-err));
            goto out_detach;
        }
        tc_done = true;
    }
    for (; xdone < o->nxdev; xdone++) {
        err = bpf_xdp_attach((int)xidx[xdone],
                             bpf_program__fd(skel->progs.mdc_sg_ingress),
                             xflags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
        if (err < 0) {
            fprintf(stderr, "mdcached-tool: pool-bpf: XDP (%s) on %s: "
                    "%s%s\n", o->mode, o->xdev[xdone], strerror(-err),
                    err == -EBUSY || err == -EEXIST ?
                        " (another XDP program is attached there)" : "");
            goto out_detach;
        }
    }

    /* the pool's description for libmdcached: written whole, then renamed */
    if (mkdirs(o->run_dir, 0755) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s: %s\n", o->run_dir,
                strerror(errno));
        goto out_detach;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", run);
    if ((f = fopen(tmp, "w")) == NULL) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s: %s\n", tmp,
                strerror(errno));
        goto out_detach;
    }
    fprintf(f, "# libmdcached kernel scatter-gather pool (mdcached-tool "
            "pool-bpf load)\nvip %s\ndev %s\nxdp %s\nqdisc %s\n", o->vip,
            o->dev, o->mode, hook_made ? "created" : "found");
    for (int k = 0; k < o->nxdev; k++)
        fprintf(f, "xdpdev %s\n", o->xdev[k]);
    for (int i = 0; i < nsrv; i++)
        fprintf(f, "server %s %u\n", label[i], ntohs(s[i].port));
    if (fflush(f) != 0 || fsync(fileno(f)) < 0 || fclose(f) != 0 ||
        chmod(tmp, 0644) < 0 || rename(tmp, run) < 0) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s: %s\n", run,
                strerror(errno));
        unlink(tmp);
        goto out_detach;
    }
    printf("pool %s: %d servers behind %s on %s (XDP %s), pinned in %s\n",
           o->name, nsrv, o->vip, o->dev, o->mode, pin);
    rc = 0;
    goto out;

out_detach:
    while (xdone > 0)
        bpf_xdp_detach((int)xidx[--xdone], xflags, NULL);
    if (tc_done || hook_made) {
        DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
                            .attach_point = BPF_TC_EGRESS);
        DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = SG_TC_HANDLE,
                            .priority = SG_TC_PRIO);
        if (tc_done)
            bpf_tc_detach(&hook, &opts);
        if (hook_made) {
            hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
            bpf_tc_hook_destroy(&hook);
        }
    }
out_unpin:
    unpin_all(pin);
out:
    mdc_sg__destroy(skel);
    return rc;
}

static int sg_unload(struct sg_opts *o)
{
    char pin[512], run[512], line[256], dev[IF_NAMESIZE + 1] = "",
         mode[IF_NAMESIZE + 1] = "generic", qdisc[IF_NAMESIZE + 1] = "found";
    FILE *f;
    unsigned ifindex;
    int rc = 0;

    sg_paths(o, pin, sizeof(pin), run, sizeof(run));
    if ((f = fopen(run, "r")) == NULL) {
        fprintf(stderr, "mdcached-tool: pool-bpf: %s: %s\n", run,
                strerror(errno));
        unpin_all(pin);
        return 1;
    }
    char xdev[MDC_SG_MAX][IF_NAMESIZE + 1];
    int nx = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char w[16], a[IF_NAMESIZE + 1];
        if (sscanf(line, "%15s %16s", w, a) != 2)
            continue;
        if (strcmp(w, "xdpdev") == 0 && nx < MDC_SG_MAX)
            strcpy(xdev[nx++], a);
        else if (strcmp(w, "dev") == 0)
            strcpy(dev, a);
        else if (strcmp(w, "xdp") == 0)
            snprintf(mode, sizeof(mode), "%s", a);
        else if (strcmp(w, "qdisc") == 0)
            snprintf(qdisc, sizeof(qdisc), "%s", a);
    }
    fclose(f);
    if (dev[0] != '\0' && (ifindex = if_nametoindex(dev)) != 0) {
        DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)ifindex,
                            .attach_point = BPF_TC_EGRESS);
        DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = SG_TC_HANDLE,
                            .priority = SG_TC_PRIO);
        for (int k = 0; k < nx; k++) {
            unsigned xi = if_nametoindex(xdev[k]);
            if (xi == 0 || bpf_xdp_detach((int)xi,
                                          strcmp(mode, "native") == 0 ?
                                              XDP_FLAGS_DRV_MODE :
                                              XDP_FLAGS_SKB_MODE, NULL) < 0)
                rc = 1;
        }
        if (bpf_tc_detach(&hook, &opts) < 0)
            rc = 1;
        /* the clsact qdisc goes only if this pool made it */
        if (strcmp(qdisc, "created") == 0) {
            hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
            bpf_tc_hook_destroy(&hook);
        }
    }
    unpin_all(pin);
    if (unlink(run) < 0)
        rc = 1;
    if (rc != 0)
        fprintf(stderr, "mdcached-tool: pool-bpf: unload %s: some parts "
                "were already gone\n", o->name);
    return rc;
}

int sg_tool_main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"dev", required_argument, NULL, 'd'},
        {"vip", required_argument, NULL, 'v'},
        {"cgroup", required_argument, NULL, 'c'},
        {"mark", required_argument, NULL, 'm'},
        {"xdp-mode", required_argument, NULL, 'x'},
        {"xdp-dev", required_argument, NULL, 'X'},
        {"pin-root", required_argument, NULL, 'p'},
        {"run-dir", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0}};
    struct sg_opts o = {.pin_root = "/sys/fs/bpf",
                        .run_dir = "/run/mdcached/pool-bpf",
                        .mode = "generic"};
    const char *verb;
    int c;

    if (argc < 3)
        return sg_usage();
    verb = argv[1];
    o.name = argv[2];
    if (o.name[0] == '\0' || strchr(o.name, '/') != NULL ||
        o.name[0] == '.' || strlen(o.name) > 64) {
        fprintf(stderr, "mdcached-tool: pool-bpf: bad pool name\n");
        return SG_EX_USAGE;
    }
    /* options and servers after NAME (optind 0: getopt starts afresh) */
    argc -= 2;
    argv += 2;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd': o.dev = optarg; break;
        case 'v': o.vip = optarg; break;
        case 'c': o.cgroup = optarg; break;
        case 'm':
            o.mark = (unsigned)strtoul(optarg, &end, 0);
            if (*end != '\0' || o.mark == 0)
                return sg_usage();
            break;
        case 'x': o.mode = optarg; break;
        case 'X':
            if (o.nxdev >= MDC_SG_MAX)
                return sg_usage();
            o.xdev[o.nxdev++] = optarg;
            break;
        case 'p': o.pin_root = optarg; break;
        case 'r': o.run_dir = optarg; break;
        default: return sg_usage();
        }
    }
    if (strcmp(verb, "load") == 0)
        return sg_load(&o, argc - optind, argv + optind);
    if (strcmp(verb, "unload") == 0 && optind == argc)
        return sg_unload(&o);
    return sg_usage();
}

#endif /* MDC_XDP */
