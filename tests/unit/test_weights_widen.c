/* q8_0 and q4_0 encoder matrices widened to bf16 for the oneDNN bf16
 * engine (docs/QUANTIZE.md):
 * - hv_mat_widen_bf16: every value is the block's d * q rounded to bf16,
 *   nearest, ties to even, read from the blocks here (row-by-row and x8
 *   layouts, odd shapes, 1 and 3 threads, hand-made ties); other types
 *   refused;
 * - hv_compute_widens: every combination of compute mode, oneDNN bf16
 *   engine and weight type (the choice never asks the CPU);
 * - hv_weights_widen_encoder on every fixture model and the demo model
 *   loaded as q8_0 and q4_0: the encoder's blocks become those bf16
 *   matrices, the decoder keeps its own, the byte counts and the buffer
 *   list follow, the named list points at live buffers;
 * - a model loaded with bf16 compute widens exactly where hv_compute_widens
 *   says for this CPU, and hv_model_widened_weight_bytes reports it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "hviske.h"
#include "kernels/cpu.h"
#include "kernels/half.h"
#include "kernels/matmul.h"
#include "kernels/matmul_impl.h"
#include "kernels/onednn.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/weights.h"
#include "pipeline.h"
#include "testlib.h"

/* The bf16 bits of row r, column c of the row-by-row matrix W, from its
 * block: d * q in f32, rounded by hv_f32_to_bf16. */
static uint16_t expected_bits(const hv_mat *W, int r, int c) {
    size_t b = (size_t)r * (W->cols / HV_Q8_BLOCK) + (size_t)(c / HV_Q8_BLOCK);
    int t = c % HV_Q8_BLOCK;
    float d, q;
    if (W->type == HV_WEIGHTS_Q8_0) {
        const hv_q8_0_block *blk = (const hv_q8_0_block *)W->data + b;
        d = hv_f16_to_f32(blk->d);
        q = (float)blk->q[t];
    } else {
        int8_t v[HV_Q8_BLOCK];
        const hv_q4_0_block *blk = (const hv_q4_0_block *)W->data + b;
        hv_q4_0_values(blk, v);
        d = hv_f16_to_f32(blk->d);
        q = (float)v[t];
    }
    return hv_f32_to_bf16(d * q);
}

/* Widens a copy of the row-by-row W (as it is, or interleaved into x8
 * when x8) over threads and checks every value against its block. */
static void check_widen(const hv_mat *W, int x8, int threads, const char *what) {
    hv_mat m = *W;
    void *x8_store = NULL, *wide = NULL;
    hv_error e;
    if (x8 && hv_mat_interleave(&m, &x8_store, &e) != HV_OK) {
        CHECK_MSG(0, "%s: interleave: %s", what, e.msg);
        return;
    }
    hv_pool *pool = threads > 1 ? hv_pool_new(threads) : NULL;
    CHECK_MSG(hv_mat_widen_bf16(&m, &wide, pool, &e) == HV_OK, "%s: widened", what);
    hv_pool_free(pool);
    CHECK_MSG(m.type == HV_WEIGHTS_BF16 && !m.x8 && !m.r64 && m.data == wide && m.rows == W->rows &&
                  m.cols == W->cols,
              "%s: a row-major bf16 matrix of the same shape", what);
    int bad = 0;
    for (int r = 0; wide && r < W->rows; r++)
        for (int c = 0; c < W->cols; c++)
            bad += ((const uint16_t *)wide)[(size_t)r * W->cols + c] != expected_bits(W, r, c);
    CHECK_MSG(bad == 0, "%s: %d values other than d * q rounded to bf16", what, bad);
    free(wide);
    free(x8_store);
}

