"""hviske.WhisperModel, faster-whisper's WhisperModel over hviske (issue #53,
python/README.md "Coming from faster-whisper"), on the demo model:

  * faster-whisper's README examples, written here as its README has them
    but for the import and the model path (the audio, audio.mp3, is the
    example made an MP3 with sox), each run in a child Python: the CUDA
    lines as written are a ValueError naming the CPU, and then the CPU line
    the README offers (the batched and distil-whisper examples, which have
    none, with device="cpu"); every line they print is checked against
    hviske.Model's own segments and words for the options they map to;
    distil-whisper's language="en" is a ValueError naming the model's "da";
  * every field of Segment (id from 1, seek, start, end, text with its
    leading space, tokens, avg_logprob, compression_ratio as Python's zlib
    computes it, no_speech_prob, words that join to the text, temperature)
    and of TranscriptionInfo;
  * each compute_type's weights, device and cpu_threads, num_workers (a
    second transcription waits for the first while one worker runs it),
    the temperature fallback and temperature=0, without_timestamps (one
    segment per chunk), vad_filter and vad_parameters, no_speech_threshold's
    silence, samples (numpy, array.array) and file objects, the generator's
    laziness, log_progress, and FileError as an OSError;
  * every refusal (translate, a prefix, hotwords the vocabulary cannot
    encode, language detection, a GPU,
    a model name, CTranslate2's options, knobs hviske lacks) a ValueError
    saying what the model cannot do; faster-whisper's defaults accepted.

Environment: HV_SOURCE_DIR, HV_BINARY_DIR, HV_FIXTURES.
"""
import array
import io
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
import wave
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL as DEMO, EXAMPLE as WAV, FIXTURES, finish,  # noqa: E402
                    reexec_with_sanitizers, report, sanitized, sentences_wav, skip_or_fail,
                    wait_until)

SOURCE = os.path.abspath(os.environ["HV_SOURCE_DIR"])
BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
os.environ["HVISKE_LIBRARY"] = os.path.join(BINARY, "libhviske.so")
os.environ.pop("HVISKE_VAD_MODEL", None)
os.environ["PYTHONPATH"] = os.path.join(SOURCE, "python")  # the child Pythons too
sys.path.insert(0, os.path.join(SOURCE, "python"))
TEMPERATURES = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]

# faster-whisper's README (SYSTRAN/faster-whisper, "Usage"), its examples
# as written there but for the import and the model path
README_USAGE = '''\
from hviske import WhisperModel

model_size = MODEL

# Run on GPU with FP16
model = WhisperModel(model_size, device="cuda", compute_type="float16")

# or run on GPU with INT8
# model = WhisperModel(model_size, device="cuda", compute_type="int8_float16")
# or run on CPU with INT8
# model = WhisperModel(model_size, device="cpu", compute_type="int8")

segments, info = model.transcribe("audio.mp3", beam_size=5)

print("Detected language '%s' with probability %f" % (info.language, info.language_probability))

for segment in segments:
    print("[%.2fs -> %.2fs] %s" % (segment.start, segment.end, segment.text))
'''
README_LIST = '''\
segments, _ = model.transcribe("audio.mp3")
segments = list(segments)  # The transcription will actually run here.
'''
README_BATCHED = '''\
from hviske import WhisperModel, BatchedInferencePipeline

model = WhisperModel(MODEL, device="cuda", compute_type="float16")
batched_model = BatchedInferencePipeline(model=model)
segments, info = batched_model.transcribe("audio.mp3", batch_size=16)

for segment in segments:
    print("[%.2fs -> %.2fs] %s" % (segment.start, segment.end, segment.text))
'''
README_DISTIL = '''\
from hviske import WhisperModel

model_size = MODEL

model = WhisperModel(model_size, device="cuda", compute_type="float16")
segments, info = model.transcribe("audio.mp3", beam_size=5, language="en", condition_on_previous_text=False)

for segment in segments:
    print("[%.2fs -> %.2fs] %s" % (segment.start, segment.end, segment.text))
'''
README_WORDS = '''\
segments, _ = model.transcribe("audio.mp3", word_timestamps=True)

for segment in segments:
    for word in segment.words:
        print("[%.2fs -> %.2fs] %s" % (word.start, word.end, word.word))
'''
README_VAD = '''\
segments, _ = model.transcribe("audio.mp3", vad_filter=True)
'''
README_VAD_PARAMETERS = '''\
segments, _ = model.transcribe(
    "audio.mp3",
    vad_filter=True,
    vad_parameters=dict(min_silence_duration_ms=500),
)
'''
README_LOGGING = '''\
import logging

logging.basicConfig()
logging.getLogger("faster_whisper").setLevel(logging.DEBUG)
'''
# the test's own lines after an example: what it left, for the checks
DUMP = '''
print("#SEGMENTS", [(s.start, s.end, s.text) for s in segments])
'''


