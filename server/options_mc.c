/*
 * options_mc.c - memcached 1.6's command line (`mdcached
 * --memcached-compat`), so that a memcached unit, an init script or
 * Debian's /etc/memcached.conf (through its wrapper) start mdcached
 * unchanged.  memcached's options are declared once, in MC_OPTIONS: each
 * is rewritten into mdcached's own (which options.c then parses and
 * range-checks as usual), or ignored with one note naming it.  The
 * rewritten line starts with memcached's defaults where they differ from
 * mdcached's: port 11211, 64 MiB, 4 worker threads (-n 4 -t 0).
 */
#include "config.h"

#include "options_mc.h"

#include "options.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum mc_arg { MC_NOARG, MC_ARG, MC_OPTARG };

enum mc_action {
    MA_SAME,     /* the mdcached long option `to`, with the value */
    MA_IGNORE,   /* no equivalent: one note */
    MA_THREADS,  /* -t N: N network threads, requests run in them */
    MA_LISTEN,   /* comma-separated, repeatable; notls: prefix */
    MA_UNIX,     /* -s: a Unix socket, and no TCP or UDP (memcached's) */
    MA_VERBOSE,  /* -v, -vv, -vvv */
    MA_HELP,
    MA_VERSION,  /* -V, and -i (the license: the version names it) */
    MA_PIDFILE,  /* written only with -d, as memcached does */
    MA_DAEMON,   /* -d: mdcached stays in the foreground */
    MA_SASL,     /* -S: SASL PLAIN against a user:password file */
    MA_TLS,      /* -Z: every listener speaks TLS (but notls: ones) */
    MA_EXT,      /* -o name[=value],... */
    MA_PROTOCOL, /* -B ascii|binary|auto */
    MA_MEMORY,   /* -m MiB (or a size with a suffix) */
};

/*
 * X(short, long, arg, action, mdcached long option, what it becomes).
 * memcached 1.6.18's options, in the order of its `memcached -h`.
 */
