#!/usr/bin/env python3
"""Hotwords (issue #61, item 5): contextual biasing in the decoder.

espeak-ng says "husk mødet med NAME på mandag klokken tre" for first names
the demo model never heard (its 36 names are research/train-demo/
textgen.py's); the demo model writes a name it knows instead. Checked:
  * with --hotwords NAME (at some --hotwords-score of a few tried) at least
    one of them comes out exactly as spoken, greedy; the case is printed;
  * no change at all, JSON byte for byte (tokens, log-probs, times), with
    --hotwords "" or " , ", in greedy and beam search, and with a list
    whose phrases the audio never starts (only matched tokens move);
  * beam search with hotwords runs and is biased too (some name changes);
  * a phrase the vocabulary cannot encode is refused, naming it; a
    --hotwords-score out of range is a usage error naming the option.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, SOURCE_DIR, Run, finish_in, report, skip_or_fail  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "research", "train-demo"))
import textgen  # noqa: E402

NAMES = ["Tobias", "Torben", "Frida", "Karina", "Bent"]  # none of textgen.NAMES
SCORES = ["6", "7", "8", "9"]
SENTENCE = "husk mødet med %s på mandag klokken tre"


def speak(tmp, name):
    path = os.path.join(tmp, name + ".wav")
    subprocess.run(["espeak-ng", "-v", "da", "-s", "150", "-w", path, SENTENCE % name],
                   check=True, capture_output=True)
    return path


def text(args):
    r = Run(["-m", DEMO_MODEL, "-q"] + args)
    return r, r.out.strip()


def without_timings(r):
    """The JSON result less its timings (milliseconds differ run to run)."""
    try:
        d = json.loads(r.out)
    except ValueError:
        return None
    d.pop("timings", None)
    return d


def main():
    tmp = tempfile.mkdtemp(prefix="hv-hotwords-")
    r = Run(["-m", DEMO_MODEL, "--hotwords-score", "0", "x.wav"])
    report("--hotwords-score 0: a usage error naming it",
           r.rc == 2 and "--hotwords-score" in r.err, str(r))
    if subprocess.run(["which", "espeak-ng"], capture_output=True).returncode != 0:
        skip_or_fail("hotwords on spoken names", "espeak-ng is missing")
        return finish_in(tmp)
    for name in NAMES:
        assert name not in textgen.NAMES
    wavs = {n: speak(tmp, n) for n in NAMES}
    want = {n: (SENTENCE % n)[0].upper() + (SENTENCE % n)[1:] + "." for n in NAMES}

    fixed, biased_beam, wrong = [], [], []
    for n in NAMES:
        base, t0 = text([wavs[n]])
        if base.rc != 0:
            report(f"{n}: transcribed", False, str(base))
            continue
        if t0 == want[n]:
            continue  # already right: nothing to show with this name
        wrong.append(n)
        for s in SCORES:
            r, t = text(["--hotwords", n, "--hotwords-score", s, wavs[n]])
            if r.rc == 0 and t == want[n]:
                fixed.append((n, s, t0))
                break
        r, t = text(["--beams", "4", "--hotwords", n, "--hotwords-score", SCORES[-1], wavs[n]])
        rb, tb = text(["--beams", "4", wavs[n]])
        if r.rc == 0 and rb.rc == 0 and n in t and n not in tb:
            biased_beam.append(n)
    for n, s, t0 in fixed:
        print(f"      {n}: {t0!r} without, {want[n]!r} with --hotwords-score {s}")
    report("a name the model gets wrong comes out right with --hotwords", len(fixed) > 0,
           f"wrong without: {wrong}; none exact with scores {SCORES}")
    report("beam search is biased too", len(biased_beam) > 0, f"names tried: {wrong}")

    # no change at all (but timings) without phrases, or with phrases that
    # never start
    w = wavs[NAMES[0]]
    for mode in ([], ["--beams", "3"]):
        plain = Run(["-m", DEMO_MODEL, "-q", "--format", "json"] + mode + [w])
        for hw in ("", " , ", "Kierkegaard,Hjørring"):
            r = Run(["-m", DEMO_MODEL, "-q", "--format", "json", "--hotwords", hw] + mode + [w])
            report(f"--hotwords {hw!r} {' '.join(mode)}: the same JSON",
                   plain.rc == 0 and r.rc == 0 and without_timings(plain) is not None
                   and without_timings(r) == without_timings(plain), f"{plain} {r}")

    r = Run(["-m", DEMO_MODEL, "-q", "--hotwords", "Mette,Yrsa", w])
    report("a phrase the vocabulary cannot encode: refused, naming it and the character",
           r.rc != 0 and "Yrsa" in r.err and "cannot be encoded" in r.err
           and "piece for \"Y\"" in r.err and not r.out, str(r))
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
