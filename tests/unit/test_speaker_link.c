/* Speakers linked across diarize windows (src/timing/speaker_link.c) on
 * synthetic overlaps: agreement, swapped labels, the fallbacks (turn time,
 * a silent overlap, a new speaker), conflicting evidence, labels beyond 8;
 * labels of one voice merged (hv_speaker_heal: the thresholds apart and
 * in one window, greedy order, earlier groups, the label cap); the
 * recording's end (hv_speaker_regroup: split, move, merge); and windows
 * stitched (src/timing/diarize_stitch.c): each word once, the labels of
 * the recording, one voice under two speaker tokens, two voices in one
 * turn, two voices under one token split at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "testlib.h"
#include "timing/diarize_stitch.h"
#include "timing/speaker_link.h"
#include "timing/voice.h"

#define N   HV_DIAR_SPEAKERS
#define VD  3                    /* the voice signatures' length here */
#define DEG 0.017453292519943295 /* a degree in radians */

static int nonzero(const double *v) { return v[0] != 0 || v[1] != 0 || v[2] != 0; }

/* Words "text@time/speaker ..." into w (texts point into buf). */
static int words(const char *spec, hv_link_word *w, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", spec);
    int n = 0;
    for (char *s = strtok(buf, " "); s; s = strtok(NULL, " ")) {
        char *at = strchr(s, '@'), *sl = strchr(s, '/');
        *at = *sl = '\0';
        w[n++] = (hv_link_word){s, atof(at + 1), atoi(sl + 1)};
    }
    return n;
}

typedef struct link_case {
    const char *a, *b; /* words */
    hv_link_turn ta[4], tb[4];
    int nta, ntb;
    int order[N], n_order;
    int last_label, next_label;
    /* rule 4: signatures of the later window's speakers and of labels
     * 0..n_vl-1 (none where all 0), the threshold (n_vl 0: no rule 4) */
    double vb[N][VD], vl[N][VD];
    int n_vl;
    double thr;
} link_case;

/* Runs c; map and how out, and the label counter after it. */
static int run(const link_case *c, int map[N], hv_link_how how[N]) {
    static char ba[1024], bb[1024];
    hv_link_word a[64], b[64];
    unsigned char vl_has[N];
    unsigned vb_has = 0;
    for (int k = 0; k < N; k++) {
        vb_has |= (unsigned)nonzero(c->vb[k]) << k;
        vl_has[k] = (unsigned char)nonzero(c->vl[k]);
    }
    hv_link_in in = {.a = a,
                     .na = c->a ? words(c->a, a, ba, sizeof ba) : 0,
                     .b = b,
                     .nb = c->b ? words(c->b, b, bb, sizeof bb) : 0,
                     .ta = c->ta,
                     .nta = c->nta,
                     .tb = c->tb,
                     .ntb = c->ntb,
                     .order = c->order,
                     .n_order = c->n_order,
                     .last_label = c->last_label,
                     .tol = 1.5,
                     .min_time = 0.5,
                     .voice_dim = c->n_vl ? VD : 0,
                     .voice_b = &c->vb[0][0],
                     .voice_b_has = vb_has,
                     .voice_labels = &c->vl[0][0],
                     .voice_label_has = vl_has,
                     .n_voice_labels = c->n_vl,
                     .voice_threshold = c->thr};
    int next = c->next_label;
    hv_error e = {0};
    CHECK(hv_speaker_link(&in, &next, map, how, &e) == HV_OK);
    return next;
}

/* Rule 4 (voice_cases): K 0 agrees with label 5 by its words and its
 * voice; K 1 is silent in the overlap. Labels 0..5, label 3's voice
 * (1, 0, 0), label 4's (0, 1, 0), label 2 without one. */
static link_case voice_base(void) {
    link_case c = {.a = "og@20.0/5 så@20.4/5 videre@20.8/5",
                   .b = "og@20.1/0 så@20.5/0 videre@20.9/0",
                   .order = {0, 1},
                   .n_order = 2,
                   .last_label = 5,
                   .next_label = 6,
                   .vl = {{.2, .1, .9}, {-.5, .5, .1}, {0}, {1, 0, 0}, {0, 1, 0}, {.3, .3, .3}},
                   .n_vl = 6,
                   .thr = 0.85};
    c.vb[0][0] = c.vb[0][1] = c.vb[0][2] = .3;
    return c;
}

