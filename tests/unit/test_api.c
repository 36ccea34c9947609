/* The public API: lifecycle, errors, parameters, and two contexts on one
 * model used from two threads at once. */
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

/* Resolves a manifest path (absolute, or relative to the fixtures dir). */
static const char *fixture(const char *fx, const char *p) {
    return p[0] == '/' ? p : hv_test_path(fx, p);
}

typedef struct run_job {
    hv_context *ctx;
    const float *pcm;
    size_t n;
    int rate, ch;
    char text[4096];
    int32_t tokens[1024];
    int n_tokens;
    int status;
} run_job;

static void *run_thread(void *arg) {
    run_job *j = arg;
    for (int rep = 0; rep < 3; rep++) {
        hv_result *r;
        j->status = hv_transcribe(j->ctx, j->pcm, j->n, j->rate, j->ch, NULL, &r);
        if (j->status) return NULL;
        snprintf(j->text, sizeof j->text, "%s", hv_result_text(r));
        j->n_tokens = hv_result_n_tokens(r);
        memcpy(j->tokens, hv_result_tokens(r), sizeof(int32_t) * (size_t)j->n_tokens);
        hv_result_free(r);
    }
    return NULL;
}

/* hv_audio_read_buffer decodes what hv_audio_read decodes, and names its
 * input in errors. */
static void test_read_buffer(const char *path) {
    char err[1024];
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    static unsigned char bytes[1 << 22];
    size_t size = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    float *a, *b;
    size_t na, nb;
    int ra, rb, ca, cb;
    CHECK(hv_audio_read(path, &a, &na, &ra, &ca, err, sizeof err) == HV_OK);
    CHECK_MSG(hv_audio_read_buffer(bytes, size, "clip", 0, &b, &nb, &rb, &cb, err, sizeof err) ==
                  HV_OK,
              "%s", err);
    CHECK(na == nb && ra == rb && ca == cb && !memcmp(a, b, na * (size_t)ca * sizeof *a));
    hv_free(b);
    /* a duration limit below the clip's length refuses it */
    double secs = (double)na / ra;
    CHECK(hv_audio_read_buffer(bytes, size, "clip", secs / 2, &b, &nb, &rb, &cb, err, sizeof err) ==
              HV_ERR_LIMIT &&
          b == NULL);
    CHECK(strstr(err, "clip") != NULL);
    CHECK(hv_audio_read_buffer(bytes, size, "clip", secs + 1, &b, &nb, &rb, &cb, err, sizeof err) ==
              HV_OK &&
          nb == na);
    hv_free(b);
    hv_free(a);
    CHECK(hv_audio_read_buffer(bytes, 0, "clip", 0, &b, &nb, &rb, &cb, err, sizeof err) != HV_OK);
    CHECK(strstr(err, "clip") != NULL);
    memset(bytes, 'x', 4096);
    CHECK(hv_audio_read_buffer(bytes, 4096, "junk", 0, &b, &nb, &rb, &cb, err, sizeof err) ==
          HV_ERR_FORMAT);
    CHECK(strstr(err, "junk") != NULL && b == NULL);
    CHECK(hv_audio_read_buffer(bytes, size / 2, NULL, 0, &b, &nb, &rb, &cb, err, sizeof err) !=
          HV_OK);
}

static void test_load_errors(void) {
    char err[1024];
    hv_model *m = (hv_model *)1;
    CHECK(hv_model_load("/nonexistent/dir", NULL, &m, err, sizeof err) != HV_OK);
    CHECK(m == NULL);
    CHECK_MSG(strstr(err, "/nonexistent/dir") != NULL, "message names the path: %s", err);
    CHECK(hv_model_load(NULL, NULL, &m, err, sizeof err) == HV_ERR_INVALID_ARG);
    CHECK(hv_model_load("", NULL, &m, NULL, 0) == HV_ERR_INVALID_ARG);
    hv_model_free(NULL);
    hv_context_free(NULL);
    hv_result_free(NULL);
    CHECK(strcmp(hv_status_name(HV_OK), "ok") == 0);
    CHECK(strlen(hv_status_name(HV_ERR_FORMAT)) > 0);
    /* a context that cannot be made says why, as a load does */
    hv_context *ctx = (hv_context *)1;
    err[0] = '\0';
    CHECK(hv_context_new(NULL, 0, &ctx, err, sizeof err) == HV_ERR_INVALID_ARG && !ctx &&
          strstr(err, "no model"));
    /* the version the library was built as, and the header's */
    CHECK(hv_version() == HV_VERSION_NUMBER && strcmp(hv_version_string(), HV_VERSION) == 0);
    int major, minor, patch;
    CHECK(sscanf(HV_VERSION, "%d.%d.%d", &major, &minor, &patch) == 3 &&
          HV_VERSION_NUMBER == major * 1000000 + minor * 1000 + patch);
    /* the parsers answer with a status */
    hv_chunking c = HV_CHUNKING_NONE;
    CHECK(hv_chunking_parse("vad", &c) == HV_OK && c == HV_CHUNKING_VAD);
    CHECK(hv_chunking_parse("Vad", &c) == HV_ERR_INVALID_ARG && c == HV_CHUNKING_VAD);
    hv_compute cm;
    hv_weight_type wt;
    CHECK(hv_compute_parse("f16", &cm) == HV_ERR_INVALID_ARG);
    CHECK(hv_weight_type_parse("q5", &wt) == HV_ERR_INVALID_ARG);
}

