#!/usr/bin/env python3
"""hviske-bench: the figures scripts read from --json are there and sane.

Runs the benchmark tool on the bundled demo model and example (timings are
not asserted: they are the machine's, not the program's) and checks the
contract: every stage's median/min/max in order, the threads' busy share,
the sgemm peak of --peak
measured around each run with the encoder's share of it, and the same for
the kernels of the compute mode (gemm_peak_gflops) and of the AMX tile unit
where the CPU has one (tile_peak_gflops; elsewhere the reason), the "compute",
"gemm" and "elementwise" keys and --compute, the encoder's per-stage profile
(every stage, none negative, within its run's encoder time), --bandwidth's
figures (at the start, and around each run with a step's time over the
bound of its moment), --diarize's speaker work (diarize_ms, only with it;
refused on a model without speaker tokens; --diarize-voice's range the
library's), and a clear error for a file that is not there.

Environment: HV_BINARY_DIR (the build folder with hviske-bench). Prints one
line per case and ends with "N passed, M failed"; exits 1 when any failed.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish, report  # noqa: E402

BINARY = os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE_DIR, "build"))
BENCH = os.path.join(BINARY, "hviske-bench")
STAGES = ("total_ms", "encoder_ms", "decoder_ms", "encoder_gflops", "rtf", "busy_share")
# encoder_profile's stages, as docs/PERFORMANCE.md lists them
PROFILE = ("subsampling_conv", "subsampling_linear", "ff_linear", "attn_linear", "pos_linear",
           "attn_products", "attn_softmax", "attn_staging", "conv_pointwise", "conv_depthwise",
           "layernorm", "elementwise", "bf16_convert", "proj_linear")
# stages every encoder runs, whatever the model and the mode
PROFILE_BUSY = ("ff_linear", "attn_linear", "attn_products", "attn_softmax", "layernorm")


DIARIZE_MODEL = os.path.join(SOURCE_DIR, "models", "demo-diarize")


def bench(*args, model=DEMO_MODEL):
    return subprocess.run([BENCH, "-m", model, "-t", "2", *args], capture_output=True,
                          text=True, timeout=600)


def check_diarize():
    """--diarize: the speaker work timed apart from the stages, 0 without it."""
    shares = {}
    for flags in ((), ("--diarize",)):
        p = bench("--runs", "2", "--warmup", "0", *flags, "--json", EXAMPLE, model=DIARIZE_MODEL)
        try:
            f = json.loads(p.stdout)["files"][0]
            shares[flags] = (f["diarize_ms"], f["diarize_share"], f["tokens"])
        except (ValueError, KeyError, IndexError):
            shares[flags] = None
            report(f"bench {' '.join(flags)} --json on the diarize model parses", False,
                   f"rc {p.returncode}: {p.stdout[:200]} {p.stderr[-300:]}")
    plain, dia = shares[()], shares[("--diarize",)]
    if plain and dia:
        report("without --diarize: diarize_ms and its share 0",
               plain[0]["max"] == 0 and plain[1]["max"] == 0, str(plain))
        report("--diarize: diarize_ms positive, its share of total_ms in (0, 1), and more "
               "tokens (speakers, times)",
               ordered(dia[0]) and dia[0]["min"] > 0 and 0 < dia[1]["min"] <= dia[1]["max"] < 1
               and dia[2] > plain[2], str(dia))
    p = bench("--runs", "1", "--warmup", "0", "--diarize", EXAMPLE)
    report("--diarize on a model without speaker tokens: refused, naming the piece",
           p.returncode == 1 and "<|spltoken0|>" in p.stderr, p.stderr[-300:])
    p = bench("--runs", "1", "--diarize", "--diarize-voice", "1.5", EXAMPLE, model=DIARIZE_MODEL)
    report("--diarize-voice 1.5: a usage error naming the parameter",
           p.returncode == 2 and "diarize_voice" in p.stderr, p.stderr[-300:])


def ordered(m):
    return m["min"] <= m["median"] <= m["max"]


# The levels HVISKE_MAX_ISA names (src/kernels/cpu.c), lowest first, each
# with the flags it adds: a cap leaves out the flags of the levels above it.
ISA_LEVELS = {
    "x86": [("portable", set()), ("avx2", {"avx2", "fma", "f16c"}), ("avx_vnni", {"avx_vnni"}),
            ("avx512", {"avx512f", "avx512bw", "avx512dq", "avx512vl"}),
            ("avx512_vnni", {"avx512_vnni"}), ("avx512_bf16", {"avx512_bf16"}),
            ("amx", {"amx_tile", "amx_bf16", "amx_int8"})],
    "arm": [("portable", set()), ("neon", {"asimd"}), ("dotprod", {"asimddp"}),
            ("i8mm", {"i8mm"})],
}


def cpu_flags():
    """The CPU's flags as the kernel lists them (x86's "flags", 64-bit
    ARM's "Features"), less those above HVISKE_MAX_ISA's level."""
    flags = set()
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("flags") or line.startswith("Features"):
                flags = set(line.split())
                break
    cap = os.environ.get("HVISKE_MAX_ISA")
    levels = ISA_LEVELS["arm" if "asimd" in flags else "x86"]
    names = [name for name, _ in levels]
    if cap in names:
        for _, above in levels[names.index(cap) + 1:]:
            flags -= above
    return flags


def arm_levels(flags):
    """The NEON levels of ARM's features, best last (cpu.c's rules)."""
    levels = []
    for level, flag in (("neon", "asimd"), ("dotprod", "asimddp"), ("i8mm", "i8mm")):
        if flag not in flags:
            break
        levels.append(level)
    return levels


def cpu_has_amx_bf16():
    """Whether the kernel lists the tile unit and its bf16 product."""
    return {"amx_bf16", "amx_tile"} <= cpu_flags()


def elementwise_expected():
    """The element-wise passes' instruction set this CPU should run."""
    flags = cpu_flags()
    if arm_levels(flags):
        return "neon"
    if not {"avx2", "fma", "f16c"} <= flags:
        return "portable"
    return "avx512" if "avx512f" in flags else "avx2"


