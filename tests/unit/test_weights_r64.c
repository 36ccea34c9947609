/* hv_weights_decoder_r64's bookkeeping: every matrix it copies into the
 * r64 layout keeps its values; a row-major copy made by the load's
 * conversion and read by that matrix alone is freed (its slot in the
 * buffer list taken by the r64 copy), one shared with the token embedding
 * (a tied classifier) is kept, and the named list never points at a freed
 * buffer. Checked on a built weight set with a tied and an own classifier,
 * then on every fixture model and the demo model loaded as stored (copied
 * on this thread) and as bf16 (over 3 threads). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/matmul.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "testlib.h"

enum { MAX_STEP = 8 * 64 + 1 };

/* The decoder step's matrices, as hv_weights_decoder_r64 visits them. */
static int step_mats(hv_weights *w, const hv_config *c, hv_mat **out) {
    int n = 0;
    for (int l = 0; l < c->dec_layers && n + 8 < MAX_STEP; l++) {
        hv_dec_layer *y = &w->dec.layers[l];
        hv_mat *step[] = {&y->sq, &y->sk, &y->sv, &y->so, &y->cq, &y->co, &y->ff_in, &y->ff_out};
        for (int i = 0; i < 8; i++) out[n++] = step[i];
    }
    out[n++] = &w->dec.cls;
    return n;
}

static float *all_values(const hv_mat *m) {
    float *v = malloc((size_t)m->rows * (size_t)m->cols * sizeof *v);
    for (int r = 0; v && r < m->rows; r++) hv_mat_row_f32(m, r, v + (size_t)r * m->cols);
    return v;
}

static int is_alloc(const hv_weights *w, const void *p) {
    for (int i = 0; i < w->n_allocs; i++)
        if (w->allocs[i] == p) return 1;
    return 0;
}

static int n_readers(const hv_weights *w, const void *data) {
    int n = 0;
    for (int i = 0; i < w->n_mats; i++) n += w->mats[i].m.data == data;
    return n;
}

typedef struct tally {
    int freed, kept;
} tally;

/* Runs hv_weights_decoder_r64 on w and checks what it did. */
static void check_r64_pass(hv_weights *w, const hv_config *c, const hv_safetensors *st,
                           int n_threads, const char *what, tally *t) {
    static hv_mat *mats[MAX_STEP];
    int n = step_mats(w, c, mats);
    const void *before[MAX_STEP];
    float *values[MAX_STEP];
    int private[MAX_STEP];
    for (int i = 0; i < n; i++) {
        before[i] = mats[i]->data;
        values[i] = all_values(mats[i]);
        private[i] = is_alloc(w, before[i]) && before[i] != w->dec.tok_emb.data &&
                     n_readers(w, before[i]) <= 1;
    }
    float *emb = all_values(&w->dec.tok_emb);
    const void *emb_data = w->dec.tok_emb.data;
    int allocs = w->n_allocs, added = 0, freed = 0;
    hv_error e;
    CHECK_MSG(hv_weights_decoder_r64(w, c, st, n_threads, &e) == HV_OK, "%s: %s", what, e.msg);
    for (int i = 0; i < n; i++) {
        hv_mat *m = mats[i];
        CHECK_MSG(values[i] != NULL, "%s: matrix %d's values", what, i);
        float *now = values[i] ? all_values(m) : NULL;
        CHECK_MSG(now && !memcmp(now, values[i], (size_t)m->rows * m->cols * sizeof *now),
                  "%s: matrix %d (%d x %d, r64 %d) keeps its values", what, i, m->rows, m->cols,
                  m->r64);
        free(now);
        free(values[i]);
        if (m->data == before[i]) continue; /* not copied */
        CHECK_MSG(m->r64, "%s: matrix %d copied into r64", what, i);
        CHECK_MSG(is_alloc(w, m->data), "%s: matrix %d's r64 copy tracked", what, i);
        if (private[i]) {
            CHECK_MSG(!is_alloc(w, before[i]), "%s: matrix %d's row-major copy freed", what, i);
            freed++;
        } else {
            added++;
        }
    }
    CHECK_MSG(w->n_allocs == allocs + added, "%s: %d buffers, expected %d + %d", what, w->n_allocs,
              allocs, added);
    const hv_st_tensor *emb_src =
        st ? hv_st_find(st, "transf_decoder._embedding.token_embedding.weight") : NULL;
    CHECK_MSG(w->dec.tok_emb.data == emb_data && !w->dec.tok_emb.r64 &&
                  (is_alloc(w, emb_data) || (emb_src && emb_src->data == emb_data)),
              "%s: the token embedding is read where it was, from a live buffer", what);
    float *emb_now = emb ? all_values(&w->dec.tok_emb) : NULL;
    CHECK_MSG(emb_now && !memcmp(emb_now, emb,
                                 (size_t)w->dec.tok_emb.rows * w->dec.tok_emb.cols * sizeof *emb),
              "%s: the token embedding keeps its values", what);
    free(emb_now);
    free(emb);
    /* the named list: each matrix in a tracked buffer or in the mapping */
    for (int i = 0; i < w->n_mats; i++) {
        const hv_st_tensor *src = st ? hv_st_find(st, w->mats[i].name) : NULL;
        CHECK_MSG(is_alloc(w, w->mats[i].m.data) || (src && src->data == w->mats[i].m.data),
                  "%s: named matrix %s points at a live buffer", what, w->mats[i].name);
    }
    t->freed += freed;
    t->kept += added;
}

