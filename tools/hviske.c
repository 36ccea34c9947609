/*
 * hviske: the command-line program.
 *
 *     hviske -m MODEL_DIR [options] FILE...
 *
 * Loads the model once, makes one context, then reads and transcribes each
 * input in order ("-" is a WAV or other audio file on standard input).
 * Audio is cut into chunks (--chunking): by default only the speech that
 * the speech detector finds (docs/VAD.md) is transcribed, in chunks of at
 * most one model window; each chunk with a transcript is a segment with
 * start and end times on the input's timeline.
 *
 * Output (--format): txt (the transcript, one line per input), jsonl (one
 * JSON object per line per input; --json is its shorthand), json (one
 * indented JSON document), srt or vtt (subtitles: readable cues of the
 * words, timed by word). --word-timestamps adds the words to JSON.
 * It goes to standard output, to -o FILE, or with --output-dir DIR to one
 * file per input named after it. Files are written to a temporary file in
 * the same directory and renamed into place when complete, so an
 * interrupted or failed run never leaves a partial output file.
 * --stream writes each segment to standard output as soon as it is final
 * (the library's segment callback) instead of the whole result at the end.
 *
 * Archive batches (docs/SCALING.md): --files-from LIST names the inputs,
 * --shard K/N (or a Slurm array's or Kubernetes Indexed Job's environment)
 * keeps one task's share of them, --skip-existing passes over inputs whose
 * output file is there, --summary appends a JSON line per input.
 *
 * A failing input is reported on stderr ("hviske: FILE: message") and the
 * others go on. Exit status: 0 all inputs done, 1 an input, the model or
 * the output failed, 2 the command line is wrong.
 *
 * Built on the public API (hviske.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "batch.h"
#include "hviske.h"
#include "subtitles.h"
#include "tool_util.h"

static const char PROG[] = "hviske";

typedef enum out_format { FMT_TXT, FMT_JSONL, FMT_JSON, FMT_SRT, FMT_VTT, N_FORMATS } out_format;
static const char *const FORMAT_NAMES[N_FORMATS] = {"txt", "jsonl", "json", "srt", "vtt"};

/* Formats that hold one result per line, so that several inputs can share
 * one stream; the others are one document per input. */
static int format_is_stream(out_format f) { return f == FMT_TXT || f == FMT_JSONL; }

typedef struct options {
    const char *model_dir;
    const char *language;       /* NULL: the library's default */
    int punctuation;            /* 1 unless --no-punctuation */
    int n_threads;              /* 0: all cores */
    hv_weight_type weight_type; /* HV_WEIGHTS_AUTO: the checkpoint's own */
    hv_compute compute;         /* HV_COMPUTE_AUTO: by the CPU */
    int max_tokens;             /* 0: the model's default */
    float dither;               /* < 0: the model's config value */
    int num_beams;              /* 1: greedy or sampling */
    float length_penalty;       /* beam search */
    int do_sample;
    float temperature; /* sampling */
    int top_k;
    float top_p;
    uint64_t seed;
    hv_chunking chunking;
    float chunk_seconds;   /* 0: not given */
    const char *vad_model; /* --vad-model; NULL: hvt_load_vad's search */
    hv_vad_params vad;     /* speech regions from probabilities */
    float vad_max_gap_s;   /* a pause this long always ends a chunk */
    out_format format;
    int word_timestamps; /* --word-timestamps (srt and vtt compute them anyway) */
    hvt_cue_params cues; /* srt, vtt: --max-cue-seconds, --max-lines, ... */
    const char *output;  /* -o FILE; NULL or "-": standard output */
    const char *output_dir;
    int stream; /* --stream: each segment on stdout as it is final */
    int quiet;
    char **files; /* argv tail, or this shard's entries of list */
    int n_files;
    char **out_paths; /* --output-dir: one per input */
    /* archive batches (docs/SCALING.md) */
    const char *files_from;      /* --files-from LIST; "-": standard input */
    char **list;                 /* its entries, all of them (owned) */
    int n_list;                  /* the list's entries */
    hvt_shard shard;             /* n == 0: every input */
    int shard_count;             /* --shard-count N; 0: not given */
    const char *shard_count_env; /* --shard-count-env VAR */
    int skip_existing;           /* --skip-existing */
    const char *summary;         /* --summary FILE */
} options;

