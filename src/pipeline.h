/* The objects behind the public API, and the transcription pipeline with
 * optional taps on its intermediate tensors (for the parity tools). */
#ifndef HV_PIPELINE_H
#define HV_PIPELINE_H

#include "audio/chunking.h"
#include "audio/frontend.h"
#include "audio/speech_chunks.h"
#include "decoder.h"
#include "hviske.h"
#include "kernels/cpu.h"
#include "kernels/engine.h"
#include "kernels/threads.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "model/weights.h"
#include "util/error.h"

struct hv_model {
    hv_config cfg;
    hv_tokenizer tok;
    hv_safetensors st; /* kept mapped: weights may point into it */
    hv_weights w;
    hv_frontend fe;
    int n_threads;
    hv_compute compute;                 /* HV_COMPUTE_F32 or HV_COMPUTE_BF16 */
    struct hv_onednn *dnn;              /* the bf16 matrix engine, or NULL: our kernels */
    unsigned char on_dnn[HV_N_CLASSES]; /* the shape classes dnn runs (hv_engine_classes) */
    char gemm[96];                      /* hv_model_gemm */
};

struct hv_context {
    const hv_model *model;
    hv_pool *pool;
    hv_engine eng; /* pool, and the model's compute mode and engines */
    hv_decoder dec;
    hv_error err;
    hv_profile *prof; /* the encoder's, NULL unless hv_context_set_profile gave one */
};

/* From now on the encoder adds its stages' times to prof (profile.h;
 * NULL: stops): hviske-bench's profile, not part of the public API. prof
 * stays the caller's and must outlive its use. */
void hv_context_set_profile(hv_context *ctx, hv_profile *prof);

/* Resolves the compute mode want (hv_compute) for m, whose weights are
 * loaded: sets m->compute, m->dnn (the bf16 engine where the CPU has
 * native bf16) and m->gemm, and widens the encoder's matrices of the types
 * hv_compute_widens names. HV_ERR_INVALID_ARG for an unknown mode,
 * HV_ERR_NOMEM. */
hv_status hv_model_compute_init(hv_model *m, hv_compute want, hv_error *e);

/* Whether the encoder's products run on the int8 GEMM: its matrices are
 * q8_0 or q4_0 blocks (not widened for oneDNN). */
int hv_model_encoder_int8(const hv_model *m);

/* What HV_COMPUTE_AUTO resolves to on a CPU (hv_cpu_host, or a row of
 * the CPU matrix): bf16 where hv_cpu_bf16_fast holds (AMX, and AMD's
 * AVX512-BF16: Zen 4, Zen 5; cpu.h has why), f32 elsewhere.
 * hv_model_compute_init also keeps f32 for models whose matrices are
 * mostly f32, and where oneDNN does not multiply bf16. */
hv_compute hv_compute_auto(hv_cpu cpu);

/* Whether the encoder's weight matrices of type `type` are widened to bf16
 * at load (hv_weights_widen_encoder), for a model whose resolved compute
 * mode is `compute` (f32 or bf16), onednn_bf16 whether its products run on
 * the oneDNN bf16 engine, and cpu the CPU's features: so for q8_0 and q4_0
 * in bf16 compute on oneDNN with AMX, whose bf16 tiles outrun every int8
 * kernel here and whose int8 matmul (one scale per output column) cannot
 * take per-32 blocks. Without AMX the blocks' own int8 kernels (VNNI on
 * AVX-512) are faster than oneDNN's bf16 (docs/KERNELS.md), so they keep
 * their blocks, in every mode. A pure function of its arguments (the tests
 * call it with every combination). */
int hv_compute_widens(hv_compute compute, int onednn_bf16, unsigned cpu, hv_weight_type type);

/* A segment as the result keeps it: its tokens by offset, since the
 * token arrays grow (and move) while chunks are added. */
typedef struct hv_result_seg {
    int64_t start_sample, end_sample;
    char *text; /* owned */
    int token_offset, n_tokens;
    double score;
    int word_offset, n_words; /* into hv_result.words */
    float temperature;        /* hv_segment's, of the decoding kept */
    double avg_logprob, compression_ratio, no_speech_prob;
    int speaker; /* hv_segment's: -1 none */
    int voice;   /* with diarize: its signature's row in the stitch's
                    seg_voice (rule 8); -1 none */
} hv_result_seg;

struct hv_result {
    char *text;      /* segments joined */
    int32_t *tokens; /* [n_tokens], all segments, EOS excluded */
    float *logprobs; /* [n_tokens] */
    int n_tokens, cap_tokens;
    double score; /* summed over segments */
    hv_timings timings;
    double duration; /* seconds */
    char language[40];
    int sample_rate;     /* of the segments' sample positions */
    hv_result_seg *segs; /* [n_segs] */
    int n_segs;
    hv_word *words; /* [n_words]; each text owned */
    int n_words, cap_words;
    int stopped; /* hv_result_stopped: ended early, holds what was done */
};

/* Copies of the intermediate tensors of one run, owned by the caller
 * (free with hv_taps_free). */
typedef struct hv_taps {
    float *samples;
    size_t n_samples; /* 16 kHz mono */
    float *features;
    int n_frames, n_valid; /* [n_frames x n_mels] */
    float *enc;
    int n_enc, enc_len; /* [n_enc x dec_hidden] */
    float *logprobs0;   /* [vocab] */
    int32_t prompt[HV_PROMPT_MAX];
    int n_prompt;
    float *attn; /* word times: the cross-attention the alignment used,
                    [attn_layers (the voting ones) x heads x rows x frames] */
    int attn_layers, attn_rows, attn_frames;
} hv_taps;

/* The chunk plan's sizes for p's chunking options on model c. */
hv_chunk_plan_params hv_chunk_params(const hv_config *c, const hv_transcribe_params *p);

/* The windows transcribed for p: with diarize over more than one chunk,
 * plan's chunks (the cores) widened HV_DIAR_OVERLAP_S / 2 into each
 * neighbour (hv_piece_plan_overlap) in place, and *cuts (malloc'ed,
 * [n_chunks + 1]) where their shares meet; else plan as it is and *cuts
 * NULL. On failure (HV_ERR_NOMEM) plan is empty or as it was, and *cuts
 * NULL; plan is the caller's to free either way. */
hv_status hv_diar_windows(const hv_config *c, const hv_transcribe_params *p, hv_piece_plan *plan,
                          size_t **cuts, hv_error *e);

hv_status hv_transcribe_taps(hv_context *ctx, const float *pcm, size_t n_frames, int sample_rate,
                             int channels, const hv_transcribe_params *params, hv_result **out,
                             hv_taps *taps);
void hv_taps_free(hv_taps *t);

#endif
