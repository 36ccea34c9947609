/*
 * hviske-server: a transcription server with OpenAI's API.
 *
 *     hviske-server -m MODEL_DIR [--host 127.0.0.1] [--port 8080] [-t N]
 *                   [--workers W] [--weight-type T] [--queue Q] [--max-upload-mb M]
 *                   [--max-audio-seconds S] [--api-key KEY] ...
 *
 *     POST /v1/audio/transcriptions   multipart/form-data: file, model,
 *                                     language, prompt, response_format,
 *                                     temperature, and hviske's own
 *                                     decoding fields
 *     GET  /v1/models                 the one model served
 *     GET  /health                    {"status":"ok","workers":W,
 *                                      "running":R,"queued":Q}: requests
 *                                     being transcribed and waiting for
 *                                     a worker; 200 while alive, draining
 *                                     too
 *     GET  /ready                     200 when the model is loaded, the
 *                                     queue has room and no shutdown
 *                                     signal came; 503 otherwise (for
 *                                     load balancers)
 *     GET  /metrics                   Prometheus text format, hviske_*
 *                                     (server_metrics.c)
 *     GET  /                          the web page (server_web.c; not
 *                                     with --no-web)
 *
 *   Every answer carries X-Request-Id: the client's (1..128 visible ASCII
 *   characters) or a generated one; the access log (standard error or
 *   --access-log FILE; none with -q) has a JSON line per request.
 *
 * Threads and the queue
 *
 *   libmicrohttpd runs each connection in a thread of its own: it reads
 *   the request, streams a multipart body through MHD's post processor
 *   into the request's srv_form (limits enforced as bytes arrive),
 *   answers errors and writes responses. No thread but the connection
 *   that asked waits for a transcription, so health checks, uploads and
 *   errors are served while the workers are busy.
 *
 *   W worker threads, each with its own hv_context on the one loaded model
 *   (weights shared, read-only), decode the audio and transcribe.
 *   With stream=true a worker answers as soon as the audio is decoded,
 *   with a response that the connection's thread sends as the worker adds
 *   events to it (server_stream.c), one per final segment; a client that
 *   goes away stops the transcription (the stream's gone flag, asked by
 *   the library's abort and segment callbacks).
 *
 *   Between them is a bounded FIFO of complete, validated requests. When a
 *   body is in, the connection's thread admits the request if fewer than
 *   W + Q are running or waiting: it appends the request and waits until
 *   a worker has built the whole response, then queues it. Otherwise it
 *   answers 503 with Retry-After at once; nothing piles up. (Not
 *   MHD_suspend_connection and MHD_resume_connection: with libmicrohttpd
 *   0.9.75 a resumed connection whose client had half-closed was closed
 *   without its answer.)
 *
 *   A reaper thread shuts down connections that have not completed a
 *   request's headers within --timeout seconds; a body must keep up with
 *   --min-upload-rate after --timeout seconds; requests refused at their
 *   headers are answered at once and the connection closed, the body
 *   unread. --max-connections serve requests, RESERVE more answer /health
 *   and 503 to the rest.
 *
 *   The main thread loads the model, starts everything, and waits for
 *   SIGINT or SIGTERM (blocked in every thread, taken with sigtimedwait).
 *   The first signal drains: /ready answers 503 at once, /health and
 *   /metrics go on answering, every other request begun after it gets 503
 *   shutting_down with Connection: close (a balancer retries it on
 *   another replica), and every request begun before it finishes and is
 *   answered; then the listening socket is closed. A second signal
 *   answers the requests still waiting in the queue with 503 (running
 *   transcriptions always finish; only a streaming client that goes away
 *   stops its own).
 *   Then the workers are joined, the daemon stopped, everything freed,
 *   and the exit status is 0.
 *
 * Every byte of a request is hostile: headers are bounded by MHD's
 * per-connection memory limit, idle connections time out, a body must
 * arrive within --request-timeout, the body, the file and every field are
 * bounded while they stream, and every value is parsed strictly
 * (server_form.c).
 *
 * Built on the public API (hviske.h) and libmicrohttpd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "hviske.h"
#include "server_form.h"
#include "server_format.h"
#include "server.h"
#include "server_http.h"
#include "server_metrics.h"
#include "server_queue.h"
#include "server_stream.h"
#include "server_web.h"
#include "tool_util.h"

#define MIB ((size_t)1 << 20)

enum {
    CONN_MEMORY = 32 * 1024, /* MHD's per-connection pool: headers and
                                 read buffer must fit */
    PP_BUFFER = 16 * 1024,   /* the post processor's parse buffer */
    RESERVE = 4,             /* connections beyond --max-connections, for
                                /health and quick 503s */
    OVERFLOW = 64            /* beyond those: told 503 and closed at once
                                (libmicrohttpd stops accepting at its limit,
                                leaving new clients hanging) */
};

