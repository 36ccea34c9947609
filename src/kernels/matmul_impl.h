/* Private to the matmul kernels and their tests: the q8_0 block layout and
 * the per-type kernels, as a table per instruction set, so that tests can
 * run the portable and the SIMD variants side by side.
 *
 * Every kernel computes each output element in one fixed order that does
 * not depend on which rows it is given (so slicing rows over threads never
 * changes a result), and the scalar and SIMD variants use the same order
 * and the same roundings, so they agree bit for bit:
 *
 * f16/bf16 dot of a weight row w with an f32 activation row x, cols c,
 *   c16 = c & ~15, c8 = c & ~7: 16 lane sums, for k = 0, 16, ... below c16
 *   and j < 8: a[j] = fma(w[k+j], x[k+j], a[j]) and b[j] = fma(w[k+8+j],
 *   x[k+8+j], b[j]); if c8 > c16, once more a[j] = fma(w[c16+j], x[c16+j],
 *   a[j]); then a[j] += b[j]; s = ((a0+a4) + (a2+a6)) + ((a1+a5) + (a3+a7));
 *   then s = fma(w[k], x[k], s) for the tail k = c8 .. c-1.
 * q8_0 dot of a weight row with an activation row quantised to blocks of
 *   32 (f32 scale dx, int8 qx): for each block b in order, d = dw * dx
 *   (f32), and for lane j < 8, p = sum of the 4 products qw*qx at
 *   positions 4j .. 4j+3 (an exact integer), a[j] = fma(d, (float)p, a[j]);
 *   then the same sum of lanes.
 * q4_0 dot: the q8_0 dot with each weight block's q replaced by its 32
 *   values q - 8 (in [-8, 7]) in element order.
 * x8 dot (q8_0 and q4_0 in the x8 layout, 8 rows at a time): s = 0; for
 *   each block b in order, p = the exact integer dot of the block's 32
 *   values with the activation block's q, s = fma(dw * dx, (float)p, s).
 * Packed GEMM (n > HV_LINEAR_GEMV_MAX_N, gemm.c): every output element is
 *   s = 0; s = fma(x[i][k], w[j][k], s) for k = 0, 1, ..., cols - 1 in
 *   order (weights widened to f32 exactly); y = s + bias[j].
 * int8 GEMM for q8_0 and q4_0 weights (gemm_q8.c; q4_0's values q - 8):
 *   activations quantized per row
 *   and block of 32 to q in [-63, 63] with scale dx; every output is s = 0;
 *   for each block in order, p = the exact integer sum of q * qw over the
 *   block, s = fma(dw * dx, (float)p, s); then y = s + bias[j].
 * Attention rows (hv_attn_scores): s = dot(q, k row) of len floats with 8
 *   lane sums, for k = 0, 8, ... below len & ~7 and j < 8: a[j] =
 *   fma(q[k+j], r[k+j], a[j]); then the same sum of lanes, then s = fma(q[k],
 *   r[k], s) for the tail; the score is scale * s. hv_attn_context: out[j] =
 *   fma(p[i], v[i][j], out[j]) for the rows i in order, from 0 or from out.
 * Small products (sgemm_nn, the encoder's attention): c[i][j] = the fma
 *   chain over t in order of a[i][t] * b[t][j], from 0.
 * Products are fused explicitly (fmaf, _mm256_fmadd_ps) on both sides, so
 * the compiler's contraction setting cannot make them differ. */
#ifndef HV_MATMUL_IMPL_H
#define HV_MATMUL_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "kernels/matmul.h"

#define HV_Q8_BLOCK 32

/* One q8_0 weight block: 34 bytes, no padding (the layout of llama.cpp's
 * block_q8_0). A row of cols weights is cols / 32 consecutive blocks. */
typedef struct hv_q8_0_block {
    uint16_t d;            /* scale, IEEE f16 */
    int8_t q[HV_Q8_BLOCK]; /* weights / d, in [-127, 127] */
} hv_q8_0_block;

/* One q4_0 weight block: 18 bytes, no padding (llama.cpp's block_q4_0).
 * Element t < 16 is the low nibble of qs[t], element t + 16 its high
 * nibble; the value is d * (nibble - 8). */
typedef struct hv_q4_0_block {
    uint16_t d;                  /* scale, IEEE f16 (may be negative) */
    uint8_t qs[HV_Q8_BLOCK / 2]; /* nibbles */
} hv_q4_0_block;

