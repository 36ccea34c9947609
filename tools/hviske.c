/*
 * hviske: the command-line program.
 *
 *     hviske -m MODEL_DIR [options] FILE...
 *
 * Loads the model once, makes one context, then reads and transcribes each
 * file in order: one line on stdout per file that succeeds (the transcript,
 * or a JSON object with --json), one "hviske: FILE: message" line on stderr
 * per file that fails. Exit status: 0 all files done, 1 a file or the model
 * failed, 2 the command line is wrong.
 *
 * Built on the public API (hviske.h) only.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"

enum { EXIT_USAGE = 2 };

typedef struct options {
    const char *model_dir;
    const char *language;  /* NULL: the library's default */
    int punctuation;       /* 1 unless --no-punctuation */
    int n_threads;         /* 0: all cores */
    int max_tokens;        /* 0: the model's default */
    float dither;          /* < 0: the model's config value */
    int num_beams;         /* 1: greedy or sampling */
    float length_penalty;  /* beam search */
    int do_sample;
    float temperature;     /* sampling */
    int top_k;
    float top_p;
    uint64_t seed;
    int json;
    char **files;          /* argv tail */
    int n_files;
} options;

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: hviske -m MODEL_DIR [options] FILE...\n"
        "Transcribes audio files (WAV, FLAC, OGG/Opus, MP3, ...) to text:\n"
        "one line per file on stdout, in order (line breaks inside a\n"
        "transcript become spaces); errors go to stderr.\n"
        "\n"
        "  -m, --model DIR        checkpoint directory (config.json,\n"
        "                         tokenizer.model, model.safetensors, ...)\n"
        "  -l, --language LANG    language code (default: da if the model\n"
        "                         supports it, else its first language)\n"
        "      --no-punctuation   ask for text without punctuation\n"
        "  -t, --threads N        worker threads, 1..256 (default: all cores)\n"
        "      --max-tokens N     stop after N generated tokens (N >= 1)\n"
        "      --dither X         dither amount, X >= 0 (default: the\n"
        "                         model's; 0 turns it off)\n"
        "      --json             one JSON object per file: file, text,\n"
        "                         tokens, token_logprobs, score, timings\n"
        "\n"
        "Decoding (default: greedy):\n"
        "      --beams N          beam search with N beams, N >= 1 (1: greedy)\n"
        "      --length-penalty X beam search compares hypotheses by\n"
        "                         score / length^X; X > 0 (default 1)\n"
        "      --sample           sample each token instead (one beam only)\n"
        "      --temperature T    sampling temperature, T > 0 (default 1)\n"
        "      --top-k K          sample from the K most likely tokens;\n"
        "                         K >= 0, 0 = all (default)\n"
        "      --top-p P          sample from the smallest most-likely set\n"
        "                         reaching probability P, 0 < P <= 1 (default 1)\n"
        "      --seed S           sampling seed, 0..2^64-1 (default 0); the\n"
        "                         same seed and input give the same output\n"
        "  -h, --help             show this help and exit\n"
        "      --version          show the version and exit\n"
        "\n"
        "Exit status: 0 success, 1 a file or the model failed, 2 bad usage.\n");
}

/* Prints "hviske: <message>" and the usage hint; returns EXIT_USAGE. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("hviske: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'hviske --help' for more information.\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* Whole-string integer in [lo, hi]; 0 on success. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Whole-string finite float >= 0; 0 on success. */
static int parse_nonneg_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) ||
        v < 0.0f)
        return -1;
    *out = v;
    return 0;
}

