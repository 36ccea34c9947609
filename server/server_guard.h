/*
 * hviske-server: what a request's headers must satisfy before it is
 * routed (docs/SERVER.md "Security"): one framing of its body (RFC 9112
 * section 6), so that the server and a proxy in front of it cannot
 * disagree where a request ends; a Host that names this server, so that
 * a web page cannot reach a server on the user's own machine by a name
 * of its own pointed at 127.0.0.1 (DNS rebinding); an Origin that is the
 * page's own or one the server allows, so that other web pages cannot
 * use the API. A request that fails is refused (400, 501, 403) and the
 * connection is closed after the answer.
 */
#ifndef HV_SERVER_GUARD_H
#define HV_SERVER_GUARD_H

#include "server_form.h"
#include "server_options.h"

struct MHD_Connection;

/* Checks the framing headers of the request on c (version: its HTTP
 * version, "HTTP/1.1"): header names are tokens (no white space before
 * the colon), at most one Content-Length, never with Transfer-Encoding,
 * a Transfer-Encoding only in HTTP/1.1 and only "chunked", exactly one
 * Host in HTTP/1.1 and at most one in HTTP/1.0. 0, or -1 with *e set. */
int srv_guard_framing(struct MHD_Connection *c, const char *version, srv_error *e);

/* Checks the request's Host against the names the server answers to:
 * with --allow-host "*", or a --host that is not loopback and no
 * --allow-host, any; else IP addresses, localhost and names under
 * .localhost, the --host value and the --allow-host names (without
 * case; the port is not compared). No Host (HTTP/1.0) passes. 0, or -1
 * with *e set: 400 invalid_host for a malformed value, 403
 * host_not_allowed naming --allow-host. */
int srv_guard_host(struct MHD_Connection *c, const srv_options *o, srv_error *e);

/* What the request's Origin is to the API. */
typedef enum srv_origin {
    SRV_ORIGIN_NONE,   /* no Origin, or the page's own (its host:port is the Host) */
    SRV_ORIGIN_ALLOWED /* an --allow-origin: the answer gets CORS headers */
} srv_origin;

/* Checks the request's Origin: the page's own, an --allow-origin (exact,
 * without case), or any with --allow-origin "*". *origin gets the
 * header's value for an allowed one. Returns the kind, or -1 with *e set
 * (403 origin_not_allowed naming --allow-origin). */
int srv_guard_origin(struct MHD_Connection *c, const srv_options *o, const char **origin,
                     srv_error *e);

#endif /* HV_SERVER_GUARD_H */
