/* Region edges from the signal (docs/VAD.md, "Edges"): after a long
 * stretch of silence Silero's recurrent state is slow to call speech again
 * (probabilities of 0.03-0.4 over the first second of an utterance), so
 * its region can start a second after the speech does. Each edge is moved
 * outward, over the frames whose short-time energy stands out of the
 * pause's floor, as far as such frames go on without a longer quiet
 * stretch than a pause between words, bounded. */
#include <math.h>
#include <stdlib.h>

#include "audio/vad.h"

/* 10 ms frames: mean square in dB (-120 for digital silence). */
static float frame_db(const float *x, size_t n, size_t k, size_t frame) {
    size_t a = k * frame, b = a + frame < n ? a + frame : n;
    double ss = 0;
    for (size_t i = a; i < b; i++) ss += (double)x[i] * x[i];
    return (float)(10 * log10(ss / (double)frame + 1e-12));
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of db[a, b) (b > a), through tmp. */
static float quantile(const float *db, size_t a, size_t b, double q, float *tmp) {
    size_t m = b - a;
    for (size_t i = 0; i < m; i++) tmp[i] = db[a + i];
    qsort(tmp, m, sizeof *tmp, cmp_float);
    return tmp[(size_t)(q * (double)(m - 1))];
}

/* The level a frame must exceed to count as signal next to a region
 * whose loud frames are at `loud` dB, between pauses of frames [a0, b0)
 * and [a1, b1): the median of the HV_VAD_EDGE_FLOOR_S of each pause
 * nearest the region (both together, so that a late start's speech in one
 * of them does not raise the floor much) plus the margin. */
static float edge_threshold(const float *db, size_t a0, size_t b0, size_t a1, size_t b1,
                            size_t floor_frames, float loud, float *tmp) {
    if (b0 - a0 > floor_frames) a0 = b0 - floor_frames;
    if (b1 - a1 > floor_frames) b1 = a1 + floor_frames;
    size_t m = 0;
    for (size_t k = a0; k < b0; k++) tmp[m++] = db[k];
    for (size_t k = a1; k < b1; k++) tmp[m++] = db[k];
    float floor = -120.0f;
    if (m) {
        qsort(tmp, m, sizeof *tmp, cmp_float);
        floor = tmp[m / 2];
    }
    return fmaxf(floor + HV_VAD_EDGE_MARGIN_DB, loud - HV_VAD_EDGE_RANGE_DB);
}

hv_status hv_vad_signal_edges(const float *x, size_t n, int sample_rate, hv_speech_region *r,
                              size_t n_r, hv_error *e) {
    if (n_r == 0) return HV_OK;
    size_t frame = (size_t)sample_rate / 100, n_f = (n + frame - 1) / frame;
    size_t floor_frames = (size_t)(HV_VAD_EDGE_FLOOR_S * 100);
    size_t max_frames = (size_t)(HV_VAD_EDGE_MAX_S * 100),
           hang = (size_t)(HV_VAD_EDGE_HANG_S * 100);
    float *db = malloc((n_f ? n_f : 1) * sizeof *db);
    float *tmp = malloc((n_f + 2 * floor_frames + 1) * sizeof *tmp);
    size_t *start = malloc(2 * n_r * sizeof *start), *end = start ? start + n_r : NULL;
    if (!db || !tmp || !start) {
        free(db);
        free(tmp);
        free(start);
        return hv_err(e, HV_ERR_NOMEM, "speech region edges: out of memory");
    }
    for (size_t k = 0; k < n_f; k++) db[k] = frame_db(x, n, k, frame);
    for (size_t i = 0; i < n_r; i++) {
        /* the region in whole frames, its pauses up to the neighbours */
        size_t s = (size_t)r[i].start_sample / frame;
        size_t t = ((size_t)r[i].end_sample + frame - 1) / frame;
        if (t > n_f) t = n_f;
        size_t lo = i ? ((size_t)r[i - 1].end_sample + frame - 1) / frame : 0;
        size_t hi = i + 1 < n_r ? (size_t)r[i + 1].start_sample / frame : n_f;
        if (lo > s) lo = s;
        if (hi < t) hi = t;
        start[i] = (size_t)r[i].start_sample;
        end[i] = (size_t)r[i].end_sample;
        if (t <= s) continue;
        float loud = quantile(db, s, t, 0.9, tmp);
        float thr = edge_threshold(db, lo, s, t, hi, floor_frames, loud, tmp);
        /* back from the start */
        size_t edge = s, quiet = 0;
        for (size_t k = s; k > lo && s - (k - 1) <= max_frames && quiet <= hang; k--) {
            if (db[k - 1] > thr) {
                edge = k - 1;
                quiet = 0;
            } else {
                quiet++;
            }
        }
        if (edge < s) start[i] = edge * frame;
        /* forward from the end */
        edge = t;
        quiet = 0;
        for (size_t k = t; k < hi && k + 1 - t <= max_frames && quiet <= hang; k++) {
            if (db[k] > thr) {
                edge = k + 1;
                quiet = 0;
            } else {
                quiet++;
            }
        }
        if (edge > t) end[i] = edge * frame < n ? edge * frame : n;
    }
    /* two regions that grew into each other meet halfway */
    for (size_t i = 0; i + 1 < n_r; i++)
        if (end[i] > start[i + 1]) {
            size_t mid = (size_t)((r[i].end_sample + r[i + 1].start_sample) / 2);
            end[i] = start[i + 1] = mid;
        }
    for (size_t i = 0; i < n_r; i++) {
        r[i].start_sample = (int64_t)start[i];
        r[i].end_sample = (int64_t)end[i];
        r[i].start = (double)start[i] / sample_rate;
        r[i].end = (double)end[i] / sample_rate;
    }
    free(db);
    free(tmp);
    free(start);
    return HV_OK;
}
