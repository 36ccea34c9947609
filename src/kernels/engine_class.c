/* Which engine runs each shape class, per CPU class (engine.h,
 * hv_engine_pick; docs/KERNELS.md, "Engines by shape class"). */
#include "kernels/engine.h"

hv_shape_class hv_shape_class_rows(int n) {
    return n <= HV_LINEAR_GEMV_MAX_N    ? HV_CLASS_GEMV
           : n <= HV_CLASS_SKINNY_MAX_N ? HV_CLASS_SKINNY
                                        : HV_CLASS_GEMM;
}

/* bf16 compute, first match wins: a row per class, so that a class can
 * take other CPUs than the rest; each row names its CPUs by a predicate
 * (cpu.h: hv_cpu_bf16_fast for the three below). The figures are 2 threads, the full-size random
 * model's shapes (d 1280, bench/make_full_model.py).
 * - GEMV: a decoder step reads every weight once and is bound by memory;
 *   ours runs at it (Xeon VM with AMX, 2026-12-06: bf16 step 10.93 ms,
 *   0.95x the bound of 23.7 GB/s; Zen 4 EPYC VM, 2026-12-05: 10.7 ms).
 * - Skinny and GEMM products with weights, on AMX: oneDNN's tiles (Xeon VM
 *   with AMX, 2026-12-06, bench-kernels onednn, HV_ROWS: 17 rows 287-450
 *   GFLOP/s against ours 153-158, 64 rows 881-971 against 218-258, 375
 *   rows 1156-1299 against 276-310). On AMD's AVX512-BF16 (Zen 4, Zen 5):
 *   oneDNN's vdpbf16ps kernels (Zen 4 EPYC VM, 2026-12-05, 375 rows:
 *   358-445 against f32 163-228; the encoder 1.77x; Zen 5 2x). On
 *   Intel's AVX512-BF16 without AMX: ours (the Xeon VM with oneDNN held to
 *   avx512_core_bf16, 2026-12-06, 375 rows: 184-197 against ours 271-310).
 * - The attention's per-head products (bf16 x bf16, the Xeon VM with AMX,
 *   2026-12-06, one thread, 30 s shapes): oneDNN's tiles 371-938 GFLOP/s
 *   against a vdpbf16ps kernel of 6 x 64 tiles 88-109 (plus packing its
 *   right-hand side); oneDNN held to avx512_core_bf16 94-109, the same
 *   rate as that kernel, so the CPUs whose products run on oneDNN run
 *   these there too, and the others on ours (f32 GEMMs of the rounded
 *   operands: 349 us against oneDNN's avx512_core_bf16 431-488 us for the
 *   384 x 384 x 160 scores on that Xeon).
 * - Convolutions: ours (direct loops; 3.8% of the 30 s bf16 encoder). */
static const struct {
    hv_shape_class cls;
    int (*cpu_ok)(const hv_cpu *); /* the CPU classes the row holds for */
    hv_engine_kind kind;
} rules[] = {
    {HV_CLASS_SKINNY, hv_cpu_bf16_fast, HV_ENGINE_ONEDNN},
    {HV_CLASS_GEMM, hv_cpu_bf16_fast, HV_ENGINE_ONEDNN},
    {HV_CLASS_ATTENTION, hv_cpu_bf16_fast, HV_ENGINE_ONEDNN},
};

hv_engine_kind hv_engine_pick(hv_cpu cpu, int bf16, hv_shape_class cls) {
    if (!bf16) return HV_ENGINE_OURS;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].cls == cls && rules[i].cpu_ok(&cpu)) return rules[i].kind;
    return HV_ENGINE_OURS;
}
