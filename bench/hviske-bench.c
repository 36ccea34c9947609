/* hviske-bench: times the pipeline's stages on real work.
 *
 *   hviske-bench -m MODEL_DIR [-t N] [--weight-type T] [--compute C] [--beams N]
 *                [--max-tokens N] [--chunking MODE] [--vad-model DIR]
 *                [--word-timestamps] [--runs R] [--warmup W] [--json] FILE...
 *
 * Loads the model once (timed), then per file runs W warm-up and R measured
 * transcriptions and reports the median and spread (min-max) of each
 * stage (speech detection among them), the share of the audio that speech
 * detection kept from the encoder, the real-time factor and the peak
 * resident memory; with --word-timestamps also the time the word times
 * took and their share of the total. The encoder's rate (its matrix
 * products' floating-point operations per second) is reported as well;
 * with --peak also the rate of OpenBLAS sgemm on the encoder's own shapes,
 * on the same threads in the same run, and the encoder's share of it, and
 * the same for the kernels that run the model's products in its compute
 * mode (hv_model_gemm_peak: oneDNN's matmul where it runs them), and
 * where the CPU has AMX, the bf16 tile unit's own rate (tile_probe.h);
 * with --bandwidth the memory read bandwidth around each run and a decoder
 * step's time over the bound it sets. */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "diag.h" /* hv_model_gemm, hv_model_gemm_peak, weight bytes: white-box */
#include "hviske.h"
#include "isa_probe.h"
#include "kernels/matmul_impl.h" /* hv_mm_best: the kernel table */
#include "kernels/ops.h"         /* hv_ops_level: the element-wise passes' instruction set */
#include "output/writer.h"       /* hv_output_json_name: file names in JSON */
#include "pipeline.h"            /* hv_model_encoder_int8 */
#include "cue_options.h"
#include "tile_probe.h"
#include "checkpoint.h"
#include "cmdline.h"

typedef struct opts {
    const char *model;
    const char *weight_type;
    hv_compute compute_mode;
    const char *vad_model; /* NULL: hvt_load_vad's search */
    hv_chunking chunking;  /* default auto, as the CLI */
    int threads, beams, max_tokens, runs, warmup, json, bandwidth, words, peak;
    int diarize;         /* the diarize prompt and speaker work */
    float diarize_voice; /* its voice threshold (hv_params_set's rule) */
} opts;

/* Provided by OpenBLAS; declared here since cblas.h variants differ. */
void openblas_set_num_threads(int num_threads);

static double peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

/* Memory read bandwidth: threads sum disjoint parts of a buffer much
 * larger than the caches; the best of a few passes, in GB/s. The buffer
 * is made once (bw_probe_new) and kept, so that the probe can run just
 * before and after each timed run without faulting in pages each time. */
typedef struct bw_probe {
    double *buf;
    size_t n; /* doubles in buf */
    int threads;
} bw_probe;

typedef struct bw_job {
    const double *p;
    size_t n;
    double sum;
} bw_job;

static void *bw_read(void *arg) {
    bw_job *j = arg;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= j->n; i += 4) {
        s0 += j->p[i];
        s1 += j->p[i + 1];
        s2 += j->p[i + 2];
        s3 += j->p[i + 3];
    }
    j->sum = s0 + s1 + s2 + s3;
    return NULL;
}

static int bw_probe_new(bw_probe *p, int threads) {
    p->n = (size_t)1 << 26; /* 512 MiB of doubles, 16x the largest L3 here */
    p->threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
    p->buf = malloc(p->n * sizeof *p->buf);
    if (!p->buf) return -1;
    for (size_t i = 0; i < p->n; i++) p->buf[i] = (double)(i & 1023);
    return 0;
}