/* ------------------------------------------------------------ responses */

struct MHD_Response *srv_buffer_response(char *body, size_t len, const char *type) {
    if (!body) return NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return r;
}

struct MHD_Response *srv_error_response(const request *req, const srv_error *e) {
    size_t len = 0;
    char *body =
        srv_format_error(e->message, e->type, e->param[0] ? e->param : NULL, e->code, &len);
    struct MHD_Response *r = srv_buffer_response(body, len, "application/json");
    if (!r) return NULL;
    if (e->status == MHD_HTTP_SERVICE_UNAVAILABLE) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", req->retry_after > 0 ? req->retry_after : 1);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, buf);
    }
    if (e->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (e->status == MHD_HTTP_METHOD_NOT_ALLOWED && req->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, req->allow);
    if (req->close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    return r;
}

static enum MHD_Result queue(request *req, unsigned status, struct MHD_Response *r) {
    if (!r) return MHD_NO; /* out of memory: drop the connection */
    MHD_add_response_header(r, "X-Request-Id", req->id);
    enum MHD_Result rc = MHD_queue_response(req->conn, status, r);
    MHD_destroy_response(r);
    if (rc == MHD_YES) req->sent = status;
    return rc;
}

static enum MHD_Result answer_error(request *req) {
    return queue(req, (unsigned)req->err.status, srv_error_response(req, &req->err));
}

static enum MHD_Result answer_json(request *req, cJSON *o) {
    size_t len = 0;
    char *body = srv_format_json(o, &len);
    return queue(req, MHD_HTTP_OK, srv_buffer_response(body, len, "application/json"));
}

/* {"status":"ok","workers":W,"running":R,"queued":Q}: R requests being
 * transcribed, Q complete ones waiting for a worker (uploads still
 * arriving are neither); status "draining" after a shutdown signal. One
 * snapshot, taken under the queue's lock. */
static enum MHD_Result answer_health(request *req) {
    server *s = req->s;
    pthread_mutex_lock(&s->mu);
    int running = s->n_running, queued = s->n_waiting, draining = s->draining;
    pthread_mutex_unlock(&s->mu);
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "status", draining ? "draining" : "ok") ||
              !cJSON_AddNumberToObject(o, "workers", s->o->n_workers) ||
              !cJSON_AddNumberToObject(o, "running", running) ||
              !cJSON_AddNumberToObject(o, "queued", queued))) {
        cJSON_Delete(o);
        o = NULL;
    }
    return answer_json(req, o);
}

/* 200 {"status":"ready",...} when the server takes transcriptions now;
 * 503 {"status":"busy"|"draining",...} when its workers and queue are
 * full, its connections beyond --max-connections, or a shutdown signal
 * came. (The model is loaded before the server listens.) */
