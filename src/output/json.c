/* What the JSON writers share (writer.h): the float rule, words, file
 * names, the layout. */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "output/writer.h"

double hv_output_float(double v) {
    char buf[32];
    if (!isfinite(v) || fabs(v) > FLT_MAX)
        return v; /* as it is; NaN and infinities: cJSON writes null */
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtof(buf, NULL) == (float)v) break;
    }
    return strtod(buf, NULL);
}

cJSON *hv_output_json_words(const hv_word *w, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char *text = hv_utf8_clean(w[i].text ? w[i].text : "");
        cJSON *o = cJSON_CreateObject();
        double p = isfinite(w[i].probability) ? hv_output_float(w[i].probability) : 0.0;
        int ok = text && o && cJSON_AddStringToObject(o, "word", text) &&
                 cJSON_AddNumberToObject(o, "start", round(w[i].start * 1e3) / 1e3) &&
                 cJSON_AddNumberToObject(o, "end", round(w[i].end * 1e3) / 1e3) &&
                 cJSON_AddNumberToObject(o, "probability", p);
        free(text);
        if (!ok || !cJSON_AddItemToArray(a, o)) {
            cJSON_Delete(o);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

int hv_output_json_name(cJSON *o, const char *key, const char *name) {
    char *shown, *raw;
    if (hv_output_file_name(name, &shown, &raw) != HV_OK) return 0;
    char bkey[64];
    snprintf(bkey, sizeof bkey, "%s_bytes", key);
    int ok =
        cJSON_AddStringToObject(o, key, shown) && (!raw || cJSON_AddStringToObject(o, bkey, raw));
    free(shown);
    free(raw);
    return ok;
}

/* cJSON's formatted print with the usual indentation: each leading tab
 * as two spaces and the tab after a key's colon as one space (cJSON
 * escapes tabs inside strings, so every tab in s is layout). */
static void put_indented(FILE *f, const char *s) {
    int line_start = 1;
    for (const char *p = s; *p; p++) {
        if (*p == '\t')
            fputs(line_start ? "  " : " ", f);
        else {
            fputc(*p, f);
            line_start = *p == '\n';
        }
    }
}

int hv_output_put_json(FILE *f, cJSON *obj, int indented) {
    char *s = !obj ? NULL : indented ? cJSON_Print(obj) : cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!s) return -1;
    if (indented)
        put_indented(f, s);
    else
        fputs(s, f);
    fputc('\n', f);
    cJSON_free(s);
    return 0;
}

/* The tokens of cue c of chunk g, as [*a, *a + *n) of g's tokens. */
void hv_output_cue_tokens(const hv_segment *g, const hv_cue *c, int *a, int *n) {
    *a = c->first_token - g->first_token;
    *n = c->n_tokens;
    if (*a < 0 || *a > g->n_tokens) *a = 0, *n = 0; /* cannot happen: in the chunk */
    if (*n > g->n_tokens - *a) *n = g->n_tokens - *a;
}
