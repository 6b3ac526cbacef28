/*
 * options.c - everything generated from MDC_OPTIONS (options.h): defaults,
 * getopt_long tables, `-h` text, value parsing and range checks, and the
 * "settings" listing.  Bad values are reported here and never reach the
 * rest of the daemon.
 */
#include "config.h"

#include "options.h"
#include "options_mc.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum opt_id {
#define X(field, sh, lo, kind, def, mn, mx, meta, help) OPT_ID_##field,
    MDC_OPTIONS(X)
#undef X
        OPT_ID__COUNT
};

enum opt_kind {
    OT_UINT,
    OT_PORT,
    OT_NCPU,
    OT_POW2,
    OT_SIZE,
    OT_MODE,
    OT_FLAG,
    OT_LEVEL,
    OT_STR,
    OT_LIST,
    OT_ACTION,
};

struct opt_desc {
    const char *lname;
    int sh;
    enum opt_kind kind;
    const char *def;
    uint64_t min, max;
    const char *meta;
    const char *help;
    size_t off;
};

static const struct opt_desc opt_table[] = {
#define X(field, sh, lo, kind, def, mn, mx, meta, help)                        \
    {lo, sh, kind, def, mn, mx, meta, help, offsetof(struct options, field)},
    MDC_OPTIONS(X)
#undef X
};

/* getopt_long value of a long-only option. */
#define OPT_LONG_BASE 256

static uint64_t opt_ncpu(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n > 0 ? (uint64_t)n : 1;
}

static int opt_parse_u64(const char *s, uint64_t *out, int base)
{
    char *end;
    unsigned long long v;

    if (s == NULL || *s == '\0' || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, base);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int options_parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;

    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    switch (*end) {
    case '\0':
        break;
    case 'k': case 'K':
        mul = 1024;
        break;
    case 'm': case 'M':
        mul = 1024 * 1024;
        break;
    case 'g': case 'G':
        mul = 1024 * 1024 * 1024;
        break;
    default:
        return -1;
    }
    if (*end != '\0' && end[1] != '\0' &&
        !((end[1] == 'b' || end[1] == 'B') && end[2] == '\0'))
        return -1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

/* The PORT of ADDR:PORT: 0-65535 or "auto" (OPT_PORT_AUTO); 0 or -1. */
static int opt_parse_port(const char *s, unsigned long *p)
{
    char *e;

    if (strcmp(s, "auto") == 0) {
        *p = OPT_PORT_AUTO;
        return 0;
    }
    if (!isdigit((unsigned char)s[0]))
        return -1;
    *p = strtoul(s, &e, 10);
    return *e != '\0' || *p > 65535 ? -1 : 0;
}

/* Split "addr", "addr:port", "[v6]" or "[v6]:port" into host and port
 * ("auto" for OPT_PORT_AUTO). */
int options_split_listen(const char *spec, unsigned long dport, char *host,
                     size_t hlen, char *port, size_t plen)
{
    const char *colon = strrchr(spec, ':');
    const char *h = spec;
    size_t n;
    unsigned long p = dport;

    if (spec[0] == '[') {
        const char *end = strchr(spec, ']');
        if (end == NULL)
            return -1;
        h = spec + 1;
        n = (size_t)(end - h);
        if (end[1] == ':') {
            if (opt_parse_port(end + 2, &p) < 0)
                return -1;
        } else if (end[1] != '\0') {
            return -1;
        }
    } else if (colon != NULL && strchr(spec, ':') == colon) {
        n = (size_t)(colon - spec);
        if (opt_parse_port(colon + 1, &p) < 0)
            return -1;
    } else {
        n = strlen(spec); /* a bare name, v4 address or v6 address */
    }
    if (n == 0 || n >= hlen)
        return -1;
    memcpy(host, h, n);
    host[n] = '\0';
    if (p == OPT_PORT_AUTO)
        snprintf(port, plen, "auto");
    else
        snprintf(port, plen, "%lu", p);
    return 0;
}

/* Store one value of option d into o; 0 ok, -1 with a reason in why. */
static int opt_set(struct options *o, const struct opt_desc *d,
                   const char *arg, const char **why)
{
    char *p = (char *)o + d->off;
    uint64_t v = 0;
    int rc = -1;

    switch (d->kind) {
    case OT_NCPU:
        if (arg != NULL && strcmp(arg, "auto") == 0) {
            v = opt_ncpu();
            if (v > d->max)
                v = d->max;
            goto store_u64;
        }
        /* fall through */
    case OT_PORT:
        if (d->kind == OT_PORT && arg != NULL && strcmp(arg, "auto") == 0) {
            v = OPT_PORT_AUTO;
            goto store_u64;
        }
        /* fall through */
    case OT_UINT:
    case OT_POW2:
        if (opt_parse_u64(arg, &v, 10) < 0) {
            *why = "not a number";
            goto out;
        }
        if (d->kind == OT_POW2 && v != 0 && (v & (v - 1)) != 0) {
            *why = "not a power of two";
            goto out;
        }
        goto range;
    case OT_SIZE:
        if (options_parse_size(arg, &v) < 0) {
            *why = "not a size (digits with an optional k, m or g suffix)";
            goto out;
        }
        goto range;
    case OT_MODE:
        if (opt_parse_u64(arg, &v, 8) < 0) {
            *why = "not an octal mode";
            goto out;
        }
        goto range;
    case OT_LEVEL:
        if (opt_parse_u64(arg, &v, 10) < 0) {
            *why = "not a log level";
            goto out;
        }
        goto range;
    case OT_FLAG:
    case OT_ACTION:
        *(bool *)p = true;
        rc = 0;
        goto out;
    case OT_STR:
        if (arg == NULL || arg[0] == '\0') {
            *why = "empty value";
            goto out;
        }
        *(const char **)p = arg;
        rc = 0;
        goto out;
    case OT_LIST: {
        struct opt_list *l = (struct opt_list *)p;
        const char **nv;

        if (arg == NULL || arg[0] == '\0') {
            *why = "empty value";
            goto out;
        }
        nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
        if (nv == NULL) {
            *why = "out of memory";
            goto out;
        }
        l->v = nv;
        l->v[l->n++] = arg;
        rc = 0;
        goto out;
    }
    }
range:
    if (v < d->min || v > d->max) {
        *why = "out of range";
        goto out;
    }
store_u64:
    *(uint64_t *)p = v;
    rc = 0;
out:
    return rc;
}

void options_defaults(struct options *o)
{
    const char *why = NULL;
    size_t i;

    memset(o, 0, sizeof(*o));
    for (i = 0; i < OPT_ID__COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];

        if (d->kind == OT_FLAG || d->kind == OT_ACTION)
            continue;
        if (d->kind == OT_STR && d->def[0] == '\0')
            continue;
        (void)opt_set(o, d, d->def, &why);
    }
}

