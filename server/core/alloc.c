/*
 * alloc.c - allocator shim: jemalloc when configured, libc otherwise.
 */
#include "config.h"

#include "alloc.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
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
 * -m bounds the process's resident memory (docs/architecture.md, "Memory
 * and -m"), so the allocator must not hold pages the store has let go:
 *  - no transparent huge pages on the arenas (the system's setting,
 *    madvise on Debian, so none): a 2 MiB page stays resident while one
 *    record of it lives (the overfill load peaked at 164 MiB in -m 64 with
 *    thp:always, 88 MiB without it and with the decay below), and an idle
 *    daemon held 6 MiB of them (docs/performance.md, "Idle footprint");
 *    the bucket arrays still ask for huge pages (mdc_huge_calloc);
 *  - freed pages go back to the kernel at once (dirty and muzzy decay 0)
 *    rather than after 10 s: under eviction every store frees a record,
 *    and a large one is its own extent;
 *  - small per-thread caches: a cached free region is resident and
 *    counted by nobody (tcache_max: only small classes are cached).
 * MALLOC_CONF in the environment still overrides this.
 */
const char *malloc_conf = "metadata_thp:auto,dirty_decay_ms:0,"
                          "muzzy_decay_ms:0,tcache_max:4096";
#elif defined(HAVE_MALLOC_H)
#include <malloc.h>     /* glibc: malloc_usable_size() */
#elif defined(HAVE_MALLOC_NP_H)
#include <malloc_np.h>  /* FreeBSD: malloc_usable_size() */
#endif

#define HUGE_MIN ((size_t)2 << 20)

#ifdef USE_JEMALLOC
/*
 * jemalloc places a large allocation (above its largest small class,
 * 14 KiB with 4 KiB pages) at a random cache line of an extent one page
 * longer than its size class ("cache-oblivious", not a run-time option
 * in 5.3): a resident page more per large record that no size class
 * shows (16 % of a 24 KiB record).  Asking for page alignment skips
 * it.  Both figures are read once from the allocator.
 */
static size_t small_max = 14336;
static size_t page_size = 4096;

/*
 * Records come from an arena of their own, shared by every thread, with
 * no thread cache.  With the default arena per thread (4 per CPU), a
 * record freed by an eviction on another thread left a hole in its
 * owner's slab that only the owner's own stores could fill again: on the
 * overfill load of values of 16 B-2 KiB the slabs of small classes held
 * 7 MB more than their records in -m 64 (1.1 MB with one arena); a
 * thread cache keeps freed regions resident and counted by nobody.  The
 * arena returns freed pages at once (decay 0, as the others).  0: no
 * such arena (arenas.create failed), records from the thread's arena.
 */
static int rec_mallocx_flags;

__attribute__((constructor)) static void alloc_init(void)
{
    unsigned nbins = 0;
    size_t sz = sizeof(nbins), v = 0, vs = sizeof(v);
    char name[64];
    if (mallctl("arenas.nbins", &nbins, &sz, NULL, 0) == 0 && nbins > 0) {
        snprintf(name, sizeof(name), "arenas.bin.%u.size", nbins - 1);
        if (mallctl(name, &v, &vs, NULL, 0) == 0 && v > 0)
            small_max = v;
    }
    vs = sizeof(v);
    if (mallctl("arenas.page", &v, &vs, NULL, 0) == 0 && v > 0)
        page_size = v;
    unsigned a = 0;
    sz = sizeof(a);
    if (mallctl("arenas.create", &a, &sz, NULL, 0) == 0) {
        ssize_t zero = 0;
        snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", a);
        (void)mallctl(name, NULL, NULL, &zero, sizeof(zero));
        snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", a);
        (void)mallctl(name, NULL, NULL, &zero, sizeof(zero));
        rec_mallocx_flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
    }
}

static inline int large_flags(size_t size)
{
    return size > small_max ? MALLOCX_ALIGN(page_size) : 0;
}
#endif

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
    if (alloc_fault())
        return NULL;
#ifdef USE_JEMALLOC
    if (size > small_max)
        return mallocx(size, large_flags(size));
#endif
    return malloc(size);
}
void *mdc_rec_malloc(size_t size)
{
    if (alloc_fault())
        return NULL;
#ifdef USE_JEMALLOC
    return mallocx(size == 0 ? 1 : size, rec_mallocx_flags | large_flags(size));
#else
    return malloc(size);
#endif
}

void *mdc_calloc(size_t n, size_t size)
{
    if (alloc_fault())
        return NULL;
#ifdef USE_JEMALLOC
    if (n != 0 && size <= SIZE_MAX / n && n * size > small_max)
        return mallocx(n * size, large_flags(n * size) | MALLOCX_ZERO);
#endif
    return calloc(n, size);
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
    return nallocx(req == 0 ? 1 : req, large_flags(req));
#else
    (void)req;
    return mdc_usable_size(p);
#endif
}

void mdc_free_sized(void *p, size_t req)
{
#ifdef USE_JEMALLOC
    if (p != NULL)
        sdallocx(p, req == 0 ? 1 : req,
                 large_flags(req) | MALLOCX_TCACHE_NONE);
#else
    (void)req;
    free(p);
#endif
}

size_t mdc_good_size(size_t size)
{
#ifdef USE_JEMALLOC
    return nallocx(size == 0 ? 1 : size, large_flags(size));
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

void mdc_alloc_stats(struct mdc_alloc_stats *s)
{
    memset(s, 0, sizeof(*s));
#ifdef USE_JEMALLOC
    uint64_t epoch = 1;
    size_t sz = sizeof(epoch);
    (void)mallctl("epoch", &epoch, &sz, &epoch, sz);
#define ST(name, f)                                                            \
    do {                                                                       \
        size_t v = 0, vs = sizeof(v);                                          \
        if (mallctl("stats." name, &v, &vs, NULL, 0) == 0)                     \
            s->f = v;                                                          \
    } while (0)
    ST("allocated", allocated);
    ST("active", active);
    ST("resident", resident);
    ST("mapped", mapped);
    ST("retained", retained);
    ST("metadata", metadata);
#undef ST
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
