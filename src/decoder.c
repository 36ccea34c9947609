/* The pre-LN Transformer decoder, as MODEL.md describes it. */
#include "decoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul.h"
#include "kernels/ops.h"

static float *alloc_floats(long n) { return malloc((size_t)(n > 0 ? n : 1) * sizeof(float)); }

hv_status hv_decoder_init(hv_decoder *dec, const hv_config *c,
                          const hv_decoder_weights *w, hv_error *e) {
    memset(dec, 0, sizeof *dec);
    dec->c = c;
    dec->w = w;
    int h = c->dec_hidden, rows = c->dec_max_seq;
    dec->max_rows = rows;
    long cache = (long)c->dec_layers * rows * h;
    dec->k_cache = alloc_floats(cache);
    dec->v_cache = alloc_floats(cache);
    dec->x = alloc_floats((long)rows * h);
    dec->norm = alloc_floats((long)rows * h);
    dec->q = alloc_floats((long)rows * h);
    dec->ctx = alloc_floats((long)rows * h);
    dec->tmp = alloc_floats((long)rows * h);
    dec->ff = alloc_floats((long)rows * c->dec_inner);
    dec->logits = alloc_floats(c->vocab_size);
    if (!dec->k_cache || !dec->v_cache || !dec->x || !dec->norm || !dec->q ||
        !dec->ctx || !dec->tmp || !dec->ff || !dec->logits) {
        hv_decoder_free(dec);
        return hv_err(e, HV_ERR_NOMEM, "out of memory for the decoder");
    }
    return HV_OK;
}

void hv_decoder_free(hv_decoder *dec) {
    if (!dec) return;
    free(dec->cross_k); free(dec->cross_v);
    free(dec->k_cache); free(dec->v_cache);
    free(dec->x); free(dec->norm); free(dec->q); free(dec->ctx);
    free(dec->tmp); free(dec->ff); free(dec->scores); free(dec->logits);
    memset(dec, 0, sizeof *dec);
}

hv_status hv_decoder_begin(hv_decoder *dec, hv_pool *pool, const float *enc,
                           int n_enc, int enc_len, hv_error *e) {
    const hv_config *c = dec->c;
    int h = c->dec_hidden, L = c->dec_layers;
    if (enc_len < 1 || enc_len > n_enc)
        return hv_err(e, HV_ERR_INVALID_ARG, "decoder: bad encoder length %d of %d",
                      enc_len, n_enc);
    if (n_enc > dec->cross_cap) {
        free(dec->cross_k); free(dec->cross_v); free(dec->scores);
        dec->cross_k = alloc_floats((long)L * n_enc * h);
        dec->cross_v = alloc_floats((long)L * n_enc * h);
        int cols = n_enc > dec->max_rows ? n_enc : dec->max_rows;
        dec->scores = alloc_floats((long)c->dec_heads * cols);
        if (!dec->cross_k || !dec->cross_v || !dec->scores) {
            free(dec->cross_k); free(dec->cross_v); free(dec->scores);
            dec->cross_k = dec->cross_v = dec->scores = NULL;
            dec->cross_cap = 0;
            return hv_err(e, HV_ERR_NOMEM, "out of memory for cross-attention");
        }
        dec->cross_cap = n_enc;
    }
    /* Padded encoder frames are masked, so only the valid rows matter. */
    for (int l = 0; l < L; l++) {
        const hv_dec_layer *y = &dec->w->layers[l];
        hv_linear(pool, dec->cross_k + (long)l * n_enc * h, enc, enc_len, &y->ck, y->ck_b);
        hv_linear(pool, dec->cross_v + (long)l * n_enc * h, enc, enc_len, &y->cv, y->cv_b);
    }
    dec->n_enc = n_enc;
    dec->enc_len = enc_len;
    dec->n_past = 0;
    return HV_OK;
}

typedef struct attn_job {
    hv_decoder *dec;
    const float *keys, *values; /* [n_keys x h] */
    int n_rows;                 /* query rows in dec->q */
    int first_pos;              /* absolute position of query row 0 */
    int n_keys;                 /* keys visible to the last row */
    int causal;                 /* row i sees keys 0 .. first_pos + i */
} attn_job;

