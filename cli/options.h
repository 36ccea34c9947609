/*
 * hviske's command line (docs/CLI.md "Options"): the options, their
 * checks, the inputs and their output files, and the --help text. Parsing
 * is done before anything loads; what the options mean for a
 * transcription and for the output is given by two pure functions.
 */
#ifndef HV_CLI_OPTIONS_H
#define HV_CLI_OPTIONS_H

#include <stdint.h>

#include "batch.h"
#include "writers.h"
#include "hviske.h"
#include "checkpoint.h"
#include "cmdline.h"

/* --format F[,F...]: the formats in the order given, each once. */
typedef struct cli_formats {
    hv_output_format f[HV_OUTPUT_N_FORMATS];
    int n;
} cli_formats;

typedef struct cli_options {
    const char *model_dir;
    hv_transcribe_params tp;      /* the parameter options (the library's rows:
                                   --language, --beams, --top-k, --vad-...);
                                   cli_transcribe_params adds the rest */
    int n_threads;                /* 0: all cores */
    hv_weight_type weight_type;   /* HV_WEIGHTS_AUTO: the checkpoint's own */
    hv_compute compute;           /* HV_COMPUTE_AUTO: by the CPU */
    hvt_temperatures temperature; /* sampling; several: the fallback's list */
    const char *vad_model;        /* --vad-model; NULL: hvt_load_vad's search */
    hv_output_format format;      /* the first of formats */
    cli_formats formats;          /* --format, whisper-cli's -otxt ... */
    int to_files;                 /* one output file per input and format: --output-dir
                              DIR, or beside each input */
    int aliases;                  /* whisper-cli's -oFMT flags given */
    int word_timestamps;          /* --word-timestamps (srt and vtt compute them anyway) */
    hv_cue_params cues;           /* srt, vtt: --max-cue-seconds, --max-lines, ... */
    int srt_speakers;             /* --srt-speakers: HV_OUTPUT_SRT_LABEL or _DASH */
    const char *output;           /* -o FILE; NULL or "-": standard output */
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
    /* whisper-cli's flags (whisper.h) */
    char **argv;                /* the command line with them taken out (owned) */
    const char **whisper_files; /* -f FILE, in order (owned array) */
    int n_whisper_files;
    const char **whisper_bases; /* -of BASE: input i's files BASE.EXT (owned array) */
    int n_whisper_bases;
    int whisper_names;       /* files named as whisper-cli names them */
    int max_len;             /* -ml N given (cues of one line) */
    const char *whisper_tp;  /* -tp T: the fallback's first temperature (NULL: not given) */
    const char *whisper_tpi; /* -tpi I: its step (NULL: not given, 0.2) */
    int whisper_nf;          /* -nf: T alone, no fallback */
    int whisper_thresholds;  /* -lpt or -nth: whisper-cli's fallback is on */
    char whisper_temps[HVT_MAX_TEMPERATURES * 12]; /* the --temperature list they make */
    int no_prints;                                 /* -np: nothing on stderr but errors */
    char whisper_notes[2048]; /* the notices of flags accepted as hviske's behaviour */
    int no_timestamps;        /* -nt: txt without times */
    int silent;               /* -q or -np: no progress, warnings, notices */
    int notices;              /* "hviske: wrote FILE" (stderr a terminal) */
} cli_options;

/* Adds format f to l, once. */
void cli_add_format(cli_formats *l, hv_output_format f);

/* The program's name, at the start of every message. */
extern const char CLI_PROG[];

/* Takes another program's flags out of argv[0..*argc) into o, leaving
 * o->argv (*argc of them) for hviske's own options (whisper.c's
 * cli_whisper_flags: whisper-cli's flags, which write into o, so options.c
 * is handed them rather than calling them). -1 to go on, else the exit
 * status. */
typedef int (*cli_flags_fn)(int *argc, char **argv, cli_options *o);

/* Fills o from argv, other_flags' first. Returns -1 to go on, otherwise
 * the exit status (0 after --help or --version, 2 after a usage error,
 * reported on stderr). cli_options_free frees what it made, also after
 * an error. */
int cli_parse_options(int argc, char **argv, cli_options *o, cli_flags_fn other_flags);
void cli_options_free(cli_options *o);

/* The transcription the options ask for, with the speech detector vad
 * (NULL: none); a temperature list points into o. */
hv_transcribe_params cli_transcribe_params(const cli_options *o, const hv_vad *vad);

/* How the options write a result; model for whisper-json's tokens. */
hv_output_spec cli_format_spec(const cli_options *o, const hv_model *model);

#endif /* HV_CLI_OPTIONS_H */
