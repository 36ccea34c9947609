/* Matrix products: the f32 path through OpenBLAS, conversions to the
 * reduced-precision weight types, and the driver that runs their kernels
 * (matmul_scalar.c, x86/matmul_*.c, arm/matmul_*.c) over the thread pool.
 *
 * Threads come from our own pool and OpenBLAS itself runs single-threaded,
 * so that its threads never compete with ours and concurrent contexts stay
 * independent. */
#include "kernels/matmul.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/half.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"

/* Provided by OpenBLAS; declared here since cblas.h variants differ. */
void openblas_set_num_threads(int num_threads);

#ifndef HV_GEMM_F32_BLAS
#define HV_GEMM_F32_BLAS 0
#endif

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_single_threaded(void) { openblas_set_num_threads(1); }

void hv_gemm(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
             int trans_b, float beta, float *C, int ldc) {
    pthread_once(&blas_once, blas_single_threaded);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, A,
                lda, B, ldb, beta, C, ldc);
}

void hv_attn_scores(float *s, const float *q, const void *k, int half, long ld, int n, int len,
                    float scale) {
    const hv_mm_kernels *t = hv_mm_best();
    if (half)
        t->attn_scores_f16(s, q, k, ld, n, len, scale);
    else
        t->attn_scores(s, q, k, ld, n, len, scale);
}

void hv_attn_context(float *out, const float *p, const void *v, int half, long ld, int n, int len,
                     int accumulate) {
    const hv_mm_kernels *t = hv_mm_best();
    if (half)
        t->attn_context_f16(out, p, v, ld, n, len, accumulate);
    else
        t->attn_context(out, p, v, ld, n, len, accumulate);
}

void hv_narrow_f16(uint16_t *dst, const float *src, long count) {
    hv_mm_best()->narrow_f16(dst, src, count);
}

/* ------------------------------------------------------------ types */

const char *const hv_weight_type_names[HV_N_WEIGHT_TYPES] = {
    [HV_WEIGHTS_AUTO] = "auto", [HV_WEIGHTS_F32] = "f32",   [HV_WEIGHTS_F16] = "f16",
    [HV_WEIGHTS_BF16] = "bf16", [HV_WEIGHTS_Q8_0] = "q8_0", [HV_WEIGHTS_Q4_0] = "q4_0"};

const char *hv_weight_type_name(hv_weight_type type) {
    return (int)type >= 0 && (int)type < HV_N_WEIGHT_TYPES ? hv_weight_type_names[type] : "?";
}

/* Bytes of one row of cols weights. */
static size_t row_bytes(hv_weight_type type, int cols) {
    switch (type) {
        case HV_WEIGHTS_AUTO: break; /* not a matrix's type */
        case HV_WEIGHTS_F32: return (size_t)cols * 4;
        case HV_WEIGHTS_F16:
        case HV_WEIGHTS_BF16: return (size_t)cols * 2;
        case HV_WEIGHTS_Q8_0: return (size_t)(cols / HV_Q8_BLOCK) * sizeof(hv_q8_0_block);
        case HV_WEIGHTS_Q4_0: return (size_t)(cols / HV_Q8_BLOCK) * sizeof(hv_q4_0_block);
    }
    return 0;
}

size_t hv_mat_bytes(const hv_mat *m) {
    return m->rows > 0 && m->cols > 0 ? (size_t)m->rows * row_bytes(m->type, m->cols) : 0;
}

/* One q8_0 block from 32 values. The scale is amax / 127 rounded up to an
 * f16, so that |v / d| <= 127: no value is clipped and each is off by at
 * most d / 2. Returns 0, or -1 for a non-finite value or a scale beyond
 * f16's range. */
static int quantize_block(hv_q8_0_block *blk, const float *v) {
    float amax = 0.0f;
    for (int t = 0; t < HV_Q8_BLOCK; t++) {
        if (!isfinite(v[t])) return -1;
        if (fabsf(v[t]) > amax) amax = fabsf(v[t]);
    }
    float d = amax / 127.0f;
    uint16_t h = hv_f32_to_f16(d);
    if (hv_f16_to_f32(h) < d) h++; /* next f16 up (d >= 0: no sign bit) */
    if (h >= 0x7c00) return -1;
    float dd = hv_f16_to_f32(h);
    blk->d = h;
    for (int t = 0; t < HV_Q8_BLOCK; t++) {
        float q = dd > 0.0f ? rintf(v[t] / dd) : 0.0f;
        blk->q[t] = (int8_t)(q > 127.0f ? 127 : q < -127.0f ? -127 : q);
    }
    return 0;
}

/* One q4_0 block from 32 values (matmul.h has the rule): the value m of
 * largest magnitude maps to -8 and every other value into [-8, 7], so none
 * is clipped and each is off by at most |d| / 2. Returns 0, or -1 for a
 * non-finite value or a scale beyond f16's range. */
