/* Speech detection in front of the encoder, through the public API, on the
 * demo model and the bundled detector: no text for audio without speech
 * (also quiet), quiet speech found,
 * the same words as energy chunking on speech with long pauses for a
 * fraction of the encoder's work, and every time on the input's timeline. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/speech_chunks.h" /* HV_VAD_KEEP_PAUSE_S */
#include "hviske.h"
#include "testlib.h"

#define SR 16000
#define PI 3.14159265358979323846

typedef struct signal {
    float *x;
    size_t n;
} signal;

static signal silence(double seconds) {
    signal s = {calloc((size_t)(seconds * SR), sizeof(float)), (size_t)(seconds * SR)};
    return s;
}

/* Pastes src at `at` seconds into dst. */
static void paste(signal *dst, const float *src, size_t n, double at) {
    size_t o = (size_t)(at * SR);
    for (size_t i = 0; i < n && o + i < dst->n; i++) dst->x[o + i] = src[i];
}

/* First and last sample louder than a tenth of the peak: where the speech
 * in a pasted clip begins and ends. */
static void loud_span(const float *x, size_t n, double *start, double *end) {
    float peak = 0;
    for (size_t i = 0; i < n; i++) peak = fmaxf(peak, fabsf(x[i]));
    size_t a = 0, b = n;
    while (a < n && fabsf(x[a]) < 0.1f * peak) a++;
    while (b > a && fabsf(x[b - 1]) < 0.1f * peak) b--;
    *start = (double)a / SR;
    *end = (double)b / SR;
}

/* How many words of a and b differ, position by position; -1 when they
 * have not the same number of words. */
static int words_differing(const char *a, const char *b) {
    int diff = 0;
    for (;;) {
        while (*a == ' ') a++;
        while (*b == ' ') b++;
        if (!*a || !*b) return *a || *b ? -1 : diff;
        size_t la = strcspn(a, " "), lb = strcspn(b, " ");
        diff += la != lb || strncmp(a, b, la) != 0;
        a += la;
        b += lb;
    }
}

static hv_result *run_gap(hv_context *ctx, const signal *s, hv_chunking mode, const hv_vad *vad,
                          float max_gap_s) {
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.chunking = mode;
    tp.vad = vad;
    if (max_gap_s >= 0) tp.vad_max_gap_s = max_gap_s;
    hv_result *r = NULL;
    hv_status st = hv_transcribe(ctx, s->x, s->n, SR, 1, &tp, &r);
    CHECK_MSG(st == HV_OK, "transcribe: %s", hv_context_error(ctx));
    return r;
}

static hv_result *run(hv_context *ctx, const signal *s, hv_chunking mode, const hv_vad *vad) {
    return run_gap(ctx, s, mode, vad, -1);
}

/* Audio without speech: no text, no segments, no encoder work. */
static void test_no_speech(hv_context *ctx, const hv_vad *vad) {
    const char *names[] = {"digital silence", "white noise", "pink-ish noise", "mains hum",
                           "music-like tones"};
    for (int k = 0; k < 10; k++) {
        int kind = k % 5;
        float level = k < 5 ? 1.0f : 0.01f; /* then quiet: raised for the detector */
        signal s = silence(20);
        unsigned seed = 12345u + (unsigned)kind;
        double b0 = 0, b1 = 0;
        for (size_t i = 0; i < s.n; i++) {
            double t = (double)i / SR;
            seed = seed * 1103515245u + 12345u;
            double w = (double)((seed >> 8) & 0xffff) / 65536.0 - 0.5;
            switch (kind) {
                case 1: s.x[i] = (float)(0.2 * w); break;
                case 2: /* white noise through two one-pole low-passes */
                    b0 = 0.97 * b0 + 0.03 * w;
                    b1 = 0.8 * b1 + 0.2 * w;
                    s.x[i] = (float)(1.5 * b0 + 0.3 * b1);
                    break;
                case 3: /* 50 Hz and its harmonics */
                    s.x[i] = (float)(0.2 * sin(2 * PI * 50 * t) + 0.08 * sin(2 * PI * 150 * t) +
                                     0.04 * sin(2 * PI * 250 * t));
                    break;
                case 4: { /* a chord that changes every half second */
                    static const double notes[4][3] = {{261.6, 329.6, 392.0},
                                                       {293.7, 370.0, 440.0},
                                                       {329.6, 415.3, 493.9},
                                                       {349.2, 440.0, 523.3}};
                    const double *ch = notes[(int)(t * 2) % 4];
                    for (int k = 0; k < 3; k++) s.x[i] += (float)(0.1 * sin(2 * PI * ch[k] * t));
                    break;
                }
                default: break;
            }
        }
        for (size_t i = 0; i < s.n; i++) s.x[i] *= level;
        hv_result *r = run(ctx, &s, HV_CHUNKING_VAD, vad);
        if (r) {
            hv_timings t = hv_result_timings(r);
            CHECK_MSG(!strcmp(hv_result_text(r), "") && hv_result_n_segments(r) == 0,
                      "%s at %g: text \"%s\", %d segments", names[kind], level, hv_result_text(r),
                      hv_result_n_segments(r));
            CHECK_MSG(t.encoded_s == 0 && t.vad_ms > 0, "%s: %.2f s encoded", names[kind],
                      t.encoded_s);
            CHECK(fabs(hv_result_duration(r) - 20) < 1e-9);
        }
        hv_result_free(r);
        /* AUTO with a detector is VAD */
        r = run(ctx, &s, HV_CHUNKING_AUTO, vad);
        CHECK_MSG(r && !strcmp(hv_result_text(r), ""), "%s, auto", names[kind]);
        hv_result_free(r);
        free(s.x);
    }
}

