/* The NeMo-style log-mel frontend of docs/MODEL.md: dither, pre-emphasis,
 * centred STFT, power, mel, log, per-feature normalisation, padding. */
#ifndef HV_FRONTEND_H
#define HV_FRONTEND_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/threads.h"
#include "model/config.h"
#include "util/error.h"

typedef struct hv_frontend {
    int n_fft;      /* 512 */
    int n_bins;     /* n_fft / 2 + 1 */
    int hop;        /* 160 */
    int win_length; /* 400 */
    int n_mels;     /* 128 */
    int pad_to;     /* 16 */
    float *window;  /* [n_fft]: the win_length window centred, zeros around */
    float *fb;      /* [n_mels x n_bins] mel filterbank */
    int *fb_range;  /* [n_mels x 2]: first and one-past-last non-zero bin of
                        each filter, so the mel product skips the zeros */
} hv_frontend;

/* Reads n_fft, win_length, hop_length, n_mels, pad_to (0 or 1: no padding)
 * and sample_rate from c. window: [win_length] values (the checkpoint's
 * preprocessor.featurizer.window; the caller checks its shape) or NULL,
 * then a symmetric Hann window (torch.hann_window(periodic=False)). fb:
 * [n_mels x n_bins] (preprocessor.featurizer.fb without its leading 1) or
 * NULL, then librosa.filters.mel(sr, n_fft, n_mels, fmin=0, fmax=sr/2,
 * htk=False, norm='slaney'). Given values must be finite and fb >= 0
 * (HV_ERR_FORMAT otherwise); bad sizes are HV_ERR_INVALID_ARG. On failure
 * f is left empty (hv_frontend_free is harmless). */
hv_status hv_frontend_init(hv_frontend *f, const hv_config *c, const float *window, const float *fb,
                           hv_error *e);
void hv_frontend_free(hv_frontend *f);

/* Rounds the window (when `window`) and the filterbank (when `fb`) to bf16
 * (round to nearest even), as the PyTorch reference does when it runs in
 * bf16. For the ones a checkpoint lacks and the frontend computed, to mimic
 * such a reference; tensors read from a bf16 checkpoint are already exact. */
void hv_frontend_round_bf16(hv_frontend *f, int window, int fb);

/* Features of n samples of 16 kHz mono audio: *feat is malloc'ed
 * [*n_frames x n_mels] time-major, *n_frames a multiple of pad_to, rows at
 * index >= *n_valid zero. *n_valid = n / hop; the STFT's n / hop + 1
 * frames are padded, so *n_frames = roundup(n / hop + 1, pad_to).
 * dither <= 0 disables the noise; otherwise sample i gets dither * z[i]
 * (float arithmetic), z = torch.randn(n) of a CPU generator seeded with
 * seed (hv_torch_randn; Hugging Face's feature extractor seeds with n, the
 * chunk's own number of samples), so equal input and seed give equal
 * output whatever the threads. Too-short audio (fewer than 2 valid frames) is
 * HV_ERR_INVALID_ARG "audio too short". pool may be NULL (run on the
 * caller); the result does not depend on the pool or its size. The
 * frontend is read-only here: one frontend may serve many threads.
 * logmel NULL, or *logmel is malloc'ed [*n_valid x n_mels]: the log-mel
 * of the valid frames before the per-feature normalisation (the voice
 * signatures of diarize, voice.h), from the same STFT. */
hv_status hv_frontend_compute(const hv_frontend *f, const float *samples, size_t n, float dither,
                              uint64_t seed, hv_pool *pool, float **feat, int *n_frames,
                              int *n_valid, float **logmel, hv_error *e);

/* The *n_frames hv_frontend_compute gives for n samples: n / hop + 1
 * rounded up to a multiple of pad_to (before its checks). */
size_t hv_frontend_frames(const hv_frontend *f, size_t n);

#endif
