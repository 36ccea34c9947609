/* tokenizer.model: hand-built protobufs (valid ones read back exactly,
 * hostile ones fail cleanly, truncations and byte flips never crash), and
 * decoding and prompt ids compared with python3-sentencepiece through
 * tests/tokenizer/oracle.py on the fixture tokenizers (or, without
 * fixtures, on one trained here with spm_train). */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "model/tokenizer.h"
#include "testlib.h"

static const char *tmp;

/* ------------------------------------------------- protobuf writer */

typedef struct pbuf {
    uint8_t *b;
    size_t n, cap;
} pbuf;

static void put(pbuf *p, const void *data, size_t n) {
    if (p->n + n > p->cap) {
        p->cap = (p->n + n) * 2 + 64;
        p->b = realloc(p->b, p->cap);
    }
    memcpy(p->b + p->n, data, n);
    p->n += n;
}

static void put_varint(pbuf *p, uint64_t v) {
    uint8_t b[10];
    int n = 0;
    do {
        b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(p, b, (size_t)n);
}

static void put_tag(pbuf *p, uint32_t field, int wire) {
    put_varint(p, (uint64_t)field << 3 | (uint64_t)wire);
}

static void put_len(pbuf *p, uint32_t field, const void *data, size_t n) {
    put_tag(p, field, 2);
    put_varint(p, n);
    put(p, data, n);
}

static void put_f32(pbuf *p, uint32_t field, float f) {
    uint8_t b[4];
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(u >> (8 * i));
    put_tag(p, field, 5);
    put(p, b, 4);
}

/* A SentencePiece message; type 0 leaves the field out (NORMAL). */
static void put_piece(pbuf *p, const char *text, size_t len, float score, uint64_t type) {
    pbuf sp = {0};
    put_len(&sp, 1, text, len);
    put_f32(&sp, 2, score);
    if (type) {
        put_tag(&sp, 3, 0);
        put_varint(&sp, type);
    }
    put_tag(&sp, 7, 0); /* an unknown field inside a piece */
    put_varint(&sp, 12345);
    put_len(p, 1, sp.b, sp.n);
    free(sp.b);
}

static void put_spiece(pbuf *p, const char *text, float score, uint64_t type) {
    put_piece(p, text, strlen(text), score, type);
}

/* ------------------------------------------------ the hand-built model */

enum {
    ID_UNK,
    ID_BOS,
    ID_EOS,
    ID_BYTE0,
    ID_WS = ID_BYTE0 + 256,
    ID_HEJ,
    ID_A,
    ID_AE,
    ID_EN,
    ID_DA,
    ID_SOC,
    ID_SOT,
    ID_EMO,
    ID_PNC,
    ID_NOPNC,
    ID_NOITN,
    ID_NOTS,
    ID_NODIA,
    ID_UNUSED,
    ID_WS2,
    N_PIECES
};

/* Every other kind of field, at the top level, around the pieces. */
static void put_noise(pbuf *p) {
    pbuf spec = {0};
    put_len(&spec, 1, "input.txt", 9);
    put_tag(&spec, 3, 0);
    put_varint(&spec, 16000);
    put_len(p, 2, spec.b, spec.n); /* trainer_spec */
    put_tag(p, 50, 0);
    put_varint(p, UINT64_MAX);
    put_tag(p, 51, 1);
    put(p, "12345678", 8);
    put_tag(p, 52, 5);
    put(p, "1234", 4);
    put_tag(p, 53, 3); /* a group holding a field and a nested group */
    put_tag(p, 1, 0);
    put_varint(p, 7);
    put_tag(p, 9, 3);
    put_len(p, 2, "xy", 2);
    put_tag(p, 9, 4);
    put_tag(p, 53, 4);
    free(spec.b);
}

static pbuf valid_model(void) {
    pbuf p = {0};
    put_noise(&p);
    put_spiece(&p, "<unk>", 0, HV_PIECE_UNKNOWN);
    put_spiece(&p, "<s>", 0, HV_PIECE_CONTROL);
    put_spiece(&p, "</s>", 0, HV_PIECE_CONTROL);
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        put_spiece(&p, name, 0, HV_PIECE_BYTE);
    }
    put_spiece(&p, "\xe2\x96\x81", -1.5f, 0);
    put_spiece(&p, "\xe2\x96\x81hej", -2.25f, HV_PIECE_NORMAL);
    put_spiece(&p, "a", -3, 0);
    put_spiece(&p, "\xc3\xa6", -4, 0);
    put_spiece(&p, "<|en|>", 0, HV_PIECE_USER_DEFINED);
    put_spiece(&p, "<|da|>", 0, HV_PIECE_USER_DEFINED);
    put_len(&p, 3, "\x0a\x08identity", 10); /* normalizer_spec between pieces */
    const char *specials[] = {
        "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", "<|pnc|>", "<|nopnc|>",
        "<|noitn|>",          "<|notimestamp|>",       "<|nodiarize|>"};
    for (int i = 0; i < 8; i++) put_spiece(&p, specials[i], 0, HV_PIECE_USER_DEFINED);
    put_spiece(&p, "unused", 0, HV_PIECE_UNUSED);
    put_spiece(&p, "\xe2\x96\x81\xe2\x96\x81", -9, 0);
    put_noise(&p);
    return p;
}

