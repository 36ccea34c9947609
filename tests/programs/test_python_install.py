"""The Python package installed the usual ways (python/_hviske_build.py,
python/README.md "Installing"), offline, with Debian's python3 and pip:

  * in a fresh virtual environment (pip and setuptools only),
    `pip install --no-index ./python` installs it and nothing else, with
    py.typed; `--no-build-isolation`, `-e` (editable) and the sdist the
    backend writes install too, and each transcribes the example;
  * the backend reads pyproject.toml the same without tomllib (Python
    < 3.11) as with it;
  * the installed package finds its library without $HVISKE_LIBRARY or
    $LD_LIBRARY_PATH: the one `pkg-config hviske` (or $HVISKE_LIBRARY)
    named when it was installed (recorded in hviske/_installed.py), or,
    with the recorded one gone, the one in the prefix it is installed in
    (pip install --prefix); a recorded library that is gone is named in
    the error; with none installed and no C sources to build one (a copy
    of python/ alone), the install fails saying so (the build itself:
    tests/deploy/test_pip_build.py);
  * its type hints: mypy --strict passes on a program using the API
    (faster-whisper's `segments, info` and hviske.WhisperModel included)
    against the installed package, and on the package's sources (every function annotated: no
    --allow-untyped-* flag).

The library installed by `make install` is tests/deploy/test_install.py's.
Environment: HV_SOURCE_DIR, HV_BINARY_DIR.
"""
import ctypes.util
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from hvtest import DEMO_MODEL as DEMO, EXAMPLE as WAV, SOURCE_DIR, finish_in  # noqa
from hvtest import reexec_with_sanitizers, report, sanitized  # noqa
from hvtest import fresh_venv as venv, run_captured as run, why  # noqa

SOURCE = os.path.abspath(SOURCE_DIR)
LIB = os.path.join(os.path.abspath(os.environ["HV_BINARY_DIR"]), "libhviske.so.0")
VAD = os.path.join(SOURCE, "models", "silero-vad")
SENTENCE = "I morgen bliver det gråt med minus tyve grader."
PYTHON = "/usr/bin/python3"  # Debian's, with its pip 23 and setuptools 66

TRANSCRIBE = ("import hviske\n"
              "m = hviske.Model(%r, threads=2)\n"
              "print(hviske.__file__); print(m.library_path)\n"
              "print(m.transcribe(%r, chunking='energy').text)\n" % (DEMO, WAV))

USER_PROGRAM = '''\
import io
from typing import List, Optional

import hviske


def show(seg: hviske.Segment) -> Optional[bool]:
    print(f"{seg.start:.2f} {seg.end:.2f} {seg.text}")
    return None


def main(path: str, model_dir: str) -> List[str]:
    model = hviske.Model(model_dir, threads=2, weight_type="auto")
    segments, info = model.transcribe(path, beam_size=2, vad_filter=False)
    out = [s.text for s in segments]
    out.append(f"{info.language} {info.duration:.2f} {info.duration_after_vad:.2f}")
    with open(path, "rb") as f:
        r: hviske.Result = model.transcribe(f, word_timestamps=True, on_segment=show,
                                            progress=lambda done, total: done <= total)
    words: List[hviske.Word] = r.words
    out += [w.word for w in words if w.probability > 0.5]
    with open(path, "rb") as f:
        out.append(model.transcribe(io.BytesIO(f.read()), beams=1, chunking="energy").text)
    out += [s.text for s in model.segments(path, chunking="fixed", chunk_seconds=1.0)]
    rate: int = model.sample_rate
    langs: List[str] = model.languages
    out.append(f"{rate} {langs} {r.info.duration_after_vad} {model.library_path}")
    wm = hviske.WhisperModel(model_dir, device="cpu", compute_type="int8")
    fw_segments, fw_info = wm.transcribe(path, beam_size=5, temperature=[0.0, 0.2])
    out += [f"{s.id} {s.start:.2f} {s.text} {s.no_speech_prob}" for s in fw_segments]
    p: float = fw_info.language_probability
    out.append(f"{fw_info.language} {p} {fw_info.transcription_options.temperatures}")
    return out
'''


