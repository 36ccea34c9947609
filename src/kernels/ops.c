#include "kernels/ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/matmul_impl.h" /* hv_mm_simd: the CPU check */

#ifdef HV_MM_HAVE_AVX2
#include <immintrin.h>
#endif

/* e^x for the activations, by Cephes' method: x clamped to [-87, 88],
 * n = floor(x log2(e) + 1/2), r = x - n ln 2 (ln 2 in two parts), e^r by
 * a degree-5 polynomial, times 2^n through the exponent bits. Within 2 ulp
 * of expf (tested); NaN stays NaN. The AVX2 version below does the same
 * operations in the same order with explicit fmas, so the two agree bit
 * for bit, and both are several times faster than libm's expf. */
#define EXP_HI    88.0f
#define EXP_LO    -87.0f
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1    0.693359375f
#define EXP_C2    -2.12194440e-4f
static const float exp_p[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

static float exp_act(float x) {
    if (x != x) return x;
    x = EXP_LO > x ? EXP_LO : x; /* the operand order of maxps/minps */
    x = EXP_HI < x ? EXP_HI : x;
    float n = floorf(fmaf(x, EXP_LOG2E, 0.5f));
    float r = fmaf(n, -EXP_C1, x);
    r = fmaf(n, -EXP_C2, r);
    float p = exp_p[0];
    for (int i = 1; i < 6; i++) p = fmaf(p, r, exp_p[i]);
    float y = fmaf(p, r * r, r) + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

#ifdef HV_MM_HAVE_AVX2
#define TARGET __attribute__((target("avx2,fma")))

TARGET static inline __m256 exp_act8(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(EXP_LO), x); /* NaN in x passes */
    x = _mm256_min_ps(_mm256_set1_ps(EXP_HI), x);
    __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(EXP_LOG2E), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-EXP_C1), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(-EXP_C2), r);
    __m256 p = _mm256_set1_ps(exp_p[0]);
    for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(exp_p[i]));
    __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

TARGET static long silu_avx2(float *x, long n) {
    long i = 0;
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = exp_act8(_mm256_sub_ps(zero, v));
        _mm256_storeu_ps(x + i, _mm256_div_ps(v, _mm256_add_ps(one, e)));
    }
    return i;
}

TARGET static long glu_avx2(float *y, const float *a, long d) {
    long i = 0;
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= d; i += 8) {
        __m256 e = exp_act8(_mm256_sub_ps(zero, _mm256_loadu_ps(a + d + i)));
        _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(a + i), _mm256_add_ps(one, e)));
    }
    return i;
}
#endif

/* The row sums of LayerNorm and softmax, in double and in one order for
 * both versions: 8 partial sums, lane l over the elements i = l mod 8 of
 * the first n & ~7, combined ((s0+s4)+(s2+s6))+((s1+s5)+(s3+s7)), then
 * the rest in order. */
static double lanes_total(const double s[8]) {
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

/* e^x for softmax, whose arguments are <= 0: below exp_act's range the
 * value is 0, as expf's would be to within a denormal. */
static float exp_softmax(float x) { return x < EXP_LO ? 0.0f : exp_act(x); }

#ifdef HV_MM_HAVE_AVX2
TARGET static inline __m256d lanes_add(__m256d acc, __m128 v) {
    return _mm256_add_pd(acc, _mm256_cvtps_pd(v));
}

TARGET static inline double lanes_total8(__m256d lo, __m256d hi) {
    __m256d u = _mm256_add_pd(lo, hi); /* s_l + s_{l+4} */
    __m128d v = _mm_add_pd(_mm256_castpd256_pd128(u), _mm256_extractf128_pd(u, 1));
    return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
}

/* LayerNorm's sums over the first n8 = n & ~7 values, in lanes: of x,
 * and of (x - mean)^2. */
TARGET static double sum_avx2(const float *x, int n8) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    for (int j = 0; j < n8; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        lo = lanes_add(lo, _mm256_castps256_ps128(v));
        hi = lanes_add(hi, _mm256_extractf128_ps(v, 1));
    }
    return lanes_total8(lo, hi);
}

TARGET static double sq_dev_avx2(const float *x, int n8, double mean) {
    __m256d lo = _mm256_setzero_pd(), hi = lo, m = _mm256_set1_pd(mean);
    for (int j = 0; j < n8; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256d a = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
        __m256d b = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)), m);
        lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a)); /* no fma: as the scalar sum */
        hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
    }
    return lanes_total8(lo, hi);
}

TARGET static int layernorm_avx2(float *y, const float *x, int d, float m, float inv,
                                 const float *w, const float *b) {
    int j = 0;
    __m256 vm = _mm256_set1_ps(m), vi = _mm256_set1_ps(inv);
    for (; j + 8 <= d; j += 8) {
        __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vi),
                                 _mm256_loadu_ps(w + j));
        _mm256_storeu_ps(y + j, _mm256_add_ps(t, _mm256_loadu_ps(b + j)));
    }
    return j;
}

/* e^(x - mx) of the first n8 values of x (0 below exp_act's range),
 * stored into x when store; returns their sum in lanes. */
