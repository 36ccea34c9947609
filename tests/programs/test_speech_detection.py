"""Speech detection through the programs, on the demo model and the bundled
detector (docs/VAD.md, docs/CLI.md, docs/SERVER.md):

  * hviske: silence, noise and hum give an empty transcript, no segments,
    no cues, exit 0 and no encoder time; speech with long pauses gives each
    utterance's words with segments and cues on the speech (times on the
    input's timeline); --chunking energy still transcribes every sample;
    every --vad-* option is checked (usage errors, warnings); a missing or
    broken detector is an error naming it.
  * hviske-server: the same through /v1/audio/transcriptions, and OpenAI's
    chunking_strategy field ("auto" or {"type": "server_vad", ...}), each
    bad value a 400 naming the field.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import shutil
import sys
import tempfile
import wave

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import Run, check, finish, float_wav, report  # noqa: E402
from test_server import Server, transcribe  # noqa: E402

SOURCE = os.environ.get("HV_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEMO = os.path.join(SOURCE, "models", "demo")
VAD = os.path.join(SOURCE, "models", "silero-vad")
EXAMPLE = os.path.join(SOURCE, "examples", "da-example.wav")
SR = 16000
KEEP_PAUSE_S = 1.0  # of each pause, sent with the speech (src/audio/speech_chunks.h)


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == SR and w.getnchannels() == 1
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768


def loud_span(x):
    """Seconds where a clip's speech begins and ends (a tenth of its peak)."""
    idx = np.nonzero(np.abs(x) >= 0.1 * np.abs(x).max())[0]
    return idx[0] / SR, (idx[-1] + 1) / SR


def no_speech_signals(tmp):
    """Name -> path of 20 s without speech."""
    rng = np.random.default_rng(7)
    t = np.arange(20 * SR) / SR
    white = rng.uniform(-0.2, 0.2, t.size)
    pink = np.cumsum(rng.normal(0, 1, t.size))
    pink = 0.3 * (pink - np.convolve(pink, np.ones(801) / 801, "same")) / 40
    hum = 0.2 * np.sin(2 * np.pi * 50 * t) + 0.05 * np.sin(2 * np.pi * 150 * t)
    chords = sum(0.08 * np.sin(2 * np.pi * f * (1 + (t.astype(int) % 3) / 8) * t)
                 for f in (261.6, 329.6, 392.0))
    sig = {"digital silence": np.zeros(t.size), "white noise": white,
           "low-passed noise": pink, "mains hum": hum, "chords": chords}
    return {k: float_wav(os.path.join(tmp, k.replace(" ", "_") + ".wav"), v)
            for k, v in sig.items()}


def placed(tmp, name, clip, total_s, at):
    """clip pasted at each of `at` seconds into total_s of silence."""
    x = np.zeros(int(total_s * SR), np.float32)
    for a in at:
        o = int(a * SR)
        x[o:o + clip.size] = clip
    return float_wav(os.path.join(tmp, name), x)


def json_of(r):
    try:
        return json.loads(r.out)
    except ValueError:
        return None


def test_cli_no_speech(signals):
    for name, path in signals.items():
        r = Run(["-m", DEMO, path])
        check(f"cli {name}: an empty line, exit 0", r, r.rc == 0 and r.out == "\n",
              "expected one empty line")
        r = Run(["--json", "-m", DEMO, path])
        o = json_of(r)
        check(f"cli {name}: no text, no segments, no encoder time", r,
              r.rc == 0 and o and o["text"] == "" and o["segments"] == []
              and o["tokens"] == [] and o["timings"]["encoded_s"] == 0
              and o["timings"]["vad_ms"] > 0, "")
    path = signals["digital silence"]
    r = Run(["--format", "srt", "-m", DEMO, path])
    check("cli silence as srt: no cue", r, r.rc == 0 and r.out.strip() == "", "")
    r = Run(["--format", "vtt", "-m", DEMO, path])
    check("cli silence as vtt: the header only", r,
          r.rc == 0 and r.out.strip() == "WEBVTT", "")


