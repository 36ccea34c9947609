/* config.json + generation_config.json of a Hviske / Cohere Transcribe
 * checkpoint (see docs/MODEL.md, "config.json keys the engine reads"). */
#ifndef HV_CONFIG_H
#define HV_CONFIG_H

#include <stdbool.h>

#include "util/error.h"

/* The epsilons of the model's LayerNorms and of the BatchNorm folded into
 * the convolution modules: PyTorch's defaults, which the checkpoints were
 * trained with; config.json does not carry them. */
#define HV_LN_EPS 1e-5f
#define HV_BN_EPS 1e-5f

typedef struct hv_config {
    /* top level */
    int vocab_size;
    float max_audio_clip_s;        /* 35 */
    float overlap_chunk_second;    /* 5 */
    int min_energy_window_samples; /* 1600 */
    int sample_rate;               /* 16000 */
    char **languages;              /* supported_languages, owned */
    int n_languages;

    /* preprocessor */
    int n_mels;     /* features, 128 */
    int n_fft;      /* 512 */
    int win_length; /* round(window_size * sample_rate), 400 */
    int hop_length; /* round(window_stride * sample_rate), 160 */
    int pad_to;     /* 16 */
    float dither;   /* 1e-5 */

    /* encoder */
    int feat_in;         /* 128, must equal n_mels */
    int d_model;         /* 1280 */
    int ff_expansion;    /* 4 */
    int enc_layers;      /* 48 */
    int enc_heads;       /* 8 */
    int conv_kernel;     /* 9, odd */
    int sub_channels;    /* 256 */
    int sub_factor;      /* 8 (three stride-2 convolutions) */
    int pos_emb_max_len; /* 5000 */

    /* transf_decoder.config_dict */
    int dec_hidden;  /* 1024 */
    int dec_inner;   /* 4096 */
    int dec_layers;  /* 8 */
    int dec_heads;   /* 8 */
    int dec_max_seq; /* 1024 */

    /* head */
    int head_hidden; /* = dec_hidden */
    int num_classes; /* = vocab_size */
    bool log_softmax;

    /* generation_config.json */
    int pad_token_id;
    int eos_token_id;
    int bos_token_id;
    int decoder_start_token_id;
    int max_new_tokens; /* generation_config max_new_tokens, else 256 */
} hv_config;

/* Reads model_dir/config.json and model_dir/generation_config.json (each
 * at most 16 MiB). Every missing or nonsensical value is an error naming
 * file and key ("config.json: encoder.n_heads: must be positive, got 0");
 * values that are valid but not what hviske computes (model_type, window,
 * hidden_act, ...) give HV_ERR_UNSUPPORTED, the rest HV_ERR_FORMAT. Sizes
 * are bounded (e.g. d_model <= 65536, sample_rate <= 384000,
 * max_audio_clip_s <= 3600) so that products of them fit in an int.
 * pad_to 0 (NeMo's "no padding") is stored as 1; a null max_new_tokens
 * counts as absent. On failure c is left empty (nothing to free). */
hv_status hv_config_load(hv_config *c, const char *model_dir, hv_error *e);

/* Same from JSON text (for tests and fuzzing); names are used in messages.
 * A NULL text is reported as a missing file. */
hv_status hv_config_parse(hv_config *c, const char *config_json, const char *config_name,
                          const char *gen_json, const char *gen_name, hv_error *e);

void hv_config_free(hv_config *c);

/* Index of lang in supported_languages, or -1. */
int hv_config_find_language(const hv_config *c, const char *lang);

/* The language used when none is asked for: "da" when supported_languages
 * lists it (the Hviske fine-tunes are Danish), else its first entry; NULL
 * when it lists none. */
const char *hv_config_default_language(const hv_config *c);

/* The encoder's subsampling (dw_striding): log2(sub_factor) convolutions in
 * a row, each of kernel 3, stride 2 and padding 1 over time frames and mel
 * bins alike. */
int hv_sub_stages(const hv_config *c);
/* Positions out of one such convolution over n in (0 for none). */
int hv_sub_conv_len(int n);
/* Positions out of all of them: of n frames, the encoder's output length;
 * of feat_in mel bins, the width the subsampling's output projection reads. */
int hv_subsampled_len(const hv_config *c, int n);

#endif
