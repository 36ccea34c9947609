/* The decoding of one chunk: a decoding mode, or the temperature fallback
 * over several (docs/DECODING.md, "Temperature fallback"), judged by the
 * compression ratio and average log-prob of each result. */
#ifndef HV_FALLBACK_H
#define HV_FALLBACK_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "search.h"

typedef struct hv_fallback_params {
    hv_search_params search;   /* max_new, eos, num_beams, length_penalty,
                                  top_k, top_p, seed, abort; do_sample and
                                  temperature are set per attempt */
    const float *temperatures; /* [n_temperatures] >= 1 of them, each >= 0:
                                  0 greedy (beam search with num_beams > 1),
                                  > 0 sampling at it */
    int n_temperatures;
    int best_of; /* sampling: draws per attempt, seeds seed, seed + 1, ... */
    /* NAN: the rule is off */
    double compression_ratio_threshold; /* an attempt fails above it */
    double log_prob_threshold;          /* ... or with avg_logprob below it */
    double no_speech_threshold;         /* with no_speech_prob above it, a
                                           low avg_logprob means silence */
    double no_speech_prob;              /* the chunk's; NAN: unknown */
} hv_fallback_params;

/* The decoding kept. tokens and logprobs are caller arrays of
 * search.max_new, as in hv_search_out. */
typedef struct hv_decoded {
    hv_search_out out;
    float temperature;        /* of the attempt kept */
    double avg_logprob;       /* out.sum / (out.n + 1) */
    double compression_ratio; /* of text */
    char *text;               /* hv_tokenizer_decode of the tokens (owned:
                                 the caller frees it) */
    int attempts;             /* decodings run (each best_of draw counts) */
    int silent;               /* the silence rule holds: no segment */
} hv_decoded;

/* Bytes of text over the bytes zlib's compress() (default level) makes of
 * them, as Python's len(b) / len(zlib.compress(b)); 0 for an empty text.
 * -1 when out of memory. */
double hv_compression_ratio(const char *text);

/* Decodes the utterance begun in dec (with at least max(1, num_beams)
 * sequences) as p says, into d; first_logprobs as for hv_search (of the
 * first attempt). Timings in d->out add up every attempt's. */
hv_status hv_decode_chunk(hv_decoder *dec, const hv_engine *eng, const hv_tokenizer *tok,
                          const int32_t *prompt, int n_prompt, const hv_fallback_params *p,
                          hv_decoded *d, float *first_logprobs, hv_error *e);

#endif
