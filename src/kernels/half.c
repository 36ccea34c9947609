/* f16 and bf16 to and from f32 on the bit patterns, so that no compiler
 * support for _Float16 or __bf16 is needed. */
#include "kernels/half.h"

#include <math.h>
#include <string.h>

float hv_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13); /* inf, NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal: man * 2^-24, exact in f32 */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float hv_bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t hv_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffff) > 0x7f800000) /* NaN: keep it quiet */
        return (uint16_t)((bits >> 16) | 0x40);
    bits += 0x7fff + ((bits >> 16) & 1); /* round to nearest even */
    return (uint16_t)(bits >> 16);
}

uint16_t hv_f32_to_f16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    uint32_t abs = bits & 0x7fffffff;
    if (abs > 0x7f800000) return sign | 0x7e00;  /* NaN */
    if (abs >= 0x477ff000) return sign | 0x7c00; /* rounds to >= 65536: inf */
    if (abs < 0x38800000) {
        /* subnormal or zero: round abs / 2^-24 to an integer, ties even */
        float a;
        memcpy(&a, &abs, 4);
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    }
    /* normal: rebias exponent, round the 13 dropped bits to nearest even */
    uint32_t h = ((abs >> 13) - (112u << 10));
    uint32_t rest = abs & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

uint16_t hv_f32_to_f16_sat(float f) {
    if (f > 65504.0f) f = 65504.0f;
    if (f < -65504.0f) f = -65504.0f;
    return hv_f32_to_f16(f);
}
