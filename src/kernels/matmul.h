/* Matrix products. Weights are row-major [rows = out][cols = in], as
 * PyTorch stores Linear weights; activations are row-major [n][features].
 * A weight is stored as f32 or in a reduced-precision type (docs/KERNELS.md
 * has the formats, the kernels and measured speeds):
 *
 *   HV_WEIGHTS_F32   4 bytes/weight.
 *   HV_WEIGHTS_F16   IEEE binary16, 2 bytes/weight.
 *   HV_WEIGHTS_BF16  bfloat16 (the top half of an f32), 2 bytes/weight.
 *   HV_WEIGHTS_Q8_0  each row in blocks of 32 consecutive weights, one f16
 *                    scale d per block and 32 int8 q in [-127, 127]:
 *                    w = d * q. 34 bytes per 32 weights (8.5 bits/weight);
 *                    cols % 32 == 0.
 *   HV_WEIGHTS_Q4_0  blocks of 32 with one f16 scale d (which may be
 *                    negative) and 32 4-bit q in [0, 15]: w = d * (q - 8).
 *                    18 bytes per 32 weights (4.5 bits/weight);
 *                    cols % 32 == 0.
 * The types are the public hv_weight_type; HV_WEIGHTS_AUTO is a choice at
 * load time, never the type of a matrix. q8_0 and q4_0 matrices come in two
 * layouts of the same bytes: row by row (each row's blocks in turn), or
 * interleaved by 8 rows with all scales first ("x8", matmul_impl.h), which
 * the decoder's GEMV reads 8 rows at a time and a loader checks by reading
 * the scales alone. */
#ifndef HV_MATMUL_H
#define HV_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/threads.h"
#include "util/error.h"

/* One past the last hv_weight_type. */
#define HV_N_WEIGHT_TYPES (HV_WEIGHTS_Q4_0 + 1)

typedef struct hv_mat {
    hv_weight_type type; /* never HV_WEIGHTS_AUTO */
    int rows;            /* output features */
    int cols;            /* input features */
    const void *data;    /* rows x cols weights of `type`, laid out as x8 says */
    int x8;              /* q8_0/q4_0 only: 1 = interleaved by 8 rows (rows %
                          * 8 == 0, matmul_impl.h), 0 = row by row */
    int r64;             /* bf16 only: 1 = interleaved by 64 rows (rows % 64
                          * == 0, cols % 2 == 0, matmul_impl.h), 0 = row by row */
} hv_mat;

/* Rows per group of the x8 layout. */
#define HV_X8_ROWS  8
/* Rows per block of the r64 layout. */
#define HV_R64_ROWS 64

/* The names hv_weight_type_parse reads, by type: "auto", "f32", "f16",
 * "bf16", "q8_0", "q4_0". */
extern const char *const hv_weight_type_names[HV_N_WEIGHT_TYPES];

/* hv_weight_type_names[type], or "?" for a value outside the enum. */
const char *hv_weight_type_name(hv_weight_type type);

/* Bytes that m->data spans for m's type and shape. */
size_t hv_mat_bytes(const hv_mat *m);

/* Converts the row-major [rows x cols] f32 matrix src to `type` in a new
 * buffer: *storage receives it (64-byte aligned; the caller frees it with
 * free()) and m describes it (m->data == *storage). f16 and bf16 round to
 * nearest, ties to even; q8_0 takes per block d = amax / 127 rounded up to
 * the next f16 (so |q| <= 127 without clipping) and q = round(w / d), an
 * error of at most d / 2 per weight. q4_0: with m the block's value of
 * largest magnitude and o the largest magnitude among the values of the
 * other sign, |d| = max(|m| / 8, o / 7) rounded up to the next f16, with
 * the sign opposite to m's, and q - 8 = round(w / d): m maps to -8, every
 * value into [-8, 7] without clipping, each off by at most |d| / 2 (a
 * block of one sign uses all 16 levels). HV_WEIGHTS_F32 copies.
 * Returns HV_ERR_UNSUPPORTED, with *storage NULL and m untouched, when the
 * matrix cannot be held in `type` and should stay f32: q8_0 or q4_0 with
 * cols not a multiple of 32, a q8_0 or q4_0 block with a non-finite weight or with amax too
 * large for an f16 scale (> ~8.3e6), or a finite weight that would become
 * infinite in f16/bf16 (|w| >= 65520 in f16). HV_ERR_INVALID_ARG for
 * rows or cols < 1 or a type that is not a matrix's (HV_WEIGHTS_AUTO),
 * HV_ERR_NOMEM when out of memory. */
hv_status hv_mat_from_f32(hv_mat *m, hv_weight_type type, const float *src, int rows, int cols,
                          void **storage, hv_error *e);

/* Converts the row-by-row q8_0 or q4_0 matrix *m to the x8 layout in a
 * new buffer: *storage receives it (64-byte aligned, freed by the caller
 * with free()) and *m describes it; the old buffer is the caller's. Same
 * values, same bytes in all. HV_ERR_UNSUPPORTED (m untouched) for another
 * type, rows % 8 != 0 or a matrix already x8; HV_ERR_NOMEM. */
hv_status hv_mat_interleave(hv_mat *m, void **storage, hv_error *e);

/* Copies the row-major bf16 matrix *m into the r64 layout (matmul_impl.h)
 * in a new buffer: *storage receives it (64-byte aligned, freed by the
 * caller with free()) and *m describes it; the old buffer is the caller's.
 * The decoder's GEMV reads it at the memory's rate (docs/KERNELS.md).
 * The blocks are copied over pool's threads (NULL: the caller's alone).
 * HV_ERR_UNSUPPORTED (m untouched) for another type or layout, rows % 64
 * != 0 or an odd cols (hv_mat_can_r64); HV_ERR_NOMEM. */
