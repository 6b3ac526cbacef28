/*
 * mdcached-tool - the administration tool of mdcached, on libmdcached, in
 * the line of memcached-tool: statistics and settings, a live per-thread
 * view (top), the largest tags, get/set and the tag operations, dump and
 * flush.  Usage and output formats: mdcached-tool(1), docs/packaging.md.
 *
 * Exit status: 0 done; 1 the server answered but did not do it (a get that
 * missed, an unknown stats group, a refused dump); 64 bad usage; 69 the
 * server cannot be reached (or its TLS refused); 70 any other failure; 78
 * TLS files that cannot be loaded; spool-replay: 75 entries left, 77 run
 * as root (refused).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <stdbool.h>
#include <sysexits.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "client-c/mdcached.h"

#define TOOL_DEFAULT_SERVER "127.0.0.1:11311"
#define TOOL_MAX_TAGS 64

static const char *tool_server = TOOL_DEFAULT_SERVER;
static int tool_timeout_ms = 5000;
static bool tool_tls;                  /* --tls or any --tls-* option */
static struct mdc_tls_config tool_tls_cfg; /* zeroed: system CAs */

static void tool_usage(FILE *f)
{
    fprintf(f,
"Usage: mdcached-tool [-s SERVER] [-T MS] [--tls...] COMMAND [ARG]...\n"
"Administer an mdcached server (mdcached-tool(1)).\n"
"\n"
"  -s, --server=SERVER   host, host:port, [v6]:port, /path or unix:/path\n"
"                        (default $MDCACHED_SERVER, else " TOOL_DEFAULT_SERVER ")\n"
"  -T, --timeout=MS      connect and I/O timeout in ms (default 5000)\n"
"      --tls             connect with TLS, the server's certificate verified\n"
"                        against the system's CAs and the server's host name\n"
"      --tls-ca=FILE     trust the CAs of FILE (PEM) instead\n"
"      --tls-cert=FILE   client certificate (PEM), for mutual TLS\n"
"      --tls-key=FILE    its private key (default: in --tls-cert's file)\n"
"      --tls-name=NAME   the name to verify and send as SNI\n"
"      --tls-insecure    do not verify the server's certificate (tests only)\n"
"                        (every --tls-* option implies --tls)\n"
"  -h, --help            this help;  -V, --version  the tool's version\n"
"\n"
"Commands:\n"
"  stats [GROUP]         statistics; GROUP: settings, threads, tags\n"
"  settings              the server's settings (stats settings)\n"
"  top [-i SEC] [-n N]   per-thread ops/s, hit ratio and memory, refreshed\n"
"                        every SEC (default 1) in place in a terminal; q quits;\n"
"                        -n stops after N refreshes\n"
"  tags [N]              the N tags carrying the most records (default 20)\n"
"  get KEY               print the value (-l: key, flags, cas, ttl, tags too)\n"
"  set KEY VALUE [-e EXPTIME] [-f FLAGS] [-t TKEY:TVAL]...\n"
"                        store a record; VALUE - reads standard input\n"
"  tget TKEY TVAL...     records carrying (TKEY, TVAL) for any TVAL\n"
"  tdel TKEY TVAL...     delete them; prints how many\n"
"  dump [-w SEC]         ask the server for a dump and wait (default 600 s)\n"
"                        until it is safe on disk\n"
"  flush                 remove every record\n"
"  spool-replay DIR      replay libmdcached's spooled invalidations of DIR\n"
"                        (as the web user; refused as root)\n"
"  version               the server's version\n"
"\n"
"Exit status: 0 done, 1 the server did not do it, 64 bad usage,\n"
"69 server unreachable (or TLS refused), 70 other failure, 78 bad TLS files.\n");
}

