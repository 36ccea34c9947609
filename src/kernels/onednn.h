/* oneDNN (Debian's libdnnl, 2.x C API) as a matrix engine behind our own
 * GEMM interface: every call into the library is in onednn.c, so that the
 * rest of the engine does not know which library ran a product.
 *
 * A hv_onednn holds one engine and a cache of matmul primitives, one per
 * shape class (activation rows rounded up to hv_onednn_rows_class, columns,
 * weight rows of a task chunk), created on first use and kept until the
 * object is freed; the model owns it, and any number of contexts may run
 * products through it at once. The cache is a hash table that a lookup
 * reads without a lock (making a primitive takes one). Each call runs on
 * an execution context of the engine's: a stream, a scratchpad buffer kept
 * at its largest size and the memory objects of the primitives it ran
 * last (their data pointers set per call), taken from the engine's idle
 * list for the call and given back after it, made when every one is in
 * use, so there are as many as calls have ever run at once; all freed
 * with the engine. Weights are read where they are mapped:
 * a row-major [rows][cols] matrix is oneDNN's `ba` layout of the K x N
 * weights, so nothing is copied or reordered.
 *
 * Threads: the products run on the pool's threads, each chunk of weight
 * rows one single-threaded oneDNN call (OpenMP held to one thread on the
 * calling thread while it runs), so that the pool's size bounds all the
 * work and no OpenMP team is ever started to spin between products.
 *
 * A product's bias is part of its primitive (oneDNN adds it to the f32
 * sums), so the pass after a chunk only copies it out of the task's buffer
 * and applies the activation and the residual.
 *
 * Built without oneDNN (HV_HAVE_ONEDNN undefined), hv_onednn_new returns
 * NULL and the others report that nothing applies. */
#ifndef HV_ONEDNN_H
#define HV_ONEDNN_H

#include "kernels/matmul_impl.h"
#include "kernels/profile.h"

typedef struct hv_onednn hv_onednn;

/* 1 when oneDNN is compiled in. */
int hv_onednn_compiled(void);

/* 1 when oneDNN is compiled in and the instruction set it will use (the
 * CPU's, or less under ONEDNN_MAX_CPU_ISA) multiplies bf16 natively:
 * AVX512_CORE_BF16 or AMX. */
int hv_onednn_native_bf16(void);

/* A new engine for products of bf16 activations with bf16 weights (bf16 =
 * 1) or of f32 with f32 (bf16 = 0); NULL when oneDNN is not compiled in,
 * or out of memory. */
hv_onednn *hv_onednn_new(int bf16);
void hv_onednn_free(hv_onednn *d); /* NULL is allowed */

/* The activation rows a product of n rows is padded to, its shape class
 * in the primitives' key: a multiple of 16 up to 512 rows, then 16
 * classes per doubling (at most 1/16 padding); 0 for n < 1 or without
 * oneDNN. */
int hv_onednn_rows_class(int n);

/* How many primitives d has made and keeps (refused shapes not counted);
 * 0 for NULL. For the tests: whether products went through oneDNN. */
int hv_onednn_primitives(hv_onednn *d);

/* Whether d multiplies bf16 (1) or f32 (0) data. */
int hv_onednn_is_bf16(const hv_onednn *d);

/* Whether d takes W: the weight type it was made for, row-major (not
 * r64). */
int hv_onednn_takes(const hv_onednn *d, const hv_mat *W);

/* The name of the implementation oneDNN picks for an [n x cols] . [cols x
 * rows] product as hv_onednn_gemm runs it (n rounded up to its class, the
 * first task chunk of rows: a primitive of the shape that runs)
 * ("brg:avx512_core_amx_bf16", "gemm:jit", ...), in buf (always
 * NUL-terminated); -1 when it has none. */
int hv_onednn_impl(const hv_onednn *d, int n, int cols, int rows, char *buf, size_t size);

/* Whether the products of a task chunk of rows weight rows with n
 * activation rows of cols take their bias inside the oneDNN primitive (a
 * primitive with a bias exists for the shape class; it is made and cached
 * if missing). For the tests: hv_onednn_gemm falls back to adding the
 * biases after the products where it is 0. */
int hv_onednn_fuses_bias(hv_onednn *d, int n, int cols, int rows);

