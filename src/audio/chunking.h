/* Cutting long audio into chunks the model can take (docs/MODEL.md "Long
 * audio"): near each chunk limit, at the quietest window. */
#ifndef HV_CHUNKING_H
#define HV_CHUNKING_H

#include <stddef.h>

#include "util/error.h"

/* What hv_chunk_plan cuts by: the mode and its sizes, in samples. */
typedef struct hv_chunk_plan_params {
    hv_chunking mode; /* AUTO: one piece up to `single`, else as ENERGY;
                             ENERGY: cut at the quietest window near each
                             limit; FIXED: every `fixed`; NONE: one piece */
    size_t chunk;     /* round(max_audio_clip_s * sr) */
    size_t context;   /* round(overlap_chunk_second * sr) */
    size_t window;    /* min_energy_window_samples */
    size_t single;    /* auto: audio up to this many samples is one piece */
    size_t fixed;     /* fixed mode: samples per chunk, > 0 */
} hv_chunk_plan_params;

/* Plans the chunks of x[n]: *bounds is malloc'ed with *n_chunks + 1
 * sample positions, chunk i being [bounds[i], bounds[i+1]). n == 0 gives
 * no chunks. */
hv_status hv_chunk_plan(const float *x, size_t n, const hv_chunk_plan_params *p, size_t **bounds,
                        int *n_chunks, hv_error *e);

#endif
