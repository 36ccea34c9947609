/* The packed GEMM's pieces on their own: the int8 micro-kernel and panel
 * transpose at the extremes, the attention products (f32 and f16 caches),
 * the GEMM's chunking across threads, and a table of its own geometry;
 * SIMD bit for bit portable. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"
#include "mm_testutil.h"
#include "testlib.h"

/* The SIMD table under test (main runs each function once per table this
 * CPU has), or NULL where there is none. */
static const hv_mm_kernels *simd;

/* The int8 GEMM's micro-kernel and panel transpose on their own: the
 * extremes (u = 1 and 127 against w = -127 and 127, where the unsigned-by-
 * signed pair sums come closest to saturating), 1 to 8 blocks, from zero
 * and accumulating, with and without a bias; SIMD bit for bit scalar, both
 * equal to the exact integer dot scaled in f64 within one rounding per
 * block. */
static void test_gemm_q8_tile(void) {
    enum { MR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR, MAXB = 8 };
    static uint8_t a[MAXB * 8 * MR * 4];
    static int8_t b[MAXB * 8 * NR * 4];
    float ad[MAXB * MR], bd[MAXB * NR], c0[MR * NR], c1[MR * NR], start[MR * NR];
    float bias[NR], want[MR * NR];
    int32_t bc[MAXB * NR];
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < sizeof a; i++)
            a[i] = (uint8_t)(round == 0 ? 127 : round == 1 ? 1 : irand(1, 127));
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (int8_t)(round < 2 ? (i % 3 ? 127 : -127) : irand(-127, 127));
        for (int i = 0; i < MAXB * MR; i++) ad[i] = frand() * 0.01f;
        for (int i = 0; i < MAXB * NR; i++) bd[i] = frand() * 0.01f;
        for (int blk = 0; blk < MAXB; blk++)
            for (int j = 0; j < NR; j++) {
                int32_t sum = 0;
                for (int q = blk * 8; q < blk * 8 + 8; q++)
                    for (int t = 0; t < 4; t++) sum += b[(q * NR + j) * 4 + t];
                bc[blk * NR + j] = 64 * sum;
            }
        for (int i = 0; i < MR * NR; i++) start[i] = frand();
        for (int j = 0; j < NR; j++) bias[j] = frand();
        for (int nbk = 1; nbk <= MAXB; nbk++)
            for (int acc = 0; acc < 2; acc++) {
                memcpy(c0, start, sizeof c0);
                hv_mm_scalar.gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c0, NR, acc, NULL);
                int ok = 1;
                for (int i = 0; i < MR; i++)
                    for (int j = 0; j < NR; j++) {
                        double ref = acc ? start[i * NR + j] : 0, mag = fabs(ref);
                        for (int blk = 0; blk < nbk; blk++) {
                            long p = 0;
                            for (int q = blk * 8; q < blk * 8 + 8; q++)
                                for (int t = 0; t < 4; t++)
                                    p += (long)(a[(q * MR + i) * 4 + t] - 64) *
                                         b[(q * NR + j) * 4 + t];
                            double term = (double)ad[blk * MR + i] * bd[blk * NR + j] * p;
                            ref += term;
                            mag += fabs(term);
                        }
                        ok &= fabs(c0[i * NR + j] - ref) <= 2.0 * (nbk + 1) * mag * 0x1p-24;
                    }
                CHECK_MSG(ok, "int8 tile round %d, %d blocks, accumulate %d: exact dot", round, nbk,
                          acc);
                if (simd) {
                    memcpy(c1, start, sizeof c1);
                    simd->gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c1, NR, acc, NULL);
                    CHECK_MSG(same_bits(c0, c1, MR * NR), "int8 tile round %d, %d blocks, acc %d",
                              round, nbk, acc);
                }
                /* with a bias: the sums above, then + bias, in both tables */
                for (int i = 0; i < MR * NR; i++) want[i] = c0[i] + bias[i % NR];
                for (int table = 0; table < (simd ? 2 : 1); table++) {
                    memcpy(c1, start, sizeof c1);
                    (table ? simd : &hv_mm_scalar)
                        ->gemm_tiles_q8(1, nbk, a, ad, b, bd, bc, c1, NR, acc, bias);
                    CHECK_MSG(same_bits(want, c1, MR * NR),
                              "int8 tile round %d, %d blocks, acc %d, bias, table %d", round, nbk,
                              acc, table);
                }
            }
    }
    /* activation blocks: SIMD quantization gives the scalar bytes and
     * scale, for random, tied (x / d = k + 1/2), zero, tiny, huge, NaN and
     * infinite values */
    for (int round = 0; round < 9; round++) {
        float x[32];
        for (int t = 0; t < 32; t++) x[t] = frand() * (round == 3 ? 1e-38f : 1.0f);
        if (round == 1) /* amax 63 * 0.25: d = 0.25, halves fall on ties */
            for (int t = 0; t < 32; t++) x[t] = (t == 0 ? 63 : irand(-62, 62) + 0.5f) * 0.25f;
        if (round == 2) memset(x, 0, sizeof x), x[7] = -0.0f;
        if (round == 4) x[9] = 3e38f, x[10] = -3e38f;
        if (round == 5) x[31] = NAN;
        if (round == 6) x[0] = -INFINITY;
        if (round == 7) x[4] = 0x1p-130f, x[5] = -0x1p-149f; /* subnormals only */
        if (round == 7)
            for (int t = 0; t < 32; t++)
                if (t != 4 && t != 5) x[t] = 0.0f;
        uint8_t u0[32], u1[32];
        float d0 = hv_mm_scalar.quantize_q7(x, u0);
        int ok = 1;
        for (int t = 0; t < 32; t++) ok &= u0[t] >= 1 && u0[t] <= 127;
        if (d0 > 0)
            for (int t = 0; t < 32; t++) ok &= fabs(x[t] - d0 * (u0[t] - 64)) <= d0 / 2 * 1.0001;
        CHECK_MSG(ok, "q7 quantization round %d: within d / 2", round);
        if (round >= 5 && round <= 6) CHECK_MSG(isnan(d0), "q7 round %d: NaN scale", round);
        if (simd) {
            float d1 = simd->quantize_q7(x, u1);
            CHECK_MSG(same_bits(&d0, &d1, 1) && memcmp(u0, u1, 32) == 0,
                      "q7 quantization round %d: SIMD == scalar", round);
        }
        /* the GEMV's 127 levels (hv_q8_act_quantize) */
        int8_t q0[32], q1[32];
        d0 = hv_mm_scalar.quantize_q8(x, q0);
        ok = 1;
        for (int t = 0; t < 32; t++) ok &= q0[t] >= -127;
        if (d0 > 0)
            for (int t = 0; t < 32; t++) ok &= fabs(x[t] - d0 * q0[t]) <= d0 / 2 * 1.0001;
        CHECK_MSG(ok, "q8 quantization round %d: within d / 2", round);
        if (simd) {
            float d1 = simd->quantize_q8(x, q1);
            CHECK_MSG(same_bits(&d0, &d1, 1) && memcmp(q0, q1, 32) == 0,
                      "q8 quantization round %d: SIMD == scalar", round);
        }
    }
    /* the panel transpose moves words untouched, NaN patterns included */
    uint32_t src[NR * 21], d0[NR * 21], d1[NR * 21];
    for (int i = 0; i < NR * 21; i++) src[i] = (uint32_t)rand() * 2654435761u ^ (uint32_t)i;
    src[5] = 0x7f800001u; /* a signalling NaN as a float */
    for (int kq = 1; kq <= 21; kq += 4) {
        hv_mm_scalar.gemm_panel(d0, src, 21, kq);
        int ok = 1;
        for (int k = 0; k < kq; k++)
            for (int r = 0; r < NR; r++) ok &= d0[k * NR + r] == src[r * 21 + k];
        CHECK_MSG(ok, "panel of 32-bit words, %d words", kq);
        if (simd) {
            simd->gemm_panel(d1, src, 21, kq);
            CHECK_MSG(memcmp(d0, d1, (size_t)kq * NR * 4) == 0,
                      "SIMD panel of 32-bit words, %d words", kq);
        }
    }
    /* the activation panel: MR rows moved bit for bit, nothing written
     * past its kc * MR floats (guard words after it stay) */
    enum { MRX = HV_GEMM_MR };
    for (int kq = 1; kq <= 21; kq++) {
        uint32_t x0[MRX * 21 + 4], x1[MRX * 21 + 4];
        memset(x0, 0xa5, sizeof x0);
        memset(x1, 0xa5, sizeof x1);
        hv_mm_scalar.gemm_pack_x((float *)x0, (const float *)src, 21, kq);
        int ok = 1;
        for (int k = 0; k < kq; k++)
            for (int i = 0; i < MRX; i++) ok &= x0[k * MRX + i] == src[i * 21 + k];
        for (int g = kq * MRX; g < MRX * 21 + 4; g++) ok &= x0[g] == 0xa5a5a5a5u;
        CHECK_MSG(ok, "activation panel, %d columns", kq);
        if (simd) {
            simd->gemm_pack_x((float *)x1, (const float *)src, 21, kq);
            CHECK_MSG(memcmp(x0, x1, sizeof x0) == 0, "SIMD activation panel, %d columns", kq);
        }
    }
    /* the half-precision panels: widen_f16 / widen_bf16's values moved as
     * gemm_panel moves them, scalar and SIMD, infinities and subnormals
     * among them */
    uint16_t hsrc[NR * 21];
    for (int i = 0; i < NR * 21; i++) hsrc[i] = (uint16_t)(rand() * 2654435761u >> 7);
    hsrc[3] = 0x7c00, hsrc[4] = 0xfc00, hsrc[6] = 0x0001,
    hsrc[7] = 0x8000;                   /* f16 +-inf, subnormal, -0 */
    hsrc[8] = 0x7f80, hsrc[9] = 0x0001; /* bf16 inf, subnormal */
    for (int i = 0; i < NR * 21; i++)
        if ((hsrc[i] & 0x7c00) == 0x7c00 && (hsrc[i] & 0x3ff)) hsrc[i] &= 0xfc00; /* no f16 NaN */
    for (int i = 0; i < NR * 21; i++)
        if ((hsrc[i] & 0x7f80) == 0x7f80 && (hsrc[i] & 0x7f)) hsrc[i] &= 0xff80; /* no bf16 NaN */
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (int kq = 1; kq <= 21; kq += 4) {
            float wide[NR * 21], want[NR * 21], got[NR * 21];
            for (int r = 0; r < NR; r++)
                (bf16 ? hv_mm_scalar.widen_bf16 : hv_mm_scalar.widen_f16)(wide + r * 21,
                                                                          hsrc + r * 21, 21);
            hv_mm_scalar.gemm_panel(want, wide, 21, kq);
            hv_mm_scalar.gemm_panel_half(got, hsrc, 21, kq, bf16);
            CHECK_MSG(same_bits(want, got, (size_t)kq * NR), "%s panel, %d columns",
                      bf16 ? "bf16" : "f16", kq);
            if (simd) {
                simd->gemm_panel_half(got, hsrc, 21, kq, bf16);
                CHECK_MSG(same_bits(want, got, (size_t)kq * NR), "SIMD %s panel, %d columns",
                          bf16 ? "bf16" : "f16", kq);
            }
        }
}