def clean_env(tmp, **extra):
    """No index, no library or detector named, no pkg-config module found
    (PKG_CONFIG_LIBDIR: an empty folder)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "PKG_CONFIG_", "HVISKE_", "PYTHON"))
           and k not in ("LD_LIBRARY_PATH", "VIRTUAL_ENV")}
    empty = os.path.join(tmp, "no-pc")
    os.makedirs(empty, exist_ok=True)
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_ROOT_USER_ACTION="ignore", PKG_CONFIG_LIBDIR=empty,
               HVISKE_VAD_MODEL=VAD)
    env.update(extra)
    return env


def copy_python(tmp, name="python"):
    """python/ copied outside the source tree (so that no build folder of
    it is seen)."""
    dst = os.path.join(tmp, name)
    shutil.copytree(os.path.join(SOURCE, "python"), dst,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    return dst


def installed(v):
    p = run([os.path.join(v, "bin", "python"), "-m", "pip", "list", "--format=freeze"])
    return sorted(line.split("==")[0].lower() for line in p.stdout.split())


def check_transcribes(name, py, env, want_lib, want_file=None):
    p = run([py, "-c", TRANSCRIBE], env=env)
    lines = p.stdout.strip().split("\n")
    ok = (p.returncode == 0 and len(lines) == 3 and lines[1] == want_lib and
          lines[2] == SENTENCE and (want_file is None or lines[0].startswith(want_file)))
    report(name, ok, f"want {want_lib} {want_file} {why(p)}")
    return ok


def test_toml_fallback():
    sys.path.insert(0, os.path.join(SOURCE, "python"))
    try:
        import _hviske_build as b
    finally:
        sys.path.pop(0)
    with open(os.path.join(SOURCE, "python", "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
        want = tomllib.loads(text)
    except ImportError:
        want = None
    got = b.parse_toml_subset(text)
    report("pyproject.toml read without tomllib: the same as tomllib",
           want is not None and got == want and got["project"]["name"] == "hviske",
           f"{got} != {want}")
    odd = b.parse_toml_subset('[project]\nname = "a\\"b\\u00e6"\nlist = [\n  "x",\n  "y",\n]\n')
    report("... escapes and arrays over several lines", odd == {
        "project": {"name": 'a"b\u00e6', "list": ["x", "y"]}}, odd)


def test_fresh_venv(tmp):
    src = copy_python(tmp)
    env = clean_env(tmp, HVISKE_LIBRARY=LIB)
    v = venv(tmp, "v")
    if not v:
        return
    before = installed(v)
    pip = [os.path.join(v, "bin", "pip"), "install"]
    p = run(pip + ["--no-index", src], env=env, cwd=tmp)
    after = installed(v)
    report(f"fresh venv ({', '.join(before)}): pip install --no-index ./python installs "
           "hviske and nothing else",
           p.returncode == 0 and after == sorted(before + ["hviske"]), f"{after} {why(p)}")
    py = os.path.join(v, "bin", "python")
    site = run([py, "-c", "import hviske, os; print(os.path.dirname(hviske.__file__))"],
               env=env, cwd=tmp).stdout.strip()
    files = sorted(os.listdir(site)) if os.path.isdir(site) else []
    report("the installed package: its modules, py.typed and _installed.py",
           {"__init__.py", "__main__.py", "_native.py", "_installed.py", "py.typed"} <=
           set(files) and site.startswith(v), f"{site} {files}")
    check_transcribes("... transcribes the example ($HVISKE_LIBRARY)", py, env,
                      os.path.realpath(LIB), v)
    rec = run([py, "-c", "from hviske._installed import LIBRARY; print(LIBRARY)"], env=env,
              cwd=tmp)
    report("... records the library $HVISKE_LIBRARY named at install time (pkg-config finds "
           "none, no build folder or C sources around python/)",
           rec.stdout.strip() == LIB, why(rec))
    p = run(pip + ["--no-index", "--force-reinstall", src],
            env={k: v for k, v in env.items() if k != "HVISKE_LIBRARY"}, cwd=tmp)
    out = p.stdout + p.stderr
    report("with no library installed and no C sources to build one: the install fails "
           "(exit 1) saying so, and how to install the library",
           p.returncode == 1 and "no libhviske is installed" in out and "no hviske C sources" in
           out and "make install" in out and "Traceback" not in out, why(p))
    for name, args in (("--no-build-isolation", ["--no-build-isolation"]),
                       ("-e (editable)", ["-e"])):
        p = run(pip + ["--no-index", "--force-reinstall"] + args + [src], env=env, cwd=tmp)
        report(f"pip install --no-index {name} ./python in the venv", p.returncode == 0, why(p))
        check_transcribes(f"... transcribes the example, from "
                          f"{'the source folder' if name.startswith('-e') else 'the venv'}",
                          py, env, os.path.realpath(LIB), src if name.startswith("-e") else v)
    sdist_dir = os.path.join(tmp, "sdist")
    os.mkdir(sdist_dir)
    p = run([py, "-c", "import sys, _hviske_build as b; print(b.build_sdist(sys.argv[1]))",
             sdist_dir], env=env, cwd=src)
    sdist = os.path.join(sdist_dir, p.stdout.strip())
    if p.returncode != 0 or not os.path.isfile(sdist):
        report("the backend's build_sdist", False, why(p))
        return
    p = run(pip + ["--no-index", "--force-reinstall", sdist], env=env, cwd=tmp)
    report(f"pip install --no-index {os.path.basename(sdist)} (the backend's sdist)",
           p.returncode == 0, why(p))
    check_transcribes("... transcribes the example", py, env, os.path.realpath(LIB), v)
    test_mypy(tmp, v, env)


def fake_prefix(tmp, name):
    """A prefix holding a copy of the build's library in lib/, and a
    hviske.pc naming it."""
    prefix = os.path.join(tmp, name)
    os.makedirs(os.path.join(prefix, "lib", "pkgconfig"))
    shutil.copy(os.path.realpath(LIB), os.path.join(prefix, "lib", "libhviske.so.0"))
    with open(os.path.join(prefix, "lib", "pkgconfig", "hviske.pc"), "w") as f:
        f.write(f"prefix={prefix}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n"
                "Name: hviske\nDescription: test\nVersion: 0.1.0\nLibs: -L${libdir} -lhviske\n")
    return prefix


def prefix_and_venv(tmp, name):
    """fake_prefix, a copy of python/ and a fresh venv, all named after
    name; (prefix, its libhviske.so.0, the copy, the venv or None)."""
    prefix = fake_prefix(tmp, name + "-prefix")
    return (prefix, os.path.join(prefix, "lib", "libhviske.so.0"),
            copy_python(tmp, "python-" + name), venv(tmp, "v-" + name))


def test_recorded(tmp):
    prefix, lib, src, v = prefix_and_venv(tmp, "pc")
    if not v:
        return
    env = clean_env(tmp, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    p = run([os.path.join(v, "bin", "pip"), "install", "--no-index", src], env=env, cwd=tmp)
    report("pip install with PKG_CONFIG_PATH naming an installed hviske.pc", p.returncode == 0,
           why(p))
    py = os.path.join(v, "bin", "python")
    run_env = clean_env(tmp)  # no PKG_CONFIG_PATH, LD_LIBRARY_PATH or HVISKE_LIBRARY now
    rec = run([py, "-c", "from hviske._installed import LIBRARY; print(LIBRARY)"], env=run_env)
    report("... records pkg-config's libdir/libhviske.so.0", rec.stdout.strip() == lib, why(rec))
    check_transcribes("... and the installed package loads it without $HVISKE_LIBRARY, "
                      "$LD_LIBRARY_PATH or pkg-config", py, run_env, lib)
    if ctypes.util.find_library("hviske"):
        print("skip  a recorded library that is gone: a libhviske is installed on this machine")
        return
    os.rename(lib, lib + ".away")
    try:
        p = run([py, "-c", "import hviske\ntry:\n    hviske.Model(%r)\n"
                 "except hviske.LibraryNotFound as e:\n    print(e)\n" % DEMO], env=run_env)
    finally:
        os.rename(lib + ".away", lib)
    report("a recorded library that is gone: LibraryNotFound naming it",
           p.returncode == 0 and f"{lib} (recorded when the package was installed)" in p.stdout
           and "HVISKE_LIBRARY" in p.stdout, why(p))


def test_beside_package(tmp):
    prefix, lib, src, v = prefix_and_venv(tmp, "site")
    if not v:
        return
    env = clean_env(tmp)
    # installed with a library that is then gone: the prefix's is loaded
    gone = os.path.join(tmp, "gone", "libhviske.so.0")
    os.makedirs(os.path.dirname(gone))
    shutil.copy(lib, gone)
    p = run([os.path.join(v, "bin", "pip"), "install", "--no-index", "--prefix", prefix, src],
            env=dict(env, HVISKE_LIBRARY=gone), cwd=tmp)
    os.unlink(gone)
    site = [os.path.join(d, "site-packages") for d in
            [os.path.join(prefix, "lib", n) for n in os.listdir(os.path.join(prefix, "lib"))
             if n.startswith("python")]]
    report("pip install --no-index --prefix PREFIX ./python: into "
           "PREFIX/lib/pythonX.Y/site-packages", p.returncode == 0 and len(site) == 1 and
           os.path.isdir(os.path.join(site[0], "hviske")), f"{site} {why(p)}")
    if not site:
        return
    env["PYTHONPATH"] = site[0]
    check_transcribes("... with the recorded library gone, it loads PREFIX/lib/libhviske.so.0 "
                      "(Debian's python3, no $LD_LIBRARY_PATH)", PYTHON, env, lib, site[0])


def test_mypy(tmp, v, env):
    prog = os.path.join(tmp, "user_program.py")
    with open(prog, "w", encoding="utf-8") as f:
        f.write(USER_PROGRAM)
    menv = dict(env, MYPY_CACHE_DIR=os.path.join(tmp, "mypy-cache"))
    p = run([PYTHON, "-m", "mypy", "--strict", "--no-incremental", "--python-executable",
             os.path.join(v, "bin", "python"), prog], env=menv, cwd=tmp)
    report("mypy --strict on a program using the installed package (py.typed)",
           p.returncode == 0 and "Success" in p.stdout, why(p))
    bad = os.path.join(tmp, "bad_program.py")
    with open(bad, "w", encoding="utf-8") as f:
        f.write("import hviske\nm = hviske.Model('x')\nr = m.transcribe('a.wav')\n"
                "n: int = r.info.language\nm.transcribe('a.wav', beam_size='2')\n")
    p = run([PYTHON, "-m", "mypy", "--strict", "--no-incremental", "--python-executable",
             os.path.join(v, "bin", "python"), bad], env=menv, cwd=tmp)
    report("... and it finds a wrong type in one (the hints are read, not Any)",
           p.returncode == 1 and "bad_program.py:4" in p.stdout and
           "bad_program.py:5" in p.stdout, why(p))
    # every function of the package is annotated: --strict with no exception
    p = run([PYTHON, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.9",
             os.path.join(SOURCE, "python", "hviske")], env=menv, cwd=tmp)
    report("mypy --strict on the package's sources, every function typed (Python 3.9 and up)",
           p.returncode == 0 and "Success" in p.stdout, why(p))


def main():
    if sanitized() and not os.environ.get("HV_PY_REEXEC"):
        return reexec_with_sanitizers()  # its Pythons load the sanitized libhviske
    test_toml_fallback()
    tmp = tempfile.mkdtemp(prefix="test-python-install-",
                           dir=os.path.abspath(os.environ["HV_BINARY_DIR"]))
    test_fresh_venv(tmp)
    test_recorded(tmp)
    test_beside_package(tmp)
    return finish_in(tmp)


if __name__ == "__main__":
    sys.exit(main())
