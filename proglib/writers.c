/* The library's output writers onto a C stream (writers.h). */
#include "writers.h"

int hvt_format_is_openai(hv_output_format f) {
    return f == HV_OUTPUT_OPENAI_JSON || f == HV_OUTPUT_OPENAI_VERBOSE_JSON;
}

int hvt_format_parse_n(const char *name, size_t len, hv_output_format *out) {
    hv_output_format f;
    if (hv_output_format_parse(name, len, &f) != HV_OK || hvt_format_is_openai(f)) return -1;
    *out = f;
    return 0;
}

/* The spec with format fmt and f as the place to write. */
static hv_output_spec onto(FILE *f, hv_output_format fmt, const hv_output_spec *s) {
    hv_output_spec o = *s;
    o.format = fmt;
    o.write = hv_output_write_file;
    o.write_arg = f;
    return o;
}

/* A failed write shows in ferror(f), as with the stream's own calls. */
static int status_of(hv_status st) { return st == HV_OK || st == HV_ERR_IO ? 0 : -1; }

int hvt_write_result(FILE *f, hv_output_format fmt, const hv_output_spec *s, const char *path,
                     const hv_result *res) {
    hv_output_spec o = onto(f, fmt, s);
    return status_of(hv_output_write_result(&o, path, res));
}

int hvt_write_stream_segment(FILE *f, hv_output_format fmt, const hv_output_spec *s,
                             const char *path, const hv_segment *g, hv_output_state *st) {
    hv_output_spec o = onto(f, fmt, s);
    return status_of(hv_output_write_segment(&o, path, g, st));
}
