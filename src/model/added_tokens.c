/* Tokens a Hugging Face tokenizer adds to tokenizer.model's pieces
 * (tokenizer.add_tokens and resize_token_embeddings write them to
 * tokenizer_config.json, not into the SentencePiece model): the speaker
 * and timestamp tokens of the diarize fine-tunes, for example. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"
#include "util/file.h"

#define MAX_JSON (16u << 20)

typedef struct added {
    long id;
    const char *text;
    uint8_t type;
} added;

static int by_id(const void *a, const void *b) {
    const added *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

hv_status hv_tokenizer_load_added(hv_tokenizer *t, const char *model_dir, hv_error *e) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", model_dir);
    FILE *probe = fopen(path, "rb");
    if (!probe) return errno == ENOENT ? HV_OK : hv_err(e, HV_ERR_IO, "%s: cannot open", path);
    fclose(probe);
    char *buf;
    size_t len;
    hv_status st = hv_read_file(path, MAX_JSON, &buf, &len, e);
    if (st) return st;
    st = hv_tokenizer_parse_added(t, buf, len, path, e);
    free(buf);
    return st;
}

hv_status hv_tokenizer_parse_added(hv_tokenizer *t, const char *buf, size_t len, const char *path,
                                   hv_error *e) {
    hv_status st = HV_OK;
    cJSON *root = cJSON_ParseWithLength(buf, len);
    if (!root) return hv_err(e, HV_ERR_FORMAT, "%s: not valid JSON", path);
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "added_tokens_decoder");
    int n = 0, cap = cJSON_GetArraySize(dec);
    added *v = cap ? calloc((size_t)cap, sizeof *v) : NULL;
    if (dec && !cJSON_IsObject(dec))
        st = hv_err(e, HV_ERR_FORMAT, "%s: added_tokens_decoder must be an object", path);
    else if (cap && !v)
        st = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    const cJSON *it;
    cJSON_ArrayForEach(it, dec) {
        if (st) break;
        char *end;
        errno = 0;
        long id = strtol(it->string, &end, 10);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        const cJSON *special = cJSON_GetObjectItemCaseSensitive(it, "special");
        if (!*it->string || *end || errno || id < 0 || id >= (1L << 24))
            st = hv_err(e, HV_ERR_FORMAT, "%s: added_tokens_decoder: \"%.32s\" is not a token id",
                        path, it->string);
        else if (!cJSON_IsString(content) || !*content->valuestring)
            st = hv_err(e, HV_ERR_FORMAT, "%s: added token %ld has no content", path, id);
        else if (id < t->n_pieces && strcmp(t->pieces[id], content->valuestring))
            st = hv_err(e, HV_ERR_FORMAT,
                        "%s: added token %ld is \"%.64s\", but tokenizer.model's piece %ld is "
                        "\"%.64s\"",
                        path, id, content->valuestring, id, t->pieces[id]);
        else if (id >= t->n_pieces)
            v[n++] = (added){id, content->valuestring,
                             cJSON_IsTrue(special) ? HV_PIECE_CONTROL : HV_PIECE_USER_DEFINED};
    }
    if (n) qsort(v, (size_t)n, sizeof *v, by_id);
    for (int i = 0; !st && i < n; i++)
        if (v[i].id != t->n_pieces + i)
            st = hv_err(e, HV_ERR_FORMAT,
                        "%s: added token ids must follow tokenizer.model's %d pieces without a "
                        "gap: %s %ld",
                        path, t->n_pieces,
                        i && v[i].id == v[i - 1].id ? "a second token" : "no token",
                        i && v[i].id == v[i - 1].id ? v[i].id : (long)t->n_pieces + i);
    const char **texts = n ? malloc((size_t)n * sizeof *texts) : NULL;
    uint8_t *types = n ? malloc((size_t)n) : NULL;
    if (!st && n && (!texts || !types)) st = hv_err(e, HV_ERR_NOMEM, "%s: out of memory", path);
    for (int i = 0; !st && i < n; i++) {
        texts[i] = v[i].text;
        types[i] = v[i].type;
    }
    if (!st && n) st = hv_tokenizer_append(t, texts, types, n, path, e);
    free(texts);
    free(types);
    free(v);
    cJSON_Delete(root);
    return st;
}
