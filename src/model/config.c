/* config.json + generation_config.json: read with cJSON, check every value.
 *
 * The files are treated as hostile: every key the engine needs must be
 * present with a sane value, and every size is bounded so that products
 * computed elsewhere (d_model * 4, chunk = max_audio_clip_s * sample_rate,
 * ...) cannot overflow an int. Messages read "file: section.key: problem". */
#include "model/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/json_file.h"

#define MAX_JSON_BYTES (16u << 20) /* no real config comes near this */

/* The file being checked, for messages. */
typedef struct jfile {
    const char *name;
    hv_error *e;
} jfile;

/* Fails with "name: sec.key: <message>" (sec may be ""). */
static hv_status bad(const jfile *f, hv_status st, const char *sec, const char *key,
                     const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static hv_status bad(const jfile *f, hv_status st, const char *sec, const char *key,
                     const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return hv_err(f->e, st, "%s: %s%s%s: %s", f->name, sec, *sec ? "." : "", key, what);
}

/* ------------------------------------------------------------ reading */

/* ----------------------------------------------------------- getters */

/* The object at a dotted path below root ("transf_decoder.config_dict"). */
static hv_status get_section(const jfile *f, const cJSON *root, const char *path,
                             const cJSON **out) {
    char part[64];
    const cJSON *obj = root;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ".");
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        obj = cJSON_GetObjectItemCaseSensitive(obj, part);
        if (!obj) return bad(f, HV_ERR_FORMAT, "", path, "missing");
        if (!cJSON_IsObject(obj)) return bad(f, HV_ERR_FORMAT, "", path, "must be an object");
        p += n + (p[n] == '.');
    }
    *out = obj;
    return HV_OK;
}

/* A required finite number in [min, max]. */
static hv_status get_real(const jfile *f, const cJSON *obj, const char *sec, const char *key,
                          double min, double max, double *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) return bad(f, HV_ERR_FORMAT, sec, key, "missing");
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return bad(f, HV_ERR_FORMAT, sec, key, "must be a number");
    double v = it->valuedouble;
    if (v < min || v > max)
        return bad(f, HV_ERR_FORMAT, sec, key, "must be in [%g, %g], got %g", min, max, v);
    *out = v;
    return HV_OK;
}

/* An integer in [min, max]; absent is an error unless present is
 * non-NULL, where it reports presence instead. */
static hv_status get_int(const jfile *f, const cJSON *obj, const char *sec, const char *key,
                         int min, int max, int *out, bool *present) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (present) *present = it != NULL;
    if (!it) return present ? HV_OK : bad(f, HV_ERR_FORMAT, sec, key, "missing");
    double v = it->valuedouble;
    if (!cJSON_IsNumber(it) || !isfinite(v) || v != floor(v))
        return bad(f, HV_ERR_FORMAT, sec, key, "must be an integer");
    if (v < min) {
        if (min == 1) return bad(f, HV_ERR_FORMAT, sec, key, "must be positive, got %g", v);
        return bad(f, HV_ERR_FORMAT, sec, key, "must be at least %d, got %g", min, v);
    }
    if (v > max) return bad(f, HV_ERR_FORMAT, sec, key, "must be at most %d, got %g", max, v);
    *out = (int)v;
    return HV_OK;
}

/* A string key that must equal want; when optional, absence is fine. */
static hv_status check_string(const jfile *f, const cJSON *obj, const char *sec, const char *key,
                              const char *want, bool optional) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) return optional ? HV_OK : bad(f, HV_ERR_FORMAT, sec, key, "missing");
    if (!cJSON_IsString(it)) return bad(f, HV_ERR_FORMAT, sec, key, "must be a string");
    if (strcmp(it->valuestring, want) != 0)
        return bad(f, HV_ERR_UNSUPPORTED, sec, key, "\"%.100s\" is not supported (only \"%s\")",
                   it->valuestring, want);
    return HV_OK;
}

/* ------------------------------------------------------- integer keys */

typedef struct int_key {
    const char *sec, *key;
    size_t off; /* offsetof(hv_config, field) */
    int min, max;
} int_key;

#define F(field) offsetof(hv_config, field)
#define BIG      (1 << 20)

/* Upper bounds are far above any real model and low enough that the
 * engine's size arithmetic stays within int. */
