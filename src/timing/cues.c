/*
 * Cues: timed words grouped into sentence-sized segments a person reads
 * at once (see hviske.h and docs/CLI.md "Subtitles"). A dynamic program
 * over the cut points finds the cheapest grouping within the limits; the
 * lines of each cue are then broken where they come out most even.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"

hv_cue_params hv_cue_default_params(void) {
    hv_cue_params p = {.size = sizeof p,
                       .max_seconds = 7.0,
                       .max_lines = 2,
                       .max_line_chars = 42,
                       .max_cps = 17.0,
                       .min_seconds = 5.0 / 6.0,
                       .min_gap = 0.08};
    return p;
}

/* The cost model of hv_cues_build (in arbitrary units; see hviske.h
 * and docs/CLI.md "Subtitles"). With q = sqrt(pause / PAUSE_FULL_MS) for
 * the pause before the next word (1 from PAUSE_FULL_MS on), a cut costs
 * CUT_SENTENCE - q after a sentence end (a reward), CUT_CLAUSE * (1 - q)
 * after clause punctuation and CUT_WORD * (1 - q) elsewhere. A cue costs
 * CUE_COST; CUE_FILL * (how full it is, of its characters or of its
 * seconds)^2, so that forced cuts split evenly; when it lasts less than
 * CUE_SHORT_MS (5/6 s, the usual shortest subtitle), CUE_SHORT_BASE plus
 * CUE_SHORT * the part of CUE_SHORT_MS it falls short; CUE_ORPHAN when it
 * is one word that is not a whole sentence; CUE_MIXED when it ends a
 * sentence and then starts one that it does not finish. */
#define CUT_SENTENCE   (-1.0)
#define CUT_CLAUSE     1.0
#define CUT_WORD       3.0
#define PAUSE_FULL_MS  1000
#define CUE_COST       0.3
#define CUE_FILL       1.0
#define CUE_SHORT_BASE 1.0
#define CUE_SHORT      2.0
#define CUE_SHORT_MS   833
#define CUE_ORPHAN     3.0
#define CUE_MIXED      2.0
/* Line breaks: the lines' (length / max_line_chars)^2, less these for a
 * break after a sentence end or clause punctuation. */
#define LINE_SENTENCE  0.3
#define LINE_CLAUSE    0.15

#define MAX_TIME_MS ((int64_t)1000000000000) /* 1e9 s */

enum { P_NONE, P_CLAUSE, P_SENTENCE };

/* A word with text, ready for grouping; or a piece of one, where the
 * cleaned text of a word has spaces inside (line breaks may fall between
 * the pieces, cuts between cues may not). */
typedef struct cue_word {
    char *buf;        /* the word's cleaned text, owned by its first piece */
    const char *text; /* cleaned, one line, no spaces, not empty ... */
    size_t len;       /* ... of len bytes (not NUL-terminated) */
    int chars;        /* code points */
    int index;        /* in the input */
    int punct;        /* P_* of its end */
    int64_t s, e;     /* ms, sanitized */
    int64_t gap;      /* ms of silence before the next word (0 for the last) */
    int forced_cut;   /* the gap is a long pause: a cue ends after it */
} cue_word;

/* The code point ending at text[end] (exclusive) and where it starts. */
static unsigned last_code_point(const char *text, size_t end, size_t *start) {
    const unsigned char *t = (const unsigned char *)text;
    size_t b = end;
    while (b > 0 && (t[b - 1] & 0xC0) == 0x80 && end - b < 3) b--;
    if (b > 0) b--;
    *start = b;
    unsigned c = t[b];
    size_t len = end - b;
    if (len == 1 || c < 0x80) return c;
    unsigned cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i < len; i++) cp = (cp << 6) | (t[b + i] & 0x3F);
    return cp;
}

