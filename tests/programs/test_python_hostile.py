#!/usr/bin/env python3
"""The Python package under misuse and hostile input (issue #51), on the
build's libhviske and the demo model:

  * close() while a started model.segments() generator is still
    referenced (the issue's `with` block, and close() from another thread
    while the loop waits for a segment that the transcription holds back
    in its progress callback): close() returns, the generator raises Error
    ("closed") at once instead of waiting, and the model is freed. Each
    runs in a child process with a deadline: close() used to wait forever
    for the worker, which waited for the loop.

Prints one line per case and ends with "N passed, M failed".
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, SOURCE_DIR, finish_in, reexec_with_sanitizers,  # noqa: E402
                    report, sanitized, sentences_wav)

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
    with hviske.Model(DEMO_MODEL, threads=1) as m:
        got = list(m.segments(wav, chunking="energy"))
        report("a generator read to its end still gives every segment",
               [s.text for s in got] == [s.text for s in ref.segments], f"{len(got)}")


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    tmp = tempfile.mkdtemp(prefix="hv-python-hostile-")
    test_close_with_generator(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
