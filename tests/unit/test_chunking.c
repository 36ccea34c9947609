/* The chunk planner of docs/MODEL.md "Long audio". */
#include <math.h>
#include <stdlib.h>

#include "audio/chunking.h"
#include "testlib.h"

static hv_chunk_plan_params params(hv_chunking mode) {
    hv_chunk_plan_params p = {mode, 35 * 100, 5 * 100, 16, 30 * 100, 10 * 100};
    return p; /* a 100 Hz "sample rate" keeps the buffers small */
}

static void test_modes(void) {
    size_t *b;
    int n;
    float *x = hv_test_noise(20000, 1);
    hv_chunk_plan_params p = params(HV_CHUNKING_AUTO);

    CHECK(hv_chunk_plan(x, 3000, &p, &b, &n, NULL) == HV_OK); /* 30 s: one piece */
    CHECK(n == 1 && b[0] == 0 && b[1] == 3000);
    free(b);
    CHECK(hv_chunk_plan(x, 0, &p, &b, &n, NULL) == HV_OK && n == 0);
    free(b);

    /* 31 s: auto cuts near 35 s, i.e. the last chunk is the whole */
    CHECK(hv_chunk_plan(x, 3100, &p, &b, &n, NULL) == HV_OK);
    CHECK(n == 1 && b[1] == 3100);
    free(b);

    /* energy: every chunk at most 35 s, at least 30 s except the last,
     * boundaries increasing and covering everything */
    p.mode = HV_CHUNKING_ENERGY;
    CHECK(hv_chunk_plan(x, 20000, &p, &b, &n, NULL) == HV_OK);
    int ok = b[0] == 0 && b[n] == 20000;
    for (int i = 0; i < n; i++) {
        size_t len = b[i + 1] - b[i];
        ok &= len <= 3500 && (i == n - 1 || len >= 3000);
    }
    CHECK_MSG(ok && n >= 6, "energy plan of %d chunks", n);
    free(b);

    p.mode = HV_CHUNKING_FIXED;
    CHECK(hv_chunk_plan(x, 2500, &p, &b, &n, NULL) == HV_OK);
    CHECK(n == 3 && b[1] == 1000 && b[2] == 2000 && b[3] == 2500);
    free(b);

    p.mode = HV_CHUNKING_NONE;
    CHECK(hv_chunk_plan(x, 20000, &p, &b, &n, NULL) == HV_OK && n == 1 && b[1] == 20000);
    free(b);

    p.mode = HV_CHUNKING_FIXED;
    p.fixed = 0;
    CHECK(hv_chunk_plan(x, 2500, &p, &b, &n, NULL) == HV_ERR_INVALID_ARG);
    free(x);
}

static void test_quietest_window(void) {
    /* loud noise with one silent window inside the search span [3000, 3500):
     * windows start at 3000 + 16k; make the one at 3000 + 16*7 silent */
    float *x = hv_test_noise(8000, 2);
    size_t q = 3000 + 16 * 7;
    for (size_t i = q; i < q + 16; i++) x[i] = 0;
    hv_chunk_plan_params p = params(HV_CHUNKING_ENERGY);
    size_t *b;
    int n;
    CHECK(hv_chunk_plan(x, 8000, &p, &b, &n, NULL) == HV_OK);
    CHECK_MSG(b[1] == q, "cut at the silent window: %zu, expected %zu", b[1], q);
    free(b);
    /* two equally silent windows: the first wins */
    for (size_t i = 3000 + 16 * 3; i < 3000 + 16 * 4; i++) x[i] = 0;
    CHECK(hv_chunk_plan(x, 8000, &p, &b, &n, NULL) == HV_OK);
    CHECK(b[1] == 3000 + 16 * 3);
    free(b);
    /* a window that does not fit entirely before the limit is not taken:
     * i < span - w, so the last start is 3500 - 32 */
    for (size_t i = 3000; i < 3500; i++) x[i] = 1.0f;
    for (size_t i = 3500 - 16; i < 3500; i++) x[i] = 0;
    CHECK(hv_chunk_plan(x, 8000, &p, &b, &n, NULL) == HV_OK);
    CHECK(b[1] != 3500 - 16);
    free(b);
    /* a span no longer than the window: cut at its midpoint */
    p.window = 1000;
    CHECK(hv_chunk_plan(x, 8000, &p, &b, &n, NULL) == HV_OK);
    CHECK(b[1] == 3000 + 250);
    free(b);
    free(x);
}

int main(void) {
    test_modes();
    test_quietest_window();
    TEST_END();
}
