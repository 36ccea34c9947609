/* The decoder's shared cache blocks under beam search: three sequences
 * forked from one prompt, stepped with different tokens across several
 * cache blocks and reordered (copy on write of shared blocks) now and
 * then; each final sequence's log-probs after every token must be the bits
 * of replaying its tokens in a cache of its own on a fresh decoder. On every fixture model
 * and the demo model, with f32 weights (f32 caches) and q8_0 / q4_0 (f16
 * caches where the decoder's matrices are quantized; the test requires
 * that some case has them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"
#include "kernels/matmul.h"
#include "pipeline.h"
#include "testlib.h"

enum { SEQS = 3, PROMPT = 5, MAX_STEPS = 60 };

typedef struct history {
    int32_t tok[MAX_STEPS];
    float *lp; /* [MAX_STEPS x V]: log-probs after each token */
    int n;
} history;

static int half_cases;

static void check_model(hv_model *m, const char *dir, hv_weight_type type, void *user) {
    (void)user;
    const char *type_name = hv_weight_type_name(type);
    const hv_config *c = &m->cfg;
    int V = c->vocab_size, h = c->dec_hidden, n_enc = 23, enc_len = 19;
    int steps = c->dec_max_seq - PROMPT - 1;
    steps = steps > MAX_STEPS ? MAX_STEPS : steps;
    hv_pool *pool = hv_pool_new(2);
    hv_engine eng = hv_engine_make(pool, 0, NULL);
    hv_decoder beam = {0}, alone = {0};
    hv_error e = {0};
    float *enc = hv_test_noise((size_t)n_enc * (size_t)h, 11);
    history hist[SEQS] = {0}, next[SEQS];
    int ok = pool && enc && hv_decoder_init(&beam, c, &m->w.dec, &e) == HV_OK &&
             hv_decoder_init(&alone, c, &m->w.dec, &e) == HV_OK;
    for (int b = 0; ok && b < SEQS; b++)
        ok = (hist[b].lp = malloc((size_t)MAX_STEPS * V * sizeof(float))) != NULL;
    CHECK_MSG(ok, "%s %s: set up (%s)", dir, type_name, e.msg);
    int32_t prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++) prompt[i] = (7 * i + 3) % V;
    int seq0 = 0, all[SEQS] = {0, 1, 2};
    if (ok) {
        half_cases += beam.kv_half;
        ok = hv_decoder_begin(&beam, &eng, enc, n_enc, enc_len, SEQS, &e) == HV_OK &&
             hv_decoder_forward(&beam, &eng, &seq0, 1, prompt, PROMPT, &e) == HV_OK &&
             hv_decoder_reorder(&beam, (int[SEQS]){0, 0, 0}, SEQS, &e) == HV_OK;
        CHECK_MSG(ok, "%s %s: prompt and fork (%s)", dir, type_name, e.msg);
    }
    /* steps with a token per sequence; every 5th step a reorder that
     * duplicates one sequence and drops another */
    static const int parents[3][SEQS] = {{2, 0, 0}, {1, 1, 2}, {0, 2, 1}};
    for (int s = 0; ok && s < steps; s++) {
        int32_t tok[SEQS];
        for (int b = 0; b < SEQS; b++) tok[b] = (int32_t)((17 * s + 31 * b + 5) % V);
        ok = hv_decoder_forward(&beam, &eng, all, SEQS, tok, 1, &e) == HV_OK;
        CHECK_MSG(ok, "%s %s: step %d (%s)", dir, type_name, s, e.msg);
        for (int b = 0; ok && b < SEQS; b++) {
            history *y = &hist[b];
            y->tok[y->n] = tok[b];
            memcpy(y->lp + (size_t)y->n * V, beam.logits + (size_t)b * V,
                   (size_t)V * sizeof(float));
            y->n++;
        }
        if (ok && s % 5 == 4) {
            const int *par = parents[(s / 5) % 3];
            ok = hv_decoder_reorder(&beam, par, SEQS, &e) == HV_OK;
            for (int b = 0; ok && b < SEQS; b++) {
                next[b] = hist[par[b]];
                next[b].lp = malloc((size_t)MAX_STEPS * V * sizeof(float));
                ok = next[b].lp != NULL;
                if (ok)
                    memcpy(next[b].lp, hist[par[b]].lp, (size_t)hist[par[b]].n * V * sizeof(float));
            }
            for (int b = 0; b < SEQS; b++) {
                free(hist[b].lp);
                hist[b] = next[b];
            }
        }
    }
    /* the final sequences again, each in a cache of its own (no forks, no
     * reorders), stepped together so that every product has the beam
     * run's rows: the same kernels, so the same bits */
    if (ok) ok = hv_decoder_begin(&alone, &eng, enc, n_enc, enc_len, SEQS, &e) == HV_OK;
    for (int b = 0; ok && b < SEQS; b++)
        ok = hv_decoder_forward(&alone, &eng, &all[b], 1, prompt, PROMPT, &e) == HV_OK;
    int same[SEQS] = {1, 1, 1};
    double worst = 0;
    for (int t = 0; ok && t < steps; t++) {
        int32_t tok[SEQS];
        for (int b = 0; b < SEQS; b++) tok[b] = hist[b].tok[t];
        ok = hv_decoder_forward(&alone, &eng, all, SEQS, tok, 1, &e) == HV_OK;
        for (int b = 0; ok && b < SEQS; b++) {
            const float *got = alone.logits + (size_t)b * V, *want = hist[b].lp + (size_t)t * V;
            same[b] &= !memcmp(got, want, (size_t)V * sizeof(float));
            for (int v = 0; v < V; v++) worst = fmax(worst, fabs(got[v] - want[v]));
        }
    }
    for (int b = 0; b < SEQS; b++)
        CHECK_MSG(ok && same[b],
                  "%s %s (%s cache): sequence %d's %d log-prob rows as in a cache of its own "
                  "(largest difference %.3g)",
                  dir, type_name, beam.kv_half ? "f16" : "f32", b, hist[b].n, worst);
    for (int b = 0; b < SEQS; b++) free(hist[b].lp);
    hv_decoder_free(&beam);
    hv_decoder_free(&alone);
    free(enc);
    hv_pool_free(pool);
}

int main(void) {
    static const hv_weight_type types[] = {HV_WEIGHTS_F32, HV_WEIGHTS_Q8_0, HV_WEIGHTS_Q4_0};
    CHECK_MSG(hv_test_each_model(types, sizeof types / sizeof *types, check_model, NULL) > 0,
              "fixture models listed");
    CHECK_MSG(half_cases > 0, "some case keeps f16 caches (%d)", half_cases);
    TEST_END();
}
