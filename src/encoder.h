/* FastConformer encoder: features -> encoder states (docs/MODEL.md "Encoder"). */
#ifndef HV_ENCODER_H
#define HV_ENCODER_H

#include "kernels/profile.h"
#include "kernels/threads.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/error.h"

/* Every layer's relative-position projections (linear_pos of the
 * sinusoids of positions n-1 .. -(n-1)), kept across the chunks of one
 * transcription: they depend on the chunk's length alone, and a row only
 * on the position it stands for, so a chunk of m <= n frames reads rows
 * n-m .. n+m-2 of each layer's block, the same bits as computing them for
 * it (docs/PERFORMANCE.md "Long audio"). Zero-initialise; the owner frees
 * it with hv_pos_cache_free. */
typedef struct hv_pos_cache {
    int n;      /* encoder frames covered; 0 while empty */
    float *p;   /* [enc_layers][2n - 1][d_model] */
    int builds; /* times filled, each enc_layers products of 2n - 1 rows */
} hv_pos_cache;

void hv_pos_cache_free(hv_pos_cache *pc); /* empties it; NULL is allowed */

/* feat: [n_frames x feat_in] time-major, rows >= n_valid ignored.
 * cache: NULL (the projections computed per layer for this chunk), or a
 * cache that is used when it covers the chunk's encoder frames and
 * otherwise filled for max(them, n_hint) (the call's longest chunk, so
 * that it is filled once; without memory for it, per layer as without a
 * cache). The result does not depend on the cache. prof: NULL, or where
 * the stages' times are added (profile.h).
 * On success *out is malloc'ed [*n_enc x dec_hidden] (after the
 * encoder-decoder projection), *enc_len its valid rows. */
hv_status hv_encoder_forward(const hv_config *c, const hv_encoder_weights *w, hv_pool *pool,
                             const float *feat, int n_frames, int n_valid, hv_pos_cache *cache,
                             int n_hint, hv_profile *prof, float **out, int *n_enc, int *enc_len,
                             hv_error *e);

/* The relative-position self-attention of one layer after its q, k, v
 * projections ([n x d], the first len rows valid), over H heads of d / H
 * spread over the pool: ctx [n x d] (rows >= len zero), from p, the
 * linear_pos rows of positions n-1 .. -(n-1) ([(2n-1) x d]), and the
 * biases u, vb [d]; att is scratch of hv_attention_scratch floats. In the
 * pool's bf16 compute (hv_pool_set_compute) the per-head products take
 * bf16-rounded operands and probabilities and sum in f32, on the pool's
 * oneDNN engine when it has one (docs/KERNELS.md; an f32 engine, which
 * only the tests give a bf16 pool, multiplies the rounded values as
 * floats in the engine's padded shapes). prof: NULL, or where the time
 * of its products, softmax and staging is added. */
void hv_attention_heads(hv_pool *pool, int n, int len, int d, int H, const float *q, const float *k,
                        const float *v, const float *p, const float *u, const float *vb, float *att,
                        float *ctx, hv_profile *prof);
long hv_attention_scratch(int n, int d, int H, int bf16);

/* Floating-point operations (2 per multiply-add) of the encoder's matrix
 * products for n_frames feature frames of which n_valid are real: the
 * subsampling convolutions, every Linear, the attention scores and context,
 * the depthwise convolution and the projection; not the element-wise work
 * (norms, activations, softmax), a few percent. hviske-bench divides it by
 * the encoder's time. */
double hv_encoder_flops(const hv_config *c, const hv_encoder_weights *w, int n_frames, int n_valid);

/* Of those, the relative-position projections' for n encoder frames (what
 * a chunk saves when they come from a cache, and what filling one for n
 * frames costs). */
double hv_encoder_pos_flops(const hv_config *c, int n);

#endif
