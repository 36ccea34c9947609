/* The output formats of a transcription (formats.h). */
#include "formats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "subtitles.h"
#include "tool_util.h"

const char *const HVT_FORMAT_NAMES[HVT_N_FORMATS] = {"txt", "jsonl", "json",        "srt",
                                                     "vtt", "csv",   "whisper-json"};

int hvt_format_parse_n(const char *name, size_t len, hvt_format *out) {
    for (int f = 0; f < HVT_N_FORMATS; f++)
        if (strlen(HVT_FORMAT_NAMES[f]) == len &&
            strncasecmp(name, HVT_FORMAT_NAMES[f], len) == 0) {
            *out = (hvt_format)f;
            return 0;
        }
    return -1;
}

int hvt_format_parse(const char *name, hvt_format *out) {
    return hvt_format_parse_n(name, strlen(name), out);
}

const char *hvt_format_ext(hvt_format f) {
    return f == HVT_FMT_WHISPER_JSON ? "json" : HVT_FORMAT_NAMES[f];
}

int hvt_format_of_path(const char *path, hvt_format *out) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base || !dot[1]) return -1;
    for (int f = 0; f < HVT_N_FORMATS; f++)
        if (f != HVT_FMT_WHISPER_JSON && strcasecmp(dot + 1, HVT_FORMAT_NAMES[f]) == 0) {
            *out = (hvt_format)f;
            return 0;
        }
    return -1;
}

int hvt_format_is_stream(hvt_format f) { return f == HVT_FMT_TXT || f == HVT_FMT_JSONL; }

/* ------------------------------------------------------------ txt lines */

/* "03.400"-style clock for txt timestamps: "MM:SS.mmm" below an hour,
 * "H:MM:SS.mmm" from an hour on (whole milliseconds). */
static void clock_time(char *buf, size_t n, double s) {
    long long ms = s > 0 && s < 1e9 ? llround(s * 1000.0) : 0;
    if (ms >= 3600000)
        snprintf(buf, n, "%lld:%02lld:%02lld.%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60,
                 ms % 1000);
    else
        snprintf(buf, n, "%02lld:%02lld.%03lld", ms / 60000, ms / 1000 % 60, ms % 1000);
}

/* One line of txt output: "FILE: " when several inputs share the output,
 * "[start --> end] " when timed, then the text on one line. */
static void put_txt_line(FILE *f, const hvt_format_spec *s, const char *file, int timed,
                         double start, double end, const char *text) {
    if (s->name_lines) fprintf(f, "%s: ", file);
    if (timed) {
        char a[32], b[32];
        clock_time(a, sizeof a, start);
        clock_time(b, sizeof b, end);
        fprintf(f, "[%s --> %s] ", a, b);
    }
    hvt_put_line(f, text);
}

/* The timed txt lines of chunk g: one per segment (cue); 0, or -1 when out
 * of memory. */
static int put_txt_cues(FILE *f, const hvt_format_spec *s, const char *file, const hv_segment *g) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, &s->cues, &cues, &nc) != HV_OK) return -1;
    for (int k = 0; k < nc; k++)
        put_txt_line(f, s, file, 1, cues[k].start, cues[k].end, cues[k].text);
    hv_cues_free(cues, nc);
    return 0;
}

/* ---------------------------------------------------------------- json */

/* Milliseconds rounded to the microsecond, so JSON shows 1.507, not
 * 1.5070889999624342. */
static double ms3(double ms) { return round(ms * 1000.0) / 1000.0; }

