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

/* One block of 32 activations rounded to `levels` steps each side: d =
 * amax / levels, q = rint(x / d) in [-levels, levels]. A block whose d
 * would be subnormal (amax < levels * FLT_MIN) becomes zeros; a block with
 * a NaN or infinity gets d = NaN and q = 0, so that its outputs become
 * NaN. Returns d. (The GEMV's blocks take 127 levels, the int8 GEMM's 63.) */
static float quantize_levels(const float *v, int levels, int8_t q[HV_Q8_BLOCK]) {
    float amax = 0.0f;
    int finite = 1;
    for (int t = 0; t < HV_Q8_BLOCK; t++) {
        finite &= isfinite(v[t]) != 0;
        if (fabsf(v[t]) > amax) amax = fabsf(v[t]);
    }
    float d = finite ? amax / (float)levels : NAN;
    if (finite && d < FLT_MIN) d = 0.0f; /* too small to divide by */
    if (!(d > 0.0f)) {
        memset(q, 0, HV_Q8_BLOCK);
        return d;
    }
    for (int t = 0; t < HV_Q8_BLOCK; t++) {
        float r = rintf(v[t] / d);
        q[t] = (int8_t)(r > levels ? levels : r < -levels ? -levels : r);
    }
    return d;
}

void hv_q8_act_quantize(const hv_mm_kernels *k, hv_q8_act *a, const float *x, int n, int cols) {
    int nb = cols / HV_Q8_BLOCK;
    a->n = n;
    a->nb = nb;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < nb; b++) {
            long at = (long)i * cols + (long)b * HV_Q8_BLOCK;
            a->d[(long)i * nb + b] = k->quantize_q8(x + at, a->q + at);
            if (a->s) {
                int32_t sum = 0;
                for (int t = 0; t < HV_Q8_BLOCK; t++) sum += a->q[at + t];
                a->s[(long)i * nb + b] = sum;
            }
        }
}

/* The fixed reduction of 8 lane sums (the SIMD kernels' horizontal sum). */
static float lanes_sum(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* A weight row's element type: f16 (es 2, bf16 0), bf16 (es 2, bf16 1)
 * or f32 (es 4). */
typedef struct row_type {
    int es, bf16;
} row_type;

/* Weight k of row w, as f32 (exactly). */
static float weight_at(const void *w, int k, row_type t) {
    if (t.es == 4) return ((const float *)w)[k];
    uint16_t h = ((const uint16_t *)w)[k];
    return t.bf16 ? hv_bf16_to_f32(h) : hv_f16_to_f32(h);
}

static void gemv_row_major(float *y, int ldy, const float *x, int n, const void *w, int n_w,
                           int cols, row_type t) {
    int c16 = cols & ~15, c8 = cols & ~7;
    for (int r = 0; r < n_w; r++) {
        const char *wr = (const char *)w + (size_t)r * cols * t.es;
        for (int i = 0; i < n; i++) {
            const float *xi = x + (long)i * cols;
            float a[8] = {0}, b[8] = {0};
            int k = 0;
            for (; k < c16; k += 16)
                for (int j = 0; j < 8; j++) {
                    a[j] = fmaf(weight_at(wr, k + j, t), xi[k + j], a[j]);
                    b[j] = fmaf(weight_at(wr, k + 8 + j, t), xi[k + 8 + j], b[j]);
                }
            if (k < c8)
                for (int j = 0; j < 8; j++) a[j] = fmaf(weight_at(wr, k + j, t), xi[k + j], a[j]);
            for (int j = 0; j < 8; j++) a[j] += b[j];
            float s = lanes_sum(a);
            for (k = c8; k < cols; k++) s = fmaf(weight_at(wr, k, t), xi[k], s);
            y[(long)i * ldy + r] = s;
        }
    }
}

static void gemv_f16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                     int cols) {
    gemv_row_major(y, ldy, x, n, w, n_w, cols, (row_type){2, 0});
}

static void gemv_bf16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                      int cols) {
    gemv_row_major(y, ldy, x, n, w, n_w, cols, (row_type){2, 1});
}