/* Scaled dot-product attention of one head over all query rows. */
static void attn_head(void *arg, int hd, int n_tasks) {
    (void)n_tasks;
    const attn_job *j = arg;
    hv_decoder *dec = j->dec;
    int h = dec->c->dec_hidden, dh = h / dec->c->dec_heads;
    int cols = dec->cross_cap > dec->max_rows ? dec->cross_cap : dec->max_rows;
    float *sc = dec->scores + (long)hd * cols;
    float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < j->n_rows; i++) {
        int nk = j->causal ? j->first_pos + i + 1 : j->n_keys;
        const float *q = dec->q + (long)i * h + hd * dh;
        hv_gemm(1, nk, dh, scale, q, dh, j->keys + hd * dh, h, 1, 0.0f, sc, nk);
        hv_softmax(sc, nk);
        hv_gemm(1, dh, nk, 1.0f, sc, nk, j->values + hd * dh, h, 0, 0.0f,
                dec->ctx + (long)i * h + hd * dh, dh);
    }
}

hv_status hv_decoder_forward(hv_decoder *dec, hv_pool *pool,
                             const int32_t *tokens, int n, hv_error *e) {
    const hv_config *c = dec->c;
    const hv_decoder_weights *w = dec->w;
    int h = c->dec_hidden, V = c->vocab_size, p0 = dec->n_past;
    if (n < 1 || p0 + n > dec->max_rows)
        return hv_err(e, HV_ERR_LIMIT,
                      "decoder: %d positions exceed max_sequence_length %d",
                      p0 + n, dec->max_rows);
    if (!dec->cross_k)
        return hv_err(e, HV_ERR_INVALID_ARG, "decoder: no encoder states");

    /* token embedding + stored sinusoidal positions, then LayerNorm */
    for (int i = 0; i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= V)
            return hv_err(e, HV_ERR_INVALID_ARG, "decoder: token id %d out of range",
                          (int)tokens[i]);
        const float *te = (const float *)w->tok_emb.data + (long)tokens[i] * h;
        const float *pe = w->pos_enc + (long)(p0 + i) * h;
        float *x = dec->x + (long)i * h;
        for (int k = 0; k < h; k++) x[k] = te[k] + pe[k];
    }
    hv_layernorm(dec->x, dec->x, n, h, w->emb_ln_w, w->emb_ln_b, 1e-5f);

    for (int l = 0; l < c->dec_layers; l++) {
        const hv_dec_layer *y = &w->layers[l];
        float *kc = dec->k_cache + (long)l * dec->max_rows * h;
        float *vc = dec->v_cache + (long)l * dec->max_rows * h;

        /* causal self-attention; new keys and values go into the cache */
        hv_layernorm(dec->norm, dec->x, n, h, y->ln1_w, y->ln1_b, 1e-5f);
        hv_linear(pool, dec->q, dec->norm, n, &y->sq, y->sq_b);
        hv_linear(pool, kc + (long)p0 * h, dec->norm, n, &y->sk, y->sk_b);
        hv_linear(pool, vc + (long)p0 * h, dec->norm, n, &y->sv, y->sv_b);
        attn_job sj = {dec, kc, vc, n, p0, p0 + n, 1};
        hv_pool_run(pool, c->dec_heads, attn_head, &sj);
        hv_linear(pool, dec->tmp, dec->ctx, n, &y->so, y->so_b);
        hv_add_scaled(dec->x, dec->tmp, (long)n * h, 1.0f);

        /* cross-attention over the valid encoder frames */
        hv_layernorm(dec->norm, dec->x, n, h, y->ln2_w, y->ln2_b, 1e-5f);
        hv_linear(pool, dec->q, dec->norm, n, &y->cq, y->cq_b);
        attn_job cj = {dec, dec->cross_k + (long)l * dec->n_enc * h,
                       dec->cross_v + (long)l * dec->n_enc * h, n, p0,
                       dec->enc_len, 0};
        hv_pool_run(pool, c->dec_heads, attn_head, &cj);
        hv_linear(pool, dec->tmp, dec->ctx, n, &y->co, y->co_b);
        hv_add_scaled(dec->x, dec->tmp, (long)n * h, 1.0f);

        /* ReLU feed-forward */
        hv_layernorm(dec->norm, dec->x, n, h, y->ln3_w, y->ln3_b, 1e-5f);
        hv_linear(pool, dec->ff, dec->norm, n, &y->ff_in, y->ff_in_b);
        hv_relu(dec->ff, (long)n * c->dec_inner);
        hv_linear(pool, dec->tmp, dec->ff, n, &y->ff_out, y->ff_out_b);
        hv_add_scaled(dec->x, dec->tmp, (long)n * h, 1.0f);
    }
    dec->n_past = p0 + n;

    /* final norm and classifier, for the last position only */
    float *last = dec->norm;
    hv_layernorm(last, dec->x + (long)(n - 1) * h, 1, h, w->final_ln_w,
                 w->final_ln_b, 1e-5f);
    hv_linear(pool, dec->logits, last, 1, &w->cls, w->cls_b);
    if (c->log_softmax) hv_log_softmax(dec->logits, V);
    return HV_OK;
}
