/* Chunks from speech regions (src/audio/speech_chunks.c): every region's
 * samples in exactly one chunk, chunks within the clip length, cuts in the
 * longest pauses, and the map back to the input's timeline. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audio/speech_chunks.h"
#include "testlib.h"

/* A 100 Hz "sample rate" keeps buffers small: 35 s = 3500 samples. */
static const hv_speech_chunk_params P = {3500, 500, 16, 0, 0};

/* The plan covers exactly the regions, in order, each chunk at most
 * max_chunk samples of speech. */
static int plan_is_sound(const hv_piece_plan *pl, const hv_span *r, size_t nr) {
    size_t ri = 0, pos = 0; /* walks the regions as the pieces consume them */
    if (pl->first[0] != 0 || pl->first[pl->n_chunks] != pl->n_pieces) return 0;
    for (int c = 0; c < pl->n_chunks; c++) {
        if (pl->first[c + 1] <= pl->first[c]) return 0;
        if (hv_piece_plan_chunk_samples(pl, c) > P.max_chunk) return 0;
    }
    for (int k = 0; k < pl->n_pieces; k++) {
        const hv_span *s = &pl->pieces[k];
        if (ri >= nr || s->start != (pos ? pos : r[ri].start) || s->end <= s->start ||
            s->end > r[ri].end)
            return 0;
        pos = s->end;
        if (pos == r[ri].end) ri++, pos = 0;
    }
    return ri == nr;
}

static void test_small(void) {
    float *x = hv_test_noise(10000, 1);
    hv_piece_plan pl;
    CHECK(hv_piece_plan_from_speech(x, 10000, NULL, 0, &P, &pl, NULL) == HV_OK);
    CHECK(pl.n_chunks == 0 && pl.n_pieces == 0);
    hv_piece_plan_free(&pl);

    /* three regions with 40 s of pauses around them: one chunk */
    hv_span r[] = {{100, 600}, {2000, 2500}, {7000, 7300}};
    CHECK(hv_piece_plan_from_speech(x, 10000, r, 3, &P, &pl, NULL) == HV_OK);
    CHECK(pl.n_chunks == 1 && pl.n_pieces == 3 && plan_is_sound(&pl, r, 3));
    CHECK(hv_piece_plan_chunk_samples(&pl, 0) == 1300);
    /* the map back: piece starts, inside, the joins and the end */
    CHECK(hv_piece_plan_to_input(&pl, 0, 0) == 100);
    CHECK(hv_piece_plan_to_input(&pl, 0, 499) == 599);
    CHECK(hv_piece_plan_to_input(&pl, 0, 500) == 2000);
    CHECK(hv_piece_plan_to_input(&pl, 0, 1000) == 7000);
    CHECK(hv_piece_plan_to_input(&pl, 0, 1300) == 7300);
    hv_piece_plan_free(&pl);
    free(x);
}

static void test_cuts(void) {
    size_t n = 40000;
    float *x = hv_test_noise(n, 2);
    /* 5 s of speech every 6 s (1 s pauses), except one 3 s pause after the
     * fifth region: 25 s of speech lie before it */
    hv_span r[40];
    size_t nr = 0, t = 0;
    for (int i = 0; i < 30; i++) {
        r[nr++] = (hv_span){t, t + 500};
        t += 500 + (i == 4 ? 300 : 100);
    }
    hv_piece_plan pl;
    CHECK(hv_piece_plan_from_speech(x, n, r, nr, &P, &pl, NULL) == HV_OK);
    CHECK(plan_is_sound(&pl, r, nr));
    /* the first chunk ends at the long pause (25 s), not at 35 s */
    CHECK_MSG(pl.n_chunks > 1 && pl.first[1] == 5, "first chunk ends after %d pieces",
              pl.n_chunks > 1 ? pl.first[1] : -1);
    /* equal pauses: chunks stay full (7 regions = 35 s) instead of being
     * peeled off one region at a time */
    int full = 1;
    for (int c = 1; c + 1 < pl.n_chunks; c++) full &= pl.first[c + 1] - pl.first[c] == 7;
    CHECK_MSG(full, "%d chunks", pl.n_chunks);
    hv_piece_plan_free(&pl);

    /* a pause of max_gap or more always ends a chunk: the long pause (3 s)
     * does, the 1 s ones do not */
    hv_speech_chunk_params gap = P;
    gap.max_gap = 300;
    CHECK(hv_piece_plan_from_speech(x, n, r, nr, &gap, &pl, NULL) == HV_OK);
    CHECK(plan_is_sound(&pl, r, nr) && pl.first[1] == 5);
    gap.max_gap = 100;
    hv_piece_plan_free(&pl);
    CHECK(hv_piece_plan_from_speech(x, n, r, nr, &gap, &pl, NULL) == HV_OK);
    CHECK(plan_is_sound(&pl, r, nr) && pl.n_chunks == (int)nr);
    hv_piece_plan_free(&pl);
    free(x);
}