#define MC_OPTIONS(X)                                                          \
    X('p', "port", MC_ARG, MA_SAME, "port",                                    \
      "--port (default here, as memcached's: 11211)")                         \
    X('U', "udp-port", MC_ARG, MA_SAME, "udp-port", "--udp-port")              \
    X('s', "unix-socket", MC_ARG, MA_UNIX, "unix-socket",                      \
      "--unix-socket, and no TCP or UDP listener (as memcached)")             \
    X('a', "unix-mask", MC_ARG, MA_SAME, "unix-mode", "--unix-mode")           \
    X('A', "enable-shutdown", MC_NOARG, MA_SAME, "enable-shutdown",            \
      "--enable-shutdown")                                                     \
    X('l', "listen", MC_ARG, MA_LISTEN, "listen",                              \
      "--listen, one for each address of a comma-separated list; "            \
      "notls:ADDR is plain TCP under -Z; without -l: 127.0.0.1 only")         \
    X('d', "daemon", MC_NOARG, MA_DAEMON, NULL,                                \
      "ignored: mdcached stays in the foreground (its service manager "       \
      "backgrounds it); -P is written")                                        \
    X('r', "enable-coredumps", MC_NOARG, MA_IGNORE, NULL,                      \
      "ignored: the core size limit is the service manager's (LimitCORE=)")   \
    X('u', "user", MC_ARG, MA_SAME, "user", "--user")                          \
    X('m', "memory-limit", MC_ARG, MA_MEMORY, "memory-limit",                  \
      "--memory-limit (default here, as memcached's: 64)")                    \
    X('M', "disable-evictions", MC_NOARG, MA_SAME, "no-evict", "--no-evict")   \
    X('c', "conn-limit", MC_ARG, MA_SAME, "max-conns", "--max-conns")          \
    X('k', "lock-memory", MC_NOARG, MA_IGNORE, NULL,                           \
      "ignored: memory is not locked")                                         \
    X('v', "verbose", MC_OPTARG, MA_VERBOSE, "verbose",                        \
      "-v: --verbose=2 (info, also the default), -vv: 3, -vvv: 4")            \
    X('h', "help", MC_NOARG, MA_HELP, NULL, "this list")                      \
    X('i', "license", MC_NOARG, MA_VERSION, NULL,                              \
      "--version (mdcached's license: /usr/share/doc/mdcached/copyright)")    \
    X('V', "version", MC_NOARG, MA_VERSION, NULL, "--version")                 \
    X('P', "pidfile", MC_ARG, MA_PIDFILE, "pid-file",                          \
      "--pid-file, with -d only (as memcached); otherwise ignored")           \
    X('f', "slab-growth-factor", MC_ARG, MA_IGNORE, NULL,                      \
      "ignored: no slab classes")                                              \
    X('n', "slab-min-size", MC_ARG, MA_IGNORE, NULL,                           \
      "ignored: no slab classes")                                              \
    X('L', "enable-largepages", MC_NOARG, MA_IGNORE, NULL,                     \
      "ignored: memory comes from the allocator")                             \
    X('D', "delimiter", MC_ARG, MA_SAME, "prefix-delimiter",                   \
      "--prefix-delimiter")                                                    \
    X('t', "threads", MC_ARG, MA_THREADS, "threads",                           \
      "--threads=N --payload-threads=0: N network threads that also run "     \
      "the requests (default, as memcached's: 4)")                            \
    X('R', "max-reqs-per-event", MC_ARG, MA_SAME, "max-reqs-per-event",       \
      "--max-reqs-per-event (default here: 100, memcached's 20)")             \
    X('C', "disable-cas", MC_NOARG, MA_IGNORE, NULL,                           \
      "ignored: CAS values are kept (clients that do not ask see none)")      \
    X('b', "listen-backlog", MC_ARG, MA_SAME, "backlog", "--backlog")          \
    X('B', "protocol", MC_ARG, MA_PROTOCOL, NULL,                              \
      "auto, ascii or binary; ignored: each connection's protocol is "        \
      "detected from its first byte")                                          \
    X('I', "max-item-size", MC_ARG, MA_SAME, "max-item-size",                  \
      "--max-item-size")                                                       \
    X('S', "enable-sasl", MC_NOARG, MA_SASL, "auth-file",                      \
      "SASL PLAIN against the user:password lines of -Y FILE, "               \
      "--auth-file=FILE or $MEMCACHED_SASL_PWDB (required: no sasldb)")       \
    X('F', "disable-flush-all", MC_NOARG, MA_SAME, "disable-flush-all",        \
      "--disable-flush-all")                                                   \
    X('X', "disable-dumping", MC_NOARG, MA_IGNORE, NULL,                       \
      "ignored: lru_crawler metadump stays served (after login under "        \
      "--auth-file)")                                                          \
    X('W', "disable-watch", MC_NOARG, MA_IGNORE, NULL,                         \
      "ignored: watch stays served (after login under --auth-file)")          \
    X('Y', "auth-file", MC_ARG, MA_SAME, "auth-file", "--auth-file")           \
    X('e', "memory-file", MC_ARG, MA_IGNORE, NULL,                             \
      "ignored: a restartable cache is -f (--dump-file), docs/dump.md")       \
    X('Z', "enable-ssl", MC_NOARG, MA_TLS, "tls-listen",                       \
      "every -l address (but notls: ones) becomes a --tls-listen on the "     \
      "-p port; -o ssl_chain_cert, ssl_key, ssl_ca_cert")                     \
    X('o', "extended", MC_ARG, MA_EXT, NULL,                                   \
      "idle_timeout, ssl_chain_cert, ssl_key, ssl_ca_cert (with "             \
      "ssl_verify_mode 2 or 3) mapped; every other one ignored")              \
    X('N', "napi_ids", MC_ARG, MA_IGNORE, NULL, "ignored")

struct mc_desc {
    int sh;
    const char *lname;
    enum mc_arg arg;
    enum mc_action action;
    const char *to;
    const char *help;
};

static const struct mc_desc mc_table[] = {
#define X(sh, lo, arg, act, to, help) {sh, lo, arg, act, to, help},
    MC_OPTIONS(X)
#undef X
};
#define MC_COUNT (sizeof(mc_table) / sizeof(mc_table[0]))