static int quantize_block_q4(hv_q4_0_block *blk, const float *v) {
    float m = 0.0f;
    for (int t = 0; t < HV_Q8_BLOCK; t++) {
        if (!isfinite(v[t])) return -1;
        if (fabsf(v[t]) > fabsf(m)) m = v[t];
    }
    float o = 0.0f; /* largest magnitude of the other sign */
    for (int t = 0; t < HV_Q8_BLOCK; t++)
        if ((m > 0.0f && v[t] < 0.0f) || (m < 0.0f && v[t] > 0.0f))
            if (fabsf(v[t]) > o) o = fabsf(v[t]);
    float mag = fabsf(m) / 8.0f;
    if (o / 7.0f > mag) mag = o / 7.0f;
    uint16_t h = hv_f32_to_f16(mag);
    if (hv_f16_to_f32(h) < mag) h++; /* next f16 up */
    if (h >= 0x7c00) return -1;
    if (m > 0.0f) h |= 0x8000; /* d's sign is opposite to m's */
    float dd = hv_f16_to_f32(h);
    blk->d = h;
    for (int t = 0; t < HV_Q8_BLOCK / 2; t++) {
        int q[2];
        for (int s = 0; s < 2; s++) {
            float r = dd != 0.0f ? rintf(v[t + 16 * s] / dd) : 0.0f;
            q[s] = (int)(r > 7.0f ? 7.0f : r < -8.0f ? -8.0f : r) + 8;
        }
        blk->qs[t] = (uint8_t)(q[0] | q[1] << 4);
    }
    return 0;
}

hv_status hv_mat_from_f32(hv_mat *m, hv_weight_type type, const float *src, int rows, int cols,
                          void **storage, hv_error *e) {
    *storage = NULL;
    if (rows < 1 || cols < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "matrix %dx%d: empty", rows, cols);
    if ((int)type < HV_WEIGHTS_F32 || (int)type >= HV_N_WEIGHT_TYPES)
        return hv_err(e, HV_ERR_INVALID_ARG, "weight type %d: not a matrix type", (int)type);
    if ((type == HV_WEIGHTS_Q8_0 || type == HV_WEIGHTS_Q4_0) && cols % HV_Q8_BLOCK)
        return hv_err(e, HV_ERR_UNSUPPORTED, "matrix %dx%d: %s needs a multiple of %d columns",
                      rows, cols, hv_weight_type_name(type), HV_Q8_BLOCK);
    size_t bytes = (size_t)rows * row_bytes(type, cols);
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
        return hv_err(e, HV_ERR_NOMEM, "matrix %dx%d as %s: out of memory", rows, cols,
                      hv_weight_type_name(type));
    size_t count = (size_t)rows * cols;
    const char *why = NULL;
    switch (type) {
        case HV_WEIGHTS_AUTO: break; /* refused above */
        case HV_WEIGHTS_F32: memcpy(p, src, count * sizeof(float)); break;
        case HV_WEIGHTS_F16:
        case HV_WEIGHTS_BF16: {
            int f16 = type == HV_WEIGHTS_F16;
            uint16_t *dst = p;
            for (size_t i = 0; i < count && !why; i++) {
                dst[i] = f16 ? hv_f32_to_f16(src[i]) : hv_f32_to_bf16(src[i]);
                if ((dst[i] & 0x7fff) == (f16 ? 0x7c00 : 0x7f80) && isfinite(src[i]))
                    why = "a weight overflows";
            }
            break;
        }
        case HV_WEIGHTS_Q8_0: {
            hv_q8_0_block *dst = p;
            for (size_t b = 0; b < count / HV_Q8_BLOCK && !why; b++)
                if (quantize_block(&dst[b], src + b * HV_Q8_BLOCK) != 0)
                    why = "a block has a non-finite weight or a scale beyond f16";
            break;
        }
        case HV_WEIGHTS_Q4_0: {
            hv_q4_0_block *dst = p;
            for (size_t b = 0; b < count / HV_Q8_BLOCK && !why; b++)
                if (quantize_block_q4(&dst[b], src + b * HV_Q8_BLOCK) != 0)
                    why = "a block has a non-finite weight or a scale beyond f16";
            break;
        }
    }
    if (why) {
        free(p);
        return hv_err(e, HV_ERR_UNSUPPORTED, "matrix %dx%d as %s: %s", rows, cols,
                      hv_weight_type_name(type), why);
    }
    m->type = type;
    m->rows = rows;
    m->cols = cols;
    m->data = p;
    m->x8 = 0;
    m->r64 = 0;
    *storage = p;
    return HV_OK;
}

typedef struct r64_copy {
    const hv_mat *m;
    uint32_t *dst;
} r64_copy;

/* Blocks task, task + n_tasks, ... of the copy, in the destination's
 * order, 64 rows at a time: a column pair's word is the two weights as
 * one little-endian 32-bit value. (Each task's first touch of its blocks
 * also takes their fresh pages, most of a load's copying time.) */
