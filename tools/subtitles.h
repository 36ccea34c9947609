/*
 * Transcript writers shared by the CLI (hviske) and the server
 * (hviske-server): SubRip and WebVTT subtitles, the transcript as one line,
 * and the UTF-8 cleaning of model text. Both programs write with these, so
 * the server's text, srt and vtt bodies are byte for byte what the CLI
 * writes with --format txt, srt and vtt.
 *
 * Subtitles come two ways. With word times (hv_result_words), the words
 * are grouped into readable cues (hvt_build_cues: sentence ends first,
 * then clause punctuation and the longest pauses; at most max_seconds,
 * max_lines lines of max_line_chars characters; docs/CLI.md "Subtitles")
 * and written with hvt_write_srt_cues / hvt_write_vtt_cues. Without them,
 * hvt_write_srt / hvt_write_vtt write one cue per segment.
 */
#ifndef HV_TOOLS_SUBTITLES_H
#define HV_TOOLS_SUBTITLES_H

#include <stddef.h>
#include <stdio.h>

#include "hviske.h"
#include "tool_util.h"

/* A copy of s with every invalid UTF-8 sequence replaced by U+FFFD, so
 * that JSON, SRT and VTT made from model text or a file name are valid
 * whatever bytes it holds. NULL when out of memory; free() it. */
char *hvt_utf8_clean(const char *s);

/* File names in JSON, losslessly (docs/CLI.md, "File names in JSON"). A
 * name that is valid UTF-8 is written as it is. One that is not is
 * written with each byte outside a valid UTF-8 sequence as the four
 * characters \xHH (lower-case hex; Python's
 * name.decode("utf-8", "backslashreplace")), and the object gets
 * KEY_bytes as well: the name's bytes in base64 (RFC 4648, padded), so
 * two names differing only in such bytes stay apart. */
int hvt_utf8_valid(const char *s);            /* 1: valid UTF-8 */
char *hvt_name_escape(const char *name);      /* free() it; NULL: out of memory */
char *hvt_base64(const void *data, size_t n); /* free() it; NULL: out of memory */
struct cJSON;
/* Adds key (and key_bytes when needed) to o; 0 when out of memory. */
int hvt_json_add_name(struct cJSON *o, const char *key, const char *name);

/* Writes text as one line: line breaks inside it (a model can emit them as
 * byte pieces) become spaces, then a newline. The text is written as it is
 * otherwise (not cleaned). */
void hvt_put_line(FILE *f, const char *text);
/* The same without the newline (--stream writes a line segment by
 * segment). */
void hvt_put_text(FILE *f, const char *text);

/* SubRip: cues numbered from 1, "HH:MM:SS,mmm --> HH:MM:SS,mmm", the
 * cleaned text on one line, a blank line; one cue per segment. Cue times
 * come from the segments' sample positions at rate, rounded to the
 * millisecond. 0 on success, -1 when out of memory (write errors show in
 * ferror(f)). */
int hvt_write_srt(FILE *f, const hv_result *res, int rate);

/* WebVTT: "WEBVTT" and a blank line, then per segment
 * "HH:MM:SS.mmm --> HH:MM:SS.mmm", the cleaned text on one line with '&',
 * '<' and '>' escaped, a blank line. Returns as hvt_write_srt. */
int hvt_write_vtt(FILE *f, const hv_result *res, int rate);

/* --------------------------------------------- cues from word times */

/* The limits of a cue, and their allowed ranges (hvt_cue_params_check). */
typedef struct hvt_cue_params {
    double max_seconds; /* longest cue, 1 to 600 s (default 7) */
    int max_lines;      /* lines per cue, 1 to 10 (default 2) */
    int max_line_chars; /* characters (Unicode code points) per line,
                           10 to 1000 (default 42) */
} hvt_cue_params;

