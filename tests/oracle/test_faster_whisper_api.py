#!/usr/bin/env python3
"""hviske.WhisperModel against faster-whisper itself (the pinned
faster-whisper of tests/oracle/requirements.lock, imported beside it):

  * every parameter of WhisperModel.__init__, WhisperModel.transcribe,
    BatchedInferencePipeline.__init__ and BatchedInferencePipeline.transcribe:
    the same names in the same order, the same kinds (positional, keyword,
    **kwargs), the same defaults, and the same types;
  * every field of Segment, Word, TranscriptionInfo, TranscriptionOptions
    and VadOptions: the same names in the same order, defaults and types;
  * every parameter of the four and every field of Segment, Word and
    TranscriptionInfo has its row in python/README.md's tables ("Coming
    from faster-whisper"), which say what hviske does with it.

Types are compared as typing.get_type_hints resolves them, the module
prefixes left out (faster_whisper.vad.VadOptions is VadOptions), a
parameter whose default is None taken as Optional (PEP 484's implicit
Optional, which faster-whisper uses), and a bare dict of faster-whisper
matching any dict[...] of hviske. The differences hviske keeps on purpose
are TYPE_DIFFERENCES below, each with its reason; any other difference, a
renamed, missing or added parameter or field, or a changed default fails.

Environment: HV_SOURCE_DIR, HV_BINARY_DIR (libhviske.so). One line per
case, then "N passed, M failed".
"""

import dataclasses
import inspect
import os
import re
import sys
import typing

