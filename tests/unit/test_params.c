/* The parameter rows (hviske.h, "the parameters"; src/params.c): every
 * row found by its name and alias, the defaults that are its own, the
 * setter's strict parsing and its one message, the check of a struct
 * with the same message, and the speech detector's defaults and check
 * taken from the same rows. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hviske.h"
#include "testlib.h"

/* hv_params_set's status, and its message in msg. */
static hv_status set(hv_transcribe_params *p, const char *name, const char *value, char *msg,
                     size_t n) {
    msg[0] = '\0';
    return hv_params_set(p, name, value, msg, n);
}

static void test_rows(void) {
    int n = hv_param_count();
    CHECK(n > 20 && hv_param_at(-1) == NULL && hv_param_at(n) == NULL);
    for (int i = 0; i < n; i++) {
        const hv_param *p = hv_param_at(i);
        CHECK_MSG(p && p->name && p->help && hv_param_find(p->name) == p, "row %d", i);
        CHECK_MSG(p->offset < sizeof(hv_transcribe_params), "%s: offset %zu", p->name, p->offset);
        if (p->alias) CHECK_MSG(hv_param_find(p->alias) == p, "%s: alias %s", p->name, p->alias);
        for (int k = 0; k < i; k++) /* names and aliases name one row each */
            CHECK_MSG(strcmp(p->name, hv_param_at(k)->name) != 0 &&
                          (!p->alias || hv_param_find(p->alias) == p),
                      "%s twice", p->name);
        char what[160];
        CHECK_MSG(hv_param_expect(p, what, sizeof what)[0], "%s: no expect text", p->name);
    }
    /* a command line's spelling finds the row */
    CHECK(hv_param_find("--top-k") == hv_param_find("top_k"));
    CHECK(hv_param_find("beams") == hv_param_find("num_beams"));
    CHECK(hv_param_find("max-tokens") == hv_param_find("max_new_tokens"));
    CHECK(hv_param_find("no_such_parameter") == NULL && hv_param_find(NULL) == NULL);
}

static void test_defaults(void) {
    hv_transcribe_params d = hv_transcribe_default_params();
    char msg[512] = "";
    CHECK_MSG(hv_params_check(&d, msg, sizeof msg) == HV_OK, "defaults refused: %s", msg);
    /* the documented defaults (hviske.h) are the rows' */
    CHECK(d.punctuation == 1 && d.num_beams == 1 && d.length_penalty == 1.0f);
    CHECK(d.temperature == 1.0f && d.top_p == 1.0f && d.best_of == 1 && d.dither == -1.0f);
    CHECK(d.compression_ratio_threshold == 2.4f && d.log_prob_threshold == -1.0f);
    CHECK(d.no_speech_threshold == 0.6f && d.vad_max_gap_s == 3.0f);
    CHECK(d.max_audio_bytes == HV_DEFAULT_MAX_AUDIO_BYTES && d.chunking == HV_CHUNKING_AUTO);
    CHECK(!d.language && !d.vad && !d.temperatures && !d.progress && !d.segment_callback);
    hv_vad_params v = hv_vad_default_params();
    CHECK(memcmp(&v, &d.vad_params, sizeof v) == 0);
    CHECK(v.threshold == 0.5f && v.min_speech_ms == 250 && v.min_silence_ms == 100);
    CHECK(v.speech_pad_ms == 30 && v.edges == HV_VAD_EDGES_SIGNAL && v.neg_threshold < 0);
}

