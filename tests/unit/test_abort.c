/* Stopping a transcription midway (hv_transcribe_params.abort_callback),
 * on the demo model: asked before each chunk and each decoder step, a
 * non-zero answer ends the call with HV_ERR_CANCELLED and no result, at
 * once, in every decoding mode; the context goes on working. */
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

typedef struct asks {
    int n;        /* times asked */
    int stop_at;  /* answer 1 from this ask on; 0: never */
    int progress; /* progress calls */
} asks;

static int on_abort(void *user) {
    asks *a = user;
    a->n++;
    return a->stop_at > 0 && a->n >= a->stop_at;
}

static void on_progress(void *user, double done, double total) {
    (void)done;
    (void)total;
    ((asks *)user)->progress++;
}

static hv_status run(hv_context *ctx, const float *x, size_t n, int beams, asks *a, hv_result **r) {
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.chunking = HV_CHUNKING_FIXED; /* several chunks */
    tp.chunk_seconds = 1.5f;
    tp.num_beams = beams;
    tp.abort_callback = on_abort;
    tp.abort_user = a;
    tp.progress = on_progress;
    tp.progress_user = a;
    *r = NULL;
    return hv_transcribe(ctx, x, n, 16000, 1, &tp, r);
}

int main(void) {
    hv_test_demo d;
    hv_test_demo_open(&d);
    if (d.ctx && d.clip) {
        for (int beams = 1; beams <= 3; beams += 2) {
            /* never: the same as without the callback */
            asks never = {0, 0, 0};
            hv_result *r;
            CHECK(run(d.ctx, d.clip, d.n_clip, beams, &never, &r) == HV_OK && r);
            int chunks = never.progress;
            CHECK_MSG(chunks >= 2 && never.n > chunks + hv_result_n_tokens(r) - 1,
                      "%d asks for %d chunks, %d tokens", never.n, chunks,
                      r ? hv_result_n_tokens(r) : -1);
            hv_result *plain = NULL;
            hv_transcribe_params tp = hv_transcribe_default_params();
            tp.chunking = HV_CHUNKING_FIXED;
            tp.chunk_seconds = 1.5f;
            tp.num_beams = beams;
            CHECK(hv_transcribe(d.ctx, d.clip, d.n_clip, 16000, 1, &tp, &plain) == HV_OK);
            CHECK(r && plain && !strcmp(hv_result_text(r), hv_result_text(plain)));
            hv_result_free(plain);
            int total = never.n;
            hv_result_free(r);

            /* at the first ask, in the middle of a chunk's decoding, at
             * the last ask: cancelled, nothing returned, asked no more */
            int stops[3] = {1, total / 2, total};
            for (int k = 0; k < 3; k++) {
                asks a = {0, stops[k], 0};
                hv_status st = run(d.ctx, d.clip, d.n_clip, beams, &a, &r);
                CHECK_MSG(st == HV_ERR_CANCELLED && !r && a.n == stops[k],
                          "beams %d, stop at ask %d of %d: status %d, asked %d times", beams,
                          stops[k], total, (int)st, a.n);
                CHECK(strstr(hv_context_error(d.ctx), "cancelled") != NULL);
                CHECK(a.progress < chunks);
                hv_result_free(r);
            }
            /* the context still works */
            asks again = {0, 0, 0};
            CHECK(run(d.ctx, d.clip, d.n_clip, beams, &again, &r) == HV_OK && r &&
                  again.n == total);
            hv_result_free(r);
        }
        CHECK(!strcmp(hv_status_name(HV_ERR_CANCELLED), "cancelled"));
    }
    hv_test_demo_free(&d);
    TEST_END();
}
