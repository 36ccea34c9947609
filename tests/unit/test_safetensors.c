/* safetensors: f16/bf16 conversions (exhaustively), valid single and
 * sharded checkpoints read back exactly, and hostile files that must fail
 * cleanly with the right status and a message naming the file. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/half.h"
#include "model/safetensors.h"
#include "testlib.h"

static const char *tmp;

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ------------------------------------------------------ conversions */

static void check_f16(void) {
    CHECK(hv_f16_to_f32(0x3c00) == 1.0f);
    CHECK(hv_f16_to_f32(0xc000) == -2.0f);
    CHECK(hv_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(hv_f16_to_f32(0x0400) == ldexpf(1, -14)); /* smallest normal */
    CHECK(hv_f16_to_f32(0x0001) == ldexpf(1, -24)); /* smallest subnormal */
    CHECK(hv_f16_to_f32(0x03ff) == ldexpf(1023, -24));
    CHECK(hv_f16_to_f32(0x8001) == -ldexpf(1, -24));
    CHECK(hv_f16_to_f32(0x7c00) == INFINITY);
    CHECK(hv_f16_to_f32(0xfc00) == -INFINITY);
    CHECK(isnan(hv_f16_to_f32(0x7e00)) && isnan(hv_f16_to_f32(0xfc01)));
    CHECK(hv_f16_to_f32(0x8000) == 0.0f && signbit(hv_f16_to_f32(0x8000)));
    CHECK(hv_f16_to_f32(0x2e66) == 0.0999755859375f);

    CHECK(hv_f32_to_f16(1.0f) == 0x3c00);
    CHECK(hv_f32_to_f16(0.1f) == 0x2e66);
    CHECK(hv_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(hv_f32_to_f16(65520.0f) == 0x7c00); /* rounds to inf */
    CHECK(hv_f32_to_f16(1e10f) == 0x7c00 && hv_f32_to_f16(-1e10f) == 0xfc00);
    CHECK(hv_f32_to_f16(ldexpf(1, -25)) == 0x0000); /* tie to even 0 */
    CHECK(hv_f32_to_f16(ldexpf(3, -25)) == 0x0002); /* tie to even 2 */
    CHECK(hv_f32_to_f16(ldexpf(1, -26)) == 0x0000);
    CHECK(hv_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00);
    CHECK(hv_f32_to_f16(1.0f + ldexpf(3, -11)) == 0x3c02);
    CHECK(hv_f32_to_f16(-0.0f) == 0x8000);
    CHECK((hv_f32_to_f16(NAN) & 0x7fff) > 0x7c00);

    /* every finite value round-trips; every midpoint rounds to even */
    int bad_rt = 0, bad_mid = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00) continue;
        if (hv_f32_to_f16(hv_f16_to_f32((uint16_t)h)) != h) bad_rt++;
        if ((h & 0x7fff) == 0x7bff) continue;
        float mid = (hv_f16_to_f32((uint16_t)h) + hv_f16_to_f32((uint16_t)(h + 1))) / 2;
        uint16_t want = (uint16_t)((h & 1) ? h + 1 : h);
        if (hv_f32_to_f16(mid) != want) bad_mid++;
    }
    CHECK_MSG(bad_rt == 0, "%d f16 values do not round-trip", bad_rt);
    CHECK_MSG(bad_mid == 0, "%d f16 midpoints round wrong", bad_mid);
}

