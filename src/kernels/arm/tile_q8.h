/* The int8 GEMM's tile nest (hv_mm_kernels' gemm_tiles_q8) for the NEON
 * tables, written once and expanded in each table's file with its block
 * sums. Before including it, a file defines HV_NEST_INLINE and
 * HV_NEST_KERNEL (as nest_gemv_x8.h says) and
 *
 *   q8_sums  void q8_sums(const uint8_t *a, const int8_t *b, int32x4_t
 *            s[HV_GEMM_Q8_MR][2]): the int8 GEMM's exact sums of one block
 *            of half a tile (gemm_q8.c: HV_GEMM_Q8_MR activation rows, 8
 *            weight rows 8h .. 8h + 7): a is the block's activation words
 *            [8][MR][4], b its weight words [8][NR][4] from the half's
 *            first row; s[i][v] gets the sums of activation row i with
 *            weight rows 8h + 4v .. 8h + 4v + 3 (no offset term);
 *
 * and gets the table entry gemm_tiles_q8. */
#ifndef HV_ARM_TILE_Q8_H
#define HV_ARM_TILE_Q8_H

/* Half h of the int8 GEMM's 5 x 16 tile (the halves keep a half's 10
 * float sums, 10 int32 sums and the operands in the 32 registers): per
 * block of 32 columns the int32 sums from `sums` less the offset term
 * (exact, p = sum u w - bc), then each output takes one fma with the
 * product of the two scales; then the bias if any: the scalar kernel's
 * order (matmul_impl.h, gemm_tiles_q8). */
HV_NEST_INLINE void tile_q8_half(int h, int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                                 const float *bd, const int32_t *bc, float *c, long ldc,
                                 int accumulate, const float *bias) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    float32x4_t acc[MR][2];
#pragma GCC unroll 5
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 2; v++)
            acc[i][v] = accumulate ? vld1q_f32(c + i * ldc + 8 * h + 4 * v) : vdupq_n_f32(0.0f);
    for (int blk = 0; blk < nbk; blk++) {
        int32x4_t s[MR][2];
        q8_sums(a + (long)blk * HV_Q8_BLOCK * MR, b + (long)blk * HV_Q8_BLOCK * NR + 32 * h, s);
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

/* gemm_tiles_q8 (matmul_impl.h): the tiles down the activation rows,
 * both halves of each. */
HV_NEST_KERNEL void gemm_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad,
                                  const int8_t *b, const float *bd, const int32_t *bc, float *c,
                                  long ldc, int accumulate, const float *bias) {
    for (int t = 0; t < count; t++)
        for (int h = 0; h < 2; h++)
            tile_q8_half(h, nbk, a + (long)t * nbk * HV_Q8_BLOCK * HV_GEMM_Q8_MR,
                         ad + (long)t * nbk * HV_GEMM_Q8_MR, b, bd, bc,
                         c + (long)t * HV_GEMM_Q8_MR * ldc, ldc, accumulate, bias);
}

#endif
