/*
 * hviske-server: multipart/form-data bodies (server_multipart.h).
 *
 * RFC 2046 5.1.1: the body is an optional preamble, then "--BOUNDARY",
 * then parts, each after a delimiter "\r\n--BOUNDARY" and transport
 * padding (spaces and tabs) and CRLF, then a closing delimiter
 * "\r\n--BOUNDARY--" and an epilogue. A part is its header lines, a blank
 * line, and its data. The delimiter is found by a Knuth-Morris-Pratt
 * automaton over the stream, so that a delimiter split across reads is
 * found and no byte is looked at twice; the bytes it holds back as a
 * possible delimiter are the pattern's own prefix, so they are handed to
 * the form from the pattern once they turn out to be data.
 */
#include "server_multipart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum state {
    PREAMBLE,    /* before the first delimiter: dropped */
    AFTER_DELIM, /* right after a delimiter: "--" or padding and CRLF */
    AFTER_DASH,  /* after one '-' */
    PADDING,     /* transport padding */
    PADDING_CR,  /* its CR */
    HEADERS,     /* a part's header lines */
    DATA,        /* a part's data */
    EPILOGUE,    /* after the closing delimiter: dropped */
    FAILED
};

struct srv_multipart {
    srv_form *form;
    char pat[SRV_BOUNDARY_MAX + 5];           /* "\r\n--" and the boundary */
    unsigned char fail[SRV_BOUNDARY_MAX + 5]; /* KMP: fail[i] = longest proper
                                                 border of pat[0..i] */
    size_t n;                                 /* the pattern's length */
    size_t matched;                           /* the pattern's prefix that the last bytes match */
    size_t virt;                              /* of those, the first bytes not in the body: the CRLF
                       taken to precede the body's first delimiter, and a
                       part's blank line, which is a delimiter's CRLF when
                       the part has no data */
    enum state state;
    char head[SRV_PART_HEAD_MAX + 1]; /* a part's header lines so far */
    size_t head_len;
    int empty; /* no byte of the body yet */
};

/* ------------------------------------------------------------ parameters */

/* RFC 9110 5.6.2: tchar. */
static int is_tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ows(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

/* The next parameter of a header value's list (RFC 9110 5.6.6, RFC 2045
 * 5.1: *( OWS ";" OWS [ name "=" value ] )) at *pp: its name, a token
 * (matched without case by the caller), and its value, a quoted-string
 * (unquoted into value) or, as RFC 7578's senders write it, anything up
 * to the next ';' without the white space around it. 1 for a parameter
 * (*pp after it), 0 at the end, -1 when malformed (*why says how). */
static int next_param(const char **pp, char *name, size_t nn, char *value, size_t vn,
                      const char **why) {
    const char *p = skip_ows(*pp);
    for (;;) {
        if (*p == '\0') return 0;
        if (*p != ';') {
            *why = "';' expected between parameters";
            return -1;
        }
        p = skip_ows(p + 1);
        if (*p != ';' && *p != '\0') break; /* empty parameters are allowed */
    }
    size_t k = 0;
    while (is_tchar((unsigned char)p[k])) k++;
    if (k == 0 || p[k] != '=') {
        *why = k ? "a parameter without '=' and a value" : "a parameter name is not a token";
        return -1;
    }
    if (k >= nn) {
        *why = "a parameter name is too long";
        return -1;
    }
    memcpy(name, p, k);
    name[k] = '\0';
    p += k + 1;
    size_t w = 0;
    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            if (*p == '\\' && p[1]) p++; /* a quoted-pair */
            unsigned char c = (unsigned char)*p;
            if (c == '\0' || (c < 0x20 && c != '\t') || c == 0x7F) {
                *why = c ? "a control character in a quoted value" : "an unterminated quoted value";
                return -1;
            }
            if (w + 1 >= vn) {
                *why = "a parameter value is too long";
                return -1;
            }
            value[w++] = (char)c;
        }
        p = skip_ows(p + 1);
        if (*p != ';' && *p != '\0') {
            *why = "text after a quoted value";
            return -1;
        }
    } else {
        size_t len = strcspn(p, ";");
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7F || p[i] == '"') {
                *why = "a control character or '\"' in an unquoted value";
                return -1;
            }
        if (len == 0 || len >= vn) {
            *why = len ? "a parameter value is too long" : "a parameter without a value";
            return -1;
        }
        memcpy(value, p, len);
        w = len;
        p += len;
    }
    value[w] = '\0';
    *pp = p;
    return 1;
}

