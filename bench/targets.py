#!/usr/bin/python3
"""Issue #17's (default), #39's (--issue 39), #50's (--issue 50) or #58's
(--issue 58) speed targets, or issue #54's ARM figures (--issue 54),
measured in one run with hviske-bench.

    bench/targets.py --model /tmp/full-bf16 [--q8-model /tmp/full-q8x8]
        --clip30 clip30.wav --clip10 clip10.wav [--bench build/hviske-bench]
        [--threads 2] [--rounds 3] [--issue 17|39|50|54|58] [--pytorch]

For a full-size model (bench/make_full_model.py) and clips of about 30 s
and 10 s of speech, one chunk each (--chunking none):
  * the encoder's rate as a share of the OpenBLAS sgemm peak on its shapes,
    the peak measured just before and after each run (--peak), for the
    checkpoint's own weights (target: >= 95%);
  * a decoder step against the bound the measured read bandwidth sets
    (--bandwidth, read just before and after each run, as the peak), for
    the checkpoint's weights and q8_0 (target: <= 1.3x);
  * the q8_0 encoder's time over the f32 encoder's, the two alternated for
    --rounds rounds so that the machine's drift falls on both (target:
    <= 0.6x).
Prints each figure with its range and whether the target is met (and, for
the encoder, hviske-bench's busy_share: how much of the time the threads
worked rather than waited). Without
--q8-model, q8_0 is made at load (--weight-type q8_0).

--issue 39 (for a CPU with AMX: the bf16 compute mode through oneDNN):
  * the encoder of the 30 s clip in --compute bf16 (target: <= 1.5 s), of
    the 10 s clip (<= 0.6 s), each with the kernels that ran ("gemm") and
    their rate on the encoder's matrices in the same run (--peak), and the
    AMX tile unit's rate from hviske-bench's register-only probe;
  * the real-time factor of the 30 s clip with 48 tokens (<= 0.08);
  * the q8_0 encoder's time over the bf16 one's, alternated for --rounds
    rounds (<= 1.0x);
  * with --pytorch, transformers' model in bf16 on the newest PyTorch
    (bench/peers.py under the oracle tier's Python, --oracle-python) on
    both clips, beside them.

--issue 50 (for a CPU with AVX-512 and no AMX; on any other the same
figures against the same targets):
  * the encoder with the default options, 30 s and 10 s, of the checkpoint
    (bf16: <= 7.0 s, <= 2.0 s) and of q8_0 (<= 3.5 s, <= 1.2 s), with the
    kernels that ran and their table's own peak (--peak's isa_probe);
  * with --pytorch, PyTorch bf16's 30 s encoder (transformers on the
    newest torch, bench/peers.py) over hviske's default in the same run
    (>= 1.6x);
  * for each weight type, auto's 30 s encoder over the fastest explicit
    choice (--compute f32 or bf16, each with the kernels held to every
    level this CPU has, HVISKE_MAX_ISA, and not held), alternated for
    --rounds rounds (<= 1.03x);
  * a decoder step against the bound of the measured read bandwidth, for
    both weight types (<= 1.3x).

--issue 58 (every CPU class; the time targets are a Zen 4's, by the same
ratio elsewhere):
  * the encoder with the default options, 30 s and 10 s, of the checkpoint
    (bf16: <= 3.9 s, <= 1.3 s) and the 30 s of q8_0 (<= 2.3 s), with the
    compute mode and kernels that ran;
  * the default 30 s encoder against the bound of the best matrix rate
    hviske has on the encoder's shapes, measured in the same run (--peak
    in --compute f32 and in --compute bf16: our f32 kernels, oneDNN's bf16
    where the CPU multiplies bf16 natively): the encoder's FLOPs over that
    rate (target: within 1.15x);
  * with --pytorch, PyTorch bf16's 30 s encoder (transformers on the
    oracle tier's torch 2.x, as --issue 50's) over hviske's default in the
    same run (>= 1.25x);
  * issue 50's decoder steps.

--issue 54 (for a 64-bit ARM host; docs/PERFORMANCE.md, "ARM64"): the
encoders of both clips for the checkpoint and q8_0, by default and with
the kernels held to each NEON level the CPU has, with the kernels that ran
and their table's peak; and issue 50's decoder steps."""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(a, model, *args, isa=None):
    """hviske-bench's JSON; isa: HVISKE_MAX_ISA for the run (None: none)."""
    cmd = [a.bench, "-m", model, "-t", str(a.threads), "--json", "--chunking", "none", *args]
    env = dict(os.environ)
    env.pop("HVISKE_MAX_ISA", None)
    env.pop("HVISKE_COMPUTE", None)
    if isa:
        env["HVISKE_MAX_ISA"] = isa
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"targets: {' '.join(cmd)} failed: {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout)