static void r64_copy_task(void *arg, int task, int n_tasks) {
    const r64_copy *j = arg;
    const hv_mat *m = j->m;
    const uint16_t *src = m->data;
    size_t pairs = (size_t)m->cols / 2;
    for (size_t b = (size_t)task; b < (size_t)m->rows / HV_R64_ROWS; b += (size_t)n_tasks) {
        uint32_t *dst = j->dst + b * pairs * HV_R64_ROWS;
        for (size_t c = 0; c < pairs; c++, dst += HV_R64_ROWS) {
            const uint16_t *at = src + b * HV_R64_ROWS * (size_t)m->cols + 2 * c;
            for (size_t r = 0; r < HV_R64_ROWS; r++, at += m->cols)
                dst[r] = (uint32_t)at[0] | (uint32_t)at[1] << 16;
        }
    }
}

int hv_mat_can_r64(const hv_mat *m) {
    return m->type == HV_WEIGHTS_BF16 && !m->r64 && m->rows % HV_R64_ROWS == 0 && m->cols % 2 == 0;
}

hv_status hv_mat_interleave_r64(hv_mat *m, void **storage, hv_pool *pool, hv_error *e) {
    *storage = NULL;
    if (!hv_mat_can_r64(m))
        return hv_err(e, HV_ERR_UNSUPPORTED, "matrix %dx%d %s: cannot be interleaved by %d rows",
                      m->rows, m->cols, hv_weight_type_name(m->type), HV_R64_ROWS);
    void *p = NULL;
    if (posix_memalign(&p, 64, hv_mat_bytes(m)) != 0)
        return hv_err(e, HV_ERR_NOMEM, "matrix %dx%d: out of memory", m->rows, m->cols);
    r64_copy j = {.m = m, .dst = p};
    int blocks = m->rows / HV_R64_ROWS, tasks = hv_pool_size(pool);
    hv_pool_run(pool, tasks < blocks ? tasks : blocks, r64_copy_task, &j);
    m->data = p;
    m->r64 = 1;
    *storage = p;
    return HV_OK;
}

/* Rows task, task + n_tasks, ... of a widening to bf16: each row's exact
 * f32 values (hv_mat_widen) a piece at a time, rounded as hv_f32_to_bf16. */
typedef struct bf16_widen {
    const hv_mat *m;
    uint16_t *dst;
} bf16_widen;

static void bf16_widen_task(void *arg, int task, int n_tasks) {
    const bf16_widen *j = arg;
    const hv_mat *m = j->m;
    enum { PIECE = 32 * HV_Q8_BLOCK };
    float buf[PIECE];
    for (int r = task; r < m->rows; r += n_tasks)
        for (int c = 0; c < m->cols; c += PIECE) {
            int count = m->cols - c < PIECE ? m->cols - c : PIECE;
            hv_mat_widen(hv_mm_best(), m, r, c, count, buf);
            uint16_t *out = j->dst + (size_t)r * m->cols + c;
            for (int t = 0; t < count; t++) out[t] = hv_bf16_bits(buf[t]);
        }
}

hv_status hv_mat_widen_bf16(hv_mat *m, void **storage, hv_pool *pool, hv_error *e) {
    *storage = NULL;
    if (m->type != HV_WEIGHTS_Q8_0 && m->type != HV_WEIGHTS_Q4_0)
        return hv_err(e, HV_ERR_UNSUPPORTED, "matrix %dx%d %s: not q8_0 or q4_0 blocks", m->rows,
                      m->cols, hv_weight_type_name(m->type));
    hv_mat wide = {.type = HV_WEIGHTS_BF16, .rows = m->rows, .cols = m->cols};
    void *p = NULL;
    if (posix_memalign(&p, 64, hv_mat_bytes(&wide) ? hv_mat_bytes(&wide) : 64) != 0)
        return hv_err(e, HV_ERR_NOMEM, "matrix %dx%d: out of memory", m->rows, m->cols);
    bf16_widen j = {.m = m, .dst = p};
    int tasks = hv_pool_size(pool);
    if (tasks > m->rows) tasks = m->rows;
    if (tasks > 0) hv_pool_run(pool, tasks, bf16_widen_task, &j);
    wide.data = p;
    *m = wide;
    *storage = p;
    return HV_OK;
}

