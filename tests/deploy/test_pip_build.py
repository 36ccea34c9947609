"""`pip install` alone (issue #53; python/README.md "Installing"): a fresh
virtual environment of Debian's python3 (pip 23), offline, on a clean copy
of the source tree (what a clone holds: the files git tracks and the new
ones it does not ignore; no build folder), with no libhviske installed:

  * `pip install --no-index ./python` builds libhviske with CMake
    (python/_hviske_clib.py) into a platform wheel that carries
    hviske/libhviske.so.0 and the speech detector hviske/silero-vad/,
    installs hviske and nothing else, and leaves the copy as it was; the
    installed package loads that library and detector, with no
    $HVISKE_LIBRARY, $HVISKE_VAD_MODEL, $LD_LIBRARY_PATH or pkg-config,
    and transcribes the example; `pip uninstall -y hviske` removes every
    file it installed;
  * `pip install --no-index .` from the copy's root does the same;
  * the backend's sdist carries the C sources, and installs the same way;
  * a missing system package fails the install with exit status 1, names
    the Debian package, installs nothing, and shows no traceback:
    pkg-config finding none of the library's modules (each package
    named), and cmake and a C compiler missing from PATH.

In a sanitizer build it is skipped: it builds a release library of its own
whatever the build folder, so the release build's run covers it.
Where pkg-config or the dynamic linker already finds an installed libhviske,
the backend records it instead of building: then the cases are skipped
with the reason (a failure when CI is set).
Environment: HV_SOURCE_DIR, HV_BINARY_DIR.
"""
import ctypes.util
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL, EXAMPLE, SOURCE_DIR, finish, finish_in, report  # noqa
from hvtest import fresh_venv as venv, run_captured, sanitized, skip_or_fail, why  # noqa

SOURCE = os.path.abspath(SOURCE_DIR)
PYTHON = "/usr/bin/python3"  # Debian's, with its pip 23
BUILD_TIMEOUT = 1200  # seconds for an install that builds the library
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
LIBRARY_PACKAGES = ("libcjson-dev", "libsndfile1-dev", "libsoxr-dev", "libmpg123-dev",
                    "libkissfft-dev", "libopenblas-dev", "zlib1g-dev")
TRANSCRIBE = ("import hviske\n"
              "m = hviske.Model(%r, threads=2)\n"
              "r = m.transcribe(%r)\n"
              "print(hviske.__file__); print(m.library_path); print(m.vad_model); print(r.text)\n"
              % (DEMO_MODEL, EXAMPLE))


def clean_copy(dst):
    """What a clone of the source tree holds, copied to dst."""
    p = run_captured(["git", "-C", SOURCE, "ls-files", "-z", "--cached", "--others",
                      "--exclude-standard"])
    if p.returncode != 0:
        report("git ls-files of the source tree", False, why(p))
        return False
    for rel in sorted(set(p.stdout.split("\0")) - {""}):
        src = os.path.join(SOURCE, rel)
        if not os.path.lexists(src):  # deleted in the working tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel), follow_symlinks=False)
    return True


def tree(root):
    out = set()
    for d, _, files in os.walk(root):
        out |= {os.path.relpath(os.path.join(d, n), root) for n in files}
    return out


