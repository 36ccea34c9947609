/* The pre-LN Transformer decoder, as docs/MODEL.md describes it, over a batch of
 * sequences with a block-structured, copy-on-write self-attention cache. */
#include "decoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/engine.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"

#define BS HV_KV_BLOCK

static float *alloc_floats(long n) { return malloc((size_t)(n > 0 ? n : 1) * sizeof(float)); }

hv_status hv_decoder_init(hv_decoder *dec, const hv_config *c, const hv_decoder_weights *w,
                          hv_error *e) {
    (void)e;
    memset(dec, 0, sizeof *dec);
    dec->c = c;
    dec->w = w;
    dec->blocks_per_seq = (c->dec_max_seq + BS - 1) / BS;
    /* f16 caches only when every product that feeds them (the keys and
     * values of self- and cross-attention, in every layer) is quantized:
     * a checkpoint that keeps any of them in full precision keeps its
     * exact arithmetic */
    dec->kv_half = c->dec_layers > 0;
    for (int l = 0; l < c->dec_layers; l++) {
        const hv_mat *m[4] = {&w->layers[l].sk, &w->layers[l].sv, &w->layers[l].ck,
                              &w->layers[l].cv};
        for (int i = 0; i < 4; i++)
            dec->kv_half &= m[i]->type == HV_WEIGHTS_Q8_0 || m[i]->type == HV_WEIGHTS_Q4_0;
    }
    return HV_OK;
}

/* Bytes of one cached value. */
static size_t kv_bytes(const hv_decoder *dec) { return dec->kv_half ? 2 : sizeof(float); }

/* Writes n values of src at element `at` of a cache array. */
static void kv_store(const hv_decoder *dec, void *base, long at, const float *src, int n) {
    if (dec->kv_half)
        hv_narrow_f16((uint16_t *)base + at, src, n);
    else
        memcpy((float *)base + at, src, (size_t)n * sizeof(float));
}

/* Element `at` of a cache array. */
static const void *kv_at(const hv_decoder *dec, const void *base, long at) {
    return (const char *)base + at * (long)kv_bytes(dec);
}

void hv_decoder_free(hv_decoder *dec) {
    if (!dec) return;
    free(dec->cross_k);
    free(dec->cross_v);
    for (int i = 0; i < dec->n_blocks; i++) {
        free(dec->blocks[i].k);
        free(dec->blocks[i].v);
    }
    free(dec->blocks);
    free(dec->table);
    free(dec->seq_len);
    free(dec->scratch_table);
    free(dec->scratch_len);
    free(dec->x);
    free(dec->norm);
    free(dec->q);
    free(dec->kv);
    free(dec->ctx);
    free(dec->tmp);
    free(dec->ff);
    free(dec->scores);
    free(dec->logits);
    memset(dec, 0, sizeof *dec);
}

/* ------------------------------------------------------------ the cache */

static int n_blocks_of(int len) { return (len + BS - 1) / BS; }

static int *seq_table(hv_decoder *dec, int s) { return dec->table + (long)s * dec->blocks_per_seq; }

static void release_seq(hv_decoder *dec, int s) {
    int *t = seq_table(dec, s);
    for (int i = 0; i < n_blocks_of(dec->seq_len[s]); i++) dec->blocks[t[i]].refs--;
    dec->seq_len[s] = 0;
}

/* A block no sequence uses, allocated if needed; -1 when out of memory. */
static int alloc_block(hv_decoder *dec) {
    for (int i = 0; i < dec->n_blocks; i++)
        if (dec->blocks[i].refs == 0) {
            dec->blocks[i].refs = 1;
            return i;
        }
    long n = (long)dec->c->dec_layers * BS * dec->c->dec_hidden;
    hv_kv_block *b = realloc(dec->blocks, (size_t)(dec->n_blocks + 1) * sizeof *b);
    if (!b) return -1;
    dec->blocks = b;
    b = &dec->blocks[dec->n_blocks];
    b->k = malloc((size_t)n * kv_bytes(dec));
    b->v = malloc((size_t)n * kv_bytes(dec));
    if (!b->k || !b->v) {
        free(b->k);
        free(b->v);
        return -1;
    }
    b->refs = 1;
    return dec->n_blocks++;
}

