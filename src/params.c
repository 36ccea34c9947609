/*
 * The transcription parameters, one row each (hviske.h, "the
 * parameters"), as redis's config table: the setter by name, the range
 * check, the defaults and every program's options, form fields, keywords
 * and --help lines come from these rows. A new parameter is a field in
 * hv_transcribe_params and one row here.
 */
#include "params.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/number.h"

#define AT(field) offsetof(hv_transcribe_params, field)
#define DAY_S     86400.0

static const char *const CHUNKING[] = {
    [HV_CHUNKING_AUTO] = "auto", [HV_CHUNKING_ENERGY] = "energy", [HV_CHUNKING_FIXED] = "fixed",
    [HV_CHUNKING_NONE] = "none", [HV_CHUNKING_VAD] = "vad",       NULL};
static const char *const EDGES[] = {
    [HV_VAD_EDGES_SIGNAL] = "signal", [HV_VAD_EDGES_SILERO] = "silero", NULL};

/* Rows by kind: NAME, ALIAS, field, range, default, metavar, help. */
#define BOOL(name, alias, field, def, help)                                                        \
    { name, alias, HV_PARAM_BOOL, AT(field), 0, 1, 0, 0, def, NULL, NULL, help }
#define INT(name, alias, field, lo, hi, def, meta, help)                                           \
    { name, alias, HV_PARAM_INT, AT(field), lo, hi, 0, 0, def, NULL, meta, help }
#define U64(name, alias, field, def, meta, help)                                                   \
    { name, alias, HV_PARAM_U64, AT(field), 0, (double)UINT64_MAX, 0, 0, def, NULL, meta, help }
#define NUM(type, name, alias, field, lo, hi, lo_open, none, def, meta, help)                      \
    { name, alias, type, AT(field), lo, hi, lo_open, none, def, NULL, meta, help }
#define FLOAT(...)  NUM(HV_PARAM_FLOAT, __VA_ARGS__)
#define DOUBLE(...) NUM(HV_PARAM_DOUBLE, __VA_ARGS__)
#define ENUM(name, alias, field, choices, def, meta, help)                                         \
    { name, alias, HV_PARAM_ENUM, AT(field), 0, 0, 0, 0, def, choices, meta, help }

