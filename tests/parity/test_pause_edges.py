"""Speech region edges and onsets on joined recordings (docs/VAD.md,
"Onsets" and "Edges").

Edges: three held-out utterances (research/train-demo/pauses.py, seed 44,
recording 1) joined by pauses of 5-6 s, in digital silence and in mains
hum. With Silero's regions as they are, the third utterance's first words
start before the audio that is sent to the encoder; by default every
reference word starts inside it, and the `hviske` CLI transcribes the
utterance's first words.

Onsets (issue #51): three held-out recordings, each 8 utterances joined by
6 s of digital silence: two with hard onsets (seed 89 recording 1, seed
101 recording 0), one whose utterances fade in over 0.4 s (seed 67
recording 0). In each, Silero's own regions leave words outside the audio
sent to the encoder, and the edges rule alone on them (at most 1.5 s back)
lost a whole utterance or its first words. With the default now (the
detector forwards and backwards, its state reset after digital silence,
then the edges) every reference word starts inside the kept audio, and
the CLI's transcript of the joined recording loses no word that its
utterances transcribed one file each give."""
import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, SOURCE_DIR, finish, reexec_with_sanitizers,  # noqa: E402
                    report, sanitized, skip_or_fail)

TOOLS = os.path.join(SOURCE_DIR, "research", "train-demo")
sys.path.insert(0, TOOLS)
LIB = os.path.join(os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE_DIR, "build")), "libhviske.so")
VAD = os.path.join(SOURCE_DIR, "models", "silero-vad")
ONSET_CASES = [(89, 1, 0.0), (101, 0, 0.0), (67, 0, 0.4)]  # seed, recording, soft onset (s)
ONSET_GAP_S = 6.0


def transcripts(files):
    """{path: text} of the CLI (default settings) for files, one run."""
    p = subprocess.run([CLI, "-m", DEMO_MODEL, "--json", "-q"] + files, capture_output=True,
                       text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"hviske failed ({p.returncode}): {p.stderr[-1000:]}")
    return {os.path.abspath(o["file"]): o["text"] for o in map(json.loads, p.stdout.splitlines())}


def test_onsets(ev, pauses, ew, tmp):
    regions = {e: ev.Regions(LIB, DEMO_MODEL, VAD, e) for e in ("silero", "signal")}
    recs = [pauses.make(ew, os.path.join(tmp, f"s{seed}"), seed, i, ["silence"], 8, singles=True,
                        gap=ONSET_GAP_S, soft=soft) for seed, i, soft in ONSET_CASES]
    text = transcripts([f for r in recs for f in [r["kinds"]["silence"]["wav"]] +
                        r["kinds"]["silence"]["singles"]])
    for (seed, i, soft), rec in zip(ONSET_CASES, recs):
        k = rec["kinds"]["silence"]
        truth = pauses.load_truth(rec["truth"])
        words = [w for w in truth["words"] if any(c.isalnum() for c in w["word"])]
        what = f"seed {seed} recording {i}, {ONSET_GAP_S:g} s of digital silence" + (
            f", onsets faded in over {soft:g} s" if soft else "")
        found = {}
        for edges, r in regions.items():
            spans = ev.kept_spans(r(k["wav"]), truth["duration"])
            found[edges] = [f"{w['word']}@{w['start']:.2f}" for w in ev.outside(words, spans)]
        report(f"{what}: Silero's own regions leave words out ({len(found['silero'])})",
               len(found["silero"]) > 0, "none: the recording does not show the fault")
        report(f"{what}: by default every word starts in the kept audio", found["signal"] == [],
               f"outside: {found['signal']}")
        refs = [s["text"] for s in truth["sentences"]]
        joined = text[os.path.abspath(k["wav"])]
        singles = [text[os.path.abspath(f)] for f in k["singles"]]
        lost = ev.lost_words(refs, joined, singles)
        ej, nj = ev.wer([(" ".join(refs), joined)])
        es, ns = ev.wer(list(zip(refs, singles)))
        report(f"{what}: the joined recording loses no word that the utterances one file each "
               f"give (WER {100 * ej / nj:.2f} % joined, {100 * es / ns:.2f} % one file each)",
               lost == [], f"lost: {lost}\n  joined: {joined}")


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()  # the detector runs in libhviske via ctypes
    ew = os.environ.get("HV_ESPEAK_WORDS")
    if not ew or not os.path.isfile(ew):
        skip_or_fail("pause edges", "espeak-words was not built (libespeak-ng-dev missing)")
        return finish()
    ev = importlib.machinery.SourceFileLoader("evaluate_pauses", os.path.join(TOOLS, "evaluate-pauses")).load_module()
    import pauses
    import textgen
    tmp = tempfile.mkdtemp(prefix="hv-pause-edges-")
    try:
        rec = pauses.make(ew, tmp, 44, 1, ["silence", "hum"], n_utts=3, singles=False)
        truth = pauses.load_truth(rec["truth"])
        words = [w for w in truth["words"] if any(c.isalnum() for c in w["word"])]
        third = truth["sentences"][2]
        for kind in ("silence", "hum"):
            wav = rec["kinds"][kind]["wav"]
            found = {}
            for edges in ("silero", "signal"):
                spans = ev.kept_spans(ev.Regions(LIB, DEMO_MODEL, VAD, edges)(wav), truth["duration"])
                found[edges] = [w["word"] for w in ev.outside(words, spans)]
            report(f"{kind}: Silero's own regions leave the third utterance's first words out",
                   len(found["silero"]) > 0, f"outside: {found['silero']}")
            report(f"{kind}: by default every word starts in the kept audio",
                   found["signal"] == [], f"outside: {found['signal']}")
            p = subprocess.run([CLI, "-m", DEMO_MODEL, "-q", wav], capture_output=True, text=True, timeout=600)
            first = " ".join(textgen.norm(third["text"]).split()[:3])
            report(f"{kind}: hviske transcribes the third utterance's first words ({first!r})",
                   p.returncode == 0 and first in textgen.norm(p.stdout), p.stdout + p.stderr)
        test_onsets(ev, pauses, ew, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
