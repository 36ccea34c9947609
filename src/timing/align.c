/* Cross-attention alignment (see align.h and docs/TIMESTAMPS.md). */
#include "timing/align.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

hv_align_params hv_align_default_params(int n_layers) {
    hv_align_params p;
    p.first_layer = n_layers / 2;
    p.median_width = 1;
    p.pause_penalty = 4.0f;
    return p;
}

void hv_dtw(const float *sim, int rows, int cols, int first_optional, int *first_col, float *D,
            uint8_t *trace) {
    int W = cols + 1, rows_alone = rows > cols;
    /* D[i][j]: the best cost of a path ending at cell (i-1, j-1);
     * cost = -sim. D[1][0] = 0 lets a path start in row 1. */
    for (int j = 0; j <= cols; j++) D[j] = FLT_MAX;
    D[0] = 0;
    for (int i = 1; i <= rows; i++) {
        D[(long)i * W] = i == 1 && first_optional ? 0 : FLT_MAX;
        const float *s = sim + (long)(i - 1) * cols;
        for (int j = 1; j <= cols; j++) {
            float diag = D[(long)(i - 1) * W + j - 1], up = D[(long)(i - 1) * W + j],
                  left = D[(long)i * W + j - 1], best = diag;
            uint8_t t = 0;
            if (rows_alone && up < best) best = up, t = 1;
            if (left < best) best = left, t = 2;
            D[(long)i * W + j] = best == FLT_MAX ? FLT_MAX : best - s[j - 1];
            trace[(long)i * W + j] = t;
        }
    }
    /* back from the last cell; a row's first column is the smallest seen,
     * rows the path skipped start at column 0 */
    int i = rows, j = cols;
    for (int r = 0; r < rows; r++) first_col[r] = cols - 1;
    while (i > 0 && j > 0) {
        first_col[i - 1] = j - 1;
        uint8_t t = trace[(long)i * W + j];
        if (t == 0)
            i--, j--;
        else if (t == 1)
            i--;
        else
            j--;
    }
    for (int r = 0; r < i; r++) first_col[r] = 0;
    for (int r = 1; r < rows; r++)
        if (first_col[r] < first_col[r - 1]) first_col[r] = first_col[r - 1];
}

/* Median filter of odd width w (at most 15) along x[n], edges reflected. */
static void median_filter(float *x, int n, int w, float *tmp) {
    int h = w / 2;
    float win[15];
    if (w <= 1 || n < 2) return;
    if (w > 15) w = 15, h = 7;
    memcpy(tmp, x, (size_t)n * sizeof *x);
    for (int i = 0; i < n; i++) {
        int m = 0;
        for (int k = -h; k <= h; k++) {
            int j = i + k;
            while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j; /* reflect */
            float v = tmp[j];
            int p = m++;
            for (; p > 0 && win[p - 1] > v; p--) win[p] = win[p - 1];
            win[p] = v;
        }
        x[i] = win[h];
    }
}

hv_status hv_align_attention(hv_decoder *dec, const hv_engine *eng, const int32_t *prompt,
                             int n_prompt, const int32_t *tokens, int n, int first_layer,
                             float **attn, hv_error *e) {
    const hv_config *c = dec->c;
    int l0 = first_layer < 0 ? 0 : first_layer >= c->dec_layers ? c->dec_layers - 1 : first_layer;
    int L = c->dec_layers - l0, H = c->dec_heads, T = dec->enc_len;
    int n_in = n_prompt + n; /* the pass: prompt and every token but the EOS */
    int R = n + 1;           /* rows predicting tokens[0 .. n-1] and the EOS */
    *attn = NULL;
    if (n < 1 || n_prompt < 1 || n_in > c->dec_max_seq)
        return hv_err(e, HV_ERR_INVALID_ARG, "alignment: %d tokens after a %d-token prompt", n,
                      n_prompt);
    int32_t *in = malloc((size_t)n_in * sizeof *in);
    float *tap = malloc((size_t)L * H * n_in * T * sizeof *tap);
    float *out = malloc((size_t)L * H * R * T * sizeof *out);
    hv_status st = HV_OK;
    if (!in || !tap || !out) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for word times");
        goto done;
    }
    memcpy(in, prompt, (size_t)n_prompt * sizeof *in);
    memcpy(in + n_prompt, tokens, (size_t)n * sizeof *in);
    if ((st = hv_decoder_reorder(dec, NULL, 0, e))) goto done;
    int seq = 0;
    dec->cross_tap = tap;
    dec->cross_tap_first = l0;
    st = hv_decoder_forward(dec, eng, &seq, 1, in, n_in, e);
    dec->cross_tap = NULL;
    if (st || (st = hv_decoder_reorder(dec, NULL, 0, e))) goto done;
    for (long lh = 0; lh < (long)L * H; lh++)
        memcpy(out + lh * R * T, tap + (lh * n_in + n_prompt - 1) * T, (size_t)R * T * sizeof *out);
    *attn = out;
    out = NULL;
