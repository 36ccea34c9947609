/* Speakers linked across two diarize windows by agreement (speaker_link.h). */
#include "timing/speaker_link.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N HV_DIAR_SPEAKERS

/* Words of one side past this are not aligned (an overlap of seconds holds
 * tens of words; a runaway stream should not cost a quadratic table). */
#define MAX_WORDS    1024
/* How much closer another label's voice must be to undo a link by words
 * or time whose own label's voice is over the threshold too: real voices'
 * cosines lie close together, so a smaller gap is noise, not evidence. */
#define VOICE_MARGIN 0.05

void hv_link_norm(const char *text, char *out, size_t size) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 1 < size; p++) {
        unsigned char c = *p;
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) continue;
        out[n++] = (char)c;
    }
    if (size) out[n] = '\0';
}

/* The row of the earlier window's label in rows[*n] (added when there is
 * room), or -1. */
static int row_of(int label, int *rows, int *n) {
    for (int i = 0; i < *n; i++)
        if (rows[i] == label) return i;
    if (label < 0 || *n == N) return -1;
    rows[*n] = label;
    return (*n)++;
}

/* The one-to-one assignment of rows to columns with the largest sum of
 * w[r][c] over its pairs, each pair with w > 0 (exact: a table f[(n_rows +
 * 1) << N] over the rows and the set of columns taken); col[r] is r's
 * column or -1; returns the sum. Rows (of the first N) and columns whose
 * flag is set in skip_r / skip_c take no part. */
static double assign(double (*w)[N], int n_rows, unsigned skip_r, unsigned skip_c, double *f,
                     int *col) {
#define F(r, m) f[(size_t)(r) * (1u << N) + (m)]
    for (unsigned m = 0; m < (1u << N); m++) F(n_rows, m) = 0;
    for (int r = n_rows - 1; r >= 0; r--)
        for (unsigned m = 0; m < (1u << N); m++) {
            double best = F(r + 1, m);
            if (!(r < N && skip_r >> r & 1))
                for (int c = 0; c < N; c++)
                    if (!((m | skip_c) >> c & 1) && w[r][c] > 0 &&
                        w[r][c] + F(r + 1, m | 1u << c) > best)
                        best = w[r][c] + F(r + 1, m | 1u << c);
            F(r, m) = best;
        }
    unsigned m = 0;
    for (int r = 0; r < n_rows; r++) {
        col[r] = -1;
        if (F(r, m) == F(r + 1, m)) continue; /* on a tie, r stays unlinked */
        for (int c = 0; c < N; c++)
            if (!((m | skip_c) >> c & 1) && w[r][c] > 0 &&
                w[r][c] + F(r + 1, m | 1u << c) == F(r, m)) {
                col[r] = c;
                m |= 1u << c;
                break;
            }
    }
    return F(0, 0);
#undef F
}

/* Rule 1's votes: the longest common subsequence of a and b (equal texts
 * at most tol apart), each aligned pair a vote in v[row][K]. */
static hv_status word_votes(const hv_link_in *in, int *rows, int *n_rows, double v[N][N],
                            hv_error *e) {
    int na = in->na < MAX_WORDS ? in->na : MAX_WORDS, nb = in->nb < MAX_WORDS ? in->nb : MAX_WORDS;
    if (na == 0 || nb == 0) return HV_OK;
    size_t w = (size_t)nb + 1;
    int *L = calloc(((size_t)na + 1) * w, sizeof *L);
    if (!L) return hv_err(e, HV_ERR_NOMEM, "out of memory linking speakers");
#define SAME(i, j)                                                                                 \
    (*in->a[i].text && !strcmp(in->a[i].text, in->b[j].text) &&                                    \
     fabs(in->a[i].t - in->b[j].t) <= in->tol)
    for (int i = na - 1; i >= 0; i--)
        for (int j = nb - 1; j >= 0; j--) {
            int skip = L[(size_t)(i + 1) * w + j] > L[(size_t)i * w + j + 1]
                           ? L[(size_t)(i + 1) * w + j]
                           : L[(size_t)i * w + j + 1];
            int take = SAME(i, j) ? 1 + L[(size_t)(i + 1) * w + j + 1] : 0;
            L[(size_t)i * w + j] = take > skip ? take : skip;
        }
    for (int i = 0, j = 0; i < na && j < nb;) {
        if (SAME(i, j) && L[(size_t)i * w + j] == 1 + L[(size_t)(i + 1) * w + j + 1]) {
            int r = row_of(in->a[i].speaker, rows, n_rows), k = in->b[j].speaker;
            if (r >= 0 && k >= 0 && k < N) v[r][k] += 1;
            i++, j++;
        } else if (L[(size_t)(i + 1) * w + j] >= L[(size_t)i * w + j + 1]) {
            i++;
        } else {
            j++;
        }
    }
#undef SAME
    free(L);
    return HV_OK;
}

