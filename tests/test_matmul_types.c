/* Reduced-precision weights: conversions, hv_linear for every weight type
 * against double-precision references on the dequantised weights, thread
 * and SIMD independence, special values. `test_matmul_types --bench`
 * instead prints speeds (docs/KERNELS.md). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"
#include "testlib.h"

static const hv_weight_type all_types[] = {HV_WEIGHTS_F32, HV_WEIGHTS_F16, HV_WEIGHTS_BF16,
                                           HV_WEIGHTS_Q8_0, HV_WEIGHTS_Q4_0};
#define N_TYPES (int)(sizeof all_types / sizeof all_types[0])

static unsigned rng = 12345;
static float frand(void) { /* [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) / 16777216.0 * 2.0 - 1.0);
}
static int irand(int lo, int hi) { /* [lo, hi] */
    rng = rng * 1664525u + 1013904223u;
    return lo + (int)((rng >> 8) % (unsigned)(hi - lo + 1));
}

static float *falloc(size_t n) {
    float *p = malloc(n * sizeof(float) + 1);
    if (!p) abort();
    return p;
}

/* The weights as hv_linear sees them, widened with the scalar kernels. */
static float *dequant(const hv_mat *W) {
    float *w = falloc((size_t)W->rows * W->cols);
    for (int r = 0; r < W->rows; r++) hv_mat_row_f32(W, r, w + (size_t)r * W->cols);
    return w;
}

static int same_bits(const float *a, const float *b, size_t n) {
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* ------------------------------------------------------------ names */

/* The SIMD widening of every value of W gives the portable kernels' bits. */
static void check_widen_simd(const hv_mat *W) {
    const hv_mm_kernels *simd = hv_mm_simd();
    if (!simd) return;
    long count = (long)W->rows * W->cols;
    float *a = falloc((size_t)count), *c = falloc((size_t)count);
    hv_mat_widen(&hv_mm_scalar, W, 0, 0, count, a);
    hv_mat_widen(simd, W, 0, 0, count, c);
    CHECK_MSG(same_bits(a, c, (size_t)count), "%s widen: scalar == %s",
              hv_weight_type_name(W->type), simd->name);
    free(a);
    free(c);
}

static void test_names(void) {
    /* every type, AUTO included, round-trips through the public parser */
    for (int t = 0; t < HV_N_WEIGHT_TYPES; t++) {
        hv_weight_type out = (hv_weight_type)99;
        CHECK(hv_weight_type_parse(hv_weight_type_name((hv_weight_type)t), &out) == 0 &&
              out == (hv_weight_type)t);
    }
    CHECK(strcmp(hv_weight_type_name(HV_WEIGHTS_AUTO), "auto") == 0);
    CHECK(strcmp(hv_weight_type_name(HV_WEIGHTS_F16), "f16") == 0);
    CHECK(strcmp(hv_weight_type_name(HV_WEIGHTS_Q8_0), "q8_0") == 0);
    CHECK(strcmp(hv_weight_type_name(HV_WEIGHTS_Q4_0), "q4_0") == 0);
    CHECK(strcmp(hv_weight_type_name((hv_weight_type)42), "?") == 0);
    hv_weight_type out = HV_WEIGHTS_F16;
    CHECK(hv_weight_type_parse("q8", &out) == -1 && out == HV_WEIGHTS_F16);
    CHECK(hv_weight_type_parse("BF16", &out) == -1 && out == HV_WEIGHTS_F16);
    CHECK(hv_weight_type_parse("f16x", &out) == -1 && hv_weight_type_parse("", &out) == -1);
    CHECK(hv_weight_type_parse("f1", &out) == -1 && hv_weight_type_parse(NULL, &out) == -1);
}

/* ------------------------------------------------------- conversions */

/* Converts src[count] as one row; returns the status, storage in *st. */
static hv_status conv(hv_mat *m, hv_weight_type t, const float *src, int rows, int cols,
                      void **st) {
    hv_error e;
    return hv_mat_from_f32(m, t, src, rows, cols, st, &e);
}

static void test_f16_bf16_roundtrip(void) {
    /* every finite f16/bf16 value and the infinities (NaNs apart) survive
     * f32 -> type -> f32 exactly: zeros, negative zero, subnormals, max */
    for (int bf = 0; bf < 2; bf++) {
        float *v = falloc(65536);
        uint16_t *bits = malloc(65536 * sizeof *bits);
        int n = 0;
        for (uint32_t h = 0; h < 65536; h++) {
            float f = bf ? hv_bf16_to_f32((uint16_t)h) : hv_f16_to_f32((uint16_t)h);
            if (isnan(f)) continue;
            bits[n] = (uint16_t)h;
            v[n++] = f;
        }
        hv_mat m;
        void *st;
        CHECK(conv(&m, bf ? HV_WEIGHTS_BF16 : HV_WEIGHTS_F16, v, 1, n, &st) == HV_OK);
        CHECK(m.data == st && m.rows == 1 && m.cols == n);
        CHECK(((uintptr_t)st & 63) == 0);
        CHECK(hv_mat_bytes(&m) == (size_t)n * 2);
        CHECK_MSG(memcmp(st, bits, (size_t)n * 2) == 0, "%s stores the exact bits",
                  bf ? "bf16" : "f16");
        float *back = dequant(&m);
        CHECK_MSG(same_bits(back, v, n), "%s widens exactly", bf ? "bf16" : "f16");
        /* the SIMD widening agrees bit for bit, NaNs included */
        const hv_mm_kernels *simd = hv_mm_simd();
        if (simd) {
            uint16_t *allb = malloc(65536 * sizeof *allb);
            float *a = falloc(65536), *b = falloc(65536);
            for (uint32_t h = 0; h < 65536; h++) allb[h] = (uint16_t)h;
            (bf ? hv_mm_scalar.widen_bf16 : hv_mm_scalar.widen_f16)(a, allb, 65536);
            (bf ? simd->widen_bf16 : simd->widen_f16)(b, allb, 65536);
            int ok = 1;
            for (int i = 0; i < 65536; i++)
                ok &= isnan(a[i]) ? isnan(b[i]) != 0 : memcmp(&a[i], &b[i], 4) == 0;
            CHECK_MSG(ok, "%s: SIMD widening == scalar", bf ? "bf16" : "f16");
            free(allb);
            free(a);
            free(b);
        }
        free(back);
        free(st);
        free(v);
        free(bits);
    }

    /* rounding: to nearest, ties to even; NaN stays NaN */
    float r[6] = {
        1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f, 65519.0f, 0x1p-25f, NAN};
    hv_mat m;
    void *st;
    CHECK(conv(&m, HV_WEIGHTS_F16, r, 2, 3, &st) == HV_OK);
    const uint16_t *h = st;
    CHECK(h[0] == 0x3c00 && h[1] == 0x3c02 && h[2] == 0x3c01);
    CHECK(h[3] == 0x7bff && h[4] == 0x0000 && isnan(hv_f16_to_f32(h[5])));
    free(st);
    float rb[4] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -0.0f, NAN};
    CHECK(conv(&m, HV_WEIGHTS_BF16, rb, 1, 4, &st) == HV_OK);
    h = st;
    CHECK(h[0] == 0x3f80 && h[1] == 0x3f82 && h[2] == 0x8000 && isnan(hv_bf16_to_f32(h[3])));
    free(st);

    /* overflow to infinity is refused (the matrix stays f32) */
    float big[3] = {1.0f, 65520.0f, 2.0f};
    st = &m;
    CHECK(conv(&m, HV_WEIGHTS_F16, big, 1, 3, &st) == HV_ERR_UNSUPPORTED && st == NULL);
    big[1] = FLT_MAX;
    CHECK(conv(&m, HV_WEIGHTS_BF16, big, 1, 3, &st) == HV_ERR_UNSUPPORTED && st == NULL);
    big[1] = 1e38f;
    CHECK(conv(&m, HV_WEIGHTS_BF16, big, 3, 1, &st) == HV_OK);
    free(st);
    big[1] = INFINITY; /* already infinite: kept */
    CHECK(conv(&m, HV_WEIGHTS_F16, big, 1, 3, &st) == HV_OK);
    CHECK(((const uint16_t *)st)[1] == 0x7c00);
    free(st);

    /* f32 copies; bad arguments */
    CHECK(conv(&m, HV_WEIGHTS_F32, r, 1, 5, &st) == HV_OK && memcmp(st, r, 5 * 4) == 0);
    CHECK(hv_mat_bytes(&m) == 20);
    free(st);
    CHECK(conv(&m, HV_WEIGHTS_F32, r, 0, 5, &st) == HV_ERR_INVALID_ARG && st == NULL);
    CHECK(conv(&m, HV_WEIGHTS_F16, r, 1, -1, &st) == HV_ERR_INVALID_ARG);
    CHECK(conv(&m, (hv_weight_type)9, r, 1, 1, &st) == HV_ERR_INVALID_ARG);
    CHECK(conv(&m, HV_WEIGHTS_AUTO, r, 1, 1, &st) == HV_ERR_INVALID_ARG && st == NULL);
}

