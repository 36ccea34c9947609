/* config.json / generation_config.json: a valid pair parses with every
 * field right; each kind of missing or nonsensical value fails with the
 * right status and a message that names the file and the key. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/config.h"
#include "testlib.h"

static const char *CONFIG =
    "{\"model_type\": \"cohere_asr\", \"vocab_size\": 1000,"
    " \"max_audio_clip_s\": 35, \"overlap_chunk_second\": 5,"
    " \"min_energy_window_samples\": 1600, \"sample_rate\": 16000,"
    " \"supported_languages\": [\"en\", \"da\", \"de\"],"
    " \"preprocessor\": {\"sample_rate\": 16000, \"features\": 128,"
    "   \"n_fft\": 512, \"window_size\": 0.025, \"window_stride\": 0.01,"
    "   \"window\": \"hann\", \"normalize\": \"per_feature\", \"log\": true,"
    "   \"pad_to\": 16, \"dither\": 1e-05},"
    " \"encoder\": {\"feat_in\": 128, \"d_model\": 1280,"
    "   \"ff_expansion_factor\": 4, \"n_layers\": 48, \"n_heads\": 8,"
    "   \"conv_kernel_size\": 9, \"subsampling\": \"dw_striding\","
    "   \"subsampling_conv_channels\": 256, \"subsampling_factor\": 8,"
    "   \"self_attention_model\": \"rel_pos\", \"pos_emb_max_len\": 5000},"
    " \"transf_decoder\": {\"config_dict\": {\"hidden_size\": 1024,"
    "   \"inner_size\": 4096, \"num_layers\": 8, \"num_attention_heads\": 8,"
    "   \"max_sequence_length\": 1024, \"hidden_act\": \"relu\"}},"
    " \"head\": {\"hidden_size\": 1024, \"num_classes\": 1000,"
    "   \"log_softmax\": true},"
    " \"unknown_key\": [1, 2, {\"x\": null}]}";

static const char *GEN = "{\"pad_token_id\": 2, \"eos_token_id\": 3, \"bos_token_id\": 4,"
                         " \"decoder_start_token_id\": 13}";

/* JSON text with the value at a dotted path replaced by value (JSON text),
 * or deleted when value is NULL; several "path=value" edits separated by
 * ';' are applied in order. Caller frees. */
