/* What the NEON kernel tables share (matmul_neon.c, matmul_dotprod.c,
 * matmul_i8mm.c): the loads and sums every f32 kernel uses, and the
 * drivers of the q8_0/q4_0 GEMV, the x8 GEMV and the int8 GEMM's tile,
 * which take the one part each table does its own way (the exact integer
 * dot of a block: pairs into int16 and int32, sdot or smmla) as a function
 * that is a constant where they are expanded. Static inline, without a
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

/* One x8 block's exact dots: the 8 rows of the payload qb (q4: a q4_0
 * payload) against the activation block x, lanes as rows (p[0] rows 0-3,
 * p[1] rows 4-7). */
typedef void (*hv_neon_x8_block_fn)(const uint8_t *qb, const int8_t *x, int q4, int32x4_t p[2]);

/* A q4_0 x8 payload word's 16 bytes at p (4 rows) as values: the low
 * nibbles (high = 0) or the high ones, minus 8. Word k's low nibbles are
 * values 4k .. 4k + 3, its high ones 16 + 4k ... */
HV_NEON_INLINE int8x16_t hv_neon_q4_part(const uint8_t *p, int high) {
    uint8x16_t raw = vld1q_u8(p);
    uint8x16_t n = high ? vshrq_n_u8(raw, 4) : vandq_u8(raw, vdupq_n_u8(15));
    return vsubq_s8(vreinterpretq_s8_u8(n), vdupq_n_s8(8));
}

/* The x8 GEMV (matmul_impl.h's x8 dot), lanes as rows: per block s =
 * fma(dw * dx, (float)p, s) with block's dots. */
HV_NEON_INLINE void hv_neon_gemv_x8(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                                    const uint8_t *wq, int n_w, int cols, int q4,
                                    hv_neon_x8_block_fn block) {
    const int nb = cols / HV_Q8_BLOCK, words = q4 ? 4 : 8;
    for (int g = 0; g < n_w / HV_X8_ROWS; g++) {
        const uint16_t *dg = wd + (long)g * nb * HV_X8_ROWS;
        const uint8_t *qg = wq + (long)g * nb * words * 32;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0;
            for (int b = 0; b < nb; b++) {
                int32x4_t p[2];
                block(qg + (long)b * words * 32, xq + (long)b * HV_Q8_BLOCK, q4, p);
                const uint16_t *d = dg + b * HV_X8_ROWS;
                float32x4_t d0 = vmulq_n_f32(hv_neon_load4_half(d, 0), xd[b]);
                float32x4_t d1 = vmulq_n_f32(hv_neon_load4_half(d + 4, 0), xd[b]);
                acc0 = vfmaq_f32(acc0, d0, vcvtq_f32_s32(p[0]));
                acc1 = vfmaq_f32(acc1, d1, vcvtq_f32_s32(p[1]));
            }
            float *yi = y + (long)i * ldy + g * HV_X8_ROWS;
            vst1q_f32(yi, acc0);
            vst1q_f32(yi + 4, acc1);
        }
    }
}

/* The int8 GEMM's exact sums of one block of half a tile (gemm_q8.c:
 * HV_GEMM_Q8_MR activation rows, 8 weight rows 8h .. 8h + 7): a is the
 * block's activation words [8][MR][4], b its weight words [8][NR][4] from
 * the half's first row; s[i][v] gets the sums of activation row i with
 * weight rows 8h + 4v .. 8h + 4v + 3 (no offset term). */
typedef void (*hv_neon_q8_sums_fn)(const uint8_t *a, const int8_t *b,
                                   int32x4_t s[HV_GEMM_Q8_MR][2]);

/* Half h of the int8 GEMM's 5 x 16 tile (the halves keep a half's 10
 * float sums, 10 int32 sums and the operands in the 32 registers): per
 * block of 32 columns the int32 sums from `sums` less the offset term
 * (exact, p = sum u w - bc), then each output takes one fma with the
 * product of the two scales; then the bias if any: the scalar kernel's
 * order (matmul_impl.h, gemm_tiles_q8). */
HV_NEON_INLINE void hv_neon_tile_q8_half(int h, int nbk, const uint8_t *a, const float *ad,
                                         const int8_t *b, const float *bd, const int32_t *bc,
                                         float *c, long ldc, int accumulate, const float *bias,
                                         hv_neon_q8_sums_fn sums) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    float32x4_t acc[MR][2];
#pragma GCC unroll 5
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++)
            acc[i][v] = accumulate ? vld1q_f32(c + i * ldc + 8 * h + 4 * v) : vdupq_n_f32(0.0f);
    for (int blk = 0; blk < nbk; blk++) {
        int32x4_t s[MR][2];
        sums(a + (long)blk * HV_Q8_BLOCK * MR, b + (long)blk * HV_Q8_BLOCK * NR + 32 * h, s);
        int32x4_t o0 = vld1q_s32(bc + blk * NR + 8 * h), o1 = vld1q_s32(bc + blk * NR + 8 * h + 4);
        float32x4_t d0 = vld1q_f32(bd + blk * NR + 8 * h),
                    d1 = vld1q_f32(bd + blk * NR + 8 * h + 4);
#pragma GCC unroll 5
        for (int i = 0; i < MR; i++) {
            float sx = ad[blk * MR + i];
            float32x4_t p0 = vcvtq_f32_s32(vsubq_s32(s[i][0], o0));
            float32x4_t p1 = vcvtq_f32_s32(vsubq_s32(s[i][1], o1));
            acc[i][0] = vfmaq_f32(acc[i][0], vmulq_n_f32(d0, sx), p0);
            acc[i][1] = vfmaq_f32(acc[i][1], vmulq_n_f32(d1, sx), p1);
        }
    }
#pragma GCC unroll 5
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++) {
            float32x4_t r = acc[i][v];
            if (bias) r = vaddq_f32(r, vld1q_f32(bias + 8 * h + 4 * v));
            vst1q_f32(c + i * ldc + 8 * h + 4 * v, r);
        }
}

/* gemm_tiles_q8 (matmul_impl.h) with a table's block sums: the tiles
 * down the activation rows, both halves of each. */
HV_NEON_INLINE void hv_neon_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad,
                                     const int8_t *b, const float *bd, const int32_t *bc, float *c,
                                     long ldc, int accumulate, const float *bias,
                                     hv_neon_q8_sums_fn sums) {
    for (int t = 0; t < count; t++)
        for (int h = 0; h < 2; h++)
            hv_neon_tile_q8_half(h, nbk, a + (long)t * nbk * HV_Q8_BLOCK * HV_GEMM_Q8_MR,
                                 ad + (long)t * nbk * HV_GEMM_Q8_MR, b, bd, bc,
                                 c + (long)t * HV_GEMM_Q8_MR * ldc, ldc, accumulate, bias, sums);
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

/* The probes (hv_mm_kernels' peak_macs): 24 independent chains X(i) of
 * c##i, which the empty asm keeps from being folded. */
#define HV_NEON_PROBE_LO(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define HV_NEON_PROBE_HI(X) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)
#define HV_NEON_PROBE24(X)  HV_NEON_PROBE_LO(X) HV_NEON_PROBE_HI(X)
#define HV_NEON_KEEP(i)     __asm__ volatile("" : "+w"(c##i));

#endif
