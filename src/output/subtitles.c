/*
 * SubRip and WebVTT: the cues of each segment (hv_segment_cues; sentence
 * ends first, then clause punctuation and the longest pauses; one cue per
 * chunk without word times; docs/TIMESTAMPS.md "Segments"), numbered on
 * across them; in WebVTT a segment's speaker (diarize) as a voice span
 * "<v Speaker 1>" opening each of its cues, in SubRip a "[SPEAKER_00] "
 * label or a dialogue dash at each turn (hv_output_spec.srt_speakers:
 * subtitles have no voice markup). Also the one-line text rule
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

/* How a speaker opens a cue: vtt a voice span, srt a label or dash. */
typedef struct voice {
    int speaker; /* the segment's, -1 none */
    int dash;    /* srt: HV_OUTPUT_SRT_DASH */
    int *last;   /* srt dash: the last cue's speaker + 1 (0 none) */
} voice;

/* Opens a cue's text with v's speaker, if any. In WebVTT the voice span
 * "<v Speaker K+1>" (unclosed, so it covers the cue's text); in SubRip
 * "[SPEAKER_0K] ", or "- " where the speaker differs from the last cue's
 * (a dash on the first cue of the file would mark no change). */
static void put_voice(FILE *f, const voice *v, int vtt) {
    if (v->speaker < 0) return;
    if (vtt) {
        fprintf(f, "<v Speaker %d>", v->speaker + 1);
    } else if (!v->dash) {
        fprintf(f, "[SPEAKER_%02d] ", v->speaker);
    } else {
        if (*v->last && *v->last != v->speaker + 1) fputs("- ", f);
        *v->last = v->speaker + 1;
    }
}

/* hv_output_cues_from, each cue opened with v's speaker (put_voice). */
static int cues_voiced(FILE *f, const hv_cue *cues, int n, int vtt, int *number, const voice *v) {
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
                    put_voice(f, v, vtt);
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
    voice none = {-1, 0, NULL};
    return cues_voiced(f, cues, n, vtt, number, &none);
}

int hv_output_cues(FILE *f, const hv_cue *cues, int n, int vtt) {
    int number = 0;
    if (vtt) fputs("WEBVTT\n\n", f);
    return hv_output_cues_from(f, cues, n, vtt, &number);
}

/* The cues of one segment; SubRip numbers go on from st->cues. */
static int segment_cues(FILE *f, const hv_segment *g, const hv_output_spec *s, int vtt,
                        hv_output_state *st) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, &s->cues, &cues, &nc) != HV_OK) return -1;
    voice v = {g->speaker, s->srt_speakers == HV_OUTPUT_SRT_DASH, &st->speaker};
    int rc = cues_voiced(f, cues, nc, vtt, &st->cues, &v);
    hv_cues_free(cues, nc);
    return rc;
}

static int subtitles(FILE *f, const hv_result *res, const hv_output_spec *s, int vtt) {
    hv_output_state st = {0, 0, 0};
    if (vtt) fputs("WEBVTT\n\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        if (segment_cues(f, &g, s, vtt, &st) != 0) return -1;
    }
    return 0;
}

static int srt_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
    return subtitles(f, res, s, 0);
}

static int vtt_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
    return subtitles(f, res, s, 1);
}

static int srt_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                       hv_output_state *st) {
    (void)file;
    st->segments++;
    return segment_cues(f, g, s, 0, st);
}

static int vtt_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                       hv_output_state *st) {
    (void)file;
    if (st->segments++ == 0) fputs("WEBVTT\n\n", f);
    return segment_cues(f, g, s, 1, st);
}

const hv_output_writer hv_output_srt = {"srt", "srt", 0, 1, srt_result, srt_segment};
const hv_output_writer hv_output_vtt = {"vtt", "vtt", 0, 1, vtt_result, vtt_segment};
