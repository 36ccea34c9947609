/* Speeds of the matrix kernels, to set beside hviske-bench: the FMA
 * arithmetic rate, a decoder step's products swept from memory, hv_linear
 * for every weight type on decoder and encoder shapes, 1 and 2 threads,
 * and, on the encoder's shapes, our kernels in f32 and bf16 compute
 * against oneDNN's (docs/KERNELS.md), and the cost of a oneDNN call on the
 * attention's products, the encoder attention's three products on each
 * kernel table (sgemm_nn), and the element-wise passes at each
 * instruction-set level. Built as build/bench-kernels; not a test.
 * Arguments name the sections to run (linear, onednn, calls, attention,
 * ops); none runs them all. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/engine.h"
#include "kernels/onednn.h"
#include "kernels/ops.h"
#include "kernels/threads.h"
#include "mm_testutil.h"

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

static void bench_linear(void) {
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

/* GFLOP/s of hv_linear on pool for [n x cols] . [cols x rows]: best of 5. */
/* The rate of hv_eng_linear on pool in bf16 or f32 compute, on dnn (NULL:
 * our tables). */
static double linear_rate(hv_pool *pool, int bf16, hv_onednn *dnn, const hv_mat *W, const float *x,
                          float *y, int n) {
    hv_engine eng = hv_engine_make(pool, bf16, dnn);
    double best = 1e30;
    for (int rep = -1; rep < 5; rep++) {
        double t0 = now();
        hv_eng_linear(&eng, y, x, n, W, NULL, NULL);
        double dt = now() - t0;
        if (rep >= 0 && dt < best) best = dt;
    }
    return 2.0 * n * W->rows * W->cols / best / 1e9;
}

/* The encoder's shapes (M = 375, or HV_ROWS, d = 1280): our kernels in
 * f32 and bf16 compute, bf16 and f32 weights, against oneDNN f32 (and
 * bf16 where the CPU has it), threads from HV_THREADS (default 2). */
static void bench_onednn(void) {
    const char *env = getenv("HV_THREADS"), *rows_env = getenv("HV_ROWS");
    int threads = env && atoi(env) > 0 ? atoi(env) : 2, d = 1280;
    int n = rows_env && atoi(rows_env) > 0 ? atoi(rows_env) : 375;
    const int kn[][2] = {{d, 4 * d}, {4 * d, d}, {d, d}, {d, 2 * d}};
    hv_onednn *f32 = hv_onednn_new(0), *b16 = hv_onednn_native_bf16() ? hv_onednn_new(1) : NULL;
    printf("\noneDNN: threads %d, M = %d; GFLOP/s (best of 5)\n", threads, n);
    printf("%-11s %9s %9s %9s %9s %12s %12s\n", "K x N", "ours f32", "ours bf16", "w bf16",
           "w bf16 c16", "onednn f32", "onednn bf16");
    for (size_t s = 0; s < sizeof kn / sizeof kn[0]; s++) {
        int cols = kn[s][0], rows = kn[s][1];
        float *src = falloc((size_t)rows * cols), *x = falloc((size_t)n * cols);
        float *y = falloc((size_t)n * rows);
        for (size_t i = 0; i < (size_t)rows * cols; i++) src[i] = frand();
        for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = frand();
        hv_mat W, Wb;
        void *s32, *s16;
        hv_error e;
        if (hv_mat_from_f32(&W, HV_WEIGHTS_F32, src, rows, cols, &s32, &e) != HV_OK ||
            hv_mat_from_f32(&Wb, HV_WEIGHTS_BF16, src, rows, cols, &s16, &e) != HV_OK)
            abort();
        hv_pool *pool = hv_pool_new(threads);
        double r[6] = {0};
        r[0] = linear_rate(pool, 0, NULL, &W, x, y, n);
        r[1] = linear_rate(pool, 1, NULL, &W, x, y, n);
        r[2] = linear_rate(pool, 0, NULL, &Wb, x, y, n);
        r[3] = linear_rate(pool, 1, NULL, &Wb, x, y, n);
        if (f32) r[4] = linear_rate(pool, 0, f32, &W, x, y, n);
        if (b16) r[5] = linear_rate(pool, 1, b16, &Wb, x, y, n);
        printf("%5d x %-5d %9.1f %9.1f %9.1f %9.1f %12.1f %12.1f\n", cols, rows, r[0], r[1], r[2],
               r[3], r[4], r[5]);
        hv_pool_free(pool);
        free(src), free(x), free(y), free(s32), free(s16);
    }
    char impl[64] = "";
    if (f32) hv_onednn_impl(f32, n, d, 4 * d, impl, sizeof impl);
    printf("oneDNN f32 implementation: %s\n", impl[0] ? impl : "(none)");
    hv_onednn_free(f32);
    hv_onednn_free(b16);
}

