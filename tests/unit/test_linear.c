/* hv_linear for every weight type and layout (row-major, x8, r64) against
 * double-precision references on the dequantised weights: thread and SIMD
 * independence, the kernels called directly, special values, and
 * hv_linear_many. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"
#include "mm_testutil.h"
#include "testlib.h"

/* ------------------------------------------------------------ linear */

typedef struct shape {
    int rows, cols;
} shape;

/* Fills x[n x cols], weights src[rows x cols] and bias either with values
 * whose products and sums are exact in f32 (exact = 1: every summation
 * order gives the same, exact result) or with random values at mixed
 * scales. For q8_0 the exact values also survive both quantisations. */
static void fill(hv_weight_type t, int exact, float *x, int n, float *src, int rows, int cols,
                 float *bias) {
    if (!exact) {
        for (int i = 0; i < n * cols; i++) x[i] = frand();
        for (int r = 0; r < rows; r++) {
            float s = powf(10.0f, frand());
            for (int c = 0; c < cols; c++) src[(size_t)r * cols + c] = frand() * s;
        }
        for (int r = 0; r < rows; r++) bias[r] = frand();
        return;
    }
    /* activations for the block types: k/64 with a +-127 in each block
     * (scale 2^-6 exactly) for decoder steps; the int8 GEMM (n >
     * HV_LINEAR_GEMV_MAX_N) quantizes them to 63 levels: there k/32 with
     * a +-63 in each block */
    int lv = n > HV_LINEAR_GEMV_MAX_N ? 63 : 127;
    if (t == HV_WEIGHTS_Q4_0) {
        /* weights k/8, k in [-8, 7], with a -1 in each block (scale 1/8
         * exactly) */
        for (int i = 0; i < n * cols; i++)
            x[i] = (float)(i % 32 == 5 ? (i & 64 ? lv : -lv) : irand(-lv, lv)) /
                   (lv == 63 ? 32.0f : 64.0f);
        for (int i = 0; i < rows * cols; i++)
            src[i] = (float)(i % 32 == 17 ? -8 : irand(-8, 7)) / 8.0f;
        for (int r = 0; r < rows; r++) bias[r] = (float)irand(-8192, 8192) / 8192.0f;
        return;
    }
    if (t != HV_WEIGHTS_Q8_0) { /* k/8 . k/16: multiples of 2^-7, |sum| <= cols */
        for (int i = 0; i < n * cols; i++) x[i] = (float)irand(-8, 8) / 8.0f;
        for (int i = 0; i < rows * cols; i++) src[i] = (float)irand(-16, 16) / 16.0f;
        for (int r = 0; r < rows; r++) bias[r] = (float)irand(-128, 128) / 128.0f;
        return;
    }
    /* q8_0: weight blocks of k/128 with a +-127 in each (scale 2^-7
     * exactly); the sums stay below 2^24 * 2^-13 */
    for (int i = 0; i < n * cols; i++)
        x[i] = (float)(i % 32 == 5 ? (i & 64 ? lv : -lv) : irand(-lv, lv)) /
               (lv == 63 ? 32.0f : 64.0f);
    for (int i = 0; i < rows * cols; i++)
        src[i] = (float)(i % 32 == 17 ? (i & 32 ? 127 : -127) : irand(-127, 127)) / 128.0f;
    for (int r = 0; r < rows; r++) bias[r] = (float)irand(-8192, 8192) / 8192.0f;
}

/* How far y may be from the exact result: f32 rounding of the sums
 * (~eps sqrt(cols) sum|x w|), plus the rounding of x to its blocks, at
 * most d_x / 2 per value: for q8_0 and q4_0 decoder steps d_x = amax /
 * 127, in their int8 GEMM (n > HV_LINEAR_GEMV_MAX_N) amax / 63. */
static double tolerance(hv_weight_type t, int n, const float *xi, const float *wr, int cols,
                        float b) {
    double s = fabs(b), q = 0;
    for (int c = 0; c < cols; c++) s += fabs((double)xi[c] * wr[c]);
    int gemv = n <= HV_LINEAR_GEMV_MAX_N;
    double levels = gemv ? 127.0 : 63.0;
    if (t == HV_WEIGHTS_Q8_0 || t == HV_WEIGHTS_Q4_0)
        for (int c0 = 0; c0 < cols; c0 += 32) {
            double amax = 0, wsum = 0;
            for (int c = c0; c < c0 + 32; c++) {
                amax = fmax(amax, fabs(xi[c]));
                wsum += fabs(wr[c]);
            }
            q += amax / levels / 2.0 * wsum * (1 + 1e-5);
        }
    return q + 2.0 * FLT_EPSILON * sqrt(cols + 1.0) * s + 1e-30;
}

typedef void (*linear_with_fn)(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x,
                               int n, const hv_mat *W, const float *bias);