static void test_q8_0_convert(void) {
    /* columns not a multiple of 32 are refused with UNSUPPORTED */
    float *v = falloc(64 * 96);
    for (int i = 0; i < 64 * 96; i++) v[i] = frand();
    hv_mat m = {HV_WEIGHTS_F32, 0, 0, NULL, 0, 0};
    void *st = &m;
    hv_error e;
    const int bad_cols[] = {1, 16, 31, 33, 48, 95};
    for (size_t i = 0; i < sizeof bad_cols / sizeof bad_cols[0]; i++) {
        CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, v, 2, bad_cols[i], &st, &e) ==
              HV_ERR_UNSUPPORTED);
        CHECK(st == NULL && m.data == NULL && e.status == HV_ERR_UNSUPPORTED);
    }

    /* blocks of every kind: magnitudes from subnormal to 1e6, all zero,
     * negative zeros, one outlier */
    const int rows = 64, cols = 96, nb = cols / 32;
    for (int b = 0; b < rows * nb; b++) {
        float *blk = v + b * 32;
        int kind = b % 8;
        float scale = powf(10.0f, (float)irand(-6, 6));
        for (int t = 0; t < 32; t++) {
            switch (kind) {
                case 0: blk[t] = frand() * scale; break;
                case 1: blk[t] = 0.0f; break;
                case 2: blk[t] = t % 2 ? -0.0f : 0.0f; break;
                case 3: blk[t] = frand() * 1e-40f; break;        /* f32 subnormals */
                case 4: blk[t] = frand() * 1e-6f; break;         /* f16-subnormal scale */
                case 5: blk[t] = t == 7 ? 1e6f : frand(); break; /* outlier */
                case 6: blk[t] = frand() * 4e-9f; break;         /* scale < 2^-24 */
                default: blk[t] = (float)irand(-127, 127) / 128.0f; break;
            }
        }
    }
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, v, rows, cols, &st, &e) == HV_OK);
    CHECK(m.type == HV_WEIGHTS_Q8_0 && m.rows == rows && m.cols == cols && m.data == st);
    CHECK(hv_mat_bytes(&m) == (size_t)rows * nb * 34 && sizeof(hv_q8_0_block) == 34);
    float *w = dequant(&m);
    const hv_q8_0_block *q = st;
    int ok_err = 1, ok_scale = 1, ok_q = 1;
    for (int b = 0; b < rows * nb; b++) {
        float amax = 0;
        for (int t = 0; t < 32; t++) amax = fmaxf(amax, fabsf(v[b * 32 + t]));
        double d = hv_f16_to_f32(q[b].d), want = amax / 127.0;
        /* the scale is amax/127 rounded up to an f16 (at least the smallest) */
        if (!(d >= (double)(amax / 127.0f) && d <= want * (1 + 0x1p-10) + 0x1p-24 &&
              (amax > 0 || d == 0)))
            ok_scale = 0;
        for (int t = 0; t < 32; t++) {
            if (q[b].q[t] < -127) ok_q = 0;
            double err = fabs((double)w[b * 32 + t] - v[b * 32 + t]);
            if (err > d / 2 * (1 + 1e-6)) ok_err = 0;
            if (w[b * 32 + t] != hv_f16_to_f32(q[b].d) * q[b].q[t]) ok_err = 0;
        }
    }
    CHECK_MSG(ok_err, "q8_0: every weight within scale/2 of the original");
    CHECK_MSG(ok_scale, "q8_0: scale = amax/127 rounded up to f16");
    CHECK(ok_q);
    CHECK(w[32] == 0.0f && w[63] == 0.0f && q[1].d == 0); /* block 1: zeros */
    /* values of the form k/128 with amax 127/128 come back exactly */
    int exact = 1;
    for (int b = 7; b < rows * nb; b += 8) {
        float amax = 0;
        for (int t = 0; t < 32; t++) amax = fmaxf(amax, fabsf(v[b * 32 + t]));
        if (amax == 127.0f / 128.0f)
            for (int t = 0; t < 32; t++) exact &= w[b * 32 + t] == v[b * 32 + t];
    }
    CHECK(exact);
    check_widen_simd(&m);
    free(w);
    free(st);

    /* refused: a scale beyond f16 (amax > 65504 * 127), NaN, infinity */
    float blk[32];
    for (int t = 0; t < 32; t++) blk[t] = 1.0f;
    blk[5] = 65504.0f * 127.0f; /* the largest amax that fits */
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, blk, 1, 32, &st, &e) == HV_OK);
    CHECK(((const hv_q8_0_block *)st)->d == 0x7bff && ((const hv_q8_0_block *)st)->q[5] == 127);
    free(st);
    blk[5] = 1e7f;
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, blk, 1, 32, &st, &e) == HV_ERR_UNSUPPORTED && !st);
    blk[5] = NAN;
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, blk, 1, 32, &st, &e) == HV_ERR_UNSUPPORTED && !st);
    blk[5] = -INFINITY;
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q8_0, blk, 1, 32, &st, &e) == HV_ERR_UNSUPPORTED && !st);
    free(v);
}

