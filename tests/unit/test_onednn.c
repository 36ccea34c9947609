/* The compute modes and the oneDNN matrix engine (kernels/onednn.c):
 * - bf16 compute on our own kernels (the emulation on CPUs without native
 *   bf16) gives exactly the bits of f32 compute on activations rounded to
 *   bf16 beforehand, and stays within a stated bound of a double-precision
 *   product of the rounded activations; q8_0 products are unchanged;
 * - the oneDNN engine (f32 on every x86-64 CPU; bf16 where the CPU has it)
 *   against a double-precision product, on odd shapes, with bias and
 *   epilogues, on 1 and several threads, through hv_linear, hv_linear_many
 *   and the engine directly; the activation rows' shape classes, few
 *   enough that products of thousands of row counts fit the cache;
 * - the attention's products (hv_onednn_matmul) against a double-precision
 *   product, strided and transposed operands, odd shapes, 1 and 3 threads;
 *   in bf16 on every host (without native bf16 oneDNN has no primitive for
 *   them, and the engine's own loops compute them from the bf16 bits);
 * - one engine's execution contexts under four threads of their own making
 *   attention and weight products of mixed shapes at once.
 * CTest runs it also with ONEDNN_MAX_CPU_ISA=AVX2 and SSE41, so that lower
 * instruction sets are checked on any host. build/bench-kernels prints the
 * rates of oneDNN and of our kernels on the encoder's shapes. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/engine.h"
#include "kernels/onednn.h"
#include "kernels/ops.h"
#include "mm_testutil.h"
#include "testlib.h"

static float *frand_vec(size_t n) {
    float *v = falloc(n);
    for (size_t i = 0; i < n; i++) v[i] = frand();
    return v;
}

static float round_bf16(float f) { return hv_bf16_to_f32(hv_f32_to_bf16(f)); }

/* A matrix of type t from rows x cols random weights; the stored values
 * (widened) in *wide. */
static hv_mat make_mat(hv_weight_type t, int rows, int cols, void **store, float **wide) {
    float *w = frand_vec((size_t)rows * cols);
    hv_mat m;
    hv_error e = {0};
    if (hv_mat_from_f32(&m, t, w, rows, cols, store, &e)) abort();
    for (int r = 0; r < rows; r++) hv_mat_row_f32(&m, r, w + (size_t)r * cols);
    *wide = w;
    return m;
}

/* Checks y against sum_k xr[i][k] w[r][k] in double (+ bias), xr = x
 * rounded to bf16 when round is set: |y - ref| <= tol * sum |xr w| +
 * 1e-30. f32 sums of cols terms are off by at most about cols * 2^-24 of
 * the sum of magnitudes; tol is given with margin. */
static void check_ref(const char *what, const float *y, const float *x, const float *w,
                      const float *bias, int n, int rows, int cols, int round, double tol) {
    double worst = 0;
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < rows; r++) {
            double s = 0, mag = 0;
            for (int k = 0; k < cols; k++) {
                double a = round ? round_bf16(x[(size_t)i * cols + k]) : x[(size_t)i * cols + k];
                double p = a * w[(size_t)r * cols + k];
                s += p;
                mag += fabs(p);
            }
            if (bias) s += bias[r], mag += fabs(bias[r]);
            double err = fabs(y[(size_t)i * rows + r] - s), lim = tol * mag + 1e-30;
            if (err / lim > worst) worst = err / lim;
            bad += !(err <= lim);
        }
    CHECK_MSG(bad == 0, "%s: %d outputs beyond the bound (worst %.2f x the bound)", what, bad,
              worst);
}

/* ------------------------------------------------ bf16 on our kernels */

/* bf16 compute with our kernels == f32 compute on pre-rounded activations,
 * bit for bit, for every weight type and both regimes (GEMV, packed GEMM),
 * on 1 and 3 threads; and within the bound of the exact product. q8_0
 * products are the same in both modes. */