/* What the options read so far ask for, put together at the end. */
struct mc_state {
    struct options_mc *mc;
    FILE *err;
    char **out;     /* mdcached arguments after the defaults */
    size_t nout, cap;
    char **listen;  /* every -l address, commas split */
    size_t nlisten, lcap;
    const char *port, *udp, *unix_socket, *pid_file, *auth_file;
    char *ssl_cert, *ssl_key, *ssl_ca; /* -o values, owned */
    int verbose, ssl_verify;
    bool threads, memory, daemon, sasl, tls, oom;
};

bool options_mc_wanted(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--memcached-compat") == 0)
            return true;
    }
    return false;
}

static char *mc_strdup(struct mc_state *st, const char *s)
{
    char *d = strdup(s);

    if (d == NULL)
        st->oom = true;
    return d;
}

static char *mc_fmt(struct mc_state *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static char *mc_fmt(struct mc_state *st, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) {
        s = NULL;
        st->oom = true;
    }
    va_end(ap);
    return s;
}

/* Append s (malloc'd, taken over; NULL after a failed allocation). */
static void mc_push(struct mc_state *st, char ***v, size_t *n, size_t *cap,
                    char *s)
{
    if (s == NULL) {
        st->oom = true;
        return;
    }
    if (*n + 1 >= *cap) {
        size_t nc = *cap != 0 ? *cap * 2 : 16;
        char **nv = realloc(*v, nc * sizeof(*nv));

        if (nv == NULL) {
            free(s);
            st->oom = true;
            return;
        }
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
}

static void mc_arg(struct mc_state *st, char *s)
{
    mc_push(st, &st->out, &st->nout, &st->cap, s);
}

static void mc_note(struct mc_state *st, char *s)
{
    size_t cap = st->mc->nnotes + 1; /* grown one by one: a few at most */
    char **nv;

    if (s == NULL) {
        st->oom = true;
        return;
    }
    nv = realloc(st->mc->notes, (cap + 1) * sizeof(*nv));
    if (nv == NULL) {
        free(s);
        st->oom = true;
        return;
    }
    st->mc->notes = nv;
    nv[st->mc->nnotes++] = s;
}

/* The name of d for messages: "-p (--port)". */
#define MC_NAME_FMT "-%c (--%s)"
#define MC_NAME(d) (d)->sh, (d)->lname

/* -o name[=value],...: memcached's extended options. */
static int mc_ext(struct mc_state *st, const char *list)
{
    char *copy = mc_strdup(st, list), *tok, *save = NULL;
    int rc = 0;

    if (copy == NULL)
        return -1;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        char *val = strchr(tok, '=');
        char **slot = NULL;

        if (val != NULL)
            *val++ = '\0';
        if (strcmp(tok, "idle_timeout") == 0) {
            if (val == NULL)
                goto needs_value;
            mc_arg(st, mc_fmt(st, "--idle-timeout=%s", val));
            continue;
        }
        if (strcmp(tok, "ssl_chain_cert") == 0)
            slot = &st->ssl_cert;
        else if (strcmp(tok, "ssl_key") == 0)
            slot = &st->ssl_key;
        else if (strcmp(tok, "ssl_ca_cert") == 0)
            slot = &st->ssl_ca;
        if (slot != NULL) {
            if (val == NULL || *val == '\0')
                goto needs_value;
            free(*slot); /* the last one given wins */
            *slot = mc_strdup(st, val);
            continue;
        }
        if (strcmp(tok, "ssl_verify_mode") == 0) {
            if (val == NULL || val[0] < '0' || val[0] > '3' || val[1] != '\0') {
                fprintf(st->err, "memcached option -o ssl_verify_mode: "
                        "want 0, 1, 2 or 3\n");
                rc = -1;
                break;
            }
            st->ssl_verify = val[0] - '0';
            continue;
        }
        if (strcmp(tok, "ssl_kernel_tls") == 0) {
            mc_note(st, mc_fmt(st, "memcached option -o ssl_kernel_tls: "
                               "mdcached uses kernel TLS wherever the kernel "
                               "offers it"));
            continue;
        }
        mc_note(st, mc_fmt(st, "memcached option -o %s ignored: no "
                           "equivalent in mdcached", tok));
        continue;
needs_value:
        fprintf(st->err, "memcached option -o %s needs a value (%s=...)\n",
                tok, tok);
        rc = -1;
        break;
    }
    free(copy);
    return rc;
}

