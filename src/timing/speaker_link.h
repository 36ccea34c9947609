/* Speakers of one diarize window linked to those of the window before it,
 * from their overlap (docs/DIARIZE.md, "Any length"), without a voice
 * model: the words both windows transcribe there vote for a pair of
 * speakers, and the pairs are the one-to-one assignment with the most
 * votes; a speaker the overlap does not link may continue an earlier
 * label by its voice signature (voice.h); labels that are one voice are
 * merged (hv_speaker_heal), a turn that another label's voice claims
 * moves there (hv_speaker_turn_voice), and at the recording's end its
 * segments are regrouped by their own voices (hv_speaker_regroup). Pure
 * functions over words, turns and
 * signatures, so that the rules are tested on synthetic windows
 * (tests/unit/test_speaker_link.c). */
#ifndef HV_SPEAKER_LINK_H
#define HV_SPEAKER_LINK_H

#include "timing/diarize.h"
#include "util/error.h"

/* A word of the overlap: its text as compared (hv_link_norm), its time
 * (seconds on the input's timeline), its speaker (the earlier window's:
 * a label of the recording; the later window's: the window's own K). */
typedef struct hv_link_word {
    const char *text;
    double t;
    int speaker;
} hv_link_word;

/* A turn's time inside the overlap [start, end], and its speaker. */
typedef struct hv_link_turn {
    int speaker;
    double start, end;
} hv_link_turn;

typedef struct hv_link_in {
    const hv_link_word *a; /* [na] the earlier window's words, in time order */
    int na;
    const hv_link_word *b; /* [nb] the later window's, in time order */
    int nb;
    const hv_link_turn *ta; /* [nta] the earlier window's turns in the overlap */
    int nta;
    const hv_link_turn *tb; /* [ntb] the later window's */
    int ntb;
    const int *order; /* [n_order] the later window's speakers (0..7), in the
                         order they first speak in it */
    int n_order;
    int last_label;  /* the label of the last segment before the later
                        window's (-1: none) */
    double tol;      /* seconds two copies of a word may differ by */
    double min_time; /* seconds of turn time that link two speakers */
    /* rule 4's voice signatures (voice.h); voice_dim 0: no rule 4 */
    int voice_dim;
    const double *voice_b;                /* [HV_DIAR_SPEAKERS x voice_dim] the later
                               window's speakers' */
    unsigned voice_b_has;                 /* bit K: speaker K has one */
    const double *voice_labels;           /* [n_voice_labels x voice_dim] the
                                             recording's labels', compared by
                                             direction (any length) */
    const unsigned char *voice_label_has; /* [n_voice_labels] 1: label has one */
    int n_voice_labels;
    double voice_threshold; /* the cosine that links; 1: no rule 4 */
} hv_link_in;

/* How a speaker of the later window got its label (hv_speaker_link's how). */
typedef enum hv_link_how {
    HV_LINK_ABSENT = 0, /* not in order[]: map is -1 */
    HV_LINK_WORDS,      /* by the words both windows transcribe */
    HV_LINK_TIME,       /* by the time both windows give its turns */
    HV_LINK_ADJACENT,   /* the overlap is silent in both windows: it speaks
                           first in the later window and continues
                           last_label */
    HV_LINK_VOICE,      /* by its voice signature */
    HV_LINK_NEW         /* no evidence: the next new label */
} hv_link_how;

/* The labels of the later window's speakers: map[K] for each K of order[]
 * (-1 for the others). Rules, in this order:
 *   1. words: the two windows' words are aligned (the longest common
 *      subsequence of equal texts at most tol apart); each aligned pair
 *      votes for (its earlier speaker, its later speaker); the one-to-one
 *      assignment with the most votes in all (exact, over at most 8
 *      speakers a side) links each pair that has a vote;
 *   2. time: for the speakers left on both sides, the same with the
 *      seconds both windows give a pair's turns, pairs of at least
 *      min_time;
 *   3. adjacent: where 1 and 2 link nobody and neither window has a turn
 *      in the overlap (nta and ntb 0), the first speaker of order[] takes
 *      last_label (when it is >= 0);
 *   4. voice: first, a link of 1 or 2 that the voice contradicts is
 *      undone (the cosine of the speaker's signature with another
 *      label's is over voice_threshold, and with its own label's it is
 *      not, or is at least 0.05 less); then the
 *      speakers left that have a voice signature and the labels of the
 *      recording that have one and that 1-3 did not give (or that the
 *      contradiction freed): each pair whose cosine exceeds
 *      voice_threshold weighs the excess;
 *      the one-to-one assignment with the largest total (exact, over the
 *      labels and the sets of speakers) links its pairs, except a pair
 *      that another assignment of the same total leaves out (a tie links
 *      nobody);
 *   5. new: every speaker left takes *next_label, which counts up, in the
 *      order of order[].
 * Speakers of the earlier window beyond its first 8 distinct ones in a
 * and ta are not linked. how[K] says which rule gave map[K]. Only
 * HV_ERR_NOMEM fails. */
hv_status hv_speaker_link(const hv_link_in *in, int *next_label, int map[HV_DIAR_SPEAKERS],
                          hv_link_how how[HV_DIAR_SPEAKERS], hv_error *e);

/* Labels past this many are not merged by hv_speaker_heal (its tables
 * are quadratic in them; a recording has a few dozen). */
