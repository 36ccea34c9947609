/* AVX-512 kernels (F, BW, DQ, VL) and their VNNI variants: the tables
 * "avx512" and "avx512_vnni", each the AVX2 table with the entries that
 * gain from 512-bit registers replaced (matmul_impl.h has the contract and
 * the summation orders, which every table keeps, so every table gives the
 * portable kernels' bits; docs/KERNELS.md, "Kernel tables").
 *
 * The packed GEMM's panels keep their layout ([kc][6] activations, [kc][16]
 * weights): one zmm register holds a weight panel's 16 rows of a column,
 * and a tile takes two activation panels (12 rows) against one or two
 * weight panels, so that 24 accumulators hide the FMA latency on 32
 * registers where AVX2's 6 x 16 tile had 12 on 16. The int8 GEMM's 5 x 16
 * tile becomes 5 x 32 (two weight panels) with vpdpbusd doing the work of
 * vpmaddubsw + vpmaddwd + vpaddd in one instruction. */
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_AVX2

#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define TARGET_VNNI                                                                                \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE      static inline __attribute__((always_inline)) TARGET
#define INLINE_VNNI static inline __attribute__((always_inline)) TARGET_VNNI

enum { MR = HV_GEMM_MR, NR = HV_GEMM_NR, QMR = HV_GEMM_Q8_MR };

/* ------------------------------------------------------------ f32 GEMM */

/* R activation rows (6 or 12: one or two panels, a0 and a1) against NP
 * (1 or 2) weight panels (b and b + kc * NR): acc[i][p] is row i's 16
 * outputs of panel p, one fma per column in column order, from zero or
 * from c, so every output is the chain of matmul_impl.h. R and NP are
 * constants where this is inlined, so the loops unroll and the
 * accumulators stay in registers (24 of 32 at most). */
INLINE void tile(int R, int NP, int kc, const float *a0, const float *a1, const float *b, float *c,
                 long ldc, int accumulate) {
    __m512 acc[12][2];
    const float *b1 = b + (long)kc * NR;
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++)
            acc[i][p] = accumulate ? _mm512_loadu_ps(c + i * ldc + p * NR) : _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        __m512 w0 = _mm512_loadu_ps(b + (long)k * NR);
        __m512 w1 = NP > 1 ? _mm512_loadu_ps(b1 + (long)k * NR) : w0;
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            const float *a = i < MR ? a0 + (long)k * MR + i : a1 + (long)k * MR + i - MR;
            __m512 x = _mm512_set1_ps(*a);
            acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
            if (NP > 1) acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) _mm512_storeu_ps(c + i * ldc + p * NR, acc[i][p]);
}

/* count tiles of MR rows (panel t at a + t * kc * MR, outputs from c + t *
 * MR * ldc), two at a time, then a last one alone. */
INLINE void tiles(int NP, int count, int kc, const float *a, const float *b, float *c, long ldc,
                  int accumulate) {
    const long step = (long)kc * MR;
    int t = 0;
    for (; t + 2 <= count; t += 2)
        tile(12, NP, kc, a + t * step, a + (t + 1) * step, b, c + (long)t * MR * ldc, ldc,
             accumulate);
    if (t < count) tile(6, NP, kc, a + t * step, NULL, b, c + (long)t * MR * ldc, ldc, accumulate);
}

TARGET static void gemm_tiles(int count, int kc, const float *a, const float *b, float *c, long ldc,
                              int accumulate) {
    tiles(1, count, kc, a, b, c, ldc, accumulate);
}

TARGET static void gemm_tiles2(int count, int kc, const float *a, const float *b, float *c,
                               long ldc, int accumulate) {
    tiles(2, count, kc, a, b, c, ldc, accumulate);
}

/* ------------------------------------------------------------ int8 GEMM */

/* The int8 GEMM's tile (gemm_q8.c) over NP (1 or 2) weight panels, panel
 * bytes apart, and R = QMR activation rows (one panel) or 2 * QMR (two,
 * a0 and a1, when NP is 1, so that a tile has 10 sums in flight either
 * way): per block of 32 columns the int32 sums start at minus the offset
 * term (as the AVX2 tile's), take 8 vpdpbusd (u = q + 64 unsigned by the
 * signed weights, quads into int32, exact), then each output takes one
 * fma with the product of the two scales: the scalar kernel's order. */