static double read_bandwidth_gbs(const bw_probe *p) {
    pthread_t th[256];
    bw_job jobs[256];
    double best = 0;
    for (int pass = 0; pass < 4; pass++) {
        double t0 = hvt_now_s();
        for (int t = 0; t < p->threads; t++) {
            jobs[t] = (bw_job){.p = p->buf + p->n / p->threads * t, .n = p->n / p->threads};
            pthread_create(&th[t], NULL, bw_read, &jobs[t]);
        }
        for (int t = 0; t < p->threads; t++) pthread_join(th[t], NULL);
        double gbs = p->n * sizeof *p->buf / (hvt_now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* User and system CPU time of the process so far, all threads. */
static double cpu_seconds(void) {
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u)) return 0;
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* The sgemm peak on the encoder's shapes: each of `threads` threads runs
 * single-threaded OpenBLAS sgemm on its share of the output features, as
 * hviske splits a Linear, for y[m x N] = x[m x K] . W^T with (K, N) each of
 * the encoder's Linear shapes (d -> 4d and 4d -> d of the feed-forwards,
 * d -> d of attention, d -> 2d of the convolution module), weighted by how
 * often a layer runs them. Returns GFLOP/s: best of 3 timings per shape. */
typedef struct peak_job {
    const float *x, *w;
    float *y;
    int m, n, k, ldy;
} peak_job;

static void *peak_run(void *arg) {
    const peak_job *j = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->m, j->n, j->k, 1.0f, j->x, j->k, j->w,
                j->k, 0.0f, j->y, j->ldy);
    return NULL;
}

static double sgemm_peak_gflops(int threads, int m, int d, int ff) {
    const struct { int k, n, count; } shapes[] = {{d, ff, 2}, {ff, d, 2}, {d, d, 6}, {d, 2 * d, 1}};
    size_t most = (size_t)d * ff;
    float *x = malloc((size_t)m * ff * sizeof *x), *w = malloc(most * sizeof *w);
    float *y = malloc((size_t)m * ff * sizeof *y);
    if (!x || !w || !y) {
        free(x), free(w), free(y);
        return 0;
    }
    for (size_t i = 0; i < (size_t)m * ff; i++) x[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f;
    for (size_t i = 0; i < most; i++) w[i] = (float)((i * 104729) % 1000) / 1e5f - 0.005f;
    openblas_set_num_threads(1);
    double flop = 0, secs = 0;
    pthread_t th[256];
    peak_job jobs[256];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int K = shapes[s].k, N = shapes[s].n, per = (N / threads + 15) & ~15;
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = hvt_now_s();
            int used = 0;
            for (int t = 0; t < threads && t * per < N; t++, used++) {
                int n0 = t * per, n1 = n0 + per < N ? n0 + per : N;
                jobs[t] = (peak_job){.x = x,
                                     .w = w + (size_t)n0 * K,
                                     .y = y + n0,
                                     .m = m,
                                     .n = n1 - n0,
                                     .k = K,
                                     .ldy = N};
                pthread_create(&th[t], NULL, peak_run, &jobs[t]);
            }
            for (int t = 0; t < used; t++) pthread_join(th[t], NULL);
            double dt = hvt_now_s() - t0;
            if (dt < best) best = dt;
        }
        flop += shapes[s].count * 2.0 * m * K * N;
        secs += shapes[s].count * best;
    }
    free(x), free(w), free(y);
    return flop / secs / 1e9;
}

/* d_model and ff_expansion_factor from MODEL_DIR/config.json; 0 when they
 * cannot be read (the model loaded, so they normally can). */
static int encoder_dims(const char *model_dir, int *d, int *ff, double *max_clip_s) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", model_dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *buf = malloc(1 << 20);
    size_t len = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf) return 0;
    buf[len] = 0;
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    const cJSON *enc = cJSON_GetObjectItemCaseSensitive(root, "encoder");
    const cJSON *dm = cJSON_GetObjectItemCaseSensitive(enc, "d_model");
    const cJSON *fe = cJSON_GetObjectItemCaseSensitive(enc, "ff_expansion_factor");
    const cJSON *mc = cJSON_GetObjectItemCaseSensitive(root, "max_audio_clip_s");
    int ok = cJSON_IsNumber(dm) && cJSON_IsNumber(fe) && dm->valueint > 0 && fe->valueint > 0 &&
             dm->valueint <= 65536 && fe->valueint <= 64;
    if (ok) *d = dm->valueint, *ff = dm->valueint * fe->valueint;
    *max_clip_s = cJSON_IsNumber(mc) && mc->valuedouble > 0 ? mc->valuedouble : 35;
    cJSON_Delete(root);
    return ok;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct stat3 {
    double median, min, max;
} stat3;

