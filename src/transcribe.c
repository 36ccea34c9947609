/* The public API: model loading, contexts, and the transcription pipeline
 * samples -> features -> encoder states -> tokens -> text. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "audio/chunking.h"
#include "audio/pitch.h"
#include "audio/speech.h"
#include "audio/speech_chunks.h"
#include "diag.h"
#include "params.h"
#include "audio/vad.h"
#include "encoder.h"
#include "fallback.h"
#include "kernels/onednn.h"
#include "pipeline.h"
#include "search.h"
#include "timing/align.h"
#include "timing/diarize.h"
#include "timing/diarize_stitch.h"
#include "timing/refine.h"
#include "timing/words.h"

/* ---------------------------------------------------------------- model */

hv_model_params hv_model_default_params(void) {
    hv_model_params p = {.size = sizeof p};
    return p;
}

/* The vocabulary's size in the weights (token embedding rows, classifier
 * rows and bias) against config.json's, each named when they differ: a
 * checkpoint whose vocabulary was extended must say so everywhere. */
static hv_status check_vocab_sizes(const hv_model *m, const char *dir, hv_error *e) {
    static const char *names[] = {"transf_decoder._embedding.token_embedding.weight",
                                  "log_softmax.mlp.layer0.weight", "log_softmax.mlp.layer0.bias"};
    int V = m->cfg.vocab_size;
    for (int i = 0; i < 3; i++) {
        const hv_st_tensor *t = hv_st_find(&m->st, names[i]);
        if (t && t->ndim >= 1 && t->shape[0] != V)
            return hv_err(e, HV_ERR_FORMAT,
                          "%s: %s has %lld %s, but config.json vocab_size (and the tokenizer) "
                          "have %d tokens",
                          dir, names[i], (long long)t->shape[0], i < 2 ? "rows" : "entries", V);
    }
    return HV_OK;
}

hv_status hv_model_load(const char *model_dir, const hv_model_params *params, hv_model **out,
                        char *errbuf, size_t errbuf_size) {
    hv_error e = {0};
    hv_status st;
    *out = NULL;
    if (!model_dir || !*model_dir) {
        st = hv_err(&e, HV_ERR_INVALID_ARG, "no model directory given");
        goto fail_early;
    }
    if (params && (st = hv_params_check_size(params->size, sizeof *params, "hv_model_params",
                                             errbuf, errbuf_size)))
        return st;
    hv_model *m = calloc(1, sizeof *m);
    if (!m) {
        st = hv_err(&e, HV_ERR_NOMEM, "out of memory");
        goto fail_early;
    }
    m->n_threads = params && params->n_threads > 0 ? params->n_threads : hv_cpu_count();

    if ((st = hv_config_load(&m->cfg, model_dir, &e))) goto fail;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.model", model_dir);
    if ((st = hv_tokenizer_load(&m->tok, path, &e))) goto fail;
    int n_sp = m->tok.n_pieces;
    if ((st = hv_tokenizer_load_added(&m->tok, model_dir, &e))) goto fail;
    if (m->tok.n_pieces != m->cfg.vocab_size) {
        if (m->tok.n_pieces == n_sp)
            st = hv_err(&e, HV_ERR_FORMAT, "%s: %d pieces, but config.json vocab_size is %d", path,
                        n_sp, m->cfg.vocab_size);
        else
            st = hv_err(&e, HV_ERR_FORMAT,
                        "%s: %d pieces and %d tokens added by tokenizer_config.json make %d, but "
                        "config.json vocab_size is %d",
                        path, n_sp, m->tok.n_pieces - n_sp, m->tok.n_pieces, m->cfg.vocab_size);
        goto fail;
    }
    hv_weight_type wt = params ? params->weight_type : HV_WEIGHTS_AUTO;
    if ((unsigned)wt >= HV_N_WEIGHT_TYPES) {
        st = hv_err(&e, HV_ERR_INVALID_ARG, "weight_type %d: unknown", (int)wt);
        goto fail;
    }
    if ((st = hv_st_open_dir(&m->st, model_dir, &e))) goto fail;
    if ((st = check_vocab_sizes(m, model_dir, &e))) goto fail;
    if ((st = hv_weights_load(&m->w, &m->cfg, &m->st, wt, &e))) {
        hv_err_prefix(&e, "%s", model_dir);
        goto fail;
    }
    /* the decoder's copies over the model's threads */
    if ((st = hv_weights_decoder_r64(&m->w, &m->cfg, &m->st, m->n_threads, &e))) {
        hv_err_prefix(&e, "%s", model_dir);
        goto fail;
    }
    if ((st = hv_model_compute_init(m, params ? params->compute : HV_COMPUTE_AUTO, &e))) goto fail;
    if ((st = hv_frontend_init(&m->fe, &m->cfg, m->w.fe_window, m->w.fe_fb, &e))) goto fail;
    /* The reference rounds a computed window or filterbank to bf16, as the
     * checkpoints that carry them store them; each on its own. */
    hv_frontend_round_bf16(&m->fe, !m->w.fe_window, !m->w.fe_fb);
    *out = m;
    return HV_OK;
fail:
    hv_model_free(m);
fail_early:
    hv_err_copy(&e, errbuf, errbuf_size);
    return st;
}

void hv_model_free(hv_model *m) {
    if (!m) return;
    hv_frontend_free(&m->fe);
    hv_onednn_free(m->dnn);
    hv_weights_free(&m->w);
    hv_st_close(&m->st);
    hv_tokenizer_free(&m->tok);
    hv_config_free(&m->cfg);
    free(m);
}

int hv_model_sample_rate(const hv_model *m) { return m->cfg.sample_rate; }
size_t hv_model_weight_bytes(const hv_model *m) { return m->w.mat_bytes; }
size_t hv_model_decoder_weight_bytes(const hv_model *m) { return m->w.dec_mat_bytes; }
size_t hv_model_widened_weight_bytes(const hv_model *m) { return m->w.widened_bytes; }

/* The index of name among names[0..n) (exact match), or -1. */
static int name_index(const char *name, const char *const *names, int n) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

hv_status hv_weight_type_parse(const char *name, hv_weight_type *out) {
    int i = name_index(name, hv_weight_type_names, HV_N_WEIGHT_TYPES);
    if (i >= 0) *out = (hv_weight_type)i;
    return i >= 0 ? HV_OK : HV_ERR_INVALID_ARG;
}
int hv_model_token_bytes(const hv_model *m, int32_t id, char *buf, int size) {
    const hv_tokenizer *t = &m->tok;
    if (id < 0 || id >= t->n_pieces) return -1;
    int n = 0;
    if (t->types[id] == HV_PIECE_BYTE) {
        if (size > 0) buf[0] = (char)t->byte_value[id];
        return 1;
    }
    if (t->types[id] != HV_PIECE_NORMAL) return 0;
    for (const char *p = t->pieces[id]; *p;) {
        if (strncmp(p, "\xE2\x96\x81", 3) == 0) { /* U+2581 */
            if (n < size) buf[n] = ' ';
            n++;
            p += 3;
        } else {
            if (n < size) buf[n] = *p;
            n++;
            p++;
        }
    }
    return n;
}

