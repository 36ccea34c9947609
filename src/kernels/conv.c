/* The encoder's convolutions (engine.h): the subsampling's 3x3 ones with
 * stride 2 and the convolution module's depthwise one over time, as
 * direct loops over output rows spread over the pool. */
#include <stdlib.h>
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

/* One output time row o [F2 x C] of a 3x3 convolution, stride 2, padding
 * 1, from the input rows rows[kt] [F x Cin] at times 2t - 1 + kt (NULL:
 * outside the input). Each output is its bias plus the taps in (time,
 * frequency) order, as the checkpoint's [C x 3 x 3] weights are laid
 * out; the loops over channels are contiguous so that the compiler
 * vectorises them. */
static void conv_row(const conv_job *j, float *o_row, const float *const rows[3]) {
    int C = j->C, cin = j->depthwise ? C : 1;
    for (int f = 0; f < j->F2; f++) {
        float *o = o_row + (long)f * C;
        memcpy(o, j->b, (size_t)C * sizeof *o);
        for (int kt = 0; kt < 3; kt++) {
            if (!rows[kt]) continue;
            for (int kf = 0; kf < 3; kf++) {
                int fi = 2 * f - 1 + kf;
                if (fi < 0 || fi >= j->F) continue;
                const float *x = rows[kt] + (long)fi * cin;
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

/* The convolution over output time rows. */
static void conv_task(void *arg, int task, int n_tasks) {
    const conv_job *j = arg;
    long row = (long)j->F * (j->depthwise ? j->C : 1);
    for (int t = task; t < j->T2; t += n_tasks) {
        const float *rows[3];
        for (int kt = 0; kt < 3; kt++) {
            int ti = 2 * t - 1 + kt;
            rows[kt] = ti < 0 || ti >= j->T ? NULL : j->in + ti * row;
        }
        conv_row(j, j->out + (long)t * j->F2 * j->C, rows);
    }
}

typedef struct pair_job {
    conv_job first, second; /* first.out, second.in unused */
    int len;                /* the first's valid output rows: later ones read as zero */
    float *const *ring;     /* per task: 4 rows [F1 x C], 3 of the first's output, one zero */
} pair_job;

/* The second convolution's output rows [t0, t1) of a task (a contiguous
 * block), the first's rows they read computed into the task's ring of
 * three as they are needed, each once per block. */
static void pair_task(void *arg, int task, int n_tasks) {
    const pair_job *j = arg;
    const conv_job *a = &j->first, *b = &j->second;
    long row = (long)a->F2 * a->C;
    float *ring = j->ring[task], *zero = ring + 3 * row;
    int held[3] = {-1, -1, -1};
    memset(zero, 0, (size_t)row * sizeof *zero);
    int t0 = (int)((long)b->T2 * task / n_tasks), t1 = (int)((long)b->T2 * (task + 1) / n_tasks);
    for (int t = t0; t < t1; t++) {
        const float *rows[3];
        for (int kt = 0; kt < 3; kt++) {
            int r = 2 * t - 1 + kt;
            if (r < 0 || r >= a->T2) {
                rows[kt] = NULL;
            } else if (r >= j->len) {
                rows[kt] = zero;
            } else {
                float *slot = ring + (r % 3) * row;
                if (held[r % 3] != r) {
                    const float *in[3];
                    for (int k = 0; k < 3; k++) {
                        int ti = 2 * r - 1 + k;
                        in[k] = ti < 0 || ti >= a->T ? NULL : a->in + (long)ti * a->F;
                    }
                    conv_row(a, slot, in);
                    held[r % 3] = r;
                }
                rows[kt] = slot;
            }
        }
        conv_row(b, b->out + (long)t * b->F2 * b->C, rows);
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

int hv_conv3x3_s2_pair(const hv_engine *e, float *out, int T4, int F4, const float *in, int T,
                       int F, int T2, int F2, int len2, int C, const float *w0, const float *b0,
                       const float *w1, const float *b1) {
    int tasks = hv_pool_size(e->pool) < T4 ? hv_pool_size(e->pool) : T4;
    if (tasks < 1) tasks = 1;
    size_t bytes = (size_t)4 * F2 * C * sizeof(float);
    float *ring[64], *own = NULL;
    if (tasks > 64) tasks = 64;
    if (e->pool) {
        for (int t = 0; t < tasks; t++)
            if (!(ring[t] = hv_pool_scratch(e->pool, t, bytes))) return -1;
    } else {
        tasks = 1;
        if (!(ring[0] = own = malloc(bytes))) return -1;
    }
    pair_job j = {.first = {in, NULL, T, F, T2, F2, C, w0, b0, 0, 1},
                  .second = {NULL, out, T2, F2, T4, F4, C, w1, b1, 1, 0},
                  .len = len2,
                  .ring = ring};
    hv_pool_run(e->pool, tasks, pair_task, &j);
    free(own);
    return 0;
}

void hv_dwconv_silu(const hv_engine *e, float *out, const float *in, int n, int d, int K,
                    const float *w, const float *b) {
    dwconv_job j = {.in = in, .out = out, .w = w, .b = b, .n = n, .d = d, .K = K};
    hv_pool_run(e->pool, hv_pool_size(e->pool), dwconv_task, &j);
}
