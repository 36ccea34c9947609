/* Token sampling: a seeded generator of our own and the temperature /
 * top-k / top-p filter of docs/DECODING.md. */
#ifndef HV_SAMPLING_H
#define HV_SAMPLING_H

#include <stdint.h>

/* xoshiro256**, seeded through splitmix64: the same seed gives the same
 * stream on every machine. */
typedef struct hv_rng {
    uint64_t s[4];
} hv_rng;

void hv_rng_seed(hv_rng *r, uint64_t seed);
uint64_t hv_rng_next(hv_rng *r);
double hv_rng_uniform(hv_rng *r); /* [0, 1), 53 bits */

typedef struct hv_sampler {
    float temperature; /* > 0 */
    int top_k;         /* 0 = all */
    float top_p;       /* (0, 1] */
} hv_sampler;

/* Scratch for hv_sample: one entry per vocabulary item. */
typedef struct hv_sample_cand {
    float z;
    int id;
    double p;
} hv_sample_cand;

/* Draws a token from log-probs lp[V] filtered by s. cand has room for V.
 * When probs is not NULL it receives the filtered, renormalised
 * distribution over all V tokens (0 for removed ones), for tests. */
int hv_sample(const float *lp, int V, const hv_sampler *s, hv_rng *r, hv_sample_cand *cand,
              double *probs);

#endif