/* What the text ends with, after closing quotes and brackets. */
static int word_punct(const char *text, size_t len) {
    while (len > 0) {
        size_t b;
        unsigned cp = last_code_point(text, len, &b);
        switch (cp) {
            case '"':
            case '\'':
            case ')':
            case ']':
            case '}':
            case 0x00BB: /* » */
            case 0x2019: /* ’ */
            case 0x201D: /* ” */
            case 0x203A: /* › */
            case 0x300D: /* 」 */
            case 0x300F: /* 』 */
            case 0xFF09: /* ） */ len = b; continue;
            case '.':
            case '?':
            case '!':
            case 0x2026: /* … */
            case 0x203C: /* ‼ */
            case 0x3002: /* 。 */
            case 0xFF01: /* ！ */
            case 0xFF0E: /* ． */
            case 0xFF1F: /* ？ */ return P_SENTENCE;
            case ',':
            case ';':
            case ':':
            case 0x2013: /* – */
            case 0x2014: /* — */
            case 0x3001: /* 、 */
            case 0xFF0C: /* ， */
            case 0xFF1A: /* ： */
            case 0xFF1B: /* ； */ return P_CLAUSE;
            default: return P_NONE;
        }
    }
    return P_NONE;
}

/* Cleans a word's text in place (it is valid UTF-8): control characters
 * and line breaks become spaces, runs of spaces one, no spaces at either
 * end. Returns the new length. */
static size_t word_normalize(char *t) {
    size_t r = 0, w = 0;
    int space = 1; /* at the start, or after a space: drop further ones */
    while (t[r]) {
        unsigned char c = (unsigned char)t[r];
        size_t skip = 0;
        if (c < 0x20 || c == 0x7F || c == ' ')
            skip = 1;
        else if (c == 0xC2 && (unsigned char)t[r + 1] == 0x85)
            skip = 2; /* U+0085 */
        else if (c == 0xE2 && (unsigned char)t[r + 1] == 0x80 &&
                 ((unsigned char)t[r + 2] == 0xA8 || (unsigned char)t[r + 2] == 0xA9))
            skip = 3; /* U+2028, U+2029 */
        if (skip) {
            if (!space) t[w++] = ' ';
            space = 1;
            r += skip;
        } else {
            t[w++] = t[r++];
            space = 0;
        }
    }
    if (w > 0 && t[w - 1] == ' ') w--;
    t[w] = '\0';
    return w;
}

static int utf8_chars(const char *t, size_t len) {
    int n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)t[i] & 0xC0) != 0x80;
    return n;
}

/* Seconds to whole milliseconds in [0, MAX_TIME_MS]; -1 for NaN or an
 * infinity (no time). */
static int64_t time_ms(double t) {
    if (!isfinite(t)) return -1;
    if (t <= 0) return 0;
    if (t >= 1e9) return MAX_TIME_MS;
    return (int64_t)llround(t * 1000.0);
}

static double clamp_d(double v, double lo, double hi, double dflt) {
    return isnan(v) ? dflt : v < lo ? lo : v > hi ? hi : v;
}