/* The SIMD tables this CPU runs (main fills them), and the one that the
 * direct kernel tests take (main runs them once per table). */
static const hv_mm_kernels *tables[8];
static int n_tables;
static const hv_mm_kernels *simd;

/* Whether a product of n x W also runs on the portable table and every
 * other SIMD table (the best one runs all of them, on 1-3 threads). Under
 * the sanitizers each load is checked and a product costs ~30x the release
 * build's, so there only products of at most 2^20 multiply-adds compare
 * the tables (every shape and size class still does, in smaller
 * instances); the release build compares them on every product. */
static int compare_tables(int n, const hv_mat *W) {
#ifdef HV_TEST_SANITIZED
    return (double)n * W->rows * W->cols <= 1 << 20;
#else
    (void)n, (void)W;
    return 1;
#endif
}

/* fn (hv_linear_with or hv_linear_silu_with) on each of the 3 pools with
 * the best kernel table, and where `reach` (the product reaches the
 * tables) and compare_tables with the scalar one and every SIMD one:
 * *threads_ok and *tables_ok are cleared where a result is not want's
 * bits. */
static void same_everywhere(linear_with_fn fn, hv_pool *const pools[3], int reach, const float *x,
                            int n, const hv_mat *W, const float *b, float *y, const float *want,
                            size_t ny, int *threads_ok, int *tables_ok) {
    for (int p = 0; p < 3; p++) {
        fn(hv_mm_best(), pools[p], y, x, n, W, b);
        *threads_ok &= same_bits(y, want, ny);
    }
    if (n_tables && reach && compare_tables(n, W)) {
        fn(&hv_mm_scalar, pools[1], y, x, n, W, b);
        *tables_ok &= same_bits(y, want, ny);
        for (int t = 0; t < n_tables; t++) {
            fn(tables[t], pools[2], y, x, n, W, b);
            *tables_ok &= same_bits(y, want, ny);
        }
    }
}

/* hv_linear_ep_with(ep) where same_everywhere runs fn: y must be want_y's
 * bits and, with a residual (reset from res0 before each call), the
 * residual want_res's. */
static void same_everywhere_ep(hv_pool *const pools[3], int reach, const float *x, int n,
                               const hv_mat *W, const float *b, hv_epilogue ep, const float *res0,
                               float *y, const float *want_y, const float *want_res, size_t ny,
                               int *ok) {
    const hv_mm_kernels *ks[12] = {hv_mm_best(), hv_mm_best(), hv_mm_best(), &hv_mm_scalar};
    hv_pool *ps[12] = {pools[0], pools[1], pools[2], pools[1]};
    int runs = 3;
    if (n_tables && reach && compare_tables(n, W)) {
        runs = 4;
        for (int t = 0; t < n_tables; t++) ks[runs] = tables[t], ps[runs++] = pools[2];
    }
    for (int r = 0; r < runs; r++) {
        if (ep.residual && res0) memcpy(ep.residual, res0, ny * sizeof(float));
        memset(y, 0, ny * sizeof(float));
        hv_linear_ep_with(ks[r], ps[r], y, x, n, W, b, &ep);
        *ok &= same_bits(y, want_y, ny);
        if (ep.residual && want_res) *ok &= same_bits(ep.residual, want_res, ny);
    }
}

/* x8: the q8_0/q4_0 matrices (of rows % 8 == 0) interleaved; for n >
 * HV_LINEAR_GEMV_MAX_N (the int8 GEMM) their bits must be the row-by-row
 * layout's. */
/* x8: q8_0/q4_0 in the x8 layout, bf16 in the r64 layout (shapes that
 * can take it). */