void options_teardown(struct options *o)
{
#define X(field, sh, lo, kind, def, mn, mx, meta, help)                        \
    if (kind == OT_LIST) {                                                     \
        struct opt_list *l = (struct opt_list *)(void *)&o->field;             \
        free(l->v);                                                            \
        l->v = NULL;                                                           \
        l->n = 0;                                                              \
    }
    MDC_OPTIONS(X)
#undef X
    free(o->conf_text);
    o->conf_text = NULL;
    if (o->mc != NULL) {
        options_mc_teardown(o->mc);
        free(o->mc);
        o->mc = NULL;
    }
}

/* Render the current value of option d in o as text. */
static void opt_format(const struct options *o, const struct opt_desc *d,
                       char *buf, size_t len)
{
    const char *p = (const char *)o + d->off;

    switch (d->kind) {
    case OT_PORT:
        if (*(const uint64_t *)(const void *)p == OPT_PORT_AUTO) {
            snprintf(buf, len, "auto");
            break;
        }
        /* fall through */
    case OT_UINT:
    case OT_NCPU:
    case OT_POW2:
    case OT_SIZE:
    case OT_LEVEL:
        /* atomic: a config reload may change a live limit (max-conns) */
        snprintf(buf, len, "%" PRIu64,
                 __atomic_load_n((const uint64_t *)(const void *)p,
                                 __ATOMIC_RELAXED));
        break;
    case OT_MODE:
        snprintf(buf, len, "0%" PRIo64, *(const uint64_t *)p);
        break;
    case OT_FLAG:
    case OT_ACTION:
        snprintf(buf, len, "%s", *(const bool *)p ? "yes" : "no");
        break;
    case OT_STR: {
        const char *s = *(const char *const *)p;
        snprintf(buf, len, "%s", s != NULL ? s : "");
        break;
    }
    case OT_LIST: {
        const struct opt_list *l = (const struct opt_list *)p;
        size_t n = 0, i;

        buf[0] = '\0';
        for (i = 0; i < l->n && n < len; i++) {
            int k = snprintf(buf + n, len - n, "%s%s", i ? "," : "", l->v[i]);
            if (k < 0)
                break;
            n += (size_t)k;
        }
        break;
    }
    }
}