/* Makes sure sequence s owns the blocks for positions len .. len+n-1:
 * fresh blocks where a block starts, a private copy of a shared, partly
 * filled last block (copy-on-write). */
static int prepare_append(hv_decoder *dec, int s, int n) {
    int *t = seq_table(dec, s), len = dec->seq_len[s];
    long layer_rows = (long)dec->c->dec_layers * BS * dec->c->dec_hidden;
    for (int p = len; p < len + n; p++) {
        int bi = p / BS;
        if (p % BS == 0) {
            if ((t[bi] = alloc_block(dec)) < 0) return -1;
        } else if (p == len && dec->blocks[t[bi]].refs > 1) {
            int nb = alloc_block(dec);
            if (nb < 0) return -1;
            /* whole blocks are copied; rows past p are rewritten before use */
            memcpy(dec->blocks[nb].k, dec->blocks[t[bi]].k, (size_t)layer_rows * kv_bytes(dec));
            memcpy(dec->blocks[nb].v, dec->blocks[t[bi]].v, (size_t)layer_rows * kv_bytes(dec));
            dec->blocks[t[bi]].refs--;
            t[bi] = nb;
        }
    }
    return 0;
}

hv_status hv_decoder_reorder(hv_decoder *dec, const int *parents, int n, hv_error *e) {
    int bps = dec->blocks_per_seq;
    if (n < 0 || n > dec->max_seqs)
        return hv_err(e, HV_ERR_INVALID_ARG, "decoder: %d sequences, room for %d", n,
                      dec->max_seqs);
    for (int i = 0; i < n; i++) {
        int p = parents[i];
        if (p < 0 || p >= dec->max_seqs)
            return hv_err(e, HV_ERR_INVALID_ARG, "decoder: no sequence %d", p);
        memcpy(dec->scratch_table + (long)i * bps, seq_table(dec, p), (size_t)bps * sizeof(int));
        dec->scratch_len[i] = dec->seq_len[p];
        for (int b = 0; b < n_blocks_of(dec->seq_len[p]); b++)
            dec->blocks[seq_table(dec, p)[b]].refs++;
    }
    for (int s = 0; s < dec->max_seqs; s++) release_seq(dec, s);
    memcpy(dec->table, dec->scratch_table, (size_t)n * bps * sizeof(int));
    memcpy(dec->seq_len, dec->scratch_len, (size_t)n * sizeof(int));
    return HV_OK;
}

/* ------------------------------------------------------------ utterance */

static int grow(float **p, long *cap, long need) {
    if (need <= *cap) return 0;
    float *q = alloc_floats(need);
    if (!q) return -1;
    free(*p);
    *p = q;
    *cap = need;
    return 0;
}

