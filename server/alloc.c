/*
 * alloc.c - allocator shim: jemalloc when configured, libc otherwise.
 */
#include "config.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

void *mdc_malloc(size_t size) { return malloc(size); }
void *mdc_calloc(size_t n, size_t size) { return calloc(n, size); }
void *mdc_realloc(void *p, size_t size) { return realloc(p, size); }
void mdc_free(void *p) { free(p); }

char *mdc_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

size_t mdc_usable_size(const void *p)
{
    if (p == NULL)
        return 0;
    return malloc_usable_size((void *)p);
}

size_t mdc_good_size(size_t size)
{
#ifdef HAVE_JEMALLOC
    return nallocx(size == 0 ? 1 : size, 0);
#else
    return size;
#endif
}

uint64_t mdc_thread_allocated(void)
{
#ifdef HAVE_JEMALLOC
    uint64_t v = 0;
    size_t sz = sizeof(v);
    if (mallctl("thread.allocated", &v, &sz, NULL, 0) != 0)
        return 0;
    return v;
#else
    return 0;
#endif
}

int mdc_alloc_counts_threads(void)
{
#ifdef HAVE_JEMALLOC
    return 1;
#else
    return 0;
#endif
}

const char *mdc_allocator_name(void)
{
#ifdef HAVE_JEMALLOC
    return "jemalloc";
#else
    return "libc";
#endif
}
