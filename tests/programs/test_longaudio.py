#!/usr/bin/env python3
"""Long audio, output formats, many files, standard input, progress and
atomic output of the `hviske` command line, run as a subprocess.

Long audio is made from the fixture sentences with pauses (see
tests/parity/paritylib.make_long_audio): 75 s (three chunks) and 10.3 minutes
(twenty chunks, tiny model only). Covers:
  * usage errors of --format, --json, --chunking, --chunk-seconds, -o,
    --output-dir, '-' (exit 2, nothing written);
  * every format on long audio: txt, jsonl and json (keys, segments whose
    times, texts and tokens add up to the whole), srt and vtt checked by
    strict parsers written from the formats' rules (numbering, time
    stamps, ordering, blank lines, the WEBVTT header, escaping), and the
    cue times equal to the segments' rounded to the millisecond;
  * --chunking fixed / none / energy through the CLI, none beyond the
    encoder's positions failing cleanly;
  * batches with a corrupt file in the middle (the rest go on, exit 1) to
    stdout, to -o FILE and to --output-dir DIR (names, no leftovers);
  * '-' (standard input): WAV and FLAC, equal to reading the file, among
    other inputs, with --output-dir (stdin.EXT), garbage and empty input;
  * output atomicity: SIGTERM and SIGINT during a run leave neither the
    output file nor a temporary file, SIGKILL leaves no output file, a
    failed run leaves an existing output file untouched;
  * progress on a terminal (a pty) only, never with --quiet.
Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "parity"))  # make_long_audio

from hvtest import (CLI, FIXTURES, WAIT, Run, check, finish, fixtures_manifest,  # noqa: E402
                    report, runs_in_order, wait_until)

from paritylib import make_long_audio, write_wav  # noqa: E402

TIMEOUT = 600
RATE = 16000
JSONL_KEYS = {"file", "text", "tokens", "token_logprobs", "score", "timings", "segments",
              "chunks"}
JSON_KEYS = JSONL_KEYS | {"language", "duration"}
SEGMENT_KEYS = {"start", "end", "text", "tokens"}





# ---------------------------------------------------------------- parsers

SRT_TIME = re.compile(r"^(\d{2,}):([0-5]\d):([0-5]\d),(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d),(\d{3})$")
VTT_TIME = re.compile(r"^(\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3}) --> (\d{2,}):([0-5]\d):([0-5]\d)\.(\d{3})$")


def _ms(g, off):
    h, m, s, ms = (int(g[off + i]) for i in range(4))
    return ((h * 60 + m) * 60 + s) * 1000 + ms


def parse_srt(data):
    """Strict SubRip: UTF-8; blocks separated by one blank line; each block
    is its number (1, 2, ... in order), "HH:MM:SS,mmm --> HH:MM:SS,mmm"
    and one or more non-empty text lines; start < end, cues in order and
    not overlapping. Returns [(start_ms, end_ms, text)] or raises."""
    text = data.decode("utf-8")
    if text == "":
        return []
    if not text.endswith("\n\n") or text.endswith("\n\n\n"):
        raise ValueError("SRT must end with exactly one blank line")
    cues, prev_end = [], 0
    for i, block in enumerate(text[:-2].split("\n\n")):
        lines = block.split("\n")
        if len(lines) < 3:
            raise ValueError("block %d has %d lines" % (i + 1, len(lines)))
        if lines[0] != str(i + 1):
            raise ValueError("block %d numbered %r" % (i + 1, lines[0]))
        g = SRT_TIME.match(lines[1])
        if not g:
            raise ValueError("block %d: bad time line %r" % (i + 1, lines[1]))
        a, b = _ms(g.groups(), 0), _ms(g.groups(), 4)
        if not (a < b) or a < prev_end:
            raise ValueError("block %d: times %d..%d out of order" % (i + 1, a, b))
        if any(not l.strip() for l in lines[2:]) or "\r" in block:
            raise ValueError("block %d: empty text line or CR" % (i + 1))
        prev_end = b
        cues.append((a, b, "\n".join(lines[2:])))
    return cues


_SPACE = re.compile("[\\s\x00-\x1f\x7f\x85\u2028\u2029]+")


def cue_problem(cues, words, segs, max_s, max_lines, max_chars):
    """Why cues [(start_ms, end_ms, text)] are not the readable cues of
    words (the CLI's --word-timestamps JSON) within the limits, or ""."""
    shown = [w for w in words if _SPACE.sub("", w["word"])]
    if not shown:
        return "" if not cues else f"{len(cues)} cues without words"
    got = _SPACE.sub(" ", " ".join(c[2] for c in cues)).strip()
    want = _SPACE.sub(" ", " ".join(w["word"] for w in shown)).strip()
    if got != want:
        return f"cue texts {got[:80]!r} != words {want[:80]!r}"
    lo = min(int(round(s["start"] * 1000)) for s in segs) if segs else 0
    hi = max(int(round(s["end"] * 1000)) for s in segs) if segs else 0
    k = 0  # the next word: each cue takes the words its text is made of
    for a, b, text in cues:
        lines = text.split("\n")
        pieces = _SPACE.sub(" ", text).strip().split(" ")
        mine = []
        while pieces and k < len(shown):
            wp = _SPACE.sub(" ", shown[k]["word"]).strip().split(" ")
            if pieces[:len(wp)] != wp:
                return f"cue {text!r} does not go with word {shown[k]['word']!r}"
            pieces = pieces[len(wp):]
            mine.append(shown[k])
            k += 1
        if not mine or pieces:
            return f"cue {text!r}: not whole words"
        if abs(a - int(round(mine[0]["start"] * 1000))) > 1:
            return f"cue at {a} ms: its first word starts at {mine[0]['start']} s"
        if (b - a) > max_s * 1000 + 1 and len(mine) > 1:
            return f"cue {a}..{b} ms longer than {max_s} s: {text!r}"
        if len(lines) > max_lines and len(mine) > 1:  # one word may need more
            return f"cue {text!r}: {len(lines)} lines"
        for line in lines:
            if len(line) > max_chars and len(mine) > 1 and " " in line.strip():
                return f"line {line!r}: more than {max_chars} characters"
        if a < lo - 1 or b > hi + 501:
            return f"cue {a}..{b} ms outside the segments {lo}..{hi}"
    return ""


def parse_vtt(data):
    """Strict WebVTT (the W3C grammar, as far as hviske writes it): UTF-8,
    no BOM needed; "WEBVTT" alone on the first line, then a blank line;
    cues separated by blank lines, each an optional identifier line
    (without "-->"), "HH:MM:SS.mmm --> HH:MM:SS.mmm" and one or more
    text lines; cue text must not contain "-->" and '&' and '<' must be
    escaped; start < end, in order. Returns [(start_ms, end_ms, text)]
    with entities decoded, or raises."""
    text = data.decode("utf-8")
    if not text.startswith("WEBVTT\n\n"):
        raise ValueError("no WEBVTT header line followed by a blank line")
    body = text[len("WEBVTT\n\n"):]
    if body and (not body.endswith("\n\n") or body.endswith("\n\n\n")):
        raise ValueError("VTT body must end with exactly one blank line")
    cues, prev = [], 0
    for i, block in enumerate(body[:-2].split("\n\n") if body else []):
        lines = block.split("\n")
        if "-->" not in lines[0]:
            lines = lines[1:]  # identifier
        if len(lines) < 2:
            raise ValueError("cue %d has no text" % (i + 1))
        g = VTT_TIME.match(lines[0])
        if not g:
            raise ValueError("cue %d: bad timing line %r" % (i + 1, lines[0]))
        a, b = _ms(g.groups(), 0), _ms(g.groups(), 4)
        if not (a < b) or a < prev:
            raise ValueError("cue %d: times %d..%d out of order" % (i + 1, a, b))
        prev = a
        payload = "\n".join(lines[1:])
        if "-->" in payload or "<" in payload or re.search(r"&(?!(amp|lt|gt);)", payload):
            raise ValueError("cue %d: unescaped text %r" % (i + 1, payload))
        if any(not l.strip() for l in lines[1:]):
            raise ValueError("cue %d: empty text line" % (i + 1))
        cues.append((a, b, payload.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")))
    return cues


def check_result(o, keys, duration=None):
    """Why a JSON result object is malformed, or ''."""
    if not isinstance(o, dict) or set(o) != keys:
        return f"keys {sorted(o) if isinstance(o, dict) else o} != {sorted(keys)}"
    # the chunks add up to the text; the segments (cues) are in order
    segs = o["chunks"]
    if not isinstance(segs, list):
        return "chunks not a list"
    cues = o["segments"]
    if any(not c["start"] < c["end"] for c in cues) or \
            any(a["end"] > b["start"] for a, b in zip(cues, cues[1:])):
        return f"segments out of order: {[(c['start'], c['end']) for c in cues]}"
    prev = 0.0
    for s in segs:
        if not isinstance(s, dict) or set(s) != SEGMENT_KEYS:
            return f"segment keys {s}"
        if not (isinstance(s["start"], (int, float)) and isinstance(s["end"], (int, float))
                and prev <= s["start"] < s["end"]):
            return f"segment times {s['start']}..{s['end']} after {prev}"
        # times are sample positions / 16000
        if abs(s["start"] * RATE - round(s["start"] * RATE)) > 1e-6 or \
                abs(s["end"] * RATE - round(s["end"] * RATE)) > 1e-6:
            return f"segment times {s['start']} {s['end']} not on samples"
        if not s["text"] or s["text"] != s["text"].strip():
            return f"segment text {s['text']!r} empty or untrimmed"
        prev = s["end"]
    if segs and duration is not None and segs[-1]["end"] > duration + 1e-9:
        return f"last segment ends at {segs[-1]['end']} > {duration}"
    if " ".join(s["text"] for s in segs) != o["text"]:
        return "text is not the segments' texts joined with spaces"
    if not runs_in_order(o["tokens"], [s["tokens"] for s in segs]):
        return "the segments' tokens are not found in order in tokens"
    if len(o["token_logprobs"]) != len(o["tokens"]):
        return "token_logprobs length"
    return ""


def jsonl(run):
    try:
        return [json.loads(l) for l in run.out.splitlines()]
    except ValueError:
        return None


def leftovers(d):
    """Temporary files hviske may have left in d."""
    return [f for f in os.listdir(d) if ".hviske-" in f]


# ------------------------------------------------------------------ cases

def test_usage(model, wav, tmp):
    cases = [
        (["--format", "xml"], "--format"),
        (["--format", ""], "--format"),
        (["--json", "--format", "srt"], "--json"),
        (["--chunking", "smart"], "--chunking"),
        (["--chunking", "fixed"], "--chunk-seconds"),
        (["--chunking", "fixed", "--chunk-seconds", "0"], "--chunk-seconds"),
        (["--chunking", "fixed", "--chunk-seconds", "-3"], "--chunk-seconds"),
        (["--chunking", "fixed", "--chunk-seconds", "nan"], "--chunk-seconds"),
        (["--chunking", "fixed", "--chunk-seconds", "10s"], "--chunk-seconds"),
        (["-o", os.path.join(tmp, "x.txt"), "--output-dir", tmp], "--output-dir"),
        (["-o", ""], "--output"),
        (["--output-dir", ""], "--output-dir"),
    ]
    for opts, mention in cases:
        r = Run(opts + ["-m", model, wav])
        check(f"usage: {' '.join(opts)!r}", r,
              r.rc == 2 and r.out == "" and mention in r.err,
              f"expected exit 2 naming {mention}")
    for fmt in ("json", "srt", "vtt"):
        r = Run(["--format", fmt, "-m", model, wav, wav])
        check(f"usage: --format {fmt} with one input twice (both files beside it)", r,
              r.rc == 2 and r.out == "" and "would both write" in r.err, "expected exit 2")
        out = os.path.join(tmp, "two." + fmt)
        r = Run(["--format", fmt, "-o", out, "-m", model, wav, wav])
        check(f"usage: -o with --format {fmt} and two inputs", r,
              r.rc == 2 and not os.path.exists(out) and not leftovers(tmp), "expected exit 2, no file")
    r = Run(["-m", model, "-", wav, "-"], input_bytes=b"")
    check("usage: '-' twice", r, r.rc == 2 and "'-'" in r.err, "expected exit 2")
    d1, d2 = os.path.join(tmp, "u1"), os.path.join(tmp, "u2")
    os.makedirs(d1), os.makedirs(d2)
    a, b = shutil.copy(wav, os.path.join(d1, "same.wav")), shutil.copy(wav, os.path.join(d2, "same.flac"))
    od = os.path.join(tmp, "collide")
    r = Run(["--output-dir", od, "-m", model, a, b])
    check("usage: two inputs with the same output name", r,
          r.rc == 2 and "same.txt" in r.err and not os.path.exists(od), "expected exit 2 naming same.txt")
    r = Run(["-o", wav, "-m", model, wav])
    check("usage: -o naming an input", r, r.rc == 2 and os.path.getsize(wav) > 1000, "expected exit 2")
    # warnings, and --quiet silencing them
    r = Run(["--chunk-seconds", "5", "-m", model, wav])
    check("--chunk-seconds without --chunking fixed: a warning", r,
          r.rc == 0 and "warning" in r.err and "--chunk-seconds" in r.err, "expected a warning")
    r = Run(["-q", "--chunk-seconds", "5", "-m", model, wav])
    check("--quiet silences warnings", r, r.rc == 0 and r.err == "", "expected nothing on stderr")
    # beyond the model's limits: the library's message, exit 1
    r = Run(["--chunking", "fixed", "--chunk-seconds", "1000", "-m", model, wav])
    check("--chunk-seconds beyond max_audio_clip_s: exit 1", r,
          r.rc == 1 and r.out == "" and "chunk_seconds" in r.err and wav in r.err, "expected exit 1")


def test_formats(model, long75, tmp):
    dur = 75.0
    r = Run(["--json", "-m", model, long75])
    objs = jsonl(r)
    ok = r.rc == 0 and objs is not None and len(objs) == 1
    why = check_result(objs[0], JSONL_KEYS, dur) if ok else "no JSON line"
    check("jsonl on 75 s: keys, segments add up", r, ok and not why, why)
    if not ok or why:
        return
    ref = objs[0]
    segs = ref["segments"]
    report("75 s audio gives several segments", len(segs) >= 2, f"{len(segs)} segments")
    r = Run(["--format", "jsonl", "-m", model, long75])
    check("--format jsonl == --json", r, r.rc == 0 and jsonl(r) and
          [dict(o, timings=None) for o in jsonl(r)] == [dict(ref, timings=None)], "differs")

    r = Run(["-m", model, long75])
    check("txt == the JSON text, one line", r,
          r.rc == 0 and r.out == ref["text"].replace("\n", " ").replace("\r", " ") + "\n", "differs")

    r = Run(["--format", "json", "-m", model, long75])
    try:
        doc = json.loads(r.out)
        why = check_result(doc, JSON_KEYS, dur)
        if not why and (doc["language"] != "da" or doc["duration"] != dur):
            why = f"language {doc['language']!r} duration {doc['duration']}"
        if not why and (doc["segments"] != segs or doc["text"] != ref["text"]):
            why = "segments or text differ from jsonl"
    except ValueError as e:
        why = f"not JSON: {e}"
    check("json on 75 s: one document with language and duration", r, r.rc == 0 and not why, why)

    r = Run(["--json", "--word-timestamps", "-m", model, long75])
    words = jsonl(r)[0]["words"] if jsonl(r) else []
    check("--word-timestamps on 75 s: words", r, r.rc == 0 and len(words) > 0, "no words")
    for fmt, parse in (("srt", parse_srt), ("vtt", parse_vtt)):
        r = Run(["--format", fmt, "-m", model, long75])
        try:
            why = cue_problem(parse(r.raw), words, segs, 7.0, 2, 42)
        except (ValueError, UnicodeDecodeError) as e:
            why = f"invalid {fmt}: {e}"
        check(f"{fmt} on 75 s: valid cues of the words, within the limits", r,
              r.rc == 0 and not why, why)
        opts = ["--max-cue-seconds", "2.5", "--max-lines", "1", "--max-line-chars", "20"]
        r3 = Run(["--format", fmt] + opts + ["-m", model, long75])
        try:
            why = cue_problem(parse(r3.raw), words, segs, 2.5, 1, 20)
        except (ValueError, UnicodeDecodeError) as e:
            why = f"invalid {fmt}: {e}"
        check(f"{fmt} with " + " ".join(opts) + ": within those limits", r3,
              r3.rc == 0 and not why, why)
        out = os.path.join(tmp, "long." + fmt)
        r2 = Run(["--format", fmt, "-o", out, "-m", model, long75])
        same = os.path.exists(out) and open(out, "rb").read() == r.raw
        check(f"-o FILE.{fmt} == stdout", r2, r2.rc == 0 and r2.out == "" and same and not leftovers(tmp),
              "file differs or missing")
    r = Run(["--format", "srt", "-o", "-", "-m", model, long75])
    check("-o - is standard output", r, r.rc == 0 and parse_srt(r.raw), "expected SRT on stdout")

    # parser self-check on hand-made text: escaping and time formats
    try:
        c = parse_vtt(b"WEBVTT\n\n00:00:01.000 --> 01:02:03.004\na &lt;b&gt; &amp; c\n\n")
        bad = 0
        for t in (b"WEBVTT\n\n00:00:01,000 --> 00:00:02.000\nx\n\n",
                  b"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na --> b\n\n",
                  b"WEBVTT\n00:00:01.000 --> 00:00:02.000\nx\n\n"):
            try:
                parse_vtt(t)
            except ValueError:
                bad += 1
        for t in (b"1\n00:00:01.000 --> 00:00:02,000\nx\n\n", b"2\n00:00:01,000 --> 00:00:02,000\nx\n\n",
                  b"1\n00:00:02,000 --> 00:00:01,000\nx\n\n", b"1\n00:00:01,000 --> 00:00:02,000\n\n\n"):
            try:
                parse_srt(t)
            except ValueError:
                bad += 1
        report("the SRT/VTT parsers refuse malformed files", c == [(1000, 3723004, "a <b> & c")] and bad == 7,
               f"{c} {bad}")
    except ValueError as e:
        report("the SRT/VTT parsers refuse malformed files", False, str(e))

    # silence: no segments; each format still valid
    sil = write_wav(os.path.join(tmp, "silence2s.wav"), [0] * (2 * RATE))
    r = Run(["--json", "--dither", "0", "-m", model, sil])
    objs = jsonl(r)
    if r.rc == 0 and objs and not objs[0]["segments"]:
        for fmt, parse in (("srt", parse_srt), ("vtt", parse_vtt)):
            r = Run(["--format", fmt, "--dither", "0", "-m", model, sil])
            try:
                ok = parse(r.raw) == []
            except ValueError:
                ok = False
            check(f"{fmt} with no segments is valid and empty", r, r.rc == 0 and ok, "")


def test_chunking(model, tiny, long75, ten_min):
    r = Run(["--json", "--chunking", "fixed", "--chunk-seconds", "10", "-m", model, long75])
    objs = jsonl(r)
    why = check_result(objs[0], JSONL_KEYS, 75.0) if objs else "no JSON"
    starts = [s["start"] for s in objs[0]["chunks"]] if objs and not why else []
    check("--chunking fixed --chunk-seconds 10: segments start at multiples of 10 s", r,
          r.rc == 0 and not why and starts and all(abs(s / 10 - round(s / 10)) < 1e-9 for s in starts)
          and len(starts) >= 5, why or f"starts {starts}")
    r = Run(["--json", "--chunking", "none", "-m", model, long75])
    objs = jsonl(r)
    check("--chunking none on 75 s: one segment", r,
          r.rc == 0 and objs and len(objs[0]["chunks"]) <= 1
          and (not objs[0]["chunks"] or objs[0]["chunks"][0]["end"] == 75.0), "")
    r = Run(["--json", "--chunking", "vad", "-m", model, long75])
    r2 = Run(["--json", "-m", model, long75])
    check("--chunking vad == auto (the default) on long audio", r,
          r.rc == 0 and jsonl(r) and jsonl(r2) and jsonl(r)[0]["segments"] == jsonl(r2)[0]["segments"], "")
    r = Run(["--chunking", "none", "-m", tiny, ten_min])
    check("--chunking none on 10 min: a clear error", r,
          r.rc == 1 and r.out == "" and ten_min in r.err and "too long" in r.err
          and "--chunking" in r.err, "expected exit 1 naming the file, the limit and --chunking")
    r = Run(["--json", "--chunking", "energy", "-m", tiny, ten_min])
    objs = jsonl(r)
    why = check_result(objs[0], JSONL_KEYS, 620.0) if objs else "no JSON"
    check("10 min on the tiny model, energy: >= 18 segments up to 620 s", r,
          r.rc == 0 and not why and len(objs[0]["chunks"]) >= 18
          and objs[0]["chunks"][-1]["end"] == 620.0, why)
    r2 = Run(["--format", "srt", "--chunking", "energy", "-m", tiny, ten_min])
    r3 = Run(["--json", "--word-timestamps", "--chunking", "energy", "-m", tiny, ten_min])
    try:
        words = jsonl(r3)[0]["words"]
        why = cue_problem(parse_srt(r2.raw), words, objs[0]["chunks"], 7.0, 2, 42)
    except (ValueError, TypeError, KeyError) as e:
        why = f"invalid: {e}"
    check("10 min as SRT: valid cues of all the words, within 620 s", r2, r2.rc == 0 and not why,
          why)


def test_batch(model, wav, long75, tmp):
    garbage = os.path.join(tmp, "corrupt.wav")
    with open(garbage, "wb") as f:
        f.write(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(200)))
    missing = os.path.join(tmp, "missing.wav")
    files = [long75, garbage, wav, missing]
    r = Run(["--json", "-m", model] + files)
    objs = jsonl(r)
    check("batch to stdout: corrupt and missing files reported, the rest go on", r,
          r.rc == 1 and objs is not None and [o["file"] for o in objs] == [long75, wav]
          and garbage in r.err and missing in r.err, "")

    out = os.path.join(tmp, "batch.jsonl")
    r = Run(["--json", "-o", out, "-m", model] + files)
    try:
        lines = [json.loads(l)["file"] for l in open(out, encoding="utf-8")]
    except (OSError, ValueError):
        lines = None
    check("batch to -o FILE: the successful results, exit 1", r,
          r.rc == 1 and r.out == "" and lines == [long75, wav] and not leftovers(tmp), f"{lines}")

    with open(out, "w") as f:
        f.write("previous\n")
    r = Run(["--json", "-o", out, "-m", model, garbage, missing])
    check("-o FILE when every input fails: FILE untouched", r,
          r.rc == 1 and open(out).read() == "previous\n" and not leftovers(tmp), "")
    new = os.path.join(tmp, "never.txt")
    r = Run(["-o", new, "-m", model, garbage])
    check("-o FILE when the input fails: no file", r,
          r.rc == 1 and not os.path.exists(new) and not leftovers(tmp), "")
    r = Run(["-o", os.path.join(tmp, "no-such-dir", "x.txt"), "-m", model, wav])
    check("-o into a missing directory: exit 1 before any work", r,
          r.rc == 1 and "no-such-dir" in r.err and r.out == "", "")

    r = Run(["--output-dir", garbage, "-m", model, wav])
    check("--output-dir naming a file: exit 1 before any work", r,
          r.rc == 1 and garbage in r.err and r.out == "", "")
    for fmt in ("txt", "json", "jsonl", "srt", "vtt"):
        od = os.path.join(tmp, "out-" + fmt)   # created by hviske
        noext = os.path.join(tmp, "noext")
        shutil.copy(wav, noext)
        r = Run(["--format", fmt, "--output-dir", od, "-m", model, long75, garbage, noext])
        names = sorted(os.listdir(od)) if os.path.isdir(od) else None
        want = sorted([os.path.splitext(os.path.basename(long75))[0] + "." + fmt, "noext." + fmt])
        check(f"--output-dir, --format {fmt}: one file per good input, named after it", r,
              r.rc == 1 and r.out == "" and names == want and garbage in r.err, f"{names} != {want}")
        if names == want:
            data = open(os.path.join(od, want[0] if "long" in want[0] else want[1]), "rb").read()
            try:
                if fmt == "srt":
                    parse_srt(data)
                elif fmt == "vtt":
                    parse_vtt(data)
                elif fmt == "json":
                    why = check_result(json.loads(data), JSON_KEYS, 75.0)
                    assert not why, why
                elif fmt == "jsonl":
                    assert len(data.splitlines()) == 1
                    why = check_result(json.loads(data), JSONL_KEYS, 75.0)
                    assert not why, why
                else:
                    assert data.endswith(b"\n") and data.count(b"\n") == 1
                ok = True
            except (ValueError, AssertionError) as e:
                ok = False
                print("   ", e)
            report(f"--output-dir {fmt} file is valid", ok)


def test_stdin(model, wav, flac, tmp):
    with open(wav, "rb") as f:
        data = f.read()
    a = Run(["--json", "-m", model, wav])
    b = Run(["--json", "-m", model, "-"], input_bytes=data)
    ja, jb = jsonl(a), jsonl(b)
    same = ja and jb and jb[0]["file"] == "-" and dict(ja[0], file=0, timings=0) == dict(jb[0], file=0, timings=0)
    check("'-' reads a WAV from a pipe, same result as the file", b, b.rc == 0 and same, f"{a}")
    with open(flac, "rb") as f:
        fdata = f.read()
    a = Run(["-m", model, flac])
    b = Run(["-m", model, "-"], input_bytes=fdata)
    check("'-' reads FLAC from a pipe", b, b.rc == 0 and a.rc == 0 and a.out == b.out, f"{a}")
    with open(wav, "rb") as f:
        r = Run(["--json", "-m", model, flac, "-", wav], stdin=f)
    objs = jsonl(r)
    check("'-' among other inputs, in order", r,
          r.rc == 0 and objs and [o["file"] for o in objs] == [flac, "-", wav], "")
    od = os.path.join(tmp, "stdin-out")
    r = Run(["--format", "vtt", "--output-dir", od, "-m", model, "-"], input_bytes=data)
    check("'-' with --output-dir writes stdin.vtt", r,
          r.rc == 0 and os.listdir(od) == ["stdin.vtt"], f"{os.listdir(od) if os.path.isdir(od) else None}")
    r = Run(["-m", model, "-"], input_bytes=b"not audio at all" * 100)
    check("'-' with garbage: exit 1 naming '-'", r, r.rc == 1 and r.err.startswith("hviske: -: "), "")
    r = Run(["-m", model, "-"], input_bytes=b"")
    check("'-' with nothing: exit 1", r, r.rc == 1 and "-: empty input" in r.err, "")
    r = Run(["-m", model, "-", wav], input_bytes=data[:60])
    check("'-' truncated to its header, then a good file", r,
          r.rc == 1 and len(r.out.splitlines()) == 1 and "hviske: -:" in r.err, "")


def default_signals():
    """In the child: SIGINT and friends as a terminal would deliver them (a
    test runner started in the background has them ignored, and hviske
    keeps ignored signals ignored)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def test_atomic(model, long_path, tmp):
    """Kill runs while they work: no output file, no temporary file. Each
    signal is sent once the run is seen at work (its temporary file, made
    after the signal handlers are in place and before the model loads, or
    the first input's finished file), never after a fixed sleep."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        d = os.path.join(tmp, "kill-%d" % sig)
        os.makedirs(d)
        out = os.path.join(d, "out.srt")
        p = subprocess.Popen([CLI, "--format", "srt", "-t", "1", "-o", out, "-m", model, long_path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_signals)
        at_work = wait_until(lambda: leftovers(d) or p.poll() is not None, interval=0.002)
        at_work = at_work and p.poll() is None
        p.send_signal(sig)
        _, err = p.communicate(timeout=TIMEOUT)
        killed = p.returncode == -sig
        left = leftovers(d)
        ok = at_work and killed and not os.path.exists(out) and (sig == signal.SIGKILL or not left)
        report(f"{signal.Signals(sig).name} during a run: no output file"
               + ("" if sig == signal.SIGKILL else ", no temporary file"), ok,
               ("" if at_work else f"no temporary file within {WAIT} s while running; ")
               + f"rc={p.returncode} files={os.listdir(d)} stderr={err[-300:]!r}")

    # --output-dir: kill while the second input is at work, once the first
    # one's file is there: that file is complete, nothing else is left
    d = os.path.join(tmp, "kill-dir")
    copy = os.path.join(tmp, "second.wav")
    shutil.copy(long_path, copy)
    first = os.path.join(d, os.path.splitext(os.path.basename(long_path))[0] + ".vtt")
    p = subprocess.Popen([CLI, "--format", "vtt", "-t", "1", "--output-dir", d, "-m", model,
                          long_path, copy], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_signals)
    # the first input takes as long as it takes here: wait as long as a run may
    at_work = wait_until(lambda: os.path.exists(first) or p.poll() is not None,
                         timeout=TIMEOUT, interval=0.002)
    at_work = at_work and p.poll() is None
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=TIMEOUT)
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    try:
        ok = at_work and p.returncode == -signal.SIGTERM and files == [os.path.basename(first)] \
            and len(parse_vtt(open(first, "rb").read())) > 10
    except ValueError:
        ok = False
    report("SIGTERM during an --output-dir batch: the finished file, complete, and nothing else",
           ok, ("" if at_work else "the first file never came while running; ")
           + f"rc={p.returncode} files={files} stderr={err[-300:]!r}")


def test_progress(model, long75, tmp):
    def on_pty(args):
        master, slave = pty.openpty()
        p = subprocess.Popen([CLI] + args, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    b = os.read(master, 4096)
                except OSError:
                    b = b""
                if not b:
                    break
                chunks.append(b)
            elif p.poll() is not None:
                break
        out = p.stdout.read()
        p.wait()
        os.close(master)
        return p.returncode, out, b"".join(chunks).decode("utf-8", "replace")

    rc, out, err = on_pty(["-m", model, long75])
    report("progress on a terminal: percentage, speed, ETA", rc == 0 and out and "%" in err
           and "ETA" in err and "audio per second" in err and "\r" in err, f"rc={rc} stderr={err!r}")
    rc, out2, err = on_pty(["--quiet", "-m", model, long75])
    report("no progress with --quiet", rc == 0 and out2 == out and err == "", f"stderr={err!r}")
    r = Run(["-m", model, long75])
    check("no progress when stderr is not a terminal", r, r.rc == 0 and r.err == "", "")


def main():
    if fixtures_manifest() is None:
        return finish()
    model = os.path.join(FIXTURES, "models", "multi-f32")
    tiny = os.path.join(FIXTURES, "models", "tiny-f32")
    wav = os.path.join(FIXTURES, "audio", "da1_16k.wav")
    flac = os.path.join(FIXTURES, "audio", "da5_16k.flac")
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="hv-test-long-") as tmp:
        long75 = write_wav(os.path.join(tmp, "long75.wav"), make_long_audio(FIXTURES, 75.0, 1))
        ten_min = write_wav(os.path.join(tmp, "ten_min.wav"), make_long_audio(FIXTURES, 620.0, 2, 8.0))
        # for the kill tests: long enough to be still at work when killed
        twenty = write_wav(os.path.join(tmp, "twenty_min.wav"), make_long_audio(FIXTURES, 1200.0, 4, 8.0))
        test_usage(model, wav, tmp)
        test_formats(model, long75, tmp)
        test_chunking(model, tiny, long75, ten_min)
        test_batch(model, wav, long75, tmp)
        test_stdin(model, wav, flac, tmp)
        test_atomic(model, twenty, tmp)
        test_progress(model, long75, tmp)
    print(f"({time.time() - t0:.1f} s)")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
