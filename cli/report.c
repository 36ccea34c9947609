/* hviske's messages about inputs and outputs (report.h). */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The last failure, as printed after "hviske: ", for the run summary. */
static char last_error[1536];

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hviske: %s\n", last_error);
}

void cli_file_error(const char *path, hv_status status, const char *msg) {
    if (!msg || !*msg) msg = hv_status_name(status);
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':')
        cli_error("%s", msg);
    else
        cli_error("%s: %s", path, msg);
}

const char *cli_last_error(void) { return last_error; }
