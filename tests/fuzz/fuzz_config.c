/* libFuzzer target: config.json + generation_config.json text.
 * The input is split at its first NUL byte into the two files. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 2);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = text[size + 1] = '\0';
    const char *gen = text + strlen(text) + 1;
    hv_config c;
    hv_error e;
    if (hv_config_parse(&c, text, "config.json", gen, "gen.json", &e) == HV_OK) {
        hv_config_find_language(&c, "da");
        hv_config_free(&c);
    }
    free(text);
    return 0;
}
