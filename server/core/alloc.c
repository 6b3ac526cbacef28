/*
 * alloc.c - allocator shim: jemalloc when configured, libc otherwise.
 */
#include "config.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
/*
 * Records are small and looked up at random over gigabytes: with 4 KiB
 * pages nearly every lookup misses the TLB (and in a VM pays a two-level
 * walk).  Let jemalloc ask for transparent huge pages on its arenas.
 * MALLOC_CONF in the environment still overrides this.
 */
const char *malloc_conf = "thp:always,metadata_thp:auto";
#elif defined(HAVE_MALLOC_H)
#include <malloc.h>     /* glibc: malloc_usable_size() */
#elif defined(HAVE_MALLOC_NP_H)
#include <malloc_np.h>  /* FreeBSD: malloc_usable_size() */
#endif

#define HUGE_MIN ((size_t)2 << 20)

void *mdc_huge_calloc(size_t size)
{
    if (size < HUGE_MIN)
        return calloc(1, size);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

void mdc_huge_free(void *p, size_t size)
{
    if (p == NULL)
        return;
    if (size < HUGE_MIN)
        free(p);
    else
        munmap(p, size);
}

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