/* An -l value: comma-separated addresses, each kept (notls: too). */
static void mc_listen(struct mc_state *st, const char *list)
{
    char *copy = mc_strdup(st, list), *tok, *save = NULL;

    if (copy == NULL)
        return;
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save))
        mc_push(st, &st->listen, &st->nlisten, &st->lcap, mc_strdup(st, tok));
    free(copy);
}

/* One memcached option d with its value (NULL for a flag). */
static int mc_apply(struct mc_state *st, const struct mc_desc *d,
                    const char *val)
{
    switch (d->action) {
    case MA_SAME:
        if (d->arg == MC_NOARG)
            mc_arg(st, mc_fmt(st, "--%s", d->to));
        else
            mc_arg(st, mc_fmt(st, "--%s=%s", d->to, val));
        if (d->sh == 'p')
            st->port = val;
        if (d->sh == 'Y')
            st->auth_file = val;
        if (d->sh == 'U')
            st->udp = val;
        return 0;
    case MA_MEMORY: {
        uint64_t v;

        st->memory = true;
        /* a plain number is MiB, as memcached reads it; a size with a
         * suffix (64m, 2g) is turned into whole MiB */
        if (val[0] != '\0' && strspn(val, "0123456789") != strlen(val) &&
            options_parse_size(val, &v) == 0 && v >= (1u << 20)) {
            mc_arg(st, mc_fmt(st, "--memory-limit=%llu",
                              (unsigned long long)(v >> 20)));
            return 0;
        }
        mc_arg(st, mc_fmt(st, "--memory-limit=%s", val));
        return 0;
    }
    case MA_IGNORE:
        if (val != NULL)
            mc_note(st, mc_fmt(st, "memcached option " MC_NAME_FMT " %s %s",
                               MC_NAME(d), val, d->help));
        else
            mc_note(st, mc_fmt(st, "memcached option " MC_NAME_FMT " %s",
                               MC_NAME(d), d->help));
        return 0;
    case MA_THREADS:
        st->threads = true;
        mc_arg(st, mc_fmt(st, "--threads=%s", val));
        mc_arg(st, mc_strdup(st, "--payload-threads=0"));
        return 0;
    case MA_LISTEN:
        mc_listen(st, val);
        return 0;
    case MA_UNIX:
        st->unix_socket = val;
        return 0;
    case MA_VERBOSE:
        /* --verbose=N counts once, as memcached reads it */
        st->verbose++;
        return 0;
    case MA_HELP:
        st->mc->help = true;
        return 0;
    case MA_VERSION:
        mc_arg(st, mc_strdup(st, "--version"));
        return 0;
    case MA_PIDFILE:
        st->pid_file = val;
        return 0;
    case MA_DAEMON:
        st->daemon = true;
        return 0;
    case MA_SASL:
        st->sasl = true;
        return 0;
    case MA_TLS:
        st->tls = true;
        return 0;
    case MA_EXT:
        return mc_ext(st, val);
    case MA_PROTOCOL:
        if (strcmp(val, "auto") != 0 && strcmp(val, "ascii") != 0 &&
            strcmp(val, "binary") != 0) {
            fprintf(st->err, "memcached option -B: invalid protocol '%s' "
                    "(want ascii, binary or auto)\n", val);
            return -1;
        }
        if (strcmp(val, "auto") != 0)
            mc_note(st, mc_fmt(st, "memcached option -B %s ignored: each "
                               "connection's protocol is detected from its "
                               "first byte", val));
        return 0;
    }
    return 0;
}

static const struct mc_desc *mc_by_short(int c)
{
    size_t i;

    for (i = 0; i < MC_COUNT; i++)
        if (mc_table[i].sh == c)
            return &mc_table[i];
    return NULL;
}

static const struct mc_desc *mc_by_long(const char *name, size_t n)
{
    size_t i;

    for (i = 0; i < MC_COUNT; i++)
        if (strlen(mc_table[i].lname) == n &&
            strncmp(mc_table[i].lname, name, n) == 0)
            return &mc_table[i];
    return NULL;
}

