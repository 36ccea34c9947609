/* libFuzzer target: what hostile text becomes in JSON (issue #43).
 *
 * The first byte chooses:
 *   even: the rest is a form field that carries JSON, parsed by
 *         srv_json_field (server/server_form.c). Whatever it accepts must
 *         hold no object with a key twice (checked by counting each key
 *         through cJSON's own lookup), and must be all the input: the
 *         value followed by white space only (checked by parsing again
 *         without the strict flag and looking at what follows).
 *   odd:  the rest, up to a NUL, is a file name given to
 *         hv_output_summary_line (hviske_output.h; the names of every
 *         JSON format go through the same hv_output_json_name). The line,
 *         one line, parsed must hold "input" as valid UTF-8;
 *         "input_bytes" exactly when the name is not valid UTF-8, decoding
 *         to the name's bytes; and a valid name as it is. Any violation
 *         aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "server_form.h"
#include "cue_options.h"
#include "hviske_output.h"
#include "util/utf8.h"

/* 1 when no object in the tree holds a key twice, by cJSON's lookup: the
 * first item of each key must be the item itself. */
static int keys_unique(const cJSON *node) {
    for (const cJSON *a = node->child; a; a = a->next) {
        if (cJSON_IsObject(node) && cJSON_GetObjectItemCaseSensitive(node, a->string) != a)
            return 0;
        if (!keys_unique(a)) return 0;
    }
    return 1;
}

static int b64_val(int c) {
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

/* base64 (padded) of s decoded into out (cap bytes); its length, or -1. */
static long b64_decode(const char *s, unsigned char *out, size_t cap) {
    size_t n = strlen(s), w = 0;
    if (n % 4) return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) v[k] = s[i + k] == '=' ? 0 : b64_val(s[i + k]);
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) return -1;
        unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | v[3];
        int bytes = s[i + 2] == '=' ? 1 : s[i + 3] == '=' ? 2 : 3;
        for (int k = 0; k < bytes; k++) {
            if (w == cap) return -1;
            out[w++] = (unsigned char)(x >> (16 - 8 * k));
        }
    }
    return (long)w;
}

static void fuzz_field(const char *v) {
    srv_error e = {0};
    cJSON *obj = srv_json_field(v, "chunking_strategy", &e);
    if (!obj) {
        if (e.status != 400) abort();
        return;
    }
    if (!keys_unique(obj)) abort();
    const char *end = NULL;
    cJSON *again = cJSON_ParseWithOpts(v, &end, 0);
    if (!again || !end) abort();
    for (; *end; end++)
        if (!strchr(" \t\r\n", *end)) abort();
    cJSON_Delete(again);
    cJSON_Delete(obj);
}

static void fuzz_name(const char *name) {
    char *text = NULL;
    size_t len = 0;
    if (hv_output_summary_line(name, NULL, "ok", NULL, -1, 0, &text, &len) != HV_OK) abort();
    if (len != strlen(text) || text[len - 1] != '\n' || memchr(text, '\n', len - 1)) abort();
    cJSON *back = cJSON_Parse(text);
    const char *shown = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(back, "input"));
    const char *raw = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(back, "input_bytes"));
    if (!shown || !hv_utf8_valid(shown)) abort();
    size_t n = strlen(name);
    if (hv_utf8_valid(name)) {
        if (raw || strcmp(shown, name) != 0) abort();
    } else {
        unsigned char *bytes = malloc(n + 1);
        if (!raw || !bytes) abort();
        long m = b64_decode(raw, bytes, n + 1);
        if (m != (long)n || memcmp(bytes, name, n) != 0) abort();
        free(bytes);
    }
    cJSON_Delete(back);
    hv_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    char *s = malloc(size);
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0'; /* a NUL inside ends the text, as C strings do */
    if (data[0] % 2 == 0)
        fuzz_field(s);
    else
        fuzz_name(s);
    free(s);
    return 0;
}
