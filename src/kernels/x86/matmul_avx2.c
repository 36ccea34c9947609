/* AVX2 + FMA + F16C kernels for reduced-precision weights. Each function is
 * compiled for those extensions with a target attribute, so the default
 * build (no -march) contains them; matmul.c calls them only after
 * checking the CPU. Summation orders: see matmul_impl.h; the scalar file
 * is the reference they match bit for bit.
 *
 * The loop nests shared with other tables are the nest_*.h headers,
 * expanded here with this file's micro-kernels. */
#include "kernels/half.h"
#include "kernels/matmul_impl.h"
#include "kernels/nest_probe.h"

#ifdef HV_MM_HAVE_AVX2

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define TARGET         __attribute__((target("avx2,fma,f16c")))
#define INLINE         static inline __attribute__((always_inline)) TARGET
/* what the loop nests (nest_*.h) expand with */
#define HV_NEST_INLINE INLINE
#define HV_NEST_KERNEL TARGET static

/* The rows GEMV's micro-kernels (nest_gemv_rows.h), which the attention
 * and the panels use too: matmul_impl.h's 8 lane sums in one register. */
typedef __m256 v8;

/* ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7)) */
INLINE float v8_hsum(v8 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

/* 8 weights at p widened to f32: f16 through F16C, bf16 by a shift. */
INLINE v8 v8_load_half(const uint16_t *p, int bf16) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

INLINE float half1(const uint16_t *p, int bf16) {
    if (bf16) {
        uint32_t bits = (uint32_t)*p << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    return _cvtsh_ss(*p);
}

/* With 4 rows the next 4 rows are fetched in step, which more than doubles the speed when
 * the weights come from DRAM, and again for every activation row (fetching
 * for the first row only was 1.04-1.09x slower with 4 and 8 bf16 rows,
 * 1.1-1.35x with f32). The hint is T2 (the outer caches): with T0 a
 * decoder step took 8-15% longer on the EPYC, probably as rows fetched
 * into L1 pushed xi out of it (docs/PERFORMANCE.md). */
INLINE void rows_fetch(const char *p, long bytes) {
    for (long f = 0; f < bytes; f += 64) _mm_prefetch(p + f, _MM_HINT_T2);
}

INLINE v8 v8_zero(void) { return _mm256_setzero_ps(); }
INLINE v8 v8_load(const float *p) { return _mm256_loadu_ps(p); }
INLINE v8 v8_fma(v8 acc, v8 a, v8 b) { return _mm256_fmadd_ps(a, b, acc); }
INLINE v8 v8_add(v8 a, v8 b) { return _mm256_add_ps(a, b); }

#include "kernels/nest_gemv_rows.h"

/* 8 int32 lanes, lane j = sum of qw[t] * qx[t] for t = 4j .. 4j+3. The
 * unsigned-by-signed byte multiply takes |qw| and moves qw's sign onto qx;
 * |q| <= 127 keeps the pairwise int16 sums (<= 32258) from saturating. */
INLINE __m256i dot_lanes_q8(__m256i qw, __m256i qx) {
    __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

INLINE __m256 q8_step(const hv_q8_0_block *b, __m256i qx, float dx, __m256 acc) {
    __m256i qw = _mm256_loadu_si256((const __m256i *)b->q);
    __m256 d = _mm256_set1_ps(_cvtsh_ss(b->d) * dx);
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_lanes_q8(qw, qx)), acc);
}

/* A q4_0 block's 32 nibbles q (0..15) as bytes in element order: the
 * low nibbles are elements 0..15, the high ones 16..31. */
INLINE __m256i q4_nibbles(const hv_q4_0_block *b) {
    __m128i raw = _mm_loadu_si128((const __m128i *)b->qs);
    __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(raw), _mm_srli_epi16(raw, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(15));
}

/* The same as bytes q - 8, in [-8, 7]. */
INLINE __m256i q4_bytes(const hv_q4_0_block *b) {
    return _mm256_sub_epi8(q4_nibbles(b), _mm256_set1_epi8(8));
}

/* 8 int32 lanes of 4 * 8 * (the sum of qx at positions 4j .. 4j+3): the
 * term that turns the dot with the nibbles q into the dot with q - 8.
 * Computed once per activation block for the 4 rows that share it. */
INLINE __m256i q4_bias(__m256i qx) {
    __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), qx); /* |pair| <= 254 */
    return _mm256_slli_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)), 3);
}