/* RFC 2046 5.1.1: 1 to 70 bchars, the last not a space. */
static int valid_boundary(const char *b) {
    size_t n = strlen(b);
    if (n == 0 || n > SRV_BOUNDARY_MAX || b[n - 1] == ' ') return 0;
    for (const char *p = b; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && !strchr("'()+_,-./:=? ", c)) return 0;
    }
    return 1;
}

int srv_multipart_boundary(const char *content_type, char *out, srv_error *e) {
    /* the media type: a token "/" a token */
    const char *p = skip_ows(content_type ? content_type : "");
    while (is_tchar((unsigned char)*p) || *p == '/') p++;
    char name[32], value[256], at[44];
    const char *why = NULL;
    int found = 0, rc;
    while ((rc = next_param(&p, name, sizeof name, value, sizeof value, &why)) == 1) {
        if (strcasecmp(name, "boundary") != 0) continue;
        if (found++) {
            srv_error_set(e, 400, "invalid_multipart", NULL,
                          "the multipart/form-data Content-Type gives the boundary twice");
            return -1;
        }
        if (!valid_boundary(value)) {
            srv_shown(at, sizeof at, value, strlen(value));
            srv_error_set(e, 400, "invalid_multipart", NULL,
                          "the multipart boundary '%s' is malformed (RFC 2046: 1 to 70 "
                          "letters, digits, spaces and '()+_,-./:=?, not ending in a space)",
                          at);
            return -1;
        }
        memcpy(out, value, strlen(value) + 1);
    }
    if (rc < 0) {
        srv_shown(at, sizeof at, p, strlen(p));
        srv_error_set(e, 400, "invalid_multipart", NULL,
                      "the multipart/form-data Content-Type's parameters are malformed at "
                      "'%s': %s",
                      at, why);
        return -1;
    }
    if (!found) {
        srv_error_set(e, 400, "invalid_multipart", NULL,
                      "the multipart/form-data Content-Type has no boundary parameter");
        return -1;
    }
    return 0;
}

/* ----------------------------------------------------------------- parts */

static int bad(srv_multipart *m, const char *what) {
    if (!m->form->err.status)
        srv_error_set(&m->form->err, 400, "invalid_multipart", NULL,
                      "malformed multipart/form-data body: %s", what);
    m->state = FAILED;
    return -1;
}

/* The header lines of a part (head, each line ending in CRLF): its
 * Content-Disposition must be form-data with a name, which goes into
 * name (and its filename, if any, into file); a Content-Transfer-Encoding
 * other than the identity ones is refused (RFC 7578 4.7: senders do not
 * use it). 0, or -1 (bad). */
