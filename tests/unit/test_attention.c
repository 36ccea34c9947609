/* The encoder's relative-position attention (hv_attention_heads) in both
 * compute modes against a double-precision reference of the same
 * arithmetic:
 * - f32: the reference on the f32 operands, within the bound of f32 sums;
 * - bf16: the reference on bf16-rounded operands ((q + u), (q + v), k, v,
 *   the positions) and bf16-rounded probabilities. Products of bf16 values
 *   are exact in f32, so the output differs from it only by the order of
 *   f32 sums, except where a probability lies so close to a bf16 rounding
 *   midpoint that the f32 scores' own rounding can tip it: there one bf16
 *   step (2^-7 of the probability) is allowed. The f32 output must miss
 *   that bound somewhere (the bound tells the modes apart). On our kernels
 *   (the emulation), on oneDNN's f32 engine (the engine's padded shape
 *   classes and strides, the rounded values as floats) and on a bf16
 *   engine (the operands as bf16 bits): oneDNN's bf16 primitives where the
 *   CPU has them, elsewhere an engine without primitives, whose products
 *   hv_onednn_matmul's own loops compute from the bf16 bits, strides and
 *   padding the attention hands oneDNN, so that the native path's layout
 *   is checked on every host.
 * Odd lengths (1, 7, 33, 200 frames, some padded), heads of 16 and 160
 * values, pools of 1 and 3 threads.
 * And a layer's attention from its input (hv_eng_attention): the bits of
 * the LayerNorm's q, k, v projections followed by hv_attention_heads, in
 * both modes and on each engine; on oneDNN's bf16 primitives without the
 * f32 q, k, v ever written (the projections' outputs go straight into the
 * heads' bf16 operands). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/engine.h"
#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/onednn.h"
#include "kernels/threads.h"
#include "testlib.h"

static float rnd(float x) { return hv_bf16_to_f32(hv_f32_to_bf16(x)); }

typedef struct attn_in {
    int n, len, d, H;
    float *q, *k, *v, *p, *u, *vb; /* [n x d] x 3, [(2n-1) x d], [d] x 2 */
} attn_in;

/* The reference's output [n x d] and, per output, the bound of its
 * difference from an engine's. */
typedef struct attn_ref {
    double *y, *tol;
} attn_ref;

/* f32 relative rounding */
#define EPS 5.97e-8

