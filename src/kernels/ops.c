/* Element-wise and row-wise passes (ops.h): the portable code, which
 * defines every pass's operations and order, and the tables of the
 * instruction sets that do the same faster (ops_impl.h): AVX2 and AVX-512
 * here, NEON in arm/ops_neon.c. */
#include "kernels/ops.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/cpu.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops_impl.h"

#ifdef HV_MM_HAVE_AVX2
#include <immintrin.h>
#endif

/* e^x for the activations (ops_impl.h has the method). Within 2 ulp of
 * expf (tested); NaN stays NaN. The vector versions do the same
 * operations in the same order with explicit fmas, so they agree bit for
 * bit, and all are several times faster than libm's expf. */
static float exp_act(float x) {
    if (x != x) return x;
    x = EXP_LO > x ? EXP_LO : x; /* the operand order of maxps/minps */
    x = EXP_HI < x ? EXP_HI : x;
    float n = floorf(fmaf(x, EXP_LOG2E, 0.5f));
    float r = fmaf(n, -EXP_C1, x);
    r = fmaf(n, -EXP_C2, r);
    float p = hv_exp_p[0];
    for (int i = 1; i < 6; i++) p = fmaf(p, r, hv_exp_p[i]);
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
    __m256 p = _mm256_set1_ps(hv_exp_p[0]);
    for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(hv_exp_p[i]));
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

/* y = a * sigmoid(g) over the first n & ~7 values */
TARGET static long glu_avx2(float *y, const float *a, const float *g, long n) {
    long i = 0;
    __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp_act8(_mm256_sub_ps(zero, _mm256_loadu_ps(g + i)));
        _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(a + i), _mm256_add_ps(one, e)));
    }
    return i;
}

/* The AVX-512 versions: the AVX2 versions' operations, 16 lanes at a time
 * (and the AVX2 step for a last 8), so every level gives the same bits. */
#define TARGET512 __attribute__((target("avx512f,avx2,fma")))

TARGET512 static inline __m512 exp_act16(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(EXP_LO), x); /* NaN in x passes */
    x = _mm512_min_ps(_mm512_set1_ps(EXP_HI), x);
    __m512 n =
        _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(EXP_LOG2E), _mm512_set1_ps(0.5f)),
                             _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-EXP_C1), x);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-EXP_C2), r);
    __m512 p = _mm512_set1_ps(hv_exp_p[0]);
    for (int i = 1; i < 6; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(hv_exp_p[i]));
    __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

TARGET512 static long silu_avx512(float *x, long n) {
    long i = 0;
    __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 e = exp_act16(_mm512_sub_ps(zero, v));
        _mm512_storeu_ps(x + i, _mm512_div_ps(v, _mm512_add_ps(one, e)));
    }
    return i + silu_avx2(x + i, n - i);
}

TARGET512 static long glu_avx512(float *y, const float *a, const float *g, long n) {
    long i = 0;
    __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        __m512 e = exp_act16(_mm512_sub_ps(zero, _mm512_loadu_ps(g + i)));
        _mm512_storeu_ps(y + i, _mm512_div_ps(_mm512_loadu_ps(a + i), _mm512_add_ps(one, e)));
    }
    return i + glu_avx2(y + i, a + i, g + i, n - i);
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

/* y += alpha * x (a product, then a sum: no fma), over the first n & ~7 */
TARGET static long add_scaled_avx2(float *y, const float *x, long n, float alpha) {
    long i = 0;
    __m256 a = _mm256_set1_ps(alpha);
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(
            y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(a, _mm256_loadu_ps(x + i))));
    return i;
}

/* hv_bf16_round's bits on 8 lanes: NaN made quiet, else + 0x7fff + the
 * lowest kept bit; the low half cleared. */
TARGET static inline __m256i bf16_round8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
    return _mm256_and_si256(r, _mm256_set1_epi32((int)0xffff0000u));
}

TARGET static long bf16_round_avx2(float *y, const float *x, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_castsi256_ps(bf16_round8(_mm256_loadu_ps(x + i))));
    return i;
}

