/* The subsampling's first two convolutions as one pass
 * (hv_conv3x3_s2_pair) against the two passes it replaces: the first
 * convolution (one input channel, ReLU) into an image, the image's rows
 * from len2 on zeroed, then the depthwise one (hv_conv3x3_s2 twice). The
 * same loops compute every output in both, so the outputs must be the
 * same bits. Odd and even lengths, valid rows short of the image and
 * all of it, pools of none, 1 and 3 threads. */
#include <stdlib.h>
#include <string.h>

#include "kernels/engine.h"
#include "kernels/threads.h"
#include "testlib.h"

static int conv_len(int x) { return (x - 1) / 2 + 1; }

static void check_pair(hv_pool *pool, int T, int F, int C, int len2, unsigned seed) {
    int T2 = conv_len(T), F2 = conv_len(F), T4 = conv_len(T2), F4 = conv_len(F2);
    float *in = hv_test_noise((size_t)T * F, seed);
    float *w0 = hv_test_noise(9 * (size_t)C, seed + 1), *b0 = hv_test_noise((size_t)C, seed + 2);
    float *w1 = hv_test_noise(9 * (size_t)C, seed + 3), *b1 = hv_test_noise((size_t)C, seed + 4);
    float *img = malloc((size_t)T2 * F2 * C * sizeof *img);
    float *want = malloc((size_t)T4 * F4 * C * sizeof *want);
    float *got = malloc((size_t)T4 * F4 * C * sizeof *got);
    CHECK(in && w0 && b0 && w1 && b1 && img && want && got);
    if (in && w0 && b0 && w1 && b1 && img && want && got) {
        hv_engine e = hv_engine_make(pool, 0, NULL);
        hv_conv3x3_s2(&e, img, T2, F2, in, T, F, C, 0, w0, b0, 1);
        if (len2 < T2) memset(img + (size_t)len2 * F2 * C, 0, (size_t)(T2 - len2) * F2 * C * 4);
        hv_conv3x3_s2(&e, want, T4, F4, img, T2, F2, C, 1, w1, b1, 0);
        memset(got, 0xff, (size_t)T4 * F4 * C * sizeof *got);
        int rc = hv_conv3x3_s2_pair(&e, got, T4, F4, in, T, F, T2, F2, len2, C, w0, b0, w1, b1);
        CHECK_MSG(rc == 0, "T %d F %d C %d len2 %d: pair failed", T, F, C, len2);
        CHECK_MSG(memcmp(got, want, (size_t)T4 * F4 * C * sizeof *got) == 0,
                  "T %d F %d C %d len2 %d, %d threads: pair differs from two passes", T, F, C, len2,
                  pool ? hv_pool_size(pool) : 0);
    }
    free(in), free(w0), free(b0), free(w1), free(b1), free(img), free(want), free(got);
}

int main(void) {
    hv_pool *pools[3] = {NULL, hv_pool_new(1), hv_pool_new(3)};
    const struct {
        int T, F, C, len2;
    } shapes[] = {{1, 1, 4, 1},     {2, 5, 3, 1},    {9, 7, 8, 5},     {10, 6, 8, 3},
                  {40, 16, 16, 20}, {41, 17, 5, 21}, {64, 80, 32, 10}, {13, 128, 8, 7}};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            int T2 = conv_len(shapes[i].T);
            int len2 = shapes[i].len2 < T2 ? shapes[i].len2 : T2;
            check_pair(pools[p], shapes[i].T, shapes[i].F, shapes[i].C, len2, 7u * (unsigned)i);
            check_pair(pools[p], shapes[i].T, shapes[i].F, shapes[i].C, T2, 11u * (unsigned)i);
        }
    for (int p = 1; p < 3; p++) hv_pool_free(pools[p]);
    TEST_END();
}
