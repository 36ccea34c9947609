/*
 * hviske-server: the bounded queue of complete, validated requests and
 * the worker threads that decode and transcribe them (docs/SERVER.md
 * "Design"). A request is admitted when fewer than workers + --queue are
 * running or waiting, else refused at once with 503; its connection's
 * thread waits until a worker has built its whole answer. With
 * stream=true the worker answers as soon as the audio is decoded, with
 * the event stream it then fills (server_stream.h).
 */
#ifndef HV_SERVER_QUEUE_H
#define HV_SERVER_QUEUE_H

#include "server.h"

/* The longest audio a request with parameters tp may have, in seconds:
 * --max-audio-seconds, or the library's memory budget of one call
 * (tp->max_audio_bytes at the model's rate) where that allows less; then
 * *by_budget (if not NULL) is 1. */
double srv_max_audio_seconds(const server *s, const hv_transcribe_params *tp, int *by_budget);

/* Seconds a client should wait before retrying: the expected time until
 * a worker is free. Caller holds s->mu. */
int srv_retry_after_locked(const server *s);

/* Queues req (its form valid, its params filled) and waits until a worker
 * has answered it: returns 1 with req->resp and req->status set (the
 * connection's thread owns req again; the worker freed its form). Returns
 * 0 with req->err set (503) when the server is full or shutting down. */
int srv_queue_request(server *s, request *req);

/* A worker thread (arg: its worker): runs queued requests until s->stop
 * is set and the queue is empty. */
void *srv_worker_main(void *arg);

/* Answers every waiting request with 503 shutting_down (the second
 * shutdown signal); nothing is queued after it. */
void srv_cancel_waiting(server *s);

#endif /* HV_SERVER_QUEUE_H */
