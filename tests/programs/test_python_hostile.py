#!/usr/bin/env python3
"""The Python package under misuse and hostile input (issue #51, findings
2-4), on the build's libhviske and the demo model:

  * close() while a started model.segments() generator is still
    referenced (the issue's `with` block, and close() from another thread
    while the loop waits for a segment that the transcription holds back
    in its progress callback): close() returns, the generator raises Error
    ("closed") at once instead of waiting, and the model is freed. Each
    runs in a child process with a deadline: close() used to wait forever
    for the worker, which waited for the loop;
  * files are read as the CLI reads them: straight to mono at the model's
    rate within the library's memory budget. A 300 s, 96 kHz, 8-channel
    silent FLAC (a few hundred KB) as a path and as bytes raises the peak
    RSS of a child process by at most its 16 kHz mono samples plus 64 MiB
    (the whole interleaved file was decoded first: about 1.1 GB); a 10 h
    FLAC at 1 kHz, past the budget (2 GiB of samples at 16 kHz), is a
    LimitError naming the file, as the CLI's message, before it is
    decoded; an 8-channel 48 kHz copy of the example gives the CLI's
    --json result exactly;
  * a string or path holding a NUL byte (the audio path, language,
    Model's path, vad_model, weight_type, compute, chunking) raises
    ValueError ("embedded null byte", naming the argument) as open()
    does, where C would have read it cut at the NUL.

Issue #62: a segments() generator closed while its worker is about to
decode the next chunk (a six-temperature fallback) stops it at the first
decoder step (the abort callback sees the generator's stop flag; the
whole chunk ran before: 28 steps here). Finding 5: samples are judged
against the budget before the binding copies them: a broadcast float32 view of 10^9 samples at 16 kHz
(4 GB as a copy) and a broadcast float64 view of 6 * 10^8 frames at
768 kHz (12.5 M samples at 16 kHz, inside the budget, but a 2.4 GB
float32 copy) raise LimitError naming the limit with the peak RSS of the
child grown by at most 64 MiB (the copy was made first: 4 GB, then
LimitError); 60 s at 768 kHz as float64 (a 184 MB copy) is transcribed.

Memory is not compared in a sanitizer build (ASan's quarantine holds freed
memory). Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish_in,  # noqa: E402
                    reexec_with_sanitizers, report, sanitized, sentences_wav)

BINARY = os.path.abspath(os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE_DIR, "build")))
os.environ["HVISKE_LIBRARY"] = os.path.join(BINARY, "libhviske.so")
os.environ.pop("HVISKE_VAD_MODEL", None)
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
DEADLINE = 600  # seconds a child may take: it hangs, or is done in a few

CHILD_HEAD = f"""
import os, sys, threading
sys.path.insert(0, {os.path.join(SOURCE_DIR, "python")!r})
import hviske
DEMO = {DEMO_MODEL!r}
def peak():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
"""


def child(code, *args):
    """Runs CHILD_HEAD + code in a fresh interpreter with args; (exit
    status or "timeout", stdout, stderr)."""
    try:
        p = subprocess.run([sys.executable, "-c", CHILD_HEAD + code] + [str(a) for a in args],
                           capture_output=True, text=True, timeout=DEADLINE)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", out, ""


CLOSE_IN_WITH = """
with hviske.Model(DEMO, threads=1) as m:
    g = m.segments(sys.argv[1], chunking="energy")
    first = next(g)
print("closed", m._model is None, first.text != "")
try:
    next(g)
    print("next: no error")
except hviske.Error as e:
    print("next:", e)
"""

CLOSE_FROM_THREAD = """
m = hviske.Model(DEMO, threads=1)
held, go = threading.Event(), threading.Event()
def hold(done, total):  # after the first chunk: the transcription waits here
    if not held.is_set():
        held.set()
        go.wait()
g = m.segments(sys.argv[1], chunking="energy", progress=hold)
first_chunk = int(sys.argv[2])
for _ in range(first_chunk):
    next(g)
