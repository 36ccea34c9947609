/* hviske-server: the web page at / (server_web.h). */
#include "server_web.h"

#include <string.h>

#include <microhttpd.h>

const srv_web_asset *srv_web_find(const char *path) {
    if (!path) return NULL;
    if (strcmp(path, "/") == 0) path = "/index.html";
    for (const srv_web_asset *a = srv_web_assets; a->path; a++)
        if (strcmp(a->path, path) == 0) return a;
    return NULL;
}

struct MHD_Response *srv_web_response(const srv_web_asset *a) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r) return NULL;
    if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type) != MHD_YES ||
        MHD_add_response_header(r, "Content-Security-Policy", SRV_WEB_CSP) != MHD_YES ||
        MHD_add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES ||
        MHD_add_response_header(r, "X-Frame-Options", "DENY") != MHD_YES ||
        MHD_add_response_header(r, "Referrer-Policy", "no-referrer") != MHD_YES ||
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache") != MHD_YES) {
        MHD_destroy_response(r);
        return NULL;
    }
    return r;
}