static void test_widen_mat(void) {
    const int shapes[][2] = {{8, 32}, {13, 96}, {24, 1056}, {40, 64}, {1, 2080}};
    const hv_weight_type types[] = {HV_WEIGHTS_Q8_0, HV_WEIGHTS_Q4_0};
    for (size_t t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int rows = shapes[s][0], cols = shapes[s][1];
            float *v = hv_test_noise((size_t)rows * cols, 31u + (unsigned)s);
            /* a spread of magnitudes: scales of many exponents */
            for (int r = 0; v && r < rows; r++)
                for (int c = 0; c < cols; c++) v[(size_t)r * cols + c] *= (float)(1 << (r % 9));
            hv_mat W;
            void *store = NULL;
            hv_error e;
            if (!v || hv_mat_from_f32(&W, types[t], v, rows, cols, &store, &e) != HV_OK) {
                CHECK_MSG(0, "%s %dx%d: made", hv_weight_type_name(types[t]), rows, cols);
                free(v);
                continue;
            }
            for (int x8 = 0; x8 <= (rows % HV_X8_ROWS == 0); x8++)
                for (int threads = 1; threads <= 3; threads += 2) {
                    char what[96];
                    snprintf(what, sizeof what, "%s %dx%d %s, %d threads",
                             hv_weight_type_name(types[t]), rows, cols, x8 ? "x8" : "row by row",
                             threads);
                    check_widen(&W, x8, threads, what);
                }
            free(store);
            free(v);
        }
    /* ties, stated as bits: d = 1 + 2^-8 and 1 + 3 * 2^-8 (f16 0x3c04,
     * 0x3c0c) times q = +-1 lie halfway between two bf16 values and go to
     * the even one; 2^-24 (the least f16) times 127 is exact */
    hv_q8_0_block blk[2] = {{0}};
    blk[0].d = 0x3c04;
    blk[0].q[0] = 1;
    blk[0].q[1] = -1;
    blk[0].q[2] = 127;
    blk[1].d = 0x3c0c;
    blk[1].q[0] = 1;
    blk[1].q[1] = -1;
    blk[1].q[2] = 3;
    hv_mat T = {HV_WEIGHTS_Q8_0, 2, 32, blk, 0, 0};
    void *wide = NULL;
    hv_error e;
    CHECK(hv_mat_widen_bf16(&T, &wide, NULL, &e) == HV_OK);
    const uint16_t *b = wide;
    /* 1 + 2^-8 -> 1.0; 1 + 3 * 2^-8 -> 1 + 2^-6 (0x3f82, even), 3 *
     * (1 + 3 * 2^-8) = 3.03515625 -> 3.03125 (0x4042) */
    CHECK_MSG(b && b[0] == 0x3f80 && b[1] == 0xbf80 && b[32] == 0x3f82 && b[33] == 0xbf82 &&
                  b[34] == 0x4042 && b[3] == 0 && b[2] == hv_f32_to_bf16(127.0f * (1 + 1.0f / 256)),
              "ties round to even: %04x %04x %04x %04x %04x", b ? b[0] : 0, b ? b[1] : 0,
              b ? b[32] : 0, b ? b[33] : 0, b ? b[34] : 0);
    free(wide);
    /* other types are refused, the matrix untouched */
    uint16_t h[32] = {0};
    hv_mat B = {HV_WEIGHTS_BF16, 1, 32, h, 0, 0}, B0 = B;
    void *none = &B;
    CHECK(hv_mat_widen_bf16(&B, &none, NULL, &e) == HV_ERR_UNSUPPORTED && none == NULL &&
          !memcmp(&B, &B0, sizeof B));
}

static void test_decision(void) {
    const hv_compute modes[] = {HV_COMPUTE_AUTO, HV_COMPUTE_F32, HV_COMPUTE_BF16};
    const unsigned cpus[] = {0, HV_CPU_AVX2,
                             HV_CPU_AVX2 | HV_CPU_AVX512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16,
                             HV_CPU_AVX2 | HV_CPU_AVX512 | HV_CPU_AVX512_BF16 | HV_CPU_AMX};
    int n = 0;
    for (size_t c = 0; c < 3; c++)
        for (int dnn = 0; dnn <= 1; dnn++)
            for (size_t u = 0; u < sizeof cpus / sizeof cpus[0]; u++)
                for (int t = 0; t < HV_N_WEIGHT_TYPES; t++) {
                    int want = modes[c] == HV_COMPUTE_BF16 && dnn && (cpus[u] & HV_CPU_AMX) &&
                               (t == HV_WEIGHTS_Q8_0 || t == HV_WEIGHTS_Q4_0);
                    int got = hv_compute_widens(modes[c], dnn, cpus[u], (hv_weight_type)t);
                    CHECK_MSG(got == want, "widens(%s, oneDNN bf16 %d, cpu %s, %s) = %d",
                              hv_compute_name(modes[c]), dnn, hv_cpu_level_name(cpus[u]),
                              hv_weight_type_name((hv_weight_type)t), got);
                    n += got;
                }
    CHECK_MSG(n == 2, "two combinations widen (bf16 compute on oneDNN with AMX, q8_0 and q4_0)");
    /* auto: bf16 with AMX, and with AVX512-BF16 on AMD; Intel's
     * AVX512-BF16 without AMX computes in f32 (the CPU matrix test has the
     * real CPUs) */
    const hv_cpu_vendor vendors[] = {HV_VENDOR_INTEL, HV_VENDOR_AMD, HV_VENDOR_OTHER};
    for (size_t v = 0; v < 3; v++)
        for (size_t u = 0; u < sizeof cpus / sizeof cpus[0]; u++) {
            hv_cpu cpu = {HV_ARCH_X86_64, vendors[v], cpus[u]};
            int bf16 = (cpus[u] & HV_CPU_AMX) ||
                       (vendors[v] == HV_VENDOR_AMD && (cpus[u] & HV_CPU_AVX512_BF16));
            CHECK_MSG(hv_compute_auto(cpu) == (bf16 ? HV_COMPUTE_BF16 : HV_COMPUTE_F32),
                      "auto on %s, vendor %d: %s", hv_cpu_level_name(cpus[u]), (int)vendors[v],
                      hv_compute_name(hv_compute_auto(cpu)));
        }
}

