/* The CPU matrix: the detector's inputs recorded on real CPUs, run through
 * the code the engine runs (hv_cpu_decode, the levels, the kernel-table
 * choice, the fast-bf16 rule, auto), with what each row must give written
 * by hand from the vendors' documents (Intel's and AMD's instruction set
 * references and product briefs, Arm's Neoverse and Linux's arm64 hwcap
 * documentation): never generated from the code under test. A rule about
 * CPU classes holds for the classes no test host has only if this matrix
 * shows it.
 *
 * x86-64 rows: CPUID leaf 0 (max leaf, vendor EBX EDX ECX), leaf 1 (EAX,
 * ECX), leaf 7.0 (EBX, ECX, EDX), leaf 7.1 (EAX), as dumped from each CPU
 * by AIDA64 (the InstLatx64 collection of CPUID dumps; file names in the
 * comments), and XCR0 as Linux enables it: leaf 0xD's supported user
 * states less MPX (x87, SSE, AVX, opmask, zmm, PKRU, tile config and
 * data). 64-bit ARM rows: AT_HWCAP and AT_HWCAP2 as Linux sets them for
 * the features its /proc/cpuinfo lists on that CPU (the line in the
 * comment; bits from arch/arm64/include/uapi/asm/hwcap.h). */
#include <string.h>

#include "kernels/cpu.h"
#include "kernels/engine.h"
#include "kernels/matmul_impl.h"
#include "kernels/ops.h"
#include "pipeline.h"
#include "testlib.h"

typedef struct cpu_row {
    const char *name;
    hv_cpu_regs regs;
    /* expected, by hand */
    const char *level;   /* hv_cpu_level_name */
    const char *matrix;  /* the matrix kernel table */
    const char *ops;     /* the element-wise table */
    hv_compute compute;  /* what auto computes in */
    int widens;          /* q8_0/q4_0 widened to bf16 under auto */
    const char *caps;    /* the level each HVISKE_MAX_ISA cap leaves, in the levels' order */
    const char *engines; /* in bf16 compute, the engine of each shape class in hv_shape_class's
                          * order (GEMV, skinny, GEMM, attention, convolutions) */
} cpu_row;

/* vendor: AMD or INTEL below, the three registers of the vendor string */
#define X86(max, vendor, a1, c1, b7, c7, d7, a71, xcr0)                                            \
    { HV_ARCH_X86_64, max, vendor, a1, c1, b7, c7, d7, a71, xcr0, 0, 0 }
#define ARM(hw, hw2)                                                                               \
    { HV_ARCH_ARM64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, hw, hw2 }
#define AMD   0x68747541, 0x69746e65, 0x444d4163 /* "AuthenticAMD" */
#define INTEL 0x756e6547, 0x49656e69, 0x6c65746e /* "GenuineIntel" */
#define F32   HV_COMPUTE_F32
#define BF16  HV_COMPUTE_BF16

