/*
 * hviske-server: response bodies (see server_format.h).
 *
 * text, srt and vtt are byte for byte what the CLI writes with --format
 * txt, srt and vtt (both write them with tools/formats.c); json and
 * verbose_json follow OpenAI's /v1/audio/transcriptions. Bodies are
 * written to a memory stream (open_memstream).
 */
#include "server_format.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subtitles.h"
#include "tool_util.h"

static const char *const FORMAT_NAMES[] = {"json", "text", "verbose_json", "srt", "vtt"};

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
        case SRV_FMT_VERBOSE_JSON: return "application/json";
        case SRV_FMT_VTT: return "text/vtt; charset=utf-8";
        case SRV_FMT_SRT:
        case SRV_FMT_TEXT:
        default: return "text/plain; charset=utf-8";
    }
}

/* ----------------------------------------------------- text, srt, vtt */

/* What hviske --format fmt writes for res (formats.h, the CLI's own
 * code), as valid UTF-8 (a model's stray bytes as U+FFFD); its length in
 * *len. NULL when out of memory. */
static char *cli_bytes(hvt_format fmt, const hvt_format_spec *spec, const char *file,
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

/* ---------------------------------------------------------------- json */

/* OpenAI's logprobs: [{"token", "logprob", "bytes"}] per token of the
 * transcript (bytes: the token's UTF-8 bytes, which may be part of a
 * character; token: those bytes cleaned). 0 when out of memory. */
static int add_logprobs(cJSON *o, const hv_result *res, const hv_model *model) {
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    cJSON *a = cJSON_AddArrayToObject(o, "logprobs");
    for (int i = 0; a && i < hv_result_n_tokens(res); i++) {
        char buf[256];
        int n = hv_model_token_bytes(model, tokens[i], buf, (int)sizeof buf - 1);
        if (n < 0) n = 0;
        if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
        buf[n] = '\0';
        char *text = hv_utf8_clean(buf);
        cJSON *e = cJSON_CreateObject(), *bytes = NULL;
        int ok = text && e && cJSON_AddStringToObject(e, "token", text) &&
                 cJSON_AddNumberToObject(e, "logprob", lps ? hvt_float_for_json(lps[i]) : 0.0) &&
                 (bytes = cJSON_AddArrayToObject(e, "bytes"));
        for (int k = 0; ok && k < n; k++)
            ok = cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)buf[k])) != 0;
        free(text);
        if (!ok || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            return 0;
        }
    }
    return a != NULL;
}

/* {"text": ...}, with "logprobs" when asked */
static cJSON *json_plain(const hv_result *res, const srv_format_opts *fo) {
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject();
    if (!text || !o || !cJSON_AddStringToObject(o, "text", text) ||
        (fo->logprobs && fo->model && !add_logprobs(o, res, fo->model))) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(text);
    return o;
}

/* One verbose_json segment made of a cue, OpenAI's keys: id, seek (start
 * in 10 ms frames), start, end, text, tokens (its words'), temperature
 * (that of its chunk's decoding: 0 greedy or beam search),
 * avg_logprob (their mean log-prob). */
static cJSON *json_cue(const hv_result *res, const hv_cue *c, int id, float temperature) {
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    int a = c->first_token, b = c->first_token + c->n_tokens;
    if (a < 0 || b > hv_result_n_tokens(res)) a = b = 0; /* cannot happen */
    double sum = 0;
    for (int k = a; lps && k < b; k++) sum += lps[k];
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' '; /* the cue's lines: one text */
    cJSON *o = cJSON_CreateObject(), *toks = NULL;
    int ok = o && cJSON_AddNumberToObject(o, "id", id) &&
             cJSON_AddNumberToObject(o, "seek", floor(c->start * 100)) &&
             cJSON_AddNumberToObject(o, "start", c->start) &&
             cJSON_AddNumberToObject(o, "end", c->end) &&
             cJSON_AddStringToObject(o, "text", c->text) &&
             (toks = cJSON_AddArrayToObject(o, "tokens"));
    for (int k = a; ok && k < b; k++)
        ok = cJSON_AddItemToArray(toks, cJSON_CreateNumber(tokens[k]));
    ok = ok && cJSON_AddNumberToObject(o, "temperature", hvt_float_for_json(temperature)) &&
         cJSON_AddNumberToObject(o, "avg_logprob", b > a ? hvt_float_for_json(sum / (b - a)) : 0.0);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The segments: the cues of each chunk (hv_segment_cues), numbered from
 * 0. 0 when out of memory. */
static int add_segments(cJSON *segs, const hv_result *res, const srv_format_opts *fo) {
    int ok = 1, id = 0;
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        hv_cue *cues = NULL;
        int nc = 0;
        ok = hv_segment_cues(&g, fo->cues, &cues, &nc) == HV_OK;
        for (int k = 0; ok && k < nc; k++) {
            cJSON *s = json_cue(res, &cues[k], id++, g.temperature);
            ok = s && cJSON_AddItemToArray(segs, s);
            if (!ok) cJSON_Delete(s);
        }
        hv_cues_free(cues, nc);
    }
    return ok;
}

/* {"task":"transcribe","language","duration","text","segments":[...],
 *  "words":[...]}; segments and words as the granularities ask */
static cJSON *json_verbose(const hv_result *res, const srv_format_opts *fo) {
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject(), *segs = NULL, *words = NULL;
    int ok = text && o && cJSON_AddStringToObject(o, "task", "transcribe") &&
             cJSON_AddStringToObject(o, "language", hv_result_language(res)) &&
             cJSON_AddNumberToObject(o, "duration", hv_result_duration(res)) &&
             cJSON_AddStringToObject(o, "text", text);
    if (ok && (fo->granularities & SRV_SEGMENTS))
        ok = (segs = cJSON_AddArrayToObject(o, "segments")) && add_segments(segs, res, fo);
    if (ok && (fo->granularities & SRV_WORDS)) {
        words = hvt_json_words(hv_result_words(res), hv_result_n_words(res));
        ok = words && cJSON_AddItemToObject(o, "words", words);
        if (!ok) cJSON_Delete(words);
    }
    free(text);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *srv_format_downloads(const hv_result *res, const hvt_format *fmts, int n,
                            const hvt_format_spec *spec, const char *file) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o && i < n; i++) {
        size_t len = 0;
        char *clean = cli_bytes(fmts[i], spec, file, res, &len);
        if (!clean || !cJSON_AddStringToObject(o, HVT_FORMAT_NAMES[fmts[i]], clean)) {
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
    if (f == SRV_FMT_JSON) return srv_format_json(json_plain(res, o), len);
    if (f == SRV_FMT_VERBOSE_JSON) return srv_format_json(json_verbose(res, o), len);

    /* text, srt and vtt: the CLI's --format txt, srt and vtt */
    hvt_format_spec spec = {.cues = o->cues ? *o->cues : hv_cue_default_params()};
    hvt_format fmt = f == SRV_FMT_TEXT ? HVT_FMT_TXT : f == SRV_FMT_VTT ? HVT_FMT_VTT : HVT_FMT_SRT;
    return cli_bytes(fmt, &spec, "-", res, len);
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