INLINE_VNNI void tile_q8(int R, int NP, int nbk, const uint8_t *a0, const float *ad0,
                         const uint8_t *a1, const float *ad1, const int8_t *b, const float *bd,
                         const int32_t *bc, long panel, float *c, long ldc, int accumulate,
                         const float *bias) {
    __m512 acc[2 * QMR][2];
    const int8_t *bp[2] = {b, b + panel};
    const float *bdp[2] = {bd, (const float *)((const char *)bd + panel)};
    const int32_t *bcp[2] = {bc, (const int32_t *)((const char *)bc + panel)};
#pragma GCC unroll 10
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++)
            acc[i][p] = accumulate ? _mm512_loadu_ps(c + i * ldc + p * NR) : _mm512_setzero_ps();
    for (int blk = 0; blk < nbk; blk++) {
        __m512i s[2 * QMR][2], off[2];
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++)
            off[p] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                      _mm512_loadu_si512(bcp[p] + (long)blk * NR));
#pragma GCC unroll 10
        for (int i = 0; i < R; i++)
#pragma GCC unroll 2
            for (int p = 0; p < NP; p++) s[i][p] = off[p];
        const uint8_t *x0 = a0 + (long)blk * 32 * QMR, *x1 = a1 ? a1 + (long)blk * 32 * QMR : NULL;
        for (int q = 0; q < HV_Q8_BLOCK / 4; q++) {
            __m512i w[2];
#pragma GCC unroll 2
            for (int p = 0; p < NP; p++)
                w[p] = _mm512_loadu_si512(bp[p] + ((long)blk * 8 + q) * 4 * NR);
#pragma GCC unroll 10
            for (int i = 0; i < R; i++) {
                const uint8_t *xa = i < QMR ? x0 + (q * QMR + i) * 4 : x1 + (q * QMR + i - QMR) * 4;
                int32_t word;
                memcpy(&word, xa, 4);
                __m512i x = _mm512_set1_epi32(word);
#pragma GCC unroll 2
                for (int p = 0; p < NP; p++) s[i][p] = _mm512_dpbusd_epi32(s[i][p], x, w[p]);
            }
        }
        __m512 d[2];
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) d[p] = _mm512_loadu_ps(bdp[p] + (long)blk * NR);
#pragma GCC unroll 10
        for (int i = 0; i < R; i++) {
            float xs = i < QMR ? ad0[blk * QMR + i] : ad1[blk * QMR + i - QMR];
            __m512 sx = _mm512_set1_ps(xs);
#pragma GCC unroll 2
            for (int p = 0; p < NP; p++)
                acc[i][p] = _mm512_fmadd_ps(_mm512_mul_ps(d[p], sx), _mm512_cvtepi32_ps(s[i][p]),
                                            acc[i][p]);
        }
    }
#pragma GCC unroll 10
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) {
            __m512 v = acc[i][p];
            if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + p * NR));
            _mm512_storeu_ps(c + i * ldc + p * NR, v);
        }
}

/* count tiles of QMR rows down the activations against one weight panel
 * (two activation panels a tile, then a last one alone) or two. */
INLINE_VNNI void tiles_q8(int NP, int count, int nbk, const uint8_t *a, const float *ad,
                          const int8_t *b, const float *bd, const int32_t *bc, long panel, float *c,
                          long ldc, int accumulate, const float *bias) {
    const long astep = (long)nbk * HV_Q8_BLOCK * QMR, dstep = (long)nbk * QMR;
    int t = 0;
    if (NP == 1)
        for (; t + 2 <= count; t += 2)
            tile_q8(2 * QMR, 1, nbk, a + t * astep, ad + t * dstep, a + (t + 1) * astep,
                    ad + (t + 1) * dstep, b, bd, bc, panel, c + (long)t * QMR * ldc, ldc,
                    accumulate, bias);
    for (; t < count; t++)
        tile_q8(QMR, NP, nbk, a + t * astep, ad + t * dstep, NULL, NULL, b, bd, bc, panel,
                c + (long)t * QMR * ldc, ldc, accumulate, bias);
}

TARGET_VNNI static void gemm_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad,
                                      const int8_t *b, const float *bd, const int32_t *bc, float *c,
                                      long ldc, int accumulate, const float *bias) {
    tiles_q8(1, count, nbk, a, ad, b, bd, bc, 0, c, ldc, accumulate, bias);
}

