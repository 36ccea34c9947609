/* The packed GEMM in int8 for q8_0 and q4_0 weights (the encoder,
 * cross-attention keys and values, long prompts): y = x . W^T + bias with
 * the products of each block of 32 columns done in integers (a q4_0
 * block's values are its nibbles - 8, unpacked when the weights are
 * packed).
 *
 * Activations are quantized once per call, per row and block of 32, to 7
 * bits: d = amax / 63, q = rint(x / d) in [-63, 63], stored as u = q + 64
 * in [1, 127]. AVX2 multiplies unsigned by signed bytes and adds pairs
 * into int16 (vpmaddubsw); with u <= 127 and |w| <= 127 a pair is at most
 * 32258, so nothing saturates (8-bit activations would: 2 x 255 x 127).
 * The offset comes back out exactly: sum u w = sum q w + 64 sum w, and
 * 64 sum w per weight row and block is computed when the weights are
 * packed. Each output is then one fma chain over the blocks in order,
 * s = fma(dw * dx, (float)(exact block dot), s), then + bias: the same in
 * the portable and AVX2 micro-kernels, whatever the blocking, chunks or
 * threads (matmul_impl.h).
 *
 * The layout follows gemm.c's, with the table's geometry (hv_mm_kernels'
 * geom: MR = q8_mr, NR = nr, KC_MAX = q8_kc_max, MC = q8_mc below):
 * activations packed once into panels of MR rows, 4 bytes (4 columns) per
 * row per step, so a step broadcasts one 32-bit word per row; weights
 * packed per task, one column block at a time, into panels of NR rows, 4 bytes per row per
 * step (two 32-byte vectors), with their scales and offset terms. */
#include <string.h>

#include "kernels/half.h"
#include "kernels/matmul_impl.h"

#define BLK HV_Q8_BLOCK

typedef struct q8_job {
    const hv_mm_kernels *k;
    hv_mm_geometry g; /* k's: MR = g.q8_mr, NR = g.nr, KC_MAX = g.q8_kc_max, MC = g.q8_mc */
    hv_pool *pool;
    const float *x;
    int n, n_pad, cols;
    int kc;      /* columns per packed block (the last may be shorter) */
    uint8_t *xq; /* packed activation bytes: n_pad x cols */
    float *xd;   /* their scales: n_pad x cols / 32 */
    hv_gemm_outs o;
} q8_job;

/* Column block [k0, k0 + kc) of panel p: bytes at xq + k0 * n_pad + p * MR
 * * kc as [kc / 4][MR][4], scales at xd + k0 / 32 * n_pad + p * MR * nbk
 * as [nbk][MR]; rows >= n are zero with scale 0. */
static void pack_x_task(void *arg, int task, int n_tasks) {
    q8_job *j = arg;
    int panels = j->n_pad / j->g.q8_mr;
    for (int k0 = 0; k0 < j->cols; k0 += j->kc) {
        int kc = j->cols - k0 < j->kc ? j->cols - k0 : j->kc, nbk = kc / BLK;
        for (int p = task; p < panels; p += n_tasks) {
            uint8_t *dst = j->xq + (long)k0 * j->n_pad + (long)p * j->g.q8_mr * kc;
            float *dd = j->xd + (long)k0 / BLK * j->n_pad + (long)p * j->g.q8_mr * nbk;
            for (int i = 0; i < j->g.q8_mr; i++) {
                int r = p * j->g.q8_mr + i;
                for (int b = 0; b < nbk; b++) {
                    uint8_t u[BLK];
                    float d = 0.0f;
                    if (r < j->n)
                        d = j->k->quantize_q7(j->x + (long)r * j->cols + k0 + b * BLK, u);
                    else
                        memset(u, 64, BLK);
                    dd[b * j->g.q8_mr + i] = d;
                    for (int q = 0; q < BLK / 4; q++)
                        memcpy(dst + ((long)(b * BLK / 4 + q) * j->g.q8_mr + i) * 4, u + 4 * q, 4);
                }
            }
        }
    }
}

/* Weight rows [r0, r1) x columns [k0, k0 + kc) into panels of NR rows:
 * per panel, bytes [kc / 4][NR][4] (transposed through rows[NR][kc]),
 * then scales [nbk][NR] and offset terms 64 * sum w [nbk][NR]; rows past
 * r1 are zero. */
