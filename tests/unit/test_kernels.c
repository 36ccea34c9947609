/* Kernels against naive double-precision versions; the thread pool. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"
#include "kernels/threads.h"
#include "testlib.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) / 16777216.0 * 2.0 - 1.0);
}

typedef struct {
    atomic_int *hits;
} count_job;
static void count_task(void *arg, int task, int n_tasks) {
    count_job *j = arg;
    (void)n_tasks;
    atomic_fetch_add(&j->hits[task], 1);
}

static void test_pool(void) {
    for (int threads = 1; threads <= 4; threads++) {
        hv_pool *p = hv_pool_new(threads);
        CHECK(p != NULL);
        CHECK(hv_pool_size(p) == threads);
        for (int round = 0; round < 50; round++) {
            int n = 1 + round % 17;
            atomic_int hits[17];
            for (int i = 0; i < 17; i++) atomic_init(&hits[i], 0);
            count_job j = {hits};
            hv_pool_run(p, n, count_task, &j);
            int ok = 1;
            for (int i = 0; i < 17; i++) ok &= atomic_load(&hits[i]) == (i < n);
            CHECK_MSG(ok, "pool(%d) round %d: every task exactly once", threads, round);
        }
        hv_pool_free(p);
    }
    hv_pool_free(NULL);
}

/* The CPU detector (cpu.c) on this host (test_cpu_matrix has the recorded
 * CPUs): the detected level as a cap keeps the features, the
 * cap (HVISKE_MAX_ISA, when set) holds the features within its level, and
 * the best matrix table and element-wise level are the features' own. Where
 * the test is run on an emulated CPU model (tests/CMakeLists.txt: QEMU_CPU
 * for ARM), HV_TEST_CPU_LEVEL names the level the detector must find: a
 * table the CPU lacks would be picked, or one it has missed. */
static void test_cpu_levels(void) {
    unsigned detected = hv_cpu_detected(), features = hv_cpu_features(), mask = 1;
    CHECK((features & ~detected) == 0);
    const char *level = hv_cpu_level_name(detected);
    /* its own level as a cap keeps every feature (a level lets through
     * what a CPU of that level may have beside it: Zen 4 is avx512_bf16
     * without AVX-VNNI, Zen 5 with it) */
    CHECK_MSG(hv_cpu_level_parse(level, &mask) == 0 && (detected & mask) == detected,
              "detected level %s keeps the CPU's features as a cap", level);
    CHECK(hv_cpu_level_parse("portable", &mask) == 0 && mask == 0);
    CHECK(hv_cpu_level_parse("no-such-level", &mask) == -1 && hv_cpu_level_parse(NULL, &mask));
    const char *want = getenv("HV_TEST_CPU_LEVEL");
    if (want) CHECK_MSG(!strcmp(level, want), "the CPU detected as %s, want %s", level, want);
    const char *cap = getenv("HVISKE_MAX_ISA");
    if (cap && *cap) {
        CHECK_MSG(hv_cpu_level_parse(cap, &mask) == 0 && (features & ~mask) == 0 &&
                      hv_cpu_cap_error() == NULL,
                  "HVISKE_MAX_ISA=%s holds the features within it", cap);
        printf("HVISKE_MAX_ISA=%s: %s\n", cap, hv_cpu_level_name(features));
    }
    printf("CPU level %s; matrix kernels %s, element-wise %s\n", level, hv_mm_best()->name,
           hv_ops_level_name(hv_ops_level()));
#if defined(__aarch64__)
    /* the ARM levels, each a table of its own name, and no x86 ones */
    const char *best = hv_cpu_level_name(features);
    CHECK_MSG(!strcmp(hv_mm_best()->name, strcmp(best, "portable") ? best : "scalar"),
              "level %s runs table %s", best, hv_mm_best()->name);
    CHECK(!strcmp(hv_ops_level_name(hv_ops_level()), features & HV_CPU_NEON ? "neon" : "portable"));
    const char *arm[] = {"neon", "dotprod", "i8mm"};
    for (int i = 0; i < 3; i++) CHECK(hv_cpu_level_parse(arm[i], &mask) == 0 && mask);
    CHECK(hv_cpu_level_parse("avx2", &mask) == -1);
#endif
}

