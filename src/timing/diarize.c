/* The diarize model's token stream into speaker segments (diarize.h). */
#include "timing/diarize.h"

#include <stdlib.h>
#include <string.h>

/* "<|" prefix digits [. digits] "|>" exactly: its number in *v. Parsed by
 * hand so that the C locale's decimal point plays no part. */
static int parse_number_piece(const char *s, const char *prefix, int allow_frac, double *v) {
    size_t np = strlen(prefix);
    if (strncmp(s, prefix, np) != 0) return 0;
    s += np;
    double x = 0, scale = 1;
    int digits = 0, frac = 0;
    for (;; s++) {
        if (*s >= '0' && *s <= '9') {
            if (digits++ > 6) return 0;
            if (frac)
                x += (scale /= 10) * (*s - '0');
            else
                x = x * 10 + (*s - '0');
        } else if (*s == '.' && allow_frac && !frac && digits) {
            frac = 1;
        } else {
            break;
        }
    }
    if (!digits || s[-1] == '.' || strcmp(s, "|>") != 0) return 0;
    *v = x;
    return 1;
}

hv_diar_tok hv_diarize_classify(const hv_tokenizer *t, int32_t id) {
    hv_diar_tok k = {HV_DIAR_TEXT, 1, 0};
    if (id < 0 || id >= t->n_pieces) return k;
    const char *p = t->pieces[id];
    double v;
    if (parse_number_piece(p, "<|spltoken", 0, &v) && v < HV_DIAR_SPEAKERS) {
        k.kind = HV_DIAR_SPEAKER;
        k.value = (float)v;
    } else if (parse_number_piece(p, "<|t:", 1, &v)) {
        k.kind = HV_DIAR_TIME;
        k.value = (float)v;
    } else if (t->types[id] == HV_PIECE_BYTE) {
        k.word_start = 0;
    } else if (t->types[id] == HV_PIECE_NORMAL) {
        k.word_start = strncmp(p, "\xe2\x96\x81", 3) == 0; /* U+2581 */
    }
    return k;
}

const char *hv_diarize_missing_piece(const hv_tokenizer *t) {
    static const char *const need[] = {"<|timestamp|>", "<|diarize|>", "<|spltoken0|>",
                                       "<|t:0.0|>"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (hv_tokenizer_find(t, need[i]) < 0) return need[i];
    return NULL;
}

void hv_diar_free(hv_diar *d) {
    if (!d) return;
    free(d->segs);
    free(d->pos);
    memset(d, 0, sizeof *d);
}

/* Word-continuing pieces at the start of a segment join the one before. */
static void join_split_words(hv_diar *d, const hv_diar_tok *toks) {
    for (int k = 1; k < d->n_segs; k++) {
        hv_diar_seg *s = &d->segs[k];
        int m = 0;
        while (m < s->n && !toks[d->pos[s->first + m]].word_start) m++;
        if (!m) continue;
        d->segs[k - 1].n += m;
        d->segs[k - 1].repairs |= HV_DIAR_MID_WORD;
        s->first += m;
        s->n -= m;
        if (s->n == 0) {
            memmove(s, s + 1, (size_t)(d->n_segs - k - 1) * sizeof *s);
            d->n_segs--;
            k--;
        }
    }
}

/* Missing ends from the next known time, missing starts from the previous
 * end; times are non-decreasing in stream order, so start <= end holds. */
static void fill_times(hv_diar *d, float window) {
    for (int k = 0; k < d->n_segs; k++) {
        hv_diar_seg *s = &d->segs[k];
        if (s->repairs & HV_DIAR_NO_START) s->start = k ? d->segs[k - 1].end : 0;
        if (!(s->repairs & HV_DIAR_NO_END)) continue;
        s->end = window;
        for (int j = k + 1; j < d->n_segs; j++) {
            const hv_diar_seg *o = &d->segs[j];
            if (!(o->repairs & HV_DIAR_NO_START)) {
                s->end = o->start;
                break;
            }
            if (!(o->repairs & HV_DIAR_NO_END)) {
                s->end = o->end;
                break;
            }
        }
        if (s->end < s->start) s->end = s->start;
    }
}

hv_status hv_diarize_parse(const hv_diar_tok *toks, int n, float window, hv_diar *out,
                           hv_error *e) {
    memset(out, 0, sizeof *out);
    if (n <= 0) return HV_OK;
    out->segs = malloc((size_t)n * sizeof *out->segs);
    out->pos = malloc((size_t)n * sizeof *out->pos);
    if (!out->segs || !out->pos) {
        hv_diar_free(out);
        return hv_err(e, HV_ERR_NOMEM, "out of memory parsing %d diarize tokens", n);
    }
    if (window < 0) window = 0;
    int speaker = -1, first_speaker = -1, cur = -1, has_pending = 0;
    float last = 0, pending = 0;
    unsigned pending_rep = 0;
    for (int i = 0; i < n; i++) {
        const hv_diar_tok *k = &toks[i];
        if (k->kind == HV_DIAR_TIME) {
            float v = k->value;
            unsigned rep = 0;
            if (v > window) v = window, rep |= HV_DIAR_PAST_END;
            if (v < last) v = last, rep |= HV_DIAR_BACKWARDS;
            last = v;
            if (cur >= 0) { /* after text: the end */
                out->segs[cur].end = v;
                out->segs[cur].repairs = (out->segs[cur].repairs & ~(unsigned)HV_DIAR_NO_END) | rep;
                cur = -1;
            } else { /* before text: the start (the latest one wins) */
                pending = v;
                pending_rep = rep;
                has_pending = 1;
            }
        } else if (k->kind == HV_DIAR_SPEAKER) {
            cur = -1;        /* an open segment keeps NO_END */
            has_pending = 0; /* a start belongs to its own turn */
            pending_rep = 0;
            speaker = (int)k->value;
            if (first_speaker < 0) first_speaker = speaker;
        } else {
            if (cur < 0) {
                cur = out->n_segs++;
                hv_diar_seg *s = &out->segs[cur];
                s->speaker = speaker;
                s->start = has_pending ? pending : 0;
                s->end = 0;
                s->first = out->n_pos;
                s->n = 0;
                s->repairs = HV_DIAR_NO_END | (has_pending ? pending_rep : HV_DIAR_NO_START) |
                             (speaker < 0 ? HV_DIAR_NO_SPEAKER : 0);
                has_pending = 0;
                pending_rep = 0;
            }
            out->pos[out->n_pos++] = i;
            out->segs[cur].n++;
        }
    }
    for (int k = 0; k < out->n_segs && out->segs[k].speaker < 0; k++)
        out->segs[k].speaker = first_speaker;
    join_split_words(out, toks);
    fill_times(out, window);
    return HV_OK;
}

hv_status hv_diarize_parse_ids(const hv_tokenizer *t, const int32_t *ids, int n, float window,
                               hv_diar *out, hv_error *e) {
    memset(out, 0, sizeof *out);
    if (n <= 0) return HV_OK;
    hv_diar_tok *toks = malloc((size_t)n * sizeof *toks);
    if (!toks) return hv_err(e, HV_ERR_NOMEM, "out of memory parsing %d diarize tokens", n);
    for (int i = 0; i < n; i++) toks[i] = hv_diarize_classify(t, ids[i]);
    hv_status st = hv_diarize_parse(toks, n, window, out, e);
    free(toks);
    return st;
}
