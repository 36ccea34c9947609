/*
 * hviske-server: the types its parts share (docs/SERVER.md "Design"):
 * the server, a request from its headers to its answer, a worker, an
 * open connection. The HTTP side (server_http.h) reads requests and
 * answers them; the queue (server_queue.h) hands them to the workers;
 * main (hviske-server.c) starts and stops it all.
 */
#ifndef HV_SERVER_H
#define HV_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hviske.h"
#include "server_form.h"
#include "server_metrics.h"
#include "server_multipart.h"
#include "server_options.h"
#include "server_web.h"

struct MHD_Connection;
struct MHD_Daemon;
struct MHD_Response;

/* What a request asks for, by its path. */
typedef enum route {
    ROUTE_NONE,
    ROUTE_HEALTH,
    ROUTE_MODELS,
    ROUTE_TRANSCRIBE,
    ROUTE_INFERENCE, /* whisper-server's POST /inference: a transcription */
    ROUTE_TRANSLATE, /* POST /v1/audio/translations: 400, no translation */
    ROUTE_READY,
    ROUTE_METRICS,
    ROUTE_LOAD, /* whisper-server's POST /load: another checkpoint (--allow-load) */
    ROUTE_WEB   /* the page's files (server_web.c) */
} route;

typedef struct server server;

/* One open TCP connection (MHD_OPTION_NOTIFY_CONNECTION), for the
 * reaper: a connection must complete a request's headers within
 * --timeout seconds of opening or of its previous request. */
typedef struct conn_rec {
    struct conn_rec *prev, *next;
    int fd;
    unsigned char addr[17]; /* the peer's address family and bytes, for
                               --max-connections-per-ip ([0] 0: unknown) */
    double t0;              /* opened, or its last request completed */
    int in_request;         /* headers in, request not yet completed */
    int reaped;             /* shut down by the reaper */
} conn_rec;

/* One HTTP request, from its headers to the end of its response. Owned by
 * its connection's thread, except while queued or running: then by the
 * queue or one worker, while the connection's thread waits for done. */
typedef struct request {
    struct request *next; /* queue link */
    server *s;
    struct MHD_Connection *conn;
    conn_rec *rec; /* its connection's (NULL: untracked) */
    route route;
    const srv_web_asset *asset; /* ROUTE_WEB's file */
    char method[12], path[64];  /* printable, for the log */
    double t0;                  /* monotonic seconds at the headers */
    srv_multipart *mp;          /* the body's parser (transcriptions) */
    uint64_t body_bytes;        /* received so far */
    srv_error err;              /* decided before the body ended */
    const char *allow;          /* with 405 */
    const char *cors_origin;    /* an --allow-origin's page asks: CORS headers
                                   (libmicrohttpd's copy of its Origin) */
    int retry_after;            /* with 503, seconds */
    int close;                  /* answer with Connection: close */
    srv_form form;
    srv_params params;
    int queued;    /* handed to the workers */
    int done;      /* a worker set resp and status */
    int answering; /* its worker's answer is being sent (n_answering) */
    struct MHD_Response *resp;
    unsigned status;
    unsigned sent;           /* the status queued, for the log */
    int late;                /* begun while draining: not waited for at shutdown */
    int fd;                  /* its connection's socket (-1: unknown) */
    int gone;                /* its client went away before the answer: not answered */
    double audio_s;          /* seconds of audio decoded (-1: none), for the log */
    char id[SRV_ID_MAX + 1]; /* X-Request-Id */
    char client[64];         /* the peer's address, numeric */
} request;

/* One worker thread and its context on the shared model. */
typedef struct worker {
    server *s;
    hv_context *ctx;
    pthread_t tid;
} worker;

/* The server: what every thread shares. */
struct server {
    const srv_options *o;
    /* model, model_dir, rate, and the workers' contexts: read under
     * model_lock's read lock (a job, a form's checks, /v1/models), changed
     * under its write lock (POST /load) */
    pthread_rwlock_t model_lock;
    hv_model *model;
    const char *model_dir;     /* the checkpoint's directory: o->model_dir or model_dir_owned */
    char *model_dir_owned;     /* what POST /load loaded */
    hv_model_params mp;        /* how the model was loaded (threads, weight type, compute) */
    hv_vad *vad;               /* NULL: no speech detection */
    hv_transcribe_params base; /* chunking and speech detection of
                                      every request (server_form.h) */
    int rate;                  /* the model's sample rate */
    size_t max_file, max_body; /* bytes */
    time_t created;            /* for /v1/models */
    worker *workers;
    struct MHD_Daemon *mhd;
    pthread_t reaper_tid;
    int reaper; /* the reaper thread runs */

    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t work;     /* a request was queued, or stop */
    pthread_cond_t answered; /* a worker (or srv_cancel_waiting) answered one */
    request *head, *tail;    /* waiting requests, oldest first */
    int n_waiting, n_running;
    int n_suspended;  /* connections whose thread waits for a worker's
                         answer (queued or running requests) */
    int n_answering;  /* workers' answers queued, not yet sent in full */
    int capacity;     /* workers + queue */
    long active;      /* requests begun, not completed */
    double avg_job_s; /* running average, for Retry-After */
    int draining;     /* shutdown: no new requests */
    int cancel;       /* second signal: nothing more queued */
    int stop;         /* workers: exit when the queue is empty */
    conn_rec *conns;  /* open connections */
    unsigned n_open;
    int reaper_stop;     /* the reaper is to end */
    char *overflow;      /* the whole 503 answer beyond the reserve */
    size_t overflow_len; /* (NULL: none, the connection is just closed) */
    char *per_ip;        /* the same over --max-connections-per-ip */
    size_t per_ip_len;

    srv_metrics metrics; /* atomics: no lock (server_metrics.h) */
    uint64_t id_seed;    /* generated request ids: seed and counter */
    _Atomic uint64_t id_counter;
    FILE *access_log; /* NULL: none (-q) */
};

#endif /* HV_SERVER_H */
