/*
 * The output writers' API (include/hviske_output.h), beside the bytes of
 * each format (tests/programs/test_golden_outputs.py):
 *   - every format's name parses back to it, in any case; the extension
 *     of a file name names only hviske's own document formats;
 *   - a spec without a write callback, with a format that is none or a
 *     size too small is refused; a smaller spec (an older caller) gets the
 *     defaults for the fields it lacks;
 *   - a callback that fails is HV_ERR_IO; segments of a document format
 *     are HV_ERR_UNSUPPORTED; the segments of txt, srt and vtt written one
 *     by one are the whole result's bytes;
 *   - file names in JSON: as they are when UTF-8, else \xHH and base64;
 *   - speakers (diarize, set on the result here): txt "[SPEAKER_0K] text"
 *     lines, whole and streamed the same, json/jsonl "speaker" in each
 *     chunk and segment that has one, vtt "<v Speaker K+1>" opening each
 *     cue of a segment that has one, whole and streamed the same; srt
 *     "[SPEAKER_0K] " opening each such cue, or with srt_speakers dash
 *     "- " opening the first cue of a turn only, whole and streamed the
 *     same; openai-verbose-json "speaker":"A", "B" in those segments
 *     (none without), openai-diarized-json OpenAI's segments {type, id,
 *     ..., speaker}, "" where a segment has none.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hviske_output.h"
#include "pipeline.h"
#include "testlib.h"

typedef struct sink {
    char buf[1 << 16];
    size_t n;
    int calls, fail;
} sink;

static int to_sink(void *arg, const char *data, size_t n) {
    sink *s = arg;
    s->calls++;
    if (s->fail || s->n + n > sizeof s->buf) return -1;
    memcpy(s->buf + s->n, data, n);
    s->n += n;
    return 0;
}

static hv_status write_to(sink *k, hv_output_spec *s, const hv_result *res) {
    memset(k, 0, sizeof *k);
    s->write = to_sink;
    s->write_arg = k;
    return hv_output_write_result(s, "a.wav", res);
}

static void names(void) {
    for (int f = 0; f < HV_OUTPUT_N_FORMATS; f++) {
        const char *name = hv_output_format_name((hv_output_format)f);
        char upper[64];
        hv_output_format got = HV_OUTPUT_N_FORMATS;
        CHECK_MSG(name && hv_output_format_ext((hv_output_format)f), "format %d", f);
        if (!name) continue;
        snprintf(upper, sizeof upper, "%s", name);
        for (char *p = upper; *p; p++)
            if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
        CHECK_MSG(hv_output_format_parse(upper, strlen(upper), &got) == HV_OK && (int)got == f,
                  "%s parses back", upper);
    }
    hv_output_format got;
    CHECK(hv_output_format_name(HV_OUTPUT_N_FORMATS) == NULL);
    CHECK(hv_output_format_parse("srtx", 4, &got) == HV_ERR_INVALID_ARG);
    CHECK(hv_output_format_parse("srt,vtt", 3, &got) == HV_OK && got == HV_OUTPUT_SRT);
    CHECK(hv_output_format_parse("", 0, &got) == HV_ERR_INVALID_ARG);
    CHECK(hv_output_format_of_path("dir.d/talk.SRT", &got) == HV_OK && got == HV_OUTPUT_SRT);
    CHECK(hv_output_format_of_path("talk.json", &got) == HV_OK && got == HV_OUTPUT_JSON);
    CHECK(hv_output_format_of_path(".srt", &got) == HV_ERR_INVALID_ARG);
    CHECK(hv_output_format_of_path("srt.d/talk", &got) == HV_ERR_INVALID_ARG);
    CHECK(hv_output_format_is_stream(HV_OUTPUT_JSONL) &&
          !hv_output_format_is_stream(HV_OUTPUT_JSON));
    /* srt and vtt are one document per input, written a cue at a time */
    CHECK(hv_output_format_by_segment(HV_OUTPUT_SRT) &&
          hv_output_format_by_segment(HV_OUTPUT_VTT) &&
          hv_output_format_by_segment(HV_OUTPUT_TXT) &&
          hv_output_format_by_segment(HV_OUTPUT_JSONL) &&
          !hv_output_format_by_segment(HV_OUTPUT_JSON) &&
          !hv_output_format_by_segment(HV_OUTPUT_OPENAI_DIARIZED_JSON));
}

