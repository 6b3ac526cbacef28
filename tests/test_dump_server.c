/*
 * test_dump_server.c - dumps in a real mdcached (-f): the triggers (text
 * "dump", the native DUMP opcode, SIGUSR1, -i, a graceful stop), two
 * requests during one dump getting that one dump, a warm restart, the
 * --dump-load modes on a damaged file, kill -9 in the middle of a dump,
 * and a full disk (a small tmpfs this test mounts; needs root: SKIP
 * otherwise, and a failure when CI=true); a dump request holds up no
 * other connection of its thread, with and without payload threads.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dump_image.h"
#include "server_client.h"
#include "protocol/wire.h"

/* kill -9 needs a dump long enough to be caught in the middle */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILL9_N 30000
#else
#define KILL9_N 100000
#endif

static char dir[] = "/tmp/mdc-dumpsrv-XXXXXX";
static char dpath[300], logp[300];

/* a daemon of tests/server_client.h's harness; pid and port as it has them */
struct srv {
    pid_t pid;
    int port;
    struct tsrv t;
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static int conn(const struct srv *s)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)s->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Start mdcached with -f dpath and extra args; wait until it is ready.
 * Returns 0, or the exit status (>0) if it exited first. */
static int start(struct srv *s, const char *const *extra)
{
    static const char *argv[40];
    static const struct tsrv_opts raw = {.flags = TSRV_RAW};
    int n = 0, rc;
    argv[n++] = "-l";
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = "auto";
    argv[n++] = "-n";
    argv[n++] = "2";
    argv[n++] = "-f";
    argv[n++] = dpath;
    argv[n++] = "--log-file";
    argv[n++] = logp;
    for (int i = 0; extra != NULL && extra[i] != NULL; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    rc = tsrv_start_opts(&s->t, &raw, argv);
    s->pid = s->t.pid;
    s->port = s->t.port;
    if (rc != 0)
        tsrv_stop(&s->t); /* refused: its log (logp) stays */
    if (rc < 0)
        fail_msg("mdcached did not start");
    return rc;
}

static int stop(struct srv *s, int sig)
{
    int rc;
    if (s->pid <= 0)
        return -1;
    rc = tsrv_kill(&s->t, sig);
    tsrv_stop(&s->t);
    s->pid = 0;
    return rc;
}

static void send_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        assert_true(k > 0);
        p = (const char *)p + k;
        n -= (size_t)k;
    }
}

/* Read until the reply ends with 'end' (or times out after ms). */
static size_t recv_until(int fd, char *buf, size_t cap, const char *end,
                         int ms)
{
    size_t n = 0, el = strlen(end);
    buf[0] = '\0';
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, ms) <= 0)
            break;
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = '\0';
        if (n >= el && memcmp(buf + n - el, end, el) == 0)
            break;
        if (strstr(buf, "ERROR") != NULL && buf[n - 1] == '\n')
            break;
    }
    return n;
}

static void cmd(const struct srv *s, const char *req, const char *end,
                char *out, size_t cap)
{
    int fd = conn(s);
    assert_true(fd >= 0);
    send_all(fd, req, strlen(req));
    recv_until(fd, out, cap, end, 60000);
    close(fd);
}

static uint64_t stat_of(const struct srv *s, const char *name)
{
    static char buf[65536];
    char pat[64];
    cmd(s, "stats\r\n", "END\r\n", buf, sizeof(buf));
    snprintf(pat, sizeof(pat), "STAT %s ", name);
    char *p = strstr(buf, pat);
    assert_non_null(p);
    return strtoull(p + strlen(pat), NULL, 10);
}

/* n records "k<i>" of vlen bytes, pipelined with noreply; then a marker */
static void fill(const struct srv *s, int first, int n, size_t vlen,
                 const char *gen)
{
    int fd = conn(s);
    assert_true(fd >= 0);
    size_t cap = (vlen + 64) * 256, len = 0;
    char *b = malloc(cap);
    for (int i = first; i < first + n; i++) {
        len += (size_t)snprintf(b + len, cap - len,
                                "set k%d %d 0 %zu noreply\r\n", i, i, vlen);
        memset(b + len, 'a' + i % 26, vlen);
        len += vlen;
        memcpy(b + len, "\r\n", 2);
        len += 2;
        if (cap - len < vlen + 64 || i == first + n - 1) {
            send_all(fd, b, len);
            len = 0;
        }
    }
    char out[256];
    snprintf(b, cap, "set gen 0 0 %zu\r\n%s\r\n", strlen(gen), gen);
    send_all(fd, b, strlen(b));
    recv_until(fd, out, sizeof(out), "\r\n", 60000);
    assert_string_equal(out, "STORED\r\n");
    close(fd);
    free(b);
}