static void gemv_f32(float *y, int ldy, const float *x, int n, const float *w, int n_w, int cols) {
    gemv_row_major(y, ldy, x, n, w, n_w, cols, (row_type){4, 0});
}

/* The r64 GEMV: each output one fma chain over the columns in order. */
static void gemv_bf16_r64(float *y, int ldy, const float *x, int n, const uint32_t *w, int r0,
                          int n_w, int cols) {
    for (int r = r0; r < r0 + n_w; r++)
        for (int i = 0; i < n; i++) {
            const float *xi = x + (long)i * cols;
            float s = 0.0f;
            for (int k = 0; k < cols; k += 2) {
                uint32_t word = w[hv_r64_word(cols, r, k)];
                s = fmaf(hv_bf16_to_f32((uint16_t)word), xi[k], s);
                s = fmaf(hv_bf16_to_f32((uint16_t)(word >> 16)), xi[k + 1], s);
            }
            y[(long)i * ldy + (r - r0)] = s;
        }
}

void hv_q4_0_values(const hv_q4_0_block *b, int8_t q[HV_Q8_BLOCK]) {
    hv_q4_split(b->qs, HV_Q8_BLOCK / 2, q, q + HV_Q8_BLOCK / 2);
}

static void q8_values(const void *blk, int8_t q[HV_Q8_BLOCK]) {
    memcpy(q, ((const hv_q8_0_block *)blk)->q, HV_Q8_BLOCK);
}

static void q4_block_values(const void *blk, int8_t q[HV_Q8_BLOCK]) { hv_q4_0_values(blk, q); }

/* The q8_0 and q4_0 GEMV: blocks of bb bytes, each an f16 scale and the
 * 32 values that `values` gives. */
static void gemv_blocks(float *y, int ldy, const hv_q8_act *a, const char *w, int n_w, int cols,
                        size_t bb, void (*values)(const void *blk, int8_t q[HV_Q8_BLOCK])) {
    int nb = cols / HV_Q8_BLOCK;
    for (int r = 0; r < n_w; r++) {
        const char *wr = w + (size_t)r * nb * bb;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            float acc[8] = {0};
            for (int b = 0; b < nb; b++) {
                const char *blk = wr + (size_t)b * bb;
                uint16_t dw;
                memcpy(&dw, blk, sizeof dw);
                float d = hv_f16_to_f32(dw) * xd[b];
                int8_t qw[HV_Q8_BLOCK];
                values(blk, qw);
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

static void gemv_q8_0(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                      int cols) {
    gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, sizeof *w, q8_values);
}

static void gemv_q4_0(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                      int cols) {
    gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, sizeof *w, q4_block_values);
}

void hv_x8_values(const uint8_t *pb, int j, int q4, int8_t q[HV_Q8_BLOCK]) {
    for (int k = 0; k < (q4 ? 4 : 8); k++) {
        const uint8_t *word = pb + (k * HV_X8_ROWS + j) * 4;
        if (q4)
            hv_q4_split(word, 4, q + 4 * k, q + 4 * k + HV_Q8_BLOCK / 2);
        else
            memcpy(q + 4 * k, word, 4);
    }
}

/* The x8 GEMV's micro-kernels (nest_gemv_x8.h): matmul_impl.h's x8 dot,
 * one row of the group at a time. */
typedef struct {
    float v[HV_X8_ROWS];
} x8_acc;

static inline x8_acc x8_zero(void) {
    x8_acc a = {{0.0f}};
    return a;
}

static inline void x8_fetch(const uint8_t *qb, const uint16_t *d, int b, int words) {
    (void)qb, (void)d, (void)b, (void)words;
}

static inline x8_acc x8_step(x8_acc acc, const uint8_t *qb, const int8_t *x, int32_t sum,
                             const uint16_t *d, float dx, int q4) {
    (void)sum; /* hv_x8_values gives q4_0's values as q - 8 */
    for (int j = 0; j < HV_X8_ROWS; j++) {
        int8_t qw[HV_Q8_BLOCK];
        hv_x8_values(qb, j, q4, qw);
        int32_t p = 0;
        for (int t = 0; t < HV_Q8_BLOCK; t++) p += qw[t] * x[t];
        acc.v[j] = fmaf(hv_f16_to_f32(d[j]) * dx, (float)p, acc.v[j]);
    }
    return acc;
}

static inline void x8_store(float *y, x8_acc acc) { memcpy(y, acc.v, sizeof acc.v); }

#define HV_NEST_INLINE static inline
#define HV_NEST_KERNEL static
#include "kernels/nest_gemv_x8.h"

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
        hv_q4_0_values(&src[b], q);
        for (int t = 0; t < HV_Q8_BLOCK; t++) dst[b * HV_Q8_BLOCK + t] = d * (float)q[t];
    }
}

