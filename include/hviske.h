/*
 * hviske: speech-to-text for Hviske / Cohere Transcribe models, in C11.
 *
 * The public API. Everything not declared here is private.
 *
 * Typical use:
 *
 *     char err[1024];
 *     hv_model_params mp = hv_model_default_params();
 *     hv_model *model;
 *     if (hv_model_load("path/to/checkpoint", &mp, &model, err, sizeof err))
 *         { fprintf(stderr, "%s\n", err); exit(1); }
 *     hv_context *ctx;                             // 0: model's thread count
 *     if (hv_context_new(model, 0, &ctx, err, sizeof err)) { ... }
 *     hv_transcribe_params tp = hv_transcribe_default_params();
 *     tp.language = "da";                          // or by name, from text:
 *     hv_params_set(&tp, "num_beams", "4", err, sizeof err);
 *     hv_vad *vad;                                 // optional: speech only
 *     if (hv_vad_load("models/silero-vad", &vad, err, sizeof err) == HV_OK)
 *         tp.vad = vad;                            // chunking AUTO = VAD
 *     hv_result *res;
 *     if (hv_transcribe(ctx, pcm, n_frames, 44100, 2, &tp, &res))
 *         fprintf(stderr, "%s\n", hv_context_error(ctx));
 *     else
 *         puts(hv_result_text(res));
 *     hv_result_free(res);
 *     hv_context_free(ctx);
 *     hv_vad_free(vad);
 *     hv_model_free(model);
 *
 * Threading: a model is read-only once loaded. Each thread that transcribes
 * uses its own context; any number of contexts may share one model and run
 * at the same time.
 */
#ifndef HVISKE_H
#define HVISKE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HV_VERSION        "0.1.0"
/* The same as one number, MAJOR * 1000000 + MINOR * 1000 + PATCH, for
 * comparisons: `#if HV_VERSION_NUMBER >= 1000` (0.1.0 and later). */
#define HV_VERSION_NUMBER 1000

/* Marks what the shared library exports. The library is compiled with
 * hidden visibility, so its internal functions stay private and only the
 * declarations below, which carry HV_API, are exported. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define HV_API __attribute__((visibility("default")))
#else
#define HV_API
#endif

/* The most worker threads of a model or a context (n_threads). */
#define HV_MAX_THREADS 256

/* The most beams hv_transcribe_params.num_beams may ask for, and the
 * library's work budget (hv_work_check). */
#define HV_MAX_BEAMS 64

/* The longest temperature list (hv_transcribe_params.temperatures):
 * whisper's six steps, 0, 0.2, ..., 1. */
#define HV_MAX_TEMPERATURES 6

/* The sample rates hviske takes, for files and for samples in memory: no
 * speech recording has fewer than 1000 samples a second (telephone speech
 * is 8000), and a lower rate would be upsampled to the model's 16000 Hz by
 * 16 times and more, so a small file would ask for gigabytes. Outside this
 * range reading is HV_ERR_FORMAT (a file) and hv_transcribe
 * HV_ERR_INVALID_ARG (a buffer), the message naming the rate. */
#define HV_MIN_SAMPLE_RATE 1000
#define HV_MAX_SAMPLE_RATE 768000

/* The default of hv_transcribe_params.max_audio_bytes: 2 GiB of samples at
 * the model's rate, 9.3 hours at 16 kHz. */
#define HV_DEFAULT_MAX_AUDIO_BYTES ((size_t)2 << 30)

/* Status codes. 0 is success; every failure comes with a message. */
typedef enum hv_status {
    HV_OK = 0,
    HV_ERR_IO = 1,          /* a file could not be opened or read */
    HV_ERR_FORMAT = 2,      /* a file or buffer is malformed */
    HV_ERR_INVALID_ARG = 3, /* a parameter is out of range */
    HV_ERR_NOMEM = 4,       /* an allocation failed */
    HV_ERR_UNSUPPORTED = 5, /* valid, but not something hviske can run */
    HV_ERR_LIMIT = 6,       /* input exceeds what the model allows */
    HV_ERR_CANCELLED = 7    /* hv_transcribe_params.abort_callback stopped it
                               (without a segment_callback) */
} hv_status;

/* The version of the library loaded, HV_VERSION_NUMBER and HV_VERSION as
 * it was built: a program built against one hviske.h and run with another
 * libhviske can tell (hv_version() < HV_VERSION_NUMBER: an older one). */
HV_API int hv_version(void);
HV_API const char *hv_version_string(void);

/* Frees a plain buffer the library handed out: samples (hv_audio_read*),
 * probabilities (hv_vad_probs), regions (hv_vad_regions), hv_utf8_clean's
 * copy. NULL is allowed. Objects have their own _free (hv_model_free,
 * hv_context_free, hv_vad_free, hv_result_free, hv_cues_free), next to
 * their _new or _load. */
HV_API void hv_free(void *ptr);

/* A short English name of a status ("format error", ...). Static string. */
HV_API const char *hv_status_name(hv_status status);

/* ---------------------------------------------------------------- model */

typedef struct hv_model hv_model;

/* The type the weight matrices are computed in. */
typedef enum hv_weight_type {
    HV_WEIGHTS_AUTO = 0, /* the checkpoint's own type (f32, f16, bf16, or
                            q8_0/q4_0 blocks written by hv_quantize), read
                            in place from the file without a copy */
    HV_WEIGHTS_F32 = 1,
    HV_WEIGHTS_F16 = 2,
    HV_WEIGHTS_BF16 = 3,
    HV_WEIGHTS_Q8_0 = 4, /* 8-bit blocks of 32 with one scale; matrices
                            whose width is not a multiple of 32 stay f32 */
    HV_WEIGHTS_Q4_0 = 5  /* 4-bit blocks of 32 with one scale (4.5 bits per
                            weight), every matrix; same width rule */
} hv_weight_type;

/* Parses "auto", "f32", "f16", "bf16", "q8_0", "q4_0": HV_OK, or
 * HV_ERR_INVALID_ARG for another name (*out left alone). */
HV_API hv_status hv_weight_type_parse(const char *name, hv_weight_type *out);

/* How the products of activations with weight matrices are computed
 * (docs/KERNELS.md, "Matrix engines and compute modes"). */
