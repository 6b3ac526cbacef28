/*
 * ketama.h - consistent hashing compatible with libmemcached's
 * MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED mode (php-memcached's
 * OPT_LIBKETAMA_COMPATIBLE): weighted ketama over MD5.  Internal.
 */
#ifndef MDC_KETAMA_H
#define MDC_KETAMA_H

#include <stddef.h>
#include <stdint.h>

struct mdci_point {
    uint32_t value; /* position on the circle */
    uint32_t index; /* server index */
};

struct mdci_continuum {
    struct mdci_point *points;
    size_t n;
};

/* Build the circle for servers names[i] with weights[i] (0 counts as 1).
 * Replaces c's points; returns 0, or -1 when out of memory. */
int mdci_ketama_build(struct mdci_continuum *c, const char *const *names,
                      const uint32_t *weights, size_t nservers);
void mdci_ketama_free(struct mdci_continuum *c);
/* The key's position: the first 4 bytes of its MD5, little-endian. */
uint32_t mdci_ketama_hash(const void *key, size_t klen);
/* The server owning a position (first point >= hash, wrapping). */
uint32_t mdci_ketama_find(const struct mdci_continuum *c, uint32_t hash);

#endif