static attn_ref reference(const attn_in *a, int bf16) {
    int n = a->n, len = a->len, d = a->d, H = a->H, dh = d / H;
    attn_ref r = {calloc((size_t)n * d, sizeof(double)), calloc((size_t)n * d, sizeof(double))};
    double *s = malloc((size_t)len * sizeof *s), *mag = malloc((size_t)len * sizeof *mag);
    float *pr = malloc((size_t)len * sizeof *pr);
    int *tip = malloc((size_t)len * sizeof *tip);
    if (!r.y || !r.tol || !s || !mag || !pr || !tip) abort();
    float scale = 1.0f / sqrtf((float)dh);
    for (int h = 0; h < H; h++)
        for (int i = 0; i < len; i++) {
            double most = -1e300, magmax = 0;
            for (int j = 0; j < len; j++) {
                double ac = 0, bd = 0, m = 0;
                for (int t = 0; t < dh; t++) {
                    int c = h * dh + t;
                    float qu = a->q[(long)i * d + c] + a->u[c];
                    float qv = a->q[(long)i * d + c] + a->vb[c];
                    float k = a->k[(long)j * d + c], p = a->p[(long)(n - 1 - i + j) * d + c];
                    if (bf16) qu = rnd(qu), qv = rnd(qv), k = rnd(k), p = rnd(p);
                    ac += (double)qu * k, bd += (double)qv * p;
                    m += fabs((double)qu * k) + fabs((double)qv * p);
                }
                s[j] = (ac + bd) * scale;
                mag[j] = m * scale;
                if (s[j] > most) most = s[j];
                if (mag[j] > magmax) magmax = mag[j];
            }
            double sum = 0;
            for (int j = 0; j < len; j++) sum += s[j] = exp(s[j] - most);
            /* relative error of an f32 probability: the scores' f32 sums
             * (two products of dh terms and their sum), the scale, the
             * softmax's own (exp, sum, division) */
            double perr = 2 * (EPS * (dh + 3) * magmax) + 1e-6;
            for (int j = 0; j < len; j++) {
                double pj = s[j] / sum;
                tip[j] = 0;
                pr[j] = (float)pj;
                if (bf16) {
                    /* the distance to the nearest bf16 rounding midpoint */
                    float lo = rnd(pr[j]);
                    double step = ldexp(1.0, ilogb(lo) - 7);
                    double mid = lo + (pr[j] >= lo ? 0.5 : -0.5) * step;
                    tip[j] = fabs(pj - mid) <= 2 * perr * pj;
                    pr[j] = lo;
                }
            }
            for (int t = 0; t < dh; t++) {
                int c = h * dh + t;
                double y = 0, m = 0, tipped = 0;
                for (int j = 0; j < len; j++) {
                    float v = bf16 ? rnd(a->v[(long)j * d + c]) : a->v[(long)j * d + c];
                    y += (double)pr[j] * v;
                    m += fabs((double)pr[j] * v);
                    if (tip[j]) tipped += ldexp(1.0, -7) * fabs((double)pr[j] * v) * 1.01;
                }
                r.y[(long)i * d + c] = y;
                /* the context's f32 sum of len products (exact in bf16),
                 * plus, in f32, each probability's own error */
                r.tol[(long)i * d + c] =
                    EPS * (len + 2) * m + (bf16 ? tipped : 2 * perr * m) + 1e-30;
            }
        }
    free(s), free(mag), free(pr), free(tip);
    return r;
}

static float *noise(size_t count, unsigned seed, float amp) {
    float *x = hv_test_noise(count, seed);
    if (!x) abort();
    for (size_t i = 0; i < count; i++) x[i] *= amp;
    return x;
}

/* Runs hv_attention_heads on a pool of threads threads computing in bf16
 * (on dnn when not NULL) or f32; the output, malloc'ed. */
static float *run(const attn_in *a, int threads, int bf16, hv_onednn *dnn) {
    hv_pool *pool = hv_pool_new(threads);
    float *att = malloc((size_t)hv_attention_scratch(a->n, a->d, a->H, bf16) * sizeof(float));
    float *ctx = malloc((size_t)a->n * a->d * sizeof(float));
    if (!pool || !att || !ctx) abort();
    hv_engine eng = hv_engine_make(pool, bf16, dnn);
    for (long i = 0; i < (long)a->n * a->d; i++) ctx[i] = NAN; /* every row written */
    hv_attention_heads(&eng, a->n, a->len, a->d, a->H, a->q, a->k, a->v, a->p, a->u, a->vb, att,
                       ctx);
    hv_pool_free(pool);
    free(att);
    return ctx;
}

/* The largest difference from the reference, in units of its bound; the
 * padded rows must be zero. */
static double worst(const attn_in *a, const float *y, const attn_ref *r, int *pad_zero) {
    double w = 0;
    *pad_zero = 1;
    for (int i = 0; i < a->n; i++)
        for (int c = 0; c < a->d; c++) {
            long x = (long)i * a->d + c;
            if (i >= a->len) {
                *pad_zero &= y[x] == 0.0f;
                continue;
            }
            double e = fabs(y[x] - r->y[x]) / r->tol[x];
            if (!(e <= w)) w = isnan(e) ? INFINITY : e;
        }
    return w;
}