typedef enum hv_compute {
    HV_COMPUTE_AUTO = 0, /* bf16 where the CPU multiplies bf16 natively
                            (AVX512-BF16 or AMX, through oneDNN) and most
                            of the weight bytes are in types of 16 bits or
                            fewer; f32 everywhere else */
    HV_COMPUTE_F32 = 1,  /* activations in f32 */
    HV_COMPUTE_BF16 = 2  /* activations rounded to bf16 (nearest even)
                            before each product with f32, f16 or bf16
                            weights, sums in f32; on a CPU without native
                            bf16, emulated by our own kernels (same
                            rounding, slower than f32 there). q8_0 and
                            q4_0 products are the same in every mode */
} hv_compute;

/* HV_COMPUTE_AUTO in hv_model_params takes the environment variable
 * HVISKE_COMPUTE ("auto", "f32" or "bf16") when it is set and not empty;
 * another value fails the load with HV_ERR_INVALID_ARG. */

/* Parses "auto", "f32", "bf16": HV_OK, or HV_ERR_INVALID_ARG. */
HV_API hv_status hv_compute_parse(const char *name, hv_compute *out);

/* "auto", "f32" or "bf16"; "?" for a value outside the enum. */
HV_API const char *hv_compute_name(hv_compute compute);

typedef struct hv_model_params {
    size_t size;                /* sizeof(hv_model_params), as hv_model_default_params sets it: the
                    library refuses another (a program built against
                    another hviske.h), so the struct can grow */
    int n_threads;              /* default worker threads for contexts;
                                    0 = all cores */
    hv_weight_type weight_type; /* default HV_WEIGHTS_AUTO */
    hv_compute compute;         /* default HV_COMPUTE_AUTO */
} hv_model_params;

HV_API hv_model_params hv_model_default_params(void);

/*
 * Loads a checkpoint directory (config.json, generation_config.json,
 * tokenizer.model, model.safetensors or a sharded index). On failure returns
 * a non-zero status, sets *out to NULL and writes a message naming the file
 * and the problem into errbuf (always NUL-terminated when errbuf_size > 0).
 * The caller owns the model and frees it with hv_model_free.
 */
HV_API hv_status hv_model_load(const char *model_dir, const hv_model_params *params, hv_model **out,
                               char *errbuf, size_t errbuf_size);

HV_API void hv_model_free(hv_model *model); /* NULL is allowed */

/* The compute mode the model's contexts run in: HV_COMPUTE_F32 or
 * HV_COMPUTE_BF16 (HV_COMPUTE_AUTO resolved at load). */
HV_API hv_compute hv_model_compute(const hv_model *model);

/*
 * Writes a pre-quantized checkpoint (the hviske-quantize tool,
 * docs/QUANTIZE.md): the checkpoint in_dir (single file or sharded) loaded
 * with its matrices in `type` (any but HV_WEIGHTS_AUTO; q8_0 and q4_0 are
 * stored as block bytes), written as out_dir/model.safetensors together
 * with copies of config.json, generation_config.json (when present) and
 * tokenizer.model, each file through a temporary file and a rename.
 * out_dir is created when absent; an existing one must be empty unless
 * overwrite is non-zero, and may not be in_dir. Loading out_dir with the
 * same weight type gives the same weights as loading in_dir with it, read
 * in place from the mapped file without conversion. Errors as for
 * hv_model_load.
 */
HV_API hv_status hv_quantize(const char *in_dir, const char *out_dir, hv_weight_type type,
                             int overwrite, char *errbuf, size_t errbuf_size);

/* Model facts, for display. Strings are owned by the model. */
/* The weight matrices' bytes as the model computes with them: in bf16
 * compute on a CPU that multiplies bf16 natively, the encoder's q8_0 and
 * q4_0 matrices are widened to bf16 at load (docs/QUANTIZE.md) and count
 * as bf16. */
HV_API size_t hv_model_weight_bytes(const hv_model *model);
HV_API int hv_model_sample_rate(const hv_model *model);
HV_API int hv_model_n_languages(const hv_model *model);
HV_API const char *hv_model_language(const hv_model *model, int i);
/* The language a transcription uses when its params name none: "da" when
 * the model lists it, else the model's first language; NULL when the
 * model lists none. Owned by the model. */
HV_API const char *hv_model_default_language(const hv_model *model);
/* 1 when the model's tokenizer has the pieces params.diarize asks for
 * (<|timestamp|>, <|diarize|>, <|spltoken0|>, <|t:0.0|>: a
 * diarize-and-timestamp model, docs/DIARIZE.md), else 0. */
HV_API int hv_model_can_diarize(const hv_model *model);
/* The bytes token `id` adds to a transcript: a normal piece's text with
 * its word-start marker U+2581 as a space, a byte piece's one byte,
 * nothing for pieces that print nothing (control, user-defined, unknown,
 * unused). Writes at most size bytes to buf (not NUL-terminated) and
 * returns how many it adds (which may be more than size), or -1 for an id
 * outside the vocabulary. The bytes of one token may be part of a UTF-8
 * character (byte pieces). */
HV_API int hv_model_token_bytes(const hv_model *model, int32_t id, char *buf, int size);

/* -------------------------------------------------------------- context */

typedef struct hv_context hv_context;

/*
 * Creates a context: the per-thread run state (worker threads, scratch
 * memory) in *out. n_threads 0 takes the model's default, else 1 to
 * HV_MAX_THREADS. On failure returns a non-zero status (HV_ERR_NOMEM when
 * memory or threads ran out, HV_ERR_INVALID_ARG), sets *out to NULL and
 * writes the message into errbuf, as the loads do. The model must outlive
 * the context. Free with hv_context_free.
 */
HV_API hv_status hv_context_new(const hv_model *model, int n_threads, hv_context **out,
                                char *errbuf, size_t errbuf_size);
HV_API void hv_context_free(hv_context *ctx); /* NULL is allowed */

/* The message of the last failed call on this context ("" if none).
 * Owned by the context; valid until the next call on it. */
HV_API const char *hv_context_error(const hv_context *ctx);

/* ------------------------------------------------------ speech detection */

/* A speech detector: Silero VAD v5 (docs/VAD.md), loaded from a directory
 * with config.json and model.safetensors (models/silero-vad). Read-only
 * once loaded: any number of threads and contexts may share one. */
typedef struct hv_vad hv_vad;

/* Loads a detector. On failure returns a non-zero status, sets *out to NULL
 * and writes a message naming the file and the problem into errbuf. */
