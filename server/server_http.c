/* hviske-server: the HTTP side (server_http.h). */
#include "server_http.h"

#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "server_format.h"
#include "server_guard.h"
#include "server_queue.h"
#include "server_response.h"
#include "checkpoint.h"
#include "cmdline.h"

enum {
    CONN_MEMORY = 32 * 1024, /* MHD's per-connection pool: headers and
                                 read buffer must fit */
    RESERVE = 4,             /* connections beyond --max-connections, for
                                /health and quick 503s */
    OVERFLOW = 64            /* beyond those: told 503 and closed at once
                                (libmicrohttpd stops accepting at its limit,
                                leaving new clients hanging) */
};

/* ------------------------------------------------------------ answers */

static enum MHD_Result queue(request *req, unsigned status, struct MHD_Response *r) {
    if (!r) return MHD_NO; /* out of memory: drop the connection */
    MHD_add_response_header(r, "X-Request-Id", req->id);
    if (req->cors_origin) { /* a page of an --allow-origin may read it */
        MHD_add_response_header(r, "Access-Control-Allow-Origin", req->cors_origin);
        MHD_add_response_header(r, "Access-Control-Expose-Headers",
                                "Retry-After, X-Request-Id, OpenAI-Model, Warning");
        MHD_add_response_header(r, "Vary", "Origin");
    }
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
    server *s = req->s;
    pthread_rwlock_rdlock(&s->model_lock);
    cJSON *o = cJSON_CreateObject(), *data = NULL, *m = NULL;
    int ok = o && cJSON_AddStringToObject(o, "object", "list") &&
             (data = cJSON_AddArrayToObject(o, "data")) && (m = cJSON_CreateObject()) &&
             cJSON_AddItemToArray(data, m) && cJSON_AddStringToObject(m, "id", s->o->model_name) &&
             cJSON_AddStringToObject(m, "object", "model") &&
             cJSON_AddNumberToObject(m, "created", (double)s->created) &&
             cJSON_AddStringToObject(m, "owned_by", "hviske") &&
             srv_format_model_info(m, s->model, s->model_dir, &s->base, s->o->max_upload_mb,
                                   srv_max_audio_seconds(s, &s->base, NULL)) &&
             cJSON_AddNumberToObject(m, "max_beams", s->o->max_beams);
    pthread_rwlock_unlock(&s->model_lock);
    if (!ok) {
        if (m && !(data && data->child == m)) cJSON_Delete(m);
        cJSON_Delete(o);
        o = NULL;
    }
    return answer_json(req, o);
}

/* ------------------------------------------------------------- requests */

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

/* The connection's peer address as a key for --max-connections-per-ip:
 * its family, then its bytes (IPv4 or IPv6; [0] 0 when unknown). */
