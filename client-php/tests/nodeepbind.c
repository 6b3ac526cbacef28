/*
 * nodeepbind.c - preloaded by run-phpt.sh in the ASan build only: PHP
 * loads extensions with dlopen(RTLD_DEEPBIND), which the sanitizer runtime
 * refuses; this dlopen() drops the flag and hands over to the next one
 * (ASan's interceptor, then libc's).  PHP itself drops the flag when it is
 * built with ASan.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

void *dlopen(const char *file, int mode)
{
    static void *(*next)(const char *, int);
    if (next == NULL)
        next = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return next(file, mode & ~RTLD_DEEPBIND);
}