TARGET_VNNI static void gemm_tiles_q8_2(int count, int nbk, const uint8_t *a, const float *ad,
                                        const int8_t *b, const float *bd, const int32_t *bc,
                                        long panel, float *c, long ldc, int accumulate,
                                        const float *bias) {
    tiles_q8(2, count, nbk, a, ad, b, bd, bc, panel, c, ldc, accumulate, bias);
}

/* ------------------------------------------------------------ GEMV */

/* The r64 GEMV's micro-kernel (nest_gemv_r64.h) 16 rows to a register:
 * V16 groups of 16 rows of one block from blk (its first word) against
 * activation row x, then one of 8 rows if tail8 (g8 groups of 8 in all);
 * lane j of acc[v] is row 16 v + j, and per column pair the even column's
 * fma comes first, so each output is the scalar chain. */
INLINE void r64_rows(float *y, const float *x, const uint32_t *blk, int cols, int g8) {
    const int V16 = g8 / 2, tail8 = g8 % 2;
    const __m512i high = _mm512_set1_epi32((int)0xFFFF0000u);
    const __m256i high8 = _mm256_set1_epi32((int)0xFFFF0000u);
    __m512 acc[HV_R64_ROWS / 16];
    __m256 t = _mm256_setzero_ps();
    for (int v = 0; v < V16; v++) acc[v] = _mm512_setzero_ps();
    for (int c = 0; c < cols / 2; c++) {
        const uint32_t *p = blk + (size_t)c * HV_R64_ROWS;
        __m512 xe = _mm512_set1_ps(x[2 * c]), xo = _mm512_set1_ps(x[2 * c + 1]);
        for (int v = 0; v < V16; v++) {
            __m512i w = _mm512_loadu_si512(p + 16 * v);
            acc[v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(w, 16)), xe, acc[v]);
            acc[v] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(w, high)), xo, acc[v]);
        }
        if (tail8) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(p + 16 * V16));
            t = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(w, 16)),
                                _mm512_castps512_ps256(xe), t);
            t = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(w, high8)),
                                _mm512_castps512_ps256(xo), t);
        }
    }
    for (int v = 0; v < V16; v++) _mm512_storeu_ps(y + 16 * v, acc[v]);
    if (tail8) _mm256_storeu_ps(y + 16 * V16, t);
}

#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL TARGET static
#include "kernels/nest_gemv_r64.h"
#undef HV_NEST_INLINE
#undef HV_NEST_KERNEL

#define HV_NEST_INLINE INLINE_VNNI
#define HV_NEST_KERNEL TARGET_VNNI static
#include "kernels/x86/gemv_x8.h"

/* The x8 GEMV's block (gemv_x8.h) with vpdpbusd on 8 rows' lanes: q8_0
 * multiplies |w| (unsigned) by the activation with w's sign (vpsignb),
 * q4_0 the nibbles (unsigned) by the activation and takes off 8 x the
 * activation block's sum; the sums are the exact integers of the AVX2
 * kernel, so the bits are its. */
INLINE_VNNI __m256i x8_dot(const uint8_t *qb, const int8_t *x, int32_t sum, int q4) {
    __m256i lo, hi, xlo, xhi, xv;
    if (q4) {
        __m256i p = _mm256_set1_epi32(-8 * sum);
        for (int k = 0; k < 4; k++) {
            x8_q4_word(qb, x, k, &lo, &hi, &xlo, &xhi);
            p = _mm256_dpbusd_epi32(p, lo, xlo);
            p = _mm256_dpbusd_epi32(p, hi, xhi);
        }
        return p;
    }
    __m256i p = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        __m256i w = x8_q8_word(qb, x, k, &xv);
        p = _mm256_dpbusd_epi32(p, _mm256_abs_epi8(w), _mm256_sign_epi8(xv, w));
    }
    return p;
}

/* ------------------------------------------------------------ sgemm_nn */

/* sgemm_nn (matmul_impl.h): R rows (12, 4 or 1) of a against NP (1 or 2)
 * vectors of 16 columns of b, the last vector's columns masked by mask;
 * each output its fma chain over t in order. */