static void usage(FILE *f) {
    fprintf(f, "Usage: hviske -m MODEL_DIR [options] FILE...\n"
               "       hviske -m MODEL_DIR [options] --files-from LIST\n"
               "Transcribes audio files (WAV, FLAC, OGG/Opus, MP3, ...; '-' reads\n"
               "one from standard input) to text. By default one line per file on\n"
               "stdout, in order (line breaks inside a transcript become spaces);\n"
               "errors go to stderr.\n"
               "\n"
               "  -m, --model DIR        checkpoint directory (config.json,\n"
               "                         tokenizer.model, model.safetensors, ...)\n"
               "  -l, --language LANG    language code (default: da if the model\n"
               "                         supports it, else its first language)\n"
               "      --no-punctuation   ask for text without punctuation\n"
               "  -t, --threads N        worker threads, 1..256 (default: all cores)\n"
               "      --weight-type T    auto (default: the checkpoint's own type,\n"
               "                         read in place), f32, f16, bf16, q8_0 or\n"
               "                         q4_0\n"
               "      --compute MODE     auto (default: bf16 where the CPU has\n"
               "                         native bf16 and the weights 16 bits or\n"
               "                         fewer, else f32), f32 or bf16\n"
               "      --max-tokens N     stop each chunk after N generated tokens\n"
               "                         (N >= 1)\n"
               "      --dither X         dither amount, X >= 0 (default: the\n"
               "                         model's; 0 turns it off)\n"
               "  -q, --quiet            no progress display and no warnings\n"
               "\n"
               "Long audio and speech detection:\n"
               "      --chunking MODE    auto (default) = vad: only the speech the\n"
               "                         detector finds is transcribed, in chunks\n"
               "                         of up to the model's clip length cut in\n"
               "                         the longest pauses (no text for silence or\n"
               "                         noise); energy: all audio, up to 30 s in\n"
               "                         one piece, longer cut at the quietest\n"
               "                         moment near each chunk limit; fixed: cut\n"
               "                         every --chunk-seconds; none: one piece (an\n"
               "                         error when too long)\n"
               "      --chunk-seconds S  chunk length for --chunking fixed (S > 0,\n"
               "                         at most the model's max_audio_clip_s)\n" HVT_VAD_USAGE "\n"
               "Output:\n"
               "      --format F         txt (default): the transcript, one line\n"
               "                         per file; jsonl: one JSON object per line\n"
               "                         per file (file, text, tokens,\n"
               "                         token_logprobs, score, timings, segments);\n"
               "                         json: one indented JSON document per file\n"
               "                         (adds language and duration); srt, vtt:\n"
               "                         subtitles, cues of whole sentences or\n"
               "                         clauses timed by word (docs/CLI.md)\n"
               "      --json             same as --format jsonl\n"
               "      --word-timestamps  json, jsonl: add \"words\" (word, start, end,\n"
               "                         probability) to each result and segment\n" HVT_CUE_USAGE
               "  -o, --output FILE      write to FILE instead of stdout ('-':\n"
               "                         stdout); with several inputs only for txt\n"
               "                         and jsonl (one line per input)\n"
               "      --output-dir DIR   one output file per input in DIR, named\n"
               "                         after it with the format's extension\n"
               "                         (rec.wav -> DIR/rec.srt; '-' -> stdin.srt)\n"
               "      --stream           each segment on stdout as soon as it is final:\n"
               "                         txt: its text (the line ends with the file);\n"
               "                         jsonl: {\"file\", \"segment\"} per segment,\n"
               "                         then the file's whole result; srt, vtt: its\n"
               "                         cues (standard output only)\n"
               "\n"
               "Archive batches (docs/SCALING.md):\n"
               "      --files-from LIST  the inputs, one path per line ('-': read the\n"
               "                         list from stdin), instead of FILE operands\n"
               "      --shard K/N        only the inputs at positions i with\n"
               "                         i mod N = K (K counts from 0); with\n"
               "                         --files-from and no --shard, the shard comes\n"
               "                         from SLURM_ARRAY_TASK_ID/_COUNT/_MIN, or from\n"
               "                         JOB_COMPLETION_INDEX with one of:\n"
               "      --shard-count N    the number of shards (Indexed Job completions)\n"
               "      --shard-count-env VAR  the variable holding that number\n"
               "      --skip-existing    with --output-dir: inputs whose output file\n"
               "                         exists are not redone\n"
               "      --summary FILE     append one JSON line per input: input, output,\n"
               "                         status (ok, skipped, error), error,\n"
               "                         audio_seconds, processing_seconds\n"
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
               "Output files are written whole or not at all (a temporary file in\n"
               "the same directory, renamed when complete). Progress (percentage,\n"
               "speed, time left) is shown on stderr when it is a terminal.\n"
               "\n"
               "Exit status: 0 success, 1 a file, the model or the output failed,\n"
               "2 bad usage.\n");
}

/* --format NAME; 0 if it is one of FORMAT_NAMES. */
static int parse_format(const char *arg, void *value) {
    for (int f = 0; f < N_FORMATS; f++)
        if (strcmp(arg, FORMAT_NAMES[f]) == 0) {
            *(out_format *)value = (out_format)f;
            return 0;
        }
    return -1;
}

static int parse_weight_type(const char *arg, void *value) {
    return hv_weight_type_parse(arg, value);
}

/* The options; OPTIONS[O_X] is --x. Flags are only recorded in given[]. */
enum {
    O_MODEL,
    O_LANGUAGE,
    O_NO_PUNCT,
    O_THREADS,
    O_WEIGHT_TYPE,
    O_COMPUTE,
    O_MAX_TOKENS,
    O_DITHER,
    O_QUIET,
    O_CHUNKING,
    O_CHUNK_SECONDS,
    HVT_VAD_OPTION_IDS,
    O_FORMAT,
    O_JSON,
    O_WORD_TIMESTAMPS,
    O_STREAM,
    HVT_CUE_OPTION_IDS,
    O_OUTPUT,
    O_OUTPUT_DIR,
    O_FILES_FROM,
    O_SHARD,
    O_SHARD_COUNT,
    O_SHARD_COUNT_ENV,
    O_SKIP_EXISTING,
    O_SUMMARY,
    O_BEAMS,
    O_LENGTH_PENALTY,
    O_SAMPLE,
    O_TEMPERATURE,
    O_TOP_K,
    O_TOP_P,
    O_SEED,
    O_HELP,
    O_VERSION,
    N_OPTS
};