static enum MHD_Result answer_ready(request *req) {
    server *s = req->s;
    pthread_mutex_lock(&s->mu);
    int running = s->n_running, queued = s->n_waiting, draining = s->draining;
    int full = running + queued >= s->capacity || s->n_open > s->o->max_connections;
    pthread_mutex_unlock(&s->mu);
    const char *st = draining ? "draining" : full ? "busy" : "ready";
    cJSON *o = cJSON_CreateObject();
    if (o && (!cJSON_AddStringToObject(o, "status", st) ||
              !cJSON_AddNumberToObject(o, "running", running) ||
              !cJSON_AddNumberToObject(o, "queued", queued) ||
              !cJSON_AddNumberToObject(o, "capacity", s->capacity))) {
        cJSON_Delete(o);
        o = NULL;
    }
    size_t len = 0;
    char *body = srv_format_json(o, &len);
    struct MHD_Response *r = srv_buffer_response(body, len, "application/json");
    unsigned status = MHD_HTTP_OK;
    if (r && (draining || full)) {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    return queue(req, status, r);
}

/* The Prometheus text exposition (server_metrics.c). */
static enum MHD_Result answer_metrics(request *req) {
    server *s = req->s;
    srv_gauges g = {.workers = s->o->n_workers};
    pthread_mutex_lock(&s->mu);
    g.running = s->n_running;
    g.queued = s->n_waiting;
    g.capacity = s->capacity;
    g.open_connections = s->n_open;
    g.draining = s->draining;
    g.ready =
        !s->draining && g.running + g.queued < s->capacity && s->n_open <= s->o->max_connections;
    pthread_mutex_unlock(&s->mu);
    size_t len = 0;
    char *body = srv_metrics_format(&s->metrics, &g, HV_VERSION, &len);
    return queue(req, MHD_HTTP_OK, srv_buffer_response(body, len, SRV_METRICS_CONTENT_TYPE));
}

static enum MHD_Result answer_models(request *req) {
    const server *s = req->s;
    cJSON *o = cJSON_CreateObject(), *data = NULL, *m = NULL;
    int ok = o && cJSON_AddStringToObject(o, "object", "list") &&
             (data = cJSON_AddArrayToObject(o, "data")) && (m = cJSON_CreateObject()) &&
             cJSON_AddItemToArray(data, m) && cJSON_AddStringToObject(m, "id", s->o->model_name) &&
             cJSON_AddStringToObject(m, "object", "model") &&
             cJSON_AddNumberToObject(m, "created", (double)s->created) &&
             cJSON_AddStringToObject(m, "owned_by", "hviske") &&
             srv_format_model_info(m, s->model, &s->base, s->o->max_upload_mb, s->o->max_audio_s);
    if (!ok) {
        if (m && !(data && data->child == m)) cJSON_Delete(m);
        cJSON_Delete(o);
        o = NULL;
    }
    return answer_json(req, o);
}

/* ------------------------------------------------------ the HTTP side */

/* Copies printable ASCII of s (at most n - 1 bytes; others become '?'). */
static void printable(char *out, size_t n, const char *s) {
    size_t i = 0;
    for (; s && s[i] && i + 1 < n; i++) out[i] = s[i] >= 0x20 && s[i] < 0x7F ? s[i] : '?';
    out[i] = '\0';
}

static const char *header(struct MHD_Connection *c, const char *name) {
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The connection's peer address, numeric ("" when unknown). */
static void peer_address(struct MHD_Connection *c, char *out, size_t n) {
    out[0] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return;
    const struct sockaddr *sa = ci->client_addr;
    socklen_t len = sa->sa_family == AF_INET6  ? sizeof(struct sockaddr_in6)
                    : sa->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                               : 0;
    if (!len || getnameinfo(sa, len, out, (socklen_t)n, NULL, 0, NI_NUMERICHOST) != 0)
        out[0] = '\0';
}

/* Compares the Authorization header with "Bearer KEY" in time that
 * depends on the key's length only. */
static int authorized(struct MHD_Connection *c, const char *key) {
    const char *h = header(c, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h) h = "";
    while (*h == ' ' || *h == '\t') h++;
    int scheme = strncasecmp(h, "Bearer", 6) == 0 && (h[6] == ' ' || h[6] == '\t');
    const char *t = scheme ? h + 7 : "";
    while (*t == ' ' || *t == '\t') t++;
    size_t tn = strlen(t);
    while (tn > 0 && (t[tn - 1] == ' ' || t[tn - 1] == '\t')) tn--;
    size_t kn = strlen(key);
    volatile unsigned char diff = (unsigned char)(tn != kn);
    for (size_t i = 0; i < kn; i++) diff |= (unsigned char)(key[i] ^ (i < tn ? t[i] : 0));
    return scheme && diff == 0;
}

/* 1 for "multipart/form-data" (any case), alone or with parameters. */
static int is_multipart(const char *ct) {
    static const char mp[] = "multipart/form-data";
    if (!ct) return 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    if (strncasecmp(ct, mp, sizeof mp - 1) != 0) return 0;
    char next = ct[sizeof mp - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

static enum MHD_Result on_post_data(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *filename, const char *content_type,
                                    const char *transfer_encoding, const char *data, uint64_t off,
                                    size_t size) {
    request *req = cls;
    (void)kind, (void)content_type, (void)transfer_encoding;
    return srv_form_add(&req->form, key, filename, data, off, size) == 0 ? MHD_YES : MHD_NO;
}

/* Refuses a request at its headers: the answer goes at once, with
 * Connection: close, and the body (if any) is never read: a client
 * without the key, or on a wrong path, method or type, cannot hold a
 * connection by trickling a body the server would only drop. */
static enum MHD_Result refuse(request *req) {
    req->close = 1;
    return answer_error(req);
}

/* The first call for a request: its headers are in. */
static enum MHD_Result begin_request(server *s, struct MHD_Connection *conn, const char *url,
                                     const char *method, void **con_cls) {
    request *req = calloc(1, sizeof *req);
    if (!req) return MHD_NO;
    req->s = s;
    req->conn = conn;
    req->t0 = hvt_now_s();
    req->audio_s = -1;
    printable(req->method, sizeof req->method, method);
    printable(req->path, sizeof req->path, url);
    srv_request_id(req->id, header(conn, "X-Request-Id"), s->id_seed, &s->id_counter);
    peer_address(conn, req->client, sizeof req->client);
    srv_form_init(&req->form, s->max_file);
    *con_cls = req;
    srv_metrics_begin(&s->metrics);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pthread_mutex_lock(&s->mu);
    req->late = s->draining;
    if (!req->late) s->active++; /* shutdown waits for it */
    req->rec = ci ? ci->socket_context : NULL;
    if (req->rec) req->rec->in_request = 1;
    int crowded = s->n_open > s->o->max_connections;
    int draining = s->draining;
    int full = s->n_waiting + s->n_running >= s->capacity;
    req->retry_after = srv_retry_after_locked(s);
    pthread_mutex_unlock(&s->mu);

    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    srv_error *e = &req->err;
    if (strcmp(url, "/health") == 0)
        req->route = ROUTE_HEALTH;
    else if (strcmp(url, "/v1/models") == 0)
        req->route = ROUTE_MODELS;
    else if (strcmp(url, "/v1/audio/transcriptions") == 0)
        req->route = ROUTE_TRANSCRIBE;
    else if (strcmp(url, "/ready") == 0)
        req->route = ROUTE_READY;
    else if (strcmp(url, "/metrics") == 0)
        req->route = ROUTE_METRICS;
    else if (!s->o->no_web && (req->asset = srv_web_find(url)))
        req->route = ROUTE_WEB; /* open without the key: the page asks for it */
    /* what a balancer or a monitor asks: answered while draining and in
     * the reserve of connections, without the API key */
    int probe =
        req->route == ROUTE_HEALTH || req->route == ROUTE_READY || req->route == ROUTE_METRICS;

    if (draining && !probe) {
        req->close = 1;
        req->retry_after = 1;
        srv_error_set(e, 503, "shutting_down", NULL, "the server is shutting down");
        return refuse(req);
    }
    if (crowded && !probe) {
        /* a connection in the reserve beyond --max-connections */
        srv_error_set(e, 503, "too_many_connections", NULL,
                      "the server has too many open connections; retry later");
        req->retry_after = 1;
        return refuse(req);
    }
    if (req->route == ROUTE_NONE) {
        srv_error_set(e, 404, "not_found", NULL, "no such path: %s %s", req->method, req->path);
        return refuse(req);
    }
    int transcribe = req->route == ROUTE_TRANSCRIBE;
    if (transcribe ? !post : !get) {
        req->allow = transcribe ? "POST" : "GET, HEAD";
        srv_error_set(e, 405, "method_not_allowed", NULL, "%s is not allowed on %s (allowed: %s)",
                      req->method, req->path, req->allow);
        return refuse(req);
    }
    if (!probe && req->route != ROUTE_WEB && s->o->api_key && !authorized(conn, s->o->api_key)) {
        srv_error_set(e, 401, "invalid_api_key", NULL,
                      "missing or incorrect API key (send 'Authorization: "
                      "Bearer KEY')");
        return refuse(req);
    }
    if (req->route != ROUTE_TRANSCRIBE) return MHD_YES; /* answered when complete (on_request) */

    if (!is_multipart(header(conn, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        srv_error_set(e, 415, "unsupported_media_type", NULL,
                      "the body must be multipart/form-data");
        return refuse(req);
    }
    const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
        uint64_t n = 0;
        int ok = *cl != '\0';
        for (const char *p = cl; ok && *p; p++) {
            ok = *p >= '0' && *p <= '9' && n <= (UINT64_MAX - 9) / 10;
            n = n * 10 + (uint64_t)(*p - '0');
        }
        if (!ok || n > s->max_body) {
            srv_error_set(e, 413, "request_too_large", "file",
                          "the request body is larger than the server's "
                          "limit of %zu bytes (files up to %d MiB; the server's "
                          "--max-upload-mb raises it)",
                          s->max_body, s->o->max_upload_mb);
            return refuse(req);
        }
    }
    if (full) {
        const char *expect = header(conn, MHD_HTTP_HEADER_EXPECT);
        if (expect && strcasecmp(expect, "100-continue") == 0) {
            srv_error_set(e, 503, "server_busy", NULL,
                          "the server is busy "
                          "(all workers and the queue are full); retry "
                          "later");
            return answer_error(req);
        }
    }
    req->pp = MHD_create_post_processor(conn, PP_BUFFER, on_post_data, req);
    if (!req->pp) {
        srv_error_set(e, 400, "invalid_multipart", NULL,
                      "malformed "
                      "multipart/form-data Content-Type (no boundary?)");
        return refuse(req);
    }
    srv_delim_init(&req->delim, header(conn, MHD_HTTP_HEADER_CONTENT_TYPE));
    return MHD_YES;
}

/* A piece of the body. */
static enum MHD_Result body_data(request *req, const char *data, size_t size) {
    server *s = req->s;
    req->body_bytes += size;
    if (req->body_bytes > s->max_body) {
        if (!req->err.status)
            srv_error_set(&req->err, 413, "request_too_large", "file",
                          "the request body is larger than the server's "
                          "limit of %zu bytes (files up to %d MiB; the server's "
                          "--max-upload-mb raises it)",
                          s->max_body, s->o->max_upload_mb);
        if (req->body_bytes > 2 * (uint64_t)s->max_body)
            return MHD_NO; /* it goes on and on: cut it off */
    }
    /* the post processor gets the body up to each delimiter's end, then
     * the form learns that a part begins (an empty part is a part) */
    while (size > 0 && !req->err.status && req->pp) {
        int found;
        size_t n = srv_delim_scan(&req->delim, data, size, &found);
        if (MHD_post_process(req->pp, data, n) != MHD_YES) {
            if (req->form.err.status)
                req->err = req->form.err;
            else
                srv_error_set(&req->err, 400, "invalid_multipart", NULL,
                              "malformed multipart/form-data body");
        }
        req->form.seq += (unsigned)found;
        data += n;
        size -= n;
    }
    if (req->err.status) srv_form_free(&req->form); /* the rest is read and dropped */
    double dt = hvt_now_s() - req->t0;
    if (dt > s->o->request_timeout_s) return MHD_NO; /* too slow: drop the connection */
    /* after a grace of --timeout seconds, the body must keep up with
     * --min-upload-rate: a trickle is cut off in seconds, not minutes */
    if (s->o->min_upload_rate > 0 && dt > s->o->timeout_s &&
        (double)req->body_bytes < (dt - s->o->timeout_s) * s->o->min_upload_rate)
        return MHD_NO;
    return MHD_YES;
}

/* The whole body is in: validate and queue, or answer. */
static enum MHD_Result end_request(request *req) {
    server *s = req->s;
    if (!req->err.status && req->pp) {
        enum MHD_Result complete = MHD_destroy_post_processor(req->pp);
        req->pp = NULL;
        if (req->form.err.status)
            req->err = req->form.err;
        else if (complete != MHD_YES)
            srv_error_set(&req->err, 400, "invalid_multipart", NULL,
                          "malformed or truncated multipart/form-data "
                          "body");
    }
    if (!req->err.status &&
        srv_form_params(&req->form, s->model, &s->base, &req->params, &req->err) == 0 &&
        srv_queue_request(s, req)) {
        struct MHD_Response *r = req->resp;
        req->resp = NULL;
        return queue(req, req->status, r);
    }
    srv_form_free(&req->form);
    return answer_error(req);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    request *req = *con_cls;
    if (!req) return begin_request(cls, conn, url, method, con_cls);
    if (req->queued) return MHD_YES; /* answered already */
    if (*upload_size > 0) {
        enum MHD_Result rc = body_data(req, upload, *upload_size);
        *upload_size = 0;
        return rc;
    }
    if (req->err.status) return answer_error(req);
    if (req->route == ROUTE_HEALTH) return answer_health(req);
    if (req->route == ROUTE_READY) return answer_ready(req);
    if (req->route == ROUTE_METRICS) return answer_metrics(req);
    if (req->route == ROUTE_MODELS) return answer_models(req);
    if (req->route == ROUTE_WEB) return queue(req, MHD_HTTP_OK, srv_web_response(req->asset));
    return end_request(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    server *s = cls;
    request *req = *con_cls;
    (void)conn;
    if (!req) return;
    double dt = hvt_now_s() - req->t0;
    srv_route mr = srv_route_of(req->path);
    /* an answer begun but not sent in full because the connection broke
     * (a stream the client abandoned): not answered, logged as nginx logs
     * a client that closed first */
    int cut = req->sent && (toe == MHD_REQUEST_TERMINATED_WITH_ERROR ||
                            toe == MHD_REQUEST_TERMINATED_READ_ERROR ||
                            toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT);
    unsigned status = cut ? 0 : req->sent;
    if (s->access_log) {
        static const char *const why[] = {
            NULL, "error", "timed out", "daemon stopped", "read error", "client aborted"};
        srv_access a = {.request_id = req->id,
                        .method = req->method,
                        .path = req->path,
                        .route = mr,
                        .status = cut ? SRV_STATUS_CLIENT_CLOSED : status,
                        .audio_s = req->audio_s,
                        .duration_s = dt,
                        .client = req->client,
                        .error = cut                                        ? "client_closed"
                                 : (unsigned)toe < sizeof why / sizeof *why ? why[toe]
                                                                            : "error"};
        char *line = srv_access_line(&a);
        if (line) { /* one call: lines of concurrent requests do not mix */
            fprintf(s->access_log, "%s\n", line);
            fflush(s->access_log);
        }
        free(line);
    }
    srv_metrics_end(&s->metrics, mr, status, dt);
    if (req->pp) MHD_destroy_post_processor(req->pp);
    if (req->resp) MHD_destroy_response(req->resp);
    srv_form_free(&req->form);
    pthread_mutex_lock(&s->mu);
    if (!req->late) s->active--;
    if (req->answering) s->n_answering--;
    if (req->rec) { /* the next request's headers are due in --timeout */
        req->rec->in_request = 0;
        req->rec->t0 = hvt_now_s();
    }
    pthread_mutex_unlock(&s->mu);
    free(req);
    *con_cls = NULL;
}

/* Tracks the open connections for the reaper and the reserve. MHD calls
 * this with MHD_CONNECTION_NOTIFY_CLOSED before it closes the socket, so
 * an fd in the list is still this connection's. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_rec *r = ci ? calloc(1, sizeof *r) : NULL;
        if (!r) return; /* untracked: only MHD's own timeouts apply */
        r->fd = ci->connect_fd;
        r->t0 = hvt_now_s();
        pthread_mutex_lock(&s->mu);
        r->next = s->conns;
        if (s->conns) s->conns->prev = r;
        s->conns = r;
        s->n_open++;
        if (s->n_open > s->o->max_connections + RESERVE) {
            /* no slot even in the reserve: a 503 and the end, before MHD
             * starts the connection's thread (which then sees it shut) */
            if (s->overflow)
                (void)!send(r->fd, s->overflow, s->overflow_len, MSG_DONTWAIT | MSG_NOSIGNAL);
            shutdown(r->fd, SHUT_RDWR);
            r->reaped = 1;
        }
        pthread_mutex_unlock(&s->mu);
        *socket_context = r;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        conn_rec *r = *socket_context;
        pthread_mutex_lock(&s->mu);
        if (r->prev)
            r->prev->next = r->next;
        else
            s->conns = r->next;
        if (r->next) r->next->prev = r->prev;
        s->n_open--;
        pthread_mutex_unlock(&s->mu);
        free(r);
        *socket_context = NULL;
    }
}

/* Shuts down every connection that has not completed a request's headers
 * within --timeout seconds (MHD's idle timeout alone lets a client
 * trickling its headers a byte at a time hold a connection for hours);
 * MHD then sees the socket fail and closes it. Runs until reaper_stop. */
static void *reaper_main(void *arg) {
    server *s = arg;
    for (;;) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        double now = hvt_now_s();
        pthread_mutex_lock(&s->mu);
        int stop = s->reaper_stop;
        for (conn_rec *r = s->conns; r && !stop; r = r->next)
            if (!r->in_request && !r->reaped && now - r->t0 > s->o->timeout_s) {
                shutdown(r->fd, SHUT_RDWR);
                r->reaped = 1;
            }
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
    }
    return NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    const server *s = cls;
    if (s->o->quiet) return;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    fprintf(stderr, "hviske-server: http: %s\n", buf);
}

/* ---------------------------------------------------------------- main */

/* A listening TCP socket on host:port; -1 with a message on failure.
 * *bound gets the port actually bound, *ipv6 whether it is IPv6. */
static int listen_on(const char *host, int port, int *bound, int *ipv6) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "hviske-server: %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
            *ipv6 = a->ai_family == AF_INET6;
            break;
        }
        err = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        fprintf(stderr, "hviske-server: cannot listen on %s port %d: %s\n", host, port,
                strerror(err));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    *bound = port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                          : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* Waits until every request begun has completed. A signal in the meantime
 * answers the queued requests with 503 and stops waiting for uploads: once
 * every accepted request's answer has gone out in full (none waits for a
 * worker, none is being sent: n_suspended and n_answering are 0), uploads
 * still coming in get a second, and the daemon is stopped. */
static void wait_idle(server *s, const sigset_t *sigs) {
    int cancelled = 0;
    double t_free = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        long active = s->active;
        int pending = s->n_suspended + s->n_answering; /* accepted, not sent */
        pthread_mutex_unlock(&s->mu);
        if (active == 0) return;
        /* every accepted request's answer is sent in full, whatever the
         * machine's load; then a second for uploads still coming in */
        if (cancelled && pending == 0) {
            if (t_free == 0)
                t_free = hvt_now_s();
            else if (hvt_now_s() - t_free > 1.0)
                return;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        if (sigtimedwait(sigs, NULL, &ts) > 0 && !cancelled) {
            fprintf(stderr, "hviske-server: second signal: answering the "
                            "queued requests with 503\n");
            srv_cancel_waiting(s);
            cancelled = 1;
        }
    }
}

int main(int argc, char **argv) {
    srv_options o;
    int rc = srv_parse_options(argc, argv, &o);
    if (rc >= 0) return rc;

    /* SIGINT and SIGTERM are taken by the main thread only: block them
     * before any thread starts (threads inherit the mask). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    server s;
    memset(&s, 0, sizeof s);
    s.o = &o;
    s.max_file = (size_t)o.max_upload_mb * MIB;
    s.max_body = s.max_file + MIB; /* the other fields and the framing */
    s.capacity = o.n_workers + o.queue;
    s.avg_job_s = 1.0;
    s.created = time(NULL);
    s.id_seed = srv_request_id_seed();
    s.access_log = o.quiet ? NULL : stderr;
    {
        size_t blen = 0;
        char *body = srv_format_error("the server has too many open connections; retry later",
                                      "server_error", NULL, "too_many_connections", &blen);
        char head[256];
        int hn = snprintf(head, sizeof head,
                          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                          "Retry-After: 1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                          blen);
        if (body && hn > 0 && (s.overflow = malloc((size_t)hn + blen))) {
            memcpy(s.overflow, head, (size_t)hn);
            memcpy(s.overflow + hn, body, blen);
            s.overflow_len = (size_t)hn + blen;
        }
        free(body);
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.work, NULL);
    pthread_cond_init(&s.answered, NULL);
    int listen_fd = -1, n_started = 0, port = 0, ipv6 = 0, reaper = 0;
    pthread_t reaper_tid;
    MHD_socket q = MHD_INVALID_SOCKET; /* the listening socket, quiesced */
    rc = 1;

    char err[1024] = "";
    if (o.access_log && !o.quiet) {
        if (!(s.access_log = fopen(o.access_log, "a"))) {
            fprintf(stderr, "hviske-server: %s: %s\n", o.access_log, strerror(errno));
            goto done;
        }
        fcntl(fileno(s.access_log), F_SETFD, FD_CLOEXEC);
    }
    hv_model_params mp = hv_model_default_params();
    mp.n_threads = o.n_threads;
    mp.weight_type = o.weight_type;
    mp.compute = o.compute;
    double t_load = hvt_now_s();
    hv_status st = hv_model_load(o.model_dir, &mp, &s.model, err, sizeof err);
    if (st != HV_OK) {
        fprintf(stderr, "hviske-server: %s\n", err[0] ? err : hv_status_name(st));
        goto done;
    }
    s.metrics.model_load_s = hvt_now_s() - t_load;
    s.rate = hv_model_sample_rate(s.model);
    if (hvt_chunking_uses_vad(o.chunking) &&
        hvt_load_vad(o.vad_model, &s.vad, err, sizeof err) != HV_OK) {
        fprintf(stderr, "hviske-server: %s\n", err);
        goto done;
    }
    s.base = hv_transcribe_default_params();
    s.base.chunking = o.chunking;
    s.base.vad = s.vad;
    s.base.vad_params = o.vad;
    s.base.vad_max_gap_s = o.vad_max_gap_s;
    s.workers = calloc((size_t)o.n_workers, sizeof *s.workers);
    if (!s.workers) {
        fputs("hviske-server: out of memory\n", stderr);
        goto done;
    }
    for (int i = 0; i < o.n_workers; i++) {
        s.workers[i].s = &s;
        if (!(s.workers[i].ctx = hv_context_new(s.model, o.n_threads))) {
            fputs("hviske-server: out of memory creating a context\n", stderr);
            goto done;
        }
    }
    listen_fd = listen_on(o.host, o.port, &port, &ipv6);
    if (listen_fd < 0) goto done;
    for (; n_started < o.n_workers; n_started++) {
        worker *w = &s.workers[n_started];
        if (pthread_create(&w->tid, NULL, srv_worker_main, w) != 0) {
            fputs("hviske-server: cannot start a worker thread\n", stderr);
            goto done;
        }
    }
    /* a thread per connection: one waiting for its transcription holds
     * only itself (MHD_USE_ITC: MHD_quiesce_daemon needs it) */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    s.mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, &s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)o.max_connections + RESERVE + OVERFLOW, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned int)o.max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)o.timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, &s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s, MHD_OPTION_END);
    if (!s.mhd) {
        fputs("hviske-server: cannot start the HTTP daemon\n", stderr);
        goto done;
    }
    if (pthread_create(&reaper_tid, NULL, reaper_main, &s) != 0) {
        fputs("hviske-server: cannot start a thread\n", stderr);
        goto done;
    }
    reaper = 1;
    fprintf(stderr,
            "hviske-server: listening on http://%s%s%s:%d (model %s, "
            "%d worker%s x %d thread%s, queue %d)\n",
            ipv6 ? "[" : "", o.host, ipv6 ? "]" : "", port, o.model_dir, o.n_workers,
            o.n_workers == 1 ? "" : "s", o.n_threads, o.n_threads == 1 ? "" : "s", o.queue);
    fflush(stderr);

    int sig;
    while (sigwait(&sigs, &sig) != 0)
        ;
    fprintf(stderr, "hviske-server: %s: finishing the requests begun\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    fflush(stderr);
    pthread_mutex_lock(&s.mu);
    s.draining = 1; /* /ready: 503; new work: 503 with Connection: close */
    pthread_mutex_unlock(&s.mu);
    /* Connections are still accepted while draining, so a balancer's
     * health check reads /ready's 503 (and a retry of new work goes to
     * another replica) instead of a refused connection; requests begun
     * now are not waited for. */
    wait_idle(&s, &sigs);
    /* Stop accepting: MHD no longer polls the listening socket (ours to
     * close after the stop), and shutting it down makes the kernel refuse
     * new connections instead of queueing them unanswered. */
    q = MHD_quiesce_daemon(s.mhd);
    if (q != MHD_INVALID_SOCKET) shutdown(q, SHUT_RDWR);
    rc = 0;

done:
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_broadcast(&s.work);
    pthread_mutex_unlock(&s.mu);
    for (int i = 0; i < n_started; i++) pthread_join(s.workers[i].tid, NULL);
    if (reaper) {
        pthread_mutex_lock(&s.mu);
        s.reaper_stop = 1;
        pthread_mutex_unlock(&s.mu);
        pthread_join(reaper_tid, NULL);
    }
    if (s.mhd) {
        MHD_stop_daemon(s.mhd); /* closes the listening socket unless
                                   quiesced */
        if (q != MHD_INVALID_SOCKET) close(q);
    } else if (listen_fd >= 0) {
        close(listen_fd);
    }
    for (int i = 0; s.workers && i < o.n_workers; i++) hv_context_free(s.workers[i].ctx);
    free(s.workers);
    hv_vad_free(s.vad);
    hv_model_free(s.model);
    free(s.overflow);
    if (s.access_log && s.access_log != stderr) fclose(s.access_log);
    pthread_cond_destroy(&s.work);
    pthread_cond_destroy(&s.answered);
    pthread_mutex_destroy(&s.mu);
    if (rc == 0) fputs("hviske-server: stopped\n", stderr);
    return rc;
}