/* The decoder's attention kernels: the SIMD ones bit for bit the scalar
 * ones, both within the rounding bound of an f64 reference (a sum of m
 * products in f32 is within m * 2^-24 of the sum of their magnitudes). */
static void test_attention(void) {
    const int ns[] = {1, 3, 4, 5, 16, 17, 40}, lens[] = {1, 7, 8, 9, 64, 65, 128, 130};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            int n = ns[a], len = lens[b];
            long ld = len + 3;
            float *q = falloc(len), *k = falloc((size_t)n * ld), *p = falloc(n);
            float *s0 = falloc(n), *s1 = falloc(n), *o0 = falloc(len), *o1 = falloc(len);
            float *start = falloc(len);
            for (int i = 0; i < len; i++) q[i] = frand(), start[i] = frand();
            for (long i = 0; i < n * ld; i++) k[i] = frand();
            for (int i = 0; i < n; i++) p[i] = frand();
            float scale = 0.125f;
            hv_mm_scalar.attn_scores(s0, q, k, ld, n, len, scale);
            for (int i = 0; i < n; i++) {
                double ref = 0, mag = 0;
                for (int c = 0; c < len; c++) {
                    ref += (double)q[c] * k[i * ld + c];
                    mag += fabs((double)q[c] * k[i * ld + c]);
                }
                double bound = scale * (len + 1) * mag * 0x1p-24 + fabs(scale * ref) * 0x1p-24;
                CHECK_MSG(fabs(s0[i] - scale * ref) <= bound, "scores n %d len %d row %d", n, len,
                          i);
            }
            hv_attn_scores(s1, q, k, 0, ld, n, len, scale);
            CHECK_MSG(same_bits(s0, s1, n), "hv_attn_scores n %d len %d", n, len);
            for (int acc = 0; acc < 2; acc++) {
                memcpy(o0, start, (size_t)len * sizeof *o0);
                hv_mm_scalar.attn_context(o0, p, k, ld, n, len, acc);
                for (int c = 0; c < len; c++) {
                    double ref = acc ? start[c] : 0, mag = fabs(ref);
                    for (int i = 0; i < n; i++) {
                        ref += (double)p[i] * k[i * ld + c];
                        mag += fabs((double)p[i] * k[i * ld + c]);
                    }
                    CHECK_MSG(fabs(o0[c] - ref) <= (n + 1) * mag * 0x1p-24,
                              "context n %d len %d col %d", n, len, c);
                }
                memcpy(o1, start, (size_t)len * sizeof *o1);
                hv_attn_context(o1, p, k, 0, ld, n, len, acc);
                CHECK_MSG(same_bits(o0, o1, len), "hv_attn_context n %d len %d acc %d", n, len,
                          acc);
                if (simd) {
                    memcpy(o1, start, (size_t)len * sizeof *o1);
                    simd->attn_context(o1, p, k, ld, n, len, acc);
                    CHECK_MSG(same_bits(o0, o1, len), "SIMD context n %d len %d acc %d", n, len,
                              acc);
                }
            }
            if (simd) {
                simd->attn_scores(s1, q, k, ld, n, len, scale);
                CHECK_MSG(same_bits(s0, s1, n), "SIMD scores n %d len %d", n, len);
            }
            free(q), free(k), free(p), free(s0), free(s1), free(o0), free(o1), free(start);
        }
}