TARGET static long bf16_bits_avx2(uint16_t *y, const float *x, long n) {
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_srli_epi32(bf16_round8(_mm256_loadu_ps(x + i)), 16);
        __m256i b = _mm256_srli_epi32(bf16_round8(_mm256_loadu_ps(x + i + 8)), 16);
        /* packs within 128-bit halves: a0-3 b0-3 a4-7 b4-7, then in order */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
        _mm256_storeu_si256((__m256i *)(y + i), p);
    }
    return i;
}

/* The AVX-512 row kernels: 16 values a step into 8 double lanes (the low
 * 8, then the high 8: lane l still sums the values i = l mod 8 in order),
 * an AVX2 step for a last 8, and the same combination of the lanes. */
TARGET512 static inline __m256 high8(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

TARGET512 static inline double lanes_total16(__m512d s) {
    return lanes_total8(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
}

TARGET512 static inline __m512d lanes_add16(__m512d s, __m512 v) {
    s = _mm512_add_pd(s, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    return _mm512_add_pd(s, _mm512_cvtps_pd(high8(v)));
}

TARGET512 static inline __m512d lanes_add8(__m512d s, __m256 v) {
    return _mm512_add_pd(s, _mm512_cvtps_pd(v));
}

TARGET512 static double sum_avx512(const float *x, int n8) {
    __m512d s = _mm512_setzero_pd();
    int j = 0;
    for (; j + 16 <= n8; j += 16) s = lanes_add16(s, _mm512_loadu_ps(x + j));
    if (j < n8) s = lanes_add8(s, _mm256_loadu_ps(x + j));
    return lanes_total16(s);
}

TARGET512 static inline __m512d sq_dev8(__m512d s, __m256 v, __m512d m) {
    __m512d a = _mm512_sub_pd(_mm512_cvtps_pd(v), m);
    return _mm512_add_pd(s, _mm512_mul_pd(a, a)); /* no fma: as the scalar sum */
}

TARGET512 static double sq_dev_avx512(const float *x, int n8, double mean) {
    __m512d s = _mm512_setzero_pd(), m = _mm512_set1_pd(mean);
    int j = 0;
    for (; j + 16 <= n8; j += 16) {
        __m512 v = _mm512_loadu_ps(x + j);
        s = sq_dev8(sq_dev8(s, _mm512_castps512_ps256(v), m), high8(v), m);
    }
    if (j < n8) s = sq_dev8(s, _mm256_loadu_ps(x + j), m);
    return lanes_total16(s);
}

TARGET512 static int layernorm_avx512(float *y, const float *x, int d, float m, float inv,
                                      const float *w, const float *b) {
    int j = 0;
    __m512 vm = _mm512_set1_ps(m), vi = _mm512_set1_ps(inv);
    for (; j + 16 <= d; j += 16) {
        __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm), vi),
                                 _mm512_loadu_ps(w + j));
        _mm512_storeu_ps(y + j, _mm512_add_ps(t, _mm512_loadu_ps(b + j)));
    }
    return j + layernorm_avx2(y + j, x + j, d - j, m, inv, w + j, b + j);
}

TARGET512 static double softmax_exp_avx512(float *x, int n8, float mx, int store) {
    __m512d s = _mm512_setzero_pd();
    __m512 vmx = _mm512_set1_ps(mx), low = _mm512_set1_ps(EXP_LO);
    int j = 0;
    for (; j + 16 <= n8; j += 16) {
        __m512 v = _mm512_sub_ps(_mm512_loadu_ps(x + j), vmx);
        __mmask16 below = _mm512_cmp_ps_mask(v, low, _CMP_LT_OQ);
        __m512 e = _mm512_maskz_mov_ps((__mmask16)~below, exp_act16(v));
        if (store) _mm512_storeu_ps(x + j, e);
        s = lanes_add16(s, e);
    }
    if (j < n8) {
        __m256 v = _mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_set1_ps(mx));
        __m256 e =
            _mm256_andnot_ps(_mm256_cmp_ps(v, _mm256_set1_ps(EXP_LO), _CMP_LT_OQ), exp_act8(v));
        if (store) _mm256_storeu_ps(x + j, e);
        s = lanes_add8(s, e);
    }
    return lanes_total16(s);
}

