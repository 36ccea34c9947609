/* Token pieces into words (see words.h). */
#include "timing/words.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WORD_START "\xE2\x96\x81" /* U+2581, SentencePiece's space */

/* Whether piece id prints text: what hv_tokenizer_decode keeps. */
static int prints(const hv_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_pieces) return 0;
    return t->types[id] == HV_PIECE_NORMAL || t->types[id] == HV_PIECE_BYTE;
}

static int starts_word(const hv_tokenizer *t, int32_t id) {
    return t->types[id] == HV_PIECE_NORMAL &&
           strncmp(t->pieces[id], WORD_START, sizeof WORD_START - 1) == 0;
}

/* Whether text is closing punctuation only (". , ! ? : ; ) ] } » \" ' …"),
 * which reads as the end of the word before it. */
static int closing_punct(const char *s) {
    static const char *const marks[] = {".",
                                        ",",
                                        "!",
                                        "?",
                                        ":",
                                        ";",
                                        ")",
                                        "]",
                                        "}",
                                        "\"",
                                        "'",
                                        "\xC2\xBB" /* » */,
                                        "\xE2\x80\xA6" /* … */,
                                        "\xE2\x80\x9D" /* ” */,
                                        "\xE2\x80\x99" /* ’ */};
    if (!*s) return 0;
    while (*s) {
        size_t k = 0;
        for (size_t i = 0; i < sizeof marks / sizeof *marks && !k; i++)
            if (!strncmp(s, marks[i], strlen(marks[i]))) k = strlen(marks[i]);
        if (!k) return 0;
        s += k;
    }
    return 1;
}

int hv_token_is_silent(const hv_tokenizer *t, int32_t id) {
    if (!prints(t, id)) return 1;
    if (t->types[id] != HV_PIECE_NORMAL) return 0;
    const char *p = t->pieces[id];
    if (!strncmp(p, WORD_START, sizeof WORD_START - 1)) p += sizeof WORD_START - 1;
    return closing_punct(p);
}

void hv_chunk_words_free(hv_chunk_word *w, int n) {
    if (!w) return;
    for (int i = 0; i < n; i++) free(w[i].text);
    free(w);
}

hv_status hv_words_split(const hv_tokenizer *tok, const int32_t *tokens, const float *logprobs,
                         int n, hv_chunk_word **out, int *n_out, hv_error *e) {
    hv_chunk_word *w = calloc((size_t)(n > 0 ? n : 1), sizeof *w);
    int nw = 0;
    *out = NULL;
    *n_out = 0;
    if (!w) return hv_err(e, HV_ERR_NOMEM, "out of memory for words");
    /* spans first: [first, last printing token] per word */
    for (int i = 0; i < n; i++) {
        if (!prints(tok, tokens[i])) continue;
        if (nw == 0 || starts_word(tok, tokens[i])) w[nw++] = (hv_chunk_word){.first = i};
        w[nw - 1].n_tokens = i - w[nw - 1].first + 1;
    }
    int kept = 0;
    for (int k = 0; k < nw; k++) {
        hv_chunk_word *x = &w[k];
        x->text = hv_tokenizer_decode(tok, tokens + x->first, x->n_tokens);
        if (!x->text) {
            hv_chunk_words_free(w, k);
            return hv_err(e, HV_ERR_NOMEM, "out of memory for words");
        }
        if (!*x->text) { /* prints only spaces: no word */
            free(x->text);
            continue;
        }
        if (kept > 0 && closing_punct(x->text)) {
            hv_chunk_word *p = &w[kept - 1];
            size_t a = strlen(p->text), b = strlen(x->text);
            char *t = realloc(p->text, a + b + 1);
            if (!t) {
                free(x->text);
                hv_chunk_words_free(w, kept);
                return hv_err(e, HV_ERR_NOMEM, "out of memory for words");
            }
            memcpy(t + a, x->text, b + 1);
            p->text = t;
            p->n_tokens = x->first + x->n_tokens - p->first;
            free(x->text);
            continue;
        }
        w[kept++] = *x;
    }
    /* probabilities: the mean over the word's printing tokens */
    for (int k = 0; k < kept; k++) {
        double sum = 0;
        int cnt = 0;
        for (int i = w[k].first; i < w[k].first + w[k].n_tokens; i++)
            if (prints(tok, tokens[i])) {
                sum += exp((double)logprobs[i]);
                cnt++;
            }
        w[k].probability = cnt ? (float)(sum / cnt) : 0.0f;
    }
    *out = w;
    *n_out = kept;
    return HV_OK;
}