def line(what, value, lo, hi, target, met):
    print(f"| {what} | {value} | {lo} - {hi} | {target} | {'met' if met else 'missed'} |")


def q8_over(a, q8, name, other, target):
    """The q8_0 encoder's time over another run's (other: the model and its
    arguments), 30 s clip, the two alternated for a.rounds rounds."""
    ratios, times = [], []
    for _ in range(a.rounds):
        o = bench(a, *other, "--max-tokens", "1", "--runs", "2", "--warmup", "1",
                  a.clip30)["files"][0]["encoder_ms"]["median"]
        q = bench(a, *q8, "--max-tokens", "1", "--runs", "2", "--warmup", "1",
                  a.clip30)["files"][0]["encoder_ms"]["median"]
        ratios.append(q / o)
        times.append(f"{q / 1e3:.2f}/{o / 1e3:.2f} s")
    line(f"q8_0 encoder / {name} encoder, 30 s, {a.rounds} alternated rounds "
         f"({', '.join(times)})", f"{statistics.median(ratios):.2f}x", f"{min(ratios):.2f}x",
         f"{max(ratios):.2f}x", f"<= {target}x", statistics.median(ratios) <= target)


def issue39(a, q8):
    print("| figure | median | range | target | |")
    print("| --- | --- | --- | --- | --- |")
    for clip, name, target in ((a.clip30, "30 s", 1.5), (a.clip10, "10 s", 0.6)):
        o = bench(a, a.model, "--compute", "bf16", "--max-tokens", "48", "--runs", "3",
                  "--warmup", "1", "--peak", clip)
        f = o["files"][0]
        e = f["encoder_ms"]
        tile = (f"; the AMX tile unit {f['tile_peak_gflops']:.0f} GFLOP/s, encoder at "
                f"{f['encoder_tile_share']:.0%} of it" if "tile_peak_gflops" in f
                else f"; tile unit not measured: {f.get('tile_probe', '?')}")
        line(f"encoder, {name}, compute {o['compute']}, gemm {o['gemm']}, element-wise "
             f"{o.get('elementwise', '?')} "
             f"({f['gemm_peak_gflops']:.0f} GFLOP/s on its matrices; encoder at "
             f"{f['encoder_gemm_share']:.0%} of it{tile})", f"{e['median'] / 1e3:.2f} s",
             f"{e['min'] / 1e3:.2f}", f"{e['max'] / 1e3:.2f}", f"<= {target} s",
             e["median"] / 1e3 <= target)
        if name == "30 s":
            r = f["rtf"]
            line(f"real-time factor, 30 s, {f['tokens']} tokens", f"{r['median']:.3f}",
                 f"{r['min']:.3f}", f"{r['max']:.3f}", "<= 0.08", r["median"] <= 0.08)
    q8_over(a, q8, "bf16", [a.model, "--compute", "bf16"], 1.0)
    if a.pytorch:
        for clip, name in ((a.clip30, "30 s"), (a.clip10, "10 s")):
            ref, ours, label = pytorch_bf16(a, clip, "bf16")
            print(f"| {label} encoder, {name} (hviske {ours / 1e3:.2f} s in the same "
                  f"run) | {ref / 1e3:.2f} s | | | |")
    return 0


def cpu_levels():
    """The HVISKE_MAX_ISA levels of the matrix kernels this CPU runs, from
    the flags the kernel lists (src/kernels/cpu.c's rules): x86's "flags",
    64-bit ARM's "Features" (asimd, asimddp, i8mm)."""
    flags, arm = set(), False
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
        for ln in f:
            if ln.startswith("flags") or ln.startswith("Features"):
                flags, arm = set(ln.split()), ln.startswith("Features")
                break
    levels = []
    if arm:
        for level, flag in (("neon", "asimd"), ("dotprod", "asimddp"), ("i8mm", "i8mm")):
            if flag not in flags:
                break
            levels.append(level)
        return levels
    if {"avx2", "fma", "f16c"} <= flags:
        levels.append("avx2")
        if "avx_vnni" in flags:
            levels.append("avx_vnni")
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            levels.append("avx512")
            if "avx512_vnni" in flags:
                levels.append("avx512_vnni")
    return levels


