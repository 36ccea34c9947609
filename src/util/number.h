/*
 * Numbers from text: the public parsers (hv_parse_u64, hv_parse_double,
 * hv_parse_float in hviske.h) and what the parameter table's messages
 * share with them.
 */
#ifndef HV_UTIL_NUMBER_H
#define HV_UTIL_NUMBER_H

#include <stddef.h>

#include "hviske.h"

/* s as a message shows it: printable ASCII, other bytes as '?', at most
 * 64 bytes and "..." (a value may come from the network). */
void hv_number_shown(char *out, size_t n, const char *s);

/* What a number range takes, as the refusals say it ("a number from 0 to
 * 1", "a number > 0 and <= 1", "a finite number >= 0"), into buf[n];
 * the length written (as snprintf). */
size_t hv_number_expect(int lo_open, double lo, double hi, char *buf, size_t n);

#endif
