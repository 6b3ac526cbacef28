/*
 * load_zipf.c - Zipf sampling by rejection-inversion, and its self-check.
 *
 * h(x) = x^-s is the (unnormalised) density; H is an antiderivative of it.
 * A uniform u between H(n + 1/2) and H(3/2) - 1 is inverted to x = H^-1(u)
 * and rounded to k; k is accepted when u falls under the step for k, which
 * the squeeze decides without evaluating H most of the time.  The helpers
 * keep (e^t - 1)/t and log(1 + t)/t accurate near t = 0, so s = 1 works.
 */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "load_zipf.h"

static double expm1_over_x(double x)
{
    return fabs(x) > 1e-8 ? expm1(x) / x : 1.0 + x * 0.5 * (1.0 + x / 3.0);
}

static double log1p_over_x(double x)
{
    return fabs(x) > 1e-8 ? log1p(x) / x : 1.0 - x * (0.5 - x / 3.0);
}

static double h(const struct zipf *z, double x)
{
    return exp(-z->s * log(x));
}

/* H(x) = (x^(1-s) - 1) / (1 - s), or log x when s = 1. */
static double big_h(const struct zipf *z, double x)
{
    double lx = log(x);
    return expm1_over_x((1.0 - z->s) * lx) * lx;
}

static double big_h_inv(const struct zipf *z, double y)
{
    double t = y * (1.0 - z->s);
    if (t < -1.0)
        t = -1.0; /* only reachable through rounding at the far end */
    return exp(log1p_over_x(t) * y);
}

void zipf_init(struct zipf *z, uint64_t n, double s)
{
    z->s = s;
    z->n = n;
    z->h_x1 = big_h(z, 1.5) - 1.0;
    z->h_n = big_h(z, (double)n + 0.5);
    z->squeeze = 2.0 - big_h_inv(z, big_h(z, 2.5) - h(z, 2.0));
}

uint64_t zipf_next(const struct zipf *z, double (*u01)(void *), void *rng)
{
    for (;;) {
        double u = z->h_n + u01(rng) * (z->h_x1 - z->h_n);
        double x = big_h_inv(z, u);
        double kd = floor(x + 0.5);
        uint64_t k;
        if (kd < 1.0)
            kd = 1.0;
        else if (kd > (double)z->n)
            kd = (double)z->n;
        k = (uint64_t)kd;
        if (kd - x <= z->squeeze || u >= big_h(z, kd + 0.5) - h(z, kd))
            return k;
    }
}

/* ---- self-check --------------------------------------------------------- */

static double check_u01(void *p)
{
    uint64_t *s = p, z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

int zipf_self_check(uint64_t n, double s, uint64_t samples)
{
    static const uint64_t ranks[] = {1, 2, 3, 4, 5, 10, 100, 1000};
    uint64_t counts[sizeof(ranks) / sizeof(ranks[0])] = {0};
    uint64_t top1 = 0, top1_cut = n / 100 ? n / 100 : 1, rng = 42;
    double norm = 0, top1_p = 0;
    int bad = 0;
    struct zipf z;

    zipf_init(&z, n, s);
    for (uint64_t k = 1; k <= n; k++) {
        double p = pow((double)k, -s);
        norm += p;
        if (k <= top1_cut)
            top1_p += p;
    }
    for (uint64_t i = 0; i < samples; i++) {
        uint64_t k = zipf_next(&z, check_u01, &rng);
        if (k < 1 || k > n) {
            printf("zipf: rank %llu out of 1..%llu\n", (unsigned long long)k,
                   (unsigned long long)n);
            return 1;
        }
        if (k <= top1_cut)
            top1++;
        for (size_t j = 0; j < sizeof(ranks) / sizeof(ranks[0]); j++)
            if (k == ranks[j])
                counts[j]++;
    }
    printf("zipf self-check: n=%llu s=%.3f samples=%llu\n",
           (unsigned long long)n, s, (unsigned long long)samples);
    printf("%8s %12s %12s %8s\n", "rank", "expected", "observed", "error");
    for (size_t j = 0; j < sizeof(ranks) / sizeof(ranks[0]); j++) {
        if (ranks[j] > n)
            continue;
        double want = (double)samples * pow((double)ranks[j], -s) / norm;
        double err = (double)counts[j] / want - 1.0;
        /* allow 5 standard deviations of a binomial count, at least 2% */
        double tol = fmax(0.02, 5.0 / sqrt(want));
        bool ok = fabs(err) <= tol;
        printf("%8llu %12.0f %12llu %+7.2f%%%s\n", (unsigned long long)ranks[j],
               want, (unsigned long long)counts[j], 100 * err,
               ok ? "" : "  FAIL");
        bad += !ok;
    }
    double want_top = top1_p / norm, got_top = (double)top1 / (double)samples;
    printf("top 1%% of keys (%llu): expected %.2f%% of requests, observed "
           "%.2f%%\n",
           (unsigned long long)top1_cut, 100 * want_top, 100 * got_top);
    if (fabs(got_top - want_top) > 0.01)
        bad++;
    printf("zipf self-check %s\n", bad ? "FAILED" : "passed");
    return bad != 0;
}
