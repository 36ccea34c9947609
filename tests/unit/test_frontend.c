/* The log-mel frontend against (a) a straightforward double-precision
 * implementation written here (direct DFT, dense mel product), (b) the
 * padding / valid-frame semantics of docs/MODEL.md, (c) a numpy oracle for the
 * Hann window and the Slaney filterbank (tests/frontend/mel_oracle.py),
 * (d) dither determinism, (e) too-short audio, (f) thread-count
 * independence, (g) torch.stft (tests/frontend/torch_frontend.py, skipped
 * without torch), plus checkpoint-given window / filterbank and bad
 * arguments. */
#ifndef _POSIX_C_SOURCE         /* popen, strdup, ...: the tests are not built */
#define _POSIX_C_SOURCE 200809L /* with the library's definitions */
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "audio/frontend.h"
#include "audio/torch_randn.h"
#include "kernels/threads.h"
#include "model/config.h"
#include "testlib.h"

#define TWO_PI 6.283185307179586476925

/* How far our features (float32, KissFFT) may be from the double-precision
 * reference and from torch (normalised units: std 1). Measured: 1.3e-4 on
 * white noise, 1.1e-4 on a sine over a faint floor, 1.6e-3 on a loud chirp
 * over a 1e-3 floor: there the low mel bands hold only the floor, cut
 * further by pre-emphasis, while the frame's energy sits in the chirp, so
 * float32 FFT rounding (~1e-7 of the frame) is a visible part of those
 * bands. torch.stft (float32 too) differs from us by 1.4e-3 on the chirp
 * for the same reason. */
#define TOL_REF      5e-4
#define TOL_REF_LOUD 5e-3
#define TOL_TORCH    5e-3

static void default_config(hv_config *c) {
    memset(c, 0, sizeof *c);
    c->sample_rate = 16000;
    c->n_mels = 128;
    c->n_fft = 512;
    c->win_length = 400;
    c->hop_length = 160;
    c->pad_to = 16;
    c->dither = 1e-5f;
}

/* A small deterministic generator for test signals: uniform in [-1, 1). */
static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-52 - 1.0;
}

enum { SIG_NOISE, SIG_CHIRP, SIG_SINE };

static float *make_signal(int kind, size_t n) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double t = i / 16000.0, v = 0;
        switch (kind) {
            case SIG_NOISE: v = 0.5 * urand(); break;
            case SIG_CHIRP: /* rising tone, amplitude-modulated, over a floor */
                v = (0.5 + 0.4 * sin(TWO_PI * 3 * t)) * sin(TWO_PI * (200 + 1500 * t) * t) +
                    1e-3 * urand();
                break;
            case SIG_SINE: v = 0.3 * sin(TWO_PI * 440 * t) + 1e-4 * urand(); break;
        }
        x[i] = (float)v;
    }
    return x;
}

/* The frontend of docs/MODEL.md written as plainly as possible, in double:
 * out [n_frames x n_mels], rows >= T zero. Uses f's window and filterbank
 * (checked against the oracle on their own). */
