/* The log-mel frontend of docs/MODEL.md ("Frontend"), step by step:
 *
 *   samples -> dither -> pre-emphasis -> centred STFT (Hann) -> |X|^2
 *           -> mel filterbank -> log -> per-feature normalisation -> padding
 *
 * The dither noise is PyTorch's torch.randn stream for the chunk
 * (torch_randn.h), drawn first on the caller. Work is then split in two
 * parallel passes: (1) dither + pre-emphasis over sample blocks, (2) one
 * STFT frame at a time up to the log-mel. Both give
 * every output element the same value whatever the split, and the
 * normalisation that needs all frames runs on the caller in a fixed order,
 * so the features do not depend on the thread count. */
#include "audio/frontend.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <kiss_fftr.h>

#include "audio/torch_randn.h"
#include "kernels/half.h"

#define PREEMPH   0.97f
#define LOG_GUARD 0x1p-24f /* log(mel + 2^-24) */
#define STD_GUARD 1e-5     /* added to the standard deviation */
#define TWO_PI    6.283185307179586476925

/* --------------------------------------------------------- initialisation */

/* Slaney's mel scale, as librosa (htk=False): linear below 1 kHz, log
 * above. */
#define MEL_F_SP        (200.0 / 3)
#define MEL_MIN_LOG_HZ  1000.0
#define MEL_MIN_LOG_MEL (MEL_MIN_LOG_HZ / MEL_F_SP)
#define MEL_LOGSTEP     (log(6.4) / 27.0)

static double hz_to_mel(double hz) {
    if (hz < MEL_MIN_LOG_HZ) return hz / MEL_F_SP;
    return MEL_MIN_LOG_MEL + log(hz / MEL_MIN_LOG_HZ) / MEL_LOGSTEP;
}

static double mel_to_hz(double mel) {
    if (mel < MEL_MIN_LOG_MEL) return MEL_F_SP * mel;
    return MEL_MIN_LOG_HZ * exp(MEL_LOGSTEP * (mel - MEL_MIN_LOG_MEL));
}

/* librosa.filters.mel(sr, n_fft, n_mels, fmin=0, fmax=sr/2, htk=False,
 * norm='slaney'), operation for operation, including its float32 rounding
 * before the normalisation, so the two agree to the last bit or so. */
static int slaney_filterbank(float *fb, int n_mels, int n_fft, int sr) {
    int n_bins = n_fft / 2 + 1;
    double *mel_f = malloc((size_t)(n_mels + 2) * sizeof *mel_f);
    double *fft_f = malloc((size_t)n_bins * sizeof *fft_f);
    if (!mel_f || !fft_f) {
        free(mel_f);
        free(fft_f);
        return -1;
    }
    double bin_hz = 1.0 / (n_fft * (1.0 / sr)); /* np.fft.rfftfreq */
    for (int k = 0; k < n_bins; k++) fft_f[k] = k * bin_hz;
    /* n_mels + 2 points evenly spaced in mel (np.linspace, exact ends). */
    double lo = hz_to_mel(0.0), hi = hz_to_mel(sr / 2.0);
    double step = (hi - lo) / (n_mels + 1);
    for (int i = 0; i < n_mels + 2; i++) mel_f[i] = mel_to_hz(i * step + lo);
    mel_f[n_mels + 1] = mel_to_hz(hi);

    for (int m = 0; m < n_mels; m++) {
        double d0 = mel_f[m + 1] - mel_f[m], d1 = mel_f[m + 2] - mel_f[m + 1];
        double enorm = 2.0 / (mel_f[m + 2] - mel_f[m]);
        for (int k = 0; k < n_bins; k++) {
            double lower = -(mel_f[m] - fft_f[k]) / d0;
            double upper = (mel_f[m + 2] - fft_f[k]) / d1;
            double w = fmax(0.0, fmin(lower, upper));
            fb[(size_t)m * n_bins + k] = (float)((double)(float)w * enorm);
        }
    }
    free(mel_f);
    free(fft_f);
    return 0;
}