int hv_model_n_languages(const hv_model *m) { return m->cfg.n_languages; }
int hv_model_can_diarize(const hv_model *m) { return hv_diarize_missing_piece(&m->tok) == NULL; }
const char *hv_model_language(const hv_model *m, int i) {
    return i >= 0 && i < m->cfg.n_languages ? m->cfg.languages[i] : NULL;
}
const char *hv_model_default_language(const hv_model *m) {
    return hv_config_default_language(&m->cfg);
}

/* -------------------------------------------------------------- context */

hv_status hv_context_new(const hv_model *model, int n_threads, hv_context **out, char *errbuf,
                         size_t errbuf_size) {
    hv_error e = {0};
    hv_status st = HV_OK;
    hv_context *ctx = NULL;
    int threads = model && n_threads == 0 ? model->n_threads : n_threads;
    if (!out) return HV_ERR_INVALID_ARG;
    *out = NULL;
    if (!model)
        st = hv_err(&e, HV_ERR_INVALID_ARG, "hv_context_new: no model");
    else if (n_threads < 0 || n_threads > HV_MAX_THREADS)
        st = hv_err(&e, HV_ERR_INVALID_ARG, "n_threads %d: must be from 0 (the model's) to %d",
                    n_threads, HV_MAX_THREADS);
    else if (!(ctx = calloc(1, sizeof *ctx)))
        st = hv_err(&e, HV_ERR_NOMEM, "out of memory creating a context");
    else if (ctx->model = model, !(ctx->pool = hv_pool_new(threads)))
        st = hv_err(&e, HV_ERR_NOMEM, "out of memory (or threads) starting %d worker threads",
                    threads);
    else if ((st = hv_decoder_init(&ctx->dec, &model->cfg, &model->w.dec, &ctx->err)))
        hv_err(&e, st, "%s", ctx->err.msg);
    if (st) {
        hv_context_free(ctx);
        if (errbuf && errbuf_size) hv_err_copy(&e, errbuf, errbuf_size);
        return st;
    }
    ctx->eng =
        hv_engine_with(ctx->pool, model->compute == HV_COMPUTE_BF16, model->dnn, model->on_dnn);
    *out = ctx;
    return HV_OK;
}

void hv_context_free(hv_context *ctx) {
    if (!ctx) return;
    hv_decoder_free(&ctx->dec);
    hv_pool_free(ctx->pool);
    free(ctx);
}

void hv_context_set_profile(hv_context *ctx, hv_profile *prof) { ctx->prof = prof; }

const char *hv_context_error(const hv_context *ctx) { return ctx ? ctx->err.msg : "no context"; }

/* ----------------------------------------------------------- transcribe */

/* Checks the decoding options (docs/DECODING.md, "Validation"). */
static hv_status check_decoding(const hv_transcribe_params *p, hv_error *e) {
    char msg[sizeof e->msg];
    /* each value in its row's range (params.c), then how they combine */
    if (hv_params_check(p, msg, sizeof msg)) return hv_err(e, HV_ERR_INVALID_ARG, "%s", msg);
    if (p->do_sample && p->num_beams != 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "sampling works with one beam only (num_beams is %d)",
                      p->num_beams);
    if (p->n_temperatures < 0 || (p->n_temperatures > 0 && !p->temperatures))
        return hv_err(e, HV_ERR_INVALID_ARG, "n_temperatures %d: must be >= 0, with temperatures",
                      p->n_temperatures);
    for (int i = 0; i < p->n_temperatures; i++)
        if (!isfinite(p->temperatures[i]) || p->temperatures[i] < 0)
            return hv_err(e, HV_ERR_INVALID_ARG,
                          "temperatures[%d] %g: must be finite and >= 0 (0: greedy)", i,
                          p->temperatures[i]);
    if (p->n_temperatures > 0 && p->do_sample)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "do_sample and a temperature list cannot be combined (each temperature > 0 "
                      "of the list samples)");
    if (hv_work_check(p, HV_MAX_BEAMS, msg, sizeof msg))
        return hv_err(e, HV_ERR_INVALID_ARG, "%s", msg);
    return HV_OK;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void hv_taps_free(hv_taps *t) {
    if (!t) return;
    free(t->samples);
    free(t->features);
    free(t->enc);
    free(t->logprobs0);
    free(t->attn);
    memset(t, 0, sizeof *t);
}

/* Appends n floats/ints to the result's token arrays. */
static int result_append(hv_result *r, const int32_t *tok, const float *lp, int n) {
    if (n <= 0) return 0;
    if (r->n_tokens + n > r->cap_tokens) {
        int cap = (r->n_tokens + n) * 2 + 16;
        int32_t *t = realloc(r->tokens, (size_t)cap * sizeof *t);
        if (!t) return -1;
        r->tokens = t;
        float *l = realloc(r->logprobs, (size_t)cap * sizeof *l);
        if (!l) return -1;
        r->logprobs = l;
        r->cap_tokens = cap;
    }
    memcpy(r->tokens + r->n_tokens, tok, (size_t)n * sizeof *tok);
    memcpy(r->logprobs + r->n_tokens, lp, (size_t)n * sizeof *lp);
    r->n_tokens += n;
    return 0;
}

/* What every chunk of one call shares. */
typedef struct run {
    hv_context *ctx;
    const hv_transcribe_params *p;
    int32_t prompt[HV_PROMPT_MAX];
    int n_prompt;
    int max_new;
    float dither;
    int32_t *tok_buf;     /* [max_new] */
    float *lp_buf;        /* [max_new] */
    int stop;             /* segment_callback asked to stop */
    hv_pos_cache pos;     /* the encoder's position projections, for calls of
                         several chunks (else unused: pos_hint 0) */
    int pos_hint;         /* encoder frames of the call's longest chunk */
    hv_hotwords hotwords; /* p->hotwords' trie (no phrases: off) */
    float *speech;        /* with a speech detector: its probabilities over the
                         part transcribed, one per window (else NULL) */
    size_t n_speech;
    int speech_window;    /* samples per window */
    size_t speech_offset; /* the input's sample where window 0 starts */
    hv_stitch stitch;     /* diarize: what one window hands the next */
    size_t *cuts;         /* diarize over several windows: [n_chunks + 1] the
                             input's samples where the transcript passes from
                             one window to the next (else NULL) */
} run;

/* A chunk's no_speech_prob: 1 - the mean speech probability of the
 * detector's windows that overlap its pieces; NAN without a detector. */
