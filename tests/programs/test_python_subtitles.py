"""`python -m hviske` writes SubRip and WebVTT as the hviske program does
(with the library's writers, include/hviske_output.h; issue #53;
python/README.md, the end):

  * --format srt and --format vtt of one input on standard output, byte for
    byte the program's, for the example and for 7 sentences with pauses
    (several chunks and cues), with speech detection and with energy
    chunking;
  * several inputs: NAME.srt / NAME.vtt beside each input, or in
    --output-dir, each the program's file; an input that fails is named
    (exit 1) and the others are written;
  * --format jsonl is --json, and --format json the program's indented
    document (its keys and segments; the bytes: test_golden_outputs), also
    as files beside several inputs; --temperature takes the fallback's list, as
    the program's; usage errors (exit 2): --json with --format srt,
    --output-dir without srt or vtt, two inputs writing one file; an
    output folder that does not exist: exit 1 naming the file;
  * --help: the parameter options' entries are their library rows' help
    (hv_param_find through ctypes), as hviske's;
  * an output that is an input (talk.srt, an audio file, with --format
    srt, beside it or through --output-dir .) is not written: exit 1
    naming both, the input unchanged, the other input written (issue #62).

Environment: HV_SOURCE_DIR, HV_BINARY_DIR, HV_CLI.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL as DEMO, EXAMPLE as WAV, Run, finish,  # noqa: E402
                    reexec_with_sanitizers, report, sanitized, sentences_wav)

SOURCE = os.path.abspath(os.environ["HV_SOURCE_DIR"])
BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
os.environ["HVISKE_LIBRARY"] = os.path.join(BINARY, "libhviske.so")
os.environ["PYTHONPATH"] = os.path.join(SOURCE, "python")
sys.path.insert(0, os.path.join(SOURCE, "python"))


def py(args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hviske", "-m", DEMO, "-t", "2"] + args,
                          capture_output=True, text=True, cwd=cwd, timeout=600)


def cli(args):
    return Run(["-m", DEMO, "-t", "2", "-q"] + args)


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        return f"({e})"


def test_stdout(tmp):
    long7 = sentences_wav(os.path.join(tmp, "long7.wav"), 7, 6)
    for fmt in ("srt", "vtt"):
        for name, path, extra in (("the example", WAV, []), ("7 sentences", long7, []),
                                  ("7 sentences, energy chunking", long7,
                                   ["--chunking", "energy"])):
            p, c = py(["--format", fmt] + extra + [path]), cli(["--format", fmt] + extra + [path])
            report(f"--format {fmt}, {name}: the program's standard output, byte for byte "
                   f"({p.stdout.count(' --> ')} cues)",
                   p.returncode == 0 and c.rc == 0 and p.stdout == c.out and " --> " in p.stdout,
                   f"{p.stdout!r} != {c.out!r} {p.stderr[-300:]}")


def test_files(tmp):
    d = os.path.join(tmp, "in")
    os.makedirs(d)
    a, b, bad = (os.path.join(d, n) for n in ("a.wav", "b.clip.wav", "broken.wav"))
    shutil.copy(WAV, a)
    sentences_wav(b, 3, 2)
    with open(bad, "wb") as f:
        f.write(b"RIFF not audio at all")
    c = cli(["--format", "srt", a, b])
    want = {n: read(os.path.join(d, n)) for n in ("a.srt", "b.clip.srt")}
    for n in want:
        os.unlink(os.path.join(d, n))
    p = py(["--format", "srt", a, bad, b])
    got = {n: read(os.path.join(d, n)) for n in want}
    report("several inputs: NAME.srt beside each, the program's files; the broken one named, "
           "exit 1", c.rc == 0 and p.returncode == 1 and got == want and "broken.wav" in
           p.stderr and not os.path.exists(os.path.join(d, "broken.srt")),
           f"{got} != {want} {p.stderr[-300:]}")
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    c = cli(["--format", "vtt", "--output-dir", out, a])
    want = read(os.path.join(out, "a.vtt"))
    os.unlink(os.path.join(out, "a.vtt"))
    p = py(["--format", "vtt", "--output-dir", out, a])
    report("--output-dir DIR: DIR/a.vtt, the program's file", p.returncode == 0 and c.rc == 0
           and read(os.path.join(out, "a.vtt")) == want and os.listdir(out) == ["a.vtt"],
           f"{os.listdir(out)} {p.stderr[-300:]}")
    p = py(["--format", "srt", "--output-dir", os.path.join(tmp, "missing"), a])
    report("an --output-dir that does not exist: exit 1 naming the file, no traceback",
           p.returncode == 1 and "missing/a.srt" in p.stderr and "Traceback" not in p.stderr,
           p.stderr[-400:])


def test_inputs_kept(tmp):
    d = os.path.join(tmp, "kept")
    os.makedirs(d)
    with open(WAV, "rb") as f:
        audio = f.read()
    for name in ("talk.srt", "b.wav"):
        shutil.copy(WAV, os.path.join(d, name))
    for args, victim, other in ((["talk.srt", "b.wav"], "talk.srt", "b.srt"),
                                (["--output-dir", ".", "talk.srt", "b.wav"], "talk.srt",
                                 "b.srt")):
        if os.path.exists(os.path.join(d, other)):
            os.unlink(os.path.join(d, other))
        p = py(["--format", "srt"] + args, cwd=d)
        with open(os.path.join(d, victim), "rb") as f:
            kept = f.read() == audio
        report(f"--format srt {' '.join(args)}: {victim} (an input) kept, exit 1 naming it",
               p.returncode == 1 and kept and f"{victim}: not overwriting the input" in p.stderr,
               f"rc {p.returncode} kept {kept} {p.stderr[-300:]!r}")
        report(f"--format srt {' '.join(args)}: {other} written",
               os.path.isfile(os.path.join(d, other)), str(os.listdir(d)))


def test_options(tmp):
    j, f = py(["--json", WAV]), py(["--format", "jsonl", WAV])

    def untimed(out):  # the measured times aside
        return re.sub(r'(_ms":)[0-9.e+-]+', r"\g<1>0", out)
    report("--format jsonl is --json", j.returncode == 0 and
           untimed(j.stdout) == untimed(f.stdout) and j.stdout.startswith("{") and
           j.stdout.count("\n") == 1, f"{j.stdout!r} {f.stdout!r} {j.stderr[-300:]!r}")
    p, c = py(["--format", "json", WAV]), cli(["--format", "json", WAV])
    try:
        pj, cj = json.loads(p.stdout), json.loads(c.out)
        ok = (p.stdout.startswith("{\n  \"file\": ") and pj.keys() == cj.keys() and
              pj["segments"] == cj["segments"] and pj["language"] == cj["language"])
    except ValueError as e:
        ok, pj = False, repr(e)
    report("--format json: the program's indented document", p.returncode == 0 and ok,
           f"{p.stdout[:200]!r} {p.stderr[-300:]!r}")
    d = os.path.join(tmp, "json")
    os.makedirs(d)
    for name in ("a.wav", "b.wav"):
        shutil.copy(WAV, os.path.join(d, name))
    p = py(["--format", "json", "a.wav", "b.wav"], cwd=d)
    docs = [read(os.path.join(d, n)) for n in ("a.json", "b.json")]
    report("--format json, two inputs: a.json and b.json beside them, each a document",
           p.returncode == 0 and p.stdout == "" and all(x.startswith("{\n") for x in docs),
           f"{docs!r} {p.stderr[-300:]!r}")
    p = py(["--temperature", "1.6,0", "--seed", "7", WAV])
    c = cli(["--temperature", "1.6,0", "--seed", "7", WAV])
    a = py(["--temperature", "1.6", "--sample", "--seed", "7", WAV])
    report("--temperature 1.6,0: the program's text (the fallback to greedy), not 1.6's",
           p.returncode == 0 and p.stdout.strip() == c.out.strip() and
           a.stdout.strip() != p.stdout.strip(), f"{p.stdout!r} {c.out!r} {a.stdout!r}")
    d1, d2 = os.path.join(tmp, "d1"), os.path.join(tmp, "d2")
    for d in (d1, d2):
        os.makedirs(d)
        shutil.copy(WAV, os.path.join(d, "x.wav"))
    for args, what in ((["--json", "--format", "srt", WAV], "--json"),
                       (["--output-dir", tmp, WAV], "--output-dir"),
                       (["--format", "srt", "--output-dir", tmp, os.path.join(d1, "x.wav"),
                         os.path.join(d2, "x.wav")], "same subtitle file")):
        p = py(args)
        report(f"usage error, exit 2: {' '.join(a if a != tmp else 'DIR' for a in args[:4])}",
               p.returncode == 2 and what in p.stderr and p.stdout == "", p.stderr[-300:])


def test_help():
    import hviske
    lib = hviske.load_library()
    p = py(["--help"])
    flat = " ".join(p.stdout.split())
    for flag, name in (("-l LANG, --language LANG", "language"), ("--chunking MODE", "chunking"),
                       ("--sample", "do_sample"), ("--temperature T", "temperature"),
                       ("--word-timestamps", "word_timestamps"), ("--beams N", "num_beams")):
        text = " ".join(lib.hv_param_find(name.encode()).contents.help.decode().split())
        report(f"--help: {flag} has the row {name}'s help", f"{flag} {text}" in flat,
               f"{text!r} not after {flag!r} in {p.stdout[-300:]!r}")


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    tmp = tempfile.mkdtemp(prefix="hv-py-subtitles-", dir=BINARY)
    try:
        test_stdout(tmp)
        test_files(tmp)
        test_inputs_kept(tmp)
        test_options(tmp)
        test_help()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