/*
 * "--name[=value]": memcached's long option, or one of mdcached's own long
 * options, passed on unchanged (with its value, = or the next argument).
 * *i is moved past what was used.
 */
static int mc_long(struct mc_state *st, int argc, char **argv, int *i,
                   options_mc_takes_value_fn takes_value)
{
    const char *a = argv[*i] + 2, *eq = strchr(a, '=');
    size_t n = eq != NULL ? (size_t)(eq - a) : strlen(a);
    const struct mc_desc *d = mc_by_long(a, n);
    const char *val = eq != NULL ? eq + 1 : NULL;
    char name[64];
    int tv;

    if (d != NULL) {
        if (d->arg == MC_NOARG && val != NULL) {
            fprintf(st->err, "memcached option '--%s' takes no value\n",
                    d->lname);
            return -1;
        }
        if (d->arg == MC_ARG && val == NULL) {
            if (*i + 1 >= argc) {
                fprintf(st->err, "memcached option '--%s' needs a value\n",
                        d->lname);
                return -1;
            }
            val = argv[++*i];
        }
        return mc_apply(st, d, val);
    }
    if (n == 0 || n >= sizeof(name)) {
        fprintf(st->err, "unknown option '%s'\n", argv[*i]);
        return -1;
    }
    memcpy(name, a, n);
    name[n] = '\0';
    if (strcmp(name, "memcached-compat") == 0)
        return 0;
    tv = takes_value(name);
    if (tv < 0 || strcmp(name, "config") == 0) {
        fprintf(st->err, "unknown option '%s'%s\n", argv[*i],
                tv >= 0 ? ": with --memcached-compat, the memcached "
                          "command line is the configuration" : "");
        return -1;
    }
    mc_arg(st, mc_strdup(st, argv[*i]));
    if (tv == 1 && val == NULL) {
        if (*i + 1 >= argc) {
            fprintf(st->err, "missing value for option '--%s'\n", name);
            return -1;
        }
        mc_arg(st, mc_strdup(st, argv[++*i]));
    }
    return 0;
}

/* "-abc", "-p11211", "-p 11211": a cluster of memcached's short options. */
static int mc_short(struct mc_state *st, int argc, char **argv, int *i)
{
    const char *a = argv[*i] + 1;

    while (*a != '\0') {
        const struct mc_desc *d = mc_by_short((unsigned char)*a);
        const char *val = NULL;

        if (d == NULL) {
            fprintf(st->err, "unknown memcached option -%c\n", *a);
            return -1;
        }
        a++;
        if (d->arg == MC_ARG) {
            if (*a != '\0')
                val = a;
            else if (*i + 1 < argc)
                val = argv[++*i];
            else {
                fprintf(st->err, "missing value for memcached option -%c\n",
                        d->sh);
                return -1;
            }
            a += strlen(a);
        }
        if (mc_apply(st, d, val) < 0)
            return -1;
    }
    return 0;
}

/* "ADDR" or "ADDR:PORT" with the port given when it has none. */
static char *mc_with_port(struct mc_state *st, const char *addr,
                          const char *port)
{
    const char *colon = strrchr(addr, ':');

    if (addr[0] == '[')
        return strstr(addr, "]:") != NULL ? mc_strdup(st, addr)
                                          : mc_fmt(st, "%s:%s", addr, port);
    if (colon != NULL && strchr(addr, ':') != colon)
        return mc_fmt(st, "[%s]:%s", addr, port); /* a bare IPv6 address */
    if (colon != NULL)
        return mc_strdup(st, addr);
    return mc_fmt(st, "%s:%s", addr, port);
}