static const cpu_row rows[] = {
    /* AMD: Zen 2 and 3 have AVX2 + FMA + F16C, no AVX-512 */
    {"AMD EPYC 7002 (Zen 2, Rome)", /* AuthenticAMD0830F10_K17_Rome_CPUID.txt */
     X86(0x10, AMD, 0x00830f10, 0x7ef8320b, 0x219c91a9, 0x00400004, 0, 0, 0x207), "avx2", "avx2",
     "avx2", F32, 0, "portable avx2 avx2 avx2 avx2 avx2 avx2", "ours ours ours ours ours"},
    {"AMD EPYC 7003 (Zen 3, Milan)", /* AuthenticAMD0A00F11_K19_Milan_CPUID1.txt */
     X86(0x10, AMD, 0x00a00f11, 0x7eda320b, 0x219c97a9, 0x0040068c, 0x10, 0, 0x207), "avx2", "avx2",
     "avx2", F32, 0, "portable avx2 avx2 avx2 avx2 avx2 avx2", "ours ours ours ours ours"},
    /* Zen 4: AVX-512 F/CD/BW/DQ/VL, VNNI, BF16; no AVX-VNNI, no AMX */
    {"AMD EPYC 9004 (Zen 4, Genoa)", /* AuthenticAMD0A10F11_K19_Genoa_01_CPUID.txt */
     X86(0x10, AMD, 0x00a10f11, 0x7efa320b, 0xf1bf97a9, 0x00415fce, 0x10000010, 0x20, 0x2e7),
     "avx512_bf16", "avx512_vnni", "avx512", BF16, 0,
     "portable avx2 avx2 avx512 avx512_vnni avx512_bf16 avx512_bf16",
     "ours onednn onednn onednn ours"},
    {"AMD Ryzen 7000 (Zen 4, Raphael)", /* AuthenticAMD0A60F12_K19_Raphael_01_CPUID.txt */
     X86(0x10, AMD, 0x00a60f12, 0x7ef8320b, 0xf1bf97a9, 0x00405fce, 0x10000010, 0x20, 0x2e7),
     "avx512_bf16", "avx512_vnni", "avx512", BF16, 0,
     "portable avx2 avx2 avx512 avx512_vnni avx512_bf16 avx512_bf16",
     "ours onednn onednn onednn ours"},
    /* Zen 5: Zen 4's set and AVX-VNNI */
    {"AMD EPYC 9005 (Zen 5, Turin)", /* AuthenticAMD0B00F21_K20_Turin_01_CPUID.txt */
     X86(0x10, AMD, 0x00b00f21, 0x7efa320b, 0xf1bf97ab, 0x19415fce, 0x10000110, 0x30, 0x2e7),
     "avx512_bf16", "avx512_vnni", "avx512", BF16, 0,
     "portable avx2 avx_vnni avx512 avx512_vnni avx512_bf16 avx512_bf16",
     "ours onednn onednn onednn ours"},
    /* Intel Xeon: Skylake-SP AVX-512 without VNNI; Cascade Lake and Ice
     * Lake-SP with AVX512-VNNI, no BF16, no AVX-VNNI */
    {"Intel Xeon Scalable 1st gen (Skylake-SP)", /* GenuineIntel0050654_SkylakeXeon_CPUID.txt */
     X86(0x16, INTEL, 0x00050654, 0x7ffefbff, 0xd39ffffb, 0x00000008, 0, 0, 0x2e7), "avx512",
     "avx512", "avx512", F32, 0, "portable avx2 avx2 avx512 avx512 avx512 avx512",
     "ours ours ours ours ours"},
    {"Intel Xeon Scalable 2nd gen (Cascade Lake)", /* GenuineIntel0050657_CascadeLakeSP_CPUID1 */
     X86(0x16, INTEL, 0x00050657, 0x7ffefbff, 0xd39ffffb, 0x00000808, 0xbc000400, 0, 0x2e7),
     "avx512_vnni", "avx512_vnni", "avx512", F32, 0,
     "portable avx2 avx2 avx512 avx512_vnni avx512_vnni avx512_vnni", "ours ours ours ours ours"},
    {"Intel Xeon Scalable 3rd gen (Ice Lake-SP)", /* GenuineIntel00606A6_ICX_04_CPUID.txt */
     X86(0x1b, INTEL, 0x000606a6, 0x7ffefbff, 0xf3bfbfff, 0x40417f4e, 0xbc040412, 0, 0x2e7),
     "avx512_vnni", "avx512_vnni", "avx512", F32, 0,
     "portable avx2 avx2 avx512 avx512_vnni avx512_vnni avx512_vnni", "ours ours ours ours ours"},
    /* Sapphire and Granite Rapids: AMX (tile, bf16, int8), AVX512-BF16,
     * AVX-VNNI */
    {"Intel Xeon Scalable 4th gen (Sapphire Rapids)", /* GenuineIntel00806F8_SapphireRapids_05 */
     X86(0x20, INTEL, 0x000806f8, 0x7ffefbff, 0xf3bfbffb, 0xbb417fee, 0xffdd4430, 0x1c30, 0x602e7),
     "amx", "avx512_vnni", "avx512", BF16, 1,
     "portable avx2 avx_vnni avx512 avx512_vnni avx512_bf16 amx", "ours onednn onednn onednn ours"},
    {"Intel Xeon 6 (Granite Rapids)", /* GenuineIntel00A06D1_GraniteRapids_03_CPUID.txt */
     X86(0x24, INTEL, 0x000a06d1, 0x7ffefbff, 0xf3bfbffb, 0xbb417fee, 0xffdd4430, 0x40201d30,
         0x602e7),
     "amx", "avx512_vnni", "avx512", BF16, 1,
     "portable avx2 avx_vnni avx512 avx512_vnni avx512_bf16 amx", "ours onednn onednn onednn ours"},
    /* Raptor Lake (as Alder Lake): AVX2 and AVX-VNNI, AVX-512 fused off */
    {"Intel Core 13th gen (Raptor Lake)", /* GenuineIntel00B0671_RaptorLake_01_CPUID.txt */
     X86(0x20, INTEL, 0x000b0671, 0x7ffafbff, 0x239c27eb, 0x98c027ac, 0xfc1cc410, 0x00400810,
         0x207),
     "avx_vnni", "avx_vnni", "avx2", F32, 0,
     "portable avx2 avx_vnni avx2 avx_vnni avx_vnni avx_vnni", "ours ours ours ours ours"},
    {"Intel Xeon E5 v3 (Haswell-EP)", /* GenuineIntel00306F2_HaswellEP_CPUID.txt */
     X86(0xf, INTEL, 0x000306f2, 0x7dfefbff, 0x00003fbb, 0, 0, 0, 0x7), "avx2", "avx2", "avx2", F32,
     0, "portable avx2 avx2 avx2 avx2 avx2 avx2", "ours ours ours ours ours"},
    /* AVX without AVX2: the portable kernels */
    {"Intel Xeon E5 v2 (Ivy Bridge-EP)", /* GenuineIntel00306E4_IvyBridgeEP_CPUID.txt */
     X86(0xd, INTEL, 0x000306e4, 0x7fbee3ff, 0x00000281, 0, 0, 0, 0x7), "portable", "scalar",
     "portable", F32, 0, "portable portable portable portable portable portable portable",
     "ours ours ours ours ours"},
    /* 64-bit ARM: Neoverse N1 has DotProd, V1 and V2 I8MM too */
    {"AWS Graviton 2 (Neoverse N1)",
     /* fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid
      * asimdrdm lrcpc dcpop asimddp ssbs */
     ARM(0x10119fff, 0), "dotprod", "dotprod", "neon", F32, 0, "portable neon dotprod dotprod",
     "ours ours ours ours ours"},
    {"AWS Graviton 3 (Neoverse V1)",
     /* ... jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit
      * uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng */
     ARM(0xdfffffff, 0x1f201), "i8mm", "i8mm", "neon", F32, 0, "portable neon dotprod i8mm",
     "ours ours ours ours ours"},
    {"AWS Graviton 4 (Neoverse V2)",
     /* ... sb paca pacg dcpodp sve2 sveaes svepmull svebitperm svesha3 flagm2
      * frint svei8mm svebf16 i8mm bf16 dgh rng bti */
     ARM(0xfff3ffff, 0x3f3bf), "i8mm", "i8mm", "neon", F32, 0, "portable neon dotprod i8mm",
     "ours ours ours ours ours"},
    {"Ampere Altra (Neoverse N1)",
     /* fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid
      * asimdrdm lrcpc dcpop asimddp */
     ARM(0x119fff, 0), "dotprod", "dotprod", "neon", F32, 0, "portable neon dotprod dotprod",
     "ours ours ours ours ours"},
    {"Apple M1 (Firestorm, Asahi Linux)",
     /* ... sha3 asimddp sha512 asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg
      * dcpodp flagm2 frint: DotProd, no I8MM */
     ARM(0xffb3ffff, 0x181), "dotprod", "dotprod", "neon", F32, 0, "portable neon dotprod dotprod",
     "ours ours ours ours ours"},
};
#define N_ROWS (int)(sizeof rows / sizeof rows[0])

