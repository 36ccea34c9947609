/* hviske's command line (options.h). */
#include "options.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs.h"
#include "cue_options.h"
#include "cmdline.h"

const char CLI_PROG[] = "hviske";

/* What bare "hviske" prints: the form of a command and where help is. */
static void short_usage(FILE *f) {
    fputs("Usage: hviske -m MODEL_DIR [options] FILE...\n"
          "Transcribes audio files to text: one line per file on stdout.\n"
          "  hviske -m models/demo examples/da-example.wav   (the bundled demo)\n"
          "  hviske -m MODEL_DIR --format srt -o talk.srt talk.m4a\n"
          "Often used: -l LANG, --format txt|srt|vtt|json|jsonl|csv, -o FILE,\n"
          "--output-dir DIR, -t N, --beams N, --word-timestamps.\n"
          "Every option: hviske --help (also man hviske, docs/CLI.md).\n",
          f);
}

static void usage(FILE *f) {
    fprintf(f, "Usage: hviske -m MODEL_DIR [options] FILE...\n"
               "       hviske -m MODEL_DIR [options] --files-from LIST\n"
               "Transcribes audio files (WAV, FLAC, OGG/Opus, MP3, M4A, WebM, ...;\n"
               "'-' reads one from standard input) to text. By default one line per file on\n"
               "stdout, in order (line breaks inside a transcript become spaces);\n"
               "errors go to stderr.\n"
               "\n"
               "  -m, --model DIR        checkpoint directory (config.json,\n"
               "                         tokenizer.model, model.safetensors, ...)\n");
    hvt_param_usage_as(f, 'l', "language", 25, NULL);
    fprintf(f, "      --no-punctuation   ask for text without punctuation\n"
               "  -t, --threads N        worker threads, 1..256 (default: all cores)\n"
               "      --weight-type T    auto (default: the checkpoint's own type,\n"
               "                         read in place), f32, f16, bf16, q8_0 or\n"
               "                         q4_0\n"
               "      --compute MODE     auto (default: bf16 on a CPU with AMX or\n"
               "                         AMD's AVX512-BF16, Zen 4 and 5, and\n"
               "                         weights of 16 bits or fewer, else f32),\n"
               "                         f32 (token for token the f32 reference)\n"
               "                         or bf16\n");
    hvt_param_usage(f, "max-tokens");
    hvt_param_usage(f, "dither");
    fprintf(f, "  -q, --quiet            no progress display, no warnings, and plain\n"
               "                         txt (no times) on a terminal\n"
               "      --progress         progress lines on stderr also when it is not\n"
               "                         a terminal: 'hviske: FILE: progress P%%\n"
               "                         done_s=D total_s=T speed=X eta_s=E'\n"
               "\n"
               "Long audio and speech detection:\n");
    hvt_param_usage(f, "chunking");
    hvt_param_usage(f, "chunk-seconds");
    hvt_vad_usage(f);
    fprintf(f, "\n"
               "Output:\n"
               "      --format F[,F...]  txt (default): the transcript, one line\n"
               "                         per file; jsonl: one JSON object per line\n"
               "                         per file (file, text, tokens,\n"
               "                         token_logprobs, score, timings, segments);\n"
               "                         json: one indented JSON document per file\n"
               "                         (adds language and duration); srt, vtt:\n"
               "                         subtitles, cues of whole sentences or\n"
               "                         clauses timed by word (docs/CLI.md); csv:\n"
               "                         start,end,text per segment (ms);\n"
               "                         whisper-json: whisper-cli's -oj layout;\n"
               "                         openai-diarized-json: OpenAI's diarized_json\n"
               "                         (turns --diarize on). Any\n"
               "                         case. Several joined by commas (txt,srt,json):\n"
               "                         one file per input and format, beside the\n"
               "                         input or in --output-dir\n"
               "  -otxt -osrt -ovtt -ocsv -oj -ojf  whisper-cli's flags: add the\n"
               "                         format (-oj: whisper-json, -ojf: with\n"
               "                         tokens), written to INPUT.EXT beside each\n"
               "                         input as whisper-cli does (rec.wav ->\n"
               "                         rec.wav.srt), or BASE.EXT with -of BASE.\n"
               "                         Its other flags (-f, -ot, -d, -ml, -bs, -tp,\n"
               "                         -np, -nt, -pp, ...) as docs/CLI.md lists\n"
               "      --json             same as --format jsonl\n"
               "      --print-timestamps txt: one '[MM:SS.mmm --> MM:SS.mmm] text' line\n"
               "                         per segment (the default on a terminal,\n"
               "                         shown as each segment is final)\n");
    hvt_param_usage_as(f, 0, "word-timestamps", 25,
                       "json, jsonl: \"words\" in each result and segment");
    fprintf(f, HVT_CUE_USAGE
            "  -o, --output FILE      write to FILE instead of stdout ('-':\n"
            "                         stdout), in the format its extension names\n"
            "                         when no --format is given (out.srt: srt);\n"
            "                         with several inputs only for txt and jsonl\n"
            "                         (one line per input)\n"
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
            "Decoding (default: greedy):\n");
    hvt_param_usage(f, "beams");
    hvt_param_usage(f, "length-penalty");
    hvt_param_usage(f, "sample");
    hvt_param_usage_as(f, 0, "temperature", 25,
                       "given alone it means --sample (as the server's temperature > 0); a list "
                       "T1,T2,... (e.g. 0,0.2,0.4,0.6,0.8,1) decodes each chunk again at the next "
                       "temperature while its text fails the fallback's thresholds (0: greedy, "
                       "or --beams N)");
    static const char *const sampling[] = {"top-k",
                                           "top-p",
                                           "seed",
                                           "compression-ratio-threshold",
                                           "log-prob-threshold",
                                           "no-speech-threshold",
                                           "hotwords",
                                           "hotwords-score",
                                           "repetition-penalty",
                                           "no-repeat-ngram-size"};
    for (size_t i = 0; i < sizeof sampling / sizeof *sampling; i++) hvt_param_usage(f, sampling[i]);
    fprintf(f, "      --diarize          a diarize-and-timestamp model's speaker turns:\n"
               "                         one segment per turn, with its speaker\n"
               "                         (docs/DIARIZE.md)\n");
    hvt_param_usage(f, "diarize-voice");
    fprintf(f, "      --srt-speakers S   srt with --diarize: label (default) opens each\n"
               "                         cue with [SPEAKER_00], dash opens a turn's\n"
               "                         first cue with \"- \"\n"
               "  -h, --help             show this help and exit\n"
               "      --version          show the version and exit\n"
               "\n"
               "Output files are written whole or not at all (a temporary file in\n"
               "the same directory, renamed when complete); a symlink is followed, and\n"
               "a device, FIFO or socket is written in place. Progress (percentage,\n"
               "speed, time left) is shown on stderr when it is a terminal. With\n"
               "several inputs, each txt line starts with 'FILE: '. On a terminal each\n"
               "output file written is named ('hviske: wrote FILE').\n"
               "\n"
               "Exit status: 0 success, 1 a file, the model or the output failed,\n"
               "2 bad usage.\n");
}

