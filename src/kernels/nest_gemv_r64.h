/* The r64 GEMV's loop nest (matmul_impl.h's r64 layout; hv_mm_kernels'
 * gemv_bf16_r64), written once for every table and expanded in each
 * table's file with its micro-kernel: per block of 64 rows and activation
 * row, the block's rows in [r0, r0 + n_w) in one pass over the columns.
 * Before including it, a file defines HV_NEST_INLINE and HV_NEST_KERNEL
 * (as nest_gemv_x8.h says) and
 *
 *   r64_rows  void r64_rows(float *y, const float *x, const uint32_t *blk,
 *             int cols, int g8): y[0 .. 8 g8 - 1] = the first 8 g8 rows of
 *             the block whose first word is blk, against activation row x,
 *             each the chain s = fma(w[k], x[k], s) over the columns in
 *             order (g8, 1 to 8, is a constant where it is expanded);
 *
 * and gets the table entry gemv_bf16_r64. */
#ifndef HV_NEST_GEMV_R64_H
#define HV_NEST_GEMV_R64_H

/* One case per count of 8-row groups, so that g8 is a constant in each. */
#define HV_R64_CASE(g)                                                                             \
    case g: r64_rows(yi, xi, blk, cols, g); break;

HV_NEST_KERNEL void gemv_bf16_r64(float *y, int ldy, const float *x, int n, const uint32_t *w,
                                  int r0, int n_w, int cols) {
    for (int r = r0; r < r0 + n_w;) {
        int b = r / HV_R64_ROWS, end = (b + 1) * HV_R64_ROWS;
        if (end > r0 + n_w) end = r0 + n_w;
        const uint32_t *blk = w + hv_r64_word(cols, r, 0);
        for (int i = 0; i < n; i++) {
            float *yi = y + (long)i * ldy + (r - r0);
            const float *xi = x + (long)i * cols;
            switch ((end - r) / 8) { /* r0 and n_w are multiples of 8 */
                HV_R64_CASE(8)
                HV_R64_CASE(7)
                HV_R64_CASE(6)
                HV_R64_CASE(5)
                HV_R64_CASE(4)
                HV_R64_CASE(3)
                HV_R64_CASE(2)
                default: r64_rows(yi, xi, blk, cols, 1); break;
            }
        }
        r = end;
    }
}

#undef HV_R64_CASE

#endif