void options_visit(const struct options *o, options_visit_fn fn, void *ctx)
{
    char buf[512];
    size_t i;

    for (i = 0; i < OPT_ID__COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];

        if (d->kind == OT_ACTION)
            continue;
        opt_format(o, d, buf, sizeof(buf));
        fn(ctx, d->lname, buf);
    }
}

void options_usage(FILE *f, const char *argv0)
{
    size_t i;

    fprintf(f,
            "Usage: %s [OPTION]...\n"
            "mdcached %s - tagged in-memory cache server.  Runs in the "
            "foreground.\n\n",
            argv0, PACKAGE_VERSION);
    for (i = 0; i < OPT_ID__COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];
        char head[64];
        int n;

        if (d->sh != 0)
            n = snprintf(head, sizeof(head), "  -%c, --%s", d->sh, d->lname);
        else
            n = snprintf(head, sizeof(head), "      --%s", d->lname);
        if (d->meta != NULL && n > 0 && (size_t)n < sizeof(head))
            snprintf(head + n, sizeof(head) - (size_t)n,
                     d->kind == OT_LEVEL ? "[=%s]" : "=%s", d->meta);
        fprintf(f, "%-30s %s", head, d->help);
        if (d->kind == OT_NCPU)
            fprintf(f, " (default: %s = %" PRIu64 ")", d->def, opt_ncpu());
        else if ((d->kind == OT_STR || d->kind == OT_LIST) && d->def[0] == '\0')
            fprintf(f, " (default: none)");
        else if (d->kind != OT_ACTION)
            fprintf(f, " (default: %s)", d->def);
        fputc('\n', f);
    }
    fprintf(f, "\nSee docs/options.md for details; mdcached(8).\n");
}

/* -v, -vv, -v3, --verbose, --verbose=3, -v 3.  *used is set to the value
 * read (optarg, or the next argument for "-v 3"), NULL when none. */
static int opt_level(struct options *o, const struct opt_desc *d, int argc,
                     char **argv, const char **why, const char **used)
{
    const char *arg = optarg;
    size_t k;

    if (arg == NULL && optind < argc && argv[optind][0] != '\0' &&
        strspn(argv[optind], "0123456789") == strlen(argv[optind]))
        arg = argv[optind++];
    *used = arg;
    if (arg == NULL) {
        if (o->verbose < d->max)
            o->verbose++;
        return 0;
    }
    k = strspn(arg, "v");
    if (k == strlen(arg)) {
        o->verbose += k + 1;
        if (o->verbose > d->max)
            o->verbose = d->max;
        return 0;
    }
    return opt_set(o, d, arg, why);
}

static const struct opt_desc *opt_by_name(const char *name)
{
    size_t i;

    for (i = 0; i < OPT_ID__COUNT; i++)
        if (strcmp(opt_table[i].lname, name) == 0)
            return &opt_table[i];
    return NULL;
}

static char *opt_trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

/* Read the whole of path into a NUL-terminated malloc'd buffer. */
static char *opt_slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0, cap = 0, k;
    struct stat st;
    int e = 0;

    if (f == NULL)
        return NULL;
    /* a directory opens, and its read fails with EISDIR: say that */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        goto out;
    }
    for (;;) {
        if (cap - len < 4096) {
            char *nb = realloc(buf, cap + 65536);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                goto out;
            }
            buf = nb;
            cap += 65536;
        }
        errno = 0;
        k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
        if (k == 0) {
            e = errno;
            break;
        }
        if (len > (1u << 20)) {
            free(buf);
            buf = NULL;
            errno = EFBIG;
            goto out;
        }
    }
    if (ferror(f)) {
        free(buf);
        buf = NULL;
        errno = e != 0 ? e : EIO;
        goto out;
    }
    buf[len] = '\0';
out:
    e = errno;
    fclose(f);
    errno = e;
    return buf;
}

/*
 * Apply the config file o->config: "long-option = value" lines, '#'
 * comments, blank lines; a flag may stand alone or take yes/no.  Options
 * given on the command line (cli_seen) keep their value.  0 ok; -1 with
 * "file:line: reason" printed.
 */
