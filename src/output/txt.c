/* txt: the transcript on one line; with timestamps one "[start --> end]
 * text" line per segment; with speakers (diarize) one "[SPEAKER_00] text"
 * line per segment, after the times where shown; "FILE: " before each
 * line when several inputs share the output. */
#include <math.h>

#include "output/writer.h"

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

static void put_txt_line(FILE *f, const hv_output_spec *s, const char *file, int timed,
                         double start, double end, int speaker, const char *text) {
    if (s->name_lines) fprintf(f, "%s: ", file);
    if (timed) {
        char a[32], b[32];
        clock_time(a, sizeof a, start);
        clock_time(b, sizeof b, end);
        fprintf(f, "[%s --> %s] ", a, b);
    }
    if (speaker >= 0) fprintf(f, "[SPEAKER_%02d] ", speaker);
    hv_output_put_line(f, text);
}

/* The timed lines of chunk g: one per segment (cue). */
static int put_txt_cues(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, &s->cues, &cues, &nc) != HV_OK) return -1;
    for (int k = 0; k < nc; k++)
        put_txt_line(f, s, file, 1, cues[k].start, cues[k].end, g->speaker, cues[k].text);
    hv_cues_free(cues, nc);
    return 0;
}

static int txt_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    int speakers = 0;
    for (int i = 0; i < hv_result_n_segments(res); i++)
        speakers |= hv_result_segment(res, i).speaker >= 0;
    if (!s->timestamps && !speakers) {
        put_txt_line(f, s, file, 0, 0, 0, -1, hv_result_text(res));
        return 0;
    }
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        if (!s->timestamps)
            put_txt_line(f, s, file, 0, 0, 0, g.speaker, g.text);
        else if (put_txt_cues(f, s, file, &g) != 0)
            return -1;
    }
    return 0;
}

static int txt_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                       hv_output_state *st) {
    st->segments++;
    if (s->timestamps) return put_txt_cues(f, s, file, g);
    put_txt_line(f, s, file, 0, 0, 0, g->speaker, g->text);
    return 0;
}

const hv_output_writer hv_output_txt = {"txt", "txt", 1, 1, txt_result, txt_segment};