/* Lane j = sum of (q - 8) * qx at positions 4j .. 4j+3, exactly: the
 * unsigned nibbles times signed qx (pair sums <= 2 * 15 * 127, no
 * saturation), minus 8 * the sum of qx. */
INLINE __m256 q4_step(const hv_q4_0_block *b, __m256i qx, __m256i bias, float dx, __m256 acc) {
    __m256i p16 = _mm256_maddubs_epi16(q4_nibbles(b), qx);
    __m256i p = _mm256_sub_epi32(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)), bias);
    __m256 d = _mm256_set1_ps(_cvtsh_ss(b->d) * dx);
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc);
}

/* One block's step for either type (q4: its bias given). */
INLINE __m256 block_step(const char *blk, int q4, __m256i qx, __m256i bias, float dx, __m256 acc) {
    if (q4) return q4_step((const hv_q4_0_block *)blk, qx, bias, dx, acc);
    return q8_step((const hv_q8_0_block *)blk, qx, dx, acc);
}

/* The q8_0 and q4_0 GEMV (q4 a constant, so each copy keeps only its own
 * type's code): 4 weight rows at a time against each activation row,
 * fetching the next 4 rows block by block (4 x 34 or 4 x 18 bytes per
 * step), then single rows. */
INLINE void gemv_blocks(float *y, int ldy, const hv_q8_act *a, const char *w, int n_w, int cols,
                        int q4) {
    const long bb = q4 ? (long)sizeof(hv_q4_0_block) : (long)sizeof(hv_q8_0_block);
    int nb = cols / HV_Q8_BLOCK;
    long row = bb * nb;
    int r = 0;
    for (; r + 4 <= n_w; r += 4) {
        const char *w0 = w + r * row, *w1 = w0 + row, *w2 = w1 + row, *w3 = w2 + row;
        const char *next = w3 + row;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int b = 0; b < nb; b++) {
                __m256i qx = _mm256_loadu_si256((const __m256i *)(xq + (long)b * HV_Q8_BLOCK));
                __m256i bias = q4 ? q4_bias(qx) : _mm256_setzero_si256();
                long o = b * bb;
                for (long f = 0; f < 4 * bb; f += 64) _mm_prefetch(next + 4 * o + f, _MM_HINT_T0);
                a0 = block_step(w0 + o, q4, qx, bias, xd[b], a0);
                a1 = block_step(w1 + o, q4, qx, bias, xd[b], a1);
                a2 = block_step(w2 + o, q4, qx, bias, xd[b], a2);
                a3 = block_step(w3 + o, q4, qx, bias, xd[b], a3);
            }
            float *yi = y + (long)i * ldy + r;
            yi[0] = v8_hsum(a0);
            yi[1] = v8_hsum(a1);
            yi[2] = v8_hsum(a2);
            yi[3] = v8_hsum(a3);
        }
    }
    for (; r < n_w; r++) {
        const char *w0 = w + r * row;
        for (int i = 0; i < a->n; i++) {
            const float *xd = a->d + (long)i * nb;
            const int8_t *xq = a->q + (long)i * cols;
            __m256 a0 = _mm256_setzero_ps();
            for (int b = 0; b < nb; b++) {
                __m256i qx = _mm256_loadu_si256((const __m256i *)(xq + (long)b * HV_Q8_BLOCK));
                __m256i bias = q4 ? q4_bias(qx) : _mm256_setzero_si256();
                a0 = block_step(w0 + b * bb, q4, qx, bias, xd[b], a0);
            }
            y[(long)i * ldy + r] = v8_hsum(a0);
        }
    }
}

TARGET static void gemv_q8_0(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                             int cols) {
    gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 0);
}

TARGET static void gemv_q4_0(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                             int cols) {
    gemv_blocks(y, ldy, a, (const char *)w, n_w, cols, 1);
}

#include "kernels/x86/gemv_x8.h"

