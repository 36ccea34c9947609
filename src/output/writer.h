/*
 * The writers behind hviske_output.h: one per format, each in its own
 * file (txt.c, csv.c, subtitles.c, hviske_json.c, whisper_json.c,
 * openai_json.c), listed in output.c's table; and what several of them
 * share (json.c). A writer writes to a C stream: output.c hands it a
 * memory stream and the spec's callback gets the bytes.
 */
#ifndef HV_OUTPUT_WRITER_H
#define HV_OUTPUT_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "hviske_output.h"

struct cJSON;

typedef struct hv_output_writer {
    const char *name; /* hv_output_format_name */
    const char *ext;  /* hv_output_format_ext */
    int stream;       /* hv_output_format_is_stream */
    int by_ext;       /* hv_output_format_of_path names it */
    /* one result; 0, or -1 when out of memory */
    int (*result)(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res);
    /* one segment as it comes; NULL: one document per result */
    int (*segment)(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                   hv_output_state *st);
} hv_output_writer;

extern const hv_output_writer hv_output_txt, hv_output_jsonl, hv_output_json, hv_output_srt,
    hv_output_vtt, hv_output_csv, hv_output_whisper_json, hv_output_openai_json,
    hv_output_openai_verbose_json, hv_output_openai_diarized_json;

/* ------------------------------------------------------------ text */

/* Writes text as one line: line breaks inside it become spaces, then a
 * newline; written as it is otherwise (not cleaned). */
void hv_output_put_line(FILE *f, const char *text);

/* "HH:MM:SS,mmm" (sep ',': SubRip) or "HH:MM:SS.mmm" (sep '.': WebVTT)
 * for t seconds rounded to the millisecond (NaN or negative: 0; at most
 * 1e9 s) into buf[n] (n >= 16). */
void hv_output_cue_time(char *buf, size_t n, double t, char sep);

/* SubRip (vtt 0) or WebVTT (vtt 1) cues: each '\n' of a cue's text starts
 * a new line; '\r' and other line breaks become spaces, blank lines are
 * left out, and a cue with no text left is left out (numbers stay
 * consecutive). hv_output_cues_from writes no WebVTT header and numbers
 * SubRip cues on from *number. 0, or -1 when out of memory. */
int hv_output_cues(FILE *f, const hv_cue *cues, int n, int vtt);
int hv_output_cues_from(FILE *f, const hv_cue *cues, int n, int vtt, int *number);

/* The tokens of cue c of chunk g, as [*a, *a + *n) of g's tokens. */
void hv_output_cue_tokens(const hv_segment *g, const hv_cue *c, int *a, int *n);

/* ------------------------------------------------------------ JSON */

/* A float's value as the double of its shortest decimal form that reads
 * back as the same float, so JSON shows -0.30528 rather than
 * -0.30527999997138977. NaN and infinities come back as they are: cJSON
 * writes them as null. */
double hv_output_float(double v);

/* [{"word", "start", "end", "probability"}, ...] of w[n]: times rounded
 * to the millisecond, probabilities hv_output_float, texts cleaned. NULL
 * when out of memory. */
struct cJSON *hv_output_json_words(const hv_word *w, int n);

/* Adds key (and key_bytes when needed: hv_output_file_name) to o; 0 when
 * out of memory. */
int hv_output_json_name(struct cJSON *o, const char *key, const char *name);

/* Writes obj (deleted here) as one line, or indented by two spaces, and a
 * newline; 0, or -1 when out of memory. */
int hv_output_put_json(FILE *f, struct cJSON *obj, int indented);

#endif /* HV_OUTPUT_WRITER_H */
