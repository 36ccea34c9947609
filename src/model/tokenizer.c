/* SentencePiece tokenizer.model without libsentencepiece or libprotobuf.
 *
 * The file is a serialized ModelProto. What matters to us:
 *   repeated SentencePiece pieces = 1;
 *   SentencePiece { string piece = 1; float score = 2; Type type = 3; }
 *   TrainerSpec trainer_spec = 2 { model_type = 3; treat_whitespace_as_suffix
 *     = 24; byte_fallback = 35 }
 *   NormalizerSpec normalizer_spec = 3 { bytes precompiled_charsmap = 2;
 *     add_dummy_prefix = 3; remove_extra_whitespaces = 4;
 *     escape_whitespaces = 5 }
 * Everything else is skipped by wire type. The file is hostile: every varint, length and wire type is checked
 * before it is used, and every piece must be valid, NUL-free UTF-8.
 *
 * Decoding follows sentencepiece's SentencePieceProcessor::Decode for the
 * kept (normal and byte) pieces, including how it replaces invalid UTF-8
 * in runs of byte pieces with U+FFFD; tests/tokenizer/oracle.py checks
 * this against Debian's python3-sentencepiece. */
#include "model/tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

#define MAX_FILE        (64u << 20) /* real tokenizer.model files are < 1 MiB */
#define MAX_PIECES      (1 << 24)
#define MAX_GROUP_DEPTH 64

/* ------------------------------------------------------------ UTF-8 */

/* sentencepiece's DecodeUTF8: the length of the character at s (1..4) and
 * whether it is valid. An invalid start consumes one byte. Valid means
 * well-formed, not overlong, not a surrogate, at most U+10FFFF. */
