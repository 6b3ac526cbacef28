/*
 * test_stop_early.c - a stop asked before a thread's loop has started still
 * ends the process (docs/threads.md, "Stopping a thread").
 *
 * With --enable-debug-commands, MDC_TEST_HOLD_LOOP=NAME holds the named
 * threads just before their loop until their stop has been asked
 * (server/core/testhook.h): the test waits until the daemon says a thread
 * is held, sends SIGTERM, and the daemon must exit 0.  The ceiling is 30 s,
 * which only a hang crosses: a loop that lost its stop waits forever (the
 * metrics thread did, in epoll_wait, with the main thread joining it).
 * Each thread kind alone (network threads on both backends), then all at
 * once.  Registered only in builds with the hook (tests/include.am).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server_client.h"

#define CEILING_MS 30000 /* only a hang takes this long */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool in_ci(void)
{
    const char *e = getenv("CI");
    return e != NULL && strcmp(e, "true") == 0;
}

static unsigned count_of(const char *hay, const char *needle)
{
    unsigned n = 0;

    while ((hay = strstr(hay, needle)) != NULL) {
        n++;
        hay += strlen(needle);
    }
    return n;
}

/* Threads of pid other than its main thread that do not block SIGTERM
 * (/proc/PID/task/TID/status, SigBlk); -1 without /proc. */
static int signal_takers(pid_t pid)
{
    char path[64];
    struct dirent *e;
    DIR *d;
    int n = 0;

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    d = opendir(path);
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char line[128], st[384];
        unsigned long long blk = 0;
        FILE *f;

        if (e->d_name[0] == '.' || atol(e->d_name) == (long)pid)
            continue;
        snprintf(st, sizeof(st), "%s/%s/status", path, e->d_name);
        f = fopen(st, "r");
        if (f == NULL)
            continue; /* gone meanwhile */
        while (fgets(line, sizeof(line), f) != NULL)
            if (sscanf(line, "SigBlk: %llx", &blk) == 1)
                break;
        fclose(f);
        if (!(blk & (1ull << (SIGTERM - 1)))) {
            fprintf(stderr, "thread %s takes SIGTERM\n", e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Start with MDC_TEST_HOLD_LOOP=hold and args; once `want` threads said
 * they are held, SIGTERM: the daemon must exit 0 within the ceiling, each
 * held thread having started its loop after its stop.  1 when io_uring is
 * not available here (a build without liburing; a kernel or sandbox
 * without io_uring, never in CI): a skip.  Else 0. */
static int stop_while_held(const char *hold, unsigned want,
                           const char *const *args)
{
    static const struct tsrv_opts plain = {0};
    struct tsrv s;
    char *log = NULL;
    unsigned held = 0, i;
    int rc;

    assert_int_equal(setenv("MDC_TEST_HOLD_LOOP", hold, 1), 0);
    rc = tsrv_start_opts(&s, &plain, args); /* >0: its exit status */
    unsetenv("MDC_TEST_HOLD_LOOP");
    if (rc != 0) {
        log = tsrv_log(&s);
        if ((strstr(log, "built without liburing") != NULL ||
             strstr(log, "io_uring is not available") != NULL) &&
            (!in_ci() || strstr(log, "built without liburing") != NULL)) {
            free(log);
            tsrv_stop(&s);
            return 1;
        }
        fail_msg("not started (%d)", rc);
    }
    /* SIGTERM inside the window: while the threads are held */
    for (i = 0; i < CEILING_MS / 10 && held < want; i++) {
        free(log);
        log = tsrv_log(&s);
        held = count_of(log, "thread holds its loop until its stop");
        if (held < want)
            sleep_ms(10);
    }
    free(log);
    if (held < want) {
        tsrv_print_log(&s, "threads not held");
        fail_msg("%s: %u of %u threads held", hold, held, want);
    }
    /* only the main thread takes signals: a held thread that took the
     * SIGTERM (its handler deferred, under TSan, while it waits) would
     * keep the stop from being asked */
    assert_true(signal_takers(s.pid) <= 0);
    s.opts.timeout_ms = CEILING_MS; /* the stop's ceiling */
    rc = tsrv_kill(&s, SIGTERM);
    log = tsrv_log(&s);
    if (rc != 0)
        tsrv_print_log(&s, "a stop asked before the loop ran");
    assert_int_equal(rc, 0); /* -1: still running after 30 s, killed */
    assert_int_equal(count_of(log, "starts its loop after its stop"), want);
    free(log);
    tsrv_stop(&s);
    return 0;
}

static void test_metrics(void **state)
{
    const char *const args[] = {"-n", "1", "--metrics", "auto", NULL};

    (void)state;
    stop_while_held("metrics", 1, args);
}

static void test_net_epoll(void **state)
{
    const char *const args[] = {"-n", "2", "--io=epoll", NULL};

    (void)state;
    stop_while_held("net", 2, args);
}

static void test_net_uring(void **state)
{
    const char *const args[] = {"-n", "2", "--io=uring", "-U", "auto", NULL};

    (void)state;
    if (stop_while_held("net", 2, args))
        skip();
}

static void test_payload(void **state)
{
    const char *const args[] = {"-n", "1", "-t", "2", NULL};

    (void)state;
    stop_while_held("payload", 2, args);
}

static void test_sweeper(void **state)
{
    const char *const args[] = {"-n", "1", "--sweep-interval", "1000", NULL};

    (void)state;
    stop_while_held("sweeper", 1, args);
}

/* the dump at exit asks the held dumper for a dump: released by it */
static void test_dumper(void **state)
{
    char dir[] = "/tmp/mdc-stop-XXXXXX", file[64];
    const char *const args[] = {"-n", "1", "-f", file, NULL};

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777); /* started as root, the daemon dumps as nobody */
    snprintf(file, sizeof(file), "%s/dump", dir);
    stop_while_held("dumper", 1, args);
    assert_int_equal(access(file, F_OK), 0); /* the dump at exit was made */
    unlink(file);
    rmdir(dir);
}

/* every kind at once, on each backend */
static void test_all(void **state)
{
    static const char *const ios[] = {"--io=epoll", "--io=uring"};
    char dir[] = "/tmp/mdc-stop-XXXXXX", file[64];
    unsigned k;

    (void)state;
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0777); /* started as root, the daemon dumps as nobody */
    snprintf(file, sizeof(file), "%s/dump", dir);
    for (k = 0; k < 2; k++) {
        const char *const args[] = {"-n", "2", "-t", "1", ios[k],
                                    "--metrics", "auto", "-f", file, NULL};

        /* 2 network threads, 1 payload, metrics, dumper, sweeper */
        if (stop_while_held("metrics,net,payload,dumper,sweeper", 6, args))
            print_message("io_uring not available here: epoll only\n");
        unlink(file);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_net_epoll),
        cmocka_unit_test(test_net_uring),
        cmocka_unit_test(test_payload),
        cmocka_unit_test(test_sweeper),
        cmocka_unit_test(test_dumper),
        cmocka_unit_test(test_all),
    };

#ifndef MDC_DEBUG_COMMANDS
    printf("SKIP: needs --enable-debug-commands (MDC_TEST_HOLD_LOOP)\n");
    return 77;
#endif
    if (tsrv_external()) {
        printf("SKIP: starts its own daemons\n");
        return 77;
    }
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