static void ref_features(const hv_frontend *f, const float *x, size_t n, double *out,
                         int n_frames) {
    int N = f->n_fft, B = f->n_bins, M = f->n_mels, hop = f->hop;
    size_t T = n / hop;
    double *xp = calloc(n + N, sizeof *xp); /* centred: N/2 zeros each side */
    for (size_t i = 0; i < n; i++) xp[N / 2 + i] = i ? (double)x[i] - 0.97 * x[i - 1] : x[0];
    double *cs = malloc(N * sizeof *cs), *sn = malloc(N * sizeof *sn);
    for (int k = 0; k < N; k++) {
        cs[k] = cos(TWO_PI * k / N);
        sn[k] = sin(TWO_PI * k / N);
    }
    double *frame = malloc(N * sizeof *frame), *pw = malloc(B * sizeof *pw);
    memset(out, 0, (size_t)n_frames * M * sizeof *out);
    for (size_t t = 0; t < T; t++) {
        for (int j = 0; j < N; j++) frame[j] = f->window[j] * xp[t * hop + j];
        for (int k = 0; k < B; k++) { /* X_k = sum_j x_j e^(-2 pi i jk/N) */
            double re = 0, im = 0;
            for (int j = 0; j < N; j++) {
                re += frame[j] * cs[(size_t)j * k % N];
                im -= frame[j] * sn[(size_t)j * k % N];
            }
            pw[k] = re * re + im * im;
        }
        for (int m = 0; m < M; m++) {
            double mel = 0;
            for (int k = 0; k < B; k++) mel += f->fb[(size_t)m * B + k] * pw[k];
            out[t * M + m] = log(mel + pow(2, -24));
        }
    }
    for (int m = 0; m < M; m++) {
        double mean = 0, var = 0;
        for (size_t t = 0; t < T; t++) mean += out[t * M + m];
        mean /= T;
        for (size_t t = 0; t < T; t++) var += (out[t * M + m] - mean) * (out[t * M + m] - mean);
        double sd = sqrt(var / (T - 1)) + 1e-5;
        for (size_t t = 0; t < T; t++) out[t * M + m] = (out[t * M + m] - mean) / sd;
    }
    free(xp);
    free(cs);
    free(sn);
    free(frame);
    free(pw);
}

/* Runs the frontend; checks success and the shape rules of docs/MODEL.md. */
static float *features(const hv_frontend *f, const float *x, size_t n, float dither, uint64_t seed,
                       hv_pool *pool, int *n_frames, int *n_valid) {
    hv_error e;
    hv_err_clear(&e);
    float *feat = NULL;
    hv_status rc =
        hv_frontend_compute(f, x, n, dither, seed, pool, &feat, n_frames, n_valid, NULL, &e);
    CHECK_MSG(rc == HV_OK, "compute n=%zu: %s", n, e.msg);
    return feat;
}

/* (a) against the double-precision reference. */
static void test_reference(const hv_frontend *f) {
    static const struct {
        int kind;
        size_t n;
        const char *name;
        double tol;
    } cases[] = {
        {SIG_NOISE, 24077, "noise", TOL_REF},
        {SIG_CHIRP, 32033, "am chirp", TOL_REF_LOUD},
        {SIG_SINE, 8005, "440 Hz sine", TOL_REF},
        {SIG_NOISE, 320, "2 frames", TOL_REF},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *x = make_signal(cases[c].kind, cases[c].n);
        int nf = 0, nv = 0;
        float *feat = features(f, x, cases[c].n, 0, 0, NULL, &nf, &nv);
        if (!feat) {
            free(x);
            continue;
        }
        double *ref = malloc((size_t)nf * f->n_mels * sizeof *ref);
        ref_features(f, x, cases[c].n, ref, nf);
        double worst = 0;
        for (size_t i = 0; i < (size_t)nf * f->n_mels; i++)
            worst = fmax(worst, fabs(feat[i] - ref[i]));
        printf("(a) %-12s n=%6zu: max |ours - double reference| = %.2e\n", cases[c].name,
               cases[c].n, worst);
        CHECK_MSG(worst < cases[c].tol, "%s: max diff %g", cases[c].name, worst);
        free(ref);
        free(feat);
        free(x);
    }
}

/* (a') the log-mel before normalisation (logmel): the features unchanged
 * by asking for it, and the log-mel normalised per feature gives them. */
