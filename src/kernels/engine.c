/* The kernel interface's products with weights (engine.h): which engine
 * runs a product, and the activations staged for it. The attention heads
 * are in attention.c, the convolutions in conv.c. */
#include "kernels/engine.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/onednn.h"
#include "kernels/ops.h"

void hv_engine_classes(hv_cpu cpu, int bf16, unsigned char *on_dnn) {
    for (int c = 0; c < HV_N_CLASSES; c++)
        on_dnn[c] = hv_engine_pick(cpu, bf16, (hv_shape_class)c) == HV_ENGINE_ONEDNN;
}

hv_engine hv_engine_with(hv_pool *pool, int bf16, struct hv_onednn *dnn,
                         const unsigned char *on_dnn) {
    hv_engine e = {.pool = pool, .bf16 = bf16 != 0, .dnn = dnn};
    for (int c = 0; c < HV_N_CLASSES; c++) e.on_dnn[c] = dnn && on_dnn[c];
    return e;
}

hv_engine hv_engine_make(hv_pool *pool, int bf16, struct hv_onednn *dnn) {
    hv_engine e = {.pool = pool, .bf16 = bf16 != 0, .dnn = dnn};
    e.on_dnn[HV_CLASS_SKINNY] = e.on_dnn[HV_CLASS_GEMM] = e.on_dnn[HV_CLASS_ATTENTION] =
        dnn != NULL;
    return e;
}

const hv_epilogue hv_ep_silu = {.act = HV_ACT_SILU}, hv_ep_relu = {.act = HV_ACT_RELU};

/* Whether bf16 compute rounds the activations of products with W: f32,
 * f16 and bf16 weights; q8_0 and q4_0 products quantize their activations
 * to int8 blocks in either mode. */
static int rounds_input(const hv_mat *W) {
    return W->type != HV_WEIGHTS_Q8_0 && W->type != HV_WEIGHTS_Q4_0;
}

typedef struct round_job {
    const float *x;
    float *xr;
    long count;
} round_job;

static void round_task(void *arg, int task, int n_tasks) {
    round_job *j = arg;
    long i0 = j->count * task / n_tasks, i1 = j->count * (task + 1) / n_tasks;
    hv_bf16_round_n(j->xr + i0, j->x + i0, i1 - i0);
}

/* x[count] rounded to bf16, in the pool's input slot (x may be that slot:
 * rounding is idempotent); NULL when the slot cannot be had. */
static const float *round_input(const hv_engine *e, const float *x, long count) {
    double t0 = hv_prof_now(e->prof);
    float *xr =
        hv_pool_scratch(e->pool, HV_POOL_SLOT_INPUT(e->pool), (size_t)count * sizeof(float));
    if (!xr) return NULL;
    round_job j = {.x = x, .xr = xr, .count = count};
    hv_pool_run(e->pool, count < 65536 ? 1 : hv_pool_size(e->pool), round_task, &j);
    hv_prof_part(e->prof, HV_STAGE_BF16_CONVERT, t0);
    return xr;
}

/* The product with rounded activations when no buffer for them can be
 * had: row by row, widening 256 weights at a time on the stack. */
static void linear_rounded_unbuffered(const hv_mm_kernels *k, float *y, const float *x, int n,
                                      const hv_mat *W, const float *bias, const hv_epilogue *ep) {
    float buf[256];
    for (int r = 0; r < W->rows; r++) {
        for (int i = 0; i < n; i++) y[(long)i * W->rows + r] = 0.0f;
        for (int c = 0; c < W->cols; c += 256) {
            int len = W->cols - c < 256 ? W->cols - c : 256;
            hv_mat_widen(k, W, r, c, len, buf);
            for (int i = 0; i < n; i++) {
                const float *xi = x + (long)i * W->cols + c;
                float s = 0.0f;
                for (int t = 0; t < len; t++) s = fmaf(buf[t], hv_bf16_round(xi[t]), s);
                y[(long)i * W->rows + r] += s;
            }
        }
        if (bias)
            for (int i = 0; i < n; i++) y[(long)i * W->rows + r] += bias[r];
    }
    if (ep) hv_epilogue_run(ep, y, ep->residual, (long)n * W->rows);
}

int hv_eng_on_dnn(const hv_engine *e, int n, const hv_mat *W) {
    return e->on_dnn[hv_shape_class_rows(n)] && hv_onednn_takes(e->dnn, W);
}