def test_cli_speech(tmp, clip, alone):
    c0, c1 = loud_span(clip)
    late = placed(tmp, "late.wav", clip, 20, [7.25])
    r = Run(["--json", "-m", DEMO, late])
    o = json_of(r)
    seg = o["segments"] if o else []
    check("cli speech from 7.25 s to 10.3 s of 20 s: its words, one segment on it", r,
          r.rc == 0 and o and o["text"] == alone and len(seg) == 1
          and abs(seg[0]["start"] - (7.25 + c0)) < 0.15
          and abs(seg[0]["end"] - (7.25 + c1)) < 0.2
          and o["timings"]["encoded_s"] < 4,
          f"want {alone!r} at {7.25 + c0:.3f}-{7.25 + c1:.3f}")
    at = [1.0, 12.0, 41.0]
    pauses = placed(tmp, "pauses.wav", clip, 48, at)
    r = Run(["--json", "-m", DEMO, pauses])
    o = json_of(r)
    seg = o["segments"] if o else []
    # the same words; the small model may hear one word of an utterance
    # otherwise where the detector cut it a window apart
    got, want = (o["text"].split() if o else []), " ".join([alone] * 3).split()
    ok = (r.rc == 0 and o and len(got) == len(want)
          and sum(a != b for a, b in zip(got, want)) <= 3 and len(seg) == 3
          and all(abs(s["start"] - (a + c0)) < 0.15 and abs(s["end"] - (a + c1)) < 0.2
                  for s, a in zip(seg, at)))
    check("cli three utterances 8-25 s apart: each one's words, a segment on each", r, ok,
          f"segments {[(s['start'], s['end']) for s in seg]}")
    check("cli long pauses: the encoder sees the speech only", r,
          ok and o["timings"]["encoded_s"] <= 3 * (clip.size / SR + KEEP_PAUSE_S)
          and o["timings"]["encoded_s"] >= 3 * (c1 - c0), "")
    r = Run(["--format", "srt", "-m", DEMO, pauses])
    cues = [b for b in r.out.strip().split("\n\n") if b]
    check("cli long pauses as srt: three cues on the speech", r,
          r.rc == 0 and len(cues) == 3 and cues[1].split("\n")[1].startswith("00:00:12,"),
          "")
    r = Run(["--json", "--vad-max-gap", "0", "-m", DEMO, pauses])
    o = json_of(r)
    check("cli --vad-max-gap 0: one chunk from the first to the last speech",
          r, r.rc == 0 and o and len(o["chunks"]) == 1
          and abs(o["chunks"][0]["end"] - (41 + c1)) < 0.2, "")
    r = Run(["--json", "--chunking", "energy", "-m", DEMO, pauses])
    o = json_of(r)
    check("cli --chunking energy: every sample to the encoder", r,
          r.rc == 0 and o and abs(o["timings"]["encoded_s"] - 48) < 0.01
          and o["timings"]["vad_ms"] == 0, "")
    r = Run(["--vad-threshold", "0.99", "--vad-min-speech-ms", "60000", "-m", DEMO, late])
    check("cli --vad-min-speech-ms longer than the speech: nothing", r,
          r.rc == 0 and r.out == "\n", "")
    return late


