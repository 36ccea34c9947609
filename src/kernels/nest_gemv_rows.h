/* The GEMV of f32, f16 and bf16 rows (matmul_impl.h's f16/bf16 dot; the
 * table entries gemv_f16, gemv_bf16 and gemv_f32), written once for every
 * table and expanded in each table's file with its micro-kernels: 4 weight
 * rows at a time against each activation row, so that each activation load
 * feeds 4 rows' accumulator chains, then single rows; a row's own
 * arithmetic is the same whether it is in a group of 4 or alone. Before
 * including it, a file defines HV_NEST_INLINE and HV_NEST_KERNEL (as
 * nest_gemv_x8.h says) and
 *
 *   v8            8 f32 lanes (matmul_impl.h's 8 lane sums);
 *   v8_zero       v8 v8_zero(void);
 *   v8_load       v8 v8_load(const float *p): p[0..7];
 *   v8_load_half  v8 v8_load_half(const uint16_t *p, int bf16): 8 f16
 *                 (bf16 = 0) or bf16 values widened, exactly;
 *   half1         float half1(const uint16_t *p, int bf16): one of them;
 *   v8_fma        v8 v8_fma(v8 acc, v8 a, v8 b): lane j fma(a, b, acc);
 *   v8_add        v8 v8_add(v8 a, v8 b);
 *   v8_hsum       float v8_hsum(v8 v): ((v0+v4) + (v2+v6)) + ((v1+v5) +
 *                 (v3+v7));
 *   rows_fetch    void rows_fetch(const char *p, long bytes): fetch bytes
 *                 from p ahead of use (empty where the hardware
 *                 prefetchers suffice). */
#ifndef HV_NEST_GEMV_ROWS_H
#define HV_NEST_GEMV_ROWS_H

/* Weights of rows in one of three kinds: f16, bf16 (v8_load_half's kinds)
 * or f32 (used as they are). */
enum { ROWS_F16 = 0, ROWS_BF16 = 1, ROWS_F32 = 2 };

/* Bytes per weight of a kind. */
HV_NEST_INLINE long kind_bytes(int kind) { return kind == ROWS_F32 ? 4 : 2; }

HV_NEST_INLINE v8 wload8(const void *w, long k, int kind) {
    if (kind == ROWS_F32) return v8_load((const float *)w + k);
    return v8_load_half((const uint16_t *)w + k, kind);
}

HV_NEST_INLINE float wload1(const void *w, long k, int kind) {
    if (kind == ROWS_F32) return ((const float *)w)[k];
    return half1((const uint16_t *)w + k, kind);
}

/* R (1 or 4) weight rows w[R][cols] against activation row xi. Two
 * accumulators per row (columns k % 16 < 8 and >= 8) keep 2 R chains in
 * flight; with 4 rows the next 4 are fetched in step (their bytes for 16
 * columns per 16 columns). */
HV_NEST_INLINE void dot_rows(float *out, const void *w, int R, int cols, const float *xi,
                             int kind) {
    const long es = kind_bytes(kind), row = (long)cols * es;
    int c16 = cols & ~15, c8 = cols & ~7, k = 0;
    const char *w0 = w;
    v8 a[4], b[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++) a[r] = b[r] = v8_zero();
    for (; k < c16; k += 16) {
        if (R == 4) rows_fetch(w0 + 4 * row + 4 * es * k, 4 * 16 * es);
        v8 xa = v8_load(xi + k), xb = v8_load(xi + k + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) a[r] = v8_fma(a[r], wload8(w0 + r * row, k, kind), xa);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) b[r] = v8_fma(b[r], wload8(w0 + r * row, k + 8, kind), xb);
    }
    if (k < c8) {
        v8 xa = v8_load(xi + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) a[r] = v8_fma(a[r], wload8(w0 + r * row, k, kind), xa);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        const char *wr = w0 + r * row;
        float s = v8_hsum(v8_add(a[r], b[r]));
        for (k = c8; k < cols; k++) s = fmaf(wload1(wr, k, kind), xi[k], s);
        out[r] = s;
    }
}

HV_NEST_INLINE void gemv_kind(float *y, int ldy, const float *x, int n, const void *w, int n_w,
                              int cols, int kind) {
    const long row = (long)cols * kind_bytes(kind);
    const char *wc = w;
    int r = 0;
    for (; r + 4 <= n_w; r += 4)
        for (int i = 0; i < n; i++) {
            float s[4];
            dot_rows(s, wc + r * row, 4, cols, x + (long)i * cols, kind);
            for (int t = 0; t < 4; t++) y[(long)i * ldy + r + t] = s[t];
        }
    for (; r < n_w; r++)
        for (int i = 0; i < n; i++)
            dot_rows(y + (long)i * ldy + r, wc + r * row, 1, cols, x + (long)i * cols, kind);
}

HV_NEST_KERNEL void gemv_f16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                             int cols) {
    gemv_kind(y, ldy, x, n, w, n_w, cols, ROWS_F16);
}

HV_NEST_KERNEL void gemv_bf16(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                              int cols) {
    gemv_kind(y, ldy, x, n, w, n_w, cols, ROWS_BF16);
}

HV_NEST_KERNEL void gemv_f32(float *y, int ldy, const float *x, int n, const float *w, int n_w,
                             int cols) {
    gemv_kind(y, ldy, x, n, w, n_w, cols, ROWS_F32);
}

#endif
