#!/usr/bin/env python3
"""`make run` builds the library and the program it runs, not the test
programs (issue #61: a newcomer waited 72 s on a loaded machine for the 87
test programs; building them is make test's). Read from make's dry run
(`make -n run`): the build step names the target hviske, and the example
is then transcribed by that program. Prints one line per case and ends
with "N passed, M failed"."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import SOURCE_DIR, finish, report  # noqa: E402


def main():
    p = subprocess.run(["make", "-n", "-C", SOURCE_DIR, "run", "BUILD=build-dry-run"],
                       capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    builds = [x for x in lines if x.startswith("cmake --build")]
    report("make -n run: one build step, of the target hviske alone",
           p.returncode == 0 and len(builds) == 1 and builds[0].split()[-2:] == ["--target", "hviske"],
           f"{builds} {p.stderr[-300:]}")
    report("make -n run: then the example is transcribed",
           any("run-example.sh build-dry-run" in x for x in lines), "\n".join(lines))
    report("make -n run: the folder build-dry-run is not made by a dry run",
           not os.path.exists(os.path.join(SOURCE_DIR, "build-dry-run")), "")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
