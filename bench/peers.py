#!/usr/bin/env python3
"""hviske beside what a user would run instead, on one model and one clip
with the same threads, in one run, as one table (docs/PERFORMANCE.md,
"Against other engines"):

  * hviske (hviske-bench, --chunking energy) in each compute mode (f32,
    bf16, auto) with the checkpoint's weights, and auto with q8_0 weights;
  * Hugging Face transformers (CohereAsrForConditionalGeneration on torch
    2.x, loaded from the published layout as tests/oracle/hflib.py does) in
    float32 and bfloat16, as a user's generate() runs it: the encoder (with
    the projection to the decoder's width) on the clip's features, and the
    time per token of generate() ((t(N tokens) - t(1 token)) / (N - 1),
    N = --max-tokens, min_new_tokens = N so that every run makes N);
  * ONNX Runtime on the encoder exported from that model with
    torch.onnx.export (float32), and again after
    onnxruntime.quantization.quantize_dynamic (int8 weights, activations
    quantised on the fly), as sherpa-onnx and transformers.js ship the
    model; its output checked against transformers' (float32: 1e-3
    relative); the decoder is not exported, so ONNX Runtime has no
    per-token figure;
  * Debian's PyTorch 1.13 for continuity: bench/compare.py's reference
    (tests/reference/reference.py) in float32 and bfloat16, run by
    /usr/bin/python3 (skipped, saying so, where Debian's python3-torch is
    not installed).
Ratios are the peer's time over hviske's (auto compute, the checkpoint's
weights; where auto is not run, the first hviske row): above 1, hviske is
faster.

Runs under the oracle tier's virtual environment (tests/oracle/
requirements.lock: torch, transformers, onnx, onnxruntime), e.g.

    build/oracle-venv/bin/python bench/peers.py --model /tmp/full \\
        --audio clip30.wav -t 2 --runs 3 --max-tokens 32

The audio must be a 16 kHz mono 16-bit WAV (the peers get the same
samples). --skip takes a comma-separated list of hviske, hf-f32, hf-bf16,
onnx, torch113; --hviske-modes the hviske rows (f32, bf16, auto, q8_0);
--json prints the figures as JSON, --table FILE the table of such a file.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "oracle"))
import hflib as H  # noqa: E402


def median_ms(fn, runs):
    fn()  # warm-up
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def read_wav(path):
    with wave.open(path, "rb") as w:
        if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit("peers: %s must be 16 kHz mono 16-bit WAV" % path)
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return x.astype(np.float32) / 32768.0


HVISKE_MODES = {"f32": ("hviske, f32 compute", ["--compute", "f32"]),
                "bf16": ("hviske, bf16 compute", ["--compute", "bf16"]),
                "auto": ("hviske, auto compute", ["--compute", "auto"]),
                "q8_0": ("hviske, q8_0 weights, auto compute", ["--weight-type", "q8_0"])}


def hviske_rows(a):
    rows = []
    for mode in a.hviske_modes.split(","):
        if mode not in HVISKE_MODES:
            raise SystemExit("peers: --hviske-modes: %r is not one of %s" % (
                mode, ", ".join(HVISKE_MODES)))
        label, extra = HVISKE_MODES[mode]
        cmd = [a.bench, "-m", a.model, "-t", str(a.threads), "--runs", str(a.runs),
               "--max-tokens", str(a.max_tokens), "--chunking", "energy", "--json"] + extra + \
              [a.audio]
        r = json.loads(subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout)
        f = r["files"][0]
        rows.append({"engine": label + " (%s)" % r.get("gemm", "?"),
                     "encoder_ms": f["encoder_ms"]["median"],
                     "per_token_ms": f["per_token_ms"]["median"], "load_ms": r.get("load_ms"),
                     "key": "auto" if extra == ["--compute", "auto"] else None})
    return rows


class EncoderWithProj(torch.nn.Module):
    """transformers' encoder and the projection to the decoder's width: the
    part of generate() that runs once per clip."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, mask):
        h = self.model.model.encoder(x, attention_mask=mask).last_hidden_state
        return self.model.model.decoder.proj(h)