hv_status hv_decoder_begin(hv_decoder *dec, const hv_engine *eng, const float *enc, int n_enc,
                           int enc_len, int max_seqs, hv_error *e) {
    const hv_config *c = dec->c;
    int h = c->dec_hidden, L = c->dec_layers;
    if (enc_len < 1 || enc_len > n_enc)
        return hv_err(e, HV_ERR_INVALID_ARG, "decoder: bad encoder length %d of %d", enc_len,
                      n_enc);
    if (max_seqs < 1) return hv_err(e, HV_ERR_INVALID_ARG, "decoder: %d sequences", max_seqs);
    for (int s = 0; s < dec->max_seqs; s++) release_seq(dec, s);
    if (max_seqs > dec->max_seqs) {
        long tn = (long)max_seqs * dec->blocks_per_seq;
        int *t = malloc((size_t)tn * sizeof *t), *st = malloc((size_t)tn * sizeof *st);
        int *l = calloc((size_t)max_seqs, sizeof *l), *sl = calloc((size_t)max_seqs, sizeof *sl);
        float *lg = alloc_floats((long)max_seqs * c->vocab_size);
        if (!t || !st || !l || !sl || !lg) {
            free(t);
            free(st);
            free(l);
            free(sl);
            free(lg);
            return hv_err(e, HV_ERR_NOMEM, "out of memory for %d decoder sequences", max_seqs);
        }
        free(dec->table);
        free(dec->scratch_table);
        free(dec->seq_len);
        free(dec->scratch_len);
        free(dec->logits);
        dec->table = t;
        dec->scratch_table = st;
        dec->seq_len = l;
        dec->scratch_len = sl;
        dec->logits = lg;
        dec->max_seqs = max_seqs;
    }
    if (n_enc > dec->cross_cap) {
        free(dec->cross_k);
        free(dec->cross_v);
        dec->cross_k = malloc((size_t)L * n_enc * h * kv_bytes(dec));
        dec->cross_v = malloc((size_t)L * n_enc * h * kv_bytes(dec));
        if (!dec->cross_k || !dec->cross_v) {
            free(dec->cross_k);
            free(dec->cross_v);
            dec->cross_k = dec->cross_v = NULL;
            dec->cross_cap = 0;
            return hv_err(e, HV_ERR_NOMEM, "out of memory for cross-attention");
        }
        dec->cross_cap = n_enc;
    }
    /* Padded encoder frames are masked, so only the valid rows matter.
     * Stored head by head ([layer][head][frame][dh]), so that each head's
     * attention reads one contiguous run. */
    int H = c->dec_heads, dh = h / H;
    float *kv = alloc_floats((long)enc_len * h);
    if (!kv) return hv_err(e, HV_ERR_NOMEM, "out of memory for cross-attention");
    for (int l = 0; l < L; l++) {
        const hv_dec_layer *y = &dec->w->layers[l];
        for (int v = 0; v < 2; v++) {
            void *dst = v ? dec->cross_v : dec->cross_k;
            hv_eng_linear(eng, kv, enc, enc_len, v ? &y->cv : &y->ck, v ? y->cv_b : y->ck_b, NULL);
            for (int hd = 0; hd < H; hd++)
                for (int f = 0; f < enc_len; f++)
                    kv_store(dec, dst, (((long)l * H + hd) * n_enc + f) * dh,
                             kv + (long)f * h + (long)hd * dh, dh);
        }
    }
    free(kv);
    dec->n_enc = n_enc;
    dec->enc_len = enc_len;
    return HV_OK;
}

/* Activation buffers for `rows` rows. */
static int ensure_rows(hv_decoder *dec, int rows) {
    if (rows <= dec->rows) return 0;
    const hv_config *c = dec->c;
    long h = c->dec_hidden;
    float **bufs[] = {&dec->x, &dec->norm, &dec->q, &dec->kv, &dec->ctx, &dec->tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        free(*bufs[i]);
        *bufs[i] = alloc_floats(rows * h);
    }
    free(dec->ff);
    dec->ff = alloc_floats((long)rows * c->dec_inner);
    dec->rows = rows;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (!*bufs[i]) dec->rows = 0;
    if (!dec->ff) dec->rows = 0;
    return dec->rows ? 0 : -1;
}

/* ------------------------------------------------------------ attention */

typedef struct attn_job {
    hv_decoder *dec;
    const int *seqs;
    int n_tok;
    int layer;
    int cross;
    long cols; /* scores per (row, head) */
    int rows;  /* of this pass */
} attn_job;

/* One (row, head): scaled dot-product attention over the sequence's cached
 * positions (causal: up to the row's own) or over the valid encoder frames. */
/* The pool for an attention job of rows x heads rows over n_keys keys,
 * or NULL (the caller alone) where the job is too small to pay for waking
 * a worker (HV_POOL_MIN_FLOPS, as hv_linear), as for a small checkpoint. */
static hv_pool *attn_pool(hv_pool *pool, int rows, int heads, int n_keys, int dh) {
    return 4.0 * rows * heads * n_keys * dh < HV_POOL_MIN_FLOPS ? NULL : pool;
}

