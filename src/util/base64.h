/* Base64 (RFC 4648, padded), for the bytes of a file name that is not
 * UTF-8 in JSON (hv_output_file_name). */
#ifndef HV_BASE64_H
#define HV_BASE64_H

#include <stddef.h>

/* The base64 of data[n], malloc'ed; NULL when out of memory. */
char *hv_base64(const void *data, size_t n);

#endif
