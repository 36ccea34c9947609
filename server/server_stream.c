/* hviske-server: streamed transcriptions as Server-Sent Events
 * (server_stream.h). */
#include "server_stream.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "server_format.h"
#include "cue_options.h"

struct srv_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* bytes pushed, or the end (CLOCK_MONOTONIC) */
    char *buf;         /* [len] queued, of which [off, len) unsent */
    size_t off, len, cap;
    int ended; /* srv_stream_end: nothing more comes */
    int gone;  /* the response was freed */
    int refs;  /* the worker's and the response's */
    double keepalive_s;
};

static const char KEEPALIVE[] = ": keep-alive\n\n";

srv_stream *srv_stream_new(double keepalive_s) {
    srv_stream *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, &ca);
    pthread_condattr_destroy(&ca);
    st->refs = 1;
    st->keepalive_s = keepalive_s > 0 ? keepalive_s : 5;
    return st;
}

/* Drops a reference (caller holds st->mu, which this releases); frees the
 * stream at the last. */
static void release_locked(srv_stream *st) {
    int last = --st->refs == 0;
    pthread_mutex_unlock(&st->mu);
    if (!last) return;
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    free(st->buf);
    free(st);
}

/* libmicrohttpd's content reader, on the connection's thread: the bytes
 * queued, else waits for some; the end of the body once the worker ended
 * the stream and everything is sent. */
static ssize_t read_events(void *cls, uint64_t pos, char *out, size_t max) {
    srv_stream *st = cls;
    (void)pos;
    pthread_mutex_lock(&st->mu);
    while (st->off == st->len && !st->ended) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = ts.tv_sec + ts.tv_nsec / 1e9 + st->keepalive_s;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        if (pthread_cond_timedwait(&st->cv, &st->mu, &ts) != 0 && st->off == st->len &&
            !st->ended && max >= sizeof KEEPALIVE - 1) {
            /* nothing for a while: a comment, which SSE clients skip */
            pthread_mutex_unlock(&st->mu);
            memcpy(out, KEEPALIVE, sizeof KEEPALIVE - 1);
            return (ssize_t)(sizeof KEEPALIVE - 1);
        }
    }
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (st->off < st->len) {
        size_t k = st->len - st->off < max ? st->len - st->off : max;
        memcpy(out, st->buf + st->off, k);
        st->off += k;
        if (st->off == st->len) st->off = st->len = 0;
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&st->mu);
    return n;
}

/* libmicrohttpd frees the response: the connection is done with it. */
static void response_freed(void *cls) {
    srv_stream *st = cls;
    pthread_mutex_lock(&st->mu);
    st->gone = 1;
    release_locked(st);
}

struct MHD_Response *srv_stream_response(srv_stream *st) {
    pthread_mutex_lock(&st->mu);
    st->refs++; /* the response's, dropped by response_freed */
    pthread_mutex_unlock(&st->mu);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
                                                               read_events, st, response_freed);
    if (!r) { /* (libmicrohttpd calls no free callback then) */
        pthread_mutex_lock(&st->mu);
        st->refs--;
        pthread_mutex_unlock(&st->mu);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    return r;
}

int srv_stream_push(srv_stream *st, const char *data, size_t len) {
    pthread_mutex_lock(&st->mu);
    int rc = 0;
    if (st->len + len > st->cap) {
        size_t cap = (st->len + len) * 2 + 256;
        char *b = realloc(st->buf, cap);
        if (!b)
            rc = -1;
        else {
            st->buf = b;
            st->cap = cap;
        }
    }
    if (rc == 0) {
        memcpy(st->buf + st->len, data, len);
        st->len += len;
        pthread_cond_signal(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int srv_stream_gone(srv_stream *st) {
    pthread_mutex_lock(&st->mu);
    int gone = st->gone;
    pthread_mutex_unlock(&st->mu);
    return gone;
}

void srv_stream_end(srv_stream *st) {
    pthread_mutex_lock(&st->mu);
    st->ended = 1;
    pthread_cond_signal(&st->cv);
    release_locked(st);
}

/* "data: " + JSON of o + "\n\n"; deletes o. */
static char *event(cJSON *o, size_t *len) {
    char *json = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!json) return NULL;
    size_t n = strlen(json);
    char *s = malloc(n + 9);
    if (s) {
        memcpy(s, "data: ", 6);
        memcpy(s + 6, json, n);
        memcpy(s + 6 + n, "\n\n", 3);
        *len = n + 8;
    }
    cJSON_free(json);
    return s;
}

/* {"type": type, key: text} as an event. */
static char *text_event(const char *type, const char *key, const char *text, size_t *len) {
    char *clean = hv_utf8_clean(text);
    cJSON *o = cJSON_CreateObject();
    if (!clean || !o || !cJSON_AddStringToObject(o, "type", type) ||
        !cJSON_AddStringToObject(o, key, clean)) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(clean);
    return event(o, len);
}

char *srv_sse_delta(const char *text, size_t *len) {
    return text_event("transcript.text.delta", "delta", text, len);
}

char *srv_sse_done(const char *text, cJSON *downloads, size_t *len) {
    if (!downloads) return text_event("transcript.text.done", "text", text, len);
    char *clean = hv_utf8_clean(text);
    cJSON *o = cJSON_CreateObject();
    int ok = clean && o && cJSON_AddStringToObject(o, "type", "transcript.text.done") &&
             cJSON_AddStringToObject(o, "text", clean) &&
             cJSON_AddItemToObject(o, "downloads", downloads);
    if (!ok) {
        if (!(o && cJSON_GetObjectItemCaseSensitive(o, "downloads"))) cJSON_Delete(downloads);
        cJSON_Delete(o);
        o = NULL;
    }
    free(clean);
    return event(o, len);
}

char *srv_sse_progress(double done_s, double total_s, size_t *len) {
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "type", "hviske.progress") ||
        !cJSON_AddNumberToObject(o, "done_s", round(done_s * 1000) / 1000) ||
        !cJSON_AddNumberToObject(o, "total_s", round(total_s * 1000) / 1000)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return event(o, len);
}

char *srv_sse_error(const char *message, const char *type, const char *param, const char *code,
                    size_t *len) {
    size_t n = 0;
    char *body = srv_format_error(message, type, param, code, &n); /* {"error":{...}}\n */
    if (!body) return NULL;
    while (n > 0 && body[n - 1] == '\n') n--;
    static const char head[] = "data: {\"type\":\"error\",";
    char *s = n > 1 ? malloc(sizeof head - 1 + (n - 1) + 3) : NULL;
    if (s) {
        memcpy(s, head, sizeof head - 1);
        memcpy(s + sizeof head - 1, body + 1, n - 1);
        memcpy(s + sizeof head - 1 + n - 1, "\n\n", 3);
        *len = sizeof head - 1 + n - 1 + 2;
    }
    free(body);
    return s;
}
