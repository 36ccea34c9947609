/* One chunk's decoding with the temperature fallback of OpenAI's whisper
 * and faster-whisper (docs/DECODING.md, "Temperature fallback"): each
 * attempt is one of the ordinary modes of search.c, so each stays
 * comparable with the reference on its own. */
#include "fallback.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

double hv_compression_ratio(const char *text) {
    size_t n = strlen(text);
    uLongf size = compressBound((uLong)n);
    Bytef *buf = malloc(size);
    if (!buf) return -1;
    int rc = compress(buf, &size, (const Bytef *)text, (uLong)n);
    free(buf);
    if (rc != Z_OK) return -1;
    return (double)n / (double)size;
}

/* A decoding's tokens and what it is judged by. */
typedef struct slot {
    int32_t *tokens; /* [max_new] */
    float *lps;      /* [max_new] */
    int n, eos;
    double score, sum;
    float temperature;
    double avg, ratio;
    char *text;
} slot;

static void swap_slots(slot *a, slot *b) {
    slot t = *a;
    *a = *b;
    *b = t;
}

/* How best_of draws compare: beam search's normalised score
 * (docs/DECODING.md), the EOS step counted in the length. */
static double draw_rank(const slot *s, float length_penalty) {
    int len = s->n + s->eos;
    return s->sum / pow(len > 1 ? len : 1, length_penalty);
}

hv_status hv_decode_chunk(hv_decoder *dec, const hv_engine *eng, const hv_tokenizer *tok,
                          const int32_t *prompt, int n_prompt, const hv_fallback_params *p,
                          hv_decoded *d, float *first_logprobs, hv_error *e) {
    const hv_search_params *base = &p->search;
    int M = base->max_new;
    slot s[3] = {{0}}; /* the draw being made, the attempt's best draw, the pick */
    slot *draw = &s[0], *att = &s[1], *pick = &s[2];
    hv_status st = HV_OK;
    int have_pick = 0, pick_below = 0, passed = 0;
    int32_t *out_tokens = d->out.tokens;
    float *out_lps = d->out.logprobs;
    memset(d, 0, sizeof *d);
    d->out.tokens = out_tokens;
    d->out.logprobs = out_lps;
    for (int i = 0; i < 3; i++) {
        s[i].tokens = malloc((size_t)M * sizeof *s[i].tokens);
        s[i].lps = malloc((size_t)M * sizeof *s[i].lps);
        if (!s[i].tokens || !s[i].lps) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory for decoding");
            goto done;
        }
    }
    for (int k = 0; k < p->n_temperatures && !passed; k++) {
        float t = p->temperatures[k];
        int draws = t > 0 ? p->best_of : 1;
        free(att->text);
        att->text = NULL;
        for (int j = 0; j < draws; j++) {
            hv_search_params sp = *base;
            sp.do_sample = t > 0;
            sp.temperature = t > 0 ? t : 1.0f;
            sp.num_beams = t > 0 ? 1 : base->num_beams;
            sp.seed = base->seed + (uint64_t)j;
            hv_search_out o = {.tokens = draw->tokens, .logprobs = draw->lps};
            st = hv_search(dec, eng, prompt, n_prompt, &sp, &o,
                           k == 0 && j == 0 ? first_logprobs : NULL, e);
            d->out.prefill_ms += o.prefill_ms;
            d->out.steps_ms += o.steps_ms;
            d->out.n_steps += o.n_steps;
            d->attempts++;
            if (st) goto done;
            draw->n = o.n;
            draw->eos = o.eos;
            draw->score = o.score;
            draw->sum = o.sum;
            if (j == 0 ||
                draw_rank(draw, base->length_penalty) > draw_rank(att, base->length_penalty))
                swap_slots(draw, att);
        }
        att->temperature = t;
        att->avg = att->sum / (att->n + 1);
        if (!(att->text = hv_tokenizer_decode(tok, att->tokens, att->n)) ||
            (att->ratio = hv_compression_ratio(att->text)) < 0) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory for decoding");
            goto done;
        }
        double crt = p->compression_ratio_threshold, lpt = p->log_prob_threshold;
        double nst = p->no_speech_threshold, nsp = p->no_speech_prob;
        int failed = (!isnan(crt) && att->ratio > crt) || (!isnan(lpt) && att->avg < lpt);
        if (!isnan(nst) && !isnan(nsp) && nsp > nst && !isnan(lpt) && att->avg < lpt)
            failed = 0; /* silence: another temperature would not help */
        if (!failed) {
            passed = 1;
            break;
        }
        /* every attempt failing, the one kept has the best avg_logprob of
         * those within the compression ratio, else of all (the earliest
         * on ties) */
        int below = !isnan(crt) && att->ratio <= crt;
        if (!have_pick || (below && !pick_below) || (below == pick_below && att->avg > pick->avg)) {
            swap_slots(att, pick);
            have_pick = 1;
            pick_below = below;
        }
    }
    const slot *kept = passed ? att : pick;
    memcpy(d->out.tokens, kept->tokens, (size_t)kept->n * sizeof *kept->tokens);
    memcpy(d->out.logprobs, kept->lps, (size_t)kept->n * sizeof *kept->lps);
    d->out.n = kept->n;
    d->out.eos = kept->eos;
    d->out.score = kept->score;
    d->out.sum = kept->sum;
    d->temperature = kept->temperature;
    d->avg_logprob = kept->avg;
    d->compression_ratio = kept->ratio;
    d->text = kept->text;
    if (passed)
        att->text = NULL;
    else
        pick->text = NULL;
    d->silent = !isnan(p->no_speech_threshold) && !isnan(p->no_speech_prob) &&
                p->no_speech_prob > p->no_speech_threshold &&
                (isnan(p->log_prob_threshold) || d->avg_logprob <= p->log_prob_threshold);
done:
    for (int i = 0; i < 3; i++) {
        free(s[i].tokens);
        free(s[i].lps);
        free(s[i].text);
    }
    return st;
}
