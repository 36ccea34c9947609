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
 * Output (--format, one or several joined by commas; whisper-cli's -otxt
 * ... flags add formats): txt (the transcript, one line per input; on a
 * terminal, or with --print-timestamps, one timed line per segment), jsonl
 * (one JSON object per line per input; --json is its shorthand), json (one
 * indented JSON document), srt or vtt (subtitles), csv. Segments are
 * sentence-sized cues of the timed words (hv_segment_cues); the JSON keeps
 * the model's chunks as "chunks". --word-timestamps adds the words to JSON.
 * It goes to standard output, to -o FILE, or to one file per input and
 * format: in --output-dir DIR, or beside each input. Files are written to a temporary file in
 * the same directory and renamed into place when complete, so an
 * interrupted or failed run never leaves a partial output file; a symlink
 * is followed and a device, FIFO or socket written in place
 * (util/out_file.h).
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
#include "util/out_file.h"

static const char PROG[] = "hviske";

typedef enum out_format {
    FMT_TXT,
    FMT_JSONL,
    FMT_JSON,
    FMT_SRT,
    FMT_VTT,
    FMT_CSV,
    N_FORMATS
} out_format;
static const char *const FORMAT_NAMES[N_FORMATS] = {"txt", "jsonl", "json", "srt", "vtt", "csv"};

/* --format F[,F...]: the formats in the order given, each once. */
typedef struct format_list {
    out_format f[N_FORMATS];
    int n;
} format_list;

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
    out_format format;     /* the first of formats */
    format_list formats;   /* --format, whisper-cli's -otxt ... */
    int to_files;          /* one output file per input and format: --output-dir
                            DIR, or beside each input */
    int aliases;           /* whisper-cli's -oFMT flags given */
    int word_timestamps;   /* --word-timestamps (srt and vtt compute them anyway) */
    hv_cue_params cues;    /* srt, vtt: --max-cue-seconds, --max-lines, ... */
    const char *output;    /* -o FILE; NULL or "-": standard output */
    const char *output_dir;
    int stream; /* --stream: each segment on stdout as it is final */
    int quiet;
    int timestamps; /* txt: "[start --> end] text" lines (--print-timestamps,
                         or stdout a terminal without -q) */
    int txt_live;   /* txt on stdout: one line per segment as it is final */
    int progress;   /* 0: none; 1: redrawn line (terminal); 2: --progress lines */
    int name_lines; /* txt with several inputs: "FILE: " before each line */
    int n_inputs;   /* inputs before the shard was taken */
    char **files;   /* argv tail, or this shard's entries of list */
    int n_files;
    char **out_paths; /* to_files: [input * formats.n + format] */
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
               "      --compute MODE     auto (default: bf16 on a CPU with AMX\n"
               "                         and weights of 16 bits or fewer, else\n"
               "                         f32), f32 or bf16\n"
               "      --max-tokens N     stop each chunk after N generated tokens\n"
               "                         (N >= 1)\n"
               "      --dither X         dither amount, X >= 0 (default: the\n"
               "                         model's; 0 turns it off)\n"
               "  -q, --quiet            no progress display, no warnings, and plain\n"
               "                         txt (no times) on a terminal\n"
               "      --progress         progress lines on stderr also when it is not\n"
               "                         a terminal: 'hviske: FILE: progress P%%\n"
               "                         done_s=D total_s=T speed=X eta_s=E'\n"
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
               "      --chunk-seconds S  chunk length for --chunking fixed (S >= 1,\n"
               "                         at most the model's max_audio_clip_s)\n" HVT_VAD_USAGE "\n"
               "Output:\n"
               "      --format F[,F...]  txt (default): the transcript, one line\n"
               "                         per file; jsonl: one JSON object per line\n"
               "                         per file (file, text, tokens,\n"
               "                         token_logprobs, score, timings, segments);\n"
               "                         json: one indented JSON document per file\n"
               "                         (adds language and duration); srt, vtt:\n"
               "                         subtitles, cues of whole sentences or\n"
               "                         clauses timed by word (docs/CLI.md); csv:\n"
               "                         start,end,text per segment (ms). Several\n"
               "                         joined by commas (txt,srt,json): one file\n"
               "                         per input and format, beside the input or\n"
               "                         in --output-dir\n"
               "  -otxt -osrt -ovtt -oj -ojf -ocsv  whisper-cli's flags: add the\n"
               "                         format, written beside each input (-ojf:\n"
               "                         json with words)\n"
               "      --json             same as --format jsonl\n"
               "      --print-timestamps txt: one '[MM:SS.mmm --> MM:SS.mmm] text' line\n"
               "                         per segment (the default on a terminal,\n"
               "                         shown as each segment is final)\n"
               "      --word-timestamps  json, jsonl: add \"words\" (word, start, end,\n"
               "                         probability) to each result and segment\n" HVT_CUE_USAGE
               "  -o, --output FILE      write to FILE instead of stdout ('-':\n"
               "                         stdout); with several inputs only for txt\n"
               "                         and jsonl (one line per input)\n"
               "      --output-dir DIR   one output file per input in DIR, named\n"
               "                         after it with the format's extension\n"
               "                         (rec.wav -> DIR/rec.srt; '-' -> stdin.srt)\n"
               "      --stream           each segment on stdout as soon as it is final:\n"
               "                         txt: one line per segment;\n"
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
               "      --temperature T    sampling temperature, T > 0 (default 1);\n"
               "                         given alone it means --sample (as the\n"
               "                         server's temperature > 0)\n"
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
               "the same directory, renamed when complete); a symlink is followed, and\n"
               "a device, FIFO or socket is written in place. Progress (percentage,\n"
               "speed, time left) is shown on stderr when it is a terminal. With\n"
               "several inputs, each txt line starts with 'FILE: '.\n"
               "\n"
               "Exit status: 0 success, 1 a file, the model or the output failed,\n"
               "2 bad usage.\n");
}

/* Adds format f to l once; 0. */
static int add_format(format_list *l, out_format f) {
    for (int k = 0; k < l->n; k++)
        if (l->f[k] == f) return 0;
    l->f[l->n++] = f;
    return 0;
}

/* --format NAME[,NAME...]; 0 if each is one of FORMAT_NAMES. */
static int parse_format(const char *arg, void *value) {
    format_list l = {.n = 0};
    for (const char *p = arg;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int f = 0; f < N_FORMATS; f++)
            if (strlen(FORMAT_NAMES[f]) == len && strncmp(p, FORMAT_NAMES[f], len) == 0) found = f;
        if (found < 0) return -1;
        add_format(&l, (out_format)found);
        if (!p[len]) break;
        p += len + 1;
    }
    *(format_list *)value = l;
    return 0;
}

/* whisper-cli's output flags, taken as aliases of --format (each writes
 * a file beside its input, as whisper-cli does), or refused naming what
 * hviske has instead. */
static const struct whisper_alias {
    const char *flag, *long_flag;
    int format; /* -1: refused */
    int words;  /* -ojf: json with the words */
    const char *instead;
} WHISPER_ALIASES[] = {
    {"-otxt", "--output-txt", FMT_TXT, 0, NULL},
    {"-osrt", "--output-srt", FMT_SRT, 0, NULL},
    {"-ovtt", "--output-vtt", FMT_VTT, 0, NULL},
    {"-oj", "--output-json", FMT_JSON, 0, NULL},
    {"-ojf", "--output-json-full", FMT_JSON, 1, NULL},
    {"-ocsv", "--output-csv", FMT_CSV, 0, NULL},
    {"-olrc", "--output-lrc", -1, 0, "LRC is not written; --format txt,srt,vtt,json,jsonl,csv"},
    {"-owts", "--output-words", -1, 0, "karaoke scripts are not written; --format srt or vtt"},
    {"-of", "--output-file", -1, 0, "use -o FILE for one output, --output-dir DIR for files"},
};

/* Takes whisper-cli's -otxt, -osrt, ... (and their long forms) out of
 * argv (before "--"), adding their formats to o->formats. -1 to go on,
 * otherwise the exit status (a refused one). */
static int take_whisper_aliases(int *argc, char **argv, options *o) {
    int m = 1;
    for (int i = 1; i < *argc; i++) {
        const struct whisper_alias *a = NULL;
        if (strcmp(argv[i], "--") == 0) {
            while (i < *argc) argv[m++] = argv[i++];
            break;
        }
        for (size_t k = 0; k < sizeof WHISPER_ALIASES / sizeof *WHISPER_ALIASES; k++)
            if (strcmp(argv[i], WHISPER_ALIASES[k].flag) == 0 ||
                strcmp(argv[i], WHISPER_ALIASES[k].long_flag) == 0)
                a = &WHISPER_ALIASES[k];
        if (!a) {
            argv[m++] = argv[i];
            continue;
        }
        if (a->format < 0)
            return hvt_usage_error(PROG, "%s (whisper-cli's) is not supported: %s", argv[i],
                                   a->instead);
        add_format(&o->formats, (out_format)a->format);
        o->word_timestamps |= a->words;
        o->aliases = 1;
    }
    *argc = m;
    argv[m] = NULL;
    return -1;
}

