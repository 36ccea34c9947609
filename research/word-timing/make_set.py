#!/usr/bin/python3
"""Generates a held-out set for word timestamps (README.md in this folder):

    research/word-timing/make_set.py --out DIR [--seed 1] [--n-files 40] [--verify]

writes DIR/wtNNN.wav (16-bit, 22050 Hz), DIR/wtNNN.json (the truth: every
word's start and end) and DIR/manifest.json. The same seed gives the same
files. --verify also measures the truth against the audio of the
noise-free files (wordtiming.audio_check) and prints the figures.

Exit status: 0 success, 1 failure, 2 bad usage.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wordtiming as wt  # noqa: E402


def verify(out_dir, manifest, truths):
    """Prints the truth-against-audio figures; returns them."""
    agg = {"onset_stop": [], "onset_other": [], "before": [], "end": []}
    for e in manifest["files"]:
        if e["noise"] != "none":
            continue
        r = wt.audio_check(os.path.join(out_dir, e["wav"]), truths[e["name"]])
        for k in agg:
            agg[k] += r[k]
    ms = lambda xs, q: 1000 * wt.percentile(xs, q)  # noqa: E731
    for k, what in (("onset_other", "sound starts after the start (other first sounds)"),
                    ("onset_stop", "sound starts after the start (p, t, k: the closure)"),
                    ("end", "last sound above 3 %% of the peak minus the end")):
        xs = agg[k]
        if xs:
            print("%-60s n=%3d  min %6.1f  median %6.1f  p90 %6.1f  max %6.1f ms"
                  % (what.replace("%%", "%"), len(xs), ms(xs, 0), ms(xs, 50), ms(xs, 90),
                     ms(xs, 100)))
    if agg["before"]:
        print("loudest sample in the pause before a sentence's first word: %.4f of the peak"
              % max(agg["before"]))
    return agg


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the set (created)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n-files", type=int, default=40)
    ap.add_argument("--espeak-words", default=None,
                    help="the program (default: $HV_ESPEAK_WORDS, else build/espeak-words)")
    ap.add_argument("--verify", action="store_true", help="measure the truth against the audio")
    a = ap.parse_args()
    if a.n_files < 1 or a.n_files > 10000 or a.seed < 0:
        ap.error("--n-files must be 1..10000 and --seed >= 0")
    prog = wt.espeak_words_path(a.espeak_words)
    if not prog:
        print("make_set: espeak-words not found (build it: libespeak-ng-dev, then cmake; "
              "or pass --espeak-words)", file=sys.stderr)
        return 1
    try:
        m = wt.make_set(a.out, a.seed, a.n_files, prog)
    except (RuntimeError, OSError) as e:
        print("make_set: %s" % e, file=sys.stderr)
        return 1
    print("%d files, %.1f s of audio (%.1f-%.1f s each), %d words, seed %d: %s"
          % (m["n_files"], m["total_s"], min(f["duration"] for f in m["files"]),
             max(f["duration"] for f in m["files"]), m["n_words"], a.seed, a.out))
    if a.verify:
        _, truths = wt.load_set(a.out)
        verify(a.out, m, truths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
