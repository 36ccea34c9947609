"""Many files, many formats: hviske's --format lists, output files beside
the inputs, and whisper-cli's output flags, on the demo model
(models/demo) and examples/da-example.wav.

  * every format alone to standard output gives the bytes of its file
    (json and jsonl but for the timings);
  * every combination of the six formats (txt, jsonl, json, srt, vtt,
    csv), for one input (files beside it) and for two inputs in two
    directories (files into --output-dir, and beside each input): exactly
    the expected files, each equal to that format's file alone;
  * one document format with several inputs and no -o: each file beside
    its input;
  * whisper-cli's -otxt -osrt -ovtt -ocsv and their long forms: the same
    bytes as --format, in files named as whisper-cli names them
    (x.wav.srt), no file named after the flag; -oj and -ojf: whisper-cli's
    JSON layout (--format whisper-json; -ojf with tokens); -olrc, -owts
    refused (exit 2) naming what to use; "-o srt" refused, "-o ./srt" a
    file;
  * several formats with -o FILE or --stream: usage errors;
  * CSV: a header and one quoted row per segment, times in milliseconds.
"""
import csv
import io
import itertools
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, EXAMPLE, Run, finish, report  # noqa: E402

FORMATS = ["txt", "jsonl", "json", "srt", "vtt", "csv"]
BASE = ["-m", DEMO_MODEL, "-t", "1", "-q"]


def norm(fmt, data):
    """A file's content, with the timings and the file name left out of
    JSON."""
    if fmt in ("json", "jsonl"):
        return [dict(json.loads(x), timings=None, file=None) for x in
                (data.decode().splitlines() if fmt == "jsonl" else [data.decode()])]
    return data


def read(path):
    with open(path, "rb") as f:
        return f.read()


def files_in(d):
    out = []
    for root, _, names in os.walk(d):
        out += [os.path.relpath(os.path.join(root, n), d) for n in names]
    return sorted(out)