static void pack_w(const q8_job *j, const hv_mat *W, int r0, int r1, int k0, int kc, uint8_t *wp,
                   uint8_t *rows) {
    int nb = W->cols / BLK, nbk = kc / BLK, q4 = W->type == HV_WEIGHTS_Q4_0;
    size_t bb = q4 ? sizeof(hv_q4_0_block) : sizeof(hv_q8_0_block);
    size_t panel_bytes = (size_t)kc * j->g.nr + (size_t)nbk * j->g.nr * 8;
    for (int p = 0; r0 + p * j->g.nr < r1; p++) {
        uint8_t *panel = wp + p * panel_bytes;
        float *wd = (float *)(panel + (size_t)kc * j->g.nr);
        int32_t *wc = (int32_t *)(wd + nbk * j->g.nr);
        for (int jj = 0; jj < j->g.nr; jj++) {
            int r = r0 + p * j->g.nr + jj;
            uint8_t *row = rows + (long)jj * kc;
            if (r >= r1) {
                memset(row, 0, (size_t)kc);
                for (int b = 0; b < nbk; b++) wd[b * j->g.nr + jj] = 0.0f, wc[b * j->g.nr + jj] = 0;
                continue;
            }
            const char *blk = (const char *)W->data + ((size_t)r * nb + k0 / BLK) * bb;
            if (k0 + kc < W->cols) /* this row's next column block */
                for (size_t off = 0; off < nbk * bb; off += 64)
                    __builtin_prefetch(blk + nbk * bb + off);
            for (int b = 0; b < nbk; b++) {
                const char *at = blk + b * bb;
                int8_t *v = (int8_t *)row + b * BLK;
                uint16_t d;
                memcpy(&d, at, sizeof d); /* both block types begin with the scale */
                if (q4) {
                    hv_q4_0_values((const hv_q4_0_block *)at, v);
                } else {
                    memcpy(v, ((const hv_q8_0_block *)at)->q, BLK);
                }
                int32_t sum = 0;
                for (int t = 0; t < BLK; t++) sum += v[t];
                wd[b * j->g.nr + jj] = hv_f16_to_f32(d);
                wc[b * j->g.nr + jj] = 64 * sum;
            }
        }
        j->k->gemm_panel(panel, rows, kc / 4, kc / 4);
    }
}

/* pack_w for x8 weights (matmul_impl.h): a panel's NR rows are whole
 * groups whose words already lie side by side, [block][word][8 rows][4
 * bytes], as the panel has them: copied group by group (q4_0: payload
 * word k < 4 holds values 4k.. as low nibbles and 16 + 4k.. as high ones,
 * so it gives value words k and 4 + k), no transpose. Groups past r1 are
 * zero. */
static void pack_w_x8(const q8_job *j, const hv_mat *W, int r0, int r1, int k0, int kc,
                      uint8_t *wp) {
    enum { G = HV_X8_ROWS, WORDS = BLK / 4 };
    int nbk = kc / BLK, q4 = W->type == HV_WEIGHTS_Q4_0;
    size_t pay = (size_t)G * hv_x8_payload(W->type),
           panel_bytes = (size_t)kc * j->g.nr + (size_t)nbk * j->g.nr * 8;
    for (int p = 0; r0 + p * j->g.nr < r1; p++) {
        uint8_t *panel = wp + p * panel_bytes;
        float *wd = (float *)(panel + (size_t)kc * j->g.nr);
        int32_t *wc = (int32_t *)(wd + nbk * j->g.nr);
        for (int h = 0; h < j->g.nr / G; h++) {
            int r = r0 + p * j->g.nr + h * G; /* the group's first row */
            for (int b = 0; b < nbk; b++) {
                int8_t *dst = (int8_t *)panel + ((size_t)b * WORDS * j->g.nr + h * G) * 4;
                if (r >= r1) {
                    for (int k = 0; k < WORDS; k++) memset(dst + (size_t)k * j->g.nr * 4, 0, G * 4);
                    for (int t = 0; t < G; t++)
                        wd[b * j->g.nr + h * G + t] = 0.0f, wc[b * j->g.nr + h * G + t] = 0;
                    continue;
                }
                int bk = k0 / BLK + b;
                const uint16_t *d = hv_x8_scales(W, r / G) + (size_t)bk * G;
                const uint8_t *pb = hv_x8_payloads(W, r / G) + (size_t)bk * pay;
                if (q4)
                    for (int k = 0; k < WORDS / 2; k++) {
                        int8_t *lo = dst + (size_t)k * j->g.nr * 4;
                        hv_q4_split(pb + k * G * 4, G * 4, lo,
                                    lo + (size_t)WORDS / 2 * j->g.nr * 4);
                    }
                else
                    for (int k = 0; k < WORDS; k++)
                        memcpy(dst + (size_t)k * j->g.nr * 4, pb + k * G * 4, G * 4);
                j->k->gemm_x8_terms(d, dst, j->g.nr * 4, wd + b * j->g.nr + h * G,
                                    wc + b * j->g.nr + h * G);
            }
        }
    }
}

