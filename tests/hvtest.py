"""Shared bits of the Python test scripts: one line per case, and the
closing "N passed, M failed" line that CI reads."""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
import wave

CLI = os.environ.get("HV_CLI", "hviske")
SOURCE_DIR = os.environ.get(
    "HV_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO_MODEL = os.path.join(SOURCE_DIR, "models", "demo")  # the bundled model
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "da-example.wav")  # 16 kHz mono
FIXTURES = os.environ.get("HV_FIXTURES", "")  # tests/reference/make_fixtures.py's
TIMEOUT = 600  # seconds per CLI run
WAIT = 60      # seconds for a program to reach a state a test waits for

_counts = {"passed": 0, "failed": 0}


def report(name, ok, detail=""):
    """Records one case: "ok    NAME" or "FAIL  NAME: DETAIL"."""
    if ok:
        _counts["passed"] += 1
        print(f"ok    {name}")
    else:
        _counts["failed"] += 1
        print(f"FAIL  {name}: {detail}")
    sys.stdout.flush()


def skip_or_fail(name, why, how="run scripts/install-deps.sh"):
    """A missing tool: a skip with the reason, but a failure when CI is set
    (CI installs everything: a skip there would hide a broken install)."""
    if os.environ.get("CI"):
        report(name, False, f"{why} (CI is set: {how})")
    else:
        print(f"skip  {name}: {why} ({how})")
        sys.stdout.flush()


def oracle_import(name):
    """The module `name` of the oracle tier's virtual environment
    (tests/oracle/requirements.lock); when it does not import, a failed
    case saying where it comes from, the closing line, and exit 1."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError as e:
        report(f"import {name}", False, f"{e}: run under the oracle's virtual environment "
               "(scripts/oracle-venv.sh; ctest runs oracle_venv first)")
        sys.exit(finish())


def finish():
    """Prints the closing line; returns the exit status."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    return 1 if _counts["failed"] else 0


def finish_in(tmp):
    """finish(), then removes the test's temporary folder tmp when every
    case passed, else keeps it for a look and says where."""
    rc = finish()
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"(kept {tmp})")
    return rc


