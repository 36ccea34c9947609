/* NEON versions of the element-wise passes (ops_impl.h): the AVX2
 * versions' operations 4 lanes at a time (sums in 8 double lanes as 4
 * registers of 2), so every level gives the portable code's bits. Advanced
 * SIMD is every aarch64 CPU's, so no target attribute; ops.c runs them
 * where Linux reports asimd. Products and sums stay apart where the
 * formula has no fma (the build's -ffp-contract=off keeps the compiler from
 * fusing them). */
#include "kernels/matmul_impl.h"
#include "kernels/ops_impl.h"

#ifdef HV_MM_HAVE_NEON

#include <arm_neon.h>

/* ops.c's exp_act on 4 lanes: the clamps as maxps/minps order them (a NaN
 * passes), floor by frintm, the fmas in the same order. */
static inline float32x4_t exp_act4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(EXP_LO), hi = vdupq_n_f32(EXP_HI);
    x = vbslq_f32(vcgtq_f32(lo, x), lo, x);
    x = vbslq_f32(vcltq_f32(hi, x), hi, x);
    float32x4_t n = vrndmq_f32(vfmaq_f32(vdupq_n_f32(0.5f), x, vdupq_n_f32(EXP_LOG2E)));
    float32x4_t r = vfmaq_f32(x, n, vdupq_n_f32(-EXP_C1));
    r = vfmaq_f32(r, n, vdupq_n_f32(-EXP_C2));
    float32x4_t p = vdupq_n_f32(hv_exp_p[0]);
    for (int i = 1; i < 6; i++) p = vfmaq_f32(vdupq_n_f32(hv_exp_p[i]), p, r);
    float32x4_t y = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    return vmulq_f32(y, vreinterpretq_f32_s32(e));
}

static long silu(float *x, long n) {
    const float32x4_t one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t e = exp_act4(vsubq_f32(zero, v));
        vst1q_f32(x + i, vdivq_f32(v, vaddq_f32(one, e)));
    }
    return i;
}

static long glu(float *y, const float *a, const float *g, long n) {
    const float32x4_t one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    long i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t e = exp_act4(vsubq_f32(zero, vld1q_f32(g + i)));
        vst1q_f32(y + i, vdivq_f32(vld1q_f32(a + i), vaddq_f32(one, e)));
    }
    return i;
}

/* 8 double lanes as s[0] = lanes 0-1, s[1] = 2-3, s[2] = 4-5, s[3] = 6-7;
 * combined ((s0+s4) + (s2+s6)) + ((s1+s5) + (s3+s7)). */
static inline void lanes_add(float64x2_t s[4], float32x4_t lo, float32x4_t hi) {
    s[0] = vaddq_f64(s[0], vcvt_f64_f32(vget_low_f32(lo)));
    s[1] = vaddq_f64(s[1], vcvt_high_f64_f32(lo));
    s[2] = vaddq_f64(s[2], vcvt_f64_f32(vget_low_f32(hi)));
    s[3] = vaddq_f64(s[3], vcvt_high_f64_f32(hi));
}

static inline double lanes_total(const float64x2_t s[4]) {
    float64x2_t v = vaddq_f64(vaddq_f64(s[0], s[2]), vaddq_f64(s[1], s[3]));
    return vgetq_lane_f64(v, 0) + vgetq_lane_f64(v, 1);
}

