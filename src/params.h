/* The parameter rows' private side (params.c; the public one is in
 * hviske.h). */
#ifndef HV_PARAMS_H
#define HV_PARAMS_H

#include <stddef.h>

#include "hviske.h"

/* hv_params_check for the rows whose field lies at offsets [from, to) of
 * hv_transcribe_params: the speech detector's settings alone, for
 * hv_vad_regions. */
hv_status hv_params_check_fields(const hv_transcribe_params *params, size_t from, size_t to,
                                 char *errbuf, size_t n);

/* HV_OK when a struct's size field is the library's (want); else
 * HV_ERR_INVALID_ARG with a message naming type in errbuf. */
hv_status hv_params_check_size(size_t size, size_t want, const char *type, char *errbuf, size_t n);

#endif