static void check_shape(int n, int len, int d, int H, hv_onednn *dnn, hv_onednn *f32_dnn) {
    static unsigned seed = 1;
    attn_in a = {.n = n, .len = len, .d = d, .H = H};
    /* activations of the demo model's order of magnitude */
    a.q = noise((size_t)n * d, seed++, 4.0f);
    a.k = noise((size_t)n * d, seed++, 4.0f);
    a.v = noise((size_t)n * d, seed++, 2.0f);
    a.p = noise((size_t)(2 * n - 1) * d, seed++, 4.0f);
    a.u = noise((size_t)d, seed++, 1.0f);
    a.vb = noise((size_t)d, seed++, 1.0f);
    attn_ref f32 = reference(&a, 0), b16 = reference(&a, 1);
    int tells = len < 2; /* one key: a probability of 1 in both modes */
    for (int threads = 1; threads <= 3; threads += 2) {
        char what[128];
        snprintf(what, sizeof what, "n %d, len %d, %d heads of %d, %d threads", n, len, H, d / H,
                 threads);
        int zero;
        float *y = run(&a, threads, 0, NULL);
        double w = worst(&a, y, &f32, &zero);
        CHECK_MSG(w <= 1.0, "f32, %s: %.3g of the bound", what, w);
        CHECK_MSG(zero, "f32, %s: padded rows zero", what);
        /* the f32 output is not the bf16 arithmetic's */
        tells |= worst(&a, y, &b16, &zero) > 1.0;
        float *e = run(&a, threads, 1, NULL);
        w = worst(&a, e, &b16, &zero);
        CHECK_MSG(w <= 1.0, "bf16 emulated, %s: %.3g of the bound", what, w);
        CHECK_MSG(zero, "bf16 emulated, %s: padded rows zero", what);
        hv_onednn *engines[2] = {f32_dnn, dnn};
        for (int k = 0; k < 2; k++) {
            if (!engines[k]) continue;
            float *g = run(&a, threads, 1, engines[k]);
            w = worst(&a, g, &b16, &zero);
            CHECK_MSG(w <= 1.0, "bf16 on the %s engine, %s: %.3g of the bound", k ? "bf16" : "f32",
                      what, w);
            CHECK_MSG(zero, "bf16 on the %s engine, %s: padded rows zero", k ? "bf16" : "f32",
                      what);
            free(g);
        }
        free(y), free(e);
    }
    CHECK_MSG(tells, "n %d, len %d, %d heads: the bf16 bound rejects the f32 output", n, len, H);
    free(f32.y), free(f32.tol), free(b16.y), free(b16.tol);
    free(a.q), free(a.k), free(a.v), free(a.p), free(a.u), free(a.vb);
}

/* hv_eng_attention against hv_eng_norm_linear, hv_attention_heads and the
 * output projection's hv_eng_linear (with a residual) on
 * engine dnn (NULL: our tables) in bf16 or f32, for a layer of d = 320
 * (two heads of 160, so that the products' chunks of weight rows cross
 * heads) on n frames, len of them valid, with positions projected for N =
 * n + 5 frames (hv_eng_attention_pos: a cache built for a longer chunk),
 * in the layout the engine takes them in. */