static int opt_load_file(struct options *o, const bool *cli_seen,
                         const char *argv0, FILE *err)
{
    unsigned file_seen[OPT_ID__COUNT]; /* the line it was first on */
    char *line, *next;
    unsigned lineno = 0;
    const char *path = o->config;

    memset(file_seen, 0, sizeof(file_seen));
    o->conf_text = opt_slurp(path);
    if (o->conf_text == NULL) {
        fprintf(err, "%s: cannot read config file %s: %s\n", argv0, path,
                strerror(errno));
        return -1;
    }
    if (strlen(o->conf_text) == 0)
        return 0;
    for (line = o->conf_text; line != NULL; line = next) {
        const struct opt_desc *d;
        const char *why = NULL;
        char *key, *val = NULL, *eq;
        size_t id;

        lineno++;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        key = opt_trim(line);
        if (*key == '\0' || *key == '#')
            continue;
        eq = strchr(key, '=');
        if (eq != NULL) {
            *eq = '\0';
            val = opt_trim(eq + 1);
            key = opt_trim(key);
            if (val[0] == '"' && strlen(val) >= 2 &&
                val[strlen(val) - 1] == '"') {
                val[strlen(val) - 1] = '\0';
                val++;
            }
        }
        d = opt_by_name(key);
        if (d == NULL) {
            fprintf(err, "%s: %s:%u: unknown option '%s'\n", argv0, path,
                    lineno, key);
            return -1;
        }
        if (d->kind == OT_ACTION || strcmp(d->lname, "config") == 0 ||
            strcmp(d->lname, "memcached-compat") == 0) {
            fprintf(err, "%s: %s:%u: '%s' is not allowed in a config file\n",
                    argv0, path, lineno, key);
            return -1;
        }
        id = (size_t)(d - opt_table);
        if (file_seen[id] != 0 && d->kind != OT_LIST) {
            /* one value: which line was meant? (listen, tls-listen
             * repeat) */
            fprintf(err, "%s: %s:%u: %s given twice (first on line %u); "
                    "it takes one value\n", argv0, path, lineno, key,
                    file_seen[id]);
            return -1;
        }
        if (file_seen[id] == 0)
            file_seen[id] = lineno;
        if (cli_seen[id])
            continue; /* the command line wins */
        if (d->kind == OT_FLAG) {
            bool on;
            if (val == NULL || strcmp(val, "yes") == 0 ||
                strcmp(val, "true") == 0 || strcmp(val, "on") == 0 ||
                strcmp(val, "1") == 0)
                on = true;
            else if (strcmp(val, "no") == 0 || strcmp(val, "false") == 0 ||
                     strcmp(val, "off") == 0 || strcmp(val, "0") == 0)
                on = false;
            else {
                fprintf(err, "%s: %s:%u: invalid value '%s' for %s: want "
                        "yes or no\n", argv0, path, lineno, val, key);
                return -1;
            }
            *(bool *)((char *)o + d->off) = on;
            continue;
        }
        if (val == NULL) {
            fprintf(err, "%s: %s:%u: %s needs a value (%s = %s)\n", argv0,
                    path, lineno, key, key, d->meta ? d->meta : "VALUE");
            return -1;
        }
        if (d->kind == OT_LIST && file_seen[id] == lineno) {
            /* the file's first line replaces the default */
            ((struct opt_list *)((char *)o + d->off))->n = 0;
        }
        if (opt_set(o, d, val, &why) < 0) {
            if (d->kind == OT_STR || d->kind == OT_LIST || d->kind == OT_MODE)
                fprintf(err, "%s: %s:%u: invalid value '%s' for %s: %s\n",
                        argv0, path, lineno, val, key, why);
            else
                fprintf(err,
                        "%s: %s:%u: invalid value '%s' for %s: %s "
                        "(allowed %" PRIu64 "..%" PRIu64 ")\n",
                        argv0, path, lineno, val, key, why, d->min, d->max);
            return -1;
        }
    }
    return 0;
}

int options_reparse(const struct options *cur, struct options *next,
                    FILE *err)
{
    return options_parse(next, cur->argc, cur->argv, err);
}

void options_diff(const struct options *cur, const struct options *next,
                  options_visit_fn fn, void *ctx)
{
    char a[512], b[512];
    size_t i;

    for (i = 0; i < OPT_ID__COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];

        if (d->kind == OT_ACTION)
            continue;
        opt_format(cur, d, a, sizeof(a));
        opt_format(next, d, b, sizeof(b));
        if (strcmp(a, b) != 0)
            fn(ctx, d->lname, b);
    }
}

/* getopt_long()'s tables from the option table: long options, and the
 * short-option string (':' first, so a missing value is reported as ':'). */