def test_cli_options(late, tmp):
    for args, name in [(["--vad-threshold", "1.5"], "--vad-threshold"),
                       (["--vad-threshold", "nan"], "--vad-threshold"),
                       (["--vad-min-speech-ms", "-1"], "--vad-min-speech-ms"),
                       (["--vad-min-silence-ms", "1.5"], "--vad-min-silence-ms"),
                       (["--vad-speech-pad-ms", "86400001"], "--vad-speech-pad-ms"),
                       (["--vad-max-gap", "-3"], "--vad-max-gap"),
                       (["--vad-edges", "energy"], "--vad-edges"),
                       (["--vad-model", ""], "--vad-model"),
                       (["--chunking", "speech"], "vad")]:
        r = Run(args + ["-m", DEMO, late])
        check(f"cli {' '.join(args)}: usage error naming {name}", r,
              r.rc == 2 and name in r.err and r.out == "", "")
    r = Run(["--chunking", "energy", "--vad-threshold", "0.3", "-m", DEMO, late])
    check("cli --vad-threshold with --chunking energy: a warning", r,
          r.rc == 0 and "--vad-threshold has no effect" in r.err, "")
    r0, r1 = (Run(["--json", "--vad-edges", e, "-m", DEMO, late]) for e in ("silero", "signal"))
    o0, o1 = json_of(r0), json_of(r1)
    check("cli --vad-edges silero and signal: the same text on speech after silence", r1,
          r0.rc == 0 and r1.rc == 0 and o0 and o1 and o0["text"] == o1["text"] and o1["text"], "")
    r = Run(["--chunking", "energy", "--vad-edges", "silero", "-m", DEMO, late])
    check("cli --vad-edges with --chunking energy: a warning", r,
          r.rc == 0 and "--vad-edges has no effect" in r.err, "")
    r = Run(["--vad-model", os.path.join(tmp, "nowhere"), "-m", DEMO, late])
    check("cli --vad-model to nothing: exit 1 naming it", r,
          r.rc == 1 and "nowhere" in r.err and r.out == "", "")
    env = dict(os.environ, HVISKE_VAD_MODEL=os.path.join(tmp, "nowhere-env"))
    r = Run(["-m", DEMO, late], env=env)
    check("cli $HVISKE_VAD_MODEL to nothing: exit 1 naming it", r,
          r.rc == 1 and "nowhere-env" in r.err, "")
    r = Run(["--chunking", "energy", "-m", DEMO, late], env=env)
    check("cli --chunking energy needs no detector", r,
          r.rc == 0 and r.out.endswith("\n") and r.err == "", "")
    # a broken detector: its weights cut short
    bad = os.path.join(tmp, "broken-vad")
    shutil.copytree(VAD, bad)
    st = os.path.join(bad, "model.safetensors")
    with open(st, "r+b") as f:
        f.truncate(os.path.getsize(st) // 2)
    r = Run(["--vad-model", bad, "-m", DEMO, late])
    check("cli truncated detector: exit 1 naming its file", r,
          r.rc == 1 and "model.safetensors" in r.err and r.out == "", "")
    env = dict(os.environ, HVISKE_VAD_MODEL=VAD)
    r = Run(["-m", DEMO, late], env=env)
    check("cli $HVISKE_VAD_MODEL names the detector", r, r.rc == 0 and r.out.strip(), "")


def test_server(tmp, signals, late, alone):
    srv = Server(DEMO, "--workers", "1", "-t", "2", "--vad-edges", "signal", tmp=tmp)
    report("server with speech detection starts", srv.port is not None, srv.stderr())
    if srv.port:
        with open(signals["digital silence"], "rb") as f:
            silence = f.read()
        with open(late, "rb") as f:
            speech = f.read()
        r = transcribe(srv.port, silence)
        report("server silence: {\"text\": \"\"}", r.status == 200 and r.json() == {"text": ""},
               str(r))
        r = transcribe(srv.port, silence, [("response_format", "verbose_json")])
        o = r.json() or {}
        report("server silence, verbose_json: no segments", r.status == 200
               and o.get("text") == "" and o.get("segments") == [], str(r))
        r = transcribe(srv.port, speech, [("response_format", "verbose_json")])
        o = r.json() or {}
        seg = o.get("segments") or [{}]
        report("server speech at 7.25 s: its words, a segment on it", r.status == 200
               and o.get("text") == alone and 7.1 < seg[0].get("start", 0) < 7.4, str(r))
        for cs in ["auto", '{"type": "server_vad"}',
                   '{"type": "server_vad", "threshold": 0.6, "prefix_padding_ms": 100, '
                   '"silence_duration_ms": 500}']:
            r = transcribe(srv.port, speech, [("chunking_strategy", cs)])
            report(f"server chunking_strategy {cs}: 200 with the words", r.status == 200
                   and (r.json() or {}).get("text") == alone, str(r))
        r = transcribe(srv.port, silence, [("chunking_strategy", "auto")])
        report("server chunking_strategy auto on silence: no text",
               r.status == 200 and r.json() == {"text": ""}, str(r))
        for cs in ["energy", "{", "[]", '{"type": "semantic_vad"}', '{"threshold": 0.5}',
                   '{"type": "server_vad", "threshold": 1.5}',
                   '{"type": "server_vad", "threshold": "0.5"}',
                   '{"type": "server_vad", "prefix_padding_ms": -1}',
                   '{"type": "server_vad", "silence_duration_ms": 2.5}',
                   '{"type": "server_vad", "create_response": true}']:
            r = transcribe(srv.port, speech, [("chunking_strategy", cs)])
            e = (r.json() or {}).get("error") or {}
            report(f"server chunking_strategy {cs}: 400 naming the field",
                   r.status == 400 and e.get("param") == "chunking_strategy", str(r))
        srv.stop()
        report("server: SIGTERM, exit 0, no sanitizer report", *srv.clean_exit())
    # a server without speech detection by default still offers it per request
    srv = Server(DEMO, "--chunking", "energy", tmp=tmp)
    if srv.port:
        with open(signals["digital silence"], "rb") as f:
            silence = f.read()
        r = transcribe(srv.port, silence, [("chunking_strategy", "auto")])
        e = (r.json() or {}).get("error") or {}
        report("server --chunking energy: chunking_strategy is a 400 (no detector loaded)",
               r.status == 400 and e.get("param") == "chunking_strategy", str(r))
        srv.stop()
        report("energy server: SIGTERM, exit 0", *srv.clean_exit())
    srv = Server(DEMO, "--vad-model", os.path.join(tmp, "nowhere"), tmp=tmp)
    rc = srv.stop(sig=None)
    report("server --vad-model to nothing: exit 1 naming it",
           srv.port is None and rc == 1 and "nowhere" in srv.stderr(), srv.stderr())


def main():
    tmp = tempfile.mkdtemp(prefix="hv-test-vad-")
    try:
        clip = read_wav(EXAMPLE)
        r = Run(["--chunking", "energy", "-m", DEMO, EXAMPLE])
        alone = r.out.strip()
        check("the demo model transcribes the example", r, r.rc == 0 and alone, "")
        signals = no_speech_signals(tmp)
        test_cli_no_speech(signals)
        late = test_cli_speech(tmp, clip, alone)
        test_cli_options(late, tmp)
        test_server(tmp, signals, late, alone)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