static void test_set(void) {
    hv_transcribe_params p = hv_transcribe_default_params();
    char msg[512];
    CHECK(set(&p, "num_beams", "4", msg, sizeof msg) == HV_OK && p.num_beams == 4 && !msg[0]);
    CHECK(set(&p, "--beams", "64", msg, sizeof msg) == HV_OK && p.num_beams == 64);
    CHECK(set(&p, "top-p", "0.5", msg, sizeof msg) == HV_OK && p.top_p == 0.5f);
    CHECK(set(&p, "seed", "18446744073709551615", msg, sizeof msg) == HV_OK &&
          p.seed == UINT64_MAX);
    CHECK(set(&p, "chunking", "fixed", msg, sizeof msg) == HV_OK &&
          p.chunking == HV_CHUNKING_FIXED);
    CHECK(set(&p, "vad_edges", "silero", msg, sizeof msg) == HV_OK &&
          p.vad_params.edges == HV_VAD_EDGES_SILERO);
    CHECK(set(&p, "punctuation", "false", msg, sizeof msg) == HV_OK && p.punctuation == 0);
    CHECK(set(&p, "no_speech_threshold", "none", msg, sizeof msg) == HV_OK &&
          isnan(p.no_speech_threshold));
    CHECK(set(&p, "offset_s", "1.5", msg, sizeof msg) == HV_OK && p.offset_s == 1.5);
    CHECK(set(&p, "language", "da", msg, sizeof msg) == HV_OK && strcmp(p.language, "da") == 0);

    /* refusals: one text, the name as given, the value left alone */
    static const struct {
        const char *name, *value, *want;
    } bad[] = {
        {"num_beams", "0", "invalid num_beams '0' (expected an integer from 1 to 64)"},
        {"--beams", "65", "invalid --beams '65' (expected an integer from 1 to 64)"},
        {"beams", "+4", "invalid beams '+4' (expected an integer from 1 to 64)"},
        {"beams", " 4", "invalid beams ' 4' (expected an integer from 1 to 64)"},
        {"top_k", "2147483648",
         "invalid top_k '2147483648' (expected an integer from 0 to "
         "2147483647)"},
        {"top_p", "0", "invalid top_p '0' (expected a number > 0 and <= 1)"},
        {"length_penalty", "inf", "invalid length_penalty 'inf' (expected a finite number > 0)"},
        {"length_penalty", "1e99", "invalid length_penalty '1e99' (expected a finite number > 0)"},
        {"log_prob_threshold", "0.5",
         "invalid log_prob_threshold '0.5' (expected a finite number <= 0, or none)"},
        {"temperature", "none", "invalid temperature 'none' (expected a finite number >= 0)"},
        {"chunking", "Fixed",
         "invalid chunking 'Fixed' (expected auto, energy, fixed, none or vad)"},
        {"punctuation", "yes", "invalid punctuation 'yes' (expected true or false)"},
        {"seed", "18446744073709551616",
         "invalid seed '18446744073709551616' (expected an integer from 0 to "
         "18446744073709551615)"},
        {"vad_min_speech_ms", "-1",
         "invalid vad_min_speech_ms '-1' (expected an integer from 0 to 86400000)"},
        {"beams", "\x01x", "invalid beams '?x' (expected an integer from 1 to 64)"},
        {"nonsense", "1", "unknown parameter 'nonsense'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hv_transcribe_params before = p;
        hv_status st = set(&p, bad[i].name, bad[i].value, msg, sizeof msg);
        CHECK_MSG(st == HV_ERR_INVALID_ARG && strcmp(msg, bad[i].want) == 0,
                  "%s=%s: status %d, '%s' (want '%s')", bad[i].name, bad[i].value, (int)st, msg,
                  bad[i].want);
        CHECK_MSG(memcmp(&before, &p, sizeof p) == 0, "%s: changed on a refusal", bad[i].name);
    }
    CHECK(hv_params_set(&p, "beams", "0", NULL, 0) == HV_ERR_INVALID_ARG); /* no buffer */
    CHECK(hv_params_set(NULL, "beams", "1", msg, sizeof msg) == HV_ERR_INVALID_ARG);
    CHECK(hv_params_set(&p, "beams", NULL, msg, sizeof msg) == HV_ERR_INVALID_ARG);
}

/* The struct's check says what the setter says, for each row's first
 * value outside its range. */
static void test_check(void) {
    char msg[512];
    hv_transcribe_params p = hv_transcribe_default_params();
    p.num_beams = 0;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strcmp(msg, "invalid num_beams '0' (expected an integer from 1 to 64)") == 0);
    p = hv_transcribe_default_params();
    p.top_p = 1.5f;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strcmp(msg, "invalid top_p '1.5' (expected a number > 0 and <= 1)") == 0);
    p = hv_transcribe_default_params();
    p.vad_params.edges = 7;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strcmp(msg, "invalid vad_edges '7' (expected signal or silero)") == 0);
    p = hv_transcribe_default_params();
    p.compression_ratio_threshold = NAN; /* "none": allowed where the row says so */
    p.dither = -1;                       /* the default, outside the range: allowed */
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_OK);
    p.temperature = NAN;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strstr(msg, "invalid temperature 'nan'"));
    /* every bounded numeric row refuses a value past its bounds */
    for (int i = 0; i < hv_param_count(); i++) {
        const hv_param *r = hv_param_at(i);
        if (r->type != HV_PARAM_INT && r->type != HV_PARAM_FLOAT && r->type != HV_PARAM_DOUBLE)
            continue;
        p = hv_transcribe_default_params();
        char *field = (char *)&p + r->offset;
        double out = isinf(r->hi) ? r->lo - 1 : r->hi + 1;
        if (isinf(r->hi) && isinf(r->lo)) continue;
        if (out == r->def) out = r->lo - 2;
        if (r->type == HV_PARAM_INT) {
            if (out > 2147483647.0 || out < -2147483648.0) continue;
            *(int *)field = (int)out;
        } else if (r->type == HV_PARAM_FLOAT) {
            *(float *)field = (float)out;
        } else {
            *(double *)field = out;
        }
        CHECK_MSG(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
                      strstr(msg, r->name),
                  "%s = %g taken (%s)", r->name, out, msg);
    }
}

