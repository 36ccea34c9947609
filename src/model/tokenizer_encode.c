/* SentencePiece encoding (text to ids) without the library, as
 * sentencepiece 0.1.97's SentencePieceProcessor::Encode computes it:
 *
 * 1. Normaliser::Normalize: at each position the longest user-defined piece
 *    is kept as it is, else the longest rule of precompiled_charsmap (a
 *    Darts double-array trie over UTF-8 bytes) replaces its match, else one
 *    character is copied (an invalid byte becomes U+FFFD); leading,
 *    trailing and repeated spaces are dropped (remove_extra_whitespaces),
 *    spaces become "▁" and a "▁" goes before the text (add_dummy_prefix;
 *    after it with treat_whitespace_as_suffix).
 * 2. The model: BPE merges the adjacent pair that forms the best-scored
 *    piece, leftmost among equals, until none is left, and splits merged
 *    unused pieces back (bpe_model.cc); unigram picks the best-scoring
 *    segmentation by Viterbi (unigram_model.cc's EncodeOptimized).
 * 3. Unknown pieces: with byte_fallback each becomes its UTF-8 bytes' <0xNN>
 *    pieces, else a run of them is one unknown id.
 * tests/tokenizer/oracle.py's encode mode checks this against
 * python3-sentencepiece. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

/* A growing byte buffer. */
typedef struct buf {
    char *p;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static const char SPACE[] = "\xe2\x96\x81"; /* U+2581, "▁" */

/* The length of the longest user-defined piece at s[0..n), or 0. */
static size_t user_prefix(const hv_tokenizer *t, const char *s, size_t n) {
    size_t best = 0;
    for (int i = 0; i < t->n_pieces; i++) {
        if (t->types[i] != HV_PIECE_USER_DEFINED) continue;
        size_t k = strlen(t->pieces[i]);
        if (k > best && k <= n && memcmp(t->pieces[i], s, k) == 0) best = k;
    }
    return best;
}

/* Darts-clone's commonPrefixSearch over the character map: the value of
 * the longest matching rule and its length in *len (0: none). The first
 * 32 matches count, as sentencepiece's kMaxTrieResultsSize. -1 when the
 * trie leads outside itself (a broken file). */
static long charsmap_match(const hv_tokenizer *t, const uint8_t *s, size_t n, size_t *len) {
    const uint32_t *a = t->norm_trie;
    uint32_t units = t->n_norm_units;
    long value = 0;
    int found = 0;
    *len = 0;
    if (!a) return 0;
#define OFFSET(u) (((u) >> 10) << (((u) & (1u << 9)) >> 6))
    size_t pos = OFFSET(a[0]);
    for (size_t i = 0; i < n; i++) {
        pos ^= s[i];
        if (pos >= units) return -1;
        uint32_t u = a[pos];
        if ((u & ((1u << 31) | 0xff)) != s[i]) break;
        pos ^= OFFSET(u);
        if ((u >> 8) & 1) {
            if (pos >= units) return -1;
            if (found++ < 32 && i + 1 > *len) {
                *len = i + 1;
                value = (long)(a[pos] & ((1u << 31) - 1));
            }
        }
    }
#undef OFFSET
    if (*len && (size_t)value >= t->norm_text_len) return -1;
    return value;
}

/* Normaliser::NormalizePrefix: how many input bytes the next step consumes
 * and what it writes (*out, *out_n). */
static hv_status norm_prefix(const hv_tokenizer *t, const char *s, size_t n, const char **out,
                             size_t *out_n, size_t *used, hv_error *e) {
    size_t k = user_prefix(t, s, n);
    if (k) {
        *out = s;
        *out_n = *used = k;
        return HV_OK;
    }
    long v = charsmap_match(t, (const uint8_t *)s, n, &k);
    if (v < 0) return hv_err(e, HV_ERR_FORMAT, "tokenizer.model: precompiled_charsmap is broken");
    if (k) {
        *out = t->norm_text + v;
        *out_n = strlen(*out);
        *used = k;
        return HV_OK;
    }
    uint32_t cp;
    int c = hv_sp_utf8_char((const uint8_t *)s, n, &cp);
    if (c < 0) {
        *out = "\xef\xbf\xbd";
        *out_n = 3;
        *used = 1;
    } else {
        *out = s;
        *out_n = *used = (size_t)c;
    }
    return HV_OK;
}

static int ends_with(const buf *b, const char *s, size_t n) {
    return b->n >= n && memcmp(b->p + b->n - n, s, n) == 0;
}

static hv_status normalize(const hv_tokenizer *t, const char *s, buf *o, hv_error *e) {
    size_t n = strlen(s), k, used;
    const char *w;
    hv_status st;
    const char *ws = t->escape_ws ? SPACE : " ";
    size_t ws_n = strlen(ws);
    if (t->remove_extra_ws)
        while (n) {
            if ((st = norm_prefix(t, s, n, &w, &k, &used, e))) return st;
            if (!(k == 1 && w[0] == ' ')) break;
            s += used;
            n -= used;
        }
    if (!n) return HV_OK;
    if (!t->ws_suffix && t->add_dummy_prefix) put(o, ws, ws_n);
    int prev_space = t->remove_extra_ws;
    while (n) {
        if ((st = norm_prefix(t, s, n, &w, &k, &used, e))) return st;
        while (prev_space && k && w[0] == ' ') w++, k--;
        if (k) {
            for (size_t i = 0; i < k; i++) {
                if (t->escape_ws && w[i] == ' ')
                    put(o, SPACE, 3);
                else
                    put(o, w + i, 1);
            }
            prev_space = w[k - 1] == ' ';
        }
        s += used;
        n -= used;
        if (!t->remove_extra_ws) prev_space = 0;
    }
    if (t->remove_extra_ws)
        while (ends_with(o, ws, ws_n)) o->n -= ws_n;
    if (t->ws_suffix && t->add_dummy_prefix) put(o, ws, ws_n);
    return HV_OK;
}

/* ------------------------------------------------------------------ */

/* A piece of the normalised text: its bytes and id (the model's output). */
typedef struct seg {
    size_t off, len;
    int32_t id;
} seg;

/* Room for one more element in a growing array of *cap elements of size
 * elem holding n; 0 when out of memory. */
static int grow(void **v, int n, int *cap, size_t elem) {
    if (n < *cap) return 1;
    int c = *cap ? *cap * 2 : 32;
    void *p = realloc(*v, (size_t)c * elem);
    if (!p) return 0;
    *v = p;
    *cap = c;
    return 1;
}

typedef struct segs {
    seg *v;
    int n, cap;
    int oom;
} segs;

static void seg_add(segs *r, size_t off, size_t len, int32_t id) {
    if (r->oom || (r->oom = !grow((void **)&r->v, r->n, &r->cap, sizeof *r->v))) return;
    r->v[r->n++] = (seg){off, len, id};
}

/* Whether the piece is in the model's pieces_ (normal, user-defined,
 * unused), as BPE's merges and unigram's lattice see them. */
static int32_t model_piece(const hv_tokenizer *t, const char *s, size_t n) {
    int32_t id = hv_tokenizer_find_n(t, s, n);
    if (id < 0) return -1;
    int ty = t->types[id];
    return ty == HV_PIECE_NORMAL || ty == HV_PIECE_USER_DEFINED || ty == HV_PIECE_UNUSED ? id : -1;
}

/* ModelInterface::PieceToId: any piece, else the unknown id. */
static int32_t piece_to_id(const hv_tokenizer *t, const char *s, size_t n, int32_t unk) {
    int32_t id = hv_tokenizer_find_n(t, s, n);
    return id < 0 ? unk : id;
}

/* ---------------------------------------------------------------- BPE */

typedef struct sym {
    size_t off, len;
    int prev, next, freeze;
} sym;

typedef struct pair {
    float score;
    int left, right;
    size_t size;
} pair;

/* The agenda's order: the better score first, the left one among equals. */
static int before(const pair *a, const pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

typedef struct heap {
    pair *v;
    int n, cap, oom;
} heap;

static void heap_push(heap *h, pair p) {
    if (h->oom || (h->oom = !grow((void **)&h->v, h->n, &h->cap, sizeof *h->v))) return;
    int i = h->n++;
    while (i > 0 && before(&p, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = p;
}

static pair heap_pop(heap *h) {
    pair top = h->v[0], last = h->v[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

/* rev_merge: how a merged unused piece splits back (the last entry for a
 * text wins, as the map's assignment). */
typedef struct rev {
    size_t off, len, l_off, l_len, r_off, r_len;
} rev;

typedef struct bpe {
    const hv_tokenizer *t;
    const char *s;
    sym *sy;
    heap h;
    rev *rv;
    int n_rv, cap_rv, oom;
} bpe;

static void maybe_add(bpe *b, int left, int right) {
    if (left < 0 || right < 0 || b->sy[left].freeze || b->sy[right].freeze) return;
    size_t off = b->sy[left].off, len = b->sy[left].len + b->sy[right].len;
    int32_t id = model_piece(b->t, b->s + off, len);
    if (id < 0) return;
    heap_push(&b->h, (pair){b->t->scores[id], left, right, len});
    if (b->t->types[id] == HV_PIECE_UNUSED) {
        if (!grow((void **)&b->rv, b->n_rv, &b->cap_rv, sizeof *b->rv)) {
            b->oom = 1;
            return;
        }
        b->rv[b->n_rv++] =
            (rev){off, len, b->sy[left].off, b->sy[left].len, b->sy[right].off, b->sy[right].len};
    }
}

static void resegment(bpe *b, size_t off, size_t len, int32_t unk, segs *out, int depth) {
    int32_t id = piece_to_id(b->t, b->s + off, len, unk);
    if (id >= 0 && b->t->types[id] == HV_PIECE_UNUSED && depth < 64) {
        for (int i = b->n_rv - 1; i >= 0; i--) {
            const rev *r = &b->rv[i];
            if (r->len == len && memcmp(b->s + r->off, b->s + off, len) == 0) {
                resegment(b, r->l_off, r->l_len, unk, out, depth + 1);
                resegment(b, r->r_off, r->r_len, unk, out, depth + 1);
                return;
            }
        }
    }
    seg_add(out, off, len, id);
}

static const uint8_t ONE_CHAR_LEN[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};

static int encode_bpe(const hv_tokenizer *t, const char *s, size_t n, int32_t unk, segs *out) {
    bpe b = {.t = t, .s = s};
    int count = 0;
    if (!(b.sy = malloc((n + 1) * sizeof *b.sy))) return -1;
    for (size_t i = 0; i < n; count++) {
        size_t k = user_prefix(t, s + i, n - i);
        int freeze = k > 0;
        if (!k) k = ONE_CHAR_LEN[(uint8_t)s[i] >> 4];
        if (k > n - i) k = n - i;
        b.sy[count] = (sym){i, k, count - 1, i + k < n ? count + 1 : -1, freeze};
        i += k;
    }
    for (int i = 1; i < count; i++) maybe_add(&b, i - 1, i);
    while (b.h.n && !b.h.oom && !b.oom) {
        pair top = heap_pop(&b.h);
        sym *l = &b.sy[top.left], *r = &b.sy[top.right];
        if (!l->len || !r->len || l->len + r->len != top.size) continue;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) b.sy[r->next].prev = top.left;
        r->len = 0;
        maybe_add(&b, l->prev, top.left);
        maybe_add(&b, top.left, l->next);
    }
    for (int i = 0; count && i != -1; i = b.sy[i].next)
        resegment(&b, b.sy[i].off, b.sy[i].len, unk, out, 0);
    int oom = b.h.oom || b.oom;
    free(b.sy);
    free(b.h.v);
    free(b.rv);
    return oom ? -1 : 0;
}

/* ------------------------------------------------------------ unigram */

typedef struct best {
    int32_t id;
    float score;
    long start; /* -1: none yet */
} best;

static int encode_unigram(const hv_tokenizer *t, const char *s, size_t n, int32_t unk, segs *out) {
    float min_score = FLT_MAX, max_score = FLT_MIN;
    size_t max_len = 0;
    for (int i = 0; i < t->n_pieces; i++) {
        if (t->types[i] == HV_PIECE_NORMAL) {
            if (t->scores[i] < min_score) min_score = t->scores[i];
            if (t->scores[i] > max_score) max_score = t->scores[i];
        }
        size_t k = strlen(t->pieces[i]);
        if (k > max_len) max_len = k;
    }
    const float unk_score = min_score - 10.0f; /* kUnkPenalty */
    best *b = malloc((n + 1) * sizeof *b);
    if (!b) return -1;
    for (size_t i = 0; i <= n; i++) b[i] = (best){-1, 0.0f, -1};
    for (size_t at = 0; at < n;) {
        const float here = b[at].score;
        int single = 0;
        size_t mb = ONE_CHAR_LEN[(uint8_t)s[at] >> 4];
        if (mb > n - at) mb = n - at;
        for (size_t end = at + 1; end <= n && end - at <= max_len; end++) {
            int32_t id = model_piece(t, s + at, end - at);
            if (id < 0 || t->types[id] == HV_PIECE_UNUSED) continue;
            size_t len = end - at;
            /* user-defined pieces get a bonus so that they always win */
            double score = t->types[id] == HV_PIECE_USER_DEFINED
                               ? (double)((float)len * max_score) - 0.1
                               : (double)t->scores[id];
            double cand = score + (double)here;
            if (b[end].start == -1 || cand > (double)b[end].score) {
                b[end] = (best){id, (float)cand, (long)at};
            }
            if (len == mb) single = 1;
        }
        if (!single) {
            float cand = unk_score + here;
            if (b[at + mb].start == -1 || cand > b[at + mb].score)
                b[at + mb] = (best){unk, cand, (long)at};
        }
        at += mb;
    }
    int k = 0;
    for (size_t end = n; end > 0; end = (size_t)b[end].start) k++;
    segs tmp = {0};
    for (size_t end = n; end > 0; end = (size_t)b[end].start)
        seg_add(&tmp, (size_t)b[end].start, end - (size_t)b[end].start, b[end].id);
    for (int i = k - 1; i >= 0 && !tmp.oom; i--)
        seg_add(out, tmp.v[i].off, tmp.v[i].len, tmp.v[i].id);
    int oom = tmp.oom;
    free(tmp.v);
    free(b);
    return oom ? -1 : 0;
}

/* ------------------------------------------------------------- public */

hv_status hv_tokenizer_encode(const hv_tokenizer *t, const char *text, int32_t **ids, int *n,
                              hv_error *e) {
    *ids = NULL;
    *n = 0;
    if (t->model_type != HV_SP_BPE && t->model_type != HV_SP_UNIGRAM)
        return hv_err(e, HV_ERR_UNSUPPORTED,
                      "tokenizer.model: encoding supports unigram and BPE models, not model_type "
                      "%d",
                      t->model_type);
    int32_t unk = -1;
    for (int i = 0; i < t->n_pieces && unk < 0; i++)
        if (t->types[i] == HV_PIECE_UNKNOWN) unk = i;
    if (unk < 0) return hv_err(e, HV_ERR_FORMAT, "tokenizer.model has no unknown piece");
    size_t len = strlen(text);
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = hv_sp_utf8_char((const uint8_t *)text + i, len - i, &cp);
        if (k < 0) return hv_err(e, HV_ERR_INVALID_ARG, "text is not valid UTF-8 (byte %zu)", i);
        i += (size_t)k;
    }
    buf norm = {0};
    segs r = {0};
    hv_status st = normalize(t, text, &norm, e);
    if (!st && norm.oom) st = hv_err(e, HV_ERR_NOMEM, "out of memory");
    if (!st && norm.n) {
        int bad = t->model_type == HV_SP_BPE ? encode_bpe(t, norm.p, norm.n, unk, &r)
                                             : encode_unigram(t, norm.p, norm.n, unk, &r);
        if (bad || r.oom) st = hv_err(e, HV_ERR_NOMEM, "out of memory");
    }
    /* unknown pieces: bytes, or one id per run */
    int32_t *v = NULL;
    int m = 0;
    size_t cap = 0;
    for (int i = 0; !st && i < r.n; i++) cap += t->byte_fallback ? r.v[i].len : 1;
    if (!st && cap && !(v = malloc(cap * sizeof *v))) st = hv_err(e, HV_ERR_NOMEM, "out of memory");
    int prev_unk = 0;
    for (int i = 0; !st && i < r.n; i++) {
        int32_t id = r.v[i].id;
        int is_unk = t->types[id] == HV_PIECE_UNKNOWN;
        if (t->types[id] == HV_PIECE_CONTROL) {
            v[m++] = id;
        } else if (is_unk && t->byte_fallback) {
            for (size_t j = 0; j < r.v[i].len; j++) {
                static const char hex[] = "0123456789ABCDEF";
                uint8_t c = (uint8_t)norm.p[r.v[i].off + j];
                char piece[7] = {'<', '0', 'x', hex[c >> 4], hex[c & 15], '>', 0};
                v[m++] = piece_to_id(t, piece, 6, unk);
            }
        } else if (!(is_unk && prev_unk)) {
            v[m++] = id;
        }
        prev_unk = is_unk;
    }
    free(norm.p);
    free(r.v);
    if (st) {
        free(v);
        return st;
    }
    *ids = v;
    *n = m;
    return HV_OK;
}