void cli_add_format(cli_formats *l, hv_output_format f) {
    for (int k = 0; k < l->n; k++)
        if (l->f[k] == f) return;
    l->f[l->n++] = f;
}

/* --format NAME[,NAME...]; 0 if each is a format's name (any case). */
static int parse_format(const char *arg, void *value) {
    cli_formats l = {.n = 0};
    for (const char *p = arg;;) {
        size_t len = strcspn(p, ",");
        hv_output_format f;
        if (hvt_format_parse_n(p, len, &f) != 0) return -1;
        cli_add_format(&l, f);
        if (!p[len]) break;
        p += len + 1;
    }
    *(cli_formats *)value = l;
    return 0;
}

/* 1 if f is one of the output formats. */
static int has_format(const cli_options *o, hv_output_format f) {
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
    O_COMPRESSION_RATIO_THRESHOLD,
    O_LOG_PROB_THRESHOLD,
    O_NO_SPEECH_THRESHOLD,
    O_TOP_K,
    O_TOP_P,
    O_SEED,
    O_HOTWORDS,
    O_HOTWORDS_SCORE,
    O_REPETITION_PENALTY,
    O_NO_REPEAT_NGRAM_SIZE,
    O_DIARIZE,
    O_DIARIZE_VOICE,
    O_SRT_SPEAKERS,
    O_HELP,
    O_VERSION,
    N_OPTS
};

