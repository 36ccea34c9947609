/* Numbers from text (number.h). */
#include "util/number.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

int hv_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (!*s) return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (!is_digit(*p)) return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* 1 if s is written as number.h says; strtod and strtof would also take
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

static int in_range(double v, int lo_open, double lo, double hi) {
    return (lo_open ? v > lo : v >= lo) && v <= hi;
}

int hv_parse_double(const char *s, int lo_open, double lo, double hi, double *out) {
    if (!is_decimal(s)) return -1;
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE || !isfinite(v) || !in_range(v, lo_open, lo, hi)) return -1;
    *out = v;
    return 0;
}

int hv_parse_float(const char *s, int lo_open, double lo, double hi, float *out) {
    if (!is_decimal(s)) return -1;
    errno = 0;
    float v = strtof(s, NULL); /* rounded once, not via a double */
    if (errno == ERANGE || !isfinite(v) || !in_range(v, lo_open, lo, hi)) return -1;
    *out = v;
    return 0;
}