HV_API hv_status hv_vad_load(const char *dir, hv_vad **out, char *errbuf, size_t errbuf_size);
HV_API void hv_vad_free(hv_vad *vad); /* NULL is allowed */

/* The detector's rate (16000) and window (512 samples = 32 ms at it): the
 * i-th probability is that of samples [i * window, (i + 1) * window) of
 * the input converted to that rate. */
HV_API int hv_vad_sample_rate(const hv_vad *vad);
HV_API int hv_vad_window_samples(const hv_vad *vad);

/* Where a speech region begins and ends (docs/VAD.md, "Onsets" and
 * "Edges"). */
typedef enum hv_vad_edges {
    HV_VAD_EDGES_SIGNAL = 0, /* the default: Silero run over the audio
                                forwards and backwards, its state reset
                                after each window of digital silence, each
                                window's greater probability taken; its
                                regions then moved out, each start back
                                and each end forward, to where the signal
                                itself rises out of, or falls back into,
                                the pause around it (at most 1.5 s, never
                                into the neighbouring region) */
    HV_VAD_EDGES_SILERO = 1  /* Silero's regions as get_speech_timestamps
                                gives them (one pass, forwards) */
} hv_vad_edges;

/* How probabilities become speech regions: Silero's get_speech_timestamps
 * (docs/VAD.md), then the edges rule. */
typedef struct hv_vad_params {
    size_t size;         /* sizeof(hv_vad_params), as hv_vad_default_params sets it: the
                    library refuses another (a program built against
                    another hviske.h), so the struct can grow */
    float threshold;     /* a window with probability >= threshold is speech
                            (default 0.5); in [0, 1] */
    float neg_threshold; /* in speech, a window below it is silence; < 0
                            (default -1): max(threshold - 0.15, 0.01) */
    int min_speech_ms;   /* shorter regions are dropped (default 250) */
    int min_silence_ms;  /* silence that ends a region (default 100) */
    int speech_pad_ms;   /* added on each side of a region (default 30) */
    float max_speech_s;  /* longer regions are cut, at their longest silence
                            of over 98 ms if any; 0 = no limit (default) */
    int edges;           /* an hv_vad_edges (default HV_VAD_EDGES_SIGNAL) */
} hv_vad_params;

HV_API hv_vad_params hv_vad_default_params(void);

/* A region of speech on the input's timeline: seconds, and samples at the
 * detector's rate (end exclusive). */
typedef struct hv_speech_region {
    double start, end;
    int64_t start_sample, end_sample;
} hv_speech_region;

/*
 * Speech probabilities of interleaved float PCM (any rate and channel
 * count: averaged and resampled to the detector's rate as hv_transcribe
 * does), one per window; the last window is zero-padded. The context's
 * threads do the work; errors go to hv_context_error(ctx). On success the
 * caller frees *probs with hv_free (non-NULL even when *n_probs
 * is 0).
 */
HV_API hv_status hv_vad_probs(hv_context *ctx, const hv_vad *vad, const float *pcm, size_t n_frames,
                              int sample_rate, int channels, float **probs, size_t *n_probs);

/* The speech regions of the same input, in time order; params NULL for the
 * defaults. The caller frees *regions with hv_free (non-NULL
 * even when *n_regions is 0). */
HV_API hv_status hv_vad_regions(hv_context *ctx, const hv_vad *vad, const float *pcm,
                                size_t n_frames, int sample_rate, int channels,
                                const hv_vad_params *params, hv_speech_region **regions,
                                size_t *n_regions);

/* The detector's reading of one input: its probabilities and regions with
 * one hv_vad_params, for a transcription of the same input to take
 * (hv_transcribe_params.speech) instead of running the detector again, so
 * a caller who needs the regions first (faster-whisper's
 * duration_after_vad) pays for the detector once. */
typedef struct hv_speech hv_speech;

/* Reads pcm as hv_vad_regions does (params NULL for the defaults); the
 * caller frees *out with hv_speech_free. */
HV_API hv_status hv_vad_speech(hv_context *ctx, const hv_vad *vad, const float *pcm,
                               size_t n_frames, int sample_rate, int channels,
                               const hv_vad_params *params, hv_speech **out);
/* Its regions, in time order, as hv_vad_regions gives them (owned by the
 * reading); returns their count. */
HV_API size_t hv_speech_regions(const hv_speech *speech, const hv_speech_region **regions);
HV_API void hv_speech_free(hv_speech *speech); /* NULL is allowed */

/* ---------------------------------------------------------- transcribe */

/* How audio is cut into the chunks the model takes (docs/CLI.md,
 * "Chunking"). */
typedef enum hv_chunking {
    HV_CHUNKING_AUTO = 0,   /* with a speech detector (params.vad): as VAD;
                               without: up to max_audio_clip_s -
                               overlap_chunk_second (30 s) in one piece,
                               longer as ENERGY */
    HV_CHUNKING_ENERGY = 1, /* chunks of at most max_audio_clip_s, each cut at
                               the quietest window of the last
                               overlap_chunk_second seconds */
    HV_CHUNKING_FIXED = 2,  /* every chunk_seconds */
    HV_CHUNKING_NONE = 3,   /* one piece; an error when too long for the
                               model */
    HV_CHUNKING_VAD = 4     /* only speech (params.vad finds it) is
                               transcribed: its regions, grouped into chunks
                               of at most max_audio_clip_s seconds cut in the
                               longest pauses, the pauses inside a chunk left
                               out; times stay on the input's timeline */
} hv_chunking;

/* Parses "auto", "energy", "fixed", "none", "vad" (the chunking row's
 * names): HV_OK, or HV_ERR_INVALID_ARG. */
HV_API hv_status hv_chunking_parse(const char *name, hv_chunking *out);

struct hv_segment; /* a segment of a result (below) */

