/* Speech detection (src/audio/vad.c): the region algorithm on hand-made
 * probability sequences, the committed detector, the forward pass's
 * independence of the thread count, the passes that find onsets
 * (backwards, and with the state reset after digital silence), and the
 * public API.
 *
 * With arguments it is the C side of tests/parity/test_vad.py instead:
 *   test_vad_core probs DIR IN.f32 OUT.f32 [THREADS]
 *       probabilities of raw float32 samples at the detector's rate; prints
 *       "windows N ms T" (T: the forward pass's wall time)
 *   test_vad_core audio DIR AUDIO OUT_DIR
 *       decodes AUDIO, converts it as hv_vad_probs does (hv_audio_to_mono),
 *       writes OUT_DIR/samples.f32 and OUT_DIR/probs.f32
 *   test_vad_core regions PROBS.f32 N_SAMPLES THRESHOLD NEG_THRESHOLD
 *                    MIN_SPEECH_MS MIN_SILENCE_MS SPEECH_PAD_MS MAX_SPEECH_S
 *       hv_vad_speech_regions at 16 kHz, 512-sample windows: one
 *       "START END" line (samples) per region
 *   test_vad_core load DIR
 *       loads a detector: "ok", or the error on stderr and exit status 1 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "audio/vad.h"
#include "hviske.h"
#include "testlib.h"

/* ------------------------------------------------------ tool modes */

