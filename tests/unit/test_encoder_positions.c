/* The encoder's relative-position projections from a cache (hv_pos_cache,
 * kept across the chunks of one transcription) against computing them per
 * chunk: bit for bit the same encoder output for chunks shorter than the
 * cache, longer ones (the cache is filled again), chunks too short for the
 * GEMM on their own, and every weight type's product (f32, bf16 and the
 * int8 GEMM of q8_0 and q4_0), on every fixture model and the demo model;
 * then whole multi-chunk transcriptions against each chunk transcribed on
 * its own. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "kernels/matmul.h"
#include "pipeline.h"
#include "testlib.h"

typedef struct enc_out {
    float *y;
    int n, len;
} enc_out;

static int encode(const hv_model *m, hv_pool *pool, const float *feat, int frames,
                  hv_pos_cache *cache, int hint, enc_out *o) {
    hv_error e = {0};
    int valid = frames - frames / 7; /* some padded frames too */
    hv_engine eng = hv_engine_make(pool, 0, NULL);
    hv_status st = hv_encoder_forward(&m->cfg, &m->w.enc, &eng, feat, frames, valid, cache, hint,
                                      &o->y, &o->n, &o->len, &e);
    CHECK_MSG(st == HV_OK, "encoder: %s", e.msg);
    return st == HV_OK ? 0 : -1;
}

static int same(const enc_out *a, const enc_out *b, int width) {
    return a->n == b->n && a->len == b->len &&
           !memcmp(a->y, b->y, (size_t)a->n * (size_t)width * sizeof(float));
}

static void check_model(hv_model *m, const char *dir, hv_weight_type type, void *user) {
    (void)user;
    const char *type_name = hv_weight_type_name(type);
    const hv_config *c = &m->cfg;
    hv_pool *pool = hv_pool_new(2);
    /* feature frames: encoder frames below HV_POS_MIN_FRAMES, a few
     * dozen, and the longest */
    enum { NC = 5 };
    int frames[NC] = {24, 96, 208, 400, 800};
    int width = c->dec_hidden;
    float *feat = hv_test_noise((size_t)frames[NC - 1] * (size_t)c->feat_in, 7);
    enc_out ref[NC] = {0}, got[NC] = {0};
    int ok = pool && feat;
    for (int k = 0; ok && k < NC; k++) ok = encode(m, pool, feat, frames[k], NULL, 0, &ref[k]) == 0;
    CHECK_MSG(ok, "%s %s: reference runs", dir, type_name);
    if (ok) {
        /* sized for chunk 3 by the hint, filled at the first chunk */
        hv_pos_cache pc = {0};
        int hint = ref[3].n, order[NC] = {1, 3, 0, 2, 4};
        for (int t = 0; t < NC; t++) {
            int k = order[t];
            if (encode(m, pool, feat, frames[k], &pc, hint, &got[k])) break;
            CHECK_MSG(same(&ref[k], &got[k], width),
                      "%s %s: %d frames from the cache (of %d) equal to computed alone", dir,
                      type_name, frames[k], pc.n);
            /* filled once for chunks 0..3, again for the longer chunk 4 */
            CHECK_MSG(pc.builds == (k == 4 ? 2 : 1) && pc.n >= got[k].n,
                      "%s %s: cache filled %d times, covers %d frames", dir, type_name, pc.builds,
                      pc.n);
        }
        CHECK(pc.n == ref[4].n);
        hv_pos_cache_free(&pc);
        CHECK(pc.p == NULL && pc.n == 0);
        hv_pos_cache_free(NULL);
    }
    for (int k = 0; k < NC; k++) {
        free(ref[k].y);
        free(got[k].y);
    }
    free(feat);
    hv_pool_free(pool);
}

/* A transcription of three chunks (fixed chunking: the cache is used)
 * gives each chunk's tokens and log-probabilities as transcribing that
 * chunk's samples alone (one chunk: no cache). */
static void check_transcription(hv_test_demo *d) {
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.dither = 0;
    tp.chunking = HV_CHUNKING_FIXED;
    tp.chunk_seconds = 4;
    int rate = hv_model_sample_rate(d->model);
    size_t chunk = (size_t)tp.chunk_seconds * (size_t)rate, n = 2 * chunk + chunk / 2;
    float *x = malloc(n * sizeof *x);
    if (!x) return;
    for (size_t i = 0; i < n; i++) x[i] = d->clip[i % d->n_clip];
    hv_result *all = NULL;
    CHECK_MSG(hv_transcribe(d->ctx, x, n, rate, 1, &tp, &all) == HV_OK, "%s",
              hv_context_error(d->ctx));
    CHECK(all && hv_result_n_segments(all) == 3);
    double alone = 0, saved = 0;
    int longest = 0;
    for (int s = 0; all && s < hv_result_n_segments(all); s++) {
        hv_segment g = hv_result_segment(all, s);
        hv_result *one = NULL;
        size_t len = (size_t)(g.end_sample - g.start_sample);
        CHECK(hv_transcribe(d->ctx, x + g.start_sample, len, rate, 1, &tp, &one) == HV_OK);
        if (!one) continue;
        int nt = g.n_tokens;
        CHECK_MSG(nt > 0 && hv_result_n_tokens(one) == nt &&
                      !memcmp(hv_result_tokens(one), g.tokens, (size_t)nt * sizeof *g.tokens) &&
                      !memcmp(hv_result_token_logprobs(one), g.token_logprobs,
                              (size_t)nt * sizeof *g.token_logprobs),
                  "chunk %d (%zu samples): the same %d tokens and log-probs alone", s, len, nt);
        /* the work counted: each chunk alone does its own projections, the
         * whole call those of its longest chunk once */
        const hv_model *m = d->model;
        int pad = m->fe.pad_to > 1 ? m->fe.pad_to : 1;
        int enc = hv_subsampled_len(&m->cfg, ((int)len / m->fe.hop + pad) / pad * pad);
        longest = enc > longest ? enc : longest;
        alone += hv_result_timings(one).encoder_gflop * 1e9;
        saved += hv_encoder_pos_flops(&m->cfg, enc);
        hv_result_free(one);
    }
    if (all) {
        double whole = hv_result_timings(all).encoder_gflop * 1e9;
        double want = alone - saved + hv_encoder_pos_flops(&d->model->cfg, longest);
        CHECK_MSG(whole < alone && fabs(whole - want) <= 1e-9 * want,
                  "encoder work %.6g flops in one call, %.6g expected (%.6g in chunks alone)",
                  whole, want, alone);
    }
    hv_result_free(all);
    free(x);
}

int main(void) {
    static const hv_weight_type types[] = {HV_WEIGHTS_F32, HV_WEIGHTS_BF16, HV_WEIGHTS_Q8_0,
                                           HV_WEIGHTS_Q4_0};
    CHECK_MSG(hv_test_each_model(types, sizeof types / sizeof *types, check_model, NULL) > 0,
              "fixture models listed");
    hv_test_demo d;
    CHECK_MSG(hv_test_demo_open(&d) == 0, "demo model, detector and clip");
    if (d.ctx && d.clip) check_transcription(&d);
    hv_test_demo_free(&d);
    TEST_END();
}
