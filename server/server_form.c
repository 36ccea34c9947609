/*
 * hviske-server: the fields of a transcription request (see
 * server_form.h). Every byte comes from the network: sizes are checked
 * before anything is copied, and values are parsed whole and strictly,
 * numbers by the same rules as on the command line (proglib/cmdline.h).
 */
#include "server_form.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "cmdline.h"

enum {
    MAX_PARTS = 32,      /* parts in one body */
    FILE_CHUNK = 1 << 16 /* first allocation of the file buffer */
};

static const struct {
    const char *name;
    size_t max_len; /* bytes */
    int whisper;    /* 1: whisper-server's, on POST /inference only; -1: not
                       there (whisper-server's field of that name means
                       something else, and is ignored there) */
    int param;      /* the library's parameter of that name (hv_params_set:
                       its range and its message) */
} FIELDS[SRV_N_FIELDS] = {
    [SRV_F_MODEL] = {"model", 127},
    [SRV_F_LANGUAGE] = {"language", 31},
    [SRV_F_PROMPT] = {"prompt", 16384},
    [SRV_F_RESPONSE_FORMAT] = {"response_format", 64},
    [SRV_F_TEMPERATURE] = {"temperature", 64},
    [SRV_F_PUNCTUATION] = {"punctuation", 64, 0, 1},
    [SRV_F_NUM_BEAMS] = {"num_beams", 64, 0, 1},
    [SRV_F_LENGTH_PENALTY] = {"length_penalty", 64, 0, 1},
    [SRV_F_TOP_K] = {"top_k", 64, 0, 1},
    [SRV_F_TOP_P] = {"top_p", 64, 0, 1},
    [SRV_F_SEED] = {"seed", 64, 0, 1},
    [SRV_F_MAX_TOKENS] = {"max_tokens", 64, 0, 1},
    [SRV_F_STREAM] = {"stream", 64},
    [SRV_F_TIMESTAMP_GRANULARITIES] = {"timestamp_granularities[]", 64},
    [SRV_F_CHUNKING_STRATEGY] = {"chunking_strategy", 1024},
    [SRV_F_INCLUDE] = {"include[]", 256},
    [SRV_F_PROGRESS] = {"progress", 64},
    [SRV_F_HOTWORDS] = {"hotwords", 1024},
    [SRV_F_HOTWORDS_SCORE] = {"hotwords_score", 64, 0, 1},
    [SRV_F_REPETITION_PENALTY] = {"repetition_penalty", 64, 0, 1},
    [SRV_F_NO_REPEAT_NGRAM_SIZE] = {"no_repeat_ngram_size", 64, 0, 1},
    [SRV_F_DIARIZE] = {"diarize", 64, -1, 1},
    [SRV_F_DIARIZE_VOICE] = {"diarize_voice", 64, 0, 1},
    [SRV_F_DOWNLOADS] = {"downloads", 128},
    [SRV_F_SRT_SPEAKERS] = {"srt_speakers", 64},
    [SRV_F_BEAM_SIZE] = {"beam_size", 64, 1},
    [SRV_F_OFFSET_T] = {"offset_t", 64, 1},
    [SRV_F_DURATION] = {"duration", 64, 1},
    [SRV_F_TRANSLATE] = {"translate", 64, 1},
    [SRV_F_TEMPERATURE_INC] = {"temperature_inc", 64, 1},
    [SRV_F_WHISPER_IGNORED] = {"", 1024, 1},
};

/* whisper-server's fields that hviske takes and ignores on POST
 * /inference (named in a Warning): settings of whisper.cpp's decoder that
 * hviske does not have. */
static const char *const WHISPER_IGNORED[] = {"offset_n",
                                              "max_context",
                                              "max_len",
                                              "best_of",
                                              "audio_ctx",
                                              "word_thold",
                                              "entropy_thold",
                                              "logprob_thold",
                                              "no_speech_thold",
                                              "debug_mode",
                                              "diarize",
                                              "tinydiarize",
                                              "split_on_word",
                                              "no_timestamps",
                                              "token_timestamps",
                                              "detect_language",
                                              "carry_initial_prompt",
                                              "suppress_non_speech",
                                              "suppress_nst",
                                              "vad",
                                              "vad_threshold",
                                              "vad_min_speech_duration_ms",
                                              "vad_min_silence_duration_ms",
                                              "vad_max_speech_duration_s",
                                              "vad_speech_pad_ms",
                                              "vad_samples_overlap",
                                              "no_language_probabilities",
                                              "no_context"};