def main():
    tmp = tempfile.mkdtemp(prefix="hv-outputs-")
    src = os.path.join(tmp, "src")
    os.makedirs(os.path.join(src, "sub"))
    a = os.path.join(src, "a.wav")
    b = os.path.join(src, "sub", "b.wav")
    shutil.copy(EXAMPLE, a)
    shutil.copy(EXAMPLE, b)

    # each format alone: stdout, and its file
    ref = {}
    for fmt in FORMATS:
        d = os.path.join(tmp, "one-" + fmt)
        r = Run(BASE + ["--format", fmt, "--output-dir", d, a])
        ref[fmt] = read(os.path.join(d, "a." + fmt)) if r.rc == 0 else b""
        s = Run(BASE + ["--format", fmt, a])
        report(f"--format {fmt}: standard output equals its file",
               r.rc == 0 and s.rc == 0 and ref[fmt] and
               norm(fmt, s.raw) == norm(fmt, ref[fmt]), f"{r}\n{s}")

    # every combination, one input beside it, two inputs into a directory
    bad1, bad2 = [], []
    for n in range(1, len(FORMATS) + 1):
        for combo in itertools.combinations(FORMATS, n):
            spec = ",".join(combo)
            if n > 1:
                d = os.path.join(tmp, "beside-" + spec.replace(",", "-"))
                os.makedirs(d)
                x = os.path.join(d, "x.wav")
                shutil.copy(EXAMPLE, x)
                r = Run(BASE + ["--format", spec, x])
                want = sorted(["x.wav"] + [f"x.{f}" for f in combo])
                if r.rc != 0 or r.out or files_in(d) != want or any(
                        norm(f, read(os.path.join(d, "x." + f))) != norm(f, ref[f])
                        for f in combo):
                    bad1.append(f"{spec}: {r} {files_in(d)}")
            d = os.path.join(tmp, "dir-" + spec.replace(",", "-"))
            r = Run(BASE + ["--format", spec, "--output-dir", d, a, b])
            want = sorted(f"{s}.{f}" for s in ("a", "b") for f in combo)
            if r.rc != 0 or files_in(d) != want or any(
                    norm(f, read(os.path.join(d, s + "." + f))) !=
                    norm(f, ref[f]) for s in ("a", "b") for f in combo):
                bad2.append(f"{spec}: {r} {files_in(d) if os.path.isdir(d) else None}")
    report("every format combination, one input: its files beside it, each as alone",
           not bad1, "\n".join(bad1[:5]))
    report("every format combination, two inputs: the files in --output-dir, each as alone",
           not bad2, "\n".join(bad2[:5]))

    # one document format, several inputs, no -o: beside each input
    for fmt in ("srt", "json"):
        r = Run(BASE + ["--format", fmt, a, b])
        report(f"--format {fmt} with two inputs: each file beside its input",
               r.rc == 0 and r.out == "" and os.path.isfile(a[:-3] + fmt) and
               os.path.isfile(b[:-3] + fmt), str(r))
        for p in (a[:-3] + fmt, b[:-3] + fmt):
            if os.path.exists(p):
                os.remove(p)
    r = Run(BASE + ["--format", "txt,srt", a, b])
    report("--format txt,srt with two inputs: four files beside them",
           r.rc == 0 and all(os.path.isfile(p[:-3] + f) for p in (a, b) for f in ("txt", "srt")),
           str(r))

    # whisper-cli's flags: files named as whisper-cli names them, INPUT.EXT
    aliases = [("-otxt", "txt"), ("-osrt", "srt"), ("-ovtt", "vtt"), ("-ocsv", "csv"),
               ("--output-srt", "srt")]
    for flag, fmt in aliases:
        d = os.path.join(tmp, "alias" + flag)
        os.makedirs(d)
        x = os.path.join(d, "x.wav")
        shutil.copy(EXAMPLE, x)
        r = Run(BASE + [flag, x], cwd=d)
        report(f"{flag}: x.wav.{fmt} beside the input (whisper-cli's name), as --format {fmt}",
               r.rc == 0 and files_in(d) == sorted(["x.wav", "x.wav." + fmt]) and
               norm(fmt, read(os.path.join(d, "x.wav." + fmt))) == norm(fmt, ref[fmt]),
               f"{r} {files_in(d)}")
    for flag in ("-oj", "--output-json"):
        d = os.path.join(tmp, "alias" + flag)
        os.makedirs(d)
        x = os.path.join(d, "x.wav")
        shutil.copy(EXAMPLE, x)
        r = Run(BASE + [flag, x], cwd=d)
        w = Run(BASE + ["--format", "whisper-json", x])
        try:
            j = json.loads(read(os.path.join(d, "x.wav.json")))
        except (OSError, ValueError):
            j = {}
        report(f"{flag}: x.wav.json in whisper-cli's layout, as --format whisper-json",
               r.rc == 0 and files_in(d) == ["x.wav", "x.wav.json"] and
               read(os.path.join(d, "x.wav.json")) == w.raw and
               j.get("transcription") and "tokens" not in j["transcription"][0],
               f"{r} {files_in(d)} {j}")
    d = os.path.join(tmp, "alias-multi")
    os.makedirs(d)
    x = os.path.join(d, "x.wav")
    shutil.copy(EXAMPLE, x)
    r = Run(BASE + ["-otxt", "-osrt", "-ojf", x], cwd=d)
    try:
        tokens = json.loads(read(os.path.join(d, "x.wav.json")))["transcription"][0]["tokens"]
    except (OSError, ValueError, KeyError, IndexError):
        tokens = None
    report("-otxt -osrt -ojf: three files, the json with tokens",
           r.rc == 0 and files_in(d) == ["x.wav", "x.wav.json", "x.wav.srt", "x.wav.txt"] and
           tokens, f"{r} {files_in(d)}")
    for flag, hint in (("-olrc", "--format"), ("-owts", "--format")):
        r = Run(BASE + [flag, a], cwd=tmp)
        report(f"{flag}: refused, naming what to use", r.rc == 2 and flag in r.err and
               hint in r.err and not os.path.exists(os.path.join(tmp, flag[2:])), str(r))
    r = Run(BASE + ["-o", "srt", a], cwd=tmp)
    report("-o srt: refused (a format, not a file name)",
           r.rc == 2 and "--format" in r.err and not os.path.exists(os.path.join(tmp, "srt")),
           str(r))
    r = Run(BASE + ["-o", "./srt", a], cwd=tmp)
    report("-o ./srt: the file srt", r.rc == 0 and read(os.path.join(tmp, "srt")) == ref["txt"],
           str(r))

    for args in (["--format", "txt,srt", "-o", os.path.join(tmp, "o.txt")],
                 ["--format", "txt,srt", "--stream"], ["-osrt", "--stream"],
                 ["--format", "csv", "--stream"], ["--format", "nope"], ["--format", "txt,"]):
        r = Run(BASE + args + [a])
        report(f"{' '.join(args[:3])}: usage error", r.rc == 2 and r.out == "", str(r))

    rows = list(csv.reader(io.StringIO(ref["csv"].decode())))
    report("csv: header and one row per segment (ms, quoted text)",
           rows and rows[0] == ["start", "end", "text"] and len(rows) >= 2 and
           all(int(s) < int(e) for s, e, _ in rows[1:]) and
           b'"I morgen' in ref["csv"], repr(ref["csv"]))
    shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
