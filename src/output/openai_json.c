/* openai-json, openai-verbose-json and openai-diarized-json: OpenAI's
 * /v1/audio/transcriptions answers, json ({"text"}, "logprobs" when
 * asked), verbose_json (task, language, duration, text; segments, the
 * cues of each chunk, and words as the granularities ask) and
 * diarized_json (task, duration, text; segments, the cues of each chunk,
 * with their speakers). Speakers are OpenAI's labels: "A", "B", ... */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "output/writer.h"

/* OpenAI's logprobs: [{"token", "logprob", "bytes"}] per token of the
 * transcript (bytes: the token's UTF-8 bytes, which may be part of a
 * character; token: those bytes cleaned). 0 when out of memory. */
static int add_logprobs(cJSON *o, const hv_result *res, const hv_model *model) {
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    cJSON *a = cJSON_AddArrayToObject(o, "logprobs");
    for (int i = 0; a && i < hv_result_n_tokens(res); i++) {
        char buf[256];
        int n = hv_model_token_bytes(model, tokens[i], buf, (int)sizeof buf - 1);
        if (n < 0) n = 0;
        if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
        buf[n] = '\0';
        char *text = hv_utf8_clean(buf);
        cJSON *e = cJSON_CreateObject(), *bytes = NULL;
        int ok = text && e && cJSON_AddStringToObject(e, "token", text) &&
                 cJSON_AddNumberToObject(e, "logprob", lps ? hv_output_float(lps[i]) : 0.0) &&
                 (bytes = cJSON_AddArrayToObject(e, "bytes"));
        for (int k = 0; ok && k < n; k++)
            ok = cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)buf[k])) != 0;
        free(text);
        if (!ok || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            return 0;
        }
    }
    return a != NULL;
}

/* {"text": ...}, with "logprobs" when asked */
static cJSON *json_plain(const hv_result *res, const hv_output_spec *fo) {
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject();
    if (!text || !o || !cJSON_AddStringToObject(o, "text", text) ||
        (fo->logprobs && fo->model && !add_logprobs(o, res, fo->model))) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(text);
    return o;
}

/* OpenAI's label of speaker k >= 0 into buf[16]: "A".."Z", "AA", ... */
static const char *speaker_label(char *buf, int k) {
    char t[16];
    int n = 0;
    for (unsigned v = (unsigned)k + 1; v && n < 15; v = (v - 1) / 26)
        t[n++] = (char)('A' + (v - 1) % 26);
    for (int i = 0; i < n; i++) buf[i] = t[n - 1 - i];
    buf[n] = '\0';
    return buf;
}

/* Adds "speaker" where k >= 0 (a diarized segment); 0 when out of memory. */
static int add_speaker(cJSON *o, int k) {
    char label[16];
    return k < 0 || cJSON_AddStringToObject(o, "speaker", speaker_label(label, k));
}

/* One verbose_json segment made of a cue, OpenAI's keys: id, seek (start
 * in 10 ms frames), start, end, text, tokens (its words'), temperature
 * (that of its chunk's decoding: 0 greedy or beam search),
 * avg_logprob (their mean log-prob); speaker where its segment has one. */