/* The f16-cache kernels: exactly the f32 kernels on the widened rows
 * (scalar), SIMD == scalar; the f16 store rounds to nearest even, clamps
 * to +-65504 and keeps NaN, SIMD == scalar. */
static void test_attention_f16(void) {
    const int ns[] = {1, 4, 5, 17}, lens[] = {1, 8, 9, 64, 128, 130};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof lens / sizeof lens[0]; b++) {
            int n = ns[a], len = lens[b];
            long ld = len + 5;
            uint16_t *k16 = malloc((size_t)n * ld * sizeof *k16);
            float *kw = falloc((size_t)n * ld), *q = falloc(len), *p = falloc(n);
            float *s0 = falloc(n), *s1 = falloc(n), *o0 = falloc(len), *o1 = falloc(len);
            for (long i = 0; i < n * ld; i++) {
                k16[i] = hv_f32_to_f16(frand() * 4.0f);
                kw[i] = hv_f16_to_f32(k16[i]);
            }
            for (int i = 0; i < len; i++) q[i] = frand();
            for (int i = 0; i < n; i++) p[i] = frand();
            hv_mm_scalar.attn_scores(s0, q, kw, ld, n, len, 0.125f);
            hv_mm_scalar.attn_scores_f16(s1, q, k16, ld, n, len, 0.125f);
            CHECK_MSG(same_bits(s0, s1, n), "f16 scores == f32 on widened rows, n %d len %d", n,
                      len);
            hv_attn_scores(s1, q, k16, 1, ld, n, len, 0.125f);
            CHECK_MSG(same_bits(s0, s1, n), "hv_attn_scores f16 n %d len %d", n, len);
            if (simd) {
                simd->attn_scores_f16(s1, q, k16, ld, n, len, 0.125f);
                CHECK_MSG(same_bits(s0, s1, n), "SIMD f16 scores n %d len %d", n, len);
            }
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < len; i++) o0[i] = o1[i] = (float)i;
                hv_mm_scalar.attn_context(o0, p, kw, ld, n, len, acc);
                hv_mm_scalar.attn_context_f16(o1, p, k16, ld, n, len, acc);
                CHECK_MSG(same_bits(o0, o1, len), "f16 context n %d len %d acc %d", n, len, acc);
                if (simd) {
                    for (int i = 0; i < len; i++) o1[i] = (float)i;
                    simd->attn_context_f16(o1, p, k16, ld, n, len, acc);
                    CHECK_MSG(same_bits(o0, o1, len), "SIMD f16 context n %d len %d acc %d", n, len,
                              acc);
                }
            }
            free(k16), free(kw), free(q), free(p), free(s0), free(s1), free(o0), free(o1);
        }
    enum { N = 203 };
    float v[N];
    uint16_t h0[N], h1[N];
    for (int i = 0; i < N; i++) v[i] = frand() * powf(2.0f, (float)(i % 40 - 28));
    v[0] = 1e6f, v[1] = -1e6f, v[2] = INFINITY, v[3] = -INFINITY, v[4] = 65519.0f;
    v[5] = 0x1p-24f, v[6] = 0x1p-25f, v[7] = 3 * 0x1p-25f, v[8] = -0.0f, v[9] = NAN;
    v[10] = 1.0f + 0x1p-11f, v[11] = 1.0f + 3 * 0x1p-11f; /* ties to even */
    v[N - 1] = NAN;
    hv_mm_scalar.narrow_f16(h0, v, N);
    CHECK(h0[0] == 0x7bff && h0[1] == 0xfbff && h0[2] == 0x7bff && h0[3] == 0xfbff &&
          h0[4] == 0x7bff);
    CHECK(h0[5] == 0x0001 && h0[6] == 0x0000 && h0[7] == 0x0002 && h0[8] == 0x8000);
    CHECK(h0[10] == 0x3c00 && h0[11] == 0x3c02);
    int ok = 1;
    for (int i = 0; i < N; i++) {
        float w = hv_f16_to_f32(h0[i]);
        if (isnan(v[i]))
            ok &= isnan(w) != 0;
        else if (fabsf(v[i]) <= 65504.0f)
            ok &= fabsf(w - v[i]) <= fabsf(v[i]) * 0x1p-11f + 0x1p-25f;
    }
    CHECK_MSG(ok, "f16 store within half an ulp, NaN kept");
    /* Bochs 2.7's VCVTPS2PH rounds halfway cases away from zero; the
     * emulated runs (docs/TESTING.md) say so, and test the rest here */
    const char *ties = getenv("HV_F16C_TIES_AWAY");
    if (ties && *ties) {
        printf("HV_F16C_TIES_AWAY: the SIMD f16 store is not compared (an emulator's rounding)\n");
        return;
    }
    if (simd) {
        for (int len = 1; len <= N; len += 29) {
            simd->narrow_f16(h1, v, len);
            int same = 1;
            for (int i = 0; i < len; i++)
                same &=
                    isnan(v[i]) ? (h1[i] & 0x7c00) == 0x7c00 && (h1[i] & 0x3ff) : h1[i] == h0[i];
            CHECK_MSG(same, "SIMD f16 store == scalar, %d values", len);
        }
    }
}

