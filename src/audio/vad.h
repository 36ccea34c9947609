/* Speech detection: Silero VAD v5 (docs/VAD.md). The detector's files are
 * config.json and model.safetensors (research/convert-silero-vad.py); the
 * forward pass gives one speech probability per window of the detector's
 * sample rate, and hv_vad_speech_regions turns probabilities into speech
 * regions as Silero's get_speech_timestamps does. */
#ifndef HV_VAD_H
#define HV_VAD_H

#include <stddef.h>

#include "hviske.h"
#include "kernels/threads.h"
#include "util/error.h"

#define HV_VAD_MAX_LAYERS 8

/* config.json's "format" and the "format_version" this code reads. */
#define HV_VAD_FORMAT         "hviske-silero-vad"
#define HV_VAD_FORMAT_VERSION 1

/* get_speech_timestamps' fixed settings for max_speech_s: a region that
 * grows too long is cut at its longest silence of more than this. */
#define HV_VAD_MIN_SILENCE_AT_MAX_SPEECH_MS 98

struct hv_vad {
    /* config.json */
    int sample_rate;                 /* 16000 */
    int window;                      /* new samples per window, 512 */
    int context;                     /* samples of the previous window put in front, 64 */
    int reflect_pad;                 /* reflection padding on the right, 64 */
    int n_fft;                       /* STFT frame length, 256 */
    int hop;                         /* STFT hop, 128 */
    int kernel;                      /* encoder conv kernel (odd; padding kernel / 2), 3 */
    int n_layers;                    /* encoder convs, 4 */
    int channels[HV_VAD_MAX_LAYERS]; /* output channels: 128 64 64 128 */
    int strides[HV_VAD_MAX_LAYERS];  /* 1 2 2 1 */
    int hidden;                      /* LSTM size = channels[n_layers - 1], 128 */
    /* derived */
    int n_freq;                     /* n_fft / 2 + 1 */
    int n_frames;                   /* STFT frames per window, 4 */
    int len[HV_VAD_MAX_LAYERS + 1]; /* time steps into each conv; len[n_layers] == 1 */
    int in_ch[HV_VAD_MAX_LAYERS];   /* input channels of each conv */
    /* weights, owned, f32 */
    float *basis;                     /* [2 n_freq][n_fft]: real rows, then imaginary */
    float *conv_w[HV_VAD_MAX_LAYERS]; /* [out][in][kernel] */
    float *conv_b[HV_VAD_MAX_LAYERS]; /* [out] */
    float *w_ih;                      /* [4 hidden][hidden], gates i f g o */
    float *w_hh;                      /* [4 hidden][hidden] */
    float *b_ih, *b_hh;               /* [4 hidden] */
    float *dec_w;                     /* [hidden] */
    float dec_b;
};

/* Reads dir/config.json and dir/model.safetensors, checking every value
 * and every tensor's presence, dtype (F32), shape and finiteness; messages
 * name the file and what is wrong. On failure vad is left empty. */
hv_status hv_vad_init(hv_vad *vad, const char *dir, hv_error *e);
void hv_vad_release(hv_vad *vad);

/* Windows for n samples: ceil(n / window). */
size_t hv_vad_n_windows(const hv_vad *vad, size_t n);

/* Speech probabilities of x (mono, at vad->sample_rate, finite), one per
 * window into probs[hv_vad_n_windows(n)]; the last window is zero-padded.
 * The encoder runs on the pool's threads; results do not depend on the
 * number of threads. */
hv_status hv_vad_forward(const hv_vad *vad, hv_pool *pool, const float *x, size_t n, float *probs,
                         hv_error *e);

/* How hv_vad_forward_pass runs the detector (docs/VAD.md, "Onsets"):
 * HV_VAD_PASS_BACKWARDS over the input backwards, the zeros that pad its
 * last window first (probs[w] is then that of window n_win - 1 - w of the
 * input); HV_VAD_PASS_RESET with the recurrent state set back to
 * zero, as at the start of a file, after each window of digital silence
 * (every sample exactly zero). 0: Silero as it is, hv_vad_forward. */
#define HV_VAD_PASS_BACKWARDS 1u
#define HV_VAD_PASS_RESET     2u