static float *read_f32(const char *path, size_t *n) {
    size_t bytes = 0;
    float *x = (float *)hv_test_read_file(path, &bytes);
    *n = bytes / sizeof *x;
    return x;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Probabilities of x into path; prints the window count and time. */
static int write_probs(const hv_vad *v, int threads, const float *x, size_t n, const char *path) {
    size_t nw = hv_vad_n_windows(v, n);
    float *p = malloc((nw ? nw : 1) * sizeof *p);
    hv_pool *pool = hv_pool_new(threads);
    hv_error e = {0};
    double t0 = now_ms();
    int rc = !p || !pool || hv_vad_forward(v, pool, x, n, p, &e) ||
             hv_test_write_file(path, p, nw * sizeof *p);
    if (!rc)
        printf("windows %zu ms %.1f\n", nw, now_ms() - t0);
    else
        fprintf(stderr, "test_vad_core: %s\n", e.msg[0] ? e.msg : path);
    hv_pool_free(pool);
    free(p);
    return rc;
}

static int tool(int argc, char **argv) {
    const char *mode = argv[1];
    hv_vad v;
    hv_error e = {0};
    if (!strcmp(mode, "regions") && argc == 10) {
        size_t n;
        float *p = read_f32(argv[2], &n);
        hv_vad_params prm = hv_vad_default_params();
        prm.threshold = strtof(argv[4], NULL);
        prm.neg_threshold = strtof(argv[5], NULL);
        prm.min_speech_ms = atoi(argv[6]);
        prm.min_silence_ms = atoi(argv[7]);
        prm.speech_pad_ms = atoi(argv[8]);
        prm.max_speech_s = strtof(argv[9], NULL);
        prm.edges = HV_VAD_EDGES_SILERO;
        hv_speech_region *r;
        size_t nr;
        if (!p || hv_vad_speech_regions(p, n, strtoull(argv[3], NULL, 10), 512, 16000, &prm, &r,
                                        &nr, &e)) {
            fprintf(stderr, "test_vad_core: %s\n", p ? e.msg : argv[2]);
            free(p);
            return 1;
        }
        for (size_t i = 0; i < nr; i++)
            printf("%lld %lld\n", (long long)r[i].start_sample, (long long)r[i].end_sample);
        free(r);
        free(p);
        return 0;
    }
    if (argc < 3) return 2;
    if (hv_vad_init(&v, argv[2], &e)) {
        fprintf(stderr, "test_vad_core: %s\n", e.msg);
        return 1;
    }
    int rc = 2;
    if (!strcmp(mode, "load") && argc == 3) {
        puts("ok");
        rc = 0;
    } else if (!strcmp(mode, "probs") && (argc == 5 || argc == 6)) {
        size_t n;
        float *x = read_f32(argv[3], &n);
        rc = !x || write_probs(&v, argc == 6 ? atoi(argv[5]) : 1, x, n, argv[4]);
        free(x);
    } else if (!strcmp(mode, "audio") && argc == 5) {
        float *pcm, *x = NULL;
        size_t nf, n;
        int rate, ch;
        char err[1024];
        rc = 1;
        if (hv_audio_read(argv[3], &pcm, &nf, &rate, &ch, err, sizeof err)) {
            fprintf(stderr, "test_vad_core: %s\n", err);
        } else if (hv_audio_to_mono(pcm, nf, ch, rate, v.sample_rate, &x, &n, &e)) {
            fprintf(stderr, "test_vad_core: %s\n", e.msg);
        } else {
            rc = hv_test_write_file(hv_test_path(argv[4], "samples.f32"), x, n * sizeof *x) ||
                 write_probs(&v, 1, x, n, hv_test_path(argv[4], "probs.f32"));
        }
        hv_free(pcm);
        free(x);
    }
    hv_vad_release(&v);
    if (rc == 2) fprintf(stderr, "test_vad_core: bad arguments (see tests/unit/test_vad_core.c)\n");
    return rc;
}

/* ------------------------------------------------------ unit tests */

/* Regions of probs (16 kHz, 512-sample windows) equal want[n][2]. */
static void expect_regions(const char *what, const float *probs, size_t n_probs, size_t n_samples,
                           const hv_vad_params *p, const int64_t (*want)[2], size_t n_want) {
    hv_speech_region *r;
    size_t n;
    hv_error e = {0};
    CHECK_MSG(hv_vad_speech_regions(probs, n_probs, n_samples, 512, 16000, p, &r, &n, &e) == HV_OK,
              "%s: %s", what, e.msg);
    int same = n == n_want;
    for (size_t i = 0; same && i < n; i++)
        same = r[i].start_sample == want[i][0] && r[i].end_sample == want[i][1] &&
               r[i].start == want[i][0] / 16000.0 && r[i].end == want[i][1] / 16000.0;
    CHECK_MSG(same, "%s: %zu regions, first [%lld, %lld]", what, n,
              n ? (long long)r[0].start_sample : -1LL, n ? (long long)r[0].end_sample : -1LL);
    free(r);
}

/* probs[a..b) = v */
static void fill(float *probs, int a, int b, float v) {
    for (int i = a; i < b; i++) probs[i] = v;
}

static void test_regions(void) {
    enum { N = 100, LEN = N * 512 };
    float pr[N];
    hv_vad_params p = hv_vad_default_params();
    CHECK(p.threshold == 0.5f && p.neg_threshold < 0 && p.min_speech_ms == 250 &&
          p.min_silence_ms == 100 && p.speech_pad_ms == 30 && p.max_speech_s == 0);

    fill(pr, 0, N, 0.02f);
    expect_regions("silence", pr, N, LEN, &p, NULL, 0);

    /* speech in windows 10..29: starts at 5120, ends where the silence
     * began (15360) once it has lasted 100 ms; 30 ms of padding each side */
    fill(pr, 10, 30, 0.9f);
    expect_regions("one region", pr, N, LEN, &p, (const int64_t[][2]){{4640, 15840}}, 1);

    /* between neg_threshold (0.35) and threshold the region goes on */
    fill(pr, 30, 40, 0.4f);
    expect_regions("hysteresis", pr, N, LEN, &p, (const int64_t[][2]){{4640, 20960}}, 1);

    /* 5 windows = 2560 samples < 250 ms: dropped */
    fill(pr, 0, N, 0.02f);
    fill(pr, 10, 15, 0.9f);
    expect_regions("too short", pr, N, LEN, &p, NULL, 0);

    /* a gap of one window (512 < 2 x 480 samples of padding) is split
     * between the two regions */
    hv_vad_params q = p;
    q.min_silence_ms = 0;
    fill(pr, 10, 30, 0.9f);
    fill(pr, 31, 60, 0.9f);
    expect_regions("shared padding", pr, N, LEN, &q,
                   (const int64_t[][2]){{4640, 15616}, {15616, 31200}}, 2);

    /* speech up to the end: the region ends with the signal */
    fill(pr, 0, N, 0.02f);
    fill(pr, 90, N, 0.9f);
    expect_regions("to the end", pr, N, LEN - 100, &p, (const int64_t[][2]){{45600, LEN - 100}}, 1);

    /* max_speech_s 1: 14528 samples at most (16000 - 512 - 2 x 480), cut
     * without a silence to cut at */
    q = p;
    q.max_speech_s = 1.0f;
    fill(pr, 0, N, 0.9f);
    expect_regions("max speech", pr, N, LEN, &q,
                   (const int64_t[][2]){{0, 15104}, {15104, 30464}, {30464, 45824}, {45824, LEN}},
                   4);

    /* an explicit neg_threshold, and out-of-range parameters */
    q = p;
    q.neg_threshold = 0.45f;
    fill(pr, 0, N, 0.02f);
    fill(pr, 10, 30, 0.9f);
    fill(pr, 30, 40, 0.4f);
    expect_regions("neg_threshold", pr, N, LEN, &q, (const int64_t[][2]){{4640, 15840}}, 1);
    hv_speech_region *r;
    size_t n;
    hv_error e = {0};
    q = p;
    q.threshold = 1.5f;
    CHECK(hv_vad_speech_regions(pr, N, LEN, 512, 16000, &q, &r, &n, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "threshold") && !r);
    q = p;
    q.min_silence_ms = -1;
    CHECK(hv_vad_check_params(&q, &e) == HV_ERR_INVALID_ARG && strstr(e.msg, "min_silence_ms"));
    q = p;
    q.max_speech_s = NAN;
    CHECK(hv_vad_check_params(&q, &e) == HV_ERR_INVALID_ARG && strstr(e.msg, "max_speech_s"));

    /* no windows: no regions, and still a buffer to free */
    CHECK(hv_vad_speech_regions(pr, 0, 0, 512, 16000, &p, &r, &n, &e) == HV_OK && r && n == 0);
    free(r);
}

#define TWO_PI 6.283185307179586

/* A test signal: a 200 Hz tone with a slow envelope plus noise. */
static float *signal(size_t n) {
    float *x = malloc(n * sizeof *x);
    uint32_t s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        double t = i / 16000.0, env = 0.5 + 0.5 * sin(TWO_PI * 0.5 * t);
        x[i] = (float)(0.3 * env * sin(TWO_PI * 200 * t) + 0.01 * ((s >> 8) / 16777216.0 - 0.5));
    }
    return x;
}

