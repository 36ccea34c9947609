/* The packed GEMM for matrix products with many activation rows (the
 * encoder, cross-attention keys and values, long prompts): y = x . W^T +
 * bias for weights of any type, at the speed of the micro-kernel.
 *
 * The structure is the usual one for GEMM (Goto; BLIS), with the sizes of
 * the table's geometry (hv_mm_kernels' geom: MR, NR, KC, MC below): the
 * activations x are packed once per call into panels of MR rows, column
 * block by column block (KC columns), so the micro-kernel reads them
 * contiguously; each task takes a chunk of weight rows, widens one column
 * block of it at a time straight into panels of NR rows (no f32
 * copy of the whole matrix, and no second copy as with widen + sgemm), and
 * runs the micro-kernel over every activation panel. A tile's outputs stay
 * in y (or, for many activation rows, in the task's buffer) between column
 * blocks, so every output is one fma chain over the columns in order
 * (matmul_impl.h): the result does not depend on the blocking, the chunks
 * or the number of threads, and the scalar and AVX2 micro-kernels agree
 * bit for bit. Buffers come from the pool's scratch, so repeated calls
 * neither allocate nor fault in pages. */
#include <stdatomic.h>
#include <string.h>

#include "kernels/matmul_impl.h"
#include "kernels/ops.h"

typedef struct gemm_job {
    const hv_mm_kernels *k;
    hv_mm_geometry g; /* k's: MR = g.mr, NR = g.nr, KC = g.kc, MC = g.mc */
    hv_pool *pool;
    const float *x;
    int n, n_pad, cols; /* activation rows (n_pad: rounded up to MR), columns */
    float *xp;          /* packed activations: n_pad x cols */
    hv_gemm_outs o;
} gemm_job;

/* Column block [k0, k0 + kc) of the activations as n_pad / MR panels of
 * [kc][MR], at xp + k0 * n_pad (block after block); rows >= n are zero. */
static void pack_x_task(void *arg, int task, int n_tasks) {
    gemm_job *j = arg;
    int cols = j->cols, panels = j->n_pad / j->g.mr;
    for (int k0 = 0; k0 < cols; k0 += j->g.kc) {
        int kc = cols - k0 < j->g.kc ? cols - k0 : j->g.kc;
        float *block = j->xp + (long)k0 * j->n_pad;
        for (int p = task; p < panels; p += n_tasks) {
            float *dst = block + (long)p * j->g.mr * kc;
            const float *src = j->x + (long)p * j->g.mr * cols + k0;
            int valid = j->n - p * j->g.mr < j->g.mr ? j->n - p * j->g.mr : j->g.mr;
            if (valid == j->g.mr) {
                j->k->gemm_pack_x(dst, src, cols, kc);
                continue;
            }
            /* the last panel: column by column, rows past n zero */
            for (int c = 0; c < kc; c++)
                for (int i = 0; i < j->g.mr; i++)
                    dst[c * j->g.mr + i] = i < valid ? src[(long)i * cols + c] : 0.0f;
        }
    }
}

/* A panel of the r64 matrix W: rows rp .. rp + NR - 1 (rp a multiple of
 * NR, so within one block) x columns [k0, k0 + kc), both even, widened
 * into dst[k][NR]: the values of the row-major panel. */
static void pack_r64(const gemm_job *j, float *dst, const hv_mat *W, int rp, int k0, int kc) {
    const uint32_t *w = W->data;
    for (int k = 0; k < kc; k += 2) {
        const uint32_t *words = w + hv_r64_word(W->cols, rp, k0 + k);
        for (int r = 0; r < j->g.nr; r++) {
            uint32_t lo = words[r] << 16, hi = words[r] & 0xFFFF0000u;
            memcpy(dst + (long)k * j->g.nr + r, &lo, 4);
            memcpy(dst + (long)(k + 1) * j->g.nr + r, &hi, 4);
        }
    }
}

/* Weight rows [r0, r1) x columns [k0, k0 + kc) widened into panels of
 * [kc][NR] at wp (rows past r1 zero): each panel's rows are widened into
 * rows[NR][kc] (contiguous, the types' vector kernels), then transposed. */
