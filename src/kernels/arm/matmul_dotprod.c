/* DotProd kernels (Armv8.2-A's sdot: four 4-byte dot products into int32
 * lanes in one instruction): the table "dotprod", the NEON table with the
 * integer dot products replaced. sdot computes exactly the sum of 4
 * products that matmul_impl.h's q8_0 dot and x8 dot take per lane, and the
 * int8 GEMM's per-block sums (its u = q + 64 in [1, 127] are signed bytes
 * too), so the results are the portable kernels' bits. Compiled for
 * armv8.2-a+dotprod with a target attribute; called only where Linux
 * reports asimddp (cpu.c). */
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_NEON

#include <pthread.h>
#include <string.h>

#include "kernels/arm/matmul_neon.h"

#define TARGET         __attribute__((target("arch=armv8.2-a+dotprod")))
#define INLINE         HV_NEON_INLINE TARGET
/* what the loop nests (nest_*.h) expand with */
#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL TARGET static

/* Lanes j < 4: the sum of w[t] * x[t] for t = 4j .. 4j + 3 (sdot). */
INLINE int32x4_t dot4_sdot(int8x16_t w, int8x16_t x) { return vdotq_s32(vdupq_n_s32(0), w, x); }

TARGET static void gemv_q8_0(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                             int cols) {
    hv_neon_gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 0, dot4_sdot);
}

TARGET static void gemv_q4_0(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                             int cols) {
    hv_neon_gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 1, dot4_sdot);
}

/* One x8 block: per payload word k (rows 0-3 and 4-7 in two registers)
 * an sdot by element with the activation's bytes 4k .. 4k + 3, lane k % 4
 * of the register holding x[16 (k / 4) ..]; q4_0 word k's low nibbles
 * take x[4k ..], its high ones x[16 + 4k ..]. */
INLINE void x8_block(const uint8_t *qb, const int8_t *x, int q4, int32x4_t p[2]) {
    int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int32x4_t lo = vdupq_n_s32(0), hi = lo;
    if (q4) {
#define Q4_WORD(k)                                                                                 \
    do {                                                                                           \
        lo = vdotq_laneq_s32(lo, hv_neon_q4_part(qb + 32 * k, 0), x0, k);                          \
        hi = vdotq_laneq_s32(hi, hv_neon_q4_part(qb + 32 * k + 16, 0), x0, k);                     \
        lo = vdotq_laneq_s32(lo, hv_neon_q4_part(qb + 32 * k, 1), x1, k);                          \
        hi = vdotq_laneq_s32(hi, hv_neon_q4_part(qb + 32 * k + 16, 1), x1, k);                     \
    } while (0)
        Q4_WORD(0);
        Q4_WORD(1);
        Q4_WORD(2);
        Q4_WORD(3);
#undef Q4_WORD
    } else {
        const int8_t *w = (const int8_t *)qb;
#define Q8_WORD(k, xr, l)                                                                          \
    do {                                                                                           \
        lo = vdotq_laneq_s32(lo, vld1q_s8(w + 32 * k), xr, l);                                     \
        hi = vdotq_laneq_s32(hi, vld1q_s8(w + 32 * k + 16), xr, l);                                \
    } while (0)
        Q8_WORD(0, x0, 0);
        Q8_WORD(1, x0, 1);
        Q8_WORD(2, x0, 2);
        Q8_WORD(3, x0, 3);
        Q8_WORD(4, x1, 0);
        Q8_WORD(5, x1, 1);
        Q8_WORD(6, x1, 2);
        Q8_WORD(7, x1, 3);
#undef Q8_WORD
    }
    p[0] = lo;
    p[1] = hi;
}

#include "kernels/arm/gemv_x8.h"

/* The int8 GEMM's block sums (arm/tile_q8.h): per step of 4
 * columns, the half's two vectors of 4 weight rows against each
 * activation row's word, one sdot each; rows 0-3's words are lanes of one
 * load, row 4's a load repeated. */
INLINE void q8_sums(const uint8_t *a, const int8_t *b, int32x4_t s[HV_GEMM_Q8_MR][2]) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    for (int i = 0; i < MR; i++) s[i][0] = s[i][1] = vdupq_n_s32(0);
    for (int q = 0; q < HV_Q8_BLOCK / 4; q++, a += 4 * MR, b += 4 * NR) {
        int8x16_t w0 = vld1q_s8(b), w1 = vld1q_s8(b + 16);
        int8x16_t x03 = vld1q_s8((const int8_t *)a), x4 = hv_neon_word4(a, 4);
#define ROW(i)                                                                                     \
    do {                                                                                           \
        s[i][0] = vdotq_laneq_s32(s[i][0], w0, x03, i);                                            \
        s[i][1] = vdotq_laneq_s32(s[i][1], w1, x03, i);                                            \
    } while (0)
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
#undef ROW
        s[4][0] = vdotq_s32(s[4][0], w0, x4);
        s[4][1] = vdotq_s32(s[4][1], w1, x4);
    }
}

#include "kernels/arm/tile_q8.h"

/* The probe (see the table): 24 independent chains of sdot (16
 * multiply-accumulates a chain a round); f32 as the NEON table. */
#define PD_STEP(c) vdotq_s32(c, w, x)
TARGET static double peak_macs(long steps, int int8) {
    if (!int8) return hv_mm_neon.peak_macs(steps, 0);
    int8x16_t w = vdupq_n_s8(3), x = vdupq_n_s8(5);
    HV_PROBE(24, int32x4_t, vdupq_n_s32(0), PD_STEP, "+w", 16, );
}

HV_MM_DERIVED_TABLE(dotprod, &hv_mm_neon, .name = "dotprod", .gemv_q8_0 = gemv_q8_0,
                    .gemv_q4_0 = gemv_q4_0, .gemv_q8_0x8 = gemv_q8_0x8, .gemv_q4_0x8 = gemv_q4_0x8,
                    .gemm_tiles_q8 = gemm_tiles_q8, .peak_macs = peak_macs)

const hv_mm_kernels *hv_mm_dotprod(void) { return dotprod(); }

#endif
