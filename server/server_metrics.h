/*
 * What hviske-server tells about itself: the Prometheus metrics of
 * GET /metrics, the request ids of X-Request-Id and the JSON access log.
 *
 * The counters are C11 atomics in a fixed layout: a zeroed srv_metrics is
 * ready to use, threads update it without a lock, and no request can add
 * a label value: routes are a fixed list plus "other", statuses the
 * codes 100..599 the server itself answers with.
 */
#ifndef HV_SERVER_METRICS_H
#define HV_SERVER_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The route label: the server's paths, and "other" for any other. */
typedef enum srv_route {
    SRV_ROUTE_TRANSCRIBE, /* /v1/audio/transcriptions */
    SRV_ROUTE_MODELS,     /* /v1/models */
    SRV_ROUTE_HEALTH,     /* /health */
    SRV_ROUTE_READY,      /* /ready */
    SRV_ROUTE_METRICS,    /* /metrics */
    SRV_ROUTE_INFERENCE,  /* /inference (whisper-server's) */
    SRV_ROUTE_OTHER,      /* anything else ("other") */
    SRV_N_ROUTES
} srv_route;

/* The route of a request's path (exact match; else SRV_ROUTE_OTHER). */
srv_route srv_route_of(const char *path);
/* Its label value: the path, or "other". */
const char *srv_route_name(srv_route r);

enum {
    SRV_STATUS_MIN = 100,
    SRV_N_STATUS = 500, /* 100..599 */
    SRV_N_BUCKETS = 16  /* request duration buckets, +Inf not counted */
};

typedef struct srv_metrics {
    /* hviske_http_requests_total{route,status}: requests answered */
    _Atomic uint64_t requests[SRV_N_ROUTES][SRV_N_STATUS];
    /* hviske_http_requests_unanswered_total{route}: ended without an
     * answer (client gone, timed out, connection dropped) */
    _Atomic uint64_t unanswered[SRV_N_ROUTES];
    /* hviske_http_request_duration_seconds{route}: headers to the end
     * of the request, answered or not; non-cumulative bucket counts */
    _Atomic uint64_t bucket[SRV_N_ROUTES][SRV_N_BUCKETS + 1];
    _Atomic uint64_t duration_us[SRV_N_ROUTES];
    _Atomic int64_t in_flight;      /* requests begun, not ended */
    _Atomic uint64_t audio_us;      /* audio transcribed (answered 200) */
    _Atomic uint64_t processing_us; /* the workers' time on requests */
    _Atomic uint64_t jobs;          /* requests the workers ran */
    double model_load_s;            /* set before the server starts */
} srv_metrics;

/* The server's state at a scrape, for the gauges. */
typedef struct srv_gauges {
    int workers;  /* worker threads */
    int running;  /* transcriptions running */
    int queued;   /* complete requests waiting for a worker */
    int capacity; /* running + waiting admitted at most (workers + queue) */
    unsigned open_connections;
    int draining; /* 1 after the first SIGTERM / SIGINT */
    int ready;    /* what /ready answers: 1 = 200 */
} srv_gauges;

/* A request begins (its headers are in). */
void srv_metrics_begin(srv_metrics *m);
/* A request ends after duration_s seconds: answered with status (0: not
 * answered). Counts it first, then lowers in_flight, so a scrape that
 * sees in_flight at N sees every other request's count. */
void srv_metrics_end(srv_metrics *m, srv_route r, unsigned status, double duration_s);
/* A worker ran a request for processing_s seconds; audio_s seconds of
 * audio were transcribed (0 when it failed). */
void srv_metrics_job(srv_metrics *m, double audio_s, double processing_s);

/* The Prometheus text exposition (format 0.0.4) of m and g, malloc'd
 * (*len its length); NULL when out of memory. in_flight is read before
 * the counters (see srv_metrics_end). */
char *srv_metrics_format(srv_metrics *m, const srv_gauges *g, const char *version, size_t *len);
/* Its Content-Type. */
#define SRV_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ------------------------------------------------------- request ids */

enum { SRV_ID_MAX = 128 };

/* A request's id, into out (SRV_ID_MAX + 1 bytes): the client's
 * X-Request-Id when it is 1..128 visible ASCII characters (0x21..0x7E),
 * else a new one, "hv-" then 16 hex digits unique to the process (from
 * seed) and a counter: unique among the process's requests, and across
 * processes with different seeds. */
void srv_request_id(char *out, const char *given, uint64_t seed, _Atomic uint64_t *counter);
/* A seed for srv_request_id: /dev/urandom, else the time and the pid. */
uint64_t srv_request_id_seed(void);

/* --------------------------------------------------------- access log */

/* The access log's status of an answer begun but cut off because the
 * connection broke (the client went away): nginx's 499. /metrics counts
 * such a request as unanswered. */
#define SRV_STATUS_CLIENT_CLOSED 499u

/* One request's line of the access log. */
typedef struct srv_access {
    const char *request_id;
    const char *method, *path; /* printable already */
    srv_route route;
    unsigned status;   /* 0: not answered */
    double audio_s;    /* < 0: no audio decoded */
    double duration_s; /* headers to the end */
    const char *client;
    const char *error; /* NULL, or why it ended unanswered */
} srv_access;

/* The JSON object of a's line, malloc'd, with no newline: {"time":
 * "2026-01-02T03:04:05.678Z","request_id":...,"method","route","path",
 * "status","audio_seconds","duration","client"[,"error"]}, every string
 * escaped. NULL when out of memory. */
char *srv_access_line(const srv_access *a);

#endif