hv_status hv_mat_interleave(hv_mat *m, void **storage, hv_error *e) {
    *storage = NULL;
    int q4 = m->type == HV_WEIGHTS_Q4_0;
    if ((m->type != HV_WEIGHTS_Q8_0 && !q4) || m->x8 || m->rows % HV_X8_ROWS)
        return hv_err(e, HV_ERR_UNSUPPORTED, "matrix %dx%d %s: cannot be interleaved by %d rows",
                      m->rows, m->cols, hv_weight_type_name(m->type), HV_X8_ROWS);
    size_t bytes = hv_mat_bytes(m), nb = (size_t)(m->cols / HV_Q8_BLOCK);
    size_t bb = row_bytes(m->type, HV_Q8_BLOCK), pay = bb - 2;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0)
        return hv_err(e, HV_ERR_NOMEM, "matrix %dx%d: out of memory", m->rows, m->cols);
    uint16_t *d = p;
    uint8_t *q = (uint8_t *)p + (size_t)m->rows * nb * 2;
    const uint8_t *src = m->data;
    for (size_t r = 0; r < (size_t)m->rows; r++)
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = src + (r * nb + b) * bb;
            size_t g = r / HV_X8_ROWS, j = r % HV_X8_ROWS, gb = g * nb + b;
            memcpy(&d[gb * HV_X8_ROWS + j], blk, 2);
            for (size_t k = 0; k < pay / 4; k++)
                memcpy(q + gb * HV_X8_ROWS * pay + (k * HV_X8_ROWS + j) * 4, blk + 2 + 4 * k, 4);
        }
    m->data = p;
    m->x8 = 1;
    *storage = p;
    return HV_OK;
}

/* count values (c and count multiples of 32) of the x8 matrix W from row
 * r, column c on: row by row, block by block. */
static void widen_x8(const hv_mat *W, int r, int c, long count, float *dst) {
    int nb = W->cols / HV_Q8_BLOCK, q4 = W->type == HV_WEIGHTS_Q4_0;
    size_t pay = (size_t)HV_X8_ROWS * hv_x8_payload(W->type);
    for (long done = 0; done < count; r++, c = 0) {
        const uint16_t *d = hv_x8_scales(W, r / HV_X8_ROWS);
        const uint8_t *q = hv_x8_payloads(W, r / HV_X8_ROWS);
        for (int b = c / HV_Q8_BLOCK; b < nb && done < count; b++, done += HV_Q8_BLOCK) {
            int8_t v[HV_Q8_BLOCK];
            hv_x8_values(q + (size_t)b * pay, r % HV_X8_ROWS, q4, v);
            float s = hv_f16_to_f32(d[(size_t)b * HV_X8_ROWS + r % HV_X8_ROWS]);
            for (int t = 0; t < HV_Q8_BLOCK; t++) dst[done + t] = s * (float)v[t];
        }
    }
}

void hv_mat_widen(const hv_mm_kernels *k, const hv_mat *W, int r, int c, long count, float *dst) {
    long at = (long)r * W->cols + c;
    if (W->x8) {
        widen_x8(W, r, c, count, dst);
        return;
    }
    if (W->r64) { /* value by value: embedding rows and the slow paths only */
        const uint32_t *w = W->data;
        for (long t = 0; t < count; t++, c++) {
            if (c == W->cols) r++, c = 0;
            uint32_t word = w[hv_r64_word(W->cols, r, c)];
            dst[t] = hv_bf16_to_f32((uint16_t)(c % 2 ? word >> 16 : word));
        }
        return;
    }
    switch (W->type) {
        case HV_WEIGHTS_AUTO: break; /* not a matrix's type */
        case HV_WEIGHTS_F32: memcpy(dst, (const float *)W->data + at, count * sizeof(float)); break;
        case HV_WEIGHTS_F16: k->widen_f16(dst, (const uint16_t *)W->data + at, count); break;
        case HV_WEIGHTS_BF16: k->widen_bf16(dst, (const uint16_t *)W->data + at, count); break;
        case HV_WEIGHTS_Q8_0:
            k->widen_q8_0(dst, (const hv_q8_0_block *)W->data + at / HV_Q8_BLOCK, count);
            break;
        case HV_WEIGHTS_Q4_0:
            k->widen_q4_0(dst, (const hv_q4_0_block *)W->data + at / HV_Q8_BLOCK, count);
            break;
    }
}

void hv_mat_row_f32(const hv_mat *m, int row, float *dst) {
    hv_mat_widen(hv_mm_best(), m, row, 0, m->cols, dst);
}

/* ------------------------------------------------------ kernel choice */

/* The tables, best first, with every feature each needs (cpu.h): the one
 * list that both the choice here and hv_mm_table_for read. */
static const struct {
    unsigned needs;
    const char *name;
} table_rows[] = {
    {HV_CPU_AVX2 | HV_CPU_AVX512 | HV_CPU_AVX512_VNNI, "avx512_vnni"},
    {HV_CPU_AVX2 | HV_CPU_AVX512, "avx512"},
    {HV_CPU_AVX2 | HV_CPU_AVX_VNNI, "avx_vnni"},
    {HV_CPU_AVX2, "avx2"},
    {HV_CPU_NEON | HV_CPU_DOTPROD | HV_CPU_I8MM, "i8mm"},
    {HV_CPU_NEON | HV_CPU_DOTPROD, "dotprod"},
    {HV_CPU_NEON, "neon"},
    {0, "scalar"},
};
#define N_TABLE_ROWS (int)(sizeof table_rows / sizeof table_rows[0])