/* A batch of the attention's per-head products: every task makes `calls`
 * products of one shape into its own output. */
typedef struct calls_job {
    hv_onednn *d; /* NULL: hv_gemm */
    int m, n, k, b_trans, calls;
    const float *a, *b;
    float *c; /* [tasks][m x n] */
} calls_job;

static void calls_task(void *arg, int task, int n_tasks) {
    const calls_job *j = arg;
    (void)n_tasks;
    int ldb = j->b_trans ? j->k : j->n;
    float *c = j->c + (size_t)task * j->m * j->n;
    for (int i = 0; i < j->calls; i++)
        if (j->d)
            hv_onednn_matmul(j->d, j->m, j->n, j->k, j->a, j->k, j->b, ldb, j->b_trans, c, j->n);
        else
            hv_gemm(j->m, j->n, j->k, 1.0f, j->a, j->k, j->b, ldb, j->b_trans, 0.0f, c, j->n);
}

/* Microseconds per product with every thread of pool making products at
 * once: best of 7 batches of at least 20 ms. */
static double us_per_call(hv_pool *pool, calls_job *j) {
    int threads = hv_pool_size(pool);
    j->calls = 1;
    hv_pool_run(pool, threads, calls_task, j); /* the primitive made */
    for (;;) {                                 /* calls per batch */
        double t0 = now();
        hv_pool_run(pool, threads, calls_task, j);
        if (now() - t0 >= 0.02) break;
        j->calls *= 2;
    }
    double best = 1e30;
    for (int rep = 0; rep < 7; rep++) {
        double t0 = now();
        hv_pool_run(pool, threads, calls_task, j);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    return best / j->calls * 1e6;
}

/* The cost of a oneDNN call beside its arithmetic: hv_onednn_matmul (f32
 * engine) against hv_gemm on the encoder attention's shapes (head dim
 * 160 of the full-size model; 16 x 16 x 16, where the arithmetic is
 * negligible, shows the call alone), on 1 thread and on 2 threads making
 * products at once. */
static void bench_onednn_calls(void) {
    const struct {
        int m, n, k, b_trans;
        const char *what;
    } cases[] = {
        {16, 16, 16, 1, "call alone"},       {48, 48, 160, 1, "scores, 3.8 s"},
        {32, 416, 160, 1, "band, 30 s"},     {384, 384, 160, 1, "scores, 30 s"},
        {384, 160, 384, 0, "context, 30 s"},
    };
    hv_onednn *d = hv_onednn_new(0);
    if (!d) {
        printf("\noneDNN calls: no oneDNN\n");
        return;
    }
    printf("\noneDNN calls, f32 engine: us per hv_onednn_matmul and per hv_gemm (best of 7),\n"
           "1 thread and 2 threads making products at once\n");
    printf("%-16s %-14s %9s %9s %9s %9s\n", "m x n x k", "product", "dnn 1t", "gemm 1t", "dnn 2t",
           "gemm 2t");
    hv_pool *pools[2] = {hv_pool_new(1), hv_pool_new(2)};
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
        int m = cases[s].m, n = cases[s].n, k = cases[s].k;
        float *a = falloc((size_t)m * k), *b = falloc((size_t)n * k),
              *c = falloc(2 * (size_t)m * n);
        for (size_t i = 0; i < (size_t)m * k; i++) a[i] = frand();
        for (size_t i = 0; i < (size_t)n * k; i++) b[i] = frand();
        double us[4];
        for (int r = 0; r < 4; r++) {
            calls_job j = {.d = r % 2 ? NULL : d,
                           .m = m,
                           .n = n,
                           .k = k,
                           .b_trans = cases[s].b_trans,
                           .a = a,
                           .b = b,
                           .c = c};
            us[r] = us_per_call(pools[r / 2], &j);
        }
        char sh[32];
        snprintf(sh, sizeof sh, "%dx%dx%d%s", m, n, k, cases[s].b_trans ? " T" : "");
        printf("%-16s %-14s %9.2f %9.2f %9.2f %9.2f\n", sh, cases[s].what, us[0], us[1], us[2],
               us[3]);
        free(a), free(b), free(c);
    }
    hv_pool_free(pools[0]);
    hv_pool_free(pools[1]);
    hv_onednn_free(d);
}