typedef struct hv_transcribe_params {
    size_t size; /* sizeof(hv_transcribe_params), as hv_transcribe_default_params sets it: the
                    library refuses another (a program built against
                    another hviske.h), so the struct can grow */
    const char *language; /* a code from the model's supported_languages;
                             NULL = hv_model_default_language() */
    int punctuation;      /* 1: <|pnc|> (default), 0: <|nopnc|> */
    int max_new_tokens;   /* 0 = model default (256, capped by the
                             decoder's max_sequence_length) */
    float dither;         /* < 0: use the model's config value (default);
                             0: off; > 0: this amount */
    uint64_t dither_seed; /* added to the dither noise's seed: each chunk
                             gets torch.randn(n) of a PyTorch CPU generator
                             seeded with n + dither_seed, n its number of
                             samples; 0 (default): Hugging Face's rule */

    /* Decoding (docs/DECODING.md). Defaults: greedy. */
    int num_beams;        /* 1: greedy or sampling; > 1: beam search */
    float length_penalty; /* beam search: hypotheses compared by
                             score / max(1, length)^length_penalty; > 0,
                             default 1.0 */
    int do_sample;        /* 1: sample each token (needs num_beams == 1) */
    float temperature;    /* sampling: logits / temperature; >= 0, default 1;
                             0 is greedy */
    int top_k;            /* sampling: keep the k most likely; 0 = all */
    float top_p;          /* sampling: keep the smallest most-likely set whose
                             probability reaches top_p; (0, 1], default 1 */
    uint64_t seed;        /* sampling: same seed + same input = same output */
    int best_of;          /* sampling: draws best_of sequences (seeds seed,
                             seed + 1, ...) and keeps the best by beam
                             search's normalised score; >= 1, default 1 */

    /* Temperature fallback (docs/DECODING.md "Temperature fallback"), as
     * OpenAI's whisper and faster-whisper decode against repetition loops:
     * with n_temperatures > 0, each chunk is decoded at temperatures[0],
     * and again at the next temperature while the result fails a
     * threshold; each attempt is one of the modes above. NULL and 0
     * (default): one decoding, as num_beams, do_sample and temperature
     * say, and no threshold applies. */
    const float *temperatures;         /* each finite and >= 0: 0 greedy (beam
                                          search with num_beams > 1), > 0
                                          sampling at it (top_k, top_p, seed,
                                          best_of); not with do_sample; owned
                                          by the caller, alive during the call */
    int n_temperatures;                /* how many */
    float compression_ratio_threshold; /* an attempt whose text has a higher
                                          compression ratio fails; default
                                          2.4; NAN: not checked */
    float log_prob_threshold;          /* ... or one whose avg_logprob is
                                          lower; default -1; NAN: not checked */
    float no_speech_threshold;         /* a chunk whose no_speech_prob (which
                                          needs vad) is higher is silence when
                                          its avg_logprob is below
                                          log_prob_threshold (or that is NAN):
                                          not decoded again, no segment;
                                          default 0.6; NAN: off */

    /* Long audio (docs/MODEL.md "Long audio"). */
    hv_chunking chunking; /* default HV_CHUNKING_AUTO */
    float chunk_seconds;  /* HV_CHUNKING_FIXED: chunk length, > 0 */

    /* Speech detection (docs/VAD.md): the detector for HV_CHUNKING_VAD and
     * AUTO (NULL: none; AUTO then cuts by energy), owned by the caller and
     * alive during the call, and how its probabilities become regions. */
    const hv_vad *vad;
    hv_vad_params vad_params; /* default hv_vad_default_params() */
    float vad_max_gap_s;      /* a pause of at least this many seconds
                                 between speech regions always ends a chunk,
                                 so no segment spans it; 0: only the clip
                                 length ends chunks. Default 3 */

    /* Word times (docs/TIMESTAMPS.md): 1 gives every word of the result
     * its start and end, from the decoder's cross-attention over the
     * encoder frames (one extra teacher-forced decoder pass per chunk).
     * Default 0. */
    int word_timestamps;

    /* Called after each chunk with the audio seconds done and in total, on
     * the calling thread; NULL for none. */
    void (*progress)(void *user, double done_s, double total_s);
    void *progress_user;

    /* Asked before each chunk and before each decoder step, on the calling
     * thread; a non-zero answer stops the transcription. Without a
     * segment_callback, hv_transcribe then returns HV_ERR_CANCELLED and no
     * result; with one, it returns what was done (below). NULL for none. */
    int (*abort_callback)(void *user);
    void *abort_user;

    /* Results as they come: called on the calling thread once for each
     * segment as soon as it is final, in order, with exactly what
     * hv_result_segment() of the final result gives for it (its text,
     * tokens, times, score, and its words when word_timestamps is set),
     * except, with diarize, its speaker: the label its window gave it,
     * which the recording's end may regroup in the result (rule 8 of
     * docs/DIARIZE.md; not with diarize_voice 1). A
     * segment is final when its chunk is transcribed (and its words timed):
     * one call per chunk with text, whatever the chunking mode. *seg and
     * everything it points to are valid only during the call (copy what
     * you keep). NULL for none.
     *
     * A non-zero answer stops the transcription after this segment. Once a
     * segment_callback is set, every stop (its answer or abort_callback's)
     * ends hv_transcribe with HV_OK and a result that holds what was done:
     * the segments delivered so far (a chunk stopped midway is left out,
     * its tokens too), their text, tokens and words, with
     * hv_result_stopped() = 1; progress is not called for the rest. */
    int (*segment_callback)(void *user, const struct hv_segment *seg);
    void *segment_user;

    /* The memory budget of the audio in one call: the mono samples at the
     * model's rate (4 bytes each) that the input converts to may take at
     * most this many bytes, judged from the input's length and rate before
     * anything is converted; more is HV_ERR_LIMIT, naming the rate. 0: no
     * budget. Default HV_DEFAULT_MAX_AUDIO_BYTES. hviske and
     * hviske-server read files within the same budget
     * (hv_audio_max_seconds). */
    size_t max_audio_bytes;

    /* The part of the input to transcribe: duration_s seconds from
     * offset_s seconds on (duration_s 0: to the end; both finite and >= 0;
     * an offset at or beyond the end is HV_ERR_INVALID_ARG). Everything
     * outside it is left out, as if the input were cut there, and every
     * time of the result stays on the input's timeline (a word at 2 s into
     * the part starts at offset_s + 2). Progress counts the part. Default
     * 0, 0: all of it (whisper.cpp's offset_ms and duration_ms). */
    double offset_s, duration_s;

    /* Hotwords (docs/DECODING.md "Hotwords"): names and phrases the
     * decoder is biased towards, separated by commas or newlines. Each is
     * encoded with the model's tokenizer; every token that extends a match
     * of a phrase adds hotwords_score to the hypothesis' score, and a match
     * that fails before the phrase is complete gives it back. NULL or no
     * phrase (default): no biasing at all. A phrase the vocabulary cannot
     * encode is HV_ERR_INVALID_ARG, naming it. Owned by the caller, alive
     * during the call. */
    const char *hotwords;
    float hotwords_score; /* > 0, at most 100; default HV_DEFAULT_HOTWORDS_SCORE */

    /* transformers' RepetitionPenaltyLogitsProcessor and
     * NoRepeatNGramLogitsProcessor, as Hugging Face's generate applies
     * them (docs/DECODING.md "Repetition"): every id of the decoder's input
     * (prompt and generated tokens) has its score divided by
     * repetition_penalty when positive, multiplied when negative; a token
     * that would repeat an n-gram of no_repeat_ngram_size ids is banned.
     * Defaults 1 and 0: off. */
    float repetition_penalty; /* > 0, finite */
    int no_repeat_ngram_size; /* >= 0 */

    /* Non-zero: the prompt asks a diarize-and-timestamp model for speaker
     * and time tokens (<|timestamp|> <|diarize|>), and each chunk's
     * segments are its speaker turns with the model's own times; longer
     * audio goes in windows that overlap their neighbours, their speakers
     * linked into labels of the whole recording (docs/DIARIZE.md). A
     * tokenizer without those pieces, the speaker tokens or the time
     * tokens is HV_ERR_INVALID_ARG naming the piece (hv_model_can_diarize
     * asks first). Default 0. */
    int diarize;
    /* With diarize: the cosine of two voice signatures (spectral and
     * pitch statistics of the recording, no voice model) at and below which a
     * speaker left unlinked by the overlap is not linked to an earlier
     * label by its voice (docs/DIARIZE.md, rule 4), above which a turn
     * or a sentence whose voice another label's claims moves there (rule
     * 7, a turn of two voices becoming two segments); the
     * cosines above which two labels merge as one voice follow from it
     * (rule 6), and at the recording's end those of rule 8, which
     * regroups the result's segments by their own voices (a label of two
     * voices split, a segment moved, labels of one voice merged). 0..1;
     * 1 turns all four off; default HV_DEFAULT_DIARIZE_VOICE. */
    float diarize_voice;

    /* NULL (the default), or the speech detector's reading of this very
     * input (hv_vad_speech of the same samples, rate and channels, by vad
     * with vad_params), used instead of running the detector again; a
     * reading of other samples or settings is refused (HV_ERR_INVALID_ARG),
     * as is one with offset_s or duration_s, or without vad. */
    const hv_speech *speech;
} hv_transcribe_params;