#define AT(field) offsetof(options, field)
static const hvt_option OPTIONS[N_OPTS] = {
    [O_MODEL] = HVT_OPT_STRING("model", 'm', AT(model_dir)),
    [O_LANGUAGE] = HVT_OPT_STRING("language", 'l', AT(language)),
    [O_NO_PUNCT] = HVT_OPT_FLAG("no-punctuation", 0),
    [O_THREADS] = HVT_OPT_THREADS(AT(n_threads)),
    [O_WEIGHT_TYPE] = HVT_OPT_CUSTOM("weight-type", AT(weight_type), parse_weight_type,
                                     "auto, f32, f16, bf16, q8_0 or q4_0"),
    [O_COMPUTE] = HVT_OPT_COMPUTE(AT(compute)),
    [O_MAX_TOKENS] =
        HVT_OPT("max-tokens", 0, HVT_INT, AT(max_tokens), 1, INT_MAX, "an integer >= 1"),
    [O_DITHER] = HVT_OPT("dither", 0, HVT_FLOAT, AT(dither), 0, INFINITY, "a finite number >= 0"),
    [O_QUIET] = HVT_OPT_FLAG("quiet", 'q'),
    [O_CHUNKING] = HVT_OPT_CHUNKING(AT(chunking)),
    [O_CHUNK_SECONDS] = HVT_OPT("chunk-seconds", 0, HVT_FLOAT_ABOVE, AT(chunk_seconds), 0, INFINITY,
                                "a finite number > 0"),
    HVT_VAD_OPTION_ROWS(options),
    [O_FORMAT] = HVT_OPT_CUSTOM("format", AT(format), parse_format, "txt, json, jsonl, srt or vtt"),
    [O_JSON] = HVT_OPT_FLAG("json", 0),
    [O_WORD_TIMESTAMPS] = HVT_OPT_FLAG("word-timestamps", 0),
    [O_STREAM] = HVT_OPT_FLAG("stream", 0),
    HVT_CUE_OPTION_ROWS(options),
    [O_OUTPUT] =
        HVT_OPT_NONEMPTY("output", 'o', AT(output), "a file name, or - for standard output"),
    [O_OUTPUT_DIR] = HVT_OPT_NONEMPTY("output-dir", 0, AT(output_dir), "a directory"),
    [O_FILES_FROM] = HVT_OPT_NONEMPTY("files-from", 0, AT(files_from),
                                      "a file listing the inputs, or - for standard input"),
    [O_SHARD] = HVT_OPT_CUSTOM("shard", AT(shard), hvt_parse_shard,
                               "K/N: integers with N >= 1 and 0 <= K < N, shards counted from 0"),
    [O_SHARD_COUNT] =
        HVT_OPT("shard-count", 0, HVT_INT, AT(shard_count), 1, INT_MAX, "an integer >= 1"),
    [O_SHARD_COUNT_ENV] = HVT_OPT_NONEMPTY("shard-count-env", 0, AT(shard_count_env),
                                           "the name of an environment variable"),
    [O_SKIP_EXISTING] = HVT_OPT_FLAG("skip-existing", 0),
    [O_SUMMARY] = HVT_OPT_NONEMPTY("summary", 0, AT(summary), "a file name"),
    /* no HV_MAX_BEAMS here: the library names the limit when it refuses */
    [O_BEAMS] = HVT_OPT("beams", 0, HVT_INT, AT(num_beams), 1, INT_MAX, "an integer >= 1"),
    [O_LENGTH_PENALTY] = HVT_OPT("length-penalty", 0, HVT_FLOAT_ABOVE, AT(length_penalty), 0,
                                 INFINITY, "a finite number > 0"),
    [O_SAMPLE] = HVT_OPT_FLAG("sample", 0),
    [O_TEMPERATURE] = HVT_OPT("temperature", 0, HVT_FLOAT_ABOVE, AT(temperature), 0, INFINITY,
                              "a finite number > 0"),
    [O_TOP_K] = HVT_OPT("top-k", 0, HVT_INT, AT(top_k), 0, INT_MAX, "an integer >= 0"),
    [O_TOP_P] = HVT_OPT("top-p", 0, HVT_FLOAT_ABOVE, AT(top_p), 0, 1, "a number > 0 and <= 1"),
    [O_SEED] = HVT_OPT("seed", 0, HVT_U64, AT(seed), 0, 0, "an integer 0..18446744073709551615"),
    [O_HELP] = HVT_OPT_HELP,
    [O_VERSION] = HVT_OPT_VERSION,
};
#undef AT

/* DIR/NAME.EXT for an input: its base name with the last extension
 * replaced by ext ("rec.wav" -> "rec.EXT", "rec" -> "rec.EXT",
 * ".hidden" -> ".hidden.EXT"); standard input ("-") is "stdin.EXT".
 * malloc'ed; NULL when out of memory. */
static char *output_path_for(const char *dir, const char *input, const char *ext) {
    const char *base = "stdin";
    size_t blen = 5;
    if (strcmp(input, "-") != 0) {
        const char *slash = strrchr(input, '/');
        base = slash ? slash + 1 : input;
        blen = strlen(base);
        const char *dot = strrchr(base, '.');
        if (dot && dot != base) blen = (size_t)(dot - base);
    }
    size_t dlen = strlen(dir);
    const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/";
    size_t n = dlen + 1 + blen + 1 + strlen(ext) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%.*s.%s", dir, sep, (int)blen, base, ext);
    return p;
}

/* The options that cannot go together, in the order they are reported;
 * -1 when none, otherwise the exit status. */
static int check_combinations(options *o, const int *given) {
    if (given[O_JSON]) {
        if (given[O_FORMAT] && o->format != FMT_JSONL)
            return hvt_usage_error(PROG,
                                   "--json (= --format jsonl) and "
                                   "--format %s cannot be combined",
                                   FORMAT_NAMES[o->format]);
        o->format = FMT_JSONL;
    }
    if (o->do_sample && o->num_beams > 1)
        return hvt_usage_error(PROG,
                               "--sample and --beams %d cannot be "
                               "combined (sampling uses one beam)",
                               o->num_beams);
    if (o->chunking == HV_CHUNKING_FIXED && o->chunk_seconds == 0.0f)
        return hvt_usage_error(PROG, "--chunking fixed needs "
                                     "--chunk-seconds S");
    if (o->output && o->output_dir)
        return hvt_usage_error(PROG, "--output and --output-dir cannot be "
                                     "combined");
    if (o->stream && o->format == FMT_JSON)
        return hvt_usage_error(PROG, "--stream works with --format txt, jsonl, srt or vtt "
                                     "(json is one document per input)");
    if (o->stream && ((o->output && strcmp(o->output, "-") != 0) || o->output_dir))
        return hvt_usage_error(PROG, "--stream writes to standard output; output files are "
                                     "written whole (drop --stream, or -o/--output-dir)");
    if (!o->model_dir) return hvt_usage_error(PROG, "no model given (use -m MODEL_DIR)");
    if (o->skip_existing && !o->output_dir)
        return hvt_usage_error(PROG, "--skip-existing needs --output-dir DIR (it looks for "
                                     "the output files there)");
    if (given[O_SHARD_COUNT] && given[O_SHARD_COUNT_ENV])
        return hvt_usage_error(PROG, "--shard-count and --shard-count-env cannot be combined");
    if (given[O_SHARD] && (given[O_SHARD_COUNT] || given[O_SHARD_COUNT_ENV]))
        return hvt_usage_error(PROG, "--shard K/N gives the count itself: no --%s with it",
                               given[O_SHARD_COUNT] ? "shard-count" : "shard-count-env");
    if (!o->files_from && (given[O_SHARD_COUNT] || given[O_SHARD_COUNT_ENV]))
        return hvt_usage_error(PROG,
                               "--%s only applies with --files-from (the shard taken "
                               "from the environment)",
                               given[O_SHARD_COUNT] ? "shard-count" : "shard-count-env");
    return -1;
}