/* A q4_0 block's 32 values q - 8, in [-8, 7], in element order. */
void hv_q4_0_values(const hv_q4_0_block *b, int8_t q[HV_Q8_BLOCK]);

/* The nibble split every q4_0 reader shares: lo[t] = (in[t] & 15) - 8 and
 * hi[t] = (in[t] >> 4) - 8 for t < n (a row block's 16 bytes, or x8 words
 * of 4 bytes). */
static inline void hv_q4_split(const uint8_t *in, int n, int8_t *lo, int8_t *hi) {
    for (int t = 0; t < n; t++) {
        lo[t] = (int8_t)((in[t] & 15) - 8);
        hi[t] = (int8_t)((in[t] >> 4) - 8);
    }
}

/* The x8 layout of a q8_0 or q4_0 matrix of rows % 8 == 0 and nb = cols /
 * 32 blocks per row: groups of 8 rows; first every scale, f16 [rows /
 * 8][nb][8] (group, block, row in the group), then every payload (a q8_0
 * block's 32 q, a q4_0 block's 16 nibble bytes qs) as 4-byte words
 * [rows / 8][nb][payload / 4][8][4]: word k of the 8 rows' block b side by
 * side, so that one 32-byte load holds 8 rows (SIMD lanes are rows), and
 * the scales are a contiguous 1/9 of the bytes (a loader checks them
 * without touching the rest). The same bytes in all as row by row. */
/* Payload bytes per block: 32 (q8_0) or 16 (q4_0). */
static inline int hv_x8_payload(hv_weight_type t) { return t == HV_WEIGHTS_Q4_0 ? 16 : 32; }

/* Where group g's scales and payloads begin in the x8 matrix W. */
static inline const uint16_t *hv_x8_scales(const hv_mat *W, int g) {
    return (const uint16_t *)W->data + (size_t)g * (W->cols / HV_Q8_BLOCK) * HV_X8_ROWS;
}
static inline const uint8_t *hv_x8_payloads(const hv_mat *W, int g) {
    size_t nb = (size_t)(W->cols / HV_Q8_BLOCK);
    return (const uint8_t *)W->data + (size_t)W->rows * nb * 2 +
           (size_t)g * nb * HV_X8_ROWS * hv_x8_payload(W->type);
}

/* The r64 layout of a bf16 matrix of rows % 64 == 0 and an even cols:
 * blocks of 64 rows, each [cols / 2][64] 32-bit words, word (c, j) the
 * weights of columns 2c (low half) and 2c + 1 (high half) of row j of the
 * block, so that one 32-byte load holds 8 rows' two columns (SIMD lanes
 * are rows, one activation broadcast serves 64 rows) and a block is one
 * stream. The same bytes in all as row by row. Row r, column k is the
 * low (k even) or high half of word hv_r64_word(cols, r, k). */
static inline size_t hv_r64_word(int cols, int r, int k) {
    return ((size_t)(r / HV_R64_ROWS) * (size_t)(cols / 2) + (size_t)(k / 2)) * HV_R64_ROWS +
           (size_t)(r % HV_R64_ROWS);
}

/* The 32 values (q8_0: q; q4_0: q - 8) of row j < 8 of one x8 block, given
 * the block's payload words (8 rows x payload bytes at pb). */
void hv_x8_values(const uint8_t *pb, int j, int q4, int8_t q[HV_Q8_BLOCK]);

/* Activations quantised for the q8_0 dot product: n rows of cols values
 * (cols % 32 == 0) as nb = cols / 32 blocks per row. */
typedef struct hv_q8_act {
    int n, nb;
    float *d;   /* [n][nb] scales, amax / 127 */
    int8_t *q;  /* [n][nb * 32] round(x / d), in [-127, 127] */
    int32_t *s; /* [n][nb] each block's sum of q (for the x8 q4_0 GEMV), or NULL */
} hv_q8_act;

/* A table's geometry: the tile and blocking sizes its micro-kernels are
 * written for, which the GEMM drivers (gemm.c, gemm_q8.c) read from the
 * table rather than from constants, so that a table for other registers
 * chooses its own (OpenBLAS's gotoblas_t carries sgemm_unroll_m/n so).
 * hv_mm_geometry_ok says what the drivers accept. */