#define HVT_CUE_MAX_SECONDS_MIN 1.0
#define HVT_CUE_MAX_SECONDS_MAX 600.0
enum {
    HVT_CUE_MAX_LINES_MIN = 1,
    HVT_CUE_MAX_LINES_MAX = 10,
    HVT_CUE_LINE_CHARS_MIN = 10,
    HVT_CUE_LINE_CHARS_MAX = 1000,
    HVT_CUE_LONG_PAUSE_MS = 1500, /* a pause longer than this ends a cue */
    HVT_CUE_MIN_SHOW_MS = 500     /* what a zero-length cue is given, room
                                     before the next cue permitting */
};

/* 7 s, 2 lines, 42 characters. */
hvt_cue_params hvt_cue_default_params(void);

/* The cue options, the same in the CLI and the server (as
 * HVT_VAD_OPTION_IDS in tool_util.h): their indices, their rows for an
 * options struct with a field `cues` (hvt_cue_params), their --help lines. */
#define HVT_CUE_OPTION_IDS O_MAX_CUE_SECONDS, O_MAX_LINES, O_MAX_LINE_CHARS
#define HVT_CUE_OPTION_ROWS(type)                                                                  \
    [O_MAX_CUE_SECONDS] =                                                                          \
        HVT_OPT("max-cue-seconds", 0, HVT_DOUBLE, offsetof(type, cues.max_seconds),                \
                HVT_CUE_MAX_SECONDS_MIN, HVT_CUE_MAX_SECONDS_MAX, "a number from 1 to 600"),       \
    [O_MAX_LINES] =                                                                                \
        HVT_OPT("max-lines", 0, HVT_INT, offsetof(type, cues.max_lines), HVT_CUE_MAX_LINES_MIN,    \
                HVT_CUE_MAX_LINES_MAX, "an integer from 1 to 10"),                                 \
    [O_MAX_LINE_CHARS] =                                                                           \
        HVT_OPT("max-line-chars", 0, HVT_INT, offsetof(type, cues.max_line_chars),                 \
                HVT_CUE_LINE_CHARS_MIN, HVT_CUE_LINE_CHARS_MAX, "an integer from 10 to 1000")
#define HVT_CUE_USAGE                                                                              \
    "      --max-cue-seconds S  srt, vtt: longest cue, 1..600 (default 7)\n"                       \
    "      --max-lines N      srt, vtt: lines per cue, 1..10 (default 2)\n"                        \
    "      --max-line-chars N srt, vtt: characters per line, 10..1000\n"                           \
    "                         (default 42)\n"

/* 0 when every limit of p lies in its range (above; max_seconds finite);
 * otherwise -1 and a message naming the first bad one by its command line
 * option ("--max-cue-seconds must be a number from 1 to 600") in msg[n]. */
int hvt_cue_params_check(const hvt_cue_params *p, char *msg, size_t n);

/* One cue: its times (seconds, whole milliseconds), the input words it
 * covers, and its text: the words' cleaned texts joined by single spaces,
 * lines joined by '\n' (no '\n' at the end). */
typedef struct hvt_cue {
    double start, end;
    int first_word, n_words; /* words[first_word .. first_word + n_words - 1];
                                it starts and ends with a word that has text */
    char *text;              /* owned: hvt_cues_free */
} hvt_cue;