/* What each table executes, from the instruction set references: a table
 * may be chosen only where the CPU has all of it. */
static unsigned table_needs(const char *name) {
    static const struct {
        const char *name;
        unsigned needs;
    } t[] = {
        {"avx512_vnni", HV_CPU_AVX2 | HV_CPU_AVX512 | HV_CPU_AVX512_VNNI},
        {"avx512", HV_CPU_AVX2 | HV_CPU_AVX512},
        {"avx_vnni", HV_CPU_AVX2 | HV_CPU_AVX_VNNI},
        {"avx2", HV_CPU_AVX2},
        {"i8mm", HV_CPU_NEON | HV_CPU_DOTPROD | HV_CPU_I8MM},
        {"dotprod", HV_CPU_NEON | HV_CPU_DOTPROD},
        {"neon", HV_CPU_NEON},
        {"scalar", 0},
        {"portable", 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].name, name)) return t[i].needs;
    return ~0u;
}

/* The engine names in a row's engines string */
static const char *engine_name(hv_engine_kind k) {
    return k == HV_ENGINE_ONEDNN ? "onednn" : "ours";
}

/* The level names a row's caps string lists, in order: word i into out. */
static int cap_word(const char *caps, int i, char *out, size_t size) {
    for (int k = 0; *caps; k++) {
        size_t n = strcspn(caps, " ");
        if (k == i) {
            if (n >= size) return -1;
            memcpy(out, caps, n);
            out[n] = '\0';
            return 0;
        }
        caps += n;
        caps += strspn(caps, " ");
    }
    return -1;
}