static int part_name(srv_multipart *m, char *name, size_t nn, char *file, size_t fn) {
    int have = 0, named = 0;
    char *line = m->head, *end = m->head + m->head_len;
    while (line < end) {
        char *eol = strstr(line, "\r\n");
        if (!eol || eol >= end) return bad(m, "a part's header line does not end in CRLF");
        *eol = '\0';
        if (strchr(line, '\r') || strchr(line, '\n') || (size_t)(eol - line) != strlen(line))
            return bad(m, "a part's header line holds a CR, LF or NUL of its own");
        if (*line == ' ' || *line == '\t') return bad(m, "a part's header line is folded");
        char *colon = strchr(line, ':');
        if (!colon || colon == line) return bad(m, "a part's header line has no name and ':'");
        for (char *q = line; q < colon; q++)
            if (!is_tchar((unsigned char)*q)) return bad(m, "a part's header name is not a token");
        *colon = '\0';
        const char *v = skip_ows(colon + 1);
        if (strcasecmp(line, "Content-Disposition") == 0) {
            if (have++) return bad(m, "a part has two Content-Disposition headers");
            size_t k = 0;
            while (is_tchar((unsigned char)v[k])) k++;
            if (k != 9 || strncasecmp(v, "form-data", 9) != 0)
                return bad(m, "a part's Content-Disposition is not form-data");
            const char *p = v + k, *why = NULL;
            char pname[32], value[128];
            int rc;
            while ((rc = next_param(&p, pname, sizeof pname, value, sizeof value, &why)) == 1) {
                if (strcasecmp(pname, "filename") == 0) snprintf(file, fn, "%s", value);
                if (strcasecmp(pname, "name") != 0) continue;
                if (named++) return bad(m, "a part's Content-Disposition names it twice");
                snprintf(name, nn, "%s", value);
            }
            if (rc < 0) return bad(m, why);
        } else if (strcasecmp(line, "Content-Transfer-Encoding") == 0) {
            size_t k = strcspn(v, " \t");
            if (!((k == 4 && (!strncasecmp(v, "7bit", 4) || !strncasecmp(v, "8bit", 4))) ||
                  (k == 6 && !strncasecmp(v, "binary", 6))) ||
                *skip_ows(v + k))
                return bad(m, "a part's Content-Transfer-Encoding is not 7bit, 8bit or binary");
        }
        line = eol + 2;
    }
    if (!have) return bad(m, "a part has no Content-Disposition header");
    if (!named) return bad(m, "a part's Content-Disposition has no name");
    return 0;
}

/* Takes header bytes of the current part; at the blank line, starts the
 * part in the form and its data. The bytes used. */
static size_t take_headers(srv_multipart *m, const char *d, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (m->head_len == SRV_PART_HEAD_MAX) {
            bad(m, "a part's headers are longer than 8192 bytes");
            return n;
        }
        char c = m->head[m->head_len++] = d[i++];
        size_t h = m->head_len;
        if (c != '\n' || h < 2 || m->head[h - 2] != '\r') continue;
        if (h != 2 && (h < 4 || memcmp(m->head + h - 4, "\r\n\r\n", 4) != 0)) continue;
        m->head_len = h - 2; /* the lines, without the blank line */
        m->head[m->head_len] = '\0';
        char name[128] = "", file[128] = "";
        if (part_name(m, name, sizeof name, file, sizeof file) != 0 ||
            srv_form_begin(m->form, name, file) != 0) {
            m->state = FAILED;
            return n;
        }
        m->state = DATA;
        m->matched = m->virt = 2; /* the blank line may be a delimiter's CRLF */
        return i;
    }
    return i;
}

/* Hands the current part cnt bytes of data held back as a delimiter's
 * prefix (the pattern's first cnt bytes), less those not in the body. */
static int release(srv_multipart *m, size_t cnt) {
    size_t skip = m->virt < cnt ? m->virt : cnt;
    m->virt -= skip;
    return cnt > skip ? srv_form_data(m->form, m->pat + skip, cnt - skip) : 0;
}

/* Scans preamble or data for the next delimiter; data goes to the form.
 * The bytes used (up to the delimiter's end, which starts AFTER_DELIM). */