static void voice_cases(void) {
    int map[N], next;
    hv_link_how how[N];
    /* a speaker silent in the overlap whose voice is label 3's (cosine
     * 0.995, in a longer vector: any length) continues label 3 */
    link_case c = voice_base();
    c.vb[1][0] = 2 * .99, c.vb[1][1] = 2 * .1;
    next = run(&c, map, how);
    CHECK_MSG(map[0] == 5 && how[0] == HV_LINK_WORDS && map[1] == 3 && how[1] == HV_LINK_VOICE &&
                  next == 6,
              "voice: map %d %d how %d next %d", map[0], map[1], how[1], next);
    /* below the threshold (cosine 0.5 at most), or a threshold of 1: new */
    link_case low = voice_base();
    low.vb[1][0] = .5, low.vb[1][1] = .5, low.vb[1][2] = -.7071;
    next = run(&low, map, how);
    CHECK(map[1] == 6 && how[1] == HV_LINK_NEW && next == 7);
    link_case off = c;
    off.thr = 1;
    next = run(&off, map, how);
    CHECK(map[1] == 6 && how[1] == HV_LINK_NEW && next == 7);
    /* two speakers near label 3 alone: one label, one speaker (the
     * closer, K 2); the other is new */
    link_case two = c;
    two.vb[1][0] = .95, two.vb[1][1] = .05, two.vb[1][2] = .3;
    two.vb[2][0] = 1, two.vb[2][1] = .02;
    two.order[2] = 2, two.n_order = 3;
    next = run(&two, map, how);
    CHECK_MSG(map[2] == 3 && how[2] == HV_LINK_VOICE && map[1] == 6 && how[1] == HV_LINK_NEW &&
                  next == 7,
              "one label: map %d %d", map[1], map[2]);
    /* the largest total, not the closest pair first: label 4 at 50
     * degrees from label 3; K 1 at 20 degrees (3: 0.940, 4: 0.866), K 2
     * at -25 (3: 0.906, 4: 0.259); over 0.6 the closest pair (K 1, 3)
     * weighs 0.340, K 1 -> 4 and K 2 -> 3 together 0.572 */
    link_case both = two;
    both.vl[4][0] = cos(50 * DEG), both.vl[4][1] = sin(50 * DEG);
    both.vb[1][0] = cos(20 * DEG), both.vb[1][1] = sin(20 * DEG), both.vb[1][2] = 0;
    both.vb[2][0] = cos(25 * DEG), both.vb[2][1] = -sin(25 * DEG);
    both.thr = 0.6;
    next = run(&both, map, how);
    CHECK_MSG(map[1] == 4 && map[2] == 3 && how[1] == HV_LINK_VOICE && how[2] == HV_LINK_VOICE &&
                  next == 6,
              "largest total: map %d %d", map[1], map[2]);
    /* a label rule 1 gave (5) is not given again, however close */
    link_case taken = voice_base();
    memcpy(taken.vb[1], taken.vl[5], sizeof taken.vb[1]);
    next = run(&taken, map, how);
    CHECK(map[0] == 5 && map[1] == 6 && how[1] == HV_LINK_NEW);
    /* ties: a voice as near label 3 as label 4, or two speakers as near
     * label 3: nobody links */
    link_case tie = voice_base();
    tie.vb[1][0] = tie.vb[1][1] = 1;
    tie.thr = 0.5;
    next = run(&tie, map, how);
    CHECK_MSG(how[1] == HV_LINK_NEW && map[1] == 6, "tie of labels: %d %d", map[1], how[1]);
    link_case tie2 = voice_base();
    tie2.vb[1][0] = tie2.vb[2][0] = 1;
    tie2.order[2] = 2, tie2.n_order = 3;
    next = run(&tie2, map, how);
    CHECK_MSG(how[1] == HV_LINK_NEW && how[2] == HV_LINK_NEW && next == 8, "tie of speakers: %d %d",
              map[1], map[2]);
    /* the words link K 0 to label 5, but its voice is label 3's and not
     * label 5's (cosine 0.6): the link is undone, K 0 continues label 3 */
    link_case contra = voice_base();
    contra.vb[0][0] = 1, contra.vb[0][1] = .05, contra.vb[0][2] = 0;
    next = run(&contra, map, how);
    CHECK_MSG(map[0] == 3 && how[0] == HV_LINK_VOICE && map[1] == 6 && how[1] == HV_LINK_NEW &&
                  next == 7,
              "contradicted words: map %d %d how %d", map[0], map[1], how[0]);
    /* over the threshold (0.8) with label 5 too (0.850), but label 3's is
     * closer by more than the margin (0.921): undone, label 3; closer by
     * less (0.896 against 0.880): the words' link stays */
    link_case closer = voice_base();
    closer.thr = 0.8;
    closer.vb[0][0] = 1, closer.vb[0][1] = closer.vb[0][2] = .3;
    next = run(&closer, map, how);
    CHECK_MSG(map[0] == 3 && how[0] == HV_LINK_VOICE && map[1] == 6 && next == 7,
              "closer by the margin: map %d how %d", map[0], how[0]);
    closer.vb[0][1] = closer.vb[0][2] = .35;
    run(&closer, map, how);
    CHECK_MSG(map[0] == 5 && how[0] == HV_LINK_WORDS, "within the margin: map %d how %d", map[0],
              how[0]);
    /* a voice unlike label 5's but like no other label's keeps the words'
     * link; so does any voice with the rule off */
    link_case unlike = voice_base();
    unlike.vb[0][0] = unlike.vb[0][1] = 0, unlike.vb[0][2] = -1;
    run(&unlike, map, how);
    CHECK(map[0] == 5 && how[0] == HV_LINK_WORDS);
    contra.thr = 1;
    run(&contra, map, how);
    CHECK(map[0] == 5 && how[0] == HV_LINK_WORDS);
}

