/* The FastConformer encoder, step by step as docs/MODEL.md describes it.
 * Activations are row-major [time x features]; the subsampling keeps its
 * images channel-last [time x freq x channels] so that the pointwise
 * convolutions are plain matrix products. */
#include "encoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/onednn.h"
#include "kernels/ops.h"
#include "kernels/profile.h"

/* ------------------------------------------------------- subsampling */

typedef struct conv_job {
    const float *in; /* [T x F x Cin] */
    float *out;      /* [T2 x F2 x C] */
    int T, F, T2, F2, C;
    const float *w; /* [3 x 3 x C]: tap-major, so a tap's channels are contiguous */
    const float *b; /* [C] */
    int depthwise;  /* 0: 1 -> C channels (Cin = 1); 1: C -> C per channel */
    int relu;
} conv_job;

/* 3x3 convolution, stride 2, padding 1, over output time rows. Each output
 * is its bias plus the taps in (time, frequency) order, as the checkpoint's
 * [C x 3 x 3] weights are laid out; the loops over channels are contiguous
 * so that the compiler vectorises them. */
static void conv_task(void *arg, int task, int n_tasks) {
    const conv_job *j = arg;
    int C = j->C, cin = j->depthwise ? C : 1;
    for (int t = task; t < j->T2; t += n_tasks) {
        for (int f = 0; f < j->F2; f++) {
            float *o = j->out + ((long)t * j->F2 + f) * C;
            memcpy(o, j->b, (size_t)C * sizeof *o);
            for (int kt = 0; kt < 3; kt++) {
                int ti = 2 * t - 1 + kt;
                if (ti < 0 || ti >= j->T) continue;
                for (int kf = 0; kf < 3; kf++) {
                    int fi = 2 * f - 1 + kf;
                    if (fi < 0 || fi >= j->F) continue;
                    const float *x = j->in + ((long)ti * j->F + fi) * cin;
                    const float *w = j->w + (kt * 3 + kf) * C;
                    if (j->depthwise)
                        for (int c = 0; c < C; c++) o[c] += w[c] * x[c];
                    else
                        for (int c = 0; c < C; c++) o[c] += w[c] * x[0];
                }
            }
            if (j->relu)
                for (int c = 0; c < C; c++) o[c] = o[c] > 0 ? o[c] : 0;
        }
    }
}

/* [C x 3 x 3] -> [3 x 3 x C] into wt. */
static void taps_first(float *wt, const float *w, int C) {
    for (int c = 0; c < C; c++)
        for (int k = 0; k < 9; k++) wt[k * C + c] = w[c * 9 + k];
}

/* Zeroes time rows >= len of a [T x row] buffer. */
static void mask_rows(float *x, int T, long row, int len) {
    if (len < T) memset(x + (long)len * row, 0, (size_t)(T - len) * row * sizeof *x);
}

/* dw_striding subsampling: returns [T_enc x d_model] and the valid length. */
static float *subsample(const hv_config *c, const hv_encoder_weights *w, hv_pool *pool,
                        hv_profile *prof, const float *feat, int T, int n_valid, int *T_out,
                        int *len_out) {
    double t = hv_prof_now(prof);
    int C = c->sub_channels, F = c->feat_in, len = n_valid;
    float *in = malloc((size_t)T * F * sizeof *in);
    if (!in) return NULL;
    memcpy(in, feat, (size_t)T * F * sizeof *in);
    mask_rows(in, T, F, len);

    int T2 = hv_sub_conv_len(T), F2 = hv_sub_conv_len(F);
    float *img = malloc((size_t)T2 * F2 * C * sizeof *img);
    float *wt = malloc((size_t)9 * C * sizeof *wt);
    if (!img || !wt) {
        free(in);
        free(img);
        free(wt);
        return NULL;
    }
    taps_first(wt, w->conv0_w, C);
    conv_job j0 = {.in = in,
                   .out = img,
                   .T = T,
                   .F = F,
                   .T2 = T2,
                   .F2 = F2,
                   .C = C,
                   .w = wt,
                   .b = w->conv0_b,
                   .depthwise = 0,
                   .relu = 1};
    hv_pool_run(pool, hv_pool_size(pool), conv_task, &j0);
    hv_prof_add(prof, HV_STAGE_SUB_CONV, &t);
    free(in);
    T = T2;
    F = F2;
    len = hv_sub_conv_len(len);

    for (int s = 1; s < w->n_stages; s++) {
        mask_rows(img, T, (long)F * C, len);
        T2 = hv_sub_conv_len(T);
        F2 = hv_sub_conv_len(F);
        float *dw = malloc((size_t)T2 * F2 * C * sizeof *dw);
        float *pw = malloc((size_t)T2 * F2 * C * sizeof *pw);
        if (!dw || !pw) {
            free(dw);
            free(pw);
            free(img);
            free(wt);
            return NULL;
        }
        taps_first(wt, w->dw_w[s], C);
        conv_job j = {.in = img,
                      .out = dw,
                      .T = T,
                      .F = F,
                      .T2 = T2,
                      .F2 = F2,
                      .C = C,
                      .w = wt,
                      .b = w->dw_b[s],
                      .depthwise = 1,
                      .relu = 0};
        hv_pool_run(pool, hv_pool_size(pool), conv_task, &j);
        free(img);
        T = T2;
        F = F2;
        len = hv_sub_conv_len(len);
        mask_rows(dw, T, (long)F * C, len);
        hv_prof_add(prof, HV_STAGE_SUB_CONV, &t);
        hv_linear_relu(pool, pw, dw, T * F, &w->pw[s], w->pw_b[s]);
        hv_prof_add(prof, HV_STAGE_SUB_LINEAR, &t);
        free(dw);
        img = pw;
    }

    /* Flatten each time step channel-major (index c * F + f), as the
     * checkpoint's Linear expects, then project to d_model. */
    free(wt);
    float *flat = malloc((size_t)T * C * F * sizeof *flat);
    float *x = malloc((size_t)T * c->d_model * sizeof *x);
    if (!flat || !x) {
        free(flat);
        free(x);
        free(img);
        return NULL;
    }
    for (int t = 0; t < T; t++)
        for (int f = 0; f < F; f++)
            for (int ch = 0; ch < C; ch++)
                flat[((long)t * C + ch) * F + f] = img[((long)t * F + f) * C + ch];
    free(img);
    hv_prof_add(prof, HV_STAGE_ELEMENTWISE, &t);
    hv_linear(pool, x, flat, T, &w->pre_out, w->pre_out_b);
    hv_prof_add(prof, HV_STAGE_SUB_LINEAR, &t);
    free(flat);
    *T_out = T;
    *len_out = len;
    return x;
}

