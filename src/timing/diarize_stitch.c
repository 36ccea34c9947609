/* Diarize windows stitched into one transcript (diarize_stitch.h). */
#include "timing/diarize_stitch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timing/voice.h"

/* Two windows' copies of a word may lie this far apart: word times are
 * spread over their turn, whose ends the model writes to 0.1 s. */
#define LINK_TOL_S      1.5
/* Turns that share this much of the overlap link their speakers where no
 * word does. */
#define LINK_MIN_TIME_S 0.5
/* A normalised word longer than this is compared by its first bytes. */
#define WORD_MAX        64

typedef struct word {
    int seg;          /* its segment */
    int p0, np;       /* its text tokens: d.pos[p0 .. p0 + np) */
    double tw;        /* its time in the window */
    double t;         /* and on the input */
    int sentence_end; /* its text ends in '.', '?' or '!' */
    char text[WORD_MAX];
} word;

/* A sentence of a turn: words [w0, w1) of one segment, cut after each
 * word that ends a sentence; [start, end] in window seconds (the turn's
 * own ends outside, the middle between two words' times inside). */
typedef struct sentence {
    int seg, w0, w1;
    double start, end;
    int label; /* the recording's, merged; -1 none */
} sentence;

void hv_stitch_init(hv_stitch *s) {
    memset(s, 0, sizeof *s);
    s->window = -1;
    s->last_label = -1;
}

/* The overlap's words and turns freed (the labels and voices stay). */
static void drop_overlap(hv_stitch *s) {
    free(s->words);
    free(s->texts);
    free(s->turns);
    s->words = NULL;
    s->texts = NULL;
    s->turns = NULL;
    s->n_words = s->n_turns = 0;
}

void hv_stitch_free(hv_stitch *s) {
    drop_overlap(s);
    free(s->voice);
    free(s->voice_has);
    free(s->share);
    free(s->seg_voice);
    free(s->seg_secs);
    free(s->seg_has);
    s->voice = NULL;
    s->voice_has = NULL;
    s->share = NULL;
    s->seg_voice = NULL;
    s->seg_secs = NULL;
    s->seg_has = NULL;
    s->cap_voice = s->n_seg = s->cap_seg = 0;
}

void hv_stitched_free(hv_stitched *o) {
    free(o->segs);
    free(o->pos);
    free(o->keep);
    memset(o, 0, sizeof *o);
}

/* The words of d's segments, their times spread over the segment by the
 * byte lengths of their pieces (a piece's text is its share of the turn). */
static hv_status split_words(const hv_stitch_window *w, const hv_diar *d, const hv_diar_tok *toks,
                             word **out, int *n_out, hv_error *e) {
    word *ws = malloc((size_t)(d->n_pos ? d->n_pos : 1) * sizeof *ws);
    int32_t *ids = malloc((size_t)(d->n_pos ? d->n_pos : 1) * sizeof *ids);
    int n = 0;
    if (!ws || !ids) {
        free(ws);
        free(ids);
        return hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    }
    const hv_tokenizer *t = w->tok;
    for (int k = 0; k < d->n_segs; k++) {
        const hv_diar_seg *s = &d->segs[k];
        double total = 0, before = 0;
        int n0 = n;
        for (int j = 0; j < s->n;) {
            int j1 = j + 1;
            while (j1 < s->n && !toks[d->pos[s->first + j1]].word_start) j1++;
            double len = 0;
            for (int q = j; q < j1; q++) {
                int32_t id = ids[q - j] = w->ids[d->pos[s->first + q]];
                len += id >= 0 && id < t->n_pieces ? (double)strlen(t->pieces[id]) : 1;
            }
            word *x = &ws[n++];
            x->seg = k;
            x->p0 = s->first + j;
            x->np = j1 - j;
            x->t = len; /* its length until the turn's total is known */
            char *text = hv_tokenizer_decode(t, ids, j1 - j);
            if (!text) {
                free(ws);
                free(ids);
                return hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
            }
            hv_link_norm(text, x->text, sizeof x->text);
            size_t tl = strlen(text);
            while (tl > 0 && text[tl - 1] == ' ') tl--;
            x->sentence_end = tl > 0 && strchr(".?!", text[tl - 1]) != NULL;
            free(text);
            total += len;
            j = j1;
        }
        for (int i = n0; i < n; i++) {
            double len = ws[i].t, f = total > 0 ? (before + len / 2) / total : 0.5;
            ws[i].tw = s->start + (s->end - s->start) * f;
            ws[i].t = w->to_input(w->user, ws[i].tw, 0);
            before += len;
        }
    }
    free(ids);
    *out = ws;
    *n_out = n;
    return HV_OK;
}

