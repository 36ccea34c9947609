#include "kernels/ops.h"

#include <math.h>

void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps) {
    for (int i = 0; i < n; i++) {
        const float *xi = x + (long)i * d;
        float *yi = y + (long)i * d;
        double mean = 0, var = 0;
        for (int j = 0; j < d; j++) mean += xi[j];
        mean /= d;
        for (int j = 0; j < d; j++) {
            double t = xi[j] - mean;
            var += t * t;
        }
        var /= d;
        float inv = (float)(1.0 / sqrt(var + eps)), m = (float)mean;
        for (int j = 0; j < d; j++) yi[j] = (xi[j] - m) * inv * w[j] + b[j];
    }
}

void hv_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

void hv_log_softmax(float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double sum = 0;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    float lse = mx + (float)log(sum);
    for (int i = 0; i < n; i++) x[i] -= lse;
}

void hv_silu(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = x[i] / (1.0f + expf(-x[i]));
}

void hv_relu(float *x, long n) {
    for (long i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0;
}

void hv_add_scaled(float *y, const float *x, long n, float alpha) {
    for (long i = 0; i < n; i++) y[i] += alpha * x[i];
}

int hv_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}