static stat3 summarise(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stat3 s = {
        .median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), .min = v[0], .max = v[n - 1]};
    return s;
}

enum {
    S_TOTAL,
    S_VAD,
    S_FRONTEND,
    S_ENCODER,
    S_CROSS,
    S_PREFILL,
    S_TOKEN,
    S_DECODER,
    S_ENC_GFLOPS,
    S_ALIGN,
    S_ALIGN_SHARE,
    S_DIARIZE,
    S_DIARIZE_SHARE,
    S_SKIPPED,
    S_RTF,
    S_BUSY,
    N_STATS
};
static const char *stat_names[N_STATS] = {
    "total_ms",       "vad_ms",     "frontend_ms",  "encoder_ms",
    "cross_ms",       "prefill_ms", "per_token_ms", "decoder_ms",
    "encoder_gflops", "align_ms",   "align_share",  "diarize_ms",
    "diarize_share",  "skipped",    "rtf",          "busy_share"};

/* parent.name = {median, min, max} of s. */
static void json_stat(cJSON *parent, const char *name, stat3 s) {
    cJSON *m = cJSON_AddObjectToObject(parent, name);
    cJSON_AddNumberToObject(m, "median", s.median);
    cJSON_AddNumberToObject(m, "min", s.min);
    cJSON_AddNumberToObject(m, "max", s.max);
}

static void usage(FILE *f) {
    fprintf(f, "usage: hviske-bench -m MODEL_DIR [-t N]\n"
               "                    [--weight-type auto|f32|f16|bf16|q8_0|q4_0]\n"
               "                    [--compute auto|f32|bf16]\n"
               "                    [--beams N] [--max-tokens N] [--runs R] [--warmup W]\n"
               "                    [--chunking auto|vad|energy|none] [--vad-model DIR]\n"
               "                    [--word-timestamps] [--diarize] [--diarize-voice X]\n"
               "                    [--bandwidth] [--peak] [--json] FILE...\n"
               "vad_ms is the speech detector's time; skipped the share of the audio it kept\n"
               "from the encoder (pauses, silence, noise). align_ms is the time of the word\n"
               "times (--word-timestamps), align_share its share of total_ms. diarize_ms is\n"
               "the speaker work of --diarize (pitch tracks, voice signatures, linking), its\n"
               "extra tokens being in decoder_ms; diarize_share its share of total_ms.\n"
               "encoder_gflops is the encoder's rate; --peak measures OpenBLAS sgemm on the\n"
               "encoder's shapes with the same threads just before and after each run\n"
               "(sgemm_peak_gflops) and the encoder's share of it (encoder_peak_share; per\n"
               "run: _runs), and the same for the kernels that run the products in the compute\n"
               "mode (gemm_peak_gflops, encoder_gemm_share; the kernels: \"gemm\", the mode:\n"
               "\"compute\"), and where the CPU has AMX the bf16 tile unit's rate from a\n"
               "register-only probe (tile_peak_gflops, encoder_tile_share; tile_probe:\n"
               "\"amx_bf16\", or why it was not measured). busy_share is the process's CPU time\n"
               "over threads x total_ms: below 1, threads waited.\n"
               "--bandwidth measures the memory read bandwidth at the start\n"
               "(read_bandwidth_gbs, token_bound_ms: the decoder's weight bytes over it) and\n"
               "just before and after each run (read_bandwidth_gbs_runs); token_bound_ratio is\n"
               "per_token_ms over the bound of the run's moment (per run: _runs). Its buffer\n"
               "(512 MiB) is kept while the runs go on and counts in the peak memory.\n");
}

/* The run whose value is the median of v[n] (of an even n, the lower of
 * the middle two). */
static int median_run(const double *v, int n) {
    for (int r = 0; r < n; r++) {
        int below = 0, same = 0;
        for (int q = 0; q < n; q++) below += v[q] < v[r], same += v[q] == v[r] && q < r;
        if (below + same == (n - 1) / 2) return r;
    }
    return 0;
}