/* The micro-kernels as the drivers call them: count = 1..5 tiles down the
 * activation panels (the AVX-512 kernels take them two at a time) against
 * one weight panel and, where the table has them, two (gemm_tiles2,
 * gemm_tiles_q8_2); from zero and accumulating, the int8 one with and
 * without a bias: the bits of the portable kernel on each panel, and
 * nothing written outside the tiles' outputs. */
static void test_tiles_wide(void) {
    if (!simd) return;
    enum { MR = HV_GEMM_MR, QMR = HV_GEMM_Q8_MR, NR = HV_GEMM_NR, LDC = 2 * NR + 3, MAXT = 5 };
    const float guard = -1234.5f;
    static const int kcs[] = {1, 5, 17, 256};
    for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++)
        for (int count = 1; count <= MAXT; count++)
            for (int acc = 0; acc < 2; acc++) {
                int kc = kcs[ki];
                size_t nc = (size_t)count * MR * LDC;
                float *a = falloc((size_t)count * kc * MR), *b = falloc((size_t)2 * kc * NR);
                float *start = falloc(nc), *want = falloc(nc), *got = falloc(nc);
                for (size_t i = 0; i < (size_t)count * kc * MR; i++) a[i] = frand();
                for (size_t i = 0; i < (size_t)2 * kc * NR; i++) b[i] = frand();
                for (size_t i = 0; i < nc; i++) start[i] = i % LDC >= 2 * NR ? guard : frand();
                memcpy(want, start, nc * sizeof *want);
                for (int p = 0; p < 2; p++)
                    hv_mm_scalar.gemm_tiles(count, kc, a, b + (long)p * kc * NR, want + p * NR, LDC,
                                            acc);
                memcpy(got, start, nc * sizeof *got);
                simd->gemm_tiles(count, kc, a, b, got, LDC, acc);
                int ok = 1;
                for (size_t i = 0; i < nc; i++)
                    ok &= i % LDC < NR ? same_bits(&got[i], &want[i], 1) : got[i] == start[i];
                CHECK_MSG(ok, "%s gemm_tiles: %d tiles, kc %d, accumulate %d", simd->name, count,
                          kc, acc);
                if (simd->gemm_tiles2) {
                    memcpy(got, start, nc * sizeof *got);
                    simd->gemm_tiles2(count, kc, a, b, got, LDC, acc);
                    CHECK_MSG(same_bits(got, want, nc), "%s gemm_tiles2: %d tiles, kc %d, acc %d",
                              simd->name, count, kc, acc);
                }
                free(a), free(b), free(start), free(want), free(got);
            }
    /* the int8 tiles: panels of bytes [nbk * 8][NR][4], then their scales
     * and offset terms, two panels `panel` bytes apart */
    for (int nbk = 1; nbk <= 3; nbk++)
        for (int count = 1; count <= MAXT; count++)
            for (int variant = 0; variant < 4; variant++) {
                int acc = variant & 1, with_bias = variant >> 1;
                long panel = (long)nbk * 32 * NR + (long)nbk * NR * 8;
                size_t na = (size_t)count * nbk * 32 * QMR, nc = (size_t)count * QMR * LDC;
                uint8_t *a = malloc(na), *w = malloc((size_t)2 * panel);
                float *ad = falloc((size_t)count * nbk * QMR), bias[2 * NR];
                float *start = falloc(nc), *want = falloc(nc), *got = falloc(nc);
                for (size_t i = 0; i < na; i++) a[i] = (uint8_t)irand(1, 127);
                for (int i = 0; i < count * nbk * QMR; i++) ad[i] = frand() * 0.01f;
                for (int p = 0; p < 2; p++) {
                    int8_t *q = (int8_t *)w + p * panel;
                    float *d = (float *)(w + p * panel + (long)nbk * 32 * NR);
                    int32_t *c = (int32_t *)(d + nbk * NR);
                    for (int i = 0; i < nbk * 32 * NR; i++)
                        q[i] = (int8_t)(i % 7 ? irand(-127, 127) : (i & 8 ? 127 : -127));
                    for (int blk = 0; blk < nbk; blk++)
                        for (int j = 0; j < NR; j++) {
                            int32_t sum = 0;
                            for (int k = blk * 8; k < blk * 8 + 8; k++)
                                for (int t = 0; t < 4; t++) sum += q[(k * NR + j) * 4 + t];
                            d[blk * NR + j] = frand() * 0.01f;
                            c[blk * NR + j] = 64 * sum;
                        }
                }
                for (int j = 0; j < 2 * NR; j++) bias[j] = frand();
                for (size_t i = 0; i < nc; i++) start[i] = i % LDC >= 2 * NR ? guard : frand();
                memcpy(want, start, nc * sizeof *want);
                for (int p = 0; p < 2; p++) {
                    const uint8_t *q = w + p * panel;
                    const float *d = (const float *)(q + (long)nbk * 32 * NR);
                    hv_mm_scalar.gemm_tiles_q8(count, nbk, a, ad, (const int8_t *)q, d,
                                               (const int32_t *)(d + nbk * NR), want + p * NR, LDC,
                                               acc, with_bias ? bias + p * NR : NULL);
                }
                const float *d0 = (const float *)(w + (long)nbk * 32 * NR);
                const int32_t *c0 = (const int32_t *)(d0 + nbk * NR);
                memcpy(got, start, nc * sizeof *got);
                simd->gemm_tiles_q8(count, nbk, a, ad, (const int8_t *)w, d0, c0, got, LDC, acc,
                                    with_bias ? bias : NULL);
                int ok = 1;
                for (size_t i = 0; i < nc; i++)
                    ok &= i % LDC < NR ? same_bits(&got[i], &want[i], 1) : got[i] == start[i];
                CHECK_MSG(ok, "%s gemm_tiles_q8: %d tiles, %d blocks, acc %d, bias %d", simd->name,
                          count, nbk, acc, with_bias);
                if (simd->gemm_tiles_q8_2) {
                    memcpy(got, start, nc * sizeof *got);
                    simd->gemm_tiles_q8_2(count, nbk, a, ad, (const int8_t *)w, d0, c0, panel, got,
                                          LDC, acc, with_bias ? bias : NULL);
                    CHECK_MSG(same_bits(got, want, nc),
                              "%s gemm_tiles_q8_2: %d tiles, %d blocks, acc %d, bias %d",
                              simd->name, count, nbk, acc, with_bias);
                }
                free(a), free(w), free(ad), free(start), free(want), free(got);
            }
}