/* A list or a shard from the environment that cannot be used: the
 * message, and the usage exit status (found before the model loads). */
static int batch_error(const char *msg) {
    fprintf(stderr, "hviske: %s\n", msg);
    return HVT_EXIT_USAGE;
}

/* Keeps the inputs of o->shard (all when there is none) in o->files and
 * o->out_paths, in their order; -1 to go on, 1 when out of memory. */
static int select_shard(options *o) {
    if (o->shard.n == 0) return -1;
    int m = 0;
    for (int i = 0; i < o->n_files; i++) {
        if (hvt_shard_has(&o->shard, i)) {
            o->files[m] = o->files[i];
            if (o->out_paths) o->out_paths[m] = o->out_paths[i];
            m++;
        } else if (o->out_paths) {
            free(o->out_paths[i]);
        }
    }
    if (!o->quiet)
        fprintf(stderr, "hviske: shard %d of %d (from %s): %d of %d inputs\n", o->shard.k,
                o->shard.n, o->shard.source, m, o->n_files);
    o->n_files = m;
    return -1;
}

/* Takes the inputs, argv[optind..], and with --output-dir their output
 * paths. -1 to go on, otherwise the exit status. */
static int take_inputs(options *o, int argc, char **argv, const int *given) {
    char **all = argv + optind;
    int n_all = argc - optind;
    if (o->files_from) {
        char err[1024];
        if (optind < argc)
            return hvt_usage_error(PROG,
                                   "--files-from %s and FILE operands cannot be combined "
                                   "(list every input)",
                                   o->files_from);
        if (hvt_read_list(o->files_from, &o->list, &o->n_list, err, sizeof err) != 0)
            return batch_error(err);
        all = o->list;
        n_all = o->n_list;
        if (!given[O_SHARD] &&
            hvt_shard_from_env(o->shard_count, o->shard_count_env, &o->shard, err, sizeof err) < 0)
            return batch_error(err);
    } else if (optind >= argc) {
        return hvt_usage_error(PROG, "no input files");
    }
    /* o->files: pointers into argv or the list, then only the shard's */
    o->files = malloc((size_t)n_all * sizeof *o->files);
    if (!o->files) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    memcpy(o->files, all, (size_t)n_all * sizeof *o->files);
    o->n_files = n_all;
    int n_stdin = 0;
    for (int i = 0; i < o->n_files; i++) n_stdin += strcmp(o->files[i], "-") == 0;
    if (n_stdin > 1) return hvt_usage_error(PROG, "'-' (standard input) given %d times", n_stdin);
    if (o->n_files > 1 && !o->output_dir && !format_is_stream(o->format))
        return hvt_usage_error(PROG,
                               "--format %s writes one document per "
                               "input: with %d inputs use --output-dir DIR",
                               FORMAT_NAMES[o->format], o->n_files);
    if (!o->output_dir) return select_shard(o);
    o->out_paths = calloc((size_t)o->n_files, sizeof *o->out_paths);
    if (!o->out_paths) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < o->n_files; i++) {
        o->out_paths[i] = output_path_for(o->output_dir, o->files[i], FORMAT_NAMES[o->format]);
        if (!o->out_paths[i]) {
            fputs("hviske: out of memory\n", stderr);
            return 1;
        }
    }
    /* over the whole list, not only the shard: two tasks must never write
     * (or, with --skip-existing, take as done) the same file */
    int a, b, dup = hvt_first_duplicate(o->out_paths, o->n_files, &a, &b);
    if (dup < 0) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    if (dup)
        return hvt_usage_error(PROG,
                               "inputs '%s' and '%s' would "
                               "both write %s",
                               o->files[a], o->files[b], o->out_paths[a]);
    return select_shard(o);
}

/* Options of a mode that is off are harmless but probably not what was
 * meant: say so, and go on. Of the sampling options, the last one given
 * is named. */
static void warn_ignored(const options *o, const int *given) {
    static const int sampling[] = {O_TEMPERATURE, O_TOP_K, O_TOP_P, O_SEED};
    int last = -1;
    for (size_t k = 0; k < sizeof sampling / sizeof *sampling; k++)
        if (given[sampling[k]] && (last < 0 || given[sampling[k]] > given[last]))
            last = sampling[k];
    if (last >= 0 && !o->do_sample)
        fprintf(stderr,
                "hviske: warning: --%s has no effect without "
                "--sample\n",
                OPTIONS[last].name);
    if (given[O_LENGTH_PENALTY] && o->num_beams <= 1)
        fprintf(stderr, "hviske: warning: --length-penalty has no effect "
                        "without --beams N (N > 1)\n");
    if (o->chunk_seconds > 0.0f && o->chunking != HV_CHUNKING_FIXED)
        fprintf(stderr, "hviske: warning: --chunk-seconds has no effect "
                        "without --chunking fixed\n");
    for (int k = O_MAX_CUE_SECONDS; k <= O_MAX_LINE_CHARS; k++)
        if (given[k] && o->format != FMT_SRT && o->format != FMT_VTT) {
            fprintf(stderr, "hviske: warning: --%s has no effect with --format %s\n",
                    OPTIONS[k].name, FORMAT_NAMES[o->format]);
            break;
        }
    if (given[O_WORD_TIMESTAMPS] && o->format != FMT_JSON && o->format != FMT_JSONL)
        fprintf(stderr, "hviske: warning: --word-timestamps has no effect with --format %s%s\n",
                FORMAT_NAMES[o->format],
                o->format == FMT_TXT ? "" : " (subtitles are timed by word anyway)");
    for (int k = O_VAD_MODEL; k <= O_VAD_MAX_GAP; k++)
        if (given[k] && !hvt_chunking_uses_vad(o->chunking)) {
            fprintf(stderr,
                    "hviske: warning: --%s has no effect with "
                    "--chunking %s\n",
                    OPTIONS[k].name,
                    o->chunking == HV_CHUNKING_ENERGY  ? "energy"
                    : o->chunking == HV_CHUNKING_FIXED ? "fixed"
                                                       : "none");
            break;
        }
}

/* Fills o from argv. Returns -1 to go on, otherwise the exit status
 * (0 after --help or --version). */
