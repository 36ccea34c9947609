/* Matrix products. Weights are row-major [rows = out][cols = in], as
 * PyTorch stores Linear weights; activations are row-major [n][features].
 * The weight type is a tag so that reduced-precision weights slot in. */
#ifndef HV_MATMUL_H
#define HV_MATMUL_H

#include "kernels/threads.h"

typedef enum hv_wtype { HV_W_F32 = 0 } hv_wtype;

typedef struct hv_mat {
    hv_wtype type;
    int rows;           /* output features */
    int cols;           /* input features */
    const void *data;   /* rows x cols elements of `type` */
} hv_mat;

/* y[n x W.rows] = x[n x W.cols] . W^T (+ bias[W.rows] when not NULL). */
void hv_linear(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
               const float *bias);

/* C[m x n] = alpha * A[m x k] . op(B) + beta * C, row-major, with leading
 * dimensions; op(B) = B^T when trans_b (B is n x k), else B (k x n).
 * Single-threaded: callers parallelise over independent products. */
void hv_gemm(int m, int n, int k, float alpha, const float *A, int lda,
             const float *B, int ldb, int trans_b, float beta, float *C,
             int ldc);

#endif
