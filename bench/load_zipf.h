/*
 * load_zipf.h - Zipf-distributed ranks for mdc-load (rejection-inversion,
 * Hörmann and Derflinger 1996): exact for any exponent s > 0, O(1) setup and
 * O(1) expected time per sample, no table of n entries.
 */
#ifndef MDC_LOAD_ZIPF_H
#define MDC_LOAD_ZIPF_H

#include <stdint.h>

struct zipf {
    double s;       /* exponent (YCSB's theta), > 0 */
    uint64_t n;     /* ranks 1..n */
    double h_x1;    /* H(1.5) - h(1) */
    double h_n;     /* H(n + 0.5) */
    double squeeze; /* the acceptance shortcut */
};

void zipf_init(struct zipf *z, uint64_t n, double s);
/* One rank in 1..n with P(k) proportional to k^-s; u01 gives uniforms in
 * [0, 1). */
uint64_t zipf_next(const struct zipf *z, double (*u01)(void *), void *rng);

/* Draw many samples and compare the head of the distribution with theory;
 * prints a table, returns 0 when every checked rank is within tolerance. */
int zipf_self_check(uint64_t n, double s, uint64_t samples);

#endif
