/*
 * hviske-server: its command line (docs/SERVER.md "Options"): the
 * options, their defaults and checks, and the --help text.
 */
#ifndef HV_SERVER_OPTIONS_H
#define HV_SERVER_OPTIONS_H

#include "hviske.h"

/* The values of an option given more than once (--allow-host,
 * --allow-origin). */
enum { SRV_MAX_NAMES = 32 };
typedef struct srv_names {
    const char *v[SRV_MAX_NAMES];
    int n;
} srv_names;

typedef struct srv_options {
    const char *model_dir;
    const char *host;
    int port;                   /* 0: any free port (printed) */
    int n_threads;              /* per worker context; 0: cores / workers */
    hv_weight_type weight_type; /* --weight-type; HV_WEIGHTS_AUTO: the checkpoint's own */
    hv_compute compute;         /* HV_COMPUTE_AUTO: by the CPU */
    int n_workers;
    int queue;     /* waiting requests beyond the running ones */
    int max_beams; /* num_beams a request may ask for */
    int max_upload_mb;
    double max_audio_s;
    const char *api_key;        /* NULL: no authentication */
    const char *model_name;     /* the id in /v1/models */
    const char *language;       /* -l: the language of requests that give none */
    int allow_load;             /* --allow-load: POST /load may load another checkpoint */
    unsigned timeout_s;         /* idle connection timeout */
    unsigned request_timeout_s; /* headers-to-end-of-body deadline */
    unsigned min_upload_rate;   /* bytes/s a body keeps up with after
                                   timeout_s; 0: none */
    unsigned max_connections;
    unsigned max_per_ip;     /* 0: no limit */
    int quiet;               /* no access log */
    const char *access_log;  /* NULL: standard error */
    hv_transcribe_params tp; /* the parameter options (--chunking for requests
                                without chunking_strategy, --vad-...): what
                                every request starts from */
    const char *vad_model;   /* NULL: hvt_load_vad's search */
    hv_cue_params cues;      /* srt, vtt, verbose_json segments */
    int no_web;              /* no page at / (server_web.c) */
    srv_names allow_hosts;   /* --allow-host: Host names answered ("*": any) */
    srv_names allow_origins; /* --allow-origin: other origins whose pages may
                                call the API ("*": any) */
} srv_options;

/* Fills o from argv: the defaults, then the options given (whisper-server's
 * flags first taken out of argv, server_whisper.h, their notices printed
 * on standard error); n_threads 0 becomes the cores divided among the
 * workers. Returns -1 to go on,
 * otherwise the exit status (0 after --help or --version, 2 after a usage
 * error, reported on standard error). */
int srv_parse_options(int argc, char **argv, srv_options *o);

#endif /* HV_SERVER_OPTIONS_H */
