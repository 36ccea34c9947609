/*
 * UTF-8 sequences and their repair (utf8.h), and the cleaning of model text
 * and file names (hv_utf8_clean, hviske.h).
 */
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

#include "hviske.h"

int hv_utf8_seq_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = *p;
    int len = c < 0x80                 ? 1
              : c >= 0xC2 && c <= 0xDF ? 2
              : c >= 0xE0 && c <= 0xEF ? 3
              : c >= 0xF0 && c <= 0xF4 ? 4
                                       : 0;
    int ok = len > 0 && len <= end - p;
    for (int i = 1; ok && i < len; i++) ok = (p[i] & 0xC0) == 0x80;
    if (ok && len == 3) /* no overlongs, no surrogates */
        ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] > 0x9F);
    if (ok && len == 4) /* no overlongs, nothing above U+10FFFF */
        ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] > 0x8F);
    return ok ? len : 0;
}

int hv_utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    int len = 1;
    while (p < end && (len = hv_utf8_seq_len(p, end)) > 0) p += len;
    return p == end;
}

char *hv_utf8_fix(const char *s, hv_utf8_bad bad) {
    size_t n = strlen(s);
    char *out = malloc((bad == HV_UTF8_ESCAPE ? 4 : 3) * n + 1), *w = out; /* \xHH or U+FFFD */
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        int len = hv_utf8_seq_len(p, end);
        if (len) {
            memcpy(w, p, (size_t)len);
            w += len;
            p += len;
        } else if (bad == HV_UTF8_ESCAPE) {
            static const char hex[] = "0123456789abcdef";
            *w++ = '\\';
            *w++ = 'x';
            *w++ = hex[*p >> 4];
            *w++ = hex[*p & 15];
            p++;
        } else {
            memcpy(w, "\xEF\xBF\xBD", 3);
            w += 3;
            p++;
        }
    }
    *w = '\0';
    return out;
}

char *hv_utf8_clean(const char *s) { return hv_utf8_fix(s, HV_UTF8_REPLACE); }