/* d's turns inside [a, b] on the input, with their speakers through map
 * (map NULL: the window's own K), into *out (malloc'ed). */
static int clip_turns(const hv_stitch_window *w, const hv_diar *d, const int *map, double a,
                      double b, hv_link_turn **out, int *n_out) {
    hv_link_turn *t = malloc((size_t)(d->n_segs ? d->n_segs : 1) * sizeof *t);
    if (!t) return -1;
    int n = 0;
    for (int k = 0; k < d->n_segs; k++) {
        const hv_diar_seg *s = &d->segs[k];
        double s0 = fmax(w->to_input(w->user, s->start, 0), a);
        double s1 = fmin(w->to_input(w->user, s->end, 1), b);
        if (s1 <= s0 || s->speaker < 0) continue;
        t[n++] = (hv_link_turn){map ? map[s->speaker] : s->speaker, s0, s1};
    }
    *out = t;
    *n_out = n;
    return 0;
}

/* The voice signatures of w's speakers (voice.h): v->sig [N x dim],
 * bit K of v->has, v->secs[K] their turn seconds; none without a log-mel
 * or with rule 4 off. */
typedef struct voices {
    int dim;
    double *sig;
    unsigned has;
    double secs[HV_DIAR_SPEAKERS];
} voices;

static hv_status window_voices(const hv_stitch_window *w, const hv_diar *d, voices *v,
                               hv_error *e) {
    memset(v, 0, sizeof *v);
    if (!w->logmel || !(w->voice_threshold < 1)) return HV_OK;
    v->dim = hv_voice_dim(w->n_mels);
    v->sig = malloc((size_t)HV_DIAR_SPEAKERS * v->dim * sizeof *v->sig);
    hv_voice_span *spans = malloc((size_t)(d->n_segs ? d->n_segs : 1) * sizeof *spans);
    hv_status st =
        v->sig && spans ? HV_OK : hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    for (int k = 0; !st && k < HV_DIAR_SPEAKERS; k++) {
        int n = 0, has = 0;
        for (int i = 0; i < d->n_segs; i++)
            if (d->segs[i].speaker == k)
                spans[n++] = (hv_voice_span){d->segs[i].start, d->segs[i].end};
        if (!n) continue;
        st = hv_voice_signature(w->logmel, w->f0, w->n_frames, w->n_mels, w->frame_s, spans, n,
                                v->sig + (size_t)k * v->dim, &v->secs[k], &has, e);
        v->has |= (unsigned)has << k;
    }
    free(spans);
    return st;
}

/* s's voice tables grown to hold label l (new rows zero). */
static hv_status grow_voices(hv_stitch *s, int l, int dim, hv_error *e) {
    if (l < s->cap_voice) return HV_OK;
    int cap = l + 1 > 2 * s->cap_voice ? l + 1 : 2 * s->cap_voice;
    double *x = realloc(s->voice, (size_t)cap * dim * sizeof *x);
    if (x) s->voice = x;
    unsigned char *h = x ? realloc(s->voice_has, (size_t)cap) : NULL;
    if (!h) return hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    s->voice_has = h;
    memset(s->voice + (size_t)s->cap_voice * dim, 0,
           (size_t)(cap - s->cap_voice) * dim * sizeof *x);
    memset(s->voice_has + s->cap_voice, 0, (size_t)(cap - s->cap_voice));
    s->cap_voice = cap;
    return HV_OK;
}

/* The voices of the labels a window's speakers were given, as they were
 * before the window: linking, merging and rule 7 judge the window with its
 * speakers' voices learned, and once its sentences are labelled those are
 * put back and the sentences' own learned instead (sentence_labels). */
typedef struct voice_rows {
    int n, label[HV_DIAR_SPEAKERS];
    unsigned char had[HV_DIAR_SPEAKERS]; /* 1: the label had a signature */
    double *row;                         /* [HV_DIAR_SPEAKERS x dim] */
} voice_rows;

