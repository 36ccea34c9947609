/* Word boundaries moved to where the audio shows them (docs/TIMESTAMPS.md,
 * "Refinement"). */
#ifndef HV_REFINE_H
#define HV_REFINE_H

#include <stddef.h>
#include <stdint.h>

#include "timing/words.h"

/* The chunk's loudness, for refinement: its 10 ms frames' energy in dB
 * and the level that separates speech from the pauses between words. */
typedef struct hv_loudness {
    float *db;    /* [n] */
    int n;        /* frames */
    double frame; /* seconds per frame */
    float speech; /* a frame louder than this is sound */
    int usable;   /* 0: no clear pauses (noise, or speech throughout) */
} hv_loudness;

/* Measures x[len] at rate. 0, or -1 when out of memory. */
int hv_loudness_measure(hv_loudness *l, const float *x, size_t len, int rate);
void hv_loudness_free(hv_loudness *l);

/* quiet[f] = 1 for each of the T frames of `step` seconds (the encoder's)
 * in which less than a quarter of the audio is sound; all 0 when l is not
 * usable. */
void hv_loudness_quiet(const hv_loudness *l, double step, int T, uint8_t *quiet);

/* Moves the starts and ends of w[n] (seconds from the chunk's start, from
 * the alignment at a resolution of `step` seconds): a start in a pause
 * moves forward to the sound after it, an end in a pause back to the sound
 * before it, and a start just after a pause back to the pause's end; each
 * by at most `step` plus the pause. Keeps every start <= end and the words
 * in order. */
void hv_words_refine(hv_chunk_word *w, int n, const hv_loudness *l, double step);

#endif
