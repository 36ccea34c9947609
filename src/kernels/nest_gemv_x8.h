/* The x8 GEMV's loop nest (matmul_impl.h's x8 layout and x8 dot), written
 * once for every table and expanded in each table's file with its own
 * micro-kernels and target attributes: lane j of the accumulator is row j
 * of a group of 8, so a block needs no horizontal sums; the first
 * activation row fetches ahead, the others find the group cached. Before
 * including it, a file defines (or declares):
 *
 *   HV_NEST_INLINE  the attributes of an expanded helper (static inline,
 *                   always_inline, the file's target);
 *   HV_NEST_KERNEL  those of a table entry (static, the file's target);
 *   x8_acc          8 f32 lanes;
 *   x8_zero         x8_acc x8_zero(void): all lanes 0;
 *   x8_fetch        void x8_fetch(const uint8_t *qb, const uint16_t *d, int b,
 *                   int words): what the first activation row fetches ahead
 *                   at block b of a group (payload at qb, scales at d; empty
 *                   where the hardware prefetchers suffice);
 *   x8_step         x8_acc x8_step(x8_acc acc, const uint8_t *qb, const
 *                   int8_t *x, int32_t sum, const uint16_t *d, float dx, int
 *                   q4): lane j = fma(f16 d[j] * dx, (float)p, lane j),
 *                   p the exact integer dot of row j's block (words of 32
 *                   bytes at qb: 4 for q4_0, 8 for q8_0, q4_0's nibbles
 *                   taken as q - 8) with the activation block x (32 int8;
 *                   sum their sum, for q4_0);
 *   x8_store        void x8_store(float *y, x8_acc acc): lanes to y[0..7];
 *
 * and gets the table entries gemv_q8_0x8 and gemv_q4_0x8. The sums are
 * exact integers on every table, so every table gives the same bits. */
#ifndef HV_NEST_GEMV_X8_H
#define HV_NEST_GEMV_X8_H

HV_NEST_INLINE void gemv_x8(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                            const uint8_t *wq, int n_w, int cols, int q4) {
    const int nb = cols / HV_Q8_BLOCK, words = q4 ? 4 : 8;
    for (int g = 0; g < n_w / HV_X8_ROWS; g++) {
        const uint16_t *dg = wd + (long)g * nb * HV_X8_ROWS;
        const uint8_t *qg = wq + (long)g * nb * words * 32;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            x8_acc acc = x8_zero();
            for (int b = 0; b < nb; b++) {
                const uint8_t *qb = qg + (long)b * words * 32;
                if (i == 0) x8_fetch(qb, dg + b * HV_X8_ROWS, b, words);
                int32_t sum = q4 ? a->s[(long)i * nb + b] : 0;
                acc = x8_step(acc, qb, xq + (long)b * HV_Q8_BLOCK, sum, dg + b * HV_X8_ROWS, xd[b],
                              q4);
            }
            x8_store(y + (long)i * ldy + g * HV_X8_ROWS, acc);
        }
    }
}

HV_NEST_KERNEL void gemv_q8_0x8(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                                const uint8_t *wq, int n_w, int cols) {
    gemv_x8(y, ldy, a, wd, wq, n_w, cols, 0);
}

HV_NEST_KERNEL void gemv_q4_0x8(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                                const uint8_t *wq, int n_w, int cols) {
    gemv_x8(y, ldy, a, wd, wq, n_w, cols, 1);
}

#endif