/* The x8 GEMV's block (gemv_x8.h): per 32-byte word k of 8 rows, the
 * activation's 4 bytes 4k..4k+3 are broadcast. q4_0: the nibbles
 * (unsigned, <= 15) times the signed activations, pairs <= 2 x 15 x 127,
 * and the 8 products of a block and lane add up in int16 (<= 30480,
 * exact); then minus 8 x the activation block's sum. q8_0: the sign moves
 * onto the activation as in dot_lanes_q8 and pairs (<= 32512) widen to
 * int32 each word. */
INLINE __m256i x8_dot(const uint8_t *qb, const int8_t *x, int32_t sum, int q4) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i lo, hi, xlo, xhi, xv;
    if (q4) {
        __m256i s16 = _mm256_setzero_si256();
        for (int k = 0; k < 4; k++) {
            x8_q4_word(qb, x, k, &lo, &hi, &xlo, &xhi);
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo, xlo));
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi, xhi));
        }
        return _mm256_sub_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(8 * sum));
    }
    __m256i p = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        __m256i w = x8_q8_word(qb, x, k, &xv);
        __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xv, w));
        p = _mm256_add_epi32(p, _mm256_madd_epi16(p16, ones));
    }
    return p;
}

/* The r64 GEMV's micro-kernel (nest_gemv_r64.h): V = g8 groups of 8
 * rows of one block, from blk (the block's first word of the first group)
 * against activation row x; lane j of acc[v] is row 8 v + j, and per
 * column pair the even column's fma comes first, so each output is the
 * scalar chain. */
INLINE void r64_rows(float *y, const float *x, const uint32_t *blk, int cols, int V) {
    const __m256i high = _mm256_set1_epi32((int)0xFFFF0000u);
    __m256 acc[HV_R64_ROWS / 8];
    for (int v = 0; v < V; v++) acc[v] = _mm256_setzero_ps();
    for (int c = 0; c < cols / 2; c++) {
        const uint32_t *p = blk + (size_t)c * HV_R64_ROWS;
        __m256 xe = _mm256_broadcast_ss(x + 2 * c), xo = _mm256_broadcast_ss(x + 2 * c + 1);
        for (int v = 0; v < V; v++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(p + 8 * v));
            acc[v] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(w, 16)), xe, acc[v]);
            acc[v] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(w, high)), xo, acc[v]);
        }
    }
    for (int v = 0; v < V; v++) _mm256_storeu_ps(y + 8 * v, acc[v]);
}

#include "kernels/nest_gemv_r64.h"

TARGET static void widen_f16(float *dst, const uint16_t *src, long count) {
    long i = 0;
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(dst + i, v8_load_half(src + i, 0));
    for (; i < count; i++) dst[i] = half1(src + i, 0);
}

TARGET static void widen_bf16(float *dst, const uint16_t *src, long count) {
    long i = 0;
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(dst + i, v8_load_half(src + i, 1));
    for (; i < count; i++) dst[i] = half1(src + i, 1);
}

/* d * q is exact in f32 (11-bit by 7-bit significands). */
TARGET static void widen_q8_0(float *dst, const hv_q8_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        __m256 d = _mm256_set1_ps(_cvtsh_ss(src[b].d));
        float *o = dst + b * HV_Q8_BLOCK;
        for (int t = 0; t < HV_Q8_BLOCK; t += 8) {
            __m128i q8 = _mm_loadl_epi64((const __m128i *)(src[b].q + t));
            __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
            _mm256_storeu_ps(o + t, _mm256_mul_ps(d, q));
        }
    }
}

/* d * (q - 8) is exact in f32. */
TARGET static void widen_q4_0(float *dst, const hv_q4_0_block *src, long count) {
    for (long b = 0; b < count / HV_Q8_BLOCK; b++) {
        __m256 d = _mm256_set1_ps(_cvtsh_ss(src[b].d));
        __m256i q = q4_bytes(&src[b]);
        float *o = dst + b * HV_Q8_BLOCK;
        __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
        _mm256_storeu_ps(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0))));
        _mm256_storeu_ps(o + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(
                                                     _mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8)))));
        _mm256_storeu_ps(o + 16, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1))));
        _mm256_storeu_ps(
            o + 24,
            _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8)))));
    }
}

/* The packed GEMM's 6 x 16 tile: 12 accumulators (two per activation row)
 * that each take one fma per column, in column order, so every output is
 * the same chain as the scalar kernel's. Per column: two weight loads, six
 * broadcasts, twelve fmas, which keeps both FMA units busy. */
