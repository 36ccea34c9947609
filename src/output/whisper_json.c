/* whisper-json: whisper-cli's JSON (-oj, -ojf): systeminfo, model,
 * params, result and transcription[], one entry per segment (cue), with
 * tokens[] when spec->words (-ojf). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "output/writer.h"

/* Adds whisper-cli's "timestamps" {"from", "to"} ("HH:MM:SS,mmm") and
 * "offsets" {"from", "to"} (milliseconds) of [a, b] seconds to o. */
static int add_whisper_times(cJSON *o, double a, double b) {
    char ta[32], tb[32];
    hv_output_cue_time(ta, sizeof ta, a, ',');
    hv_output_cue_time(tb, sizeof tb, b, ',');
    cJSON *ts = cJSON_AddObjectToObject(o, "timestamps"), *os = NULL;
    return ts && cJSON_AddStringToObject(ts, "from", ta) && cJSON_AddStringToObject(ts, "to", tb) &&
           (os = cJSON_AddObjectToObject(o, "offsets")) &&
           cJSON_AddNumberToObject(os, "from", (double)llround(a > 0 ? a * 1e3 : 0)) &&
           cJSON_AddNumberToObject(os, "to", (double)llround(b > 0 ? b * 1e3 : 0));
}

/* whisper-cli's tokens[] of a segment (-ojf): each {"text", "timestamps",
 * "offsets", "id", "p", "t_dtw"}, the times its word's (-1 for t_dtw: no
 * such times here). */
static int add_whisper_tokens(cJSON *seg, const hv_segment *g, const hv_cue *c,
                              const hv_output_spec *s) {
    cJSON *arr = cJSON_AddArrayToObject(seg, "tokens");
    int a, n, ok = arr != NULL;
    hv_output_cue_tokens(g, c, &a, &n);
    const hv_word *w = g->words + c->first_word;
    int k = 0; /* the word holding token i */
    for (int i = a; ok && i < a + n; i++) {
        while (k + 1 < c->n_words && w[k + 1].first_token <= g->first_token + i) k++;
        char buf[256];
        int len =
            s->model ? hv_model_token_bytes(s->model, g->tokens[i], buf, (int)sizeof buf - 1) : 0;
        len = len < 0 ? 0 : len > (int)sizeof buf - 1 ? (int)sizeof buf - 1 : len;
        buf[len] = '\0';
        char *text = hv_utf8_clean(buf);
        cJSON *t = cJSON_CreateObject();
        if (!t || !cJSON_AddItemToArray(arr, t)) {
            cJSON_Delete(t);
            free(text);
            return 0;
        }
        ok = text && cJSON_AddStringToObject(t, "text", text) &&
             (c->n_words == 0 || add_whisper_times(t, w[k].start, w[k].end)) &&
             cJSON_AddNumberToObject(t, "id", g->tokens[i]) &&
             cJSON_AddNumberToObject(t, "p", hv_output_float(expf(g->token_logprobs[i]))) &&
             cJSON_AddNumberToObject(t, "t_dtw", -1);
        free(text);
    }
    return ok;
}

/* whisper-cli's JSON (-oj, -ojf): systeminfo, model, params, result and
 * transcription[], one entry per segment (cue). */
static cJSON *whisper_json(const hv_result *res, const hv_output_spec *s) {
    cJSON *o = cJSON_CreateObject(), *m = NULL, *p = NULL, *r = NULL, *tr = NULL;
    const char *lang = hv_result_language(res);
    int ok =
        o && cJSON_AddStringToObject(o, "systeminfo", "hviske " HV_VERSION) &&
        (m = cJSON_AddObjectToObject(o, "model")) &&
        cJSON_AddStringToObject(m, "type", "cohere_asr") &&
        cJSON_AddBoolToObject(m, "multilingual", s->model && hv_model_n_languages(s->model) > 1) &&
        (p = cJSON_AddObjectToObject(o, "params")) &&
        cJSON_AddStringToObject(p, "model", s->model_dir ? s->model_dir : "") &&
        cJSON_AddStringToObject(p, "language", lang) && cJSON_AddFalseToObject(p, "translate") &&
        (r = cJSON_AddObjectToObject(o, "result")) &&
        cJSON_AddStringToObject(r, "language", lang) &&
        (tr = cJSON_AddArrayToObject(o, "transcription"));
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        hv_cue *cues = NULL;
        int nc = 0;
        ok = hv_segment_cues(&g, &s->cues, &cues, &nc) == HV_OK;
        for (int k = 0; ok && k < nc; k++) {
            cJSON *e = cJSON_CreateObject();
            for (char *q = cues[k].text; *q; q++)
                if (*q == '\n') *q = ' '; /* its lines: one text */
            ok = e && cJSON_AddItemToArray(tr, e);
            if (!ok) cJSON_Delete(e);
            ok = ok && add_whisper_times(e, cues[k].start, cues[k].end) &&
                 cJSON_AddStringToObject(e, "text", cues[k].text) &&
                 (!s->words || add_whisper_tokens(e, &g, &cues[k], s));
        }
        hv_cues_free(cues, nc);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int whisper_result(FILE *f, const hv_output_spec *s, const char *file,
                          const hv_result *res) {
    (void)file;
    return hv_output_put_json(f, whisper_json(res, s), 1);
}

const hv_output_writer hv_output_whisper_json = {"whisper-json", "json", 0, 0,
                                                 whisper_result, NULL};
