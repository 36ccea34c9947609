#!/usr/bin/env python3
"""Diarize mode end to end on a tiny model (issue #63, item 3).

The fixture model tiny-f32 with the vocabulary extended as
test_extended_vocab.py extends it (<|spltoken0..7|>, <|t:0.0..0.3|>).
Random weights cannot be made to emit a well-formed speaker stream, so the
parse of such streams is test_diarize's (the library's parser on
hand-written streams); here:
  * --diarize puts <|timestamp|> <|diarize|> in the prompt: hviske-dump's
    prompt equals the plain one but for its last two ids, which differ;
  * with the added tokens never chosen, the stream has no speaker token:
    each chunk's text is one segment (speaker -1: no "speaker" in JSON),
    its words inside it, the text the segments' joined;
  * with <|spltoken0|> always chosen, its ids are all kept in the tokens
    and a stream of speaker tokens only gives no segment and no text;
  * with <|spltoken0|> and <|t:0.0|> made likeliest and a repetition
    penalty that makes each unlikely once emitted, every chunk decodes
    <|spltoken0|> <|t:0.0|> text: one turn of speaker 0 from the chunk's
    start to its end (no end time: the window's), whose tokens are the
    chunk's but those two, its words inside it; txt "[SPEAKER_00] " lines,
    vtt "<v Speaker 1>", srt "[SPEAKER_00] " opening each cue's text (and
    with --srt-speakers dash no dash: one speaker, no change), Python
    speaker 0 (and python -m hviske's JSON, and its srt, label and dash);
    hviske-server's diarized_json
    (OpenAI's segments, speaker "A") and verbose_json with diarize (each
    segment's "speaker"), srt with srt_speakers label and dash (voice a
    400); --srt-speakers refuses a
    style that is none, naming the option;
  * refused, naming the piece, on the model without the added tokens
    (<|spltoken0|>) and on one with speaker but no time tokens
    (<|t:0.0|>); without --diarize both transcribe;
  * Python: diarize=True gives the CLI's chunks with speaker -1, and
    raises InvalidArgument naming <|spltoken0|> on the plain model; its
    timings' diarize_ms is positive;
  * diarize_voice: --diarize-voice 0 and 1 give the same speakers (one
    speaker throughout), 1.5 is a usage error naming the option, Python's
    diarize_voice=-0.5 InvalidArgument naming it;
  * over 30 s (65 s of a fading tone, energy chunking): windows of at
    most 30 s (Python's progress), one label, each word once; hviske-dump's
    "windows" the chunks of its "bounds" widened into their neighbours,
    each ending where Python's progress says the window transcribed ends;
  * hviske --format openai-diarized-json without --diarize: the server's
    diarized_json byte for byte as JSON; refused naming the piece on the
    plain models; named in --help; --stream with it and json with it for
    one input are usage errors naming what clashes.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_extended_vocab as ext  # noqa: E402
from hvserver import Server, request, transcribe  # noqa: E402
from hvtest import Run, finish_in, reexec_with_sanitizers, report, sanitized  # noqa: E402


def dump_prompt(model, wav, tmp, name, *extra):
    out = os.path.join(tmp, name)
    p = subprocess.run([os.environ.get("HV_DUMP", "hviske-dump"), "-m", model, "-o", out,
                        *extra, wav], capture_output=True, timeout=600)
    try:
        with open(os.path.join(out, "result.json")) as f:
            return json.load(f)["prompt"]
    except (OSError, ValueError, KeyError):
        sys.stderr.write(p.stderr.decode("utf-8", "replace"))
        return None


def check_python(model, plain, wav, cli_chunks):
    os.environ["HVISKE_LIBRARY"] = os.path.join(os.environ["HV_BINARY_DIR"], "libhviske.so")
    sys.path.insert(0, os.path.join(os.environ["HV_SOURCE_DIR"], "python"))
    import hviske
    m = hviske.Model(model)
    res = m.transcribe(wav, diarize=True)
    report("Python diarize=True: the CLI's chunks, each speaker -1",
           [c.text for c in res.chunks] == [c["text"] for c in cli_chunks]
           and all(c.speaker == -1 for c in res.chunks + res.segments), str(res.chunks))
    try:
        hviske.Model(plain).transcribe(wav, diarize=True)
        report("Python diarize=True on the plain model raises", False, "no error")
    except hviske.InvalidArgument as e:
        report("Python diarize=True on the plain model: InvalidArgument naming the piece",
               "<|spltoken0|>" in str(e), str(e))


def one_turn_model(src, dst):
    """The extended model with <|spltoken0|> and then <|t:0.0|> likeliest."""
    model, V = ext.extended(src, dst, first_bias=60.0)
    path = os.path.join(model, "model.safetensors")
    head, data, meta = ext.read_st(path)
    n = len(data[ext.BIAS]) // 4
    bias = list(struct.unpack("<%df" % n, bytes(data[ext.BIAS])))
    bias[V + ext.ADDED.index("<|t:0.0|>")] = 50.0
    data[ext.BIAS] = bytearray(struct.pack("<%df" % n, *bias))
    ext.write_st(path, head, data, meta)
    return model, V


def check_one_turn(src, wav, tmp):
    model, V = one_turn_model(src, os.path.join(tmp, "turn"))
    t0 = V + ext.ADDED.index("<|t:0.0|>")
    base = ["-m", model, "-q", "--diarize", "--repetition-penalty", "100",
            "--chunking", "fixed", "--chunk-seconds", "1"]
    r = Run(base + ["--word-timestamps", "--format", "json", wav])
    res = json.loads(r.out) if r.rc == 0 else None
    ok = bool(res and len(res["chunks"]) >= 2)
    toks = res["tokens"] if ok else []
    ok = ok and check_windows(res, toks, V, t0)
    report("one turn per window: speaker 0 throughout, each segment a part of its window's turn",
           ok, str(r))
    txt = Run(base + [wav])
    lines = txt.lines()
    report("txt: a [SPEAKER_00] line per chunk",
           txt.rc == 0 and res and len(lines) == len(res["chunks"])
           and all(ln.startswith("[SPEAKER_00] ") for ln in lines), str(txt))
    vtt = Run(base + ["--format", "vtt", wav])
    report("vtt: cues open with <v Speaker 1>",
           vtt.rc == 0 and "<v Speaker 1>" in vtt.out and "<v Speaker 2>" not in vtt.out, str(vtt))
    check_srt(base, wav)
    check_server(model, wav, tmp)
    return model, V


def windows_of(toks, V):
    """The windows' streams in the result's tokens: each opens with V."""
    starts = [i for i, t in enumerate(toks) if t == V] + [len(toks)]
    return [toks[a:b] for a, b in zip(starts, starts[1:])] if starts[0] == 0 else None


def check_windows(res, toks, V, t0):
    """Every window decoded <|spltoken0|> <|t:0.0|> text; each segment is
    a slice of one window's text (its share), speaker 0 (the windows'
    speakers linked), segments in time order and touching-or-apart, words
    inside them."""
    wins = windows_of(toks, V)
    if not wins or any(w[:2] != [V, t0] for w in wins):
        return False
    pos, k = 0, 0
    spans = []
    for w in wins:
        spans.append((pos + 2, pos + len(w)))
        pos += len(w)
    for c in res["chunks"]:
        n = len(c["tokens"])
        while k < len(spans) and not any(toks[i:i + n] == c["tokens"]
                                         for i in range(spans[k][0], spans[k][1] - n + 1)):
            k += 1
        if k == len(spans) or c.get("speaker") != 0 or not c["text"]:
            return False
        if not all(c["start"] - 1e-6 <= w["start"] <= w["end"] <= c["end"] + 1e-6
                   for w in c.get("words", [])):
            return False
    ok = all(s.get("speaker") == 0 for s in res["segments"])
    ok = ok and abs(res["chunks"][0]["start"]) < 1e-6
    return ok and all(a["end"] <= b["start"] + 1e-6
                      for a, b in zip(res["chunks"], res["chunks"][1:]))


def long_wav(tmp, seconds):
    """A tone whose loudness falls all the way: the quietest place to cut
    any stretch of it is that stretch's end, so every plan cuts as late as
    it may (a window as long as it is allowed to be)."""
    import wave
    rate, n = 16000, int(16000 * seconds)
    x = [int(16000 * (1 - 0.95 * i / n) * math.sin(2 * math.pi * 220 * i / rate))
         for i in range(n)]
    out = os.path.join(tmp, "long.wav")
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack("<%dh" % n, *x))
    return out, seconds


def check_long(turn, V, tmp):
    """Over 30 s: windows of at most 30 s (Python's progress reports each
    window's end), overlapping, one label over the recording (the windows'
    speaker 0 linked by the time both give its turn in their overlap), the
    overlap's words emitted once: segments in order, apart, each a slice
    of its window's turn."""
    t0 = V + ext.ADDED.index("<|t:0.0|>")
    wav, dur = long_wav(tmp, 65)
    base = ["-m", turn, "-q", "--diarize", "--repetition-penalty", "100", "--chunking", "energy"]
    r = Run(base + ["--word-timestamps", "--format", "json", wav])
    res = json.loads(r.out) if r.rc == 0 else None
    report(f"{dur:.0f} s: one label, each word once, segments in order",
           bool(res and res["chunks"]) and check_windows(res, res["tokens"], V, t0)
           and abs(res["chunks"][-1]["end"] - res["duration"]) < 0.01, str(r))
    import hviske
    ends = []
    hviske.Model(turn).transcribe(wav, diarize=True, repetition_penalty=100.0, chunking="energy",
                                  progress=lambda done, total: ends.append(done))
    wins = windows_of(res["tokens"], V) if res else None
    report(f"{dur:.0f} s: windows of at most 30 s, one per speaker-token run",
           len(ends) >= 3 and ends[0] <= 30 and ends[-1] == dur and wins
           and len(wins) == len(ends), f"{ends} {r}")
    out = os.path.join(tmp, "long-dump")
    p = subprocess.run([os.environ.get("HV_DUMP", "hviske-dump"), "-o", out] + base[:2] + base[3:]
                       + [wav], capture_output=True, timeout=600)
    try:
        with open(os.path.join(out, "result.json")) as f:
            j = json.load(f)
        b, w = j["bounds"], j["windows"]
    except (OSError, ValueError, KeyError):
        b, w = [], None
    sr = 16000
    report(f"{dur:.0f} s hviske-dump: windows, the cores of bounds widened into their "
           "neighbours, ending where Python's progress says each transcribed window ends",
           bool(w) and len(w) == len(b) - 1 == len(ends)
           and all(w[i][0] <= b[i] and w[i][1] >= b[i + 1] and w[i][1] - w[i][0] <= 30 * sr
                   for i in range(len(w)))
           and all(w[i][1] > b[i + 1] and w[i + 1][0] < b[i + 1] for i in range(len(w) - 1))
           and all(abs(w[i][1] / sr - ends[i]) < 1e-6 for i in range(len(w))),
           f"bounds {b} windows {w} progress {ends} "
           + p.stderr.decode("utf-8", "replace"))
    txt = Run(base + [wav])
    report(f"{dur:.0f} s txt: [SPEAKER_00] lines only",
           txt.rc == 0 and txt.lines() and all(ln.startswith("[SPEAKER_00] ")
                                               for ln in txt.lines()), str(txt))


