/* A speaker's voice signature in one diarize window: spectral statistics
 * of the raw log-mel (the frontend's log(mel + guard) before per-feature
 * normalisation) and a histogram of the pitch (audio/pitch.h) over the
 * speaker's turns, which the speaker linking compares across windows
 * (speaker_link.h, docs/DIARIZE.md). No voice model: the statistics of one
 * recording's channel. A pure function, tested on known vectors
 * (tests/unit/test_voice.c). */
#ifndef HV_VOICE_H
#define HV_VOICE_H

#include "util/error.h"

/* Turn frames a speaker needs for a signature, in seconds. */
#define HV_VOICE_MIN_S 1.0

/* A turn of the window, in window seconds. */
typedef struct hv_voice_span {
    double start, end;
} hv_voice_span;

/* The pitch histogram's bins: semitones from HV_PITCH_MIN_HZ, the last
 * at HV_PITCH_MAX_HZ (12 log2(420 / 60) = 33.7). */
#define HV_VOICE_PITCH_BINS   35
/* How far a frame's pitch spreads over the bins, in semitones either side
 * (a Gaussian of one semitone, cut where it is 3e-4) */
#define HV_VOICE_PITCH_SPREAD 4
/* The pitch histogram's length against the spectral part's, both unit
 * vectors before the signature is normalised: 0.5 separated the demo
 * diarize model's speakers best (docs/DIARIZE.md, rule 4). */
#define HV_VOICE_PITCH_WEIGHT 0.5

/* The signature's length for n_mels features: a mean and a standard
 * deviation per mel bin, and the pitch histogram. */
static inline int hv_voice_dim(int n_mels) { return 2 * n_mels + HV_VOICE_PITCH_BINS; }

/* The signature of the speaker of spans[n_spans] from logmel [n_frames x
 * n_mels] and f0 [n_frames] (hv_pitch_track's, or NULL: no pitch) (frame t
 * centred at t * frame_s seconds): the frames of its
 * spans ([floor(start / frame_s), floor(end / frame_s)), each frame once)
 * whose mean over the bins is at least the median of those frames' means
 * (its speech, not its pauses); of them the mean per bin less the mean of
 * those means (the level of the recording out) and the standard
 * deviation per bin (population); the 2 n_mels values less their average,
 * divided by their norm; then HV_VOICE_PITCH_BINS values: over those
 * frames that are voiced, exp(-(s - b)^2 / 2) for bin b within
 * HV_VOICE_PITCH_SPREAD of s = 12 log2(f0 / HV_PITCH_MIN_HZ), summed,
 * divided by their norm and times HV_VOICE_PITCH_WEIGHT (all 0 without a
 * voiced frame); the whole divided by its norm into
 * sig[hv_voice_dim(n_mels)] (a unit vector).
 * *seconds: the spans' frames in seconds. *has 0 (sig then holds
 * nothing of use) when those are under HV_VOICE_MIN_S or the vector is 0.
 * Only HV_ERR_NOMEM fails. */
hv_status hv_voice_signature(const float *logmel, const float *f0, int n_frames, int n_mels,
                             double frame_s, const hv_voice_span *spans, int n_spans, double *sig,
                             double *seconds, int *has, hv_error *e);

#endif