/* Rule 2's seconds: each pair of turns' common time in v[row][K]. */
static void time_votes(const hv_link_in *in, int *rows, int *n_rows, double v[N][N]) {
    for (int i = 0; i < in->nta; i++)
        for (int j = 0; j < in->ntb; j++) {
            const hv_link_turn *x = &in->ta[i], *y = &in->tb[j];
            double d = fmin(x->end, y->end) - fmax(x->start, y->start);
            int r = row_of(x->speaker, rows, n_rows), k = y->speaker;
            if (d > 0 && r >= 0 && k >= 0 && k < N) v[r][k] += d;
        }
}

/* The cosine of two signatures of dim values; -1 where one is all zero. */
static double cosine(const double *x, const double *y, int dim) {
    double dot = 0, nx = 0, ny = 0;
    for (int i = 0; i < dim; i++) {
        dot += x[i] * y[i];
        nx += x[i] * x[i];
        ny += y[i] * y[i];
    }
    return nx > 0 && ny > 0 ? dot / (sqrt(nx) * sqrt(ny)) : -1;
}

/* Before rule 4: a link by words or time that the voice contradicts is
 * undone: another label's signature is over voice_threshold with the
 * speaker's, and its own label's is not, or is VOICE_MARGIN less. A window
 * labels its outer seconds worst, and that is where the overlap lies: one
 * wrong label there would carry a speaker's label to another person for
 * the rest of the recording, and push the right one to a new label. */
static void voice_veto(const hv_link_in *in, int map[N], hv_link_how how[N]) {
    int dim = in->voice_dim;
    if (dim <= 0 || in->n_voice_labels <= 0 || !(in->voice_threshold < 1)) return;
    for (int k = 0; k < N; k++) {
        int g = map[k];
        if ((how[k] != HV_LINK_WORDS && how[k] != HV_LINK_TIME) || !(in->voice_b_has >> k & 1) ||
            g < 0 || g >= in->n_voice_labels || !in->voice_label_has[g])
            continue;
        const double *b = in->voice_b + (size_t)k * dim;
        double own = cosine(in->voice_labels + (size_t)g * dim, b, dim);
        for (int l = 0; l < in->n_voice_labels; l++) {
            if (l == g || !in->voice_label_has[l]) continue;
            double c = cosine(in->voice_labels + (size_t)l * dim, b, dim);
            if (c > in->voice_threshold &&
                (own <= in->voice_threshold || c >= own + VOICE_MARGIN)) {
                map[k] = -1, how[k] = HV_LINK_ABSENT;
                break;
            }
        }
    }
}

/* Rule 4: the speakers left (present, unlinked, with a signature) linked
 * to the labels not taken that have a signature, by cosine over
 * voice_threshold. */
