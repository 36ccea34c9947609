/* hv_speech: the detector's reading of one input, taken by a transcription
 * of the same input instead of running the detector again. */
#ifndef HV_AUDIO_SPEECH_H
#define HV_AUDIO_SPEECH_H

#include <stdint.h>

#include "audio/vad.h"

struct hv_speech {
    const hv_vad *vad;         /* the detector that read it */
    hv_vad_params params;      /* with these settings */
    size_t n;                  /* mono samples at the detector's rate */
    uint64_t hash;             /* of those samples */
    float *probs;              /* [n_probs], as hv_vad_level_probs gives them */
    size_t n_probs;            /* hv_vad_n_windows(vad, n) */
    hv_speech_region *regions; /* [n_regions], as hv_vad_detect gives them */
    size_t n_regions;
};

/* HV_OK when s was read by vad with params from exactly x[n] (mono, at the
 * detector's rate); else HV_ERR_INVALID_ARG saying which differs. */
hv_status hv_speech_check(const hv_speech *s, const hv_vad *vad, const hv_vad_params *params,
                          const float *x, size_t n, hv_error *e);

#endif
