/* CPU features for the kernel tables (cpu.h). */
#include "kernels/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <cpuid.h>
#define HV_CPU_X86 1
#define HOST_ARCH  HV_ARCH_X86_64
#elif defined(__aarch64__)
#define HV_CPU_ARM64 1
#define HOST_ARCH    HV_ARCH_ARM64
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#else
#define HOST_ARCH HV_ARCH_OTHER
#endif

/* The levels HVISKE_MAX_ISA names, best last: what a CPU needs to be
 * called that level, and what the level allows as a cap. */
typedef struct cpu_level {
    const char *name;
    unsigned needs, allows;
} cpu_level;

/* Each allows the ones before it, except that "avx512" allows no VNNI. */
#define V256 (HV_CPU_AVX2 | HV_CPU_AVX_VNNI)
#define V512 (HV_CPU_AVX2 | HV_CPU_AVX512)
static const cpu_level x86_levels[] = {
    {"portable", 0, 0},
    {"avx2", HV_CPU_AVX2, HV_CPU_AVX2},
    {"avx_vnni", V256, V256},
    {"avx512", V512, V512},
    {"avx512_vnni", V512 | HV_CPU_AVX512_VNNI, V256 | V512 | HV_CPU_AVX512_VNNI},
    {"avx512_bf16", V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16,
     V256 | V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16},
    {"amx", V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16 | HV_CPU_AMX,
     V256 | V512 | HV_CPU_AVX512_VNNI | HV_CPU_AVX512_BF16 | HV_CPU_AMX},
    {NULL, 0, 0},
};
#define DP (HV_CPU_NEON | HV_CPU_DOTPROD)
static const cpu_level arm64_levels[] = {
    {"portable", 0, 0},  {"neon", HV_CPU_NEON, HV_CPU_NEON},
    {"dotprod", DP, DP}, {"i8mm", DP | HV_CPU_I8MM, DP | HV_CPU_I8MM},
    {NULL, 0, 0},
};
static const cpu_level other_levels[] = {{"portable", 0, 0}, {NULL, 0, 0}};

static const cpu_level *levels_of(hv_cpu_arch arch) {
    return arch == HV_ARCH_X86_64  ? x86_levels
           : arch == HV_ARCH_ARM64 ? arm64_levels
                                   : other_levels;
}

static hv_cpu_vendor vendor_of(const hv_cpu_regs *r) {
    char s[13];
    memcpy(s, &r->vendor_ebx, 4);
    memcpy(s + 4, &r->vendor_edx, 4);
    memcpy(s + 8, &r->vendor_ecx, 4);
    s[12] = '\0';
    if (!strcmp(s, "GenuineIntel")) return HV_VENDOR_INTEL;
    if (!strcmp(s, "AuthenticAMD")) return HV_VENDOR_AMD;
    return HV_VENDOR_OTHER;
}

static unsigned x86_features(const hv_cpu_regs *r) {
    unsigned f = 0, c = r->leaf1_ecx;
    int fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
    if (r->max_leaf < 1 || !osxsave || !avx) return 0;
    unsigned long long xcr0 = r->xcr0;
    int ymm = (xcr0 & 0x6) == 0x6;                            /* SSE and AVX state */
    int zmm = ymm && (xcr0 & 0xE0) == 0xE0;                   /* opmask, upper zmm, zmm16-31 */
    int tiles = ymm && (xcr0 & (3ull << 17)) == (3ull << 17); /* XTILECFG, XTILEDATA */
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (r->max_leaf >= 7)
        b7 = r->leaf7_ebx, c7 = r->leaf7_ecx, d7 = r->leaf7_edx, a71 = r->leaf7_1_eax;
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
    return f;
}

static unsigned arm64_features(const hv_cpu_regs *r) {
    /* Linux's HWCAP_FP (bit 0), HWCAP_ASIMD (1), HWCAP_ASIMDDP (20) and
     * HWCAP2_I8MM (13), numbered here so that old kernel headers do */
    unsigned f = 0;
    if ((r->hwcap & 3) == 3) f |= HV_CPU_NEON;
    if ((f & HV_CPU_NEON) && (r->hwcap >> 20 & 1)) f |= HV_CPU_DOTPROD;
    if ((f & HV_CPU_DOTPROD) && (r->hwcap2 >> 13 & 1)) f |= HV_CPU_I8MM;
    return f;
}

