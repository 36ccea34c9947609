/* The version of the library loaded (hviske.h, hv_version), and the one
 * free of its plain buffers (hv_free). */
#include <stdlib.h>

#include "hviske.h"

int hv_version(void) { return HV_VERSION_NUMBER; }

const char *hv_version_string(void) { return HV_VERSION; }

void hv_free(void *ptr) { free(ptr); }
