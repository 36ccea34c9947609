/* Word times through the public API, on the demo model: every decoding
 * mode and chunking mode gives words that cover the transcript, in order,
 * inside the audio and on the input's timeline (also where speech
 * detection left a pause out), tied to the result's tokens; without the
 * option there are none; a one-token transcript still gets a word. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

#define SR 16000

typedef struct audio {
    float *x;
    size_t n;
} audio;

/* Speech onset: the first sample louder than a tenth of the peak. */
static double onset(const float *x, size_t n) {
    float peak = 0;
    for (size_t i = 0; i < n; i++) peak = fmaxf(peak, fabsf(x[i]));
    size_t a = 0;
    while (a < n && fabsf(x[a]) < 0.1f * peak) a++;
    return (double)a / SR;
}

/* The clip, `pause` seconds of silence, the clip again. */
static audio twice(const float *clip, size_t n, double pause) {
    size_t gap = (size_t)(pause * SR);
    audio a = {calloc(2 * n + gap, sizeof(float)), 2 * n + gap};
    memcpy(a.x, clip, n * sizeof *clip);
    memcpy(a.x + n + gap, clip, n * sizeof *clip);
    return a;
}

/* Checks the words of r against its text, tokens, segments and length;
 * returns the number of words. */
static int check_words(const hv_result *r, const char *what) {
    int nw = hv_result_n_words(r), nt = hv_result_n_tokens(r);
    const hv_word *w = hv_result_words(r);
    CHECK_MSG(w != NULL, "%s: words NULL", what);
    double dur = hv_result_duration(r);
    /* the words' texts, joined, are the transcript */
    size_t len = 1;
    for (int i = 0; i < nw; i++) len += strlen(w[i].text) + 1;
    char *joined = calloc(len, 1);
    for (int i = 0; i < nw; i++) {
        if (i) strcat(joined, " ");
        strcat(joined, w[i].text);
    }
    CHECK_MSG(!strcmp(joined, hv_result_text(r)), "%s: words \"%s\" vs text \"%s\"", what, joined,
              hv_result_text(r));
    free(joined);
    for (int i = 0; i < nw; i++) {
        CHECK_MSG(w[i].start >= 0 && w[i].start <= w[i].end && w[i].end <= dur + 1e-9,
                  "%s: word %d \"%s\" at %.3f-%.3f of %.3f s", what, i, w[i].text, w[i].start,
                  w[i].end, dur);
        CHECK_MSG(i == 0 || (w[i].start >= w[i - 1].start && w[i].start >= w[i - 1].end - 1e-9),
                  "%s: word %d starts at %.3f before word %d (%.3f-%.3f)", what, i, w[i].start,
                  i - 1, w[i - 1].start, w[i - 1].end);
        CHECK_MSG(w[i].n_tokens >= 1 && w[i].first_token >= 0 &&
                      w[i].first_token + w[i].n_tokens <= nt &&
                      (i == 0 || w[i].first_token >= w[i - 1].first_token + w[i - 1].n_tokens),
                  "%s: word %d tokens %d+%d of %d", what, i, w[i].first_token, w[i].n_tokens, nt);
        CHECK_MSG(w[i].probability > 0 && w[i].probability <= 1, "%s: word %d probability %g", what,
                  i, w[i].probability);
    }
    /* each segment's words are a run of the result's, inside it */
    int seen = 0;
    for (int s = 0; s < hv_result_n_segments(r); s++) {
        hv_segment g = hv_result_segment(r, s);
        CHECK_MSG(g.words == w + seen, "%s: segment %d words not at %d", what, s, seen);
        for (int i = 0; i < g.n_words; i++)
            CHECK_MSG(g.words[i].start >= g.start - 0.1 && g.words[i].end <= g.end + 0.1,
                      "%s: segment %d (%.3f-%.3f) word \"%s\" at %.3f-%.3f", what, s, g.start,
                      g.end, g.words[i].text, g.words[i].start, g.words[i].end);
        seen += g.n_words;
    }
    CHECK_MSG(seen == nw, "%s: segments hold %d of %d words", what, seen, nw);
    return nw;
}

static hv_result *run(hv_context *ctx, const audio *a, hv_transcribe_params tp) {
    hv_result *r = NULL;
    CHECK_MSG(hv_transcribe(ctx, a->x, a->n, SR, 1, &tp, &r) == HV_OK, "transcribe: %s",
              hv_context_error(ctx));
    return r;
}