TARGET512 static long add_scaled_avx512(float *y, const float *x, long n, float alpha) {
    long i = 0;
    __m512 a = _mm512_set1_ps(alpha);
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(
            y + i, _mm512_add_ps(_mm512_loadu_ps(y + i), _mm512_mul_ps(a, _mm512_loadu_ps(x + i))));
    return i + add_scaled_avx2(y + i, x + i, n - i, alpha);
}

TARGET512 static inline __m512i bf16_round16(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
    return _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
}

TARGET512 static long bf16_round_avx512(float *y, const float *x, long n) {
    long i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_castsi512_ps(bf16_round16(_mm512_loadu_ps(x + i))));
    return i + bf16_round_avx2(y + i, x + i, n - i);
}

TARGET512 static long bf16_bits_avx512(uint16_t *y, const float *x, long n) {
    long i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i r = _mm512_srli_epi32(bf16_round16(_mm512_loadu_ps(x + i)), 16);
        _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtepi32_epi16(r));
    }
    return i;
}
/* The max keeps the AVX2 version's order at every level (max is exact,
 * but which of +0 and -0 it keeps depends on the order). */
static const hv_ops_kernels ops_avx2 = {.name = "avx2",
                                        .silu = silu_avx2,
                                        .glu = glu_avx2,
                                        .sum = sum_avx2,
                                        .sq_dev = sq_dev_avx2,
                                        .layernorm = layernorm_avx2,
                                        .max = max_avx2,
                                        .softmax_exp = softmax_exp_avx2,
                                        .add_scaled = add_scaled_avx2,
                                        .bf16_round = bf16_round_avx2,
                                        .bf16_bits = bf16_bits_avx2};
static const hv_ops_kernels ops_avx512 = {.name = "avx512",
                                          .silu = silu_avx512,
                                          .glu = glu_avx512,
                                          .sum = sum_avx512,
                                          .sq_dev = sq_dev_avx512,
                                          .layernorm = layernorm_avx512,
                                          .max = max_avx2,
                                          .softmax_exp = softmax_exp_avx512,
                                          .add_scaled = add_scaled_avx512,
                                          .bf16_round = bf16_round_avx512,
                                          .bf16_bits = bf16_bits_avx512};
#endif

/* ------------------------------------------------------------ levels */

static const hv_ops_kernels ops_portable = {.name = "portable"};

/* The element-wise tables, portable first, with every feature each needs
 * (cpu.h): AVX2 (on the matrix kernels' AVX2, FMA and F16C), then
 * AVX-512F; or NEON. The one list that the choice here and
 * hv_ops_table_for read. */
static const struct {
    unsigned needs;
    const char *name;
} ops_rows[] = {
    {0, "portable"},
    {HV_CPU_AVX2, "avx2"},
    {HV_CPU_AVX2 | HV_CPU_AVX512, "avx512"},
    {HV_CPU_NEON, "neon"},
};
#define N_OPS_ROWS (int)(sizeof ops_rows / sizeof ops_rows[0])

static const hv_ops_kernels *ops_of_row(int i) {
    switch (i) {
        case 0: return &ops_portable;
#ifdef HV_MM_HAVE_AVX2
        case 1: return &ops_avx2;
        case 2: return &ops_avx512;
#endif
#ifdef HV_MM_HAVE_NEON
        case 3: return &hv_ops_neon;
#endif
        default: return NULL;
    }
}

const char *hv_ops_table_for(unsigned features) {
    const char *best = ops_rows[0].name;
    for (int i = 1; i < N_OPS_ROWS; i++)
        if ((ops_rows[i].needs & features) == ops_rows[i].needs) best = ops_rows[i].name;
    return best;
}

/* The tables this CPU runs (cpu.h; HVISKE_MAX_ISA caps them), portable
 * first, into out[3]; returns how many. */
