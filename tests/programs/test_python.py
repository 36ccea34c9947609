"""The Python package (python/, ctypes over libhviske) against the CLI.

Loads the build's libhviske.so through $HVISKE_LIBRARY and checks, on the
demo model and examples/da-example.wav:

  * results equal the CLI's --json (text, tokens, token log-probs, score;
    segments, the sentence-sized cues, with times, texts, tokens and words;
    chunks with theirs) for greedy, beam search with 3 beams, sampling with
    a seed, no punctuation, --chunking energy and fixed, and a file whose
    one chunk holds four segments; the same
    audio given as a path, as the file's bytes and as float samples (list,
    array.array, numpy mono and frames x channels) gives the same result;
  * the speech detector is found by itself (the build tree's library:
    the source tree's models/silero-vad), and vad_model= and
    $HVISKE_VAD_MODEL choose another; a bad one is a clear error;
  * progress is called per chunk; returning False stops the transcription
    (Cancelled), and an exception it raises stops it and comes out;
  * on_segment gets the result's segments one by one, in order (several
    of one chunk too); returning False stops at the end of that segment's
    chunk with the chunks done and stopped=True; an exception it raises
    comes out;
  * bad arguments raise clear errors (InvalidArgument, also a ValueError,
    with the library's message where the library finds them; TypeError for
    a wrong type), a missing file or model names the path, a wrong
    $HVISKE_LIBRARY gives LibraryNotFound naming it;
  * two threads transcribing with one model give the same results;
  * (issue #43) close() racing transcribe() held in its progress and
    on_segment callbacks waits for it (no use-after-free under the
    sanitizers), close() from its own callback raises; every integer
    passed to C out of its C type's or the library's bounds (sample_rate
    2**32 + 8000, 10**12, negative, below 1000 Hz; beams, top_k,
    max_tokens, seed, threads, numpy channels) raises ValueError naming
    the argument and the bounds;
  * python -m hviske prints the CLI's lines, words and segments (its JSON
    is the library's, as the CLI's); word probabilities are the same
    numbers in the CLI's JSON, the Python API and python -m hviske --json
    (unrounded);
  * faster-whisper's shape: `segments, info = model.transcribe(...)`,
    Result.segments and model.segments() give the segments (start, end,
    text, words) of the CLI's --format json "segments" for the same file,
    exactly (with speech detection, energy chunking, fixed chunks and one
    chunk of four segments; word times rounded as the CLI rounds them),
    Result.chunks its "chunks", and info (language, duration,
    duration_after_vad) its language, duration and encoded_s
    (duration_after_vad below the duration for audio with a pause), and
    the Result API stays; model.segments() yields the segments lazily, and
    leaving its loop stops the transcription;
  * file objects (open "rb", io.BytesIO, one read from its middle) give
    the result of the path; a text-mode file is a TypeError and a file
    that is no audio a FormatError naming it;
  * beam_size= and vad_filter= give beams= and chunking= results, and
    contradicting them is an InvalidArgument;
  * this test's model of the CLI's JSON numbers (json_round: round(x *
    10^d) / 10^d, halves away from zero, as its C code rounds them), with
    which the API's floats are compared, checked against libm on ties and
    random float32 values;
  * 200 transcriptions keep the resident memory flat;
  * `pip install --no-index --target DIR ./python` (Debian's pip, offline,
    with build isolation: python/_hviske_build.py needs nothing) installs
    a package that works.

In a sanitizer build the script runs itself again with the sanitizer
runtimes preloaded (the library needs them; the interpreter is not built
with them), without leak detection (the interpreter's own allocations) and
without the memory case (the sanitizer's quarantine holds freed memory).

Environment: HV_SOURCE_DIR, HV_BINARY_DIR, HV_CLI.
"""
import array
import ctypes
import ctypes.util
import io
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (WAIT, Run, finish, reexec_with_sanitizers, report,  # noqa: E402
                    sanitized, wait_until)

SOURCE = os.path.abspath(os.environ["HV_SOURCE_DIR"])
BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
LIB = os.path.join(BINARY, "libhviske.so")
DEMO = os.path.join(SOURCE, "models", "demo")
WAV = os.path.join(SOURCE, "examples", "da-example.wav")
VAD = os.path.join(SOURCE, "models", "silero-vad")
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
THREADS = 2


os.environ["HVISKE_LIBRARY"] = LIB
os.environ.pop("HVISKE_VAD_MODEL", None)
sys.path.insert(0, os.path.join(SOURCE, "python"))


def cli_json(args, path=WAV):
    r = Run(["-m", DEMO, "-t", THREADS, "-q", "--json"] + args + [path])
    if r.rc != 0:
        raise RuntimeError(str(r))
    return json.loads(r.out)


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def find_from(seq, sub, start):
    """Where the list sub first occurs in seq at or after start; -1 if
    nowhere."""
    return next((i for i in range(start, len(seq) - len(sub) + 1)
                 if seq[i:i + len(sub)] == sub), -1)


def json_round(x, digits):
    """x as the CLI's JSON rounds it (src/output/json.c): round(x *
    10^digits) / 10^digits with C's round() (halves away from zero), 0 for
    a value that is not finite."""
    if not math.isfinite(x):
        return 0.0
    scale = 10.0 ** digits
    v = abs(x) * scale
    whole = math.floor(v)
    return math.copysign(whole + (1.0 if v - whole >= 0.5 else 0.0), x) / scale


def json_float(x):
    """x, a float the library computed, as the CLI's JSON writes it
    (hv_output_float): the shortest decimal of 6 to 9 significant digits
    that reads back as the same float; 0 for a value that is not finite."""
    if not math.isfinite(x):
        return 0.0
    f32 = struct.unpack("f", struct.pack("f", x))[0]
    text = ""
    for prec in range(6, 10):
        text = "%.*g" % (prec, x)
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    return float(text)


def json_words(ws):
    """Words as the CLI's JSON writes them: times rounded to the
    millisecond as its C code rounds them, the probability unrounded (the
    library's float in the shortest decimal that reads back as it)."""
    return [{"word": w.word, "start": json_round(w.start, 3), "end": json_round(w.end, 3),
             "probability": json_float(w.probability)} for w in ws]