typedef struct hv_mm_geometry {
    int mr;        /* packed GEMM: activation rows per tile and panel */
    int nr;        /* both GEMMs: weight rows per panel (a multiple of HV_X8_ROWS) */
    int kc;        /* packed GEMM: columns per packed block */
    int mc;        /* packed GEMM: activation rows per pass over a weight panel */
    int q8_mr;     /* int8 GEMM: activation rows per tile and panel */
    int q8_kc_max; /* int8 GEMM: columns per block at most (a multiple of 32) */
    int q8_mc;     /* int8 GEMM: activation rows per pass (a multiple of q8_mr) */
} hv_mm_geometry;

/* Kernels for one instruction set. The gemv kernels compute, for the
 * n_w weight rows starting at w and the n activation rows,
 *   y[i * ldy + r] = dot(w row r, activation row i)  (no bias),
 * with activation row i at x + i * cols (or row i of a). The widen kernels
 * write count f32 values (q8_0: count / 32 blocks) to dst, exactly. */
typedef struct hv_mm_kernels {
    const char *name;
    /* what the packed GEMMs' entries below (tiles, panels, packing) are
     * written for */
    hv_mm_geometry geom;
    void (*gemv_f16)(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                     int cols);
    void (*gemv_bf16)(float *y, int ldy, const float *x, int n, const uint16_t *w, int n_w,
                      int cols);
    /* f32 weights, in gemv_f16's order (hv_linear takes it for f32
     * weights where the SIMD kernels exist, instead of OpenBLAS) */
    void (*gemv_f32)(float *y, int ldy, const float *x, int n, const float *w, int n_w, int cols);
    void (*gemv_q8_0)(float *y, int ldy, const hv_q8_act *a, const hv_q8_0_block *w, int n_w,
                      int cols);
    void (*gemv_q4_0)(float *y, int ldy, const hv_q8_act *a, const hv_q4_0_block *w, int n_w,
                      int cols);
    /* The same for x8 weights (n_w % 8 == 0): the scales and payloads of
     * the first of n_w / 8 groups at wd and wq (hv_x8_scales and
     * hv_x8_payloads); q4_0 needs a->s. */
    void (*gemv_q8_0x8)(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                        const uint8_t *wq, int n_w, int cols);
    void (*gemv_q4_0x8)(float *y, int ldy, const hv_q8_act *a, const uint16_t *wd,
                        const uint8_t *wq, int n_w, int cols);
    /* The same for r64 bf16 weights w (the whole matrix), rows r0 .. r0 +
     * n_w - 1 (r0 and n_w multiples of 8): each output is one fma chain
     * over the columns in order, s = fma(w[k], x[k], s) from s = 0. */
    void (*gemv_bf16_r64)(float *y, int ldy, const float *x, int n, const uint32_t *w, int r0,
                          int n_w, int cols);
    void (*widen_f16)(float *dst, const uint16_t *src, long count);
    void (*widen_bf16)(float *dst, const uint16_t *src, long count);
    void (*widen_q8_0)(float *dst, const hv_q8_0_block *src, long count);
    void (*widen_q4_0)(float *dst, const hv_q4_0_block *src, long count);
    /* The packed GEMM's micro-kernel: count tiles of MR x NR outputs (MR =
     * geom.mr, NR = geom.nr) down the activation rows, tile t (its activation
     * panel at a + t * kc * MR, its outputs from c + t * MR * ldc) being
     * c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0) + the fma chain
     * over k < kc of a[k * MR + i] * b[k * NR + j]. (Several per call: a
     * call per tile was 1% of the encoder's samples.) */
    void (*gemm_tiles)(int count, int kc, const float *a, const float *b, float *c, long ldc,
                       int accumulate);
    /* The same over two adjacent weight panels, b and b + kc * geom.nr
     * (2 x geom.nr weight rows; outputs c[i * ldc + j], j < 2 *
     * geom.nr): the bits of gemm_tiles on each panel. NULL in tables
     * whose registers hold one panel's tile (the driver then calls
     * gemm_tiles per panel). */
    void (*gemm_tiles2)(int count, int kc, const float *a, const float *b, float *c, long ldc,
                        int accumulate);
    /* dst[k * geom.nr + r] = src[r * ld + k] for r < geom.nr, k < kc,
     * over 32-bit words moved bit for bit: geom.nr rows into one packed
     * panel, of widened f32 weights (the packed GEMM) or of 4 weight bytes
     * per word (the int8 GEMM). */
    void (*gemm_panel)(void *dst, const void *src, long ld, int kc);
    /* gemm_panel from f16 (bf16 = 0) or bf16 rows, widened on the way
     * (widen_f16 / widen_bf16's values): one pass instead of widening into
     * rows and transposing them. */
    void (*gemm_panel_half)(float *dst, const uint16_t *src, long ld, int kc, int bf16);
    /* dst[k * geom.mr + i] = src[i * ld + k] for i < geom.mr, k < kc:
     * geom.mr activation rows into one packed panel, bit for bit; it
     * writes nothing outside dst's kc * geom.mr floats. */
    void (*gemm_pack_x)(float *dst, const float *src, long ld, int kc);
    /* The int8 GEMM's micro-kernel (gemm_q8.c): count tiles of MR x NR
     * outputs (MR = geom.q8_mr, NR = geom.nr) down the activation rows, over nbk
     * blocks of 32 columns; tile t reads a + t * nbk * 32 * MR and ad + t *
     * nbk * MR and writes from c + t * MR * ldc. Per tile, a: activation
     * bytes u = q + 64 as [nbk * 8][MR][4], ad: their scales [nbk][MR]; b:
     * weight bytes [nbk * 8][NR][4], bd: their scales [nbk][NR], bc: 64 x
     * the sum of each block's weights [nbk][NR]. Per block, p = sum u * w
     * - bc, and c = fma(bd * ad, (float)p, c), from c or from 0; then, if
     * bias is not NULL, c += bias[j] (the call that ends the sum: the
     * bias added while the outputs are in registers, as after them). */
    void (*gemm_tiles_q8)(int count, int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                          const float *bd, const int32_t *bc, float *c, long ldc, int accumulate,
                          const float *bias);
    /* The same over two adjacent weight panels, the second `panel` bytes
     * after the first (its b, bd and bc each that far from the first's),
     * outputs j < 2 * geom.nr, bias (if not NULL) 2 * geom.nr
     * values: the bits of gemm_tiles_q8 on each panel. NULL where a table
     * has none. */
    void (*gemm_tiles_q8_2)(int count, int nbk, const uint8_t *a, const float *ad, const int8_t *b,
                            const float *bd, const int32_t *bc, long panel, float *c, long ldc,
                            int accumulate, const float *bias);
    /* The int8 GEMM's per-block terms of one x8 group of 8 weight rows,
     * its values already in a panel: scale[j] = the f16 scale d[j]
     * widened, and offset[j] = 64 x the sum of row j's 32 values, which lie
     * as 8 words of 4 bytes at words + k * stride + 4 j (k < 8). */
    void (*gemm_x8_terms)(const uint16_t *d, const int8_t *words, long stride, float *scale,
                          int32_t *offset);
    /* One activation block of 32 for the int8 GEMM: returns d = amax /
     * 63 and writes u[t] = 64 + rint(x[t] / d) (clamped to [-63, 63]
     * before the offset). A block with a NaN or infinity gets d = NaN and
     * u = 64 (its outputs become NaN); one whose d would be below FLT_MIN
     * gets d = 0 and u = 64. */
    float (*quantize_q7)(const float *x, uint8_t u[HV_Q8_BLOCK]);
    /* The same with 127 levels and no offset, the GEMV's activations
     * (hv_q8_act_quantize): d = amax / 127, q[t] = rint(x[t] / d) in
     * [-127, 127]; q = 0 for the blocks that quantize_q7 gives u = 64. */
    float (*quantize_q8)(const float *x, int8_t q[HV_Q8_BLOCK]);
    /* Attention over n rows of len floats, row i at k + i * ld (the key
     * and value caches): s[i] = scale * dot(q, row i); and out[j] =
     * (accumulate ? out[j] : 0) + the fma chain over i of p[i] * row i[j]. */
    void (*attn_scores)(float *s, const float *q, const float *k, long ld, int n, int len,
                        float scale);
    void (*attn_context)(float *out, const float *p, const float *v, long ld, int n, int len,
                         int accumulate);
    /* The same over f16 rows, each value widened exactly first (so the
     * results are those of the f32 kernels on the widened rows), and the
     * f16 store: dst[i] = src[i] clamped to +-65504, rounded to nearest
     * even (hv_f32_to_f16_sat; NaN stays NaN). */
    void (*attn_scores_f16)(float *s, const float *q, const uint16_t *k, long ld, int n, int len,
                            float scale);
    void (*attn_context_f16)(float *out, const float *p, const uint16_t *v, long ld, int n, int len,
                             int accumulate);
    void (*narrow_f16)(uint16_t *dst, const float *src, long count);
    /* A small single-threaded row-major product, the encoder attention's
     * (one head's scores and context): c[i * ldc + j] = the fma chain
     * over t < k, in order from 0, of a[i * lda + t] * b[t * ldb + j],
     * for i < m, j < n (c overwritten; nothing else written). */
    void (*sgemm_nn)(int m, int n, int k, const float *a, long lda, const float *b, long ldb,
                     float *c, long ldc);
    /* The arithmetic rate the table's GEMM micro-kernels can reach, for
     * hviske-bench --peak: steps rounds of their instructions on
     * registers alone (f32 FMAs at the table's vector width, int8 = 0; or
     * the int8 GEMM's, int8 = 1), with enough independent chains to fill
     * the units; returns the multiply-accumulates done. */
    double (*peak_macs)(long steps, int int8);
} hv_mm_kernels;

