"""Every output format, byte for byte: what hviske writes (each --format
and whisper-cli output flag, to standard output, to -o FILE, to files,
streamed), what hviske-server answers (each response_format, with and
without words, logprobs and stream=true with the web page's downloads) and what
`python -m hviske` writes (each also compared with the CLI's file of the
same format: the library writes both), on the demo model (models/demo) and on the
tiny-f32 fixture model (random weights: stray bytes, control characters
and markup in the text), compared with the files in
tests/programs/golden/ (one per case, CASE.out).

The golden files were written by the writers as they were before they
moved into the library (include/hviske_output.h); the library's writers
keep every byte. python -m hviske's JSON cases (--json) hold the
library's jsonl, the CLI's --json bytes. What is not the writers' is left out of the comparison:
the measured times of JSON's "timings" (as 0) and the server's request
ids. The runs use --compute f32 and the CPU's own kernel table: every
table gives the portable kernels' bits (docs/KERNELS.md), so the bytes
hold on any CPU. They do not cap the table at `portable`: that table
leaves f32 products to OpenBLAS, whose sums follow the kernel family it
picks for the CPU (SkylakeX's on an AVX-512 Xeon, Haswell's on Zen 5).

    test_golden_outputs.py            compare
    test_golden_outputs.py --record   write the golden files anew (only
                                      when a format is meant to change)
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, FIXTURES, SOURCE_DIR, finish, report,  # noqa: E402
                    sanitized, sanitizer_env)
from hvserver import Server, transcribe  # noqa: E402

GOLDEN = os.path.join(SOURCE_DIR, "tests", "programs", "golden")
BINARY = os.environ.get("HV_BINARY_DIR", os.path.dirname(CLI))
RECORD = "--record" in sys.argv
# not capped at portable (docstring): OpenBLAS would run the f32 products
ENV = {k: v for k, v in os.environ.items() if (k, v) != ("HVISKE_MAX_ISA", "portable")}
LATIN1 = os.fsdecode(b"caf\xe9 <&>.wav")  # a name that is not UTF-8, with markup
FORMATS = ["txt", "jsonl", "json", "srt", "vtt", "csv", "whisper-json"]

# (inside a JSON string too: the server's downloads)
_TIMING = re.compile(rb'((?:frontend|encoder|decoder|vad|align)_ms\\?":\s*)-?[0-9.eE+-]+')


def normal(data):
    """The bytes with the measured times as 0 and the model's directory
    (whisper-json's params.model) as MODEL."""
    for model in (DEMO_MODEL, os.path.join(FIXTURES, "models", "tiny-f32")):
        data = data.replace(model.encode(), b"MODEL")
    return _TIMING.sub(rb"\g<1>0", data)


def check(name, data, how=""):
    """Compares (or with --record writes) one case's bytes; `how`: another
    way to the same bytes, compared with the golden file of name."""
    path = os.path.join(GOLDEN, name + ".out")
    data = normal(data)
    if how:
        name = f"{name} ({how})"
    elif RECORD:
        with open(path, "wb") as f:
            f.write(data)
        report(f"{name}: recorded ({len(data)} bytes)", len(data) > 0)
        return
    try:
        with open(path, "rb") as f:
            want = f.read()
    except OSError as e:
        report(f"{name}: its golden file", False, str(e))
        return
    diff = ""
    if data != want:
        at = next((i for i in range(min(len(data), len(want))) if data[i] != want[i]),
                  min(len(data), len(want)))
        diff = (f"differs at byte {at} ({len(data)} bytes, golden {len(want)}): "
                f"{data[max(0, at - 60):at + 60]!r}\n golden: {want[max(0, at - 60):at + 60]!r}")
    report(f"{name}: byte-identical to {os.path.relpath(path, SOURCE_DIR)}", data == want, diff)


def run(args, cwd):
    p = subprocess.run([str(a) for a in args], capture_output=True, env=ENV, timeout=600,
                       cwd=cwd)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode("utf-8", "replace")[-2000:])
    return p


