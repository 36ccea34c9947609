"""Shared bits of the Python test scripts: one line per case, and the
closing "N passed, M failed" line that CI reads."""
import os
import subprocess
import sys

CLI = os.environ.get("HV_CLI", "hviske")
TIMEOUT = 600  # seconds per CLI run

_counts = {"passed": 0, "failed": 0}


def report(name, ok, detail=""):
    """Records one case: "ok    NAME" or "FAIL  NAME: DETAIL"."""
    if ok:
        _counts["passed"] += 1
        print(f"ok    {name}")
    else:
        _counts["failed"] += 1
        print(f"FAIL  {name}: {detail}")
    sys.stdout.flush()


def finish():
    """Prints the closing line; returns the exit status."""
    print(f"{_counts['passed']} passed, {_counts['failed']} failed")
    return 1 if _counts["failed"] else 0


class Run:
    """One run of the hviske CLI ($HV_CLI) with captured output."""

    def __init__(self, args, stdin=None, input_bytes=None, env=None):
        self.args = [CLI] + [str(a) for a in args]
        try:
            p = subprocess.run(self.args, capture_output=True, timeout=TIMEOUT,
                               stdin=stdin, input=input_bytes, env=env)
            self.rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            self.rc, out, err = None, e.stdout or b"", e.stderr or b""
        self.raw = out
        self.out = out.decode("utf-8", "replace")
        self.err = err.decode("utf-8", "replace")

    def crashed(self):
        """A signal, a timeout or a sanitizer report: never acceptable."""
        return (self.rc is None or self.rc < 0 or "Sanitizer" in self.err
                or "runtime error" in self.err)

    def lines(self):
        """stdout split at "\n" only (str.splitlines would also split at
        the control characters that random-weight models print)."""
        if not self.out:
            return []
        return self.out[:-1].split("\n") if self.out.endswith("\n") \
            else self.out.split("\n")

    def __str__(self):
        return (f"[hviske {' '.join(self.args[1:])}] rc={self.rc} "
                f"stdout={self.out[:300]!r} stderr={self.err[-600:]!r}")


def check(name, run, cond, why=""):
    """Reports a case: cond must hold and the program must not crash."""
    if run.crashed():
        report(name, False, f"crashed {run}")
    elif not cond:
        report(name, False, f"{why} {run}")
    else:
        report(name, True)