def hf_row(a, hfdir, x, mask, dtype, name):
    """(row, model) of transformers in dtype."""
    t0 = time.perf_counter()
    model, tok = H.hf_model(a.model, hfdir, dtype)
    load_ms = (time.perf_counter() - t0) * 1e3
    # the processor's prompt, its first piece being the decoder start token
    # (make_full_model.py's word-level vocabulary has no "\u2581" piece)
    lang = "da" if "<|da|>" in tok.get_vocab() else "en"
    prompt = [model.config.decoder_start_token_id] + tok.convert_tokens_to_ids([
        "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>", "<|%s|>" % lang,
        "<|%s|>" % lang, "<|pnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>"])
    enc = EncoderWithProj(model).eval()
    xd = x.to(dtype)
    with torch.no_grad():
        enc_ms = median_ms(lambda: enc(xd, mask), a.runs)

        def gen(n):
            return lambda: model.generate(
                input_features=xd, attention_mask=mask, decoder_input_ids=torch.tensor([prompt]),
                max_new_tokens=n, min_new_tokens=n, num_beams=1, do_sample=False)
        t_n = median_ms(gen(a.max_tokens), a.runs)
        t_1 = median_ms(gen(1), a.runs)
    return {"engine": "transformers %s, torch %s, %s" % (
        H.transformers.__version__, torch.__version__.split("+")[0], name),
        "encoder_ms": enc_ms, "per_token_ms": (t_n - t_1) / (a.max_tokens - 1),
        "load_ms": load_ms}, model


def export_encoder(model, x, mask, tmp):
    """The float32 encoder (with the projection) as ONNX: (path,
    transformers' output)."""
    enc = EncoderWithProj(model).eval()
    path = os.path.join(tmp, "encoder.onnx")
    with torch.no_grad():
        ref = enc(x, mask)[0].numpy()
        torch.onnx.export(enc, (x, mask.long()), path, input_names=["x", "mask"],
                          output_names=["h"],
                          dynamic_axes={"x": {1: "T"}, "mask": {1: "T"}, "h": {1: "L"}},
                          dynamo=False, opset_version=17)
    return path, ref