static void test_model(const char *fx, const char *model_dir, const char *audio) {
    char err[1024];
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 2;
    hv_model *m;
    hv_status st = hv_model_load(model_dir, &mp, &m, err, sizeof err);
    CHECK_MSG(st == HV_OK, "load %s: %s", model_dir, err);
    if (st) return;
    CHECK(hv_model_sample_rate(m) > 0);
    CHECK(hv_model_n_languages(m) > 0 && hv_model_language(m, 0) != NULL);
    CHECK(hv_model_language(m, -1) == NULL);
    CHECK(hv_model_language(m, hv_model_n_languages(m)) == NULL);
    {
        const char *def = hv_model_default_language(m);
        int has_da = 0;
        for (int i = 0; i < hv_model_n_languages(m); i++)
            has_da |= !strcmp(hv_model_language(m, i), "da");
        CHECK_MSG(def && !strcmp(def, has_da ? "da" : hv_model_language(m, 0)),
                  "default language %s", def ? def : "(null)");
    }

    float *pcm;
    size_t n;
    int rate, ch;
    st = hv_audio_read(audio, &pcm, &n, &rate, &ch, err, sizeof err);
    CHECK_MSG(st == HV_OK, "read %s: %s", audio, err);
    if (st) {
        hv_model_free(m);
        return;
    }

    /* two contexts, two threads, same input: same output */
    hv_context *a = hv_test_context(m, 1), *b = hv_test_context(m, 2), *none = (hv_context *)1;
    char cerr[1024] = "";
    CHECK(hv_context_new(m, -1, &none, cerr, sizeof cerr) == HV_ERR_INVALID_ARG && !none &&
          strstr(cerr, "n_threads -1"));
    CHECK(a && b);
    run_job ja = {.ctx = a, .pcm = pcm, .n = n, .rate = rate, .ch = ch};
    run_job jb = ja;
    jb.ctx = b;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, run_thread, &ja);
    pthread_create(&tb, NULL, run_thread, &jb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_MSG(ja.status == HV_OK && jb.status == HV_OK, "threads: %s / %s", hv_context_error(a),
              hv_context_error(b));
    CHECK(ja.n_tokens == jb.n_tokens &&
          memcmp(ja.tokens, jb.tokens, sizeof(int32_t) * (size_t)ja.n_tokens) == 0);
    CHECK(strcmp(ja.text, jb.text) == 0);

    /* the result carries timings and tokens */
    hv_result *r;
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.max_new_tokens = 2;
    CHECK(hv_transcribe(a, pcm, n, rate, ch, &tp, &r) == HV_OK);
    CHECK(hv_result_n_tokens(r) <= 2);
    hv_timings t = hv_result_timings(r);
    CHECK(t.frontend_ms >= 0 && t.encoder_ms >= 0 && t.decoder_ms >= 0);
    CHECK(t.n_tokens == hv_result_n_tokens(r));
    hv_result_free(r);

    /* bad parameters are errors, not crashes */
    tp = hv_transcribe_default_params();
    tp.language = "xx-not-a-language";
    r = (hv_result *)1;
    CHECK(hv_transcribe(a, pcm, n, rate, ch, &tp, &r) == HV_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK(strstr(hv_context_error(a), "xx-not-a-language") != NULL);
    tp = hv_transcribe_default_params();
    tp.max_new_tokens = 1 << 30;
    CHECK(hv_transcribe(a, pcm, n, rate, ch, &tp, &r) == HV_ERR_INVALID_ARG);
    tp.max_new_tokens = -1;
    CHECK(hv_transcribe(a, pcm, n, rate, ch, &tp, &r) == HV_ERR_INVALID_ARG);
    CHECK(hv_transcribe(a, pcm, n, 0, ch, NULL, &r) != HV_OK);
    CHECK(hv_transcribe(a, pcm, n, rate, 0, NULL, &r) != HV_OK);
    CHECK(hv_transcribe(a, NULL, n, rate, ch, NULL, &r) != HV_OK);
    CHECK(hv_transcribe(a, pcm, 10, rate, ch, NULL, &r) != HV_OK); /* too short */
    CHECK(strlen(hv_context_error(a)) > 0);
    /* NaN samples are rejected */
    float *bad = malloc(sizeof(float) * n * (size_t)ch);
    memcpy(bad, pcm, sizeof(float) * n * (size_t)ch);
    bad[n / 2] = NAN;
    CHECK(hv_transcribe(a, bad, n, rate, ch, NULL, &r) != HV_OK);
    free(bad);
    /* a context still works after errors */
    CHECK(hv_transcribe(a, pcm, n, rate, ch, NULL, &r) == HV_OK);
    CHECK(r && strcmp(hv_result_text(r), ja.text) == 0);
    hv_result_free(r);

    /* decoding modes: one beam and top-k 1 sampling are greedy; beams and
     * sampling run and report scores; bad options are errors */
    {
        hv_transcribe_params g = hv_transcribe_default_params();
        hv_result *rg, *rx;
        CHECK(hv_transcribe(a, pcm, n, rate, ch, &g, &rg) == HV_OK);
        double sum = 0;
        for (int i = 0; i < hv_result_n_tokens(rg); i++) sum += hv_result_token_logprobs(rg)[i];
        CHECK(hv_result_score(rg) <= sum + 1e-6); /* plus EOS's log-prob, if any */
        hv_transcribe_params q = g;
        q.num_beams = 1;
        q.length_penalty = 2.0f;
        CHECK(hv_transcribe(a, pcm, n, rate, ch, &q, &rx) == HV_OK);
        CHECK(rx && strcmp(hv_result_text(rx), hv_result_text(rg)) == 0);
        hv_result_free(rx);
        q = g;
        q.do_sample = 1;
        q.top_k = 1;
        q.temperature = 2.5f;
        q.seed = 99;
        CHECK(hv_transcribe(a, pcm, n, rate, ch, &q, &rx) == HV_OK);
        CHECK(rx && hv_result_n_tokens(rx) == hv_result_n_tokens(rg) &&
              memcmp(hv_result_tokens(rx), hv_result_tokens(rg),
                     sizeof(int32_t) * (size_t)hv_result_n_tokens(rg)) == 0);
        hv_result_free(rx);
        for (int beams = 2; beams <= 5; beams += 3) {
            q = g;
            q.num_beams = beams;
            CHECK_MSG(hv_transcribe(a, pcm, n, rate, ch, &q, &rx) == HV_OK, "beams %d: %s", beams,
                      hv_context_error(a));
            if (rx) {
                double s2 = 0;
                for (int i = 0; i < hv_result_n_tokens(rx); i++)
                    s2 += hv_result_token_logprobs(rx)[i];
                CHECK(isfinite(hv_result_score(rx)) && hv_result_score(rx) <= 1e-6);
                CHECK(s2 <= 1e-6);
            }
            hv_result_free(rx);
        }
        const struct {
            int beams, sample, top_k;
            float lp, temp, top_p;
        } bad[] = {{0, 0, 0, 1, 1, 1},  {65, 0, 0, 1, 1, 1},       {2, 1, 0, 1, 1, 1},
                   {2, 0, 0, 0, 1, 1},  {2, 0, 0, -1, 1, 1},       {2, 0, 0, NAN, 1, 1},
                   {1, 1, 0, 1, -1, 1}, {1, 1, 0, 1, INFINITY, 1}, {1, 1, -1, 1, 1, 1},
                   {1, 1, 0, 1, 1, 0},  {1, 1, 0, 1, 1, 1.5f},     {1, 1, 0, 1, 1, NAN}};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            q = g;
            q.num_beams = bad[i].beams;
            q.do_sample = bad[i].sample;
            q.top_k = bad[i].top_k;
            q.length_penalty = bad[i].lp;
            q.temperature = bad[i].temp;
            q.top_p = bad[i].top_p;
            rx = (hv_result *)1;
            CHECK_MSG(hv_transcribe(a, pcm, n, rate, ch, &q, &rx) == HV_ERR_INVALID_ARG,
                      "bad decoding option set %zu is refused", i);
            CHECK(rx == NULL);
        }
        hv_result_free(rg);
    }

    /* mono audio duplicated into two channels gives the same transcript */
    if (ch == 1) {
        float *st2 = malloc(sizeof(float) * n * 2);
        for (size_t i = 0; i < n; i++) st2[2 * i] = st2[2 * i + 1] = pcm[i];
        CHECK(hv_transcribe(a, st2, n, rate, 2, NULL, &r) == HV_OK);
        CHECK(r && strcmp(hv_result_text(r), ja.text) == 0);
        hv_result_free(r);
        free(st2);
    }
    hv_context_free(a);
    hv_context_free(b);
    hv_free(pcm);
    hv_model_free(m);
    (void)fx;
}