/* ------------------------------------------- the weights' bookkeeping */

static int is_alloc(const hv_weights *w, const void *p) {
    for (int i = 0; i < w->n_allocs; i++)
        if (w->allocs[i] == p) return 1;
    return 0;
}

static int is_encoder(const char *name) { return !strncmp(name, "encoder", 7); }

/* Widens the encoder of a model loaded as type (f32 compute: nothing
 * widened yet) and checks the result. */
static void check_model(hv_model *model, const char *dir, hv_weight_type type, void *user) {
    int *widened = user, threads = type == HV_WEIGHTS_Q8_0 ? 1 : 3;
    char what[4200];
    snprintf(what, sizeof what, "%s as %s, %d threads", dir, hv_weight_type_name(type), threads);
    hv_weights *w = &model->w;
    const hv_config *c = &model->cfg;
    const hv_safetensors *st = &model->st;
    hv_error e;
    CHECK_MSG(w->widened_bytes == 0, "%s: nothing widened in f32 compute", what);
    int n = w->n_mats;
    hv_mat *before = malloc((size_t)n * sizeof *before);
    uint16_t **want = calloc((size_t)n, sizeof *want);
    int *private = calloc((size_t)n, sizeof *private);
    if (!before || !want || !private) abort();
    size_t bytes = w->mat_bytes, grow = 0, made = 0;
    int allocs = w->n_allocs, added = 0;
    for (int i = 0; i < n; i++) {
        hv_mat *m = &w->mats[i].m;
        before[i] = *m;
        if (!is_encoder(w->mats[i].name) ||
            (m->type != HV_WEIGHTS_Q8_0 && m->type != HV_WEIGHTS_Q4_0))
            continue;
        /* the expected bits from the values (hv_mat_widen is exact) */
        want[i] = malloc((size_t)m->rows * m->cols * 2);
        float *row = malloc((size_t)m->cols * sizeof *row);
        if (!want[i] || !row) abort();
        for (int r = 0; r < m->rows; r++) {
            hv_mat_row_f32(m, r, row);
            for (int k = 0; k < m->cols; k++)
                want[i][(size_t)r * m->cols + k] = hv_f32_to_bf16(row[k]);
        }
        free(row);
        private[i] = is_alloc(w, m->data);
        added += !private[i];
        hv_mat wide = {HV_WEIGHTS_BF16, m->rows, m->cols, NULL, 0, 0};
        grow += hv_mat_bytes(&wide) - hv_mat_bytes(m);
        made += hv_mat_bytes(&wide);
    }
    /* the wrong type in the mask changes nothing */
    unsigned other = 1u << (type == HV_WEIGHTS_Q8_0 ? HV_WEIGHTS_Q4_0 : HV_WEIGHTS_Q8_0);
    CHECK_MSG(hv_weights_widen_encoder(w, c, st, other, threads, &e) == HV_OK &&
                  w->mat_bytes == bytes && w->widened_bytes == 0 && w->n_allocs == allocs,
              "%s: another type's mask widens nothing", what);
    CHECK_MSG(hv_weights_widen_encoder(w, c, st, 1u << type, threads, &e) == HV_OK, "%s: %s", what,
              e.msg);
    CHECK_MSG(w->mat_bytes == bytes + grow && w->widened_bytes == made,
              "%s: bytes %zu (want %zu), widened %zu (want %zu)", what, w->mat_bytes, bytes + grow,
              w->widened_bytes, made);
    CHECK_MSG(w->n_allocs == allocs + added, "%s: %d buffers, want %d + %d", what, w->n_allocs,
              allocs, added);
    for (int i = 0; i < n; i++) {
        const hv_mat *m = &w->mats[i].m;
        const hv_st_tensor *src = hv_st_find(st, w->mats[i].name);
        CHECK_MSG(is_alloc(w, m->data) || (src && src->data == m->data),
                  "%s: %s points at a live buffer", what, w->mats[i].name);
        if (!want[i]) {
            CHECK_MSG(!memcmp(m, &before[i], sizeof *m), "%s: %s (%s) kept as it was", what,
                      w->mats[i].name, hv_weight_type_name(m->type));
            continue;
        }
        CHECK_MSG(m->type == HV_WEIGHTS_BF16 && !m->x8 && !m->r64 && is_alloc(w, m->data),
                  "%s: %s widened to row-major bf16", what, w->mats[i].name);
        /* (a later widening may have been given the freed address) */
        int reused = 0;
        for (int k = 0; k < n; k++) reused |= w->mats[k].m.data == before[i].data;
        CHECK_MSG(!private[i] || reused || !is_alloc(w, before[i].data), "%s: %s's blocks freed",
                  what, w->mats[i].name);
        CHECK_MSG(m->type == HV_WEIGHTS_BF16 &&
                      !memcmp(m->data, want[i], (size_t)m->rows * m->cols * 2),
                  "%s: %s holds its blocks' values rounded to bf16", what, w->mats[i].name);
        free(want[i]);
        (*widened)++;
    }
    /* the struct the encoder reads names the same matrices */
    if (w->enc.layers && c->enc_layers > 0) {
        const hv_enc_layer *y = &w->enc.layers[c->enc_layers - 1];
        const hv_mat *some[] = {&y->ff1_up, &y->wq, &y->wpos, &y->pw1, &y->ff2_down};
        for (size_t s = 0; s < sizeof some / sizeof some[0]; s++) {
            int named = 0;
            for (int i = 0; i < n; i++) named |= w->mats[i].m.data == some[s]->data;
            CHECK_MSG(named && some[s]->type != HV_WEIGHTS_Q8_0 && some[s]->type != HV_WEIGHTS_Q4_0,
                      "%s: the last layer's matrix %zu is the named one, not blocks", what, s);
        }
    }
    free(before), free(want), free(private);
}

