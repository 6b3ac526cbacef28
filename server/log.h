/*
 * log.h - levelled logging for the daemon: one line per write(2) to stderr
 * or to a log file that SIGHUP reopens (log_reopen()).  Safe from any
 * thread without a lock: a line is one write() and the file descriptor is
 * swapped with dup2(), which is atomic.
 */
#ifndef MDC_LOG_H
#define MDC_LOG_H

#include <stdarg.h>

enum log_level {
    LOG_LVL_ERROR = 0,
    LOG_LVL_WARN = 1,
    LOG_LVL_INFO = 2,
    LOG_LVL_DEBUG = 3,
    LOG_LVL_TRACE = 4,
};

/* Send lines to path (NULL: stderr), opened for appending without
 * following a link; 0 ok, -1 with errno on failure. */
int log_setup(const char *path, int level);
void log_teardown(void);
/* What log_setup()'s or log_reopen()'s errno e means: a link at the log
 * file's path is refused (server/core/newfile.h). */
const char *log_open_strerror(int e);
/* Reopen the log file (after rotation); no-op on stderr. */
int log_reopen(void);
void log_set_level(int level);
int log_get_level(void);

void log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void log_vwrite(int level, const char *fmt, va_list ap);

extern int log_level_cur;

/* read without a lock from every thread; set by -v and text 'verbosity' */
#define log_enabled(lvl) ((lvl) <= __atomic_load_n(&log_level_cur, __ATOMIC_RELAXED))
#define log_error(...) log_write(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)                                                          \
    do {                                                                       \
        if (log_enabled(LOG_LVL_WARN))                                         \
            log_write(LOG_LVL_WARN, __VA_ARGS__);                              \
    } while (0)
#define log_info(...)                                                          \
    do {                                                                       \
        if (log_enabled(LOG_LVL_INFO))                                         \
            log_write(LOG_LVL_INFO, __VA_ARGS__);                              \
    } while (0)
#define log_debug(...)                                                         \
    do {                                                                       \
        if (log_enabled(LOG_LVL_DEBUG))                                        \
            log_write(LOG_LVL_DEBUG, __VA_ARGS__);                             \
    } while (0)

#endif