/* A libmdcached failure: a clear message and the exit status. */
static int tool_fail(mdc_t *m, int rc, const char *what)
{
    if (rc > 0) {
        fprintf(stderr, "mdcached-tool: %s: %s\n", what, mdc_strerror(rc));
        return 1;
    }
    if (rc == MDC_ERR_TLS) {
        fprintf(stderr,
                "mdcached-tool: cannot talk TLS to the server: %s\n"
                "  (--tls-ca FILE names the CA that signed its certificate)"
                "\n",
                m != NULL ? mdc_errstr(m) : mdc_strerror(rc));
        return EX_UNAVAILABLE;
    }
    if (rc == MDC_ERR_CONNECT || rc == MDC_ERR_DOWN ||
        rc == MDC_ERR_TIMEOUT) {
        fprintf(stderr,
                "mdcached-tool: cannot reach the server: %s\n"
                "  (is mdcached running at %s?  choose another with -s "
                "SERVER)\n",
                m != NULL ? mdc_errstr(m) : mdc_strerror(rc), tool_server);
        return EX_UNAVAILABLE;
    }
    fprintf(stderr, "mdcached-tool: %s: %s\n", what,
            m != NULL ? mdc_errstr(m) : mdc_strerror(rc));
    return EX_SOFTWARE;
}