static void get_gen(const struct srv *s, char *out, size_t cap)
{
    cmd(s, "get gen\r\n", "END\r\n", out, cap);
}

static bool file_has(const char *p, const char *needle)
{
    FILE *f = fopen(p, "r");
    char line[1024];
    bool found = false;
    if (f == NULL)
        return false;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    chmod(dir, 0777); /* as root, the daemon runs as nobody */
    snprintf(dpath, sizeof(dpath), "%s/cache.mdc", dir);
    snprintf(logp, sizeof(logp), "%s/log", dir);
    return 0;
}

static int teardown(void **state)
{
    char c[400];
    (void)state;
    snprintf(c, sizeof(c), "%s/small", dir);
    umount2(c, MNT_DETACH); /* left mounted by a failed full-disk test */
    snprintf(c, sizeof(c), "rm -rf '%s'", dir);
    return system(c);
}

static void clean(void)
{
    char c[400];
    snprintf(c, sizeof(c), "rm -f '%s'/cache.mdc* '%s'/.cache.mdc.* '%s'",
             dir, dir, logp);
    assert_int_equal(system(c), 0);
}

/* The dump's temporary files in dpath's directory (".NAME.XXXXXX",
 * server/core/newfile.h) */
static int temp_files(void)
{
    char d[300], prefix[300];
    const char *slash = strrchr(dpath, '/');
    struct dirent *e;
    DIR *dp;
    int n = 0;

    snprintf(d, sizeof(d), "%.*s", (int)(slash - dpath), dpath);
    snprintf(prefix, sizeof(prefix), ".%s.", slash + 1);
    dp = opendir(d);
    assert_non_null(dp);
    while ((e = readdir(dp)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    closedir(dp);
    return n;
}

/* ---- identity: boot_id and data_generation ----------------------------- */
/* A restart that reloads the dump keeps data_generation and draws a new
 * boot_id; one that starts empty (--dump-load=ignore, no file) draws both;
 * a dump of the old format (the header's bytes 44-51 zero, checksum
 * recomputed) loads and leaves the server's own generation. */
static void test_identity(void **state)
{
    (void)state;
    clean();
    struct srv s;
    char out[4096];
    assert_int_equal(start(&s, NULL), 0);
    uint64_t boot1 = stat_of(&s, "boot_id"), gen1 = stat_of(&s,
                                                            "data_generation");
    assert_true(boot1 != 0 && gen1 != 0);
    /* stats identity: the same numbers, nothing else but uptime */
    cmd(&s, "stats identity\r\n", "END\r\n", out, sizeof(out));
    char want[128];
    snprintf(want, sizeof(want), "STAT boot_id %llu\r\n",
             (unsigned long long)boot1);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof(want), "STAT data_generation %llu\r\n",
             (unsigned long long)gen1);
    assert_non_null(strstr(out, want));
    assert_null(strstr(out, "curr_items"));
    fill(&s, 0, 10, 10, "one");
    assert_int_equal(stop(&s, SIGTERM), 0);
    /* warm restart: same generation, new boot */
    assert_int_equal(start(&s, NULL), 0);
    assert_int_equal(stat_of(&s, "data_generation"), gen1);
    uint64_t boot2 = stat_of(&s, "boot_id");
    assert_true(boot2 != 0 && boot2 != boot1);
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "one"));
    assert_int_equal(stop(&s, SIGTERM), 0);
    /* started empty: a new generation */
    const char *ign[] = {"--dump-load=ignore", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, ign), 0);
    assert_int_not_equal(stat_of(&s, "data_generation"), gen1);
    assert_int_not_equal(stat_of(&s, "boot_id"), boot2);
    assert_int_equal(stop(&s, SIGTERM), 0);
    /* an old-format header (no generation): loads, a fresh generation.
     * The header's and the whole file's checksums are made again. */
    int fd = open(dpath, O_RDWR);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    size_t flen = (size_t)sb.st_size;
    uint8_t *f = malloc(flen), *h = f;
    assert_non_null(f);
    assert_int_equal(pread(fd, f, flen, 0), (ssize_t)flen);
    uint64_t g = 0;
    for (int i = 0; i < 8; i++)
        g |= (uint64_t)h[44 + i] << (8 * i);
    assert_int_equal(g, gen1); /* the header carries it, little endian */
    memset(h + 44, 0, 8);
    uint64_t x = XXH3_64bits(h, 56);
    for (int i = 0; i < 8; i++)
        h[56 + i] = (uint8_t)(x >> (8 * i));
    uint8_t *ftr = f + flen - 48;
    x = XXH3_64bits(f, flen - 16); /* footer bytes 32, 40 */
    for (int i = 0; i < 8; i++)
        ftr[32 + i] = (uint8_t)(x >> (8 * i));
    x = XXH3_64bits(ftr, 40);
    for (int i = 0; i < 8; i++)
        ftr[40 + i] = (uint8_t)(x >> (8 * i));
    assert_int_equal(pwrite(fd, f, flen, 0), (ssize_t)flen);
    free(f);
    close(fd);
    const char *strict[] = {"--dump-load=strict", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, strict), 0);
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "one"));
    uint64_t gen3 = stat_of(&s, "data_generation");
    assert_true(gen3 != 0 && gen3 != gen1);
    assert_int_equal(stop(&s, SIGTERM), 0);
}

