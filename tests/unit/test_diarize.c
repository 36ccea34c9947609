/* The diarize token stream parser (src/timing/diarize.c) on hand-written
 * streams: the well-formed case and each repair rule of hv_diarize_parse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "testlib.h"
#include "timing/diarize.h"

static hv_tokenizer tok;

/* Id of a piece, appended (normal, or control for "<|...|>") on first use. */
static int32_t piece(const char *text) { return hv_test_piece(&tok, text); }

/* Parses a stream written as space-separated words: "S3" is <|spltoken3|>,
 * "T2.4" is <|t:2.4|>, "_x" is the piece "▁x", anything else that piece.
 * Writes the segments as "SPEAKER START-END text|..." into out, and the
 * union of their repair bits into *repairs. */
static void parse(const char *stream, float window, char *out, size_t cap, unsigned *repairs) {
    int32_t ids[64];
    int n = hv_test_stream(&tok, stream, ids, 64);
    hv_diar d;
    hv_error e = {0};
    CHECK(hv_diarize_parse_ids(&tok, ids, n, window, &d, &e) == HV_OK);
    size_t len = 0;
    out[0] = '\0';
    *repairs = 0;
    for (int k = 0; k < d.n_segs; k++) {
        const hv_diar_seg *s = &d.segs[k];
        int32_t seg_ids[64];
        for (int j = 0; j < s->n; j++) seg_ids[j] = ids[d.pos[s->first + j]];
        char *text = hv_tokenizer_decode(&tok, seg_ids, s->n);
        len += (size_t)snprintf(out + len, cap - len, "%s%d %.1f-%.1f %s", k ? "|" : "", s->speaker,
                                s->start, s->end, text);
        free(text);
        CHECK(s->start <= s->end);
        *repairs |= s->repairs;
    }
    hv_diar_free(&d);
}

static void expect(const char *stream, float window, const char *want, unsigned want_repairs) {
    char got[1024];
    unsigned rep;
    parse(stream, window, got, sizeof got, &rep);
    CHECK_MSG(strcmp(got, want) == 0, "%s\n  got  %s\n  want %s", stream, got, want);
    CHECK_MSG(rep == want_repairs, "%s: repairs 0x%x, want 0x%x", stream, rep, want_repairs);
}

int main(void) {
    /* well-formed: the model card's example */
    expect("S0 T0.0 _Welcome _back T2.4 S1 T2.4 _Thanks T3.8", 30,
           "0 0.0-2.4 Welcome back|1 2.4-3.8 Thanks", 0);
    /* same speaker again after an end time: a new segment */
    expect("S2 T0.5 _a T1.0 T1.5 _b T2.0", 30, "2 0.5-1.0 a|2 1.5-2.0 b", 0);
    /* missing end: the next start; the last one: the window's end */
    expect("S0 T0.0 _a S1 T1.2 _b", 10, "0 0.0-1.2 a|1 1.2-10.0 b", HV_DIAR_NO_END);
    /* missing end and next start: the next time in the stream */
    expect("S0 T0.0 _a S1 _b T3.0", 10, "0 0.0-3.0 a|1 3.0-3.0 b",
           HV_DIAR_NO_END | HV_DIAR_NO_START);
    /* missing start: the previous end, or 0 */
    expect("S0 _a T1.0 S1 _b T2.0", 10, "0 0.0-1.0 a|1 1.0-2.0 b", HV_DIAR_NO_START);
    /* the start of a turn without text is not the next turn's */
    expect("S0 T0.0 _a T1.0 S1 T5.0 S0 _b T6.0", 10, "0 0.0-1.0 a|0 1.0-6.0 b", HV_DIAR_NO_START);
    /* times going backwards: raised to the earlier time */
    expect("S0 T2.0 _a T1.0 S1 T0.5 _b T3.0", 10, "0 2.0-2.0 a|1 2.0-3.0 b", HV_DIAR_BACKWARDS);
    /* a time past the window's end: lowered to it */
    expect("S0 T1.0 _a T9.5 S1 T9.5 _b T12.0", 8, "0 1.0-8.0 a|1 8.0-8.0 b", HV_DIAR_PAST_END);
    /* text before any speaker token: the first speaker token's speaker */
    expect("T0.0 _a T1.0 S3 T1.0 _b T2.0", 10, "3 0.0-1.0 a|3 1.0-2.0 b", HV_DIAR_NO_SPEAKER);
    /* no speaker token at all: -1, the text kept */
    expect("_a _b", 4, "-1 0.0-4.0 a b", HV_DIAR_NO_SPEAKER | HV_DIAR_NO_START | HV_DIAR_NO_END);
    /* a speaker token inside a word: the word stays whole with its start */
    expect("S0 T0.0 _Hel S1 lo _there T2.0", 10, "0 0.0-2.0 Hello|1 2.0-2.0 there",
           HV_DIAR_MID_WORD | HV_DIAR_NO_END | HV_DIAR_NO_START);
    /* a turn that is only a word's end: joined, the turn removed */
    expect("S0 T0.0 _Hel T1.0 S1 T1.0 lo T2.0", 10, "0 0.0-1.0 Hello", HV_DIAR_MID_WORD);
    /* speakers and times without text are no segments; no tokens, none */
    expect("S0 T0.0 T1.0 S1 T1.0 T2.0", 10, "", 0);
    expect("", 10, "", 0);
    /* a speaker token beyond 7 is text (dropped by decoding) */
    expect("S0 T0.0 _a <|spltoken8|> _b T1.0", 10, "0 0.0-1.0 a b", 0);

    /* classification: only exact speaker and time pieces */
    const char *not_time[] = {"<|t:|>",    "<|t:1.|>",     "<|t:.5|>",        "<|t:1.5x|>",
                              "<|t:1,5|>", "<|spltoken|>", "<|spltoken1.5|>", "<|t:1.5|"};
    for (size_t i = 0; i < sizeof not_time / sizeof not_time[0]; i++)
        CHECK_MSG(hv_diarize_classify(&tok, piece(not_time[i])).kind == HV_DIAR_TEXT, "%s",
                  not_time[i]);
    hv_diar_tok k = hv_diarize_classify(&tok, piece("<|t:29.9|>"));
    CHECK(k.kind == HV_DIAR_TIME && k.value > 29.89f && k.value < 29.91f);
    k = hv_diarize_classify(&tok, piece("<|spltoken7|>"));
    CHECK(k.kind == HV_DIAR_SPEAKER && k.value == 7);
    CHECK(hv_diarize_classify(&tok, -1).kind == HV_DIAR_TEXT);
    CHECK(hv_diarize_classify(&tok, tok.n_pieces).kind == HV_DIAR_TEXT);

    /* the prompt's pieces: named when missing */
    CHECK(strcmp(hv_diarize_missing_piece(&tok), "<|timestamp|>") == 0);
    piece("<|timestamp|>");
    CHECK(strcmp(hv_diarize_missing_piece(&tok), "<|diarize|>") == 0);
    piece("<|diarize|>");
    CHECK(hv_diarize_missing_piece(&tok) == NULL);
    hv_tokenizer_free(&tok);
    TEST_END();
}