def base_env(tmp):
    """Offline pip; no library, detector or pkg-config path named."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "HVISKE_", "PYTHON", "PKG_CONFIG_PATH"))
           and k not in ("LD_LIBRARY_PATH", "VIRTUAL_ENV", "LD_PRELOAD")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_ROOT_USER_ACTION="ignore", CMAKE_BUILD_PARALLEL_LEVEL="2",
               HOME=os.path.join(tmp, "home"))
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def installed(v, env):
    p = run_captured([os.path.join(v, "bin", "python"), "-m", "pip", "list",
                      "--format=freeze"], env=env)
    return sorted(line.split("==")[0].lower() for line in p.stdout.split())


def site_files(v):
    lib = os.path.join(v, "lib")
    site = [os.path.join(lib, n, "site-packages") for n in os.listdir(lib)
            if n.startswith("python")]
    return site[0], tree(site[0])


def check_install(label, tmp, env, target, cwd, copy):
    """pip install --no-index target in a fresh venv: the library built into
    the wheel, found by the installed package; then uninstalled."""
    v = venv(tmp, "v-" + "".join(c if c.isalnum() else "-" for c in label))
    if not v:
        return
    before_pkgs, (site, before) = installed(v, env), site_files(v)
    copy_before = tree(copy)
    p = run_captured([os.path.join(v, "bin", "pip"), "install", "--no-index", target],
                     timeout=BUILD_TIMEOUT, env=env, cwd=cwd)
    after_pkgs, (_, after) = installed(v, env), site_files(v)
    new = sorted(after - before)
    pkg = [f for f in new if f.startswith("hviske/") and "__pycache__" not in f]
    want = {"hviske/libhviske.so.0", "hviske/silero-vad/config.json",
            "hviske/silero-vad/model.safetensors", "hviske/_native.py", "hviske/__init__.py"}
    report(f"{label}: pip install builds libhviske into the wheel and installs hviske alone "
           f"({len(pkg)} files in hviske/)",
           p.returncode == 0 and after_pkgs == sorted(before_pkgs + ["hviske"]) and
           want <= set(pkg), f"{after_pkgs} {pkg} {why(p)}")
    wheel = [f for f in new if f.endswith(".dist-info/WHEEL")]
    text = open(os.path.join(site, wheel[0])).read() if wheel else ""
    report(f"{label}: a platform wheel (Root-Is-Purelib false, Tag py3-none-linux_*)",
           "Root-Is-Purelib: false" in text and "Tag: py3-none-linux_" in text, text)
    report(f"{label}: the source copy is left as it was", tree(copy) == copy_before,
           sorted(tree(copy) ^ copy_before)[:10])
    renv = {k: v for k, v in env.items() if not k.startswith("PKG_CONFIG")}
    renv["PKG_CONFIG_LIBDIR"] = os.path.join(tmp, "no-pc")  # pkg-config finds nothing
    os.makedirs(renv["PKG_CONFIG_LIBDIR"], exist_ok=True)
    q = run_captured([os.path.join(v, "bin", "python"), "-c", TRANSCRIBE], env=renv,
                     cwd=tmp)
    lines = q.stdout.strip().split("\n")
    pkgdir = os.path.join(site, "hviske")
    report(f"{label}: import hviske; transcribe: the wheel's library and detector, the "
           "example's sentence",
           q.returncode == 0 and lines == [os.path.join(pkgdir, "__init__.py"),
                                           os.path.join(pkgdir, "libhviske.so.0"),
                                           os.path.join(pkgdir, "silero-vad"), SENTENCE],
           f"{lines} {why(q)}")
    u = run_captured([os.path.join(v, "bin", "pip"), "uninstall", "-y", "hviske"], env=env,
                     cwd=tmp)
    _, left = site_files(v)
    report(f"{label}: pip uninstall -y hviske removes every file it installed",
           u.returncode == 0 and left == before, f"{sorted(left - before)} {why(u)}")


def check_missing(tmp, env, copy):
    """Missing packages fail the install, naming them."""
    v = venv(tmp, "v-missing")
    if not v:
        return
    pip = [os.path.join(v, "bin", "pip"), "install", "--no-index", os.path.join(copy, "python")]
    before = installed(v, env)
    empty = os.path.join(tmp, "empty-pc")
    os.makedirs(empty, exist_ok=True)
    p = run_captured(pip, timeout=BUILD_TIMEOUT, env=dict(env, PKG_CONFIG_LIBDIR=empty), cwd=tmp)
    out = p.stdout + p.stderr
    named = [x for x in LIBRARY_PACKAGES if x in out]
    report("no library's pkg-config module found: exit 1, every Debian package named "
           f"({len(named)} of {len(LIBRARY_PACKAGES)}), nothing installed, no traceback",
           p.returncode == 1 and named == list(LIBRARY_PACKAGES) and
           "apt-get install" in out and "Traceback" not in out and installed(v, env) == before,
           why(p))
    bin_dir = os.path.join(tmp, "bin-no-cmake")
    os.makedirs(bin_dir, exist_ok=True)
    for tool in ("pkg-config",):
        os.symlink(shutil.which(tool), os.path.join(bin_dir, tool))
    p = run_captured(pip, timeout=BUILD_TIMEOUT, env=dict(env, PATH=bin_dir), cwd=tmp)
    out = p.stdout + p.stderr
    report("cmake and a C compiler missing from PATH: exit 1, naming cmake and "
           "build-essential, nothing installed",
           p.returncode == 1 and "cmake (Debian: cmake)" in out and "build-essential" in out and
           "Traceback" not in out and installed(v, env) == before, why(p))


def check_sdist(tmp, env, copy):
    sdist_dir = os.path.join(tmp, "sdist")
    os.mkdir(sdist_dir)
    p = run_captured([PYTHON, "-c",
                      "import sys, _hviske_build as b; print(b.build_sdist(sys.argv[1]))",
                      sdist_dir], env=env, cwd=os.path.join(copy, "python"))
    sdist = os.path.join(sdist_dir, p.stdout.strip())
    if p.returncode != 0 or not os.path.isfile(sdist):
        report("the backend's build_sdist", False, why(p))
        return
    names = run_captured(["tar", "tzf", sdist]).stdout.split()
    base = names[0].split("/")[0]
    want = {f"{base}/hviske-src/CMakeLists.txt", f"{base}/hviske-src/include/hviske.h",
            f"{base}/hviske-src/src/transcribe.c", f"{base}/_hviske_clib.py",
            f"{base}/hviske-src/models/silero-vad/model.safetensors"}
    report("the sdist carries the C sources (hviske-src/)", want <= set(names),
           sorted(want - set(names)))
    check_install("the sdist", tmp, env, sdist, tmp, copy)


def main():
    if sanitized():
        print("skip  pip builds libhviske: in the release build's run (it builds a release "
              "library of its own, whatever the build folder)")
        return finish()
    tmp = tempfile.mkdtemp(prefix="test-pip-build-",
                           dir=os.path.abspath(os.environ["HV_BINARY_DIR"]))
    env = base_env(tmp)
    pc = run_captured(["pkg-config", "--exists", "hviske"], env=env)
    if pc.returncode == 0 or ctypes.util.find_library("hviske"):
        skip_or_fail("pip builds libhviske", "a libhviske is installed on this machine: the "
                     "backend records it instead of building", "uninstall it")
        return finish_in(tmp)
    copy = os.path.join(tmp, "src")
    if not clean_copy(copy):
        return finish_in(tmp)
    check_missing(tmp, env, copy)
    check_install("./python", tmp, env, os.path.join(copy, "python"), tmp, copy)
    check_install(".", tmp, env, ".", copy, copy)
    check_sdist(tmp, env, copy)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
