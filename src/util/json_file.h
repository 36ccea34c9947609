/* Small JSON files (config.json and friends), read whole and parsed as one
 * object, with messages that name the file and, for broken JSON, the line
 * and column. */
#ifndef HV_JSON_FILE_H
#define HV_JSON_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "util/error.h"

/* Reads a whole regular file of at most max bytes, NUL-terminated (a file
 * holding a NUL byte is a format error). *out is malloc'ed. */
hv_status hv_read_text_file(const char *path, size_t max, char **out, hv_error *e);

/* Parses text as a JSON object; `name` stands for the file in messages.
 * NULL text is a missing file. The caller owns *out (cJSON_Delete). */
hv_status hv_json_parse_object(const char *name, const char *text, cJSON **out, hv_error *e);

/* Both: the JSON object in the file at path. */
hv_status hv_json_read_object(const char *path, size_t max, cJSON **out, hv_error *e);

#endif
