/* NEON kernels (64-bit ARM's Advanced SIMD) for every entry of the kernel
 * table: the table "neon", the full one, which the dotprod and i8mm tables
 * copy and replace entries of. Advanced SIMD is the baseline of every
 * aarch64 target, so this file needs no target attribute; matmul.c picks it
 * where Linux reports asimd (cpu.c). Summation orders: matmul_impl.h; the
 * scalar file is the reference they match bit for bit (docs/KERNELS.md,
 * "NEON kernels").
 *
 * A NEON register holds 4 floats, so matmul_impl.h's 8 lane sums are two
 * registers (lanes 0-3 and 4-7) and each f32 kernel takes twice the AVX2
 * kernel's registers; with 32 of them the tiles keep the AVX2 shapes (6 x
 * 16 f32, 5 x 16 int8). Integer dot products are exact: bytes multiplied
 * into int16 (vmull_s8: |q| <= 128 each, products <= 16384) and added
 * pairwise into int32 (vpaddlq, vpadalq), the order of which cannot matter.
 * No software prefetch: the kernels read their weights as sequential
 * streams, which is what ARM cores' prefetchers follow; the prefetch
 * distances of the x86 kernels were measured on the EPYC, and these wait
 * for an ARM host to be measured on (docs/PERFORMANCE.md). */
#include "kernels/half.h"
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_NEON

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/arm/matmul_neon.h"

#define INLINE         HV_NEON_INLINE
/* what the loop nests (nest_*.h) expand with */
#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL static

/* The rows GEMV's micro-kernels (nest_gemv_rows.h): matmul_impl.h's 8
 * lane sums as two registers each, lanes 0-3 and 4-7, so 4 rows keep 16
 * fma chains in flight. */
typedef hv_neon_v8 v8;

INLINE v8 v8_zero(void) { return hv_neon_v8_zero(); }

INLINE v8 v8_load(const float *p) {
    v8 v = {vld1q_f32(p), vld1q_f32(p + 4)};
    return v;
}

INLINE v8 v8_load_half(const uint16_t *p, int bf16) {
    v8 v = {hv_neon_load4_half(p, bf16), hv_neon_load4_half(p + 4, bf16)};
    return v;
}

INLINE float half1(const uint16_t *p, int bf16) {
    if (bf16) return hv_bf16_to_f32(*p);
    return hv_neon_f16(p);
}

INLINE v8 v8_fma(v8 acc, v8 a, v8 b) {
    v8 v = {vfmaq_f32(acc.lo, a.lo, b.lo), vfmaq_f32(acc.hi, a.hi, b.hi)};
    return v;
}

INLINE v8 v8_add(v8 a, v8 b) {
    v8 v = {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)};
    return v;
}

INLINE float v8_hsum(v8 v) { return hv_neon_hsum8(v.lo, v.hi); }

INLINE void rows_fetch(const char *p, long bytes) { (void)p, (void)bytes; }

#include "kernels/nest_gemv_rows.h"

/* ------------------------------------------------------- q8_0 / q4_0 */

/* Lanes j < 4: the sum of w[t] * x[t] for t = 4j .. 4j + 3, exactly: 16
 * byte products into int16, added in pairs twice into int32. */
INLINE int32x4_t dot4_lanes(int8x16_t w, int8x16_t x) {
    int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    int32x4_t hi = vpaddlq_s16(vmull_high_s8(w, x));
    return vpaddq_s32(lo, hi);
}

static void gemv_q8_0(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                      int cols) {
    hv_neon_gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 0, dot4_lanes);
}

static void gemv_q4_0(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                      int cols) {
    hv_neon_gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 1, dot4_lanes);
}

/* The x8 GEMV (matmul_impl.h): lane j of the two accumulators is row j of
 * the group, so a block needs no horizontal sums. Per 4-byte word of the 8
 * rows (two registers, rows 0-3 and 4-7) against the activation's 4 bytes
 * repeated, the products go into int16 and pairwise into per-row pair sums
 * (s[0..3]: rows 0-1, 2-3, 4-5, 6-7, two lanes each), which the block's
 * end adds into each row's exact dot. q4_0 payload word k holds values 4k
 * .. 4k + 3 as low nibbles and 16 + 4k .. as high ones. */
