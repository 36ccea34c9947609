/* Word boundaries snapped to pauses in the audio (see refine.h). */
#include "timing/refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_S 0.010 /* loudness resolution */
#define MIN_PAUSE                                                                                  \
    5 /* frames of quiet that make a pause (50 ms): shorter
                           gaps are stop closures inside words */
#define MIN_RANGE_DB                                                                               \
    15 /* loudest minus quietest below this: no pauses to
                           find */

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int hv_loudness_measure(hv_loudness *l, const float *x, size_t len, int rate) {
    memset(l, 0, sizeof *l);
    size_t hop = (size_t)llround(FRAME_S * rate);
    if (hop < 1) hop = 1;
    int n = (int)(len / hop);
    l->frame = (double)hop / rate;
    if (n < 2 * MIN_PAUSE) return 0; /* too short to find pauses in */
    float *sorted = malloc((size_t)n * sizeof *sorted);
    if (!(l->db = malloc((size_t)n * sizeof *l->db)) || !sorted) {
        free(sorted);
        hv_loudness_free(l);
        return -1;
    }
    l->n = n;
    for (int k = 0; k < n; k++) {
        double s = 0;
        for (size_t i = 0; i < hop; i++) {
            double v = x[(size_t)k * hop + i];
            s += v * v;
        }
        l->db[k] = (float)(10 * log10(s / hop + 1e-12));
    }
    memcpy(sorted, l->db, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_float);
    float quiet = sorted[n / 10], loud = sorted[n - 1 - n / 10];
    free(sorted);
    float range = loud - quiet;
    l->usable = range >= MIN_RANGE_DB;
    l->speech = quiet + (range * 0.3f > 6 ? range * 0.3f : 6);
    return 0;
}

void hv_loudness_free(hv_loudness *l) {
    free(l->db);
    memset(l, 0, sizeof *l);
}

static int sound(const hv_loudness *l, int k) { return k >= 0 && k < l->n && l->db[k] > l->speech; }

void hv_loudness_quiet(const hv_loudness *l, double step, int T, uint8_t *quiet) {
    for (int f = 0; f < T; f++) {
        int a = (int)llround(f * step / l->frame), b = (int)llround((f + 1) * step / l->frame);
        int loud = 0, cnt = 0;
        for (int k = a; l->usable && k < b && k < l->n; k++, cnt++) loud += sound(l, k);
        quiet[f] = cnt > 0 && 4 * loud < cnt;
    }
}

/* Whether frames [k - MIN_PAUSE + 1, k] are all quiet (before the
 * chunk's start counts as quiet). */
static int pause_ends_at(const hv_loudness *l, int k) {
    for (int j = k; j > k - MIN_PAUSE; j--)
        if (j >= 0 && sound(l, j)) return 0;
    return 1;
}

/* Whether frames [k, k + MIN_PAUSE) are all quiet (after the end counts
 * as quiet). */
static int pause_starts_at(const hv_loudness *l, int k) {
    for (int j = k; j < k + MIN_PAUSE; j++)
        if (j < l->n && sound(l, j)) return 0;
    return 1;
}

void hv_words_refine(hv_chunk_word *w, int n, const hv_loudness *l, double step) {
    if (!l->usable || n < 1) return;
    int reach = (int)ceil(step / l->frame); /* the alignment's resolution */
    for (int i = 0; i < n; i++) {
        int a = (int)floor(w[i].start / l->frame), b = (int)ceil(w[i].end / l->frame);
        int lo = i > 0 ? (int)ceil(w[i - 1].start / l->frame) : 0;
        if (a >= l->n) continue;
        if (!sound(l, a)) { /* starts in a pause: at the sound after it */
            int k = a;
            while (k < b && k < l->n && !sound(l, k)) k++;
            if (k < b && k < l->n) a = k;
        } else { /* starts in sound: at a pause's end just before it */
            for (int k = a - 1; k >= a - reach && k >= lo; k--)
                if (pause_ends_at(l, k)) {
                    a = k + 1;
                    break;
                }
        }
        if (b > l->n) b = l->n;
        if (b > a && !sound(l, b - 1)) { /* ends in a pause: at the sound before it */
            int k = b - 1;
            while (k > a && !sound(l, k)) k--;
            b = k + 1;
        } else if (b > a) { /* ends in sound: at a pause's start just after it */
            for (int k = b; k <= b + reach && k < l->n; k++)
                if (pause_starts_at(l, k)) {
                    b = k;
                    break;
                }
        }
        w[i].start = a * l->frame;
        w[i].end = b * l->frame;
        if (w[i].end < w[i].start) w[i].end = w[i].start;
    }
    /* in order, not overlapping */
    for (int i = 1; i < n; i++) {
        if (w[i].start < w[i - 1].start) w[i].start = w[i - 1].start;
        if (w[i].end < w[i].start) w[i].end = w[i].start;
        if (w[i - 1].end > w[i].start) w[i - 1].end = w[i].start;
    }
}