held.wait()
out = {}
def consumer():  # asks for the next chunk's first segment: it waits
    try:
        next(g)
        out["next"] = "no error"
    except hviske.Error as e:
        out["next"] = str(e)
c = threading.Thread(target=consumer)
c.start()
closer = threading.Thread(target=m.close)
closer.start()
c.join()  # the consumer is answered while the transcription is still held
print("consumer:", out["next"], "| close() still waiting:", closer.is_alive())
go.set()
closer.join()
print("closed", m._model is None)
"""

# Issue #62: a generator closed while the next chunk is about to be decoded
# (with the temperature fallback, which the demo model's text fails at
# every temperature: 6 decodings). The progress callback after chunk 1
# holds the worker until the main thread is inside close()'s join, so the
# stop flag is set before chunk 2 starts; then every abort callback's
# answer is counted: a 0 is a decoder step run after the close.
CLOSE_MID_CHUNK = """
main = threading.main_thread().ident
def in_join():
    f = sys._current_frames().get(main)
    while f is not None:
        if f.f_code.co_name in ("join", "_wait_for_tstate_lock"):
            return True
        f = f.f_back
    return False
count = {"released": False, "steps": 0, "stops": 0}
plain = hviske.ABORT
def counting(fn):
    def wrapped(user):
        r = fn(user)
        if count["released"]:
            count["steps" if r == 0 else "stops"] += 1
        return r
    return plain(wrapped)
hviske.ABORT = counting
held = threading.Event()
def hold(done, total):
    if not held.is_set():
        held.set()
        while not in_join():
            threading.Event().wait(0.01)
        count["released"] = True
m = hviske.Model(DEMO, threads=1)
g = m.segments(sys.argv[1], chunking="energy", progress=hold,
               temperature=[0, 0.2, 0.4, 0.6, 0.8, 1])
for _ in range(int(sys.argv[2])):
    next(g)
held.wait()
g.close()
print("steps after close", count["steps"], "stops", count["stops"])
m.close()
"""


def test_close_with_generator(tmp):
    """Finding 2."""
    import hviske
    wav = sentences_wav(os.path.join(tmp, "long40.wav"), 12, 0.3)
    with hviske.Model(DEMO_MODEL, threads=1) as m:
        ref = m.transcribe(wav, chunking="energy")
    first_chunk = sum(1 for s in ref.segments if s.chunk == 0)
    rc, out, err = child(CLOSE_IN_WITH, wav)
    lines = out.splitlines()
    report("close() at the end of a with block holding a started segments() generator "
           "returns and frees the model",
           rc == 0 and lines[:1] == ["closed True True"], f"rc={rc} {out!r} {err[-800:]!r}")
    report("... the generator then raises Error (closed)",
           len(lines) == 2 and lines[1].startswith("next:") and "closed" in lines[1],
           f"{out!r}")
    rc, out, err = child(CLOSE_FROM_THREAD, wav, first_chunk)
    lines = out.splitlines()
    report(f"close() from another thread while the loop waits for chunk 2 ({len(ref.chunks)} "
           f"chunks, {first_chunk} segments in the first): the loop gets Error (closed) at "
           "once, while close() waits for the running chunk",
           rc == 0 and len(lines) == 2 and lines[0].startswith("consumer:") and
           "closed" in lines[0] and lines[0].endswith("still waiting: True"),
           f"rc={rc} {out!r} {err[-800:]!r}")
    report("... then close() returns and frees the model", lines[1:] == ["closed True"],
           f"{out!r}")
    rc, out, err = child(CLOSE_MID_CHUNK, wav, first_chunk)
    f = out.split()
    report("a generator closed before chunk 2 of a six-temperature fallback stops at the "
           "first decoder step: no step runs after the close",
           rc == 0 and f[:4] == ["steps", "after", "close", "0"] and int(f[5]) >= 1,
           f"rc={rc} {out!r} {err[-800:]!r}")
    with hviske.Model(DEMO_MODEL, threads=1) as m:
        got = list(m.segments(wav, chunking="energy"))
        report("a generator read to its end still gives every segment",
               [s.text for s in got] == [s.text for s in ref.segments], f"{len(got)}")


MEMORY = """
src = sys.argv[1]
with hviske.Model(DEMO, threads=1) as m:
    data = open(src, "rb").read() if sys.argv[2] == "bytes" else None
    before = peak()
    try:
        r = m.transcribe(data if data is not None else src)
        what = "text %r" % r.text
    except hviske.Error as e:
        what = "%s: %s" % (type(e).__name__, e)
    print(before, peak(), what)
