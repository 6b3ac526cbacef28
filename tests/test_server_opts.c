/*
 * test_server_opts.c - the daemon's command line and process behaviour:
 * `-h` lists every option and exits 0, `--version`, bad values exit 64
 * (EX_USAGE) with a message and never crash, option parsing details (-v
 * forms, sizes, repeated -l), the pid file, SIGHUP reopening the log file,
 * SIGUSR1 being harmless, SIGINT/SIGTERM exiting 0, and an IPv6
 * listener beside an IPv4 one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/options.h"
#include "server_client.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Run mdcached with args through the harness; capture stdout+stderr into
 * out; exit status (-1: a crash, or it got ready and was stopped). */
static int run_binary(const char *const *args, char *out, size_t outlen)
{
    static const struct tsrv_opts raw = {.flags = TSRV_RAW};
    struct tsrv s;
    char *log;
    int rc = tsrv_start_opts(&s, &raw, args);

    if (rc == 0) {
        tsrv_print_log(&s, "started, but should have exited");
        tsrv_kill(&s, SIGTERM);
        rc = -1;
    } else {
        rc = s.status;
    }
    log = tsrv_log(&s);
    snprintf(out, outlen, "%s", log != NULL ? log : "");
    free(log);
    tsrv_stop(&s);
    return rc > 128 ? -1 : rc; /* a crash: -1 */
}

/* The -h line that names opt holds text. */
static bool help_line_has(const char *out, const char *opt, const char *text)
{
    const char *p = strstr(out, opt), *e, *t;

    if (p == NULL)
        return false;
    e = strchr(p, '\n');
    t = strstr(p, text);
    return t != NULL && (e == NULL || t < e);
}

static void test_help(void **state)
{
    static const char *const names[] = {
        "--threads", "--payload-threads", "--memory-limit", "--no-evict",
        "--unix-socket", "--listen", "--port", "--max-conns",
        "--max-item-size", "--buckets", "--debug", "--verbose", "--user",
        "--pid-file", "--log-file", "--idle-timeout", "--max-tags",
        "--tag-reply-limit", "--max-output", "--version", "--help"};
    static char out[16384];
    static const char *const h[] = {"-h", NULL};
    static const char *const v[] = {"--version", NULL};

    (void)state;
    assert_int_equal(run_binary(h, out, sizeof(out)), 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strstr(out, names[i]) == NULL)
            fail_msg("-h does not list %s", names[i]);
    }
    assert_non_null(strstr(out, "(default: 11311)"));
    assert_non_null(strstr(out, "(default: 1024)"));
    assert_non_null(strstr(out, "(default: 127.0.0.1)"));
    /* the help says what the options do: --output-timeout drops any
     * stalled connection, not only a paused one; -d never backgrounds */
    assert_true(help_line_has(out, "--output-timeout", "paused or not"));
    assert_true(help_line_has(out, "--debug ", "debug log level"));
    assert_null(strstr(out, "drop a paused connection"));
    assert_null(strstr(out, "stay in the foreground"));
    assert_int_equal(run_binary(v, out, sizeof(out)), 0);
    assert_non_null(strstr(out, PACKAGE_VERSION));
}

/* A unix socket, port file or pid file that cannot be made stops the start
 * with the documented status (docs/options.md, "Exit status") and says why; a file
 * in the socket's place is not removed. */