done:
    free(in);
    free(tap);
    free(out);
    return st;
}

/* Standardises x [R x T] over the rows of each column, then over the
 * columns of each row. */
static void standardise(float *x, int R, int T) {
    for (int pass = 0; pass < 2; pass++) {
        int outer = pass ? R : T, inner = pass ? T : R;
        long so = pass ? T : 1, si = pass ? 1 : T; /* strides */
        for (int o = 0; o < outer; o++) {
            double m = 0, v = 0;
            for (int i = 0; i < inner; i++) m += x[o * so + i * si];
            m /= inner;
            for (int i = 0; i < inner; i++) {
                double d = x[o * so + i * si] - m;
                v += d * d;
            }
            double sd = sqrt(v / inner);
            for (int i = 0; i < inner; i++)
                x[o * so + i * si] = (float)((x[o * so + i * si] - m) / (sd > 1e-12 ? sd : 1e-12));
        }
    }
}

hv_status hv_align_bounds(const float *attn, int L, int H, int R, int T, const uint8_t *quiet,
                          const uint8_t *pause, const hv_align_params *ap, double *bounds,
                          hv_error *e) {
    int mw = ap->median_width < 1 ? 1 : ap->median_width | 1;
    float pen = ap->pause_penalty;
    int R1 = R + 1; /* a first row for the pause before the first token */
    float *sim = calloc((size_t)R1 * T, sizeof *sim);
    float *head = malloc((size_t)R * T * sizeof *head);
    float *tmp = malloc((size_t)T * sizeof *tmp);
    float *D = malloc((size_t)(R1 + 1) * (T + 1) * sizeof *D);
    uint8_t *trace = malloc((size_t)(R1 + 1) * (T + 1));
    int *first = malloc((size_t)R1 * sizeof *first);
    hv_status st = HV_OK;
    if (!sim || !head || !tmp || !D || !trace || !first) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for word times");
        goto done;
    }
    /* each voting head: standardised, median-filtered over time; their
     * mean is the similarity of token and frame */
    int voters = 0;
    float *s = sim + T; /* rows 1 .. R: the tokens */
    for (int l = 0; l < L; l++)
        for (int hd = 0; hd < H; hd++) {
            memcpy(head, attn + ((long)l * H + hd) * R * T, (size_t)R * T * sizeof *head);
            standardise(head, R, T);
            for (int r = 0; r < R; r++) median_filter(head + (long)r * T, T, mw, tmp);
            for (long k = 0; k < (long)R * T; k++) s[k] += head[k];
            voters++;
        }
    for (long k = 0; k < (long)R * T; k++) s[k] /= (float)voters;
    /* pauses: free for the first row and the rows that may hold them, a
     * cost for words; the first row holds nothing else */
    for (int t = 0; t < T; t++) {
        int q = quiet && quiet[t];
        sim[t] = q ? pen : -pen;
        for (int r = 0; r < R; r++)
            if (q && !(pause && pause[r])) s[(long)r * T + t] -= pen;
    }
    hv_dtw(sim, R1, T, 1, first, D, trace);
    for (int r = 0; r < R; r++) bounds[r] = first[r + 1];
done:
    free(sim);
    free(head);
    free(tmp);
    free(D);
    free(trace);
    free(first);
    return st;
}
