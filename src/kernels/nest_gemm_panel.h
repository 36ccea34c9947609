/* The packing of weight panels (hv_mm_kernels' gemm_panel and
 * gemm_panel_half), written once: HV_GEMM_NR rows into a panel
 * dst[k * HV_GEMM_NR + r], square blocks at a time through registers, then
 * the columns past the last whole block one value at a time. Before
 * including it, a file includes nest_gemv_rows.h (the row kinds and half1)
 * and defines
 *
 *   PANEL_T      the side of a block (a constant dividing HV_GEMM_NR);
 *   panel_block  void panel_block(float *dst, const void *src, long ld, int
 *                kind): the PANEL_T x PANEL_T block of rows at src (row
 *                stride ld values) transposed into dst[k * HV_GEMM_NR + r],
 *                ROWS_F32 rows as 32-bit words moved bit for bit, ROWS_F16
 *                and ROWS_BF16 ones widened exactly;
 *
 * and gets the table entries gemm_panel and gemm_panel_half. */
#ifndef HV_NEST_GEMM_PANEL_H
#define HV_NEST_GEMM_PANEL_H

HV_NEST_INLINE void panel_rows(float *dst, const void *src, long ld, int kc, int kind) {
    const long es = kind_bytes(kind);
    const char *s = src;
    int k = 0;
    for (; k + PANEL_T <= kc; k += PANEL_T)
        for (int h = 0; h < HV_GEMM_NR; h += PANEL_T)
            panel_block(dst + k * HV_GEMM_NR + h, s + (h * ld + k) * es, ld, kind);
    for (; k < kc; k++)
        for (int r = 0; r < HV_GEMM_NR; r++) {
            if (kind == ROWS_F32)
                memcpy(dst + k * HV_GEMM_NR + r, s + (r * ld + k) * 4, 4);
            else
                dst[k * HV_GEMM_NR + r] = half1((const uint16_t *)src + r * ld + k, kind);
        }
}

HV_NEST_KERNEL void gemm_panel(void *dst, const void *src, long ld, int kc) {
    panel_rows(dst, src, ld, kc, ROWS_F32);
}

HV_NEST_KERNEL void gemm_panel_half(float *dst, const uint16_t *src, long ld, int kc, int bf16) {
    panel_rows(dst, src, ld, kc, bf16 ? ROWS_BF16 : ROWS_F16);
}

#endif