static void opt_getopt_tables(struct option *lopts, char *shorts)
{
    size_t i, ns = 0;

    shorts[ns++] = ':';
    for (i = 0; i < OPT_ID__COUNT; i++) {
        const struct opt_desc *d = &opt_table[i];
        int has = (d->kind == OT_FLAG || d->kind == OT_ACTION) ? no_argument
                  : d->kind == OT_LEVEL ? optional_argument
                                        : required_argument;

        lopts[i].name = d->lname;
        lopts[i].has_arg = has;
        lopts[i].flag = NULL;
        lopts[i].val = d->sh != 0 ? d->sh : OPT_LONG_BASE + (int)i;
        if (d->sh != 0) {
            shorts[ns++] = (char)d->sh;
            if (has == required_argument)
                shorts[ns++] = ':';
            else if (has == optional_argument) {
                shorts[ns++] = ':';
                shorts[ns++] = ':';
            }
        }
    }
    memset(&lopts[OPT_ID__COUNT], 0, sizeof(lopts[0]));
    shorts[ns] = '\0';
}

/* The table entry of getopt_long()'s return value c, or NULL. */
static const struct opt_desc *opt_of(int c)
{
    size_t i;

    if (c >= OPT_LONG_BASE) {
        i = (size_t)(c - OPT_LONG_BASE);
    } else {
        for (i = 0; i < OPT_ID__COUNT; i++)
            if (opt_table[i].sh == c)
                break;
    }
    return i < OPT_ID__COUNT ? &opt_table[i] : NULL;
}

static void opt_report_invalid(FILE *err, const char *argv0,
                               const struct opt_desc *d, const char *val,
                               const char *why)
{
    if (d->kind == OT_SIZE || d->kind == OT_UINT || d->kind == OT_POW2 ||
        d->kind == OT_NCPU || d->kind == OT_LEVEL || d->kind == OT_PORT)
        fprintf(err,
                "%s: invalid value '%s' for --%s: %s "
                "(allowed %" PRIu64 "..%" PRIu64 "%s)\n",
                argv0, val ? val : "", d->lname, why, d->min, d->max,
                d->kind == OT_PORT ? " or auto" : "");
    else
        fprintf(err, "%s: invalid value '%s' for --%s: %s\n", argv0,
                val ? val : "", d->lname, why);
}

/* The port of a --tls-listen address that names none (net.c's
 * NET_TLS_PORT). */
#define OPT_TLS_PORT 11312

/*
 * Check the syntax of every address of the list option name (-l or
 * --tls-listen: "addr", "addr:port", "[v6]", "[v6]:port"), as net.c will
 * split them.  0, or -1 with the reason on err.  *any_port is set when some
 * address gets a port other than 0, its own or dport: net.c binds no TCP
 * socket for an address whose port is 0 (never a random port).
 */
static int opt_check_listen(const struct opt_list *l, const char *name,
                            unsigned long dport, bool *any_port, FILE *err,
                            const char *argv0)
{
    size_t i;

    for (i = 0; i < l->n; i++) {
        char host[256], port[16];

        if (options_split_listen(l->v[i], dport, host, sizeof(host), port,
                                 sizeof(port)) < 0) {
            fprintf(err, "%s: invalid value '%s' for --%s: want ADDR, "
                    "ADDR:PORT, [V6ADDR] or [V6ADDR]:PORT\n", argv0,
                    l->v[i], name);
            return -1;
        }
        if (strcmp(port, "0") != 0)
            *any_port = true;
    }
    return 0;
}

/* The host and port of entry i of -l then --tls-listen (as net.c binds
 * them); false when it gets no socket (port 0). */
static bool opt_listen_at(const struct options *o, size_t i, char *host,
                          size_t hlen, char *port, size_t plen,
                          const char **spec, const char **name)
{
    bool tls = i >= o->listen.n;

    *spec = tls ? o->tls_listen.v[i - o->listen.n] : o->listen.v[i];
    *name = tls ? "--tls-listen" : "-l";
    return options_split_listen(*spec, tls ? OPT_TLS_PORT : o->port, host,
                                hlen, port, plen) == 0 &&
           strcmp(port, "0") != 0;
}

/*
 * The same address and port twice among -l and --tls-listen (a repeated
 * -l, or a listen line repeated in the config file): the second bind would
 * fail with "Address already in use", as if another process held it.
 * "auto" ports are all different.  0, or -1 with the reason on err.
 */
