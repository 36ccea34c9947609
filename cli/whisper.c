/* whisper-cli's flags on hviske's command line (whisper.h). */
#include "whisper.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "cmdline.h"

/* What a whisper-cli flag does here. */
typedef enum w_action {
    W_OPTION,      /* becomes hviske's option `to` (with the flag's value, or
                   `value` for a flag without one) */
    W_FORMAT,      /* adds the format `fmt` (files named as whisper-cli does) */
    W_INPUT,       /* -f FILE: an input */
    W_BASE,        /* -of BASE: the output base name of the next input */
    W_OFFSET,      /* -ot N: start at N ms */
    W_DURATION,    /* -d N: N ms of audio */
    W_MAX_LEN,     /* -ml N: cues of one line of at most N characters */
    W_TEMPERATURE, /* -tp, -tpi, -nf: the temperature fallback's list */
    W_THRESHOLD,   /* -lpt, -nth: hviske's option `to`, and the fallback on */
    W_NO_PRINTS,
    W_NO_TIMESTAMPS,
    W_NOTHING,   /* what hviske always does: accepted, changes nothing */
    W_SAME,      /* accepted with a notice when the value is one of `value`
                  (a comma-separated list of numbers; NULL for a flag
                  without one): it asks for what hviske does anyway,
                  `to` says what; refused with that reason otherwise */
    W_UNUSED,    /* accepted with a notice whatever its value, which hviske
                    has no use for (`to` says why): the prompt */
    W_VAD_MODEL, /* -vm: --vad-model DIR, or whisper.cpp's ggml Silero file:
                    the bundled detector, with a notice */
    W_REFUSE     /* refused by its name, saying why */
} w_action;

typedef struct w_flag {
    const char *flag, *long_flag; /* either may be NULL */
    int takes_value;
    w_action action;
    const char *to; /* W_OPTION: hviske's option; W_REFUSE: why */
    const char *value;
    int fmt; /* W_FORMAT */
    int words;
} w_flag;

#define OPT(f, l, v, to_)                                                                          \
    { f, l, v, W_OPTION, to_, NULL, 0, 0 }
#define SET(f, l, to_, value_)                                                                     \
    { f, l, 0, W_OPTION, to_, value_, 0, 0 }
#define FORMAT(f, l, fmt_, words_)                                                                 \
    { f, l, 0, W_FORMAT, NULL, NULL, fmt_, words_ }
#define DO(f, l, v, action_)                                                                       \
    { f, l, v, action_, NULL, NULL, 0, 0 }
#define NO(f, l, v, why)                                                                           \
    { f, l, v, W_REFUSE, why, NULL, 0, 0 }
#define SAME(f, l, v, values, why)                                                                 \
    { f, l, v, W_SAME, why, values, 0, 0 }
#define UNUSED(f, l, v, why)                                                                       \
    { f, l, v, W_UNUSED, why, NULL, 0, 0 }

/* Every flag of whisper-cli's --help but -h, -l, -t and -m (hviske's own,
 * the same). docs/CLI.md "whisper-cli's flags" lists them. */