static void file_names(void) {
    char *shown, *bytes;
    CHECK(hv_output_file_name("tale \xc3\xa5.wav", &shown, &bytes) == HV_OK && shown && !bytes &&
          !strcmp(shown, "tale \xc3\xa5.wav"));
    free(shown);
    CHECK(hv_output_file_name("caf\xe9.wav", &shown, &bytes) == HV_OK && shown && bytes &&
          !strcmp(shown, "caf\\xe9.wav") && !strcmp(bytes, "Y2Fm6S53YXY="));
    free(shown);
    free(bytes);
}

/* A batch summary's line: one line, names as the JSON formats write them,
 * nulls where a value is missing, times to the millisecond. */
static void summary_lines(void) {
    char *line = NULL;
    size_t len = 0;
    CHECK(hv_output_summary_line("caf\xe9.wav", "out/a.txt", "ok", NULL, 2.7504, 0.0814, &line,
                                 &len) == HV_OK &&
          line && len == strlen(line));
    CHECK_MSG(line &&
                  !strcmp(line, "{\"input\":\"caf\\\\xe9.wav\",\"input_bytes\":\"Y2Fm6S53YXY=\","
                                "\"output\":\"out/a.txt\",\"status\":\"ok\",\"error\":null,"
                                "\"audio_seconds\":2.75,\"processing_seconds\":0.081}\n"),
              "%s", line ? line : "(null)");
    hv_free(line);
    CHECK(hv_output_summary_line(NULL, NULL, "error", "bad \xff", -1, 0, &line, &len) == HV_OK);
    CHECK_MSG(line && !strcmp(line, "{\"input\":null,\"status\":\"error\",\"error\":\"bad "
                                    "\xef\xbf\xbd\",\"audio_seconds\":null,"
                                    "\"processing_seconds\":0}\n"),
              "%s", line ? line : "(null)");
    hv_free(line);
    CHECK(hv_output_summary_line("a", NULL, NULL, NULL, 0, 0, &line, &len) == HV_ERR_INVALID_ARG &&
          !line && len == 0);
}

static void specs(const hv_result *res) {
    sink k;
    hv_output_spec s = hv_output_default_spec(HV_OUTPUT_TXT);
    CHECK(s.size == sizeof s && s.write == NULL);
    CHECK(hv_output_write_result(&s, "a.wav", res) == HV_ERR_INVALID_ARG);
    s.format = HV_OUTPUT_N_FORMATS;
    CHECK(write_to(&k, &s, res) == HV_ERR_INVALID_ARG && k.calls == 0);
    s = hv_output_default_spec(HV_OUTPUT_TXT);
    s.size = offsetof(hv_output_spec, write);
    CHECK(write_to(&k, &s, res) == HV_ERR_INVALID_ARG && k.calls == 0);
    /* cue limits of another size: refused before anything is written */
    s = hv_output_default_spec(HV_OUTPUT_SRT);
    CHECK(s.cues.size == sizeof s.cues);
    s.cues.size = 0;
    CHECK(write_to(&k, &s, res) == HV_ERR_INVALID_ARG && k.calls == 0);

    /* an older caller's spec: what it lacks is the default (segments) */
    hv_output_spec full = hv_output_default_spec(HV_OUTPUT_OPENAI_VERBOSE_JSON), old = full;
    sink a, b;
    CHECK(write_to(&a, &full, res) == HV_OK && a.n > 0);
    old.size = offsetof(hv_output_spec, granularities);
    old.granularities = 0; /* beyond its size: not read */
    CHECK(write_to(&b, &old, res) == HV_OK && a.n == b.n && !memcmp(a.buf, b.buf, a.n));
    CHECK(strstr(a.buf, "\"segments\":[") != NULL);

    s = hv_output_default_spec(HV_OUTPUT_SRT);
    memset(&k, 0, sizeof k);
    k.fail = 1;
    s.write = to_sink;
    s.write_arg = &k;
    CHECK(hv_output_write_result(&s, "a.wav", res) == HV_ERR_IO && k.calls == 1);
}

