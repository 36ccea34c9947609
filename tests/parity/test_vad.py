"""Speech detection (docs/VAD.md): parity of the C detector with Silero VAD
v5 in ONNX Runtime, the committed weights against a fresh conversion,
hostile detector files, and the speech regions against a Python reference
of Silero's get_speech_timestamps.

The oracle is research/vad-oracle (node + onnxruntime-node + the npm package
that ships the ONNX file; scripts/install-deps.sh installs them). Without
it the checks that need it are skipped with the reason, except under CI
(the CI environment variable set), where a missing oracle fails."""
import importlib.util
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import finish, report, skip_or_fail  # noqa: E402

SRC = os.environ.get("HV_SOURCE_DIR", os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
BIN = os.environ.get("HV_BINARY_DIR", os.path.join(SRC, "build"))
FIXTURES = os.environ.get("HV_FIXTURES", os.path.join(BIN, "fixtures"))
TOOL = os.path.join(BIN, "tests", "test_vad_core")  # its tool modes
VAD = os.path.join(SRC, "models", "silero-vad")
ORACLE = os.path.join(SRC, "research", "vad-oracle")
ONNX = os.path.join(ORACLE, "node_modules", "@ricky0123", "vad-web", "dist",
                    "silero_vad_v5.onnx")
SR, WINDOW = 16000, 512
TOLERANCE = 1e-4
TMP = tempfile.mkdtemp(prefix="hviske-vad-")


def run(args, timeout=600):
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def oracle_problem():
    """Why the ONNX Runtime oracle cannot run, or None."""
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isdir(os.path.join(ORACLE, "node_modules", "onnxruntime-node")):
        return "research/vad-oracle/node_modules lacks onnxruntime-node"
    if not os.path.exists(ONNX):
        return f"{os.path.relpath(ONNX, SRC)} is missing"
    probe = os.path.join(TMP, "probe.f32")
    np.zeros(WINDOW, "<f4").tofile(probe)
    rc, out, err = run(["node", os.path.join(ORACLE, "oracle.js"), probe,
                        probe + ".out"])
    return None if rc == 0 else f"the oracle does not run: {err.strip()[-300:]}"


# ------------------------------------------------------------- parity

def ort_probs(samples_path, out_path):
    """The oracle's probabilities, or None when it fails."""
    rc, out, err = run(["node", os.path.join(ORACLE, "oracle.js"), samples_path,
                        out_path])
    return None if rc else np.fromfile(out_path, "<f4")


def compare(name, samples, c, ort, worst):
    if ort is None:
        report(f"parity {name}", False, "the oracle failed on these samples")
        return
    n_win = -(-len(samples) // WINDOW)
    if len(c) != n_win or len(ort) != n_win:
        report(f"parity {name}", False,
               f"{len(c)} C and {len(ort)} ONNX probabilities for {n_win} windows")
        return
    d = np.abs(c.astype(np.float64) - ort)
    i = int(d.argmax()) if n_win else 0
    worst[name] = diff = float(d[i]) if n_win else 0.0
    report(f"parity {name} ({n_win} windows, max |diff| {diff:.2e})", diff <= TOLERANCE,
           f"window {i}: C {c[i] if n_win else None} vs ONNX {ort[i] if n_win else None}")


def parity_samples(name, x, worst, threads=1):
    """Raw 16 kHz samples into both sides."""
    path = os.path.join(TMP, name + ".f32")
    np.asarray(x, "<f4").tofile(path)
    rc, out, err = run([TOOL, "probs", VAD, path, path + ".c", threads])
    if rc:
        report(f"parity {name}", False, f"rc {rc}: {err.strip()}")
        return None, None
    c = np.fromfile(path + ".c", "<f4")
    compare(name, x, c, ort_probs(path, path + ".ort"), worst)
    return c, float(out.split()[-1])


def parity_audio(name, audio, worst):
    """An audio file decoded and converted by hviske (hv_audio_to_mono, as
    hv_vad_probs does); the oracle gets exactly those samples."""
    out = os.path.join(TMP, name)
    os.makedirs(out, exist_ok=True)
    rc, _, err = run([TOOL, "audio", VAD, audio, out])
    if rc:
        report(f"parity {name}", False, f"rc {rc}: {err.strip()}")
        return None, None
    x = np.fromfile(os.path.join(out, "samples.f32"), "<f4")
    c = np.fromfile(os.path.join(out, "probs.f32"), "<f4")
    compare(name, x, c, ort_probs(os.path.join(out, "samples.f32"),
                                  os.path.join(out, "ort.f32")), worst)
    return x, c


def pink(n, rng):
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spec))
    spec[1:] /= np.sqrt(f[1:])
    spec[0] = 0
    y = np.fft.irfft(spec, n)
    return 0.2 * y / np.abs(y).max()


