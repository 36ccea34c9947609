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

#include "hviske.h"

typedef enum srv_format {
    SRV_FMT_JSON,         /* {"text": ...} */
    SRV_FMT_TEXT,         /* the transcript and a newline */
    SRV_FMT_VERBOSE_JSON, /* task, language, duration, text, segments */
    SRV_FMT_SRT,          /* SubRip, one cue per segment */
    SRV_FMT_VTT           /* WebVTT, one cue per segment */
} srv_format;

/* Parses a response_format value; 0 on success. */
int srv_format_parse(const char *name, srv_format *out);

/* The MIME type of a format's body (static string). */
const char *srv_format_content_type(srv_format f);

/* The body of a transcription. rate is the model's sample rate (cue times
 * come from sample positions, as in the CLI); temperature is reported in
 * verbose_json's segments (0 for greedy and beam search). */
char *srv_format_result(srv_format f, const hv_result *res, int rate, double temperature,
                        size_t *len);

/* cJSON's unformatted text of o and a newline; deletes o. NULL when o is
 * NULL or out of memory. */
struct cJSON;
char *srv_format_json(struct cJSON *o, size_t *len);

/* {"error":{"message":..,"type":..,"param":..,"code":..}}; param and code
 * may be NULL (JSON null). */
char *srv_format_error(const char *message, const char *type, const char *param, const char *code,
                       size_t *len);

#endif /* HV_SERVER_FORMAT_H */