static const hv_param PARAMS[] = {
    {"language", NULL, HV_PARAM_STRING, AT(language), 0, 0, 0, 0, 0, NULL, "LANG",
     "a language code of the model (default: da when the model has it, else its first)"},
    BOOL("punctuation", NULL, punctuation, 1, "text with punctuation and capitals"),
    INT("max_new_tokens", "max_tokens", max_new_tokens, 1, INT_MAX, 0, "N",
        "stop each chunk after N generated tokens (default: the model's)"),
    FLOAT("dither", NULL, dither, 0, INFINITY, 0, 0, -1, "X",
          "dither amount; 0 turns it off (default: the model's)"),
    U64("dither_seed", NULL, dither_seed, 0, "N", "added to the seed of each chunk's dither noise"),
    INT("num_beams", "beams", num_beams, 1, HV_MAX_BEAMS, 1, "N",
        "beam search with N beams (1: greedy)"),
    FLOAT("length_penalty", NULL, length_penalty, 0, INFINITY, 1, 0, 1, "X",
          "beam search compares hypotheses by score / length^X (default 1)"),
    BOOL("do_sample", "sample", do_sample, 0, "sample each token instead (one beam only)"),
    FLOAT("temperature", NULL, temperature, 0, INFINITY, 0, 0, 1, "T",
          "sampling: divide the log-probs by T; 0 is greedy (default 1)"),
    INT("top_k", NULL, top_k, 0, INT_MAX, 0, "K",
        "sampling: keep the K most likely tokens (0: all)"),
    FLOAT("top_p", NULL, top_p, 0, 1, 1, 0, 1, "P",
          "sampling: keep the most likely tokens whose probabilities sum to P (default 1)"),
    U64("seed", NULL, seed, 0, "N", "sampling: the same seed and input give the same output"),
    INT("best_of", NULL, best_of, 1, HV_MAX_BEAMS, 1, "N",
        "sampling: draw N sequences, keep the best (default 1)"),
    FLOAT("compression_ratio_threshold", NULL, compression_ratio_threshold, 0, INFINITY, 1, 1, 2.4,
          "X", "the fallback: decode again while the text compresses more than X (default 2.4)"),
    FLOAT("log_prob_threshold", NULL, log_prob_threshold, -INFINITY, 0, 0, 1, -1, "X",
          "the fallback: decode again while the average log-prob is below X (default -1)"),
    FLOAT("no_speech_threshold", NULL, no_speech_threshold, 0, 1, 0, 1, 0.6, "P",
          "the fallback: a chunk whose no-speech probability is above P and log-prob low is "
          "silence (default 0.6)"),
    ENUM("chunking", NULL, chunking, CHUNKING, HV_CHUNKING_AUTO, "MODE",
         "how audio is cut into chunks: auto (the default) is vad, only the speech the detector "
         "finds is transcribed, in chunks of up to the model's clip length cut in the longest "
         "pauses (no text for silence or noise); energy: all audio, up to 30 s in one piece, "
         "longer cut at the quietest moment near each chunk limit; fixed: cut every "
         "chunk-seconds; none: one piece (an error when too long)"),
    FLOAT("chunk_seconds", NULL, chunk_seconds, 1, INFINITY, 0, 0, 0, "S",
          "chunk length for chunking fixed, at most the model's max_audio_clip_s (with "
          "diarize, 4 s less: its windows overlap)"),
    FLOAT("vad_threshold", NULL, vad_params.threshold, 0, 1, 0, 0, 0.5, "P",
          "speech probability that starts speech (default 0.5)"),
    FLOAT("vad_neg_threshold", NULL, vad_params.neg_threshold, -1, 1, 0, 0, -1, "P",
          "in speech, a lower probability is silence (< 0, the default: threshold - 0.15)"),
    INT("vad_min_speech_ms", NULL, vad_params.min_speech_ms, 0, 86400000, 250, "N",
        "shorter speech is dropped (default 250)"),
    INT("vad_min_silence_ms", NULL, vad_params.min_silence_ms, 0, 86400000, 100, "N",
        "silence that ends speech (default 100)"),
    INT("vad_speech_pad_ms", NULL, vad_params.speech_pad_ms, 0, 86400000, 30, "N",
        "added on each side of speech (default 30)"),
    FLOAT("vad_max_speech_s", NULL, vad_params.max_speech_s, 0, DAY_S, 0, 0, 0, "S",
          "longer speech is cut at its longest silence (0: no limit)"),
    ENUM("vad_edges", NULL, vad_params.edges, EDGES, HV_VAD_EDGES_SIGNAL, "E",
         "where speech starts and ends (docs/VAD.md; default signal)"),
    FLOAT("vad_max_gap_s", "vad_max_gap", vad_max_gap_s, 0, DAY_S, 0, 0, 3, "S",
          "a pause of S seconds or more always ends a chunk (default 3)"),
    BOOL("word_timestamps", NULL, word_timestamps, 0,
         "time every word (word, start, end, probability)"),
    {"max_audio_bytes", NULL, HV_PARAM_SIZE, AT(max_audio_bytes), 0, (double)SIZE_MAX, 0, 0,
     (double)HV_DEFAULT_MAX_AUDIO_BYTES, NULL, "N",
     "the most bytes of samples in one call (0: no budget)"},
    {"hotwords", NULL, HV_PARAM_STRING, AT(hotwords), 0, 0, 0, 0, 0, NULL, "LIST",
     "names and phrases to bias decoding towards, separated by commas"},
    FLOAT("hotwords_score", NULL, hotwords_score, 0, 100, 1, 0, HV_DEFAULT_HOTWORDS_SCORE, "X",
          "the bonus per matched hotword token (default 1.5)"),
    FLOAT("repetition_penalty", NULL, repetition_penalty, 0, INFINITY, 1, 0, 1, "X",
          "the score of every token already in the sequence divided by X (times X when "
          "negative; default 1: off)"),
    INT("no_repeat_ngram_size", NULL, no_repeat_ngram_size, 0, INT_MAX, 0, "N",
        "no run of N tokens twice (default 0: off)"),
    BOOL("diarize", NULL, diarize, 0,
         "a diarize-and-timestamp model's speaker turns, one segment per turn"),
    FLOAT("diarize_voice", NULL, diarize_voice, 0, 1, 0, 0, HV_DEFAULT_DIARIZE_VOICE, "X",
          "diarize: link a speaker silent in a window's overlap to an earlier label whose voice "
          "signature's cosine exceeds X, move a turn or a sentence to the label its voice claims, "
          "merge labels of one voice, and regroup the segments by voice at the end (1: off)"),
    DOUBLE("offset_s", NULL, offset_s, 0, INFINITY, 0, 0, 0, "S",
           "transcribe from S seconds into the audio"),
    DOUBLE("duration_s", NULL, duration_s, 0, INFINITY, 0, 0, 0, "S",
           "transcribe S seconds (0: to the end)"),
};
#undef AT

enum { N_PARAMS = (int)(sizeof PARAMS / sizeof *PARAMS) };

int hv_param_count(void) { return N_PARAMS; }

