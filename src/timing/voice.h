/* A speaker's voice signature in one diarize window: spectral statistics
 * of the raw log-mel (the frontend's log(mel + guard) before per-feature
 * normalisation) over the speaker's turns, which rule 4 of the speaker
 * linking compares across windows (speaker_link.h, docs/DIARIZE.md). No
 * voice model: the statistics of one recording's channel. A pure function,
 * tested on known vectors (tests/unit/test_voice.c). */
#ifndef HV_VOICE_H
#define HV_VOICE_H

#include "util/error.h"

/* Turn frames a speaker needs for a signature, in seconds. */
#define HV_VOICE_MIN_S 1.0

/* A turn of the window, in window seconds. */
typedef struct hv_voice_span {
    double start, end;
} hv_voice_span;

/* The signature's length for n_mels features: a mean and a standard
 * deviation per mel bin. */
static inline int hv_voice_dim(int n_mels) { return 2 * n_mels; }

/* The signature of the speaker of spans[n_spans] from logmel [n_frames x
 * n_mels] (frame t centred at t * frame_s seconds): the frames of its
 * spans ([floor(start / frame_s), floor(end / frame_s)), each frame once)
 * whose mean over the bins is at least the median of those frames' means
 * (its speech, not its pauses); of them the mean per bin less the mean of
 * those means (the level of the recording out) and the standard
 * deviation per bin (population); the 2 n_mels values less their average,
 * divided by their norm, into sig[hv_voice_dim(n_mels)] (a unit vector).
 * *seconds: the spans' frames in seconds. *has 0 (sig then holds
 * nothing of use) when those are under HV_VOICE_MIN_S or the vector is 0.
 * Only HV_ERR_NOMEM fails. */
hv_status hv_voice_signature(const float *logmel, int n_frames, int n_mels, double frame_s,
                             const hv_voice_span *spans, int n_spans, double *sig, double *seconds,
                             int *has, hv_error *e);

#endif