/* Row i's table in this build, or NULL where it is another
 * architecture's. */
static const hv_mm_kernels *table_of_row(int i) {
    switch (i) {
#ifdef HV_MM_HAVE_AVX2
        case 0: return hv_mm_avx512(1);
        case 1: return hv_mm_avx512(0);
        case 2: return hv_mm_avx_vnni();
        case 3: return &hv_mm_avx2;
#endif
#ifdef HV_MM_HAVE_NEON
        case 4: return hv_mm_i8mm();
        case 5: return hv_mm_dotprod();
        case 6: return &hv_mm_neon;
#endif
        case N_TABLE_ROWS - 1: return &hv_mm_scalar;
        default: return NULL;
    }
}

const char *hv_mm_table_for(unsigned features) {
    int i = 0;
    while ((table_rows[i].needs & features) != table_rows[i].needs) i++;
    return table_rows[i].name;
}

static int tables_for(unsigned cpu, const hv_mm_kernels **out, int max) {
    int n = 0;
    for (int i = 0; i < N_TABLE_ROWS && n < max; i++) {
        const hv_mm_kernels *t = table_of_row(i);
        if (t && (table_rows[i].needs & cpu) == table_rows[i].needs) out[n++] = t;
    }
    return n;
}

int hv_mm_tables(const hv_mm_kernels **out, int max) {
    return tables_for(hv_cpu_features(), out, max);
}

static pthread_once_t simd_once = PTHREAD_ONCE_INIT;
static const hv_mm_kernels *simd_kernels;

static void detect_simd(void) {
    const hv_mm_kernels *best[1];
    hv_mm_tables(best, 1);
    simd_kernels = best[0] == &hv_mm_scalar ? NULL : best[0];
}

const hv_mm_kernels *hv_mm_simd(void) {
    pthread_once(&simd_once, detect_simd);
    return simd_kernels;
}

const hv_mm_kernels *hv_mm_best(void) {
    const hv_mm_kernels *k = hv_mm_simd();
    return k ? k : &hv_mm_scalar;
}

/* ------------------------------------------------------------ linear */

typedef struct linear_job {
    float *y;
    const float *x;
    int n;
    const hv_mat *W;
    const float *bias;
    const hv_mm_kernels *k;
    const hv_q8_act *xq; /* q8_0, q4_0 with n <= HV_LINEAR_GEMV_MAX_N */
    int tiled;           /* n > HV_LINEAR_GEMV_MAX_N: sgemm per chunk */
    hv_gemm_outs o;      /* its output rows in chunks, handed out in turn */
} linear_job;

static void add_bias(const linear_job *j, int r0, int r1) {
    if (!j->bias) return;
    int rows = j->W->rows;
    for (int i = 0; i < j->n; i++) {
        float *yi = j->y + (long)i * rows;
        for (int r = r0; r < r1; r++) yi[r] += j->bias[r];
    }
}

/* Rows per chunk: a chunk is the unit of work a task takes, and in the
 * tiled regime the rows of one sgemm call (widened to f32 first unless
 * they are f32; hv_gemm_chunk_rows). Fixed by the shape alone, never by
 * the thread count, and multiples of 16 so that tasks write whole cache
 * lines. Each sgemm call packs x again, which costs ~1/tile of the work:
 * tiles of 128..256 rows keep that near 3% (measured: 256-row tiles match
 * one whole sgemm) while leaving >= 8 tiles to balance over the threads
 * when rows >= 1024. OpenBLAS's sgemv (f32 weights on a CPU without our
 * SIMD kernels) keeps chunks of 32 rows. */
#define GEMV_CHUNK_F32 32
/* Our GEMV kernels stream their weights from memory: long chunks keep each
 * thread's stream going and leave fewer chunk starts the prefetch has not
 * reached (a decoder step's 65 products on the EPYC's 2 threads, best
 * sweep: bf16 9.2-9.8 ms in chunks of 32 rows, 7.4-8.2 in 128; q8_0 x8
 * 4.4-6.1 ms in 64, 4.0-4.2 in 128), and hv_gemm_outs_taper cuts the last
 * ones so that the threads end together. A multiple of 8 (x8). */
#define GEMV_CHUNK     128
/* r64 matrices: 4 blocks, so that hv_gemm_outs_taper's quarters are whole
 * blocks; with 128-row chunks the quarters read half blocks, every other
 * 128-byte run of each column pair, and a decoder step's 65 products took
 * 1.06x the row-major kernel's time against 0.82x in 256-row chunks (and
 * 0.80x in 512, 0.82x in two halves; docs/PERFORMANCE.md). */
#define GEMV_CHUNK_R64 256

/* x [n x cols] quantized for the q8_0/q4_0 GEMV kernels into a (block
 * sums included) in one new buffer, which is returned for the caller to
 * free; NULL when out of memory. */
