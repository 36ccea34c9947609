/* The diarize windows of one recording stitched into one transcript with
 * the recording's speaker labels (docs/DIARIZE.md, "Any length"): each
 * window's turns (diarize.h) keep the words of the window's share of the
 * timeline, and its speakers are linked to the window before it from the
 * words of their overlap (speaker_link.h); its segments carry the labels
 * as merged by voice after it (hv_stitch_heal), and keep their own voice
 * signatures for the recording's end (hv_stitch_regroup). */
#ifndef HV_DIARIZE_STITCH_H
#define HV_DIARIZE_STITCH_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "timing/speaker_link.h"
#include "util/error.h"

/* What one window hands the next: its words and turns in the overlap
 * after it, with their labels, the label counter, and the labels' voice
 * signatures so far. */
typedef struct hv_stitch {
    hv_link_word *words; /* [n_words], their texts in texts */
    char *texts;         /* [n_words x the stitcher's longest word + 1] */
    int n_words;
    hv_link_turn *turns; /* [n_turns] */
    int n_turns;
    int window;     /* the window they are of; -1 none */
    int last_label; /* the last segment's label; -1 none */
    int next_label; /* the next new label */
    /* per label (rule 4, voice.h): the sum of the unit signatures of
     * every sentence it labels, each times the sentence's seconds (a
     * label without one whose sentences in a window give none takes that
     * window's speakers' turns instead; a direction: compared after
     * normalising) */
    double *voice;            /* [cap_voice x hv_voice_dim(the model's n_mels)] */
    unsigned char *voice_has; /* [cap_voice] 1: the label has one */
    unsigned char *share;     /* [HV_HEAL_MAX_LABELS x HV_HEAL_MAX_LABELS] 1: the
                                 two labels were given to speakers of one
                                 window (labels past the cap are not merged) */
    int cap_voice;
    int voice_dim; /* a signature's values; 0 before the first window's */
    /* each segment's own signature so far, for rule 8 (hv_stitch_regroup):
     * row r of seg_voice, seg_secs[r] its seconds, seg_has[r] 1: it has one */
    double *seg_voice; /* [cap_seg x voice_dim] */
    double *seg_secs;
    unsigned char *seg_has;
    int n_seg, cap_seg;
} hv_stitch;

/* One window: its generated tokens (EOS excluded) and where it lies. */
typedef struct hv_stitch_window {
    const hv_tokenizer *tok;
    const int32_t *ids;
    int n;
    int window;     /* its number in the call */
    double seconds; /* its audio's length */
    /* window seconds -> the input's timeline (seconds); end non-zero for
     * an end time (at the join of two pieces of audio, the earlier one's
     * end, else the later one's start) */
    double (*to_input)(void *user, double t, int end);
    void *user;
    double start, end; /* where it starts and ends on the input */
    double lo, hi;     /* its share: the words it keeps lie in [lo, hi) */
    double prev_end;   /* where the window before it ends (its overlap is
                           [start, prev_end]); ignored for window 0 */
    double next_start; /* where the window after it starts (>= end: none) */
    /* the window's raw log-mel (hv_frontend_compute's logmel) for voice
     * signatures, or NULL: rule 4 neither links its speakers nor learns
     * their voices; and its pitch (hv_pitch_track's), or NULL: none in
     * the signatures */
    const float *logmel; /* [n_frames x n_mels], frame t at t * frame_s s */
    const float *f0;     /* [n_frames] */
    int n_frames, n_mels;
    double frame_s;
    double voice_threshold; /* rule 4's cosine (1: off) */
} hv_stitch_window;

typedef struct hv_stitch_seg {
    int speaker;       /* the recording's label, merged (hv_stitch_heal); -1
                          where the stream names none */
    double start, end; /* on the input, inside [lo, hi] */
    int first, last;   /* stream positions of its first and last kept text token */
    int pos0, n_pos;   /* its text tokens: hv_stitched.pos[pos0 .. pos0 + n_pos) */
    int voice;         /* its signature's row in hv_stitch's seg_voice; -1 none */
} hv_stitch_seg;

typedef struct hv_stitched {
    hv_stitch_seg *segs; /* [n_segs], in stream order */
    int n_segs;
    int *pos;            /* stream positions of the kept text tokens */
    unsigned char *keep; /* [n] 1 for the text tokens of kept words */
} hv_stitched;

void hv_stitch_init(hv_stitch *s);
void hv_stitch_free(hv_stitch *s);

/* Parses w's tokens into turns, links its speakers to the window before
 * (when that is s->window and w is the next), learns their voices, keeps
 * the words whose time (spread over their turn by their pieces' lengths)
 * lies in [lo, hi), labels its turns with the groups of hv_stitch_heal
 * (the labels so far merged by voice; the overlap handed on keeps the
 * unmerged ones), moves a turn, then a sentence, whose own voice another
 * label's claims (rule 7: a turn whose sentences take two labels is two
 * segments), learns the labels' voices from its sentences, and hands the
 * overlap after it to s. Only
 * HV_ERR_NOMEM fails; free out with hv_stitched_free. */
hv_status hv_stitch_window_run(hv_stitch *s, const hv_stitch_window *w, hv_stitched *out,
                               hv_error *e);
void hv_stitched_free(hv_stitched *o);

/* The labels given so far (0 .. s->next_label - 1) merged where their
 * voices show one person (hv_speaker_heal, threshold diarize_voice):
 * group[l] for each, in/out (the identity, or an earlier call's groups).
 * Only HV_ERR_NOMEM fails. */
hv_status hv_stitch_heal(const hv_stitch *s, double threshold, int *group, hv_error *e);

/* Rule 8 at the recording's end (hv_speaker_regroup, threshold
 * diarize_voice): label[n] (in/out) of the n segments whose signatures are
 * rows[n] of s's seg_voice (-1: none) regrouped by their voices. Only
 * HV_ERR_NOMEM fails. */
hv_status hv_stitch_regroup(const hv_stitch *s, double threshold, int n, const int *rows,
                            int *label, hv_error *e);

#endif
