/*
 * SubRip and WebVTT: the cues of each segment (hv_segment_cues; sentence
 * ends first, then clause punctuation and the longest pauses; one cue per
 * chunk without word times; docs/TIMESTAMPS.md "Segments"), numbered on
 * across them; in WebVTT a segment's speaker (diarize) as a voice span
 * "<v Speaker 1>" opening each of its cues. Also the one-line text rule
 * of txt.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output/writer.h"

/* "HH:MM:SS,mmm" (srt, sep ',') or "HH:MM:SS.mmm" (vtt, sep '.'). */
static void format_ms(char *buf, size_t n, int64_t ms, char sep) {
    snprintf(buf, n, "%02lld:%02lld:%02lld%c%03lld", (long long)(ms / 3600000),
             (long long)(ms / 60000 % 60), (long long)(ms / 1000 % 60), sep,
             (long long)(ms % 1000));
}

void hv_output_put_line(FILE *f, const char *text) {
    for (const char *p = text; *p; p++) fputc(*p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
}

void hv_output_cue_time(char *buf, size_t n, double t, char sep) {
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
 * breaks become spaces; escaped for WebVTT ('&', '<' and '>': cue text is
 * markup there, and must not hold "-->"). */
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

/* hv_output_cues_from; in WebVTT a speaker >= 0 opens each cue with the
 * voice span "<v Speaker K+1>" (unclosed, so it covers the cue's text). */
static int cues_voiced(FILE *f, const hv_cue *cues, int n, int vtt, int *number, int speaker) {
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
                    hv_output_cue_time(a, sizeof a, cues[i].start, sep);
                    hv_output_cue_time(b, sizeof b, cues[i].end, sep);
                    if (!vtt) fprintf(f, "%d\n", ++*number);
                    fprintf(f, "%s --> %s\n", a, b);
                    if (vtt && speaker >= 0) fprintf(f, "<v Speaker %d>", speaker + 1);
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

int hv_output_cues_from(FILE *f, const hv_cue *cues, int n, int vtt, int *number) {
    return cues_voiced(f, cues, n, vtt, number, -1);
}

int hv_output_cues(FILE *f, const hv_cue *cues, int n, int vtt) {
    int number = 0;
    if (vtt) fputs("WEBVTT\n\n", f);
    return hv_output_cues_from(f, cues, n, vtt, &number);
}

/* The cues of one segment; SubRip numbers go on from *number. */
static int segment_cues(FILE *f, const hv_segment *g, const hv_cue_params *p, int vtt,
                        int *number) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, p, &cues, &nc) != HV_OK) return -1;
    int rc = cues_voiced(f, cues, nc, vtt, number, g->speaker);
    hv_cues_free(cues, nc);
    return rc;
}

static int subtitles(FILE *f, const hv_result *res, const hv_cue_params *p, int vtt) {
    int number = 0;
    if (vtt) fputs("WEBVTT\n\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        if (segment_cues(f, &g, p, vtt, &number) != 0) return -1;
    }
    return 0;
}

static int srt_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
    return subtitles(f, res, &s->cues, 0);
}

static int vtt_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
    return subtitles(f, res, &s->cues, 1);
}

static int srt_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                       hv_output_state *st) {
    (void)file;
    st->segments++;
    return segment_cues(f, g, &s->cues, 0, &st->cues);
}

static int vtt_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                       hv_output_state *st) {
    (void)file;
    if (st->segments++ == 0) fputs("WEBVTT\n\n", f);
    return segment_cues(f, g, &s->cues, 1, &st->cues);
}

const hv_output_writer hv_output_srt = {"srt", "srt", 0, 1, srt_result, srt_segment};
const hv_output_writer hv_output_vtt = {"vtt", "vtt", 0, 1, vtt_result, vtt_segment};
