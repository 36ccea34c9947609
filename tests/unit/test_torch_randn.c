/* hv_torch_randn (src/audio/torch_randn.c) against PyTorch itself
 * (python3-torch, tests/frontend/torch_randn_oracle.py): lengths 1, 15
 * (the scalar double path), 16, 17, 31, 1000 and 480000 (a 30 s chunk;
 * Box-Muller blocks of 16 and the recomputed tail), several seeds, among
 * them the length itself (Hugging Face's dither seeds with it) and one
 * above 2^32 (only its low 32 bits count).
 *
 * Bounds: n < 16 is double arithmetic rounded to float, the same libm
 * calls as PyTorch's: at most 1 ulp of the value. n >= 16: PyTorch's
 * AVX2 kernels evaluate log, sin and cos with SLEEF (1-ulp functions)
 * where this file uses libm, so a value may differ by a few ulps of its
 * own size near a zero of cos or sin, but each of the three 1-ulp
 * functions moves the value by about 1 ulp of the pair's radius r =
 * hypot(v[j], v[j + 8]): bound 3 ulps of r (measured: 2.0 at most over
 * these cases). The oracle runs with ATEN_CPU_CAPABILITY=avx2 so that an
 * AVX-512 host compares with the same kernels; a CPU without AVX2 runs
 * PyTorch's scalar kernel, which rounds theta = 2 pi u2 from double (one
 * ulp of theta, up to 12 ulps of r apart, measured 8): 16 ulps of r
 * there. */
#ifndef _POSIX_C_SOURCE /* popen: the tests are not built */
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/torch_randn.h"
#include "testlib.h"

typedef struct request {
    uint64_t seed;
    size_t n;
} request;

/* The index whose value shares v[i]'s Box-Muller draw (n >= 16). */
static size_t partner(size_t i, size_t n) {
    size_t base = i - i % 16;
    if (n % 16 && i >= n - 16) base = n - 16; /* the recomputed tail */
    size_t j = i - base;
    return j < 8 ? i + 8 : i - 8;
}

static double ulp(float x) {
    x = fabsf(x);
    return (double)nextafterf(x, INFINITY) - (double)x;
}

/* Compares one request's values; prints the worst case. */
static void compare(const request *q, const float *want, double bound_r) {
    float *got = malloc((q->n ? q->n : 1) * sizeof *got);
    if (!got) {
        CHECK_MSG(0, "out of memory");
        return;
    }
    hv_torch_randn(q->seed, got, q->n);
    double worst = 0;
    size_t at = 0, exact = 0;
    for (size_t i = 0; i < q->n; i++) {
        double d = fabs((double)got[i] - (double)want[i]), e;
        exact += d == 0;
        if (q->n < 16) {
            e = d / ulp(want[i]);
        } else {
            float r = (float)hypot(want[i], want[partner(i, q->n)]);
            e = d / ulp(r);
        }
        if (e > worst) worst = e, at = i;
    }
    double bound = q->n < 16 ? 1.0 : bound_r;
    printf("# seed %llu, n %zu: %zu of %zu equal, worst %.2f ulps of %s at %zu\n",
           (unsigned long long)q->seed, q->n, exact, q->n, worst, q->n < 16 ? "the value" : "r",
           at);
    CHECK_MSG(worst <= bound, "seed %llu n %zu: value %zu is %.9g, torch %.9g (%.2f ulps > %.0f)",
              (unsigned long long)q->seed, q->n, at, got[at], want[at], worst, bound);
    free(got);
}

int main(void) {
    static const size_t lengths[] = {1, 15, 16, 17, 31, 1000, 480000};
    request reqs[64];
    int nq = 0;
    for (size_t l = 0; l < sizeof lengths / sizeof *lengths; l++) {
        size_t n = lengths[l];
        uint64_t seeds[] = {0, 1, 12345, n, (UINT64_C(1) << 32) + 7};
        for (int s = 0; s < 5; s++) reqs[nq++] = (request){seeds[s], n};
    }
    const char *py = hv_test_env("HV_PYTHON", "/usr/bin/python3");
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    char cmd[8192];
    int len = snprintf(cmd, sizeof cmd,
                       "ATEN_CPU_CAPABILITY=avx2 '%s' '%s/tests/frontend/torch_randn_oracle.py'",
                       py, src);
    for (int i = 0; i < nq; i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %llu:%zu",
                        (unsigned long long)reqs[i].seed, reqs[i].n);
    FILE *p = popen(cmd, "r");
    CHECK_MSG(p, "cannot run %s", cmd);
    if (!p) TEST_END();
    char cap[64] = "";
    if (!fgets(cap, sizeof cap, p)) {
        CHECK_MSG(0, "the oracle printed nothing (status %d): %s", pclose(p), cmd);
        TEST_END();
    }
    cap[strcspn(cap, "\n")] = 0;
    double bound_r = strcmp(cap, "AVX2") == 0 ? 3.0 : 16.0;
    printf("# torch's CPU capability: %s (bound %.0f ulps of r for n >= 16)\n", cap, bound_r);
    for (int i = 0; i < nq; i++) {
        float *want = malloc(reqs[i].n * sizeof *want);
        size_t got = want ? fread(want, sizeof *want, reqs[i].n, p) : 0;
        CHECK_MSG(got == reqs[i].n, "oracle: %zu of %zu values for seed %llu", got, reqs[i].n,
                  (unsigned long long)reqs[i].seed);
        if (got == reqs[i].n) compare(&reqs[i], want, bound_r);
        free(want);
    }
    CHECK_MSG(pclose(p) == 0, "the oracle failed: %s", cmd);

    /* n = 0 writes nothing; equal seeds give equal values, the high 32
     * bits of a seed are ignored as PyTorch does */
    float a[40], b[40];
    a[0] = 7.0f;
    hv_torch_randn(3, a, 0);
    CHECK(a[0] == 7.0f);
    hv_torch_randn(99, a, 40);
    hv_torch_randn(99 + (UINT64_C(5) << 32), b, 40);
    CHECK(memcmp(a, b, sizeof a) == 0);
    hv_torch_randn(98, b, 40);
    CHECK(memcmp(a, b, sizeof a) != 0);
    TEST_END();
}
