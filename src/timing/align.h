/* Token times from the decoder's cross-attention over the encoder frames
 * (docs/TIMESTAMPS.md, "Method"). */
#ifndef HV_ALIGN_H
#define HV_ALIGN_H

#include <stdint.h>

#include "decoder.h"
#include "kernels/threads.h"
#include "util/error.h"

/* Which attention heads vote, how their weights are prepared, and how
 * much a pause weighs against a word. */
typedef struct hv_align_params {
    int first_layer;     /* heads of decoder layers >= first_layer vote */
    int median_width;    /* median filter over time, odd, 1 = none */
    float pause_penalty; /* subtracted from the similarity of a word's token
                            and a quiet frame (the similarity has unit
                            variance per token) */
} hv_align_params;

/* The defaults chosen by measurement (docs/TIMESTAMPS.md) for a decoder of
 * n_layers layers. */
hv_align_params hv_align_default_params(int n_layers);

/*
 * The cross-attention weights of the rows that predict tokens[0 .. n-1]
 * and then the EOS, in the decoder layers from first_layer on, from one
 * teacher-forced decoder pass over prompt + tokens on sequence 0 of dec
 * (which must have been begun on the chunk's encoder states; the pass
 * empties every sequence). On success *attn (caller frees) is
 * [layers - first_layer x heads x (n + 1) x enc_len]. n >= 1.
 */
hv_status hv_align_attention(hv_decoder *dec, const hv_engine *eng, const int32_t *prompt,
                             int n_prompt, const int32_t *tokens, int n, int first_layer,
                             float **attn, hv_error *e);

/*
 * Where each token begins, in encoder frames, from attn [layers x heads x
 * rows x T] of the voting layers (rows = n + 1, as hv_align_attention
 * gives it for ap->first_layer; every head in attn votes): bounds[i]
 * (i < n) is the frame at which token i starts, bounds[n] the frame at
 * which the transcript ends; non-decreasing, within [0, T). quiet[T]
 * (NULL: none known) marks the frames without sound, pause[rows] the rows
 * that may hold them (punctuation, the end); a word's row holding one
 * costs ap->pause_penalty, and a pause before the first token is free.
 */
hv_status hv_align_bounds(const float *attn, int layers, int heads, int rows, int T,
                          const uint8_t *quiet, const uint8_t *pause, const hv_align_params *ap,
                          double *bounds, hv_error *e);

/*
 * Dynamic time warping of a [rows x cols] similarity matrix (higher =
 * better match): the monotonic path from (0, 0) to (rows - 1, cols - 1)
 * with the largest summed similarity, moving one column, or one row and
 * one column, at a time (so that every row holds at least one column;
 * when there are more rows than columns, also one row alone).
 * first_optional: the path may also start at (1, 0), row 0 then holding
 * no column. first_col[r] receives the first column of row r on that path
 * (non-decreasing; 0 for a row it skips). D must hold (rows + 1) *
 * (cols + 1) floats, trace as many bytes.
 */
void hv_dtw(const float *sim, int rows, int cols, int first_optional, int *first_col, float *D,
            uint8_t *trace);

#endif