/* ----------------------------------------------------- conformer layer */

/* Scratch for one layer pass, sized for n frames. */
typedef struct enc_scratch {
    float *norm;                  /* [n x d] */
    float *big;                   /* [n x 4d]: feed-forward hidden, GLU input */
    float *q, *k, *v, *ctx, *tmp; /* [n x d] */
    float *pos;                   /* [(2N-1) x d]: sinusoids (N: pos_frames) */
    float *p;                     /* [(2N-1) x d]: a layer's linear_pos(pos) */
    float *att;                   /* hv_attention_scratch(n, d, H, bf16) */
    float *dw_taps;               /* [K x d]: a layer's depthwise weights, tap-major */
    hv_profile *prof;             /* NULL unless the caller asked for the stages' times */
    double t;                     /* with prof: the clock at the end of the last stage timed */
} enc_scratch;

/* Row-wise work spread over the pool: LayerNorm and GLU are cheap
 * per row but add up over 48 layers. Rows are independent, so the results
 * do not depend on the split. */
typedef struct rows_job {
    enum { ROWS_LAYERNORM, ROWS_GLU } op;
    float *y;
    const float *x;
    int n, d, len;      /* rows, row width (GLU: output width), valid rows */
    const float *w, *b; /* LayerNorm */
} rows_job;

static void rows_task(void *arg, int task, int n_tasks) {
    const rows_job *j = arg;
    int per = (j->n + n_tasks - 1) / n_tasks;
    int r0 = task * per, r1 = r0 + per < j->n ? r0 + per : j->n;
    if (r0 >= r1) return;
    long d = j->d;
    switch (j->op) {
        case ROWS_LAYERNORM:
            hv_layernorm(j->y + r0 * d, j->x + r0 * d, r1 - r0, j->d, j->w, j->b, HV_LN_EPS);
            break;
        case ROWS_GLU: /* first half * sigmoid(second half); padded rows zero */
            for (int t = r0; t < r1; t++) {
                float *g = j->y + (long)t * d;
                if (t < j->len)
                    hv_glu(g, j->x + (long)t * 2 * d, d);
                else
                    memset(g, 0, (size_t)d * sizeof *g);
            }
            break;
    }
}

static void rows_run(hv_pool *pool, rows_job j) {
    hv_pool_run(pool, j.n < 64 ? 1 : hv_pool_size(pool), rows_task, &j);
}

static void layernorm(hv_pool *pool, float *y, const float *x, int n, int d, const float *w,
                      const float *b) {
    rows_run(pool, (rows_job){ROWS_LAYERNORM, y, x, n, d, n, w, b});
}

static void feed_forward_half(const hv_config *c, hv_pool *pool, float *x, int n, enc_scratch *s,
                              const float *nw, const float *nb, const hv_mat *up, const float *up_b,
                              const hv_mat *down, const float *down_b) {
    int d = c->d_model;
    layernorm(pool, s->norm, x, n, d, nw, nb);
    hv_prof_add(s->prof, HV_STAGE_LAYERNORM, &s->t);
    hv_linear_silu(pool, s->big, s->norm, n, up, up_b);
    hv_linear_add(pool, x, s->tmp, s->big, n, down, down_b, 0.5f);
    hv_prof_add(s->prof, HV_STAGE_FF_LINEAR, &s->t);
}

