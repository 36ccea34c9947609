"""Speech region edges on a joined recording (docs/VAD.md, "Edges"): three
held-out utterances (research/train-demo/pauses.py, seed 44, recording 1)
joined by pauses of 5-6 s, in digital silence and in mains hum. With
Silero's regions as they are, the third utterance's first words start
before the audio that is sent to the encoder; with the default edges
(from the signal) every reference word starts inside it, and the `hviske`
CLI transcribes the utterance's first words."""
import importlib.machinery
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
            report(f"{kind}: with the edges from the signal every word starts in the kept audio",
                   found["signal"] == [], f"outside: {found['signal']}")
            p = subprocess.run([CLI, "-m", DEMO_MODEL, "-q", wav], capture_output=True, text=True, timeout=600)
            first = " ".join(textgen.norm(third["text"]).split()[:3])
            report(f"{kind}: hviske transcribes the third utterance's first words ({first!r})",
                   p.returncode == 0 and first in textgen.norm(p.stdout), p.stdout + p.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
