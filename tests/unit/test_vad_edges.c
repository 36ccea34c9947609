/* Region edges from the signal (hv_vad_signal_edges, docs/VAD.md "Edges")
 * on synthetic signals: a region that starts late (or ends early) on a tone
 * burst after long digital silence or over a noise floor is moved to the
 * burst's onset (end) within a frame, never into the neighbouring region,
 * by at most HV_VAD_EDGE_MAX_S, and not at all over a pause's floor. */
#include <math.h>
#include <stdlib.h>

#include "audio/vad.h"
#include "testlib.h"

#define SR  16000
#define PI  3.14159265358979323846
#define TOL 0.011 /* a 10 ms frame, and rounding */

/* n seconds of noise at `noise` RMS-ish (0: digital silence). */
static float *background(double seconds, float noise, size_t *n) {
    *n = (size_t)(seconds * SR);
    float *x = calloc(*n, sizeof *x);
    if (noise > 0) {
        float *w = hv_test_noise(*n, 7);
        for (size_t i = 0; i < *n; i++) x[i] = noise * w[i];
        free(w);
    }
    return x;
}

/* Adds a 440 Hz tone with a few harmonics over [a, b) seconds. */
static void burst(float *x, size_t n, double a, double b, float amp) {
    for (size_t i = (size_t)(a * SR); i < (size_t)(b * SR) && i < n; i++) {
        double t = (double)i / SR;
        x[i] += amp * (float)(0.6 * sin(2 * PI * 440 * t) + 0.3 * sin(2 * PI * 880 * t) +
                              0.1 * sin(2 * PI * 1320 * t));
    }
}

static hv_speech_region region(double a, double b) {
    hv_speech_region r = {a, b, (int64_t)(a * SR), (int64_t)(b * SR)};
    return r;
}

static void edges(const float *x, size_t n, hv_speech_region *r, size_t nr) {
    hv_error e = {0};
    CHECK_MSG(hv_vad_signal_edges(x, n, SR, r, nr, &e) == HV_OK, "%s", e.msg);
    for (size_t i = 0; i < nr; i++) {
        CHECK(r[i].start_sample < r[i].end_sample && r[i].end_sample <= (int64_t)n);
        CHECK(fabs(r[i].start - (double)r[i].start_sample / SR) < 1e-9);
        if (i) CHECK(r[i].start_sample >= r[i - 1].end_sample);
    }
}

/* A burst from 6.0 to 8.0 s after 6 s of digital silence (then pink-ish
 * noise 40 dB below): the region found late and ending early is moved out
 * to the burst. */
static void test_late_start(void) {
    for (int k = 0; k < 2; k++) {
        size_t n;
        float *x = background(12, k ? 0.003f : 0.0f, &n);
        burst(x, n, 6.0, 8.0, 0.3f);
        hv_speech_region r = region(6.8, 7.5);
        edges(x, n, &r, 1);
        CHECK_MSG(fabs(r.start - 6.0) <= TOL, "%s: start %.3f, want 6.0", k ? "noise" : "silence",
                  r.start);
        CHECK_MSG(fabs(r.end - 8.0) <= TOL, "%s: end %.3f, want 8.0", k ? "noise" : "silence",
                  r.end);
        free(x);
    }
}

/* A region already on the burst does not move into the pause's floor (digital
 * silence, noise, and a quiet hum). */
static void test_no_move(void) {
    for (int k = 0; k < 3; k++) {
        size_t n;
        float *x = background(12, k == 1 ? 0.01f : 0.0f, &n);
        if (k == 2)
            for (size_t i = 0; i < n; i++) x[i] += 0.003f * (float)sin(2 * PI * 50 * i / SR);
        burst(x, n, 6.0, 8.0, 0.3f);
        hv_speech_region r = region(6.0, 8.0);
        edges(x, n, &r, 1);
        CHECK_MSG(fabs(r.start - 6.0) <= TOL && fabs(r.end - 8.0) <= TOL,
                  "kind %d: [%.3f, %.3f), want [6, 8)", k, r.start, r.end);
        free(x);
    }
}

/* 4 s of tone and a region at its end: the start moves back by at most
 * HV_VAD_EDGE_MAX_S. */
static void test_bounded(void) {
    size_t n;
    float *x = background(14, 0.0f, &n);
    burst(x, n, 4.0, 8.0, 0.3f);
    hv_speech_region r = region(7.0, 8.0);
    edges(x, n, &r, 1);
    CHECK_MSG(r.start >= 7.0 - HV_VAD_EDGE_MAX_S - TOL && r.start <= 7.0 - HV_VAD_EDGE_MAX_S + TOL,
              "start %.3f, want %.3f", r.start, 7.0 - HV_VAD_EDGE_MAX_S);
    free(x);
}

/* Two regions on one continuous tone: each grows towards the other but
 * never into it; they meet halfway between their former edges. A region
 * whose neighbour lies right before it stops at the neighbour's end. */
static void test_neighbours(void) {
    size_t n;
    float *x = background(12, 0.0f, &n);
    burst(x, n, 3.0, 9.0, 0.3f);
    hv_speech_region r[2] = {region(3.0, 5.0), region(5.6, 9.0)};
    edges(x, n, r, 2);
    CHECK_MSG(fabs(r[0].end - 5.3) <= TOL && fabs(r[1].start - 5.3) <= TOL,
              "[%.3f, %.3f) [%.3f, %.3f): want to meet at 5.3", r[0].start, r[0].end, r[1].start,
              r[1].end);
    CHECK(fabs(r[0].start - 3.0) <= TOL && fabs(r[1].end - 9.0) <= TOL);
    /* silence between two bursts: neither moves into it */
    float *y = background(12, 0.0f, &n);
    burst(y, n, 2.0, 4.0, 0.3f);
    burst(y, n, 5.0, 8.0, 0.3f);
    hv_speech_region q[2] = {region(2.0, 4.0), region(5.5, 8.0)};
    edges(y, n, q, 2);
    CHECK_MSG(fabs(q[0].end - 4.0) <= TOL && fabs(q[1].start - 5.0) <= TOL,
              "[%.3f, %.3f) [%.3f, %.3f)", q[0].start, q[0].end, q[1].start, q[1].end);
    free(x);
    free(y);
}

/* No regions, and bursts at the very start and end of the input. */
static void test_limits(void) {
    size_t n;
    float *x = background(8, 0.0f, &n);
    burst(x, n, 0.0, 2.0, 0.3f);
    burst(x, n, 6.0, 8.0, 0.3f);
    hv_speech_region r[2] = {region(0.4, 2.0), region(6.0, 7.5)};
    edges(x, n, r, 2);
    CHECK_MSG(r[0].start_sample == 0 && r[1].end_sample == (int64_t)n, "[%.3f, %.3f)", r[0].start,
              r[1].end);
    edges(x, n, NULL, 0);
    free(x);
}

int main(void) {
    test_late_start();
    test_no_move();
    test_bounded();
    test_neighbours();
    test_limits();
    TEST_END();
}