static double chunk_no_speech(const run *R, const hv_piece_plan *plan, int chunk) {
    if (!R->speech) return NAN;
    size_t w = (size_t)R->speech_window, next = 0, count = 0;
    double sum = 0;
    for (int k = plan->first[chunk]; k < plan->first[chunk + 1]; k++) {
        const hv_span *s = &plan->pieces[k];
        size_t a = (s->start - R->speech_offset) / w, b = (s->end - R->speech_offset + w - 1) / w;
        for (size_t i = a > next ? a : next; i < b && i < R->n_speech; i++, count++)
            sum += R->speech[i];
        if (b > next) next = b;
    }
    return count ? 1.0 - sum / (double)count : NAN;
}

/* Appends w[n] (times from the start of chunk i of plan) to the result's
 * words, on the input's timeline, kept in time order. */
static int result_add_words(hv_result *r, const hv_chunk_word *w, int n, const hv_piece_plan *plan,
                            int chunk, int token_offset) {
    if (r->n_words + n > r->cap_words) {
        int cap = (r->n_words + n) * 2 + 16;
        hv_word *x = realloc(r->words, (size_t)cap * sizeof *x);
        if (!x) return -1;
        r->words = x;
        r->cap_words = cap;
    }
    double rate = r->sample_rate;
    size_t len = hv_piece_plan_chunk_samples(plan, chunk);
    for (int k = 0; k < n; k++) {
        /* a start at the join of two pieces is the later one's start, an
         * end there the earlier one's end */
        size_t a = (size_t)fmin(fmax(llround(w[k].start * rate), 0), (double)len);
        size_t b = (size_t)fmin(fmax(llround(w[k].end * rate), 0), (double)len);
        double start = hv_piece_plan_to_input(plan, chunk, a) / rate;
        double end = (b > 0 ? hv_piece_plan_to_input(plan, chunk, b - 1) + 1 : 0) / rate;
        hv_word *prev = r->n_words ? &r->words[r->n_words - 1] : NULL;
        if (prev && start < prev->start) start = prev->start;
        if (end < start) end = start;
        if (prev && prev->end > start) prev->end = start;
        r->words[r->n_words++] = (hv_word){
            w[k].text, start, end, w[k].probability, token_offset + w[k].first, w[k].n_tokens};
    }
    return 0;
}

/* Word times of the chunk's tokens[n] (in so), with the chunk's samples
 * x[len]; appends them to the result. */
static hv_status chunk_words(run *R, const float *x, size_t len, const hv_search_out *so,
                             const hv_piece_plan *plan, int chunk, int token_offset,
                             const unsigned char *keep, hv_result *res, hv_taps *taps) {
    hv_context *ctx = R->ctx;
    const hv_model *m = ctx->model;
    const hv_config *c = &m->cfg;
    hv_error *e = &ctx->err;
    hv_chunk_word *w = NULL;
    double *bounds = NULL;
    float *attn = NULL;
    uint8_t *quiet = NULL;
    hv_loudness loud = {0};
    int nw = 0;
    hv_status st;
    double t0 = now_ms();
    if ((st = hv_words_split(&m->tok, so->tokens, so->logprobs, so->n, &w, &nw, e))) return st;
    if (nw == 0) goto done;
    if (!(bounds = malloc((size_t)(so->n + 1) * sizeof *bounds))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for word times");
        goto done;
    }
    /* where the audio is quiet, and the tokens that may sit in a pause */
    int T = ctx->dec.enc_len;
    double frame_s = (double)c->hop_length * c->sub_factor / c->sample_rate;
    if (hv_loudness_measure(&loud, x, len, c->sample_rate) ||
        !(quiet = malloc((size_t)T + (size_t)so->n + 1))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for word times");
        goto done;
    }
    uint8_t *pause = quiet + T;
    hv_loudness_quiet(&loud, frame_s, T, quiet);
    for (int i = 0; i < so->n; i++) pause[i] = (uint8_t)hv_token_is_silent(&m->tok, so->tokens[i]);
    pause[so->n] = 1; /* the end */
    hv_align_params ap = hv_align_default_params(c->dec_layers);
    int voting = c->dec_layers - ap.first_layer;
    if ((st = hv_align_attention(&ctx->dec, &ctx->eng, R->prompt, R->n_prompt, so->tokens, so->n,
                                 ap.first_layer, &attn, e)) ||
        (st = hv_align_bounds(attn, voting, c->dec_heads, so->n + 1, T, quiet, pause, &ap, bounds,
                              e)))
        goto done;
    for (int k = 0; k < nw; k++) {
        /* a word ends where its sound does: before its punctuation, whose
         * rows hold the pause after it */
        int end = w[k].first + w[k].n_tokens;
        while (end - 1 > w[k].first && pause[end - 1]) end--;
        w[k].start = bounds[w[k].first] * frame_s;
        w[k].end = bounds[end] * frame_s;
    }
    hv_words_refine(w, nw, &loud, frame_s);
    if (keep) { /* diarize: only the words of the window's share */
        int k = 0;
        for (int i = 0; i < nw; i++)
            if (keep[w[i].first])
                w[k++] = w[i];
            else
                free(w[i].text);
        nw = k;
    }
    if (taps) {
        free(taps->attn);
        taps->attn = attn;
        taps->attn_layers = voting;
        taps->attn_rows = so->n + 1;
        taps->attn_frames = ctx->dec.enc_len;
        attn = NULL;
    }
    if (result_add_words(res, w, nw, plan, chunk, token_offset)) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for words");
        goto done;
    }
    for (int k = 0; k < nw; k++) w[k].text = NULL; /* the result's now */
done:
    res->timings.align_ms += now_ms() - t0;
    hv_chunk_words_free(w, nw);
    free(bounds);
    free(attn);
    free(quiet);
    hv_loudness_free(&loud);
    return st;
}

/* Appends s (its text now the result's) and gives it to segment_callback:
 * it is final, its words timed, and later chunks, which lie after it on
 * the timeline, change nothing in it. */
static hv_status push_segment(run *R, hv_result *res, const hv_result_seg *s) {
    hv_result_seg *segs = realloc(res->segs, (size_t)(res->n_segs + 1) * sizeof *segs);
    if (!segs) return hv_err(&R->ctx->err, HV_ERR_NOMEM, "out of memory");
    res->segs = segs;
    segs[res->n_segs++] = *s;
    if (R->p->segment_callback) {
        hv_segment g = hv_result_segment(res, res->n_segs - 1);
        if (R->p->segment_callback(R->p->segment_user, &g)) R->stop = 1;
    }
    return HV_OK;
}

/* Where t seconds into a chunk's audio lie on the input (seconds); an end
 * at the join of two pieces is the earlier one's end. */
typedef struct chunk_pos {
    const hv_piece_plan *plan;
    int chunk;
    double rate;
} chunk_pos;