#define AT(field) offsetof(cli_options, field)
static const hvt_option OPTIONS[N_OPTS] = {
    [O_MODEL] = HVT_OPT_STRING("model", 'm', AT(model_dir)),
    [O_LANGUAGE] = {.name = "language", .short_name = 'l', .arg = HVT_PARAM, .offset = AT(tp)},
    [O_NO_PUNCT] = HVT_OPT_FLAG("no-punctuation", 0),
    [O_THREADS] = HVT_OPT_THREADS(AT(n_threads)),
    [O_WEIGHT_TYPE] = HVT_OPT_CUSTOM("weight-type", AT(weight_type), hvt_parse_weight_type,
                                     "auto, f32, f16, bf16, q8_0 or q4_0"),
    [O_COMPUTE] = HVT_OPT_COMPUTE(AT(compute)),
    [O_MAX_TOKENS] = HVT_OPT_PARAM("max-tokens", AT(tp)),
    [O_DITHER] = HVT_OPT_PARAM("dither", AT(tp)),
    [O_QUIET] = HVT_OPT_FLAG("quiet", 'q'),
    [O_CHUNKING] = HVT_OPT_PARAM("chunking", AT(tp)),
    [O_CHUNK_SECONDS] = HVT_OPT_PARAM("chunk-seconds", AT(tp)),
    HVT_VAD_OPTION_ROWS(cli_options),
    [O_FORMAT] =
        HVT_OPT_CUSTOM("format", AT(formats), parse_format,
                       "txt, json, jsonl, srt, vtt, csv, whisper-json or openai-diarized-json, or "
                       "several joined by "
                       "commas"),
    [O_JSON] = HVT_OPT_FLAG("json", 0),
    [O_WORD_TIMESTAMPS] = HVT_OPT_FLAG("word-timestamps", 0),
    [O_STREAM] = HVT_OPT_FLAG("stream", 0),
    [O_PRINT_TIMESTAMPS] = HVT_OPT_FLAG("print-timestamps", 0),
    [O_PROGRESS] = HVT_OPT_FLAG("progress", 0),
    HVT_CUE_OPTION_ROWS(cli_options),
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
    [O_BEAMS] = HVT_OPT_PARAM("beams", AT(tp)),
    [O_LENGTH_PENALTY] = HVT_OPT_PARAM("length-penalty", AT(tp)),
    [O_SAMPLE] = HVT_OPT_FLAG("sample", 0),
    [O_TEMPERATURE] = HVT_OPT_CUSTOM("temperature", AT(temperature), hvt_parse_temperatures,
                                     "a finite number >= 0, or at most 6 joined by commas"),
    [O_COMPRESSION_RATIO_THRESHOLD] = HVT_OPT_PARAM("compression-ratio-threshold", AT(tp)),
    [O_LOG_PROB_THRESHOLD] = HVT_OPT_PARAM("log-prob-threshold", AT(tp)),
    [O_NO_SPEECH_THRESHOLD] = HVT_OPT_PARAM("no-speech-threshold", AT(tp)),
    [O_TOP_K] = HVT_OPT_PARAM("top-k", AT(tp)),
    [O_TOP_P] = HVT_OPT_PARAM("top-p", AT(tp)),
    [O_SEED] = HVT_OPT_PARAM("seed", AT(tp)),
    [O_HOTWORDS] = HVT_OPT_PARAM("hotwords", AT(tp)),
    [O_HOTWORDS_SCORE] = HVT_OPT_PARAM("hotwords-score", AT(tp)),
    [O_REPETITION_PENALTY] = HVT_OPT_PARAM("repetition-penalty", AT(tp)),
    [O_NO_REPEAT_NGRAM_SIZE] = HVT_OPT_PARAM("no-repeat-ngram-size", AT(tp)),
    [O_DIARIZE] = HVT_OPT_FLAG("diarize", 0),
    [O_DIARIZE_VOICE] = HVT_OPT_PARAM("diarize-voice", AT(tp)),
    [O_SRT_SPEAKERS] =
        HVT_OPT_CUSTOM("srt-speakers", AT(srt_speakers), hvt_parse_srt_speakers, "label or dash"),
    [O_HELP] = HVT_OPT_HELP,
    [O_VERSION] = HVT_OPT_VERSION,
};
#undef AT

/* The options that cannot go together, in the order they are reported;
 * -1 when none, otherwise the exit status. */
static int check_combinations(cli_options *o, const int *given) {
    if (given[O_JSON]) {
        if ((given[O_FORMAT] || o->aliases) && (o->formats.n != 1 || o->format != HV_OUTPUT_JSONL))
            return hvt_usage_error(CLI_PROG,
                                   "--json (= --format jsonl) and --format %s cannot be "
                                   "combined",
                                   hv_output_format_name(o->format));
        o->formats.n = 0;
        cli_add_format(&o->formats, HV_OUTPUT_JSONL);
        o->format = HV_OUTPUT_JSONL;
    }
    if (o->output && o->output_dir)
        return hvt_usage_error(CLI_PROG, "--output and --output-dir cannot be "
                                         "combined");
    if (o->n_whisper_bases && (o->output || o->output_dir))
        return hvt_usage_error(CLI_PROG, "-of BASE names the output files itself: no %s with it",
                               o->output ? "-o" : "--output-dir");
    if (o->no_timestamps && given[O_PRINT_TIMESTAMPS])
        return hvt_usage_error(CLI_PROG, "-nt (no timestamps) and --print-timestamps cannot be "
                                         "combined");
    if (o->n_whisper_bases == 1 && strcmp(o->whisper_bases[0], "-") == 0) {
        /* -of -: whisper-cli's standard output, for one format */
        if (o->formats.n != 1)
            return hvt_usage_error(CLI_PROG,
                                   "-of - writes one format to standard output (%d "
                                   "given)",
                                   o->formats.n);
        o->n_whisper_bases = 0;
        o->aliases = 0;
        o->output = "-";
    }
    o->whisper_names = (o->aliases || o->n_whisper_bases) && !o->output_dir;
    if (o->formats.n > 1 && o->output && strcmp(o->output, "-") != 0)
        return hvt_usage_error(CLI_PROG,
                               "-o %s holds one format: with several formats each input's "
                               "outputs go beside it, or into --output-dir DIR",
                               o->output);
    if (o->output && !strchr(o->output, '/') && !strchr(o->output, '.')) {
        /* "-o srt": whisper-cli's -osrt written apart, not a file name */
        cli_formats l;
        if (parse_format(o->output, &l) == 0 || strcmp(o->output, "j") == 0 ||
            strcmp(o->output, "jf") == 0 || strcmp(o->output, "lrc") == 0)
            return hvt_usage_error(CLI_PROG,
                                   "-o %s would write a file named '%s': for the format use "
                                   "--format (whisper-cli's -o%s); for such a file write ./%s",
                                   o->output, o->output, o->output, o->output);
    }
    if (o->tp.do_sample && o->tp.num_beams > 1)
        return hvt_usage_error(CLI_PROG,
                               "--sample and --beams %d cannot be "
                               "combined (sampling uses one beam)",
                               o->tp.num_beams);
    /* the work budget (hv_work_check: beams, draws and temperatures
     * tried), as hv_transcribe checks it, before any input is read */
    hv_transcribe_params tp = cli_transcribe_params(o, NULL);
    char msg[512];
    if (hv_work_check(&tp, HV_MAX_BEAMS, msg, sizeof msg))
        return hvt_usage_error(CLI_PROG, "%s", msg);
    if (o->tp.chunking == HV_CHUNKING_FIXED && o->tp.chunk_seconds == 0.0f)
        return hvt_usage_error(CLI_PROG, "--chunking fixed needs "
                                         "--chunk-seconds S");
    if (o->stream && !hv_output_format_by_segment(o->format))
        return hvt_usage_error(CLI_PROG,
                               "--stream works with --format txt, jsonl, srt or vtt "
                               "(%s is one document per input)",
                               hv_output_format_name(o->format));
    if (o->stream && (o->formats.n > 1 || o->aliases || o->n_whisper_bases))
        return hvt_usage_error(CLI_PROG, "--stream writes one format to standard output; output "
                                         "files are written whole (drop --stream, or the formats)");
    if (o->stream && ((o->output && strcmp(o->output, "-") != 0) || o->output_dir))
        return hvt_usage_error(CLI_PROG, "--stream writes to standard output; output files are "
                                         "written whole (drop --stream, or -o/--output-dir)");
    if (!o->model_dir) return hvt_usage_error(CLI_PROG, "no model given (use -m MODEL_DIR)");
    if (given[O_SHARD_COUNT] && given[O_SHARD_COUNT_ENV])
        return hvt_usage_error(CLI_PROG, "--shard-count and --shard-count-env cannot be combined");
    if (given[O_SHARD] && (given[O_SHARD_COUNT] || given[O_SHARD_COUNT_ENV]))
        return hvt_usage_error(CLI_PROG, "--shard K/N gives the count itself: no --%s with it",
                               given[O_SHARD_COUNT] ? "shard-count" : "shard-count-env");
    if (!o->files_from && (given[O_SHARD_COUNT] || given[O_SHARD_COUNT_ENV]))
        return hvt_usage_error(CLI_PROG,
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
static int select_shard(cli_options *o) {
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
static int take_inputs(cli_options *o, int argc, char **argv, const int *given) {
    char **all = argv + optind;
    int n_all = argc - optind;
    if (o->files_from) {
        char err[1024];
        if (optind < argc)
            return hvt_usage_error(CLI_PROG,
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
        return hvt_usage_error(CLI_PROG, "no input files");
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
    if (n_stdin > 1)
        return hvt_usage_error(CLI_PROG, "'-' (standard input) given %d times", n_stdin);
    /* output files: --output-dir, several formats or whisper-cli's flags,
     * or documents of several inputs without -o: beside each input */
    int to_stdout = !o->output || strcmp(o->output, "-") == 0;
    if (o->n_whisper_bases > o->n_files)
        return hvt_usage_error(CLI_PROG, "-of given %d times for %d input%s", o->n_whisper_bases,
                               o->n_files, o->n_files == 1 ? "" : "s");
    o->to_files = o->output_dir || o->formats.n > 1 || o->aliases || o->n_whisper_bases ||
                  (o->n_files > 1 && !hv_output_format_is_stream(o->format) && !o->output);
    if (o->n_files > 1 && !o->to_files && !hv_output_format_is_stream(o->format))
        return hvt_usage_error(CLI_PROG,
                               "--format %s writes one document per "
                               "input: with %d inputs use --output-dir DIR (or no -o: "
                               "each beside its input)",
                               hv_output_format_name(o->format), o->n_files);
    if (o->to_files && !to_stdout)
        return hvt_usage_error(CLI_PROG,
                               "-o %s holds one output: the formats given write a file "
                               "per input (beside it, or into --output-dir DIR)",
                               o->output);
    if (o->skip_existing && !o->to_files)
        return hvt_usage_error(CLI_PROG, "--skip-existing needs output files (--output-dir DIR): "
                                         "it looks for them");
    if (!o->to_files) return select_shard(o);
    int nf = o->formats.n, n_paths = o->n_files * nf;
    o->out_paths = calloc((size_t)n_paths, sizeof *o->out_paths);
    if (!o->out_paths) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < n_paths; i++) {
        const char *input = o->files[i / nf], *ext = hv_output_format_ext(o->formats.f[i % nf]);
        if (o->whisper_names) /* whisper-cli's: rec.wav -> rec.wav.srt, -of BASE -> BASE.srt */
            o->out_paths[i] = cli_whisper_output_path(
                i / nf < o->n_whisper_bases ? o->whisper_bases[i / nf] : input, ext);
        else
            o->out_paths[i] = cli_output_path(o->output_dir, input, ext);
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
    if (dup && a / nf == b / nf) /* json and openai-diarized-json: both .json */
        return hvt_usage_error(CLI_PROG, "formats %s and %s would both write %s",
                               hv_output_format_name(o->formats.f[a % nf]),
                               hv_output_format_name(o->formats.f[b % nf]), o->out_paths[a]);
    if (dup)
        return hvt_usage_error(CLI_PROG,
                               "inputs '%s' and '%s' would "
                               "both write %s",
                               o->files[a / nf], o->files[b / nf], o->out_paths[a]);
    return select_shard(o);
}

/* Options of a mode that is off are harmless but probably not what was
 * meant: say so, and go on. Of the sampling options, the last one given
 * is named. */
static void warn_ignored(const cli_options *o, const int *given) {
    static const int sampling[] = {O_TEMPERATURE, O_TOP_K, O_TOP_P, O_SEED};
    int last = -1;
    for (size_t k = 0; k < sizeof sampling / sizeof *sampling; k++)
        if (given[sampling[k]] && (last < 0 || given[sampling[k]] > given[last]))
            last = sampling[k];
    if (o->temperature.n > 1) /* the list's temperatures above 0 sample */
        last = -1;
    if (last >= 0 && !o->tp.do_sample && o->tp.num_beams > 1)
        fprintf(stderr, "hviske: warning: --%s has no effect with --beams %d (beam search)\n",
                OPTIONS[last].name, o->tp.num_beams);
    else if (last >= 0 && !o->tp.do_sample)
        fprintf(stderr, "hviske: warning: --%s has no effect without --sample (or --temperature)\n",
                OPTIONS[last].name);
    static const int thresholds[] = {O_COMPRESSION_RATIO_THRESHOLD, O_LOG_PROB_THRESHOLD,
                                     O_NO_SPEECH_THRESHOLD};
    for (size_t k = 0; k < sizeof thresholds / sizeof *thresholds; k++)
        if (given[thresholds[k]] && o->temperature.n <= 1)
            fprintf(stderr,
                    "hviske: warning: --%s has no effect without a --temperature list "
                    "(T1,T2,...: the fallback)\n",
                    OPTIONS[thresholds[k]].name);
    if (given[O_LENGTH_PENALTY] && o->tp.num_beams <= 1)
        fprintf(stderr, "hviske: warning: --length-penalty has no effect "
                        "without --beams N (N > 1)\n");
    if (o->tp.chunk_seconds > 0.0f && o->tp.chunking != HV_CHUNKING_FIXED)
        fprintf(stderr, "hviske: warning: --chunk-seconds has no effect "
                        "without --chunking fixed\n");
    for (int k = O_MAX_CUE_SECONDS; k <= O_MAX_LINE_CHARS; k++)
        if (given[k] && !has_format(o, HV_OUTPUT_SRT) && !has_format(o, HV_OUTPUT_VTT)) {
            fprintf(stderr, "hviske: warning: --%s has no effect with --format %s\n",
                    OPTIONS[k].name, hv_output_format_name(o->format));
            break;
        }
    if (given[O_PRINT_TIMESTAMPS] && !has_format(o, HV_OUTPUT_TXT))
        fprintf(stderr, "hviske: warning: --print-timestamps has no effect with --format %s\n",
                hv_output_format_name(o->format));
    if (given[O_WORD_TIMESTAMPS] && !has_format(o, HV_OUTPUT_JSON) &&
        !has_format(o, HV_OUTPUT_JSONL))
        fprintf(stderr, "hviske: warning: --word-timestamps has no effect with --format %s%s\n",
                hv_output_format_name(o->format),
                o->format == HV_OUTPUT_TXT ? "" : " (subtitles are timed by word anyway)");
    for (int k = O_VAD_MODEL; k <= O_VAD_MAX_GAP; k++)
        if (given[k] && !hvt_chunking_uses_vad(o->tp.chunking)) {
            fprintf(stderr,
                    "hviske: warning: --%s has no effect with "
                    "--chunking %s\n",
                    OPTIONS[k].name,
                    o->tp.chunking == HV_CHUNKING_ENERGY  ? "energy"
                    : o->tp.chunking == HV_CHUNKING_FIXED ? "fixed"
                                                          : "none");
            break;
        }
}

/* Fills o from argv. Returns -1 to go on, otherwise the exit status
 * (0 after --help or --version). */
int cli_parse_options(int argc, char **argv, cli_options *o, cli_flags_fn other_flags) {
    static const hvt_cli cli = {CLI_PROG, usage, OPTIONS, N_OPTS};
    hv_transcribe_params defaults = hv_transcribe_default_params();
    *o = (cli_options){.tp = defaults,
                       .formats = {.n = 0},
                       .temperature = {.t = {defaults.temperature}, .n = 1},
                       .cues = hv_cue_default_params(),
                       .format = HV_OUTPUT_TXT};
    int given[N_OPTS];
    if (argc <= 1) { /* bare "hviske": what it takes, and where help is */
        short_usage(stderr);
        return HVT_EXIT_USAGE;
    }
    int rc = other_flags(&argc, argv, o);
    if (rc >= 0) return rc;
    argv = o->argv;
    cli_formats aliased = o->formats;
    rc = hvt_parse_options(&cli, argc, argv, o, given);
    if (rc >= 0) return rc;
    if (given[O_FORMAT]) /* --format's formats, then the aliases' */
        for (int k = 0; k < aliased.n; k++) cli_add_format(&o->formats, aliased.f[k]);
    else
        o->formats = aliased;
    /* -o FILE without a format: the one its extension names */
    hv_output_format by_ext;
    int ext = o->output && strcmp(o->output, "-") != 0 &&
              hv_output_format_of_path(o->output, &by_ext) == 0;
    if (o->formats.n == 0 && !given[O_JSON] && ext) cli_add_format(&o->formats, by_ext);
    if (o->formats.n == 0)
        cli_add_format(&o->formats, given[O_JSON] ? HV_OUTPUT_JSONL : HV_OUTPUT_TXT);
    o->format = o->formats.f[0];
    o->silent = given[O_QUIET] || o->no_prints;
    if (ext && o->formats.n == 1 && by_ext != o->format &&
        !(by_ext == HV_OUTPUT_JSON && o->format == HV_OUTPUT_WHISPER_JSON) && !o->silent)
        fprintf(stderr, "hviske: warning: -o %s: its extension says %s, the format is %s\n",
                o->output, hv_output_format_name(by_ext), hv_output_format_name(o->format));
    o->tp.punctuation = !given[O_NO_PUNCT];
    /* a temperature means sampling, as on the server, unless beam search
     * is asked for; a list is the fallback, which samples at each
     * temperature above 0 */
    int list = o->temperature.n > 1;
    if (list && given[O_SAMPLE])
        return hvt_usage_error(CLI_PROG, "--sample samples at one temperature; with a list of "
                                         "--temperature values each one above 0 samples");
    o->tp.do_sample =
        !list && (given[O_SAMPLE] != 0 || (given[O_TEMPERATURE] && o->tp.num_beams <= 1));
    o->quiet = given[O_QUIET] != 0;
    o->word_timestamps |= given[O_WORD_TIMESTAMPS] != 0;
    o->tp.diarize = given[O_DIARIZE] != 0;
    /* OpenAI's diarized_json is a diarized transcription's, as on the server */
    for (int k = 0; k < o->formats.n; k++)
        if (o->formats.f[k] == HV_OUTPUT_OPENAI_DIARIZED_JSON) o->tp.diarize = 1;
    o->stream = given[O_STREAM] != 0;
    o->skip_existing = given[O_SKIP_EXISTING] != 0;
    if ((rc = check_combinations(o, given)) >= 0 || (rc = take_inputs(o, argc, argv, given)) >= 0)
        return rc;
    /* the console: txt on a terminal shows each segment with its times as
     * it is final; progress on a terminal is a redrawn line, elsewhere
     * lines only with --progress */
    int to_stdout = !o->to_files && (!o->output || strcmp(o->output, "-") == 0);
    o->timestamps =
        o->format == HV_OUTPUT_TXT && !o->no_timestamps &&
        (given[O_PRINT_TIMESTAMPS] || (!o->quiet && to_stdout && isatty(STDOUT_FILENO)));
    o->txt_live = o->format == HV_OUTPUT_TXT && to_stdout && (o->stream || o->timestamps);
    if (isatty(STDERR_FILENO))
        o->progress = !o->silent || given[O_PROGRESS] ? 1 : 0;
    else
        o->progress = given[O_PROGRESS] ? 2 : 0;
    o->notices = !o->silent && isatty(STDERR_FILENO);
    o->name_lines = o->format == HV_OUTPUT_TXT && o->n_inputs > 1 && !o->to_files;
    if (!o->silent) warn_ignored(o, given);
    return -1;
}

void cli_options_free(cli_options *o) {
    free(o->argv);
    free(o->whisper_files);
    free(o->whisper_bases);
    o->argv = NULL;
    o->whisper_files = o->whisper_bases = NULL;
    if (o->out_paths)
        for (int i = 0; i < o->n_files * o->formats.n; i++) free(o->out_paths[i]);
    free(o->out_paths);
    free(o->files);
    hvt_list_free(o->list, o->n_list);
    o->out_paths = NULL;
    o->files = NULL;
    o->list = NULL;
}

hv_transcribe_params cli_transcribe_params(const cli_options *o, const hv_vad *vad) {
    hv_transcribe_params tp = o->tp;
    hvt_set_temperatures(&tp, &o->temperature);
    tp.vad = vad;
    /* the segments are cues of the timed words (docs/TIMESTAMPS.md
     * "Segments"): every output that shows segments times the words */
    tp.word_timestamps =
        o->word_timestamps || o->timestamps || !(o->formats.n == 1 && o->format == HV_OUTPUT_TXT);
    return tp;
}

hv_output_spec cli_format_spec(const cli_options *o, const hv_model *model) {
    hv_output_spec s = {.size = sizeof s,
                        .format = o->format,
                        .cues = o->cues,
                        .words = o->word_timestamps,
                        .timestamps = o->timestamps,
                        .name_lines = o->name_lines,
                        .model_dir = o->model_dir,
                        .model = model,
                        .srt_speakers = o->srt_speakers};
    return s;
}
