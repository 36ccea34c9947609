"""The layers of docs/ARCHITECTURE.md, from the #include lines:

  * the programs (cli/, server/, tools/) include their own folder's
    headers, the programs' library (proglib/) and the public headers
    (include/) only, never a header of src/; proglib/ includes itself and
    include/ only (CMakeLists.txt also refuses a program whose include
    path holds src/);
  * no cycle between the files of cli/, server/ or proglib/: a file X.c
    and its header X.h are one module, and a module that includes another
    module's header depends on it; the dependencies go one way.

Prints one line per case and ends with "N passed, M failed".
Environment: HV_SOURCE_DIR.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import SOURCE_DIR, finish, report  # noqa: E402

PROGRAMS = ["cli", "server", "tools"]
PROGLIB = "proglib"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(folder):
    d = os.path.join(SOURCE_DIR, folder)
    if not os.path.isdir(d):
        return []
    return sorted(n for n in os.listdir(d) if n.endswith((".c", ".h")))


def includes(folder, name):
    with open(os.path.join(SOURCE_DIR, folder, name), encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    return INCLUDE.findall(text)


def public_headers():
    return set(os.listdir(os.path.join(SOURCE_DIR, "include")))


def check_includes(folder, allowed):
    """Each quoted include of folder's files names a header of folder or of
    the allowed folders; the others are listed."""
    bad = []
    own = set(sources(folder))
    for name in sources(folder):
        for inc in includes(folder, name):
            if inc in own or inc in public_headers():
                continue
            if any(os.path.isfile(os.path.join(SOURCE_DIR, a, inc)) for a in allowed):
                continue
            bad.append(f"{folder}/{name}: #include \"{inc}\"")
    return bad


def cycle(folder):
    """A cycle of modules (X.c with X.h) of folder, as a list, or None."""
    names = sources(folder)
    mods = {os.path.splitext(n)[0] for n in names}
    public = public_headers()  # hviske.h is not cli/hviske.c's header
    deps = {m: set() for m in mods}
    for name in names:
        m = os.path.splitext(name)[0]
        for inc in includes(folder, name):
            dep = os.path.splitext(inc)[0]
            if inc.endswith(".h") and inc not in public and dep in mods and dep != m:
                deps[m].add(dep)
    state, path = {}, []

    def visit(m):
        state[m] = 1
        path.append(m)
        for d in sorted(deps[m]):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(mods):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def main():
    for folder in PROGRAMS:
        bad = check_includes(folder, [folder, PROGLIB])
        report(f"{folder}/ includes its own headers, proglib/ and include/ only "
               f"({len(sources(folder))} files)", sources(folder) and not bad,
               "private or unknown headers:\n  " + "\n  ".join(bad))
    bad = check_includes(PROGLIB, [PROGLIB])
    report(f"proglib/ includes itself and include/ only ({len(sources(PROGLIB))} files)",
           sources(PROGLIB) and not bad, "\n  ".join(bad) or "no proglib/")
    for folder in ["cli", "server", PROGLIB]:
        c = cycle(folder)
        report(f"{folder}/: no include cycle between its files", sources(folder) and not c,
               " -> ".join(c or []))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