static void test_logmel(const hv_frontend *f) {
    size_t n = 24077;
    float *x = make_signal(SIG_CHIRP, n);
    int nf = 0, nv = 0, nf2 = 0, nv2 = 0, M = f->n_mels;
    float *plain = features(f, x, n, 0, 0, NULL, &nf, &nv), *feat = NULL, *lm = NULL;
    hv_error e;
    hv_err_clear(&e);
    CHECK(hv_frontend_compute(f, x, n, 0, 0, NULL, &feat, &nf2, &nv2, &lm, &e) == HV_OK);
    CHECK(feat && lm && plain && nf2 == nf && nv2 == nv);
    if (feat && lm && plain) {
        CHECK(memcmp(feat, plain, (size_t)nf * M * sizeof *feat) == 0);
        double worst = 0;
        for (int m = 0; m < M; m++) {
            double mean = 0, var = 0;
            for (int t = 0; t < nv; t++) mean += lm[(size_t)t * M + m];
            mean /= nv;
            for (int t = 0; t < nv; t++) var += pow(lm[(size_t)t * M + m] - mean, 2);
            double sd = sqrt(var / (nv - 1)) + 1e-5;
            for (int t = 0; t < nv; t++)
                worst = fmax(worst,
                             fabs((lm[(size_t)t * M + m] - mean) / sd - feat[(size_t)t * M + m]));
        }
        CHECK_MSG(worst < 1e-4, "log-mel normalised vs features: %g", worst);
    }
    /* a refused input leaves no log-mel */
    free(feat);
    float *lm2 = (float *)1;
    CHECK(hv_frontend_compute(f, x, 100, 0, 0, NULL, &feat, &nf2, &nv2, &lm2, &e) ==
              HV_ERR_INVALID_ARG &&
          lm2 == NULL);
    free(plain);
    free(lm);
    free(x);
}

/* (b) frames >= T zero, padding to pad_to, mean 0 / std 1 per feature. */
static void check_semantics(const hv_frontend *f, size_t n, int pad_to) {
    float *x = make_signal(SIG_CHIRP, n);
    int nf = 0, nv = 0;
    float *feat = features(f, x, n, 0, 0, NULL, &nf, &nv);
    free(x);
    if (!feat) return;
    int M = f->n_mels, T = (int)(n / 160);
    int want = (T + 1 + pad_to - 1) / pad_to * pad_to;
    CHECK_MSG(nv == T && nf == want, "n=%zu: %d/%d frames, want %d/%d", n, nv, nf, T, want);
    CHECK(nf % pad_to == 0);
    int nonzero = 0;
    for (size_t i = (size_t)T * M; i < (size_t)nf * M; i++) nonzero += feat[i] != 0;
    CHECK_MSG(nonzero == 0, "n=%zu: %d non-zero padded values", n, nonzero);
    double worst_mean = 0, worst_sd = 0;
    for (int m = 0; m < M; m++) {
        double s = 0, s2 = 0;
        for (int t = 0; t < T; t++) s += feat[(size_t)t * M + m];
        double mean = s / T;
        for (int t = 0; t < T; t++) {
            double d = feat[(size_t)t * M + m] - mean;
            s2 += d * d;
        }
        worst_mean = fmax(worst_mean, fabs(mean));
        worst_sd = fmax(worst_sd, fabs(sqrt(s2 / (T - 1)) - 1));
    }
    /* std is a shade under 1: the 1e-5 added to it. */
    CHECK_MSG(worst_mean < 1e-5 && worst_sd < 1e-3, "n=%zu: |mean| %g, |std - 1| %g", n, worst_mean,
              worst_sd);
    free(feat);
}

static void test_semantics(const hv_frontend *f) {
    /* T = 2 (the least), odd sizes, T + 1 exactly 16 (2400), just past. */
    size_t lengths[] = {320, 321, 479, 2400, 2559, 2560, 16000, 16161};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        check_semantics(f, lengths[i], 16);

    /* pad_to 0: no padding beyond the STFT's T + 1 frames. */
    hv_config c;
    default_config(&c);
    c.pad_to = 0;
    hv_frontend g;
    hv_error e;
    CHECK(hv_frontend_init(&g, &c, NULL, NULL, &e) == HV_OK);
    check_semantics(&g, 2559, 1);
    hv_frontend_free(&g);
}

/* Reads `count` numbers printed by the oracle; returns them (malloc'ed)
 * or NULL. */
static double *run_oracle(int sr, int n_fft, int n_mels, int win, size_t count) {
    const char *py = hv_test_env("HV_PYTHON", "/usr/bin/python3");
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/frontend/mel_oracle.py' %d %d %d %d", py, src, sr,
             n_fft, n_mels, win);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    double *v = malloc(count * sizeof *v);
    size_t got = 0;
    while (got < count && fscanf(p, "%lf", &v[got]) == 1) got++;
    int status = pclose(p);
    if (got != count || status != 0) {
        fprintf(stderr, "oracle '%s': %zu of %zu values, status %d\n", cmd, got, count, status);
        free(v);
        return NULL;
    }
    return v;
}

