/* Error reporting inside the library: a status plus a message. */
#ifndef HV_ERROR_H
#define HV_ERROR_H

#include "hviske.h"

typedef struct hv_error {
    hv_status status;
    char msg[1024];
} hv_error;

/* Records status and a printf-style message in e (if e is not NULL) and
 * returns status, so callers can write `return hv_err(e, ...)`. */
hv_status hv_err(hv_error *e, hv_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prefixes the existing message with "prefix: " (e.g. a file name). */
void hv_err_prefix(hv_error *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void hv_err_clear(hv_error *e);

/* Copies e's message into a caller buffer (always NUL-terminated). */
void hv_err_copy(const hv_error *e, char *buf, size_t size);

#endif
