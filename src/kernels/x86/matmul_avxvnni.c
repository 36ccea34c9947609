/* AVX-VNNI kernels (vpdpbusd on 256-bit registers, VEX-encoded: Intel's
 * client CPUs since Alder Lake, which have no AVX-512, and AMD's since Zen
 * 5): the table "avx_vnni", the AVX2 table with the int8 GEMM's tile
 * replaced. vpdpbusd does the AVX2 tile's vpmaddubsw + vpmaddwd + vpaddd
 * in one instruction, with the same exact integer sums, so the results are
 * the portable kernels' bits (matmul_impl.h). */
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_AVX2

#include <immintrin.h>
#include <pthread.h>
#include <string.h>

#define TARGET         __attribute__((target("avxvnni,avx2,fma,f16c")))
#define INLINE         static inline __attribute__((always_inline)) TARGET
/* what the loop nests (nest_*.h) expand with */
#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL TARGET static

/* The int8 tile's micro-kernels (x86/tile_q8.h): one vpdpbusd per row
 * and weight vector, the work of AVX2's vpmaddubsw + vpmaddwd + vpaddd,
 * with the same exact sums. */
INLINE __m256i q8_quad(__m256i s, __m256i x, __m256i w) { return _mm256_dpbusd_avx_epi32(s, x, w); }

INLINE void q8_order(__m256i *s0, __m256i *s1) { (void)s0, (void)s1; }

#include "kernels/x86/tile_q8.h"

/* The probe (see the table): the int8 tiles' vpdpbusd in 12 independent
 * chains (32 multiply-accumulates each a round); f32 as the AVX2 table. */
#define PV_STEP(c) _mm256_dpbusd_avx_epi32(c, x, w)
TARGET static double peak_macs(long steps, int int8) {
    if (!int8) return hv_mm_avx2.peak_macs(steps, 0);
    __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
    HV_PROBE(12, __m256i, _mm256_setzero_si256(), PV_STEP, "+x", 32, );
}

HV_MM_DERIVED_TABLE(avx_vnni, &hv_mm_avx2, .name = "avx_vnni", .gemm_tiles_q8 = gemm_tiles_q8,
                    .peak_macs = peak_macs)

const hv_mm_kernels *hv_mm_avx_vnni(void) { return avx_vnni(); }

#endif