void srv_error_set(srv_error *e, int status, const char *code, const char *param, const char *fmt,
                   ...) {
    e->status = status;
    e->type = status >= 500 ? "server_error" : "invalid_request_error";
    e->code = code;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

void srv_shown(char *out, size_t n, const char *s, size_t len) {
    size_t w = 0;
    for (; w < len && s[w] && w + 1 < n; w++) out[w] = s[w] >= 0x20 && s[w] < 0x7F ? s[w] : '?';
    if (w < len && s[w] && n >= 4) {
        w = w > n - 4 ? n - 4 : w;
        memcpy(out + w, "...", 3);
        w += 3;
    }
    out[w] = '\0';
}

void srv_form_init(srv_form *f, size_t max_file) {
    memset(f, 0, sizeof *f);
    f->max_file = max_file;
    f->max_beams = HV_MAX_BEAMS;
    f->cur = -1;
}

void srv_form_free(srv_form *f) {
    for (int i = 0; i < SRV_N_FIELDS; i++) {
        free(f->value[i]);
        f->value[i] = NULL;
    }
    free(f->file);
    f->file = NULL;
    f->file_len = f->file_cap = 0;
}

/* A field name as it may appear in a message or in param: printable
 * ASCII, at most 24 bytes ("..." after). */
static void safe_name(char *out, size_t n, const char *key) {
    size_t w = 0;
    for (const char *p = key; *p && w + 4 < n; p++, w++)
        out[w] = *p >= 0x20 && *p < 0x7F ? *p : '?';
    if (key[w] && w + 4 <= n) {
        memcpy(out + w, "...", 3);
        w += 3;
    }
    out[w] = '\0';
}

static int field_index(const srv_form *f, const char *key) {
    if (strcmp(key, "timestamp_granularities") == 0) return SRV_F_TIMESTAMP_GRANULARITIES;
    if (strcmp(key, "include") == 0) return SRV_F_INCLUDE;
    for (int i = 0; i < SRV_N_FIELDS; i++)
        if (FIELDS[i].name[0] && strcmp(key, FIELDS[i].name) == 0 &&
            (f->whisper ? FIELDS[i].whisper >= 0 : FIELDS[i].whisper <= 0))
            return i;
    for (size_t i = 0; f->whisper && i < sizeof WHISPER_IGNORED / sizeof *WHISPER_IGNORED; i++)
        if (strcmp(key, WHISPER_IGNORED[i]) == 0) return SRV_F_WHISPER_IGNORED;
    return -1;
}

/* Adds key to f->ignored once ("a, b"). */
static void note_ignored(srv_form *f, const char *key) {
    size_t n = strlen(key), used = strlen(f->ignored);
    for (const char *p = f->ignored; (p = strstr(p, key)); p += n)
        if ((p == f->ignored || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return;
    if (used + n + 3 < sizeof f->ignored)
        snprintf(f->ignored + used, sizeof f->ignored - used, "%s%s", used ? ", " : "", key);
}

/* The file part's filename, printable ASCII and UTF-8 kept, control
 * characters and quotes as '_'. */
static void keep_file_name(srv_form *f, const char *name) {
    size_t w = 0;
    for (const char *p = name ? name : ""; *p && w + 1 < sizeof f->file_name; p++)
        f->file_name[w++] = (unsigned char)*p < 0x20 || *p == 0x7F || *p == '"' ? '_' : *p;
    f->file_name[w] = '\0';
}

int srv_form_begin(srv_form *f, const char *key, const char *filename) {
    if (f->err.status) return -1;
    int idx = strcmp(key, "file") == 0 ? SRV_N_FIELDS : field_index(f, key);
    if (idx < 0) {
        char name[28];
        safe_name(name, sizeof name, key);
        srv_error_set(&f->err, 400, "unknown_parameter", name,
                      "Unrecognized request argument supplied: %s", name);
        return -1;
    }
    const char *name = idx == SRV_N_FIELDS ? "file" : FIELDS[idx].name;
    if (++f->n_parts > MAX_PARTS) {
        srv_error_set(&f->err, 400, "too_many_parts", NULL, "too many form fields (at most %d)",
                      MAX_PARTS);
        return -1;
    }
    f->cur_len = 0;
    if (idx == SRV_F_WHISPER_IGNORED) { /* taken, named, dropped */
        note_ignored(f, key);
        f->cur = idx;
        return 0;
    }
    int seen = idx == SRV_N_FIELDS ? f->have_file : f->value[idx] != NULL;
    if (seen && (idx == SRV_F_TIMESTAMP_GRANULARITIES || idx == SRV_F_INCLUDE)) {
        /* OpenAI's list field: one part per value, kept one per line */
        if (f->len[idx] + 1 > FIELDS[idx].max_len) {
            srv_error_set(&f->err, 400, "field_too_long", name,
                          "the field '%s' is too long (at most %zu bytes)", name,
                          FIELDS[idx].max_len);
            return -1;
        }
        char *nv = realloc(f->value[idx], f->len[idx] + 2);
        if (!nv) {
            srv_error_set(&f->err, 500, NULL, NULL, "out of memory");
            return -1;
        }
        nv[f->len[idx]++] = '\n';
        nv[f->len[idx]] = '\0';
        f->value[idx] = nv;
    } else if (seen) {
        srv_error_set(&f->err, 400, "duplicate_parameter", name,
                      "the field '%s' is given more than once", name);
        return -1;
    } else if (idx == SRV_N_FIELDS) {
        f->have_file = 1;
        keep_file_name(f, filename);
    } else if (!(f->value[idx] = calloc(1, 1))) {
        srv_error_set(&f->err, 500, NULL, NULL, "out of memory");
        return -1;
    }
    f->cur = idx;
    return 0;
}

int srv_form_data(srv_form *f, const char *data, size_t size) {
    if (f->err.status) return -1;
    int idx = f->cur;
    if (idx < 0) {
        srv_error_set(&f->err, 400, "invalid_multipart", NULL,
                      "malformed multipart/form-data body");
        return -1;
    }
    if (size == 0) return 0;
    if (idx == SRV_F_WHISPER_IGNORED) {
        if (size > FIELDS[idx].max_len - f->cur_len) {
            srv_error_set(&f->err, 400, "field_too_long", NULL,
                          "a whisper-server field is too long (at most %zu bytes)",
                          FIELDS[idx].max_len);
            return -1;
        }
        f->cur_len += size;
        return 0;
    }
    if (idx == SRV_N_FIELDS) {
        if (size > f->max_file - f->file_len) {
            srv_error_set(&f->err, 413, "file_too_large", "file",
                          "the file is larger than the server's limit of "
                          "%zu bytes (%zu MiB; the server's --max-upload-mb raises it)",
                          f->max_file, f->max_file >> 20);
            return -1;
        }
        if (f->file_len + size > f->file_cap) {
            size_t cap = f->file_cap ? f->file_cap : FILE_CHUNK;
            while (cap < f->file_len + size) cap = cap > f->max_file / 2 ? f->max_file : cap * 2;
            unsigned char *nb = realloc(f->file, cap);
            if (!nb) {
                srv_error_set(&f->err, 500, NULL, NULL, "out of memory");
                return -1;
            }
            f->file = nb;
            f->file_cap = cap;
        }
        memcpy(f->file + f->file_len, data, size);
        f->file_len += size;
        return 0;
    }
    const char *name = FIELDS[idx].name;
    size_t len = f->len[idx];
    if (size > FIELDS[idx].max_len - len) {
        srv_error_set(&f->err, 400, "field_too_long", name,
                      "the field '%s' is too long (at most %zu bytes)", name, FIELDS[idx].max_len);
        return -1;
    }
    char *nv = realloc(f->value[idx], len + size + 1);
    if (!nv) {
        srv_error_set(&f->err, 500, NULL, NULL, "out of memory");
        return -1;
    }
    memcpy(nv + len, data, size);
    nv[len + size] = '\0';
    f->value[idx] = nv;
    f->len[idx] = len + size;
    return 0;
}

/* ------------------------------------------------------------- values */

/* "en, da, de" into buf. */
static void language_list(const hv_model *model, char *buf, size_t n) {
    size_t w = 0;
    buf[0] = '\0';
    for (int i = 0; i < hv_model_n_languages(model) && w < n; i++) {
        int r = snprintf(buf + w, n - w, "%s%s", i ? ", " : "", hv_model_language(model, i));
        if (r < 0) break;
        w += (size_t)r;
    }
}

/* The field's value when given, else NULL. Values hold no NUL byte
 * (a value with one is refused as malformed). */
static const char *val(const srv_form *f, srv_field i) { return f->value[i]; }

const char *srv_form_value(const srv_form *f, srv_field i) { return val(f, i); }

static int has_nul(const srv_form *f, srv_field i) {
    return f->value[i] && strlen(f->value[i]) != f->len[i];
}

#define BAD(param, ...)                                                                            \
    do {                                                                                           \
        srv_error_set(e, 400, "invalid_value", param, __VA_ARGS__);                                \
        return -1;                                                                                 \
    } while (0)

/* OpenAI's server_vad settings, each optional, onto the detector's: the
 * library's rows under OpenAI's names. 0, or -1 with *e set. */
static int parse_server_vad(const cJSON *obj, hv_transcribe_params *tp, srv_error *e) {
    static const char P[] = "chunking_strategy";
    static const char *const ALIAS[][2] = {{"threshold", "vad_threshold"},
                                           {"prefix_padding_ms", "vad_speech_pad_ms"},
                                           {"silence_duration_ms", "vad_min_silence_ms"}};
    const cJSON *item;
    cJSON_ArrayForEach(item, obj) {
        const char *k = item->string;
        if (strcmp(k, "type") == 0) continue;
        const char *row = NULL;
        for (size_t i = 0; i < sizeof ALIAS / sizeof *ALIAS; i++)
            if (strcmp(k, ALIAS[i][0]) == 0) row = ALIAS[i][1];
        if (!row)
            BAD(P,
                "chunking_strategy has no field '%.40s' (type, threshold, "
                "prefix_padding_ms, silence_duration_ms)",
                k);
        /* the number as text, through the row's setter ("1e+20", "-5" and
         * "2.5" are no integers) */
        char text[64], what[160];
        if (cJSON_IsNumber(item)) snprintf(text, sizeof text, "%.17g", item->valuedouble);
        if (!cJSON_IsNumber(item) || hv_params_set(tp, row, text, NULL, 0))
            BAD(P, "invalid chunking_strategy.%s '%s' (expected %s)", k,
                cJSON_IsNumber(item) ? text : "(not a number)",
                hv_param_expect(hv_param_find(row), what, sizeof what));
    }
    return 0;
}

/* 1 when some object in the tree holds a key twice (cJSON keeps both in
 * the object's list, and its lookups see only the first). */
static int has_duplicate_key(const cJSON *node) {
    for (const cJSON *a = node ? node->child : NULL; a; a = a->next) {
        if (cJSON_IsObject(node))
            for (const cJSON *b = a->next; b; b = b->next)
                if (strcmp(a->string, b->string) == 0) return 1;
        if (has_duplicate_key(a)) return 1;
    }
    return 0;
}

cJSON *srv_json_field(const char *v, const char *param, srv_error *e) {
    /* JSON allows no control character but tab, CR and LF anywhere (in
     * strings they must be escaped); cJSON would skip any byte <= 32 as
     * white space. */
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 && !strchr("\t\r\n", *p)) {
            srv_error_set(e, 400, "invalid_value", param,
                          "%s is not valid JSON (a control character at byte %zu)", param,
                          (size_t)(p - v));
            return NULL;
        }
    const char *end = NULL;
    cJSON *obj = cJSON_ParseWithOpts(v, &end, 1); /* 1: nothing may follow */
    if (!obj) {
        srv_error_set(e, 400, "invalid_value", param,
                      "%s is not valid JSON (at byte %zu; nothing may follow the value)", param,
                      end && end >= v ? (size_t)(end - v) : (size_t)0);
        return NULL;
    }
    if (has_duplicate_key(obj)) {
        cJSON_Delete(obj);
        srv_error_set(e, 400, "invalid_value", param, "%s holds a key more than once", param);
        return NULL;
    }
    return obj;
}

/* chunking_strategy: "auto" or {"type": "server_vad", ...}: speech
 * detection with the server's settings, changed by the object's. */
static int parse_chunking_strategy(const char *v, hv_transcribe_params *tp, srv_error *e) {
    static const char P[] = "chunking_strategy";
    if (!tp->vad)
        BAD(P, "chunking_strategy: speech detection is not available on "
               "this server (it runs without a speech detector)");
    tp->chunking = HV_CHUNKING_VAD;
    if (strcmp(v, "auto") == 0) return 0;
    cJSON *obj = srv_json_field(v, P, e);
    if (!obj) return -1;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    int rc = 0;
    if (!cJSON_IsObject(obj) || !cJSON_IsString(type) ||
        strcmp(type->valuestring, "server_vad") != 0) {
        srv_error_set(e, 400, "invalid_value", P,
                      "chunking_strategy must be "
                      "\"auto\" or a JSON object {\"type\": \"server_vad\", "
                      "...}");
        rc = -1;
    } else {
        rc = parse_server_vad(obj, tp, e);
    }
    cJSON_Delete(obj);
    return rc;
}

/* true/1 or false/0 (whisper-server's clients send both). */
static int parse_bool(const char *v, int *out) {
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = 1;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = 0;
    else
        return -1;
    return 0;
}

/* Milliseconds, an integer 0..INT_MAX, as seconds. */
static int parse_ms(const char *v, double *out) {
    int ms;
    if (hvt_parse_int(v, 0, INT_MAX, &ms)) return -1;
    *out = ms / 1000.0;
    return 0;
}

/* downloads: hviske's format names joined by commas, each once. */
static int parse_downloads(const char *v, srv_params *p) {
    p->n_downloads = 0;
    for (const char *q = v;;) {
        size_t k = strcspn(q, ",");
        hv_output_format fmt;
        if (hvt_format_parse_n(q, k, &fmt) != 0) return -1;
        for (int i = 0; i < p->n_downloads; i++)
            if (p->downloads[i] == fmt) return -1;
        p->downloads[p->n_downloads++] = fmt;
        if (!q[k]) break;
        q += k + 1;
    }
    return 0;
}

/* The work budget (hv_work_check) with the server's --max-beams, the same
 * for both endpoints: a request cannot buy many times a normal one's time
 * with beams, draws or a temperature list. The 400 names the field that
 * buys the work: the beams when they alone are over, else the list. */
static int check_work(const srv_form *f, const srv_params *p, srv_error *e) {
    char msg[400];
    if (!hv_work_check(&p->tp, f->max_beams, msg, sizeof msg)) return 0;
    const char *param = val(f, SRV_F_BEAM_SIZE) ? "beam_size" : "num_beams";
    if (p->tp.num_beams <= f->max_beams)
        param = val(f, SRV_F_TEMPERATURE_INC) ? "temperature_inc" : "temperature";
    srv_error_set(e, 400, "invalid_value", param,
                  "%s; the server's --max-beams is %d (hviske takes up to %d)", msg, f->max_beams,
                  HV_MAX_BEAMS);
    return -1;
}

int srv_form_params(const srv_form *f, const hv_model *model, const hv_transcribe_params *base,
                    srv_params *p, srv_error *e) {
    memset(p, 0, sizeof *p);
    p->tp = *base;
    p->format = SRV_FMT_JSON;
    p->granularities = SRV_SEGMENTS;
    const char *v;

    if (!f->have_file) {
        srv_error_set(e, 400, "missing_file", "file",
                      "no file: send the audio as the multipart field "
                      "'file'");
        return -1;
    }
    if (f->file_len == 0) {
        srv_error_set(e, 400, "empty_file", "file", "the file is empty");
        return -1;
    }
    for (int i = 0; i < SRV_N_FIELDS; i++)
        if (i != SRV_F_PROMPT && has_nul(f, (srv_field)i))
            BAD(FIELDS[i].name, "the field '%s' holds a NUL byte", FIELDS[i].name);

    if ((v = val(f, SRV_F_MODEL))) {
        int ok = *v != '\0';
        for (const char *q = v; *q; q++) ok = ok && *q > 0x20 && *q < 0x7F;
        if (!ok)
            BAD("model", "model must be 1 to %zu visible ASCII characters",
                FIELDS[SRV_F_MODEL].max_len);
        snprintf(p->model, sizeof p->model, "%s", v);
    }
    if ((v = val(f, SRV_F_LANGUAGE))) {
        if (!hvt_model_has_language(model, v)) {
            char list[256], shown[40];
            language_list(model, list, sizeof list);
            size_t k = 0;
            for (; v[k] && k + 1 < sizeof shown; k++)
                shown[k] = v[k] >= 0x20 && v[k] < 0x7F ? v[k] : '?';
            shown[k] = '\0';
            BAD("language",
                "language '%s' is not supported by this model "
                "(supported: %s)",
                shown, list);
        }
        snprintf(p->language, sizeof p->language, "%s", v);
        p->tp.language = p->language;
    }
    /* prompt: accepted and ignored (the model takes no text prompt), with
     * a warning */
    p->prompt = val(f, SRV_F_PROMPT) != NULL;
    if ((v = val(f, SRV_F_RESPONSE_FORMAT)) && srv_format_parse(v, &p->format))
        BAD("response_format", "response_format must be json, text, "
                               "verbose_json, srt, vtt or diarized_json");
    if ((v = val(f, SRV_F_TEMPERATURE))) {
        if (hvt_parse_temperatures(v, &p->temperatures))
            BAD("temperature",
                "temperature must be a finite number >= 0 (0: greedy; > 0: "
                "sampling at that temperature), or at most %d of them joined by "
                "commas (the temperature fallback)",
                HVT_MAX_TEMPERATURES);
        /* one temperature above 0 samples, as OpenAI's; a list is the
         * fallback (OpenAI's API takes one number) */
        hvt_set_temperatures(&p->tp, &p->temperatures);
        p->tp.do_sample = p->temperatures.n == 1 && p->temperatures.t[0] > 0.0f;
    }
    /* whisper-server's fallback: temperature, then up by temperature_inc
     * to 1 (hvt_temperature_steps), where temperature_inc is given */
    if ((v = val(f, SRV_F_TEMPERATURE_INC))) {
        double inc;
        if (hv_parse_double(v, 0, 0.0, 1.0, &inc, NULL, 0))
            BAD("temperature_inc", "temperature_inc must be a number from 0 to 1");
        if (p->temperatures.n > 1)
            BAD("temperature_inc", "temperature_inc takes one temperature, not a list");
        double t = p->temperatures.n == 1 ? p->temperatures.t[0] : 0.0;
        if (hvt_temperature_steps(t, inc, &p->temperatures))
            BAD("temperature_inc",
                "temperature %g with temperature_inc %g makes more than %d temperatures", t, inc,
                HVT_MAX_TEMPERATURES);
        p->tp.temperatures = NULL, p->tp.n_temperatures = 0;
        hvt_set_temperatures(&p->tp, &p->temperatures);
        p->tp.do_sample = p->temperatures.n == 1 && p->temperatures.t[0] > 0.0f;
    }
    /* the fields that are the library's parameters: its rows' ranges and
     * message; the server's --max-beams caps the work with check_work,
     * below */
    for (int i = 0; i < SRV_N_FIELDS; i++) {
        char msg[sizeof e->message];
        if (FIELDS[i].param && (v = val(f, (srv_field)i)) &&
            hv_params_set(&p->tp, FIELDS[i].name, v, msg, sizeof msg))
            BAD(FIELDS[i].name, "%s", msg);
    }
    if ((v = val(f, SRV_F_HOTWORDS))) { /* the upload is freed before the transcription */
        snprintf(p->hotwords, sizeof p->hotwords, "%s", v);
        p->tp.hotwords = p->hotwords;
    }
    if ((v = val(f, SRV_F_STREAM))) {
        if (strcmp(v, "true") == 0)
            p->stream = 1;
        else if (strcmp(v, "false") != 0)
            BAD("stream", "stream must be true or false");
    }
    /* events carry text, as OpenAI streams json and text */
    if (p->stream && p->format != SRV_FMT_JSON && p->format != SRV_FMT_TEXT)
        BAD("stream", "stream=true works with response_format json or text");
    if ((v = val(f, SRV_F_TIMESTAMP_GRANULARITIES))) {
        p->granularities = 0;
        for (const char *q = v;;) {
            size_t k = strcspn(q, "\n");
            if (k == 4 && !strncmp(q, "word", 4))
                p->granularities |= SRV_WORDS;
            else if (k == 7 && !strncmp(q, "segment", 7))
                p->granularities |= SRV_SEGMENTS;
            else
                BAD("timestamp_granularities[]",
                    "timestamp_granularities[] must be word or segment");
            if (!q[k]) break;
            q += k + 1;
        }
        if ((p->granularities & SRV_WORDS) && p->format != SRV_FMT_VERBOSE_JSON)
            BAD("timestamp_granularities[]", "response_format must be verbose_json to use word "
                                             "timestamps");
    }
    /* include[]: logprobs (the tokens' log-probabilities in json, as
     * OpenAI gives them); other values are ignored with a warning, as
     * OpenAI ignores the ones a model does not support */
    p->ignored[0] = '\0';
    for (const char *q = val(f, SRV_F_INCLUDE); q;) {
        size_t k = strcspn(q, "\n"), used = strlen(p->ignored);
        if (k == 8 && !strncmp(q, "logprobs", 8) && p->format == SRV_FMT_JSON && !p->stream)
            p->logprobs = 1;
        else if (k > 0 && used + k + 3 < sizeof p->ignored) {
            char name[64];
            size_t w = 0;
            for (size_t i = 0; i < k && w + 1 < sizeof name; i++)
                name[w++] = q[i] >= 0x20 && q[i] < 0x7F && q[i] != '"' && q[i] != '\\' ? q[i] : '?';
            name[w] = '\0';
            snprintf(p->ignored + used, sizeof p->ignored - used, "%s%s", used ? ", " : "", name);
        }
        if (!q[k]) break;
        q += k + 1;
    }
    if ((v = val(f, SRV_F_PROGRESS)) && parse_bool(v, &p->progress))
        BAD("progress", "progress must be true or false");
    if ((v = val(f, SRV_F_SRT_SPEAKERS)) && hvt_parse_srt_speakers(v, &p->srt_speakers))
        BAD("srt_speakers", "srt_speakers must be label or dash");
    if ((v = val(f, SRV_F_DOWNLOADS)) && parse_downloads(v, p))
        BAD("downloads", "downloads must be hviske's formats joined by commas (txt, json, jsonl, "
                         "srt, vtt, csv, whisper-json)");
    if ((p->progress || p->n_downloads) && !p->stream)
        BAD(p->progress ? "progress" : "downloads", "%s works with stream=true",
            p->progress ? "progress" : "downloads");
    /* whisper-server's fields (POST /inference) */
    if ((v = val(f, SRV_F_BEAM_SIZE))) {
        int n = 1;
        if (strcmp(v, "-1") != 0 && hvt_parse_int(v, 1, HV_MAX_BEAMS, &n))
            BAD("beam_size", "beam_size must be an integer from 1 to %d (-1: greedy)",
                HV_MAX_BEAMS);
        p->tp.num_beams = n;
    }
    if ((v = val(f, SRV_F_OFFSET_T)) && parse_ms(v, &p->tp.offset_s))
        BAD("offset_t", "offset_t must be milliseconds, an integer >= 0");
    if ((v = val(f, SRV_F_DURATION)) && parse_ms(v, &p->tp.duration_s))
        BAD("duration", "duration must be milliseconds, an integer >= 0");
    if ((v = val(f, SRV_F_TRANSLATE))) {
        int on = 0;
        if (parse_bool(v, &on)) BAD("translate", "translate must be true or false");
        if (on) {
            srv_error_set(e, 400, "translation_not_supported", "translate",
                          "this model transcribes; it does not translate (translate=true)");
            return -1;
        }
    }
    if (p->tp.do_sample && p->tp.num_beams > 1)
        BAD("num_beams", "temperature > 0 (sampling) and num_beams > 1 "
                         "cannot be combined");
    if (check_work(f, p, e)) return -1;
    if ((v = val(f, SRV_F_CHUNKING_STRATEGY)) && parse_chunking_strategy(v, &p->tp, e) != 0)
        return -1;
    /* readable segments and subtitles come from word times */
    p->tp.word_timestamps = p->format == SRV_FMT_VERBOSE_JSON || p->format == SRV_FMT_SRT ||
                            p->format == SRV_FMT_VTT || p->format == SRV_FMT_DIARIZED_JSON;
    /* OpenAI's speaker annotations come with diarized_json */
    if (p->format == SRV_FMT_DIARIZED_JSON) p->tp.diarize = 1;
    return 0;
}
