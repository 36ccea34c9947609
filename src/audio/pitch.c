/* Pitch per frame by autocorrelation (pitch.h). */
#include "audio/pitch.h"

#include <kiss_fftr.h>
#include <math.h>
#include <soxr.h>
#include <stdlib.h>
#include <string.h>

#define NFFT   256 /* >= HV_PITCH_FRAME + the longest lag: no wrap-around */
#define TWO_PI 6.283185307179586476925

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

hv_status hv_pitch_track(const float *samples, size_t n, int sample_rate, int hop, int n_frames,
                         float *f0, hv_error *e) {
    if (sample_rate <= 0 || hop <= 0)
        return hv_err(e, HV_ERR_INVALID_ARG, "pitch: sample rate %d, hop %d", sample_rate, hop);
    if (n_frames <= 0) return HV_OK;
    memset(f0, 0, (size_t)n_frames * sizeof *f0);
    double ratio = (double)HV_PITCH_RATE / sample_rate;
    size_t cap = (size_t)ceil((double)n * ratio) + 1, m = 0;
    float *y = malloc(cap * sizeof *y); /* the samples at HV_PITCH_RATE */
    double irw[HV_PITCH_FRAME];
    float w[HV_PITCH_FRAME], frame[NFFT], r[NFFT];
    kiss_fft_cpx spec[NFFT / 2 + 1];
    kiss_fftr_cfg fwd = kiss_fftr_alloc(NFFT, 0, NULL, NULL);
    kiss_fftr_cfg inv = kiss_fftr_alloc(NFFT, 1, NULL, NULL);
    hv_status st = HV_OK;
    if (!y || !fwd || !inv) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for a pitch track");
        goto done;
    }
    if (n > 0) {
        /* soxr's medium quality: a pass band to 1.8 kHz, delay compensated */
        soxr_quality_spec_t q = soxr_quality_spec(SOXR_MQ, 0);
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_error_t err = soxr_oneshot(sample_rate, HV_PITCH_RATE, 1, samples, n, NULL, y, cap, &m,
                                        &io, &q, NULL);
        if (err) {
            st = hv_err(e, HV_ERR_NOMEM, "pitch: resampling failed: %s", err);
            goto done;
        }
    }
    window(w, irw);
    int lag0 = (int)ceil(HV_PITCH_RATE / HV_PITCH_MAX_HZ);
    int lag1 = (int)floor(HV_PITCH_RATE / HV_PITCH_MIN_HZ);
    for (int t = 0; t < n_frames; t++) {
        long c = lround((double)t * hop * ratio) - HV_PITCH_FRAME / 2;
        int any = 0;
        for (int i = 0; i < NFFT; i++) {
            long j = c + i;
            frame[i] = i < HV_PITCH_FRAME && j >= 0 && (size_t)j < m ? y[j] * w[i] : 0;
            any |= frame[i] != 0;
        }
        if (!any) continue;
        kiss_fftr(fwd, frame, spec);
        for (int k = 0; k <= NFFT / 2; k++) {
            spec[k].r = spec[k].r * spec[k].r + spec[k].i * spec[k].i;
            spec[k].i = 0;
        }
        kiss_fftri(inv, spec, r);
        if (!(r[0] > 0)) continue;
        /* the highest peak of the normalised autocorrelation over the lags,
         * each a parabola through a local maximum and its neighbours (a
         * period between two lags), shorter lags favoured by
         * HV_PITCH_OCTAVE_COST an octave: a periodic sound peaks at every
         * multiple of its period */
        double best = -INFINITY, peak = 0, d = 0, v[HV_PITCH_FRAME], inv = 1.0 / r[0];
        int k = 0;
        for (int l = lag0 - 1; l <= lag1 + 1; l++) v[l] = r[l] * inv * irw[l];
        for (int l = lag0; l <= lag1; l++) {
            double a = v[l - 1], b = v[l], c = v[l + 1];
            if (b < a || b < c) continue;
            double den = a - 2 * b + c, dl = den < 0 ? 0.5 * (a - c) / den : 0;
            double top = b - 0.25 * (a - c) * dl;
            double score =
                top - HV_PITCH_OCTAVE_COST * log2((l + dl) * HV_PITCH_MIN_HZ / HV_PITCH_RATE);
            if (score > best) best = score, peak = top, d = dl, k = l;
        }
        if (!k || !(peak >= HV_PITCH_VOICED)) continue;
        f0[t] = (float)(HV_PITCH_RATE / (k + d));
    }
done:
    free(y);
    kiss_fftr_free(fwd);
    kiss_fftr_free(inv);
    return st;
}