/* The default hotwords_score: the bonus per matched token (log-prob units,
 * so e^1.5 = 4.5 times likelier per token while a phrase matches;
 * sherpa-onnx's default). */
#define HV_DEFAULT_HOTWORDS_SCORE 1.5f

/* The default diarize_voice. */
#define HV_DEFAULT_DIARIZE_VOICE 0.8f

HV_API hv_transcribe_params hv_transcribe_default_params(void);

/* ------------------------------------------------------ the parameters */

/*
 * The transcription parameters one row each (src/params.c): the name the
 * server's form fields and Python's keywords use, where the value lives in
 * hv_transcribe_params, its type, range and default, and a line of help.
 * hv_transcribe_default_params, hv_transcribe's checks, hviske's options
 * and --help, hviske-server's form fields and the Python package all come
 * from these rows, so a range is written once and every refusal reads the
 * same: "invalid NAME 'VALUE' (expected WHAT)". Pointers (vad, the
 * temperature list) and callbacks are not rows.
 */
typedef enum hv_param_type {
    HV_PARAM_BOOL = 0,   /* int: "true"/"1" or "false"/"0" */
    HV_PARAM_INT = 1,    /* int: an integer from lo to hi */
    HV_PARAM_U64 = 2,    /* uint64_t: an integer from lo to hi */
    HV_PARAM_SIZE = 3,   /* size_t: an integer from lo to hi */
    HV_PARAM_FLOAT = 4,  /* float: a finite number in the range */
    HV_PARAM_DOUBLE = 5, /* double: a finite number in the range */
    HV_PARAM_ENUM = 6,   /* int: one of choices, stored as its index */
    HV_PARAM_STRING = 7  /* const char *: the caller's string, not copied */
} hv_param_type;

typedef struct hv_param {
    const char *name;  /* the field's name ("num_beams"; vad_params.x is
                             "vad_x"): the server's form field */
    const char *alias; /* the programs' other name, which the setter takes
                             too ("beams": hviske's --beams, Python's
                             beams=); NULL: none */
    hv_param_type type;
    size_t offset;              /* of the value in hv_transcribe_params */
    double lo, hi;              /* numbers: the range, hi included */
    int lo_open;                /* 1: lo itself is not in the range */
    int none;                   /* floats: "none" sets NAN (the check is off) */
    double def;                 /* the default (hv_transcribe_default_params);
                             may lie outside the range: "use the model's"
                             and the like. ENUM: an index; STRING: NULL */
    const char *const *choices; /* ENUM: the names of 0, 1, ... (NULL-ended) */
    const char *metavar;        /* the value in --help ("N", "X", "MODE") */
    const char *help;           /* what it does, one sentence, no range */
} hv_param;

/* The rows, in order: hv_param_at(0 .. hv_param_count() - 1); NULL
 * outside. Static. */
HV_API int hv_param_count(void);
HV_API const hv_param *hv_param_at(int i);

/* The row named name or with that alias; '-' and '_' are the same and a
 * leading "--" is skipped ("--top-k" is top_k). NULL when there is none. */
HV_API const hv_param *hv_param_find(const char *name);

/* What a row takes, as the refusals say it ("an integer from 1 to 64", "a
 * finite number > 0, or none", "auto, energy, fixed, none or vad"), into
 * buf (always NUL-terminated when size > 0). Returns buf. */
HV_API const char *hv_param_expect(const hv_param *param, char *buf, size_t size);

/*
 * Sets the parameter `name` (as hv_param_find takes it) of *params from
 * its text, parsed whole and strictly: integers decimal digits only, no
 * sign, no spaces; numbers decimal ("-0.5", ".5", "1e-3"), no '+', no
 * "inf"/"nan", finite in the field's type; then the row's range. On
 * failure *params is left alone and errbuf (which may be NULL) gets
 * "invalid NAME 'VALUE' (expected WHAT)", NAME as given: HV_ERR_INVALID_ARG,
 * or for a name without a row "unknown parameter 'NAME'". A STRING row
 * keeps the pointer `value`: it must outlive the transcription.
 */