def table_expected():
    """The matrix kernels' table this CPU should run (src/kernels/cpu.c's
    rules, from the flags the kernel lists)."""
    flags = cpu_flags()
    if arm_levels(flags):
        return arm_levels(flags)[-1]
    if not {"avx2", "fma", "f16c"} <= flags:
        return "scalar"
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "avx512_vnni" if "avx512_vnni" in flags else "avx512"
    return "avx_vnni" if "avx_vnni" in flags else "avx2"


def check_profile(f, what):
    """encoder_profile: every stage, none negative, the work's stages
    measured, and together within the encoder_ms of its run (one of the
    runs: within their range)."""
    prof = f.get("encoder_profile", {})
    stages = {k: prof.get(k + "_ms") for k in PROFILE}
    enc = prof.get("encoder_ms", -1)
    report(f"{what}: encoder_profile has every stage, none negative",
           all(isinstance(v, (int, float)) and v >= 0 for v in stages.values()), str(prof))
    report(f"{what}: encoder_profile's work stages measured",
           all((stages[k] or 0) > 0 for k in PROFILE_BUSY), str(stages))
    total = sum(v for v in stages.values() if isinstance(v, (int, float)))
    report(f"{what}: encoder_profile's stages within its run's encoder_ms, one of the runs'",
           0 < total <= enc * (1 + 1e-9)
           and f["encoder_ms"]["min"] <= enc <= f["encoder_ms"]["max"],
           f"stages {total} encoder_ms {enc} runs {f['encoder_ms']}")