static void test_q8_act(void) {
    /* activation blocks: scale amax/127, |q| <= 127, error <= scale/2 */
    float x[96];
    for (int t = 0; t < 32; t++) x[t] = frand() * 3.0f;
    for (int t = 32; t < 64; t++) x[t] = 0.0f;
    for (int t = 64; t < 96; t++) x[t] = frand() * 1e-37f; /* d would be subnormal */
    x[70] = 1e-37f;
    float d[3];
    int8_t q[96];
    hv_q8_act a = {0, 0, d, q, NULL};
    hv_q8_act_quantize(&hv_mm_scalar, &a, x, 1, 96);
    CHECK(a.n == 1 && a.nb == 3);
    int ok = 1;
    for (int t = 0; t < 64; t++) {
        if (q[t] < -127) ok = 0;
        if (fabs((double)d[t / 32] * q[t] - x[t]) > d[t / 32] / 2 * (1 + 1e-6)) ok = 0;
    }
    for (int t = 64; t < 96; t++) ok &= q[t] == 0;
    CHECK(ok && d[0] > 0.0f && d[1] == 0.0f && d[2] == 0.0f);
    x[40] = NAN;
    x[70] = INFINITY;
    hv_q8_act_quantize(hv_mm_best(), &a, x, 1, 96);
    CHECK(isnan(d[1]) && isnan(d[2]) && !isnan(d[0]));
}

/* q4_0: the scale rule of matmul.h, no clipping, error <= |d| / 2, the
 * extreme value exact, nibble layout, refusals. */
static void test_q4_0_convert(void) {
    const int rows = 48, cols = 96, nb = cols / 32;
    float *v = falloc((size_t)rows * cols);
    hv_mat m = {HV_WEIGHTS_F32, 0, 0, NULL, 0, 0};
    void *st = &m;
    hv_error e;
    for (int i = 0; i < rows * cols; i++) v[i] = frand();
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q4_0, v, 2, 48, &st, &e) == HV_ERR_UNSUPPORTED &&
          st == NULL);
    for (int b = 0; b < rows * nb; b++) {
        float *blk = v + b * 32;
        float scale = powf(10.0f, (float)irand(-4, 4));
        for (int t = 0; t < 32; t++) {
            switch (b % 6) {
                case 0: blk[t] = frand() * scale; break;
                case 1: blk[t] = 0.0f; break;
                case 2: blk[t] = fabsf(frand()) * scale; break;  /* one sign */
                case 3: blk[t] = -fabsf(frand()) * scale; break; /* the other */
                case 4: blk[t] = t == 3 ? 1e4f : frand(); break; /* outlier */
                default: blk[t] = frand() * 1e-6f; break;        /* f16-subnormal scale */
            }
        }
    }
    CHECK(hv_mat_from_f32(&m, HV_WEIGHTS_Q4_0, v, rows, cols, &st, &e) == HV_OK);
    CHECK(m.type == HV_WEIGHTS_Q4_0 && hv_mat_bytes(&m) == (size_t)rows * nb * 18 &&
          sizeof(hv_q4_0_block) == 18);
    float *w = dequant(&m);
    const hv_q4_0_block *q = st;
    int ok_err = 1, ok_scale = 1, ok_extreme = 1;
    for (int b = 0; b < rows * nb; b++) {
        float mv = 0, o = 0;
        for (int t = 0; t < 32; t++)
            if (fabsf(v[b * 32 + t]) > fabsf(mv)) mv = v[b * 32 + t];
        for (int t = 0; t < 32; t++)
            if (v[b * 32 + t] * mv < 0) o = fmaxf(o, fabsf(v[b * 32 + t]));
        double d = hv_f16_to_f32(q[b].d), mag = fmax(fabs(mv) / 8.0, o / 7.0);
        if (!(fabs(d) >= mag && fabs(d) <= mag * (1 + 0x1p-10) + 0x1p-24)) ok_scale = 0;
        if (mv != 0 && !(d * mv < 0)) ok_scale = 0;
        for (int t = 0; t < 32; t++) {
            double err = fabs((double)w[b * 32 + t] - v[b * 32 + t]);
            if (err > fabs(d) / 2 * (1 + 1e-6)) ok_err = 0;
            int nib = t < 16 ? q[b].qs[t] & 15 : q[b].qs[t - 16] >> 4;
            if (w[b * 32 + t] != hv_f16_to_f32(q[b].d) * (float)(nib - 8)) ok_err = 0;
        }
        /* m / d rounds to -8 when d is exactly |m| / 8 */
        if (fabs(d) == fabs(mv) / 8.0) {
            for (int t = 0; t < 32; t++)
                if (v[b * 32 + t] == mv) ok_extreme &= w[b * 32 + t] == mv;
        }
    }
    CHECK_MSG(ok_err, "q4_0: every weight within |scale|/2, value = d * (nibble - 8)");
    CHECK_MSG(ok_scale, "q4_0: |scale| = max(|m|/8, o/7) rounded up to f16, sign opposite m");
    CHECK(ok_extreme);
    CHECK(q[1].d == 0 && w[32] == 0.0f); /* block 1: zeros */
    /* values k/8, k in [-8, 7], with a -1 in the block: exact */
    float blk[32];
    for (int t = 0; t < 32; t++) blk[t] = (float)(t % 16 - 8) / 8.0f;
    void *st2;
    hv_mat m2;
    CHECK(hv_mat_from_f32(&m2, HV_WEIGHTS_Q4_0, blk, 1, 32, &st2, &e) == HV_OK);
    float back[32];
    hv_mat_row_f32(&m2, 0, back);
    CHECK(memcmp(back, blk, sizeof blk) == 0 && ((const hv_q4_0_block *)st2)->d == 0x3000);
    free(st2);
    check_widen_simd(&m);
    free(w);
    free(st);
    /* refused: a scale beyond f16, NaN, infinity */
    for (int t = 0; t < 32; t++) blk[t] = 1.0f;
    blk[5] = 65504.0f * 8.0f; /* the largest |m| that fits */
    CHECK(hv_mat_from_f32(&m2, HV_WEIGHTS_Q4_0, blk, 1, 32, &st2, &e) == HV_OK);
    CHECK(((const hv_q4_0_block *)st2)->d == 0xfbff);
    free(st2);
    blk[5] = 1e6f;
    CHECK(hv_mat_from_f32(&m2, HV_WEIGHTS_Q4_0, blk, 1, 32, &st2, &e) == HV_ERR_UNSUPPORTED &&
          !st2);
    blk[5] = NAN;
    CHECK(hv_mat_from_f32(&m2, HV_WEIGHTS_Q4_0, blk, 1, 32, &st2, &e) == HV_ERR_UNSUPPORTED &&
          !st2);
    blk[5] = INFINITY;
    CHECK(hv_mat_from_f32(&m2, HV_WEIGHTS_Q4_0, blk, 1, 32, &st2, &e) == HV_ERR_UNSUPPORTED &&
          !st2);
    free(v);
}

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

/* fn (hv_linear_with or hv_linear_silu_with) on each of the 3 pools with
 * the best kernel table, and where `tables` (the product reaches the
 * tables) with the scalar one and the SIMD one: *threads_ok and
 * *tables_ok are cleared where a result is not want's bits. */
static void same_everywhere(linear_with_fn fn, hv_pool *const pools[3], int tables, const float *x,
                            int n, const hv_mat *W, const float *b, float *y, const float *want,
                            size_t ny, int *threads_ok, int *tables_ok) {
    const hv_mm_kernels *simd = hv_mm_simd();
    for (int p = 0; p < 3; p++) {
        fn(hv_mm_best(), pools[p], y, x, n, W, b);
        *threads_ok &= same_bits(y, want, ny);
    }
    if (simd && tables) {
        fn(&hv_mm_scalar, pools[1], y, x, n, W, b);
        *tables_ok &= same_bits(y, want, ny);
        fn(simd, pools[2], y, x, n, W, b);
        *tables_ok &= same_bits(y, want, ny);
    }
}