static void gemm_tiles(int count, int kc, const float *a, const float *b, float *c, long ldc,
                       int accumulate) {
    for (int t = 0; t < count; t++, a += (long)kc * HV_GEMM_MR, c += HV_GEMM_MR * ldc)
        for (int i = 0; i < HV_GEMM_MR; i++)
            for (int j = 0; j < HV_GEMM_NR; j++) {
                float s = accumulate ? c[i * ldc + j] : 0.0f;
                for (int k = 0; k < kc; k++)
                    s = fmaf(a[k * HV_GEMM_MR + i], b[k * HV_GEMM_NR + j], s);
                c[i * ldc + j] = s;
            }
}

static void gemm_panel(void *dst, const void *src, long ld, int kc) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < HV_GEMM_NR; r++)
            memcpy((char *)dst + 4 * (k * HV_GEMM_NR + r), (const char *)src + 4 * (r * ld + k), 4);
}

static void gemm_pack_x(float *dst, const float *src, long ld, int kc) {
    for (int k = 0; k < kc; k++)
        for (int i = 0; i < HV_GEMM_MR; i++) dst[k * HV_GEMM_MR + i] = src[i * ld + k];
}

static void gemm_panel_half(float *dst, const uint16_t *src, long ld, int kc, int bf16) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < HV_GEMM_NR; r++)
            dst[k * HV_GEMM_NR + r] = weight_at(src + r * ld, k, (row_type){2, bf16});
}

static void gemm_x8_terms(const uint16_t *d, const int8_t *words, long stride, float *scale,
                          int32_t *offset) {
    for (int j = 0; j < 8; j++) {
        int32_t sum = 0;
        for (int k = 0; k < 8; k++)
            for (int t = 0; t < 4; t++) sum += words[k * stride + 4 * j + t];
        scale[j] = hv_f16_to_f32(d[j]);
        offset[j] = 64 * sum;
    }
}

static void gemm_tile_q8(int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                         const float *bd, const int32_t *bc, float *c, long ldc, int accumulate,
                         const float *bias) {
    const int steps = HV_Q8_BLOCK / 4;
    for (int i = 0; i < HV_GEMM_Q8_MR; i++)
        for (int j = 0; j < HV_GEMM_NR; j++) {
            float s = accumulate ? c[i * ldc + j] : 0.0f;
            for (int blk = 0; blk < nbk; blk++) {
                int32_t p = 0;
                for (int q = blk * steps; q < (blk + 1) * steps; q++)
                    for (int t = 0; t < 4; t++)
                        p += a[(q * HV_GEMM_Q8_MR + i) * 4 + t] * b[(q * HV_GEMM_NR + j) * 4 + t];
                p -= bc[blk * HV_GEMM_NR + j];
                s = fmaf(bd[blk * HV_GEMM_NR + j] * ad[blk * HV_GEMM_Q8_MR + i], (float)p, s);
            }
            c[i * ldc + j] = bias ? s + bias[j] : s;
        }
}

static void gemm_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                          const float *bd, const int32_t *bc, float *c, long ldc, int accumulate,
                          const float *bias) {
    for (int t = 0; t < count; t++)
        gemm_tile_q8(nbk, a + (long)t * nbk * HV_Q8_BLOCK * HV_GEMM_Q8_MR,
                     ad + (long)t * nbk * HV_GEMM_Q8_MR, b, bd, bc, c + t * HV_GEMM_Q8_MR * ldc,
                     ldc, accumulate, bias);
}