static void test_listen_failures(void **state)
{
    char dir[] = "/tmp/mdc-opts.XXXXXX", file[64], nodir[64], lsock[200],
        nosock[64], sock[64], pf[64];
    static char out[4096];
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("keep\n", f);
    fclose(f);
    snprintf(nodir, sizeof(nodir), "%s/nodir/sock", dir);
    snprintf(nosock, sizeof(nosock), "%s/nodir/ports", dir);
    snprintf(sock, sizeof(sock), "%s/sock", dir);
    snprintf(pf, sizeof(pf), "%s/ok.ports", dir);
    int n = snprintf(lsock, sizeof(lsock), "%s/", dir);
    memset(lsock + n, 'x', sizeof(lsock) - (size_t)n - 1);
    lsock[sizeof(lsock) - 1] = '\0';

    static const struct {
        int arg; /* which path -s gets */
        int rc;
        const char *want;
    } cases[] = {
        {0, 69, "unix socket path too long"},
        {1, 69, "exists and is not a socket"},
        {2, 69, "cannot bind unix socket"},
    };
    const char *paths[] = {lsock, file, nodir};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = {"-p", "0", "-s", paths[cases[i].arg], NULL};
        int rc = run_binary(args, out, sizeof(out));
        if (rc != cases[i].rc || strstr(out, cases[i].want) == NULL)
            fail_msg("-s %s: exit %d, want %d and '%s'\n%s",
                     paths[cases[i].arg], rc, cases[i].rc, cases[i].want, out);
    }
    char buf[16] = "";
    f = fopen(file, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "keep\n");

    /* a port file in a directory that is not there (the last one given
     * is the one written) */
    const char *pargs[] = {"-p", "0", "-s", sock, "--port-file", nosock, NULL};
    int rc = run_binary(pargs, out, sizeof(out));
    if (rc != 70 || strstr(out, "cannot write port file") == NULL)
        fail_msg("--port-file %s: exit %d, want 70\n%s", nosock, rc, out);
    /* a --metrics port another socket holds: 69 (docs/options.md) */
    int hold = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t sl = sizeof(sin);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(hold >= 0);
    assert_int_equal(bind(hold, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(hold, 1), 0);
    assert_int_equal(getsockname(hold, (struct sockaddr *)&sin, &sl), 0);
    char metrics[64];
    snprintf(metrics, sizeof(metrics), "--metrics=127.0.0.1:%u",
             (unsigned)ntohs(sin.sin_port));
    const char *margs[] = {"-p", "0", "-s", sock, metrics, NULL};
    rc = run_binary(margs, out, sizeof(out));
    close(hold);
    if (rc != 69 || strstr(out, "cannot listen on") == NULL)
        fail_msg("%s on a held port: exit %d, want 69\n%s", metrics, rc, out);
    unlink(sock);
    /* and a pid file */
    const char *pidargs[] = {"-p", "0", "-s", sock, "-P", nosock, NULL};
    rc = run_binary(pidargs, out, sizeof(out));
    if (rc != 70 || strstr(out, "cannot write pid file") == NULL)
        fail_msg("-P %s: exit %d, want 70\n%s", nosock, rc, out);
    unlink(sock);
    unlink(file);
    rmdir(dir);
}

static void test_bad_values_exit_64(void **state)
{
    static const char *const bad[][7] = {
        {"-n", "x"},          {"-n", "-1"},         {"-n", "100000"},
        {"-t", "999"},        {"-m", "0"},          {"-m", "12abc"},
        {"-I", "5q"},         {"-I", "10g"},        {"-I", "1"},
        {"-b", "3"},          {"-p", "70000"},      {"-p", ""},
        {"-c", "0"},          {"--max-output", "1"}, {"--bogus"},
        {"stray"},            {"-p"},               {"-v", "9"},
        {"--verbose=x"},      {"--idle-timeout", "-5"},
        {"-a", "999"},        {"--tag-buckets", "3"},
        {"--max-tags", "0"},  {"-u", ""},
        {"-p", "0"}, /* nothing to listen on */
        {"-p", "0", "-l", "127.0.0.1"}, /* -l without its own port */
        {"-l", "127.0.0.1:0"},
        {"-l", "[::1"},       {"-l", "1.2.3.4:99999"},
        {"--tls-listen", "[::1", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
        {"--tls-listen", "1.2.3.4:99999", "--tls-cert", "c.pem", "--tls-key",
         "k.pem"},
        {"--no-evict=yes"},   {"--port"},
        {"-u", "no-such-user-mdc"},
        {"--protected-mode", "maybe"},
        {"-U", "11211", "--auth-file", "/dev/null"}, /* UDP has no login */
        {"-p", "automatic"},  {"-U", "auto1"},      {"-l", "127.0.0.1:aut"},
        {"-x", "lo", "-U", "auto"}, /* XDP filters on a fixed port */
        {"-l", "127.0.0.1", "-l", "127.0.0.1"},   /* given twice */
        {"-C", "/tmp"},                            /* a directory */
        {"--memory-limit-kib", "1023"},            /* below -m's 1 MiB */
        {"--memory-limit-kib", "2m"},              /* KiB, no suffix */
    };
    static char out[4096];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = run_binary(bad[i], out, sizeof(out));
        if (rc != 64)
            fail_msg("%s %s: exit %d, want 64\n%s", bad[i][0],
                     bad[i][1] ? bad[i][1] : "", rc, out);
        if (strlen(out) == 0 || strlen(out) > 1000)
            fail_msg("%s: no clear message", bad[i][0]);
    }
}