/* Each of w's speakers with a signature adds it, times its seconds, to
 * its label's (the rows it changes saved in old first), and the labels of
 * w are marked as sharing a window (s grows to hold the labels given). */
static hv_status learn_voices(hv_stitch *s, const voices *v, const int *map, voice_rows *old,
                              hv_error *e) {
    if (v->dim <= 0) return HV_OK;
    s->voice_dim = v->dim;
    if (!s->share && !(s->share = calloc((size_t)HV_HEAL_MAX_LABELS * HV_HEAL_MAX_LABELS, 1)))
        return hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    if (!(old->row = malloc((size_t)HV_DIAR_SPEAKERS * v->dim * sizeof *old->row)))
        return hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    for (int k = 0; k < HV_DIAR_SPEAKERS; k++) {
        int l = map[k];
        if (l < 0) continue;
        for (int j = 0; j < HV_DIAR_SPEAKERS; j++)
            if (l < HV_HEAL_MAX_LABELS && map[j] >= 0 && map[j] < HV_HEAL_MAX_LABELS)
                s->share[(size_t)l * HV_HEAL_MAX_LABELS + map[j]] = 1;
        if (!(v->has >> k & 1)) continue;
        hv_status st = grow_voices(s, l, v->dim, e);
        if (st) return st;
        int r = 0;
        while (r < old->n && old->label[r] != l) r++;
        if (r == old->n) {
            old->label[old->n++] = l;
            old->had[r] = s->voice_has[l];
            memcpy(old->row + (size_t)r * v->dim, s->voice + (size_t)l * v->dim,
                   (size_t)v->dim * sizeof *old->row);
        }
        for (int i = 0; i < v->dim; i++)
            s->voice[(size_t)l * v->dim + i] += v->secs[k] * v->sig[(size_t)k * v->dim + i];
        s->voice_has[l] = 1;
    }
    return HV_OK;
}

/* The labels of w's speakers (map[K]): linked to the window before, or new. */
static hv_status link_window(hv_stitch *s, const hv_stitch_window *w, const hv_diar *d,
                             const word *ws, int nw, const voices *v, int map[HV_DIAR_SPEAKERS],
                             hv_error *e) {
    int order[HV_DIAR_SPEAKERS], n_order = 0;
    unsigned seen = 0;
    /* speakers of its share first, so new labels follow the transcript */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nw; i++) {
            int k = d->segs[ws[i].seg].speaker;
            int in_share = ws[i].t >= w->lo && ws[i].t < w->hi;
            if (k < 0 || (seen >> k & 1) || in_share != !pass) continue;
            seen |= 1u << k;
            order[n_order++] = k;
        }
    int linked = s->window >= 0 && s->window == w->window - 1;
    double a = w->start, b = linked ? w->prev_end : w->start;
    hv_link_word *bw = malloc((size_t)(nw ? nw : 1) * sizeof *bw);
    hv_link_turn *bt = NULL;
    int nbw = 0, nbt = 0;
    if (!bw || clip_turns(w, d, NULL, a, b, &bt, &nbt)) {
        free(bw);
        return hv_err(e, HV_ERR_NOMEM, "out of memory linking speakers");
    }
    for (int i = 0; linked && i < nw; i++)
        if (ws[i].t >= a - LINK_TOL_S && ws[i].t <= b + LINK_TOL_S)
            bw[nbw++] = (hv_link_word){ws[i].text, ws[i].t, d->segs[ws[i].seg].speaker};
    hv_link_in in = {.a = linked ? s->words : NULL,
                     .na = linked ? s->n_words : 0,
                     .b = bw,
                     .nb = nbw,
                     .ta = linked ? s->turns : NULL,
                     .nta = linked ? s->n_turns : 0,
                     .tb = bt,
                     .ntb = linked ? nbt : 0,
                     .order = order,
                     .n_order = n_order,
                     .last_label = s->last_label,
                     .tol = LINK_TOL_S,
                     .min_time = LINK_MIN_TIME_S,
                     .voice_dim = v->dim,
                     .voice_b = v->sig,
                     .voice_b_has = v->has,
                     .voice_labels = s->voice,
                     .voice_label_has = s->voice_has,
                     .n_voice_labels = s->cap_voice,
                     .voice_threshold = w->voice_threshold};
    hv_link_how how[HV_DIAR_SPEAKERS];
    hv_status st = hv_speaker_link(&in, &s->next_label, map, how, e);
    free(bw);
    free(bt);
    return st;
}