/* An edge tile (fewer than MR activation rows or NR weight rows) at
 * activation row i, weight row r, through a full-size buffer. */
static void edge_tile(const q8_job *j, int rows, float *y, int nbk, const uint8_t *xp,
                      const float *xd, const uint8_t *wpanel, int i, int r, int r1, int accumulate,
                      const float *bias) {
    int kc = nbk * BLK;
    const float *wd = (const float *)(wpanel + (size_t)kc * j->g.nr);
    const int32_t *wc = (const int32_t *)(wd + nbk * j->g.nr);
    float *c = y + (long)i * rows + r;
    int mi = j->n - i < j->g.q8_mr ? j->n - i : j->g.q8_mr,
        nj = r1 - r < j->g.nr ? r1 - r : j->g.nr;
    float buf[HV_GEMM_MR_MAX * HV_GEMM_NR_MAX];
    memset(buf, 0, (size_t)j->g.q8_mr * j->g.nr * sizeof *buf);
    if (accumulate)
        for (int a = 0; a < mi; a++)
            memcpy(buf + a * j->g.nr, c + (long)a * rows, nj * sizeof *buf);
    j->k->gemm_tiles_q8(1, nbk, xp, xd, (const int8_t *)wpanel, wd, wc, buf, j->g.nr, accumulate,
                        bias);
    for (int a = 0; a < mi; a++) memcpy(c + (long)a * rows, buf + a * j->g.nr, nj * sizeof *buf);
}

/* The bias (NULL or the product's) of a weight panel at row r of a chunk
 * ending at r1: its NR values, or a copy in pad padded with zeros where
 * the panel passes r1. */
static const float *panel_bias(const float *bias, int r, int r1, int nr,
                               float pad[HV_GEMM_NR_MAX]) {
    if (!bias || r + nr <= r1) return bias ? bias + r : NULL;
    memset(pad, 0, nr * sizeof *pad);
    memcpy(pad, bias + r, (size_t)(r1 - r) * sizeof *bias);
    return pad;
}

/* Scratch bytes of a task: its packed weight block and NR rows of bytes. */
static size_t task_bytes(const q8_job *j) {
    return (size_t)j->o.max_chunk * (j->kc + j->kc / BLK * 8) + (size_t)j->g.nr * j->kc;
}

