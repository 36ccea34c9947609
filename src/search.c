/* Greedy decoding, sampling and beam search, exactly as docs/DECODING.md
 * states the rules (the PyTorch reference implements the same). */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/ops.h"
#include "sampling.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whether the caller asked to stop; then the status and message. */
static hv_status aborted(const hv_search_params *p, hv_error *e) {
    if (p->abort && p->abort(p->abort_user))
        return hv_err(e, HV_ERR_CANCELLED, "transcription cancelled");
    return HV_OK;
}

/* One decoder pass after the prompt, timed into out. */
static hv_status timed_pass(hv_decoder *dec, const hv_engine *eng, const int *seqs, int n_seq,
                            const int32_t *tokens, hv_search_out *out, hv_error *e) {
    double t0 = now_ms();
    hv_status st = hv_decoder_forward(dec, eng, seqs, n_seq, tokens, 1, e);
    out->steps_ms += now_ms() - t0;
    out->n_steps++;
    return st;
}

/* ---------------------------------------------------- logits processing */

/* How a step's scores are processed before a token is chosen:
 * transformers' RepetitionPenaltyLogitsProcessor and
 * NoRepeatNGramLogitsProcessor over the decoder ids (the prompt, then the
 * sequence's tokens), then the hotwords' bias. */
typedef struct proc {
    const hv_search_params *p;
    const int32_t *prompt;
    int n_prompt;
    int on;       /* anything to do */
    int32_t *ids; /* [n_prompt + max_new] the decoder ids */
    float *row;   /* [V] the processed scores */
} proc;

static int rep_penalty_on(const hv_search_params *p) {
    return p->repetition_penalty > 0 && p->repetition_penalty != 1.0f;
}

static int proc_init(proc *c, const hv_search_params *p, const int32_t *prompt, int n_prompt,
                     int V) {
    memset(c, 0, sizeof *c);
    c->p = p;
    c->prompt = prompt;
    c->n_prompt = n_prompt;
    c->on = rep_penalty_on(p) || p->no_repeat_ngram_size > 0 ||
            (p->hotwords && p->hotwords->n_phrases > 0);
    if (!c->on) return 0;
    c->ids = malloc((size_t)(n_prompt + p->max_new) * sizeof *c->ids);
    c->row = malloc((size_t)V * sizeof *c->row);
    return c->ids && c->row ? 0 : -1;
}

static void proc_free(proc *c) {
    free(c->ids);
    free(c->row);
}

/* The scores to choose the next token of a sequence of tokens hist[n] in
 * hotword state hw by: src itself when nothing is asked for, else c->row. */
static const float *process(proc *c, const float *src, int V, const int32_t *hist, int n, int hw) {
    if (!c->on) return src;
    const hv_search_params *p = c->p;
    int L = c->n_prompt + n;
    memcpy(c->ids, c->prompt, (size_t)c->n_prompt * sizeof *c->ids);
    memcpy(c->ids + c->n_prompt, hist, (size_t)n * sizeof *c->ids);
    memcpy(c->row, src, (size_t)V * sizeof *c->row);
    if (rep_penalty_on(p)) /* from src: a repeated id is penalised once */
        for (int i = 0; i < L; i++) {
            float x = src[c->ids[i]];
            c->row[c->ids[i]] = x < 0 ? x * p->repetition_penalty : x / p->repetition_penalty;
        }
    int g = p->no_repeat_ngram_size;
    if (g > 0 && L >= g) { /* ban what would repeat an n-gram */
        const int32_t *suffix = c->ids + L - (g - 1);
        for (int i = 0; i + g <= L; i++)
            if (!memcmp(c->ids + i, suffix, (size_t)(g - 1) * sizeof *suffix))
                c->row[c->ids[i + g - 1]] = -INFINITY;
    }
    if (p->hotwords && p->hotwords->n_phrases > 0) hv_hotwords_bias(p->hotwords, hw, c->row, V);
    return c->row;
}

/* The hotword state after tok. */
static int hw_next(const hv_search_params *p, int hw, int32_t tok) {
    float d;
    return p->hotwords && p->hotwords->n_phrases > 0 ? hv_hotwords_next(p->hotwords, hw, tok, &d)
                                                     : 0;
}

/* ------------------------------------------------ greedy and sampling */

