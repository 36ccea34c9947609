/* What the CPU and the OS let the kernels use: the one place that asks.
 *
 * Each feature bit is a set of instructions a kernel table needs, present
 * in the CPU and enabled by the OS, so that a table chosen by these bits
 * never faults: on x86 CPUID, with XCR0 for the registers the OS saves; on
 * 64-bit ARM the hardware capabilities Linux reports (getauxval AT_HWCAP
 * and AT_HWCAP2, which the kernel sets only for what it supports). An
 * architecture's bits are never set on the other. Detected once;
 * HVISKE_MAX_ISA caps the result, as ONEDNN_MAX_CPU_ISA caps oneDNN, so that
 * tests and comparisons can run a lesser instruction set on a better CPU
 * (docs/KERNELS.md, "Kernel tables"). */
#ifndef HV_CPU_H
#define HV_CPU_H

enum {
    HV_CPU_AVX2 = 1u << 0,        /* AVX2, FMA and F16C: the AVX2 kernels need all three */
    HV_CPU_AVX_VNNI = 1u << 1,    /* AVX-VNNI: vpdpbusd on 256-bit registers (VEX) */
    HV_CPU_AVX512 = 1u << 2,      /* AVX-512 F, BW, DQ and VL, zmm state saved by the OS */
    HV_CPU_AVX512_VNNI = 1u << 3, /* AVX512-VNNI: vpdpbusd on 512-bit registers */
    HV_CPU_AVX512_BF16 = 1u << 4, /* AVX512-BF16: vdpbf16ps */
    HV_CPU_AMX = 1u << 5,         /* AMX-TILE with AMX-BF16 and AMX-INT8, tile state saved */
    HV_CPU_NEON = 1u << 8,        /* 64-bit ARM's Advanced SIMD (asimd) with FP: the NEON kernels */
    HV_CPU_DOTPROD = 1u << 9,     /* sdot/udot (asimddp, Armv8.2-A DotProd) */
    HV_CPU_I8MM = 1u << 10,       /* smmla/usmmla (i8mm, Armv8.6-A Int8 matrix multiply) */
};

/* The features of this CPU as the kernels may use them: detected once,
 * then capped by HVISKE_MAX_ISA (unset or empty: no cap; a value that is
 * not a level's name: no cap either, and hv_cpu_cap_error says so). */
unsigned hv_cpu_features(void);

/* What the CPU and the OS allow, before any cap. */
unsigned hv_cpu_detected(void);

/* The features a level's name allows: 0 and *mask set, or -1 for a name
 * that is not one of this architecture's levels. x86-64: "portable",
 * "avx2", "avx_vnni", "avx512", "avx512_vnni", "avx512_bf16", "amx" (each
 * includes the ones before it, except that "avx512" has no VNNI); 64-bit
 * ARM: "portable", "neon", "dotprod", "i8mm" (each includes the ones
 * before it); elsewhere "portable" alone. */
int hv_cpu_level_parse(const char *name, unsigned *mask);

/* The name of the best level whose features all lie within `features`
 * (down to "portable"), as hv_cpu_level_parse reads it. */
const char *hv_cpu_level_name(unsigned features);

/* NULL when HVISKE_MAX_ISA is unset or names a level; else a message that
 * names the value and the levels (for the loader to report). */
const char *hv_cpu_cap_error(void);

#endif
