/* The public API: model loading, contexts, and the transcription pipeline
 * samples -> features -> encoder states -> tokens -> text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "encoder.h"
#include "pipeline.h"
#include "search.h"

/* ---------------------------------------------------------------- model */

hv_model_params hv_model_default_params(void) {
    hv_model_params p = {0};
    return p;
}

hv_status hv_model_load(const char *model_dir, const hv_model_params *params,
                        hv_model **out, char *errbuf, size_t errbuf_size) {
    hv_error e = {0};
    hv_status st;
    hv_safetensors sf = {0};
    *out = NULL;
    if (!model_dir || !*model_dir) {
        st = hv_err(&e, HV_ERR_INVALID_ARG, "no model directory given");
        goto fail_early;
    }
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
    if (m->tok.n_pieces != m->cfg.vocab_size) {
        st = hv_err(&e, HV_ERR_FORMAT,
                    "%s: %d pieces, but config.json vocab_size is %d", path,
                    m->tok.n_pieces, m->cfg.vocab_size);
        goto fail;
    }
    if ((st = hv_st_open_dir(&sf, model_dir, &e))) goto fail;
    if ((st = hv_weights_load(&m->w, &m->cfg, &sf, &e))) {
        hv_err_prefix(&e, "%s", model_dir);
        goto fail;
    }
    hv_st_close(&sf); /* everything needed was converted */
    if ((st = hv_frontend_init(&m->fe, &m->cfg, m->w.fe_window, m->w.fe_fb, &e)))
        goto fail;
    /* The reference rounds a computed window and filterbank to bf16, as the
     * checkpoints that carry them store them. */
    if (!m->w.fe_window && !m->w.fe_fb) hv_frontend_round_bf16(&m->fe);
    *out = m;
    return HV_OK;
fail:
    hv_st_close(&sf);
    hv_model_free(m);
fail_early:
    hv_err_copy(&e, errbuf, errbuf_size);
    return st;
}

void hv_model_free(hv_model *m) {
    if (!m) return;
    hv_frontend_free(&m->fe);
    hv_weights_free(&m->w);
    hv_tokenizer_free(&m->tok);
    hv_config_free(&m->cfg);
    free(m);
}

int hv_model_sample_rate(const hv_model *m) { return m->cfg.sample_rate; }
int hv_model_n_languages(const hv_model *m) { return m->cfg.n_languages; }
const char *hv_model_language(const hv_model *m, int i) {
    return i >= 0 && i < m->cfg.n_languages ? m->cfg.languages[i] : NULL;
}

/* -------------------------------------------------------------- context */

hv_context *hv_context_new(const hv_model *model, int n_threads) {
    hv_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    ctx->model = model;
    ctx->pool = hv_pool_new(n_threads > 0 ? n_threads : model->n_threads);
    if (!ctx->pool ||
        hv_decoder_init(&ctx->dec, &model->cfg, &model->w.dec, &ctx->err)) {
        hv_context_free(ctx);
        return NULL;
    }
    return ctx;
}

void hv_context_free(hv_context *ctx) {
    if (!ctx) return;
    hv_decoder_free(&ctx->dec);
    hv_pool_free(ctx->pool);
    free(ctx);
}

const char *hv_context_error(const hv_context *ctx) {
    return ctx ? ctx->err.msg : "no context";
}

/* ----------------------------------------------------------- transcribe */

hv_transcribe_params hv_transcribe_default_params(void) {
    hv_transcribe_params p = {0};
    p.language = NULL;
    p.punctuation = 1;
    p.max_new_tokens = 0;
    p.dither = -1.0f;
    p.dither_seed = 0;
    p.num_beams = 1;
    p.length_penalty = 1.0f;
    p.do_sample = 0;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.seed = 0;
    return p;
}