static int parse_options(int argc, char **argv, options *o) {
    static const hvt_cli cli = {PROG, usage, OPTIONS, N_OPTS};
    hv_transcribe_params defaults = hv_transcribe_default_params();
    *o = (options){.dither = -1.0f,
                   .num_beams = defaults.num_beams,
                   .length_penalty = defaults.length_penalty,
                   .temperature = defaults.temperature,
                   .top_k = defaults.top_k,
                   .top_p = defaults.top_p,
                   .seed = defaults.seed,
                   .chunking = defaults.chunking,
                   .vad = defaults.vad_params,
                   .vad_max_gap_s = defaults.vad_max_gap_s,
                   .cues = hvt_cue_default_params(),
                   .format = FMT_TXT};
    int given[N_OPTS];
    int rc = hvt_parse_options(&cli, argc, argv, o, given);
    if (rc >= 0) return rc;
    o->punctuation = !given[O_NO_PUNCT];
    o->do_sample = given[O_SAMPLE] != 0;
    o->quiet = given[O_QUIET] != 0;
    o->word_timestamps = given[O_WORD_TIMESTAMPS] != 0;
    o->stream = given[O_STREAM] != 0;
    o->skip_existing = given[O_SKIP_EXISTING] != 0;
    if ((rc = check_combinations(o, given)) >= 0 || (rc = take_inputs(o, argc, argv, given)) >= 0)
        return rc;
    if (!o->quiet) warn_ignored(o, given);
    return -1;
}

/* The last failure of an input, as printed after "hviske: ", for the
 * run summary (--summary). */
static char g_error[1536];

/* Prints "hviske: <message>" on stderr and keeps the message in g_error. */
#if defined(__GNUC__)
static void errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
static void errorf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hviske: %s\n", g_error);
}

/* Prints "hviske: FILE: msg", without repeating FILE when msg already
 * starts with it (library messages about files name them). */
static void file_error(const char *path, hv_status status, const char *msg) {
    if (!msg || !*msg) msg = hv_status_name(status);
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':')
        errorf("%s", msg);
    else
        errorf("%s: %s", path, msg);
}

/* Milliseconds rounded to the microsecond, so JSON shows 1.507, not
 * 1.5070889999624342. */
static double ms3(double ms) { return round(ms * 1000.0) / 1000.0; }

/* ------------------------------------------------------ atomic output */

/* The temporary file being written, if any, for the signal handler: it
 * removes it so that an interrupted run leaves nothing behind. Set before
 * mkstemp fills in the name (a signal in between removes at most a name
 * that does not exist yet) and cleared after the rename (a signal in
 * between removes a name that no longer exists). */
static char g_tmp[PATH_MAX + 64];
static volatile sig_atomic_t g_tmp_set;

static void on_fatal_signal(int sig) {
    if (g_tmp_set) unlink(g_tmp); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig); /* die of the same signal, as the caller expects */
}

static void install_signal_handlers(void) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* keep "ignored" as it was (nohup, background jobs) */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* An output file written whole or not at all: a temporary file next to
 * `path` (same directory, so that rename is atomic), renamed onto path by
 * out_commit, removed by out_abort. */
typedef struct out_file {
    FILE *f;
    const char *path;
} out_file;

/* Opens a temporary file for path; 0 on success, else -1 with a message
 * on stderr. */
static int out_open(out_file *of, const char *path) {
    of->f = NULL;
    of->path = path;
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    int n = snprintf(g_tmp, sizeof g_tmp, "%.*s.%s.hviske-XXXXXX", (int)dlen, path, base);
    if (n < 0 || (size_t)n >= sizeof g_tmp) {
        errorf("%s: file name too long", path);
        return -1;
    }
    g_tmp_set = 1;
    int fd = mkstemp(g_tmp);
    if (fd < 0) {
        g_tmp_set = 0;
        errorf("%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    /* mkstemp makes it 0600; give the file the usual 0666 & ~umask */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(of->f = fdopen(fd, "w"))) {
        errorf("%s: cannot create: %s", path, strerror(errno));
        close(fd);
        unlink(g_tmp);
        g_tmp_set = 0;
        return -1;
    }
    return 0;
}

/* Drops the temporary file; path is left as it was. */
static void out_abort(out_file *of) {
    if (!of->f) return;
    fclose(of->f);
    of->f = NULL;
    unlink(g_tmp);
    g_tmp_set = 0;
}

/* Flushes the temporary file to disk and renames it onto path; 0 on
 * success, else -1 with a message (and the temporary file removed). */
static int out_commit(out_file *of) {
    FILE *f = of->f;
    int err = 0;
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
        err = errno ? errno : EIO;
    else if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        err = errno;
    of->f = NULL;
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    if (!err && rename(g_tmp, of->path) != 0) err = errno;
    if (err) {
        unlink(g_tmp);
        g_tmp_set = 0;
        errorf("%s: cannot write: %s", of->path, strerror(err));
        return -1;
    }
    g_tmp_set = 0;
    return 0;
}

/* 1 if a and b name the same existing file. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* ------------------------------------------------------ standard input */

/*
 * Reads an audio file (any format libsndfile reads) from standard input:
 * all of it into memory first, so that formats which need to seek work from
 * a pipe too, then decoded by the library with the same checks as a file.
 */
static hv_status read_stdin_audio(int rate, float **pcm, size_t *n_frames, char *err,
                                  size_t err_size) {
    *pcm = NULL;
    *n_frames = 0;
    if (isatty(STDIN_FILENO)) {
        snprintf(err, err_size,
                 "-: standard input is a terminal (pipe an "
                 "audio file into it)");
        return HV_ERR_INVALID_ARG;
    }
    unsigned char *data = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)1 << 20;
            unsigned char *nd = ncap > cap ? realloc(data, ncap) : NULL;
            if (!nd) {
                free(data);
                snprintf(err, err_size,
                         "-: out of memory reading standard "
                         "input");
                return HV_ERR_NOMEM;
            }
            data = nd;
            cap = ncap;
        }
        ssize_t r = read(STDIN_FILENO, data + size, cap - size);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, err_size, "-: cannot read standard input: %s", strerror(errno));
            free(data);
            return HV_ERR_IO;
        }
        if (r == 0) break;
        size += (size_t)r;
    }
    hv_status st =
        hv_audio_read_buffer_mono(data, size, "-", rate, 0, pcm, n_frames, err, err_size);
    free(data);
    return st;
}