/* Parse argv (NULL-terminated) in-process; messages into err. */
static int parse_msg(struct options *o, const char *const *args, char *err,
                     size_t errlen)
{
    char *argv[16];
    int argc = 0, rc;
    FILE *f = fmemopen(err, errlen, "w");

    assert_non_null(f);
    argv[argc++] = (char *)"mdcached";
    while (args[argc - 1] != NULL && argc < 15) {
        argv[argc] = (char *)args[argc - 1];
        argc++;
    }
    argv[argc] = NULL;
    memset(err, 0, errlen);
    rc = options_parse(o, argc, argv, f);
    fclose(f);
    return rc;
}

/* -v without a value counts up to the most verbose level (4) and stays
 * there; the dump options that contradict each other or lack -f are usage
 * errors with their reason. */
static void test_verbose_count_and_dump_flags(void **state)
{
    static const struct {
        const char *args[6];
        unsigned verbose;
    } levels[] = {
        {{"-v"}, 3},
        {{"-v", "-v", "-v"}, 4},
        {{"-vvvvvv"}, 4},
    };
    static const struct {
        const char *args[6];
        const char *want;
    } bad[] = {
        {{"--dump-on-exit", "--no-dump-on-exit", "-f", "/tmp/x.dump"},
         "--dump-on-exit and --no-dump-on-exit conflict"},
        {{"--dump-on-exit"}, "-i and --dump-on-exit need -f PATH"},
    };
    char err[1024];
    struct options o;

    (void)state;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        assert_int_equal(parse_msg(&o, levels[i].args, err, sizeof(err)),
                         OPTIONS_RUN);
        assert_int_equal(o.verbose, levels[i].verbose);
        options_teardown(&o);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse_msg(&o, bad[i].args, err, sizeof(err)),
                         OPTIONS_USAGE);
        if (strstr(err, bad[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, bad[i].want, err);
        options_teardown(&o);
    }
}

/* A usage error's message names the option (a long one by its full name)
 * and the value it was given. */
static void test_usage_messages(void **state)
{
    static const struct {
        const char *args[8];
        const char *want;
    } cases[] = {
        {{"--verbose", "9"}, "invalid value '9' for --verbose"},
        {{"-v", "9"}, "invalid value '9' for --verbose"},
        {{"--no-evict=yes"}, "option '--no-evict' takes no value"},
        {{"--no-ev=yes"}, "option '--no-evict' takes no value"},
        {{"--port"}, "missing value for option '--port'"},
        {{"-p"}, "missing value for option -p"},
        {{"--bogus=3"}, "unknown option '--bogus'"},
        {{"-+"}, "unknown option -+"},
        {{"--no=1"}, "ambiguous option '--no'"},
        {{"--tls-listen", "[::1", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
         "invalid value '[::1' for --tls-listen"},
        {{"--tls-listen", "localhost:x", "--tls-cert", "c.pem", "--tls-key",
          "k.pem"}, "invalid value 'localhost:x' for --tls-listen"},
        {{"-p", "0", "-l", "127.0.0.1"},
         "-p 0 needs -l ADDR:PORT, -s PATH, -U PORT or --tls-listen"},
    };
    char err[1024];
    struct options o;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(parse_msg(&o, cases[i].args, err, sizeof(err)),
                         OPTIONS_USAGE);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, cases[i].want, err);
        options_teardown(&o);
    }
}

static void flag_names(void *ctx, const char *name, const char *value)
{
    char *names = ctx;

    /* the flags are the settings shown as "no" by default */
    if (strcmp(value, "no") == 0 && strlen(names) + strlen(name) + 2 < 4096) {
        strcat(names, name);
        strcat(names, " ");
    }
}