INLINE void x8_word(int8x16_t w_lo, int8x16_t w_hi, const int8_t *x4, int32x4_t s[4]) {
    int32_t word;
    memcpy(&word, x4, 4);
    int8x16_t xv = vreinterpretq_s8_s32(vdupq_n_s32(word));
    s[0] = vpadalq_s16(s[0], vmull_s8(vget_low_s8(w_lo), vget_low_s8(xv)));
    s[1] = vpadalq_s16(s[1], vmull_high_s8(w_lo, xv));
    s[2] = vpadalq_s16(s[2], vmull_s8(vget_low_s8(w_hi), vget_low_s8(xv)));
    s[3] = vpadalq_s16(s[3], vmull_high_s8(w_hi, xv));
}

/* Row j's exact block dot of the 8 rows of the x8 payload qb against the
 * activation block x, lanes as rows: p[0] rows 0-3, p[1] rows 4-7. */
INLINE void x8_block(const uint8_t *qb, const int8_t *x, int q4, int32x4_t p[2]) {
    int32x4_t s[4];
    for (int t = 0; t < 4; t++) s[t] = vdupq_n_s32(0);
    if (q4) {
        for (int k = 0; k < 4; k++) {
            const uint8_t *w = qb + 32 * k;
            x8_word(hv_neon_q4_part(w, 0), hv_neon_q4_part(w + 16, 0), x + 4 * k, s);
            x8_word(hv_neon_q4_part(w, 1), hv_neon_q4_part(w + 16, 1), x + 16 + 4 * k, s);
        }
    } else {
        for (int k = 0; k < 8; k++) {
            const int8_t *w = (const int8_t *)qb + 32 * k;
            x8_word(vld1q_s8(w), vld1q_s8(w + 16), x + 4 * k, s);
        }
    }
    p[0] = vpaddq_s32(s[0], s[1]);
    p[1] = vpaddq_s32(s[2], s[3]);
}

#include "kernels/arm/gemv_x8.h"

/* ------------------------------------------------------------ r64 */

/* The r64 GEMV's micro-kernel (nest_gemv_r64.h): Q = 2 g8 groups of 4
 * rows of one block (lanes are rows), from blk against activation row x;
 * per column pair the even column's fma comes first, so each output is the
 * scalar chain. */
INLINE void r64_rows(float *y, const float *x, const uint32_t *blk, int cols, int g8) {
    const int Q = 2 * g8;
    const uint32x4_t high = vdupq_n_u32(0xFFFF0000u);
    float32x4_t acc[HV_R64_ROWS / 4];
#pragma GCC unroll 16
    for (int v = 0; v < Q; v++) acc[v] = vdupq_n_f32(0.0f);
    for (int c = 0; c < cols / 2; c++) {
        const uint32_t *p = blk + (size_t)c * HV_R64_ROWS;
        float xe = x[2 * c], xo = x[2 * c + 1];
#pragma GCC unroll 16
        for (int v = 0; v < Q; v++) {
            uint32x4_t w = vld1q_u32(p + 4 * v);
            acc[v] = vfmaq_n_f32(acc[v], vreinterpretq_f32_u32(vshlq_n_u32(w, 16)), xe);
            acc[v] = vfmaq_n_f32(acc[v], vreinterpretq_f32_u32(vandq_u32(w, high)), xo);
        }
    }
#pragma GCC unroll 16
    for (int v = 0; v < Q; v++) vst1q_f32(y + 4 * v, acc[v]);
}

#include "kernels/nest_gemv_r64.h"

/* ------------------------------------------------------------ widening */

static void widen_f16(float *dst, const uint16_t *src, long count) {
    long i = 0;
    for (; i + 4 <= count; i += 4) vst1q_f32(dst + i, hv_neon_load4_half(src + i, 0));
    for (; i < count; i++) dst[i] = hv_neon_f16(src + i);
}

static void widen_bf16(float *dst, const uint16_t *src, long count) {
    long i = 0;
    for (; i + 4 <= count; i += 4) vst1q_f32(dst + i, hv_neon_load4_half(src + i, 1));
    for (; i < count; i++) dst[i] = hv_bf16_to_f32(src[i]);
}

