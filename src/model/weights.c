/* Maps checkpoint tensors onto hv_weights. Every expected tensor is looked
 * up and shape-checked before anything is reported, so that one error lists
 * all missing or misshapen tensors. */
#include "model/weights.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct loader {
    hv_weights *w;
    const hv_safetensors *st;
    int n_problems;
    char problems[768]; /* the first few, one per line */
    bool oom;
    hv_error conv_err;   /* first conversion failure */
    hv_weight_type want; /* matrices' type; AUTO: the checkpoint's own */
} loader;

static void problem(loader *L, const char *fmt, ...) {
    if (L->n_problems++ >= 8) return;
    size_t used = strlen(L->problems);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->problems + used, sizeof L->problems - used, fmt, ap);
    va_end(ap);
}

/* arr (n used of *cap elements of elem bytes) with room for one more:
 * itself, or moved to twice the room (*cap updated); NULL when out of
 * memory (arr is kept). */
static void *reserve_one(void *arr, int n, int *cap, size_t elem) {
    if (n < *cap) return arr;
    int c = *cap ? *cap * 2 : 256;
    void *a = realloc(arr, (size_t)c * elem);
    if (a) *cap = c;
    return a;
}

static void *track(loader *L, void *p) {
    hv_weights *w = L->w;
    void **a = p ? reserve_one(w->allocs, w->n_allocs, &w->cap_allocs, sizeof *a) : NULL;
    if (!a) {
        free(p);
        L->oom = true;
        return NULL;
    }
    w->allocs = a;
    w->allocs[w->n_allocs++] = p;
    return p;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t used = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

/* Looks up a tensor and checks its shape and dtype. shape[0] < 0 means
 * "at least -shape[0] rows" (position tables may be longer than used).
 * NULL when absent (a problem unless optional) or wrong. */
static const hv_st_tensor *find_v(loader *L, bool optional, int ndim, const int64_t *shape,
                                  const char *fmt, va_list ap) {
    char name[256];
    vsnprintf(name, sizeof name, fmt, ap);
    const hv_st_tensor *t = hv_st_find(L->st, name);
    if (!t) {
        if (!optional) problem(L, "\n  %s: missing", name);
        return NULL;
    }
    bool ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = shape[i] < 0 ? t->shape[i] >= -shape[i] : t->shape[i] == shape[i];
    if (!ok) {
        char want[96], have[96];
        int64_t w0[HV_ST_MAX_DIMS];
        for (int i = 0; i < ndim; i++) w0[i] = shape[i] < 0 ? -shape[i] : shape[i];
        shape_str(want, sizeof want, ndim, w0);
        shape_str(have, sizeof have, t->ndim, t->shape);
        problem(L, "\n  %s: shape %s, expected %s", name, have, want);
        return NULL;
    }
    if (t->dtype != HV_DT_F32 && t->dtype != HV_DT_F16 && t->dtype != HV_DT_BF16 &&
        t->quant == HV_WEIGHTS_AUTO) {
        problem(L, "\n  %s: dtype %s is not F32, F16 or BF16", name, hv_dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

/* The tensor's values as f32, in a buffer of its own (untracked). */
static float *to_f32(loader *L, const hv_st_tensor *t) {
    float *p = malloc((size_t)t->numel * sizeof(float));
    if (!p) {
        L->oom = true;
        return NULL;
    }
    if (hv_st_to_f32(t, p, &L->conv_err) != HV_OK) {
        problem(L, "\n  %s: %s", t->name, L->conv_err.msg);
        free(p);
        return NULL;
    }
    hv_st_release(t); /* converted: its file pages need not stay resident */
    return p;
}

/* A small tensor (norms, biases, convolutions) as f32. */
static float *tensor(loader *L, bool optional, int ndim, const int64_t *shape, const char *fmt,
                     ...) {
    va_list ap;
    va_start(ap, fmt);
    const hv_st_tensor *t = find_v(L, optional, ndim, shape, fmt, ap);
    va_end(ap);
    if (!t || L->oom || L->n_problems) return NULL; /* only checking from here on */
    return track(L, to_f32(L, t));
}

static hv_weight_type disk_type(const hv_st_tensor *t) {
    hv_dtype dt = t->dtype;
    if (t->quant != HV_WEIGHTS_AUTO) return t->quant;
    return dt == HV_DT_F16 ? HV_WEIGHTS_F16 : dt == HV_DT_BF16 ? HV_WEIGHTS_BF16 : HV_WEIGHTS_F32;
}

/* Records m under the tensor's name. */
static void named(loader *L, const hv_st_tensor *t, const hv_mat *m) {
    hv_weights *w = L->w;
    hv_named_mat *a = reserve_one(w->mats, w->n_mats, &w->cap_mats, sizeof *a);
    if (!a) {
        L->oom = true;
        return;
    }
    w->mats = a;
    w->mats[w->n_mats++] = (hv_named_mat){t->name, *m};
}

/* A weight matrix [rows x cols] in the compute type: the checkpoint's own
 * type by default, read in place from the mapping when it is already that
 * type (no copy; quantized blocks at an odd offset are copied), else
 * converted. q8_0 and q4_0 of rows % 8 == 0 are always computed in the x8
 * layout of matmul_impl.h: converted ones and row-by-row blocks from the
 * file are interleaved into a copy, so that a checkpoint of either layout
 * and a conversion at load feed the same bytes to the same kernels (the
 * row-by-row GEMV sums a block's products in another order than the x8
 * one, and its results differ in the last bits). A matrix that cannot take
 * the type (q8_0 needs cols % 32 == 0) stays f32. */
static hv_mat matrix(loader *L, int ndim, const int64_t *shape, int rows, int cols, const char *fmt,
                     ...) {
    hv_mat m = {.type = HV_WEIGHTS_F32, .rows = rows, .cols = cols};
    va_list ap;
    va_start(ap, fmt);
    const hv_st_tensor *t = find_v(L, false, ndim, shape, fmt, ap);
    va_end(ap);
    if (!t || L->oom || L->n_problems) return m;
    hv_weight_type want = L->want == HV_WEIGHTS_AUTO ? disk_type(t) : L->want;
    /* quantized blocks hold uint16 scales */
    size_t esize = t->quant != HV_WEIGHTS_AUTO ? 2 : hv_dtype_size(t->dtype);
    bool quant = t->quant != HV_WEIGHTS_AUTO;
    if (want == disk_type(t) && (quant || (uintptr_t)t->data % esize == 0)) {
        m.type = want;
        m.data = t->data;
        m.x8 = t->x8;
        if (quant && !m.x8 && rows % HV_X8_ROWS == 0) { /* row by row: interleaved */
            void *x8 = NULL;
            hv_error err;
            if (hv_mat_interleave(&m, &x8, &err) != HV_OK) { /* only out of memory */
                L->oom = true;
                return m;
            }
            m.data = track(L, x8);
            hv_st_release(t);
        } else if ((uintptr_t)t->data % esize) { /* blocks at an odd offset: copied */
            void *copy = NULL;
            if (posix_memalign(&copy, 64, t->nbytes) != 0) {
                L->oom = true;
                return m;
            }
            memcpy(copy, t->data, t->nbytes);
            m.data = track(L, copy);
            hv_st_release(t);
        }
        L->w->mat_bytes += t->nbytes;
        named(L, t, &m);
        return m;
    }
    float *f = to_f32(L, t);
    if (!f) return m;
    void *storage = NULL;
    hv_error err;
    hv_status st = want == HV_WEIGHTS_F32
                       ? HV_ERR_UNSUPPORTED
                       : hv_mat_from_f32(&m, want, f, rows, cols, &storage, &err);
    if (st == HV_OK) {
        free(f);
        /* blocks for the decoder's 8-row GEMV (the same values) */
        void *x8 = NULL;
        if ((want == HV_WEIGHTS_Q8_0 || want == HV_WEIGHTS_Q4_0) && rows % HV_X8_ROWS == 0) {
            if (hv_mat_interleave(&m, &x8, &err) != HV_OK) { /* only out of memory */
                free(storage);
                L->oom = true;
                return m;
            }
            free(storage);
            storage = x8;
        }
        track(L, storage);
    } else if (st == HV_ERR_UNSUPPORTED) {
        m.type = HV_WEIGHTS_F32;
        m.data = track(L, f);
    } else {
        free(f);
        L->oom = true;
        return m;
    }
    L->w->mat_bytes += hv_mat_bytes(&m);
    named(L, t, &m);
    return m;
}

#define S(...)                                                                                     \
    (const int64_t[]) { __VA_ARGS__ }
#define NEED(ndim, shape, ...) tensor(L, false, ndim, shape, __VA_ARGS__)
#define OPT(ndim, shape, ...)  tensor(L, true, ndim, shape, __VA_ARGS__)

/* A Linear layer: weight [out x in] required, bias [out] required or not. */
static hv_mat linear(loader *L, float **bias, bool bias_optional, int out, int in,
                     const char *prefix) {
    hv_mat m = matrix(L, 2, S(out, in), out, in, "%s.weight", prefix);
    if (bias) *bias = tensor(L, bias_optional, 1, S(out), "%s.bias", prefix);
    return m;
}

static void norm(loader *L, float **w, float **b, int d, const char *prefix) {
    *w = NEED(1, S(d), "%s.weight", prefix);
    *b = NEED(1, S(d), "%s.bias", prefix);
}

/* Zero-filled stand-in for an absent optional bias, so kernels need no
 * special case. */
static float *zeros_if_null(loader *L, float *p, int n) {
    return p ? p : track(L, calloc((size_t)n, sizeof(float)));
}

static void load_enc_layer(loader *L, const hv_config *c, int i, hv_enc_layer *y) {
    int d = c->d_model, ff = c->d_model * c->ff_expansion, H = c->enc_heads;
    int K = c->conv_kernel;
    char p[160];
#define P(sub) (snprintf(p, sizeof p, "encoder.layers.%d.%s", i, sub), p)
    norm(L, &y->ff1_norm_w, &y->ff1_norm_b, d, P("norm_feed_forward1"));
    y->ff1_up = linear(L, &y->ff1_up_b, true, ff, d, P("feed_forward1.linear1"));
    y->ff1_down = linear(L, &y->ff1_down_b, true, d, ff, P("feed_forward1.linear2"));

    norm(L, &y->att_norm_w, &y->att_norm_b, d, P("norm_self_att"));
    y->wq = linear(L, &y->bq, false, d, d, P("self_attn.linear_q"));
    y->wk = linear(L, &y->bk, false, d, d, P("self_attn.linear_k"));
    y->wv = linear(L, &y->bv, false, d, d, P("self_attn.linear_v"));
    y->wo = linear(L, &y->bo, false, d, d, P("self_attn.linear_out"));
    y->wpos = linear(L, NULL, false, d, d, P("self_attn.linear_pos"));
    y->pos_bias_u = NEED(2, S(H, d / H), "%s", P("self_attn.pos_bias_u"));
    y->pos_bias_v = NEED(2, S(H, d / H), "%s", P("self_attn.pos_bias_v"));

    norm(L, &y->conv_norm_w, &y->conv_norm_b, d, P("norm_conv"));
    y->pw1 = matrix(L, 3, S(2 * d, d, 1), 2 * d, d, "%s", P("conv.pointwise_conv1.weight"));
    y->pw1_b = OPT(1, S(2 * d), "%s", P("conv.pointwise_conv1.bias"));
    y->dw_w = NEED(3, S(d, 1, K), "%s", P("conv.depthwise_conv.weight"));
    y->dw_b = OPT(1, S(d), "%s", P("conv.depthwise_conv.bias"));
    float *bn_w = NEED(1, S(d), "%s", P("conv.batch_norm.weight"));
    float *bn_b = NEED(1, S(d), "%s", P("conv.batch_norm.bias"));
    float *bn_mean = NEED(1, S(d), "%s", P("conv.batch_norm.running_mean"));
    float *bn_var = NEED(1, S(d), "%s", P("conv.batch_norm.running_var"));
    y->pw2 = matrix(L, 3, S(d, d, 1), d, d, "%s", P("conv.pointwise_conv2.weight"));
    y->pw2_b = OPT(1, S(d), "%s", P("conv.pointwise_conv2.bias"));

    norm(L, &y->ff2_norm_w, &y->ff2_norm_b, d, P("norm_feed_forward2"));
    y->ff2_up = linear(L, &y->ff2_up_b, true, ff, d, P("feed_forward2.linear1"));
    y->ff2_down = linear(L, &y->ff2_down_b, true, d, ff, P("feed_forward2.linear2"));
    norm(L, &y->out_norm_w, &y->out_norm_b, d, P("norm_out"));
#undef P
    if (L->n_problems || L->oom) return;

    y->ff1_up_b = zeros_if_null(L, y->ff1_up_b, ff);
    y->ff1_down_b = zeros_if_null(L, y->ff1_down_b, d);
    y->ff2_up_b = zeros_if_null(L, y->ff2_up_b, ff);
    y->ff2_down_b = zeros_if_null(L, y->ff2_down_b, d);
    y->pw1_b = zeros_if_null(L, y->pw1_b, 2 * d);
    y->pw2_b = zeros_if_null(L, y->pw2_b, d);
    y->dw_b = zeros_if_null(L, y->dw_b, d);
    if (L->oom) return;
    /* A variance must be finite and not negative: else the square root
     * below may be NaN, and every output silently so. */
    for (int ch = 0; ch < d; ch++)
        if (!(isfinite(bn_var[ch]) && bn_var[ch] >= 0)) {
            problem(L,
                    "\n  encoder.layers.%d.conv.batch_norm.running_var: value %d is %g (a "
                    "variance must be finite and not negative)",
                    i, ch, (double)bn_var[ch]);
            return;
        }
    /* Fold eval-mode BatchNorm into the depthwise convolution:
     * bn(z) = z * scale + shift with scale = w / sqrt(var + eps). */
    for (int ch = 0; ch < d; ch++) {
        float scale = bn_w[ch] / sqrtf(bn_var[ch] + HV_BN_EPS);
        float shift = bn_b[ch] - bn_mean[ch] * scale;
        for (int k = 0; k < K; k++) y->dw_w[(long)ch * K + k] *= scale;
        y->dw_b[ch] = y->dw_b[ch] * scale + shift;
    }
}

static void load_encoder(loader *L, const hv_config *c, hv_encoder_weights *E) {
    int C = c->sub_channels, stages = hv_sub_stages(c);
    if (stages > HV_MAX_SUB_STAGES) {
        problem(L, "\n  encoder.subsampling_factor %d: too many stages", c->sub_factor);
        return;
    }
    E->n_stages = stages;
    E->conv0_w = NEED(4, S(C, 1, 3, 3), "encoder.pre_encode.conv.0.weight");
    E->conv0_b = NEED(1, S(C), "encoder.pre_encode.conv.0.bias");
    for (int s = 1; s < stages; s++) {
        E->dw_w[s] = NEED(4, S(C, 1, 3, 3), "encoder.pre_encode.conv.%d.weight", 3 * s - 1);
        E->dw_b[s] = NEED(1, S(C), "encoder.pre_encode.conv.%d.bias", 3 * s - 1);
        E->pw[s] = matrix(L, 4, S(C, C, 1, 1), C, C, "encoder.pre_encode.conv.%d.weight", 3 * s);
        E->pw_b[s] = NEED(1, S(C), "encoder.pre_encode.conv.%d.bias", 3 * s);
    }
    E->pre_out = linear(L, &E->pre_out_b, false, c->d_model, C * hv_subsampled_len(c, c->feat_in),
                        "encoder.pre_encode.out");
    E->layers = track(L, calloc((size_t)c->enc_layers, sizeof *E->layers));
    if (!E->layers) return;
    for (int i = 0; i < c->enc_layers; i++) load_enc_layer(L, c, i, &E->layers[i]);
    if (c->d_model != c->dec_hidden)
        E->proj = linear(L, &E->proj_b, false, c->dec_hidden, c->d_model, "encoder_decoder_proj");
}

static void load_decoder(loader *L, const hv_config *c, hv_decoder_weights *D) {
    size_t before = L->w->mat_bytes;
    int h = c->dec_hidden, V = c->vocab_size, I = c->dec_inner;
    D->tok_emb = matrix(L, 2, S(V, h), V, h, "transf_decoder._embedding.token_embedding.weight");
    D->pos_enc =
        NEED(2, S(-c->dec_max_seq, h), "transf_decoder._embedding.position_embedding.pos_enc");
    norm(L, &D->emb_ln_w, &D->emb_ln_b, h, "transf_decoder._embedding.layer_norm");
    D->layers = track(L, calloc((size_t)c->dec_layers, sizeof *D->layers));
    if (!D->layers) return;
    for (int i = 0; i < c->dec_layers; i++) {
        hv_dec_layer *y = &D->layers[i];
        char p[160];
#define P(sub) (snprintf(p, sizeof p, "transf_decoder._decoder.layers.%d.%s", i, sub), p)
        norm(L, &y->ln1_w, &y->ln1_b, h, P("layer_norm_1"));
        y->sq = linear(L, &y->sq_b, false, h, h, P("first_sub_layer.query_net"));
        y->sk = linear(L, &y->sk_b, false, h, h, P("first_sub_layer.key_net"));
        y->sv = linear(L, &y->sv_b, false, h, h, P("first_sub_layer.value_net"));
        y->so = linear(L, &y->so_b, false, h, h, P("first_sub_layer.out_projection"));
        norm(L, &y->ln2_w, &y->ln2_b, h, P("layer_norm_2"));
        y->cq = linear(L, &y->cq_b, false, h, h, P("second_sub_layer.query_net"));
        y->ck = linear(L, &y->ck_b, false, h, h, P("second_sub_layer.key_net"));
        y->cv = linear(L, &y->cv_b, false, h, h, P("second_sub_layer.value_net"));
        y->co = linear(L, &y->co_b, false, h, h, P("second_sub_layer.out_projection"));
        norm(L, &y->ln3_w, &y->ln3_b, h, P("layer_norm_3"));
        y->ff_in = linear(L, &y->ff_in_b, false, I, h, P("third_sub_layer.dense_in"));
        y->ff_out = linear(L, &y->ff_out_b, false, h, I, P("third_sub_layer.dense_out"));
#undef P
    }
    norm(L, &D->final_ln_w, &D->final_ln_b, h, "transf_decoder._decoder.final_layer_norm");
    /* The classifier's weight is tied to the token embedding; a checkpoint
     * may still carry its own copy. */
    D->cls = hv_st_find(L->st, "log_softmax.mlp.layer0.weight")
                 ? matrix(L, 2, S(V, h), V, h, "log_softmax.mlp.layer0.weight")
                 : D->tok_emb;
    D->cls_b = NEED(1, S(V), "log_softmax.mlp.layer0.bias");
    /* per token: every decoder matrix but the cross-attention key and
     * value projections, which run once per utterance */
    L->w->dec_mat_bytes = L->w->mat_bytes - before;
    for (int i = 0; i < c->dec_layers && !L->n_problems && !L->oom; i++)
        L->w->dec_mat_bytes -= hv_mat_bytes(&D->layers[i].ck) + hv_mat_bytes(&D->layers[i].cv);
}

static void load_frontend(loader *L, const hv_config *c, hv_weights *w) {
    int bins = c->n_fft / 2 + 1;
    w->fe_window = OPT(1, S(c->win_length), "preprocessor.featurizer.window");
    const hv_st_tensor *fb = hv_st_find(L->st, "preprocessor.featurizer.fb");
    if (fb && fb->ndim == 2)
        w->fe_fb = NEED(2, S(c->n_mels, bins), "preprocessor.featurizer.fb");
    else
        w->fe_fb = OPT(3, S(1, c->n_mels, bins), "preprocessor.featurizer.fb");
}

/* The mapped tensor whose bytes m read in place, or NULL (a copy). */
static const hv_st_tensor *mapped_source(const hv_weights *w, const hv_safetensors *st,
                                         const void *data) {
    for (int i = 0; i < w->n_mats; i++)
        if (w->mats[i].m.data == data) {
            const hv_st_tensor *t = hv_st_find(st, w->mats[i].name);
            return t && t->data == data ? t : NULL;
        }
    return NULL;
}

/* The index in w->allocs of the converted row-major copy that m alone
 * reads, or -1: read in place from the mapping, or shared (a tied
 * classifier reads the token embedding, which the decoder still looks up
 * row by row). */
static int private_copy(const hv_weights *w, const hv_mat *m) {
    if (m != &w->dec.tok_emb && m->data == w->dec.tok_emb.data) return -1;
    int readers = 0;
    for (int i = 0; i < w->n_mats; i++) readers += w->mats[i].m.data == m->data;
    if (readers > 1) return -1;
    for (int i = 0; i < w->n_allocs; i++)
        if (w->allocs[i] == m->data) return i;
    return -1;
}

/* m replaced by convert's new form of it (hv_mat_interleave_r64,
 * hv_mat_widen_bf16), its buffer tracked in w; the row-major copy it was
 * converted into at load freed (a bf16 load of an f32 checkpoint would
 * otherwise hold both), or the mapped pages it was read from released. The
 * named list follows to the new matrix, except where the token embedding,
 * which keeps its own form, names the old one (a tied classifier). */
typedef hv_status (*mat_convert)(hv_mat *m, void **storage, hv_pool *pool, hv_error *e);
static hv_status replace_mat(hv_weights *w, const hv_safetensors *st, hv_mat *m,
                             mat_convert convert, hv_pool *pool, hv_error *e) {
    const void *old = m->data;
    int copy = private_copy(w, m);
    const hv_st_tensor *src = NULL;
    if (copy < 0) { /* the new buffer takes a slot of its own */
        void **a = reserve_one(w->allocs, w->n_allocs, &w->cap_allocs, sizeof *a);
        if (!a) return hv_err(e, HV_ERR_NOMEM, "out of memory for the converted weights");
        w->allocs = a;
        src = mapped_source(w, st, old);
    }
    void *storage;
    hv_status s = convert(m, &storage, pool, e);
    if (s) return s;
    if (old != w->dec.tok_emb.data)
        for (int i = 0; i < w->n_mats; i++)
            if (w->mats[i].m.data == old) w->mats[i].m = *m;
    if (copy < 0) {
        w->allocs[w->n_allocs++] = storage;
        hv_st_release(src); /* advice only; a tied embedding faults back in */
        return HV_OK;
    }
    free(w->allocs[copy]);
    w->allocs[copy] = storage;
    return HV_OK;
}

/* m in the r64 layout when it can take it (replace_mat). */
static hv_status decoder_mat_r64(hv_weights *w, const hv_safetensors *st, hv_mat *m, hv_pool *pool,
                                 hv_error *e) {
    return hv_mat_can_r64(m) ? replace_mat(w, st, m, hv_mat_interleave_r64, pool, e) : HV_OK;
}

/* Matrices of a decoder step per layer (decoder_step_mat). */
#define STEP_MATS_PER_LAYER 8

/* Matrix i of a decoder step's layers, STEP_MATS_PER_LAYER per layer
 * (the classifier, the step's last product, apart). */
static hv_mat *decoder_step_mat(hv_weights *w, int i) {
    hv_dec_layer *y = &w->dec.layers[i / STEP_MATS_PER_LAYER];
    hv_mat *layer[STEP_MATS_PER_LAYER] = {&y->sq, &y->sk, &y->sv,    &y->so,
                                          &y->cq, &y->co, &y->ff_in, &y->ff_out};
    return layer[i % STEP_MATS_PER_LAYER];
}

hv_status hv_weights_decoder_r64(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                                 int n_threads, hv_error *e) {
    int n = STEP_MATS_PER_LAYER * c->dec_layers, any = hv_mat_can_r64(&w->dec.cls);
    for (int i = 0; i < n && !any; i++) any = hv_mat_can_r64(decoder_step_mat(w, i));
    /* threads only for copies to make (none for q8_0 or f32 decoders);
     * without them, on this one */
    hv_pool *pool = any ? hv_pool_new(n_threads) : NULL;
    hv_status s = HV_OK;
    for (int i = 0; i < n && !s; i++) s = decoder_mat_r64(w, st, decoder_step_mat(w, i), pool, e);
    if (!s) s = decoder_mat_r64(w, st, &w->dec.cls, pool, e);
    hv_pool_free(pool);
    return s;
}

/* The encoder's weight matrices, n_out at most: the subsampling's
 * pointwise convolutions, its output projection, every layer's eleven,
 * the projection to the decoder's width where there is one. */
static int encoder_mats(hv_encoder_weights *E, const hv_config *c, hv_mat **out, int n_out) {
    int n = 0;
    for (int s = 1; s < E->n_stages && n < n_out; s++) out[n++] = &E->pw[s];
    if (n < n_out) out[n++] = &E->pre_out;
    for (int l = 0; E->layers && l < c->enc_layers; l++) {
        hv_enc_layer *y = &E->layers[l];
        hv_mat *layer[] = {&y->ff1_up, &y->ff1_down, &y->wq,  &y->wk,     &y->wv,      &y->wo,
                           &y->wpos,   &y->pw1,      &y->pw2, &y->ff2_up, &y->ff2_down};
        for (size_t i = 0; i < sizeof layer / sizeof layer[0] && n < n_out; i++)
            out[n++] = layer[i];
    }
    if (E->proj.data && n < n_out) out[n++] = &E->proj;
    return n;
}

/* Whether hv_weights_widen_encoder widens m: loaded, of a type in types
 * that hv_mat_widen_bf16 takes. */
static int widens(const hv_mat *m, unsigned types) {
    return m->data && (types >> m->type & 1u) &&
           (m->type == HV_WEIGHTS_Q8_0 || m->type == HV_WEIGHTS_Q4_0);
}

hv_status hv_weights_widen_encoder(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                                   unsigned types, int n_threads, hv_error *e) {
    int cap = HV_MAX_SUB_STAGES + 2 + 11 * (c->enc_layers > 0 ? c->enc_layers : 0);
    hv_mat **mats = malloc((size_t)cap * sizeof *mats);
    if (!mats) return hv_err(e, HV_ERR_NOMEM, "out of memory for the encoder's weights");
    int n = encoder_mats(&w->enc, c, mats, cap), any = 0;
    for (int i = 0; i < n; i++) any |= widens(mats[i], types);
    if (!any) {
        free(mats);
        return HV_OK;
    }
    hv_pool *pool = hv_pool_new(n_threads);
    hv_status s = HV_OK;
    for (int i = 0; i < n && !s; i++) {
        hv_mat *m = mats[i];
        if (!widens(m, types)) continue;
        size_t before = hv_mat_bytes(m);
        if (!(s = replace_mat(w, st, m, hv_mat_widen_bf16, pool, e))) {
            w->mat_bytes += hv_mat_bytes(m) - before;
            w->widened_bytes += hv_mat_bytes(m);
        }
    }
    hv_pool_free(pool);
    free(mats);
    return s;
}

hv_status hv_weights_load(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                          hv_weight_type type, hv_error *e) {
    memset(w, 0, sizeof *w);
    loader L = {.w = w, .st = st, .want = type};
    /* Pass 1 checks everything (no conversion once a problem is seen);
     * the conversion happens in the same pass when all is well so far. */
    load_frontend(&L, c, w);
    load_encoder(&L, c, &w->enc);
    load_decoder(&L, c, &w->dec);
    if (L.oom) {
        hv_weights_free(w);
        return hv_err(e, HV_ERR_NOMEM, "out of memory loading the weights");
    }
    if (L.n_problems) {
        hv_weights_free(w);
        return hv_err(e, HV_ERR_FORMAT,
                      "model.safetensors: %d tensor%s missing or wrong "
                      "for this config.json:%s%s",
                      L.n_problems, L.n_problems == 1 ? "" : "s", L.problems,
                      L.n_problems > 8 ? "\n  ..." : "");
    }
    return HV_OK;
}

void hv_weights_free(hv_weights *w) {
    if (!w) return;
    for (int i = 0; i < w->n_allocs; i++) free(w->allocs[i]);
    free(w->allocs);
    free(w->mats);
    memset(w, 0, sizeof *w);
}
