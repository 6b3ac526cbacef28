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
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

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
/* The record slabs (below): with jemalloc, and in the ThreadSanitizer
 * build on libc's malloc so that their locking is checked; not under
 * AddressSanitizer, which finds overruns between allocations only. */
#if defined(__SANITIZE_THREAD__)
#define MDC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MDC_TSAN 1
#endif
#endif
#if defined(USE_JEMALLOC) || defined(MDC_TSAN)
#define USE_RSLAB 1
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

#ifdef USE_RSLAB
/*
 * Record slabs: size classes of mdcached's own for every record up to
 * 64 KiB.  jemalloc has four classes per doubling, up to 25 % apart: a
 * 16-byte key with a 1 KiB value asks 1 088 B and takes 1 280, one with a
 * 16 KiB value asks 16 448 and takes 20 480 (five pages), where memcached's
 * classes (factor 1.25) happened to hold them in 1 184 and about 17 600 B
 * (docs/architecture.md, "Record layout", has the measurements).  Here
 * classes are 16 B apart from 48 B up to 256 B (as jemalloc's to 128),
 * then eight per doubling (at most 12.5 % apart) up to 4 KiB, sixteen
 * (6.25 %) up to 8 KiB and 32 (3.1 %) up to 64 KiB, where a free region
 * gives its pages back (below) and more classes cost little.  Fewer classes
 * below 4 KiB: every class keeps its own free regions there, which stay
 * resident.  The smallest records come here too, although jemalloc's
 * classes fit them, because a record allocated and freed here costs fewer
 * instructions than in jemalloc's arena without a thread cache (W1: 2 248
 * per request against 2 307, bench/instr.sh).

 * A slab is a power of two of at least 16 regions and at most 768 (32 KiB
 * to 1 MiB),
 * aligned to its size, so a free finds it from the pointer and the class
 * (from the size the record asked for, as sdallocx does); it comes from
 * the records' arena (jemalloc) and goes back to it when its last region is
 * freed, whose pages jemalloc returns at once.  Free regions are a bitmap
 * in the slab's header, the lowest first, so a slab's untouched tail is
 * never resident and nothing is written into a free region: one larger
 * than a page gives its whole pages back to the kernel when freed
 * (MADV_DONTNEED), with a page it shares with a free neighbour, as jemalloc
 * did for records above 14 KiB, each its own extent: eviction frees real
 * memory.
 * One lock per class, as jemalloc's bins without a thread cache.
 */
#define RS_MIN ((size_t)32)       /* requests above this use the slabs */
#define RS_MAX ((size_t)64 << 10) /* up to this */
#define RS_MAP 12                 /* bitmap words: up to 768 regions */
#define RS_HDR 128                /* sizeof(struct rslab), 16-aligned */
#define RS_PURGE_MIN 4097         /* regions that give pages back on free */
#define RS_MAGIC 0x72736c62u
#define RS_NCLASS 158

struct rslab {
    struct rslab *next, *prev; /* the class's list of slabs with room */
    uint16_t used;             /* regions handed out */
    uint16_t hw;               /* regions below this have been handed out */
    uint32_t cls, magic;
    uint32_t waste;            /* rs_waste's part from this slab */
    uint64_t map[RS_MAP];      /* 1: the region is free */
};

struct rs_class {
    pthread_mutex_t mu;
    struct rslab *head, *tail; /* slabs with room, new ones first */
    uint32_t size, nregs;
    size_t slab;               /* bytes and alignment, a power of two */
    size_t nslabs, used;       /* slabs held, regions handed out */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct rslab) == RS_HDR, "slab header size");

