/* SentencePiece tokenizer.model (protobuf ModelProto), read without the
 * sentencepiece library: pieces, scores and types; lookup, decoding and the
 * decoder prompt of docs/MODEL.md. */
#ifndef HV_TOKENIZER_H
#define HV_TOKENIZER_H

#include <stdint.h>

#include "model/config.h"
#include "util/error.h"

typedef enum hv_piece_type {
    HV_PIECE_NORMAL = 1,
    HV_PIECE_UNKNOWN = 2,
    HV_PIECE_CONTROL = 3,
    HV_PIECE_USER_DEFINED = 4,
    HV_PIECE_UNUSED = 5,
    HV_PIECE_BYTE = 6
} hv_piece_type;

typedef struct hv_tokenizer {
    int n_pieces;
    char **pieces;       /* [n_pieces] NUL-terminated UTF-8, owned */
    float *scores;       /* [n_pieces] */
    uint8_t *types;      /* [n_pieces] hv_piece_type */
    uint8_t *byte_value; /* [n_pieces] value of <0xNN> byte pieces */
    int32_t *hash;       /* open-addressing table of piece ids, -1 = empty */
    uint32_t hash_size;  /* power of two */
} hv_tokenizer;

/* The longest prompt hv_tokenizer_prompt writes. */
#define HV_PROMPT_MAX 16

/* Reads a tokenizer.model (at most 64 MiB). Every piece must be non-empty
 * valid UTF-8 without NUL, of type 1..6, unique; byte pieces are named
 * <0xNN>. On failure t is left empty (nothing to free). */
hv_status hv_tokenizer_load(hv_tokenizer *t, const char *path, hv_error *e);

/* Parses a serialized ModelProto from memory (tests, fuzzing). */
hv_status hv_tokenizer_parse(hv_tokenizer *t, const uint8_t *buf, size_t n, const char *name,
                             hv_error *e);

void hv_tokenizer_free(hv_tokenizer *t);

/* Id of the piece with exactly this text, or -1. */
int32_t hv_tokenizer_find(const hv_tokenizer *t, const char *piece);

/* Decodes ids as docs/MODEL.md says: only normal and byte pieces, U+2581 as a
 * space, byte pieces assembled to UTF-8 with invalid sequences replaced by
 * U+FFFD, leading and trailing whitespace trimmed; out-of-range ids are
 * skipped. Equal to python3-sentencepiece's decode of the kept ids followed
 * by Python's str.strip() (so "whitespace" is Python's: ASCII spaces,
 * U+0085, U+00A0, U+3000, ...), except that U+0000 (from a <0x00> piece)
 * is dropped, the result being a C string. Byte pieces separated only by
 * dropped ids form one run. Never fails on any ids. Returns a malloc'ed
 * string (caller frees), NULL only when out of memory. */
char *hv_tokenizer_decode(const hv_tokenizer *t, const int32_t *ids, int n);

/* Writes the decoder prompt (decoder_start_token_id then the nine special
 * pieces) into ids (capacity HV_PROMPT_MAX) and its length (10) into *n.
 * language NULL means hv_config_default_language(c).
 * Fails with HV_ERR_INVALID_ARG for a language not in supported_languages
 * (the message lists them), HV_ERR_FORMAT for a piece missing from the
 * vocabulary (named) or a decoder_start_token_id outside it. */
hv_status hv_tokenizer_prompt(const hv_tokenizer *t, const hv_config *c, const char *language,
                              int punctuation, int32_t *ids, int *n, hv_error *e);

#endif