static hv_status voice_link(const hv_link_in *in, unsigned present, int map[N], hv_link_how how[N],
                            hv_error *e) {
    int dim = in->voice_dim, n_labels = in->n_voice_labels;
    unsigned left = 0;
    for (int k = 0; k < N; k++)
        if ((present >> k & 1) && how[k] == HV_LINK_ABSENT && (in->voice_b_has >> k & 1))
            left |= 1u << k;
    if (dim <= 0 || !left || n_labels <= 0 || !(in->voice_threshold < 1)) return HV_OK;
    double(*w)[N] = malloc((size_t)n_labels * sizeof *w);
    int *label = malloc((size_t)n_labels * sizeof *label);
    double *f = NULL;
    int *col = NULL, n_rows = 0;
    hv_status st = HV_OK;
    if (!w || !label) goto nomem;
    for (int l = 0; l < n_labels; l++) {
        int taken = !in->voice_label_has[l];
        for (int k = 0; k < N; k++) taken |= how[k] != HV_LINK_ABSENT && map[k] == l;
        if (taken) continue;
        const double *x = in->voice_labels + (size_t)l * dim;
        double any = 0;
        for (int k = 0; k < N; k++) {
            double c = left >> k & 1 ? cosine(x, in->voice_b + (size_t)k * dim, dim) : -1;
            w[n_rows][k] = c > in->voice_threshold ? c - in->voice_threshold : 0;
            any += w[n_rows][k];
        }
        if (any > 0) label[n_rows++] = l;
    }
    if (!n_rows) goto done;
    if (!(f = malloc(((size_t)n_rows + 1) * (1u << N) * sizeof *f)) ||
        !(col = malloc((size_t)n_rows * 2 * sizeof *col)))
        goto nomem;
    unsigned skip_c = ~left & ((1u << N) - 1);
    double total = assign(w, n_rows, 0, skip_c, f, col);
    for (int r = 0; r < n_rows; r++) {
        int k = col[r];
        if (k < 0) continue;
        /* a pair that another optimum leaves out is a tie: nobody links */
        double keep = w[r][k];
        w[r][k] = 0;
        double without = assign(w, n_rows, 0, skip_c, f, col + n_rows);
        w[r][k] = keep;
        if (without >= total - 1e-12) continue;
        map[k] = label[r], how[k] = HV_LINK_VOICE;
    }
    goto done;
nomem:
    st = hv_err(e, HV_ERR_NOMEM, "out of memory linking speakers by voice");
done:
    free(w);
    free(label);
    free(f);
    free(col);
    return st;
}

hv_status hv_speaker_link(const hv_link_in *in, int *next_label, int map[N], hv_link_how how[N],
                          hv_error *e) {
    int rows[N], n_rows = 0, col[N];
    double v[N][N] = {{0}}, f[(N + 1) << N];
    unsigned linked_r = 0, linked_c = 0;
    for (int k = 0; k < N; k++) map[k] = -1, how[k] = HV_LINK_ABSENT;
    unsigned present = 0;
    for (int i = 0; i < in->n_order; i++)
        if (in->order[i] >= 0 && in->order[i] < N) present |= 1u << in->order[i];
    hv_status st = word_votes(in, rows, &n_rows, v, e);
    if (st) return st;
    assign(v, n_rows, 0, ~present & ((1u << N) - 1), f, col);
    for (int r = 0; r < n_rows; r++)
        if (col[r] >= 0) {
            map[col[r]] = rows[r], how[col[r]] = HV_LINK_WORDS;
            linked_r |= 1u << r, linked_c |= 1u << col[r];
        }
    memset(v, 0, sizeof v);
    time_votes(in, rows, &n_rows, v);
    for (int r = 0; r < n_rows; r++)
        for (int k = 0; k < N; k++)
            if (v[r][k] < in->min_time) v[r][k] = 0;
    assign(v, n_rows, linked_r, linked_c | (~present & ((1u << N) - 1)), f, col);
    for (int r = 0; r < n_rows; r++)
        if (col[r] >= 0) {
            map[col[r]] = rows[r], how[col[r]] = HV_LINK_TIME;
            linked_c |= 1u << col[r];
        }
    if (!linked_c && !in->nta && !in->ntb && in->n_order > 0 && in->last_label >= 0) {
        int k = in->order[0];
        if (k >= 0 && k < N) map[k] = in->last_label, how[k] = HV_LINK_ADJACENT;
    }
    voice_veto(in, map, how);
    if ((st = voice_link(in, present, map, how, e))) return st;
    for (int i = 0; i < in->n_order; i++) {
        int k = in->order[i];
        if (k < 0 || k >= N || how[k] != HV_LINK_ABSENT) continue;
        map[k] = (*next_label)++;
        how[k] = HV_LINK_NEW;
    }
    return HV_OK;
}

/* The summed signature of each group of the first n labels into sum
 * [n x in->dim] (zeroed): each label with a signature adds its own to its
 * group's; voiced[g] (when given, zeroed) 1 for a group that got one. */
static void sum_groups(const hv_heal_in *in, const int *group, int n, double *sum,
                       unsigned char *voiced) {
    for (int l = 0; l < n; l++) {
        int g = group[l];
        if (!in->has[l] || g < 0 || g >= n) continue;
        for (int i = 0; i < in->dim; i++)
            sum[(size_t)g * in->dim + i] += in->voice[(size_t)l * in->dim + i];
        if (voiced) voiced[g] = 1;
    }
}