/* The element-wise passes of an encoder layer at each instruction-set
 * level this CPU has, one thread, on the full-size model's shapes at
 * 30 s (375 rows): us per pass (best of 15) and the rate against the
 * portable version, so that the gain of AVX2 and AVX-512 is measured in
 * one run on one host. */
typedef struct {
    float *x, *y, *w, *b, *a;
    uint16_t *bits;
} ops_bufs;

static void run_op(int op, int level, const ops_bufs *o) {
    enum { ROWS = 375, D = 1280, FF = 5120 };
    switch (op) {
        case 0:
            memcpy(o->y, o->x, sizeof(float) * ROWS * FF);
            hv_silu_at(level, o->y, (long)ROWS * FF);
            break;
        case 1:
            for (int r = 0; r < ROWS; r++)
                hv_glu_at(level, o->y + (long)r * D, o->a + (long)r * 2 * D, D);
            break;
        case 2: hv_layernorm_at(level, o->y, o->x, ROWS, D, o->w, o->b, 1e-5f); break;
        case 3:
            memcpy(o->y, o->x, sizeof(float) * ROWS * ROWS);
            for (int r = 0; r < ROWS; r++) hv_softmax_at(level, o->y + (long)r * ROWS, ROWS);
            break;
        case 4: hv_add_scaled_at(level, o->y, o->x, (long)ROWS * D, 0.5f); break;
        default: hv_bf16_bits_n_at(level, o->bits, o->x, (long)ROWS * FF); break;
    }
}

static void bench_ops(void) {
    const char *names[] = {"SiLU 375x5120",   "GLU 375x1280",      "LayerNorm 375x1280",
                           "softmax 375x375", "y += a x 375x1280", "to bf16 375x5120"};
    size_t big = 375 * 5120;
    ops_bufs o = {falloc(big),  falloc(big),        falloc(1280),
                  falloc(1280), falloc(375 * 2560), malloc(big * 2)};
    if (!o.bits) abort();
    for (size_t i = 0; i < big; i++) o.x[i] = frand() * 8;
    for (size_t i = 0; i < 375 * 2560; i++) o.a[i] = frand() * 8;
    for (int i = 0; i < 1280; i++) o.w[i] = frand(), o.b[i] = frand();
    int best = hv_ops_level();
    printf("\nelement-wise passes, 1 thread: us per pass (best of 15), rate against portable\n");
    printf("%-20s", "pass");
    for (int l = 0; l <= best; l++) printf(" %10s %7s", hv_ops_level_name(l), "x");
    printf("\n");
    for (int op = 0; op < 6; op++) {
        printf("%-20s", names[op]);
        double base = 0;
        for (int l = 0; l <= best; l++) {
            double t_best = 1e30;
            for (int r = 0; r < 16; r++) {
                double t = now();
                run_op(op, l, &o);
                t = now() - t;
                if (r && t < t_best) t_best = t; /* the first run untimed */
            }
            if (!l) base = t_best;
            printf(" %10.1f %7.2f", t_best * 1e6, base / t_best);
        }
        printf("\n");
    }
    free(o.x), free(o.y), free(o.w), free(o.b), free(o.a), free(o.bits);
}

