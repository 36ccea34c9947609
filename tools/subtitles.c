/*
 * Transcript writers shared by the CLI and the server (see subtitles.h).
 */
#include "subtitles.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

int hvt_utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    int len = 1;
    while (p < end && (len = hv_utf8_seq_len(p, end)) > 0) p += len;
    return p == end;
}

char *hvt_name_escape(const char *name) { return hv_utf8_fix(name, HV_UTF8_ESCAPE); }

char *hvt_base64(const void *data, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char *out = malloc((n + 2) / 3 * 4 + 1), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *w++ = A[v >> 18 & 63];
        *w++ = A[v >> 12 & 63];
        *w++ = i + 1 < n ? A[v >> 6 & 63] : '=';
        *w++ = i + 2 < n ? A[v & 63] : '=';
    }
    *w = '\0';
    return out;
}

int hvt_json_add_name(cJSON *o, const char *key, const char *name) {
    if (hvt_utf8_valid(name)) return cJSON_AddStringToObject(o, key, name) != NULL;
    char *shown = hvt_name_escape(name), *raw = hvt_base64(name, strlen(name));
    char bkey[64];
    snprintf(bkey, sizeof bkey, "%s_bytes", key);
    int ok = shown && raw && cJSON_AddStringToObject(o, key, shown) &&
             cJSON_AddStringToObject(o, bkey, raw);
    free(shown);
    free(raw);
    return ok;
}

/* "HH:MM:SS,mmm" (srt, sep ',') or "HH:MM:SS.mmm" (vtt, sep '.'). */
static void format_ms(char *buf, size_t n, int64_t ms, char sep) {
    snprintf(buf, n, "%02lld:%02lld:%02lld%c%03lld", (long long)(ms / 3600000),
             (long long)(ms / 60000 % 60), (long long)(ms / 1000 % 60), sep,
             (long long)(ms % 1000));
}

/* Writes cue text on one line: line breaks become spaces; for WebVTT,
 * '&', '<' and '>' are escaped (cue text is markup there, and must not
 * hold "-->"). */
static void put_cue_text(FILE *f, const char *text, int vtt) {
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

void hvt_put_line(FILE *f, const char *text) {
    put_cue_text(f, text, 0);
    fputc('\n', f);
}

/* ================================================= cues from word times */

int hvt_cue_params_check(const hv_cue_params *p, char *msg, size_t n) {
    const char *bad = NULL;
    if (!(isfinite(p->max_seconds) && p->max_seconds >= HV_CUE_MAX_SECONDS_MIN &&
          p->max_seconds <= HV_CUE_MAX_SECONDS_MAX))
        bad = "--max-cue-seconds must be a number from 1 to 600";
    else if (p->max_lines < HV_CUE_MAX_LINES_MIN || p->max_lines > HV_CUE_MAX_LINES_MAX)
        bad = "--max-lines must be an integer from 1 to 10";
    else if (p->max_line_chars < HV_CUE_LINE_CHARS_MIN || p->max_line_chars > HV_CUE_LINE_CHARS_MAX)
        bad = "--max-line-chars must be an integer from 10 to 1000";
    else if (!(p->max_cps >= 0 && p->max_cps <= HV_CUE_MAX_CPS_MAX))
        bad = "--max-cue-cps must be a number from 0 to 1000";
    else if (!(p->min_seconds >= 0 && p->min_seconds <= HV_CUE_MIN_SECONDS_MAX))
        bad = "--min-cue-seconds must be a number from 0 to 10";
    else if (!(p->min_gap >= 0 && p->min_gap <= HV_CUE_MIN_GAP_MAX))
        bad = "--min-cue-gap must be a number from 0 to 1";
    if (!bad) return 0;
    if (msg && n) snprintf(msg, n, "%s", bad);
    return -1;
}

/* ------------------------------------------------------- cue writers */

void hvt_cue_time(char *buf, size_t n, double t, char sep) {
    int64_t ms = !(t > 0) ? 0 : t >= 1e9 ? (int64_t)1000000000000 : (int64_t)llround(t * 1000.0);
    format_ms(buf, n, ms, sep);
}

/* Whether text[0..len) shows nothing (spaces and line breaks only). */
static int blank_line(const char *t, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r' && t[i] != '\v' && t[i] != '\f') return 0;
    return 1;
}

/* One line of cue text (valid UTF-8, no '\n'): '\r' and other line
 * breaks become spaces; escaped for WebVTT. */
static void put_cue_line(FILE *f, const char *t, size_t len, int vtt) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '\r' || c == '\v' || c == '\f') {
            fputc(' ', f);
        } else if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85) {
            fputc(' ', f);
            i += 1;
        } else if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
                   ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9)) {
            fputc(' ', f);
            i += 2;
        } else if (vtt && c == '&') {
            fputs("&amp;", f);
        } else if (vtt && c == '<') {
            fputs("&lt;", f);
        } else if (vtt && c == '>') {
            fputs("&gt;", f);
        } else {
            fputc(c, f);
        }
    }
}

/* The cues, without the WebVTT header; SubRip numbers go on from
 * *number. */
static int write_word_cues_from(FILE *f, const hv_cue *cues, int n, int vtt, int *number) {
    char a[32], b[32];
    char sep = vtt ? '.' : ',';
    for (int i = 0; i < n; i++) {
        char *text = hv_utf8_clean(cues[i].text ? cues[i].text : "");
        if (!text) return -1;
        int shown = 0;
        for (char *l = text;;) {
            char *nl = strchr(l, '\n');
            size_t len = nl ? (size_t)(nl - l) : strlen(l);
            if (!blank_line(l, len)) {
                if (!shown) {
                    hvt_cue_time(a, sizeof a, cues[i].start, sep);
                    hvt_cue_time(b, sizeof b, cues[i].end, sep);
                    if (!vtt) fprintf(f, "%d\n", ++*number);
                    fprintf(f, "%s --> %s\n", a, b);
                    shown = 1;
                }
                put_cue_line(f, l, len, vtt);
                fputc('\n', f);
            }
            if (!nl) break;
            l = nl + 1;
        }
        if (shown) fputc('\n', f);
        free(text);
    }
    return 0;
}

static int write_word_cues(FILE *f, const hv_cue *cues, int n, int vtt) {
    int number = 0;
    if (vtt) fputs("WEBVTT\n\n", f);
    return write_word_cues_from(f, cues, n, vtt, &number);
}

int hvt_write_srt_cues(FILE *f, const hv_cue *cues, int n) {
    return write_word_cues(f, cues, n, 0);
}

int hvt_write_vtt_cues(FILE *f, const hv_cue *cues, int n) {
    return write_word_cues(f, cues, n, 1);
}

int hvt_write_subtitles(FILE *f, const hv_result *res, const hv_cue_params *p, int vtt) {
    int number = 0;
    if (vtt) fputs("WEBVTT\n\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        if (hvt_write_segment_cues(f, &g, p, vtt, &number) != 0) return -1;
    }
    return 0;
}

int hvt_write_segment_cues(FILE *f, const hv_segment *g, const hv_cue_params *p, int vtt,
                           int *number) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, p, &cues, &nc) != HV_OK) return -1;
    int rc = write_word_cues_from(f, cues, nc, vtt, number);
    hv_cues_free(cues, nc);
    return rc;
}

cJSON *hvt_json_words(const hv_word *w, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char *text = hv_utf8_clean(w[i].text ? w[i].text : "");
        cJSON *o = cJSON_CreateObject();
        double p = isfinite(w[i].probability) ? hvt_float_for_json(w[i].probability) : 0.0;
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
