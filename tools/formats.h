/*
 * The output formats of a transcription (docs/CLI.md "Output formats"),
 * written by one piece of code for hviske and hviske-server: the CLI's
 * --format and the web page's downloads (docs/SERVER.md "The web page")
 * are these bytes. A writer takes a format, a spec of how to write it and
 * a FILE *, never a program's options.
 *
 *   txt           the transcript on one line; with timestamps one
 *                 "[start --> end] text" line per segment
 *   jsonl, json   hviske's JSON: one line, or indented by two spaces with
 *                 language and duration too
 *   srt, vtt      subtitles: the segments' cues (subtitles.h)
 *   csv           start,end,text per segment, times in milliseconds
 *   whisper-json  whisper-cli's -oj layout: transcription[] of
 *                 {timestamps, offsets, text}, with tokens[] (-ojf)
 *
 * The segments are the cues of each chunk's words (hv_segment_cues with
 * the spec's limits); every format that shows segments makes them so.
 */
#ifndef HV_TOOLS_FORMATS_H
#define HV_TOOLS_FORMATS_H

#include <stdio.h>

#include "hviske.h"

typedef enum hvt_format {
    HVT_FMT_TXT,
    HVT_FMT_JSONL,
    HVT_FMT_JSON,
    HVT_FMT_SRT,
    HVT_FMT_VTT,
    HVT_FMT_CSV,
    HVT_FMT_WHISPER_JSON,
    HVT_N_FORMATS
} hvt_format;

/* "txt", "jsonl", "json", "srt", "vtt", "csv", "whisper-json". */
extern const char *const HVT_FORMAT_NAMES[HVT_N_FORMATS];

/* A format name in any case ("SRT"); 0, or -1 when it is none. */
int hvt_format_parse(const char *name, hvt_format *out);

/* A format name of len bytes at name, in any case; 0 or -1. */
int hvt_format_parse_n(const char *name, size_t len, hvt_format *out);

/* The file extension of a format, without the dot ("json" for
 * whisper-json). */
const char *hvt_format_ext(hvt_format f);

/* The format a file name's extension names (".srt", ".JSON": any case;
 * .json is json), into *out; 0, or -1 when it names none. */
int hvt_format_of_path(const char *path, hvt_format *out);

/* Whether a format holds one result per line, so that several inputs can
 * share one stream (txt, jsonl); the others are one document per input. */
int hvt_format_is_stream(hvt_format f);

/* How a result is written, beyond its format. */
typedef struct hvt_format_spec {
    hv_cue_params cues;    /* the segments: cues of each chunk's words */
    int words;             /* json, jsonl: "words" in the result and each
                              segment and chunk; whisper-json: tokens[] */
    int timestamps;        /* txt: a timed line per segment */
    int name_lines;        /* txt: "FILE: " before each line */
    const char *model_dir; /* whisper-json: params.model */
    const hv_model *model; /* whisper-json: the tokens' text; NULL: "" */
} hvt_format_spec;

/* Writes one result of the input `path` (as given: "-" for standard
 * input) in format fmt to f. 0, or -1 when out of memory (write errors
 * show in ferror(f)). */
int hvt_write_result(FILE *f, hvt_format fmt, const hvt_format_spec *s, const char *path,
                     const hv_result *res);

/* Writes one segment as it comes (a result written segment by segment,
 * hviske --stream): txt its line(s), srt and vtt its cues (the WebVTT
 * header with the first, *n == 0; SubRip numbers going on from *cue),
 * jsonl one {"file", "segment"} line per cue. *n counts the segments
 * written. 0, or -1 when out of memory. */
int hvt_write_stream_segment(FILE *f, hvt_format fmt, const hvt_format_spec *s, const char *path,
                             const hv_segment *g, int *n, int *cue);

#endif /* HV_TOOLS_FORMATS_H */
