/* Scalar conversions between f32 and the 16-bit float types that weights
 * are stored in: IEEE binary16 (f16) and bfloat16 (bf16, the top half of
 * an f32). Used by the kernels, the safetensors reader and the tests. */
#ifndef HV_HALF_H
#define HV_HALF_H

#include <stdint.h>
#include <string.h>

/* Widening is exact; narrowing rounds to nearest, ties to even (as torch
 * does), overflows to inf and keeps NaN a NaN. */
float hv_f16_to_f32(uint16_t h);
float hv_bf16_to_f32(uint16_t b);
uint16_t hv_f32_to_f16(float f);
/* The same after clamping finite and infinite values to +-65504 (f16's
 * largest): a cache stored in f16 never turns a large value infinite. */
uint16_t hv_f32_to_f16_sat(float f);
uint16_t hv_f32_to_bf16(float f);

/* f rounded to bf16 and widened back: hv_f32_to_bf16's bits in the top
 * half; inline, so that loops over rows vectorise. */
static inline float hv_bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000)
        u |= 0x00400000; /* NaN: kept quiet */
    else
        u += 0x7fff + ((u >> 16) & 1);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* hv_f32_to_bf16(f), inline. */
static inline uint16_t hv_bf16_bits(float f) {
    float r = hv_bf16_round(f);
    uint32_t u;
    memcpy(&u, &r, 4);
    return (uint16_t)(u >> 16);
}

#endif