/* The overlap after w, with its labels, handed to s. */
static hv_status hand_on(hv_stitch *s, const hv_stitch_window *w, const hv_diar *d, const word *ws,
                         int nw, const int *map, hv_error *e) {
    drop_overlap(s);
    s->window = w->window;
    if (w->next_start >= w->end) return HV_OK;
    if (!(s->words = malloc((size_t)(nw ? nw : 1) * sizeof *s->words)) ||
        !(s->texts = malloc((size_t)(nw ? nw : 1) * WORD_MAX)) ||
        clip_turns(w, d, map, w->next_start, w->end, &s->turns, &s->n_turns))
        return hv_err(e, HV_ERR_NOMEM, "out of memory linking speakers");
    for (int i = 0; i < nw; i++) {
        int k = d->segs[ws[i].seg].speaker;
        if (ws[i].t < w->next_start - LINK_TOL_S || k < 0) continue;
        char *text = s->texts + (size_t)s->n_words * WORD_MAX;
        memcpy(text, ws[i].text, strlen(ws[i].text) + 1);
        s->words[s->n_words++] = (hv_link_word){text, ws[i].t, map[k]};
    }
    return HV_OK;
}

/* What s knows of its labels' voices, for hv_speaker_heal and rule 7. */
static hv_heal_in heal_in(const hv_stitch *s, double threshold) {
    return (hv_heal_in){.n_labels = s->next_label < s->cap_voice ? s->next_label : s->cap_voice,
                        .dim = s->voice_dim,
                        .voice = s->voice,
                        .has = s->voice_has,
                        .share = s->share,
                        .share_stride = HV_HEAL_MAX_LABELS,
                        .threshold = threshold};
}

/* The own voice signatures (voice.h) of a window's turns or sentences:
 * sig [n x dim], their seconds, has 1 where one has one; all NULL without
 * a log-mel. */
typedef struct span_voices {
    double *sig, *secs;
    unsigned char *has;
} span_voices;

static void span_voices_free(span_voices *v) {
    free(v->sig);
    free(v->secs);
    free(v->has);
}

/* Each of d's turns' label, merged (group), then checked against the
 * turn's own voice (rule 7, hv_speaker_turn_voice): label[d->n_segs]; the
 * turns' signatures into tv (free them with span_voices_free). */
static hv_status turn_labels(const hv_stitch *s, const hv_stitch_window *w, const hv_diar *d,
                             const int *map, const int *group, int *label, span_voices *tv,
                             hv_error *e) {
    for (int k = 0; k < d->n_segs; k++) {
        int l = d->segs[k].speaker >= 0 ? map[d->segs[k].speaker] : -1;
        label[k] = l >= 0 && l < s->next_label ? group[l] : l;
    }
    int dim = s->voice_dim;
    if (!w->logmel || !(w->voice_threshold < 1) || dim <= 0 || d->n_segs == 0) return HV_OK;
    tv->sig = malloc((size_t)d->n_segs * dim * sizeof *tv->sig);
    tv->secs = calloc((size_t)d->n_segs, sizeof *tv->secs);
    tv->has = calloc((size_t)d->n_segs, 1);
    hv_status st = tv->sig && tv->secs && tv->has
                       ? HV_OK
                       : hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    for (int k = 0; !st && k < d->n_segs; k++) {
        hv_voice_span span = {d->segs[k].start, d->segs[k].end};
        int h = 0;
        if (label[k] >= 0)
            st = hv_voice_signature(w->logmel, w->f0, w->n_frames, w->n_mels, w->frame_s, &span, 1,
                                    tv->sig + (size_t)k * dim, &tv->secs[k], &h, e);
        tv->has[k] = (unsigned char)h;
    }
    if (!st) {
        hv_heal_in in = heal_in(s, w->voice_threshold);
        st = hv_speaker_turn_voice(&in, group, d->n_segs, tv->sig, tv->has, label, e);
    }
    return st;
}