static void test_linear(void) {
    unsigned s = 1;
    const int shapes[][3] = {{1, 7, 5},     {1, 300, 64},   {3, 33, 17},
                             {40, 130, 96}, {17, 1000, 40}, {64, 64, 64}};
    for (int threads = 1; threads <= 3; threads++) {
        hv_pool *p = hv_pool_new(threads);
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            int n = shapes[k][0], out = shapes[k][1], in = shapes[k][2];
            float *x = malloc(sizeof(float) * n * in), *w = malloc(sizeof(float) * out * in);
            float *b = malloc(sizeof(float) * out), *y = malloc(sizeof(float) * n * out);
            for (int i = 0; i < n * in; i++) x[i] = frand(&s);
            for (int i = 0; i < out * in; i++) w[i] = frand(&s);
            for (int i = 0; i < out; i++) b[i] = frand(&s);
            hv_mat W = {HV_WEIGHTS_F32, out, in, w, 0, 0};
            hv_linear(p, y, x, n, &W, b);
            double worst = 0;
            for (int i = 0; i < n; i++)
                for (int o = 0; o < out; o++) {
                    double acc = b[o];
                    for (int t = 0; t < in; t++) acc += (double)x[i * in + t] * w[o * in + t];
                    double d = fabs(acc - y[i * out + o]);
                    if (d > worst) worst = d;
                }
            CHECK_MSG(worst < 1e-4, "linear %dx%dx%d threads %d: max diff %g", n, out, in, threads,
                      worst);
            hv_linear(p, y, x, n, &W, NULL);
            double acc = 0;
            for (int t = 0; t < in; t++) acc += (double)x[t] * w[t];
            CHECK(fabs(acc - y[0]) < 1e-4);
            free(x);
            free(w);
            free(b);
            free(y);
        }
        hv_pool_free(p);
    }
}

static void test_gemm(void) {
    /* C = A . B^T and C = A . B with leading dimensions larger than sizes */
    float A[2 * 4] = {1, 2, 3, 0, 4, 5, 6, 0}; /* 2x3, lda 4 */
    float Bt[2 * 3] = {1, 0, 1, 0, 1, 0};      /* 2x3 (n x k) */
    float B[3 * 2] = {1, 0, 0, 1, 1, 0};       /* 3x2 (k x n) */
    float C[2 * 2];
    hv_gemm(2, 2, 3, 1.0f, A, 4, Bt, 3, 1, 0.0f, C, 2);
    CHECK(C[0] == 4 && C[1] == 2 && C[2] == 10 && C[3] == 5);
    hv_gemm(2, 2, 3, 2.0f, A, 4, B, 2, 0, 0.0f, C, 2);
    CHECK(C[0] == 8 && C[1] == 4 && C[2] == 20 && C[3] == 10);
}

static void test_ops(void) {
    float x[6] = {1, 2, 3, 4, 5, 9}, w[3] = {1, 2, 3}, b[3] = {0, 1, -1}, y[6];
    hv_layernorm(y, x, 2, 3, w, b, 1e-5f);
    /* row 0: mean 2, var 2/3 */
    double inv = 1.0 / sqrt(2.0 / 3.0 + 1e-5);
    CHECK(fabs(y[0] - (-1 * inv * 1 + 0)) < 1e-5);
    CHECK(fabs(y[1] - 1.0) < 1e-6);
    CHECK(fabs(y[2] - (1 * inv * 3 - 1)) < 1e-5);
    hv_layernorm(x, x, 2, 3, w, b, 1e-5f); /* in place */
    CHECK(memcmp(x, y, sizeof y) == 0);

    float s[4] = {1000, 1001, 999, -1e30f};
    hv_softmax(s, 4);
    double e1 = exp(-1), e2 = exp(-2), z = e1 + 1 + e2;
    CHECK(fabs(s[0] - e1 / z) < 1e-6 && fabs(s[1] - 1 / z) < 1e-6 && s[3] == 0);
    float l[3] = {0, log(2.0), log(5.0)};
    hv_log_softmax(l, 3);
    CHECK(fabs(l[0] - log(1 / 8.0)) < 1e-6 && fabs(l[2] - log(5 / 8.0)) < 1e-6);

    float a[4] = {-2, 0, 3, -0.5f};
    hv_relu(a, 4);
    CHECK(a[0] == 0 && a[2] == 3 && a[3] == 0);
    float si[2] = {0, 2};
    hv_silu(si, 2);
    CHECK(si[0] == 0 && fabs(si[1] - 2 / (1 + exp(-2))) < 1e-6);
    float m[5] = {1, 7, 7, -3, 2};
    CHECK(hv_argmax(m, 5) == 1);
}