/* 16 int8 values times d into dst[16]: d * q is exact in f32. */
INLINE void widen16(float *dst, int8x16_t q, float d) {
    int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    vst1q_f32(dst, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
    vst1q_f32(dst + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
    vst1q_f32(dst + 8, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
    vst1q_f32(dst + 12, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
}

static void widen_q8_0(float *dst, const hv_q8_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        int8x16_t v[2];
        hv_neon_block_values((const char *)&src[b], 0, v);
        float d = hv_neon_f16(&src[b].d);
        widen16(dst + b * HV_Q8_BLOCK, v[0], d);
        widen16(dst + b * HV_Q8_BLOCK + 16, v[1], d);
    }
}

static void widen_q4_0(float *dst, const hv_q4_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        int8x16_t v[2];
        hv_neon_block_values((const char *)&src[b], 1, v);
        float d = hv_neon_f16(&src[b].d);
        widen16(dst + b * HV_Q8_BLOCK, v[0], d);
        widen16(dst + b * HV_Q8_BLOCK + 16, v[1], d);
    }
}

/* ------------------------------------------------------------ f32 GEMM */

/* The packed GEMM's 6 x 16 tile: 24 accumulators (4 per activation row),
 * each taking one fma per column in column order (fmla by element of the
 * column's 6 activations), so every output is the scalar kernel's chain. */
INLINE void gemm_tile(int kc, const float *a, const float *b, float *c, long ldc, int accumulate) {
    float32x4_t acc[HV_GEMM_MR][4];
#pragma GCC unroll 6
    for (int i = 0; i < HV_GEMM_MR; i++)
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++)
            acc[i][t] = accumulate ? vld1q_f32(c + i * ldc + 4 * t) : vdupq_n_f32(0.0f);
    for (int k = 0; k < kc; k++, a += HV_GEMM_MR, b += HV_GEMM_NR) {
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8),
                    b3 = vld1q_f32(b + 12);
        float32x4_t x03 = vld1q_f32(a);
        float32x2_t x45 = vld1_f32(a + 4);
#define ROW_Q(i)                                                                                   \
    acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, x03, i);                                            \
    acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, x03, i);                                            \
    acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, x03, i);                                            \
    acc[i][3] = vfmaq_laneq_f32(acc[i][3], b3, x03, i);
#define ROW_D(i, l)                                                                                \
    acc[i][0] = vfmaq_lane_f32(acc[i][0], b0, x45, l);                                             \
    acc[i][1] = vfmaq_lane_f32(acc[i][1], b1, x45, l);                                             \
    acc[i][2] = vfmaq_lane_f32(acc[i][2], b2, x45, l);                                             \
    acc[i][3] = vfmaq_lane_f32(acc[i][3], b3, x45, l);
        ROW_Q(0) ROW_Q(1) ROW_Q(2) ROW_Q(3) ROW_D(4, 0) ROW_D(5, 1)
#undef ROW_Q
#undef ROW_D
    }
#pragma GCC unroll 6
    for (int i = 0; i < HV_GEMM_MR; i++)
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) vst1q_f32(c + i * ldc + 4 * t, acc[i][t]);
}

#include "kernels/nest_gemm_tiles.h"