static void test_emulation(void) {
    const hv_weight_type types[] = {HV_WEIGHTS_F32, HV_WEIGHTS_F16, HV_WEIGHTS_BF16,
                                    HV_WEIGHTS_Q8_0};
    const int ns[] = {1, 5, 16, 17, 70};
    for (int threads = 1; threads <= 3; threads += 2) {
        hv_pool *f32 = hv_pool_new(threads), *bf_pool = hv_pool_new(threads);
        if (!f32 || !bf_pool) abort();
        hv_engine bf = hv_engine_make(bf_pool, 1, NULL);
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                int n = ns[ni], rows = 72, cols = 96;
                void *store;
                float *w;
                hv_mat W = make_mat(types[t], rows, cols, &store, &w);
                float *x = frand_vec((size_t)n * cols), *xr = falloc((size_t)n * cols);
                float *bias = frand_vec((size_t)rows);
                int q8 = types[t] == HV_WEIGHTS_Q8_0;
                for (size_t i = 0; i < (size_t)n * cols; i++) xr[i] = q8 ? x[i] : round_bf16(x[i]);
                float *a = falloc((size_t)n * rows), *b = falloc((size_t)n * rows);
                hv_eng_linear(&bf, a, x, n, &W, bias, NULL);
                hv_linear(f32, b, xr, n, &W, bias);
                CHECK_MSG(!memcmp(a, b, (size_t)n * rows * sizeof *a),
                          "bf16 compute, %s weights, n %d, %d threads: the bits of rounded "
                          "activations",
                          hv_weight_type_name(types[t]), n, threads);
                if (!q8) {
                    char what[96];
                    snprintf(what, sizeof what, "bf16 compute, %s weights, n %d",
                             hv_weight_type_name(types[t]), n);
                    check_ref(what, a, x, w, bias, n, rows, cols, 1, 4e-6 * cols);
                }
                /* the epilogue variants and many products at once */
                float *res = frand_vec((size_t)n * rows), *res2 = falloc((size_t)n * rows);
                memcpy(res2, res, (size_t)n * rows * sizeof *res);
                hv_eng_linear(&bf, a, x, n, &W, bias,
                              &(hv_epilogue){.residual = res, .scale = 0.5f});
                hv_linear_add(f32, res2, b, xr, n, &W, bias, 0.5f);
                CHECK_MSG(!memcmp(res, res2, (size_t)n * rows * sizeof *res),
                          "bf16 hv_linear_add, %s, n %d", hv_weight_type_name(types[t]), n);
                const hv_mat *Ws[3] = {&W, &W, &W};
                const float *bs[3] = {bias, NULL, bias};
                float *ya[3] = {falloc((size_t)n * rows), falloc((size_t)n * rows),
                                falloc((size_t)n * rows)};
                hv_eng_linear_many(&bf, n, x, 3, Ws, bs, ya);
                CHECK_MSG(!memcmp(ya[0], b, (size_t)n * rows * sizeof *b) &&
                              !memcmp(ya[2], b, (size_t)n * rows * sizeof *b),
                          "bf16 hv_linear_many, %s, n %d", hv_weight_type_name(types[t]), n);
                for (int m = 0; m < 3; m++) free(ya[m]);
                free(res), free(res2), free(a), free(b), free(x), free(xr), free(bias), free(w);
                free(store);
            }
        hv_pool_free(f32);
        hv_pool_free(bf_pool);
    }
}

/* The rounding itself against hv_f32_to_bf16 on the values where it
 * matters: ties, the largest finite values, infinities, NaN, subnormals;
 * each value one activation row of one column, times weights of 1, in the
 * GEMV and the packed-GEMM regimes. */
static void test_rounding(void) {
    const uint32_t bits[] = {0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0xff7fffff,
                             0x7f800000, 0xff800000, 0x00000001, 0x80008000, 0x3f800001,
                             0x7fc00001, 0x00ff8000, 0x477fe000, 0xc0490fdb, 0x3eaaaaab,
                             0x3f7fffff, 0x00000000, 0x80000000, 0x3f800000, 0x33800000};
    int n = (int)(sizeof bits / sizeof bits[0]), rows = 16;
    float *x = falloc((size_t)n), *w = falloc((size_t)rows), *y = falloc((size_t)n * rows);
    for (int i = 0; i < n; i++) memcpy(&x[i], &bits[i], 4);
    for (int r = 0; r < rows; r++) w[r] = 1.0f;
    hv_mat W = {.type = HV_WEIGHTS_F32, .rows = rows, .cols = 1, .data = w};
    hv_pool *bf_pool = hv_pool_new(1);
    hv_engine bf = hv_engine_make(bf_pool, 1, NULL);
    for (int regime = 0; regime < 2; regime++) {
        int ok = 1;
        if (regime == 0)
            for (int i = 0; i < n; i++)
                hv_eng_linear(&bf, y + (size_t)i * rows, x + i, 1, &W, NULL, NULL);
        else
            hv_eng_linear(&bf, y, x, n, &W, NULL, NULL);
        for (int i = 0; i < n; i++) {
            float want = round_bf16(x[i]);
            for (int r = 0; r < rows; r++) {
                float got = y[(size_t)i * rows + r];
                ok &= got == want || (isnan(got) && isnan(want));
            }
        }
        CHECK_MSG(ok, "bf16 rounding of activations == hv_f32_to_bf16 (%s)",
                  regime ? "packed GEMM" : "GEMV");
    }
    hv_pool_free(bf_pool);
    /* the inline forms the attention and the engine's conversion use */
    int same = 1;
    for (int i = 0; i < n; i++) {
        float r = hv_bf16_round(x[i]), want = round_bf16(x[i]);
        same &= hv_bf16_bits(x[i]) == hv_f32_to_bf16(x[i]) &&
                (r == want || (isnan(r) && isnan(want) && !memcmp(&r, &want, 4)));
    }
    CHECK_MSG(same, "hv_bf16_bits and hv_bf16_round == hv_f32_to_bf16");
    free(x), free(w), free(y);
}

/* -------------------------------------------------------------- oneDNN */

/* Threads of this process, or -1 when /proc cannot tell. */
static int task_count(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The process's thread count once it is down to at most want, or what it
 * is after 30 s without getting there. A thread that pthread_join has
 * seen end stays listed in /proc until the kernel has released it, which
 * on a loaded or single-CPU machine can be after the joiner runs on; so
 * the count is waited for, not read once. */
static int threads_down_to(int want) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int n = task_count();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (n <= want || t.tv_sec - t0.tv_sec > 30) return n;
        sched_yield();
    }
}

