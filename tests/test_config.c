/*
 * test_config.c - the config file (-C, mdcached.conf(5)): long-option =
 * value lines with the option table's names, the command line overriding
 * the file, an unknown key or a bad value exiting 64 with the file and line
 * named, and SIGHUP applying the log level live while logging the changed
 * settings it ignores.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/options.h"
#include "server_client.h"

static char tdir[] = "/tmp/mdc-conf-XXXXXX";

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, 0644); /* the daemon reads it again as nobody */
}

static bool file_contains(const char *path, const char *needle)
{
    static char buf[65536];
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
    return file_contains(path, needle);
}

/* Parse argv (NULL-terminated) in-process; messages into err. */
static int parse(struct options *o, const char *const *args, char *err,
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

static void test_file_values_and_override(void **state)
{
    char path[128], err[1024];
    struct options o;
    const char *a1[] = {"-C", path, NULL};
    const char *a2[] = {"-C", path, "-m", "64", "--listen", "127.0.0.2", NULL};

    (void)state;
    snprintf(path, sizeof(path), "%s/ok.conf", tdir);
    write_file(path, "# comment\n\n"
                     "memory-limit = 256\n"
                     "  threads=2  \n"
                     "listen = 127.0.0.1:7000\n"
                     "listen = \"[::1]\"\n"
                     "no-evict\n"
                     "max-item-size = 2m\n"
                     "verbose = 1\n");
    assert_int_equal(parse(&o, a1, err, sizeof(err)), OPTIONS_RUN);
    assert_int_equal(o.memory_mb, 256);
    assert_int_equal(o.net_threads, 2);
    assert_int_equal(o.listen.n, 2);
    assert_string_equal(o.listen.v[0], "127.0.0.1:7000");
    assert_string_equal(o.listen.v[1], "[::1]");
    assert_true(o.no_evict);
    assert_int_equal(o.max_item_size, 2u << 20);
    assert_int_equal(o.verbose, 1);
    assert_int_equal(o.port, 11311); /* not in the file: the default */
    options_teardown(&o);

    /* the command line wins, also over a repeated option */
    assert_int_equal(parse(&o, a2, err, sizeof(err)), OPTIONS_RUN);
    assert_int_equal(o.memory_mb, 64);
    assert_int_equal(o.listen.n, 1);
    assert_string_equal(o.listen.v[0], "127.0.0.2");
    assert_int_equal(o.net_threads, 2);
    options_teardown(&o);

    /* no-evict = no turns a flag off */
    write_file(path, "no-evict = no\n");
    assert_int_equal(parse(&o, a1, err, sizeof(err)), OPTIONS_RUN);
    assert_false(o.no_evict);
    options_teardown(&o);

    /* port = 0 with a listen line of its own port: that one listens */
    write_file(path, "port = 0\nlisten = 127.0.0.1:7000\n");
    assert_int_equal(parse(&o, a1, err, sizeof(err)), OPTIONS_RUN);
    assert_int_equal(o.port, 0);
    options_teardown(&o);
    /* ... without one, nothing would: refused, naming every way out */
    write_file(path, "port = 0\nlisten = 127.0.0.1\n");
    assert_int_equal(parse(&o, a1, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "nothing to listen on: -p 0 needs -l "
                                "ADDR:PORT, -s PATH, -U PORT or --tls-listen"));
    options_teardown(&o);
    /* a tls-listen line is checked like a listen line */
    write_file(path, "tls-listen = [::1\ntls-cert = c.pem\n"
                     "tls-key = k.pem\n");
    assert_int_equal(parse(&o, a1, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "invalid value '[::1' for --tls-listen"));
    options_teardown(&o);
}

static void test_file_errors_name_line(void **state)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"port = 1\nbogus-key = 3\n", ":2: unknown option 'bogus-key'"},
        {"\n\nmemory-limit = lots\n", ":3: invalid value 'lots' for memory-limit"},
        {"threads = 9999\n", ":1: invalid value '9999' for threads"},
        {"buckets = 3\n", ":1: invalid value '3' for buckets: not a power"},
        {"port\n", ":1: port needs a value"},
        {"no-evict = maybe\n", ":1: invalid value 'maybe' for no-evict"},
        {"help\n", ":1: 'help' is not allowed"},
        {"config = /etc/x\n", ":1: 'config' is not allowed"},
        {"-p = 5\n", ":1: unknown option '-p'"},
        /* one value each: a second line is an error, not "last wins" */
        {"port = 1\nmemory-limit = 5\n\nport = 2\n",
         ":4: port given twice (first on line 1)"},
        {"memory-limit = 64\n# again\nmemory-limit = 128\n",
         ":3: memory-limit given twice (first on line 1)"},
        {"no-evict\nno-evict = no\n", ":2: no-evict given twice"},
    };
    char path[128], err[1024], want[256];
    struct options o;
    const char *a[] = {"-C", path, NULL};

    (void)state;
    snprintf(path, sizeof(path), "%s/bad.conf", tdir);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(path, bad[i].text);
        assert_int_equal(parse(&o, a, err, sizeof(err)), OPTIONS_USAGE);
        snprintf(want, sizeof(want), "%s%s", path, bad[i].want);
        if (strstr(err, want) == NULL)
            fail_msg("case %zu: want '%s' in: %s", i, want, err);
        options_teardown(&o);
    }
    /* a missing file */
    snprintf(path, sizeof(path), "%s/missing.conf", tdir);
    assert_int_equal(parse(&o, a, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "cannot read config file"));
    options_teardown(&o);
    /* a directory: said so, not "Input/output error" */
    snprintf(path, sizeof(path), "%s", tdir);
    assert_int_equal(parse(&o, a, err, sizeof(err)), OPTIONS_USAGE);
    snprintf(want, sizeof(want), "cannot read config file %s: Is a "
             "directory", tdir);
    if (strstr(err, want) == NULL)
        fail_msg("want '%s' in: %s", want, err);
    options_teardown(&o);
}

