/* hviske-server: responses (server_response.h). */
#include "server_response.h"

#include <stdio.h>
#include <stdlib.h>

#include <microhttpd.h>

#include "server_format.h"

struct MHD_Response *srv_buffer_response(char *body, size_t len, const char *type) {
    if (!body) return NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    /* a browser must not take a body that echoes the request (a 404's
     * path) for HTML */
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    return r;
}

struct MHD_Response *srv_error_response(const request *req, const srv_error *e) {
    size_t len = 0;
    char *body =
        srv_format_error(e->message, e->type, e->param[0] ? e->param : NULL, e->code, &len);
    struct MHD_Response *r = srv_buffer_response(body, len, "application/json");
    if (!r) return NULL;
    if (e->status == MHD_HTTP_SERVICE_UNAVAILABLE) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", req->retry_after > 0 ? req->retry_after : 1);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, buf);
    }
    if (e->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (e->status == MHD_HTTP_METHOD_NOT_ALLOWED && req->allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, req->allow);
    if (req->close) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    return r;
}
