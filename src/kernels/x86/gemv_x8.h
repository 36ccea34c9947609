/* The x86 micro-kernels of the x8 GEMV's nest (nest_gemv_x8.h), shared by
 * the AVX2 and AVX-512 VNNI tables: the accumulator is one ymm register,
 * lane j row j; a step widens the 8 rows' f16 scales in one conversion.
 * Only the block's integer dot product differs per instruction set: the
 * file that includes this header defines, with its own target attributes,
 *
 *   HV_NEST_INLINE, HV_NEST_KERNEL  as nest_gemv_x8.h asks, before
 *               including it;
 *   x8_dot      __m256i x8_dot(const uint8_t *qb, const int8_t *x,
 *               int32_t sum, int q4): lane j = the exact integer dot
 *               product of row j's block (words of 32 bytes at qb: 4 for
 *               q4_0, 8 for q8_0) with the activation block x (32 int8,
 *               sum their sum), q4_0's nibbles taken as q - 8;
 *
 * after including this header, with the word helpers below. */
#ifndef HV_X86_GEMV_X8_H
#define HV_X86_GEMV_X8_H

/* How far ahead the x8 GEMV fetches: one thread alone reads memory at
 * half the rate unless ~8 KB are in flight (measured on the EPYC, 4096 x
 * 1024 q4_0: 4 KB 12-14 GB/s, 8-16 KB 16-19 GB/s with 2 threads). With
 * the T2 hint (the outer caches, as the other GEMVs fetch): a q8_0
 * step's 65 products take 0.85-0.94x the time they take with T0, q4_0's
 * 0.88-0.93x (T1 0.91-1.03x; the next group's block instead, T2,
 * 0.86-0.95x; docs/KERNELS.md, "The x8 layout"). */
#define X8_PREFETCH 8192

/* Word k (of 4) of a q4_0 block at qb: its bytes' low and high nibbles
 * (unsigned, 8 rows' lanes), and the activation bytes 4k..4k+3 and
 * 16+4k..16+4k+3 that they multiply, broadcast. */
HV_NEST_INLINE void x8_q4_word(const uint8_t *qb, const int8_t *x, int k, __m256i *lo, __m256i *hi,
                               __m256i *xlo, __m256i *xhi) {
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i w = _mm256_loadu_si256((const __m256i *)(qb + 32 * k));
    int32_t l, h;
    memcpy(&l, x + 4 * k, 4);
    memcpy(&h, x + 16 + 4 * k, 4);
    *lo = _mm256_and_si256(w, m4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m4);
    *xlo = _mm256_set1_epi32(l);
    *xhi = _mm256_set1_epi32(h);
}

/* Word k (of 8) of a q8_0 block at qb (signed, 8 rows' lanes), and the
 * activation bytes 4k..4k+3 that it multiplies, broadcast, in *xv. */
HV_NEST_INLINE __m256i x8_q8_word(const uint8_t *qb, const int8_t *x, int k, __m256i *xv) {
    int32_t xk;
    memcpy(&xk, x + 4 * k, 4);
    *xv = _mm256_set1_epi32(xk);
    return _mm256_loadu_si256((const __m256i *)(qb + 32 * k));
}

HV_NEST_INLINE __m256i x8_dot(const uint8_t *qb, const int8_t *x, int32_t sum, int q4);

typedef __m256 x8_acc;

HV_NEST_INLINE x8_acc x8_zero(void) { return _mm256_setzero_ps(); }

/* both streams, X8_PREFETCH payload bytes ahead */
HV_NEST_INLINE void x8_fetch(const uint8_t *qb, const uint16_t *d, int b, int words) {
    const char *nq = (const char *)qb + X8_PREFETCH;
    for (int f = 0; f < words * 32; f += 64) _mm_prefetch(nq + f, _MM_HINT_T2);
    if (b % 4 == 0) _mm_prefetch((const char *)d + X8_PREFETCH / 2 / words, _MM_HINT_T2);
}

HV_NEST_INLINE x8_acc x8_step(x8_acc acc, const uint8_t *qb, const int8_t *x, int32_t sum,
                              const uint16_t *d, float dx, int q4) {
    __m256i p = x8_dot(qb, x, sum, q4);
    __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d));
    return _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(dx)), _mm256_cvtepi32_ps(p), acc);
}

HV_NEST_INLINE void x8_store(float *y, x8_acc acc) { _mm256_storeu_ps(y, acc); }

#include "kernels/nest_gemv_x8.h"

#endif