/* (c) computed window and filterbank against the numpy oracle. */
static void check_oracle(int sr, int n_fft, int n_mels, int win) {
    hv_config c;
    default_config(&c);
    c.sample_rate = sr;
    c.n_fft = n_fft;
    c.n_mels = n_mels;
    c.win_length = win;
    hv_frontend f;
    hv_error e;
    CHECK(hv_frontend_init(&f, &c, NULL, NULL, &e) == HV_OK);
    int B = n_fft / 2 + 1, off = (n_fft - win) / 2;
    size_t count = (size_t)win + (size_t)n_mels * B;
    double *v = run_oracle(sr, n_fft, n_mels, win, count);
    CHECK_MSG(v, "the numpy oracle did not run (HV_PYTHON, HV_SOURCE_DIR)");
    if (v) {
        double dw = 0, dfb = 0, fb_max = 0;
        for (int i = 0; i < win; i++) dw = fmax(dw, fabs(f.window[off + i] - v[i]));
        for (size_t i = 0; i < (size_t)n_mels * B; i++) {
            dfb = fmax(dfb, fabs(f.fb[i] - v[win + i]));
            fb_max = fmax(fb_max, v[win + i]);
        }
        printf("(c) sr %d n_fft %d mels %d win %d: window max diff %.2e, "
               "filterbank max diff %.2e (largest weight %.3g)\n",
               sr, n_fft, n_mels, win, dw, dfb, fb_max);
        CHECK_MSG(dw < 1e-7, "window differs by %g", dw);
        CHECK_MSG(dfb < 1e-6 * fb_max, "filterbank differs by %g", dfb);
        free(v);
    }
    /* Closed-form facts: a symmetric window, zero at its ends, 1 in the
     * middle (odd length), zero outside; the frame padding is zero. */
    int asym = 0, outside = 0;
    for (int i = 0; i < win; i++) asym += f.window[off + i] != f.window[off + win - 1 - i];
    for (int i = 0; i < n_fft; i++) outside += (i < off || i >= off + win) && f.window[i] != 0;
    CHECK(asym == 0 && outside == 0);
    CHECK(f.window[off] == 0 && f.window[off + win - 1] == 0);
    /* Every filter has weights and fb_range covers them. Slaney
     * normalisation gives each triangle area 1 (weights x Hz); sampled on
     * the bin grid that holds well for filters many bins wide. */
    double bin_hz = (double)sr / n_fft;
    for (int m = 0; m < n_mels; m++) {
        int lo = f.fb_range[2 * m], hi = f.fb_range[2 * m + 1], bad = 0;
        double area = 0;
        for (int k = 0; k < B; k++) {
            bad += (k < lo || k >= hi) && f.fb[(size_t)m * B + k] != 0;
            area += f.fb[(size_t)m * B + k] * bin_hz;
        }
        CHECK_MSG(lo < hi && bad == 0, "filter %d range [%d, %d)", m, lo, hi);
        if (hi - lo >= 8) CHECK_MSG(fabs(area - 1) < 0.02, "filter %d: area %g", m, area);
    }
    hv_frontend_free(&f);
}

