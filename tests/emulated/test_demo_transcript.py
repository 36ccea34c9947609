#!/usr/bin/env python3
"""The demo model's transcript of examples/da-example.wav by a program
built for another architecture and run under its emulator ($HV_CLI: the
wrapper tests/CMakeLists.txt writes for a cross build, e.g. aarch64 under
qemu-aarch64-static) against the build machine's own program
($HV_HOST_CLI: make build's hviske): the plain text the README promises,
and with --json the same text, tokens, segments and chunks, and token
log-probs and score within 1e-4 (the kernel tables give the portable kernels'
bits on both, but OpenBLAS and libm sum and round their own way on each
architecture). HVISKE_MAX_ISA, when set, holds the emulated run to a
level; the host's runs as it is.

Prints one line per case and ends with "N passed, M failed".
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import DEMO_MODEL, EXAMPLE, finish, report  # noqa: E402

EXAMPLE_TEXT = "I morgen bliver det gråt med minus tyve grader."  # examples/README.md
LOGPROB_TOL = 1e-4


def run(cli, args, host):
    env = dict(os.environ)
    if host:  # the host program at its best level: the cap is the emulated run's
        env.pop("HVISKE_MAX_ISA", None)
    return subprocess.run([cli, "-m", DEMO_MODEL] + args + [EXAMPLE], capture_output=True,
                          text=True, timeout=600, env=env)


def main():
    cli, host = os.environ.get("HV_CLI", ""), os.environ.get("HV_HOST_CLI", "")
    if not os.access(host, os.X_OK):
        report("the host's hviske", False,
               f"HV_HOST_CLI {host!r} is not a program: build it first (make build)")
        return finish()
    level = os.environ.get("HVISKE_MAX_ISA") or "best"
    plain = [run(cli, [], False), run(host, [], True)]
    report(f"{level}: the example's sentence",
           plain[0].returncode == 0 and plain[0].stdout.strip() == EXAMPLE_TEXT,
           repr(plain[0].stdout) + plain[0].stderr[-300:])
    report(f"{level}: plain text equal to the host's",
           plain[1].returncode == 0 and plain[0].stdout == plain[1].stdout,
           f"{plain[0].stdout!r} against {plain[1].stdout!r}{plain[1].stderr[-300:]}")
    js = [run(cli, ["--json"], False), run(host, ["--json"], True)]
    if any(r.returncode != 0 for r in js):
        report(f"{level}: --json runs", False, js[0].stderr[-300:] + js[1].stderr[-300:])
        return finish()
    a, b = (json.loads(r.stdout) for r in js)
    for key in ("text", "tokens", "segments", "chunks"):
        report(f"{level}: --json {key} equal to the host's", a.get(key) == b.get(key),
               f"{a.get(key)!r} against {b.get(key)!r}")
    lp = list(zip(a["token_logprobs"], b["token_logprobs"])) + [(a["score"], b["score"])]
    worst = max(abs(x - y) for x, y in lp)
    print(f"# {level}: token log-probs and score differ by at most {worst:.2e} from the host's")
    report(f"{level}: token log-probs and score within {LOGPROB_TOL:g} of the host's",
           len(a["token_logprobs"]) == len(b["token_logprobs"]) and worst <= LOGPROB_TOL,
           f"worst {worst:.2e}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