/* Fills a (allocated by the caller for n x cols; s too unless NULL) from
 * x[n x cols] with k's quantize_q8. Per
 * block d = amax / 127 and q = rint(x / d), so |x - d q| <= d / 2. A block
 * whose d would be subnormal (amax < 127 * FLT_MIN, ~1.5e-36) becomes
 * zeros; a block with a NaN or infinity gets d = NaN and q = 0, so that its
 * outputs become NaN. */
void hv_q8_act_quantize(const hv_mm_kernels *k, hv_q8_act *a, const float *x, int n, int cols);

/* A kernel table from static functions named after its fields. */
#define HV_MM_KERNEL_TABLE(label)                                                                  \
    {                                                                                              \
        .name = label, .geom = HV_MM_GEOMETRY, .gemv_f16 = gemv_f16, .gemv_bf16 = gemv_bf16,       \
        .gemv_f32 = gemv_f32, .gemv_q8_0 = gemv_q8_0, .gemv_q4_0 = gemv_q4_0,                      \
        .gemv_q8_0x8 = gemv_q8_0x8, .gemv_q4_0x8 = gemv_q4_0x8, .gemv_bf16_r64 = gemv_bf16_r64,    \
        .widen_f16 = widen_f16, .widen_bf16 = widen_bf16, .widen_q8_0 = widen_q8_0,                \
        .widen_q4_0 = widen_q4_0, .gemm_tiles = gemm_tiles, .gemm_panel = gemm_panel,              \
        .gemm_panel_half = gemm_panel_half, .gemm_pack_x = gemm_pack_x,                            \
        .gemm_tiles_q8 = gemm_tiles_q8, .gemm_x8_terms = gemm_x8_terms,                            \
        .quantize_q7 = quantize_q7, .quantize_q8 = quantize_q8, .attn_scores = attn_scores,        \
        .attn_context = attn_context, .attn_scores_f16 = attn_scores_f16,                          \
        .attn_context_f16 = attn_context_f16, .narrow_f16 = narrow_f16, .sgemm_nn = sgemm_nn,      \
        .peak_macs = peak_macs                                                                     \
    }

