/* Output formats (hviske_output.h): the table of writers and the calls
 * around them. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "output/writer.h"
#include "util/base64.h"
#include "util/utf8.h"

/* The writers, in hv_output_format's order. */
static const hv_output_writer *const WRITERS[HV_OUTPUT_N_FORMATS] = {
    [HV_OUTPUT_TXT] = &hv_output_txt,
    [HV_OUTPUT_JSONL] = &hv_output_jsonl,
    [HV_OUTPUT_JSON] = &hv_output_json,
    [HV_OUTPUT_SRT] = &hv_output_srt,
    [HV_OUTPUT_VTT] = &hv_output_vtt,
    [HV_OUTPUT_CSV] = &hv_output_csv,
    [HV_OUTPUT_WHISPER_JSON] = &hv_output_whisper_json,
    [HV_OUTPUT_OPENAI_JSON] = &hv_output_openai_json,
    [HV_OUTPUT_OPENAI_VERBOSE_JSON] = &hv_output_openai_verbose_json,
    [HV_OUTPUT_OPENAI_DIARIZED_JSON] = &hv_output_openai_diarized_json,
};

static const hv_output_writer *writer_of(hv_output_format f) {
    return (unsigned)f < HV_OUTPUT_N_FORMATS ? WRITERS[f] : NULL;
}

hv_output_spec hv_output_default_spec(hv_output_format f) {
    return (hv_output_spec){.size = sizeof(hv_output_spec),
                            .format = f,
                            .cues = hv_cue_default_params(),
                            .granularities = HV_OUTPUT_SEGMENTS};
}

const char *hv_output_format_name(hv_output_format f) {
    const hv_output_writer *w = writer_of(f);
    return w ? w->name : NULL;
}

const char *hv_output_format_ext(hv_output_format f) {
    const hv_output_writer *w = writer_of(f);
    return w ? w->ext : NULL;
}

hv_status hv_output_format_parse(const char *name, size_t len, hv_output_format *out) {
    for (int f = 0; name && f < HV_OUTPUT_N_FORMATS; f++)
        if (strlen(WRITERS[f]->name) == len && strncasecmp(name, WRITERS[f]->name, len) == 0) {
            *out = (hv_output_format)f;
            return HV_OK;
        }
    return HV_ERR_INVALID_ARG;
}

hv_status hv_output_format_of_path(const char *path, hv_output_format *out) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base || !dot[1]) return HV_ERR_INVALID_ARG;
    for (int f = 0; f < HV_OUTPUT_N_FORMATS; f++)
        if (WRITERS[f]->by_ext && strcasecmp(dot + 1, WRITERS[f]->ext) == 0) {
            *out = (hv_output_format)f;
            return HV_OK;
        }
    return HV_ERR_INVALID_ARG;
}

int hv_output_format_is_stream(hv_output_format f) {
    const hv_output_writer *w = writer_of(f);
    return w && w->stream;
}

int hv_output_format_by_segment(hv_output_format f) {
    const hv_output_writer *w = writer_of(f);
    return w && w->segment;
}

int hv_output_write_file(void *arg, const char *data, size_t n) {
    return fwrite(data, 1, n, arg) == n ? 0 : -1;
}

/* The spec as this library knows it: the fields of a caller's smaller
 * struct, the defaults for the rest. */
static int spec_of(const hv_output_spec *in, hv_output_spec *s) {
    if (!in || in->size < offsetof(hv_output_spec, cues) || !in->write || !writer_of(in->format))
        return -1;
    *s = hv_output_default_spec(in->format);
    memcpy(s, in, in->size < sizeof *s ? in->size : sizeof *s);
    s->size = sizeof *s;
    /* the cues' own size, as hv_cues_build checks it */
    return s->cues.size == sizeof s->cues ? 0 : -1;
}

/* Runs a writer into a memory stream and hands its bytes to the spec's
 * callback: the writers write to a C stream, the caller anywhere. */
static hv_status run(const hv_output_spec *in, const char *file, const hv_result *res,
                     const hv_segment *g, hv_output_state *st) {
    hv_output_spec s;
    if (spec_of(in, &s) != 0 || (!res && !g)) return HV_ERR_INVALID_ARG;
    const hv_output_writer *w = writer_of(s.format);
    if (g && !w->segment) return HV_ERR_UNSUPPORTED;
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    if (!m) return HV_ERR_NOMEM;
    const char *name = file ? file : "-";
    int rc = g ? w->segment(m, &s, name, g, st) : w->result(m, &s, name, res);
    if (fclose(m) != 0) rc = -1;
    hv_status status = rc != 0 ? HV_ERR_NOMEM : HV_OK;
    if (status == HV_OK && n > 0 && s.write(s.write_arg, buf, n) != 0) status = HV_ERR_IO;
    free(buf);
    return status;
}

hv_status hv_output_write_result(const hv_output_spec *s, const char *file, const hv_result *res) {
    return run(s, file, res, NULL, NULL);
}

hv_status hv_output_write_segment(const hv_output_spec *s, const char *file, const hv_segment *g,
                                  hv_output_state *st) {
    if (!st) return HV_ERR_INVALID_ARG;
    return run(s, file, NULL, g, st);
}

hv_status hv_output_file_name(const char *name, char **shown, char **bytes) {
    *bytes = NULL;
    if (hv_utf8_valid(name)) {
        *shown = strdup(name);
        return *shown ? HV_OK : HV_ERR_NOMEM;
    }
    *shown = hv_utf8_fix(name, HV_UTF8_ESCAPE);
    *bytes = hv_base64(name, strlen(name));
    if (*shown && *bytes) return HV_OK;
    free(*shown);
    free(*bytes);
    *shown = *bytes = NULL;
    return HV_ERR_NOMEM;
}