static int opt_check_listen_twice(const struct options *o, FILE *err,
                                  const char *argv0)
{
    size_t n = o->listen.n + o->tls_listen.n, i, j;

    for (i = 0; i < n; i++) {
        char hi[256], pi[16], hj[256], pj[16];
        const char *si, *ni, *sj, *nj;

        if (!opt_listen_at(o, i, hi, sizeof(hi), pi, sizeof(pi), &si, &ni) ||
            strcmp(pi, "auto") == 0)
            continue;
        for (j = i + 1; j < n; j++) {
            if (!opt_listen_at(o, j, hj, sizeof(hj), pj, sizeof(pj), &sj,
                               &nj) ||
                strcmp(hi, hj) != 0 || strcmp(pi, pj) != 0)
                continue;
            fprintf(err, "%s: the address %s%s%s:%s was given twice (%s %s "
                    "and %s %s)\n", argv0, strchr(hi, ':') ? "[" : "", hi,
                    strchr(hi, ':') ? "]" : "", pi, ni, si, nj, sj);
            return -1;
        }
    }
    return 0;
}

/* The checks that concern several options, after all are read: 0, or -1
 * with the reason written to err. */
static int opt_validate(struct options *o, FILE *err, const char *argv0)
{
    bool tcp = false; /* some -l or --tls-listen address gets a TCP port */

    if (opt_check_listen(&o->listen, "listen", o->port, &tcp, err,
                         argv0) < 0 ||
        opt_check_listen(&o->tls_listen, "tls-listen", OPT_TLS_PORT, &tcp,
                         err, argv0) < 0 ||
        opt_check_listen_twice(o, err, argv0) < 0)
        return -1;
    if (o->user != NULL && getpwnam(o->user) == NULL) {
        fprintf(err, "%s: invalid value '%s' for --user: no such user\n",
                argv0, o->user);
        return -1;
    }
    /* memcached refuses the same (and -I under 1024, as the table does);
     * the limit is --memory-limit-kib's when given, else -m's */
    if (o->max_item_size > (o->memory_kib != 0 ? o->memory_kib << 10
                                               : o->memory_mb << 20) / 2) {
        if (o->memory_kib != 0)
            fprintf(err, "%s: -I %llu is more than half of "
                    "--memory-limit-kib %llu: cannot set item size limit "
                    "higher than 1/2 of memory max\n", argv0,
                    (unsigned long long)o->max_item_size,
                    (unsigned long long)o->memory_kib);
        else
            fprintf(err, "%s: -I %llu is more than half of -m %llu MiB: "
                    "cannot set item size limit higher than 1/2 of memory "
                    "max\n", argv0, (unsigned long long)o->max_item_size,
                    (unsigned long long)o->memory_mb);
        return -1;
    }
    if (o->xdp != NULL && o->udp_port == 0) {
        fprintf(err, "%s: -x %s needs -U PORT: XDP answers memcached UDP "
                "GETs only\n", argv0, o->xdp);
        return -1;
    }
    if (o->xdp != NULL && o->udp_port == OPT_PORT_AUTO) {
        fprintf(err, "%s: -x %s needs a fixed -U PORT, not auto: the XDP "
                "program filters on it\n", argv0, o->xdp);
        return -1;
    }
    if (strcmp(o->xdp_mode, "auto") != 0 &&
        strcmp(o->xdp_mode, "native") != 0 &&
        strcmp(o->xdp_mode, "generic") != 0) {
        fprintf(err, "%s: invalid value '%s' for --xdp-mode: want native, "
                "generic or auto\n", argv0, o->xdp_mode);
        return -1;
    }
    if (strcmp(o->dump_load, "repair") != 0 &&
        strcmp(o->dump_load, "strict") != 0 &&
        strcmp(o->dump_load, "ignore") != 0) {
        fprintf(err, "%s: invalid value '%s' for --dump-load: want repair, "
                "strict or ignore\n", argv0, o->dump_load);
        return -1;
    }
    if (o->memory_kib != 0 && o->memory_kib < 1024) {
        fprintf(err, "%s: invalid value '%llu' for --memory-limit-kib: "
                "below 1024 (1 MiB, -m's least)\n", argv0,
                (unsigned long long)o->memory_kib);
        return -1;
    }
    if (o->dump_on_exit && o->no_dump_on_exit) {
        fprintf(err, "%s: --dump-on-exit and --no-dump-on-exit conflict\n",
                argv0);
        return -1;
    }
    if ((o->dump_interval != 0 || o->dump_on_exit) && o->dump_file == NULL) {
        fprintf(err, "%s: -i and --dump-on-exit need -f PATH\n", argv0);
        return -1;
    }
    if (o->dump_file != NULL && !o->no_dump_on_exit)
        o->dump_on_exit = true;
    if (o->prefix_delimiter != NULL && strlen(o->prefix_delimiter) != 1) {
        fprintf(err, "%s: invalid value '%s' for --prefix-delimiter: want "
                "one character\n", argv0, o->prefix_delimiter);
        return -1;
    }
    if (o->metrics != NULL) {
        char host[256], port[16];
        const char *m = o->metrics;
        const char *p = port; /* "auto": a free port the kernel picks */

        if (strcmp(m, "auto") == 0 || strspn(m, "0123456789") == strlen(m))
            p = m; /* a port alone: loopback */
        else if (options_split_listen(m, 0, host, sizeof(host), port,
                                      sizeof(port)) < 0)
            p = NULL;
        if (p == NULL ||
            (strcmp(p, "auto") != 0 &&
             (strtoul(p, NULL, 10) == 0 || strtoul(p, NULL, 10) > 65535))) {
            fprintf(err, "%s: invalid value '%s' for --metrics: want "
                    "ADDR:PORT, [V6ADDR]:PORT or PORT (PORT may be auto)\n",
                    argv0, m);
            return -1;
        }
    }
    if (strcmp(o->protected_mode, "yes") != 0 &&
        strcmp(o->protected_mode, "no") != 0) {
        fprintf(err, "%s: invalid value '%s' for --protected-mode: want yes "
                "or no\n", argv0, o->protected_mode);
        return -1;
    }
    if (o->auth_file != NULL && o->udp_port != 0) {
        /* a datagram carries no login: -U would serve gets to anyone */
        fprintf(err, "%s: -U cannot be used with --auth-file: UDP requests "
                "are not authenticated (-U 0 to disable UDP)\n", argv0);
        return -1;
    }
    if (o->tls_listen.n > 0 && (o->tls_cert == NULL || o->tls_key == NULL)) {
        fprintf(err, "%s: --tls-listen needs --tls-cert and --tls-key\n",
                argv0);
        return -1;
    }
#ifndef HAVE_TLS
    if (o->tls_listen.n > 0) {
        fprintf(err, "%s: --tls-listen: this mdcached was built without "
                "TLS (configure --with-tls, OpenSSL 3)\n", argv0);
        return -1;
    }
#endif
    if (strcmp(o->io, "auto") != 0 && strcmp(o->io, "epoll") != 0 &&
        strcmp(o->io, "uring") != 0) {
        fprintf(err, "%s: invalid value '%s' for --io: want auto, epoll or "
                "uring\n", argv0, o->io);
        return -1;
    }
#ifndef HAVE_LIBURING
    if (strcmp(o->io, "uring") == 0) {
        fprintf(err, "%s: --io=uring: this mdcached was built without "
                "liburing (configure found no liburing-dev); use --io=epoll\n",
                argv0);
        return -1;
    }
#endif
    if (o->debug && o->verbose < 3)
        o->verbose = 3;
    if (!tcp && o->unix_socket == NULL && o->udp_port == 0) {
        /* -p 0, or port 0 on every address: no listener at all */
        if (o->port == 0)
            fprintf(err, "%s: nothing to listen on: -p 0 needs -l "
                    "ADDR:PORT, -s PATH, -U PORT or --tls-listen "
                    "ADDR[:PORT]\n", argv0);
        else
            fprintf(err, "%s: nothing to listen on: every -l address has "
                    "port 0; give one a port, or -s PATH, -U PORT or "
                    "--tls-listen ADDR[:PORT]\n", argv0);
        return -1;
    }
    return 0;
}