static void test_detector(const char *dir) {
    hv_vad v;
    hv_error e = {0};
    CHECK_MSG(hv_vad_init(&v, dir, &e) == HV_OK, "%s", e.msg);
    if (e.msg[0]) return;
    CHECK(v.sample_rate == 16000 && v.window == 512 && v.context == 64 && v.reflect_pad == 64 &&
          v.n_fft == 256 && v.hop == 128 && v.n_frames == 4 && v.n_freq == 129 && v.n_layers == 4 &&
          v.hidden == 128 && v.len[1] == 4 && v.len[2] == 2 && v.len[3] == 1 && v.len[4] == 1);
    CHECK(hv_vad_n_windows(&v, 0) == 0 && hv_vad_n_windows(&v, 1) == 1 &&
          hv_vad_n_windows(&v, 512) == 1 && hv_vad_n_windows(&v, 513) == 2);

    /* digital silence is not speech */
    size_t n = 16000 * 3 + 100, nw = hv_vad_n_windows(&v, n);
    float *zeros = calloc(n, sizeof *zeros), *p1 = malloc(nw * sizeof *p1);
    float *p2 = malloc(nw * sizeof *p2);
    CHECK(hv_vad_forward(&v, NULL, zeros, n, p1, &e) == HV_OK);
    float mx = 0;
    for (size_t i = 0; i < nw; i++) mx = p1[i] > mx ? p1[i] : mx;
    CHECK_MSG(mx < 0.1f, "silence: probability up to %g", mx);

    /* more windows than one segment, one thread and three: identical */
    n = 512 * 2100 + 77;
    nw = hv_vad_n_windows(&v, n);
    float *x = signal(n);
    p1 = realloc(p1, nw * sizeof *p1);
    p2 = realloc(p2, nw * sizeof *p2);
    hv_pool *pool = hv_pool_new(3);
    CHECK(hv_vad_forward(&v, NULL, x, n, p1, &e) == HV_OK);
    CHECK(hv_vad_forward(&v, pool, x, n, p2, &e) == HV_OK);
    CHECK(!memcmp(p1, p2, nw * sizeof *p1));
    int ok = 1;
    for (size_t i = 0; i < nw; i++) ok &= p1[i] >= 0 && p1[i] <= 1;
    CHECK(ok);
    hv_pool_free(pool);

    /* the level gain: none for audio at an ordinary level or digital
     * silence; quiet audio raised so that its loud windows reach
     * HV_VAD_RAISE_TO_DB, at most by HV_VAD_MAX_GAIN_DB; a click does not
     * count */
    CHECK(hv_vad_level_gain(&v, zeros, 16000) == 1.0f && hv_vad_level_gain(&v, x, 0) == 1.0f);
    size_t m = 16000 * 4;
    float *tone = calloc(m, sizeof *tone);
    for (size_t i = 16000; i < 2 * 16000; i++) tone[i] = (float)(0.1 * sin(0.2 * (double)i));
    CHECK_MSG(hv_vad_level_gain(&v, tone, m) == 1.0f, "%g", hv_vad_level_gain(&v, tone, m));
    for (size_t i = 0; i < m; i++) tone[i] *= 0.001f; /* -60 dB: -83 dBFS RMS */
    float g = hv_vad_level_gain(&v, tone, m);
    double level = 20 * log10(0.0001 / sqrt(2.0)); /* the tone's RMS in dB */
    double want = HV_VAD_RAISE_TO_DB - floor(level);
    CHECK_MSG(fabs(20 * log10(g) - (want < HV_VAD_MAX_GAIN_DB ? want : HV_VAD_MAX_GAIN_DB)) < 1e-3,
              "gain %g dB", 20 * log10(g));
    tone[100] = 1.0f; /* one click */
    CHECK(hv_vad_level_gain(&v, tone, m) == g);
    for (size_t i = 0; i < m; i++) tone[i] *= 100.0f; /* a peak of 0.01 */
    g = hv_vad_level_gain(&v, tone, m);
    CHECK_MSG(g > 10 && g < 20, "gain %g", g); /* RMS -43 dB to -20 */
    /* the gain is the input's: forward on x * 8 == forward_gain(x, 8) */
    for (size_t i = 0; i < m; i++) tone[i] = (float)(0.004 * sin(0.05 * (double)i));
    nw = hv_vad_n_windows(&v, m);
    float *q1 = malloc(nw * sizeof *q1), *q2 = malloc(nw * sizeof *q2);
    hv_speech_region *r1 = NULL, *r2 = NULL;
    size_t n1 = 0, n2 = 0;
    hv_vad_params vp = hv_vad_default_params();
    CHECK(hv_vad_detect(&v, NULL, tone, m, &vp, &r1, &n1, NULL, &e) == HV_OK);
    g = hv_vad_level_gain(&v, tone, m);
    for (size_t i = 0; i < m; i++) tone[i] *= g;
    CHECK(hv_vad_level_gain(&v, tone, m) == 1.0f);
    CHECK(hv_vad_detect(&v, NULL, tone, m, &vp, &r2, &n2, NULL, &e) == HV_OK);
    CHECK(n1 == n2 && (n1 == 0 || !memcmp(r1, r2, n1 * sizeof *r1)));
    free(r1);
    free(r2);
    free(q1);
    free(q2);
    free(tone);
    free(x);
    free(zeros);
    free(p1);
    free(p2);
    hv_vad_release(&v);
}

