#!/usr/bin/env python3
"""The trained demo model (models/demo) through the C engine:

- the bundled example (examples/da-example.wav) gives its sentence;
- greedy WER on a 30-utterance held-out subset made at test time by the
  seeded generator (sentences and voices never used in training) is at
  most 5 % (research/train-demo/evaluate --ci);
- reduced-precision weights keep the transcripts: greedy tokens identical
  to f32 for at least 95 % of the files with f16, bf16 and q8_0, and 90 %
  with q4_0 (measured: 28 of these 30, and 198 of 200 clean held-out
  utterances of `evaluate --count 200`), with the
  log-prob differences reported;
- bf16 compute, auto's mode on CPUs with native bf16 (AMX, AMD Zen 4 and
  5), keeps the transcripts of f32 compute on 120 more held-out
  utterances (seed 4242): the same text for at least 98 % of them and WER
  within 0.1 points (on a CPU without native bf16 the mode is emulated,
  with the same roundings of the activations; measured: docs/KERNELS.md).

Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import finish, report  # noqa: E402

ROOT = os.environ.get("HV_SOURCE_DIR", os.path.dirname(HERE))
CLI = os.environ.get("HV_CLI", os.path.join(ROOT, "build", "hviske"))
MODEL = os.path.join(ROOT, "models", "demo")
EVALUATE = os.path.join(ROOT, "research", "train-demo", "evaluate")
EXAMPLE_TEXT = "I morgen bliver det gråt med minus tyve grader."  # examples/README.md


def transcribe(files, weight_type, compute="f32"):
    r = subprocess.run([CLI, "-m", MODEL, "--json", "--dither", "0", "--weight-type", weight_type,
                        "--compute", compute] + files, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return None, r.stderr[-500:]
    out = {}
    for line in r.stdout.splitlines():
        o = json.loads(line)
        out[o["file"]] = o
    return out, ""


def held_out(folder):
    """evaluate's scorer, and the items (file, sentence, voice) of the files
    it wrote to folder (its report)."""
    import importlib.machinery
    sys.path.insert(0, os.path.dirname(EVALUATE))
    ev = importlib.machinery.SourceFileLoader("evaluate", EVALUATE).load_module()
    with open(os.path.join(folder, "report.json"), encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    return ev, [dict(r, file=os.path.join(folder, r["file"])) for r in rows]


def check_bf16_compute(tmp):
    folder = os.path.join(tmp, "bf16")
    r = subprocess.run(["/usr/bin/python3", EVALUATE, "--conditions", "clean", "--count", "120", "--seed",
                        "4242", "--chunkings", "default", "--engine", CLI, "--model", MODEL, "--out", folder,
                        "--report", os.path.join(folder, "report.json")],
                       capture_output=True, text=True, timeout=1800)
    report("120 more held-out utterances", r.returncode == 0, r.stdout[-300:] + r.stderr[-300:])
    if r.returncode != 0:
        return
    ev, items = held_out(folder)
    files = [it["file"] for it in items]
    runs = {}
    for compute in ("f32", "bf16"):
        got, why = transcribe(files, "auto", compute)
        report(f"{compute} compute run", got is not None, why)
        if got is None:
            return
        runs[compute] = got
    same = sum(runs["f32"][f]["text"] == runs["bf16"][f]["text"] for f in files)
    print(f"# bf16 compute: the same text as f32 compute for {same} of {len(files)} files")
    report("bf16 compute: the same text as f32 for >= 98 % of files", same * 100 >= 98 * len(files),
           f"{same} of {len(files)}")
    w = {c: ev.score(items, {os.path.abspath(f): runs[c][f]["text"] for f in files})[0]["wer"] for c in runs}
    print(f"# WER f32 {w['f32']:.2f} %, bf16 {w['bf16']:.2f} %")
    report("bf16 compute: WER within 0.1 points of f32", abs(w["bf16"] - w["f32"]) <= 0.1,
           f"f32 {w['f32']:.2f} %, bf16 {w['bf16']:.2f} %")


def main():
    if not os.path.isfile(os.path.join(MODEL, "config.json")):
        report("demo model present", False, f"{MODEL} has no config.json")
        return finish()
    # the README's first command: make run transcribes the bundled example
    r = subprocess.run([CLI, "-m", MODEL, os.path.join(ROOT, "examples", "da-example.wav")],
                       capture_output=True, text=True, timeout=300)
    report("the bundled example is transcribed right",
           r.returncode == 0 and r.stdout.strip() == EXAMPLE_TEXT, repr(r.stdout) + r.stderr[-300:])
    with tempfile.TemporaryDirectory(prefix="hv-demo-") as tmp:
        r = subprocess.run(["/usr/bin/python3", EVALUATE, "--ci", "--engine", CLI, "--model", MODEL,
                            "--out", tmp, "--report", os.path.join(tmp, "report.json")],
                           capture_output=True, text=True, timeout=1800)
        print(r.stdout.strip())
        report("held-out WER <= 5 % (30 utterances, evaluate --ci)", r.returncode == 0,
               r.stdout[-300:] + r.stderr[-300:])
        files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".wav"))
        report("held-out audio generated", len(files) >= 30, f"{len(files)} files")
        ref, why = transcribe(files, "f32")
        report("f32 run", ref is not None, why)
        if ref is None:
            return finish()
        for wt in ("f16", "bf16", "q8_0", "q4_0"):
            got, why = transcribe(files, wt)
            if got is None:
                report(f"{wt} run", False, why)
                continue
            same, worst = 0, 0.0
            for f in files:
                a, b = ref[f], got[f]
                same += a["tokens"] == b["tokens"]
                for x, y, ta, tb in zip(a["token_logprobs"], b["token_logprobs"], a["tokens"], b["tokens"]):
                    if ta != tb:
                        break
                    worst = max(worst, abs(x - y))
            print(f"# {wt}: tokens identical to f32 for {same} of {len(files)} files; "
                  f"worst token log-prob difference {worst:.2e}")
            need = 90 if wt == "q4_0" else 95
            report(f"{wt}: greedy tokens identical to f32 for >= {need} % of files",
                   same * 100 >= need * len(files), f"{same} of {len(files)}")
        check_bf16_compute(tmp)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