static int ops_tables(const hv_ops_kernels *out[3]) {
    unsigned f = hv_cpu_features();
    int n = 0;
    for (int i = 0; i < N_OPS_ROWS && n < 3; i++) {
        const hv_ops_kernels *t = ops_of_row(i);
        if (t && (ops_rows[i].needs & f) == ops_rows[i].needs) out[n++] = t;
    }
    return n;
}

int hv_ops_level(void) {
    const hv_ops_kernels *t[3];
    return ops_tables(t) - 1;
}

/* The table of a level, never above what this CPU runs. */
static const hv_ops_kernels *table_at(int level) {
    const hv_ops_kernels *t[3];
    int n = ops_tables(t);
    return t[level < 0 ? 0 : level < n ? level : n - 1];
}

const char *hv_ops_level_name(int level) { return table_at(level)->name; }

static double sum_lanes(const float *x, int n8, const hv_ops_kernels *t) {
    if (t->sum) return t->sum(x, n8);
    double s[8] = {0};
    for (int j = 0; j < n8; j += 8)
        for (int l = 0; l < 8; l++) s[l] += x[j + l];
    return lanes_total(s);
}

static double sq_dev_lanes(const float *x, int n8, double mean, const hv_ops_kernels *t) {
    if (t->sq_dev) return t->sq_dev(x, n8, mean);
    double s[8] = {0};
    for (int j = 0; j < n8; j += 8)
        for (int l = 0; l < 8; l++) {
            double v = x[j + l] - mean;
            s[l] += v * v;
        }
    return lanes_total(s);
}

/* A row's mean m and 1 / sqrt(variance + eps), the sums in double lanes. */
static void ln_stats(const float *xi, int d, float eps, const hv_ops_kernels *t, float *m,
                     float *inv) {
    int d8 = d & ~7;
    double mean = sum_lanes(xi, d8, t);
    for (int j = d8; j < d; j++) mean += xi[j];
    mean /= d;
    double var = sq_dev_lanes(xi, d8, mean, t);
    for (int j = d8; j < d; j++) {
        double v = xi[j] - mean;
        var += v * v;
    }
    var /= d;
    *inv = (float)(1.0 / sqrt(var + eps));
    *m = (float)mean;
}

/* y[0, d) = (x - m) * inv * w + b */
static void ln_apply(float *y, const float *x, int d, float m, float inv, const float *w,
                     const float *b, const hv_ops_kernels *t) {
    int j = t->layernorm ? t->layernorm(y, x, d, m, inv, w, b) : 0;
    for (; j < d; j++) y[j] = (x[j] - m) * inv * w[j] + b[j];
}

void hv_layernorm_at(int level, float *y, const float *x, int n, int d, const float *w,
                     const float *b, float eps) {
    const hv_ops_kernels *t = table_at(level);
    for (int i = 0; i < n; i++) {
        float m, inv;
        ln_stats(x + (long)i * d, d, eps, t, &m, &inv);
        ln_apply(y + (long)i * d, x + (long)i * d, d, m, inv, w, b, t);
    }
}

void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps) {
    hv_layernorm_at(HV_OPS_BEST, y, x, n, d, w, b, eps);
}

void hv_layernorm_bf16_at(int level, uint16_t *y, const float *x, int n, int d, const float *w,
                          const float *b, float eps) {
    enum { PIECE = 256 };
    const hv_ops_kernels *t = table_at(level);
    float row[PIECE];
    for (int i = 0; i < n; i++) {
        const float *xi = x + (long)i * d;
        float m, inv;
        ln_stats(xi, d, eps, t, &m, &inv);
        for (int j0 = 0; j0 < d; j0 += PIECE) {
            int len = d - j0 < PIECE ? d - j0 : PIECE;
            ln_apply(row, xi + j0, len, m, inv, w + j0, b + j0, t);
            hv_bf16_bits_n_at(level, y + (long)i * d + j0, row, len);
        }
    }
}

void hv_layernorm_bf16(uint16_t *y, const float *x, int n, int d, const float *w, const float *b,
                       float eps) {
    hv_layernorm_bf16_at(HV_OPS_BEST, y, x, n, d, w, b, eps);
}