static hv_status search_single(hv_decoder *dec, const hv_engine *eng, const hv_search_params *p,
                               proc *pc, hv_search_out *out, hv_error *e) {
    int V = dec->c->vocab_size, seq = 0, hw = 0;
    hv_sample_cand *cand = NULL;
    hv_rng rng;
    hv_sampler sp = {.temperature = p->temperature, .top_k = p->top_k, .top_p = p->top_p};
    hv_status st = HV_OK;
    if (p->do_sample) {
        hv_rng_seed(&rng, p->seed);
        if (!(cand = malloc((size_t)V * sizeof *cand)))
            return hv_err(e, HV_ERR_NOMEM, "out of memory for sampling");
    }
    for (int step = 0; step < p->max_new; step++) {
        if ((st = aborted(p, e))) break;
        const float *lp = dec->logits;
        const float *sc =
            process(pc, dec->raw_logits ? dec->raw_logits : lp, V, out->tokens, out->n, hw);
        int32_t tok = p->do_sample ? hv_sample(sc, V, &sp, &rng, cand, NULL) : hv_argmax(sc, V);
        hw = hw_next(p, hw, tok);
        out->score += lp[tok];
        if (tok == p->eos) {
            out->eos = 1;
            break;
        }
        out->tokens[out->n] = tok;
        out->logprobs[out->n++] = lp[tok];
        if (step + 1 == p->max_new) break; /* no pass for an unused step */
        if ((st = timed_pass(dec, eng, &seq, 1, &tok, out, e))) break;
    }
    free(cand);
    out->sum = out->score;
    return st;
}

/* --------------------------------------------------------- beam search */

typedef struct hyp {
    int32_t *tokens; /* [max_new] */
    float *lps;      /* [max_new] */
    int len;         /* tokens, EOS excluded */
    int eos;         /* finished by EOS */
    double sum;      /* summed log-probs (EOS included when finished by it) */
    double total;    /* the same of the processed scores, which rank */
    int hw;          /* hotword state */
    double norm;     /* total / max(1, length)^length_penalty */
    long order;      /* when it was added, for ties */
} hyp;

typedef struct cand {
    double score;
    int beam;
    int32_t tok;
    float inc; /* the processed score of tok */
} cand;

static int by_score_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->tok != y->tok) return x->tok < y->tok ? -1 : 1;
    return x->beam - y->beam;
}

static double normalise(double sum, int len, float lp) { return sum / pow(len > 1 ? len : 1, lp); }

typedef struct beam_state {
    int N, max_new;
    float length_penalty;
    const hv_search_params *p;
    hyp *live, *next, *fin; /* N each */
    int n_live, n_next, n_fin;
    long added;
    cand *cands;          /* [N * 2N] */
    int32_t *step_tokens; /* [N] */
    int *parents;         /* [N] */
} beam_state;

static int hyps_alloc(hyp *h, int n, int max_new) {
    for (int i = 0; i < n; i++) {
        h[i].tokens = malloc((size_t)max_new * sizeof(int32_t));
        h[i].lps = malloc((size_t)max_new * sizeof(float));
        if (!h[i].tokens || !h[i].lps) return -1;
    }
    return 0;
}

static void hyps_free(hyp *h, int n) {
    for (int i = 0; h && i < n; i++) {
        free(h[i].tokens);
        free(h[i].lps);
    }
    free(h);
}

/* Copies src's tokens into dst and appends tok (when tok >= 0) with its
 * log-prob lp and processed score inc. */
static void hyp_extend(const beam_state *b, hyp *dst, const hyp *src, int32_t tok, float lp,
                       float inc) {
    memcpy(dst->tokens, src->tokens, (size_t)src->len * sizeof(int32_t));
    memcpy(dst->lps, src->lps, (size_t)src->len * sizeof(float));
    dst->len = src->len;
    dst->sum = src->sum + lp;
    dst->total = src->total + inc;
    dst->hw = tok >= 0 ? hw_next(b->p, src->hw, tok) : src->hw;
    if (tok >= 0) {
        dst->tokens[dst->len] = tok;
        dst->lps[dst->len++] = lp;
    }
}

/* Adds src (plus tok, or only lp's score when tok < 0: the EOS step) as a
 * finished hypothesis, keeping the best N by normalised score; the worst
 * (earliest added among equals) drops out. */
static void add_finished(beam_state *b, const hyp *src, int32_t tok, float lp, float inc,
                         int length) {
    double norm = normalise(src->total + inc, length, b->length_penalty);
    int slot;
    if (b->n_fin < b->N) {
        slot = b->n_fin++;
    } else {
        slot = 0;
        for (int i = 1; i < b->n_fin; i++) {
            const hyp *w = &b->fin[slot], *h = &b->fin[i];
            if (h->norm < w->norm || (h->norm == w->norm && h->order < w->order)) slot = i;
        }
        if (!(norm > b->fin[slot].norm)) return;
    }
    hyp *d = &b->fin[slot];
    hyp_extend(b, d, src, tok, lp, inc);
    d->eos = length > d->len;
    d->norm = norm;
    d->order = b->added++;
}