/* Backwards: the forward pass of the input reversed after the zeros that
 * pad its last window, window for window and bit for bit (1 and 3
 * threads). */
static void test_backwards(const hv_vad *v, hv_pool *pool) {
    hv_error e = {0};
    size_t n = 512 * 300 + 77, nw = hv_vad_n_windows(v, n), N = nw * 512;
    float *x = signal(n), *y = calloc(N, sizeof *y);
    for (size_t k = 0; k < N; k++) y[k] = N - 1 - k < n ? x[N - 1 - k] : 0.0f;
    float *want = malloc(nw * sizeof *want), *got = malloc(nw * sizeof *got);
    CHECK(hv_vad_forward(v, NULL, y, N, want, &e) == HV_OK);
    for (int t = 0; t < 2; t++) {
        CHECK(hv_vad_forward_pass(v, t ? pool : NULL, x, n, 1.0f, HV_VAD_PASS_BACKWARDS, got, &e) ==
              HV_OK);
        CHECK_MSG(!memcmp(got, want, nw * sizeof *got), "backwards, %d thread(s)", t ? 3 : 1);
    }
    free(want);
    free(got);
    free(y);
    free(x);
}

/* Reset: after a window of digital silence the next window starts as the
 * first of a file does. The clip (b[nb]), zeros to 128 windows, the clip
 * again (from a block boundary, so that its products are the same): with
 * the reset its windows get the probabilities of the clip alone (which has
 * a window of zeros itself, between two words); without, the state
 * carried over changes them. Then hv_vad_detect on it: with
 * HV_VAD_EDGES_SILERO get_speech_timestamps on the forward pass; by
 * default on each window's greater probability of the two reset passes,
 * then the signal's edges. */
