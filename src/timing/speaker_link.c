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
        double c_own = cosine(sum + (size_t)own * dim, x, dim), best = -1;
        int to = -1;
        for (int g = 0; g < n_labels; g++) {
            if (g == own || !voiced[g]) continue;
            double c = cosine(sum + (size_t)g * dim, x, dim);
            if (c > best) best = c, to = g;
        }
        if (to >= 0 && best > in->threshold &&
            (c_own <= in->threshold || best >= c_own + VOICE_MARGIN))
            label[t] = to;
    }
    free(sum), free(voiced);
    return HV_OK;
}