static double sum(const float *x, int n8) {
    float64x2_t s[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    for (int j = 0; j < n8; j += 8) lanes_add(s, vld1q_f32(x + j), vld1q_f32(x + j + 4));
    return lanes_total(s);
}

/* (x - mean)^2 in double, a product then a sum (no fma) */
static inline float64x2_t sq_dev2(float64x2_t s, float32x2_t v, float64x2_t m) {
    float64x2_t d = vsubq_f64(vcvt_f64_f32(v), m);
    return vaddq_f64(s, vmulq_f64(d, d));
}

static double sq_dev(const float *x, int n8, double mean) {
    float64x2_t s[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    float64x2_t m = vdupq_n_f64(mean);
    for (int j = 0; j < n8; j += 8) {
        float32x4_t lo = vld1q_f32(x + j), hi = vld1q_f32(x + j + 4);
        s[0] = sq_dev2(s[0], vget_low_f32(lo), m);
        s[1] = sq_dev2(s[1], vget_high_f32(lo), m);
        s[2] = sq_dev2(s[2], vget_low_f32(hi), m);
        s[3] = sq_dev2(s[3], vget_high_f32(hi), m);
    }
    return lanes_total(s);
}

static int layernorm(float *y, const float *x, int d, float m, float inv, const float *w,
                     const float *b) {
    const float32x4_t vm = vdupq_n_f32(m), vi = vdupq_n_f32(inv);
    int j = 0;
    for (; j + 4 <= d; j += 4) {
        float32x4_t t = vmulq_f32(vmulq_f32(vsubq_f32(vld1q_f32(x + j), vm), vi), vld1q_f32(w + j));
        vst1q_f32(y + j, vaddq_f32(t, vld1q_f32(b + j)));
    }
    return j;
}

/* maxps' rule: a > b ? a : b */
static inline float32x4_t max_rule(float32x4_t a, float32x4_t b) {
    return vbslq_f32(vcgtq_f32(a, b), a, b);
}

/* The AVX2 order (ops_impl.h): lanes 0-3 and 4-7 of 8 running maxima,
 * then lane l against l + 4, l + 2, then lane 0 against lane 1. */
static float max8(const float *x, int n8) {
    float32x4_t lo = vld1q_f32(x), hi = vld1q_f32(x + 4);
    for (int j = 8; j < n8; j += 8) {
        lo = max_rule(lo, vld1q_f32(x + j));
        hi = max_rule(hi, vld1q_f32(x + j + 4));
    }
    float32x4_t h = max_rule(lo, hi);
    float32x2_t a = vget_low_f32(h), b = vget_high_f32(h);
    float32x2_t g = vbsl_f32(vcgt_f32(a, b), a, b);
    float g0 = vget_lane_f32(g, 0), g1 = vget_lane_f32(g, 1);
    return g0 > g1 ? g0 : g1;
}

/* e^(x - mx), 0 below EXP_LO (an ordered compare: a NaN keeps its e^x) */
static inline float32x4_t softmax_exp4(float32x4_t v) {
    uint32x4_t below = vcltq_f32(v, vdupq_n_f32(EXP_LO));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(exp_act4(v)), below));
}

static double softmax_exp(float *x, int n8, float mx, int store) {
    float64x2_t s[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    const float32x4_t vmx = vdupq_n_f32(mx);
    for (int j = 0; j < n8; j += 8) {
        float32x4_t e0 = softmax_exp4(vsubq_f32(vld1q_f32(x + j), vmx));
        float32x4_t e1 = softmax_exp4(vsubq_f32(vld1q_f32(x + j + 4), vmx));
        if (store) {
            vst1q_f32(x + j, e0);
            vst1q_f32(x + j + 4, e1);
        }
        lanes_add(s, e0, e1);
    }
    return lanes_total(s);
}

static long add_scaled(float *y, const float *x, long n, float alpha) {
    const float32x4_t a = vdupq_n_f32(alpha);
    long i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_f32(a, vld1q_f32(x + i))));
    return i;
}

/* hv_bf16_round's bits on 4 lanes: NaN made quiet, else + 0x7fff + the
 * lowest kept bit; the low half cleared. */
static inline uint32x4_t bf16_round4(float32x4_t v) {
    uint32x4_t u = vreinterpretq_u32_f32(v);
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    uint32x4_t odd = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fff), odd));
    r = vbslq_u32(nan, vorrq_u32(u, vdupq_n_u32(0x00400000u)), r);
    return vandq_u32(r, vdupq_n_u32(0xffff0000u));
}

static long bf16_round(float *y, const float *x, long n) {
    long i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vreinterpretq_f32_u32(bf16_round4(vld1q_f32(x + i))));
    return i;
}

static long bf16_bits(uint16_t *y, const float *x, long n) {
    long i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x4_t a = vshrn_n_u32(bf16_round4(vld1q_f32(x + i)), 16);
        uint16x4_t b = vshrn_n_u32(bf16_round4(vld1q_f32(x + i + 4)), 16);
        vst1q_u16(y + i, vcombine_u16(a, b));
    }
    return i;
}

const hv_ops_kernels hv_ops_neon = {.name = "neon",
                                    .silu = silu,
                                    .glu = glu,
                                    .sum = sum,
                                    .sq_dev = sq_dev,
                                    .layernorm = layernorm,
                                    .max = max8,
                                    .softmax_exp = softmax_exp,
                                    .add_scaled = add_scaled,
                                    .bf16_round = bf16_round,
                                    .bf16_bits = bf16_bits};

#endif
