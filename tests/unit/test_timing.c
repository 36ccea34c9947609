/* Word times (src/timing): words from token pieces, dynamic time warping,
 * token bounds from attention, and the snapping of word edges to pauses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "timing/align.h"
#include "timing/refine.h"
#include "timing/words.h"

/* A tokenizer made by hand: enough for hv_tokenizer_decode. */
static char *PIECES[] = {"<unk>",
                         "<|endoftext|>",
                         "<|pnc|>",
                         "\xE2\x96\x81I",
                         "\xE2\x96\x81mor",
                         "gen",
                         ".",
                         "\xE2\x96\x81",
                         "<0xC3>",
                         "<0xA6>",
                         "\xE2\x96\x81,",
                         "\xE2\x96\x81"
                         "bl"};
static uint8_t TYPES[] = {HV_PIECE_UNKNOWN, HV_PIECE_CONTROL, HV_PIECE_USER_DEFINED,
                          HV_PIECE_NORMAL,  HV_PIECE_NORMAL,  HV_PIECE_NORMAL,
                          HV_PIECE_NORMAL,  HV_PIECE_NORMAL,  HV_PIECE_BYTE,
                          HV_PIECE_BYTE,    HV_PIECE_NORMAL,  HV_PIECE_NORMAL};
static uint8_t BYTES[] = {0, 0, 0, 0, 0, 0, 0, 0, 0xC3, 0xA6, 0, 0};

static hv_tokenizer tokenizer(void) {
    hv_tokenizer t = {0};
    t.n_pieces = (int)(sizeof PIECES / sizeof *PIECES);
    t.pieces = PIECES;
    t.types = TYPES;
    t.byte_value = BYTES;
    return t;
}

static void test_words(void) {
    hv_tokenizer t = tokenizer();
    hv_chunk_word *w;
    int n;
    /* "I morgen. blæ," with a special piece and EOS among them */
    const int32_t ids[] = {2, 3, 4, 5, 6, 11, 8, 9, 10, 1};
    const float lp[] = {0,          logf(0.5f), logf(0.8f), logf(0.6f), logf(1.0f),
                        logf(0.9f), logf(0.7f), logf(0.5f), logf(0.3f), 0};
    CHECK(hv_words_split(&t, ids, lp, 10, &w, &n, NULL) == HV_OK);
    CHECK_MSG(n == 3, "%d words", n);
    if (n == 3) {
        CHECK(!strcmp(w[0].text, "I") && w[0].first == 1 && w[0].n_tokens == 1);
        CHECK(fabsf(w[0].probability - 0.5f) < 1e-5f);
        CHECK_MSG(!strcmp(w[1].text, "morgen.") && w[1].first == 2 && w[1].n_tokens == 3, "%s",
                  w[1].text);
        CHECK(fabsf(w[1].probability - 0.8f) < 1e-5f); /* (0.8 + 0.6 + 1.0) / 3 */
        /* byte pieces continue a word; a word of only "," joins it */
        CHECK_MSG(!strcmp(w[2].text, "bl\xC3\xA6,") && w[2].first == 5 && w[2].n_tokens == 4,
                  "%s %d %d", w[2].text, w[2].first, w[2].n_tokens);
    }
    hv_chunk_words_free(w, n);

    /* nothing that prints: no words (and a non-NULL array) */
    const int32_t specials[] = {2, 1, 0, 7};
    CHECK(hv_words_split(&t, specials, lp, 4, &w, &n, NULL) == HV_OK && n == 0 && w);
    hv_chunk_words_free(w, n);
    CHECK(hv_words_split(&t, specials, lp, 0, &w, &n, NULL) == HV_OK && n == 0 && w);
    hv_chunk_words_free(w, n);
    /* a transcript that starts without the word-start marker, one token */
    const int32_t one[] = {5};
    CHECK(hv_words_split(&t, one, lp, 1, &w, &n, NULL) == HV_OK && n == 1 &&
          !strcmp(w[0].text, "gen"));
    hv_chunk_words_free(w, n);
    /* a leading comma has no word to join: it is one */
    const int32_t comma[] = {10, 3};
    CHECK(hv_words_split(&t, comma, lp, 2, &w, &n, NULL) == HV_OK && n == 2 &&
          !strcmp(w[0].text, ","));
    hv_chunk_words_free(w, n);
    /* out-of-range ids print nothing */
    const int32_t bad[] = {-5, 99, 3};
    CHECK(hv_words_split(&t, bad, lp, 3, &w, &n, NULL) == HV_OK && n == 1 && w[0].first == 2);
    hv_chunk_words_free(w, n);
}

static void run_dtw(const float *sim, int rows, int cols, int *first) {
    float *D = malloc((size_t)(rows + 1) * (cols + 1) * sizeof *D);
    uint8_t *tr = malloc((size_t)(rows + 1) * (cols + 1));
    hv_dtw(sim, rows, cols, 0, first, D, tr);
    free(D);
    free(tr);
}

static void test_dtw(void) {
    /* 4 tokens over 20 frames: token r is loud in frames [5r, 5r + 5) */
    enum { R = 4, T = 20 };
    float sim[R * T];
    int first[R];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) sim[r * T + t] = t / 5 == r ? 1.0f : -1.0f;
    run_dtw(sim, R, T, first);
    for (int r = 0; r < R; r++) CHECK_MSG(first[r] == 5 * r, "row %d at %d", r, first[r]);

    /* more tokens than frames: still monotonic, within the frames */
    float big[10 * 3];
    int f2[10];
    for (int i = 0; i < 30; i++) big[i] = (float)((i * 7) % 5) - 2.0f;
    run_dtw(big, 10, 3, f2);
    CHECK(f2[0] == 0);
    for (int r = 0; r < 10; r++) CHECK(f2[r] >= 0 && f2[r] < 3 && (r == 0 || f2[r] >= f2[r - 1]));

    /* one row, one column */
    float one = 0.5f;
    int f1;
    run_dtw(&one, 1, 1, &f1);
    CHECK(f1 == 0);
}