/* The listeners, TLS, SASL and the defaults, once every option is read. */
static int mc_finish(struct mc_state *st)
{
    const char *port = st->port != NULL ? st->port : OPTIONS_MC_PORT;
    size_t i;

    if (st->verbose > 0)
        mc_arg(st, mc_fmt(st, "--verbose=%d",
                          st->verbose >= 3 ? 4 : st->verbose + 1));
    if (st->pid_file != NULL && st->daemon)
        mc_arg(st, mc_fmt(st, "--pid-file=%s", st->pid_file));
    else if (st->pid_file != NULL)
        mc_note(st, mc_fmt(st, "memcached option -P %s ignored: memcached "
                           "writes it only with -d", st->pid_file));
    if (st->daemon)
        mc_note(st, mc_fmt(st, "memcached option -d (--daemon): mdcached "
                           "stays in the foreground; its service manager "
                           "puts it in the background"));
    if (st->sasl) {
        const char *f = st->auth_file;

        if (f == NULL) {
            f = getenv("MEMCACHED_SASL_PWDB");
            if (f != NULL && *f != '\0')
                mc_arg(st, mc_fmt(st, "--auth-file=%s", f));
            else
                f = NULL;
        }
        for (i = 0; f == NULL && i < st->nout; i++)
            if (strncmp(st->out[i], "--auth-file", 11) == 0)
                f = st->out[i];
        if (f == NULL) {
            fprintf(st->err, "memcached option -S: mdcached checks SASL "
                    "logins against a file of user:password lines: give "
                    "it with -Y FILE (or set MEMCACHED_SASL_PWDB=FILE); "
                    "it does not read Cyrus SASL's sasldb\n");
            return -1;
        }
    }
    if (st->unix_socket != NULL) {
        /* memcached: a Unix socket disables network support */
        mc_arg(st, mc_fmt(st, "--unix-socket=%s", st->unix_socket));
        mc_arg(st, mc_strdup(st, "--port=0"));
        mc_arg(st, mc_strdup(st, "--udp-port=0"));
        if (st->nlisten > 0 || st->tls)
            mc_note(st, mc_fmt(st, "memcached option -s: -l, -p, -U and -Z "
                               "ignored, as memcached does with a Unix "
                               "socket"));
        goto out;
    }
    if (st->nlisten == 0) {
        mc_note(st, mc_fmt(st, "memcached listens on every address without "
                           "-l: --memcached-compat listens on 127.0.0.1 "
                           "only; give -l 0.0.0.0,:: to serve other hosts"));
        mc_push(st, &st->listen, &st->nlisten, &st->lcap,
                mc_strdup(st, "127.0.0.1"));
    } else {
        /* memcached has no protected mode: the -l addresses given are
         * served as memcached serves them (unless --protected-mode was
         * given too) */
        bool given = false;

        for (i = 0; i < st->nout; i++)
            given |= strncmp(st->out[i], "--protected-mode", 16) == 0;
        if (!given)
            mc_arg(st, mc_strdup(st, "--protected-mode=no"));
    }
    if (!st->tls) {
        for (i = 0; i < st->nlisten; i++) {
            const char *a = st->listen[i];

            if (strncmp(a, "notls:", 6) == 0)
                a += 6;
            mc_arg(st, mc_fmt(st, "--listen=%s", a));
        }
        mc_arg(st, mc_fmt(st, "--port=%s", port));
        goto out;
    }
    /* -Z: TLS on every address but the notls: ones, on the -p port; the
     * plain -l list stays for -U (port 0: no plain TCP socket) */
    mc_arg(st, mc_strdup(st, "--port=0"));
    for (i = 0; i < st->nlisten; i++) {
        const char *a = st->listen[i];

        char *ap;

        if (strncmp(a, "notls:", 6) == 0) {
            ap = mc_with_port(st, a + 6, port);
            mc_arg(st, ap != NULL ? mc_fmt(st, "--listen=%s", ap) : NULL);
            free(ap);
            continue;
        }
        if (st->udp != NULL && strcmp(st->udp, "0") != 0) {
            /* the plain address too, for -U (port 0: no TCP socket) */
            char host[256], p[16];

            if (options_split_listen(a, 0, host, sizeof(host), p,
                                     sizeof(p)) == 0)
                mc_arg(st, strchr(host, ':') != NULL
                               ? mc_fmt(st, "--listen=[%s]", host)
                               : mc_fmt(st, "--listen=%s", host));
        }
        ap = mc_with_port(st, a, port);
        mc_arg(st, ap != NULL ? mc_fmt(st, "--tls-listen=%s", ap) : NULL);
        free(ap);
    }
    if (st->ssl_cert != NULL) {
        mc_arg(st, mc_fmt(st, "--tls-cert=%s", st->ssl_cert));
        /* memcached reads the key from the chain file unless told */
        mc_arg(st, mc_fmt(st, "--tls-key=%s",
                          st->ssl_key != NULL ? st->ssl_key : st->ssl_cert));
    }
    if (st->ssl_ca != NULL && st->ssl_verify >= 2)
        mc_arg(st, mc_fmt(st, "--tls-ca=%s", st->ssl_ca));
    else if (st->ssl_ca != NULL)
        mc_note(st, mc_fmt(st, "memcached option -o ssl_ca_cert ignored: "
                           "client certificates are required (--tls-ca) "
                           "only with ssl_verify_mode=2 or 3"));
out:
    return st->oom ? -1 : 0;
}

