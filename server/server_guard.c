/* hviske-server: the checks of a request's headers before it is routed
 * (server_guard.h). */
#include "server_guard.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

/* What the framing headers of a request hold, as the iterator counts
 * them. */
typedef struct framing {
    int n_length, n_host, n_te;
    const char *bad_name; /* the first header name that is not a token */
    char te[256];         /* the Transfer-Encoding lines, joined by "," */
    int te_long;          /* they did not fit in te */
} framing;

/* RFC 9110 5.6.2: tchar. */
static int is_tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    framing *f = cls;
    (void)kind;
    const char *k = key ? key : "";
    int token = *k != '\0';
    for (const char *p = k; *p; p++) token = token && is_tchar((unsigned char)*p);
    if (!token && !f->bad_name) f->bad_name = k;
    if (strcasecmp(k, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) f->n_length++;
    if (strcasecmp(k, MHD_HTTP_HEADER_HOST) == 0) f->n_host++;
    if (strcasecmp(k, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        size_t used = strlen(f->te);
        int n = snprintf(f->te + used, sizeof f->te - used, "%s%s", f->n_te ? "," : "",
                         value ? value : "");
        if (n < 0 || (size_t)n >= sizeof f->te - used) f->te_long = 1;
        f->n_te++;
    }
    return MHD_YES;
}

/* The Transfer-Encoding list (RFC 9112 6.1, 7): chunked must be the last
 * coding and come once, and it is the only one this server decodes.
 * 0, or -1 with *e set. */
static int check_codings(const char *te, srv_error *e) {
    static const char WS[] = " \t";
    int n = 0, chunked_last = 0, n_chunked = 0;
    const char *other = NULL;
    size_t other_len = 0;
    for (const char *p = te; *p;) {
        size_t len = strcspn(p, ",");
        const char *c = p + strspn(p, WS);
        size_t k = strcspn(c, ",; \t");
        if (c < p + len && k > 0) { /* empty list elements do not count */
            n++;
            chunked_last = k == 7 && strncasecmp(c, "chunked", 7) == 0;
            n_chunked += chunked_last;
            if (!chunked_last && !other) {
                other = c;
                other_len = k;
            }
        }
        p += len + (p[len] == ',');
    }
    char name[44];
    if (n == 0 || !chunked_last || n_chunked > 1) {
        srv_shown(name, sizeof name, te, strlen(te));
        srv_error_set(e, 400, "invalid_framing", NULL,
                      "the request's Transfer-Encoding '%s' does not end in one chunked "
                      "coding: its body's length cannot be known (RFC 9112 section 6.3)",
                      name);
        return -1;
    }
    if (other) {
        srv_shown(name, sizeof name, other, other_len);
        srv_error_set(e, 501, "unsupported_transfer_coding", NULL,
                      "the transfer coding '%s' is not supported (only chunked)", name);
        return -1;
    }
    return 0;
}

int srv_guard_framing(struct MHD_Connection *c, const char *version, srv_error *e) {
    framing f;
    memset(&f, 0, sizeof f);
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &f);
    int http10 = version && strcmp(version, MHD_HTTP_VERSION_1_0) == 0;
    char name[44];
    if (f.bad_name) {
        srv_shown(name, sizeof name, f.bad_name, strlen(f.bad_name));
        srv_error_set(e, 400, "invalid_header", NULL,
                      "the header name '%s' is not a token (white space before the colon?)", name);
        return -1;
    }
    if (f.n_length > 1) {
        srv_error_set(e, 400, "invalid_framing", NULL,
                      "the request has %d Content-Length headers: its body's length is "
                      "ambiguous (RFC 9112 section 6.3)",
                      f.n_length);
        return -1;
    }
    if (f.n_te && f.n_length) {
        srv_error_set(e, 400, "invalid_framing", NULL,
                      "the request has both Content-Length and Transfer-Encoding: its body's "
                      "length is ambiguous (RFC 9112 section 6.1)");
        return -1;
    }
    if (f.n_te && http10) {
        srv_error_set(e, 400, "invalid_framing", NULL,
                      "an HTTP/1.0 request has a Transfer-Encoding: its framing is faulty "
                      "(RFC 9112 section 6.1)");
        return -1;
    }
    if (f.te_long) {
        srv_error_set(e, 400, "invalid_framing", NULL,
                      "the request's Transfer-Encoding is too long (chunked expected)");
        return -1;
    }
    if (f.n_te && check_codings(f.te, e) != 0) return -1;
    if (f.n_host > 1) {
        srv_error_set(e, 400, "invalid_host", NULL,
                      "the request has %d Host headers (one is required)", f.n_host);
        return -1;
    }
    if (f.n_host == 0 && !http10) {
        srv_error_set(e, 400, "invalid_host", NULL,
                      "the request has no Host header (HTTP/1.1 requires one)");
        return -1;
    }
    return 0;
}