static double chunk_to_input(void *user, double t, int end) {
    const chunk_pos *c = user;
    size_t len = hv_piece_plan_chunk_samples(c->plan, c->chunk);
    size_t a = (size_t)fmin(fmax(llround(t * c->rate), 0), (double)len);
    if (!end || a == 0) return (double)hv_piece_plan_to_input(c->plan, c->chunk, a) / c->rate;
    return (double)(hv_piece_plan_to_input(c->plan, c->chunk, a - 1) + 1) / c->rate;
}

/* With diarize: the chunk's speaker turns (docs/DIARIZE.md), parsed, cut
 * to the chunk's share of the timeline and labelled by hv_stitch. */
static hv_status stitch_chunk(run *R, const hv_search_out *so, const hv_piece_plan *plan, int chunk,
                              double rate, const float *logmel, const float *f0, int n_frames,
                              hv_stitched *out) {
    chunk_pos cpos = {plan, chunk, rate};
    const hv_span *first = &plan->pieces[plan->first[chunk]];
    const hv_span *last = &plan->pieces[plan->first[chunk + 1] - 1];
    const size_t *cuts = R->cuts;
    int n = plan->n_chunks;
    hv_stitch_window w = {
        .tok = &R->ctx->model->tok,
        .ids = so->tokens,
        .n = so->n,
        .window = chunk,
        .seconds = hv_piece_plan_chunk_samples(plan, chunk) / rate,
        .to_input = chunk_to_input,
        .user = &cpos,
        .start = first->start / rate,
        .end = last->end / rate,
        .lo = cuts && chunk > 0 ? cuts[chunk] / rate : -INFINITY,
        .hi = cuts && chunk + 1 < n ? cuts[chunk + 1] / rate : INFINITY,
        .prev_end = chunk > 0 ? plan->pieces[plan->first[chunk] - 1].end / rate : 0,
        .next_start = chunk + 1 < n ? plan->pieces[plan->first[chunk + 1]].start / rate : INFINITY,
        .logmel = logmel,
        .f0 = f0,
        .n_frames = n_frames,
        .n_mels = R->ctx->model->fe.n_mels,
        .frame_s = R->ctx->model->fe.hop / rate,
        .voice_threshold = R->p->diarize_voice};
    return hv_stitch_window_run(&R->stitch, &w, out, &R->ctx->err);
}

/* With diarize: the stitched turns sw of the chunk as segments, each with
 * its times, its words (whole's, by their first token) kept inside it, and
 * whole's decoding figures. A turn whose text is empty is no segment. */
static hv_status push_turns(run *R, hv_result *res, const hv_search_out *so,
                            const hv_result_seg *whole, const hv_stitched *sw) {
    const hv_tokenizer *tok = &R->ctx->model->tok;
    hv_error *e = &R->ctx->err;
    double rate = res->sample_rate;
    hv_status st = HV_OK;
    int32_t *ids = malloc((size_t)(so->n > 0 ? so->n : 1) * sizeof *ids);
    if (!ids) return hv_err(e, HV_ERR_NOMEM, "out of memory");
    int w = whole->word_offset, w_end = whole->word_offset + whole->n_words;
    for (int k = 0; !st && k < sw->n_segs && !R->stop; k++) {
        const hv_stitch_seg *s = &sw->segs[k];
        for (int j = 0; j < s->n_pos; j++) ids[j] = so->tokens[sw->pos[s->pos0 + j]];
        char *text = hv_tokenizer_decode(tok, ids, s->n_pos);
        if (!text) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory");
            break;
        }
        int w0 = w;
        while (w < w_end && res->words[w].first_token - whole->token_offset <= s->last) w++;
        if (!*text) {
            free(text);
            continue;
        }
        hv_result_seg g = *whole;
        g.text = text;
        g.start_sample = llround(s->start * rate);
        g.end_sample = llround(s->end * rate);
        if (g.end_sample < g.start_sample) g.end_sample = g.start_sample;
        g.token_offset = whole->token_offset + s->first;
        g.n_tokens = s->last - s->first + 1;
        g.word_offset = w0;
        g.n_words = w - w0;
        g.speaker = s->speaker;
        g.voice = s->voice;
        /* our word times, inside the model's turn */
        double a = g.start_sample / rate, b = g.end_sample / rate;
        for (int i = w0; i < w; i++) {
            hv_word *x = &res->words[i];
            x->start = fmin(fmax(x->start, a), b);
            x->end = fmin(fmax(x->end, x->start), b);
        }
        if ((st = push_segment(R, res, &g))) free(text);
    }
    free(ids);
    return st;
}

/* One chunk (chunk i of plan): its samples x[n] -> features -> encoder ->
 * decoder; appends a segment [seg_start, seg_end) of the input's timeline
 * when the transcript is not empty. */