INLINE void gemm_tile(int kc, const float *a, const float *b, float *c, long ldc, int accumulate) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (accumulate) {
        c00 = _mm256_loadu_ps(c), c01 = _mm256_loadu_ps(c + 8);
        c10 = _mm256_loadu_ps(c + ldc), c11 = _mm256_loadu_ps(c + ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
        c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    for (int k = 0; k < kc; k++, a += HV_GEMM_MR, b += HV_GEMM_NR) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), x;
        x = _mm256_broadcast_ss(a);
        c00 = _mm256_fmadd_ps(x, b0, c00), c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + 1);
        c10 = _mm256_fmadd_ps(x, b0, c10), c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2);
        c20 = _mm256_fmadd_ps(x, b0, c20), c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a + 3);
        c30 = _mm256_fmadd_ps(x, b0, c30), c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a + 4);
        c40 = _mm256_fmadd_ps(x, b0, c40), c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a + 5);
        c50 = _mm256_fmadd_ps(x, b0, c50), c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    _mm256_storeu_ps(c, c00), _mm256_storeu_ps(c + 8, c01);
    _mm256_storeu_ps(c + ldc, c10), _mm256_storeu_ps(c + ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

#include "kernels/nest_gemm_tiles.h"

/* 8 x 8 transpose of rows r[0..7] in place. */
INLINE void transpose8(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* The panels' micro-kernel (nest_gemm_panel.h): 8 x 8 blocks through
 * registers (f32 words moved as floats: loads, shuffles and stores keep
 * the bits). */
#define PANEL_T 8
INLINE void panel_block(float *dst, const void *src, long ld, int kind) {
    __m256 r[8];
    for (int i = 0; i < 8; i++)
        r[i] = wload8((const char *)src + i * ld * kind_bytes(kind), 0, kind);
    transpose8(r);
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + i * HV_GEMM_NR, r[i]);
}

#include "kernels/nest_gemm_panel.h"

/* HV_GEMM_MR (6) activation rows into a panel, 8 columns at a time: the
 * six rows and two zero rows transposed, each column's 6 floats stored
 * with a full vector whose last two lanes the next column's store
 * overwrites; the block's last column stores 4 + 2, so nothing past the
 * block is written (another thread may be packing the next panel). */
TARGET static void gemm_pack_x(float *dst, const float *src, long ld, int kc) {
    enum { MR = HV_GEMM_MR };
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        __m256 r[8];
        for (int i = 0; i < MR; i++) r[i] = _mm256_loadu_ps(src + i * ld + k);
        r[6] = r[7] = _mm256_setzero_ps();
        transpose8(r);
        float *d = dst + (long)k * MR;
        for (int c = 0; c < 7; c++) _mm256_storeu_ps(d + c * MR, r[c]);
        _mm_storeu_ps(d + 7 * MR, _mm256_castps256_ps128(r[7]));
        _mm_storel_pi((__m64 *)(d + 7 * MR + 4), _mm256_extractf128_ps(r[7], 1));
    }
    for (; k < kc; k++)
        for (int i = 0; i < MR; i++) dst[k * MR + i] = src[i * ld + k];
}

/* The int8 tile's micro-kernels (x86/tile_q8.h): vpmaddubsw (unsigned u
 * by signed w, pairs into int16, exact: see gemm_q8.c) then vpmaddwd by 1
 * (quads into int32), added to the sums; the empty asm after each row's
 * two steps keeps GCC from hoisting every row's products first and
 * spilling the sums. */
INLINE __m256i q8_quad(__m256i s, __m256i x, __m256i w) {
    return _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), _mm256_set1_epi16(1)));
}

INLINE void q8_order(__m256i *s0, __m256i *s1) { __asm__ volatile("" : "+x"(*s0), "+x"(*s1)); }

#include "kernels/x86/tile_q8.h"

/* Eight rows at once: a word's dot with ones (dot_lanes_q8) sums each
 * row's 4 bytes into its int32 lane, exactly; F16C widens the scales
 * exactly, as hv_f16_to_f32 does. */
