/* Reduced-precision weights: type names, the conversions from f32 (f16,
 * bf16, q8_0, q4_0, the 7-bit activations of the int8 products) against
 * their definitions, bit for bit between the SIMD and portable kernels. */
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

/* ------------------------------------------------------------ names */

/* The widening of every value of W by each SIMD table gives the portable
 * kernels' bits. */
static void check_widen_simd(const hv_mat *W) {
    const hv_mm_kernels *tables[8];
    int n = simd_tables(tables);
    long count = (long)W->rows * W->cols;
    float *a = falloc((size_t)count), *c = falloc((size_t)count);
    hv_mat_widen(&hv_mm_scalar, W, 0, 0, count, a);
    for (int t = 0; t < n; t++) {
        hv_mat_widen(tables[t], W, 0, 0, count, c);
        CHECK_MSG(same_bits(a, c, (size_t)count), "%s widen: scalar == %s",
                  hv_weight_type_name(W->type), tables[t]->name);
    }
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
    CHECK(hv_weight_type_parse("q8", &out) == HV_ERR_INVALID_ARG && out == HV_WEIGHTS_F16);
    CHECK(hv_weight_type_parse("BF16", &out) == HV_ERR_INVALID_ARG && out == HV_WEIGHTS_F16);
    CHECK(hv_weight_type_parse("f16x", &out) == HV_ERR_INVALID_ARG &&
          hv_weight_type_parse("", &out) == HV_ERR_INVALID_ARG);
    CHECK(hv_weight_type_parse("f1", &out) == HV_ERR_INVALID_ARG &&
          hv_weight_type_parse(NULL, &out) == HV_ERR_INVALID_ARG);
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
        const hv_mm_kernels *tables[8];
        int n_tables = simd_tables(tables);
        for (int t = 0; t < n_tables; t++) {
            const hv_mm_kernels *simd = tables[t];
            uint16_t *allb = malloc(65536 * sizeof *allb);
            float *a = falloc(65536), *b = falloc(65536);
            for (uint32_t h = 0; h < 65536; h++) allb[h] = (uint16_t)h;
            (bf ? hv_mm_scalar.widen_bf16 : hv_mm_scalar.widen_f16)(a, allb, 65536);
            (bf ? simd->widen_bf16 : simd->widen_f16)(b, allb, 65536);
            int ok = 1;
            for (int i = 0; i < 65536; i++)
                ok &= isnan(a[i]) ? isnan(b[i]) != 0 : memcmp(&a[i], &b[i], 4) == 0;
            CHECK_MSG(ok, "%s: %s widening == scalar", bf ? "bf16" : "f16", simd->name);
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

int main(void) {
    test_names();
    test_f16_bf16_roundtrip();
    test_q8_0_convert();
    test_q8_act();
    test_q4_0_convert();
    TEST_END();
}
