/*
 * hviske-server: what a request's headers must satisfy before it is
 * routed (docs/SERVER.md "Security"): one framing of its body (RFC 9112
 * section 6), so that the server and a proxy in front of it cannot
 * disagree where a request ends. A request that fails is refused with
 * 400 (501 for a transfer coding other than chunked) and the connection
 * is closed after the answer.
 */
#ifndef HV_SERVER_GUARD_H
#define HV_SERVER_GUARD_H

#include "server_form.h"

struct MHD_Connection;

/* Checks the framing headers of the request on c (version: its HTTP
 * version, "HTTP/1.1"): header names are tokens (no white space before
 * the colon), at most one Content-Length, never with Transfer-Encoding,
 * a Transfer-Encoding only in HTTP/1.1 and only "chunked", exactly one
 * Host in HTTP/1.1 and at most one in HTTP/1.0. 0, or -1 with *e set. */
int srv_guard_framing(struct MHD_Connection *c, const char *version, srv_error *e);

#endif /* HV_SERVER_GUARD_H */
