"""python -m hviske: a thin command line over the package, for scripts
that have Python but not the hviske program. The real command line is
`hviske` (docs/CLI.md); this mirrors its most used options. Every format
(txt, jsonl, json, srt, vtt) is written by the library's writers
(include/hviske_output.h), byte for byte the program's with its default
cue limits: Python formats nothing itself.

    python -m hviske -m MODEL_DIR [options] FILE...

Exit status: 0 success, 1 a file or the model failed, 2 bad usage.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import Error, InvalidArgument, Model, StandardInput, load_library
from . import _native
from ._output import SRT_SPEAKERS, write_result

# the formats of --format; json, srt and vtt are one document per input
# (several inputs: a file each), txt and jsonl a line per input
FORMATS = ("txt", "jsonl", "json", "srt", "vtt")
DOCUMENTS = ("json", "srt", "vtt")


def _usage_error(e: BaseException) -> bool:
    """A bad option value, found before the library is called."""
    return isinstance(e, TypeError) or (isinstance(e, InvalidArgument) and e.status is None)


def _row(name: str, more: str = "") -> Dict[str, Any]:
    """help= and metavar= of the option over the library's parameter row
    `name` (src/params.c), as hviske's --help words it: the row's help,
    what it takes and `more`, joined by "; ". Without the library (it is
    needed to run anyway), the option is listed without them."""
    try:
        lib = load_library()
    except Error:
        return {}
    ptr = lib.hv_param_find(name.encode())
    row = ptr.contents
    parts = [row.help.decode()]
    if row.type not in (_native.PARAM_BOOL, _native.PARAM_STRING):
        buf = ctypes.create_string_buffer(256)
        parts.append(lib.hv_param_expect(ptr, buf, len(buf)).decode())
    if more:
        parts.append(more)
    out: Dict[str, Any] = {"help": "; ".join(parts).replace("%", "%%")}
    if row.type != _native.PARAM_BOOL and row.metavar:
        out["metavar"] = row.metavar.decode()
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hviske",
                                description="Transcribes audio files with a Hviske / Cohere "
                                            "Transcribe checkpoint (one line per file).")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="audio files ('-': one from standard input)")
    p.add_argument("-m", "--model", required=True, help="checkpoint directory")
    p.add_argument("-l", "--language", **_row("language"))
    p.add_argument("--no-punctuation", action="store_true")
    p.add_argument("-t", "--threads", type=int, help="worker threads (default: all cores)")
    p.add_argument("--weight-type", default="auto", help="auto, f32, f16, bf16, q8_0 or q4_0")
    p.add_argument("--chunking", default="auto", **_row("chunking"))
    p.add_argument("--chunk-seconds", type=float, **_row("chunk_seconds"))
    p.add_argument("--beams", type=int, default=1, **_row("num_beams"))
    p.add_argument("--length-penalty", type=float, default=1.0, **_row("length_penalty"))
    p.add_argument("--sample", action="store_true", **_row("do_sample"))
    p.add_argument("--temperature", type=_temperatures, default=1.0,
                   **_row("temperature", "a list T1,T2,... (e.g. 0,0.2,0.4,0.6,0.8,1) decodes "
                                         "each chunk again at the next temperature while its "
                                         "text fails the fallback's thresholds"))
    p.add_argument("--top-k", type=int, default=0, **_row("top_k"))
    p.add_argument("--top-p", type=float, default=1.0, **_row("top_p"))
    p.add_argument("--seed", type=int, default=0, **_row("seed"))
    p.add_argument("--hotwords", **_row("hotwords"))
    p.add_argument("--hotwords-score", type=float, default=1.5, **_row("hotwords_score"))
    p.add_argument("--repetition-penalty", type=float, default=1.0,
                   **_row("repetition_penalty"))
    p.add_argument("--no-repeat-ngram-size", type=int, default=0,
                   **_row("no_repeat_ngram_size"))
    p.add_argument("--diarize", action="store_true", **_row("diarize", "docs/DIARIZE.md"))
    p.add_argument("--diarize-voice", type=float, default=None, **_row("diarize_voice"))
    p.add_argument("--srt-speakers", choices=SRT_SPEAKERS, default="label",
                   help="srt with --diarize: label (default) opens each cue with "
                        "[SPEAKER_00], dash opens a turn's first cue with \"- \"")
    p.add_argument("--word-timestamps", action="store_true",
                   **_row("word_timestamps", "json, jsonl: \"words\" in each result and "
                                             "segment"))
    p.add_argument("--json", action="store_true",
                   help="same as --format jsonl, as hviske's --json")
    p.add_argument("--format", choices=FORMATS,
                   help="txt (default): the transcript, one line per file; jsonl: one JSON "
                        "object per line per file (file, text, tokens, token_logprobs, score, "
                        "timings, segments); json: one indented JSON document per file (adds "
                        "language and duration); srt, vtt: SubRip / WebVTT subtitles. All as "
                        "hviske writes them. json, srt and vtt: on standard output for one "
                        "input, else NAME.EXT beside each input or in --output-dir")
    p.add_argument("--output-dir", help="json, srt, vtt: write each input's file there")
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    a = parser.parse_args(argv)
    fmt = a.format or ("jsonl" if a.json else "txt")
    if a.json and fmt != "jsonl":
        parser.error(f"--json (= --format jsonl) and --format {fmt} are two formats: give one")
    docs = fmt in DOCUMENTS
    kind, what = ("JSON", "documents") if fmt == "json" else ("subtitle", "subtitles")
    if a.output_dir is not None and not docs:
        parser.error("--output-dir is for --format json, srt and vtt")
    if a.files.count("-") > 1:
        parser.error("'-' (standard input) given %d times" % a.files.count("-"))
    to_files = docs and (a.output_dir is not None or len(a.files) > 1)
    if a.output is not None and to_files:
        parser.error(f"-o FILE holds one output: several inputs' {what} go to files beside "
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
        parser.error(f"two inputs would write the same {kind} file: give --output-dir or "
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
                model.transcribe(audio, language=a.language,
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
                                     diarize=a.diarize, diarize_voice=a.diarize_voice,
                                     _output=lambda res: written.append(write_result(
                                         model._lib, res, fmt, path, a.srt_speakers,
                                         a.word_timestamps)))
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
            text = written[0].decode("utf-8", "replace")
            if not to_files:
                emit(text)
                continue
            try:
                _write(outputs[i], text)
            except OSError as e:
                print(f"hviske: {outputs[i]}: {e.strerror or e}", file=sys.stderr)
                rc = 1
    if a.output is not None and n_ok:
        try:
            _write(a.output, "".join(sink))
        except OSError as e:
            print(f"hviske: {a.output}: {e.strerror or e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