typedef struct attn_job {
    const float *q, *k, *v; /* [n x d] */
    float *ctx;             /* [n x d] */
    float *att;             /* [H x head_scratch(n, dh, bf16)] */
    const float *u, *vb;    /* pos_bias_u, pos_bias_v: [d] */
    const float *p;         /* [(2n-1) x d]: linear_pos rows of positions n-1 .. -(n-1) */
    int n, len, d, H, dh;
    int bf16;       /* bf16 compute (attn_head_bf16) */
    hv_onednn *dnn; /* with bf16: the pool's engine, or NULL for the emulation */
    hv_profile *prof;
    double *busy; /* with prof: [H][3] each head's own time in products, softmax, staging */
} attn_job;

enum { BUSY_PRODUCTS, BUSY_SOFTMAX, BUSY_STAGING };

/* With a profile: the time since *t into head h's part `what`, *t now. */
static void head_busy(const attn_job *j, int h, int what, double *t) {
    if (!j->prof) return;
    double now = hv_prof_now(j->prof);
    j->busy[h * 3 + what] += now - *t;
    *t = now;
}

/* Queries per band of the position scores: a band of T queries needs
 * len + T - 1 of the 2n - 1 relative positions. */
#define POS_BAND 32

/* Shape classes of the bf16 engine's attention products: their rows and
 * columns rounded up to a multiple of this (operands' padding zero). */
#define ATT_CLASS 16

static long att_class(long x) { return (x + ATT_CLASS - 1) / ATT_CLASS * ATT_CLASS; }

/* Floats of per-head attention scratch. f32: (q + u), (q + v) [n x dh], the
 * content scores ac [n x n], one band of position scores
 * [POS_BAND x (n + POS_BAND - 1)], and the head's keys and the positions
 * its bands read, transposed: [dh x n] and [dh x (2n - 1)]. bf16 (attn_head_bf16), with c = n
 * rounded up to ATT_CLASS: the bf16-rounded operands (q + u), (q + v), k,
 * v [c x dh] and positions [(2c + ATT_CLASS) x dh] (bf16 bits for the
 * engine, floats for the emulation), the scores [c x c] and their bf16
 * probabilities [c x c], a band [POS_BAND x class(n + POS_BAND - 1)] and
 * the context [c x dh]. */
static long head_scratch(int n, int dh, int bf16) {
    if (!bf16)
        return 2L * n * dh + (long)n * n + (long)POS_BAND * (n + POS_BAND - 1) +
               (long)dh * (3L * n - 1);
    long c = att_class(n);
    return 4 * c * dh + (2 * c + ATT_CLASS) * dh + 2 * c * c +
           POS_BAND * att_class(n + POS_BAND - 1) + c * dh;
}

/* dst[t * ld + r] = src[r * stride + t] for r < rows, t < dh: a head's
 * rows of keys or positions, transposed so that its products read them as
 * a row-major right-hand side (sgemm_nn). In blocks of 16 x 16, so that
 * each block writes 16 whole cache lines instead of one float of dh. */
static void transpose_head(float *dst, long ld, const float *src, long stride, int rows, int dh) {
    enum { TB = 16 };
    for (int r0 = 0; r0 < rows; r0 += TB) {
        int r1 = r0 + TB < rows ? r0 + TB : rows;
        for (int t0 = 0; t0 < dh; t0 += TB) {
            int t1 = t0 + TB < dh ? t0 + TB : dh;
            for (int t = t0; t < t1; t++)
                for (int r = r0; r < r1; r++) dst[t * ld + r] = src[r * stride + t];
        }
    }
}

/* Relative-position attention for one head. Its three products are the
 * kernel table's sgemm_nn (each output one fma chain, the same bits on
 * every table and CPU), on the keys and positions transposed once. */
