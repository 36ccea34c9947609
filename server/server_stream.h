/*
 * hviske-server: streamed transcriptions (stream=true), as Server-Sent
 * Events in OpenAI's shape (docs/SERVER.md "Streaming").
 *
 * A stream is the queue between the worker that transcribes and the
 * connection that sends: the worker appends events (srv_stream_push) as
 * segments become final; libmicrohttpd's thread of the connection takes
 * them through the response of srv_stream_response (chunked transfer
 * encoding), waiting on a condition variable while there is nothing to
 * send, and writing an SSE comment (": keep-alive") after keepalive_s
 * seconds without an event, so that proxies keep the connection and a
 * client that went away is found by the failed write even between
 * segments. When libmicrohttpd is done with the response before the worker
 * ended the stream (the client closed the connection, a write failed, the
 * daemon stopped), srv_stream_gone turns 1: the worker's abort and segment
 * callbacks ask it and stop the transcription, so a closed connection does
 * not keep a worker busy.
 *
 * The stream is freed when both the worker (srv_stream_end) and the
 * response (libmicrohttpd's free callback) are done with it.
 */
#ifndef HV_SERVER_STREAM_H
#define HV_SERVER_STREAM_H

#include <stddef.h>

struct MHD_Response;
typedef struct srv_stream srv_stream;

/* A new stream, held by its worker; NULL when out of memory. */
srv_stream *srv_stream_new(double keepalive_s);

/* The response that sends the stream's events (Content-Type
 * text/event-stream, Cache-Control no-cache), holding the stream until
 * libmicrohttpd frees it; NULL when out of memory. */
struct MHD_Response *srv_stream_response(srv_stream *st);

/* Appends bytes to send; 0, or -1 when out of memory. */
int srv_stream_push(srv_stream *st, const char *data, size_t len);

/* 1 once the response was freed before the stream ended: no one reads. */
int srv_stream_gone(srv_stream *st);

/* The worker's last call: the response ends after the bytes pushed, and
 * the worker lets go of the stream. */
void srv_stream_end(srv_stream *st);

/* The events, each "data: JSON\n\n" (no "event:" line, as OpenAI sends
 * them); malloc'ed, length in *len, NULL when out of memory.
 * {"type":"transcript.text.delta","delta":TEXT} */
char *srv_sse_delta(const char *text, size_t *len);
/* {"type":"transcript.text.done","text":TEXT}, and "downloads":
 * DOWNLOADS when not NULL (taken) */
struct cJSON;
char *srv_sse_done(const char *text, struct cJSON *downloads, size_t *len);
/* {"type":"hviske.progress","done_s":D,"total_s":T}: the seconds of audio
 * done and in total (progress=true) */
char *srv_sse_progress(double done_s, double total_s, size_t *len);
/* {"type":"error","error":{"message","type","param","code"}}: OpenAI's
 * error object (param and code may be NULL: JSON null); the OpenAI
 * clients raise it as an API error. */
char *srv_sse_error(const char *message, const char *type, const char *param, const char *code,
                    size_t *len);

#endif /* HV_SERVER_STREAM_H */
