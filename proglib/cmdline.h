/*
 * The command line of the programs (hviske, hviske-server, hviske-bench,
 * hviske-quantize): number parsing with one strictness everywhere, a
 * table-driven option parser with one set of messages, whisper.cpp's
 * flags that ask for what hviske does anyway, and the options of speech
 * detection, temperatures and compute shared by the CLI and the server.
 *
 * Numbers, on the command line and in the server's form fields alike, are
 * parsed whole and strictly by the library's parsers (hviske.h, "numbers
 * from text": hv_parse_u64, hv_parse_double, hv_parse_float), so a value
 * means the same in every program and in hv_params_set.
 */
#ifndef HV_PROGLIB_CMDLINE_H
#define HV_PROGLIB_CMDLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hviske.h"

/* The exit status of a wrong command line. */
enum { HVT_EXIT_USAGE = 2 };

/* ------------------------------------------------------------- numbers */

/* An integer (hv_parse_u64's rule) in [lo, hi] into *out; 0, or -1 (and
 * *out left alone) when s is not one. */
int hvt_parse_int(const char *s, int lo, int hi, int *out); /* lo >= 0 */

/* ------------------------------------------------------- command line */

/* What an option takes, and where the value goes (at offset in the
 * program's options struct). */
typedef enum hvt_arg {
    HVT_FLAG,         /* no argument; only given[] records it */
    HVT_STRING,       /* const char *: any string, "" too */
    HVT_NONEMPTY,     /* const char *: not "" */
    HVT_INT,          /* int: an integer in [lo, hi] */
    HVT_UNSIGNED,     /* unsigned: an integer in [lo, hi] */
    HVT_U64,          /* uint64_t: an integer 0..UINT64_MAX */
    HVT_FLOAT,        /* float: a float in [lo, hi] */
    HVT_FLOAT_ABOVE,  /* float: a float in (lo, hi] */
    HVT_DOUBLE,       /* double: a float in [lo, hi] */
    HVT_DOUBLE_ABOVE, /* double: a float in (lo, hi] */
    HVT_CUSTOM,       /* the option's own parse function */
    HVT_PARAM,        /* the library's parameter of the option's name
                         (hv_params_set, its message): offset is that of
                         an hv_transcribe_params */
    HVT_HELP,         /* prints the usage on stdout; the program exits 0 */
    HVT_VERSION       /* prints "PROG VERSION" on stdout; exits 0 */
} hvt_arg;

typedef struct hvt_option {
    const char *name; /* long name, without "--" */
    int short_name;   /* its letter, or 0 */
    hvt_arg arg;
    size_t offset;                              /* of the value in the options struct */
    double lo, hi;                              /* numbers: the range (not for HVT_U64) */
    const char *expect;                         /* a refused value: "invalid --NAME 'VALUE'
                           (expected EXPECT)" */
    int (*parse)(const char *arg, void *value); /* HVT_CUSTOM: 0 if valid */
    const char *what;                           /* the message's name for it; NULL: "--NAME" */
} hvt_option;

/* Rows of an option table; off is offsetof(options struct, field). */
#define HVT_OPT(name_, letter, arg_, off, lo_, hi_, expect_)                                       \
    {                                                                                              \
        .name = name_, .short_name = letter, .arg = arg_, .offset = off, .lo = lo_, .hi = hi_,     \
        .expect = expect_                                                                          \
    }
#define HVT_OPT_NONEMPTY(name_, letter, off, expect_)                                              \
    { .name = name_, .short_name = letter, .arg = HVT_NONEMPTY, .offset = off, .expect = expect_ }
#define HVT_OPT_STRING(name_, letter, off)                                                         \
    { .name = name_, .short_name = letter, .arg = HVT_STRING, .offset = off }
#define HVT_OPT_FLAG(name_, letter)                                                                \
    { .name = name_, .short_name = letter, .arg = HVT_FLAG }
/* --NAME for the parameter row of that name or alias (hv_param_find),
 * into the hv_transcribe_params at off. */
