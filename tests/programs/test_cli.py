"""Tests of the `hviske` command-line program, run as a subprocess.

Environment (set by CTest, see tests/CMakeLists.txt):
  HV_CLI         the hviske program
  HV_FIXTURES    generated fixtures (manifest.json, models/*/, audio)
  HV_SOURCE_DIR  the source tree

Covers option parsing (exit 2), model-load failures (exit 1, a message naming
the broken file, nothing on stdout), per-file failures in a batch, hostile
audio (long, too short, empty, garbage, silence, clipping), plain and
--json output (with segments), that the thread count does not change the result, and the
decoding options (--beams, --length-penalty, --sample, --temperature,
--top-k, --top-p, --seed: validation, --beams 1 and degenerate sampling equal
greedy, seeds reproduce and differ).
Prints one line per case and ends with "N passed, M failed".
"""
import base64
import glob
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (CLI, FIXTURES, Run, check, finish, fixtures_manifest, report,  # noqa: E402
                    runs_in_order)

SOURCE_DIR = os.environ.get(
    "HV_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TIMEOUT = 900
AUDIO_EXT = (".wav", ".flac", ".ogg", ".opus", ".mp3")
TIMING_KEYS = {"frontend_ms", "encoder_ms", "decoder_ms", "vad_ms", "encoded_s", "n_tokens"}
JSON_KEYS = {"file", "text", "tokens", "token_logprobs", "score", "timings", "chunks",
             "segments"}
SEGMENT_KEYS = {"start", "end", "text", "tokens"}
LOGPROB_EPS = 1e-4  # a log-prob may round a hair above 0





def expect_usage_error(name, args):
    r = Run(args)
    check(name, r, r.rc == 2 and r.out == "" and r.err.startswith("hviske: "),
          "expected exit 2, a message on stderr, nothing on stdout")


def expect_failure(name, args, mentions, rc=(1,)):
    """The run must fail with one of rc, print nothing on stdout and name
    every string in mentions on stderr."""
    r = Run(args)
    missing = [m for m in mentions if m not in r.err]
    check(name, r, r.rc in rc and r.out == "" and not missing,
          f"expected exit {rc}, empty stdout, stderr naming {missing}")


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def parse_json_lines(run):
    """The --json lines of a run, or None with a reason."""
    objs = []
    try:
        run.raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"stdout is not valid UTF-8: {e}"
    for line in run.lines():
        try:
            o = json.loads(line)
        except ValueError as e:
            return None, f"bad JSON line {line!r}: {e}"
        if not isinstance(o, dict) or set(o) != JSON_KEYS:
            return None, f"wrong keys in {line!r}"
        if not isinstance(o["text"], str) or not isinstance(o["file"], str):
            return None, f"file/text not strings in {line!r}"
        toks = o["tokens"]
        if not isinstance(toks, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) and t >= 0
                for t in toks):
            return None, f"tokens not non-negative ints in {line!r}"
        lps = o["token_logprobs"]
        if not isinstance(lps, list) or len(lps) != len(toks) or not all(
                is_number(x) and math.isfinite(x) and x <= LOGPROB_EPS
                for x in lps):
            return None, (f"token_logprobs not {len(toks)} finite numbers "
                          f"<= 0 in {line!r}")
        if not (is_number(o["score"]) and math.isfinite(o["score"])
                and o["score"] <= LOGPROB_EPS):
            return None, f"score not a finite number <= 0 in {line!r}"
        t = o["timings"]
        if not isinstance(t, dict) or set(t) != TIMING_KEYS:
            return None, f"wrong timings keys in {line!r}"
        if not all(isinstance(v, (int, float)) and v >= 0 for v in t.values()):
            return None, f"negative or non-numeric timing in {line!r}"
        if t["n_tokens"] != len(toks):
            return None, f"n_tokens != len(tokens) in {line!r}"
        segs = o["segments"]
        if not isinstance(segs, list) or not all(
                isinstance(g, dict) and set(g) == SEGMENT_KEYS
                and is_number(g["start"]) and is_number(g["end"])
                and 0 <= g["start"] < g["end"] and isinstance(g["text"], str)
                and g["text"] for g in segs):
            return None, f"malformed segments in {line!r}"
        # tokens also holds those of chunks whose text is empty (no segment)
        if not runs_in_order(toks, [g["tokens"] for g in segs]):
            return None, f"segment tokens not found in tokens in {line!r}"
        objs.append(o)
    return objs, ""


