/*
 * The library's output writers (hviske_output.h) as the programs use
 * them: onto a C stream, with the formats that hviske's --format and the
 * web page's downloads take (hviske's and whisper-cli's; OpenAI's answers
 * are the server's response_format).
 */
#ifndef HV_PROGLIB_WRITERS_H
#define HV_PROGLIB_WRITERS_H

#include <stdio.h>

#include "hviske_output.h"

/* 1 for OpenAI's answers (openai-json, openai-verbose-json): the server's
 * response_format, not a format of --format or the downloads. */
int hvt_format_is_openai(hv_output_format f);

/* A --format name of len bytes at name, in any case; 0, or -1 when it
 * names none of the programs' formats (every format but OpenAI's). */
int hvt_format_parse_n(const char *name, size_t len, hv_output_format *out);

/* Writes one result of the input `path` in format fmt to f as s says (its
 * format and write callback aside). 0, or -1 when out of memory (write
 * errors show in ferror(f)). */
int hvt_write_result(FILE *f, hv_output_format fmt, const hv_output_spec *s, const char *path,
                     const hv_result *res);

/* Writes one segment as it comes (hv_output_write_segment) to f; 0, or -1
 * when out of memory. */
int hvt_write_stream_segment(FILE *f, hv_output_format fmt, const hv_output_spec *s,
                             const char *path, const hv_segment *g, hv_output_state *st);

#endif /* HV_PROGLIB_WRITERS_H */