static void *q8_act_new(const hv_mm_kernels *k, hv_q8_act *a, const float *x, int n, int cols) {
    size_t nb = (size_t)(cols / HV_Q8_BLOCK);
    void *buf = malloc((size_t)n * nb * (sizeof(float) + sizeof(int32_t) + HV_Q8_BLOCK));
    if (!buf) return NULL;
    a->d = buf;
    a->s = (int32_t *)(a->d + (size_t)n * nb);
    a->q = (int8_t *)(a->s + (size_t)n * nb);
    hv_q8_act_quantize(k, a, x, n, cols);
    return buf;
}

/* Whether f32 weights against n <= HV_LINEAR_GEMV_MAX_N activation rows
 * take the kernel table's gemv_f32 rather than OpenBLAS: wherever the CPU
 * has the SIMD kernels. Measured on the EPYC (the full-size f32
 * checkpoint, 2 threads): a greedy decoder step 14.4-15.0
 * ms against 22.8-24.1 with sgemv in 32-row chunks, 2 beams 16.5-17.3 ms
 * against 44-46 with sgemm (5x slower per row than sgemv), 4 beams
 * 24.8-27.9 against 42.5-42.9. Without SIMD kernels OpenBLAS beats the
 * portable loop; HV_GEMM_F32_BLAS=1 keeps these on OpenBLAS too, as it
 * does the packed GEMM's (packed_gemm). */
static int gemv_f32_ours(const hv_mat *W) {
    return W->type == HV_WEIGHTS_F32 && hv_mm_simd() != NULL && !HV_GEMM_F32_BLAS;
}

/* Weight rows per GEMV task chunk of W. */
static int gemv_chunk(const hv_mat *W) {
    if (W->r64) return GEMV_CHUNK_R64;
    return W->type == HV_WEIGHTS_F32 && !gemv_f32_ours(W) ? GEMV_CHUNK_F32 : GEMV_CHUNK;
}

/* Rows r0..r1 without any buffer: widens 256 weights at a time on the
 * stack. Only used when an allocation failed. */
static void rows_unbuffered(const linear_job *j, int r0, int r1) {
    const hv_mat *W = j->W;
    float buf[256];
    for (int r = r0; r < r1; r++) {
        for (int i = 0; i < j->n; i++) j->y[(long)i * W->rows + r] = 0.0f;
        for (int c = 0; c < W->cols; c += 256) {
            int len = W->cols - c < 256 ? W->cols - c : 256;
            hv_mat_widen(j->k, W, r, c, len, buf);
            for (int i = 0; i < j->n; i++) {
                const float *xi = j->x + (long)i * W->cols + c;
                float s = 0.0f;
                for (int t = 0; t < len; t++) s += buf[t] * xi[t];
                j->y[(long)i * W->rows + r] += s;
            }
        }
    }
}

static void gemv_rows(const linear_job *j, int r0, int r1) {
    const hv_mat *W = j->W;
    int rows = W->rows, cols = W->cols;
    float *y = j->y + r0;
    switch (W->type) {
        case HV_WEIGHTS_AUTO: break; /* not a matrix's type */
        case HV_WEIGHTS_F32: {
            const float *w = (const float *)W->data + (long)r0 * cols;
            if (gemv_f32_ours(W))
                j->k->gemv_f32(y, rows, j->x, j->n, w, r1 - r0, cols);
            else if (j->n == 1)
                cblas_sgemv(CblasRowMajor, CblasNoTrans, r1 - r0, cols, 1.0f, w, cols, j->x, 1,
                            0.0f, y, 1);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, r1 - r0, cols, 1.0f,
                            j->x, cols, w, cols, 0.0f, y, rows);
            break;
        }
        case HV_WEIGHTS_F16:
            j->k->gemv_f16(y, rows, j->x, j->n, (const uint16_t *)W->data + (long)r0 * cols,
                           r1 - r0, cols);
            break;
        case HV_WEIGHTS_BF16:
            if (W->r64)
                j->k->gemv_bf16_r64(y, rows, j->x, j->n, W->data, r0, r1 - r0, cols);
            else
                j->k->gemv_bf16(y, rows, j->x, j->n, (const uint16_t *)W->data + (long)r0 * cols,
                                r1 - r0, cols);
            break;
        case HV_WEIGHTS_Q8_0:
        case HV_WEIGHTS_Q4_0: {
            int q4 = W->type == HV_WEIGHTS_Q4_0;
            const char *w = (const char *)W->data + (size_t)r0 * row_bytes(W->type, cols);
            if (!j->xq)
                rows_unbuffered(j, r0, r1);
            else if (W->x8)
                (q4 ? j->k->gemv_q4_0x8
                    : j->k->gemv_q8_0x8)(y, rows, j->xq, hv_x8_scales(W, r0 / HV_X8_ROWS),
                                         hv_x8_payloads(W, r0 / HV_X8_ROWS), r1 - r0, cols);
            else if (q4)
                j->k->gemv_q4_0(y, rows, j->xq, (const hv_q4_0_block *)w, r1 - r0, cols);
            else
                j->k->gemv_q8_0(y, rows, j->xq, (const hv_q8_0_block *)w, r1 - r0, cols);
            break;
        }
    }
}

