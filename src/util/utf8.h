/* The UTF-8 sequence rule and the repair of strings by it, shared by the
 * library's hv_utf8_clean (which writes U+FFFD for each byte outside a
 * valid sequence) and JSON file names (hv_output_file_name, which
 * writes such a byte as \xHH).
 *
 * Self-contained (no other part of the library), so the programs, which
 * otherwise see only the public API, may use it too. */
#ifndef HV_UTF8_H
#define HV_UTF8_H

/* The length (1 to 4) of the valid UTF-8 sequence that begins at p, or 0
 * when the byte at p begins none: a continuation byte, an overlong form
 * (C0, C1, E0 80..9F, F0 80..8F), a surrogate (ED A0..BF), a code point
 * above U+10FFFF (F4 90.., F5..FF), or a sequence cut short by end or by a
 * byte that is not a continuation. p < end. */
int hv_utf8_seq_len(const unsigned char *p, const unsigned char *end);

/* 1 when s is valid UTF-8 throughout. */
int hv_utf8_valid(const char *s);

/* What hv_utf8_fix writes for a byte outside a valid sequence. */
typedef enum {
    HV_UTF8_REPLACE, /* U+FFFD (hv_utf8_clean) */
    HV_UTF8_ESCAPE   /* the four characters \xHH, lower-case hex (Python's
                        "backslashreplace"; file names in JSON) */
} hv_utf8_bad;

/* A malloc'ed copy of s with the valid sequences as they are and each other
 * byte written as `bad` says; NULL when out of memory. */
char *hv_utf8_fix(const char *s, hv_utf8_bad bad);

#endif