static const int_key CONFIG_INTS[] = {
    {"", "vocab_size", F(vocab_size), 1, 1 << 24},
    {"", "min_energy_window_samples", F(min_energy_window_samples), 1, BIG},
    {"", "sample_rate", F(sample_rate), 1, 384000},
    {"preprocessor", "features", F(n_mels), 1, 4096},
    {"preprocessor", "n_fft", F(n_fft), 1, 1 << 16},
    {"preprocessor", "pad_to", F(pad_to), 0, 1 << 16},
    {"encoder", "feat_in", F(feat_in), 1, 4096},
    {"encoder", "d_model", F(d_model), 1, 1 << 16},
    {"encoder", "ff_expansion_factor", F(ff_expansion), 1, 64},
    {"encoder", "n_layers", F(enc_layers), 1, 1024},
    {"encoder", "n_heads", F(enc_heads), 1, 1024},
    {"encoder", "conv_kernel_size", F(conv_kernel), 1, 1023},
    {"encoder", "subsampling_conv_channels", F(sub_channels), 1, 1 << 16},
    {"encoder", "subsampling_factor", F(sub_factor), 2, 1024},
    {"encoder", "pos_emb_max_len", F(pos_emb_max_len), 1, BIG},
    {"transf_decoder.config_dict", "hidden_size", F(dec_hidden), 1, 1 << 16},
    {"transf_decoder.config_dict", "inner_size", F(dec_inner), 1, 1 << 18},
    {"transf_decoder.config_dict", "num_layers", F(dec_layers), 1, 1024},
    {"transf_decoder.config_dict", "num_attention_heads", F(dec_heads), 1, 1024},
    {"transf_decoder.config_dict", "max_sequence_length", F(dec_max_seq), 1, BIG},
    {"head", "hidden_size", F(head_hidden), 1, 1 << 16},
    {"head", "num_classes", F(num_classes), 1, 1 << 24},
};

/* Token ids are checked against vocab_size afterwards. */
static const int_key GEN_INTS[] = {
    {"", "pad_token_id", F(pad_token_id), 0, 1 << 24},
    {"", "eos_token_id", F(eos_token_id), 0, 1 << 24},
    {"", "bos_token_id", F(bos_token_id), 0, 1 << 24},
    {"", "decoder_start_token_id", F(decoder_start_token_id), 0, 1 << 24},
};

static hv_status read_ints(const jfile *f, const cJSON *root, const int_key *keys, size_t n,
                           hv_config *c) {
    for (size_t i = 0; i < n; i++) {
        const cJSON *obj = root;
        hv_status st;
        if (*keys[i].sec && (st = get_section(f, root, keys[i].sec, &obj))) return st;
        int *dst = (int *)((char *)c + keys[i].off);
        st = get_int(f, obj, keys[i].sec, keys[i].key, keys[i].min, keys[i].max, dst, NULL);
        if (st) return st;
    }
    return HV_OK;
}

/* ----------------------------------------------------------- sections */

static hv_status read_languages(const jfile *f, const cJSON *root, hv_config *c) {
    const char *key = "supported_languages";
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!arr) return bad(f, HV_ERR_FORMAT, "", key, "missing");
    if (!cJSON_IsArray(arr)) return bad(f, HV_ERR_FORMAT, "", key, "must be a list of strings");
    int n = cJSON_GetArraySize(arr);
    if (n <= 0) return bad(f, HV_ERR_FORMAT, "", key, "must not be empty");
    c->languages = calloc((size_t)n, sizeof *c->languages);
    if (!c->languages) return hv_err(f->e, HV_ERR_NOMEM, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return bad(f, HV_ERR_FORMAT, "", key, "entry %d must be a non-empty string",
                       c->n_languages);
        if (strlen(it->valuestring) > 32)
            return bad(f, HV_ERR_FORMAT, "", key, "entry %d is too long", c->n_languages);
        if (!(c->languages[c->n_languages] = strdup(it->valuestring)))
            return hv_err(f->e, HV_ERR_NOMEM, "out of memory");
        c->n_languages++;
    }
    return HV_OK;
}

/* round(seconds * sample_rate) as an int in [1, max]. */
static hv_status get_samples(const jfile *f, const cJSON *pre, const char *key, int sample_rate,
                             int max, int *out) {
    double s = 0;
    hv_status st = get_real(f, pre, "preprocessor", key, 0, 10, &s);
    if (st) return st;
    double n = round(s * sample_rate);
    if (n < 1 || n > max)
        return bad(f, HV_ERR_FORMAT, "preprocessor", key, "%g s is %g samples, must be in [1, %d]",
                   s, n, max);
    *out = (int)n;
    return HV_OK;
}

