#!/usr/bin/env python3
"""Beam-search parity: the C engine (hviske-dump --beams N --length-penalty
X) against the PyTorch reference (tests/reference/reference.py,
beam_search), which implements docs/DECODING.md literally.

For every fixture model and a few audio files (AUDIO below), the reference
runs in this process on the C tool's own samples.npy (so the frontend and
resampling are not compared here; test_parity.py does that), and:
  * --beams 1: tokens identical to the reference's greedy decoding, token
    log-probs within 1e-3 and the (unnormalised) greedy score within 1e-3;
    the reference's beam_search with N = 1 gives the same tokens too;
  * --beams N --length-penalty X for N in {2, 4, 5}, X in {0.5, 1, 2}:
    tokens and text identical, token log-probs within 1e-3 (abs), score
    (normalised) within 1e-3 (abs);
  * --beams 3 --max-tokens 4: the same, where the token budget runs out
    (docs/DECODING.md step 5).

On a token mismatch the line names the first differing step, both token
lists and the reference's smallest decision margin (a tiny margin means
float rounding could flip the choice; a large one means a real
disagreement).

Environment: HV_FIXTURES (manifest.json), HV_DUMP (hviske-dump). Optional
arguments: substrings; only cases whose label contains one of them run.
Prints one line per case and ends with "N passed, M failed"; exits 1 when
any case failed.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "reference"))

import torch  # noqa: E402

import reference as R  # noqa: E402

LP_TOL = 1e-3
SCORE_TOL = 1e-3
DUMP_TIMEOUT = 300
# Per model: runs that end with EOS early, at once, and at the token budget.
AUDIO = ("da1_16k", "da2_16k", "da4_16k", "da5_16k")
BEAMS = (2, 4, 5)
PENALTIES = (0.5, 1.0, 2.0)


def label(model, audio, beams, lpen, max_tokens):
    s = "%s %s --beams %d" % (model, audio, beams)
    if beams > 1:
        s += " --length-penalty %g" % lpen
    if max_tokens is not None:
        s += " --max-tokens %d" % max_tokens
    return s


def run_dump(dump, model_dir, audio_path, out_dir, beams, lpen, max_tokens):
    shutil.rmtree(out_dir, ignore_errors=True)
    args = [dump, "-m", model_dir, "-o", out_dir, "-l", "da", "--beams", str(beams),
            "--length-penalty", repr(float(lpen))]
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    args.append(audio_path)
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=DUMP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s: %s" % (DUMP_TIMEOUT, " ".join(args))
    except OSError as e:
        return None, "cannot run %s: %s" % (dump, e)
    if r.returncode != 0:
        err = (r.stderr or r.stdout).decode("utf-8", "replace").strip().splitlines()
        return None, "exit %d: %s" % (r.returncode, err[-1] if err else "(no output)")
    try:
        with open(os.path.join(out_dir, "result.json"), encoding="utf-8") as f:
            res = json.load(f)
        samples = np.load(os.path.join(out_dir, "samples.npy"))
    except (OSError, ValueError) as e:
        return None, "reading the dump: %s" % e
    return (res, samples), None


def first_difference(a, b):
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def compare(res, ref, fails, what):
    """res: the C result.json; ref: {tokens, token_logprobs, score, text}."""
    ct, rt = res.get("tokens"), ref["tokens"]
    if not isinstance(ct, list):
        fails.append("tokens missing in result.json")
        return {}
    if ct != rt:
        k = first_difference(ct, rt)
        margin = ref.get("min_margin")
        fails.append("tokens differ from %s from step %d (c %d tokens, ref %d; ref min margin %s):"
                     " c %s ref %s" % (what, k, len(ct), len(rt),
                                       "n/a" if margin is None else "%.3g" % margin, ct, rt))
        return {}
    meas = {}
    clp = res.get("token_logprobs")
    if not isinstance(clp, list) or len(clp) != len(ct) or not all(
            isinstance(x, (int, float)) for x in clp):
        fails.append("token_logprobs %r is not %d numbers" % (clp, len(ct)))
    elif clp:
        d = np.abs(np.array(clp, dtype=np.float64) - np.array(ref["token_logprobs"], dtype=np.float64))
        meas["lp"] = float(d.max())
        if not meas["lp"] < LP_TOL:
            fails.append("token log-prob diff %.3g at step %d" % (meas["lp"], int(np.argmax(d))))
    cs = res.get("score")
    if not isinstance(cs, (int, float)):
        fails.append("score %r is not a number" % (cs,))
    else:
        meas["score"] = abs(float(cs) - ref["score"])
        if not meas["score"] < SCORE_TOL:
            fails.append("score %.6f != ref %.6f" % (cs, ref["score"]))
    if res.get("text") != ref["text"]:
        fails.append("text %r != %r" % (res.get("text"), ref["text"]))
    return meas


def main():
    fixtures = os.environ.get("HV_FIXTURES")
    dump = os.environ.get("HV_DUMP")
    filters = sys.argv[1:]
    if not fixtures or not os.path.exists(os.path.join(fixtures, "manifest.json")):
        print("FAIL: HV_FIXTURES (%r) has no manifest.json; run tests/reference/make_fixtures.py" % fixtures)
        print("0 passed, 1 failed")
        return 1
    if not dump or not os.access(dump, os.X_OK):
        print("FAIL: HV_DUMP (%r) is not an executable" % dump)
        print("0 passed, 1 failed")
        return 1
    with open(os.path.join(fixtures, "manifest.json"), encoding="utf-8") as f:
        man = json.load(f)
    torch.set_num_threads(1)
    audio = [a for a in man["audio"] if a["name"] in AUDIO] or man["audio"][:3]

    passed = failed = 0
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="hv-beams-")

    def report(name, fails, meas):
        nonlocal passed, failed
        m = " ".join("%s=%.1e" % (k, meas[k]) for k in ("lp", "score") if k in meas)
        if "ntok" in meas:
            m += " tokens=%d" % meas["ntok"]
        if fails:
            failed += 1
            print("FAIL %-58s %s | %s" % (name, m, "; ".join(fails)))
        else:
            passed += 1
            print("ok   %-58s %s" % (name, m))
        sys.stdout.flush()

    try:
        for mi in man["models"]:
            model_dir = os.path.join(fixtures, mi["path"])
            m = None
            for a in audio:
                cases = [(1, 1.0, None)] + [(n, x, None) for n in BEAMS for x in PENALTIES] + [(3, 1.0, 4)]
                cases = [c for c in cases
                         if not filters or any(s in label(mi["name"], a["name"], *c) for s in filters)]
                if not cases:
                    continue
                ctx = None   # (samples, enc, enc_len, prompt) from the first dump of this file
                for beams, lpen, max_tokens in cases:
                    name = label(mi["name"], a["name"], beams, lpen, max_tokens)
                    fails, meas = [], {}
                    out, err = run_dump(dump, model_dir, os.path.join(fixtures, a["path"]),
                                        os.path.join(tmp, "c"), beams, lpen, max_tokens)
                    if err:
                        report(name, ["hviske-dump " + err], meas)
                        continue
                    res, samples = out
                    try:
                        if m is None:
                            m = R.load_model(model_dir)
                        if ctx is None:
                            with torch.no_grad():
                                s = samples.astype(np.float32).reshape(-1)
                                feats, T = R.features(m, s)
                                enc, L = R.encode(m, feats, T)
                            ctx = (s, enc, L, R.build_prompt(m, "da", True))
                        elif not np.array_equal(samples.astype(np.float32).reshape(-1), ctx[0]):
                            fails.append("samples.npy differs from the first run on this file")
                        _, enc, L, prompt = ctx
                        if res.get("prompt") != prompt:
                            fails.append("prompt %r != %r" % (res.get("prompt"), prompt))
                        if res.get("enc_len") != L:
                            fails.append("enc_len %r != %r" % (res.get("enc_len"), L))
                        n_new = R.resolve_max_new_tokens(m, len(prompt), max_tokens)
                        with torch.no_grad():
                            if beams == 1:
                                ref = R.greedy(m, enc, L, prompt, n_new, return_scores=True)
                                b1 = R.beam_search(m, enc, L, prompt, n_new, 1, 1.0)
                                if b1["tokens"] != ref["tokens"]:
                                    fails.append("reference beam_search N=1 %s != reference greedy %s"
                                                 % (b1["tokens"], ref["tokens"]))
                                what = "greedy"
                            else:
                                ref = R.beam_search(m, enc, L, prompt, n_new, beams, lpen)
                                what = "beam search"
                        ref["text"] = R.decode_text(m, ref["tokens"])
                        meas = compare(res, ref, fails, what)
                        meas["ntok"] = len(ref["tokens"])
                    except Exception as e:  # a reference failure fails the case, not the run
                        fails.append("reference: %s: %s" % (type(e).__name__, e))
                    report(name, fails, meas)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("(%.1f s)" % (time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
