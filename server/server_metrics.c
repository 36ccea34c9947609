/* Metrics, request ids and the access log of hviske-server
 * (server_metrics.h). */
#include "server_metrics.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

static const char *const ROUTES[SRV_N_ROUTES] = {
    [SRV_ROUTE_TRANSCRIBE] = "/v1/audio/transcriptions",
    [SRV_ROUTE_MODELS] = "/v1/models",
    [SRV_ROUTE_HEALTH] = "/health",
    [SRV_ROUTE_READY] = "/ready",
    [SRV_ROUTE_METRICS] = "/metrics",
    [SRV_ROUTE_INFERENCE] = "/inference",
    [SRV_ROUTE_OTHER] = "other",
};

/* Upper bounds of the duration buckets, seconds. */
static const double BOUNDS[SRV_N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                             2.5,   5,    10,    30,   60,  120,  300, 600};

srv_route srv_route_of(const char *path) {
    for (int r = 0; r < SRV_ROUTE_OTHER; r++)
        if (path && strcmp(path, ROUTES[r]) == 0) return (srv_route)r;
    return SRV_ROUTE_OTHER;
}

const char *srv_route_name(srv_route r) {
    return (unsigned)r < SRV_N_ROUTES ? ROUTES[r] : ROUTES[SRV_ROUTE_OTHER];
}

/* Seconds to whole microseconds, clamped to [0, 2^62]. */
static uint64_t to_us(double s) {
    if (!(s > 0)) return 0;
    double us = s * 1e6 + 0.5;
    return us > 4.6e18 ? (uint64_t)4.6e18 : (uint64_t)us;
}

void srv_metrics_begin(srv_metrics *m) { atomic_fetch_add(&m->in_flight, 1); }

void srv_metrics_end(srv_metrics *m, srv_route r, unsigned status, double duration_s) {
    if ((unsigned)r >= SRV_N_ROUTES) r = SRV_ROUTE_OTHER;
    if (status >= SRV_STATUS_MIN && status < SRV_STATUS_MIN + SRV_N_STATUS)
        atomic_fetch_add(&m->requests[r][status - SRV_STATUS_MIN], 1);
    else
        atomic_fetch_add(&m->unanswered[r], 1);
    int b = 0;
    while (b < SRV_N_BUCKETS && !(duration_s <= BOUNDS[b])) b++;
    atomic_fetch_add(&m->bucket[r][b], 1);
    atomic_fetch_add(&m->duration_us[r], to_us(duration_s));
    atomic_fetch_sub(&m->in_flight, 1); /* last: see the header */
}

void srv_metrics_job(srv_metrics *m, double audio_s, double processing_s) {
    atomic_fetch_add(&m->audio_us, to_us(audio_s));
    atomic_fetch_add(&m->processing_us, to_us(processing_s));
    atomic_fetch_add(&m->jobs, 1);
}

/* ---------------------------------------------------------- exposition */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 8192;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

static void family(sbuf *b, const char *name, const char *type, const char *help) {
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, as the format requires. */
static void put_label(sbuf *b, const char *v) {
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(b, "\\%c", *v);
        else if (*v == '\n')
            put(b, "\\n");
        else
            put(b, "%c", *v);
    }
}

static double us_to_s(uint64_t us) { return (double)us / 1e6; }