/* Issue #43, finding 4: rates no speech recording has are refused, and the
 * audio's length at the model's rate counts against the call's
 * max_audio_bytes before anything is converted (1 Hz input was upsampled
 * 16000 times). */
static void test_rate_bounds(void) {
    hv_test_demo d;
    if (hv_test_demo_open(&d) != 0) {
        CHECK_MSG(0, "demo model, detector and clip load");
        hv_test_demo_free(&d);
        return;
    }
    hv_transcribe_params p = hv_transcribe_default_params();
    p.chunking = HV_CHUNKING_ENERGY;
    CHECK(p.max_audio_bytes == HV_DEFAULT_MAX_AUDIO_BYTES);
    static const int bad[] = {1, 999, HV_MAX_SAMPLE_RATE + 1};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hv_result *r = NULL;
        hv_status st = hv_transcribe(d.ctx, d.clip, 4000, bad[i], 1, &p, &r);
        char want[32];
        snprintf(want, sizeof want, "%d Hz", bad[i]);
        CHECK_MSG(st == HV_ERR_INVALID_ARG && r == NULL &&
                      strstr(hv_context_error(d.ctx), want) != NULL &&
                      strstr(hv_context_error(d.ctx), "1000") != NULL,
                  "a buffer at %d Hz is refused naming the rate and the bounds: %s", bad[i],
                  hv_context_error(d.ctx));
    }
    /* 1 s at 8 kHz is 32000 bytes in and 64000 at 16 kHz: a budget between
     * the two refuses it, one above the converted length takes it */
    size_t n8 = 8000;
    p.max_audio_bytes = 48000;
    hv_result *r = NULL;
    hv_status st = hv_transcribe(d.ctx, d.clip, n8, 8000, 1, &p, &r);
    CHECK_MSG(st == HV_ERR_LIMIT && r == NULL && strstr(hv_context_error(d.ctx), "8000 Hz") &&
                  strstr(hv_context_error(d.ctx), "max_audio_bytes"),
              "the converted length counts against max_audio_bytes: %s", hv_context_error(d.ctx));
    p.max_audio_bytes = 64000;
    st = hv_transcribe(d.ctx, d.clip, n8, 8000, 1, &p, &r);
    CHECK_MSG(st == HV_OK && r != NULL, "a budget of the converted length takes it (%s)",
              hv_context_error(d.ctx));
    hv_result_free(r);
    r = NULL;
    p.max_audio_bytes = 0; /* no budget */
    st = hv_transcribe(d.ctx, d.clip, n8, 8000, 1, &p, &r);
    CHECK_MSG(st == HV_OK && r != NULL, "max_audio_bytes 0 is no budget");
    hv_result_free(r);
    CHECK(hv_audio_max_seconds(0, 16000) == 0);
    CHECK(hv_audio_max_seconds(64000, 16000) == 1.0);
    CHECK(hv_audio_max_seconds(HV_DEFAULT_MAX_AUDIO_BYTES, 16000) > 9 * 3600.0);
    hv_test_demo_free(&d);
}

