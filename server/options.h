/*
 * options.h - the daemon's command-line options, declared once in
 * MDC_OPTIONS.  The table generates the settings struct, getopt_long's
 * short and long options, `mdcached -h`, the value parsers and range checks,
 * and the "settings" stats group (options_visit()).
 */
#ifndef MDC_OPTIONS_H
#define MDC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Value kinds.  Each kind K has a C type OPT_CTYPE_K and a parser. */
#define OPT_CTYPE_OT_UINT uint64_t   /* decimal in [min, max] */
#define OPT_CTYPE_OT_PORT uint64_t   /* decimal in [min, max] or "auto" */
#define OPT_CTYPE_OT_NCPU uint64_t   /* decimal or "auto" (online CPUs) */
#define OPT_CTYPE_OT_POW2 uint64_t   /* 0 or a power of two in [min, max] */
#define OPT_CTYPE_OT_SIZE uint64_t   /* bytes, with k/m/g suffix */
#define OPT_CTYPE_OT_MODE uint64_t   /* octal permission bits */
#define OPT_CTYPE_OT_FLAG bool       /* no argument */
#define OPT_CTYPE_OT_LEVEL uint64_t  /* -v repeatable, -v3, --verbose=3 */
#define OPT_CTYPE_OT_STR const char *
#define OPT_CTYPE_OT_LIST struct opt_list /* repeatable string */
#define OPT_CTYPE_OT_ACTION bool     /* -h, --version */

/* A port given as "auto" (-p, -U, ADDR:auto): the kernel picks a free one
 * when the socket is bound; --port-file reports it. */
#define OPT_PORT_AUTO 65536u

struct opt_list {
    const char **v;
    size_t n;
};

/*
 * X(field, short, long, kind, default, min, max, metavar, help)
 * short is 0 for long-only options.  Short flags keep Bullet Cache's meaning
 * (-n network threads, -t payload threads, -d debug log; mdcached never
 * backgrounds itself).
 */