def word_problem(o, plain):
    """Why the --word-timestamps JSON object o is not plain (the same run
    without the option) plus well-formed words; "" when it is."""
    if set(o) != JSON_KEYS | {"words"}:
        return f"keys {sorted(o)}"
    if set(o["timings"]) != TIMING_KEYS | {"align_ms"} or o["timings"]["align_ms"] < 0:
        return f"timings {o['timings']}"
    for key in ("text", "tokens", "token_logprobs", "score"):
        if o[key] != plain[key]:
            return f"{key} differs from the run without --word-timestamps"
    words, prev = o["words"], 0.0
    for w in words:
        if set(w) != {"word", "start", "end", "probability"} or not isinstance(w["word"], str):
            return f"word {w}"
        if not (prev - 1e-9 <= w["start"] <= w["end"] and 0 < w["probability"] <= 1):
            return f"word {w} after {prev}"
        prev = w["end"]
    if o["text"].strip() and not words:
        return "no words for a transcript"
    segs = o["segments"]
    if [dict((k, v) for k, v in g.items() if k != "words") for g in segs] != plain["segments"]:
        return "segments differ from the run without --word-timestamps"
    if [w for g in segs for w in g["words"]] != words:
        return "the segments' words are not the words"
    return ""


def test_word_timestamps(model, wav, wav2):
    for args in ([], ["--beams", "3"], ["--sample", "--seed", "5"], ["--chunking", "none"]):
        plain, why = parse_json_lines(Run(["--json", "-m", model] + args + [wav, wav2]))
        r = Run(["--json", "--word-timestamps", "-m", model] + args + [wav, wav2])
        objs = []
        try:
            objs = [json.loads(line) for line in r.lines()]
        except ValueError as e:
            why = f"not JSON: {e}"
        if not why and (not plain or len(objs) != len(plain)):
            why = "not one object per input"
        for o, p in zip(objs, plain or []) if not why else []:
            why = why or word_problem(o, p)
        check(f"--word-timestamps {' '.join(args)}: words in order, the rest unchanged", r,
              r.rc == 0 and not why, why)
    r = Run(["--format", "json", "--word-timestamps", "-m", model, wav])
    try:
        doc = json.loads(r.out)
        why = "" if "words" in doc and "words" in doc["segments"][0] else "no words"
    except (ValueError, IndexError, KeyError) as e:
        why = str(e)
    check("--format json --word-timestamps: words in the document", r, r.rc == 0 and not why, why)
    r0 = Run(["-m", model, wav])
    r = Run(["--word-timestamps", "-m", model, wav])
    check("--word-timestamps with txt: the same text and a warning", r,
          r.rc == 0 and r.out == r0.out and "--word-timestamps has no effect" in r.err, "")
    r = Run(["--json", "--max-lines", "1", "-m", model, wav])
    check("--max-lines with jsonl: a warning", r,
          r.rc == 0 and "--max-lines has no effect" in r.err, "")
    for args in (["--max-lines", "0"], ["--max-lines", "11"], ["--max-lines", "x"],
                 ["--max-line-chars", "9"], ["--max-line-chars", "1001"],
                 ["--max-cue-seconds", "0.5"], ["--max-cue-seconds", "601"],
                 ["--max-cue-seconds", "nan"], ["--max-cue-seconds", ""]):
        expect_usage_error(f"{' '.join(args)}: usage error",
                           ["--format", "srt", "-m", model] + args + [wav])


# ------------------------------------------------------------------ inputs

def write_wav(path, samples, rate=16000, channels=1):
    """16-bit PCM WAV; samples are interleaved ints."""
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(struct.pack(f"<{len(samples)}h", *samples))
    return path


def noise(n, amplitude, seed):
    rng = random.Random(seed)
    return [int(rng.uniform(-amplitude, amplitude)) for _ in range(n)]


