/* A batch summary's line (hviske_output.h, hv_output_summary_line). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>

#include "output/writer.h"

/* Adds key: the cleaned string s, or null when s is NULL; 0 when out of
 * memory. */
static int add_string_or_null(cJSON *o, const char *key, const char *s) {
    if (!s) return cJSON_AddNullToObject(o, key) != NULL;
    char *c = hv_utf8_clean(s);
    int ok = c && cJSON_AddStringToObject(o, key, c);
    hv_free(c);
    return ok;
}

/* Adds key: the file name s losslessly, or null when s is NULL. */
static int add_name_or_null(cJSON *o, const char *key, const char *s) {
    return s ? hv_output_json_name(o, key, s) : cJSON_AddNullToObject(o, key) != NULL;
}

hv_status hv_output_summary_line(const char *input, const char *output, const char *status,
                                 const char *error, double audio_seconds, double processing_seconds,
                                 char **line, size_t *len) {
    if (!line || !len) return HV_ERR_INVALID_ARG;
    *line = NULL;
    *len = 0;
    if (!status) return HV_ERR_INVALID_ARG;
    cJSON *o = cJSON_CreateObject();
    int ok =
        o && add_name_or_null(o, "input", input) &&
        (!output || add_name_or_null(o, "output", output)) &&
        add_string_or_null(o, "status", status) && add_string_or_null(o, "error", error) &&
        (audio_seconds < 0 || !isfinite(audio_seconds)
             ? cJSON_AddNullToObject(o, "audio_seconds") != NULL
             : cJSON_AddNumberToObject(o, "audio_seconds", round(audio_seconds * 1e3) / 1e3) !=
                   NULL) &&
        cJSON_AddNumberToObject(o, "processing_seconds", round(processing_seconds * 1e3) / 1e3);
    if (!ok) {
        cJSON_Delete(o);
        return HV_ERR_NOMEM;
    }
    /* the JSON formats' own line writer, into one buffer */
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    int rc = m ? hv_output_put_json(m, o, 0) : (cJSON_Delete(o), -1);
    if (m && fclose(m) != 0) rc = -1;
    if (rc != 0) {
        free(buf);
        return HV_ERR_NOMEM;
    }
    *line = buf;
    *len = n;
    return HV_OK;
}