static const w_flag FLAGS[] = {
    DO("-f", "--file", 1, W_INPUT),
    DO("-of", "--output-file", 1, W_BASE),
    DO("-ot", "--offset-t", 1, W_OFFSET),
    DO("-d", "--duration", 1, W_DURATION),
    DO("-ml", "--max-len", 1, W_MAX_LEN),
    DO("-np", "--no-prints", 0, W_NO_PRINTS),
    DO("-nt", "--no-timestamps", 0, W_NO_TIMESTAMPS),
    SET("-pp", "--print-progress", "--progress", NULL),
    OPT("-bs", "--beam-size", 1, "--beams"),
    /* --temperature is hviske's own (a list), as whisper-cli's takes one */
    DO("-tp", NULL, 1, W_TEMPERATURE),
    DO("-tpi", "--temperature-inc", 1, W_TEMPERATURE),
    DO("-nf", "--no-fallback", 0, W_TEMPERATURE),
    FORMAT("-otxt", "--output-txt", HV_OUTPUT_TXT, 0),
    FORMAT("-osrt", "--output-srt", HV_OUTPUT_SRT, 0),
    FORMAT("-ovtt", "--output-vtt", HV_OUTPUT_VTT, 0),
    FORMAT("-ocsv", "--output-csv", HV_OUTPUT_CSV, 0),
    FORMAT("-oj", "--output-json", HV_OUTPUT_WHISPER_JSON, 0),
    FORMAT("-ojf", "--output-json-full", HV_OUTPUT_WHISPER_JSON, 1),
    SET(NULL, "--vad", "--chunking", "vad"),
    DO("-vm", "--vad-model", 1, W_VAD_MODEL),
    OPT("-vt", NULL, 1, "--vad-threshold"),
    OPT("-vspd", "--vad-min-speech-duration-ms", 1, "--vad-min-speech-ms"),
    OPT("-vsd", "--vad-min-silence-duration-ms", 1, "--vad-min-silence-ms"),
    OPT("-vp", NULL, 1, "--vad-speech-pad-ms"),
    DO("-sow", "--split-on-word", 0, W_NOTHING),
    DO("-ng", "--no-gpu", 0, W_NOTHING),
    DO("-fa", "--flash-attn", 0, W_NOTHING),
    DO("-nfa", "--no-flash-attn", 0, W_NOTHING),
    NO("-tr", "--translate", 0, "the model transcribes; it does not translate"),
    SAME("-bo", "--best-of", 1, "1,5",
         "the temperature fallback samples one candidate per temperature (best-of sampling is "
         "not offered: --beams N searches N hypotheses)"),
    NO("-olrc", "--output-lrc", 0, "LRC is not written; --format txt,srt,vtt,json,jsonl,csv"),
    NO("-owts", "--output-words", 0, "karaoke scripts are not written; --format srt or vtt"),
    NO("-fp", "--font-path", 1, "karaoke scripts (-owts) are not written"),
    SAME("-p", "--processors", 1, "1", "one process transcribes: -t N gives it N threads"),
    SAME("-on", "--offset-n", 1, "0", "segments are always numbered from the first"),
    SAME("-mc", "--max-context", 1, "0", "each chunk is decoded without the text before it"),
    SAME("-ac", "--audio-ctx", 1, "0", "the encoder always takes the whole chunk"),
    SAME("-wt", "--word-thold", 1, "0.01",
         "word times come from cross-attention, without a threshold"),
    {"-lpt", "--logprob-thold", 1, W_THRESHOLD, "--log-prob-threshold", NULL, 0, 0},
    {"-nth", "--no-speech-thold", 1, W_THRESHOLD, "--no-speech-threshold", NULL, 0, 0},
    SAME("-et", "--entropy-thold", 1, "2.4",
         "the fallback measures repetition by the text's compression ratio, not the tokens' "
         "entropy: --compression-ratio-threshold X (default 2.4)"),
    NO("-debug", "--debug-mode", 0, "there is no debug mode"),
    NO("-di", NULL, 0,
       "whisper-cli's stereo diarization is not offered: --diarize reads a diarize model's "
       "speaker turns"),
    NO("-tdrz", "--tinydiarize", 0,
       "tinydiarize is not offered: --diarize reads a diarize model's speaker turns"),
    NO("-ps", "--print-special", 0, "--json lists every token, special ones too"),
    NO("-pc", "--print-colors", 0, "--format json gives each word's probability"),
    NO(NULL, "--print-confidence", 0, "--format json gives each word's probability"),
    NO("-dl", "--detect-language", 0,
       "there is no language detection: the model is told the language (-l)"),
    UNUSED(NULL, "--prompt", 1, "the model family takes no text prompt: not used"),
    NO("-oved", "--ov-e-device", 1, "there is no OpenVINO encoder"),
    NO("-dtw", "--dtw", 1, "word times always come from cross-attention: --word-timestamps"),
    NO("-ls", "--log-score", 0, "--json gives each token's log-prob and the score"),
    SAME("-sns", "--suppress-nst", 0, NULL, "the model writes no non-speech tokens to suppress"),
    NO(NULL, "--suppress-regex", 1, "tokens cannot be suppressed"),
    NO(NULL, "--grammar", 1, "there is no grammar-guided decoding"),
    NO(NULL, "--grammar-rule", 1, "there is no grammar-guided decoding"),
    NO(NULL, "--grammar-penalty", 1, "there is no grammar-guided decoding"),
    NO("-vmsd", "--vad-max-speech-duration-s", 1,
       "speech longer than the model's clip is cut in its quietest moment"),
    NO("-vo", "--vad-samples-overlap", 1, "chunks do not overlap"),
};

static const w_flag *find_flag(const char *arg) {
    for (size_t k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++)
        if ((FLAGS[k].flag && strcmp(arg, FLAGS[k].flag) == 0) ||
            (FLAGS[k].long_flag && strcmp(arg, FLAGS[k].long_flag) == 0))
            return &FLAGS[k];
    return NULL;
}

/* Milliseconds, an integer 0..INT_MAX, as seconds into *out. */
static int take_ms(const char *flag, const char *v, double *out) {
    int ms;
    if (hvt_parse_int(v, 0, INT_MAX, &ms))
        return hvt_usage_error(CLI_PROG, "invalid %s '%s' (expected milliseconds, an integer >= 0)",
                               flag, v);
    *out = ms / 1000.0;
    return -1;
}

/* Adds a line to the notices printed after the flags (unless -np). */
static void note(cli_options *o, const char *fmt, const char *a, const char *b) {
    size_t len = strlen(o->whisper_notes);
    snprintf(o->whisper_notes + len, sizeof o->whisper_notes - len, fmt, a, b);
}

/* One flag with its value v (NULL when it takes none). -1 to go on, or
 * the exit status. */
static int take_flag(const w_flag *w, const char *arg, const char *v, cli_options *o, char **out,
                     int *m) {
    int n;
    switch (w->action) {
        case W_OPTION:
            out[(*m)++] = (char *)w->to;
            if (v || w->value) out[(*m)++] = (char *)(v ? v : w->value);
            return -1;
        case W_FORMAT:
            cli_add_format(&o->formats, (hv_output_format)w->fmt);
            o->word_timestamps |= w->words;
            o->aliases = 1;
            return -1;
        case W_INPUT: o->whisper_files[o->n_whisper_files++] = v; return -1;
        case W_BASE: o->whisper_bases[o->n_whisper_bases++] = v; return -1;
        case W_OFFSET: return take_ms(arg, v, &o->tp.offset_s);
        case W_DURATION: return take_ms(arg, v, &o->tp.duration_s);
        case W_MAX_LEN:
            if (hvt_parse_int(v, 0, HV_CUE_LINE_CHARS_MAX, &n))
                return hvt_usage_error(CLI_PROG, "invalid %s '%s' (expected 0..%d characters)", arg,
                                       v, HV_CUE_LINE_CHARS_MAX);
            if (n > 0 && n < HV_CUE_LINE_CHARS_MIN)
                return hvt_usage_error(CLI_PROG,
                                       "%s %d: hviske's lines hold at least %d characters "
                                       "(--max-line-chars); for each word's time use -ojf or "
                                       "--word-timestamps",
                                       arg, n, HV_CUE_LINE_CHARS_MIN);
            if (n > 0) { /* whisper-cli's segments of at most N characters */
                o->cues.max_lines = 1;
                o->cues.max_line_chars = n;
                o->max_len = 1;
            }
            return -1;
        case W_TEMPERATURE:
            if (strcmp(w->flag, "-tp") == 0)
                o->whisper_tp = v;
            else if (strcmp(w->flag, "-tpi") == 0)
                o->whisper_tpi = v;
            else
                o->whisper_nf = 1;
            return -1;
        case W_THRESHOLD:
            o->whisper_thresholds = 1;
            out[(*m)++] = (char *)w->to;
            out[(*m)++] = (char *)v;
            return -1;
        case W_NO_PRINTS: o->no_prints = 1; return -1;
        case W_NO_TIMESTAMPS: o->no_timestamps = 1; return -1;
        case W_NOTHING: return -1;
        case W_SAME:
            return hvt_whisper_same(CLI_PROG, "whisper-cli", arg, v, w->value, w->to,
                                    o->whisper_notes, sizeof o->whisper_notes);
        case W_UNUSED: note(o, "hviske: note: %s: %s\n", arg, w->to); return -1;
        case W_VAD_MODEL:
            if (hvt_ggml_silero(v)) {
                note(o,
                     "hviske: note: %s %s: whisper.cpp's Silero file; hviske's own Silero detector "
                     "(models/silero-vad, bundled) is used\n",
                     arg, v);
                return -1;
            }
            out[(*m)++] = "--vad-model";
            out[(*m)++] = (char *)v;
            return -1;
        case W_REFUSE:
        default:
            return hvt_usage_error(CLI_PROG, "%s (whisper-cli's) is not supported: %s", arg, w->to);
    }
}