/* Whole-string finite float > 0 and <= hi; 0 on success. */
static int parse_pos_float(const char *s, float hi, float *out)
{
    float v;
    if (parse_nonneg_float(s, &v) || !(v > 0.0f) || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Whole-string unsigned decimal 0..UINT64_MAX (no sign, no spaces); 0 on
 * success. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9') /* strtoull would accept " 1", "+1", "-1" */
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v > UINT64_MAX)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Fills o from argv. Returns -1 to go on, otherwise the exit status
 * (0 after --help or --version). */
static int parse_options(int argc, char **argv, options *o)
{
    enum { OPT_NO_PUNCT = 256, OPT_MAX_TOKENS, OPT_DITHER, OPT_JSON,
           OPT_VERSION, OPT_BEAMS, OPT_LENGTH_PENALTY, OPT_SAMPLE,
           OPT_TEMPERATURE, OPT_TOP_K, OPT_TOP_P, OPT_SEED };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, 'm'},
        {"language", required_argument, NULL, 'l'},
        {"threads", required_argument, NULL, 't'},
        {"no-punctuation", no_argument, NULL, OPT_NO_PUNCT},
        {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
        {"dither", required_argument, NULL, OPT_DITHER},
        {"json", no_argument, NULL, OPT_JSON},
        {"beams", required_argument, NULL, OPT_BEAMS},
        {"length-penalty", required_argument, NULL, OPT_LENGTH_PENALTY},
        {"sample", no_argument, NULL, OPT_SAMPLE},
        {"temperature", required_argument, NULL, OPT_TEMPERATURE},
        {"top-k", required_argument, NULL, OPT_TOP_K},
        {"top-p", required_argument, NULL, OPT_TOP_P},
        {"seed", required_argument, NULL, OPT_SEED},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    hv_transcribe_params defaults = hv_transcribe_default_params();
    *o = (options){.punctuation = 1, .dither = -1.0f,
                   .num_beams = defaults.num_beams,
                   .length_penalty = defaults.length_penalty,
                   .temperature = defaults.temperature,
                   .top_k = defaults.top_k, .top_p = defaults.top_p,
                   .seed = defaults.seed};
    /* options that only matter in one decoding mode, for the warnings */
    const char *lp_opt = NULL, *sampling_opt = NULL;

    opterr = 0; /* our own messages */
    int c;
    while ((c = getopt_long(argc, argv, ":m:l:t:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_dir = optarg; break;
        case 'l': o->language = optarg; break;
        case 't':
            if (parse_int(optarg, 1, 256, &o->n_threads))
                return usage_error("invalid thread count '%s' (expected an "
                                   "integer 1..256)", optarg);
            break;
        case OPT_NO_PUNCT: o->punctuation = 0; break;
        case OPT_MAX_TOKENS:
            if (parse_int(optarg, 1, INT_MAX, &o->max_tokens))
                return usage_error("invalid --max-tokens '%s' (expected an "
                                   "integer >= 1)", optarg);
            break;
        case OPT_DITHER:
            if (parse_nonneg_float(optarg, &o->dither))
                return usage_error("invalid --dither '%s' (expected a finite "
                                   "number >= 0)", optarg);
            break;
        case OPT_JSON: o->json = 1; break;
        case OPT_BEAMS:
            if (parse_int(optarg, 1, INT_MAX, &o->num_beams))
                return usage_error("invalid --beams '%s' (expected an "
                                   "integer >= 1)", optarg);
            break;
        case OPT_LENGTH_PENALTY:
            if (parse_pos_float(optarg, INFINITY, &o->length_penalty))
                return usage_error("invalid --length-penalty '%s' (expected "
                                   "a finite number > 0)", optarg);
            lp_opt = "--length-penalty";
            break;
        case OPT_SAMPLE: o->do_sample = 1; break;
        case OPT_TEMPERATURE:
            if (parse_pos_float(optarg, INFINITY, &o->temperature))
                return usage_error("invalid --temperature '%s' (expected a "
                                   "finite number > 0)", optarg);
            sampling_opt = "--temperature";
            break;
        case OPT_TOP_K:
            if (parse_int(optarg, 0, INT_MAX, &o->top_k))
                return usage_error("invalid --top-k '%s' (expected an "
                                   "integer >= 0)", optarg);
            sampling_opt = "--top-k";
            break;
        case OPT_TOP_P:
            if (parse_pos_float(optarg, 1.0f, &o->top_p))
                return usage_error("invalid --top-p '%s' (expected a number "
                                   "> 0 and <= 1)", optarg);
            sampling_opt = "--top-p";
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &o->seed))
                return usage_error("invalid --seed '%s' (expected an integer "
                                   "0..18446744073709551615)", optarg);
            sampling_opt = "--seed";
            break;
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf("hviske %s\n", HV_VERSION); return 0;
        case ':':
            return usage_error("option '%s' needs an argument",
                               argv[optind - 1]);
        default: /* '?': optopt is the short option, 0 for a long one */
            if (optopt > 0 && optopt < 256)
                return usage_error("unknown option '-%c'", optopt);
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (o->do_sample && o->num_beams > 1)
        return usage_error("--sample and --beams %d cannot be combined "
                           "(sampling uses one beam)", o->num_beams);
    if (!o->model_dir)
        return usage_error("no model given (use -m MODEL_DIR)");
    if (optind >= argc)
        return usage_error("no input files");
    o->files = argv + optind;
    o->n_files = argc - optind;
    /* Harmless but probably not what was meant: say so, and go on. */
    if (sampling_opt && !o->do_sample)
        fprintf(stderr, "hviske: warning: %s has no effect without "
                "--sample\n", sampling_opt);
    if (lp_opt && o->num_beams <= 1)
        fprintf(stderr, "hviske: warning: %s has no effect without "
                "--beams N (N > 1)\n", lp_opt);
    return -1;
}

/* 1 if the model lists lang among its supported languages. */
static int model_has_language(const hv_model *model, const char *lang)
{
    for (int i = 0; i < hv_model_n_languages(model); i++)
        if (strcmp(hv_model_language(model, i), lang) == 0)
            return 1;
    return 0;
}

/* Prints "hviske: FILE: msg", without repeating FILE when msg already
 * starts with it (library messages about files name them). */
static void file_error(const char *path, hv_status status, const char *msg)
{
    if (!msg || !*msg)
        msg = hv_status_name(status);
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':')
        fprintf(stderr, "hviske: %s\n", msg);
    else
        fprintf(stderr, "hviske: %s: %s\n", path, msg);
}

/* A copy of s with every invalid UTF-8 sequence replaced by U+FFFD, so the
 * JSON we print is valid whatever bytes a file name holds. NULL when out of
 * memory; free() it. */
static char *utf8_clean(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *w = out;
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        int len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2
                : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        int ok = len > 0;
        for (int i = 1; ok && i < len; i++)
            ok = (p[i] & 0xC0) == 0x80;
        if (ok && len == 3) /* no overlongs, no surrogates */
            ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] > 0x9F);
        if (ok && len == 4) /* no overlongs, nothing above U+10FFFF */
            ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] > 0x8F);
        if (ok) {
            memcpy(w, p, (size_t)len);
            w += len;
            p += len;
        } else {
            memcpy(w, "\xEF\xBF\xBD", 3);
            w += 3;
            p++;
        }
    }
    *w = '\0';
    return out;
}

