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

import os
import sys

import numpy as np

import paritylib as PL

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


def dump_args(beams, lpen, max_tokens):
    args = ["-l", "da", "--beams", beams, "--length-penalty", repr(float(lpen))]
    if max_tokens is not None:
        args += ["--max-tokens", max_tokens]
    return args


def compare(res, ref, fails, what):
    """res: the C result.json; ref: {tokens, token_logprobs, score, text}."""
    ct, rt = res.get("tokens"), ref["tokens"]
    if not isinstance(ct, list):
        fails.append("tokens missing in result.json")
        return {}
    if ct != rt:
        k = PL.first_difference(ct, rt)
        margin = ref.get("min_margin")
        fails.append("tokens differ from %s from step %d (c %d tokens, ref %d; ref min margin %s):"
                     " c %s ref %s" % (what, k, len(ct), len(rt),
                                       "n/a" if margin is None else "%.3g" % margin, ct, rt))
        return {}
    meas = {}
    d = PL.check_logprobs(fails, "token_logprobs", res.get("token_logprobs"), ref["token_logprobs"],
                          LP_TOL)
    if d is not None and ct:
        meas["lp"] = d
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


def run(P):
    R, torch = P.R, P.torch
    man = P.manifest
    audio = [a for a in man["audio"] if a["name"] in AUDIO] or man["audio"][:3]
    for mi in man["models"]:
        model_dir = P.model_dir(mi)
        for a in audio:
            cases = [(1, 1.0, None)] + [(n, x, None) for n in BEAMS for x in PENALTIES] + [(3, 1.0, 4)]
            cases = [c for c in cases if P.wanted(label(mi["name"], a["name"], *c))]
            ctx = None   # (samples, enc, enc_len, prompt) from the first dump of this file
            for beams, lpen, max_tokens in cases:
                name = label(mi["name"], a["name"], beams, lpen, max_tokens)
                fails, meas = [], {}
                c, err = P.run_dump(model_dir, os.path.join(P.fixtures, a["path"]),
                                    dump_args(beams, lpen, max_tokens), ("samples",), DUMP_TIMEOUT)
                if err:
                    P.report(name, [err])
                    continue
                res, samples = c["result"], c["samples"]
                try:
                    m = P.model(model_dir)
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
                shown = " ".join("%s=%.1e" % (k, meas[k]) for k in ("lp", "score") if k in meas)
                if "ntok" in meas:
                    shown += " tokens=%d" % meas["ntok"]
                P.report(name, fails, shown)


if __name__ == "__main__":
    sys.exit(PL.run_cases(PL.Parity("hv-beams-", 58), run))