static void segments(const hv_result *res) {
    for (int f = 0; f < HV_OUTPUT_N_FORMATS; f++) {
        hv_output_spec s = hv_output_default_spec((hv_output_format)f);
        sink whole, parts;
        CHECK(write_to(&whole, &s, res) == HV_OK);
        memset(&parts, 0, sizeof parts);
        s.write_arg = &parts;
        hv_output_state st = {0};
        hv_status rc = HV_OK;
        for (int i = 0; rc == HV_OK && i < hv_result_n_segments(res); i++) {
            hv_segment g = hv_result_segment(res, i);
            rc = hv_output_write_segment(&s, "a.wav", &g, &st);
        }
        int streamed =
            f == HV_OUTPUT_TXT || f == HV_OUTPUT_JSONL || f == HV_OUTPUT_SRT || f == HV_OUTPUT_VTT;
        CHECK_MSG(rc == (streamed ? HV_OK : HV_ERR_UNSUPPORTED), "%s: segments %s",
                  hv_output_format_name((hv_output_format)f), hv_status_name(rc));
        if (f == HV_OUTPUT_SRT || f == HV_OUTPUT_VTT)
            CHECK_MSG(whole.n == parts.n && !memcmp(whole.buf, parts.buf, whole.n),
                      "%s: the segments are the whole", hv_output_format_name((hv_output_format)f));
    }
}

/* The srt of res written whole into *whole and segment by segment into
 * *parts, as s says. */
static void srt_both(sink *whole, sink *parts, hv_output_spec *s, const hv_result *res) {
    CHECK(write_to(whole, s, res) == HV_OK);
    memset(parts, 0, sizeof *parts);
    s->write_arg = parts;
    hv_output_state st = {0};
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        CHECK(hv_output_write_segment(s, "a.wav", &g, &st) == HV_OK);
    }
    CHECK(whole->n == parts->n && !memcmp(whole->buf, parts->buf, whole->n));
}

/* How many times needle occurs in the n bytes at hay. */
static int count(const char *hay, size_t n, const char *needle) {
    int k = 0;
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) k += !memcmp(hay + i, needle, m);
    return k;
}

/* srt of res, whose segments 0 and 1 have speakers 0 and 1: a label
 * opening every cue of theirs (a cue's text follows its time line), or a
 * dash at the change of speaker only. */
static void srt_speakers(const hv_result *res) {
    sink whole, parts;
    hv_output_spec s = hv_output_default_spec(HV_OUTPUT_SRT);
    hv_cue *c0 = NULL, *c1 = NULL;
    int n0 = 0, n1 = 0;
    hv_segment g0 = hv_result_segment(res, 0), g1 = hv_result_segment(res, 1);
    CHECK(hv_segment_cues(&g0, &s.cues, &c0, &n0) == HV_OK);
    CHECK(hv_segment_cues(&g1, &s.cues, &c1, &n1) == HV_OK);
    hv_cues_free(c0, n0);
    hv_cues_free(c1, n1);
    srt_both(&whole, &parts, &s, res);
    CHECK_MSG(count(whole.buf, whole.n, "\n[SPEAKER_00] ") == n0 &&
                  count(whole.buf, whole.n, "\n[SPEAKER_01] ") == n1 &&
                  count(whole.buf, whole.n, "[SPEAKER_") == n0 + n1,
              "srt label: %.*s", (int)whole.n, whole.buf);
    s = hv_output_default_spec(HV_OUTPUT_SRT);
    s.srt_speakers = HV_OUTPUT_SRT_DASH;
    srt_both(&whole, &parts, &s, res);
    CHECK_MSG(count(whole.buf, whole.n, "\n- ") == 1 && !strstr(whole.buf, "SPEAKER"),
              "srt dash: %.*s", (int)whole.n, whole.buf);
}