static float quantize_q8(const float *x, int8_t q[HV_Q8_BLOCK]) {
    return quantize_levels(x, 127, q);
}

static float quantize_q7(const float *x, uint8_t u[HV_Q8_BLOCK]) {
    int8_t q[HV_Q8_BLOCK];
    float d = quantize_levels(x, 63, q);
    for (int t = 0; t < HV_Q8_BLOCK; t++) u[t] = (uint8_t)(64 + q[t]);
    return d;
}

/* Element i of a cached row of f32 or of f16 (widened exactly). */
static float row_at(const void *r, long i, int half) {
    return half ? hv_f16_to_f32(((const uint16_t *)r)[i]) : ((const float *)r)[i];
}

/* attn_scores / attn_scores_f16: each dot in the lane order of
 * matmul_impl.h. */
static void scores_rows(float *s, const float *q, const void *k, long ld, int n, int len,
                        float scale, int half) {
    int len8 = len & ~7;
    for (int i = 0; i < n; i++) {
        const void *r = (const char *)k + i * ld * (half ? 2 : 4);
        float a[8] = {0};
        int c = 0;
        for (; c < len8; c += 8)
            for (int j = 0; j < 8; j++) a[j] = fmaf(q[c + j], row_at(r, c + j, half), a[j]);
        float d = lanes_sum(a);
        for (; c < len; c++) d = fmaf(q[c], row_at(r, c, half), d);
        s[i] = scale * d;
    }
}

/* attn_context / attn_context_f16. */
static void context_rows(float *out, const float *p, const void *v, long ld, int n, int len,
                         int accumulate, int half) {
    if (!accumulate) memset(out, 0, (size_t)len * sizeof *out);
    for (int i = 0; i < n; i++) {
        const void *r = (const char *)v + i * ld * (half ? 2 : 4);
        for (int j = 0; j < len; j++) out[j] = fmaf(p[i], row_at(r, j, half), out[j]);
    }
}

static void attn_scores(float *s, const float *q, const float *k, long ld, int n, int len,
                        float scale) {
    scores_rows(s, q, k, ld, n, len, scale, 0);
}

static void attn_context(float *out, const float *p, const float *v, long ld, int n, int len,
                         int accumulate) {
    context_rows(out, p, v, ld, n, len, accumulate, 0);
}

static void attn_scores_f16(float *s, const float *q, const uint16_t *k, long ld, int n, int len,
                            float scale) {
    scores_rows(s, q, k, ld, n, len, scale, 1);
}

static void attn_context_f16(float *out, const float *p, const uint16_t *v, long ld, int n, int len,
                             int accumulate) {
    context_rows(out, p, v, ld, n, len, accumulate, 1);
}

static void narrow_f16(uint16_t *dst, const float *src, long count) {
    for (long i = 0; i < count; i++) dst[i] = hv_f32_to_f16_sat(src[i]);
}

static void sgemm_nn(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
                     float *c, long ldc) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int t = 0; t < k; t++) s = fmaf(a[i * lda + t], b[t * ldb + j], s);
            c[i * ldc + j] = s;
        }
}

/* The probe (see the table): 8 independent fmaf chains (int8 alike: the
 * portable int8 tiles are integer loops the compiler vectorises as it
 * can, no instruction of their own to measure). */
static double peak_macs(long steps, int int8) {
    (void)int8;
    volatile float seed = 1e-3f;
    float w = seed, c[8] = {0};
    for (long n = 0; n < steps; n++)
        for (int i = 0; i < 8; i++) c[i] = fmaf(w, w, c[i]);
    float s = 0;
    for (int i = 0; i < 8; i++) s += c[i];
    seed = s;
    return steps * 8.0;
}

const hv_mm_kernels hv_mm_scalar = HV_MM_KERNEL_TABLE("scalar");
