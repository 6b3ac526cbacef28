/*
 * alloc.h - the one place that knows the allocator (jemalloc in normal
 * builds, libc malloc in sanitizer builds), so accounting can use exact
 * usable sizes and the zero-allocation GET test can read jemalloc's
 * per-thread counter.
 */
#ifndef MDC_ALLOC_H
#define MDC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *mdc_malloc(size_t size);
/* A record's memory (the store's only): from the records' own arena, in
 * finer size classes than the allocator's up to 64 KiB (alloc.c says
 * why); freed with mdc_free_sized(), sized by mdc_alloc_size() and
 * mdc_good_size(), which are for records only. */
void *mdc_rec_malloc(size_t size);
/* What the allocator really reserved for the record p = mdc_rec_malloc(req),
 * looked up from p (mdc_alloc_size() computes it from req): 0 when p is not
 * where req's class puts it. */
size_t mdc_rec_usable_size(const void *p, size_t req);
/* Resident bytes the records' allocator holds beyond the records' own
 * sizes (parts of pages of freed regions), which -m must cover too. */
size_t mdc_rec_overhead(void);
void *mdc_calloc(size_t n, size_t size);
void *mdc_realloc(void *p, size_t size);
/* Zeroed, aligned to 'align' (a power of two, a multiple of the pointer
 * size): structures whose members are laid out on cache lines. */
void *mdc_calloc_aligned(size_t align, size_t size);
void mdc_free(void *p);
char *mdc_strdup(const char *s);
/* Bytes the allocator really reserved for p (>= requested size). */
size_t mdc_usable_size(const void *p);
/* mdc_rec_usable_size(p, req) of p = mdc_rec_malloc(req), computed from req
 * where the allocator allows (jemalloc: nallocx, no lookup of p); and free
 * p knowing its requested size (jemalloc: sdallocx, which skips the lookup
 * too). */
size_t mdc_alloc_size(const void *p, size_t req);
void mdc_free_sized(void *p, size_t req);
/* What mdc_rec_malloc(size) will really reserve. */
size_t mdc_good_size(size_t size);
/* Large zeroed arrays (bucket arrays): page-aligned, backed by transparent
 * huge pages where the kernel allows, so random lookups miss the TLB less. */
void *mdc_huge_calloc(size_t size);
void mdc_huge_free(void *p, size_t size);
/* Bytes allocated so far by the calling thread; 0 when unsupported. */
uint64_t mdc_thread_allocated(void);
/* 1 when mdc_thread_allocated() is meaningful (jemalloc build). */
int mdc_alloc_counts_threads(void);
const char *mdc_allocator_name(void);

/* The allocator's own figures, in bytes (jemalloc's stats.*: allocated,
 * active pages, resident pages, mapped, retained, metadata), refreshed
 * when read; all 0 where the allocator has none (libc). */
struct mdc_alloc_stats {
    uint64_t allocated, active, resident, mapped, retained, metadata;
    /* the record slabs: bytes held, handed out, mdc_rec_overhead() */
    uint64_t slab_bytes, slab_used, slab_waste;
};
void mdc_alloc_stats(struct mdc_alloc_stats *s);

/*
 * Tests only (tests/test_fault_alloc.c): from now on make about one
 * allocation in one_in fail (return NULL), at points drawn from seed;
 * 0 turns it off (the default; nothing in the daemon arms it).
 * mdc_alloc_faults() counts the failures injected so far.
 */
void mdc_alloc_fault_set(uint32_t one_in, uint64_t seed);
uint64_t mdc_alloc_faults(void);

#endif