static void check_bf16(void) {
    CHECK(hv_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(hv_bf16_to_f32(0x3eab) == 0.333984375f);
    CHECK(hv_bf16_to_f32(0xc2f7) == -123.5f);
    CHECK(hv_bf16_to_f32(0x7f80) == INFINITY);
    CHECK(hv_bf16_to_f32(0x0001) == ldexpf(1, -133)); /* subnormal */
    CHECK(isnan(hv_bf16_to_f32(0x7fc0)));

    CHECK(hv_f32_to_bf16(1.0f / 3.0f) == 0x3eab);     /* rounds up */
    CHECK(hv_f32_to_bf16(u2f(0x3f808000)) == 0x3f80); /* tie: even down */
    CHECK(hv_f32_to_bf16(u2f(0x3f818000)) == 0x3f82); /* tie: even up */
    CHECK(hv_f32_to_bf16(u2f(0x3f808001)) == 0x3f81); /* above tie */
    CHECK(hv_f32_to_bf16(u2f(0x7f7fffff)) == 0x7f80); /* FLT_MAX -> inf */
    CHECK(hv_f32_to_bf16(-INFINITY) == 0xff80);
    uint16_t qn = hv_f32_to_bf16(u2f(0x7f800001)); /* NaN stays NaN */
    CHECK((qn & 0x7f80) == 0x7f80 && (qn & 0x7f));

    int bad_rt = 0, bad_mid = 0;
    for (uint32_t b = 0; b < 0x10000; b++) {
        if ((b & 0x7f80) == 0x7f80) continue;
        if (hv_f32_to_bf16(hv_bf16_to_f32((uint16_t)b)) != b) bad_rt++;
        if ((b & 0x7fff) == 0x7f7f) continue;
        float mid = u2f(f2u(hv_bf16_to_f32((uint16_t)b)) + 0x8000);
        uint16_t want = (uint16_t)((b & 1) ? b + 1 : b);
        if (hv_f32_to_bf16(mid) != want) bad_mid++;
    }
    CHECK_MSG(bad_rt == 0, "%d bf16 values do not round-trip", bad_rt);
    CHECK_MSG(bad_mid == 0, "%d bf16 midpoints round wrong", bad_mid);
}

/* ---------------------------------------------------------- writing */

/* Writes a safetensors file: length, header text, data bytes. */
static void write_st(const char *path, const char *header, const void *data, size_t n) {
    size_t h = strlen(header);
    uint8_t *buf = malloc(8 + h + n + 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    if (n) memcpy(buf + 8 + h, data, n);
    CHECK(hv_test_write_file(path, buf, 8 + h + n) == 0);
    free(buf);
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static const float A_VALS[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -65504.0f};
static const uint16_t B_BITS[4] = {0x3c00, 0x0001, 0x7c00, 0xc000};
static const float B_VALS[4] = {1.0f, 5.9604644775390625e-08f, INFINITY, -2.0f};
static const uint16_t C_BITS[4] = {0x3eab, 0xc2f7, 0x0001, 0x8000};

/* The valid test file: a F32 [2,3], b F16 [4], c BF16 [2,2], d I64 [1],
 * e U8 [0], z BOOL [3], plus metadata. The header has an odd length so
 * that the data is unaligned. Returns the number of data bytes. */
static size_t valid_file(const char *path) {
    uint8_t data[64] = {0};
    for (int i = 0; i < 6; i++) put32(data + 4 * i, f2u(A_VALS[i]));
    for (int i = 0; i < 4; i++) put16(data + 24 + 2 * i, B_BITS[i]);
    for (int i = 0; i < 4; i++) put16(data + 32 + 2 * i, C_BITS[i]);
    data[40] = 7;               /* d = 7 */
    data[48] = 1, data[50] = 1; /* z = [1, 0, 1] */
    write_st(path,
             "{\"__metadata__\": {\"format\": \"pt\"},"
             " \"z\": {\"dtype\": \"BOOL\", \"shape\": [3], \"data_offsets\": [48, 51]},"
             " \"a\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]},"
             " \"c\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [32, 40]},"
             " \"b\": {\"dtype\": \"F16\", \"shape\": [4], \"data_offsets\": [24, 32]},"
             " \"e\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [51, 51]},"
             " \"d\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [40, 48]}} ",
             data, 51);
    return 51;
}

static void check_valid(void) {
    const char *path = hv_test_path(tmp, "valid.safetensors");
    valid_file(path);
    hv_safetensors st;
    hv_error e = {0};
    hv_status s = hv_st_open_file(&st, path, &e);
    CHECK_MSG(s == HV_OK, "valid file: %s", e.msg);
    if (s) return;
    CHECK(st.n_files == 1 && st.n_tensors == 6);
    const char *names = "abcdez";
    for (int i = 0; i < st.n_tensors && i < 6; i++)
        CHECK(st.tensors[i].name[0] == names[i] && !st.tensors[i].name[1]);

    const hv_st_tensor *a = hv_st_find(&st, "a");
    CHECK(a && a->dtype == HV_DT_F32 && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3 &&
          a->numel == 6 && a->nbytes == 24);
    float out[6];
    CHECK(a && hv_st_to_f32(a, out, &e) == HV_OK && !memcmp(out, A_VALS, sizeof A_VALS));

    const hv_st_tensor *b = hv_st_find(&st, "b");
    CHECK(b && b->dtype == HV_DT_F16 && b->numel == 4 && b->nbytes == 8);
    CHECK(b && hv_st_to_f32(b, out, &e) == HV_OK && !memcmp(out, B_VALS, sizeof B_VALS));

    const hv_st_tensor *c = hv_st_find(&st, "c");
    CHECK(c && c->dtype == HV_DT_BF16 && c->ndim == 2 && c->numel == 4);
    CHECK(c && hv_st_to_f32(c, out, &e) == HV_OK && out[0] == 0.333984375f && out[1] == -123.5f &&
          out[2] == ldexpf(1, -133) && out[3] == 0.0f && signbit(out[3]));

    const hv_st_tensor *d = hv_st_find(&st, "d");
    CHECK(d && d->dtype == HV_DT_I64 && ((const uint8_t *)d->data)[0] == 7);
    CHECK(d && hv_st_to_f32(d, out, &e) == HV_ERR_UNSUPPORTED && strstr(e.msg, "I64"));
    const hv_st_tensor *z = hv_st_find(&st, "e");
    CHECK(z && z->numel == 0 && z->nbytes == 0 && z->dtype == HV_DT_U8);
    CHECK(hv_st_find(&st, "z") && hv_st_find(&st, "z")->dtype == HV_DT_BOOL);
    CHECK(hv_st_find(&st, "__metadata__") == NULL);
    CHECK(hv_st_find(&st, "aa") == NULL && hv_st_find(&st, "") == NULL);
    CHECK(hv_dtype_size(HV_DT_BF16) == 2 && hv_dtype_size(HV_DT_F64) == 8 &&
          !strcmp(hv_dtype_name(HV_DT_BOOL), "BOOL"));
    hv_st_close(&st);
    CHECK(st.n_tensors == 0 && st.files == NULL);
    hv_st_close(&st);

    /* an empty header object is a valid file without tensors */
    write_st(path, "{}", NULL, 0);
    s = hv_st_open_file(&st, path, &e);
    CHECK_MSG(s == HV_OK && st.n_tensors == 0, "empty file: %s", e.msg);
    hv_st_close(&st);
    unlink(path);
}

/* ---------------------------------------------------------- sharded */

/* A subdirectory of tmp; the name lives in its own buffer because
 * hv_test_path's buffers rotate. */
static const char *make_dir(const char *name) {
    static char dirs[4][512];
    static int next;
    char *d = dirs[next++ % 4];
    snprintf(d, sizeof dirs[0], "%s/%s", tmp, name);
    mkdir(d, 0700);
    return d;
}

static void write_shards(const char *dir) {
    float v[2] = {1.5f, -2.0f};
    uint8_t data[8];
    put32(data, f2u(v[0]));
    put32(data + 4, f2u(v[1]));
    write_st(hv_test_path(dir, "s1.safetensors"),
             "{\"x.weight\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
             " \"y\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
             data, 8);
    write_st(hv_test_path(dir, "s2.safetensors"),
             "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", data, 8);
}

static void write_index(const char *dir, const char *map) {
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"metadata\": {\"total_size\": 16}, \"weight_map\": {%s}}", map);
    CHECK(hv_test_write_file(hv_test_path(dir, "model.safetensors.index.json"), buf, strlen(buf)) ==
          0);
}

static const char *GOOD_MAP = "\"x.weight\": \"s1.safetensors\", \"w\": \"s2.safetensors\","
                              " \"y\": \"s1.safetensors\"";

static void check_sharded(void) {
    const char *dir = make_dir("sharded");
    write_shards(dir);
    write_index(dir, GOOD_MAP);
    /* a stray model.safetensors is ignored when the index exists */
    write_st(hv_test_path(dir, "model.safetensors"), "{", NULL, 0);
    hv_safetensors st;
    hv_error e = {0};
    hv_status s = hv_st_open_dir(&st, dir, &e);
    CHECK_MSG(s == HV_OK, "sharded: %s", e.msg);
    if (s) return;
    CHECK(st.n_files == 2 && st.n_tensors == 3);
    const hv_st_tensor *w = hv_st_find(&st, "w"), *x = hv_st_find(&st, "x.weight");
    const hv_st_tensor *y = hv_st_find(&st, "y");
    float out[2];
    CHECK(w && strstr(st.files[w->file].path, "s2.safetensors"));
    CHECK(x && strstr(st.files[x->file].path, "s1.safetensors"));
    CHECK(y && y->file == x->file);
    CHECK(w && hv_st_to_f32(w, out, &e) == HV_OK && out[0] == 1.5f && out[1] == -2.0f);
    CHECK(y && hv_st_to_f32(y, out, &e) == HV_OK && out[0] == -2.0f);
    hv_st_close(&st);

    /* without the index, model.safetensors is used */
    const char *single = make_dir("single");
    valid_file(hv_test_path(single, "model.safetensors"));
    s = hv_st_open_dir(&st, single, &e);
    CHECK_MSG(s == HV_OK && st.n_tensors == 6, "single dir: %s", e.msg);
    hv_st_close(&st);
}

/* ---------------------------------------------------------- hostile */

static void expect_fail(hv_status s, hv_safetensors *st, hv_error *e, hv_status want,
                        const char *file, const char *what, const char *label) {
    CHECK_MSG(s == want, "%s: status %d, want %d (%s)", label, s, want, e->msg);
    CHECK_MSG(strstr(e->msg, file), "%s: message does not name %s: %s", label, file, e->msg);
    CHECK_MSG(!what || strstr(e->msg, what), "%s: message lacks \"%s\": %s", label, what, e->msg);
    CHECK_MSG(st->n_tensors == 0 && st->n_files == 0 && !st->files && !st->tensors,
              "%s: not left empty", label);
}

typedef struct bad_header {
    const char *label, *header;
    size_t data_len;
    hv_status want;
    const char *what;
} bad_header;

#define ENT(name, dt, shape, offs)                                                                 \
    "\"" name "\": {\"dtype\": \"" dt "\", \"shape\": " shape ", \"data_offsets\": " offs "}"

static const bad_header BAD_HEADERS[] = {
    {"empty header", "", 0, HV_ERR_FORMAT, "JSON"},
    {"bad JSON", "{\"a\": ", 0, HV_ERR_FORMAT, "JSON"},
    {"array header", "[1, 2]", 0, HV_ERR_FORMAT, "JSON object"},
    {"string header", "\"x\"", 0, HV_ERR_FORMAT, "JSON object"},
    {"trailing junk", "{} x", 0, HV_ERR_FORMAT, "JSON"},
    {"entry not object", "{\"a\": 5}", 0, HV_ERR_FORMAT, "tensor a"},
    {"no dtype", "{\"a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, HV_ERR_FORMAT, "dtype"},
    {"no shape", "{\"a\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, HV_ERR_FORMAT,
     "shape"},
    {"no offsets", "{\"a\": {\"dtype\": \"F32\", \"shape\": [1]}}", 4, HV_ERR_FORMAT,
     "data_offsets"},
    {"unknown dtype", "{" ENT("a", "F128", "[1]", "[0, 16]") "}", 16, HV_ERR_FORMAT, "F128"},
    {"lowercase dtype", "{" ENT("a", "f32", "[1]", "[0, 4]") "}", 4, HV_ERR_FORMAT, "dtype"},
    {"fp8 dtype", "{" ENT("a", "F8_E4M3", "[1]", "[0, 1]") "}", 1, HV_ERR_UNSUPPORTED, "F8_E4M3"},
    {"dtype number",
     "{\"a\": {\"dtype\": 1, \"shape\": [1], "
     "\"data_offsets\": [0, 4]}}",
     4, HV_ERR_FORMAT, "dtype"},
    {"negative dim", "{" ENT("a", "F32", "[-1]", "[0, 4]") "}", 4, HV_ERR_FORMAT, "dimension"},
    {"fractional dim", "{" ENT("a", "F32", "[1.5]", "[0, 4]") "}", 4, HV_ERR_FORMAT, "dimension"},
    {"huge dim", "{" ENT("a", "F32", "[1e300]", "[0, 4]") "}", 4, HV_ERR_FORMAT, "dimension"},
    {"string dim", "{" ENT("a", "F32", "[\"1\"]", "[0, 4]") "}", 4, HV_ERR_FORMAT, "dimension"},
    {"nine dims", "{" ENT("a", "F32", "[1,1,1,1,1,1,1,1,1]", "[0, 4]") "}", 4, HV_ERR_FORMAT,
     "shape"},
    {"shape overflow", "{" ENT("a", "F32", "[1099511627776, 1099511627776]", "[0, 4]") "}", 4,
     HV_ERR_FORMAT, "overflow"},
    {"shape overflow 3", "{" ENT("a", "U8", "[4294967296, 4294967296, 0]", "[0, 0]") "}", 0,
     HV_ERR_FORMAT, "overflow"},
    {"byte length", "{" ENT("a", "F32", "[2]", "[0, 4]") "}", 8, HV_ERR_FORMAT, "bytes"},
    {"byte length bf16", "{" ENT("a", "BF16", "[3]", "[0, 8]") "}", 8, HV_ERR_FORMAT, "bytes"},
    {"past data", "{" ENT("a", "F32", "[2]", "[0, 8]") "}", 4, HV_ERR_FORMAT, "outside"},
    {"far past data", "{" ENT("a", "U8", "[1]", "[4294967296, 4294967297]") "}", 4, HV_ERR_FORMAT,
     "outside"},
    {"begin > end", "{" ENT("a", "F32", "[0]", "[8, 4]") "}", 8, HV_ERR_FORMAT, "outside"},
    {"negative offset", "{" ENT("a", "F32", "[1]", "[-4, 0]") "}", 8, HV_ERR_FORMAT,
     "data_offsets"},
    {"one offset", "{" ENT("a", "F32", "[1]", "[4]") "}", 8, HV_ERR_FORMAT, "data_offsets"},
    {"three offsets", "{" ENT("a", "F32", "[1]", "[0, 4, 8]") "}", 8, HV_ERR_FORMAT,
     "data_offsets"},
    {"string offsets", "{" ENT("a", "F32", "[1]", "[\"0\", \"4\"]") "}", 8, HV_ERR_FORMAT,
     "data_offsets"},
    {"overlap", "{" ENT("a", "F32", "[2]", "[0, 8]") ", " ENT("b", "F32", "[2]", "[4, 12]") "}", 12,
     HV_ERR_FORMAT, "overlap"},
    {"overlap inside",
     "{" ENT("a", "F32", "[4]", "[0, 16]") ", " ENT("e", "U8", "[0]", "[4, 4]") ", " ENT(
         "b", "F32", "[1]", "[8, 12]") "}",
     16, HV_ERR_FORMAT, "overlap"},
    {"same bytes", "{" ENT("a", "F32", "[1]", "[0, 4]") ", " ENT("b", "I32", "[1]", "[0, 4]") "}",
     4, HV_ERR_FORMAT, "overlap"},
    {"duplicate", "{" ENT("a", "F32", "[1]", "[0, 4]") ", " ENT("a", "F32", "[1]", "[4, 8]") "}", 8,
     HV_ERR_FORMAT, "duplicate"},
};

static void check_hostile_headers(void) {
    const char *path = hv_test_path(tmp, "bad.safetensors");
    uint8_t zeros[64] = {0};
    for (size_t i = 0; i < sizeof BAD_HEADERS / sizeof *BAD_HEADERS; i++) {
        const bad_header *b = &BAD_HEADERS[i];
        write_st(path, b->header, zeros, b->data_len);
        hv_safetensors st;
        hv_error e = {0};
        hv_status s = hv_st_open_file(&st, path, &e);
        expect_fail(s, &st, &e, b->want, path, b->what, b->label);
        if (!s) hv_st_close(&st);
    }
    unlink(path);
}

/* Broken framing: short files, header lengths, NUL bytes, non-files. */
static void check_hostile_files(void) {
    const char *path = hv_test_path(tmp, "raw.safetensors");
    hv_safetensors st;
    hv_error e = {0};
    uint8_t buf[32] = {0};

    for (size_t n = 0; n < 8; n++) {
        CHECK(hv_test_write_file(path, buf, n) == 0);
        expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_FORMAT, path, "too short",
                    "short file");
    }
    memset(buf, 0, sizeof buf);
    buf[5] = 1; /* 2^40 */
    CHECK(hv_test_write_file(path, buf, 16) == 0);
    expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_FORMAT, path, "absurd",
                "huge header length");
    memset(buf, 0xff, 8);
    CHECK(hv_test_write_file(path, buf, 16) == 0);
    expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_FORMAT, path, "absurd",
                "header length 2^64-1");
    memset(buf, 0, sizeof buf);
    buf[0] = 9; /* 9 bytes of header in a 16-byte file */
    memcpy(buf + 8, "{}      ", 8);
    CHECK(hv_test_write_file(path, buf, 16) == 0);
    expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_FORMAT, path, "past the end",
                "header past end");
    buf[0] = 8; /* a NUL inside the header */
    memcpy(buf + 8, "{}\0     ", 8);
    CHECK(hv_test_write_file(path, buf, 16) == 0);
    expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_FORMAT, path, "JSON",
                "NUL in header");

    unlink(path);
    expect_fail(hv_st_open_file(&st, path, &e), &st, &e, HV_ERR_IO, path, NULL, "missing file");
    expect_fail(hv_st_open_file(&st, tmp, &e), &st, &e, HV_ERR_IO, tmp, "regular", "directory");

    /* every truncation of the valid file fails cleanly or opens */
    const char *vpath = hv_test_path(tmp, "valid.safetensors");
    valid_file(vpath);
    size_t total = 0;
    uint8_t *whole = (uint8_t *)hv_test_read_file(vpath, &total);
    CHECK(whole != NULL);
    int opened = 0;
    for (size_t n = 0; n < total; n++) {
        CHECK(hv_test_write_file(path, whole, n) == 0);
        hv_status s = hv_st_open_file(&st, path, &e);
        if (s == HV_OK)
            opened++, hv_st_close(&st);
        else
            CHECK_MSG(strstr(e.msg, path), "truncation %zu: %s", n, e.msg);
    }
    CHECK_MSG(opened == 0, "%d truncated files opened", opened);

    /* random byte flips anywhere: never a crash, failures name the file */
    srand(12345);
    for (int iter = 0; iter < 3000; iter++) {
        uint8_t *m = malloc(total);
        memcpy(m, whole, total);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++)
            m[rand() % total] = (uint8_t)(rand() % 3 ? rand() : "{}[]\",:0-9e"[rand() % 12]);
        CHECK(hv_test_write_file(path, m, total) == 0);
        free(m);
        hv_status s = hv_st_open_file(&st, path, &e);
        if (s == HV_OK) {
            /* whatever opened must lie inside the mapping */
            for (int i = 0; i < st.n_tensors; i++) {
                const hv_st_tensor *t = &st.tensors[i];
                const uint8_t *base = st.files[0].map;
                CHECK((const uint8_t *)t->data >= base &&
                      (const uint8_t *)t->data + t->nbytes <= base + st.files[0].size);
            }
            hv_st_close(&st);
        } else if (!strstr(e.msg, path)) {
            CHECK_MSG(0, "flip %d: %s", iter, e.msg);
        }
    }
    free(whole);
    unlink(path);
    unlink(vpath);
}