def json_segments(segs, words):
    """Segments (or chunks) as the CLI's JSON writes them: start, end, text,
    tokens; words with `words`."""
    return [dict({"start": s.start, "end": s.end, "text": s.text, "tokens": s.tokens},
                 **({"words": json_words(s.words)} if words else {})) for s in segs]


def same_as_cli(res, ref):
    """Differences between a Result and the CLI's JSON object, as text:
    its segments are the CLI's "segments" (the cues), its chunks the CLI's
    "chunks", times and words exactly."""
    bad = []
    if res.text != ref["text"]:
        bad.append(f"text {res.text!r} != {ref['text']!r}")
    if res.tokens != ref["tokens"]:
        bad.append(f"tokens {res.tokens} != {ref['tokens']}")
    if len(res.token_logprobs) != len(ref["token_logprobs"]) or not all(
            close(a, b, 1e-6) for a, b in zip(res.token_logprobs, ref["token_logprobs"])):
        bad.append("token_logprobs differ")
    if not close(res.score, ref["score"], 1e-9):
        bad.append(f"score {res.score} != {ref['score']}")
    words = "words" in ref  # --word-timestamps
    segs, want = json_segments(res.segments, words), ref["segments"]
    if segs != want or not segs:
        bad.append(f"segments {segs} != {want}")
    ids = [(s.id, s.chunk) for s in res.segments]
    if [i for i, _ in ids] != list(range(len(ids))) or \
            [c for _, c in ids] != sorted(c for _, c in ids) or \
            {c for _, c in ids} != set(range(len(res.chunks))):
        bad.append(f"segment ids and chunks {ids}")
    at = {}  # chunk -> where its next segment's tokens are looked for
    for s in res.segments:
        c = res.chunks[s.chunk]
        i = find_from(c.tokens, s.tokens, at.get(s.chunk, 0))
        at[s.chunk] = i + len(s.tokens)
        if i < 0 or s.token_logprobs != c.token_logprobs[i:i + len(s.tokens)] or \
                s.score != sum(s.token_logprobs) or \
                not close(s.avg_logprob, s.score / max(1, len(s.tokens)), 1e-12):
            bad.append(f"segment {s.id}: its tokens, log-probs, score or avg_logprob are not "
                       "its chunk's")
    chunks, want = json_segments(res.chunks, words), ref["chunks"]
    if chunks != want or not chunks:
        bad.append(f"chunks {chunks} != {want}")
    if words:
        if json_words(res.words) != ref["words"] or not res.words:
            bad.append(f"words {json_words(res.words)} != {ref['words']}")
        if any(s.tokens != [t for w in s.words for t in w.tokens] for s in res.segments):
            bad.append("a segment's tokens are not its words' tokens")
        at = 0
        for w in res.words:  # its tokens: the result's, in order
            at = find_from(res.tokens, w.tokens, at)
            if at < 0 or not w.tokens:
                bad.append(f"the tokens of word {w} are not the result's")
                break
            at += len(w.tokens)
    elif res.words or any(s.words for s in res.segments) or any(c.words for c in res.chunks):
        bad.append("words without word_timestamps")
    return "; ".join(bad)


def wav_samples():
    """The example as floats (16-bit PCM / 32768, as libsndfile reads it)
    and its rate."""
    with wave.open(WAV) as w:
        assert w.getsampwidth() == 2 and w.getnchannels() == 1
        raw = w.readframes(w.getnframes())
        rate = w.getframerate()
    ints = array.array("h")
    ints.frombytes(raw)
    if sys.byteorder == "big":
        ints.byteswap()
    return array.array("f", (x / 32768.0 for x in ints)), rate


def expect_error(name, exc_types, fn, needle=""):
    try:
        fn()
    except exc_types as e:
        msg = str(e)
        report(f"{name}: {type(e).__name__}: {msg[:140]}", needle in msg and msg.strip() != "",
               f"message {msg!r} lacks {needle!r}")
        return
    except Exception as e:  # noqa: BLE001
        report(name, False, f"raised {type(e).__name__}: {e}, want {exc_types}")
        return
    report(name, False, "no error")


def test_parity(hviske, model):
    cases = [("greedy", {}, []),
             ("beam search, 3 beams", {"beams": 3}, ["--beams", "3"]),
             ("beams 3, length penalty 1.5", {"beams": 3, "length_penalty": 1.5},
              ["--beams", "3", "--length-penalty", "1.5"]),
             ("sampling, seed 7", {"sample": True, "seed": 7}, ["--sample", "--seed", "7"]),
             ("sampling, seed 11, T 0.7, top-k 20, top-p 0.9",
              {"sample": True, "seed": 11, "temperature": 0.7, "top_k": 20, "top_p": 0.9},
              ["--sample", "--seed", "11", "--temperature", "0.7", "--top-k", "20",
               "--top-p", "0.9"]),
             ("no punctuation, language da", {"punctuation": False, "language": "da"},
              ["--no-punctuation", "-l", "da"]),
             ("chunking energy", {"chunking": "energy"}, ["--chunking", "energy"]),
             ("chunking fixed 1.5 s", {"chunking": "fixed", "chunk_seconds": 1.5},
              ["--chunking", "fixed", "--chunk-seconds", "1.5"]),
             ("max tokens 5", {"max_tokens": 5}, ["--max-tokens", "5"]),
             ("word timestamps, greedy", {"word_timestamps": True}, ["--word-timestamps"]),
             ("word timestamps, 3 beams", {"word_timestamps": True, "beams": 3},
              ["--word-timestamps", "--beams", "3"]),
             ("word timestamps, sampling seed 7",
              {"word_timestamps": True, "sample": True, "seed": 7},
              ["--word-timestamps", "--sample", "--seed", "7"]),
             ("word timestamps, fixed 1 s chunks",
              {"word_timestamps": True, "chunking": "fixed", "chunk_seconds": 1.0},
              ["--word-timestamps", "--chunking", "fixed", "--chunk-seconds", "1"])]
    for name, kw, args in cases:
        ref = cli_json(args)
        res = model.transcribe(WAV, **kw)
        diff = same_as_cli(res, ref)
        report(f"equals the CLI's --json: {name}", not diff, diff)
    tmp = tempfile.mkdtemp(prefix="test-python-four-", dir=BINARY)
    try:
        four = four_wav(tmp)
        for name, kw, args in (("", {}, []),
                               (", word timestamps", {"word_timestamps": True},
                                ["--word-timestamps"])):
            ref = cli_json(args, four)
            res = model.transcribe(four, **kw)
            diff = same_as_cli(res, ref)
            report(f"equals the CLI's --json: one chunk of four segments{name} "
                   f"({len(res.chunks)} chunk, {len(res.segments)} segments)",
                   not diff and len(res.chunks) == 1 and len(res.segments) == 4, diff)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res = model.transcribe(WAV)
    t = res.timings
    report("Result: language, duration, timings (align_ms > 0: the segments are made of "
           "timed words)",
           res.language == "da" and abs(res.duration - 48403 / 16000) < 1e-6 and
           set(t) == {"frontend_ms", "encoder_ms", "decoder_ms", "prefill_ms", "steps_ms",
                      "n_steps", "n_tokens", "vad_ms", "encoded_s", "align_ms",
                      "encoder_gflop", "diarize_ms"} and
           t["align_ms"] > 0 and t["encoder_gflop"] > 0 and t["diarize_ms"] == 0 and
           t["n_tokens"] == len(res.tokens) and t["vad_ms"] > 0 and res.text == SENTENCE,
           f"{res} {t}")


