/* FastConformer encoder: features -> encoder states (docs/MODEL.md "Encoder"). */
#ifndef HV_ENCODER_H
#define HV_ENCODER_H

#include "kernels/engine.h"
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
    float *p;   /* [enc_layers][hv_attention_pos_floats(n, d_model, heads, bf16)]: each
                 * layer's rows [2n - 1][d_model] in f32, or in the heads' bf16 layout */
    int bf16;   /* the layout (hv_att_pos) */
    int builds; /* times filled, each enc_layers products of 2n - 1 rows */
} hv_pos_cache;

void hv_pos_cache_free(hv_pos_cache *pc); /* empties it; NULL is allowed */

/* feat: [n_frames x feat_in] time-major, rows >= n_valid ignored.
 * cache: NULL (the projections computed per layer for this chunk), or a
 * cache that is used when it covers the chunk's encoder frames and
 * otherwise filled for max(them, n_hint) (the call's longest chunk, so
 * that it is filled once; without memory for it, per layer as without a
 * cache). The result does not depend on the cache. The products run as
 * eng chooses (engine.h); with eng->prof, the stages' times are added
 * there (profile.h).
 * On success *out is malloc'ed [*n_enc x dec_hidden] (after the
 * encoder-decoder projection), *enc_len its valid rows. */
hv_status hv_encoder_forward(const hv_config *c, const hv_encoder_weights *w, const hv_engine *eng,
                             const float *feat, int n_frames, int n_valid, hv_pos_cache *cache,
                             int n_hint, float **out, int *n_enc, int *enc_len, hv_error *e);

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