static void test_long_region(void) {
    size_t n = 20000;
    float *x = hv_test_noise(n, 3);
    /* 120 s of speech without a pause, then a short region */
    hv_span r[] = {{1000, 13000}, {14000, 14400}};
    hv_piece_plan pl;
    CHECK(hv_piece_plan_from_speech(x, n, r, 2, &P, &pl, NULL) == HV_OK);
    CHECK(plan_is_sound(&pl, r, 2));
    CHECK_MSG(pl.n_pieces >= 5, "%d pieces", pl.n_pieces);
    /* the long region's pieces are cut as the energy plan cuts: at least
     * max_chunk - context long except its last */
    int ok = 1;
    for (int k = 0; k + 2 < pl.n_pieces; k++) {
        size_t len = pl.pieces[k].end - pl.pieces[k].start;
        ok &= len <= P.max_chunk && len >= P.max_chunk - P.context;
    }
    CHECK(ok);
    hv_piece_plan_free(&pl);
    free(x);
}

static void test_bad_regions(void) {
    float *x = hv_test_noise(1000, 4);
    hv_piece_plan pl;
    hv_error e = {0};
    hv_span overlap[] = {{0, 100}, {50, 200}};
    hv_span past[] = {{900, 1001}};
    hv_span empty[] = {{10, 10}};
    CHECK(hv_piece_plan_from_speech(x, 1000, overlap, 2, &P, &pl, &e) == HV_ERR_INVALID_ARG);
    CHECK(strstr(e.msg, "region 1") != NULL);
    CHECK(pl.pieces == NULL && pl.first == NULL);
    CHECK(hv_piece_plan_from_speech(x, 1000, past, 1, &P, &pl, &e) == HV_ERR_INVALID_ARG);
    CHECK(hv_piece_plan_from_speech(x, 1000, empty, 1, &P, &pl, &e) == HV_ERR_INVALID_ARG);
    hv_speech_chunk_params bad = {100, 200, 16, 0, 0};
    CHECK(hv_piece_plan_from_speech(x, 1000, NULL, 0, &bad, &pl, &e) == HV_ERR_INVALID_ARG);
    free(x);
}

/* keep_pause: half of up to keep_pause of each pause goes with the speech
 * on either side (half of a shorter pause each, so neighbours meet), the
 * speech spans stay the regions, and chunk lengths count the kept audio. */
