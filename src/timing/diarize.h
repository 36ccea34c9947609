/* The token stream of a diarize-and-timestamp model (docs/DIARIZE.md):
 * `<|spltoken0|><|t:0.0|> text<|t:2.4|><|spltoken1|><|t:2.4|> text<|t:3.8|>`
 * parsed into segments with a speaker and the model's own start and end,
 * malformed streams repaired by the rules listed at hv_diarize_parse. */
#ifndef HV_DIARIZE_H
#define HV_DIARIZE_H

#include <stdint.h>

#include "model/tokenizer.h"
#include "util/error.h"

/* The number of speaker tokens <|spltoken0|>..<|spltoken7|>. */
#define HV_DIAR_SPEAKERS 8

/* Longer audio is transcribed in windows of at most HV_DIAR_WINDOW_S (the
 * times <|t:0.0|>..<|t:29.9|> reach) that overlap their neighbours by
 * HV_DIAR_OVERLAP_S, where both transcribe the same words that link their
 * speakers (docs/DIARIZE.md, "Any length"). */
#define HV_DIAR_WINDOW_S  30.0
#define HV_DIAR_OVERLAP_S 4.0

/* What one token of the stream is. */
typedef enum hv_diar_kind {
    HV_DIAR_TEXT = 0,    /* anything else (decoded as text, or dropped by decoding) */
    HV_DIAR_SPEAKER = 1, /* <|spltokenK|>: value is K */
    HV_DIAR_TIME = 2     /* <|t:S.S|>: value is S.S seconds */
} hv_diar_kind;

typedef struct hv_diar_tok {
    hv_diar_kind kind;
    int word_start; /* HV_DIAR_TEXT: 1 when the piece begins a word (a
                       leading U+2581, or a non-normal piece), 0 when it
                       continues one */
    float value;
} hv_diar_tok;

/* Repairs hv_diarize_parse made to a segment (bits of hv_diar_seg.repairs). */
enum {
    HV_DIAR_NO_START = 1 << 0,   /* no start time: the previous end (or 0) */
    HV_DIAR_NO_END = 1 << 1,     /* no end time: the next start (or the window end) */
    HV_DIAR_BACKWARDS = 1 << 2,  /* a time before an earlier one, raised to it */
    HV_DIAR_PAST_END = 1 << 3,   /* a time past the window's end, lowered to it */
    HV_DIAR_NO_SPEAKER = 1 << 4, /* text before any speaker token */
    HV_DIAR_MID_WORD = 1 << 5    /* a speaker change inside a word, moved after it */
};

typedef struct hv_diar_seg {
    int speaker;      /* 0..HV_DIAR_SPEAKERS-1, -1 where the stream names none */
    float start, end; /* seconds from the window's start, start <= end */
    int first, n;     /* its text tokens: stream positions pos[first..first+n) */
    unsigned repairs; /* HV_DIAR_* bits */
} hv_diar_seg;

typedef struct hv_diar {
    hv_diar_seg *segs; /* [n_segs], in stream order */
    int n_segs;
    int *pos; /* [n_pos] stream positions of the text tokens, in order */
    int n_pos;
} hv_diar;

/* The kind of token id (a piece of t; ids outside it are text). */
hv_diar_tok hv_diarize_classify(const hv_tokenizer *t, int32_t id);

/* The diarize prompt's pieces that t lacks: NULL when it has all of
 * <|timestamp|>, <|diarize|>, <|spltoken0|> and <|t:0.0|>, else the first
 * one missing. */
const char *hv_diarize_missing_piece(const hv_tokenizer *t);

/* Parses toks[0..n) (a window's generated tokens, EOS excluded) into
 * segments. A speaker token opens a turn; the first time token of a turn
 * (before its text) is its start, the next one after text is its end; text
 * after an end time without a new speaker token is a new segment of the
 * same speaker. Repairs, never dropping a text token:
 *   - a time before an earlier time is raised to it (BACKWARDS); one past
 *     window (seconds) is lowered to it (PAST_END);
 *   - a segment without a start starts at the previous segment's end, or
 *     at 0 (NO_START); one without an end ends at the next segment's
 *     start, or at window (NO_END);
 *   - text before any speaker token takes the speaker of the first speaker
 *     token after it, or -1 where there is none (NO_SPEAKER);
 *   - word-continuing pieces at the start of a segment (a speaker token
 *     inside a word) join the previous segment (MID_WORD); a segment
 *     left without text by that is removed.
 * Segments without text tokens (a speaker and times only) are not
 * segments. HV_ERR_NOMEM is the only failure; free with hv_diar_free. */
hv_status hv_diarize_parse(const hv_diar_tok *toks, int n, float window, hv_diar *out, hv_error *e);

/* hv_diarize_classify of each id, then hv_diarize_parse. */
hv_status hv_diarize_parse_ids(const hv_tokenizer *t, const int32_t *ids, int n, float window,
                               hv_diar *out, hv_error *e);

void hv_diar_free(hv_diar *d);

#endif
