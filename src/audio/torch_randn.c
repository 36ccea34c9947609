/* PyTorch's CPU normal stream (torch_randn.h has the algorithm). */
#include "audio/torch_randn.h"

#include <math.h>

#define MT_N 624
#define MT_M 397

/* 2 pi as the double PyTorch starts from. */
#define TWO_PI_D 6.283185307179586

/* Box-Muller block length of the float path. */
#define BLOCK 16

/* MT19937, 32-bit output. */
typedef struct mt19937 {
    uint32_t s[MT_N];
    int next; /* index of the next state word to temper; MT_N: twist first */
} mt19937;

static void mt_seed(mt19937 *g, uint64_t seed) {
    g->s[0] = (uint32_t)seed;
    for (uint32_t i = 1; i < MT_N; i++)
        g->s[i] = 1812433253u * (g->s[i - 1] ^ (g->s[i - 1] >> 30)) + i;
    g->next = MT_N;
}

static void mt_twist(mt19937 *g) {
    for (int k = 0; k < MT_N; k++) {
        uint32_t y = (g->s[k] & 0x80000000u) | (g->s[(k + 1) % MT_N] & 0x7fffffffu);
        g->s[k] = g->s[(k + MT_M) % MT_N] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0u);
    }
    g->next = 0;
}

static uint32_t mt_u32(mt19937 *g) {
    if (g->next >= MT_N) mt_twist(g);
    uint32_t y = g->s[g->next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* A uniform float in [0, 1): 24 bits of one word. */
static float uniform_f32(mt19937 *g) { return (float)(mt_u32(g) & 0xffffffu) * 0x1p-24f; }

/* A uniform double in [0, 1): 53 bits of two words, the first the high. */
static double uniform_f64(mt19937 *g) {
    uint64_t hi = mt_u32(g), lo = mt_u32(g);
    return (double)(((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

/* Box-Muller over one block of 16 uniforms, in place. */
static void normal_block(float *v) {
    const float two_pi = (float)TWO_PI_D;
    for (int j = 0; j < BLOCK / 2; j++) {
        float u1 = 1.0f - v[j], u2 = v[j + BLOCK / 2];
        float r = sqrtf(-2.0f * logf(u1));
        float theta = two_pi * u2;
        v[j] = r * cosf(theta);
        v[j + BLOCK / 2] = r * sinf(theta);
    }
}

void hv_torch_randn(uint64_t seed, float *out, size_t n) {
    mt19937 g;
    mt_seed(&g, seed);
    if (n < BLOCK) { /* the scalar double path, pairs with a cached second value */
        double cached = 0.0;
        for (size_t i = 0; i < n; i++) {
            if (i % 2) {
                out[i] = (float)cached;
                continue;
            }
            double u1 = uniform_f64(&g), u2 = uniform_f64(&g);
            double r = sqrt(-2.0 * log(1.0 - u2)), theta = TWO_PI_D * u1;
            cached = r * sin(theta);
            out[i] = (float)(r * cos(theta));
        }
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = uniform_f32(&g);
    for (size_t i = 0; i + BLOCK <= n; i += BLOCK) normal_block(out + i);
    if (n % BLOCK) { /* the tail: the last 16 again, from fresh uniforms */
        float *tail = out + n - BLOCK;
        for (int i = 0; i < BLOCK; i++) tail[i] = uniform_f32(&g);
        normal_block(tail);
    }
}