#define MDC_OPTIONS(X)                                                         \
    X(net_threads, 'n', "threads", OT_NCPU, "auto", 0, 256, "N",               \
      "network I/O threads; 0 = one thread accepts and does all I/O; "         \
      "auto = number of online CPUs")                                          \
    X(payload_threads, 't', "payload-threads", OT_UINT, "0", 0, 256, "M",      \
      "payload (store) threads; 0 = requests run in the network threads")      \
    X(io, 0, "io", OT_STR, "auto", 0, 0, "auto|epoll|uring",                \
      "network I/O backend: epoll (libevent) or uring (io_uring); auto = "    \
      "uring where the kernel allows it, else epoll")                          \
    X(uring_send_zc, 0, "uring-send-zc", OT_SIZE, "0", 0, 1073741824, "SIZE",  \
      "io_uring: send replies of at least SIZE bytes with zero-copy sends "   \
      "(IORING_OP_SEND_ZC); 0 = off")                                          \
    X(memory_mb, 'm', "memory-limit", OT_UINT, "1024", 1, 16777216, "MiB",     \
      "memory for records and the tag index, in MiB")                          \
    X(memory_kib, 0, "memory-limit-kib", OT_UINT, "0", 0, 17179869184ULL,      \
      "KiB", "the same limit in KiB, finer than -m (benches); 0 = -m's")       \
    X(no_evict, 'M', "no-evict", OT_FLAG, "off", 0, 1, NULL,                   \
      "when memory is full refuse stores instead of evicting")                 \
    X(listen, 'l', "listen", OT_LIST, "127.0.0.1", 0, 0, "ADDR",               \
      "TCP address to listen on, repeatable; IPv6 allowed ([::1]); "           \
      "ADDR:PORT overrides -p; [::] is IPv6 only")                             \
    X(port, 'p', "port", OT_PORT, "11311", 0, 65535, "PORT",                   \
      "TCP port; 0 = none for an -l address without its own port; auto = "    \
      "a free port the kernel picks (see --port-file)")                        \
    X(udp_port, 'U', "udp-port", OT_PORT, "0", 0, 65535, "PORT",               \
      "UDP port for memcached get/gets on every -l address; 0 = off; auto "   \
      "= a free port")                                                         \
    X(port_file, 0, "port-file", OT_STR, "", 0, 0, "PATH",                     \
      "once bound, write every listener's address (tcp/tls/udp/unix "         \
      "ADDR:PORT lines) to this file: the ports auto picked")                 \
    X(udp_writes, 0, "udp-writes", OT_FLAG, "off", 0, 1, NULL,                 \
      "-U also serves stores, delete, incr/decr, touch, the meta and tag "     \
      "commands (spoofable: see docs/security.md); never flush_all")           \
    X(udp_reply_limit, 0, "udp-reply-limit", OT_SIZE, "2m", 2048, 67108864,    \
      "SIZE", "largest UDP reply; a longer one ends with SERVER_ERROR")        \
    X(xdp, 'x', "xdp", OT_STR, "", 0, 0, "IFACE",                              \
      "answer hot untagged UDP GETs (-U) in XDP on this interface; "          \
      "needs root")                                                            \
    X(xdp_mode, 0, "xdp-mode", OT_STR, "auto", 0, 0, "MODE",                   \
      "XDP attach mode: native, generic, or auto (native, else generic)")      \
    X(xdp_admit, 0, "xdp-admit", OT_UINT, "1", 1, 255, "N",                    \
      "mirror a record on its Nth UDP GET hit served in userspace; 1 = "      \
      "every hit")                                                             \
    X(xdp_slots_small, 0, "xdp-slots-128", OT_POW2, "32768", 1, 16777216,     \
      "N", "XDP mirror slots of 128 bytes (key + value up to ~75 bytes)")     \
    X(xdp_slots_medium, 0, "xdp-slots-512", OT_POW2, "8192", 1, 16777216,     \
      "N", "XDP mirror slots of 512 bytes (key + value up to ~460 bytes)")    \
    X(xdp_slots_large, 0, "xdp-slots-1536", OT_POW2, "2048", 1, 16777216,     \
      "N", "XDP mirror slots of 1536 bytes (replies up to one datagram)")     \
    X(unix_socket, 's', "unix-socket", OT_STR, "", 0, 0, "PATH",               \
      "also listen on this Unix socket")                                       \
    X(unix_mode, 'a', "unix-mode", OT_MODE, "0700", 0, 0777, "MODE",           \
      "permission bits of the Unix socket (octal)")                            \
    X(protected_mode, 0, "protected-mode", OT_STR, "yes", 0, 0, "yes|no",     \
      "with a TCP listener on a non-loopback address and no --auth-file, "    \
      "serve loopback clients only (docs/security.md)")                        \
    X(auth_file, 0, "auth-file", OT_STR, "", 0, 0, "PATH",                     \
      "require authentication: user:password lines; SIGHUP re-reads it")      \
    X(tls_listen, 0, "tls-listen", OT_LIST, "", 0, 0, "ADDR[:PORT]",          \
      "TLS address to listen on, repeatable; IPv6 in brackets; port 11312 "   \
      "unless given (docs/security.md)")                                       \
    X(tls_cert, 0, "tls-cert", OT_STR, "", 0, 0, "PATH",                       \
      "TLS certificate chain (PEM); SIGHUP reloads it")                        \
    X(tls_key, 0, "tls-key", OT_STR, "", 0, 0, "PATH",                         \
      "TLS private key (PEM); SIGHUP reloads it")                              \
    X(tls_ca, 0, "tls-ca", OT_STR, "", 0, 0, "PATH",                           \
      "require client certificates signed by these CAs (PEM): mutual TLS")    \
    X(auth_timeout, 0, "auth-timeout", OT_UINT, "30", 0, 3600, "SEC",         \
      "with --auth-file, close a connection not authenticated by then; 0: "  \
      "never")                                                                 \
    X(tls_handshake_timeout, 0, "tls-handshake-timeout", OT_UINT, "10", 1,     \
      3600, "SEC", "close a TLS connection whose handshake takes longer")     \
    X(max_conns, 'c', "max-conns", OT_UINT, "1024", 1, 1048576, "N",           \
      "maximum simultaneous connections; more are refused")                    \
    X(backlog, 'B', "backlog", OT_UINT, "1024", 1, 65535, "N",                 \
      "listen(2) backlog")                                                     \
    X(max_item_size, 'I', "max-item-size", OT_SIZE, "1m", 1024, 1073741824,    \
      "SIZE", "largest value accepted (k/m suffix)")                           \
    X(buckets, 'b', "buckets", OT_POW2, "0", 0, 1073741824, "N",               \
      "record buckets (fixed), a power of two; 0 = grow as needed")           \
    X(tag_buckets, 0, "tag-buckets", OT_POW2, "64", 1, 1048576, "N",           \
      "tag index buckets, a power of two")                                     \
    X(max_tags, 0, "max-tags", OT_UINT, "64", 1, 65535, "N",                   \
      "most tags one record may carry")                                        \
    X(tag_reply_limit, 0, "tag-reply-limit", OT_SIZE, "16m", 4096,             \
      4294967295, "SIZE",                                                      \
      "largest get_by_tag reply; longer answers end with status truncated")    \
    X(enable_shutdown, 'A', "enable-shutdown", OT_FLAG, "off", 0, 1, NULL,    \
      "allow the shutdown command (memcached's -A)")                          \
    X(disable_flush_all, 'F', "disable-flush-all", OT_FLAG, "off", 0, 1, NULL, \
      "refuse flush_all and the native FLUSH (memcached's -F)")                \
    X(prefix_delimiter, 'D', "prefix-delimiter", OT_STR, "", 0, 0, "CHAR",     \
      "count per key prefix ending with CHAR (stats detail); turns it on")     \
    X(reqs_per_event, 'R', "max-reqs-per-event", OT_UINT, "100", 1, 1000000,  \
      "N", "requests one connection runs per event-loop turn before the "    \
      "others are served")                                                     \
    X(max_output, 0, "max-output", OT_SIZE, "1m", 4096, 1073741824, "SIZE",    \
      "pending output per connection before its reading is paused")           \
    X(output_timeout, 0, "output-timeout", OT_UINT, "30", 1, 86400, "SEC",     \
      "drop a connection whose pending output made no progress this long, "   \
      "paused or not")                                                         \
    X(idle_timeout, 0, "idle-timeout", OT_UINT, "0", 0, 31536000, "SEC",       \
      "close connections idle this long; 0 = never")                           \
    X(sweep_interval, 0, "sweep-interval", OT_UINT, "1000", 0, 3600000, "MS",  \
      "background expiry sweep period in milliseconds; 0 = off")               \
    X(dump_file, 'f', "dump-file", OT_STR, "", 0, 0, "PATH",                   \
      "dump file: loaded at start, written on SIGUSR1, -i, exit and the "     \
      "dump command (docs/dump.md)")                                           \
    X(dump_interval, 'i', "dump-interval", OT_UINT, "0", 0, 31536000, "SEC",   \
      "with -f, dump every SEC seconds; 0 = off")                             \
    X(dump_on_exit, 0, "dump-on-exit", OT_FLAG, "off", 0, 1, NULL,             \
      "dump at a graceful stop (the default with -f)")                        \
    X(no_dump_on_exit, 0, "no-dump-on-exit", OT_FLAG, "off", 0, 1, NULL,       \
      "do not dump at a graceful stop")                                        \
    X(dump_load, 0, "dump-load", OT_STR, "repair", 0, 0, "MODE",               \
      "loading -f at start: repair (keep the blocks that verify), strict "    \
      "(exit 65 on damage) or ignore (start empty)")                          \
    X(debug, 'd', "debug", OT_FLAG, "off", 0, 1, NULL,                         \
      "debug log level (at least -v 3); mdcached is in the foreground in "    \
      "any case")                                                              \
    X(verbose, 'v', "verbose", OT_LEVEL, "2", 0, 4, "LEVEL",                   \
      "log level 0-4 (error, warn, info, debug, trace); -v adds one")          \
    X(log_file, 0, "log-file", OT_STR, "", 0, 0, "PATH",                       \
      "log to this file instead of stderr; SIGHUP reopens it")                 \
    X(user, 'u', "user", OT_STR, "", 0, 0, "USER",                             \
      "user to run as after binding (as root the default is nobody)")          \
    X(pid_file, 'P', "pid-file", OT_STR, "", 0, 0, "PATH",                     \
      "write the process id to this file")                                     \
    X(memcached_compat, 0, "memcached-compat", OT_FLAG, "off", 0, 1, NULL,     \
      "read memcached 1.6's options instead (port 11211, -m 64, -t N = "      \
      "-n N -t 0); --memcached-compat -h lists them")                          \
    X(metrics, 0, "metrics", OT_STR, "", 0, 0, "ADDR:PORT",                    \
      "serve Prometheus metrics at http://ADDR:PORT/metrics; a PORT alone "   \
      "binds 127.0.0.1; PORT auto: a free port (see --port-file)")            \
    X(config, 'C', "config", OT_STR, "", 0, 0, "PATH",                         \
      "read long-option = value lines from this file (mdcached.conf(5)); "    \
      "the command line overrides it; SIGHUP re-reads it")                    \
    X(version, 'V', "version", OT_ACTION, "", 0, 0, NULL,                      \
      "print the version and exit")                                            \
    X(help, 'h', "help", OT_ACTION, "", 0, 0, NULL,                            \
      "print this help and exit")