/* A weight set built here: a 128 x 64 bf16 token embedding (a tracked
 * converted copy, named) and a classifier either tied to it or its own
 * converted copy (named too); no decoder layers. */
static void test_built(int tied) {
    enum { V = 128, H = 64 };
    hv_weights w;
    memset(&w, 0, sizeof w);
    hv_config c;
    memset(&c, 0, sizeof c);
    hv_safetensors st;
    memset(&st, 0, sizeof st);
    float *src = hv_test_noise((size_t)V * H, tied ? 7u : 8u);
    hv_error e;
    void *emb_store = NULL, *cls_store = NULL;
    w.allocs = calloc(4, sizeof *w.allocs);
    w.cap_allocs = 4;
    w.mats = calloc(2, sizeof *w.mats);
    w.cap_mats = 2;
    CHECK(src && w.allocs && w.mats);
    if (!src || !w.allocs || !w.mats) goto done;
    CHECK(hv_mat_from_f32(&w.dec.tok_emb, HV_WEIGHTS_BF16, src, V, H, &emb_store, &e) == HV_OK);
    w.allocs[w.n_allocs++] = emb_store;
    w.mats[w.n_mats++] = (hv_named_mat){"emb", w.dec.tok_emb};
    if (tied) {
        w.dec.cls = w.dec.tok_emb;
    } else {
        for (size_t i = 0; i < (size_t)V * H; i++) src[i] *= -0.5f;
        CHECK(hv_mat_from_f32(&w.dec.cls, HV_WEIGHTS_BF16, src, V, H, &cls_store, &e) == HV_OK);
        w.allocs[w.n_allocs++] = cls_store;
        w.mats[w.n_mats++] = (hv_named_mat){"cls", w.dec.cls};
    }
    tally t = {0, 0};
    check_r64_pass(&w, &c, &st, 1, tied ? "built, tied classifier" : "built, own classifier", &t);
    CHECK(w.dec.cls.r64);
    CHECK_MSG(t.freed == (tied ? 0 : 1) && t.kept == (tied ? 1 : 0),
              "built (tied %d): %d freed, %d kept", tied, t.freed, t.kept);
    if (!tied) CHECK(w.mats[1].m.data == w.dec.cls.data && w.mats[1].m.r64);
    CHECK(w.mats[0].m.data == w.dec.tok_emb.data && !w.mats[0].m.r64);
done:
    free(src);
    hv_weights_free(&w); /* frees every tracked buffer once (ASan: no leak, no double free) */
}

static void test_model_dir(const char *dir, tally *t) {
    hv_config c;
    hv_error e;
    if (hv_config_load(&c, dir, &e) != HV_OK) {
        CHECK_MSG(0, "%s: %s", dir, e.msg);
        return;
    }
    hv_safetensors st;
    if (hv_st_open_dir(&st, dir, &e) != HV_OK) {
        CHECK_MSG(0, "%s: %s", dir, e.msg);
        hv_config_free(&c);
        return;
    }
    hv_weight_type types[] = {HV_WEIGHTS_AUTO, HV_WEIGHTS_BF16};
    for (int ti = 0; ti < 2; ti++) {
        hv_weights w;
        char what[4200];
        snprintf(what, sizeof what, "%s as %s, %d threads", dir, ti ? "bf16" : "stored",
                 ti ? 3 : 1);
        if (hv_weights_load(&w, &c, &st, types[ti], &e) != HV_OK) {
            CHECK_MSG(0, "%s: %s", what, e.msg);
            continue;
        }
        check_r64_pass(&w, &c, &st, ti ? 3 : 1, what, t);
        hv_weights_free(&w);
    }
    hv_st_close(&st);
    hv_config_free(&c);
}

int main(void) {
    test_built(1);
    test_built(0);
    tally t = {0, 0};
    const char *fx = hv_test_env("HV_FIXTURES", NULL);
    char *man = fx ? hv_test_read_text(hv_test_path(fx, "manifest.json")) : NULL;
    cJSON *j = man ? cJSON_Parse(man) : NULL;
    CHECK_MSG(j != NULL, "fixtures manifest readable");
    cJSON *mo;
    cJSON_ArrayForEach(mo, cJSON_GetObjectItem(j, "models")) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s",
                 hv_test_path(fx, cJSON_GetStringValue(cJSON_GetObjectItem(mo, "path"))));
        test_model_dir(dir, &t);
    }
    cJSON_Delete(j);
    free(man);
    char demo[4096];
    snprintf(demo, sizeof demo, "%s",
             hv_test_path(hv_test_env("HV_SOURCE_DIR", "."), "models/demo"));
    test_model_dir(demo, &t);
    printf("fixtures and demo model: %d row-major copies freed, %d matrices copied beside the "
           "mapping\n",
           t.freed, t.kept);
    TEST_END();
}