static void link_cases(void) {
    int map[N], next;
    hv_link_how how[N];
    /* agreement: the earlier window's labels 5 and 2 become K 0 and 1 */
    link_case agree = {.a = "hej@10.0/5 med@10.3/5 dig@10.6/5 godt@11.0/2 at@11.3/2 se@11.6/2",
                       .b = "Hej,@10.2/0 med@10.4/0 dig@10.7/0 godt@11.1/1 at@11.4/1 se@11.7/1",
                       .order = {0, 1},
                       .n_order = 2,
                       .last_label = 2,
                       .next_label = 6};
    next = run(&agree, map, how);
    CHECK(map[0] == 5 && map[1] == 2 && how[0] == HV_LINK_WORDS && how[1] == HV_LINK_WORDS);
    CHECK(next == 6 && map[2] == -1 && how[2] == HV_LINK_ABSENT);
    /* the same words, the later window numbering the two the other way */
    link_case swapped = agree;
    swapped.b = "hej@10.2/1 med@10.4/1 dig@10.7/1 godt@11.1/0 at@11.4/0 se@11.7/0";
    swapped.order[0] = 1, swapped.order[1] = 0;
    run(&swapped, map, how);
    CHECK(map[0] == 2 && map[1] == 5);
    /* the same text too far apart in time is no evidence, nor are turns
     * that share no time: new labels */
    link_case far = agree;
    far.b = "hej@13.0/0 med@13.3/0 dig@13.6/0";
    far.ta[0] = (hv_link_turn){5, 10.0, 12.0}, far.nta = 1;
    far.tb[0] = (hv_link_turn){0, 13.0, 14.0}, far.ntb = 1;
    next = run(&far, map, how);
    CHECK(how[0] == HV_LINK_NEW && map[0] == 6 && how[1] == HV_LINK_NEW && map[1] == 7);
    /* a new speaker: K 0 linked by its words, K 1 not in the overlap */
    link_case fresh = {.a = "og@20.0/3 så@20.4/3 videre@20.8/3",
                       .b = "og@20.1/0 så@20.5/0 videre@20.9/0",
                       .order = {0, 1},
                       .n_order = 2,
                       .last_label = 3,
                       .next_label = 4};
    next = run(&fresh, map, how);
    CHECK(map[0] == 3 && how[0] == HV_LINK_WORDS && map[1] == 4 && how[1] == HV_LINK_NEW &&
          next == 5);
    /* conflicting evidence: K 0 shares 3 words with label 1 and 2 with
     * label 2, K 1 shares 2 with label 1; the most agreement in all is
     * 0 -> 2 and 1 -> 1 (4 votes), not the greedy 0 -> 1 (3) */
    link_case conflict = {.a = "a@1.0/1 b@1.2/1 c@1.4/1 d@1.6/2 e@1.8/2 f@2.0/1 g@2.2/1",
                          .b = "a@1.0/0 b@1.2/0 c@1.4/0 d@1.6/0 e@1.8/0 f@2.0/1 g@2.2/1",
                          .order = {0, 1},
                          .n_order = 2,
                          .last_label = 1,
                          .next_label = 3};
    next = run(&conflict, map, how);
    CHECK(map[0] == 2 && map[1] == 1 && next == 3);
    /* turn time where no word agrees: the turns that share the overlap */
    link_case timed = {.a = "x@5.0/7",
                       .b = "y@5.0/0",
                       .nta = 2,
                       .ntb = 2,
                       .ta = {{7, 4.0, 6.0}, {4, 6.0, 8.0}},
                       .tb = {{1, 4.1, 5.9}, {0, 5.9, 8.0}},
                       .order = {1, 0},
                       .n_order = 2,
                       .last_label = 4,
                       .next_label = 9};
    next = run(&timed, map, how);
    CHECK(map[1] == 7 && map[0] == 4 && how[0] == HV_LINK_TIME && how[1] == HV_LINK_TIME);
    /* turns sharing less than min_time link nobody; speech in the overlap
     * that links nobody is no reason to continue the last label */
    timed.tb[0].end = 4.3, timed.tb[1].start = 7.8;
    next = run(&timed, map, how);
    CHECK(how[1] == HV_LINK_NEW && map[1] == 9 && how[0] == HV_LINK_NEW && map[0] == 10);
    /* a silent overlap: the first speaker continues the last label, the
     * others are new; without a last label all are new */
    link_case silent = {.order = {0, 2, 1}, .n_order = 3, .last_label = 11, .next_label = 12};
    next = run(&silent, map, how);
    CHECK(map[0] == 11 && how[0] == HV_LINK_ADJACENT && map[2] == 12 && map[1] == 13 &&
          next == 14 && how[2] == HV_LINK_NEW);
    silent.last_label = -1;
    next = run(&silent, map, how);
    CHECK(map[0] == 12 && map[2] == 13 && map[1] == 14 && next == 15);
    /* labels beyond 8: eight labels 9..16 of the earlier window linked to
     * the later window's 0..7 in reverse; a ninth label (20) in the overlap
     * has no row and links nobody */
    char a[512] = "", b[512] = "";
    for (int k = 0; k < N; k++) {
        char w[128];
        snprintf(w, sizeof w, "w%d@%d.0/%d w%dx@%d.5/%d ", k, k, 9 + k, k, k, 9 + k);
        strcat(a, w);
        snprintf(w, sizeof w, "w%d@%d.0/%d w%dx@%d.5/%d ", k, k, 7 - k, k, k, 7 - k);
        strcat(b, w);
    }
    strcat(a, "extra@9.0/20");
    strcat(b, "extra@9.0/0");
    link_case many = {.a = a, .b = b, .n_order = N, .last_label = 16, .next_label = 21};
    for (int k = 0; k < N; k++) many.order[k] = k;
    next = run(&many, map, how);
    int ok = next == 21;
    for (int k = 0; k < N; k++) ok = ok && map[k] == 16 - k && how[k] == HV_LINK_WORDS;
    CHECK_MSG(ok, "beyond 8: next %d map %d %d .. %d", next, map[0], map[1], map[7]);

    voice_cases();

    char out[16];
    hv_link_norm("Hej,", out, sizeof out);
    CHECK(strcmp(out, "hej") == 0);
    hv_link_norm("\xc3\x86"
                 "ble!",
                 out, sizeof out); /* "Æble!" */
    CHECK(strcmp(out, "\xc3\x86"
                      "ble") == 0);
    hv_link_norm("abcdefghij", out, 4);
    CHECK(strcmp(out, "abc") == 0);
}

/* ------------------------------------------------------------- healing */

/* hv_speaker_heal over n labels with voices v[n][VD] (a zero row: none)
 * and the pairs in shared "a-b ..." sharing a window; group from the
 * identity. */
static void heal(int n, const double (*v)[VD], const char *shared, double thr, int *group) {
    unsigned char has[16], share[16 * 16] = {0};
    for (int l = 0; l < n; l++) has[l] = (unsigned char)nonzero(v[l]), group[l] = l;
    for (const char *p = shared; p && *p; p += strspn(p, " ")) {
        int a = atoi(p), b = atoi(strchr(p, '-') + 1);
        share[a * 16 + b] = share[b * 16 + a] = 1;
        p += strcspn(p, " ");
    }
    hv_heal_in in = {.n_labels = n,
                     .dim = VD,
                     .voice = &v[0][0],
                     .has = has,
                     .share = share,
                     .share_stride = 16,
                     .threshold = thr};
    hv_error e = {0};
    CHECK(hv_speaker_heal(&in, group, &e) == HV_OK);
}

