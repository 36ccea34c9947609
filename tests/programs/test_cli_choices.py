"""Small promises of the command line that the docs make, each checked
as written, on the demo model (models/demo) and examples/da-example.wav:

  * --temperature T alone samples (as the server's temperature > 0): the
    same tokens as --sample --temperature T with the same seed, no "no
    effect" warning; with --beams 2 it is beam search (the --beams 2
    tokens) and the warning names --beams;
  * --temperature 0 is greedy (with --sample too); a list is the
    temperature fallback (docs/DECODING.md): 0,0.2,0.4 keeps the greedy
    text where it passes the thresholds, 1.6,0 falls back from the
    improbable text sampled at 1.6 to the greedy one, 1.6,1 keeps the
    better of two failing samples (that at 1: the tokens of --temperature
    1 alone); with --beams 2 a list's 0 is beam search; --sample with a
    list is a usage error, as the docs say;
  * the fallback's thresholds reach it: with --compression-ratio-threshold
    none --log-prob-threshold none, 1.6,0 keeps the sample at 1.6; with
    --no-speech-threshold 0 --log-prob-threshold 0 the clip is silence
    (no text, no segment); a threshold without a list warns that it has
    no effect; out-of-range values are usage errors naming the option;
  * --format json is indented with spaces ("key": value), no tabs;
  * word probabilities are unrounded (the library's floats);
  * -l auto: exit 2, saying that there is no language detection and
    listing the model's codes;
  * --chunk-seconds: the help's range ">= 1" holds: 0.5 is a usage
    error in the same words, 1 works;
  * the --help entries of -l/--language, --chunking, --sample,
    --temperature and --word-timestamps (and hviske-server's -l and
    --chunking) are their parameter rows' (hv_param_find through ctypes):
    the flag, the row's metavar and help, and the range it takes.

In a sanitizer build the script runs itself again with the sanitizer
runtimes preloaded (ctypes loads the sanitized libhviske).
"""
import ctypes
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import (DEMO_MODEL, EXAMPLE, SOURCE_DIR, Run, finish,  # noqa: E402
                    reexec_with_sanitizers, report, sanitized)

sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
from hviske import _native  # noqa: E402

BASE = ["-m", DEMO_MODEL, "-t", "1"]


def tokens(r):
    try:
        return json.loads(r.out)["tokens"]
    except (ValueError, KeyError):
        return None


def test_temperatures(greedy, beams):
    def toks(*args):
        r = Run(BASE + ["--json", "-q", "--seed", "7"] + list(args) + [EXAMPLE])
        return tokens(r) if r.rc == 0 and not r.err else f"{r}"
    g = tokens(greedy)
    report("--temperature 0, and --sample --temperature 0: greedy",
           toks("--temperature", "0") == g and toks("--sample", "--temperature", "0") == g, g)
    report("--temperature 0,0.2,0.4: the greedy text passes the thresholds, kept",
           toks("--temperature", "0,0.2,0.4") == g, g)
    t16, t1 = toks("--temperature", "1.6"), toks("--temperature", "1")
    report("--temperature 1.6,0: sampling at 1.6 alone differs, the fallback ends greedy",
           t16 != g and toks("--temperature", "1.6,0") == g, f"{t16} {g}")
    report("--temperature 1.6,1: both fail, the better (at 1, as alone) is kept",
           t1 not in (g, t16) and toks("--temperature", "1.6,1") == t1, f"{t1}")
    report("--temperature 1.6,0 --beams 2: the list's 0 is beam search",
           toks("--temperature", "1.6,0", "--beams", "2") == tokens(beams), tokens(beams))
    r = Run(BASE + ["--sample", "--temperature", "0,1", EXAMPLE])
    report("--sample with a list of temperatures: a usage error naming --sample",
           r.rc == 2 and "--sample" in r.err and r.out == "", str(r))


def test_thresholds(greedy):
    def run(*args):
        return Run(BASE + ["--json", "-q", "--seed", "7"] + list(args) + [EXAMPLE])
    t16 = tokens(run("--temperature", "1.6"))
    kept = tokens(run("--temperature", "1.6,0", "--compression-ratio-threshold", "none",
                      "--log-prob-threshold", "none"))
    report("thresholds none: the sample at 1.6 passes and is kept (not greedy)",
           kept == t16 and t16 != tokens(greedy), f"{kept} {t16}")
    r = run("--temperature", "0,0.2", "--no-speech-threshold", "0", "--log-prob-threshold", "0")
    try:
        j = json.loads(r.out)
    except ValueError:
        j = None
    report("--no-speech-threshold 0 --log-prob-threshold 0: the clip is silence",
           r.rc == 0 and j is not None and j["text"] == "" and j["segments"] == [], str(r))
    r = Run(BASE + ["--json", "--log-prob-threshold", "-0.5", EXAMPLE])
    report("a threshold without a list: a warning that it has no effect, greedy",
           r.rc == 0 and "--log-prob-threshold has no effect" in r.err and
           tokens(r) == tokens(greedy), str(r))
    for opt, bad in (("--compression-ratio-threshold", "0"),
                     ("--compression-ratio-threshold", "inf"),
                     ("--log-prob-threshold", "0.5"), ("--log-prob-threshold", "nan"),
                     ("--no-speech-threshold", "1.5"), ("--no-speech-threshold", "None")):
        r = Run(BASE + ["--temperature", "0,1", opt, bad, EXAMPLE])
        report(f"{opt} {bad}: a usage error naming it", r.rc == 2 and opt in r.err and
               r.out == "", str(r))