char *srv_metrics_format(srv_metrics *m, const srv_gauges *g, const char *version, size_t *len) {
    sbuf b = {0};
    /* first: every request that lowered it has been counted */
    long long in_flight = (long long)atomic_load(&m->in_flight);

    family(&b, "hviske_build_info", "gauge", "The version of hviske-server (always 1).");
    put(&b, "hviske_build_info{version=\"");
    put_label(&b, version);
    put(&b, "\"} 1\n");

    family(&b, "hviske_http_requests_total", "counter",
           "HTTP requests answered, by route and status.");
    for (int r = 0; r < SRV_N_ROUTES; r++)
        for (int s = 0; s < SRV_N_STATUS; s++) {
            uint64_t n = atomic_load(&m->requests[r][s]);
            if (n)
                put(&b, "hviske_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n", ROUTES[r],
                    s + SRV_STATUS_MIN, (unsigned long long)n);
        }
    family(&b, "hviske_http_requests_unanswered_total", "counter",
           "HTTP requests that ended without an answer (client gone, timed out, dropped).");
    for (int r = 0; r < SRV_N_ROUTES; r++)
        put(&b, "hviske_http_requests_unanswered_total{route=\"%s\"} %llu\n", ROUTES[r],
            (unsigned long long)atomic_load(&m->unanswered[r]));
    family(&b, "hviske_http_requests_in_flight", "gauge",
           "HTTP requests begun and not ended (this scrape included).");
    put(&b, "hviske_http_requests_in_flight %lld\n", in_flight);

    family(&b, "hviske_http_request_duration_seconds", "histogram",
           "Time from a request's headers to its end, by route.");
    for (int r = 0; r < SRV_N_ROUTES; r++) {
        uint64_t cum = 0;
        for (int k = 0; k <= SRV_N_BUCKETS; k++) {
            cum += atomic_load(&m->bucket[r][k]);
            if (k < SRV_N_BUCKETS)
                put(&b,
                    "hviske_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                    ROUTES[r], BOUNDS[k], (unsigned long long)cum);
            else
                put(&b,
                    "hviske_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n",
                    ROUTES[r], (unsigned long long)cum);
        }
        put(&b, "hviske_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", ROUTES[r],
            us_to_s(atomic_load(&m->duration_us[r])));
        put(&b, "hviske_http_request_duration_seconds_count{route=\"%s\"} %llu\n", ROUTES[r],
            (unsigned long long)cum);
    }

    family(&b, "hviske_workers", "gauge", "Worker threads (transcriptions at a time).");
    put(&b, "hviske_workers %d\n", g->workers);
    family(&b, "hviske_transcriptions_running", "gauge", "Transcriptions being run by a worker.");
    put(&b, "hviske_transcriptions_running %d\n", g->running);
    family(&b, "hviske_queue_depth", "gauge", "Complete requests waiting for a worker.");
    put(&b, "hviske_queue_depth %d\n", g->queued);
    family(&b, "hviske_queue_capacity", "gauge",
           "Requests running or waiting admitted at most (workers + queue); beyond: 503.");
    put(&b, "hviske_queue_capacity %d\n", g->capacity);
    family(&b, "hviske_open_connections", "gauge", "Open TCP connections.");
    put(&b, "hviske_open_connections %u\n", g->open_connections);
    family(&b, "hviske_draining", "gauge",
           "1 once a shutdown signal came: finishing, not taking work.");
    put(&b, "hviske_draining %d\n", g->draining);
    family(&b, "hviske_ready", "gauge", "1 when /ready answers 200.");
    put(&b, "hviske_ready %d\n", g->ready);

    family(&b, "hviske_audio_seconds_total", "counter",
           "Seconds of audio in the requests transcribed successfully.");
    put(&b, "hviske_audio_seconds_total %.6f\n", us_to_s(atomic_load(&m->audio_us)));
    family(&b, "hviske_processing_seconds_total", "counter",
           "Seconds the workers spent decoding and transcribing requests.");
    put(&b, "hviske_processing_seconds_total %.6f\n", us_to_s(atomic_load(&m->processing_us)));
    family(&b, "hviske_worker_jobs_total", "counter",
           "Requests the workers ran, whatever the outcome.");
    put(&b, "hviske_worker_jobs_total %llu\n", (unsigned long long)atomic_load(&m->jobs));
    family(&b, "hviske_model_load_seconds", "gauge", "Seconds it took to load the model at start.");
    put(&b, "hviske_model_load_seconds %.6f\n", m->model_load_s);

    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}

/* --------------------------------------------------------- request ids */

void srv_request_id(char *out, const char *given, uint64_t seed, _Atomic uint64_t *counter) {
    size_t n = 0;
    int ok = given != NULL;
    for (; ok && given[n]; n++) ok = n < SRV_ID_MAX && given[n] > 0x20 && given[n] < 0x7F;
    if (ok && n > 0) {
        memcpy(out, given, n);
        out[n] = '\0';
        return;
    }
    unsigned long long c = (unsigned long long)atomic_fetch_add(counter, 1) + 1;
    snprintf(out, SRV_ID_MAX + 1, "hv-%016llx-%llu", (unsigned long long)seed, c);
}

uint64_t srv_request_id_seed(void) {
    uint64_t seed = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        if (read(fd, &seed, sizeof seed) != (ssize_t)sizeof seed) seed = 0;
        close(fd);
    }
    if (seed == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
    }
    return seed;
}

/* ---------------------------------------------------------- access log */

char *srv_access_line(const srv_access *a) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t sec = ts.tv_sec;
    struct tm tm;
    gmtime_r(&sec, &tm);
    char when[40];
    size_t k = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + k, sizeof when - k, ".%03dZ", (int)(ts.tv_nsec / 1000000));

    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "time", when) &&
             cJSON_AddStringToObject(o, "request_id", a->request_id ? a->request_id : "") &&
             cJSON_AddStringToObject(o, "method", a->method ? a->method : "") &&
             cJSON_AddStringToObject(o, "route", srv_route_name(a->route)) &&
             cJSON_AddStringToObject(o, "path", a->path ? a->path : "") &&
             (a->status ? cJSON_AddNumberToObject(o, "status", a->status) != NULL
                        : cJSON_AddNullToObject(o, "status") != NULL) &&
             (a->audio_s >= 0 ? cJSON_AddNumberToObject(o, "audio_seconds",
                                                        (double)to_us(a->audio_s) / 1e6) != NULL
                              : cJSON_AddNullToObject(o, "audio_seconds") != NULL) &&
             cJSON_AddNumberToObject(o, "duration", (double)to_us(a->duration_s) / 1e6) &&
             cJSON_AddStringToObject(o, "client", a->client ? a->client : "") &&
             (!a->error || cJSON_AddStringToObject(o, "error", a->error));
    char *line = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return line;
}