const hv_param *hv_param_at(int i) { return i >= 0 && i < N_PARAMS ? &PARAMS[i] : NULL; }

/* a equals b, '-' and '_' alike. */
static int same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))) return 0;
    return *a == *b;
}

const hv_param *hv_param_find(const char *name) {
    if (!name) return NULL;
    if (name[0] == '-' && name[1] == '-') name += 2;
    for (int i = 0; i < N_PARAMS; i++)
        if (same_name(name, PARAMS[i].name) ||
            (PARAMS[i].alias && same_name(name, PARAMS[i].alias)))
            return &PARAMS[i];
    return NULL;
}

/* The integer bound of a row, for messages: its type's own limit when
 * the double holds it rounded up. */
static unsigned long long int_bound(const hv_param *p, double v) {
    if (p->type == HV_PARAM_U64 && v >= (double)UINT64_MAX) return UINT64_MAX;
    if (p->type == HV_PARAM_SIZE && v >= (double)SIZE_MAX) return SIZE_MAX;
    return (unsigned long long)v;
}

const char *hv_param_expect(const hv_param *p, char *buf, size_t n) {
    if (!buf || !n) return buf;
    buf[0] = '\0';
    if (!p) return buf;
    size_t w = 0;
    switch (p->type) {
        case HV_PARAM_BOOL: snprintf(buf, n, "true or false"); return buf;
        case HV_PARAM_STRING: snprintf(buf, n, "a string"); return buf;
        case HV_PARAM_ENUM:
            for (int i = 0; p->choices[i] && w < n; i++) {
                const char *sep = !i ? "" : p->choices[i + 1] ? ", " : " or ";
                w += (size_t)snprintf(buf + w, n - w, "%s%s", sep, p->choices[i]);
            }
            return buf;
        case HV_PARAM_INT:
        case HV_PARAM_U64:
        case HV_PARAM_SIZE:
            snprintf(buf, n, "an integer from %llu to %llu", int_bound(p, p->lo),
                     int_bound(p, p->hi));
            return buf;
        case HV_PARAM_FLOAT:
        case HV_PARAM_DOUBLE: break;
    }
    w = hv_number_expect(p->lo_open, p->lo, p->hi, buf, n);
    if (p->none && w < n) snprintf(buf + w, n - w, ", or none");
    return buf;
}

/* The one refusal: "invalid NAME 'VALUE' (expected WHAT)". */
static hv_status refuse(const hv_param *p, const char *name, const char *value, char *errbuf,
                        size_t n) {
    char what[160], v[72], nm[72];
    if (errbuf && n) {
        hv_number_shown(v, sizeof v, value);
        hv_number_shown(nm, sizeof nm, name);
        snprintf(errbuf, n, "invalid %s '%s' (expected %s)", nm, v,
                 hv_param_expect(p, what, sizeof what));
    }
    return HV_ERR_INVALID_ARG;
}

/* value into the field of row p at base; 0, or -1 when it is not one. */
static int parse_into(const hv_param *p, const char *value, void *field) {
    uint64_t u;
    switch (p->type) {
        case HV_PARAM_BOOL:
            if (!strcmp(value, "true") || !strcmp(value, "1"))
                *(int *)field = 1;
            else if (!strcmp(value, "false") || !strcmp(value, "0"))
                *(int *)field = 0;
            else
                return -1;
            return 0;
        case HV_PARAM_STRING: *(const char **)field = value; return 0;
        case HV_PARAM_ENUM:
            for (int i = 0; p->choices[i]; i++)
                if (!strcmp(value, p->choices[i])) {
                    *(int *)field = i;
                    return 0;
                }
            return -1;
        case HV_PARAM_INT:
        case HV_PARAM_U64:
        case HV_PARAM_SIZE:
            if (hv_parse_u64(value, int_bound(p, p->lo), int_bound(p, p->hi), &u, NULL, 0))
                return -1;
            if (p->type == HV_PARAM_INT)
                *(int *)field = (int)u;
            else if (p->type == HV_PARAM_U64)
                *(uint64_t *)field = u;
            else
                *(size_t *)field = (size_t)u;
            return 0;
        case HV_PARAM_FLOAT:
            if (p->none && !strcmp(value, "none")) {
                *(float *)field = NAN;
                return 0;
            }
            return hv_parse_float(value, p->lo_open, p->lo, p->hi, field, NULL, 0) ? -1 : 0;
        case HV_PARAM_DOUBLE:
            if (p->none && !strcmp(value, "none")) {
                *(double *)field = NAN;
                return 0;
            }
            return hv_parse_double(value, p->lo_open, p->lo, p->hi, field, NULL, 0) ? -1 : 0;
    }
    return -1;
}