static hv_config test_config(void) {
    static char *langs[] = {"en", "da", "fr"};
    hv_config c;
    memset(&c, 0, sizeof c);
    c.languages = langs;
    c.n_languages = 3;
    c.vocab_size = N_PIECES;
    c.decoder_start_token_id = ID_WS;
    return c;
}

/* Decodes ids and compares with want. */
static void expect_decode(const hv_tokenizer *t, const int32_t *ids, int n, const char *want,
                          int line) {
    char *got = hv_tokenizer_decode(t, ids, n);
    CHECK_MSG(got && !strcmp(got, want),
              "line %d: decode gave \"%s\", want "
              "\"%s\"",
              line, got ? got : "(null)", want);
    free(got);
}

#define DECODE(want, ...)                                                                          \
    do {                                                                                           \
        const int32_t ids_[] = {__VA_ARGS__};                                                      \
        expect_decode(&t, ids_, (int)(sizeof ids_ / sizeof *ids_), want, __LINE__);                \
    } while (0)
#define B(x) (ID_BYTE0 + (x))

static void check_valid(void) {
    pbuf p = valid_model();
    hv_tokenizer t;
    hv_error e = {0};
    hv_status st = hv_tokenizer_parse(&t, p.b, p.n, "hand.model", &e);
    CHECK_MSG(st == HV_OK, "hand-built model: %s", e.msg);
    free(p.b);
    if (st) return;
    CHECK(t.n_pieces == N_PIECES);
    CHECK(!strcmp(t.pieces[ID_UNK], "<unk>") && t.types[ID_UNK] == HV_PIECE_UNKNOWN);
    CHECK(t.types[ID_BOS] == HV_PIECE_CONTROL);
    CHECK(t.types[B(0xab)] == HV_PIECE_BYTE && t.byte_value[B(0xab)] == 0xab);
    CHECK(!strcmp(t.pieces[B(0xab)], "<0xAB>"));
    CHECK(t.types[ID_WS] == HV_PIECE_NORMAL && t.scores[ID_WS] == -1.5f);
    CHECK(t.scores[ID_HEJ] == -2.25f && t.types[ID_EN] == HV_PIECE_USER_DEFINED);
    CHECK(t.types[ID_UNUSED] == HV_PIECE_UNUSED);
    CHECK(hv_tokenizer_find(&t, "\xe2\x96\x81hej") == ID_HEJ);
    CHECK(hv_tokenizer_find(&t, "<|nodiarize|>") == ID_NODIA);
    CHECK(hv_tokenizer_find(&t, "<0x00>") == B(0));
    CHECK(hv_tokenizer_find(&t, "hej") == -1);
    CHECK(hv_tokenizer_find(&t, "") == -1 && hv_tokenizer_find(&t, NULL) == -1);

    DECODE("hej hej", ID_HEJ, ID_HEJ);
    DECODE("a hej", ID_WS, ID_A, ID_HEJ, ID_WS2, ID_WS);
    DECODE("æa", ID_AE, ID_A);
    DECODE("æ", B(0xc3), B(0xa6));
    DECODE("æ", B(0xc3), ID_BOS, ID_EN, -7, N_PIECES, B(0xa6)); /* dropped */
    DECODE("\xef\xbf\xbd", B(0xc3));
    DECODE("\xef\xbf\xbd"
           "A",
           B(0xc3), B(0x41));
    DECODE("\xef\xbf\xbd"
           "a",
           B(0xc3), ID_A);
    DECODE("\xef\xbf\xbd\xef\xbf\xbd", B(0xe2), B(0x82)); /* cut */
    DECODE("€", B(0xe2), B(0x82), B(0xac));
    DECODE("\xef\xbf\xbd\xef\xbf\xbd", B(0xc0), B(0x80)); /* overlong */
    DECODE("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", B(0xed), B(0xa0), B(0x80));
    DECODE("\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", B(0xf4), B(0x90), B(0x80),
           B(0x80)); /* > U+10FFFF */
    DECODE("\xf0\x9f\x98\x80", B(0xf0), B(0x9f), B(0x98), B(0x80));
    DECODE("\xef\xbf\xbd", B(0xef), B(0xbf), B(0xbd)); /* real U+FFFD */
    DECODE("a", B(0x20), B(0xe3), B(0x80), B(0x80), ID_A, B(0xc2), B(0xa0), B(0x0a)); /* trims */
    DECODE("\xef\xbf\xbd", B(0x85));              /* a lone 0x85 is not U+0085 */
    DECODE("a b", ID_A, B(0x00), ID_WS, B(0x62)); /* NUL dropped */
    DECODE("", ID_WS, ID_WS2, ID_BOS, ID_EOS, ID_UNK, ID_UNUSED, ID_SOT);
    DECODE("", -1, INT32_MIN, INT32_MAX);
    char *s = hv_tokenizer_decode(&t, NULL, 5);
    CHECK(s && !*s);
    free(s);
    s = hv_tokenizer_decode(&t, (const int32_t[]){ID_A}, -1);
    CHECK(s && !*s);
    free(s);

    /* the prompt */
    hv_config c = test_config();
    int32_t ids[HV_PROMPT_MAX];
    int n = -1;
    st = hv_tokenizer_prompt(&t, &c, "da", 1, 0, ids, &n, &e);
    CHECK_MSG(st == HV_OK, "prompt: %s", e.msg);
    const int32_t want[] = {ID_WS, ID_SOC, ID_SOT,   ID_EMO,  ID_DA,
                            ID_DA, ID_PNC, ID_NOITN, ID_NOTS, ID_NODIA};
    CHECK(n == 10 && !memcmp(ids, want, sizeof want));
    st = hv_tokenizer_prompt(&t, &c, "en", 0, 0, ids, &n, &e);
    CHECK(st == HV_OK && n == 10 && ids[4] == ID_EN && ids[5] == ID_EN && ids[6] == ID_NOPNC);
    st = hv_tokenizer_prompt(&t, &c, NULL, 1, 0, ids, &n, &e); /* NULL: "da" */
    CHECK(st == HV_OK && ids[4] == ID_DA);
    st = hv_tokenizer_prompt(&t, &c, "sv", 1, 0, ids, &n, &e);
    CHECK(st == HV_ERR_INVALID_ARG && n == 0);
    CHECK_MSG(strstr(e.msg, "\"sv\"") && strstr(e.msg, "en, da, fr"), "%s", e.msg);
    st = hv_tokenizer_prompt(&t, &c, "fr", 1, 0, ids, &n, &e);
    CHECK(st == HV_ERR_FORMAT && strstr(e.msg, "<|fr|>"));
    /* diarize asks for <|timestamp|>, which this vocabulary lacks */
    st = hv_tokenizer_prompt(&t, &c, "da", 1, 1, ids, &n, &e);
    CHECK_MSG(st == HV_ERR_FORMAT && strstr(e.msg, "<|timestamp|>"), "%s", e.msg);
    c.decoder_start_token_id = N_PIECES;
    st = hv_tokenizer_prompt(&t, &c, "da", 1, 0, ids, &n, &e);
    CHECK(st == HV_ERR_FORMAT && strstr(e.msg, "decoder_start_token_id"));
    hv_tokenizer_free(&t);
    CHECK(t.pieces == NULL && t.n_pieces == 0);
    hv_tokenizer_free(&t);

    /* a model without the special pieces */
    p = (pbuf){0};
    put_spiece(&p, "a", 0, 0);
    CHECK(hv_tokenizer_parse(&t, p.b, p.n, "tiny.model", &e) == HV_OK);
    c = test_config();
    c.decoder_start_token_id = 0;
    st = hv_tokenizer_prompt(&t, &c, "en", 1, 0, ids, &n, &e);
    CHECK(st == HV_ERR_FORMAT && strstr(e.msg, "<|startofcontext|>"));
    hv_tokenizer_free(&t);
    free(p.b);
}