static void test_bounds(void) {
    /* 2 layers x 2 heads; rows = 3 tokens + EOS over 40 frames; the voting
     * heads (the second layer) attend to frames 10r .. 10r + 9 */
    enum { L = 2, H = 2, R = 4, T = 40 };
    float *attn = calloc((size_t)L * H * R * T, sizeof *attn);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++)
            for (int r = 0; r < R; r++)
                for (int t = 0; t < T; t++)
                    attn[(((long)l * H + h) * R + r) * T + t] =
                        l == 1 ? (t / 10 == r ? 0.1f : 0.0f) : (float)((r * 31 + t * 17) % 7);
    hv_align_params ap = hv_align_default_params(L);
    double b[R];
    CHECK(ap.first_layer == 1);
    /* the voting layers only: the second */
    CHECK(hv_align_bounds(attn + (long)H * R * T, L - 1, H, R, T, NULL, NULL, &ap, b, NULL) ==
          HV_OK);
    for (int r = 0; r < R; r++) CHECK_MSG(fabs(b[r] - 10 * r) <= 1, "row %d at %g", r, b[r]);
    /* every layer voting, the first being noise: still near */
    CHECK(hv_align_bounds(attn, L, H, R, T, NULL, NULL, &ap, b, NULL) == HV_OK);
    for (int r = 0; r < R; r++)
        CHECK_MSG(b[r] >= 0 && b[r] < T && (r == 0 || b[r] >= b[r - 1]), "row %d at %g", r, b[r]);
    free(attn);

    /* a single row (a transcript with no tokens before the EOS) */
    float a1[2 * 2 * 1 * 5] = {0};
    double b1;
    CHECK(hv_align_bounds(a1, 2, 2, 1, 5, NULL, NULL, &ap, &b1, NULL) == HV_OK && b1 == 0);
}

/* 16 kHz: silence, then a tone at [0.50, 0.80) s, silence, a tone at
 * [1.20, 1.70) s, silence to 2 s. */
static float *two_tones(size_t *n) {
    *n = 32000;
    float *x = calloc(*n, sizeof *x);
    for (size_t i = 0; i < *n; i++) {
        double t = i / 16000.0;
        if ((t >= 0.5 && t < 0.8) || (t >= 1.2 && t < 1.7)) x[i] = 0.3f * (float)sin(i * 0.3);
        x[i] += 1e-4f * (float)((i * 2654435761u >> 16) % 1000 / 500.0 - 1.0);
    }
    return x;
}

static void test_refine(void) {
    size_t n;
    float *x = two_tones(&n);
    hv_loudness l;
    CHECK(hv_loudness_measure(&l, x, n, 16000) == 0 && l.usable && l.n == 200);
    /* the alignment's coarse times: the first word from 0 (leading
     * silence), its end and the second's start one frame off */
    hv_chunk_word w[2] = {{.start = 0.0, .end = 1.12}, {.start = 1.12, .end = 2.0}};
    hv_words_refine(w, 2, &l, 0.08);
    CHECK_MSG(fabs(w[0].start - 0.50) < 0.015 && fabs(w[0].end - 0.80) < 0.015, "%g %g", w[0].start,
              w[0].end);
    CHECK_MSG(fabs(w[1].start - 1.20) < 0.015 && fabs(w[1].end - 1.70) < 0.015, "%g %g", w[1].start,
              w[1].end);
    /* a start a little late in sound moves back to the pause's end */
    hv_chunk_word v[1] = {{.start = 1.26, .end = 1.6}};
    hv_words_refine(v, 1, &l, 0.08);
    CHECK_MSG(fabs(v[0].start - 1.20) < 0.015, "%g", v[0].start);
    /* but not further than the alignment's step */
    hv_chunk_word u[1] = {{.start = 1.45, .end = 1.6}};
    hv_words_refine(u, 1, &l, 0.08);
    CHECK_MSG(fabs(u[0].start - 1.45) < 1e-9, "%g", u[0].start);
    /* words in a pause stay, in order */
    hv_chunk_word p[2] = {{.start = 0.9, .end = 1.0}, {.start = 0.95, .end = 0.96}};
    hv_words_refine(p, 2, &l, 0.08);
    CHECK(p[0].start <= p[0].end && p[0].end <= p[1].start && p[1].start <= p[1].end);
    hv_loudness_free(&l);

    /* silence only, or too short: nothing usable, times unchanged */
    memset(x, 0, n * sizeof *x);
    CHECK(hv_loudness_measure(&l, x, n, 16000) == 0 && !l.usable);
    hv_chunk_word s[1] = {{.start = 0.3, .end = 0.7}};
    hv_words_refine(s, 1, &l, 0.08);
    CHECK(s[0].start == 0.3 && s[0].end == 0.7);
    hv_loudness_free(&l);
    CHECK(hv_loudness_measure(&l, x, 10, 16000) == 0 && !l.usable);
    hv_words_refine(s, 1, &l, 0.08);
    hv_loudness_free(&l);
    free(x);
}

int main(void) {
    test_words();
    test_dtw();
    test_bounds();
    test_refine();
    TEST_END();
}
