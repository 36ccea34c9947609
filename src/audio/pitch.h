/* The pitch of each frame of a recording, for diarize's voice signatures
 * (timing/voice.h): a speaker's voice is as much its pitch as its spectrum,
 * and the mean log-mel blurs the harmonics that carry it. Autocorrelation
 * of 40 ms frames at 4 kHz, normalised by the window's own autocorrelation
 * (Boersma 1993). Tested on tones and noise (tests/unit/test_pitch.c). */
#ifndef HV_PITCH_H
#define HV_PITCH_H

#include <stddef.h>

#include "kernels/threads.h"
#include "util/error.h"

#define HV_PITCH_MIN_HZ      60   /* the lowest pitch looked for */
#define HV_PITCH_MAX_HZ      420  /* and the highest */
#define HV_PITCH_VOICED      0.45 /* the normalised autocorrelation a voiced frame reaches */
#define HV_PITCH_OCTAVE_COST 0.02 /* what a lag an octave shorter wins by (Praat: 0.01) */
#define HV_PITCH_RATE        4000 /* the track's sample rate: harmonics to 1.8 kHz */
#define HV_PITCH_FRAME       160  /* samples at HV_PITCH_RATE: 40 ms, two periods at 60 Hz */

/* f0[t] for t < n_frames: the pitch in Hz (HV_PITCH_MIN_HZ ..
 * HV_PITCH_MAX_HZ, within half a lag) of the frame centred at sample
 * t * hop of samples[n] (sample_rate Hz, mono), or 0 where the frame is
 * unvoiced (its autocorrelation peak under HV_PITCH_VOICED) or silent.
 * Samples outside the recording count as zero. The frames are spread
 * over pool's threads (NULL: the caller's alone); the track is the same
 * either way. Fails only for memory or a sample_rate or hop that is not
 * positive. */
hv_status hv_pitch_track(const float *samples, size_t n, int sample_rate, int hop, int n_frames,
                         hv_pool *pool, float *f0, hv_error *e);

#endif
