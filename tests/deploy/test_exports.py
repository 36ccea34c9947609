#!/usr/bin/env python3
"""The shared library exports exactly the public API.

The library objects are compiled with hidden visibility and hviske.h marks
its functions HV_API, so `nm -D --defined-only libhviske.so` must list:
  * only hv_ symbols: no internal helper, no statically linked dependency;
  * exactly the functions hviske.h declares: none missing (a declaration
    without HV_API, or a definition that does not see it) and none extra
    (an internal hv_ function that escaped).

Environment: HV_BINARY_DIR (the build folder that holds libhviske.so),
HV_SOURCE_DIR (include/hviske.h). Prints one line per case and ends with
"N passed, M failed"; exits 1 when any case failed.
"""

import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)
from hvtest import finish, report  # noqa: E402

SOURCE = os.environ.get("HV_SOURCE_DIR", os.path.dirname(HERE))
BINARY = os.environ.get("HV_BINARY_DIR", os.path.join(SOURCE, "build"))

# Symbols the linker itself defines in every shared object, not code.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}


def declared_functions(header):
    """The hv_ functions a public header (hviske.h, hviske_output.h)
    declares, comments left out."""
    with open(header, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return set(re.findall(r"\b(hv_\w+)\s*\(", text))


def exported_symbols(lib):
    """(name, nm type letter) of every symbol lib defines for the dynamic
    linker; symbol versions (name@@VER) are cut off."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            syms.append((parts[-1].split("@")[0], parts[-2]))
    return syms


def main():
    headers = sorted(glob.glob(os.path.join(SOURCE, "include", "hviske*.h")))
    libs = sorted(glob.glob(os.path.join(BINARY, "libhviske.so*")),
                  key=len)
    if not libs:
        report("shared library built", False, f"no libhviske.so in {BINARY}")
        return finish()
    lib = os.path.realpath(libs[0])
    declared = set().union(*(declared_functions(h) for h in headers))
    report("hviske.h declares functions", len(declared) >= 20,
           f"only {sorted(declared)}")

    syms = [(n, t) for n, t in exported_symbols(lib) if n not in LINKER_SYMBOLS]
    stray = sorted(f"{n} ({t})" for n, t in syms if not n.startswith("hv_"))
    report("only hv_ symbols exported", not stray,
           f"{len(stray)} others: {', '.join(stray[:20])}")

    exported = {n for n, _ in syms if n.startswith("hv_")}
    missing = sorted(declared - exported)
    report("every declared function exported", not missing,
           f"not exported: {', '.join(missing)}")
    extra = sorted(exported - declared)
    report("no internal hv_ symbol exported", not extra,
           f"not in hviske.h: {', '.join(extra[:20])}"
           + (f" (+{len(extra) - 20} more)" if len(extra) > 20 else ""))
    not_code = sorted(f"{n} ({t})" for n, t in syms
                      if n in declared and t not in ("T", "i"))
    report("declared functions exported as code", not not_code,
           ", ".join(not_code))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
