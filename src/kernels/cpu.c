/* CPU features for the kernel tables (cpu.h). */
#include "kernels/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#define HV_CPU_X86 1
#elif defined(__aarch64__)
#define HV_CPU_ARM64 1
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

/* The levels HVISKE_MAX_ISA names, best last: what a CPU needs to be
 * called that level, and what the level allows as a cap. */
typedef struct cpu_level {
    const char *name;
    unsigned needs, allows;
} cpu_level;
#ifdef HV_CPU_X86
/* Each allows the ones before it, except that "avx512" allows no VNNI. */
#define V256 (HV_CPU_AVX2 | HV_CPU_AVX_VNNI)
#define V512 (HV_CPU_AVX2 | HV_CPU_AVX512)
static const cpu_level levels[] = {
    {"portable", 0, 0},
    {"avx2", HV_CPU_AVX2, HV_CPU_AVX2},
    {"avx_vnni", V256, V256},
    {"avx512", V512, V512},
    {"avx512_vnni", V512 | HV_CPU_AVX512_VNNI, V256 | V512 | HV_CPU_AVX512_VNNI},
    {"avx512_bf16", V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16,
     V256 | V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16},
    {"amx", V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16 | HV_CPU_AMX,
     V256 | V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16 | HV_CPU_AMX},
};
#elif defined(HV_CPU_ARM64)
#define DP (HV_CPU_NEON | HV_CPU_DOTPROD)
static const cpu_level levels[] = {
    {"portable", 0, 0},
    {"neon", HV_CPU_NEON, HV_CPU_NEON},
    {"dotprod", DP, DP},
    {"i8mm", DP | HV_CPU_I8MM, DP | HV_CPU_I8MM},
};
#else
static const cpu_level levels[] = {{"portable", 0, 0}};
#endif
#define N_LEVELS (int)(sizeof levels / sizeof levels[0])

#ifdef HV_CPU_X86
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif

static unsigned detect(void) {
    unsigned f = 0;
#ifdef HV_CPU_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
    if (!osxsave || !avx) return 0;
    unsigned long long xcr0 = xgetbv0();
    int ymm = (xcr0 & 0x6) == 0x6;                            /* SSE and AVX state */
    int zmm = ymm && (xcr0 & 0xE0) == 0xE0;                   /* opmask, upper zmm, zmm16-31 */
    int tiles = ymm && (xcr0 & (3ull << 17)) == (3ull << 17); /* XTILECFG, XTILEDATA */
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d7);
        unsigned bx, cx, dx;
        __cpuid_count(7, 1, a71, bx, cx, dx);
    }
    if (ymm && fma && f16c && (b7 >> 5 & 1)) f |= HV_CPU_AVX2;
    if ((f & HV_CPU_AVX2) && (a71 >> 4 & 1)) f |= HV_CPU_AVX_VNNI;
    /* F (16), DQ (17), BW (30), VL (31) */
    unsigned need512 = 1u << 16 | 1u << 17 | 1u << 30 | 1u << 31;
    if ((f & HV_CPU_AVX2) && zmm && (b7 & need512) == need512) f |= HV_CPU_AVX512;
    if ((f & HV_CPU_AVX512) && (c7 >> 11 & 1)) f |= HV_CPU_AVX512_VNNI;
    if ((f & HV_CPU_AVX512) && (a71 >> 5 & 1)) f |= HV_CPU_AVX512_BF16;
    /* AMX-BF16 (22), AMX-TILE (24), AMX-INT8 (25) */
    unsigned amx = 1u << 22 | 1u << 24 | 1u << 25;
    if ((f & HV_CPU_AVX512) && tiles && (d7 & amx) == amx) f |= HV_CPU_AMX;
#elif defined(HV_CPU_ARM64) && defined(__linux__)
    /* Linux's HWCAP_FP (bit 0), HWCAP_ASIMD (1), HWCAP_ASIMDDP (20) and
     * HWCAP2_I8MM (13), numbered here so that old kernel headers do */
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if ((hw & 3) == 3) f |= HV_CPU_NEON;
    if ((f & HV_CPU_NEON) && (hw >> 20 & 1)) f |= HV_CPU_DOTPROD;
    if ((f & HV_CPU_DOTPROD) && (hw2 >> 13 & 1)) f |= HV_CPU_I8MM;
#elif defined(HV_CPU_ARM64)
    /* elsewhere Advanced SIMD, which every 64-bit ARM application
     * processor has (the ABI's baseline); the extensions need their OS's
     * own query, not written yet (docs/TESTING.md, "ARM64") */
    f |= HV_CPU_NEON;
#endif
    return f;
}

int hv_cpu_level_parse(const char *name, unsigned *mask) {
    for (int i = 0; name && i < N_LEVELS; i++)
        if (!strcmp(name, levels[i].name)) {
            *mask = levels[i].allows;
            return 0;
        }
    return -1;
}

const char *hv_cpu_level_name(unsigned features) {
    for (int i = N_LEVELS - 1; i > 0; i--)
        if ((levels[i].needs & features) == levels[i].needs) return levels[i].name;
    return levels[0].name;
}

/* Detected once; the cap read at the same moment. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static unsigned detected, capped;
static char cap_error[256];

static void init(void) {
    detected = capped = detect();
    const char *cap = getenv("HVISKE_MAX_ISA");
    unsigned mask;
    if (!cap || !*cap) return;
    if (hv_cpu_level_parse(cap, &mask) == 0) {
        capped &= mask;
        return;
    }
    int at = snprintf(cap_error, sizeof cap_error, "HVISKE_MAX_ISA '%.40s': expected ", cap);
    for (int i = 0; i < N_LEVELS && at > 0 && (size_t)at < sizeof cap_error; i++)
        at += snprintf(cap_error + at, sizeof cap_error - (size_t)at, "%s%s",
                       i == 0              ? ""
                       : i == N_LEVELS - 1 ? " or "
                                           : ", ",
                       levels[i].name);
}

unsigned hv_cpu_features(void) {
    pthread_once(&once, init);
    return capped;
}

unsigned hv_cpu_detected(void) {
    pthread_once(&once, init);
    return detected;
}

const char *hv_cpu_cap_error(void) {
    pthread_once(&once, init);
    return cap_error[0] ? cap_error : NULL;
}