def espeak(text, path, voice="en"):
    if not shutil.which("espeak-ng"):
        return False
    return subprocess.run(["espeak-ng", "-v", voice, "-w", path, text],
                          capture_output=True).returncode == 0


def long_file(speech, rng):
    """10 minutes: speech at varied gains between silences, noise and hum."""
    parts, n = [], 0
    while n < 600 * SR:
        kind = rng.integers(4)
        if kind == 0:
            seg = speech * rng.uniform(0.2, 1.5)
        elif kind == 1:
            seg = np.zeros(int(rng.uniform(0.1, 4) * SR))
        elif kind == 2:
            seg = rng.standard_normal(int(rng.uniform(0.5, 5) * SR)) * rng.uniform(0.001, 0.05)
        else:
            t = np.arange(int(rng.uniform(0.5, 3) * SR)) / SR
            seg = 0.1 * np.sin(2 * np.pi * 50 * t)
        parts.append(seg)
        n += len(seg)
    return np.clip(np.concatenate(parts)[:600 * SR], -1, 1).astype("<f4")


def test_parity():
    worst, probs = {}, {}
    rng = np.random.default_rng(7)
    x, c = parity_audio("da-example.wav", os.path.join(SRC, "examples", "da-example.wav"),
                        worst)
    if x is not None:
        probs["da-example"] = (c, len(x))
        clipped = np.clip(x * 8, -1, 1)
        parity_samples("clipped speech", clipped, worst)
    wav = os.path.join(TMP, "espeak.wav")
    text = ("Speech detection runs in front of the encoder. It finds the parts "
            "of a recording where somebody speaks. Silence, noise and music "
            "are skipped. The detector looks at 32 milliseconds at a time.")
    if espeak(text, wav):
        xs, cs = parity_audio("espeak-ng 22.05 kHz", wav, worst)
        if xs is not None:
            probs["espeak"] = (cs, len(xs))
    else:
        skip_or_fail("parity espeak-ng", "espeak-ng is not installed")
        xs = x
    parity_audio("8 kHz resampled", os.path.join(FIXTURES, "audio", "da3_8k.wav"), worst)
    parity_audio("44.1 kHz stereo", os.path.join(FIXTURES, "audio",
                                                 "da2_44100_stereo.wav"), worst)
    parity_samples("digital silence", np.zeros(5 * SR + 123), worst)
    parity_samples("white noise", 0.1 * rng.standard_normal(5 * SR), worst)
    parity_samples("pink noise", pink(5 * SR, rng), worst)
    parity_samples("one partial window", 0.1 * rng.standard_normal(300), worst)
    if xs is not None:
        long = long_file(xs, rng)
        c, ms = parity_samples("10 minutes", long, worst, threads=2)
        if c is not None:
            probs["10 minutes"] = (c, len(long))
            print(f"info  detector on 10 minutes of audio, 2 threads: {ms:.0f} ms wall "
                  f"({ms / 600:.2f} ms per second of audio)")
    if worst:
        name = max(worst, key=worst.get)
        print(f"info  worst |C - ONNX Runtime| over all windows: "
              f"{worst[name]:.3e} ({name})")
    return probs


# ----------------------------------------------------- regions reference