TARGET static void gemm_x8_terms(const uint16_t *d, const int8_t *words, long stride, float *scale,
                                 int32_t *offset) {
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i acc = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        __m256i w = _mm256_loadu_si256((const __m256i *)(words + k * stride));
        acc = _mm256_add_epi32(acc, dot_lanes_q8(w, ones));
    }
    _mm256_storeu_si256((__m256i *)offset, _mm256_slli_epi32(acc, 6));
    _mm256_storeu_ps(scale, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d)));
}

/* The scalar quantize_q7 with vector arithmetic: the same IEEE division
 * and round-to-nearest-even per value, so the same bytes. */
/* One block rounded to `levels` steps each side (quantize_levels in
 * matmul_scalar.c, bit for bit: the same divide and round to nearest
 * even), stored as bytes q + offset. */
INLINE float quantize_block(const float *x, float levels, int8_t offset, int8_t out[HV_Q8_BLOCK]) {
    const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(INFINITY);
    __m256 v[4], amax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int t = 0; t < 4; t++) {
        v[t] = _mm256_loadu_ps(x + 8 * t);
        __m256 a = _mm256_andnot_ps(sign, v[t]);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ)); /* inf or NaN */
        amax = _mm256_max_ps(amax, a);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    int finite = _mm256_movemask_ps(bad) == 0;
    float d = finite ? _mm_cvtss_f32(m) / levels : NAN;
    if (finite && d < FLT_MIN) d = 0.0f;
    if (!(d > 0.0f)) {
        memset(out, offset, HV_Q8_BLOCK);
        return d;
    }
    __m256 vd = _mm256_set1_ps(d), hi = _mm256_set1_ps(levels), lo = _mm256_set1_ps(-levels);
    __m256i q[4];
    for (int t = 0; t < 4; t++) {
        __m256 r =
            _mm256_round_ps(_mm256_div_ps(v[t], vd), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[t] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
    }
    /* int32 -> int8 with the lanes back in order, then the offset */
    __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    w = _mm256_permutevar8x32_epi32(w, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi8(w, _mm256_set1_epi8(offset)));
    return d;
}

TARGET static float quantize_q7(const float *x, uint8_t u[HV_Q8_BLOCK]) {
    return quantize_block(x, 63.0f, 64, (int8_t *)u);
}

TARGET static float quantize_q8(const float *x, int8_t q[HV_Q8_BLOCK]) {
    return quantize_block(x, 127.0f, 0, q);
}

/* The attention's micro-kernels (nest_attn.h). */
INLINE v8 v8_set1(float x) { return _mm256_set1_ps(x); }
INLINE void v8_store(float *p, v8 v) { _mm256_storeu_ps(p, v); }

#include "kernels/nest_attn.h"

/* f16 with round to nearest even (vcvtps2ph), finite values beyond f16's
 * range clamped to +-65504 first: as hv_f32_to_f16 after the same clamp. */
TARGET static void narrow_f16(uint16_t *dst, const float *src, long count) {
    const __m256 hi = _mm256_set1_ps(65504.0f), lo = _mm256_set1_ps(-65504.0f);
    long i = 0;
    for (; i + 8 <= count; i += 8) {
        /* max/min return their second operand for a NaN first: NaN stays */
        __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_loadu_ps(src + i), lo), hi);
        __m256 x = _mm256_loadu_ps(src + i);
        v = _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < count; i++) dst[i] = hv_f32_to_f16_sat(src[i]);
}

/* sgemm_nn (matmul_impl.h) in strips of 16 columns of b and blocks of
 * NN_KC of its rows, each block of a strip copied into a contiguous panel
 * (zeros past the last column) so that its loads are sequential and
 * aligned: the values' rows otherwise lie a whole model row apart (4 KB
 * and more), all in one set of the L1 cache. */
#define NN_KC 256

/* R rows (1 to 6) of a against the panel's NP (1 or 2) vectors of 8
 * columns over kc of its rows, the last vector's lanes stored as mask
 * says; each output its fma chain over t in order, carried on from c
 * after the first block (a float stored and loaded again is the same
 * value). Tails of rows and columns keep the tile's independent chains. */