/* One head's attention products of a 30 s chunk (encoder.c's attn_head:
 * 375 frames, 128 per head, 8 heads of the d = 1024 rows): scores against
 * the transposed keys, one 32-query band against the transposed positions,
 * and the context against the values read in place (row stride d); beside
 * them OpenBLAS's sgemm on the same operands, the yardstick of a tuned
 * GEMM (its sums are ordered otherwise). */
static void bench_attention(void) {
    enum { LEN = 375, DH = 128, D = 1024, BAND = 32 };
    const long pld = 2L * LEN - 1;
    struct {
        const char *name;
        int m, n, k;
        long lda, ldb;
    } shapes[] = {{"scores 375x375x128", LEN, LEN, DH, DH, LEN},
                  {"band 32x406x128", BAND, LEN + BAND - 1, DH, DH, pld},
                  {"context 375x128x375", LEN, DH, LEN, LEN, D}};
    float *a = falloc((size_t)LEN * LEN), *b = falloc((size_t)LEN * D + pld * DH);
    float *c = falloc((size_t)LEN * pld);
    for (size_t i = 0; i < (size_t)LEN * LEN; i++) a[i] = frand();
    for (size_t i = 0; i < (size_t)LEN * D + pld * DH; i++) b[i] = frand();
    const hv_mm_kernels *t[8];
    int nt = hv_mm_tables(t, 8);
    printf("\nencoder attention products (sgemm_nn), 1 thread: GFLOP/s (best of 20)\n");
    printf("%-22s", "product");
    for (int i = 0; i < nt; i++) printf(" %12s", t[i]->name);
    printf(" %12s\n", "openblas");
    openblas_set_num_threads(1);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        printf("%-22s", shapes[s].name);
        for (int i = 0; i < nt; i++) {
            double best = 1e30;
            for (int r = 0; r < 21; r++) {
                double t0 = now();
                t[i]->sgemm_nn(shapes[s].m, shapes[s].n, shapes[s].k, a, shapes[s].lda, b,
                               shapes[s].ldb, c, shapes[s].n);
                t0 = now() - t0;
                if (r && t0 < best) best = t0; /* the first run untimed */
            }
            printf(" %12.1f", 2.0 * shapes[s].m * shapes[s].n * shapes[s].k / best * 1e-9);
        }
        double best = 1e30;
        for (int r = 0; r < 21; r++) {
            double t0 = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, shapes[s].m, shapes[s].n,
                        shapes[s].k, 1.0f, a, (int)shapes[s].lda, b, (int)shapes[s].ldb, 0.0f, c,
                        shapes[s].n);
            t0 = now() - t0;
            if (r && t0 < best) best = t0;
        }
        printf(" %12.1f\n", 2.0 * shapes[s].m * shapes[s].n * shapes[s].k / best * 1e-9);
    }
    free(a), free(b), free(c);
}

int main(int argc, char **argv) {
    /* sections by name (linear, onednn, calls, attention, ops); all without */
    int all = argc < 2;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "linear") && strcmp(argv[i], "onednn") && strcmp(argv[i], "calls") &&
            strcmp(argv[i], "attention") && strcmp(argv[i], "ops")) {
            fprintf(stderr,
                    "bench-kernels: unknown section '%s' (linear, onednn, calls, attention, "
                    "ops)\n",
                    argv[i]);
            return 2;
        }
    for (int i = all ? 0 : 1; i < (all ? 1 : argc); i++) {
        if (all || !strcmp(argv[i], "linear")) bench_linear();
        if (all || !strcmp(argv[i], "onednn")) bench_onednn();
        if (all || !strcmp(argv[i], "calls")) bench_onednn_calls();
        if (all || !strcmp(argv[i], "attention")) bench_attention();
        if (all || !strcmp(argv[i], "ops")) bench_ops();
    }
    return 0;
}
