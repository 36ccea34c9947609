/* What the NEON kernel tables share (matmul_neon.c, matmul_dotprod.c,
 * matmul_i8mm.c): the loads and sums every f32 kernel uses, and the
 * driver of the q8_0/q4_0 GEMV (the x8 GEMV's micro-kernels are
 * arm/gemv_x8.h, the int8 GEMM tile's nest arm/tile_q8.h), which takes the one part each table does its own way (the exact integer
 * dot of a block: pairs into int16 and int32, sdot or smmla) as a function
 * that is a constant where it is expanded. Static inline, without a
 * target attribute, so that each table's functions inline them under their
 * own. Include after matmul_impl.h, inside HV_MM_HAVE_NEON. */
#ifndef HV_MATMUL_NEON_H
#define HV_MATMUL_NEON_H

#include <arm_neon.h>
#include <string.h>

#include "kernels/matmul_impl.h"

#define HV_NEON_INLINE static inline __attribute__((always_inline))

/* ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)) of lo = a0..a3, hi = a4..a7:
 * matmul_impl.h's sum of 8 lanes. */
HV_NEON_INLINE float hv_neon_hsum8(float32x4_t lo, float32x4_t hi) {
    float32x4_t t = vaddq_f32(lo, hi);
    float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* 8 f32 lanes as two registers, lanes 0-3 and 4-7 (matmul_impl.h's 8
 * lane sums; the x8 GEMV's 8 rows). */
typedef struct {
    float32x4_t lo, hi;
} hv_neon_v8;

HV_NEON_INLINE hv_neon_v8 hv_neon_v8_zero(void) {
    hv_neon_v8 v = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    return v;
}

/* One f16 value widened (fcvt: exact, as hv_f16_to_f32). */
HV_NEON_INLINE float hv_neon_f16(const uint16_t *p) {
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (float)h;
}

/* 4 f16 (bf16 = 0) or bf16 values at p widened to f32, exactly. */
HV_NEON_INLINE float32x4_t hv_neon_load4_half(const uint16_t *p, int bf16) {
    uint16x4_t h = vld1_u16(p);
    if (bf16) return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

/* A block's 32 weight values as two registers (elements 0-15, 16-31):
 * q8_0's q, or q4_0's nibbles - 8 (the low nibbles are elements 0-15). */
HV_NEON_INLINE void hv_neon_block_values(const char *blk, int q4, int8x16_t v[2]) {
    if (q4) {
        uint8x16_t raw = vld1q_u8(((const hv_q4_0_block *)blk)->qs);
        int8x16_t eight = vdupq_n_s8(8);
        v[0] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), eight);
        v[1] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
    } else {
        const int8_t *q = ((const hv_q8_0_block *)blk)->q;
        v[0] = vld1q_s8(q);
        v[1] = vld1q_s8(q + 16);
    }
}

/* Lanes j < 4 of a 16-byte dot: the exact sum of w[t] * x[t] for t = 4j ..
 * 4j + 3. */
typedef int32x4_t (*hv_neon_dot4_fn)(int8x16_t w, int8x16_t x);

/* The q8_0 and q4_0 GEMV (matmul_impl.h's q8_0 dot): 4 weight rows at a
 * time against each activation row, then single rows; per block lane j's
 * exact p from dot4, then acc[j] = fma(d, (float)p, acc[j]) with d = dw *
 * dx, and the sum of the 8 lanes. */
HV_NEON_INLINE void hv_neon_gemv_blocks(float *y, int ldy, const hv_q8_act *a, const char *w,
                                        int n_w, int cols, int q4, hv_neon_dot4_fn dot4) {
    const long bb = q4 ? (long)sizeof(hv_q4_0_block) : (long)sizeof(hv_q8_0_block);
    int nb = cols / HV_Q8_BLOCK;
    long row = bb * nb;
    for (int r = 0; r < n_w;) {
        int R = n_w - r >= 4 ? 4 : 1;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            float32x4_t acc[4][2];
            for (int t = 0; t < 4; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
            for (int b = 0; b < nb; b++) {
                int8x16_t x0 = vld1q_s8(xq + (long)b * HV_Q8_BLOCK);
                int8x16_t x1 = vld1q_s8(xq + (long)b * HV_Q8_BLOCK + 16);
#pragma GCC unroll 4
                for (int t = 0; t < R; t++) {
                    const char *blk = w + (r + t) * row + b * bb;
                    int8x16_t v[2];
                    hv_neon_block_values(blk, q4, v);
                    float d = hv_neon_f16((const uint16_t *)blk) * xd[b];
                    acc[t][0] = vfmaq_n_f32(acc[t][0], vcvtq_f32_s32(dot4(v[0], x0)), d);
                    acc[t][1] = vfmaq_n_f32(acc[t][1], vcvtq_f32_s32(dot4(v[1], x1)), d);
                }
            }
            for (int t = 0; t < R; t++)
                y[(long)i * ldy + r + t] = hv_neon_hsum8(acc[t][0], acc[t][1]);
        }
        r += R;
    }
}

/* A q4_0 x8 payload word's 16 bytes at p (4 rows) as values: the low
 * nibbles (high = 0) or the high ones, minus 8. Word k's low nibbles are
 * values 4k .. 4k + 3, its high ones 16 + 4k ... */
HV_NEON_INLINE int8x16_t hv_neon_q4_part(const uint8_t *p, int high) {
    uint8x16_t raw = vld1q_u8(p);
    uint8x16_t n = high ? vshrq_n_u8(raw, 4) : vandq_u8(raw, vdupq_n_u8(15));
    return vsubq_s8(vreinterpretq_s8_u8(n), vdupq_n_s8(8));
}

/* Activation row i's word of a step (MR x 4 bytes at a), repeated into
 * the 4 lanes. */
HV_NEON_INLINE int8x16_t hv_neon_word4(const uint8_t *a, int i) {
    int32_t word;
    memcpy(&word, a + 4 * i, 4);
    return vreinterpretq_s8_s32(vdupq_n_s32(word));
}

/* 16 bytes of words at p, moved as bits (memcpy: any type's memory). */
HV_NEON_INLINE uint32x4_t hv_neon_load_words(const void *p) {
    uint32x4_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif
