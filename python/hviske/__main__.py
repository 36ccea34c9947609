"""python -m hviske: a thin command line over the package, for scripts
that have Python but not the hviske program. The real command line is
`hviske` (docs/CLI.md); this mirrors its most used options; txt, srt and
vtt are written by the library's writers (include/hviske_output.h), byte
for byte the program's with its default cue limits.

    python -m hviske -m MODEL_DIR [options] FILE...

Exit status: 0 success, 1 a file or the model failed, 2 bad usage.
"""
from __future__ import annotations

import argparse
import base64
import json
import math
import os
import struct
import sys
import time
from typing import Any, Callable, List, Optional, Sequence, Union

from . import Error, InvalidArgument, Model, Result, StandardInput, Word
from ._output import SRT_SPEAKERS, write_result


def _usage_error(e: BaseException) -> bool:
    """A bad option value, found before the library is called."""
    return isinstance(e, TypeError) or (isinstance(e, InvalidArgument) and e.status is None)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hviske",
                                description="Transcribes audio files with a Hviske / Cohere "
                                            "Transcribe checkpoint (one line per file).")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="audio files ('-': one from standard input)")
    p.add_argument("-m", "--model", required=True, help="checkpoint directory")
    p.add_argument("-l", "--language", help="language code (default: da if supported)")
    p.add_argument("--no-punctuation", action="store_true")
    p.add_argument("-t", "--threads", type=int, help="worker threads (default: all cores)")
    p.add_argument("--weight-type", default="auto", help="auto, f32, f16, bf16, q8_0 or q4_0")
    p.add_argument("--chunking", default="auto", help="auto, vad, energy, fixed or none")
    p.add_argument("--chunk-seconds", type=float, help="chunk length for --chunking fixed")
    p.add_argument("--beams", type=int, default=1, help="beam search with N beams")
    p.add_argument("--length-penalty", type=float, default=1.0)
    p.add_argument("--sample", action="store_true", help="sample instead of greedy")
    p.add_argument("--temperature", type=_temperatures, default=1.0,
                   help="sampling temperature (0: greedy), or a list T1,T2,... (the "
                        "temperature fallback)")
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--hotwords", help="names and phrases to bias decoding towards, separated "
                                      "by commas")
    p.add_argument("--hotwords-score", type=float, default=1.5,
                   help="the bonus per matched token (default 1.5)")
    p.add_argument("--repetition-penalty", type=float, default=1.0,
                   help="Hugging Face's repetition penalty (default 1: off)")
    p.add_argument("--no-repeat-ngram-size", type=int, default=0,
                   help="ban a repeated run of N tokens (default 0: off)")
    p.add_argument("--diarize", action="store_true",
                   help="a diarize model's speaker turns, each segment with its speaker "
                        "(docs/DIARIZE.md)")
    p.add_argument("--srt-speakers", choices=SRT_SPEAKERS, default="label",
                   help="srt with --diarize: label (default) opens each cue with "
                        "[SPEAKER_00], dash opens a turn's first cue with \"- \"")
    p.add_argument("--word-timestamps", action="store_true",
                   help="with --json: each word with its start, end and probability")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per file and line (file, text, language, duration, "
                        "segments; words)")
    p.add_argument("--format", choices=("txt", "json", "srt", "vtt"),
                   help="txt (default), json (--json), or SubRip / WebVTT subtitles: on "
                        "standard output for one input, else NAME.srt or NAME.vtt beside "
                        "each input or in --output-dir")
    p.add_argument("--output-dir", help="srt, vtt: write each input's subtitles there")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write what goes to standard output to FILE instead, whole (when "
                        "an input succeeded) or not at all")
    p.add_argument("--progress", action="store_true",
                   help="progress lines on standard error after each chunk, as hviske's")
    return p


