#include "kernels/ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/matmul_impl.h" /* hv_mm_simd: the CPU check */

#ifdef HV_MM_HAVE_AVX2
#include <immintrin.h>
#endif

void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps) {
    for (int i = 0; i < n; i++) {
        const float *xi = x + (long)i * d;
        float *yi = y + (long)i * d;
        double mean = 0, var = 0;
        for (int j = 0; j < d; j++) mean += xi[j];
        mean /= d;
        for (int j = 0; j < d; j++) {
            double t = xi[j] - mean;
            var += t * t;
        }
        var /= d;
        float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
        for (int j = 0; j < d; j++) yi[j] = (xi[j] - m) * inv * w[j] + b[j];
    }
}

void hv_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

void hv_log_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    float lse = mx + (float)log(sum);
    for (int i = 0; i < n; i++) x[i] -= lse;
}

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