static hv_status read_preprocessor(const jfile *f, const cJSON *root, hv_config *c) {
    const char *sec = "preprocessor";
    const cJSON *pre;
    hv_status st;
    int rate;
    double v = 0;
    if ((st = get_section(f, root, sec, &pre))) return st;
    if ((st = get_int(f, pre, sec, "sample_rate", 1, 384000, &rate, NULL))) return st;
    if (rate != c->sample_rate)
        return bad(f, HV_ERR_FORMAT, sec, "sample_rate",
                   "%d differs from the top-level sample_rate %d", rate, c->sample_rate);
    if ((st = get_samples(f, pre, "window_size", rate, c->n_fft, &c->win_length))) return st;
    if ((st = get_samples(f, pre, "window_stride", rate, BIG, &c->hop_length))) return st;
    if ((st = get_real(f, pre, sec, "dither", 0, 1, &v))) return st;
    c->dither = (float)v;
    /* NeMo's pad_to 0 means "no padding", the same as a multiple of 1. */
    if (c->pad_to == 0) c->pad_to = 1;
    if ((st = check_string(f, pre, sec, "window", "hann", true))) return st;
    if ((st = check_string(f, pre, sec, "normalize", "per_feature", true))) return st;
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(pre, "log");
    if (log && !cJSON_IsBool(log))
        return bad(f, HV_ERR_FORMAT, sec, "log", "must be true or false");
    if (log && !cJSON_IsTrue(log)) return bad(f, HV_ERR_UNSUPPORTED, sec, "log", "must be true");
    return HV_OK;
}

/* Relations between the integer keys read by read_ints. */
static hv_status check_sizes(const jfile *f, hv_config *c) {
    const char *dec = "transf_decoder.config_dict";
    if (c->feat_in != c->n_mels)
        return bad(f, HV_ERR_FORMAT, "encoder", "feat_in",
                   "%d differs from preprocessor.features %d", c->feat_in, c->n_mels);
    if (c->d_model % c->enc_heads)
        return bad(f, HV_ERR_FORMAT, "encoder", "d_model",
                   "%d is not divisible by encoder.n_heads %d", c->d_model, c->enc_heads);
    if (c->conv_kernel % 2 == 0)
        return bad(f, HV_ERR_FORMAT, "encoder", "conv_kernel_size", "must be odd, got %d",
                   c->conv_kernel);
    if (c->sub_factor & (c->sub_factor - 1))
        return bad(f, HV_ERR_FORMAT, "encoder", "subsampling_factor",
                   "must be a power of 2, got %d", c->sub_factor);
    if (c->dec_hidden % c->dec_heads)
        return bad(f, HV_ERR_FORMAT, dec, "hidden_size",
                   "%d is not divisible by %s.num_attention_heads %d", c->dec_hidden, dec,
                   c->dec_heads);
    if (c->head_hidden != c->dec_hidden)
        return bad(f, HV_ERR_FORMAT, "head", "hidden_size", "%d differs from %s.hidden_size %d",
                   c->head_hidden, dec, c->dec_hidden);
    if (c->num_classes != c->vocab_size)
        return bad(f, HV_ERR_FORMAT, "head", "num_classes", "%d differs from vocab_size %d",
                   c->num_classes, c->vocab_size);
    return HV_OK;
}

static hv_status read_config(const jfile *f, const cJSON *root, hv_config *c) {
    hv_status st;
    const cJSON *obj;
    double v = 0;
    if ((st = check_string(f, root, "", "model_type", "cohere_asr", false))) return st;
    if ((st = read_ints(f, root, CONFIG_INTS, sizeof CONFIG_INTS / sizeof *CONFIG_INTS, c)))
        return st;
    if ((st = check_sizes(f, c))) return st;
    if ((st = get_real(f, root, "", "max_audio_clip_s", 0, 3600, &v))) return st;
    c->max_audio_clip_s = (float)v;
    if ((st = get_real(f, root, "", "overlap_chunk_second", 0, 3600, &v))) return st;
    c->overlap_chunk_second = (float)v;
    if (!(c->max_audio_clip_s > c->overlap_chunk_second))
        return bad(f, HV_ERR_FORMAT, "", "max_audio_clip_s",
                   "%g must exceed overlap_chunk_second %g", c->max_audio_clip_s,
                   c->overlap_chunk_second);
    if ((st = read_languages(f, root, c))) return st;
    if ((st = read_preprocessor(f, root, c))) return st;
    /* Every chunk but the last advances by at least max_audio_clip_s -
     * overlap_chunk_second; a chunk shorter than 2 * hop_length samples is
     * skipped as silence (transcribe.c), so below that every chunk of long
     * audio would be dropped and the transcript come out empty. */
    double step = llround(((double)c->max_audio_clip_s - c->overlap_chunk_second) * c->sample_rate);
    if (step < 2.0 * c->hop_length)
        return bad(f, HV_ERR_FORMAT, "", "max_audio_clip_s",
                   "%g minus overlap_chunk_second %g is %.0f samples at %d Hz, fewer than the %d "
                   "(2 x the window stride) the shortest chunk needs: every chunk would be "
                   "dropped",
                   c->max_audio_clip_s, c->overlap_chunk_second, step, c->sample_rate,
                   2 * c->hop_length);

    if ((st = get_section(f, root, "encoder", &obj))) return st;
    if ((st = check_string(f, obj, "encoder", "subsampling", "dw_striding", true)) ||
        (st = check_string(f, obj, "encoder", "self_attention_model", "rel_pos", true)))
        return st;
    if ((st = get_section(f, root, "transf_decoder.config_dict", &obj))) return st;
    if ((st = check_string(f, obj, "transf_decoder.config_dict", "hidden_act", "relu", false)))
        return st;
    if ((st = get_section(f, root, "head", &obj))) return st;
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(obj, "log_softmax");
    if (!ls) return bad(f, HV_ERR_FORMAT, "head", "log_softmax", "missing");
    if (!cJSON_IsBool(ls))
        return bad(f, HV_ERR_FORMAT, "head", "log_softmax", "must be true or false");
    c->log_softmax = cJSON_IsTrue(ls);
    return HV_OK;
}