/* ---- triggers and a warm restart ----------------------------------------- */
static void test_triggers(void **state)
{
    (void)state;
    clean();
    struct srv s;
    char out[4096];
    assert_int_equal(start(&s, NULL), 0);
    assert_true(file_has(logp, "no such file, starting empty"));
    fill(&s, 0, 1000, 100, "one");
    /* text: OK once the file is on disk */
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_string_equal(out, "OK\r\n");
    struct stat sb;
    assert_int_equal(stat(dpath, &sb), 0);
    assert_int_equal(stat_of(&s, "dumps"), 1);
    assert_int_equal(stat_of(&s, "dump_last_records"), 1001);
    assert_int_equal((uint64_t)sb.st_size, stat_of(&s, "dump_last_bytes"));
    /* native DUMP */
    struct wire_hdr h;
    uint8_t req[WIRE_HDR_LEN], rsp[WIRE_HDR_LEN + 256];
    wire_hdr_request(&h, WIRE_OP_DUMP);
    h.opaque = 77;
    wire_encode_header(req, &h);
    int fd = conn(&s);
    send_all(fd, req, sizeof(req));
    size_t got = 0;
    while (got < WIRE_HDR_LEN) {
        ssize_t k = recv(fd, rsp + got, sizeof(rsp) - got, 0);
        assert_true(k > 0);
        got += (size_t)k;
    }
    close(fd);
    struct wire_hdr rh;
    assert_int_equal(wire_parse_header(rsp, got, &rh, 1 << 20), WIRE_OK);
    assert_int_equal(rh.status, WIRE_S_OK);
    assert_int_equal(rh.opaque, 77);
    assert_int_equal(stat_of(&s, "dumps"), 2);
    /* SIGUSR1 */
    kill(s.pid, SIGUSR1);
    int i;
    for (i = 0; i < 3000 && stat_of(&s, "dumps") < 3; i++)
        sleep_ms(10);
    assert_true(i < 3000);
    /* a graceful stop dumps what changed since */
    fill(&s, 1000, 10, 100, "two");
    assert_int_equal(stop(&s, SIGTERM), 0);
    assert_true(file_has(logp, "1011 records"));
    /* warm restart */
    assert_int_equal(start(&s, NULL), 0);
    assert_int_equal(stat_of(&s, "load_records"), 1011);
    assert_int_equal(stat_of(&s, "curr_items"), 1011);
    cmd(&s, "get k7 k1005\r\n", "END\r\n", out, sizeof(out));
    assert_non_null(strstr(out, "VALUE k7 7 100\r\nhhhh"));
    assert_non_null(strstr(out, "VALUE k1005 1005 100\r\n"));
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "two"));
    /* --no-dump-on-exit */
    assert_int_equal(stop(&s, SIGINT), 0);
    const char *nox[] = {"--no-dump-on-exit", "-i", "1", NULL};
    assert_int_equal(start(&s, nox), 0);
    /* -i 1: periodic dumps */
    for (i = 0; i < 3000 && stat_of(&s, "dumps") < 2; i++)
        sleep_ms(10);
    assert_true(i < 3000);
    assert_int_equal(stop(&s, SIGTERM), 0);
}