/* hv_linear_ep_with(ep) where same_everywhere runs fn: y must be want_y's
 * bits and, with a residual (reset from res0 before each call), the
 * residual want_res's. */
static void same_everywhere_ep(hv_pool *const pools[3], int tables, const float *x, int n,
                               const hv_mat *W, const float *b, hv_epilogue ep, const float *res0,
                               float *y, const float *want_y, const float *want_res, size_t ny,
                               int *ok) {
    const hv_mm_kernels *simd = hv_mm_simd();
    const hv_mm_kernels *ks[5] = {hv_mm_best(), hv_mm_best(), hv_mm_best(), &hv_mm_scalar, simd};
    hv_pool *ps[5] = {pools[0], pools[1], pools[2], pools[1], pools[2]};
    for (int r = 0; r < (simd && tables ? 5 : 3); r++) {
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
    const hv_mm_kernels *simd = hv_mm_simd();
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
            int tables = t != HV_WEIGHTS_F32 || simd;
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *b = with_bias ? bias : NULL;
                hv_linear(pools[0], y0, x, n, &W, b);
                same_everywhere(hv_linear_with, pools, tables, x, n, &W, b, y, y0, ny,
                                &same_threads, &same_simd);
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
                same_everywhere(hv_linear_silu_with, pools, tables, x, n, &W, b, y, ys, ny,
                                &silu_ok, &silu_ok);
                /* ReLU likewise */
                memcpy(ys, y0, ny * sizeof(float));
                hv_relu(ys, (long)ny);
                same_everywhere_ep(pools, tables, x, n, &W, b, (hv_epilogue){HV_ACT_RELU, NULL, 0},
                                   NULL, y, ys, NULL, ny, &relu_ok);
                /* the residual add: hv_linear then hv_add_scaled, y kept */
                float *res0 = falloc(ny), *res = falloc(ny), *want = falloc(ny);
                for (size_t i = 0; i < ny; i++) res0[i] = frand() * 4;
                memcpy(want, res0, ny * sizeof(float));
                hv_add_scaled(want, y0, (long)ny, 0.5f);
                same_everywhere_ep(pools, tables, x, n, &W, b,
                                   (hv_epilogue){HV_ACT_NONE, res, 0.5f}, res0, y, y0, want, ny,
                                   &add_ok);
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
            CHECK_MSG(same_simd, "%s n=%d %dx%d: scalar == %s", hv_weight_type_name(t), n, rows,
                      cols, simd ? simd->name : "-");
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
    const hv_mm_kernels *simd = hv_mm_simd();
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

    const hv_mm_kernels *simd = hv_mm_simd();
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
    const hv_mm_kernels *simd = hv_mm_simd();
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

/* --------------------------------------------------------- benchmark */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifdef HV_MM_HAVE_AVX2
#include <immintrin.h>

/* Multiply-accumulates per ns of one core, in the shape of a 6 x 16 GEMM
 * tile (12 independent accumulators, 2 weight vectors, 6 broadcasts per
 * step): f32 FMA (8 per instruction) against int8 through AVX2's
 * vpmaddubsw + vpmaddwd + vpaddd (32 per 3 instructions), the route an
 * int8 GEMM for q8_0 weights would take without VNNI. The ratio bounds
 * what such a GEMM could gain over the f32 one on this CPU. */
#define PROBE6(X) X(0) X(1) X(2) X(3) X(4) X(5)
__attribute__((target("avx2,fma"), noinline)) static double probe_f32(long steps, const float *in,
                                                                      float *out) {
#define PF_DECL(i) __m256 c##i = _mm256_setzero_ps(), d##i = c##i;
    PROBE6(PF_DECL)
    double t = now();
    for (long n = 0; n < steps; n++) {
        const float *a = in + (n & 7);
        __m256 b0 = _mm256_loadu_ps(in + 8), b1 = _mm256_loadu_ps(in + 16);
#define PF_STEP(i)                                                                                 \
    {                                                                                              \
        __m256 x = _mm256_broadcast_ss(a + i);                                                     \
        c##i = _mm256_fmadd_ps(x, b0, c##i), d##i = _mm256_fmadd_ps(x, b1, d##i);                  \
    }
        PROBE6(PF_STEP)
    }
    t = now() - t;
#define PF_SUM(i) *out += _mm256_cvtss_f32(_mm256_add_ps(c##i, d##i));
    PROBE6(PF_SUM)
    return steps * 12.0 * 8 / t * 1e-9;
}

__attribute__((target("avx2,fma"), noinline)) static double probe_int8(long steps, const int *in,
                                                                       int *out) {
#define PI_DECL(i) __m256i c##i = _mm256_setzero_si256(), d##i = c##i;
    PROBE6(PI_DECL)
    __m256i one = _mm256_set1_epi16(1);
    double t = now();
    for (long n = 0; n < steps; n++) {
        const int *a = in + (n & 7);
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(in + 8));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(in + 16));
#define PI_STEP(i)                                                                                 \
    {                                                                                              \
        __m256i x = _mm256_set1_epi32(a[i]);                                                       \
        c##i = _mm256_add_epi32(c##i, _mm256_madd_epi16(_mm256_maddubs_epi16(b0, x), one));        \
        d##i = _mm256_add_epi32(d##i, _mm256_madd_epi16(_mm256_maddubs_epi16(b1, x), one));        \
    }
        PROBE6(PI_STEP)
    }
    t = now() - t;
#define PI_SUM(i) *out += _mm256_cvtsi256_si32(_mm256_add_epi32(c##i, d##i));
    PROBE6(PI_SUM)
    return steps * 12.0 * 32 / t * 1e-9;
}

static void bench_arithmetic(void) {
    if (!hv_mm_simd()) return;
    float fin[32], fout = 0;
    int iin[32], iout = 0;
    for (int i = 0; i < 32; i++) fin[i] = 1.0f + frand() * 1e-3f, iin[i] = irand(0, 1 << 30);
    double f32 = 0, i8 = 0;
    for (int rep = 0; rep < 5; rep++) { /* best of 5 */
        double a = probe_f32(20000000, fin, &fout), b = probe_int8(20000000, iin, &iout);
        if (a > f32) f32 = a;
        if (b > i8) i8 = b;
    }
    printf("one core, multiply-accumulates per ns: f32 fma %.1f, int8 (vpmaddubsw+vpmaddwd+vpaddd) "
           "%.1f: %.2fx  [%g %d]\n",
           f32, i8, i8 / f32, (double)fout, iout);
}
#else
static void bench_arithmetic(void) {}
#endif

/* A decoder step's products from memory: n = 1 over the matrices of the
 * full-size decoder (8 layers of six 1024 x 1024 and the 4096 / 1024
 * feed-forward pair, then the 16384 x 1024 classifier; 268 MB in bf16),
 * each read once per sweep, so that no matrix is still cached when it
 * comes round again. The GEMV's read rate without the step's other work
 * (attention, norms, the pool's jobs), to set beside hviske-bench's
 * per-token time and --bandwidth probe. */
