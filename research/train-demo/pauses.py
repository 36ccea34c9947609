"""Recordings of utterances joined by long pauses (issue #44), for
evaluate-pauses and tests/test_vad_edges.py.

A recording is a pure function of (seed, index, gap kind): held-out
sentences of textgen (the test split) spoken by one held-out voice variant
of synth.py (its training ranges of speed, pitch, amplitude and word gap)
through espeak-words (research/word-timing), which places each sentence after
its pause and gives every word's true start and end; pauses of 1-10 s.
Each sentence has its own level (peaks of 0.05-0.9, as the demo's
held-out utterances). The same seed and index give the same speech for
every gap kind; only what
fills the pauses (and lies under the speech, as in a real recording)
differs:

  silence  digital silence (exact zeros)
  pink     pink noise 35-50 dB below the speech's RMS (the median of
           its sentences')
  hum      50 Hz mains hum with 4 harmonics and a little white noise,
           30-45 dB below the speech
  room     room tone: the quiet stretches (before and after the word) of
           the real Danish voice recordings of KDE's KTuberling
           (/usr/share/ktuberling/sounds/da/*.ogg, Debian package
           ktuberling-data), spliced with 10 ms cross-fades, 30-40 dB
           below the speech

Each recording's utterances are also cut out one file each: from 0.5 s
before a sentence's first sample to 0.5 s after its last (at most half of
the pause on either side), background included.

Two variants (issue #51) keep the same sentences and voice: `gap` makes
every pause after the first sentence that long, and `soft` fades each
sentence in, its gain rising from -24 dB to 0 dB (linear in dB) over its
first `soft` seconds, so that its first words are quiet.
"""

import glob
import hashlib
import json
import os
import random
import subprocess
import sys
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "research", "word-timing"))
import synth  # noqa: E402
import textgen  # noqa: E402
import wordtiming  # noqa: E402

KINDS = ["silence", "pink", "hum", "room"]
PAUSE_S = (1.0, 10.0)
ROOM_DIR = "/usr/share/ktuberling/sounds/da"
SINGLE_MARGIN_S = 0.5


def rec_seed(seed, i):
    h = hashlib.sha256(("pauses/%d/%d" % (seed, i)).encode()).digest()
    return int.from_bytes(h[:8], "little")


SOFT_FROM_DB = -24.0


def plan(seed, i, n_utts=8, gap=None):
    """espeak-words' plan (wordtiming.synthesize) of recording i: the
    voice, a lead of 0.3-1.5 s, then n_utts sentences each after a pause
    of 1-10 s (gap: of gap seconds), and a tail of 1-3 s."""
    rng = random.Random(rec_seed(seed, i))
    v = synth.voice_settings(rng, "test")
    pool = []
    for k in range(n_utts):
        pause = rng.uniform(0.3, 1.5) if k == 0 else rng.uniform(*PAUSE_S)
        if k and gap is not None:
            pause = gap
        pool.append((round(pause, 3), textgen.utterance_text(rng, "test", p_two=0.0)))
    return {"variant": v["variant"], "speed": v["speed"], "pitch": v["pitch"],
            "amplitude": v["amplitude"], "gap": v["gap"], "tail": round(rng.uniform(1.0, 3.0), 3),
            "noise": "none", "pool": pool}


def read_wav(path):
    with wave.open(path, "rb") as w:
        sr = w.getframerate()
        x = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float64) / 32768.0
    return x, sr