/* Through the public API: bf16 compute widens where this CPU's oneDNN
 * multiplies bf16 (hv_compute_widens decides), f32 never. */
static void test_model_load(const char *dir) {
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        hv_model_params p = hv_model_default_params();
        p.weight_type = HV_WEIGHTS_Q8_0;
        p.compute = bf16 ? HV_COMPUTE_BF16 : HV_COMPUTE_F32;
        p.n_threads = 2;
        hv_model *m = NULL;
        char err[512];
        if (hv_model_load(dir, &p, &m, err, sizeof err) != HV_OK) {
            CHECK_MSG(0, "%s: %s", dir, err);
            continue;
        }
        int widens = hv_compute_widens(hv_model_compute(m), hv_onednn_native_bf16(),
                                       hv_cpu_features(), HV_WEIGHTS_Q8_0);
        size_t wide = hv_model_widened_weight_bytes(m);
        CHECK_MSG(widens ? wide > 0 && wide < hv_model_weight_bytes(m) : wide == 0,
                  "%s, %s compute: %zu bytes widened (widens here: %d)", dir, bf16 ? "bf16" : "f32",
                  wide, widens);
        /* the kernels reported: oneDNN's exactly where its bf16 engine
         * runs the (widened) encoder, with the name of its implementation */
        const char *gemm = hv_model_gemm(m);
        CHECK_MSG(widens ? !strncmp(gemm, "onednn ", 7) && gemm[7] : !strncmp(gemm, "ours ", 5),
                  "%s, %s compute: gemm \"%s\"", dir, bf16 ? "bf16" : "f32", gemm);
        printf("%s compute on this CPU: %zu of %zu weight bytes widened to bf16, gemm %s\n",
               bf16 ? "bf16" : "f32", wide, hv_model_weight_bytes(m), gemm);
        hv_model_free(m);
    }
}

int main(void) {
    test_widen_mat();
    test_decision();
    /* f32 compute at load on any CPU, so that the encoder is widened
     * here and not by the load */
    setenv("HVISKE_COMPUTE", "f32", 1);
    int widened = 0;
    const hv_weight_type types[] = {HV_WEIGHTS_Q8_0, HV_WEIGHTS_Q4_0};
    CHECK_MSG(hv_test_each_model(types, 2, check_model, &widened) > 0, "fixture models");
    char demo[4096];
    snprintf(demo, sizeof demo, "%s",
             hv_test_path(hv_test_env("HV_SOURCE_DIR", "."), "models/demo"));
    CHECK_MSG(widened > 0, "some encoder matrix was widened (%d)", widened);
    printf("fixtures and demo model: %d encoder matrices widened\n", widened);
    test_model_load(demo);
    TEST_END();
}