/* 4 x 4 transpose of 32-bit lanes, in place (moves bits only). */
INLINE void transpose4(uint32x4_t r[4]) {
    uint32x4_t t0 = vtrn1q_u32(r[0], r[1]), t1 = vtrn2q_u32(r[0], r[1]);
    uint32x4_t t2 = vtrn1q_u32(r[2], r[3]), t3 = vtrn2q_u32(r[2], r[3]);
    r[0] = vreinterpretq_u32_u64(vtrn1q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    r[1] = vreinterpretq_u32_u64(vtrn1q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
    r[2] = vreinterpretq_u32_u64(vtrn2q_u64(vreinterpretq_u64_u32(t0), vreinterpretq_u64_u32(t2)));
    r[3] = vreinterpretq_u32_u64(vtrn2q_u64(vreinterpretq_u64_u32(t1), vreinterpretq_u64_u32(t3)));
}

/* The panels' micro-kernel (nest_gemm_panel.h): 4 x 4 blocks through
 * registers (f32 words moved as bits). */
#define PANEL_T 4
INLINE void panel_block(float *dst, const void *src, long ld, int kind) {
    uint32x4_t r[4];
    for (int i = 0; i < 4; i++) {
        const char *row = (const char *)src + i * ld * kind_bytes(kind);
        r[i] = kind == ROWS_F32
                   ? hv_neon_load_words(row)
                   : vreinterpretq_u32_f32(hv_neon_load4_half((const uint16_t *)row, kind));
    }
    transpose4(r);
    for (int i = 0; i < 4; i++) vst1q_f32(dst + i * HV_GEMM_NR, vreinterpretq_f32_u32(r[i]));
}

#include "kernels/nest_gemm_panel.h"

/* HV_GEMM_MR (6) activation rows into a panel, 4 columns at a time: rows
 * 0-3 transposed, rows 4 and 5 interleaved; each column's 6 floats stored
 * as 4 + 2, so nothing outside dst is written. */
static void gemm_pack_x(float *dst, const float *src, long ld, int kc) {
    enum { MR = HV_GEMM_MR };
    int k = 0;
    for (; k + 4 <= kc; k += 4) {
        uint32x4_t r[4];
        for (int i = 0; i < 4; i++) r[i] = vreinterpretq_u32_f32(vld1q_f32(src + i * ld + k));
        transpose4(r);
        float32x4_t r4 = vld1q_f32(src + 4 * ld + k), r5 = vld1q_f32(src + 5 * ld + k);
        float32x4_t z0 = vzip1q_f32(r4, r5), z1 = vzip2q_f32(r4, r5);
        float32x2_t tail[4] = {vget_low_f32(z0), vget_high_f32(z0), vget_low_f32(z1),
                               vget_high_f32(z1)};
        for (int c = 0; c < 4; c++) {
            float *d = dst + (long)(k + c) * MR;
            vst1q_f32(d, vreinterpretq_f32_u32(r[c]));
            vst1_f32(d + 4, tail[c]);
        }
    }
    for (; k < kc; k++)
        for (int i = 0; i < MR; i++) dst[k * MR + i] = src[i * ld + k];
}

/* ------------------------------------------------------------ int8 GEMM */

/* The int8 GEMM's block sums (arm/tile_q8.h): per step of 4
 * columns, each activation row's word (u = q + 64 in [1, 127]) against
 * the half's two vectors of 4 weight rows, products into int16, added in
 * pairs (<= 2 x 127 x 128: no overflow), then into the int32 sums. */
INLINE void q8_sums(const uint8_t *a, const int8_t *b, int32x4_t s[HV_GEMM_Q8_MR][2]) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    for (int i = 0; i < MR; i++) s[i][0] = s[i][1] = vdupq_n_s32(0);
    for (int q = 0; q < HV_Q8_BLOCK / 4; q++, a += 4 * MR, b += 4 * NR) {
        int8x16_t w0 = vld1q_s8(b), w1 = vld1q_s8(b + 16);
#pragma GCC unroll 5
        for (int i = 0; i < MR; i++) {
            int8x16_t x = hv_neon_word4(a, i);
            int16x8_t p0 =
                vpaddq_s16(vmull_s8(vget_low_s8(w0), vget_low_s8(x)), vmull_high_s8(w0, x));
            int16x8_t p1 =
                vpaddq_s16(vmull_s8(vget_low_s8(w1), vget_low_s8(x)), vmull_high_s8(w1, x));
            s[i][0] = vpadalq_s16(s[i][0], p0);
            s[i][1] = vpadalq_s16(s[i][1], p1);
        }
    }
}

#include "kernels/arm/tile_q8.h"

/* Eight rows at once: each row's 4 bytes of a word summed into its int32
 * lane (pairs twice), exactly; the scales widened by fcvtl. */
static void gemm_x8_terms(const uint16_t *d, const int8_t *words, long stride, float *scale,
                          int32_t *offset) {
    int32x4_t lo = vdupq_n_s32(0), hi = lo;
    for (int k = 0; k < 8; k++) {
        lo = vpadalq_s16(lo, vpaddlq_s8(vld1q_s8(words + k * stride)));
        hi = vpadalq_s16(hi, vpaddlq_s8(vld1q_s8(words + k * stride + 16)));
    }
    vst1q_s32(offset, vshlq_n_s32(lo, 6));
    vst1q_s32(offset + 4, vshlq_n_s32(hi, 6));
    vst1q_f32(scale, hv_neon_load4_half(d, 0));
    vst1q_f32(scale + 4, hv_neon_load4_half(d + 4, 0));
}

/* One block rounded to `levels` steps each side (quantize_levels in
 * matmul_scalar.c, bit for bit: the same IEEE division, and fcvtns rounds
 * to nearest even as rintf does), stored as bytes q + offset. */
INLINE float quantize_block(const float *x, int levels, int8_t offset, int8_t out[HV_Q8_BLOCK]) {
    float32x4_t v[8], amax = vdupq_n_f32(0.0f);
    uint32x4_t fin = vdupq_n_u32(~0u);
    const float32x4_t inf = vdupq_n_f32(INFINITY);
    for (int t = 0; t < 8; t++) {
        v[t] = vld1q_f32(x + 4 * t);
        float32x4_t a = vabsq_f32(v[t]);
        fin = vandq_u32(fin, vcltq_f32(a, inf)); /* false for inf and NaN */
        amax = vmaxq_f32(amax, a);
    }
    int finite = vminvq_u32(fin) != 0;
    float d = finite ? vmaxvq_f32(amax) / (float)levels : NAN;
    if (finite && d < FLT_MIN) d = 0.0f;
    if (!(d > 0.0f)) {
        memset(out, offset, HV_Q8_BLOCK);
        return d;
    }
    float32x4_t vd = vdupq_n_f32(d);
    int32x4_t hi = vdupq_n_s32(levels), lo = vdupq_n_s32(-levels);
    int16x8_t h[4];
    for (int t = 0; t < 4; t++) {
        int32x4_t q0 = vcvtnq_s32_f32(vdivq_f32(v[2 * t], vd));
        int32x4_t q1 = vcvtnq_s32_f32(vdivq_f32(v[2 * t + 1], vd));
        q0 = vminq_s32(vmaxq_s32(q0, lo), hi);
        q1 = vminq_s32(vmaxq_s32(q1, lo), hi);
        h[t] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
    }
    int8x16_t o = vdupq_n_s8(offset);
    vst1q_s8(out, vaddq_s8(vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])), o));
    vst1q_s8(out + 16, vaddq_s8(vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])), o));
    return d;
}