/* Every entry of hv_mm_kernels, as X(field), each a statement. */
#define HV_MM_ENTRIES(X)                                                                           \
    X(gemv_f16);                                                                                   \
    X(gemv_bf16);                                                                                  \
    X(gemv_f32);                                                                                   \
    X(gemv_q8_0);                                                                                  \
    X(gemv_q4_0);                                                                                  \
    X(gemv_q8_0x8);                                                                                \
    X(gemv_q4_0x8);                                                                                \
    X(gemv_bf16_r64);                                                                              \
    X(widen_f16);                                                                                  \
    X(widen_bf16);                                                                                 \
    X(widen_q8_0);                                                                                 \
    X(widen_q4_0);                                                                                 \
    X(gemm_tiles);                                                                                 \
    X(gemm_tiles2);                                                                                \
    X(gemm_panel);                                                                                 \
    X(gemm_panel_half);                                                                            \
    X(gemm_pack_x);                                                                                \
    X(gemm_tiles_q8);                                                                              \
    X(gemm_tiles_q8_2);                                                                            \
    X(gemm_x8_terms);                                                                              \
    X(quantize_q7);                                                                                \
    X(quantize_q8);                                                                                \
    X(attn_scores);                                                                                \
    X(attn_context);                                                                               \
    X(attn_scores_f16);                                                                            \
    X(attn_context_f16);                                                                           \
    X(narrow_f16);                                                                                 \
    X(sgemm_nn);                                                                                   \
    X(peak_macs)