hv_status hv_frontend_init(hv_frontend *f, const hv_config *c, const float *window, const float *fb,
                           hv_error *e) {
    memset(f, 0, sizeof *f);
    if (c->n_fft < 2 || c->n_fft > (1 << 16) || c->n_fft % 2)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: n_fft %d (an even number 2..65536)",
                      c->n_fft);
    if (c->win_length < 1 || c->win_length > c->n_fft)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: win_length %d (1..n_fft %d)", c->win_length,
                      c->n_fft);
    if (c->hop_length < 1 || c->hop_length > (1 << 20))
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: hop_length %d", c->hop_length);
    if (c->n_mels < 1 || c->n_mels > 4096)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: %d mel features", c->n_mels);
    if (c->pad_to < 0 || c->pad_to > 4096)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: pad_to %d", c->pad_to);
    if (c->sample_rate < 1)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: sample rate %d", c->sample_rate);

    int n_fft = c->n_fft, n_bins = n_fft / 2 + 1, win = c->win_length;
    int n_mels = c->n_mels;
    size_t fb_len = (size_t)n_mels * n_bins;
    if (window)
        for (int i = 0; i < win; i++)
            if (!isfinite(window[i]))
                return hv_err(e, HV_ERR_FORMAT, "frontend: window value %d is not finite", i);
    if (fb)
        for (size_t i = 0; i < fb_len; i++)
            if (!isfinite(fb[i]) || fb[i] < 0) /* log(negative) is NaN */
                return hv_err(e, HV_ERR_FORMAT,
                              "frontend: filterbank value %zu (mel %zu, bin "
                              "%zu) is %g; must be finite and >= 0",
                              i, i / n_bins, i % n_bins, (double)fb[i]);

    f->n_fft = n_fft;
    f->n_bins = n_bins;
    f->hop = c->hop_length;
    f->win_length = win;
    f->n_mels = n_mels;
    f->pad_to = c->pad_to > 1 ? c->pad_to : 1;
    f->window = calloc((size_t)n_fft, sizeof *f->window);
    f->fb = malloc(fb_len * sizeof *f->fb);
    f->fb_range = malloc((size_t)n_mels * 2 * sizeof *f->fb_range);
    if (!f->window || !f->fb || !f->fb_range) {
        hv_frontend_free(f);
        return hv_err(e, HV_ERR_NOMEM, "frontend: out of memory");
    }

    /* torch.stft pads a short window with zeros on both sides to n_fft. */
    float *w = f->window + (n_fft - win) / 2;
    for (int i = 0; i < win; i++) {
        if (window)
            w[i] = window[i];
        else if (win == 1)
            w[i] = 1.0f;
        else
            w[i] = (float)(0.5 - 0.5 * cos(TWO_PI * i / (win - 1)));
    }
    if (fb) {
        memcpy(f->fb, fb, fb_len * sizeof *f->fb);
    } else if (slaney_filterbank(f->fb, n_mels, n_fft, c->sample_rate)) {
        hv_frontend_free(f);
        return hv_err(e, HV_ERR_NOMEM, "frontend: out of memory");
    }
    for (int m = 0; m < n_mels; m++) {
        const float *row = f->fb + (size_t)m * n_bins;
        int lo = 0, hi = n_bins;
        while (lo < hi && row[lo] == 0) lo++;
        while (hi > lo && row[hi - 1] == 0) hi--;
        f->fb_range[2 * m] = lo;
        f->fb_range[2 * m + 1] = hi;
    }
    return HV_OK;
}

void hv_frontend_free(hv_frontend *f) {
    if (!f) return;
    free(f->window);
    free(f->fb);
    free(f->fb_range);
    memset(f, 0, sizeof *f);
}

/* x rounded to the nearest bf16, ties to even. */
static float to_bf16(float x) { return hv_bf16_to_f32(hv_f32_to_bf16(x)); }

void hv_frontend_round_bf16(hv_frontend *f, int window, int fb) {
    for (int i = 0; window && i < f->n_fft; i++) f->window[i] = to_bf16(f->window[i]);
    for (size_t i = 0; fb && i < (size_t)f->n_mels * f->n_bins; i++) f->fb[i] = to_bf16(f->fb[i]);
    /* Rounding can only turn weights into zero (subnormals), never zeros
     * into weights, so fb_range still covers every non-zero weight. */
}

/* ----------------------------------------------------------------- compute */

typedef struct job {
    const hv_frontend *f;
    const float *x; /* [n] input samples */
    float *y;       /* [n] dithered, pre-emphasised samples */
    size_t n;
    float dither;       /* <= 0: none */
    float *noise;       /* [n] standard normal dither noise, or NULL */
    size_t n_valid;     /* T = n / hop frames computed */
    float *feat;        /* [n_frames x n_mels] */
    kiss_fftr_cfg *cfg; /* [n_tasks]: kiss cfgs hold scratch, one per task */
    float *frame;       /* [n_tasks x n_fft] windowed frame */
    kiss_fft_cpx *spec; /* [n_tasks x n_bins] spectrum */
    float *power;       /* [n_tasks x n_bins] |X|^2 */
} job;

/* Task's share [*lo, *hi) of n items: a fixed split by task index. */
static void share(size_t n, int task, int n_tasks, size_t *lo, size_t *hi) {
    *lo = n * (size_t)task / (size_t)n_tasks;
    *hi = n * (size_t)(task + 1) / (size_t)n_tasks;
}