/* ---- two requests during one dump ------------------------------------------ */
static void test_coalesce(void **state)
{
    (void)state;
    clean();
    struct srv s;
    char o1[256], o2[256];
    assert_int_equal(start(&s, NULL), 0);
    fill(&s, 0, 60000, 1000, "big"); /* ~60 MB: a dump of some ms */
    int a = conn(&s), b = conn(&s);
    send_all(a, "dump\r\n", 6);
    send_all(b, "dump\r\n", 6);
    recv_until(a, o1, sizeof(o1), "\r\n", 60000);
    recv_until(b, o2, sizeof(o2), "\r\n", 60000);
    close(a);
    close(b);
    assert_string_equal(o1, "OK\r\n");
    assert_string_equal(o2, "OK\r\n");
    /* the second request arrived while the first dump ran */
    assert_int_equal(stat_of(&s, "dumps"), 1);
    assert_int_equal(stop(&s, SIGKILL), 128 + SIGKILL);
}

/* ---- a dump request holds up nobody ---------------------------------------- */
/*
 * A test-only gate (--enable-debug-commands: MDC_TEST_DUMP_GATE) makes the
 * running dump read a FIFO to its end before it writes: the dump lasts
 * exactly as long as the test wants.  Meanwhile a second connection,
 * served by the same (only) network thread, must be answered, and the
 * dump's own connection must not; a directory put at the dump's path
 * meanwhile makes the rename fail, so once the FIFO is closed the dump's
 * connection gets the failure and its pipelined next request after it, in
 * order.
 */
static void parked_dump_run(const char *payload_threads)
{
    /* no dump at exit: it would wait at the gate */
    const char *extra[] = {"-n", "1", "-t", payload_threads,
                           "--no-dump-on-exit", NULL};
    char gate[320], out[4096];
    struct srv s;

    clean();
    snprintf(gate, sizeof(gate), "%s/gate", dir);
    assert_int_equal(tsrv_gate_fifo(gate), 0);
    setenv("MDC_TEST_DUMP_GATE", gate, 1);
    assert_int_equal(start(&s, extra), 0);
    unsetenv("MDC_TEST_DUMP_GATE");
    fill(&s, 0, 2000, 100, "parked");
    int a = conn(&s), b = conn(&s);
    assert_true(a >= 0 && b >= 0);
    send_all(a, "dump\r\nget gen\r\n", 15);
    /* the dump thread is in the dump (held at the gate) ... */
    static char st[65536];
    int i;
    for (i = 0; i < 1000; i++) {
        send_all(b, "stats\r\n", 7);
        recv_until(b, st, sizeof(st), "END\r\n", 10000);
        if (strstr(st, "STAT dump_in_progress 1\r\n") != NULL)
            break;
        sleep_ms(10);
    }
    assert_true(i < 1000);
    /* ... and the thread that took the request serves the others */
    for (i = 0; i < 50; i++) {
        send_all(b, "get gen\r\n", 9);
        recv_until(b, out, sizeof(out), "END\r\n", 10000);
        assert_string_equal(out, "VALUE gen 0 6\r\nparked\r\nEND\r\n");
    }
    struct pollfd p = {a, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 0); /* the dump's connection waits */
    /* a directory where the dump goes: its rename will fail */
    assert_int_equal(mkdir(dpath, 0755), 0);
    /* let the dump run: open the gate and close it */
    int g = open(gate, O_WRONLY);
    assert_true(g >= 0);
    close(g);
    recv_until(a, out, sizeof(out), "END\r\n", 60000);
    assert_true(strncmp(out, "SERVER_ERROR dump failed: ", 26) == 0);
    char *next = strstr(out, "\r\n");
    assert_non_null(next);
    if (next[2] == '\0') /* recv_until stops at an ERROR line */
        recv_until(a, next + 2, sizeof(out) - (size_t)(next + 2 - out),
                   "END\r\n", 60000);
    assert_string_equal(next + 2, "VALUE gen 0 6\r\nparked\r\nEND\r\n");
    close(a);
    close(b);
    assert_int_equal(rmdir(dpath), 0);
    assert_int_equal(stat_of(&s, "dump_failures"), 1);
    assert_int_equal(temp_files(), 0); /* the failed dump left nothing */
    /* the next dump request works as before (the gate: open, at once
     * closed, by a writer here) */
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        int fd = open(gate, O_WRONLY);
        _exit(fd >= 0 ? 0 : 1);
    }
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_string_equal(out, "OK\r\n");
    int ws;
    assert_int_equal(waitpid(w, &ws, 0), w);
    assert_int_equal(stop(&s, SIGTERM), 0);
    unlink(gate);
}