def test_help_rows():
    """The hand-written help of these options is gone: each entry is its
    row's, in both programs that offer it."""
    binary = os.environ.get("HV_BINARY_DIR", os.path.dirname(os.environ.get("HV_CLI", "")))
    lib = _native.load_library(os.path.join(binary, "libhviske.so"))
    server = os.environ.get("HV_SERVER", os.path.join(binary, "hviske-server"))
    helps = {"hviske": " ".join(Run(["--help"]).out.split()),
             "hviske-server": " ".join(subprocess.run([server, "--help"], capture_output=True,
                                                      text=True).stdout.split())}
    cases = [("hviske", "-l, --language", "language"), ("hviske", "--chunking", "chunking"),
             ("hviske", "--sample", "sample"), ("hviske", "--temperature", "temperature"),
             ("hviske", "--word-timestamps", "word_timestamps"),
             ("hviske-server", "-l, --language", "language"),
             ("hviske-server", "--chunking", "chunking")]
    for prog, flag, name in cases:
        ptr = lib.hv_param_find(name.encode())
        row = ptr.contents
        meta = "" if row.type == _native.PARAM_BOOL else " " + row.metavar.decode()
        text = f"{flag}{meta} {row.help.decode()}"
        if row.type not in (_native.PARAM_BOOL, _native.PARAM_STRING):
            what = ctypes.create_string_buffer(256)
            lib.hv_param_expect(ptr, what, len(what))
            text += "; " + what.value.decode()
        report(f"{prog} --help: {flag} is the row {name}'s entry", text in helps[prog],
               f"{text!r} not in the help")


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()
    test_help_rows()
    a = Run(BASE + ["--json", "--temperature", "1.5", "--seed", "3", EXAMPLE])
    b = Run(BASE + ["--json", "--sample", "--temperature", "1.5", "--seed", "3", EXAMPLE])
    g = Run(BASE + ["--json", "-q", EXAMPLE])
    report("--temperature alone samples, as --sample --temperature",
           a.rc == 0 and tokens(a) == tokens(b) and tokens(a) is not None and
           "no effect" not in a.err, f"{a}\n{b}")
    c = Run(BASE + ["--json", "--temperature", "1.5", "--beams", "2", EXAMPLE])
    d = Run(BASE + ["--json", "-q", "--beams", "2", EXAMPLE])
    report("--temperature with --beams 2: beam search, a warning naming --beams",
           c.rc == 0 and tokens(c) == tokens(d) and "--beams 2" in c.err, f"{c}\n{d}")
    report("greedy and sampling at T 1.5 differ on this clip (the check above is not vacuous)",
           tokens(g) != tokens(a), f"{g}\n{a}")

    test_temperatures(g, d)
    test_thresholds(g)

    j = Run(BASE + ["-q", "--format", "json", "--word-timestamps", EXAMPLE])
    lines = j.out.splitlines()
    report("--format json: two-space indents, \"key\": value, no tabs",
           j.rc == 0 and "\t" not in j.out and lines[1].startswith('  "file": ') and
           json.loads(j.out)["text"], j.out[:300])
    probs = [w["probability"] for w in json.loads(j.out)["words"]] if j.rc == 0 else []
    report("word probabilities unrounded",
           probs and any(abs(p * 1e4 - round(p * 1e4)) > 1e-6 for p in probs), repr(probs))

    r = Run(BASE + ["-l", "auto", EXAMPLE])
    report("-l auto: no language detection, the codes listed",
           r.rc == 2 and "language detection is not available" in r.err and "da" in r.err and
           r.out == "", str(r))

    h = Run(["--help"])
    r = Run(BASE + ["-q", "--chunking", "fixed", "--chunk-seconds", "0.5", EXAMPLE])
    r1 = Run(BASE + ["-q", "--chunking", "fixed", "--chunk-seconds", "1", EXAMPLE])
    # the help's line and the refusal both come from the library's row
    # (hviske.h, "the parameters"): one text
    flat = " ".join(h.out.split())
    report("--chunk-seconds: the help says >= 1; 0.5 refused with the same words, 1 works",
           "--chunk-seconds S" in flat and "a finite number >= 1" in flat and r.rc == 2 and
           "invalid --chunk-seconds '0.5' (expected a finite number >= 1)" in r.err and
           r1.rc == 0 and r1.out, f"{r}\n{r1}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
