"""python -m hviske: a thin command line over the package, for scripts
that have Python but not the hviske program. The real command line is
`hviske` (docs/CLI.md); this mirrors its most used options and its txt and
jsonl outputs.

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
from typing import Any, Optional, Sequence

from . import Error, InvalidArgument, Model, Result, Word


def _usage_error(e: BaseException) -> bool:
    """A bad option value, found before the library is called."""
    return isinstance(e, TypeError) or (isinstance(e, InvalidArgument) and e.status is None)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m hviske",
                                description="Transcribes audio files with a Hviske / Cohere "
                                            "Transcribe checkpoint (one line per file).")
    p.add_argument("files", nargs="+", metavar="FILE", help="audio files")
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
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--word-timestamps", action="store_true",
                   help="with --json: each word with its start, end and probability")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per file and line (file, text, language, duration, "
                        "segments; words)")
    return p


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
    hvt_float_for_json: 0.91978943, not 0.9197894334793091), so the number
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
              "segments": [dict({"start": s.start, "end": s.end, "text": s.text,
                                 "tokens": s.tokens},
                                **({"words": [json_word(w) for w in s.words]} if words else {}))
                           for s in r.segments]})
    if words:
        o["words"] = [json_word(w) for w in r.words]
    return json.dumps(o, ensure_ascii=False)


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = _parser().parse_args(argv)
    try:
        model = Model(a.model, threads=a.threads, weight_type=a.weight_type)
    except (Error, TypeError) as e:
        print(f"hviske: {e}", file=sys.stderr)
        return 2 if _usage_error(e) else 1
    rc = 0
    with model:
        for path in a.files:
            try:
                r = model.transcribe(path, language=a.language,
                                     punctuation=not a.no_punctuation, beams=a.beams,
                                     length_penalty=a.length_penalty, sample=a.sample,
                                     temperature=a.temperature, top_k=a.top_k, top_p=a.top_p,
                                     seed=a.seed, chunking=a.chunking,
                                     chunk_seconds=a.chunk_seconds,
                                     word_timestamps=a.word_timestamps)
            except (Error, TypeError) as e:
                if _usage_error(e):
                    print(f"hviske: {e}", file=sys.stderr)
                    return 2
                msg = str(e)
                print(f"hviske: {msg if msg.startswith(path) else path + ': ' + msg}",
                      file=sys.stderr)
                rc = 1
                continue
            line = _json(path, r, a.word_timestamps) if a.json else \
                r.text.replace("\n", " ").replace("\r", " ")
            print(line, flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
