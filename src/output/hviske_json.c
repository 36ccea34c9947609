/* jsonl and json: hviske's JSON of a result (file, text, tokens and
 * their log-probs, score, timings, segments, chunks; words when asked);
 * json indented, with language and duration. Streamed, jsonl is one
 * {"file", "segment"} line per segment. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "output/writer.h"

/* Milliseconds rounded to the microsecond, so JSON shows 1.507, not
 * 1.5070889999624342. */
static double ms3(double ms) { return round(ms * 1000.0) / 1000.0; }

static cJSON *json_int_array(const int32_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* Adds "words" of w[n] to obj; 0 when out of memory. */
static int add_words(cJSON *obj, const hv_word *w, int n) {
    cJSON *a = hv_output_json_words(w, n);
    if (a && cJSON_AddItemToObject(obj, "words", a)) return 1;
    cJSON_Delete(a);
    return 0;
}

/* Adds "tokens" of v[n] to obj; 0 when out of memory. */
static int add_tokens(cJSON *obj, const int32_t *v, int n) {
    cJSON *a = json_int_array(v, n);
    if (a && cJSON_AddItemToObject(obj, "tokens", a)) return 1;
    cJSON_Delete(a);
    return 0;
}

/* Adds "speaker" where g has one (diarize); 0 when out of memory. */
static int add_speaker(cJSON *obj, const hv_segment *g) {
    return g->speaker < 0 || cJSON_AddNumberToObject(obj, "speaker", g->speaker);
}

/* The JSON object of one chunk (start, end, speaker, text, tokens; words:
 * its words too). NULL when out of memory. */
static cJSON *chunk_json(const hv_segment *g, int words) {
    char *st = hv_utf8_clean(g->text);
    cJSON *so = cJSON_CreateObject();
    int ok = st && so && cJSON_AddNumberToObject(so, "start", g->start) &&
             cJSON_AddNumberToObject(so, "end", g->end) && add_speaker(so, g) &&
             cJSON_AddStringToObject(so, "text", st) && add_tokens(so, g->tokens, g->n_tokens);
    if (ok && words) ok = add_words(so, g->words, g->n_words);
    free(st);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* The JSON object of one segment, a cue of chunk g: start, end, speaker
 * (g's, where it has one), text (its
 * lines on one), tokens (its words'), words (its words) when asked. NULL
 * when out of memory. */
static cJSON *cue_json(const hv_segment *g, hv_cue *c, int words) {
    cJSON *so = cJSON_CreateObject();
    int a, n;
    hv_output_cue_tokens(g, c, &a, &n);
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' '; /* its lines: one text */
    int ok = so && cJSON_AddNumberToObject(so, "start", c->start) &&
             cJSON_AddNumberToObject(so, "end", c->end) && add_speaker(so, g) &&
             cJSON_AddStringToObject(so, "text", c->text) && add_tokens(so, g->tokens + a, n);
    if (ok && words) ok = add_words(so, g->words + c->first_word, c->n_words);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* Appends the segments (cues) of chunk g to the array segs; 0 when out of
 * memory. */
static int add_cues_json(cJSON *segs, const hv_segment *g, const hv_output_spec *s) {
    hv_cue *cues = NULL;
    int nc = 0, ok = hv_segment_cues(g, &s->cues, &cues, &nc) == HV_OK;
    for (int k = 0; ok && k < nc; k++) {
        cJSON *so = cue_json(g, &cues[k], s->words);
        ok = so && cJSON_AddItemToArray(segs, so);
        if (!ok) cJSON_Delete(so);
    }
    hv_cues_free(cues, nc);
    return ok;
}

/* The JSON object of one result. full (json) adds language and duration,
 * s->words the words of the result and of each segment. NULL when out of
 * memory. */
static cJSON *result_json(const char *path, const hv_result *res, int full,
                          const hv_output_spec *s) {
    int words = s->words;
    hv_timings t = hv_result_timings(res);
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *obj = cJSON_CreateObject(), *arr = NULL, *lparr = NULL, *tim = NULL,
          *segs = cJSON_CreateArray(), *chunks = cJSON_CreateArray();

    int ok = text && obj && segs && chunks && hv_output_json_name(obj, "file", path) &&
             cJSON_AddStringToObject(obj, "text", text);
    if (ok && full)
        ok = cJSON_AddStringToObject(obj, "language", hv_result_language(res)) &&
             cJSON_AddNumberToObject(obj, "duration", hv_result_duration(res));
    ok = ok && (arr = cJSON_AddArrayToObject(obj, "tokens")) &&
         (lparr = cJSON_AddArrayToObject(obj, "token_logprobs")) &&
         cJSON_AddNumberToObject(obj, "score", hv_result_score(res)) &&
         (tim = cJSON_AddObjectToObject(obj, "timings")) &&
         cJSON_AddNumberToObject(tim, "frontend_ms", ms3(t.frontend_ms)) &&
         cJSON_AddNumberToObject(tim, "encoder_ms", ms3(t.encoder_ms)) &&
         cJSON_AddNumberToObject(tim, "decoder_ms", ms3(t.decoder_ms)) &&
         cJSON_AddNumberToObject(tim, "vad_ms", ms3(t.vad_ms)) &&
         cJSON_AddNumberToObject(tim, "encoded_s", ms3(t.encoded_s * 1e3) / 1e3) &&
         cJSON_AddNumberToObject(tim, "n_tokens", t.n_tokens);
    if (ok && words)
        ok = cJSON_AddNumberToObject(tim, "align_ms", ms3(t.align_ms)) &&
             add_words(obj, hv_result_words(res), hv_result_n_words(res));
    for (int i = 0; ok && i < hv_result_n_tokens(res); i++)
        ok = cJSON_AddItemToArray(arr, cJSON_CreateNumber(tokens[i])) &&
             cJSON_AddItemToArray(lparr, cJSON_CreateNumber(lps ? hv_output_float(lps[i]) : 0.0));
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        cJSON *co = chunk_json(&g, words);
        if (!co || !cJSON_AddItemToArray(chunks, co)) {
            cJSON_Delete(co);
            ok = 0;
        }
        ok = ok && add_cues_json(segs, &g, s);
    }
    if (ok && cJSON_AddItemToObject(obj, "segments", segs)) segs = NULL;
    if (ok && cJSON_AddItemToObject(obj, "chunks", chunks)) chunks = NULL;
    ok = ok && !segs && !chunks;
    if (!ok) {
        cJSON_Delete(segs);
        cJSON_Delete(chunks);
        cJSON_Delete(obj);
        obj = NULL;
    }
    free(text);
    return obj;
}

static int jsonl_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    return hv_output_put_json(f, result_json(file, res, 0, s), 0);
}

static int json_result(FILE *f, const hv_output_spec *s, const char *file, const hv_result *res) {
    return hv_output_put_json(f, result_json(file, res, 1, s), 1);
}

/* One {"file", "segment"} line per segment (cue) of chunk g. */
static int jsonl_segment(FILE *f, const hv_output_spec *s, const char *file, const hv_segment *g,
                         hv_output_state *st) {
    int rc = 0;
    cJSON *segs = cJSON_CreateArray();
    if (!segs || !add_cues_json(segs, g, s)) rc = -1;
    for (cJSON *seg = segs ? segs->child : NULL; seg && rc == 0; seg = seg->next) {
        cJSON *obj = cJSON_CreateObject();
        if (!obj || !hv_output_json_name(obj, "file", file) ||
            !cJSON_AddItemReferenceToObject(obj, "segment", seg)) {
            cJSON_Delete(obj);
            rc = -1;
            break;
        }
        rc = hv_output_put_json(f, obj, 0);
    }
    cJSON_Delete(segs);
    st->segments++;
    return rc;
}

const hv_output_writer hv_output_jsonl = {"jsonl", "jsonl", 1, 1, jsonl_result, jsonl_segment};
const hv_output_writer hv_output_json = {"json", "json", 0, 1, json_result, NULL};