def _progress(path: str) -> Callable[[float, float], None]:
    """A progress callback writing hviske's progress lines for path."""
    t0 = time.monotonic()

    def report(done: float, total: float) -> None:
        dt = time.monotonic() - t0
        speed = done / dt if dt > 0 else 0.0
        eta = (total - done) / speed if speed > 0 else 0.0
        pct = 100.0 * done / total if total > 0 else 100.0
        print(f"hviske: {path}: progress {pct:.1f}% done_s={done:.2f} total_s={total:.2f} "
              f"speed={speed:.2f} eta_s={eta:.0f}", file=sys.stderr, flush=True)
    return report


def _temperatures(text: str) -> Union[float, list[float]]:
    """--temperature: one float, or several joined by commas."""
    values = [float(t) for t in text.split(",")]
    return values[0] if len(values) == 1 else values


def _output_path(path: str, ext: str, out_dir: Optional[str]) -> str:
    """DIR/NAME.EXT for an input (DIR: out_dir, else the input's own
    directory), its last extension replaced, as the program names them."""
    base = os.path.basename(path)
    stem, dot = os.path.splitext(base)
    name = (stem if dot else base) + "." + ext
    return os.path.join(out_dir if out_dir is not None else os.path.dirname(path), name)


def _same_file(a: str, b: str) -> bool:
    """Whether paths a and b name one existing file (links, "./", another
    spelling of the folder)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _write(path: str, text: str) -> None:
    """Writes text to path whole or not at all (a temporary file beside it,
    renamed when complete)."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def json_round(x: float, digits: int) -> float:
    """x rounded as the hviske program rounds numbers in its JSON,
    round(x * 10^digits) / 10^digits with C's round() (halves away from
    zero), and 0 for a value that is not finite (JSON has no NaN)."""
    if not math.isfinite(x):
        return 0.0
    scale = 10.0 ** digits
    v = abs(x) * scale
    whole = math.floor(v)
    return math.copysign(whole + (1.0 if v - whole >= 0.5 else 0.0), x) / scale


FLT_MAX = 3.4028234663852886e38


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def json_float(x: float) -> float:
    """x, a value the library computed as a float (a word's probability),
    as the hviske program writes it in JSON: the shortest decimal of 6 to 9
    significant digits that reads back as the same float (its
    hv_output_float, src/output/json.c: 0.91978943, not 0.9197894334793091), so the number
    is the library's, unrounded, and the same in every interface; 0 for a
    value that is not finite (JSON has no NaN)."""
    if not math.isfinite(x):
        return 0.0
    if abs(x) > FLT_MAX:
        return x
    f, text = _f32(x), ""
    for prec in range(6, 10):
        text = "%.*g" % (prec, x)
        if _f32(float(text)) == f:
            break
    return float(text)


def json_word(w: Word) -> dict[str, Any]:
    """A word as the hviske program's JSON writes it: times to the
    millisecond (json_round), the probability unrounded (json_float; the
    Word has the library's value)."""
    return {"word": w.word, "start": json_round(w.start, 3), "end": json_round(w.end, 3),
            "probability": json_float(w.probability)}


def _name(o: dict[str, Any], key: str, path: str) -> None:
    """key: the file name; one that is not UTF-8 as the programs write it
    (docs/CLI.md, "File names in JSON"): stray bytes as \\xHH, and
    key_bytes the name's bytes in base64."""
    raw = os.fsencode(path)
    try:
        o[key] = raw.decode("utf-8")
    except UnicodeDecodeError:
        o[key] = raw.decode("utf-8", "backslashreplace")
        o[key + "_bytes"] = base64.b64encode(raw).decode("ascii")


