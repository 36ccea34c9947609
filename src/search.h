/* Decoding strategies on top of the decoder (docs/DECODING.md). */
#ifndef HV_SEARCH_H
#define HV_SEARCH_H

#include <stdint.h>

#include "decoder.h"
#include "hotwords.h"

typedef struct hv_search_params {
    int max_new; /* >= 1 generated tokens at most */
    int32_t eos;
    int num_beams;        /* 1 = greedy or sampling */
    float length_penalty; /* beam search */
    int do_sample;
    float temperature;
    int top_k;
    float top_p;
    uint64_t seed;
    /* transformers' logits processors (docs/DECODING.md): over the decoder
     * ids, prompt included; greedy decoding and sampling process the raw
     * logits, beam search the log-probs and ranks by their processed sum */
    float repetition_penalty;    /* 0 or 1: off */
    int no_repeat_ngram_size;    /* 0: off */
    const hv_hotwords *hotwords; /* contextual biasing; NULL or no phrases: off */
    int (*abort)(void *user);    /* asked before each step; NULL: never */
    void *abort_user;
} hv_search_params;

/* The chosen sequence. tokens and logprobs are caller arrays of max_new. */
typedef struct hv_search_out {
    int32_t *tokens;
    float *logprobs;
    int n;
    double score;      /* docs/DECODING.md: the sum (greedy, sampling), or the
                          normalised sum of the processed scores (beam
                          search; the log-probs' when nothing is processed) */
    double sum;        /* the summed log-probs of the tokens, and of EOS when it
                          ended the sequence */
    int eos;           /* 1 when EOS ended the sequence (its step counts in the
                          length), 0 when max_new did */
    double prefill_ms; /* the prompt pass */
    double steps_ms;   /* every later pass */
    int n_steps;
} hv_search_out;

/* Decodes after the prompt, from empty sequences (those of an earlier
 * search on the same utterance are emptied first); HV_ERR_CANCELLED when
 * p->abort says so. first_logprobs, when not NULL, receives the log-probs
 * of the first step ([vocab]). The decoder must have been begun with at
 * least num_beams sequences. */
hv_status hv_search(hv_decoder *dec, const hv_engine *eng, const int32_t *prompt, int n_prompt,
                    const hv_search_params *p, hv_search_out *out, float *first_logprobs,
                    hv_error *e);

#endif
