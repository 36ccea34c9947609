/*
 * hviske's progress display on standard error (docs/CLI.md "The
 * console"): on a terminal a status line after each chunk, redrawn in
 * place and erased before anything else is written; with --progress on
 * another stderr one line per chunk in a fixed form.
 */
#ifndef HV_CLI_PROGRESS_H
#define HV_CLI_PROGRESS_H

/* The progress of one input. */
typedef struct cli_progress {
    const char *name; /* the input's base name (the redrawn line) */
    const char *path; /* as given (--progress lines) */
    int mode;         /* 1: a line redrawn in place; 2: one line per update */
    double t0;        /* seconds, monotonic */
    int index, count; /* input index of count (the line says "file 2 of 5"
                         when count > 1) */
    int shown;
} cli_progress;

/* The library's progress callback (hv_transcribe_params.progress), user a
 * cli_progress: after each chunk, with the audio seconds done and in
 * total. */
void cli_progress_update(void *user, double done, double total);

/* Erases the redrawn progress line, if shown, before other output. */
void cli_progress_clear(cli_progress *p);

/* Erases the line from a signal handler (async-signal-safe): a run ended
 * by Ctrl-C leaves no half line behind. */
void cli_progress_on_signal(void);

#endif /* HV_CLI_PROGRESS_H */