/* The engine against the double-precision product: odd shapes, bias,
 * SiLU and residual epilogues, 1 and 3 threads, through the kernel
 * interface (hv_eng_linear and hv_eng_linear_many on an engine with d). */
static void test_engine(int bf16, int threads_before) {
    hv_onednn *d = hv_onednn_new(bf16);
    if (!hv_onednn_compiled()) {
        CHECK_MSG(d == NULL, "no engine without oneDNN");
        return;
    }
    if (!d) abort();
    hv_weight_type t = bf16 ? HV_WEIGHTS_BF16 : HV_WEIGHTS_F32;
    char impl[64];
    CHECK_MSG(hv_onednn_impl(d, 40, 48, 80, impl, sizeof impl) == 0 && impl[0],
              "oneDNN names its implementation");
    printf("oneDNN %s matmul: %s\n", bf16 ? "bf16" : "f32", impl);
    const struct {
        int n, rows, cols;
    } shapes[] = {{17, 24, 40}, {33, 77, 130}, {100, 300, 72}, {250, 1030, 64},
                  {18, 16, 1},  {19, 257, 33}, {45, 1300, 7},  {1100, 40, 24}};
    /* f32: each output a sum of cols f32 products in some order; bf16:
     * products of bf16 values are exact in f32, the sum likewise */
    double tol = 2e-7 * 4;
    for (int threads = 1; threads <= 3; threads += 2) {
        hv_pool *pool = hv_pool_new(threads);
        if (!pool) abort();
        hv_engine eng = hv_engine_make(pool, bf16, d);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int n = shapes[s].n, rows = shapes[s].rows, cols = shapes[s].cols;
            void *store;
            float *w;
            hv_mat W = make_mat(t, rows, cols, &store, &w);
            CHECK(hv_onednn_takes(d, &W));
            float *x = frand_vec((size_t)n * cols), *bias = frand_vec((size_t)rows);
            float *y = falloc((size_t)n * rows);
            char what[128];
            snprintf(what, sizeof what, "oneDNN %s %dx%d . %dx%d, %d threads",
                     bf16 ? "bf16" : "f32", n, cols, cols, rows, threads);
            /* the bias inside the primitive, for a whole chunk and a
             * tapered one */
            CHECK_MSG(hv_onednn_fuses_bias(d, n, cols, rows < 64 ? rows : 64) &&
                          hv_onednn_fuses_bias(d, n, cols, rows < 16 ? rows : 16),
                      "%s: the bias fused into oneDNN's matmul", what);
            hv_eng_linear(&eng, y, x, n, &W, bias, NULL);
            check_ref(what, y, x, w, bias, n, rows, cols, bf16, tol * (cols + 2));
            /* a bias far larger than the products: added once, in f32 */
            float *big = falloc((size_t)rows), *yb = falloc((size_t)n * rows);
            for (int r = 0; r < rows; r++) big[r] = bias[r] * 1e4f;
            hv_eng_linear(&eng, yb, x, n, &W, big, NULL);
            check_ref(what, yb, x, w, big, n, rows, cols, bf16, tol * (cols + 2));
            free(big), free(yb);
            /* the epilogues: silu(y), and res += 0.5 y */
            float *z = falloc((size_t)n * rows);
            hv_eng_linear(&eng, z, x, n, &W, bias, &hv_ep_silu);
            int ok = 1;
            float *ys = falloc((size_t)n * rows);
            memcpy(ys, y, (size_t)n * rows * sizeof *y);
            hv_silu(ys, (long)n * rows);
            for (size_t i = 0; i < (size_t)n * rows; i++)
                ok &= fabsf(z[i] - ys[i]) <= 1e-5f * (1 + fabsf(ys[i]));
            CHECK_MSG(ok, "%s: SiLU epilogue", what);
            float *res = frand_vec((size_t)n * rows), *res0 = falloc((size_t)n * rows);
            memcpy(res0, res, (size_t)n * rows * sizeof *res);
            hv_eng_linear(&eng, z, x, n, &W, bias, &(hv_epilogue){.residual = res, .scale = 0.5f});
            ok = 1;
            for (size_t i = 0; i < (size_t)n * rows; i++) ok &= res[i] == res0[i] + 0.5f * z[i];
            CHECK_MSG(ok, "%s: residual epilogue adds the product it returns", what);
            /* three products of one input */
            const hv_mat *Ws[3] = {&W, &W, &W};
            const float *bs[3] = {bias, NULL, bias};
            float *ya[3] = {falloc((size_t)n * rows), falloc((size_t)n * rows),
                            falloc((size_t)n * rows)};
            hv_eng_linear_many(&eng, n, x, 3, Ws, bs, ya);
            check_ref(what, ya[0], x, w, bias, n, rows, cols, bf16, tol * (cols + 2));
            check_ref(what, ya[1], x, w, NULL, n, rows, cols, bf16, tol * (cols + 2));
            check_ref(what, ya[2], x, w, bias, n, rows, cols, bf16, tol * (cols + 2));
            /* the same bits where the two ran as the same primitives: on
             * one thread; on more, the last product's last chunks are cut
             * narrower (hv_gemm_outs_taper), and a narrower primitive may
             * be another of oneDNN's kernels, summing in another order */
            if (threads == 1)
                CHECK_MSG(!memcmp(ya[0], ya[2], (size_t)n * rows * sizeof *y), "%s: many", what);
            /* a LayerNorm's products, its rows written straight into
             * oneDNN's input: the products of the LayerNorm's floats */
            float *nw = frand_vec((size_t)cols), *nb = frand_vec((size_t)cols);
            float *xn = falloc((size_t)n * cols), *scratch = falloc((size_t)n * cols);
            hv_eng_layernorm(&eng, xn, x, n, cols, nw, nb, 1e-5f);
            hv_eng_norm_linear(&eng, scratch, x, n, cols, nw, nb, 1e-5f, 3, Ws, bs, ya, NULL);
            check_ref(what, ya[0], xn, w, bias, n, rows, cols, bf16, tol * (cols + 2));
            check_ref(what, ya[1], xn, w, NULL, n, rows, cols, bf16, tol * (cols + 2));
            const hv_mat *W1 = &W;
            const float *b1 = bias;
            hv_eng_norm_linear(&eng, scratch, x, n, cols, nw, nb, 1e-5f, 1, &W1, &b1, &z, NULL);
            hv_eng_linear(&eng, ys, xn, n, &W, bias, NULL);
            check_ref(what, z, xn, w, bias, n, rows, cols, bf16, tol * (cols + 2));
            if (threads == 1)
                CHECK_MSG(!memcmp(z, ys, (size_t)n * rows * sizeof *z), "%s: norm_linear", what);
            free(nw), free(nb), free(xn), free(scratch);
            for (int m = 0; m < 3; m++) free(ya[m]);
            free(res), free(res0), free(ys), free(z), free(y), free(x), free(bias), free(w);
            free(store);
        }
        hv_pool_free(pool);
    }
    /* no OpenMP team: the products ran on the pools' threads alone, so
     * now that the pools are gone the process has the threads it had
     * before (an OpenMP team would stay, idle; Linux: /proc/self/task) */
    int threads = threads_down_to(threads_before);
    CHECK_MSG(threads == threads_before, "oneDNN %s: no threads beyond ours (%d before, %d after)",
              bf16 ? "bf16" : "f32", threads_before, threads);
    /* what it does not take: another type, the r64 layout, few rows */
    hv_mat other = {.type = bf16 ? HV_WEIGHTS_F32 : HV_WEIGHTS_BF16, .rows = 64, .cols = 64};
    CHECK(!hv_onednn_takes(d, &other));
    hv_mat r64 = {.type = t, .rows = 64, .cols = 64, .r64 = 1};
    CHECK(!hv_onednn_takes(d, &r64));
    hv_onednn_free(d);
}