hv_status hv_speaker_heal(const hv_heal_in *in, int *group, hv_error *e) {
    int n = in->n_labels < HV_HEAL_MAX_LABELS ? in->n_labels : HV_HEAL_MAX_LABELS, dim = in->dim;
    if (n < 2 || dim <= 0 || !(in->threshold < 1)) return HV_OK;
    /* each group's summed signature and the groups that share a window */
    double *sum = calloc((size_t)n * dim, sizeof *sum), *cos = malloc((size_t)n * n * sizeof *cos);
    unsigned char *share = calloc((size_t)n * n, 1);
    if (!sum || !cos || !share) {
        free(sum), free(cos), free(share);
        return hv_err(e, HV_ERR_NOMEM, "out of memory merging speaker labels");
    }
    sum_groups(in, group, n, sum, NULL);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (in->share[(size_t)a * in->share_stride + b] && group[a] >= 0 && group[a] < n &&
                group[b] >= 0 && group[b] < n)
                share[(size_t)group[a] * n + group[b]] = 1;
    for (int a = 0; a < n; a++)
        for (int b = a; b < n; b++)
            cos[(size_t)a * n + b] = cos[(size_t)b * n + a] =
                a != b && group[a] == a && group[b] == b
                    ? cosine(sum + (size_t)a * dim, sum + (size_t)b * dim, dim)
                    : -1;
    /* a window that names two speakers is evidence of two people: its
     * two labels need a closer voice than labels of separate windows */
    double apart = 1 - (1 - in->threshold) / HV_HEAL_APART_STRICTNESS;
    double shared = 1 - (1 - in->threshold) / HV_HEAL_SHARED_STRICTNESS;
    for (;;) {
        int ba = -1, bb = -1;
        double best = -1;
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++) {
                double c = cos[(size_t)a * n + b];
                if (c > (share[(size_t)a * n + b] ? shared : apart) && c > best)
                    best = c, ba = a, bb = b;
            }
        if (ba < 0) break;
        /* bb's group joins ba's (the smaller label) */
        for (int l = 0; l < n; l++)
            if (group[l] == bb) group[l] = ba;
        for (int i = 0; i < dim; i++) sum[(size_t)ba * dim + i] += sum[(size_t)bb * dim + i];
        for (int x = 0; x < n; x++) {
            unsigned char s = share[(size_t)ba * n + x] | share[(size_t)bb * n + x];
            share[(size_t)ba * n + x] = share[(size_t)x * n + ba] = s;
            cos[(size_t)bb * n + x] = cos[(size_t)x * n + bb] = -1;
        }
        for (int x = 0; x < n; x++)
            cos[(size_t)ba * n + x] = cos[(size_t)x * n + ba] =
                x != ba && group[x] == x
                    ? cosine(sum + (size_t)ba * dim, sum + (size_t)x * dim, dim)
                    : -1;
    }
    free(sum), free(cos), free(share);
    return HV_OK;
}

/* Rule 7's claim on a signature x whose own label (row own of sum
 * [n x dim], voiced[] 1 where a row has a signature) has cosine c_own with
 * it: the row of the largest cosine, where that is over threshold and
 * c_own is not, or is at least VOICE_MARGIN less; else -1. */
static int claim(const double *sum, const unsigned char *voiced, int n, int dim, int own,
                 double c_own, const double *x, double threshold) {
    double best = -1;
    int to = -1;
    for (int g = 0; g < n; g++) {
        if (g == own || !voiced[g]) continue;
        double c = cosine(sum + (size_t)g * dim, x, dim);
        if (c > best) best = c, to = g;
    }
    return to >= 0 && best > threshold && (c_own <= threshold || best >= c_own + VOICE_MARGIN) ? to
                                                                                               : -1;
}

hv_status hv_speaker_turn_voice(const hv_heal_in *in, const int *group, int n, const double *sig,
                                const unsigned char *has, int *label, hv_error *e) {
    int n_labels = in->n_labels < HV_HEAL_MAX_LABELS ? in->n_labels : HV_HEAL_MAX_LABELS;
    int dim = in->dim;
    if (n <= 0 || n_labels <= 0 || dim <= 0 || !(in->threshold < 1)) return HV_OK;
    double *sum = calloc((size_t)n_labels * dim, sizeof *sum);
    unsigned char *voiced = calloc((size_t)n_labels, 1);
    if (!sum || !voiced) {
        free(sum), free(voiced);
        return hv_err(e, HV_ERR_NOMEM, "out of memory checking turns' voices");
    }
    sum_groups(in, group, n_labels, sum, voiced);
    for (int t = 0; t < n; t++) {
        int own = label[t];
        if (!has[t] || own < 0 || own >= n_labels || !voiced[own]) continue;
        const double *x = sig + (size_t)t * dim;
        int to = claim(sum, voiced, n_labels, dim, own, cosine(sum + (size_t)own * dim, x, dim), x,
                       in->threshold);
        if (to >= 0) label[t] = to;
    }
    free(sum), free(voiced);
    return HV_OK;
}

