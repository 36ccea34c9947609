"""docs/CLI.md's examples are what the programs print (issue #52): every
fenced block of the page that starts with "$ hviske" is a terminal
session, run as written from a folder that holds the repository's
models/ and examples/ (with hviske on PATH), each "$ " line by bash in a
pseudo-terminal, and the screen it leaves (the progress line erased, as
a terminal shows it) must be the lines the page shows after it.

Numbers may differ where a run's own measure shows, the timings
("*_ms"), and in the model's log-probs, score and probabilities, whose
last digits follow the CPU's compute mode (--compute auto: bf16 where the
CPU has it); every other number (tokens, times, sizes) must be the
page's. A block that is not a session ("$ hviske" not its first line) is
left alone.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import CLI, SOURCE_DIR, finish_in, in_pty, render, report  # noqa: E402

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")
# a run's own measures, and the model's log-probs and probabilities, whose
# last digits follow the CPU's compute mode (--compute auto)
FREE = re.compile(r'("(?:frontend|encoder|decoder|vad|align)_ms": ?|"score": ?|"probability": ?|'
                  r'"p": ?)-?[0-9.e+-]+|("token_logprobs": ?\[)[^\]]*\]')


def sessions(path):
    """(line number, [(command, [expected lines])]) of each session."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```", lines[i])
        if not m:
            i += 1
            continue
        indent, start, body = len(m.group(1)), i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:])
            i += 1
        i += 1
        if not body or not body[0].startswith("$ hviske"):
            continue
        steps = []
        for line in body:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        out.append((start, steps))
    return out


def same(want, got):
    """The lines agree: FREE's numbers aside, the rest exactly (numbers
    within 1e-6 of each other)."""
    if len(want) != len(got):
        return False
    for a, b in zip(want, got):
        a, b = FREE.sub(r"\1\2T", a), FREE.sub(r"\1\2T", b)
        if NUMBER.sub("N", a) != NUMBER.sub("N", b):
            return False
        for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
            if x != y and abs(float(x) - float(y)) > 1e-6 * max(1.0, abs(float(x))):
                return False
    return True


def main():
    tmp = tempfile.mkdtemp(prefix="hv-cli-docs-")
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    for d in ("models", "examples"):
        os.symlink(os.path.join(SOURCE_DIR, d), os.path.join(work, d))
    env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(CLI)) + os.pathsep +
               os.environ.get("PATH", ""))
    doc = os.path.join(SOURCE_DIR, "docs", "CLI.md")
    found = sessions(doc)
    report(f"docs/CLI.md has terminal sessions to check ({len(found)})", len(found) >= 6, "")
    for line, steps in found:
        for command, want in steps:
            while want and want[-1] == "":
                want.pop()
            rc, data, _ = in_pty([], cwd=work, env=env, argv=["bash", "-c", command])
            got = render(data)
            report(f"docs/CLI.md:{line}: $ {command[:70]}", same(want, got),
                   "\nwant:\n" + "\n".join(want) + "\ngot:\n" + "\n".join(got))
    for d in ("models", "examples"):
        os.unlink(os.path.join(work, d))  # the links, never what they name
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