static float quantize_q7(const float *x, uint8_t u[HV_Q8_BLOCK]) {
    return quantize_block(x, 63, 64, (int8_t *)u);
}

static float quantize_q8(const float *x, int8_t q[HV_Q8_BLOCK]) {
    return quantize_block(x, 127, 0, q);
}

/* ------------------------------------------------------------ attention */

/* The attention's micro-kernels (nest_attn.h). */
INLINE v8 v8_set1(float x) {
    v8 v = {vdupq_n_f32(x), vdupq_n_f32(x)};
    return v;
}

INLINE void v8_store(float *p, v8 v) {
    vst1q_f32(p, v.lo);
    vst1q_f32(p + 4, v.hi);
}

#include "kernels/nest_attn.h"

/* f16 with round to nearest even (fcvtn, under the default rounding mode),
 * finite values beyond f16's range clamped to +-65504 first (fmax/fmin keep
 * a NaN a NaN): as hv_f32_to_f16 after the same clamp. */
static void narrow_f16(uint16_t *dst, const float *src, long count) {
    const float32x4_t hi = vdupq_n_f32(65504.0f), lo = vdupq_n_f32(-65504.0f);
    long i = 0;
    for (; i + 4 <= count; i += 4) {
        float32x4_t v = vminq_f32(vmaxq_f32(vld1q_f32(src + i), lo), hi);
        vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(v)));
    }
    for (; i < count; i++) dst[i] = hv_f32_to_f16_sat(src[i]);
}

/* sgemm_nn (matmul_impl.h) as the AVX2 table does it: strips of 16
 * columns of b, blocks of NN_KC of its rows copied into a contiguous
 * panel (zeros past the last column), so that the loads are sequential
 * and a tail of rows or columns keeps the tile's independent chains. */
#define NN_KC 256

/* R rows (1 to 6) of a against the panel's 16 columns in four registers
 * over kc of its rows, each output its fma chain over t in order (fmla by
 * the broadcast a value: fma(a, b, acc), the scalar kernel's rounding),
 * carried on from c after the first block; cols of them stored. */
