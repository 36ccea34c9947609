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
 *     hv_context *ctx = hv_context_new(model, 0);   // 0: model's thread count
 *     hv_transcribe_params tp = hv_transcribe_default_params();
 *     tp.language = "da";
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

#define HV_VERSION "0.1.0"

/* Marks what the shared library exports. The library is compiled with
 * hidden visibility, so its internal functions stay private and only the
 * declarations below, which carry HV_API, are exported. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define HV_API __attribute__((visibility("default")))
#else
#define HV_API
#endif

/* The most beams hv_transcribe_params.num_beams may ask for. */
#define HV_MAX_BEAMS 64

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

/* Parses "auto", "f32", "f16", "bf16", "q8_0", "q4_0"; returns 0 on
 * success. */
HV_API int hv_weight_type_parse(const char *name, hv_weight_type *out);

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

/* Parses "auto", "f32", "bf16"; returns 0 on success. */
HV_API int hv_compute_parse(const char *name, hv_compute *out);

/* "auto", "f32" or "bf16"; "?" for a value outside the enum. */
HV_API const char *hv_compute_name(hv_compute compute);

typedef struct hv_model_params {
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

/* Which kernels run the encoder's weight products, for reports: "onednn "
 * and oneDNN's name of its implementation ("onednn
 * brg:avx512_core_amx_bf16"), or "ours avx2" / "ours scalar". Static to
 * the model. */
HV_API const char *hv_model_gemm(const hv_model *model);

/* The rate, in GFLOP/s, of the kernels hv_model_gemm names in the model's
 * compute mode, on the encoder's weight matrices (those of its first
 * layer, weighted as a layer runs them) with n_rows activation rows, over
 * a pool of n_threads threads (0: all cores): best of 3 timings per
 * shape. For benchmarks (hviske-bench --peak); 0 when it cannot be
 * measured (out of memory). Takes a few times the encoder's time for one
 * layer of n_rows frames. */
HV_API double hv_model_gemm_peak(const hv_model *model, int n_threads, int n_rows);

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
HV_API size_t hv_model_weight_bytes(const hv_model *model); /* weight matrices */
/* Of those, the bytes one decoder step reads (every decoder matrix but the
 * cross-attention key/value projections, which run once per chunk). */
HV_API size_t hv_model_decoder_weight_bytes(const hv_model *model);
HV_API int hv_model_sample_rate(const hv_model *model);
HV_API int hv_model_n_languages(const hv_model *model);
HV_API const char *hv_model_language(const hv_model *model, int i);

/* -------------------------------------------------------------- context */

typedef struct hv_context hv_context;

/*
 * Creates a context: the per-thread run state (worker threads, scratch
 * memory). n_threads 0 takes the model's default. Returns NULL when out of
 * memory. The model must outlive the context. Free with hv_context_free.
 */
HV_API hv_context *hv_context_new(const hv_model *model, int n_threads);
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

/* How probabilities become speech regions: Silero's get_speech_timestamps
 * (docs/VAD.md). */
typedef struct hv_vad_params {
    float threshold;     /* a window with probability >= threshold is speech
                            (default 0.5); in [0, 1] */
    float neg_threshold; /* in speech, a window below it is silence; < 0
                            (default -1): max(threshold - 0.15, 0.01) */
    int min_speech_ms;   /* shorter regions are dropped (default 250) */
    int min_silence_ms;  /* silence that ends a region (default 100) */
    int speech_pad_ms;   /* added on each side of a region (default 30) */
    float max_speech_s;  /* longer regions are cut, at their longest silence
                            of over 98 ms if any; 0 = no limit (default) */
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
 * caller frees *probs with hv_vad_free_probs (non-NULL even when *n_probs
 * is 0).
 */
HV_API hv_status hv_vad_probs(hv_context *ctx, const hv_vad *vad, const float *pcm, size_t n_frames,
                              int sample_rate, int channels, float **probs, size_t *n_probs);
HV_API void hv_vad_free_probs(float *probs);

/* The speech regions of the same input, in time order; params NULL for the
 * defaults. The caller frees *regions with hv_vad_free_regions (non-NULL
 * even when *n_regions is 0). */
HV_API hv_status hv_vad_regions(hv_context *ctx, const hv_vad *vad, const float *pcm,
                                size_t n_frames, int sample_rate, int channels,
                                const hv_vad_params *params, hv_speech_region **regions,
                                size_t *n_regions);
HV_API void hv_vad_free_regions(hv_speech_region *regions);

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

/* Parses "auto", "energy", "fixed", "none", "vad"; returns 0 on success. */
HV_API int hv_chunking_parse(const char *name, hv_chunking *out);

struct hv_segment; /* a segment of a result (below) */

typedef struct hv_transcribe_params {
    const char *language; /* a code from the model's supported_languages;
                             NULL = "da" if supported, else the first */
    int punctuation;      /* 1: <|pnc|> (default), 0: <|nopnc|> */
    int max_new_tokens;   /* 0 = model default (256, capped by the
                             decoder's max_sequence_length) */
    float dither;         /* < 0: use the model's config value (default);
                             0: off; > 0: this amount */
    uint64_t dither_seed; /* seed of the deterministic dither noise */

    /* Decoding (docs/DECODING.md). Defaults: greedy. */
    int num_beams;        /* 1: greedy or sampling; > 1: beam search */
    float length_penalty; /* beam search: hypotheses compared by
                             score / max(1, length)^length_penalty; > 0,
                             default 1.0 */
    int do_sample;        /* 1: sample each token (needs num_beams == 1) */
    float temperature;    /* sampling: logits / temperature; > 0, default 1 */
    int top_k;            /* sampling: keep the k most likely; 0 = all */
    float top_p;          /* sampling: keep the smallest most-likely set whose
                             probability reaches top_p; (0, 1], default 1 */
    uint64_t seed;        /* sampling: same seed + same input = same output */

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
     * tokens, times, score, and its words when word_timestamps is set). A
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
} hv_transcribe_params;

HV_API hv_transcribe_params hv_transcribe_default_params(void);

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
 * chunked audio, the sum over the chunks. */
HV_API double hv_result_score(const hv_result *res);
HV_API hv_timings hv_result_timings(const hv_result *res);
HV_API double hv_result_duration(const hv_result *res);      /* seconds of audio */
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

/* Each chunk with a non-empty transcript is a segment (the tokens of
 * chunks whose text is empty still count in hv_result_tokens). Pointers
 * stay valid until hv_result_free. */
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
} hv_segment;