static int onednn_runs(const hv_engine *e, int n, const hv_mat *W) {
    return hv_eng_on_dnn(e, n, W);
}

void hv_eng_linear(const hv_engine *e, float *y, const float *x, int n, const hv_mat *W,
                   const float *bias, const hv_epilogue *ep) {
    if (n <= 0 || W->rows <= 0) return;
    if (onednn_runs(e, n, W) &&
        hv_onednn_gemm(e->dnn, e->pool, n, x, 1, &W, &bias, &y, ep, e->prof) == 0)
        return;
    if (e->bf16 && rounds_input(W)) {
        const float *xr = round_input(e, x, (long)n * W->cols);
        if (!xr) {
            linear_rounded_unbuffered(hv_mm_best(), y, x, n, W, bias, ep);
            return;
        }
        x = xr;
    }
    hv_linear_ep_with(hv_mm_best(), e->pool, y, x, n, W, bias, ep);
}

void hv_eng_linear_many(const hv_engine *e, int n, const float *x, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y) {
    int fits = count <= HV_GEMM_MAX_OUT, dnn = 1, round = 0;
    for (int m = 0; m < count; m++) {
        fits &= W[m]->cols == W[0]->cols && W[m]->rows > 0;
        dnn &= onednn_runs(e, n, W[m]);
        round += e->bf16 && rounds_input(W[m]);
    }
    if (count > 0 && fits && dnn &&
        hv_onednn_gemm(e->dnn, e->pool, n, x, count, W, bias, y, NULL, e->prof) == 0)
        return;
    if (round) {
        /* x rounded once for all of them, else each product rounds its own */
        const float *xr = round == count && n > 0 ? round_input(e, x, (long)n * W[0]->cols) : NULL;
        if (!xr) {
            for (int m = 0; m < count; m++) hv_eng_linear(e, y[m], x, n, W[m], bias[m], NULL);
            return;
        }
        x = xr;
    }
    hv_linear_many(e->pool, n, x, count, W, bias, y);
}

typedef struct norm_job {
    float *y;
    const float *x;
    int n, d;
    const float *w, *b;
    float eps;
} norm_job;

static void norm_task(void *arg, int task, int n_tasks) {
    const norm_job *j = arg;
    int per = (j->n + n_tasks - 1) / n_tasks;
    int r0 = task * per, r1 = r0 + per < j->n ? r0 + per : j->n;
    if (r0 < r1)
        hv_layernorm(j->y + (long)r0 * j->d, j->x + (long)r0 * j->d, r1 - r0, j->d, j->w, j->b,
                     j->eps);
}

void hv_eng_layernorm(const hv_engine *e, float *y, const float *x, int n, int d, const float *w,
                      const float *b, float eps) {
    norm_job j = {.y = y, .x = x, .n = n, .d = d, .w = w, .b = b, .eps = eps};
    hv_pool_run(e->pool, n < 64 ? 1 : hv_pool_size(e->pool), norm_task, &j);
}

/* The LayerNorm's rows [i0, i1) written for oneDNN (hv_onednn_rows). */
static void norm_fill(void *arg, int task, int bits, void *dst, int i0, int i1) {
    (void)task;
    const norm_job *j = arg;
    const float *x = j->x + (long)i0 * j->d;
    if (bits)
        hv_layernorm_bf16(dst, x, i1 - i0, j->d, j->w, j->b, j->eps);
    else
        hv_layernorm(dst, x, i1 - i0, j->d, j->w, j->b, j->eps);
}

int hv_eng_norm_linear_sink(const hv_engine *e, const float *x, int n, int d, const float *nw,
                            const float *nb, float eps, int count, const hv_mat *const *W,
                            const float *const *bias, const struct hv_onednn_sink *sink) {
    if (n <= 0 || count < 1 || count > HV_GEMM_MAX_OUT) return -1;
    for (int m = 0; m < count; m++)
        if (W[m]->cols != d || !onednn_runs(e, n, W[m])) return -1;
    norm_job j = {.x = x, .n = n, .d = d, .w = nw, .b = nb, .eps = eps};
    hv_onednn_rows rows = {.fill = norm_fill, .arg = &j, .stage = HV_STAGE_LAYERNORM};
    return hv_onednn_gemm_sink(e->dnn, e->pool, n, NULL, &rows, count, W, bias, sink, e->prof);
}

