/* Matrix products through OpenBLAS. Threads come from our own pool: each
 * task multiplies a slice of the weight's output rows, and OpenBLAS itself
 * runs single-threaded so that its threads never compete with ours and
 * concurrent contexts stay independent. */
#include "kernels/matmul.h"

#include <cblas.h>
#include <pthread.h>

/* Provided by OpenBLAS; declared here since cblas.h variants differ. */
void openblas_set_num_threads(int num_threads);

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_threaded(void) { openblas_set_num_threads(1); }

void hv_gemm(int m, int n, int k, float alpha, const float *A, int lda,
             const float *B, int ldb, int trans_b, float beta, float *C,
             int ldc) {
    pthread_once(&blas_once, blas_single_threaded);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

typedef struct linear_job {
    float *y;
    const float *x;
    int n;
    const hv_mat *W;
    const float *bias;
} linear_job;

/* Output rows in slices of a multiple of 16 so tasks write whole cache
 * lines. */
static void linear_task(void *arg, int task, int n_tasks) {
    const linear_job *j = arg;
    int rows = j->W->rows, cols = j->W->cols;
    int per = (rows + n_tasks - 1) / n_tasks;
    per = (per + 15) & ~15;
    int r0 = task * per, r1 = r0 + per < rows ? r0 + per : rows;
    if (r0 >= r1) return;
    const float *w = (const float *)j->W->data + (long)r0 * cols;
    if (j->n == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, r1 - r0, cols, 1.0f, w, cols,
                    j->x, 1, 0.0f, j->y + r0, 1);
    } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, r1 - r0,
                    cols, 1.0f, j->x, cols, w, cols, 0.0f, j->y + r0, rows);
    }
    if (j->bias)
        for (int i = 0; i < j->n; i++) {
            float *yi = j->y + (long)i * rows;
            for (int r = r0; r < r1; r++) yi[r] += j->bias[r];
        }
}

void hv_linear(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
               const float *bias) {
    pthread_once(&blas_once, blas_single_threaded);
    linear_job job = {y, x, n, W, bias};
    double flops = 2.0 * n * W->rows * W->cols;
    int tasks = hv_pool_size(pool);
    if (flops < 2e5 || W->rows < 32) tasks = 1;
    hv_pool_run(pool, tasks, linear_task, &job);
}