/*
 * Groups words[0..n-1] (the library's order: in time, each start <= end)
 * into cues; *out gets n_out of them (NULL and 0 when no word has text).
 * 0 on success, -1 when out of memory (then *out is NULL and *n_out 0).
 * p NULL: the defaults; a limit outside its range is taken as the nearest
 * allowed value (a NaN one as its default).
 *
 * Every word with text is in exactly one cue, in order. A word's text is
 * cleaned (hvt_utf8_clean), its control characters and line breaks
 * (also U+0085, U+2028, U+2029) become spaces, runs of spaces one, and
 * leading and trailing spaces go; a word left empty (or NULL) is shown
 * nowhere and its times are ignored, and a word left with spaces inside
 * may be broken across lines there (never across cues). Times: NaN or infinite ones are
 * taken from the word's other time or else the previous word's end,
 * negative ones are 0, above 1e9 s are 1e9 s; starts are made
 * non-decreasing and each end at least its start; then all is in whole
 * milliseconds. The rules (docs/CLI.md "Subtitles"):
 * - a pause of more than HVT_CUE_LONG_PAUSE_MS between words ends a cue;
 * - a cue lasts at most max_seconds (from its first word's start to its
 *   last word's end), unless it is one word that lasts longer;
 * - its words fit max_lines lines of max_line_chars characters, wrapped
 *   at spaces; a word longer than a line has a line of its own (a cue of
 *   that one word may then have more lines);
 * - among the ways of cutting that keep these limits, the cheapest is
 *   taken: a cut after a sentence end (. ? ! ... and their full-width
 *   forms, after closing quotes or brackets) earns, one after , ; : or a
 *   dash costs, one elsewhere costs more; a pause before the next word
 *   makes a cut cheaper, the longer the cheaper (up to 1 s); each cue
 *   costs a little, and more when shorter than 5/6 s, when it is one word
 *   that is not a whole sentence (an orphan), or when it holds a sentence
 *   end and goes on into a sentence it does not finish;
 * - lines: as few as fit; where two or more are needed, the breaks that
 *   make the lines most even, preferring breaks after punctuation;
 * - times: start = the first word's start, end = the last word's end,
 *   then: a start not after the previous cue's start is moved 1 ms after
 *   it (only for words sharing a millisecond), an end after the next
 *   cue's start is cut back to it, and a cue left with end <= start ends
 *   HVT_CUE_MIN_SHOW_MS after its start or at the next cue's start,
 *   whichever is first. So start < end <= the next cue's start.
 */
int hvt_build_cues(const hv_word *words, int n, const hvt_cue_params *p, hvt_cue **out, int *n_out);
void hvt_cues_free(hvt_cue *cues, int n); /* NULL is allowed */

/* SubRip and WebVTT from cues, as hvt_write_srt and hvt_write_vtt (the
 * same header, numbering, time forms and escaping; times from the cues'
 * seconds rounded to the millisecond, NaN or negative ones as 0), but each
 * '\n' of a cue's text starts a new line; '\r' and other line breaks
 * become spaces, blank lines are left out, and a cue with no text left is
 * left out (numbers stay consecutive). 0 on success, -1 when out of
 * memory (write errors show in ferror(f)). */
int hvt_write_srt_cues(FILE *f, const hvt_cue *cues, int n);
int hvt_write_vtt_cues(FILE *f, const hvt_cue *cues, int n);

/* [{"word", "start", "end", "probability"}, ...] of w[n] (times rounded to
 * the millisecond, probabilities to 4 decimals, texts cleaned): the JSON
 * of word times, the same in the CLI's JSON and the server's
 * verbose_json. NULL when out of memory. */
struct cJSON *hvt_json_words(const hv_word *w, int n);

/* SubRip (vtt 0) or WebVTT (vtt 1) of a result: cues built from its
 * words (hvt_build_cues with p, NULL for the defaults) when it has word
 * times, else one cue per segment. 0, or -1 when out of memory. */
int hvt_write_subtitles(FILE *f, const hv_result *res, int rate, const hvt_cue_params *p, int vtt);

/* The cues of one segment as it comes (hviske --stream): built from its
 * own words as hvt_write_subtitles builds a result's (one cue of the
 * segment without words), SubRip numbers going on from *number, no WebVTT
 * header. Cues never span two segments, and the time rules that look at
 * the next cue stop at the segment's end; so the cues of all segments
 * equal hvt_write_subtitles's when the segments lie more than
 * HVT_CUE_LONG_PAUSE_MS apart (such a pause ends a cue anyway), and may
 * be cut differently where they lie closer. 0, or -1 when out of
 * memory. */
int hvt_write_segment_cues(FILE *f, const hv_segment *g, int rate, const hvt_cue_params *p, int vtt,
                           int *number);

#endif /* HV_TOOLS_SUBTITLES_H */
