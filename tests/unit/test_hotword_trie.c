/* The hotwords' trie (docs/DECODING.md "Hotwords") on the demo model's
 * tokenizer: the score change of each token while a phrase matches, when
 * a match fails (given back), when a phrase completes (kept, back to the
 * root), across failure links, and hv_hotwords_bias against
 * hv_hotwords_next for every token of the vocabulary. The ids come from
 * the tokenizer, none is assumed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hotwords.h"
#include "testlib.h"

#define S 1.5f

static int32_t *enc(const hv_tokenizer *t, const char *text, int *n) {
    int32_t *ids;
    hv_error e = {0};
    CHECK_MSG(hv_tokenizer_encode(t, text, &ids, n, &e) == HV_OK, "%s: %s", text, e.msg);
    return ids;
}

/* bias(s)[tok] must equal the change hv_hotwords_next gives, for all. */
static void check_bias(const hv_hotwords *h, int s, int V) {
    float *row = calloc((size_t)V, sizeof *row);
    hv_hotwords_bias(h, s, row, V);
    int bad = 0;
    for (int v = 0; v < V; v++) {
        float d;
        hv_hotwords_next(h, s, v, &d);
        if (fabsf(row[v] - d) > 1e-5f && bad++ < 3)
            CHECK_MSG(0, "state %d token %d: bias %g, step %g", s, v, row[v], d);
    }
    CHECK_MSG(bad == 0, "state %d: %d tokens differ", s, bad);
    free(row);
}

int main(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/models/demo/tokenizer.model",
             hv_test_env("HV_SOURCE_DIR", "."));
    hv_tokenizer t;
    hv_error e = {0};
    if (hv_tokenizer_load(&t, path, &e) != HV_OK) {
        CHECK_MSG(0, "%s", e.msg);
        TEST_END();
    }
    int V = t.n_pieces, n, m;
    int32_t *tobias = enc(&t, "Tobias", &n), *torben = enc(&t, "Torben", &m);
    CHECK(n >= 3 && m >= 3);

    hv_hotwords h;
    CHECK(hv_hotwords_build(&h, &t, " Tobias ,\n, Torben,", S, &e) == HV_OK);
    CHECK(h.n_phrases == 2);
    /* a whole phrase: +S per token, kept, and back to the root */
    int s = 0;
    float d, total = 0;
    for (int i = 0; i < n; i++) {
        s = hv_hotwords_next(&h, s, tobias[i], &d);
        CHECK_MSG(fabsf(d - S) < 1e-6f, "token %d of Tobias: %g", i, d);
        total += d;
        if (i < n - 1) check_bias(&h, s, V);
    }
    CHECK(s == 0 && fabsf(total - S * (float)n) < 1e-5f);
    /* a failed match gives back what it earned */
    s = hv_hotwords_next(&h, 0, tobias[0], &d);
    s = hv_hotwords_next(&h, s, tobias[1], &d);
    int32_t eos = hv_tokenizer_find(&t, "<|endoftext|>");
    CHECK(eos >= 0);
    s = hv_hotwords_next(&h, s, eos, &d);
    CHECK_MSG(s == 0 && fabsf(d + 2 * S) < 1e-6f, "after a failed match: state %d, %g", s, d);
    /* the phrases share their first token when both start with it: a
     * switch from one to the other through the root keeps that token's
     * bonus only when it is shared */
    if (tobias[0] == torben[0]) {
        s = hv_hotwords_next(&h, 0, tobias[0], &d);
        int s2 = hv_hotwords_next(&h, s, torben[1], &d);
        CHECK(s2 != 0 && fabsf(d - S) < 1e-6f);
    }
    check_bias(&h, 0, V);
    /* the root: a token that starts no phrase changes nothing */
    float *row = calloc((size_t)V, sizeof *row);
    hv_hotwords_bias(&h, 0, row, V);
    int moved = 0;
    for (int v = 0; v < V; v++) moved += row[v] != 0;
    CHECK_MSG(moved >= 1 && moved <= 2, "%d tokens biased at the root", moved);
    free(row);
    hv_hotwords_free(&h);

    /* failure links: the phrases "ab" and "bc" over three of the ids */
    int32_t a = tobias[0], b = tobias[1], c = tobias[2];
    {
        hv_hotwords g = {0};
        hv_hw_node nodes[8];
        /* root, a, ab(end), b, bc(end) */
        nodes[0] = (hv_hw_node){-1, 1, -1, 0, 0, 0};
        nodes[1] = (hv_hw_node){a, 2, 3, 0, 0, S};
        nodes[2] = (hv_hw_node){b, -1, -1, 3, 1, 2 * S};
        nodes[3] = (hv_hw_node){b, 4, -1, 0, 0, S};
        nodes[4] = (hv_hw_node){c, -1, -1, 0, 1, 2 * S};
        g.nodes = nodes;
        g.n_nodes = 5;
        g.n_phrases = 2;
        /* "a" then "c": the match of "a" fails, nothing starts with c */
        s = hv_hotwords_next(&g, 1, c, &d);
        CHECK(s == 0 && fabsf(d + S) < 1e-6f);
        /* at "b" (of "bc"), b again: "b" is matched anew through the root */
        s = hv_hotwords_next(&g, 3, b, &d);
        CHECK(s == 3 && fabsf(d) < 1e-6f);
        check_bias(&g, 1, V);
        check_bias(&g, 3, V);
    }

    /* the list: nothing, refusals */
    CHECK(hv_hotwords_build(&h, &t, " , \n ", S, &e) == HV_OK && h.n_phrases == 0);
    hv_hotwords_free(&h);
    CHECK(hv_hotwords_build(&h, &t, NULL, S, &e) == HV_OK && h.n_phrases == 0);
    CHECK(hv_hotwords_build(&h, &t, "Mette, \xe6\x97\xa5", S, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "cannot be encoded") && strstr(e.msg, "\xe6\x97\xa5"));
    CHECK(hv_hotwords_build(&h, &t, "ab\xc3", S, &e) == HV_ERR_INVALID_ARG &&
          strstr(e.msg, "UTF-8"));
    free(tobias);
    free(torben);
    hv_tokenizer_free(&t);
    TEST_END();
}
