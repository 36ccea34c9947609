/*
 * hviske-server: response bodies (see server_format.h).
 *
 * text, srt and vtt are byte for byte what the CLI writes with --format
 * txt, srt and vtt; json and verbose_json follow OpenAI's
 * /v1/audio/transcriptions. Bodies are written to a memory stream
 * (open_memstream), so the writers look like the CLI's.
 */
#include "server_format.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const FORMAT_NAMES[] = {"json", "text", "verbose_json",
                                           "srt", "vtt"};

int srv_format_parse(const char *name, srv_format *out)
{
    for (size_t i = 0; i < sizeof FORMAT_NAMES / sizeof *FORMAT_NAMES; i++)
        if (strcmp(name, FORMAT_NAMES[i]) == 0) {
            *out = (srv_format)i;
            return 0;
        }
    return -1;
}

const char *srv_format_content_type(srv_format f)
{
    switch (f) {
    case SRV_FMT_JSON:
    case SRV_FMT_VERBOSE_JSON: return "application/json";
    case SRV_FMT_VTT: return "text/vtt; charset=utf-8";
    case SRV_FMT_SRT:
    case SRV_FMT_TEXT:
    default: return "text/plain; charset=utf-8";
    }
}

char *srv_utf8_clean(const char *s, size_t n)
{
    char *out = malloc(3 * n + 1), *w = out;
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2
                : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        int ok = len > 0 && len <= end - p && c != 0;
        for (int i = 1; ok && i < len; i++)
            ok = (p[i] & 0xC0) == 0x80;
        if (ok && len == 3) /* no overlongs, no surrogates */
            ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] > 0x9F);
        if (ok && len == 4) /* no overlongs, nothing above U+10FFFF */
            ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] > 0x8F);
        if (ok) {
            memcpy(w, p, (size_t)len);
            w += len;
            p += len;
        } else {
            memcpy(w, "\xEF\xBF\xBD", 3);
            w += 3;
            p++;
        }
    }
    *w = '\0';
    return out;
}

static char *clean(const char *s) { return srv_utf8_clean(s, strlen(s)); }

/* A float as the double of its shortest decimal form that reads back as
 * the same float, so JSON shows -0.30528 rather than -0.30527999997138977
 * (as the CLI). */
static double float_for_json(double v)
{
    char buf[32];
    if (!isfinite(v))
        return 0.0; /* cJSON would write null, which clients reject */
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtof(buf, NULL) == (float)v)
            break;
    }
    return strtod(buf, NULL);
}

/* ----------------------------------------------------- text, srt, vtt */

/* "HH:MM:SS,mmm" (srt, sep ',') or "HH:MM:SS.mmm" (vtt, sep '.') for a
 * sample position, rounded to the millisecond. */
static void cue_time(char *buf, size_t n, int64_t sample, int rate, char sep)
{
    int64_t ms = (sample * 1000 + rate / 2) / rate;
    snprintf(buf, n, "%02lld:%02lld:%02lld%c%03lld",
             (long long)(ms / 3600000), (long long)(ms / 60000 % 60),
             (long long)(ms / 1000 % 60), sep, (long long)(ms % 1000));
}

/* Cue text on one line: line breaks become spaces; for WebVTT '&', '<'
 * and '>' are escaped. */
static void put_cue_text(FILE *f, const char *text, int vtt)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\n' || *p == '\r')
            fputc(' ', f);
        else if (vtt && *p == '&')
            fputs("&amp;", f);
        else if (vtt && *p == '<')
            fputs("&lt;", f);
        else if (vtt && *p == '>')
            fputs("&gt;", f);
        else
            fputc(*p, f);
    }
}

/* SubRip (srt) or WebVTT (vtt): one cue per segment. */
static int write_cues(FILE *f, const hv_result *res, int rate, int vtt)
{
    char a[32], b[32];
    char sep = vtt ? '.' : ',';
    if (vtt)
        fputs("WEBVTT\n\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        char *text = clean(g.text);
        if (!text)
            return -1;
        cue_time(a, sizeof a, g.start_sample, rate, sep);
        cue_time(b, sizeof b, g.end_sample, rate, sep);
        if (!vtt)
            fprintf(f, "%d\n", i + 1);
        fprintf(f, "%s --> %s\n", a, b);
        put_cue_text(f, text, vtt);
        fputs("\n\n", f);
        free(text);
    }
    return 0;
}