/* hv_gemm_weights through oneDNN: y[m] = x[n x cols] . W[m]^T (+ bias[m])
 * for count <= HV_GEMM_MAX_OUT matrices of the same cols that d takes,
 * then the epilogue ep (NULL: none; with a residual, count 1), spread over
 * the pool (not NULL). A bf16 engine rounds x to bf16 (nearest even, as
 * hv_f32_to_bf16) and accumulates in f32; the biases are added to the f32
 * sums by the primitives themselves (a bias memory argument), the
 * activation and residual after, per task chunk. Results do not depend on the
 * pool's size beyond the order oneDNN sums in, which its kernels choose.
 * prof: NULL, or where the activations' conversion is timed (profile.h).
 * Returns -1, having done nothing, when it does not apply or a primitive
 * or buffer cannot be had. */
int hv_onednn_gemm(hv_onednn *d, hv_pool *pool, int n, const float *x, int count,
                   const hv_mat *const *W, const float *const *bias, float *const *y,
                   const hv_epilogue *ep, hv_profile *prof);

/* Where a product's activation rows come from when they are not an f32
 * matrix: fill(arg, task, bits, dst, i0, i1) writes rows [i0, i1) (each
 * cols wide, row i0 at dst) as bf16 bits when bits, else as floats, from
 * pool task `task` (whose scratch slot it may use); its time goes to the
 * profile's stage `stage`. Or, with ready not NULL (fill unused), the
 * rows are there already as the primitive reads them: [rows_class(n) x
 * cols] in the engine's type, the rows past n zero (a producer's sink
 * wrote them, engine.c's feed-forward). */
typedef struct hv_onednn_rows {
    void (*fill)(void *arg, int task, int bits, void *dst, int i0, int i1);
    void *arg;
    hv_stage stage;
    const void *ready;
} hv_onednn_rows;

/* hv_onednn_gemm with the activations' n rows written by rows->fill
 * straight into the primitive's input (a producer fused with the
 * conversion: the LayerNorm before a product, engine.c), as bf16 values
 * or floats: the results of hv_onednn_gemm on the rows fill computes. */
int hv_onednn_gemm_rows(hv_onednn *d, hv_pool *pool, int n, const hv_onednn_rows *rows, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y,
                        const hv_epilogue *ep, hv_profile *prof);

/* Where a product's outputs go when they are not f32 matrices:
 * put(arg, m, i0, i1, r0, r1, src, ld) gets product m's f32 outputs of
 * activation rows [i0, i1) and weight rows [r0, r1), bias added (row i at
 * src + (i - i0) * ld, column r at r - r0), from the pool task that
 * computed them; the chunks of weight rows are disjoint, and every output
 * comes exactly once. */
typedef struct hv_onednn_sink {
    void (*put)(void *arg, int m, int i0, int i1, int r0, int r1, const float *src, long ld);
    void *arg;
} hv_onednn_sink;

/* hv_onednn_gemm of x's rows, or hv_onednn_gemm_rows of rows' when rows
 * is not NULL, with the outputs handed to sink instead of written to
 * matrices (a consumer fused with the products: the attention's operands
 * written as bf16 in the heads' layout, attention.c), without an
 * epilogue: the same sums. */
int hv_onednn_gemm_sink(hv_onednn *d, hv_pool *pool, int n, const float *x,
                        const hv_onednn_rows *rows, int count, const hv_mat *const *W,
                        const float *const *bias, const hv_onednn_sink *sink, hv_profile *prof);

/* The attention's per-head products: C[m x n] = A[m x k] . op(B), op(B) =
 * B^T when b_trans (B is [n][k], rows ldb apart), else B ([k][n], rows ldb
 * apart); A's rows lda apart, C's ldc. The elements of A and B are bf16
 * bits (uint16_t) for a bf16 engine, floats for an f32 one; the sums are
 * f32 and C is f32. One single-threaded oneDNN call on the calling thread
 * (OpenMP held to one thread meanwhile), with the primitive of its exact
 * shape and strides cached in d like the weight products' (callers round
 * their shapes up to classes and zero the padding). Returns 0 when oneDNN
 * ran it; 1 when it had no primitive or could not run it, and plain loops
 * computed the same sums in another order; -1, having done nothing, for a
 * NULL engine or a bad shape. */
int hv_onednn_matmul(hv_onednn *d, int m, int n, int k, const void *a, long lda, const void *b,
                     long ldb, int b_trans, float *c, long ldc);

#endif
