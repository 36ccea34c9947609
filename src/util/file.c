#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hv_open_file(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        int fl = fcntl(fd, F_GETFL);
        if (fl == -1 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
    }
    return fd;
}

hv_status hv_read_file(const char *path, size_t max, char **out, size_t *len, hv_error *e) {
    *out = NULL;
    *len = 0;
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
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode))
        st = hv_err(e, HV_ERR_IO, "%s: not a regular file", path);
    else if ((uint64_t)sb.st_size > max)
        st = hv_err(e, HV_ERR_LIMIT, "%s: larger than %zu MiB", path, max >> 20);
    else if (!(buf = malloc((size_t)sb.st_size + 1)))
        st = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    else if (fread(buf, 1, (size_t)sb.st_size, fp) != (size_t)sb.st_size)
        st = hv_err(e, HV_ERR_IO, "%s: read error", path);
    fclose(fp);
    if (st) {
        free(buf);
        return st;
    }
    buf[sb.st_size] = '\0';
    *out = buf;
    *len = (size_t)sb.st_size;
    return HV_OK;
}