hv_status hv_params_set(hv_transcribe_params *params, const char *name, const char *value,
                        char *errbuf, size_t n) {
    const hv_param *p = hv_param_find(name);
    if (!p) {
        char nm[72];
        hv_number_shown(nm, sizeof nm, name ? name : "(null)");
        if (errbuf && n) snprintf(errbuf, n, "unknown parameter '%s'", nm);
        return HV_ERR_INVALID_ARG;
    }
    if (!params || !value) return refuse(p, name, value ? value : "(null)", errbuf, n);
    if (parse_into(p, value, (char *)params + p->offset)) return refuse(p, name, value, errbuf, n);
    return HV_OK;
}

/* A field's value as a double, for the range check and the message. */
static double value_of(const hv_param *p, const hv_transcribe_params *params) {
    const char *field = (const char *)params + p->offset;
    switch (p->type) {
        case HV_PARAM_BOOL:
        case HV_PARAM_INT:
        case HV_PARAM_ENUM: return *(const int *)field;
        case HV_PARAM_U64: return (double)*(const uint64_t *)field;
        case HV_PARAM_SIZE: return (double)*(const size_t *)field;
        case HV_PARAM_FLOAT: return *(const float *)field;
        case HV_PARAM_DOUBLE: return *(const double *)field;
        case HV_PARAM_STRING: break;
    }
    return 0;
}

static int allowed(const hv_param *p, double v) {
    double def = p->type == HV_PARAM_FLOAT ? (double)(float)p->def : p->def;
    if (v == def || (p->none && isnan(v))) return 1;
    switch (p->type) {
        case HV_PARAM_BOOL:
        case HV_PARAM_STRING:
        case HV_PARAM_U64:
        case HV_PARAM_SIZE: return 1; /* any value of the type */
        case HV_PARAM_ENUM: {
            int k = 0;
            while (p->choices[k]) k++;
            return v >= 0 && v < k;
        }
        case HV_PARAM_INT:
        case HV_PARAM_FLOAT:
        case HV_PARAM_DOUBLE: break;
    }
    return isfinite(v) && (p->lo_open ? v > p->lo : v >= p->lo) && v <= p->hi;
}

hv_status hv_params_check_fields(const hv_transcribe_params *params, size_t from, size_t to,
                                 char *errbuf, size_t n) {
    for (int i = 0; i < N_PARAMS; i++) {
        const hv_param *p = &PARAMS[i];
        if (p->offset < from || p->offset >= to) continue;
        double v = value_of(p, params);
        if (allowed(p, v)) continue;
        char text[64];
        if (p->type == HV_PARAM_INT || p->type == HV_PARAM_ENUM)
            snprintf(text, sizeof text, "%d", (int)v);
        else
            snprintf(text, sizeof text, "%g", v);
        return refuse(p, p->name, text, errbuf, n);
    }
    return HV_OK;
}

hv_status hv_params_check_size(size_t size, size_t want, const char *type, char *errbuf, size_t n) {
    if (size == want) return HV_OK;
    if (errbuf && n)
        snprintf(errbuf, n,
                 "%s.size %zu: this library's is %zu (start from the _default_params() "
                 "function; a program built against another hviske.h?)",
                 type, size, want);
    return HV_ERR_INVALID_ARG;
}

hv_status hv_params_check(const hv_transcribe_params *params, char *errbuf, size_t n) {
    hv_status st;
    if (!params) return HV_ERR_INVALID_ARG;
    if ((st = hv_params_check_size(params->size, sizeof *params, "hv_transcribe_params", errbuf,
                                   n)) ||
        (st = hv_params_check_size(params->vad_params.size, sizeof params->vad_params,
                                   "hv_vad_params", errbuf, n)))
        return st;
    return hv_params_check_fields(params, 0, sizeof *params, errbuf, n);
}

hv_transcribe_params hv_transcribe_default_params(void) {
    hv_transcribe_params tp = {.size = sizeof tp, .vad_params = {.size = sizeof tp.vad_params}};
    for (int i = 0; i < N_PARAMS; i++) {
        const hv_param *p = &PARAMS[i];
        char *field = (char *)&tp + p->offset;
        switch (p->type) {
            case HV_PARAM_BOOL:
            case HV_PARAM_INT:
            case HV_PARAM_ENUM: *(int *)field = (int)p->def; break;
            case HV_PARAM_U64: *(uint64_t *)field = (uint64_t)p->def; break;
            case HV_PARAM_SIZE: *(size_t *)field = (size_t)p->def; break;
            case HV_PARAM_FLOAT: *(float *)field = (float)p->def; break;
            case HV_PARAM_DOUBLE: *(double *)field = p->def; break;
            case HV_PARAM_STRING: *(const char **)field = NULL; break;
        }
    }
    return tp;
}