/* Pass 1: dither, then pre-emphasis y[i] = x[i] - 0.97 x[i-1], y[0] = x[0]
 * (x dithered: x[i] + dither * noise[i] in float, as PyTorch adds them). A
 * block recomputes the dithered sample before it, which is the same value
 * its neighbour computed. */
static void prep_task(void *arg, int task, int n_tasks) {
    job *j = arg;
    size_t lo, hi;
    share(j->n, task, n_tasks, &lo, &hi);
    if (lo >= hi) return;
    const float *x = j->x, *z = j->noise;
    float prev = lo ? x[lo - 1] : 0.0f;
    if (z && lo) prev += j->dither * z[lo - 1];
    for (size_t i = lo; i < hi; i++) {
        float cur = x[i];
        if (z) cur += j->dither * z[i];
        j->y[i] = i == 0 ? cur : cur - PREEMPH * prev;
        prev = cur;
    }
}

/* Pass 2: frames [lo, hi) up to log-mel, written into their feature rows.
 * Frame t covers padded samples [t*hop, t*hop + n_fft), i.e. signal
 * samples from t*hop - n_fft/2 (torch.stft center=True, zero padding). */
static void frame_task(void *arg, int task, int n_tasks) {
    job *j = arg;
    const hv_frontend *f = j->f;
    size_t lo, hi;
    share(j->n_valid, task, n_tasks, &lo, &hi);
    int n_fft = f->n_fft, n_bins = f->n_bins, n_mels = f->n_mels;
    int w0 = (n_fft - f->win_length) / 2, w1 = w0 + f->win_length;
    float *frame = j->frame + (size_t)task * n_fft;
    kiss_fft_cpx *spec = j->spec + (size_t)task * n_bins;
    float *power = j->power + (size_t)task * n_bins;
    const float *win = f->window;
    const long long n = (long long)j->n;

    memset(frame, 0, (size_t)n_fft * sizeof *frame); /* outside the window */
    for (size_t t = lo; t < hi; t++) {
        long long s0 = (long long)t * f->hop - n_fft / 2; /* sample at j=0 */
        /* Window the frame; samples outside [0, n) are the zero padding. */
        int a = w0, b = w1; /* window positions that hold signal */
        if (s0 + a < 0) a = (int)-s0;
        if (s0 + b > n) b = (int)(n - s0); /* s0 < n as t < n / hop */
        if (a > w1) a = w1;
        if (b < a) b = a;
        for (int k = w0; k < a; k++) frame[k] = 0;
        for (int k = a; k < b; k++) frame[k] = win[k] * j->y[s0 + k];
        for (int k = b; k < w1; k++) frame[k] = 0;

        kiss_fftr(j->cfg[task], frame, spec);
        for (int k = 0; k < n_bins; k++) power[k] = spec[k].r * spec[k].r + spec[k].i * spec[k].i;

        float *row = j->feat + t * (size_t)n_mels;
        for (int m = 0; m < n_mels; m++) {
            const float *fb = f->fb + (size_t)m * n_bins;
            float acc = 0;
            for (int k = f->fb_range[2 * m]; k < f->fb_range[2 * m + 1]; k++)
                acc += fb[k] * power[k];
            row[m] = logf(acc + LOG_GUARD);
        }
    }
}

static void run(hv_pool *pool, int n_tasks, hv_task_fn fn, void *arg) {
    if (pool) {
        hv_pool_run(pool, n_tasks, fn, arg);
        return;
    }
    for (int t = 0; t < n_tasks; t++) fn(arg, t, n_tasks);
}

/* Step 6: per-feature mean and unbiased std over the T valid frames, in
 * double, in a fixed order. */
static void normalise(float *feat, size_t T, int n_mels, double *mean, double *sd) {
    for (int m = 0; m < n_mels; m++) mean[m] = sd[m] = 0;
    for (size_t t = 0; t < T; t++)
        for (int m = 0; m < n_mels; m++) mean[m] += feat[t * n_mels + m];
    for (int m = 0; m < n_mels; m++) mean[m] /= (double)T;
    for (size_t t = 0; t < T; t++)
        for (int m = 0; m < n_mels; m++) {
            double d = feat[t * n_mels + m] - mean[m];
            sd[m] += d * d;
        }
    for (int m = 0; m < n_mels; m++) sd[m] = sqrt(sd[m] / (double)(T - 1)) + STD_GUARD;
    for (size_t t = 0; t < T; t++)
        for (int m = 0; m < n_mels; m++) {
            float *v = &feat[t * n_mels + m];
            *v = (float)((*v - mean[m]) / sd[m]);
        }
}

size_t hv_frontend_frames(const hv_frontend *f, size_t n) {
    size_t pad = (size_t)f->pad_to;
    return (n / (size_t)f->hop + 1 + pad - 1) / pad * pad;
}