static int tool_parse_i32(const char *s, int32_t *out)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < INT32_MIN ||
        v > INT32_MAX) {
        fprintf(stderr, "mdcached-tool: '%s' is not a 32-bit integer\n", s);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

static int tool_parse_tag(const char *s, struct mdc_tag *t)
{
    char buf[64];
    char *colon;

    if (strlen(s) >= sizeof(buf) || (colon = strchr(s, ':')) == NULL) {
        fprintf(stderr, "mdcached-tool: tag '%s': want TKEY:TVAL\n", s);
        return -1;
    }
    memcpy(buf, s, strlen(s) + 1);
    buf[colon - s] = '\0';
    if (tool_parse_i32(buf, &t->tkey) < 0 ||
        tool_parse_i32(buf + (colon - s) + 1, &t->tval) < 0)
        return -1;
    return 0;
}

/* ---- stats ----------------------------------------------------------- */

static int cmd_stats(mdc_t *m, const char *group)
{
    char *text = NULL;
    int rc = mdc_stats(m, group, &text, NULL);

    if (rc == MDC_NOT_FOUND) {
        fprintf(stderr, "mdcached-tool: no stats group '%s' (try settings, "
                "threads, tags)\n", group);
        return 1;
    }
    if (rc != MDC_OK)
        return tool_fail(m, rc, "stats");
    fputs(text, stdout);
    free(text);
    return 0;
}

/* "tag:TKEY:TVAL RECORDS" lines, largest first, from stats tags. */
static int cmd_tags(mdc_t *m, long n)
{
    char *text = NULL, *line, *save = NULL;
    long shown = 0;
    int rc = mdc_stats(m, "tags", &text, NULL);

    if (rc != MDC_OK)
        return tool_fail(m, rc, "stats tags");
    printf("%11s %11s %12s\n", "TKEY", "TVAL", "RECORDS");
    for (line = strtok_r(text, "\n", &save); line != NULL && shown < n;
         line = strtok_r(NULL, "\n", &save)) {
        long long tk, tv;
        unsigned long long cnt;

        if (sscanf(line, "tag:%lld:%lld %llu", &tk, &tv, &cnt) != 3)
            continue;
        printf("%11lld %11lld %12llu\n", tk, tv, cnt);
        shown++;
    }
    if (shown == 0)
        printf("(no tagged records)\n");
    free(text);
    return 0;
}

/* ---- top ------------------------------------------------------------- */

#define TOP_MAX_THREADS 1024

struct top_thread {
    char role[16];
    uint64_t ops, hits, misses;
};

struct top_sample {
    struct top_thread t[TOP_MAX_THREADS];
    unsigned n;
    uint64_t bytes, limit, items, conns;
    double at;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counters that are one request each (not top's own stats requests). */
static int top_is_op(const char *name)
{
    return (strncmp(name, "cmd_", 4) == 0 && strcmp(name, "cmd_stats") != 0) || strcmp(name, "delete_hits") == 0 ||
           strcmp(name, "delete_misses") == 0 ||
           strcmp(name, "incr_hits") == 0 || strcmp(name, "incr_misses") == 0 ||
           strcmp(name, "decr_hits") == 0 || strcmp(name, "decr_misses") == 0;
}

static int top_sample(mdc_t *m, struct top_sample *s)
{
    char *text = NULL, *line, *save = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    rc = mdc_stats(m, "threads", &text, NULL);
    if (rc != MDC_OK)
        return rc;
    s->at = now_s();
    for (line = strtok_r(text, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char name[64], val[16];
        unsigned id;
        struct top_thread *t;

        if (sscanf(line, "%u:%63s %15s", &id, name, val) != 3 ||
            id >= TOP_MAX_THREADS)
            continue;
        if (id >= s->n)
            s->n = id + 1;
        t = &s->t[id];
        if (strcmp(name, "role") == 0)
            snprintf(t->role, sizeof(t->role), "%s", val);
        else if (strcmp(name, "get_hits") == 0)
            t->hits = strtoull(val, NULL, 10);
        else if (strcmp(name, "get_misses") == 0)
            t->misses = strtoull(val, NULL, 10);
        if (top_is_op(name))
            t->ops += strtoull(val, NULL, 10);
    }
    free(text);
    rc = mdc_stats(m, NULL, &text, NULL);
    if (rc != MDC_OK)
        return rc;
    mdc_stats_u64(text, "bytes", &s->bytes);
    mdc_stats_u64(text, "limit_maxbytes", &s->limit);
    mdc_stats_u64(text, "curr_items", &s->items);
    mdc_stats_u64(text, "curr_connections", &s->conns);
    free(text);
    return MDC_OK;
}

static void top_draw(FILE *f, const struct top_sample *prev,
                     const struct top_sample *cur, unsigned long refresh,
                     int tty)
{
    double dt = cur->at - prev->at;
    double total = 0;
    unsigned i;

    fprintf(f, "mdcached-tool top - %s - refresh %lu%s\n", tool_server,
            refresh, tty ? " (q quits)" : "");
    fprintf(f, "memory %.1f / %.1f MiB (%.1f%%)  items %" PRIu64
            "  connections %" PRIu64 "\n\n",
            (double)cur->bytes / 1048576.0, (double)cur->limit / 1048576.0,
            cur->limit ? 100.0 * (double)cur->bytes / (double)cur->limit : 0,
            cur->items, cur->conns);
    fprintf(f, "%-6s %-8s %12s %9s %14s\n", "THREAD", "ROLE", "OPS/S",
            "HIT%", "OPS");
    for (i = 0; i < cur->n; i++) {
        const struct top_thread *a = &prev->t[i], *b = &cur->t[i];
        uint64_t dops = b->ops >= a->ops ? b->ops - a->ops : 0;
        uint64_t dh = b->hits - a->hits, dm = b->misses - a->misses;
        double rate = dt > 0 ? (double)dops / dt : 0;
        char hit[16];

        if (dh + dm > 0)
            snprintf(hit, sizeof(hit), "%.1f", 100.0 * (double)dh /
                                                   (double)(dh + dm));
        else
            snprintf(hit, sizeof(hit), "-");
        total += rate;
        fprintf(f, "%-6u %-8s %12.0f %9s %14" PRIu64 "\n", i, b->role, rate,
                hit, b->ops);
    }
    fprintf(f, "%-6s %-8s %12.0f\n", "all", "", total);
}

/*
 * In a terminal the screen is redrawn in place as top(1) does: cursor home,
 * each line overwritten and its rest erased, then everything below erased -
 * no clear, so nothing scrolls into the terminal's history.
 */
static void top_print(FILE *out, const struct top_sample *prev,
                      const struct top_sample *cur, unsigned long refresh,
                      int tty)
{
    char *buf = NULL, *p;
    size_t len = 0;
    FILE *f;

    if (!tty) {
        top_draw(out, prev, cur, refresh, tty);
        fflush(out);
        return;
    }
    f = open_memstream(&buf, &len);
    if (f == NULL)
        return;
    top_draw(f, prev, cur, refresh, tty);
    fclose(f);
    fputs("\033[H", out);
    for (p = buf; *p != '\0'; p++) {
        if (*p == '\n')
            fputs("\033[K\r\n", out);
        else
            fputc(*p, out);
    }
    fputs("\033[J", out);
    fflush(out);
    free(buf);
}

static struct termios top_saved;
static int top_raw;

static void top_restore(void)
{
    if (top_raw) {
        tcsetattr(STDIN_FILENO, TCSANOW, &top_saved);
        top_raw = 0;
    }
}

static void top_on_signal(int sig)
{
    top_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int cmd_top(mdc_t *m, int argc, char **argv)
{
    static struct top_sample a, b;
    struct top_sample *prev = &a, *cur = &b, *tmp;
    double interval = 1.0;
    long count = -1;
    unsigned long refresh = 0;
    int tty = isatty(STDOUT_FILENO), keys = isatty(STDIN_FILENO);
    int c, rc = 0;

    optind = 1;
    while ((c = getopt(argc, argv, "+i:n:")) != -1) {
        char *end;
        switch (c) {
        case 'i':
            interval = strtod(optarg, &end);
            if (*end != '\0' || interval < 0.05 || interval > 3600) {
                fprintf(stderr, "mdcached-tool: top -i: want seconds in "
                        "0.05..3600\n");
                return EX_USAGE;
            }
            break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (*end != '\0' || count < 1) {
                fprintf(stderr, "mdcached-tool: top -n: want a count >= 1\n");
                return EX_USAGE;
            }
            break;
        default:
            return EX_USAGE;
        }
    }
    if ((rc = top_sample(m, prev)) != MDC_OK)
        return tool_fail(m, rc, "stats threads");
    if (keys) {
        struct termios raw;
        if (tcgetattr(STDIN_FILENO, &top_saved) == 0) {
            raw = top_saved;
            raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) {
                top_raw = 1;
                atexit(top_restore);
                signal(SIGINT, top_on_signal);
                signal(SIGTERM, top_on_signal);
            }
        }
    }
    for (;;) {
        double until = now_s() + interval;
        struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};

        for (;;) {
            double left = until - now_s();
            int r;

            if (left <= 0)
                break;
            r = poll(&pfd, top_raw ? 1 : 0, (int)(left * 1000) + 1);
            if (r > 0 && (pfd.revents & POLLIN)) {
                char ch;
                if (read(STDIN_FILENO, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
                    goto out;
            } else if (r > 0) {
                break; /* stdin closed: keep refreshing on the timer */
            }
        }
        if ((rc = top_sample(m, cur)) != MDC_OK) {
            top_restore();
            return tool_fail(m, rc, "stats threads");
        }
        top_print(stdout, prev, cur, ++refresh, tty);
        if (!tty)
            putchar('\n');
        tmp = prev;
        prev = cur;
        cur = tmp;
        if (count > 0 && (long)refresh >= count)
            break;
    }
out:
    top_restore();
    return 0;
}

/* ---- records ----------------------------------------------------------- */

static void print_tags(const struct mdc_item *it)
{
    size_t i;

    for (i = 0; i < it->ntags; i++)
        printf("%s%" PRId32 ":%" PRId32, i ? "," : "", it->tags[i].tkey,
               it->tags[i].tval);
}

static int cmd_get(mdc_t *m, int argc, char **argv)
{
    struct mdc_item *it = NULL;
    int c, lng = 0, rc;

    optind = 1;
    while ((c = getopt(argc, argv, "+l")) != -1) {
        if (c != 'l')
            return EX_USAGE;
        lng = 1;
    }
    if (argc - optind != 1) {
        fprintf(stderr, "mdcached-tool: get KEY\n");
        return EX_USAGE;
    }
    rc = mdc_get(m, argv[optind], strlen(argv[optind]), &it);
    if (rc == MDC_NOT_FOUND) {
        fprintf(stderr, "mdcached-tool: %s: not found\n", argv[optind]);
        return 1;
    }
    if (rc != MDC_OK)
        return tool_fail(m, rc, "get");
    if (lng) {
        printf("key %.*s\nflags %" PRIu32 "\ncas %" PRIu64 "\nttl %" PRId64
               "\ntags ", (int)it->klen, it->key, it->flags, it->cas, it->ttl);
        print_tags(it);
        printf("\nbytes %zu\n", it->vlen);
    }
    fwrite(it->value, 1, it->vlen, stdout);
    putchar('\n');
    mdc_item_free(it);
    return 0;
}

static char *read_stdin(size_t *len)
{
    size_t cap = 65536, n = 0, k;
    char *buf = malloc(cap);

    while (buf != NULL && (k = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += k;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    *len = n;
    return buf;
}

static int cmd_set(mdc_t *m, int argc, char **argv)
{
    struct mdc_tag tags[TOOL_MAX_TAGS];
    struct mdc_kv kv;
    size_t ntags = 0;
    char *owned = NULL, *end;
    int c, rc;

    memset(&kv, 0, sizeof(kv));
    if (argc < 3)
        goto usage;
    kv.key = argv[1];
    kv.klen = strlen(argv[1]);
    if (strcmp(argv[2], "-") == 0) {
        owned = read_stdin(&kv.vlen);
        if (owned == NULL) {
            fprintf(stderr, "mdcached-tool: out of memory reading stdin\n");
            return EX_SOFTWARE;
        }
        kv.value = owned;
    } else {
        kv.value = argv[2];
        kv.vlen = strlen(argv[2]);
    }
    optind = 3;
    while ((c = getopt(argc, argv, "+e:f:t:")) != -1) {
        switch (c) {
        case 'e':
            kv.exptime = strtoll(optarg, &end, 10);
            if (*end != '\0' || end == optarg)
                goto usage;
            break;
        case 'f':
            kv.flags = (uint32_t)strtoul(optarg, &end, 10);
            if (*end != '\0' || end == optarg)
                goto usage;
            break;
        case 't':
            if (ntags == TOOL_MAX_TAGS) {
                fprintf(stderr, "mdcached-tool: at most %d tags\n",
                        TOOL_MAX_TAGS);
                goto usage;
            }
            if (tool_parse_tag(optarg, &tags[ntags]) < 0)
                goto usage;
            ntags++;
            break;
        default:
            goto usage;
        }
    }
    if (optind != argc)
        goto usage;
    kv.tags = tags;
    kv.ntags = ntags;
    rc = mdc_store(m, MDC_SET, &kv, NULL);
    free(owned);
    if (rc != MDC_OK)
        return tool_fail(m, rc, "set");
    printf("STORED\n");
    return 0;
usage: /* every malformed set says what it takes */
    free(owned);
    fprintf(stderr, "mdcached-tool: set KEY VALUE [-e EXPTIME] "
            "[-f FLAGS] [-t TKEY:TVAL]...\n");
    return EX_USAGE;
}

static int parse_tag_args(int argc, char **argv, int32_t *tkey,
                          int32_t **tvals, size_t *n)
{
    int i;

    if (argc < 3) {
        fprintf(stderr, "mdcached-tool: %s TKEY TVAL...\n", argv[0]);
        return -1;
    }
    if (tool_parse_i32(argv[1], tkey) < 0)
        return -1;
    *tvals = calloc((size_t)(argc - 2), sizeof(**tvals));
    if (*tvals == NULL)
        return -1;
    for (i = 2; i < argc; i++)
        if (tool_parse_i32(argv[i], &(*tvals)[i - 2]) < 0) {
            free(*tvals);
            return -1;
        }
    *n = (size_t)(argc - 2);
    return 0;
}

/* One record a line: KEY TAB VALUE TAB TAGS. */
static int cmd_tget(mdc_t *m, int argc, char **argv)
{
    struct mdc_itemset set;
    int32_t tkey, *tvals;
    size_t n, i;
    int rc;

    if (parse_tag_args(argc, argv, &tkey, &tvals, &n) < 0)
        return EX_USAGE;
    memset(&set, 0, sizeof(set));
    rc = mdc_get_by_tag(m, tkey, tvals, n, &set);
    free(tvals);
    if (rc != MDC_OK && rc != MDC_TRUNCATED)
        return tool_fail(m, rc, "get by tag");
    for (i = 0; i < set.count; i++) {
        const struct mdc_item *it = set.items[i];
        fwrite(it->key, 1, it->klen, stdout);
        putchar('\t');
        fwrite(it->value, 1, it->vlen, stdout);
        putchar('\t');
        print_tags(it);
        putchar('\n');
    }
    if (rc == MDC_TRUNCATED)
        fprintf(stderr, "mdcached-tool: the reply was truncated by the "
                "server's --tag-reply-limit\n");
    fprintf(stderr, "%zu record%s\n", set.count, set.count == 1 ? "" : "s");
    mdc_itemset_free(&set);
    return 0;
}

static int cmd_tdel(mdc_t *m, int argc, char **argv)
{
    int32_t tkey, *tvals;
    uint64_t deleted = 0;
    size_t n;
    int rc;

    if (parse_tag_args(argc, argv, &tkey, &tvals, &n) < 0)
        return EX_USAGE;
    rc = mdc_del_by_tag(m, tkey, tvals, n, &deleted);
    free(tvals);
    if (rc != MDC_OK)
        return tool_fail(m, rc, "delete by tag");
    printf("deleted %" PRIu64 "\n", deleted);
    return 0;
}

/* ---- dump: the text command "dump" (answers once the file is on disk) -- */

static int tool_connect_raw(const char *spec, int timeout_ms)
{
    char host[256], port[16] = "11311";
    const char *p = spec;
    int fd = -1;

    if (strncmp(p, "unix:", 5) == 0)
        p += 5;
    if (p[0] == '/') {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        if (strlen(p) >= sizeof(sa.sun_path))
            return -1;
        memcpy(sa.sun_path, p, strlen(p) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            close(fd);
            fd = -1;
        }
    } else {
        struct addrinfo hints, *res = NULL, *ai;
        const char *colon;
        size_t hl;

        if (p[0] == '[') {
            const char *e = strchr(p, ']');
            if (e == NULL)
                return -1;
            hl = (size_t)(e - p - 1);
            if (hl >= sizeof(host))
                return -1;
            memcpy(host, p + 1, hl);
            host[hl] = '\0';
            if (e[1] == ':')
                snprintf(port, sizeof(port), "%s", e + 2);
        } else if ((colon = strrchr(p, ':')) != NULL &&
                   strchr(p, ':') == colon) {
            hl = (size_t)(colon - p);
            if (hl >= sizeof(host))
                return -1;
            memcpy(host, p, hl);
            host[hl] = '\0';
            snprintf(port, sizeof(port), "%s", colon + 1);
        } else {
            snprintf(host, sizeof(host), "%s", p);
        }
        memset(&hints, 0, sizeof(hints));
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host, port, &hints, &res) != 0)
            return -1;
        for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
            fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
            if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                close(fd);
                fd = -1;
            }
        }
        freeaddrinfo(res);
    }
    if (fd >= 0) {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

static int cmd_dump(int argc, char **argv)
{
    char line[1024];
    size_t n = 0;
    long wait_s = 600;
    int c, fd, err;

    optind = 1;
    while ((c = getopt(argc, argv, "+w:")) != -1) {
        char *end;
        if (c != 'w')
            return EX_USAGE;
        wait_s = strtol(optarg, &end, 10);
        if (*end != '\0' || wait_s < 1 || wait_s > 86400) {
            fprintf(stderr, "mdcached-tool: dump -w: want seconds >= 1\n");
            return EX_USAGE;
        }
    }
    fd = tool_connect_raw(tool_server, (int)wait_s * 1000);
    if (fd < 0) {
        err = errno;
        fprintf(stderr,
                "mdcached-tool: cannot reach the server: %s: %s\n"
                "  (is mdcached running at %s?  choose another with -s "
                "SERVER)\n", tool_server, strerror(err), tool_server);
        return EX_UNAVAILABLE;
    }
    if (write(fd, "dump\r\n", 6) != 6) {
        fprintf(stderr, "mdcached-tool: dump: %s\n", strerror(errno));
        close(fd);
        return EX_UNAVAILABLE;
    }
    /* one reply line, when the dump is safe on disk */
    while (n < sizeof(line) - 1) {
        ssize_t k = read(fd, line + n, 1);
        if (k <= 0) {
            fprintf(stderr, "mdcached-tool: dump: %s\n",
                    k == 0 ? "the server closed the connection"
                    : errno == EAGAIN ? "no answer in time (-w SEC)"
                                      : strerror(errno));
            close(fd);
            return k == 0 ? EX_SOFTWARE : EX_TEMPFAIL;
        }
        if (line[n] == '\n')
            break;
        n++;
    }
    close(fd);
    line[n] = '\0';
    if (n > 0 && line[n - 1] == '\r')
        line[n - 1] = '\0';
    if (strcmp(line, "ERROR") == 0) {
        fprintf(stderr, "mdcached-tool: dump: the server does not know the "
                "dump command (a build without dumps)\n");
        return 1;
    }
    if (strncmp(line, "SERVER_ERROR", 12) == 0 ||
        strncmp(line, "CLIENT_ERROR", 12) == 0) {
        fprintf(stderr, "mdcached-tool: dump failed: %s\n", line);
        return 1;
    }
    printf("%s\n", line);
    return 0;
}

/* ---- spool-replay ------------------------------------------------------ */

/*
 * Replay every spool file of DIR (libmdcached's invalidations that could
 * not reach a server: docs/client-c.md), all entries, in order.  Run as
 * the web user that writes the spool, never as root (refused: exit 77).
 * Exit 0 nothing left, 75 entries left (servers still unreachable), 64
 * usage, 70 other failures.  -T, --tls* apply to every server.
 */
static int cmd_spool_replay(int argc, char **argv)
{
    struct mdc_spool_result r;
    mdc_pool_t *p;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "mdcached-tool: spool-replay DIR\n");
        return EX_USAGE;
    }
    if (geteuid() == 0) {
        fprintf(stderr, "mdcached-tool: spool-replay: refusing to run as "
                "root: run it as the user whose processes write %s\n",
                argv[1]);
        return EX_NOPERM;
    }
    if ((p = mdc_pool_create()) == NULL)
        return EX_SOFTWARE;
    mdc_pool_set_timeouts(p, tool_timeout_ms, tool_timeout_ms);
    mdc_pool_set_retry_delay(p, 0);
    if (tool_tls && mdc_pool_set_tls(p, &tool_tls_cfg) != MDC_OK) {
        fprintf(stderr, "mdcached-tool: TLS settings: %s\n",
                mdc_pool_errstr(p));
        mdc_pool_destroy(p);
        return EX_CONFIG;
    }
    rc = mdc_pool_spool_replay(p, argv[1], &r);
    printf("files %" PRIu64 " replayed %" PRIu64 " dropped %" PRIu64
           " left %" PRIu64 " damaged %" PRIu64 "\n",
           r.files, r.replayed, r.dropped, r.left, r.damaged);
    if (rc != MDC_OK)
        fprintf(stderr, "mdcached-tool: spool-replay: %s\n",
                mdc_pool_errstr(p));
    mdc_pool_destroy(p);
    if (rc == MDC_OK)
        return 0;
    return rc == MDC_ERR_PARTIAL ? EX_TEMPFAIL
           : rc == MDC_ERR_ARG  ? EX_USAGE
                                : EX_SOFTWARE;
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"server", required_argument, NULL, 's'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"tls", no_argument, NULL, 1},
        {"tls-ca", required_argument, NULL, 2},
        {"tls-cert", required_argument, NULL, 3},
        {"tls-key", required_argument, NULL, 4},
        {"tls-insecure", no_argument, NULL, 5},
        {"tls-name", required_argument, NULL, 6},
        {NULL, 0, NULL, 0},
    };
    const char *env = getenv("MDCACHED_SERVER");
    const char *cmd;
    mdc_t *m = NULL;
    int c, rc, cargc;
    char **cargv;

    if (env != NULL && env[0] != '\0')
        tool_server = env;
    while ((c = getopt_long(argc, argv, "+s:T:hV", lopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            tool_server = optarg;
            break;
        case 'T':
            tool_timeout_ms = (int)strtol(optarg, &end, 10);
            if (*end != '\0' || tool_timeout_ms < 1) {
                fprintf(stderr, "mdcached-tool: -T: want milliseconds\n");
                return EX_USAGE;
            }
            break;
        case 1:
            tool_tls = true;
            break;
        case 2:
            tool_tls = true;
            tool_tls_cfg.ca_file = optarg;
            break;
        case 3:
            tool_tls = true;
            tool_tls_cfg.cert_file = optarg;
            break;
        case 4:
            tool_tls = true;
            tool_tls_cfg.key_file = optarg;
            break;
        case 5:
            tool_tls = true;
            tool_tls_cfg.flags |= MDC_TLS_INSECURE;
            break;
        case 6:
            tool_tls = true;
            tool_tls_cfg.server_name = optarg;
            break;
        case 'h':
            tool_usage(stdout);
            return 0;
        case 'V':
            printf("mdcached-tool %s (libmdcached %s)\n", PACKAGE_VERSION,
                   mdc_lib_version());
            return 0;
        default:
            tool_usage(stderr);
            return EX_USAGE;
        }
    }
    if (optind >= argc) {
        tool_usage(stderr);
        return EX_USAGE;
    }
    cmd = argv[optind];
    cargc = argc - optind;
    cargv = argv + optind;
    if (strcmp(cmd, "spool-replay") == 0)
        return cmd_spool_replay(cargc, cargv);
    if (strcmp(cmd, "dump") == 0) {
        if (tool_tls) { /* dump is a text command on a plain socket */
            fprintf(stderr, "mdcached-tool: dump does not support TLS: run "
                    "it on the server's plain or Unix socket\n");
            return EX_USAGE;
        }
        return cmd_dump(cargc, cargv);
    }
    m = mdc_create(tool_server);
    if (m == NULL) {
        fprintf(stderr, "mdcached-tool: bad server address '%s': want host, "
                "host:port, [v6]:port, /path or unix:/path\n", tool_server);
        return EX_USAGE;
    }
    mdc_set_timeouts(m, tool_timeout_ms, tool_timeout_ms);
    if (tool_tls && (rc = mdc_set_tls(m, &tool_tls_cfg)) != MDC_OK) {
        fprintf(stderr, "mdcached-tool: TLS settings: %s\n", mdc_errstr(m));
        mdc_destroy(m);
        return rc == MDC_ERR_ARG ? EX_USAGE : EX_CONFIG;
    }
    if (strcmp(cmd, "stats") == 0 && cargc <= 2)
        rc = cmd_stats(m, cargc == 2 ? cargv[1] : NULL);
    else if (strcmp(cmd, "settings") == 0 && cargc == 1)
        rc = cmd_stats(m, "settings");
    else if (strcmp(cmd, "top") == 0)
        rc = cmd_top(m, cargc, cargv);
    else if (strcmp(cmd, "tags") == 0 && cargc <= 2) {
        long n = cargc == 2 ? strtol(cargv[1], NULL, 10) : 20;
        if (n < 1 || n > 100) {
            fprintf(stderr, "mdcached-tool: tags N: 1..100\n");
            rc = EX_USAGE;
        } else {
            rc = cmd_tags(m, n);
        }
    } else if (strcmp(cmd, "get") == 0)
        rc = cmd_get(m, cargc, cargv);
    else if (strcmp(cmd, "set") == 0)
        rc = cmd_set(m, cargc, cargv);
    else if (strcmp(cmd, "tget") == 0)
        rc = cmd_tget(m, cargc, cargv);
    else if (strcmp(cmd, "tdel") == 0)
        rc = cmd_tdel(m, cargc, cargv);
    else if (strcmp(cmd, "flush") == 0 && cargc == 1) {
        rc = mdc_flush(m);
        rc = rc == MDC_OK ? (printf("OK\n"), 0) : tool_fail(m, rc, "flush");
    } else if (strcmp(cmd, "version") == 0 && cargc == 1) {
        char v[128];
        rc = mdc_version(m, v, sizeof(v));
        rc = rc == MDC_OK ? (printf("%s\n", v), 0)
                          : tool_fail(m, rc, "version");
    } else {
        fprintf(stderr, "mdcached-tool: unknown command or arguments: %s "
                "(see mdcached-tool -h)\n", cmd);
        rc = EX_USAGE;
    }
    mdc_destroy(m);
    return rc;
}
