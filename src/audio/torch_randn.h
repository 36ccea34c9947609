/* PyTorch's CPU normal stream: the values of
 *
 *     g = torch.Generator().manual_seed(seed)
 *     torch.randn(n, generator=g)          # float32
 *
 * which Hugging Face's feature extractor adds to each chunk as dither
 * (docs/MODEL.md, Frontend step 1). The algorithm, as PyTorch's CPU
 * kernels compute it:
 *
 * - The generator is MT19937 seeded with the low 32 bits of seed (the
 *   standard initialisation, state[0] = seed, state[i] = 1812433253 *
 *   (state[i-1] ^ state[i-1] >> 30) + i), one 32-bit word per draw.
 * - n >= 16: every value first gets a uniform float in [0, 1), the low 24
 *   bits of one word times 2^-24. Then each block of 16 is transformed in
 *   place by Box-Muller, value j (j < 8) with value j + 8: u1 = 1 - v[j],
 *   u2 = v[j + 8], r = sqrt(-2 log u1), theta = 2 pi u2 (2 pi as a float,
 *   the product rounded to float), v[j] = r cos theta, v[j + 8] = r sin
 *   theta, all in float. When n is not a multiple of 16, the last 16
 *   values are drawn again (16 new uniforms, after all the others) and
 *   transformed as one block, overwriting the end of the last whole block.
 * - n < 16: each value is one double normal drawn as
 *   at::normal_distribution<double> does and rounded to float: u1, u2 the
 *   low 53 bits of a 64-bit draw (two words, the first the high half)
 *   times 2^-53, r = sqrt(-2 log(1 - u2)), theta = 2 pi u1, the value r
 *   cos theta, and r sin theta kept for the next value.
 *
 * PyTorch's AVX2 build evaluates log, cos and sin of the blocks with
 * SLEEF's vector functions (1-ulp bounds) and its scalar build with libm
 * and theta in double; this file uses libm on the AVX2 build's float
 * theta: the values agree with either to within a few float ulps of r
 * (tests/unit/test_torch_randn.c compares with python3-torch). */
#ifndef HV_TORCH_RANDN_H
#define HV_TORCH_RANDN_H

#include <stddef.h>
#include <stdint.h>

/* out[0 .. n) = torch.randn(n) of a CPU generator seeded with seed. */
void hv_torch_randn(uint64_t seed, float *out, size_t n);

#endif
