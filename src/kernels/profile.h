/* The encoder's time by stage (hviske-bench --json's "encoder_profile",
 * docs/PERFORMANCE.md): milliseconds per stage summed over layers and
 * chunks, read from the monotonic clock only where a caller handed the
 * context a profile (hv_context_set_profile, pipeline.h); with none, the
 * stages read no clock at all.
 *
 * Each stage is timed on the calling thread around the work it hands to
 * the pool, so the stages never add up to more than the encoder's time.
 * Inside the attention's per-head job, where products, softmax and the
 * staging of operands alternate on every thread, the job's time is split
 * in proportion to the threads' own time in each of them. */
#ifndef HV_PROFILE_H
#define HV_PROFILE_H

#include <stddef.h>
#include <time.h>

typedef enum hv_stage {
    HV_STAGE_SUB_CONV,       /* subsampling: the 3x3 convolutions */
    HV_STAGE_SUB_LINEAR,     /* subsampling: pointwise convolutions, the projection to d_model */
    HV_STAGE_FF_LINEAR,      /* feed-forward products (SiLU, residual in their epilogues) */
    HV_STAGE_ATTN_LINEAR,    /* query, key, value and output projections */
    HV_STAGE_POS_LINEAR,     /* the positions' projections (linear_pos) */
    HV_STAGE_ATTN_PRODUCTS,  /* per-head products: content scores, position bands, context */
    HV_STAGE_ATTN_SOFTMAX,   /* scores added, scaled, softmax (bf16: probabilities rounded) */
    HV_STAGE_ATTN_STAGING,   /* per-head operands: biases added, transposed or rounded to bf16 */
    HV_STAGE_CONV_POINTWISE, /* convolution module: pointwise products */
    HV_STAGE_CONV_DEPTHWISE, /* convolution module: depthwise conv, BatchNorm, SiLU */
    HV_STAGE_LAYERNORM,      /* every LayerNorm */
    HV_STAGE_ELEMENTWISE,    /* GLU, masks, flattening, the sinusoids */
    HV_STAGE_BF16_CONVERT,   /* activations rounded to bf16 before weight products */
    HV_STAGE_PROJ_LINEAR,    /* the encoder-decoder projection */
    HV_N_STAGES
} hv_stage;

/* The stages' names, as hviske-bench writes them ("<name>_ms"). */
extern const char *const hv_stage_names[HV_N_STAGES];

typedef struct hv_profile {
    double ms[HV_N_STAGES];
    double claimed; /* ms that hv_prof_part gave other stages since the last hv_prof_add */
} hv_profile;

/* The monotonic clock in ms; 0 without a profile (nothing read). */
static inline double hv_prof_now(const hv_profile *p) {
    if (!p) return 0;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Adds the time since *t to stage s, less what hv_prof_part gave other
 * stages meanwhile, and moves *t to now, so that consecutive stages read
 * the clock once between them. */
static inline void hv_prof_add(hv_profile *p, hv_stage s, double *t) {
    if (!p) return;
    double now = hv_prof_now(p);
    p->ms[s] += now - *t - p->claimed;
    p->claimed = 0;
    *t = now;
}

/* From inside another stage's work, on the calling thread (the kernels'
 * staging of activations): ms to stage s, which the enclosing stage's
 * next hv_prof_add leaves out. */
static inline void hv_prof_claim(hv_profile *p, hv_stage s, double ms) {
    if (!p) return;
    p->ms[s] += ms;
    p->claimed += ms;
}

/* hv_prof_claim of the time since t0. */
static inline void hv_prof_part(hv_profile *p, hv_stage s, double t0) {
    if (p) hv_prof_claim(p, s, hv_prof_now(p) - t0);
}

#endif
