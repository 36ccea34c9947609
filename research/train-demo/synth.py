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
    p2 = subprocess.run(["sox", "-R", "-t", "wav", "-", "-t", "raw", "-r", str(SR), "-e", "float", "-b", "32",
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


# ---------------------------------------------------------------------------
# v2 conditions (issue #13): long multi-sentence utterances with pauses,
# silence/noise-only clips (empty transcript), telephone band and codecs,
# wide speed range, whispered voices, low SNR, reverberation, loudness.
# Every utterance is still a pure function of (seed, split, index[, cond]).

TRAIN_WHISPER = ["whisper"]
HELDOUT_WHISPER = ["whisperf"]        # never used in training
CONDITIONS = ["clean", "telephone", "codec", "fast", "slow", "whisper", "lowsnr", "reverb", "loudness",
              "long", "empty"]
MAX_CLIP_S = 35.0


def _sox(x, args_out, args_back, sr_in=SR):
    """x float -> sox encode (args_out: output type options) -> sox decode
    (args_back: input type options) -> float32 at 16 kHz. -R: sox's
    dither (added when a codec lowers the bit depth) from a fixed seed, so
    that a seed gives the same audio every time."""
    raw = np.clip(np.asarray(x, dtype=np.float32), -1, 1).tobytes()
    enc = subprocess.run(["sox", "-R", "-t", "raw", "-r", str(sr_in), "-e", "float", "-b", "32", "-c", "1", "-"]
                         + args_out, input=raw, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    dec = subprocess.run(["sox", "-R"] + args_back + ["-", "-t", "raw", "-r", str(SR), "-e", "float", "-b", "32",
                                                "-c", "1", "-"],
                         input=enc, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    return np.frombuffer(dec, dtype=np.float32).astype(np.float64)


def telephone(x, rng):
    codec = ["ul", "al", "gsm", "amr-nb"][rng.randrange(4)]
    lo, hi = rng.randint(250, 400), rng.randint(3000, 3500)
    if codec in ("ul", "al"):
        y = _sox(x, ["-r", "8000", "-t", codec, "-", "sinc", "%d-%d" % (lo, hi)], ["-t", codec, "-r", "8000", "-c", "1"])
    elif codec == "gsm":
        y = _sox(x, ["-r", "8000", "-t", "gsm", "-", "sinc", "%d-%d" % (lo, hi)], ["-t", "gsm", "-r", "8000", "-c", "1"])
    else:
        y = _sox(x, ["-r", "8000", "-b", "16", "-e", "signed", "-t", "amr-nb", "-C", str(rng.randint(0, 7)), "-",
                     "sinc", "%d-%d" % (lo, hi)], ["-t", "amr-nb"])
    return y, "tel-%s" % codec


def codec(x, rng):
    c = ["vorbis", "mp3", "mp3"][rng.randrange(3)]
    if c == "vorbis":
        q = rng.choice([-1, 0, 1, 2])
        y = _sox(x, ["-t", "ogg", "-C", str(q), "-"], ["-t", "ogg"])
        return y, "ogg-q%d" % q
    br = rng.choice([8, 16, 24, 32, 48])
    sr = rng.choice([8000, 11025, 16000]) if br <= 16 else 16000
    y = _sox(x, ["-r", str(sr), "-t", "mp3", "-C", str(br), "-"], ["-t", "mp3"])
    return y, "mp3-%dk-%d" % (br, sr)


def reverb(x, rng):
    r, d, room, pre = rng.randint(20, 100), rng.randint(20, 100), rng.randint(20, 100), rng.randint(0, 40)
    wet = rng.uniform(-6, 0)
    y = _sox(np.concatenate([x, np.zeros(int(0.3 * SR))]) * 0.5,
             ["-t", "raw", "-e", "float", "-b", "32", "-", "reverb", str(r), str(d), str(room), "100", str(pre),
              "%.1f" % wet], ["-t", "raw", "-r", str(SR), "-e", "float", "-b", "32", "-c", "1"])
    return y, "reverb-%d-%d" % (r, room)


def _speech(rng, split, text, v, whisper):
    v = dict(v)
    if whisper:
        pool = TRAIN_WHISPER if split == "train" else HELDOUT_WHISPER
        v["variant"] = pool[rng.randrange(len(pool))]
    x = espeak(text, v).astype(np.float64)
    nz = np.nonzero(np.abs(x) > 1e-4)[0]
    if nz.size:
        x = x[max(0, nz[0] - 800):nz[-1] + 1600]
    return x


def _speed(rng, kind):
    if kind == "fast":
        return rng.randint(215, 360)
    if kind == "slow":
        return rng.randint(80, 118)
    return rng.randint(120, 210)


def _long_text_audio(rng, split, v, whisper, max_s):
    """Sentences of the split, each synthesised on its own (same voice,
    speed jittered), joined with pauses of 0.03-1.5 s, up to max_s."""
    parts, texts, total = [], [], 0.0
    target = rng.uniform(6.0, max_s)
    for _ in range(60):
        s = textgen.utterance_text(rng, split, p_two=0.0)
        vv = dict(v)
        vv["speed"] = max(80, min(450, v["speed"] + rng.randint(-15, 15)))
        x = _speech(rng, split, s, vv, whisper)
        gap = np.zeros(int(SR * (rng.uniform(0.03, 0.25) if rng.random() < 0.4 else rng.uniform(0.25, 1.5))))
        add = (len(x) + (len(gap) if parts else 0)) / SR
        if texts and total + add > target:
            break
        if not texts and add > max_s:          # one sentence too long for the clip: speak it faster
            continue
        if parts:
            parts.append(gap)
        parts.append(x)
        texts.append(s)
        total += add
    return np.concatenate(parts), " ".join(texts)


def make_utterance_v2(seed, split, i, cond=None):
    """Returns (samples float32 at 16 kHz, text, info).  cond=None: the
    training mixture (independent random draws of every condition);
    otherwise one of CONDITIONS (evaluation sets: the condition alone,
    on top of the clean held-out recipe)."""
    s = utt_seed(seed, split + "-v2-" + (cond or "mix"), i) if False else \
        int.from_bytes(hashlib.sha256(("%d/%s/v2/%s/%d" % (seed, split, cond or "mix", i)).encode()).digest()[:8],
                       "little")
    rng = random.Random(s)
    nrs = np.random.RandomState(s % (2 ** 32))
    info = {"cond": cond or "mix"}
    if cond is None:
        r = rng.random()
        kind = "empty" if r < 0.06 else "long" if r < 0.40 else "short"
        sp = rng.random()
        speed = "fast" if sp < 0.22 else "slow" if sp < 0.34 else "normal"
        whisper = rng.random() < 0.08
        ch = rng.random()
        channel = "telephone" if ch < 0.14 else "codec" if ch < 0.28 else "none"
        rev = rng.random() < 0.12
        nz = rng.random()
        noise = "low" if nz < 0.22 else "normal" if nz < 0.70 else "none"
        loud = rng.random()
        loudness = "quiet" if loud < 0.08 else "loud" if loud < 0.14 else "normal"
    else:
        kind = "empty" if cond == "empty" else "long" if cond == "long" else "short"
        speed = cond if cond in ("fast", "slow") else "normal"
        whisper = cond == "whisper"
        channel = cond if cond in ("telephone", "codec") else "none"
        rev = cond == "reverb"
        noise = "low" if cond == "lowsnr" else "none"
        loudness = ("quiet" if rng.random() < 0.5 else "loud") if cond == "loudness" else "normal"
    info.update(kind=kind, speed=speed, whisper=whisper, channel=channel, reverb=rev, noise=noise,
                loudness=loudness)
    if kind == "empty":
        n = int(SR * rng.uniform(0.5, 30.0 if cond is None else 20.0))
        what = ["zero", "white", "pink", "brown", "hum"][rng.randrange(5)]
        if what == "zero":
            x = np.zeros(n)
        else:
            x = _noise(nrs, n, what) * 10 ** (rng.uniform(-70, -12) / 20)
        info["noise"] = what
        text = ""
    else:
        v = voice_settings(rng, split)
        v["speed"] = _speed(rng, speed)
        if kind == "long":
            x, text = _long_text_audio(rng, split, v, whisper, MAX_CLIP_S - 1.5)
        else:
            text = textgen.utterance_text(rng, split)
            x = _speech(rng, split, text, v, whisper)
        info["voice"] = v
        lead = int(rng.uniform(0, 0.6) * SR) if rng.random() < 0.8 else 0
        trail = int(rng.uniform(0, 0.6) * SR) if rng.random() < 0.8 else 0
        if len(x) + lead + trail > MAX_CLIP_S * SR:
            lead = trail = 0
        x = np.concatenate([np.zeros(lead), x, np.zeros(trail)])
    peak = np.max(np.abs(x)) + 1e-9
    if kind != "empty":
        if rev:
            x, info["reverb"] = reverb(x, rng)
            x = x[:int(MAX_CLIP_S * SR)]
            peak = np.max(np.abs(x)) + 1e-9
        x = x * (0.5 / peak)
        speech_rms = np.sqrt(np.mean(x[np.abs(x) > 1e-4] ** 2)) + 1e-9
        if noise != "none":
            kindn = ["white", "pink", "brown", "hum"][rng.randrange(4)]
            snr = rng.uniform(0, 5) if cond == "lowsnr" else rng.uniform(0, 12) if noise == "low" else rng.uniform(12, 40)
            x = x + _noise(nrs, len(x), kindn) * speech_rms * 10 ** (-snr / 20)
            info["noise"], info["snr"] = kindn, round(snr, 1)
        peak = np.max(np.abs(x)) + 1e-9
    if loudness == "quiet":
        g = 10 ** rng.uniform(np.log10(0.002), np.log10(0.03))
    elif loudness == "loud":
        g = rng.uniform(1.0, 4.0)              # clipped
    else:
        g = 10 ** rng.uniform(np.log10(0.05), np.log10(0.9))
    x = x * (g / peak) if kind != "empty" or loudness != "normal" else x
    info["gain"] = round(float(g), 4)
    if channel == "telephone":
        x, info["channel"] = telephone(np.clip(x, -1, 1), rng)
    elif channel == "codec":
        x, info["channel"] = codec(np.clip(x, -1, 1), rng)
    x = np.clip(x, -1.0, 1.0)[:int(MAX_CLIP_S * SR)]
    if len(x) < 1600:
        x = np.concatenate([x, np.zeros(1600 - len(x))])
    return x.astype(np.float32), text, info


def make_recording(seed, i, minutes):
    """A held-out recording of about `minutes` minutes: held-out sentences
    and voices, one voice per recording, pauses of 0.2-2.0 s between
    sentences, light noise at times.  Returns (samples, text, info)."""
    s = int.from_bytes(hashlib.sha256(("%d/test/rec/%d" % (seed, i)).encode()).digest()[:8], "little")
    rng = random.Random(s)
    nrs = np.random.RandomState(s % (2 ** 32))
    v = voice_settings(rng, "test")
    parts, texts, total = [np.zeros(int(SR * rng.uniform(0.2, 1.0)))], [], 0.0
    while total < minutes * 60:
        t = textgen.utterance_text(rng, "test", p_two=0.0)
        x = _speech(rng, "test", t, v, False)
        parts += [x, np.zeros(int(SR * rng.uniform(0.2, 2.0)))]
        texts.append(t)
        total += sum(len(p) for p in parts[-2:]) / SR
    x = np.concatenate(parts)
    x = x * (10 ** rng.uniform(np.log10(0.1), np.log10(0.9)) / (np.max(np.abs(x)) + 1e-9))
    info = {"cond": "long-rec", "voice": v, "minutes": round(len(x) / SR / 60, 2)}
    if rng.random() < 0.5:
        speech_rms = np.sqrt(np.mean(x[np.abs(x) > 1e-4] ** 2)) + 1e-9
        snr = rng.uniform(15, 35)
        x = x + _noise(nrs, len(x), "pink") * speech_rms * 10 ** (-snr / 20)
        info["snr"] = round(snr, 1)
    return np.clip(x, -1, 1).astype(np.float32), " ".join(texts), info