/* A listen address repeated (in the file, on the command line, or as -l
 * and --tls-listen) is named as given twice: exit 64, not a bind failure
 * "Address already in use" (exit 69) as if another process held it. */
static void test_listen_twice(void **state)
{
    char path[128], err[1024];
    struct options o;
    const char *a[] = {"-C", path, NULL};
    const char *cli[] = {"-l", "127.0.0.1", "-l", "127.0.0.1:11311", NULL};
    const char *cli6[] = {"-l", "[::1]:7000", "-l", "::1", "-p", "7000",
                          NULL};
    const char *auto2[] = {"-l", "127.0.0.1:auto", "-l", "127.0.0.1:auto",
                           NULL};

    (void)state;
    snprintf(path, sizeof(path), "%s/twice.conf", tdir);
    write_file(path, "listen = 127.0.0.1:7000\nlisten = 127.0.0.1:7000\n");
    assert_int_equal(parse(&o, a, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "the address 127.0.0.1:7000 was given "
                                "twice"));
    options_teardown(&o);
    assert_int_equal(parse(&o, cli, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "the address 127.0.0.1:11311 was given "
                                "twice (-l 127.0.0.1 and -l "
                                "127.0.0.1:11311)"));
    options_teardown(&o);
    assert_int_equal(parse(&o, cli6, err, sizeof(err)), OPTIONS_USAGE);
    assert_non_null(strstr(err, "[::1]:7000 was given twice"));
    options_teardown(&o);
    /* auto ports differ: two listeners */
    assert_int_equal(parse(&o, auto2, err, sizeof(err)), OPTIONS_RUN);
    options_teardown(&o);
    /* different ports on one address are two listeners */
    write_file(path, "listen = 127.0.0.1:7000\nlisten = 127.0.0.1:7001\n");
    assert_int_equal(parse(&o, a, err, sizeof(err)), OPTIONS_RUN);
    assert_int_equal(o.listen.n, 2);
    options_teardown(&o);
}