INLINE void nn_tile(int R, int NP, int kc, const float *a, long lda, const float *panel, float *c,
                    long ldc, __m256i mask, int first) {
    const __m256i all = _mm256_set1_epi32(-1);
    __m256i m0 = NP > 1 ? all : mask;
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        acc[i][0] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(c + i * ldc, m0);
        acc[i][1] =
            first || NP < 2 ? _mm256_setzero_ps() : _mm256_maskload_ps(c + i * ldc + 8, mask);
    }
    for (int t = 0; t < kc; t++) {
        __m256 w0 = _mm256_load_ps(panel + t * 16);
        __m256 w1 = NP > 1 ? _mm256_load_ps(panel + t * 16 + 8) : w0;
#pragma GCC unroll 6
        for (int i = 0; i < R; i++) {
            __m256 x = _mm256_broadcast_ss(a + i * lda + t);
            acc[i][0] = _mm256_fmadd_ps(x, w0, acc[i][0]);
            if (NP > 1) acc[i][1] = _mm256_fmadd_ps(x, w1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < R; i++) {
        _mm256_maskstore_ps(c + i * ldc, m0, acc[i][0]);
        if (NP > 1) _mm256_maskstore_ps(c + i * ldc + 8, mask, acc[i][1]);
    }
}

/* Rows in tiles of 6, the last 1 to 5 rows as one tile of their own. */
INLINE void nn_rows(int NP, int m, int kc, const float *a, long lda, const float *panel, float *c,
                    long ldc, __m256i mask, int first) {
    int i = 0;
    for (; i + 6 <= m; i += 6)
        nn_tile(6, NP, kc, a + i * lda, lda, panel, c + i * ldc, ldc, mask, first);
    a += i * lda, c += i * ldc;
    switch (m - i) {
        case 5: nn_tile(5, NP, kc, a, lda, panel, c, ldc, mask, first); break;
        case 4: nn_tile(4, NP, kc, a, lda, panel, c, ldc, mask, first); break;
        case 3: nn_tile(3, NP, kc, a, lda, panel, c, ldc, mask, first); break;
        case 2: nn_tile(2, NP, kc, a, lda, panel, c, ldc, mask, first); break;
        case 1: nn_tile(1, NP, kc, a, lda, panel, c, ldc, mask, first); break;
        default: break;
    }
}

TARGET static void sgemm_nn(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
                            float *c, long ldc) {
    _Alignas(32) float panel[NN_KC * 16];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    if (k == 0) { /* no chain: every output 0 */
        for (int i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
        return;
    }
    for (int j = 0; j < n; j += 16) {
        int cols = n - j < 16 ? n - j : 16;
        /* the last vector's lanes below the columns it holds */
        __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols > 8 ? cols - 8 : cols), lane);
        for (int t0 = 0; t0 < k; t0 += NN_KC) {
            int kc = k - t0 < NN_KC ? k - t0 : NN_KC;
            for (int t = 0; t < kc; t++) {
                const float *row = b + (long)(t0 + t) * ldb + j;
                float *p = panel + t * 16;
                if (cols == 16) {
                    _mm256_store_ps(p, _mm256_loadu_ps(row));
                    _mm256_store_ps(p + 8, _mm256_loadu_ps(row + 8));
                } else {
                    memcpy(p, row, (size_t)cols * sizeof *p);
                    memset(p + cols, 0, (size_t)(16 - cols) * sizeof *p);
                }
            }
            if (cols > 8)
                nn_rows(2, m, kc, a + t0, lda, panel, c + j, ldc, mask, t0 == 0);
            else
                nn_rows(1, m, kc, a + t0, lda, panel, c + j, ldc, mask, t0 == 0);
        }
    }
}

/* The probe (see the table): 12 independent chains of the tiles'
 * instructions on registers, FMA on 8 lanes, or the int8 route's
 * vpmaddubsw + vpmaddwd + vpaddd (32 multiply-accumulates a chain a
 * round). */
#define PI_STEP(c) _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), ones))
#define PF_STEP(c) _mm256_fmadd_ps(wf, xf, c)
TARGET static double peak_macs(long steps, int int8) {
    __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5), ones = _mm256_set1_epi16(1);
    __m256 wf = _mm256_set1_ps(0.5f), xf = _mm256_set1_ps(1e-3f);
    if (int8) HV_PROBE(12, __m256i, _mm256_setzero_si256(), PI_STEP, "+x", 32, );
    HV_PROBE(12, __m256, _mm256_setzero_ps(), PF_STEP, "+x", 8, );
}

const hv_mm_kernels hv_mm_avx2 = HV_MM_KERNEL_TABLE("avx2");

#endif