/* (d) dither: same seed same output, other seed other output, 0 none. */
static void test_dither(const hv_frontend *f) {
    size_t n = 16000;
    float *x = make_signal(SIG_CHIRP, n);
    int nf, nv;
    float *a = features(f, x, n, 1e-5f, 42, NULL, &nf, &nv);
    float *b = features(f, x, n, 1e-5f, 42, NULL, &nf, &nv);
    float *c = features(f, x, n, 1e-5f, 43, NULL, &nf, &nv);
    float *d0 = features(f, x, n, 0, 42, NULL, &nf, &nv);
    float *d1 = features(f, x, n, 0, 7, NULL, &nf, &nv);
    float *neg = features(f, x, n, -1.0f, 7, NULL, &nf, &nv);
    size_t bytes = (size_t)nf * f->n_mels * sizeof(float);
    if (a && b && c && d0 && d1 && neg) {
        CHECK(memcmp(a, b, bytes) == 0);
        CHECK(memcmp(a, c, bytes) != 0);
        CHECK(memcmp(a, d0, bytes) != 0);
        CHECK(memcmp(d0, d1, bytes) == 0);  /* no noise: the seed is unused */
        CHECK(memcmp(d0, neg, bytes) == 0); /* negative = off */
        /* Tiny noise on a loud signal moves features a little only. */
        double dd = 0;
        for (size_t i = 0; i < (size_t)nf * f->n_mels; i++) dd = fmax(dd, fabs(a[i] - d0[i]));
        CHECK_MSG(dd > 0 && dd < 0.5, "dither changed features by %g", dd);
    }
    free(a);
    free(b);
    free(c);
    free(d0);
    free(d1);
    free(neg);

    /* The noise is torch.randn(n) of a generator seeded with the seed
     * (hv_torch_randn), added in float: the features of x + 1e-5 z
     * without dither, bit for bit, also over threads */
    float *z = malloc(n * sizeof *z), *xz = malloc(n * sizeof *xz);
    hv_pool *pool = hv_pool_new(3);
    if (z && xz) {
        hv_torch_randn(n, z, n);
        for (size_t i = 0; i < n; i++) xz[i] = x[i] + 1e-5f * z[i];
        float *hf = features(f, x, n, 1e-5f, n, pool, &nf, &nv);
        float *ref = features(f, xz, n, 0, 0, NULL, &nf, &nv);
        CHECK(hf && ref && memcmp(hf, ref, (size_t)nf * f->n_mels * sizeof(float)) == 0);
        free(hf);
        free(ref);
    }
    hv_pool_free(pool);
    free(z);
    free(xz);

    /* Silence: without dither every log-mel value is log(2^-24) and the
     * normalised features are 0; with dither they are noise. */
    float *quiet = calloc(n, sizeof *quiet);
    float *s0 = features(f, quiet, n, 0, 1, NULL, &nf, &nv);
    float *s1 = features(f, quiet, n, 1e-5f, 1, NULL, &nf, &nv);
    int nz0 = 0, nz1 = 0;
    for (size_t i = 0; s0 && s1 && i < (size_t)nv * f->n_mels; i++) {
        nz0 += s0[i] != 0;
        nz1 += s1[i] != 0;
    }
    CHECK_MSG(nz0 == 0 && nz1 > nv * f->n_mels / 2, "silence: %d / %d non-zero", nz0, nz1);
    free(s0);
    free(s1);
    free(quiet);
    free(x);
}

/* (e) fewer than two valid frames; non-finite samples. */
static void test_too_short(const hv_frontend *f) {
    float x[400] = {0};
    size_t sizes[] = {0, 1, 159, 160, 319};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        hv_error e;
        hv_err_clear(&e);
        float *feat = (float *)x;
        int nf = 9, nv = 9;
        hv_status rc = hv_frontend_compute(f, x, sizes[i], 0, 0, NULL, &feat, &nf, &nv, NULL, &e);
        CHECK_MSG(rc == HV_ERR_INVALID_ARG && strstr(e.msg, "too short"), "n=%zu: %d %s", sizes[i],
                  rc, e.msg);
        CHECK(feat == NULL && nf == 0 && nv == 0);
    }
    /* Non-finite samples are refused rather than spread over a feature. */
    x[333] = NAN;
    hv_error e;
    float *feat = NULL;
    int nf, nv;
    CHECK(hv_frontend_compute(f, x, 400, 0, 0, NULL, &feat, &nf, &nv, NULL, &e) ==
          HV_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "sample 333 is NaN"), "%s", e.msg);
    CHECK(feat == NULL);
}

