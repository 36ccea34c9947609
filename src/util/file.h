/* Opening files that may be hostile: a FIFO (or a device) named like a
 * model file must not block the caller. */
#ifndef HV_FILE_H
#define HV_FILE_H

#include <stddef.h>

#include "util/error.h"

/* open(path, O_RDONLY | O_CLOEXEC) that cannot block: the descriptor is
 * opened with O_NONBLOCK (so that opening a FIFO without a writer returns
 * at once), and a regular file gets blocking mode back. The caller still
 * checks with fstat that it is a regular file and refuses anything else.
 * -1 with errno on failure. */
int hv_open_file(const char *path);

/* Reads a whole regular file of at most max bytes, opened with
 * hv_open_file: *out (malloc'ed, caller frees) holds its *len bytes and a
 * NUL after them. Errors name the file: not found or not a regular file
 * (HV_ERR_IO), larger than max (HV_ERR_LIMIT), out of memory, read error. */
hv_status hv_read_file(const char *path, size_t max, char **out, size_t *len, hv_error *e);

#endif