static void gemm_task(void *arg, int task, int n_tasks) {
    q8_job *j = arg;
    (void)n_tasks;
    uint8_t *wp = hv_pool_scratch(j->pool, task, task_bytes(j));
    uint8_t *wrows = wp + (size_t)j->o.max_chunk * (j->kc + j->kc / BLK * 8);
    int m, r0, r1;
    while (hv_gemm_outs_next(&j->o, &m, &r0, &r1)) {
        const hv_mat *W = j->o.out[m].W;
        for (int k0 = 0; k0 < j->cols; k0 += j->kc) {
            int kc = j->cols - k0 < j->kc ? j->cols - k0 : j->kc, nbk = kc / BLK;
            int last = k0 + kc == j->cols; /* it adds the bias and finishes */
            size_t panel_bytes = (size_t)kc * j->g.nr + (size_t)nbk * j->g.nr * 8;
            if (W->x8)
                pack_w_x8(j, W, r0, r1, k0, kc, wp);
            else
                pack_w(j, W, r0, r1, k0, kc, wp, wrows);
            const uint8_t *xblock = j->xq + (long)k0 * j->n_pad;
            const float *dblock = j->xd + (long)k0 / BLK * j->n_pad;
            for (int i0 = 0; i0 < j->n; i0 += j->g.q8_mc) {
                int i1 = i0 + j->g.q8_mc < j->n ? i0 + j->g.q8_mc : j->n;
                for (int r = r0; r < r1;) {
                    const uint8_t *wpanel = wp + (size_t)(r - r0) / j->g.nr * panel_bytes;
                    float *y = j->o.out[m].y, pad[HV_GEMM_NR_MAX];
                    /* two whole panels at once where the table can */
                    int two = j->k->gemm_tiles_q8_2 && r + 2 * j->g.nr <= r1;
                    const float *bias =
                        last ? panel_bias(j->o.out[m].bias, r, r1, j->g.nr, pad) : NULL;
                    int i = i0;
                    /* the pass's whole tiles in one call (i0 is a multiple
                     * of MR, and so is i1 unless it is n), then an edge */
                    int full = r + j->g.nr <= r1 ? i1 / j->g.q8_mr - i0 / j->g.q8_mr : 0;
                    const float *wd = (const float *)(wpanel + (size_t)kc * j->g.nr);
                    const int32_t *wc = (const int32_t *)(wd + nbk * j->g.nr);
                    if (full > 0 && two)
                        j->k->gemm_tiles_q8_2(full, nbk, xblock + (long)i * kc,
                                              dblock + (long)i * nbk, (const int8_t *)wpanel, wd,
                                              wc, (long)panel_bytes, y + (long)i * W->rows + r,
                                              W->rows, k0 > 0, bias);
                    else if (full > 0)
                        j->k->gemm_tiles_q8(full, nbk, xblock + (long)i * kc,
                                            dblock + (long)i * nbk, (const int8_t *)wpanel, wd, wc,
                                            y + (long)i * W->rows + r, W->rows, k0 > 0, bias);
                    if (full > 0) i += full * j->g.q8_mr;
                    for (int p = 0; p < 1 + two; p++) {
                        int rp = r + p * j->g.nr;
                        const float *pb =
                            last ? panel_bias(j->o.out[m].bias, rp, r1, j->g.nr, pad) : NULL;
                        for (int e = i; e < i1; e += j->g.q8_mr)
                            edge_tile(j, W->rows, y, nbk, xblock + (long)e * kc,
                                      dblock + (long)e * nbk, wpanel + (size_t)p * panel_bytes, e,
                                      rp, r1, k0 > 0, pb);
                    }
                    r += (1 + two) * j->g.nr;
                }
                if (last) hv_gemm_outs_finish(&j->o, m, i0, i1, r0, r1);
            }
        }
    }
}

int hv_gemm_q8(const hv_mm_kernels *k, hv_pool *pool, int n, const float *x, int count,
               const hv_mat *const *W, const float *const *bias, float *const *y,
               const hv_epilogue *ep) {
    q8_job j = {.k = k, .g = k->geom, .pool = pool, .x = x, .n = n};
    j.n_pad = (n + j.g.q8_mr - 1) / j.g.q8_mr * j.g.q8_mr;
    if (hv_gemm_outs_init(&j.o, count, W, bias, y, hv_gemm_chunk_rows, ep)) return -1;
    hv_gemm_outs_taper(&j.o, hv_pool_size(pool));
    j.o.bias_done = 1;
    j.cols = j.o.cols;
    if (j.cols % BLK) return -1;
    /* the columns in equal blocks of at most KC_MAX (matmul_impl.h) */
    int nb = j.cols / BLK, pieces = (j.cols + j.g.q8_kc_max - 1) / j.g.q8_kc_max;
    j.kc = (nb + pieces - 1) / pieces * BLK;
    for (int m = 0; m < count; m++)
        if (W[m]->type != HV_WEIGHTS_Q8_0 && W[m]->type != HV_WEIGHTS_Q4_0) return -1;
    int tasks = hv_pool_size(pool);
    if (tasks > j.o.n_chunks) tasks = j.o.n_chunks;
    size_t x_bytes = (size_t)j.n_pad * j.cols, d_bytes = (size_t)j.n_pad * (j.cols / BLK) * 4;
    j.xd = hv_pool_scratch(pool, hv_pool_size(pool), d_bytes + x_bytes);
    if (!j.xd) return -1;
    j.xq = (uint8_t *)(j.xd + (size_t)j.n_pad * (j.cols / BLK));
    for (int t = 0; t < tasks; t++)
        if (!hv_pool_scratch(pool, t, task_bytes(&j))) return -1;
    int pack_tasks =
        hv_pool_size(pool) < j.n_pad / j.g.q8_mr ? hv_pool_size(pool) : j.n_pad / j.g.q8_mr;
    hv_pool_run(pool, pack_tasks, pack_x_task, &j);
    hv_pool_run(pool, tasks, gemm_task, &j);
    return 0;
}