#define HV_HEAL_MAX_LABELS        512
/* How much closer to identical than rule 4's threshold two labels' voices
 * must be to merge (a cosine over 1 - (1 - threshold) / it): labels never
 * given in one window, and labels given in one (a window that names two
 * speakers is evidence of two people). Chosen with the pitch in the
 * signature on tuning dialogues (docs/DIARIZE.md, rule 6). */
#define HV_HEAL_APART_STRICTNESS  2
#define HV_HEAL_SHARED_STRICTNESS 3

/* What the end of a recording knows of its labels (hv_speaker_heal). */
typedef struct hv_heal_in {
    int n_labels;
    int dim;                    /* a signature's values (voice.h) */
    const double *voice;        /* [n_labels x dim] each label's summed signature */
    const unsigned char *has;   /* [n_labels] 1: the label has one */
    const unsigned char *share; /* [n_labels x share_stride] 1: the two
                                    labels were given to speakers of one window */
    int share_stride;
    double threshold; /* diarize_voice (1: no merging) */
} hv_heal_in;

/* Labels of one recording that are one person merged: group[l] is the
 * group of label l, its smallest label (given as the identity, or as the
 * groups of an earlier call). Greedily, the two groups whose summed
 * signatures have the largest cosine merge while it is above 1 - (1 -
 * threshold) / HV_HEAL_APART_STRICTNESS (groups never given in one window:
 * a split by linking) or / HV_HEAL_SHARED_STRICTNESS (groups that were: a
 * window that put one person under two speaker tokens); the merged group
 * sums both signatures and shares the windows of both. Labels past
 * HV_HEAL_MAX_LABELS, and labels without a signature, stay themselves.
 * Only HV_ERR_NOMEM fails. */
hv_status hv_speaker_heal(const hv_heal_in *in, int *group, hv_error *e);

/* Rule 7, a turn's own voice: turns[n] of one window, each with its own
 * signature (sig [n x in->dim], has[t] 1: turn t has one) and its label as
 * merged (label[t], a group of hv_speaker_heal's group, in/out). A turn
 * moves to the group whose summed signature has the largest cosine with
 * its own, where that cosine is over in->threshold and its own group's is
 * not, or is at least 0.05 less (rule 4's contradiction, per turn: a model
 * that puts one turn under another speaker's token is contradicted by
 * that turn's voice). A turn whose group has no signature, or is past
 * HV_HEAL_MAX_LABELS, keeps it. Only HV_ERR_NOMEM fails. */
hv_status hv_speaker_turn_voice(const hv_heal_in *in, const int *group, int n, const double *sig,
                                const unsigned char *has, int *label, hv_error *e);

/* Rule 8, the recording's end (hv_speaker_regroup): a label splits where
 * its segments' two halves have a cosine under HV_SPLIT_COSINE, whatever
 * the threshold (a split that followed the threshold up to 1 would cut
 * every person in two), and each half at least HV_SPLIT_MIN_S seconds of
 * signature (a short half is too noisy to be a person); segments move
 * between labels for at most HV_REGROUP_ROUNDS rounds (moves can swing
 * back and forth). */
#define HV_SPLIT_COSINE   0.9
#define HV_SPLIT_MIN_S    3.0
#define HV_REGROUP_ROUNDS 5

/* What the end of a recording knows of its segments. */
typedef struct hv_regroup_in {
    int n;
    int dim;                  /* a signature's values (voice.h) */
    const double *sig;        /* [n x dim] each segment's own signature (a unit vector) */
    const double *secs;       /* [n] its seconds */
    const unsigned char *has; /* [n] 1: the segment has one */
    double threshold;         /* diarize_voice (1: nothing changes) */
} hv_regroup_in;

/* Rule 8: the labels of a whole recording's segments (label[n], -1: none;
 * in/out) regrouped by their own voices, with every segment known, which
 * the windows' rules, each knowing only the recording so far, could not:
 *   1. split: a label with two segments or more that have a signature is
 *      cut in two by spherical 2-means (seeded with its segment least like
 *      the label's centroid and the segment least like that one; at most
 *      20 steps; halves compared by their seconds-weighted mean
 *      directions); where the two halves' cosine is under
 *      HV_SPLIT_COSINE and each half has HV_SPLIT_MIN_S, the second seed's
 *      half takes *next_label, which counts up (labels in ascending order,
 *      each once; a new label is not split again);
 *   2. move: a segment moves to the label whose centroid (the sum of its
 *      segments' signatures times their seconds) has the largest cosine
 *      with its own, where that is over threshold and its own label's
 *      centroid, less the segment, is not, or is at least 0.05 less (rule
 *      7 with the whole recording's centroids); every segment at once, in
 *      rounds until none moves, at most HV_REGROUP_ROUNDS;
 *   3. merge: while two labels' centroids have a cosine over 1 - (1 -
 *      threshold) / HV_HEAL_SHARED_STRICTNESS, the closest two merge into
 *      the smaller label.
 * Only HV_ERR_NOMEM fails. */
hv_status hv_speaker_regroup(const hv_regroup_in *in, int *label, int *next_label, hv_error *e);

/* A word's text as linking compares it, written into out[size]: letters
 * and digits of ASCII lower-cased, ASCII punctuation and spaces dropped,
 * other bytes (UTF-8 letters) kept. */
void hv_link_norm(const char *text, char *out, size_t size);

#endif
