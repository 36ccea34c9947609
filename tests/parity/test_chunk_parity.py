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
"""

import os
import subprocess
import sys

import numpy as np

import paritylib as PL
from paritylib import RATE, make_long_audio, write_wav

FEAT_TOL = 1e-3
LP_TOL = 1e-3
DUMP_TIMEOUT = 300


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


def dump_args(mode, secs, beams):
    args = ["-l", "da", "--chunking", mode]
    if secs is not None:
        args += ["--chunk-seconds", repr(float(secs))]
    if beams > 1:
        args += ["--beams", beams]
    return args


def compare(dump, ref, n_samples, fails):
    c = dump["result"]
    if c["bounds"] != ref["bounds"]:
        k = PL.first_difference(c["bounds"], ref["bounds"])
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
            fails.append("segment %d tokens differ from step %d (ref min top-2 gap %s)"
                         % (i, PL.first_difference(a["tokens"], b["tokens"]), b.get("min_gap")))
        elif a["text"] != b["text"]:
            fails.append("segment %d text %r != %r" % (i, a["text"], b["text"]))
        else:
            PL.check_logprobs(fails, "segment %d token_logprobs" % i, a.get("token_logprobs"),
                              b["token_logprobs"], LP_TOL)
    if c["text"] != ref["text"]:
        fails.append("joined text differs: c %r ref %r" % (c["text"][:80], ref["text"][:80]))
    if c["tokens"] != ref["tokens"]:
        fails.append("result tokens differ")
    n_chunks = max(1, len(ref["bounds"]) - 1)
    if abs(c["score"] - ref["score"]) > LP_TOL * n_chunks:
        fails.append("score %.6f != ref %.6f" % (c["score"], ref["score"]))
    if abs(c["duration"] - n_samples / RATE) > 1e-9:
        fails.append("duration %r != %r" % (c["duration"], n_samples / RATE))
    PL.check_close(fails, "first chunk features", dump["features"], np.asarray(ref["features"]),
                   FEAT_TOL, ("frame", "mel"))
    PL.check_close(fails, "first chunk logprobs0", dump["logprobs0"].reshape(-1),
                   np.asarray(ref["logprobs0"]).reshape(-1), LP_TOL, ("id",))
    return len(ref["bounds"]) - 1, len(rs)


def run(P):
    R = P.R
    paths = {}
    for name, (secs, seed, noise, extra) in audio_specs().items():
        x = make_long_audio(P.fixtures, secs, seed, noise)
        if extra:
            x = np.concatenate([x, make_long_audio(P.fixtures, 1, seed + 1, noise)[:extra]])
        paths[name] = write_wav(os.path.join(P.tmp, name + ".wav"), x)

    for model, audio, mode, secs, beams in [c for c in case_list() if P.wanted(label(*c))]:
        name = label(model, audio, mode, secs, beams)
        fails, extra = [], ""
        model_dir = os.path.join(P.fixtures, "models", model)
        c, err = P.run_dump(model_dir, paths[audio], dump_args(mode, secs, beams),
                            ("samples", "features", "logprobs0"), DUMP_TIMEOUT)
        if err:
            P.report(name, [err])
            continue
        try:
            samples = c["samples"].astype(np.float32).reshape(-1)
            ref = R.run_long(P.model(model_dir), samples, chunking=mode, chunk_seconds=secs,
                             language="da", num_beams=beams)
            n_chunks, n_segs = compare(c, ref, len(samples), fails)
            extra = "chunks=%d segments=%d" % (n_chunks, n_segs)
            if audio == "f40" and mode == "fixed" and not (ref["bounds"][-1] - ref["bounds"][-2] < 320
                                                          and len(ref["segments"]) < n_chunks):
                fails.append("expected a last chunk under 320 samples, skipped: %s" % ref["bounds"])
        except Exception as e:  # a reference failure fails the case, not the run
            fails.append("reference: %s: %s" % (type(e).__name__, e))
        P.report(name, fails, extra)

    # --chunking none beyond the encoder's positions: a clean error
    name = "tiny-f32 ten_min --chunking none: clean error"
    if P.wanted(name):
        args = [P.dump, "-m", os.path.join(P.fixtures, "models", "tiny-f32"), "-o",
                os.path.join(P.tmp, "none"), "--chunking", "none", paths["ten_min"]]
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=DUMP_TIMEOUT)
        err = r.stderr.decode("utf-8", "replace")
        fails = []
        if r.returncode != 1 or "pos_emb_max_len" not in err or "Sanitizer" in err:
            fails.append("expected exit 1 and a message naming pos_emb_max_len: rc %d %r"
                         % (r.returncode, err[-300:]))
        P.report(name, fails)


if __name__ == "__main__":
    sys.exit(PL.run_cases(PL.Parity("hv-chunk-parity-", 58), run))
