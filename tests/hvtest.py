"""Shared bits of the Python test scripts: one line per case, and the
closing "N passed, M failed" line that CI reads."""
import sys

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
