/* Allocation failures, one at a time (issue #62; as SQLite's malloc-failure
 * tests): this program links a build of the library whose every
 * allocation goes through tests/alloc/alloc_hook.h. Each phase (loading
 * the model and the speech detector, reading and resampling audio,
 * transcribing with and without them, word times and cues) is run once
 * to count its allocations, then once per allocation with that one
 * failing: every run must end in HV_OK (an allocation the library can do
 * without) or HV_ERR_NOMEM with a message, never crash; under the
 * sanitizers (make test's ASan build) LeakSanitizer checks that nothing
 * leaks on any of those paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sndfile.h>

#include "alloc_counter.h"
#include "hviske.h"
#include "model/tokenizer.h"
#include "pipeline.h"
#include "testlib.h"
#include "timing/diarize_stitch.h"

static const char *src_dir, *tmp_dir;
static char wav44[4096];
static hv_model *model;
static hv_vad *vad;
static float *clip;     /* the example's first second, 16 kHz mono */
static float *stereo44; /* the same at 44.1 kHz, two channels */
static size_t n_clip, n_stereo44;
static char err[1024];

static hv_status load_model(void) {
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 1;
    hv_model *m = NULL;
    hv_status st = hv_model_load(hv_test_path(src_dir, "models/demo"), &mp, &m, err, sizeof err);
    CHECK_MSG(st != HV_OK || m, "HV_OK without a model");
    hv_model_free(m);
    return st;
}

static hv_status load_vad(void) {
    hv_vad *v = NULL;
    hv_status st = hv_vad_load(hv_test_path(src_dir, "models/silero-vad"), &v, err, sizeof err);
    hv_vad_free(v);
    return st;
}

static hv_status read_mono(void) {
    float *x = NULL;
    size_t n = 0;
    hv_status st = hv_audio_read_mono(wav44, 16000, 0, &x, &n, err, sizeof err);
    hv_free(x);
    return st;
}

static hv_status read_whole(void) {
    float *x = NULL;
    size_t n = 0;
    int rate = 0, ch = 0;
    hv_status st = hv_audio_read(wav44, &x, &n, &rate, &ch, err, sizeof err);
    hv_free(x);
    return st;
}

/* A transcription of pcm (a context of its own), its words' cues and a
 * cleaned text: whatever fails first. */
static hv_status transcribe(const float *pcm, size_t n, int rate, int ch, int detector, int words) {
    hv_context *ctx;
    hv_status st = hv_context_new(model, 1, &ctx, err, sizeof err);
    if (st) return st;
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.vad = detector ? vad : NULL;
    tp.chunking = detector ? HV_CHUNKING_VAD : HV_CHUNKING_NONE;
    tp.word_timestamps = words;
    hv_result *res = NULL;
    st = hv_transcribe(ctx, pcm, n, rate, ch, &tp, &res);
    if (st != HV_OK) snprintf(err, sizeof err, "%s", hv_context_error(ctx));
    CHECK_MSG(st != HV_OK || res, "HV_OK without a result");
    if (st == HV_OK && res && words) {
        hv_cue_params cp = hv_cue_default_params();
        hv_cue *cues = NULL;
        int n_cues = 0;
        st = hv_cues_build(hv_result_words(res), hv_result_n_words(res), &cp, &cues, &n_cues);
        hv_cues_free(cues, n_cues);
        for (int i = 0; st == HV_OK && i < hv_result_n_segments(res); i++) {
            hv_segment g = hv_result_segment(res, i);
            st = hv_segment_cues(&g, &cp, &cues, &n_cues);
            hv_cues_free(cues, n_cues);
        }
        char *text = st == HV_OK ? hv_utf8_clean(hv_result_text(res)) : NULL;
        if (st == HV_OK && !text) st = HV_ERR_NOMEM;
        free(text);
        if (st != HV_OK) snprintf(err, sizeof err, "cues or text: out of memory");
    }
    hv_result_free(res);
    hv_context_free(ctx);
    return st;
}

/* Diarize over windows that overlap (docs/DIARIZE.md, "Any length"): the
 * plan of three windows widened into their neighbours, then three
 * windows' streams stitched, each linked to the one before by the words
 * and turns of their overlap. A failed call leaves no output behind. */
