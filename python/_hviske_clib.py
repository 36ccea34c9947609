"""libhviske built with CMake for the Python package (python/_hviske_build.py,
python/README.md "Installing"), when no installed library is found: the C
sources of the hviske tree that holds this python/ folder (or the copy an
sdist carries in hviske-src/) are configured with -DHV_PROGRAMS=OFF (the
library alone) in a temporary folder, built and installed into a staging
prefix there, from which the wheel takes lib/libhviske.so.0 and the speech
detector (share/hviske/silero-vad).

It uses Debian's build tools only (cmake, pkg-config, a C compiler) and
downloads nothing. A tool or a library that is missing stops the build
with a BuildError naming the Debian packages to install, never a wheel
without its library."""
import os
import re
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.abspath(__file__))
SONAME = "libhviske.so.0"
SDIST_SOURCES = "hviske-src"
# What an sdist carries of the C tree, and the build reads: CMake's
# HV_PROGRAMS=OFF configuration uses nothing else.
SOURCE_PATHS = ("CMakeLists.txt", "hviske.pc.in", "LICENSE", "include", "src",
                os.path.join("models", "silero-vad"))
# the programs CMake runs, and the Debian package of each
TOOLS = (("cmake", "cmake"), ("pkg-config", "pkg-config"), ("cc", "build-essential"))


class BuildError(Exception):
    """The library could not be built; the message says why and what to
    install."""


def sources():
    """The hviske C source tree to build: the one python/ sits in, else the
    sdist's hviske-src/; None when neither is there."""
    for d in (os.path.dirname(ROOT), os.path.join(ROOT, SDIST_SOURCES)):
        cm = os.path.join(d, "CMakeLists.txt")
        try:
            with open(cm, encoding="utf-8") as f:
                if re.search(r"^project\(hviske\b", f.read(), re.M) and \
                        os.path.isdir(os.path.join(d, "src")):
                    return d
        except OSError:
            continue
    return None


def source_files(src):
    """(path relative to src, absolute path) of every file an sdist needs
    from the C tree src, in a stable order."""
    out = []
    for rel in SOURCE_PATHS:
        p = os.path.join(src, rel)
        if os.path.isfile(p):
            out.append((rel, p))
            continue
        for d, dirs, files in os.walk(p):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for n in sorted(files):
                q = os.path.join(d, n)
                out.append((os.path.relpath(q, src), q))
    return out


def _missing_packages(output):
    """The Debian packages CMake's hv_require says are missing, from its
    output (which wraps lines)."""
    flat = " ".join(output.split())
    return sorted(set(re.findall(r"install the Debian package (\S+?)(?=\s|$)", flat)))


def _run(args, what, log):
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
    except OSError as e:
        raise BuildError(f"hviske: {what}: cannot run {args[0]}: {e}") from None
    log.append(p.stdout)
    return p


def build(src, work):
    """Builds and installs the library of the C tree src into work/stage;
    (the libhviske.so.0 file, the speech detector's directory) there."""
    missing = [(tool, pkg) for tool, pkg in TOOLS if shutil.which(tool) is None]
    if missing:
        names = ", ".join(f"{tool} (Debian: {pkg})" for tool, pkg in missing)
        raise BuildError(
            f"hviske: building libhviske for the Python package needs {names}: install "
            f"them (apt-get install {' '.join(sorted({p for _, p in missing}))}), or install "
            "the library first (make install in the hviske source tree)")
    build_dir, stage = os.path.join(work, "build"), os.path.join(work, "stage")
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    log = []
    p = _run(["cmake", "-S", src, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
              "-DHV_PROGRAMS=OFF", "-DBUILD_TESTING=OFF", f"-DCMAKE_INSTALL_PREFIX={stage}",
              "-DCMAKE_INSTALL_LIBDIR=lib"], "configuring libhviske", log)
    if p.returncode != 0:
        pkgs = _missing_packages(p.stdout)
        if pkgs:
            raise BuildError(
                "hviske: building libhviske for the Python package needs the Debian "
                f"package{'s' if len(pkgs) > 1 else ''} {', '.join(pkgs)}: install "
                f"{'them' if len(pkgs) > 1 else 'it'} (apt-get install {' '.join(pkgs)}; "
                "scripts/install-deps.sh installs every one the build uses)")
        raise BuildError("hviske: configuring libhviske with CMake failed:\n" + p.stdout[-4000:])
    for args, what in ((["cmake", "--build", build_dir, "-j", jobs], "building libhviske"),
                       (["cmake", "--install", build_dir], "installing libhviske")):
        p = _run(args, what, log)
        if p.returncode != 0:
            raise BuildError(f"hviske: {what} with CMake failed:\n" + p.stdout[-4000:])
    lib = os.path.join(stage, "lib", SONAME)
    vad = os.path.join(stage, "share", "hviske", "silero-vad")
    if not os.path.isfile(lib) or not os.path.isfile(os.path.join(vad, "config.json")):
        raise BuildError(f"hviske: CMake installed no {lib} and {vad}")
    return os.path.realpath(lib), vad


class Built:
    """The library built in a temporary folder, removed by close()."""

    def __init__(self, src):
        self.work = tempfile.mkdtemp(prefix="hviske-clib-")
        try:
            self.library, self.detector = build(src, self.work)
        except BaseException:
            self.close()
            raise

    def files(self, package):
        """(path in the wheel, path on disk, executable) of the library and
        the detector's files, under the package directory."""
        out = [(f"{package}/{SONAME}", self.library, True)]
        for n in sorted(os.listdir(self.detector)):
            out.append((f"{package}/silero-vad/{n}", os.path.join(self.detector, n), False))
        return out

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)
