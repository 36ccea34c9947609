#include "util/json_file.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"

hv_status hv_read_text_file(const char *path, size_t max, char **out, hv_error *e) {
    *out = NULL;
    int fd = hv_open_file(path); /* a FIFO must not block */
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!fp) {
        hv_status s = hv_err(e, HV_ERR_IO, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return s;
    }
    struct stat sb;
    hv_status st = HV_OK;
    char *buf = NULL;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = hv_err(e, HV_ERR_IO, "%s: not a regular file", path);
    } else if ((uint64_t)sb.st_size > max) {
        st = hv_err(e, HV_ERR_LIMIT, "%s: larger than %zu MiB", path, max >> 20);
    } else if (!(buf = malloc((size_t)sb.st_size + 1))) {
        st = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    } else if (fread(buf, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size) {
        st = hv_err(e, HV_ERR_IO, "%s: read error", path);
    } else {
        buf[sb.st_size] = '\0';
        if (strlen(buf) != (size_t)sb.st_size)
            st = hv_err(e, HV_ERR_FORMAT, "%s: contains a NUL byte", path);
    }
    fclose(fp);
    if (st != HV_OK)
        free(buf);
    else
        *out = buf;
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
