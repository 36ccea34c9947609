/* hviske-server: the bounded queue of requests and the workers that
 * transcribe them (server_queue.h). */
#include "server_queue.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "server_format.h"
#include "server_response.h"
#include "server_stream.h"
#include "cmdline.h"

/* ------------------------------------------------------------ the queue */

double srv_max_audio_seconds(const server *s, const hv_transcribe_params *tp, int *by_budget) {
    double budget = hv_audio_max_seconds(tp->max_audio_bytes, s->rate);
    int b = budget > 0 && !(s->o->max_audio_s > 0 && s->o->max_audio_s <= budget);
    if (by_budget) *by_budget = b;
    return b ? budget : s->o->max_audio_s;
}

int srv_retry_after_locked(const server *s) {
    double t = s->avg_job_s * (s->n_waiting + s->n_running) / s->o->n_workers;
    return t < 1 ? 1 : t > 3600 ? 3600 : (int)ceil(t);
}

int srv_queue_request(server *s, request *req) {
    pthread_mutex_lock(&s->mu);
    if (s->stop || s->cancel) {
        req->close = 1;
        req->retry_after = 1;
        srv_error_set(&req->err, 503, "shutting_down", NULL, "the server is shutting down");
    } else if (s->n_waiting + s->n_running >= s->capacity) {
        req->retry_after = srv_retry_after_locked(s);
        srv_error_set(&req->err, 503, "server_busy", NULL,
                      "the server is busy (%d running, %d waiting); "
                      "retry later",
                      s->n_running, s->n_waiting);
    } else {
        s->n_suspended++;
        req->queued = 1;
        if (s->tail)
            s->tail->next = req;
        else
            s->head = req;
        s->tail = req;
        s->n_waiting++;
        pthread_cond_signal(&s->work);
        /* This connection's own thread waits for the answer; the other
         * connections have threads of their own. (Not
         * MHD_suspend_connection: a client that half-closes its side
         * after the request, as some clients and proxies do, had its
         * resumed connection closed by libmicrohttpd 0.9.75 without the
         * answer.) */
        while (!req->done) pthread_cond_wait(&s->answered, &s->mu);
        s->n_suspended--;
        s->n_answering++; /* until on_completed: shutdown waits for it */
        req->answering = 1;
    }
    pthread_mutex_unlock(&s->mu);
    return req->queued;
}

/* ------------------------------------------------------ gone clients */

/* Whether req's client went away, asked of its socket while the
 * connection's thread waits for the answer (nothing else reads it then):
 * a connection reset (or failed) is gone. One whose client closed its
 * sending side (a FIN, recv 0) is not: clients and proxies half-close
 * after a request and read the answer, and TCP does not tell them from a
 * client that closed its socket until the answer is written. */