def pytorch_bf16(a, clip, compute="auto"):
    """(the newest PyTorch's bf16 encoder ms, hviske's encoder ms in the
    compute mode, the PyTorch row's name) in one run of bench/peers.py:
    transformers' own model on the torch of the oracle tier's environment
    (--oracle-python), as a user runs it."""
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [a.oracle_python, os.path.join(here, "peers.py"), "--model", a.model, "--audio", clip,
           "--bench", a.bench, "-t", str(a.threads), "--runs", "1", "--max-tokens", "2",
           "--skip", "hf-f32,onnx,torch113", "--hviske-modes", compute, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"targets: {' '.join(cmd)} failed: {p.stderr.strip()[-500:]}")
    rows = json.loads(p.stdout)["rows"]
    hf = next(r for r in rows if r["engine"].startswith("transformers"))
    ours = next(r for r in rows if r["engine"].startswith("hviske"))
    return hf["encoder_ms"], ours["encoder_ms"], hf["engine"]


def isa_note(f):
    """The kernel table's own peak (--peak's isa_probe) and the encoder's
    share of it, from a file's figures, or nothing."""
    if "isa_peak_gflops" not in f:
        return ""
    return (f"; {f['isa_probe']} peak {f['isa_peak_gflops']:.0f} GFLOP/s, encoder at "
            f"{f['encoder_isa_share']:.0%}")


def issue50(a, q8):
    """Issue 50's targets (an AVX-512 CPU without AMX; the figures of any
    other CPU are printed against the same targets)."""
    print(f"kernel levels of this CPU: {', '.join(cpu_levels()) or 'portable'}")
    print("| figure | median | range | target | |")
    print("| --- | --- | --- | --- | --- |")
    models = (("bf16 checkpoint", [a.model], 7.0, 2.0), ("q8_0", q8, 3.5, 1.2))
    for label, args, t30, t10 in models:
        for clip, name, target in ((a.clip30, "30 s", t30), (a.clip10, "10 s", t10)):
            o = bench(a, *args, "--max-tokens", "1", "--runs", "3", "--warmup", "1", "--peak",
                      clip)
            f = o["files"][0]
            e = f["encoder_ms"]
            line(f"encoder, {label}, {name}, default options: compute {o['compute']}, gemm "
                 f"{o['gemm']} ({f['encoder_gflops']['median']:.0f} GFLOP/s{isa_note(f)}; busy "
                 f"{f['busy_share']['median']:.0%})", f"{e['median'] / 1e3:.2f} s",
                 f"{e['min'] / 1e3:.2f}", f"{e['max'] / 1e3:.2f}", f"<= {target} s",
                 e["median"] / 1e3 <= target)
    if a.pytorch:
        ref, ours, _ = pytorch_bf16(a, a.clip30)
        line(f"PyTorch bf16 encoder, 30 s ({ref / 1e3:.2f} s) over hviske's default "
             f"({ours / 1e3:.2f} s) in the same run", f"{ref / ours:.2f}x", "", "", ">= 1.6x",
             ref / ours >= 1.6)
    # auto against every explicit choice, alternated so that drift falls
    # on all of them
    for label, args, _, _ in models:
        choices = [("auto", [], None)]
        for c in ("f32", "bf16"):
            # every level, then none (oneDNN too is held to the level: its
            # native bf16 needs more than avx512_vnni)
            for lv in cpu_levels() + [None]:
                choices.append((f"--compute {c}, kernels {lv or 'uncapped'}", ["--compute", c],
                                lv))
        times = {name: [] for name, _, _ in choices}
        for _ in range(a.rounds):
            for name, extra, lv in choices:
                f = bench(a, *args, *extra, "--max-tokens", "1", "--runs", "1", "--warmup", "1",
                          a.clip30, isa=lv)["files"][0]
                times[name].append(f["encoder_ms"]["median"])
        med = {k: statistics.median(v) for k, v in times.items()}
        best = min((k for k in med if k != "auto"), key=lambda k: med[k])
        for k in med:
            print(f"|   {label}, 30 s encoder, {k} | {med[k] / 1e3:.2f} s | "
                  f"{min(times[k]) / 1e3:.2f} - {max(times[k]) / 1e3:.2f} | | |")
        line(f"{label}: auto over the fastest explicit choice ({best}), {a.rounds} alternated "
             f"rounds", f"{med['auto'] / med[best]:.3f}x", "", "", "<= 1.03x",
             med["auto"] <= 1.03 * med[best])
    decoder_steps(a, [(label, args) for label, args, _, _ in models])
    return 0


