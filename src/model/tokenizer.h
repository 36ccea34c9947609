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
    /* What encoding needs (trainer_spec and normalizer_spec, with
     * sentencepiece's defaults where a field is absent). */
    int model_type;       /* HV_SP_UNIGRAM, HV_SP_BPE, HV_SP_WORD, HV_SP_CHAR */
    int byte_fallback;    /* unknown characters as their UTF-8 byte pieces */
    int ws_suffix;        /* treat_whitespace_as_suffix */
    int add_dummy_prefix; /* a "▁" before the text */
    int remove_extra_ws;  /* leading, trailing and repeated spaces dropped */
    int escape_ws;        /* spaces written as "▁" */
    uint32_t *norm_trie;  /* [n_norm_units] precompiled_charsmap's double array */
    uint32_t n_norm_units;
    char *norm_text; /* [norm_text_len] NUL-separated replacement strings */
    uint32_t norm_text_len;
} hv_tokenizer;

enum { HV_SP_UNIGRAM = 1, HV_SP_BPE = 2, HV_SP_WORD = 3, HV_SP_CHAR = 4 };

/* The longest prompt hv_tokenizer_prompt writes. */
#define HV_PROMPT_MAX 16

/* Reads a tokenizer.model (at most 64 MiB). Every piece must be non-empty
 * valid UTF-8 without NUL, of type 1..6, unique; byte pieces are named
 * <0xNN>. On failure t is left empty (nothing to free). */
hv_status hv_tokenizer_load(hv_tokenizer *t, const char *path, hv_error *e);

/* Appends n pieces (ids n_pieces, n_pieces + 1, ...) of the given types
 * (HV_PIECE_CONTROL or HV_PIECE_USER_DEFINED) with score 0: tokens that
 * extend the vocabulary beyond tokenizer.model. A text that is already a
 * piece, or given twice, is HV_ERR_FORMAT naming it (the caller then frees
 * t). */
hv_status hv_tokenizer_append(hv_tokenizer *t, const char *const *texts, const uint8_t *types,
                              int n, const char *name, hv_error *e);

/* Reads the added tokens of a Hugging Face tokenizer in model_dir
 * (tokenizer_config.json's added_tokens_decoder: {"ID": {"content": ...,
 * "special": bool}}; no file or no such key: none), checks those with ids
 * of tokenizer.model's pieces against them (same text) and appends the
 * rest, whose ids must follow the pieces without a gap (special: control
 * pieces; others user-defined). Errors name the file and the id.
 * Implemented in added_tokens.c. */
hv_status hv_tokenizer_load_added(hv_tokenizer *t, const char *model_dir, hv_error *e);

/* The same for the JSON text buf[0..len) (tests, fuzzing); name is the
 * file's name for messages. */
hv_status hv_tokenizer_parse_added(hv_tokenizer *t, const char *buf, size_t len, const char *name,
                                   hv_error *e);

/* Parses a serialized ModelProto from memory (tests, fuzzing). */
hv_status hv_tokenizer_parse(hv_tokenizer *t, const uint8_t *buf, size_t n, const char *name,
                             hv_error *e);

void hv_tokenizer_free(hv_tokenizer *t);

/* Id of the piece with exactly this text, or -1. */
int32_t hv_tokenizer_find(const hv_tokenizer *t, const char *piece);

/* The same for the n bytes at s (no NUL needed). */
int32_t hv_tokenizer_find_n(const hv_tokenizer *t, const char *s, size_t n);

/* sentencepiece's DecodeUTF8: the length (1..4) of the valid character at
 * s[0..n), n >= 1, with its code point in *cp; -1 (and U+FFFD) for an
 * invalid one, which consumes one byte. */
int hv_sp_utf8_char(const uint8_t *s, size_t n, uint32_t *cp);

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

/* Encodes UTF-8 text to piece ids exactly as sentencepiece's
 * SentencePieceProcessor::Encode does for unigram and BPE models:
 * normalisation by the precompiled character map, "▁" for spaces and as a
 * dummy prefix, user-defined pieces kept whole, runs of unknown characters
 * as one unknown id (or, with byte_fallback, as byte pieces). On success
 * *ids is a malloc'ed array of *n ids (caller frees; NULL when *n is 0).
 * HV_ERR_INVALID_ARG for text that is not valid UTF-8, HV_ERR_UNSUPPORTED
 * for word and char models, HV_ERR_FORMAT for a broken character map or a
 * model without an unknown piece. Implemented in tokenizer_encode.c. */
hv_status hv_tokenizer_encode(const hv_tokenizer *t, const char *text, int32_t **ids, int *n,
                              hv_error *e);

/* Writes the decoder prompt (decoder_start_token_id then the nine special
 * pieces) into ids (capacity HV_PROMPT_MAX) and its length (10) into *n.
 * diarize non-zero asks for <|timestamp|> <|diarize|> in place of
 * <|notimestamp|> <|nodiarize|>.
 * language NULL means hv_config_default_language(c).
 * Fails with HV_ERR_INVALID_ARG for a language not in supported_languages
 * (the message lists them), HV_ERR_FORMAT for a piece missing from the
 * vocabulary (named) or a decoder_start_token_id outside it. */
hv_status hv_tokenizer_prompt(const hv_tokenizer *t, const hv_config *c, const char *language,
                              int punctuation, int diarize, int32_t *ids, int *n, hv_error *e);

#endif