static int client_gone(const request *req) {
    if (req->fd < 0) return 0;
    char b;
    ssize_t n = recv(req->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* The abort callback of a transcription that is not streamed. */
static int request_gone(void *user) { return client_gone(user); }

/* Skips req, whose client went away before `stage`: no answer (the
 * connection is closed; the log says 499 client_closed). */
static void skip_gone(server *s, request *req, const char *stage) {
    req->gone = 1;
    req->status = 0;
    req->resp = NULL;
    if (!s->o->quiet)
        fprintf(stderr, "hviske-server: request %s: the client went away %s: skipped\n", req->id,
                stage);
}

/* ------------------------------------------------------- a job's answer */

/* Maps a library failure to an HTTP error: the input's fault is 400 (or
 * 413 for a limit), anything else 500. chunking: the request's mode. */
static void library_error(srv_error *e, hv_status st, const char *msg, hv_chunking chunking) {
    if (!msg || !*msg) msg = hv_status_name(st);
    switch (st) {
        case HV_ERR_FORMAT:
        case HV_ERR_UNSUPPORTED:
        case HV_ERR_IO: srv_error_set(e, 400, "invalid_audio", "file", "%s", msg); break;
        case HV_ERR_INVALID_ARG:
            srv_error_set(e, 400, "invalid_value",
                          strncmp(msg, "max_new_tokens", 14) == 0 ? "max_tokens"
                          : strncmp(msg, "audio", 5) == 0         ? "file"
                                                                  : NULL,
                          "%s", msg);
            break;
        case HV_ERR_LIMIT:
            srv_error_set(e, 413, "audio_too_long", "file", "%s%s", msg,
                          chunking == HV_CHUNKING_NONE
                              ? " (this server's --chunking none takes the audio in one piece)"
                              : "");
            break;
        case HV_ERR_NOMEM:
        default: srv_error_set(e, 500, NULL, NULL, "%s", msg); break;
    }
}

/* How a job ended, for the worker: handed 1 when the request went back to
 * its connection's thread already (a stream, answered as it began). */
typedef struct job_end {
    int handed;
    unsigned status;
    double audio_s; /* transcribed in full; 0: not */
} job_end;

/* What the request asked for and did not get: a Warning header each (RFC
 * 9111's 299, "miscellaneous persistent warning"): include[] values, the
 * prompt, whisper-server's settings that hviske does not have. */
static void add_warnings(struct MHD_Response *r, const srv_params *p, const srv_form *f) {
    char w[400];
    if (p->ignored[0]) {
        snprintf(w, sizeof w,
                 "299 hviske \"include[] ignored: %s (supported: logprobs, with response_format "
                 "json)\"",
                 p->ignored);
        MHD_add_response_header(r, "Warning", w);
    }
    if (p->prompt)
        MHD_add_response_header(r, "Warning",
                                "299 hviske \"prompt ignored: the model takes no text prompt\"");
    if (f->ignored[0]) {
        snprintf(w, sizeof w, "299 hviske \"ignored: %s (whisper-server's, not hviske's)\"",
                 f->ignored);
        MHD_add_response_header(r, "Warning", w);
    }
}

/* --------------------------------------------------- streamed answers */

/* A stream's transcription (stream=true): each final segment's text is a
 * delta event, after a space but for the first (none for ja and zh), so
 * that the deltas joined are the done event's text. */
typedef struct stream_job {
    srv_stream *st;
    int n;                     /* segments sent */
    int no_space;              /* ja, zh: texts joined without a space */
    const hv_cue_params *cues; /* how chunks become segments */
} stream_job;

/* The abort callback: the client went away. */
static int stream_gone(void *user) { return srv_stream_gone(user); }

/* The progress callback of a stream with progress=true: an event
 * {"type":"hviske.progress","done_s","total_s"} after each chunk. */
static void stream_progress(void *user, double done_s, double total_s) {
    stream_job *sj = user;
    size_t len = 0;
    char *ev = srv_sse_progress(done_s, total_s, &len);
    if (ev) srv_stream_push(sj->st, ev, len);
    free(ev);
}

/* One delta event of text, after a space but for the first (none for ja
 * and zh); 0, or 1 when out of memory. */
static int stream_delta(stream_job *sj, const char *piece) {
    size_t n = strlen(piece), len = 0;
    char *text = malloc(n + 2);
    if (!text) return 1;
    int space = sj->n > 0 && !sj->no_space;
    text[0] = ' ';
    memcpy(text + space, piece, n + 1);
    for (char *q = text; *q; q++)
        if (*q == '\n') *q = ' '; /* a cue's lines: one text */
    char *ev = srv_sse_delta(text, &len);
    free(text);
    int failed = !ev || srv_stream_push(sj->st, ev, len) != 0;
    free(ev);
    sj->n++;
    return failed;
}

/* The segment callback: a delta per segment (cue) of the chunk, as each
 * chunk is final. */
static int stream_segment(void *user, const hv_segment *g) {
    stream_job *sj = user;
    if (srv_stream_gone(sj->st)) return 1;
    hv_cue *cues = NULL;
    int nc = 0, failed = hv_segment_cues(g, sj->cues, &cues, &nc) != HV_OK;
    for (int k = 0; !failed && k < nc; k++) failed = stream_delta(sj, cues[k].text);
    hv_cues_free(cues, nc);
    return failed; /* out of memory: stop */
}

/* Answers req at once with the event stream (the connection's thread
 * sends it; req is its own again), then transcribes pcm into it: a delta
 * per segment, then the done event, or an error event when the
 * transcription fails. A client that goes away stops the transcription
 * (srv_stream_gone). Takes pcm. */
static job_end stream_job_run(worker *w, request *req, float *pcm, size_t n_frames) {
    server *s = w->s;
    job_end je = {0, MHD_HTTP_OK, req->audio_s};
    srv_params p = req->params;
    if (req->params.tp.language == req->params.language) p.tp.language = p.language;
    if (req->params.tp.hotwords == req->params.hotwords) p.tp.hotwords = p.hotwords;
    if (p.tp.n_temperatures) p.tp.temperatures = p.temperatures.t;
    char id[sizeof req->id], file[sizeof req->form.file_name];
    memcpy(id, req->id, sizeof id);
    memcpy(file, req->form.file_name, sizeof file);
    double keepalive = s->o->timeout_s / 2.0 < 5 ? s->o->timeout_s / 2.0 : 5;
    srv_stream *st = srv_stream_new(keepalive);
    struct MHD_Response *r = st ? srv_stream_response(st) : NULL;
    if (!r) {
        if (st) srv_stream_end(st);
        hv_free(pcm);
        srv_error e = {0};
        srv_error_set(&e, 500, NULL, NULL, "out of memory");
        req->status = je.status = (unsigned)e.status;
        req->resp = srv_error_response(req, &e);
        return je;
    }
    if (p.model[0]) MHD_add_response_header(r, "OpenAI-Model", p.model);
    add_warnings(r, &p, &req->form);
    pthread_mutex_lock(&s->mu);
    req->resp = r;
    req->status = MHD_HTTP_OK;
    req->done = 1; /* the connection's thread owns req again: touch it no more */
    pthread_cond_broadcast(&s->answered);
    pthread_mutex_unlock(&s->mu);
    je.handed = 1;

    const char *lang = p.tp.language ? p.tp.language : hv_model_default_language(s->model);
    stream_job sj = {st, 0, lang && (!strcmp(lang, "ja") || !strcmp(lang, "zh")), &s->o->cues};
    p.tp.word_timestamps = 1; /* the deltas are the segments: cues of the words */
    p.tp.segment_callback = stream_segment;
    p.tp.segment_user = &sj;
    p.tp.abort_callback = stream_gone;
    p.tp.abort_user = st;
    if (p.progress) {
        p.tp.progress = stream_progress;
        p.tp.progress_user = &sj;
    }
    hv_result *res = NULL;
    hv_status hst = hv_transcribe(w->ctx, pcm, n_frames, s->rate, 1, &p.tp, &res);
    hv_free(pcm);
    char *ev = NULL;
    size_t len = 0;
    if (hst != HV_OK) { /* the answer began: the error is an event */
        srv_error e = {0};
        library_error(&e, hst, hv_context_error(w->ctx), p.tp.chunking);
        ev = srv_sse_error(e.message, e.type, e.param[0] ? e.param : NULL, e.code, &len);
        je.status = (unsigned)e.status;
        je.audio_s = 0;
    } else if (hv_result_stopped(res)) {
        je.audio_s = 0;
        if (!s->o->quiet)
            fprintf(stderr,
                    "hviske-server: request %s: the client went away: transcription "
                    "stopped after %d segment%s\n",
                    id, sj.n, sj.n == 1 ? "" : "s");
    } else {
        /* the downloads of the page: the CLI's bytes for this result */
        hv_output_spec spec = hv_output_default_spec(HV_OUTPUT_TXT);
        spec.cues = s->o->cues;
        spec.words = 1;
        spec.model_dir = s->model_dir;
        spec.model = s->model;
        cJSON *dl = p.n_downloads ? srv_format_downloads(res, p.downloads, p.n_downloads, &spec,
                                                         file[0] ? file : "-")
                                  : NULL;
        ev = p.n_downloads && !dl ? NULL : srv_sse_done(hv_result_text(res), dl, &len);
        if (!ev) { /* out of memory: the error event */
            srv_error e = {0};
            srv_error_set(&e, 500, NULL, NULL, "out of memory");
            ev = srv_sse_error(e.message, e.type, NULL, NULL, &len);
            je.status = 500;
            je.audio_s = 0;
        }
    }
    if (ev) srv_stream_push(st, ev, len);
    free(ev);
    hv_result_free(res);
    srv_stream_end(st);
    return je;
}

/* ---------------------------------------------------------- the workers */

/* Decodes and transcribes one request; sets req->resp and req->status
 * (stream=true: hands req back as the stream begins). */
static job_end run_job(worker *w, request *req) {
    server *s = w->s;
    srv_form *f = &req->form;
    srv_params *p = &req->params;
    srv_error e = {0};
    char err[1024] = "";
    float *pcm = NULL;
    size_t n_frames = 0;
    hv_result *res = NULL;

    /* mono at the model's rate, decoded in blocks: memory is the mono
     * samples whatever the upload's channels and rate, within
     * --max-audio-seconds and the library's memory budget */
    int by_budget = 0;
    double max_s = srv_max_audio_seconds(s, &p->tp, &by_budget);
    hv_status st = hv_audio_read_buffer_mono(f->file, f->file_len, "file", s->rate, max_s, &pcm,
                                             &n_frames, err, sizeof err);
    srv_form_free(f); /* the upload is no longer needed */
    /* each limit its own code, and a hint only where an option helps */
    if (st == HV_ERR_LIMIT && by_budget) {
        srv_error_set(&e, 413, "audio_too_long", "file",
                      "%s (this server takes at most %g s: the memory budget of one "
                      "transcription, %zu MiB of samples at %d Hz)",
                      err, max_s, p->tp.max_audio_bytes >> 20, s->rate);
        goto done;
    }
    if (st == HV_ERR_LIMIT) {
        srv_error_set(&e, 413, "audio_too_long", "file",
                      "%s (this server "
                      "takes at most %g s; the server's --max-audio-seconds raises it)",
                      err, max_s);
        goto done;
    }
    if (st == HV_ERR_UNSUPPORTED) { /* the readers' one: too many channels */
        srv_error_set(&e, 400, "too_many_channels", "file",
                      "%s: mix it down to fewer channels (to mono, for example)", err);
        goto done;
    }
    if (st != HV_OK) {
        library_error(&e, st == HV_ERR_INVALID_ARG ? HV_ERR_FORMAT : st, err, p->tp.chunking);
        goto done;
    }
    req->audio_s = (double)n_frames / s->rate;
    if (client_gone(req)) { /* before speech detection and transcription */
        hv_free(pcm);
        skip_gone(s, req, "while its audio was decoded");
        return (job_end){0, 0, 0};
    }
    if (p->stream) return stream_job_run(w, req, pcm, n_frames);
    p->tp.abort_callback = request_gone; /* asked before each chunk and decoder step */
    p->tp.abort_user = req;
    st = hv_transcribe(w->ctx, pcm, n_frames, s->rate, 1, &p->tp, &res);
    hv_free(pcm);
    pcm = NULL;
    if (st == HV_ERR_CANCELLED) {
        skip_gone(s, req, "during its transcription");
        return (job_end){0, 0, 0};
    }
    if (st != HV_OK) {
        library_error(&e, st, hv_context_error(w->ctx), p->tp.chunking);
        goto done;
    }
    size_t len = 0;
    srv_format_opts fo = {s->rate,  p->granularities, &s->o->cues,
                          s->model, p->logprobs,      p->srt_speakers};
    char *body = srv_format_result(p->format, res, &fo, &len);
    hv_result_free(res);
    req->resp = srv_buffer_response(body, len, srv_format_content_type(p->format));
    if (req->resp && p->model[0]) MHD_add_response_header(req->resp, "OpenAI-Model", p->model);
    if (req->resp) add_warnings(req->resp, p, &req->form);
    req->status = MHD_HTTP_OK;
    if (!req->resp) srv_error_set(&e, 500, NULL, NULL, "out of memory");
done:
    hv_free(pcm);
    if (e.status) {
        req->status = (unsigned)e.status;
        req->resp = srv_error_response(req, &e); /* NULL: the connection drops */
    }
    return (job_end){0, req->status, req->audio_s};
}

void *srv_worker_main(void *arg) {
    worker *w = arg;
    server *s = w->s;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        request *req = s->head;
        if (!req) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        s->head = req->next;
        if (!s->head) s->tail = NULL;
        s->n_waiting--;
        s->n_running++;
        pthread_mutex_unlock(&s->mu);

        double t = hvt_now_s();
        job_end je = {0, 0, 0};
        int begun = !client_gone(req); /* checked before each stage */
        if (begun) {
            pthread_rwlock_rdlock(&s->model_lock); /* POST /load waits for the job */
            je = run_job(w, req);                  /* (a stream's req is not ours after it) */
            pthread_rwlock_unlock(&s->model_lock);
        } else
            skip_gone(s, req, "while it waited");
        t = hvt_now_s() - t;
        if (begun) srv_metrics_job(&s->metrics, je.status == MHD_HTTP_OK ? je.audio_s : 0, t);

        pthread_mutex_lock(&s->mu);
        s->n_running--;
        if (begun) s->avg_job_s = 0.8 * s->avg_job_s + 0.2 * t;
        if (!je.handed) {
            /* the connection's thread owns req again: touch it no more */
            req->done = 1;
            pthread_cond_broadcast(&s->answered);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

void srv_cancel_waiting(server *s) {
    pthread_mutex_lock(&s->mu);
    request *req = s->head;
    s->head = s->tail = NULL;
    s->n_waiting = 0;
    s->cancel = 1;
    pthread_mutex_unlock(&s->mu);
    while (req) {
        request *next = req->next;
        srv_error e = {0};
        srv_error_set(&e, 503, "shutting_down", NULL, "the server is shutting down");
        req->retry_after = 1;
        req->close = 1;
        req->status = 503;
        req->resp = srv_error_response(req, &e);
        srv_form_free(&req->form);
        pthread_mutex_lock(&s->mu);
        req->done = 1;
        pthread_cond_broadcast(&s->answered);
        pthread_mutex_unlock(&s->mu);
        req = next;
    }
}
