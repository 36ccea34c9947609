"""Synthetic Danish speech: espeak-ng voice variants, speeds, pitches,
amplitudes and word gaps; resampled to 16 kHz by sox; random gain,
silence padding and background noise.  Every utterance is a pure function
of (seed, split, index)."""

import hashlib
import random
import subprocess

import numpy as np

import textgen

SR = 16000
ALL_VARIANTS = [
    "", "adam", "Alex", "Alicia", "Andrea", "Andy", "Annie", "antonio", "aunty", "belinda",
    "benjamin", "boris", "caleb", "david", "Demonic", "Denis", "Diogo", "ed", "edward", "edward2",
    "Gene", "Gene2", "gustave", "announcer", "Henrique", "Hugo", "iven", "iven2", "iven3", "iven4",
    "Jacky", "john", "kaukovalta", "Lee", "linda", "marcelo", "Marco", "Mario", "max", "Michael",
    "michel", "miguel", "Mike", "Mr", "Nguyen", "pablo", "paul", "pedro", "quincy", "RicishayMax",
    "RicishayMax2", "RicishayMax3", "rob", "robert", "robosoft", "robosoft2", "robosoft3",
    "robosoft4", "robosoft5", "robosoft6", "robosoft7", "robosoft8", "steph", "steph2", "steph3",
    "Storm", "Tweaky", "UniRobot", "zac", "anika", "anikaRobot", "AnxiousAndy", "fast", "f1", "f2",
    "f3", "f4", "f5", "grandpa", "grandma", "klatt", "klatt2", "klatt3", "klatt4", "klatt5",
    "klatt6", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "norbert", "sandro", "shelby",
    "travis", "victor", "croak",
]
# never used in training: the held-out (dev/test) voices
HELDOUT_VARIANTS = ["m4", "f3", "klatt3", "Andy", "steph2", "iven3", "robert", "Alicia", "john",
                    "linda", "Michael", "robosoft6"]
TRAIN_VARIANTS = [v for v in ALL_VARIANTS if v not in HELDOUT_VARIANTS]

SPLIT_CODE = {"train": 1, "dev": 2, "test": 3}


def utt_seed(seed, split, i):
    h = hashlib.sha256(("%d/%s/%d" % (seed, split, i)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def voice_settings(rng, split):
    pool = TRAIN_VARIANTS if split == "train" else HELDOUT_VARIANTS
    return {
        "variant": pool[rng.randrange(len(pool))],
        "speed": rng.randint(120, 210),
        "pitch": rng.randint(15, 85),
        "amplitude": rng.randint(60, 180),
        "gap": 0 if rng.random() < 0.7 else rng.randint(1, 6),
    }


def espeak(text, v):
    voice = "da" + ("+" + v["variant"] if v["variant"] else "")
    cmd = ["espeak-ng", "-v", voice, "-s", str(v["speed"]), "-p", str(v["pitch"]),
           "-a", str(v["amplitude"]), "-g", str(v["gap"]), "--stdout", text]
    p1 = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p2 = subprocess.run(["sox", "-t", "wav", "-", "-t", "raw", "-r", str(SR), "-e", "float", "-b", "32",
                         "-c", "1", "-"], stdin=p1.stdout, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                        check=True)
    p1.stdout.close()
    p1.wait()
    return np.frombuffer(p2.stdout, dtype=np.float32).copy()


def _noise(nrs, n, kind):
    w = nrs.randn(n)
    if kind == "white":
        x = w
    elif kind in ("pink", "brown"):
        W = np.fft.rfft(w)
        f = np.arange(W.shape[0], dtype=np.float64) + 1.0
        W = W / (np.sqrt(f) if kind == "pink" else f)
        W[0] = 0
        x = np.fft.irfft(W, n)
    else:  # hum: 50 Hz mains with harmonics plus a little white noise
        t = np.arange(n) / SR
        x = sum((0.6 ** k) * np.sin(2 * np.pi * 50 * (k + 1) * t + nrs.uniform(0, 6.3)) for k in range(5))
        x = x + 0.1 * w
    return x / (np.sqrt(np.mean(x ** 2)) + 1e-12)


def make_utterance(seed, split, i):
    """Returns (samples float32 at 16 kHz, text, settings dict)."""
    s = utt_seed(seed, split, i)
    rng = random.Random(s)
    nrs = np.random.RandomState(s % (2 ** 32))
    text = textgen.utterance_text(rng, split)
    v = voice_settings(rng, split)
    x = espeak(text, v).astype(np.float64)
    # trim espeak's own trailing silence a bit, then pad at random
    nz = np.nonzero(np.abs(x) > 1e-4)[0]
    if nz.size:
        x = x[max(0, nz[0] - 800):nz[-1] + 1600]
    lead = int(rng.uniform(0, 0.6) * SR) if rng.random() < 0.8 else 0
    trail = int(rng.uniform(0, 0.6) * SR) if rng.random() < 0.8 else 0
    x = np.concatenate([np.zeros(lead), x, np.zeros(trail)])
    peak = np.max(np.abs(x)) + 1e-9
    gain = 10 ** rng.uniform(np.log10(0.05), np.log10(0.9)) / peak
    x = x * gain
    speech_rms = np.sqrt(np.mean(x[lead:len(x) - trail] ** 2)) + 1e-9
    r = rng.random()
    if r < 0.65:
        kind = ["white", "pink", "brown", "hum"][rng.randrange(4)]
        snr = rng.uniform(12, 40)
        x = x + _noise(nrs, len(x), kind) * speech_rms * 10 ** (-snr / 20)
        v["noise"], v["snr"] = kind, round(snr, 1)
    else:
        v["noise"], v["snr"] = "none", None
    v["lead"], v["trail"] = lead, trail
    x = np.clip(x, -1.0, 1.0)
    return x.astype(np.float32), text, v


def write_wav16(path, x):
    import wave
    pcm = np.clip(np.round(np.asarray(x, dtype=np.float64) * 32767.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())