def _json(path: str, r: Result, words: bool) -> str:
    o: dict[str, Any] = {}
    _name(o, "file", path)
    o.update({"text": r.text, "language": r.language, "duration": r.duration,
              "segments": [dict({"start": s.start, "end": s.end},
                                **({"speaker": s.speaker} if s.speaker >= 0 else {}),
                                text=s.text, tokens=s.tokens,
                                **({"words": [json_word(w) for w in s.words]} if words else {}))
                           for s in r.segments]})
    if words:
        o["words"] = [json_word(w) for w in r.words]
    return json.dumps(o, ensure_ascii=False)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    a = parser.parse_args(argv)
    fmt = a.format or ("json" if a.json else "txt")
    if a.json and fmt != "json":
        parser.error(f"--json and --format {fmt} are two formats: give one")
    docs = fmt in ("srt", "vtt")
    if a.output_dir is not None and not docs:
        parser.error("--output-dir is for --format srt and vtt")
    if a.files.count("-") > 1:
        parser.error("'-' (standard input) given %d times" % a.files.count("-"))
    to_files = docs and (a.output_dir is not None or len(a.files) > 1)
    if a.output is not None and to_files:
        parser.error("-o FILE holds one output: several inputs' subtitles go to files beside "
                     "them or into --output-dir DIR")
    sink: List[str] = []  # -o FILE: what would go to standard output

    def emit(text: str) -> None:
        if a.output is not None:
            sink.append(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    outputs = [_output_path(f, fmt, a.output_dir) for f in a.files] if to_files else []
    if len(set(outputs)) < len(outputs):
        parser.error("two inputs would write the same subtitle file: give --output-dir or "
                     "rename them")
    try:
        model = Model(a.model, threads=a.threads, weight_type=a.weight_type)
    except (Error, TypeError) as e:
        print(f"hviske: {e}", file=sys.stderr)
        return 2 if _usage_error(e) else 1
    rc, n_ok = 0, 0
    with model:
        for i, path in enumerate(a.files):
            # an output is never an input, this one or another (a file
            # named talk.srt would be replaced by its own subtitles)
            input_at = next((f for f in a.files if to_files and _same_file(f, outputs[i])), None)
            if input_at is not None:
                print(f"hviske: {outputs[i]}: not overwriting the input {input_at}",
                      file=sys.stderr)
                rc = 1
                continue
            written: List[bytes] = []
            try:
                audio: Any = StandardInput() if path == "-" else path
                r = model.transcribe(audio, language=a.language,
                                     punctuation=not a.no_punctuation, beams=a.beams,
                                     length_penalty=a.length_penalty, sample=a.sample,
                                     temperature=a.temperature, top_k=a.top_k, top_p=a.top_p,
                                     seed=a.seed, chunking=a.chunking,
                                     chunk_seconds=a.chunk_seconds,
                                     word_timestamps=a.word_timestamps,
                                     progress=_progress(path) if a.progress else None,
                                     hotwords=a.hotwords, hotwords_score=a.hotwords_score,
                                     repetition_penalty=a.repetition_penalty,
                                     no_repeat_ngram_size=a.no_repeat_ngram_size,
                                     diarize=a.diarize,
                                     _output=None if fmt == "json" else
                                     lambda res: written.append(write_result(
                                         model._lib, res, fmt, path, a.srt_speakers)))
            except (Error, TypeError) as e:
                if _usage_error(e):
                    print(f"hviske: {e}", file=sys.stderr)
                    return 2
                msg = str(e)
                print(f"hviske: {msg if msg.startswith(path) else path + ': ' + msg}",
                      file=sys.stderr)
                rc = 1
                continue
            n_ok += 1
            if docs:
                text = written[0].decode("utf-8", "replace")
                if not to_files:
                    emit(text)
                    continue
                try:
                    _write(outputs[i], text)
                except OSError as e:
                    print(f"hviske: {outputs[i]}: {e.strerror or e}", file=sys.stderr)
                    rc = 1
                continue
            emit(_json(path, r, a.word_timestamps) + "\n" if fmt == "json" else
                 written[0].decode("utf-8", "replace"))
    if a.output is not None and n_ok:
        try:
            _write(a.output, "".join(sink))
        except OSError as e:
            print(f"hviske: {a.output}: {e.strerror or e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
