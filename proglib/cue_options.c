/* The cue options' check (cue_options.h). */
#include "cue_options.h"

#include <math.h>
#include <stdio.h>

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
