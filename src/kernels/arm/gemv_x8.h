/* The NEON micro-kernels of the x8 GEMV's nest (nest_gemv_x8.h), shared by
 * the neon and dotprod tables: the accumulator is two registers, rows 0-3
 * and 4-7; a step widens the 8 rows' f16 scales by fcvtl; nothing is
 * fetched ahead (the weights are sequential streams, which ARM cores'
 * prefetchers follow). Only the block's integer dot products differ per
 * instruction set: the file that includes this header defines, with its
 * own target attributes, HV_NEST_INLINE and HV_NEST_KERNEL (as
 * nest_gemv_x8.h asks) and, before including it,
 *
 *   x8_block  void x8_block(const uint8_t *qb, const int8_t *x, int q4,
 *             int32x4_t p[2]): the exact dots of the 8 rows of the payload
 *             qb (q4: a q4_0 payload) with the activation block x, lanes as
 *             rows (p[0] rows 0-3, p[1] rows 4-7). */
#ifndef HV_ARM_GEMV_X8_H
#define HV_ARM_GEMV_X8_H

typedef hv_neon_v8 x8_acc;

HV_NEST_INLINE x8_acc x8_zero(void) { return hv_neon_v8_zero(); }

HV_NEST_INLINE void x8_fetch(const uint8_t *qb, const uint16_t *d, int b, int words) {
    (void)qb, (void)d, (void)b, (void)words;
}

HV_NEST_INLINE x8_acc x8_step(x8_acc acc, const uint8_t *qb, const int8_t *x, int32_t sum,
                              const uint16_t *d, float dx, int q4) {
    int32x4_t p[2];
    (void)sum; /* x8_block takes q4_0's values as q - 8 itself */
    x8_block(qb, x, q4, p);
    float32x4_t d0 = vmulq_n_f32(hv_neon_load4_half(d, 0), dx);
    float32x4_t d1 = vmulq_n_f32(hv_neon_load4_half(d + 4, 0), dx);
    acc.lo = vfmaq_f32(acc.lo, d0, vcvtq_f32_s32(p[0]));
    acc.hi = vfmaq_f32(acc.hi, d1, vcvtq_f32_s32(p[1]));
    return acc;
}

HV_NEST_INLINE void x8_store(float *y, x8_acc acc) {
    vst1q_f32(y, acc.lo);
    vst1q_f32(y + 4, acc.hi);
}

#include "kernels/nest_gemv_x8.h"

#endif
