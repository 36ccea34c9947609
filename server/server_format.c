/*
 * hviske-server: response bodies (see server_format.h).
 *
 * Every body is the library's writer of its format (hviske_output.h):
 * text, srt and vtt are byte for byte what the CLI writes with --format
 * txt, srt and vtt; json and verbose_json follow OpenAI's
 * /v1/audio/transcriptions. Bodies are written to a memory stream
 * (open_memstream).
 */
#include "server_format.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "cmdline.h"

static const char *const FORMAT_NAMES[] = {"json", "text", "verbose_json",
                                           "srt",  "vtt",  "diarized_json"};

int srv_format_parse(const char *name, srv_format *out) {
    for (size_t i = 0; i < sizeof FORMAT_NAMES / sizeof *FORMAT_NAMES; i++)
        if (strcmp(name, FORMAT_NAMES[i]) == 0) {
            *out = (srv_format)i;
            return 0;
        }
    return -1;
}

const char *srv_format_content_type(srv_format f) {
    switch (f) {
        case SRV_FMT_JSON:
        case SRV_FMT_VERBOSE_JSON:
        case SRV_FMT_DIARIZED_JSON: return "application/json";
        case SRV_FMT_VTT: return "text/vtt; charset=utf-8";
        case SRV_FMT_SRT:
        case SRV_FMT_TEXT:
        default: return "text/plain; charset=utf-8";
    }
}

/* What the library writes in format fmt for res (hviske_output.h: what
 * hviske --format writes too), as valid UTF-8 (a model's stray bytes as U+FFFD); its length in
 * *len. NULL when out of memory. */
static char *cli_bytes(hv_output_format fmt, const hv_output_spec *spec, const char *file,
                       const hv_result *res, size_t *len) {
    char *buf = NULL, *clean = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    int rc = m ? hvt_write_result(m, fmt, spec, file, res) : -1;
    if (m && fclose(m) != 0) rc = -1;
    if (rc == 0 && buf) clean = hv_utf8_clean(buf);
    free(buf);
    if (clean) *len = strlen(clean);
    return clean;
}

cJSON *srv_format_downloads(const hv_result *res, const hv_output_format *fmts, int n,
                            const hv_output_spec *spec, const char *file) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < n; i++) {
        size_t len = 0;
        char *clean = cli_bytes(fmts[i], spec, file, res, &len);
        if (!clean || !cJSON_AddStringToObject(o, hv_output_format_name(fmts[i]), clean)) {
            cJSON_Delete(o);
            o = NULL;
        }
        free(clean);
    }
    return o;
}

/* A directory's own name: "models/demo/" -> "demo". */
static void dir_name(char *out, size_t n, const char *dir) {
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') len--;
    size_t a = len;
    while (a > 0 && dir[a - 1] != '/') a--;
    snprintf(out, n, "%.*s", (int)(len - a), dir + a);
}

int srv_format_model_info(cJSON *m, const hv_model *model, const char *model_dir,
                          const hv_transcribe_params *base, int max_upload_mb, double max_audio_s) {
    char name[256];
    dir_name(name, sizeof name, model_dir);
    char *clean = hv_utf8_clean(name);
    int named = clean && cJSON_AddStringToObject(m, "checkpoint", clean);
    free(clean);
    cJSON *langs = named ? cJSON_AddArrayToObject(m, "languages") : NULL;
    if (!langs) return 0;
    for (int i = 0; i < hv_model_n_languages(model); i++) {
        cJSON *l = cJSON_CreateString(hv_model_language(model, i));
        if (!l || !cJSON_AddItemToArray(langs, l)) {
            cJSON_Delete(l);
            return 0;
        }
    }
    /* what a request without language gets (the library's choice) */
    const char *lang = base->language                        ? base->language
                       : hvt_model_has_language(model, "da") ? "da"
                       : hv_model_n_languages(model) > 0     ? hv_model_language(model, 0)
                                                             : NULL;
    return (lang ? cJSON_AddStringToObject(m, "language", lang)
                 : cJSON_AddNullToObject(m, "language")) &&
           cJSON_AddBoolToObject(m, "punctuation", base->punctuation != 0) &&
           cJSON_AddBoolToObject(m, "diarize", hv_model_can_diarize(model)) &&
           cJSON_AddNumberToObject(m, "num_beams", base->num_beams) &&
           cJSON_AddNumberToObject(m, "max_upload_mb", max_upload_mb) &&
           cJSON_AddNumberToObject(m, "max_audio_seconds", max_audio_s);
}

char *srv_format_json(cJSON *o, size_t *len) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *body = malloc(n + 2);
    if (body) {
        memcpy(body, s, n);
        body[n] = '\n';
        body[n + 1] = '\0';
        *len = n + 1;
    }
    cJSON_free(s);
    return body;
}

char *srv_format_result(srv_format f, const hv_result *res, const srv_format_opts *o, size_t *len) {
    static const hv_output_format AS[] = {[SRV_FMT_JSON] = HV_OUTPUT_OPENAI_JSON,
                                          [SRV_FMT_TEXT] = HV_OUTPUT_TXT,
                                          [SRV_FMT_VERBOSE_JSON] = HV_OUTPUT_OPENAI_VERBOSE_JSON,
                                          [SRV_FMT_SRT] = HV_OUTPUT_SRT,
                                          [SRV_FMT_VTT] = HV_OUTPUT_VTT,
                                          [SRV_FMT_DIARIZED_JSON] = HV_OUTPUT_OPENAI_DIARIZED_JSON};
    /* text, srt and vtt: the CLI's --format txt, srt and vtt */
    hv_output_spec spec = hv_output_default_spec(AS[f]);
    if (o->cues) spec.cues = *o->cues;
    spec.granularities = o->granularities;
    spec.model = o->model;
    spec.logprobs = o->logprobs;
    spec.srt_speakers = o->srt_speakers;
    return cli_bytes(AS[f], &spec, "-", res, len);
}

char *srv_format_error(const char *message, const char *type, const char *param, const char *code,
                       size_t *len) {
    char *msg = hv_utf8_clean(message);
    cJSON *o = cJSON_CreateObject(), *e = NULL;
    int ok = msg && o && (e = cJSON_AddObjectToObject(o, "error")) &&
             cJSON_AddStringToObject(e, "message", msg) &&
             cJSON_AddStringToObject(e, "type", type) &&
             (param ? cJSON_AddStringToObject(e, "param", param) != NULL
                    : cJSON_AddNullToObject(e, "param") != NULL) &&
             (code ? cJSON_AddStringToObject(e, "code", code) != NULL
                   : cJSON_AddNullToObject(e, "code") != NULL);
    free(msg);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return srv_format_json(o, len);
}