static hv_status overlap_plan(void) {
    const size_t bounds[] = {0, 416000, 832000, 1000000}; /* 26 s cores at 16 kHz */
    hv_config c = {.sample_rate = 16000};
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.diarize = 1;
    hv_piece_plan plan;
    size_t *cuts = NULL;
    hv_error e = {0};
    hv_status st = hv_piece_plan_from_bounds(bounds, 3, &plan, &e);
    if (!st) {
        st = hv_diar_windows(&c, &tp, &plan, &cuts, &e);
        CHECK_MSG(st || (plan.n_chunks == 3 && plan.pieces[plan.first[1]].start < bounds[1]),
                  "%d windows, not 3 widened ones", plan.n_chunks);
        CHECK_MSG(!st || !cuts, "a failed window plan left its cuts behind");
        free(cuts);
    }
    hv_piece_plan_free(&plan);
    snprintf(err, sizeof err, "%s", e.msg);
    return st;
}

static hv_tokenizer stitch_tok; /* speaker, time and word pieces of the streams */

static double shifted(void *user, double t, int end) {
    (void)end;
    return *(const double *)user + t;
}

/* Windows [0, 28), [24, 54), [50, 70) whose shares meet at 26 and 52;
 * each overlap has words of both windows and a turn of each. */
static const struct {
    const char *spec;
    double start, end, lo, hi;
} stitch_win[] = {
    {"S0 T0.0 _a _b T20.0 S1 T23.0 _x _y _z T28.0", 0, 28, -1e9, 26},
    {"S1 T0.0 _x _y _z T4.0 S0 T5.0 _c _d T25.0 S1 T26.0 _u _v T30.0", 24, 54, 26, 52},
    {"S0 T0.0 _u _v T4.0 S1 T5.0 _e T20.0", 50, 70, 52, 1e9},
};
#define N_STITCH_WIN (int)(sizeof stitch_win / sizeof *stitch_win)
static int32_t stitch_stream[N_STITCH_WIN][64]; /* their ids (made before the sweep) */
static int n_stitch_stream[N_STITCH_WIN];
/* a raw log-mel for the windows' voice signatures (4 bins, 10 ms frames):
 * each speaker's turns have some, so rule 4 weighs window 2's speaker 1 */
#define STITCH_MELS 4
static float stitch_logmel[3000 * STITCH_MELS];

static hv_status stitched(void) {
    for (int t = 0; t < 3000; t++)
        for (int m = 0; m < STITCH_MELS; m++)
            stitch_logmel[t * STITCH_MELS + m] = (float)((t / 500 + m * (t % 3)) % 5);
    hv_stitch s;
    hv_error e = {0};
    hv_status st = HV_OK;
    hv_stitch_init(&s);
    for (int i = 0; st == HV_OK && i < N_STITCH_WIN; i++) {
        double off = stitch_win[i].start;
        hv_stitch_window w = {.tok = &stitch_tok,
                              .ids = stitch_stream[i],
                              .n = n_stitch_stream[i],
                              .window = i,
                              .seconds = stitch_win[i].end - stitch_win[i].start,
                              .to_input = shifted,
                              .user = &off,
                              .start = stitch_win[i].start,
                              .end = stitch_win[i].end,
                              .lo = stitch_win[i].lo,
                              .hi = stitch_win[i].hi,
                              .prev_end = i ? stitch_win[i - 1].end : 0,
                              .next_start = i + 1 < N_STITCH_WIN ? stitch_win[i + 1].start
                                                                 : stitch_win[i].end,
                              .logmel = stitch_logmel,
                              .n_frames = (int)(100 * (stitch_win[i].end - stitch_win[i].start)),
                              .n_mels = STITCH_MELS,
                              .frame_s = 0.01,
                              .voice_threshold = 0.5};
        hv_stitched o;
        st = hv_stitch_window_run(&s, &w, &o, &e);
        CHECK_MSG(st || o.n_segs > 0, "window %d: no segment", i);
        CHECK_MSG(!st || (!o.segs && !o.pos && !o.keep && !o.n_segs),
                  "window %d: a failed stitch left output behind", i);
        hv_stitched_free(&o);
    }
    hv_stitch_free(&s);
    snprintf(err, sizeof err, "%s", e.msg);
    return st;
}

static hv_status plain(void) { return transcribe(clip, n_clip, 16000, 1, 0, 0); }
static hv_status resampled(void) { return transcribe(stereo44, n_stereo44, 44100, 2, 0, 1); }
static hv_status detected(void) { return transcribe(clip, n_clip, 16000, 1, 1, 1); }