def find_fixtures():
    """(models, audio files, {model dir: manifest entry}) of the fixtures:
    every models/*/ dir with a config.json, and every audio file the
    manifest names or the fixtures dir holds."""
    with open(os.path.join(FIXTURES, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    models = sorted(os.path.normpath(os.path.dirname(c)) for c in
                    glob.glob(os.path.join(FIXTURES, "models", "*",
                                           "config.json")))
    entries = {}
    for e in manifest.get("models", []) if isinstance(manifest, dict) else []:
        if isinstance(e, dict) and isinstance(e.get("path"), str):
            entries[os.path.normpath(os.path.join(FIXTURES, e["path"]))] = e
    audio = set()

    def walk(v):
        if isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and v.lower().endswith(AUDIO_EXT):
            p = v if os.path.isabs(v) else os.path.join(FIXTURES, v)
            if os.path.isfile(p):
                audio.add(os.path.normpath(p))

    walk(manifest)
    for ext in AUDIO_EXT:
        for p in glob.glob(os.path.join(FIXTURES, "**", "*" + ext),
                           recursive=True):
            audio.add(os.path.normpath(p))
    return models, sorted(audio), entries


def model_config(model):
    with open(os.path.join(model, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def hviske_version():
    with open(os.path.join(SOURCE_DIR, "include", "hviske.h"),
              encoding="utf-8") as f:
        for line in f:
            if line.startswith("#define HV_VERSION"):
                return line.split('"')[1]
    return None


# ------------------------------------------------------------------- cases

def test_usage(model, wav):
    r = Run(["--help"])
    check("--help", r, r.rc == 0 and "Usage" in r.out and "-m" in r.out,
          "expected exit 0 and usage on stdout")
    r = Run(["-h"])
    check("-h", r, r.rc == 0 and "Usage" in r.out, "expected exit 0")
    version = hviske_version()
    r = Run(["--version"])
    check("--version", r, r.rc == 0 and version and version in r.out,
          f"expected exit 0 and {version!r} on stdout")

    r = Run([])
    check("no arguments: a short usage on stderr (at most 10 lines, naming --help), exit 2", r,
          r.rc == 2 and r.out == "" and r.err.startswith("Usage: hviske -m MODEL_DIR") and
          "--format" in r.err and "hviske --help" in r.err and len(r.err.splitlines()) <= 10,
          "expected exit 2 and a short usage on stderr")
    r = Run(["--fromat", "srt", "-m", model, wav])
    check("a typo: the nearest option suggested", r,
          r.rc == 2 and r.out == "" and "did you mean --format?" in r.err, "")
    expect_usage_error("missing -m", [wav])
    expect_usage_error("-m without files", ["-m", model])
    expect_usage_error("-m without argument", ["-m"])
    expect_usage_error("unknown long option", ["--bogus", "-m", model, wav])
    expect_usage_error("unknown short option", ["-x", "-m", model, wav])
    bad_numbers = [
        ["-t", "0"], ["-t", "abc"], ["-t", "257"], ["-t", "2x"], ["-t", ""],
        ["-t", "99999999999999999999"], ["--threads", "-1"],
        ["--max-tokens", "0"], ["--max-tokens", "-5"],
        ["--max-tokens", "1.5"],
        ["--dither", "-1"], ["--dither", "nan"], ["--dither", "inf"],
        ["--dither", "1e99"], ["--dither", "0.1x"], ["--dither", ""],
    ]
    for opt in bad_numbers:
        expect_usage_error(f"bad number {' '.join(opt)!r}",
                           opt + ["-m", model, wav])
    r = Run(["-t", "abc", "-m", model, wav])
    check("bad number message names the value", r, "abc" in r.err,
          "stderr should quote the bad value")


def test_model_errors(model, wav, tmp):
    missing = os.path.join(tmp, "no-such-model")
    expect_failure("nonexistent model dir", ["-m", missing, wav], [missing])

    def broken(name, breaker, mentions):
        d = os.path.join(tmp, "broken-" + name)
        shutil.copytree(model, d)
        breaker(d)
        expect_failure(f"model: {name}", ["-m", d, wav], mentions)
        shutil.rmtree(d)

    def remove(f):
        return lambda d: os.remove(os.path.join(d, f))

    def overwrite(f, data):
        def go(d):
            with open(os.path.join(d, f), "wb") as fh:
                fh.write(data)
        return go

    def edit_config(key, value):
        def go(d):
            cfg = model_config(d)
            cfg[key] = value
            overwrite("config.json", json.dumps(cfg).encode())(d)
        return go

    def truncate(frac_or_size):
        def go(d):
            files = sorted(glob.glob(os.path.join(d, "*.safetensors")),
                           key=os.path.getsize)
            path = files[-1]
            size = os.path.getsize(path)
            new = (frac_or_size if isinstance(frac_or_size, int)
                   else int(size * frac_or_size))
            with open(path, "r+b") as fh:
                fh.truncate(new)
        return go

    st = sorted(glob.glob(os.path.join(model, "*.safetensors")),
                key=os.path.getsize)
    st_name = os.path.basename(st[-1]) if st else "model.safetensors"

    broken("config.json missing", remove("config.json"), ["config.json"])
    broken("config.json not JSON",
           overwrite("config.json", b'{"model_type": '), ["config.json"])
    broken("config.json empty", overwrite("config.json", b""), ["config.json"])
    broken("config.json model_type wrong",
           edit_config("model_type", "whisper"), ["config.json"])
    broken("tokenizer.model missing", remove("tokenizer.model"),
           ["tokenizer.model"])
    broken("tokenizer.model garbage",
           overwrite("tokenizer.model", b"\xff" * 64), ["tokenizer.model"])
    broken("safetensors truncated to half", truncate(0.5), [st_name])
    broken("safetensors truncated to 4 bytes", truncate(4), [st_name])


def token_cap(entry):
    """The most tokens a fixture model may generate, from its manifest
    entry: max_new_tokens, else the decoder's max_sequence_length."""
    if not entry:
        return None
    cap = entry.get("max_new_tokens") or entry.get("max_sequence_length")
    return cap if isinstance(cap, int) else None


def test_transcribe_fixtures(models, audio, entries):
    for model in models:
        mname = os.path.basename(model)
        cap = token_cap(entries.get(model))
        for wav in audio:
            name = f"{mname} {os.path.basename(wav)}"
            r = Run(["-t", "2", "-m", model, wav])
            check(f"text {name}", r,
                  r.rc == 0 and len(r.lines()) == 1 and r.out.endswith("\n"),
                  "expected exit 0 and one line")
            text = r.lines()[0] if r.rc == 0 and r.lines() else None

            r = Run(["-t", "2", "--json", "-m", model, wav])
            objs, why = parse_json_lines(r)
            check(f"json {name}", r,
                  r.rc == 0 and objs is not None and len(objs) == 1
                  and objs[0]["file"] == wav
                  and (cap is None or len(objs[0]["tokens"]) <= cap),
                  why or f"expected exit 0 and one JSON line for the file, "
                  f"at most {cap} tokens")
            if objs and text is not None:
                plain = objs[0]["text"].replace("\n", " ").replace("\r", " ")
                report(f"json text == plain text {name}", plain == text,
                       f"{plain!r} != {text!r}")


def test_options(model, wav, wav2):
    r = Run(["-m", model, wav, wav2])
    check("two files, two lines", r, r.rc == 0 and len(r.lines()) == 2,
          "expected two lines")
    r = Run(["--json", "-m", model, wav, wav2])
    objs, why = parse_json_lines(r)
    check("two files, two JSON lines in order", r,
          r.rc == 0 and objs is not None
          and [o["file"] for o in objs] == [wav, wav2], why)

    langs = model_config(model).get("supported_languages", [])
    for opts in ([["-l", lang] for lang in langs] +
                 [["--language", langs[0]]] * bool(langs) +
                 [["--no-punctuation"], ["--dither", "0"], ["--dither", "1e-5"],
                  ["--beams", "2"], ["--beams", "5", "--length-penalty", "0.7"],
                  ["--sample"], ["--sample", "--seed", "11", "--top-k", "40"],
                  ["-t", "1"], ["--threads", "3"], ["--max-tokens", "5"], []]):
        r = Run(opts + ["-m", model, wav])
        check(f"option {' '.join(opts) or '(none)'}", r,
              r.rc == 0 and len(r.lines()) == 1, "expected exit 0, one line")

    # weight types: all run; f16 of an f32 model keeps this file's tokens
    # (test_weight_types measures the others); bad names are usage errors
    base = Run(["--json", "-m", model, wav])
    base_objs, _ = parse_json_lines(base)
    for wt in ("auto", "f32", "f16", "bf16", "q8_0", "q4_0"):
        r = Run(["--json", "--weight-type", wt, "-m", model, wav])
        objs, why = parse_json_lines(r)
        ok = r.rc == 0 and objs is not None and len(objs) == 1
        if ok and wt in ("auto", "f32", "f16") and base_objs:
            ok = objs[0]["tokens"] == base_objs[0]["tokens"]
            why = why or "tokens differ from the default run"
        check(f"--weight-type {wt}", r, ok, why)
    for bad in ("q4", "", "F32x"):
        r = Run(["--weight-type", bad, "-m", model, wav])
        check(f"--weight-type {bad!r} is a usage error", r,
              r.rc == 2 and not r.out and "weight-type" in r.err, "expected exit 2")

    r = Run(["--json", "--max-tokens", "1", "-m", model, wav])
    objs, why = parse_json_lines(r)
    check("--max-tokens 1 caps the tokens", r,
          r.rc == 0 and objs is not None and len(objs) == 1
          and len(objs[0]["tokens"]) <= 1, why)

    r = Run(["-l", "xx", "-m", model, wav])
    check("unsupported language", r,
          r.rc in (1, 2) and r.out == "" and "xx" in r.err,
          "expected a failure naming 'xx'")

    # The thread count changes nothing in the output.
    base = ["--json", "--dither", "0", "-m", model, wav, wav2]
    r1, r2 = Run(["-t", "1"] + base), Run(["-t", "2"] + base)
    o1, _ = parse_json_lines(r1)
    o2, _ = parse_json_lines(r2)
    same = (o1 is not None and o2 is not None and
            [(o["text"], o["tokens"]) for o in o1] ==
            [(o["text"], o["tokens"]) for o in o2])
    check("-t 1 and -t 2 give identical output", r2,
          r1.rc == 0 and r2.rc == 0 and same, f"{r1}")
    base = ["--dither", "1e-5", "-m", model, wav]
    r1, r2 = Run(["-t", "1"] + base), Run(["-t", "2"] + base)
    check("-t 1 and -t 2 identical with dither", r2,
          r1.rc == 0 and r2.rc == 0 and r1.out == r2.out, f"{r1}")


# ---------------------------------------------------------------- decoding

def decoded(objs):
    """What decoding decides, per file: everything but the timings."""
    return [(o["file"], o["text"], o["tokens"], o["token_logprobs"],
             o["score"]) for o in objs]


def same_decoding(a, b, tol=1e-5):
    """Same files, texts and tokens; log-probs and scores within tol (the
    same numbers, perhaps summed in another order)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if (x["file"], x["text"], x["tokens"]) != (y["file"], y["text"],
                                                   y["tokens"]):
            return False
        if abs(x["score"] - y["score"]) > tol or any(
                abs(p - q) > tol for p, q in zip(x["token_logprobs"],
                                                 y["token_logprobs"])):
            return False
    return True


def json_run(args):
    """Runs with --json; (run, objects or None, why)."""
    r = Run(["--json"] + args)
    objs, why = parse_json_lines(r)
    if r.rc != 0:
        objs = None
    return r, objs, why


def test_decoding_usage(model, wav):
    bad = [
        ["--beams", "0"], ["--beams", "-1"], ["--beams", "abc"],
        ["--beams", "1.5"], ["--beams", ""], ["--beams", "99999999999999"],
        ["--length-penalty", "0"], ["--length-penalty", "-1"],
        ["--length-penalty", "nan"], ["--length-penalty", "inf"],
        ["--length-penalty", "1e99"], ["--length-penalty", "1x"],
        ["--length-penalty", ""],
        ["--temperature", "-0.5"],
        ["--temperature", "nan"], ["--temperature", "inf"],
        ["--temperature", "abc"], ["--temperature", ""],
        ["--temperature", "0,"], ["--temperature", ",0"], ["--temperature", "0,,1"],
        ["--temperature", "0;1"], ["--temperature", "0, 1"], ["--temperature", "0,-1"],
        ["--temperature", "0,nan"], ["--temperature", ",".join(["0"] * 33)],
        ["--top-k", "-1"], ["--top-k", "1.5"], ["--top-k", "abc"],
        ["--top-k", ""], ["--top-k", "99999999999999"],
        ["--top-p", "0"], ["--top-p", "-0.1"], ["--top-p", "1.5"],
        ["--top-p", "1.0001"], ["--top-p", "nan"], ["--top-p", "inf"],
        ["--top-p", "abc"], ["--top-p", ""],
        ["--seed", "-1"], ["--seed", "abc"], ["--seed", "1.5"],
        ["--seed", ""], ["--seed", "18446744073709551616"],
        ["--seed", "99999999999999999999999"], ["--seed", "+1"],
        ["--seed", " 1"], ["--seed", "0x10"],
    ]
    for opt in bad:
        # --sample too, so the value is the only thing wrong
        args = opt + (["--sample"] if opt[0] not in ("--beams",
                                                      "--length-penalty", "--temperature")
                      else [])
        r = Run(args + ["-m", model, wav])
        check(f"bad decoding value {' '.join(opt)!r}", r,
              r.rc == 2 and r.out == "" and r.err.startswith("hviske: ")
              and opt[0] in r.err and (opt[1] == "" or opt[1] in r.err),
              "expected exit 2, nothing on stdout, a message naming the "
              "option and the value")
    for args in (["--sample", "--beams", "2"], ["--beams", "3", "--sample"],
                 ["--sample", "--seed", "1", "--beams", "4"]):
        r = Run(args + ["-m", model, wav])
        check(f"{' '.join(args)} is a usage error", r,
              r.rc == 2 and r.out == "" and "--sample" in r.err
              and "--beams" in r.err,
              "expected exit 2 and a message naming --sample and --beams")
    # accepted boundary values
    for args in (["--beams", "1"], ["--length-penalty", "1e-3", "--beams", "2"],
                 ["--sample", "--top-k", "0"], ["--sample", "--top-p", "1"],
                 ["--sample", "--seed", "0"],
                 ["--sample", "--seed", "18446744073709551615"],
                 ["--sample", "--temperature", "1e-3"],
                 ["--sample", "--beams", "1"]):
        r = Run(args + ["-m", model, wav])
        check(f"accepted: {' '.join(args)}", r,
              r.rc == 0 and len(r.lines()) == 1 and "warning" not in r.err,
              "expected exit 0, one line, no warning")
    # beyond the library's range (its parameter row, HV_MAX_BEAMS): a
    # usage error in the library's words, before any input is read
    r = Run(["--beams", "1000000", "-m", model, wav])
    check("--beams 1000000: over the library's range (exit 2)", r,
          r.rc == 2 and r.out == "" and
          "invalid --beams '1000000' (expected an integer from 1 to 64)" in r.err,
          "expected exit 2, nothing on stdout, the library's message naming --beams and 64")


def test_decoding(model, wav, wav2, models, audio):
    files = [wav, wav2]
    r, greedy, why = json_run(["-m", model] + files)
    check("greedy --json has token_logprobs and score", r,
          greedy is not None and len(greedy) == 2, why)
    if greedy is None:
        return
    g = decoded(greedy)
    for o in greedy:
        s = sum(o["token_logprobs"])
        # EOS, when it ended the sequence, adds its (negative) log-prob
        report(f"greedy score <= sum of token log-probs "
               f"{os.path.basename(o['file'])}",
               o["score"] <= s + 1e-3, f"score {o['score']} sum {s}")

    r, objs, why = json_run(["--beams", "1", "-m", model] + files)
    check("--beams 1 == greedy (json)", r,
          objs is not None and decoded(objs) == g, why or f"{objs} != {g}")
    r1, r2 = Run(["-m", model] + files), Run(["--beams", "1", "-m", model]
                                             + files)
    check("--beams 1 == greedy (text)", r2,
          r1.rc == 0 and r2.rc == 0 and r1.out == r2.out, f"{r1}")

    # beam search on every model, two files
    for m in models:
        for beams, extra in ((3, []), (2, ["--length-penalty", "0.5"]),
                             (4, ["--length-penalty", "2"])):
            args = ["--beams", str(beams)] + extra + ["-m", m] + files
            r, objs, why = json_run(args)
            check(f"{os.path.basename(m)} "
                  f"{' '.join(['--beams', str(beams)] + extra)} --json", r,
                  objs is not None and len(objs) == 2
                  and [o["file"] for o in objs] == files,
                  why or "expected exit 0 and two JSON lines")
    r, objs, why = json_run(["--beams", "3", "--max-tokens", "2", "-m", model]
                            + files)
    check("--beams 3 --max-tokens 2 caps the tokens", r,
          objs is not None and all(len(o["tokens"]) <= 2 for o in objs), why)
    r1 = Run(["--json", "-t", "1", "--beams", "4", "-m", model] + files)
    r2 = Run(["--json", "-t", "2", "--beams", "4", "-m", model] + files)
    o1, _ = parse_json_lines(r1)
    o2, _ = parse_json_lines(r2)
    # tokens identical; log-probs may differ in the last bits (the kernels
    # split sums by thread), as in greedy decoding
    check("--beams 4: -t 1 and -t 2 give the same tokens", r2,
          r1.rc == 0 and r2.rc == 0 and o1 is not None and o2 is not None
          and same_decoding(o1, o2, 1e-4), f"{r1}")

    # sampling: reproducible, degenerate settings are greedy
    args = ["--sample", "--seed", "7", "-m", model] + files
    r1, o1, _ = json_run(args)
    r2, o2, why = json_run(args)
    check("--sample --seed 7 twice: identical", r2,
          o1 is not None and o2 is not None and decoded(o1) == decoded(o2),
          why or f"{r1}")
    r1, r2 = Run(args), Run(args)
    check("--sample --seed 7 twice: identical text", r2,
          r1.rc == 0 and r2.rc == 0 and r1.out == r2.out, f"{r1}")
    for m in models:
        r, gm, why = json_run(["-m", m] + audio)
        if gm is None:
            check(f"greedy {os.path.basename(m)}", r, False, why)
            continue
        for extra in (["--top-k", "1"], ["--top-k", "1", "--temperature", "3"],
                      ["--top-p", "1e-6"],
                      ["--top-p", "1e-6", "--temperature", "0.5"]):
            args = ["--sample", "--seed", "3"] + extra
            r, objs, why = json_run(args + ["-m", m] + audio)
            # token log-probs are the model's, before temperature and
            # truncation, so the whole result equals greedy
            check(f"{os.path.basename(m)} {' '.join(args)} == greedy", r,
                  objs is not None and same_decoding(objs, gm),
                  why or "output differs from greedy")

    # different seeds give different outputs: at temperature 2 on this
    # random-weight model, four seeds all agreeing on every file would take
    # a vanishingly unlikely coincidence (the runs are deterministic)
    outs = set()
    for seed in ("1", "2", "3", "4"):
        r = Run(["--sample", "--temperature", "2", "--seed", seed,
                 "-m", model] + files)
        if r.rc == 0:
            outs.add(r.out)
    check("--sample --temperature 2: seeds 1..4 do not all agree", r,
          len(outs) >= 2, f"{len(outs)} distinct outputs")
    r, objs, why = json_run(["--sample", "--temperature", "2", "--seed", "5",
                             "--top-k", "20", "--top-p", "0.9", "-m", model]
                            + files)
    check("--sample with temperature, top-k and top-p", r,
          objs is not None and len(objs) == 2, why)

    # options of the other mode: a warning, then the default decoding
    # (--temperature alone samples: tests/programs/test_cli_choices.py)
    for opts, mentions in ((["--top-k", "5"], "--top-k"),
                           (["--top-p", "0.5"], "--top-p"),
                           (["--seed", "9"], "--seed"),
                           (["--length-penalty", "2"], "--length-penalty")):
        r, objs, why = json_run(opts + ["-m", model] + files)
        check(f"{' '.join(opts)} alone: a warning, greedy output", r,
              objs is not None and decoded(objs) == g
              and "warning" in r.err and mentions in r.err,
              why or "expected exit 0, greedy output and a warning naming "
              f"{mentions}")


def test_batch(model, wav, tmp):
    missing = os.path.join(tmp, "missing.wav")
    garbage = os.path.join(tmp, "garbage.wav")
    with open(garbage, "wb") as f:
        f.write(bytes(random.Random(7).randrange(256) for _ in range(4000)))
    r = Run(["--json", "-m", model, wav, missing, garbage, wav])
    objs, why = parse_json_lines(r)
    check("batch: good, missing, garbage, good", r,
          r.rc == 1 and objs is not None
          and [o["file"] for o in objs] == [wav, wav]
          and missing in r.err and garbage in r.err,
          why or "expected 2 results, both failures named, exit 1")
    errs = [l for l in r.err.splitlines() if l.startswith("hviske: ")]
    report("batch: one error line per failed file", len(errs) == 2,
           f"stderr lines: {errs}")
    r = Run(["-m", model, missing, wav])
    check("batch: plain text after a failure", r,
          r.rc == 1 and len(r.lines()) == 1, "expected one line, exit 1")
    expect_failure("garbage bytes file", ["-m", model, garbage], [garbage])
    empty = os.path.join(tmp, "empty-file.wav")
    open(empty, "wb").close()
    expect_failure("zero-byte file", ["-m", model, empty], [empty])
    expect_failure("directory as input", ["-m", model, tmp], [tmp])


def test_hostile_audio(model, tmp):
    cfg = model_config(model)
    rate = 16000
    max_s = float(cfg.get("max_audio_clip_s", 35))

    long_wav = write_wav(os.path.join(tmp, "long.wav"),
                         noise(int((max(40.0, max_s + 5)) * rate), 300, 1))
    r = Run(["--json", "-m", model, long_wav])
    objs, why = parse_json_lines(r)
    # Cut into chunks (tests/programs/test_longaudio.py covers long audio).
    ok = r.rc == 0 and objs is not None and len(objs) == 1
    check(f"audio longer than max_audio_clip_s ({max_s:g} s)", r, ok,
          why or "expected a transcript")

    short = write_wav(os.path.join(tmp, "short.wav"), noise(50, 3000, 2))
    expect_failure("audio shorter than one frame (50 samples)",
                   ["-m", model, short], [short])
    zero = write_wav(os.path.join(tmp, "zero.wav"), [])
    expect_failure("WAV with 0 samples", ["-m", model, zero], [zero])

    silence = write_wav(os.path.join(tmp, "silence.wav"), [0] * (2 * rate))
    for dither in ("0", "1e-5"):
        r = Run(["--dither", dither, "-m", model, silence])
        check(f"silence, dither {dither}", r,
              r.rc == 0 and len(r.lines()) == 1, "expected exit 0")
    square = [32767 if (i // 40) % 2 == 0 else -32768 for i in range(2 * rate)]
    clip = write_wav(os.path.join(tmp, "clipping.wav"), square)
    r = Run(["-m", model, clip])
    check("full-scale square wave", r, r.rc == 0 and len(r.lines()) == 1,
          "expected exit 0")

    tone = []
    for i in range(int(1.5 * 44100)):
        v = int(8000 * math.sin(2 * math.pi * 440 * i / 44100))
        tone += [v, -v]
    stereo = write_wav(os.path.join(tmp, "stereo-44k.wav"), tone, 44100, 2)
    r = Run(["-m", model, stereo])
    check("stereo 44.1 kHz input", r, r.rc == 0 and len(r.lines()) == 1,
          "expected exit 0")

    # File names that are not ASCII, or not even UTF-8, still give valid
    # JSON naming the file.
    utf8 = os.path.join(tmp, "dåg-ø.wav")
    shutil.copy(silence, utf8)
    r = Run(["--json", "-m", model, utf8])
    objs, why = parse_json_lines(r)
    check("UTF-8 file name in JSON", r,
          r.rc == 0 and objs is not None and len(objs) == 1
          and objs[0]["file"] == utf8, why)
    raw = os.path.join(os.fsencode(tmp), b"bad-\xff-name.wav")
    shutil.copy(silence, raw)
    p = subprocess.run([CLI, "--json", "-m", model, raw], capture_output=True,
                       timeout=TIMEOUT)
    try:
        o = json.loads(p.stdout.decode("utf-8"))
        ok = (p.returncode == 0 and o["file"] == raw.decode("utf-8", "backslashreplace")
              and base64.b64decode(o["file_bytes"]) == raw)
    except (ValueError, KeyError, TypeError):
        ok = False
    report("non-UTF-8 file name gives valid JSON, the name kept (\\xHH, file_bytes)", ok,
           f"rc={p.returncode} stdout={p.stdout[:200]!r} "
           f"stderr={p.stderr[-300:]!r}")


def main():
    if fixtures_manifest() is None:
        return finish()
    models, audio, entries = find_fixtures()
    print(f"# {CLI}\n# models: {[os.path.basename(m) for m in models]}\n"
          f"# audio: {[os.path.basename(a) for a in audio]}")
    report("fixtures have models and audio", bool(models) and bool(audio),
           f"models={models} audio={audio}")
    if not models or not audio:
        return finish()
    preferred = [m for m in models if os.path.basename(m) == "multi-f32"]
    model = preferred[0] if preferred else models[0]
    wav, wav2 = audio[0], audio[-1]

    with tempfile.TemporaryDirectory(prefix="hv-test-cli-") as tmp:
        test_usage(model, wav)
        test_model_errors(model, wav, tmp)
        test_transcribe_fixtures(models, audio, entries)
        test_options(model, wav, wav2)
        test_decoding_usage(model, wav)
        test_decoding(model, wav, wav2, models, audio[:3])
        test_word_timestamps(model, wav, wav2)
        test_batch(model, wav, tmp)
        test_hostile_audio(model, tmp)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