def check_voice_param(turn, wav):
    """diarize_voice (docs/DIARIZE.md, rule 4) reaches the transcription
    from the CLI and Python: with one speaker linked by its turn's time
    any threshold gives the same labels; out of 0..1 it is refused
    naming the parameter."""
    import hviske
    base = ["-m", turn, "-q", "--diarize", "--repetition-penalty", "100", "--chunking", "energy",
            "--format", "json"]
    outs = [Run(base + ["--diarize-voice", v, wav]) for v in ("0", "1")]
    segs = [[(s["speaker"], s["text"]) for s in json.loads(r.out)["segments"]] if r.rc == 0 else None
            for r in outs]
    report("--diarize-voice 0 and 1: the same speakers and text",
           segs[0] and segs[0] == segs[1], f"{outs[0]} {outs[1]}")
    bad = Run(base + ["--diarize-voice", "1.5", wav])
    report("--diarize-voice 1.5: refused naming the option", bad.rc == 2 and "--diarize-voice" in bad.err,
           str(bad))
    try:
        hviske.Model(turn).transcribe(wav, diarize=True, diarize_voice=-0.5)
        raised = ""
    except hviske.InvalidArgument as x:
        raised = str(x)
    report("Python diarize_voice=-0.5: InvalidArgument naming it", "diarize_voice" in raised, raised)


