/*
 * hviske_output.h: a transcription written in an output format, the
 * library's one writer of each (after SQLite's qrf.h), a batch summary's
 * line (hv_output_summary_line), and output files written whole or not
 * at all (hv_out_file, at the end). The hviske program,
 * hviske-server and the Python package all write with it; a C program
 * gets the same bytes. Beside hviske.h, not in it: a layer over results
 * that a program may leave out, with a spec that grows on its own.
 *
 *   txt           the transcript on one line; with timestamps one
 *                 "[start --> end] text" line per segment
 *   jsonl, json   hviske's JSON: one line, or indented by two spaces with
 *                 language and duration too
 *   srt, vtt      SubRip and WebVTT subtitles: the segments' cues
 *   csv           start,end,text per segment, times in milliseconds
 *   whisper-json  whisper-cli's -oj layout: transcription[] of
 *                 {timestamps, offsets, text}, with tokens[] (-ojf)
 *   openai-json   OpenAI's {"text"} (with "logprobs" when asked)
 *   openai-verbose-json  OpenAI's verbose_json: task, language, duration,
 *                 text, segments and words as `granularities` ask;
 *                 a segment's "speaker" ("A", "B", ...) where it has one
 *   openai-diarized-json  OpenAI's diarized_json: task, duration, text,
 *                 segments of {type, id, start, end, text, speaker}
 *
 * The segments are the cues of each chunk's words (hv_segment_cues with
 * the spec's limits); every format that shows segments makes them so.
 * Text from the model is cleaned to valid UTF-8 where the format is JSON
 * or subtitles; txt and csv write it as it is (docs/CLI.md).
 *
 *     hv_output_spec s = hv_output_default_spec(HV_OUTPUT_SRT);
 *     s.write = hv_output_write_file;
 *     s.write_arg = stdout;
 *     hv_output_write_result(&s, "talk.wav", res);
 */
#ifndef HVISKE_OUTPUT_H
#define HVISKE_OUTPUT_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "hviske.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hv_output_format {
    HV_OUTPUT_TXT,
    HV_OUTPUT_JSONL,
    HV_OUTPUT_JSON,
    HV_OUTPUT_SRT,
    HV_OUTPUT_VTT,
    HV_OUTPUT_CSV,
    HV_OUTPUT_WHISPER_JSON,
    HV_OUTPUT_OPENAI_JSON,
    HV_OUTPUT_OPENAI_VERBOSE_JSON,
    HV_OUTPUT_OPENAI_DIARIZED_JSON,
    /* a new format comes here, at the end: the values stay */
    HV_OUTPUT_N_FORMATS
} hv_output_format;

/* Where the bytes go: writes data[n]; 0, or non-zero when it failed (the
 * writer then stops with HV_ERR_IO). A call may come with part of a
 * result; the calls together are the output. */
typedef int (*hv_output_write_fn)(void *arg, const char *data, size_t n);

/* openai-verbose-json's granularities (OpenAI's timestamp_granularities[]). */
enum { HV_OUTPUT_SEGMENTS = 1, HV_OUTPUT_WORDS = 2 };

/* How srt shows a segment's speaker (diarize): a "[SPEAKER_00] " label
 * opening each cue, as txt writes it, or a dialogue dash "- " opening
 * the first cue of each turn (where the speaker changes). */
enum { HV_OUTPUT_SRT_LABEL = 0, HV_OUTPUT_SRT_DASH = 1 };

/* How a result is written. Start from hv_output_default_spec, which sets
 * size; a later library that grows the struct reads only the fields a
 * caller's size holds. */
typedef struct hv_output_spec {
    size_t size; /* sizeof(hv_output_spec) as the caller knows it */
    hv_output_format format;
    hv_output_write_fn write; /* required */
    void *write_arg;
    hv_cue_params cues;    /* the segments: cues of each chunk's words */
    int words;             /* json, jsonl: "words" in the result and each
                              segment and chunk; whisper-json: tokens[] */
    int timestamps;        /* txt: a timed line per segment */
    int name_lines;        /* txt: "FILE: " before each line */
    const char *model_dir; /* whisper-json: params.model (NULL: "") */
    const hv_model *model; /* whisper-json: the tokens' text (NULL: "");
                              openai-json: logprobs' tokens */
    int granularities;     /* openai-verbose-json: HV_OUTPUT_SEGMENTS,
                              HV_OUTPUT_WORDS (default: segments) */
    int logprobs;          /* openai-json: "logprobs", OpenAI's [{"token",
                              "logprob", "bytes"}] per token (needs model) */
    int srt_speakers;      /* srt: HV_OUTPUT_SRT_LABEL (default) or
                              HV_OUTPUT_SRT_DASH */
} hv_output_spec;