static void heal_cases(void) {
    int g[16];
    double c15 = cos(15 * DEG), s15 = sin(15 * DEG), c5 = cos(5 * DEG), s5 = sin(5 * DEG);
    double c25 = cos(25 * DEG), s25 = sin(25 * DEG);
    /* labels 0 and 2 are one voice (15 degrees apart: cosine 0.966, over
     * 1 - (1 - 0.75) / 2 = 0.875) and never share a window; 1 is another
     * voice, of more seconds (a label's signature is a weighted sum) */
    const double v[3][VD] = {{1, 0, 0}, {0, 0, 3}, {c15, s15, 0}};
    heal(3, v, "0-1 1-2", 0.75, g);
    CHECK_MSG(g[0] == 0 && g[1] == 1 && g[2] == 0, "heal: one voice, two windows: %d %d %d", g[0],
              g[1], g[2]);
    heal(3, v, "0-1 1-2", 0.95, g); /* 0.975 */
    CHECK_MSG(g[2] == 2, "heal: under the threshold: apart (%d)", g[2]);
    heal(3, v, "0-1 1-2", 1, g);
    CHECK_MSG(g[2] == 2, "heal: threshold 1: off (%d)", g[2]);
    /* in one window two speaker tokens need 1 - (1 - 0.75) / 3 = 0.917:
     * 25 degrees apart (0.906) stay two, though never sharing a window
     * they merge; 5 degrees (0.996) merge */
    const double v25[3][VD] = {{1, 0, 0}, {0, 0, 3}, {c25, s25, 0}};
    heal(3, v25, "0-1 1-2 0-2", 0.75, g);
    CHECK_MSG(g[2] == 2, "heal: sharing a window, 25 degrees: apart (%d)", g[2]);
    heal(3, v25, "0-1 1-2", 0.75, g);
    CHECK_MSG(g[2] == 0, "heal: never sharing one, 25 degrees: one (%d)", g[2]);
    const double w[3][VD] = {{1, 0, 0}, {0, 0, 3}, {c5, s5, 0}};
    heal(3, w, "0-1 1-2 0-2", 0.75, g);
    CHECK_MSG(g[2] == 0 && g[1] == 1, "heal: sharing a window, 5 degrees: one (%d)", g[2]);
    /* a label without a voice never merges */
    const double nv[3][VD] = {{1, 0, 0}, {0, 0, 3}, {0, 0, 0}};
    heal(3, nv, "", 0.75, g);
    CHECK_MSG(g[2] == 2, "heal: no voice: apart (%d)", g[2]);
    /* greedy, the closest pair first, then the merged sum: 3 joins 1 (5
     * degrees, cosine 0.996), then 0 the group 1 + 3 (14.5 degrees from
     * its sum, 0.968); 2 shares windows with them and is another voice */
    double c12 = cos(12 * DEG), s12 = sin(12 * DEG);
    const double gr[4][VD] = {{c12, s12, 0}, {1, 0, 0}, {0, 0, 1}, {c5, -s5, 0}};
    heal(4, gr, "1-2 2-3", 0.75, g);
    CHECK_MSG(g[0] == 0 && g[1] == 0 && g[3] == 0 && g[2] == 2, "heal: greedy: %d %d %d %d", g[0],
              g[1], g[2], g[3]);
    /* groups of an earlier call are kept and grow: 1 and 2 (sharing a
     * window, cosine 0.89: apart from the identity) are given as one; 3
     * joins them by their sum (6 degrees away) */
    unsigned char has[4] = {1, 1, 1, 1}, share[16] = {0};
    share[1 * 4 + 2] = share[2 * 4 + 1] = 1;
    int h[4] = {0, 1, 1, 3};
    const double k[4][VD] = {{0, 0, 1}, {0, 1, 0}, {.5, 1, 0}, {sin(20 * DEG), cos(20 * DEG), 0}};
    hv_heal_in in = {4, VD, &k[0][0], has, share, 4, 0.75};
    hv_error e = {0};
    CHECK(hv_speaker_heal(&in, h, &e) == HV_OK);
    CHECK_MSG(h[0] == 0 && h[1] == 1 && h[2] == 1 && h[3] == 1, "heal: groups kept: %d %d %d %d",
              h[0], h[1], h[2], h[3]);
    /* more labels than HV_HEAL_MAX_LABELS: the first ones merge, the rest
     * stay themselves */
    int n = HV_HEAL_MAX_LABELS + 3;
    double *big = calloc((size_t)n * VD, sizeof *big);
    unsigned char *bh = calloc((size_t)n, 1), *bs = calloc((size_t)n * n, 1);
    int *bg = malloc((size_t)n * sizeof *bg);
    CHECK(big && bh && bs && bg);
    for (int l = 0; big && bh && bs && bg && l < n; l++) {
        big[(size_t)l * VD + l % VD] = 1;
        bh[l] = 1;
        bg[l] = l;
    }
    hv_heal_in bin = {n, VD, big, bh, bs, n, 0.75};
    if (big && bh && bs && bg) {
        CHECK(hv_speaker_heal(&bin, bg, &e) == HV_OK);
        CHECK_MSG(bg[3] == 0 && bg[4] == 1 &&
                      bg[HV_HEAL_MAX_LABELS - 1] == (HV_HEAL_MAX_LABELS - 1) % VD &&
                      bg[HV_HEAL_MAX_LABELS] == HV_HEAL_MAX_LABELS && bg[n - 1] == n - 1,
                  "heal: past the cap: %d %d %d", bg[3], bg[HV_HEAL_MAX_LABELS], bg[n - 1]);
    }
    free(big), free(bh), free(bs), free(bg);
}

