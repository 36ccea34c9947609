/* libFuzzer target: a tokenizer_config.json whose added_tokens_decoder
 * extends a small fixed vocabulary; whatever is accepted must give a
 * tokenizer in which every token is found by its text, and which encodes
 * and decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *texts[] = {"<unk>", "\xe2\x96\x81", "a"};
    static const uint8_t types[] = {HV_PIECE_UNKNOWN, HV_PIECE_NORMAL, HV_PIECE_NORMAL};
    hv_tokenizer t;
    hv_error e;
    memset(&t, 0, sizeof t);
    t.model_type = HV_SP_BPE;
    t.add_dummy_prefix = t.remove_extra_ws = t.escape_ws = 1;
    if (hv_tokenizer_append(&t, texts, types, 3, "fixed", &e) != HV_OK) abort();
    if (hv_tokenizer_parse_added(&t, (const char *)data, size, "fuzz.json", &e) == HV_OK) {
        for (int i = 0; i < t.n_pieces; i++)
            if (hv_tokenizer_find(&t, t.pieces[i]) != i) abort();
        int32_t *ids, n, all[64];
        if (hv_tokenizer_encode(&t, "a <|spltoken0|>a", &ids, &n, &e) == HV_OK) free(ids);
        for (int i = 0; i < 64; i++) all[i] = i % (t.n_pieces + 1);
        free(hv_tokenizer_decode(&t, all, 64));
    }
    hv_tokenizer_free(&t);
    return 0;
}