HV_API hv_status hv_params_set(hv_transcribe_params *params, const char *name, const char *value,
                               char *errbuf, size_t errbuf_size);

/*
 * Numbers from text, parsed whole and strictly, so that a value means one
 * thing or is refused: the rule of hv_params_set and of every number on
 * the programs' command lines and form fields.
 *
 *   Integers: decimal digits only ("0".."9", at least one); no sign, no
 *   spaces, no "0x", nothing after; in [lo, hi], never clamped.
 *
 *   Numbers: an optional '-', digits with an optional '.' and fraction
 *   (".5" and "5." too), an optional exponent ('e' or 'E', an optional
 *   sign, digits). No '+' in front, no spaces, no hex, "inf" or "nan".
 *   The value must be finite in the target type (a float: |v| <= FLT_MAX;
 *   a decimal that overflows or underflows a double is refused) and lie
 *   in [lo, hi], or (lo, hi] with lo_open; hv_parse_float checks the range
 *   on the value rounded to a float ("1e-50" is not above 0).
 *
 * HV_OK with the value in *out, or HV_ERR_INVALID_ARG with *out left
 * alone and errbuf (which may be NULL) "invalid number 'TEXT' (expected
 * WHAT)", WHAT as hv_param_expect words it.
 */
HV_API hv_status hv_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *errbuf,
                              size_t errbuf_size);
HV_API hv_status hv_parse_double(const char *s, int lo_open, double lo, double hi, double *out,
                                 char *errbuf, size_t errbuf_size);
HV_API hv_status hv_parse_float(const char *s, int lo_open, double lo, double hi, float *out,
                                char *errbuf, size_t errbuf_size);

/* Checks every row of *params against its range (its default is allowed
 * too, NAN where "none" is): HV_OK, or HV_ERR_INVALID_ARG with the
 * setter's message for the first value outside ("invalid num_beams '0'
 * (expected an integer from 1 to 64)"). hv_transcribe runs it first. */
HV_API hv_status hv_params_check(const hv_transcribe_params *params, char *errbuf,
                                 size_t errbuf_size);

/* The work budget of one request (docs/DECODING.md, "Work budget"). The
 * decoding work of params is the number of decodings a chunk may run: one
 * per temperature tried (the list, or the one mode without it), counting
 * num_beams for a temperature of 0 (greedy or beam search) and best_of for
 * one above 0 (sampling draws). hv_work returns it (INT_MAX when params
 * are out of range). hv_work_check returns HV_OK when num_beams and
 * best_of are 1..max_work, the list has at most HV_MAX_TEMPERATURES
 * entries and the work is at most max_work (1..HV_MAX_BEAMS; hv_transcribe
 * checks against HV_MAX_BEAMS, hviske-server against its --max-beams);
 * else HV_ERR_INVALID_ARG with a message naming the field and the limit in
 * errbuf (which may be NULL). */
HV_API int hv_work(const hv_transcribe_params *params);
HV_API hv_status hv_work_check(const hv_transcribe_params *params, int max_work, char *errbuf,
                               size_t errbuf_size);

typedef struct hv_result hv_result;

typedef struct hv_timings {
    double frontend_ms;   /* resampling + log-mel features */
    double encoder_ms;    /* encoder + projection */
    double decoder_ms;    /* cross-attention setup, prefill and every step */
    double prefill_ms;    /* of decoder_ms: the prompt passes */
    double steps_ms;      /* of decoder_ms: the one-token (or one-beam-batch)
                             passes after the prompt */
    int n_steps;          /* how many such passes */
    int n_tokens;         /* generated tokens, EOS excluded */
    double vad_ms;        /* speech detection (0 without it) */
    double encoded_s;     /* seconds of audio sent to the encoder: all of it,
                             or with speech detection only the speech */
    double align_ms;      /* word times (0 without them) */
    double encoder_gflop; /* the encoder's matrix products, in 1e9 floating-
                             point operations (hviske-bench: / encoder_ms) */
    double diarize_ms;    /* diarize's speaker work: pitch tracks, voice
                             signatures, linking and regrouping speakers (0
                             without it); its extra tokens are decoder_ms' */
} hv_timings;

/*
 * Transcribes interleaved float PCM (n_frames frames of `channels` samples
 * each, any sample rate; channels are averaged, the rate is converted to the
 * model's). On success *out is a new result the caller frees with
 * hv_result_free; on failure *out is NULL and hv_context_error() says why.
 * params may be NULL for the defaults.
 */
HV_API hv_status hv_transcribe(hv_context *ctx, const float *pcm, size_t n_frames, int sample_rate,
                               int channels, const hv_transcribe_params *params, hv_result **out);

/* The whole transcript: the segments' texts joined with a space (no
 * separator for ja and zh). UTF-8, trimmed. */
HV_API const char *hv_result_text(const hv_result *res);
HV_API int hv_result_n_tokens(const hv_result *res);          /* all segments, EOS excluded */
HV_API const int32_t *hv_result_tokens(const hv_result *res); /* never NULL */
/* Log-prob of each generated token under the model (before temperature or
 * truncation), [hv_result_n_tokens]. */
HV_API const float *hv_result_token_logprobs(const hv_result *res);
/* Sequence score: the summed log-probs of the tokens (and of EOS when the
 * model emitted it); for beam search, divided by
 * max(1, length)^length_penalty where length counts the EOS step. For
 * chunked audio, the sum over the chunks as decoded (with diarize, over
 * the overlapping windows, each whole). */
HV_API double hv_result_score(const hv_result *res);
HV_API hv_timings hv_result_timings(const hv_result *res);
HV_API double hv_result_duration(const hv_result *res);      /* seconds of audio: the input's */
HV_API const char *hv_result_language(const hv_result *res); /* the code used */

/* A word of the transcript: the tokenizer's pieces from one that starts a
 * word (the piece begins with the word-start marker) up to the next such
 * piece; punctuation pieces belong to the word before them. Times come
 * from hv_transcribe_params.word_timestamps (docs/TIMESTAMPS.md). */
typedef struct hv_word {
    const char *text;  /* UTF-8, without the space before it */
    double start, end; /* seconds on the input's timeline (also when speech
                          detection left pauses out); start <= end, and
                          the words of a result are in time order */
    float probability; /* the mean probability of its tokens */
    int first_token;   /* its tokens: hv_result_tokens() + first_token ... */
    int n_tokens;      /* ... n_tokens of them (>= 1) */
} hv_word;