static int clamp_i(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The words with text, cleaned, with sane times; NULL when out of memory
 * (*m 0 and a non-NULL result when there are none). */
static void free_words(cue_word *cw, int m) {
    for (int k = 0; k < m; k++) free(cw[k].buf);
    free(cw);
}

static cue_word *prepare_words(const hv_word *words, int n, int *m) {
    *m = 0;
    size_t cap = (size_t)(n > 0 ? n : 1);
    cue_word *cw = malloc(cap * sizeof *cw);
    if (!cw) return NULL;
    int64_t prev_s = 0, prev_e = 0;
    for (int i = 0; i < n; i++) {
        if (!words[i].text) continue;
        char *t = hv_utf8_clean(words[i].text);
        if (!t) goto fail;
        size_t len = word_normalize(t);
        if (len == 0) {
            free(t);
            continue;
        }
        int64_t s = time_ms(words[i].start), e = time_ms(words[i].end);
        if (s < 0) s = e;
        if (s < 0) s = prev_e;
        if (e < 0) e = s;
        if (s < prev_s) s = prev_s;
        if (e < s) e = s;
        prev_s = s;
        if (e > prev_e) prev_e = e;
        /* one piece per run of non-spaces */
        for (size_t a = 0; a < len;) {
            size_t b = a;
            while (b < len && t[b] != ' ') b++;
            if ((size_t)*m == cap) {
                cue_word *g = cap < INT_MAX / 2 ? realloc(cw, 2 * cap * sizeof *cw) : NULL;
                if (!g) {
                    if (a == 0) free(t);
                    goto fail;
                }
                cw = g;
                cap *= 2;
            }
            cue_word *w = &cw[(*m)++];
            w->buf = a == 0 ? t : NULL;
            w->text = t + a;
            w->len = b - a;
            w->chars = utf8_chars(w->text, w->len);
            w->index = i;
            w->punct = word_punct(w->text, w->len);
            w->s = s;
            w->e = e;
            w->gap = 0;
            w->forced_cut = 0;
            a = b + 1;
        }
    }
    /* silence before each next word: after the latest end so far */
    int64_t emax = 0;
    for (int k = 0; k + 1 < *m; k++) {
        if (cw[k].e > emax) emax = cw[k].e;
        int64_t g = cw[k + 1].s - emax;
        cw[k].gap = g > 0 ? g : 0;
        cw[k].forced_cut = cw[k].gap > HV_CUE_LONG_PAUSE_MS;
    }
    return cw;
fail:
    free_words(cw, *m);
    *m = 0;
    return NULL;
}

/* A cue of w[i..j-1]: may it end a sentence or start one here? */
static int starts_clean(const cue_word *w, int i) {
    return i == 0 || w[i - 1].forced_cut || w[i - 1].punct == P_SENTENCE;
}
static int ends_clean(const cue_word *w, int j, int m) {
    return j == m || w[j - 1].forced_cut || w[j - 1].punct == P_SENTENCE;
}

/* Adds a word of `chars` at the front of a cue whose lines are filled
 * greedily from the end (the fewest lines for those words): *lines in
 * use, *cur the characters on the first of them (0: a new word starts a
 * new line). */
static void wrap_front(int chars, int width, int *lines, int *cur) {
    if (chars > width) {
        ++*lines;
        *cur = 0;
    } else if (*cur > 0 && *cur + 1 + chars <= width) {
        *cur += 1 + chars;
    } else {
        ++*lines;
        *cur = chars;
    }
}

/* The text of w[i..j-1] in as few lines as fit, the breaks chosen to make
 * the lines even (preferring breaks after punctuation); malloc'ed, NULL
 * when out of memory. */
static char *cue_text(const cue_word *w, int i, int j, int width) {
    int c = j - i;
    /* the fewest lines: greedy from the front */
    int k = 0, cur = 0;
    size_t bytes = 1;
    for (int t = i; t < j; t++) {
        bytes += w[t].len + 1;
        if (w[t].chars > width) {
            k++;
            cur = 0;
        } else if (cur > 0 && cur + 1 + w[t].chars <= width) {
            cur += 1 + w[t].chars;
        } else {
            k++;
            cur = w[t].chars;
        }
    }
    char *out = malloc(bytes), *o = out;
    /* brk[t] = 1: a line break after word i + t */
    unsigned char *brk = calloc((size_t)c, 1);
    double *f = NULL;
    int *from = NULL;
    if (!out || !brk) goto fail;
    if (k > 1) {
        /* f[l * (c + 1) + t]: the least cost of words 0..t-1 in l lines;
         * from[]: where its last line starts */
        size_t cells = (size_t)(k + 1) * (size_t)(c + 1);
        f = malloc(cells * sizeof *f);
        from = malloc(cells * sizeof *from);
        if (!f || !from) goto fail;
        for (size_t x = 0; x < cells; x++) f[x] = INFINITY, from[x] = -1;
        f[0] = 0;
        for (int l = 1; l <= k; l++) {
            for (int t = 1; t <= c; t++) {
                double *best = &f[(size_t)l * (size_t)(c + 1) + (size_t)t];
                int len = -1;
                for (int u = t - 1; u >= 0; u--) { /* last line: words u..t-1 */
                    len += 1 + w[i + u].chars;
                    if (len > width && u < t - 1) break;
                    double prev = f[(size_t)(l - 1) * (size_t)(c + 1) + (size_t)u];
                    if (prev == INFINITY || (u == 0) != (l == 1)) continue;
                    double x = (double)len / width;
                    double cost = prev + x * x;
                    if (u > 0) {
                        int p = w[i + u - 1].punct;
                        cost -= p == P_SENTENCE ? LINE_SENTENCE : p == P_CLAUSE ? LINE_CLAUSE : 0;
                    }
                    if (cost < *best) {
                        *best = cost;
                        from[(size_t)l * (size_t)(c + 1) + (size_t)t] = u;
                    }
                }
            }
        }
        for (int l = k, t = c; l > 1; l--) {
            int u = from[(size_t)l * (size_t)(c + 1) + (size_t)t];
            if (u <= 0) goto fail; /* cannot happen: k lines always fit */
            brk[u - 1] = 1;
            t = u;
        }
    }
    for (int t = 0; t < c; t++) {
        memcpy(o, w[i + t].text, w[i + t].len);
        o += w[i + t].len;
        if (t + 1 < c) *o++ = brk[t] ? '\n' : ' ';
    }
    *o = '\0';
    free(brk);
    free(f);
    free(from);
    return out;
fail:
    free(out);
    free(brk);
    free(f);
    free(from);
    return NULL;
}

/* Code points of a cue's text, its line breaks counted as the spaces
 * they stand for. */
static int text_chars(const char *t) {
    int n = 0;
    for (const unsigned char *q = (const unsigned char *)t; *q; q++) n += (*q & 0xC0) != 0x80;
    return n;
}

/* Readable cues (docs/CLI.md "Subtitles"): a cue [st, en) (ms) whose
 * characters go by faster than max_cps, or that is shorter than
 * min_seconds, is shown on into the silence after its last word, as far
 * as that takes but never past max_seconds from its start nor closer
 * than min_gap to the next cue; a gap shorter than min_gap that is left
 * between two cues is closed (where the cue then lasts at most
 * max_seconds). */
static void extend_for_reading(const hv_cue *cues, const int64_t *st, int64_t *en, int nc,
                               const hv_cue_params *lim) {
    const int64_t gap = llround(lim->min_gap * 1000.0), min_ms = llround(lim->min_seconds * 1000.0);
    const int64_t max_ms = llround(lim->max_seconds * 1000.0);
    for (int k = 0; k < nc; k++) {
        int64_t next = k + 1 < nc ? st[k + 1] : INT64_MAX;
        int64_t want = en[k];
        if (lim->max_cps > 0) {
            int64_t read = (int64_t)ceil(text_chars(cues[k].text) * 1000.0 / lim->max_cps);
            if (st[k] + read > want) want = st[k] + read;
        }
        if (st[k] + min_ms > want) want = st[k] + min_ms;
        if (want > st[k] + max_ms) want = st[k] + max_ms;
        if (next != INT64_MAX && want > next - gap) want = next - gap;
        if (want > en[k]) en[k] = want;
        if (next != INT64_MAX && next - en[k] > 0 && next - en[k] < gap && next - st[k] <= max_ms)
            en[k] = next;
    }
}

void hv_cues_free(hv_cue *cues, int n) {
    if (!cues) return;
    for (int i = 0; i < n; i++) free(cues[i].text);
    free(cues);
}

hv_status hv_cues_build(const hv_word *words, int n, const hv_cue_params *p, hv_cue **out,
                        int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (p && p->size != sizeof *p) return HV_ERR_INVALID_ARG;
    if (!words || n <= 0) return HV_OK;
    hv_cue_params d = hv_cue_default_params(), lim = p ? *p : d;
    lim.max_seconds =
        clamp_d(lim.max_seconds, HV_CUE_MAX_SECONDS_MIN, HV_CUE_MAX_SECONDS_MAX, d.max_seconds);
    lim.max_lines = clamp_i(lim.max_lines, HV_CUE_MAX_LINES_MIN, HV_CUE_MAX_LINES_MAX);
    lim.max_line_chars = clamp_i(lim.max_line_chars, HV_CUE_LINE_CHARS_MIN, HV_CUE_LINE_CHARS_MAX);
    lim.max_cps = clamp_d(lim.max_cps, 0, HV_CUE_MAX_CPS_MAX, d.max_cps);
    lim.min_seconds = clamp_d(lim.min_seconds, 0, HV_CUE_MIN_SECONDS_MAX, d.min_seconds);
    lim.min_gap = clamp_d(lim.min_gap, 0, HV_CUE_MIN_GAP_MAX, d.min_gap);
    const int64_t max_ms = (int64_t)llround(lim.max_seconds * 1000.0);
    const int width = lim.max_line_chars, max_lines = lim.max_lines;
    const double capacity = (double)width * max_lines;

    int m = 0, nc = 0;
    hv_status rc = HV_ERR_NOMEM;
    cue_word *w = prepare_words(words, n, &m);
    double *best = NULL;
    int *prev = NULL, *cut = NULL;
    int64_t *st = NULL, *en = NULL; /* the cues' times, ms */
    hv_cue *cues = NULL;
    if (!w) return HV_ERR_NOMEM;
    if (m == 0) {
        free(w);
        return HV_OK;
    }
    best = malloc(((size_t)m + 1) * sizeof *best);
    prev = malloc(((size_t)m + 1) * sizeof *prev);
    if (!best || !prev) goto done;

    /* best[j]: the least cost of w[0..j-1] in cues; prev[j]: where the
     * last of those cues starts. Every cue is tried from its end back to
     * its start, as long as it keeps the limits (they only get harder). */
    best[0] = 0;
    for (int j = 1; j <= m; j++) {
        best[j] = INFINITY;
        prev[j] = j - 1;
        if (j < m && w[j].index == w[j - 1].index) continue; /* inside a word */
        double cut_cost = 0;                                 /* of the cut after w[j-1] */
        if (j < m && !w[j - 1].forced_cut) {
            int64_t gap = w[j - 1].gap < PAUSE_FULL_MS ? w[j - 1].gap : PAUSE_FULL_MS;
            double q = sqrt((double)gap / PAUSE_FULL_MS);
            int pu = w[j - 1].punct;
            cut_cost = pu == P_SENTENCE ? CUT_SENTENCE - q
                       : pu == P_CLAUSE ? CUT_CLAUSE * (1 - q)
                                        : CUT_WORD * (1 - q);
        }
        int lines = 0, cur = 0, chars = -1, inner_sentence = 0;
        int64_t emax = 0;
        for (int i = j - 1; i >= 0; i--) {
            if (i < j - 1 && w[i].forced_cut) break;
            wrap_front(w[i].chars, width, &lines, &cur);
            chars += 1 + w[i].chars;
            if (w[i].e > emax) emax = w[i].e;
            if (i < j - 1 && w[i].punct == P_SENTENCE) inner_sentence = 1;
            int64_t dur = emax - w[i].s;
            int one = w[i].index == w[j - 1].index; /* one word (perhaps in pieces) */
            if (!one && (lines > max_lines || dur > max_ms)) break;
            if (best[i] == INFINITY) continue; /* i is inside a word */
            double fill = (double)chars / capacity, tf = (double)dur / (double)max_ms;
            if (tf > fill) fill = tf;
            double cost = best[i] + cut_cost + CUE_COST + CUE_FILL * fill * fill;
            if (dur < CUE_SHORT_MS)
                cost += CUE_SHORT_BASE + CUE_SHORT * (double)(CUE_SHORT_MS - dur) / CUE_SHORT_MS;
            if (one && !(starts_clean(w, i) && ends_clean(w, j, m))) cost += CUE_ORPHAN;
            if (inner_sentence && w[j - 1].punct != P_SENTENCE) cost += CUE_MIXED;
            if (cost <= best[j]) {
                best[j] = cost;
                prev[j] = i;
            }
        }
    }

    /* the cuts, front to back */
    cut = malloc(((size_t)m + 1) * sizeof *cut);
    if (!cut) goto done;
    for (int j = m; j > 0; j = prev[j]) nc++;
    for (int j = m, k = nc; j > 0; j = prev[j]) cut[k--] = j;
    cut[0] = 0;
    cues = calloc((size_t)nc, sizeof *cues);
    if (!cues) goto done;
    st = malloc((size_t)nc * 2 * sizeof *st);
    if (!st) goto done;
    en = st + nc;
    for (int k = 0; k < nc; k++) {
        int i = cut[k], j = cut[k + 1];
        cues[k].text = cue_text(w, i, j, width);
        if (!cues[k].text) goto done;
        cues[k].first_word = w[i].index;
        cues[k].n_words = w[j - 1].index - w[i].index + 1;
        const hv_word *w0 = &words[cues[k].first_word];
        const hv_word *w1 = &words[cues[k].first_word + cues[k].n_words - 1];
        cues[k].first_token = w0->first_token;
        cues[k].n_tokens = w1->first_token + w1->n_tokens - w0->first_token;
        st[k] = w[i].s;
        en[k] = w[i].e;
        for (int t = i + 1; t < j; t++)
            if (w[t].e > en[k]) en[k] = w[t].e;
        if (k > 0 && st[k] <= st[k - 1]) st[k] = st[k - 1] + 1;
    }
    for (int k = 0; k < nc; k++) {
        int64_t next = k + 1 < nc ? st[k + 1] : INT64_MAX;
        if (en[k] > next) en[k] = next;
        if (en[k] <= st[k])
            en[k] = next - st[k] < HV_CUE_MIN_SHOW_MS ? next : st[k] + HV_CUE_MIN_SHOW_MS;
    }
    extend_for_reading(cues, st, en, nc, &lim);
    for (int k = 0; k < nc; k++) {
        cues[k].start = (double)st[k] / 1000.0;
        cues[k].end = (double)en[k] / 1000.0;
    }
    rc = HV_OK;
done:
    free_words(w, m);
    free(best);
    free(prev);
    free(cut);
    free(st);
    if (rc == HV_OK) {
        *out = cues;
        *n_out = nc;
    } else {
        hv_cues_free(cues, nc);
    }
    return rc;
}

hv_status hv_segment_cues(const hv_segment *seg, const hv_cue_params *p, hv_cue **out, int *n_out) {
    *out = NULL;
    *n_out = 0;
    if (p && p->size != sizeof *p) return HV_ERR_INVALID_ARG;
    if (seg->n_words > 0) {
        hv_status st = hv_cues_build(seg->words, seg->n_words, p, out, n_out);
        /* a cue shown longer than its words (HV_CUE_MIN_SHOW_MS) ends with
         * the chunk at the latest, so that segments lie inside chunks */
        double end = floor(seg->end * 1e3) / 1e3;
        for (int k = 0; st == HV_OK && k < *n_out; k++)
            if ((*out)[k].end > end && end > (*out)[k].start) (*out)[k].end = end;
        return st;
    }
    /* one cue of the whole segment, its text on one line */
    hv_cue *c = calloc(1, sizeof *c);
    char *text = c ? hv_utf8_clean(seg->text ? seg->text : "") : NULL;
    if (!text) {
        free(c);
        return HV_ERR_NOMEM;
    }
    for (char *q = text; *q; q++)
        if (*q == '\n' || *q == '\r') *q = ' ';
    c->start = round(seg->start * 1e3) / 1e3;
    c->end = round(seg->end * 1e3) / 1e3;
    c->first_token = seg->first_token;
    c->n_tokens = seg->n_tokens;
    c->text = text;
    *out = c;
    *n_out = 1;
    return HV_OK;
}
