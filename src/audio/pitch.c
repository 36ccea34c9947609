/* Pitch per frame by autocorrelation (pitch.h). */
#include "audio/pitch.h"

#include <math.h>
#include <soxr.h>
#include <stdlib.h>

#define TWO_PI 6.283185307179586476925
#define LAG_LO ((HV_PITCH_RATE - 1) / HV_PITCH_MAX_HZ) /* one under the shortest lag */
#define LAG_HI (HV_PITCH_RATE / HV_PITCH_MIN_HZ + 1)   /* one over the longest */
#define N_LAGS (LAG_HI - LAG_LO + 1)

/* Hann of HV_PITCH_FRAME points without its zero ends, and the inverse of
 * its autocorrelation over lags, normalised to 1 at lag 0 */
static void window(float *w, double *irw) {
    double rw[HV_PITCH_FRAME];
    for (int i = 0; i < HV_PITCH_FRAME; i++)
        w[i] = (float)(0.5 - 0.5 * cos(TWO_PI * (i + 1) / (HV_PITCH_FRAME + 1)));
    for (int k = 0; k < HV_PITCH_FRAME; k++) {
        double s = 0;
        for (int i = 0; i + k < HV_PITCH_FRAME; i++) s += (double)w[i] * w[i + k];
        rw[k] = s;
    }
    for (int k = 0; k < HV_PITCH_FRAME; k++) irw[k] = rw[0] / rw[k];
}

/* What every frame's task reads: the resampled audio and the window */
typedef struct pitch_job {
    const float *y; /* the samples at HV_PITCH_RATE */
    size_t m;
    double ratio; /* HV_PITCH_RATE / the audio's rate */
    int hop, n_frames;
    float w[HV_PITCH_FRAME];
    double irw[HV_PITCH_FRAME];
    float *f0;
} pitch_job;

/* The pitch of frame t, or 0 */
static float frame_pitch(const pitch_job *j, int t) {
    /* the frame, zero past its end so that every lag runs over all of it */
    float frame[HV_PITCH_FRAME + LAG_HI] = {0}, r[N_LAGS] = {0}, r0 = 0;
    long c = lround((double)t * j->hop * j->ratio) - HV_PITCH_FRAME / 2;
    for (int i = 0; i < HV_PITCH_FRAME; i++) {
        long at = c + i;
        frame[i] = at >= 0 && (size_t)at < j->m ? j->y[at] * j->w[i] : 0;
        r0 += frame[i] * frame[i];
    }
    if (!(r0 > 0)) return 0;
    /* the autocorrelation at the lags looked at only, summed directly: a
     * lag per lane (the inner loop vectorises), under half of what a
     * 256-point FFT pair costs */
    for (int i = 0; i < HV_PITCH_FRAME; i++) {
        float xi = frame[i];
        const float *x = frame + i + LAG_LO;
        for (int l = 0; l < N_LAGS; l++) r[l] += xi * x[l];
    }
    /* the highest peak of the normalised autocorrelation over the lags,
     * each a parabola through a local maximum and its neighbours (a period
     * between two lags), shorter lags favoured by HV_PITCH_OCTAVE_COST an
     * octave: a periodic sound peaks at every multiple of its period */
    double best = -INFINITY, peak = 0, d = 0, v[LAG_HI + 1], inv = 1.0 / r0;
    int k = 0;
    for (int l = LAG_LO; l <= LAG_HI; l++) v[l] = r[l - LAG_LO] * inv * j->irw[l];
    for (int l = LAG_LO + 1; l < LAG_HI; l++) {
        double a = v[l - 1], b = v[l], cc = v[l + 1];
        if (b < a || b < cc) continue;
        double den = a - 2 * b + cc, dl = den < 0 ? 0.5 * (a - cc) / den : 0;
        double top = b - 0.25 * (a - cc) * dl;
        double score =
            top - HV_PITCH_OCTAVE_COST * log2((l + dl) * HV_PITCH_MIN_HZ / HV_PITCH_RATE);
        if (score > best) best = score, peak = top, d = dl, k = l;
    }
    return k && peak >= HV_PITCH_VOICED ? (float)(HV_PITCH_RATE / (k + d)) : 0;
}

static void pitch_task(void *arg, int task, int n_tasks) {
    pitch_job *j = arg;
    int t0 = (int)((long)j->n_frames * task / n_tasks);
    int t1 = (int)((long)j->n_frames * (task + 1) / n_tasks);
    for (int t = t0; t < t1; t++) j->f0[t] = frame_pitch(j, t);
}

hv_status hv_pitch_track(const float *samples, size_t n, int sample_rate, int hop, int n_frames,
                         hv_pool *pool, float *f0, hv_error *e) {
    if (sample_rate <= 0 || hop <= 0)
        return hv_err(e, HV_ERR_INVALID_ARG, "pitch: sample rate %d, hop %d", sample_rate, hop);
    if (n_frames <= 0) return HV_OK;
    pitch_job j = {
        .ratio = (double)HV_PITCH_RATE / sample_rate, .hop = hop, .n_frames = n_frames, .f0 = f0};
    size_t cap = (size_t)ceil((double)n * j.ratio) + 1;
    float *y = malloc(cap * sizeof *y);
    if (!y) return hv_err(e, HV_ERR_NOMEM, "out of memory for a pitch track");
    if (n > 0) {
        /* soxr's medium quality: a pass band to 1.8 kHz, delay compensated */
        soxr_quality_spec_t q = soxr_quality_spec(SOXR_MQ, 0);
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_error_t err = soxr_oneshot(sample_rate, HV_PITCH_RATE, 1, samples, n, NULL, y, cap,
                                        &j.m, &io, &q, NULL);
        if (err) {
            free(y);
            return hv_err(e, HV_ERR_NOMEM, "pitch: resampling failed: %s", err);
        }
    }
    j.y = y;
    window(j.w, j.irw);
    /* frames are independent: the same track on any number of threads */
    hv_pool_run(pool, pool ? hv_pool_size(pool) : 1, pitch_task, &j);
    free(y);
    return HV_OK;
}
