/*
 * hviske-server: the fields of a transcription request.
 *
 * srv_form collects the parts of a multipart/form-data body as
 * libmicrohttpd's post processor hands them over (in pieces, at offsets),
 * with every limit enforced while it streams: the file's size, each other
 * field's size, the number of parts, known field names only, no field
 * twice. srv_form_params then turns the fields into transcription
 * parameters, parsing every value strictly (whole string, no spaces, no
 * hex, ranges as the library's), or says which field is wrong.
 */
#ifndef HV_SERVER_FORM_H
#define HV_SERVER_FORM_H

#include <stddef.h>
#include <stdint.h>

#include "hviske.h"
#include "writers.h"
#include "server_format.h"
#include "cmdline.h"

/* An error answer: HTTP status and OpenAI's error fields. */
typedef struct srv_error {
    int status;       /* 0: no error */
    const char *type; /* "invalid_request_error", "server_error", ... */
    const char *code; /* NULL or a short machine-readable code */
    char param[32];   /* the offending field; "" = none */
    char message[400];
} srv_error;

#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
void srv_error_set(srv_error *e, int status, const char *code,
                   const char *param, const char *fmt, ...);

/* At most len bytes of s (up to its NUL), for a message: printable ASCII
 * ('?' for other bytes), cut to n - 1 bytes with "..." at the end when
 * longer. */
void srv_shown(char *out, size_t n, const char *s, size_t len);

/* The text fields a request may carry (file is separate). */
typedef enum srv_field {
    SRV_F_MODEL,
    SRV_F_LANGUAGE,
    SRV_F_PROMPT,
    SRV_F_RESPONSE_FORMAT,
    SRV_F_TEMPERATURE,
    SRV_F_PUNCTUATION,
    SRV_F_NUM_BEAMS,
    SRV_F_LENGTH_PENALTY,
    SRV_F_TOP_K,
    SRV_F_TOP_P,
    SRV_F_SEED,
    SRV_F_MAX_TOKENS,
    SRV_F_STREAM,
    SRV_F_TIMESTAMP_GRANULARITIES,
    SRV_F_CHUNKING_STRATEGY,
    SRV_F_INCLUDE,
    SRV_F_PROGRESS, /* hviske's: progress events in a stream */
    SRV_F_HOTWORDS, /* hviske's: contextual biasing */
    SRV_F_HOTWORDS_SCORE,
    SRV_F_REPETITION_PENALTY, /* Hugging Face's generate options */
    SRV_F_NO_REPEAT_NGRAM_SIZE,
    SRV_F_DIARIZE,       /* a diarize model's speaker turns (docs/DIARIZE.md) */
    SRV_F_DIARIZE_VOICE, /* diarize's voice linking threshold (docs/DIARIZE.md) */
    SRV_F_DOWNLOADS,     /* hviske's: the CLI's formats in the done event */
    SRV_F_SRT_SPEAKERS,  /* hviske's: srt's speakers, label or dash */
    /* whisper-server's fields, on POST /inference only */
    SRV_F_BEAM_SIZE,
    SRV_F_OFFSET_T,
    SRV_F_DURATION,
    SRV_F_TRANSLATE,
    SRV_F_TEMPERATURE_INC,
    SRV_F_WHISPER_IGNORED, /* the ones taken and ignored (values dropped) */
    SRV_N_FIELDS
} srv_field;

typedef struct srv_form {
    size_t max_file;           /* bytes; more is a 413 */
    int max_beams;             /* num_beams allowed (the server's --max-beams;
                                  srv_form_init: the library's HV_MAX_BEAMS) */
    char *value[SRV_N_FIELDS]; /* NUL-terminated; NULL: not given */
    size_t len[SRV_N_FIELDS];
    unsigned char *file; /* the audio bytes as uploaded */
    size_t file_len, file_cap;
    int have_file;
    int n_parts;
    int cur;             /* part being received: a srv_field,
                                  SRV_N_FIELDS for file, -1 none */
    srv_error err;       /* the first problem, if any */
    size_t cur_len;      /* bytes of the current part so far (an ignored field's) */
    int whisper;         /* POST /inference: whisper-server's fields too */
    char ignored[256];   /* whisper-server's fields taken and ignored, "a, b" */
    char file_name[256]; /* the file part's filename, printable ("" if none) */
} srv_form;

void srv_form_init(srv_form *f, size_t max_file);
/* A text field as given (NUL-terminated), or NULL when absent. */
const char *srv_form_value(const srv_form *f, srv_field i);
void srv_form_free(srv_form *f); /* frees the buffers; f can be reused */

/*
 * A part named key begins (the multipart parser, server_multipart.h,
 * calls it as each part's headers end; an empty part is a part), with its
 * filename (NULL or "" if none; the file part's is kept, printable, in
 * f->file_name). Every part counts against the limit of parts, and a
 * field given twice is an error (timestamp_granularities[] and include[]
 * excepted: one part per value); on POST /inference whisper-server's
 * fields that hviske does not use are taken, named in f->ignored, and
 * dropped. Returns 0, or -1 with f->err set (an unknown or repeated
 * field, too many parts, out of memory); after an error the form takes
 * nothing more.
 */
int srv_form_begin(srv_form *f, const char *key, const char *filename);

/* size more bytes of the part begun last. 0, or -1 with f->err set (a
 * field or the file too large, out of memory, no part begun). */
int srv_form_data(srv_form *f, const char *data, size_t size);

/* The request's parameters, once the whole body is in. */
typedef struct srv_params {
    hv_transcribe_params tp; /* tp.language points to language[],
                                tp.hotwords to hotwords[] */
    char language[32];
    char hotwords[1025];
    srv_format format;
    hvt_temperatures temperatures; /* as given; a list: tp.temperatures
                                            points here */
    int granularities;             /* verbose_json: SRV_WORDS | SRV_SEGMENTS (default
                           segments only) */
    char model[128];               /* the model field as given ("" if none) */
    int stream;                    /* stream=true: Server-Sent Events (json, text) */
    int logprobs;                  /* include[]=logprobs: json gets "logprobs" */
    int srt_speakers;              /* srt: HV_OUTPUT_SRT_LABEL or _DASH */
    char ignored[192];             /* include[] values not supported, for a warning
                           ("" when none) */
    int prompt;                    /* a prompt was given (and ignored), for a warning */
    int progress;                  /* progress=true: hviske.progress events (stream) */
    hv_output_format downloads[HV_OUTPUT_N_FORMATS]; /* downloads=txt,srt,...: the done
                                            event carries these (stream) */
    int n_downloads;
} srv_params;

/* A form field that carries JSON, parsed strictly: one value and nothing
 * after it but white space, and no object in it holding a key twice.
 * The parsed value (caller frees with cJSON_Delete), or NULL with *e set
 * (400 naming param). Every JSON field goes through it. */
struct cJSON;
struct cJSON *srv_json_field(const char *v, const char *param, srv_error *e);

/* Validates the fields against the model (languages) into *p, starting
 * from the server's own parameters `base` (hv_transcribe_default_params
 * with the server's chunking mode, speech detector and its settings). chunking_strategy "auto" or {"type": "server_vad", ...} asks
 * for speech detection (base->vad must be set for it). 0, or -1 with *e
 * set (status 400 and the field in e->param). */
int srv_form_params(const srv_form *f, const hv_model *model, const hv_transcribe_params *base,
                    srv_params *p, srv_error *e);

#endif /* HV_SERVER_FORM_H */