static void test_kept_pauses(void) {
    size_t n = 10000;
    float *x = hv_test_noise(n, 5);
    hv_speech_chunk_params p = P;
    p.keep_pause = 100;
    /* 30 before the first; pauses of 40 and 1000; 500 after the last */
    hv_span r[] = {{30, 500}, {540, 1000}, {2000, 9500}};
    hv_piece_plan pl;
    CHECK(hv_piece_plan_from_speech(x, n, r, 3, &p, &pl, NULL) == HV_OK);
    CHECK(pl.n_pieces >= 4);
    CHECK(pl.pieces[0].start == 0 && pl.pieces[0].end == 520);    /* 30 before: all of it */
    CHECK(pl.pieces[1].start == 520 && pl.pieces[1].end == 1050); /* 40: half each */
    CHECK(pl.pieces[2].start == 1950);                            /* 1000: 50 each */
    CHECK(pl.pieces[pl.n_pieces - 1].end == 9550);
    CHECK(pl.speech[0].start == 30 && pl.speech[0].end == 500 && pl.speech[1].start == 540);
    CHECK(pl.speech[pl.n_pieces - 1].end == 9500);
    int ok = 1; /* each piece's speech lies inside it */
    for (int k = 0; k < pl.n_pieces; k++)
        ok &= pl.speech[k].start >= pl.pieces[k].start && pl.speech[k].end <= pl.pieces[k].end &&
              pl.speech[k].start <= pl.speech[k].end;
    CHECK(ok);
    /* the first chunk holds the first two regions and their kept pauses;
     * its speech runs from the first region's start */
    hv_span s0 = hv_piece_plan_chunk_speech(&pl, 0);
    CHECK(pl.first[1] >= 2 && s0.start == 30);
    for (int c = 0; c < pl.n_chunks; c++) ok &= hv_piece_plan_chunk_samples(&pl, c) <= p.max_chunk;
    CHECK(ok);
    hv_piece_plan_free(&pl);
    free(x);
}

/* Diarize windows: each core chunk widened by up to `reach` into its
 * neighbours (whole pieces while they fit, then a part), cut in the
 * middle of the pause between cores. */
static void test_overlap(void) {
    /* cores: [0,40) [60,100) | [150,170) [180,260) | [300,320) */
    hv_span pieces[] = {{0, 40}, {60, 100}, {150, 170}, {180, 260}, {300, 320}};
    size_t b[] = {0, 0, 0, 0, 0, 0};
    hv_piece_plan core = {0}, w = {0};
    hv_error e = {0};
    CHECK(hv_piece_plan_from_bounds(b, 5, &core, &e) == HV_OK);
    for (int i = 0; i < 5; i++) core.pieces[i] = core.speech[i] = pieces[i];
    core.first[1] = 2, core.first[2] = 4, core.first[3] = 5;
    core.n_chunks = 3;
    size_t cuts[4];
    CHECK(hv_piece_plan_overlap(&core, 30, &w, cuts, &e) == HV_OK);
    static const hv_span want[] = {/* window 0: its core, then 20 + 10 of core 1 */
                                   {0, 40},
                                   {60, 100},
                                   {150, 170},
                                   {180, 190},
                                   /* window 1: 30 of core 0's end, its core, 20 of core 2 */
                                   {70, 100},
                                   {150, 170},
                                   {180, 260},
                                   {300, 320},
                                   /* window 2: 30 of core 1's end, its core */
                                   {230, 260},
                                   {300, 320}};
    static const int first[] = {0, 4, 8, 10};
    int ok = w.n_chunks == 3 && w.n_pieces == 10;
    for (int i = 0; ok && i < 10; i++)
        ok = w.pieces[i].start == want[i].start && w.pieces[i].end == want[i].end &&
             w.speech[i].start == want[i].start && w.speech[i].end == want[i].end;
    for (int i = 0; ok && i < 4; i++) ok = w.first[i] == first[i];
    CHECK_MSG(ok, "overlap plan: %d windows, %d pieces", w.n_chunks, w.n_pieces);
    CHECK(cuts[0] == 0 && cuts[1] == 125 && cuts[2] == 280 && cuts[3] == SIZE_MAX);
    CHECK(hv_piece_plan_to_input(&w, 1, 0) == 70 && hv_piece_plan_to_input(&w, 1, 30) == 150);
    hv_piece_plan_free(&w);
    /* no reach: the cores themselves */
    CHECK(hv_piece_plan_overlap(&core, 0, &w, cuts, &e) == HV_OK);
    CHECK(w.n_pieces == 5 && w.first[1] == 2 && w.first[2] == 4 && w.pieces[2].start == 150);
    hv_piece_plan_free(&w);
    hv_piece_plan_free(&core);
}

int main(void) {
    test_overlap();
    test_small();
    test_cuts();
    test_long_region();
    test_bad_regions();
    test_kept_pauses();
    TEST_END();
}
