/* The detector's reading of one input kept for a transcription of the same
 * input (hv_transcribe_params.speech), so the detector runs once where a
 * caller needs its regions before transcribing (faster-whisper's
 * duration_after_vad). The reading remembers what it was made from, so a
 * transcription of other samples or with other settings is refused rather
 * than planned on the wrong regions. */
#include "audio/speech.h"

#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "pipeline.h"

/* FNV-1a's step over 64-bit words in four independent lanes (the
 * multiplies overlap instead of waiting on each other: about 6x faster than
 * bytewise over 20 minutes of audio). Each step is a bijection of the lane,
 * so a change in any one word always changes the result. Ties a reading to
 * its input; not a defence against a chosen collision. */
static uint64_t samples_hash(const float *x, size_t n) {
    const unsigned char *b = (const unsigned char *)x;
    const uint64_t prime = 1099511628211ull;
    uint64_t h[4] = {1469598103934665603ull, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                     0x165667b19e3779f9ull};
    size_t bytes = n * sizeof *x, i = 0;
    for (; i + 32 <= bytes; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * l, 8);
            h[l] = (h[l] ^ w) * prime;
        }
    for (; i < bytes; i++) h[0] = (h[0] ^ b[i]) * prime;
    uint64_t r = (uint64_t)bytes;
    for (int l = 0; l < 4; l++) r = (r ^ h[l] ^ (h[l] >> 29)) * prime;
    return r;
}

static int same_params(const hv_vad_params *a, const hv_vad_params *b) {
    return a->threshold == b->threshold && a->neg_threshold == b->neg_threshold &&
           a->min_speech_ms == b->min_speech_ms && a->min_silence_ms == b->min_silence_ms &&
           a->speech_pad_ms == b->speech_pad_ms && a->max_speech_s == b->max_speech_s &&
           a->edges == b->edges;
}

hv_status hv_vad_speech(hv_context *ctx, const hv_vad *vad, const float *pcm, size_t n_frames,
                        int sample_rate, int channels, const hv_vad_params *params,
                        hv_speech **out) {
    if (!ctx) return HV_ERR_INVALID_ARG;
    hv_error *e = &ctx->err;
    hv_err_clear(e);
    if (!vad || !out) return hv_err(e, HV_ERR_INVALID_ARG, "hv_vad_speech: NULL argument");
    *out = NULL;
    hv_vad_params p = params ? *params : hv_vad_default_params();
    hv_status st = hv_vad_check_params(&p, e);
    if (st) return st;
    hv_speech *s = calloc(1, sizeof *s);
    if (!s) return hv_err(e, HV_ERR_NOMEM, "out of memory");
    float *x = NULL;
    if ((st = hv_audio_to_mono(pcm, n_frames, channels, sample_rate, vad->sample_rate, &x, &s->n,
                               e)))
        goto fail;
    s->vad = vad;
    s->params = p;
    s->hash = samples_hash(x, s->n);
    s->n_probs = hv_vad_n_windows(vad, s->n);
    if ((st = hv_vad_detect(vad, ctx->pool, x, s->n, &p, &s->regions, &s->n_regions, &s->probs, e)))
        goto fail;
    free(x);
    *out = s;
    return HV_OK;
fail:
    free(x);
    hv_speech_free(s);
    return st;
}

size_t hv_speech_regions(const hv_speech *speech, const hv_speech_region **regions) {
    if (regions) *regions = speech ? speech->regions : NULL;
    return speech ? speech->n_regions : 0;
}

void hv_speech_free(hv_speech *speech) {
    if (!speech) return;
    free(speech->probs);
    free(speech->regions);
    free(speech);
}

hv_status hv_speech_check(const hv_speech *s, const hv_vad *vad, const hv_vad_params *params,
                          const float *x, size_t n, hv_error *e) {
    if (s->vad != vad)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "hv_transcribe_params.speech: read by another detector than params.vad");
    if (!same_params(&s->params, params))
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "hv_transcribe_params.speech: read with other settings than "
                      "params.vad_params");
    if (s->n != n || s->hash != samples_hash(x, n))
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "hv_transcribe_params.speech: the reading of another input (%zu samples "
                      "at %d Hz, not these %zu)",
                      s->n, vad->sample_rate, n);
    return HV_OK;
}