def decoder_steps(a, models):
    """A decoder step of each (label, model arguments) against the bound of
    the read bandwidth measured around its runs (target: <= 1.3x)."""
    for label, args in models:
        o = bench(a, *args, "--max-tokens", "48", "--runs", "3", "--warmup", "1", "--bandwidth",
                  a.clip10)
        f = o["files"][0]
        t, bw, r = f["per_token_ms"], f["read_bandwidth_gbs_runs"], f["token_bound_ratio_runs"]
        bound = o["decoder_weight_mb"] / 1e3 / bw["median"] * 1e3
        line(f"decoder step, {label}: {t['median']:.2f} ms, x the bound of its run's moment "
             f"({bound:.2f} ms at {bw['median']:.1f} GB/s)", f"{r['median']:.2f}x",
             f"{r['min']:.2f}x", f"{r['max']:.2f}x", "<= 1.3x", r["median"] <= 1.3)


def issue58(a, q8):
    """Issue 58's targets: the default everywhere near the best matrix rate
    the CPU gives hviske."""
    print(f"kernel levels of this CPU: {', '.join(cpu_levels()) or 'portable'}")
    print("| figure | median | range | target | |")
    print("| --- | --- | --- | --- | --- |")
    default30 = None
    for label, args, targets in (("bf16 checkpoint", [a.model], ((a.clip30, "30 s", 3.9),
                                                                  (a.clip10, "10 s", 1.3))),
                                 ("q8_0", q8, ((a.clip30, "30 s", 2.3),))):
        for clip, name, target in targets:
            o = bench(a, *args, "--max-tokens", "1", "--runs", "3", "--warmup", "1", clip)
            f = o["files"][0]
            e = f["encoder_ms"]
            if label == "bf16 checkpoint" and name == "30 s":
                default30 = f
            line(f"encoder, {label}, {name}, default options: compute {o['compute']}, gemm "
                 f"{o['gemm']} ({f['encoder_gflops']['median']:.0f} GFLOP/s; busy "
                 f"{f['busy_share']['median']:.0%})", f"{e['median'] / 1e3:.2f} s",
                 f"{e['min'] / 1e3:.2f}", f"{e['max'] / 1e3:.2f}", f"<= {target} s",
                 e["median"] / 1e3 <= target)
    rates = {}
    for c in ("f32", "bf16"):
        o = bench(a, a.model, "--compute", c, "--max-tokens", "1", "--runs", "1", "--warmup", "1",
                  "--peak", a.clip30)
        rates[f"{c} ({o['gemm']})"] = o["files"][0]["gemm_peak_gflops"]
    best = max(rates, key=lambda k: rates[k])
    gflop = default30["encoder_gflops"]["median"] * default30["encoder_ms"]["median"] / 1e3
    bound = gflop / rates[best]
    t = default30["encoder_ms"]["median"] / 1e3
    line(f"default 30 s encoder ({t:.2f} s, {gflop:.0f} GFLOP) over the bound of the best rate on "
         f"its shapes, {best} at {rates[best]:.0f} GFLOP/s ({bound:.2f} s; "
         + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()) + ")", f"{t / bound:.2f}x", "", "",
         "<= 1.15x", t / bound <= 1.15)
    if a.pytorch:
        ref, ours, who = pytorch_bf16(a, a.clip30)
        line(f"{who} encoder, 30 s ({ref / 1e3:.2f} s) over hviske's default "
             f"({ours / 1e3:.2f} s) in the same run", f"{ref / ours:.2f}x", "", "", ">= 1.25x",
             ref / ours >= 1.25)
    decoder_steps(a, [("bf16 checkpoint", [a.model]), ("q8_0", q8)])
    return 0