/* -tp T, -tpi I and -nf as whisper-cli decodes (hvt_temperature_steps;
 * T alone with -nf): hviske's --temperature list, written into
 * o->whisper_temps. -1 to go on, or the exit status. */
static int temperature_list(cli_options *o) {
    double t = 0.0, inc = 0.2;
    if (o->whisper_tp && hv_parse_double(o->whisper_tp, 0, 0.0, 100.0, &t, NULL, 0))
        return hvt_usage_error(CLI_PROG, "invalid -tp '%s' (expected a temperature, 0..100)",
                               o->whisper_tp);
    if (o->whisper_tpi && hv_parse_double(o->whisper_tpi, 0, 0.0, 1.0, &inc, NULL, 0))
        return hvt_usage_error(CLI_PROG, "invalid -tpi '%s' (expected a step, 0..1)",
                               o->whisper_tpi);
    hvt_temperatures l;
    if (hvt_temperature_steps(t, o->whisper_nf ? 0.0 : inc, &l))
        return hvt_usage_error(CLI_PROG,
                               "-tp %g with -tpi %g makes more than %d temperatures (hviske's "
                               "--temperature list takes at most %d)",
                               t, inc, HVT_MAX_TEMPERATURES, HVT_MAX_TEMPERATURES);
    size_t w = 0;
    for (int i = 0; i < l.n; i++)
        w += (size_t)snprintf(o->whisper_temps + w, sizeof o->whisper_temps - w, "%s%.9g",
                              i ? "," : "", l.t[i]);
    return -1;
}

/* A single-dash word that getopt would read as a cluster of letters
 * ("-ot" as -o t): refused when its first letter is -o, so that no file is
 * ever named after a misread flag. */
static int misread_output(const char *arg) {
    return arg[0] == '-' && arg[1] == 'o' && arg[2] != '\0';
}

int cli_whisper_flags(int *argc, char **argv, cli_options *o) {
    int n = *argc, m = 1;
    /* the rewritten command line: at most two words for each, "--" and
     * the -f inputs after it */
    o->argv = calloc((size_t)(2 * n + 4), sizeof *o->argv);
    o->whisper_files = calloc((size_t)n, sizeof *o->whisper_files);
    o->whisper_bases = calloc((size_t)n, sizeof *o->whisper_bases);
    if (!o->argv || !o->whisper_files || !o->whisper_bases) {
        fputs("hviske: out of memory\n", stderr);
        return 1;
    }
    char **out = o->argv;
    out[0] = argv[0];
    int i = 1, dashes = 0;
    for (; i < n; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            dashes = 1;
            break;
        }
        const w_flag *w = find_flag(arg);
        if (!w) {
            if (misread_output(arg))
                return hvt_usage_error(CLI_PROG,
                                       "unknown option '%s' (for an output file write -o FILE, "
                                       "with a space)",
                                       arg);
            out[m++] = argv[i];
            continue;
        }
        const char *v = NULL;
        if (w->takes_value) {
            if (i + 1 >= n) return hvt_usage_error(CLI_PROG, "option '%s' needs an argument", arg);
            v = argv[++i];
        }
        int rc = take_flag(w, arg, v, o, out, &m);
        if (rc >= 0) return rc;
    }
    if (o->whisper_tp || o->whisper_tpi || o->whisper_nf || o->whisper_thresholds) {
        int rc = temperature_list(o);
        if (rc >= 0) return rc;
        /* turned on by a threshold alone, the list comes first, so that
         * hviske's own --temperature, read after it, still decides */
        int at = o->whisper_tp || o->whisper_tpi || o->whisper_nf ? m : 1;
        memmove(out + at + 2, out + at, (size_t)(m - at) * sizeof *out);
        out[at] = "--temperature";
        out[at + 1] = o->whisper_temps;
        m += 2;
    }
    if (!o->no_prints) fputs(o->whisper_notes, stderr);
    if (dashes || o->n_whisper_files) out[m++] = "--";
    for (i += dashes; i < n; i++) out[m++] = argv[i];
    for (int k = 0; k < o->n_whisper_files; k++) out[m++] = (char *)o->whisper_files[k];
    out[m] = NULL;
    *argc = m;
    return -1;
}