hv_status hv_frontend_compute(const hv_frontend *f, const float *samples, size_t n, float dither,
                              uint64_t seed, hv_pool *pool, float **feat, int *n_frames,
                              int *n_valid, float **logmel, hv_error *e) {
    if (!feat || !n_frames || !n_valid)
        return hv_err(e, HV_ERR_INVALID_ARG, "frontend: NULL output");
    *feat = NULL;
    if (logmel) *logmel = NULL;
    *n_frames = *n_valid = 0;
    if (!isfinite(dither)) return hv_err(e, HV_ERR_INVALID_ARG, "frontend: dither is not finite");
    if (!samples && n) return hv_err(e, HV_ERR_INVALID_ARG, "frontend: NULL samples");
    size_t T = n / (size_t)f->hop;
    if (T < 2)
        return hv_err(e, HV_ERR_INVALID_ARG,
                      "audio too short: %zu samples give %zu feature frames, "
                      "at least 2 needed",
                      n, T);
    /* The STFT gives T + 1 frames, padded up to a multiple of pad_to; the
     * feature matrix must be indexable with int rows and size_t bytes. */
    size_t limit = (size_t)INT_MAX / (size_t)f->n_mels - (size_t)f->pad_to - 1;
    if (T > limit) return hv_err(e, HV_ERR_LIMIT, "frontend: %zu samples is too long", n);
    size_t total = hv_frontend_frames(f, n);
    /* One NaN would spread through its frames' FFTs and then, through the
     * mean, over a whole feature: refuse it here. */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(samples[i]))
            return hv_err(e, HV_ERR_INVALID_ARG, "frontend: sample %zu is %s", i,
                          isnan(samples[i]) ? "NaN" : "infinite");

    int n_tasks = pool ? hv_pool_size(pool) : 1;
    if (n_tasks < 1) n_tasks = 1;
    if ((size_t)n_tasks > T) n_tasks = (int)T;

    hv_status rc = HV_OK;
    job j;
    memset(&j, 0, sizeof j);
    j.f = f;
    j.x = samples;
    j.n = n;
    j.dither = dither > 0 ? dither : 0;
    j.n_valid = T;
    j.y = malloc(n * sizeof *j.y);
    j.feat = calloc(total * (size_t)f->n_mels, sizeof *j.feat);
    j.cfg = calloc((size_t)n_tasks, sizeof *j.cfg);
    j.frame = malloc((size_t)n_tasks * f->n_fft * sizeof *j.frame);
    j.spec = malloc((size_t)n_tasks * f->n_bins * sizeof *j.spec);
    j.power = malloc((size_t)n_tasks * f->n_bins * sizeof *j.power);
    double *stats = malloc(2 * (size_t)f->n_mels * sizeof *stats);
    if (j.dither > 0) j.noise = malloc(n * sizeof *j.noise);
    if (!j.y || !j.feat || !j.cfg || !j.frame || !j.spec || !j.power || !stats ||
        (j.dither > 0 && !j.noise)) {
        rc = hv_err(e, HV_ERR_NOMEM, "frontend: out of memory");
        goto done;
    }
    if (j.noise) hv_torch_randn(seed, j.noise, n); /* step 1's noise, one stream */
    for (int t = 0; t < n_tasks; t++) {
        j.cfg[t] = kiss_fftr_alloc(f->n_fft, 0, NULL, NULL);
        if (!j.cfg[t]) {
            rc = hv_err(e, HV_ERR_NOMEM, "frontend: out of memory (FFT)");
            goto done;
        }
    }

    run(pool, n_tasks, prep_task, &j);  /* steps 1-2 */
    run(pool, n_tasks, frame_task, &j); /* steps 3-5 */
    if (logmel) {
        if (!(*logmel = malloc(T * (size_t)f->n_mels * sizeof **logmel))) {
            rc = hv_err(e, HV_ERR_NOMEM, "frontend: out of memory");
            goto done;
        }
        memcpy(*logmel, j.feat, T * (size_t)f->n_mels * sizeof **logmel);
    }
    normalise(j.feat, T, f->n_mels, stats, stats + f->n_mels); /* step 6 */
    /* Step 7: rows T .. total-1 stay zero from calloc. */

    *feat = j.feat;
    j.feat = NULL;
    *n_frames = (int)total;
    *n_valid = (int)T;
done:
    if (j.cfg)
        for (int t = 0; t < n_tasks; t++) kiss_fftr_free(j.cfg[t]);
    free(j.cfg);
    free(j.y);
    free(j.noise);
    free(j.feat);
    free(j.frame);
    free(j.spec);
    free(j.power);
    free(stats);
    return rc;
}
