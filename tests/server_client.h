/*
 * server_client.h - the test harness of every C test that runs a daemon
 * (docs/testing.md): start a real mdcached on a port it picks itself (-p
 * auto, read back from its --port-file; or use the one
 * MDC_TEST_SERVER=host:port names), wait until it says it is ready (its
 * sd_notify READY=1, or its port file in a build --without-systemd: no
 * sleep, no connect probe), stop it and collect its exit status, print its
 * log when something went wrong; and a tiny blocking native-protocol client
 * built on wire.h.
 */
#ifndef MDC_TEST_SERVER_CLIENT_H
#define MDC_TEST_SERVER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/wire.h"

/* tsrv_start_opts() flags */
#define TSRV_RAW 1u     /* no -p auto, -s dir/sock, -v: only the caller's
                         * args (and --port-file, unless they give one) */
#define TSRV_NOWAIT 2u  /* return once it runs; tsrv_wait_ready() waits
                         * (daemons started side by side) */

struct tsrv_opts {
    unsigned flags;
    int timeout_ms;     /* to be ready; 0: $MDC_TEST_START_TIMEOUT s or 60 s */
    /* run in the child just before exec (a seccomp filter, rlimits) */
    void (*pre_exec)(void *arg);
    void *arg;
    /* the port file a -C file names: no --port-file is added */
    const char *port_file;
};

struct tsrv {
    pid_t pid;          /* 0 when external */
    bool external;      /* MDC_TEST_SERVER */
    char host[128];
    int port;           /* TCP on host: the one -p auto picked */
    int udp_port;       /* UDP on host (-U auto), or -1 */
    char unix_path[108];
    char dir[64];       /* temporary directory of this daemon */
    char port_file[256]; /* --port-file: dir/ports, or the one args give */
    char out[80];       /* the daemon's stdout and stderr: dir/log */
    char log_file[256]; /* its --log-file, when the args give one */
    int status;         /* exit status once it stopped (128+signal), or -1 */
    int notify_fd;      /* its NOTIFY_SOCKET until it is ready, or -1 */
    /* what tsrv_restart() starts again: the caller's args (kept by
     * pointer: they must live as long as the daemon) and options */
    const char *const *args;
    struct tsrv_opts opts;
};

/* Path of the mdcached binary: $MDC_BUILDDIR/server/mdcached or
 * ./server/mdcached. */
const char *tsrv_binary(void);
/* True when MDC_TEST_SERVER points at a running server. */
bool tsrv_external(void);
/* Start a daemon with extra arguments (NULL-terminated); 0 ok, -1 not
 * ready (its log printed; tsrv_stop() still cleans up). */
int tsrv_start(struct tsrv *s, const char *const *args);
/* The same with options: 0 ready; >0 the exit status (128+signal) of a
 * daemon that stopped before it was ready (a test of a refused start; its
 * log stays readable with tsrv_log() until tsrv_stop()); -1 on a timeout
 * (its log printed), another error, or an exit with status 0 before it was
 * ready (-h: s->status is 0 then). */
int tsrv_start_opts(struct tsrv *s, const struct tsrv_opts *o,
                    const char *const *args);
/* Wait for a daemon started with TSRV_NOWAIT; as tsrv_start_opts(). */
int tsrv_wait_ready(struct tsrv *s);
/* The port of the "KIND HOST:PORT" line of a --port-file (kind tcp, tls,
 * udp; host as the daemon names it: 127.0.0.1, [::1]), or -1. */
int tsrv_port_file_port(const char *path, const char *kind,
                        const char *host);
/* The same for the daemon s started. */
int tsrv_port_of(const struct tsrv *s, const char *kind, const char *host);
/* Use MDC_TEST_SERVER if set, else start a daemon with args. */
int tsrv_start_or_external(struct tsrv *s, const char *const *args);
/* A test gate: a FIFO at path (made afresh) that the daemon, which may run
 * as nobody, can open; the test names it in the daemon's environment.
 * 0, or -1. */
