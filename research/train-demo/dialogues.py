"""Synthetic Danish dialogues for the diarize demo model: 2-4 espeak-ng
speakers, turns of 1-3 sentences, every dialogue a pure function of
(seed, split, index).

- Voices: distinct espeak-ng variants (training: synth.TRAIN_VARIANTS;
  dev/test: synth.HELDOUT_VARIANTS), pitch and speed far apart: the
  pitch range 10-90 and the speed range 110-230 words/min are cut into
  as many slots as there are speakers, each speaker gets one slot of each
  (shuffled independently) near its centre (+-20 % of a slot), so any two
  speakers differ by at least 60 % of a slot in both (4 speakers: 12
  pitch units, 18 words/min); a per-speaker level of +-4 dB.  Fixed per
  speaker within a dialogue.
- Turns: the next speaker is any other one; 1 (50 %), 2 (30 %) or 3
  sentences of textgen (the split's sentences), each synthesised on its
  own, 0.15-0.6 s apart; between turns 0.3-1.5 s, or a quick change of
  0.05-0.25 s (25 %).  No overlapping speech.
- Light noise: white, pink, brown or mains hum at 20-40 dB SNR on half
  of the dialogues; peak level 0.1-0.9.
- Every sentence's speech (espeak-ng's output trimmed at 1 % of its
  peak) starts on the 100 ms grid; its end is rounded up to the grid.
  So the reference times are exact at the stream's resolution.
"""

import hashlib
import random

import numpy as np

import synth
import textgen

SR = synth.SR
GRID = SR // 10