static void test_modes(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n) {
    audio a = {(float *)clip, n};
    hv_transcribe_params tp = hv_transcribe_default_params();
    hv_result *r = run(ctx, &a, tp);
    CHECK(r && hv_result_n_words(r) == 0 && hv_result_words(r) != NULL);
    CHECK(r && hv_result_n_segments(r) == 1 && hv_result_segment(r, 0).n_words == 0);
    CHECK(r && hv_result_timings(r).align_ms == 0);
    hv_result_free(r);

    struct {
        const char *name;
        int beams, sample;
        hv_chunking chunking;
    } modes[] = {
        {"greedy", 1, 0, HV_CHUNKING_ENERGY},     {"beams 4", 4, 0, HV_CHUNKING_ENERGY},
        {"sampling", 1, 1, HV_CHUNKING_ENERGY},   {"greedy vad", 1, 0, HV_CHUNKING_VAD},
        {"beams 2 none", 2, 0, HV_CHUNKING_NONE}, {"sampling fixed", 1, 1, HV_CHUNKING_FIXED}};
    double first = onset(clip, n);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        tp = hv_transcribe_default_params();
        tp.word_timestamps = 1;
        tp.num_beams = modes[m].beams;
        tp.do_sample = modes[m].sample;
        tp.seed = 3;
        tp.temperature = 0.8f;
        tp.chunking = modes[m].chunking;
        tp.chunk_seconds = 1.5f;
        tp.vad = vad;
        r = run(ctx, &a, tp);
        if (!r) continue;
        int nw = check_words(r, modes[m].name);
        CHECK_MSG(nw >= 3, "%s: %d words", modes[m].name, nw);
        CHECK_MSG(hv_result_timings(r).align_ms > 0, "%s: no alignment time", modes[m].name);
        /* the first word starts at the speech (fixed chunks may cut it) */
        if (nw && modes[m].chunking != HV_CHUNKING_FIXED)
            CHECK_MSG(fabs(hv_result_words(r)[0].start - first) < 0.12,
                      "%s: first word at %.3f, speech at %.3f", modes[m].name,
                      hv_result_words(r)[0].start, first);
        hv_result_free(r);
    }
}

/* Speech detection sends the two sentences with 1 s of the 2.5 s pause
 * between them to the encoder in one chunk: the second sentence's words
 * are on the input's timeline, where the audio has them. */
static void test_time_map(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n) {
    audio a = twice(clip, n, 2.5);
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.word_timestamps = 1;
    tp.vad = vad;
    hv_result *r = run(ctx, &a, tp);
    double second = (double)n / SR + 2.5 + onset(clip, n);
    if (r) {
        int nw = check_words(r, "vad, a pause left out");
        hv_timings t = hv_result_timings(r);
        CHECK_MSG(t.encoded_s < hv_result_duration(r) - 1.0, "%.2f of %.2f s encoded", t.encoded_s,
                  hv_result_duration(r));
        CHECK_MSG(hv_result_n_segments(r) == 1, "%d segments", hv_result_n_segments(r));
        const hv_word *w = hv_result_words(r);
        int k = nw / 2; /* the second sentence's first word */
        CHECK_MSG(nw % 2 == 0 && nw >= 4, "%d words", nw);
        if (nw >= 4) {
            CHECK_MSG(fabs(w[k].start - second) < 0.12, "second sentence at %.3f, speech at %.3f",
                      w[k].start, second);
            CHECK_MSG(w[k - 1].end < (double)n / SR + 0.2, "first sentence ends at %.3f",
                      w[k - 1].end);
            for (int i = k; i < nw; i++) /* the same words, the same times + the offset */
                CHECK_MSG(fabs(w[i].start - w[i - k].start - (second - onset(clip, n))) < 0.25,
                          "word %d \"%s\" at %.3f, its twin at %.3f", i, w[i].text, w[i].start,
                          w[i - k].start);
        }
    }
    hv_result_free(r);
    free(a.x);
}

/* A one-token transcript (max_new_tokens 1) is one word; no speech, no
 * words. */
static void test_one_token(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n) {
    audio a = {(float *)clip, n};
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.word_timestamps = 1;
    tp.max_new_tokens = 1;
    tp.chunking = HV_CHUNKING_ENERGY;
    hv_result *r = run(ctx, &a, tp);
    if (r) {
        CHECK_MSG(hv_result_n_tokens(r) == 1 && check_words(r, "one token") == 1, "%d tokens",
                  hv_result_n_tokens(r));
        const hv_word *w = hv_result_words(r);
        CHECK(hv_result_n_words(r) == 1 && w[0].first_token == 0 && w[0].n_tokens == 1);
    }
    hv_result_free(r);
    /* silence: no text, no words */
    float *quiet = calloc(3 * SR, sizeof *quiet);
    audio s = {quiet, 3 * SR};
    tp.max_new_tokens = 0;
    tp.chunking = HV_CHUNKING_VAD;
    tp.vad = vad;
    r = run(ctx, &s, tp);
    CHECK(r && hv_result_n_words(r) == 0 && hv_result_words(r) != NULL);
    hv_result_free(r);
    free(quiet);
}

int main(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d) == 0) {
        test_modes(d.ctx, d.vad, d.clip, d.n_clip);
        test_time_map(d.ctx, d.vad, d.clip, d.n_clip);
        test_one_token(d.ctx, d.vad, d.clip, d.n_clip);
    }
    hv_test_demo_free(&d);
    TEST_END();
}
