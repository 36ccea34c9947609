/* The pitch track (src/audio/pitch.c) on made sounds: harmonic tones over
 * the range found within a percent, noise and silence unvoiced, the frames
 * placed on their centres, the same track on any number of threads, bad
 * arguments refused. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audio/pitch.h"
#include "testlib.h"

#define TWO_PI 6.283185307179586476925

/* n samples at rate of a tone at f Hz with ten harmonics falling 3 dB each,
 * from sample `from` on (zero before) */
static void tone(float *x, size_t n, int rate, double f, size_t from) {
    for (size_t i = 0; i < n; i++) {
        double s = 0;
        for (int h = 1; h <= 10; h++)
            s += pow(0.7, h - 1) * sin(TWO_PI * f * h * (double)(i - from) / rate + h);
        x[i] = i < from ? 0 : (float)(0.2 * s);
    }
}

/* how many of frames [t0, t1) are within pct percent of f */
static int near(const float *f0, int t0, int t1, double f, double pct) {
    int k = 0;
    for (int t = t0; t < t1; t++) k += fabs(f0[t] - f) <= f * pct / 100;
    return k;
}

int main(void) {
    enum { RATE = 16000, HOP = 160, N = RATE, T = N / HOP };
    float *x = malloc(N * sizeof *x), f0[T];
    hv_error e = {0};
    CHECK(x != NULL);
    if (!x) TEST_END();
    /* tones across the range: every inner frame within 1 % */
    const double fs[] = {75, 110, 150, 230, 330};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) {
        tone(x, N, RATE, fs[i], 0);
        CHECK(hv_pitch_track(x, N, RATE, HOP, T, NULL, f0, &e) == HV_OK);
        int k = near(f0, 5, T - 5, fs[i], 1);
        CHECK_MSG(k == T - 10, "%.0f Hz: %d of %d frames within 1 %% (frame 50: %.2f)", fs[i], k,
                  T - 10, f0[50]);
    }
    /* frames are centred at t * hop: a tone from 0.5 s on leaves the
     * frames up to 0.45 s silent (0; the resampler's filter rings 30 ms
     * ahead) and those from 0.53 s on voiced */
    tone(x, N, RATE, 150, N / 2);
    CHECK(hv_pitch_track(x, N, RATE, HOP, T, NULL, f0, &e) == HV_OK);
    int first = 0;
    while (first < T && f0[first] == 0) first++;
    CHECK_MSG(first > 45 && first <= 53 && near(f0, 53, T - 5, 150, 1) == T - 58,
              "onset: first voiced frame %d, frame 53 %.1f", first, f0[53]);
    /* another rate and hop: 8 kHz, 10 ms */
    tone(x, N / 2, RATE / 2, 200, 0);
    CHECK(hv_pitch_track(x, N / 2, RATE / 2, HOP / 2, T, NULL, f0, &e) == HV_OK);
    CHECK_MSG(near(f0, 5, T - 5, 200, 1) == T - 10, "8 kHz: frame 50 %.2f", f0[50]);
    /* white noise: unvoiced nearly everywhere */
    uint32_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)((r >> 8) / 16777216.0 - 0.5);
    }
    CHECK(hv_pitch_track(x, N, RATE, HOP, T, NULL, f0, &e) == HV_OK);
    int voiced = T - near(f0, 0, T, 0, 0);
    CHECK_MSG(voiced <= T / 20, "noise: %d of %d frames voiced", voiced, T);
    /* threads: the same track, frame for frame, on one, two or three (a
     * tone from 0.5 s over the noise: voiced and unvoiced frames) */
    float *half = malloc(N * sizeof *half), g[T];
    CHECK(half != NULL);
    if (half) {
        tone(half, N, RATE, 180, N / 2);
        for (int i = 0; i < N; i++) x[i] = 0.1f * x[i] + half[i];
        CHECK(hv_pitch_track(x, N, RATE, HOP, T, NULL, f0, &e) == HV_OK);
        CHECK(near(f0, 55, T - 5, 180, 1) == T - 60);
        for (int threads = 1; threads <= 3; threads++) {
            hv_pool *pool = hv_pool_new(threads);
            CHECK(pool != NULL);
            if (!pool) continue;
            memset(g, 0xff, sizeof g);
            CHECK(hv_pitch_track(x, N, RATE, HOP, T, pool, g, &e) == HV_OK);
            CHECK_MSG(memcmp(f0, g, sizeof g) == 0, "%d threads: a different track", threads);
            hv_pool_free(pool);
        }
        free(half);
    }
    /* silence, no samples, frames past the end: 0 */
    for (int i = 0; i < N; i++) x[i] = 0;
    CHECK(hv_pitch_track(x, N, RATE, HOP, T, NULL, f0, &e) == HV_OK);
    CHECK(near(f0, 0, T, 0, 0) == T);
    f0[3] = 1;
    CHECK(hv_pitch_track(x, 0, RATE, HOP, T, NULL, f0, &e) == HV_OK);
    CHECK(near(f0, 0, T, 0, 0) == T);
    tone(x, N, RATE, 150, 0);
    CHECK(hv_pitch_track(x, N / 2, RATE, HOP, T, NULL, f0, &e) == HV_OK);
    CHECK_MSG(near(f0, 5, 45, 150, 1) == 40 && near(f0, 55, T, 0, 0) == T - 55,
              "past the end: frame 60 %.1f", f0[60]);
    /* nothing to do, and bad arguments */
    CHECK(hv_pitch_track(x, N, RATE, HOP, 0, NULL, f0, &e) == HV_OK);
    CHECK(hv_pitch_track(x, N, 0, HOP, T, NULL, f0, &e) == HV_ERR_INVALID_ARG);
    CHECK(hv_pitch_track(x, N, RATE, 0, T, NULL, f0, &e) == HV_ERR_INVALID_ARG);
    free(x);
    TEST_END();
}