INLINE void nn_tile(int R, int kc, const float *a, long lda, const float *panel, float *c, long ldc,
                    int cols, int first) {
    float32x4_t acc[6][4];
    float tmp[16];
    for (int i = 0; i < R; i++) {
        const float *ci = c + i * ldc;
        if (!first && cols < 16) {
            memset(tmp, 0, sizeof tmp);
            memcpy(tmp, ci, (size_t)cols * sizeof *tmp);
            ci = tmp;
        }
        for (int v = 0; v < 4; v++) acc[i][v] = first ? vdupq_n_f32(0.0f) : vld1q_f32(ci + 4 * v);
    }
    for (int t = 0; t < kc; t++) {
        float32x4_t w[4];
        for (int v = 0; v < 4; v++) w[v] = vld1q_f32(panel + t * 16 + 4 * v);
        for (int i = 0; i < R; i++) {
            float x = a[i * lda + t];
            for (int v = 0; v < 4; v++) acc[i][v] = vfmaq_n_f32(acc[i][v], w[v], x);
        }
    }
    for (int i = 0; i < R; i++) {
        float *ci = cols == 16 ? c + i * ldc : tmp;
        for (int v = 0; v < 4; v++) vst1q_f32(ci + 4 * v, acc[i][v]);
        if (cols < 16) memcpy(c + i * ldc, tmp, (size_t)cols * sizeof *tmp);
    }
}

static void sgemm_nn(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
                     float *c, long ldc) {
    float panel[NN_KC * 16];
    if (k == 0) { /* no chain: every output 0 */
        for (int i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
        return;
    }
    for (int j = 0; j < n; j += 16) {
        int cols = n - j < 16 ? n - j : 16;
        for (int t0 = 0; t0 < k; t0 += NN_KC) {
            int kc = k - t0 < NN_KC ? k - t0 : NN_KC, first = t0 == 0;
            for (int t = 0; t < kc; t++) {
                float *p = panel + t * 16;
                memcpy(p, b + (long)(t0 + t) * ldb + j, (size_t)cols * sizeof *p);
                if (cols < 16) memset(p + cols, 0, (size_t)(16 - cols) * sizeof *p);
            }
            const float *at = a + t0;
            float *cj = c + j;
            int i = 0;
            for (; i + 6 <= m; i += 6)
                nn_tile(6, kc, at + i * lda, lda, panel, cj + i * ldc, ldc, cols, first);
            at += i * lda, cj += i * ldc;
            switch (m - i) { /* the last rows as one tile, R a constant */
                case 5: nn_tile(5, kc, at, lda, panel, cj, ldc, cols, first); break;
                case 4: nn_tile(4, kc, at, lda, panel, cj, ldc, cols, first); break;
                case 3: nn_tile(3, kc, at, lda, panel, cj, ldc, cols, first); break;
                case 2: nn_tile(2, kc, at, lda, panel, cj, ldc, cols, first); break;
                case 1: nn_tile(1, kc, at, lda, panel, cj, ldc, cols, first); break;
                default: break;
            }
        }
    }
}

/* The probe (see the table): independent chains of the tiles'
 * instructions on registers, 24 of fmla on 4 lanes, or 12 of the int8
 * route's smull + smull2 + addp + sadalp (16 multiply-accumulates a chain
 * a round; the weights pass an empty asm each round, so that the products
 * are not hoisted out of the loop). */
#define PI_STEP(c)                                                                                 \
    vpadalq_s16(c, vpaddq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vmull_high_s8(w, x)))
#define PF_STEP(c) vfmaq_f32(c, wf, xf)
static double peak_macs(long steps, int int8) {
    int8x16_t w = vdupq_n_s8(3), x = vdupq_n_s8(5);
    float32x4_t wf = vdupq_n_f32(0.5f), xf = vdupq_n_f32(1e-3f);
    if (int8)
        HV_PROBE(12, int32x4_t, vdupq_n_s32(0), PI_STEP, "+w", 16, __asm__ volatile("" : "+w"(w)));
    HV_PROBE(24, float32x4_t, vdupq_n_f32(0.0f), PF_STEP, "+w", 4, );
}

const hv_mm_kernels hv_mm_neon = HV_MM_KERNEL_TABLE("neon");

#endif