/* The words of the whole transcript, in order; none (0, and a non-NULL
 * pointer) unless word_timestamps was set. Owned by the result: valid
 * until hv_result_free. */
HV_API int hv_result_n_words(const hv_result *res);
HV_API const hv_word *hv_result_words(const hv_result *res);

/* Each chunk with a non-empty transcript is a segment, or with
 * params.diarize each speaker turn of it (docs/DIARIZE.md) (the tokens of
 * chunks whose text is empty still count in hv_result_tokens; a chunk the
 * no_speech_threshold finds silent gives neither). Pointers stay valid
 * until hv_result_free. */
typedef struct hv_segment {
    double start, end;     /* seconds */
    int64_t start_sample;  /* at the model's sample rate */
    int64_t end_sample;    /* exclusive */
    const char *text;      /* trimmed */
    const int32_t *tokens; /* EOS excluded */
    const float *token_logprobs;
    int n_tokens;
    double score;
    const hv_word *words; /* its words (part of hv_result_words()); n_words */
    int n_words;          /* is 0 unless word_timestamps was set */
    int first_token;      /* where its tokens start in hv_result_tokens(),
                             the numbering of hv_word.first_token */
    /* How the chunk was decoded (docs/DECODING.md "Temperature fallback"),
     * as faster-whisper reports each window: */
    float temperature;        /* of the decoding kept: 0 greedy or beam
                                 search, else sampling at it */
    double avg_logprob;       /* its summed log-probs, EOS included when it
                                 ended the chunk, / (n_tokens + 1) */
    double compression_ratio; /* its text's bytes over their size compressed
                                 by zlib (compress(), default level) */
    double no_speech_prob;    /* 1 - the speech detector's mean probability
                                 over the chunk's audio (docs/VAD.md); NAN
                                 without params.vad */
    int speaker;              /* with params.diarize: the turn's speaker,
                                 a label of the whole recording (0, 1,
                                 ... in order of appearance, a label
                                 split off at the end after them; the model's
                                 <|spltokenK|> of each window linked
                                 across windows: docs/DIARIZE.md); -1
                                 where none (no diarize, or no speaker
                                 token) */
} hv_segment;

HV_API int hv_result_n_segments(const hv_result *res);
/* 1 when the transcription was stopped early by segment_callback or
 * abort_callback (with a segment_callback set) and the result holds only
 * the segments done until then; 0 when it covers the whole input. */
HV_API int hv_result_stopped(const hv_result *res);
HV_API hv_segment hv_result_segment(const hv_result *res, int i);
HV_API void hv_result_free(hv_result *res); /* NULL is allowed */

/* ---------------------------------------------------------------- cues */

/*
 * Sentence-sized segments ("cues", docs/TIMESTAMPS.md "Segments"): the
 * timed words of a chunk grouped into pieces a person reads at once, cut
 * after sentence ends first, then after clause punctuation and in the
 * longest pauses, within these limits. The CLI's and the server's
 * segments and subtitles are the cues of each hv_segment (a chunk), so
 * one never spans two chunks and each is final when its chunk is.
 */
typedef struct hv_cue_params {
    size_t size;        /* sizeof(hv_cue_params), as hv_cue_default_params sets it: the
                           library refuses another (a program built against
                           another hviske.h), so the struct can grow */
    double max_seconds; /* longest cue, HV_CUE_MAX_SECONDS_MIN..MAX (7) */
    int max_lines;      /* lines per cue, 1..10 (2) */
    int max_line_chars; /* Unicode code points per line, 10..1000 (42) */
    /* Readability: a cue is shown on into the silence after its last word
     * (never past max_seconds, never closer than min_gap to the next cue)
     * until its characters go by at most max_cps a second and it lasts
     * min_seconds; a gap under min_gap left between two cues is closed.
     * 0 turns each off. */
    double max_cps;     /* characters per second, 0..HV_CUE_MAX_CPS_MAX (17) */
    double min_seconds; /* shortest showing, 0..HV_CUE_MIN_SECONDS_MAX (5/6) */
    double min_gap;     /* seconds between cues, 0..HV_CUE_MIN_GAP_MAX (0.08:
                           2 frames at 25 per second) */
} hv_cue_params;

#define HV_CUE_MAX_SECONDS_MIN 1.0
#define HV_CUE_MAX_SECONDS_MAX 600.0
#define HV_CUE_MAX_CPS_MAX     1000.0
#define HV_CUE_MIN_SECONDS_MAX 10.0
#define HV_CUE_MIN_GAP_MAX     1.0
enum {
    HV_CUE_MAX_LINES_MIN = 1,
    HV_CUE_MAX_LINES_MAX = 10,
    HV_CUE_LINE_CHARS_MIN = 10,
    HV_CUE_LINE_CHARS_MAX = 1000,
    HV_CUE_LONG_PAUSE_MS = 1500, /* a pause longer than this ends a cue */
    HV_CUE_MIN_SHOW_MS = 500     /* what a zero-length cue is given, room
                                    before the next cue permitting */
};

/* 7 s, 2 lines, 42 characters; 17 characters a second, 5/6 s, 0.08 s;
 * size set. */
HV_API hv_cue_params hv_cue_default_params(void);

typedef struct hv_cue {
    double start, end;       /* seconds, whole milliseconds; start < end <=
                                the next cue's start */
    int first_word, n_words; /* the words it covers: words[first_word ..
                                first_word + n_words - 1] of the words given */
    int first_token;         /* its words' tokens, in hv_word.first_token's
                                numbering (hv_result_tokens()) ... */
    int n_tokens;            /* ... n_tokens of them */
    char *text;              /* its words, cleaned (invalid UTF-8 as U+FFFD,
                                line breaks and control characters as
                                spaces) and joined by single spaces; its
                                lines (max_lines of max_line_chars) joined
                                by '\n'. Owned: hv_cues_free */
} hv_cue;