def cli_cases(tag, model, audio, tmp):
    base = [CLI, "-m", model, "-t", "1", "-q", "--compute", "f32"]
    runs = []
    for fmt in FORMATS:
        runs.append((f"{fmt}", ["--format", fmt, audio]))
    runs += [
        ("txt-print-timestamps", ["--format", "txt", "--print-timestamps", audio]),
        ("json-words", ["--format", "json", "--word-timestamps", audio]),
        ("jsonl-words", ["--format", "jsonl", "--word-timestamps", audio]),
        ("srt-cue-limits", ["--format", "srt", "--max-line-chars", "12", "--max-lines", "1",
                            "--max-cue-seconds", "1.5", audio]),
        ("vtt-cue-limits", ["--format", "vtt", "--max-line-chars", "12", audio]),
        ("stream-txt", ["--stream", "--format", "txt", audio]),
        ("stream-srt", ["--stream", "--format", "srt", audio]),
        ("stream-vtt", ["--stream", "--format", "vtt", audio]),
        ("stream-jsonl", ["--stream", "--format", "jsonl", audio]),
        ("two-inputs-txt", ["--format", "txt", audio, audio]),
        ("two-inputs-jsonl", ["--format", "jsonl", audio, audio]),
        ("whisper-ojf", ["-ojf", "-of", f"{tag}-ojf", audio]),
        ("jsonl-name-not-utf8", ["--format", "jsonl", LATIN1]),
        ("stream-jsonl-name-not-utf8", ["--stream", "--format", "jsonl", LATIN1]),
    ]
    for name, args in runs:
        p = run(base + args, tmp)
        if name == "whisper-ojf":
            out = os.path.join(tmp, f"{tag}-ojf.json")
            data = open(out, "rb").read() if p.returncode == 0 and os.path.exists(out) else b""
        else:
            data = p.stdout if p.returncode == 0 else b""
        check(f"cli-{tag}-{name}", data)
    # -o FILE: each format's bytes, those of its standard output
    for fmt in FORMATS:
        out = os.path.join(tmp, f"{tag}-o.{fmt}")
        p = run(base + ["--format", fmt, "-o", out, audio], tmp)
        data = open(out, "rb").read() if p.returncode == 0 and os.path.exists(out) else b""
        check(f"cli-{tag}-{fmt}", data, f"-o FILE.{fmt}")
    # every format into files at once
    d = os.path.join(tmp, f"{tag}-files")
    p = run(base + ["--format", ",".join(f for f in FORMATS if f != "whisper-json"),
                    "--output-dir", d, audio], tmp)
    stem = os.path.splitext(os.path.basename(audio))[0]
    for fmt in FORMATS[:-1]:
        path = os.path.join(d, f"{stem}.{fmt}")
        data = open(path, "rb").read() if p.returncode == 0 and os.path.exists(path) else b""
        check(f"cli-{tag}-file-{fmt}", data)


def server_cases(tag, model, audio, tmp):
    s = Server(model, "-t", "1", "--workers", "1", "--compute", "f32", tmp=tmp, env=ENV)
    if not s.started(f"server on {tag}"):
        return
    try:
        with open(os.path.join(tmp, audio), "rb") as f:
            wav = f.read()
        cases = [(fmt, [("response_format", fmt)])
                 for fmt in ("json", "text", "verbose_json", "srt", "vtt")]
        cases += [
            ("verbose_json-words", [("response_format", "verbose_json"),
                                    ("timestamp_granularities[]", "word"),
                                    ("timestamp_granularities[]", "segment")]),
            ("verbose_json-words-only", [("response_format", "verbose_json"),
                                         ("timestamp_granularities[]", "word")]),
            ("json-logprobs", [("response_format", "json"), ("include[]", "logprobs")]),
            ("stream-json", [("stream", "true")]),
            ("stream-text", [("stream", "true"), ("response_format", "text")]),
            ("stream-downloads", [("stream", "true"),
                                  ("downloads", ",".join(FORMATS))]),
        ]
        for name, fields in cases:
            r = transcribe(s.port, wav, fields=fields)
            body = r.body if r.status == 200 else b""
            if r.status != 200:
                sys.stderr.write(f"{name}: {r}\n")
            check(f"server-{tag}-{name}", body)
    finally:
        s.stop()


