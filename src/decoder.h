/* Transformer decoder (docs/MODEL.md "Decoder") for a batch of sequences that
 * share one utterance: cross-attention keys and values are computed once,
 * and the self-attention cache lives in reference-counted blocks so that
 * beams can share prefixes (docs/DECODING.md). */
#ifndef HV_DECODER_H
#define HV_DECODER_H

#include <stdint.h>

#include "kernels/engine.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/error.h"

#define HV_KV_BLOCK 16 /* positions per cache block */

/* One cache block: keys and values of HV_KV_BLOCK positions, f32 or f16
 * (hv_decoder.kv_half). */
typedef struct hv_kv_block {
    void *k;  /* [layers x heads x HV_KV_BLOCK x h / heads] */
    void *v;  /* [layers x heads x HV_KV_BLOCK x h / heads] */
    int refs; /* sequences using it; 0 = free */
} hv_kv_block;

typedef struct hv_decoder {
    const hv_config *c;
    const hv_decoder_weights *w;
    /* per utterance */
    int n_enc, enc_len;
    /* Keys and values are stored in f16 (kv_half) when the decoder's key
     * and value matrices (all of them) are q8_0 or q4_0: their results are
     * approximate already,
     * and a step then reads half the cache bytes; f32 otherwise, so that
     * f32, f16 and bf16 weights keep the reference's arithmetic. */
    int kv_half;
    void *cross_k; /* [layers x heads x n_enc x h / heads] */
    void *cross_v; /* [layers x heads x n_enc x h / heads] */
    int cross_cap; /* encoder rows the cross buffers hold */
    /* self-attention cache */
    hv_kv_block *blocks;
    int n_blocks;
    int max_seqs;       /* sequences (beams) the tables hold */
    int blocks_per_seq; /* ceil(dec_max_seq / HV_KV_BLOCK) */
    int *table;         /* [max_seqs x blocks_per_seq] block ids */
    int *seq_len;       /* [max_seqs] positions in the cache */
    int *scratch_table; /* [max_seqs x blocks_per_seq], for reordering */
    int *scratch_len;   /* [max_seqs] */
    /* activations, grown on demand to `rows` rows */
    int rows;
    float *x, *norm, *q, *kv, *ctx, *tmp; /* [rows x h] ... kv [rows x 2h] */
    float *ff;                            /* [rows x inner] */
    float *scores;                        /* [rows x heads x max(dec_max_seq, n_enc)] */
    long scores_cap;
    float *logits; /* [max_seqs x V] log-probs, one row per sequence */
    /* When not NULL, hv_decoder_forward writes each row's cross-attention
     * weights of the layers from cross_tap_first on there:
     * [layers - cross_tap_first x heads x rows x enc_len] (word times). */
    float *cross_tap;
    int cross_tap_first;
    /* When not NULL, hv_decoder_forward also writes each row's logits
     * before the log-softmax there ([max_seqs x V], owned by whoever sets
     * it): transformers applies repetition_penalty to them in greedy
     * decoding and sampling. */
    float *raw_logits;
} hv_decoder;

hv_status hv_decoder_init(hv_decoder *dec, const hv_config *c, const hv_decoder_weights *w,
                          hv_error *e);
void hv_decoder_free(hv_decoder *dec);

/* Starts an utterance for up to max_seqs sequences: computes the
 * cross-attention keys and values of enc [n_enc x h] (rows >= enc_len are
 * masked) and empties every sequence. */
hv_status hv_decoder_begin(hv_decoder *dec, const hv_engine *eng, const float *enc, int n_enc,
                           int enc_len, int max_seqs, hv_error *e);

/* Appends n_tok tokens to each of the n_seq sequences seqs[] (tokens is
 * [n_seq x n_tok]; a prefill is n_seq 1, n_tok > 1; a beam step is n_tok 1)
 * and writes the next-token log-probs after each sequence's last token to
 * dec->logits row i (for seqs[i]). */
hv_status hv_decoder_forward(hv_decoder *dec, const hv_engine *eng, const int *seqs, int n_seq,
                             const int32_t *tokens, int n_tok, hv_error *e);

/* Makes sequence i (i < n) a copy of the old sequence parents[i], sharing
 * its cache blocks; sequences >= n are emptied. */
hv_status hv_decoder_reorder(hv_decoder *dec, const int *parents, int n, hv_error *e);

#endif