/*
 * Groups words[0..n-1] (a result's or a segment's, in time order) into
 * cues; *out gets *n_out of them (NULL and 0 when no word has text), freed
 * with hv_cues_free. p NULL: the defaults; a limit outside its range is
 * taken as the nearest allowed value (NaN: its default). Returns HV_OK,
 * HV_ERR_INVALID_ARG for a p whose size is not sizeof(hv_cue_params), or
 * HV_ERR_NOMEM (then *out is NULL and *n_out 0).
 *
 * Every word with text is in exactly one cue, in order; words without text
 * are shown nowhere. Broken times (NaN, infinite, negative, out of order)
 * are made usable rather than refused. The rules, which never break:
 * a pause of more than HV_CUE_LONG_PAUSE_MS ends a cue; a cue lasts at
 * most max_seconds (but a single word that lasts longer) and fits in
 * max_lines lines of max_line_chars characters (but a single word that is
 * longer). Among the cuttings that keep them the cheapest is taken:
 * sentence ends wanted, then clause punctuation, then pauses; cues under
 * 5/6 s, one-word orphans and cues that end one sentence and start
 * another avoided; forced cuts even (docs/CLI.md "Subtitles").
 */
HV_API hv_status hv_cues_build(const hv_word *words, int n, const hv_cue_params *p, hv_cue **out,
                               int *n_out);

/*
 * The segments of one chunk: the cues of seg's words (hv_cues_build, with
 * first_word counting from seg->words; a cue that would outlast the chunk
 * only by the shortest showing time ends with it), or, when it has no words
 * (word_timestamps off, or only pieces that print nothing), one cue of the
 * whole segment: its times, its cleaned text on one line, n_words 0 and
 * all its tokens. Works inside a segment_callback. Returns as
 * hv_cues_build.
 */
HV_API hv_status hv_segment_cues(const hv_segment *seg, const hv_cue_params *p, hv_cue **out,
                                 int *n_out);
HV_API void hv_cues_free(hv_cue *cues, int n); /* NULL is allowed */

/* A copy of s with every invalid UTF-8 sequence (overlong forms,
 * surrogates, code points above U+10FFFF, cut sequences) replaced by
 * U+FFFD, so that JSON or subtitles made from model text or a file name
 * are valid. NULL when out of memory; release it with hv_free. */
HV_API char *hv_utf8_clean(const char *s);

/* --------------------------------------------------------------- audio */

/*
 * Reads an audio file (any format libsndfile reads: WAV, FLAC, OGG/Opus,
 * MP3, ...) as interleaved float PCM at its own rate. On success the caller
 * owns *pcm and frees it with hv_free. On failure writes a message
 * naming the file into errbuf. The whole interleaved file is held in memory
 * (channels x rate x seconds floats): hv_audio_read_mono below costs only
 * the mono samples. A path must be a regular file (a FIFO is HV_ERR_IO).
 * Every reader refuses a file of more than 64 channels with
 * HV_ERR_UNSUPPORTED, and a sample rate outside 1000 to 768000 Hz with
 * HV_ERR_FORMAT, naming the count or the rate.
 */
HV_API hv_status hv_audio_read(const char *path, float **pcm, size_t *n_frames, int *sample_rate,
                               int *channels, char *errbuf, size_t errbuf_size);
/* The same for a whole audio file's bytes in memory (for example standard
 * input read to its end, so that formats which seek work from a pipe, or an
 * upload); `name` stands for the file in messages (NULL: "<memory>").
 * max_seconds > 0 refuses longer audio with HV_ERR_LIMIT, judged from the
 * header before decoding and from the frames decoded (a small compressed
 * file can decode to gigabytes); 0 = no limit but the library's own. */
HV_API hv_status hv_audio_read_buffer(const void *data, size_t size, const char *name,
                                      double max_seconds, float **pcm, size_t *n_frames,
                                      int *sample_rate, int *channels, char *errbuf,
                                      size_t errbuf_size);
/*
 * The same, straight to mono at target_rate (pass hv_model_sample_rate() to
 * give hv_transcribe what it uses as is): the file is decoded in blocks,
 * each block's channels averaged and resampled as it comes, so reading costs
 * the mono samples (4 bytes each) plus a constant of at most 8 MiB (one
 * block of 4096 frames, at most 1 MiB at 64 channels, the decoder's and the
 * resampler's state; the _buffer variant's bytes are the caller's),
 * whatever the file's channel count and rate. The samples equal
 * what hv_transcribe would make of hv_audio_read's PCM. max_seconds > 0
 * refuses longer audio with HV_ERR_LIMIT as hv_audio_read_buffer does
 * (also for paths). A path must be a regular file: a FIFO or a device is
 * HV_ERR_IO (read pipes with the _buffer variant). On success the caller
 * frees *samples with hv_free; *n_samples may be 0 for a tiny input.
 */
/* The seconds of audio that a budget of max_audio_bytes
 * (hv_transcribe_params.max_audio_bytes; 0: none) allows at target_rate,
 * for hv_audio_read_mono's max_seconds: 0 for no limit. */
HV_API double hv_audio_max_seconds(size_t max_audio_bytes, int target_rate);

HV_API hv_status hv_audio_read_mono(const char *path, int target_rate, double max_seconds,
                                    float **samples, size_t *n_samples, char *errbuf,
                                    size_t errbuf_size);
HV_API hv_status hv_audio_read_buffer_mono(const void *data, size_t size, const char *name,
                                           int target_rate, double max_seconds, float **samples,
                                           size_t *n_samples, char *errbuf, size_t errbuf_size);
/* The same for the audio at descriptor fd (standard input, a pipe, a
 * socket; left open), named `name` in messages (NULL: "<stream>"). A
 * regular file at offset 0 is read in place; anything else is copied to an
 * unlinked temporary file in $TMPDIR (else /tmp) as it comes, so that
 * formats which seek work, within bounds: input that is no audio file once
 * its first 64 KiB (or all of it, when shorter) are in is HV_ERR_FORMAT
 * (up to 16 MiB for one that begins as a container whose tags or chunks
 * may come first: ID3, FLAC, Ogg, RIFF, RIFX, RF64, AIFF, CAF),
 * and once its header is known, more bytes than the longest audio
 * max_seconds allows could take (the format's bytes per sample, 8 for
 * compressed ones, plus 64 MiB for headers and tags) is HV_ERR_LIMIT with
 * the message of too long audio. Memory: 64 KiB while copying, then as
 * hv_audio_read_mono's. */
HV_API hv_status hv_audio_read_fd_mono(int fd, const char *name, int target_rate,
                                       double max_seconds, float **samples, size_t *n_samples,
                                       char *errbuf, size_t errbuf_size);

#ifdef __cplusplus
}
#endif
#endif /* HVISKE_H */
