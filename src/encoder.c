/* The FastConformer encoder, step by step as docs/MODEL.md describes it.
 * Activations are row-major [time x features]; the subsampling keeps its
 * images channel-last [time x freq x channels] so that the pointwise
 * convolutions are plain matrix products. */
#include "encoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/engine.h"
#include "kernels/ops.h"
#include "kernels/profile.h"

/* ------------------------------------------------------- subsampling */

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
static float *subsample(const hv_config *c, const hv_encoder_weights *w, const hv_engine *e,
                        const float *feat, int T, int n_valid, int *T_out, int *len_out) {
    hv_profile *prof = e->prof;
    double t = hv_prof_now(prof);
    int C = c->sub_channels, F = c->feat_in, len = n_valid, T0 = T, F0 = F;
    float *in = malloc((size_t)T * F * sizeof *in);
    if (!in) return NULL;
    memcpy(in, feat, (size_t)T * F * sizeof *in);
    mask_rows(in, T, F, len);

    int T2 = hv_sub_conv_len(T), F2 = hv_sub_conv_len(F);
    /* with a depthwise stage after it, the first convolution's image is
     * made row by row as that stage reads it (hv_conv3x3_s2_pair) */
    float *img = w->n_stages > 1 ? NULL : malloc((size_t)T2 * F2 * C * sizeof *img);
    float *wt = malloc((size_t)9 * C * sizeof *wt), *wt1 = malloc((size_t)9 * C * sizeof *wt1);
    if ((w->n_stages <= 1 && !img) || !wt || !wt1) {
        free(in);
        free(img);
        free(wt);
        free(wt1);
        return NULL;
    }
    taps_first(wt, w->conv0_w, C);
    if (img) {
        hv_conv3x3_s2(e, img, T2, F2, in, T, F, C, 0, wt, w->conv0_b, 1);
        hv_prof_add(prof, HV_STAGE_SUB_CONV, &t);
        free(in);
        in = NULL;
    }
    T = T2;
    F = F2;
    len = hv_sub_conv_len(len);

    for (int s = 1; s < w->n_stages; s++) {
        T2 = hv_sub_conv_len(T);
        F2 = hv_sub_conv_len(F);
        float *dw = malloc((size_t)T2 * F2 * C * sizeof *dw);
        float *pw = malloc((size_t)T2 * F2 * C * sizeof *pw);
        if (!dw || !pw) {
            free(dw);
            free(pw);
            free(in);
            free(img);
            free(wt);
            free(wt1);
            return NULL;
        }
        taps_first(wt1, w->dw_w[s], C);
        int done = 0;
        if (in) { /* the first stage's image, never stored */
            done = hv_conv3x3_s2_pair(e, dw, T2, F2, in, T0, F0, T, F, len, C, wt, w->conv0_b, wt1,
                                      w->dw_b[s]) == 0;
            free(in);
            in = NULL;
        } else {
            mask_rows(img, T, (long)F * C, len);
            hv_conv3x3_s2(e, dw, T2, F2, img, T, F, C, 1, wt1, w->dw_b[s], 0);
            done = 1;
        }
        free(img);
        img = NULL;
        if (!done) {
            free(dw);
            free(pw);
            free(wt);
            free(wt1);
            return NULL;
        }
        T = T2;
        F = F2;
        len = hv_sub_conv_len(len);
        mask_rows(dw, T, (long)F * C, len);
        hv_prof_add(prof, HV_STAGE_SUB_CONV, &t);
        hv_eng_linear(e, pw, dw, T * F, &w->pw[s], w->pw_b[s], &hv_ep_relu);
        hv_prof_add(prof, HV_STAGE_SUB_LINEAR, &t);
        free(dw);
        img = pw;
    }

    /* Flatten each time step channel-major (index c * F + f), as the
     * checkpoint's Linear expects, then project to d_model. */
    free(wt);
    free(wt1);
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
    hv_eng_linear(e, x, flat, T, &w->pre_out, w->pre_out_b, NULL);
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
    float *p;                     /* a layer's linear_pos(pos) (hv_att_pos) */
    float *att;                   /* hv_attention_scratch(n, d, H, bf16) */
    float *dw_taps;               /* [K x d]: a layer's depthwise weights, tap-major */
    double t;                     /* with a profile: the clock at the last stage's end */
} enc_scratch;

/* The GLU spread over the pool: cheap per row but it adds up over 48
 * layers. Rows are independent, so the results do not depend on the
 * split. */
typedef struct rows_job {
    float *y;
    const float *x;
    int n, d, len; /* rows, output width, valid rows */
} rows_job;

static void rows_task(void *arg, int task, int n_tasks) {
    const rows_job *j = arg;
    int per = (j->n + n_tasks - 1) / n_tasks;
    int r0 = task * per, r1 = r0 + per < j->n ? r0 + per : j->n;
    if (r0 >= r1) return;
    long d = j->d;
    for (int t = r0; t < r1; t++) { /* first half * sigmoid(second half); padded rows zero */
        float *g = j->y + (long)t * d;
        if (t < j->len)
            hv_glu(g, j->x + (long)t * 2 * d, d);
        else
            memset(g, 0, (size_t)d * sizeof *g);
    }
}