/* Every flag (and -h, --version) given a value, "--FLAG=yes", is told it
 * takes none: getopt_long's '?' carries the flag's val in optopt, which
 * is no unknown option. */
static void test_flag_given_value(void **state)
{
    static char names[4096];
    char err[1024], arg[128], want[160], *name, *save = NULL;
    struct options o;
    int n = 0;

    (void)state;
    names[0] = '\0';
    options_defaults(&o);
    options_visit(&o, flag_names, names);
    options_teardown(&o);
    strcat(names, "help version");
    for (name = strtok_r(names, " ", &save); name != NULL;
         name = strtok_r(NULL, " ", &save), n++) {
        const char *args[] = {arg, NULL};

        snprintf(arg, sizeof(arg), "--%s=yes", name);
        snprintf(want, sizeof(want), "option '--%s' takes no value", name);
        assert_int_equal(parse_msg(&o, args, err, sizeof(err)),
                         OPTIONS_USAGE);
        if (strstr(err, want) == NULL)
            fail_msg("%s: want '%s' in: %s", arg, want, err);
        options_teardown(&o);
    }
    assert_true(n >= 8); /* no-evict, debug, dump-on-exit, ... */
}

/* A parse that stops inside a cluster of short options ("-+vv": '+' is
 * unknown) must not leave getopt pointing into that argv for the next
 * parse (found by tests/fuzz/fuzz_options as a use after free). */
static void test_parse_after_error_mid_cluster(void **state)
{
    struct options o;
    FILE *devnull = fopen("/dev/null", "w");
    char a[] = "-+vv", b[] = "-vv", a0[] = "mdcached";
    char *argv1[] = {a0, a, NULL};
    char *argv2[] = {a0, b, NULL};

    (void)state;
    assert_int_equal(options_parse(&o, 2, argv1, devnull), OPTIONS_USAGE);
    options_teardown(&o);
    memcpy(a, "-zz", 4); /* what a stale getopt would go on reading */
    assert_int_equal(options_parse(&o, 2, argv2, devnull), OPTIONS_RUN);
    assert_int_equal(o.verbose, 4);
    options_teardown(&o);
    fclose(devnull);
}

static void test_parse_forms(void **state)
{
    struct options o;
    char a0[] = "mdcached", a1[] = "-vv", a2[] = "-l", a3[] = "::1",
         a4[] = "--listen=10.0.0.1:99", a5[] = "-I", a6[] = "512k",
         a7[] = "-v3", a8[] = "--max-output=2m";
    char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, NULL};
    FILE *devnull = fopen("/dev/null", "w");

    (void)state;
    assert_int_equal(options_parse(&o, 9, argv, devnull), OPTIONS_RUN);
    assert_int_equal(o.verbose, 3);
    assert_int_equal(o.listen.n, 2);
    assert_string_equal(o.listen.v[0], "::1");
    assert_int_equal(o.max_item_size, 512 * 1024);
    assert_int_equal(o.max_output, 2 * 1024 * 1024);
    assert_int_equal(o.payload_threads, 0);
    assert_true(o.net_threads >= 1);
    options_teardown(&o);
    {
        char b0[] = "mdcached", b1[] = "-v", b2[] = "4", b3[] = "-d";
        char *bv[] = {b0, b1, b2, b3, NULL};
        assert_int_equal(options_parse(&o, 4, bv, devnull), OPTIONS_RUN);
        assert_int_equal(o.verbose, 4);
        assert_true(o.debug);
        options_teardown(&o);
    }
    {
        /* --memory-limit-kib: KiB, 0 (the default) leaves -m's limit */
        char b0[] = "mdcached", b1[] = "--memory-limit-kib=2560";
        char *bv[] = {b0, b1, NULL};
        assert_int_equal(options_parse(&o, 2, bv, devnull), OPTIONS_RUN);
        assert_int_equal(o.memory_kib, 2560);
        assert_int_equal(o.memory_mb, 1024);
        options_teardown(&o);
    }
    {
        char b0[] = "mdcached", b1[] = "-d";
        char *bv[] = {b0, b1, NULL};
        assert_int_equal(options_parse(&o, 2, bv, devnull), OPTIONS_RUN);
        assert_int_equal(o.verbose, 3); /* -d: debug log */
        assert_int_equal(o.listen.n, 1);
        assert_string_equal(o.listen.v[0], "127.0.0.1");
        options_teardown(&o);
    }
    fclose(devnull);
}

