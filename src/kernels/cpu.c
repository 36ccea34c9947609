/* CPU features for the kernel tables (cpu.h). */
#include "kernels/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#define HV_CPU_X86 1
#endif

/* The levels HVISKE_MAX_ISA names, best last: what a CPU needs to be
 * called that level, and what the level allows as a cap (each allows the
 * ones before it, except that "avx512" allows no VNNI). */
#define V256 (HV_CPU_AVX2 | HV_CPU_AVX_VNNI)
#define V512 (HV_CPU_AVX2 | HV_CPU_AVX512)
static const struct {
    const char *name;
    unsigned needs, allows;
} levels[] = {
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
static char cap_error[160];

static void init(void) {
    detected = capped = detect();
    const char *cap = getenv("HVISKE_MAX_ISA");
    unsigned mask;
    if (!cap || !*cap) return;
    if (hv_cpu_level_parse(cap, &mask) == 0) {
        capped &= mask;
        return;
    }
    snprintf(cap_error, sizeof cap_error,
             "HVISKE_MAX_ISA '%.40s': expected portable, avx2, avx_vnni, avx512, avx512_vnni, "
             "avx512_bf16 or amx",
             cap);
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
