/* I8MM kernels (Armv8.6-A's smmla: a 2 x 8 by 8 x 2 product of signed
 * bytes into a 2 x 2 block of int32 in one instruction, twice sdot's
 * multiply-accumulates): the table "i8mm", the dotprod table with the int8
 * GEMM's block sums replaced. The sums are exact integers, so the results
 * are the portable kernels' bits. Compiled for armv8.2-a+dotprod+i8mm with
 * a target attribute; called only where Linux reports i8mm (cpu.c).
 *
 * smmla wants each operand row's 8 bytes side by side, and the panels
 * gemm_q8.c packs (shared with the other tables) hold 4 bytes per row per
 * step: two steps' words are interleaved in registers (zip1/zip2 of 32-bit
 * lanes), a permute per two smmla. Panels packed in smmla's order would
 * save those; whether that pays is for an ARM host to measure. */
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_NEON

#include <pthread.h>
#include <string.h>

#include "kernels/arm/matmul_neon.h"

#define TARGET         __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#define INLINE         HV_NEON_INLINE TARGET
/* what the loop nests (nest_*.h) expand with */
#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL TARGET static

/* Two steps' 4-byte words of 4 rows (lanes are rows) as two registers of
 * 2 rows x 8 bytes: rows 0 and 1 (*lo), rows 2 and 3 (*hi). */
INLINE void pair_rows(int8x16_t s0, int8x16_t s1, int8x16_t *lo, int8x16_t *hi) {
    int32x4_t a = vreinterpretq_s32_s8(s0), b = vreinterpretq_s32_s8(s1);
    *lo = vreinterpretq_s8_s32(vzip1q_s32(a, b));
    *hi = vreinterpretq_s8_s32(vzip2q_s32(a, b));
}

/* The int8 GEMM's block sums (arm/tile_q8.h) by smmla: per two
 * steps (8 columns), activation rows 0-1, 2-3 and 4 (beside a copy of
 * itself) against the half's weight rows in pairs, 12 blocks of 2 x 2
 * sums; at the block's end the 2 x 2 blocks become each row's vectors. */
INLINE void q8_sums(const uint8_t *a, const int8_t *b, int32x4_t s[HV_GEMM_Q8_MR][2]) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };
    int32x4_t m[3][4]; /* [rows 0-1, 2-3, 4][weight rows 0-1, 2-3, 4-5, 6-7] */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) m[i][j] = vdupq_n_s32(0);
    for (int q = 0; q < HV_Q8_BLOCK / 4; q += 2, a += 8 * MR, b += 8 * NR) {
        int8x16_t x[3], w[4];
        pair_rows(vld1q_s8((const int8_t *)a), vld1q_s8((const int8_t *)a + 4 * MR), &x[0], &x[1]);
        int32_t r4[2];
        memcpy(&r4[0], a + 16, 4);
        memcpy(&r4[1], a + 4 * MR + 16, 4);
        int32x2_t r4p = vld1_s32(r4);
        x[2] = vreinterpretq_s8_s32(vcombine_s32(r4p, r4p));
        pair_rows(vld1q_s8(b), vld1q_s8(b + 4 * NR), &w[0], &w[1]);
        pair_rows(vld1q_s8(b + 16), vld1q_s8(b + 4 * NR + 16), &w[2], &w[3]);
#pragma GCC unroll 3
        for (int i = 0; i < 3; i++)
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) m[i][j] = vmmlaq_s32(m[i][j], x[i], w[j]);
    }
    /* block [rows 2i, 2i + 1][weight rows 2j, 2j + 1] holds (2i, 2j),
     * (2i, 2j + 1), (2i + 1, 2j), (2i + 1, 2j + 1) */
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < 2; v++) {
            int64x2_t p = vreinterpretq_s64_s32(m[i][2 * v]);
            int64x2_t r = vreinterpretq_s64_s32(m[i][2 * v + 1]);
            s[2 * i][v] = vreinterpretq_s32_s64(vtrn1q_s64(p, r));
            if (2 * i + 1 < MR) s[2 * i + 1][v] = vreinterpretq_s32_s64(vtrn2q_s64(p, r));
        }
}

#include "kernels/arm/tile_q8.h"

/* The probe (see the table): 24 independent chains of smmla (32
 * multiply-accumulates a chain a round); f32 as the NEON table. */
#define PM_STEP(c) vmmlaq_s32(c, w, x)
TARGET static double peak_macs(long steps, int int8) {
    if (!int8) return hv_mm_neon.peak_macs(steps, 0);
    int8x16_t w = vdupq_n_s8(3), x = vdupq_n_s8(5);
    HV_PROBE(24, int32x4_t, vdupq_n_s32(0), PM_STEP, "+w", 32, );
}

HV_MM_DERIVED_TABLE(i8mm, hv_mm_dotprod(), .name = "i8mm", .gemm_tiles_q8 = gemm_tiles_q8,
                    .peak_macs = peak_macs)

const hv_mm_kernels *hv_mm_i8mm(void) { return i8mm(); }

#endif