/* hv_vad_forward of x times gain, run as `how` says. */
hv_status hv_vad_forward_pass(const hv_vad *vad, hv_pool *pool, const float *x, size_t n,
                              float gain, unsigned how, float *probs, hv_error *e);

/* Quiet recordings (docs/VAD.md, "Level"): Silero's probabilities fall
 * with the input's level (at a peak of 1 % of full scale it misses words,
 * at 0.3 % all of them) while the model does not mind. So the detector
 * hears a recording whose loud windows (the loudest but one and one in a
 * thousand, so a click does not count) are below HV_VAD_QUIET_DB dBFS
 * raised to HV_VAD_RAISE_TO_DB, by at most HV_VAD_MAX_GAIN_DB; digital
 * silence (-110 dB) stays as it is. */
#define HV_VAD_QUIET_DB    -35
#define HV_VAD_RAISE_TO_DB -20
#define HV_VAD_MAX_GAIN_DB 60

/* The gain for x[n] (1 for a recording at an ordinary level). */
float hv_vad_level_gain(const hv_vad *vad, const float *x, size_t n);

/* The probabilities the regions are found from, into *probs (malloc'ed,
 * hv_vad_n_windows(n) of them, never NULL on success; the caller frees
 * it): those of x[n] (mono, at vad->sample_rate, finite) raised by
 * hv_vad_level_gain; with edges HV_VAD_EDGES_SIGNAL each window's greater
 * probability of two passes, forwards and backwards, each with
 * HV_VAD_PASS_RESET (docs/VAD.md "Onsets"); with HV_VAD_EDGES_SILERO
 * hv_vad_forward's. */
hv_status hv_vad_level_probs(const hv_vad *vad, hv_pool *pool, const float *x, size_t n, int edges,
                             float **probs, hv_error *e);

/* The speech regions of x[n]: hv_vad_level_probs with p->edges, then
 * hv_vad_speech_regions, then (p->edges HV_VAD_EDGES_SIGNAL)
 * hv_vad_signal_edges on x. *regions as there. When probs is not NULL it
 * gets the probabilities, as hv_vad_level_probs gives them (NULL on
 * failure). */
hv_status hv_vad_detect(const hv_vad *vad, hv_pool *pool, const float *x, size_t n,
                        const hv_vad_params *p, hv_speech_region **regions, size_t *n_regions,
                        float **probs, hv_error *e);

/* The edges rule (HV_VAD_EDGES_SIGNAL, docs/VAD.md "Edges"): a 10 ms
 * frame is signal when its energy is HV_VAD_EDGE_MARGIN_DB above the floor
 * (the median frame of the HV_VAD_EDGE_FLOOR_S of each pause around the
 * region nearest it) and no more than HV_VAD_EDGE_RANGE_DB below the
 * region's loud frames (its loudest tenth); an edge moves out over signal frames and
 * quiet stretches of up to HV_VAD_EDGE_HANG_S between them, by at most
 * HV_VAD_EDGE_MAX_S, never past the neighbouring region's edge. */
#define HV_VAD_EDGE_MARGIN_DB 12.0f
#define HV_VAD_EDGE_RANGE_DB  50.0f
#define HV_VAD_EDGE_FLOOR_S   5.0
#define HV_VAD_EDGE_HANG_S    0.2
#define HV_VAD_EDGE_MAX_S     1.5

/* Moves the edges of r[n_r] (sorted, not overlapping, samples of x[n] at
 * sample_rate) out as the rule above says; regions that grow into each
 * other meet halfway between their former edges. */
hv_status hv_vad_signal_edges(const float *x, size_t n, int sample_rate, hv_speech_region *r,
                              size_t n_r, hv_error *e);

/* HV_ERR_INVALID_ARG, with a message, for parameters out of range. */
hv_status hv_vad_check_params(const hv_vad_params *p, hv_error *e);

/* Silero's get_speech_timestamps on probabilities already computed:
 * probs[n_probs] for consecutive windows of `window` samples of a signal
 * of n_samples samples at sample_rate. *out is malloc'ed (never NULL on
 * success; the caller frees it), *n_out regions in time order. */
hv_status hv_vad_speech_regions(const float *probs, size_t n_probs, size_t n_samples, int window,
                                int sample_rate, const hv_vad_params *p, hv_speech_region **out,
                                size_t *n_out, hv_error *e);

#endif