static void bench_decoder_sweep(void) {
    enum { LAYERS = 8, PER_LAYER = 8, N = LAYERS * PER_LAYER + 1 };
    int dims[N][2], n = 0;
    for (int l = 0; l < LAYERS; l++) {
        for (int i = 0; i < 6; i++) dims[n][0] = 1024, dims[n++][1] = 1024;
        dims[n][0] = 4096, dims[n++][1] = 1024;
        dims[n][0] = 1024, dims[n++][1] = 4096;
    }
    dims[n][0] = 16384, dims[n++][1] = 1024;
    const struct {
        hv_weight_type type;
        int x8;
    } kinds[] = {{HV_WEIGHTS_BF16, 0}, {HV_WEIGHTS_Q8_0, 1}};
    float *x = falloc(4096), *y = falloc(16384);
    for (int i = 0; i < 4096; i++) x[i] = frand();
    printf("decoder sweep from memory (n = 1, %d matrices as a full-size decoder step reads "
           "them):\n",
           N);
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        hv_mat W[N];
        void *st[N] = {0};
        double bytes = 0;
        int ok = 1;
        for (int m = 0; m < N && ok; m++) {
            long count = (long)dims[m][0] * dims[m][1];
            float *src = falloc((size_t)count);
            for (long i = 0; i < count; i++) src[i] = frand() * 0.05f;
            hv_error e;
            ok = hv_mat_from_f32(&W[m], kinds[ki].type, src, dims[m][0], dims[m][1], &st[m], &e) ==
                 HV_OK;
            free(src);
            if (ok && kinds[ki].x8) {
                void *x8 = NULL;
                ok = hv_mat_interleave(&W[m], &x8, &e) == HV_OK;
                free(st[m]);
                st[m] = x8;
            }
            if (ok) bytes += (double)hv_mat_bytes(&W[m]);
        }
        if (!ok)
            printf("  %s: the matrices could not be made\n", hv_weight_type_name(kinds[ki].type));
        for (int threads = 1; ok && threads <= 2; threads++) {
            hv_pool *pool = hv_pool_new(threads);
            double best = 1e30, t0 = now(), all;
            int reps = 0;
            while (reps < 5 || now() - t0 < 1.0) {
                double t1 = now();
                for (int m = 0; m < N; m++) hv_linear(pool, y, x, 1, &W[m], NULL);
                double dt = now() - t1;
                if (dt < best) best = dt;
                reps++;
            }
            all = (now() - t0) / reps;
            /* the mean too: a decoder step sees the typical rate, and on a
             * shared machine the two are far apart */
            printf("  %-9s %d thread%s: %.0f MB in %.2f ms best (%.1f GB/s), %.2f ms mean (%.1f "
                   "GB/s) of %d\n",
                   kinds[ki].x8 ? "q8_0 x8" : hv_weight_type_name(kinds[ki].type), threads,
                   threads > 1 ? "s" : " ", bytes / 1e6, best * 1e3, bytes / best * 1e-9, all * 1e3,
                   bytes / all * 1e-9, reps);
            hv_pool_free(pool);
        }
        for (int m = 0; m < N; m++) free(st[m]);
    }
    free(x);
    free(y);
}

static void bench(void) {
    bench_arithmetic();
    bench_decoder_sweep();
    const struct {
        int n, rows, cols;
        const char *what;
    } cases[] = {
        {1, 1024, 4096, "decoder dense_out"},
        {1, 4096, 1024, "decoder dense_in"},
        {1, 16384, 1024, "vocab head"},
        {375, 5120, 1280, "encoder ff linear1"},
    };
    const hv_mm_kernels *k = hv_mm_best();
    printf("kernels: %s; best of repeated runs (>= 0.4 s per row); GB/s counts the\n"
           "weight bytes only; f32 takes gemv_f32 and the packed GEMM (OpenBLAS without\n"
           "the SIMD kernels)\n",
           k->name);
    printf("%-16s %-18s %-11s %3s %9s %9s %8s\n", "n x rows x cols", "layer", "type", "thr", "ms",
           "GFLOP/s", "GB/s");
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int n = cases[ci].n, rows = cases[ci].rows, cols = cases[ci].cols;
        float *src = falloc((size_t)rows * cols), *x = falloc((size_t)n * cols);
        float *y = falloc((size_t)n * rows), *b = falloc(rows);
        for (size_t i = 0; i < (size_t)rows * cols; i++) src[i] = frand() * 0.05f;
        for (int i = 0; i < n * cols; i++) x[i] = frand();
        for (int i = 0; i < rows; i++) b[i] = frand();
        for (int ti = 0; ti < N_TYPES; ti++) {
            hv_mat W;
            void *st;
            hv_error e;
            if (hv_mat_from_f32(&W, all_types[ti], src, rows, cols, &st, &e) != HV_OK) continue;
            /* 1 and 2 threads with the best kernels; the portable ones on
             * 1 thread for the decoder shapes */
            for (int run = 0; run < 3; run++) {
                int threads = run == 2 ? 1 : run + 1;
                const hv_mm_kernels *kr = run == 2 ? &hv_mm_scalar : k;
                if (run == 2 &&
                    (n > HV_LINEAR_GEMV_MAX_N || all_types[ti] == HV_WEIGHTS_F32 || kr == k))
                    continue;
                hv_pool *pool = hv_pool_new(threads);
                hv_linear_with(kr, pool, y, x, n, &W, b); /* warm up */
                double best = 1e30, t0 = now();
                int reps = 0;
                while (reps < 3 || now() - t0 < 0.4) {
                    double t1 = now();
                    hv_linear_with(kr, pool, y, x, n, &W, b);
                    double dt = now() - t1;
                    if (dt < best) best = dt;
                    reps++;
                }
                char sh[32], ty[16];
                snprintf(sh, sizeof sh, "%dx%dx%d", n, rows, cols);
                snprintf(ty, sizeof ty, "%s%s", hv_weight_type_name(all_types[ti]),
                         run == 2 ? " scalar" : "");
                printf("%-16s %-18s %-11s %3d %9.3f %9.1f %8.1f\n", sh, cases[ci].what, ty, threads,
                       best * 1e3, 2.0 * n * rows * cols / best * 1e-9,
                       hv_mat_bytes(&W) / best * 1e-9);
                hv_pool_free(pool);
            }
            free(st);
        }
        free(src);
        free(x);
        free(y);
        free(b);
    }
}

/* The int8 GEMM's micro-kernel and panel transpose on their own: the
 * extremes (u = 1 and 127 against w = -127 and 127, where the unsigned-by-
 * signed pair sums come closest to saturating), 1 to 8 blocks, from zero
 * and accumulating, with and without a bias; SIMD bit for bit scalar, both
 * equal to the exact integer dot scaled in f64 within one rounding per
 * block. */