/* *t = base with every entry that over has (not NULL) replaced, and over's
 * name (and geometry, where it has one): a table that is the one below it with some kernels replaced (as
 * OpenBLAS's KERNEL.SKYLAKEX includes KERNEL.HASWELL). */
static inline void hv_mm_derive(hv_mm_kernels *t, const hv_mm_kernels *base,
                                const hv_mm_kernels *over) {
    *t = *base;
    t->name = over->name;
    if (over->geom.mr) t->geom = over->geom;
#define HV_MM_OVER(f)                                                                              \
    if (over->f) t->f = over->f
    HV_MM_ENTRIES(HV_MM_OVER);
#undef HV_MM_OVER
}

/* Defines `static const hv_mm_kernels *fn(void)`: the table base (an
 * expression, read at the first call) with the entries of the designated
 * initializers that follow replaced (hv_mm_derive), made once. */
#define HV_MM_DERIVED_TABLE(fn, base, ...)                                                         \
    static hv_mm_kernels fn##_table;                                                               \
    static pthread_once_t fn##_once = PTHREAD_ONCE_INIT;                                           \
    static void fn##_make(void) {                                                                  \
        static const hv_mm_kernels over = {__VA_ARGS__};                                           \
        hv_mm_derive(&fn##_table, (base), &over);                                                  \
    }                                                                                              \
    static const hv_mm_kernels *fn(void) {                                                         \
        pthread_once(&fn##_once, fn##_make);                                                       \
        return &fn##_table;                                                                        \
    }

/* The geometry of the tables written for 16 vector registers of 8 floats
 * (AVX2; NEON's 32 of 4 keep its shapes; the portable twin's), which the
 * others start from. The packed GEMM's tile: 6 activation rows x 16
 * weight rows (12 AVX2 accumulators), and its blocking: HV_GEMM_KC columns
 * per packed block, HV_GEMM_MC activation rows per pass (MC x KC floats,
 * 96 KiB, stay in the L2 cache while each weight panel, 16 KiB, stays in
 * L1). */
#define HV_GEMM_MR        6
#define HV_GEMM_NR        16
#define HV_GEMM_KC        256
#define HV_GEMM_MC        96
/* The int8 GEMM's tile: 5 activation rows x 16 weight rows, so that its 10
 * int32 accumulators, two weight vectors, a broadcast, a product and the
 * constant fit the 16 AVX2 registers (6 rows spill). */
#define HV_GEMM_Q8_MR     5
/* ... and its blocking: the columns in equal blocks of at most this many
 * (a multiple of 32), as few as fit: each block costs the tiles a load and
 * a store of their outputs, and int8 rows are a quarter of f32's bytes;
 * activation rows per pass: whole panels within HV_GEMM_MC. */
#define HV_GEMM_Q8_KC_MAX 1536
#define HV_GEMM_Q8_MC     (HV_GEMM_MC / HV_GEMM_Q8_MR * HV_GEMM_Q8_MR)
#define HV_MM_GEOMETRY                                                                             \
    {                                                                                              \
        .mr = HV_GEMM_MR, .nr = HV_GEMM_NR, .kc = HV_GEMM_KC, .mc = HV_GEMM_MC,                    \
        .q8_mr = HV_GEMM_Q8_MR, .q8_kc_max = HV_GEMM_Q8_KC_MAX, .q8_mc = HV_GEMM_Q8_MC             \
    }
/* The largest tiles the drivers' edge buffers hold. */
#define HV_GEMM_MR_MAX 16
#define HV_GEMM_NR_MAX 64

/* Whether the drivers take geometry g: tiles within HV_GEMM_MR_MAX x
 * HV_GEMM_NR_MAX, nr a multiple of HV_X8_ROWS (x8 groups fill panels),
 * q8_kc_max a multiple of 32, and passes of whole tiles. */
int hv_mm_geometry_ok(const hv_mm_geometry *g);

/* Portable C; always available. */
extern const hv_mm_kernels hv_mm_scalar;

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HV_MM_HAVE_AVX2 1
/* The x86 tables (src/kernels/x86/), each the one below it with some
 * kernels replaced, compiled with target attributes: call them only on a
 * CPU with their features (hv_mm_tables picks them by hv_cpu_features).
 * AVX2 + FMA + F16C: */
extern const hv_mm_kernels hv_mm_avx2;
/* AVX2 with AVX-VNNI's vpdpbusd in the int8 GEMM: */
const hv_mm_kernels *hv_mm_avx_vnni(void);
/* AVX-512 F/BW/DQ/VL (vnni = 0), and with AVX512-VNNI (vnni = 1): */
const hv_mm_kernels *hv_mm_avx512(int vnni);
#endif

#if defined(__aarch64__) && defined(__GNUC__)
#define HV_MM_HAVE_NEON 1
/* The 64-bit ARM tables (src/kernels/arm/), each the one below it with
 * some kernels replaced; the ones past NEON compiled with target
 * attributes, to be called only on a CPU with their features (hv_mm_tables
 * picks them by hv_cpu_features). Advanced SIMD (every aarch64 CPU): */
extern const hv_mm_kernels hv_mm_neon;
/* NEON with the DotProd extension's sdot in the integer dot products: */
const hv_mm_kernels *hv_mm_dotprod(void);
/* dotprod with the I8MM extension's smmla in the int8 GEMM: */
const hv_mm_kernels *hv_mm_i8mm(void);
#endif

/* Every kernel table this CPU runs (hv_cpu_features: HVISKE_MAX_ISA caps
 * it), best first, the portable one last: up to max into out; returns how
 * many there are. The tests run each against the portable one. */
int hv_mm_tables(const hv_mm_kernels **out, int max);

/* The name of the table a CPU with these features (cpu.h) runs: the first
 * of "avx512_vnni", "avx512", "avx_vnni", "avx2", "i8mm", "dotprod", "neon"
 * whose features it has all of, else "scalar"; for either architecture on
 * any host (the CPU matrix test). hv_mm_best()->name is
 * hv_mm_table_for(hv_cpu_features()). */
const char *hv_mm_table_for(unsigned features);

/* The best table this CPU runs other than the portable one, or NULL (no
 * AVX2 + FMA + F16C on x86, no Advanced SIMD on ARM, another architecture,
 * or capped to portable). Chosen once. */
const hv_mm_kernels *hv_mm_simd(void);

/* The kernels hv_linear uses: hv_mm_simd() when not NULL, else scalar. */
const hv_mm_kernels *hv_mm_best(void);

/* count values of W starting at row r, column c (q8_0: c and count
 * and q4_0: c and count multiples of 32) widened to f32 at dst, exactly. */
void hv_mat_widen(const hv_mm_kernels *k, const hv_mat *W, int r, int c, long count, float *dst);

/* What happens to the outputs after the bias, chunk by chunk while they
 * are in the cache, with the same bits as the passes over all of y it
 * replaces: the activation (hv_silu or hv_relu over y), then, when residual
 * is not NULL, residual += scale * y (hv_add_scaled; residual is [n x
 * rows] like y, and y keeps the product). NULL: nothing. */
typedef enum { HV_ACT_NONE, HV_ACT_SILU, HV_ACT_RELU } hv_act;
typedef struct hv_epilogue {
    hv_act act;
    float *residual;
    float scale;
} hv_epilogue;

/* The epilogue over count outputs at y, res the matching residual
 * entries (ignored without a residual): the one code both the packed
 * GEMMs' chunks and the passes after the other products run, so that
 * their bits agree. */
void hv_epilogue_run(const hv_epilogue *ep, float *y, float *res, long count);

/* y[m][n x W[m].rows] = x . W[m]^T (+ bias[m] when not NULL) for count <=
 * HV_GEMM_MAX_OUT weight matrices of the same cols, by the packed GEMM
 * (gemm.c), for any n and weight type, spread over the pool: the
 * activations are packed once for all of them, the weights one block at a
 * time as they are widened; then the epilogue ep (NULL: none; with a
 * residual, count must be 1). Returns -1, having done nothing, when its
 * buffers cannot be had, the shapes do not match or k's geometry is not
 * one the drivers take (hv_mm_geometry_ok). */
#define HV_GEMM_MAX_OUT 4
int hv_gemm_weights(const hv_mm_kernels *k, hv_pool *pool, int n, const float *x, int count,
                    const hv_mat *const *W, const float *const *bias, float *const *y,
                    const hv_epilogue *ep);

/* The products of one packed-GEMM call (gemm.c, gemm_q8.c; also of one
 * hv_linear or GEMV hv_linear_many call, matmul.c) and their split into
 * task chunks of weight rows: chunks are numbered across the products, so
 * the tasks of all of them share one counter. */
typedef struct hv_gemm_outs {
    struct {
        const hv_mat *W;
        const float *bias;
        float *y;
        int chunk;       /* weight rows per chunk (hv_gemm_chunk_rows) */
        int first_chunk; /* number of its first chunk */
        int split, fine; /* from row split on, chunks of fine rows */
    } out[HV_GEMM_MAX_OUT];
    int n_out, n_chunks, max_chunk, cols;
    hv_epilogue ep;  /* hv_gemm_outs_finish applies it after the bias */
    int bias_done;   /* the tiles added the bias (gemm_q8.c), finish does not */
    atomic_int next; /* the next chunk to hand out */
} hv_gemm_outs;

/* Fills o for count (1..HV_GEMM_MAX_OUT) products, each in chunks of
 * chunk_rows(W[m]) rows (the packed GEMMs: hv_gemm_chunk_rows; the GEMV
 * kernels' own for the decoder's hv_linear_many); -1 when the count is out
 * of range or the matrices' column counts differ. */
int hv_gemm_outs_init(hv_gemm_outs *o, int count, const hv_mat *const *W, const float *const *bias,
                      float *const *y, int (*chunk_rows)(const hv_mat *W), const hv_epilogue *ep);

/* Cuts the last product's last chunks, one per thread (threads: the
 * pool's size), into quarters (o as hv_gemm_outs_init left it, before any
 * is taken), so that the threads end a call within a small chunk of each
 * other rather than a large one, and a product of fewer chunks than
 * threads keeps more of them busy. Nothing for one thread. Any split of
 * the rows gives the same results. */
void hv_gemm_outs_taper(hv_gemm_outs *o, int threads);

/* Takes the next chunk (any thread): its product m and weight rows
 * [r0, r1); 0 when none is left. */
int hv_gemm_outs_next(hv_gemm_outs *o, int *m, int *r0, int *r1);

/* Finishes rows [r0, r1) of product m's outputs for activation rows
 * [i0, i1): adds its bias (if any, and not bias_done), then the
 * epilogue. The int8 GEMM calls it pass by pass, while a pass's outputs
 * are still in cache; the others once per chunk. */
void hv_gemm_outs_finish(const hv_gemm_outs *o, int m, int i0, int i1, int r0, int r1);

/* The same, with the outputs taken from src (row i at src + (i - i0) *
 * ld, column r at r - r0) instead of from y: y = src + bias, then the
 * epilogue, the same bits as copying src into y and finishing there. */
void hv_gemm_outs_finish_from(const hv_gemm_outs *o, int m, int i0, int i1, int r0, int r1,
                              const float *src, long ld);

/* hv_gemm_weights for q8_0 and q4_0 weights through the int8 GEMM
 * (gemm_q8.c), on a pool (not NULL); hv_gemm_weights calls it when every
 * W[m] is one of them. */
int hv_gemm_q8(const hv_mm_kernels *k, hv_pool *pool, int n, const float *x, int count,
               const hv_mat *const *W, const float *const *bias, float *const *y,
               const hv_epilogue *ep);

/* Weight rows per task chunk of the packed GEMMs: a multiple of
 * HV_GEMM_NR that depends on the shape only. */
int hv_gemm_chunk_rows(const hv_mat *W);

/* hv_linear with a given kernel table (tests run the whole driver, with
 * threads and tiles, on each table). */
void hv_linear_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                    const hv_mat *W, const float *bias);

/* hv_linear_silu with a given kernel table. */
void hv_linear_silu_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                         const hv_mat *W, const float *bias);

/* hv_linear then the epilogue ep (NULL: none), with a given kernel table:
 * hv_linear_relu and hv_linear_add are this with hv_mm_best(). */
void hv_linear_ep_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                       const hv_mat *W, const float *bias, const hv_epilogue *ep);

#endif
