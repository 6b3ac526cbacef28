/*
 * log.c - levelled log lines with a timestamp, written with one write(2)
 * each so that lines from different threads never interleave.
 */
#include "config.h"

#include "log.h"

#include "server/core/newfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Set before any thread starts; read-only afterwards. */
int log_level_cur = LOG_LVL_INFO;
static int log_fd = STDERR_FILENO;
static char log_path[4096];

static const char *const log_names[] = {"error", "warn", "info", "debug",
                                        "trace"};

/* as root at start (and on SIGHUP): never through a link (newfile.h) */
static int log_open(const char *path)
{
    return newfile_open_append(path, 0640);
}

const char *log_open_strerror(int e)
{
    return newfile_append_strerror(e);
}

int log_setup(const char *path, int level)
{
    int fd;

    __atomic_store_n(&log_level_cur, level, __ATOMIC_RELAXED);
    if (path == NULL || path[0] == '\0')
        return 0;
    if (strlen(path) >= sizeof(log_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = log_open(path);
    if (fd < 0)
        return -1;
    memcpy(log_path, path, strlen(path) + 1);
    log_fd = fd;
    return 0;
}

void log_teardown(void)
{
    if (log_fd != STDERR_FILENO) {
        close(log_fd);
        log_fd = STDERR_FILENO;
    }
    log_path[0] = '\0';
}

int log_reopen(void)
{
    int fd;

    if (log_path[0] == '\0')
        return 0;
    fd = log_open(log_path);
    if (fd < 0)
        return -1;
    /* dup2 replaces the descriptor atomically for concurrent writers. */
    if (dup2(fd, log_fd) < 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

void log_set_level(int level)
{
    __atomic_store_n(&log_level_cur, level, __ATOMIC_RELAXED);
}
int log_get_level(void)
{
    return __atomic_load_n(&log_level_cur, __ATOMIC_RELAXED);
}

void log_vwrite(int level, const char *fmt, va_list ap)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    size_t n;
    int k;

    if (level > log_get_level())
        return;
    if (level < 0)
        level = 0;
    if (level > LOG_LVL_TRACE)
        level = LOG_LVL_TRACE;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tm);
    k = snprintf(line + n, sizeof(line) - n, ".%03ld mdcached[%ld] %s: ",
                 ts.tv_nsec / 1000000, (long)getpid(), log_names[level]);
    if (k > 0)
        n += (size_t)k;
    if (n < sizeof(line)) {
        k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        if (k > 0)
            n += (size_t)k;
    }
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    /* One write per line; a short write to a log is not worth a retry loop. */
    if (write(log_fd, line, n) < 0)
        (void)0;
}

void log_write(int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vwrite(level, fmt, ap);
    va_end(ap);
}
