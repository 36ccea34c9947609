/* Element-wise and row-wise kernels. All in place where y == x is allowed. */
#ifndef HV_OPS_H
#define HV_OPS_H

/* y[i,:] = LayerNorm(x[i,:]) * w + b over d features, n rows. */
void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps);

void hv_softmax(float *x, int n);     /* in place, max-subtracted */
void hv_log_softmax(float *x, int n); /* in place */

void hv_silu(float *x, long n);
void hv_relu(float *x, long n);

/* y[n] += alpha * x[n] */
void hv_add_scaled(float *y, const float *x, long n, float alpha);

/* Index of the largest value (first on ties). */
int hv_argmax(const float *x, int n);

#endif