/* hv_exp_act against exp in double: within 2 ulp over its range. */
static void test_exp_act(void) {
    double worst = 0;
    for (long i = 0; i <= 2000000; i++) {
        float x = -87.0f + 175.0f * (float)i / 2000000.0f;
        double ref = exp((double)x), got = hv_exp_act(x);
        double ulp = nextafterf((float)ref, INFINITY) - (float)ref;
        double err = fabs(got - ref) / ulp;
        if (err > worst) worst = err;
    }
    CHECK_MSG(worst <= 2.0, "hv_exp_act: worst error %.2f ulp", worst);
    CHECK(hv_exp_act(0) == 1.0f && isnan(hv_exp_act(NAN)));
    CHECK(hv_exp_act(-1000) > 0 && hv_exp_act(-1000) < 1e-37f && isfinite(hv_exp_act(1000)));
}

/* hv_silu and hv_glu at each level this CPU has, bit for bit the scalar
 * formula over hv_exp_act, tails and special values included. */
static void test_activations(int level) {
    enum { N = 1037 };
    static float x[N], y[N], a[2 * N], g[N];
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 40.0f;
    }
    x[0] = 0, x[1] = -0.0f, x[2] = 100, x[3] = -100, x[4] = 1e-30f, x[5] = -90;
    memcpy(y, x, sizeof y);
    hv_silu_at(level, y, N);
    int same = 1;
    for (int i = 0; i < N; i++) {
        float want = x[i] / (1.0f + hv_exp_act(0.0f - x[i]));
        same &= memcmp(&want, &y[i], sizeof want) == 0;
    }
    CHECK_MSG(same, "hv_silu (%s) differs from its scalar formula", hv_ops_level_name(level));
    CHECK(fabsf(y[2] - 100) < 1e-4f && fabsf(y[3]) < 1e-30f);
    for (int i = 0; i < N; i++) a[i] = x[i], a[N + i] = x[N - 1 - i];
    hv_glu_at(level, g, a, N);
    same = 1;
    for (int i = 0; i < N; i++) {
        float want = a[i] / (1.0f + hv_exp_act(0.0f - a[N + i]));
        same &= memcmp(&want, &g[i], sizeof want) == 0;
    }
    CHECK_MSG(same, "hv_glu (%s) differs from its scalar formula", hv_ops_level_name(level));
    float nan8[9] = {NAN, 1, 2, 3, 4, 5, 6, 7, NAN};
    hv_silu_at(level, nan8, 9);
    CHECK(isnan(nan8[0]) && isnan(nan8[8]) && nan8[1] > 0.73f && nan8[1] < 0.74f);
}

/* The row sums' order (ops.c): 8 double lanes over the first n & ~7,
 * combined ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), then the rest in order. */
static double lanes_sum(const double *v, int n) {
    double s[8] = {0}, t;
    int n8 = n & ~7;
    for (int j = 0; j < n8; j++) s[j % 8] += v[j];
    t = ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
    for (int j = n8; j < n; j++) t += v[j];
    return t;
}

/* hv_softmax and hv_layernorm (vectorised where the CPU allows) bit for
 * bit their scalar formulas in that order, over lengths with and without
 * tails; and within stated bounds of double-precision versions. */
