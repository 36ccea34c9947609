/* libFuzzer target: the server's multipart form (server/server_form.c,
 * server/server_multipart.c).
 *
 * The first byte chooses what to fuzz:
 *   even: the form's fields as the multipart parser hands them over,
 *         then srv_form_params. The rest is a list of calls, each 3
 *         bytes and data: a field name (byte % the names below, known or
 *         not), bit 0 of a flag byte (set: srv_form_begin of that name
 *         first), a length, and that many bytes for srv_form_data.
 *   odd:  a whole body: a Content-Type up to the first NUL, a byte
 *         choosing the size of the pieces, then the body, parsed once in
 *         pieces of that size and once whole. The two forms must be the
 *         same (the error, each field, the file): a parse that depends on
 *         where the reads split aborts. Then srv_form_params.
 * srv_form_params needs a model for its languages: $HV_FUZZ_MODEL (the
 * Makefile's `fuzz` target passes a fixture model). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "server_form.h"
#include "server_multipart.h"

static hv_model *model;
static hv_transcribe_params base;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *dir = getenv("HV_FUZZ_MODEL");
    char err[512];
    hv_model_params mp = hv_model_default_params();
    if (!dir || hv_model_load(dir, &mp, &model, err, sizeof err) != HV_OK) {
        fprintf(stderr, "fuzz_form: set HV_FUZZ_MODEL to a model directory (%s)\n",
                dir ? err : "unset");
        exit(1);
    }
    base = hv_transcribe_default_params();
    static int not_a_detector;
    base.vad = (hv_vad *)&not_a_detector; /* only tested for NULL */
    return 0;
}

static const char *const NAMES[] = {"file",
                                    "model",
                                    "language",
                                    "prompt",
                                    "response_format",
                                    "temperature",
                                    "punctuation",
                                    "num_beams",
                                    "length_penalty",
                                    "top_k",
                                    "top_p",
                                    "seed",
                                    "max_tokens",
                                    "stream",
                                    "timestamp_granularities[]",
                                    "timestamp_granularities",
                                    "chunking_strategy",
                                    "progress",
                                    "downloads",
                                    "beam_size",
                                    "offset_t",
                                    "duration",
                                    "translate",
                                    "best_of",
                                    "temperature_inc",
                                    "include[]",
                                    "colour",
                                    "",
                                    "file\x01"};
enum { N_NAMES = sizeof NAMES / sizeof *NAMES };

/* srv_form_params on a form without error: a refusal is a 4xx (or 500:
 * out of memory). */
static void params(const srv_form *f) {
    if (f->err.status) return;
    srv_params p;
    srv_error e = {0};
    if (srv_form_params(f, model, &base, &p, &e) != 0 && (e.status < 400 || e.status > 500))
        abort();
}

static void fuzz_fields(const uint8_t *d, size_t n) {
    srv_form f;
    srv_form_init(&f, 4096);
    f.whisper = n > 0 && (d[0] & 0x80); /* POST /inference's fields too */
    while (n >= 3 && !f.err.status) {
        int k = d[0] % N_NAMES, begin = d[1] & 1;
        size_t len = d[2];
        d += 3;
        n -= 3;
        if (len > n) len = n;
        if (begin && srv_form_begin(&f, NAMES[k], k == 0 ? "a.wav" : NULL) != 0) break;
        if (srv_form_data(&f, (const char *)d, len) != 0) break;
        d += len;
        n -= len;
    }
    params(&f);
    srv_form_free(&f);
}

/* Parses body into f in pieces of `piece` bytes (0: whole). */
static void parse(srv_form *f, const char *ct, const uint8_t *body, size_t n, size_t piece) {
    srv_error e = {0};
    srv_form_init(f, 4096);
    srv_multipart *m = srv_multipart_new(ct, f, &e);
    if (!m) {
        f->err = e;
        return;
    }
    for (size_t at = 0; at < n;) {
        size_t take = piece && n - at > piece ? piece : n - at;
        if (srv_multipart_feed(m, (const char *)body + at, take) != 0) break;
        at += take;
    }
    srv_multipart_finish(m);
    srv_multipart_free(m);
}

static int same(const srv_form *a, const srv_form *b) {
    if (a->err.status != b->err.status || strcmp(a->err.message, b->err.message) != 0) return 0;
    if (a->err.status) return 1; /* the fields before an error may differ in length */
    if (a->have_file != b->have_file || a->file_len != b->file_len ||
        (a->file_len && memcmp(a->file, b->file, a->file_len) != 0) || a->n_parts != b->n_parts)
        return 0;
    for (int i = 0; i < SRV_N_FIELDS; i++)
        if (!a->value[i] != !b->value[i] ||
            (a->value[i] &&
             (a->len[i] != b->len[i] || memcmp(a->value[i], b->value[i], a->len[i]) != 0)))
            return 0;
    return 1;
}

static void fuzz_body(const uint8_t *d, size_t n) {
    const uint8_t *nul = memchr(d, 0, n);
    if (!nul || (size_t)(nul - d) + 2 > n) return;
    char ct[256];
    size_t cl = (size_t)(nul - d) < sizeof ct - 1 ? (size_t)(nul - d) : sizeof ct - 1;
    memcpy(ct, d, cl);
    ct[cl] = '\0';
    size_t piece = nul[1] % 16 + 1;
    const uint8_t *body = nul + 2;
    size_t bn = n - (size_t)(nul - d) - 2;
    srv_form whole, pieces;
    parse(&whole, ct, body, bn, 0);
    parse(&pieces, ct, body, bn, piece);
    if (!same(&whole, &pieces)) abort();
    params(&whole);
    srv_form_free(&whole);
    srv_form_free(&pieces);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1)
        fuzz_body(data + 1, size - 1);
    else
        fuzz_fields(data + 1, size - 1);
    return 0;
}