/* The activation rows' shape classes: at least n, multiples of 16,
 * every multiple of 16 up to 512 rows, at most 1/16 padding above, in
 * order, and few: 160 classes for every row count up to 2^17 (the
 * subsampling's time x frequency rows, a count per clip length). And
 * the cache they key: products of 2100 distinct row counts from 4096
 * up (more than the cache's 2048 primitives in classes of 16 rows) all
 * get their primitive, and an attention product after them still runs
 * on oneDNN. */
static void test_rows_class(void) {
    if (!hv_onednn_compiled()) {
        CHECK(hv_onednn_rows_class(100) == 0);
        return;
    }
    int bad = 0, classes = 0, last = 0;
    for (int n = 1; n <= 1 << 17; n++) {
        int c = hv_onednn_rows_class(n);
        bad += c < n || c % 16 || c < last || (n <= 512 ? c - n >= 16 : (c - n) * 16 >= n);
        classes += c != last;
        last = c;
    }
    CHECK_MSG(bad == 0, "row classes: %d counts padded otherwise", bad);
    CHECK_MSG(classes <= 160, "row classes: %d for up to 2^17 rows", classes);
    hv_onednn *d = hv_onednn_new(0);
    if (!d) abort();
    int missing = 0;
    for (int i = 0; i < 2100; i++)
        missing += !hv_onednn_fuses_bias(d, 4097 + 16 * i + i % 7, 8, 16);
    CHECK_MSG(missing == 0, "2100 row counts: %d without a primitive", missing);
    float a[16 * 24] = {0}, b[24 * 8] = {0}, c[16 * 8];
    CHECK_MSG(hv_onednn_matmul(d, 16, 8, 24, a, 24, b, 8, 0, c, 8) == 0,
              "a product after them still on oneDNN");
    hv_onednn_free(d);
}

/* A context's products through one engine from several pools at once
 * agree with one pool's: the primitives are shared, the scratchpads not. */
typedef struct conc_job {
    hv_onednn *d;
    const hv_mat *W;
    const float *x;
    float *y;
    int n;
} conc_job;