static void test_row_kernels(int level) {
    enum { MAXN = 1300 };
    static float x[MAXN], y[MAXN], w[MAXN], b[MAXN];
    static double v[MAXN];
    static uint16_t yb[MAXN + 1];
    const int lens[] = {1, 7, 8, 9, 13, 16, 17, 24, 31, 32, 33, 64, 375, 1037, 1280};
    unsigned seed = 77;
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        int n = lens[k];
        for (int i = 0; i < n; i++) x[i] = frand(&seed) * 30.0f;
        if (n > 3) x[n / 2] = -1e30f, x[n - 1] = -95.0f; /* masked; below exp's range */
        memcpy(y, x, sizeof(float) * n);
        hv_softmax_at(level, y, n);
        float mx = x[0];
        for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        float e[MAXN];
        for (int i = 0; i < n; i++) {
            float t = x[i] - mx;
            e[i] = t < -87.0f ? 0.0f : hv_exp_act(t);
            v[i] = e[i];
        }
        float inv = (float)(1.0 / lanes_sum(v, n));
        double z = 0;
        /* the reference from the same float differences x - max: their
         * rounding alone moves e^t by |t| x 2^-24 relative */
        for (int i = 0; i < n; i++) z += exp((double)(x[i] - mx));
        int same = 1, close = 1;
        for (int i = 0; i < n; i++) {
            float want = e[i] * inv;
            same &= memcmp(&want, &y[i], sizeof want) == 0;
            double ref = exp((double)(x[i] - mx)) / z;
            close &= fabs(y[i] - ref) <= 1e-6 * ref + 1e-37;
        }
        CHECK_MSG(same, "hv_softmax(%d, %s) differs from its scalar formula", n,
                  hv_ops_level_name(level));
        CHECK_MSG(close, "hv_softmax(%d): beyond 1e-6 relative of double", n);
        if (n > 3) CHECK(y[n / 2] == 0.0f && y[n - 1] == 0.0f);

        /* log-softmax: x - (max + log of the same lane sum of the same
         * exps), and within a few float ulps of x - max - log z */
        memcpy(y, x, sizeof(float) * n);
        hv_log_softmax_at(level, y, n);
        float lse = mx + (float)log(lanes_sum(v, n));
        same = 1, close = 1;
        for (int i = 0; i < n; i++) {
            float want = x[i] - lse;
            same &= memcmp(&want, &y[i], sizeof want) == 0;
            double ref = (double)(x[i] - mx) - log(z);
            if (x[i] > -1e29f) close &= fabs(y[i] - ref) <= 1e-6 * (fabs(ref) + fabs(mx) + 1);
        }
        CHECK_MSG(same, "hv_log_softmax(%d, %s) differs from its scalar formula", n,
                  hv_ops_level_name(level));
        CHECK_MSG(close, "hv_log_softmax(%d): beyond 1e-6 relative of double", n);

        for (int i = 0; i < n; i++) {
            x[i] = 3.0f + frand(&seed) * 2.0f; /* an offset mean, as in activations */
            w[i] = frand(&seed), b[i] = frand(&seed);
        }
        hv_layernorm_at(level, y, x, 1, n, w, b, 1e-5f);
        for (int i = 0; i < n; i++) v[i] = x[i];
        double mean = lanes_sum(v, n) / n, dmean = 0, dvar = 0;
        for (int i = 0; i < n; i++) v[i] = (x[i] - mean) * (x[i] - mean);
        double var = lanes_sum(v, n) / n;
        float linv = (float)(1.0 / sqrt(var + 1e-5f)), m = (float)mean;
        for (int i = 0; i < n; i++) dmean += x[i];
        dmean /= n;
        for (int i = 0; i < n; i++) dvar += (x[i] - dmean) * (x[i] - dmean);
        dvar /= n;
        same = 1, close = 1;
        for (int i = 0; i < n; i++) {
            float want = (x[i] - m) * linv * w[i] + b[i];
            same &= memcmp(&want, &y[i], sizeof want) == 0;
            double ref = (x[i] - dmean) / sqrt(dvar + 1e-5) * w[i] + b[i];
            close &= fabs(y[i] - ref) <= 1e-5 * (1 + fabs(ref));
        }
        CHECK_MSG(same, "hv_layernorm(%d, %s) differs from its scalar formula", n,
                  hv_ops_level_name(level));
        CHECK_MSG(close, "hv_layernorm(%d): beyond 1e-5 of double", n);
        /* the LayerNorm written as bf16: the bits of its floats, rounded */
        yb[n] = 0xabcd; /* not written past the end */
        hv_layernorm_bf16_at(level, yb, x, 1, n, w, b, 1e-5f);
        same = yb[n] == 0xabcd;
        for (int i = 0; i < n; i++) same &= yb[i] == hv_f32_to_bf16(y[i]);
        CHECK_MSG(same, "hv_layernorm_bf16(%d, %s) differs from hv_layernorm's floats rounded", n,
                  hv_ops_level_name(level));
    }
}