#define HVT_OPT_PARAM(name_, off)                                                                  \
    { .name = name_, .arg = HVT_PARAM, .offset = off }
#define HVT_OPT_CUSTOM(name_, off, parse_, expect_)                                                \
    { .name = name_, .arg = HVT_CUSTOM, .offset = off, .parse = parse_, .expect = expect_ }
/* -t, --threads N, N in 1..256 (an int), as every program has it. */
#define HVT_OPT_THREADS(off)                                                                       \
    {                                                                                              \
        .name = "threads", .short_name = 't', .arg = HVT_INT, .offset = off, .lo = 1, .hi = 256,   \
        .expect = "an integer 1..256", .what = "thread count"                                      \
    }
#define HVT_OPT_HELP                                                                               \
    { .name = "help", .short_name = 'h', .arg = HVT_HELP }
#define HVT_OPT_VERSION                                                                            \
    { .name = "version", .arg = HVT_VERSION }

/* The most options one program may have. */
enum { HVT_MAX_OPTIONS = 64 };

typedef struct hvt_cli {
    const char *prog;       /* "hviske": starts every message */
    void (*usage)(FILE *f); /* the --help text */
    const hvt_option *opts;
    int n_opts;
} hvt_cli;

/*
 * Parses the options of argv (getopt_long: long names, their unique
 * prefixes, the short letters) into the struct at dest, as cli->opts say.
 * given[i] (n_opts of them, cleared first) becomes the order in which
 * option i was last given (1 for the first option on the line, ...), 0
 * when it was not: for flags, and for checks that depend on what was
 * given. Returns -1 to go on (the operands start at optind), 0 after
 * --help or --version, HVT_EXIT_USAGE after a wrong option (reported with
 * hvt_usage_error).
 */
int hvt_parse_options(const hvt_cli *cli, int argc, char **argv, void *dest, int *given);

/* The long option of cli nearest to the unknown option arg ("--fromat",
 * "--fromat=srt": "format"), when it is a typo of one (at most one edit
 * for names below 5 letters, else two); NULL when none is. */
const char *hvt_nearest_option(const hvt_cli *cli, const char *arg);

/* Prints "PROG: <message>" and the usage hint on stderr; returns
 * HVT_EXIT_USAGE. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int hvt_usage_error(const char *prog, const char *fmt, ...);

/* --------------------------------------------------------------- misc */

/* A whisper.cpp program's flag `arg` (value v, NULL for a flag without
 * one; `origin` "whisper-cli" or "whisper-server") that hviske accepts
 * when it asks for what hviske does anyway: v one of the numbers of the
 * comma-separated `values`. Accepted: a notice line ("PROG: note: -mc 0
 * (whisper-cli's) asks for what hviske does anyway: WHY") is appended to
 * notes[n], and -1 returned; else the usage error's exit status, the
 * message naming the flag, its value, why and what is accepted. */
int hvt_whisper_same(const char *prog, const char *origin, const char *arg, const char *v,
                     const char *values, const char *why, char *notes, size_t n);

/* Seconds on the monotonic clock, for measuring intervals. */
double hvt_now_s(void);

/* ---------------------------------------------------- speech detector */

/* Whether a chunking mode uses the speech detector (auto and vad). */
int hvt_chunking_uses_vad(hv_chunking mode);

/* --weight-type T (an hv_weight_type), for HVT_OPT_CUSTOM: 0 if valid. */
int hvt_parse_weight_type(const char *arg, void *value);

/* The speech detection options, the same in the CLI and the server: their
 * indices (an enum of each program's options holds HVT_VAD_OPTION_IDS)
 * and their rows, for an options struct with the fields vad_model and tp
 * (the hv_transcribe_params the parameter rows fill); and their --help
 * lines (hvt_vad_usage). */
#define HVT_VAD_OPTION_IDS                                                                         \
    O_VAD_MODEL, O_VAD_THRESHOLD, O_VAD_MIN_SPEECH, O_VAD_MIN_SILENCE, O_VAD_PAD, O_VAD_EDGES,     \
        O_VAD_MAX_GAP