/* The 2N best tokens of one beam's log-probs (ties: lower id first). */
static int top_tokens(const float *lp, int V, int k, int32_t *ids) {
    int n = 0;
    for (int t = 0; t < V; t++) {
        if (n == k && lp[t] <= lp[ids[n - 1]]) continue;
        int i = n < k ? n++ : k - 1;
        while (i > 0 && lp[ids[i - 1]] < lp[t]) {
            ids[i] = ids[i - 1];
            i--;
        }
        ids[i] = t;
    }
    return n;
}

static void beam_free(beam_state *b) {
    hyps_free(b->live, b->N);
    hyps_free(b->next, b->N);
    hyps_free(b->fin, b->N);
    free(b->cands);
    free(b->step_tokens);
    free(b->parents);
}

static hv_status search_beams(hv_decoder *dec, const hv_engine *eng, const hv_search_params *p,
                              proc *pc, hv_search_out *out, hv_error *e) {
    int V = dec->c->vocab_size, N = p->num_beams, K = 2 * N;
    beam_state b = {.N = N, .max_new = p->max_new, .length_penalty = p->length_penalty, .p = p};
    b.live = calloc((size_t)N, sizeof(hyp));
    b.next = calloc((size_t)N, sizeof(hyp));
    b.fin = calloc((size_t)N, sizeof(hyp));
    b.cands = malloc((size_t)N * K * sizeof(cand));
    b.step_tokens = malloc((size_t)N * sizeof(int32_t));
    b.parents = malloc((size_t)N * sizeof(int));
    int32_t *ids = malloc((size_t)K * sizeof(int32_t));
    int seqs[HV_MAX_BEAMS];
    hv_status st = HV_OK;
    if (!b.live || !b.next || !b.fin || !b.cands || !b.step_tokens || !b.parents || !ids ||
        hyps_alloc(b.live, N, p->max_new) || hyps_alloc(b.next, N, p->max_new) ||
        hyps_alloc(b.fin, N, p->max_new)) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for beam search");
        goto done;
    }
    for (int i = 0; i < N; i++) seqs[i] = i;
    b.n_live = 1; /* the prompt, already in sequence 0 */

    for (int step = 0; step < p->max_new; step++) {
        if ((st = aborted(p, e))) goto done;
        /* every live beam proposes its 2N best tokens */
        int nc = 0;
        for (int i = 0; i < b.n_live; i++) {
            const hyp *h = &b.live[i];
            const float *sc = process(pc, dec->logits + (long)i * V, V, h->tokens, h->len, h->hw);
            int n = top_tokens(sc, V, K, ids);
            for (int k = 0; k < n; k++)
                b.cands[nc++] = (cand){h->total + sc[ids[k]], i, ids[k], sc[ids[k]]};
        }
        qsort(b.cands, (size_t)nc, sizeof *b.cands, by_score_desc);

        b.n_next = 0;
        for (int r = 0; r < nc && b.n_next < N; r++) {
            const cand *c = &b.cands[r];
            const hyp *parent = &b.live[c->beam];
            float lp = dec->logits[(long)c->beam * V + c->tok];
            if (c->tok == p->eos) {
                if (r < N) add_finished(&b, parent, -1, lp, c->inc, step + 1);
                continue;
            }
            hyp_extend(&b, &b.next[b.n_next], parent, c->tok, lp, c->inc);
            b.parents[b.n_next] = c->beam;
            b.step_tokens[b.n_next++] = c->tok;
        }
        if (step == p->max_new - 1) {
            for (int i = 0; i < b.n_next; i++)
                add_finished(&b, &b.next[i], -1, 0.0f, 0.0f, step + 1);
            b.n_live = 0;
            break;
        }
        if (b.n_next == 0) {
            b.n_live = 0;
            break;
        }
        if (b.n_fin == N) {
            double worst = b.fin[0].norm, best = b.next[0].total;
            for (int i = 1; i < N; i++)
                if (b.fin[i].norm < worst) worst = b.fin[i].norm;
            for (int i = 1; i < b.n_next; i++)
                if (b.next[i].total > best) best = b.next[i].total;
            if (worst >= normalise(best, step + 1, p->length_penalty)) {
                hyp *t = b.live;
                b.live = b.next;
                b.next = t;
                b.n_live = b.n_next;
                break;
            }
        }
        /* the survivors become the live beams, as one decoder batch */
        hyp *t = b.live;
        b.live = b.next;
        b.next = t;
        b.n_live = b.n_next;
        if ((st = hv_decoder_reorder(dec, b.parents, b.n_live, e)) ||
            (st = timed_pass(dec, eng, seqs, b.n_live, b.step_tokens, out, e)))
            goto done;
    }

    /* the best finished hypothesis (first added on ties), else the best
     * live beam */
    const hyp *best = NULL;
    double best_norm = 0;
    for (int i = 0; i < b.n_fin; i++)
        if (!best || b.fin[i].norm > best_norm ||
            (b.fin[i].norm == best_norm && b.fin[i].order < best->order)) {
            best = &b.fin[i];
            best_norm = b.fin[i].norm;
        }
    for (int i = 0; !b.n_fin && i < b.n_live; i++) {
        double nrm = normalise(b.live[i].total, b.live[i].len, p->length_penalty);
        if (!best || nrm > best_norm) {
            best = &b.live[i];
            best_norm = nrm;
        }
    }
    if (best) {
        memcpy(out->tokens, best->tokens, (size_t)best->len * sizeof(int32_t));
        memcpy(out->logprobs, best->lps, (size_t)best->len * sizeof(float));
        out->n = best->len;
        out->score = best_norm;
        out->sum = best->sum;
        out->eos = b.n_fin ? best->eos : 0;
    }
