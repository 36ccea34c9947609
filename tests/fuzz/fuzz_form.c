/* libFuzzer target: the server's multipart field layer (server/server_form.c).
 *
 * The first byte chooses what to fuzz:
 *   even: srv_form_add as libmicrohttpd's post processor calls it, then
 *         srv_form_params. The rest is a list of calls, each 3 bytes and
 *         data: a field name (byte % the names below, known or not), flags
 *         (bit 0: a delimiter came first, so form.seq moves; bit 1: the
 *         call continues the part at its offset, else offset 0), a length,
 *         and that many data bytes.
 *   odd:  srv_delim: a Content-Type up to the first NUL, then a body fed
 *         to srv_delim_scan in pieces of the sizes the next bytes give;
 *         the delimiters found must be those a plain search finds (abort
 *         otherwise).
 * srv_form_params needs a model for its languages: $HV_FUZZ_MODEL (the
 * Makefile's `fuzz` target passes a fixture model). */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hviske.h"
#include "server_form.h"

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
                                    "colour",
                                    "",
                                    "file\x01"};
enum { N_NAMES = sizeof NAMES / sizeof *NAMES };

static void fuzz_fields(const uint8_t *d, size_t n) {
    srv_form f;
    srv_form_init(&f, 4096);
    f.whisper = n > 0 && (d[0] & 0x80); /* POST /inference's fields too */
    uint64_t off = 0;
    int last = -1;
    while (n >= 3 && !f.err.status) {
        int k = d[0] % N_NAMES, flags = d[1];
        size_t len = d[2];
        d += 3;
        n -= 3;
        if (len > n) len = n;
        if (flags & 1) f.seq++;
        if (!(flags & 2) || k != last) off = 0;
        const char *fn = k == 0 ? "a.wav" : NULL;
        if (srv_form_add(&f, NAMES[k], fn, (const char *)d, off, len) != 0) break;
        off += len;
        last = k;
        d += len;
        n -= len;
    }
    if (!f.err.status) {
        srv_params p;
        srv_error e = {0};
        if (srv_form_params(&f, model, &base, &p, &e) != 0 && (e.status < 400 || e.status > 500))
            abort(); /* a refusal is a 4xx (or 500: out of memory) */
    }
    srv_form_free(&f);
}

static void fuzz_delim(const uint8_t *d, size_t n) {
    const uint8_t *nul = memchr(d, 0, n);
    if (!nul) return;
    char ct[256];
    size_t cl = (size_t)(nul - d) < sizeof ct - 1 ? (size_t)(nul - d) : sizeof ct - 1;
    memcpy(ct, d, cl);
    ct[cl] = '\0';
    n -= (size_t)(nul - d) + 1;
    d = nul + 1;
    if (n < 1) return;
    size_t piece = d[0] % 16 + 1; /* the body arrives in pieces of this size */
    d++;
    n--;
    srv_delim dl;
    int have = srv_delim_init(&dl, ct) == 0;
    /* the delimiters ends a plain search finds in "\r\n" + body */
    char *hay = malloc(n + 2);
    if (!hay) return;
    memcpy(hay, "\r\n", 2);
    memcpy(hay + 2, d, n);
    size_t want = 0, got = 0;
    if (have) {
        size_t pos = 0;
        for (;;) {
            const char *m = memmem(hay + pos, n + 2 - pos, dl.pat, dl.n);
            if (!m) break;
            want++;
            pos = (size_t)(m - hay) + 1;
        }
    }
    size_t at = 0;
    while (at < n) {
        size_t take = n - at < piece ? n - at : piece;
        while (take > 0) {
            int found;
            size_t k = srv_delim_scan(&dl, (const char *)d + at, take, &found);
            if (k == 0 || k > take) abort();
            got += (size_t)found;
            at += k;
            take -= k;
        }
    }
    free(hay);
    if (got != want) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (data[0] & 1)
        fuzz_delim(data + 1, size - 1);
    else
        fuzz_fields(data + 1, size - 1);
    return 0;
}
