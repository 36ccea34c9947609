#!/usr/bin/env python3
"""What reduced-precision weights or compute change in the transcripts:
each weight type's (or compute mode's) greedy tokens and log-probs
against a baseline's, on the same files, through the CLI.

    bench/weight_quality.py --model DIR [--hviske build/hviske]
        [--base T[@C]] [--types T[@C],...] [--chunking MODE] [-t N] [--json]
        (FILE... | --files-from LIST)

A type is a weight type T, or T@C for weight type T with compute mode C
(`--compute C`: auto, f32 or bf16; without @C the engine's default,
auto): `--base bf16@f32 --types bf16@bf16` compares bf16 compute with f32
compute on bf16 weights. Each type runs once over all files (`hviske
--json --weight-type T [--compute C]`, one model load). Per type and file: whether the token sequence is the
baseline's, how many tokens agree before the first difference, and on
that common prefix the per-token log-prob differences; for identical
sequences also the difference of the whole score. The table has, per
type: files with identical sequences, the tokens compared, the mean and
largest |difference| of a token's log-prob, the largest |difference| of
an identical sequence's score, and the mean share of a sequence's tokens
before its first difference. --json prints the same as one object.

Exit status: 0 ok, 2 a run failed or printed what this cannot read (the
engine's message is shown). Word error rates need reference texts: the
demo model's are `research/train-demo/evaluate --engine-arg=--weight-type
--engine-arg=T`; this tool needs none, so it runs on any audio and any
checkpoint.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# file names as bytes: any name a file system holds, the same in the list,
# the engine's arguments and its output
TEXT = {"encoding": "utf-8", "errors": "surrogateescape"}


def transcribe(hviske, model, wtype, files, chunking, threads):
    """{index in files: (tokens, token_logprobs, score)} of one weight
    type (T or T@C, C a compute mode), or raises RuntimeError with the
    engine's message."""
    wtype, _, compute = wtype.partition("@")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, **TEXT) as f:
        f.write("".join(p + "\n" for p in files))
        listing = f.name
    try:
        cmd = [hviske, "-m", model, "-q", "--json", "--weight-type", wtype,
               "--files-from", listing]
        if compute:
            cmd += ["--compute", compute]
        if chunking:
            cmd += ["--chunking", chunking]
        if threads:
            cmd += ["-t", str(threads)]
        p = subprocess.run(cmd, capture_output=True, **TEXT)
    finally:
        os.unlink(listing)
    if p.returncode != 0:
        raise RuntimeError(f"{wtype}: {' '.join(cmd)} exited {p.returncode}: "
                           f"{p.stderr.strip()[-500:]}")
    # one line per input, in the inputs' order (jsonl); matched by
    # position, since a file may be given twice
    lines = p.stdout.splitlines()
    if len(lines) != len(files):
        raise RuntimeError(f"{wtype}: {len(lines)} results for {len(files)} files")
    out = {}
    for i, (name, line) in enumerate(zip(files, lines)):
        try:
            r = json.loads(line)
            out[i] = (list(r["tokens"]), list(r["token_logprobs"]), float(r["score"]))
        except (ValueError, KeyError, TypeError) as e:
            raise RuntimeError(f"{wtype}: unreadable result for {name} ({e}): {line[:200]}")
    return out


def compare(base, other):
    """Figures of one type's results against the baseline's, both as
    transcribe() returns them, over the baseline's files."""
    files = identical = compared = 0
    dsum = dmax = score_max = prefix_share = 0.0
    for key, (btok, blp, bscore) in base.items():
        tok, lp, score = other[key]
        files += 1
        n = 0
        while n < len(btok) and n < len(tok) and btok[n] == tok[n]:
            n += 1
        for a, b in zip(blp[:n], lp[:n]):
            d = abs(a - b)
            dsum += d
            dmax = max(dmax, d)
        compared += n
        longest = max(len(btok), len(tok))
        prefix_share += n / longest if longest else 1.0
        if tok == btok:
            identical += 1
            score_max = max(score_max, abs(score - bscore))
    return {
        "files": files,
        "identical": identical,
        "identical_share": identical / files if files else 0.0,
        "tokens_compared": compared,
        "logprob_mean_abs_diff": dsum / compared if compared else 0.0,
        "logprob_max_abs_diff": dmax,
        "score_max_abs_diff_identical": score_max,
        "prefix_share_mean": prefix_share / files if files else 0.0,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--hviske", default=os.path.join(HERE, "..", "build", "hviske"))
    ap.add_argument("--base", default="f32",
                    help="the baseline weight type, T or T@COMPUTE (default f32)")
    ap.add_argument("--types", default="q8_0,q4_0",
                    help="comma-separated types to compare, each T or T@COMPUTE")
    ap.add_argument("--chunking", help="the engine's --chunking (default: its own)")
    ap.add_argument("-t", "--threads", type=int)
    ap.add_argument("--files-from", help="the files, one path per line")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args(argv)
    files = list(a.files)
    if a.files_from:
        try:
            with open(a.files_from, **TEXT) as f:
                files += [line.strip() for line in f if line.strip()]
        except OSError as e:
            print(f"weight_quality: {a.files_from}: {e.strerror}", file=sys.stderr)
            return 2
    if not files:
        print("weight_quality: no files (FILE... or --files-from LIST)", file=sys.stderr)
        return 2
    types = [t for t in a.types.split(",") if t]
    try:
        base = transcribe(a.hviske, a.model, a.base, files, a.chunking, a.threads)
        result = {t: compare(base, transcribe(a.hviske, a.model, t, files, a.chunking, a.threads))
                  for t in types}
    except (RuntimeError, OSError) as e:
        print(f"weight_quality: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({"model": a.model, "base": a.base, "types": result}))
        return 0
    print(f"model {a.model}, {len(files)} files, against {a.base}")
    print("| type | identical sequences | tokens compared | mean abs log-prob diff | "
          "max abs log-prob diff | max abs score diff (identical) | mean share before "
          "the first difference |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t, r in result.items():
        print(f"| {t} | {r['identical']} of {r['files']} ({100 * r['identical_share']:.1f}%) | "
              f"{r['tokens_compared']} | {r['logprob_mean_abs_diff']:.2e} | "
              f"{r['logprob_max_abs_diff']:.2e} | {r['score_max_abs_diff_identical']:.2e} | "
              f"{100 * r['prefix_share_mean']:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
