/* What the weight-type tests and the kernel benchmark share: the weight
 * types, a seeded generator (each program its own stream), allocation, the
 * weights widened by the scalar kernels, and a bitwise comparison. */
#ifndef HV_MM_TESTUTIL_H
#define HV_MM_TESTUTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"

static const hv_weight_type all_types[] = {HV_WEIGHTS_F32, HV_WEIGHTS_F16, HV_WEIGHTS_BF16,
                                           HV_WEIGHTS_Q8_0, HV_WEIGHTS_Q4_0};
#define N_TYPES (int)(sizeof all_types / sizeof all_types[0])

static unsigned rng = 12345;
static inline float frand(void) { /* [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) / 16777216.0 * 2.0 - 1.0);
}
static inline int irand(int lo, int hi) { /* [lo, hi] */
    rng = rng * 1664525u + 1013904223u;
    return lo + (int)((rng >> 8) % (unsigned)(hi - lo + 1));
}

static inline float *falloc(size_t n) {
    float *p = malloc(n * sizeof(float) + 1);
    if (!p) abort();
    return p;
}

/* The weights as hv_linear sees them, widened with the scalar kernels. */
static inline float *dequant(const hv_mat *W) {
    float *w = falloc((size_t)W->rows * W->cols);
    for (int r = 0; r < W->rows; r++) hv_mat_row_f32(W, r, w + (size_t)r * W->cols);
    return w;
}

/* The SIMD kernel tables this CPU runs (hv_mm_tables without the
 * portable one), best first, into out[8]: how many. Tests compare each
 * with the portable table. */
static inline int simd_tables(const hv_mm_kernels *out[8]) {
    const hv_mm_kernels *all[8];
    int n = hv_mm_tables(all, 8), m = 0;
    for (int i = 0; i < n; i++)
        if (all[i] != &hv_mm_scalar) out[m++] = all[i];
    return m;
}

static inline int same_bits(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}

#endif