static void *conc_run(void *arg) {
    conc_job *j = arg;
    hv_pool *pool = hv_pool_new(2);
    hv_engine eng = hv_engine_make(pool, hv_onednn_is_bf16(j->d), j->d);
    for (int rep = 0; rep < 5; rep++) hv_eng_linear(&eng, j->y, j->x, j->n, j->W, NULL, NULL);
    hv_pool_free(pool);
    return NULL;
}

static void test_concurrent(void) {
    hv_onednn *d = hv_onednn_new(0);
    if (!d) return;
    void *store;
    float *w;
    int n = 45, rows = 520, cols = 96;
    hv_mat W = make_mat(HV_WEIGHTS_F32, rows, cols, &store, &w);
    float *x = frand_vec((size_t)n * cols);
    float *y[3];
    pthread_t th[3];
    conc_job jobs[3];
    for (int i = 0; i < 3; i++) {
        y[i] = falloc((size_t)n * rows);
        jobs[i] = (conc_job){d, &W, x, y[i], n};
        pthread_create(&th[i], NULL, conc_run, &jobs[i]);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    check_ref("oneDNN f32 from three pools at once", y[0], x, w, NULL, n, rows, cols, 0,
              8e-7 * (cols + 2));
    CHECK_MSG(!memcmp(y[0], y[1], (size_t)n * rows * 4) &&
                  !memcmp(y[0], y[2], (size_t)n * rows * 4),
              "oneDNN f32 from three pools at once: the same outputs");
    for (int i = 0; i < 3; i++) free(y[i]);
    free(x), free(w), free(store);
    hv_onednn_free(d);
}

/* The attention's products (hv_onednn_matmul) against the
 * double-precision product: C = A . op(B) with B transposed and not, rows
 * of A, B and C further apart than their widths (strided, as a head's
 * columns of [n x d] rows), odd shapes, run as the tasks of pools of 1 and
 * 3 threads at once; C's gaps between rows stay untouched. */
typedef struct mm_case {
    int m, n, k, b_trans;
    long lda, ldb, ldc;
    void *a, *b; /* the engine's elements */
    float *fa, *fb, *c;
    int rc;
    double *ref, *mag; /* [m x n]: the product in double, the sum of |terms| */
} mm_case;

typedef struct mm_job {
    hv_onednn *d;
    mm_case *cases;
} mm_job;

static void mm_task(void *arg, int task, int n_tasks) {
    (void)n_tasks;
    mm_job *j = arg;
    mm_case *c = &j->cases[task];
    c->rc = hv_onednn_matmul(j->d, c->m, c->n, c->k, c->a, c->lda, c->b, c->ldb, c->b_trans, c->c,
                             c->ldc);
}

/* Random elements of an operand of rows x cols, rows ld apart (the gaps
 * random too), as floats in *f (bf16 values when bf16) and in the engine's
 * type. */
static void *mm_operand(int bf16, int rows, int cols, long ld, float **f) {
    size_t count = (size_t)(rows - 1) * ld + cols;
    float *v = frand_vec(count);
    void *e;
    if (bf16) {
        uint16_t *b = malloc(count * sizeof *b);
        if (!b) abort();
        for (size_t i = 0; i < count; i++) v[i] = round_bf16(v[i]), b[i] = hv_f32_to_bf16(v[i]);
        e = b;
    } else {
        e = falloc(count);
        memcpy(e, v, count * sizeof *v);
    }
    *f = v;
    return e;
}

/* c with operands of random elements (rows and gaps), its C [m x ldc] and
 * the product in double. */
static void mm_init(mm_case *c, int bf16) {
    int bt = c->b_trans;
    c->a = mm_operand(bf16, c->m, c->k, c->lda, &c->fa);
    c->b = mm_operand(bf16, bt ? c->n : c->k, bt ? c->k : c->n, c->ldb, &c->fb);
    c->c = falloc((size_t)c->m * c->ldc);
    c->ref = malloc((size_t)c->m * c->n * sizeof *c->ref);
    c->mag = malloc((size_t)c->m * c->n * sizeof *c->mag);
    if (!c->ref || !c->mag) abort();
    for (int r = 0; r < c->m; r++)
        for (int col = 0; col < c->n; col++) {
            double sum = 0, mag = 0;
            for (int t = 0; t < c->k; t++) {
                double x = c->fa[(long)r * c->lda + t];
                double y = bt ? c->fb[(long)col * c->ldb + t] : c->fb[(long)t * c->ldb + col];
                sum += x * y;
                mag += fabs(x * y);
            }
            c->ref[r * c->n + col] = sum, c->mag[r * c->n + col] = mag;
        }
}

static void mm_free(mm_case *c) {
    free(c->a), free(c->b), free(c->fa), free(c->fb), free(c->c), free(c->ref), free(c->mag);
}

/* C's worst error as a multiple of its bound (f32 sums of k exact (bf16)
 * or rounded (f32) products in any order), and *gaps whether the gaps
 * between C's rows still hold the -7 they were filled with. */
static double mm_worst(const mm_case *c, int *gaps) {
    double worst = 0, bound = 6e-8 * (c->k + 2);
    *gaps = 1;
    for (int r = 0; r < c->m; r++) {
        for (int col = 0; col < c->n; col++) {
            long i = (long)r * c->n + col;
            double err = fabs(c->c[(long)r * c->ldc + col] - c->ref[i]) / (c->mag[i] + 1e-30);
            /* NaN (a C never written) counts as beyond */
            if (!(err / bound <= worst)) worst = isnan(err) ? INFINITY : err / bound;
        }
        for (long col = c->n; col < c->ldc; col++) *gaps &= c->c[r * c->ldc + col] == -7.0f;
    }
    return worst;
}

/* C filled with -7, so that gaps and outputs not written show. */
static void mm_clear(mm_case *c) {
    for (size_t t = 0; t < (size_t)c->m * c->ldc; t++) c->c[t] = -7.0f;
}

static void test_matmul(int bf16, int threads_before) {
    int native = hv_onednn_native_bf16();
    hv_onednn *d = hv_onednn_new(bf16);
    if (!hv_onednn_compiled()) {
        float a = 1, b = 1, c = 0;
        CHECK(hv_onednn_matmul(d, 1, 1, 1, &a, 1, &b, 1, 0, &c, 1) == -1);
        return;
    }
    if (!d) abort();
    const int ms[] = {1, 7, 33, 200}, ks[] = {16, 160};
    enum { N_CASES = 4 * 4 * 2 * 2 };
    mm_case cases[N_CASES];
    int nc = 0;
    for (int im = 0; im < 4; im++)
        for (int in = 0; in < 4; in++)
            for (int ik = 0; ik < 2; ik++)
                for (int bt = 0; bt < 2; bt++) {
                    mm_case *c = &cases[nc++];
                    /* strided rows on every other case, as a head's
                     * columns of d-wide rows */
                    long gap = (im + in + ik) % 2 ? 3 * ks[ik] : 0;
                    *c = (mm_case){.m = ms[im], .n = ms[in], .k = ks[ik], .b_trans = bt};
                    c->lda = c->k + gap;
                    c->ldb = (bt ? c->k : c->n) + gap;
                    c->ldc = c->n + (gap ? 5 : 0);
                    mm_init(c, bf16);
                }
    for (int threads = 1; threads <= 3; threads += 2) {
        hv_pool *pool = hv_pool_new(threads);
        if (!pool) abort();
        for (int i = 0; i < nc; i++) mm_clear(&cases[i]);
        mm_job j = {d, cases};
        hv_pool_run(pool, nc, mm_task, &j);
        hv_pool_free(pool);
        for (int i = 0; i < nc; i++) {
            mm_case *c = &cases[i];
            char what[160];
            snprintf(what, sizeof what,
                     "oneDNN %s matmul %dx%d . %s%dx%d (ld %ld %ld %ld), %d threads",
                     bf16 ? "bf16" : "f32", c->m, c->k, c->b_trans ? "T " : "", c->k, c->n, c->lda,
                     c->ldb, c->ldc, threads);
            /* a bf16 engine without native bf16 may have no primitive:
             * its loops then compute the same sums from the bf16 bits */
            CHECK_MSG(c->rc == 0 || (bf16 && !native && c->rc == 1), "%s: %s ran it (%d)", what,
                      bf16 && !native ? "oneDNN or its loops" : "oneDNN", c->rc);
            int gaps;
            double worst = mm_worst(c, &gaps);
            CHECK_MSG(worst <= 1.0, "%s: error %.2f of the bound", what, worst);
            CHECK_MSG(gaps, "%s: the gaps between C's rows untouched", what);
        }
    }
    for (int i = 0; i < nc; i++) mm_free(&cases[i]);
    CHECK(hv_onednn_matmul(d, 0, 1, 1, cases, 1, cases, 1, 0, NULL, 1) == -1);
    int threads = threads_down_to(threads_before);
    CHECK_MSG(threads == threads_before, "oneDNN %s matmul: no threads beyond ours (%d, %d)",
              bf16 ? "bf16" : "f32", threads_before, threads);
    hv_onednn_free(d);
}

/* Many products at once through one engine, from threads of their own
 * (not a pool's tasks): each makes attention products (hv_onednn_matmul on
 * the thread itself) and weight products (hv_onednn_gemm on a pool of its
 * own) of mixed shapes, more than an execution context keeps memory
 * objects for, in an order of its own, on operands of its own, and checks
 * every result against the double-precision product as it comes, its
 * output filled with -7 before each call. An execution context used by two
 * calls at once shows as wrong or missing outputs (or a crash, when one
 * call's memory objects are replaced under the other); a scratchpad
 * smaller than its primitive's, where oneDNN asks for one (not its f32
 * gemm:jit), as a product oneDNN did not run. */
enum { SH_THREADS = 4, SH_MM = 6, SH_GEMM = 2, SH_ROUNDS = 100 };

typedef struct sh_gemm {
    int n, rows, cols;
    hv_mat W;
    void *store;
    float *w, *x, *bias, *y;
} sh_gemm;

typedef struct sh_thread {
    hv_onednn *d;
    int id;
    mm_case mm[SH_MM];
    sh_gemm g[SH_GEMM];
    double worst_mm, worst_gemm; /* as multiples of their bounds */
    int calls, not_run, gaps;
} sh_thread;

/* y's worst error against x . W^T + bias in double, as a multiple of
 * test_engine's bound. */
static double gemm_worst(const sh_gemm *g) {
    double worst = 0, bound = 8e-7 * (g->cols + 2);
    for (int i = 0; i < g->n; i++)
        for (int r = 0; r < g->rows; r++) {
            double s = g->bias[r], mag = fabs(g->bias[r]);
            for (int k = 0; k < g->cols; k++) {
                double p = (double)g->x[(size_t)i * g->cols + k] * g->w[(size_t)r * g->cols + k];
                s += p;
                mag += fabs(p);
            }
            double err = fabs(g->y[(size_t)i * g->rows + r] - s) / (mag + 1e-30);
            if (!(err / bound <= worst)) worst = isnan(err) ? INFINITY : err / bound;
        }
    return worst;
}

static void *sh_run(void *arg) {
    sh_thread *t = arg;
    hv_pool *pool = hv_pool_new(1);
    if (!pool) abort();
    for (int round = 0; round < SH_ROUNDS; round++) {
        /* the shapes in an order that differs between threads and rounds */
        for (int s = 0; s < SH_MM; s++) {
            mm_case *c = &t->mm[(s * (t->id + 1) + round) % SH_MM];
            mm_clear(c);
            int rc = hv_onednn_matmul(t->d, c->m, c->n, c->k, c->a, c->lda, c->b, c->ldb,
                                      c->b_trans, c->c, c->ldc);
            int gaps;
            double worst = mm_worst(c, &gaps);
            if (worst > t->worst_mm) t->worst_mm = worst;
            t->not_run += rc != 0;
            t->gaps &= gaps;
            t->calls++;
        }
        sh_gemm *g = &t->g[(round + t->id) % SH_GEMM];
        for (size_t i = 0; i < (size_t)g->n * g->rows; i++) g->y[i] = -7.0f;
        const hv_mat *W = &g->W;
        const float *bias = g->bias;
        int rc = hv_onednn_gemm(t->d, pool, g->n, g->x, 1, &W, &bias, &g->y, NULL, NULL);
        double worst = gemm_worst(g);
        if (worst > t->worst_gemm) t->worst_gemm = worst;
        t->not_run += rc != 0;
        t->calls++;
    }
    hv_pool_free(pool);
    return NULL;
}

static void test_shared(void) {
    hv_onednn *d = hv_onednn_new(0);
    if (!d) return;
    /* m, n, k, b_trans, and the gaps after A's, B's and C's rows */
    const int mm[SH_MM][7] = {{16, 16, 16, 1, 0, 0, 0},   {48, 48, 160, 1, 480, 480, 3},
                              {33, 7, 160, 0, 0, 0, 5},   {32, 100, 64, 1, 64, 0, 0},
                              {100, 64, 100, 0, 7, 9, 0}, {7, 200, 16, 1, 0, 16, 1}};
    const int gs[SH_GEMM][3] = {{17, 72, 96}, {45, 130, 40}};
    sh_thread th[SH_THREADS];
    pthread_t tid[SH_THREADS];
    for (int i = 0; i < SH_THREADS; i++) {
        sh_thread *t = &th[i];
        *t = (sh_thread){.d = d, .id = i, .gaps = 1};
        for (int s = 0; s < SH_MM; s++) {
            mm_case *c = &t->mm[s];
            *c = (mm_case){.m = mm[s][0], .n = mm[s][1], .k = mm[s][2], .b_trans = mm[s][3]};
            c->lda = c->k + mm[s][4];
            c->ldb = (c->b_trans ? c->k : c->n) + mm[s][5];
            c->ldc = c->n + mm[s][6];
            mm_init(c, 0);
        }
        for (int s = 0; s < SH_GEMM; s++) {
            sh_gemm *g = &t->g[s];
            *g = (sh_gemm){.n = gs[s][0], .rows = gs[s][1], .cols = gs[s][2]};
            g->W = make_mat(HV_WEIGHTS_F32, g->rows, g->cols, &g->store, &g->w);
            g->x = frand_vec((size_t)g->n * g->cols);
            g->bias = frand_vec((size_t)g->rows);
            g->y = falloc((size_t)g->n * g->rows);
        }
    }
    for (int i = 0; i < SH_THREADS; i++)
        if (pthread_create(&tid[i], NULL, sh_run, &th[i])) abort();
    for (int i = 0; i < SH_THREADS; i++) pthread_join(tid[i], NULL);
    for (int i = 0; i < SH_THREADS; i++) {
        sh_thread *t = &th[i];
        CHECK_MSG(t->calls == SH_ROUNDS * (SH_MM + 1) && t->not_run == 0,
                  "one engine, %d threads at once: thread %d's products all run by oneDNN "
                  "(%d of %d not)",
                  SH_THREADS, i, t->not_run, t->calls);
        CHECK_MSG(t->worst_mm <= 1.0 && t->gaps,
                  "one engine, %d threads at once: thread %d's matmuls within the bound (worst "
                  "%.2f of it), C's gaps untouched (%d)",
                  SH_THREADS, i, t->worst_mm, t->gaps);
        CHECK_MSG(t->worst_gemm <= 1.0,
                  "one engine, %d threads at once: thread %d's weight products within the bound "
                  "(worst %.2f of it)",
                  SH_THREADS, i, t->worst_gemm);
        for (int s = 0; s < SH_MM; s++) mm_free(&t->mm[s]);
        for (int s = 0; s < SH_GEMM; s++) {
            sh_gemm *g = &t->g[s];
            free(g->store), free(g->w), free(g->x), free(g->bias), free(g->y);
        }
    }
    hv_onednn_free(d);
}

/* hv_eng_feed_forward on the bf16 engine (the hidden layer written by the
 * first product's sink as bf16 into the second's input) and on our tables
 * in bf16 compute: the bits of hv_eng_norm_linear with SiLU then
 * hv_eng_linear with the residual. */
static void test_feed_forward(void) {
    hv_onednn *d = hv_onednn_native_bf16() ? hv_onednn_new(1) : NULL;
    const struct {
        int n, d, h;
    } shapes[] = {{40, 64, 256}, {100, 96, 1100}, {230, 128, 512}, {9, 64, 128}};
    for (int threads = 1; threads <= 3; threads += 2) {
        hv_pool *pool = hv_pool_new(threads);
        if (!pool) abort();
        for (int engine = 0; engine < 2; engine++) {
            if (engine && !d) continue;
            hv_engine eng = hv_engine_make(pool, 1, engine ? d : NULL);
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
                int n = shapes[k].n, cols = shapes[k].d, h = shapes[k].h;
                void *s_up, *s_down;
                float *w_up, *w_down;
                hv_mat up = make_mat(HV_WEIGHTS_BF16, h, cols, &s_up, &w_up);
                hv_mat down = make_mat(HV_WEIGHTS_BF16, cols, h, &s_down, &w_down);
                float *x = frand_vec((size_t)n * cols), *nw = frand_vec(cols);
                float *nb = frand_vec(cols), *bu = frand_vec(h), *bd = frand_vec(cols);
                float *res = frand_vec((size_t)n * cols), *r1 = falloc((size_t)n * cols);
                float *r2 = falloc((size_t)n * cols), *y1 = falloc((size_t)n * cols);
                float *y2 = falloc((size_t)n * cols), *norm = falloc((size_t)n * cols);
                float *hid = falloc((size_t)n * h);
                const hv_mat *upp = &up;
                const float *bup = bu;
                memcpy(r1, res, (size_t)n * cols * sizeof *res);
                memcpy(r2, res, (size_t)n * cols * sizeof *res);
                hv_eng_norm_linear(&eng, norm, x, n, cols, nw, nb, 1e-5f, 1, &upp, &bup, &hid,
                                   &hv_ep_silu);
                hv_eng_linear(&eng, y1, hid, n, &down, bd,
                              &(hv_epilogue){.residual = r1, .scale = 0.5f});
                for (size_t i = 0; i < (size_t)n * h; i++) hid[i] = NAN;
                hv_eng_feed_forward(&eng, norm, x, n, cols, nw, nb, 1e-5f, &up, bu, &down, bd, hid,
                                    y2, &(hv_epilogue){.residual = r2, .scale = 0.5f});
                CHECK_MSG(!memcmp(y1, y2, (size_t)n * cols * sizeof *y1) &&
                              !memcmp(r1, r2, (size_t)n * cols * sizeof *r1),
                          "feed-forward %d x %d x %d on %s, %d threads: the bits of the two steps",
                          n, cols, h, engine ? "oneDNN bf16" : "our tables", threads);
                /* on the engine the hidden layer is bf16 in the first half
                 * of hid's memory: its last f32 row is never written */
                if (engine && n > HV_LINEAR_GEMV_MAX_N)
                    CHECK_MSG(isnan(hid[(size_t)n * h - 1]),
                              "feed-forward %d x %d x %d: the hidden layer in bf16", n, cols, h);
                free(x), free(nw), free(nb), free(bu), free(bd), free(res), free(r1), free(r2);
                free(y1), free(y2), free(norm), free(hid), free(w_up), free(w_down);
                free(s_up), free(s_down);
            }
        }
        hv_pool_free(pool);
    }
    hv_onednn_free(d);
}

int main(void) {
    /* the threads of the process before any pool (the libraries' own):
     * what the oneDNN tests must come back to */
    int threads = task_count();
    rng = 4242;
    test_rounding();
    test_emulation();
    test_rows_class();
    test_engine(0, threads);
    /* bf16 only where this CPU (or ONEDNN_MAX_CPU_ISA) has it natively:
     * oneDNN 2.6 has no bf16 matmul below AVX512_CORE_BF16 */
    if (hv_onednn_native_bf16()) test_engine(1, threads);
    test_matmul(0, threads);
    /* on every host: the bf16 bits' strides and transposition reach
     * oneDNN's primitives where the CPU has native bf16, and the loops
     * that stand in when a primitive is missing elsewhere */
    test_matmul(1, threads);
    test_concurrent();
    test_shared();
    test_feed_forward();
    TEST_END();
}