/* ------------------------------------------------------- a turn's voice */

/* hv_speaker_turn_voice on one turn of signature x labelled own, labels
 * with voices v[n][VD] (a zero row: none) in groups g (NULL: identity). */
static int turn_voice(int n, const double (*v)[VD], const int *g, double thr, const double *x,
                      int own) {
    unsigned char has[8], th = (unsigned char)nonzero(x);
    int id[8], label = own;
    for (int l = 0; l < n; l++) has[l] = (unsigned char)nonzero(v[l]), id[l] = l;
    hv_heal_in in = {.n_labels = n, .dim = VD, .voice = &v[0][0], .has = has, .threshold = thr};
    hv_error e = {0};
    CHECK(hv_speaker_turn_voice(&in, g ? g : id, 1, x, &th, &label, &e) == HV_OK);
    return label;
}

static void turn_voice_cases(void) {
    const double v[3][VD] = {{1, 0, 0}, {0, 2, 0}, {0, 0, 0}};
    const double other[VD] = {0.1, 1, 0}, between[VD] = {1, 0.9, 0};
    /* another label's voice (cosine 0.995) against its own (0.1): moves */
    CHECK_MSG(turn_voice(3, v, NULL, 0.8, other, 0) == 1, "turn voice: another's");
    CHECK_MSG(turn_voice(3, v, NULL, 1, other, 0) == 0, "turn voice: threshold 1: off");
    /* no other label over the threshold (0.67): stays */
    CHECK_MSG(turn_voice(3, v, NULL, 0.8, between, 0) == 0, "turn voice: nobody's");
    /* its own label without a voice (2), no voice of its own, or no
     * label: stays */
    CHECK_MSG(turn_voice(3, v, NULL, 0.8, other, 2) == 2, "turn voice: own without a voice");
    const double none[VD] = {0, 0, 0};
    CHECK_MSG(turn_voice(3, v, NULL, 0.8, none, 0) == 0, "turn voice: the turn without one");
    CHECK_MSG(turn_voice(3, v, NULL, 0.8, other, -1) == -1, "turn voice: no label");
    /* both over the threshold 0.5: the other must be 0.05 closer (at 47
     * degrees from its own label 0.731 against 0.682: stays; at 50
     * degrees 0.766 against 0.643: moves) */
    const double a47[VD] = {cos(47 * DEG), sin(47 * DEG), 0},
                 a50[VD] = {cos(50 * DEG), sin(50 * DEG), 0};
    CHECK_MSG(turn_voice(3, v, NULL, 0.5, a47, 0) == 0, "turn voice: inside the margin");
    CHECK_MSG(turn_voice(3, v, NULL, 0.5, a50, 0) == 1, "turn voice: past the margin");
    /* groups: labels 0 and 2 are one (group 0), their voices summed; a
     * turn of that summed voice labelled 1 moves to the group, never to
     * its member 2 */
    const double w[3][VD] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    const int g[3] = {0, 1, 0};
    const double both[VD] = {1, 0.05, 1};
    CHECK_MSG(turn_voice(3, w, g, 0.8, both, 1) == 0, "turn voice: to a group");
}

/* ------------------------------------------------------------- regroup */

/* hv_speaker_regroup (rule 8) over n segments with signatures v[n][VD] (a
 * zero row: none; made unit here), secs[n], labels in label (in/out),
 * *next the next new label (in/out). */
static void regroup(int n, const double (*v)[VD], const double *secs, double thr, int *label,
                    int *next) {
    double sig[16][VD];
    unsigned char has[16];
    for (int i = 0; i < n; i++) {
        double nn = sqrt(v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2]);
        has[i] = nn > 0;
        for (int j = 0; j < VD; j++) sig[i][j] = nn > 0 ? v[i][j] / nn : 0;
    }
    hv_regroup_in in = {
        .n = n, .dim = VD, .sig = &sig[0][0], .secs = secs, .has = has, .threshold = thr};
    hv_error e = {0};
    CHECK(hv_speaker_regroup(&in, label, next, &e) == HV_OK);
}

static int labels_are(const int *label, int n, const char *want) {
    char got[64] = "";
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", i ? " " : "", label[i]);
    if (strcmp(got, want) == 0) return 1;
    fprintf(stderr, "  labels %s, not %s\n", got, want);
    return 0;
}