/* Reads one input (a path, or "-" for standard input) as mono at `rate`
 * (the model's: decoded in blocks, so that memory is the mono samples
 * whatever the file's channels and rate); 0 on success, else -1 with the
 * failure reported. The caller frees *pcm with free(). */
static int read_input(const char *path, int rate, float **pcm, size_t *n_frames) {
    char err[1024] = "";
    hv_status st;
    if (strcmp(path, "-") == 0)
        st = read_stdin_audio(rate, pcm, n_frames, err, sizeof err);
    else
        st = hv_audio_read_mono(path, rate, 0, pcm, n_frames, err, sizeof err);
    if (st != HV_OK) {
        file_error(path, st, err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ formats */

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
    cJSON *a = hvt_json_words(w, n);
    if (a && cJSON_AddItemToObject(obj, "words", a)) return 1;
    cJSON_Delete(a);
    return 0;
}

/* The JSON object of one segment (start, end, text, tokens; words: its
 * words too). NULL when out of memory. */
static cJSON *segment_json(const hv_segment *g, int words) {
    char *st = hvt_utf8_clean(g->text);
    cJSON *so = cJSON_CreateObject(), *toks = NULL;
    int ok = st && so && cJSON_AddNumberToObject(so, "start", g->start) &&
             cJSON_AddNumberToObject(so, "end", g->end) &&
             cJSON_AddStringToObject(so, "text", st) &&
             (toks = json_int_array(g->tokens, g->n_tokens));
    if (ok && !cJSON_AddItemToObject(so, "tokens", toks))
        ok = 0; /* toks is not so's: delete it below */
    else if (ok)
        toks = NULL; /* so owns it now */
    cJSON_Delete(toks);
    if (ok && words) ok = add_words(so, g->words, g->n_words);
    free(st);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* The JSON object of one result. full (--format json) adds language and
 * duration, words (--word-timestamps) the words of the result and of each
 * segment. NULL when out of memory. */
static cJSON *result_json(const char *path, const hv_result *res, int full, int words) {
    hv_timings t = hv_result_timings(res);
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    char *file = hvt_utf8_clean(path);
    char *text = hvt_utf8_clean(hv_result_text(res));
    cJSON *obj = cJSON_CreateObject(), *arr = NULL, *lparr = NULL, *tim = NULL,
          *segs = cJSON_CreateArray();

    int ok = file && text && obj && segs && cJSON_AddStringToObject(obj, "file", file) &&
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
        ok =
            cJSON_AddItemToArray(arr, cJSON_CreateNumber(tokens[i])) &&
            cJSON_AddItemToArray(lparr, cJSON_CreateNumber(lps ? hvt_float_for_json(lps[i]) : 0.0));
    for (int i = 0; ok && i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        cJSON *so = segment_json(&g, words);
        if (!so || !cJSON_AddItemToArray(segs, so)) {
            cJSON_Delete(so);
            ok = 0;
        }
    }
    if (ok) ok = cJSON_AddItemToObject(obj, "segments", segs);
    if (!ok) {
        cJSON_Delete(segs);
        cJSON_Delete(obj);
        obj = NULL;
    }
    free(text);
    free(file);
    return obj;
}

/* Writes one result in the chosen format; 0 on success, -1 when out of
 * memory (write errors show in ferror(f)). */
static int write_result(FILE *f, const options *o, const char *path, const hv_result *res,
                        int rate) {
    out_format fmt = o->format;
    switch (fmt) {
        case FMT_TXT: hvt_put_line(f, hv_result_text(res)); return 0;
        case FMT_SRT:
        case FMT_VTT: return hvt_write_subtitles(f, res, rate, &o->cues, fmt == FMT_VTT);
        case FMT_JSON:
        case FMT_JSONL:
        default: {
            cJSON *obj = result_json(path, res, fmt == FMT_JSON, o->word_timestamps);
            char *s = !obj              ? NULL
                      : fmt == FMT_JSON ? cJSON_Print(obj)
                                        : cJSON_PrintUnformatted(obj);
            cJSON_Delete(obj);
            if (!s) return -1;
            fputs(s, f);
            fputc('\n', f);
            cJSON_free(s);
            return 0;
        }
    }
}

/* ------------------------------------------------------------ progress */

typedef struct progress {
    const char *name;
    double t0; /* seconds, monotonic */
    int shown;
} progress;

/* "1h02m03s", "2m03s", "45s". */
static void format_duration(char *buf, size_t n, double s) {
    long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

/* The library's progress callback: one status line on stderr, redrawn in
 * place after each chunk (only installed when stderr is a terminal). */
static void on_progress(void *user, double done, double total) {
    progress *p = user;
    if (!(total > 0) || done >= total) return; /* the last chunk: the caller clears the line */
    double elapsed = hvt_now_s() - p->t0;
    double speed = elapsed > 0 ? done / elapsed : 0;
    char d[32], t[32], eta[32];
    format_duration(d, sizeof d, done);
    format_duration(t, sizeof t, total);
    format_duration(eta, sizeof eta, speed > 0 ? (total - done) / speed : 0);
    fprintf(stderr,
            "\r\033[Khviske: %s: %3.0f%% (%s of %s), %.1f s of "
            "audio per second, ETA %s",
            p->name, 100.0 * done / total, d, t, speed, eta);
    fflush(stderr);
    p->shown = 1;
}

/* ------------------------------------------------------------ streaming */

/* The language of inputs without -l (the library's default), for how
 * --stream joins segments in txt (no space for ja and zh). */
static const char *g_language = "";

/* --stream: where the segments of one input go as they come (stdout). */
typedef struct stream_out {
    const options *o;
    char *file;   /* the input's name, cleaned (jsonl) */
    progress *pr; /* its progress line, cleared before output */
    int rate;     /* the model's sample rate */
    int n;        /* segments written */
    int cue;      /* srt: the last cue's number */
    int no_space; /* txt: segments joined without a space */
    int failed;   /* out of memory formatting one */
} stream_out;

/* The library's segment callback with --stream: writes the segment in the
 * output format and flushes. txt: its text, after a space (the line ends
 * when the input is done); jsonl: {"file", "segment"}; srt, vtt: its cues,
 * numbered on from the previous segment's. A non-zero answer (standard
 * output failed) stops the transcription. */
static int on_stream_segment(void *user, const hv_segment *g) {
    stream_out *so = user;
    const options *o = so->o;
    FILE *f = stdout;
    if (so->pr->shown) {
        fputs("\r\033[K", stderr);
        so->pr->shown = 0;
    }
    switch (o->format) {
        case FMT_TXT:
            if (so->n && !so->no_space) fputc(' ', f);
            hvt_put_text(f, g->text);
            break;
        case FMT_SRT:
        case FMT_VTT:
            if (so->n == 0 && o->format == FMT_VTT) fputs("WEBVTT\n\n", f);
            if (hvt_write_segment_cues(f, g, so->rate, &o->cues, o->format == FMT_VTT, &so->cue))
                so->failed = 1;
            break;
        default: {
            cJSON *obj = cJSON_CreateObject(), *seg = segment_json(g, o->word_timestamps);
            char *s = NULL;
            if (obj && seg && cJSON_AddStringToObject(obj, "file", so->file) &&
                cJSON_AddItemToObject(obj, "segment", seg)) {
                seg = NULL;
                s = cJSON_PrintUnformatted(obj);
            }
            cJSON_Delete(seg);
            cJSON_Delete(obj);
            if (s) {
                fputs(s, f);
                fputc('\n', f);
                cJSON_free(s);
            } else {
                so->failed = 1;
            }
        }
    }
    so->n++;
    return fflush(f) != 0 || ferror(f) || so->failed;
}

/* ---------------------------------------------------------- transcribe */

/* Reads and transcribes one input; the result, or NULL with the failure
 * reported. */
static hv_result *transcribe_input(hv_context *ctx, const hv_vad *vad, const options *o,
                                   const char *path, int rate, int show_progress) {
    float *pcm = NULL;
    size_t n_frames = 0;
    int channels = 1;
    if (read_input(path, rate, &pcm, &n_frames) != 0) return NULL;

    hv_transcribe_params tp = hv_transcribe_default_params();
    tp.language = o->language;
    tp.punctuation = o->punctuation;
    tp.max_new_tokens = o->max_tokens;
    if (o->dither >= 0.0f) tp.dither = o->dither;
    tp.num_beams = o->num_beams;
    tp.length_penalty = o->length_penalty;
    tp.do_sample = o->do_sample;
    tp.temperature = o->temperature;
    tp.top_k = o->top_k;
    tp.top_p = o->top_p;
    tp.seed = o->seed;
    tp.chunking = o->chunking;
    tp.chunk_seconds = o->chunk_seconds;
    tp.vad = vad;
    tp.vad_params = o->vad;
    tp.vad_max_gap_s = o->vad_max_gap_s;
    tp.word_timestamps = o->word_timestamps || o->format == FMT_SRT || o->format == FMT_VTT;
    const char *slash = strrchr(path, '/');
    progress pr = {slash && slash[1] ? slash + 1 : path, hvt_now_s(), 0};
    if (show_progress) {
        tp.progress = on_progress;
        tp.progress_user = &pr;
    }
    const char *lang = o->language ? o->language : g_language;
    stream_out so = {o, NULL, &pr, rate, 0, 0, !strcmp(lang, "ja") || !strcmp(lang, "zh"), 0};
    if (o->stream) {
        if (!(so.file = hvt_utf8_clean(path))) {
            free(pcm);
            file_error(path, HV_ERR_NOMEM, "out of memory");
            return NULL;
        }
        tp.segment_callback = on_stream_segment;
        tp.segment_user = &so;
    }

    hv_result *res = NULL;
    hv_status st = hv_transcribe(ctx, pcm, n_frames, rate, channels, &tp, &res);
    free(pcm); /* hv_audio_free, or ours from standard input */
    free(so.file);
    if (pr.shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    /* --stream: the txt line ends with the input (also a failed one with
     * text written); a vtt without cues still has its header */
    if (o->stream && o->format == FMT_TXT && (st == HV_OK || so.n > 0)) fputc('\n', stdout);
    if (o->stream && o->format == FMT_VTT && st == HV_OK && so.n == 0) fputs("WEBVTT\n\n", stdout);
    if (o->stream) fflush(stdout);
    if (st == HV_OK && (so.failed || hv_result_stopped(res))) {
        file_error(path, HV_ERR_NOMEM,
                   so.failed ? "out of memory formatting the output" : "error writing the output");
        hv_result_free(res);
        return NULL;
    }
    if (st != HV_OK) {
        const char *msg = hv_context_error(ctx);
        if (st == HV_ERR_LIMIT && o->chunking == HV_CHUNKING_NONE) {
            char buf[1200];
            snprintf(buf, sizeof buf,
                     "%s (--chunking none takes the audio "
                     "in one piece; use --chunking auto for long audio)",
                     msg);
            file_error(path, st, buf);
        } else {
            file_error(path, st, msg);
        }
        return NULL;
    }
    return res;
}

/* --skip-existing: whether an input's output file is there. Output files
 * appear only by the rename of a complete temporary file (out_commit), so
 * one that exists is complete; a leftover temporary file of a killed run
 * (.NAME.hviske-XXXXXX) has another name and does not count. */
static int output_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Appends an input's line to the summary when there is one; a failure to
 * write it is reported once, fails the run (status 1) and ends the
 * summary. */
static void summarize(int *fd, const options *o, const char *input, const char *output,
                      const char *status, const char *error, double audio_s, double t0, int *rc) {
    if (*fd < 0) return;
    if (hvt_summary_write(*fd, input, output, status, error, audio_s, hvt_now_s() - t0) != 0) {
        fprintf(stderr, "hviske: %s: cannot write the summary: %s\n", o->summary, strerror(errno));
        close(*fd);
        *fd = -1;
        *rc = 1;
    }
}

/* Writes one result to its own file under --output-dir; 0 on success. */
static int write_output_file(const options *o, const char *input, const char *out_path,
                             const hv_result *res, int rate) {
    if (strcmp(input, "-") != 0 && same_file(input, out_path)) {
        errorf("%s: not overwriting the input %s", out_path, input);
        return -1;
    }
    out_file of;
    if (out_open(&of, out_path) != 0) return -1;
    if (write_result(of.f, o, input, res, rate) != 0) {
        out_abort(&of);
        file_error(input, HV_ERR_NOMEM, "out of memory formatting the output");
        return -1;
    }
    return out_commit(&of);
}

int main(int argc, char **argv) {
    options o;
    int summary_fd = -1;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) goto free_options;
    install_signal_handlers();

    /* Open the destination before the long work, so that a bad path fails
     * at once. */
    int to_file = o.output && strcmp(o.output, "-") != 0;
    out_file shared = {NULL, NULL};
    FILE *out = stdout;
    if (to_file) {
        for (int i = 0; i < o.n_files; i++)
            if (strcmp(o.files[i], "-") != 0 && same_file(o.files[i], o.output)) {
                rc = hvt_usage_error(PROG, "--output %s is also an input", o.output);
                goto free_options;
            }
        if (out_open(&shared, o.output) != 0) {
            rc = 1;
            goto free_options;
        }
        out = shared.f;
    }
    if (o.output_dir) {
        struct stat sd;
        if (mkdir(o.output_dir, 0777) != 0 &&
            (errno != EEXIST || stat(o.output_dir, &sd) != 0 || !S_ISDIR(sd.st_mode))) {
            fprintf(stderr, "hviske: %s: cannot create the directory: %s\n", o.output_dir,
                    errno == EEXIST ? "a file of that name "
                                      "exists"
                                    : strerror(errno));
            rc = 1;
            goto free_options;
        }
    }
    if (o.summary) {
        char serr[1024];
        if ((summary_fd = hvt_summary_open(o.summary, serr, sizeof serr)) < 0) {
            fprintf(stderr, "hviske: %s\n", serr);
            rc = 1;
            goto free_options;
        }
    }
    /* --skip-existing: when every output is there already (a finished task
     * resubmitted), or the shard is empty, no model is loaded */
    int n_todo = o.n_files;
    for (int i = 0; o.skip_existing && i < o.n_files; i++) n_todo -= output_exists(o.out_paths[i]);

    char err[1024] = "";
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.n_threads;
    mp.weight_type = o.weight_type;
    mp.compute = o.compute;
    hv_model *model = NULL;
    hv_vad *vad = NULL;
    hv_context *ctx = NULL;
    int n_ok = 0, ran = 0;
    if (n_todo == 0) {
        rc = 0;
        for (int i = 0; i < o.n_files; i++)
            summarize(&summary_fd, &o, o.files[i], o.out_paths ? o.out_paths[i] : NULL, "skipped",
                      NULL, -1, hvt_now_s(), &rc);
        goto done;
    }
    hv_status st = hv_model_load(o.model_dir, &mp, &model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err[0] ? err : hv_status_name(st));
        rc = 1;
        goto done;
    }
    g_language = hvt_model_has_language(model, "da") ? "da"
                 : hv_model_n_languages(model) > 0   ? hv_model_language(model, 0)
                                                     : "";
    if (o.language && !hvt_model_has_language(model, o.language)) {
        fprintf(stderr,
                "hviske: language '%s' is not supported by %s "
                "(supported:",
                o.language, o.model_dir);
        for (int i = 0; i < hv_model_n_languages(model); i++)
            fprintf(stderr, " %s", hv_model_language(model, i));
        fputs(")\n", stderr);
        rc = HVT_EXIT_USAGE;
        goto done;
    }
    if (hvt_chunking_uses_vad(o.chunking) &&
        hvt_load_vad(o.vad_model, &vad, err, sizeof err) != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err);
        rc = 1;
        goto done;
    }
    ctx = hv_context_new(model, o.n_threads);
    if (!ctx) {
        fputs("hviske: out of memory creating a context\n", stderr);
        rc = 1;
        goto done;
    }

    int show_progress = !o.quiet && isatty(STDERR_FILENO);
    int rate = hv_model_sample_rate(model);
    rc = 0;
    ran = 1;
    for (int i = 0; i < o.n_files; i++) {
        const char *path = o.files[i];
        const char *out_path = o.output_dir ? o.out_paths[i] : NULL;
        double t0 = hvt_now_s();
        if (o.skip_existing && output_exists(out_path)) {
            summarize(&summary_fd, &o, path, out_path, "skipped", NULL, -1, t0, &rc);
            continue;
        }
        hv_result *res = transcribe_input(ctx, vad, &o, path, rate, show_progress);
        if (!res) {
            rc = 1;
            summarize(&summary_fd, &o, path, out_path, "error", g_error, -1, t0, &rc);
            continue;
        }
        int ok = 0;
        if (o.output_dir) {
            if (write_output_file(&o, path, o.out_paths[i], res, rate) != 0)
                rc = 1;
            else
                ok = 1;
        } else if (o.stream && o.format != FMT_JSONL) {
            ok = 1; /* written segment by segment */
        } else if (write_result(out, &o, path, res, rate) != 0) {
            file_error(path, HV_ERR_NOMEM,
                       "out of memory formatting the "
                       "output");
            rc = 1;
        } else {
            ok = 1;
            if (!to_file) fflush(stdout);
        }
        n_ok += ok;
        summarize(&summary_fd, &o, path, out_path, ok ? "ok" : "error", ok ? NULL : g_error,
                  hv_result_duration(res), t0, &rc);
        hv_result_free(res);
    }

done:
    hv_context_free(ctx);
    hv_vad_free(vad);
    hv_model_free(model);
    if (to_file) {
        /* the results of the inputs that succeeded, whole, or no file */
        if (n_ok > 0 && rc != HVT_EXIT_USAGE) {
            if (out_commit(&shared) != 0) rc = 1;
        } else {
            out_abort(&shared);
            if (ran)
                fprintf(stderr,
                        "hviske: %s: not written (no input "
                        "succeeded)\n",
                        o.output);
        }
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("hviske: error writing the output\n", stderr);
        rc = 1;
    }
free_options:
    if (summary_fd >= 0 && close(summary_fd) != 0) {
        fprintf(stderr, "hviske: %s: cannot write the summary: %s\n", o.summary, strerror(errno));
        rc = 1;
    }
    if (o.out_paths)
        for (int i = 0; i < o.n_files; i++) free(o.out_paths[i]);
    free(o.out_paths);
    free(o.files);
    hvt_list_free(o.list, o.n_list);
    return rc;
}
