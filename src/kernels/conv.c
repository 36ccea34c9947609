/* The encoder's convolutions (engine.h): the subsampling's 3x3 ones with
 * stride 2 and the convolution module's depthwise one over time, as
 * direct loops over output rows spread over the pool. */
#include <string.h>

#include "kernels/engine.h"
#include "kernels/ops.h"

typedef struct conv_job {
    const float *in; /* [T x F x Cin] */
    float *out;      /* [T2 x F2 x C] */
    int T, F, T2, F2, C;
    const float *w; /* [3 x 3 x C]: tap-major, so a tap's channels are contiguous */
    const float *b; /* [C] */
    int depthwise;  /* 0: 1 -> C channels (Cin = 1); 1: C -> C per channel */
    int relu;
} conv_job;

/* 3x3 convolution, stride 2, padding 1, over output time rows. Each output
 * is its bias plus the taps in (time, frequency) order, as the checkpoint's
 * [C x 3 x 3] weights are laid out; the loops over channels are contiguous
 * so that the compiler vectorises them. */
static void conv_task(void *arg, int task, int n_tasks) {
    const conv_job *j = arg;
    int C = j->C, cin = j->depthwise ? C : 1;
    for (int t = task; t < j->T2; t += n_tasks) {
        for (int f = 0; f < j->F2; f++) {
            float *o = j->out + ((long)t * j->F2 + f) * C;
            memcpy(o, j->b, (size_t)C * sizeof *o);
            for (int kt = 0; kt < 3; kt++) {
                int ti = 2 * t - 1 + kt;
                if (ti < 0 || ti >= j->T) continue;
                for (int kf = 0; kf < 3; kf++) {
                    int fi = 2 * f - 1 + kf;
                    if (fi < 0 || fi >= j->F) continue;
                    const float *x = j->in + ((long)ti * j->F + fi) * cin;
                    const float *w = j->w + (kt * 3 + kf) * C;
                    if (j->depthwise)
                        for (int c = 0; c < C; c++) o[c] += w[c] * x[c];
                    else
                        for (int c = 0; c < C; c++) o[c] += w[c] * x[0];
                }
            }
            if (j->relu)
                for (int c = 0; c < C; c++) o[c] = o[c] > 0 ? o[c] : 0;
        }
    }
}

typedef struct dwconv_job {
    const float *in;    /* [n x d] GLU output, padded rows zero */
    float *out;         /* [n x d] */
    const float *w, *b; /* [K x d] (BatchNorm folded), [d] */
    int n, d, K;
} dwconv_job;

/* Depthwise conv over time + folded BatchNorm + SiLU, over time rows; w is
 * tap-major [K x d] so the loops over channels are contiguous. */
static void dwconv_task(void *arg, int task, int n_tasks) {
    const dwconv_job *j = arg;
    int pad = (j->K - 1) / 2;
    for (int t = task; t < j->n; t += n_tasks) {
        float *o = j->out + (long)t * j->d;
        memcpy(o, j->b, (size_t)j->d * sizeof *o);
        for (int k = 0; k < j->K; k++) {
            int ti = t + k - pad;
            if (ti < 0 || ti >= j->n) continue;
            const float *xi = j->in + (long)ti * j->d, *w = j->w + (long)k * j->d;
            for (int ch = 0; ch < j->d; ch++) o[ch] += w[ch] * xi[ch];
        }
        hv_silu(o, j->d);
    }
}

void hv_conv3x3_s2(const hv_engine *e, float *out, int T2, int F2, const float *in, int T, int F,
                   int C, int depthwise, const float *w, const float *b, int relu) {
    /* in the order of conv_job's fields */
    conv_job j = {in, out, T, F, T2, F2, C, w, b, depthwise, relu};
    hv_pool_run(e->pool, hv_pool_size(e->pool), conv_task, &j);
}

void hv_dwconv_silu(const hv_engine *e, float *out, const float *in, int n, int d, int K,
                    const float *w, const float *b) {
    dwconv_job j = {.in = in, .out = out, .w = w, .b = b, .n = n, .d = d, .K = K};
    hv_pool_run(e->pool, hv_pool_size(e->pool), dwconv_task, &j);
}