/* The real binary: a bad file exits 64 (EX_USAGE) with file and line. */
static void test_binary_exit_64(void **state)
{
    static const struct tsrv_opts raw = {.flags = TSRV_RAW};
    const char *args[] = {"-C", NULL, NULL};
    char path[128], *out;
    struct tsrv s;

    (void)state;
    snprintf(path, sizeof(path), "%s/bin.conf", tdir);
    write_file(path, "port = 0\n# two\nmax-conns = 0\n");
    args[1] = path;
    assert_int_equal(tsrv_start_opts(&s, &raw, args), 64);
    out = tsrv_log(&s);
    tsrv_stop(&s);
    assert_non_null(strstr(out, "bin.conf:3: invalid value '0' for max-conns"));
    free(out);
}

/* tsrv_start() passes -v, which would override the file's level: start
 * the daemon with only -C and the listener (from the file too: port auto,
 * its port read from the port file, which the harness is told of: it
 * adds no --port-file). */
static int start_with_conf(struct tsrv *s, const char *conf)
{
    static char pf[128];
    static const struct tsrv_opts raw = {.flags = TSRV_RAW, .port_file = pf};
    static const char *args[] = {"-C", NULL, NULL};

    snprintf(pf, sizeof(pf), "%s/live.ports", tdir);
    unlink(pf);
    {
        FILE *f = fopen(conf, "a");
        if (f == NULL)
            return -1;
        fprintf(f, "port = auto\nport-file = %s\n", pf);
        fclose(f);
    }
    args[1] = conf;
    return tsrv_start_opts(s, &raw, args) == 0 ? 0 : -1;
}

static void test_sighup_reload(void **state)
{
    char path[128], logf[128], text[512];
    struct tsrv s;
    int fd;

    (void)state;
    snprintf(path, sizeof(path), "%s/live.conf", tdir);
    snprintf(logf, sizeof(logf), "%s/live.log", tdir);
    snprintf(text, sizeof(text), "verbose = 2\nthreads = 1\nlog-file = %s\n"
             "memory-limit = 64\n", logf);
    write_file(path, text);
    assert_int_equal(start_with_conf(&s, path), 0);
    assert_true(wait_contains(logf, "ready", 3000));
    assert_true(wait_contains(logf, "64 MiB", 100));
    /* at level 2 a connection leaves no debug line */
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    close(fd);
    sleep_ms(100);
    assert_false(file_contains(logf, "accepted on"));

    /* a bad file is refused and the running settings stay */
    write_file(path, "verbose = 3\nbogus = 1\n");
    kill(s.pid, SIGHUP);
    assert_true(wait_contains(logf, "config reload failed", 3000));
    assert_true(file_contains(logf, "live.conf:2: unknown option 'bogus'"));
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    close(fd);
    sleep_ms(100);
    assert_false(file_contains(logf, "accepted on"));

    /* the level and max-conns change live; the memory limit waits for a
     * restart */
    snprintf(text, sizeof(text), "verbose = 3\nthreads = 1\nlog-file = %s\n"
             "memory-limit = 128\nport = auto\nport-file = %s\n"
             "max-conns = 1\n", logf, s.port_file);
    write_file(path, text);
    kill(s.pid, SIGHUP);
    assert_true(wait_contains(logf, "memory-limit = 128 ignored", 3000));
    assert_true(file_contains(logf, "verbose = 3 applied"));
    assert_true(file_contains(logf, "max-conns = 1 applied"));
    fd = tc_connect(&s);
    assert_true(fd >= 0);
    assert_true(wait_contains(logf, "accepted on", 3000));
    {
        /* a second connection is over the new limit: refused and closed */
        char buf[128] = {0};
        int fd2 = tc_connect(&s);
        ssize_t n;

        assert_true(fd2 >= 0);
        n = read(fd2, buf, sizeof(buf) - 1);
        assert_true(n > 0);
        assert_non_null(strcasestr(buf, "too many open connections"));
        close(fd2);
    }
    close(fd);
    assert_int_equal(tsrv_stop(&s), 0);
    unlink(logf);
}

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(tdir) == NULL)
        return -1;
    chmod(tdir, 0777); /* the daemon may run as nobody after binding */
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_values_and_override),
        cmocka_unit_test(test_file_errors_name_line),
        cmocka_unit_test(test_binary_exit_64),
        cmocka_unit_test(test_listen_twice),
        cmocka_unit_test(test_sighup_reload),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