def check_cli_format(model, wav, tmp):
    """--format openai-diarized-json in --help, and its usage errors: not
    with --stream (one document per input), not with json for one input
    (both .json), each naming what clashes."""
    h = Run(["--help"])
    report("--help names openai-diarized-json and that it turns --diarize on",
           "openai-diarized-json: OpenAI's diarized_json" in h.out
           and "(turns --diarize on)" in h.out, str(h))
    r = Run(["-m", model, "-q", "--stream", "--format", "openai-diarized-json", wav])
    report("--stream --format openai-diarized-json: a usage error, one document per input",
           r.rc == 2 and "one document per input" in r.err and not r.out, str(r))
    r = Run(["-m", model, "-q", "--format", "json,openai-diarized-json", "--output-dir",
             os.path.join(tmp, "both"), wav])
    report("--format json,openai-diarized-json: a usage error naming both formats",
           r.rc == 2 and "formats json and openai-diarized-json would both write" in r.err,
           str(r))


def check_server(model, wav, tmp):
    srv = Server(model, "-t", "1", "--workers", "1", tmp=tmp)
    if not srv.started("server with the turn model"):
        return
    try:
        m = request(srv.port, "GET", "/v1/models")
        report("server /v1/models: the diarize model says diarize true",
               m.status == 200 and m.json()["data"][0].get("diarize") is True, str(m))
        with open(wav, "rb") as f:
            audio = f.read()
        r = transcribe(srv.port, audio, fields=[("response_format", "diarized_json"),
                                                ("repetition_penalty", "100")])
        res = r.json() if r.status == 200 else None
        segs = res.get("segments") if res else None
        report("server diarized_json: OpenAI's segments, each speaker A",
               bool(segs) and res["task"] == "transcribe" and res["text"]
               and all(s["type"] == "transcript.text.segment" and s["speaker"] == "A"
                       and s["id"] == f"seg_{i}" and s["start"] <= s["end"] and s["text"]
                       for i, s in enumerate(segs)), str(r))
        cli = Run(["-m", model, "-q", "--repetition-penalty", "100",
                   "--format", "openai-diarized-json", wav])
        report("hviske --format openai-diarized-json (no --diarize): the server's diarized_json",
               cli.rc == 0 and res is not None and json.loads(cli.out) == res, str(cli))
        r = transcribe(srv.port, audio, fields=[("response_format", "verbose_json"),
                                                ("diarize", "true"),
                                                ("repetition_penalty", "100")])
        res = r.json() if r.status == 200 else None
        report("server verbose_json with diarize: each segment's speaker A",
               bool(res and res["segments"])
               and all(s.get("speaker") == "A" for s in res["segments"]), str(r))
        for style, want in (("label", "[SPEAKER_00] "), ("dash", None)):
            r = transcribe(srv.port, audio, fields=[("response_format", "srt"), ("diarize", "true"),
                                                    ("repetition_penalty", "100"),
                                                    ("srt_speakers", style)])
            texts = srt_texts(r.body.decode("utf-8", "replace")) if r.status == 200 else []
            report(f"server srt with diarize, srt_speakers {style}: cues as it says",
                   texts and all(t.startswith(want) if want else "SPEAKER" not in t
                                 for t in texts), str(r))
        r = transcribe(srv.port, audio, fields=[("response_format", "srt"),
                                                ("srt_speakers", "voice")])
        report("server srt_speakers voice: 400 naming the field",
               r.status == 400 and r.json()["error"].get("param") == "srt_speakers", str(r))
    finally:
        srv.stop()