static void test_gemm_q8_tile(void) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR, MAXB = 8 };
    static uint8_t a[MAXB * 8 * MR * 4];
    static int8_t b[MAXB * 8 * NR * 4];
    float ad[MAXB * MR], bd[MAXB * NR], c0[MR * NR], c1[MR * NR], start[MR * NR];
    float bias[NR], want[MR * NR];
    int32_t bc[MAXB * NR];
    const hv_mm_kernels *simd = hv_mm_simd();
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < sizeof a; i++)
            a[i] = (uint8_t)(round == 0 ? 127 : round == 1 ? 1 : irand(1, 127));
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (int8_t)(round < 2 ? (i % 3 ? 127 : -127) : irand(-127, 127));
        for (int i = 0; i < MAXB * MR; i++) ad[i] = frand() * 0.01f;
        for (int i = 0; i < MAXB * NR; i++) bd[i] = frand() * 0.01f;
        for (int blk = 0; blk < MAXB; blk++)
            for (int j = 0; j < NR; j++) {
                int32_t sum = 0;
                for (int q = blk * 8; q < blk * 8 + 8; q++)
                    for (int t = 0; t < 4; t++) sum += b[(q * NR + j) * 4 + t];
                bc[blk * NR + j] = 64 * sum;
            }
        for (int i = 0; i < MR * NR; i++) start[i] = frand();
        for (int j = 0; j < NR; j++) bias[j] = frand();
        for (int nbk = 1; nbk <= MAXB; nbk++)
            for (int acc = 0; acc < 2; acc++) {
                memcpy(c0, start, sizeof c0);
                hv_mm_scalar.gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c0, NR, acc, NULL);
                int ok = 1;
                for (int i = 0; i < MR; i++)
                    for (int j = 0; j < NR; j++) {
                        double ref = acc ? start[i * NR + j] : 0, mag = fabs(ref);
                        for (int blk = 0; blk < nbk; blk++) {
                            long p = 0;
                            for (int q = blk * 8; q < blk * 8 + 8; q++)
                                for (int t = 0; t < 4; t++)
                                    p += (long)(a[(q * MR + i) * 4 + t] - 64) *
                                         b[(q * NR + j) * 4 + t];
                            double term = (double)ad[blk * MR + i] * bd[blk * NR + j] * p;
                            ref += term;
                            mag += fabs(term);
                        }
                        ok &= fabs(c0[i * NR + j] - ref) <= 2.0 * (nbk + 1) * mag * 0x1p-24;
                    }
                CHECK_MSG(ok, "int8 tile round %d, %d blocks, accumulate %d: exact dot", round, nbk,
                          acc);
                if (simd) {
                    memcpy(c1, start, sizeof c1);
                    simd->gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c1, NR, acc, NULL);
                    CHECK_MSG(same_bits(c0, c1, MR * NR), "int8 tile round %d, %d blocks, acc %d",
                              round, nbk, acc);
                }
                /* with a bias: the sums above, then + bias, in both tables */
                for (int i = 0; i < MR * NR; i++) want[i] = c0[i] + bias[i % NR];
                for (int table = 0; table < (simd ? 2 : 1); table++) {
                    memcpy(c1, start, sizeof c1);
                    (table ? simd : &hv_mm_scalar)
                        ->gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c1, NR, acc, bias);
                    CHECK_MSG(same_bits(want, c1, MR * NR),
                              "int8 tile round %d, %d blocks, acc %d, bias, table %d", round, nbk,
                              acc, table);
                }
            }
    }
    /* activation blocks: SIMD quantization gives the scalar bytes and
     * scale, for random, tied (x / d = k + 1/2), zero, tiny, huge, NaN and
     * infinite values */
    for (int round = 0; round < 9; round++) {
        float x[32];
        for (int t = 0; t < 32; t++) x[t] = frand() * (round == 3 ? 1e-38f : 1.0f);
        if (round == 1) /* amax 63 * 0.25: d = 0.25, halves fall on ties */
            for (int t = 0; t < 32; t++) x[t] = (t == 0 ? 63 : irand(-62, 62) + 0.5f) * 0.25f;
        if (round == 2) memset(x, 0, sizeof x), x[7] = -0.0f;
        if (round == 4) x[9] = 3e38f, x[10] = -3e38f;
        if (round == 5) x[31] = NAN;
        if (round == 6) x[0] = -INFINITY;
        if (round == 7) x[4] = 0x1p-130f, x[5] = -0x1p-149f; /* subnormals only */
        if (round == 7)
            for (int t = 0; t < 32; t++)
                if (t != 4 && t != 5) x[t] = 0.0f;
        uint8_t u0[32], u1[32];
        float d0 = hv_mm_scalar.quantize_q7(x, u0);
        int ok = 1;
        for (int t = 0; t < 32; t++) ok &= u0[t] >= 1 && u0[t] <= 127;
        if (d0 > 0)
            for (int t = 0; t < 32; t++) ok &= fabs(x[t] - d0 * (u0[t] - 64)) <= d0 / 2 * 1.0001;
        CHECK_MSG(ok, "q7 quantization round %d: within d / 2", round);
        if (round >= 5 && round <= 6) CHECK_MSG(isnan(d0), "q7 round %d: NaN scale", round);
        if (simd) {
            float d1 = simd->quantize_q7(x, u1);
            CHECK_MSG(same_bits(&d0, &d1, 1) && memcmp(u0, u1, 32) == 0,
                      "q7 quantization round %d: SIMD == scalar", round);
        }
        /* the GEMV's 127 levels (hv_q8_act_quantize) */
        int8_t q0[32], q1[32];
        d0 = hv_mm_scalar.quantize_q8(x, q0);
        ok = 1;
        for (int t = 0; t < 32; t++) ok &= q0[t] >= -127;
        if (d0 > 0)
            for (int t = 0; t < 32; t++) ok &= fabs(x[t] - d0 * q0[t]) <= d0 / 2 * 1.0001;
        CHECK_MSG(ok, "q8 quantization round %d: within d / 2", round);
        if (simd) {
            float d1 = simd->quantize_q8(x, q1);
            CHECK_MSG(same_bits(&d0, &d1, 1) && memcmp(q0, q1, 32) == 0,
                      "q8 quantization round %d: SIMD == scalar", round);
        }
    }
    /* the panel transpose moves words untouched, NaN patterns included */
    uint32_t src[NR * 21], d0[NR * 21], d1[NR * 21];
    for (int i = 0; i < NR * 21; i++) src[i] = (uint32_t)rand() * 2654435761u ^ (uint32_t)i;
    src[5] = 0x7f800001u; /* a signalling NaN as a float */
    for (int kq = 1; kq <= 21; kq += 4) {
        hv_mm_scalar.gemm_panel(d0, src, 21, kq);
        int ok = 1;
        for (int k = 0; k < kq; k++)
            for (int r = 0; r < NR; r++) ok &= d0[k * NR + r] == src[r * 21 + k];
        CHECK_MSG(ok, "panel of 32-bit words, %d words", kq);
        if (simd) {
            simd->gemm_panel(d1, src, 21, kq);
            CHECK_MSG(memcmp(d0, d1, (size_t)kq * NR * 4) == 0,
                      "SIMD panel of 32-bit words, %d words", kq);
        }
    }
    /* the activation panel: MR rows moved bit for bit, nothing written
     * past its kc * MR floats (guard words after it stay) */
    enum { MRX = HV_GEMM_MR };
    for (int kq = 1; kq <= 21; kq++) {
        uint32_t x0[MRX * 21 + 4], x1[MRX * 21 + 4];
        memset(x0, 0xa5, sizeof x0);
        memset(x1, 0xa5, sizeof x1);
        hv_mm_scalar.gemm_pack_x((float *)x0, (const float *)src, 21, kq);
        int ok = 1;
        for (int k = 0; k < kq; k++)
            for (int i = 0; i < MRX; i++) ok &= x0[k * MRX + i] == src[i * 21 + k];
        for (int g = kq * MRX; g < MRX * 21 + 4; g++) ok &= x0[g] == 0xa5a5a5a5u;
        CHECK_MSG(ok, "activation panel, %d columns", kq);
        if (simd) {
            simd->gemm_pack_x((float *)x1, (const float *)src, 21, kq);
            CHECK_MSG(memcmp(x0, x1, sizeof x0) == 0, "SIMD activation panel, %d columns", kq);
        }
    }
    /* the half-precision panels: widen_f16 / widen_bf16's values moved as
     * gemm_panel moves them, scalar and SIMD, infinities and subnormals
     * among them */
    uint16_t hsrc[NR * 21];
    for (int i = 0; i < NR * 21; i++) hsrc[i] = (uint16_t)(rand() * 2654435761u >> 7);
    hsrc[3] = 0x7c00, hsrc[4] = 0xfc00, hsrc[6] = 0x0001,
    hsrc[7] = 0x8000;                   /* f16 +-inf, subnormal, -0 */
    hsrc[8] = 0x7f80, hsrc[9] = 0x0001; /* bf16 inf, subnormal */
    for (int i = 0; i < NR * 21; i++)
        if ((hsrc[i] & 0x7c00) == 0x7c00 && (hsrc[i] & 0x3ff)) hsrc[i] &= 0xfc00; /* no f16 NaN */
    for (int i = 0; i < NR * 21; i++)
        if ((hsrc[i] & 0x7f80) == 0x7f80 && (hsrc[i] & 0x7f)) hsrc[i] &= 0xff80; /* no bf16 NaN */
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (int kq = 1; kq <= 21; kq += 4) {
            float wide[NR * 21], want[NR * 21], got[NR * 21];
            for (int r = 0; r < NR; r++)
                (bf16 ? hv_mm_scalar.widen_bf16 : hv_mm_scalar.widen_f16)(wide + r * 21,
                                                                          hsrc + r * 21, 21);
            hv_mm_scalar.gemm_panel(want, wide, 21, kq);
            hv_mm_scalar.gemm_panel_half(got, hsrc, 21, kq, bf16);
            CHECK_MSG(same_bits(want, got, (size_t)kq * NR), "%s panel, %d columns",
                      bf16 ? "bf16" : "f16", kq);
            if (simd) {
                simd->gemm_panel_half(got, hsrc, 21, kq, bf16);
                CHECK_MSG(same_bits(want, got, (size_t)kq * NR), "SIMD %s panel, %d columns",
                          bf16 ? "bf16" : "f16", kq);
            }
        }
}