def cpu(example):
    """The example with the README's CPU line in place of its CUDA one."""
    return example.replace('model = WhisperModel(model_size, device="cuda", '
                           'compute_type="float16")\n',
                           '# (the README\'s CUDA line)\n').replace(
        '# model = WhisperModel(model_size, device="cpu", compute_type="int8")',
        'model = WhisperModel(model_size, device="cpu", compute_type="int8")')


def run_example(code, tmp):
    code = code.replace("MODEL", repr(DEMO))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp, timeout=600)


def lines(segs):
    return ["[%.2fs -> %.2fs] %s" % (s.start, s.end, " " + s.text) for s in segs]


def test_readme(hviske, tmp):
    audio = os.path.join(tmp, "audio.mp3")
    p = subprocess.run(["sox", WAV, audio], capture_output=True, text=True)
    if p.returncode != 0 or not os.path.isfile(audio):
        skip_or_fail("faster-whisper's README examples", f"sox cannot write MP3: {p.stderr}")
        return
    q8 = hviske.Model(DEMO, threads=2, weight_type="q8_0")
    # faster-whisper's defaults: its temperatures, best_of 5
    common = dict(temperature=TEMPERATURES, best_of=5, speech_probabilities=True)
    usage = q8.transcribe(audio, beams=5, chunking="energy", **common)

    p = run_example(README_USAGE, tmp)
    report("README usage as written: device=\"cuda\" is a ValueError saying hviske runs on "
           "the CPU", p.returncode == 1 and "ValueError" in p.stderr and "CPU" in p.stderr and
           "device='cuda'" in p.stderr, p.stderr[-500:])
    p = run_example(cpu(README_USAGE), tmp)
    want = ["Detected language 'da' with probability 1.000000"] + lines(usage.segments)
    report("README usage, its CPU int8 line: the language, its probability 1, and each "
           "segment's start, end and text (beam_size=5, faster-whisper's temperatures) as "
           "hviske.Model's", p.returncode == 0 and p.stdout.splitlines() == want and
           len(want) > 1, f"{p.stdout!r} want {want!r} {p.stderr[-500:]}")

    p = run_example(cpu(README_USAGE) + README_LIST + DUMP, tmp)
    default = q8.transcribe(audio, beams=5, chunking="energy", **common)
    report("README's list(segments): the segments, after the usage example",
           p.returncode == 0 and p.stdout.splitlines()[-1] == "#SEGMENTS " + repr(
               [(s.start, s.end, " " + s.text) for s in default.segments]), p.stdout[-600:])

    words = q8.transcribe(audio, beams=5, chunking="energy", word_timestamps=True, **common)
    p = run_example(cpu(README_USAGE) + README_WORDS, tmp)
    want_words = ["[%.2fs -> %.2fs] %s" % (w.start, w.end, " " + w.word) for w in words.words]
    out = p.stdout.splitlines()
    report(f"README word-level timestamps: each word's start, end and word with its space "
           f"({len(want_words)} words), as hviske.Model's",
           p.returncode == 0 and out[len(want) :] == want_words and want_words,
           f"{out!r} want {want_words!r} {p.stderr[-500:]}")

    fw_vad = {"threshold": 0.5, "neg_threshold": -1.0, "min_speech_ms": 0,
              "min_silence_ms": 2000, "speech_pad_ms": 400, "max_speech_s": 0.0}
    for name, example, vad in (("vad_filter=True", README_VAD, fw_vad),
                               ("vad_parameters=dict(min_silence_duration_ms=500)",
                                README_VAD_PARAMETERS, dict(fw_vad, min_silence_ms=500))):
        r = q8.transcribe(audio, beams=5, chunking="vad", vad_options=vad, **common)
        p = run_example(cpu(README_USAGE) + example + DUMP, tmp)
        report(f"README VAD filter, {name}: faster-whisper's VadOptions as the detector's "
               "settings, hviske.Model's segments", p.returncode == 0 and
               p.stdout.splitlines()[-1] == "#SEGMENTS " + repr(
                   [(s.start, s.end, " " + s.text) for s in r.segments]), p.stdout[-600:])

    p = run_example(README_BATCHED, tmp)
    report("README batched as written: device=\"cuda\" a ValueError",
           p.returncode == 1 and "ValueError" in p.stderr and "CPU" in p.stderr, p.stderr[-500:])
    batched = hviske.Model(DEMO, threads=2, weight_type="f16").transcribe(
        audio, beams=5, chunking="vad", temperature=[0.0], best_of=5, speech_probabilities=True,
        vad_options=dict(fw_vad, min_silence_ms=160, max_speech_s=30.0))
    chunks = {}
    for s in batched.segments:
        chunks.setdefault(s.chunk, []).append(s)
    want = ["[%.2fs -> %.2fs] %s" % (g[0].start, g[-1].end, "".join(" " + s.text for s in g))
            for g in chunks.values()]
    p = run_example(README_BATCHED.replace('device="cuda"', 'device="cpu"'), tmp)
    report("README batched with device=\"cpu\": a segment per chunk (without_timestamps), "
           "its start, end and text", p.returncode == 0 and p.stdout.splitlines() == want and
           want, f"{p.stdout!r} want {want!r} {p.stderr[-500:]}")

    p = run_example(README_DISTIL, tmp)
    report("README distil-whisper as written: device=\"cuda\" a ValueError",
           p.returncode == 1 and "ValueError" in p.stderr and "CPU" in p.stderr, p.stderr[-300:])
    p = run_example(README_DISTIL.replace('device="cuda"', 'device="cpu"'), tmp)
    report("... with device=\"cpu\": language=\"en\" a ValueError naming the model's da",
           p.returncode == 1 and "ValueError" in p.stderr and "'en'" in p.stderr and
           "da" in p.stderr.splitlines()[-1], p.stderr[-300:])
    p = run_example(README_LOGGING + cpu(README_USAGE), tmp)
    report("README logging, then usage: runs", p.returncode == 0 and
           p.stdout.startswith("Detected language 'da'"), p.stderr[-300:])


