/* The decoder attention's products over cached rows (hv_mm_kernels'
 * attn_scores, attn_context and their f16 twins), written once for every
 * table and expanded in each table's file with its micro-kernels. Before
 * including it, a file includes nest_gemv_rows.h (v8 and its kernels, the
 * row kinds, wload8 and wload1) and defines
 *
 *   v8_set1   v8 v8_set1(float x): x in every lane;
 *   v8_store  void v8_store(float *p, v8 v): the lanes to p[0..7];
 *
 * and gets the four table entries. Rows are f32 (ROWS_F32) or f16
 * (ROWS_F16, widened exactly, so the results are those of the f32 kernels
 * on the widened rows). */
#ifndef HV_NEST_ATTN_H
#define HV_NEST_ATTN_H

/* R (1 or 4) rows from k, step bytes apart: s[t] = scale * the dot of q
 * with row t in matmul_impl.h's lane order, then its tail; 4 rows keep 4
 * fma chains in flight. */
HV_NEST_INLINE void score_rows(float *s, const float *q, const char *k, long step, int R, int len,
                               float scale, int kind) {
    int len8 = len & ~7;
    v8 a[4];
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) a[t] = v8_zero();
    for (int c = 0; c < len8; c += 8) {
        v8 qc = v8_load(q + c);
#pragma GCC unroll 4
        for (int t = 0; t < R; t++) a[t] = v8_fma(a[t], qc, wload8(k + t * step, c, kind));
    }
#pragma GCC unroll 4
    for (int t = 0; t < R; t++) {
        const char *r = k + t * step;
        float d = v8_hsum(a[t]);
        for (int c = len8; c < len; c++) d = fmaf(q[c], wload1(r, c, kind), d);
        s[t] = scale * d;
    }
}

HV_NEST_INLINE void scores_rows(float *s, const float *q, const char *k, long ld, int n, int len,
                                float scale, int kind) {
    const long step = ld * kind_bytes(kind);
    int i = 0;
    for (; i + 4 <= n; i += 4) score_rows(s + i, q, k + i * step, step, 4, len, scale, kind);
    for (; i < n; i++) score_rows(s + i, q, k + i * step, step, 1, len, scale, kind);
}

/* 64 output columns at a time in 8 v8 over all rows, then 8, then the
 * tail one by one: each out[j] is its own chain in row order. */
HV_NEST_INLINE void context_rows(float *out, const float *p, const char *v, long ld, int n, int len,
                                 int accumulate, int kind) {
    const long step = ld * kind_bytes(kind);
    int j = 0;
    for (; j + 64 <= len; j += 64) {
        v8 o[8];
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) o[t] = accumulate ? v8_load(out + j + 8 * t) : v8_zero();
        for (int i = 0; i < n; i++) {
            v8 pi = v8_set1(p[i]);
            const char *r = v + i * step;
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) o[t] = v8_fma(o[t], pi, wload8(r, j + 8 * t, kind));
        }
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) v8_store(out + j + 8 * t, o[t]);
    }
    for (; j + 8 <= len; j += 8) {
        v8 o = accumulate ? v8_load(out + j) : v8_zero();
        for (int i = 0; i < n; i++) o = v8_fma(o, v8_set1(p[i]), wload8(v + i * step, j, kind));
        v8_store(out + j, o);
    }
    for (; j < len; j++) {
        float o = accumulate ? out[j] : 0.0f;
        for (int i = 0; i < n; i++) o = fmaf(p[i], wload1(v + i * step, j, kind), o);
        out[j] = o;
    }
}

HV_NEST_KERNEL void attn_scores(float *s, const float *q, const float *k, long ld, int n, int len,
                                float scale) {
    scores_rows(s, q, (const char *)k, ld, n, len, scale, ROWS_F32);
}

HV_NEST_KERNEL void attn_context(float *out, const float *p, const float *v, long ld, int n,
                                 int len, int accumulate) {
    context_rows(out, p, (const char *)v, ld, n, len, accumulate, ROWS_F32);
}

HV_NEST_KERNEL void attn_scores_f16(float *s, const float *q, const uint16_t *k, long ld, int n,
                                    int len, float scale) {
    scores_rows(s, q, (const char *)k, ld, n, len, scale, ROWS_F16);
}

HV_NEST_KERNEL void attn_context_f16(float *out, const float *p, const uint16_t *v, long ld, int n,
                                     int len, int accumulate) {
    context_rows(out, p, (const char *)v, ld, n, len, accumulate, ROWS_F16);
}

#endif