/* The defaults for format f: the default cue limits, segments for
 * openai-verbose-json, nothing else; write is NULL (the caller's). */
HV_API hv_output_spec hv_output_default_spec(hv_output_format f);

/* "txt", "jsonl", "json", "srt", "vtt", "csv", "whisper-json",
 * "openai-json", "openai-verbose-json", "openai-diarized-json"; NULL for a value that is none. */
HV_API const char *hv_output_format_name(hv_output_format f);

/* The file extension of a format, without the dot ("json" for the JSON
 * ones but jsonl). NULL for a value that is none. */
HV_API const char *hv_output_format_ext(hv_output_format f);

/* The format named by the len bytes at name (any case: "SRT"), into
 * *out; HV_OK, or HV_ERR_INVALID_ARG when they name none. */
HV_API hv_status hv_output_format_parse(const char *name, size_t len, hv_output_format *out);

/* The format a file name's extension names (".srt", ".JSON": any case;
 * .json is json) among txt, jsonl, json, srt, vtt and csv, into *out;
 * HV_OK, or HV_ERR_INVALID_ARG when it names none. */
HV_API hv_status hv_output_format_of_path(const char *path, hv_output_format *out);

/* 1 when a format holds one result per line, so that several inputs can
 * share one stream (txt, jsonl); the others are one document per input. */
HV_API int hv_output_format_is_stream(hv_output_format f);

/* 1 when a format can be written a segment at a time as the segments
 * come (hv_output_write_segment: txt, jsonl, srt, vtt); the others are
 * written whole once the result is known. */
HV_API int hv_output_format_by_segment(hv_output_format f);

/* Writes one result of the input `file` (as given: "-" for standard
 * input; jsonl's and json's "file", txt's name lines) as s says. HV_OK;
 * HV_ERR_INVALID_ARG for a spec without write, with a format that is
 * none or with cues whose size is not sizeof(hv_cue_params);
 * HV_ERR_NOMEM; HV_ERR_IO when write failed. */
HV_API hv_status hv_output_write_result(const hv_output_spec *s, const char *file,
                                        const hv_result *res);

/* Where a result written segment by segment stands; zero it before the
 * first segment. */
typedef struct hv_output_state {
    int segments; /* the segments written */
    int cues;     /* srt: the last cue's number */
    int speaker;  /* srt dash: the last cue's speaker + 1 (0: none);
                     touched only with srt_speakers dash, so a caller
                     whose spec's size lacks that may pass the older
                     two-field struct */
} hv_output_state;

/* Writes one segment as it comes (hv_transcribe_params.segment_callback):
 * txt its line(s), srt and vtt its cues (the WebVTT header with the
 * first), jsonl one {"file", "segment"} line per cue; the segments'
 * outputs together are what hv_output_write_result writes for txt, srt
 * and vtt. HV_ERR_UNSUPPORTED for the other formats (one document each);
 * else as hv_output_write_result. */
HV_API hv_status hv_output_write_segment(const hv_output_spec *s, const char *file,
                                         const hv_segment *g, hv_output_state *st);

/* A write callback for a C stream: arg is the FILE *. */
HV_API int hv_output_write_file(void *arg, const char *data, size_t n);

/* A file name as the JSON formats write it, losslessly (docs/CLI.md,
 * "File names in JSON"): *shown the name when it is valid UTF-8, else
 * with each byte outside a valid sequence as the four characters \xHH;
 * *bytes NULL when it is valid, else the name's bytes in base64 (RFC
 * 4648, padded) for KEY_bytes. Release both with free(). HV_OK or
 * HV_ERR_NOMEM (both NULL). */