static void test_linear(hv_weight_type t, int exact, int x8) {
    static const shape gen[] = {
        {1, 1},     {5, 3},    {17, 9},    {33, 31},  {64, 100}, {130, 257},
        {40, 1000}, {300, 24}, {200, 520}, {520, 40}, /* 520: chunks cut smaller at the end */
        {128, 66},  {576, 24}}; /* r64: two blocks; nine, in chunks and the taper's quarters */
    static const shape q8[] = {{1, 32},
                               {3, 64},
                               {37, 96},
                               {130, 256},
                               {40, 1024},
                               {200, 512},
                               {8, 32},
                               {136, 96},
                               {520, 64},
                               /* two column blocks of the int8 GEMM, the
                                * second a block shorter */
                               {24, HV_GEMM_Q8_KC_MAX + 32}};
    int blocks = t == HV_WEIGHTS_Q8_0 || t == HV_WEIGHTS_Q4_0;
    const shape *shapes = blocks ? q8 : gen;
    int n_shapes = blocks ? (int)(sizeof q8 / sizeof q8[0]) : (int)(sizeof gen / sizeof gen[0]);
    /* 300: the packed GEMM keeps a chunk's sums in its own buffer from
     * 256 rows on (gemm.c), 200 in y */
    static const int ns[] = {1,  2,   3,  7, HV_LINEAR_GEMV_MAX_N, HV_LINEAR_GEMV_MAX_N + 1,
                             64, 200, 300};
    hv_pool *pools[3];
    for (int p = 0; p < 3; p++) pools[p] = hv_pool_new(p + 1);
    int worst_shape = -1;
    double worst = 0; /* |y - ref| / tolerance */

    for (int s = 0; s < n_shapes; s++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            int rows = shapes[s].rows, cols = shapes[s].cols, n = ns[ni];
            if ((double)n * rows * cols > 3e7) n = 64; /* keep it quick */
            float *x = falloc((size_t)n * cols), *src = falloc((size_t)rows * cols);
            float *bias = falloc(rows);
            fill(t, exact, x, n, src, rows, cols, bias);
            hv_mat W;
            void *st;
            hv_error e;
            hv_status rc = hv_mat_from_f32(&W, t, src, rows, cols, &st, &e);
            CHECK_MSG(rc == HV_OK, "%s %dx%d: %s", hv_weight_type_name(t), rows, cols, e.msg);
            int r64 = x8 && t == HV_WEIGHTS_BF16;
            if (rc != HV_OK || (x8 && rows % HV_X8_ROWS) ||
                (r64 && (rows % HV_R64_ROWS || cols % 2))) {
                free(x);
                free(src);
                free(bias);
                if (rc == HV_OK) free(st);
                continue;
            }
            size_t ny = (size_t)n * rows;
            float *y = falloc(ny), *y0 = falloc(ny), *yb = falloc(ny), *yrows = NULL;
            if (x8) {
                if (n > HV_LINEAR_GEMV_MAX_N) {
                    yrows = falloc(ny);
                    hv_linear(pools[1], yrows, x, n, &W, NULL);
                }
                void *st8;
                if (r64)
                    CHECK(hv_mat_interleave_r64(&W, &st8, NULL, &e) == HV_OK && W.r64 == 1);
                else
                    CHECK(hv_mat_interleave(&W, &st8, &e) == HV_OK && W.x8 == 1);
                free(st);
                st = st8;
            }
            float *w = dequant(&W);
            int same_threads = 1, same_simd = 1, bias_ok = 1, silu_ok = 1, relu_ok = 1;
            int add_ok = 1;
            /* f32 weights reach the kernel tables where SIMD kernels
             * exist (the packed GEMM, gemv_f32); elsewhere OpenBLAS */
            int reach = t != HV_WEIGHTS_F32 || n_tables;
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *b = with_bias ? bias : NULL;
                hv_linear(pools[0], y0, x, n, &W, b);
                same_everywhere(hv_linear_with, pools, reach, x, n, &W, b, y, y0, ny, &same_threads,
                                &same_simd);
                if (!with_bias) {
                    memcpy(yb, y0, ny * sizeof(float));
                    if (yrows)
                        CHECK_MSG(same_bits(y0, yrows, ny), "%s n=%d %dx%d: layout == row by row",
                                  hv_weight_type_name(t), n, rows, cols);
                    continue;
                }
                /* bias is added after the product: y(b) == y(NULL) + b */
                for (int i = 0; i < n; i++)
                    for (int r = 0; r < rows; r++)
                        bias_ok &= y0[(size_t)i * rows + r] == yb[(size_t)i * rows + r] + bias[r];
                /* SiLU fused into the product: hv_linear then hv_silu, bit
                 * for bit, on any threads and kernel table */
                float *ys = falloc(ny);
                memcpy(ys, y0, ny * sizeof(float));
                hv_silu(ys, (long)ny);
                same_everywhere(hv_linear_silu_with, pools, reach, x, n, &W, b, y, ys, ny, &silu_ok,
                                &silu_ok);
                /* ReLU likewise */
                memcpy(ys, y0, ny * sizeof(float));
                hv_relu(ys, (long)ny);
                same_everywhere_ep(pools, reach, x, n, &W, b, (hv_epilogue){HV_ACT_RELU, NULL, 0},
                                   NULL, y, ys, NULL, ny, &relu_ok);
                /* the residual add: hv_linear then hv_add_scaled, y kept */
                float *res0 = falloc(ny), *res = falloc(ny), *want = falloc(ny);
                for (size_t i = 0; i < ny; i++) res0[i] = frand() * 4;
                memcpy(want, res0, ny * sizeof(float));
                hv_add_scaled(want, y0, (long)ny, 0.5f);
                same_everywhere_ep(pools, reach, x, n, &W, b, (hv_epilogue){HV_ACT_NONE, res, 0.5f},
                                   res0, y, y0, want, ny, &add_ok);
                memcpy(res, res0, ny * sizeof(float));
                hv_linear_add(pools[1], res, y, x, n, &W, b, 0.5f);
                add_ok &= same_bits(res, want, ny) && same_bits(y, y0, ny);
                free(res0);
                free(res);
                free(want);
                free(ys);
            }
            double shape_worst = 0;
            for (int i = 0; i < n; i++)
                for (int r = 0; r < rows; r++) {
                    const float *xi = x + (size_t)i * cols, *wr = w + (size_t)r * cols;
                    double ref = bias[r];
                    for (int c = 0; c < cols; c++) ref += (double)xi[c] * wr[c];
                    double d = fabs(ref - y0[(size_t)i * rows + r]);
                    double tol = exact ? 0 : tolerance(t, n, xi, wr, cols, bias[r]);
                    double rel = exact ? (d > 0 ? INFINITY : 0) : d / tol;
                    if (isnan(rel) || rel > shape_worst) shape_worst = isnan(rel) ? INFINITY : rel;
                }
            CHECK_MSG(shape_worst <= 1, "%s%s %s n=%d %dx%d: error %g x tolerance",
                      hv_weight_type_name(t), x8 ? " x8" : "", exact ? "exact" : "random", n, rows,
                      cols, shape_worst);
            if (shape_worst > worst) worst = shape_worst, worst_shape = s;
            CHECK_MSG(same_threads, "%s n=%d %dx%d: same bits on 1, 2, 3 threads",
                      hv_weight_type_name(t), n, rows, cols);
            CHECK_MSG(same_simd, "%s n=%d %dx%d: scalar == every SIMD table",
                      hv_weight_type_name(t), n, rows, cols);
            CHECK_MSG(bias_ok, "%s n=%d %dx%d: bias added last", hv_weight_type_name(t), n, rows,
                      cols);
            CHECK_MSG(silu_ok, "%s%s n=%d %dx%d: hv_linear_silu == hv_linear + hv_silu",
                      hv_weight_type_name(t), x8 ? " x8" : "", n, rows, cols);
            CHECK_MSG(relu_ok, "%s%s n=%d %dx%d: ReLU epilogue == hv_linear + hv_relu",
                      hv_weight_type_name(t), x8 ? " x8" : "", n, rows, cols);
            CHECK_MSG(add_ok, "%s%s n=%d %dx%d: residual epilogue == hv_linear + hv_add_scaled",
                      hv_weight_type_name(t), x8 ? " x8" : "", n, rows, cols);
            free(x);
            free(src);
            free(bias);
            free(w);
            free(y);
            free(y0);
            free(yb);
            free(yrows);
            free(st);
        }
    if (!exact)
        printf("%-5s%s random: worst error %.3f of tolerance (shape %d)\n", hv_weight_type_name(t),
               x8 ? " x8" : "", worst, worst_shape);
    for (int p = 0; p < 3; p++) hv_pool_free(pools[p]);
}