def test_fields(hviske, w):
    from hviske import whisper
    segments, info = w.transcribe(WAV, word_timestamps=True)
    segs = list(segments)
    ref = w.model.transcribe(WAV, beams=5, chunking="energy", temperature=TEMPERATURES,
                             best_of=5, word_timestamps=True, speech_probabilities=True)
    ok = len(segs) == len(ref.segments) > 0
    for i, (s, r) in enumerate(zip(segs, ref.segments)):
        chunk = ref.chunks[r.chunk]
        b = chunk.text.encode("utf-8")
        ok = ok and isinstance(s, whisper.Segment) and s.id == i + 1 and \
            s.seek == math.floor(r.start * 100) and (s.start, s.end) == (r.start, r.end) and \
            s.text == " " + r.text and s.tokens == r.tokens and \
            s.avg_logprob == chunk.decoding.avg_logprob and \
            s.compression_ratio == len(b) / len(zlib.compress(b)) and \
            0 <= s.no_speech_prob <= 1 and s.no_speech_prob == chunk.decoding.no_speech_prob and \
            s.temperature == chunk.decoding.temperature == 0.0 and \
            "".join(x.word for x in s.words) == s.text and \
            [(x.start, x.end, x.probability) for x in s.words] == \
            [(x.start, x.end, x.probability) for x in r.words]
    report("Segment: id from 1, seek (10 ms frames), start, end, text with its space, tokens, "
           "avg_logprob (summed with EOS over tokens + 1), compression_ratio (Python's zlib), "
           "no_speech_prob, temperature, words joining to the text", ok, f"{segs} {ref}")
    chunk = ref.chunks[0]
    report("... avg_logprob is faster-whisper's: the beam's summed log-probs (EOS's too) over "
           "its tokens + 1, so its score with length penalty 1; not the tokens' mean",
           chunk.decoding.avg_logprob == chunk.score == segs[0].avg_logprob and
           chunk.decoding.avg_logprob != ref.segments[0].avg_logprob,
           f"{chunk.decoding} {chunk.score}")
    o = info.transcription_options
    report("TranscriptionInfo: da, probability 1, duration, duration_after_vad (no VAD: the "
           "duration), no language probs, the options, no vad_options",
           isinstance(info, whisper.TranscriptionInfo) and info.language == "da" and
           info.language_probability == 1.0 and abs(info.duration - ref.duration) < 1e-9 and
           info.duration_after_vad == info.duration and info.all_language_probs is None and
           o.beam_size == 5 and o.best_of == 5 and o.temperatures == TEMPERATURES and
           o.word_timestamps is True and info.vad_options is None, repr(info))
    _, info = w.transcribe(WAV, vad_filter=True, vad_parameters=whisper.VadOptions(
        min_silence_duration_ms=500))
    report("... with vad_filter: its VadOptions, the speech's seconds as duration_after_vad",
           info.vad_options == whisper.VadOptions(min_silence_duration_ms=500) and
           0 < info.duration_after_vad <= info.duration, repr(info))
    s = segs[0]
    report("Segment and Word: faster-whisper's dataclasses (asdict; _asdict deprecated)",
           set(vars(s)) == {"id", "seek", "start", "end", "text", "tokens", "avg_logprob",
                            "compression_ratio", "no_speech_prob", "words", "temperature"} and
           set(vars(s.words[0])) == {"start", "end", "word", "probability"}, vars(s))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = s._asdict()
    report("... _asdict warns DeprecationWarning, as faster-whisper's",
           d["id"] == 1 and any(c.category is DeprecationWarning for c in caught), caught)
    segments, _ = w.transcribe(WAV)
    report("words are None without word_timestamps", next(segments).words is None)