/* Checks the decoding options (docs/DECODING.md, "Validation"). */
static hv_status check_decoding(const hv_transcribe_params *p, hv_error *e) {
    if (p->num_beams < 1 || p->num_beams > 64)
        return hv_err(e, HV_ERR_INVALID_ARG, "num_beams %d: must be between 1 and 64",
                      p->num_beams);
    if (!isfinite(p->length_penalty) || p->length_penalty <= 0)
        return hv_err(e, HV_ERR_INVALID_ARG, "length_penalty %g: must be finite and > 0",
                      p->length_penalty);
    if (p->do_sample && p->num_beams != 1)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "sampling works with one beam only (num_beams is %d)", p->num_beams);
    if (!isfinite(p->temperature) || p->temperature <= 0)
        return hv_err(e, HV_ERR_INVALID_ARG, "temperature %g: must be finite and > 0",
                      p->temperature);
    if (p->top_k < 0)
        return hv_err(e, HV_ERR_INVALID_ARG, "top_k %d: must be >= 0", p->top_k);
    if (!(p->top_p > 0 && p->top_p <= 1))
        return hv_err(e, HV_ERR_INVALID_ARG, "top_p %g: must be in (0, 1]", p->top_p);
    return HV_OK;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *default_language(const hv_config *c) {
    return hv_config_find_language(c, "da") >= 0 ? "da" : c->languages[0];
}

void hv_taps_free(hv_taps *t) {
    if (!t) return;
    free(t->samples);
    free(t->features);
    free(t->enc);
    free(t->logprobs0);
    memset(t, 0, sizeof *t);
}

static float *dup_floats(const float *x, size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    if (p && n) memcpy(p, x, n * sizeof *p);
    return p;
}

