/*
 * Transcript writers shared by the CLI and the server (see subtitles.h).
 */
#include "subtitles.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *hvt_utf8_clean(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *w = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        int len = c < 0x80                 ? 1
                  : c >= 0xC2 && c <= 0xDF ? 2
                  : c >= 0xE0 && c <= 0xEF ? 3
                  : c >= 0xF0 && c <= 0xF4 ? 4
                                           : 0;
        int ok = len > 0 && len <= end - p;
        for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xC0) == 0x80;
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

/* "HH:MM:SS,mmm" (srt, sep ',') or "HH:MM:SS.mmm" (vtt, sep '.') for a
 * sample position, rounded to the millisecond. */
static void cue_time(char *buf, size_t n, int64_t sample, int rate, char sep) {
    int64_t ms = (sample * 1000 + rate / 2) / rate;
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

/* SubRip (vtt 0) or WebVTT (vtt 1): one cue per segment. */
static int write_cues(FILE *f, const hv_result *res, int rate, int vtt) {
    char a[32], b[32];
    char sep = vtt ? '.' : ',';
    if (vtt) fputs("WEBVTT\n\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        char *text = hvt_utf8_clean(g.text);
        if (!text) return -1;
        cue_time(a, sizeof a, g.start_sample, rate, sep);
        cue_time(b, sizeof b, g.end_sample, rate, sep);
        if (!vtt) fprintf(f, "%d\n", i + 1);
        fprintf(f, "%s --> %s\n", a, b);
        put_cue_text(f, text, vtt);
        fputs("\n\n", f);
        free(text);
    }
    return 0;
}

int hvt_write_srt(FILE *f, const hv_result *res, int rate) { return write_cues(f, res, rate, 0); }

int hvt_write_vtt(FILE *f, const hv_result *res, int rate) { return write_cues(f, res, rate, 1); }