static void attn_head(void *arg, int h, int n_tasks) {
    (void)n_tasks;
    const attn_job *j = arg;
    const hv_mm_kernels *kt = hv_mm_best();
    int n = j->n, d = j->d, dh = j->dh, len = j->len;
    float *qu = j->att + (long)h * head_scratch(n, dh, 0);
    float *qv = qu + (long)n * dh;
    float *ac = qv + (long)n * dh;
    float *bd = ac + (long)n * n;
    float *kT = bd + (long)POS_BAND * (n + POS_BAND - 1); /* [dh][n] */
    float *pT = kT + (long)dh * n;                        /* [dh][2 len - 1] */
    float scale = 1.0f / sqrtf((float)dh);
    const float *u = j->u + h * dh, *vb = j->vb + h * dh;
    double t = hv_prof_now(j->prof);

    for (int i = 0; i < len; i++) {
        const float *q = j->q + (long)i * d + h * dh;
        for (int t = 0; t < dh; t++) {
            qu[(long)i * dh + t] = q[t] + u[t];
            qv[(long)i * dh + t] = q[t] + vb[t];
        }
    }
    /* ac = (q + u) k^T over valid keys */
    transpose_head(kT, n, j->k + h * dh, d, len, dh);
    head_busy(j, h, BUSY_STAGING, &t);
    kt->sgemm_nn(len, len, dh, qu, dh, kT, n, ac, n);
    /* the position scores (q + v) p^T band by band, each band of queries
     * [i0, i1) over the relative positions its keys need: key j of query
     * i sits at position row n-1-i+j, so the band needs rows n-i1 ..
     * n-2-i0+len (the rel-shift, without the other half of the 2n-1);
     * all bands together read rows n-len .. n+len-2, pT's columns */
    long pld = 2L * len - 1;
    head_busy(j, h, BUSY_PRODUCTS, &t);
    transpose_head(pT, pld, j->p + (long)(n - len) * d + h * dh, d, (int)pld, dh);
    head_busy(j, h, BUSY_STAGING, &t);
    for (int i0 = 0; i0 < len; i0 += POS_BAND) {
        int i1 = i0 + POS_BAND < len ? i0 + POS_BAND : len, row0 = n - i1;
        int width = len + (i1 - i0) - 1;
        kt->sgemm_nn(i1 - i0, width, dh, qv + (long)i0 * dh, dh, pT + (len - i1), pld, bd, width);
        head_busy(j, h, BUSY_PRODUCTS, &t);
        for (int i = i0; i < i1; i++) {
            float *sc = ac + (long)i * n;
            const float *b = bd + (long)(i - i0) * width + (n - 1 - i - row0);
            for (int jj = 0; jj < len; jj++) sc[jj] = (sc[jj] + b[jj]) * scale;
            hv_softmax(sc, len); /* padded keys would get exactly 0 */
        }
        head_busy(j, h, BUSY_SOFTMAX, &t);
    }
    /* context of every valid query in one product; padded queries'
     * probabilities are masked to 0 */
    kt->sgemm_nn(len, dh, len, ac, n, j->v + h * dh, d, j->ctx + h * dh, d);
    for (int i = len; i < n; i++)
        memset(j->ctx + (long)i * d + h * dh, 0, (size_t)dh * sizeof(float));
    head_busy(j, h, BUSY_PRODUCTS, &t);
}

/* x[0, n) (plus add[t] when add is not NULL) rounded to bf16 (as
 * hv_f32_to_bf16) into dst: bf16 bits when bits, else floats holding the
 * rounded values (dst may be x then). */
static void round_bf16(void *dst, int bits, const float *x, const float *add, int n) {
    uint16_t *db = dst;
    float *df = dst;
    if (bits && add)
        for (int t = 0; t < n; t++) db[t] = hv_bf16_bits(x[t] + add[t]);
    else if (bits)
        hv_bf16_bits_n(db, x, n);
    else if (add)
        for (int t = 0; t < n; t++) df[t] = hv_bf16_round(x[t] + add[t]);
    else
        hv_bf16_round_n(df, x, n);
}

/* Rows [0, valid) of src (rows ld floats apart, dh wide; plus add) rounded
 * to bf16 into dst's rows (dh apart) as round_bf16 writes them; rows
 * [valid, rows) zero. */
static void stage_bf16(void *dst, int bits, const float *src, long ld, const float *add, int valid,
                       int rows, int dh) {
    size_t esz = bits ? 2 : 4;
    for (int i = 0; i < rows; i++) {
        char *row = (char *)dst + (size_t)i * dh * esz;
        if (i >= valid)
            memset(row, 0, (size_t)dh * esz);
        else
            round_bf16(row, bits, src + (long)i * ld, add, dh);
    }
}

/* C = A . op(B) of bf16-rounded operands with f32 sums: the engine's
 * matmul on bf16 bits, or the emulation's f32 GEMM on floats holding bf16
 * values (exact products, so the two differ only in summation order). */
static void head_product(hv_onednn *dnn, int m, int n, int k, const void *a, int lda, const void *b,
                         int ldb, int b_trans, float *c, int ldc) {
    if (dnn)
        hv_onednn_matmul(dnn, m, n, k, a, lda, b, ldb, b_trans, c, ldc);
    else
        hv_gemm(m, n, k, 1.0f, a, lda, b, ldb, b_trans, 0.0f, c, ldc);
}

/* attn_head in bf16 compute: the three products take bf16 operands and
 * sum in f32, as PyTorch's bf16 mode and the weight products do. The
 * head's (q + u), (q + v), k, v and the positions its bands read are
 * rounded once into contiguous scratch, the softmax runs on the f32
 * scores and its probabilities are rounded to bf16 before the context
 * (PyTorch holds them in bf16). With the engine, each product is one
 * oneDNN matmul whose rows, columns and sums are padded up to ATT_CLASS
 * with zero operands, so that a few primitives serve every clip length;
 * the emulation multiplies the exact shapes with hv_gemm. */