static struct rs_class rs_cls[RS_NCLASS];
static uint8_t rs_idx[RS_MAX / 16 + 1]; /* (req + 15) / 16 -> class */
static size_t rs_max;                   /* RS_MAX once set up, else 0 */
static uintptr_t rs_page = 4096;
/*
 * Resident bytes of free regions that nobody is charged for, in the
 * classes that give pages back (rs_free): the part of a page a free
 * region shares with a live neighbour (or the slab's header).  The store
 * adds this to its records' bytes against -m (mem_reserve), so eviction
 * makes room for it: on the overfill load (values 16 B-64 KiB, -m 64)
 * some 2 000 free regions of 4-64 KiB kept 4 MiB of such page ends
 * resident beyond -m, and the peak RSS went past 1.15 x -m + 8 MiB on
 * io_uring.  A page shared by two free regions is given back (rs_free),
 * so counts for neither; regions at or above the slab's hw were never
 * handed out and count for nothing.  Updated under the class's lock.
 */
static _Atomic int64_t rs_waste;

static inline bool rs_is_free(const struct rslab *s, size_t i)
{
    return (s->map[i / 64] >> (i % 64) & 1) != 0;
}

/* Bytes of region i of class k in the page it shares with region i - 1
 * (or the header), and with region i + 1: 0 at a page boundary. */
static inline uint32_t rs_head_part(const struct rs_class *k, size_t i)
{
    uintptr_t lo = RS_HDR + i * k->size;
    return (uint32_t)(((lo + rs_page - 1) & ~(rs_page - 1)) - lo);
}
static inline uint32_t rs_tail_part(const struct rs_class *k, size_t i)
{
    uintptr_t hi = RS_HDR + (i + 1) * k->size;
    return (uint32_t)(hi & (rs_page - 1));
}

static inline void rs_waste_add(struct rslab *s, int64_t x)
{
    s->waste = (uint32_t)((int64_t)s->waste + x);
    atomic_fetch_add_explicit(&rs_waste, x, memory_order_relaxed);
}

/* Region i of slab s (class k) is handed out (called before s->hw moves):
 * what it leaves uncounted, and the shared pages it makes resident again
 * under a free neighbour. */
static void rs_waste_alloc(struct rs_class *k, struct rslab *s, size_t i)
{
    bool reused = i < s->hw;
    if (rs_head_part(k, i) != 0) {
        if (i > 0 && rs_is_free(s, i - 1)) /* a page given back */
            rs_waste_add(s, rs_tail_part(k, i - 1));
        else if (reused)
            rs_waste_add(s, -(int64_t)rs_head_part(k, i));
    }
    if (rs_tail_part(k, i) != 0 && i + 1 < k->nregs) {
        if (rs_is_free(s, i + 1)) {
            if (i + 1 < s->hw)
                rs_waste_add(s, rs_head_part(k, i + 1));
        } else if (reused) {
            rs_waste_add(s, -(int64_t)rs_tail_part(k, i));
        }
    }
}

/* Region i is freed (called before its bit is set): the mirror. */
static void rs_waste_free(struct rs_class *k, struct rslab *s, size_t i)
{
    if (rs_head_part(k, i) != 0) {
        if (i > 0 && rs_is_free(s, i - 1))
            rs_waste_add(s, -(int64_t)rs_tail_part(k, i - 1));
        else
            rs_waste_add(s, rs_head_part(k, i));
    }
    if (rs_tail_part(k, i) != 0 && i + 1 < k->nregs) {
        if (rs_is_free(s, i + 1)) {
            if (i + 1 < s->hw)
                rs_waste_add(s, -(int64_t)rs_head_part(k, i + 1));
        } else {
            rs_waste_add(s, rs_tail_part(k, i));
        }
    }
}