/* sgemm_nn, the encoder attention's products: every output its fma chain
 * over t in order (checked against that loop, so the portable kernel too),
 * each SIMD table bit for bit the same, within the f64 reference's
 * rounding bound; row and column counts around the tiles' (12 x 32 and 6
 * x 16, their 4- and 1-row and 8- and 1-column edges), sums of 1 to 257
 * (past the AVX2 kernel's blocks of 256 rows of b, whose chains go on
 * from c), strides wider than the rows, and nothing written outside c's
 * m x n. */
static void test_sgemm_nn(void) {
    static const int ms[] = {1, 3, 4, 5, 6, 7, 12, 13, 17, 25},
                     ns[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 48, 80};
    static const int ks[] = {1, 5, 80, 257};
    const float guard = -777.0f;
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
            for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
                int m = ms[a], n = ns[b], k = ks[c];
                long lda = k + 3, ldb = n + 5, ldc = n + 2;
                float *A = falloc((size_t)m * lda), *B = falloc((size_t)k * ldb);
                float *want = falloc((size_t)m * ldc), *got = falloc((size_t)m * ldc);
                for (long i = 0; i < m * lda; i++) A[i] = frand();
                for (long i = 0; i < k * ldb; i++) B[i] = frand();
                int chain = 1, bound = 1;
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < ldc; j++) want[i * ldc + j] = guard;
                hv_mm_scalar.sgemm_nn(m, n, k, A, lda, B, ldb, want, ldc);
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < ldc; j++) {
                        float w = want[i * ldc + j], s = 0.0f;
                        if (j >= n) {
                            chain &= w == guard;
                            continue;
                        }
                        double ref = 0, mag = 0;
                        for (int t = 0; t < k; t++) {
                            double p = (double)A[i * lda + t] * B[t * ldb + j];
                            s = fmaf(A[i * lda + t], B[t * ldb + j], s);
                            ref += p;
                            mag += fabs(p);
                        }
                        chain &= same_bits(&s, &w, 1);
                        bound &= fabs(w - ref) <= (k + 1) * mag * 0x1p-24;
                    }
                CHECK_MSG(chain && bound, "sgemm_nn %d x %d x %d: the fma chains, within the bound",
                          m, n, k);
                if (simd) {
                    for (int i = 0; i < m * ldc; i++) got[i] = guard;
                    simd->sgemm_nn(m, n, k, A, lda, B, ldb, got, ldc);
                    CHECK_MSG(same_bits(got, want, (size_t)m * ldc), "%s sgemm_nn %d x %d x %d",
                              simd->name, m, n, k);
                }
                free(A), free(B), free(want), free(got);
            }
}