static void test_reset(const hv_vad *v, hv_pool *pool, const float *b, size_t nb) {
    hv_error e = {0};
    size_t first = 128, m = first * 512 + nb, nw_b = hv_vad_n_windows(v, nb);
    size_t nw_ab = hv_vad_n_windows(v, m);
    float *ab = calloc(m, sizeof *ab);
    memcpy(ab, b, nb * sizeof *ab);
    memcpy(ab + first * 512, b, nb * sizeof *ab);
    float *pb = malloc(nw_b * sizeof *pb), *pr = malloc(nw_ab * sizeof *pr);
    float *pn = malloc(nw_ab * sizeof *pn), *back = malloc(nw_ab * sizeof *back);
    CHECK(hv_vad_forward_pass(v, NULL, b, nb, 1.0f, HV_VAD_PASS_RESET, pb, &e) == HV_OK);
    CHECK(hv_vad_forward_pass(v, pool, ab, m, 1.0f, HV_VAD_PASS_RESET, pr, &e) == HV_OK);
    CHECK(hv_vad_forward(v, pool, ab, m, pn, &e) == HV_OK);
    CHECK_MSG(!memcmp(pr + first, pb, nw_b * sizeof *pb),
              "after digital silence, the reset pass gives the clip's own probabilities");
    size_t zero = 0; /* the clip's first window of zeros */
    while (zero < nb / 512) {
        size_t k = 0;
        while (k < 512 && b[zero * 512 + k] == 0.0f) k++;
        if (k == 512) break;
        zero++;
    }
    CHECK_MSG(zero > 0 && zero < nb / 512 && !memcmp(pr, pn, (zero + 1) * sizeof *pr) &&
                  memcmp(pr, pn, (zero + 2) * sizeof *pr) != 0,
              "the passes agree up to the clip's first window of zeros (%zu), not after it", zero);
    CHECK_MSG(memcmp(pn + first, pr + first, nw_b * sizeof *pb) != 0,
              "without the reset the state carried over changes them");

    hv_vad_params ps = hv_vad_default_params(), pd = ps;
    ps.edges = HV_VAD_EDGES_SILERO;
    CHECK(hv_vad_forward_pass(v, pool, ab, m, 1.0f, HV_VAD_PASS_RESET | HV_VAD_PASS_BACKWARDS, back,
                              &e) == HV_OK);
    for (size_t w = 0; w < nw_ab; w++)
        if (back[nw_ab - 1 - w] > pr[w]) pr[w] = back[nw_ab - 1 - w];
    for (int k = 0; k < 2; k++) {
        hv_speech_region *r = NULL, *q = NULL;
        size_t nr = 0, nq = 0;
        const hv_vad_params *p = k ? &pd : &ps;
        CHECK(hv_vad_detect(v, pool, ab, m, p, &r, &nr, NULL, &e) == HV_OK);
        CHECK(hv_vad_speech_regions(k ? pr : pn, nw_ab, m, 512, 16000, p, &q, &nq, &e) == HV_OK);
        if (k) CHECK(hv_vad_signal_edges(ab, m, 16000, q, nq, &e) == HV_OK);
        CHECK_MSG(nr > 0 && nr == nq && !memcmp(r, q, nr * sizeof *r), "hv_vad_detect, %s",
                  k ? "default" : "silero");
        free(r);
        free(q);
    }
    free(back);
    free(pb);
    free(pr);
    free(pn);
    free(ab);
}

/* The passes of hv_vad_detect's default (docs/VAD.md, "Onsets"); `clip`:
 * the example clip's path. */
static void test_passes(const char *dir, const char *clip) {
    hv_vad v;
    hv_error e = {0};
    CHECK_MSG(hv_vad_init(&v, dir, &e) == HV_OK, "%s", e.msg);
    if (e.msg[0]) return;
    hv_pool *pool = hv_pool_new(3);
    test_backwards(&v, pool);
    float *b = NULL;
    size_t nb = 0;
    CHECK_MSG(hv_audio_read_file_mono(clip, 16000, 0, &b, &nb, &e) == HV_OK, "%s", e.msg);
    CHECK_MSG(b && nb >= 512 * 20 && nb <= 512 * 96, "%s: %zu samples", clip, nb);
    if (b && nb >= 512 * 20 && nb <= 512 * 96) test_reset(&v, pool, b, nb);
    free(b);
    hv_pool_free(pool);
    hv_vad_release(&v);
}