def quantize_encoder(path, tmp):
    """The int8 twin of the exported encoder (dynamic quantization), made
    once transformers' model is freed (the full-size model's float32
    encoder is 6.4 GB, and quantize_dynamic holds it and its copy)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    q8 = os.path.join(tmp, "encoder-int8.onnx")
    quantize_dynamic(path, q8, weight_type=QuantType.QInt8, use_external_data_format=True)
    return q8


def onnx_rows(a, paths, x, mask, ref):
    import onnxruntime as ort
    rows = []
    feed = {"x": x.numpy(), "mask": mask.long().numpy()}
    for p, name in paths:
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        s = ort.InferenceSession(p, so, providers=["CPUExecutionProvider"])
        out = s.run(None, feed)[0][0]
        dev = float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-30))
        if name == "float32" and not dev < 1e-3:
            raise SystemExit("peers: ONNX Runtime's encoder is %.3g from transformers'" % dev)
        rows.append({"engine": "ONNX Runtime %s, encoder, %s" % (ort.__version__, name),
                     "encoder_ms": median_ms(lambda: s.run(None, feed), a.runs),
                     "per_token_ms": None, "note": "rel. dev. from transformers %.1e" % dev})
        del s
    return rows


def peer_rows(a, samples, tmp, skip):
    """transformers float32, the ONNX export of its encoder, transformers
    bfloat16, ONNX Runtime: one model in memory at a time."""
    hfdir = H.hf_dir(a.model, os.path.join(tmp, "hf"))
    feats, T = H.features(H.feature_extractor(a.model, 0.0), samples)
    x = torch.from_numpy(np.ascontiguousarray(feats))[None]
    mask = (torch.arange(x.shape[1]) < T)[None]
    rows, paths = [], None
    if not {"hf-f32", "onnx"} <= skip:
        row, model = hf_row(a, hfdir, x, mask, torch.float32, "float32")
        if "hf-f32" not in skip:
            rows.append(row)
        if "onnx" not in skip:
            path, ref = export_encoder(model, x, mask, tmp)
        del model, row
        gc.collect()
        if "onnx" not in skip:
            q8 = quantize_encoder(path, tmp)
            paths = [(path, "float32"), (q8, "int8 (dynamic quantization)")]
    if "hf-bf16" not in skip:
        row, model = hf_row(a, hfdir, x, mask, torch.bfloat16, "bfloat16")
        rows.append(row)
        del model
        gc.collect()
    if paths:
        rows += onnx_rows(a, paths, x, mask, ref)
    return rows


def torch113_rows(a):
    py = "/usr/bin/python3"
    probe = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("peers: Debian's PyTorch is not installed (python3-torch): no 1.13 rows",
              file=sys.stderr)
        return []
    rows = []
    for dtype in ("f32", "bf16"):
        r = subprocess.run([py, os.path.join(HERE, "compare.py"), "--model", a.model, "--audio",
                            a.audio, "--bench", a.bench, "-t", str(a.threads), "--runs",
                            str(a.runs), "--max-tokens", str(a.max_tokens), "--ref-dtype", dtype,
                            "--json"], check=True, stdout=subprocess.PIPE, text=True)
        o = json.loads(r.stdout)
        rows.append({"engine": "PyTorch %s (Debian), the reference, %s" % (
            probe.stdout.strip(), dtype),
            "encoder_ms": o["stages"]["encoder_ms"]["reference"],
            "per_token_ms": o["stages"]["per_token_ms"]["reference"],
            "load_ms": o["load_ms"]["reference"]})
    return rows


def host():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
        name = next(ln.split(":", 1)[1].strip() for ln in info.splitlines()
                    if ln.startswith("model name"))
        flags = next(ln.split(":", 1)[1].split() for ln in info.splitlines()
                     if ln.startswith("flags"))
    except (OSError, StopIteration):
        return platform.processor()
    keep = [f for f in flags if f.startswith(("avx512", "amx", "avx_vnni")) or f in (
        "avx2", "fma", "f16c")]
    return "%s, %d CPUs, %s" % (name, os.cpu_count(), " ".join(keep))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model")
    ap.add_argument("--audio")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "hviske-bench"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--skip", default="")
    ap.add_argument("--hviske-modes", default="f32,bf16,auto,q8_0")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--table", metavar="JSON",
                    help="print the table of an earlier --json run's output file, and stop")
    a = ap.parse_args()
    if a.table:
        with open(a.table, encoding="utf-8") as f:
            print_table(json.load(f))
        return
    if not a.model or not a.audio:
        ap.error("--model and --audio are needed")
    if a.max_tokens < 2:
        raise SystemExit("peers: --max-tokens must be at least 2")
    skip = set(filter(None, a.skip.split(",")))
    torch.set_num_threads(a.threads)
    samples = read_wav(a.audio)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hv-peers-") as tmp:
        if "hviske" not in skip:
            rows += hviske_rows(a)
        if not {"hf-f32", "hf-bf16", "onnx"} <= skip:
            rows += peer_rows(a, samples, tmp, skip)
        if "torch113" not in skip:
            rows += torch113_rows(a)
    base = next((r for r in rows if r.get("key") == "auto"),
                next((r for r in rows if r["engine"].startswith("hviske")), None))
    for r in rows:
        for k in ("encoder_ms", "per_token_ms"):
            v = r.get(k)
            r[k.replace("_ms", "_ratio")] = (v / base[k] if base and v is not None and base[k]
                                             else None)
    out = {"host": host(), "model": a.model, "audio": a.audio,
           "audio_s": len(samples) / 16000.0, "threads": a.threads, "runs": a.runs,
           "max_tokens": a.max_tokens, "rows": rows}
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print_table(out)


def print_table(out):
    print("host: %s\nmodel %s, %s (%.1f s), %d threads, median of %d runs, %d tokens" % (
        out["host"], out["model"], out["audio"], out["audio_s"], out["threads"], out["runs"],
        out["max_tokens"]))
    print("| engine | encoder | per token | encoder / hviske | per token / hviske |")
    print("| --- | --- | --- | --- | --- |")

    def f(v, unit):
        return "" if v is None else ("%.2f s" % (v / 1e3) if unit == "s" else "%.1f ms" % v)

    for r in out["rows"]:
        er, tr = r.get("encoder_ratio"), r.get("per_token_ratio")
        print("| %s | %s | %s | %s | %s |" % (
            r["engine"], f(r["encoder_ms"], "s"), f(r["per_token_ms"], "ms"),
            "" if er is None else "%.2fx" % er, "" if tr is None else "%.2fx" % tr))


if __name__ == "__main__":
    main()