static void test_dump_parked(void **state)
{
    (void)state;
#ifndef MDC_DEBUG_COMMANDS
    printf("SKIP: test_dump_parked needs --enable-debug-commands (its "
           "dump gate)\n");
    skip();
#endif
    parked_dump_run("0"); /* the reference model: network threads only */
    parked_dump_run("1"); /* a payload thread runs the request */
}

/* ---- damaged file: strict, repair, ignore -------------------------------- */
static void test_load_modes(void **state)
{
    (void)state;
    clean();
    struct srv s;
    char out[4096];
    assert_int_equal(start(&s, NULL), 0);
    fill(&s, 0, 5000, 200, "one");
    assert_int_equal(stop(&s, SIGTERM), 0);
    /* flip one byte in the middle of the file */
    int fd = open(dpath, O_RDWR);
    struct stat sb;
    fstat(fd, &sb);
    off_t at = sb.st_size / 2;
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, at), 1);
    c ^= 0x10;
    assert_int_equal(pwrite(fd, &c, 1, at), 1);
    close(fd);
    /* strict: exit 65, the log names an offset */
    const char *strict[] = {"--dump-load=strict", NULL};
    assert_int_equal(start(&s, strict), 65);
    assert_true(file_has(logp, "damaged at offset"));
    assert_int_equal(stat(dpath, &sb), 0); /* untouched */
    /* ignore: starts empty, file untouched */
    const char *ign[] = {"--dump-load=ignore", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, ign), 0);
    assert_int_equal(stat_of(&s, "curr_items"), 0);
    assert_int_equal(stop(&s, SIGTERM), 0);
    assert_int_equal(stat(dpath, &sb), 0);
    /* repair: starts with the intact blocks, keeps the damaged file */
    const char *rep[] = {"--dump-load=repair", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, rep), 0);
    uint64_t n = stat_of(&s, "curr_items");
    assert_true(n > 0 && n < 5001);
    assert_true(file_has(logp, "damage at offset"));
    assert_true(file_has(logp, ".corrupt-"));
    assert_int_not_equal(stat(dpath, &sb), 0);
    DIR *d = opendir(dir);
    struct dirent *e;
    int corrupt = 0;
    while ((e = readdir(d)) != NULL)
        corrupt += strstr(e->d_name, "cache.mdc.corrupt-") != NULL;
    closedir(d);
    assert_int_equal(corrupt, 1);
    get_gen(&s, out, sizeof(out));
    assert_int_equal(stop(&s, SIGTERM), 0);
    /* bad option value */
    const char *bad[] = {"--dump-load=maybe", NULL};
    assert_int_equal(start(&s, bad), 64);
}

/* A file whose checksums all verify, with a record of an empty key (which
 * tget would send as "VALUE  0 1") and one with a tag twice: strict does
 * not start (65, naming the record), repair starts with the other records
 * and logs each bad one. */