static void regroup_cases(void) {
    const double A[VD] = {1, 0, 0}, B[VD] = {0, 1, 0};
    double c20 = cos(20 * DEG), s20 = sin(20 * DEG), c25 = cos(25 * DEG), s25 = sin(25 * DEG);
    /* one label, two voices (cosine 0 < 1 - (1 - 0.8) / 2 = 0.9) of 4 s
     * each: the half of the second seed (the first B, least like the
     * first A, which is least like the centroid that leans to B) takes
     * the next label */
    const double ab[5][VD] = {{A[0], A[1], A[2]},
                              {B[0], B[1], B[2]},
                              {A[0], A[1], A[2]},
                              {B[0], B[1], B[2]},
                              {B[0], B[1], B[2]}};
    const double secs2[5] = {2, 2, 2, 2, 2};
    int l[8] = {0, 0, 0, 0, 0}, next = 3;
    regroup(5, ab, secs2, 0.8, l, &next);
    CHECK_MSG(labels_are(l, 5, "0 3 0 3 3") && next == 4, "regroup: split (next %d)", next);
    int off[5] = {0, 0, 0, 0, 0};
    next = 3;
    regroup(5, ab, secs2, 1, off, &next);
    CHECK_MSG(labels_are(off, 5, "0 0 0 0 0") && next == 3, "regroup: threshold 1: off");
    /* a half under HV_SPLIT_MIN_S (B: 2 s) stays, and no other label
     * claims it */
    const double secs3[3] = {2, 2, 2};
    const double aab[3][VD] = {{A[0], A[1], A[2]}, {A[0], A[1], A[2]}, {B[0], B[1], B[2]}};
    int sh[3] = {0, 0, 0};
    next = 1;
    regroup(3, aab, secs3, 0.8, sh, &next);
    CHECK_MSG(labels_are(sh, 3, "0 0 0") && next == 1, "regroup: a short half stays");
    /* halves 20 degrees apart (cosine 0.94, over 0.9): one voice */
    const double near[4][VD] = {{1, 0, 0}, {c20, s20, 0}, {1, 0, 0}, {c20, s20, 0}};
    int nr[4] = {0, 0, 0, 0};
    next = 1;
    regroup(4, near, secs2, 0.8, nr, &next);
    CHECK_MSG(labels_are(nr, 4, "0 0 0 0"), "regroup: close halves stay one");
    /* a B segment under label 0 (too short to split off) moves to B's
     * label: its own label without it is all A */
    const double mv[5][VD] = {{A[0], A[1], A[2]},
                              {A[0], A[1], A[2]},
                              {B[0], B[1], B[2]},
                              {B[0], B[1], B[2]},
                              {B[0], B[1], B[2]}};
    int m[5] = {0, 0, 1, 1, 0};
    next = 2;
    regroup(5, mv, secs2, 0.8, m, &next);
    CHECK_MSG(labels_are(m, 5, "0 0 1 1 1"), "regroup: a segment moves");
    /* two labels of one voice merge into the smaller, with their
     * segments that have no signature; a segment without a label stays */
    const double one[6][VD] = {{A[0], A[1], A[2]}, {A[0], A[1], A[2]}, {1, 0.1, 0},
                               {1, 0.1, 0},        {0, 0, 0},          {B[0], B[1], B[2]}};
    const double secs6[6] = {2, 2, 2, 2, 2, 2};
    int g[6] = {2, 2, 1, 1, 1, -1};
    next = 3;
    regroup(6, one, secs6, 0.8, g, &next);
    CHECK_MSG(labels_are(g, 6, "1 1 1 1 1 -1"), "regroup: one voice merges into the smaller");
    /* two labels 25 degrees apart (0.906, under 1 - 0.2 / 3 = 0.933) stay */
    const double apart[4][VD] = {{1, 0, 0}, {1, 0, 0}, {c25, s25, 0}, {c25, s25, 0}};
    int g2[4] = {0, 0, 1, 1};
    next = 2;
    regroup(4, apart, secs2, 0.8, g2, &next);
    CHECK_MSG(labels_are(g2, 4, "0 0 1 1"), "regroup: two labels 25 degrees apart stay");
}

/* ------------------------------------------------------------- stitch */

static hv_tokenizer tok;

static double shift(void *user, double t, int end) {
    (void)end;
    return *(const double *)user + t;
}

/* A made raw log-mel (VM bins, frames of 10 ms) for voice signatures. */
#define VM 4
typedef struct made_logmel {
    const float *lm; /* [n x VM]; NULL: none */
    int n;
} made_logmel;

/* Frames [t0, t1) of lm: voice v's two spectra by turns. */
static void voice_frames(float *lm, int t0, int t1, int v) {
    static const float P[2][2][VM] = {{{1, 2, 3, 4}, {4, 3, 2, 1}}, {{0, 5, 5, 0}, {2, 3, 3, 2}}};
    for (int t = t0; t < t1; t++) memcpy(lm + t * VM, P[v][t % 2], sizeof P[v][t % 2]);
}

/* The window's segments as "LABEL text|..." into out (with lm, voice
 * signatures at the default threshold); with bounds, "@START-END" after
 * each (to 0.01 s); kept: NULL, or where the stitched window goes. */
static void run_window_voice(hv_stitch *s, const char *spec, int window, double start, double end,
                             double lo, double hi, double prev_end, double next_start,
                             made_logmel lm, int bounds, char *out, size_t cap, hv_stitched *kept) {
    int32_t ids[128];
    double off = start;
    hv_stitch_window w = {.tok = &tok,
                          .ids = ids,
                          .n = hv_test_stream(&tok, spec, ids, 128),
                          .window = window,
                          .seconds = end - start,
                          .to_input = shift,
                          .user = &off,
                          .start = start,
                          .end = end,
                          .lo = lo,
                          .hi = hi,
                          .prev_end = prev_end,
                          .next_start = next_start,
                          .logmel = lm.lm,
                          .n_frames = lm.n,
                          .n_mels = VM,
                          .frame_s = 0.01,
                          .voice_threshold = 0.85};
    hv_stitched o;
    hv_error e = {0};
    *out = '\0';
    CHECK(hv_stitch_window_run(s, &w, &o, &e) == HV_OK);
    for (int k = 0; k < o.n_segs; k++) {
        int32_t t[128];
        for (int j = 0; j < o.segs[k].n_pos; j++) t[j] = ids[o.pos[o.segs[k].pos0 + j]];
        char *text = hv_tokenizer_decode(&tok, t, o.segs[k].n_pos);
        size_t len = strlen(out);
        snprintf(out + len, cap - len, "%s%d %s", k ? "|" : "", o.segs[k].speaker, text);
        len = strlen(out);
        if (bounds) snprintf(out + len, cap - len, "@%.2f-%.2f", o.segs[k].start, o.segs[k].end);
        free(text);
        CHECK(o.segs[k].start >= lo && o.segs[k].end <= hi && o.segs[k].start <= o.segs[k].end);
    }
    if (kept)
        *kept = o;
    else
        hv_stitched_free(&o);
}