static void check_hostile_index(void) {
    hv_safetensors st;
    hv_error e = {0};
    const char *dir = make_dir("badindex");
    char ipath[600];
    snprintf(ipath, sizeof ipath, "%s/model.safetensors.index.json", dir);
    write_shards(dir);

    static const struct {
        const char *label, *map;
        hv_status want;
        const char *what;
    } cases[] = {
        {"dot-dot", "\"w\": \"../s2.safetensors\"", HV_ERR_FORMAT, "file name"},
        {"dot-dot bare", "\"w\": \"..\"", HV_ERR_FORMAT, "file name"},
        {"slash", "\"w\": \"sub/s2.safetensors\"", HV_ERR_FORMAT, "file name"},
        {"absolute", "\"w\": \"/etc/passwd\"", HV_ERR_FORMAT, "file name"},
        {"empty name", "\"w\": \"\"", HV_ERR_FORMAT, "file name"},
        {"number", "\"w\": 3", HV_ERR_FORMAT, "file name"},
        {"missing shard", "\"w\": \"s3.safetensors\"", HV_ERR_IO, "s3.safetensors"},
        {"wrong shard", "\"w\": \"s1.safetensors\"", HV_ERR_FORMAT, "not in"},
        {"absent tensor", "\"q\": \"s1.safetensors\"", HV_ERR_FORMAT, "not in"},
        {"empty map", "", HV_ERR_FORMAT, "empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_index(dir, cases[i].map);
        expect_fail(hv_st_open_dir(&st, dir, &e), &st, &e, cases[i].want,
                    cases[i].want == HV_ERR_IO ? dir : ipath, cases[i].what, cases[i].label);
    }

    CHECK(hv_test_write_file(ipath, "{\"weight_map\": [", 16) == 0);
    expect_fail(hv_st_open_dir(&st, dir, &e), &st, &e, HV_ERR_FORMAT, ipath, "weight_map",
                "index not JSON");
    CHECK(hv_test_write_file(ipath, "{\"metadata\": {}}", 16) == 0);
    expect_fail(hv_st_open_dir(&st, dir, &e), &st, &e, HV_ERR_FORMAT, ipath, "weight_map",
                "no weight_map");

    /* a tensor in two shards */
    write_st(hv_test_path(dir, "s2.safetensors"),
             "{" ENT("w", "F32", "[1]", "[0, 4]") ", " ENT("y", "F32", "[1]", "[4, 8]") "}",
             "\0\0\0\0\0\0\0\0", 8);
    write_index(dir, GOOD_MAP);
    expect_fail(hv_st_open_dir(&st, dir, &e), &st, &e, HV_ERR_FORMAT, "s1.safetensors", "also in",
                "duplicate across shards");

    /* a broken shard names itself */
    write_st(hv_test_path(dir, "s2.safetensors"), "{\"w\": 1}", NULL, 0);
    expect_fail(hv_st_open_dir(&st, dir, &e), &st, &e, HV_ERR_FORMAT, "s2.safetensors", "tensor w",
                "broken shard");

    /* a directory with neither file */
    const char *empty = make_dir("empty");
    expect_fail(hv_st_open_dir(&st, empty, &e), &st, &e, HV_ERR_IO, empty, "model.safetensors",
                "empty dir");
}

/* Every fixture checkpoint opens and its float tensors convert. */
static void check_fixtures(void) {
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    char models[4096];
    DIR *d;
    if (!fx) return;
    snprintf(models, sizeof models, "%s/models", fx);
    if (!(d = opendir(models))) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        const char *dir = hv_test_path(models, de->d_name);
        if (access(hv_test_path(dir, "model.safetensors"), R_OK) &&
            access(hv_test_path(dir, "model.safetensors.index.json"), R_OK))
            continue;
        hv_safetensors st;
        hv_error e = {0};
        hv_status s = hv_st_open_dir(&st, dir, &e);
        CHECK_MSG(s == HV_OK, "fixture %s: %s", de->d_name, e.msg);
        if (s) continue;
        int bad = 0;
        for (int i = 0; i < st.n_tensors; i++) {
            const hv_st_tensor *t = &st.tensors[i];
            if (i && strcmp(st.tensors[i - 1].name, t->name) >= 0) bad++;
            if (hv_st_find(&st, t->name) != t) bad++;
            if (t->dtype > HV_DT_BF16) continue;
            float *buf = malloc((size_t)t->numel * sizeof *buf + 1);
            if (hv_st_to_f32(t, buf, &e) != HV_OK) bad++;
            free(buf);
        }
        CHECK_MSG(bad == 0, "fixture %s: %d bad tensors", de->d_name, bad);
        hv_st_close(&st);
    }
    closedir(d);
}

int main(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s", hv_test_tmpdir());
    tmp = dir;
    check_f16();
    check_bf16();
    check_valid();
    check_sharded();
    check_hostile_headers();
    check_hostile_files();
    check_hostile_index();
    check_fixtures();
    TEST_END(); /* hv_test_tmpdir's directory goes at exit */
}