static void pack_w(const gemm_job *j, const hv_mat *W, int r0, int r1, int k0, int kc, float *wp,
                   float *rows) {
    size_t row_bytes = hv_mat_bytes(W) / (size_t)W->rows;
    /* bytes of kc columns, and where the next block starts in each row */
    size_t span = row_bytes * (size_t)kc / (size_t)W->cols;
    size_t next = row_bytes * (size_t)(k0 + kc) / (size_t)W->cols;
    int prefetch = k0 + kc < W->cols && !W->r64;
    if (prefetch && next + span > row_bytes) span = row_bytes - next; /* the last block */
    for (int p = 0; r0 + p * j->g.nr < r1; p++) {
        int rp = r0 + p * j->g.nr;
        /* a whole panel of f32, f16 or bf16 rows is transposed (and
         * widened) from the matrix itself */
        hv_weight_type t = W->type;
        int direct = (t == HV_WEIGHTS_F32 || t == HV_WEIGHTS_F16 || t == HV_WEIGHTS_BF16) &&
                     rp + j->g.nr <= r1;
        if (direct && W->r64) { /* a column pair's NR rows are NR adjacent words */
            pack_r64(j, wp + (long)p * j->g.nr * kc, W, rp, k0, kc);
            continue;
        }
        for (int jj = 0; jj < j->g.nr; jj++) {
            int r = rp + jj;
            /* the weights come from memory, 16 rows at a time: fetch each
             * row's next block while this one is widened */
            if (r < r1 && prefetch) {
                const char *at = (const char *)W->data + (size_t)r * row_bytes + next;
                for (size_t b = 0; b < span; b += 64) __builtin_prefetch(at + b);
            }
            if (direct) continue;
            if (r < r1)
                hv_mat_widen(j->k, W, r, k0, kc, rows + (long)jj * kc);
            else
                memset(rows + (long)jj * kc, 0, (size_t)kc * sizeof *rows);
        }
        size_t at = (size_t)rp * W->cols + k0;
        if (direct && t == HV_WEIGHTS_F32)
            j->k->gemm_panel(wp + (long)p * j->g.nr * kc, (const float *)W->data + at, W->cols, kc);
        else if (direct)
            j->k->gemm_panel_half(wp + (long)p * j->g.nr * kc, (const uint16_t *)W->data + at,
                                  W->cols, kc, t == HV_WEIGHTS_BF16);
        else
            j->k->gemm_panel(wp + (long)p * j->g.nr * kc, rows, kc, kc);
    }
}

/* An edge tile (fewer than MR activation rows or NR weight rows) with
 * outputs at c (row stride ldc) and nj weight rows, through a full-size
 * buffer so the kernel never sees a tail. */
static void edge_tile(const gemm_job *j, float *c, long ldc, int kc, const float *xp,
                      const float *wp, int i, int nj, int accumulate) {
    int mi = j->n - i < j->g.mr ? j->n - i : j->g.mr;
    if (nj > j->g.nr) nj = j->g.nr;
    float buf[HV_GEMM_MR_MAX * HV_GEMM_NR_MAX];
    memset(buf, 0, (size_t)j->g.mr * j->g.nr * sizeof *buf);
    if (accumulate)
        for (int a = 0; a < mi; a++) memcpy(buf + a * j->g.nr, c + (long)a * ldc, nj * sizeof *buf);
    j->k->gemm_tiles(1, kc, xp, wp, buf, j->g.nr, accumulate);
    for (int a = 0; a < mi; a++) memcpy(c + (long)a * ldc, buf + a * j->g.nr, nj * sizeof *buf);
}

/* From LOCAL_MIN_N activation rows on, a chunk's outputs are accumulated
 * in a buffer of the task's, n rows of local_ld(j) floats, and copied to y
 * when the chunk is done. In y a chunk's rows lie W->rows floats apart:
 * for the encoder's 5120-row products 20 KiB, a multiple of 4 KiB, so the
 * 375 rows of a 30 s chunk share a quarter of the L2 cache's sets and
 * evict each other between column blocks; the buffer's rows, 16 floats
 * longer than a chunk, spread over all sets. Below ~256 rows the chunk's
 * outputs stay in L2 either way and the copy costs about what it saves
 * (docs/KERNELS.md, "The packed GEMM"). */