#define HVT_VAD_OPTION_ROWS(type)                                                                  \
    [O_VAD_MODEL] = HVT_OPT_NONEMPTY("vad-model", 0, offsetof(type, vad_model), "a directory"),    \
    [O_VAD_THRESHOLD] = HVT_OPT_PARAM("vad-threshold", offsetof(type, tp)),                        \
    [O_VAD_MIN_SPEECH] = HVT_OPT_PARAM("vad-min-speech-ms", offsetof(type, tp)),                   \
    [O_VAD_MIN_SILENCE] = HVT_OPT_PARAM("vad-min-silence-ms", offsetof(type, tp)),                 \
    [O_VAD_PAD] = HVT_OPT_PARAM("vad-speech-pad-ms", offsetof(type, tp)),                          \
    [O_VAD_EDGES] = HVT_OPT_PARAM("vad-edges", offsetof(type, tp)),                                \
    [O_VAD_MAX_GAP] = HVT_OPT_PARAM("vad-max-gap", offsetof(type, tp))

/* The --help lines of the speech detection options. */
void hvt_vad_usage(FILE *f);

/* The --help entry of the parameter option --flag (hv_param_find's
 * name: an HVT_OPT_PARAM, or a flag or list option over the row):
 * "  -S, --flag METAVAR" (short_name 0: no "-S, "; a bool row, a flag, has
 * no METAVAR), then from column col the row's help, what it takes
 * (hv_param_expect; not for a string or a flag) and the program's own
 * note `more` (NULL: none), joined by "; ", in words up to 73 columns, as
 * the programs' hand-written lines. Nothing for a name without a row. */
void hvt_param_usage_as(FILE *f, char short_name, const char *flag, int col, const char *more);

/* hvt_param_usage_as(f, 0, flag, 25, NULL): the programs' usual entry. */
void hvt_param_usage(FILE *f, const char *flag);

/* A decoding temperature, or the temperature fallback's list
 * (docs/DECODING.md), as hviske's --temperature and the server's
 * temperature field take them: "T" or "T1,T2,...", each a float (as
 * above) >= 0, at most HVT_MAX_TEMPERATURES of them. */
enum { HVT_MAX_TEMPERATURES = HV_MAX_TEMPERATURES };
typedef struct hvt_temperatures {
    float t[HVT_MAX_TEMPERATURES];
    int n; /* 1: one temperature; more: the fallback's list */
} hvt_temperatures;

/* arg into the hvt_temperatures at value, for HVT_OPT_CUSTOM; 0 if
 * valid (else value is left alone). */
int hvt_parse_temperatures(const char *arg, void *value);

/* whisper.cpp's temperature fallback (whisper-cli's -tp/-tpi/-nf,
 * whisper-server's temperature and temperature_inc) as such a list: t,
 * then t + inc, t + 2 inc, ... while below 1 + 1e-6 (t alone with inc <=
 * 0). 0, or -1 (out left alone) when that makes more than
 * HVT_MAX_TEMPERATURES. */
int hvt_temperature_steps(double t, double inc, hvt_temperatures *out);

/* Sets tp's temperature fields from t: one value is tp->temperature (0:
 * greedy), several the fallback's list, which points into t (t must
 * outlive the transcription). */
void hvt_set_temperatures(hv_transcribe_params *tp, const hvt_temperatures *t);

/* --compute auto|f32|bf16 (hv_compute), the same in every program. */
int hvt_parse_compute(const char *arg, void *value);
/* "label" or "dash" into the int at value (HV_OUTPUT_SRT_LABEL, _DASH):
 * how srt shows speakers; 0 if valid. */
int hvt_parse_srt_speakers(const char *arg, void *value);
#define HVT_OPT_COMPUTE(off) HVT_OPT_CUSTOM("compute", off, hvt_parse_compute, "auto, f32 or bf16")

#endif /* HV_PROGLIB_CMDLINE_H */
