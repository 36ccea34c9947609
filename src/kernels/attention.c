/* The encoder's relative-position attention heads (engine.h,
 * hv_attention_heads): in f32 on the kernel table's small products, in
 * bf16 on oneDNN's matmul or on f32 GEMMs of bf16-rounded operands
 * (docs/KERNELS.md, "The encoder's attention in bf16"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/engine.h"
#include "kernels/half.h"
#include "kernels/onednn.h"
#include "kernels/ops.h"

typedef struct attn_job {
    const float *q, *k, *v; /* [n x d] */
    float *ctx;             /* [n x d] */
    float *att;             /* [H x head_scratch(n, dh, bf16)] */
    const float *u, *vb;    /* pos_bias_u, pos_bias_v: [d] */
    const float *p;         /* [(2n-1) x d]: linear_pos rows of positions n-1 .. -(n-1) */
    int n, len, d, H, dh;
    int bf16;           /* bf16 compute (attn_head_bf16) */
    int staged;         /* with the bf16 engine: (q + u), (q + v), k and v are in att already */
    const uint16_t *pb; /* NULL, or with the bf16 engine head 0's positions from row N - len in
                         * the heads' bf16 layout (hv_att_pos), head h's pb_head after */
    long pb_head;
    int ctx_kept;   /* with the engine: each head's context left in its scratch (head_ctx) and
                   * ctx not written */
    hv_onednn *dnn; /* with bf16: the engine's oneDNN, or NULL for the emulation */
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

#define POS_BAND HV_POS_BAND

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
 * rounded values (dst may be x then). The sums go through a row on the
 * stack, in pieces, so that the rounding is the vector kernel's. */
