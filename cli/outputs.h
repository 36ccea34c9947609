/*
 * hviske's output files (docs/CLI.md "Where the output goes"): each
 * written by hv_out_file, hviske_output.h's rule, a regular file whole or not at all
 * (a temporary file renamed onto it when complete, removed when the run
 * fails or a signal ends it), symlinks followed, anything else written in
 * place; the names of the files of each input; the results written to
 * them.
 */
#ifndef HV_CLI_OUTPUTS_H
#define HV_CLI_OUTPUTS_H

#include "writers.h"
#include "hviske.h"
#include "hviske_output.h"

/* SIGINT, SIGTERM and SIGHUP remove the temporary file of the output
 * being written, then end the program by the same signal ("ignored" stays
 * ignored); SIGPIPE is ignored, so that a reader that went away is a
 * write error. */
void cli_catch_signals(void);

/* Flushes standard output; 0, or -1 when it failed. A reader that went
 * away (EPIPE: "hviske ... | head") ends the program at once, quietly, by
 * SIGPIPE, as it ends a pipe's writer that does not ignore it. */
int cli_flush_stdout(void);

/* Opens path for writing; 0, else -1 with a message on stderr. */
int cli_out_open(hv_out_file *of, const char *path);
/* Drops the output; a regular file at path is left as it was. */
void cli_out_abort(hv_out_file *of);
/* Completes the output at path; 0, else -1 with a message. */
int cli_out_commit(hv_out_file *of, const char *path);

/* 1 if a and b name the same existing file. */
int cli_same_file(const char *a, const char *b);

/* DIR/NAME.EXT for an input (dir NULL: NAME.EXT in the input's own
 * directory): its base name with the last extension replaced by ext
 * ("rec.wav" -> "rec.EXT", "rec" -> "rec.EXT", ".hidden" ->
 * ".hidden.EXT"); standard input ("-") is "stdin.EXT". malloc'ed; NULL
 * when out of memory. */
char *cli_output_path(const char *dir, const char *input, const char *ext);

/* whisper-cli's name of an output file: BASE.EXT, BASE the input as
 * given ("rec.wav" -> "rec.wav.srt"; standard input "-" -> "stdin.srt")
 * or -of's. malloc'ed; NULL when out of memory. */
char *cli_whisper_output_path(const char *base, const char *ext);

/* Whether every one of the output files paths[n] (an input's) is there
 * (--skip-existing: output files appear only by the rename of a complete
 * temporary file, so one that exists is complete). */
int cli_outputs_exist(char *const *paths, int n);

/* Writes one result in format fmt to its own file out_path; 0, else -1
 * with the failure reported. notice: "hviske: wrote FILE" on stderr. */
int cli_write_output_file(const hv_output_spec *spec, hv_output_format fmt, const char *input,
                          const char *out_path, const hv_result *res, int notice);

#endif /* HV_CLI_OUTPUTS_H */