hv_status hv_mat_interleave_r64(hv_mat *m, void **storage, hv_pool *pool, hv_error *e);

/* Widens the q8_0 or q4_0 matrix *m (either layout) into a new row-major
 * bf16 matrix [rows][cols]: each value d * q (exact in f32) rounded to
 * bf16, nearest, ties to even (hv_f32_to_bf16), so that bf16 engines take
 * it as they take a checkpoint's bf16 weights. *storage receives the
 * buffer (64-byte aligned, freed by the caller with free()) and *m
 * describes it; the old buffer is the caller's. Rows are widened over
 * pool's threads (NULL: the caller's alone). HV_ERR_UNSUPPORTED (m
 * untouched) for another type; HV_ERR_NOMEM. */
hv_status hv_mat_widen_bf16(hv_mat *m, void **storage, hv_pool *pool, hv_error *e);

/* Whether hv_mat_interleave_r64 takes m: row-major bf16, rows % 64 == 0,
 * an even cols. */
int hv_mat_can_r64(const hv_mat *m);

/* Writes row `row` of m, widened to f32 (exactly: every stored value is
 * representable), into dst[m->cols]: an embedding lookup in any type. */
void hv_mat_row_f32(const hv_mat *m, int row, float *dst);

/* Our kernel tables' products, in f32 compute: the engine behind
 * engine.h's hv_eng_linear that the model's stages call (which also
 * chooses oneDNN and stages bf16 activations); the tests and benchmarks
 * call these directly.
 * y[n x W.rows] = x[n x W.cols] . W^T (+ bias[W.rows] when not NULL).
 * - n <= HV_LINEAR_GEMV_MAX_N (decoder steps, beams, short prompts): f32
 *   weights go to OpenBLAS (sgemv/sgemm); the other types to a kernel that
 *   streams the weights once and widens them on the fly; for q8_0 it
 *   quantises x to int8 blocks of 32 (one f32 scale each) and uses integer
 *   dot products, which adds activation-rounding error; q4_0 likewise;
 * - larger n (encoder, cross-attention keys/values): the packed GEMM
 *   (gemm.c), f32, f16 and bf16 weights widened exactly to f32 as they are
 *   packed, so the result is that of f32 weights equal to the stored ones;
 *   q8_0 and q4_0 through its int8 twin (gemm_q8.c), which rounds x to 7
 *   bits per block of 32; on a CPU without the SIMD kernels, OpenBLAS
 *   sgemm instead (widened tiles for the reduced types).
 * Every output element is computed the same way whatever the number of
 * threads, so results do not depend on the pool size. The best kernel
 * table the CPU has is used (detected at run time: AVX2+FMA+F16C up to
 * AVX-512 VNNI on x86, NEON up to i8mm on 64-bit ARM); the portable
 * fallback gives bit-identical results. */
#define HV_LINEAR_GEMV_MAX_N 16
void hv_linear(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W, const float *bias);

/* hv_linear followed by SiLU over y (hv_silu), the same bits: with many
 * rows the SiLU is applied to each task's chunk of outputs as it is
 * finished, while it is in the cache (the encoder's feed-forward). */
void hv_linear_silu(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
                    const float *bias);

/* hv_linear followed by ReLU over y (hv_relu), the same bits, likewise
 * applied chunk by chunk with many rows. */
void hv_linear_relu(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
                    const float *bias);

/* A residual branch's output projection: y = x . W^T + bias (as hv_linear;
 * y keeps it), then res[n x W.rows] += scale * y, the same bits as
 * hv_add_scaled(res, y, n * W.rows, scale) after hv_linear. With many rows
 * each chunk is added while it is in the cache. */
void hv_linear_add(hv_pool *pool, float *res, float *y, const float *x, int n, const hv_mat *W,
                   const float *bias, float scale);

/* hv_linear for count products of the same input x [n x cols]: y[m] =
 * x . W[m]^T + bias[m] (bias[m] may be NULL), each exactly as hv_linear
 * computes it; with many rows x is packed once for all of them and their
 * chunks share the threads (the attention's query, key and value); with
 * few rows (decoder steps) and weights other than f32 all their chunks
 * take one dispatch of the pool (x quantized once for q8_0/q4_0). */
void hv_linear_many(hv_pool *pool, int n, const float *x, int count, const hv_mat *const *W,
                    const float *const *bias, float *const *y);

/* One query's attention over n cached rows of len values, row i at
 * element i * ld of k (a head's slice of the key cache), the values f32
 * (half = 0) or f16 (half = 1, widened exactly): s[i] = scale * (q . row
 * i). And the context: out[j] = (accumulate ? out[j] : 0) + sum over i of
 * p[i] * row i of v [j]. For the decoder's one-row steps, where a BLAS call
 * per cache block costs more than its arithmetic; single-threaded, SIMD
 * when the CPU has it, bit-identical either way, and f16 rows give the
 * bits of f32 rows holding the same values. hv_narrow_f16 stores such
 * rows: dst[i] = src[i] as f16, rounded to nearest even, finite values
 * beyond f16's range clamped to +-65504. */
void hv_attn_scores(float *s, const float *q, const void *k, int half, long ld, int n, int len,
                    float scale);
void hv_attn_context(float *out, const float *p, const void *v, int half, long ld, int n, int len,
                     int accumulate);
void hv_narrow_f16(uint16_t *dst, const float *src, long count);

/* C[m x n] = alpha * A[m x k] . op(B) + beta * C, row-major, with leading
 * dimensions; op(B) = B^T when trans_b (B is n x k), else B (k x n).
 * Single-threaded: callers parallelise over independent products. */
void hv_gemm(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
             int trans_b, float beta, float *C, int ldc);

#endif
