"""Small promises of the command line that the docs make, each checked
as written, on the demo model (models/demo) and examples/da-example.wav:

  * --temperature T alone samples (as the server's temperature > 0): the
    same tokens as --sample --temperature T with the same seed, no "no
    effect" warning; with --beams 2 it is beam search (the --beams 2
    tokens) and the warning names --beams;
  * --format json is indented with spaces ("key": value), no tabs;
  * word probabilities are unrounded (the library's floats);
  * -l auto: exit 2, saying that there is no language detection and
    listing the model's codes;
  * --chunk-seconds: the help's range "S >= 1" holds: 0.5 is a usage
    error naming it, 1 works.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, EXAMPLE, Run, finish, report  # noqa: E402

BASE = ["-m", DEMO_MODEL, "-t", "1"]


def tokens(r):
    try:
        return json.loads(r.out)["tokens"]
    except (ValueError, KeyError):
        return None


def main():
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
    report("--chunk-seconds: the help says S >= 1; 0.5 refused naming it, 1 works",
           "S >= 1" in h.out and r.rc == 2 and ">= 1" in r.err and r1.rc == 0 and r1.out,
           f"{r}\n{r1}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