/* Direct kernel calls on odd row counts and strides: scalar == SIMD. */
static void test_kernels_direct(void) {
    if (!simd) {
        printf("no AVX2+FMA+F16C here: SIMD comparisons skipped\n");
        return;
    }
    printf("SIMD kernels: %s\n", simd->name);
    int cols = 96, n_w = 11, n = 5, ldy = 13;
    uint16_t w16[11 * 96];
    float w32[11 * 96];
    /* 1, 2, 5 and 8 activation rows (decoder steps, beams, prompts) */
    const int ns[] = {1, 2, 5, 8};
    float x[8 * 96], ya[8 * 13], yb[8 * 13];
    for (int i = 0; i < 8 * cols; i++) x[i] = frand();
    const char *kinds[] = {"f16", "bf16", "f32"};
    for (int kind = 0; kind < 3; kind++)
        for (int c = 1; c <= cols; c += 5) {
            for (int i = 0; i < n_w * c; i++) {
                w16[i] = kind == 1 ? hv_f32_to_bf16(frand()) : hv_f32_to_f16(frand());
                w32[i] = frand();
            }
            for (int ni = 0; ni < 4; ni++)
                for (int w0 = 0; w0 < 5; w0++) {
                    memset(ya, 0, sizeof ya);
                    memset(yb, 0, sizeof yb);
                    if (kind == 2) {
                        hv_mm_scalar.gemv_f32(ya + w0, ldy, x, ns[ni], w32 + w0 * c, n_w - w0, c);
                        simd->gemv_f32(yb + w0, ldy, x, ns[ni], w32 + w0 * c, n_w - w0, c);
                    } else {
                        (kind ? hv_mm_scalar.gemv_bf16 : hv_mm_scalar.gemv_f16)(
                            ya + w0, ldy, x, ns[ni], w16 + w0 * c, n_w - w0, c);
                        (kind ? simd->gemv_bf16 : simd->gemv_f16)(yb + w0, ldy, x, ns[ni],
                                                                  w16 + w0 * c, n_w - w0, c);
                    }
                    CHECK_MSG(same_bits(ya, yb, 8 * 13), "%s gemv cols %d, %d rows from row %d",
                              kinds[kind], c, ns[ni], w0);
                }
        }
    hv_q8_0_block wq[11 * 3];
    float xd[5 * 3];
    int8_t xq[5 * 96];
    for (int b = 0; b < 11 * 3; b++) {
        wq[b].d = hv_f32_to_f16(frand() * 0.01f);
        for (int t = 0; t < 32; t++) wq[b].q[t] = (int8_t)irand(-127, 127);
    }
    hv_q8_act a;
    a.d = xd;
    a.q = xq;
    a.s = NULL;
    hv_q8_act_quantize(&hv_mm_scalar, &a, x, n, cols);
    xq[7] = -127; /* extremes */
    xq[8] = 127;
    wq[0].q[7] = -127;
    wq[0].q[8] = -127;
    for (int w0 = 0; w0 < 8; w0++) {
        memset(ya, 0, sizeof ya);
        memset(yb, 0, sizeof yb);
        hv_mm_scalar.gemv_q8_0(ya + w0, ldy, &a, wq + w0 * 3, n_w - w0, cols);
        simd->gemv_q8_0(yb + w0, ldy, &a, wq + w0 * 3, n_w - w0, cols);
        CHECK_MSG(same_bits(ya, yb, 5 * 13), "q8_0 gemv from row %d", w0);
    }
    hv_q4_0_block w4[11 * 3];
    for (int b = 0; b < 11 * 3; b++) {
        w4[b].d = hv_f32_to_f16(frand() * 0.01f);
        for (int t = 0; t < 16; t++) w4[b].qs[t] = (uint8_t)irand(0, 255);
    }
    w4[0].qs[7] = 0x00; /* extremes: -8 against -127 and 127 */
    w4[0].qs[8] = 0xff;
    for (int w0 = 0; w0 < 8; w0++) {
        memset(ya, 0, sizeof ya);
        memset(yb, 0, sizeof yb);
        hv_mm_scalar.gemv_q4_0(ya + w0, ldy, &a, w4 + w0 * 3, n_w - w0, cols);
        simd->gemv_q4_0(yb + w0, ldy, &a, w4 + w0 * 3, n_w - w0, cols);
        CHECK_MSG(same_bits(ya, yb, 5 * 13), "q4_0 gemv from row %d", w0);
    }
}