/* A quiet recording (peaks of 0.3 % and 0.1 % of full scale): the
 * detector hears it raised, the model as it is; the words of the loud one. */
static void test_quiet(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n_clip) {
    signal just = {(float *)clip, n_clip};
    hv_result *loud = run(ctx, &just, HV_CHUNKING_ENERGY, NULL);
    const float gains[] = {0.003f, 0.001f};
    for (int g = 0; g < 2 && loud; g++) {
        signal s = silence(10);
        paste(&s, clip, n_clip, 3.0);
        for (size_t i = 0; i < s.n; i++) s.x[i] *= gains[g];
        hv_result *r = run(ctx, &s, HV_CHUNKING_VAD, vad);
        CHECK_MSG(r && !strcmp(hv_result_text(r), hv_result_text(loud)), "at %g: \"%s\" vs \"%s\"",
                  gains[g], r ? hv_result_text(r) : "", hv_result_text(loud));
        CHECK_MSG(r && hv_result_timings(r).encoded_s < 6, "at %g: %.2f s encoded", gains[g],
                  r ? hv_result_timings(r).encoded_s : 0);
        hv_result_free(r);
        free(s.x);
    }
    hv_result_free(loud);
}

/* Speech that starts late and ends early: the segment is on the speech. */
static void test_time_map(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n_clip) {
    double c0, c1;
    loud_span(clip, n_clip, &c0, &c1);
    signal s = silence(20);
    paste(&s, clip, n_clip, 7.25);
    hv_result *alone = NULL;
    signal just = {(float *)clip, n_clip};
    alone = run(ctx, &just, HV_CHUNKING_ENERGY, NULL);
    hv_result *r = run(ctx, &s, HV_CHUNKING_VAD, vad);
    if (r && alone) {
        CHECK_MSG(!strcmp(hv_result_text(r), hv_result_text(alone)), "\"%s\" vs \"%s\" alone",
                  hv_result_text(r), hv_result_text(alone));
        CHECK(hv_result_n_segments(r) == 1);
        hv_segment g = hv_result_segment(r, 0);
        double on = 7.25 + c0, off = 7.25 + c1;
        CHECK_MSG(g.start > on - 0.15 && g.start < on + 0.1 && g.end > off - 0.1 &&
                      g.end < off + 0.2,
                  "segment %.3f-%.3f, speech %.3f-%.3f", g.start, g.end, on, off);
        CHECK(g.start_sample == (int64_t)llround(g.start * SR));
        hv_timings t = hv_result_timings(r);
        CHECK_MSG(t.encoded_s < 0.3 * hv_result_duration(r), "%.2f s encoded", t.encoded_s);
    }
    hv_result_free(r);
    hv_result_free(alone);

    /* the detector on its own finds the same speech */
    hv_speech_region *reg = NULL;
    size_t n_reg = 0;
    CHECK(hv_vad_regions(ctx, vad, s.x, s.n, SR, 1, NULL, &reg, &n_reg) == HV_OK);
    CHECK_MSG(n_reg >= 1 && reg[0].start > 7.25 + c0 - 0.15 && reg[n_reg - 1].end < 7.25 + c1 + 0.2,
              "%zu regions", n_reg);
    hv_free(reg);
    /* and at another rate and channel count, on the same timeline */
    size_t n2 = s.n * 3 / 2;
    float *st = malloc(n2 * 2 * sizeof *st);
    for (size_t i = 0; i < n2; i++) /* 24 kHz stereo, linear interpolation */
        st[2 * i] = st[2 * i + 1] = s.x[i * 2 / 3];
    CHECK(hv_vad_regions(ctx, vad, st, n2, 24000, 2, NULL, &reg, &n_reg) == HV_OK);
    CHECK_MSG(n_reg >= 1 && fabs(reg[0].start - (7.25 + c0)) < 0.15, "%zu regions at 24 kHz",
              n_reg);
    hv_free(reg);
    free(st);
    free(s.x);
}