static hv_status transcribe_piece(run *R, const float *x, size_t n, const hv_piece_plan *plan,
                                  int chunk, hv_result *res, hv_taps *taps) {
    hv_span speech = hv_piece_plan_chunk_speech(plan, chunk);
    size_t seg_start = speech.start, seg_end = speech.end;
    hv_context *ctx = R->ctx;
    const hv_model *m = ctx->model;
    const hv_config *c = &m->cfg;
    const hv_transcribe_params *p = R->p;
    hv_error *e = &ctx->err;
    float *feat = NULL, *enc = NULL, *lp0 = NULL, *logmel = NULL, *f0 = NULL;
    hv_stitched sw = {0};
    int n_fr, n_valid, n_enc, enc_len;
    hv_status st;
    double t0 = now_ms(), t1, t2;

    /* diarize's voice signatures need the log-mel before normalisation */
    int voice = p->diarize && p->diarize_voice < 1;
    /* Hugging Face's dither: torch.randn(n) seeded with the chunk's own
     * number of samples (docs/MODEL.md, Frontend step 1) */
    if ((st = hv_frontend_compute(&m->fe, x, n, R->dither, p->dither_seed + n, ctx->pool, &feat,
                                  &n_fr, &n_valid, voice ? &logmel : NULL, e)))
        goto done;
    double pitch_ms = 0; /* diarize's, not the frontend's */
    if (voice) {
        double tp = now_ms();
        if (!(f0 = malloc((size_t)n_valid * sizeof *f0))) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory for a pitch track");
            goto done;
        }
        if ((st = hv_pitch_track(x, n, c->sample_rate, m->fe.hop, n_valid, ctx->pool, f0, e)))
            goto done;
        pitch_ms = now_ms() - tp;
    }
    t1 = now_ms();
    int pos_builds = R->pos.builds;
    hv_engine enc_eng = ctx->eng; /* with the profile: the encoder's stages only */
    enc_eng.prof = ctx->prof;
    if ((st = hv_encoder_forward(c, &m->w.enc, &enc_eng, feat, n_fr, n_valid,
                                 R->pos_hint ? &R->pos : NULL, R->pos_hint, &enc, &n_enc, &enc_len,
                                 e)))
        goto done;
    /* broken weights give non-finite states and then an empty text: refuse */
    for (size_t i = 0; i < (size_t)enc_len * (size_t)c->dec_hidden; i++)
        if (!isfinite(enc[i])) {
            st = hv_err(e, HV_ERR_FORMAT,
                        "encoder: output frame %zu of the chunk at %.2f s is %s (the model's "
                        "weights give non-finite values)",
                        i / (size_t)c->dec_hidden, (double)seg_start / c->sample_rate,
                        isnan(enc[i]) ? "NaN" : "infinite");
            goto done;
        }
    t2 = now_ms();
    if (taps && !(lp0 = malloc((size_t)c->vocab_size * sizeof *lp0))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* without a temperature list, one attempt in the mode asked for, and
     * no threshold */
    float single = p->do_sample ? p->temperature : 0.0f;
    int list = p->n_temperatures > 0;
    hv_fallback_params fp = {.search = {.max_new = R->max_new,
                                        .eos = c->eos_token_id,
                                        .num_beams = p->num_beams,
                                        .length_penalty = p->length_penalty,
                                        .top_k = p->top_k,
                                        .top_p = p->top_p,
                                        .seed = p->seed,
                                        .repetition_penalty = p->repetition_penalty,
                                        .no_repeat_ngram_size = p->no_repeat_ngram_size,
                                        .hotwords = &R->hotwords,
                                        .abort = p->abort_callback,
                                        .abort_user = p->abort_user},
                             .temperatures = list ? p->temperatures : &single,
                             .n_temperatures = list ? p->n_temperatures : 1,
                             .best_of = p->best_of,
                             .compression_ratio_threshold =
                                 list ? p->compression_ratio_threshold : NAN,
                             .log_prob_threshold = list ? p->log_prob_threshold : NAN,
                             .no_speech_threshold = list ? p->no_speech_threshold : NAN,
                             .no_speech_prob = chunk_no_speech(R, plan, chunk)};
    hv_decoded dd = {.out = {.tokens = R->tok_buf, .logprobs = R->lp_buf}};
    if ((st = hv_decoder_begin(&ctx->dec, &ctx->eng, enc, n_enc, enc_len, p->num_beams, e)) ||
        (st = hv_decode_chunk(&ctx->dec, &ctx->eng, &m->tok, R->prompt, R->n_prompt, &fp, &dd, lp0,
                              e)))
        goto done;
    const hv_search_out so = dd.out;
    char *text = dd.text;
    res->timings.frontend_ms += t1 - t0 - pitch_ms;
    res->timings.diarize_ms += pitch_ms;
    res->timings.encoder_ms += t2 - t1;
    /* the products done: cached position projections count when made */
    double flops = hv_encoder_flops(c, &m->w.enc, n_fr, n_valid);
    if (R->pos.n >= n_enc) {
        flops -= hv_encoder_pos_flops(c, n_enc);
        if (R->pos.builds != pos_builds) flops += hv_encoder_pos_flops(c, R->pos.n);
    }
    res->timings.encoder_gflop += flops / 1e9;
    res->timings.encoded_s += (double)n / c->sample_rate;
    res->timings.decoder_ms += now_ms() - t2;
    res->timings.prefill_ms += so.prefill_ms;
    res->timings.steps_ms += so.steps_ms;
    res->timings.n_steps += so.n_steps;
    if (dd.silent) { /* the no_speech_threshold's silence: nothing of it */
        free(text);
        goto tapped;
    }
    res->score += so.score;

    /* every generated token is part of the result; a chunk whose text is
     * empty (silence, or only pieces that print nothing) is no segment */
    if (result_append(res, so.tokens, so.logprobs, so.n)) {
        free(text);
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (!*text) {
        free(text);
        goto tapped;
    }
    if (p->diarize) {
        double ts = now_ms();
        st = stitch_chunk(R, &so, plan, chunk, c->sample_rate, logmel, f0, n_valid, &sw);
        res->timings.diarize_ms += now_ms() - ts;
        if (st) {
            free(text);
            goto done;
        }
    }
    int word_offset = res->n_words;
    if (p->word_timestamps && (st = chunk_words(R, x, n, &so, plan, chunk, res->n_tokens - so.n,
                                                p->diarize ? sw.keep : NULL, res, taps))) {
        free(text);
        goto done;
    }
    hv_result_seg whole = {.start_sample = (int64_t)seg_start,
                           .end_sample = (int64_t)seg_end,
                           .text = text,
                           .token_offset = res->n_tokens - so.n,
                           .n_tokens = so.n,
                           .score = so.score,
                           .word_offset = word_offset,
                           .n_words = res->n_words - word_offset,
                           .temperature = dd.temperature,
                           .avg_logprob = dd.avg_logprob,
                           .compression_ratio = dd.compression_ratio,
                           .no_speech_prob = fp.no_speech_prob,
                           .speaker = -1,
                           .voice = -1};
    if (p->diarize) {
        free(text);
        if ((st = push_turns(R, res, &so, &whole, &sw))) goto done;
    } else if ((st = push_segment(R, res, &whole))) {
        free(text);
        goto done;
    }
tapped:
    if (taps) {
        taps->features = feat;
        taps->n_frames = n_fr;
        taps->n_valid = n_valid;
        feat = NULL;
        taps->enc = enc;
        taps->n_enc = n_enc;
        taps->enc_len = enc_len;
        enc = NULL;
        taps->logprobs0 = lp0;
        lp0 = NULL;
        memcpy(taps->prompt, R->prompt, sizeof R->prompt);
        taps->n_prompt = R->n_prompt;
    }
done:
    hv_stitched_free(&sw);
    free(logmel);
    free(f0);
    free(feat);
    free(enc);
    free(lp0);
    return st;
}

/* With diarize: the segments' speakers regrouped by their voices once
 * the whole recording is known (docs/DIARIZE.md, rule 8). */
static hv_status regroup_speakers(run *R, hv_result *res) {
    if (!R->p->diarize || res->n_segs == 0) return HV_OK;
    double t0 = now_ms();
    int *rows = malloc((size_t)res->n_segs * sizeof *rows);
    int *label = malloc((size_t)res->n_segs * sizeof *label);
    hv_status st = rows && label ? HV_OK : hv_err(&R->ctx->err, HV_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < res->n_segs; i++) {
        rows[i] = res->segs[i].voice;
        label[i] = res->segs[i].speaker;
    }
    if (!st)
        st = hv_stitch_regroup(&R->stitch, R->p->diarize_voice, res->n_segs, rows, label,
                               &R->ctx->err);
    for (int i = 0; !st && i < res->n_segs; i++) res->segs[i].speaker = label[i];
    free(rows);
    free(label);
    res->timings.diarize_ms += now_ms() - t0;
    return st;
}

/* Joins the segments' texts. */
static hv_status result_finish(hv_result *r, hv_error *e) {
    if (!r->words && !(r->words = malloc(sizeof *r->words)))
        return hv_err(e, HV_ERR_NOMEM, "out of memory");
    /* callers may memcpy hv_result_tokens(): never NULL, even when empty */
    if (!r->tokens && result_append(r, (const int32_t[]){0}, (const float[]){0}, 1) == 0)
        r->n_tokens = 0;
    if (!r->tokens) return hv_err(e, HV_ERR_NOMEM, "out of memory");
    int no_space = !strcmp(r->language, "ja") || !strcmp(r->language, "zh");
    size_t len = 1;
    for (int i = 0; i < r->n_segs; i++) len += strlen(r->segs[i].text) + 1;
    if (!(r->text = malloc(len))) return hv_err(e, HV_ERR_NOMEM, "out of memory");
    char *o = r->text;
    for (int i = 0; i < r->n_segs; i++) {
        if (i && !no_space) *o++ = ' ';
        size_t k = strlen(r->segs[i].text);
        memcpy(o, r->segs[i].text, k);
        o += k;
    }
    *o = '\0';
    r->timings.n_tokens = r->n_tokens;
    return HV_OK;
}

hv_chunk_plan_params hv_chunk_params(const hv_config *c, const hv_transcribe_params *p) {
    hv_chunk_plan_params cp;
    double sr = c->sample_rate;
    cp.mode = p->chunking;
    cp.chunk = (size_t)llround(c->max_audio_clip_s * sr);
    cp.context = (size_t)llround(c->overlap_chunk_second * sr);
    cp.window = (size_t)c->min_energy_window_samples;
    cp.single = (size_t)llround((c->max_audio_clip_s - c->overlap_chunk_second) * sr);
    cp.fixed = (size_t)llround((double)p->chunk_seconds * sr);
    if (p->diarize) { /* windows of the model's times, less their overlap */
        double w = fmin(c->max_audio_clip_s, HV_DIAR_WINDOW_S);
        cp.chunk = (size_t)llround((w - HV_DIAR_OVERLAP_S) * sr);
        cp.single = (size_t)llround(w * sr);
        if (cp.context > cp.chunk) cp.context = cp.chunk;
    }
    return cp;
}

hv_status hv_diar_windows(const hv_config *c, const hv_transcribe_params *p, hv_piece_plan *plan,
                          size_t **cuts, hv_error *e) {
    *cuts = NULL;
    if (!p->diarize || plan->n_chunks < 2) return HV_OK;
    hv_piece_plan core = *plan;
    size_t reach = (size_t)llround(HV_DIAR_OVERLAP_S / 2 * c->sample_rate);
    if (!(*cuts = malloc((size_t)(core.n_chunks + 1) * sizeof **cuts)))
        return hv_err(e, HV_ERR_NOMEM, "out of memory planning diarize windows");
    hv_status st = hv_piece_plan_overlap(&core, reach, plan, *cuts, e);
    hv_piece_plan_free(&core);
    if (st) {
        free(*cuts);
        *cuts = NULL;
    }
    return st;
}

/* The chunks of x[n] as pieces of it: the plan of p->chunking (AUTO
 * already resolved), with speech detection for HV_CHUNKING_VAD; with a
 * speech detector, its probabilities over x go to R (no_speech_prob),
 * whatever the chunking. */
static hv_status plan_pieces(run *R, const float *x, size_t n, hv_piece_plan *plan,
                             double *vad_ms) {
    hv_context *ctx = R->ctx;
    const hv_transcribe_params *p = R->p;
    const hv_config *c = &ctx->model->cfg;
    hv_error *e = &ctx->err;
    hv_chunk_plan_params cp = hv_chunk_params(c, p);
    const hv_vad *v = p->vad;
    hv_status st;
    if (v && v->sample_rate != c->sample_rate)
        return hv_err(e, HV_ERR_UNSUPPORTED,
                      "the speech detector runs at %d Hz but the model at %d Hz", v->sample_rate,
                      c->sample_rate);
    double t0 = now_ms();
    const hv_speech *given = v ? p->speech : NULL;
    if (v) {
        R->speech_window = v->window;
        R->n_speech = hv_vad_n_windows(v, n);
    }
    if (given) { /* the caller's reading: the detector does not run again */
        if ((st = hv_speech_check(given, v, &p->vad_params, x, n, e))) return st;
        if (!(R->speech = malloc((given->n_probs ? given->n_probs : 1) * sizeof *R->speech)))
            return hv_err(e, HV_ERR_NOMEM, "out of memory");
        if (given->n_probs) memcpy(R->speech, given->probs, given->n_probs * sizeof *R->speech);
    }
    if (p->chunking != HV_CHUNKING_VAD) {
        size_t *bounds;
        int n_chunks;
        if (v && !given) {
            if ((st = hv_vad_level_probs(v, ctx->pool, x, n, p->vad_params.edges, &R->speech, e)))
                return st;
            *vad_ms = now_ms() - t0;
        }
        if ((st = hv_chunk_plan(x, n, &cp, &bounds, &n_chunks, e))) return st;
        st = hv_piece_plan_from_bounds(bounds, n_chunks, plan, e);
        free(bounds);
        return st;
    }
    size_t n_regions = given ? given->n_regions : 0;
    hv_speech_region *regions = NULL;
    hv_span *spans = NULL;
    if (!given && (st = hv_vad_detect(v, ctx->pool, x, n, &p->vad_params, &regions, &n_regions,
                                      &R->speech, e)))
        return st;
    if (!(spans = malloc((n_regions ? n_regions : 1) * sizeof *spans))) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    const hv_speech_region *r = given ? given->regions : regions;
    for (size_t i = 0; i < n_regions; i++)
        spans[i] = (hv_span){(size_t)r[i].start_sample, (size_t)r[i].end_sample};
    if (!given) *vad_ms = now_ms() - t0;
    hv_speech_chunk_params sp = {
        .max_chunk = cp.chunk,
        .context = cp.context,
        .window = cp.window,
        .max_gap = (size_t)llround((double)p->vad_max_gap_s * c->sample_rate),
        .keep_pause = (size_t)llround(HV_VAD_KEEP_PAUSE_S * c->sample_rate)};
    st = hv_piece_plan_from_speech(x, n, spans, n_regions, &sp, plan, e);
done:
    free(regions);
    free(spans);
    return st;
}

/* A chunk shorter than min_piece, one of several, is silence to the model
 * and is skipped. */
static int chunk_skipped(const hv_piece_plan *plan, int i, size_t min_piece) {
    return plan->n_chunks > 1 && hv_piece_plan_chunk_samples(plan, i) < min_piece;
}

/* With more than one chunk to encode, the encoder frames of the longest
 * (the position projections are made once, for it); else 0. */
static int pos_hint(const hv_model *m, const hv_piece_plan *plan, size_t min_piece) {
    int n_encoded = 0, longest = 0;
    for (int i = 0; i < plan->n_chunks; i++) {
        if (chunk_skipped(plan, i, min_piece)) continue;
        size_t fr = hv_frontend_frames(&m->fe, hv_piece_plan_chunk_samples(plan, i));
        int frames = hv_subsampled_len(&m->cfg, fr < INT_MAX ? (int)fr : INT_MAX);
        n_encoded++;
        longest = frames > longest ? frames : longest;
    }
    return n_encoded > 1 ? longest : 0;
}

hv_status hv_transcribe_taps(hv_context *ctx, const float *pcm, size_t n_frames, int sample_rate,
                             int channels, const hv_transcribe_params *params, hv_result **out,
                             hv_taps *taps) {
    const hv_model *m = ctx->model;
    const hv_config *c = &m->cfg;
    hv_error *e = &ctx->err;
    hv_transcribe_params p = params ? *params : hv_transcribe_default_params();
    run R = {.ctx = ctx, .p = &p};
    float *samples = NULL, *joined = NULL;
    size_t n = 0;
    hv_piece_plan plan = {0};
    double vad_ms = 0;
    hv_result *res = NULL;
    hv_status st;
    double t0 = now_ms();
    hv_err_clear(e);
    *out = NULL;
    if (taps) memset(taps, 0, sizeof *taps);

    /* options */
    if ((st = check_decoding(&p, e))) return st;
    const char *lang = p.language ? p.language : hv_config_default_language(c);
    const char *missing = p.diarize ? hv_diarize_missing_piece(&m->tok) : NULL;
    if (missing)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "diarize: the model's tokenizer has no piece \"%s\" (not a diarize model)",
                      missing);
    if ((st = hv_tokenizer_prompt(&m->tok, c, lang, p.punctuation != 0, p.diarize != 0, R.prompt,
                                  &R.n_prompt, e)))
        return st;
    int room = c->dec_max_seq - R.n_prompt;
    if (p.max_new_tokens < 0 || room < 1 || p.max_new_tokens > room)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "max_new_tokens %d: must be between 1 and %d (the "
                      "decoder's max_sequence_length %d minus the %d-token prompt)",
                      p.max_new_tokens, room, c->dec_max_seq, R.n_prompt);
    R.max_new =
        p.max_new_tokens ? p.max_new_tokens : (c->max_new_tokens < room ? c->max_new_tokens : room);
    R.dither = p.dither < 0 ? c->dither : p.dither;
    if (p.chunking == HV_CHUNKING_AUTO && p.vad) p.chunking = HV_CHUNKING_VAD;
    if (p.chunking == HV_CHUNKING_VAD && !p.vad)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "chunking vad needs a speech detector (hv_transcribe_params.vad)");
    if (p.speech && !p.vad)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "hv_transcribe_params.speech needs the detector that read it "
                      "(hv_transcribe_params.vad)");
    if (p.speech && (p.offset_s > 0 || p.duration_s > 0))
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "hv_transcribe_params.speech with offset_s or duration_s: the reading "
                      "covers the whole input");
    if (p.chunking == HV_CHUNKING_FIXED && !(isfinite(p.chunk_seconds) && p.chunk_seconds >= 1 &&
                                             p.chunk_seconds <= c->max_audio_clip_s))
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "chunk_seconds %g: must be between 1 and max_audio_clip_s (%g)",
                      p.chunk_seconds, c->max_audio_clip_s);
    double diar_core = fmin(c->max_audio_clip_s, HV_DIAR_WINDOW_S) - HV_DIAR_OVERLAP_S;
    if (p.diarize && p.chunking == HV_CHUNKING_FIXED && p.chunk_seconds > diar_core)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "chunk_seconds %g: with diarize at most %g (windows of %g s, less their "
                      "%g s overlap)",
                      p.chunk_seconds, diar_core, diar_core + HV_DIAR_OVERLAP_S, HV_DIAR_OVERLAP_S);
    if (!pcm || channels < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "bad audio buffer (%d channels, %d Hz)", channels,
                      sample_rate);
    if (sample_rate < HV_MIN_SAMPLE_RATE || sample_rate > HV_MAX_SAMPLE_RATE)
        return hv_err(e, HV_ERR_INVALID_ARG, "sample rate %d Hz: hviske takes %d to %d Hz",
                      sample_rate, HV_MIN_SAMPLE_RATE, HV_MAX_SAMPLE_RATE);
    /* the budget, from the length the samples will have at the model's
     * rate, before anything is converted */
    double at_rate = (double)n_frames * c->sample_rate / sample_rate;
    if (p.max_audio_bytes && at_rate * sizeof(float) > (double)p.max_audio_bytes)
        return hv_err(e, HV_ERR_LIMIT,
                      "%.1f s of audio at %d Hz is %.0f samples at %d Hz (%.0f MiB), more than "
                      "max_audio_bytes allows (%.0f MiB)",
                      (double)n_frames / sample_rate, sample_rate, at_rate, c->sample_rate,
                      at_rate * sizeof(float) / 1048576.0, p.max_audio_bytes / 1048576.0);

    /* the last check, the first allocation */
    if ((st = hv_hotwords_build(&R.hotwords, &m->tok, p.hotwords, p.hotwords_score, e))) return st;

    /* samples at the model's rate (the caller's own buffer when it already
     * is mono at that rate: hours of audio are not copied), then the plan */
    const float *x = pcm;
    n = n_frames;
    if (channels == 1 && sample_rate == c->sample_rate) {
        for (size_t i = 0; i < n; i++)
            if (!isfinite(pcm[i])) {
                st = hv_err(e, HV_ERR_FORMAT, "sample %zu (%.3f s) is %s", i,
                            (double)i / sample_rate, isnan(pcm[i]) ? "NaN" : "infinite");
                goto done;
            }
    } else {
        if ((st = hv_audio_to_mono(pcm, n_frames, channels, sample_rate, c->sample_rate, &samples,
                                   &n, e)))
            goto done;
        x = samples;
    }
    /* the part asked for, [off, off + len): planned on its own, then its
     * pieces moved onto the input's timeline */
    size_t off = 0, len = n;
    if (p.offset_s > 0 || p.duration_s > 0) {
        double o = p.offset_s * c->sample_rate, d = p.duration_s * c->sample_rate;
        if (o >= (double)n) {
            st = hv_err(e, HV_ERR_INVALID_ARG,
                        "offset_s %g: at or beyond the end of the audio (%.3f s)", p.offset_s,
                        (double)n / c->sample_rate);
            goto done;
        }
        off = (size_t)llround(o);
        len = n - off;
        if (p.duration_s > 0 && d < (double)len) len = (size_t)llround(d);
    }
    if ((st = plan_pieces(&R, x + off, len, &plan, &vad_ms))) goto done;
    R.speech_offset = off;
    for (int i = 0; off && i < plan.n_pieces; i++) {
        plan.pieces[i].start += off, plan.pieces[i].end += off;
        plan.speech[i].start += off, plan.speech[i].end += off;
    }
    hv_stitch_init(&R.stitch);
    if ((st = hv_diar_windows(c, &p, &plan, &R.cuts, e))) goto done;

    res = calloc(1, sizeof *res);
    R.tok_buf = malloc((size_t)R.max_new * sizeof *R.tok_buf);
    R.lp_buf = malloc((size_t)R.max_new * sizeof *R.lp_buf);
    if (!res || !R.tok_buf || !R.lp_buf) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    snprintf(res->language, sizeof res->language, "%s", lang);
    res->sample_rate = c->sample_rate;
    res->duration = (double)n / c->sample_rate;
    res->timings.vad_ms = vad_ms;
    res->timings.frontend_ms = now_ms() - t0 - vad_ms; /* resampling and planning */

    /* a too-short whole input is an error; a too-short last chunk is
     * silence to the model and is skipped */
    size_t min_piece = 2 * (size_t)c->hop_length;
    if (len < min_piece) {
        st = hv_err(e, HV_ERR_INVALID_ARG,
                    "audio too short: %zu samples at %d Hz (at least %zu needed)", len,
                    c->sample_rate, min_piece);
        goto done;
    }
    R.pos_hint = pos_hint(m, &plan, min_piece);
    double done_s = 0, part_s = (double)len / c->sample_rate;
    for (int i = 0; i < plan.n_chunks; i++) {
        const hv_span *first = &plan.pieces[plan.first[i]];
        const hv_span *last = &plan.pieces[plan.first[i + 1] - 1];
        size_t len = hv_piece_plan_chunk_samples(&plan, i);
        const float *cx = x + first->start;
        if (chunk_skipped(&plan, i, min_piece)) continue;
        if (R.stop || (p.abort_callback && p.abort_callback(p.abort_user))) {
            st = hv_err(e, HV_ERR_CANCELLED, "transcription cancelled");
            goto stopped;
        }
        if (first != last) { /* speech with pauses left out: its pieces back to back */
            float *buf = realloc(joined, len * sizeof *buf);
            if (!buf) {
                st = hv_err(e, HV_ERR_NOMEM, "out of memory");
                goto done;
            }
            joined = buf;
            size_t o = 0;
            for (const hv_span *s = first; s <= last; s++) {
                memcpy(buf + o, x + s->start, (s->end - s->start) * sizeof *buf);
                o += s->end - s->start;
            }
            cx = buf;
        }
        if ((st = transcribe_piece(&R, cx, len, &plan, i, res, i == 0 ? taps : NULL))) goto stopped;
        done_s = (double)(last->end - off) / c->sample_rate;
        if (p.progress && !R.stop) p.progress(p.progress_user, done_s, part_s);
    }
    if (R.stop) {
        st = hv_err(e, HV_ERR_CANCELLED, "transcription cancelled");
        goto stopped;
    }
    /* speech detection may leave the end (or everything) out */
    if (p.progress && done_s < part_s) p.progress(p.progress_user, part_s, part_s);
    if ((st = regroup_speakers(&R, res)) || (st = result_finish(res, e))) goto done;
    if (taps) {
        if (!samples && (samples = malloc((n ? n : 1) * sizeof *samples)))
            memcpy(samples, x, n * sizeof *samples);
        if (!samples) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory");
            goto done;
        }
        taps->samples = samples;
        taps->n_samples = n;
        samples = NULL;
    }
    *out = res;
    res = NULL;
    goto done;