def test_inputs(hviske, model):
    ref = model.transcribe(WAV)
    samples, rate = wav_samples()
    with open(WAV, "rb") as f:
        data = f.read()
    variants = [("bytes of the file", lambda: model.transcribe(data)),
                ("bytearray", lambda: model.transcribe(bytearray(data))),
                ("array.array('f') samples", lambda: model.transcribe(samples, sample_rate=rate)),
                ("list of samples", lambda: model.transcribe(list(samples), sample_rate=rate)),
                ("pathlib path", lambda: model.transcribe(__import__("pathlib").Path(WAV)))]
    try:
        import numpy as np
        a = np.array(samples, dtype=np.float32)
        variants += [("numpy float32", lambda: model.transcribe(a, sample_rate=rate)),
                     ("numpy float64", lambda: model.transcribe(a.astype(np.float64),
                                                                sample_rate=rate)),
                     ("numpy frames x 2 channels (the same in both)",
                      lambda: model.transcribe(np.stack([a, a], axis=1), sample_rate=rate))]
    except ImportError:
        print("skip  numpy input: numpy is not installed")
    for name, fn in variants:
        res = fn()
        ok = (res.text == ref.text and res.tokens == ref.tokens and
              [(s.start, s.end) for s in res.segments] == [(s.start, s.end)
                                                           for s in ref.segments])
        report(f"audio as {name}: the same result as the path", ok, f"{res} != {ref}")


def test_detector(hviske, model):
    report("the detector is found by itself: the source tree's models/silero-vad for a "
           "library in a build folder", getattr(model, "vad_model", None) == VAD,
           getattr(model, "vad_model", None))
    m2 = hviske.Model(DEMO, threads=THREADS, vad_model=VAD)
    r = m2.transcribe(WAV)
    report("vad_model= names the detector", r.text == SENTENCE and m2.vad_model == VAD, r)
    m2.close()
    os.environ["HVISKE_VAD_MODEL"] = "/nonexistent/vad"
    try:
        m3 = hviske.Model(DEMO, threads=THREADS)
        expect_error("$HVISKE_VAD_MODEL naming no detector", hviske.FileError,
                     lambda: m3.transcribe(WAV), "/nonexistent/vad")
        r = m3.transcribe(WAV, chunking="energy")
        report("chunking=\"energy\" needs no detector", r.text == SENTENCE, r)
        m3.close()
    finally:
        del os.environ["HVISKE_VAD_MODEL"]


def test_progress(hviske, model):
    calls = []
    r = model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0,
                         progress=lambda d, t: calls.append((d, t)))
    report(f"progress is called after each chunk ({len(calls)} calls)",
           len(calls) >= 3 and calls[-1][0] == calls[-1][1] == r.duration and
           all(a[0] <= b[0] for a, b in zip(calls, calls[1:])), calls)

    def boom(d, t):
        raise KeyError("from progress")
    expect_error("an exception in progress comes out after the transcription", KeyError,
                 lambda: model.transcribe(WAV, progress=boom), "from progress")

    # returning False stops it before the next chunk: Cancelled, at once
    seen = []

    def stop_after_two(d, t):
        seen.append(d)
        return len(seen) < 2
    expect_error("progress returning False stops the transcription: Cancelled",
                 hviske.Cancelled, lambda: model.transcribe(
                     WAV, chunking="fixed", chunk_seconds=1.0, progress=stop_after_two),
                 "cancelled")
    report(f"stopped after the second chunk ({len(seen)} calls of {len(calls)})",
           len(seen) == 2 and len(calls) > 2, seen)
    seen.clear()

    def boom_first(d, t):
        seen.append(d)
        raise KeyError("stop now")
    expect_error("an exception in progress stops the transcription", KeyError,
                 lambda: model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0,
                                          progress=boom_first), "stop now")
    report("... after the first chunk", len(seen) == 1, seen)
    r2 = model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0, progress=lambda d, t: None)
    report("the model transcribes again after a stop", r2.text == r.text, r2.text)