static cJSON *json_int_array(const int32_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* Adds "words" of w[n] to obj; 0 when out of memory. */
static int add_words(cJSON *obj, const hv_word *w, int n) {
    cJSON *a = hvt_json_words(w, n);
    if (a && cJSON_AddItemToObject(obj, "words", a)) return 1;
    cJSON_Delete(a);
    return 0;
}

/* Adds "tokens" of v[n] to obj; 0 when out of memory. */
static int add_tokens(cJSON *obj, const int32_t *v, int n) {
    cJSON *a = json_int_array(v, n);
    if (a && cJSON_AddItemToObject(obj, "tokens", a)) return 1;
    cJSON_Delete(a);
    return 0;
}

/* The JSON object of one chunk (start, end, text, tokens; words: its
 * words too). NULL when out of memory. */
static cJSON *chunk_json(const hv_segment *g, int words) {
    char *st = hv_utf8_clean(g->text);
    cJSON *so = cJSON_CreateObject();
    int ok = st && so && cJSON_AddNumberToObject(so, "start", g->start) &&
             cJSON_AddNumberToObject(so, "end", g->end) &&
             cJSON_AddStringToObject(so, "text", st) && add_tokens(so, g->tokens, g->n_tokens);
    if (ok && words) ok = add_words(so, g->words, g->n_words);
    free(st);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* The tokens of cue c of chunk g, as [*a, *a + *n) of g's tokens. */
static void cue_tokens(const hv_segment *g, const hv_cue *c, int *a, int *n) {
    *a = c->first_token - g->first_token;
    *n = c->n_tokens;
    if (*a < 0 || *a > g->n_tokens) *a = 0, *n = 0; /* cannot happen: in the chunk */
    if (*n > g->n_tokens - *a) *n = g->n_tokens - *a;
}

/* The JSON object of one segment, a cue of chunk g: start, end, text (its
 * lines on one), tokens (its words'), words (its words) when asked. NULL
 * when out of memory. */
static cJSON *cue_json(const hv_segment *g, hv_cue *c, int words) {
    cJSON *so = cJSON_CreateObject();
    int a, n;
    cue_tokens(g, c, &a, &n);
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' '; /* its lines: one text */
    int ok = so && cJSON_AddNumberToObject(so, "start", c->start) &&
             cJSON_AddNumberToObject(so, "end", c->end) &&
             cJSON_AddStringToObject(so, "text", c->text) && add_tokens(so, g->tokens + a, n);
    if (ok && words) ok = add_words(so, g->words + c->first_word, c->n_words);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* Appends the segments (cues) of chunk g to the array segs; 0 when out of
 * memory. */
static int add_cues_json(cJSON *segs, const hv_segment *g, const hvt_format_spec *s) {
    hv_cue *cues = NULL;
    int nc = 0, ok = hv_segment_cues(g, &s->cues, &cues, &nc) == HV_OK;
    for (int k = 0; ok && k < nc; k++) {
        cJSON *so = cue_json(g, &cues[k], s->words);
        ok = so && cJSON_AddItemToArray(segs, so);
        if (!ok) cJSON_Delete(so);
    }
    hv_cues_free(cues, nc);
    return ok;
}

/* The JSON object of one result. full (json) adds language and duration,
 * s->words the words of the result and of each segment. NULL when out of
 * memory. */
static cJSON *result_json(const char *path, const hv_result *res, int full,
                          const hvt_format_spec *s) {
    int words = s->words;
    hv_timings t = hv_result_timings(res);
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *obj = cJSON_CreateObject(), *arr = NULL, *lparr = NULL, *tim = NULL,
          *segs = cJSON_CreateArray(), *chunks = cJSON_CreateArray();

    int ok = text && obj && segs && chunks && hvt_json_add_name(obj, "file", path) &&
             cJSON_AddStringToObject(obj, "text", text);
    if (ok && full)
        ok = cJSON_AddStringToObject(obj, "language", hv_result_language(res)) &&
             cJSON_AddNumberToObject(obj, "duration", hv_result_duration(res));
    ok = ok && (arr = cJSON_AddArrayToObject(obj, "tokens")) &&
         (lparr = cJSON_AddArrayToObject(obj, "token_logprobs")) &&
         cJSON_AddNumberToObject(obj, "score", hv_result_score(res)) &&
         (tim = cJSON_AddObjectToObject(obj, "timings")) &&
         cJSON_AddNumberToObject(tim, "frontend_ms", ms3(t.frontend_ms)) &&
         cJSON_AddNumberToObject(tim, "encoder_ms", ms3(t.encoder_ms)) &&
         cJSON_AddNumberToObject(tim, "decoder_ms", ms3(t.decoder_ms)) &&
         cJSON_AddNumberToObject(tim, "vad_ms", ms3(t.vad_ms)) &&
         cJSON_AddNumberToObject(tim, "encoded_s", ms3(t.encoded_s * 1e3) / 1e3) &&
         cJSON_AddNumberToObject(tim, "n_tokens", t.n_tokens);
    if (ok && words)
        ok = cJSON_AddNumberToObject(tim, "align_ms", ms3(t.align_ms)) &&
             add_words(obj, hv_result_words(res), hv_result_n_words(res));
    for (int i = 0; ok && i < hv_result_n_tokens(res); i++)
        ok =
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(tokens[i])) &&
            cJSON_AddItemToArray(lparr, cJSON_CreateNumber(lps ? hvt_float_for_json(lps[i]) : 0.0));
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        cJSON *co = chunk_json(&g, words);
        if (!co || !cJSON_AddItemToArray(chunks, co)) {
            cJSON_Delete(co);
            ok = 0;
        }
        ok = ok && add_cues_json(segs, &g, s);
    }
    if (ok && cJSON_AddItemToObject(obj, "segments", segs)) segs = NULL;
    if (ok && cJSON_AddItemToObject(obj, "chunks", chunks)) chunks = NULL;
    ok = ok && !segs && !chunks;
    if (!ok) {
        cJSON_Delete(segs);
        cJSON_Delete(chunks);
        cJSON_Delete(obj);
        obj = NULL;
    }
    free(text);
    return obj;
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

/* Writes obj (deleted here) as one line, or indented; 0, or -1 when out
 * of memory. */
static int put_json(FILE *f, cJSON *obj, int indented) {
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

/* -------------------------------------------------------- whisper-json */

/* Adds whisper-cli's "timestamps" {"from", "to"} ("HH:MM:SS,mmm") and
 * "offsets" {"from", "to"} (milliseconds) of [a, b] seconds to o. */
static int add_whisper_times(cJSON *o, double a, double b) {
    char ta[32], tb[32];
    hvt_cue_time(ta, sizeof ta, a, ',');
    hvt_cue_time(tb, sizeof tb, b, ',');
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
                              const hvt_format_spec *s) {
    cJSON *arr = cJSON_AddArrayToObject(seg, "tokens");
    int a, n, ok = arr != NULL;
    cue_tokens(g, c, &a, &n);
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
             cJSON_AddNumberToObject(t, "p", hvt_float_for_json(expf(g->token_logprobs[i]))) &&
             cJSON_AddNumberToObject(t, "t_dtw", -1);
        free(text);
    }
    return ok;
}

/* whisper-cli's JSON (-oj, -ojf): systeminfo, model, params, result and
 * transcription[], one entry per segment (cue). */
static cJSON *whisper_json(const hv_result *res, const hvt_format_spec *s) {
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

/* ----------------------------------------------------------------- csv */

/* CSV (RFC 4180, as whisper-cli's -ocsv): a "start,end,text" header,
 * then one row per segment, the times in whole milliseconds, the text in
 * double quotes (a quote doubled, line breaks as spaces); 0, or -1 when
 * out of memory. */
static int write_csv(FILE *f, const hvt_format_spec *s, const hv_result *res) {
    fputs("start,end,text\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        hv_cue *cues = NULL;
        int nc = 0;
        if (hv_segment_cues(&g, &s->cues, &cues, &nc) != HV_OK) return -1;
        for (int k = 0; k < nc; k++) {
            fprintf(f, "%lld,%lld,\"", llround(cues[k].start * 1e3), llround(cues[k].end * 1e3));
            for (const char *q = cues[k].text; *q; q++) {
                if (*q == '"') fputc('"', f);
                fputc(*q == '\n' || *q == '\r' ? ' ' : *q, f);
            }
            fputs("\"\n", f);
        }
        hv_cues_free(cues, nc);
    }
    return 0;
}

/* ------------------------------------------------------------- writers */

int hvt_write_result(FILE *f, hvt_format fmt, const hvt_format_spec *s, const char *path,
                     const hv_result *res) {
    switch (fmt) {
        case HVT_FMT_TXT:
            if (!s->timestamps) {
                put_txt_line(f, s, path, 0, 0, 0, hv_result_text(res));
                return 0;
            }
            for (int i = 0; i < hv_result_n_segments(res); i++) {
                hv_segment g = hv_result_segment(res, i);
                if (put_txt_cues(f, s, path, &g) != 0) return -1;
            }
            return 0;
        case HVT_FMT_SRT:
        case HVT_FMT_VTT: return hvt_write_subtitles(f, res, &s->cues, fmt == HVT_FMT_VTT);
        case HVT_FMT_CSV: return write_csv(f, s, res);
        case HVT_FMT_WHISPER_JSON: return put_json(f, whisper_json(res, s), 1);
        case HVT_FMT_JSON:
        case HVT_FMT_JSONL:
        default:
            return put_json(f, result_json(path, res, fmt == HVT_FMT_JSON, s), fmt == HVT_FMT_JSON);
    }
}

int hvt_write_stream_segment(FILE *f, hvt_format fmt, const hvt_format_spec *s, const char *path,
                             const hv_segment *g, int *n, int *cue) {
    int rc = 0;
    switch (fmt) {
        case HVT_FMT_TXT:
            if (s->timestamps)
                rc = put_txt_cues(f, s, path, g);
            else
                put_txt_line(f, s, path, 0, 0, 0, g->text);
            break;
        case HVT_FMT_SRT:
        case HVT_FMT_VTT:
            if (*n == 0 && fmt == HVT_FMT_VTT) fputs("WEBVTT\n\n", f);
            rc = hvt_write_segment_cues(f, g, &s->cues, fmt == HVT_FMT_VTT, cue);
            break;
        default: { /* one {"file", "segment"} line per segment (cue) */
            cJSON *segs = cJSON_CreateArray();
            if (!segs || !add_cues_json(segs, g, s)) rc = -1;
            for (cJSON *seg = segs ? segs->child : NULL; seg && rc == 0; seg = seg->next) {
                cJSON *obj = cJSON_CreateObject();
                if (!obj || !hvt_json_add_name(obj, "file", path) ||
                    !cJSON_AddItemReferenceToObject(obj, "segment", seg)) {
                    cJSON_Delete(obj);
                    rc = -1;
                    break;
                }
                rc = put_json(f, obj, 0);
            }
            cJSON_Delete(segs);
        }
    }
    (*n)++;
    return rc;
}
