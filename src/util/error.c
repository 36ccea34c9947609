#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

hv_status hv_err(hv_error *e, hv_status status, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->status = status;
    }
    return status;
}

void hv_err_prefix(hv_error *e, const char *fmt, ...) {
    if (!e) return;
    char prefix[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* bounded so the result always fits; a long message is cut short */
    snprintf(e->msg, sizeof e->msg, "%.200s: %.800s", prefix, old);
}

void hv_err_clear(hv_error *e) {
    if (!e) return;
    e->status = HV_OK;
    e->msg[0] = '\0';
}

void hv_err_copy(const hv_error *e, char *buf, size_t size) {
    if (!buf || size == 0) return;
    snprintf(buf, size, "%s", e ? e->msg : "");
}

const char *hv_status_name(hv_status status) {
    switch (status) {
        case HV_OK: return "ok";
        case HV_ERR_IO: return "I/O error";
        case HV_ERR_FORMAT: return "format error";
        case HV_ERR_INVALID_ARG: return "invalid argument";
        case HV_ERR_NOMEM: return "out of memory";
        case HV_ERR_UNSUPPORTED: return "unsupported";
        case HV_ERR_LIMIT: return "limit exceeded";
        case HV_ERR_CANCELLED: return "cancelled";
    }
    return "unknown status";
}
