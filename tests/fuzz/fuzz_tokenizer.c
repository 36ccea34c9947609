/* libFuzzer target: a tokenizer.model protobuf; whatever parses is then
 * used to decode ids taken from the input, to build a prompt and to encode
 * text (the pieces themselves and a fixed phrase). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hv_tokenizer t;
    hv_error e;
    if (hv_tokenizer_parse(&t, data, size, "fuzz.model", &e) != HV_OK) return 0;
    int32_t ids[256];
    int n = 0;
    for (size_t i = 0; i + 1 < size && n < 256; i += 2)
        ids[n++] = (int32_t)(data[i] | data[i + 1] << 8) % (t.n_pieces + 4) - 2;
    free(hv_tokenizer_decode(&t, ids, n));
    for (int i = 0; i < t.n_pieces; i++)
        if (hv_tokenizer_find(&t, t.pieces[i]) != i) abort();
    char *langs[] = {"en", "da"};
    hv_config c;
    memset(&c, 0, sizeof c);
    c.languages = langs;
    c.n_languages = 2;
    int32_t prompt[HV_PROMPT_MAX];
    hv_tokenizer_prompt(&t, &c, "da", size & 1, 0, prompt, &n, &e);
    const char *texts[] = {" S\xc3\xb8ren  Kierkegaard \xef\xac\x81 <|da|>x",
                           t.pieces[size % (size_t)t.n_pieces]};
    for (int i = 0; i < 2; i++) {
        int32_t *enc;
        if (hv_tokenizer_encode(&t, texts[i], &enc, &n, &e) == HV_OK) free(enc);
    }
    hv_tokenizer_free(&t);
    return 0;
}
