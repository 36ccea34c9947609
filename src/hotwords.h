/* Contextual biasing (docs/DECODING.md "Hotwords"): the token sequences of
 * the hotwords in a trie with Aho-Corasick failure links, as sherpa-onnx's
 * context graph. A decoding hypothesis carries a state (a trie node); each
 * token it appends earns the bonus `score` while it extends a match, and a
 * match that fails before its phrase is complete gives back what it had
 * earned. A completed phrase keeps its bonus and matching starts afresh. */
#ifndef HV_HOTWORDS_H
#define HV_HOTWORDS_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "util/error.h"

typedef struct hv_hw_node {
    int32_t token;    /* the token that leads here (-1 at the root) */
    int first_child;  /* -1: none */
    int next_sibling; /* -1: none */
    int fail;         /* the longest proper suffix that is a trie node */
    int end;          /* a whole phrase ends here */
    float node_score; /* score x depth: what a match up to here has earned */
} hv_hw_node;

typedef struct hv_hotwords {
    hv_hw_node *nodes; /* [n_nodes], 0 is the root */
    int n_nodes;
    int n_phrases;
} hv_hotwords;

/* Splits text into phrases at commas and newlines (each trimmed; empty
 * ones skipped), encodes each with the tokenizer (docs/MODEL.md) and
 * builds the trie; score > 0 is the bonus per matched token. A phrase that
 * encodes to an unknown piece is refused (HV_ERR_INVALID_ARG, naming it),
 * as is text that is not UTF-8. A list without phrases gives n_phrases 0.
 * hv_hotwords_free releases it. */
hv_status hv_hotwords_build(hv_hotwords *h, const hv_tokenizer *t, const char *text, float score,
                            hv_error *e);
void hv_hotwords_free(hv_hotwords *h);

/* The state after appending tok in state s (*delta: the score change). */
int hv_hotwords_next(const hv_hotwords *h, int s, int32_t tok, float *delta);

/* Adds to row[V] the score change of each token from state s. */
void hv_hotwords_bias(const hv_hotwords *h, int s, float *row, int V);

#endif
