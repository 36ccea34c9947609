/* The words of a transcript: token pieces grouped at the word-start marker
 * (docs/TIMESTAMPS.md, "Words"). */
#ifndef HV_WORDS_H
#define HV_WORDS_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "util/error.h"

/* A word of one chunk. Times are seconds from the chunk's first sample (of
 * its pieces back to back), filled in by the alignment. */
typedef struct hv_chunk_word {
    int first, n_tokens; /* its tokens: the chunk's tokens[first ...] */
    double start, end;
    float probability; /* mean probability of its tokens */
    char *text;        /* owned; trimmed, never empty */
} hv_chunk_word;

/* Groups tokens[n] (with their log-probs) into words: a normal piece that
 * begins with U+2581 starts a word, every other printing piece (normal or
 * byte) continues the current one, pieces that print nothing (control,
 * user-defined, unknown, unused) belong to no word; a word made of closing
 * punctuation only joins the word before it, and a word whose text is
 * empty is dropped. *out (caller frees with hv_chunk_words_free) is
 * non-NULL even when *n_out is 0. */
hv_status hv_words_split(const hv_tokenizer *tok, const int32_t *tokens, const float *logprobs,
                         int n, hv_chunk_word **out, int *n_out, hv_error *e);

void hv_chunk_words_free(hv_chunk_word *w, int n);

/* Whether token id is no part of a word's sound: it prints nothing, or
 * only punctuation (a pause may follow it). */
int hv_token_is_silent(const hv_tokenizer *tok, int32_t id);

#endif
