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
 * format: in --output-dir DIR, or beside each input. Files are written to
 * a temporary file in the same directory and renamed into place when
 * complete, so an
 * interrupted or failed run never leaves a partial output file; a symlink
 * is followed and a device, FIFO or socket written in place
 * (hv_out_file, hviske_output.h).
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
 * This file is main: it reads and transcribes each input and writes its
 * result. The command line is options.c (whisper-cli's flags whisper.c),
 * the output files outputs.c, the formats the library's writers
 * (hviske_output.h, as in hviske-server), the progress display progress.c,
 * the messages
 * report.c, archive batches batch.c. Built on the public API (hviske.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "batch.h"
#include "writers.h"
#include "hviske.h"
#include "options.h"
#include "outputs.h"
#include "progress.h"
#include "report.h"
#include "checkpoint.h"
#include "cmdline.h"
#include "whisper.h"
#include "hviske_output.h"

/* The seconds of audio the library's memory budget allows at rate
 * (hv_transcribe_params.max_audio_bytes): inputs are read within it, so no
 * file is decoded beyond what hv_transcribe would take. */
static double audio_budget_s(int rate) {
    return hv_audio_max_seconds(hv_transcribe_default_params().max_audio_bytes, rate);
}

/* ------------------------------------------------------ standard input */

/*
 * Reads an audio file (any format libsndfile reads) from standard input,
 * with the same checks and budget as a file: the library copies a pipe to
 * a temporary file as it comes (so that formats which seek work), refuses
 * what is no audio after its first bytes and stops at the budget, so that
 * memory stays bounded whatever the stream's length.
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
    return hv_audio_read_fd_mono(STDIN_FILENO, "-", rate, audio_budget_s(rate), pcm, n_frames, err,
                                 err_size);
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
        cli_file_error(path, st, err);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ streaming */

/* Segments as they come to standard output: --stream, and txt on stdout
 * with timestamps (o->txt_live). */
typedef struct stream_out {
    const cli_options *o;
    const hv_output_spec *spec;
    const char *path;   /* the input as given (txt's "FILE: ", jsonl's "file") */
    cli_progress *pr;   /* its progress line, cleared before output */
    hv_output_state st; /* the segments and cues written */
    int failed;         /* out of memory formatting one */
} stream_out;

/* The library's segment callback for output as it comes: writes the
 * segment in the output format (hvt_write_stream_segment) and flushes. A
 * non-zero answer (standard output failed) stops the transcription. */
static int on_stream_segment(void *user, const hv_segment *g) {
    stream_out *so = user;
    cli_progress_clear(so->pr);
    if (hvt_write_stream_segment(stdout, so->o->format, so->spec, so->path, g, &so->st))
        so->failed = 1;
    return cli_flush_stdout() != 0 || so->failed;
}

/* ---------------------------------------------------------- transcribe */

/* Reads and transcribes one input; the result, or NULL with the failure
 * reported. */
static hv_result *transcribe_input(hv_context *ctx, const hv_vad *vad, const cli_options *o,
                                   const hv_output_spec *spec, int i, int rate) {
    const char *path = o->files[i];
    float *pcm = NULL;
    size_t n_frames = 0;
    int channels = 1;
    if (read_input(path, rate, &pcm, &n_frames) != 0) return NULL;

    hv_transcribe_params tp = cli_transcribe_params(o, vad);
    const char *slash = strrchr(path, '/');
    cli_progress pr = {.name = slash && slash[1] ? slash + 1 : path,
                       .path = path,
                       .mode = o->progress,
                       .t0 = hvt_now_s(),
                       .index = i,
                       .count = o->n_files};
    if (o->progress) {
        tp.progress = cli_progress_update;
        tp.progress_user = &pr;
    }
    stream_out so = {.o = o, .spec = spec, .path = path, .pr = &pr};
    if (o->stream || o->txt_live) {
        tp.segment_callback = on_stream_segment;
        tp.segment_user = &so;
    }

    hv_result *res = NULL;
    hv_status st = hv_transcribe(ctx, pcm, n_frames, rate, channels, &tp, &res);
    free(pcm); /* hv_free, or ours from standard input */
    cli_progress_clear(&pr);
    /* --stream: a vtt without cues still has its header */
    if (o->stream && o->format == HV_OUTPUT_VTT && st == HV_OK && so.st.segments == 0)
        fputs("WEBVTT\n\n", stdout);
    if (o->stream) cli_flush_stdout();
    if (st == HV_OK && (so.failed || hv_result_stopped(res))) {
        cli_file_error(path, HV_ERR_NOMEM,
                       so.failed ? "out of memory formatting the output"
                                 : "error writing the output");
        hv_result_free(res);
        return NULL;
    }
    if (st != HV_OK) {
        const char *msg = hv_context_error(ctx);
        if (st == HV_ERR_LIMIT && o->tp.chunking == HV_CHUNKING_NONE) {
            char buf[1200];
            snprintf(buf, sizeof buf,
                     "%s (--chunking none takes the audio "
                     "in one piece; use --chunking auto for long audio)",
                     msg);
            cli_file_error(path, st, buf);
        } else {
            cli_file_error(path, st, msg);
        }
        return NULL;
    }
    return res;
}

/* Appends an input's line to the summary when there is one; a failure to
 * write it is reported once, fails the run (status 1) and ends the
 * summary. */
static void summarize(int *fd, const cli_options *o, const char *input, const char *output,
                      const char *status, const char *error, double audio_s, double t0, int *rc) {
    if (*fd < 0) return;
    if (hvt_summary_write(*fd, input, output, status, error, audio_s, hvt_now_s() - t0) != 0) {
        fprintf(stderr, "hviske: %s: cannot write the summary: %s\n", o->summary, strerror(errno));
        close(*fd);
        *fd = -1;
        *rc = 1;
    }
}

int main(int argc, char **argv) {
    cli_options o;
    int summary_fd = -1;
    int rc = cli_parse_options(argc, argv, &o, cli_whisper_flags);
    if (rc >= 0) goto free_options;
    cli_catch_signals();

    /* Open the destination before the long work, so that a bad path fails
     * at once. */
    int to_file = o.output && strcmp(o.output, "-") != 0;
    static hv_out_file shared; /* static: large */
    FILE *out = stdout;
    if (to_file) {
        for (int i = 0; i < o.n_files; i++)
            if (strcmp(o.files[i], "-") != 0 && cli_same_file(o.files[i], o.output)) {
                rc = hvt_usage_error(CLI_PROG, "--output %s is also an input", o.output);
                goto free_options;
            }
        if (cli_out_open(&shared, o.output) != 0) {
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
    for (int i = 0; o.skip_existing && i < o.n_files; i++)
        n_todo -= cli_outputs_exist(o.out_paths + i * o.formats.n, o.formats.n);

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
    if (hvt_model_dir_hint(o.model_dir, err, sizeof err)) {
        fprintf(stderr, "hviske: %s\n", err);
        rc = 1;
        goto done;
    }
    hv_status st = hv_model_load(o.model_dir, &mp, &model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err[0] ? err : hv_status_name(st));
        rc = 1;
        goto done;
    }
    if (o.tp.language && !hvt_model_has_language(model, o.tp.language)) {
        if (strcmp(o.tp.language, "auto") == 0)
            fprintf(stderr,
                    "hviske: -l auto: language detection is not available (the model is "
                    "told the language; it cannot tell it): give -l with one of %s's "
                    "languages (supported:",
                    o.model_dir);
        else
            fprintf(stderr,
                    "hviske: language '%s' is not supported by %s "
                    "(supported:",
                    o.tp.language, o.model_dir);
        for (int i = 0; i < hv_model_n_languages(model); i++)
            fprintf(stderr, " %s", hv_model_language(model, i));
        fputs(")\n", stderr);
        rc = HVT_EXIT_USAGE;
        goto done;
    }
    if (hvt_chunking_uses_vad(o.tp.chunking) &&
        hvt_load_vad(o.vad_model, &vad, err, sizeof err) != HV_OK) {
        fprintf(stderr, "hviske: %s\n", err);
        rc = 1;
        goto done;
    }
    if (hv_context_new(model, o.n_threads, &ctx, err, sizeof err)) {
        fprintf(stderr, "hviske: %s\n", err);
        rc = 1;
        goto done;
    }

    int rate = hv_model_sample_rate(model);
    hv_output_spec spec = cli_format_spec(&o, model);
    rc = 0;
    ran = 1;
    for (int i = 0; i < o.n_files; i++) {
        const char *path = o.files[i];
        int nf = o.formats.n;
        const char *out_path = o.to_files ? o.out_paths[i * nf] : NULL;
        double t0 = hvt_now_s();
        if (o.skip_existing && cli_outputs_exist(o.out_paths + i * o.formats.n, o.formats.n)) {
            summarize(&summary_fd, &o, path, out_path, "skipped", NULL, -1, t0, &rc);
            continue;
        }
        hv_result *res = transcribe_input(ctx, vad, &o, &spec, i, rate);
        if (!res) {
            rc = 1;
            summarize(&summary_fd, &o, path, out_path, "error", cli_last_error(), -1, t0, &rc);
            continue;
        }
        int ok = 0;
        if (o.to_files) {
            ok = 1;
            int piped = 0; /* -of -: a format on standard output already */
            for (int k = 0; k < nf; k++) {
                piped |= strcmp(o.out_paths[i * nf + k], "-") == 0;
                if (cli_write_output_file(&spec, o.formats.f[k], path, o.out_paths[i * nf + k], res,
                                          o.notices) != 0)
                    rc = 1, ok = 0;
            }
            /* whisper-cli's -oFMT flags write files and still print the
             * transcript, with times unless -nt */
            if (o.aliases && !piped) {
                hv_output_spec shown = spec;
                shown.timestamps = !o.no_timestamps;
                if (hvt_write_result(out, HV_OUTPUT_TXT, &shown, path, res) != 0) rc = 1, ok = 0;
                cli_flush_stdout();
            }
        } else if ((o.stream && o.format != HV_OUTPUT_JSONL) || o.txt_live) {
            ok = 1; /* written segment by segment */
        } else if (hvt_write_result(out, o.format, &spec, path, res) != 0) {
            cli_file_error(path, HV_ERR_NOMEM,
                           "out of memory formatting the "
                           "output");
            rc = 1;
        } else {
            ok = 1;
            if (!to_file)
                cli_flush_stdout();
            else if (shared.in_place)
                hv_out_flush(&shared); /* a FIFO's reader gets it now */
        }
        n_ok += ok;
        summarize(&summary_fd, &o, path, out_path, ok ? "ok" : "error",
                  ok ? NULL : cli_last_error(), hv_result_duration(res), t0, &rc);
        hv_result_free(res);
    }

done:
    hv_context_free(ctx);
    hv_vad_free(vad);
    hv_model_free(model);
    if (to_file) {
        /* the results of the inputs that succeeded, whole, or no file */
        if (n_ok > 0 && rc != HVT_EXIT_USAGE) {
            int in_place = shared.in_place;
            if (cli_out_commit(&shared, o.output) != 0)
                rc = 1;
            else if (o.notices && !in_place)
                fprintf(stderr, "hviske: wrote %s\n", o.output);
        } else {
            cli_out_abort(&shared);
            if (ran)
                fprintf(stderr,
                        "hviske: %s: not written (no input "
                        "succeeded)\n",
                        o.output);
        }
    } else if (cli_flush_stdout() != 0) {
        fputs("hviske: error writing the output\n", stderr);
        rc = 1;
    }
free_options:
    if (summary_fd >= 0 && close(summary_fd) != 0) {
        fprintf(stderr, "hviske: %s: cannot write the summary: %s\n", o.summary, strerror(errno));
        rc = 1;
    }
    cli_options_free(&o);
    return rc;
}