static void attn_head_bf16(void *arg, int h, int n_tasks) {
    (void)n_tasks;
    const attn_job *j = arg;
    int n = j->n, d = j->d, dh = j->dh, len = j->len;
    hv_onednn *dnn = j->dnn;
    /* bf16 bits for the bf16 engine; floats holding bf16 values for the
     * emulation and for an f32 engine (the tests' stand-in for the bf16
     * engine on CPUs without one: the same padded products) */
    int bits = hv_onednn_is_bf16(dnn), esz = bits ? 2 : 4, pad = dnn != NULL;
    /* with an engine, every shape rounded up to its class */
    int cl = pad ? (int)att_class(len) : len;
    long c = att_class(n), ld = c; /* scores' and probabilities' row stride */
    float *base = j->att + h * head_scratch(n, dh, 1);
    char *qu = (char *)base;
    char *qv = qu + c * dh * esz, *kk = qv + c * dh * esz, *vv = kk + c * dh * esz;
    char *pp = vv + c * dh * esz;
    float *ac = base + 4 * c * dh + (2 * c + ATT_CLASS) * dh; /* floats, whatever esz */
    float *pr = ac + c * c; /* the engine's rounded probabilities */
    float *bd = pr + c * c, *ctx = bd + POS_BAND * att_class(n + POS_BAND - 1);
    float scale = 1.0f / sqrtf((float)dh);
    const float *u = j->u + h * dh, *vb = j->vb + h * dh;
    double t = hv_prof_now(j->prof);

    stage_bf16(qu, bits, j->q + h * dh, d, u, len, cl, dh);
    stage_bf16(qv, bits, j->q + h * dh, d, vb, len, cl, dh);
    stage_bf16(kk, bits, j->k + h * dh, d, NULL, len, cl, dh);
    stage_bf16(vv, bits, j->v + h * dh, d, NULL, len, cl, dh);
    /* the bands read position rows n-len .. n+len-2: staged from row 0,
     * with ATT_CLASS zero rows after them for the padded bands */
    stage_bf16(pp, bits, j->p + (long)(n - len) * d + h * dh, d, NULL, 2 * len - 1,
               pad ? 2 * cl + ATT_CLASS : 2 * len - 1, dh);
    head_busy(j, h, BUSY_STAGING, &t);
    head_product(dnn, cl, cl, dh, qu, dh, kk, dh, 1, ac, (int)ld);
    for (int i0 = 0; i0 < len; i0 += POS_BAND) {
        int i1 = i0 + POS_BAND < len ? i0 + POS_BAND : len, row0 = n - i1;
        int width = len + (i1 - i0) - 1, rows = i1 - i0;
        if (pad) width = (int)att_class(width), rows = (int)att_class(rows);
        head_product(dnn, rows, width, dh, qv + (long)i0 * dh * esz, dh,
                     pp + (long)(len - i1) * dh * esz, dh, 1, bd, width);
        head_busy(j, h, BUSY_PRODUCTS, &t);
        for (int i = i0; i < i1; i++) {
            float *sc = ac + (long)i * ld;
            const float *b = bd + (long)(i - i0) * width + (n - 1 - i - row0);
            for (int jj = 0; jj < len; jj++) sc[jj] = (sc[jj] + b[jj]) * scale;
            hv_softmax(sc, len);
            /* the engine's probabilities in pr, padded; the emulation's
             * rounded in place */
            char *row = pad ? (char *)pr + (size_t)i * ld * esz : (char *)sc;
            round_bf16(row, bits, sc, NULL, len);
            if (pad) memset(row + (size_t)len * esz, 0, (size_t)(cl - len) * esz);
        }
        head_busy(j, h, BUSY_SOFTMAX, &t);
    }
    if (pad) {
        for (int i = len; i < cl; i++) memset((char *)pr + i * ld * esz, 0, (size_t)cl * esz);
        head_product(dnn, cl, dh, cl, pr, (int)ld, vv, dh, 0, ctx, dh);
        for (int i = 0; i < len; i++)
            memcpy(j->ctx + (long)i * d + h * dh, ctx + (long)i * dh, (size_t)dh * sizeof(float));
    } else {
        hv_gemm(len, dh, len, 1.0f, ac, (int)ld, (const float *)vv, dh, 0, 0.0f, j->ctx + h * dh,
                d);
    }
    for (int i = len; i < n; i++)
        memset(j->ctx + (long)i * d + h * dh, 0, (size_t)dh * sizeof(float));
    head_busy(j, h, BUSY_PRODUCTS, &t);
}

