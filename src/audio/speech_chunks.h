/* A chunk plan as pieces of the input. Every chunking mode ends here: the
 * energy, fixed and one-piece plans give one piece per chunk; chunking from
 * speech (--chunking vad) groups the regions that the speech detector found
 * into chunks of at most the model's clip length, cut in the longest
 * pauses, and the pauses inside a chunk are not sent to the encoder (its
 * pieces are concatenated). docs/VAD.md, "Chunking from speech". */
#ifndef HV_SPEECH_CHUNKS_H
#define HV_SPEECH_CHUNKS_H

#include <stddef.h>

#include "util/error.h"

/* Of each pause between speech regions, the seconds sent to the encoder
 * with the speech (hv_speech_chunk_params.keep_pause): the demo model, for
 * one, ends its transcript at the first sentence when two follow each other
 * without a pause. */
#define HV_VAD_KEEP_PAUSE_S 1.0

/* A stretch of the input, [start, end) in samples at the model's rate. */
typedef struct hv_span {
    size_t start, end;
} hv_span;

/* Chunk i is pieces[first[i]] .. pieces[first[i + 1] - 1], sent to the
 * encoder back to back; its times on the input's timeline run from its
 * first piece's start to its last piece's end. */
typedef struct hv_piece_plan {
    hv_span *pieces; /* [n_pieces]: the audio sent to the encoder; in time
                        order and not overlapping within a chunk, and
                        across chunks but in an overlapping plan
                        (hv_piece_plan_overlap), whose neighbours share
                        the audio of their overlap */
    hv_span *speech; /* [n_pieces]: the speech within each piece (the piece
                        without the pause kept around it; the piece itself
                        for plans without speech detection) */
    int n_pieces;
    int *first; /* [n_chunks + 1] */
    int n_chunks;
} hv_piece_plan;

typedef struct hv_speech_chunk_params {
    size_t max_chunk;  /* most samples of speech in one chunk (the clip length) */
    size_t context;    /* a region longer than max_chunk is cut, as the energy
                         plan does, at the quietest window of its last
                         `context` samples ... */
    size_t window;     /* ... of windows this long */
    size_t max_gap;    /* a pause of at least this many samples always ends a
                         chunk (0: only max_chunk does) */
    size_t keep_pause; /* of each pause, up to this many samples are kept:
                          half at the end of the speech before it, half at
                          the start of the speech after it (likewise up to
                          half of it before the first region and after the
                          last), so the model hears speech start and end as
                          it was trained to */
} hv_speech_chunk_params;

/* Plans the chunks of the regions[n_regions] (sorted, not overlapping,
 * within [0, n)) of x[n]. No regions give no chunks. The plan is the
 * caller's; free it with hv_piece_plan_free. */
hv_status hv_piece_plan_from_speech(const float *x, size_t n, const hv_span *regions,
                                    size_t n_regions, const hv_speech_chunk_params *p,
                                    hv_piece_plan *out, hv_error *e);
void hv_piece_plan_free(hv_piece_plan *plan);

/* The plan of hv_chunk_plan's bounds[n_chunks + 1]: chunk i is the one piece
 * [bounds[i], bounds[i + 1]). */
hv_status hv_piece_plan_from_bounds(const size_t *bounds, int n_chunks, hv_piece_plan *out,
                                    hv_error *e);

/* The windows of core (a plan whose chunks do not overlap) widened into
 * their neighbours: window i is core chunk i with up to `reach` samples of
 * the end of chunk i - 1's audio before it and of the start of chunk
 * i + 1's after it (whole pieces while they fit, then the part of the next
 * piece that fills the reach), so neighbours overlap by up to 2 * reach
 * around the cut between their cores. cuts[n_chunks + 1] (the caller's)
 * gets the cuts on the input: cuts[0] 0, cuts[i] the middle of the pause
 * between core chunks i - 1 and i (their meeting point where they touch),
 * cuts[n_chunks] SIZE_MAX. */
hv_status hv_piece_plan_overlap(const hv_piece_plan *core, size_t reach, hv_piece_plan *out,
                                size_t *cuts, hv_error *e);

/* Where chunk i's speech begins and ends on the input's timeline (its
 * segment's times). */
hv_span hv_piece_plan_chunk_speech(const hv_piece_plan *plan, int i);

/* Samples of audio in chunk i: the sum of its pieces' lengths. */
size_t hv_piece_plan_chunk_samples(const hv_piece_plan *plan, int i);

/* The position on the original timeline of sample `pos` of chunk i's
 * concatenated pieces (pos == the chunk's length maps to the end of its
 * last piece). */
size_t hv_piece_plan_to_input(const hv_piece_plan *plan, int i, size_t pos);

#endif