def test_model_options(hviske):
    ws = {}
    for ct, wt in (("int8", "q8_0"), ("float16", "f16"), ("bfloat16", "bf16"),
                   ("float32", "f32"), ("default", "auto"), ("auto", "auto"),
                   ("int8_float32", "q8_0")):
        w = hviske.WhisperModel(DEMO, device="cpu", compute_type=ct, cpu_threads=2)
        ws[ct] = w.model.weight_bytes == hviske.Model(DEMO, weight_type=wt).weight_bytes
    report("compute_type: int8 is q8_0 weights, float16 f16, bfloat16 bf16, float32 f32, "
           "default and auto the checkpoint's own", all(ws.values()), ws)
    w = hviske.WhisperModel(DEMO, device="auto", cpu_threads=3)
    env = dict(os.environ, OMP_NUM_THREADS="5")
    p = subprocess.run([sys.executable, "-c", "import hviske; print(hviske.WhisperModel(%r)"
                        ".model.threads)" % DEMO], capture_output=True, text=True, env=env)
    env.pop("OMP_NUM_THREADS")
    q = subprocess.run([sys.executable, "-c", "import hviske; print(hviske.WhisperModel(%r)"
                        ".model.threads)" % DEMO], capture_output=True, text=True, env=env)
    report("cpu_threads: threads per transcription; 0 is $OMP_NUM_THREADS, else 4",
           w.model.threads == 3 and p.stdout.strip() == "5" and q.stdout.strip() == "4",
           f"{w.model.threads} {p.stdout!r} {q.stdout!r} {p.stderr[-300:]}")
    report("supported_languages: the checkpoint's", w.supported_languages == ["da"])


