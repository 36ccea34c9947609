#include "sampling.h"

#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void hv_rng_seed(hv_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t hv_rng_next(hv_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double hv_rng_uniform(hv_rng *r) {
    return (double)(hv_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Larger z first; the lower id first among equals. */
static int by_z_desc(const void *a, const void *b) {
    const hv_sample_cand *x = a, *y = b;
    if (x->z != y->z) return x->z > y->z ? -1 : 1;
    return x->id - y->id;
}

int hv_sample(const float *lp, int V, const hv_sampler *s, hv_rng *r, hv_sample_cand *cand,
              double *probs) {
    for (int i = 0; i < V; i++) {
        cand[i].z = lp[i] / s->temperature;
        cand[i].id = i;
    }
    qsort(cand, (size_t)V, sizeof *cand, by_z_desc);
    int k = s->top_k > 0 && s->top_k < V ? s->top_k : V;

    /* softmax over the top k (sorted, so cand[0] holds the maximum) */
    double total = 0;
    for (int i = 0; i < k; i++) {
        cand[i].p = exp((double)cand[i].z - cand[0].z);
        total += cand[i].p;
    }
    /* top-p: keep a token while the probability before it is < top_p */
    int m = k;
    if (s->top_p < 1.0f) {
        double before = 0;
        for (m = 0; m < k; m++) {
            if (m > 0 && before / total >= s->top_p) break;
            before += cand[m].p;
        }
    }
    double kept = 0;
    for (int i = 0; i < m; i++) kept += cand[i].p;
    if (probs) {
        for (int i = 0; i < V; i++) probs[i] = 0;
        for (int i = 0; i < m; i++) probs[cand[i].id] = cand[i].p / kept;
    }
    double u = hv_rng_uniform(r) * kept, acc = 0;
    for (int i = 0; i < m; i++) {
        acc += cand[i].p;
        if (acc > u) return cand[i].id;
    }
    return cand[m - 1].id;
}