/* Milliseconds rounded to the microsecond, so JSON shows 1.507, not
 * 1.5070889999624342. */
static double ms3(double ms) { return round(ms * 1000.0) / 1000.0; }

/* A float as the double of its shortest decimal form that reads back as
 * the same float, so JSON shows -0.30528 rather than -0.30527999997138977. */
static double float_for_json(float v)
{
    char buf[32];
    if (!isfinite(v))
        return v; /* cJSON writes null */
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            break;
    }
    return strtod(buf, NULL);
}

/* Prints one result as a single-line JSON object; 0 on success. */
static int print_json(const char *path, const hv_result *res)
{
    hv_timings t = hv_result_timings(res);
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    char *file = utf8_clean(path), *text = utf8_clean(hv_result_text(res));
    cJSON *obj = cJSON_CreateObject(), *arr = NULL, *lparr = NULL,
          *tim = NULL;

    int ok = file && text && obj &&
             cJSON_AddStringToObject(obj, "file", file) &&
             cJSON_AddStringToObject(obj, "text", text) &&
             (arr = cJSON_AddArrayToObject(obj, "tokens")) &&
             (lparr = cJSON_AddArrayToObject(obj, "token_logprobs")) &&
             cJSON_AddNumberToObject(obj, "score", hv_result_score(res)) &&
             (tim = cJSON_AddObjectToObject(obj, "timings")) &&
             cJSON_AddNumberToObject(tim, "frontend_ms", ms3(t.frontend_ms)) &&
             cJSON_AddNumberToObject(tim, "encoder_ms", ms3(t.encoder_ms)) &&
             cJSON_AddNumberToObject(tim, "decoder_ms", ms3(t.decoder_ms)) &&
             cJSON_AddNumberToObject(tim, "n_tokens", t.n_tokens);
    for (int i = 0; ok && i < hv_result_n_tokens(res); i++)
        ok = cJSON_AddItemToArray(arr, cJSON_CreateNumber(tokens[i])) &&
             cJSON_AddItemToArray(lparr, cJSON_CreateNumber(
                                             lps ? float_for_json(lps[i]) : 0.0));
    char *line = ok ? cJSON_PrintUnformatted(obj) : NULL;
    int rc = line ? 0 : -1;
    if (line)
        puts(line);

    cJSON_free(line);
    cJSON_Delete(obj); /* owns arr and tim */
    free(text);
    free(file);
    return rc;
}