/* parent.encoder_profile: one run's encoder stages (profile.h) as
 * "<stage>_ms", and that run's encoder_ms, which they never exceed. */
static void json_profile(cJSON *parent, const hv_profile *p, double encoder_ms) {
    cJSON *m = cJSON_AddObjectToObject(parent, "encoder_profile");
    cJSON_AddNumberToObject(m, "encoder_ms", encoder_ms);
    for (int k = 0; k < HV_N_STAGES; k++) {
        char key[64];
        snprintf(key, sizeof key, "%s_ms", hv_stage_names[k]);
        cJSON_AddNumberToObject(m, key, p->ms[k]);
    }
}

/* A run's peak, the larger of the readings before and after it, and the
 * encoder's rate as a share of it. */
static void run_peak(double before, double after, double rate, double *peak, double *share) {
    *peak = after > before ? after : before;
    *share = *peak > 0 ? rate / *peak : 0;
}

/* bw: with --bandwidth, the probe run just before and after each timed run;
 * dec_mb: the decoder's weight bytes a step reads, in MB. */
static int bench_file(hv_model *model, const hv_vad *vad, const opts *o, const bw_probe *bw,
                      double dec_mb, const char *path, cJSON *jfiles) {
    char err[1024];
    float *pcm;
    size_t n;
    int rate, ch;
    if (hv_audio_read(path, &pcm, &n, &rate, &ch, err, sizeof err)) {
        fprintf(stderr, "hviske-bench: %s\n", err);
        return 1;
    }
    hv_context *ctx = NULL;
    hv_context_new(model, o->threads, &ctx, NULL, 0);
    double *v[N_STATS];
    for (int k = 0; k < N_STATS; k++) v[k] = calloc((size_t)o->runs, sizeof(double));
    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.num_beams = o->beams;
    tp.max_new_tokens = o->max_tokens;
    tp.dither = 0;
    tp.chunking = o->chunking;
    tp.vad = vad;
    tp.word_timestamps = o->words;
    tp.diarize = o->diarize;
    tp.diarize_voice = o->diarize_voice;
    int rc = 0, tokens = 0;
    double duration = (double)n / rate;
    /* with --peak, the sgemm peak with m = the encoder frames of the
     * file's longest possible chunk (10 ms features, subsampled 8x),
     * measured just before and just after each timed run (the larger
     * counts): this machine's speed drifts, and a share is only meaningful
     * against a peak of the same moment */
    double clip_s = 35, *peaks = calloc((size_t)o->runs, sizeof(double));
    double *shares = calloc((size_t)o->runs, sizeof(double));
    double *gpeaks = calloc((size_t)o->runs, sizeof(double));
    double *gshares = calloc((size_t)o->runs, sizeof(double));
    double *tpeaks = calloc((size_t)o->runs, sizeof(double));
    double *tshares = calloc((size_t)o->runs, sizeof(double));
    double *ipeaks = calloc((size_t)o->runs, sizeof(double));
    double *ishares = calloc((size_t)o->runs, sizeof(double));
    /* with --bandwidth, the same for the decoder step's bound: the read
     * bandwidth around each run, and the run's step time over the bound
     * it sets (the weight bytes over that bandwidth) */
    double *bws = calloc((size_t)o->runs, sizeof(double));
    double *bound_ratios = calloc((size_t)o->runs, sizeof(double));
    /* with --json, each run's encoder stages (profile.h) */
    hv_profile *profs = calloc((size_t)o->runs, sizeof *profs);
    int d = 0, ff = 0, peak_m = 0, peak_threads = 1;
    int busy_threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (o->peak && encoder_dims(o->model, &d, &ff, &clip_s)) {
        peak_m = (int)ceil((duration < clip_s ? duration : clip_s) * 100 / 8);
        if (peak_m < 1) peak_m = 1;
        peak_threads = busy_threads < 256 ? busy_threads : 256;
    }
    /* the tile unit's rate around each run where a first probe gives one;
     * otherwise why not, once */
    char tile_why[256] = "";
    int tile = peak_m && hvt_tile_peak_gflops(peak_threads, tile_why, sizeof tile_why) > 0;
    /* the kernel table's own arithmetic peak (isa_probe.h): its int8
     * instructions where the encoder's products are the int8 GEMM's */
    char isa_why[256] = "";
    int int8 = hv_model_encoder_int8(model);
    char isa_what[80];
    snprintf(isa_what, sizeof isa_what, "%s %s", hv_mm_best()->name, int8 ? "int8" : "f32 fma");
    int isa = peak_m && hvt_isa_peak_gflops(peak_threads, int8, isa_why, sizeof isa_why) > 0;
    int ok = ctx && peaks && shares && gpeaks && gshares && tpeaks && tshares && ipeaks &&
             ishares && bws && bound_ratios && profs;
    for (int r = -o->warmup; ok && r < o->runs; r++) {
        hv_result *res;
        double before = r >= 0 && peak_m ? sgemm_peak_gflops(peak_threads, peak_m, d, ff) : 0;
        double gbefore = r >= 0 && peak_m ? hv_model_gemm_peak(model, peak_threads, peak_m) : 0;
        double tbefore =
            r >= 0 && tile ? hvt_tile_peak_gflops(peak_threads, tile_why, sizeof tile_why) : 0;
        double ibefore =
            r >= 0 && isa ? hvt_isa_peak_gflops(peak_threads, int8, isa_why, sizeof isa_why) : 0;
        double bw_before = r >= 0 && bw ? read_bandwidth_gbs(bw) : 0;
        if (o->json && r >= 0) hv_context_set_profile(ctx, &profs[r]);
        double t0 = hvt_now_s(), cpu0 = cpu_seconds();
        if (hv_transcribe(ctx, pcm, n, rate, ch, &tp, &res)) {
            fprintf(stderr, "hviske-bench: %s: %s\n", path, hv_context_error(ctx));
            rc = 1;
            break;
        }
        double total = (hvt_now_s() - t0) * 1e3, cpu = cpu_seconds() - cpu0;
        hv_context_set_profile(ctx, NULL);
        hv_timings t = hv_result_timings(res);
        tokens = t.n_tokens;
        hv_result_free(res);
        if (r < 0) continue;
        v[S_TOTAL][r] = total;
        v[S_VAD][r] = t.vad_ms;
        v[S_SKIPPED][r] = duration > 0 ? 1 - t.encoded_s / duration : 0;
        v[S_FRONTEND][r] = t.frontend_ms;
        v[S_ENCODER][r] = t.encoder_ms;
        v[S_PREFILL][r] = t.prefill_ms;
        v[S_CROSS][r] = t.decoder_ms - t.prefill_ms - t.steps_ms;
        v[S_TOKEN][r] = t.n_steps ? t.steps_ms / t.n_steps : 0;
        v[S_DECODER][r] = t.decoder_ms;
        v[S_ENC_GFLOPS][r] = t.encoder_ms > 0 ? t.encoder_gflop / t.encoder_ms * 1e3 : 0;
        v[S_ALIGN][r] = t.align_ms;
        v[S_ALIGN_SHARE][r] = total > 0 ? t.align_ms / total : 0;
        v[S_DIARIZE][r] = t.diarize_ms;
        v[S_DIARIZE_SHARE][r] = total > 0 ? t.diarize_ms / total : 0;
        v[S_RTF][r] = total / 1e3 / duration;
        v[S_BUSY][r] = total > 0 ? cpu * 1e3 / (busy_threads * total) : 0;
        if (peak_m) {
            double rate = v[S_ENC_GFLOPS][r];
            run_peak(before, sgemm_peak_gflops(peak_threads, peak_m, d, ff), rate, &peaks[r],
                     &shares[r]);
            run_peak(gbefore, hv_model_gemm_peak(model, peak_threads, peak_m), rate, &gpeaks[r],
                     &gshares[r]);
        }
        if (tile)
            run_peak(tbefore, hvt_tile_peak_gflops(peak_threads, tile_why, sizeof tile_why),
                     v[S_ENC_GFLOPS][r], &tpeaks[r], &tshares[r]);
        if (isa)
            run_peak(ibefore, hvt_isa_peak_gflops(peak_threads, int8, isa_why, sizeof isa_why),
                     v[S_ENC_GFLOPS][r], &ipeaks[r], &ishares[r]);
        if (bw) {
            double after = read_bandwidth_gbs(bw);
            bws[r] = after > bw_before ? after : bw_before;
            bound_ratios[r] = bws[r] > 0 && dec_mb > 0 ? v[S_TOKEN][r] / (dec_mb / bws[r]) : 0;
        }
    }
    if (!ok) {
        fprintf(stderr, "hviske-bench: out of memory\n");
        rc = 1;
    }
    if (!rc) {
        /* the encoder stages of the run with the median encoder_ms (before
         * summarise sorts them) */
        int prof_run = median_run(v[S_ENCODER], o->runs);
        double v_encoder_ms = v[S_ENCODER][prof_run];
        stat3 s[N_STATS];
        for (int k = 0; k < N_STATS; k++) s[k] = summarise(v[k], o->runs);
        stat3 peak = summarise(peaks, o->runs), share = summarise(shares, o->runs);
        stat3 gpeak = summarise(gpeaks, o->runs), gshare = summarise(gshares, o->runs);
        stat3 tpeak = summarise(tpeaks, o->runs), tshare = summarise(tshares, o->runs);
        stat3 ipeak = summarise(ipeaks, o->runs), ishare = summarise(ishares, o->runs);
        stat3 bw_run = summarise(bws, o->runs), bound = summarise(bound_ratios, o->runs);
        int has_bound = bw && tokens > 0;
        if (o->json) {
            cJSON *j = cJSON_CreateObject();
            hv_output_json_name(j, "file", path); /* lossless: output/writer.h */
            cJSON_AddNumberToObject(j, "audio_s", duration);
            cJSON_AddNumberToObject(j, "tokens", tokens);
            if (peak_m) {
                cJSON_AddNumberToObject(j, "sgemm_peak_gflops", peak.median);
                cJSON_AddNumberToObject(j, "encoder_peak_share", share.median);
                json_stat(j, "encoder_peak_share_runs", share);
                cJSON_AddNumberToObject(j, "gemm_peak_gflops", gpeak.median);
                cJSON_AddNumberToObject(j, "encoder_gemm_share", gshare.median);
                json_stat(j, "encoder_gemm_share_runs", gshare);
                cJSON_AddStringToObject(j, "tile_probe", tile ? "amx_bf16" : tile_why);
                cJSON_AddStringToObject(j, "isa_probe", isa ? isa_what : isa_why);
            }
            if (isa) {
                cJSON_AddNumberToObject(j, "isa_peak_gflops", ipeak.median);
                cJSON_AddNumberToObject(j, "encoder_isa_share", ishare.median);
                json_stat(j, "encoder_isa_share_runs", ishare);
            }
            if (tile) {
                cJSON_AddNumberToObject(j, "tile_peak_gflops", tpeak.median);
                cJSON_AddNumberToObject(j, "encoder_tile_share", tshare.median);
                json_stat(j, "encoder_tile_share_runs", tshare);
            }
            if (has_bound) {
                json_stat(j, "read_bandwidth_gbs_runs", bw_run);
                cJSON_AddNumberToObject(j, "token_bound_ratio", bound.median);
                json_stat(j, "token_bound_ratio_runs", bound);
            }
            for (int k = 0; k < N_STATS; k++) json_stat(j, stat_names[k], s[k]);
            json_profile(j, &profs[prof_run], v_encoder_ms);
            cJSON_AddItemToArray(jfiles, j);
        } else {
            printf("%s: %.2f s audio, %d tokens, %d runs (median [min-max])\n", path, duration,
                   tokens, o->runs);
            for (int k = 0; k < N_STATS; k++)
                printf("  %-14s %10.3f  [%.3f - %.3f]\n", stat_names[k], s[k].median, s[k].min,
                       s[k].max);
            if (isa)
                printf("  %s peak (register-only probe) %.1f GFLOP/s: encoder at %.1f%% [%.1f - "
                       "%.1f] of the peak measured around each run\n",
                       isa_what, ipeak.median, 100 * ishare.median, 100 * ishare.min,
                       100 * ishare.max);
            else if (peak_m)
                printf("  %s peak: not measured: %s\n", isa_what, isa_why);
            if (peak_m)
                printf("  sgemm peak on the encoder's shapes %.1f GFLOP/s: encoder at %.1f%% "
                       "[%.1f - %.1f] of the peak measured around each run\n",
                       peak.median, 100 * share.median, 100 * share.min, 100 * share.max);
            if (peak_m)
                printf("  %s (compute %s) on the encoder's weights %.1f GFLOP/s: encoder at "
                       "%.1f%% [%.1f - %.1f]\n",
                       hv_model_gemm(model), hv_compute_name(hv_model_compute(model)), gpeak.median,
                       100 * gshare.median, 100 * gshare.min, 100 * gshare.max);
            if (tile)
                printf("  AMX bf16 tile unit (register-only probe) %.1f GFLOP/s: encoder at "
                       "%.1f%% [%.1f - %.1f]\n",
                       tpeak.median, 100 * tshare.median, 100 * tshare.min, 100 * tshare.max);
            else if (peak_m)
                printf("  AMX bf16 tile unit: not measured: %s\n", tile_why);
            if (has_bound)
                printf("  read bandwidth %.1f GB/s around the runs: a step took %.2fx [%.2f - "
                       "%.2f] the bound of its moment\n",
                       bw_run.median, bound.median, bound.min, bound.max);
        }
    }
    for (int k = 0; k < N_STATS; k++) free(v[k]);
    free(peaks);
    free(shares);
    free(gpeaks);
    free(gshares);
    free(tpeaks);
    free(tshares);
    free(ipeaks);
    free(ishares);
    free(bws);
    free(bound_ratios);
    free(profs);
    hv_context_free(ctx);
    hv_free(pcm);
    return rc;
}