static void peer_key(struct MHD_Connection *c, unsigned char key[17]) {
    memset(key, 0, 17);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        key[0] = 6;
        memcpy(key + 1, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
    }
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

/* The CORS preflight (an OPTIONS with Access-Control-Request-Method) of
 * a page of an --allow-origin: 204 with what it may send. */
static enum MHD_Result answer_preflight(request *req) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Access-Control-Allow-Methods",
                            req->route == ROUTE_TRANSCRIBE ? "POST" : "GET, HEAD");
    MHD_add_response_header(r, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, X-Request-Id");
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    return queue(req, MHD_HTTP_NO_CONTENT, r);
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
                                     const char *method, const char *version, void **con_cls) {
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
    req->form.max_beams = s->o->max_beams;
    *con_cls = req;
    srv_metrics_begin(&s->metrics);
    const union MHD_ConnectionInfo *fi =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    req->fd = fi ? fi->connect_fd : -1;
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
    /* one framing of the body, or a proxy in front may read the rest as
     * another request (request smuggling) */
    if (srv_guard_framing(conn, version, e) != 0) return refuse(req);
    /* a name of a web page's own pointed at this server (DNS rebinding) */
    if (srv_guard_host(conn, s->o, e) != 0) return refuse(req);
    if (strcmp(url, "/health") == 0)
        req->route = ROUTE_HEALTH;
    else if (strcmp(url, "/v1/models") == 0)
        req->route = ROUTE_MODELS;
    else if (strcmp(url, "/v1/audio/transcriptions") == 0)
        req->route = ROUTE_TRANSCRIBE;
    else if (strcmp(url, "/inference") == 0)
        req->route = ROUTE_INFERENCE;
    else if (strcmp(url, "/v1/audio/translations") == 0)
        req->route = ROUTE_TRANSLATE;
    else if (strcmp(url, "/ready") == 0)
        req->route = ROUTE_READY;
    else if (strcmp(url, "/metrics") == 0)
        req->route = ROUTE_METRICS;
    else if (strcmp(url, "/load") == 0)
        req->route = ROUTE_LOAD;
    else if (!s->o->no_web && (req->asset = srv_web_find(url)))
        req->route = ROUTE_WEB; /* open without the key: the page asks for it */
    /* what a balancer or a monitor asks: answered while draining and in
     * the reserve of connections, without the API key */
    int probe =
        req->route == ROUTE_HEALTH || req->route == ROUTE_READY || req->route == ROUTE_METRICS;
    /* the page's files load as any page's do; the API checks whose page
     * asks (a browser sends Origin with every cross-origin request that
     * can cost anything) */
    if (req->route != ROUTE_WEB) {
        int k = srv_guard_origin(conn, s->o, &req->cors_origin, e);
        if (k < 0) return refuse(req);
        if (k == SRV_ORIGIN_ALLOWED && req->route != ROUTE_NONE &&
            strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0 &&
            header(conn, "Access-Control-Request-Method"))
            return answer_preflight(req);
    }

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
    int transcribe = req->route == ROUTE_TRANSCRIBE || req->route == ROUTE_INFERENCE ||
                     req->route == ROUTE_TRANSLATE || req->route == ROUTE_LOAD;
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
    if (req->route == ROUTE_TRANSLATE) {
        /* OpenAI's clients send the whole form before they read an
         * answer: it is read and dropped, then the 400 goes */
        srv_error_set(e, 400, "translation_not_supported", NULL,
                      "this model transcribes; it does not translate (use "
                      "/v1/audio/transcriptions with the audio's language)");
        return MHD_YES;
    }
    if (!transcribe) return MHD_YES; /* answered when complete (on_request) */
    req->form.whisper = req->route == ROUTE_INFERENCE;

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
    req->mp = srv_multipart_new(header(conn, MHD_HTTP_HEADER_CONTENT_TYPE), &req->form, e);
    if (!req->mp) return refuse(req);
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
    if (!req->err.status && req->mp && srv_multipart_feed(req->mp, data, size) != 0)
        req->err = req->form.err;
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

/* POST /load: the checkpoint directory of the form's model field, loaded
 * as the first was (threads, weight type, compute), then put in place of
 * the running one once no job runs (model_lock's write lock): the
 * workers' contexts are made anew for it. Refused without --allow-load
 * (403); a path that is no checkpoint, or a model without the -l
 * language, is a 400 and the running model stays. */
static enum MHD_Result answer_load(request *req) {
    server *s = req->s;
    srv_error *e = &req->err;
    const char *dir = srv_form_value(&req->form, SRV_F_MODEL);
    char err[1024] = "";
    hv_model *model = NULL;
    hv_context **ctx = NULL;
    if (!s->o->allow_load) {
        srv_error_set(e, 403, "load_not_allowed", NULL,
                      "loading another checkpoint is off (start hviske-server with --allow-load)");
    } else if (!dir || !*dir) {
        srv_error_set(e, 400, "missing_model", "model",
                      "the form field model names the checkpoint directory to load");
    } else if (hvt_model_dir_hint(dir, err, sizeof err) ||
               hv_model_load(dir, &s->mp, &model, err, sizeof err) != HV_OK) {
        srv_error_set(e, 400, "invalid_model", "model", "%s", err[0] ? err : "cannot load it");
    } else if (s->o->language && !hvt_model_has_language(model, s->o->language)) {
        srv_error_set(e, 400, "invalid_model", "model",
                      "%s: the model has no language %s (the server's -l)", dir, s->o->language);
    } else if (!(ctx = calloc((size_t)s->o->n_workers, sizeof *ctx))) {
        srv_error_set(e, 500, "out_of_memory", NULL, "out of memory");
    } else {
        char *copy = strdup(dir);
        int ok = copy != NULL;
        for (int i = 0; ok && i < s->o->n_workers; i++)
            ok = hv_context_new(model, s->o->n_threads, &ctx[i], NULL, 0) == HV_OK;
        if (ok) {
            pthread_rwlock_wrlock(&s->model_lock);
            hv_model *old = s->model;
            for (int i = 0; i < s->o->n_workers; i++) {
                hv_context_free(s->workers[i].ctx);
                s->workers[i].ctx = ctx[i];
                ctx[i] = NULL;
            }
            s->model = model;
            s->rate = hv_model_sample_rate(model);
            free(s->model_dir_owned);
            s->model_dir = s->model_dir_owned = copy;
            pthread_rwlock_unlock(&s->model_lock);
            model = old; /* freed below */
        } else {
            free(copy);
            srv_error_set(e, 500, "out_of_memory", NULL, "out of memory creating the contexts");
        }
    }
    for (int i = 0; ctx && i < s->o->n_workers; i++) hv_context_free(ctx[i]);
    free(ctx);
    hv_model_free(model);
    if (e->status) {
        srv_form_free(&req->form);
        return answer_error(req);
    }
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "loaded", dir)) {
        cJSON_Delete(o);
        o = NULL;
    }
    srv_form_free(&req->form);
    return answer_json(req, o);
}

