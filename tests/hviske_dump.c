/* hviske-dump: transcribes one file and writes the pipeline's intermediate
 * tensors as .npy files plus result.json (n_valid_frames, enc_len, prompt,
 * tokens, token_logprobs, score, text, bounds, segments), for the parity
 * tests against the PyTorch reference (format: docs/CONVENTIONS.md).
 * Dither defaults to 0 (--dither X; X < 0: the model's preprocessor.dither, as the
 * library's default). --beams N / --length-penalty X select beam search,
 * --repetition-penalty X / --no-repeat-ngram-size N the logits processors
 * (docs/DECODING.md); --diarize the diarize prompt (docs/DIARIZE.md);
 * --chunking MODE / --chunk-seconds S the long-audio chunking (docs/MODEL.md "Long audio"); the library validates them. For chunked
 * audio the tensors are those of the first chunk; "bounds" is the chunk
 * plan (hv_chunk_plan on samples.npy with the model's settings),
 * "windows" the [start, end) samples of each window transcribed (with
 * --diarize the chunks widened into their neighbours, else the chunks) and
 * "segments" the result's segments ({start_sample, end_sample, text,
 * tokens, token_logprobs, score}). --word-timestamps adds "words" (word,
 * start, end, probability, first_token, n_tokens) and attention.npy: the
 * first chunk's cross-attention that the word times came from, [voting
 * decoder layers x heads x tokens + 1 x encoder frames]. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/chunking.h"
#include "hviske.h"
#include "pipeline.h"

/* Writes a little-endian float32 array of the given shape as .npy 1.0. */
static int write_npy(const char *dir, const char *name, const float *x, int ndim,
                     const long *shape) {
    char path[4096], hdr[256], dims[128] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n = 1, used = 0;
    for (int i = 0; i < ndim; i++) {
        n *= (size_t)shape[i];
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%ld,%s", shape[i],
                                 i + 1 < ndim ? " " : "");
    }
    int len = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
                       dims);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned short hl = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f);
    fputc(hl >> 8, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    size_t w = fwrite(x, sizeof *x, n, f);
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static cJSON *int_array(const int32_t *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *float_array(const float *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static void usage(void) {
    fprintf(stderr, "usage: hviske-dump -m MODEL_DIR -o OUT_DIR [-l LANG] "
                    "[--no-punctuation] [--max-tokens N] [-t N] [--dither X]\n"
                    "                   [--beams N] [--length-penalty X] "
                    "[--repetition-penalty X] [--no-repeat-ngram-size N]\n"
                    "                   [--chunking auto|energy|fixed|none] "
                    "[--chunk-seconds S] [--word-timestamps] AUDIO\n");
}

int main(int argc, char **argv) {
    const char *model_dir = NULL, *out_dir = NULL;
    hv_transcribe_params tp = hv_transcribe_default_params();
    int threads = 0;
    tp.dither = 0.0f;
    static const struct option opts[] = {{"no-punctuation", no_argument, 0, 'P'},
                                         {"max-tokens", required_argument, 0, 'M'},
                                         {"dither", required_argument, 0, 'D'},
                                         {"beams", required_argument, 0, 'B'},
                                         {"length-penalty", required_argument, 0, 'L'},
                                         {"repetition-penalty", required_argument, 0, 'R'},
                                         {"no-repeat-ngram-size", required_argument, 0, 'N'},
                                         {"chunking", required_argument, 0, 'C'},
                                         {"chunk-seconds", required_argument, 0, 'S'},
                                         {"word-timestamps", no_argument, 0, 'W'},
                                         {"diarize", no_argument, 0, 'Z'},
                                         {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "m:o:l:t:", opts, NULL)) != -1) {
        switch (ch) {
            case 'm': model_dir = optarg; break;
            case 'o': out_dir = optarg; break;
            case 'l': tp.language = optarg; break;
            case 't': threads = atoi(optarg); break;
            case 'P': tp.punctuation = 0; break;
            case 'M': tp.max_new_tokens = atoi(optarg); break;
            case 'D': tp.dither = strtof(optarg, NULL); break;
            case 'B': tp.num_beams = atoi(optarg); break;
            case 'L': tp.length_penalty = strtof(optarg, NULL); break;
            case 'R': tp.repetition_penalty = strtof(optarg, NULL); break;
            case 'N': tp.no_repeat_ngram_size = atoi(optarg); break;
            case 'C':
                if (hv_chunking_parse(optarg, &tp.chunking)) {
                    fprintf(stderr, "hviske-dump: unknown chunking '%s'\n", optarg);
                    return 2;
                }
                break;
            case 'S': tp.chunk_seconds = strtof(optarg, NULL); break;
            case 'W': tp.word_timestamps = 1; break;
            case 'Z': tp.diarize = 1; break;
            default: usage(); return 2;
        }
    }
    if (!model_dir || !out_dir || optind != argc - 1) {
        usage();
        return 2;
    }
    const char *audio = argv[optind];
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        perror(out_dir);
        return 1;
    }

    char err[1024];
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = threads;
    mp.compute = HV_COMPUTE_F32; /* the reference's arithmetic: parity token for token */
    hv_model *model;
    if (hv_model_load(model_dir, &mp, &model, err, sizeof err)) {
        fprintf(stderr, "hviske-dump: %s\n", err);
        return 1;
    }
    float *pcm;
    size_t n_frames;
    int rate, channels;
    if (hv_audio_read(audio, &pcm, &n_frames, &rate, &channels, err, sizeof err)) {
        fprintf(stderr, "hviske-dump: %s\n", err);
        hv_model_free(model);
        return 1;
    }
    hv_context *ctx = NULL;
    hv_context_new(model, threads, &ctx, err, sizeof err);
    hv_result *res = NULL;
    hv_taps taps;
    int rc = 1;
    if (!ctx) {
        fprintf(stderr, "hviske-dump: %s\n", err);
    } else if (hv_transcribe_taps(ctx, pcm, n_frames, rate, channels, &tp, &res, &taps)) {
        fprintf(stderr, "hviske-dump: %s: %s\n", audio, hv_context_error(ctx));
    } else {
        const hv_config *c = &model->cfg;
        long s1[1] = {(long)taps.n_samples};
        long s2[2] = {taps.n_frames, c->n_mels};
        long s3[2] = {taps.n_enc, c->dec_hidden};
        long s4[1] = {c->vocab_size};
        rc = write_npy(out_dir, "samples.npy", taps.samples, 1, s1) ||
             write_npy(out_dir, "features.npy", taps.features, 2, s2) ||
             write_npy(out_dir, "encoder.npy", taps.enc, 2, s3) ||
             write_npy(out_dir, "logprobs0.npy", taps.logprobs0, 1, s4);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "n_valid_frames", taps.n_valid);
        cJSON_AddNumberToObject(j, "enc_len", taps.enc_len);
        cJSON_AddItemToObject(j, "prompt", int_array(taps.prompt, taps.n_prompt));
        cJSON_AddItemToObject(j, "tokens",
                              int_array(hv_result_tokens(res), hv_result_n_tokens(res)));
        cJSON_AddItemToObject(j, "token_logprobs",
                              float_array(hv_result_token_logprobs(res), hv_result_n_tokens(res)));
        cJSON_AddNumberToObject(j, "score", hv_result_score(res));
        cJSON_AddStringToObject(j, "text", hv_result_text(res));
        /* the chunk plan, as the library makes it (transcribe.c) */
        hv_chunk_plan_params cp = hv_chunk_params(c, &tp);
        size_t *bounds = NULL;
        int n_chunks = 0;
        hv_error pe = {0};
        cJSON *b = cJSON_CreateArray();
        if (hv_chunk_plan(taps.samples, taps.n_samples, &cp, &bounds, &n_chunks, &pe) == HV_OK)
            for (int i = 0; i <= n_chunks; i++)
                cJSON_AddItemToArray(b, cJSON_CreateNumber((double)bounds[i]));
        else {
            fprintf(stderr, "hviske-dump: chunk plan: %s\n", pe.msg);
            rc = 1;
        }
        cJSON_AddItemToObject(j, "bounds", b);
        /* the windows transcribed: with diarize, the chunks widened into
         * their neighbours (transcribe.c) */
        hv_piece_plan plan = {0};
        size_t *cuts = NULL;
        cJSON *wins = cJSON_CreateArray();
        if (bounds && (hv_piece_plan_from_bounds(bounds, n_chunks, &plan, &pe) ||
                       hv_diar_windows(c, &tp, &plan, &cuts, &pe))) {
            fprintf(stderr, "hviske-dump: window plan: %s\n", pe.msg);
            rc = 1;
        }
        for (int i = 0; i < plan.n_chunks; i++) {
            cJSON *w = cJSON_CreateArray();
            cJSON_AddItemToArray(w, cJSON_CreateNumber((double)plan.pieces[plan.first[i]].start));
            cJSON_AddItemToArray(
                w, cJSON_CreateNumber((double)plan.pieces[plan.first[i + 1] - 1].end));
            cJSON_AddItemToArray(wins, w);
        }
        hv_piece_plan_free(&plan);
        free(cuts);
        free(bounds);
        cJSON_AddItemToObject(j, "windows", wins);
        cJSON *segs = cJSON_CreateArray();
        for (int i = 0; i < hv_result_n_segments(res); i++) {
            hv_segment g = hv_result_segment(res, i);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "start_sample", (double)g.start_sample);
            cJSON_AddNumberToObject(o, "end_sample", (double)g.end_sample);
            cJSON_AddNumberToObject(o, "start", g.start);
            cJSON_AddNumberToObject(o, "end", g.end);
            cJSON_AddStringToObject(o, "text", g.text);
            cJSON_AddItemToObject(o, "tokens", int_array(g.tokens, g.n_tokens));
            cJSON_AddItemToObject(o, "token_logprobs", float_array(g.token_logprobs, g.n_tokens));
            cJSON_AddNumberToObject(o, "score", g.score);
            cJSON_AddItemToArray(segs, o);
        }
        cJSON_AddItemToObject(j, "segments", segs);
        if (tp.word_timestamps) {
            cJSON *words = cJSON_CreateArray();
            const hv_word *w = hv_result_words(res);
            for (int i = 0; i < hv_result_n_words(res); i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "word", w[i].text);
                cJSON_AddNumberToObject(o, "start", w[i].start);
                cJSON_AddNumberToObject(o, "end", w[i].end);
                cJSON_AddNumberToObject(o, "probability", w[i].probability);
                cJSON_AddNumberToObject(o, "first_token", w[i].first_token);
                cJSON_AddNumberToObject(o, "n_tokens", w[i].n_tokens);
                cJSON_AddItemToArray(words, o);
            }
            cJSON_AddItemToObject(j, "words", words);
            cJSON_AddNumberToObject(j, "frame_s",
                                    (double)c->hop_length * c->sub_factor / c->sample_rate);
            long s5[4] = {taps.attn_layers, c->dec_heads, taps.attn_rows, taps.attn_frames};
            if (taps.attn && write_npy(out_dir, "attention.npy", taps.attn, 4, s5)) rc = 1;
        }
        cJSON_AddNumberToObject(j, "duration", hv_result_duration(res));
        cJSON_AddStringToObject(j, "language", hv_result_language(res));
        char *s = cJSON_PrintUnformatted(j);
        char path[4096];
        snprintf(path, sizeof path, "%s/result.json", out_dir);
        FILE *f = fopen(path, "w");
        if (!f || !s || fputs(s, f) < 0) rc = 1;
        if (f && fclose(f) != 0) rc = 1;
        free(s);
        cJSON_Delete(j);
        if (rc) fprintf(stderr, "hviske-dump: cannot write to %s\n", out_dir);
        hv_taps_free(&taps);
    }
    hv_result_free(res);
    hv_context_free(ctx);
    hv_free(pcm);
    hv_model_free(model);
    return rc;
}
