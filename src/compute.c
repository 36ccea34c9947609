/* The compute mode of a model (hviske.h's hv_compute): resolved at load,
 * with the bf16 matrix engine made where the CPU multiplies bf16
 * natively, and the rate of the kernels that run it (hv_model_gemm_peak). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hviske.h"
#include "diag.h"

#include "kernels/cpu.h"
#include "kernels/matmul_impl.h"
#include "kernels/onednn.h"
#include "pipeline.h"

static const char *const compute_names[] = {"auto", "f32", "bf16"};

hv_status hv_compute_parse(const char *name, hv_compute *out) {
    for (int i = 0; name && i <= HV_COMPUTE_BF16; i++)
        if (!strcmp(name, compute_names[i])) {
            *out = (hv_compute)i;
            return HV_OK;
        }
    return HV_ERR_INVALID_ARG;
}

const char *hv_compute_name(hv_compute c) {
    return (unsigned)c <= HV_COMPUTE_BF16 ? compute_names[c] : "?";
}

/* What `auto` resolves to: bf16 where the CPU multiplies bf16 natively
 * faster than our f32 (hv_cpu_bf16_fast: AMX tiles ~6x our AVX-512 f32,
 * AMD's AVX512-BF16 1.77x on Zen 4's encoder and 2x on Zen 5's), f32 on
 * our kernels elsewhere (docs/KERNELS.md, "What auto picks", has the hosts
 * and figures). */
hv_compute hv_compute_auto(hv_cpu cpu) {
    return hv_cpu_bf16_fast(&cpu) ? HV_COMPUTE_BF16 : HV_COMPUTE_F32;
}

/* AMX alone, not every hv_cpu_bf16_fast CPU: on AMD's AVX512-BF16 the
 * blocks' own VNNI kernels outrun oneDNN's bf16 (pipeline.h) */
int hv_compute_widens(hv_compute compute, int onednn_bf16, unsigned cpu, hv_weight_type type) {
    return compute == HV_COMPUTE_BF16 && onednn_bf16 && (cpu & HV_CPU_AMX) &&
           (type == HV_WEIGHTS_Q8_0 || type == HV_WEIGHTS_Q4_0);
}

hv_status hv_model_compute_init(hv_model *m, hv_compute want, hv_error *e) {
    if ((unsigned)want > HV_COMPUTE_BF16)
        return hv_err(e, HV_ERR_INVALID_ARG, "compute %d: unknown", (int)want);
    const char *env = getenv("HVISKE_COMPUTE");
    if (want == HV_COMPUTE_AUTO && env && *env && hv_compute_parse(env, &want))
        return hv_err(e, HV_ERR_INVALID_ARG, "HVISKE_COMPUTE '%.40s': expected auto, f32 or bf16",
                      env);
    const char *cap = hv_cpu_cap_error();
    if (cap) return hv_err(e, HV_ERR_INVALID_ARG, "%s", cap);
    size_t wide = 0; /* bytes of f32 matrices */
    for (int i = 0; i < m->w.n_mats; i++)
        if (m->w.mats[i].m.type == HV_WEIGHTS_F32) wide += hv_mat_bytes(&m->w.mats[i].m);
    hv_cpu host = hv_cpu_host();
    unsigned cpu = host.features;
    int native = hv_onednn_native_bf16();
    /* auto's bf16 also needs half the matrix bytes in 16-bit types
     * or fewer: an f32 checkpoint keeps f32 */
    int bf16 = want == HV_COMPUTE_BF16 ||
               (want == HV_COMPUTE_AUTO && native && hv_compute_auto(host) == HV_COMPUTE_BF16 &&
                2 * wide < m->w.mat_bytes);
    m->compute = bf16 ? HV_COMPUTE_BF16 : HV_COMPUTE_F32;
    /* without the engine (no native bf16, no shape class that the CPU's
     * class runs on it, or out of memory) bf16 is our own kernels on
     * rounded activations */
    hv_engine_classes(host, bf16, m->on_dnn);
    int uses_dnn = 0;
    for (int c = 0; c < HV_N_CLASSES; c++) uses_dnn |= m->on_dnn[c];
    if (bf16 && native && uses_dnn) m->dnn = hv_onednn_new(1);
    /* the encoder's q8_0/q4_0 blocks widened to bf16 for the engine */
    unsigned widen = 0;
    for (int t = 0; t < HV_N_WEIGHT_TYPES; t++)
        if (hv_compute_widens(m->compute, hv_onednn_is_bf16(m->dnn), cpu, (hv_weight_type)t))
            widen |= 1u << t;
    hv_status st =
        widen ? hv_weights_widen_encoder(&m->w, &m->cfg, &m->st, widen, m->n_threads, e) : HV_OK;
    if (st) return st;
    /* the kernel oneDNN runs the encoder's feed-forward with (most of its
     * arithmetic; the subsampling's small matrices come first in the
     * list and may get another), else the first matrix the engine takes */
    char impl[64] = "";
    const hv_mat *ff = m->w.enc.layers && m->cfg.enc_layers > 0 ? &m->w.enc.layers[0].ff1_up : NULL;
    if (ff && hv_onednn_takes(m->dnn, ff))
        hv_onednn_impl(m->dnn, 256, ff->cols, ff->rows, impl, sizeof impl);
    for (int i = 0; m->dnn && !impl[0] && i < m->w.n_mats; i++) {
        const hv_mat *w = &m->w.mats[i].m;
        if (hv_onednn_takes(m->dnn, w))
            hv_onednn_impl(m->dnn, 256, w->cols, w->rows, impl, sizeof impl);
    }
    if (impl[0])
        snprintf(m->gemm, sizeof m->gemm, "onednn %s", impl);
    else
        snprintf(m->gemm, sizeof m->gemm, "ours %s", hv_mm_best()->name);
    return HV_OK;
}

