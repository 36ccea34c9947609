/*
 * Transcript writers shared by the CLI (hviske) and the server
 * (hviske-server): SubRip and WebVTT subtitles, the transcript as one line,
 * and the UTF-8 cleaning of model text. Both programs write with these, so
 * the server's text, srt and vtt bodies are byte for byte what the CLI
 * writes with --format txt, srt and vtt.
 */
#ifndef HV_TOOLS_SUBTITLES_H
#define HV_TOOLS_SUBTITLES_H

#include <stddef.h>
#include <stdio.h>

#include "hviske.h"

/* A copy of s with every invalid UTF-8 sequence replaced by U+FFFD, so
 * that JSON, SRT and VTT made from model text or a file name are valid
 * whatever bytes it holds. NULL when out of memory; free() it. */
char *hvt_utf8_clean(const char *s);

/* Writes text as one line: line breaks inside it (a model can emit them as
 * byte pieces) become spaces, then a newline. The text is written as it is
 * otherwise (not cleaned). */
void hvt_put_line(FILE *f, const char *text);

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

#endif /* HV_TOOLS_SUBTITLES_H */