/* 1 if f is one of the output formats. */
static int has_format(const options *o, out_format f) {
    for (int k = 0; k < o->formats.n; k++)
        if (o->formats.f[k] == f) return 1;
    return 0;
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
    O_PRINT_TIMESTAMPS,
    O_PROGRESS,
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
    [O_WEIGHT_TYPE] = HVT_OPT_CUSTOM("weight-type", AT(weight_type), hvt_parse_weight_type,
                                     "auto, f32, f16, bf16, q8_0 or q4_0"),
    [O_COMPUTE] = HVT_OPT_COMPUTE(AT(compute)),
    [O_MAX_TOKENS] =
        HVT_OPT("max-tokens", 0, HVT_INT, AT(max_tokens), 1, INT_MAX, "an integer >= 1"),
    [O_DITHER] = HVT_OPT("dither", 0, HVT_FLOAT, AT(dither), 0, INFINITY, "a finite number >= 0"),
    [O_QUIET] = HVT_OPT_FLAG("quiet", 'q'),
    [O_CHUNKING] = HVT_OPT_CHUNKING(AT(chunking)),
    [O_CHUNK_SECONDS] = HVT_OPT("chunk-seconds", 0, HVT_FLOAT, AT(chunk_seconds), 1, INFINITY,
                                "a number of seconds >= 1, at most the model's "
                                "max_audio_clip_s"),
    HVT_VAD_OPTION_ROWS(options),
    [O_FORMAT] = HVT_OPT_CUSTOM("format", AT(formats), parse_format,
                                "txt, json, jsonl, srt, vtt or csv, or several joined by commas"),
    [O_JSON] = HVT_OPT_FLAG("json", 0),
    [O_WORD_TIMESTAMPS] = HVT_OPT_FLAG("word-timestamps", 0),
    [O_STREAM] = HVT_OPT_FLAG("stream", 0),
    [O_PRINT_TIMESTAMPS] = HVT_OPT_FLAG("print-timestamps", 0),
    [O_PROGRESS] = HVT_OPT_FLAG("progress", 0),
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

/* DIR/NAME.EXT for an input (dir NULL: NAME.EXT in the input's own
 * directory): its base name with the last extension replaced by ext ("rec.wav" -> "rec.EXT", "rec" -> "rec.EXT",
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
    size_t dlen = dir ? strlen(dir) : 0;
    const char *sep = !dir || (dlen && dir[dlen - 1] == '/') ? "" : "/";
    if (!dir) { /* beside the input: its directory part, "" for stdin */
        dir = input;
        dlen = strcmp(input, "-") != 0 ? (size_t)(base - input) : 0;
    }
    size_t n = dlen + 1 + blen + 1 + strlen(ext) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%.*s%s%.*s.%s", (int)dlen, dir, sep, (int)blen, base, ext);
    return p;
}

/* The options that cannot go together, in the order they are reported;
 * -1 when none, otherwise the exit status. */