static bool file_contains(const char *path, const char *needle)
{
    char buf[16384];
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

static bool wait_contains(const char *path, const char *needle, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        if (file_contains(path, needle))
            return true;
        sleep_ms(10);
    }
    return false;
}

/* -p 0 with an -l ADDR:PORT listens there (that -l overrides -p); an -l
 * without its own port gets no TCP socket then, not a random port. */
static void test_port_zero_with_listen_port(void **state)
{
    static const char *const ok[][8] = {
        {"-p", "0", "-l", "127.0.0.1:5999"},
        {"-p", "0", "-l", "127.0.0.2", "-l", "[::1]:5999"},
        {"-p", "0", "-s", "/tmp/x.sock"},
        {"-p", "0", "-U", "5999"},
    };
    static const char *const nothing[][8] = {
        {"-p", "0"},
        {"-p", "0", "-l", "127.0.0.1"},
        {"-p", "0", "-l", "127.0.0.1:0"},
        {"-l", "127.0.0.1:0"},
    };
    char err[1024], dir[] = "/tmp/mdc-opts-XXXXXX", logf[128], port[32];
    char buf[4096], pf[128];
    struct options o;
    struct tsrv s;
    const char *args[] = {"-p", "0", "-l", "127.0.0.1:auto", "-l",
                          "127.0.0.2", "-n", "1", "-v", "2", "--log-file",
                          logf, "--port-file", pf, NULL};
    static const struct tsrv_opts raw = {.flags = TSRV_RAW};
    FILE *f;
    int fd, lines = 0;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (parse_msg(&o, ok[i], err, sizeof(err)) != OPTIONS_RUN)
            fail_msg("ok case %zu: %s", i, err);
        options_teardown(&o);
    }
    for (size_t i = 0; i < sizeof(nothing) / sizeof(nothing[0]); i++) {
        assert_int_equal(parse_msg(&o, nothing[i], err, sizeof(err)),
                         OPTIONS_USAGE);
        if (strstr(err, "nothing to listen on") == NULL)
            fail_msg("case %zu: %s", i, err);
        options_teardown(&o);
    }
#ifdef HAVE_TLS
    {
        const char *tls[] = {"-p", "0", "--tls-listen", "127.0.0.1",
                             "--tls-cert", "c.pem", "--tls-key", "k.pem",
                             NULL};
        assert_int_equal(parse_msg(&o, tls, err, sizeof(err)), OPTIONS_RUN);
        options_teardown(&o);
    }
#endif

    /* the daemon: one TCP listener, the -l ADDR:PORT one */
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777);
    snprintf(logf, sizeof(logf), "%s/log", dir);
    snprintf(pf, sizeof(pf), "%s/ports", dir);
    assert_int_equal(tsrv_start_opts(&s, &raw, args), 0);
    assert_true(wait_contains(logf, "ready", 5000));
    s.port = tsrv_port_file_port(pf, "tcp", "127.0.0.1");
    assert_true(s.port > 0);
    snprintf(port, sizeof(port), "127.0.0.1:%d", s.port);
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    close(fd);
    f = fopen(logf, "r");
    assert_non_null(f);
    while (fgets(buf, sizeof(buf), f) != NULL)
        if (strstr(buf, "listening on ") != NULL) {
            lines++;
            assert_non_null(strstr(buf, port));
        }
    fclose(f);
    assert_int_equal(lines, 1);
    assert_int_equal(tsrv_stop(&s), 0);
    unlink(logf);
    unlink(pf);
    rmdir(dir);
}

/* -p auto / -U auto / ADDR:auto: the kernel picks the ports when the
 * sockets are bound, --port-file and the log say which.  Two daemons
 * started at once get different ports, and each serves on its own: no
 * test needs to probe a free port (and race whoever takes it first). */