/* The demo model with a 5 s clip (config.json changed in a copy): each
 * utterance below is a chunk of its own, which is what this small model
 * transcribes reliably (it ends its transcript after about one sentence). */
static hv_model *load_short_clip_model(const char *src) {
    const char *dir = hv_test_tmpdir();
    const char *files[] = {"model.safetensors", "tokenizer.model", "generation_config.json"};
    char from[4096], to[4096], err[1024];
    for (int i = 0; i < 3; i++) {
        snprintf(from, sizeof from, "%s/models/demo/%s", src, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (symlink(from, to)) return NULL;
    }
    snprintf(from, sizeof from, "%s/models/demo/config.json", src);
    char *text = hv_test_read_text(from);
    cJSON *cfg = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cfg) return NULL;
    cJSON_ReplaceItemInObject(cfg, "max_audio_clip_s", cJSON_CreateNumber(5));
    cJSON_ReplaceItemInObject(cfg, "overlap_chunk_second", cJSON_CreateNumber(1));
    char *out = cJSON_Print(cfg);
    cJSON_Delete(cfg);
    snprintf(to, sizeof to, "%s/config.json", dir);
    int bad = !out || hv_test_write_file(to, out, strlen(out));
    free(out);
    hv_model *m = NULL;
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 2;
    if (bad || hv_model_load(dir, &mp, &m, err, sizeof err)) fprintf(stderr, "%s\n", err);
    return m;
}

/* Three utterances, two long pauses: the words of each utterance on its
 * own, for the encoder time of the speech alone, and segments on the
 * speech. The pauses end chunks (vad_max_gap_s); with max_gap_s 0 the clip
 * length does, on the model copy with a 5 s clip. */
static void test_long_pauses(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n_clip,
                             float max_gap_s) {
    signal s = silence(48);
    const double at[3] = {1.0, 12.0, 41.0};
    for (int i = 0; i < 3; i++) paste(&s, clip, n_clip, at[i]);
    signal just = {(float *)clip, n_clip};
    hv_result *one = run(ctx, &just, HV_CHUNKING_ENERGY, NULL);
    hv_result *v = run_gap(ctx, &s, HV_CHUNKING_VAD, vad, max_gap_s);
    if (one && v) {
        char want[4096];
        const char *t = hv_result_text(one);
        snprintf(want, sizeof want, "%s %s %s", t, t, t);
        /* the same words; the small model may hear one word of an
         * utterance otherwise where the detector cut it a window apart */
        int diff = words_differing(hv_result_text(v), want);
        CHECK_MSG(*t && diff >= 0 && diff <= 3, "vad \"%s\", want \"%s\" (%d words differ)",
                  hv_result_text(v), want, diff);
        /* the encoder saw the loud part of each utterance, and no more
         * than the clips with the pause kept around each */
        hv_timings tv = hv_result_timings(v);
        double c0, c1;
        loud_span(clip, n_clip, &c0, &c1);
        CHECK_MSG(tv.encoded_s <= 3.0 * ((double)n_clip / SR + HV_VAD_KEEP_PAUSE_S) &&
                      tv.encoded_s > 3 * (c1 - c0),
                  "encoded %.2f s of %.2f s for 3 x %.2f s of speech", tv.encoded_s,
                  hv_result_duration(v), c1 - c0);
        CHECK_MSG(hv_result_n_segments(v) == 3, "%d segments", hv_result_n_segments(v));
        for (int i = 0; i < hv_result_n_segments(v) && i < 3; i++) {
            hv_segment g = hv_result_segment(v, i);
            CHECK_MSG(fabs(g.start - (at[i] + c0)) < 0.15 && fabs(g.end - (at[i] + c1)) < 0.2,
                      "segment %d at %.3f-%.3f, speech %.3f-%.3f", i, g.start, g.end, at[i] + c0,
                      at[i] + c1);
        }
    }
    hv_result_free(one);
    hv_result_free(v);
    free(s.x);
}

static void test_errors(hv_context *ctx, const hv_vad *vad) {
    signal s = silence(2);
    hv_transcribe_params tp = hv_transcribe_default_params();
    hv_result *r = NULL;
    tp.chunking = HV_CHUNKING_VAD;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "speech detector") != NULL);
    tp.vad = vad;
    tp.vad_params.threshold = 1.5f;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "threshold") != NULL);
    tp.vad_params = hv_vad_default_params();
    tp.vad_params.min_silence_ms = -1;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "min_silence_ms") != NULL);
    tp.vad_params = hv_vad_default_params();
    tp.vad_max_gap_s = NAN;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "vad_max_gap_s") != NULL);
    hv_chunking m;
    CHECK(hv_chunking_parse("vad", &m) == 0 && m == HV_CHUNKING_VAD);
    free(s.x);
}