/* The packed GEMMs' split of their products into task chunks: every row
 * of every product in exactly one chunk, in order, whole panels but at a
 * product's end; hv_gemm_outs_taper (2 or more threads) cuts the last
 * product's last chunks, one per thread, into quarters. */
static void test_gemm_chunks(void) {
    static const int heights[][3] = {{1, 0, 0},          {128, 0, 0},   {130, 0, 0},
                                     {520, 0, 0},        {1280, 0, 0},  {5120, 0, 0},
                                     {1280, 1280, 1280}, {40, 304, 17}, {2560, 24, 1000}};
    static const int thread_counts[] = {0, 1, 2, 3, 16}; /* 0: no taper */
    for (size_t c = 0; c < sizeof heights / sizeof heights[0]; c++)
        for (size_t ti = 0; ti < sizeof thread_counts / sizeof thread_counts[0]; ti++) {
            int threads = thread_counts[ti];
            hv_mat W[3];
            const hv_mat *Wp[3];
            const float *bias[3] = {NULL, NULL, NULL};
            float *y[3] = {NULL, NULL, NULL};
            int count = 0;
            for (; count < 3 && heights[c][count]; count++) {
                memset(&W[count], 0, sizeof W[count]);
                W[count].type = HV_WEIGHTS_F32;
                W[count].rows = heights[c][count];
                W[count].cols = 64;
                Wp[count] = &W[count];
            }
            hv_gemm_outs o;
            CHECK(hv_gemm_outs_init(&o, count, Wp, bias, y, hv_gemm_chunk_rows, NULL) == 0);
            int untapered = o.n_chunks;
            if (threads) hv_gemm_outs_taper(&o, threads);
            int want_m = 0, want_r0 = 0, ok = 1, chunks = 0, small = 0;
            int last = W[count - 1].rows, big = hv_gemm_chunk_rows(&W[count - 1]);
            int m, r0, r1;
            while (hv_gemm_outs_next(&o, &m, &r0, &r1)) {
                chunks++;
                if (m != want_m || r0 != want_r0 || r1 <= r0 || r1 > W[m].rows) ok = 0;
                if (r1 < W[m].rows && (r1 - r0) % HV_GEMM_NR) ok = 0;
                if (r1 - r0 > o.max_chunk) ok = 0;
                small += m == count - 1 && r1 - r0 <= big / 4;
                want_r0 = r1;
                if (r1 == W[m].rows) want_m++, want_r0 = 0;
            }
            CHECK_MSG(ok && want_m == count && chunks == o.n_chunks,
                      "chunks of case %zu (%d threads): every row once, in order", c, threads);
            /* the rows that the tapered chunks cover, in quarters */
            int n_big = (last + big - 1) / big, tail = threads < n_big ? threads : n_big;
            int fine = (big / 4) & ~(HV_GEMM_NR - 1), tail_rows = last - (n_big - tail) * big;
            int want_small = threads >= 2 && fine >= HV_GEMM_NR
                                 ? (tail_rows + fine - 1) / fine
                                 : (last % big && last % big <= big / 4);
            CHECK_MSG(threads >= 2 || o.n_chunks == untapered, "case %zu: no taper for %d threads",
                      c, threads);
            CHECK_MSG(small == want_small,
                      "case %zu, %d threads: %d small chunks of the last product, want %d", c,
                      threads, small, want_small);
        }
}