static cJSON *json_cue(const hv_result *res, const hv_cue *c, int id, const hv_segment *g) {
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    int a = c->first_token, b = c->first_token + c->n_tokens;
    if (a < 0 || b > hv_result_n_tokens(res)) a = b = 0; /* cannot happen */
    double sum = 0;
    for (int k = a; lps && k < b; k++) sum += lps[k];
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' '; /* the cue's lines: one text */
    cJSON *o = cJSON_CreateObject(), *toks = NULL;
    int ok = o && cJSON_AddNumberToObject(o, "id", id) &&
             cJSON_AddNumberToObject(o, "seek", floor(c->start * 100)) &&
             cJSON_AddNumberToObject(o, "start", c->start) &&
             cJSON_AddNumberToObject(o, "end", c->end) &&
             cJSON_AddStringToObject(o, "text", c->text) &&
             (toks = cJSON_AddArrayToObject(o, "tokens"));
    for (int k = a; ok && k < b; k++)
        ok = cJSON_AddItemToArray(toks, cJSON_CreateNumber(tokens[k]));
    ok = ok && cJSON_AddNumberToObject(o, "temperature", hv_output_float(g->temperature)) &&
         cJSON_AddNumberToObject(o, "avg_logprob", b > a ? hv_output_float(sum / (b - a)) : 0.0) &&
         add_speaker(o, g->speaker);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One diarized_json segment made of a cue of g: OpenAI's type, id
 * ("seg_N"), start, end, text, speaker (g's; "" where it has none). */
static cJSON *json_turn(const hv_result *res, const hv_cue *c, int id, const hv_segment *g) {
    (void)res;
    char sid[32], label[16] = "";
    snprintf(sid, sizeof sid, "seg_%d", id);
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' ';
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "type", "transcript.text.segment") ||
        !cJSON_AddStringToObject(o, "id", sid) || !cJSON_AddNumberToObject(o, "start", c->start) ||
        !cJSON_AddNumberToObject(o, "end", c->end) ||
        !cJSON_AddStringToObject(o, "text", c->text) ||
        !cJSON_AddStringToObject(o, "speaker",
                                 g->speaker >= 0 ? speaker_label(label, g->speaker) : "")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

typedef cJSON *(*segment_fn)(const hv_result *res, const hv_cue *c, int id, const hv_segment *g);

/* The segments, one of each cue of each chunk (hv_segment_cues) made by
 * make, numbered from 0. 0 when out of memory. */
static int add_segments(cJSON *segs, const hv_result *res, const hv_output_spec *fo,
                        segment_fn make) {
    int ok = 1, id = 0;
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        hv_cue *cues = NULL;
        int nc = 0;
        ok = hv_segment_cues(&g, &fo->cues, &cues, &nc) == HV_OK;
        for (int k = 0; ok && k < nc; k++) {
            cJSON *s = make(res, &cues[k], id++, &g);
            ok = s && cJSON_AddItemToArray(segs, s);
            if (!ok) cJSON_Delete(s);
        }
        hv_cues_free(cues, nc);
    }
    return ok;
}

/* {"task":"transcribe","language","duration","text","segments":[...],
 *  "words":[...]}; segments and words as the granularities ask */
static cJSON *json_verbose(const hv_result *res, const hv_output_spec *fo) {
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject(), *segs = NULL, *words = NULL;
    int ok = text && o && cJSON_AddStringToObject(o, "task", "transcribe") &&
             cJSON_AddStringToObject(o, "language", hv_result_language(res)) &&
             cJSON_AddNumberToObject(o, "duration", hv_result_duration(res)) &&
             cJSON_AddStringToObject(o, "text", text);
    if (ok && (fo->granularities & HV_OUTPUT_SEGMENTS))
        ok =
            (segs = cJSON_AddArrayToObject(o, "segments")) && add_segments(segs, res, fo, json_cue);
    if (ok && (fo->granularities & HV_OUTPUT_WORDS)) {
        words = hv_output_json_words(hv_result_words(res), hv_result_n_words(res));
        ok = words && cJSON_AddItemToObject(o, "words", words);
        if (!ok) cJSON_Delete(words);
    }
    free(text);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* {"task":"transcribe","duration","text","segments":[...]} */
static cJSON *json_diarized(const hv_result *res, const hv_output_spec *fo) {
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *o = cJSON_CreateObject(), *segs = NULL;
    int ok = text && o && cJSON_AddStringToObject(o, "task", "transcribe") &&
             cJSON_AddNumberToObject(o, "duration", hv_result_duration(res)) &&
             cJSON_AddStringToObject(o, "text", text) &&
             (segs = cJSON_AddArrayToObject(o, "segments")) &&
             add_segments(segs, res, fo, json_turn);
    free(text);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int openai_json(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    (void)file;
    return hv_output_put_json(f, json_plain(res, s), 0);
}

static int openai_verbose_json(FILE *f, const hv_output_spec *s, const char *file,
                               const hv_result *res) {
    (void)file;
    return hv_output_put_json(f, json_verbose(res, s), 0);
}

const hv_output_writer hv_output_openai_json = {"openai-json", "json", 0, 0, openai_json, NULL};
const hv_output_writer hv_output_openai_verbose_json = {"openai-verbose-json", "json", 0, 0,
                                                        openai_verbose_json,   NULL};

static int openai_diarized_json(FILE *f, const hv_output_spec *s, const char *file,
                                const hv_result *res) {
    (void)file;
    return hv_output_put_json(f, json_diarized(res, s), 0);
}

const hv_output_writer hv_output_openai_diarized_json = {"openai-diarized-json", "json", 0, 0,
                                                         openai_diarized_json,   NULL};
