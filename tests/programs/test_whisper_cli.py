"""whisper.cpp's users at home (issue #52): whisper-cli's flags, file names
and JSON on hviske's command line, the format from -o's extension, and
model paths, on the demo model (models/demo) and examples/da-example.wav.

  * every flag of docs/CLI.md's "whisper-cli's flags" table: each one the
    table calls refused exits 2 naming it (short and long form), creating
    no file; -ot, -ml, -np, -pp, -tr, -of given as whisper-cli users write
    them are never read as -o/-m/-t clusters (no file named "t", no model
    "l");
  * the ones hviske has: -f, -ot/--offset-t and -d/--duration (the part,
    times on the input's timeline), -ml (cues of one line), -np (no
    warnings), -nt, -pp, -bs (= --beams), -tp/-tpi/-nf (= a --temperature
    list, whisper-cli's fallback), -sow,
    -ng, --vad;
  * whisper-cli's file names: -otxt -osrt beside the input as
    INPUT.wav.txt, -of BASE (one per input), -of - to standard output;
    --output-dir keeps hviske's names; conflicts refused;
  * -oj/-ojf: whisper-cli's JSON (transcription[] of timestamps, offsets,
    text; tokens with -ojf), its times and texts the CSV's;
  * -o FILE: the format from its extension (any case), a warning when
    --format says otherwise; --format in any case;
  * a closed pipe ("| head") ends the run quietly;
  * -m with a file or a hub id: what to give instead;
  * command lines from whisper.cpp's README run unchanged.
"""
import csv
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, TIMEOUT, Run, finish_in,  # noqa: E402
                    report, sentences_wav)

BASE = ["-m", DEMO_MODEL, "-t", "1"]


def files_in(d):
    return sorted(os.listdir(d))