void hv_attention_heads(hv_pool *pool, int n, int len, int d, int H, const float *q, const float *k,
                        const float *v, const float *p, const float *u, const float *vb, float *att,
                        float *ctx, hv_profile *prof) {
    hv_onednn *dnn = hv_pool_onednn(pool);
    attn_job j = {.q = q,
                  .k = k,
                  .v = v,
                  .ctx = ctx,
                  .att = att,
                  .u = u,
                  .vb = vb,
                  .p = p,
                  .n = n,
                  .len = len,
                  .d = d,
                  .H = H,
                  .dh = d / H,
                  .bf16 = hv_pool_bf16(pool),
                  .dnn = dnn};
    /* with a profile, the job's time split as the heads spent theirs */
    if (prof && !(j.busy = calloc((size_t)H * 3, sizeof *j.busy))) prof = NULL;
    j.prof = prof;
    double t0 = hv_prof_now(prof);
    hv_pool_run(pool, H, j.bf16 ? attn_head_bf16 : attn_head, &j);
    if (!prof) return;
    double wall = hv_prof_now(prof) - t0, part[3] = {0, 0, 0};
    for (int h = 0; h < H; h++)
        for (int w = 0; w < 3; w++) part[w] += j.busy[h * 3 + w];
    double all = part[0] + part[1] + part[2];
    static const hv_stage stage[3] = {HV_STAGE_ATTN_PRODUCTS, HV_STAGE_ATTN_SOFTMAX,
                                      HV_STAGE_ATTN_STAGING};
    for (int w = 0; w < 3 && all > 0; w++) prof->ms[stage[w]] += wall * part[w] / all;
    free(j.busy);
}

long hv_attention_scratch(int n, int d, int H, int bf16) {
    return H * head_scratch(n, d / H, bf16);
}

static void self_attention(const hv_config *c, hv_pool *pool, float *x, int n, int len,
                           enc_scratch *s, const hv_enc_layer *y, const float *p) {
    int d = c->d_model, H = c->enc_heads;
    layernorm(pool, s->norm, x, n, d, y->att_norm_w, y->att_norm_b);
    hv_prof_add(s->prof, HV_STAGE_LAYERNORM, &s->t);
    const hv_mat *qkv[3] = {&y->wq, &y->wk, &y->wv};
    const float *qkv_b[3] = {y->bq, y->bk, y->bv};
    float *qkv_y[3] = {s->q, s->k, s->v};
    hv_linear_many(pool, n, s->norm, 3, qkv, qkv_b, qkv_y);
    hv_prof_add(s->prof, HV_STAGE_ATTN_LINEAR, &s->t);
    hv_attention_heads(pool, n, len, d, H, s->q, s->k, s->v, p, y->pos_bias_u, y->pos_bias_v,
                       s->att, s->ctx, s->prof);
    s->t = hv_prof_now(s->prof);
    hv_linear_add(pool, x, s->tmp, s->ctx, n, &y->wo, y->bo, 1.0f);
    hv_prof_add(s->prof, HV_STAGE_ATTN_LINEAR, &s->t);
}

typedef struct dwconv_job {
    const float *in;    /* [n x d] GLU output, padded rows zero */
    float *out;         /* [n x d] */
    const float *w, *b; /* [K x d] (BatchNorm folded), [d] */
    int n, d, K;
} dwconv_job;

/* Depthwise conv over time + folded BatchNorm + SiLU, over time rows; w is
 * tap-major [K x d] so the loops over channels are contiguous. */
static void dwconv_task(void *arg, int task, int n_tasks) {
    const dwconv_job *j = arg;
    int pad = (j->K - 1) / 2;
    for (int t = task; t < j->n; t += n_tasks) {
        float *o = j->out + (long)t * j->d;
        memcpy(o, j->b, (size_t)j->d * sizeof *o);
        for (int k = 0; k < j->K; k++) {
            int ti = t + k - pad;
            if (ti < 0 || ti >= j->n) continue;
            const float *xi = j->in + (long)ti * j->d, *w = j->w + (long)k * j->d;
            for (int ch = 0; ch < j->d; ch++) o[ch] += w[ch] * xi[ch];
        }
        hv_silu(o, j->d);
    }
}

static void conv_module(const hv_config *c, hv_pool *pool, float *x, int n, int len, enc_scratch *s,
                        const hv_enc_layer *y) {
    int d = c->d_model;
    layernorm(pool, s->norm, x, n, d, y->conv_norm_w, y->conv_norm_b);
    hv_prof_add(s->prof, HV_STAGE_LAYERNORM, &s->t);
    hv_linear(pool, s->big, s->norm, n, &y->pw1, y->pw1_b); /* [n x 2d] */
    hv_prof_add(s->prof, HV_STAGE_CONV_POINTWISE, &s->t);
    /* GLU over channels; the padded time steps are zeroed so they do not
     * leak into the convolution */
    rows_run(pool, (rows_job){ROWS_GLU, s->q, s->big, n, d, len, NULL, NULL});
    hv_prof_add(s->prof, HV_STAGE_ELEMENTWISE, &s->t);
    int K = c->conv_kernel;
    for (int ch = 0; ch < d; ch++)
        for (int k = 0; k < K; k++) s->dw_taps[(long)k * d + ch] = y->dw_w[(long)ch * K + k];
    dwconv_job j = {.in = s->q, .out = s->k, .w = s->dw_taps, .b = y->dw_b, .n = n, .d = d, .K = K};
    hv_pool_run(pool, hv_pool_size(pool), dwconv_task, &j);
    hv_prof_add(s->prof, HV_STAGE_CONV_DEPTHWISE, &s->t);
    hv_linear_add(pool, x, s->tmp, s->k, n, &y->pw2, y->pw2_b, 1.0f);
    hv_prof_add(s->prof, HV_STAGE_CONV_POINTWISE, &s->t);
}