/* The sentences of d's turns (ws[nw] their words) into *out, each with its
 * turn's label (label[seg]) checked against its own voice (rule 7 once
 * more, per sentence: a turn in which the model missed a change of
 * speaker; a sentence that is its whole turn has tv's signature), and the
 * window's voices learned from its sentences under those labels in place
 * of its speakers' under their tokens' (old: the rows as they were before
 * the window); the sentences' signatures into sv (free them with
 * span_voices_free; sv->sig NULL without voices). */
static hv_status sentence_labels(hv_stitch *s, const hv_stitch_window *w, const hv_diar *d,
                                 const word *ws, int nw, const int *group, const int *label,
                                 const span_voices *tv, const voice_rows *old, sentence **out,
                                 int *n_out, span_voices *sv, hv_error *e) {
    sentence *sn = malloc((size_t)(nw ? nw : 1) * sizeof *sn);
    if (!sn) return hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    int n = 0;
    unsigned char *whole = malloc((size_t)(nw ? nw : 1)); /* 1: the sentence is its turn */
    if (!whole) {
        free(sn);
        return hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    }
    for (int i = 0; i < nw;) {
        int k = ws[i].seg, i1 = i;
        while (i1 < nw && ws[i1].seg == k) i1++;
        for (int j = i; j < i1;) {
            int j1 = j;
            while (j1 < i1 - 1 && !ws[j1].sentence_end) j1++;
            j1++;
            sn[n++] = (sentence){.seg = k,
                                 .w0 = j,
                                 .w1 = j1,
                                 .start = j == i ? d->segs[k].start : (ws[j - 1].tw + ws[j].tw) / 2,
                                 .end = j1 == i1 ? d->segs[k].end : (ws[j1 - 1].tw + ws[j1].tw) / 2,
                                 .label = label[k]};
            whole[n - 1] = j == i && j1 == i1;
            j = j1;
        }
        i = i1;
    }
    *out = sn;
    *n_out = n;
    int dim = s->voice_dim;
    if (!w->logmel || !(w->voice_threshold < 1) || dim <= 0 || n == 0 || !tv->sig) {
        free(whole);
        return HV_OK;
    }
    double *sig = sv->sig = malloc((size_t)n * dim * sizeof *sig);
    double *secs = sv->secs = malloc((size_t)n * sizeof *secs);
    unsigned char *has = sv->has = calloc((size_t)n, 1);
    int *lab = malloc((size_t)n * sizeof *lab);
    hv_status st = sig && secs && has && lab
                       ? HV_OK
                       : hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    for (int i = 0; !st && i < n; i++) {
        hv_voice_span span = {sn[i].start, sn[i].end};
        int h = 0;
        lab[i] = sn[i].label;
        if (whole[i]) {
            int k = sn[i].seg;
            memcpy(sig + (size_t)i * dim, tv->sig + (size_t)k * dim, (size_t)dim * sizeof *sig);
            secs[i] = tv->secs[k];
            h = tv->has[k];
        } else if (lab[i] >= 0)
            st = hv_voice_signature(w->logmel, w->f0, w->n_frames, w->n_mels, w->frame_s, &span, 1,
                                    sig + (size_t)i * dim, &secs[i], &h, e);
        has[i] = (unsigned char)h;
    }
    if (!st) {
        hv_heal_in in = heal_in(s, w->voice_threshold);
        st = hv_speaker_turn_voice(&in, group, n, sig, has, lab, e);
    }
    /* the speakers' voices swapped for the rows as they were (learned
     * keeps the speakers' for labels that had none) */
    double *learned = st ? NULL : malloc((size_t)(old->n ? old->n : 1) * dim * sizeof *learned);
    if (!st && !learned) st = hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
    for (int r = 0; !st && r < old->n; r++) {
        double *row = s->voice + (size_t)old->label[r] * dim;
        memcpy(learned + (size_t)r * dim, row, (size_t)dim * sizeof *row);
        memcpy(row, old->row + (size_t)r * dim, (size_t)dim * sizeof *row);
        s->voice_has[old->label[r]] = old->had[r];
    }
    for (int i = 0; !st && i < n; i++) {
        sn[i].label = lab[i];
        if (!has[i] || lab[i] < 0 || (st = grow_voices(s, lab[i], dim, e))) continue;
        for (int j = 0; j < dim; j++)
            s->voice[(size_t)lab[i] * dim + j] += secs[i] * sig[(size_t)i * dim + j];
        s->voice_has[lab[i]] = 1;
    }
    /* a label that neither had a voice nor got one from a sentence (its
     * sentences too short or moved away) keeps its speakers' */
    for (int r = 0; !st && r < old->n; r++) {
        int l = old->label[r];
        if (old->had[r] || s->voice_has[l]) continue;
        memcpy(s->voice + (size_t)l * dim, learned + (size_t)r * dim, (size_t)dim * sizeof *sig);
        s->voice_has[l] = 1;
    }
    free(whole);
    free(learned);
    free(lab);
    return st;
}

