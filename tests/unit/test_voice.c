/* Voice signatures (src/timing/voice.c) on made log-mels: the statistics
 * and the pitch histogram of a known vector, the speech frames chosen by
 * the median, the level of the recording out, turn frames under a second
 * giving none. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "timing/voice.h"

#define M   4
#define FS  0.01 /* seconds a frame */
#define DIM (2 * M + HV_VOICE_PITCH_BINS)

static const float A[M] = {1, 2, 3, 4}, B[M] = {4, 3, 2, 1}, QUIET = -10;

/* frames [t0, t1) of lm: A and B by turns (speech), or QUIET, plus lift */
static void fill(float *lm, int t0, int t1, int speech, float lift) {
    for (int t = t0; t < t1; t++)
        for (int m = 0; m < M; m++) lm[t * M + m] = (speech ? (t % 2 ? B[m] : A[m]) : QUIET) + lift;
}

static double dist(const double *a, const double *b) {
    double d = 0;
    for (int i = 0; i < DIM; i++) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

int main(void) {
    enum { T = 400 };
    float lm[T * M];
    double sig[DIM], sig2[DIM], secs;
    int has;
    hv_error e = {0};
    /* a turn of 1 s: 60 frames of speech, 40 of pause; outside it other
     * sounds. Speech: mean per bin 2.5 (less their mean: 0), population
     * std |A - B| / 2 = 1.5 .5 .5 1.5; less the average .5, over sqrt(3) */
    fill(lm, 0, T, 1, 7);
    fill(lm, 100, 160, 1, 0);
    fill(lm, 160, 200, 0, 0);
    for (int m = 0; m < M; m++) lm[250 * M + m] = 100; /* outside */
    hv_voice_span turn = {1.0, 2.0};
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &turn, 1, sig, &secs, &has, &e) == HV_OK);
    const double want[2 * M] = {-.5, -.5, -.5, -.5, 1, 0, 0, 1};
    double err = 0;
    for (int i = 0; i < 2 * M; i++) err = fmax(err, fabs(sig[i] - want[i] / sqrt(3)));
    CHECK_MSG(has && fabs(secs - 1.0) < 1e-9 && err < 1e-12, "has %d secs %g err %g", has, secs,
              err);
    /* the pitch: every other speech frame voiced at 120 Hz (12 semitones
     * over HV_PITCH_MIN_HZ), the pause's and the other sounds' pitches not
     * counted: bins 8..16 get exp(-(b - 12)^2 / 2) each, scaled to
     * HV_VOICE_PITCH_WEIGHT; the whole over its norm */
    float f0[T];
    for (int t = 0; t < T; t++) f0[t] = t >= 100 && t < 160 ? (t % 2 ? 0 : 120) : 300;
    CHECK(hv_voice_signature(lm, f0, T, M, FS, &turn, 1, sig2, &secs, &has, &e) == HV_OK);
    double h[HV_VOICE_PITCH_BINS] = {0}, hn = 0;
    for (int b = 8; b <= 16; b++) h[b] = exp(-0.5 * (b - 12) * (b - 12)), hn += h[b] * h[b];
    double whole = sqrt(1 + HV_VOICE_PITCH_WEIGHT * HV_VOICE_PITCH_WEIGHT);
    err = 0;
    for (int i = 0; i < DIM; i++) {
        double w = i < 2 * M ? want[i] / sqrt(3) : HV_VOICE_PITCH_WEIGHT * h[i - 2 * M] / sqrt(hn);
        err = fmax(err, fabs(sig2[i] - w / whole));
    }
    CHECK_MSG(has && err < 1e-12, "pitch: err %g", err);
    /* no voiced frame: the vector without a pitch */
    for (int t = 100; t < 160; t++) f0[t] = 0;
    CHECK(hv_voice_signature(lm, f0, T, M, FS, &turn, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(has && dist(sig, sig2) == 0, "unvoiced: %g", dist(sig, sig2));
    /* the pause's frames are below the median: 60 frames of speech alone
     * in 1.2 s give the same vector */
    fill(lm, 160, 200, 1, 0);
    fill(lm, 200, 220, 1, 0);
    hv_voice_span speech = {1.0, 2.2};
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &speech, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(has && dist(sig, sig2) < 1e-12, "speech only: %g", dist(sig, sig2));
    /* the recording's level is no part of it: every frame 5 louder */
    for (int i = 0; i < T * M; i++) lm[i] += 5;
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &speech, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(has && dist(sig, sig2) < 1e-12, "louder: %g", dist(sig, sig2));
    /* another spectrum is another vector */
    fill(lm, 0, T, 1, 0);
    for (int t = 0; t < T; t++) lm[t * M + 3] = lm[t * M] = (float)(t % 3);
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &speech, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK(has && dist(sig, sig2) > 0.1);
    /* under a second of turn frames: none; overlapping turns count once;
     * several turns add up; turns past the window are cut */
    hv_voice_span two[2] = {{0.0, 0.6}, {0.3, 0.99}};
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, two, 2, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(!has && fabs(secs - 0.99) < 1e-9, "0.99 s: has %d secs %g", has, secs);
    two[1] = (hv_voice_span){1.0, 1.4};
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, two, 2, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(has && fabs(secs - 1.0) < 1e-9, "1 s in two turns: has %d secs %g", has, secs);
    hv_voice_span past = {3.5, 9.0};
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &past, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK_MSG(!has && fabs(secs - 0.5) < 1e-9, "past the end: has %d secs %g", has, secs);
    /* a flat log-mel has no direction: none */
    for (int i = 0; i < T * M; i++) lm[i] = 3;
    CHECK(hv_voice_signature(lm, NULL, T, M, FS, &speech, 1, sig2, &secs, &has, &e) == HV_OK);
    CHECK(!has);
    TEST_END();
}