/* (f) any pool, any size, gives the NULL-pool result bit for bit. */
static void test_threads(const hv_frontend *f) {
    size_t n = 16000 * 3 + 101;
    float *x = make_signal(SIG_CHIRP, n);
    int sizes[] = {1, 2, 3, 7};
    for (int dith = 0; dith < 2; dith++) {
        float d = dith ? 1e-5f : 0;
        int nf, nv;
        float *base = features(f, x, n, d, 9, NULL, &nf, &nv);
        size_t bytes = (size_t)nf * f->n_mels * sizeof(float);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            hv_pool *pool = hv_pool_new(sizes[i]);
            CHECK(pool != NULL);
            if (!pool) continue;
            int nf2, nv2;
            float *p = features(f, x, n, d, 9, pool, &nf2, &nv2);
            CHECK_MSG(base && p && nf2 == nf && nv2 == nv && memcmp(base, p, bytes) == 0,
                      "%d threads (dither %g) differ from no pool", sizes[i], (double)d);
            free(p);
            hv_pool_free(pool);
        }
        free(base);
    }
    free(x);
}

/* (g) against torch.stft and friends (tests/frontend/torch_frontend.py). */
static void test_torch(const hv_frontend *f) {
    const char *dir = hv_test_tmpdir();
    const char *in = hv_test_path(dir, "samples.f32");
    const char *outp = hv_test_path(dir, "features.f32");
    size_t n = 16000 * 2 + 77;
    float *x = make_signal(SIG_CHIRP, n);
    CHECK(hv_test_write_file(in, x, n * sizeof *x) == 0);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s/tests/frontend/torch_frontend.py' '%s' '%s'",
             hv_test_env("HV_PYTHON", "/usr/bin/python3"), hv_test_env("HV_SOURCE_DIR", "."), in,
             outp);
    int st = system(cmd);
    int code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code == 77) {
        fprintf(stderr, "note: no torch; (g) skipped\n");
    } else {
        CHECK_MSG(code == 0, "torch check failed to run: %s", cmd);
        int nf, nv;
        float *feat = features(f, x, n, 0, 0, NULL, &nf, &nv);
        size_t count = (size_t)nf * f->n_mels;
        float *ref = malloc(count * sizeof *ref);
        FILE *fp = code == 0 ? fopen(outp, "rb") : NULL;
        size_t got = fp ? fread(ref, sizeof *ref, count + 1, fp) : 0;
        if (fp) fclose(fp);
        CHECK_MSG(code != 0 || got == count, "torch gave %zu values, want %zu", got, count);
        if (feat && got == count) {
            double worst = 0;
            for (size_t i = 0; i < count; i++) worst = fmax(worst, fabs(feat[i] - ref[i]));
            printf("(g) max |ours - torch| = %.2e\n", worst);
            CHECK_MSG(worst < TOL_TORCH, "torch differs by %g", worst);
        }
        free(ref);
        free(feat);
    }
    free(x);
}

/* Checkpoint-given window and filterbank are used as given; bad ones and
 * bad sizes are refused; bf16 rounding. */
