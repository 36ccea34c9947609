#!/usr/bin/env python3
"""bench/weight_quality.py: its comparison arithmetic on made-up results,
then the tool end to end on the demo model (a type against itself agrees
exactly; q8_0 moves log-probs; bf16 compute against f32 compute with T@C),
and its errors.

Environment: HV_CLI (the hviske program). Prints one line per case and
ends with "N passed, M failed"; exits 1 when any failed.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import CLI, DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish, report  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "bench"))
import weight_quality  # noqa: E402

TOOL = os.path.join(SOURCE_DIR, "bench", "weight_quality.py")


def close(a, b):
    return abs(a - b) <= 1e-12


def arithmetic():
    base = {"a": ([1, 2, 3], [-0.1, -0.2, -0.3], -0.7), "b": ([4, 5], [-1.0, -1.0], -2.5),
            "c": ([], [], -0.1)}
    other = {"a": ([1, 2, 3], [-0.1, -0.25, -0.3], -0.75),  # same tokens, moved numbers
             "b": ([4, 6, 7], [-1.5, -2.0, -3.0], -7.0),  # differs after one token
             "c": ([], [], -0.1)}
    r = weight_quality.compare(base, other)
    report("identical sequences counted (empty ones too)", r["files"] == 3 and r["identical"] == 2,
           str(r))
    report("log-probs compared on the common prefix only",
           r["tokens_compared"] == 4 and close(r["logprob_max_abs_diff"], 0.5)
           and close(r["logprob_mean_abs_diff"], (0.05 + 0.5) / 4), str(r))
    report("score differences of identical sequences only",
           close(r["score_max_abs_diff_identical"], 0.05), str(r))
    report("share before the first difference, over the longer sequence",
           close(r["prefix_share_mean"], (1 + 1 / 3 + 1) / 3), str(r))


def tool(*args):
    return subprocess.run([sys.executable, TOOL, "--model", DEMO_MODEL, "--hviske", CLI, *args],
                          capture_output=True, text=True, timeout=600)


def end_to_end():
    p = tool("--base", "f32", "--types", "f32,q8_0", "--json", EXAMPLE)
    try:
        t = json.loads(p.stdout)["types"]
        same, q8 = t["f32"], t["q8_0"]
    except (ValueError, KeyError):
        report("--json parses", False, f"rc {p.returncode}: {p.stdout[:200]} {p.stderr[-300:]}")
        return
    report("--json parses", p.returncode == 0, p.stderr[-300:])
    report("a type against itself: identical, no difference",
           same["identical"] == 1 and same["logprob_max_abs_diff"] == 0
           and same["tokens_compared"] > 0, str(same))
    # the demo model's encoder takes q8_0 blocks: its numbers move, so a
    # zero here would mean both runs were f32
    report("q8_0 against f32: log-probs compared and moved",
           q8["files"] == 1 and q8["tokens_compared"] > 0 and q8["logprob_mean_abs_diff"] > 0,
           str(q8))
    # a name that is not UTF-8 (the engine's JSON escapes its byte) and
    # a file given twice: results go by position, each input counts
    with tempfile.TemporaryDirectory() as d:
        odd = os.path.join(d, os.fsdecode(b"odd-\xff-name.wav"))
        shutil.copyfile(EXAMPLE, odd)
        p = tool("--base", "f32", "--types", "f32", "--json", odd, EXAMPLE, odd)
    try:
        same = json.loads(p.stdout)["types"]["f32"]
    except (ValueError, KeyError):
        same = {}
    report("a name that is not UTF-8, a file twice: every input compared",
           p.returncode == 0 and same.get("files") == 3 and same.get("identical") == 3,
           f"rc {p.returncode}: {p.stdout[:300]} {p.stderr[-300:]}")
    # compute modes: bf16 compute rounds the activations, so log-probs move
    # (the demo model's bf16 weights); f32@f32 is the f32 run itself
    p = tool("--base", "bf16@f32", "--types", "bf16@bf16,f32@f32", "--json", EXAMPLE)
    try:
        t = json.loads(p.stdout)["types"]
        b16, f32 = t["bf16@bf16"], t["f32@f32"]
    except (ValueError, KeyError):
        b16 = f32 = {}
    report("T@C: bf16 compute against f32 compute compared, log-probs moved",
           p.returncode == 0 and b16.get("tokens_compared", 0) > 0
           and b16.get("logprob_mean_abs_diff", 0) > 0 and f32.get("files") == 1,
           f"rc {p.returncode}: {p.stdout[:300]} {p.stderr[-300:]}")
    p = tool("--types", "f32@f8", EXAMPLE)
    report("an unknown compute mode: exit 2 naming it", p.returncode == 2 and "f8" in p.stderr,
           f"rc {p.returncode}: {p.stderr}")
    p = tool("--types", "q8_0", EXAMPLE)
    report("the table names the type and the files",
           p.returncode == 0 and "| q8_0 | " in p.stdout and "1 files" in p.stdout, p.stdout[-300:])


def errors():
    missing = os.path.join(SOURCE_DIR, "no-such-audio.wav")
    p = tool("--types", "q8_0", EXAMPLE, missing)
    report("a file the engine cannot read: exit 2, the engine's message",
           p.returncode == 2 and "no-such-audio.wav" in p.stderr, f"rc {p.returncode}: {p.stderr}")
    p = tool("--types", "q8_0")
    report("no files: exit 2 with a message", p.returncode == 2 and "no files" in p.stderr,
           f"rc {p.returncode}: {p.stderr}")
    p = tool("--types", "no_such_type", EXAMPLE)
    report("an unknown weight type: exit 2", p.returncode == 2 and "no_such_type" in p.stderr,
           f"rc {p.returncode}: {p.stderr}")


def main():
    arithmetic()
    end_to_end()
    errors()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
