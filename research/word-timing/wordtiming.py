"""Word-timing ground truth: the held-out set, the scorer and a check of the
truth against the audio. Used by make_set.py, evaluate and
tests/parity/test_word_timing.py (README.md in this folder says what the truth
is).

The set is a pure function of (seed, index): sentences from the test
split of research/train-demo/textgen.py (never in the demo model's training
data), spoken by the held-out espeak-ng voice variants of
research/train-demo/synth.py with its speed, pitch, amplitude and word-gap
ranges, joined by pauses of 0.2-2 s; files of 5-35 s; some with light
white or pink noise. espeak-words (espeak_words.c) writes each file's
audio and truth.
"""

import difflib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "research", "train-demo"))
import synth  # noqa: E402
import textgen  # noqa: E402

MIN_S, MAX_S = 5.0, 35.0           # file length
PAUSE_S = (0.2, 2.0)               # silence before each sentence after the first
LEAD_S, TAIL_S = (0.2, 1.0), (0.2, 1.0)
NOISE_P, SNR_DB = 0.4, (20.0, 35.0)
TARGETS = {"median": 0.10, "p90": 0.25, "coverage": 0.90}  # issue #12


def espeak_words_path(given=None):
    """The espeak-words program: given, else $HV_ESPEAK_WORDS, else
    build/espeak-words; None when it does not exist."""
    cands = [given] if given else []
    cands += [os.environ.get("HV_ESPEAK_WORDS"), os.path.join(ROOT, "build", "espeak-words")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


# ------------------------------------------------------------------ the set

def file_seed(seed, i):
    h = hashlib.sha256(("word-timing/%d/%d" % (seed, i)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def file_plan(seed, i):
    """What file i of the set with this seed holds: voice settings, noise,
    and a pool of held-out sentences with their pauses (the file uses a
    prefix of the pool that makes 5-35 s)."""
    rng = random.Random(file_seed(seed, i))
    v = synth.voice_settings(rng, "test")  # a held-out variant, the training ranges
    plan = {"variant": v["variant"], "speed": v["speed"], "pitch": v["pitch"],
            "amplitude": v["amplitude"], "gap": v["gap"],
            "target_s": rng.uniform(MIN_S + 1.0, MAX_S - 2.0),
            "tail": round(rng.uniform(*TAIL_S), 3)}
    if rng.random() < NOISE_P:
        plan["noise"] = rng.choice(["white", "pink"])
        plan["snr"] = round(rng.uniform(*SNR_DB), 1)
        plan["noise_seed"] = rng.randrange(1 << 62)
    else:
        plan["noise"] = "none"
    pool = []
    for k in range(16):
        pause = rng.uniform(*LEAD_S) if k == 0 else rng.uniform(*PAUSE_S)
        pool.append((round(pause, 3), textgen.utterance_text(rng, "test", p_two=0.0)))
    plan["pool"] = pool
    return plan


def synthesize(espeak_words, plan, n_sentences, wav, truth):
    """Runs espeak-words for the first n_sentences of the plan's pool;
    returns the truth (dict). Raises RuntimeError with its message."""
    job = "".join("%.3f\t%s\n" % p for p in plan["pool"][:n_sentences])
    voice = "da" + ("+" + plan["variant"] if plan["variant"] else "")
    args = [espeak_words, "--wav", wav, "--truth", truth, "-v", voice,
            "-s", str(plan["speed"]), "-p", str(plan["pitch"]), "-a", str(plan["amplitude"]),
            "-g", str(plan["gap"]), "--tail", "%.3f" % plan["tail"]]
    if plan["noise"] != "none":
        args += ["--noise", plan["noise"], "--snr", "%.1f" % plan["snr"],
                 "--seed", str(plan["noise_seed"])]
    p = subprocess.run(args, input=job.encode("utf-8"), capture_output=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(args), p.returncode,
                                                   p.stderr.decode("utf-8", "replace").strip()))
    with open(truth, encoding="utf-8") as f:
        return json.load(f)


def make_file(espeak_words, seed, i, out_dir):
    """File i of the set: wtNNN.wav and wtNNN.json in out_dir, 5-35 s with
    at least two sentences. Returns its manifest entry."""
    plan = file_plan(seed, i)
    name = "wt%03d" % i
    wav, truth = os.path.join(out_dir, name + ".wav"), os.path.join(out_dir, name + ".json")
    # a first guess from the speed (espeak-ng's Danish words take about
    # 0.9 x 60 / wpm seconds), then one sentence more or less until it fits
    per_word = 60.0 / plan["speed"] * 0.9
    est, n = plan["tail"], 0
    for pause, text in plan["pool"]:
        est += pause + per_word * len(text.split())
        if n >= 2 and est > plan["target_s"]:
            break
        n += 1
    step = 0  # -1 after a sentence was dropped, +1 after one was added: never back
    while True:
        t = synthesize(espeak_words, plan, n, wav, truth)
        if t["duration"] > MAX_S and n > 2 and step <= 0:
            n, step = n - 1, -1
        elif t["duration"] < MIN_S and n < len(plan["pool"]) and step >= 0:
            n, step = n + 1, 1
        else:
            break
    d = t["duration"]
    if not (MIN_S <= d <= MAX_S):
        raise RuntimeError("%s: %.2f s, outside %g-%g s" % (name, d, MIN_S, MAX_S))
    return {"name": name, "wav": name + ".wav", "truth": name + ".json", "duration": d,
            "n_sentences": len(t["sentences"]), "n_words": len(t["words"]),
            "voice": t["voice"], "speed": t["speed"], "pitch": t["pitch"],
            "amplitude": t["amplitude"], "gap": t["gap"], "noise": t["noise"],
            "snr": t.get("snr")}


def make_set(out_dir, seed, n_files, espeak_words):
    """Writes the set and out_dir/manifest.json; returns the manifest."""
    os.makedirs(out_dir, exist_ok=True)
    files = [make_file(espeak_words, seed, i, out_dir) for i in range(n_files)]
    manifest = {"generator": "research/word-timing/make_set.py", "seed": seed, "n_files": n_files,
                "total_s": round(sum(f["duration"] for f in files), 3),
                "n_words": sum(f["n_words"] for f in files), "files": files}
    tmp = os.path.join(out_dir, "manifest.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, "manifest.json"))
    return manifest


def load_set(set_dir):
    """(manifest, {name: truth dict}) of a set folder."""
    with open(os.path.join(set_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    truths = {}
    for e in manifest["files"]:
        with open(os.path.join(set_dir, e["truth"]), encoding="utf-8") as f:
            truths[e["name"]] = json.load(f)
    return manifest, truths


# -------------------------------------------------------------- scoring

def norm_word(w):
    """Lower case, letters and digits only ("Klokken?" -> "klokken")."""
    return "".join(c for c in w.lower() if c.isalnum())


def match_words(truth_words, hyp_words):
    """Pairs (truth index, hyp index) of the words that the alignment of
    the two normalised word sequences (difflib.SequenceMatcher) puts
    together and that are the same word. Words that normalise to nothing
    (punctuation alone) take no part."""
    ti = [i for i, w in enumerate(truth_words) if norm_word(w["word"])]
    hi = [i for i, w in enumerate(hyp_words) if norm_word(w["word"])]
    a = [norm_word(truth_words[i]["word"]) for i in ti]
    b = [norm_word(hyp_words[i]["word"]) for i in hi]
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    pairs = []
    for blk in sm.get_matching_blocks():
        for k in range(blk.size):
            pairs.append((ti[blk.a + k], hi[blk.b + k]))
    return pairs


def percentile(xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def stats(errors):
    """|error| median, p90, mean, max and the signed median (bias) of a
    list of signed errors (hypothesis - truth, seconds)."""
    if not errors:
        return {"n": 0, "median": None, "p90": None, "mean": None, "max": None, "bias": None}
    ab = [abs(e) for e in errors]
    return {"n": len(errors), "median": percentile(ab, 50), "p90": percentile(ab, 90),
            "mean": sum(ab) / len(ab), "max": max(ab), "bias": percentile(errors, 50)}


def score(truths, hyps):
    """truths, hyps: {name: [word dicts with "word", "start", "end"]}.
    Returns the summary (dict) and per-file rows."""
    n_truth = n_hyp = n_matched = 0
    starts, ends, rows = [], [], []
    for name in sorted(truths):
        tw, hw = truths[name], hyps.get(name, [])
        pairs = match_words(tw, hw)
        fs = [hw[j]["start"] - tw[i]["start"] for i, j in pairs]
        fe = [hw[j]["end"] - tw[i]["end"] for i, j in pairs if tw[i].get("end") is not None]
        nt = sum(1 for w in tw if norm_word(w["word"]))
        nh = sum(1 for w in hw if norm_word(w["word"]))
        n_truth, n_hyp, n_matched = n_truth + nt, n_hyp + nh, n_matched + len(pairs)
        starts += fs
        ends += fe
        rows.append({"name": name, "truth_words": nt, "hyp_words": nh, "matched": len(pairs),
                     "start": stats(fs), "end": stats(fe)})
    summary = {"files": len(truths), "truth_words": n_truth, "hyp_words": n_hyp,
               "matched": n_matched, "coverage": n_matched / n_truth if n_truth else 0.0,
               "start": stats(starts), "end": stats(ends)}
    return summary, rows


def check(summary, targets=TARGETS):
    """The list of targets the summary misses (empty: all met)."""
    bad = []
    s = summary["start"]
    if s["median"] is None or s["median"] > targets["median"]:
        bad.append("median start error %s > %.2f s" % (_fmt(s["median"]), targets["median"]))
    if s["p90"] is None or s["p90"] > targets["p90"]:
        bad.append("p90 start error %s > %.2f s" % (_fmt(s["p90"]), targets["p90"]))
    if summary["coverage"] < targets["coverage"]:
        bad.append("coverage %.3f < %.2f" % (summary["coverage"], targets["coverage"]))
    return bad


def _fmt(x):
    return "n/a" if x is None else "%.3f s" % x


# ---------------------------------------------------------- the engine

def engine_words(doc):
    """The word list of one `hviske --word-timestamps --format json`
    document: its "words", else its segments' "words" joined."""
    if isinstance(doc.get("words"), list):
        return doc["words"]
    out = []
    for seg in doc.get("segments") or []:
        out += seg.get("words") or []
    return out


def run_engine(cli, model, wavs, extra, timeout=1800):
    """Runs the engine once over all files (--output-dir, one JSON document
    per file); returns {file stem: document}. Raises RuntimeError."""
    tmp = tempfile.mkdtemp(prefix="hv-wt-out-")
    try:
        args = [cli, "-m", model, "-q", "--word-timestamps", "--format", "json",
                "--output-dir", tmp] + list(extra) + list(wavs)
        p = subprocess.run(args, capture_output=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError("%s exited with %d: %s"
                               % (" ".join(args[:8] + ["..."]), p.returncode,
                                  p.stderr.decode("utf-8", "replace")[-1500:]))
        docs = {}
        for w in wavs:
            stem = os.path.splitext(os.path.basename(w))[0]
            path = os.path.join(tmp, stem + ".json")
            if not os.path.isfile(path):
                raise RuntimeError("the engine wrote no %s.json" % stem)
            with open(path, encoding="utf-8") as f:
                docs[stem] = json.load(f)
        return docs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------- the truth against the audio

VOICELESS_STOPS = ("p", "t", "k")   # espeak-ng's names of the Danish ones
ECHO_VARIANTS = ("Alicia", "robosoft6")  # voice variants with an echo


def audio_check(wav_path, truth):
    """Measures the truth against the audio of a noise-free file:

    - onset_stop, onset_other: for the first word of each sentence (after
      the silence of the pause before it, exact zeros), the first sample
      above 1 % of the file's peak minus the word's start, in seconds;
      split by whether the word begins with a voiceless stop (p, t, k:
      their silent closure is part of the word, so the sound starts with
      the burst);
    - before: the loudest sample between the previous sentence's end and
      the first word's start, relative to the peak (0: silence);
    - end: for the last word of each sentence, the last sample above 3 %
      of the peak minus the word's end.

    "before" and "end" are left empty for the variants with an echo
    (ECHO_VARIANTS), whose sound goes on after the phonemes end (into the
    next sentence's start, too).

    Returns {"onset_stop": [...], "onset_other": [...], "before": [...],
    "end": [...]}."""
    import wave
    import numpy as np
    with wave.open(wav_path, "rb") as w:
        sr = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64)
    if sr != truth["sample_rate"] or len(x) != truth["samples"]:
        raise ValueError("%s does not go with its truth (rate or length)" % wav_path)
    peak = np.abs(x).max()
    echo = truth["voice"].split("+")[-1] in ECHO_VARIANTS
    out = {"onset_stop": [], "onset_other": [], "before": [], "end": []}
    words = truth["words"]
    prev_end = 0
    for s in truth["sentences"]:
        w0 = words[s["first_word"]]
        a, b = w0["start_sample"], w0["end_sample"]
        loud = np.nonzero(np.abs(x[a:b]) > 0.01 * peak)[0]
        if loud.size:
            key = "onset_stop" if w0.get("first_phoneme") in VOICELESS_STOPS else "onset_other"
            out[key].append(loud[0] / sr)
        wl = words[s["first_word"] + s["n_words"] - 1]
        if not echo:
            out["before"].append(np.abs(x[prev_end:a]).max() / peak if a > prev_end else 0.0)
            nz = np.nonzero(np.abs(x[wl["start_sample"]:s["end_sample"]]) > 0.03 * peak)[0]
            if nz.size:
                out["end"].append((wl["start_sample"] + nz[-1] + 1 - wl["end_sample"]) / sr)
        prev_end = s["end_sample"]
    return out


def truth_as_hypothesis(truth):
    """The truth's words in the engine's shape (the scorer's self-test)."""
    return [{"word": w["word"], "start": w["start"], "end": w["end"], "probability": 1.0}
            for w in truth["words"]]