/* Softmax's and log-softmax's common part: *max = the max of x[0..n)
 * (n >= 1) and the sum of e^(x - max) over x, in double lanes, the exps
 * stored into x when store; the same bits at every level. */
static double exp_sum(const hv_ops_kernels *t, float *x, int n, int store, float *max) {
    int n8 = n & ~7, j = 0;
    float mx = x[0];
    if (t->max && n8) mx = t->max(x, n8), j = n8;
    for (; j < n; j++)
        if (x[j] > mx) mx = x[j];
    double sum;
    if (t->softmax_exp) {
        sum = t->softmax_exp(x, n8, mx, store);
    } else {
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

void hv_softmax_at(int level, float *x, int n) {
    float mx;
    float inv = (float)(1.0 / exp_sum(table_at(level), x, n, 1, &mx));
    for (int j = 0; j < n; j++) x[j] *= inv;
}

void hv_softmax(float *x, int n) { hv_softmax_at(HV_OPS_BEST, x, n); }

/* x - (max + log sum e^(x - max)): the exps as softmax's (within 2 ulp of
 * expf) summed in double, so the log-sum is within a few float ulps of the
 * exact one; a vocabulary of 16384 took 0.17 ms with libm's double exp. */
void hv_log_softmax_at(int level, float *x, int n) {
    float mx;
    double sum = exp_sum(table_at(level), x, n, 0, &mx);
    float lse = mx + (float)log(sum);
    for (int i = 0; i < n; i++) x[i] -= lse;
}

void hv_log_softmax(float *x, int n) { hv_log_softmax_at(HV_OPS_BEST, x, n); }

/* x / (1 + e^-x), -x as 0 - x as the vector versions compute it */
void hv_silu_at(int level, float *x, long n) {
    const hv_ops_kernels *t = table_at(level);
    long i = t->silu ? t->silu(x, n) : 0;
    for (; i < n; i++) x[i] = x[i] / (1.0f + exp_act(0.0f - x[i]));
}

void hv_silu(float *x, long n) { hv_silu_at(HV_OPS_BEST, x, n); }

void hv_glu_at(int level, float *y, const float *a, long d) {
    const hv_ops_kernels *t = table_at(level);
    long i = t->glu ? t->glu(y, a, a + d, d) : 0;
    for (; i < d; i++) y[i] = a[i] / (1.0f + exp_act(0.0f - a[d + i]));
}

void hv_glu(float *y, const float *a, long d) { hv_glu_at(HV_OPS_BEST, y, a, d); }

float hv_exp_act(float x) { return exp_act(x); }

void hv_relu(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

void hv_add_scaled_at(int level, float *y, const float *x, long n, float alpha) {
    const hv_ops_kernels *t = table_at(level);
    long i = t->add_scaled ? t->add_scaled(y, x, n, alpha) : 0;
    for (; i < n; i++) y[i] += alpha * x[i];
}

void hv_add_scaled(float *y, const float *x, long n, float alpha) {
    hv_add_scaled_at(HV_OPS_BEST, y, x, n, alpha);
}

void hv_bf16_round_n_at(int level, float *y, const float *x, long n) {
    const hv_ops_kernels *t = table_at(level);
    long i = t->bf16_round ? t->bf16_round(y, x, n) : 0;
    for (; i < n; i++) y[i] = hv_bf16_round(x[i]);
}

void hv_bf16_round_n(float *y, const float *x, long n) { hv_bf16_round_n_at(HV_OPS_BEST, y, x, n); }

void hv_bf16_bits_n_at(int level, uint16_t *y, const float *x, long n) {
    const hv_ops_kernels *t = table_at(level);
    long i = t->bf16_bits ? t->bf16_bits(y, x, n) : 0;
    for (; i < n; i++) y[i] = hv_bf16_bits(x[i]);
}

void hv_bf16_bits_n(uint16_t *y, const float *x, long n) {
    hv_bf16_bits_n_at(HV_OPS_BEST, y, x, n);
}

int hv_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
