/*
 * hviske-server: libmicrohttpd responses of a body and of an error, built
 * by the HTTP side (server_http.c) and by the workers (server_queue.c)
 * alike, so neither of them includes the other.
 */
#ifndef HV_SERVER_RESPONSE_H
#define HV_SERVER_RESPONSE_H

#include <stddef.h>

#include "server.h"

/* A response of body (malloc'ed; taken, also on failure) with its
 * Content-Type; NULL when body is NULL or out of memory. */
struct MHD_Response *srv_buffer_response(char *body, size_t len, const char *type);

/* The error response of e for req, with the headers its status calls for
 * (Retry-After, WWW-Authenticate, Allow, Connection: close); NULL when out
 * of memory. */
struct MHD_Response *srv_error_response(const request *req, const srv_error *e);

#endif /* HV_SERVER_RESPONSE_H */
