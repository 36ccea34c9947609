/* The UTF-8 sequence rule (src/util/utf8.h) and its two users: the
 * library's hv_utf8_clean (U+FFFD for each byte outside a valid sequence)
 * and JSON file names (hv_output_file_name: hv_utf8_valid, and
 * hv_utf8_fix's \xHH). The rule is checked against a decoder
 * written from RFC 3629 on every sequence of up to three bytes and on
 * every four-byte lead with every second byte. */
#include <stdlib.h>
#include <string.h>

#include "cue_options.h"
#include "testlib.h"
#include "util/utf8.h"

/* RFC 3629 by decoding: the sequence's code point must need exactly its
 * length, be no surrogate and be at most U+10FFFF. */
static int rfc_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    int len = c < 0x80             ? 1
              : (c & 0xE0) == 0xC0 ? 2
              : (c & 0xF0) == 0xE0 ? 3
              : (c & 0xF8) == 0xF0 ? 4
                                   : 0;
    if (!len || (size_t)len > n) return 0;
    unsigned long cp = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    static const unsigned long min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
    return len;
}

/* every sequence of n bytes whose first bytes are lead..lead_end: the
 * number of them where the rule and the decoder disagree */
static long disagreements(int n, int lead, int lead_end, int fixed_rest) {
    long bad = 0;
    unsigned char b[4] = {0, 0x80, 0x80, 0x80};
    long combos = 1L << (8 * (n - 1));
    if (fixed_rest) combos = 256; /* second byte only, the rest 0x80 */
    for (int c = lead; c <= lead_end; c++)
        for (long k = 0; k < combos; k++) {
            b[0] = (unsigned char)c;
            for (int i = 1; i < n; i++)
                b[i] = fixed_rest ? (i == 1 ? (unsigned char)k : 0x80)
                                  : (unsigned char)(k >> (8 * (i - 1)));
            if (hv_utf8_seq_len(b, b + n) != rfc_len(b, (size_t)n)) bad++;
        }
    return bad;
}

static void check_rule(void) {
    CHECK_MSG(disagreements(1, 0, 255, 0) == 0, "1-byte sequences disagree");
    CHECK_MSG(disagreements(2, 0, 255, 0) == 0, "2-byte sequences disagree");
    CHECK_MSG(disagreements(3, 0, 255, 0) == 0, "3-byte sequences disagree");
    CHECK_MSG(disagreements(4, 0xE0, 0xFF, 1) == 0, "4-byte sequences disagree");

    static const struct {
        const char *s;
        int len;
    } t[] = {
        {"A", 1},
        {"\x80", 0},             /* a lone continuation byte */
        {"\xC0\x80", 0},         /* overlong NUL */
        {"\xC2\x80", 2},         /* U+0080 */
        {"\xC2", 0},             /* cut short by the end */
        {"\xC2\x41", 0},         /* cut short by a non-continuation */
        {"\xE0\x9F\xBF", 0},     /* overlong U+07FF */
        {"\xE0\xA0\x80", 3},     /* U+0800 */
        {"\xED\x9F\xBF", 3},     /* U+D7FF */
        {"\xED\xA0\x80", 0},     /* surrogate U+D800 */
        {"\xEF\xBF\xBF", 3},     /* U+FFFF */
        {"\xF0\x8F\xBF\xBF", 0}, /* overlong U+FFFF */
        {"\xF0\x90\x80\x80", 4}, /* U+10000 */
        {"\xF4\x8F\xBF\xBF", 4}, /* U+10FFFF */
        {"\xF4\x90\x80\x80", 0}, /* U+110000 */
        {"\xF5\x80\x80\x80", 0}, /* no such lead */
        {"\xF0\x90\x80", 0},     /* cut short by the end */
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        const unsigned char *p = (const unsigned char *)t[i].s;
        int got = hv_utf8_seq_len(p, p + strlen(t[i].s));
        CHECK_MSG(got == t[i].len, "case %zu: length %d, want %d", i, got, t[i].len);
        /* the two users agree on what is valid */
        char *clean = hv_utf8_clean(t[i].s);
        int same = clean && strcmp(clean, t[i].s) == 0;
        CHECK_MSG(same == hv_utf8_valid(t[i].s), "case %zu: clean %d, valid %d", i, same,
                  hv_utf8_valid(t[i].s));
        free(clean);
    }
}

static void check_clean(void) {
    static const struct {
        const char *in, *out;
    } t[] = {
        {"", ""},
        {"h\xC3\xA6r", "h\xC3\xA6r"},
        {"a\xFF"
         "b",
         "a\xEF\xBF\xBD"
         "b"},
        {"\xE2\x82", "\xEF\xBF\xBD\xEF\xBF\xBD"}, /* each byte of a cut sequence */
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF0\x9F\x98\x80!", "\xF0\x9F\x98\x80!"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        char *c = hv_utf8_clean(t[i].in);
        CHECK_MSG(c && strcmp(c, t[i].out) == 0, "hv_utf8_clean case %zu: %s", i, c ? c : "NULL");
        free(c);
    }
}

static void check_escape(void) {
    static const struct {
        const char *in, *out;
        int valid;
    } t[] = {
        {"", "", 1},
        {"h\xC3\xA6r.wav", "h\xC3\xA6r.wav", 1},
        {"a\xFF"
         "b",
         "a\\xffb", 0},
        {"\xE2\x82.wav", "\\xe2\\x82.wav", 0},
        {"\xC0\x80", "\\xc0\\x80", 0},
        {"\xF0\x9F\x98\x80\xF4\x90\x80\x80", "\xF0\x9F\x98\x80\\xf4\\x90\\x80\\x80", 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        char *c = hv_utf8_fix(t[i].in, HV_UTF8_ESCAPE);
        CHECK_MSG(c && strcmp(c, t[i].out) == 0, "hvt_name_escape case %zu: %s", i, c ? c : "NULL");
        CHECK_MSG(hv_utf8_valid(t[i].in) == t[i].valid, "hv_utf8_valid case %zu", i);
        free(c);
    }
}

int main(void) {
    check_rule();
    check_clean();
    check_escape();
    TEST_END();
}