int main(int argc, char **argv) {
    opts o = {.weight_type = "auto",
              .compute_mode = HV_COMPUTE_AUTO,
              .chunking = HV_CHUNKING_AUTO,
              .beams = 1,
              .runs = 5,
              .warmup = 1,
              .diarize_voice = hv_transcribe_default_params().diarize_voice};
    char err[1024];
    hv_transcribe_params named = hv_transcribe_default_params(); /* --diarize-voice */
    static const struct option lo[] = {{"threads", required_argument, 0, 't'},
                                       {"beams", required_argument, 0, 'b'},
                                       {"max-tokens", required_argument, 0, 'n'},
                                       {"weight-type", required_argument, 0, 'W'},
                                       {"compute", required_argument, 0, 'K'},
                                       {"bandwidth", no_argument, 0, 'B'},
                                       {"runs", required_argument, 0, 'r'},
                                       {"warmup", required_argument, 0, 'w'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {"chunking", required_argument, 0, 'C'},
                                       {"vad-model", required_argument, 0, 'V'},
                                       {"word-timestamps", no_argument, 0, 'T'},
                                       {"peak", no_argument, 0, 'P'},
                                       {"diarize", no_argument, 0, 'D'},
                                       {"diarize-voice", required_argument, 0, 'v'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:t:h", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
            case 'm': o.model = optarg; break;
            case 't': bad = hvt_parse_int(optarg, 1, 256, &o.threads); break;
            case 'b': bad = hvt_parse_int(optarg, 1, HV_MAX_BEAMS, &o.beams); break;
            case 'n': bad = hvt_parse_int(optarg, 1, 1 << 20, &o.max_tokens); break;
            case 'r': bad = hvt_parse_int(optarg, 1, 100000, &o.runs); break;
            case 'w': bad = hvt_parse_int(optarg, 0, 100000, &o.warmup); break;
            case 'W': o.weight_type = optarg; break;
            case 'K': bad = hv_compute_parse(optarg, &o.compute_mode); break;
            case 'C':
                bad = hv_chunking_parse(optarg, &o.chunking) || o.chunking == HV_CHUNKING_FIXED;
                break;
            case 'V': o.vad_model = optarg; break;
            case 'j': o.json = 1; break;
            case 'B': o.bandwidth = 1; break;
            case 'T': o.words = 1; break;
            case 'P': o.peak = 1; break;
            case 'D': o.diarize = 1; break;
            case 'v':
                if (hv_params_set(&named, "diarize_voice", optarg, err, sizeof err)) {
                    fprintf(stderr, "hviske-bench: %s\n", err);
                    return 2;
                }
                o.diarize_voice = named.diarize_voice;
                break;
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
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.threads;
    if (hv_weight_type_parse(o.weight_type, &mp.weight_type)) {
        fprintf(stderr, "hviske-bench: unknown weight type '%s'\n", o.weight_type);
        return 2;
    }
    mp.compute = o.compute_mode;
    hv_model *model;
    double t0 = hvt_now_s();
    if (hv_model_load(o.model, &mp, &model, err, sizeof err)) {
        fprintf(stderr, "hviske-bench: %s\n", err);
        return 1;
    }
    double load_ms = (hvt_now_s() - t0) * 1e3;
    hv_vad *vad = NULL;
    if (hvt_chunking_uses_vad(o.chunking) && hvt_load_vad(o.vad_model, &vad, err, sizeof err)) {
        fprintf(stderr, "hviske-bench: %s\n", err);
        hv_model_free(model);
        return 1;
    }
    cJSON *root = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(root, "files");
    /* the decoder's bound: its weights are read once per token */
    int bw_threads = o.threads ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    bw_probe probe = {0};
    if (o.bandwidth && bw_probe_new(&probe, bw_threads)) {
        fprintf(stderr, "hviske-bench: out of memory for the bandwidth probe\n");
        hv_vad_free(vad);
        hv_model_free(model);
        return 1;
    }
    double bw = o.bandwidth ? read_bandwidth_gbs(&probe) : 0;
    double dec_mb = hv_model_decoder_weight_bytes(model) / 1e6;
    if (o.bandwidth && !o.json)
        printf("memory read bandwidth %.1f GB/s: decoder weights %.1f MB -> bound %.3f ms/token\n",
               bw, dec_mb, dec_mb / 1e3 / bw * 1e3);
    if (o.bandwidth) {
        cJSON_AddNumberToObject(root, "read_bandwidth_gbs", bw);
        cJSON_AddNumberToObject(root, "token_bound_ms", dec_mb / 1e3 / bw * 1e3);
    }
    cJSON_AddNumberToObject(root, "decoder_weight_mb", dec_mb);
    if (!o.json)
        printf("model %s: loaded in %.1f ms, weights %s, %.1f MB (%.1f MB widened to bf16), "
               "compute %s, gemm %s, element-wise %s\n",
               o.model, load_ms, o.weight_type, hv_model_weight_bytes(model) / 1e6,
               hv_model_widened_weight_bytes(model) / 1e6, hv_compute_name(hv_model_compute(model)),
               hv_model_gemm(model), hv_ops_level_name(hv_ops_level()));
    int rc = 0;
    for (int i = optind; i < argc; i++)
        rc |= bench_file(model, vad, &o, o.bandwidth ? &probe : NULL, dec_mb, argv[i], files);
    if (o.json) {
        cJSON_AddStringToObject(root, "model", o.model);
        cJSON_AddNumberToObject(root, "threads", o.threads);
        cJSON_AddNumberToObject(root, "beams", o.beams);
        cJSON_AddNumberToObject(root, "load_ms", load_ms);
        cJSON_AddStringToObject(root, "weight_type", o.weight_type);
        cJSON_AddStringToObject(root, "compute", hv_compute_name(hv_model_compute(model)));
        cJSON_AddStringToObject(root, "gemm", hv_model_gemm(model));
        cJSON_AddStringToObject(root, "elementwise", hv_ops_level_name(hv_ops_level()));
        cJSON_AddNumberToObject(root, "weight_mb", hv_model_weight_bytes(model) / 1e6);
        cJSON_AddNumberToObject(root, "widened_weight_mb",
                                hv_model_widened_weight_bytes(model) / 1e6);
        cJSON_AddNumberToObject(root, "peak_rss_mb", peak_rss_mb());
        char *s = cJSON_PrintUnformatted(root);
        puts(s);
        free(s);
    } else {
        printf("peak resident memory: %.1f MB\n", peak_rss_mb());
    }
    cJSON_Delete(root);
    free(probe.buf);
    hv_vad_free(vad);
    hv_model_free(model);
    return rc;
}