/* A table's own geometry (hv_mm_kernels' geom): a table with tiles of
 * 4 x 8 (int8 3 x 8), columns in blocks of 40 (int8 at most 64) and passes
 * of 12 (9) rows, its micro-kernels the portable ones written for those
 * sizes, runs the whole packed GEMMs (every weight type, row-major and x8,
 * edge tiles in both directions, with a bias) with the bits of the
 * portable table; and the drivers refuse a geometry they cannot take. */
enum { OWN_MR = 4, OWN_NR = 8, OWN_QMR = 3 };

static void own_tiles(int count, int kc, const float *a, const float *b, float *c, long ldc,
                      int accumulate) {
    for (int row = 0; row < count * OWN_MR; row++) { /* tile row / MR, its row row % MR */
        const float *ar = a + (long)(row / OWN_MR) * kc * OWN_MR + row % OWN_MR;
        float *cr = c + (long)row * ldc;
        for (int j = 0; j < OWN_NR; j++) {
            float s = accumulate ? cr[j] : 0.0f;
            for (int k = 0; k < kc; k++) s = fmaf(ar[k * OWN_MR], b[k * OWN_NR + j], s);
            cr[j] = s;
        }
    }
}

static void own_panel(void *dst, const void *src, long ld, int kc) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < OWN_NR; r++)
            memcpy((char *)dst + 4 * (k * OWN_NR + r), (const char *)src + 4 * (r * ld + k), 4);
}

static void own_panel_half(float *dst, const uint16_t *src, long ld, int kc, int bf16) {
    for (int k = 0; k < kc; k++)
        for (int r = 0; r < OWN_NR; r++) {
            uint16_t h = src[r * ld + k];
            dst[k * OWN_NR + r] = bf16 ? hv_bf16_to_f32(h) : hv_f16_to_f32(h);
        }
}

static void own_pack_x(float *dst, const float *src, long ld, int kc) {
    for (int k = 0; k < kc; k++)
        for (int i = 0; i < OWN_MR; i++) dst[k * OWN_MR + i] = src[i * ld + k];
}

static void own_tiles_q8(int count, int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                         const float *bd, const int32_t *bc, float *c, long ldc, int accumulate,
                         const float *bias) {
    for (int t = 0; t < count; t++, a += (long)nbk * 32 * OWN_QMR, ad += nbk * OWN_QMR)
        for (int i = 0; i < OWN_QMR; i++)
            for (int j = 0; j < OWN_NR; j++) {
                float *ci = c + (long)(t * OWN_QMR + i) * ldc + j, s = accumulate ? *ci : 0.0f;
                for (int blk = 0; blk < nbk; blk++) {
                    int32_t p = -bc[blk * OWN_NR + j];
                    for (int q = blk * 8; q < blk * 8 + 8; q++)
                        for (int u = 0; u < 4; u++)
                            p += a[(q * OWN_QMR + i) * 4 + u] * b[(q * OWN_NR + j) * 4 + u];
                    s = fmaf(bd[blk * OWN_NR + j] * ad[blk * OWN_QMR + i], (float)p, s);
                }
                *ci = bias ? s + bias[j] : s;
            }
}