#define LOCAL_MIN_N 256
static int local_ld(const gemm_job *j) { return j->o.max_chunk + j->g.nr; }
static int use_local(const gemm_job *j) { return j->n >= LOCAL_MIN_N; }

/* Scratch floats of a task: its packed weight block, NR widened rows and
 * the chunk's outputs when they are kept apart. */
static size_t task_floats(const gemm_job *j) {
    size_t f = ((size_t)j->o.max_chunk + j->g.nr) * j->g.kc;
    return f + (use_local(j) ? (size_t)j->n * (size_t)local_ld(j) : 0);
}

static void gemm_task(void *arg, int task, int n_tasks) {
    gemm_job *j = arg;
    (void)n_tasks;
    int cols = j->cols, local = use_local(j);
    float *wp = hv_pool_scratch(j->pool, task, task_floats(j) * sizeof(float));
    float *wrows = wp + (size_t)j->o.max_chunk * j->g.kc;
    float *cbuf = wrows + (size_t)j->g.nr * j->g.kc;
    int m, r0, r1;
    while (hv_gemm_outs_next(&j->o, &m, &r0, &r1)) {
        const hv_mat *W = j->o.out[m].W;
        /* where the chunk's outputs are accumulated: c[i * ldc + r - r0] */
        float *c = local ? cbuf : j->o.out[m].y + r0;
        long ldc = local ? local_ld(j) : W->rows;
        for (int k0 = 0; k0 < cols; k0 += j->g.kc) {
            int kc = cols - k0 < j->g.kc ? cols - k0 : j->g.kc;
            pack_w(j, W, r0, r1, k0, kc, wp, wrows);
            const float *xblock = j->xp + (long)k0 * j->n_pad;
            for (int i0 = 0; i0 < j->n; i0 += j->g.mc) {
                int i1 = i0 + j->g.mc < j->n ? i0 + j->g.mc : j->n;
                for (int r = r0; r < r1;) {
                    const float *wpanel = wp + (long)(r - r0) * kc;
                    /* two whole panels at once where the table can */
                    int two = j->k->gemm_tiles2 && r + 2 * j->g.nr <= r1;
                    int i = i0;
                    /* the pass's whole tiles in one call (i0 is a multiple
                     * of MR, and so is i1 unless it is n), then an edge */
                    int full = r + j->g.nr <= r1 ? i1 / j->g.mr - i0 / j->g.mr : 0;
                    if (full > 0) {
                        (two ? j->k->gemm_tiles2
                             : j->k->gemm_tiles)(full, kc, xblock + (long)i * kc, wpanel,
                                                 c + (long)i * ldc + (r - r0), ldc, k0 > 0);
                        i += full * j->g.mr;
                    }
                    for (int p = 0; p < 1 + two; p++)
                        for (int e = i; e < i1; e += j->g.mr)
                            edge_tile(j, c + (long)e * ldc + (r - r0) + p * j->g.nr, ldc, kc,
                                      xblock + (long)e * kc, wpanel + (long)p * j->g.nr * kc, e,
                                      r1 - r - p * j->g.nr, k0 > 0);
                    r += (1 + two) * j->g.nr;
                }
            }
        }
        /* after the chunk, not pass by pass as the int8 GEMM: measured
         * 3-7% slower here (docs/KERNELS.md, "The packed GEMM") */
        hv_gemm_outs_finish_from(&j->o, m, 0, j->n, r0, r1, local ? cbuf : NULL, ldc);
    }
}

/* Weight rows per chunk: a multiple of HV_GEMM_NR (the default panel
 * width; a table's own only costs edge tiles), fixed by the shape (the
 * taper's quarters also by the thread count; no split changes a result),
 * 128..256 so that a chunk's packed block (<= 256 KiB)
 * stays in the L2 cache and a matrix of >= 1024 rows gives >= 8 chunks to
 * balance over the threads. */