/* The whole body is in: validate and queue, or answer. */
static enum MHD_Result end_request(request *req) {
    server *s = req->s;
    if (!req->err.status && req->mp && srv_multipart_finish(req->mp) != 0) req->err = req->form.err;
    srv_multipart_free(req->mp);
    req->mp = NULL;
    if (!req->err.status && req->route == ROUTE_LOAD) return answer_load(req);
    int params = 0;
    if (!req->err.status) {
        pthread_rwlock_rdlock(&s->model_lock);
        params = srv_form_params(&req->form, s->model, &s->base, &req->params, &req->err) == 0;
        pthread_rwlock_unlock(&s->model_lock);
    }
    if (params && srv_queue_request(s, req)) {
        if (req->gone) return MHD_NO; /* no one to answer: close */
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
    request *req = *con_cls;
    if (!req) return begin_request(cls, conn, url, method, version, con_cls);
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
     * (a stream the client abandoned), or a request skipped because its
     * client went away: not answered, logged as nginx logs a client that
     * closed first */
    int cut = req->gone || (req->sent && (toe == MHD_REQUEST_TERMINATED_WITH_ERROR ||
                                          toe == MHD_REQUEST_TERMINATED_READ_ERROR ||
                                          toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT));
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
    srv_multipart_free(req->mp);
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
        peer_key(conn, r->addr);
        pthread_mutex_lock(&s->mu);
        unsigned same = 1; /* this one */
        for (const conn_rec *q = s->conns; q && s->o->max_per_ip && r->addr[0]; q = q->next)
            same += memcmp(q->addr, r->addr, sizeof r->addr) == 0;
        r->next = s->conns;
        if (s->conns) s->conns->prev = r;
        s->conns = r;
        s->n_open++;
        /* over its address's limit, or no slot even in the reserve: a 503
         * and the end, before MHD starts the connection's thread (which
         * then sees it shut) */
        int over_ip = s->o->max_per_ip && same > s->o->max_per_ip;
        if (over_ip || s->n_open > s->o->max_connections + RESERVE) {
            const char *a = over_ip ? s->per_ip : s->overflow;
            if (a)
                (void)!send(r->fd, a, over_ip ? s->per_ip_len : s->overflow_len,
                            MSG_DONTWAIT | MSG_NOSIGNAL);
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

/* libmicrohttpd's messages, as lines of the server's own (none with -q). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    const server *s = cls;
    if (s->o->quiet) return;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = '\0';
    fprintf(stderr, "hviske-server: http: %s\n", buf);
}

/* ------------------------------------------------------------ the daemon */

/* The whole 503 answer of a connection refused as it is accepted (beyond
 * the reserve, or over --max-connections-per-ip); NULL when out of memory
 * (such a connection is just closed). */
static char *refusal_answer(const char *message, const char *code, size_t *len) {
    size_t blen = 0;
    char *body = srv_format_error(message, "server_error", NULL, code, &blen);
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                      "X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\n"
                      "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                      blen);
    char *a = body && hn > 0 ? malloc((size_t)hn + blen) : NULL;
    if (a) {
        memcpy(a, head, (size_t)hn);
        memcpy(a + hn, body, blen);
        *len = (size_t)hn + blen;
    }
    free(body);
    return a;
}

int srv_http_start(server *s, int listen_fd, int ipv6) {
    const srv_options *o = s->o;
    s->overflow = refusal_answer("the server has too many open connections; retry later",
                                 "too_many_connections", &s->overflow_len);
    char msg[160];
    snprintf(msg, sizeof msg,
             "too many open connections from your address (at most %u: the server's "
             "--max-connections-per-ip); retry later",
             o->max_per_ip);
    s->per_ip = refusal_answer(msg, "too_many_connections_per_ip", &s->per_ip_len);
    /* a thread per connection: one waiting for its transcription holds
     * only itself (MHD_USE_ITC: MHD_quiesce_daemon needs it) */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    s->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)o->max_connections + RESERVE + OVERFLOW, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)o->timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_END);
    if (!s->mhd) {
        fputs("hviske-server: cannot start the HTTP daemon\n", stderr);
        return -1;
    }
    if (pthread_create(&s->reaper_tid, NULL, reaper_main, s) != 0) {
        fputs("hviske-server: cannot start a thread\n", stderr);
        return -1;
    }
    s->reaper = 1;
    return 0;
}

void srv_http_stop(server *s) {
    if (s->reaper) {
        pthread_mutex_lock(&s->mu);
        s->reaper_stop = 1;
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->reaper_tid, NULL);
        s->reaper = 0;
    }
    if (s->mhd) MHD_stop_daemon(s->mhd); /* closes the listening socket unless quiesced */
    s->mhd = NULL;
    free(s->overflow);
    free(s->per_ip);
    s->overflow = s->per_ip = NULL;
}