/*
 * Report getopt_long()'s error c ('?' or ':', opterr being 0).  The
 * argument it stopped in is argv[optind - 1] when getopt_long moved past
 * one (a long option, or the last letter of a short cluster), otherwise it
 * is still inside a short cluster.  For a long option glibc sets optopt to
 * the option's val when it knows the option: with '?' that option takes no
 * value but was given one ("--no-evict=yes"), with ':' it needs one; 0 for
 * an unknown or ambiguous name.  For a short option optopt is the letter.
 */
static void opt_report_getopt(FILE *err, const char *argv0, int c,
                              char **argv, int before)
{
    const char *arg = optind > before ? argv[optind - 1] : NULL;
    const struct opt_desc *d = optopt != 0 ? opt_of(optopt) : NULL;

    if (arg != NULL && arg[0] == '-' && arg[1] == '-') {
        size_t n = strcspn(arg + 2, "="), i, k = 0;

        if (d != NULL && c == ':')
            fprintf(err, "%s: missing value for option '--%s'\n", argv0,
                    d->lname);
        else if (d != NULL)
            fprintf(err, "%s: option '--%s' takes no value (given '%s')\n",
                    argv0, d->lname, arg);
        else {
            for (i = 0; i < OPT_ID__COUNT; i++)
                k += strncmp(opt_table[i].lname, arg + 2, n) == 0;
            fprintf(err, "%s: %s option '%.*s'\n", argv0,
                    k > 1 && n > 0 ? "ambiguous" : "unknown", (int)n + 2,
                    arg);
        }
        return;
    }
    if (optopt != 0 && optopt < OPT_LONG_BASE)
        fprintf(err, "%s: %s option -%c\n", argv0,
                c == ':' ? "missing value for" : "unknown", optopt);
    else
        fprintf(err, "%s: unknown option '%s'\n", argv0,
                arg != NULL ? arg : "?");
}