/* Prints a transcript as one line: line breaks inside it (a model can emit
 * them as byte pieces) become spaces, so each file that succeeds
 * gets exactly one line. */
static void print_text_line(const char *text)
{
    for (const char *p = text; *p; p++)
        putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
    putchar('\n');
}

/* Reads and transcribes one file, printing its line; 0 on success. */
static int transcribe_file(hv_context *ctx, const options *o,
                           const char *path)
{
    char err[1024];
    float *pcm = NULL;
    size_t n_frames = 0;
    int rate = 0, channels = 0;
    hv_status st = hv_audio_read(path, &pcm, &n_frames, &rate, &channels,
                                 err, sizeof err);
    if (st != HV_OK) {
        file_error(path, st, err);
        return -1;
    }

    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.language = o->language;
    tp.punctuation = o->punctuation;
    tp.max_new_tokens = o->max_tokens;
    if (o->dither >= 0.0f)
        tp.dither = o->dither;
    tp.num_beams = o->num_beams;
    tp.length_penalty = o->length_penalty;
    tp.do_sample = o->do_sample;
    tp.temperature = o->temperature;
    tp.top_k = o->top_k;
    tp.top_p = o->top_p;
    tp.seed = o->seed;

    hv_result *res = NULL;
    int rc = 0;
    st = hv_transcribe(ctx, pcm, n_frames, rate, channels, &tp, &res);
    if (st != HV_OK) {
        file_error(path, st, hv_context_error(ctx));
        rc = -1;
    } else if (o->json) {
        if (print_json(path, res) != 0) {
            file_error(path, HV_ERR_NOMEM, "out of memory writing JSON");
            rc = -1;
        }
    } else {
        print_text_line(hv_result_text(res));
    }
    fflush(stdout);
    hv_result_free(res);
    hv_audio_free(pcm);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0)
        return rc;

    char err[1024] = "";
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.n_threads;
    hv_model *model = NULL;
    hv_status st = hv_model_load(o.model_dir, &mp, &model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err[0] ? err : hv_status_name(st));
        return 1;
    }
    if (o.language && !model_has_language(model, o.language)) {
        fprintf(stderr, "hviske: language '%s' is not supported by %s "
                "(supported:", o.language, o.model_dir);
        for (int i = 0; i < hv_model_n_languages(model); i++)
            fprintf(stderr, " %s", hv_model_language(model, i));
        fputs(")\n", stderr);
        hv_model_free(model);
        return EXIT_USAGE;
    }
    hv_context *ctx = hv_context_new(model, o.n_threads);
    if (!ctx) {
        fputs("hviske: out of memory creating a context\n", stderr);
        hv_model_free(model);
        return 1;
    }

    rc = 0;
    for (int i = 0; i < o.n_files; i++)
        if (transcribe_file(ctx, &o, o.files[i]) != 0)
            rc = 1;

    hv_context_free(ctx);
    hv_model_free(model);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("hviske: error writing the output\n", stderr);
        rc = 1;
    }
    return rc;
}