static hv_status read_generation(const jfile *f, const cJSON *root, hv_config *c) {
    hv_status st = read_ints(f, root, GEN_INTS, sizeof GEN_INTS / sizeof *GEN_INTS, c);
    if (st) return st;
    for (size_t i = 0; i < sizeof GEN_INTS / sizeof *GEN_INTS; i++) {
        int id = *(int *)((char *)c + GEN_INTS[i].off);
        if (id >= c->vocab_size)
            return bad(f, HV_ERR_FORMAT, "", GEN_INTS[i].key,
                       "%d is outside the vocabulary [0, %d)", id, c->vocab_size);
    }
    /* absent or null (as Python writes "not set"): the default */
    bool present;
    c->max_new_tokens = 256;
    if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "max_new_tokens"))) return HV_OK;
    return get_int(f, root, "", "max_new_tokens", 1, BIG, &c->max_new_tokens, &present);
}

/* ------------------------------------------------------------- public */

hv_status hv_config_parse(hv_config *c, const char *config_json, const char *config_name,
                          const char *gen_json, const char *gen_name, hv_error *e) {
    hv_config tmp;
    memset(&tmp, 0, sizeof tmp);
    memset(c, 0, sizeof *c);
    jfile fc = {config_name ? config_name : "config.json", e};
    jfile fg = {gen_name ? gen_name : "generation_config.json", e};
    cJSON *root = NULL;
    hv_status st = hv_json_parse_object(fc.name, config_json, &root, fc.e);
    if (!st) st = read_config(&fc, root, &tmp);
    cJSON_Delete(root);
    root = NULL;
    if (!st) st = hv_json_parse_object(fg.name, gen_json, &root, fg.e);
    if (!st) st = read_generation(&fg, root, &tmp);
    cJSON_Delete(root);
    if (st) {
        hv_config_free(&tmp);
        return st;
    }
    *c = tmp;
    return HV_OK;
}

hv_status hv_config_load(hv_config *c, const char *model_dir, hv_error *e) {
    char cpath[4096], gpath[4096];
    char *ctext = NULL, *gtext = NULL;
    memset(c, 0, sizeof *c);
    if ((size_t)snprintf(cpath, sizeof cpath, "%s/config.json", model_dir) >= sizeof cpath ||
        (size_t)snprintf(gpath, sizeof gpath, "%s/generation_config.json", model_dir) >=
            sizeof gpath)
        return hv_err(e, HV_ERR_INVALID_ARG, "%s: path too long", model_dir);
    hv_status st = hv_read_text_file(cpath, MAX_JSON_BYTES, &ctext, e);
    if (!st) st = hv_read_text_file(gpath, MAX_JSON_BYTES, &gtext, e);
    if (!st) st = hv_config_parse(c, ctext, cpath, gtext, gpath, e);
    free(ctext);
    free(gtext);
    return st;
}

void hv_config_free(hv_config *c) {
    if (!c) return;
    for (int i = 0; i < c->n_languages; i++) free(c->languages[i]);
    free(c->languages);
    memset(c, 0, sizeof *c);
}

int hv_config_find_language(const hv_config *c, const char *lang) {
    if (!c || !lang) return -1;
    for (int i = 0; i < c->n_languages; i++)
        if (strcmp(c->languages[i], lang) == 0) return i;
    return -1;
}

const char *hv_config_default_language(const hv_config *c) {
    if (!c || c->n_languages == 0) return NULL;
    return hv_config_find_language(c, "da") >= 0 ? "da" : c->languages[0];
}

int hv_sub_stages(const hv_config *c) {
    int stages = 0;
    for (int s = c->sub_factor; s > 1; s >>= 1) stages++;
    return stages;
}

int hv_sub_conv_len(int n) {
    enum { KERNEL = 3, STRIDE = 2, PAD = 1 };
    /* C division truncates toward zero, so n = 0 would give 1 */
    return n <= 0 ? 0 : (n + 2 * PAD - KERNEL) / STRIDE + 1;
}

int hv_subsampled_len(const hv_config *c, int n) {
    for (int s = hv_sub_stages(c); s > 0; s--) n = hv_sub_conv_len(n);
    return n;
}