/* The transcript on one line (line breaks become spaces). */
static int write_text(FILE *f, const hv_result *res)
{
    char *text = clean(hv_result_text(res));
    if (!text)
        return -1;
    for (const char *p = text; *p; p++)
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
    free(text);
    return 0;
}

/* ---------------------------------------------------------------- json */

/* {"text": ...} */
static cJSON *json_plain(const hv_result *res)
{
    char *text = clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject();
    if (!text || !o || !cJSON_AddStringToObject(o, "text", text)) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(text);
    return o;
}

/* One verbose_json segment, OpenAI's keys: id, seek (start in 10 ms
 * frames), start, end, text, tokens, temperature, avg_logprob (the mean
 * log-prob of the segment's tokens). */
static cJSON *json_segment(const hv_result *res, int i, int rate,
                           double temperature)
{
    hv_segment g = hv_result_segment(res, i);
    char *text = clean(g.text);
    cJSON *o = cJSON_CreateObject(), *toks = NULL;
    double sum = 0;
    for (int k = 0; g.token_logprobs && k < g.n_tokens; k++)
        sum += g.token_logprobs[k];
    int ok = text && o && cJSON_AddNumberToObject(o, "id", i) &&
             cJSON_AddNumberToObject(o, "seek",
                 (double)(g.start_sample * 100 / (rate > 0 ? rate : 1))) &&
             cJSON_AddNumberToObject(o, "start", g.start) &&
             cJSON_AddNumberToObject(o, "end", g.end) &&
             cJSON_AddStringToObject(o, "text", text) &&
             (toks = cJSON_AddArrayToObject(o, "tokens"));
    for (int k = 0; ok && k < g.n_tokens; k++)
        ok = cJSON_AddItemToArray(toks, cJSON_CreateNumber(g.tokens[k]));
    ok = ok && cJSON_AddNumberToObject(o, "temperature", temperature) &&
         cJSON_AddNumberToObject(o, "avg_logprob", g.n_tokens > 0
             ? float_for_json(sum / g.n_tokens) : 0.0);
    free(text);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* {"task":"transcribe","language","duration","text","segments":[...]} */
static cJSON *json_verbose(const hv_result *res, int rate, double temperature)
{
    char *text = clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject(), *segs = NULL;
    int ok = text && o &&
             cJSON_AddStringToObject(o, "task", "transcribe") &&
             cJSON_AddStringToObject(o, "language", hv_result_language(res)) &&
             cJSON_AddNumberToObject(o, "duration", hv_result_duration(res)) &&
             cJSON_AddStringToObject(o, "text", text) &&
             (segs = cJSON_AddArrayToObject(o, "segments"));
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        cJSON *s = json_segment(res, i, rate, temperature);
        ok = s && cJSON_AddItemToArray(segs, s);
        if (!ok)
            cJSON_Delete(s);
    }
    free(text);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* cJSON's text of o plus a newline, malloc'ed; deletes o. */
static char *json_body(cJSON *o, size_t *len)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return NULL;
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

char *srv_format_result(srv_format f, const hv_result *res, int rate,
                        double temperature, size_t *len)
{
    if (f == SRV_FMT_JSON)
        return json_body(json_plain(res), len);
    if (f == SRV_FMT_VERBOSE_JSON)
        return json_body(json_verbose(res, rate, temperature), len);

    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (!m)
        return NULL;
    int rc = f == SRV_FMT_TEXT ? write_text(m, res)
                               : write_cues(m, res, rate, f == SRV_FMT_VTT);
    if (fclose(m) != 0 || rc != 0 || !buf) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

char *srv_format_error(const char *message, const char *type,
                       const char *param, const char *code, size_t *len)
{
    char *msg = clean(message);
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
    return json_body(o, len);
}
