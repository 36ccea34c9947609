/* AVX-VNNI kernels (vpdpbusd on 256-bit registers, VEX-encoded: Intel's
 * client CPUs since Alder Lake, which have no AVX-512, and AMD's since Zen
 * 5): the table "avx_vnni", the AVX2 table with the int8 GEMM's tile
 * replaced. vpdpbusd does the AVX2 tile's vpmaddubsw + vpmaddwd + vpaddd
 * in one instruction, with the same exact integer sums, so the results are
 * the portable kernels' bits (matmul_impl.h). */
#include "kernels/matmul_impl.h"

#ifdef HV_MM_HAVE_AVX2

#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#define TARGET __attribute__((target("avxvnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) TARGET

enum { QMR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR };

/* The AVX2 5 x 16 tile (matmul_avx2.c) with one vpdpbusd per row and
 * weight vector: the sums start at minus the offset term, take 8 steps of
 * 4 columns a block, then one fma per output with the scales' product.
 * (The empty asm statements keep GCC from hoisting every row's broadcast
 * ahead and spilling the sums.) */
INLINE void tile_q8(int nbk, const uint8_t *a, const float *ad, const int8_t *b, const float *bd,
                    const int32_t *bc, float *c, long ldc, int accumulate, const float *bias) {
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
                s[i][0] = _mm256_dpbusd_avx_epi32(s[i][0], x, w0);
                s[i][1] = _mm256_dpbusd_avx_epi32(s[i][1], x, w1);
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

TARGET static void gemm_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad,
                                 const int8_t *b, const float *bd, const int32_t *bc, float *c,
                                 long ldc, int accumulate, const float *bias) {
    for (int t = 0; t < count; t++)
        tile_q8(nbk, a + (long)t * nbk * HV_Q8_BLOCK * QMR, ad + (long)t * nbk * QMR, b, bd, bc,
                c + t * QMR * ldc, ldc, accumulate, bias);
}

/* The probe (see the table): the int8 tiles' vpdpbusd in 12 independent
 * chains (32 multiply-accumulates each a round); f32 as the AVX2 table. */
static double (*base_peak)(long steps, int int8);

#define PROBE12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
TARGET static double peak_macs(long steps, int int8) {
    if (!int8) return base_peak(steps, 0);
    __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
#define PV_DECL(i) __m256i c##i = _mm256_setzero_si256();
#define PV_STEP(i) c##i = _mm256_dpbusd_avx_epi32(c##i, x, w);
#define PV_KEEP(i) __asm__ volatile("" : "+x"(c##i));
    PROBE12(PV_DECL)
    for (long n = 0; n < steps; n++) {
        PROBE12(PV_STEP)
        PROBE12(PV_KEEP)
    }
    return steps * 12.0 * 32;
}

static hv_mm_kernels avx_vnni;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    avx_vnni = hv_mm_avx2;
    avx_vnni.name = "avx_vnni";
    avx_vnni.gemm_tiles_q8 = gemm_tiles_q8;
    base_peak = hv_mm_avx2.peak_macs;
    avx_vnni.peak_macs = peak_macs;
}

const hv_mm_kernels *hv_mm_avx_vnni(void) {
    pthread_once(&table_once, make_table);
    return &avx_vnni;
}

#endif