def srt_texts(out):
    """The first text line of each SubRip cue (after its time line)."""
    lines = out.split("\n")
    return [lines[i + 1] for i, ln in enumerate(lines[:-1]) if " --> " in ln]


def check_srt(base, wav):
    srt = Run(base + ["--format", "srt", wav])
    texts = srt_texts(srt.out)
    report("srt: each cue's text opens with [SPEAKER_00]",
           srt.rc == 0 and texts and all(t.startswith("[SPEAKER_00] ") for t in texts), str(srt))
    dash = Run(base + ["--format", "srt", "--srt-speakers", "dash", wav])
    texts = srt_texts(dash.out)
    report("srt dash, one speaker: no label and no dash",
           dash.rc == 0 and texts and "SPEAKER" not in dash.out
           and not any(t.startswith("- ") for t in texts), str(dash))
    bad = Run(base + ["--format", "srt", "--srt-speakers", "voice", wav])
    report("--srt-speakers voice: refused, naming the option, nothing written",
           bad.rc != 0 and "--srt-speakers" in bad.err and "label or dash" in bad.err
           and not bad.out and not bad.crashed(), str(bad))


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()  # the Python cases load the sanitized library
    tmp = tempfile.mkdtemp(prefix="hv-diarize-")
    src, wav = ext.fixture_model()
    if not src:
        return finish_in(tmp)
    model, V = ext.extended(src, os.path.join(tmp, "ext"))

    plain = dump_prompt(model, wav, tmp, "plain")
    diar = dump_prompt(model, wav, tmp, "diar", "--diarize")
    report("--diarize: the prompt's last two ids replaced, the rest the same",
           plain and diar and len(plain) == len(diar) == 10 and plain[:8] == diar[:8]
           and all(plain[i] != diar[i] for i in (8, 9)) and len(set(diar[8:])) == 2,
           f"{plain} {diar}")

    r = Run(["-m", model, "-q", "--diarize", "--word-timestamps", "--format", "json", wav])
    res = json.loads(r.out) if r.rc == 0 else None
    ok = res is not None and res["chunks"] and res["text"]
    if ok:
        ok = not any("speaker" in c for c in res["chunks"] + res["segments"])
        ok = ok and " ".join(c["text"] for c in res["chunks"]) == res["text"]
        ok = ok and all(c["start"] - 1e-6 <= w["start"] <= w["end"] <= c["end"] + 1e-6
                        for c in res["chunks"] for w in c["words"])
    report("no speaker token emitted: one segment per chunk, no speaker, words inside",
           ok and not any(t >= V for t in res["tokens"]), str(r))
    txt = Run(["-m", model, "-q", "--diarize", wav])
    report("txt without speakers: the transcript, no [SPEAKER_..] label",
           txt.rc == 0 and res and txt.out.strip() == res["text"], str(txt))
    check_python(model, src, wav, res["chunks"] if res else [])
    turn, V1 = check_one_turn(src, wav, tmp)
    import hviske
    check_long(turn, V1, tmp)
    res = hviske.Model(turn).transcribe(wav, diarize=True, repetition_penalty=100.0)
    report("Python: the turn's chunks and segments have speaker 0",
           res.chunks and all(c.speaker == 0 for c in res.chunks + res.segments), str(res.chunks))
    report("Python: timings' diarize_ms, the speaker work, positive with diarize",
           res.timings.get("diarize_ms", 0) > 0, str(res.timings))
    check_voice_param(turn, wav)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.environ["HV_SOURCE_DIR"], "python"))
    p = subprocess.run([sys.executable, "-m", "hviske", "-m", turn, "--diarize",
                        "--repetition-penalty", "100", "--json", wav],
                       capture_output=True, text=True, env=env, timeout=600)
    segs = json.loads(p.stdout)["segments"] if p.returncode == 0 else []
    report("python -m hviske --diarize --json: \"speaker\": 0 in each segment",
           segs and all(s.get("speaker") == 0 for s in segs), p.stderr[-300:])
    for style, want in (("label", "[SPEAKER_00] "), ("dash", None)):
        p = subprocess.run([sys.executable, "-m", "hviske", "-m", turn, "--diarize",
                            "--repetition-penalty", "100", "--format", "srt",
                            "--srt-speakers", style, wav],
                           capture_output=True, text=True, env=env, timeout=600)
        texts = srt_texts(p.stdout) if p.returncode == 0 else []
        report(f"python -m hviske --diarize --format srt --srt-speakers {style}: cues as it says",
               texts and all(t.startswith(want) if want else "SPEAKER" not in t for t in texts),
               p.stderr[-300:])

    model, V = ext.extended(src, os.path.join(tmp, "emit"), first_bias=50.0)
    r = Run(["-m", model, "-q", "--diarize", "--format", "json", wav])
    res = json.loads(r.out) if r.rc == 0 else None
    report("speaker tokens only: kept in the tokens, no segment, no text",
           res is not None and res["tokens"] and all(t == V for t in res["tokens"])
           and res["chunks"] == [] and res["segments"] == [] and res["text"] == "", str(r))

    full = ext.ADDED
    cases = [("no added tokens", src, "<|spltoken0|>")]
    try:
        ext.ADDED = [t for t in full if t.startswith("<|spltoken")]
        no_time, _ = ext.extended(src, os.path.join(tmp, "no-time"))
    finally:
        ext.ADDED = full
    cases.append(("speaker tokens but no time tokens", no_time, "<|t:0.0|>"))
    for name, m, piece in cases:
        r = Run(["-m", m, "-q", "--diarize", wav])
        report(f"--diarize refused: {name}, naming {piece}",
               r.rc not in (0, None) and not r.crashed() and not r.out and piece in r.err
               and "diarize" in r.err, str(r))
        r = Run(["-m", m, "-q", "--format", "openai-diarized-json", wav])
        report(f"--format openai-diarized-json refused: {name}, naming {piece}",
               r.rc not in (0, None) and not r.crashed() and not r.out and piece in r.err, str(r))
        r = Run(["-m", m, "-q", wav])
        report(f"without --diarize: {name} transcribes", r.rc == 0 and r.out.strip(), str(r))
    check_cli_format(src, wav, tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