/* The decoder's attention kernels: the SIMD ones bit for bit the scalar
 * ones, both within the rounding bound of an f64 reference (a sum of m
 * products in f32 is within m * 2^-24 of the sum of their magnitudes). */
static void test_attention(void) {
    const hv_mm_kernels *simd = hv_mm_simd();
    const int ns[] = {1, 3, 4, 5, 16, 17, 40}, lens[] = {1, 7, 8, 9, 64, 65, 128, 130};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            int n = ns[a], len = lens[b];
            long ld = len + 3;
            float *q = falloc(len), *k = falloc((size_t)n * ld), *p = falloc(n);
            float *s0 = falloc(n), *s1 = falloc(n), *o0 = falloc(len), *o1 = falloc(len);
            float *start = falloc(len);
            for (int i = 0; i < len; i++) q[i] = frand(), start[i] = frand();
            for (long i = 0; i < n * ld; i++) k[i] = frand();
            for (int i = 0; i < n; i++) p[i] = frand();
            float scale = 0.125f;
            hv_mm_scalar.attn_scores(s0, q, k, ld, n, len, scale);
            for (int i = 0; i < n; i++) {
                double ref = 0, mag = 0;
                for (int c = 0; c < len; c++) {
                    ref += (double)q[c] * k[i * ld + c];
                    mag += fabs((double)q[c] * k[i * ld + c]);
                }
                double bound = scale * (len + 1) * mag * 0x1p-24 + fabs(scale * ref) * 0x1p-24;
                CHECK_MSG(fabs(s0[i] - scale * ref) <= bound, "scores n %d len %d row %d", n, len,
                          i);
            }
            hv_attn_scores(s1, q, k, 0, ld, n, len, scale);
            CHECK_MSG(same_bits(s0, s1, n), "hv_attn_scores n %d len %d", n, len);
            for (int acc = 0; acc < 2; acc++) {
                memcpy(o0, start, (size_t)len * sizeof *o0);
                hv_mm_scalar.attn_context(o0, p, k, ld, n, len, acc);
                for (int c = 0; c < len; c++) {
                    double ref = acc ? start[c] : 0, mag = fabs(ref);
                    for (int i = 0; i < n; i++) {
                        ref += (double)p[i] * k[i * ld + c];
                        mag += fabs((double)p[i] * k[i * ld + c]);
                    }
                    CHECK_MSG(fabs(o0[c] - ref) <= (n + 1) * mag * 0x1p-24,
                              "context n %d len %d col %d", n, len, c);
                }
                memcpy(o1, start, (size_t)len * sizeof *o1);
                hv_attn_context(o1, p, k, 0, ld, n, len, acc);
                CHECK_MSG(same_bits(o0, o1, len), "hv_attn_context n %d len %d acc %d", n, len,
                          acc);
                if (simd) {
                    memcpy(o1, start, (size_t)len * sizeof *o1);
                    simd->attn_context(o1, p, k, ld, n, len, acc);
                    CHECK_MSG(same_bits(o0, o1, len), "SIMD context n %d len %d acc %d", n, len,
                              acc);
                }
            }
            if (simd) {
                simd->attn_scores(s1, q, k, ld, n, len, scale);
                CHECK_MSG(same_bits(s0, s1, n), "SIMD scores n %d len %d", n, len);
            }
            free(q), free(k), free(p), free(s0), free(s1), free(o0), free(o1), free(start);
        }
}

/* The f16-cache kernels: exactly the f32 kernels on the widened rows
 * (scalar), SIMD == scalar; the f16 store rounds to nearest even, clamps
 * to +-65504 and keeps NaN, SIMD == scalar. */