static void run_window(hv_stitch *s, const char *spec, int window, double start, double end,
                       double lo, double hi, double prev_end, double next_start, char *out,
                       size_t cap) {
    run_window_voice(s, spec, window, start, end, lo, hi, prev_end, next_start,
                     (made_logmel){NULL, 0}, 0, out, cap, NULL);
}

/* A speaker silent in the overlap, known by its voice: window 0 [0, 30)
 * has speaker 0 (voice 0) then speaker 1 (voice 1) in the overlap;
 * window 1 [24, 54) has voice 1 in the overlap (linked by its words) and
 * then voice 0 again, which continues label 0 instead of a new one. */
static void voice_stitch_case(void) {
    static float lm0[3000 * VM], lm1[3000 * VM];
    voice_frames(lm0, 0, 2400, 0);
    voice_frames(lm0, 2400, 3000, 1);
    voice_frames(lm1, 0, 800, 1);
    voice_frames(lm1, 800, 3000, 0);
    hv_stitch s;
    char out[512];
    for (int with = 0; with < 2; with++) {
        hv_stitch_init(&s);
        run_window_voice(&s, "S0 T0.0 _a _b T20.0 S1 T24.0 _x _y _z T30.0", 0, 0, 30, -INFINITY, 27,
                         0, 24, (made_logmel){with ? lm0 : NULL, 3000}, 0, out, sizeof out, NULL);
        CHECK_MSG(strcmp(out, "0 a b|1 x") == 0, "voice window 0: %s", out);
        run_window_voice(&s, "S0 T0.0 _x _y _z T6.0 S1 T8.0 _c _d T26.0", 1, 24, 54, 27, INFINITY,
                         30, 54, (made_logmel){with ? lm1 : NULL, 3000}, 0, out, sizeof out, NULL);
        const char *want = with ? "1 y z|0 c d" : "1 y z|2 c d";
        CHECK_MSG(strcmp(out, want) == 0, "voice window 1 (%s log-mel): %s, not %s",
                  with ? "with" : "without", out, want);
        hv_stitch_free(&s);
    }
}

/* One window puts one voice under two of its three speaker tokens: the
 * two labels merge (the same voice, over the stricter threshold of labels
 * sharing a window) into the smaller, the other keeps its number (a label
 * can skip one); without a log-mel, three labels. */
static void heal_stitch_case(void) {
    static float lm[3000 * VM];
    hv_stitch s;
    char out[512];
    for (int same = 0; same < 2; same++) {
        voice_frames(lm, 0, 1000, 0);
        voice_frames(lm, 1000, 2000, same ? 0 : 1);
        voice_frames(lm, 2000, 3000, same ? 1 : 0);
        for (int with = 0; with < 2; with++) {
            hv_stitch_init(&s);
            run_window_voice(&s, "S0 T0.0 _a _b T10.0 S1 T10.0 _c _d T20.0 S2 T20.0 _e _f T30.0", 0,
                             0, 30, -INFINITY, INFINITY, 0, 30,
                             (made_logmel){with ? lm : NULL, 3000}, 0, out, sizeof out, NULL);
            const char *want = !with  ? "0 a b|1 c d|2 e f"
                               : same ? "0 a b|0 c d|2 e f"
                                      : "0 a b|1 c d|0 e f";
            CHECK_MSG(strcmp(out, want) == 0,
                      "heal in a window (voices 0 %d %d, %s log-mel): %s, not %s", !same, same,
                      with ? "with" : "without", out, want);
            hv_stitch_free(&s);
        }
    }
}

/* One window puts a turn of voice 1 under the token of voice 0's speaker
 * (rule 7): with a log-mel the turn takes voice 1's label, its own voice
 * closer to that label's than to the mixed one of its token; without,
 * the model's token. */
static void turn_voice_stitch_case(void) {
    static float lm[3000 * VM];
    voice_frames(lm, 0, 1000, 0);
    voice_frames(lm, 1000, 3000, 1);
    hv_stitch s;
    char out[512];
    for (int with = 0; with < 2; with++) {
        hv_stitch_init(&s);
        run_window_voice(&s, "S0 T0.0 _a _b T10.0 S1 T10.0 _c _d T20.0 S0 T20.0 _e _f T30.0", 0, 0,
                         30, -INFINITY, INFINITY, 0, 30, (made_logmel){with ? lm : NULL, 3000}, 0,
                         out, sizeof out, NULL);
        const char *want = with ? "0 a b|1 c d|1 e f" : "0 a b|1 c d|0 e f";
        CHECK_MSG(strcmp(out, want) == 0, "a turn's voice (%s log-mel): %s, not %s",
                  with ? "with" : "without", out, want);
        hv_stitch_free(&s);
    }
}

/* The model misses a change of speaker inside a turn: its last turn, under
 * voice 0's token, says "e f." in voice 0 and then "g h." in voice 1.
 * With a log-mel the second sentence takes voice 1's label and becomes a
 * segment of its own, cut between the two sentences' words (the turn's
 * words spread by their pieces' bytes: "f." at 23.61 s, "g" at 26.11 s);
 * the labels learn their sentences' voices, so label 0's is voice 0's
 * alone. Without, the model's one turn. */