/* hv_add_scaled and the bf16 roundings at each level: bit for bit their
 * scalar formulas (y += alpha * x; hv_bf16_round, hv_f32_to_bf16), over
 * lengths with and without tails and the values where rounding is
 * special: ties either way, NaNs quiet and signalling, infinities, the
 * largest finite value (rounds to infinity), denormals, zeros. */
static void test_passes(int level) {
    enum { MAXN = 1100 };
    static float x[MAXN], y[MAXN], want[MAXN];
    static uint16_t bits[MAXN + 1];
    const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x7fc00000u, 0x7f800001u,
                                0xff800001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u,
                                0x807fffffu, 0x80000000u, 0x00000000u, 0x7fffffffu, 0x3f80ffffu};
    const int lens[] = {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 1037, 1100};
    unsigned seed = 99;
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        int n = lens[k];
        for (int i = 0; i < n; i++) {
            x[i] = frand(&seed) * 1000.0f;
            uint32_t u = special[(i * 7 + k) % (sizeof special / sizeof special[0])];
            if (i % 3 == 0) memcpy(&x[i], &u, 4);
        }
        for (int i = 0; i < n; i++) y[i] = want[i] = frand(&seed);
        for (int i = 0; i < n; i++) want[i] += 0.37f * x[i];
        hv_add_scaled_at(level, y, x, n, 0.37f);
        CHECK_MSG(memcmp(y, want, sizeof(float) * n) == 0, "hv_add_scaled(%d, %s) differs", n,
                  hv_ops_level_name(level));

        int same = 1;
        hv_bf16_round_n_at(level, y, x, n);
        for (int i = 0; i < n; i++) {
            float r = hv_bf16_round(x[i]);
            same &= memcmp(&r, &y[i], 4) == 0;
        }
        memcpy(y, x, sizeof(float) * n);
        hv_bf16_round_n_at(level, y, y, n); /* in place */
        for (int i = 0; i < n; i++) {
            float r = hv_bf16_round(x[i]);
            same &= memcmp(&r, &y[i], 4) == 0;
        }
        CHECK_MSG(same, "hv_bf16_round_n(%d, %s) differs from hv_bf16_round", n,
                  hv_ops_level_name(level));
        bits[n] = 0xabcd; /* not written past the end */
        hv_bf16_bits_n_at(level, bits, x, n);
        same = bits[n] == 0xabcd;
        for (int i = 0; i < n; i++) same &= bits[i] == hv_f32_to_bf16(x[i]);
        CHECK_MSG(same, "hv_bf16_bits_n(%d, %s) differs from hv_f32_to_bf16", n,
                  hv_ops_level_name(level));
    }
    /* the special values' roundings, as hv_f32_to_bf16 defines them */
    float f;
    uint32_t u = 0x3f808000u; /* a tie to the even 0x3f80 */
    memcpy(&f, &u, 4);
    hv_bf16_bits_n_at(level, bits, &f, 1);
    CHECK(bits[0] == 0x3f80);
    u = 0x7f7fffffu; /* the largest finite value rounds to infinity */
    memcpy(&f, &u, 4);
    hv_bf16_bits_n_at(level, bits, &f, 1);
    CHECK(bits[0] == 0x7f80);
}

int main(void) {
    test_cpu_levels();
    test_pool();
    test_exp_act();
    /* every level this CPU has, portable first */
    for (int level = HV_OPS_PORTABLE; level <= hv_ops_level(); level++) {
        test_activations(level);
        test_row_kernels(level);
        test_passes(level);
    }
    test_linear();
    test_gemm();
    test_ops();
    TEST_END();
}