def refused(fn, *words):
    try:
        fn()
    except ValueError as e:
        return all(x in str(e) for x in words), str(e)
    except Exception as e:  # noqa: BLE001 - the wrong kind is a failure
        return False, repr(e)
    return False, "no error"


def test_prompt_notice(w):
    """initial_prompt: accepted with a warning, the text as without it (the
    program's --prompt and the server's prompt follow the same rule)."""
    import warnings
    plain = " ".join(s.text.strip() for s in w.transcribe(WAV)[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        segs, _ = w.transcribe(WAV, initial_prompt="Hviske, Aarhus")
        text = " ".join(s.text.strip() for s in segs)
    said = [str(c.message) for c in caught if "initial_prompt" in str(c.message)]
    report("initial_prompt: accepted with one warning, the same text",
           text == plain and len(said) == 1 and "no text prompt" in said[0], f"{said} {text!r}")


def test_refusals(hviske, w):
    W = hviske.WhisperModel
    cases = [
        ("device=\"cuda\"", lambda: W(DEMO, device="cuda"), ["CPU"]),
        ("device_index=1", lambda: W(DEMO, device_index=1), ["CPU"]),
        ("compute_type=\"int16\"", lambda: W(DEMO, compute_type="int16"), ["int16"]),
        ("a model name (large-v3)", lambda: W("large-v3"), ["large-v3", "downloads"]),
        ("download_root", lambda: W(DEMO, download_root="/tmp"), ["downloads"]),
        ("task=\"translate\"", lambda: w.transcribe(WAV, task="translate"), ["translate"]),
        ("prefix", lambda: w.transcribe(WAV, prefix="x"), ["prompt"]),
        ("multilingual=True", lambda: w.transcribe(WAV, multilingual=True),
         ["language detection"]),
        ("language_detection_threshold", lambda: w.transcribe(
            WAV, language_detection_threshold=0.9), ["language detection"]),
        ("detect_language()", lambda: w.detect_language(WAV), ["language detection", "da"]),
        ("language=\"en\"", lambda: w.transcribe(WAV, language="en"), ["'en'", "da"]),
        ("patience=2", lambda: w.transcribe(WAV, patience=2), ["patience"]),
        ("hotwords a vocabulary cannot encode",
         lambda: list(w.transcribe(WAV, hotwords="\u65e5")[0]),
         ["cannot be encoded"]),
        ("clip_timestamps", lambda: w.transcribe(WAV, clip_timestamps=[0.0, 1.0]), ["whole"]),
        ("hallucination_silence_threshold", lambda: w.transcribe(
            WAV, hallucination_silence_threshold=2.0), ["heuristic"]),
        ("suppress_tokens=[5]", lambda: w.transcribe(WAV, suppress_tokens=[5]), ["suppress"]),
        ("max_initial_timestamp=0.5", lambda: w.transcribe(WAV, max_initial_timestamp=0.5),
         ["timestamp tokens"]),
        ("append_punctuations", lambda: w.transcribe(WAV, append_punctuations="."),
         ["punctuation"]),
        ("chunk_length with vad_filter", lambda: w.transcribe(WAV, chunk_length=10,
                                                              vad_filter=True), ["pauses"]),
        ("a file name with a NUL byte", lambda: w.transcribe(WAV + "\0x"),
         ["embedded null byte"]),
    ]
    for name, fn, words in cases:
        ok, msg = refused(fn, *words)
        report(f"refused: {name}, a ValueError saying so ({msg[:90]})", ok, msg)
    try:
        W(DEMO, flash_attention=True)
        ok = False
    except TypeError as e:
        ok = "flash_attention" in str(e)
    report("CTranslate2's own options: a TypeError naming them", ok)
    try:
        w.transcribe(WAV, vad_filter=True, vad_parameters={"window_size_samples": 512})
        ok = False
    except TypeError:
        ok = True
    report("vad_parameters with a key VadOptions lacks: a TypeError, as faster-whisper's", ok)
    base = [s.text for s in w.transcribe(WAV)[0]]
    same = all([s.text for s in w.transcribe(WAV, **kw)[0]] == base
               for kw in ({"condition_on_previous_text": False}, {"suppress_blank": False},
                          {"prompt_reset_on_temperature": 0.2}, {"suppress_tokens": None}))
    report("faster-whisper's accepted knobs with no effect here (condition_on_previous_text, "
           "suppress_blank, prompt_reset_on_temperature, suppress_tokens None): the same text",
           same and base, base)
    fx = os.path.join(FIXTURES, "models", "multi-f32")
    if os.path.isdir(fx):
        m = hviske.WhisperModel(fx)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, info = m.transcribe(WAV, beam_size=1)
        report("language=None on a model of several languages: a warning that there is no "
               "detection, its default language", info.language == "da" and
               any("language detection" in str(c.message) for c in caught), caught)


def test_decoding(hviske, w):
    m = w.model
    g = m.transcribe(WAV, chunking="energy")
    t0 = [s.tokens for s in w.transcribe(WAV, beam_size=1, temperature=0)[0]]
    report("temperature=0, beam_size=1: greedy", t0 == [s.tokens for s in g.segments], t0)
    fb = m.transcribe(WAV, beams=5, chunking="energy", temperature=[1.6, 1.0], best_of=5,
                      speech_probabilities=True)
    segs = list(w.transcribe(WAV, temperature=[1.6, 1.0])[0])
    report("the temperature fallback (1.6, 1.0): hviske.Model's text, each segment's "
           "temperature its chunk's", [s.text for s in segs] == [" " + s.text for s in
                                                                  fb.segments] and
           [s.temperature for s in segs] == [s.decoding.temperature for s in fb.segments] and
           segs and segs[0].temperature in (1.6, 1.0) and
           abs(segs[0].temperature - fb.chunks[0].decoding.temperature) < 1e-6, segs)
    extra = dict(repetition_penalty=1.2, no_repeat_ngram_size=3, hotwords="Aarhus,Mette")
    gx = m.transcribe(WAV, chunking="energy", **extra)
    tx = [s.tokens for s in w.transcribe(WAV, beam_size=1, temperature=0, **extra)[0]]
    report("repetition_penalty, no_repeat_ngram_size and hotwords: hviske.Model's tokens",
           tx == [s.tokens for s in gx.segments] and tx, tx)
    silent = list(w.transcribe(WAV, no_speech_threshold=0.0, log_prob_threshold=0.0)[0])
    report("no_speech_threshold 0 with log_prob_threshold 0: every chunk silence, no segment",
           silent == [], silent)
    tmp = tempfile.mkdtemp(prefix="hv-whisper-", dir=BINARY)
    try:
        long = sentences_wav(os.path.join(tmp, "long.wav"), 7, 6)
        ref = m.transcribe(long, beams=5, chunking="energy", temperature=TEMPERATURES,
                           best_of=5, speech_probabilities=True)
        whole = list(w.transcribe(long, without_timestamps=True)[0])
        report(f"without_timestamps=True: a segment per chunk ({len(ref.chunks)} chunks, "
               f"{len(ref.segments)} segments)", len(whole) == len(ref.chunks) > 1 and
               len(ref.segments) > len(ref.chunks) and
               "".join(s.text for s in whole) == "".join(" " + s.text for s in ref.segments),
               whole)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_inputs(hviske, w):
    want = [s.text for s in w.transcribe(WAV)[0]]
    with wave.open(WAV, "rb") as f:
        raw = f.readframes(f.getnframes())
    ints = array.array("h", raw)
    floats = array.array("f", (x / 32768.0 for x in ints))
    got = {"array.array (16 kHz)": [s.text for s in w.transcribe(floats)[0]]}
    try:
        import numpy as np
        got["numpy float32 (16 kHz)"] = [s.text for s in w.transcribe(
            np.frombuffer(raw, dtype=np.int16).astype(np.float32) / 32768.0)[0]]
    except ImportError:
        print("skip  numpy samples: no numpy")
    with open(WAV, "rb") as f:
        got["a file object"] = [s.text for s in w.transcribe(f)[0]]
    got["io.BytesIO"] = [s.text for s in w.transcribe(io.BytesIO(open(WAV, "rb").read()))[0]]
    report("samples (16 kHz, no sample_rate=), file objects: the path's segments",
           all(v == want for v in got.values()) and want, got)
    try:
        w.transcribe("/nonexistent/a.wav")
        ok = False
    except OSError as e:
        ok = isinstance(e, hviske.FileError) and "/nonexistent/a.wav" in str(e)
    report("a missing file: hviske.FileError, an OSError, raised by transcribe()", ok)


def test_laziness_and_workers(hviske):
    w = hviske.WhisperModel(DEMO, cpu_threads=1, num_workers=1)
    segments, _ = w.transcribe(WAV)
    report("transcribe() returns before transcribing (nothing runs until a segment is asked "
           "for)", not w.model._users)
    first = next(segments)
    report("... the first segment comes from the generator", first.id == 1 and first.text)
    out = []
    b = threading.Thread(target=lambda: out.append([s.text for s in w.transcribe(WAV)[0]]))
    b.start()
    waiting = wait_until(lambda: len(w._workers._cond._waiters) == 1)
    report("num_workers=1: a second thread's transcription waits while the first generator "
           "is open", waiting and not out and b.is_alive())
    segments.close()
    b.join()
    report("... and runs once it is closed", out == [[first.text]], out)
    w2 = hviske.WhisperModel(DEMO, cpu_threads=1, num_workers=2)
    s1, _ = w2.transcribe(WAV)
    next(s1)
    s2 = [s.text for s in w2.transcribe(WAV)[0]]
    s1.close()
    report("num_workers=2: a second transcription runs while the first is open",
           s2 == [first.text], s2)
    p = subprocess.run([sys.executable, "-c",
                        "import hviske\nw = hviske.WhisperModel(%r)\n"
                        "s, _ = w.transcribe(%r, log_progress=True)\nprint(len(list(s)))\n"
                        % (DEMO, WAV)], capture_output=True, text=True)
    report("log_progress=True: progress lines on standard error",
           p.returncode == 0 and "hviske: " in p.stderr and "(100%)" in p.stderr, p.stderr)


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    import hviske
    w = hviske.WhisperModel(DEMO, device="cpu", cpu_threads=2)
    tmp = tempfile.mkdtemp(prefix="hv-whisper-readme-", dir=BINARY)
    try:
        test_readme(hviske, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    test_fields(hviske, w)
    test_model_options(hviske)
    test_refusals(hviske, w)
    test_prompt_notice(w)
    test_decoding(hviske, w)
    test_inputs(hviske, w)
    test_laziness_and_workers(hviske)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
