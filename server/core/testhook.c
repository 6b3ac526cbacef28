/*
 * testhook.c - the test-only hooks of testhook.h (--enable-debug-commands).
 */
#include "config.h"

#include "testhook.h"

#ifdef MDC_DEBUG_COMMANDS

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOLD_MAX_S 60 /* a hook never blocks a thread for good */
#define KINDS 8

static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hook_cv;
static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
static const char *asked[KINDS]; /* kinds whose stop was asked */

static void hook_init(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hook_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* name is one of MDC_TEST_HOLD_LOOP's comma-separated words */
static bool hook_named(const char *name)
{
    const char *e = getenv("MDC_TEST_HOLD_LOOP"), *p;
    size_t n = strlen(name);

    for (p = e; p != NULL && *p != '\0'; p += strcspn(p, ",")) {
        p += *p == ',';
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

static bool hook_asked(const char *name)
{
    unsigned i;

    for (i = 0; i < KINDS && asked[i] != NULL; i++)
        if (strcmp(asked[i], name) == 0)
            return true;
    return false;
}

void testhook_hold_loop(const char *name)
{
    struct timespec until;
    bool held = false;

    if (!hook_named(name))
        return;
    pthread_once(&hook_once, hook_init);
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += HOLD_MAX_S;
    pthread_mutex_lock(&hook_mu);
    while (!hook_asked(name)) {
        if (!held)
            fprintf(stderr, "test hook: %s thread holds its loop until "
                            "its stop is asked\n", name);
        held = true;
        if (pthread_cond_timedwait(&hook_cv, &hook_mu, &until) != 0 &&
            !hook_asked(name)) {
            fprintf(stderr, "test hook: %s thread: no stop in %d s\n", name,
                    HOLD_MAX_S);
            break;
        }
    }
    pthread_mutex_unlock(&hook_mu);
    fprintf(stderr, "test hook: %s thread starts its loop%s\n", name,
            held ? " after its stop was asked" : ", stop already asked");
}

void testhook_stop_asked(const char *name)
{
    unsigned i;

    pthread_once(&hook_once, hook_init);
    pthread_mutex_lock(&hook_mu);
    for (i = 0; i < KINDS && asked[i] != NULL; i++)
        if (strcmp(asked[i], name) == 0)
            break;
    if (i < KINDS && asked[i] == NULL)
        asked[i] = name; /* a string literal of the caller */
    pthread_cond_broadcast(&hook_cv);
    pthread_mutex_unlock(&hook_mu);
}

static __thread bool tick_armed; /* this thread's next tick holds */

int testhook_tick_gate_arm(void)
{
    const char *gate = getenv("MDC_TEST_TICK_GATE");

    if (gate == NULL || gate[0] == '\0')
        return -1;
    tick_armed = true;
    return 0;
}

void testhook_fifo_hold(const char *env, const char *what)
{
    const char *gate = getenv(env);
    struct pollfd p;
    char buf[64];
    ssize_t n;
    int fd;

    if (gate == NULL || gate[0] == '\0')
        return;
    /* opened without waiting for a writer: the writer's own open
     * (O_NONBLOCK) succeeds only from now on, which tells the test that
     * the hold has begun (a blocking writer's open returns then) */
    fd = open(gate, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    fprintf(stderr, "test hook: %s holds until %s is closed\n", what, gate);
    p.fd = fd;
    p.events = POLLIN;
    /* a FIFO no writer has opened yet polls as nothing (no POLLHUP);
     * once one has, its close reads as the end */
    for (;;) {
        if (poll(&p, 1, HOLD_MAX_S * 1000) <= 0) {
            fprintf(stderr, "test hook: the gate of %s stayed open %d s\n",
                    what, HOLD_MAX_S);
            break;
        }
        n = read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
    }
    close(fd);
    fprintf(stderr, "test hook: %s goes on\n", what);
}

void testhook_tick_gate(void)
{
    if (!tick_armed)
        return;
    tick_armed = false;
    testhook_fifo_hold("MDC_TEST_TICK_GATE", "a tick");
}

#else
typedef int mdc_testhook_unused; /* ISO C wants a declaration */
#endif
