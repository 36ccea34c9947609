#include "search.h"

#include <string.h>

#include "kernels/ops.h"

hv_status hv_search_greedy(hv_decoder *dec, hv_pool *pool,
                           const int32_t *prompt, int n_prompt, int max_new,
                           int32_t eos, int32_t *out, int *n_out,
                           float *first_logprobs, hv_error *e) {
    *n_out = 0;
    hv_status st = hv_decoder_forward(dec, pool, prompt, n_prompt, e);
    if (st) return st;
    if (first_logprobs)
        memcpy(first_logprobs, dec->logits, (size_t)dec->c->vocab_size * sizeof(float));
    for (int step = 0; step < max_new; step++) {
        int32_t tok = hv_argmax(dec->logits, dec->c->vocab_size);
        if (tok == eos) break;
        out[(*n_out)++] = tok;
        if (step + 1 == max_new) break; /* no forward pass for an unused step */
        if ((st = hv_decoder_forward(dec, pool, &tok, 1, e))) return st;
    }
    return HV_OK;
}
