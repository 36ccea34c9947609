#include "hotwords.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT (64 * 1024) /* a hotword list longer than this is a mistake */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The child of node n with this token, or -1. */
static int child(const hv_hotwords *h, int n, int32_t tok) {
    for (int c = h->nodes[n].first_child; c >= 0; c = h->nodes[c].next_sibling)
        if (h->nodes[c].token == tok) return c;
    return -1;
}

/* Adds the phrase's ids under the root. */
static int add_phrase(hv_hotwords *h, const int32_t *ids, int n, float score, int *cap) {
    int cur = 0;
    for (int i = 0; i < n; i++) {
        int c = child(h, cur, ids[i]);
        if (c < 0) {
            if (h->n_nodes == *cap) {
                int nc = *cap * 2;
                hv_hw_node *v = realloc(h->nodes, (size_t)nc * sizeof *v);
                if (!v) return -1;
                h->nodes = v;
                *cap = nc;
            }
            c = h->n_nodes++;
            h->nodes[c] = (hv_hw_node){.token = ids[i],
                                       .first_child = -1,
                                       .next_sibling = h->nodes[cur].first_child,
                                       .fail = 0,
                                       .node_score = h->nodes[cur].node_score + score};
            h->nodes[cur].first_child = c;
        }
        cur = c;
    }
    h->nodes[cur].end = 1;
    return 0;
}

/* Failure links, breadth first: a node's is the deepest proper suffix of
 * its token path that is in the trie. */
static int link_failures(hv_hotwords *h) {
    int *queue = malloc((size_t)h->n_nodes * sizeof *queue), head = 0, tail = 0;
    if (!queue) return -1;
    for (int c = h->nodes[0].first_child; c >= 0; c = h->nodes[c].next_sibling) queue[tail++] = c;
    while (head < tail) {
        int n = queue[head++];
        for (int c = h->nodes[n].first_child; c >= 0; c = h->nodes[c].next_sibling) {
            int f = h->nodes[n].fail, g;
            while ((g = child(h, f, h->nodes[c].token)) < 0 && f != 0) f = h->nodes[f].fail;
            h->nodes[c].fail = g >= 0 ? g : 0;
            queue[tail++] = c;
        }
    }
    free(queue);
    return 0;
}

/* The first character of phrase that encodes to the unknown piece, quoted
 * into what (16 bytes), or "part of it". */
static void unknown_char(const hv_tokenizer *t, const char *phrase, char *what) {
    snprintf(what, 16, "part of it");
    for (const char *p = phrase; *p;) {
        uint32_t cp;
        int k = hv_sp_utf8_char((const uint8_t *)p, strlen(p), &cp);
        if (k < 0) return;
        char one[5] = {0};
        memcpy(one, p, (size_t)k);
        int32_t *ids;
        int n, unk = 0;
        hv_error e;
        if (hv_tokenizer_encode(t, one, &ids, &n, &e) != HV_OK) return;
        for (int i = 0; i < n; i++) unk |= t->types[ids[i]] == HV_PIECE_UNKNOWN;
        free(ids);
        if (unk) {
            snprintf(what, 16, "\"%s\"", one);
            return;
        }
        p += k;
    }
}

hv_status hv_hotwords_build(hv_hotwords *h, const hv_tokenizer *t, const char *text, float score,
                            hv_error *e) {
    memset(h, 0, sizeof *h);
    if (!text) return HV_OK;
    size_t len = strlen(text);
    if (len > MAX_TEXT)
        return hv_err(e, HV_ERR_INVALID_ARG, "hotwords: %zu bytes, at most %d", len, MAX_TEXT);
    int cap = 64;
    if (!(h->nodes = malloc((size_t)cap * sizeof *h->nodes)))
        return hv_err(e, HV_ERR_NOMEM, "out of memory for hotwords");
    h->nodes[0] = (hv_hw_node){.token = -1, .first_child = -1, .next_sibling = -1};
    h->n_nodes = 1;
    char *phrase = malloc(len + 1);
    hv_status st = phrase ? HV_OK : hv_err(e, HV_ERR_NOMEM, "out of memory for hotwords");
    for (const char *p = text; !st && *p;) {
        size_t k = strcspn(p, ",\n");
        const char *a = p, *b = p + k;
        p = *b ? b + 1 : b;
        while (a < b && is_space(*a)) a++;
        while (b > a && is_space(b[-1])) b--;
        if (a == b) continue;
        memcpy(phrase, a, (size_t)(b - a));
        phrase[b - a] = '\0';
        int32_t *ids;
        int n;
        if ((st = hv_tokenizer_encode(t, phrase, &ids, &n, e))) {
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            st = hv_err(e, st, "hotword \"%.64s\": %s", phrase, msg);
            break;
        }
        for (int i = 0; i < n && !st; i++)
            if (t->types[ids[i]] == HV_PIECE_UNKNOWN) {
                char what[16];
                unknown_char(t, phrase, what);
                st = hv_err(e, HV_ERR_INVALID_ARG,
                            "hotword \"%.64s\" cannot be encoded: the model's vocabulary has no "
                            "piece for %s",
                            phrase, what);
            }
        if (!st && n > 0) {
            if (add_phrase(h, ids, n, score, &cap))
                st = hv_err(e, HV_ERR_NOMEM, "out of memory for hotwords");
            h->n_phrases++;
        }
        free(ids);
    }
    free(phrase);
    if (!st && h->n_phrases && link_failures(h))
        st = hv_err(e, HV_ERR_NOMEM, "out of memory for hotwords");
    if (st) hv_hotwords_free(h);
    return st;
}

void hv_hotwords_free(hv_hotwords *h) {
    if (!h) return;
    free(h->nodes);
    memset(h, 0, sizeof *h);
}

int hv_hotwords_next(const hv_hotwords *h, int s, int32_t tok, float *delta) {
    int n = s, c;
    while ((c = child(h, n, tok)) < 0 && n != 0) n = h->nodes[n].fail;
    if (c < 0) c = 0;
    *delta = h->nodes[c].node_score - h->nodes[s].node_score;
    return h->nodes[c].end ? 0 : c;
}

void hv_hotwords_bias(const hv_hotwords *h, int s, float *row, int V) {
    float rest = -h->nodes[s].node_score; /* a token that matches nothing */
    if (rest != 0)
        for (int v = 0; v < V; v++) row[v] += rest;
    /* a token goes to the child of the first node on s's failure chain
     * that has one for it */
    for (int n = s;; n = h->nodes[n].fail) {
        for (int c = h->nodes[n].first_child; c >= 0; c = h->nodes[c].next_sibling) {
            int32_t tok = h->nodes[c].token;
            int seen = 0;
            for (int m = s; m != n && !seen; m = h->nodes[m].fail) seen = child(h, m, tok) >= 0;
            if (!seen && tok >= 0 && tok < V) row[tok] += h->nodes[c].node_score;
        }
        if (n == 0) break;
    }
}