int hv_gemm_chunk_rows(const hv_mat *W) {
    int t = (W->rows / 8) & ~(HV_GEMM_NR - 1);
    return t < 128 ? 128 : t > 256 ? 256 : t;
}

int hv_gemm_outs_init(hv_gemm_outs *o, int count, const hv_mat *const *W, const float *const *bias,
                      float *const *y, int (*chunk_rows)(const hv_mat *W), const hv_epilogue *ep) {
    if (count < 1 || count > HV_GEMM_MAX_OUT || (ep && ep->residual && count != 1)) return -1;
    memset(o, 0, sizeof *o);
    if (ep) o->ep = *ep;
    o->cols = W[0]->cols;
    for (int m = 0; m < count; m++) {
        if (W[m]->cols != o->cols) return -1;
        int chunk = chunk_rows(W[m]);
        o->out[m].W = W[m];
        o->out[m].bias = bias[m];
        o->out[m].y = y[m];
        o->out[m].chunk = chunk;
        o->out[m].first_chunk = o->n_chunks;
        o->out[m].split = W[m]->rows;
        o->out[m].fine = chunk;
        o->n_chunks += (W[m]->rows + chunk - 1) / chunk;
        if (chunk > o->max_chunk) o->max_chunk = chunk;
    }
    o->n_out = count;
    atomic_init(&o->next, 0);
    return 0;
}

/* As many of the last product's last chunks as there are threads (at
 * least 2, at most all of them) in quarters of at least NR rows. */
void hv_gemm_outs_taper(hv_gemm_outs *o, int threads) {
    int m = o->n_out - 1, rows = o->out[m].W->rows, chunk = o->out[m].chunk;
    int n_big = (rows + chunk - 1) / chunk, fine = (chunk / 4) & ~(HV_GEMM_NR - 1);
    int tail = threads < 2 ? 0 : threads < n_big ? threads : n_big;
    if (fine < HV_GEMM_NR || tail == 0) return;
    o->out[m].split = (n_big - tail) * chunk;
    o->out[m].fine = fine;
    o->n_chunks = o->out[m].first_chunk + n_big - tail + (rows - o->out[m].split + fine - 1) / fine;
}

int hv_gemm_outs_next(hv_gemm_outs *o, int *m, int *r0, int *r1) {
    int ch = atomic_fetch_add(&o->next, 1);
    if (ch >= o->n_chunks) return 0;
    int i = o->n_out - 1;
    while (o->out[i].first_chunk > ch) i--;
    int rows = o->out[i].W->rows, chunk = o->out[i].chunk, split = o->out[i].split;
    int local = ch - o->out[i].first_chunk, n_big = (split + chunk - 1) / chunk;
    *m = i;
    if (local < n_big) {
        *r0 = local * chunk;
        *r1 = *r0 + chunk < split ? *r0 + chunk : split;
    } else {
        *r0 = split + (local - n_big) * o->out[i].fine;
        *r1 = *r0 + o->out[i].fine < rows ? *r0 + o->out[i].fine : rows;
    }
    return 1;
}

void hv_gemm_outs_finish(const hv_gemm_outs *o, int m, int i0, int i1, int r0, int r1) {
    hv_gemm_outs_finish_from(o, m, i0, i1, r0, r1, NULL, 0);
}

void hv_gemm_outs_finish_from(const hv_gemm_outs *o, int m, int i0, int i1, int r0, int r1,
                              const float *src, long ld) {
    const float *bias = o->bias_done ? NULL : o->out[m].bias;
    int rows = o->out[m].W->rows, count = r1 - r0;
    for (int i = i0; i < i1; i++) {
        float *yi = o->out[m].y + (long)i * rows;
        if (o->ep.residual && i + 2 < i1) { /* short rows far apart: fetch ahead */
            const char *ya = (const char *)(yi + 2L * rows + r0);
            const char *ra = (const char *)(o->ep.residual + (i + 2L) * rows + r0);
            for (long b = 0; b < (long)count * 4; b += 64) {
                __builtin_prefetch(ya + b);
                __builtin_prefetch(ra + b, 1);
            }
        }
        /* y = src + bias is the same rounding as y = src; y += bias */
        const float *si = src ? src + (long)(i - i0) * ld : NULL;
        if (si && bias)
            for (int r = 0; r < count; r++) yi[r0 + r] = si[r] + bias[r0 + r];
        else if (si)
            memcpy(yi + r0, si, (size_t)count * sizeof *yi);
        else if (bias)
            for (int r = r0; r < r1; r++) yi[r] += bias[r];
        /* element-wise: as over all of y */
        hv_epilogue_run(&o->ep, yi + r0,
                        o->ep.residual ? o->ep.residual + (long)i * rows + r0 : NULL, count);
    }
}