static void test_attention_f16(void) {
    const hv_mm_kernels *simd = hv_mm_simd();
    const int ns[] = {1, 4, 5, 17}, lens[] = {1, 8, 9, 64, 128, 130};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            int n = ns[a], len = lens[b];
            long ld = len + 5;
            uint16_t *k16 = malloc((size_t)n * ld * sizeof *k16);
            float *kw = falloc((size_t)n * ld), *q = falloc(len), *p = falloc(n);
            float *s0 = falloc(n), *s1 = falloc(n), *o0 = falloc(len), *o1 = falloc(len);
            for (long i = 0; i < n * ld; i++) {
                k16[i] = hv_f32_to_f16(frand() * 4.0f);
                kw[i] = hv_f16_to_f32(k16[i]);
            }
            for (int i = 0; i < len; i++) q[i] = frand();
            for (int i = 0; i < n; i++) p[i] = frand();
            hv_mm_scalar.attn_scores(s0, q, kw, ld, n, len, 0.125f);
            hv_mm_scalar.attn_scores_f16(s1, q, k16, ld, n, len, 0.125f);
            CHECK_MSG(same_bits(s0, s1, n), "f16 scores == f32 on widened rows, n %d len %d", n,
                      len);
            hv_attn_scores(s1, q, k16, 1, ld, n, len, 0.125f);
            CHECK_MSG(same_bits(s0, s1, n), "hv_attn_scores f16 n %d len %d", n, len);
            if (simd) {
                simd->attn_scores_f16(s1, q, k16, ld, n, len, 0.125f);
                CHECK_MSG(same_bits(s0, s1, n), "SIMD f16 scores n %d len %d", n, len);
            }
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < len; i++) o0[i] = o1[i] = (float)i;
                hv_mm_scalar.attn_context(o0, p, kw, ld, n, len, acc);
                hv_mm_scalar.attn_context_f16(o1, p, k16, ld, n, len, acc);
                CHECK_MSG(same_bits(o0, o1, len), "f16 context n %d len %d acc %d", n, len, acc);
                if (simd) {
                    for (int i = 0; i < len; i++) o1[i] = (float)i;
                    simd->attn_context_f16(o1, p, k16, ld, n, len, acc);
                    CHECK_MSG(same_bits(o0, o1, len), "SIMD f16 context n %d len %d acc %d", n, len,
                              acc);
                }
            }
            free(k16), free(kw), free(q), free(p), free(s0), free(s1), free(o0), free(o1);
        }
    enum { N = 203 };
    float v[N];
    uint16_t h0[N], h1[N];
    for (int i = 0; i < N; i++) v[i] = frand() * powf(2.0f, (float)(i % 40 - 28));
    v[0] = 1e6f, v[1] = -1e6f, v[2] = INFINITY, v[3] = -INFINITY, v[4] = 65519.0f;
    v[5] = 0x1p-24f, v[6] = 0x1p-25f, v[7] = 3 * 0x1p-25f, v[8] = -0.0f, v[9] = NAN;
    v[10] = 1.0f + 0x1p-11f, v[11] = 1.0f + 3 * 0x1p-11f; /* ties to even */
    v[N - 1] = NAN;
    hv_mm_scalar.narrow_f16(h0, v, N);
    CHECK(h0[0] == 0x7bff && h0[1] == 0xfbff && h0[2] == 0x7bff && h0[3] == 0xfbff &&
          h0[4] == 0x7bff);
    CHECK(h0[5] == 0x0001 && h0[6] == 0x0000 && h0[7] == 0x0002 && h0[8] == 0x8000);
    CHECK(h0[10] == 0x3c00 && h0[11] == 0x3c02);
    int ok = 1;
    for (int i = 0; i < N; i++) {
        float w = hv_f16_to_f32(h0[i]);
        if (isnan(v[i]))
            ok &= isnan(w) != 0;
        else if (fabsf(v[i]) <= 65504.0f)
            ok &= fabsf(w - v[i]) <= fabsf(v[i]) * 0x1p-11f + 0x1p-25f;
    }
    CHECK_MSG(ok, "f16 store within half an ulp, NaN kept");
    if (simd) {
        for (int len = 1; len <= N; len += 29) {
            simd->narrow_f16(h1, v, len);
            int same = 1;
            for (int i = 0; i < len; i++)
                same &=
                    isnan(v[i]) ? (h1[i] & 0x7c00) == 0x7c00 && (h1[i] & 0x3ff) : h1[i] == h0[i];
            CHECK_MSG(same, "SIMD f16 store == scalar, %d values", len);
        }
    }
}

/* The packed GEMMs' split of their products into task chunks: every row
 * of every product in exactly one chunk, in order, whole panels but at a
 * product's end; hv_gemm_outs_taper (2 or more threads) cuts the last
 * product's last chunks, one per thread, into quarters. */
static void test_gemm_chunks(void) {
    static const int heights[][3] = {{1, 0, 0},          {128, 0, 0},   {130, 0, 0},
                                     {520, 0, 0},        {1280, 0, 0},  {5120, 0, 0},
                                     {1280, 1280, 1280}, {40, 304, 17}, {2560, 24, 1000}};
    static const int thread_counts[] = {0, 1, 2, 3, 16}; /* 0: no taper */
    for (size_t c = 0; c < sizeof heights / sizeof heights[0]; c++)
        for (size_t ti = 0; ti < sizeof thread_counts / sizeof thread_counts[0]; ti++) {
            int threads = thread_counts[ti];
            hv_mat W[3];
            const hv_mat *Wp[3];
            const float *bias[3] = {NULL, NULL, NULL};
            float *y[3] = {NULL, NULL, NULL};
            int count = 0;
            for (; count < 3 && heights[c][count]; count++) {
                memset(&W[count], 0, sizeof W[count]);
                W[count].type = HV_WEIGHTS_F32;
                W[count].rows = heights[c][count];
                W[count].cols = 64;
                Wp[count] = &W[count];
            }
            hv_gemm_outs o;
            CHECK(hv_gemm_outs_init(&o, count, Wp, bias, y, hv_gemm_chunk_rows, NULL) == 0);
            int untapered = o.n_chunks;
            if (threads) hv_gemm_outs_taper(&o, threads);
            int want_m = 0, want_r0 = 0, ok = 1, chunks = 0, small = 0;
            int last = W[count - 1].rows, big = hv_gemm_chunk_rows(&W[count - 1]);
            int m, r0, r1;
            while (hv_gemm_outs_next(&o, &m, &r0, &r1)) {
                chunks++;
                if (m != want_m || r0 != want_r0 || r1 <= r0 || r1 > W[m].rows) ok = 0;
                if (r1 < W[m].rows && (r1 - r0) % HV_GEMM_NR) ok = 0;
                if (r1 - r0 > o.max_chunk) ok = 0;
                small += m == count - 1 && r1 - r0 <= big / 4;
                want_r0 = r1;
                if (r1 == W[m].rows) want_m++, want_r0 = 0;
            }
            CHECK_MSG(ok && want_m == count && chunks == o.n_chunks,
                      "chunks of case %zu (%d threads): every row once, in order", c, threads);
            /* the rows that the tapered chunks cover, in quarters */
            int n_big = (last + big - 1) / big, tail = threads < n_big ? threads : n_big;
            int fine = (big / 4) & ~(HV_GEMM_NR - 1), tail_rows = last - (n_big - tail) * big;
            int want_small = threads >= 2 && fine >= HV_GEMM_NR
                                 ? (tail_rows + fine - 1) / fine
                                 : (last % big && last % big <= big / 4);
            CHECK_MSG(threads >= 2 || o.n_chunks == untapered, "case %zu: no taper for %d threads",
                      c, threads);
            CHECK_MSG(small == want_small,
                      "case %zu, %d threads: %d small chunks of the last product, want %d", c,
                      threads, small, want_small);
        }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench();
        return 0;
    }
    test_names();
    test_f16_bf16_roundtrip();
    test_q8_0_convert();
    test_q8_act();
    test_q4_0_convert();
    test_kernels_direct();
    for (int t = 0; t < N_TYPES; t++) {
        test_linear(all_types[t], 1, 0);
        test_linear(all_types[t], 0, 0);
    }
    for (int exact = 0; exact < 2; exact++) /* the x8 and r64 layouts */
        for (int t = 0; t < N_TYPES; t++)
            if (all_types[t] == HV_WEIGHTS_Q8_0 || all_types[t] == HV_WEIGHTS_Q4_0 ||
                all_types[t] == HV_WEIGHTS_BF16)
                test_linear(all_types[t], exact, 1);
    test_x8_layout();
    test_r64_layout();
    test_special();
    test_linear_many();
    test_attention();
    test_attention_f16();
    test_gemm_q8_tile();
    test_gemm_chunks();
    TEST_END();
}