static void check_row(const cpu_row *r) {
    hv_cpu cpu = hv_cpu_decode(&r->regs);
    const char *level = hv_cpu_level_name_on(cpu.arch, cpu.features);
    CHECK_MSG(!strcmp(level, r->level), "%s: level %s, want %s", r->name, level, r->level);
    CHECK_MSG(!strcmp(hv_mm_table_for(cpu.features), r->matrix), "%s: matrix table %s, want %s",
              r->name, hv_mm_table_for(cpu.features), r->matrix);
    CHECK_MSG(!strcmp(hv_ops_table_for(cpu.features), r->ops), "%s: element-wise %s, want %s",
              r->name, hv_ops_table_for(cpu.features), r->ops);
    hv_compute c = hv_compute_auto(cpu);
    CHECK_MSG(c == r->compute, "%s: auto computes in %s, want %s", r->name, hv_compute_name(c),
              hv_compute_name(r->compute));
    /* where auto is bf16, oneDNN's native bf16 engine runs it */
    int widens = hv_compute_widens(c, c == HV_COMPUTE_BF16, cpu.features, HV_WEIGHTS_Q8_0);
    CHECK_MSG(widens == r->widens, "%s: q8_0 widened %d, want %d", r->name, widens, r->widens);
    CHECK_MSG((cpu.vendor == HV_VENDOR_AMD) == (r->regs.vendor_ebx == 0x68747541) &&
                  (cpu.vendor == HV_VENDOR_INTEL) == (r->regs.vendor_ebx == 0x756e6547),
              "%s: vendor %d", r->name, (int)cpu.vendor);
    /* its own level as a cap leaves it as it is */
    unsigned mask = 0;
    CHECK_MSG(hv_cpu_level_parse_on(cpu.arch, level, &mask) == 0 &&
                  (cpu.features & mask) == cpu.features,
              "%s: HVISKE_MAX_ISA=%s keeps its features", r->name, level);
    /* every cap: the level it leaves, and no table beyond the features */
    int n_levels = 0;
    for (const char *cap; (cap = hv_cpu_level_at(cpu.arch, n_levels)); n_levels++) {
        char want[32];
        CHECK_MSG(cap_word(r->caps, n_levels, want, sizeof want) == 0, "%s: caps string for %s",
                  r->name, cap);
        CHECK(hv_cpu_level_parse_on(cpu.arch, cap, &mask) == 0);
        unsigned f = cpu.features & mask;
        const char *got = hv_cpu_level_name_on(cpu.arch, f);
        CHECK_MSG(!strcmp(got, want), "%s: HVISKE_MAX_ISA=%s leaves %s, want %s", r->name, cap, got,
                  want);
        const char *mt = hv_mm_table_for(f), *ot = hv_ops_table_for(f);
        CHECK_MSG((table_needs(mt) & ~f) == 0 && (table_needs(ot) & ~f) == 0 &&
                      (table_needs(mt) & ~cpu.features) == 0,
                  "%s capped at %s: tables %s and %s need features it lacks", r->name, cap, mt, ot);
        hv_cpu capped = {cpu.arch, cpu.vendor, f};
        CHECK_MSG(hv_compute_auto(capped) == HV_COMPUTE_F32 ||
                      (f & (HV_CPU_AMX | HV_CPU_AVX512_BF16)),
                  "%s capped at %s: auto bf16 without native bf16", r->name, cap);
        /* oneDNN only where its bf16 was measured ahead: AMX, AMD's
         * AVX512-BF16 */
        int ahead = (f & HV_CPU_AMX) || ((f & HV_CPU_AVX512_BF16) && cpu.vendor == HV_VENDOR_AMD);
        CHECK_MSG(hv_cpu_bf16_fast(&capped) == ahead, "%s capped at %s: bf16 fast %d, want %d",
                  r->name, cap, hv_cpu_bf16_fast(&capped), ahead);
        for (int cl = 0; cl < HV_N_CLASSES; cl++)
            CHECK_MSG(ahead || hv_engine_pick(capped, 1, (hv_shape_class)cl) == HV_ENGINE_OURS,
                      "%s capped at %s: class %d on oneDNN", r->name, cap, cl);
    }
    char extra[32];
    CHECK_MSG(cap_word(r->caps, n_levels, extra, sizeof extra) != 0, "%s: %d levels", r->name,
              n_levels);
    /* the engine of each shape class: in bf16 compute as the row says, in
     * f32 always ours */
    for (int c = 0; c < HV_N_CLASSES; c++) {
        char want[32];
        CHECK_MSG(cap_word(r->engines, c, want, sizeof want) == 0, "%s: engines string", r->name);
        const char *got = engine_name(hv_engine_pick(cpu, 1, (hv_shape_class)c));
        CHECK_MSG(!strcmp(got, want), "%s: class %d on %s, want %s", r->name, c, got, want);
        CHECK_MSG(hv_engine_pick(cpu, 0, (hv_shape_class)c) == HV_ENGINE_OURS,
                  "%s: class %d in f32 on our tables", r->name, c);
    }
    CHECK_MSG(cap_word(r->engines, HV_N_CLASSES, extra, sizeof extra) != 0, "%s: %d classes",
              r->name, HV_N_CLASSES);
    /* an architecture's levels never parse on the other */
    hv_cpu_arch other = cpu.arch == HV_ARCH_X86_64 ? HV_ARCH_ARM64 : HV_ARCH_X86_64;
    CHECK_MSG(strcmp(level, "portable") == 0 || hv_cpu_level_parse_on(other, level, &mask) == -1,
              "%s: level %s is also the other architecture's", r->name, level);
}