static char *edit(const char *json, const char *edits) {
    cJSON *root = cJSON_Parse(json);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", edits);
    for (char *save = NULL, *ed = strtok_r(buf, ";", &save); ed; ed = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(ed, '=');
        if (eq) *eq = '\0';
        cJSON *obj = root;
        char *key = ed, *dot;
        while ((dot = strchr(key, '.')) && cJSON_GetObjectItemCaseSensitive(obj, key) == NULL) {
            *dot = '\0';
            obj = cJSON_GetObjectItemCaseSensitive(obj, key);
            key = dot + 1;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
        if (eq) cJSON_AddItemToObject(obj, key, cJSON_Parse(eq + 1));
    }
    char *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return out;
}

static void check_valid(void) {
    hv_config c;
    hv_error e = {0};
    hv_status st = hv_config_parse(&c, CONFIG, "config.json", GEN, "generation_config.json", &e);
    CHECK_MSG(st == HV_OK, "valid config: %s", e.msg);
    if (st) return;
    CHECK(c.vocab_size == 1000);
    CHECK(c.max_audio_clip_s == 35.0f && c.overlap_chunk_second == 5.0f);
    CHECK(c.min_energy_window_samples == 1600 && c.sample_rate == 16000);
    CHECK(c.n_languages == 3 && !strcmp(c.languages[0], "en") && !strcmp(c.languages[1], "da") &&
          !strcmp(c.languages[2], "de"));
    CHECK(c.n_mels == 128 && c.n_fft == 512 && c.win_length == 400 && c.hop_length == 160 &&
          c.pad_to == 16);
    CHECK(fabsf(c.dither - 1e-5f) < 1e-12f);
    CHECK(c.feat_in == 128 && c.d_model == 1280 && c.ff_expansion == 4 && c.enc_layers == 48 &&
          c.enc_heads == 8 && c.conv_kernel == 9 && c.sub_channels == 256 && c.sub_factor == 8 &&
          c.pos_emb_max_len == 5000);
    CHECK(c.dec_hidden == 1024 && c.dec_inner == 4096 && c.dec_layers == 8 && c.dec_heads == 8 &&
          c.dec_max_seq == 1024);
    CHECK(c.head_hidden == 1024 && c.num_classes == 1000 && c.log_softmax);
    CHECK(c.pad_token_id == 2 && c.eos_token_id == 3 && c.bos_token_id == 4 &&
          c.decoder_start_token_id == 13);
    CHECK(c.max_new_tokens == 256);
    CHECK(hv_config_find_language(&c, "da") == 1);
    CHECK(hv_config_find_language(&c, "fr") == -1);
    CHECK(hv_config_find_language(&c, NULL) == -1);
    /* "da" when listed, wherever it stands; else the first; none: NULL */
    CHECK(!strcmp(hv_config_default_language(&c), "da"));
    char *first = c.languages[0];
    c.languages[0] = c.languages[1];
    c.languages[1] = first;
    CHECK(!strcmp(hv_config_default_language(&c), "da"));
    free(c.languages[0]);
    c.languages[0] = c.languages[2];
    c.n_languages = 2;
    CHECK(!strcmp(hv_config_default_language(&c), "de"));
    CHECK(hv_config_default_language(NULL) == NULL);
    hv_config_free(&c);
    CHECK(hv_config_default_language(&c) == NULL);
    CHECK(c.languages == NULL && c.n_languages == 0);
    hv_config_free(&c); /* twice is harmless */
}

/* Optional keys may be absent; optional values change the result. */
static void check_variants(void) {
    hv_config c;
    hv_error e = {0};
    hv_status st;
    char *cj = edit(CONFIG, "preprocessor.window;preprocessor.normalize;"
                            "preprocessor.log;encoder.subsampling;"
                            "encoder.self_attention_model;"
                            "preprocessor.pad_to=0;head.log_softmax=false;"
                            "preprocessor.window_stride=0.02");
    char *gj = edit(GEN, "max_new_tokens=100");
    char *gnull = edit(GEN, "max_new_tokens=null");
    st = hv_config_parse(&c, CONFIG, "config.json", gnull, "gen.json", &e);
    CHECK_MSG(st == HV_OK && c.max_new_tokens == 256, "null max_new_tokens: %s", e.msg);
    if (!st) hv_config_free(&c);
    free(gnull);
    st = hv_config_parse(&c, cj, "config.json", gj, "gen.json", &e);
    CHECK_MSG(st == HV_OK, "variants: %s", e.msg);
    if (!st) {
        CHECK(c.max_new_tokens == 100);
        CHECK(c.pad_to == 1);
        CHECK(!c.log_softmax);
        CHECK(c.hop_length == 320);
        hv_config_free(&c);
    }
    free(cj);
    free(gj);
    /* the shortest chunk step accepted: 2 x hop_length (320 samples) */
    cj = edit(CONFIG, "max_audio_clip_s=5.02");
    st = hv_config_parse(&c, cj, "config.json", GEN, "gen.json", &e);
    CHECK_MSG(st == HV_OK, "max_audio_clip_s 5.02: %s", e.msg);
    if (!st) hv_config_free(&c);
    free(cj);
}

typedef struct bad_case {
    const char *edits; /* applied to CONFIG, or to GEN when gen is set */
    int gen;
    hv_status status;
    const char *key; /* must appear in the message */
} bad_case;

static const bad_case BAD[] = {
    /* model identity */
    {"model_type=\"whisper\"", 0, HV_ERR_UNSUPPORTED, "model_type"},
    {"model_type=1", 0, HV_ERR_FORMAT, "model_type"},
    {"transf_decoder.config_dict.hidden_act=\"gelu\"", 0, HV_ERR_UNSUPPORTED,
     "transf_decoder.config_dict.hidden_act"},
    {"preprocessor.window=\"hamming\"", 0, HV_ERR_UNSUPPORTED, "preprocessor.window"},
    {"preprocessor.normalize=\"all_features\"", 0, HV_ERR_UNSUPPORTED, "preprocessor.normalize"},
    {"preprocessor.log=false", 0, HV_ERR_UNSUPPORTED, "preprocessor.log"},
    {"preprocessor.log=1", 0, HV_ERR_FORMAT, "preprocessor.log"},
    {"encoder.subsampling=\"striding\"", 0, HV_ERR_UNSUPPORTED, "encoder.subsampling"},
    {"encoder.self_attention_model=\"abs_pos\"", 0, HV_ERR_UNSUPPORTED,
     "encoder.self_attention_model"},
    /* zero, negative, non-integer, huge sizes */
    {"vocab_size=0;head.num_classes=0", 0, HV_ERR_FORMAT, "vocab_size"},
    {"vocab_size=-5", 0, HV_ERR_FORMAT, "vocab_size"},
    {"vocab_size=10.5", 0, HV_ERR_FORMAT, "vocab_size"},
    {"vocab_size=\"1000\"", 0, HV_ERR_FORMAT, "vocab_size"},
    {"vocab_size=1e12", 0, HV_ERR_FORMAT, "vocab_size"},
    {"vocab_size=1e999", 0, HV_ERR_FORMAT, "vocab_size"},
    {"sample_rate=0", 0, HV_ERR_FORMAT, "sample_rate"},
    {"min_energy_window_samples=0", 0, HV_ERR_FORMAT, "min_energy_window_samples"},
    {"preprocessor.features=0", 0, HV_ERR_FORMAT, "preprocessor.features"},
    {"preprocessor.n_fft=-512", 0, HV_ERR_FORMAT, "preprocessor.n_fft"},
    {"preprocessor.pad_to=-1", 0, HV_ERR_FORMAT, "preprocessor.pad_to"},
    {"preprocessor.dither=-1", 0, HV_ERR_FORMAT, "preprocessor.dither"},
    {"encoder.n_heads=0", 0, HV_ERR_FORMAT, "encoder.n_heads"},
    {"encoder.d_model=0", 0, HV_ERR_FORMAT, "encoder.d_model"},
    {"encoder.n_layers=-1", 0, HV_ERR_FORMAT, "encoder.n_layers"},
    {"encoder.ff_expansion_factor=0", 0, HV_ERR_FORMAT, "encoder.ff_expansion_factor"},
    {"encoder.subsampling_conv_channels=0", 0, HV_ERR_FORMAT, "encoder.subsampling_conv_channels"},
    {"encoder.pos_emb_max_len=0", 0, HV_ERR_FORMAT, "encoder.pos_emb_max_len"},
    {"transf_decoder.config_dict.num_attention_heads=0", 0, HV_ERR_FORMAT,
     "transf_decoder.config_dict.num_attention_heads"},
    {"transf_decoder.config_dict.num_layers=0", 0, HV_ERR_FORMAT,
     "transf_decoder.config_dict.num_layers"},
    {"transf_decoder.config_dict.inner_size=0", 0, HV_ERR_FORMAT,
     "transf_decoder.config_dict.inner_size"},
    {"transf_decoder.config_dict.max_sequence_length=0", 0, HV_ERR_FORMAT,
     "transf_decoder.config_dict.max_sequence_length"},
    /* relations */
    {"encoder.d_model=1000;encoder.n_heads=3", 0, HV_ERR_FORMAT, "encoder.d_model"},
    {"transf_decoder.config_dict.hidden_size=1000;head.hidden_size=1000;"
     "transf_decoder.config_dict.num_attention_heads=3",
     0, HV_ERR_FORMAT, "transf_decoder.config_dict.hidden_size"},
    {"encoder.conv_kernel_size=8", 0, HV_ERR_FORMAT, "encoder.conv_kernel_size"},
    {"encoder.conv_kernel_size=0", 0, HV_ERR_FORMAT, "encoder.conv_kernel_size"},
    {"encoder.subsampling_factor=6", 0, HV_ERR_FORMAT, "encoder.subsampling_factor"},
    {"encoder.subsampling_factor=1", 0, HV_ERR_FORMAT, "encoder.subsampling_factor"},
    {"preprocessor.window_size=0.05", 0, HV_ERR_FORMAT, "preprocessor.window_size"},
    {"preprocessor.window_size=0", 0, HV_ERR_FORMAT, "preprocessor.window_size"},
    {"preprocessor.window_stride=0", 0, HV_ERR_FORMAT, "preprocessor.window_stride"},
    {"encoder.feat_in=80", 0, HV_ERR_FORMAT, "encoder.feat_in"},
    {"head.num_classes=999", 0, HV_ERR_FORMAT, "head.num_classes"},
    {"head.hidden_size=512", 0, HV_ERR_FORMAT, "head.hidden_size"},
    {"head.log_softmax=1", 0, HV_ERR_FORMAT, "head.log_softmax"},
    {"preprocessor.sample_rate=8000", 0, HV_ERR_FORMAT, "preprocessor.sample_rate"},
    {"max_audio_clip_s=5", 0, HV_ERR_FORMAT, "max_audio_clip_s"},
    {"max_audio_clip_s=-35", 0, HV_ERR_FORMAT, "max_audio_clip_s"},
    /* chunks so short (under 2 x hop_length = 320 samples) that every one
     * would be dropped */
    {"max_audio_clip_s=5.01", 0, HV_ERR_FORMAT, "max_audio_clip_s"},
    {"overlap_chunk_second=34.99", 0, HV_ERR_FORMAT, "max_audio_clip_s"},
    {"max_audio_clip_s=0.015;overlap_chunk_second=0", 0, HV_ERR_FORMAT, "max_audio_clip_s"},
    {"overlap_chunk_second=-1", 0, HV_ERR_FORMAT, "overlap_chunk_second"},
    /* languages */
    {"supported_languages=[]", 0, HV_ERR_FORMAT, "supported_languages"},
    {"supported_languages=[\"en\", 1]", 0, HV_ERR_FORMAT, "supported_languages"},
    {"supported_languages=[\"\"]", 0, HV_ERR_FORMAT, "supported_languages"},
    {"supported_languages=\"en\"", 0, HV_ERR_FORMAT, "supported_languages"},
    /* sections of the wrong type */
    {"preprocessor=5", 0, HV_ERR_FORMAT, "preprocessor"},
    {"transf_decoder.config_dict=[]", 0, HV_ERR_FORMAT, "transf_decoder.config_dict"},
    /* generation_config.json */
    {"eos_token_id", 1, HV_ERR_FORMAT, "eos_token_id"},
    {"pad_token_id", 1, HV_ERR_FORMAT, "pad_token_id"},
    {"bos_token_id", 1, HV_ERR_FORMAT, "bos_token_id"},
    {"decoder_start_token_id", 1, HV_ERR_FORMAT, "decoder_start_token_id"},
    {"eos_token_id=1000", 1, HV_ERR_FORMAT, "eos_token_id"},
    {"eos_token_id=-1", 1, HV_ERR_FORMAT, "eos_token_id"},
    {"decoder_start_token_id=5000", 1, HV_ERR_FORMAT, "decoder_start_token_id"},
    {"bos_token_id=3.5", 1, HV_ERR_FORMAT, "bos_token_id"},
    {"max_new_tokens=0", 1, HV_ERR_FORMAT, "max_new_tokens"},
    {"max_new_tokens=\"256\"", 1, HV_ERR_FORMAT, "max_new_tokens"},
    {"max_new_tokens=1e9", 1, HV_ERR_FORMAT, "max_new_tokens"},
};

/* Every key the engine reads must be present. */
static const char *REQUIRED[] = {
    "model_type",
    "vocab_size",
    "max_audio_clip_s",
    "overlap_chunk_second",
    "min_energy_window_samples",
    "sample_rate",
    "supported_languages",
    "preprocessor",
    "preprocessor.sample_rate",
    "preprocessor.features",
    "preprocessor.n_fft",
    "preprocessor.window_size",
    "preprocessor.window_stride",
    "preprocessor.pad_to",
    "preprocessor.dither",
    "encoder",
    "encoder.feat_in",
    "encoder.d_model",
    "encoder.ff_expansion_factor",
    "encoder.n_layers",
    "encoder.n_heads",
    "encoder.conv_kernel_size",
    "encoder.subsampling_conv_channels",
    "encoder.subsampling_factor",
    "encoder.pos_emb_max_len",
    "transf_decoder",
    "transf_decoder.config_dict",
    "transf_decoder.config_dict.hidden_size",
    "transf_decoder.config_dict.inner_size",
    "transf_decoder.config_dict.num_layers",
    "transf_decoder.config_dict.num_attention_heads",
    "transf_decoder.config_dict.max_sequence_length",
    "transf_decoder.config_dict.hidden_act",
    "head",
    "head.hidden_size",
    "head.num_classes",
    "head.log_softmax",
};

static void expect_fail(const char *cj, const char *gj, hv_status want, const char *file,
                        const char *key, const char *what) {
    hv_config c;
    hv_error e = {0};
    memset(&c, 0x55, sizeof c);
    hv_status st = hv_config_parse(&c, cj, "config.json", gj, "generation_config.json", &e);
    CHECK_MSG(st == want, "%s: status %d, want %d (%s)", what, st, want, e.msg);
    CHECK_MSG(strstr(e.msg, file) == e.msg, "%s: message must start with %s: %s", what, file,
              e.msg);
    CHECK_MSG(!key || strstr(e.msg, key), "%s: message lacks %s: %s", what, key, e.msg);
    CHECK_MSG(c.languages == NULL && c.n_languages == 0, "%s: config not left empty", what);
}

static void check_bad(void) {
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        const bad_case *b = &BAD[i];
        char *j = edit(b->gen ? GEN : CONFIG, b->edits);
        expect_fail(b->gen ? CONFIG : j, b->gen ? j : GEN, b->status,
                    b->gen ? "generation_config.json" : "config.json", b->key, b->edits);
        free(j);
    }
    for (size_t i = 0; i < sizeof REQUIRED / sizeof *REQUIRED; i++) {
        char *j = edit(CONFIG, REQUIRED[i]);
        char what[128];
        snprintf(what, sizeof what, "missing %s", REQUIRED[i]);
        expect_fail(j, GEN, HV_ERR_FORMAT, "config.json", REQUIRED[i], what);
        free(j);
    }
    /* not JSON, not an object, trailing garbage, missing text */
    expect_fail("{\"vocab_size\": ", GEN, HV_ERR_FORMAT, "config.json", "invalid JSON",
                "truncated JSON");
    expect_fail("{\n\"a\": 1,\n  x}", GEN, HV_ERR_FORMAT, "config.json", "line 3", "bad JSON line");
    expect_fail("[1, 2]", GEN, HV_ERR_FORMAT, "config.json", "object", "array root");
    expect_fail("{} {}", GEN, HV_ERR_FORMAT, "config.json", "invalid JSON", "trailing garbage");
    expect_fail("", GEN, HV_ERR_FORMAT, "config.json", "invalid JSON", "empty text");
    expect_fail(CONFIG, "\"x\"", HV_ERR_FORMAT, "generation_config.json", "object", "string root");
    expect_fail(CONFIG, NULL, HV_ERR_IO, "generation_config.json", "missing",
                "no generation config");
    expect_fail(NULL, GEN, HV_ERR_IO, "config.json", "missing", "no config");
}

