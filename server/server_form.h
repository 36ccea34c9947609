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
#include "formats.h"
#include "server_format.h"

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
    SRV_F_PROGRESS,  /* hviske's: progress events in a stream */
    SRV_F_DOWNLOADS, /* hviske's: the CLI's formats in the done event */
    /* whisper-server's fields, on POST /inference only */
    SRV_F_BEAM_SIZE,
    SRV_F_OFFSET_T,
    SRV_F_DURATION,
    SRV_F_TRANSLATE,
    SRV_F_WHISPER_IGNORED, /* the ones taken and ignored (values dropped) */
    SRV_N_FIELDS
} srv_field;

typedef struct srv_form {
    size_t max_file;           /* bytes; more is a 413 */
    char *value[SRV_N_FIELDS]; /* NUL-terminated; NULL: not given */
    size_t len[SRV_N_FIELDS];
    unsigned char *file; /* the audio bytes as uploaded */
    size_t file_len, file_cap;
    int have_file;
    int n_parts;
    int cur;             /* part being received: a srv_field,
                                    SRV_N_FIELDS for file, -1 none */
    size_t cur_len;      /* its bytes so far */
    unsigned seq;        /* parts begun in the raw body, counted by the
                         caller (srv_delim); 0 if it does not count */
    unsigned cur_seq;    /* seq when the current part began */
    srv_error err;       /* the first problem, if any */
    int whisper;         /* POST /inference: whisper-server's fields too */
    char ignored[256];   /* whisper-server's fields taken and ignored, "a, b" */
    char file_name[256]; /* the file part's filename, printable ("" if none) */
} srv_form;

void srv_form_init(srv_form *f, size_t max_file);
void srv_form_free(srv_form *f); /* frees the buffers; f can be reused */

/*
 * Adds size bytes at offset off of the part named key (filename non-NULL
 * for a file part). Returns 0, or -1 with f->err set (unknown or repeated
 * field, too many parts, a field or the file too large, out of memory);
 * after an error the form takes nothing more.
 *
 * libmicrohttpd's post processor may call with no bytes at offset 0
 * before a part's data, and calls so once for an empty part: the two
 * look alike. So a call at offset 0 for the part just begun with no bytes
 * starts a new part only when f->seq (the caller's count of delimiters in
 * the raw body, srv_delim) has moved since. Every part counts against the
 * limit of parts, and a field given twice is an error
 * (timestamp_granularities[] excepted: one part per value).
 */
int srv_form_add(srv_form *f, const char *key, const char *filename, const char *data, uint64_t off,
                 size_t size);

/* Finds the delimiters of a multipart body as its bytes stream by
 * ("--BOUNDARY" first, "\r\n--BOUNDARY" after), for srv_form's seq. */
typedef struct srv_delim {
    char pat[80];           /* "\r\n--" and the boundary; n == 0: none */
    unsigned char fail[80]; /* KMP failure function of pat */
    size_t n, matched;
} srv_delim;

/* The boundary as libmicrohttpd's post processor takes it from the
 * Content-Type: everything after "boundary=", without surrounding quotes.
 * -1 (and a delimiter that is never found) if there is none usable. */
int srv_delim_init(srv_delim *d, const char *content_type);

/* The length of data's prefix up to and including the end of the next
 * delimiter (*found = 1), or size (*found = 0) if none ends in it. */
size_t srv_delim_scan(srv_delim *d, const char *data, size_t size, int *found);

/* The request's parameters, once the whole body is in. */
typedef struct srv_params {
    hv_transcribe_params tp; /* tp.language points to language[] */
    char language[32];
    srv_format format;
    double temperature;                  /* as given (0 = greedy), for verbose_json */
    int granularities;                   /* verbose_json: SRV_WORDS | SRV_SEGMENTS (default
                           segments only) */
    char model[128];                     /* the model field as given ("" if none) */
    int stream;                          /* stream=true: Server-Sent Events (json, text) */
    int logprobs;                        /* include[]=logprobs: json gets "logprobs" */
    char ignored[192];                   /* include[] values not supported, for a warning
                           ("" when none) */
    int prompt;                          /* a prompt was given (and ignored), for a warning */
    int progress;                        /* progress=true: hviske.progress events (stream) */
    hvt_format downloads[HVT_N_FORMATS]; /* downloads=txt,srt,...: the done
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