int tsrv_gate_fifo(const char *path);
/* SIGTERM, wait; returns the exit status (0..255) or -1 (signal/timeout);
 * a status other than 0 prints the daemon's log.  Then removes its
 * directory (the log too; MDC_TEST_KEEP=1 keeps it).  On a daemon that
 * already stopped (a refused start) it only cleans up and returns that
 * status. */
int tsrv_stop(struct tsrv *s);
/* Send sig (SIGKILL, SIGINT, ...), wait: the exit status, or 128+signal;
 * -1 on a timeout.  Nothing is cleaned up: restart with tsrv_restart(). */
int tsrv_kill(struct tsrv *s, int sig);
/* Start the daemon again in the same directory with the same args (a
 * restart that loads a dump, say); as tsrv_start_opts(). */
int tsrv_restart(struct tsrv *s);
/* The daemon's log (its --log-file if it has one, then its stdout and
 * stderr), malloc'd and NUL-terminated; "" if there is none. */
char *tsrv_log(const struct tsrv *s);
/* Print the daemon's log to stderr under a "why" line. */
void tsrv_print_log(const struct tsrv *s, const char *why);
/* Resident set size of the daemon in KiB (0 if unknown). */
long tsrv_rss_kb(const struct tsrv *s);

/* Send and receive timeouts of tc_connect*(): a ceiling only a hang
 * crosses, never a latency bound (a busy machine's replies can take
 * seconds; docs/testing.md, "A busy machine"). */
#define TC_HANG_MS 30000
/* SIGSTOP pid and wait until every thread of it is stopped. */
void tsrv_stop_fully(pid_t pid);

/* Blocking TCP / Unix connection with TC_HANG_MS send and receive
 * timeouts. */
int tc_connect(const struct tsrv *s);
/* The same with SO_RCVBUF set before connecting (a deliberately slow
 * reader). */
int tc_connect_rcvbuf(const struct tsrv *s, int rcvbuf);
int tc_connect_unix(const struct tsrv *s);
void tc_set_timeout_ms(int fd, int ms);

struct treq {
    uint8_t op;
    uint8_t flags;
    const void *key;
    size_t klen;
    const void *val;
    size_t vlen;
    const struct wire_tag *tags;
    size_t ntags;
    uint32_t iflags;
    uint64_t cas;
    int64_t exp;
    uint32_t opaque;
};

struct tresp {
    struct wire_hdr h;
    struct wire_tag tags[64];
    uint8_t *body;      /* whole body, malloc'd; tc_resp_free() */
    const uint8_t *key;
    const uint8_t *val;
};

/* Compose r into buf (malloc'd, *len set); NULL on failure. */
uint8_t *tc_compose(const struct treq *r, size_t *len);
int tc_send_all(int fd, const void *buf, size_t len);
int tc_send(int fd, const struct treq *r);
/* Read exactly len bytes; 0 ok, -1 EOF/error/timeout. */
int tc_read_full(int fd, void *buf, size_t len);
/* Read one response; 0 ok, -1 EOF/error/timeout. */
int tc_recv(int fd, struct tresp *r);
void tc_resp_free(struct tresp *r);
/* True when the peer closed (EOF or reset) within ms milliseconds. */
bool tc_wait_eof(int fd, int ms);
/* Send r, read one response, return its status (-1 on I/O failure). */
int tc_call(int fd, const struct treq *r, struct tresp *out);

/* Convenience wrappers returning the status. */
int tc_set(int fd, const char *key, const void *val, size_t vlen,
           const struct wire_tag *tags, size_t ntags);
/* GET: status; on OK *val is a malloc'd copy (NUL-terminated) of vlen. */
int tc_get(int fd, const char *key, char **val, size_t *vlen);
/* STATS: value of one general stat, or -1 if absent. */
long long tc_stat(int fd, const char *name);
/* STATS: a stat's text value copied into buf; 0 ok. */
int tc_stat_str(int fd, const char *name, char *buf, size_t len);

#endif