/* Intel's AVX512-BF16 without AMX (Cooper Lake; Sapphire Rapids held to
 * avx512_bf16): oneDNN's bf16 there is slower than our f32 kernels, so
 * bf16 compute runs every class on ours. */
static void check_intel_bf16(void) {
    const cpu_row *spr = NULL;
    for (int i = 0; i < N_ROWS; i++)
        if (strstr(rows[i].name, "Sapphire Rapids")) spr = &rows[i];
    CHECK(spr != NULL);
    if (!spr) return;
    hv_cpu cpu = hv_cpu_decode(&spr->regs);
    unsigned mask = 0;
    CHECK(hv_cpu_level_parse_on(cpu.arch, "avx512_bf16", &mask) == 0);
    hv_cpu held = {cpu.arch, cpu.vendor, cpu.features & mask};
    CHECK((held.features & HV_CPU_AVX512_BF16) && !(held.features & HV_CPU_AMX));
    CHECK(!hv_cpu_bf16_fast(&held));
    for (int c = 0; c < HV_N_CLASSES; c++)
        CHECK_MSG(hv_engine_pick(held, 1, (hv_shape_class)c) == HV_ENGINE_OURS,
                  "Intel AVX512-BF16 without AMX: class %d on ours", c);
    /* the classes of products by rows */
    CHECK(hv_shape_class_rows(1) == HV_CLASS_GEMV);
    CHECK(hv_shape_class_rows(HV_LINEAR_GEMV_MAX_N) == HV_CLASS_GEMV);
    CHECK(hv_shape_class_rows(HV_LINEAR_GEMV_MAX_N + 1) == HV_CLASS_SKINNY);
    CHECK(hv_shape_class_rows(HV_CLASS_SKINNY_MAX_N) == HV_CLASS_SKINNY);
    CHECK(hv_shape_class_rows(HV_CLASS_SKINNY_MAX_N + 1) == HV_CLASS_GEMM);
}

