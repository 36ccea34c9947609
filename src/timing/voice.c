/* Voice signatures from the raw log-mel (voice.h). */
#include "timing/voice.h"

#include "audio/pitch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The k-th smallest of a[n] (0-based), a reordered: Hoare's selection,
 * linear on average where a sort of every turn's frames cost a fifth of a
 * signature */
static double select_kth(double *a, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = a[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) {
                double t = a[i];
                a[i++] = a[j], a[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return a[k];
}

/* The median of a[n], n > 0, a reordered */
static double median_of(double *a, int n) {
    double upper = select_kth(a, n, n / 2);
    if (n % 2) return upper;
    double lower = a[0]; /* the largest of the half below */
    for (int i = 1; i < n / 2; i++)
        if (a[i] > lower) lower = a[i];
    return (lower + upper) / 2;
}

/* The mean of x[n]: eight running sums, which the compiler keeps in
 * vector registers, where one sum waits on each addition */
static double mean_of(const float *x, int n) {
    double acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += x[i + j];
    for (; i < n; i++) acc[i % 8] += x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3]) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) / n;
}

/* The pitch histogram of the used frames (used[t] for t in [lo, hi)) into
 * h[HV_VOICE_PITCH_BINS], scaled to HV_VOICE_PITCH_WEIGHT (voice.h); all 0
 * without a voiced one */
static void pitch_part(const float *f0, const unsigned char *used, int lo, int hi, double *h) {
    double norm = 0;
    memset(h, 0, HV_VOICE_PITCH_BINS * sizeof *h);
    for (int t = lo; f0 && t < hi; t++) {
        if (!used[t] || !(f0[t] > 0)) continue;
        double s = 12 * log2(f0[t] / HV_PITCH_MIN_HZ);
        int b0 = (int)ceil(s - HV_VOICE_PITCH_SPREAD), b1 = (int)floor(s + HV_VOICE_PITCH_SPREAD);
        for (int b = b0 < 0 ? 0 : b0; b <= b1 && b < HV_VOICE_PITCH_BINS; b++)
            h[b] += exp(-0.5 * (s - b) * (s - b));
    }
    for (int b = 0; b < HV_VOICE_PITCH_BINS; b++) norm += h[b] * h[b];
    if (!(norm > 0)) return;
    norm = sqrt(norm) / HV_VOICE_PITCH_WEIGHT;
    for (int b = 0; b < HV_VOICE_PITCH_BINS; b++) h[b] /= norm;
}

hv_status hv_voice_signature(const float *logmel, const float *f0, int n_frames, int n_mels,
                             double frame_s, const hv_voice_span *spans, int n_spans, double *sig,
                             double *seconds, int *has, hv_error *e) {
    *has = 0;
    *seconds = 0;
    if (n_frames <= 0 || n_mels <= 0 || !(frame_s > 0)) return HV_OK;
    unsigned char *in = calloc((size_t)n_frames, 1);
    double *level = malloc((size_t)n_frames * 2 * sizeof *level);
    if (!in || !level) {
        free(in);
        free(level);
        return hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    }
    /* the spans' frames, each once, all within [lo, hi): a turn's
     * signature walks its turn, not the window */
    int n = 0, lo = n_frames, hi = 0;
    for (int i = 0; i < n_spans; i++) {
        double a = floor(spans[i].start / frame_s), b = floor(spans[i].end / frame_s);
        int t0 = a < 0 ? 0 : a > n_frames ? n_frames : (int)a;
        int t1 = b < 0 ? 0 : b > n_frames ? n_frames : (int)b;
        for (int t = t0; t < t1; t++) n += !in[t], in[t] = 1;
        if (t0 < t1) lo = t0 < lo ? t0 : lo, hi = t1 > hi ? t1 : hi;
    }
    *seconds = n * frame_s;
    /* a second's frames counted as frames, not as a sum of frame_s */
    if (n == 0 || n < (int)ceil(HV_VOICE_MIN_S / frame_s - 1e-9)) goto done;
    double *pick = level + n_frames; /* the levels, reordered by median_of */
    int k = 0;
    for (int t = lo; t < hi; t++) {
        if (!in[t]) continue;
        level[t] = mean_of(logmel + (size_t)t * n_mels, n_mels);
        pick[k++] = level[t];
    }
    double median = median_of(pick, n);
    /* in[] becomes the frames used: those at or above the median level
     * (the speaker's speech, not its pauses) */
    for (int t = lo; t < hi; t++) in[t] = in[t] && !(level[t] < median);
    int dim = 2 * n_mels, used = 0; /* the spectral part's */
    double *mean = sig, *sd = sig + n_mels;
    memset(sig, 0, (size_t)hv_voice_dim(n_mels) * sizeof *sig);
    for (int t = lo; t < hi; t++) {
        if (!in[t]) continue;
        used++;
        for (int m = 0; m < n_mels; m++) mean[m] += logmel[(size_t)t * n_mels + m];
    }
    for (int m = 0; m < n_mels; m++) mean[m] /= used;
    for (int t = lo; t < hi; t++) {
        if (!in[t]) continue;
        for (int m = 0; m < n_mels; m++) {
            double d = logmel[(size_t)t * n_mels + m] - mean[m];
            sd[m] += d * d;
        }
    }
    double avg = 0;
    for (int m = 0; m < n_mels; m++) sd[m] = sqrt(sd[m] / used), avg += mean[m];
    avg /= n_mels;
    for (int m = 0; m < n_mels; m++) mean[m] -= avg;
    double all = 0, norm = 0;
    for (int i = 0; i < dim; i++) all += sig[i];
    all /= dim;
    for (int i = 0; i < dim; i++) sig[i] -= all, norm += sig[i] * sig[i];
    norm = sqrt(norm);
    if (norm > 0) {
        double *h = sig + dim, whole = 0;
        pitch_part(f0, in, lo, hi, h);
        for (int i = 0; i < dim; i++) sig[i] /= norm, whole += sig[i] * sig[i];
        for (int b = 0; b < HV_VOICE_PITCH_BINS; b++) whole += h[b] * h[b];
        whole = sqrt(whole);
        for (int i = 0; i < dim + HV_VOICE_PITCH_BINS; i++) sig[i] /= whole;
        *has = 1;
    }
done:
    free(in);
    free(level);
    return HV_OK;
}
