/* csv (RFC 4180, as whisper-cli's -ocsv): a "start,end,text" header, then
 * one row per segment, the times in whole milliseconds, the text in double
 * quotes (a quote doubled, line breaks as spaces). */
#include <math.h>

#include "output/writer.h"

static int csv_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
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

const hv_output_writer hv_output_csv = {"csv", "csv", 0, 1, csv_result, NULL};
