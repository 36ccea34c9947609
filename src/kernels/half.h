/* Scalar conversions between f32 and the 16-bit float types that weights
 * are stored in: IEEE binary16 (f16) and bfloat16 (bf16, the top half of
 * an f32). Used by the kernels, the safetensors reader and the tests. */
#ifndef HV_HALF_H
#define HV_HALF_H

#include <stdint.h>

/* Widening is exact; narrowing rounds to nearest, ties to even (as torch
 * does), overflows to inf and keeps NaN a NaN. */
float hv_f16_to_f32(uint16_t h);
float hv_bf16_to_f32(uint16_t b);
uint16_t hv_f32_to_f16(float f);
/* The same after clamping finite and infinite values to +-65504 (f16's
 * largest): a cache stored in f16 never turns a large value infinite. */
uint16_t hv_f32_to_f16_sat(float f);
uint16_t hv_f32_to_bf16(float f);

#endif