void hv_eng_norm_linear(const hv_engine *e, float *norm, const float *x, int n, int d,
                        const float *nw, const float *nb, float eps, int count,
                        const hv_mat *const *W, const float *const *bias, float *const *y,
                        const hv_epilogue *ep) {
    if (n <= 0 || count < 1) return;
    int dnn = count <= HV_GEMM_MAX_OUT && (count == 1 || !ep);
    for (int m = 0; m < count; m++) dnn &= W[m]->cols == d && onednn_runs(e, n, W[m]);
    norm_job j = {.x = x, .n = n, .d = d, .w = nw, .b = nb, .eps = eps};
    hv_onednn_rows rows = {.fill = norm_fill, .arg = &j, .stage = HV_STAGE_LAYERNORM};
    if (dnn && hv_onednn_gemm_rows(e->dnn, e->pool, n, &rows, count, W, bias, y, ep, e->prof) == 0)
        return;
    double t0 = hv_prof_now(e->prof);
    hv_eng_layernorm(e, norm, x, n, d, nw, nb, eps);
    hv_prof_part(e->prof, HV_STAGE_LAYERNORM, t0);
    if (count == 1)
        hv_eng_linear(e, y[0], norm, n, W[0], bias[0], ep);
    else
        hv_eng_linear_many(e, n, norm, count, W, bias, y);
}

/* Where the feed-forward's first product goes on the bf16 engine: SiLU,
 * then rounded to bf16 into the second product's input [rows_class(n) x
 * cols] (the bits of the epilogue and of the conversion after it). */
typedef struct silu_sink {
    uint16_t *hb;
    int cols;
} silu_sink;

static void silu_put(void *arg, int m, int i0, int i1, int r0, int r1, const float *src, long ld) {
    (void)m;
    const silu_sink *s = arg;
    enum { PIECE = 1024 };
    float piece[PIECE];
    for (int i = i0; i < i1; i++)
        for (int c0 = r0; c0 < r1; c0 += PIECE) { /* one piece: chunks are narrower */
            int count = r1 - c0 < PIECE ? r1 - c0 : PIECE;
            memcpy(piece, src + (long)(i - i0) * ld + (c0 - r0), (size_t)count * sizeof *piece);
            hv_silu(piece, count);
            hv_bf16_bits_n(s->hb + (long)i * s->cols + c0, piece, count);
        }
}

void hv_eng_feed_forward(const hv_engine *e, float *norm, const float *x, int n, int d,
                         const float *nw, const float *nb, float eps, const hv_mat *up,
                         const float *up_b, const hv_mat *down, const float *down_b, float *hidden,
                         float *y, const hv_epilogue *ep) {
    int h = up->rows;
    long m_pad = hv_onednn_rows_class(n);
    /* the bf16 hidden layer, padded, in hidden's floats */
    if (e->bf16 && hv_onednn_is_bf16(e->dnn) && up->cols == d && down->cols == h &&
        onednn_runs(e, n, up) && onednn_runs(e, n, down) && m_pad * h * 2 <= (long)n * h * 4) {
        uint16_t *hb = (uint16_t *)hidden;
        memset(hb + (long)n * h, 0, (size_t)(m_pad - n) * h * sizeof *hb);
        silu_sink s = {hb, h};
        hv_onednn_sink sink = {.put = silu_put, .arg = &s};
        norm_job j = {.x = x, .n = n, .d = d, .w = nw, .b = nb, .eps = eps};
        hv_onednn_rows rows = {.fill = norm_fill, .arg = &j, .stage = HV_STAGE_LAYERNORM};
        hv_onednn_rows ready = {.ready = hb, .stage = HV_STAGE_BF16_CONVERT};
        if (hv_onednn_gemm_sink(e->dnn, e->pool, n, NULL, &rows, 1, &up, &up_b, &sink, e->prof) ==
                0 &&
            hv_onednn_gemm_rows(e->dnn, e->pool, n, &ready, 1, &down, &down_b, &y, ep, e->prof) ==
                0)
            return;
        /* a buffer not had: both products again as below */
    }
    hv_eng_norm_linear(e, norm, x, n, d, nw, nb, eps, 1, &up, &up_b, &hidden, &hv_ep_silu);
    hv_eng_linear(e, y, hidden, n, down, down_b, ep);
}