static int check_combinations(options *o, const int *given) {
    if (given[O_JSON]) {
        if ((given[O_FORMAT] || o->aliases) && (o->formats.n != 1 || o->format != FMT_JSONL))
            return hvt_usage_error(PROG,
                                   "--json (= --format jsonl) and --format %s cannot be "
                                   "combined",
                                   FORMAT_NAMES[o->format]);
        o->formats.n = 0;
        add_format(&o->formats, FMT_JSONL);
        o->format = FMT_JSONL;
    }
    if (o->output && o->output_dir)
        return hvt_usage_error(PROG, "--output and --output-dir cannot be "
                                     "combined");
    if (o->formats.n > 1 && o->output && strcmp(o->output, "-") != 0)
        return hvt_usage_error(PROG,
                               "-o %s holds one format: with several formats each input's "
                               "outputs go beside it, or into --output-dir DIR",
                               o->output);
    if (o->output && !strchr(o->output, '/') && !strchr(o->output, '.')) {
        /* "-o srt": whisper-cli's -osrt written apart, not a file name */
        format_list l;
        if (parse_format(o->output, &l) == 0 || strcmp(o->output, "j") == 0 ||
            strcmp(o->output, "jf") == 0 || strcmp(o->output, "lrc") == 0)
            return hvt_usage_error(PROG,
                                   "-o %s would write a file named '%s': for the format use "
                                   "--format (whisper-cli's -o%s); for such a file write ./%s",
                                   o->output, o->output, o->output, o->output);
    }
    if (o->do_sample && o->num_beams > 1)
        return hvt_usage_error(PROG,
                               "--sample and --beams %d cannot be "
                               "combined (sampling uses one beam)",
                               o->num_beams);
    if (o->chunking == HV_CHUNKING_FIXED && o->chunk_seconds == 0.0f)
        return hvt_usage_error(PROG, "--chunking fixed needs "
                                     "--chunk-seconds S");
    if (o->stream && (o->format == FMT_JSON || o->format == FMT_CSV))
        return hvt_usage_error(PROG,
                               "--stream works with --format txt, jsonl, srt or vtt "
                               "(%s is one document per input)",
                               FORMAT_NAMES[o->format]);
    if (o->stream && (o->formats.n > 1 || o->aliases))
        return hvt_usage_error(PROG, "--stream writes one format to standard output; output "
                                     "files are written whole (drop --stream, or the formats)");
    if (o->stream && ((o->output && strcmp(o->output, "-") != 0) || o->output_dir))
        return hvt_usage_error(PROG, "--stream writes to standard output; output files are "
                                     "written whole (drop --stream, or -o/--output-dir)");
    if (!o->model_dir) return hvt_usage_error(PROG, "no model given (use -m MODEL_DIR)");
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
    int m = 0, nf = o->formats.n;
    for (int i = 0; i < o->n_files; i++) {
        if (hvt_shard_has(&o->shard, i)) {
            o->files[m] = o->files[i];
            for (int k = 0; o->out_paths && k < nf; k++)
                o->out_paths[m * nf + k] = o->out_paths[i * nf + k];
            m++;
        } else {
            for (int k = 0; o->out_paths && k < nf; k++) free(o->out_paths[i * nf + k]);
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
    o->n_inputs = n_all;
    int n_stdin = 0;
    for (int i = 0; i < o->n_files; i++) n_stdin += strcmp(o->files[i], "-") == 0;
    if (n_stdin > 1) return hvt_usage_error(PROG, "'-' (standard input) given %d times", n_stdin);
    /* output files: --output-dir, several formats or whisper-cli's flags,
     * or documents of several inputs without -o: beside each input */
    int to_stdout = !o->output || strcmp(o->output, "-") == 0;
    o->to_files = o->output_dir || o->formats.n > 1 || o->aliases ||
                  (o->n_files > 1 && !format_is_stream(o->format) && !o->output);
    if (o->n_files > 1 && !o->to_files && !format_is_stream(o->format))
        return hvt_usage_error(PROG,
                               "--format %s writes one document per "
                               "input: with %d inputs use --output-dir DIR (or no -o: "
                               "each beside its input)",
                               FORMAT_NAMES[o->format], o->n_files);
    if (o->to_files && !to_stdout)
        return hvt_usage_error(PROG,
                               "-o %s holds one output: the formats given write a file "
                               "per input (beside it, or into --output-dir DIR)",
                               o->output);
    if (o->skip_existing && !o->to_files)
        return hvt_usage_error(PROG, "--skip-existing needs output files (--output-dir DIR): "
                                     "it looks for them");
    if (!o->to_files) return select_shard(o);
    int nf = o->formats.n, n_paths = o->n_files * nf;
    o->out_paths = calloc((size_t)n_paths, sizeof *o->out_paths);
    if (!o->out_paths) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < n_paths; i++) {
        o->out_paths[i] =
            output_path_for(o->output_dir, o->files[i / nf], FORMAT_NAMES[o->formats.f[i % nf]]);
        if (!o->out_paths[i]) {
            fputs("hviske: out of memory\n", stderr);
            return 1;
        }
    }
    /* over the whole list, not only the shard: two tasks must never write
     * (or, with --skip-existing, take as done) the same file */
    int a, b, dup = hvt_first_duplicate(o->out_paths, n_paths, &a, &b);
    if (dup < 0) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    if (dup)
        return hvt_usage_error(PROG,
                               "inputs '%s' and '%s' would "
                               "both write %s",
                               o->files[a / nf], o->files[b / nf], o->out_paths[a]);
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
    if (last >= 0 && !o->do_sample && o->num_beams > 1)
        fprintf(stderr, "hviske: warning: --%s has no effect with --beams %d (beam search)\n",
                OPTIONS[last].name, o->num_beams);
    else if (last >= 0 && !o->do_sample)
        fprintf(stderr, "hviske: warning: --%s has no effect without --sample (or --temperature)\n",
                OPTIONS[last].name);
    if (given[O_LENGTH_PENALTY] && o->num_beams <= 1)
        fprintf(stderr, "hviske: warning: --length-penalty has no effect "
                        "without --beams N (N > 1)\n");
    if (o->chunk_seconds > 0.0f && o->chunking != HV_CHUNKING_FIXED)
        fprintf(stderr, "hviske: warning: --chunk-seconds has no effect "
                        "without --chunking fixed\n");
    for (int k = O_MAX_CUE_SECONDS; k <= O_MAX_LINE_CHARS; k++)
        if (given[k] && !has_format(o, FMT_SRT) && !has_format(o, FMT_VTT)) {
            fprintf(stderr, "hviske: warning: --%s has no effect with --format %s\n",
                    OPTIONS[k].name, FORMAT_NAMES[o->format]);
            break;
        }
    if (given[O_PRINT_TIMESTAMPS] && !has_format(o, FMT_TXT))
        fprintf(stderr, "hviske: warning: --print-timestamps has no effect with --format %s\n",
                FORMAT_NAMES[o->format]);
    if (given[O_WORD_TIMESTAMPS] && !has_format(o, FMT_JSON) && !has_format(o, FMT_JSONL))
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
                   .formats = {.n = 0},
                   .num_beams = defaults.num_beams,
                   .length_penalty = defaults.length_penalty,
                   .temperature = defaults.temperature,
                   .top_k = defaults.top_k,
                   .top_p = defaults.top_p,
                   .seed = defaults.seed,
                   .chunking = defaults.chunking,
                   .vad = defaults.vad_params,
                   .vad_max_gap_s = defaults.vad_max_gap_s,
                   .cues = hv_cue_default_params(),
                   .format = FMT_TXT};
    int given[N_OPTS];
    int rc = take_whisper_aliases(&argc, argv, o);
    if (rc >= 0) return rc;
    format_list aliased = o->formats;
    rc = hvt_parse_options(&cli, argc, argv, o, given);
    if (rc >= 0) return rc;
    if (given[O_FORMAT]) /* --format's formats, then the aliases' */
        for (int k = 0; k < aliased.n; k++) add_format(&o->formats, aliased.f[k]);
    else
        o->formats = aliased;
    if (o->formats.n == 0) add_format(&o->formats, FMT_TXT);
    o->format = o->formats.f[0];
    o->punctuation = !given[O_NO_PUNCT];
    /* a temperature means sampling, as on the server, unless beam search
     * is asked for */
    o->do_sample = given[O_SAMPLE] != 0 || (given[O_TEMPERATURE] && o->num_beams <= 1);
    o->quiet = given[O_QUIET] != 0;
    o->word_timestamps |= given[O_WORD_TIMESTAMPS] != 0;
    o->stream = given[O_STREAM] != 0;
    o->skip_existing = given[O_SKIP_EXISTING] != 0;
    if ((rc = check_combinations(o, given)) >= 0 || (rc = take_inputs(o, argc, argv, given)) >= 0)
        return rc;
    /* the console: txt on a terminal shows each segment with its times as
     * it is final; progress on a terminal is a redrawn line, elsewhere
     * lines only with --progress */
    int to_stdout = !o->to_files && (!o->output || strcmp(o->output, "-") == 0);
    o->timestamps = o->format == FMT_TXT && (given[O_PRINT_TIMESTAMPS] ||
                                             (!o->quiet && to_stdout && isatty(STDOUT_FILENO)));
    o->txt_live = o->format == FMT_TXT && to_stdout && (o->stream || o->timestamps);
    if (isatty(STDERR_FILENO))
        o->progress = !o->quiet || given[O_PROGRESS] ? 1 : 0;
    else
        o->progress = given[O_PROGRESS] ? 2 : 0;
    o->name_lines = o->format == FMT_TXT && o->n_inputs > 1 && !o->to_files;
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

/* The output file being written, if any, for the signal handler: it
 * removes its temporary file so that an interrupted run leaves nothing
 * behind (hv_out_file.tmp_there says when there may be one). */
static hv_out_file *volatile g_out;

static void on_fatal_signal(int sig) {
    hv_out_file *of = g_out;
    if (of && of->tmp_there) unlink(of->tmp); /* async-signal-safe */
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
    /* a reader that went away (standard output, a FIFO given to -o or
     * --summary) is a write error reported with exit status 1 */
    signal(SIGPIPE, SIG_IGN);
}

/* An output file, written by util/out_file.h's rule: a regular file whole
 * or not at all (a temporary file renamed onto it by out_commit, removed
 * by out_abort), symlinks followed, anything else written in place. */
typedef hv_out_file out_file;

/* Opens path for writing; 0 on success, else -1 with a message on
 * stderr. */
static int out_open(out_file *of, const char *path) {
    g_out = of;
    int err = hv_out_open(of, path);
    if (err) {
        g_out = NULL;
        errorf("%s: cannot create: %s", path, strerror(err));
        return -1;
    }
    return 0;
}

/* Drops the output; a regular file at path is left as it was. */
static void out_abort(out_file *of) {
    hv_out_abort(of);
    g_out = NULL;
}

/* Completes the output at path; 0 on success, else -1 with a message. */
static int out_commit(out_file *of, const char *path) {
    int err = hv_out_commit(of);
    g_out = NULL;
    if (err) {
        errorf("%s: cannot write: %s", path, strerror(err));
        return -1;
    }
    return 0;
}

/* 1 if a and b name the same existing file. */
static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The seconds of audio the library's memory budget allows at rate
 * (hv_transcribe_params.max_audio_bytes): inputs are read within it, so no
 * file is decoded beyond what hv_transcribe would take. */
static double audio_budget_s(int rate) {
    return hv_audio_max_seconds(hv_transcribe_default_params().max_audio_bytes, rate);
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
    hv_status st = hv_audio_read_buffer_mono(data, size, "-", rate, audio_budget_s(rate), pcm,
                                             n_frames, err, err_size);
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
        st = hv_audio_read_mono(path, rate, audio_budget_s(rate), pcm, n_frames, err, sizeof err);
    if (st != HV_OK) {
        file_error(path, st, err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ txt lines */

/* "03.400"-style clock for txt timestamps: "MM:SS.mmm" below an hour,
 * "H:MM:SS.mmm" from an hour on (whole milliseconds). */
static void clock_time(char *buf, size_t n, double s) {
    long long ms = s > 0 && s < 1e9 ? llround(s * 1000.0) : 0;
    if (ms >= 3600000)
        snprintf(buf, n, "%lld:%02lld:%02lld.%03lld", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60,
                 ms % 1000);
    else
        snprintf(buf, n, "%02lld:%02lld.%03lld", ms / 60000, ms / 1000 % 60, ms % 1000);
}

/* One line of txt output: "FILE: " when several inputs share the output,
 * "[start --> end] " with timestamps, then the text on one line. */
static void put_txt_line(FILE *f, const options *o, const char *file, int timed, double start,
                         double end, const char *text) {
    if (o->name_lines) fprintf(f, "%s: ", file);
    if (timed) {
        char a[32], b[32];
        clock_time(a, sizeof a, start);
        clock_time(b, sizeof b, end);
        fprintf(f, "[%s --> %s] ", a, b);
    }
    hvt_put_line(f, text);
}

/* The txt lines of chunk g with timestamps: one per segment (cue); 0, or
 * -1 when out of memory. */
static int put_txt_cues(FILE *f, const options *o, const char *file, const hv_segment *g) {
    hv_cue *cues = NULL;
    int nc = 0;
    if (hv_segment_cues(g, &o->cues, &cues, &nc) != HV_OK) return -1;
    for (int k = 0; k < nc; k++)
        put_txt_line(f, o, file, 1, cues[k].start, cues[k].end, cues[k].text);
    hv_cues_free(cues, nc);
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

/* The JSON object of one chunk (start, end, text, tokens; words: its
 * words too). NULL when out of memory. */
static cJSON *chunk_json(const hv_segment *g, int words) {
    char *st = hv_utf8_clean(g->text);
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

/* The JSON object of one segment, a cue of chunk g: start, end, text (its
 * lines on one), tokens (its words'), words (its words) when asked. NULL
 * when out of memory. */
static cJSON *cue_json(const hv_segment *g, const hv_cue *c, int words) {
    cJSON *so = cJSON_CreateObject(), *toks = NULL;
    int a = c->first_token - g->first_token, n = c->n_tokens;
    if (a < 0 || a > g->n_tokens) a = 0, n = 0; /* cannot happen: in the chunk */
    if (n > g->n_tokens - a) n = g->n_tokens - a;
    for (char *q = c->text; *q; q++)
        if (*q == '\n') *q = ' '; /* its lines: one text */
    int ok = so && cJSON_AddNumberToObject(so, "start", c->start) &&
             cJSON_AddNumberToObject(so, "end", c->end) &&
             cJSON_AddStringToObject(so, "text", c->text) &&
             (toks = json_int_array(g->tokens + a, n));
    if (ok && !cJSON_AddItemToObject(so, "tokens", toks))
        ok = 0;
    else if (ok)
        toks = NULL;
    cJSON_Delete(toks);
    if (ok && words) ok = add_words(so, g->words + c->first_word, c->n_words);
    if (!ok) {
        cJSON_Delete(so);
        return NULL;
    }
    return so;
}

/* Appends the segments (cues) of chunk g to the array segs; 0 when out of
 * memory. */
static int add_cues_json(cJSON *segs, const hv_segment *g, const options *o) {
    hv_cue *cues = NULL;
    int nc = 0, ok = hv_segment_cues(g, &o->cues, &cues, &nc) == HV_OK;
    for (int k = 0; ok && k < nc; k++) {
        cJSON *so = cue_json(g, &cues[k], o->word_timestamps);
        ok = so && cJSON_AddItemToArray(segs, so);
        if (!ok) cJSON_Delete(so);
    }
    hv_cues_free(cues, nc);
    return ok;
}

/* The JSON object of one result. full (--format json) adds language and
 * duration, words (--word-timestamps) the words of the result and of each
 * segment. NULL when out of memory. */
static cJSON *result_json(const char *path, const hv_result *res, int full, const options *o) {
    int words = o->word_timestamps;
    hv_timings t = hv_result_timings(res);
    const int32_t *tokens = hv_result_tokens(res);
    const float *lps = hv_result_token_logprobs(res);
    char *text = hv_utf8_clean(hv_result_text(res));
    cJSON *obj = cJSON_CreateObject(), *arr = NULL, *lparr = NULL, *tim = NULL,
          *segs = cJSON_CreateArray(), *chunks = cJSON_CreateArray();

    int ok = text && obj && segs && chunks && hvt_json_add_name(obj, "file", path) &&
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
        cJSON *co = chunk_json(&g, words);
        if (!co || !cJSON_AddItemToArray(chunks, co)) {
            cJSON_Delete(co);
            ok = 0;
        }
        ok = ok && add_cues_json(segs, &g, o);
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

/* cJSON's formatted print with the usual indentation: each leading tab
 * as two spaces and the tab after a key's colon as one space (cJSON
 * escapes tabs inside strings, so every tab in s is layout). */
static void put_indented(FILE *f, const char *s) {
    int line_start = 1;
    for (const char *p = s; *p; p++) {
        if (*p == '\t')
            fputs(line_start ? "  " : " ", f);
        else {
            fputc(*p, f);
            line_start = *p == '\n';
        }
    }
}

/* CSV (RFC 4180, as whisper-cli's -ocsv): a "start,end,text" header,
 * then one row per segment, the times in whole milliseconds, the text in
 * double quotes (a quote doubled, line breaks as spaces); 0, or -1 when
 * out of memory. */
static int write_csv(FILE *f, const options *o, const hv_result *res) {
    fputs("start,end,text\n", f);
    for (int i = 0; i < hv_result_n_segments(res); i++) {
        hv_segment g = hv_result_segment(res, i);
        hv_cue *cues = NULL;
        int nc = 0;
        if (hv_segment_cues(&g, &o->cues, &cues, &nc) != HV_OK) return -1;
        for (int k = 0; k < nc; k++) {
            fprintf(f, "%lld,%lld,\"", llround(cues[k].start * 1e3), llround(cues[k].end * 1e3));
            for (const char *q = cues[k].text; *q; q++) {
                if (*q == '"') fputc('"', f);
                fputc(*q == '\n' || *q == '\r' ? ' ' : *q, f);
            }
            fputs("\"\n", f);
        }
        hv_cues_free(cues, nc);
    }
    return 0;
}

/* Writes one result in the chosen format; 0 on success, -1 when out of
 * memory (write errors show in ferror(f)). */
static int write_result(FILE *f, const options *o, out_format fmt, const char *path,
                        const hv_result *res) {
    switch (fmt) {
        case FMT_TXT:
            if (!o->timestamps) {
                put_txt_line(f, o, path, 0, 0, 0, hv_result_text(res));
                return 0;
            }
            for (int i = 0; i < hv_result_n_segments(res); i++) {
                hv_segment g = hv_result_segment(res, i);
                if (put_txt_cues(f, o, path, &g) != 0) return -1;
            }
            return 0;
        case FMT_SRT:
        case FMT_VTT: return hvt_write_subtitles(f, res, &o->cues, fmt == FMT_VTT);
        case FMT_CSV: return write_csv(f, o, res);
        case FMT_JSON:
        case FMT_JSONL:
        default: {
            cJSON *obj = result_json(path, res, fmt == FMT_JSON, o);
            char *s = !obj              ? NULL
                      : fmt == FMT_JSON ? cJSON_Print(obj)
                                        : cJSON_PrintUnformatted(obj);
            cJSON_Delete(obj);
            if (!s) return -1;
            if (fmt == FMT_JSON)
                put_indented(f, s);
            else
                fputs(s, f);
            fputc('\n', f);
            cJSON_free(s);
            return 0;
        }
    }
}

/* ------------------------------------------------------------ progress */

typedef struct progress {
    const char *name; /* the input's base name (the redrawn line) */
    const char *path; /* as given (--progress lines) */
    int mode;         /* 1: a line redrawn in place; 2: one line per update */
    double t0;        /* seconds, monotonic */
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

/* The library's progress callback, after each chunk. On a terminal
 * (mode 1): one status line on stderr, redrawn in place and erased before
 * anything else is written (standard output's lines always end before it
 * is drawn, so it never shares a row with them). With --progress on
 * another stderr (mode 2): one line per chunk in a fixed form,
 * "hviske: FILE: progress P% done_s=D total_s=T speed=X eta_s=E". */
static void on_progress(void *user, double done, double total) {
    progress *p = user;
    if (!(total > 0)) return;
    double elapsed = hvt_now_s() - p->t0;
    double speed = elapsed > 0 ? done / elapsed : 0;
    double eta_s = speed > 0 ? (total - done) / speed : 0;
    if (p->mode == 2) {
        fprintf(stderr,
                "hviske: %s: progress %.1f%% done_s=%.2f total_s=%.2f speed=%.2f eta_s=%.0f\n",
                p->path, 100.0 * done / total, done, total, speed, eta_s);
        fflush(stderr);
        return;
    }
    if (done >= total) return; /* the last chunk: the caller clears the line */
    char d[32], t[32], eta[32];
    format_duration(d, sizeof d, done);
    format_duration(t, sizeof t, total);
    format_duration(eta, sizeof eta, eta_s);
    fprintf(stderr,
            "\r\033[Khviske: %s: %3.0f%% (%s of %s), %.1f s of "
            "audio per second, ETA %s",
            p->name, 100.0 * done / total, d, t, speed, eta);
    fflush(stderr);
    p->shown = 1;
}

/* Erases the redrawn progress line, if shown, before other output. */
static void progress_clear(progress *p) {
    if (!p->shown) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->shown = 0;
}

/* ------------------------------------------------------------ streaming */

/* Segments as they come to standard output: --stream, and txt on stdout
 * with timestamps (o->txt_live). */
typedef struct stream_out {
    const options *o;
    const char *path; /* the input as given (txt's "FILE: ") */
    char *file;       /* the input's name, cleaned (jsonl) */
    progress *pr;     /* its progress line, cleared before output */
    int n;            /* segments written */
    int cue;          /* srt: the last cue's number */
    int failed;       /* out of memory formatting one */
} stream_out;

/* The library's segment callback for output as it comes: writes the
 * segment in the output format and flushes. txt: one line per segment
 * (with its times when o->timestamps); jsonl: {"file", "segment"}; srt,
 * vtt: its cues, numbered on from the previous segment's. A non-zero
 * answer (standard output failed) stops the transcription. */
static int on_stream_segment(void *user, const hv_segment *g) {
    stream_out *so = user;
    const options *o = so->o;
    FILE *f = stdout;
    progress_clear(so->pr);
    switch (o->format) {
        case FMT_TXT:
            if (o->timestamps)
                so->failed |= put_txt_cues(f, o, so->path, g) != 0;
            else
                put_txt_line(f, o, so->path, 0, 0, 0, g->text);
            break;
        case FMT_SRT:
        case FMT_VTT:
            if (so->n == 0 && o->format == FMT_VTT) fputs("WEBVTT\n\n", f);
            if (hvt_write_segment_cues(f, g, &o->cues, o->format == FMT_VTT, &so->cue))
                so->failed = 1;
            break;
        default: { /* one {"file", "segment"} line per segment (cue) */
            cJSON *segs = cJSON_CreateArray();
            if (!segs || !add_cues_json(segs, g, o)) so->failed = 1;
            for (cJSON *seg = segs ? segs->child : NULL; seg && !so->failed; seg = seg->next) {
                cJSON *obj = cJSON_CreateObject();
                char *s = NULL;
                if (obj && hvt_json_add_name(obj, "file", so->path) &&
                    cJSON_AddItemReferenceToObject(obj, "segment", seg))
                    s = cJSON_PrintUnformatted(obj);
                cJSON_Delete(obj);
                if (!s) {
                    so->failed = 1;
                    break;
                }
                fputs(s, f);
                fputc('\n', f);
                cJSON_free(s);
            }
            cJSON_Delete(segs);
        }
    }
    so->n++;
    return fflush(f) != 0 || ferror(f) || so->failed;
}

/* ---------------------------------------------------------- transcribe */

/* Reads and transcribes one input; the result, or NULL with the failure
 * reported. */
static hv_result *transcribe_input(hv_context *ctx, const hv_vad *vad, const options *o,
                                   const char *path, int rate) {
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
    /* the segments are cues of the timed words (docs/TIMESTAMPS.md
     * "Segments"): every output that shows segments times the words */
    tp.word_timestamps =
        o->word_timestamps || o->timestamps || !(o->formats.n == 1 && o->format == FMT_TXT);
    const char *slash = strrchr(path, '/');
    progress pr = {.name = slash && slash[1] ? slash + 1 : path,
                   .path = path,
                   .mode = o->progress,
                   .t0 = hvt_now_s()};
    if (o->progress) {
        tp.progress = on_progress;
        tp.progress_user = &pr;
    }
    stream_out so = {.o = o, .path = path, .pr = &pr};
    if (o->stream || o->txt_live) {
        if (!(so.file = hv_utf8_clean(path))) {
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
    progress_clear(&pr);
    /* --stream: a vtt without cues still has its header */
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

/* Whether every output file of input i is there. */
static int outputs_exist(const options *o, int i) {
    for (int k = 0; k < o->formats.n; k++)
        if (!output_exists(o->out_paths[i * o->formats.n + k])) return 0;
    return 1;
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
static int write_output_file(const options *o, out_format fmt, const char *input,
                             const char *out_path, const hv_result *res) {
    if (strcmp(input, "-") != 0 && same_file(input, out_path)) {
        errorf("%s: not overwriting the input %s", out_path, input);
        return -1;
    }
    out_file of;
    if (out_open(&of, out_path) != 0) return -1;
    if (write_result(of.f, o, fmt, input, res) != 0) {
        out_abort(&of);
        file_error(input, HV_ERR_NOMEM, "out of memory formatting the output");
        return -1;
    }
    return out_commit(&of, out_path);
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
    static out_file shared; /* static: large */
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
    for (int i = 0; o.skip_existing && i < o.n_files; i++) n_todo -= outputs_exist(&o, i);

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
            summarize(&summary_fd, &o, o.files[i],
                      o.out_paths ? o.out_paths[i * o.formats.n] : NULL, "skipped", NULL, -1,
                      hvt_now_s(), &rc);
        goto done;
    }
    hv_status st = hv_model_load(o.model_dir, &mp, &model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err[0] ? err : hv_status_name(st));
        rc = 1;
        goto done;
    }
    if (o.language && !hvt_model_has_language(model, o.language)) {
        if (strcmp(o.language, "auto") == 0)
            fprintf(stderr,
                    "hviske: -l auto: language detection is not available (the model is "
                    "told the language; it cannot tell it): give -l with one of %s's "
                    "languages (supported:",
                    o.model_dir);
        else
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

    int rate = hv_model_sample_rate(model);
    rc = 0;
    ran = 1;
    for (int i = 0; i < o.n_files; i++) {
        const char *path = o.files[i];
        int nf = o.formats.n;
        const char *out_path = o.to_files ? o.out_paths[i * nf] : NULL;
        double t0 = hvt_now_s();
        if (o.skip_existing && outputs_exist(&o, i)) {
            summarize(&summary_fd, &o, path, out_path, "skipped", NULL, -1, t0, &rc);
            continue;
        }
        hv_result *res = transcribe_input(ctx, vad, &o, path, rate);
        if (!res) {
            rc = 1;
            summarize(&summary_fd, &o, path, out_path, "error", g_error, -1, t0, &rc);
            continue;
        }
        int ok = 0;
        if (o.to_files) {
            ok = 1;
            for (int k = 0; k < nf; k++)
                if (write_output_file(&o, o.formats.f[k], path, o.out_paths[i * nf + k], res) != 0)
                    rc = 1, ok = 0;
        } else if ((o.stream && o.format != FMT_JSONL) || o.txt_live) {
            ok = 1; /* written segment by segment */
        } else if (write_result(out, &o, o.format, path, res) != 0) {
            file_error(path, HV_ERR_NOMEM,
                       "out of memory formatting the "
                       "output");
            rc = 1;
        } else {
            ok = 1;
            if (!to_file)
                fflush(stdout);
            else if (shared.in_place)
                hv_out_flush(&shared); /* a FIFO's reader gets it now */
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
            if (out_commit(&shared, o.output) != 0) rc = 1;
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
        for (int i = 0; i < o.n_files * o.formats.n; i++) free(o.out_paths[i]);
    free(o.out_paths);
    free(o.files);
    hvt_list_free(o.list, o.n_list);
    return rc;
}