/* hv_mat_interleave: the same values at every row and column range
 * (hv_mat_widen), the same byte count, refused where it cannot apply; the
 * x8 GEMV kernels: SIMD == scalar on extremes (q8_0 -127 and -128 weights
 * against +-127 activations, q4_0 nibbles 0 and 15), 1-5 activation rows,
 * 1-3 groups, a stride; the block sums of hv_q8_act_quantize. */
static void test_x8_layout(void) {
    hv_error e;
    for (int ti = 0; ti < 2; ti++) {
        hv_weight_type t = ti ? HV_WEIGHTS_Q4_0 : HV_WEIGHTS_Q8_0;
        const int rows = 24, cols = 96;
        float *src = falloc(rows * cols);
        for (int i = 0; i < rows * cols; i++) src[i] = frand() * (float)(1 + i % 7);
        hv_mat W, X;
        void *st, *st8;
        CHECK(hv_mat_from_f32(&W, t, src, rows, cols, &st, &e) == HV_OK && W.x8 == 0);
        X = W;
        CHECK(hv_mat_interleave(&X, &st8, &e) == HV_OK && X.x8 && X.data == st8 &&
              hv_mat_bytes(&X) == hv_mat_bytes(&W));
        float a[24 * 96], b[24 * 96];
        for (int r = 0; r < rows; r += 5)
            for (int c = 0; c < cols; c += 32) {
                long count = (long)(rows - r) * cols - c;
                hv_mat_widen(&hv_mm_scalar, &W, r, c, count, a);
                hv_mat_widen(&hv_mm_scalar, &X, r, c, count, b);
                CHECK_MSG(same_bits(a, b, (size_t)count), "%s x8 widen from %d,%d",
                          hv_weight_type_name(t), r, c);
            }
        void *none = &W;
        CHECK(hv_mat_interleave(&X, &none, &e) == HV_ERR_UNSUPPORTED && !none); /* already x8 */
        hv_mat odd = W;
        odd.rows = 20;
        CHECK(hv_mat_interleave(&odd, &none, &e) == HV_ERR_UNSUPPORTED && odd.x8 == 0);
        free(st);
        free(st8);
        free(src);
    }
    hv_mat f = {HV_WEIGHTS_BF16, 8, 32, NULL, 0, 0};
    void *none;
    CHECK(hv_mat_interleave(&f, &none, &e) == HV_ERR_UNSUPPORTED);

    /* activation block sums */
    float x[5 * 96];
    float xd[5 * 3];
    int8_t xq[5 * 96];
    int32_t xs[5 * 3];
    for (int i = 0; i < 5 * 96; i++) x[i] = frand();
    hv_q8_act act = {0, 0, xd, xq, xs};
    hv_q8_act_quantize(hv_mm_best(), &act, x, 5, 96);
    int sums_ok = 1;
    for (int blk = 0; blk < 15; blk++) {
        int32_t want = 0;
        for (int k = 0; k < 32; k++) want += xq[blk * 32 + k];
        sums_ok &= xs[blk] == want;
    }
    CHECK_MSG(sums_ok, "hv_q8_act_quantize: block sums");

    if (!simd) return;
    xq[7] = -127; /* extremes against the weights' below */
    xq[8] = 127;
    for (int i = 0; i < 15; i++) { /* the sums as the kernels need them after that */
        xs[i] = 0;
        for (int k = 0; k < 32; k++) xs[i] += xq[i * 32 + k];
    }
    enum { GROUPS = 3, NB = 3, LDY = 29 };
    uint16_t wd[GROUPS * NB * 8];
    uint8_t wq[GROUPS * NB * 8 * 32];
    for (size_t i = 0; i < sizeof wd / sizeof wd[0]; i++) wd[i] = hv_f32_to_f16(frand() * 0.01f);
    for (size_t i = 0; i < sizeof wq; i++) wq[i] = (uint8_t)irand(0, 255);
    wq[7] = 0x81; /* q8_0: -127 and -128 at row 1's first bytes; q4_0: nibbles 1, 8 */
    wq[8] = 0x80;
    wq[32 + 7] = 0x00; /* q4_0: 0 and 15 at the high-nibble word */
    wq[32 + 8] = 0xff;
    float ya[5 * LDY], yb[5 * LDY];
    for (int q4 = 0; q4 < 2; q4++)
        for (int n = 1; n <= 5; n += 2)
            for (int g = 1; g <= GROUPS; g++) {
                act.n = n;
                memset(ya, 0, sizeof ya);
                memset(yb, 0, sizeof yb);
                (q4 ? hv_mm_scalar.gemv_q4_0x8 : hv_mm_scalar.gemv_q8_0x8)(ya, LDY, &act, wd, wq,
                                                                           8 * g, 96);
                (q4 ? simd->gemv_q4_0x8 : simd->gemv_q8_0x8)(yb, LDY, &act, wd, wq, 8 * g, 96);
                CHECK_MSG(same_bits(ya, yb, 5 * LDY), "%s x8 gemv n %d groups %d",
                          q4 ? "q4_0" : "q8_0", n, g);
            }
}