int options_mc_translate(struct options_mc *mc, int argc, char **argv,
                         options_mc_takes_value_fn takes_value, FILE *err)
{
    struct mc_state st;
    int i, rc = -1;
    size_t k, n = 0;

    memset(mc, 0, sizeof(*mc));
    memset(&st, 0, sizeof(st));
    st.mc = mc;
    st.err = err;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (a[1] == '-')
            rc = mc_long(&st, argc, argv, &i, takes_value);
        else
            rc = mc_short(&st, argc, argv, &i);
        if (rc < 0)
            goto out;
    }
    if (i < argc) {
        fprintf(err, "unexpected argument '%s'\n", argv[i]);
        rc = -1;
        goto out;
    }
    rc = mc_finish(&st);
    if (rc < 0)
        goto out;
    /* argv[0], --memcached-compat, memcached's defaults, then the rest:
     * a later value wins (-p, -m, -t given) */
    mc->argv = calloc(st.nout + 8, sizeof(*mc->argv));
    if (mc->argv == NULL) {
        st.oom = true;
        rc = -1;
        goto out;
    }
    mc->argv[n++] = argv[0];
    mc->argv[n++] = strdup("--memcached-compat");
    mc->argv[n++] = strdup("--threads=4");
    mc->argv[n++] = strdup("--payload-threads=0");
    mc->argv[n++] = strdup("--memory-limit=64");
    for (k = 1; k < n; k++)
        if (mc->argv[k] == NULL)
            st.oom = true;
    for (k = 0; k < st.nout; k++) {
        mc->argv[n++] = st.out[k];
        st.out[k] = NULL;
    }
    mc->argc = (int)n;
    rc = st.oom ? -1 : 0;
out:
    if (st.oom)
        fprintf(err, "out of memory\n");
    for (k = 0; k < st.nout; k++)
        free(st.out[k]);
    free(st.out);
    for (k = 0; k < st.nlisten; k++)
        free(st.listen[k]);
    free(st.listen);
    free(st.ssl_cert);
    free(st.ssl_key);
    free(st.ssl_ca);
    return rc;
}

void options_mc_teardown(struct options_mc *mc)
{
    size_t i;

    if (mc->argv != NULL)
        for (i = 1; i < (size_t)mc->argc; i++)
            free(mc->argv[i]);
    free(mc->argv);
    for (i = 0; i < mc->nnotes; i++)
        free(mc->notes[i]);
    free(mc->notes);
    memset(mc, 0, sizeof(*mc));
}

void options_mc_usage(FILE *f, const char *argv0)
{
    size_t i;

    fprintf(f,
            "Usage: %s --memcached-compat [MEMCACHED OPTION]... "
            "[--MDCACHED-OPTION[=VALUE]]...\n"
            "memcached 1.6's command line, read as mdcached's (port 11211, "
            "-m 64, -t 4 by default):\n\n",
            argv0);
    for (i = 0; i < MC_COUNT; i++) {
        char head[64];

        snprintf(head, sizeof(head), "  -%c, --%s%s", mc_table[i].sh,
                 mc_table[i].lname, mc_table[i].arg == MC_ARG ? "=ARG" : "");
        fprintf(f, "%-30s %s\n", head, mc_table[i].help);
    }
    fprintf(f, "\nmdcached's own long options may follow (--port-file "
            "PATH...).  See docs/options.md, \"memcached's command line\"; "
            "mdcached(8).\n");
}
