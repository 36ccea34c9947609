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
 * (docs/KERNELS.md, "Kernel tables").
 *
 * The decoding is a pure function of the registers (hv_cpu_decode), for
 * either architecture on any host, so that the test suite runs the
 * recorded registers of real CPUs through the same code the engine runs
 * (tests/unit/test_cpu_matrix.c). */
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

typedef enum hv_cpu_arch { HV_ARCH_OTHER, HV_ARCH_X86_64, HV_ARCH_ARM64 } hv_cpu_arch;

/* Who made an x86 CPU (CPUID leaf 0's string): `auto` follows figures
 * measured per class, and the same instructions run at different rates on
 * different vendors' cores (AVX512-BF16: 2x f32 on AMD Zen 4 and 5, slower
 * than f32 on Intel without AMX). */
typedef enum hv_cpu_vendor { HV_VENDOR_OTHER, HV_VENDOR_INTEL, HV_VENDOR_AMD } hv_cpu_vendor;

/* What the detector reads. x86-64: CPUID leaf 0 (EAX, and the vendor
 * string in EBX, EDX, ECX), leaf 1 (EAX, ECX), leaf 7 subleaf 0 (EBX,
 * ECX, EDX) and subleaf 1 (EAX), each 0 where the CPU reports no such
 * leaf, and XCR0 (0 without OSXSAVE). 64-bit ARM: Linux's AT_HWCAP and
 * AT_HWCAP2. */
typedef struct hv_cpu_regs {
    hv_cpu_arch arch;
    unsigned max_leaf, vendor_ebx, vendor_edx, vendor_ecx;
    unsigned leaf1_eax, leaf1_ecx;
    unsigned leaf7_ebx, leaf7_ecx, leaf7_edx, leaf7_1_eax;
    unsigned long long xcr0;
    unsigned long long hwcap, hwcap2;
} hv_cpu_regs;

/* A CPU as the engine sees it: its architecture, its vendor, and the
 * feature bits above. */
typedef struct hv_cpu {
    hv_cpu_arch arch;
    hv_cpu_vendor vendor;
    unsigned features;
} hv_cpu;

/* The CPU the registers describe (a pure function). */
hv_cpu hv_cpu_decode(const hv_cpu_regs *r);

/* Whether the CPU multiplies bf16 natively faster than our f32 kernels:
 * AMX's tiles (any vendor), or AVX512-BF16 on AMD (Zen 4, Zen 5, where
 * vdpbf16ps does twice an FMA's multiply-adds); not Intel's AVX512-BF16
 * without AMX, measured slower than our f32. The one rule behind auto's
 * bf16 (hv_compute_auto) and the shape classes that run on oneDNN
 * (engine_class.c): the figures per class are in docs/KERNELS.md ("Engines
 * by shape class", "What auto picks") and docs/PERFORMANCE.md, and a new
 * CPU class is one edit here. A pure function. */
int hv_cpu_bf16_fast(const hv_cpu *cpu);

/* This CPU: detected once, then capped by HVISKE_MAX_ISA (unset or empty:
 * no cap; a value that is not a level's name: no cap either, and
 * hv_cpu_cap_error says so). */
hv_cpu hv_cpu_host(void);

/* hv_cpu_host().features, and the same before any cap. */
unsigned hv_cpu_features(void);
unsigned hv_cpu_detected(void);

/* The levels HVISKE_MAX_ISA names on an architecture, best last: the name
 * of level i, or NULL past the last. x86-64: "portable", "avx2",
 * "avx_vnni", "avx512", "avx512_vnni", "avx512_bf16", "amx"; 64-bit ARM:
 * "portable", "neon", "dotprod", "i8mm"; elsewhere "portable" alone. */
const char *hv_cpu_level_at(hv_cpu_arch arch, int i);

/* The features a level's name lets through as a cap: 0 and *mask set, or
 * -1 for a name that is not one of the architecture's levels. A level lets
 * through the features of the levels before it, except that "avx512"
 * lets no VNNI through; it removes what is above it and keeps what a CPU
 * of that level may have beside it (a CPU at "avx512_bf16" keeps AVX-VNNI
 * if it has it: Zen 5 has, Zen 4 has not). So capping a CPU at its own
 * level (hv_cpu_level_name) leaves its features as they are. */
int hv_cpu_level_parse_on(hv_cpu_arch arch, const char *name, unsigned *mask);

/* The name of the best level of the architecture whose features all lie
 * within `features` (down to "portable"). */
const char *hv_cpu_level_name_on(hv_cpu_arch arch, unsigned features);

/* The same for this build's architecture. */
int hv_cpu_level_parse(const char *name, unsigned *mask);
const char *hv_cpu_level_name(unsigned features);

/* NULL when HVISKE_MAX_ISA is unset or names a level; else a message that
 * names the value and the levels (for the loader to report). */
const char *hv_cpu_cap_error(void);

#endif
