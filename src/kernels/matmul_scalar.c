/* Portable kernels for reduced-precision weights. They follow the
 * summation orders written down in matmul_impl.h exactly, fused
 * multiply-adds included, so that they double as the reference the SIMD
 * kernels are tested against. (fmaf is an instruction on ARM; on x86
 * builds without -mfma it is a libm call, correct but slow; x86 CPUs with
 * AVX2 use matmul_avx2.c instead.) */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/matmul_impl.h"

void hv_q8_act_quantize(hv_q8_act *a, const float *x, int n, int cols) {
    int nb = cols / HV_Q8_BLOCK;
    a->n = n;
    a->nb = nb;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < nb; b++) {
            const float *v = x + (long)i * cols + (long)b * HV_Q8_BLOCK;
            int8_t *q = a->q + (long)i * cols + (long)b * HV_Q8_BLOCK;
            float amax = 0.0f;
            int finite = 1;
            for (int t = 0; t < HV_Q8_BLOCK; t++) {
                float m = fabsf(v[t]);
                finite &= isfinite(v[t]) != 0;
                if (m > amax) amax = m;
            }
            float d = finite ? amax / 127.0f : NAN;
            if (finite && d < FLT_MIN) d = 0.0f; /* too small to divide by */
            a->d[(long)i * nb + b] = d;
            if (!(d > 0.0f)) {
                memset(q, 0, HV_Q8_BLOCK);
                continue;
            }
            for (int t = 0; t < HV_Q8_BLOCK; t++) {
                float r = rintf(v[t] / d);
                q[t] = (int8_t)(r > 127.0f ? 127 : r < -127.0f ? -127 : r);
            }
        }
}

/* The fixed reduction of 8 lane sums (the SIMD kernels' horizontal sum). */
static float lanes_sum(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static float f16_at(const uint16_t *w, int k) { return hv_f16_to_f32(w[k]); }
static float bf16_at(const uint16_t *w, int k) { return hv_bf16_to_f32(w[k]); }

static void gemv_u16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w, int cols,
                     float (*at)(const uint16_t *, int)) {
    int c16 = cols & ~15, c8 = cols & ~7;
    for (int r = 0; r < n_w; r++) {
        const uint16_t *wr = w + (long)r * cols;
        for (int i = 0; i < n; i++) {
            const float *xi = x + (long)i * cols;
            float a[8] = {0}, b[8] = {0};
            int k = 0;
            for (; k < c16; k += 16)
                for (int j = 0; j < 8; j++) {
                    a[j] = fmaf(at(wr, k + j), xi[k + j], a[j]);
                    b[j] = fmaf(at(wr, k + 8 + j), xi[k + 8 + j], b[j]);
                }
            if (k < c8)
                for (int j = 0; j < 8; j++) a[j] = fmaf(at(wr, k + j), xi[k + j], a[j]);
            for (int j = 0; j < 8; j++) a[j] += b[j];
            float s = lanes_sum(a);
            for (k = c8; k < cols; k++) s = fmaf(at(wr, k), xi[k], s);
            y[(long)i * ldy + r] = s;
        }
    }
}

static void gemv_f16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                     int cols) {
    gemv_u16(y, ldy, x, n, w, n_w, cols, f16_at);
}

static void gemv_bf16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                      int cols) {
    gemv_u16(y, ldy, x, n, w, n_w, cols, bf16_at);
}

static void gemv_q8_0(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                      int cols) {
    int nb = cols / HV_Q8_BLOCK;
    for (int r = 0; r < n_w; r++) {
        const hv_q8_0_block *wr = w + (long)r * nb;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            float acc[8] = {0};
            for (int b = 0; b < nb; b++) {
                float d = hv_f16_to_f32(wr[b].d) * xd[b];
                const int8_t *qw = wr[b].q, *qx = xq + (long)b * HV_Q8_BLOCK;
                for (int j = 0; j < 8; j++) {
                    int p = 0;
                    for (int t = 4 * j; t < 4 * j + 4; t++) p += qw[t] * qx[t];
                    acc[j] = fmaf(d, (float)p, acc[j]);
                }
            }
            y[(long)i * ldy + r] = lanes_sum(acc);
        }
    }
}

/* A q4_0 block's 32 values q - 8, in element order. */
static void q4_values(const hv_q4_0_block *b, int8_t q[HV_Q8_BLOCK]) {
    for (int t = 0; t < HV_Q8_BLOCK / 2; t++) {
        q[t] = (int8_t)((b->qs[t] & 15) - 8);
        q[t + 16] = (int8_t)((b->qs[t] >> 4) - 8);
    }
}

static void gemv_q4_0(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                      int cols) {
    int nb = cols / HV_Q8_BLOCK;
    for (int r = 0; r < n_w; r++) {
        const hv_q4_0_block *wr = w + (long)r * nb;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            float acc[8] = {0};
            for (int b = 0; b < nb; b++) {
                float d = hv_f16_to_f32(wr[b].d) * xd[b];
                int8_t qw[HV_Q8_BLOCK];
                q4_values(&wr[b], qw);
                const int8_t *qx = xq + (long)b * HV_Q8_BLOCK;
                for (int j = 0; j < 8; j++) {
                    int p = 0;
                    for (int t = 4 * j; t < 4 * j + 4; t++) p += qw[t] * qx[t];
                    acc[j] = fmaf(d, (float)p, acc[j]);
                }
            }
            y[(long)i * ldy + r] = lanes_sum(acc);
        }
    }
}

static void widen_f16(float *dst, const uint16_t *src, long count) {
    for (long i = 0; i < count; i++) dst[i] = hv_f16_to_f32(src[i]);
}

static void widen_bf16(float *dst, const uint16_t *src, long count) {
    for (long i = 0; i < count; i++) dst[i] = hv_bf16_to_f32(src[i]);
}

static void widen_q8_0(float *dst, const hv_q8_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        float d = hv_f16_to_f32(src[b].d);
        for (int t = 0; t < HV_Q8_BLOCK; t++) dst[b * HV_Q8_BLOCK + t] = d * (float)src[b].q[t];
    }
}

/* d * (q - 8) is exact in f32. */
static void widen_q4_0(float *dst, const hv_q4_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        float d = hv_f16_to_f32(src[b].d);
        int8_t q[HV_Q8_BLOCK];
        q4_values(&src[b], q);
        for (int t = 0; t < HV_Q8_BLOCK; t++) dst[b * HV_Q8_BLOCK + t] = d * (float)q[t];
    }
}

static void gemm_tile(int kc, const float *a, const float *b, float *c, long ldc, int accumulate) {
    for (int i = 0; i < HV_GEMM_MR; i++)
        for (int j = 0; j < HV_GEMM_NR; j++) {
            float s = accumulate ? c[i * ldc + j] : 0.0f;
            for (int k = 0; k < kc; k++) s = fmaf(a[k * HV_GEMM_MR + i], b[k * HV_GEMM_NR + j], s);
            c[i * ldc + j] = s;
        }
}

static void gemm_panel(float *dst, const float *src, long ld, int kc) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < HV_GEMM_NR; r++) dst[k * HV_GEMM_NR + r] = src[r * ld + k];
}

const hv_mm_kernels hv_mm_scalar = {"scalar",   gemv_f16,  gemv_bf16,  gemv_q8_0,
                                    gemv_q4_0,  widen_f16, widen_bf16, widen_q8_0,
                                    widen_q4_0, gemm_tile, gemm_panel};