static void round_bf16(void *dst, int bits, const float *x, const float *add, int n) {
    uint16_t *db = dst;
    float *df = dst;
    if (add) {
        enum { PIECE = 256 };
        float sum[PIECE];
        for (int t0 = 0; t0 < n; t0 += PIECE) {
            int m = n - t0 < PIECE ? n - t0 : PIECE;
            for (int t = 0; t < m; t++) sum[t] = x[t0 + t] + add[t0 + t];
            if (bits)
                hv_bf16_bits_n(db + t0, sum, m);
            else
                hv_bf16_round_n(df + t0, sum, m);
        }
    } else if (bits) {
        hv_bf16_bits_n(db, x, n);
    } else {
        hv_bf16_round_n(df, x, n);
    }
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

    if (!j->staged) {
        stage_bf16(qu, bits, j->q + h * dh, d, u, len, cl, dh);
        stage_bf16(qv, bits, j->q + h * dh, d, vb, len, cl, dh);
        stage_bf16(kk, bits, j->k + h * dh, d, NULL, len, cl, dh);
        stage_bf16(vv, bits, j->v + h * dh, d, NULL, len, cl, dh);
    }
    /* the bands read position rows n-len .. n+len-2: staged from row 0,
     * with ATT_CLASS zero rows after them for the padded bands, unless
     * they lie in the heads' layout (rows past them: other positions,
     * then zero, read only into the bands' unused columns) */
    if (j->pb)
        pp = (char *)(j->pb + h * j->pb_head);
    else
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
        if (j->ctx_kept) {
            head_busy(j, h, BUSY_PRODUCTS, &t);
            return;
        }
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

/* The heads of hv_attention_heads; staged: (q + u), (q + v), k and v are
 * in att as attn_head_bf16 reads them (q, k, v not read). */
static void heads_run(const hv_engine *e, int n, int len, int d, int H, const float *q,
                      const float *k, const float *v, const float *p, const uint16_t *pb,
                      long pb_head, const float *u, const float *vb, float *att, float *ctx,
                      int staged, int ctx_kept) {
    hv_profile *prof = e->prof;
    hv_onednn *dnn = e->bf16 && e->on_dnn[HV_CLASS_ATTENTION] ? e->dnn : NULL;
    /* with a profile, the job's time split as the heads spent theirs */
    double *busy = prof ? calloc((size_t)H * 3, sizeof *busy) : NULL;
    if (!busy) prof = NULL;
    /* in the order of attn_job's fields */
    attn_job j = {q, k,     v,       ctx,    att, u,       vb,       p,   n,    len, d,
                  H, d / H, e->bf16, staged, pb,  pb_head, ctx_kept, dnn, prof, busy};
    double t0 = hv_prof_now(prof);
    hv_pool_run(e->pool, H, j.bf16 ? attn_head_bf16 : attn_head, &j);
    if (!prof) return;
    double wall = hv_prof_now(prof) - t0, part[3] = {0, 0, 0};
    for (int h = 0; h < H; h++)
        for (int w = 0; w < 3; w++) part[w] += busy[h * 3 + w];
    double all = part[0] + part[1] + part[2];
    static const hv_stage stage[3] = {HV_STAGE_ATTN_PRODUCTS, HV_STAGE_ATTN_SOFTMAX,
                                      HV_STAGE_ATTN_STAGING};
    for (int w = 0; w < 3 && all > 0; w++) hv_prof_claim(prof, stage[w], wall * part[w] / all);
    free(busy);
}

void hv_attention_heads(const hv_engine *e, int n, int len, int d, int H, const float *q,
                        const float *k, const float *v, const float *p, const float *u,
                        const float *vb, float *att, float *ctx) {
    heads_run(e, n, len, d, H, q, k, v, p, NULL, 0, u, vb, att, ctx, 0, 0);
}

/* Where the q, k, v projections' outputs go on the bf16 engine: each
 * head's (q + u), (q + v), k and v rounded to bf16 in attn_head_bf16's
 * scratch, rows >= len zero, as stage_bf16 writes them. */
typedef struct qkv_sink {
    char *att;           /* hv_attention_scratch(n, d, H, 1) floats */
    const float *u, *vb; /* [d] */
    int n, len, dh;
} qkv_sink;

/* Head h's operand `which` (0: q + u, 1: q + v, 2: k, 3: v), c rows of dh. */
static uint16_t *head_operand(const qkv_sink *s, int h, int which) {
    long c = att_class(s->n);
    char *base = s->att + (size_t)h * head_scratch(s->n, s->dh, 1) * sizeof(float);
    return (uint16_t *)base + which * c * s->dh;
}

/* Row i's outputs [r0, r1) of a product whose columns are H heads of dh
 * (row at src, column r at src[r - r0]), cut at the heads' boundaries:
 * run(arg, m, i, h, t, x, count) for head h's columns t .. t + count - 1
 * at x. */
typedef void head_run_fn(const void *arg, int m, int i, int h, int t, const float *x, int count);
static void head_runs(head_run_fn *run, const void *arg, int m, int i0, int i1, int r0, int r1,
                      const float *src, long ld, int dh) {
    for (int i = i0; i < i1; i++) {
        const float *row = src + (long)(i - i0) * ld - r0;
        for (int r = r0; r < r1;) {
            int h = r / dh, end = (h + 1) * dh < r1 ? (h + 1) * dh : r1;
            run(arg, m, i, h, r - h * dh, row + r, end - r);
            r = end;
        }
    }
}

static void qkv_run(const void *arg, int m, int i, int h, int t, const float *x, int count) {
    const qkv_sink *s = arg;
    int dh = s->dh;
    /* q goes to (q + u) and (q + v), k and v to their own */
    for (int w = m == 0 ? 0 : m + 1; w <= (m == 0 ? 1 : m + 1); w++) {
        uint16_t *dst = head_operand(s, h, w) + (long)i * dh + t;
        const float *add = w == 0 ? s->u + h * dh + t : w == 1 ? s->vb + h * dh + t : NULL;
        if (i >= s->len)
            memset(dst, 0, (size_t)count * sizeof *dst);
        else
            round_bf16(dst, 1, x, add, count);
    }
}

static void qkv_put(void *arg, int m, int i0, int i1, int r0, int r1, const float *src, long ld) {
    const qkv_sink *s = arg;
    head_runs(qkv_run, s, m, i0, i1, r0, r1, src, ld, s->dh);
}

int hv_attention_pos_bf16(const hv_engine *e, int N, const hv_mat *W) {
    return e->bf16 && e->on_dnn[HV_CLASS_ATTENTION] && hv_onednn_is_bf16(e->dnn) &&
           hv_eng_on_dnn(e, 2 * N - 1, W);
}

long hv_attention_pos_floats(int N, int d, int H, int bf16) {
    (void)H;
    long P = 2L * N - 1;
    return bf16 ? ((P + HV_ATT_POS_PAD) * d + 1) / 2 : P * d; /* bf16: two values a float */
}

/* Where the position products' outputs go in the bf16 layout: product
 * m's head h's row i at pb[m] + (h * (P + HV_ATT_POS_PAD) + i) * dh. */
typedef struct pos_sink {
    uint16_t *pb[HV_GEMM_MAX_OUT];
    long P;
    int dh;
} pos_sink;

static void pos_run(const void *arg, int m, int i, int h, int t, const float *x, int count) {
    const pos_sink *s = arg;
    round_bf16(s->pb[m] + (h * (s->P + HV_ATT_POS_PAD) + i) * s->dh + t, 1, x, NULL, count);
}

static void pos_put(void *arg, int m, int i0, int i1, int r0, int r1, const float *src, long ld) {
    const pos_sink *s = arg;
    head_runs(pos_run, s, m, i0, i1, r0, r1, src, ld, s->dh);
}

int hv_eng_attention_pos(const hv_engine *e, float *const *dst, int count, const float *pos, int N,
                         int d, int H, const hv_mat *const *W, int bf16) {
    int P = 2 * N - 1;
    if (!bf16) {
        for (int m = 0; m < count; m++) hv_eng_linear(e, dst[m], pos, P, W[m], NULL, NULL);
        return 0;
    }
    /* a few products at a time: oneDNN takes the sinusoids once for them */
    for (int m0 = 0; m0 < count; m0 += HV_GEMM_MAX_OUT) {
        int k = count - m0 < HV_GEMM_MAX_OUT ? count - m0 : HV_GEMM_MAX_OUT;
        pos_sink s = {{NULL}, P, d / H};
        for (int m = 0; m < k; m++) {
            s.pb[m] = (uint16_t *)dst[m0 + m];
            for (int h = 0; h < H; h++)
                memset(s.pb[m] + (h * (s.P + HV_ATT_POS_PAD) + P) * s.dh, 0,
                       (size_t)HV_ATT_POS_PAD * s.dh * sizeof(uint16_t));
        }
        const float *none[HV_GEMM_MAX_OUT] = {NULL};
        hv_onednn_sink sink = {.put = pos_put, .arg = &s};
        if (hv_onednn_gemm_sink(e->dnn, e->pool, P, pos, NULL, k, W + m0, none, &sink, e->prof) ==
            0)
            continue;
        /* no buffer for oneDNN's input: the f32 products, then rounded */
        float *y = malloc((size_t)P * d * sizeof *y);
        if (!y) return -1;
        for (int m = 0; m < k; m++) {
            hv_eng_linear(e, y, pos, P, W[m0 + m], NULL, NULL);
            pos_put(&s, m, 0, P, 0, d, y, d);
        }
        free(y);
    }
    return 0;
}

/* Head h's context [att_class(n) x dh] f32 in attn_head_bf16's scratch. */
static float *head_ctx(float *att, int n, int dh, int h) {
    long c = att_class(n);
    return att + h * head_scratch(n, dh, 1) + 4 * c * dh + (2 * c + ATT_CLASS) * dh + 2 * c * c +
           POS_BAND * att_class(n + POS_BAND - 1);
}

/* The heads' contexts kept in their scratch (ctx_kept): rows >= len zero. */
typedef struct ctx_rows {
    float *att;
    int n, len, d, H;
} ctx_rows;

/* Rows [i0, i1) of the context [n x d] from the heads' scratch into dst
 * (bf16 bits when bits, else floats; hv_onednn_rows's fill). */
static void ctx_fill(void *arg, int task, int bits, void *dst, int i0, int i1) {
    (void)task;
    const ctx_rows *c = arg;
    int dh = c->d / c->H;
    size_t esz = bits ? 2 : 4;
    for (int i = i0; i < i1; i++)
        for (int h = 0; h < c->H; h++) {
            char *out = (char *)dst + ((size_t)(i - i0) * c->d + (size_t)h * dh) * esz;
            const float *src = head_ctx(c->att, c->n, dh, h) + (long)i * dh;
            if (i >= c->len)
                memset(out, 0, (size_t)dh * esz);
            else if (bits)
                hv_bf16_bits_n((uint16_t *)out, src, dh);
            else
                memcpy(out, src, (size_t)dh * esz);
        }
}

void hv_eng_attention(const hv_engine *e, float *norm, const float *x, int n, int len, int d, int H,
                      const float *nw, const float *nb, float eps, const hv_mat *const *W,
                      const float *const *bias, float *const *qkv, float *ctx,
                      const hv_att_pos *pos, const float *u, const float *vb, float *att, float *y,
                      const hv_epilogue *ep) {
    int dh = d / H;
    /* the positions in the bf16 layout from row N - len, or this chunk's
     * f32 rows N-n .. N+n-2 */
    const uint16_t *pb = pos->bf16 ? (const uint16_t *)pos->p + (long)(pos->N - len) * dh : NULL;
    long pb_head = (2L * pos->N - 1 + HV_ATT_POS_PAD) * dh;
    const float *p = pos->bf16 ? NULL : pos->p + (long)(pos->N - n) * d;
    if (e->bf16 && e->on_dnn[HV_CLASS_ATTENTION] && hv_onednn_is_bf16(e->dnn) && n > 0) {
        qkv_sink s = {(char *)att, u, vb, n, len, dh};
        /* rows the products do not write but the padded heads read */
        long c = att_class(n);
        for (int h = 0; h < H && c > n; h++)
            for (int w = 0; w < 4; w++)
                memset(head_operand(&s, h, w) + (long)n * dh, 0,
                       (size_t)(c - n) * dh * sizeof(uint16_t));
        hv_onednn_sink sink = {.put = qkv_put, .arg = &s};
        if (hv_eng_norm_linear_sink(e, x, n, d, nw, nb, eps, 3, W, bias, &sink) == 0) {
            /* the output projection reads the heads' contexts where they
             * lie, as bf16 (one pass instead of a copy and a conversion) */
            int kept = hv_eng_on_dnn(e, n, W[3]);
            heads_run(e, n, len, d, H, NULL, NULL, NULL, p, pb, pb_head, u, vb, att, ctx, 1, kept);
            if (!kept) {
                hv_eng_linear(e, y, ctx, n, W[3], bias[3], ep);
                return;
            }
            ctx_rows cr = {att, n, len, d, H};
            hv_onednn_rows rows = {.fill = ctx_fill, .arg = &cr, .stage = HV_STAGE_BF16_CONVERT};
            if (hv_onednn_gemm_rows(e->dnn, e->pool, n, &rows, 1, &W[3], &bias[3], &y, ep,
                                    e->prof) == 0)
                return;
            /* no buffer for oneDNN's input: the context as a matrix */
            ctx_fill(&cr, 0, 0, ctx, 0, n);
            hv_eng_linear(e, y, ctx, n, W[3], bias[3], ep);
            return;
        }
    }
    hv_eng_norm_linear(e, norm, x, n, d, nw, nb, eps, 3, W, bias, qkv, NULL);
    heads_run(e, n, len, d, H, qkv[0], qkv[1], qkv[2], p, pb, pb_head, u, vb, att, ctx, 0, 0);
    hv_eng_linear(e, y, ctx, n, W[3], bias[3], ep);
}

long hv_attention_scratch(int n, int d, int H, int bf16) {
    return H * head_scratch(n, d / H, bf16);
}