/* One task: takes chunks until none are left. A chunk is computed the same
 * way whichever task takes it, so results do not depend on the number of
 * tasks (OpenBLAS's sgemm does not promise that for different extents). */
static void linear_task(void *arg, int task, int n_tasks) {
    linear_job *j = arg;
    (void)task;
    (void)n_tasks;
    int rows = j->W->rows, cols = j->W->cols;
    int f32 = j->W->type == HV_WEIGHTS_F32;
    float *tile = NULL;
    if (j->tiled && !f32) {
        int tr = rows < j->o.max_chunk ? rows : j->o.max_chunk;
        tile = malloc((size_t)tr * cols * sizeof(float));
    }
    int m, r0, r1;
    while (hv_gemm_outs_next(&j->o, &m, &r0, &r1)) {
        if (j->tiled && (tile || f32)) {
            const float *w = (const float *)j->W->data + (long)r0 * cols;
            if (tile) {
                hv_mat_widen(j->k, j->W, r0, 0, (long)(r1 - r0) * cols, tile);
                w = tile;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, r1 - r0, cols, 1.0f, j->x,
                        cols, w, cols, 0.0f, j->y + r0, rows);
        } else if (j->tiled) {
            rows_unbuffered(j, r0, r1);
        } else {
            gemv_rows(j, r0, r1);
        }
        add_bias(j, r0, r1);
    }
    free(tile);
}

/* Whether many-row products with W take the packed GEMM: where the CPU
 * has the SIMD kernels (with the portable ones it would be ~100x slower than
 * OpenBLAS, which then keeps the f32 weights and the widened tiles), also
 * when a test runs it with the portable table. HV_GEMM_F32_BLAS=1 at build
 * time keeps f32 weights on OpenBLAS, for comparisons (the GEMV's too:
 * gemv_f32_ours). */
static int packed_gemm(const hv_mat *W) {
    return hv_mm_simd() && (W->type != HV_WEIGHTS_F32 || !HV_GEMM_F32_BLAS);
}

/* hv_linear, then the epilogue ep (NULL: none). The regimes
 * (docs/KERNELS.md): n > HV_LINEAR_GEMV_MAX_N takes the packed GEMM (the
 * int8 one for q8_0/q4_0) where SIMD kernels exist, with the epilogue in
 * its chunks, else widened tiles + sgemm; below, f32 weights go to
 * OpenBLAS (sgemv per 32-row chunk for n == 1, sgemm per tile otherwise)
 * and the other types to the gemv kernels. Outside the packed GEMM the
 * epilogue is passes after. Small products run on the calling thread
 * alone. */
static void linear(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                   const hv_mat *W, const float *bias, const hv_epilogue *ep) {
    if (n <= 0 || W->rows <= 0) return;
    pthread_once(&blas_once, blas_single_threaded);
    linear_job job = {.y = y, .x = x, .n = n, .W = W, .bias = bias, .k = k};
    double flops = 2.0 * n * W->rows * W->cols;
    int tasks = hv_pool_size(pool);
    if (flops < HV_POOL_MIN_FLOPS || W->rows < 32) tasks = 1;
    job.tiled = n > HV_LINEAR_GEMV_MAX_N;
    /* the encoder's regime: the packed GEMM, for every weight type */
    if (job.tiled && packed_gemm(W) && hv_gemm_weights(k, pool, n, x, 1, &W, &bias, &y, ep) == 0)
        return;
    int blas_f32 = W->type == HV_WEIGHTS_F32 && !gemv_f32_ours(W);
    int sgemm = job.tiled || (blas_f32 && n > 1);
    hv_gemm_outs_init(&job.o, 1, &W, &bias, &y, sgemm ? hv_gemm_chunk_rows : gemv_chunk, NULL);
    /* our GEMV kernels give every row the same bits in any chunk, so the
     * last chunks can be cut for the threads to end together; OpenBLAS's
     * chunks stay fixed by the shape */
    if (!sgemm && !blas_f32) hv_gemm_outs_taper(&job.o, tasks);
    if (tasks > job.o.n_chunks) tasks = job.o.n_chunks;
    hv_q8_act xq;
    void *xq_buf = NULL;
    if ((W->type == HV_WEIGHTS_Q8_0 || W->type == HV_WEIGHTS_Q4_0) && !job.tiled &&
        (xq_buf = q8_act_new(k, &xq, x, n, W->cols)))
        job.xq = &xq;
    if (job.tiled)
        hv_pool_run(pool, tasks, linear_task, &job);
    else
        hv_pool_run_short(pool, tasks, linear_task, &job);
    free(xq_buf);
    if (ep) hv_epilogue_run(ep, y, ep->residual, (long)n * W->rows);
}

