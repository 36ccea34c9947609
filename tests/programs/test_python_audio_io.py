#!/usr/bin/env python3
"""faster-whisper's decode_audio and python -m hviske's -o, --progress and
'-' (issue #61, item 6), on the build's libhviske ($HVISKE_LIBRARY):

  * hviske.decode_audio reads a path, a file's bytes and a file object
    alike (mono float32 at 16 kHz: the example's 48403 samples), resamples
    to sampling_rate, refuses split_stereo=True (InvalidArgument) and names
    a missing file (FileError);
  * python -m hviske -o FILE writes the transcript to FILE and nothing to
    standard output; --progress prints hviske's progress lines on standard
    error; '-' reads the audio from standard input (the same text), and
    '-' twice is a usage error (exit 2);
  * '-' is read by the library within the budget, never whole into
    Python's memory first: an endless stream of zero bytes is refused as
    no audio file after its first bytes, with the process's peak memory
    (over a fresh interpreter's import of hviske) under BOUND_MIB, far
    below the OFFER_MIB it is offered: the interpreter, the library and
    the model take 37 MiB of it in a release build and about 48 MiB under
    the sanitizers, and a reader that took the stream whole would pass
    OFFER_MIB.
Prints one line per case and ends with "N passed, M failed".
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish_in, reexec_with_sanitizers,  # noqa: E402
                    report, sanitized)

BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
os.environ["HVISKE_LIBRARY"] = os.path.join(BINARY, "libhviske.so")
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
import hviske  # noqa: E402

SENTENCE = "I morgen bliver det gråt med minus tyve grader."
OFFER_MIB, BOUND_MIB = 256, 96


def module(args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "python"))
    return subprocess.run([sys.executable, "-m", "hviske", "-m", DEMO_MODEL, "-t", "2"] + args,
                          input=stdin, capture_output=True, env=env, cwd=cwd, timeout=600)


def endless_zeros(limit):
    """(exit status, stderr, peak resident bytes over a fresh interpreter's)
    of python -m hviske - fed zero bytes until it stops reading or `limit`
    bytes went in."""
    import resource
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "python"))
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,"
             " stderr=subprocess.PIPE)\n"
             "chunk, sent = bytes(1 << 20), 0\n"
             "try:\n"
             "    while sent < %d:\n"
             "        p.stdin.write(chunk); sent += len(chunk)\n"
             "    p.stdin.close()\n"
             "except BrokenPipeError:\n"
             "    pass\n"
             "err = p.stderr.read(); rc = p.wait()\n"
             "sys.stderr.buffer.write(err)\n"
             "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n" % limit)
    base = subprocess.run([sys.executable, "-c", probe, sys.executable, "-c", "import hviske"],
                          capture_output=True, env=env, timeout=600)
    r = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "hviske", "-m",
                        DEMO_MODEL, "-t", "1", "-"], capture_output=True, env=env, timeout=600)
    rc, peak = (int(v) for v in r.stdout.split())
    base_peak = int(base.stdout.split()[1])
    del resource
    return rc, r.stderr, (peak - base_peak) * 1024


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()  # it loads the sanitized libhviske
    tmp = tempfile.mkdtemp(prefix="hv-pyio-")
    x = hviske.decode_audio(EXAMPLE)
    with open(EXAMPLE, "rb") as f:
        data = f.read()
    with open(EXAMPLE, "rb") as f:
        y = hviske.decode_audio(f)
    z = hviske.decode_audio(data)
    report("decode_audio: a path, a file object and bytes give the same 16 kHz samples",
           str(x.dtype) == "float32" and len(x) == 48403 and (x == y).all() and (x == z).all(),
           f"{len(x)} {len(y)} {len(z)}")
    h = hviske.decode_audio(EXAMPLE, sampling_rate=8000)
    report("decode_audio(sampling_rate=8000): half as many samples", abs(len(h) - 24202) <= 1,
           f"{len(h)}")
    try:
        hviske.decode_audio(EXAMPLE, split_stereo=True)
        report("decode_audio(split_stereo=True): InvalidArgument", False, "no error")
    except hviske.InvalidArgument as e:
        report("decode_audio(split_stereo=True): InvalidArgument", "split_stereo" in str(e), str(e))
    missing = os.path.join(tmp, "nowhere.wav")
    try:
        hviske.decode_audio(missing)
        report("decode_audio of a missing file: FileError naming it", False, "no error")
    except hviske.FileError as e:
        report("decode_audio of a missing file: FileError naming it", missing in str(e), str(e))

    out = os.path.join(tmp, "said.txt")
    p = module(["-o", out, "--progress", EXAMPLE])
    err = p.stderr.decode()
    said = open(out, encoding="utf-8").read() if os.path.exists(out) else None
    report("python -m hviske -o FILE: the transcript in FILE, nothing on stdout",
           p.returncode == 0 and p.stdout == b"" and said == SENTENCE + "\n", f"{p} {said!r}")
    report("python -m hviske --progress: hviske's progress lines on stderr",
           f"hviske: {EXAMPLE}: progress 100.0% done_s=" in err, err)
    p = module(["-"], stdin=data)
    report("python -m hviske -: the audio from standard input",
           p.returncode == 0 and p.stdout.decode().strip() == SENTENCE, str(p))
    p = module(["-", "-"], stdin=data)
    report("python -m hviske - -: a usage error", p.returncode == 2 and b"'-'" in p.stderr,
           str(p))
    zeros = endless_zeros(OFFER_MIB << 20)
    report("python -m hviske - with endless zeros: refused as no audio, memory bounded",
           zeros[0] == 1 and b"-" in zeros[1] and zeros[2] < BOUND_MIB << 20,
           f"exit {zeros[0]}, peak {zeros[2] >> 20} MiB more than at start, {zeros[1][-300:]!r}")
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