static void test_port_auto(void **state)
{
    char dir[] = "/tmp/mdc-opts-XXXXXX", pf[2][128], logf[2][128];
    char want[64], line[256];
    static const struct tsrv_opts nowait = {.flags = TSRV_RAW | TSRV_NOWAIT};
    struct tsrv d[2];
    const char *args[2][16];
    int tcp[2], udp[2], k;

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777);
    for (k = 0; k < 2; k++) {
        snprintf(pf[k], sizeof(pf[k]), "%s/ports%d", dir, k);
        snprintf(logf[k], sizeof(logf[k]), "%s/log%d", dir, k);
    }
    for (k = 0; k < 2; k++) { /* both started before either is waited for */
        const char *a[] = {"-l", "127.0.0.1", "-p", "auto", "-U", "auto",
                           "-n", "1", "-v", "2", "--log-file", logf[k],
                           "--port-file", pf[k], NULL};

        memcpy(args[k], a, sizeof(a));
        assert_int_equal(tsrv_start_opts(&d[k], &nowait, args[k]), 0);
    }
    for (k = 0; k < 2; k++) {
        assert_int_equal(tsrv_wait_ready(&d[k]), 0);
        tcp[k] = tsrv_port_file_port(pf[k], "tcp", "127.0.0.1");
        udp[k] = tsrv_port_file_port(pf[k], "udp", "127.0.0.1");
        if (tcp[k] <= 0 || udp[k] <= 0)
            fail_msg("daemon %d: no tcp/udp line in its port file", k);
        /* the log names the port bound, not "auto" */
        snprintf(want, sizeof(want), "listening on 127.0.0.1:%d", tcp[k]);
        assert_true(wait_contains(logf[k], want, 2000));
        snprintf(want, sizeof(want), "UDP on 127.0.0.1:%d", udp[k]);
        assert_true(wait_contains(logf[k], want, 2000));
    }
    assert_int_not_equal(tcp[0], tcp[1]);
    assert_int_not_equal(udp[0], udp[1]);
    /* a UDP port a daemon holds is refused to another (exit 69, as
     * memcached): the second does not join the first's SO_REUSEPORT
     * sockets, which would split the port's datagrams between the two
     * (and -U auto could be given such a port: 1 run of 3 failed the
     * checks above with three test runs on one machine) */
    {
        char uport[16], out[4096];
        const char *a[] = {"-l", "127.0.0.1", "-p", "auto", "-U", uport,
                           "-n", "2", NULL};
        int rc;

        snprintf(uport, sizeof(uport), "%d", udp[0]);
        rc = run_binary(a, out, sizeof(out));
        if (rc != 69 || strstr(out, "cannot bind UDP") == NULL)
            fail_msg("-U %s, held by another daemon: exit %d, want 69\n%s",
                     uport, rc, out);
    }
    /* each port is its own daemon's: a record set through one is not in
     * the other */
    for (k = 0; k < 2; k++) {
        struct tsrv s;
        struct tresp r;
        struct treq set = {.op = WIRE_OP_SET, .key = "k", .klen = 1,
                           .val = k ? "b" : "a", .vlen = 1};
        struct treq get = {.op = WIRE_OP_GET, .key = "k", .klen = 1};
        int fd;

        memset(&s, 0, sizeof(s));
        snprintf(s.host, sizeof(s.host), "127.0.0.1");
        s.port = tcp[k];
        fd = tc_connect(&s);
        assert_true(fd >= 0);
        if (k == 0) {
            assert_int_equal(tc_call(fd, &set, &r), WIRE_S_OK);
            tc_resp_free(&r);
        }
        assert_int_equal(tc_call(fd, &get, &r),
                         k == 0 ? WIRE_S_OK : WIRE_S_NOT_FOUND);
        tc_resp_free(&r);
        close(fd);
    }
    /* one line per listener */
    {
        FILE *f = fopen(pf[0], "r");
        int n = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f) != NULL)
            n++;
        fclose(f);
        assert_int_equal(n, 2); /* tcp and udp: one address */
    }
    for (k = 0; k < 2; k++) {
        assert_int_equal(tsrv_stop(&d[k]), 0);
        unlink(pf[k]);
        unlink(logf[k]);
    }
    rmdir(dir);
}

