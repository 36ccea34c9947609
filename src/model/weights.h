/* The model's weights in compute form, named and shaped as docs/MODEL.md says.
 * d = encoder d_model, C = subsampling channels, K = conv kernel,
 * h = decoder hidden, V = vocab, H = heads, F' = features after
 * subsampling. Linear weights are hv_mat [out x in]. */
#ifndef HV_WEIGHTS_H
#define HV_WEIGHTS_H

#include "kernels/matmul.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "util/error.h"

#define HV_MAX_SUB_STAGES 8

typedef struct hv_enc_layer {
    /* half-step feed-forward 1 */
    float *ff1_norm_w, *ff1_norm_b; /* [d] */
    hv_mat ff1_up;
    float *ff1_up_b; /* [4d x d], [4d] */
    hv_mat ff1_down;
    float *ff1_down_b; /* [d x 4d], [d] */
    /* relative-position self-attention */
    float *att_norm_w, *att_norm_b; /* [d] */
    hv_mat wq, wk, wv, wo;          /* [d x d] */
    float *bq, *bk, *bv, *bo;       /* [d] */
    hv_mat wpos;                    /* [d x d], no bias */
    float *pos_bias_u, *pos_bias_v; /* [H x d/H] */
    /* convolution module */
    float *conv_norm_w, *conv_norm_b; /* [d] */
    hv_mat pw1;
    float *pw1_b;       /* [2d x d], [2d] */
    float *dw_w, *dw_b; /* [d x K], [d]: BatchNorm folded in */
    hv_mat pw2;
    float *pw2_b; /* [d x d], [d] */
    /* half-step feed-forward 2 */
    float *ff2_norm_w, *ff2_norm_b;
    hv_mat ff2_up;
    float *ff2_up_b;
    hv_mat ff2_down;
    float *ff2_down_b;
    /* final layer norm */
    float *out_norm_w, *out_norm_b; /* [d] */
} hv_enc_layer;

typedef struct hv_encoder_weights {
    int n_stages;                   /* log2(subsampling_factor) */
    float *conv0_w, *conv0_b;       /* [C x 3 x 3], [C]: 1 -> C channels */
    float *dw_w[HV_MAX_SUB_STAGES]; /* [C x 3 x 3] depthwise, stage 1.. */
    float *dw_b[HV_MAX_SUB_STAGES]; /* [C] */
    hv_mat pw[HV_MAX_SUB_STAGES];   /* [C x C] pointwise */
    float *pw_b[HV_MAX_SUB_STAGES]; /* [C] */
    hv_mat pre_out;
    float *pre_out_b;     /* [d x C*F'], [d] */
    hv_enc_layer *layers; /* [n_layers] */
    hv_mat proj;
    float *proj_b; /* [h x d], [h]; data NULL if d == h */
} hv_encoder_weights;

typedef struct hv_dec_layer {
    float *ln1_w, *ln1_b;             /* [h] */
    hv_mat sq, sk, sv, so;            /* self-attention [h x h] */
    float *sq_b, *sk_b, *sv_b, *so_b; /* [h] */
    float *ln2_w, *ln2_b;
    hv_mat cq, ck, cv, co; /* cross-attention [h x h] */
    float *cq_b, *ck_b, *cv_b, *co_b;
    float *ln3_w, *ln3_b;
    hv_mat ff_in;
    float *ff_in_b; /* [inner x h], [inner] */
    hv_mat ff_out;
    float *ff_out_b; /* [h x inner], [h] */
} hv_dec_layer;

typedef struct hv_decoder_weights {
    hv_mat tok_emb;                 /* [V x h] */
    float *pos_enc;                 /* [max_seq x h], already scaled */
    float *emb_ln_w, *emb_ln_b;     /* [h] */
    hv_dec_layer *layers;           /* [dec_layers] */
    float *final_ln_w, *final_ln_b; /* [h] */
    hv_mat cls;
    float *cls_b; /* [V x h] (tok_emb when tied), [V] */
} hv_decoder_weights;

/* A weight matrix by its checkpoint name (hviske-quantize writes these). */
typedef struct hv_named_mat {
    const char *name; /* the tensor's, owned by the hv_safetensors */
    hv_mat m;
} hv_named_mat;

typedef struct hv_weights {
    float *fe_window; /* [win_length] or NULL */
    float *fe_fb;     /* [n_mels x n_fft/2+1] or NULL */
    hv_encoder_weights enc;
    hv_decoder_weights dec;
    size_t mat_bytes;     /* bytes of all weight matrices */
    size_t dec_mat_bytes; /* of which read per decoder step */
    size_t widened_bytes; /* of which bf16 widened from q8_0/q4_0 at load */
    hv_named_mat *mats;   /* every weight matrix, in load order */
    int n_mats, cap_mats;
    void **allocs; /* every buffer above, for freeing */
    int n_allocs, cap_allocs;
} hv_weights;

/* Checks every tensor docs/MODEL.md needs against the config (listing all
 * missing or misshapen ones in one error). Weight matrices take `type`
 * (HV_WEIGHTS_AUTO: the checkpoint's own, pre-quantized blocks included),
 * and are read in place from the mapping when their stored type is the
 * compute type (quantized blocks at an odd offset are copied), so st must
 * stay open while w is used; everything else is converted to f32. */
hv_status hv_weights_load(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                          hv_weight_type type, hv_error *e);
void hv_weights_free(hv_weights *w);

/* For inference: copies the decoder step's bf16 matrices of rows % 64 ==
 * 0 and an even cols (self- and cross-attention projections, the
 * feed-forward, the classifier) into the r64 layout, which the GEMV reads
 * at the memory's rate (docs/KERNELS.md), and releases the mapped
 * checkpoint's pages they were read from, or frees the row-major copies
 * they were converted into (one not shared with the token embedding), the
 * named list then naming the r64 matrices. hviske-quantize, which reads
 * the named list, does not call this. The copies run over n_threads
 * threads (hv_pool_new's count), started only when there is a matrix to
 * copy (a q8_0 or f32 decoder has none). HV_ERR_NOMEM when out of
 * memory. */
hv_status hv_weights_decoder_r64(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                                 int n_threads, hv_error *e);

/* For bf16 compute on oneDNN (hv_compute_widens): widens every encoder
 * weight matrix whose type is in types (bit 1u << type; q8_0 and q4_0 are
 * the types it can widen, others are left as they are) to row-major bf16
 * (hv_mat_widen_bf16), over n_threads threads (started only when a matrix
 * is to be widened), freeing the blocks' copy made at load or releasing
 * the mapped pages they were read from; the named list then names the
 * bf16 matrices. mat_bytes counts the bf16 bytes instead of the blocks',
 * and widened_bytes the bf16 bytes made. The decoder's matrices, the
 * cross-attention's keys and values included, keep their type.
 * HV_ERR_NOMEM when out of memory (the matrices widened so far stay
 * widened). */
hv_status hv_weights_widen_encoder(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                                   unsigned types, int n_threads, hv_error *e);

#endif