INLINE void nn_tile(int R, int NP, int k, const float *a, long lda, const float *b, long ldb,
                    float *c, long ldc, __mmask16 mask) {
    __m512 acc[12][2];
    __mmask16 m0 = NP > 1 ? (__mmask16)0xFFFF : mask;
#pragma GCC unroll 12
    for (int i = 0; i < R; i++)
#pragma GCC unroll 2
        for (int p = 0; p < NP; p++) acc[i][p] = _mm512_setzero_ps();
    for (int t = 0; t < k; t++) {
        __m512 w0 = _mm512_maskz_loadu_ps(m0, b + t * ldb);
        __m512 w1 = NP > 1 ? _mm512_maskz_loadu_ps(mask, b + t * ldb + 16) : w0;
#pragma GCC unroll 12
        for (int i = 0; i < R; i++) {
            __m512 x = _mm512_set1_ps(a[i * lda + t]);
            acc[i][0] = _mm512_fmadd_ps(x, w0, acc[i][0]);
            if (NP > 1) acc[i][1] = _mm512_fmadd_ps(x, w1, acc[i][1]);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < R; i++) {
        if (NP > 1) {
            _mm512_storeu_ps(c + i * ldc, acc[i][0]);
            _mm512_mask_storeu_ps(c + i * ldc + 16, mask, acc[i][1]);
        } else {
            _mm512_mask_storeu_ps(c + i * ldc, mask, acc[i][0]);
        }
    }
}

/* Rows in tiles of 12, then 4, then 1, for NP vectors of columns. */
INLINE void nn_cols(int NP, int m, int k, const float *a, long lda, const float *b, long ldb,
                    float *c, long ldc, __mmask16 mask) {
    int i = 0;
    for (; i + 12 <= m; i += 12)
        nn_tile(12, NP, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, mask);
    for (; i + 4 <= m; i += 4) nn_tile(4, NP, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, mask);
    for (; i < m; i++) nn_tile(1, NP, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc, mask);
}

TARGET static void sgemm_nn(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
                            float *c, long ldc) {
    for (int j = 0; j < n; j += 32) {
        int left = n - j;
        if (left > 16)
            nn_cols(2, m, k, a, lda, b + j, ldb, c + j, ldc,
                    left >= 32 ? (__mmask16)0xFFFF : (__mmask16)((1u << (left - 16)) - 1));
        else
            nn_cols(1, m, k, a, lda, b + j, ldb, c + j, ldc,
                    left == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1));
    }
}

/* ------------------------------------------------------------ probe */

/* The probe (see the table): 24 independent chains on zmm registers, of
 * FMAs (16 multiply-accumulates a chain a round) or, with VNNI, of the
 * int8 tiles' vpdpbusd (64); the int8 route without VNNI is the AVX2
 * table's. */
#define PF_STEP(c) _mm512_fmadd_ps(w, x, c)
TARGET static double peak_macs(long steps, int int8) {
    if (int8) return hv_mm_avx2.peak_macs(steps, 1);
    __m512 w = _mm512_set1_ps(0.5f), x = _mm512_set1_ps(1e-3f);
    HV_PROBE(24, __m512, _mm512_setzero_ps(), PF_STEP, "+v", 16, );
}

#define PV_STEP(c) _mm512_dpbusd_epi32(c, x, w)
TARGET_VNNI static double peak_macs_vnni(long steps, int int8) {
    if (!int8) return peak_macs(steps, 0);
    __m512i w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
    HV_PROBE(24, __m512i, _mm512_setzero_si512(), PV_STEP, "+v", 64, );
}

/* ------------------------------------------------------------ tables */

/* What has no wider version here keeps the AVX2 kernel, which reads
 * memory as fast. */
HV_MM_DERIVED_TABLE(avx512, &hv_mm_avx2, .name = "avx512", .gemm_tiles = gemm_tiles,
                    .gemm_tiles2 = gemm_tiles2, .sgemm_nn = sgemm_nn,
                    .gemv_bf16_r64 = gemv_bf16_r64, .peak_macs = peak_macs)
HV_MM_DERIVED_TABLE(avx512_vnni, avx512(), .name = "avx512_vnni", .gemm_tiles_q8 = gemm_tiles_q8,
                    .gemm_tiles_q8_2 = gemm_tiles_q8_2, .gemv_q8_0x8 = gemv_q8_0x8,
                    .gemv_q4_0x8 = gemv_q4_0x8, .peak_macs = peak_macs_vnni)

const hv_mm_kernels *hv_mm_avx512(int vnni) { return vnni ? avx512_vnni() : avx512(); }

#endif