static void sentence_voice_stitch_case(void) {
    static float lm[3000 * VM], one[1000 * VM];
    voice_frames(lm, 0, 1000, 0);
    voice_frames(lm, 1000, 2000, 1);
    voice_frames(lm, 2000, 2500, 0);
    voice_frames(lm, 2500, 3000, 1);
    voice_frames(one, 0, 1000, 0);
    hv_stitch s;
    char out[512];
    for (int with = 0; with < 2; with++) {
        hv_stitch_init(&s);
        run_window_voice(&s,
                         "S0 T0.0 _a _b. T10.0 S1 T10.0 _c _d. T20.0 S0 T20.0 _e _f. _g _h. T30.0",
                         0, 0, 30, -INFINITY, INFINITY, 0, 30,
                         (made_logmel){with ? lm : NULL, 3000}, 1, out, sizeof out, NULL);
        const char *want = with ? "0 a b.@0.00-10.00|1 c d.@10.00-20.00|0 e f.@20.00-24.86|"
                                  "1 g h.@24.86-30.00"
                                : "0 a b.@0.00-10.00|1 c d.@10.00-20.00|0 e f. g h.@20.00-30.00";
        CHECK_MSG(strcmp(out, want) == 0, "a sentence's voice (%s log-mel): %s, not %s",
                  with ? "with" : "without", out, want);
        if (with) {
            double sig[2 * VM + HV_VOICE_PITCH_BINS], secs;
            int has = 0;
            hv_error e = {0};
            hv_voice_span span = {0, 10};
            CHECK(hv_voice_signature(one, NULL, 1000, VM, 0.01, &span, 1, sig, &secs, &has, &e) ==
                      HV_OK &&
                  has);
            double dot = 0, nn = 0;
            for (int i = 0; i < hv_voice_dim(VM); i++)
                dot += s.voice[i] * sig[i], nn += s.voice[i] * s.voice[i];
            CHECK_MSG(s.voice_has[0] && dot / sqrt(nn) > 0.9999,
                      "label 0 learns voice 0 alone (cosine %.6f)", dot / sqrt(nn));
        }
        hv_stitch_free(&s);
    }
    /* a new label whose sentences are all under HV_VOICE_MIN_S (0.8 s
     * each) keeps its speaker's voice (1.6 s) */
    static float lm2[3000 * VM];
    voice_frames(lm2, 0, 1000, 0);
    voice_frames(lm2, 1000, 1160, 1);
    hv_stitch_init(&s);
    run_window_voice(&s, "S0 T0.0 _a _b. T10.0 S1 T10.0 _c. _d. T11.6", 0, 0, 30, -INFINITY,
                     INFINITY, 0, 30, (made_logmel){lm2, 3000}, 0, out, sizeof out, NULL);
    CHECK_MSG(strcmp(out, "0 a b.|1 c. d.") == 0, "short sentences: %s", out);
    CHECK_MSG(s.cap_voice > 1 && s.voice_has[1], "a label of short sentences keeps its voice");
    hv_stitch_free(&s);
}

/* Rule 8 at the recording's end: one window puts two voices under one
 * speaker token, turn by turn (voice 0 4 s, voice 1 6 s, three times);
 * no rule of the window can tell (one label, no other voice), but the
 * segments' own signatures, kept in the stitch, split the label in two:
 * voice 1's turns take the next label. Without a log-mel no signatures
 * are kept and nothing changes. */
static void regroup_stitch_case(void) {
    static float lm[3000 * VM];
    for (int t = 0; t < 3; t++) {
        voice_frames(lm, t * 1000, t * 1000 + 400, 0);
        voice_frames(lm, t * 1000 + 400, t * 1000 + 1000, 1);
    }
    for (int with = 0; with < 2; with++) {
        hv_stitch s;
        hv_stitched o;
        char out[512];
        hv_error e = {0};
        hv_stitch_init(&s);
        run_window_voice(&s,
                         "S0 T0.0 _a T4.0 S0 T4.0 _b T10.0 S0 T10.0 _c T14.0 S0 T14.0 _d T20.0 "
                         "S0 T20.0 _e T24.0 S0 T24.0 _f T30.0",
                         0, 0, 30, -INFINITY, INFINITY, 0, 30,
                         (made_logmel){with ? lm : NULL, 3000}, 0, out, sizeof out, &o);
        CHECK_MSG(strcmp(out, "0 a|0 b|0 c|0 d|0 e|0 f") == 0, "regroup window: %s", out);
        int rows[8], label[8], n = o.n_segs < 8 ? o.n_segs : 8;
        for (int k = 0; k < n; k++) rows[k] = o.segs[k].voice, label[k] = o.segs[k].speaker;
        CHECK_MSG(n == 6 && (with ? s.n_seg == 6 && rows[5] == 5 : rows[0] == -1),
                  "regroup window: the segments' signature rows (%d)", s.n_seg);
        CHECK(hv_stitch_regroup(&s, 0.85, n, rows, label, &e) == HV_OK);
        CHECK_MSG(labels_are(label, n, with ? "0 1 0 1 0 1" : "0 0 0 0 0 0"),
                  "regroup: two voices under one token (%s log-mel)", with ? "with" : "without");
        hv_stitched_free(&o);
        hv_stitch_free(&s);
    }
}

static void stitch_cases(void) {
    hv_stitch s;
    char out[512];
    hv_stitch_init(&s);
    /* window 0 [0, 30) keeps [-inf, 27); window 1 [24, 40) keeps [27, inf):
     * "x y z" lie at 25, 27, 29 in both; window 1 numbers their speaker 0
     * (the first it hears) and a new one 1 */
    run_window(&s, "S0 T0.0 _a _b T20.0 S1 T24.0 _x _y _z T30.0", 0, 0, 30, -INFINITY, 27, 0, 24,
               out, sizeof out);
    CHECK_MSG(strcmp(out, "0 a b|1 x") == 0, "window 0: %s", out);
    run_window(&s, "S0 T0.0 _x _y _z T6.0 S1 T6.0 _w T8.0", 1, 24, 40, 27, INFINITY, 30, 40, out,
               sizeof out);
    CHECK_MSG(strcmp(out, "1 y z|2 w") == 0, "window 1: %s", out);
    hv_stitch_free(&s);
}

int main(void) {
    link_cases();
    heal_cases();
    turn_voice_cases();
    regroup_cases();
    stitch_cases();
    voice_stitch_case();
    heal_stitch_case();
    turn_voice_stitch_case();
    sentence_voice_stitch_case();
    regroup_stitch_case();
    hv_tokenizer_free(&tok);
    TEST_END();
}