/* Runs phase once per allocation it makes, that one failing; with
 * every_one, each of them must end the call in HV_ERR_NOMEM. */
static void sweep_all(const char *name, hv_status (*phase)(void), int every_one) {
    alloc_hook_arm(0);
    hv_status st = phase();
    long total = alloc_hook_count();
    CHECK_MSG(st == HV_OK, "%s: %s", name, err);
    long nomem = 0, ok = 0, wrong = 0;
    for (long i = 1; i <= total; i++) {
        err[0] = '\0';
        alloc_hook_arm(i);
        st = phase();
        alloc_hook_arm(0);
        if (st == HV_ERR_NOMEM && err[0])
            nomem++;
        else if (st == HV_OK && !every_one)
            ok++;
        else if (wrong++ < 5)
            CHECK_MSG(0, "%s: allocation %ld of %ld failing: status %d (%s), not out of memory",
                      name, i, total, (int)st, err);
    }
    CHECK_MSG(wrong == 0, "%s: %ld of %ld failed allocations gave another status", name, wrong,
              total);
    printf("%s: %ld allocations, each failing in turn: %ld out of memory, %ld done without it\n",
           name, total, nomem, ok);
}

static void sweep(const char *name, hv_status (*phase)(void)) { sweep_all(name, phase, 0); }

/* The clip at 44.1 kHz in two channels (linear interpolation: any
 * signal does), in stereo44 and as a WAV file. */
static int write_wav44(void) {
    stereo44 = malloc(n_clip * 3 * 2 * sizeof *stereo44);
    if (!stereo44) return -1;
    n_stereo44 = (size_t)((double)n_clip * 44100 / 16000);
    for (size_t i = 0; i < n_stereo44; i++) {
        double t = (double)i * 16000 / 44100;
        size_t k = (size_t)t;
        float a = clip[k < n_clip ? k : n_clip - 1], b = clip[k + 1 < n_clip ? k + 1 : n_clip - 1];
        float v = a + (float)(t - (double)k) * (b - a);
        stereo44[2 * i] = v;
        stereo44[2 * i + 1] = 0.5f * v;
    }
    SF_INFO info = {.samplerate = 44100, .channels = 2, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *f = sf_open(wav44, SFM_WRITE, &info);
    if (!f) return -1;
    sf_count_t w = sf_writef_float(f, stereo44, (sf_count_t)n_stereo44);
    sf_close(f);
    return w == (sf_count_t)n_stereo44 ? 0 : -1;
}

int main(void) {
    src_dir = hv_test_env("HV_SOURCE_DIR", ".");
    tmp_dir = hv_test_tmpdir();
    snprintf(wav44, sizeof wav44, "%s", hv_test_path(tmp_dir, "clip44k.wav"));
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 1;
    float *whole = NULL;
    size_t n_whole = 0;
    int rate = 0, ch = 0;
    if (hv_model_load(hv_test_path(src_dir, "models/demo"), &mp, &model, err, sizeof err) ||
        hv_vad_load(hv_test_path(src_dir, "models/silero-vad"), &vad, err, sizeof err) ||
        hv_audio_read(hv_test_path(src_dir, "examples/da-example.wav"), &whole, &n_whole, &rate,
                      &ch, err, sizeof err)) {
        CHECK_MSG(0, "setup: %s", err);
        TEST_END();
    }
    clip = whole;
    n_clip = n_whole < 16000 ? n_whole : 16000;
    CHECK(write_wav44() == 0);
    sweep("load the model", load_model);
    sweep("load the speech detector", load_vad);
    sweep("read 44.1 kHz stereo to 16 kHz mono", read_mono);
    sweep("read 44.1 kHz stereo whole", read_whole);
    sweep("transcribe 1 s", plain);
    sweep("transcribe 1 s at 44.1 kHz stereo, words and cues", resampled);
    sweep("transcribe 1 s with the speech detector, words and cues", detected);
    sweep_all("plan three overlapping diarize windows", overlap_plan, 1);
    for (int i = 0; i < N_STITCH_WIN; i++)
        n_stitch_stream[i] = hv_test_stream(&stitch_tok, stitch_win[i].spec, stitch_stream[i], 64);
    sweep_all("stitch three diarize windows", stitched, 1);
    hv_tokenizer_free(&stitch_tok);
    free(stereo44);
    hv_free(whole);
    hv_vad_free(vad);
    hv_model_free(model);
    TEST_END();
}