/* Transformer-XL sinusoids for positions n-1 down to -(n-1), computed in
 * float32 as the reference implementation does. A row depends only on the
 * position it stands for, not on n. */
static void rel_positions(float *pos, int n, int d) {
    float k = -logf(10000.0f) / (float)d;
    for (int r = 0; r < 2 * n - 1; r++) {
        float p = (float)(n - 1 - r);
        for (int i = 0; 2 * i < d; i++) {
            float wi = expf((float)(2 * i) * k);
            pos[(long)r * d + 2 * i] = sinf(p * wi);
            if (2 * i + 1 < d) pos[(long)r * d + 2 * i + 1] = cosf(p * wi);
        }
    }
}

/* The frames N >= n whose 2N-1 positions the projections are computed for:
 * at least `want` (the cache's size hint) and at least HV_POS_MIN_FRAMES,
 * within pos_emb_max_len. HV_POS_MIN_FRAMES makes 2N-1 > the GEMV's
 * HV_LINEAR_GEMV_MAX_N rows, so every projection row comes from the packed
 * GEMM, whose rows do not depend on the other rows of the product: a
 * chunk's rows are the same bits whether computed for it alone or cut from
 * a cache built for a longer chunk. */
#define HV_POS_MIN_FRAMES (HV_LINEAR_GEMV_MAX_N / 2 + 1)
static int pos_frames(const hv_config *c, int n, int want) {
    int N = want > n ? want : n;
    if (N < HV_POS_MIN_FRAMES) N = HV_POS_MIN_FRAMES;
    return N > c->pos_emb_max_len ? c->pos_emb_max_len : N; /* n is within it */
}

void hv_pos_cache_free(hv_pos_cache *pc) {
    if (!pc) return;
    free(pc->p);
    pc->p = NULL;
    pc->n = 0;
}

/* Fills pc with every layer's projections for N frames (the sinusoids for
 * N are in pos); -1 when out of memory (pc is then empty). */
static int pos_cache_fill(const hv_config *c, const hv_encoder_weights *w, hv_pool *pool,
                          hv_pos_cache *pc, const float *pos, int N) {
    hv_pos_cache_free(pc);
    size_t rows = 2 * (size_t)N - 1, d = (size_t)c->d_model;
    pc->p = malloc((size_t)c->enc_layers * rows * d * sizeof(float));
    if (!pc->p) return -1;
    for (int i = 0; i < c->enc_layers; i++)
        hv_linear(pool, pc->p + (size_t)i * rows * d, pos, (int)rows, &w->layers[i].wpos, NULL);
    pc->n = N;
    pc->builds++;
    return 0;
}

double hv_encoder_pos_flops(const hv_config *c, int n) {
    return 2.0 * c->enc_layers * (2.0 * n - 1) * c->d_model * c->d_model;
}

double hv_encoder_flops(const hv_config *c, const hv_encoder_weights *w, int n_frames,
                        int n_valid) {
    double C = c->sub_channels, T = n_frames, F = c->feat_in, mac = 0;
    double len = hv_sub_conv_len(n_valid < n_frames ? n_valid : n_frames);
    T = hv_sub_conv_len(n_frames), F = hv_sub_conv_len(c->feat_in);
    mac += T * F * C * 9; /* 1 -> C channels */
    for (int s = 1; s < w->n_stages; s++) {
        T = hv_sub_conv_len((int)T), F = hv_sub_conv_len((int)F);
        len = hv_sub_conv_len((int)len);
        mac += T * F * C * 9 + T * F * C * C; /* depthwise, pointwise */
    }
    double n = T, d = c->d_model, ff = (double)c->d_model * c->ff_expansion, P = 2 * n - 1;
    /* the position scores band by band (attn_head): len + T - 1 positions
     * for a band of T queries */
    double bands = floor(len / POS_BAND), rest = len - bands * POS_BAND;
    double pos_scores =
        bands * POS_BAND * (len + POS_BAND - 1) + (rest > 0 ? rest * (len + rest - 1) : 0);
    mac += n * C * F * d;                   /* pre_out */
    double layer = 2 * 2 * n * d * ff       /* two half-step feed-forwards */
                   + 4 * n * d * d          /* q, k, v, out */
                   + P * d * d              /* linear_pos */
                   + len * len * d          /* content scores */
                   + pos_scores * d         /* position scores */
                   + len * len * d          /* context */
                   + n * d * 2 * d          /* pointwise conv 1 */
                   + n * d * c->conv_kernel /* depthwise conv */
                   + n * d * d;             /* pointwise conv 2 */
    mac += c->enc_layers * layer;
    if (w->proj.data) mac += n * d * c->dec_hidden;
    return 2 * mac;
}