static const hv_epilogue silu_ep = {.act = HV_ACT_SILU}, relu_ep = {.act = HV_ACT_RELU};

void hv_linear_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                    const hv_mat *W, const float *bias) {
    linear(k, pool, y, x, n, W, bias, NULL);
}

void hv_linear_silu_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                         const hv_mat *W, const float *bias) {
    linear(k, pool, y, x, n, W, bias, &silu_ep);
}

void hv_linear_ep_with(const hv_mm_kernels *k, hv_pool *pool, float *y, const float *x, int n,
                       const hv_mat *W, const float *bias, const hv_epilogue *ep) {
    linear(k, pool, y, x, n, W, bias, ep);
}

void hv_linear(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W, const float *bias) {
    linear(hv_mm_best(), pool, y, x, n, W, bias, NULL);
}

void hv_linear_silu(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
                    const float *bias) {
    linear(hv_mm_best(), pool, y, x, n, W, bias, &silu_ep);
}

void hv_linear_relu(hv_pool *pool, float *y, const float *x, int n, const hv_mat *W,
                    const float *bias) {
    linear(hv_mm_best(), pool, y, x, n, W, bias, &relu_ep);
}

void hv_linear_add(hv_pool *pool, float *res, float *y, const float *x, int n, const hv_mat *W,
                   const float *bias, float scale) {
    hv_epilogue ep = {.act = HV_ACT_NONE, .residual = res, .scale = scale};
    linear(hv_mm_best(), pool, y, x, n, W, bias, &ep);
}

typedef struct gemv_many_job {
    const hv_mm_kernels *k;
    const float *x;
    int n;
    const hv_q8_act *xq;
    hv_gemm_outs o;
} gemv_many_job;

static void gemv_many_task(void *arg, int task, int n_tasks) {
    gemv_many_job *g = arg;
    (void)task;
    (void)n_tasks;
    int m, r0, r1;
    while (hv_gemm_outs_next(&g->o, &m, &r0, &r1)) {
        linear_job j = {
            .y = g->o.out[m].y, .x = g->x, .n = g->n, .W = g->o.out[m].W, .k = g->k, .xq = g->xq};
        gemv_rows(&j, r0, r1);
        hv_gemm_outs_finish(&g->o, m, 0, g->n, r0, r1);
    }
}

/* The decoder's products with one input (query, key, value) in one pool
 * dispatch, x quantized once where q8_0/q4_0 weights need it: for n <=
 * HV_LINEAR_GEMV_MAX_N and weights of one width, of any type (f32 only
 * where gemv_f32 takes it; OpenBLAS's chunks stay as hv_linear cuts
 * them). Each output as hv_linear computes it. -1 when it does not apply
 * or its buffer cannot be had (nothing done). */
static int gemv_many(const hv_mm_kernels *k, hv_pool *pool, int n, const float *x, int count,
                     const hv_mat *const *W, const float *const *bias, float *const *y) {
    int quantized = 0;
    for (int m = 0; m < count; m++) {
        if ((W[m]->type == HV_WEIGHTS_F32 && !gemv_f32_ours(W[m])) || W[m]->rows < 1) return -1;
        quantized |= W[m]->type == HV_WEIGHTS_Q8_0 || W[m]->type == HV_WEIGHTS_Q4_0;
    }
    if (quantized && W[0]->cols % HV_Q8_BLOCK) return -1;
    gemv_many_job g = {.k = k, .x = x, .n = n};
    if (hv_gemm_outs_init(&g.o, count, W, bias, y, gemv_chunk, NULL)) return -1;
    hv_gemm_outs_taper(&g.o, hv_pool_size(pool));
    hv_q8_act xq;
    void *buf = NULL;
    if (quantized && !(buf = q8_act_new(k, &xq, x, n, g.o.cols))) return -1;
    g.xq = quantized ? &xq : NULL;
    int tasks = hv_pool_size(pool) < g.o.n_chunks ? hv_pool_size(pool) : g.o.n_chunks;
    hv_pool_run_short(pool, tasks, gemv_many_task, &g);
    free(buf);
    return 0;
}

void hv_linear_many(hv_pool *pool, int n, const float *x, int count, const hv_mat *const *W,
                    const float *const *bias, float *const *y) {
    int fits = count <= HV_GEMM_MAX_OUT, packed = n > HV_LINEAR_GEMV_MAX_N;
    for (int m = 0; m < count; m++) {
        fits &= W[m]->cols == W[0]->cols && W[m]->rows > 0;
        packed &= packed_gemm(W[m]);
    }
    if (fits && packed && hv_gemm_weights(hv_mm_best(), pool, n, x, count, W, bias, y, NULL) == 0)
        return;
    if (fits && n > 0 && n <= HV_LINEAR_GEMV_MAX_N &&
        gemv_many(hv_mm_best(), pool, n, x, count, W, bias, y) == 0)
        return;
    for (int m = 0; m < count; m++) hv_linear(pool, y[m], x, n, W[m], bias[m]);
}