def get_speech_timestamps(probs, n_samples, threshold=0.5, min_speech_ms=250,
                          max_speech_s=float("inf"), min_silence_ms=100,
                          speech_pad_ms=30, neg_threshold=None,
                          min_silence_at_max_speech=98, sampling_rate=SR,
                          window=WINDOW):
    """silero-vad's utils_vad.get_speech_timestamps (v5), from the loop over
    the probabilities on, with use_max_poss_sil_at_max_speech=True and
    return_seconds=False: the reference hv_vad_speech_regions follows."""
    min_speech = sampling_rate * min_speech_ms / 1000
    pad = sampling_rate * speech_pad_ms / 1000
    max_speech = sampling_rate * max_speech_s - window - 2 * pad
    min_silence = sampling_rate * min_silence_ms / 1000
    min_silence_at_max = sampling_rate * min_silence_at_max_speech / 1000
    triggered, speeches, cur = False, [], {}
    if neg_threshold is None:
        neg_threshold = max(threshold - 0.15, 0.01)
    temp_end = prev_end = next_start = 0
    possible_ends = []
    for i, p in enumerate(probs):
        if p >= threshold and temp_end:
            sil = window * i - temp_end
            if sil > min_silence_at_max:
                possible_ends.append((temp_end, sil))
            temp_end = 0
            if next_start < prev_end:
                next_start = window * i
        if p >= threshold and not triggered:
            triggered = True
            cur["start"] = window * i
            continue
        if triggered and window * i - cur["start"] > max_speech:
            if possible_ends:
                prev_end, dur = max(possible_ends, key=lambda e: e[1])
                cur["end"] = prev_end
                speeches.append(cur)
                cur = {}
                next_start = prev_end + dur
                if next_start < prev_end + window * i:
                    cur["start"] = next_start
                else:
                    triggered = False
                possible_ends = [e for e in possible_ends if e[0] > next_start]
                prev_end = next_start = temp_end = 0
            else:
                speeches.append({"start": cur["start"], "end": window * i})
                cur, triggered, possible_ends = {}, False, []
                prev_end = next_start = temp_end = 0
                continue
        if p < neg_threshold and triggered:
            if not temp_end:
                temp_end = window * i
            if window * i - temp_end < min_silence:
                continue
            if temp_end - cur["start"] > min_speech:
                speeches.append({"start": cur["start"], "end": temp_end})
            cur, triggered, possible_ends = {}, False, []
            prev_end = next_start = temp_end = 0
            continue
    if cur and n_samples - cur["start"] > min_speech:
        cur["end"] = n_samples
        speeches.append(cur)
    for i, s in enumerate(speeches):
        if i == 0:
            s["start"] = int(max(0, s["start"] - pad))
        if i != len(speeches) - 1:
            gap = speeches[i + 1]["start"] - s["end"]
            if gap < 2 * pad:
                s["end"] += int(gap // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - gap // 2))
            else:
                s["end"] = int(min(n_samples, s["end"] + pad))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - pad))
        else:
            s["end"] = int(min(n_samples, s["end"] + pad))
    return [(s["start"], s["end"]) for s in speeches]


def f32(v):
    return float(np.float32(v))


def check_regions(name, probs, n_samples, prm):
    """The C regions of probs against the reference, exactly."""
    path = os.path.join(TMP, "regions.f32")
    np.asarray(probs, "<f4").tofile(path)
    thr, neg, ms, msil, pad, mx = prm
    rc, out, err = run([TOOL, "regions", path, n_samples, repr(thr), repr(neg), ms, msil,
                        pad, repr(mx)])
    got = [tuple(int(v) for v in line.split()) for line in out.splitlines()]
    want = get_speech_timestamps(
        [float(p) for p in np.asarray(probs, "<f4")], n_samples, threshold=f32(thr),
        min_speech_ms=ms, min_silence_ms=msil, speech_pad_ms=pad,
        max_speech_s=f32(mx) if mx > 0 else float("inf"),
        neg_threshold=f32(neg) if neg >= 0 else None)
    ok = rc == 0 and got == want
    report(f"regions {name} {prm}: {len(want)} regions", ok,
           f"rc {rc} {err.strip()} C {got[:6]} vs reference {want[:6]}")
    return ok