/* Big values, zeros, negative zeros, subnormals, NaN and infinity in x. */
/* hv_mat_interleave_r64: the same values at every row and column
 * (hv_mat_widen, hv_mat_row_f32), the same byte count, refused where it
 * cannot apply; its GEMV: the scalar kernel is each output's fma chain
 * over the columns in order, and SIMD == scalar on 1, 2, 5 and 8
 * activation rows, from a block's start or within it, whole blocks or
 * groups of 8 rows, with a stride. */
static void test_r64_layout(void) {
    hv_error e;
    const int rows = 192, cols = 38;
    float *src = falloc(rows * cols);
    for (int i = 0; i < rows * cols; i++) src[i] = frand() * (float)(1 + i % 7);
    hv_mat W, X;
    void *st, *st64;
    CHECK(hv_mat_from_f32(&W, HV_WEIGHTS_BF16, src, rows, cols, &st, &e) == HV_OK && !W.r64);
    X = W;
    CHECK(hv_mat_interleave_r64(&X, &st64, NULL, &e) == HV_OK && X.r64 && X.data == st64 &&
          hv_mat_bytes(&X) == hv_mat_bytes(&W));
    /* the copy over a pool: the same bytes */
    for (int threads = 2; threads <= 5; threads += 3) {
        hv_pool *pool = hv_pool_new(threads);
        hv_mat P = W;
        void *stp = NULL;
        CHECK(pool && hv_mat_interleave_r64(&P, &stp, pool, &e) == HV_OK && P.r64 &&
              !memcmp(stp, st64, hv_mat_bytes(&W)));
        free(stp);
        hv_pool_free(pool);
    }
    float *a = falloc(rows * cols), *b = falloc(rows * cols);
    for (int r = 0; r < rows; r += 7)
        for (int c = 0; c < cols; c += 5) {
            long count = (long)(rows - r) * cols - c;
            hv_mat_widen(&hv_mm_scalar, &W, r, c, count, a);
            hv_mat_widen(&hv_mm_scalar, &X, r, c, count, b);
            CHECK_MSG(same_bits(a, b, (size_t)count), "r64 widen from %d,%d", r, c);
        }
    for (int r = 0; r < rows; r += 13) {
        hv_mat_row_f32(&W, r, a);
        hv_mat_row_f32(&X, r, b);
        CHECK_MSG(same_bits(a, b, (size_t)cols), "r64 row %d", r);
    }
    void *none = &W;
    CHECK(hv_mat_interleave_r64(&X, &none, NULL, &e) == HV_ERR_UNSUPPORTED && !none); /* already */
    hv_mat odd = W;
    odd.rows = 96;
    CHECK(hv_mat_interleave_r64(&odd, &none, NULL, &e) == HV_ERR_UNSUPPORTED && !odd.r64);
    odd = W;
    odd.cols = 37;
    CHECK(hv_mat_interleave_r64(&odd, &none, NULL, &e) == HV_ERR_UNSUPPORTED && !odd.r64);
    hv_mat f16 = W;
    f16.type = HV_WEIGHTS_F16;
    CHECK(hv_mat_interleave_r64(&f16, &none, NULL, &e) == HV_ERR_UNSUPPORTED);

    /* the kernels: rows r0 .. r0 + n_w of X against n activation rows */
    enum { LDY = 200 };
    const int ns[] = {1, 2, 5, 8}, ranges[][2] = {{0, 192}, {0, 64}, {64, 32}, {8, 56}, {72, 120}};
    float x[8 * 38], ya[8 * LDY], yb[8 * LDY];
    for (int i = 0; i < 8 * cols; i++) x[i] = frand() * 3;
    float *w = dequant(&W);
    for (int ni = 0; ni < 4; ni++)
        for (int g = 0; g < 5; g++) {
            int n = ns[ni], r0 = ranges[g][0], n_w = ranges[g][1];
            memset(ya, 0, sizeof ya);
            hv_mm_scalar.gemv_bf16_r64(ya, LDY, x, n, X.data, r0, n_w, cols);
            int chain = 1;
            for (int i = 0; i < n; i++)
                for (int r = 0; r < n_w; r++) {
                    float s = 0.0f;
                    for (int k = 0; k < cols; k++)
                        s = fmaf(w[(size_t)(r0 + r) * cols + k], x[i * cols + k], s);
                    chain &= same_bits(&s, &ya[i * LDY + r], 1);
                }
            CHECK_MSG(chain, "r64 scalar GEMV: the fma chain (n %d, rows %d + %d)", n, r0, n_w);
            if (!simd) continue;
            memset(yb, 0, sizeof yb);
            simd->gemv_bf16_r64(yb, LDY, x, n, X.data, r0, n_w, cols);
            CHECK_MSG(same_bits(ya, yb, 8 * LDY), "r64 GEMV %s == scalar (n %d, rows %d + %d)",
                      simd->name, n, r0, n_w);
        }
    free(w);
    free(a);
    free(b);
    free(st);
    free(st64);
    free(src);
}