stopped:
    /* with a segment_callback, a stop gives what was done */
    if (st == HV_ERR_CANCELLED && p.segment_callback) {
        res->stopped = 1;
        if ((st = regroup_speakers(&R, res)) == HV_OK && (st = result_finish(res, e)) == HV_OK) {
            hv_err_clear(e);
            *out = res;
            res = NULL;
        }
    }
done:
    if (st && taps) hv_taps_free(taps);
    hv_result_free(res);
    free(samples);
    free(joined);
    hv_piece_plan_free(&plan);
    free(R.tok_buf);
    free(R.lp_buf);
    free(R.speech);
    hv_pos_cache_free(&R.pos);
    hv_hotwords_free(&R.hotwords);
    hv_stitch_free(&R.stitch);
    free(R.cuts);
    return st;
}

hv_status hv_transcribe(hv_context *ctx, const float *pcm, size_t n_frames, int sample_rate,
                        int channels, const hv_transcribe_params *params, hv_result **out) {
    return hv_transcribe_taps(ctx, pcm, n_frames, sample_rate, channels, params, out, NULL);
}

const char *hv_result_text(const hv_result *r) { return r->text; }
int hv_result_n_tokens(const hv_result *r) { return r->n_tokens; }
const int32_t *hv_result_tokens(const hv_result *r) { return r->tokens; }
hv_timings hv_result_timings(const hv_result *r) { return r->timings; }
const float *hv_result_token_logprobs(const hv_result *r) { return r->logprobs; }
double hv_result_score(const hv_result *r) { return r->score; }

