/* A minimal test harness: CHECK records a failure and goes on; each test
 * program ends with TEST_END, which prints "N passed, M failed". */
#ifndef HV_TESTLIB_H
#define HV_TESTLIB_H

#include <stdint.h>
#include <stdio.h>

#include "hviske.h"

extern int hv_test_passed, hv_test_failed;

#define CHECK(cond) CHECK_MSG(cond, "%s", #cond)
#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            hv_test_passed++;                                                                      \
        } else {                                                                                   \
            hv_test_failed++;                                                                      \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Path helpers: env var value (or fallback) and a joined path in a static
 * rotating buffer. */
const char *hv_test_env(const char *name, const char *fallback);
const char *hv_test_path(const char *dir, const char *name);

/* Writes bytes to a file; returns 0 on success. */
int hv_test_write_file(const char *path, const void *data, size_t n);

/* A whole file, malloc'ed, with a NUL after its *n bytes; NULL on failure.
 * n may be NULL. */
char *hv_test_read_file(const char *path, size_t *n);

/* A whole file as a NUL-terminated malloc'ed string, NULL on failure. */
char *hv_test_read_text(const char *path);

/* n floats of uniform noise in [-0.5, 0.5), the same for the same seed;
 * malloc'ed (the caller frees). */
float *hv_test_noise(size_t n, unsigned seed);

/* A fresh empty temporary directory (static buffer), removed with what
 * it holds when the program exits. At most 8 per program. */
const char *hv_test_tmpdir(void);

/* The bundled demo model (2 threads), speech detector and example clip
 * (16 kHz mono) of the source tree ($HV_SOURCE_DIR), each checked, and a
 * context on the model (0 threads: the model's); what loaded is set (the
 * rest NULL). hv_test_demo_open returns 0 when all four are there;
 * hv_test_demo_free frees whatever is. */
typedef struct hv_test_demo {
    struct hv_model *model;
    struct hv_vad *vad;
    struct hv_context *ctx;
    float *clip;
    size_t n_clip;
} hv_test_demo;
int hv_test_demo_open(hv_test_demo *d);

/* A context of m with n_threads (hv_context_new), or NULL after a failed
 * CHECK naming its message. */
hv_context *hv_test_context(const hv_model *m, int n_threads);
void hv_test_demo_free(hv_test_demo *d);

/* For every model in the fixtures' manifest ($HV_FIXTURES/manifest.json)
 * and then the demo model (models/demo of $HV_SOURCE_DIR), loads it with
 * each of the n_types weight types in turn (a failed load is a failed
 * check) and calls fn(model, dir, type, user), then frees it. Returns how
 * many fixture models there were, -1 when the manifest cannot be read
 * (the demo model is still visited). */
int hv_test_each_model(const hv_weight_type *types, int n_types,
                       void (*fn)(hv_model *m, const char *dir, hv_weight_type type, void *user),
                       void *user);

/* The id of the piece `text` in t, appended on first use (a control
 * piece for "<|...|>", else a normal one): hand-written token streams.
 * Exits the program when the append fails. */
struct hv_tokenizer;
int hv_test_piece(struct hv_tokenizer *t, const char *text);

/* The ids (at most cap) of a diarize stream written as space-separated
 * words: "S3" is <|spltoken3|>, "T2.4" is <|t:2.4|>, "_x" is the piece
 * "▁x", anything else that piece (each appended to t on first use, as
 * hv_test_piece). Returns how many. */
int hv_test_stream(struct hv_tokenizer *t, const char *spec, int32_t *ids, int cap);

#define TEST_END()                                                                                 \
    do {                                                                                           \
        printf("%d passed, %d failed\n", hv_test_passed, hv_test_failed);                          \
        return hv_test_failed ? 1 : 0;                                                             \
    } while (0)

#endif
