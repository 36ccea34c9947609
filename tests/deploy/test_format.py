"""Every C source and header, and the web page's JavaScript, follows the
one style of .clang-format.

Runs Debian's clang-format in check mode over the C files of src/, include/,
cli/, server/, proglib/, tools/, bench/, research/, tests/ and examples/, and the .js files of
server/web/ (docs/CONVENTIONS.md, "Formatting"). A failure lists the files
and the first lines clang-format would change; `make format` fixes them."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import finish, report  # noqa: E402

SOURCE = os.environ.get("HV_SOURCE_DIR",
                        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FOLDERS = ("src", "include", "cli", "server", "proglib", "tools", "bench", "research", "tests",
           "examples")


def c_files():
    """Every .c and .h under the checked folders, in a stable order."""
    out = []
    for top in FOLDERS:
        for root, dirs, files in os.walk(os.path.join(SOURCE, top)):
            dirs[:] = sorted(d for d in dirs if d != "node_modules")
            out += [os.path.join(root, f) for f in sorted(files)
                    if f.endswith((".c", ".h"))]
    return out


def js_files():
    """The web page's JavaScript."""
    web = os.path.join(SOURCE, "server", "web")
    return [os.path.join(web, f) for f in sorted(os.listdir(web)) if f.endswith(".js")]


def main():
    exe = shutil.which("clang-format")
    if exe is None:
        # scripts/install-deps.sh installs it; without it the style is unchecked.
        report("clang-format is installed (scripts/install-deps.sh)", False,
               "clang-format not found on PATH")
        return finish()
    report(".clang-format exists", os.path.isfile(os.path.join(SOURCE, ".clang-format")))
    files = c_files()
    report("C files found", len(files) > 20, f"only {len(files)}")
    js = js_files()
    report("the web page's JavaScript found", len(js) >= 1, f"{js}")
    files += js
    bad = []
    for path in files:
        p = subprocess.run([exe, "--style=file", "--dry-run", "--Werror", path],
                           cwd=SOURCE, capture_output=True, text=True)
        if p.returncode != 0:
            bad.append((os.path.relpath(path, SOURCE), p.stderr.strip().splitlines()[:4]))
    detail = "; ".join(f"{f}: {' | '.join(lines)}" for f, lines in bad[:10])
    report(f"{len(files)} C and JavaScript files formatted as .clang-format says", not bad,
           f"{len(bad)} files differ (run `make format`): {detail}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
