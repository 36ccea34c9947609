/* FastConformer encoder: features -> encoder states (docs/MODEL.md "Encoder"). */
#ifndef HV_ENCODER_H
#define HV_ENCODER_H

#include "kernels/threads.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/error.h"

/* feat: [n_frames x feat_in] time-major, rows >= n_valid ignored.
 * On success *out is malloc'ed [*n_enc x dec_hidden] (after the
 * encoder-decoder projection), *enc_len its valid rows. */
hv_status hv_encoder_forward(const hv_config *c, const hv_encoder_weights *w, hv_pool *pool,
                             const float *feat, int n_frames, int n_valid, float **out, int *n_enc,
                             int *enc_len, hv_error *e);

/* Floating-point operations (2 per multiply-add) of the encoder's matrix
 * products for n_frames feature frames of which n_valid are real: the
 * subsampling convolutions, every Linear, the attention scores and context,
 * the depthwise convolution and the projection; not the element-wise work
 * (norms, activations, softmax), a few percent. hviske-bench divides it by
 * the encoder's time. */
double hv_encoder_flops(const hv_config *c, const hv_encoder_weights *w, int n_frames, int n_valid);

#endif