/* The rows whose CPU multiplies bf16 natively faster than our f32
 * (hv_cpu_bf16_fast), by hand: AMX (Sapphire and Granite Rapids) and AMD's
 * AVX512-BF16 (Zen 4 and 5); every other row is not, Intel's AVX-512
 * without AMX and every ARM64 row included. */
static const char *const bf16_fast_rows[] = {
    "AMD EPYC 9004 (Zen 4, Genoa)",  "AMD Ryzen 7000 (Zen 4, Raphael)",
    "AMD EPYC 9005 (Zen 5, Turin)",  "Intel Xeon Scalable 4th gen (Sapphire Rapids)",
    "Intel Xeon 6 (Granite Rapids)",
};
#define N_FAST (int)(sizeof bf16_fast_rows / sizeof bf16_fast_rows[0])

static void check_bf16_fast(void) {
    int found = 0;
    for (int i = 0; i < N_ROWS; i++) {
        int want = 0;
        for (int k = 0; k < N_FAST; k++) want |= !strcmp(rows[i].name, bf16_fast_rows[k]);
        found += want;
        hv_cpu cpu = hv_cpu_decode(&rows[i].regs);
        CHECK_MSG(hv_cpu_bf16_fast(&cpu) == want, "%s: bf16 fast %d, want %d", rows[i].name,
                  hv_cpu_bf16_fast(&cpu), want);
    }
    CHECK_MSG(found == N_FAST, "%d of the %d fast-bf16 names are rows", found, N_FAST);
    /* AVX512-BF16 without AMX is fast on AMD's cores alone: a Zen 4's
     * features under another vendor's name are not */
    for (int i = 0; i < N_ROWS; i++) {
        hv_cpu cpu = hv_cpu_decode(&rows[i].regs);
        if (cpu.vendor != HV_VENDOR_AMD || !(cpu.features & HV_CPU_AVX512_BF16)) continue;
        hv_cpu intel = {cpu.arch, HV_VENDOR_INTEL, cpu.features},
               other = {cpu.arch, HV_VENDOR_OTHER, cpu.features};
        CHECK_MSG(!hv_cpu_bf16_fast(&intel) && !hv_cpu_bf16_fast(&other),
                  "%s's features from another vendor: bf16 fast", rows[i].name);
    }
}

/* The host runs the same choice the matrix checks. */
static void check_host(void) {
    hv_cpu host = hv_cpu_host();
    CHECK_MSG(!strcmp(hv_mm_best()->name, hv_mm_table_for(host.features)),
              "host: matrix table %s, the choice says %s", hv_mm_best()->name,
              hv_mm_table_for(host.features));
    CHECK_MSG(!strcmp(hv_ops_level_name(hv_ops_level()), hv_ops_table_for(host.features)),
              "host: element-wise %s, the choice says %s", hv_ops_level_name(hv_ops_level()),
              hv_ops_table_for(host.features));
    printf("host: %s, vendor %d, level %s, tables %s and %s, auto %s\n",
           host.arch == HV_ARCH_X86_64  ? "x86-64"
           : host.arch == HV_ARCH_ARM64 ? "arm64"
                                        : "other",
           (int)host.vendor, hv_cpu_level_name(host.features), hv_mm_best()->name,
           hv_ops_level_name(hv_ops_level()), hv_compute_name(hv_compute_auto(host)));
}

int main(void) {
    int x86 = 0, arm = 0;
    for (int i = 0; i < N_ROWS; i++) {
        check_row(&rows[i]);
        x86 += rows[i].regs.arch == HV_ARCH_X86_64;
        arm += rows[i].regs.arch == HV_ARCH_ARM64;
    }
    printf("%d CPUs: %d x86-64, %d arm64\n", N_ROWS, x86, arm);
    CHECK(N_ROWS >= 16);
    check_intel_bf16();
    check_bf16_fast();
    check_host();
    TEST_END();
}
