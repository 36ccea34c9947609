/* hviske-server: the checks of a request's headers before it is routed
 * (server_guard.h). */
#include "server_guard.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
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

/* ------------------------------------------------------------ Host */

/* A Host value (RFC 9110 7.2: uri-host [":" port]) split into its name
 * (brackets of an IPv6 address kept, one trailing dot dropped) and port
 * ("" for none). 0, or -1 when malformed. */
static int split_host(const char *v, char *name, size_t nn, const char **port) {
    const char *end;
    if (*v == '[') {
        end = strchr(v, ']');
        if (!end) return -1;
        end++;
    } else {
        end = v + strcspn(v, ":");
    }
    size_t len = (size_t)(end - v);
    if (len == 0 || len >= nn) return -1;
    memcpy(name, v, len);
    name[len] = '\0';
    if (len > 1 && name[len - 1] == '.') name[len - 1] = '\0';
    for (const char *p = name; *p; p++) /* RFC 3986 reg-name or IP-literal */
        if (!isalnum((unsigned char)*p) && !strchr("-._~%!$&'()*+,;=[]:", *p)) return -1;
    *port = *end == ':' ? end + 1 : end;
    if (*end && *end != ':') return -1;
    size_t pl = strlen(*port);
    if (*end == ':' && (pl == 0 || pl > 5 || strspn(*port, "0123456789") != pl)) return -1;
    return 0;
}

/* An IPv4 address, or an IPv6 one in brackets: no name to rebind. */
static int is_ip_literal(const char *name) {
    unsigned char buf[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, name, buf) == 1) return 1;
    size_t n = strlen(name);
    if (n < 3 || name[0] != '[' || name[n - 1] != ']' || n - 2 >= 64) return 0;
    char in[64];
    memcpy(in, name + 1, n - 2);
    in[n - 2] = '\0';
    return inet_pton(AF_INET6, in, buf) == 1;
}

/* localhost and names under .localhost (RFC 6761: browsers answer them
 * with loopback themselves, without asking DNS). */
static int is_localhost(const char *name) {
    size_t n = strlen(name);
    return strcasecmp(name, "localhost") == 0 ||
           (n > 10 && strcasecmp(name + n - 10, ".localhost") == 0);
}

static int listed(const srv_names *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->v[i], "*") == 0 || strcasecmp(l->v[i], name) == 0) return 1;
    return 0;
}

/* Whether the server listens on loopback only (--host 127.x.y.z, ::1,
 * localhost): then a request naming another host came by a name that
 * is not the server's. */
static int loopback_host(const char *host) {
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
    return is_localhost(host);
}

int srv_guard_host(struct MHD_Connection *c, const srv_options *o, srv_error *e) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!h) return 0; /* HTTP/1.0 without one: no browser sends that */
    char name[256], shown[44];
    const char *port;
    if (split_host(h, name, sizeof name, &port) != 0) {
        if (!*h) return 0; /* an empty Host: a target without authority */
        srv_shown(shown, sizeof shown, h, strlen(h));
        srv_error_set(e, 400, "invalid_host", NULL, "the Host header '%s' is malformed", shown);
        return -1;
    }
    if (listed(&o->allow_hosts, "*") || (!loopback_host(o->host) && o->allow_hosts.n == 0))
        return 0;
    if (is_ip_literal(name) || is_localhost(name) || strcasecmp(name, o->host) == 0 ||
        listed(&o->allow_hosts, name))
        return 0;
    srv_shown(shown, sizeof shown, name, strlen(name));
    srv_error_set(e, 403, "host_not_allowed", NULL,
                  "the Host '%s' is not a name this server answers to (localhost, IP "
                  "addresses, --host and --allow-host; start it with --allow-host %s to "
                  "answer it)",
                  shown, shown);
    return -1;
}

/* ---------------------------------------------------------- Origin */

/* The authority of an origin (scheme "://" authority) without its
 * scheme's default port, into out; 0, or -1 when it is not one. */
static int origin_authority(const char *origin, char *out, size_t n) {
    const char *sep = strstr(origin, "://");
    if (!sep || sep == origin) return -1;
    const char *a = sep + 3;
    size_t len = strlen(a);
    if (len == 0 || len >= n || strpbrk(a, "/?# ")) return -1;
    memcpy(out, a, len + 1);
    const char *dflt = (size_t)(sep - origin) == 4 && !strncasecmp(origin, "http", 4)    ? ":80"
                       : (size_t)(sep - origin) == 5 && !strncasecmp(origin, "https", 5) ? ":443"
                                                                                         : NULL;
    size_t dl = dflt ? strlen(dflt) : 0;
    if (dflt && len > dl && strcmp(out + len - dl, dflt) == 0) out[len - dl] = '\0';
    return 0;
}

int srv_guard_origin(struct MHD_Connection *c, const srv_options *o, const char **origin,
                     srv_error *e) {
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    *origin = NULL;
    if (!v) return SRV_ORIGIN_NONE; /* not a browser's request from a page */
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    char own[256], host[256];
    if (h && origin_authority(v, own, sizeof own) == 0) {
        /* the Host with the origin's default port dropped, as the origin */
        char with_scheme[300];
        const char *sep = strstr(v, "://");
        snprintf(with_scheme, sizeof with_scheme, "%.*s://%s", (int)(sep - v), v, h);
        if (origin_authority(with_scheme, host, sizeof host) == 0 && strcasecmp(own, host) == 0)
            return SRV_ORIGIN_NONE; /* the page's own */
    }
    if (listed(&o->allow_origins, v)) {
        *origin = v;
        return SRV_ORIGIN_ALLOWED;
    }
    char shown[64];
    srv_shown(shown, sizeof shown, v, strlen(v));
    srv_error_set(e, 403, "origin_not_allowed", NULL,
                  "requests from pages of '%s' are not allowed here (start the server with "
                  "--allow-origin %s to allow them)",
                  shown, shown);
    return -1;
}