/* --------------------------------------------------------- hostile */

static void expect_bad(const pbuf *p, const char *what, const char *label) {
    hv_tokenizer t;
    hv_error e = {0};
    memset(&t, 0x55, sizeof t);
    hv_status st = hv_tokenizer_parse(&t, p->b, p->n, "bad.model", &e);
    CHECK_MSG(st == HV_ERR_FORMAT, "%s: status %d (%s)", label, st, e.msg);
    CHECK_MSG(strstr(e.msg, "bad.model") == e.msg, "%s: %s", label, e.msg);
    CHECK_MSG(strstr(e.msg, what), "%s: message lacks \"%s\": %s", label, what, e.msg);
    CHECK_MSG(t.pieces == NULL && t.n_pieces == 0 && t.hash == NULL, "%s: not left empty", label);
    if (st == HV_OK) hv_tokenizer_free(&t);
}

/* One piece message built from raw field bytes. */
static pbuf raw_piece(const void *fields, size_t n) {
    pbuf p = {0};
    put_spiece(&p, "ok", 0, 0);
    put_len(&p, 1, fields, n);
    return p;
}

static void check_hostile(void) {
    pbuf p = {0};
    expect_bad(&p, "no pieces", "empty");
    put_noise(&p);
    expect_bad(&p, "no pieces", "no pieces");
    free(p.b);

    static const struct {
        const char *label, *bytes;
        size_t n;
        const char *what;
    } raw[] = {
        {"truncated varint", "\x80", 1, "truncated varint"},
        {"truncated value", "\x10\x80\x80", 3, "truncated varint"},
        {"long varint", "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11, "too long"},
        {"eleven bytes", "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "too long"},
        {"field zero", "\x00\x01", 2, "field number"},
        {"length past end", "\x0a\x64\x0a\x01", 4, "past the end"},
        {"absurd length", "\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10, "past the end"},
        {"pieces as varint", "\x08\x01", 2, "wire type"},
        {"pieces as fixed32", "\x0d\x01\x02\x03\x04", 5, "wire type"},
        {"wire type 6", "\x16\x01", 2, "wire type 6"},
        {"wire type 7", "\x17", 1, "wire type 7"},
        {"fixed64 cut", "\x11\x01\x02\x03", 4, "fixed64"},
        {"fixed32 cut", "\x15\x01\x02", 3, "fixed32"},
        {"end group alone", "\x14", 1, "end of group"},
        {"open group", "\x13\x08\x01", 3, "unterminated group"},
        {"mismatched group", "\x13\x1c", 2, "mismatched"},
    };
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++) {
        pbuf q = {0};
        put_spiece(&q, "ok", 0, 0);
        put(&q, raw[i].bytes, raw[i].n);
        expect_bad(&q, raw[i].what, raw[i].label);
        free(q.b);
    }

    /* groups nested deeper than anyone writes */
    p = (pbuf){0};
    for (int i = 0; i < 200; i++) put_tag(&p, 2, 3);
    for (int i = 0; i < 200; i++) put_tag(&p, 2, 4);
    expect_bad(&p, "too deep", "deep groups");
    free(p.b);

    static const struct {
        const char *label, *bytes;
        size_t n;
        const char *what;
    } fields[] = {
        {"no text", "\x15\0\0\0\0", 5, "empty"},
        {"empty text", "\x0a\x00", 2, "empty"},
        {"text as varint", "\x08\x05", 2, "text"},
        {"score as varint", "\x0a\x01z\x10\x05", 5, "score"},
        {"score cut", "\x0a\x01z\x15\x01", 5, "score"},
        {"type as string", "\x0a\x01z\x1a\x01\x01", 6, "type"},
        {"type 0", "\x0a\x01z\x18\x00", 5, "type 0"},
        {"type 7", "\x0a\x01z\x18\x07", 5, "type 7"},
        {"type huge", "\x0a\x01z\x18\x80\x80\x80\x80\x80\x01", 10, "type"},
        {"bad UTF-8", "\x0a\x01\xc3", 3, "UTF-8"},
        {"overlong UTF-8", "\x0a\x02\xc0\xaf", 4, "UTF-8"},
        {"surrogate", "\x0a\x03\xed\xa0\x80", 5, "UTF-8"},
        {"NUL inside",
         "\x0a\x03"
         "a\0b",
         5, "NUL"},
        {"byte name", "\x0a\x01x\x18\x06", 5, "<0xNN>"},
        {"byte lowercase", "\x0a\x06<0xab>\x18\x06", 10, "<0xNN>"},
        {"byte bad hex", "\x0a\x06<0x0G>\x18\x06", 10, "<0xNN>"},
        {"byte long", "\x0a\x07<0x0AB>\x18\x06", 11, "<0xNN>"},
        {"piece field cut", "\x0a\x05z", 3, "past the end"},
        {"bad wire in piece", "\x0a\x01z\x27", 4, "wire type 7"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        pbuf q = raw_piece(fields[i].bytes, fields[i].n);
        expect_bad(&q, fields[i].what, fields[i].label);
        free(q.b);
    }

    p = (pbuf){0};
    put_spiece(&p, "a", 0, 0);
    put_spiece(&p, "b", 0, 0);
    put_spiece(&p, "a", 0, HV_PIECE_USER_DEFINED);
    expect_bad(&p, "duplicate piece \"a\" (ids 0 and 2)", "duplicate");
    free(p.b);

    /* every truncation of a valid model parses or fails, never crashes */
    pbuf v = valid_model();
    int ok = 0, bad = 0;
    for (size_t n = 0; n < v.n; n++) {
        hv_tokenizer t;
        hv_error e = {0};
        if (hv_tokenizer_parse(&t, v.b, n, "cut.model", &e) == HV_OK) {
            ok++;
            if (t.n_pieces > N_PIECES) bad++;
            hv_tokenizer_free(&t);
        } else if (!strstr(e.msg, "cut.model")) {
            bad++;
        }
    }
    CHECK_MSG(bad == 0 && ok > 0 && ok < (int)v.n / 4,
              "truncations: %d ok, "
              "%d bad of %zu",
              ok, bad, v.n);

    /* random byte flips and decoding of whatever parses */
    srand(4242);
    int parsed = 0;
    for (int iter = 0; iter < 4000; iter++) {
        uint8_t *m = malloc(v.n);
        memcpy(m, v.b, v.n);
        int flips = 1 + rand() % 3;
        for (int k = 0; k < flips; k++) m[rand() % v.n] = (uint8_t)rand();
        hv_tokenizer t;
        hv_error e = {0};
        if (hv_tokenizer_parse(&t, m, v.n, "flip.model", &e) == HV_OK) {
            int32_t ids[64];
            for (int i = 0; i < 64; i++) ids[i] = rand() % (t.n_pieces + 8) - 4;
            char *s = hv_tokenizer_decode(&t, ids, 64);
            CHECK(s != NULL);
            free(s);
            hv_tokenizer_free(&t);
            parsed++;
        }
        free(m);
    }
    CHECK(parsed > 0);
    free(v.b);

    /* files */
    hv_tokenizer t;
    hv_error e = {0};
    const char *path = hv_test_path(tmp, "tokenizer.model");
    CHECK(hv_tokenizer_load(&t, path, &e) == HV_ERR_IO && strstr(e.msg, path));
    CHECK(hv_tokenizer_load(&t, tmp, &e) == HV_ERR_IO && strstr(e.msg, tmp));
    CHECK(hv_test_write_file(path, "", 0) == 0);
    CHECK(truncate(path, 65 << 20) == 0);
    CHECK(hv_tokenizer_load(&t, path, &e) == HV_ERR_LIMIT && strstr(e.msg, path));
    CHECK(truncate(path, 0) == 0);
    CHECK(hv_tokenizer_load(&t, path, &e) == HV_ERR_FORMAT && strstr(e.msg, path) &&
          strstr(e.msg, "no pieces"));
    unlink(path);
}

/* ----------------------------------------------------------- oracle */

/* Runs the oracle in the given mode on model, feeding it `in`; returns
 * its output lines in a malloc'ed array (NULL if it failed). */
static char **oracle(const char *mode, const char *model, const char *in, int *n_lines) {
    const char *py = hv_test_env("HV_PYTHON", "/usr/bin/python3");
    const char *src = hv_test_env("HV_SOURCE_DIR", ".");
    char inpath[512], outpath[512], cmd[4096];
    snprintf(inpath, sizeof inpath, "%s/oracle.in", tmp);
    snprintf(outpath, sizeof outpath, "%s/oracle.out", tmp);
    CHECK(hv_test_write_file(inpath, in, strlen(in)) == 0);
    snprintf(cmd, sizeof cmd,
             "'%s' '%s/tests/tokenizer/oracle.py' %s '%s' "
             "< '%s' > '%s'",
             py, src, mode, model, inpath, outpath);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "oracle failed (%d): %s", rc, cmd);
    *n_lines = 0;
    FILE *f = fopen(outpath, "r");
    if (rc != 0 || !f) {
        if (f) fclose(f);
        return NULL;
    }
    char **lines = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[len - 1] = '\0';
        lines = realloc(lines, (size_t)(*n_lines + 1) * sizeof *lines);
        lines[(*n_lines)++] = strdup(line);
    }
    free(line);
    fclose(f);
    unlink(inpath);
    unlink(outpath);
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

static void hex(const char *s, char *out) {
    for (; *s; s++) out += sprintf(out, "%02x", (uint8_t)*s);
    *out = '\0';
}

/* Pieces, types and scores agree with sentencepiece. */
static void compare_pieces(const hv_tokenizer *t, const char *model) {
    int n;
    char **lines = oracle("pieces", model, "", &n);
    if (!lines) return;
    CHECK_MSG(n == t->n_pieces, "%s: %d pieces, oracle %d", model, t->n_pieces, n);
    int bad = 0;
    char want[4096], ph[2100];
    for (int i = 0; i < n && i < t->n_pieces; i++) {
        uint32_t bits;
        memcpy(&bits, &t->scores[i], 4);
        if (strlen(t->pieces[i]) > 1000) continue;
        hex(t->pieces[i], ph);
        snprintf(want, sizeof want, "%d %d %s %02x%02x%02x%02x", i, t->types[i], ph, bits & 0xff,
                 (bits >> 8) & 0xff, (bits >> 16) & 0xff, bits >> 24);
        if (strcmp(want, lines[i]) && bad++ < 5)
            CHECK_MSG(0, "%s: piece %s, oracle %s", model, want, lines[i]);
    }
    CHECK_MSG(bad == 0, "%s: %d pieces differ", model, bad);
    free_lines(lines, n);
}

/* Appends the UTF-8 encoding of cp to b (no validity checks: the test
 * wants invalid sequences too). */
static int utf8_encode(uint32_t cp, uint8_t *b) {
    if (cp < 0x80) return b[0] = (uint8_t)cp, 1;
    if (cp < 0x800) return b[0] = (uint8_t)(0xc0 | cp >> 6), b[1] = 0x80 | (cp & 0x3f), 2;
    if (cp < 0x10000)
        return b[0] = (uint8_t)(0xe0 | cp >> 12), b[1] = 0x80 | ((cp >> 6) & 0x3f),
               b[2] = 0x80 | (cp & 0x3f), 3;
    return b[0] = (uint8_t)(0xf0 | cp >> 18), b[1] = 0x80 | ((cp >> 12) & 0x3f),
           b[2] = 0x80 | ((cp >> 6) & 0x3f), b[3] = 0x80 | (cp & 0x3f), 4;
}

/* Random byte sequences a decoder can meet: valid characters, spaces,
 * stray continuation bytes, cut sequences, overlongs, surrogates. */
static int random_bytes(uint8_t *b) {
    static const uint32_t cps[] = {0x20, 0x09, 0x0a,   0xa0,   0x85,    0x3000,   0x2028, 0xe6,
                                   0xf8, 0xe5, 0x20ac, 0xfffd, 0x1f600, 0x10ffff, 0x41,   0x00};
    int r = rand() % 10;
    if (r < 4) return utf8_encode(cps[rand() % 16], b);
    if (r < 6) return utf8_encode((uint32_t)rand() % 0x110000, b);
    if (r == 6) return b[0] = (uint8_t)(0x80 + rand() % 128), 1;
    if (r == 7) { /* a character cut short */
        int n = utf8_encode(0x800 + (uint32_t)rand() % 0x10f7ff, b);
        return 1 + rand() % (n - 1);
    }
    if (r == 8) { /* overlong or surrogate */
        static const uint8_t o[][3] = {{0xc0, 0xaf, 0},    {0xc1, 0x80, 0},    {0xe0, 0x80, 0xaf},
                                       {0xed, 0xa0, 0x80}, {0xed, 0xbf, 0xbf}, {0xf4, 0x90, 0x80}};
        int k = rand() % 6;
        memcpy(b, o[k], 3);
        return o[k][2] ? 3 : 2;
    }
    return b[0] = (uint8_t)rand(), 1;
}

/* Random id sequences: normal pieces, runs of "▁", byte runs, control and
 * user-defined pieces, out-of-range ids. Written one per line to text. */
static int random_ids(const hv_tokenizer *t, const int32_t *byte_id, int has_bytes, int32_t ws,
                      int32_t *ids) {
    int n = 0, len = rand() % 24;
    while (n < len) {
        int r = rand() % 10;
        if (r < 3) {
            ids[n++] = rand() % t->n_pieces;
        } else if (r < 5 && ws >= 0) {
            for (int k = 1 + rand() % 3; k > 0; k--) ids[n++] = ws;
        } else if (r < 8 && has_bytes) {
            uint8_t b[8];
            int nb = random_bytes(b);
            for (int k = 0; k < nb; k++) ids[n++] = byte_id[b[k]];
        } else if (r == 8) {
            static const int32_t far[] = {-1, INT32_MIN, INT32_MAX};
            ids[n++] = rand() % 2 ? t->n_pieces + rand() % 3 : far[rand() % 3];
        } else {
            ids[n++] = rand() % 16; /* specials sit at low ids */
        }
    }
    return n;
}

static void compare_decode(const hv_tokenizer *t, const char *model) {
    enum { N_SEQ = 1500 };
    int32_t byte_id[256];
    int has_bytes = 1;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        byte_id[b] = hv_tokenizer_find(t, name);
        if (byte_id[b] < 0) has_bytes = 0;
    }
    int32_t ws = hv_tokenizer_find(t, "\xe2\x96\x81");
    int32_t(*seqs)[48] = malloc(N_SEQ * sizeof *seqs);
    int *lens = malloc(N_SEQ * sizeof *lens);
    char *text = malloc(N_SEQ * 48 * 12 + 1), *o = text;
    for (int i = 0; i < N_SEQ; i++) {
        lens[i] = random_ids(t, byte_id, has_bytes, ws, seqs[i]);
        for (int k = 0; k < lens[i]; k++) o += sprintf(o, "%s%d", k ? " " : "", seqs[i][k]);
        *o++ = '\n';
    }
    *o = '\0';
    int n;
    char **lines = oracle("decode", model, text, &n);
    CHECK_MSG(!lines || n == N_SEQ, "%s: oracle gave %d lines", model, n);
    int bad = 0;
    for (int i = 0; lines && i < n && i < N_SEQ; i++) {
        char *got = hv_tokenizer_decode(t, seqs[i], lens[i]);
        char *h = malloc(strlen(got) * 2 + 2);
        hex(got, h);
        if (!*h) strcpy(h, "-");
        if (strcmp(h, lines[i]) && bad++ < 5)
            CHECK_MSG(0, "%s: sequence %d: got %s, oracle %s", model, i, h, lines[i]);
        free(h);
        free(got);
    }
    CHECK_MSG(bad == 0, "%s: %d of %d decodes differ (byte pieces: %d)", model, bad, N_SEQ,
              has_bytes);
    free_lines(lines, n);
    free(seqs);
    free(lens);
    free(text);
}

/* The prompt ids are the ids sentencepiece gives the same pieces. */
static void compare_prompt(const hv_tokenizer *t, const hv_config *c, const char *model) {
    for (int li = 0; li < c->n_languages; li++) {
        for (int pnc = 0; pnc <= 1; pnc++) {
            int32_t ids[HV_PROMPT_MAX];
            int n;
            hv_error e = {0};
            const char *lang = c->languages[li];
            hv_status st = hv_tokenizer_prompt(t, c, lang, pnc, 0, ids, &n, &e);
            CHECK_MSG(st == HV_OK, "%s: prompt %s: %s", model, lang, e.msg);
            if (st) continue;
            char in[2048] = "", h[256], piece[64];
            const char *names[9] = {"<|startofcontext|>",
                                    "<|startoftranscript|>",
                                    "<|emo:undefined|>",
                                    piece,
                                    piece,
                                    pnc ? "<|pnc|>" : "<|nopnc|>",
                                    "<|noitn|>",
                                    "<|notimestamp|>",
                                    "<|nodiarize|>"};
            snprintf(piece, sizeof piece, "<|%s|>", lang);
            for (int i = 0; i < 9; i++) {
                hex(names[i], h);
                strcat(strcat(in, h), "\n");
            }
            int nl;
            char **lines = oracle("find", model, in, &nl);
            CHECK(n == 10 && ids[0] == c->decoder_start_token_id);
            for (int i = 0; lines && i < 9 && i < nl; i++)
                CHECK_MSG(ids[i + 1] == atoi(lines[i]),
                          "%s: %s is %d, "
                          "oracle %s",
                          model, names[i], ids[i + 1], lines[i]);
            free_lines(lines, nl);
        }
    }
    int32_t ids[HV_PROMPT_MAX];
    int n;
    hv_error e = {0};
    CHECK(hv_tokenizer_prompt(t, c, "xx-none", 1, 0, ids, &n, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "xx-none") && strstr(e.msg, c->languages[0]));
}

/* Encoding: ids equal to sentencepiece's encode on fixed strings (spaces,
 * normalisation, user-defined pieces, unknown characters) and on random
 * mixes of the model's own pieces and characters. */
static void compare_encode(const hv_tokenizer *t, const char *model) {
    static const char *fixed[] = {
        "Hej med dig",
        "  Søren   Kierkegaard  ",
        "K\xc3\xb8"
        "benhavn, \xc3\x86"
        "rø og Åbenrå!",
        "\xef\xac\x81 \xef\xbc\xa1\xef\xbc\xa2 \xe2\x91\xa0 x\xc2\xb2", /* ﬁ ＡＢ ① x² */
        "a\tb\nc\r\nd",
        "\xe3\x80\x80wide\xe3\x80\x80space",
        "<|da|>hej<|pnc|> <|en|>",
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80\xf0\x9f\x98\x81",
        "e\xcc\x81 caf\xc3\xa9",
        "x",
        " ",
        "\xe2\x96\x81",
        "\xe2\x96\x81\xe2\x96\x81"
        "a b",
        "Aarhus Aalborg Odense 2026 3.14",
        "\xc2\xa0nbsp\xc2\xa0",
        "\x01\x1f\x7f control"};
    enum { N_RANDOM = 300 };
    int n_fixed = (int)(sizeof fixed / sizeof *fixed), total = n_fixed + N_RANDOM;
    char **texts = calloc((size_t)total, sizeof *texts);
    static const char *chars[] = {" ",
                                  "  ",
                                  "a",
                                  "e",
                                  "\xc3\xb8",
                                  "\xc3\xa5",
                                  "\xc3\xa6",
                                  "\xe6\x97\xa5",
                                  "\xef\xac\x81",
                                  "\xef\xbc\xa1",
                                  "\t",
                                  "!",
                                  "1",
                                  "\xf0\x9f\x98\x80",
                                  "<|da|>",
                                  "\xe2\x96\x81"};
    int nc = (int)(sizeof chars / sizeof *chars);
    for (int i = 0; i < total; i++) {
        if (i < n_fixed) {
            texts[i] = strdup(fixed[i]);
            continue;
        }
        char *s = calloc(1, 512);
        for (int k = 0, n = 1 + rand() % 12; k < n; k++) {
            const char *add;
            int id = rand() % t->n_pieces;
            if (rand() % 3 && (t->types[id] == HV_PIECE_NORMAL))
                add = t->pieces[id];
            else
                add = chars[rand() % nc];
            if (strlen(s) + strlen(add) < 500) strcat(s, add);
        }
        texts[i] = s;
    }
    size_t cap = 1;
    for (int i = 0; i < total; i++) cap += strlen(texts[i]) * 2 + 1;
    char *in = malloc(cap), *o = in;
    for (int i = 0; i < total; i++) {
        hex(texts[i], o);
        o += strlen(o);
        *o++ = '\n';
    }
    *o = '\0';
    int n;
    char **lines = oracle("encode", model, in, &n);
    CHECK_MSG(!lines || n == total, "%s: oracle gave %d lines for %d", model, n, total);
    int bad = 0;
    for (int i = 0; lines && i < total && i < n; i++) {
        int32_t *ids;
        int m;
        hv_error e = {0};
        hv_status st = hv_tokenizer_encode(t, texts[i], &ids, &m, &e);
        CHECK_MSG(st == HV_OK, "%s: encode: %s", model, e.msg);
        char got[8192] = "";
        size_t g = 0;
        for (int k = 0; !st && k < m && g < sizeof got - 16; k++)
            g += (size_t)snprintf(got + g, sizeof got - g, "%s%d", k ? " " : "", ids[k]);
        if (!g) strcpy(got, "-");
        if (strcmp(got, lines[i]) && bad++ < 5)
            CHECK_MSG(0, "%s: encode \"%s\": got %s, oracle %s", model, texts[i], got, lines[i]);
        free(ids);
    }
    CHECK_MSG(bad == 0, "%s: %d of %d encodings differ", model, bad, total);
    for (int i = 0; i < total; i++) free(texts[i]);
    free(texts);
    free(in);
    free_lines(lines, n);
    /* text that is not UTF-8 is refused */
    int32_t *ids;
    int m;
    hv_error e = {0};
    CHECK(hv_tokenizer_encode(t, "ab\xc3", &ids, &m, &e) == HV_ERR_INVALID_ARG && !ids &&
          strstr(e.msg, "UTF-8"));
}

/* Every truncation at sampled points of a real file: no crash. */
static void truncate_real(const char *model) {
    size_t n = 0;
    uint8_t *buf = (uint8_t *)hv_test_read_file(model, &n);
    CHECK(buf != NULL);
    if (!buf) return;
    for (int i = 0; i < 300; i++) {
        size_t cut = i < 100 ? (size_t)i * n / 100 : (size_t)rand() % n;
        hv_tokenizer t;
        hv_error e = {0};
        if (hv_tokenizer_parse(&t, buf, cut, "cut", &e) == HV_OK) hv_tokenizer_free(&t);
    }
    free(buf);
}

static void check_model(const char *model, const hv_config *c) {
    hv_tokenizer t;
    hv_error e = {0};
    hv_status st = hv_tokenizer_load(&t, model, &e);
    CHECK_MSG(st == HV_OK, "%s: %s", model, e.msg);
    if (st) return;
    compare_pieces(&t, model);
    compare_decode(&t, model);
    compare_encode(&t, model);
    if (c) compare_prompt(&t, c, model);
    truncate_real(model);
    hv_tokenizer_free(&t);
}

/* Fixture tokenizers with their configs; returns how many there were. */
static int check_fixtures(void) {
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    char models[4096];
    DIR *d;
    int count = 0;
    if (!fx) return 0;
    snprintf(models, sizeof models, "%s/models", fx);
    if (!(d = opendir(models))) return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char dir[4400], model[4500];
        snprintf(dir, sizeof dir, "%s/%s", models, de->d_name);
        snprintf(model, sizeof model, "%s/tokenizer.model", dir);
        if (access(model, R_OK) != 0) continue;
        hv_config c;
        hv_error e = {0};
        int have_config = hv_config_load(&c, dir, &e) == HV_OK;
        CHECK_MSG(have_config, "%s: %s", dir, e.msg);
        check_model(model, have_config ? &c : NULL);
        if (have_config) hv_config_free(&c);
        count++;
    }
    closedir(d);
    return count;
}