static void check_layer(int n, int len, int bf16, hv_onednn *dnn) {
    static unsigned seed = 1000;
    enum { D = 320, H = 2 };
    hv_weight_type t = dnn && hv_onednn_is_bf16(dnn) ? HV_WEIGHTS_BF16 : HV_WEIGHTS_F32;
    hv_mat W[5]; /* q, k, v, out, pos */
    void *store[5];
    const hv_mat *Wp[4];
    float *bias[5];
    for (int m = 0; m < 5; m++) {
        float *w = noise((size_t)D * D, seed++, 0.06f);
        hv_error e = {0};
        if (hv_mat_from_f32(&W[m], t, w, D, D, &store[m], &e)) abort();
        free(w);
        if (m < 4) Wp[m] = &W[m];
        bias[m] = noise(D, seed++, 0.5f);
    }
    const float *bp[4] = {bias[0], bias[1], bias[2], bias[3]};
    float *x = noise((size_t)n * D, seed++, 3.0f), *nw = noise(D, seed++, 1.0f);
    float *nb = noise(D, seed++, 0.2f), *u = noise(D, seed++, 1.0f), *vb = noise(D, seed++, 1.0f);
    int N = n + 5;
    float *pos = noise((size_t)(2 * N - 1) * D, seed++, 1.0f);
    float *p = malloc((size_t)(2 * N - 1) * D * sizeof(float));
    long pl_f32 = hv_attention_pos_floats(N, D, H, 0),
         pl_bf16 = hv_attention_pos_floats(N, D, H, 1);
    float *pl = malloc((size_t)(pl_f32 > pl_bf16 ? pl_f32 : pl_bf16) * sizeof(float));
    size_t nd = (size_t)n * D;
    float *norm = malloc(nd * sizeof(float)), *qkv = malloc(3 * nd * sizeof(float));
    float *want = malloc(nd * sizeof(float)), *got = malloc(nd * sizeof(float));
    float *ctx = malloc(nd * sizeof(float)), *res = noise(nd, seed++, 1.0f);
    float *res_want = malloc(nd * sizeof(float)), *res_got = malloc(nd * sizeof(float));
    float *att = malloc((size_t)hv_attention_scratch(n, D, H, bf16) * sizeof(float));
    if (!norm || !qkv || !want || !got || !att || !p || !pl || !ctx || !res_want || !res_got)
        abort();
    float *const y[3] = {qkv, qkv + nd, qkv + 2 * nd};
    for (int threads = 1; threads <= 3; threads += 2) {
        hv_pool *pool = hv_pool_new(threads);
        if (!pool) abort();
        hv_engine eng = hv_engine_make(pool, bf16, dnn);
        const hv_mat *wpos = &W[4];
        CHECK(hv_eng_attention_pos(&eng, &p, 1, pos, N, D, H, &wpos, 0) == 0);
        hv_eng_norm_linear(&eng, norm, x, n, D, nw, nb, 1e-5f, 3, Wp, bp, y, NULL);
        hv_attention_heads(&eng, n, len, D, H, y[0], y[1], y[2], p + (long)(N - n) * D, u, vb, att,
                           ctx);
        memcpy(res_want, res, nd * sizeof(float));
        hv_eng_linear(&eng, want, ctx, n, &W[3], bias[3],
                      &(hv_epilogue){.residual = res_want, .scale = 1});
        for (size_t i = 0; i < 3 * nd; i++) qkv[i] = NAN;
        for (size_t i = 0; i < nd; i++) got[i] = ctx[i] = NAN;
        memcpy(res_got, res, nd * sizeof(float));
        int layout = hv_attention_pos_bf16(&eng, N, &W[4]);
        CHECK(hv_eng_attention_pos(&eng, &pl, 1, pos, N, D, H, &wpos, layout) == 0);
        hv_att_pos ap = {pl, N, layout};
        hv_eng_attention(&eng, norm, x, n, len, D, H, nw, nb, 1e-5f, Wp, bp, y, ctx, &ap, u, vb,
                         att, got, &(hv_epilogue){.residual = res_got, .scale = 1});
        char what[128];
        snprintf(what, sizeof what, "layer, n %d, len %d, %s on %s, %d threads", n, len,
                 bf16 ? "bf16" : "f32",
                 !dnn                     ? "our tables"
                 : hv_onednn_is_bf16(dnn) ? "the bf16 engine"
                                          : "the f32 engine",
                 threads);
        CHECK_MSG(!memcmp(got, want, nd * sizeof(float)) &&
                      !memcmp(res_got, res_want, nd * sizeof(float)),
                  "%s: the bits of the steps", what);
        /* where oneDNN's bf16 primitives run the projections, the heads
         * take their outputs without f32 q, k, v, and the output
         * projection their contexts without an f32 ctx */
        if (bf16 && hv_onednn_is_bf16(dnn) && hv_onednn_native_bf16() && n > HV_LINEAR_GEMV_MAX_N) {
            int untouched = 1;
            for (size_t i = 0; i < 3 * nd; i++) untouched &= isnan(qkv[i]);
            CHECK_MSG(untouched, "%s: no f32 q, k, v", what);
            untouched = 1;
            for (size_t i = 0; i < nd; i++) untouched &= isnan(ctx[i]);
            CHECK_MSG(untouched, "%s: no f32 context", what);
            CHECK_MSG(layout, "%s: positions in the heads' bf16 layout", what);
            /* five layers' positions in one call (oneDNN taking the input
             * once for four): each as computed alone; on one thread the
             * same primitives run them (more cut the last product's last
             * chunks narrower, hv_gemm_outs_taper) */
            if (threads == 1) {
                const hv_mat *five[5] = {&W[4], &W[0], &W[1], &W[2], &W[3]};
                float *many[5], *one = malloc((size_t)pl_bf16 * sizeof(float));
                for (int m = 0; m < 5; m++) many[m] = malloc((size_t)pl_bf16 * sizeof(float));
                CHECK(hv_eng_attention_pos(&eng, many, 5, pos, N, D, H, five, 1) == 0);
                for (int m = 0; m < 5; m++) {
                    CHECK(hv_eng_attention_pos(&eng, &one, 1, pos, N, D, H, &five[m], 1) == 0);
                    CHECK_MSG(!memcmp(one, many[m], (size_t)pl_bf16 * sizeof(float)),
                              "%s: positions of layer %d of 5 as alone", what, m);
                    free(many[m]);
                }
                free(one);
            }
        }
        hv_pool_free(pool);
    }
    for (int m = 0; m < 5; m++) free(store[m]), free(bias[m]);
    free(ctx), free(res), free(res_want), free(res_got);
    free(x), free(nw), free(nb), free(u), free(vb), free(p), free(pos), free(pl);
    free(norm), free(qkv), free(want), free(got), free(att);
}