static size_t scan(srv_multipart *m, const char *d, size_t n) {
    int keep = m->state == DATA;
    size_t run = 0, i = 0; /* d[run..i): data not yet handed over */
    while (i < n) {
        if (m->matched == 0) { /* a delimiter can only begin at a CR */
            const char *cr = memchr(d + i, '\r', n - i);
            if (!cr) {
                i = n;
                break;
            }
            i = (size_t)(cr - d);
        }
        if (keep && run < i && srv_form_data(m->form, d + run, i - run) != 0) return n;
        run = i;
        char c = d[i++];
        while (m->matched > 0 && c != m->pat[m->matched]) {
            size_t k = m->fail[m->matched - 1];
            if (keep && release(m, m->matched - k) != 0) return n;
            m->matched = k;
        }
        if (c == m->pat[m->matched]) {
            m->matched++;
            run = i; /* held back */
        }
        if (m->matched == m->n) {
            m->matched = m->virt = 0;
            m->state = AFTER_DELIM;
            return i;
        }
    }
    if (keep && run < n && srv_form_data(m->form, d + run, n - run) != 0) return n;
    return n;
}

srv_multipart *srv_multipart_new(const char *content_type, srv_form *form, srv_error *e) {
    char b[SRV_BOUNDARY_MAX + 1];
    if (srv_multipart_boundary(content_type, b, e) != 0) return NULL;
    srv_multipart *m = calloc(1, sizeof *m);
    if (!m) {
        srv_error_set(e, 500, NULL, NULL, "out of memory");
        return NULL;
    }
    m->form = form;
    size_t bn = strlen(b);
    memcpy(m->pat, "\r\n--", 4);
    memcpy(m->pat + 4, b, bn);
    m->n = bn + 4;
    size_t k = 0;
    for (size_t i = 1; i < m->n; i++) {
        while (k > 0 && m->pat[i] != m->pat[k]) k = m->fail[k - 1];
        if (m->pat[i] == m->pat[k]) k++;
        m->fail[i] = (unsigned char)k;
    }
    m->state = PREAMBLE;
    m->matched = m->virt = 2; /* the body may begin with "--BOUNDARY" */
    m->empty = 1;
    return m;
}

void srv_multipart_free(srv_multipart *m) { free(m); }

int srv_multipart_feed(srv_multipart *m, const char *data, size_t size) {
    size_t i = 0;
    if (size > 0) m->empty = 0;
    while (i < size && m->state != FAILED) {
        if (m->form->err.status) {
            m->state = FAILED;
            break;
        }
        char c = data[i];
        switch (m->state) {
            case PREAMBLE:
            case DATA: i += scan(m, data + i, size - i); break;
            case HEADERS: i += take_headers(m, data + i, size - i); break;
            case EPILOGUE: i = size; break;
            case AFTER_DELIM:
                i++;
                if (c == '-')
                    m->state = AFTER_DASH;
                else if (c == ' ' || c == '\t')
                    m->state = PADDING;
                else if (c == '\r')
                    m->state = PADDING_CR;
                else
                    bad(m, "a delimiter is followed by neither CRLF nor \"--\"");
                break;
            case AFTER_DASH:
                i++;
                if (c == '-')
                    m->state = EPILOGUE;
                else
                    bad(m, "a delimiter is followed by neither CRLF nor \"--\"");
                break;
            case PADDING:
                i++;
                if (c == '\r')
                    m->state = PADDING_CR;
                else if (c != ' ' && c != '\t')
                    bad(m, "a delimiter is followed by neither CRLF nor \"--\"");
                break;
            case PADDING_CR:
                i++;
                if (c != '\n') {
                    bad(m, "a delimiter's line does not end in CRLF");
                    break;
                }
                m->state = HEADERS;
                m->head_len = 0;
                break;
            case FAILED: break;
        }
    }
    if (m->form->err.status) m->state = FAILED;
    return m->state == FAILED ? -1 : 0;
}

int srv_multipart_finish(srv_multipart *m) {
    if (m->state == FAILED || m->form->err.status) return -1;
    /* no body at all is a form without fields (the form says what is
     * missing) */
    if (m->state != EPILOGUE && !m->empty)
        return bad(m, "it ends before its closing delimiter (truncated?)");
    return 0;
}