def test_on_segment(hviske, model):
    # three segments: fixed chunks of 1 s of the example, words timed
    got = []
    r = model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0, word_timestamps=True,
                         on_segment=got.append)
    report(f"on_segment gets every segment of the result, in order ({len(got)})",
           len(got) >= 2 and got == r.segments and not r.stopped, [s.text for s in got])
    tmp = tempfile.mkdtemp(prefix="test-python-four-", dir=BINARY)
    try:
        four = four_wav(tmp)
        got = []
        r4 = model.transcribe(four, word_timestamps=True, on_segment=got.append)
        report(f"on_segment gets the segments of one chunk one by one ({len(got)} of "
               f"{len(r4.chunks)} chunk)", len(got) == 4 and len(r4.chunks) == 1 and
               got == r4.segments and not r4.stopped, [s.text for s in got])
        first = []
        r1 = model.transcribe(four, on_segment=lambda s: (first.append(s), False)[1])
        report("on_segment returning False at the first segment of a chunk: no more are "
               "given; the result holds the chunk, all its segments, stopped=True",
               len(first) == 1 and r1.stopped and len(r1.chunks) == 1 and
               len(r1.segments) == 4 and first == r1.segments[:1], (len(first), r1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    first = []
    r1 = model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0,
                          on_segment=lambda s: (first.append(s), False)[1])
    report("on_segment returning False stops after it: the segments done, stopped=True",
           len(first) == 1 and r1.stopped and len(r1.segments) == 1 and
           r1.text == first[0].text == r.segments[0].text, (len(first), r1))

    def boom(s):
        raise KeyError("from on_segment")
    expect_error("an exception in on_segment comes out", KeyError,
                 lambda: model.transcribe(WAV, on_segment=boom), "from on_segment")
    expect_error("on_segment not callable", TypeError,
                 lambda: model.transcribe(WAV, on_segment=3), "on_segment")


def test_errors(hviske, model):
    IA = hviske.InvalidArgument
    report("InvalidArgument is a hviske.Error and a ValueError",
           issubclass(IA, hviske.Error) and issubclass(IA, ValueError))
    cases = [("beams=0", IA, lambda: model.transcribe(WAV, beams=0), "beams"),
             ("beams=65 (the library's limit)", IA, lambda: model.transcribe(WAV, beams=65),
              "64"),
             ("sample=True with beams=2", IA,
              lambda: model.transcribe(WAV, sample=True, beams=2), ""),
             ("temperature=-0.5 when sampling", IA,
              lambda: model.transcribe(WAV, sample=True, temperature=-0.5), "temperature"),
             ("top_p=0", IA, lambda: model.transcribe(WAV, sample=True, top_p=0.0), "top_p"),
             ("length_penalty=0", IA,
              lambda: model.transcribe(WAV, beams=2, length_penalty=0.0), "length"),
             ("language the model lacks", hviske.Error,
              lambda: model.transcribe(WAV, language="xx"), "xx"),
             ("chunking=\"bogus\"", IA, lambda: model.transcribe(WAV, chunking="bogus"),
              "chunking"),
             ("chunking=\"fixed\" without chunk_seconds", IA,
              lambda: model.transcribe(WAV, chunking="fixed"), "chunk_seconds"),
             ("seed=-1", IA, lambda: model.transcribe(WAV, seed=-1), "seed"),
             ("top_k=-1", IA, lambda: model.transcribe(WAV, top_k=-1), "top_k"),
             ("beams=\"3\"", TypeError, lambda: model.transcribe(WAV, beams="3"), "beams"),
             ("audio=42", TypeError, lambda: model.transcribe(42), "audio"),
             ("word_timestamps=1", TypeError, lambda: model.transcribe(WAV, word_timestamps=1),
              "word_timestamps"),
             ("samples without sample_rate", IA, lambda: model.transcribe([0.0] * 16000),
              "sample_rate"),
             ("a path with sample_rate", IA, lambda: model.transcribe(WAV, sample_rate=16000),
              "sample_rate"),
             ("array.array of ints", TypeError,
              lambda: model.transcribe(array.array("h", [0] * 100), sample_rate=16000), "float"),
             ("a missing file", hviske.FileError, lambda: model.transcribe("/nonexistent.wav"),
              "/nonexistent.wav"),
             ("bytes that are no audio file", hviske.FormatError,
              lambda: model.transcribe(b"this is not audio" * 100), ""),
             ("progress not callable", TypeError,
              lambda: model.transcribe(WAV, progress=3), "progress"),
             ("Model of a missing directory", hviske.FileError,
              lambda: hviske.Model("/nonexistent/model"), "/nonexistent/model"),
             ("weight_type=\"f8\"", IA, lambda: hviske.Model(DEMO, weight_type="f8"),
              "weight_type"),
             ("compute=\"f16\"", IA, lambda: hviske.Model(DEMO, compute="f16"), "compute"),
             ("threads=0", IA, lambda: hviske.Model(DEMO, threads=0), "threads")]
    for name, exc, fn, needle in cases:
        expect_error(name, exc, fn, needle)
    # bf16 compute (emulated where the CPU has no native bf16) on the
    # demo model's clip: the same sentence
    with hviske.Model(DEMO, threads=1, compute="bf16") as mb:
        r = mb.transcribe(WAV)
        report("compute=\"bf16\" transcribes the clip", r.text == SENTENCE, r.text)
    m = hviske.Model(DEMO, threads=1, weight_type="q8_0")
    m.close()
    expect_error("a closed model", hviske.Error, lambda: m.transcribe(WAV), "closed")
    r = model.transcribe(WAV)
    report("the model works after the errors", r.text == SENTENCE, r)


def test_int_bounds(hviske, model):
    """Issue #43, finding 3: every integer handed to C is checked against
    the C type and the library's bounds: ValueError naming the argument
    and the bounds, never a value cut to 32 bits (2**32 + 8000 Hz ran as
    8000 Hz)."""
    samples = [0.0] * 16000
    cases = [("sample_rate=2**32 + 8000", lambda: model.transcribe(samples,
                                                                  sample_rate=2**32 + 8000),
              ("sample_rate", "1000", "768000")),
             ("sample_rate=10**12", lambda: model.transcribe(samples, sample_rate=10**12),
              ("sample_rate", "768000")),
             ("sample_rate=-8000", lambda: model.transcribe(samples, sample_rate=-8000),
              ("sample_rate", "1000")),
             ("sample_rate=999 (below the floor)",
              lambda: model.transcribe(samples, sample_rate=999), ("sample_rate", "1000")),
             ("sample_rate=768001", lambda: model.transcribe(samples, sample_rate=768001),
              ("sample_rate", "768000")),
             ("beams=2**32 + 1", lambda: model.transcribe(WAV, beams=2**32 + 1),
              ("beams", "1", "64")),
             ("top_k=2**31", lambda: model.transcribe(WAV, sample=True, top_k=2**31),
              ("top_k", str(2**31 - 1))),
             ("max_tokens=2**32 + 5", lambda: model.transcribe(WAV, max_tokens=2**32 + 5),
              ("max_tokens", str(2**31 - 1))),
             ("max_tokens=0", lambda: model.transcribe(WAV, max_tokens=0), ("max_tokens", "1")),
             ("seed=2**64", lambda: model.transcribe(WAV, sample=True, seed=2**64),
              ("seed", str(2**64 - 1))),
             ("threads=2**32 + 2", lambda: hviske.Model(DEMO, threads=2**32 + 2),
              ("threads", "256")),
             ("threads=-1", lambda: hviske.Model(DEMO, threads=-1), ("threads", "1"))]
    try:
        import numpy as np
        cases.append(("numpy frames x 65 channels",
                      lambda: model.transcribe(np.zeros((100, 65), np.float32),
                                               sample_rate=16000), ("channels", "64")))
    except ImportError:
        print("skip  numpy channel bound: numpy is missing")
    for name, fn, needles in cases:
        try:
            fn()
        except ValueError as e:
            msg = str(e)
            report(f"{name}: ValueError naming the argument and the bounds: {msg[:100]}",
                   all(n in msg for n in needles), f"message {msg!r} lacks one of {needles}")
            continue
        except Exception as e:  # noqa: BLE001
            report(name, False, f"raised {type(e).__name__}: {e}, want ValueError")
            continue
        report(name, False, "no error")


def test_close_race(hviske):
    """Issue #43, finding 2: close() while another thread is inside
    transcribe() (held in its progress or on_segment callback, so the
    transcription is known to be running: no sleeps) waits for it; the
    transcription finishes with its text, transcriptions begun meanwhile
    raise at once, and close() from a callback of its own transcription
    raises instead of waiting for itself. Under the sanitizers this is
    the use-after-free check."""
    samples, rate = wav_samples()
    audio = samples + array.array("f", [0.0] * rate) + samples
    kw = {"sample_rate": rate, "chunking": "fixed", "chunk_seconds": 3.0}
    with hviske.Model(DEMO, threads=THREADS) as ref:
        want = ref.transcribe(audio, **kw)
    for cb_name, how in (("progress", "close()"), ("on_segment", "the with block's end")):
        m = hviske.Model(DEMO, threads=THREADS)
        inside, go = threading.Event(), threading.Event()

        def cb(*_args):
            if not inside.is_set():
                inside.set()
                go.wait(WAIT)
        out, closed = {}, {}

        def work():
            try:
                out["r"] = m.transcribe(audio, **kw, **{cb_name: cb})
            except Exception as e:  # noqa: BLE001
                out["e"] = e

        def closer():
            try:
                if how == "close()":
                    m.close()
                else:
                    m.__exit__(None, None, None)
                closed["ok"] = True
            except Exception as e:  # noqa: BLE001
                closed["e"] = e
        t = threading.Thread(target=work)
        t.start()
        running = inside.wait(WAIT)
        c = threading.Thread(target=closer)
        c.start()
        # close() has begun (it marks the model as closing) or returned
        wait_until(lambda: getattr(m, "_closing", False) or not c.is_alive())
        waits = running and c.is_alive() and not closed
        try:
            m.transcribe(WAV)
            late = "no error"
        except hviske.Error as e:
            late = str(e)
        go.set()
        t.join(WAIT)
        c.join(WAIT)
        r = out.get("r")
        report(f"{how} while transcribe() is in its {cb_name} callback: it waits",
               waits, f"running={running} closed={closed}")
        report(f"... a transcription begun meanwhile raises at once: {late}", "closed" in late,
               late)
        report("... the running one finishes with its text, then the model is freed",
               r is not None and r.text == want.text and closed.get("ok")
               and m._model is None, f"{out} {closed}")
    m = hviske.Model(DEMO, threads=THREADS)
    errors = []

    def close_inside(_seg):
        try:
            m.close()
        except hviske.Error as e:
            errors.append(e)
    r = m.transcribe(WAV, on_segment=close_inside)
    report("close() from a callback of its own transcription raises at once (no deadlock), "
           "and the transcription completes",
           len(errors) == 1 and "callback" in str(errors[0]) and r.text == SENTENCE,
           f"{errors} {r.text!r}")
    m.close()
    report("... and close() after it frees the model", m._model is None)


def run_child(code, env):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    return p


def test_library_lookup():
    base = {k: v for k, v in os.environ.items() if k not in ("HVISKE_LIBRARY",)}
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import hviske\n"
            "try:\n"
            "    hviske.Model(%r)\n"
            "except hviske.LibraryNotFound as e:\n"
            "    print('LibraryNotFound:', e)\n" % (os.path.join(SOURCE, "python"), DEMO))
    for name, value, needle in (("a missing file", "/nonexistent/libhviske.so",
                                 "/nonexistent/libhviske.so"),
                                ("a library that is not libhviske", "libm.so.6", "not libhviske")):
        p = run_child(code, dict(base, HVISKE_LIBRARY=value))
        out = p.stdout.strip()
        report(f"$HVISKE_LIBRARY naming {name}: {out[:150]}",
               p.returncode == 0 and out.startswith("LibraryNotFound:") and needle in out and
               "HVISKE_LIBRARY" in out, f"{p.stdout!r} {p.stderr[-500:]!r}")
    import ctypes.util
    if ctypes.util.find_library("hviske"):
        print("skip  no library at all: a libhviske is installed on this machine")
    else:
        env = {k: v for k, v in base.items() if k != "LD_LIBRARY_PATH"}
        p = run_child(code, env)
        out = p.stdout.strip()
        report(f"no library installed and no $HVISKE_LIBRARY: {out[:150]}",
               out.startswith("LibraryNotFound:") and "HVISKE_LIBRARY" in out,
               f"{p.stdout!r} {p.stderr[-500:]!r}")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "import hviske\n"
            "m = hviske.Model(%r, library=%r, threads=2)\n"
            "print(m.library_path); print(m.transcribe(%r).text)\n"
            % (os.path.join(SOURCE, "python"), DEMO, LIB, WAV))
    p = run_child(code, dict(base, HVISKE_LIBRARY="/nonexistent/libhviske.so"))
    lines = p.stdout.strip().split("\n")
    report("the library= argument comes before $HVISKE_LIBRARY",
           p.returncode == 0 and lines[-1] == SENTENCE and
           lines[0] == os.path.realpath(LIB), f"{p.stdout!r} {p.stderr[-500:]!r}")


