/*
 * hviske-server: the HTTP side, on libmicrohttpd (docs/SERVER.md
 * "Design"): each connection's thread reads a request, checks it, and
 * answers it itself or through the queue (server_queue.h).
 */
#ifndef HV_SERVER_HTTP_H
#define HV_SERVER_HTTP_H

#include <stddef.h>

#include "server.h"

/* A response of body (malloc'ed; taken, also on failure) with its
 * Content-Type; NULL when body is NULL or out of memory. */
struct MHD_Response *srv_buffer_response(char *body, size_t len, const char *type);

/* The error response of e for req, with the headers its status calls for
 * (Retry-After, WWW-Authenticate, Allow, Connection: close); NULL when out
 * of memory. */
struct MHD_Response *srv_error_response(const request *req, const srv_error *e);

#endif /* HV_SERVER_HTTP_H */