hv_cpu hv_cpu_decode(const hv_cpu_regs *r) {
    hv_cpu c = {r->arch, HV_VENDOR_OTHER, 0};
    if (r->arch == HV_ARCH_X86_64) {
        c.vendor = vendor_of(r);
        c.features = x86_features(r);
    } else if (r->arch == HV_ARCH_ARM64) {
        c.features = arm64_features(r);
    }
    return c;
}

int hv_cpu_bf16_fast(const hv_cpu *cpu) {
    return (cpu->features & HV_CPU_AMX) ||
           (cpu->vendor == HV_VENDOR_AMD && (cpu->features & HV_CPU_AVX512_BF16));
}

#ifdef HV_CPU_X86
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif

/* This CPU's registers, as hv_cpu_regs records them. */
static hv_cpu_regs read_regs(void) {
    hv_cpu_regs r;
    memset(&r, 0, sizeof r);
    r.arch = HOST_ARCH;
#ifdef HV_CPU_X86
    unsigned a, b, c, d;
    __cpuid(0, r.max_leaf, r.vendor_ebx, r.vendor_ecx, r.vendor_edx);
    if (r.max_leaf >= 1) {
        __cpuid(1, r.leaf1_eax, b, r.leaf1_ecx, d);
        if (r.leaf1_ecx >> 27 & 1) r.xcr0 = xgetbv0();
    }
    if (r.max_leaf >= 7) {
        __cpuid_count(7, 0, a, r.leaf7_ebx, r.leaf7_ecx, r.leaf7_edx);
        if (a >= 1) __cpuid_count(7, 1, r.leaf7_1_eax, b, c, d);
    }
#elif defined(HV_CPU_ARM64) && defined(__linux__)
    r.hwcap = getauxval(AT_HWCAP);
    r.hwcap2 = getauxval(AT_HWCAP2);
#elif defined(HV_CPU_ARM64)
    /* elsewhere Advanced SIMD, which every 64-bit ARM application
     * processor has (the ABI's baseline); the extensions need their OS's
     * own query, not written yet (docs/TESTING.md, "ARM64") */
    r.hwcap = 3;
#endif
    return r;
}

const char *hv_cpu_level_at(hv_cpu_arch arch, int i) {
    const cpu_level *l = levels_of(arch);
    for (int k = 0; l[k].name; k++)
        if (k == i) return l[k].name;
    return NULL;
}

int hv_cpu_level_parse_on(hv_cpu_arch arch, const char *name, unsigned *mask) {
    for (const cpu_level *l = levels_of(arch); name && l->name; l++)
        if (!strcmp(name, l->name)) {
            *mask = l->allows;
            return 0;
        }
    return -1;
}

const char *hv_cpu_level_name_on(hv_cpu_arch arch, unsigned features) {
    const cpu_level *l = levels_of(arch);
    const char *best = l[0].name;
    for (int i = 1; l[i].name; i++)
        if ((l[i].needs & features) == l[i].needs) best = l[i].name;
    return best;
}

int hv_cpu_level_parse(const char *name, unsigned *mask) {
    return hv_cpu_level_parse_on(HOST_ARCH, name, mask);
}

const char *hv_cpu_level_name(unsigned features) {
    return hv_cpu_level_name_on(HOST_ARCH, features);
}

/* Detected once; the cap read at the same moment. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static hv_cpu detected, capped;
static char cap_error[256];

static void init(void) {
    hv_cpu_regs r = read_regs();
    detected = capped = hv_cpu_decode(&r);
    const char *cap = getenv("HVISKE_MAX_ISA");
    unsigned mask;
    if (!cap || !*cap) return;
    if (hv_cpu_level_parse(cap, &mask) == 0) {
        capped.features &= mask;
        return;
    }
    int at = snprintf(cap_error, sizeof cap_error, "HVISKE_MAX_ISA '%.40s': expected ", cap);
    const cpu_level *l = levels_of(HOST_ARCH);
    for (int i = 0; l[i].name && at > 0 && (size_t)at < sizeof cap_error; i++)
        at += snprintf(cap_error + at, sizeof cap_error - (size_t)at, "%s%s",
                       i == 0           ? ""
                       : !l[i + 1].name ? " or "
                                        : ", ",
                       l[i].name);
}

hv_cpu hv_cpu_host(void) {
    pthread_once(&once, init);
    return capped;
}

unsigned hv_cpu_features(void) { return hv_cpu_host().features; }

unsigned hv_cpu_detected(void) {
    pthread_once(&once, init);
    return detected.features;
}

const char *hv_cpu_cap_error(void) {
    pthread_once(&once, init);
    return cap_error[0] ? cap_error : NULL;
}
