"""Archive batches through the `hviske` command line, without a scheduler
(docs/SCALING.md, "Archive batches"; tests/deploy/test_slurm.py runs them under
a real Slurm).

Covers --files-from (a file or standard input; blank lines, CRLF, spaces,
a last line without a line break, relative paths; NUL bytes, overlong
lines, "-", empty and missing lists refused), --shard K/N (every input in
exactly one shard for several N, outputs equal to one unsharded run, empty
shards, malformed values), the shard from the environment (Slurm arrays
with MIN and STEP, Kubernetes' JOB_COMPLETION_INDEX with --shard-count or
--shard-count-env, what wins over what, every inconsistency refused),
--skip-existing (outputs kept untouched, a leftover temporary file not
taken for an output, no model loaded when nothing is left), --summary
(keys, statuses, error messages as on standard error, appending) and the
exit status when an input fails.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, TIMEOUT, Run, check,  # noqa: E402
                    finish, report)

SUMMARY_KEYS = {"input", "output", "status", "error", "audio_seconds", "processing_seconds"}
SCHEDULER_VARS = ("JOB_COMPLETION_INDEX", "NSHARDS")


def R(args, cwd, env=None, stdin=b""):
    """One run of hviske in directory cwd with extra environment (none of
    the caller's scheduler variables)."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SLURM_") and k not in SCHEDULER_VARS}
    e.update(env or {})
    return Run(args, input_bytes=stdin, env=e, cwd=cwd)


def summary(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(x) for x in f.read().split("\n") if x]
    except OSError:
        return []


def outname(inp, ext="txt"):
    return os.path.splitext(os.path.basename(inp))[0] + "." + ext


def make_inputs(d):
    """Seven distinct clips, one with a space in its name."""
    names = ["a.wav", "b.flac", "c d.wav", "e.wav", "f.flac", "g.wav", "h.wav"]
    effects = [[], ["tempo", "1.1"], ["pad", "1", "0"], ["gain", "-8"], ["rate", "22050"],
               ["repeat", "1"], ["tempo", "0.9"]]
    os.makedirs(os.path.join(d, "audio"))
    for n, e in zip(names, effects):
        subprocess.run(["sox", EXAMPLE, os.path.join(d, "audio", n)] + e, check=True,
                       capture_output=True)
    return ["audio/" + n for n in names]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def base(d):
    return ["-m", DEMO_MODEL, "-t", "1", "-q"]


def test_shards(d, inputs):
    write(os.path.join(d, "list"), "".join(x + "\n" for x in inputs))
    ref = R(base(d) + ["--files-from", "list", "--output-dir", "ref"], d)
    check("one run over the list writes every output", ref,
          ref.rc == 0 and sorted(os.listdir(os.path.join(d, "ref")))
          == sorted(map(outname, inputs)))
    refstdout = R(base(d) + ["--files-from", "list"], d)
    lines = refstdout.out.split("\n")[:-1]
    check("the list to standard output: one line per input", refstdout,
          refstdout.rc == 0 and len(lines) == len(inputs))
    for n in (1, 2, 3, 7, 9):
        seen, outs_ok, stdout_ok, rcs = [], True, True, []
        out = os.path.join(d, f"shard{n}")
        for k in range(n):
            s = os.path.join(d, f"sum{n}-{k}.jsonl")
            r = R(base(d) + ["--files-from", "list", "--output-dir", out, "--shard", f"{k}/{n}",
                             "--summary", s], d)
            rcs.append(r.rc)
            got = [x["input"] for x in summary(s)]
            if got != inputs[k::n] or r.crashed():
                outs_ok = False
            seen += got
            r2 = R(base(d) + ["--files-from", "list", "--shard", f"{k}/{n}"], d)
            if r2.out.split("\n")[:-1] != lines[k::n] or r2.rc != 0:
                stdout_ok = False
        same = all(open(os.path.join(out, outname(i)), "rb").read()
                   == open(os.path.join(d, "ref", outname(i)), "rb").read()
                   for i in inputs if os.path.exists(os.path.join(out, outname(i))))
        report(f"--shard K/{n}: every input in exactly one shard, i mod {n} = K, in order",
               outs_ok and sorted(seen) == sorted(inputs) and rcs == [0] * n,
               f"inputs seen {seen} exit statuses {rcs}")
        report(f"--shard K/{n}: outputs and standard output equal the unsharded run",
               same and stdout_ok and sorted(os.listdir(out)) == sorted(map(outname, inputs)),
               f"outputs {sorted(os.listdir(out))}")
    r = R(base(d) + ["--shard", "1/2", inputs[0], inputs[1], inputs[2]], d)
    check("--shard with FILE operands", r, r.rc == 0 and r.out.split("\n")[:-1] == [lines[1]])
    r = R(base(d) + ["--shard", "5/9", inputs[0]], d)
    check("an empty shard: exit 0, no output", r, r.rc == 0 and r.out == "")
    for bad in ("1", "1/", "/2", "a/b", "2/2", "0/0", "3/2", "-1/2", "1/2/3", " 1/2", "1/2 ",
                "+1/2", "1/+2", "0x1/2", "99999999999/1", "1/99999999999", ""):
        r = R(base(d) + ["--shard", bad, inputs[0]], d)
        check(f"--shard {bad!r} refused", r,
              r.rc == 2 and r.out == "" and "--shard" in r.err and "K/N" in r.err)


def test_env(d, inputs):
    lst = ["--files-from", "list"]

    def shard_of(name, env, extra=(), expect=None):
        s = os.path.join(d, f"env-{name}.jsonl")
        if os.path.exists(s):
            os.remove(s)
        r = R(base(d) + lst + ["--summary", s] + list(extra), d, env)
        got = [x["input"] for x in summary(s)]
        check(name, r, r.rc == 0 and got == expect, f"inputs {got}, wanted {expect}")

    shard_of("SLURM_ARRAY_TASK_ID and _COUNT", {"SLURM_ARRAY_TASK_ID": "1",
             "SLURM_ARRAY_TASK_COUNT": "3"}, expect=inputs[1::3])
    shard_of("SLURM_ARRAY_TASK_MIN: an array from 5", {
        "SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "5",
        "SLURM_ARRAY_TASK_MAX": "7"}, expect=inputs[2::3])
    shard_of("SLURM_ARRAY_TASK_STEP: --array=0-4:2", {
        "SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0",
        "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_STEP": "2"}, expect=inputs[2::3])
    shard_of("explicit --shard wins over Slurm's variables", {
        "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"}, ["--shard", "0/2"],
        expect=inputs[0::2])
    shard_of("explicit --shard wins over JOB_COMPLETION_INDEX", {"JOB_COMPLETION_INDEX": "1"},
             ["--shard", "0/2"], expect=inputs[0::2])
    shard_of("JOB_COMPLETION_INDEX with --shard-count", {"JOB_COMPLETION_INDEX": "2"},
             ["--shard-count", "4"], expect=inputs[2::4])
    shard_of("JOB_COMPLETION_INDEX with --shard-count-env", {
        "JOB_COMPLETION_INDEX": "0", "NSHARDS": "3"}, ["--shard-count-env", "NSHARDS"],
        expect=inputs[0::3])
    shard_of("Slurm's variables win over JOB_COMPLETION_INDEX", {
        "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "0"},
        ["--shard-count", "2"], expect=inputs[1::2])
    shard_of("no scheduler variables: every input", {}, expect=inputs)
    s = os.path.join(d, "env-operands.jsonl")
    r = R(base(d) + ["--summary", s] + inputs[:3], d,
          {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "JOB_COMPLETION_INDEX": "1"})
    check("FILE operands are not sharded by the environment", r,
          r.rc == 0 and [x["input"] for x in summary(s)] == inputs[:3])

    def refused(name, env, extra, mentions):
        r = R(base(d) + lst + list(extra), d, env)
        missing = [m for m in mentions if m not in r.err]
        check(name, r, r.rc == 2 and r.out == "" and not missing,
              f"expected exit 2 and stderr naming {missing}")

    refused("SLURM_ARRAY_TASK_ID without _COUNT", {"SLURM_ARRAY_TASK_ID": "1"}, [],
            ["SLURM_ARRAY_TASK_COUNT"])
    refused("SLURM_ARRAY_TASK_ID beyond the array", {
        "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3"}, [],
        ["SLURM_ARRAY_TASK_ID=3"])
    refused("SLURM_ARRAY_TASK_ID below _MIN", {
        "SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "3",
        "SLURM_ARRAY_TASK_MIN": "4"}, [], ["SLURM_ARRAY_TASK_MIN=4"])
    refused("a Slurm array that is not one range (--array=0,5,9)", {
        "SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0",
        "SLURM_ARRAY_TASK_MAX": "9"}, [], ["not one range", "--shard"])
    refused("SLURM_ARRAY_TASK_ID not a number", {
        "SLURM_ARRAY_TASK_ID": "x1", "SLURM_ARRAY_TASK_COUNT": "3"}, [],
        ["SLURM_ARRAY_TASK_ID='x1'"])
    refused("SLURM_ARRAY_TASK_COUNT 0", {
        "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "0"}, [],
        ["SLURM_ARRAY_TASK_COUNT='0'"])
    refused("--shard-count contradicting SLURM_ARRAY_TASK_COUNT", {
        "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"}, ["--shard-count", "4"],
        ["--shard-count 4"])
    refused("JOB_COMPLETION_INDEX without a count", {"JOB_COMPLETION_INDEX": "0"}, [],
            ["JOB_COMPLETION_INDEX", "--shard-count"])
    refused("JOB_COMPLETION_INDEX not below --shard-count", {"JOB_COMPLETION_INDEX": "3"},
            ["--shard-count", "3"], ["JOB_COMPLETION_INDEX=3"])
    refused("JOB_COMPLETION_INDEX not a number", {"JOB_COMPLETION_INDEX": "-1"},
            ["--shard-count", "3"], ["JOB_COMPLETION_INDEX='-1'"])
    refused("--shard-count-env naming an unset variable", {"JOB_COMPLETION_INDEX": "0"},
            ["--shard-count-env", "NSHARDS"], ["NSHARDS is not set"])
    refused("--shard-count-env naming a variable that is not a count", {
        "JOB_COMPLETION_INDEX": "0", "NSHARDS": "0"}, ["--shard-count-env", "NSHARDS"],
        ["NSHARDS='0'"])
    refused("--shard-count without a task index in the environment", {},
            ["--shard-count", "3"], ["JOB_COMPLETION_INDEX", "--shard K/N"])
    refused("--shard with --shard-count", {}, ["--shard", "0/2", "--shard-count", "2"],
            ["--shard-count"])
    refused("--shard-count with --shard-count-env", {"JOB_COMPLETION_INDEX": "0"},
            ["--shard-count", "2", "--shard-count-env", "NSHARDS"], ["--shard-count-env"])
    refused("--shard-count 0", {"JOB_COMPLETION_INDEX": "0"}, ["--shard-count", "0"],
            ["--shard-count"])
    r = R(base(d) + ["--shard-count", "2", inputs[0]], d, {"JOB_COMPLETION_INDEX": "0"})
    check("--shard-count without --files-from refused", r,
          r.rc == 2 and "--files-from" in r.err)


def test_lists(d, inputs):
    # blank lines, CRLF, spaces, no final line break: positions count
    # entries, not lines
    write(os.path.join(d, "messy"),
          "\n" + inputs[0] + "\r\n\r\n\n" + inputs[1] + "\n" + inputs[2] + "\n\n" + inputs[3])
    s = os.path.join(d, "messy.jsonl")
    r = R(base(d) + ["--files-from", "messy", "--summary", s, "--shard", "1/2"], d)
    check("blank lines skipped, \\r\\n and a last line without \\n read, shard by entry", r,
          r.rc == 0 and [x["input"] for x in summary(s)] == [inputs[1], inputs[3]])
    s = os.path.join(d, "stdin.jsonl")
    r = R(base(d) + ["--files-from", "-", "--summary", s], d,
          stdin=("\n".join(inputs[:3]) + "\n").encode())
    check("--files-from - reads the list from standard input", r,
          r.rc == 0 and [x["input"] for x in summary(s)] == inputs[:3]
          and len(r.out.split("\n")) == 4)
    sub = os.path.join(d, "audio")
    write(os.path.join(d, "rel"), os.path.basename(inputs[0]) + "\n")
    s = os.path.join(d, "rel.jsonl")
    r = R(base(d) + ["--files-from", os.path.join(d, "rel"), "--summary", s], sub)
    check("relative paths are relative to the current directory", r,
          r.rc == 0 and [x["status"] for x in summary(s)] == ["ok"])
    r = R(base(d) + ["--files-from", os.path.join(d, "rel"), "--summary", s], d)
    check("... not to the list's directory", r,
          r.rc == 1 and summary(s)[-1]["status"] == "error")
    abs_list = os.path.join(d, "abs")
    write(abs_list, os.path.join(d, inputs[0]) + "\n")
    r = R(base(d) + ["--files-from", abs_list], "/")
    check("absolute paths", r, r.rc == 0 and r.out.count("\n") == 1)

    def refused(name, data, mentions, listname="bad"):
        if data is not None:
            write(os.path.join(d, listname), data)
        r = R(base(d) + ["--files-from", listname], d)
        missing = [m for m in mentions if m not in r.err]
        check(name, r, r.rc == 2 and r.out == "" and not missing,
              f"expected exit 2 and stderr naming {missing}")

    refused("a NUL byte in the list", inputs[0] + "\n" + inputs[1] + "\0x\n", ["bad:2", "NUL"])
    refused("a line longer than 4096 bytes", inputs[0] + "\n\n" + "x" * 5000 + "\n",
            ["bad:3", "longer than 4096"])
    refused("a huge line without a line break (1 MB)", "y" * 1_000_000, ["bad:1", "longer"])
    refused("'-' in the list", inputs[0] + "\n-\n", ["bad:2", "'-'"])
    refused("an empty list", "", ["no inputs"])
    refused("a list of blank lines", "\n\r\n\n", ["no inputs"])
    refused("a missing list", None, ["nolist", "cannot open"], listname="nolist")
    refused("a directory as the list", None, ["audio", "cannot read"], listname="audio")
    r = R(base(d) + ["--files-from", "-"], d, stdin=b"")
    check("an empty list on standard input", r,
          r.rc == 2 and "standard input" in r.err and "no inputs" in r.err)
    write(os.path.join(d, "ok"), inputs[0] + "\n")
    r = R(base(d) + ["--files-from", "ok", inputs[1]], d)
    check("--files-from with FILE operands refused", r,
          r.rc == 2 and "--files-from" in r.err and "operands" in r.err)
    r = R(base(d) + ["--files-from", "list", "--format", "srt", "--shard", "0/3"], d)
    srts = [os.path.join(d, os.path.splitext(x)[0] + ".srt") for x in inputs[::3]]
    check("several listed inputs with --format srt: each file beside its input", r,
          r.rc == 0 and r.out == "" and all(os.path.isfile(x) for x in srts))
    for x in srts:
        if os.path.isfile(x):
            os.remove(x)
    # two inputs writing one output name, in different shards: refused in
    # every shard, so that no task takes the other's output as its own
    os.makedirs(os.path.join(d, "other"))
    shutil.copy(os.path.join(d, inputs[0]), os.path.join(d, "other", "a.flac"))
    write(os.path.join(d, "clash"), inputs[0] + "\n" + inputs[1] + "\nother/a.flac\n")
    r = R(base(d) + ["--files-from", "clash", "--output-dir", "clash-out", "--shard", "1/2"], d)
    check("an output name shared across shards refused in every shard", r,
          r.rc == 2 and "other/a.flac" in r.err and inputs[0] in r.err)
    # a long list: the checks over the whole list stay quick
    write(os.path.join(d, "big"), "".join(f"none/{i:06d}.wav\n" for i in range(200000)))
    s = os.path.join(d, "big.jsonl")
    r = R(base(d) + ["--files-from", "big", "--output-dir", "big-out", "--shard", "7/100000",
                     "--summary", s], d)
    got = summary(s)
    check("200,000 entries: shard 7/100000 takes entries 7 and 100007", r,
          r.rc == 1 and [x["input"] for x in got] == ["none/000007.wav", "none/100007.wav"])


def test_skip_and_summary(d, inputs):
    write(os.path.join(d, "list3"), "".join(x + "\n" for x in inputs[:3]))
    out = os.path.join(d, "skip")
    s = os.path.join(d, "skip.jsonl")
    args = base(d) + ["--files-from", "list3", "--output-dir", out, "--skip-existing",
                      "--summary", s]
    r = R(args, d)
    got = summary(s)
    check("--skip-existing, first run: every input done", r,
          r.rc == 0 and [x["status"] for x in got] == ["ok"] * 3)
    keys_ok = all(set(x) == SUMMARY_KEYS and x["error"] is None
                  and isinstance(x["audio_seconds"], (int, float))
                  and isinstance(x["processing_seconds"], (int, float))
                  and x["processing_seconds"] >= 0 for x in got)
    report("summary: input, output, status, error, audio and processing seconds",
           keys_ok and got[0]["output"] == os.path.join(out, "a.txt")
           and abs(got[0]["audio_seconds"] - 3.025) < 0.01
           and abs(got[2]["audio_seconds"] - 4.025) < 0.01, f"{got}")
    stamps = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in os.listdir(out)}
    r = R(args, d)
    got = summary(s)
    check("--skip-existing, second run: all skipped, outputs untouched, lines appended", r,
          r.rc == 0 and [x["status"] for x in got] == ["ok"] * 3 + ["skipped"] * 3
          and all(x["audio_seconds"] is None for x in got[3:])
          and stamps == {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in os.listdir(out)})
    r = R(["-m", os.path.join(d, "no-model")] + args[2:], d)
    check("nothing left to do: no model is loaded (a missing model is not even read)", r,
          r.rc == 0 and [x["status"] for x in summary(s)][6:] == ["skipped"] * 3)
    # a task killed while writing leaves .NAME.hviske-XXXXXX: not an output
    os.remove(os.path.join(out, "b.txt"))
    write(os.path.join(out, ".b.txt.hviske-Ab12Cd"), "partial")
    r = R(args, d)
    check("a leftover temporary file does not count: only that input redone", r,
          r.rc == 0 and [x["status"] for x in summary(s)][9:] == ["skipped", "ok", "skipped"]
          and open(os.path.join(out, "b.txt"), "rb").read()
          == open(os.path.join(d, "ref", "b.txt"), "rb").read())
    os.remove(os.path.join(out, "c d.txt"))
    os.makedirs(os.path.join(out, "c d.txt"))
    r = R(args, d)
    last = summary(s)[-1]
    check("an output name taken by a directory is not skipped: that input fails", r,
          r.rc == 1 and last["status"] == "error" and "c d.txt" in last["error"])
    r = R(base(d) + ["--files-from", "list3", "--skip-existing"], d)
    check("--skip-existing without --output-dir refused", r,
          r.rc == 2 and "--output-dir" in r.err)

    # failures: a missing input fails alone, with its message in the summary
    write(os.path.join(d, "fail"), inputs[0] + "\naudio/missing.wav\n" + inputs[1] + "\n")
    s = os.path.join(d, "fail.jsonl")
    r = R(base(d) + ["--files-from", "fail", "--summary", s], d)
    got = summary(s)
    msg = "audio/missing.wav: cannot open: No such file or directory"
    check("a missing input: status error with the message, the others done, exit 1", r,
          r.rc == 1 and [x["status"] for x in got] == ["ok", "error", "ok"]
          and got[1]["error"] == msg and ("hviske: " + msg) in r.err
          and "output" not in got[0] and r.out.count("\n") == 2)
    r = R(base(d) + ["--files-from", "fail", "--summary", os.path.join(d, "nodir", "s.jsonl")], d)
    check("a summary that cannot be created: exit 1 before any work", r,
          r.rc == 1 and r.out == "" and "summary" in r.err)
    r = R(base(d) + ["--shard", "1/2", "--summary", os.path.join(d, "op.jsonl"), inputs[0],
                     "audio/missing.wav"], d)
    check("--summary with FILE operands", r,
          r.rc == 1 and [x["status"] for x in summary(os.path.join(d, "op.jsonl"))] == ["error"])


def test_indexed_job(d, inputs):
    """The pod command of deploy/kubernetes/indexed-job.yaml, as written,
    with the demo model and d in place of the volumes, for every index of
    3 shards."""
    path = os.path.join(SOURCE_DIR, "deploy", "kubernetes", "indexed-job.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    start = [i for i, x in enumerate(lines) if x.strip() == "- >-"]
    cmd = []
    if start:
        indent = len(lines[start[0] + 1]) - len(lines[start[0] + 1].lstrip())
        for x in lines[start[0] + 1:]:
            if not x.strip() or len(x) - len(x.lstrip()) < indent:
                break
            cmd.append(x.strip())
    cmd = " ".join(cmd)  # a folded block scalar: lines joined by spaces
    completions = re.search(r"^\s+completions:\s*(\d+)", text, re.M)
    shards = re.search(r"name: HVISKE_SHARDS\s+value:\s*\"(\d+)\"", text)
    report("indexed-job.yaml: HVISKE_SHARDS equals completions, the command found",
           bool(cmd and completions and shards and completions.group(1) == shards.group(1)),
           f"command {cmd!r}")
    if not cmd:
        return
    write(os.path.join(d, "k8s-list"), "".join(os.path.join(d, x) + "\n" for x in inputs))
    cmd = (cmd.replace("/archive/list.txt", os.path.join(d, "k8s-list"))
           .replace("/archive/transcripts", os.path.join(d, "k8s-out"))
           .replace("/models/hviske-v5.3", DEMO_MODEL).replace("exec hviske ", f"exec {CLI} "))
    rcs = []
    for k in range(3):
        p = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, timeout=TIMEOUT,
                           env=dict(os.environ, JOB_COMPLETION_INDEX=str(k), HVISKE_SHARDS="3"))
        rcs.append((p.returncode, p.stderr.decode(errors="replace")[-300:]))
    sums = {k: summary(os.path.join(d, "k8s-out", "summaries", f"task-{k}.jsonl"))
            for k in range(3)}
    got = {k: [os.path.relpath(x["input"], d) for x in v if x["status"] == "ok"]
           for k, v in sums.items()}
    report("indexed-job.yaml's command, JOB_COMPLETION_INDEX 0..2 of 3: each input once",
           all(rc == 0 for rc, _ in rcs) and got == {k: inputs[k::3] for k in range(3)}
           and sorted(os.listdir(os.path.join(d, "k8s-out"))) == sorted(
               list(map(outname, inputs)) + ["summaries"]), f"{rcs} {got}")


def main():
    if not shutil.which("sox"):
        report("sox", False, "sox is missing (scripts/install-deps.sh installs it)")
        return finish()
    d = tempfile.mkdtemp(prefix="hv-batch-")
    try:
        inputs = make_inputs(d)
        test_shards(d, inputs)
        test_env(d, inputs)
        test_lists(d, inputs)
        test_skip_and_summary(d, inputs)
        test_indexed_job(d, inputs)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