def main():
    p = bench("--runs", "3", "--warmup", "0", "--max-tokens", "4", "--peak", "--bandwidth",
              "--json", EXAMPLE)
    try:
        out = json.loads(p.stdout)
        f = out["files"][0]
    except (ValueError, KeyError, IndexError):
        report("bench --json parses", False, f"rc {p.returncode}: {p.stdout[:200]} {p.stderr[-300:]}")
        return finish()
    report("bench --json parses", p.returncode == 0, p.stderr[-300:])
    report("every stage has median, min, max in order",
           all(ordered(f[k]) for k in STAGES), str({k: f.get(k) for k in STAGES}))
    check_profile(f, "--json")
    report("the encoder did work at a positive rate",
           f["encoder_ms"]["min"] > 0 and f["encoder_gflops"]["min"] > 0, str(f["encoder_gflops"]))
    busy = f.get("busy_share", {})
    # CPU time over 2 threads x wall time: above 0 (work was done) and at
    # most 1 plus the clock's grain (2 threads cannot use more than 2 CPUs)
    report("busy_share: the threads' CPU time over their wall time, in (0, 1]",
           bool(busy) and busy["min"] > 0 and busy["max"] <= 1.05, str(busy))
    runs = f.get("encoder_peak_share_runs", {})
    report("--peak: a positive sgemm peak and the encoder's share of it",
           f.get("sgemm_peak_gflops", 0) > 0 and f.get("encoder_peak_share", 0) > 0,
           str({k: f.get(k) for k in ("sgemm_peak_gflops", "encoder_peak_share")}))
    report("--peak: the share per run, median within its range",
           bool(runs) and ordered(runs) and runs["median"] == f["encoder_peak_share"], str(runs))
    gruns = f.get("encoder_gemm_share_runs", {})
    report("--peak: a positive rate of the kernels in use and the encoder's share of it",
           f.get("gemm_peak_gflops", 0) > 0 and f.get("encoder_gemm_share", 0) > 0
           and bool(gruns) and ordered(gruns) and gruns["median"] == f["encoder_gemm_share"],
           str({k: f.get(k) for k in ("gemm_peak_gflops", "encoder_gemm_share")}))
    iruns = f.get("encoder_isa_share_runs", {})
    want_probe = table_expected() + " f32 fma"
    report("--peak: the kernel table's own f32 peak and the encoder's share of it",
           f.get("isa_probe") == want_probe and f.get("isa_peak_gflops", 0) > 0
           and f.get("encoder_isa_share", 0) > 0 and bool(iruns) and ordered(iruns)
           and iruns["median"] == f["encoder_isa_share"],
           f"want {want_probe}: " + str({k: f.get(k) for k in ("isa_probe", "isa_peak_gflops",
                                                               "encoder_isa_share")}))
    truns = f.get("encoder_tile_share_runs", {})
    if cpu_has_amx_bf16():
        report("--peak on a CPU with AMX-BF16: the tile unit's rate and the encoder's share",
               f.get("tile_probe") == "amx_bf16" and f.get("tile_peak_gflops", 0) > 0
               and f.get("encoder_tile_share", 0) > 0 and bool(truns) and ordered(truns)
               and truns["median"] == f["encoder_tile_share"],
               str({k: f.get(k) for k in ("tile_probe", "tile_peak_gflops", "encoder_tile_share")}))
    else:
        report("--peak without AMX-BF16: no tile figures, and the reason",
               "AMX" in f.get("tile_probe", "") and "tile_peak_gflops" not in f
               and not truns, str({k: f.get(k) for k in ("tile_probe", "tile_peak_gflops")}))
    # the test environment sets HVISKE_COMPUTE=f32, which auto takes
    report("--json: the compute mode and the kernels that ran (the table /proc/cpuinfo implies)",
           out.get("compute") == "f32" and out.get("gemm", "") == "ours " + table_expected(),
           str({k: out.get(k) for k in ("compute", "gemm")}))
    report("--json: the element-wise passes' instruction set, as /proc/cpuinfo has it",
           out.get("elementwise") == elementwise_expected(),
           f"{out.get('elementwise')} (expected {elementwise_expected()})")
    p2 = bench("--runs", "1", "--warmup", "0", "--max-tokens", "2", "--compute", "bf16", "--json",
               EXAMPLE)
    try:
        out2 = json.loads(p2.stdout)
    except ValueError:
        out2 = {}
    report("--compute bf16: reported as the mode that ran", p2.returncode == 0
           and out2.get("compute") == "bf16" and out2.get("gemm", "") != "",
           p2.stdout[-300:] + p2.stderr[-300:])
    if out2.get("files"):
        check_profile(out2["files"][0], "--compute bf16")
    p2 = bench("--runs", "1", "--compute", "f16", EXAMPLE)
    report("--compute f16: refused, naming the option", p2.returncode == 2
           and "f16" in p2.stderr, p2.stderr[-300:])
    report("--bandwidth: a positive rate", out.get("read_bandwidth_gbs", 0) > 0,
           str(out.get("read_bandwidth_gbs")))
    bw, ratio = f.get("read_bandwidth_gbs_runs", {}), f.get("token_bound_ratio_runs", {})
    report("--bandwidth: the rate around each run and a step's ratio to its bound, in order",
           bool(bw) and bool(ratio) and ordered(bw) and ordered(ratio) and bw["min"] > 0
           and ratio["min"] > 0 and ratio["median"] == f.get("token_bound_ratio"),
           str({"bw": bw, "ratio": ratio}))
    # each run's ratio is its step time over the weight bytes at its
    # bandwidth, so all of them lie within what the ranges allow
    mb, tok = out.get("decoder_weight_mb", 0), f["per_token_ms"]
    if bw and ratio and mb > 0:
        lo, hi = tok["min"] * bw["min"] / mb, tok["max"] * bw["max"] / mb
        report("--bandwidth: the ratio is per_token_ms over decoder_weight_mb / bandwidth",
               lo * 0.999 <= ratio["min"] and ratio["max"] <= hi * 1.001,
               f"ratio {ratio} outside [{lo}, {hi}]")

    p = bench("--runs", "1", "--max-tokens", "2", EXAMPLE)
    report("without --json: the peak and bound lines only with --peak and --bandwidth",
           p.returncode == 0 and "encoder_ms" in p.stdout and "sgemm peak" not in p.stdout
           and "bandwidth" not in p.stdout and "tile unit" not in p.stdout,
           p.stdout[-300:] + p.stderr[-300:])
    p = bench("--runs", "1", "--max-tokens", "2", "--peak", EXAMPLE)
    tile_line = ("AMX bf16 tile unit (register-only probe)" if cpu_has_amx_bf16()
                 else "AMX bf16 tile unit: not measured: ")
    report("without --json, --peak: the sgemm, compute-mode and tile unit lines",
           p.returncode == 0 and "sgemm peak" in p.stdout and "on the encoder's weights" in p.stdout
           and tile_line in p.stdout, p.stdout[-400:] + p.stderr[-300:])
    p = bench("--runs", "1", "--max-tokens", "2", "--bandwidth", EXAMPLE)
    report("without --json, --bandwidth: the bound at the start and around the runs",
           p.returncode == 0 and "memory read bandwidth" in p.stdout
           and "the bound of its moment" in p.stdout, p.stdout[-400:] + p.stderr[-300:])

    check_diarize()
    missing = os.path.join(HERE, "no-such-audio.wav")
    p = bench("--runs", "1", missing)
    report("a missing file: non-zero exit naming it",
           p.returncode != 0 and "no-such-audio.wav" in p.stderr, p.stderr[-300:])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
