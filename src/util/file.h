/* Opening files that may be hostile: a FIFO (or a device) named like a
 * model file must not block the caller. */
#ifndef HV_FILE_H
#define HV_FILE_H

/* open(path, O_RDONLY | O_CLOEXEC) that cannot block: the descriptor is
 * opened with O_NONBLOCK (so that opening a FIFO without a writer returns
 * at once), and a regular file gets blocking mode back. The caller still
 * checks with fstat that it is a regular file and refuses anything else.
 * -1 with errno on failure. */
int hv_open_file(const char *path);

#endif