static void test_special(void) {
    hv_pool *pool = hv_pool_new(2);
    int rows = 64, cols = 64;
    const int big_n = HV_LINEAR_GEMV_MAX_N + 1; /* the tiled regime */
    float *src = falloc(rows * cols), *x = falloc(big_n * cols), *y = falloc(big_n * rows);
    for (int ti = 1; ti < N_TYPES; ti++) {
        hv_weight_type t = all_types[ti];
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                float v = frand();
                switch (r % 4) {
                    case 0:
                        v *= t == HV_WEIGHTS_F16    ? 60000.0f
                             : t == HV_WEIGHTS_BF16 ? 1e30f
                             : t == HV_WEIGHTS_Q4_0 ? 4e5f
                                                    : 8e6f;
                        break;
                    case 1: v = c % 2 ? -0.0f : 0.0f; break;
                    case 2: v = t == HV_WEIGHTS_F16 ? v * 0x1p-20f : v * 1e-39f; break;
                    default: break;
                }
                src[r * cols + c] = v;
            }
        hv_mat W;
        void *st;
        hv_error e;
        CHECK(hv_mat_from_f32(&W, t, src, rows, cols, &st, &e) == HV_OK);
        float *w = dequant(&W);
        for (int n = 1; n <= big_n; n += big_n - 1) {
            for (int i = 0; i < n * cols; i++) x[i] = frand();
            hv_linear(pool, y, x, n, &W, NULL);
            int ok = 1;
            for (int i = 0; i < n; i++)
                for (int r = 0; r < rows; r++) {
                    double ref = 0;
                    for (int c = 0; c < cols; c++) ref += (double)x[i * cols + c] * w[r * cols + c];
                    double tol = tolerance(t, n, x + i * cols, w + r * cols, cols, 0);
                    float v = y[i * rows + r];
                    if (!(fabs(v - ref) <= tol)) ok = 0;
                    if (r % 4 == 1 && v != 0.0f) ok = 0;
                }
            CHECK_MSG(ok, "%s n=%d: big, zero, subnormal rows", hv_weight_type_name(t), n);
            /* a NaN or infinity in x makes that row's outputs non-finite */
            x[3] = NAN;
            x[(n - 1) * cols + 40] = INFINITY;
            hv_linear(pool, y, x, n, &W, NULL);
            ok = 1;
            for (int r = 0; r < rows; r++) ok &= isnan(y[r]) && !isfinite(y[(n - 1) * rows + r]);
            CHECK_MSG(ok, "%s n=%d: NaN and infinity reach the output", hv_weight_type_name(t), n);
        }
        free(w);
        free(st);
    }
    free(src);
    free(x);
    free(y);
    hv_pool_free(pool);
}