/* res's first two segments given speakers 0 and 1 (the rest none). */
static void speakers(hv_result *res) {
    res->segs[0].speaker = 0;
    res->segs[1].speaker = 1;
    hv_output_spec s = hv_output_default_spec(HV_OUTPUT_TXT);
    sink whole, parts;
    CHECK(write_to(&whole, &s, res) == HV_OK);
    char want[512];
    snprintf(want, sizeof want, "[SPEAKER_00] %s\n[SPEAKER_01] %s\n", res->segs[0].text,
             res->segs[1].text);
    CHECK_MSG(strncmp(whole.buf, want, strlen(want)) == 0, "txt: %.*s", (int)whole.n, whole.buf);
    memset(&parts, 0, sizeof parts);
    s.write_arg = &parts;
    hv_output_state st = {0};
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        CHECK(hv_output_write_segment(&s, "a.wav", &g, &st) == HV_OK);
    }
    CHECK(whole.n == parts.n && !memcmp(whole.buf, parts.buf, whole.n));
    s = hv_output_default_spec(HV_OUTPUT_JSONL);
    CHECK(write_to(&whole, &s, res) == HV_OK);
    CHECK_MSG(strstr(whole.buf, "\"speaker\":0") && strstr(whole.buf, "\"speaker\":1") &&
                  !strstr(whole.buf, "\"speaker\":-1"),
              "jsonl: %.*s", (int)whole.n, whole.buf);
    s = hv_output_default_spec(HV_OUTPUT_VTT);
    CHECK(write_to(&whole, &s, res) == HV_OK);
    const char *v1 = strstr(whole.buf, "<v Speaker 1>"), *v2 = strstr(whole.buf, "<v Speaker 2>");
    CHECK_MSG(v1 && v2 && v1 < v2 && !strstr(whole.buf, "<v Speaker 3>") && v1[-1] == '\n',
              "vtt: %.*s", (int)whole.n, whole.buf);
    memset(&parts, 0, sizeof parts);
    s.write_arg = &parts;
    st = (hv_output_state){0};
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        CHECK(hv_output_write_segment(&s, "a.wav", &g, &st) == HV_OK);
    }
    CHECK(whole.n == parts.n && !memcmp(whole.buf, parts.buf, whole.n));
    srt_speakers(res);
    s = hv_output_default_spec(HV_OUTPUT_OPENAI_VERBOSE_JSON);
    CHECK(write_to(&whole, &s, res) == HV_OK);
    CHECK_MSG(strstr(whole.buf, "\"speaker\":\"A\"") && strstr(whole.buf, "\"speaker\":\"B\"") &&
                  !strstr(whole.buf, "\"speaker\":\"C\"") && !strstr(whole.buf, "\"speaker\":\"\""),
              "verbose_json: %.*s", (int)whole.n, whole.buf);
    s = hv_output_default_spec(HV_OUTPUT_OPENAI_DIARIZED_JSON);
    CHECK(write_to(&whole, &s, res) == HV_OK);
    const char *a = strstr(whole.buf, "\"speaker\":\"A\""),
               *b = strstr(whole.buf, "\"speaker\":\"B\"");
    CHECK_MSG(a && b && a < b && strstr(whole.buf, "\"task\":\"transcribe\"") &&
                  strstr(whole.buf, "{\"type\":\"transcript.text.segment\",\"id\":\"seg_0\",") &&
                  count(whole.buf, whole.n, "\"type\":") ==
                      count(whole.buf, whole.n, "\"speaker\":"),
              "diarized_json: %.*s", (int)whole.n, whole.buf);
    res->segs[0].speaker = res->segs[1].speaker = -1;
    CHECK(write_to(&whole, &s, res) == HV_OK && !strstr(whole.buf, "<v "));
    s = hv_output_default_spec(HV_OUTPUT_SRT);
    CHECK(write_to(&whole, &s, res) == HV_OK && !strstr(whole.buf, "SPEAKER"));
    s = hv_output_default_spec(HV_OUTPUT_OPENAI_VERBOSE_JSON);
    CHECK(write_to(&whole, &s, res) == HV_OK && !strstr(whole.buf, "speaker"));
    s = hv_output_default_spec(HV_OUTPUT_OPENAI_DIARIZED_JSON);
    CHECK(write_to(&whole, &s, res) == HV_OK && strstr(whole.buf, "\"speaker\":\"\"") &&
          !strstr(whole.buf, "\"speaker\":\"A\""));
    s = hv_output_default_spec(HV_OUTPUT_JSONL);
    CHECK(write_to(&whole, &s, res) == HV_OK && !strstr(whole.buf, "speaker"));
}

int main(void) {
    names();
    file_names();
    summary_lines();
    hv_test_demo d;
    hv_test_demo_open(&d);
    if (d.ctx && d.clip) {
        hv_transcribe_params tp = hv_transcribe_default_params();
        tp.word_timestamps = 1;
        tp.chunking = HV_CHUNKING_FIXED; /* several segments */
        tp.chunk_seconds = 1.0f;
        hv_result *res = NULL;
        CHECK(hv_transcribe(d.ctx, d.clip, d.n_clip, 16000, 1, &tp, &res) == HV_OK && res);
        CHECK(hv_result_n_segments(res) >= 2);
        if (res) {
            specs(res);
            segments(res);
            if (hv_result_n_segments(res) >= 2) speakers(res);
        }
        hv_result_free(res);
    }
    hv_test_demo_free(&d);
    TEST_END();
}