/* hv_config_load: files on disk, errors name the path. */
static void check_load(void) {
    const char *dir = hv_test_tmpdir();
    const char *cpath = hv_test_path(dir, "config.json");
    const char *gpath = hv_test_path(dir, "generation_config.json");
    hv_config c;
    hv_error e = {0};

    CHECK(hv_test_write_file(cpath, CONFIG, strlen(CONFIG)) == 0);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_IO);
    CHECK_MSG(strstr(e.msg, gpath) != NULL, "names the file: %s", e.msg);

    CHECK(hv_test_write_file(gpath, GEN, strlen(GEN)) == 0);
    hv_status st = hv_config_load(&c, dir, &e);
    CHECK_MSG(st == HV_OK, "load: %s", e.msg);
    if (!st) {
        CHECK(c.vocab_size == 1000 && c.decoder_start_token_id == 13);
        hv_config_free(&c);
    }

    /* errors name the path they came from */
    char *bad = edit(CONFIG, "encoder.n_heads=0");
    CHECK(hv_test_write_file(cpath, bad, strlen(bad)) == 0);
    free(bad);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, cpath) && strstr(e.msg, "encoder.n_heads: must be positive"), "%s",
              e.msg);

    /* an embedded NUL byte */
    CHECK(hv_test_write_file(cpath, "{}\0{}", 5) == 0);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_FORMAT);
    CHECK_MSG(strstr(e.msg, cpath) && strstr(e.msg, "NUL"), "%s", e.msg);

    /* far too large: rejected before reading (sparse file) */
    CHECK(truncate(cpath, 17 << 20) == 0);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_LIMIT);
    CHECK_MSG(strstr(e.msg, cpath) != NULL, "%s", e.msg);

    /* config.json a directory, then absent; a missing model dir */
    unlink(cpath);
    CHECK(mkdir(cpath, 0700) == 0);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_IO);
    CHECK_MSG(strstr(e.msg, cpath) != NULL, "%s", e.msg);
    rmdir(cpath);
    CHECK(hv_config_load(&c, dir, &e) == HV_ERR_IO);
    CHECK_MSG(strstr(e.msg, cpath) != NULL, "%s", e.msg);
    CHECK(hv_config_load(&c, "/nonexistent/model", &e) == HV_ERR_IO);
}

/* Every fixture checkpoint's config loads. */
static void check_fixtures(void) {
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    if (!fx) return;
    char models[4096];
    snprintf(models, sizeof models, "%s/models", fx);
    DIR *d = opendir(models);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        const char *dir = hv_test_path(models, de->d_name);
        if (access(hv_test_path(dir, "config.json"), R_OK) != 0) continue;
        hv_config c;
        hv_error e = {0};
        hv_status st = hv_config_load(&c, dir, &e);
        CHECK_MSG(st == HV_OK, "fixture %s: %s", de->d_name, e.msg);
        if (!st) {
            CHECK(c.n_languages > 0 && c.num_classes == c.vocab_size);
            hv_config_free(&c);
        }
    }
    closedir(d);
}

int main(void) {
    check_valid();
    check_variants();
    check_bad();
    check_load();
    check_fixtures();
    TEST_END();
}
