/* Decoding strategies on top of the decoder. */
#ifndef HV_SEARCH_H
#define HV_SEARCH_H

#include <stdint.h>

#include "decoder.h"

/* Greedy decoding: prefill the prompt, then take the argmax each step until
 * eos (not stored) or max_new tokens. out has room for max_new ids.
 * first_logprobs, when not NULL, receives the log-probs of the first step
 * ([vocab]). */
hv_status hv_search_greedy(hv_decoder *dec, hv_pool *pool,
                           const int32_t *prompt, int n_prompt, int max_new,
                           int32_t eos, int32_t *out, int *n_out,
                           float *first_logprobs, hv_error *e);

#endif