hv_status hv_encoder_forward(const hv_config *c, const hv_encoder_weights *w, hv_pool *pool,
                             const float *feat, int n_frames, int n_valid, hv_pos_cache *cache,
                             int n_hint, hv_profile *prof, float **out, int *n_enc, int *enc_len,
                             hv_error *e) {
    *out = NULL;
    int n, len;
    if (n_valid > n_frames) n_valid = n_frames;
    if (hv_subsampled_len(c, n_valid) < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio too short for the encoder");
    if (2 * hv_subsampled_len(c, n_frames) - 1 > 2 * c->pos_emb_max_len - 1)
        return hv_err(e, HV_ERR_LIMIT,
                      "audio too long: %d encoder frames exceed pos_emb_max_len %d",
                      hv_subsampled_len(c, n_frames), c->pos_emb_max_len);
    float *x = subsample(c, w, pool, prof, feat, n_frames, n_valid, &n, &len);
    if (!x) return hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");

    int d = c->d_model, H = c->enc_heads;
    /* a cache that covers n frames is used as it is; otherwise the
     * projections are computed for N frames (into the cache, or per layer) */
    int cached = cache && cache->n >= n;
    int N = cached ? cache->n : pos_frames(c, n, cache ? n_hint : 0), P = 2 * N - 1;
    enc_scratch s = {.prof = prof};
    s.norm = malloc((size_t)n * d * sizeof(float));
    s.big = malloc((size_t)n * d * (c->ff_expansion > 2 ? c->ff_expansion : 2) * sizeof(float));
    s.q = malloc((size_t)n * d * sizeof(float));
    s.k = malloc((size_t)n * d * sizeof(float));
    s.v = malloc((size_t)n * d * sizeof(float));
    s.ctx = malloc((size_t)n * d * sizeof(float));
    s.tmp = malloc((size_t)n * d * sizeof(float));
    s.pos = cached ? NULL : malloc((size_t)P * d * sizeof(float));
    s.att = malloc((size_t)hv_attention_scratch(n, d, H, hv_pool_bf16(pool)) * sizeof(float));
    s.dw_taps = malloc((size_t)c->conv_kernel * d * sizeof(float));
    float *res = NULL;
    hv_status st = HV_OK;
    if (!s.norm || !s.big || !s.q || !s.k || !s.v || !s.ctx || !s.tmp || (!cached && !s.pos) ||
        !s.att || !s.dw_taps) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
        goto done;
    }
    s.t = hv_prof_now(prof);
    if (!cached) {
        rel_positions(s.pos, N, d);
        hv_prof_add(prof, HV_STAGE_ELEMENTWISE, &s.t);
        /* without memory for a cache, per layer as without one */
        if (cache) cached = pos_cache_fill(c, w, pool, cache, s.pos, N) == 0;
        hv_prof_add(prof, HV_STAGE_POS_LINEAR, &s.t);
    }
    /* a layer's projections, when they are not in the cache */
    if (!cached && !(s.p = malloc((size_t)P * d * sizeof(float)))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
        goto done;
    }

    for (int i = 0; i < c->enc_layers; i++) {
        const hv_enc_layer *y = &w->layers[i];
        /* this chunk's 2n-1 positions are rows N-n .. N+n-2 of the 2N-1 */
        const float *p;
        if (cached) {
            p = cache->p + ((size_t)i * (2 * (size_t)N - 1) + (size_t)(N - n)) * d;
        } else {
            hv_linear(pool, s.p, s.pos, P, &y->wpos, NULL);
            p = s.p + (size_t)(N - n) * d;
            hv_prof_add(prof, HV_STAGE_POS_LINEAR, &s.t);
        }
        /* half-step feed-forward */
        feed_forward_half(c, pool, x, n, &s, y->ff1_norm_w, y->ff1_norm_b, &y->ff1_up, y->ff1_up_b,
                          &y->ff1_down, y->ff1_down_b);
        /* relative-position multi-head self-attention */
        self_attention(c, pool, x, n, len, &s, y, p);
        /* convolution module */
        conv_module(c, pool, x, n, len, &s, y);
        /* second half-step feed-forward */
        feed_forward_half(c, pool, x, n, &s, y->ff2_norm_w, y->ff2_norm_b, &y->ff2_up, y->ff2_up_b,
                          &y->ff2_down, y->ff2_down_b);
        /* layer output norm */
        layernorm(pool, x, x, n, d, y->out_norm_w, y->out_norm_b);
        hv_prof_add(prof, HV_STAGE_LAYERNORM, &s.t);
    }

    if (w->proj.data) {
        res = malloc((size_t)n * c->dec_hidden * sizeof *res);
        if (!res) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
            goto done;
        }
        hv_linear(pool, res, x, n, &w->proj, w->proj_b);
        hv_prof_add(prof, HV_STAGE_PROJ_LINEAR, &s.t);
    } else {
        res = x;
        x = NULL;
    }
    *out = res;
    *n_enc = n;
    *enc_len = len;
done:
    free(x);
    free(s.norm);
    free(s.big);
    free(s.q);
    free(s.k);
    free(s.v);
    free(s.ctx);
    free(s.tmp);
    free(s.pos);
    free(s.p);
    free(s.att);
    free(s.dw_taps);
    return st;
}
