/*
 * The cue limits as options of the CLI and the server: their rows, their
 * --help lines, their check. The subtitles themselves are the library's
 * (hviske_output.h).
 */
#ifndef HV_PROGLIB_CUE_OPTIONS_H
#define HV_PROGLIB_CUE_OPTIONS_H

#include <stddef.h>

#include "hviske.h"
#include "cmdline.h"

/* The limits of a cue are hv_cue_params (hviske.h); cues are built by
 * hv_cues_build and hv_segment_cues in the library. */

/* The cue options, the same in the CLI and the server (as
 * HVT_VAD_OPTION_IDS in cmdline.h): their indices, their rows for an
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

#endif /* HV_PROGLIB_CUE_OPTIONS_H */