"""


SAMPLES = """
import numpy as np
case = sys.argv[1]
a, rate = {"broadcast": (lambda: np.broadcast_to(np.float32(0), (10**9,)), 16000),
           "float64": (lambda: np.broadcast_to(np.float64(0), (6 * 10**8,)), 768000),
           "fits": (lambda: np.zeros(60 * 768000), 768000)}[case]
with hviske.Model(DEMO, threads=1) as m:
    x = a()
    before = peak()
    try:
        r = m.transcribe(x, sample_rate=rate, chunking="energy")
        what = "text %r" % r.text
    except hviske.Error as e:
        what = "%s: %s" % (type(e).__name__, e)
    print(before, peak(), what)
"""


def test_samples_budget():
    """Issue #62, finding 5."""
    asan = sanitized()
    for case, want in (("broadcast", "LimitError: 62500.0 s of audio at 16000 Hz"),
                       ("float64", "LimitError: 600000000 frames x 1 channels of samples would "
                                   "be copied to float32 (2289 MiB), more than max_audio_bytes "
                                   "allows (2048 MiB)"),
                       ("fits", "text ''")):
        rc, out, err = child(SAMPLES, case)
        f = out.strip().split(maxsplit=2)
        if rc != 0 or len(f) != 3:
            report(f"samples {case}", False, f"rc={rc} {out!r} {err[-800:]!r}")
            continue
        grown = int(f[1]) - int(f[0])
        ok = f[2].startswith(want)
        if asan or case == "fits":
            report(f"samples {case}: {want} (peak RSS +{grown} KiB, not compared)", ok, out)
        else:
            report(f"samples {case}: {want} before any copy, peak RSS +{grown} KiB (at most "
                   "64 MiB)", ok and grown <= 65536, out)