def issue54(a, q8):
    """Issue 54's figures, for a 64-bit ARM host (no targets of their own
    yet): the encoder of both clips for the checkpoint and q8_0 with the
    default options, then with the kernels held to each NEON level this CPU
    has (HVISKE_MAX_ISA), with the kernels that ran and their table's own
    peak (--peak's isa_probe); and a decoder step of each against the bound
    of the measured read bandwidth."""
    print(f"kernel levels of this CPU: {', '.join(cpu_levels()) or 'portable'}")
    print("| figure | median | range |")
    print("| --- | --- | --- |")
    models = (("bf16 checkpoint", [a.model]), ("q8_0", q8))
    for label, args in models:
        for lv in [None] + cpu_levels():
            for clip, name in ((a.clip30, "30 s"), (a.clip10, "10 s")):
                o = bench(a, *args, "--max-tokens", "1", "--runs", "3", "--warmup", "1",
                          "--peak", clip, isa=lv)
                f = o["files"][0]
                e = f["encoder_ms"]
                print(f"| encoder, {label}, {name}, kernels {lv or 'by default'}: compute "
                      f"{o['compute']}, gemm {o['gemm']}, element-wise {o.get('elementwise')} "
                      f"({f['encoder_gflops']['median']:.0f} GFLOP/s{isa_note(f)}) | "
                      f"{e['median'] / 1e3:.2f} s | {e['min'] / 1e3:.2f} - {e['max'] / 1e3:.2f} |")
    decoder_steps(a, models)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default="build/hviske-bench")
    ap.add_argument("--model", required=True, help="full-size model, its own (bf16) weights")
    ap.add_argument("--q8-model", help="the same model quantized (default: q8_0 made at load)")
    ap.add_argument("--clip30", required=True)
    ap.add_argument("--clip10", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--issue", type=int, choices=[17, 39, 50, 54, 58], default=17)
    ap.add_argument("--pytorch", action="store_true",
                    help="--issue 39, 50: also time transformers' model in bf16 on the newest "
                         "PyTorch (bench/peers.py under --oracle-python)")
    ap.add_argument("--oracle-python", default="build/oracle-venv/bin/python",
                    help="the oracle tier's Python, with transformers and torch 2.x "
                         "(docs/TESTING.md, \"The Hugging Face oracle\")")
    a = ap.parse_args()
    q8 = [a.q8_model] if a.q8_model else [a.model, "--weight-type", "q8_0"]
    if a.issue == 39:
        return issue39(a, q8)
    if a.issue == 50:
        return issue50(a, q8)
    if a.issue == 54:
        return issue54(a, q8)
    if a.issue == 58:
        return issue58(a, q8)

    print("| figure | median | range | target | |")
    print("| --- | --- | --- | --- | --- |")
    for clip, name in ((a.clip30, "30 s"), (a.clip10, "10 s")):
        f = bench(a, a.model, "--max-tokens", "1", "--runs", "3", "--warmup", "1", "--peak",
                  clip)["files"][0]
        s = f["encoder_peak_share_runs"]
        line(f"encoder, {name}: {f['encoder_ms']['median'] / 1e3:.2f} s, share of the sgemm peak "
             f"({f['sgemm_peak_gflops']:.1f} GFLOP/s; threads busy "
             f"{f['busy_share']['median']:.1%} of the time)",
             f"{s['median']:.1%}", f"{s['min']:.1%}", f"{s['max']:.1%}", ">= 95%",
             s["median"] >= 0.95)

    for label, args in (("checkpoint weights", [a.model]), ("q8_0", q8)):
        o = bench(a, *args, "--max-tokens", "48", "--runs", "3", "--warmup", "1", "--bandwidth",
                  a.clip10)
        f = o["files"][0]
        t, bw, r = f["per_token_ms"], f["read_bandwidth_gbs_runs"], f["token_bound_ratio_runs"]
        bound = o["decoder_weight_mb"] / 1e3 / bw["median"] * 1e3  # ms per token
        line(f"decoder step, {label}: {t['median']:.2f} ms, x the bound of its run's moment "
             f"({bound:.2f} ms at {bw['median']:.1f} GB/s, the median of the reads around the "
             f"runs; {o['read_bandwidth_gbs']:.1f} GB/s at the start)", f"{r['median']:.2f}x",
             f"{r['min']:.2f}x", f"{r['max']:.2f}x", "<= 1.3x", r["median"] <= 1.3)

    q8_over(a, q8, "f32", [a.model, "--weight-type", "f32"], 0.6)
    return 0


if __name__ == "__main__":
    sys.exit(main())