__attribute__((constructor)) static void rslab_init(void)
{
    unsigned n = 0;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg > 0)
        rs_page = (uintptr_t)pg;
    for (unsigned lg = 5; ((size_t)1 << lg) < RS_MAX; lg++) {
        size_t base = (size_t)1 << lg;
        size_t step = base >> (lg >= 13 ? 5 : lg >= 12 ? 4 : 3);
        if (step < 16)
            step = 16;
        for (size_t c = base + step; c <= 2 * base; c += step) {
            if (n == RS_NCLASS)
                return; /* not set up: jemalloc's classes */
            struct rs_class *k = &rs_cls[n];
            size_t slab = (size_t)64 << 10;
            while (slab < 16 * c)
                slab <<= 1;
            /* the smallest classes: a smaller slab rather than an unused
             * tail after the bitmap's last region (its last page partly
             * used: 8 % more per 96-byte record with 512 in 64 KiB) */
            while ((slab - RS_HDR) / c > 64 * RS_MAP)
                slab >>= 1;
            pthread_mutex_init(&k->mu, NULL);
            k->size = (uint32_t)c;
            k->slab = slab;
            k->nregs = (uint32_t)((slab - RS_HDR) / c);
            n++;
        }
    }
    if (n != RS_NCLASS)
        return;
    for (size_t i = RS_MIN / 16 + 1, k = 0; i <= RS_MAX / 16; i++) {
        while (rs_cls[k].size < i * 16)
            k++;
        rs_idx[i] = (uint8_t)k;
    }
    rs_max = RS_MAX;
}

static inline bool rs_owns(size_t req)
{
    return req > RS_MIN && req <= rs_max;
}
static inline struct rs_class *rs_class_of(size_t req)
{
    return &rs_cls[rs_idx[(req + 15) >> 4]];
}

static struct rslab *rs_slab_new(struct rs_class *k)
{
#ifdef USE_JEMALLOC
    struct rslab *s = mallocx(k->slab, MALLOCX_ALIGN(k->slab) |
                                           rec_mallocx_flags);
#else
    void *v = NULL;
    struct rslab *s = posix_memalign(&v, k->slab, k->slab) == 0 ? v : NULL;
#endif
    if (s == NULL)
        return NULL;
    memset(s, 0, sizeof(*s));
    for (uint32_t i = 0; i < k->nregs; i += 64) {
        uint32_t left = k->nregs - i;
        s->map[i / 64] = left >= 64 ? ~(uint64_t)0
                                    : ((uint64_t)1 << left) - 1;
    }
    s->cls = (uint32_t)(k - rs_cls);
    s->magic = RS_MAGIC;
    return s;
}

static void rs_slab_free(struct rs_class *k, struct rslab *s)
{
    s->magic = 0;
#ifdef USE_JEMALLOC
    sdallocx(s, k->slab, MALLOCX_ALIGN(k->slab) | MALLOCX_TCACHE_NONE);
#else
    (void)k;
    free(s);
#endif
}

static void rs_unlink(struct rs_class *k, struct rslab *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        k->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        k->tail = s->prev;
    s->next = s->prev = NULL;
}

static void *rs_alloc(struct rs_class *k)
{
    struct rslab *s;
    unsigned w = 0;

    pthread_mutex_lock(&k->mu);
    s = k->head;
    if (__builtin_expect(s == NULL, 0)) {
        pthread_mutex_unlock(&k->mu);
        s = rs_slab_new(k); /* outside the lock: it may take a page fault */
        if (s == NULL)
            return NULL;
        pthread_mutex_lock(&k->mu);
        s->next = k->head;
        if (k->head)
            k->head->prev = s;
        else
            k->tail = s;
        k->head = s;
        k->nslabs++;
    }
    k->used++;
    while (s->map[w] == 0) /* a slab on the list has a free region */
        w++;
    unsigned b = (unsigned)__builtin_ctzll(s->map[w]);
    s->map[w] &= s->map[w] - 1;
    char *p = (char *)s + RS_HDR + (size_t)(w * 64 + b) * k->size;
    if (k->size >= RS_PURGE_MIN) {
        rs_waste_alloc(k, s, w * 64 + b);
        if (w * 64 + b >= s->hw)
            s->hw = (uint16_t)(w * 64 + b + 1);
    }
    if (++s->used == k->nregs)
        rs_unlink(k, s); /* full: off the list until a region is freed */
    pthread_mutex_unlock(&k->mu);
    return p;
}


