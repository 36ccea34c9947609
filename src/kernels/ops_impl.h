/* Private to the element-wise passes (ops.c) and their per-instruction-set
 * versions: the constants of the activations' e^x, and the table of one
 * instruction set's vector parts. Every entry does a pass's first values
 * (as many as it returns, or the first n8 = n & ~7 it is given) in the
 * operations and order of the portable code in ops.c, so that every table
 * gives the same bits, and ops.c does the rest. */
#ifndef HV_OPS_IMPL_H
#define HV_OPS_IMPL_H

#include <stdint.h>

/* e^x for the activations, by Cephes' method (ops.c's exp_act): x
 * clamped to [EXP_LO, EXP_HI], n = floor(x log2(e) + 1/2), r = x - n ln 2
 * (ln 2 in two parts, EXP_C1 + EXP_C2), e^r by the degree-5 polynomial
 * hv_exp_p, times 2^n through the exponent bits. */
#define EXP_HI    88.0f
#define EXP_LO    -87.0f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1    0.693359375f
#define EXP_C2    -2.12194440e-4f
static const float hv_exp_p[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                  4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/* One instruction set's versions; NULL: none (the portable code does the
 * whole pass). */
typedef struct hv_ops_kernels {
    const char *name;
    /* x = x / (1 + e^(0 - x)) over the first values; returns how many */
    long (*silu)(float *x, long n);
    /* y = a / (1 + e^(0 - g)) over the first values; returns how many */
    long (*glu)(float *y, const float *a, const float *g, long n);
    /* the row sums of LayerNorm over the first n8 values, in 8 double
     * lanes (lane l the values i = l mod 8 in order, combined ((s0+s4) +
     * (s2+s6)) + ((s1+s5) + (s3+s7))): of x, and of (x - mean)^2 (no fma) */
    double (*sum)(const float *x, int n8);
    double (*sq_dev)(const float *x, int n8, double mean);
    /* y = (x - m) * inv * w + b over the first values; returns how many */
    int (*layernorm)(float *y, const float *x, int d, float m, float inv, const float *w,
                     const float *b);
    /* the max of the first n8 values (n8 >= 8) in AVX2's order: 8 lanes
     * kept by maxps' rule (a > b ? a : b, running value first), then
     * lanes l and l + 4, l and l + 2, 0 and 1: which of +0 and -0 wins */
    float (*max)(const float *x, int n8);
    /* e^(x - mx) of the first n8 values (0 below EXP_LO), stored into x
     * when store; returns their sum in the double lanes of sum */
    double (*softmax_exp)(float *x, int n8, float mx, int store);
    /* y += alpha * x (a product, then a sum) over the first values */
    long (*add_scaled)(float *y, const float *x, long n, float alpha);
    /* hv_bf16_round, and its bits, over the first values */
    long (*bf16_round)(float *y, const float *x, long n);
    long (*bf16_bits)(uint16_t *y, const float *x, long n);
} hv_ops_kernels;

#if defined(__aarch64__) && defined(__GNUC__)
/* Advanced SIMD (src/kernels/arm/ops_neon.c): every aarch64 CPU. */
extern const hv_ops_kernels hv_ops_neon;
#endif

#endif