/* The size fields: the defaults carry the library's sizes, and a struct
 * of another size (a program built against another hviske.h) is
 * refused, naming the struct. */
static void test_sizes(void) {
    char msg[512];
    hv_transcribe_params p = hv_transcribe_default_params();
    hv_model_params mp = hv_model_default_params();
    CHECK(p.size == sizeof p && p.vad_params.size == sizeof p.vad_params && mp.size == sizeof mp);
    CHECK(hv_vad_default_params().size == sizeof(hv_vad_params));
    p.size = sizeof p - 8;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strstr(msg, "hv_transcribe_params.size"));
    p = hv_transcribe_default_params();
    p.vad_params.size = 0;
    CHECK(hv_params_check(&p, msg, sizeof msg) == HV_ERR_INVALID_ARG &&
          strstr(msg, "hv_vad_params.size 0"));
    hv_model *m = (hv_model *)1;
    mp.size = 4;
    CHECK(hv_model_load("/nonexistent", &mp, &m, msg, sizeof msg) == HV_ERR_INVALID_ARG && !m &&
          strstr(msg, "hv_model_params.size 4"));
}

/* The public number parsers (the rules themselves: test_cmdline): the
 * value, or the refusal's message naming the text and the range, as the
 * rows' refusals word it. */
static void test_numbers(void) {
    char msg[256];
    uint64_t u = 7;
    double d = 7;
    float f = 7;
    CHECK(hv_parse_u64("64", 1, 64, &u, msg, sizeof msg) == HV_OK && u == 64);
    CHECK(hv_parse_u64("65", 1, 64, &u, msg, sizeof msg) == HV_ERR_INVALID_ARG && u == 64);
    CHECK_MSG(!strcmp(msg, "invalid number '65' (expected an integer from 1 to 64)"), "%s", msg);
    CHECK(hv_parse_u64("x", 0, 9, &u, NULL, 0) == HV_ERR_INVALID_ARG);
    CHECK(hv_parse_double("0.5", 1, 0, 1, &d, msg, sizeof msg) == HV_OK && d == 0.5);
    CHECK(hv_parse_double("0", 1, 0, 1, &d, msg, sizeof msg) == HV_ERR_INVALID_ARG && d == 0.5);
    CHECK_MSG(!strcmp(msg, "invalid number '0' (expected a number > 0 and <= 1)"), "%s", msg);
    CHECK(hv_parse_float("-1", 0, 0, INFINITY, &f, msg, sizeof msg) == HV_ERR_INVALID_ARG);
    CHECK_MSG(!strcmp(msg, "invalid number '-1' (expected a finite number >= 0)"), "%s", msg);
    CHECK(hv_parse_float("nan\n", 0, 0, 1, &f, msg, sizeof msg) == HV_ERR_INVALID_ARG && f == 7);
    CHECK_MSG(!strcmp(msg, "invalid number 'nan?' (expected a number from 0 to 1)"), "%s", msg);
    /* the rows' refusals say the range the same way */
    hv_transcribe_params p = hv_transcribe_default_params();
    CHECK(hv_params_set(&p, "num_beams", "65", msg, sizeof msg) == HV_ERR_INVALID_ARG);
    CHECK_MSG(strstr(msg, "(expected an integer from 1 to ") != NULL, "%s", msg);
}

int main(void) {
    test_numbers();
    test_sizes();
    test_rows();
    test_defaults();
    test_set();
    test_check();
    TEST_END();
}
