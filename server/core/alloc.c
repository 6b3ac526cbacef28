/*
 * alloc.c - allocator shim: jemalloc when configured, libc otherwise.
 */
#include "config.h"

#include "alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * A sanitizer's runtime (the libFuzzer targets: -fsanitize=fuzzer,address)
 * replaces malloc, free and malloc_usable_size for the whole process, also
 * when jemalloc is linked: jemalloc's own entry points (nallocx, sdallocx,
 * mallctl) would then size and free memory jemalloc never handed out (a
 * record's size from its header differs from its allocation, store_check
 * fails; sdallocx frees a foreign pointer).  Such objects use the libc
 * interface only, as the sanitizer builds do.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MDC_MALLOC_REPLACED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define MDC_MALLOC_REPLACED 1
#endif
#endif
#if defined(HAVE_JEMALLOC) && !defined(MDC_MALLOC_REPLACED)
#define USE_JEMALLOC 1
#endif

#ifdef USE_JEMALLOC
#include <jemalloc/jemalloc.h>
/*
 * Transparent huge pages are not asked for on jemalloc's arenas
 * ("thp:default": the system's setting, madvise on Debian, so none): with
 * "thp:always" every 2 MiB region an allocation touched became resident
 * whole, and an idle daemon held 6 MiB of them (14 MiB of RSS against
 * memcached's 4.7: docs/performance.md, "Idle footprint"), and the huge
 * pages' slack hid what idle connections cost.  The bucket array, which
 * every lookup reads at random, still asks for them (mdc_huge_calloc).
 * MALLOC_CONF in the environment still overrides this.
 */
const char *malloc_conf = "thp:default,metadata_thp:auto";
#elif defined(HAVE_MALLOC_H)
#include <malloc.h>     /* glibc: malloc_usable_size() */
#elif defined(HAVE_MALLOC_NP_H)
#include <malloc_np.h>  /* FreeBSD: malloc_usable_size() */
#endif

#define HUGE_MIN ((size_t)2 << 20)

/*
 * Allocation-failure injection (mdc_alloc_fault_set(), alloc.h).  Off
 * unless a test arms it: one relaxed load and a predictable branch per
 * allocation.  The generator is a shared splitmix64 step, advanced with
 * one atomic add, so concurrent threads draw distinct numbers.
 */
static atomic_uint_fast32_t alloc_fault_one_in;
static atomic_uint_fast64_t alloc_fault_state;
static atomic_uint_fast64_t alloc_fault_count;

void mdc_alloc_fault_set(uint32_t one_in, uint64_t seed)
{
    atomic_store(&alloc_fault_state, seed);
    atomic_store(&alloc_fault_one_in, one_in);
}

uint64_t mdc_alloc_faults(void)
{
    return atomic_load(&alloc_fault_count);
}

static bool alloc_fault(void)
{
    uint_fast32_t n = atomic_load_explicit(&alloc_fault_one_in,
                                           memory_order_relaxed);
    uint64_t z;

    if (__builtin_expect(n == 0, 1))
        return false;
    z = atomic_fetch_add_explicit(&alloc_fault_state, 0x9E3779B97F4A7C15ull,
                                  memory_order_relaxed) +
        0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    if (z % n != 0)
        return false;
    atomic_fetch_add_explicit(&alloc_fault_count, 1, memory_order_relaxed);
    return true;
}

void *mdc_huge_calloc(size_t size)
{
    if (alloc_fault())
        return NULL;
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

void *mdc_malloc(size_t size)
{
    return alloc_fault() ? NULL : malloc(size);
}
void *mdc_calloc(size_t n, size_t size)
{
    return alloc_fault() ? NULL : calloc(n, size);
}
void *mdc_realloc(void *p, size_t size)
{
    return alloc_fault() ? NULL : realloc(p, size);
}
void *mdc_calloc_aligned(size_t align, size_t size)
{
    void *p = NULL;
    if (alloc_fault() || posix_memalign(&p, align, size) != 0)
        return NULL;
    memset(p, 0, size);
    return p;
}
void mdc_free(void *p) { free(p); }

char *mdc_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = alloc_fault() ? NULL : malloc(n);
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

size_t mdc_alloc_size(const void *p, size_t req)
{
#ifdef USE_JEMALLOC
    (void)p;
    return nallocx(req == 0 ? 1 : req, 0);
#else
    (void)req;
    return mdc_usable_size(p);
#endif
}

void mdc_free_sized(void *p, size_t req)
{
#ifdef USE_JEMALLOC
    if (p != NULL)
        sdallocx(p, req == 0 ? 1 : req, 0);
#else
    (void)req;
    free(p);
#endif
}

size_t mdc_good_size(size_t size)
{
#ifdef USE_JEMALLOC
    return nallocx(size == 0 ? 1 : size, 0);
#else
    return size;
#endif
}

uint64_t mdc_thread_allocated(void)
{
#ifdef USE_JEMALLOC
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
#ifdef USE_JEMALLOC
    return 1;
#else
    return 0;
#endif
}

const char *mdc_allocator_name(void)
{
#ifdef USE_JEMALLOC
    return "jemalloc";
#else
    return "libc";
#endif
}
