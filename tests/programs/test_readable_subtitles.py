#!/usr/bin/env python3
"""Readable subtitles by default (issue #61, item 4).

A 4-minute synthetic recording (espeak-ng speaking the demo model's
sentences, research/train-demo/textgen.py, at 130 to 180 words a minute
with pauses of 0.1 to 2 s) is transcribed by hviske twice: with the default cue rules,
and with the readability rules off (--max-cue-cps 0 --min-cue-seconds 0
--min-cue-gap 0: each cue from its first word's start to its last word's
end). Printed: the share of cues over 17 and over 20 characters a second,
the fastest, the cues under 5/6 s and the gaps under 2 frames, for both.
Checked:
  * the words and their times in the JSON are the same in both runs, and
    so are the cues' texts and starts; no cue ends earlier;
  * with the defaults every cue over 17 characters a second or shorter
    than 5/6 s is one the next cue stops (it ends at the next cue's start
    or 2 frames before it) or its chunk's end stops; no gap between two
    cues of a chunk is under 2 frames;
  * fewer cues are over 17 and over 20 characters a second than without;
  * --max-cue-cps, --min-cue-seconds and --min-cue-gap out of range are
    usage errors naming the option.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, SOURCE_DIR, Run, finish_in, report, skip_or_fail  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "research", "train-demo"))
import textgen  # noqa: E402

OFF = ["--max-cue-cps", "0", "--min-cue-seconds", "0", "--min-cue-gap", "0"]
PAUSES = [0.1, 0.3, 0.6, 1.0, 2.0, 0.2, 0.8]
SPEEDS = [130, 150, 165, 180]


def recording(tmp, seconds=240.0):
    """espeak-ng sentences with pauses between, one WAV at espeak's rate."""
    rng = random.Random(61)
    frames, rate, i = [], None, 0
    total = 0.0
    while total < seconds:
        text = textgen.raw_sentence(rng)
        p = subprocess.run(["espeak-ng", "-v", "da", "-s", str(SPEEDS[i % len(SPEEDS)]),
                            "--stdout", text], capture_output=True, check=True)
        path = os.path.join(tmp, "u.wav")
        with open(path, "wb") as f:
            f.write(p.stdout)
        with wave.open(path, "rb") as w:
            rate = w.getframerate()
            pcm = w.readframes(w.getnframes())
        gap = b"\0\0" * int(PAUSES[i % len(PAUSES)] * rate)
        frames += [pcm, gap]
        total += len(pcm) / 2 / rate + len(gap) / 2 / rate
        i += 1
    out = os.path.join(tmp, "long.wav")
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(frames))
    return out, total


def stats(res):
    """(cues as (start, end, chars, chunk end), share over 17, over 20,
    fastest, under 5/6 s, gaps under 2 frames inside a chunk)."""
    cues = []
    for seg in res["segments"]:
        chunk_end = next(c["end"] for c in res["chunks"]
                         if c["start"] - 1e-3 <= seg["start"] and seg["start"] <= c["end"] + 1e-3)
        cues.append((seg["start"], seg["end"], len(seg["text"]), chunk_end))
    cps = [n / (e - s) for s, e, n, _ in cues]
    short = sum(1 for s, e, _, _ in cues if e - s < 5 / 6 - 1e-9)
    gaps = sum(1 for a, b in zip(cues, cues[1:])
               if a[3] == b[3] and 1e-9 < b[0] - a[1] < 0.08 - 1e-9)
    n = len(cues)
    return (cues, sum(c > 17 for c in cps) / n, sum(c > 20 for c in cps) / n, max(cps), short,
            gaps)


def main():
    tmp = tempfile.mkdtemp(prefix="hv-readable-")
    for opt in ("--max-cue-cps", "--min-cue-seconds", "--min-cue-gap"):
        r = Run(["-m", DEMO_MODEL, opt, "-1", "--format", "srt", "x.wav"])
        report(f"{opt} -1: a usage error naming it", r.rc == 2 and opt in r.err, str(r))
    if subprocess.run(["which", "espeak-ng"], capture_output=True).returncode != 0:
        skip_or_fail("the long recording", "espeak-ng is missing")
        return finish_in(tmp)
    wav, seconds = recording(tmp)
    base = ["-m", DEMO_MODEL, "-q", "--format", "json", "--word-timestamps", wav]
    on, off = Run(base), Run(base[:-1] + OFF + [wav])
    if on.rc != 0 or off.rc != 0:
        report("the long recording transcribed", False, f"{on} {off}")
        return finish_in(tmp)
    a, b = json.loads(on.out), json.loads(off.out)
    report("the words and their times are the same with and without the rules",
           a["words"] == b["words"] and len(a["words"]) > 100, f"{len(a['words'])} words")
    report("the cues' texts and starts are the same, no end earlier",
           [(s["text"], s["start"]) for s in a["segments"]] ==
           [(s["text"], s["start"]) for s in b["segments"]] and
           all(x["end"] >= y["end"] for x, y in zip(a["segments"], b["segments"])), "")
    ca, over17a, over20a, fasta, shorta, gapsa = stats(a)
    cb, over17b, over20b, fastb, shortb, gapsb = stats(b)
    print(f"info  {seconds:.0f} s, {len(ca)} cues; without the rules: {over17b:.0%} over "
          f"17 c/s, {over20b:.0%} over 20, fastest {fastb:.1f}, {shortb} under 5/6 s, "
          f"{gapsb} gaps under 2 frames; with them: {over17a:.0%} over 17, {over20a:.0%} over "
          f"20, fastest {fasta:.1f}, {shorta} under 5/6 s, {gapsa} gaps under 2 frames")
    bad = []
    for k, (s, e, n, chunk_end) in enumerate(ca):
        if n / (e - s) <= 17 + 1e-6 and e - s >= 5 / 6 - 2e-3:
            continue
        nxt = ca[k + 1][0] if k + 1 < len(ca) else None
        stopped = (nxt is not None and (abs(e - nxt) < 1e-6 or abs(e - (nxt - 0.08)) < 1e-6)) \
            or abs(e - chunk_end) < 2e-3
        if not stopped:
            bad.append((k, s, e, n))
    report("a cue over 17 c/s or under 5/6 s is one the next cue or its chunk stops",
           not bad, f"{bad[:5]}")
    report("no gap under 2 frames between the cues of a chunk", gapsa == 0, f"{gapsa}")
    report("fewer cues over 17 and over 20 c/s than without the rules",
           over17a < over17b and over20a < over20b,
           f"{over17a:.2f} {over17b:.2f} {over20a:.2f} {over20b:.2f}")
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
