/*
 * hviske-server: the web page at / (docs/SERVER.md "The web page").
 *
 * The page's files (web/: index.html, app.js, style.css, icon.svg) are
 * compiled into the program: cmake/embed.cmake turns them into byte
 * arrays at build time, so the server needs no files beside it. Every
 * answer carries a Content-Security-Policy that lets the page load
 * scripts, styles and images from its own origin only and talk to its
 * own origin only (the audio player also plays the blob: URL of the
 * file the page itself made), with no inline script or style.
 */
#ifndef HV_SERVER_WEB_H
#define HV_SERVER_WEB_H

#include <stddef.h>

/* One embedded file. */
typedef struct srv_web_asset {
    const char *path; /* "/app.js"; index.html also answers "/" */
    const char *type; /* its Content-Type */
    const unsigned char *data;
    size_t len;
} srv_web_asset;

/* Every file, ending with a NULL path (generated: cmake/embed.cmake). */
extern const srv_web_asset srv_web_assets[];

/* The file a GET of path asks for ("/" is "/index.html"), NULL for none.
 * The path (libmicrohttpd's, without the query) is matched exactly. */
const srv_web_asset *srv_web_find(const char *path);

/* Its answer, with Content-Type, Content-Security-Policy and the headers
 * that keep it from being framed or sniffed; NULL when out of memory. */
struct MHD_Response *srv_web_response(const srv_web_asset *a);

/* The Content-Security-Policy of every file. */
#define SRV_WEB_CSP                                                                                \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "                    \
    "media-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; "            \
    "frame-ancestors 'none'"

#endif /* HV_SERVER_WEB_H */
