#!/usr/bin/env python3
"""The evaluation scripts' word and character error rates
(research/train-demo/evaluate: edit_distance and score, after textgen.norm)
against jiwer (pinned in tests/oracle/requirements.lock), the WER library
most speech projects report with:

  * on the held-out sets' transcripts: `evaluate` run on the demo model
    through the engine (conditions clean, lowsnr and fast, 15 utterances
    each, seed 59, chunking energy), its report's rows: each utterance's
    word errors equal jiwer.process_words' substitutions + deletions +
    insertions on the same normalised texts, each condition's WER and CER
    equal jiwer.wer and jiwer.cer over the condition (to 1e-9); some
    utterance must have errors, or the comparison would prove nothing;
  * on made pairs (insertions, deletions, substitutions, repeats, an
    empty hypothesis): the same, word and character.

Environment: HV_CLI, HV_SOURCE_DIR. One line per case, then "N passed, M
failed".
"""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import CLI, DEMO_MODEL, SOURCE_DIR, finish_in, oracle_import, report  # noqa: E402

jiwer = oracle_import("jiwer")

EVALUATE = os.path.join(SOURCE_DIR, "research", "train-demo", "evaluate")
CONDITIONS = ("clean", "lowsnr", "fast")
PAIRS = [
    ("det regner i dag", "det regner i dag"),
    ("det regner i dag", "det regner meget i dag"),
    ("det regner meget i dag", "det regner i dag"),
    ("hej hvordan har du det", "hej hvor dan har du det det"),
    ("en to tre", ""),
    ("en to tre fire fem", "fem fire tre to en"),
    ("kaffe med mælk", "kaffe uden mælk og sukker"),
]


def load_evaluate():
    loader = importlib.machinery.SourceFileLoader("hv_evaluate", EVALUATE)
    spec = importlib.util.spec_from_loader("hv_evaluate", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    import textgen  # on the path evaluate puts first
    return mod, textgen


def word_errors(ref, hyp):
    if not ref:
        return len(hyp.split())
    o = jiwer.process_words(ref, hyp)
    return o.substitutions + o.deletions + o.insertions


def char_errors(ref, hyp):
    if not ref:
        return len(hyp)
    o = jiwer.process_characters(ref, hyp)
    return o.substitutions + o.deletions + o.insertions


def main():
    tmp = tempfile.mkdtemp(prefix="hv-wer-")
    E, textgen = load_evaluate()
    from importlib.metadata import version
    print("# jiwer %s" % version("jiwer"))
    for ref, hyp in PAIRS:
        we, ce = E.edit_distance(ref.split(), hyp.split()), E.edit_distance(list(ref), list(hyp))
        jw, jc = word_errors(ref, hyp), char_errors(ref, hyp)
        report("made pair %r / %r: word errors %d, char errors %d" % (ref, hyp, we, ce),
               (we, ce) == (jw, jc), "jiwer %d, %d" % (jw, jc))
    rep = os.path.join(tmp, "report.json")
    p = subprocess.run(["/usr/bin/python3", EVALUATE, "--engine", CLI, "--model", DEMO_MODEL,
                        "--conditions", ",".join(CONDITIONS), "--count", "15", "--seed", "59",
                        "--chunkings", "energy", "--out", os.path.join(tmp, "audio"),
                        "--report", rep], capture_output=True, text=True, timeout=1800)
    if p.returncode not in (0, 1) or not os.path.exists(rep):
        report("evaluate ran", False, "rc=%s %s %s" % (p.returncode, p.stdout[-500:],
                                                       p.stderr[-800:]))
        return finish_in(tmp)
    with open(rep, encoding="utf-8") as f:
        r = json.load(f)
    any_errors = False
    for cond in CONDITIONS:
        rows = r["conditions"].get(cond) or []
        refs = [textgen.norm(x["ref"]) for x in rows]
        hyps = [textgen.norm(x["hyp"]) for x in rows]
        bad = [x["file"] for x, rf, h in zip(rows, refs, hyps)
               if x["word_errors"] != word_errors(rf, h)]
        any_errors |= any(x["word_errors"] for x in rows)
        res = r["results"][cond]
        jw, jc = 100.0 * jiwer.wer(refs, hyps), 100.0 * jiwer.cer(refs, hyps)
        report("%s: %d utterances, each one's word errors jiwer's; WER %.3f %% and CER %.3f %% "
               "jiwer's" % (cond, len(rows), res["wer"], res["cer"]),
               rows and not bad and abs(res["wer"] - jw) < 1e-9 and abs(res["cer"] - jc) < 1e-9,
               "differ: %s; jiwer WER %.6f CER %.6f" % (bad, jw, jc))
    report("the held-out transcripts have errors to compare", any_errors, "none had an error")
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