/* The signature of a segment of w over [start, end] window seconds as
 * the next row of s's seg_voice (one[dim], its seconds and has, where the
 * segment is one sentence whose signature is known; NULL: computed here):
 * its row into *row (-1 without voices). */
static hv_status segment_voice(hv_stitch *s, const hv_stitch_window *w, double start, double end,
                               const double *one, double one_secs, int one_has, int *row,
                               hv_error *e) {
    int dim = s->voice_dim;
    *row = -1;
    if (!w->logmel || !(w->voice_threshold < 1) || dim <= 0) return HV_OK;
    if (s->n_seg == s->cap_seg) {
        int cap = s->cap_seg ? 2 * s->cap_seg : 64;
        double *x = realloc(s->seg_voice, (size_t)cap * dim * sizeof *x);
        if (x) s->seg_voice = x;
        double *secs = x ? realloc(s->seg_secs, (size_t)cap * sizeof *secs) : NULL;
        if (secs) s->seg_secs = secs;
        unsigned char *h = secs ? realloc(s->seg_has, (size_t)cap) : NULL;
        if (!h) return hv_err(e, HV_ERR_NOMEM, "out of memory for voice signatures");
        s->seg_has = h;
        s->cap_seg = cap;
    }
    hv_voice_span span = {start, end};
    int r = s->n_seg, has = one_has;
    if (one) { /* its rows hold nothing of use without has */
        if (has) memcpy(s->seg_voice + (size_t)r * dim, one, (size_t)dim * sizeof *one);
        s->seg_secs[r] = one_secs;
    } else {
        hv_status st =
            hv_voice_signature(w->logmel, w->f0, w->n_frames, w->n_mels, w->frame_s, &span, 1,
                               s->seg_voice + (size_t)r * dim, &s->seg_secs[r], &has, e);
        if (st) return st;
    }
    s->seg_has[r] = (unsigned char)has;
    s->n_seg++;
    *row = r;
    return HV_OK;
}