SOURCE = os.path.abspath(os.environ["HV_SOURCE_DIR"])
BINARY = os.path.abspath(os.environ["HV_BINARY_DIR"])
os.environ["HVISKE_LIBRARY"] = os.path.join(BINARY, "libhviske.so")
sys.path.insert(0, os.path.join(SOURCE, "python"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import oracle_import  # noqa: E402

PASSED = FAILED = 0

# (where, name): (faster-whisper's type, hviske's, why hviske's differs)
TYPE_DIFFERENCES = {
    ("WhisperModel.transcribe", "audio"): (
        "Union[str, BinaryIO, ndarray]", "Union[str, BinaryIO, Any]",
        "hviske does not depend on numpy: samples may be any sequence of floats"),
    ("BatchedInferencePipeline.transcribe", "audio"): (
        "Union[str, BinaryIO, ndarray]", "Union[str, BinaryIO, Any]",
        "hviske does not depend on numpy: samples may be any sequence of floats"),
    ("WhisperModel.__init__", "model_kwargs"): (
        "", "Any", "unannotated in faster-whisper; hviske's package is typed (py.typed)"),
    ("BatchedInferencePipeline.__init__", "model"): (
        "", "WhisperModel", "unannotated in faster-whisper; hviske's package is typed (py.typed)"),
    ("TranscriptionInfo", "vad_options"): (
        "VadOptions", "Optional[VadOptions]",
        "faster-whisper puts None there without vad_filter too; hviske's type says so"),
}


def report(name, fails, detail=""):
    global PASSED, FAILED
    if fails:
        FAILED += 1
        print("FAIL %-60s %s | %s" % (name, detail, "; ".join(fails)))
    else:
        PASSED += 1
        print("ok   %-60s %s" % (name, detail))
    sys.stdout.flush()


def strip_dict_params(s):
    """dict[...] -> dict (balanced brackets)."""
    out, i = [], 0
    while i < len(s):
        if s.startswith("dict[", i) and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")):
            out.append("dict")
            depth, i = 0, i + 4
            while i < len(s):
                depth += {"[": 1, "]": -1}.get(s[i], 0)
                i += 1
                if depth == 0:
                    break
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def norm(t, default, refine_dict=False):
    """A type as text: module prefixes dropped, Optional written out when
    the default is None, dict[...] as dict when refine_dict."""
    if t is inspect.Parameter.empty:
        return ""
    s = t if isinstance(t, str) else repr(t)
    s = re.sub(r"<class '([\w.]+)'>", r"\1", s)
    s = re.sub(r"\b(typing|collections\.abc|faster_whisper\.transcribe|faster_whisper\.vad|"
               r"hviske\.whisper|hviske|numpy)\.", "", s)
    s = s.replace("NoneType", "None").replace("Dict[", "dict[").replace(" ", "")
    s = re.sub(r"Optional\[(.*)\]$", r"Union[\1,None]", s)
    if default is None and s and "None" not in s:
        s = "Union[%s,None]" % s if not s.startswith("Union[") else s[:-1] + ",None]"
    if refine_dict:
        s = strip_dict_params(s)
    return s


def signature_rows(fn):
    hints = typing.get_type_hints(fn)
    rows = []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        rows.append((p.name, p.kind, p.default, hints.get(p.name, inspect.Parameter.empty)))
    return rows


def same_default(a, b):
    if a is inspect.Parameter.empty or b is inspect.Parameter.empty:
        return a is b
    seqs = (list, tuple)
    if type(a) is not type(b) and not (isinstance(a, seqs) and isinstance(b, seqs)):
        return False
    return a == b


def compare_types(where, name, fw_t, hv_t, default, fails):
    a, b = norm(fw_t, default, True), norm(hv_t, default, True)
    if a == b:
        return
    known = TYPE_DIFFERENCES.get((where, name))
    if known and (known[0].replace(" ", ""), known[1].replace(" ", "")) == (a, b):
        return
    fails.append("%s: type %s, faster-whisper's %s" % (name, b or "(none)", a or "(none)"))


def compare_signature(where, fw_fn, hv_fn):
    fails = []
    fw, hv = signature_rows(fw_fn), signature_rows(hv_fn)
    if [r[0] for r in fw] != [r[0] for r in hv]:
        fw_n, hv_n = [r[0] for r in fw], [r[0] for r in hv]
        k = next((i for i in range(min(len(fw_n), len(hv_n))) if fw_n[i] != hv_n[i]),
                 min(len(fw_n), len(hv_n)))
        fails.append("parameters differ from position %d: faster-whisper %s, hviske %s; only in "
                     "faster-whisper %s, only in hviske %s" % (
                         k, fw_n[k:k + 3], hv_n[k:k + 3], sorted(set(fw_n) - set(hv_n)),
                         sorted(set(hv_n) - set(fw_n))))
    hv_by = {r[0]: r for r in hv}
    for name, kind, default, t in fw:
        r = hv_by.get(name)
        if r is None:
            continue
        if r[1] != kind:
            fails.append("%s: %s, faster-whisper's %s" % (name, r[1], kind))
        if not same_default(default, r[2]):
            fails.append("%s: default %r, faster-whisper's %r" % (name, r[2], default))
        compare_types(where, name, t, r[3], default, fails)
    report(where, fails, "%d parameters" % len(fw))
    return [r[0] for r in fw]


def compare_fields(where, fw_cls, hv_cls):
    fails = []
    fw, hv = dataclasses.fields(fw_cls), dataclasses.fields(hv_cls)
    if [f.name for f in fw] != [f.name for f in hv]:
        fails.append("fields %s, faster-whisper's %s" % ([f.name for f in hv],
                                                         [f.name for f in fw]))
    fw_h, hv_h = typing.get_type_hints(fw_cls), typing.get_type_hints(hv_cls)
    hv_by = {f.name: f for f in hv}
    for f in fw:
        g = hv_by.get(f.name)
        if g is None:
            continue
        fd = None if f.default is dataclasses.MISSING else f.default
        gd = None if g.default is dataclasses.MISSING else g.default
        if (f.default is dataclasses.MISSING) != (g.default is dataclasses.MISSING) or fd != gd:
            fails.append("%s: default %r, faster-whisper's %r" % (f.name, g.default, f.default))
        compare_types(where, f.name, fw_h[f.name], hv_h[f.name], fd, fails)
    report(where, fails, "%d fields" % len(fw))
    return [f.name for f in fw]


def documented(where, names, readme):
    """Every name has a table row of python/README.md's faster-whisper
    section naming it in backticks."""
    part = readme.split("## Coming from faster-whisper", 1)[-1].split("\n## ", 1)[0]
    rows = [ln for ln in part.splitlines() if ln.startswith("| ")]
    missing = [n for n in names
               if not any(re.search(r"`(\*\*|\w+\.|\.)?%s`" % re.escape(n), r.split(" | ")[0])
                          for r in rows)]
    report("python/README.md rows for %s" % where, ["no row for %s" % ", ".join(missing)]
           if missing else [], "%d names" % len(names))


def main():
    faster_whisper = oracle_import("faster_whisper")
    from faster_whisper import transcribe as fw_t, vad as fw_vad
    import hviske
    import hviske.whisper as hw
    print("# faster-whisper %s" % faster_whisper.__version__)
    with open(os.path.join(SOURCE, "python", "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for where, a, b in (
            ("WhisperModel.__init__", faster_whisper.WhisperModel.__init__,
             hviske.WhisperModel.__init__),
            ("WhisperModel.transcribe", faster_whisper.WhisperModel.transcribe,
             hviske.WhisperModel.transcribe),
            ("BatchedInferencePipeline.__init__", faster_whisper.BatchedInferencePipeline.__init__,
             hviske.BatchedInferencePipeline.__init__),
            ("BatchedInferencePipeline.transcribe",
             faster_whisper.BatchedInferencePipeline.transcribe,
             hviske.BatchedInferencePipeline.transcribe)):
        names = compare_signature(where, a, b)
        if where != "BatchedInferencePipeline.__init__":
            documented(where, names, readme)
    for where, a, b in (("Segment", fw_t.Segment, hw.Segment), ("Word", fw_t.Word, hw.Word),
                        ("TranscriptionInfo", fw_t.TranscriptionInfo, hw.TranscriptionInfo),
                        ("TranscriptionOptions", fw_t.TranscriptionOptions,
                         hw.TranscriptionOptions),
                        ("VadOptions", fw_vad.VadOptions, hw.VadOptions)):
        names = compare_fields(where, a, b)
        if where in ("Segment", "Word", "TranscriptionInfo"):
            documented(where, names, readme)
    for name in ("WhisperModel", "BatchedInferencePipeline"):
        report("hviske.%s" % name, [] if hasattr(hviske, name) else ["missing"])


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (PASSED, FAILED))
    sys.exit(1 if FAILED else 0)