def test_memory_and_budget(tmp):
    """Finding 3."""
    import hviske
    asan = sanitized()
    big = os.path.join(tmp, "big.flac")
    subprocess.run(["sox", "-D", "-n", "-r", "96000", "-c", "8", "-b", "16", big, "trim", "0", "300"],
                   check=True)
    mono_kib = 300 * 16000 * 4 // 1024
    for how in ("path", "bytes"):
        rc, out, err = child(MEMORY, big, how)
        f = out.strip().split(maxsplit=2)
        if rc != 0 or len(f) != 3:
            report(f"a 300 s 96 kHz 8-channel FLAC ({os.path.getsize(big)} bytes) as a {how}",
                   False, f"rc={rc} {out!r} {err[-800:]!r}")
            continue
        grown = int(f[1]) - int(f[0])
        ok = f[2] == "text ''"
        if asan:
            report(f"a 300 s 96 kHz 8-channel silent FLAC as a {how}: no text (peak RSS "
                   f"+{grown} KiB, not compared under ASan)", ok, out)
        else:
            report(f"a 300 s 96 kHz 8-channel silent FLAC ({os.path.getsize(big)} bytes) as a "
                   f"{how}: no text, peak RSS +{grown} KiB (at most its 16 kHz mono samples "
                   f"{mono_kib} KiB + 64 MiB)", ok and grown <= mono_kib + 65536, out)
    long = os.path.join(tmp, "long.flac")
    subprocess.run(["sox", "-D", "-n", "-r", "1000", "-c", "1", "-b", "16", long, "trim", "0", "36000"],
                   check=True)
    cli = subprocess.run([CLI, "-m", DEMO_MODEL, "-q", long], capture_output=True, text=True,
                         timeout=DEADLINE)
    for how in ("path", "bytes"):
        rc, out, err = child(MEMORY, long, how)
        f = out.strip().split(maxsplit=2)
        if rc != 0 or len(f) != 3:
            report(f"10 h of audio as a {how}", False, f"rc={rc} {out!r} {err[-800:]!r}")
            continue
        grown = int(f[1]) - int(f[0])
        msg = f[2].split(": ", 1)[1] if ": " in f[2] else ""
        name = long if how == "path" else "<bytes>"
        want = cli.stderr.strip().split(": ", 1)[1].replace(long, name) if ": " in cli.stderr \
            else None
        ok = f[2].startswith("LimitError:") and msg == want
        report(f"10 h at 1 kHz as a {how}: LimitError as the CLI's message ({msg!r}), peak RSS "
               f"+{grown} KiB" + (" (not compared under ASan)" if asan else " (under 64 MiB)"),
               ok and (asan or grown < 65536), f"{out!r} CLI: {cli.stderr!r}")
    multi = os.path.join(tmp, "multi.flac")
    subprocess.run(["sox", EXAMPLE, "-r", "48000", "-c", "8", multi], check=True)
    p = subprocess.run([CLI, "-m", DEMO_MODEL, "-t", "1", "--json", "-q", multi],
                       capture_output=True, text=True, timeout=DEADLINE)
    ref = json.loads(p.stdout) if p.returncode == 0 else {}
    with hviske.Model(DEMO_MODEL, threads=1) as m:
        r = m.transcribe(multi)
    report("an 8-channel 48 kHz file: the CLI's text, tokens and score",
           r.text == ref.get("text") and r.tokens == ref.get("tokens") and
           round(r.score, 4) == round(ref.get("score", 1e9), 4), f"{r.text!r} {ref}")


def test_nul(tmp):
    """Finding 4."""
    import hviske
    with hviske.Model(DEMO_MODEL, threads=1) as m:
        ref = m.transcribe(EXAMPLE).text
        cases = [("the audio path", "audio path", lambda: m.transcribe(EXAMPLE + "\0.flac")),
                 ("a pathlib.Path", "audio path",
                  lambda: m.transcribe(pathlib.Path(EXAMPLE + "\0.flac"))),
                 ("language", "language", lambda: m.transcribe(EXAMPLE, language="da\0xx")),
                 ("chunking", "chunking", lambda: m.transcribe(EXAMPLE, chunking="vad\0x")),
                 ("Model's path", "path", lambda: hviske.Model(DEMO_MODEL + "\0/x")),
                 ("vad_model", "vad_model",
                  lambda: hviske.Model(DEMO_MODEL, vad_model=os.path.join(
                      SOURCE_DIR, "models", "silero-vad") + "\0x").transcribe(EXAMPLE)),
                 ("weight_type", "weight_type",
                  lambda: hviske.Model(DEMO_MODEL, weight_type="f32\0x")),
                 ("compute", "compute", lambda: hviske.Model(DEMO_MODEL, compute="f32\0x"))]
        for what, arg, fn in cases:
            try:
                fn()
                got = "no error"
            except ValueError as e:
                got = f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001
                got = f"{type(e).__name__} (not a ValueError): {e}"
            report(f"a NUL byte in {what}: {got}", got.startswith("InvalidArgument:") and
                   "embedded null byte" in got and arg in got, got)
        report("... and the model still transcribes", m.transcribe(EXAMPLE).text == ref)


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    tmp = tempfile.mkdtemp(prefix="hv-python-hostile-")
    test_close_with_generator(tmp)
    test_memory_and_budget(tmp)
    test_samples_budget()
    test_nul(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