def write_wav(path, x, sr):
    pcm = np.clip(np.round(np.asarray(x) * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sr)
        w.writeframes(pcm.tobytes())


_room_bank = None


def room_bank(sr):
    """The room tone of the KTuberling recordings at rate sr: of each file,
    the stretch from its start and the stretch up to its end whose 20 ms
    frames stay within 6 dB of the file's quietest tenth, spliced."""
    global _room_bank
    if _room_bank is not None and _room_bank[0] == sr:
        return _room_bank[1]
    files = sorted(glob.glob(os.path.join(ROOM_DIR, "*.ogg")))
    if not files:
        raise RuntimeError("no room tone: %s/*.ogg is missing (scripts/install-deps.sh eval: ktuberling-data)"
                           % ROOM_DIR)
    parts, fade = [], int(0.01 * sr)
    for f in files:
        raw = subprocess.run(["sox", "-R", f, "-r", str(sr), "-c", "1", "-t", "f32", "-"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
        x = np.frombuffer(raw, np.float32).astype(np.float64)
        fl = int(0.02 * sr)
        n = len(x) // fl
        if n < 10:
            continue
        db = 10 * np.log10(np.mean(x[:n * fl].reshape(n, fl) ** 2, axis=1) + 1e-14)
        quiet = db < np.percentile(db, 10) + 6
        a = 0
        while a < n and quiet[a]:
            a += 1
        b = n
        while b > 0 and quiet[b - 1]:
            b -= 1
        for s, e in ((2, a - 2), (b + 2, n - 2)):  # a frame's margin from the speech and the ends
            if e - s >= 5:
                parts.append(x[s * fl:e * fl] / np.sqrt(np.mean(x[s * fl:e * fl] ** 2)))
    if not parts:
        raise RuntimeError("no quiet stretches in %s" % ROOM_DIR)
    out = parts[0]
    ramp = np.linspace(0, 1, fade)
    for p in parts[1:]:
        out = np.concatenate([out[:-fade], out[-fade:] * (1 - ramp) + p[:fade] * ramp, p[fade:]])
    _room_bank = (sr, out / np.sqrt(np.mean(out ** 2)))
    return _room_bank[1]


def background(kind, n, sr, rng, nrs):
    """n samples of the gap kind at unit RMS (zeros for silence)."""
    if kind == "silence":
        return np.zeros(n)
    if kind == "pink":
        W = np.fft.rfft(nrs.randn(n))
        W = W / np.sqrt(np.arange(W.shape[0]) + 1.0)
        W[0] = 0
        x = np.fft.irfft(W, n)
    elif kind == "hum":
        t = np.arange(n) / sr
        x = sum((0.6 ** k) * np.sin(2 * np.pi * 50 * (k + 1) * t + nrs.uniform(0, 6.3)) for k in range(5))
        x = x + 0.05 * nrs.randn(n)
    elif kind == "room":
        bank = room_bank(sr)
        start = rng.randrange(len(bank))
        reps = (start + n) // len(bank) + 1
        x = np.tile(bank, reps + 1)[start:start + n]
    else:
        raise ValueError("unknown gap kind %r" % kind)
    return x / (np.sqrt(np.mean(x ** 2)) + 1e-12)


LEVEL_DB = {"pink": (35, 50), "hum": (30, 45), "room": (30, 40)}


def make(espeak_words, out_dir, seed, i, kinds=KINDS, n_utts=8, singles=True, gap=None, soft=0.0):
    """Writes recording i for each gap kind (out_dir/KIND/recNNN.wav) and,
    with singles, its utterances one file each (recNNN-uJJ.wav), and
    out_dir/recNNN.json (the truth of espeak-words); gap and soft as the
    module's docstring says (out_dir must differ for each). Returns a
    manifest entry: {"name", "truth", "kinds": {kind: {"wav", "singles":
    [wav...], "level_db"}}}."""
    os.makedirs(out_dir, exist_ok=True)
    name = "rec%03d" % i
    p = plan(seed, i, n_utts, gap)
    variant = "" if gap is None and not soft else "-gap%s-soft%g" % (gap, soft)
    done = os.path.join(out_dir, "%s-%s%s.done" % (name, "-".join(kinds) + ("-singles" if singles else ""),
                                                   variant))
    if os.path.isfile(done):  # made before with the same arguments
        with open(done, encoding="utf-8") as f:
            return json.load(f)
    speech_wav = os.path.join(out_dir, name + "-speech.wav")
    truth_path = os.path.join(out_dir, name + ".json")
    truth = wordtiming.synthesize(espeak_words, p, n_utts, speech_wav, truth_path)
    x, sr = read_wav(speech_wav)
    os.remove(speech_wav)
    # each sentence at its own level, as the demo's held-out utterances
    # (synth.make_utterance: peaks of 0.05-0.9)
    sents = truth["sentences"]
    rng = random.Random(rec_seed(seed, i) + 1)
    for j, st in enumerate(sents):
        a, b = st["start_sample"], sents[j + 1]["start_sample"] if j + 1 < len(sents) else len(x)
        x[a:b] *= 10 ** rng.uniform(np.log10(0.05), np.log10(0.9)) / (np.max(np.abs(x[a:b])) + 1e-9)
        if soft > 0:
            m = min(int(soft * sr), b - a)
            x[a:a + m] *= 10 ** (np.linspace(SOFT_FROM_DB, 0.0, m) / 20)
    speech_rms = float(np.median([np.sqrt(np.mean(x[st["start_sample"]:st["end_sample"]] ** 2))
                                  for st in sents]))
    entry = {"name": name, "truth": truth_path, "duration": len(x) / sr, "kinds": {}}
    for kind in kinds:
        s = rec_seed(seed, i) ^ (KINDS.index(kind) + 1) * 0x9E3779B97F4A7C15 % (1 << 64)
        rng, nrs = random.Random(s), np.random.RandomState(s % (2 ** 32))
        lo, hi = LEVEL_DB.get(kind, (0, 0))
        level = rng.uniform(lo, hi)
        y = x + background(kind, len(x), sr, rng, nrs) * speech_rms * 10 ** (-level / 20)
        d = os.path.join(out_dir, kind)
        os.makedirs(d, exist_ok=True)
        wav = os.path.join(d, name + ".wav")
        write_wav(wav, y, sr)
        k = {"wav": wav, "singles": [], "level_db": None if kind == "silence" else -round(level, 1)}
        if singles:
            for j, st in enumerate(sents):
                prev_end = sents[j - 1]["end_sample"] if j else 0
                next_start = sents[j + 1]["start_sample"] if j + 1 < len(sents) else len(y)
                m = int(SINGLE_MARGIN_S * sr)
                a = st["start_sample"] - min(m, (st["start_sample"] - prev_end) // 2)
                b = st["end_sample"] + min(m, (next_start - st["end_sample"]) // 2)
                sw = os.path.join(d, "%s-u%02d.wav" % (name, j))
                write_wav(sw, y[a:b], sr)
                k["singles"].append(sw)
        entry["kinds"][kind] = k
    with open(done, "w", encoding="utf-8") as f:
        json.dump(entry, f)
    return entry


def load_truth(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