/* Rule 8's centroids: cen[n_ids x dim] the sum of the signed segments'
 * signatures times their seconds per label of ids[] (ascending), voiced[]
 * 1 where a label has one. */
static void regroup_centroids(const hv_regroup_in *in, const int *label, const int *ids, int n_ids,
                              double *cen, unsigned char *voiced) {
    int dim = in->dim;
    memset(cen, 0, (size_t)n_ids * dim * sizeof *cen);
    memset(voiced, 0, (size_t)n_ids);
    for (int i = 0; i < in->n; i++) {
        if (!in->has[i] || label[i] < 0) continue;
        int lo = 0, hi = n_ids - 1;
        while (lo < hi) { /* ids[] is sorted */
            int mid = (lo + hi) / 2;
            if (ids[mid] < label[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (n_ids == 0 || ids[lo] != label[i]) continue;
        for (int j = 0; j < dim; j++)
            cen[(size_t)lo * dim + j] += in->secs[i] * in->sig[(size_t)i * dim + j];
        voiced[lo] = 1;
    }
}

/* The labels in label[] (>= 0), ascending and each once, into ids[]. */
static int distinct_labels(const int *label, int n, int *ids) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (label[i] < 0) continue;
        int k = 0;
        while (k < m && ids[k] < label[i]) k++;
        if (k < m && ids[k] == label[i]) continue;
        memmove(ids + k + 1, ids + k, (size_t)(m - k) * sizeof *ids);
        ids[k] = label[i];
        m++;
    }
    return m;
}

/* x[dim] scaled to unit length; 0 where it is all zero. */
static int normalise(double *x, int dim) {
    double nx = 0;
    for (int i = 0; i < dim; i++) nx += x[i] * x[i];
    if (!(nx > 0)) return 0;
    nx = sqrt(nx);
    for (int i = 0; i < dim; i++) x[i] /= nx;
    return 1;
}

static double dot(const double *x, const double *y, int dim) {
    double d = 0;
    for (int i = 0; i < dim; i++) d += x[i] * y[i];
    return d;
}

/* Rule 8's split of one label's signed segments idx[m]: 1 with side[]
 * (1: the seed's half) where spherical 2-means finds two halves far apart
 * in voice, each long enough; ca, cb [dim] scratch. */
static int split_label(const hv_regroup_in *in, const int *idx, int m, unsigned char *side,
                       unsigned char *prev, double *ca, double *cb) {
    int dim = in->dim;
    const double *sig = in->sig;
    memset(ca, 0, (size_t)dim * sizeof *ca);
    for (int k = 0; k < m; k++)
        for (int j = 0; j < dim; j++) ca[j] += in->secs[idx[k]] * sig[(size_t)idx[k] * dim + j];
    int a = 0, b = 0;
    for (int k = 1; k < m; k++)
        if (dot(sig + (size_t)idx[k] * dim, ca, dim) < dot(sig + (size_t)idx[a] * dim, ca, dim))
            a = k;
    const double *va = sig + (size_t)idx[a] * dim;
    for (int k = 1; k < m; k++)
        if (dot(sig + (size_t)idx[k] * dim, va, dim) < dot(sig + (size_t)idx[b] * dim, va, dim))
            b = k;
    if (a == b) return 0;
    memcpy(ca, va, (size_t)dim * sizeof *ca);
    memcpy(cb, sig + (size_t)idx[b] * dim, (size_t)dim * sizeof *cb);
    memset(prev, 2, (size_t)m); /* no assignment yet */
    for (int step = 0; step < 20; step++) {
        int ones = 0, same = 1;
        for (int k = 0; k < m; k++) {
            const double *x = sig + (size_t)idx[k] * dim;
            side[k] = dot(x, ca, dim) < dot(x, cb, dim);
            ones += side[k];
            same &= side[k] == prev[k];
        }
        if (ones == 0 || ones == m) return 0;
        if (same) break;
        memcpy(prev, side, (size_t)m);
        memset(ca, 0, (size_t)dim * sizeof *ca);
        memset(cb, 0, (size_t)dim * sizeof *cb);
        for (int k = 0; k < m; k++) {
            double *c = side[k] ? cb : ca;
            for (int j = 0; j < dim; j++) c[j] += in->secs[idx[k]] * sig[(size_t)idx[k] * dim + j];
        }
        if (!normalise(ca, dim) || !normalise(cb, dim)) return 0;
    }
    memcpy(side, prev, (size_t)m);
    double sa = 0, sb = 0;
    for (int k = 0; k < m; k++) *(side[k] ? &sb : &sa) += in->secs[idx[k]];
    return cosine(ca, cb, dim) < HV_SPLIT_COSINE && fmin(sa, sb) >= HV_SPLIT_MIN_S;
}

hv_status hv_speaker_regroup(const hv_regroup_in *in, int *label, int *next_label, hv_error *e) {
    int n = in->n, dim = in->dim;
    if (n <= 0 || dim <= 0 || !(in->threshold < 1)) return HV_OK;
    /* at most n labels, and as many new ones */
    int *ids = malloc((size_t)2 * n * sizeof *ids), *idx = malloc((size_t)n * sizeof *idx);
    int *moved = malloc((size_t)n * sizeof *moved);
    unsigned char *side = malloc((size_t)n), *prev = malloc((size_t)n);
    unsigned char *voiced = malloc((size_t)2 * n);
    double *cen = malloc((size_t)2 * n * dim * sizeof *cen);
    double *tmp = malloc((size_t)2 * dim * sizeof *tmp);
    if (!ids || !idx || !moved || !side || !prev || !voiced || !cen || !tmp) {
        free(ids), free(idx), free(moved), free(side), free(prev), free(voiced), free(cen),
            free(tmp);
        return hv_err(e, HV_ERR_NOMEM, "out of memory regrouping speaker labels");
    }
    /* 1. split */
    int n_ids = distinct_labels(label, n, ids);
    for (int l = 0; l < n_ids; l++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (label[i] == ids[l] && in->has[i]) idx[m++] = i;
        if (m < 2 || !split_label(in, idx, m, side, prev, tmp, tmp + dim)) continue;
        for (int k = 0; k < m; k++)
            if (side[k]) label[idx[k]] = *next_label;
        ++*next_label;
    }
    /* 2. move */
    for (int round = 0; round < HV_REGROUP_ROUNDS; round++) {
        n_ids = distinct_labels(label, n, ids);
        regroup_centroids(in, label, ids, n_ids, cen, voiced);
        int changed = 0;
        for (int i = 0; i < n; i++) {
            moved[i] = label[i];
            if (!in->has[i] || label[i] < 0) continue;
            const double *x = in->sig + (size_t)i * dim;
            int own = 0;
            while (ids[own] != label[i]) own++;
            for (int j = 0; j < dim; j++) tmp[j] = cen[(size_t)own * dim + j] - in->secs[i] * x[j];
            int to = claim(cen, voiced, n_ids, dim, own, cosine(tmp, x, dim), x, in->threshold);
            if (to >= 0) {
                moved[i] = ids[to];
                changed = 1;
            }
        }
        if (!changed) break;
        memcpy(label, moved, (size_t)n * sizeof *label);
    }
    /* 3. merge */
    double merge = 1 - (1 - in->threshold) / HV_HEAL_SHARED_STRICTNESS;
    for (;;) {
        n_ids = distinct_labels(label, n, ids);
        regroup_centroids(in, label, ids, n_ids, cen, voiced);
        int ba = -1, bb = -1;
        double best = merge;
        for (int a = 0; a < n_ids; a++)
            for (int b = a + 1; b < n_ids; b++) {
                if (!voiced[a] || !voiced[b]) continue;
                double c = cosine(cen + (size_t)a * dim, cen + (size_t)b * dim, dim);
                if (c > best) best = c, ba = a, bb = b;
            }
        if (ba < 0) break;
        for (int i = 0; i < n; i++)
            if (label[i] == ids[bb]) label[i] = ids[ba];
    }
    free(ids), free(idx), free(moved), free(side), free(prev), free(voiced), free(cen), free(tmp);
    return HV_OK;
}