struct options {
#define X(field, sh, lo, kind, def, mn, mx, meta, help) OPT_CTYPE_##kind field;
    MDC_OPTIONS(X)
#undef X
    /* not options: the config file's text (the strings read from it point
     * into it) and the command line, kept for SIGHUP's re-read */
    char *conf_text;
    int argc;
    char **argv;
    /* --memcached-compat: memcached's command line rewritten (the values
     * above point into it) and the notes to log (options_mc.h) */
    struct options_mc *mc;
};

enum options_rc {
    OPTIONS_RUN = 0,   /* parsed: run the server */
    OPTIONS_EXIT = 1,  /* -h or --version printed: exit 0 */
    OPTIONS_USAGE = -1 /* bad usage, message printed: exit 64 */
};

/* Fill o with the table's defaults. */
void options_defaults(struct options *o);
/* Parse argv; messages go to err.  See enum options_rc. */
int options_parse(struct options *o, int argc, char **argv, FILE *err);
void options_usage(FILE *f, const char *argv0);
void options_teardown(struct options *o);

/*
 * SIGHUP: parse the config file (-C) and the saved command line again into
 * next (errors, naming file and line, go to err; OPTIONS_USAGE).  Then
 * options_diff() visits each option whose value differs from cur as
 * (long name, new value).
 */
int options_reparse(const struct options *cur, struct options *next,
                    FILE *err);
typedef void (*options_visit_fn)(void *ctx, const char *name,
                                 const char *value);
void options_diff(const struct options *cur, const struct options *next,
                  options_visit_fn fn, void *ctx);

/* Visit every setting as (long name, value as text), in table order. */
void options_visit(const struct options *o, options_visit_fn fn, void *ctx);

/* Split a -l value: "addr", "addr:port", "[v6]", "[v6]:port" or a bare v6
 * address, into host and port text (dport when none; "auto" for a port of
 * auto or OPT_PORT_AUTO); 0 ok, -1 invalid. */
int options_split_listen(const char *spec, unsigned long dport, char *host,
                         size_t hlen, char *port, size_t plen);

/* Parse a size with an optional k/m/g suffix (powers of 1024). */
int options_parse_size(const char *s, uint64_t *out);

#endif