def read(path):
    """A file's bytes, or None when it is not there."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def remove(d, *names):
    for n in names:
        if os.path.exists(os.path.join(d, n)):
            os.remove(os.path.join(d, n))


def whisper_table():
    """The rows of docs/CLI.md's whisper-cli table: (flags as written,
    what hviske does)."""
    with open(os.path.join(SOURCE_DIR, "docs", "CLI.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## whisper-cli's flags\n(.*?)(?=^## )", text, re.S | re.M)
    rows = []
    for line in (m.group(1) if m else "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`-"):
            rows.append((re.findall(r"`([^`]+)`", cells[0]), cells[1]))
    return rows


def json_of(r):
    try:
        return json.loads(r.out)
    except ValueError:
        return None


def test_table(tmp):
    rows = whisper_table()
    report("docs/CLI.md lists whisper-cli's flags", len(rows) >= 50, f"{len(rows)} rows")
    seen = set()
    for flags, what in rows:
        for spelled in flags:
            flag, _, value = spelled.partition(" ")
            seen.add(flag)
            if not what.startswith("refused"):
                continue
            d = os.path.join(tmp, "refused" + flag)
            os.makedirs(d)
            r = Run(BASE + [flag] + (["1"] if value else []) + [EXAMPLE], cwd=d)
            report(f"{spelled}: refused by its name, no file made",
                   r.rc == 2 and r.out == "" and f"{flag} (whisper-cli's) is not supported" in
                   r.err and files_in(d) == [], str(r))
    # every flag of whisper-cli's --help (examples/cli/cli.cpp) is in the table
    want = ("-h -t -p -ot -on -d -mc -ml -sow -bo -bs -ac -wt -et -lpt -nth -tp -tpi -debug "
            "-tr -di -tdrz -nf -otxt -ovtt -osrt -olrc -owts -fp -ocsv -oj -ojf -of -np -ps -pc "
            "--print-confidence -pp -nt -l -dl --prompt -m -f -oved -dtw -ls -ng -fa -sns "
            "--suppress-regex --grammar --grammar-rule --grammar-penalty --vad -vm -vt -vspd "
            "-vsd -vmsd -vp -vo").split()
    missing = [f for f in want if f not in seen]
    report("every flag of whisper-cli's --help is in the table", not missing, f"{missing}")


def test_misreads(tmp):
    d = os.path.join(tmp, "misread")
    os.makedirs(d)
    x = os.path.join(d, "u4.wav")
    shutil.copy(EXAMPLE, x)
    plain = Run(BASE + ["-q", x])
    r = Run(BASE + ["-ot", "500", "u4.wav"], cwd=d)
    report("-ot 500: an offset, no file named 't', 500 not an input",
           r.rc == 0 and files_in(d) == ["u4.wav"] and r.out.strip(), str(r))
    r = Run(BASE + ["-ml", "10", "u4.wav"], cwd=d)
    report("-ml 10: the line length, the model kept", r.rc == 0 and r.out == plain.out, str(r))
    for args in (["-np"], ["-nt"], ["-pp"], ["-sow"], ["-ng"], ["-np", "-nt", "-pp"]):
        r = Run(BASE + args + ["u4.wav"], cwd=d)
        report(f"{' '.join(args)}: whole flags, the transcript as without them",
               r.rc == 0 and r.out == plain.out and files_in(d) == ["u4.wav"], str(r))
    r = Run(BASE + ["-ojunk", "u4.wav"], cwd=d)
    report("-ojunk (no flag of either): refused, no file 'junk'",
           r.rc == 2 and "-ojunk" in r.err and files_in(d) == ["u4.wav"], str(r))


def test_mapped(tmp):
    two = sentences_wav(os.path.join(tmp, "two.wav"), 2, 1.0)
    with_words = BASE + ["-q", "--format", "json", "--word-timestamps"]
    whole = json_of(Run(with_words + [two]))
    clip = json_of(Run(with_words + [EXAMPLE]))
    import wave
    with wave.open(EXAMPLE, "rb") as w:
        clip_ms = round(w.getnframes() * 1000 / w.getframerate())
    second = clip_ms + 1000
    for flags in (["-ot", str(second)], ["--offset-t", str(second)]):
        part = json_of(Run(with_words + flags + [two]))
        moved = part and clip and [round(w["start"] - second / 1000, 3) for w in part["words"]]
        report(f"{flags[0]} {second}: the second copy alone, its times on the input's timeline",
               part and part["text"] == clip["text"] and part["duration"] == whole["duration"]
               and moved == [w["start"] for w in clip["words"]],
               f"{part and part['text']!r} {moved} {clip and [w['start'] for w in clip['words']]}")
    head = json_of(Run(with_words + ["-d", str(clip_ms), two]))
    times = [(w["word"], w["start"], w["end"]) for w in clip["words"]] if clip else None
    report("-d: the first copy alone (a few samples short of it: the same words and times)",
           head and head["text"] == clip["text"] and
           [(w["word"], w["start"], w["end"]) for w in head["words"]] == times,
           f"{head and head['text']!r}")
    head = json_of(Run(with_words + ["--duration", str(clip_ms), "-ot", "0", two]))
    report("--duration with -ot 0: the same", head and head["text"] == clip["text"], "")
    r = Run(BASE + ["-ot", "99999999", EXAMPLE])
    report("-ot beyond the end: the file fails, naming the offset",
           r.rc == 1 and "offset" in r.err, str(r))
    r = Run(BASE + ["-ot", "1.5", EXAMPLE])
    report("-ot 1.5: refused (milliseconds, an integer)", r.rc == 2 and "-ot" in r.err, str(r))

    srt = Run(BASE + ["-q", "--format", "srt", "-ml", "12", two])
    cues = [c.split("\n")[2:] for c in srt.out.strip().split("\n\n")] if srt.rc == 0 else []
    report("-ml 12: cues of one line of at most 12 characters (a longer word alone)",
           cues and all(len(c) == 1 and (len(c[0]) <= 12 or " " not in c[0]) for c in cues),
           srt.out)
    r = Run(BASE + ["-ml", "5", EXAMPLE])
    report("-ml 5: refused, saying lines hold at least 10 characters",
           r.rc == 2 and "-ml" in r.err and "10" in r.err, str(r))
    r = Run(BASE + ["--top-k", "5", EXAMPLE])
    n = Run(BASE + ["-np", "--top-k", "5", EXAMPLE])
    report("-np: no warnings (--top-k without sampling warns otherwise)",
           "warning" in r.err and n.rc == 0 and n.err == "" and n.out == r.out, f"{r}\n{n}")
    n = Run(BASE + ["-nt", "--print-timestamps", EXAMPLE])
    report("-nt with --print-timestamps: refused", n.rc == 2 and "-nt" in n.err, str(n))
    p = Run(BASE + ["-pp", EXAMPLE])
    report("-pp: progress lines, as --progress", p.rc == 0 and ": progress 100.0%" in p.err, str(p))
    for a, b in ((["-bs", "2"], ["--beams", "2"]),
                 (["-tp", "1.5", "--seed", "3"], ["--temperature", "1.5", "--seed", "3"]),
                 (["-tp", "0", "-tpi", "0.25", "--seed", "3"],
                  ["--temperature", "0,0.25,0.5,0.75,1", "--seed", "3"]),
                 (["-tp", "0.6", "--seed", "5"], ["--temperature", "0.6,0.8,1", "--seed", "5"]),
                 (["-tp", "0.4", "-nf", "--seed", "3"], ["--temperature", "0.4", "--seed", "3"]),
                 (["-tpi", "0", "--seed", "3"], ["--temperature", "0", "--seed", "3"]),
                 (["-lpt", "none", "-tp", "0.6", "--seed", "5"],
                  ["--temperature", "0.6,0.8,1", "--log-prob-threshold", "none", "--seed", "5"]),
                 (["-lpt", "0", "--seed", "3"],
                  ["--temperature", "0,0.2,0.4,0.6,0.8,1", "--log-prob-threshold", "0",
                   "--seed", "3"]),
                 (["-lpt", "none", "--temperature", "1.6", "--seed", "7"],
                  ["--temperature", "1.6", "--seed", "7"]),
                 (["--beam-size", "3"], ["--beams", "3"]), (["--vad"], ["--chunking", "vad"])):
        x = json_of(Run(BASE + ["-q", "--json"] + a + [EXAMPLE]))
        y = json_of(Run(BASE + ["-q", "--json"] + b + [EXAMPLE]))
        report(f"{' '.join(a)}: as {' '.join(b)}", x and y and x["tokens"] == y["tokens"], "")
    r = Run(BASE + ["-q", "--json", "-nth", "0", "-lpt", "0", EXAMPLE])
    report("-nth 0 -lpt 0: the fallback on as whisper-cli has it, the clip silence",
           json_of(r) is not None and json_of(r)["text"] == "", str(r))
    r = Run(BASE + ["-q", "-et", "2", EXAMPLE])
    report("-et 2: refused, naming --compression-ratio-threshold",
           r.rc == 2 and "--compression-ratio-threshold" in r.err, str(r))
    # values that ask for what hviske does anyway: a notice, the same transcript
    # (issue #61); other values refused naming the flag and its value
    plain = Run(BASE + ["-q", EXAMPLE])
    for args in (["-mc", "0"], ["--max-context", "0"], ["-bo", "5"], ["-bo", "1"],
                 ["-et", "2.40"], ["-p", "1"], ["-on", "0"], ["-ac", "0"], ["-wt", "0.01"],
                 ["-sns"], ["--suppress-nst"], ["--prompt", "Hviske, Aarhus"],
                 ["--vad", "-vm", "models/ggml-silero-v5.1.2.bin"]):
        r = Run(BASE + ["-q"] + args + [EXAMPLE])
        notes = [x for x in r.err.splitlines() if x.startswith("hviske: note: ")]
        report(f"{' '.join(args)}: accepted with a one-line notice, the same transcript",
               r.rc == 0 and r.out == plain.out and len(notes) == 1 and
               notes[0].startswith("hviske: note: " + (args[0] if args[0] != "--vad" else "-vm")),
               str(r))
    r = Run(BASE + ["-q", "-np", "-mc", "0", EXAMPLE])
    report("-np -mc 0: no notice", r.rc == 0 and r.err == "", str(r))
    for args in (["-mc", "-1"], ["-bo", "3"], ["-et", "2.8"], ["-p", "2"], ["-on", "3"],
                 ["-ac", "512"], ["-wt", "0.5"]):
        r = Run(BASE + args + [EXAMPLE])
        report(f"{' '.join(args)}: refused, naming the flag and value",
               r.rc == 2 and f"{' '.join(args)} (whisper-cli's) is not supported" in r.err and
               r.out == "", str(r))
    ggml = os.path.join(tmp, "ggml-silero-v5.1.2.bin")
    with open(ggml, "wb") as f:
        f.write(b"lmgg" + bytes(60))
    r = Run(BASE + ["-q", "--vad", "-vm", ggml, EXAMPLE])
    report("--vad -vm GGML-FILE (by its magic): the bundled detector, a notice",
           r.rc == 0 and r.out == plain.out and "whisper.cpp's Silero file" in r.err, str(r))
    r = Run(BASE + ["-tp", "0", "-tpi", "0.01", EXAMPLE])
    report("-tpi 0.01 from 0: refused, more temperatures than --temperature takes",
           r.rc == 2 and "-tpi" in r.err and "at most 6" in r.err and r.out == "", str(r))
    r = Run(BASE + ["-tpi", "2", EXAMPLE])
    report("-tpi 2: refused, naming the flag", r.rc == 2 and "-tpi" in r.err, str(r))
    r = Run(BASE + ["-q", "-f", EXAMPLE, "-f", two])
    report("-f FILE -f FILE: two inputs", r.rc == 0 and len(r.lines()) == 2 and
           r.lines()[0].startswith(EXAMPLE + ": ") and r.lines()[1].startswith(two + ": "), str(r))


def test_names(tmp):
    d = os.path.join(tmp, "names")
    os.makedirs(d)
    shutil.copy(EXAMPLE, os.path.join(d, "u4.wav"))
    shutil.copy(EXAMPLE, os.path.join(d, "u5.wav"))
    srt = Run(BASE + ["-q", "--format", "srt", EXAMPLE]).raw
    txt = Run(BASE + ["-q", EXAMPLE]).raw
    r = Run(BASE + ["-q", "-otxt", "-osrt", "u4.wav"], cwd=d)
    got = read(os.path.join(d, "u4.wav.srt"))
    report("-otxt -osrt u4.wav: u4.wav.txt and u4.wav.srt, as whisper-cli names them",
           r.rc == 0 and
           files_in(d) == ["u4.wav", "u4.wav.srt", "u4.wav.txt", "u5.wav"] and got == srt, str(r))
    # and the transcript on standard output, as whisper-cli prints it (issue #61)
    timed = Run(BASE + ["-q", "--print-timestamps", "u4.wav"], cwd=d).out
    report("-otxt -osrt: the transcript, timed, on standard output as well",
           r.out == timed and "-->" in timed and txt.decode().strip() in timed,
           f"{r.out!r} {timed!r}")
    r2 = Run(BASE + ["-q", "-osrt", "-nt", "u4.wav"], cwd=d)
    report("-osrt -nt: the transcript without times on standard output",
           r2.rc == 0 and r2.raw == txt, str(r2))
    r3 = Run(BASE + ["-q", "-osrt", "-of", "-", "u4.wav"], cwd=d)
    report("-osrt -of -: the SubRip alone on standard output", r3.rc == 0 and r3.raw == srt,
           str(r3))
    remove(d, "u4.wav.srt", "u4.wav.txt", "u4.txt", "u4.srt")
    r = Run(BASE + ["-q", "-osrt", "-of", "a", "-of", "sub-b", "u4.wav", "u5.wav"], cwd=d)
    report("-of a -of sub-b with two inputs: a.srt and sub-b.srt",
           r.rc == 0 and files_in(d) == ["a.srt", "sub-b.srt", "u4.wav", "u5.wav"], str(r))
    remove(d, "a.srt", "sub-b.srt", "u4.srt", "u5.srt")
    r = Run(BASE + ["-q", "-of", "base", "u4.wav"], cwd=d)
    report("-of base alone: base.txt", r.rc == 0 and files_in(d) == ["base.txt", "u4.wav", "u5.wav"]
           and read(os.path.join(d, "base.txt")) == txt, str(r))
    remove(d, "base.txt")
    r = Run(BASE + ["-q", "-osrt", "-of", "-", "u4.wav"], cwd=d)
    report("-of - -osrt: the SRT on standard output", r.rc == 0 and r.raw == srt and
           files_in(d) == ["u4.wav", "u5.wav"], str(r))
    out = os.path.join(tmp, "names-out")
    r = Run(BASE + ["-q", "-osrt", "--output-dir", out, os.path.join(d, "u4.wav")])
    report("-osrt --output-dir DIR: hviske's names there (DIR/u4.srt)",
           r.rc == 0 and files_in(out) == ["u4.srt"], str(r))
    r = Run(BASE + ["-q", "--format", "txt,srt", "u4.wav"], cwd=d)
    report("--format txt,srt: hviske's names beside the input (u4.txt, u4.srt)",
           r.rc == 0 and files_in(d) == ["u4.srt", "u4.txt", "u4.wav", "u5.wav"], str(r))
    remove(d, "u4.srt", "u4.txt")
    with open(EXAMPLE, "rb") as f:
        r = Run(BASE + ["-q", "-otxt", "-"], stdin=f, cwd=d)
    report("-otxt with standard input: stdin.txt", r.rc == 0 and "stdin.txt" in files_in(d), str(r))
    for args in (["-of", "x", "-o", "y.txt"], ["-of", "x", "--output-dir", out],
                 ["-of", "-", "-otxt", "-osrt"], ["-of", "a", "-of", "b"],
                 ["-osrt", "--stream"], ["-oj", "--stream"]):
        r = Run(BASE + args + ["u4.wav"], cwd=d)
        report(f"{' '.join(args)}: usage error", r.rc == 2 and r.out == "", str(r))


def test_whisper_json(tmp):
    d = os.path.join(tmp, "wjson")
    os.makedirs(d)
    x = os.path.join(d, "u4.wav")
    shutil.copy(EXAMPLE, x)
    r = Run(BASE + ["-q", "-oj", "-ojf", "u4.wav"], cwd=d)
    try:
        with open(os.path.join(d, "u4.wav.json"), encoding="utf-8") as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = {}
    rows = list(csv.reader(io.StringIO(Run(BASE + ["-q", "--format", "csv", x]).out)))[1:]
    hv = json_of(Run(BASE + ["-q", "--format", "json", x]))
    tr = j.get("transcription") or []
    stamp = re.compile(r"^\d\d:\d\d:\d\d,\d{3}$")

    def ms(t):
        h, m, s = t.replace(",", ".").split(":")
        return round((int(h) * 3600 + int(m) * 60 + float(s)) * 1000)
    report("-oj -ojf: whisper-cli's layout (systeminfo, model, params, result, transcription)",
           r.rc == 0 and set(j) == {"systeminfo", "model", "params", "result", "transcription"}
           and j["params"]["language"] == "da" and j["result"]["language"] == "da" and
           j["params"]["translate"] is False, json.dumps(j)[:400])
    report("transcription[]: the CSV's segments, timestamps and offsets in milliseconds",
           tr and len(tr) == len(rows) and all(
               stamp.match(e["timestamps"]["from"]) and stamp.match(e["timestamps"]["to"]) and
               e["offsets"]["from"] == int(row[0]) and e["offsets"]["to"] == int(row[1]) and
               ms(e["timestamps"]["from"]) == int(row[0]) and e["text"] == row[2]
               for e, row in zip(tr, rows)), f"{tr} {rows}")
    toks = [t for e in tr for t in e.get("tokens", [])]
    report("-ojf: the tokens (id, text, p, times of their word), hviske's tokens",
           toks and [t["id"] for t in toks] == hv["tokens"] and
           all(0 < t["p"] <= 1 and "offsets" in t and t["t_dtw"] == -1 for t in toks) and
           "".join(t["text"] for t in tr[0]["tokens"]).strip() == tr[0]["text"],
           json.dumps(toks)[:400])
    w = Run(BASE + ["-q", "--format", "whisper-json", x])
    k = json_of(w)
    report("--format whisper-json: -oj's layout without tokens",
           w.rc == 0 and k and [e["text"] for e in k["transcription"]] == [e["text"] for e in tr]
           and all("tokens" not in e for e in k["transcription"]), str(w))


def test_extension(tmp):
    for ext, fmt in ((".srt", "srt"), (".VTT", "vtt"), (".json", "json"), (".jsonl", "jsonl"),
                     (".csv", "csv"), (".txt", "txt"), (".out", "txt")):
        out = os.path.join(tmp, "out" + ext)
        r = Run(BASE + ["-q", "-o", out, EXAMPLE])
        ref = Run(BASE + ["-q", "--format", fmt, EXAMPLE])
        got = read(out) or b""
        try:
            same = got == ref.raw if fmt not in ("json", "jsonl") else \
                json.loads(got)["text"] == json.loads(ref.raw)["text"]
        except ValueError:
            same = False
        report(f"-o out{ext}: {fmt}", r.rc == 0 and same, f"{r} {got[:200]!r}")
    out = os.path.join(tmp, "said.srt")
    r = Run(BASE + ["--format", "txt", "-o", out, EXAMPLE])
    got = read(out)
    report("--format txt -o said.srt: txt, and a warning naming both",
           r.rc == 0 and got == Run(BASE + ["-q", EXAMPLE]).raw and "said.srt" in r.err and
           "srt" in r.err and "txt" in r.err and "warning" in r.err, str(r))
    a = Run(BASE + ["-q", "--format", "SRT", EXAMPLE])
    b = Run(BASE + ["-q", "--format", "srt", EXAMPLE])
    report("--format SRT: any case", a.rc == 0 and a.raw == b.raw, str(a))


def test_pipe(tmp):
    """hviske --json a b c | head -1: the reader goes away after a line."""
    p = subprocess.Popen([CLI] + BASE + ["-q", "--json", EXAMPLE, EXAMPLE, EXAMPLE],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(TIMEOUT)
    report("a closed pipe (| head): a quiet end, by SIGPIPE, nothing on stderr",
           first.startswith(b"{") and rc == -signal.SIGPIPE and err == "", f"rc={rc} {err!r}")


def test_models(tmp):
    r = Run(["-m", os.path.join(DEMO_MODEL, "model.safetensors"), EXAMPLE])
    report("-m DIR/model.safetensors: give the checkpoint's directory, DIR",
           r.rc == 1 and r.out == "" and f"give the checkpoint's directory, {DEMO_MODEL} " in r.err,
           str(r))
    r = Run(["-m", "syvai/hviske-v5.3", EXAMPLE], cwd=tmp)
    report("-m syvai/hviske-v5.3 (a hub id): how to fetch it",
           r.rc == 1 and "scripts/download-model.sh syvai/hviske-v5.3" in r.err and
           "-m hviske-v5.3" in r.err, str(r))
    r = Run(["-m", os.path.join(tmp, "nowhere"), EXAMPLE])
    report("-m a missing directory: no such file, no download hint", r.rc == 1 and
           f"{tmp}/nowhere: no such file or directory" in r.err and
           "download-model" not in r.err, str(r))
    # whisper.cpp's habits (issue #61): a ggml file's path, missing or there
    os.makedirs(os.path.join(tmp, "models", "demo"), exist_ok=True)
    for f in ("config.json", "tokenizer.model"):
        shutil.copy(os.path.join(DEMO_MODEL, f), os.path.join(tmp, "models", "demo", f))
    r = Run(["-m", "models/ggml-base.en.bin", EXAMPLE], cwd=tmp)
    report("-m models/ggml-base.en.bin (missing): no such file, whisper.cpp's files, "
           "the checkpoints beside it, no download hint",
           r.rc == 1 and "models/ggml-base.en.bin: no such file or directory" in r.err and
           "ggml model files do not run" in r.err and "checkpoints in models: models/demo" in r.err
           and "download-model" not in r.err and "huggingface" not in r.err, str(r))
    r = Run(["-m", "models/nope", EXAMPLE], cwd=tmp)
    report("-m models/nope (models/ exists): no hub hint", r.rc == 1 and
           "models/nope: no such file or directory" in r.err and "huggingface" not in r.err, str(r))
    r = Run(["-m", "nope", EXAMPLE], cwd=tmp)
    report("-m nope: no such file or directory, not .../config.json", r.rc == 1 and
           "nope: no such file or directory" in r.err and "config.json:" not in r.err, str(r))
    r = Run(["-m", "models", EXAMPLE], cwd=tmp)
    report("-m models (a directory, no config.json): not a checkpoint, what one holds, "
           "the checkpoints inside", r.rc == 1 and "models: a directory, but not a checkpoint" in
           r.err and "tokenizer.model" in r.err and "models/demo" in r.err, str(r))
    ggml = os.path.join(tmp, "models", "ggml-tiny.bin")
    with open(ggml, "wb") as f:
        f.write(struct.pack("<I", 0x67676D6C) + bytes(60))
    r = Run(["-m", ggml, EXAMPLE], cwd=tmp)
    report("-m ggml-tiny.bin (whisper.cpp's magic): what to fetch instead", r.rc == 1 and
           "a whisper.cpp model file (ggml)" in r.err and "download-model.sh" in r.err, str(r))


def test_readme(tmp):
    """Command lines of whisper.cpp's README, with this model and clip."""
    d = os.path.join(tmp, "readme")
    os.makedirs(d)
    shutil.copy(EXAMPLE, os.path.join(d, "jfk.wav"))
    lines = [
        (["-f", "jfk.wav"], 0, []),
        (["-f", "jfk.wav", "-otxt", "-osrt", "-ovtt", "-ocsv", "-oj"], 0,
         ["jfk.wav.csv", "jfk.wav.json", "jfk.wav.srt", "jfk.wav.txt", "jfk.wav.vtt"]),
        (["-f", "jfk.wav", "-ml", "16"], 0, []),
        (["-f", "jfk.wav", "-t", "1", "-l", "da", "-pp", "-np"], 0, []),
        (["-f", "jfk.wav", "-owts"], 2, []),
        (["-f", "jfk.wav", "-tr"], 2, []),
    ]
    for args, rc, files in lines:
        r = Run(["-m", DEMO_MODEL] + args, cwd=d)
        made = sorted(set(files_in(d)) - {"jfk.wav"})
        report(f"whisper-cli -m MODEL {' '.join(args)}: exit {rc}",
               r.rc == rc and made == files and (rc != 0 or files or r.out.strip()), str(r))
        for p in made:
            os.remove(os.path.join(d, p))


def main():
    tmp = tempfile.mkdtemp(prefix="hv-whisper-")
    test_table(tmp)
    test_misreads(tmp)
    test_mapped(tmp)
    test_names(tmp)
    test_whisper_json(tmp)
    test_extension(tmp)
    test_pipe(tmp)
    test_models(tmp)
    test_readme(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
