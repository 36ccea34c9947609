/* The packed GEMM's pass over a weight panel (hv_mm_kernels' gemm_tiles),
 * written once: count tiles of HV_GEMM_MR activation rows down the
 * activations, one call for a pass. Before including it, a file defines
 * HV_NEST_INLINE and HV_NEST_KERNEL (as nest_gemv_x8.h says) and
 *
 *   gemm_tile  void gemm_tile(int kc, const float *a, const float *b, float
 *              *c, long ldc, int accumulate): one tile, as gemm_tiles'
 *              contract has it for count = 1;
 *
 * and gets the table entry gemm_tiles. */
#ifndef HV_NEST_GEMM_TILES_H
#define HV_NEST_GEMM_TILES_H

HV_NEST_KERNEL void gemm_tiles(int count, int kc, const float *a, const float *b, float *c,
                               long ldc, int accumulate) {
    for (int t = 0; t < count; t++, a += (long)kc * HV_GEMM_MR, c += HV_GEMM_MR * ldc)
        gemm_tile(kc, a, b, c, ldc, accumulate);
}

#endif