static void test_own_geometry(void) {
    const hv_mm_kernels *tables[8];
    int n_tables = hv_mm_tables(tables, 8);
    for (int t = 0; t < n_tables; t++)
        CHECK_MSG(hv_mm_geometry_ok(&tables[t]->geom), "%s: its geometry", tables[t]->name);
    hv_mm_kernels own = hv_mm_scalar;
    own.name = "own";
    own.geom = (hv_mm_geometry){.mr = OWN_MR,
                                .nr = OWN_NR,
                                .kc = 40,
                                .mc = 12,
                                .q8_mr = OWN_QMR,
                                .q8_kc_max = 64,
                                .q8_mc = 9};
    own.gemm_tiles = own_tiles, own.gemm_tiles2 = NULL, own.gemm_panel = own_panel;
    own.gemm_panel_half = own_panel_half, own.gemm_pack_x = own_pack_x;
    own.gemm_tiles_q8 = own_tiles_q8, own.gemm_tiles_q8_2 = NULL;
    CHECK(hv_mm_geometry_ok(&own.geom));
    hv_pool *pool = hv_pool_new(3);
    const int n = 23, cols = 96;
    for (int ti = 0; ti < N_TYPES; ti++)
        for (int rows = 40; rows <= 44; rows += 4)
            for (int x8 = 0; x8 < 2; x8++) {
                hv_weight_type type = all_types[ti];
                int quant = type == HV_WEIGHTS_Q8_0 || type == HV_WEIGHTS_Q4_0;
                if (x8 && (!quant || rows % HV_X8_ROWS)) continue;
                float *x = falloc((size_t)n * cols), *src = falloc((size_t)rows * cols);
                float *bias = falloc(rows), *y0 = falloc((size_t)n * rows);
                float *y1 = falloc((size_t)n * rows);
                for (int i = 0; i < n * cols; i++) x[i] = frand();
                for (int i = 0; i < rows * cols; i++) src[i] = frand();
                for (int i = 0; i < rows; i++) bias[i] = frand();
                hv_mat W;
                void *st, *st8;
                hv_error e;
                CHECK(hv_mat_from_f32(&W, type, src, rows, cols, &st, &e) == HV_OK);
                if (x8) {
                    CHECK(hv_mat_interleave(&W, &st8, &e) == HV_OK);
                    free(st);
                    st = st8;
                }
                const hv_mat *Wp = &W;
                const float *bp = bias;
                CHECK(hv_gemm_weights(&hv_mm_scalar, pool, n, x, 1, &Wp, &bp, &y0, NULL) == 0);
                CHECK(hv_gemm_weights(&own, pool, n, x, 1, &Wp, &bp, &y1, NULL) == 0);
                CHECK_MSG(same_bits(y0, y1, (size_t)n * rows),
                          "own geometry: %s %d x %d%s, the portable table's bits",
                          hv_weight_type_name(type), rows, cols, x8 ? " x8" : "");
                free(st);
                free(x), free(src), free(bias), free(y0), free(y1);
            }
    /* what the drivers' buffers and layouts cannot take */
    hv_mm_kernels bad = own;
    bad.geom.nr = 12; /* not whole x8 groups */
    CHECK(!hv_mm_geometry_ok(&bad.geom));
    bad.geom = own.geom, bad.geom.mc = 10; /* passes of partial tiles */
    CHECK(!hv_mm_geometry_ok(&bad.geom));
    bad.geom = own.geom, bad.geom.mr = HV_GEMM_MR_MAX + 1;
    CHECK(!hv_mm_geometry_ok(&bad.geom));
    bad.geom = own.geom, bad.geom.q8_kc_max = 48;
    CHECK(!hv_mm_geometry_ok(&bad.geom));
    float x[32] = {0}, y[8];
    float *yp = y;
    hv_mat W = {.type = HV_WEIGHTS_F32, .rows = 1, .cols = 32, .data = x};
    const hv_mat *Wp = &W;
    const float *none = NULL;
    CHECK(hv_gemm_weights(&bad, pool, 1, x, 1, &Wp, &none, &yp, NULL) == -1);
    hv_pool_free(pool);
}

int main(void) {
    const hv_mm_kernels *tables[8];
    int n = simd_tables(tables);
    for (int t = 0; t < (n ? n : 1); t++) {
        simd = n ? tables[t] : NULL;
        printf("SIMD table: %s\n", simd ? simd->name : "none");
        test_attention();
        test_attention_f16();
        test_gemm_q8_tile();
        test_tiles_wide();
        test_sgemm_nn();
    }
    test_gemm_chunks();
    test_own_geometry();
    TEST_END();
}