/* The command line, option by option; 0, or -1 with the reason on err. */
static int opt_read_args(struct options *o, int argc, char **argv, FILE *err,
                         const char *argv0, bool *cli_seen)
{
    struct option lopts[OPT_ID__COUNT + 1];
    char shorts[3 * OPT_ID__COUNT + 2];
    bool list_seen[OPT_ID__COUNT];
    int c;

    memset(list_seen, 0, sizeof(list_seen));
    opt_getopt_tables(lopts, shorts);
    optind = 0; /* glibc: 0 also resets getopt's state left by an earlier parse */
    opterr = 0;
    for (;;) {
        /* the argument getopt_long starts at (0 before the first call
         * stands for 1) tells a long option's error from a short one's */
        int before = optind > 0 ? optind : 1;
        const struct opt_desc *d;
        const char *why = NULL, *val;
        int r;

        c = getopt_long(argc, argv, shorts, lopts, NULL);
        if (c == -1)
            break;
        if (c == '?' || c == ':') {
            opt_report_getopt(err, argv0, c, argv, before);
            return -1;
        }
        d = opt_of(c);
        if (d == NULL)
            return -1;
        cli_seen[d - opt_table] = true;
        if (d->kind == OT_LIST && !list_seen[d - opt_table]) {
            /* The first occurrence replaces the default. */
            struct opt_list *l = (struct opt_list *)((char *)o + d->off);
            l->n = 0;
            list_seen[d - opt_table] = true;
        }
        val = optarg;
        if (d->kind == OT_LEVEL)
            r = opt_level(o, d, argc, argv, &why, &val);
        else
            r = opt_set(o, d, val, &why);
        if (r < 0) {
            opt_report_invalid(err, argv0, d, val, why);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(err, "%s: unexpected argument '%s'\n", argv0, argv[optind]);
        return -1;
    }
    return 0;
}

/* For options_mc.c: 1 an mdcached long option that takes a value, 0 a
 * flag, -1 none. */
static int opt_takes_value(const char *name)
{
    const struct opt_desc *d = opt_by_name(name);

    if (d == NULL)
        return -1;
    return d->kind == OT_FLAG || d->kind == OT_ACTION ? 0 : 1;
}

int options_parse(struct options *o, int argc, char **argv, FILE *err)
{
    const char *argv0 = argc > 0 ? argv[0] : "mdcached";
    bool cli_seen[OPT_ID__COUNT];

    options_defaults(o);
    o->argc = argc;
    o->argv = argv;
    memset(cli_seen, 0, sizeof(cli_seen));
    if (argc > 0 && options_mc_wanted(argc, argv)) {
        /* memcached's command line, rewritten into mdcached's */
        o->mc = calloc(1, sizeof(*o->mc));
        if (o->mc == NULL ||
            options_mc_translate(o->mc, argc, argv, opt_takes_value,
                                 err) < 0)
            goto usage;
        if (o->mc->help) {
            options_mc_usage(stdout, argv0);
            return OPTIONS_EXIT;
        }
        argc = o->mc->argc;
        argv = o->mc->argv;
    }
    if (opt_read_args(o, argc, argv, err, argv0, cli_seen) < 0)
        goto usage;
    if (o->help) {
        options_usage(stdout, argv0);
        return OPTIONS_EXIT;
    }
    if (o->version) {
        printf("mdcached %s\n", PACKAGE_VERSION);
        return OPTIONS_EXIT;
    }
    if (o->config != NULL && opt_load_file(o, cli_seen, argv0, err) < 0)
        goto usage;
    if (opt_validate(o, err, argv0) < 0)
        goto usage;
    return OPTIONS_RUN;
usage:
    fprintf(err, "Try '%s %s-h' for the list of options.\n", argv0,
            o->mc != NULL ? "--memcached-compat " : "");
    return OPTIONS_USAGE;
}