int main(void) {
    /* a bf16 engine on every host: oneDNN's bf16 primitives where this
     * CPU multiplies bf16 natively (the library's bf16 compute runs the
     * attention on it there), else hv_onednn_matmul's loops on the same
     * bf16 operands */
    hv_onednn *dnn = hv_onednn_new(1), *f32_dnn = hv_onednn_new(0);
    printf("bf16 engine: %s; f32 engine: %s\n",
           !dnn                      ? "no"
           : hv_onednn_native_bf16() ? "oneDNN's primitives"
                                     : "its loops or oneDNN's (no native bf16)",
           f32_dnn ? "yes" : "no");
    CHECK(!hv_onednn_compiled() || (f32_dnn && dnn));
    const struct {
        int n, len;
    } lens[] = {{1, 1}, {7, 7}, {9, 7}, {33, 33}, {45, 33}, {200, 200}, {230, 200}};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        check_shape(lens[i].n, lens[i].len, 32, 2, dnn, f32_dnn);  /* heads of 16 */
        check_shape(lens[i].n, lens[i].len, 320, 2, dnn, f32_dnn); /* heads of 160 */
    }
    const struct { int n, len; } layers[] = {{9, 7}, {45, 33}, {200, 200}, {230, 200}};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        check_layer(layers[i].n, layers[i].len, 0, NULL);
        check_layer(layers[i].n, layers[i].len, 1, NULL);
        if (f32_dnn) check_layer(layers[i].n, layers[i].len, 1, f32_dnn);
        if (dnn) check_layer(layers[i].n, layers[i].len, 1, dnn);
    }
    hv_onednn_free(dnn);
    hv_onednn_free(f32_dnn);
    TEST_END();
}