static void test_init(void) {
    hv_config c;
    default_config(&c);
    c.n_fft = 16;
    c.win_length = 10;
    c.hop_length = 4;
    c.n_mels = 3;
    int B = 9;
    float win[10], fb[27];
    for (int i = 0; i < 10; i++) win[i] = 1.0f + i;
    for (int i = 0; i < 27; i++) fb[i] = (i % 9 == i / 9 + 2) ? 0.5f : 0.0f;
    hv_frontend f;
    hv_error e;
    CHECK(hv_frontend_init(&f, &c, win, fb, &e) == HV_OK);
    CHECK(f.n_fft == 16 && f.n_bins == B && f.hop == 4 && f.n_mels == 3);
    CHECK(f.window[0] == 0 && f.window[2] == 0 && f.window[3] == 1.0f && f.window[12] == 10.0f &&
          f.window[13] == 0 && f.window[15] == 0);
    CHECK(memcmp(f.fb, fb, sizeof fb) == 0);
    CHECK(f.fb_range[0] == 2 && f.fb_range[1] == 3 && f.fb_range[4] == 4);

    /* One bin per filter and a hand-made window: the features are the
     * normalised log power of bins 2, 3, 4 of each frame, which a direct
     * computation reproduces. */
    size_t n = 64;
    float x[64];
    for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.7 * i) + 0.1f * (i % 5);
    int nf, nv;
    float *feat = features(&f, x, n, 0, 0, NULL, &nf, &nv);
    CHECK(nv == 16 && nf == 32); /* pad_to 16: 17 STFT frames -> 32 */
    double *ref = malloc((size_t)nf * 3 * sizeof *ref);
    ref_features(&f, x, n, ref, nf);
    double worst = 0;
    for (int i = 0; feat && i < nf * 3; i++) worst = fmax(worst, fabs(feat[i] - ref[i]));
    CHECK_MSG(worst < TOL_REF, "given window/fb: diff %g", worst);
    free(ref);
    free(feat);

    /* bf16: low 16 bits cleared, nearest value. */
    f.fb[0] = 0.1f;
    f.window[1] = 0.1f;
    hv_frontend_round_bf16(&f, 0, 1); /* a checkpoint with a window only */
    uint32_t u;
    memcpy(&u, &f.fb[0], sizeof u);
    CHECK((u & 0xffff) == 0 && fabs(f.fb[0] - 0.1) < 0.1 / 256);
    CHECK(f.window[1] == 0.1f);
    hv_frontend_round_bf16(&f, 1, 0);
    memcpy(&u, &f.window[1], sizeof u);
    CHECK((u & 0xffff) == 0);
    CHECK(f.window[3] == 1.0f && f.fb[2] == 0.5f); /* exact values stay */
    hv_frontend_free(&f);
    hv_frontend_free(&f); /* twice is harmless */

    fb[5] = NAN;
    CHECK(hv_frontend_init(&f, &c, win, fb, &e) == HV_ERR_FORMAT);
    fb[5] = -0.1f;
    CHECK(hv_frontend_init(&f, &c, win, fb, &e) == HV_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, "filterbank"), "%s", e.msg);
    fb[5] = 0;
    win[2] = INFINITY;
    CHECK(hv_frontend_init(&f, &c, win, fb, &e) == HV_ERR_FORMAT);
    hv_config bad = c;
    bad.n_fft = 15;
    CHECK(hv_frontend_init(&f, &bad, NULL, NULL, &e) == HV_ERR_INVALID_ARG);
    bad = c;
    bad.win_length = 17;
    CHECK(hv_frontend_init(&f, &bad, NULL, NULL, &e) == HV_ERR_INVALID_ARG);
    bad = c;
    bad.hop_length = 0;
    CHECK(hv_frontend_init(&f, &bad, NULL, NULL, &e) == HV_ERR_INVALID_ARG);
    bad = c;
    bad.n_mels = 0;
    CHECK(hv_frontend_init(&f, &bad, NULL, NULL, &e) == HV_ERR_INVALID_ARG);
    bad = c;
    bad.sample_rate = 0;
    CHECK(hv_frontend_init(&f, &bad, NULL, NULL, &e) == HV_ERR_INVALID_ARG);
}

/* Not a check: how long 30 s of audio takes here. */
static void report_speed(const hv_frontend *f) {
    size_t n = 16000 * 30;
    float *x = make_signal(SIG_NOISE, n);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int nf, nv;
    float *feat = features(f, x, n, 1e-5f, 1, NULL, &nf, &nv);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("30 s of audio: %.1f ms on one thread (%.2f ms per second)\n", ms, ms / 30);
    free(feat);
    free(x);
}

int main(void) {
    hv_config c;
    default_config(&c);
    hv_frontend f;
    hv_error e;
    hv_err_clear(&e);
    CHECK_MSG(hv_frontend_init(&f, &c, NULL, NULL, &e) == HV_OK, "%s", e.msg);
    test_reference(&f);
    test_logmel(&f);
    test_semantics(&f);
    check_oracle(16000, 512, 128, 400);
    check_oracle(8000, 256, 40, 201);
    test_dither(&f);
    test_too_short(&f);
    test_threads(&f);
    test_torch(&f);
    test_init();
    report_speed(&f);
    hv_frontend_free(&f);
    TEST_END();
}