TARGET static double softmax_exp_avx2(float *x, int n8, float mx, int store) {
    __m256d lo = _mm256_setzero_pd(), hi = lo;
    __m256 vmx = _mm256_set1_ps(mx), low = _mm256_set1_ps(EXP_LO);
    for (int j = 0; j < n8; j += 8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + j), vmx);
        __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(v, low, _CMP_LT_OQ), exp_act8(v));
        if (store) _mm256_storeu_ps(x + j, e);
        lo = lanes_add(lo, _mm256_castps256_ps128(e));
        hi = lanes_add(hi, _mm256_extractf128_ps(e, 1));
    }
    return lanes_total8(lo, hi);
}

TARGET static float max_avx2(const float *x, int n8) {
    __m256 m = _mm256_loadu_ps(x);
    for (int j = 8; j < n8; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}
#endif

static double sum_lanes(const float *x, int n8, int simd) {
#ifdef HV_MM_HAVE_AVX2
    if (simd) return sum_avx2(x, n8);
#endif
    (void)simd;
    double s[8] = {0};
    for (int j = 0; j < n8; j += 8)
        for (int l = 0; l < 8; l++) s[l] += x[j + l];
    return lanes_total(s);
}

static double sq_dev_lanes(const float *x, int n8, double mean, int simd) {
#ifdef HV_MM_HAVE_AVX2
    if (simd) return sq_dev_avx2(x, n8, mean);
#endif
    (void)simd;
    double s[8] = {0};
    for (int j = 0; j < n8; j += 8)
        for (int l = 0; l < 8; l++) {
            double t = x[j + l] - mean;
            s[l] += t * t;
        }
    return lanes_total(s);
}

void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps) {
    int d8 = d & ~7, simd = hv_mm_simd() != NULL;
    for (int i = 0; i < n; i++) {
        const float *xi = x + (long)i * d;
        float *yi = y + (long)i * d;
        double mean = sum_lanes(xi, d8, simd);
        for (int j = d8; j < d; j++) mean += xi[j];
        mean /= d;
        double var = sq_dev_lanes(xi, d8, mean, simd);
        for (int j = d8; j < d; j++) {
            double t = xi[j] - mean;
            var += t * t;
        }
        var /= d;
        float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
        int j = 0;
#ifdef HV_MM_HAVE_AVX2
        if (simd) j = layernorm_avx2(yi, xi, d, m, inv, w, b);
#endif
        for (; j < d; j++) yi[j] = (xi[j] - m) * inv * w[j] + b[j];
    }
}

/* Softmax's and log-softmax's common part: *max = the max of x[0..n)
 * (n >= 1) and the sum of e^(x - max) over x, in double lanes, the exps
 * stored into x when store; the same bits with and without AVX2. */
static double exp_sum(float *x, int n, int store, float *max) {
    int n8 = n & ~7, j = 0, simd = hv_mm_simd() != NULL;
    (void)simd; /* without AVX2 code, only the portable path */
    float mx = x[0];
#ifdef HV_MM_HAVE_AVX2
    if (simd && n8) mx = max_avx2(x, n8), j = n8;
#endif
    for (; j < n; j++)
        if (x[j] > mx) mx = x[j];
    double sum;
#ifdef HV_MM_HAVE_AVX2
    if (simd) {
        sum = softmax_exp_avx2(x, n8, mx, store);
    } else
#endif
    {
        double s[8] = {0};
        for (j = 0; j < n8; j += 8)
            for (int l = 0; l < 8; l++) {
                float e = exp_softmax(x[j + l] - mx);
                s[l] += e;
                if (store) x[j + l] = e;
            }
        sum = lanes_total(s);
    }
    for (j = n8; j < n; j++) {
        float e = exp_softmax(x[j] - mx);
        sum += e;
        if (store) x[j] = e;
    }
    *max = mx;
    return sum;
}

void hv_softmax(float *x, int n) {
    float mx;
    float inv = (float)(1.0 / exp_sum(x, n, 1, &mx));
    for (int j = 0; j < n; j++) x[j] *= inv;
}

/* x - (max + log sum e^(x - max)): the exps as softmax's (within 2 ulp of
 * expf) summed in double, so the log-sum is within a few float ulps of the
 * exact one; a vocabulary of 16384 took 0.17 ms with libm's double exp. */
void hv_log_softmax(float *x, int n) {
    float mx;
    double sum = exp_sum(x, n, 0, &mx);
    float lse = mx + (float)log(sum);
    for (int i = 0; i < n; i++) x[i] -= lse;
}

/* x / (1 + e^-x), -x as 0 - x as the AVX2 version computes it */
void hv_silu(float *x, long n) {
    long i = 0;
#ifdef HV_MM_HAVE_AVX2
    if (hv_mm_simd()) i = silu_avx2(x, n);
#endif
    for (; i < n; i++) x[i] = x[i] / (1.0f + exp_act(0.0f - x[i]));
}

void hv_glu(float *y, const float *a, long d) {
    long i = 0;
#ifdef HV_MM_HAVE_AVX2
    if (hv_mm_simd()) i = glu_avx2(y, a, d);
#endif
    for (; i < d; i++) y[i] = a[i] / (1.0f + exp_act(0.0f - a[d + i]));
}

float hv_exp_act(float x) { return exp_act(x); }

void hv_relu(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

void hv_add_scaled(float *y, const float *x, long n, float alpha) {
    for (long i = 0; i < n; i++) y[i] += alpha * x[i];
}

int hv_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