static void attn_task(void *arg, int task, int n_tasks) {
    (void)n_tasks;
    const attn_job *j = arg;
    hv_decoder *dec = j->dec;
    int h = dec->c->dec_hidden, H = dec->c->dec_heads, dh = h / H;
    int r = task / H, hd = task % H;
    const float *q = dec->q + (long)r * h + hd * dh;
    float *out = dec->ctx + (long)r * h + hd * dh;
    float *sc = dec->scores + (long)task * j->cols;
    float scale = 1.0f / sqrtf((float)dh);

    if (j->cross) {
        long off = ((long)j->layer * H + hd) * dec->n_enc * dh;
        int nk = dec->enc_len;
        hv_attn_scores(sc, q, kv_at(dec, dec->cross_k, off), dec->kv_half, dh, nk, dh, scale);
        hv_softmax(sc, nk);
        if (dec->cross_tap && j->layer >= dec->cross_tap_first)
            memcpy(dec->cross_tap +
                       (((long)(j->layer - dec->cross_tap_first) * H + hd) * j->rows + r) * nk,
                   sc, (size_t)nk * sizeof *sc);
        hv_attn_context(out, sc, kv_at(dec, dec->cross_v, off), dec->kv_half, dh, nk, dh, 0);
        return;
    }
    int s = j->seqs[r / j->n_tok];
    int nk = dec->seq_len[s] + r % j->n_tok + 1;
    const int *t = seq_table(dec, s);
    long off = ((long)j->layer * H + hd) * BS * dh;
    for (int b = 0; b * BS < nk; b++) {
        int cnt = nk - b * BS < BS ? nk - b * BS : BS;
        hv_attn_scores(sc + b * BS, q, kv_at(dec, dec->blocks[t[b]].k, off), dec->kv_half, dh, cnt,
                       dh, scale);
    }
    hv_softmax(sc, nk);
    for (int b = 0; b * BS < nk; b++) {
        int cnt = nk - b * BS < BS ? nk - b * BS : BS;
        hv_attn_context(out, sc + b * BS, kv_at(dec, dec->blocks[t[b]].v, off), dec->kv_half, dh,
                        cnt, dh, b > 0);
    }
}

/* Copies rows of src [rows x h] into each row's cache slot of `layer`,
 * head by head. */
static void store_cache(hv_decoder *dec, const attn_job *j, int rows, const float *src,
                        int values) {
    int h = dec->c->dec_hidden, H = dec->c->dec_heads, dh = h / H;
    for (int r = 0; r < rows; r++) {
        int s = j->seqs[r / j->n_tok], p = dec->seq_len[s] + r % j->n_tok;
        hv_kv_block *b = &dec->blocks[seq_table(dec, s)[p / BS]];
        long at = (long)j->layer * BS * h + (long)(p % BS) * dh;
        for (int hd = 0; hd < H; hd++)
            kv_store(dec, values ? b->v : b->k, at + (long)hd * BS * dh,
                     src + (long)r * h + (long)hd * dh, dh);
    }
}

/* -------------------------------------------------------------- forward */