static void rs_free(struct rs_class *k, void *p)
{
    struct rslab *s =
        (struct rslab *)((uintptr_t)p & ~(uintptr_t)(k->slab - 1));
    size_t i = (size_t)((char *)p - (char *)s - RS_HDR) / k->size;
    uintptr_t lo = (uintptr_t)p, hi = lo + k->size;
    uintptr_t a = (lo + rs_page - 1) & ~(rs_page - 1), e = hi & ~(rs_page - 1);
    bool purge = k->size >= RS_PURGE_MIN;

    /* the region's whole pages, while it is still ours */
    if (purge && e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
    pthread_mutex_lock(&k->mu);
    if (s->used == k->nregs) { /* was full: back on the list, last */
        s->prev = k->tail;
        if (k->tail)
            k->tail->next = s;
        else
            k->head = s;
        k->tail = s;
    }
    k->used--;
    if (--s->used == 0) {
        rs_unlink(k, s);
        k->nslabs--;
        atomic_fetch_sub_explicit(&rs_waste, s->waste, memory_order_relaxed);
        pthread_mutex_unlock(&k->mu);
        rs_slab_free(k, s);
        return;
    }
    if (purge)
        rs_waste_free(k, s, i);
    s->map[i / 64] |= (uint64_t)1 << (i % 64);
    if (purge) {
        /* a page shared with a neighbour goes too when that one is free
         * (under the lock: it cannot be handed out meanwhile); regions are
         * larger than a page, so a page has at most one neighbour */
        if (a > lo && a - rs_page > (uintptr_t)s && i > 0 &&
            rs_is_free(s, i - 1)) /* not the header's page */
            (void)madvise((void *)(a - rs_page), rs_page, MADV_DONTNEED);
        if (hi > e && (i + 1 == k->nregs || rs_is_free(s, i + 1)))
            (void)madvise((void *)e, rs_page, MADV_DONTNEED);
    }
    pthread_mutex_unlock(&k->mu);
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
#ifdef USE_RSLAB
    if (rs_owns(size))
        return rs_alloc(rs_class_of(size));
#endif
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

size_t mdc_rec_overhead(void)
{
#ifdef USE_RSLAB
    int64_t w = atomic_load_explicit(&rs_waste, memory_order_relaxed);
    return w > 0 ? (size_t)w : 0;
#else
    return 0;
#endif
}

size_t mdc_rec_usable_size(const void *p, size_t req)
{
#ifdef USE_RSLAB
    if (rs_owns(req)) {
        const struct rs_class *k = rs_class_of(req);
        const struct rslab *s = (const struct rslab *)(
            (uintptr_t)p & ~(uintptr_t)(k->slab - 1));
        /* the slab's own class: a header that disagrees says 0 */
        if (p == NULL || s->magic != RS_MAGIC || s->cls >= RS_NCLASS)
            return 0;
        return rs_cls[s->cls].size;
    }
#endif
    (void)req;
    return mdc_usable_size(p);
}

size_t mdc_alloc_size(const void *p, size_t req)
{
#ifdef USE_RSLAB
    if (rs_owns(req))
        return rs_class_of(req)->size;
#endif
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
#ifdef USE_RSLAB
    if (rs_owns(req)) {
        if (p != NULL)
            rs_free(rs_class_of(req), p);
        return;
    }
#endif
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
#ifdef USE_RSLAB
    if (rs_owns(size))
        return rs_class_of(size)->size;
#endif
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
#ifdef USE_RSLAB
    for (unsigned i = 0; rs_max != 0 && i < RS_NCLASS; i++) {
        struct rs_class *k = &rs_cls[i];
        pthread_mutex_lock(&k->mu);
        s->slab_bytes += k->nslabs * k->slab;
        s->slab_used += k->used * k->size;
        s->slab_waste = (uint64_t)atomic_load(&rs_waste);
        pthread_mutex_unlock(&k->mu);
    }
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
