/* The int8 GEMM's 5 x 16 tile on ymm registers (hv_mm_kernels'
 * gemm_tiles_q8), shared by the AVX2 and AVX-VNNI tables: per block of 32
 * columns, 10 int32 accumulators (two per activation row), started at
 * minus the offset term (exact, so the same p as the scalar kernel's
 * subtraction after the sums, without a pass over the accumulators), take
 * 8 steps of 4 columns: one broadcast 32-bit word of activation bytes per
 * row against two vectors of weight bytes; then each output takes one fma
 * with the product of the two scales, as the scalar kernel does. Before
 * including it, a file defines HV_NEST_INLINE and HV_NEST_KERNEL (as
 * nest_gemv_x8.h says) and
 *
 *   q8_quad   __m256i q8_quad(__m256i s, __m256i x, __m256i w): s plus, per
 *             int32 lane, the exact sum of the 4 products of the unsigned
 *             bytes of x (u = q + 64 <= 127) with the signed bytes of w;
 *   q8_order  void q8_order(__m256i *s0, __m256i *s1): after a row's two
 *             steps, an empty asm or nothing, for the order the file's
 *             compiler needs (see its comment);
 *
 * and gets the table entry gemm_tiles_q8. (The empty asm on each row's
 * broadcast keeps GCC from hoisting every row's broadcast ahead and
 * spilling the sums.) */
#ifndef HV_X86_TILE_Q8_H
#define HV_X86_TILE_Q8_H

HV_NEST_INLINE void tile_q8(int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                            const float *bd, const int32_t *bc, float *c, long ldc, int accumulate,
                            const float *bias) {
    enum { QMR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    __m256 acc[QMR][2];
    for (int i = 0; i < QMR; i++)
        for (int v = 0; v < 2; v++)
            acc[i][v] = accumulate ? _mm256_loadu_ps(c + i * ldc + 8 * v) : _mm256_setzero_ps();
    for (int blk = 0; blk < nbk; blk++) {
        const __m256i zero = _mm256_setzero_si256();
        __m256i o0 = _mm256_sub_epi32(zero, _mm256_loadu_si256((const __m256i *)(bc + blk * NR)));
        __m256i o1 =
            _mm256_sub_epi32(zero, _mm256_loadu_si256((const __m256i *)(bc + blk * NR + 8)));
        __m256i s[QMR][2];
        for (int i = 0; i < QMR; i++) s[i][0] = o0, s[i][1] = o1;
        for (int q = 0; q < HV_Q8_BLOCK / 4; q++, a += 4 * QMR, b += 4 * NR) {
            __m256i w0 = _mm256_loadu_si256((const __m256i *)b);
            __m256i w1 = _mm256_loadu_si256((const __m256i *)(b + 32));
#pragma GCC unroll 5
            for (int i = 0; i < QMR; i++) {
                int32_t word;
                memcpy(&word, a + 4 * i, 4);
                __m256i x = _mm256_set1_epi32(word);
                __asm__ volatile("" : "+x"(x));
                s[i][0] = q8_quad(s[i][0], x, w0);
                s[i][1] = q8_quad(s[i][1], x, w1);
                q8_order(&s[i][0], &s[i][1]);
            }
        }
        __m256 d0 = _mm256_loadu_ps(bd + blk * NR), d1 = _mm256_loadu_ps(bd + blk * NR + 8);
        for (int i = 0; i < QMR; i++) {
            __m256 sx = _mm256_set1_ps(ad[blk * QMR + i]);
            acc[i][0] =
                _mm256_fmadd_ps(_mm256_mul_ps(d0, sx), _mm256_cvtepi32_ps(s[i][0]), acc[i][0]);
            acc[i][1] =
                _mm256_fmadd_ps(_mm256_mul_ps(d1, sx), _mm256_cvtepi32_ps(s[i][1]), acc[i][1]);
        }
    }
    for (int i = 0; i < QMR; i++)
        for (int v = 0; v < 2; v++) {
            __m256 r = acc[i][v];
            if (bias) r = _mm256_add_ps(r, _mm256_loadu_ps(bias + 8 * v));
            _mm256_storeu_ps(c + i * ldc + 8 * v, r);
        }
}

/* Tiles down the activation rows, one call for a pass (see the table). */
HV_NEST_KERNEL void gemm_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad,
                                  const int8_t *b, const float *bd, const int32_t *bc, float *c,
                                  long ldc, int accumulate, const float *bias) {
    for (int t = 0; t < count; t++)
        tile_q8(nbk, a + (long)t * nbk * HV_Q8_BLOCK * HV_GEMM_Q8_MR,
                ad + (long)t * nbk * HV_GEMM_Q8_MR, b, bd, bc, c + t * HV_GEMM_Q8_MR * ldc, ldc,
                accumulate, bias);
}

#endif