/* The public functions, with a context of a fixture model. */
static void test_api(const char *dir, const char *fx) {
    char err[1024];
    hv_vad *vad;
    CHECK(hv_vad_load("/nonexistent-vad", &vad, err, sizeof err) == HV_ERR_IO && !vad &&
          strstr(err, "/nonexistent-vad/config.json"));
    CHECK(hv_vad_load(NULL, &vad, err, sizeof err) == HV_ERR_INVALID_ARG);
    CHECK_MSG(hv_vad_load(dir, &vad, err, sizeof err) == HV_OK, "%s", err);
    hv_model *m;
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = 2;
    CHECK_MSG(hv_model_load(hv_test_path(fx, "models/tiny-f32"), &mp, &m, err, sizeof err) == HV_OK,
              "%s", err);
    if (!vad || !m) {
        hv_vad_free(vad);
        hv_model_free(m);
        return;
    }
    CHECK(hv_vad_sample_rate(vad) == 16000 && hv_vad_window_samples(vad) == 512);
    hv_context *ctx = hv_test_context(m, 0);

    /* speech (espeak-ng, stereo 44.1 kHz): what hv_vad_probs gives is the
     * internal path on the converted samples; it has speech in it */
    float *pcm, *x, *probs, *ref;
    size_t nf, n, np;
    int rate, ch;
    CHECK(hv_audio_read(hv_test_path(fx, "audio/da2_44100_stereo.wav"), &pcm, &nf, &rate, &ch, err,
                        sizeof err) == HV_OK);
    CHECK(ch == 2 && rate == 44100);
    hv_error e = {0};
    CHECK(hv_audio_to_mono(pcm, nf, ch, rate, 16000, &x, &n, &e) == HV_OK);
    CHECK_MSG(hv_vad_probs(ctx, vad, pcm, nf, rate, ch, &probs, &np) == HV_OK, "%s",
              hv_context_error(ctx));
    ref = malloc(np * sizeof *ref);
    CHECK(np == (n + 511) / 512 && hv_vad_forward(vad, NULL, x, n, ref, &e) == HV_OK);
    CHECK(!memcmp(ref, probs, np * sizeof *ref));
    hv_speech_region *r, *r2;
    size_t nr, nr2;
    CHECK(hv_vad_regions(ctx, vad, pcm, nf, rate, ch, NULL, &r, &nr) == HV_OK && nr >= 1);
    hv_vad_params p = hv_vad_default_params();
    CHECK(hv_vad_speech_regions(probs, np, n, 512, 16000, &p, &r2, &nr2, &e) == HV_OK);
    CHECK(nr == nr2 && !memcmp(r, r2, nr * sizeof *r));
    CHECK(nr >= 1 && r[0].start >= 0 && r[nr - 1].end <= nf / 44100.0 + 1e-3 &&
          r[0].end > r[0].start);
    hv_free(r);
    free(r2);
    hv_free(probs);

    /* errors land on the context */
    p.threshold = -1;
    CHECK(hv_vad_regions(ctx, vad, pcm, nf, rate, ch, &p, &r, &nr) == HV_ERR_INVALID_ARG &&
          strstr(hv_context_error(ctx), "threshold") && !r);
    CHECK(hv_vad_probs(ctx, NULL, pcm, nf, rate, ch, &probs, &np) == HV_ERR_INVALID_ARG);
    CHECK(hv_vad_probs(ctx, vad, pcm, 0, rate, ch, &probs, &np) == HV_ERR_INVALID_ARG &&
          strstr(hv_context_error(ctx), "no samples"));
    pcm[7] = NAN;
    CHECK(hv_vad_probs(ctx, vad, pcm, nf, rate, ch, &probs, &np) == HV_ERR_FORMAT);
    hv_free(pcm);
    free(x);
    free(ref);
    hv_context_free(ctx);
    hv_model_free(m);
    hv_vad_free(vad);
}

int main(int argc, char **argv) {
    if (argc > 1) return tool(argc, argv);
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    const char *fx = hv_test_env("HV_FIXTURES", "build/fixtures");
    const char *dir = hv_test_path(src, "models/silero-vad");
    test_regions();
    test_detector(dir);
    test_passes(dir, hv_test_path(src, "examples/da-example.wav"));
    test_api(dir, fx);
    TEST_END();
}