/* hv_linear_many (one packed input for several products) gives each
 * product exactly hv_linear's bits, for every type, few and many rows,
 * matrices of different heights, with and without bias, 1-3 threads; for
 * q8_0/q4_0 also with the x8 layout where the height allows (40, 304),
 * beside a row-by-row one (17). */
static void test_linear_many(void) {
    static const int ns[] = {1, 3, HV_LINEAR_GEMV_MAX_N, HV_LINEAR_GEMV_MAX_N + 1, 61, 300};
    static const int heights[3] = {40, 304, 17};
    enum { COLS = 96 };
    for (int ti = 0; ti < N_TYPES + 2; ti++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (int threads = 1; threads <= 3; threads++) {
                /* the last two rounds: q8_0 and q4_0 interleaved */
                int x8 = ti >= N_TYPES;
                hv_weight_type type =
                    x8 ? (ti == N_TYPES ? HV_WEIGHTS_Q8_0 : HV_WEIGHTS_Q4_0) : all_types[ti];
                int n = ns[ni], same = 1;
                hv_pool *pool = hv_pool_new(threads);
                float *x = falloc((size_t)n * COLS), *y[3], *want = falloc((size_t)n * 304);
                for (int i = 0; i < n * COLS; i++) x[i] = frand();
                hv_mat W[3];
                void *st[3];
                float *b[3];
                for (int m = 0; m < 3; m++) {
                    float *src = falloc((size_t)heights[m] * COLS);
                    for (int i = 0; i < heights[m] * COLS; i++) src[i] = frand() * 0.1f;
                    hv_error e;
                    CHECK(hv_mat_from_f32(&W[m], type, src, heights[m], COLS, &st[m], &e) == HV_OK);
                    void *st8;
                    if (x8 && hv_mat_interleave(&W[m], &st8, &e) == HV_OK) {
                        free(st[m]);
                        st[m] = st8;
                    }
                    free(src);
                    y[m] = falloc((size_t)n * heights[m]);
                    b[m] = m == 1 ? NULL : falloc(heights[m]);
                    for (int i = 0; b[m] && i < heights[m]; i++) b[m][i] = frand();
                }
                const hv_mat *Wp[3] = {&W[0], &W[1], &W[2]};
                const float *bp[3] = {b[0], b[1], b[2]};
                hv_linear_many(pool, n, x, 3, Wp, bp, y);
                for (int m = 0; m < 3; m++) {
                    hv_linear(pool, want, x, n, &W[m], b[m]);
                    same &= same_bits(want, y[m], (size_t)n * heights[m]);
                    free(st[m]);
                    free(y[m]);
                    free(b[m]);
                }
                CHECK_MSG(same, "hv_linear_many %s%s n=%d threads=%d: differs from hv_linear",
                          hv_weight_type_name(type), x8 ? " x8" : "", n, threads);
                free(x);
                free(want);
                hv_pool_free(pool);
            }
}

int main(void) {
    n_tables = simd_tables(tables);
    for (int t = 0; t < (n_tables ? n_tables : 1); t++) { /* the kernels called directly */
        simd = n_tables ? tables[t] : NULL;
        test_kernels_direct();
        test_x8_layout();
        test_r64_layout();
    }
    for (int t = 0; t < N_TYPES; t++) {
        test_linear(all_types[t], 1, 0);
        test_linear(all_types[t], 0, 0);
    }
    for (int exact = 0; exact < 2; exact++) /* the x8 and r64 layouts */
        for (int t = 0; t < N_TYPES; t++)
            if (all_types[t] == HV_WEIGHTS_Q8_0 || all_types[t] == HV_WEIGHTS_Q4_0 ||
                all_types[t] == HV_WEIGHTS_BF16)
                test_linear(all_types[t], exact, 1);
    test_special();
    test_linear_many();
    TEST_END();
}
