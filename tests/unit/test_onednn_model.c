/* The whole pipeline with its products on the oneDNN engine, on every
 * host. Where the CPU multiplies bf16 natively, bf16 compute sends the
 * encoder's, the prefill's and the cross-attention's many-row products
 * through hv_onednn_gemm (bias, SiLU, ReLU and residual epilogues,
 * hv_linear_many, the subsampling's time x frequency rows in their shape
 * classes); elsewhere that engine is never made. Here the demo model is
 * loaded with f32 weights and given oneDNN's f32 engine, which runs the
 * same calls on every x86-64 CPU: its transcription of the example must
 * give the tokens of our own kernels with log-probs within f32 summation
 * order, on 1 and 3 threads, and the engine must have run (primitives
 * made). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "kernels/onednn.h"
#include "pipeline.h"
#include "testlib.h"

/* The demo model with f32 weights in f32 compute; with the oneDNN f32
 * engine as its matrix engine when engine is set (the model frees it). */
static hv_model *load(int engine) {
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 2;
    mp.weight_type = HV_WEIGHTS_F32;
    mp.compute = HV_COMPUTE_F32;
    hv_model *m = NULL;
    char err[512];
    CHECK_MSG(hv_model_load(hv_test_path(src, "models/demo"), &mp, &m, err, sizeof err) == HV_OK,
              "%s", err);
    if (m && engine) {
        m->dnn = hv_onednn_new(0);
        CHECK(m->dnn != NULL);
        /* every class oneDNN can run, whatever this CPU's class picks */
        m->on_dnn[HV_CLASS_SKINNY] = m->on_dnn[HV_CLASS_GEMM] = m->on_dnn[HV_CLASS_ATTENTION] = 1;
    }
    return m;
}

static hv_result *transcribe(hv_model *m, int threads, const float *pcm, size_t n, int rate,
                             int ch) {
    hv_context *ctx = hv_test_context(m, threads);
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.dither = 0;
    hv_result *r = NULL;
    CHECK_MSG(ctx && hv_transcribe(ctx, pcm, n, rate, ch, &tp, &r) == HV_OK, "transcribe: %s",
              ctx ? hv_context_error(ctx) : "no context");
    hv_context_free(ctx);
    return r;
}

int main(void) {
    if (!hv_onednn_compiled()) {
        CHECK(hv_onednn_new(0) == NULL); /* built without oneDNN: nothing to run */
        TEST_END();
    }
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    float *pcm = NULL;
    size_t n = 0;
    int rate = 0, ch = 0;
    char err[512];
    if (hv_audio_read(hv_test_path(src, "examples/da-example.wav"), &pcm, &n, &rate, &ch, err,
                      sizeof err)) {
        CHECK_MSG(0, "%s", err);
        TEST_END();
    }
    hv_model *ours = load(0), *dnn = load(1);
    hv_result *ref = ours ? transcribe(ours, 1, pcm, n, rate, ch) : NULL;
    for (int threads = 1; ref && dnn && dnn->dnn && threads <= 3; threads += 2) {
        hv_result *r = transcribe(dnn, threads, pcm, n, rate, ch);
        if (!r) continue;
        int nt = hv_result_n_tokens(r);
        CHECK_MSG(!strcmp(hv_result_text(r), hv_result_text(ref)), "%d threads: '%s' vs '%s'",
                  threads, hv_result_text(r), hv_result_text(ref));
        CHECK_MSG(nt == hv_result_n_tokens(ref) && nt > 0 &&
                      !memcmp(hv_result_tokens(r), hv_result_tokens(ref), nt * sizeof(int32_t)),
                  "%d threads: tokens differ (%d vs %d)", threads, nt, hv_result_n_tokens(ref));
        double worst = 0;
        for (int i = 0; i < nt && nt == hv_result_n_tokens(ref); i++) {
            double d = fabs(hv_result_token_logprobs(r)[i] - hv_result_token_logprobs(ref)[i]);
            if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
        }
        /* f32 sums in oneDNN's order instead of ours: a few units in the
         * last place of the activations, far below 1e-3 in a log-prob;
         * a missing bias, epilogue or residual moves them by far more */
        CHECK_MSG(worst <= 1e-3, "%d threads: log-probs differ by up to %g", threads, worst);
        printf("oneDNN f32 engine, %d threads: %d tokens (ours %d), log-probs within %.2g\n",
               threads, nt, hv_result_n_tokens(ref), worst);
        hv_result_free(r);
    }
    int made = dnn ? hv_onednn_primitives(dnn->dnn) : 0;
    CHECK_MSG(made > 0, "the engine made no primitive (%d): the products did not go through it",
              made);
    printf("oneDNN primitives made: %d\n", made);
    hv_result_free(ref);
    hv_model_free(ours);
    hv_model_free(dnn);
    hv_free(pcm);
    TEST_END();
}
