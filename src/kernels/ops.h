/* Element-wise and row-wise kernels. All in place where y == x is allowed. */
#ifndef HV_OPS_H
#define HV_OPS_H

/* y[i,:] = LayerNorm(x[i,:]) * w + b over d features, n rows. */
void hv_layernorm(float *y, const float *x, int n, int d, const float *w, const float *b,
                  float eps);

void hv_softmax(float *x, int n);     /* in place, max-subtracted */
void hv_log_softmax(float *x, int n); /* in place */

/* SiLU x / (1 + e^-x) in place, and the GLU y[d] = a[:d] * sigmoid(a[d:2d]),
 * with hv_exp_act for e^x (vectorised where the CPU allows; the same bits
 * either way). */
void hv_silu(float *x, long n);
void hv_glu(float *y, const float *a, long d);
/* e^x within 2 ulp of expf (Cephes' polynomial); x clamped to [-87, 88]. */
float hv_exp_act(float x);
void hv_relu(float *x, long n);

/* y[n] += alpha * x[n] */
void hv_add_scaled(float *y, const float *x, long n, float alpha);

/* Index of the largest value (first on ties). */
int hv_argmax(const float *x, int n);

#endif