double hv_result_duration(const hv_result *r) { return r->duration; }
const char *hv_result_language(const hv_result *r) { return r->language; }
int hv_result_n_segments(const hv_result *r) { return r->n_segs; }
int hv_result_stopped(const hv_result *r) { return r->stopped; }
int hv_result_n_words(const hv_result *r) { return r->n_words; }
const hv_word *hv_result_words(const hv_result *r) { return r->words; }

hv_segment hv_result_segment(const hv_result *r, int i) {
    hv_segment g = {.speaker = -1};
    if (i < 0 || i >= r->n_segs) return g;
    const hv_result_seg *s = &r->segs[i];
    double rate = r->sample_rate;
    g.start_sample = s->start_sample;
    g.end_sample = s->end_sample;
    g.start = s->start_sample / rate;
    g.end = s->end_sample / rate;
    g.text = s->text;
    g.tokens = r->tokens + s->token_offset;
    g.token_logprobs = r->logprobs + s->token_offset;
    g.n_tokens = s->n_tokens;
    g.score = s->score;
    g.words = r->words + s->word_offset;
    g.n_words = s->n_words;
    g.first_token = s->token_offset;
    g.temperature = s->temperature;
    g.avg_logprob = s->avg_logprob;
    g.compression_ratio = s->compression_ratio;
    g.no_speech_prob = s->no_speech_prob;
    g.speaker = s->speaker;
    return g;
}

hv_status hv_chunking_parse(const char *name, hv_chunking *out) {
    const hv_param *row = hv_param_find("chunking"); /* its names: params.c */
    int n = 0;
    while (row->choices[n]) n++;
    int i = name_index(name, row->choices, n);
    if (i >= 0) *out = (hv_chunking)i;
    return i >= 0 ? HV_OK : HV_ERR_INVALID_ARG;
}

void hv_result_free(hv_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n_segs; i++) free(r->segs[i].text);
    free(r->segs);
    for (int i = 0; i < r->n_words; i++) free((char *)r->words[i].text);
    free(r->words);
    free(r->text);
    free(r->tokens);
    free(r->logprobs);
    free(r);
}
