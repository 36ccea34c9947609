"""Shared setup of the parity tests against the PyTorch reference
(test_parity.py, test_beams.py, test_chunk_parity.py): the environment
and the fixtures' manifest, the reference model loaded once per model,
runs of hviske-dump and reading its dump (docs/CONVENTIONS.md, "Parity
dump format"), the comparisons they share, one line per case and the
closing "N passed, M failed" line; and the long audio made from the
fixture sentences (also used by tests/programs/test_longaudio.py).

torch and the reference are imported only when a Parity is made, so the
audio helpers need neither."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 16000
SENTENCES = ("da1", "da2", "da3", "da4", "da5")


class Parity:
    """One parity test's run. Reads HV_FIXTURES (its manifest.json, as
    .manifest), HV_DUMP (.dump) and the command line's substrings
    (.filters: only cases whose label holds one of them run); imports
    torch (.torch, one thread) and tests/reference/reference.py (.R);
    makes a temporary folder (.tmp). When something is missing, .ready is
    False and the cause is a failed case: finish() says so."""

    def __init__(self, prefix, width):
        self.width = width  # of the case names in the report lines
        self.passed = self.failed = 0
        self.t0 = time.time()
        self.tmp = None
        self.models = {}
        self.fixtures = os.environ.get("HV_FIXTURES")
        self.dump = os.environ.get("HV_DUMP")
        self.filters = sys.argv[1:]
        self.ready = False
        manifest = os.path.join(self.fixtures or "", "manifest.json")
        if not self.fixtures or not os.path.exists(manifest):
            self._setup_failed("HV_FIXTURES (%r) has no manifest.json; run "
                               "tests/reference/make_fixtures.py" % self.fixtures)
            return
        if not self.dump or not os.access(self.dump, os.X_OK):
            self._setup_failed("HV_DUMP (%r) is not an executable" % self.dump)
            return
        with open(manifest, encoding="utf-8") as f:
            self.manifest = json.load(f)
        sys.path.insert(0, os.path.join(TESTS, "reference"))
        import torch
        import reference
        torch.set_num_threads(1)
        self.torch, self.R = torch, reference
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.ready = True

    def _setup_failed(self, why):
        print("FAIL: " + why)
        self.failed += 1

    def wanted(self, name):
        return not self.filters or any(s in name for s in self.filters)

    def model_dir(self, mi):
        """The folder of a manifest model entry ({"name", "path"})."""
        return os.path.join(self.fixtures, mi["path"])

    def model(self, model_dir):
        """The reference model of model_dir, loaded once."""
        if model_dir not in self.models:
            self.models[model_dir] = self.R.load_model(model_dir)
        return self.models[model_dir]

    def run_dump(self, model_dir, audio_path, args, arrays, timeout):
        """Runs `hviske-dump -m MODEL_DIR -o TMP/c ARGS AUDIO_PATH` and reads
        its result.json and the arrays named (e.g. "samples"). Returns
        (dump, None), dump = {"result": the JSON, name: array, ...}, or
        (None, why) when it failed."""
        out = os.path.join(self.tmp, "c")
        shutil.rmtree(out, ignore_errors=True)
        cmd = [self.dump, "-m", model_dir, "-o", out] + [str(a) for a in args] + [audio_path]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "hviske-dump timed out after %d s: %s" % (timeout, " ".join(cmd))
        except OSError as e:
            return None, "cannot run %s: %s" % (self.dump, e)
        if r.returncode != 0:
            err = (r.stderr or r.stdout).decode("utf-8", "replace").strip().splitlines()
            return None, "hviske-dump exit %d: %s" % (r.returncode,
                                                      err[-1] if err else "(no output)")
        try:
            with open(os.path.join(out, "result.json"), encoding="utf-8") as f:
                d = {"result": json.load(f)}
            for k in arrays:
                d[k] = np.load(os.path.join(out, k + ".npy"))
        except (OSError, ValueError) as e:
            return None, "reading the dump: %s" % e
        return d, None

    def report(self, name, fails, detail=""):
        """One line: "ok   NAME DETAIL" or "FAIL NAME DETAIL | FAILS"."""
        if fails:
            self.failed += 1
            print("FAIL %-*s %s | %s" % (self.width, name, detail, "; ".join(fails)))
        else:
            self.passed += 1
            print("ok   %-*s %s" % (self.width, name, detail))
        sys.stdout.flush()

    def finish(self):
        """Removes the temporary folder, prints the time taken and the
        closing line; returns the exit status."""
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self.ready:
            print("(%.1f s)" % (time.time() - self.t0))
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


def run_cases(parity, body):
    """The main of a parity test: body(parity) runs its cases (none when
    the setup failed), then finish(); returns the exit status."""
    try:
        if parity.ready:
            body(parity)
    finally:
        rc = parity.finish()
    return rc


# ------------------------------------------------------------ comparisons

def max_abs(a, b):
    """max |a - b| in float64, NaN counted as infinite; 0 when empty."""
    if a.size == 0:
        return 0.0
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return float(np.nan_to_num(d, nan=np.inf).max())


def first_difference(a, b):
    """The first index where sequences a and b differ (the shorter one's
    length when one is a prefix of the other)."""
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def check_close(fails, what, c, ref, tol, axes=None):
    """Arrays c against ref: the same shape, max |c - ref| < tol. Appends
    the failure, with where the largest difference is (axes: a name per
    axis, e.g. ("frame", "mel")), and returns the measured difference;
    None when the shapes differ."""
    if c.shape != ref.shape:
        fails.append("%s shape %s != %s" % (what, c.shape, ref.shape))
        return None
    d = max_abs(c, ref)
    if not d < tol:
        diff = np.nan_to_num(np.abs(c.astype(np.float64) - ref.astype(np.float64)), nan=np.inf)
        at = np.unravel_index(np.argmax(diff), c.shape)
        names = axes or ("index",) * len(at)
        fails.append("%s diff %.3g at %s" % (what, d, " ".join(
            "%s %d" % (n, i) for n, i in zip(names, at))))
    return d


def check_logprobs(fails, what, c, ref, tol):
    """Token log-probs: c (from result.json) must be len(ref) numbers, each
    within tol of ref's. Returns the largest difference (None when c is
    not such a list; 0.0 when both are empty)."""
    if not isinstance(c, list) or len(c) != len(ref) or not all(
            isinstance(x, (int, float)) for x in c):
        fails.append("%s %r is not %d numbers" % (what, c, len(ref)))
        return None
    if not c:
        return 0.0
    d = np.abs(np.array(c, dtype=np.float64) - np.array(ref, dtype=np.float64))
    m = float(d.max())
    if not m < tol:
        fails.append("%s diff %.3g at step %d" % (what, m, int(np.argmax(d))))
    return m


# ------------------------------------------------------------- long audio

def read_wav16(path):
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise ValueError("%s: expected 16-bit mono" % path)
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").copy()


def make_long_audio(fixtures, seconds, seed, noise=0.0, gaps=(0.2, 1.6)):
    """int16 samples at 16 kHz, exactly `seconds` long: the fixture
    sentences in a seeded random order, each followed by a pause of
    gaps[0]..gaps[1] seconds (digital silence, or Gaussian noise of
    standard deviation `noise` in int16 units)."""
    clips = [read_wav16(os.path.join(fixtures, "audio", s + "_16k.wav")) for s in SENTENCES]
    rng = np.random.RandomState(seed)
    n = int(round(seconds * RATE))
    parts, total = [], 0
    while total < n:
        c = clips[rng.randint(len(clips))]
        g = int(rng.uniform(*gaps) * RATE)
        pause = (np.round(rng.randn(g) * noise).astype(np.int16) if noise
                 else np.zeros(g, dtype=np.int16))
        parts += [c, pause]
        total += len(c) + g
    return np.concatenate(parts)[:n]


def write_wav(path, samples, rate=RATE):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, dtype="<i2").tobytes())
    return path
