#!/usr/bin/env python3
"""Long-audio parity: the C engine's chunking (hviske-dump --chunking MODE
[--chunk-seconds S]) against the PyTorch reference's (reference.py
chunk_plan / run_long, docs/MODEL.md "Long audio" implemented literally).

Long audio is made here from the fixture sentences (da1..da5 at 16 kHz)
with pauses between them: digital silence (windows of equal energy, so the
"first quietest window" rule decides) or a faint noise floor (a unique
quietest window). The reference runs in this process on the C tool's own
samples.npy. For each case:
  * the chunk plan (boundaries in samples) is identical;
  * the segments (non-empty chunks) have identical start and end samples,
    text and tokens; start/end in seconds are the samples / 16000; the
    joined text and all tokens are identical;
  * token log-probs within 1e-3, the summed score within 1e-3 per chunk;
  * the first chunk's features and first-step log-probs within 1e-3.
Modes: auto, energy, fixed (S = 10 and 20), none (audio the encoder
positions allow), on ~75 s and ~80 s audio (multi-f32, tiny-f32), on
10.3 minutes (tiny-f32 only), a 25 s file (one piece in auto), a fixed
plan whose last chunk is shorter than two hops (skipped), and beam search
on long audio. --chunking none on audio beyond the encoder's
pos_emb_max_len must fail cleanly (exit 1, a message naming the limit).

Environment: HV_FIXTURES, HV_DUMP. Optional arguments: substrings; only
cases whose label contains one of them run. Prints one line per case and
ends with "N passed, M failed"; exits 1 when any case failed.

make_long_audio() and write_wav() are also used by test_longaudio.py.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 16000
FEAT_TOL = 1e-3
LP_TOL = 1e-3
DUMP_TIMEOUT = 300
SENTENCES = ("da1", "da2", "da3", "da4", "da5")


# ------------------------------------------------------------- long audio

def read_wav16(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError("%s: expected 16-bit mono" % path)
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy()


def make_long_audio(fixtures, seconds, seed, noise=0.0, gaps=(0.2, 1.6)):
    """int16 samples at 16 kHz, exactly `seconds` long: the fixture
    sentences in a seeded random order, each followed by a pause of
    gaps[0]..gaps[1] seconds (digital silence, or Gaussian noise of
    standard deviation `noise` in int16 units)."""
    clips = [read_wav16(os.path.join(fixtures, "audio", s + "_16k.wav")) for s in SENTENCES]
    rng = np.random.RandomState(seed)
    n = int(round(seconds * RATE))
    parts, total = [], 0
    while total < n:
        c = clips[rng.randint(len(clips))]
        g = int(rng.uniform(*gaps) * RATE)
        pause = (np.round(rng.randn(g) * noise).astype(np.int16) if noise
                 else np.zeros(g, dtype=np.int16))
        parts += [c, pause]
        total += len(c) + g
    return np.concatenate(parts)[:n]


def write_wav(path, samples, rate=RATE):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    return path


# ------------------------------------------------------------------ cases

def audio_specs():
    """name -> (seconds, seed, noise, extra samples)."""
    return {
        "long75": (75.0, 1, 0.0, 0),
        "long80n": (80.0, 3, 25.0, 0),
        "s25": (25.0, 5, 0.0, 0),
        "f40": (40.0, 7, 10.0, 100),   # fixed 10: last chunk 100 samples
        "ten_min": (620.0, 2, 8.0, 0),
    }


def case_list():
    """(model, audio, chunking, chunk_seconds, beams)."""
    c = []
    for mode, s in (("auto", None), ("energy", None), ("fixed", 10), ("fixed", 20), ("none", None)):
        c.append(("multi-f32", "long75", mode, s, 1))
    c += [("multi-f32", "long80n", "auto", None, 1),
          ("multi-f32", "long80n", "fixed", 20, 1),
          ("multi-f32", "s25", "auto", None, 1),
          ("multi-f32", "s25", "energy", None, 1),
          ("multi-f32", "s25", "none", None, 1),
          ("multi-f32", "f40", "fixed", 10, 1),
          ("multi-f32", "long75", "auto", None, 3),
          ("tiny-f32", "long75", "auto", None, 1),
          ("tiny-f32", "long80n", "energy", None, 1),
          ("tiny-f32", "ten_min", "auto", None, 1),
          ("tiny-f32", "ten_min", "fixed", 20, 1)]
    return c


def label(model, audio, mode, secs, beams):
    s = "%s %s --chunking %s" % (model, audio, mode)
    if secs is not None:
        s += " --chunk-seconds %g" % secs
    if beams > 1:
        s += " --beams %d" % beams
    return s


def run_dump(dump, model_dir, audio_path, out_dir, mode, secs, beams):
    shutil.rmtree(out_dir, ignore_errors=True)
    args = [dump, "-m", model_dir, "-o", out_dir, "-l", "da", "--chunking", mode]
    if secs is not None:
        args += ["--chunk-seconds", repr(float(secs))]
    if beams > 1:
        args += ["--beams", str(beams)]
    args.append(audio_path)
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=DUMP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % DUMP_TIMEOUT
    if r.returncode != 0:
        return None, "exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace").strip()[-300:])
    with open(os.path.join(out_dir, "result.json"), encoding="utf-8") as f:
        c = json.load(f)
    for k in ("samples", "features", "logprobs0"):
        c[k] = np.load(os.path.join(out_dir, k + ".npy"))
    return c, None


def compare(c, ref, n_samples, fails):
    if c["bounds"] != ref["bounds"]:
        k = next((i for i in range(min(len(c["bounds"]), len(ref["bounds"])))
                  if c["bounds"][i] != ref["bounds"][i]), None)
        fails.append("chunk plan differs (at boundary %s): c %s ref %s" % (k, c["bounds"], ref["bounds"]))
    cs, rs = c["segments"], ref["segments"]
    cspan = [(s["start_sample"], s["end_sample"]) for s in cs]
    rspan = [(s["start_sample"], s["end_sample"]) for s in rs]
    if cspan != rspan:
        fails.append("segment spans c %s != ref %s" % (cspan, rspan))
    for s in cs:
        if s["start"] != s["start_sample"] / RATE or s["end"] != s["end_sample"] / RATE:
            fails.append("segment times %s-%s are not samples / %d" % (s["start"], s["end"], RATE))
            break
    for i, (a, b) in enumerate(zip(cs, rs)):
        if a["tokens"] != b["tokens"]:
            k = next((j for j in range(min(len(a["tokens"]), len(b["tokens"])))
                      if a["tokens"][j] != b["tokens"][j]), min(len(a["tokens"]), len(b["tokens"])))
            fails.append("segment %d tokens differ from step %d (ref min top-2 gap %s)"
                         % (i, k, b.get("min_gap")))
        elif a["text"] != b["text"]:
            fails.append("segment %d text %r != %r" % (i, a["text"], b["text"]))
        elif a["tokens"] and max(abs(x - y) for x, y in zip(a["token_logprobs"], b["token_logprobs"])) > LP_TOL:
            fails.append("segment %d token log-probs differ by more than %g" % (i, LP_TOL))
    if c["text"] != ref["text"]:
        fails.append("joined text differs: c %r ref %r" % (c["text"][:80], ref["text"][:80]))
    if c["tokens"] != ref["tokens"]:
        fails.append("result tokens differ")
    n_chunks = max(1, len(ref["bounds"]) - 1)
    if abs(c["score"] - ref["score"]) > LP_TOL * n_chunks:
        fails.append("score %.6f != ref %.6f" % (c["score"], ref["score"]))
    if abs(c["duration"] - n_samples / RATE) > 1e-9:
        fails.append("duration %r != %r" % (c["duration"], n_samples / RATE))
    if c["features"].shape != ref["features"].shape:
        fails.append("first chunk features shape %s != %s" % (c["features"].shape, ref["features"].shape))
    else:
        d = float(np.abs(c["features"].astype(np.float64) - ref["features"]).max())
        if not d < FEAT_TOL:
            fails.append("first chunk features differ by %.3g" % d)
    d = float(np.abs(c["logprobs0"].reshape(-1).astype(np.float64) - ref["logprobs0"].reshape(-1)).max())
    if not d < LP_TOL:
        fails.append("first chunk logprobs0 differ by %.3g" % d)
    return len(ref["bounds"]) - 1, len(rs)


def main():
    fixtures = os.environ.get("HV_FIXTURES")
    dump = os.environ.get("HV_DUMP")
    filters = sys.argv[1:]
    if not fixtures or not os.path.exists(os.path.join(fixtures, "manifest.json")):
        print("FAIL: HV_FIXTURES (%r) has no manifest.json" % fixtures)
        print("0 passed, 1 failed")
        return 1
    sys.path.insert(0, os.path.join(HERE, "reference"))
    import torch
    import reference as R
    torch.set_num_threads(1)

    passed = failed = 0

    def report(name, fails, extra=""):
        nonlocal passed, failed
        if fails:
            failed += 1
            print("FAIL %-58s %s| %s" % (name, extra, "; ".join(fails)))
        else:
            passed += 1
            print("ok   %-58s %s" % (name, extra))
        sys.stdout.flush()

    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="hv-chunk-parity-")
    models = {}
    try:
        specs = audio_specs()
        paths = {}
        for name, (secs, seed, noise, extra) in specs.items():
            x = make_long_audio(fixtures, secs, seed, noise)
            if extra:
                x = np.concatenate([x, make_long_audio(fixtures, 1, seed + 1, noise)[:extra]])
            paths[name] = write_wav(os.path.join(tmp, name + ".wav"), x)

        cases = [c for c in case_list() if not filters or any(f in label(*c) for f in filters)]
        for model, audio, mode, secs, beams in cases:
            name = label(model, audio, mode, secs, beams)
            fails, extra = [], ""
            if not dump or not os.access(dump, os.X_OK):
                report(name, ["HV_DUMP (%r) is not an executable" % dump])
                continue
            model_dir = os.path.join(fixtures, "models", model)
            c, err = run_dump(dump, model_dir, paths[audio], os.path.join(tmp, "c"), mode, secs, beams)
            if err:
                report(name, ["hviske-dump " + err])
                continue
            try:
                if model not in models:
                    models[model] = R.load_model(model_dir)
                samples = c["samples"].astype(np.float32).reshape(-1)
                ref = R.run_long(models[model], samples, chunking=mode, chunk_seconds=secs,
                                 language="da", num_beams=beams)
                n_chunks, n_segs = compare(c, ref, len(samples), fails)
                extra = "chunks=%d segments=%d " % (n_chunks, n_segs)
                if audio == "f40" and mode == "fixed" and not (ref["bounds"][-1] - ref["bounds"][-2] < 320
                                                              and len(ref["segments"]) < n_chunks):
                    fails.append("expected a last chunk under 320 samples, skipped: %s" % ref["bounds"])
            except Exception as e:  # a reference failure fails the case, not the run
                fails.append("reference: %s: %s" % (type(e).__name__, e))
            report(name, fails, extra)

        # --chunking none beyond the encoder's positions: a clean error
        name = "tiny-f32 ten_min --chunking none: clean error"
        if not filters or any(f in name for f in filters):
            out = os.path.join(tmp, "none")
            args = [dump, "-m", os.path.join(fixtures, "models", "tiny-f32"), "-o", out,
                    "--chunking", "none", paths["ten_min"]]
            r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=DUMP_TIMEOUT)
            err = r.stderr.decode("utf-8", "replace")
            fails = []
            if r.returncode != 1 or "pos_emb_max_len" not in err or "Sanitizer" in err:
                fails.append("expected exit 1 and a message naming pos_emb_max_len: rc %d %r"
                             % (r.returncode, err[-300:]))
            report(name, fails)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("(%.1f s)" % (time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