def fixtures_manifest():
    """The fixtures' manifest.json ($HV_FIXTURES) as a dict; None, with the
    case "fixtures" failed, when there is none."""
    path = os.path.join(FIXTURES, "manifest.json")
    if not FIXTURES or not os.path.isfile(path):
        report("fixtures", False, f"HV_FIXTURES={FIXTURES!r} has no manifest.json")
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def wait_until(cond, timeout=WAIT, interval=0.02):
    """Polls cond() until it returns something true, and returns that; None
    once timeout seconds have passed. Tests wait for the state they need
    with it (a server's queue, a file appearing), never with a fixed
    sleep, so that a slow or loaded machine only makes them slower."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


class Run:
    """One run of the hviske CLI ($HV_CLI) with captured output."""

    def __init__(self, args, stdin=None, input_bytes=None, env=None, cwd=None):
        self.args = [CLI] + [str(a) for a in args]
        try:
            p = subprocess.run(self.args, capture_output=True, timeout=TIMEOUT,
                               stdin=stdin, input=input_bytes, env=env, cwd=cwd)
            self.rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            self.rc, out, err = None, e.stdout or b"", e.stderr or b""
        self.raw = out
        self.out = out.decode("utf-8", "replace")
        self.err = err.decode("utf-8", "replace")

    def crashed(self):
        """A signal, a timeout or a sanitizer report: never acceptable."""
        return (self.rc is None or self.rc < 0 or "Sanitizer" in self.err
                or "runtime error" in self.err)

    def lines(self):
        """stdout split at "\n" only (str.splitlines would also split at
        the control characters that random-weight models print)."""
        if not self.out:
            return []
        return self.out[:-1].split("\n") if self.out.endswith("\n") \
            else self.out.split("\n")

    def __str__(self):
        return (f"[hviske {' '.join(self.args[1:])}] rc={self.rc} "
                f"stdout={self.out[:300]!r} stderr={self.err[-600:]!r}")


def check(name, run, cond, why=""):
    """Reports a case: cond must hold and the program must not crash."""
    if run.crashed():
        report(name, False, f"crashed {run}")
    elif not cond:
        report(name, False, f"{why} {run}")
    else:
        report(name, True)


def runs_in_order(tokens, blocks):
    """True when the blocks (token lists) stand in tokens as contiguous,
    non-overlapping runs, in order (tokens may hold more between them:
    those of chunks whose text is empty, which are no segments)."""
    i = 0
    for b in blocks:
        while i + len(b) <= len(tokens) and tokens[i:i + len(b)] != b:
            i += 1
        if i + len(b) > len(tokens):
            return False
        i += len(b)
    return True


def readme_section(source_dir, heading):
    """The text of README.md's "## HEADING" section (up to the next "## "
    heading), or None: tests run the README's examples as written."""
    with open(os.path.join(source_dir, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## " + re.escape(heading) + r"\n(.*?)(?=^## )", text, re.S | re.M)
    return m.group(1) if m else None

def sentences_wav(path, copies, gap_s):
    """copies of the example with gap_s of silence between (16 kHz mono)."""
    with wave.open(EXAMPLE, "rb") as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1
        clip = w.readframes(w.getnframes())
    gap = b"\0\0" * int(gap_s * 16000)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(gap.join([clip] * copies))
    return path


def float_wav(path, x, rate=16000):
    """float samples x (-1..1, clipped) as a 16-bit mono WAV at path."""
    import numpy as np
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def run_captured(args, timeout=600, **kw):
    """subprocess.run(args) with text output captured; past timeout, a
    CompletedProcess with returncode None and what came until then."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, None, str(e.stdout), str(e.stderr))


def why(p):
    """A run_captured result, for a failure's detail."""
    return f"rc={p.returncode} out={p.stdout[-800:]!r} err={p.stderr[-1500:]!r}"


def fresh_venv(tmp, name, python="/usr/bin/python3"):
    """A new virtual environment tmp/name of python (Debian's, with its pip),
    or None with the failure reported."""
    path = os.path.join(tmp, name)
    p = run_captured([python, "-m", "venv", path])
    if p.returncode != 0:
        report(f"{python} -m venv {name}", False, why(p))
        return None
    return path


def sanitized():
    """1 when $HV_BINARY_DIR is a sanitizer build (HV_SANITIZE=ON)."""
    try:
        with open(os.path.join(os.environ.get("HV_BINARY_DIR", ""), "CMakeCache.txt"),
                  encoding="utf-8") as f:
            return "HV_SANITIZE:BOOL=ON" in f.read()
    except OSError:
        return False


def sanitizer_env(env):
    """env with libasan and libubsan preloaded: a Python that loads the
    sanitized libhviske needs their runtimes first (the interpreter is not
    built with them); leaks are not reported (the interpreter's own)."""
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        p = subprocess.run(["cc", "-print-file-name=" + name], capture_output=True, text=True)
        path = os.path.realpath(p.stdout.strip())
        if os.path.isfile(path):
            libs.append(path)
    return dict(env, LD_PRELOAD=":".join(libs), ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")


def reexec_with_sanitizers():
    """Runs this script again with the sanitizer runtimes preloaded
    (sanitizer_env). Returns its exit status."""
    env = dict(sanitizer_env(os.environ), HV_PY_REEXEC="1")
    return subprocess.call([sys.executable] + sys.argv, env=env)


def in_pty(args, stdout_pty=True, cwd=None, on_data=None, argv=None, env=None):
    """Runs hviske with args (or the command argv) with stderr (and stdout
    unless stdout_pty is false: then a pipe) on a pseudo-terminal; returns
    (rc, the pty's bytes, stdout's bytes). on_data(p, bytes so far) is
    called after each read of the pty."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv or [CLI] + args, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                         stdout=slave if stdout_pty else subprocess.PIPE, stderr=slave)
    os.close(slave)
    data = b""
    out = b""
    streams = [master] + ([] if stdout_pty else [p.stdout.fileno()])
    while streams:
        ready, _, _ = select.select(streams, [], [], TIMEOUT)
        if not ready:
            p.kill()
            break
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the pty's other end is closed
                chunk = b""
            if not chunk:
                streams.remove(fd)
            elif fd == master:
                data += chunk
                if on_data:
                    on_data(p, data)
            else:
                out += chunk
    rc = p.wait(TIMEOUT)
    os.close(master)
    return rc, data, out


def render(data):
    """The screen a terminal shows for data: \\r goes to the row's start,
    ESC [ K erases to its end, \\n goes down a row; other bytes print."""
    rows = [""]
    col = 0
    text = data.decode("utf-8", "replace")
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith("\x1b[K", i):
            rows[-1] = rows[-1][:col]
            i += 3
            continue
        if c == "\r":
            col = 0
        elif c == "\n":
            rows.append("")
            col = 0
        else:
            row = rows[-1]
            rows[-1] = row[:col] + c + row[col + 1:]
            col += 1
        i += 1
    while rows and rows[-1] == "":
        rows.pop()
    return rows