hv_status hv_transcribe_taps(hv_context *ctx, const float *pcm, size_t n_frames,
                             int sample_rate, int channels,
                             const hv_transcribe_params *params,
                             hv_result **out, hv_taps *taps) {
    const hv_model *m = ctx->model;
    const hv_config *c = &m->cfg;
    hv_error *e = &ctx->err;
    hv_transcribe_params p = params ? *params : hv_transcribe_default_params();
    float *samples = NULL, *feat = NULL, *enc = NULL;
    hv_result *res = NULL;
    hv_status st;
    size_t n = 0;
    int n_fr = 0, n_valid = 0, n_enc = 0, enc_len = 0;
    double t0 = now_ms(), t1, t2;
    hv_err_clear(e);
    *out = NULL;
    if (taps) memset(taps, 0, sizeof *taps);

    /* options */
    const char *lang = p.language ? p.language : default_language(c);
    int32_t prompt[HV_PROMPT_MAX];
    int n_prompt;
    if ((st = hv_tokenizer_prompt(&m->tok, c, lang, p.punctuation != 0, prompt,
                                  &n_prompt, e)))
        return st;
    int room = c->dec_max_seq - n_prompt;
    if (p.max_new_tokens < 0 || room < 1 || p.max_new_tokens > room)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "max_new_tokens %d: must be between 1 and %d (the "
                      "decoder's max_sequence_length %d minus the %d-token prompt)",
                      p.max_new_tokens, room, c->dec_max_seq, n_prompt);
    int max_new = p.max_new_tokens ? p.max_new_tokens
                                   : (c->max_new_tokens < room ? c->max_new_tokens : room);
    if ((st = check_decoding(&p, e))) return st;
    float dither = p.dither < 0 ? c->dither : p.dither;
    if (!isfinite(dither))
        return hv_err(e, HV_ERR_INVALID_ARG, "dither must be finite");
    if (!pcm || channels < 1 || sample_rate < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "bad audio buffer (%d channels, %d Hz)",
                      channels, sample_rate);

    /* samples at the model's rate */
    if ((st = hv_audio_to_mono(pcm, n_frames, channels, sample_rate, c->sample_rate,
                               &samples, &n, e)))
        goto done;
    /* MODEL.md: longer audio than this is cut into chunks, which this
     * version does not do yet. */
    double max_s = c->max_audio_clip_s - c->overlap_chunk_second;
    if ((double)n > max_s * c->sample_rate) {
        st = hv_err(e, HV_ERR_LIMIT,
                    "audio is %.1f s long; this version transcribes at most "
                    "%g s (max_audio_clip_s - overlap_chunk_second) in one piece",
                    (double)n / c->sample_rate, max_s);
        goto done;
    }

    /* features */
    if ((st = hv_frontend_compute(&m->fe, samples, n, dither, p.dither_seed,
                                  ctx->pool, &feat, &n_fr, &n_valid, e)))
        goto done;
    t1 = now_ms();

    /* encoder */
    if ((st = hv_encoder_forward(c, &m->w.enc, ctx->pool, feat, n_fr, n_valid,
                                 &enc, &n_enc, &enc_len, e)))
        goto done;
    t2 = now_ms();

    /* decoder */
    res = calloc(1, sizeof *res);
    if (res) {
        res->tokens = malloc((size_t)max_new * sizeof *res->tokens);
        res->logprobs = malloc((size_t)max_new * sizeof *res->logprobs);
    }
    if (taps) taps->logprobs0 = malloc((size_t)c->vocab_size * sizeof(float));
    if (!res || !res->tokens || !res->logprobs || (taps && !taps->logprobs0)) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    hv_search_params sp = {max_new, c->eos_token_id, p.num_beams, p.length_penalty,
                           p.do_sample, p.temperature, p.top_k, p.top_p, p.seed};
    hv_search_out so = {res->tokens, res->logprobs, 0, 0};
    if ((st = hv_decoder_begin(&ctx->dec, ctx->pool, enc, n_enc, enc_len, p.num_beams, e)) ||
        (st = hv_search(&ctx->dec, ctx->pool, prompt, n_prompt, &sp, &so,
                        taps ? taps->logprobs0 : NULL, e)))
        goto done;
    res->n_tokens = so.n;
    res->score = so.score;
    res->text = hv_tokenizer_decode(&m->tok, res->tokens, res->n_tokens);
    if (!res->text) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory");
        goto done;
    }
    res->timings.frontend_ms = t1 - t0;
    res->timings.encoder_ms = t2 - t1;
    res->timings.decoder_ms = now_ms() - t2;
    res->timings.n_tokens = res->n_tokens;

    if (taps) {
        taps->samples = samples; taps->n_samples = n; samples = NULL;
        taps->features = feat; taps->n_frames = n_fr; taps->n_valid = n_valid; feat = NULL;
        taps->enc = dup_floats(enc, (size_t)n_enc * c->dec_hidden);
        taps->n_enc = n_enc; taps->enc_len = enc_len;
        memcpy(taps->prompt, prompt, sizeof prompt);
        taps->n_prompt = n_prompt;
        if (!taps->enc) {
            st = hv_err(e, HV_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    *out = res;
    res = NULL;
done:
    if (st && taps) hv_taps_free(taps);
    hv_result_free(res);
    free(samples);
    free(feat);
    free(enc);
    return st;
}

hv_status hv_transcribe(hv_context *ctx, const float *pcm, size_t n_frames,
                        int sample_rate, int channels,
                        const hv_transcribe_params *params, hv_result **out) {
    return hv_transcribe_taps(ctx, pcm, n_frames, sample_rate, channels, params,
                              out, NULL);
}

const char *hv_result_text(const hv_result *r) { return r->text; }
int hv_result_n_tokens(const hv_result *r) { return r->n_tokens; }
const int32_t *hv_result_tokens(const hv_result *r) { return r->tokens; }
hv_timings hv_result_timings(const hv_result *r) { return r->timings; }
const float *hv_result_token_logprobs(const hv_result *r) { return r->logprobs; }
double hv_result_score(const hv_result *r) { return r->score; }

void hv_result_free(hv_result *r) {
    if (!r) return;
    free(r->text);
    free(r->tokens);
    free(r->logprobs);
    free(r);
}