int main(void) {
    test_load_errors();
    test_rate_bounds();
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    CHECK_MSG(fx != NULL, "HV_FIXTURES is set");
    char *man = fx ? hv_test_read_text(hv_test_path(fx, "manifest.json")) : NULL;
    cJSON *j = man ? cJSON_Parse(man) : NULL;
    CHECK_MSG(j != NULL, "fixtures manifest readable");
    cJSON *models = cJSON_GetObjectItem(j, "models"), *audio = cJSON_GetObjectItem(j, "audio");
    cJSON *a0 = cJSON_GetArrayItem(audio, 0);
    const char *apath = cJSON_GetStringValue(cJSON_GetObjectItem(a0, "path"));
    cJSON *mo;
    int n_models = 0;
    cJSON_ArrayForEach(mo, models) {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItem(mo, "path"));
        if (!p || !apath) continue;
        char mdir[4096], adir[4096];
        snprintf(mdir, sizeof mdir, "%s", fixture(fx, p));
        snprintf(adir, sizeof adir, "%s", fixture(fx, apath));
        test_model(fx, mdir, adir);
        n_models++;
    }
    CHECK_MSG(n_models >= 2, "at least two fixture models (%d)", n_models);
    if (apath) test_read_buffer(fixture(fx, apath));
    cJSON_Delete(j);
    free(man);
    TEST_END();
}
