#!/usr/bin/python3
"""Issue #17's (default) or issue #39's (--issue 39) speed targets,
measured in one run with hviske-bench.

    bench/targets.py --model /tmp/full-bf16 [--q8-model /tmp/full-q8x8]
        --clip30 clip30.wav --clip10 clip10.wav [--bench build/hviske-bench]
        [--threads 2] [--rounds 3] [--issue 17|39] [--pytorch]

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
  * with --pytorch, the PyTorch reference with the model in bf16
    (bench/compare.py --ref-dtype bf16) on both clips, beside them."""
import argparse
import json
import os
import statistics
import subprocess
import sys


def bench(a, model, *args):
    cmd = [a.bench, "-m", model, "-t", str(a.threads), "--json", "--chunking", "none", *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
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
        here = os.path.dirname(os.path.abspath(__file__))
        for clip, name in ((a.clip30, "30 s"), (a.clip10, "10 s")):
            cmd = [sys.executable, os.path.join(here, "compare.py"), "--model", a.model,
                   "--audio", clip, "--bench", a.bench, "-t", str(a.threads), "--runs", "1",
                   "--max-tokens", "1", "--compute", "bf16", "--ref-dtype", "bf16", "--json"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"targets: {' '.join(cmd)} failed: {p.stderr.strip()[-500:]}")
            s = json.loads(p.stdout)["stages"]["encoder_ms"]
            print(f"| PyTorch bf16 encoder, {name} (hviske {s['hviske'] / 1e3:.2f} s in the same "
                  f"run) | {s['reference'] / 1e3:.2f} s | | | |")
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
    ap.add_argument("--issue", type=int, choices=[17, 39], default=17)
    ap.add_argument("--pytorch", action="store_true",
                    help="--issue 39: also time the PyTorch reference in bf16")
    a = ap.parse_args()
    q8 = [a.q8_model] if a.q8_model else [a.model, "--weight-type", "q8_0"]
    if a.issue == 39:
        return issue39(a, q8)

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