hv_compute hv_model_compute(const hv_model *m) { return m->compute; }

int hv_model_encoder_int8(const hv_model *m) {
    if (!m->w.enc.layers || m->cfg.enc_layers < 1) return 0;
    hv_weight_type t = m->w.enc.layers[0].ff1_up.type;
    return t == HV_WEIGHTS_Q8_0 || t == HV_WEIGHTS_Q4_0;
}
const char *hv_model_gemm(const hv_model *m) { return m->gemm; }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

double hv_model_gemm_peak(const hv_model *m, int n_threads, int n_rows) {
    if (n_rows < 1 || m->cfg.enc_layers < 1) return 0;
    const hv_enc_layer *L = &m->w.enc.layers[0];
    /* as often as a layer runs each shape: two feed-forwards, the
     * attention's four projections, its positions and the convolution's
     * second pointwise (d -> d), the first pointwise (d -> 2d) */
    const struct {
        const hv_mat *W;
        int count;
    } shapes[] = {{&L->ff1_up, 2}, {&L->ff1_down, 2}, {&L->wq, 6}, {&L->pw1, 1}};
    int most = 1;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (shapes[s].W->cols > most) most = shapes[s].W->cols;
        if (shapes[s].W->rows > most) most = shapes[s].W->rows;
    }
    hv_pool *pool = hv_pool_new(n_threads);
    hv_engine eng = hv_engine_with(pool, m->compute == HV_COMPUTE_BF16, m->dnn, m->on_dnn);
    float *x = malloc((size_t)n_rows * most * sizeof *x),
          *y = malloc((size_t)n_rows * most * sizeof *y);
    double flop = 0, secs = 0;
    if (pool && x && y) {
        for (size_t i = 0; i < (size_t)n_rows * most; i++)
            x[i] = (float)((i * 7919) % 1000) / 1000 - 0.5f;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const hv_mat *W = shapes[s].W;
            double best = 1e30;
            for (int rep = -1; rep < 3; rep++) { /* one untimed: primitives, scratch */
                double t0 = now_s();
                hv_eng_linear(&eng, y, x, n_rows, W, NULL, NULL);
                double dt = now_s() - t0;
                if (rep >= 0 && dt < best) best = dt;
            }
            flop += shapes[s].count * 2.0 * n_rows * W->rows * W->cols;
            secs += shapes[s].count * best;
        }
    }
    hv_pool_free(pool);
    free(x);
    free(y);
    return secs > 0 ? flop / secs / 1e9 : 0;
}