int hv_sp_utf8_char(const uint8_t *s, size_t n, uint32_t *cp) {
    uint32_t c;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (n >= 2 && (s[0] & 0xe0) == 0xc0 && (s[1] & 0xc0) == 0x80) {
        c = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
        if (c >= 0x80) return *cp = c, 2;
    } else if (n >= 3 && (s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
        c = (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
        if (c >= 0x800 && (c < 0xd800 || c > 0xdfff)) return *cp = c, 3;
    } else if (n >= 4 && (s[0] & 0xf8) == 0xf0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80 &&
               (s[3] & 0xc0) == 0x80) {
        c = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 |
            (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
        if (c >= 0x10000 && c <= 0x10ffff) return *cp = c, 4;
    }
    *cp = 0xfffd;
    return -1;
}

static int utf8_valid(const uint8_t *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = hv_sp_utf8_char(s + i, n - i, &cp);
        if (k < 0 || cp == 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* Python's str.isspace(), which is what the reference's strip() trims. */
static int py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* ------------------------------------------------------- protobuf */

typedef struct reader {
    const uint8_t *base, *p, *end;
    const char *name;
    hv_error *e;
} reader;

static hv_status fail(reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static hv_status fail(reader *r, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return hv_err(r->e, HV_ERR_FORMAT, "%s: %s at byte %zu", r->name, what,
                  (size_t)(r->p - r->base));
}

static hv_status read_varint(reader *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) return fail(r, "truncated varint");
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) return fail(r, "varint too long");
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return HV_OK;
    }
    return fail(r, "varint too long");
}

static hv_status read_tag(reader *r, uint32_t *field, int *wire) {
    uint64_t v;
    hv_status st = read_varint(r, &v);
    if (st) return st;
    *field = (uint32_t)(v >> 3);
    *wire = (int)(v & 7);
    if (v >> 3 == 0 || v >> 3 > 0x1fffffff) return fail(r, "bad field number");
    return HV_OK;
}

/* Moves past n bytes, which must all be there. */
static hv_status advance(reader *r, uint64_t n, const char *what) {
    if (n > (uint64_t)(r->end - r->p))
        return fail(r, "%s of %llu bytes runs past the end", what, (unsigned long long)n);
    r->p += n;
    return HV_OK;
}

/* A length-delimited payload: *sub covers it and r moves past it. */
static hv_status read_bytes(reader *r, reader *sub) {
    uint64_t n;
    hv_status st = read_varint(r, &n);
    if (st) return st;
    *sub = *r;
    if ((st = advance(r, n, "field"))) return st;
    sub->end = r->p;
    return HV_OK;
}

/* Skips the payload of a field with this wire type; groups nest. */
static hv_status skip_field(reader *r, uint32_t field, int wire, int depth) {
    uint64_t v;
    reader sub;
    switch (wire) {
        case 0: return read_varint(r, &v);
        case 1: return advance(r, 8, "fixed64");
        case 2: return read_bytes(r, &sub);
        case 5: return advance(r, 4, "fixed32");
        case 3:
            if (depth >= MAX_GROUP_DEPTH) return fail(r, "groups nested too deep");
            for (;;) {
                uint32_t f;
                int w;
                hv_status st;
                if (r->p >= r->end) return fail(r, "unterminated group");
                if ((st = read_tag(r, &f, &w))) return st;
                if (w == 4) {
                    return f == field ? HV_OK : fail(r, "mismatched end of group");
                }
                if ((st = skip_field(r, f, w, depth + 1))) return st;
            }
        case 4: return fail(r, "end of group without a start");
        default: return fail(r, "invalid wire type %d", wire);
    }
}

/* --------------------------------------------------------- pieces */

/* "<0xNN>" with two upper-case hex digits, as sentencepiece writes them. */
static int byte_piece_value(const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    if (strlen(s) != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    const char *hi = memchr(hex, s[3], 16), *lo = memchr(hex, s[4], 16);
    if (!s[3] || !s[4] || !hi || !lo) return -1;
    return (int)((hi - hex) * 16 + (lo - hex));
}

/* Grows the piece arrays to hold at least one more piece. */
static int grow(hv_tokenizer *t, int *cap) {
    if (t->n_pieces < *cap) return 1;
    int nc = *cap ? *cap * 2 : 256;
    char **p = realloc(t->pieces, (size_t)nc * sizeof *p);
    if (p) t->pieces = p;
    float *s = realloc(t->scores, (size_t)nc * sizeof *s);
    if (s) t->scores = s;
    uint8_t *ty = realloc(t->types, (size_t)nc);
    if (ty) t->types = ty;
    uint8_t *bv = realloc(t->byte_value, (size_t)nc);
    if (bv) t->byte_value = bv;
    if (!p || !s || !ty || !bv) return 0;
    *cap = nc;
    return 1;
}

/* Parses one SentencePiece message (r covers exactly its bytes). */
static hv_status parse_piece(hv_tokenizer *t, reader *r) {
    int id = t->n_pieces;
    reader text = {0};
    float score = 0;
    uint64_t type = HV_PIECE_NORMAL;
    hv_status st;
    while (r->p < r->end) {
        uint32_t f;
        int w;
        if ((st = read_tag(r, &f, &w))) return st;
        if (f == 1 && w != 2) return fail(r, "piece %d: text is not a string", id);
        if (f == 2 && w != 5) return fail(r, "piece %d: score is not a float", id);
        if (f == 3 && w != 0) return fail(r, "piece %d: type is not an enum", id);
        if (f == 1) {
            if ((st = read_bytes(r, &text))) return st;
        } else if (f == 2) {
            uint32_t bits;
            if ((st = advance(r, 4, "score"))) return st;
            const uint8_t *b = r->p - 4; /* little-endian on the wire */
            bits = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&score, &bits, 4);
        } else if (f == 3) {
            if ((st = read_varint(r, &type))) return st;
        } else if ((st = skip_field(r, f, w, 0))) {
            return st;
        }
    }
    size_t len = text.base ? (size_t)(text.end - text.p) : 0;
    if (len == 0) return fail(r, "piece %d is empty", id);
    if (!utf8_valid(text.p, len)) return fail(r, "piece %d is not valid UTF-8 or contains NUL", id);
    if (type < HV_PIECE_NORMAL || type > HV_PIECE_BYTE)
        return fail(r, "piece %d has unknown type %llu", id, (unsigned long long)type);

    char *s = malloc(len + 1);
    if (!s) return hv_err(r->e, HV_ERR_NOMEM, "%s: out of memory", r->name);
    memcpy(s, text.p, len);
    s[len] = '\0';
    int bv = type == HV_PIECE_BYTE ? byte_piece_value(s) : 0;
    if (bv < 0) {
        hv_status bst = fail(r, "byte piece %d is \"%.16s\", not <0xNN>", id, s);
        free(s);
        return bst;
    }
    t->pieces[id] = s;
    t->scores[id] = score;
    t->types[id] = (uint8_t)type;
    t->byte_value[id] = (uint8_t)bv;
    t->n_pieces++;
    return HV_OK;
}

/* The character map's blob: <uint32 LE trie bytes><double array><strings>,
 * as sentencepiece's DecodePrecompiledCharsMap reads it. */
static hv_status parse_charsmap(hv_tokenizer *t, reader *r, const reader *blob) {
    size_t n = (size_t)(blob->end - blob->p);
    if (n == 0) return HV_OK; /* identity */
    const uint8_t *b = blob->p;
    uint32_t trie =
        n >= 4 ? (b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) : 0;
    if (n <= 4 || trie >= n - 4 || trie % 4 || trie == 0)
        return fail(r, "precompiled_charsmap is broken");
    t->n_norm_units = trie / 4;
    t->norm_text_len = (uint32_t)(n - 4 - trie);
    t->norm_trie = malloc(trie);
    t->norm_text = malloc(t->norm_text_len + 1);
    if (!t->norm_trie || !t->norm_text)
        return hv_err(r->e, HV_ERR_NOMEM, "%s: out of memory", r->name);
    for (uint32_t i = 0; i < t->n_norm_units; i++) {
        const uint8_t *u = b + 4 + 4 * (size_t)i;
        t->norm_trie[i] = u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
    }
    memcpy(t->norm_text, b + 4 + trie, t->norm_text_len);
    t->norm_text[t->norm_text_len] = '\0'; /* every replacement ends in a NUL */
    return HV_OK;
}

/* trainer_spec (field 2) or normalizer_spec (field 3): the fields that
 * encoding needs. */
static hv_status parse_spec(hv_tokenizer *t, reader *r, uint32_t which) {
    hv_status st;
    while (r->p < r->end) {
        uint32_t f;
        int w;
        uint64_t v = 0;
        reader blob;
        if ((st = read_tag(r, &f, &w))) return st;
        int flag = which == 2 ? f == 3 || f == 24 || f == 35 : f >= 3 && f <= 5;
        if (which == 3 && f == 2) {
            if (w != 2) return fail(r, "precompiled_charsmap is not bytes");
            if ((st = read_bytes(r, &blob))) return st;
            free(t->norm_trie);
            free(t->norm_text);
            t->norm_trie = NULL;
            t->norm_text = NULL;
            t->n_norm_units = t->norm_text_len = 0;
            if ((st = parse_charsmap(t, r, &blob))) return st;
        } else if (flag) {
            if (w != 0)
                return fail(r, "field %u of the %s is not a varint", f,
                            which == 2 ? "trainer_spec" : "normalizer_spec");
            if ((st = read_varint(r, &v))) return st;
            if (which == 2 && f == 3) t->model_type = v > 4 ? 0 : (int)v;
            if (which == 2 && f == 24) t->ws_suffix = v != 0;
            if (which == 2 && f == 35) t->byte_fallback = v != 0;
            if (which == 3 && f == 3) t->add_dummy_prefix = v != 0;
            if (which == 3 && f == 4) t->remove_extra_ws = v != 0;
            if (which == 3 && f == 5) t->escape_ws = v != 0;
        } else if ((st = skip_field(r, f, w, 0))) {
            return st;
        }
    }
    return HV_OK;
}

static uint32_t hash_mem(const char *s, size_t n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static uint32_t hash_str(const char *s) { return hash_mem(s, strlen(s)); }

/* Builds the piece -> id table; a piece seen twice is an error. */
static hv_status build_hash(hv_tokenizer *t, const char *name, hv_error *e) {
    uint32_t size = 16;
    while (size < 2u * (uint32_t)t->n_pieces) size *= 2;
    t->hash = malloc(size * sizeof *t->hash);
    if (!t->hash) return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", name);
    memset(t->hash, 0xff, size * sizeof *t->hash);
    t->hash_size = size;
    for (int id = 0; id < t->n_pieces; id++) {
        uint32_t i = hash_str(t->pieces[id]) & (size - 1);
        for (; t->hash[i] >= 0; i = (i + 1) & (size - 1))
            if (strcmp(t->pieces[t->hash[i]], t->pieces[id]) == 0)
                return hv_err(e, HV_ERR_FORMAT, "%s: duplicate piece \"%.64s\" (ids %d and %d)",
                              name, t->pieces[id], t->hash[i], id);
        t->hash[i] = id;
    }
    return HV_OK;
}

/* ----------------------------------------------------------- public */

hv_status hv_tokenizer_parse(hv_tokenizer *t, const uint8_t *buf, size_t n, const char *name,
                             hv_error *e) {
    memset(t, 0, sizeof *t);
    if (!name) name = "tokenizer.model";
    reader r = {.base = buf, .p = buf, .end = buf + n, .name = name, .e = e};
    int cap = 0;
    hv_status st = HV_OK;
    t->model_type = HV_SP_UNIGRAM;
    t->add_dummy_prefix = t->remove_extra_ws = t->escape_ws = 1;
    if (!buf) r.p = r.end = r.base = (const uint8_t *)"";
    while (!st && r.p < r.end) {
        uint32_t f;
        int w;
        reader sub;
        if ((st = read_tag(&r, &f, &w))) break;
        if ((f == 2 || f == 3) && w == 2) {
            if (!(st = read_bytes(&r, &sub))) st = parse_spec(t, &sub, f);
        } else if (f != 1) {
            st = skip_field(&r, f, w, 0);
        } else if (w != 2) {
            st = fail(&r, "pieces field has wire type %d", w);
        } else if (t->n_pieces >= MAX_PIECES) {
            st = fail(&r, "more than %d pieces", MAX_PIECES);
        } else if (!grow(t, &cap)) {
            st = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", name);
        } else if (!(st = read_bytes(&r, &sub))) {
            st = parse_piece(t, &sub);
        }
    }
    if (!st && t->n_pieces == 0) st = hv_err(e, HV_ERR_FORMAT, "%s: no pieces", name);
    if (!st) st = build_hash(t, name, e);
    if (st) hv_tokenizer_free(t);
    return st;
}

hv_status hv_tokenizer_load(hv_tokenizer *t, const char *path, hv_error *e) {
    memset(t, 0, sizeof *t);
    char *buf;
    size_t len;
    hv_status st = hv_read_file(path, MAX_FILE, &buf, &len, e);
    if (!st) st = hv_tokenizer_parse(t, (const uint8_t *)buf, len, path, e);
    free(buf);
    return st;
}

hv_status hv_tokenizer_append(hv_tokenizer *t, const char *const *texts, const uint8_t *types,
                              int n, const char *name, hv_error *e) {
    int cap = t->n_pieces, n0 = t->n_pieces;
    for (int i = 0; i < n; i++) {
        int32_t id = hv_tokenizer_find(t, texts[i]);
        if (id >= 0)
            return hv_err(e, HV_ERR_FORMAT, "%s: token %d \"%.64s\" is already piece %d", name,
                          n0 + i, texts[i], id);
    }
    for (int i = 0; i < n; i++) {
        char *s = strdup(texts[i]);
        if (!s || !grow(t, &cap)) {
            free(s);
            return hv_err(e, HV_ERR_NOMEM, "%s: out of memory", name);
        }
        int id = t->n_pieces++;
        t->pieces[id] = s;
        t->scores[id] = 0;
        t->types[id] = types[i];
        t->byte_value[id] = 0;
    }
    free(t->hash);
    t->hash = NULL;
    /* two added tokens with the same text fail here */
    return build_hash(t, name, e);
}

void hv_tokenizer_free(hv_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->n_pieces; i++) free(t->pieces[i]);
    free(t->pieces);
    free(t->scores);
    free(t->types);
    free(t->byte_value);
    free(t->hash);
    free(t->norm_trie);
    free(t->norm_text);
    memset(t, 0, sizeof *t);
}

int32_t hv_tokenizer_find(const hv_tokenizer *t, const char *piece) {
    return piece ? hv_tokenizer_find_n(t, piece, strlen(piece)) : -1;
}

int32_t hv_tokenizer_find_n(const hv_tokenizer *t, const char *s, size_t n) {
    if (!t || !t->hash || !s) return -1;
    uint32_t mask = t->hash_size - 1;
    for (uint32_t i = hash_mem(s, n) & mask; t->hash[i] >= 0; i = (i + 1) & mask) {
        const char *p = t->pieces[t->hash[i]];
        if (strncmp(p, s, n) == 0 && p[n] == '\0') return t->hash[i];
    }
    return -1;
}

/* ----------------------------------------------------------- decode */

static int kept(const hv_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_pieces &&
           (t->types[id] == HV_PIECE_NORMAL || t->types[id] == HV_PIECE_BYTE);
}

/* Appends a run of raw bytes as UTF-8: each invalid byte becomes U+FFFD,
 * exactly as sentencepiece's ProcessBytePieces does. A <0x00> byte is
 * dropped, since the result is a C string. */
static size_t put_bytes(char *out, const uint8_t *b, size_t n) {
    size_t o = 0;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = hv_sp_utf8_char(b + i, n - i, &cp);
        if (k < 0) {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        } else {
            if (cp != 0) memcpy(out + o, b + i, (size_t)k), o += (size_t)k;
            i += (size_t)k;
        }
    }
    return o;
}

/* Appends a normal piece with every U+2581 turned into a space. */
static size_t put_piece(char *out, const char *s) {
    size_t o = 0;
    while (*s) {
        /* byte by byte: && stops at the NUL of a short piece */
        if ((uint8_t)s[0] == 0xe2 && (uint8_t)s[1] == 0x96 && (uint8_t)s[2] == 0x81) {
            out[o++] = ' ';
            s += 3;
        } else {
            out[o++] = *s++;
        }
    }
    return o;
}

/* Trims Python-whitespace from both ends of valid UTF-8 s[0..n), in place. */
static void trim(char *s, size_t n) {
    const uint8_t *u = (const uint8_t *)s;
    uint32_t cp;
    size_t a = 0, b = n;
    while (a < b) {
        int k = hv_sp_utf8_char(u + a, b - a, &cp);
        if (k < 0 || !py_space(cp)) break;
        a += (size_t)k;
    }
    while (b > a) {
        size_t c = b - 1;
        while (c > a && (u[c] & 0xc0) == 0x80) c--;
        int k = hv_sp_utf8_char(u + c, b - c, &cp);
        if (k < 0 || !py_space(cp)) break;
        b = c;
    }
    memmove(s, s + a, b - a);
    s[b - a] = '\0';
}

char *hv_tokenizer_decode(const hv_tokenizer *t, const int32_t *ids, int n) {
    if (!t || !ids || n < 0) n = 0;
    /* worst case: each byte piece turns into a 3-byte U+FFFD */
    size_t cap = 1, nbytes = 0;
    for (int i = 0; i < n; i++) {
        if (!kept(t, ids[i])) continue;
        if (t->types[ids[i]] == HV_PIECE_BYTE)
            cap += 3, nbytes++;
        else
            cap += strlen(t->pieces[ids[i]]);
    }
    char *out = malloc(cap);
    uint8_t *run = malloc(nbytes + 1);
    if (!out || !run) {
        free(out);
        free(run);
        return NULL;
    }
    size_t o = 0, nrun = 0;
    for (int i = 0; i < n; i++) {
        if (!kept(t, ids[i])) continue; /* dropped pieces do not break runs */
        if (t->types[ids[i]] == HV_PIECE_BYTE) {
            run[nrun++] = t->byte_value[ids[i]];
            continue;
        }
        o += put_bytes(out + o, run, nrun);
        nrun = 0;
        o += put_piece(out + o, t->pieces[ids[i]]);
    }
    o += put_bytes(out + o, run, nrun);
    free(run);
    trim(out, o);
    return out;
}

/* ----------------------------------------------------------- prompt */

hv_status hv_tokenizer_prompt(const hv_tokenizer *t, const hv_config *c, const char *language,
                              int punctuation, int diarize, int32_t *ids, int *n, hv_error *e) {
    *n = 0;
    if (!language) language = hv_config_default_language(c);
    if (hv_config_find_language(c, language) < 0) {
        char list[512] = "";
        size_t len = 0;
        for (int i = 0; i < c->n_languages && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    c->languages[i]);
        return hv_err(e, HV_ERR_INVALID_ARG, "language \"%.64s\" is not supported (supported: %s)",
                      language ? language : "(null)", list);
    }
    int start = c->decoder_start_token_id;
    if (start < 0 || start >= t->n_pieces)
        return hv_err(e, HV_ERR_FORMAT,
                      "decoder_start_token_id %d is outside the tokenizer's "
                      "%d pieces",
                      start, t->n_pieces);
    char lang[64];
    snprintf(lang, sizeof lang, "<|%s|>", language);
    const char *names[9] = {"<|startofcontext|>",
                            "<|startoftranscript|>",
                            "<|emo:undefined|>",
                            lang,
                            lang,
                            punctuation ? "<|pnc|>" : "<|nopnc|>",
                            "<|noitn|>",
                            diarize ? "<|timestamp|>" : "<|notimestamp|>",
                            diarize ? "<|diarize|>" : "<|nodiarize|>"};
    ids[0] = start;
    for (int i = 0; i < 9; i++) {
        int32_t id = hv_tokenizer_find(t, names[i]);
        if (id < 0) return hv_err(e, HV_ERR_FORMAT, "tokenizer has no piece \"%s\"", names[i]);
        ids[i + 1] = id;
    }
    *n = 10;
    return HV_OK;
}
