/* Numbers from text (hviske.h, "numbers from text"; number.h). */
#include "util/number.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

void hv_number_shown(char *out, size_t n, const char *s) {
    size_t w = 0;
    for (; s[w] && w < 64 && w + 1 < n; w++) out[w] = s[w] >= 0x20 && s[w] < 0x7F ? s[w] : '?';
    if (s[w] && w + 4 <= n) memcpy(out + w, "...", 3), w += 3;
    out[w] = '\0';
}

size_t hv_number_expect(int lo_open, double lo, double hi, char *buf, size_t n) {
    int w;
    if (isinf(lo))
        w = snprintf(buf, n, "a finite number <= %g", hi);
    else if (isinf(hi))
        w = snprintf(buf, n, "a finite number %s %g", lo_open ? ">" : ">=", lo);
    else if (lo_open)
        w = snprintf(buf, n, "a number > %g and <= %g", lo, hi);
    else
        w = snprintf(buf, n, "a number from %g to %g", lo, hi);
    return w < 0 ? 0 : (size_t)w;
}

/* The refusal: "invalid number 'TEXT' (expected WHAT)". */
static hv_status refuse(const char *s, const char *what, char *errbuf, size_t n) {
    char v[72];
    if (errbuf && n) {
        hv_number_shown(v, sizeof v, s);
        snprintf(errbuf, n, "invalid number '%s' (expected %s)", v, what);
    }
    return HV_ERR_INVALID_ARG;
}

hv_status hv_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *errbuf,
                       size_t errbuf_size) {
    uint64_t v = 0;
    int ok = *s != '\0';
    for (const char *p = s; ok && *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        ok = is_digit(*p) && v <= (UINT64_MAX - d) / 10;
        v = v * 10 + d;
    }
    if (ok && v >= lo && v <= hi) {
        *out = v;
        return HV_OK;
    }
    char what[80];
    snprintf(what, sizeof what, "an integer from %llu to %llu", (unsigned long long)lo,
             (unsigned long long)hi);
    return refuse(s, what, errbuf, errbuf_size);
}

/* 1 if s is written as hviske.h says; strtod and strtof would also take
 * spaces, '+', hex, "inf" and "nan", and stop at garbage. */
static int is_decimal(const char *s) {
    const char *p = s;
    if (*p == '-') p++;
    size_t digits = 0;
    for (; is_digit(*p); p++) digits++;
    if (*p == '.')
        for (p++; is_digit(*p); p++) digits++;
    if (digits == 0) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!is_digit(*p)) return 0;
        while (is_digit(*p)) p++;
    }
    return *p == '\0';
}

/* Whether v, read from s, is finite and in the range; the refusal if not. */
static hv_status in_range(const char *s, double v, int lo_open, double lo, double hi, char *errbuf,
                          size_t n) {
    if (errno != ERANGE && isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi) return HV_OK;
    char what[96];
    hv_number_expect(lo_open, lo, hi, what, sizeof what);
    return refuse(s, what, errbuf, n);
}

hv_status hv_parse_double(const char *s, int lo_open, double lo, double hi, double *out,
                          char *errbuf, size_t errbuf_size) {
    errno = 0;
    double v = is_decimal(s) ? strtod(s, NULL) : NAN;
    hv_status st = in_range(s, v, lo_open, lo, hi, errbuf, errbuf_size);
    if (st == HV_OK) *out = v;
    return st;
}

hv_status hv_parse_float(const char *s, int lo_open, double lo, double hi, float *out, char *errbuf,
                         size_t errbuf_size) {
    errno = 0;
    float v = is_decimal(s) ? strtof(s, NULL) : NAN; /* rounded once, not via a double */
    hv_status st = in_range(s, v, lo_open, lo, hi, errbuf, errbuf_size);
    if (st == HV_OK) *out = v;
    return st;
}