HV_API hv_status hv_output_file_name(const char *name, char **shown, char **bytes);

/* One line of a batch's summary (hviske --summary, docs/SCALING.md): a
 * JSON object on one line, with its newline, into *line (*len bytes, NUL
 * after them; release it with hv_free): "input", the input's name as the
 * JSON formats write names (with "input_bytes" where it is not UTF-8;
 * null for NULL); "output" likewise, left out for NULL; "status" ("ok",
 * "skipped", "error"); "error", the message cleaned to UTF-8 (null for
 * NULL); "audio_seconds" (null when < 0) and "processing_seconds", to the
 * millisecond. One buffer, so that a caller appends it with one write().
 * HV_OK; HV_ERR_INVALID_ARG without status, line or len; HV_ERR_NOMEM
 * (*line NULL). */
HV_API hv_status hv_output_summary_line(const char *input, const char *output, const char *status,
                                        const char *error, double audio_seconds,
                                        double processing_seconds, char **line, size_t *len);

/* ------------------------------------------------------- output files */

/* Output files written through, never over: the one rule of every writer
 * (hviske's -o, --output-dir and --summary, hviske-quantize's checkpoint,
 * espeak-words' files).
 *
 * - A regular file (or a name that does not exist yet) is replaced
 *   atomically: the output goes to a temporary file beside it, is synced,
 *   and is renamed onto it when complete, so the file is there whole or
 *   not at all.
 * - A symlink is followed: the temporary file goes beside the file the
 *   link finally names, and the rename lands there, so the link survives
 *   (a dangling link's target is created).
 * - Anything else (a character device such as /dev/null, a FIFO, a
 *   socket, /dev/stdout and other /proc/self/fd links) is written in
 *   place: opened (a socket connected), written, closed; no temporary
 *   file, no rename. A FIFO is opened as a shell opens one: the call
 *   waits for a reader.
 *
 * Errors are errno values; callers name the file in their messages.
 * Writes to a FIFO or socket whose reader went away fail with EPIPE while SIGPIPE is ignored or blocked (the
 * programs ignore it; hv_out_write, hv_out_commit and hv_out_abort block
 * it in the calling thread while they write). */
#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct hv_out_file {
    FILE *f;                         /* write here; NULL when closed */
    int in_place;                    /* 1: f is the target itself */
    char target[PATH_MAX];           /* the file the rename lands on */
    char tmp[PATH_MAX + 32];         /* the temporary file ("" in place) */
    volatile sig_atomic_t tmp_there; /* tmp may exist: a signal handler
                                        may unlink(tmp) */
    int err;                         /* the first write error, 0: none */
} hv_out_file;

/* Opens path for writing by the rule above; 0, or an errno value (of->f
 * NULL, nothing created). A directory is EISDIR. */
HV_API int hv_out_open(hv_out_file *of, const char *path);

/* fwrite of n bytes to of->f with SIGPIPE blocked in the calling thread
 * (a reader gone is EPIPE); 0 or an errno value. Writing to of->f
 * directly works too, where SIGPIPE is ignored. */
HV_API int hv_out_write(hv_out_file *of, const void *buf, size_t n);

/* fflush of of->f (in place, a FIFO's reader gets what was written so
 * far), SIGPIPE blocked as hv_out_write does; 0 or an errno value, which
 * hv_out_commit reports too. */
HV_API int hv_out_flush(hv_out_file *of);

/* Flushes and closes; for a temporary file also syncs it and renames it
 * onto the target. 0, or an errno value (the temporary file removed, the
 * target as it was; in place, what was written stays written). */
HV_API int hv_out_commit(hv_out_file *of);

/* Closes and drops the temporary file; the target is left as it was
 * (in place: closed, with what was written). */
HV_API void hv_out_abort(hv_out_file *of);

/* Opens path for writing in place with open(2)'s flags (O_WRONLY, maybe
 * O_CREAT, O_APPEND, O_TRUNC; O_CLOEXEC is added): a socket is
 * connected instead. Blocks on a FIFO until it has a reader. The
 * descriptor, or -1 with errno. */
HV_API int hv_out_open_fd(const char *path, int flags);

#ifdef __cplusplus
}
#endif

#endif /* HVISKE_OUTPUT_H */