static void rows_run(hv_pool *pool, rows_job j) {
    hv_pool_run(pool, j.n < 64 ? 1 : hv_pool_size(pool), rows_task, &j);
}

static void feed_forward_half(const hv_config *c, const hv_engine *e, float *x, int n,
                              enc_scratch *s, const float *nw, const float *nb, const hv_mat *up,
                              const float *up_b, const hv_mat *down, const float *down_b) {
    int d = c->d_model;
    hv_eng_feed_forward(e, s->norm, x, n, d, nw, nb, HV_LN_EPS, up, up_b, down, down_b, s->big,
                        s->tmp, &(hv_epilogue){.residual = x, .scale = 0.5f});
    hv_prof_add(e->prof, HV_STAGE_FF_LINEAR, &s->t);
}

static void self_attention(const hv_config *c, const hv_engine *e, float *x, int n, int len,
                           enc_scratch *s, const hv_enc_layer *y, const hv_att_pos *p) {
    int d = c->d_model, H = c->enc_heads;
    const hv_mat *W[4] = {&y->wq, &y->wk, &y->wv, &y->wo};
    const float *b[4] = {y->bq, y->bk, y->bv, y->bo};
    float *qkv[3] = {s->q, s->k, s->v};
    /* the projections' time goes to attn_linear, the heads' to their own
     * stages (profile.h) */
    hv_eng_attention(e, s->norm, x, n, len, d, H, y->att_norm_w, y->att_norm_b, HV_LN_EPS, W, b,
                     qkv, s->ctx, p, y->pos_bias_u, y->pos_bias_v, s->att, s->tmp,
                     &(hv_epilogue){.residual = x, .scale = 1});
    hv_prof_add(e->prof, HV_STAGE_ATTN_LINEAR, &s->t);
}

