#include "util/json_file.h"

#include <stdlib.h>
#include <string.h>

#include "util/file.h"

hv_status hv_read_text_file(const char *path, size_t max, char **out, hv_error *e) {
    size_t len;
    hv_status st = hv_read_file(path, max, out, &len, e);
    if (!st && strlen(*out) != len) {
        free(*out);
        *out = NULL;
        st = hv_err(e, HV_ERR_FORMAT, "%s: contains a NUL byte", path);
    }
    return st;
}

hv_status hv_json_parse_object(const char *name, const char *text, cJSON **out, hv_error *e) {
    const char *end = NULL;
    *out = NULL;
    if (!text) return hv_err(e, HV_ERR_IO, "%s: missing", name);
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        int line = 1, col = 1;
        for (const char *p = text; end && p < end && *p; p++) {
            if (*p == '\n')
                line++, col = 1;
            else
                col++;
        }
        return hv_err(e, HV_ERR_FORMAT, "%s: invalid JSON at line %d, column %d", name, line, col);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return hv_err(e, HV_ERR_FORMAT, "%s: not a JSON object", name);
    }
    *out = root;
    return HV_OK;
}

hv_status hv_json_read_object(const char *path, size_t max, cJSON **out, hv_error *e) {
    char *text = NULL;
    *out = NULL;
    hv_status st = hv_read_text_file(path, max, &text, e);
    if (!st) st = hv_json_parse_object(path, text, out, e);
    free(text);
    return st;
}
