/*
 * hviske-server: response bodies. The transcription in each of the
 * OpenAI response formats, and errors in OpenAI's JSON error shape.
 *
 * Every function returns a NUL-terminated body allocated with malloc (the
 * caller frees it, or hands it to libmicrohttpd with MHD_RESPMEM_MUST_FREE)
 * and its length in *len, or NULL when out of memory. Text from the model
 * is cleaned to valid UTF-8 before it goes into JSON, SRT or VTT.
 */
#ifndef HV_SERVER_FORMAT_H
#define HV_SERVER_FORMAT_H

#include <stddef.h>

#include "writers.h"
#include "hviske.h"

typedef enum srv_format {
    SRV_FMT_JSON,         /* {"text": ...} */
    SRV_FMT_TEXT,         /* the transcript and a newline */
    SRV_FMT_VERBOSE_JSON, /* task, language, duration, text, segments */
    SRV_FMT_SRT,          /* SubRip, cues from word times */
    SRV_FMT_VTT,          /* WebVTT, cues from word times */
    SRV_FMT_DIARIZED_JSON /* task, duration, text, segments with speakers */
} srv_format;

/* timestamp_granularities[] values. */
enum { SRV_SEGMENTS = HV_OUTPUT_SEGMENTS, SRV_WORDS = HV_OUTPUT_WORDS };

/* How a transcription is written, beyond its format. */
typedef struct srv_format_opts {
    int rate;                  /* the model's sample rate */
    int granularities;         /* verbose_json: SRV_SEGMENTS, SRV_WORDS */
    const hv_cue_params *cues; /* srt, vtt and verbose_json segments from
                                   word times; NULL: the defaults */
    const hv_model *model;     /* logprobs: the tokens' text */
    int logprobs;              /* json: "logprobs", OpenAI's [{"token",
                                   "logprob", "bytes"}] per token */
    int srt_speakers;          /* srt: HV_OUTPUT_SRT_LABEL or _DASH */
} srv_format_opts;

/* Parses a response_format value; 0 on success. */
int srv_format_parse(const char *name, srv_format *out);

/* The MIME type of a format's body (static string). */
const char *srv_format_content_type(srv_format f);

/* The body of a transcription. When the result has word times,
 * verbose_json's segments are the cues that srt and vtt show (readable
 * sentences and clauses, hv_cues_build) and its "words" are listed when
 * o->granularities asks for them; without word times its segments are the
 * result's segments. */
char *srv_format_result(srv_format f, const hv_result *res, const srv_format_opts *o, size_t *len);

/* The web page's downloads of one result: {"txt": BODY, ...}, for each
 * of fmts[n] the bytes hviske writes with --format F and spec (the CLI's
 * library's writers: one implementation for both programs) for the input named
 * file, as a string (invalid UTF-8, which a model's byte pieces can
 * make, as U+FFFD). NULL when out of memory. */
struct cJSON *srv_format_downloads(const hv_result *res, const hv_output_format *fmts, int n,
                                   const hv_output_spec *spec, const char *file);

/* Adds hviske's fields to the model object of GET /v1/models, for
 * clients such as the web page: "checkpoint" (the model directory's
 * name, such as "hviske-v5.3"), "languages" (the model's codes),
 * "language" (the default), "punctuation" and "num_beams" (the defaults
 * of base), "max_upload_mb" and "max_audio_seconds" (the server's
 * limits). Returns 1, or 0 when out of memory. */
struct cJSON;
int srv_format_model_info(struct cJSON *m, const hv_model *model, const char *model_dir,
                          const hv_transcribe_params *base, int max_upload_mb, double max_audio_s);

/* cJSON's unformatted text of o and a newline; deletes o. NULL when o is
 * NULL or out of memory. */
char *srv_format_json(struct cJSON *o, size_t *len);

/* {"error":{"message":..,"type":..,"param":..,"code":..}}; param and code
 * may be NULL (JSON null). */
char *srv_format_error(const char *message, const char *type, const char *param, const char *code,
                       size_t *len);

#endif /* HV_SERVER_FORMAT_H */