PARAMS = [(0.5, -1, 250, 100, 30, 0), (0.3, -1, 100, 0, 0, 0), (0.7, 0.6, 500, 300, 100, 0),
          (0.5, -1, 250, 100, 250, 0), (0.5, -1, 250, 100, 30, 3.0),
          (0.4, 0.1, 0, 50, 30, 1.5), (0.12, -1, 250, 2000, 30, 10.0)]


def test_regions(probs):
    for name, (p, n) in probs.items():
        for prm in PARAMS:
            check_regions(name, p, n, prm)
    # random walks: long runs above and below the thresholds, every setting
    rng = random.Random(3)
    fails = 0
    for k in range(60):
        n_win = rng.randrange(0, 600)
        walk, v = [], rng.random()
        for _ in range(n_win):
            v = min(1.0, max(0.0, v + rng.gauss(0, 0.15)))
            walk.append(v if rng.random() > 0.05 else rng.random())
        n = max(0, n_win * WINDOW - rng.randrange(0, WINDOW))
        prm = (round(rng.uniform(0.05, 0.95), 3), rng.choice([-1, round(rng.random(), 3)]),
               rng.choice([0, 32, 250, 700]), rng.choice([0, 10, 100, 400]),
               rng.choice([0, 16, 30, 200]), rng.choice([0, 0, 0.5, 1.0, 2.5, 4.0]))
        fails += not check_regions(f"random {k}", walk, n, prm)
    return fails


# -------------------------------------------------- conversion, hostile

def test_conversion():
    out = os.path.join(TMP, "converted")
    p = subprocess.run([sys.executable, os.path.join(SRC, "research", "convert-silero-vad.py"),
                        "--onnx", ONNX, "--out", out], capture_output=True, text=True)
    if p.returncode:
        report("conversion", False, p.stderr)
        return
    for f in ("model.safetensors", "config.json"):
        a = open(os.path.join(out, f), "rb").read()
        b = open(os.path.join(VAD, f), "rb").read()
        report(f"committed {f} equals a fresh conversion of the npm package's ONNX",
               a == b, f"{len(a)} vs {len(b)} bytes")


def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def write_st(path, header, data):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def hostile(name, mutate, expect):
    """A copy of the detector changed by mutate(dir) must fail to load with
    a message that contains every string of expect ("/NAME": the file NAME
    in the changed directory, named in full)."""
    d = os.path.join(TMP, "hostile", name.replace(" ", "-"))
    shutil.copytree(VAD, d)
    mutate(d)
    rc, out, err = run([TOOL, "load", d])
    expect = [d + s if s.startswith("/") else s for s in expect]
    ok = rc == 1 and all(s in err for s in expect) and "Sanitizer" not in err
    report(f"hostile detector: {name}", ok, f"rc {rc}, stderr {err.strip()!r}, "
           f"expected {expect}")


def st_edit(fn):
    def mutate(d):
        path = os.path.join(d, "model.safetensors")
        header, data = read_st(path)
        data = fn(header, bytearray(data))
        write_st(path, header, bytes(data))
    return mutate


def cfg_edit(fn):
    def mutate(d):
        path = os.path.join(d, "config.json")
        cfg = json.load(open(path))
        fn(cfg)
        json.dump(cfg, open(path, "w"))
    return mutate


