#!/usr/bin/env python3
"""The trained diarize demo model (models/demo-diarize) through the C
engine, on dialogues it never saw: research/train-demo's dialogues.py makes
them at test time (split test: held-out espeak-ng voices and sentences;
seed SEED, not the model card's evaluation seed 4321), and the CLI
transcribes them with --diarize as the card says (greedy without a
repetition penalty, --chunking energy, f32 compute):

  * windows (ONE dialogues of at most 25 s, the model's max_audio_clip_s:
    one window each; 2-3 speakers):
    DER (collar 0.25 s) over all of them <= DER_ONE, as many labels as
    speakers heard (a speaker with a turn half covered by segments: a
    turn the model left out is no speaker to label) in at least RIGHT_ONE
    of them, the median turn start within 0.3 s;
  * minutes (LONG dialogues of about two minutes, 2 and 3 speakers, in
    windows linked by the engine's rules): DER <= DER_LONG, speaker-
    attributed WER within SA_GAP points of the plain WER, the median turn
    start within START_LONG s;
  * without --diarize the model transcribes with the plain prompt: WER <=
    PLAIN_WER on the minutes.

The bounds are the figures of these dialogues (windows: DER 8.7 %, the
right number in 3 of 4; minutes: DER 5.4 %, speaker-attributed WER 1.2 %
against 1.2 %, turn starts 0.0 s median; plain WER 1.2 %; the model
card's 50 dialogues are of the same size) with room for the f32 kernels
of other CPUs, whose roundings may turn a greedy choice.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import finish, float_wav, report, skip_or_fail  # noqa: E402

ROOT = os.environ.get("HV_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ.get("HV_CLI", os.path.join(ROOT, "build", "hviske"))
MODEL = os.path.join(ROOT, "models", "demo-diarize")
sys.path.insert(0, os.path.join(ROOT, "research", "train-demo"))

SEED = 2718
ONE = [(12.0, 20.0, 2), (12.0, 20.0, 3), (12.0, 20.0, 2), (12.0, 20.0, 3)]
LONG = [(100.0, 140.0, 3), (100.0, 140.0, 2)]
DER_ONE, RIGHT_ONE = 0.15, 3
DER_LONG, SA_GAP, START_LONG, PLAIN_WER = 0.15, 10, 0.3, 5


def transcribe(wavs, *extra):
    """-> {wav: the CLI's JSON document}, or None and the error"""
    r = subprocess.run([CLI, "-m", MODEL, "--json", "--dither", "0", "--compute", "f32", "--chunking", "energy"]
                       + list(extra) + wavs,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return None, r.stderr[-500:]
    docs = [json.loads(line) for line in r.stdout.splitlines()]
    return {d["file"]: d for d in docs}, ""


def scores(diarize, pairs):
    """pairs [(reference turns, hypothesis segments)] -> DER over all,
    speaker-attributed and plain WER over all (%), turn-start errors,
    [(reference speakers heard, hypothesis labels)]"""
    scored = err = sa = pl = nw = 0.0
    starts, counts = [], []
    for ref, hyp in pairs:
        _, det = diarize.der([r[:3] for r in ref], [h[:3] for h in hyp], 0.25)
        scored += det["scored"]
        err += det["missed"] + det["false_alarm"] + det["confusion"]
        e1, n1, _ = diarize.speaker_attributed_wer(ref, hyp)
        e2, _ = diarize.plain_wer(ref, hyp)
        sa, pl, nw = sa + e1, pl + e2, nw + n1
        starts += [t if t is not None else float("inf") for t in diarize.turn_start_errors(ref, hyp, det["mapping"])]
        heard = {r[0] for r in ref
                 if sum(max(0.0, min(r[2], h[2]) - max(r[1], h[1])) for h in hyp) >= (r[2] - r[1]) / 2}
        counts.append((len(heard), len({h[0] for h in hyp})))
    return err / max(scored, 1e-9), 100 * sa / max(nw, 1), 100 * pl / max(nw, 1), starts, counts


def main():
    if not os.path.isfile(os.path.join(MODEL, "config.json")):
        report("diarize demo model present", False, f"{MODEL} has no config.json")
        return finish()
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        skip_or_fail("diarize demo model", "espeak-ng or sox missing")
        return finish()
    import dialogues
    import diarize
    with tempfile.TemporaryDirectory(prefix="hv-demo-dz-") as tmp:
        sets = {}
        for name, specs, first in (("windows", ONE, 0), ("minutes", LONG, len(ONE))):
            sets[name] = []
            for k, (lo, hi, n) in enumerate(specs):
                x, units, _ = dialogues.make_dialogue(SEED, "test", first + k, lo, hi, n)
                wav = os.path.join(tmp, f"{name}-{k}.wav")
                float_wav(wav, x)
                sets[name].append((wav, dialogues.reference_turns(units), len(x) / 16000))
        for name, items in sets.items():
            out, why = transcribe([w for w, _, _ in items], "--diarize")
            report(f"{name}: --diarize transcribes", out is not None, why)
            if out is None:
                continue
            pairs = [(ref, [(s.get("speaker", -1), s["start"], s["end"], s["text"]) for s in out[w]["segments"]])
                     for w, ref, _ in items]
            d, sa, pl, starts, counts = scores(diarize, pairs)
            med = statistics.median(starts)
            print(f"# {name}: {', '.join('%.0f s' % s for _, _, s in items)}; speakers/labels {counts}; DER "
                  f"{100 * d:.1f} %, SA-WER {sa:.1f} %, WER {pl:.1f} %, turn start median {med:.2f} s")
            detail = f"hyp {pairs[0][1][:4]}"
            if name == "windows":
                right = sum(1 for r, h in counts if r == h)
                report(f"windows: DER <= {100 * DER_ONE:.0f} %", d <= DER_ONE, f"{d:.3f} {detail}")
                report(f"windows: the right number of speakers in {RIGHT_ONE} of {len(ONE)}", right >= RIGHT_ONE,
                       str(counts))
                report("windows: median turn start within 0.3 s", med <= 0.3, f"{med:.2f}")
            else:
                report(f"minutes: DER <= {100 * DER_LONG:.0f} %", d <= DER_LONG, f"{d:.3f} {detail}")
                report(f"minutes: speaker-attributed WER within {SA_GAP:.0f} points of the WER", sa - pl <= SA_GAP,
                       f"{sa:.1f} vs {pl:.1f}")
                report(f"minutes: median turn start within {START_LONG} s", med <= START_LONG, f"{med:.2f}")
                plain, why = transcribe([w for w, _, _ in items])
                report("without --diarize: the plain prompt transcribes", plain is not None, why)
                if plain is not None:
                    r_words = [w for _, ref, _ in items for r in ref for w in diarize.words(r[3])]
                    h_words = [w for wav, _, _ in items for w in diarize.words(plain[wav]["text"])]
                    wer = 100.0 * diarize.edit_distance(r_words, h_words) / max(len(r_words), 1)
                    print(f"# minutes without --diarize: WER {wer:.1f} %")
                    report(f"without --diarize: WER <= {PLAIN_WER:.0f} %", wer <= PLAIN_WER, f"{wer:.1f}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
