/*
 * hviske-server: a multipart/form-data body (RFC 7578, on RFC 2046's
 * multipart syntax), parsed as its bytes stream in, into a srv_form
 * (server_form.h): the boundary from the request's Content-Type
 * (RFC 2045 parameters: a case-insensitive name, a value up to ';',
 * quoted or not), the delimiters, each part's headers (the
 * Content-Disposition that names it) and its data, handed over part by
 * part. Every limit holds as the bytes come: a part's headers at most
 * SRV_PART_HEAD_MAX bytes, the form's own limits on parts and fields.
 */
#ifndef HV_SERVER_MULTIPART_H
#define HV_SERVER_MULTIPART_H

#include <stddef.h>

#include "server_form.h"

enum {
    SRV_BOUNDARY_MAX = 70,   /* RFC 2046 5.1.1 */
    SRV_PART_HEAD_MAX = 8192 /* one part's header lines, in bytes */
};

/* The boundary parameter of a multipart Content-Type into out (at least
 * SRV_BOUNDARY_MAX + 1 bytes): 0, or -1 with *e set (400
 * invalid_multipart naming what is wrong: no boundary, one given twice,
 * a malformed parameter, a boundary that is empty, longer than 70
 * characters, ends in a space or holds a character RFC 2046 does not
 * allow). */
int srv_multipart_boundary(const char *content_type, char *out, srv_error *e);

typedef struct srv_multipart srv_multipart;

/* A parser of a body of the given Content-Type into form (which it does
 * not own); NULL with *e set when the boundary is wrong (as above) or out
 * of memory (500). */
srv_multipart *srv_multipart_new(const char *content_type, srv_form *form, srv_error *e);
void srv_multipart_free(srv_multipart *m);

/* The next size bytes of the body. 0, or -1 with form->err set (the
 * form's own refusals, or 400 invalid_multipart for a malformed body);
 * after an error nothing more is taken. */
int srv_multipart_feed(srv_multipart *m, const char *data, size_t size);

/* The body ended: 0 when its closing delimiter came (or the body was
 * empty: a form without fields), else -1 with form->err set (400:
 * truncated). */
int srv_multipart_finish(srv_multipart *m);

#endif /* HV_SERVER_MULTIPART_H */