hv_status hv_stitch_window_run(hv_stitch *s, const hv_stitch_window *w, hv_stitched *out,
                               hv_error *e) {
    memset(out, 0, sizeof *out);
    hv_diar d = {0};
    word *ws = NULL;
    voices v = {0};
    voice_rows old = {0};
    span_voices tv = {0}, sv = {0};
    sentence *sn = NULL;
    int nw = 0, n_sn = 0, map[HV_DIAR_SPEAKERS], *group = NULL, *label = NULL;
    hv_diar_tok *toks = malloc((size_t)(w->n > 0 ? w->n : 1) * sizeof *toks);
    if (!toks) return hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    for (int i = 0; i < w->n; i++) toks[i] = hv_diarize_classify(w->tok, w->ids[i]);
    hv_status st = hv_diarize_parse(toks, w->n, (float)w->seconds, &d, e);
    if (!st) st = split_words(w, &d, toks, &ws, &nw, e);
    if (!st) st = window_voices(w, &d, &v, e);
    if (!st) st = link_window(s, w, &d, ws, nw, &v, map, e);
    if (!st) st = learn_voices(s, &v, map, &old, e);
    if (!st && s->next_label > 0 && !(group = malloc((size_t)s->next_label * sizeof *group)))
        st = hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    if (group) {
        for (int l = 0; l < s->next_label; l++) group[l] = l;
        st = hv_stitch_heal(s, w->voice_threshold, group, e);
    }
    if (!st && !(label = malloc((size_t)(d.n_segs ? d.n_segs : 1) * sizeof *label)))
        st = hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
    if (!st) st = turn_labels(s, w, &d, map, group, label, &tv, e);
    if (!st) st = sentence_labels(s, w, &d, ws, nw, group, label, &tv, &old, &sn, &n_sn, &sv, e);
    if (st) goto done;
    out->segs = malloc((size_t)(n_sn ? n_sn : 1) * sizeof *out->segs);
    out->pos = malloc((size_t)(d.n_pos ? d.n_pos : 1) * sizeof *out->pos);
    out->keep = calloc((size_t)(w->n > 0 ? w->n : 1), 1);
    if (!out->segs || !out->pos || !out->keep) {
        st = hv_err(e, HV_ERR_NOMEM, "out of memory stitching diarize windows");
        goto done;
    }
    int n_pos = 0;
    /* a segment: the sentences of one turn in a row with one label */
    for (int i = 0; i < n_sn;) {
        int k = sn[i].seg, i1 = i + 1;
        while (i1 < n_sn && sn[i1].seg == k && sn[i1].label == sn[i].label) i1++;
        int pos0 = n_pos;
        for (int x = sn[i].w0; x < sn[i1 - 1].w1; x++) {
            if (ws[x].t < w->lo || ws[x].t >= w->hi) continue;
            for (int q = 0; q < ws[x].np; q++) {
                int p = d.pos[ws[x].p0 + q];
                out->pos[n_pos++] = p;
                out->keep[p] = 1;
            }
        }
        if (n_pos > pos0) {
            const hv_diar_seg *g = &d.segs[k];
            hv_stitch_seg *o = &out->segs[out->n_segs++];
            o->speaker = sn[i].label;
            o->start = fmin(fmax(w->to_input(w->user, sn[i].start, 0), w->lo), w->hi);
            o->end = fmin(fmax(w->to_input(w->user, sn[i1 - 1].end, 1), o->start), w->hi);
            o->first = out->pos[pos0];
            o->last = out->pos[n_pos - 1];
            o->pos0 = pos0;
            o->n_pos = n_pos - pos0;
            o->voice = -1;
            s->last_label = g->speaker >= 0 ? map[g->speaker] : -1;
            /* a segment of one sentence has that sentence's signature */
            int one = i1 == i + 1 && sv.sig;
            if (o->speaker >= 0 &&
                (st = segment_voice(s, w, sn[i].start, sn[i1 - 1].end,
                                    one ? sv.sig + (size_t)i * s->voice_dim : NULL,
                                    one ? sv.secs[i] : 0, one ? sv.has[i] : 0, &o->voice, e)))
                goto done;
        }
        i = i1;
    }
    st = hand_on(s, w, &d, ws, nw, map, e);
done:
    if (st) hv_stitched_free(out);
    free(toks);
    free(ws);
    free(group);
    free(label);
    free(sn);
    free(old.row);
    span_voices_free(&tv);
    span_voices_free(&sv);
    free(v.sig);
    hv_diar_free(&d);
    return st;
}

hv_status hv_stitch_heal(const hv_stitch *s, double threshold, int *group, hv_error *e) {
    hv_heal_in in = heal_in(s, threshold);
    return hv_speaker_heal(&in, group, e);
}

hv_status hv_stitch_regroup(const hv_stitch *s, double threshold, int n, const int *rows,
                            int *label, hv_error *e) {
    int dim = s->voice_dim, next = s->next_label;
    if (n <= 0 || dim <= 0 || !(threshold < 1)) return HV_OK;
    double *sig = malloc((size_t)n * dim * sizeof *sig), *secs = calloc((size_t)n, sizeof *secs);
    unsigned char *has = calloc((size_t)n, 1);
    hv_status st = sig && secs && has
                       ? HV_OK
                       : hv_err(e, HV_ERR_NOMEM, "out of memory regrouping speaker labels");
    for (int i = 0; !st && i < n; i++) {
        int r = rows[i];
        if (r < 0 || r >= s->n_seg || !s->seg_has[r]) continue;
        memcpy(sig + (size_t)i * dim, s->seg_voice + (size_t)r * dim, (size_t)dim * sizeof *sig);
        secs[i] = s->seg_secs[r];
        has[i] = 1;
    }
    for (int i = 0; i < n; i++)
        if (label[i] >= next) next = label[i] + 1;
    hv_regroup_in in = {
        .n = n, .dim = dim, .sig = sig, .secs = secs, .has = has, .threshold = threshold};
    if (!st) st = hv_speaker_regroup(&in, label, &next, e);
    free(sig);
    free(secs);
    free(has);
    return st;
}