void hv_epilogue_run(const hv_epilogue *ep, float *y, float *res, long count) {
    if (ep->act == HV_ACT_SILU) hv_silu(y, count);
    if (ep->act == HV_ACT_RELU) hv_relu(y, count);
    if (ep->residual) hv_add_scaled(res, y, count, ep->scale);
}

int hv_mm_geometry_ok(const hv_mm_geometry *g) {
    int tiles = g->mr >= 1 && g->mr <= HV_GEMM_MR_MAX && g->q8_mr >= 1 &&
                g->q8_mr <= HV_GEMM_MR_MAX && g->nr >= HV_X8_ROWS && g->nr <= HV_GEMM_NR_MAX &&
                g->nr % HV_X8_ROWS == 0;
    int blocks = g->kc >= 1 && g->q8_kc_max >= HV_Q8_BLOCK && g->q8_kc_max % HV_Q8_BLOCK == 0;
    int passes = tiles && g->mc >= g->mr && g->mc % g->mr == 0 && g->q8_mc >= g->q8_mr &&
                 g->q8_mc % g->q8_mr == 0;
    return tiles && blocks && passes;
}

int hv_gemm_weights(const hv_mm_kernels *k, hv_pool *pool, int n, const float *x, int count,
                    const hv_mat *const *W, const float *const *bias, float *const *y,
                    const hv_epilogue *ep) {
    if (count < 1 || count > HV_GEMM_MAX_OUT || !hv_mm_geometry_ok(&k->geom)) return -1;
    if (!pool) { /* a one-thread pool of our own for its scratch */
        hv_pool *own = hv_pool_new(1);
        int rc = own ? hv_gemm_weights(k, own, n, x, count, W, bias, y, ep) : -1;
        hv_pool_free(own);
        return rc;
    }
    int int8 = 1; /* block-quantized weights take the int8 GEMM */
    for (int m = 0; m < count; m++)
        int8 &= W[m]->type == HV_WEIGHTS_Q8_0 || W[m]->type == HV_WEIGHTS_Q4_0;
    if (int8) return hv_gemm_q8(k, pool, n, x, count, W, bias, y, ep);
    gemm_job j = {.k = k, .g = k->geom, .pool = pool, .x = x, .n = n};
    j.n_pad = (n + j.g.mr - 1) / j.g.mr * j.g.mr;
    if (hv_gemm_outs_init(&j.o, count, W, bias, y, hv_gemm_chunk_rows, ep)) return -1;
    hv_gemm_outs_taper(&j.o, hv_pool_size(pool));
    j.cols = j.o.cols;
    int tasks = hv_pool_size(pool);
    if (tasks > j.o.n_chunks) tasks = j.o.n_chunks;
    j.xp = hv_pool_scratch(pool, hv_pool_size(pool), (size_t)j.n_pad * j.cols * sizeof(float));
    if (!j.xp) return -1;
    /* every task's slot before any task runs, so a task cannot fail */
    for (int t = 0; t < tasks; t++)
        if (!hv_pool_scratch(pool, t, task_floats(&j) * sizeof(float))) return -1;
    int pack_tasks = hv_pool_size(pool) < j.n_pad / j.g.mr ? hv_pool_size(pool) : j.n_pad / j.g.mr;
    hv_pool_run(pool, pack_tasks, pack_x_task, &j);
    hv_pool_run(pool, tasks, gemm_task, &j);
    return 0;
}