def hviske_model():
    import hviske
    return hviske.Model(DEMO, threads=THREADS)


def test_module_cli():
    """python -m hviske: the CLI's text, words and segments; errors as the
    CLI's."""
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "python"))

    def mod(args):
        return subprocess.run([sys.executable, "-m", "hviske", "-m", DEMO, "-t", str(THREADS)] + args,
                              capture_output=True, text=True, env=env, timeout=300)
    p = mod([WAV, WAV])
    ref = Run(["-m", DEMO, "-t", str(THREADS), "-q", WAV])
    report("python -m hviske FILE FILE: the CLI's lines", p.returncode == 0 and
           p.stdout == ref.out * 2, f"{p.stdout!r} != {ref.out!r} {p.stderr[-300:]!r}")
    p = mod(["--json", "--word-timestamps", "--beams", "2", WAV])
    want = cli_json(["--word-timestamps", "--beams", "2"])
    try:
        o = json.loads(p.stdout)
        ok = o["text"] == want["text"] and o["words"] == want["words"] and o["segments"] == [
            {k: s[k] for k in ("start", "end", "text", "tokens", "words")}
            for s in want["segments"]]
    except (ValueError, KeyError) as e:
        ok, o = False, str(e)
    report("python -m hviske --json --word-timestamps --beams 2: the CLI's text, words and "
           "segments", ok, f"{o} {p.stderr[-300:]!r}")
    # word probabilities: the same numbers in the CLI's JSON, the Python
    # API and python -m hviske --json (none rounded); a sampled transcript's
    # length depends on the kernels the CPU picks, so it needs fewer words
    tmp = tempfile.mkdtemp(prefix="test-python-probs-", dir=BINARY)
    try:
        import struct
        four = four_wav(tmp)
        for name, kw, args in (("greedy", {}, []),
                               ("sampling, seed 3", {"sample": True, "seed": 3},
                                ["--sample", "--seed", "3"])):
            cli = [w["probability"]
                   for w in cli_json(["--word-timestamps"] + args, four)["words"]]
            p = mod(["--json", "--word-timestamps"] + args + [four])
            try:
                modp = [w["probability"] for w in json.loads(p.stdout)["words"]]
            except (ValueError, KeyError) as e:
                modp = [repr(e)]
            with hviske_model() as m:
                api = [w.probability for w in m.transcribe(four, word_timestamps=True,
                                                           **kw).words]

            def f32(x):
                return struct.unpack("f", struct.pack("f", x))[0]
            report(f"word probabilities, {name}: the CLI's JSON, the Python API and python -m "
                   f"hviske --json equal ({len(api)} words; the API's float, the JSON's "
                   "shortest decimal of it)",
                   len(api) >= (30 if name == "greedy" else 10) and modp == cli and [f32(x) for x in cli] == api and
                   all(f32(x) == x for x in api) and
                   any(abs(x * 1e4 - round(x * 1e4)) > 1e-6 for x in cli),
                   f"{cli} {modp} {api}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    missing = os.path.join(SOURCE, "no-such-file.wav")
    p = mod([missing, WAV])
    report("python -m hviske: a missing file is named, the others go on, exit 1",
           p.returncode == 1 and missing in p.stderr and p.stdout == SENTENCE + "\n",
           f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    # names that are not UTF-8 (issue #43): as the CLI writes them
    import base64
    tmp = tempfile.mkdtemp()
    try:
        names = [os.path.join(os.fsencode(tmp), n) for n in (b"a\xff.wav", b"a\xfe.wav")]
        for n in names:
            shutil.copyfile(WAV, n)
        p = subprocess.run([os.fsencode(sys.executable), b"-m", b"hviske", b"-m",
                            os.fsencode(DEMO), b"--json"] + names, capture_output=True,
                           env=env, timeout=300)
        try:
            objs = [json.loads(x) for x in p.stdout.decode("utf-8").splitlines()]
            ok = [(o["file"], base64.b64decode(o["file_bytes"])) for o in objs] == [
                (n.decode("utf-8", "backslashreplace"), n) for n in names]
        except (ValueError, KeyError) as e:
            ok, objs = False, repr(e)
        report("python -m hviske --json: names that are not UTF-8 kept apart (\\xHH, "
               "file_bytes)", p.returncode == 0 and ok, f"{objs} {p.stderr[-300:]!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    p = mod(["--beams", "0", WAV])
    report("python -m hviske --beams 0: exit 2 naming beams", p.returncode == 2 and
           "beams" in p.stderr and p.stdout == "", f"{p.returncode} {p.stderr!r}")


def four_wav(tmp):
    """The example four times over, without pauses: a WAV file that the
    demo model takes as one chunk of four segments (one per sentence)."""
    path = os.path.join(tmp, "four.wav")
    with wave.open(WAV) as w:
        params, raw = w.getparams(), w.readframes(w.getnframes())
    with wave.open(path, "wb") as w:
        w.setparams(params)
        w.writeframes(raw * 4)
    return path


def pause_wav(tmp):
    """The example, 4 s of silence, the example again: a WAV file."""
    path = os.path.join(tmp, "pause.wav")
    with wave.open(WAV) as w:
        params, raw = w.getparams(), w.readframes(w.getnframes())
    with wave.open(path, "wb") as w:
        w.setparams(params)
        w.writeframes(raw + b"\0" * (params.sampwidth * params.framerate * 4) + raw)
    return path


def test_faster_whisper_shape(hviske, model):
    def shape(segs):  # what faster-whisper users read, as the CLI's JSON has it
        return [{"start": s.start, "end": s.end, "text": s.text,
                 "words": json_words(s.words)} for s in segs]

    def cli_shape(segs):
        return [{k: s[k] for k in ("start", "end", "text", "words")} for s in segs]
    tmp = tempfile.mkdtemp(prefix="test-python-fw-", dir=BINARY)
    try:
        paused = pause_wav(tmp)
        for name, path, kw, args in (
                ("speech detection", WAV, {}, []),
                ("a pause, speech detection", paused, {}, []),
                ("a pause, energy chunking", paused, {"chunking": "energy"},
                 ["--chunking", "energy"]),
                ("fixed 1 s chunks", WAV, {"chunking": "fixed", "chunk_seconds": 1.0},
                 ["--chunking", "fixed", "--chunk-seconds", "1"]),
                ("one chunk of four sentences", four_wav(tmp), {}, [])):
            r = Run(["-m", DEMO, "-t", THREADS, "-q", "--format", "json", "--word-timestamps"]
                    + args + [path])
            ref = json.loads(r.out) if r.rc == 0 else None
            segments, info = model.transcribe(path, word_timestamps=True, **kw)
            got = shape(segments)
            want = cli_shape(ref["segments"]) if ref else None
            report(f"segments, info = transcribe(...), {name}: the CLI's segments "
                   f"({len(got)} of {len(ref['chunks']) if ref else '?'} chunks): text, "
                   "start, end and words exactly",
                   got == want and len(got) >= 1 and all(s["words"] for s in got),
                   f"{got} != {want} {r}")
            res = model.transcribe(path, word_timestamps=True, **kw)
            lazy = list(model.segments(path, word_timestamps=True, **kw))
            report("... Result.segments and model.segments() the same",
                   want is not None and shape(res.segments) == want and shape(lazy) == want,
                   f"{shape(res.segments)} {shape(lazy)} != {want}")
            report("... Result.chunks: the CLI's chunks",
                   ref is not None and cli_shape(ref["chunks"]) == shape(res.chunks) and
                   [c.tokens for c in res.chunks] == [c["tokens"] for c in ref["chunks"]],
                   f"{shape(res.chunks)} != {ref and ref['chunks']}")
            report(f"... info: the CLI's language, duration and encoded_s "
                   f"({info.duration_after_vad:.3f} of {info.duration:.3f} s)",
                   ref is not None and isinstance(info, hviske.TranscriptionInfo) and
                   info.language == ref["language"] and info.duration == ref["duration"] and
                   json_round(info.duration_after_vad * 1e3, 3) / 1e3 ==
                   ref["timings"]["encoded_s"],
                   f"{info} {ref and ref['timings']}")
        _, vad = model.transcribe(paused)
        _, energy = model.transcribe(paused, chunking="energy")
        report("duration_after_vad: the speech only with speech detection, all of it without",
               vad.duration_after_vad < vad.duration - 3.0 and
               energy.duration_after_vad == energy.duration, f"{vad} {energy}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res = model.transcribe(WAV)
    it, info = res
    segs = list(it)
    report("a Result unpacks as an iterator over its segments and info, and keeps its API",
           iter(it) is it and segs == res.segments and info == res.info and
           res.text == SENTENCE and list(it) == [] and segs[0].text == SENTENCE and
           info.language == res.language and info.duration == res.duration,
           f"{segs} {info}")


def test_segments_generator(hviske, model):
    full = []
    r = model.transcribe(WAV, chunking="fixed", chunk_seconds=1.0,
                         progress=lambda d, t: full.append(d))
    got = list(model.segments(WAV, chunking="fixed", chunk_seconds=1.0))
    report(f"model.segments(...) yields the result's segments ({len(got)})",
           len(got) >= 3 and got == r.segments, f"{got} != {r.segments}")
    calls, first = [], []
    gen = model.segments(WAV, chunking="fixed", chunk_seconds=1.0,
                         progress=lambda d, t: calls.append(d))
    report("... nothing runs before the first segment is asked for", calls == [], calls)
    for seg in gen:
        first.append(seg)
        break
    gen.close()
    report(f"... leaving the loop after the first stops the transcription ({len(calls)} of "
           f"{len(full)} chunks)", first == r.segments[:1] and 1 <= len(calls) <= 2 < len(full),
           f"{first} {calls} {full}")
    expect_error("... an error of the transcription comes out of the loop", hviske.FileError,
                 lambda: list(model.segments("/nonexistent.wav")), "/nonexistent.wav")
    expect_error("... on_segment is refused", TypeError,
                 lambda: list(model.segments(WAV, on_segment=print)), "on_segment")
    r2 = model.transcribe(WAV)
    report("the model transcribes after a generator left early", r2.text == SENTENCE, r2)


def test_file_objects(hviske, model):
    ref = model.transcribe(WAV)
    with open(WAV, "rb") as f:
        data = f.read()

    def same(r):
        return r.text == ref.text and r.tokens == ref.tokens and \
            [(s.start, s.end) for s in r.segments] == [(s.start, s.end) for s in ref.segments]
    with open(WAV, "rb") as f:
        r = model.transcribe(f)
        rest = f.read()
    report("a file opened \"rb\": the path's result, and it is read to its end",
           same(r) and rest == b"", r)
    report("io.BytesIO of the file: the path's result", same(model.transcribe(io.BytesIO(data))))
    b = io.BytesIO(b"junk" + data)
    b.read(4)
    report("a file object read from where it is", same(model.transcribe(b)))
    with open(WAV, "rb") as f:
        a = model.transcribe(f, beam_size=2, word_timestamps=True)
    b = model.transcribe(WAV, beams=2, word_timestamps=True)
    report("a file object with beam_size=2 and word times: the path's with beams=2",
           (a.text, a.tokens, a.segments, a.words) == (b.text, b.tokens, b.segments, b.words),
           f"{a} != {b}")
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
        expect_error("a file opened in text mode", TypeError, lambda: model.transcribe(f), "rb")
    with open(os.path.join(SOURCE, "README.md"), "rb") as f:
        expect_error("a file object that is no audio: FormatError naming it", hviske.FormatError,
                     lambda: model.transcribe(f), "README.md")
    expect_error("a file object with sample_rate", hviske.InvalidArgument,
                 lambda: model.transcribe(io.BytesIO(data), sample_rate=16000), "sample_rate")


def test_aliases(hviske, model):
    def key(r):
        return (r.text, r.tokens, [(s.start, s.end) for s in r.segments])
    for name, a, b in (("beam_size=3 is beams=3", {"beam_size": 3}, {"beams": 3}),
                       ("beam_size=3 with beams=3", {"beam_size": 3, "beams": 3}, {"beams": 3}),
                       ("vad_filter=True is chunking=\"vad\"", {"vad_filter": True},
                        {"chunking": "vad"}),
                       ("vad_filter=False is chunking=\"energy\"", {"vad_filter": False},
                        {"chunking": "energy"}),
                       ("vad_filter=False with chunking=\"fixed\"",
                        {"vad_filter": False, "chunking": "fixed", "chunk_seconds": 1.0},
                        {"chunking": "fixed", "chunk_seconds": 1.0})):
        report(name, key(model.transcribe(WAV, **a)) == key(model.transcribe(WAV, **b)))
    r_energy = model.transcribe(WAV, vad_filter=False, chunking="fixed", chunk_seconds=1.0)
    report("... (fixed 1 s chunks differ from the default)",
           len(r_energy.segments) > len(model.transcribe(WAV).segments))
    IA = hviske.InvalidArgument
    for name, exc, kw, needle in (
            ("beams=2 with beam_size=3", IA, {"beams": 2, "beam_size": 3}, "beam_size"),
            ("beam_size=0", IA, {"beam_size": 0}, "beam"),
            ("vad_filter=True with chunking=\"energy\"", IA,
             {"vad_filter": True, "chunking": "energy"}, "vad_filter"),
            ("vad_filter=False with chunking=\"vad\"", IA,
             {"vad_filter": False, "chunking": "vad"}, "vad_filter"),
            ("vad_filter=1", TypeError, {"vad_filter": 1}, "vad_filter")):
        expect_error(name, exc, lambda: model.transcribe(WAV, **kw), needle)


def test_json_rounding():
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.round.restype, libm.round.argtypes = ctypes.c_double, [ctypes.c_double]
    rng = random.Random(5)
    f32 = array.array("f", [k / 2 ** 5 for k in range(33)] + [k / 2 ** 12 for k in range(0, 4097, 7)]
                      + [rng.random() for _ in range(20000)])
    values = list(f32) + [rng.uniform(0, 4000) for _ in range(20000)] + [2.6855, 0.0005, 1.5e-4]
    bad = [(x, d, json_round(x, d), libm.round(x * 10.0 ** d) / 10.0 ** d)
           for x in values for d in (3, 4)
           if json_round(x, d) != libm.round(x * 10.0 ** d) / 10.0 ** d]
    report(f"json_round rounds as the CLI's C code does, round(x * 10^d) / 10^d "
           f"({len(values)} values, ties among them; Python's round gives "
           f"{round(1 / 32, 4)} for 1/32, C {libm.round(1 / 32 * 1e4) / 1e4})",
           not bad and json_round(float("nan"), 4) == 0.0, bad[:5])


def test_threads(hviske, model):
    want = {k: model.transcribe(WAV, **kw).tokens for k, kw in
            (("greedy", {}), ("beams", {"beams": 3}), ("sample", {"sample": True, "seed": 3}))}
    got, errors = {}, []

    def work(k, kw):
        try:
            for _ in range(3):
                got.setdefault(k, []).append(model.transcribe(WAV, **kw).tokens)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k, kw)) for k, kw in
          (("greedy", {}), ("beams", {"beams": 3}), ("sample", {"sample": True, "seed": 3}))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    report("three threads transcribing with one model get the results of one thread",
           not errors and all(got.get(k) == [want[k]] * 3 for k in want), f"{errors} {got}")


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_memory(hviske, model):
    samples, rate = wav_samples()
    with open(WAV, "rb") as f:
        data = f.read()
    inputs = [lambda: model.transcribe(WAV), lambda: model.transcribe(data, beams=2),
              lambda: model.transcribe(samples, sample_rate=rate, sample=True, seed=1)]
    for i in range(30):
        inputs[i % 3]()
    before = rss_kb()
    for i in range(200):
        inputs[i % 3]()
    after = rss_kb()
    report(f"200 transcriptions keep RSS flat ({before} kB -> {after} kB)",
           after - before < 4096, f"grew {after - before} kB")


def test_pip():
    tmp = tempfile.mkdtemp(prefix="test-python-", dir=BINARY)
    try:
        src = os.path.join(tmp, "python")
        shutil.copytree(os.path.join(SOURCE, "python"), src,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        target = os.path.join(tmp, "target")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                   PIP_ROOT_USER_ACTION="ignore")
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                            "--target", target, src], capture_output=True,
                           text=True, env=env, cwd=tmp, timeout=600)
        if p.returncode != 0:
            report("pip install --no-index --target DIR ./python", False,
                   f"{p.stdout[-800:]!r} {p.stderr[-800:]!r}")
            return
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import hviske\n"
                "print(hviske.__file__); print(hviske.Model(%r, threads=2).transcribe(%r).text)\n"
                % (target, DEMO, WAV))
        p = run_child(code, env)
        lines = p.stdout.strip().split("\n")
        report("pip install --no-index --target DIR ./python (PEP 668's way): the "
               "installed package transcribes the example",
               p.returncode == 0 and lines[0].startswith(target) and lines[-1] == SENTENCE,
               f"{p.stdout!r} {p.stderr[-800:]!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    import hviske
    model = hviske.Model(DEMO, threads=THREADS)
    test_parity(hviske, model)
    test_inputs(hviske, model)
    test_detector(hviske, model)
    test_progress(hviske, model)
    test_on_segment(hviske, model)
    test_errors(hviske, model)
    test_int_bounds(hviske, model)
    test_close_race(hviske)
    test_library_lookup()
    test_module_cli()
    test_faster_whisper_shape(hviske, model)
    test_segments_generator(hviske, model)
    test_file_objects(hviske, model)
    test_aliases(hviske, model)
    test_json_rounding()
    test_threads(hviske, model)
    if sanitized():
        print("skip  RSS over 200 transcriptions: the sanitizer's quarantine holds freed "
              "memory")
    else:
        test_memory(hviske, model)
    test_pip()
    model.close()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
