/* Element-wise and row-wise kernels. All in place where y == x is allowed. */
#ifndef HV_OPS_H
#define HV_OPS_H

#include <stdint.h>

/* y[i,:] = LayerNorm(x[i,:]) * w + b over d features, n rows. */
void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps);

/* hv_layernorm's rows as bf16 bits (hv_bf16_bits of hv_layernorm's
 * floats), without the floats in memory. */
void hv_layernorm_bf16(uint16_t *y, const float *x, int n, int d, const float *w, const float *b,
                       float eps);

void hv_softmax(float *x, int n);     /* in place, max-subtracted */
void hv_log_softmax(float *x, int n); /* in place */

/* SiLU x / (1 + e^-x) in place, and the GLU y[d] = a[:d] * sigmoid(a[d:2d]),
 * with hv_exp_act for e^x (vectorised where the CPU allows; the same bits
 * either way). */
void hv_silu(float *x, long n);
void hv_glu(float *y, const float *a, long d);
/* e^x within 2 ulp of expf (Cephes' polynomial); x clamped to [-87, 88]. */
float hv_exp_act(float x);
void hv_relu(float *x, long n);

/* y[n] += alpha * x[n] */
void hv_add_scaled(float *y, const float *x, long n, float alpha);

/* y[n] = x[n] rounded to bf16 (hv_bf16_round; y may be x), and the same
 * as bf16 bits (hv_bf16_bits). */
void hv_bf16_round_n(float *y, const float *x, long n);
void hv_bf16_bits_n(uint16_t *y, const float *x, long n);

/* Index of the largest value (first on ties). */
int hv_argmax(const float *x, int n);

/* The instruction sets these kernels have versions for, as levels: the
 * versions this CPU runs, numbered from the portable one (0) up to the
 * best, hv_ops_level() (x86-64: portable, avx2, avx512; 64-bit ARM:
 * portable, neon; HVISKE_MAX_ISA caps them as it caps the matrix kernels).
 * Every level gives the same bits (the tests compare each with the
 * portable one); the functions above run the best. */
enum { HV_OPS_PORTABLE = 0, HV_OPS_BEST = 99 };
int hv_ops_level(void);
/* The name of a level ("portable", "avx2", "avx512", "neon"; above the
 * best: the best's). */
const char *hv_ops_level_name(int level);
/* The name of the best level a CPU with these features (cpu.h) runs, for
 * either architecture on any host (the CPU matrix test):
 * hv_ops_level_name(hv_ops_level()) is hv_ops_table_for(hv_cpu_features()). */
const char *hv_ops_table_for(unsigned features);

/* The functions above at a given level (at most hv_ops_level(): a higher
 * one runs the best there is), for the tests and the benchmark. */
void hv_layernorm_at(int level, float *y, const float *x, int n, int d, const float *w,
                     const float *b, float eps);
void hv_layernorm_bf16_at(int level, uint16_t *y, const float *x, int n, int d, const float *w,
                          const float *b, float eps);
void hv_softmax_at(int level, float *x, int n);
void hv_log_softmax_at(int level, float *x, int n);
void hv_silu_at(int level, float *x, long n);
void hv_glu_at(int level, float *y, const float *a, long d);
void hv_add_scaled_at(int level, float *y, const float *x, long n, float alpha);
void hv_bf16_round_n_at(int level, float *y, const float *x, long n);
void hv_bf16_bits_n_at(int level, uint16_t *y, const float *x, long n);

#endif