static void test_load_invalid_record(void **state)
{
    static const int32_t tags[] = {1, 2, 1, 3}, dup[] = {1, 2, 1, 2};
    const struct raw recs[] = {
        {"a", 1, "va", 2, 0, tags, 2},
        {"", 0, "x", 1, 0, tags, 1},
        {"b", 1, "vb", 2, 0, dup, 2},
        {"c", 1, "vc", 2, 0, NULL, 0},
    };
    uint64_t roff[4];
    size_t len;
    char out[4096], want[128];
    struct srv s;
    (void)state;
    clean();
    uint8_t *img = mk_image(recs, 4, &len, roff);
    assert_non_null(img);
    int fd = open(dpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, img, len), (ssize_t)len);
    close(fd);
    free(img);
    const char *strict[] = {"--dump-load=strict", "--no-dump-on-exit", NULL};
    int rc = start(&s, strict);
    if (rc == 0)
        stop(&s, SIGKILL); /* it started: do not leave it running */
    assert_int_equal(rc, 65);
    snprintf(want, sizeof(want), "damaged at offset %llu: block 0: record 1: "
             "empty key", (unsigned long long)roff[1]);
    assert_true(file_has(logp, want));
    const char *rep[] = {"--dump-load=repair", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, rep), 0);
    assert_int_equal(stat_of(&s, "curr_items"), 2);
    cmd(&s, "get a b c\r\n", "END\r\n", out, sizeof(out));
    assert_string_equal(out, "VALUE a 0 2\r\nva\r\nVALUE c 0 2\r\nvc\r\n"
                             "END\r\n");
    assert_true(file_has(logp, "block 0: record 1: empty key"));
    assert_true(file_has(logp, "block 0: record 2: tag 1:2 twice"));
    assert_true(file_has(logp, "2 of them records with an invalid field"));
    assert_int_equal(stop(&s, SIGTERM), 0);
}

/* repair never stops the start on damage: a file that is no dump at all
 * is skipped whole (nothing loaded, kept as .corrupt-*), the server
 * starts, and nothing in the log speaks of strict or exit 65; only strict
 * refuses it (65). */
static void test_repair_not_a_dump(void **state)
{
    (void)state;
    clean();
    struct srv s;
    struct stat sb;
    FILE *f = fopen(dpath, "w");
    assert_non_null(f);
    fputs("this is not an mdcached dump\n", f);
    fclose(f);
    const char *strict[] = {"--dump-load=strict", NULL};
    assert_int_equal(start(&s, strict), 65);
    assert_true(file_has(logp, "(--dump-load=strict: not starting)"));
    clean();
    f = fopen(dpath, "w");
    assert_non_null(f);
    fputs("this is not an mdcached dump\n", f);
    fclose(f);
    const char *rep[] = {"--no-dump-on-exit", NULL}; /* repair: the default */
    assert_int_equal(start(&s, rep), 0);
    assert_int_equal(stat_of(&s, "curr_items"), 0);
    assert_true(file_has(logp, "damage at offset 0"));
    assert_true(file_has(logp, ".corrupt-"));
    assert_false(file_has(logp, "strict"));
    assert_int_not_equal(stat(dpath, &sb), 0);
    assert_int_equal(stop(&s, SIGTERM), 0);
}

/* A -f path that is there but cannot be read as a file (a directory: it
 * opens, it does not map) is no verdict on any content: the start stops
 * with 66 (docs/dump.md) in either mode, the reason in the log, and the
 * directory is left alone. */
static void test_load_unmappable(void **state)
{
    (void)state;
    struct srv s;
    struct stat sb;
    clean();
    assert_int_equal(mkdir(dpath, 0755), 0);
    const char *rep[] = {"--no-dump-on-exit", NULL};
    int rc = start(&s, rep);
    if (rc == 0)
        stop(&s, SIGKILL);
    assert_int_equal(rc, 66);
    assert_true(file_has(logp, "cannot map"));
    const char *strict[] = {"--dump-load=strict", "--no-dump-on-exit", NULL};
    unlink(logp); /* clean() would try to remove the directory */
    rc = start(&s, strict);
    if (rc == 0)
        stop(&s, SIGKILL);
    assert_int_equal(rc, 66);
    assert_true(file_has(logp, "cannot map"));
    assert_int_equal(stat(dpath, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(rmdir(dpath), 0);
}

/* ---- kill -9 in the middle of a dump ---------------------------------------- */
static void test_kill9(void **state)
{
    (void)state;
    clean();
    struct srv s;
    char out[4096];
    assert_int_equal(start(&s, NULL), 0);
    fill(&s, 0, KILL9_N, 1000, "first");
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_string_equal(out, "OK\r\n");
    fill(&s, 0, 10, 1000, "second");
    bool mid = false;
    for (int attempt = 0; attempt < 5 && !mid; attempt++) {
        kill(s.pid, SIGUSR1);
        for (int i = 0; i < 200000; i++) {
            if (temp_files() > 0) {
                mid = true;
                break;
            }
        }
        if (mid)
            assert_int_equal(stop(&s, SIGKILL), 128 + SIGKILL);
        else
            sleep_ms(500);
    }
    assert_true(mid); /* killed while the temporary file was written */
    const char *strict[] = {"--dump-load=strict", NULL};
    assert_int_equal(start(&s, strict), 0);
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "first"));
    assert_int_equal(stat_of(&s, "curr_items"), KILL9_N + 1);
    /* the killed dump's temporary file is left, and ignored: the next
     * dump goes to a name of its own and leaves it as it is */
    int left = temp_files();
    assert_true(left >= 1);
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_string_equal(out, "OK\r\n");
    assert_int_equal(temp_files(), left);
    assert_int_equal(stop(&s, SIGKILL), 128 + SIGKILL);
}