def dialogue_seed(seed, split, i):
    h = hashlib.sha256(("%d/%s/dialogue/%d" % (seed, split, i)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def _slots(rng, n, lo, hi):
    w = (hi - lo) / n
    v = [lo + w * (k + 0.5) + rng.uniform(-0.2 * w, 0.2 * w) for k in range(n)]
    rng.shuffle(v)
    return [int(round(x)) for x in v]


def speaker_voices(rng, split, n):
    pool = synth.TRAIN_VARIANTS if split == "train" else synth.HELDOUT_VARIANTS
    variants = rng.sample(pool, n)
    pitch = _slots(rng, n, 10, 90)
    speed = _slots(rng, n, 110, 230)
    return [{"variant": variants[k], "pitch": pitch[k], "speed": speed[k], "amplitude": 100,
             "gap": 0 if rng.random() < 0.7 else rng.randint(1, 4),
             "level_db": round(rng.uniform(-4, 4), 1)} for k in range(n)]


def _sentence_audio(text, v):
    x = synth.espeak(text, v).astype(np.float64)
    a = np.abs(x)
    nz = np.nonzero(a > 0.01 * (a.max() + 1e-12))[0]
    if nz.size == 0:
        return None
    return x[nz[0]:nz[-1] + 1] * 10 ** (v["level_db"] / 20)


def _up(n):
    return -(-n // GRID) * GRID


def make_dialogue(seed, split, i, min_s=30.0, max_s=90.0, n_speakers=None):
    """Returns (samples float32 16 kHz, units, info).  units: one per
    sentence, (speaker, start sample, end sample, text), start on the
    100 ms grid, end rounded up to it, in time order."""
    s = dialogue_seed(seed, split, i)
    rng = random.Random(s)
    nrs = np.random.RandomState(s % (2 ** 32))
    n = n_speakers or rng.choices([2, 3, 4], [0.4, 0.35, 0.25])[0]
    voices = speaker_voices(rng, split, n)
    target = rng.uniform(min_s, max_s) * SR
    pos = _up(int(rng.uniform(0.2, 1.0) * SR))
    placed, units = [], []
    prev = None
    while pos < target or len({u[0] for u in units}) < n:
        spk = rng.choice([k for k in range(n) if k != prev]) if prev is not None else rng.randrange(n)
        if len(units) >= 2 and len({u[0] for u in units}) < n and rng.random() < 0.5:
            spk = min(k for k in range(n) if k not in {u[0] for u in units})    # bring everyone in early
        k = rng.choices([1, 2, 3], [0.5, 0.3, 0.2])[0]
        for j in range(k):
            text = textgen.utterance_text(rng, split, p_two=0.0)
            x = _sentence_audio(text, voices[spk])
            if x is None:
                continue
            if j and units:
                pos = _up(units[-1][2] + int(rng.uniform(0.15, 0.6) * SR))
            placed.append((pos, x))
            units.append((spk, pos, _up(pos + len(x)), text))
        prev = spk
        quick = rng.random() < 0.25
        gap = rng.uniform(0.05, 0.25) if quick else rng.uniform(0.3, 1.5)
        pos = _up(units[-1][2] + int(gap * SR))
    total = units[-1][2] + _up(int(rng.uniform(0.2, 1.0) * SR))
    y = np.zeros(total)
    for p, x in placed:
        y[p:p + len(x)] += x
    y *= 10 ** rng.uniform(np.log10(0.1), np.log10(0.9)) / (np.abs(y).max() + 1e-12)
    info = {"speakers": voices, "seconds": round(total / SR, 2)}
    if rng.random() < 0.5:
        kind = ["white", "pink", "brown", "hum"][rng.randrange(4)]
        snr = rng.uniform(20, 40)
        rms = np.sqrt(np.mean(y[np.abs(y) > 1e-4] ** 2)) + 1e-9
        y = y + synth._noise(nrs, len(y), kind) * rms * 10 ** (-snr / 20)
        info["noise"], info["snr"] = kind, round(snr, 1)
    return np.clip(y, -1, 1).astype(np.float32), units, info


def reference_turns(units):
    """[(speaker, start s, end s, text)]: consecutive sentences of one speaker joined."""
    out = []
    for spk, a, b, text in units:
        if out and out[-1][0] == spk:
            out[-1] = (spk, out[-1][1], b / SR, out[-1][3] + " " + text)
        else:
            out.append((spk, a / SR, b / SR, text))
    return out


def cut_points(units, n):
    """Grid points where a window may end or begin: the start, the end, and
    in every pause the grid points between one sentence's end and the
    next one's start (both included)."""
    pts = [(0, 0)]
    for k in range(len(units) - 1):
        pts.append((units[k][2], units[k + 1][1]))
    pts.append((units[-1][2], n - n % GRID))
    return pts


def tile_windows(units, n, rng, fits, short=0.15, short_s=(3.0, 10.0), long_s=(12.0, 29.9)):
    """Cuts a dialogue of n samples into windows [w0, w1) that tile it,
    each at most long_s[1] seconds, beginning and ending at grid points in pauses.
    Target lengths: `short` of them uniform in short_s, the rest in long_s;
    a window ends at a random grid point of the last pause before its
    target length (or at the target, when that falls in the pause) (fits(w0, w1)
    may refuse an end, e.g. for too many tokens; then an earlier pause).
    A sentence longer than a window is skipped."""
    pauses = cut_points(units, n)
    w0 = 0
    out = []
    k = 0                                   # pauses[k] is where w0 lies
    while k < len(pauses) - 1:
        lo, hi = short_s if rng.random() < short else long_s
        L = int(rng.uniform(lo, hi) * SR)
        best = None
        for j in range(k + 1, len(pauses)):
            a, b = pauses[j]
            if a - w0 > long_s[1] * SR:
                break
            e = a + GRID * rng.randint(0, (b - a) // GRID)    # anywhere in the pause
            e = min(e, w0 + L)
            e -= e % GRID
            if e < a:
                if best is None:            # not even one sentence within the target: take the first pause
                    e = a
                else:
                    break
            if fits(w0, e):
                best = (j, e)
            if w0 + L < b:                  # target reached inside this pause
                break
        if best is None:                    # the next sentence does not fit in a window: skip it
            k += 1
            w0 = pauses[k][0]
            continue
        j, e = best
        out.append((w0, e))
        k, w0 = j, e
    return out


OVERLAP_S = 4.0      # the engine's diarize windows overlap this much (HV_DIAR_OVERLAP_S)


def plan_windows(x, clip_s=30.0, context_s=5.0, energy_window=1600, core_s=None):
    """The engine's windows with diarize and energy chunking: [(w0, w1)]
    and the cuts between their cores ([0, c1, ..., inf]). Cores as
    hv_chunk_plan cuts them (chunk = min(clip, 30) - 4 s, the quietest
    energy_window of the last context_s), widened by 2 s each side, so a
    window's outer 2 s may end inside a sentence.  core_s: a function
    giving each core's length in seconds (at most the chunk), for
    training windows of other lengths; by default every core is a chunk."""
    n = len(x)
    w = min(clip_s, 30.0)
    full = int(round((w - OVERLAP_S) * SR))
    x2 = x.astype(np.float64) ** 2
    cores, idx = [], 0
    while idx < n:
        chunk = full if core_s is None else min(full, int(round(core_s() * SR)) // GRID * GRID)
        context = min(int(round(context_s * SR)), chunk)
        if idx + chunk >= n:
            cut = n
        else:
            a, span = idx + chunk - context, context
            if span <= energy_window:
                cut = a + span // 2
            else:
                best, best_e, i = a, -1.0, 0
                while i + energy_window < span:
                    e = float(x2[a + i:a + i + energy_window].sum())
                    if best_e < 0 or e < best_e:
                        best, best_e = a + i, e
                    i += energy_window
                cut = best
            if cut <= idx:
                cut = idx + chunk
        cores.append((idx, cut))
        idx = cut
    reach = int(OVERLAP_S / 2 * SR)
    wins = [(max(a - reach, cores[i - 1][0]) if i else a, min(b + reach, cores[i + 1][1]) if i + 1 < len(cores)
             else b) for i, (a, b) in enumerate(cores)]
    cuts = [0] + [b for _, b in cores[:-1]] + [float("inf")]
    return wins, cuts
