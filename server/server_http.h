/*
 * hviske-server: the HTTP side, on libmicrohttpd (docs/SERVER.md
 * "Design"): a thread per connection reads a request, routes it, checks
 * its headers (refusals are answered at once, the body unread), streams
 * a multipart body into the request's form, and answers it itself or
 * through the queue (server_queue.h). A reaper thread shuts down
 * connections that do not complete a request's headers in time; the
 * open connections are counted for the reserve beyond
 * --max-connections.
 */
#ifndef HV_SERVER_HTTP_H
#define HV_SERVER_HTTP_H

#include <stddef.h>

#include "server.h"

/* Starts libmicrohttpd on listen_fd (a listening socket, IPv6 when ipv6)
 * with s's options, and the reaper thread: s->mhd. 0, or -1 with a
 * message on standard error (srv_http_stop then undoes what began). */
int srv_http_start(server *s, int listen_fd, int ipv6);

/* Stops the reaper and the daemon, and frees what srv_http_start made.
 * The daemon closes the listening socket, unless it was quiesced. */
void srv_http_stop(server *s);

#endif /* HV_SERVER_HTTP_H */
