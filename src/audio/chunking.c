#include "audio/chunking.h"

#include <stdlib.h>

/* The cut inside [a, a + span): the midpoint of a short span, else the
 * start of the quietest window of `w` samples, stepping by w (the first
 * one on ties). Sums of squares rank windows as RMS does. */
static size_t quietest_cut(const float *x, size_t a, size_t span, size_t w) {
    if (span <= w) return a + span / 2;
    size_t best = a;
    double best_e = -1;
    for (size_t i = 0; i + w < span; i += w) {
        double e = 0;
        for (size_t k = 0; k < w; k++) e += (double)x[a + i + k] * x[a + i + k];
        if (best_e < 0 || e < best_e) {
            best_e = e;
            best = a + i;
        }
    }
    return best;
}

hv_status hv_chunk_plan(const float *x, size_t n, const hv_chunk_plan_params *p, size_t **bounds,
                        int *n_chunks, hv_error *e) {
    *bounds = NULL;
    *n_chunks = 0;
    size_t chunk = p->mode == HV_CHUNKING_FIXED ? p->fixed : p->chunk;
    if (chunk == 0 || (p->mode != HV_CHUNKING_FIXED && p->context > chunk))
        return hv_err(e, HV_ERR_INVALID_ARG, "chunking: bad chunk size");
    int one_piece = p->mode == HV_CHUNKING_NONE || (p->mode == HV_CHUNKING_AUTO && n <= p->single);
    /* each chunk but the last advances by at least chunk - context */
    size_t step = chunk - (p->mode == HV_CHUNKING_FIXED ? 0 : p->context);
    size_t cap = one_piece ? 2 : n / (step ? step : 1) + 3;
    size_t *b = malloc(cap * sizeof *b);
    if (!b) return hv_err(e, HV_ERR_NOMEM, "out of memory planning chunks");
    int k = 0;
    b[k] = 0;
    if (n == 0) {
        *bounds = b;
        return HV_OK;
    }
    if (one_piece) {
        b[++k] = n;
    } else {
        size_t idx = 0;
        while (idx < n) {
            size_t cut;
            if (idx + chunk >= n) {
                cut = n;
            } else if (p->mode == HV_CHUNKING_FIXED) {
                cut = idx + chunk;
            } else {
                cut = quietest_cut(x, idx + chunk - p->context, p->context, p->window);
                if (cut <= idx) cut = idx + chunk; /* no progress: cut hard */
            }
            b[++k] = cut;
            idx = cut;
        }
    }
    *bounds = b;
    *n_chunks = k;
    return HV_OK;
}
