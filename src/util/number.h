/*
 * Numbers from text, parsed whole and strictly, so that a value means one
 * thing or is refused: the rule of every parameter the library takes by
 * name (hv_params_set) and of every number on the programs' command lines
 * and form fields (tools/tool_util.h wraps these).
 *
 *   Integers: decimal digits only ("0".."9", at least one); no sign, no
 *   spaces, no "0x", no trailing characters; in [lo, hi], never clamped.
 *
 *   Floats: an optional '-', digits with an optional '.' and fraction
 *   (".5" and "5." too), an optional exponent ('e' or 'E', an optional
 *   sign, digits). No '+' in front, no spaces, no hex, "inf" or "nan". The
 *   value must be finite in the target type (a float: |v| <= FLT_MAX; a
 *   decimal that overflows or underflows a double is refused) and lie in
 *   [lo, hi], or (lo, hi] with lo_open.
 *
 * Self-contained (no other part of the library), so the programs link it
 * as they link util/out_file.c.
 */
#ifndef HV_UTIL_NUMBER_H
#define HV_UTIL_NUMBER_H

#include <stdint.h>

/* 0, or -1 (and *out left alone) when s is not such a number. */
int hv_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int hv_parse_double(const char *s, int lo_open, double lo, double hi, double *out);
/* The range is checked on the value rounded to a float ("1e-50" is not
 * above 0). */
int hv_parse_float(const char *s, int lo_open, double lo, double hi, float *out);

#endif
