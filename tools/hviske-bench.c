/* hviske-bench: times the pipeline's stages on real work.
 *
 *   hviske-bench -m MODEL_DIR [-t N] [--beams N] [--max-tokens N] [--runs R]
 *                [--warmup W] [--json] FILE...
 *
 * Loads the model once (timed), then per file runs W warm-up and R measured
 * transcriptions and reports the median and spread (min-max) of each
 * stage, the real-time factor and the peak resident memory. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hviske.h"

typedef struct opts {
    const char *model;
    int threads, beams, max_tokens, runs, warmup, json;
} opts;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stat3 { double median, min, max; } stat3;

static stat3 summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stat3 s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1]};
    return s;
}

enum { S_TOTAL, S_FRONTEND, S_ENCODER, S_CROSS, S_PREFILL, S_TOKEN, S_DECODER, S_RTF, N_STATS };
static const char *stat_names[N_STATS] = {"total_ms", "frontend_ms", "encoder_ms",
                                          "cross_ms", "prefill_ms", "per_token_ms",
                                          "decoder_ms", "rtf"};

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: hviske-bench -m MODEL_DIR [-t N] [--beams N] [--max-tokens N] "
               "[--runs R] [--warmup W] [--json] FILE...\n");
}

static int bench_file(hv_model *model, const opts *o, const char *path, cJSON *jfiles) {
    char err[1024];
    float *pcm;
    size_t n;
    int rate, ch;
    if (hv_audio_read(path, &pcm, &n, &rate, &ch, err, sizeof err)) {
        fprintf(stderr, "hviske-bench: %s\n", err);
        return 1;
    }
    hv_context *ctx = hv_context_new(model, o->threads);
    double *v[N_STATS];
    for (int k = 0; k < N_STATS; k++) v[k] = calloc((size_t)o->runs, sizeof(double));
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.num_beams = o->beams;
    tp.max_new_tokens = o->max_tokens;
    tp.dither = 0;
    int rc = 0, tokens = 0;
    double duration = (double)n / rate;
    for (int r = -o->warmup; ctx && r < o->runs; r++) {
        hv_result *res;
        double t0 = now_ms();
        if (hv_transcribe(ctx, pcm, n, rate, ch, &tp, &res)) {
            fprintf(stderr, "hviske-bench: %s: %s\n", path, hv_context_error(ctx));
            rc = 1;
            break;
        }
        double total = now_ms() - t0;
        hv_timings t = hv_result_timings(res);
        tokens = t.n_tokens;
        hv_result_free(res);
        if (r < 0) continue;
        v[S_TOTAL][r] = total;
        v[S_FRONTEND][r] = t.frontend_ms;
        v[S_ENCODER][r] = t.encoder_ms;
        v[S_PREFILL][r] = t.prefill_ms;
        v[S_CROSS][r] = t.decoder_ms - t.prefill_ms - t.steps_ms;
        v[S_TOKEN][r] = t.n_steps ? t.steps_ms / t.n_steps : 0;
        v[S_DECODER][r] = t.decoder_ms;
        v[S_RTF][r] = total / 1e3 / duration;
    }
    if (!ctx) {
        fprintf(stderr, "hviske-bench: out of memory\n");
        rc = 1;
    }
    if (!rc) {
        stat3 s[N_STATS];
        for (int k = 0; k < N_STATS; k++) s[k] = summarise(v[k], o->runs);
        if (o->json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "file", path);
            cJSON_AddNumberToObject(j, "audio_s", duration);
            cJSON_AddNumberToObject(j, "tokens", tokens);
            for (int k = 0; k < N_STATS; k++) {
                cJSON *m = cJSON_AddObjectToObject(j, stat_names[k]);
                cJSON_AddNumberToObject(m, "median", s[k].median);
                cJSON_AddNumberToObject(m, "min", s[k].min);
                cJSON_AddNumberToObject(m, "max", s[k].max);
            }
            cJSON_AddItemToArray(jfiles, j);
        } else {
            printf("%s: %.2f s audio, %d tokens, %d runs (median [min-max])\n", path,
                   duration, tokens, o->runs);
            for (int k = 0; k < N_STATS; k++)
                printf("  %-13s %10.3f  [%.3f - %.3f]\n", stat_names[k], s[k].median,
                       s[k].min, s[k].max);
        }
    }
    for (int k = 0; k < N_STATS; k++) free(v[k]);
    hv_context_free(ctx);
    hv_audio_free(pcm);
    return rc;
}

int main(int argc, char **argv) {
    opts o = {NULL, 0, 1, 0, 5, 1, 0};
    static const struct option lo[] = {
        {"threads", required_argument, 0, 't'}, {"beams", required_argument, 0, 'b'},
        {"max-tokens", required_argument, 0, 'n'},
        {"runs", required_argument, 0, 'r'},    {"warmup", required_argument, 0, 'w'},
        {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:t:h", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'm': o.model = optarg; break;
        case 't': bad = parse_int(optarg, 1, 256, &o.threads); break;
        case 'b': bad = parse_int(optarg, 1, 64, &o.beams); break;
        case 'n': bad = parse_int(optarg, 1, 1 << 20, &o.max_tokens); break;
        case 'r': bad = parse_int(optarg, 1, 100000, &o.runs); break;
        case 'w': bad = parse_int(optarg, 0, 100000, &o.warmup); break;
        case 'j': o.json = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "hviske-bench: bad value '%s' for -%c\n", optarg, c);
            return 2;
        }
    }
    if (!o.model || optind >= argc) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.threads;
    hv_model *model;
    double t0 = now_ms();
    if (hv_model_load(o.model, &mp, &model, err, sizeof err)) {
        fprintf(stderr, "hviske-bench: %s\n", err);
        return 1;
    }
    double load_ms = now_ms() - t0;
    cJSON *root = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(root, "files");
    if (!o.json) printf("model %s: loaded in %.1f ms\n", o.model, load_ms);
    int rc = 0;
    for (int i = optind; i < argc; i++) rc |= bench_file(model, &o, argv[i], files);
    if (o.json) {
        cJSON_AddStringToObject(root, "model", o.model);
        cJSON_AddNumberToObject(root, "threads", o.threads);
        cJSON_AddNumberToObject(root, "beams", o.beams);
        cJSON_AddNumberToObject(root, "load_ms", load_ms);
        cJSON_AddNumberToObject(root, "peak_rss_mb", peak_rss_mb());
        char *s = cJSON_PrintUnformatted(root);
        puts(s);
        free(s);
    } else {
        printf("peak resident memory: %.1f MB\n", peak_rss_mb());
    }
    cJSON_Delete(root);
    hv_model_free(model);
    return rc;
}