/* A reading of the detector (hv_vad_speech) taken by the transcription:
 * the same result as the transcription's own detection, with no detector
 * time of its own; a reading of other samples, by other settings, without
 * the detector or with a part of the input refused. */
static void test_reading(hv_context *ctx, const hv_vad *vad, const float *clip, size_t n_clip) {
    signal s = silence(12);
    paste(&s, clip, n_clip, 1.0);
    paste(&s, clip, n_clip, 7.5);
    hv_speech *sp = NULL;
    CHECK_MSG(hv_vad_speech(ctx, vad, s.x, s.n, SR, 1, NULL, &sp) == HV_OK, "hv_vad_speech: %s",
              hv_context_error(ctx));
    const hv_speech_region *reg = NULL, *again = NULL;
    hv_speech_region *own = NULL;
    size_t n_reg = hv_speech_regions(sp, &reg), n_own = 0;
    CHECK(hv_vad_regions(ctx, vad, s.x, s.n, SR, 1, NULL, &own, &n_own) == HV_OK);
    CHECK_MSG(n_reg == n_own && n_reg >= 2 && !memcmp(reg, own, n_reg * sizeof *reg),
              "%zu regions read, %zu by hv_vad_regions", n_reg, n_own);
    CHECK(hv_speech_regions(sp, &again) == n_reg && again == reg);
    hv_free(own);
    for (int mode = 0; mode < 2; mode++) { /* VAD chunking; energy with probabilities */
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.chunking = mode ? HV_CHUNKING_ENERGY : HV_CHUNKING_VAD;
        tp.vad = vad;
        hv_result *want = NULL, *got = NULL;
        CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &want) == HV_OK);
        tp.speech = sp;
        CHECK_MSG(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &got) == HV_OK, "with a reading: %s",
                  hv_context_error(ctx));
        if (want && got) {
            CHECK_MSG(!strcmp(hv_result_text(want), hv_result_text(got)), "\"%s\" vs \"%s\"",
                      hv_result_text(want), hv_result_text(got));
            int n = hv_result_n_segments(want);
            CHECK(n == hv_result_n_segments(got));
            for (int i = 0; i < n && i < hv_result_n_segments(got); i++) {
                hv_segment a = hv_result_segment(want, i), b = hv_result_segment(got, i);
                CHECK(a.start == b.start && a.end == b.end &&
                      (a.no_speech_prob == b.no_speech_prob ||
                       (isnan(a.no_speech_prob) && isnan(b.no_speech_prob))));
            }
            CHECK(hv_result_timings(want).vad_ms > 0 && hv_result_timings(got).vad_ms == 0);
        }
        hv_result_free(want);
        hv_result_free(got);
    }
    hv_transcribe_params tp = hv_transcribe_default_params();
    hv_result *r = NULL;
    tp.vad = vad;
    tp.speech = sp;
    s.x[s.n / 2] += 0.25f; /* other samples, of the same length */
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "another input") != NULL);
    s.x[s.n / 2] -= 0.25f;
    CHECK(hv_transcribe(ctx, s.x, s.n - 1, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    tp.vad_params.min_silence_ms = 300;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "other settings") != NULL);
    tp.vad_params = hv_vad_default_params();
    tp.offset_s = 1;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "offset_s") != NULL);
    tp.offset_s = 0;
    tp.vad = NULL;
    tp.chunking = HV_CHUNKING_ENERGY;
    CHECK(hv_transcribe(ctx, s.x, s.n, SR, 1, &tp, &r) == HV_ERR_INVALID_ARG && !r);
    CHECK(strstr(hv_context_error(ctx), "detector") != NULL);
    hv_speech_free(sp);
    hv_speech_free(NULL);
    free(s.x);
}

int main(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d) == 0) {
        test_no_speech(d.ctx, d.vad);
        test_time_map(d.ctx, d.vad, d.clip, d.n_clip);
        test_quiet(d.ctx, d.vad, d.clip, d.n_clip);
        test_long_pauses(d.ctx, d.vad, d.clip, d.n_clip, -1);
        hv_model *short_clip = load_short_clip_model(hv_test_env("HV_SOURCE_DIR", "."));
        CHECK(short_clip != NULL);
        if (short_clip) {
            hv_context *sc = hv_test_context(short_clip, 0);
            test_long_pauses(sc, d.vad, d.clip, d.n_clip, 0);
            hv_context_free(sc);
            hv_model_free(short_clip);
        }
        test_errors(d.ctx, d.vad);
        test_reading(d.ctx, d.vad, d.clip, d.n_clip);
    }
    hv_test_demo_free(&d);
    TEST_END();
}