def test_hostile():
    st, cfg = "/model.safetensors", "/config.json"  # in the detector's directory

    def transpose(h, data):
        h["decoder.rnn.weight_ih"]["shape"] = [128, 512]
        return data

    def drop(h, data):
        del h["decoder.rnn.bias_hh"]
        return data

    def dtype(h, data):
        h["encoder.2.reparam_conv.bias"]["dtype"] = "I32"
        return data

    def nan(h, data):
        off = h["encoder.0.reparam_conv.weight"]["data_offsets"][0]
        data[off + 40:off + 44] = struct.pack("<f", float("nan"))
        return data

    def shrink(h, data):
        # a consistent file whose tensor is too small for the config
        e = h["encoder.1.reparam_conv.weight"]
        e["shape"] = [64, 128, 1]
        e["data_offsets"][1] = e["data_offsets"][0] + 64 * 128 * 4
        return data

    def truncate(d):
        p = os.path.join(d, "model.safetensors")
        raw = open(p, "rb").read()
        open(p, "wb").write(raw[:len(raw) // 2])

    hostile("wrong shape", st_edit(transpose),
            [st, "decoder.rnn.weight_ih", "shape [128, 512], expected [512, 128]"])
    hostile("smaller tensor", st_edit(shrink),
            [st, "encoder.1.reparam_conv.weight", "expected [64, 128, 3]"])
    hostile("missing tensor", st_edit(drop), [st, "decoder.rnn.bias_hh", "missing"])
    hostile("wrong dtype", st_edit(dtype), [st, "encoder.2.reparam_conv.bias", "I32",
                                            "expected F32"])
    hostile("NaN weight", st_edit(nan), [st, "encoder.0.reparam_conv.weight", "not finite"])
    hostile("truncated file", truncate, [st])
    hostile("empty file", lambda d: open(os.path.join(d, "model.safetensors"), "wb").close(),
            [st, "too short"])
    hostile("missing weights", lambda d: os.remove(os.path.join(d, "model.safetensors")),
            [st, "No such file"])
    hostile("missing config", lambda d: os.remove(os.path.join(d, "config.json")),
            [cfg, "No such file"])
    hostile("config not JSON", lambda d: open(os.path.join(d, "config.json"), "w").write(
        "{\"format\": "), [cfg, "invalid JSON at line 1"])
    hostile("config missing key", cfg_edit(lambda c: c.pop("hop_length")),
            [cfg, "hop_length: missing"])
    hostile("config wrong format", cfg_edit(lambda c: c.update(format="onnx")),
            [cfg, "format"])
    hostile("config newer version", cfg_edit(lambda c: c.update(format_version=2)),
            [cfg, "format_version 2"])
    hostile("config fractional window", cfg_edit(lambda c: c.update(window_samples=512.5)),
            [cfg, "window_samples: must be an integer"])
    hostile("config hidden size", cfg_edit(lambda c: c.update(hidden_size=64)),
            [cfg, "hidden_size 64"])
    hostile("config strides", cfg_edit(lambda c: c.update(encoder_strides=[1, 1, 2, 1])),
            [cfg, "2 steps per window"])
    hostile("config strides count", cfg_edit(lambda c: c.update(encoder_strides=[1, 2, 2])),
            [cfg, "encoder_strides: 3 values for 4 layers"])
    hostile("config channels vs weights",
            cfg_edit(lambda c: c.update(encoder_channels=[128, 64, 32, 128])),
            [st, "encoder.2.reparam_conv.weight", "expected [32, 64, 3]"])


def main():
    if not os.path.exists(TOOL):
        report("test_vad_core program", False, f"{TOOL} is missing")
        return finish()
    test_hostile()
    problem = oracle_problem()
    probs = {}
    if problem:
        skip_or_fail("parity with ONNX Runtime", problem)
    else:
        probs = test_parity()
    if importlib.util.find_spec("onnx") and os.path.exists(ONNX):
        test_conversion()
    else:
        skip_or_fail("conversion", "python3-onnx or the npm package's ONNX file is missing")
    # the regions need probabilities of real audio: without the oracle, the
    # C side's own
    if "da-example" not in probs:
        path = os.path.join(TMP, "da")
        os.makedirs(path, exist_ok=True)
        rc, _, err = run([TOOL, "audio", VAD, os.path.join(SRC, "examples", "da-example.wav"),
                          path])
        if rc:
            report("probabilities of da-example.wav", False, f"rc {rc}: {err.strip()}")
        else:
            c = np.fromfile(os.path.join(path, "probs.f32"), "<f4")
            n = len(np.fromfile(os.path.join(path, "samples.f32"), "<f4"))
            probs["da-example"] = (c, n)
    test_regions(probs)
    shutil.rmtree(TMP, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
