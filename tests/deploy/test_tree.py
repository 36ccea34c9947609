"""The tracked tree holds what a reader expects and nothing a run left:

- no file or folder at the root beyond the ones listed here (a new one
  is added to ROOT on purpose, with the change that needs it): run
  outputs (a transcript, a log) committed by mistake are refused;
- no tracked text file names the absolute path of the checkout it was
  written in (this clone's own path or another worktree's of the same
  repository): output of a run pasted into a doc or a test.

Needs git (a clone); prints one line per case and ends with "N passed,
M failed"."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import finish, report  # noqa: E402

SOURCE = os.environ.get("HV_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROOT = {".ci", ".clang-format", ".gitignore", "CMakeLists.txt", "CONTRIBUTING.md", "LICENSE",
        "Makefile", "README.md", "bench", "cli", "cmake", "deploy", "docs", "examples",
        "hviske.pc.in", "include", "models", "pyproject.toml", "python", "research", "scripts",
        "proglib", "server", "src", "tests", "tools"}


def git(*args):
    p = subprocess.run(["git", "-C", SOURCE, *args], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    rc, out = git("ls-files", "-z")
    report("the tree is a git checkout", rc == 0, out[-200:])
    if rc != 0:
        return finish()
    files = [f for f in out.split("\0") if f]
    tops = {f.split("/", 1)[0] for f in files}
    stray = sorted(tops - ROOT)
    report("no stray file or folder at the root", not stray, f"not expected: {', '.join(stray)}")
    rc, out = git("worktree", "list", "--porcelain")
    checkouts = {os.path.realpath(SOURCE)}
    checkouts |= {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")}
    needles = sorted(c.rstrip("/") + "/" for c in checkouts if len(c) > 1)
    found = []
    for f in files:
        path = os.path.join(SOURCE, f)
        try:
            with open(path, "rb") as fh:
                data = fh.read(4 << 20)
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        found += [f"{f}: {n}" for n in needles if n in text]
    report(f"no tracked text file names a checkout's absolute path ({', '.join(needles)})",
           not found, "; ".join(found[:10]))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
