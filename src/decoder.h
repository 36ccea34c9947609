/* Transformer decoder with a self-attention KV cache and cross-attention
 * keys/values computed once per utterance (MODEL.md "Decoder"). */
#ifndef HV_DECODER_H
#define HV_DECODER_H

#include <stdint.h>

#include "kernels/threads.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/error.h"

typedef struct hv_decoder {
    const hv_config *c;
    const hv_decoder_weights *w;
    int max_rows;        /* dec_max_seq: positions the caches hold */
    /* per utterance */
    int n_enc, enc_len;
    float *cross_k;      /* [layers x n_enc x h] */
    float *cross_v;      /* [layers x n_enc x h] */
    int cross_cap;       /* encoder rows the cross buffers hold */
    /* self-attention cache */
    float *k_cache;      /* [layers x max_rows x h] */
    float *v_cache;      /* [layers x max_rows x h] */
    int n_past;          /* positions already in the cache */
    /* scratch, max_rows rows */
    float *x, *norm, *q, *ctx, *tmp;  /* [max_rows x h] */
    float *ff;           /* [max_rows x inner] */
    float *scores;       /* [heads x max(max_rows, cross_cap)] */
    float *logits;       /* [V] */
} hv_decoder;

hv_status hv_decoder_init(hv_decoder *dec, const hv_config *c,
                          const hv_decoder_weights *w, hv_error *e);
void hv_decoder_free(hv_decoder *dec);

/* Starts an utterance: computes the cross-attention keys and values of
 * enc [n_enc x h] (rows >= enc_len are masked) and empties the cache. */
hv_status hv_decoder_begin(hv_decoder *dec, hv_pool *pool, const float *enc,
                           int n_enc, int enc_len, hv_error *e);

/* Runs n tokens at positions n_past .. n_past+n-1 (a prefill when n > 1)
 * and returns the next-token log-probs of the last one in dec->logits
 * (log-softmax applied as the head says; raw logits otherwise). */
hv_status hv_decoder_forward(hv_decoder *dec, hv_pool *pool,
                             const int32_t *tokens, int n, hv_error *e);

#endif