static void conv_module(const hv_config *c, const hv_engine *e, float *x, int n, int len,
                        enc_scratch *s, const hv_enc_layer *y) {
    int d = c->d_model;
    const hv_mat *pw1 = &y->pw1;
    const float *pw1_b = y->pw1_b;
    hv_eng_norm_linear(e, s->norm, x, n, d, y->conv_norm_w, y->conv_norm_b, HV_LN_EPS, 1, &pw1,
                       &pw1_b, &s->big, NULL); /* [n x 2d] */
    hv_prof_add(e->prof, HV_STAGE_CONV_POINTWISE, &s->t);
    /* GLU over channels; the padded time steps are zeroed so they do not
     * leak into the convolution */
    rows_run(e->pool, (rows_job){s->q, s->big, n, d, len});
    hv_prof_add(e->prof, HV_STAGE_ELEMENTWISE, &s->t);
    int K = c->conv_kernel;
    for (int ch = 0; ch < d; ch++)
        for (int k = 0; k < K; k++) s->dw_taps[(long)k * d + ch] = y->dw_w[(long)ch * K + k];
    hv_dwconv_silu(e, s->k, s->q, n, d, K, s->dw_taps, y->dw_b);
    hv_prof_add(e->prof, HV_STAGE_CONV_DEPTHWISE, &s->t);
    hv_eng_linear(e, s->tmp, s->k, n, &y->pw2, y->pw2_b, &(hv_epilogue){.residual = x, .scale = 1});
    hv_prof_add(e->prof, HV_STAGE_CONV_POINTWISE, &s->t);
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

/* Whether every layer's projections for N frames go in the heads' bf16
 * layout on e (hv_att_pos). */
static int pos_bf16(const hv_config *c, const hv_encoder_weights *w, const hv_engine *e, int N) {
    int bf16 = 1;
    for (int i = 0; i < c->enc_layers; i++) bf16 &= hv_attention_pos_bf16(e, N, &w->layers[i].wpos);
    return bf16;
}

/* Fills pc with every layer's projections for N frames (the sinusoids for
 * N are in pos); -1 when out of memory (pc is then empty). */
static int pos_cache_fill(const hv_config *c, const hv_encoder_weights *w, const hv_engine *e,
                          hv_pos_cache *pc, const float *pos, int N) {
    hv_pos_cache_free(pc);
    int d = c->d_model, H = c->enc_heads, bf16 = pos_bf16(c, w, e, N);
    size_t per = (size_t)hv_attention_pos_floats(N, d, H, bf16);
    pc->p = malloc((size_t)c->enc_layers * per * sizeof(float));
    float **dst = malloc((size_t)c->enc_layers * sizeof *dst);
    const hv_mat **W = malloc((size_t)c->enc_layers * sizeof *W);
    int ok = pc->p && dst && W;
    for (int i = 0; ok && i < c->enc_layers; i++) {
        dst[i] = pc->p + i * per;
        W[i] = &w->layers[i].wpos;
    }
    ok = ok && hv_eng_attention_pos(e, dst, c->enc_layers, pos, N, d, H, W, bf16) == 0;
    free(dst);
    free(W);
    if (!ok) {
        hv_pos_cache_free(pc);
        return -1;
    }
    pc->bf16 = bf16;
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
    double bands = floor(len / HV_POS_BAND), rest = len - bands * HV_POS_BAND;
    double pos_scores =
        bands * HV_POS_BAND * (len + HV_POS_BAND - 1) + (rest > 0 ? rest * (len + rest - 1) : 0);
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

hv_status hv_encoder_forward(const hv_config *c, const hv_encoder_weights *w, const hv_engine *eng,
                             const float *feat, int n_frames, int n_valid, hv_pos_cache *cache,
                             int n_hint, float **out, int *n_enc, int *enc_len, hv_error *e) {
    hv_profile *prof = eng->prof;
    if (prof) prof->claimed = 0; /* what an earlier call that failed left */
    *out = NULL;
    int n, len;
    if (n_valid > n_frames) n_valid = n_frames;
    if (hv_subsampled_len(c, n_valid) < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "audio too short for the encoder");
    if (2 * hv_subsampled_len(c, n_frames) - 1 > 2 * c->pos_emb_max_len - 1)
        return hv_err(e, HV_ERR_LIMIT,
                      "audio too long: %d encoder frames exceed pos_emb_max_len %d",
                      hv_subsampled_len(c, n_frames), c->pos_emb_max_len);
    float *x = subsample(c, w, eng, feat, n_frames, n_valid, &n, &len);
    if (!x) return hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");

    int d = c->d_model, H = c->enc_heads;
    /* a cache that covers n frames is used as it is; otherwise the
     * projections are computed for N frames (into the cache, or per layer) */
    int cached = cache && cache->n >= n;
    int N = cached ? cache->n : pos_frames(c, n, cache ? n_hint : 0), P = 2 * N - 1;
    enc_scratch s = {0};
    s.norm = malloc((size_t)n * d * sizeof(float));
    s.big = malloc((size_t)n * d * (c->ff_expansion > 2 ? c->ff_expansion : 2) * sizeof(float));
    s.q = malloc((size_t)n * d * sizeof(float));
    s.k = malloc((size_t)n * d * sizeof(float));
    s.v = malloc((size_t)n * d * sizeof(float));
    s.ctx = malloc((size_t)n * d * sizeof(float));
    s.tmp = malloc((size_t)n * d * sizeof(float));
    s.pos = cached ? NULL : malloc((size_t)P * d * sizeof(float));
    s.att = malloc((size_t)hv_attention_scratch(n, d, H, eng->bf16) * sizeof(float));
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
        if (cache) cached = pos_cache_fill(c, w, eng, cache, s.pos, N) == 0;
        hv_prof_add(prof, HV_STAGE_POS_LINEAR, &s.t);
    }
    /* a layer's projections, when they are not in the cache */
    int p_bf16 = cached ? cache->bf16 : pos_bf16(c, w, eng, N);
    size_t p_per = (size_t)hv_attention_pos_floats(N, d, H, p_bf16);
    if (!cached && !(s.p = malloc(p_per * sizeof(float)))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
        goto done;
    }

    for (int i = 0; i < c->enc_layers; i++) {
        const hv_enc_layer *y = &w->layers[i];
        /* this chunk's 2n-1 positions are rows N-n .. N+n-2 of the 2N-1 */
        hv_att_pos p = {cached ? cache->p + i * p_per : s.p, N, p_bf16};
        if (!cached) {
            const hv_mat *wpos = &y->wpos;
            if (hv_eng_attention_pos(eng, &s.p, 1, s.pos, N, d, H, &wpos, p_bf16)) {
                st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
                goto done;
            }
            hv_prof_add(prof, HV_STAGE_POS_LINEAR, &s.t);
        }
        /* half-step feed-forward */
        feed_forward_half(c, eng, x, n, &s, y->ff1_norm_w, y->ff1_norm_b, &y->ff1_up, y->ff1_up_b,
                          &y->ff1_down, y->ff1_down_b);
        /* relative-position multi-head self-attention */
        self_attention(c, eng, x, n, len, &s, y, &p);
        /* convolution module */
        conv_module(c, eng, x, n, len, &s, y);
        /* second half-step feed-forward */
        feed_forward_half(c, eng, x, n, &s, y->ff2_norm_w, y->ff2_norm_b, &y->ff2_up, y->ff2_up_b,
                          &y->ff2_down, y->ff2_down_b);
        /* layer output norm */
        hv_eng_layernorm(eng, x, x, n, d, y->out_norm_w, y->out_norm_b, HV_LN_EPS);
        hv_prof_add(prof, HV_STAGE_LAYERNORM, &s.t);
    }

    if (w->proj.data) {
        res = malloc((size_t)n * c->dec_hidden * sizeof *res);
        if (!res) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory in the encoder");
            goto done;
        }
        hv_eng_linear(eng, res, x, n, &w->proj, w->proj_b, NULL);
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