done:
    free(ids);
    beam_free(&b);
    return st;
}

/* The prompt pass, then the decoding mode asked for. */
static hv_status run_search(hv_decoder *dec, const hv_engine *eng, const int32_t *prompt,
                            int n_prompt, const hv_search_params *p, proc *pc, hv_search_out *out,
                            float *first_logprobs, hv_error *e) {
    int seq = 0;
    double t0 = now_ms();
    hv_status st = hv_decoder_reorder(dec, NULL, 0, e);
    if (!st) st = hv_decoder_forward(dec, eng, &seq, 1, prompt, n_prompt, e);
    out->prefill_ms = now_ms() - t0;
    if (st) return st;
    /* Broken weights (NaN, a negative variance, overflow) give non-finite
     * log-probs, which would decode to an empty text: refuse them. One
     * pass over [vocab] floats per chunk. */
    for (int v = 0; v < dec->c->vocab_size; v++)
        if (!isfinite(dec->logits[v]))
            return hv_err(e, HV_ERR_FORMAT,
                          "decoder: the first-step log-prob of token %d is %s (the model's "
                          "weights give non-finite values)",
                          v, isnan(dec->logits[v]) ? "NaN" : "infinite");
    if (first_logprobs)
        memcpy(first_logprobs, dec->logits, (size_t)dec->c->vocab_size * sizeof(float));
    return p->num_beams > 1 ? search_beams(dec, eng, p, pc, out, e)
                            : search_single(dec, eng, p, pc, out, e);
}

hv_status hv_search(hv_decoder *dec, const hv_engine *eng, const int32_t *prompt, int n_prompt,
                    const hv_search_params *p, hv_search_out *out, float *first_logprobs,
                    hv_error *e) {
    out->n = 0;
    out->score = out->sum = 0;
    out->eos = 0;
    out->prefill_ms = out->steps_ms = 0;
    out->n_steps = 0;
    if (p->num_beams > HV_MAX_BEAMS)
        return hv_err(e, HV_ERR_INVALID_ARG, "num_beams %d: at most %d", p->num_beams,
                      HV_MAX_BEAMS);
    int V = dec->c->vocab_size;
    proc pc;
    if (proc_init(&pc, p, prompt, n_prompt, V)) {
        proc_free(&pc);
        return hv_err(e, HV_ERR_NOMEM, "out of memory for decoding");
    }
    /* transformers penalises raw logits when it does not search beams */
    float *raw = NULL;
    if (rep_penalty_on(p) && p->num_beams == 1 && !(raw = malloc((size_t)V * sizeof *raw))) {
        proc_free(&pc);
        return hv_err(e, HV_ERR_NOMEM, "out of memory for decoding");
    }
    dec->raw_logits = raw;
    hv_status st = run_search(dec, eng, prompt, n_prompt, p, &pc, out, first_logprobs, e);
    dec->raw_logits = NULL;
    free(raw);
    proc_free(&pc);
    return st;
}