/* ---- full disk ----------------------------------------------------------- */
static void test_full_disk(void **state)
{
    (void)state;
    const char *ci = getenv("CI");
    if (geteuid() != 0) {
        if (ci != NULL && strcmp(ci, "true") == 0)
            fail_msg("CI=true: the full-disk test needs root to mount a "
                     "tmpfs");
        skip();
    }
    char mnt[200], saved[sizeof(dpath)], cmdl[700];
    snprintf(mnt, sizeof(mnt), "%s/small", dir);
    assert_int_equal(mkdir(mnt, 0777), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=2m,mode=0777") != 0) {
        if (ci != NULL && strcmp(ci, "true") == 0)
            fail_msg("cannot mount a tmpfs: %s", strerror(errno));
        print_message("SKIP: cannot mount a tmpfs: %s\n", strerror(errno));
        rmdir(mnt);
        skip();
    }
    memcpy(saved, dpath, sizeof(saved));
    snprintf(dpath, sizeof(dpath), "%s/cache.mdc", mnt);
    clean();
    struct srv s;
    char out[4096];
    assert_int_equal(start(&s, NULL), 0);
    fill(&s, 0, 100, 1000, "small");
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_string_equal(out, "OK\r\n");
    struct stat sb;
    assert_int_equal(stat(dpath, &sb), 0);
    snprintf(cmdl, sizeof(cmdl), "cp '%s' '%s/before'", dpath, dir);
    assert_int_equal(system(cmdl), 0);
    /* 4 MB of records: the next dump cannot fit */
    fill(&s, 100, 4000, 1000, "big");
    cmd(&s, "dump\r\n", "\r\n", out, sizeof(out));
    assert_non_null(strstr(out, "SERVER_ERROR dump failed"));
    assert_non_null(strstr(out, "No space left on device"));
    assert_int_equal(stat_of(&s, "dump_failures"), 1);
    assert_int_equal(stat_of(&s, "dumps"), 1);
    assert_true(file_has(logp, "failed"));
    /* still serving */
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "big"));
    /* the previous dump is intact, no temporary file left */
    snprintf(cmdl, sizeof(cmdl), "cmp -s '%s' '%s/before'", dpath, dir);
    assert_int_equal(system(cmdl), 0);
    assert_int_equal(temp_files(), 0);
    assert_int_equal(stop(&s, SIGKILL), 128 + SIGKILL);
    /* and it loads */
    const char *strict[] = {"--dump-load=strict", "--no-dump-on-exit", NULL};
    assert_int_equal(start(&s, strict), 0);
    get_gen(&s, out, sizeof(out));
    assert_non_null(strstr(out, "small"));
    assert_int_equal(stop(&s, SIGTERM), 0);
    assert_int_equal(umount(mnt), 0);
    rmdir(mnt);
    memcpy(dpath, saved, sizeof(dpath));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_triggers),
        cmocka_unit_test(test_identity),
        cmocka_unit_test(test_coalesce),
        cmocka_unit_test(test_dump_parked),
        cmocka_unit_test(test_load_modes),
        cmocka_unit_test(test_repair_not_a_dump),
        cmocka_unit_test(test_load_unmappable),
        cmocka_unit_test(test_load_invalid_record),
        cmocka_unit_test(test_kill9),
        cmocka_unit_test(test_full_disk),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, setup, teardown);
}
