#!/usr/bin/env python3
"""Runs the C engine (hviske-bench) and the PyTorch reference on the same
model and audio with the same thread count, in one go, and prints each
stage's median time and the ratio reference / hviske (> 1: hviske faster).

    compare.py --model DIR --audio FILE [--bench build/hviske-bench]
               [-t N] [--runs R] [--max-tokens N] [--weight-type T] [--int8]
               [--compute C] [--ref-dtype f32|bf16] [--json]

The reference runs in float32 (weights converted at load, as hviske does
with --weight-type f32, this script's default), its frontend in float64 as
the parity oracle does. --ref-dtype bf16 runs its encoder and decoder with
the model in bfloat16 instead (what transformers does when it loads this
model: PyTorch's fastest CPU mode, through oneDNN where the CPU has AMX or
AVX512-BF16), so that "faster than PyTorch" is measured against its best;
--compute passes hviske's compute mode (default auto). hviske runs with --chunking energy, so that both
transcribe every sample (no speech detection).

--int8 times the reference a second time with every Linear layer through
PyTorch's own dynamic int8 quantisation (torch.ao.quantization.
quantize_dynamic: int8 weights per tensor, activations quantised on the
fly), the baseline for hviske's q8_0 (`--weight-type q8_0`), and adds it
as a column.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import reference as ref  # noqa: E402


def ms(t0):
    return (time.perf_counter() - t0) * 1e3


def reference_times(m, samples, max_tokens, runs):
    # looked up piece by piece (the benchmark model's word-level tokenizer
    # does not encode the prompt string the way the real one does)
    lang = "da" if "da" in m.languages else m.languages[0]
    prompt = [m.start_id] + [m.sp.piece_to_id(p) for p in ref.prompt_pieces(lang)]
    n_new = ref.resolve_max_new_tokens(m, len(prompt), max_tokens)
    rows = []
    with torch.no_grad():
        for r in range(runs + 1):  # the first is a warm-up
            t = {}
            t0 = time.perf_counter()
            feats, n_valid = ref.features(m, samples)
            t["frontend_ms"] = ms(t0)
            t0 = time.perf_counter()
            enc, enc_len = ref.encode(m, feats, n_valid)
            t["encoder_ms"] = ms(t0)
            t0 = time.perf_counter()
            dec = ref.Decoder(m, enc, enc_len)
            t["cross_ms"] = ms(t0)
            t0 = time.perf_counter()
            lp = dec.prefill(prompt)
            t["prefill_ms"] = ms(t0)
            t0 = time.perf_counter()
            steps = 0
            for _ in range(n_new - 1):
                tok = int(torch.argmax(lp))
                if tok == m.eos_id:
                    break
                lp = dec.step(tok)
                steps += 1
            t["per_token_ms"] = ms(t0) / max(1, steps)
            if r:
                rows.append(t)
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def int8_linear():
    """A drop-in for the reference's linear(x, w, b) that runs each weight
    as an nn.Linear converted by torch.ao.quantization.quantize_dynamic to
    qint8 (built on first use, in the warm-up run; kept by weight)."""
    cache = {}

    def linear(x, w, b=None):
        key = (id(w), id(b))
        if key not in cache:
            lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
            with torch.no_grad():
                lin.weight.copy_(w)
                if b is not None:
                    lin.bias.copy_(b)
            q = torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(lin), {torch.nn.Linear}, dtype=torch.qint8)
            cache[key] = (q, w, b)  # w and b kept so that their ids stay theirs
        q = cache[key][0]
        return q(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], w.shape[0])
    return linear


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--audio", required=True)
    ap.add_argument("--bench", default="build/hviske-bench")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--weight-type", default="f32",
                    help="hviske's weight type (the reference always runs f32)")
    ap.add_argument("--int8", action="store_true",
                    help="also time the reference with torch's dynamic int8 Linear layers")
    ap.add_argument("--compute", default="auto", choices=["auto", "f32", "bf16"],
                    help="hviske's compute mode")
    ap.add_argument("--ref-dtype", default="f32", choices=["f32", "bf16"],
                    help="the reference model's dtype (bf16: PyTorch's bf16 mode)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    cmd = [a.bench, "-m", a.model, "-t", str(a.threads), "--runs", str(a.runs),
           "--max-tokens", str(a.max_tokens), "--weight-type", a.weight_type,
           "--compute", a.compute,
           # every sample, as the reference does (no speech detection)
           "--chunking", "energy", "--json", a.audio]
    ours = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
    f = ours["files"][0]

    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    m = ref.load_model(a.model,
                       dtype=torch.bfloat16 if a.ref_dtype == "bf16" else torch.float32)
    ref_load = ms(t0)
    samples = ref.load_audio_16k(a.audio, m.sample_rate)
    theirs = reference_times(m, samples, a.max_tokens, a.runs)
    theirs8 = None
    if a.int8:
        f32_linear, ref.linear = ref.linear, int8_linear()
        try:
            theirs8 = reference_times(m, samples, a.max_tokens, a.runs)
        finally:
            ref.linear = f32_linear

    stages = ["frontend_ms", "encoder_ms", "cross_ms", "prefill_ms", "per_token_ms"]
    out = {"model": a.model, "audio": a.audio, "audio_s": f["audio_s"], "threads": a.threads,
           "weight_type": a.weight_type, "weight_mb": ours["weight_mb"],
           "compute": ours.get("compute"), "gemm": ours.get("gemm"), "ref_dtype": a.ref_dtype,
           "load_ms": {"hviske": ours["load_ms"], "reference": ref_load},
           "peak_rss_mb_hviske": ours["peak_rss_mb"], "stages": {}}
    for s in stages:
        h, r = f[s]["median"], theirs[s]
        out["stages"][s] = {"hviske": h, "reference": r, "ratio": r / h if h > 0 else None}
        if theirs8:
            r8 = theirs8[s]
            out["stages"][s].update({"reference_int8": r8,
                                     "ratio_int8": r8 / h if h > 0 else None})
    if a.json:
        print(json.dumps(out))
        return
    print("model %s, audio %s (%.1f s), %d threads, hviske weights %s (%.0f MB), compute %s (%s), "
          "reference in %s, median of %d runs"
          % (a.model, a.audio, f["audio_s"], a.threads, a.weight_type, ours["weight_mb"],
             ours.get("compute"), ours.get("gemm"), a.ref_dtype, a.runs))
    head = "%-14s %12s %12s %8s" % ("stage", "hviske ms", "reference ms", "ratio")
    print(head + ("  %12s %8s" % ("ref int8 ms", "ratio") if theirs8 else ""))
    for s in stages:
        v = out["stages"][s]
        line = "%-14s %12.2f %12.2f %7.2fx" % (s, v["hviske"], v["reference"], v["ratio"] or 0)
        if theirs8:
            line += "  %12.2f %7.2fx" % (v["reference_int8"], v["ratio_int8"] or 0)
        print(line)
    print("%-14s %12.1f %12.1f" % ("load", ours["load_ms"], ref_load))
    print("hviske peak RSS %.0f MB" % ours["peak_rss_mb"])


if __name__ == "__main__":
    main()