/* Without fixtures: train a small byte-fallback model with spm_train. */
static void check_trained(void) {
    static const char *words[] = {"hej",
                                  "med",
                                  "dig",
                                  "jeg",
                                  "hedder",
                                  "og",
                                  "det",
                                  "er",
                                  "en",
                                  "god",
                                  "dag",
                                  "the",
                                  "quick",
                                  "brown",
                                  "fox",
                                  "k\xc3\xb8"
                                  "benhavn",
                                  "\xc3\xa6"
                                  "ble",
                                  "\xc3\xb8l",
                                  "\xc3\xa5"
                                  "rhus",
                                  "caf\xc3\xa9",
                                  "\xe6\x9d\xb1\xe4\xba\xac",
                                  "\xd0\xbf\xd1\x80\xd0\xb8"};
    char corpus[512], prefix[512], cmd[2048];
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", tmp);
    snprintf(prefix, sizeof prefix, "%s/spm", tmp);
    FILE *f = fopen(corpus, "w");
    srand(7);
    for (int i = 0; i < 2000; i++) {
        for (int k = 0, n = 3 + rand() % 8; k < n; k++)
            fprintf(f, "%s%s", k ? " " : "", words[rand() % (sizeof words / sizeof *words)]);
        fputc('\n', f);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "spm_train --input='%s' --model_prefix='%s' --vocab_size=360 "
             "--byte_fallback=true --character_coverage=0.99 "
             "--hard_vocab_limit=false --control_symbols='<pad>' "
             "--user_defined_symbols='<|startofcontext|>,<|startoftranscript|>,"
             "<|emo:undefined|>,<|en|>,<|da|>,<|pnc|>,<|nopnc|>,<|noitn|>,"
             "<|notimestamp|>,<|nodiarize|>' > /dev/null 2>&1",
             corpus, prefix);
    if (system(cmd) != 0) {
        printf("spm_train unavailable: oracle comparison skipped\n");
        return;
    }
    char model[600];
    snprintf(model, sizeof model, "%s.model", prefix);
    hv_tokenizer t;
    hv_error e = {0};
    hv_config c;
    memset(&c, 0, sizeof c);
    static char *langs[] = {"en", "da"};
    c.languages = langs;
    c.n_languages = 2;
    if (hv_tokenizer_load(&t, model, &e) == HV_OK) {
        c.decoder_start_token_id = hv_tokenizer_find(&t, "\xe2\x96\x81");
        if (c.decoder_start_token_id < 0) c.decoder_start_token_id = 0;
        hv_tokenizer_free(&t);
    }
    check_model(model, &c);
    unlink(corpus);
    unlink(model);
    snprintf(model, sizeof model, "%s.vocab", prefix);
    unlink(model);
}

int main(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s", hv_test_tmpdir());
    tmp = dir;
    check_valid();
    check_hostile();
    if (check_fixtures() == 0) check_trained();
    /* the demo model's tokenizer: BPE with the nmt_nfkc character map */
    char demo[600];
    snprintf(demo, sizeof demo, "%s/models/demo/tokenizer.model",
             hv_test_env("HV_SOURCE_DIR", "."));
    check_model(demo, NULL);
    TEST_END();
}
