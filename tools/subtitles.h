/*
 * Transcript writers shared by the CLI (hviske) and the server
 * (hviske-server): SubRip and WebVTT subtitles, the transcript as one line,
 * the JSON of word times. Both programs write with these, so the server's
 * text, srt and vtt bodies are byte for byte what the CLI writes with
 * --format txt, srt and vtt.
 *
 * The cues are the library's segments (hv_segment_cues: the words of
 * each chunk grouped into readable cues, sentence ends first, then clause
 * punctuation and the longest pauses; one cue per chunk without word
 * times; docs/TIMESTAMPS.md "Segments").
 */
#ifndef HV_TOOLS_SUBTITLES_H
#define HV_TOOLS_SUBTITLES_H

#include <stddef.h>
#include <stdio.h>

#include "hviske.h"
#include "tool_util.h"

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
/* --------------------------------------------- cues from word times */

/* The limits of a cue are hv_cue_params (hviske.h); cues are built by
 * hv_cues_build and hv_segment_cues in the library. */

/* The cue options, the same in the CLI and the server (as
 * HVT_VAD_OPTION_IDS in tool_util.h): their indices, their rows for an
 * options struct with a field `cues` (hv_cue_params), their --help lines. */
#define HVT_CUE_OPTION_IDS                                                                         \
    O_MAX_CUE_SECONDS, O_MAX_LINES, O_MAX_LINE_CHARS, O_MAX_CUE_CPS, O_MIN_CUE_SECONDS,            \
        O_MIN_CUE_GAP
#define HVT_CUE_OPTION_ROWS(type)                                                                  \
    [O_MAX_CUE_SECONDS] =                                                                          \
        HVT_OPT("max-cue-seconds", 0, HVT_DOUBLE, offsetof(type, cues.max_seconds),                \
                HV_CUE_MAX_SECONDS_MIN, HV_CUE_MAX_SECONDS_MAX, "a number from 1 to 600"),         \
    [O_MAX_LINES] =                                                                                \
        HVT_OPT("max-lines", 0, HVT_INT, offsetof(type, cues.max_lines), HV_CUE_MAX_LINES_MIN,     \
                HV_CUE_MAX_LINES_MAX, "an integer from 1 to 10"),                                  \
    [O_MAX_LINE_CHARS] =                                                                           \
        HVT_OPT("max-line-chars", 0, HVT_INT, offsetof(type, cues.max_line_chars),                 \
                HV_CUE_LINE_CHARS_MIN, HV_CUE_LINE_CHARS_MAX, "an integer from 10 to 1000"),       \
    [O_MAX_CUE_CPS] = HVT_OPT("max-cue-cps", 0, HVT_DOUBLE, offsetof(type, cues.max_cps), 0,       \
                              HV_CUE_MAX_CPS_MAX, "a number from 0 to 1000"),                      \
    [O_MIN_CUE_SECONDS] =                                                                          \
        HVT_OPT("min-cue-seconds", 0, HVT_DOUBLE, offsetof(type, cues.min_seconds), 0,             \
                HV_CUE_MIN_SECONDS_MAX, "a number from 0 to 10"),                                  \
    [O_MIN_CUE_GAP] = HVT_OPT("min-cue-gap", 0, HVT_DOUBLE, offsetof(type, cues.min_gap), 0,       \
                              HV_CUE_MIN_GAP_MAX, "a number from 0 to 1")
#define HVT_CUE_USAGE                                                                              \
    "      --max-cue-seconds S  srt, vtt: longest cue, 1..600 (default 7)\n"                       \
    "      --max-lines N      srt, vtt: lines per cue, 1..10 (default 2)\n"                        \
    "      --max-line-chars N srt, vtt: characters per line, 10..1000\n"                           \
    "                         (default 42)\n"                                                      \
    "      --max-cue-cps C    segments: show a cue on into the silence after it\n"                 \
    "                         until it reads at most C characters a second\n"                      \
    "                         (default 17; 0: off)\n"                                              \
    "      --min-cue-seconds S  segments: show a cue at least S seconds where\n"                   \
    "                         the silence after it allows (default 0.833; 0: off)\n"               \
    "      --min-cue-gap S    segments: at least S seconds between cues, or none\n"                \
    "                         (default 0.08: 2 frames at 25 per second; 0: off)\n"

/* 0 when every limit of p lies in its range (above; max_seconds finite);
 * otherwise -1 and a message naming the first bad one by its command line
 * option ("--max-cue-seconds must be a number from 1 to 600") in msg[n]. */
int hvt_cue_params_check(const hv_cue_params *p, char *msg, size_t n);

/* SubRip and WebVTT from cues, as hvt_write_srt and hvt_write_vtt (the
 * same header, numbering, time forms and escaping; times from the cues'
 * seconds rounded to the millisecond, NaN or negative ones as 0), but each
 * '\n' of a cue's text starts a new line; '\r' and other line breaks
 * become spaces, blank lines are left out, and a cue with no text left is
 * left out (numbers stay consecutive). 0 on success, -1 when out of
 * memory (write errors show in ferror(f)). */
int hvt_write_srt_cues(FILE *f, const hv_cue *cues, int n);
int hvt_write_vtt_cues(FILE *f, const hv_cue *cues, int n);

/* "HH:MM:SS,mmm" (sep ',': SubRip) or "HH:MM:SS.mmm" (sep '.': WebVTT)
 * for t seconds rounded to the millisecond (NaN or negative: 0; at most
 * 1e9 s) into buf[n] (n >= 16). */
void hvt_cue_time(char *buf, size_t n, double t, char sep);

/* [{"word", "start", "end", "probability"}, ...] of w[n] (times rounded to
 * the millisecond; probabilities unrounded: the library's float in the
 * shortest decimal that reads back as it, hvt_float_for_json, as the
 * token log-probs and as `python -m hviske --json` writes them; texts
 * cleaned): the JSON of word times, the same in the CLI's JSON and the
 * server's verbose_json. NULL when out of memory. */
struct cJSON *hvt_json_words(const hv_word *w, int n);

/* SubRip (vtt 0) or WebVTT (vtt 1) of a result: the cues of each of its
 * segments (hv_segment_cues with p, NULL for the defaults), numbered on
 * across them. 0, or -1 when out of memory. */
int hvt_write_subtitles(FILE *f, const hv_result *res, const hv_cue_params *p, int vtt);

/* The cues of one segment as it comes (hviske --stream), as
 * hvt_write_subtitles writes them: SubRip numbers going on from *number,
 * no WebVTT header; so the segments' cues written one by one are
 * hvt_write_subtitles's output. 0, or -1 when out of memory. */
int hvt_write_segment_cues(FILE *f, const hv_segment *g, const hv_cue_params *p, int vtt,
                           int *number);

#endif /* HV_TOOLS_SUBTITLES_H */