HV_API int hv_result_n_segments(const hv_result *res);
/* 1 when the transcription was stopped early by segment_callback or
 * abort_callback (with a segment_callback set) and the result holds only
 * the segments done until then; 0 when it covers the whole input. */
HV_API int hv_result_stopped(const hv_result *res);
HV_API hv_segment hv_result_segment(const hv_result *res, int i);
HV_API void hv_result_free(hv_result *res); /* NULL is allowed */

/* --------------------------------------------------------------- audio */

/*
 * Reads an audio file (any format libsndfile reads: WAV, FLAC, OGG/Opus,
 * MP3, ...) as interleaved float PCM at its own rate. On success the caller
 * owns *pcm and frees it with hv_audio_free. On failure writes a message
 * naming the file into errbuf. The whole interleaved file is held in memory
 * (channels x rate x seconds floats): hv_audio_read_mono below costs only
 * the mono samples. A path must be a regular file (a FIFO is HV_ERR_IO).
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
 * frees *samples with hv_audio_free; *n_samples may be 0 for a tiny input.
 */
HV_API hv_status hv_audio_read_mono(const char *path, int target_rate, double max_seconds,
                                    float **samples, size_t *n_samples, char *errbuf,
                                    size_t errbuf_size);
HV_API hv_status hv_audio_read_buffer_mono(const void *data, size_t size, const char *name,
                                           int target_rate, double max_seconds, float **samples,
                                           size_t *n_samples, char *errbuf, size_t errbuf_size);
HV_API void hv_audio_free(float *pcm);

#ifdef __cplusplus
}
#endif
#endif /* HVISKE_H */