/* Pid file, SIGHUP log reopen, SIGUSR1, SIGINT exit 0. */
static void test_pidfile_signals(void **state)
{
    char dir[] = "/tmp/mdc-opts-XXXXXX", pidf[128], logf[128], logf1[128];
    char buf[64];
    const char *args[] = {"-n", "1", "-P", pidf, "--log-file", logf, "-v",
                          "2", NULL};
    struct tsrv s;
    FILE *f;
    int fd, status = 0, i;

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777); /* the daemon may run as nobody after binding */
    snprintf(pidf, sizeof(pidf), "%s/pid", dir);
    snprintf(logf, sizeof(logf), "%s/log", dir);
    snprintf(logf1, sizeof(logf1), "%s/log.1", dir);
    assert_int_equal(tsrv_start(&s, args), 0);
    /* the port accepts (the kernel's backlog) a moment before the daemon
     * has written its pid file: wait for it, up to 2 s */
    buf[0] = '\0';
    for (i = 0; i < 200 && buf[0] == '\0'; i++) {
        f = fopen(pidf, "r");
        if (f != NULL) {
            if (fgets(buf, sizeof(buf), f) == NULL)
                buf[0] = '\0';
            fclose(f);
        }
        if (buf[0] == '\0')
            sleep_ms(10);
    }
    assert_int_equal(atol(buf), (long)s.pid);
    assert_true(wait_contains(logf, "ready", 2000));
    if (getuid() == 0)
        assert_true(file_contains(logf, "running as user nobody"));

    /* rotate: the old file keeps its lines, SIGHUP starts a new one */
    assert_int_equal(rename(logf, logf1), 0);
    kill(s.pid, SIGHUP);
    assert_true(wait_contains(logf, "reopened", 2000));
    kill(s.pid, SIGUSR1);
    assert_true(wait_contains(logf, "SIGUSR1: no dump file (-f)", 2000));
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    close(fd);

    kill(s.pid, SIGINT);
    for (i = 0; i < 1000; i++) {
        if (waitpid(s.pid, &status, WNOHANG) == s.pid)
            break;
        sleep_ms(10);
    }
    assert_true(i < 1000);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    s.pid = 0;
    tsrv_stop(&s);
    assert_true(wait_contains(logf, "stopped", 100));
    unlink(pidf);
    unlink(logf);
    unlink(logf1);
    rmdir(dir);
}

static void test_ipv6_listener(void **state)
{
    struct tsrv s;
    struct sockaddr_in6 sa;
    const char *args6[] = {"-l", "[::1]", "-l", "127.0.0.1", NULL};
    int fd;

    (void)state;
    fd = socket(AF_INET6, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (fd >= 0)
            close(fd);
        print_message("no IPv6 loopback: IPv6 part skipped\n");
    } else {
        close(fd);
        assert_int_equal(tsrv_start(&s, args6), 0);
        /* -p auto: each address has a port of its own */
        sa.sin6_port = htons((uint16_t)tsrv_port_of(&s, "tcp", "[::1]"));
        fd = socket(AF_INET6, SOCK_STREAM, 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        {
            struct treq r = {.op = WIRE_OP_NOOP};
            tc_set_timeout_ms(fd, TC_HANG_MS);
            assert_int_equal(tc_call(fd, &r, NULL), 0);
        }
        close(fd);
        assert_int_equal(tsrv_stop(&s), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_bad_values_exit_64),
        cmocka_unit_test(test_listen_failures),
        cmocka_unit_test(test_verbose_count_and_dump_flags),
        cmocka_unit_test(test_parse_forms),
        cmocka_unit_test(test_parse_after_error_mid_cluster),
        cmocka_unit_test(test_usage_messages),
        cmocka_unit_test(test_flag_given_value),
        cmocka_unit_test(test_port_zero_with_listen_port),
        cmocka_unit_test(test_port_auto),
        cmocka_unit_test(test_pidfile_signals),
        cmocka_unit_test(test_ipv6_listener),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