def python_cases(tag, model, audio, tmp):
    # f32 as the CLI's runs (python -m hviske has no --compute)
    env = dict(ENV, HVISKE_LIBRARY=os.path.join(BINARY, "libhviske.so"),
               PYTHONPATH=os.path.join(SOURCE_DIR, "python"), HVISKE_COMPUTE="f32")
    if sanitized():  # a sanitized libhviske in the interpreter
        env = sanitizer_env(env)
    base = [sys.executable, "-m", "hviske", "-m", model, "-t", "1"]
    # (case, arguments, the CLI's case of the same bytes)
    for name, args, same in [("txt", [audio], "txt"), ("json", ["--json", audio], "jsonl"),
                             ("json-words", ["--json", "--word-timestamps", audio],
                              "jsonl-words"),
                             ("srt", ["--format", "srt", audio], "srt"),
                             ("vtt", ["--format", "vtt", audio], "vtt"),
                             ("two-inputs-json", ["--json", audio, audio], "two-inputs-jsonl"),
                             (None, ["--format", "json", audio], "json"),
                             (None, ["--format", "json", "--word-timestamps", audio],
                              "json-words")]:
        p = subprocess.run(base + args, capture_output=True, env=env, timeout=600, cwd=tmp)
        if p.returncode != 0:
            sys.stderr.write(p.stderr.decode("utf-8", "replace")[-2000:])
        data = p.stdout if p.returncode == 0 else b""
        if name:
            check(f"python-{tag}-{name}", data)
        if not RECORD:  # python -m hviske writes what hviske writes
            check(f"cli-{tag}-{same}", data, "python -m hviske " + " ".join(args[:-1]))


def fixture_model():
    """The tiny-f32 fixture and its audio, when its files are the ones the
    golden files were recorded on (their hash in golden/tiny-f32.sha256):
    a fixture generator that writes other weights changes the transcript,
    not the writers."""
    if not FIXTURES:
        return None, "no $HV_FIXTURES"
    model = os.path.join(FIXTURES, "models", "tiny-f32")
    h = hashlib.sha256()
    for name in ("config.json", "generation_config.json", "tokenizer.model",
                 "model.safetensors"):
        with open(os.path.join(model, name), "rb") as f:
            h.update(f.read())
    stamp = os.path.join(GOLDEN, "tiny-f32.sha256")
    if RECORD:
        with open(stamp, "w") as f:
            f.write(h.hexdigest() + "\n")
    with open(stamp) as f:
        if f.read().strip() != h.hexdigest():
            return None, "the tiny-f32 fixture differs from the one recorded"
    return model, ""


def main():
    tmp = tempfile.mkdtemp(prefix="hv-golden-")
    os.makedirs(GOLDEN, exist_ok=True)
    audio = "da-example.wav"  # as given, relative: the name in JSON
    shutil.copy(EXAMPLE, os.path.join(tmp, audio))
    shutil.copy(EXAMPLE, os.path.join(tmp, LATIN1))
    models = [("demo", DEMO_MODEL)]
    tiny, why = fixture_model()
    if tiny:
        models.append(("tiny", tiny))
    else:
        print(f"skip: the fixture model's cases ({why})")
    for tag, model in models:
        cli_cases(tag, model, audio, tmp)
        server_cases(tag, model, audio, tmp)
        python_cases(tag, model, audio, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