hv_status hv_decoder_forward(hv_decoder *dec, const hv_engine *eng, const int *seqs, int n_seq,
                             const int32_t *tokens, int n_tok, hv_error *e) {
    const hv_config *c = dec->c;
    const hv_decoder_weights *w = dec->w;
    int h = c->dec_hidden, V = c->vocab_size, H = c->dec_heads;
    int rows = n_seq * n_tok;
    if (!dec->cross_k) return hv_err(e, HV_ERR_INVALID_ARG, "decoder: no encoder states");
    if (n_seq < 1 || n_tok < 1 || n_seq > dec->max_seqs)
        return hv_err(e, HV_ERR_INVALID_ARG, "decoder: %d sequences of %d tokens", n_seq, n_tok);
    for (int i = 0; i < n_seq; i++) {
        int s = seqs[i];
        if (s < 0 || s >= dec->max_seqs)
            return hv_err(e, HV_ERR_INVALID_ARG, "decoder: no sequence %d", s);
        for (int k = 0; k < i; k++)
            if (seqs[k] == s) return hv_err(e, HV_ERR_INVALID_ARG, "decoder: sequence %d twice", s);
        if (dec->seq_len[s] + n_tok > c->dec_max_seq)
            return hv_err(e, HV_ERR_LIMIT, "decoder: %d positions exceed max_sequence_length %d",
                          dec->seq_len[s] + n_tok, c->dec_max_seq);
    }
    for (int r = 0; r < rows; r++)
        if (tokens[r] < 0 || tokens[r] >= V)
            return hv_err(e, HV_ERR_INVALID_ARG, "decoder: token id %d out of range",
                          (int)tokens[r]);
    long cols = c->dec_max_seq > dec->n_enc ? c->dec_max_seq : dec->n_enc;
    if (ensure_rows(dec, rows) || grow(&dec->scores, &dec->scores_cap, rows * H * cols))
        return hv_err(e, HV_ERR_NOMEM, "out of memory in the decoder");
    int self_keys = 0; /* the longest self-attention row's keys */
    for (int i = 0; i < n_seq; i++) {
        if (prepare_append(dec, seqs[i], n_tok))
            return hv_err(e, HV_ERR_NOMEM, "out of memory for the decoder cache");
        if (dec->seq_len[seqs[i]] + n_tok > self_keys) self_keys = dec->seq_len[seqs[i]] + n_tok;
    }

    /* token embedding + stored sinusoidal positions, then LayerNorm */
    for (int r = 0; r < rows; r++) {
        int p = dec->seq_len[seqs[r / n_tok]] + r % n_tok;
        const float *pe = w->pos_enc + (long)p * h;
        float *x = dec->x + (long)r * h;
        hv_mat_row_f32(&w->tok_emb, tokens[r], x);
        for (int k = 0; k < h; k++) x[k] += pe[k];
    }
    hv_layernorm(dec->x, dec->x, rows, h, w->emb_ln_w, w->emb_ln_b, HV_LN_EPS);

    /* each branch's output projection adds into the residual stream x */
    const hv_epilogue residual = {.residual = dec->x, .scale = 1.0f};
    for (int l = 0; l < c->dec_layers; l++) {
        const hv_dec_layer *y = &w->layers[l];
        attn_job j = {.dec = dec,
                      .seqs = seqs,
                      .n_tok = n_tok,
                      .layer = l,
                      .cross = 0,
                      .cols = cols,
                      .rows = rows};

        /* causal self-attention; the new keys and values join the cache */
        hv_layernorm(dec->norm, dec->x, rows, h, y->ln1_w, y->ln1_b, HV_LN_EPS);
        const hv_mat *qkv[3] = {&y->sq, &y->sk, &y->sv};
        const float *qkv_b[3] = {y->sq_b, y->sk_b, y->sv_b};
        float *qkv_y[3] = {dec->q, dec->kv, dec->tmp}; /* tmp: free until the output */
        hv_eng_linear_many(eng, rows, dec->norm, 3, qkv, qkv_b, qkv_y);
        store_cache(dec, &j, rows, dec->kv, 0);
        store_cache(dec, &j, rows, dec->tmp, 1);
        hv_pool_run_short(attn_pool(eng->pool, rows, H, self_keys, h / H), rows * H, attn_task, &j);
        hv_eng_linear(eng, dec->tmp, dec->ctx, rows, &y->so, y->so_b, &residual);

        /* cross-attention over the valid encoder frames */
        hv_layernorm(dec->norm, dec->x, rows, h, y->ln2_w, y->ln2_b, HV_LN_EPS);
        hv_eng_linear(eng, dec->q, dec->norm, rows, &y->cq, y->cq_b, NULL);
        j.cross = 1;
        hv_pool_run_short(attn_pool(eng->pool, rows, H, dec->enc_len, h / H), rows * H, attn_task,
                          &j);
        hv_eng_linear(eng, dec->tmp, dec->ctx, rows, &y->co, y->co_b, &residual);

        /* ReLU feed-forward */
        hv_layernorm(dec->norm, dec->x, rows, h, y->ln3_w, y->ln3_b, HV_LN_EPS);
        hv_eng_linear(eng, dec->ff, dec->norm, rows, &y->ff_in, y->ff_in_b, &hv_ep_relu);
        hv_eng_linear(eng, dec->tmp, dec->ff, rows, &y->ff_out, y->ff_out_b, &residual);
    }
    for (int i = 0; i < n_seq; i++) dec->seq_len[seqs[i]] += n_tok;

    /* final norm and classifier for each sequence's last position, as one
     * matrix product; log-softmax (the head's, or ours when the head gives
     * raw logits: every decoding mode scores with log-probs) */
    for (int i = 0; i < n_seq; i++)
        hv_layernorm(dec->norm + (long)i * h, dec->x + ((long)i * n_tok + n_tok - 1) * h, 1, h,
                     w->final_ln_w, w->final_ln_b, HV_LN_EPS);
    hv_eng_linear(eng, dec->logits, dec->norm, n_seq, &w->cls, w->cls_b, NULL);
    if (dec->raw_logits) memcpy(dec->raw_logits, dec->logits, (size_t)n_seq * V * sizeof(float));
    for (int i = 0; i < n_seq; i++) hv_log_softmax(dec->logits + (long)i * V, V);
    return HV_OK;
}
